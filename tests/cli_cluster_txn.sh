#!/usr/bin/env bash
# cli_cluster_txn.sh — transactions on a cluster (issue 24, issue 25 item 2's markers;
# docs/cluster.md §7.3; handle_txn.c KT8, KT9; handle_txn_markers.c KTM1-KTM9): three
# `ringtail serve --voters ...` nodes and a topic of 6 partitions (RF 3); a confluent_kafka
# transactional producer bootstrapped at node X (the leader of partition 0; its coordinator is
# X, FindCoordinator answering the node asked) commits two transactions on a partition X leads;
# AddOffsetsToTxn for a group another node coordinates is still answered POLICY_VIOLATION,
# logged once. markers_wire.py then drives WriteTxnMarkers at node Y (the leader of another
# partition) byte by byte — a pending transaction made visible by a COMMIT marker, a repeated
# marker NONE, an ABORT hiding its record, NOT_LEADER_OR_FOLLOWER for X's partition, unknown
# topic — and a transaction coordinated by X on Y's partition, whose commit marker X's writer
# sends to Y. A read_committed consumer sees the committed records exactly once and nothing
# aborted. Then a transaction whose partition's leadership moves before the commit: X2's
# coordinator sends the marker to the new leader Y2 and the LSO moves there. Every node
# stopped, `ringtail cluster check` finds the replicas identical (no marker went into a copy a
# node only follows).
#
# usage: bash tests/cli_cluster_txn.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_txn.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ctxn-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
TOPIC=txg

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport

start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms 2000 >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done
}
brokers_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  broker \([0-9]*\) at.*/\1/p' | sort | tr '\n' ' '
}
all_list() { local want=$1; shift; for i in "$@"; do [ "$(brokers_of "$i")" = "$want" ] || return 1; done; }
PAUSED=0
status() { # the first running, not paused node's answer
    local i
    for i in 1 2 3; do
        [ "${PIDS[$i]}" = 0 ] || [ "$i" = "$PAUSED" ] && continue
        "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null; return
    done
}
leader_of() { status | awk -F'\t' -v t="$TOPIC" -v p="$1" '$1 == "partition" && $2 == t && $3 == p {print $5}'; }
# six partitions, each with a leader and the whole ISR
ready() { [ "$(status | awk -F'\t' -v t="$TOPIC" '$1 == "partition" && $2 == t && $5 > 0 && split($11, i, ",") == 3' | wc -l)" = 6 ]; }

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered"
else bad "brokers: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi

$PY - "127.0.0.1:$K1" "$TOPIC" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=6, replication_factor=3)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin.out" && ok "topic $TOPIC created: RF 3, 6 partitions" || bad "create: $(cat "$T/admin.out")"
wait_for 20 ready || bad "partitions not led with a full ISR: $(status)"

X=$(leader_of 0)
PX=0 PY_=
for p in 1 2 3 4 5; do l=$(leader_of $p); if [ -n "$l" ] && [ "$l" != "$X" ]; then PY_=$p; Y=$l; break; fi; done
if [ -n "$X" ] && [ -n "$PY_" ]; then ok "partition $PX led by node $X, partition $PY_ by node $Y"
else bad "no two leaders among the partitions: $(status)"; PY_=1; Y=0; fi

# the __consumer_offsets leaders, "L0 L1 L2 L3" (the groups' coordinators: group_cluster.c KGC1);
# the first group request makes the controller create the topic (metadata_node.h MN8)
$PY - "127.0.0.1:$K1" "$TOPIC" >"$T/warm.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "txg-warm"})
c.committed([TopicPartition(sys.argv[2], 0)], timeout=15)
c.close()
PYEOF
offs_led() { [ "$(status | awk -F'\t' '$1 == "partition" && $2 == "__consumer_offsets" && $5 > 0' | wc -l)" = 4 ]; }
wait_for 20 offs_led || bad "__consumer_offsets not led: $(cat "$T/warm.out") // $(status)"
OFFS=$(for p in 0 1 2 3; do status | awk -F'\t' -v p=$p '$1 == "partition" && $2 == "__consumer_offsets" && $3 == p {print $5}'; done | tr '\n' ' ')

# ---- the producer at X: commit (X's partition), refused (Y's) twice, commit again; offsets
# of a group another node coordinates refused too ----
$PY - "$(kport "$X")" "$TOPIC" "$PX" "$PY_" "$X" "$OFFS" >"$T/txn.out" 2>"$T/txn.err" <<'PYEOF'
import sys
from confluent_kafka import Consumer, Producer, KafkaException, TopicPartition
port, topic, px, py = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x, offs = sys.argv[5], sys.argv[6].split()
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": "txg-1",
              "transaction.timeout.ms": 30000})
p.init_transactions(30)
def txn(tag, part):
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=("%s-%d" % (tag, i)).encode(), partition=part)
    try:
        p.commit_transaction(30)
        print(tag, "committed")
    except KafkaException as e:
        err = e.args[0]
        print(tag, "error", err.name(), "abortable" if err.txn_requires_abort() else "-",
              "fatal" if err.fatal() else "-", "retriable" if err.retriable() else "-")
        if err.txn_requires_abort():
            p.abort_transaction(30)
            print(tag, "aborted")
