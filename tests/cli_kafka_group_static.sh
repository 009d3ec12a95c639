#!/usr/bin/env bash
# cli_kafka_group_static.sh — static membership (KIP-345) with real librdkafka consumers
# (python3-confluent-kafka on librdkafka 2.0.2, tests/kafka/py_groups.py member with
# RT_GROUP_INSTANCE_ID) against `ringtail serve` (group_coord.c KG11, KG12):
#   - two static members split a 6-partition topic three and three;
#   - the first member to join (the leader) is SIGKILLed (a static member sends no LeaveGroup) and restarted
#     under the same group.instance.id within its session timeout: it gets the three
#     partitions it had, and the other member sees no revoke and no new assignment (no
#     rebalance: the rejoin is answered at once, and before JoinGroup v9 as a follower, so the
#     restarted leader does not assign again);
#   - the same for the follower;
#   - serve exits 0 on SIGTERM and ringtail verify is clean.
#
# usage: bash tests/cli_kafka_group_static.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u
RT=${1:?usage: cli_kafka_group_static.sh /path/to/ringtail}
PY=/usr/bin/python3
G=$(dirname "$0")/kafka/py_groups.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-gstatic-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
. "$(dirname "$0")/kafka/group_members.sh" # kill_member, leave_member, owned, wait_for
cleanup() {
    members_cleanup
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# start_member NAME (group_members.sh's, made static here): a static member "inst-NAME" of group sg on st (session 10 s), its log
# appended to $T/NAME.log.
start_member() {
    local n=$1 fd
    rm -f "$T/$n.in"
    mkfifo "$T/$n.in"
    RT_GROUP_INSTANCE_ID=inst-$n $PY "$G" "$BROKER" member st sg "$n" 10000 <"$T/$n.in" \
        >>"$T/$n.log" 2>&1 &
    MPID[$n]=$!
    exec {fd}>"$T/$n.in"
    MFD[$n]=$fd
}
changes() { grep -c -E '^(assigned|revoked) ' "$T/$1.log"; }
count() { echo "$1" | tr ',' '\n' | grep -c .; }
split_ok() { [ "$(count "$(owned P)")" -eq 3 ] && [ "$(count "$(owned Q)")" -eq 3 ]; }
assigned_again() { [ "$(grep -c '^assigned ' "$T/$1.log")" -ge "$2" ]; }

D=$T/data
run topic create "$D" st --partitions 6
expect "a 6-partition topic" 0
serve_start "$D" --group-initial-rebalance-delay-ms 0
SERVE_PORT=$PORT
: >"$T/P.log"
: >"$T/Q.log"
start_member P
sleep 1
start_member Q
RC=1
wait_for 60 split_ok && RC=0
cat "$T/P.log" "$T/Q.log" | grep -E '^(assigned|revoked)' >"$T/out"
: >"$T/err"
expect "two static members split the topic three and three" 0
sleep 2
restart_one() { # restart_one WHO OTHER: SIGKILL WHO, restart it, check
    local who=$1 other=$2 had before_other n_assigned
    had=$(owned "$who")
    before_other=$(changes "$other")
    n_assigned=$(grep -c '^assigned ' "$T/$who.log")
    kill_member "$who"
    start_member "$who"
    RC=1
    wait_for 30 assigned_again "$who" $((n_assigned + 1)) && RC=0
    sleep 3 # a rebalance, had there been one, would reach the other member by now
    cp "$T/$who.log" "$T/out"
    cp "$T/$other.log" "$T/err"
    expect "$3: the restarted static member is assigned again" 0
    RC=0
    [ "$(owned "$who")" = "$had" ] || RC=1
    expect "$3: ... the same partitions it had ($had)" 0
    RC=0
    [ "$(changes "$other")" -eq "$before_other" ] || RC=1
    expect "$3: ... and the other member saw no revoke and no new assignment (no rebalance)" 0
}
restart_one P Q "the first member to join"
restart_one Q P "the second member"
leave_member P
leave_member Q
serve_stop "serve exits 0 on SIGTERM"
unset SERVE_PORT
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
