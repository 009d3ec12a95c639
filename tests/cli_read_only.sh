#!/usr/bin/env bash
# cli_read_only.sh — the CLI's reading commands (consume, dump, verify, txn list, topic list)
# leave a data directory exactly as they found it (no preallocation, no marker or lock rewrite,
# no recovery), run beside other readers, are refused while a writer holds the directory, and
# warn about an unclean directory instead of repairing it; the writing commands use segments
# small enough for a small file system (issue 10, defect 13).
#
# usage: bash tests/cli_read_only.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_read_only.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ro-XXXXXX")
HOLD_PID=
cleanup() {
    if [ -n "$HOLD_PID" ]; then kill "$HOLD_PID" 2>/dev/null; wait "$HOLD_PID" 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/helpers/cli_harness.sh"

D=$T/data
# Every file's path, size, allocated blocks, mtime and content hash.
picture() { (cd "$1" && find . -printf '%p %s %b %T@\n' | sort && find . -type f -exec md5sum {} + | sort); }

# run_limited KBYTES ARGS... : run, with no file allowed to grow beyond KBYTES (RLIMIT_FSIZE; a
# preallocation past it fails or kills the command with SIGXFSZ).
run_limited() {
    local kb=$1
    shift
    (ulimit -f "$kb" && exec "$RT" "$@") <"$IN" >"$T/out" 2>"$T/err"
    RC=$?
    IN=/dev/null
}

# Writing commands fit a 100 MiB file-size limit (64 MiB segments, not 1 GiB).
run_limited 102400 topic create "$D" orders --partitions 3
expect "topic create preallocates 64 MiB segments, not 1 GiB" 0
seq 1 300 >"$T/lines"
IN=$T/lines run_limited 102400 produce "$D" orders
expect "produce fits the same limit" 0

before=$(picture "$D")
same() { [ "$before" = "$(picture "$D")" ]; }

# Reading commands write nothing: with files limited to 1 MiB (far below any segment's
# preallocation, yet room for the captured output) they still run.
run_limited 1024 consume "$D" orders
expect "consume needs no file to grow" 0
[ "$(wc -l <"$T/out")" -eq 300 ] && ok "consume prints all 300 records" || bad "consume prints all 300 records"
check "consume left the directory unchanged" same
run_limited 1024 txn list "$D"
expect "txn list needs no file to grow" 0
check "txn list left the directory unchanged" same
run_limited 1024 topic list "$D"
expect "topic list needs no file to grow" 0 "orders"
check "topic list left the directory unchanged" same
run_limited 1024 verify "$D"
expect "verify needs no file to grow" 0
check "verify left the directory unchanged" same
run_limited 1024 dump "$D"/orders-0/00000000000000000000.log
expect "dump needs no file to grow" 0
check "dump left the directory unchanged" same

# Beside another reader (a shared lock on .lock) the reading commands still run.
hold() { # hold -s|-x: a process that keeps that lock on .lock until killed
    (exec 9<"$D/.lock" && flock "$1" 9 && exec sleep 30) &
    HOLD_PID=$!
    while flock -n -x "$D/.lock" true; do sleep 0.05; done
}
hold -s
run consume "$D" orders -p 0
expect "consume runs beside another reader" 0
run txn list "$D"
expect "txn list runs beside another reader" 0
run verify "$D"
expect "verify runs beside another reader" 0
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
HOLD_PID=

# While a writer holds it (an exclusive lock) they are refused with a clear message.
hold -x
run consume "$D" orders
expect "consume refused while a writer holds the directory" 1 "locked"
run txn list "$D"
expect "txn list refused while a writer holds the directory" 1 "locked"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
HOLD_PID=
check "refused readers left the directory unchanged" same

# An unclean directory (no clean-shutdown marker) is read as recovery would keep it, with a
# warning, and nothing is repaired or rewritten.
rm -f "$D/.clean_shutdown"
before=$(picture "$D")
run_limited 1024 consume "$D" orders
expect "consume of an unclean directory warns" 0 "not closed cleanly"
[ "$(wc -l <"$T/out")" -eq 300 ] && ok "it still prints all 300 records" || bad "it still prints all 300 records"
check "the unclean directory was left as it was" same
IN=$T/lines run produce "$D" orders -p 0
expect "a writer then recovers it and appends" 0
run consume "$D" orders -p 0
expect "the new records are there" 0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
