#!/usr/bin/env bash
# cli_kafka_oldformat.sh — what `ringtail serve` accepts and serves beyond RecordBatch v2 as the
# client wrote it, as a Kafka 3.x broker does (issue 20, items 2 and 3):
#   - Kafka's produce validation (tests/kafka/produce_wire.py, docs/format.md B.7 V16-V17):
#     hand-built batches whose maxTimestamp is -1, below or above their records' are accepted
#     and stored with the records' max (CRC valid, the time index finds it), a batch already
#     right is stored as sent; under --log-message-timestamp-type LogAppendTime the stored
#     batch carries bit 3 and the broker's clock, answered as log_append_time;
#   - message sets v0/v1 are up-converted to RecordBatch v2 (engine/log/msgset.c), recompressed
#     with their codec: kcat with api.version.request=false and broker.version.fallback=0.9.0
#     (Produce v1, magic 0; none, gzip, snappy, lz4 with the 0.8-0.9 frame checksum) and
#     produce_wire.py msgset (magic 1 at Produce v2, magic 0 at v3, gzip wrappers; refusals:
#     CRC, mixed magic, truncation, nesting, zstd); a modern kcat consumer and `ringtail consume`
#     read the same keys, values and timestamps (-1 for v0);
#   - Fetch v0-3 (handle_fetch.c KF5), once the broker advertises it (skipped before): the same
#     records read by produce_wire.py fetch at v0-3 in message format 0/1 (CRCs, timestamps at
#     v2-3, nothing below the fetch offset) and by kcat pinned to 0.9.0 for every codec; kcat
#     0.9.0 -o beginning / -o -5 (ListOffsets v0, KF8); a transactional gzip topic (committed,
#     aborted, committed) read by kcat pinned to 0.9.0 and 0.8.2 (aborted records kept, markers
#     dropped) and by a modern read_committed kcat; counted in metrics (promtool-checked);
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

# ---- Fetch v0-3 under a small --connection-max-response-bytes (KF5) ---------------------------
# 3000 uncompressed records of ~400 bytes (1.2 MB, in message sets of up to 1 MB) read by kcat pinned to
# 0.9.0 through a broker whose per-connection response bound is 64 KiB: a first converted batch
# bigger than the bound still goes (else the consumer would stall at it), and every record
# arrives in order.
D=$T/bound
MPORT2=$(free_port)
serve_start "$D" --connection-max-response-bytes 65536 --metrics "127.0.0.1:$MPORT2"
pad=$(head -c 380 /dev/zero | tr '\0' 'p')
seq 1 3000 | sed "s/.*/k&:v&-$pad/" >"$T/want-bound"
kcat -b "$BROKER" -X socket.timeout.ms=10000 -P -t bound -K: -z none -X api.version.request=false \
    -X broker.version.fallback=0.9.0 <"$T/want-bound" >"$T/out" 2>"$T/err"
expect "kcat (fallback 0.9.0) produces 3000 records of ~400 bytes" 0
timeout 120 kcat -b "$BROKER" -X socket.timeout.ms=10000 -C -t bound -o beginning -c 3000 \
    -X api.version.request=false -X broker.version.fallback=0.9.0 -f '%k:%s\n' \
    >"$T/old-consumer" 2>"$T/err"
if cmp -s "$T/want-bound" "$T/old-consumer"; then
    ok "kcat (fallback 0.9.0) reads the 3000 records through a 64 KiB response bound"
else
    bad "kcat (fallback 0.9.0) reads the 3000 records through a 64 KiB response bound ($(wc -l <"$T/old-consumer") lines)"
fi
nb=$(curl -sS "http://127.0.0.1:$MPORT2/metrics" | awk '/^ringtail_kafka_fetch_downconverted_bytes_total/ { print $2 }')
if [ "${nb:-0}" -ge 1200000 ]; then
    ok "the 1.2 MB went down-converted ($nb bytes)"
else
    bad "the 1.2 MB went down-converted (${nb:-none} bytes)"
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

