# cli_harness.sh — what the CLI test scripts share, sourced after they set RT (the binary) and
# T (a scratch directory): pass/fail counting (ok, bad), running ringtail with captured output
# (run, with stdin from $IN), and the two kinds of check (expect an exit status and output,
# check a command). The script prints the closing "N passed, M failed" line itself.
# shellcheck shell=bash
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   - $1"; }
bad() {
    failed=$((failed + 1))
    echo "FAIL - $1"
    echo "       exit $RC; stdout: $(head -c 600 "$T/out")"
    echo "       stderr: $(head -c 600 "$T/err")"
    # A traceback's cause is at its end.
    [ "$(wc -c <"$T/err")" -gt 600 ] && echo "       stderr's end: $(tail -c 600 "$T/err")"
    return 0
}

# run ARGS... : runs ringtail with stdin from $IN (default /dev/null), captures out/err/rc.
IN=/dev/null
run() { "$RT" "$@" <"$IN" >"$T/out" 2>"$T/err"; RC=$?; IN=/dev/null; }
# expect DESCRIPTION RC [grep-pattern-on-stdout+stderr]
expect() {
    local desc=$1 want=$2 pat=${3:-}
    if [ "$RC" -ne "$want" ]; then bad "$desc (want exit $want)"; return; fi
    if [ -n "$pat" ] && ! cat "$T/out" "$T/err" | grep -qE -- "$pat"; then
        bad "$desc (want output matching /$pat/)"
        return
    fi
    ok "$desc"
}
# check DESCRIPTION COMMAND... : passes when the command succeeds.
RC=0
check() {
    local desc=$1
    shift
    if "$@" >/dev/null 2>&1; then ok "$desc"; else RC=$?; bad "$desc"; fi
}