txn("a", px)
txn("c", px)
def group_partition(g): # Kafka's abs(groupId.hashCode()) % 4 (rt_group_partition)
    h = 0
    for ch in g.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xffffffff
    return (h & 0x7fffffff) % 4
g = next(("g-%d" % i for i in range(100) if offs[group_partition("g-%d" % i)] != x), None)
c = Consumer({"bootstrap.servers": "127.0.0.1:" + port, "group.id": g or "none"})
p.begin_transaction()
p.produce(topic, value=b"e-0", partition=px)
try:
    p.send_offsets_to_transaction([TopicPartition(topic, px, 1)], c.consumer_group_metadata(), 30)
    print("e offsets added")
except KafkaException as e:
    err = e.args[0]
    print("e error", err.name(), "abortable" if err.txn_requires_abort() else "-",
          "fatal" if err.fatal() else "-", "retriable" if err.retriable() else "-")
p.abort_transaction(30)
print("e aborted")
c.close()
PYEOF
for w in "a committed" "c committed" "e error POLICY_VIOLATION abortable - -" "e aborted"; do
    grep -qx "$w" "$T/txn.out" && ok "producer at node $X: $w" ||
        bad "expected '$w': $(cat "$T/txn.out") // $(tail -c 600 "$T/txn.err")"
done
n=$(grep -c "is led by node [0-9]*, not this node ($X), the transaction's coordinator" "$T/n$X.err")
[ "$n" = 1 ] && ok "node $X logs why it refused the offsets, once for the transactional id" ||
    bad "node $X's log of the refusal: $n lines: $(grep -i policy "$T"/n*.err | head -3)"

# ---- WriteTxnMarkers at the byte level (handle_txn_markers.c KTM2-KTM5), and node X's marker
# into a partition node Y leads (KT8 lifted, KT9) ----
if $PY "$(dirname "$0")/kafka/markers_wire.py" "$(kport "$Y")" "$(kport "$X")" "$TOPIC" "$PY_" "$PX" \
    >"$T/mw.out" 2>&1; then ok "markers_wire: $(grep -c '^ok' "$T/mw.out") checks"
else bad "markers_wire: $(grep -v '^ok' "$T/mw.out" | head -8)"; fi

# ---- read_committed: a-* and c-* exactly once, mw-c1 (committed by a marker), no mw-a1 ----
$PY - "127.0.0.1:$(kport "$X")" "$TOPIC" >"$T/read.out" 2>"$T/read.err" <<'PYEOF'
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "txg-reader",
              "isolation.level": "read_committed", "enable.auto.commit": False,
              "enable.partition.eof": True})
c.assign([TopicPartition(sys.argv[2], p, OFFSET_BEGINNING) for p in range(6)])
eof, got, end = set(), [], time.time() + 20
while len(eof) < 6 and time.time() < end:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        if m.error().name() == "_PARTITION_EOF":
            eof.add(m.partition())
        continue
    got.append(m.value().decode())
c.close()
print(" ".join(sorted(got)), "eof", len(eof))
PYEOF
want="a-0 a-1 a-2 a-3 a-4 c-0 c-1 c-2 c-3 c-4 mw-c1 eof 6"
[ "$(cat "$T/read.out")" = "$want" ] && ok "read_committed consumer: the committed transactions exactly once, nothing aborted" ||
    bad "read_committed: '$(cat "$T/read.out")' // $(tail -c 300 "$T/read.err")"

# ---- leadership moved mid-transaction (KT9): the coordinator sends the marker to the new leader ----
# Topic mv (RF 2): a partition Q led by a node X2 that is not the controller, its other replica
# Y2. A transaction on Q opened at X2 (its coordinator); X2 paused (SIGSTOP) past its session:
# Y2 leads Q; X2 resumed and back in the ISR; the commit's marker goes from X2's coordinator to
# Y2 as WriteTxnMarkers (txn_marker_send.c): the commit is answered, and the LSO moves on Y2 —
# read_committed at Y2 sees the records, while the leadership stays at Y2.
$PY - "127.0.0.1:$K1" mv >"$T/admin2.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=6, replication_factor=2)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin2.out" || bad "create mv: $(cat "$T/admin2.out")"
mv_row() { status | awk -F'\t' -v p="$1" '$1 == "partition" && $2 == "mv" && $3 == p'; }
mv_full() { [ "$(status | awk -F'\t' '$1 == "partition" && $2 == "mv" && $5 > 0 && split($11, i, ",") == 2' | wc -l)" = 6 ]; }
wait_for 20 mv_full || bad "mv not led with a full ISR: $(status)"
CTL=$(status | sed -n 's/^controller\t//p')
Q= X2= Y2=
for p in 0 1 2 3 4 5; do
    IFS=$'\t' read -r _ _ _ _ l _ _ _ r _ <<<"$(mv_row $p)"
    if [ -n "$l" ] && [ "$l" != "$CTL" ]; then Q=$p; X2=$l; Y2=${r/$l/}; Y2=${Y2//,/}; break; fi
done
[ -n "$Q" ] && ok "mv-$Q led by node $X2 (not the controller $CTL), follower $Y2" ||
    { bad "no mv partition led by a non-controller: $(status)"; Q=0; X2=1; Y2=2; }
$PY - "$(kport "$X2")" "$Q" "$T/go" >"$T/mv.out" 2>"$T/mv.err" <<'PYEOF' &
import os, sys, time
from confluent_kafka import Producer, KafkaException
port, q, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": "txg-mv",
              "transaction.timeout.ms": 60000})
