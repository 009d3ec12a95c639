#!/usr/bin/env bash
# cli_basic.sh — end-to-end checks of the `ringtail` CLI through the built binary: topic create
# and its usage errors, produce (plain, keyed with Kafka's murmur2 placement, sticky round-robin,
# errors), consume (value, json, --from, --max), dump, verify (clean, corrupt, a crash's lost
# tail, locked) and demo.
#
# usage: bash tests/cli_basic.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_basic.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-basic-XXXXXX")
LOCK_PID=
cleanup() {
    if [ -n "$LOCK_PID" ]; then kill "$LOCK_PID" 2>/dev/null; wait "$LOCK_PID" 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/helpers/cli_harness.sh"

D=$T/data

# ---- help and usage ------------------------------------------------------------------------
for c in topic produce consume dump verify demo murmur2; do
    run "$c" --help
    expect "$c --help exits 0 and prints usage" 0 "usage: ringtail $c"
done
run
expect "no command is a usage error" 2 "usage: ringtail COMMAND"
run frobnicate
expect "unknown command is a usage error" 2 "unknown command 'frobnicate'"

# ---- topic create / list -------------------------------------------------------------------
run topic create "$D" orders --partitions 3
expect "topic create" 0 "created topic orders with 3 partitions"
run topic create "$D" orders --partitions 3
expect "duplicate topic fails with exit 1" 1 "already exists"
run topic create "$D" 'bad/name' --partitions 1
expect "bad topic name is a usage error" 2 "invalid topic name 'bad/name'"
run topic create "$D" ok-name --partitions 0
expect "--partitions 0 is a usage error" 2 "--partitions must be a whole number >= 1"
run topic create
expect "missing DIR is a usage error" 2 "missing DIR"
run topic create "$D" nopart
expect "missing --partitions is a usage error" 2 "missing --partitions"
run topic create "$T/fresh" 'a b' --partitions 1
expect "bad name on a new directory is a usage error" 2 "invalid topic name"
check "a bad command does not create the directory" test ! -e "$T/fresh"
before=$(cd "$D" && find . -type f | sort | xargs md5sum)
run topic create "$D" '..' --partitions 2
after=$(cd "$D" && find . -type f | sort | xargs md5sum)
check "a bad command leaves the data directory unchanged" test "$before" = "$after"
run topic create "$D" keyed --partitions 3
expect "second topic" 0 "created topic keyed"
run topic create "$D" rr --partitions 3
expect "third topic" 0 "created topic rr"
run topic list "$D"
expect "topic list shows topics and partition counts" 0 "^orders	3$"
check "topic list keeps creation order" test "$(cut -f1 "$T/out" | tr '\n' ' ')" = "orders keyed rr "
run topic list "$T/nowhere"
expect "topic list on a missing directory fails" 1 "nowhere"
check "... and does not create it" test ! -e "$T/nowhere"

# ---- produce / consume: plain ------------------------------------------------------------
seq 1 1000 >"$T/lines"
IN=$T/lines run produce "$D" orders
expect "produce 1000 lines" 0 "^produced 1000 records to orders \(3 partitions\) in [0-9]+ batch(es)?$"
run consume "$D" orders
expect "consume all partitions" 0
check "consume returns every produced line once" test "$(sort -n "$T/out" | md5sum)" = "$(md5sum <"$T/lines")"
run consume "$D" orders -p 0
cp "$T/out" "$T/p0"
n0=$(wc -l <"$T/p0")
check "partition 0 holds records" test "$n0" -gt 0
run consume "$D" orders -p 0 --from 5 --max 3
expect "consume --from 5 --max 3" 0
check "--from 5 --max 3 returns offsets 5..7" test "$(cat "$T/out")" = "$(sed -n 6,8p "$T/p0")"
run consume "$D" orders -p 0 --from earliest --max 2
check "--from earliest starts at offset 0" test "$(cat "$T/out")" = "$(sed -n 1,2p "$T/p0")"
run consume "$D" orders -p 0 --from latest
expect "--from latest prints nothing" 0
check "... really nothing" test ! -s "$T/out"
run consume "$D" orders -p 0 --from 99999999
expect "--from beyond the end fails" 1 "out of range"
run consume "$D" orders -p 7
expect "a partition that does not exist is a usage error" 2 "partition 7 does not exist"
run consume "$D" nosuch
expect "consume of an unknown topic fails" 1 "no topic 'nosuch'"
run consume "$D" orders --format xml
expect "bad --format is a usage error" 2 "--format must be value or json"
IN=$T/lines run produce "$D" nosuch
expect "produce to an unknown topic fails" 1 "no topic 'nosuch'"
IN=$T/lines run produce "$T/nodir" orders
expect "produce to a missing directory fails" 1 "nodir"
check "... and does not create it" test ! -e "$T/nodir"

# ---- produce: sticky round-robin per batch ---------------------------------------------------
printf 'a\nb\nc\nd\ne\nf\n' >"$T/six"
IN=$T/six run produce "$D" rr --batch-records 2
expect "unkeyed produce with --batch-records 2" 0 "produced 6 records to rr \(3 partitions\) in 3 batches"
for p in 0 1 2; do
    run consume "$D" rr -p "$p"
    want=$(sed -n "$((2 * p + 1)),$((2 * p + 2))p" "$T/six")
    check "round-robin per batch: partition $p got lines $((2 * p + 1))-$((2 * p + 2))" test "$(cat "$T/out")" = "$want"
done

# ---- produce: keyed placement = Kafka's murmur2 ---------------------------------------------
# murmur2 values from Kafka's UtilsTest.testMurmur2 and librdkafka's rdmurmur2.c unittest.
declare -A KAFKA_MURMUR2=(
    [21]=-973932308
    [foobar]=-790332482
    [abc]=479470107
    [a-little-bit-long-string]=-985981536
    [a-little-bit-longer-string]=-1486304829
    [lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8]=-58897971
    [kafka]=$((0xd067cf64 - 0x100000000))
    [giberish123456789]=$((0x8f552b0c - 0x100000000))
)
: >"$T/keyed"
for k in "${!KAFKA_MURMUR2[@]}"; do printf '%s:value-of-%s\n' "$k" "$k" >>"$T/keyed"; done
printf 'no separator here\n' >>"$T/keyed"
IN=$T/keyed run produce "$D" keyed --key-sep :
expect "keyed produce" 0 "produced 9 records to keyed \(3 partitions\)"
for p in 0 1 2; do
    "$RT" consume "$D" keyed -p "$p" --format json >"$T/keyed-$p.json" 2>>"$T/err"
done
for k in "${!KAFKA_MURMUR2[@]}"; do
    h=${KAFKA_MURMUR2[$k]}
    want=$(((h & 0x7fffffff) % 3))
    check "key '$k' landed in partition $want = toPositive($h) % 3" \
        grep -q "\"key\":\"$k\"" "$T/keyed-$want.json"
done
check "a line without the separator has a null key" grep -q '"key":null,"value":"no separator here"' "$T"/keyed-*.json

# ---- consume --format json ------------------------------------------------------------------
run topic create "$D" js --partitions 1
printf 'k1\tplain\nk2\twith "quotes" and \\backslash\\\n\tnull-key-is-empty-key\nk4\tbad utf8 \xff\xfe end\nk5\t\xc3\xa9t\xc3\xa9 \xe2\x82\xac\n' >"$T/js"
printf 'no tab: null key\n' >>"$T/js"
IN=$T/js run produce "$D" js --key-sep '\t'
expect "produce for json" 0 "produced 6 records"
run consume "$D" js --format json
expect "consume --format json" 0
cat >"$T/check_json.py" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(rows) == 6, rows
for i, r in enumerate(rows):
    assert set(r) == {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}, r
    assert r["topic"] == "js" and r["partition"] == 0 and r["offset"] == i, r
    assert isinstance(r["timestamp"], int) and r["timestamp"] > 0, r
    assert r["headers"] == [], r
assert rows[0]["key"] == "k1" and rows[0]["value"] == "plain"
assert rows[1]["value"] == 'with "quotes" and \\backslash\\', rows[1]
assert rows[2]["key"] == "" and rows[2]["value"] == "null-key-is-empty-key", rows[2]
assert rows[3]["value"] == "bad utf8 \u00ff\u00fe end", rows[3]   # invalid UTF-8 -> \u00XX
assert rows[4]["value"] == "\u00e9t\u00e9 \u20ac", rows[4]          # valid UTF-8 kept
assert rows[5]["key"] is None and rows[5]["value"] == "no tab: null key", rows[5]
EOF
check "json output parses and escapes as documented" python3 "$T/check_json.py" "$T/out"

# ---- produce: a line longer than a batch ------------------------------------------------------
{ echo short; head -c 1100000 /dev/zero | tr '\0' x; echo; } >"$T/long"
IN=$T/long run produce "$D" orders -p 1
expect "a line longer than the largest batch fails naming the line" 1 "stdin line 2: 1100000 bytes do not fit"

# ---- dump -----------------------------------------------------------------------------------
LOG0=$D/orders-0/00000000000000000000.log
run dump "$LOG0"
expect "dump .log lists batches with CRC ok" 0 "^batch @0 baseOffset 0 lastOffset [0-9]+ count [0-9]+ size [0-9]+ crc 0x[0-9a-f]{8} ok$"
check "dump .log lists records" grep -qE '^    offset 0 ts [0-9]+ key null value [0-9]+B "[0-9]+"$' "$T/out"
run dump "$D/orders-0/00000000000000000000.index" "$D/orders-0/00000000000000000000.timeindex" "$D/ringtail.meta"
expect "dump .index, .timeindex and ringtail.meta" 0 "topic orders partitions 3"
run dump "$T/lines"
expect "dump of an unknown kind of file is a usage error" 2 "unknown kind of file"

# A hand-made segment (CRC-32C computed here, independently of the engine): a transactional
# data batch, a COMMIT marker and a zero-filled preallocated tail.
mkdir -p "$T/hand"
python3 - "$T/hand/00000000000000000000.log" <<'EOF'
import struct, sys
T = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
assert crc32c(b"123456789") == 0xE3069283
def varint(v):
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z); return bytes(out)
        out.append((z & 0x7F) | 0x80); z >>= 7
