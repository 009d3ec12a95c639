#!/usr/bin/env bash
# cli_kafka_heal.sh — issue 21 F3 against `ringtail serve` on a real full disk: the data
# directory lives on a small tmpfs (mounted here; the test is skipped, saying why, only when
# mounting is impossible) that tests/kafka/serve_heal.py fills and frees in a loop under two
# idempotent acks=all librdkafka producers. Each partition fault is logged when it happens
# (file, operation, errno) and counted in --metrics (promtool accepts the scrape); a client with
# retries off is answered KAFKA_STORAGE_ERROR (56); writes resume after every free without a
# restart; every acknowledged record is in the log exactly once; verify is clean. Beside them a
# transactional producer and a committing consumer group (issue 21 F3 part 3): both commit again
# after every free, an OffsetCommit is never answered 56 (serve KO11: NOT_COORDINATOR, which
# clients retry), read_committed shows every committed transaction whole and nothing else. The
# partitions that faulted (the internal topics' among them, most runs) are listed.
#
# usage: bash tests/cli_kafka_heal.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_heal.sh /path/to/ringtail}
PY=/usr/bin/python3
SCRIPT=$(dirname "$0")/kafka/serve_heal.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-heal-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
M=$T/mnt
MOUNTED=
cleanup() {
    serve_cleanup
    if [ -n "$MOUNTED" ]; then
        umount "$M" 2>/dev/null || umount -l "$M"
    fi
    rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$M"
if ! mount -t tmpfs -o size=32m ringtail-heal "$M" 2>"$T/err"; then
    echo "SKIP - cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): $(cat "$T/err")"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
MOUNTED=1

D=$M/data
MPORT=$(free_port)
serve_start "$D" --metrics "127.0.0.1:$MPORT" --segment-bytes 1048576
$PY "$SCRIPT" "$BROKER" "$M" "$MPORT" 4 >"$T/out" 2>"$T/err"
RC=$?
cat "$T/out" | sed 's/^/       /'
expect "a disk filled and freed 4 times under 2 idempotent producers: writes resume each time, a client sees KAFKA_STORAGE_ERROR (56), every acknowledged record once; transactions and group commits resume, all or nothing" \
    0 "^heal ok$"

# Logged when it happened: the partition, the file, the operation and the error.
if grep -qE "partition heal-[01] failed: (write|fdatasync) of .*/heal-[01]/[0-9]{20}\.log .*No space left on device" "$T/serve.log" ||
    grep -qE "partition heal-[01] failed: .*heal-[01].*No space left on device" "$T/serve.log"; then
    ok "a partition fault is logged when it happens, naming the file, the operation and ENOSPC"
else
    RC=1
    cp "$T/serve.log" "$T/err"
    : >"$T/out"
    bad "a partition fault is logged when it happens, naming the file, the operation and ENOSPC"
fi
if grep -qE "partition heal-[01] recovered in place after [0-9]+ attempt" "$T/serve.log"; then
    ok "its recovery in place is logged"
else
    RC=1
    cp "$T/serve.log" "$T/err"
    : >"$T/out"
    bad "its recovery in place is logged"
fi

curl -sS -o "$T/scrape" "http://127.0.0.1:$MPORT/metrics" >"$T/out" 2>"$T/err"
RC=$?
expect "GET /metrics after the cycles" 0
promtool check metrics <"$T/scrape" >"$T/out" 2>"$T/err"
RC=$?
expect "promtool check metrics accepts the scrape" 0
value() { awk -v s="$1" '$1 == s {print $2}' "$T/scrape"; }
faults=$(value ringtail_engine_partition_faults_total)
recoveries=$(value ringtail_engine_partition_recoveries_total)
failed_now=$(value ringtail_engine_partitions_failed)
write_failed=$(value ringtail_engine_write_failed)
if [ "${faults:-0}" -ge 1 ] && [ "${recoveries:-0}" -ge 1 ] && [ "${failed_now:-1}" -eq 0 ] &&
    [ "${write_failed:-1}" -eq 0 ]; then
    ok "metrics: $faults partition faults, $recoveries recoveries, none failed now, the engine's write side intact"
else
    RC=1
    cp "$T/scrape" "$T/out"
    : >"$T/err"
    bad "metrics: faults ${faults:-?}, recoveries ${recoveries:-?}, failed now ${failed_now:-?}, write failed ${write_failed:-?}"
fi
grep -oE "partition [^ ]+-[0-9]+ failed" "$T/serve.log" | sort | uniq -c | sed "s/^/       faults: /"
serve_stop
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
