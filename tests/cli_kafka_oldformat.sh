#!/usr/bin/env bash
# cli_kafka_oldformat.sh — what `ringtail serve` accepts and serves beyond RecordBatch v2 as the
# client wrote it, as a Kafka 3.x broker does (issue 20, items 2 and 3):
#   - Kafka's produce validation (tests/kafka/produce_wire.py, docs/format.md B.7 V16-V17):
#     hand-built batches whose maxTimestamp is -1, below or above their records' are accepted
#     and stored with the records' max (CRC valid, the time index finds it), a batch already
#     right is stored as sent; under --log-message-timestamp-type LogAppendTime the stored
#     batch carries bit 3 and the broker's clock, answered as log_append_time;
#   - `ringtail verify` clean after each.
#
# usage: bash tests/cli_kafka_oldformat.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_oldformat.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-oldformat-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT
PY=/usr/bin/python3
K=$(dirname "$0")/kafka

# ---- LogValidator: maxTimestamp recomputed (CreateTime) ---------------------------------------
D=$T/create
serve_start "$D"
"$PY" "$K/produce_wire.py" "$BROKER" lv CreateTime >"$T/out" 2>&1
RC=$?
cat "$T/out"
if [ $RC -eq 0 ]; then
    ok "produce_wire.py CreateTime: every check passed"
else
    bad "produce_wire.py CreateTime"
fi
serve_stop
serve_verify "$D"

# ---- LogAppendTime ----------------------------------------------------------------------------
D=$T/append
serve_start "$D" --log-message-timestamp-type LogAppendTime
"$PY" "$K/produce_wire.py" "$BROKER" lv LogAppendTime >"$T/out" 2>&1
RC=$?
cat "$T/out"
if [ $RC -eq 0 ]; then
    ok "produce_wire.py LogAppendTime: every check passed"
else
    bad "produce_wire.py LogAppendTime"
fi
serve_stop
serve_verify "$D"
"$RT" serve "$T/bad" --listen 127.0.0.1:0 --log-message-timestamp-type Now >"$T/out" 2>&1
RC=$?
if [ $RC -eq 2 ] && grep -q "log-message-timestamp-type" "$T/out"; then
    ok "serve --log-message-timestamp-type Now is a usage error (exit 2)"
else
    bad "serve --log-message-timestamp-type Now is a usage error (exit $RC)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
