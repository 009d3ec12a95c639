#!/usr/bin/env bash
# cli_bad_input.sh — the `ringtail` CLI given bad input: every command with missing arguments,
# unknown flags, bad numbers, a nonexistent DIR, a file instead of a directory, a directory
# locked by another process, consume of a nonexistent topic, dump of nonexistent, empty and
# garbage files. Each must exit non-zero with a message naming what was wrong, and leave the
# data directory byte for byte unchanged (a sha256 listing is compared before and after).
#
# Usage: bash tests/cli_bad_input.sh /path/to/ringtail   (CMake runs it so)
set -u
RT=${1:?usage: cli_bad_input.sh /path/to/ringtail}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-bad-XXXXXX")
LOCK_PID=""
cleanup() {
    [ -n "$LOCK_PID" ] && kill "$LOCK_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }

DIR="$WORK/data"
"$RT" topic create "$DIR" orders --partitions 2 >/dev/null || { echo "setup failed"; exit 1; }
printf 'a\nb\nc\n' | "$RT" produce "$DIR" orders -p 0 >/dev/null || { echo "setup failed"; exit 1; }
listing() { (cd "$DIR" && find . -type f ! -name .lock -exec sha256sum {} + | sort); }
BEFORE=$(listing)

# expect_fail NAME PATTERN CMD...: non-zero exit, PATTERN (grep -E, case-insensitive) in its
# output, and the data directory unchanged.
expect_fail() {
    local name=$1 pattern=$2
    shift 2
    local out rc
    out=$("$@" 2>&1 </dev/null)
    rc=$?
    if [ "$rc" -eq 0 ]; then
        bad "$name: exit 0 (want non-zero); output: $(echo "$out" | head -2)"
    elif [ "$rc" -ge 126 ]; then
        bad "$name: exit $rc (crash or signal); output: $(echo "$out" | head -2)"
    elif ! echo "$out" | grep -qiE -- "$pattern"; then
        bad "$name: exit $rc but the message does not match /$pattern/: $(echo "$out" | head -2)"
    elif [ "$(listing)" != "$BEFORE" ]; then
        bad "$name: the data directory changed"
        BEFORE=$(listing)
    else
        ok "$name (exit $rc)"
    fi
}

# ---- no command, unknown command, missing arguments
expect_fail "no command" "usage" "$RT"
expect_fail "unknown command" "usage|unknown" "$RT" frobnicate
expect_fail "topic: no subcommand" "usage|missing" "$RT" topic
expect_fail "topic: unknown subcommand" "usage|unknown" "$RT" topic destroy "$DIR"
expect_fail "topic create: no args" "usage|missing" "$RT" topic create
expect_fail "topic create: no topic" "usage|missing|topic" "$RT" topic create "$DIR"
expect_fail "topic create: no partitions" "partitions|usage" "$RT" topic create "$DIR" x
expect_fail "topic list: no dir" "usage|missing" "$RT" topic list
expect_fail "produce: no args" "usage|missing" "$RT" produce
expect_fail "produce: no topic" "usage|missing|topic" "$RT" produce "$DIR"
expect_fail "consume: no args" "usage|missing" "$RT" consume
expect_fail "consume: no topic" "usage|missing|topic" "$RT" consume "$DIR"
expect_fail "dump: no files" "usage|missing|file" "$RT" dump
expect_fail "verify: no dir" "usage|missing" "$RT" verify
expect_fail "murmur2: unknown flag" "unknown|usage|option" "$RT" murmur2 --bogus

# ---- unknown flags
expect_fail "topic create: unknown flag" "unknown|usage|option" "$RT" topic create "$DIR" y --partitions 1 --bogus
expect_fail "produce: unknown flag" "unknown|usage|option" "$RT" produce "$DIR" orders --bogus
expect_fail "consume: unknown flag" "unknown|usage|option" "$RT" consume "$DIR" orders --bogus
expect_fail "dump: unknown flag" "unknown|usage|option" "$RT" dump --bogus "$DIR/ringtail.meta"
expect_fail "verify: unknown flag" "unknown|usage|option" "$RT" verify --bogus "$DIR"

# ---- bad numbers
for p in -1 abc 2 999999999999 "" 1x; do
    expect_fail "consume -p '$p'" "partition|invalid|number|range|usage|-p" "$RT" consume "$DIR" orders -p "$p"
    expect_fail "produce -p '$p'" "partition|invalid|number|range|usage|-p" "$RT" produce "$DIR" orders -p "$p"
done
for n in 0 -1 abc 999999999999 1.5; do
    expect_fail "topic create --partitions '$n'" "partition|invalid|number|range|usage" "$RT" topic create "$DIR" z --partitions "$n"
done
expect_fail "produce --batch-records 0" "batch|invalid|range|usage" "$RT" produce "$DIR" orders --batch-records 0
expect_fail "produce --sync bogus" "sync|invalid|usage" "$RT" produce "$DIR" orders --sync bogus
expect_fail "consume --from abc" "from|offset|invalid|usage" "$RT" consume "$DIR" orders --from abc
expect_fail "consume --from 99999" "offset|range" "$RT" consume "$DIR" orders -p 0 --from 99999
expect_fail "consume --isolation bogus" "isolation|invalid|usage" "$RT" consume "$DIR" orders --isolation bogus
expect_fail "consume --format bogus" "format|invalid|usage" "$RT" consume "$DIR" orders --format bogus
expect_fail "consume --max -3" "max|invalid|usage|number" "$RT" consume "$DIR" orders --max -3
expect_fail "topic create: bad name" "topic|name|invalid" "$RT" topic create "$DIR" "bad/name" --partitions 1
expect_fail "topic create: exists" "exist" "$RT" topic create "$DIR" orders --partitions 2

# ---- nonexistent topic, directory, a file as the directory
expect_fail "consume: unknown topic" "nope|unknown" "$RT" consume "$DIR" nope
expect_fail "produce: unknown topic" "nope|unknown" "$RT" produce "$DIR" nope
NODIR="$WORK/missing"
expect_fail "consume: nonexistent DIR" "missing|no such|not exist|cannot" "$RT" consume "$NODIR" orders
expect_fail "verify: nonexistent DIR" "missing|no such|not exist|cannot" "$RT" verify "$NODIR"
expect_fail "topic list: nonexistent DIR" "missing|no such|not exist|cannot" "$RT" topic list "$NODIR"
[ -e "$NODIR" ] && bad "a read-only command created $NODIR" || ok "no read-only command created the missing DIR"
FILE="$WORK/plainfile"
echo hello >"$FILE"
expect_fail "topic create: DIR is a file" "plainfile|not a directory|cannot" "$RT" topic create "$FILE" t --partitions 1
expect_fail "topic list: DIR is a file" "plainfile|not a directory|cannot" "$RT" topic list "$FILE"
expect_fail "consume: DIR is a file" "plainfile|not a directory|cannot" "$RT" consume "$FILE" t
expect_fail "verify: DIR is a file" "plainfile|not a directory|cannot" "$RT" verify "$FILE"
[ "$(cat "$FILE")" = hello ] && ok "the plain file is untouched" || bad "the plain file changed"

# ---- a locked directory
if command -v flock >/dev/null; then
    # -o: only flock itself holds the lock (not its sleep child), so killing it releases it.
    flock -o "$DIR/.lock" sleep 5 &
    LOCK_PID=$!
    sleep 0.3
    expect_fail "topic create: locked" "lock" "$RT" topic create "$DIR" locked --partitions 1
    expect_fail "topic list: locked" "lock" "$RT" topic list "$DIR"
    expect_fail "produce: locked" "lock" sh -c "echo x | '$RT' produce '$DIR' orders"
    expect_fail "consume: locked" "lock" "$RT" consume "$DIR" orders
    expect_fail "verify: locked" "lock" "$RT" verify "$DIR"
    kill "$LOCK_PID" 2>/dev/null
    wait "$LOCK_PID" 2>/dev/null
    LOCK_PID=""
else
    echo "skip: flock(1) not installed"
fi

# ---- dump of bad files
expect_fail "dump: nonexistent file" "nothere|no such|cannot" "$RT" dump "$WORK/nothere.log"
: >"$WORK/00000000000000000000.log"
: >"$WORK/empty.index"
head -c 333 /dev/urandom >"$WORK/00000000000000000007.log"
head -c 13 /dev/urandom >"$WORK/00000000000000000007.index"
head -c 25 /dev/urandom >"$WORK/00000000000000000007.timeindex"
head -c 40 /dev/urandom >"$WORK/ringtail.meta"
expect_fail "dump: garbage .log" "00000000000000000007.log" "$RT" dump "$WORK/00000000000000000007.log"
expect_fail "dump: garbage .index" "00000000000000000007.index" "$RT" dump "$WORK/00000000000000000007.index"
expect_fail "dump: garbage .timeindex" "00000000000000000007.timeindex" "$RT" dump "$WORK/00000000000000000007.timeindex"
expect_fail "dump: garbage ringtail.meta" "ringtail.meta" "$RT" dump "$WORK/ringtail.meta"
expect_fail "dump: unknown file kind" "plainfile|unknown|kind|not" "$RT" dump "$FILE"
# An empty .log is a valid (empty) segment; dump must not crash on it nor on an empty index.
for f in "$WORK/00000000000000000000.log" "$WORK/empty.index"; do
    "$RT" dump "$f" >/dev/null 2>&1
    rc=$?
    [ "$rc" -lt 126 ] && ok "dump: empty $(basename "$f") exits $rc without crashing" ||
        bad "dump: empty $(basename "$f") crashed ($rc)"
done

# ---- the directory still works
VOUT=$("$RT" verify "$DIR" 2>&1); VRC=$?
if [ "$(listing)" = "$BEFORE" ] && [ "$VRC" -eq 0 ] &&
    [ "$("$RT" consume "$DIR" orders -p 0 2>/dev/null)" = "$(printf 'a\nb\nc')" ]; then
    ok "data directory unchanged, verifies clean and reads back"
else
    bad "data directory damaged by the bad calls: verify rc $VRC: $(echo "$VOUT" | head -3)"
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
