#!/usr/bin/env bash
# cli_test_filter.sh — RT_TEST_FILTER=pattern (issue 11 item 10) runs only the matching cases of
# a test program: checked on two programs built beside the ringtail binary, a pure codec test
# (test_crc32c) and an engine test with per-case fixtures (test_contract), by the cases cmocka
# reports it ran. Without the variable every case runs.
#
# usage: bash tests/cli_test_filter.sh /path/to/ringtail
set -u
RT=${1:?usage: cli_test_filter.sh /path/to/ringtail}
BIN=$(cd "$(dirname "$RT")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"

# ran PROGRAM PATTERN : runs the program with RT_TEST_FILTER=PATTERN (unset when empty) and
# leaves the names of the cases it ran, sorted, in $T/ran.
ran() {
    local prog=$1 pattern=$2
    if [ -n "$pattern" ]; then
        RT_TEST_FILTER=$pattern "$BIN/$prog" >"$T/out" 2>"$T/err"
    else
        env -u RT_TEST_FILTER "$BIN/$prog" >"$T/out" 2>"$T/err"
    fi
    RC=$?
    sed -n 's/^\[ RUN      \] //p' "$T/out" | sort >"$T/ran"
}
# same DESCRIPTION WANT... : the cases run are exactly WANT (and the program passed).
same() {
    local desc=$1
    shift
    if [ $# -gt 0 ]; then printf '%s\n' "$@" | sort >"$T/want"; else : >"$T/want"; fi
    if [ "$RC" -eq 0 ] && cmp -s "$T/want" "$T/ran"; then
        ok "$desc"
    else
        bad "$desc (ran: $(tr '\n' ' ' <"$T/ran"))"
    fi
}

ran test_crc32c test_incremental
same "test_crc32c, one case by its name" test_incremental
ran test_crc32c 'test_vectors_*'
same "test_crc32c, a wildcard selects two cases" test_vectors_dispatch test_vectors_sw
ran test_crc32c 'test_hw_matches_sw?long'
same "test_crc32c, '?' matches one character" test_hw_matches_sw_long
ran test_crc32c ''
same "test_crc32c without RT_TEST_FILTER runs every case" test_vectors_dispatch test_vectors_sw \
    test_incremental test_hw_matches_sw test_hw_matches_sw_long
ran test_crc32c no_such_case
same "a pattern matching nothing runs nothing"
if grep -q "Running 0 test(s)" "$T/out"; then ok "... and says it ran 0 tests"; else bad "0 tests"; fi

ran test_contract test_fetch_outlives_close
same "test_contract (an engine test with fixtures), one case" test_fetch_outlives_close
ran test_contract '*close_refused*'
same "test_contract, a wildcard in the middle" test_close_refused_while_producer_open \
    test_close_refused_while_consumer_open

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
