#!/usr/bin/env bash
# cli_kafka_rdkafka.sh — a C program on librdkafka (tests/kafka/rdk_produce.c) against
# `ringtail serve`: an idempotent producer (enable.idempotence=true, acks=all) sends 100 000
# records over 3 partitions, and when half are acknowledged every TCP connection to the broker
# is killed (`ss -K`, both ends), so batches in flight are retried on a new connection. Every
# record must be stored exactly once and in send order per partition — as the delivery reports
# say, as a fresh consumer (kcat) reads, and as the engine's own consumer reads after SIGTERM.
# The scenario runs over both network backends of the broker (--io uring, --io sync = epoll).
#
# usage: bash tests/cli_kafka_rdkafka.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_rdkafka.sh /path/to/ringtail}
BIN=$(dirname "$RT")
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-rdkafka-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

N=100000
# want P: the values of partition P, in order (record i goes to i % 3).
want() { seq "$1" 3 $((N - 1)); }

# scenario IO: the whole check over the broker's network backend IO (uring or sync = epoll).
scenario() {
    local io=$1 p
    D=$T/data-$io
    run topic create "$D" idem --partitions 3
    expect "[$io] a 3-partition topic" 0
    serve_start "$D" --io "$io"
    # Kill both ends of every established connection to the broker's port.
    KILL="ss -K -t state established '( dport = :$PORT or sport = :$PORT )' >/dev/null"
    "$BIN/rdk_produce" "$BROKER" idem $N 3 --midway "$KILL" >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] 100000 records delivered, none failed, offsets in send order per partition" 0 \
        "^delivered $N failed 0 disconnects [0-9]+ reordered 0$"
    if grep -q "running: ss -K" "$T/err" && grep -qiE "disconnect|connection (reset|abort|refused)|transport|broker down" "$T/err"; then
        ok "[$io] the connections were killed midway and the producer saw the disconnection"
    else
        bad "[$io] the connections were killed midway and the producer saw the disconnection"
    fi
    for p in 0 1 2; do
        kcat -b "$BROKER" -C -t idem -p "$p" -o beginning -e -q -f '%s\n' >"$T/got-$p" 2>"$T/err"
        RC=$?
        if [ $RC -eq 0 ] && cmp -s <(want "$p") "$T/got-$p"; then
            ok "[$io] partition $p holds its records exactly once, in order (read by kcat)"
        else
            cp "$T/got-$p" "$T/out"
            bad "[$io] partition $p holds its records exactly once, in order ($(wc -l <"$T/got-$p") read, $(sort "$T/got-$p" | uniq -d | wc -l) duplicated)"
        fi
    done
    serve_stop "[$io] serve exits 0 on SIGTERM"
    serve_verify "$D"
    for p in 0 1 2; do
        engine_values "$D" idem -p "$p" >"$T/engine-$p" 2>"$T/err"
        RC=$?
        if [ $RC -eq 0 ] && cmp -s <(want "$p") "$T/engine-$p"; then
            ok "[$io] ringtail consume -p $p reads the same records"
        else
            cp "$T/engine-$p" "$T/out"
            bad "[$io] ringtail consume -p $p reads the same records"
        fi
    done
}
scenario uring
scenario sync

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
