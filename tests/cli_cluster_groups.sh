#!/usr/bin/env bash
# cli_cluster_groups.sh — consumer groups in a cluster (issue 24 item 4; docs/cluster.md §7.4,
# tools/kafka/handlers/group_cluster.c KGC1-KGC4, metadata_node.h MN7-MN8): three `ringtail serve
# --voters ...` nodes; the controller creates `__consumer_offsets` (RF 3, 4 partitions); a
# confluent-kafka (librdkafka) consumer group reads and commits part of a topic; FindCoordinator
# (v1 and v4's batch) from every node names the same coordinator, the leader of the group's
# partition, and the other nodes answer a group request NOT_COORDINATOR; the coordinator's node
# is SIGKILLed; the group's coordinator moves to another node, the committed offsets read back
# from it are the same, and a consumer of the group resumes from them: it reads every record not
# read before and none that was. Restarted, the killed node follows `__consumer_offsets` again
# and rejoins every ISR.
#
# usage: bash tests/cli_cluster_groups.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_groups.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cgrp-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    [ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
HELP="$(cd "$(dirname "$0")" && pwd)/kafka/cluster_groups.py"
SESSION_MS=4000 # a follower stopped for 1 s (step 2) stays unfenced
TOPIC=orders
GROUP=billing
RECORDS=100
FIRST=60

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
BOOT="127.0.0.1:$K1,127.0.0.1:$K2,127.0.0.1:$K3"

start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS --group-initial-rebalance-delay-ms 0 \
        >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
wait_for() { # wait_for SECONDS COMMAND... : until the command succeeds
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done
}
alive() { local i; for i in 1 2 3; do [ "${PIDS[$i]}" != 0 ] && echo "$i"; done; }
status() {
    local i
    for i in $(alive); do
        "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null | grep -q '^controller	[1-3]' &&
            { "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null; return; }
    done
}
nodes_listed() { [ "$(status | grep -c '^node	')" = "$1" ]; }
offsets_topic() { # __consumer_offsets: 4 partitions, each with 3 replicas and a 3-member ISR
    [ "$(status | awk -F'\t' '$1 == "partition" && $2 == "__consumer_offsets" && split($9, r, ",") == 3 && split($11, i, ",") == 3' | wc -l)" = 4 ]
}
coord_of() { $PY "$HELP" coord "127.0.0.1:$(kport "$1")" "$GROUP"; } # "ERR NODE ERR4 NODE4"
# the group's coordinator as every live node names it (v1 and v4 alike), or fails
coordinator() {
    local i got want=""
    for i in $(alive); do
        got=$(coord_of "$i")
        set -- $got
        [ "$1" = 0 ] && [ "$3" = 0 ] && [ "$2" = "$4" ] || return 1
        [ -z "$want" ] && want=$2
        [ "$2" = "$want" ] || return 1
    done
    echo "$want"
}

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 nodes_listed 3 && wait_for 20 offsets_topic; then
    ok "three nodes; the controller created __consumer_offsets: 4 partitions, RF 3, ISR of 3"
else bad "no replicated __consumer_offsets: $(status | tr '\t\n' ' |')"; fi

$PY - "$BOOT" "$TOPIC" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=2, replication_factor=3)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin.out" && ok "topic $TOPIC created: RF 3, 2 partitions" || bad "create: $(cat "$T/admin.out")"
$PY - "$BOOT" >"$T/admin2.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient, NewPartitions
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for what, fut in (("delete", a.delete_topics(["__consumer_offsets"], request_timeout=15)),
                  ("grow", a.create_partitions([NewPartitions("__consumer_offsets", 8)],
                                               request_timeout=15))):
    try:
        fut["__consumer_offsets"].result()
        print(what, "NONE")
    except Exception as e:
        print(what, e.args[0].name())
PYEOF
[ "$(tr '\n' ' ' <"$T/admin2.out")" = "delete INVALID_REQUEST grow INVALID_REQUEST " ] &&
    ok "DeleteTopics and CreatePartitions of __consumer_offsets: INVALID_REQUEST (the controller keeps it)" ||
    bad "internal topic admin: $(cat "$T/admin2.out")"
seq 1 $RECORDS | sed 's/^/r-/' |
    kcat -P -b "$BOOT" -t "$TOPIC" -X acks=all -X partitioner=random 2>>"$T/kcat.err"
ok "$RECORDS records produced (acks=all)"

# 1. every node names the same coordinator, the leader of the group's partition
if C=$(wait_for 15 coordinator) && C=$(coordinator); then
    ok "FindCoordinator v1 and v4 from every node: node $C coordinates '$GROUP'"
