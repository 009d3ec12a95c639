#!/usr/bin/env bash
# cli_kafka_delete_records.sh — DeleteRecords (issue 20 item 6; handle_admin.c KAD8, PA13) with a
# real client: kafkajs 2.2.4's admin.deleteTopicRecords (tests/kafka/node/
# kafkajs_delete_records.test.js) moves a partition's log start, a consumer from the beginning
# starts there, an offset above the high watermark is refused. Then, here: the metric
# ringtail_partition_log_start_offset shows the new start, a restart keeps it (kafkajs' ListOffsets
# earliest answers it again through kcat), SIGTERM exits 0, `ringtail verify` is clean, and
# `ringtail consume` reads nothing below it.
#
# usage: bash tests/cli_kafka_delete_records.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u
RT=${1:?usage: cli_kafka_delete_records.sh /path/to/ringtail}
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-delrec-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

if [ ! -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    bad "kafkajs is installed in tests/kafka/node (tools/setup.sh runs npm ci there)"
    echo "$passed passed, $failed failed"
    exit 1
fi

D=$T/data
MPORT=$(free_port)
serve_start "$D" --metrics "127.0.0.1:$MPORT" --group-initial-rebalance-delay-ms 0
(cd "$NODE_DIR" && RT_BROKER=$BROKER timeout 300 node --test --test-reporter=tap \
    kafkajs_delete_records.test.js) >"$T/out" 2>"$T/err"
RC=$?
sed -n 's/^# \(pass\|fail\) /node --test: \1 /p' "$T/out"
expect "node --test kafkajs_delete_records.test.js: every kafkajs test passes" 0 "^# fail 0$"

curl -sS "http://127.0.0.1:$MPORT/metrics" >"$T/out" 2>"$T/err"
RC=$?
expect "the metric ringtail_partition_log_start_offset shows drk-0's new start (50)" 0 \
    '^ringtail_partition_log_start_offset\{[^}]*topic="drk"[^}]*\} 50$'
serve_stop
serve_verify "$D"

serve_start "$D"
kcat -b "$BROKER" -Q -t drk:0:-2 >"$T/out" 2>"$T/err"
RC=$?
expect "after a restart, ListOffsets earliest (kcat -Q) still answers 50" 0 "^drk \[0\] offset 50$"
serve_stop
serve_verify "$D"

engine_values "$D" drk >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && [ ! -s "$T/out" ]; then
    ok "ringtail consume from the log start reads nothing (every record is below it)"
else
    bad "ringtail consume from the log start reads nothing (every record is below it)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