# ---- message sets v0/v1 from kcat pinned to old protocols, up-converted (msgset.c MS1-MS9) -------
# broker.version.fallback 0.9.0: Produce v1 with magic-0 messages (no timestamps; lz4 with the
# 0.8-0.9 header checksum). librdkafka 2.0.2 with fallback 0.10.0 sends ApiVersions anyway (0.10
# has it) and then writes v2 batches at Produce v7, so magic 1 comes from produce_wire.py below.
D=$T/old
MPORT=$(free_port)
serve_start "$D" --metrics "127.0.0.1:$MPORT"
KC=(kcat -b "$BROKER" -X socket.timeout.ms=10000 -m 15)
# shellcheck disable=SC2043 # one fallback today: 0.10.0 negotiates (see above)
for fb in 0.9.0; do
    for codec in none gzip snappy lz4; do
        tp=old-$fb-$codec
        : >"$T/want"
        for i in $(seq 1 20); do echo "key$i:value-$i-$fb-$codec" >>"$T/want"; done
        "${KC[@]}" -P -t "$tp" -K: -z "$codec" -X api.version.request=false \
            -X broker.version.fallback="$fb" <"$T/want" >"$T/out" 2>"$T/err"
        RC=$?
        if [ $RC -eq 0 ]; then
            ok "kcat (fallback $fb, $codec) produces 20 records"
        else
            bad "kcat (fallback $fb, $codec) produces 20 records"
            continue
        fi
        # A modern consumer (ApiVersion negotiated: Fetch v11, RecordBatch v2).
        "${KC[@]}" -C -t "$tp" -e -f '%k:%s %T\n' >"$T/modern-$tp" 2>"$T/err"
        cut -d' ' -f1 "$T/modern-$tp" >"$T/modern-kv"
        cp "$T/want" "$T/want-$tp"
        if cmp -s "$T/want" "$T/modern-kv"; then
            ok "fallback $fb, $codec: a modern kcat consumer reads the 20 keys and values"
        else
            bad "fallback $fb, $codec: a modern kcat consumer reads the 20 keys and values"
        fi
        # v0 carries no timestamp (-1, as Kafka up-converts it); v1 carries the producer's.
        if [ "$fb" = 0.9.0 ]; then
            n=$(grep -vc ' -1$' "$T/modern-$tp")
        else
            n=$(awk '$2 < 1600000000000' "$T/modern-$tp" | wc -l)
        fi
        if [ "$n" -eq 0 ]; then
            ok "fallback $fb, $codec: timestamps are $([ "$fb" = 0.9.0 ] && echo '-1 (v0)' || echo "the producer's (v1)")"
        else
            bad "fallback $fb, $codec: $n records with the wrong timestamp"
        fi
    done
done
# Magic 1 (and magic 0 at Produce v3, gzip wrappers, refusals) by hand.
"$PY" "$K/produce_wire.py" "$BROKER" old-wire msgset "$T/want-old-wire" >"$T/out" 2>&1
RC=$?
cat "$T/out"
if [ $RC -eq 0 ]; then
    ok "produce_wire.py msgset: every check passed"
else
    bad "produce_wire.py msgset"
fi
"${KC[@]}" -C -t old-wire -e -f '%k:%s %T\n' >"$T/modern-old-wire" 2>"$T/err"
if cmp -s "$T/want-old-wire" "$T/modern-old-wire"; then
    ok "a modern kcat consumer reads the magic 0/1 records with their keys, values, timestamps"
else
    bad "a modern kcat consumer reads the magic 0/1 records with their keys, values, timestamps"
    diff "$T/want-old-wire" "$T/modern-old-wire" | head -5
fi
# Fetch v0-3 (handle_fetch.c KF5): the same records down-converted to magic 0 and 1. Runs once
# the broker advertises Fetch v0-3 (the codec's and the lead's part); until then it skips.
"$PY" "$K/produce_wire.py" "$BROKER" old-wire fetch "$T/want-old-wire" >"$T/out" 2>&1
RC=$?
cat "$T/out"
if [ $RC -eq 0 ]; then
    ok "produce_wire.py fetch: every check passed (or skipped: $(grep -c '^skip' "$T/out"))"
else
    bad "produce_wire.py fetch"