else bad "the nodes disagree: 1: $(coord_of 1) / 2: $(coord_of 2) / 3: $(coord_of 3)"; C=1; fi
GP=$($PY -c "
h = 0
for ch in '$GROUP': h = (31 * h + ord(ch)) & 0xffffffff
h = h - (1 << 32) if h >= 1 << 31 else h
print((0 if h == -(1 << 31) else abs(h)) % 4)")
L=$(status | awk -F'\t' -v p="$GP" '$1 == "partition" && $2 == "__consumer_offsets" && $3 == p {print $5}')
[ "$L" = "$C" ] && ok "it is the leader of __consumer_offsets-$GP (abs(hashCode) % 4)" ||
    bad "coordinator $C, leader of __consumer_offsets-$GP: '$L'"
for i in 1 2 3; do
    [ "$i" = "$C" ] && continue
    got=$($PY "$HELP" heartbeat "127.0.0.1:$(kport "$i")" "$GROUP")
    [ "$got" = 16 ] && ok "a Heartbeat to node $i (not the coordinator): NOT_COORDINATOR" ||
        bad "Heartbeat to node $i: '$got'"
done
got=$($PY "$HELP" heartbeat "127.0.0.1:$(kport "$C")" "$GROUP")
[ "$got" = 25 ] && ok "a Heartbeat to the coordinator with an unknown member: UNKNOWN_MEMBER_ID" ||
    bad "Heartbeat to the coordinator: '$got'"

# 2. an offset commit is answered once it is on the ISR (KGC4): with a follower of the group's
# partition stopped (SIGSTOP, neither the coordinator nor the controller, still in the ISR) it
# waits; once the follower continues, it is answered NONE
G2=audit
A=$($PY "$HELP" coord "127.0.0.1:$(kport 1)" "$G2" | cut -d' ' -f2)
K=$(status | sed -n 's/^controller\t//p')
S=""; for i in 1 2 3; do [ "$i" != "$A" ] && [ "$i" != "$K" ] && { S=$i; break; }; done
kill -STOP "${PIDS[$S]}"
$PY "$HELP" commit "127.0.0.1:$(kport "$A")" "$G2" "$TOPIC" 0 7 >"$T/commit.out" 2>&1 &
CP=$!
sleep 1
early=$(cat "$T/commit.out")
kill -CONT "${PIDS[$S]}"
wait $CP
late=$(cat "$T/commit.out")
[ -z "$early" ] && [ "$late" = 0 ] &&
    ok "OffsetCommit to coordinator $A with follower $S stopped: not answered after 1 s; answered NONE once $S continued" ||
    bad "commit with follower $S stopped: after 1 s '$early', at the end '$late'"

# 3. the group reads and commits FIRST records
$PY "$HELP" consume "$BOOT" "$TOPIC" "$GROUP" $FIRST "$T/first.json" >"$T/first.out" 2>&1
read -r N1 SUM1 <<<"$($PY -c "
import json
d = json.load(open('$T/first.json'))
c = d['committed']
print(len(d['values']), sum(v for v in c.values() if isinstance(v, int) and v > 0))" 2>/dev/null)"
[ "${N1:-0}" = $FIRST ] && [ "${SUM1:-0}" = $FIRST ] &&
    ok "the group read $FIRST records and committed them (offsets $(sed 's/.*"committed": //' "$T/first.json"))" ||
    bad "first consumer: $(cat "$T/first.json" "$T/first.out" 2>/dev/null | head -c 600)"

# 4. the coordinator's node dies
kill -KILL "${PIDS[$C]}"; wait "${PIDS[$C]}" 2>/dev/null; PIDS[$C]=0
moved() { local c; c=$(coordinator) && [ "$c" != "$C" ] && [ "$c" != -1 ]; }
T0=$(date +%s%N)
if wait_for 30 moved; then
    NEWC=$(coordinator)
    ok "node $C SIGKILLed: the two left name node $NEWC coordinator ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else bad "the coordinator did not move: $(for i in $(alive); do echo "$i: $(coord_of "$i")"; done | tr '\n' ' ')"; fi
grep -q "groups: coordinator of __consumer_offsets-$GP" "$T/n${NEWC:-1}.err" &&
    ok "node ${NEWC:-?} loaded __consumer_offsets-$GP from its replica" ||
    bad "no load logged: $(grep -h 'groups:' "$T"/n*.err | tail -5)"

# 5. the committed offsets survive, and a consumer resumes from them
$PY "$HELP" resume "$BOOT" "$TOPIC" "$GROUP" 2 "$T/second.json" >"$T/second.out" 2>&1
$PY - "$T/first.json" "$T/second.json" $RECORDS >"$T/check.out" 2>&1 <<'PYEOF'
import json, sys
a, b, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
print("first committed", a["committed"], "read back", b["committed"])
same = a["committed"] == b["committed"]
first, second = set(a["values"]), b["values"]
dup = first & set(second)
whole = first | set(second) == {"r-%d" % i for i in range(1, n + 1)}
print("read after", len(second), "again", len(dup), "all", whole)
sys.exit(0 if same and not dup and whole and len(second) == len(set(second)) else 1)
PYEOF
RC=$?
[ $RC = 0 ] && ok "the new coordinator answers the same committed offsets; the resumed consumer read the other $((RECORDS - FIRST)) records and none again ($(head -1 "$T/check.out"))" ||
    bad "after the failover: $(cat "$T/check.out" "$T/second.out" | head -c 800)"

# 6. the killed node comes back: its engine leads every __consumer_offsets partition from open,
# the node resigns those the image gives to others (metadata_node.h MN7), copies them as a
# follower and rejoins every ISR; all three name the same coordinator again
start_node "$C"
in_all_isr() {
    [ "$(status | awk -F'\t' -v n="$C" '$1 == "partition" && $2 == "__consumer_offsets" && ("," $11 ",") ~ ("," n ",")' | wc -l)" = 4 ]
}
if wait_for 40 in_all_isr && wait_for 10 coordinator >/dev/null && [ "$(coordinator)" = "${NEWC:-}" ]; then
    ok "node $C restarted: back in the ISR of the 4 __consumer_offsets partitions; all three name node $NEWC"
else bad "node $C after its restart: $(status | grep __consumer_offsets | tr '\t\n' ' |') / $(for i in 1 2 3; do echo "$i: $(coord_of "$i")"; done | tr '\n' ' ')"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
