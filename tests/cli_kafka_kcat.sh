#!/usr/bin/env bash
# cli_kafka_kcat.sh — kcat (Debian's, on librdkafka 2.0.2) against `ringtail serve`: metadata
# (-L) names this broker at 127.0.0.1 and the topics; records produced with every compression
# codec (none, gzip, snappy, lz4, zstd) are consumed back in order by kcat and by the engine's
# own consumer; keyed records land where Kafka's murmur2 puts them (librdkafka's murmur2_random
# partitioner, checked against `ringtail murmur2`); an idempotent kcat producer works; SIGTERM
# stops the broker with exit 0 and `ringtail verify` is clean.
#
# usage: bash tests/cli_kafka_kcat.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_kcat.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kcat-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
run topic create "$D" keyed --partitions 3
expect "a 3-partition topic for keyed records" 0
serve_start "$D"

# kcat's own timeouts, so a broker that does not answer fails a check instead of hanging.
KC=(kcat -b "$BROKER" -X socket.timeout.ms=10000 -m 15)

# ---- metadata ------------------------------------------------------------------------------
"${KC[@]}" -L >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && grep -qE "1 brokers?:" "$T/out" && grep -q "at 127.0.0.1:$PORT" "$T/out" &&
    grep -q 'topic "keyed" with 3 partitions' "$T/out"; then
    ok "kcat -L: one broker at 127.0.0.1:$PORT and topic keyed with 3 partitions"
else
    bad "kcat -L: one broker at 127.0.0.1:$PORT and topic keyed with 3 partitions"
fi
"${KC[@]}" -L -J >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
b = m["brokers"]
assert len(b) == 1 and b[0]["name"] == "127.0.0.1:" + sys.argv[2], b
t = {x["topic"]: x for x in m["topics"]}
p = t["keyed"]["partitions"]
assert [x["partition"] for x in p] == [0, 1, 2], p
assert all(x["leader"] == b[0]["id"] and x["replicas"] == [{"id": b[0]["id"]}] for x in p), p
assert m["controllerid"] == b[0]["id"], m
' "$T/out" "$PORT" 2>"$T/err"; then
    ok "kcat -L -J: every partition led by the one broker, which is the controller"
else
    RC=1
    bad "kcat -L -J: every partition led by the one broker, which is the controller"
fi

# ---- every compression codec ------------------------------------------------------------
for codec in none gzip snappy lz4 zstd; do
    topic=codec-$codec
    # Values long and repetitive enough for every codec to compress them.
    seq 1 2000 | sed "s/^/$codec-record-padding-padding-padding-/" >"$T/want-$codec"
    "${KC[@]}" -P -t "$topic" -z "$codec" -X linger.ms=20 -X batch.num.messages=500 \
        -X acks=all <"$T/want-$codec" >"$T/out" 2>"$T/err"
    RC=$?
    expect "kcat -P -z $codec: 2000 records acknowledged" 0
    "${KC[@]}" -C -t "$topic" -o beginning -e -q -f '%s\n' >"$T/got-$codec" 2>"$T/err"
    RC=$?
    if [ $RC -eq 0 ] && cmp -s "$T/want-$codec" "$T/got-$codec"; then
        ok "kcat -C reads the $codec records back, in order"
    else
        cp "$T/got-$codec" "$T/out"
        bad "kcat -C reads the $codec records back, in order ($(wc -l <"$T/got-$codec") lines)"
    fi
done

# ---- keyed records: murmur2 placement -----------------------------------------------------
keys=(alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert)
: >"$T/keyed-in"
for i in $(seq 1 20); do
    for k in "${keys[@]}"; do echo "$k:$k-$i" >>"$T/keyed-in"; done
done
"${KC[@]}" -P -t keyed -K: -X partitioner=murmur2_random <"$T/keyed-in" >"$T/out" 2>"$T/err"
RC=$?
expect "kcat -P -K: keyed records acknowledged" 0
"$RT" murmur2 --partitions 3 "${keys[@]}" | awk '{print $1, $3}' | sort >"$T/want-place"
"${KC[@]}" -C -t keyed -o beginning -e -q -f '%k %p\n' | sort -u >"$T/got-place" 2>"$T/err"
if cmp -s "$T/want-place" "$T/got-place"; then
    ok "each key is in the partition murmur2 gives it (15 keys over 3 partitions)"