p.init_transactions(30)
p.begin_transaction()
for i in range(3):
    p.produce("mv", value=b"m-%d" % i, partition=q)
p.flush(30)
print("produced", flush=True)
while not os.path.exists(go):
    time.sleep(0.1)
try:
    p.commit_transaction(6)
    print("commit answered", flush=True)
except KafkaException as e:
    print("commit error", e.args[0].name(), flush=True)
PYEOF
MVPY=$!
wait_for 20 grep -q produced "$T/mv.out" || bad "mv producer: $(cat "$T/mv.out" "$T/mv.err")"
kill -STOP "${PIDS[$X2]}"; PAUSED=$X2
led_by() { IFS=$'\t' read -r _ _ _ _ l _ <<<"$(mv_row "$Q")"; [ "$l" = "$1" ]; }
wait_for 20 led_by "$Y2" && ok "node $X2 paused: mv-$Q led by node $Y2" || bad "mv-$Q: $(mv_row "$Q")"
kill -CONT "${PIDS[$X2]}"; PAUSED=0
in_isr() { IFS=$'\t' read -r _ _ _ _ _ _ _ _ _ _ i _ <<<"$(mv_row "$Q")"; [[ ",$i," == *",$X2,"* ]]; }
wait_for 30 in_isr || bad "node $X2 not back in mv-$Q's ISR: $(mv_row "$Q")"
read_q() { # read_q NODE: read_committed values of mv-Q, bootstrapped at NODE
    $PY - "127.0.0.1:$(kport "$1")" "$Q" 2>>"$T/readq.err" <<'PYEOF'
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "txg-mv-reader",
              "isolation.level": "read_committed", "enable.auto.commit": False,
              "enable.partition.eof": True})
c.assign([TopicPartition("mv", int(sys.argv[2]), OFFSET_BEGINNING)])
got, end = [], time.time() + 8
while time.time() < end:
    m = c.poll(0.3)
    if m is None:
        continue
    if m.error():
        if m.error().name() == "_PARTITION_EOF":
            break
        continue
    got.append(m.value().decode())
c.close()
print(" ".join(sorted(got)))
PYEOF
}
got=$(read_q "$Y2")
[ -z "$got" ] && ok "pending: read_committed at node $Y2 sees nothing of mv-$Q" || bad "pending, yet read_committed read '$got'"
touch "$T/go"
wait_for 15 grep -q "^commit" "$T/mv.out"
grep -qx "commit answered" "$T/mv.out" &&
    ok "node $X2's coordinator commits: its marker went to node $Y2 (WriteTxnMarkers)" ||
    bad "commit: $(cat "$T/mv.out") // $(grep -i marker "$T/n$X2.err" | tail -3)"
led_by "$Y2" && ok "mv-$Q still led by node $Y2" || bad "mv-$Q moved: $(mv_row "$Q")"
got=$(read_q "$Y2")
[ "$got" = "m-0 m-1 m-2" ] && ok "the LSO moved on node $Y2: read_committed sees m-0..m-2" ||
    bad "after the commit, read_committed at node $Y2: '$got' // $(status | grep mv)"
n=$(grep -c "marker of producer id .* for mv-$Q waits" "$T/n$X2.err")
[ "$n" = 0 ] && ok "node $X2 wrote nothing into its own copy (no local marker attempt)" ||
    bad "node $X2 logged $n waits for mv-$Q"
kill "$MVPY" 2>/dev/null; wait "$MVPY" 2>/dev/null
caught() { [ "$(mv_row "$Q" | awk -F'\t' '{print split($11, i, ",")}')" = 2 ]; }
wait_for 30 caught || bad "node $X2 not in mv-$Q's ISR: $(mv_row "$Q")"

# ---- every node stopped: no replica diverged ----
for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done
run cluster check "$T/n1" "$T/n2" "$T/n3"
if [ "$(grep -c $'^partition\t'"$TOPIC"$'\t.*\tidentical\t' "$T/out")" = 6 ]; then
    ok "cluster check: the 6 partitions of $TOPIC identical on all 3 nodes"
else bad "cluster check (exit $RC): $(cat "$T/out")"; fi
run cluster check "$T/n$X2" "$T/n$Y2" # mv-Q's two replicas (the third node holds an empty one)
if grep -q $'^partition\tmv\t'"$Q"$'\tidentical\tends\t4,4\t' "$T/out"; then
    ok "cluster check: mv-$Q identical on nodes $X2 and $Y2 (3 records and the marker)"
else bad "cluster check (exit $RC): $(cat "$T/out")"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
