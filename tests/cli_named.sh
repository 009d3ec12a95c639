#!/usr/bin/env bash
# cli_named.sh — `ringtail produce --producer-name` as the README promises it: the same lines
# produced twice (null keys, 3 partitions) are stored once each; SIGKILLs at random points and a
# final rerun leave every line stored exactly once; --batch-records bounds the batches
# (one 'acked FIRST..LAST' line per batch).
#
# usage: bash tests/cli_named.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_named.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-named-XXXXXX")
BG_PID=
cleanup() {
    if [ -n "$BG_PID" ]; then kill -9 "$BG_PID" 2>/dev/null; wait "$BG_PID" 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/helpers/cli_harness.sh"

D=$T/data

# each_once TOPIC LINES-FILE DESCRIPTION: consume prints every line of the file exactly once.
each_once() {
    run consume "$D" "$1"
    if [ "$RC" -ne 0 ]; then bad "$3 (consume failed)"; return; fi
    local dups missing
    dups=$(sort "$T/out" | uniq -d | wc -l)
    missing=$(sort "$T/out" | uniq | comm -13 - <(sort "$2") | wc -l)
    local extra
    extra=$(sort "$T/out" | uniq | comm -23 - <(sort "$2") | wc -l)
    if [ "$dups" -eq 0 ] && [ "$missing" -eq 0 ] && [ "$extra" -eq 0 ]; then
        ok "$3"
    else
        RC=1
        bad "$3 ($missing missing, $dups stored more than once, $extra unexpected)"
    fi
}

# ---- the README's rerun: null keys, 3 partitions, the same input twice ----------------------
run topic create "$D" orders --partitions 3
expect "topic create orders" 0 "created topic orders with 3 partitions"
seq 1 2000 >"$T/lines"
IN=$T/lines run produce "$D" orders --producer-name importer
expect "first run stores 2000 lines" 0 "^produced 2000 new records to orders as producer 'importer'"
check "each acknowledged batch is lines of one span, at most --batch-records (500) of them" \
    awk -F'[ .]+' '/^acked/ { if (int($2 / 1000) != int($3 / 1000) || $3 - $2 >= 500) exit 1 }' "$T/out"
check "2000 lines acknowledged" \
    awk -F'[ .]+' '/^acked/ { n += $3 - $2 + 1 } END { exit n == 2000 ? 0 : 1 }' "$T/out"
IN=$T/lines run produce "$D" orders --producer-name importer --batch-records 7
expect "the rerun (other batching) appends nothing" 0 \
    "^produced 0 new records to orders as producer 'importer' \(2000 duplicates"
each_once orders "$T/lines" "after the rerun each line is stored once"
IN=$T/lines run produce "$D" orders --producer-name importer
expect "a third run appends nothing either" 0 "^produced 0 new records"
for p in 0 1 2; do
    run consume "$D" orders -p $p
    # Null keys of a named producer go to partition (line / 1000) % 3 (README, ringtail.h).
    if awk -v p=$p '{ if (int($1 / 1000) % 3 != p) exit 1 }' "$T/out"; then
        ok "partition $p holds the lines the README places there"
    else
        RC=1
        bad "partition $p holds lines the README places elsewhere"
    fi
done

# ---- SIGKILL at random points, then a full rerun ---------------------------------------------
run topic create "$D" killed --partitions 3
expect "topic create killed" 0 "created topic"
seq 1 100000 >"$T/big"
for k in 1 2 3 4; do
    "$RT" produce "$D" killed --producer-name importer --batch-records $((RANDOM % 900 + 50)) \
        <"$T/big" >"$T/bg.out" 2>"$T/bg.err" &
    BG_PID=$!
    want=$((RANDOM % 40 + 1))
    # Kill once it has acknowledged some batches (or finished).
    while kill -0 "$BG_PID" 2>/dev/null && [ "$(grep -c '^acked' "$T/bg.out" 2>/dev/null)" -lt "$want" ]; do
        sleep 0.01
    done
    kill -9 "$BG_PID" 2>/dev/null
    wait "$BG_PID" 2>/dev/null
    BG_PID=
done
IN=$T/big run produce "$D" killed --producer-name importer
expect "the final rerun completes" 0 "^produced [0-9]+ new records to killed"
each_once killed "$T/big" "after 4 SIGKILLs and a rerun each line is stored once"
run verify "$D"
expect "verify is clean afterwards" 0

# ---- --batch-records bounds a named producer's batches --------------------------------------
run topic create "$D" one --partitions 1
expect "topic create one" 0 "created topic"
seq 1 100 >"$T/hundred"
IN=$T/hundred run produce "$D" one --producer-name batcher --batch-records 10 -p 0
expect "produce --producer-name --batch-records 10" 0 "^produced 100 new records"
check "100 lines in batches of 10: 10 acked lines" test "$(grep -c '^acked' "$T/out")" -eq 10
check "each batch holds lines N..N+9" \
    awk -F'[ .]+' '/^acked/ { if ($3 - $2 != 9) exit 1 }' "$T/out"
IN=$T/hundred run produce "$D" one --producer-name batcher --batch-records 25
expect "rerun with --batch-records 25" 0 "^produced 0 new records"
check "duplicates are acknowledged in batches of 25 too" test "$(grep -c '^acked' "$T/out")" -eq 4
seq 1 150 >"$T/more" # sequence ids are stdin line numbers: lines 1..100 are duplicates
IN=$T/more run produce "$D" one --producer-name batcher --batch-records 1
expect "--batch-records 1" 0 "^produced 50 new records"
check "--batch-records 1: one acked line per record" test "$(grep -c '^acked' "$T/out")" -eq 150
each_once one "$T/more" "the log holds lines 1..150 once each"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
