#!/usr/bin/env bash
# cli_kafka_bad_input.sh — hostile bytes at `ringtail serve` (tests/kafka/bad_input.py: garbage,
# a frame length of 2^31-1 and of -1, truncated and too-short frames, an unknown API key,
# unsupported versions, requests whose inner array lengths lie (also the transactional APIs at
# their flexible v3 and KIP-664's operator APIs), a produce with a corrupt batch CRC, every
# advertised (API, version) of the broker's ApiVersions table with cut and lying bodies, 50
# oversized frames at once) while a healthy idempotent producer (confluent-kafka) and a
# consumer (kcat) keep working on another topic. Each bad input gets the right error or a closed
# connection; the broker never dies; the healthy clients lose nothing (every acknowledged record
# stored once and read by the consumer); the data directory holds exactly the good batches and
# `ringtail verify` is clean. All of it over both network backends (--io uring, --io sync).
#
# usage: bash tests/cli_kafka_bad_input.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_bad_input.sh /path/to/ringtail}
PY=/usr/bin/python3
HERE=$(dirname "$0")/kafka
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kbad-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
PRODUCER_PID=
CONSUMER_PID=
cleanup() {
    for p in $PRODUCER_PID $CONSUMER_PID; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# wait_lines FILE N SECONDS
wait_lines() {
    local i
    for i in $(seq 1 $(($3 * 10))); do
        [ "$(lines "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

scenario() {
    local io=$1
    D=$T/data-$io
    rm -f "$T/stop" "$T/acked" "$T/consumed"
    run topic create "$D" healthy --partitions 2
    expect "[$io] topic healthy" 0
    run topic create "$D" crc --partitions 1
    expect "[$io] topic crc" 0
    serve_start "$D" --io "$io"

    $PY "$HERE/py_clients.py" produce-until "$BROKER" healthy "$T/stop" "$T/acked" >"$T/producer.out" 2>"$T/producer.err" &
    PRODUCER_PID=$!
    kcat -b "$BROKER" -C -t healthy -o beginning -q -u -f '%s\n' >"$T/consumed" 2>"$T/consumer.err" &
    CONSUMER_PID=$!
    if wait_lines "$T/acked" 1000 60 && wait_lines "$T/consumed" 100 60; then
        ok "[$io] the healthy producer and consumer are running"
    else
        RC=1
        bad "[$io] the healthy producer and consumer are running"
    fi

    $PY "$HERE/bad_input.py" 127.0.0.1 "$PORT" "$SERVE_PID" >"$T/bad.out" 2>"$T/bad.err"
    RC=$?
    cat "$T/bad.out"
    passed=$((passed + $(grep -c '^ok ' "$T/bad.out")))
    failed=$((failed + $(grep -c '^FAIL ' "$T/bad.out")))
    if [ $RC -ne 0 ] && ! grep -q '^FAIL ' "$T/bad.out"; then
        cp "$T/bad.out" "$T/out"
        cp "$T/bad.err" "$T/err"
        bad "[$io] bad_input.py ran to its end"
    fi

    mid=$(lines "$T/acked")
    if wait_lines "$T/acked" $((mid + 1000)) 60; then
        ok "[$io] the healthy producer kept going through the bad input (1000 more acknowledged)"
    else
        RC=1
        bad "[$io] the healthy producer kept going through the bad input"
    fi
    touch "$T/stop"
    wait "$PRODUCER_PID"
    RC=$?
    PRODUCER_PID=
    cp "$T/producer.out" "$T/out"
    cp "$T/producer.err" "$T/err"
    expect "[$io] the healthy producer ends without an error" 0 "^sent [0-9]+ acked [0-9]+ failed 0$"
    if wait_lines "$T/consumed" "$(lines "$T/acked")" 60; then
        ok "[$io] the healthy consumer read every acknowledged record"
    else
        RC=1
        bad "[$io] the healthy consumer read every acknowledged record ($(lines "$T/consumed") of $(lines "$T/acked"))"
    fi
    kill "$CONSUMER_PID" 2>/dev/null
    wait "$CONSUMER_PID" 2>/dev/null
    CONSUMER_PID=

    serve_stop "[$io] serve exits 0 on SIGTERM"
    serve_verify "$D"
    engine_values "$D" healthy | sort -n >"$T/stored"
    dups=$(uniq -d "$T/stored" | wc -l)
    missing=$(comm -23 <(sort -n "$T/acked") "$T/stored" | wc -l)
    if [ "$dups" -eq 0 ] && [ "$missing" -eq 0 ]; then
        ok "[$io] every acknowledged healthy record is stored exactly once"
    else
        RC=1
        bad "[$io] every acknowledged healthy record is stored exactly once ($missing missing, $dups duplicated)"
    fi
    engine_values "$D" crc >"$T/out" 2>"$T/err"
    RC=$?
    if [ $RC -eq 0 ] && [ "$(tr '\n' ' ' <"$T/out")" = "good-0 good-3 " ]; then
        ok "[$io] topic crc holds the two good batches and not the corrupt one"
    else
        bad "[$io] topic crc holds the two good batches and not the corrupt one"
    fi
    run topic list "$D"
    if [ $RC -eq 0 ] && ! grep -q "lies" "$T/out"; then
        ok "[$io] no topic was created by the bad requests"
    else
        bad "[$io] no topic was created by the bad requests"
    fi
}
scenario uring
scenario sync

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
