#!/usr/bin/env bash
# cli_kafka_kafkajs.sh — kafkajs 2.2.4 (tests/kafka/node, installed by tools/setup.sh with
# `npm ci`) against `ringtail serve`, through node's test runner (`node --test`): CreateTopics,
# Metadata, an idempotent producer (plain and gzip batches), ListOffsets and Fetch decoded by
# kafkajs (tests/kafka/node/kafkajs.test.js). Then SIGTERM exits 0, `ringtail verify` is clean
# and the engine's own consumer reads what kafkajs read.
#
# usage: bash tests/cli_kafka_kafkajs.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_kafkajs.sh /path/to/ringtail}
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafkajs-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

if [ ! -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    RC=1
    bad "kafkajs is installed in tests/kafka/node (tools/setup.sh runs npm ci there)"
    echo "$passed passed, $failed failed"
    exit 1
fi
grep -q '"version": "2.2.4"' "$NODE_DIR/node_modules/kafkajs/package.json"
RC=$?
if [ $RC -eq 0 ]; then ok "kafkajs 2.2.4 is the version installed"; else bad "kafkajs 2.2.4 is the version installed"; fi

D=$T/data
serve_start "$D"
(cd "$NODE_DIR" && RT_BROKER=$BROKER RT_KAFKAJS_OUT=$T/kafkajs-values \
    timeout 300 node --test --test-reporter=tap kafkajs.test.js) >"$T/out" 2>"$T/err"
RC=$?
sed -n 's/^# \(pass\|fail\) /node --test: \1 /p' "$T/out"
expect "node --test kafkajs.test.js: every kafkajs test passes" 0 "^# fail 0$"
serve_stop
serve_verify "$D"
engine_values "$D" js >"$T/engine" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && [ -s "$T/kafkajs-values" ] && cmp -s "$T/kafkajs-values" "$T/engine"; then
    ok "ringtail consume reads the 2000 records kafkajs produced and fetched"
else
    cp "$T/engine" "$T/out"
    bad "ringtail consume reads the 2000 records kafkajs produced and fetched"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