fi
# kcat pinned to 0.9.0 consuming (Fetch v0-1, message format 0) every codec's records, from
# offset 0 (0.9's ListOffsets v0 is another part of the work): the keys and values produced.
if ! grep -q '^skip' "$T/out"; then
    for codec in none gzip snappy lz4; do
        tp=old-0.9.0-$codec
        "${KC[@]}" -C -t "$tp" -o 0 -e -X api.version.request=false \
            -X broker.version.fallback=0.9.0 -f '%k:%s\n' >"$T/old-consumer" 2>"$T/err"
        if cmp -s "$T/want-$tp" "$T/old-consumer"; then
            ok "kcat (fallback 0.9.0) consumes the $codec topic's 20 records in message format 0"
        else
            bad "kcat (fallback 0.9.0) consumes the $codec topic's 20 records in message format 0"
            diff "$T/want-$tp" "$T/old-consumer" | head -5
        fi
    done
    # -o beginning / -o -5: 0.9's ListOffsets v0 (old_style_offsets, KF8) finds the start and
    # the end; Metadata v0 names the topic.
    tp=old-0.9.0-gzip
    "${KC[@]}" -C -t "$tp" -o beginning -e -X api.version.request=false \
        -X broker.version.fallback=0.9.0 -f '%k:%s\n' >"$T/old-consumer" 2>"$T/err"
    if cmp -s "$T/want-$tp" "$T/old-consumer"; then
        ok "kcat (fallback 0.9.0) -o beginning: ListOffsets v0 finds offset 0, 20 records read"
    else
        bad "kcat (fallback 0.9.0) -o beginning: ListOffsets v0 finds offset 0"
        diff "$T/want-$tp" "$T/old-consumer" | head -5
    fi
    "${KC[@]}" -C -t "$tp" -o -5 -e -X api.version.request=false \
        -X broker.version.fallback=0.9.0 -f '%k:%s\n' >"$T/old-consumer" 2>"$T/err"
    if tail -5 "$T/want-$tp" | cmp -s - "$T/old-consumer"; then
        ok "kcat (fallback 0.9.0) -o -5: ListOffsets v0 finds the end, the last 5 records read"
    else
        bad "kcat (fallback 0.9.0) -o -5: ListOffsets v0 finds the end"
        diff <(tail -5 "$T/want-$tp") "$T/old-consumer" | head -5
    fi
    # Transactions (KF5): a transactional producer writes gzip batches, committed, aborted,
    # committed; an old consumer reads uncommitted (Fetch v0-3 has no isolation level), so it
    # gets every data record, aborted ones included, as Kafka serves it — and no control
    # record (the markers are dropped, not turned into empty messages).
    "$PY" - "$BROKER" old-txn >"$T/out" 2>&1 <<'EOF'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "old-txn-1",
              "compression.type": "gzip", "linger.ms": 50})
p.init_transactions(30)
for phase, end in (("c1", p.commit_transaction), ("a1", p.abort_transaction),
                   ("c2", p.commit_transaction)):
    p.begin_transaction()
    for i in range(5):
        p.produce(sys.argv[2], key=b"k%d" % i, value=("%s-%d" % (phase, i)).encode())
    p.flush(30)
    end(30)