def record(delta, key, value):
    body = b"\x00" + varint(0) + varint(delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(0)
    return varint(len(body)) + body
def batch(base, attrs, pid, epoch, seq, recs, ts=1700000000000):
    records = b"".join(recs)
    after_crc = struct.pack(">hiqqqhii", attrs, len(recs) - 1, ts, ts, pid, epoch, seq, len(recs)) + records
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiib", base, length, 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
data = batch(0, 0x10, 5, 0, 0, [record(0, b"k1", b"hello"), record(1, None, b"world")])
marker = batch(2, 0x30, 5, 0, -1, [record(0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7))])
assert len(marker) == 78
open(sys.argv[1], "wb").write(data + marker + bytes(100))
EOF
run dump "$T/hand/00000000000000000000.log"
expect "dump of a hand-made segment" 0 "crc 0x[0-9a-f]{8} ok"
check "dump decodes attributes and producer" grep -q "compression none, CreateTime, transactional, data" "$T/out"
check "dump shows the producer fields" grep -q "producerId 5 epoch 0 baseSequence 0" "$T/out"
check "dump shows a COMMIT marker with its coordinator epoch" grep -q "offset 2: control COMMIT coordinatorEpoch 7" "$T/out"
check "dump previews keys and values" grep -q 'offset 0 ts 1700000000000 key 2B "k1" value 5B "hello"' "$T/out"
check "dump stops at the zero-filled tail with a note" grep -q "zero-filled tail (preallocated, unused) from position 165: 100 bytes" "$T/out"

