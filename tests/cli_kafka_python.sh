#!/usr/bin/env bash
# cli_kafka_python.sh — Debian's confluent-kafka under /usr/bin/python3 (tests/kafka/py_clients.py)
# against `ringtail serve`: an idempotent producer's keyed records with headers read back by a
# consumer (each once, in order per partition, one partition per key); then the broker is
# SIGKILLed under a running idempotent producer (acks=all) and restarted on the same port while
# the producer keeps going: every acknowledged record is in the log exactly once, and no record
# is there twice. After each part, SIGTERM exits 0, `ringtail verify` is clean, and the engine's
# own consumer reads the records.
#
# usage: bash tests/cli_kafka_python.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_python.sh /path/to/ringtail}
PY=/usr/bin/python3
CLIENTS=$(dirname "$0")/kafka/py_clients.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-python-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
PRODUCER_PID=
cleanup() {
    if [ -n "$PRODUCER_PID" ]; then kill -9 "$PRODUCER_PID" 2>/dev/null; wait "$PRODUCER_PID" 2>/dev/null; fi
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
run topic create "$D" py --partitions 3
expect "a 3-partition topic" 0
run topic create "$D" crash --partitions 2
expect "a 2-partition topic for the crash" 0

# ---- produce and consume -------------------------------------------------------------------
serve_start "$D"
$PY "$CLIENTS" roundtrip "$BROKER" py 10000 >"$T/out" 2>"$T/err"
RC=$?
expect "confluent_kafka: 10000 keyed records with headers produced (idempotent) and consumed back" \
    0 "^roundtrip 10000 records over 3 partitions$"
serve_stop
serve_verify "$D"
engine_values "$D" py | sort -t v -k2 -n >"$T/engine" 2>"$T/err"
if cmp -s <(seq 0 9999 | sed 's/^/v/') "$T/engine"; then
    ok "ringtail consume reads the same 10000 values"
else
    RC=1
    cp "$T/engine" "$T/out"
    bad "ringtail consume reads the same 10000 values"
fi

# ---- SIGKILL under a running idempotent producer ------------------------------------------------
# lines FILE: how many lines FILE has (0 when missing).
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# wait_acked N SECONDS: until the producer has N acknowledged records, or the time is up.
wait_acked() {
    local i
    for i in $(seq 1 $(($2 * 10))); do
        [ "$(lines "$T/acked")" -ge "$1" ] && return 0
        kill -0 "$PRODUCER_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
serve_start "$D"
SERVE_PORT=$PORT
$PY "$CLIENTS" produce-until "$BROKER" crash "$T/stop" "$T/acked" >"$T/producer.out" 2>"$T/producer.err" &
PRODUCER_PID=$!
if wait_acked 3000 60; then ok "the producer is running (3000 acknowledged)"; else RC=1; bad "the producer is running"; fi
serve_kill
before=$(lines "$T/acked")
sleep 0.5
serve_start "$D"
if wait_acked $((before + 3000)) 60; then
    ok "after SIGKILL and a restart on the same port the producer goes on (3000 more acknowledged)"
else
    RC=1
    cp "$T/producer.err" "$T/err"
    bad "after SIGKILL and a restart on the same port the producer goes on"
fi
touch "$T/stop"
wait "$PRODUCER_PID"
RC=$?
PRODUCER_PID=
cp "$T/producer.out" "$T/out"
cp "$T/producer.err" "$T/err"
expect "the producer ends without a fatal error" 0 "^sent [0-9]+ acked [0-9]+ failed [0-9]+$"
serve_stop
serve_verify "$D"
engine_values "$D" crash >"$T/stored" 2>"$T/err"
RC=$?
sort -n "$T/stored" >"$T/stored.sorted"
sort -n "$T/acked" >"$T/acked.sorted"
dups=$(uniq -d "$T/stored.sorted" | wc -l)
missing=$(comm -23 "$T/acked.sorted" "$T/stored.sorted" | wc -l)
if [ $RC -eq 0 ] && [ "$dups" -eq 0 ] && [ "$missing" -eq 0 ] && [ -s "$T/acked.sorted" ]; then
    ok "every one of $(lines "$T/acked") acknowledged records is stored exactly once ($(lines "$T/stored") stored)"
else
    RC=1
    bad "every acknowledged record is stored exactly once ($missing missing, $dups duplicated)"
fi

for p in 0 1; do
    engine_values "$D" crash -p "$p" >"$T/part" 2>"$T/err"
    if awk 'NR > 1 && $1 + 0 <= prev {bad = 1} {prev = $1 + 0} END {exit bad}' "$T/part"; then
        ok "partition $p holds the producer's records in send order"
    else
        RC=1
        cp "$T/part" "$T/out"
        bad "partition $p holds the producer's records in send order"
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
