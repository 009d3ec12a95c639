# cluster_nodes.sh — sourced by the tests/cli_cluster_*.sh that start their three `ringtail
# serve --voters` nodes alike (after cluster_ports.sh; they set RT, T, PIDS and SESSION_MS):
# start_node I (node I in $T/nI, its output in $T/nI.out and .err), brokers_of I (the broker
# ids node I's Metadata lists), wait_for SECONDS CMD..., all_list WANT I..., status_of I
# (`ringtail cluster status` asked of node I), cluster_cleanup (an EXIT trap). It starts nothing
# when sourced.
start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
brokers_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  broker \([0-9]*\) at.*/\1/p' | sort | tr '\n' ' '
}
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.1; done
}
all_list() { local want=$1; shift; for i in "$@"; do [ "$(brokers_of "$i")" = "$want" ] || return 1; done; }
status_of() { "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$1")" 2>&1; }
# cluster_cleanup: a test's EXIT trap (`trap cluster_cleanup EXIT` right after sourcing this):
# every node it started (PIDS[1..3], 0: none) SIGKILLed and reaped, $T removed unless KEEP is set.
declare -p PIDS >/dev/null 2>&1 || PIDS=(0 0 0 0)
cluster_cleanup() {
    local i
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