# ---- verify ---------------------------------------------------------------------------------
run verify "$D"
expect "verify of a clean directory" 0 "healthy"
check "verify summary counts partitions and batches" grep -qE "4 topics, 10 partitions, 10 segments, [0-9]+ batches, [0-9]+ records" "$T/out"

C=$T/corrupt
cp -a "$D" "$C"
CLOG=$C/orders-0/00000000000000000000.log
python3 - "$CLOG" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[100] ^= 0x40          # inside the first batch's records: the CRC must catch it
open(p, "r+b").write(b)
EOF
run verify "$C"
expect "verify of a corrupted segment exits 1" 1 "problem"
check "verify names the file and the batch's offset" grep -qF "$CLOG: offset 0: batch:" "$T/out"
run dump "$CLOG"
expect "dump of the corrupted segment exits 1 and marks the batch" 1 "crc 0x[0-9a-f]{8} BAD"
check "dump reports file and offset" grep -qF "!! $CLOG: offset 0: crc mismatch" "$T/out"

# Torn tail in the newest segment, as a crash leaves it: verify reports it.
cp -a "$D" "$T/torn"
printf '\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x10\x00garbage' >>"$T/torn/orders-1/00000000000000000000.log"
run verify "$T/torn"
expect "verify reports a torn tail with its offset" 1 "orders-1/00000000000000000000.log: offset [0-9]+: "