print("done")
EOF
    if grep -q '^done$' "$T/out"; then
        ok "a transactional producer wrote committed, aborted and committed gzip batches"
    else
        bad "a transactional producer wrote committed, aborted and committed gzip batches"
        cat "$T/out"
    fi
    : >"$T/want-txn"
    for ph in c1 a1 c2; do for i in 0 1 2 3 4; do echo "k$i:$ph-$i" >>"$T/want-txn"; done; done
    # -c 15, not -e: the topic ends with a commit marker that converts to nothing, so an old
    # consumer's offset stays at the marker and never reaches the high watermark (its EOF).
    for fb in 0.9.0 0.8.2; do
        timeout 60 "${KC[@]}" -C -t old-txn -o beginning -c 15 -X api.version.request=false \
            -X broker.version.fallback=$fb -f '%k:%s\n' >"$T/old-consumer" 2>"$T/err"
        if cmp -s "$T/want-txn" "$T/old-consumer"; then
            ok "kcat (fallback $fb) reads the 15 transactional records (aborted kept), no marker"
        else
            bad "kcat (fallback $fb) reads the 15 transactional records (aborted kept), no marker"
            diff "$T/want-txn" "$T/old-consumer" | head -5
        fi
    done
    # A modern read_committed consumer skips the aborted five.
    "${KC[@]}" -C -t old-txn -o beginning -e -X isolation.level=read_committed \
        -f '%k:%s\n' >"$T/modern-consumer" 2>"$T/err"
    if grep -v ':a1-' "$T/want-txn" | cmp -s - "$T/modern-consumer"; then
        ok "a modern read_committed kcat reads the 10 committed records"
    else
        bad "a modern read_committed kcat reads the 10 committed records"
        diff <(grep -v ':a1-' "$T/want-txn") "$T/modern-consumer" | head -5
    fi
    curl -sS "http://127.0.0.1:$MPORT/metrics" >"$T/metrics"
    n=$(awk '/^ringtail_kafka_fetch_downconverted_batches_total/ { print $2 }' "$T/metrics")
    nb=$(awk '/^ringtail_kafka_fetch_downconverted_bytes_total/ { print $2 }' "$T/metrics")
    if [ "${n:-0}" -ge 8 ] && [ "${nb:-0}" -gt 0 ]; then
        ok "metrics count the down-converted batches ($n) and bytes ($nb)"
    else
        bad "metrics count the down-converted batches (${n:-none}) and bytes (${nb:-none})"
    fi
    if command -v promtool >/dev/null; then
        if promtool check metrics <"$T/metrics" >"$T/out" 2>&1; then
            ok "promtool check metrics accepts the exposition"
        else
            bad "promtool check metrics accepts the exposition"
            head -5 "$T/out"
        fi
    fi
fi
# 4 kcat sets (one per codec) + 4 accepted by produce_wire.py; refused ones are not counted.
n=$(curl -sS "http://127.0.0.1:$MPORT/metrics" | awk '/^ringtail_kafka_produce_upconverted_sets_total/ { print $2 }')
if [ "${n:-0}" -ge 8 ]; then
    ok "metrics count the up-converted message sets ($n)"
else
    bad "metrics count the up-converted message sets (${n:-none})"
fi
serve_stop
# shellcheck disable=SC2043
for tp in old-wire; do
    "$RT" consume "$D" "$tp" --format json 2>"$T/err" |
        "$PY" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print("%s:%s %d" % (r["key"], r["value"], r["timestamp"]))' >"$T/engine"
    if [ -s "$T/engine" ] && cmp -s "$T/want-old-wire" "$T/engine"; then
        ok "ringtail consume reads the same magic 0/1 records"
    else
        bad "ringtail consume reads the same magic 0/1 records"
    fi
done
# shellcheck disable=SC2043 # one fallback today: 0.10.0 negotiates (see above)
for fb in 0.9.0; do
    for codec in none gzip snappy lz4; do
        tp=old-$fb-$codec
        [ -f "$T/modern-$tp" ] || continue
        # The engine's own reader: the same keys, values and timestamps as the modern consumer.
        "$RT" consume "$D" "$tp" --format json 2>"$T/err" |
            "$PY" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print("%s:%s %d" % (r["key"], r["value"], r["timestamp"]))' >"$T/engine"
        if [ -s "$T/engine" ] && cmp -s "$T/modern-$tp" "$T/engine"; then
            ok "fallback $fb, $codec: ringtail consume reads what the modern consumer read (keys, values, timestamps)"
        else
            bad "fallback $fb, $codec: ringtail consume reads what the modern consumer read"
            diff "$T/modern-$tp" "$T/engine" | head -5
        fi
        "$RT" dump --no-records "$D/$tp-0/00000000000000000000.log" >"$T/out" 2>"$T/err"
        if [ "$codec" = none ] || grep -q "compression $codec" "$T/out"; then
            ok "fallback $fb, $codec: stored as RecordBatch v2 with codec $codec (recompressed)"
        else
            bad "fallback $fb, $codec: stored as RecordBatch v2 with codec $codec"
        fi
    done
done
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
