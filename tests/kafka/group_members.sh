# group_members.sh — the consumer-group members the group drivers (tests/cli_kafka_groups.sh,
# tests/cli_kafka_group_defaults.sh) run and watch, sourced after tests/kafka/harness.sh with PY
# (the python), G (tests/kafka/py_groups.py), T (a scratch directory) and BROKER set:
#   start_member NAME [TOPIC GROUP SESSION_MS]
#                        a py_groups.py member in the background (gt, grp, 3000) logging to
#                        $T/NAME.log; its stdin is a fifo ("leave" ends it)
#   leave_member NAME    asks it to leave (LeaveGroup) and waits for it
#   kill_member NAME     SIGKILL, waits
#   members_cleanup      SIGKILLs every member still running (the EXIT trap calls it)
#   owned NAME           the partitions NAME holds now ("" after a revoke), comma-separated
#   split_ok EACH NAME.. every partition 0-5 owned by exactly one of NAME.., each holding EACH
#   consumed             every value consumed by any member, one a line
#   wait_for SECONDS COMMAND..
#                        until the command succeeds (0), or 1 when the time is up
# It checks nothing itself: the drivers count ok/FAIL.
# shellcheck shell=bash

declare -A MPID MFD

members_cleanup() {
    local n
    for n in "${!MPID[@]}"; do
        kill -KILL "${MPID[$n]}" 2>/dev/null
    done
    wait 2>/dev/null
}

start_member() {
    local n=$1 fd
    mkfifo "$T/$n.in"
    $PY "$G" "$BROKER" member "${2:-gt}" "${3:-grp}" "$n" "${4:-3000}" <"$T/$n.in" >"$T/$n.log" 2>&1 &
    MPID[$n]=$!
    exec {fd}>"$T/$n.in"
    MFD[$n]=$fd
}

leave_member() {
    local n=$1
    echo leave >&"${MFD[$n]}"
    wait "${MPID[$n]}" 2>/dev/null
    exec {MFD[$n]}>&-
    unset "MPID[$n]"
}

kill_member() {
    local n=$1
    kill -KILL "${MPID[$n]}"
    wait "${MPID[$n]}" 2>/dev/null
    exec {MFD[$n]}>&-
    unset "MPID[$n]"
}

owned() {
    grep -E '^(assigned|revoked) ' "$T/$1.log" | tail -1 | awk '$1 == "assigned" {print $3}'
}

split_ok() {
    local each=$1 n all=""
    shift
    for n in "$@"; do
        local o
        o=$(owned "$n")
        [ "$(echo "$o" | tr ',' '\n' | grep -c .)" -eq "$each" ] || return 1
        all="$all,$o"
    done
    [ "$(echo "$all" | tr ',' '\n' | grep . | sort -n | tr '\n' ' ')" = "0 1 2 3 4 5 " ]
}

consumed() {
    cat "$T"/*.log | awk '$1 == "got" {print $5}'
}

wait_for() {
    local s=$1 i
    shift
    for i in $(seq 1 $((s * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}
