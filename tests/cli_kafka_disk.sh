#!/usr/bin/env bash
# cli_kafka_disk.sh — issue 21 F2, F6 and item 2's auto-creation bounds against `ringtail serve`
# (tests/kafka/serve_disk.py): a Metadata request naming 100 000 unknown topics creates at most
# --auto-create-max-per-request of them (and a second one on the same connection at most what
# its budget refilled), every other name answered UNKNOWN_TOPIC_OR_PARTITION; an empty
# auto-created partition costs a few KiB of disk while the broker runs; `--segment-bytes 1048576`
# (Kafka's default broker size, below the 1 MiB + 12 largest batch) serves librdkafka across
# many rolls, refuses a batch larger than a segment with RECORD_LIST_TOO_LARGE and one above
# message.max.bytes with MESSAGE_TOO_LARGE, and goes on; verify is clean after each part.
#
# usage: bash tests/cli_kafka_disk.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_disk.sh /path/to/ringtail}
PY=/usr/bin/python3
SCRIPT=$(dirname "$0")/kafka/serve_disk.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-disk-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# ---- auto-creation bounded per request and per connection -----------------------------------
D=$T/scan
serve_start "$D" --auto-create-max-per-request 50
$PY "$SCRIPT" metadata "$PORT" 100000 >"$T/out" 2>"$T/err"
RC=$?
read -r _ first second <"$T/out"
# The second answer names the first's 50 as existing, plus what the connection's budget (50 a
# second) allowed since.
if [ "$RC" -eq 0 ] && [ "${first:-0}" -eq 50 ] && [ "${second:-999}" -le 100 ]; then
    ok "a Metadata request naming 100000 unknown topics creates 50, the next at most 50 more ($first, $second)"
else
    bad "a Metadata request naming 100000 unknown topics creates 50, the next at most 50 more"
fi
# An empty partition costs what it holds while the broker runs (allocated blocks, as du).
kib=$(du -sk "$D/scan-000000-0" | cut -f1)
if [ "$kib" -le 256 ]; then
    ok "an empty auto-created partition allocates ${kib} KiB (<= 256) at 64 MiB segments"
else
    RC=1
    bad "an empty auto-created partition allocates ${kib} KiB (<= 256)"
fi
serve_stop
run topic list "$D"
n=$(wc -l <"$T/out")
if [ "$n" -ge 50 ] && [ "$n" -le 100 ]; then
    ok "the catalogue holds $n topics (50 .. 100)"
else
    bad "the catalogue holds $n topics (50 .. 100)"
fi
serve_verify "$D"

# ---- --segment-bytes 1048576 with librdkafka ----------------------------------------------------
D=$T/seg
run topic create "$D" seg --partitions 1
expect "a topic for the segments" 0
# A creation the disk refuses (a file where its partition directory goes: ENOTDIR, as ENOSPC or
# EIO would) is answered KAFKA_STORAGE_ERROR (56), and logged once with its cause.
touch "$D/blocked-0"
serve_start "$D" --segment-bytes 1048576
$PY "$SCRIPT" blocked "$PORT" >"$T/out" 2>"$T/err"
RC=$?
expect "a creation the disk refuses is answered KAFKA_STORAGE_ERROR (56), twice" 0 "^codes 56 56$"
logged=$(grep -c "cannot auto-create topic 'blocked'" "$T/serve.log")
if [ "$logged" -eq 1 ] && grep -q "cannot auto-create topic 'blocked'.*blocked-0" "$T/serve.log"; then
    ok "the failed creation is logged once, naming its cause"
else
    bad "the failed creation is logged once, naming its cause ($logged lines)"
fi
$PY "$SCRIPT" segments "$BROKER" >"$T/out" 2>"$T/err"
RC=$?
expect "--segment-bytes 1048576: 40 x 300 KiB across rolls, a batch over a segment refused (RECORD_LIST_TOO_LARGE), one over message.max.bytes (MESSAGE_TOO_LARGE), then more" \
    0 "^segments ok$"
serve_stop
rm -f "$D/blocked-0"
logs=$(find "$D/seg-0" -name '*.log' | wc -l)
if [ "$logs" -ge 10 ]; then ok "$logs segments of at most 1 MiB"; else bad "$logs segments (want >= 10)"; fi
serve_verify "$D"
engine_values "$D" seg >"$T/values" 2>"$T/err"
if [ "$(wc -l <"$T/values")" -ge 41 ]; then ok "ringtail consume reads the 41 records"; else bad "ringtail consume reads the 41 records"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
