# harness.sh — what the real-client broker tests (tests/cli_kafka_*.sh) share, sourced after
# tests/helpers/cli_harness.sh with RT (the ringtail binary) and T (a scratch directory) set:
#   free_port                 a free TCP port on 127.0.0.1
#   serve_start DIR [ARGS..]  starts `ringtail serve DIR --listen 127.0.0.1:$PORT ARGS` in the
#                             background (log appended to $T/serve.log), waits for `listening
#                             on`; PORT is $SERVE_PORT when set (a restart), else free; sets
#                             SERVE_PID, PORT, BROKER (127.0.0.1:PORT). Fails the script when
#                             the server does not come up within 20 s.
#   serve_stop                SIGTERM, waits (30 s at most, then SIGKILL and a failure), checks
#                             exit status 0: one check counted.
#   serve_kill                SIGKILL (a crash), waits; no check.
#   serve_verify DIR          `ringtail verify DIR` clean: one check counted.
#   engine_values DIR TOPIC [ARGS..]
#                             the values the engine's own consumer reads, one per line, to
#                             stdout (ringtail consume DIR TOPIC --format value ARGS).
# It never leaves a server running: the EXIT trap the script installs must call serve_cleanup.
# shellcheck shell=bash

SERVE_PID=
PORT=
BROKER=

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

serve_start() {
    local dir=$1
    shift
    PORT=${SERVE_PORT:-$(free_port)}
    BROKER=127.0.0.1:$PORT
    local mark
    mark=$(grep -c "listening on" "$T/serve.log" 2>/dev/null)
    "$RT" serve "$dir" --listen "$BROKER" "$@" >>"$T/serve.log" 2>&1 &
    SERVE_PID=$!
    local i
    for i in $(seq 1 200); do
        if [ "$(grep -c "listening on" "$T/serve.log")" -gt "${mark:-0}" ]; then
            return 0
        fi
        if ! kill -0 "$SERVE_PID" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "FAIL - ringtail serve $dir did not start listening; its log:"
    sed 's/^/       /' "$T/serve.log" | head -40
    failed=$((failed + 1))
    serve_kill
    echo "$passed passed, $failed failed"
    exit 1
}

serve_stop() {
    local desc=${1:-"serve exits 0 on SIGTERM"}
    if [ -z "$SERVE_PID" ]; then
        return
    fi
    kill -TERM "$SERVE_PID" 2>/dev/null
    local i rc
    for i in $(seq 1 300); do
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SERVE_PID" 2>/dev/null; then
        kill -KILL "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
        SERVE_PID=
        RC=137
        bad "$desc (still running 30 s after SIGTERM; killed)"
        return
    fi
    wait "$SERVE_PID"
    rc=$?
    SERVE_PID=
    if [ "$rc" -eq 0 ]; then
        ok "$desc"
    else
        RC=$rc
        cp "$T/serve.log" "$T/err"
        : >"$T/out"
        bad "$desc (exit $rc)"
    fi
}

serve_kill() {
    if [ -n "$SERVE_PID" ]; then
        kill -KILL "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    SERVE_PID=
}

serve_cleanup() {
    serve_kill
}

serve_verify() {
    local dir=$1
    run verify "$dir"
    expect "ringtail verify is clean after the scenario" 0
}

engine_values() {
    local dir=$1 topic=$2
    shift 2
    "$RT" consume "$dir" "$topic" --format value "$@"
}