# A zero-filled (preallocated) tail is fine in the newest segment after a crash, not in a
# cleanly closed directory (open would refuse it there: format.md OV1).
cp -a "$D" "$T/zero"
head -c 4096 /dev/zero >>"$T/zero/orders-2/00000000000000000000.log"
run verify "$T/zero"
expect "verify reports a zero-filled tail in a cleanly closed directory" 1 "zero-filled tail"
rm -f "$T/zero/.clean_shutdown"
run verify "$T/zero"
expect "verify accepts a zero-filled tail in the newest segment after a crash" 0 "healthy"

# Stray files are warnings, not failures.
touch "$T/zero/stray.txt" "$T/zero/orders-0/leftover.tmp"
run verify "$T/zero"
expect "verify warns about a stray file and stays healthy" 0 "warning: .*stray.txt: unexpected entry"

# A crash that lost the newest segment's tail (format.md OV8): a writer killed with SIGKILL, its
# newest .log then cut at a batch boundary as a power loss may leave it, while its indexes keep
# entries past the cut. No damage: verify warns (file and offset) and exits 0; recover repairs it
# and verify is silent.
L=$T/lost
run topic create "$L" t --partitions 1
mkfifo "$T/fifo"
"$RT" produce "$L" t -p 0 --batch-records 10 <"$T/fifo" >/dev/null 2>&1 &
PROD=$!
exec 7>"$T/fifo"
seq 1 3000 | sed 's/$/-padding-padding-padding-padding/' >&7
for _ in $(seq 1 600); do # until the last batch is in the log (a bound, not a time to assert)
    "$RT" dump "$L/t-0/00000000000000000000.log" 2>/dev/null | grep -q "baseOffset 2990 " && break
    sleep 0.05
done
kill -9 "$PROD"
wait "$PROD" 2>/dev/null
exec 7>&-
POS=$("$RT" dump "$L/t-0/00000000000000000000.log" | sed -n 's/^batch @\([0-9]*\) baseOffset 1500 .*/\1/p')
truncate -s "${POS:-0}" "$L/t-0/00000000000000000000.log"
run verify "$L"
expect "verify warns about index entries past a crash's lost tail and exits 0" 0 \
    "warning: .*00000000000000000000.index: offset [0-9]+: .*past the log's end"
expect "... and names the .timeindex too" 0 "warning: .*00000000000000000000.timeindex: offset [0-9]+: "
run recover "$L"
expect "recover repairs a lost tail" 0 "recovered"
run verify "$L"
if [ "$RC" -eq 0 ] && ! grep -q "warning:" "$T/out"; then ok "verify is silent after recover"; else bad "verify is silent after recover"; fi

# A damaged catalogue.
cp -a "$D" "$T/meta"
printf 'X' | dd of="$T/meta/ringtail.meta" bs=1 seek=20 conv=notrunc 2>/dev/null
run verify "$T/meta"
expect "verify reports a damaged ringtail.meta with its offset" 1 "ringtail.meta: offset [0-9]+: "

# Locked by a running engine: held here with flock(2) by one process (flock(1) would leave its
# child holding the lock after a kill), as the engine holds it.
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "rb"); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(60)' "$D/.lock" &
LOCK_PID=$!
for _ in $(seq 1 100); do
    flock -n "$D/.lock" true 2>/dev/null || break
    sleep 0.05
done
run verify "$D"
expect "verify of a locked directory exits 1 with a message" 1 "locked by a running engine"
IN=$T/lines run produce "$D" orders
expect "produce into a locked directory fails" 1 "locked"
kill "$LOCK_PID" 2>/dev/null
wait "$LOCK_PID" 2>/dev/null
LOCK_PID=
run verify "$D"
expect "verify after the lock is released" 0 "healthy"
run verify
expect "verify without DIR is a usage error" 2 "missing DIR"

# ---- demo ------------------------------------------------------------------------------------
run demo
expect "demo runs and exits 0" 0 "demo finished"
check "demo shows group commit and recovery" grep -q "records per fdatasync" "$T/out"
run demo --dir "$T/demo-dir" --keep
expect "demo --dir --keep" 0 "kept $T/demo-dir"
run verify "$T/demo-dir"
expect "the kept demo directory verifies" 0 "healthy"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