else
    RC=1
    cp "$T/got-place" "$T/out"
    bad "each key is in the partition murmur2 gives it"
fi
"${KC[@]}" -C -t keyed -p 1 -o beginning -e -q -f '%s\n' >"$T/got-p1" 2>"$T/err"
grep "$(awk '$2 == 1 {print "^" $1 ":"}' "$T/want-place" | paste -sd'|' | sed 's/|/\\|/g')" \
    "$T/keyed-in" | cut -d: -f2 >"$T/want-p1"
if [ -s "$T/want-p1" ] && cmp -s "$T/want-p1" "$T/got-p1"; then
    ok "partition 1 holds its keys' records in the order they were sent"
else
    RC=1
    cp "$T/got-p1" "$T/out"
    bad "partition 1 holds its keys' records in the order they were sent"
fi

# ---- an idempotent kcat producer -------------------------------------------------------------
seq 1 5000 >"$T/want-idem"
"${KC[@]}" -P -t idem -X enable.idempotence=true -X linger.ms=5 <"$T/want-idem" >"$T/out" 2>"$T/err"
RC=$?
expect "kcat -P with enable.idempotence=true: acknowledged" 0
"${KC[@]}" -C -t idem -o beginning -e -q -f '%s\n' >"$T/got-idem" 2>"$T/err"
if cmp -s "$T/want-idem" "$T/got-idem"; then
    ok "the idempotent producer's 5000 records read back once each, in order"
else
    RC=1
    cp "$T/got-idem" "$T/out"
    bad "the idempotent producer's 5000 records read back once each, in order"
fi

# ---- a consumer at an offset, and past the end ------------------------------------------------
"${KC[@]}" -C -t codec-none -o 1990 -e -q -f '%o %s\n' >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && [ "$(wc -l <"$T/out")" = 10 ] && head -1 "$T/out" | grep -q "^1990 none-record-padding-padding-padding-1991$"; then
    ok "kcat -C -o 1990 starts at offset 1990 and reads the last 10"
else
    bad "kcat -C -o 1990 starts at offset 1990 and reads the last 10"
fi

# ---- stop, verify, and the engine's own consumer reads the same records --------------------
serve_stop
serve_verify "$D"
for codec in none gzip snappy lz4 zstd; do
    engine_values "$D" "codec-$codec" >"$T/engine-$codec" 2>"$T/err"
    RC=$?
    if [ $RC -eq 0 ] && cmp -s "$T/want-$codec" "$T/engine-$codec"; then
        ok "ringtail consume reads the same $codec records"
    else
        cp "$T/engine-$codec" "$T/out"
        bad "ringtail consume reads the same $codec records"
    fi
done
# Every codec's batches are on disk compressed as kcat encoded them (librdkafka compresses
# gzip, snappy and lz4 only when the broker's Produce range reaches v0: KA4 in api.c). A batch
# of one record may be uncompressed: librdkafka sends a batch as it is when compressing it
# would not make it smaller (a lone 40-byte record under lz4's frame), so only an uncompressed
# batch of more than one record is a fault.
for codec in gzip snappy lz4 zstd; do
    "$RT" dump --no-records "$D/codec-$codec-0/00000000000000000000.log" >"$T/out" 2>"$T/err"
    RC=$?
    n=$(grep -c "compression $codec" "$T/out" || true)
    big_plain=$(awk '/^batch @/ { for (i = 1; i < NF; i++) if ($i == "count") c = $(i + 1) }
        /compression none/ && c > 1 { n++ } END { print n + 0 }' "$T/out")
    if [ $RC -eq 0 ] && [ "$n" -gt 0 ] && [ "$big_plain" -eq 0 ]; then
        ok "the $codec topic's segment holds $n $codec batches, none of several records uncompressed"
    else
        bad "the $codec topic's segment holds $codec batches as kcat encoded them ($n found)"
    fi
done
engine_values "$D" idem >"$T/engine-idem" 2>"$T/err"
if cmp -s "$T/want-idem" "$T/engine-idem"; then
    ok "ringtail consume reads the idempotent producer's records once each"
else
    RC=1
    bad "ringtail consume reads the idempotent producer's records once each"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
