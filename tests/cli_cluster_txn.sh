#!/usr/bin/env bash
# cli_cluster_txn.sh — transactions on a cluster (issue 24; issue 25 items 1 and 2's markers;
# docs/cluster.md §7.3, §7.5; handle_txn.c KT8, KT9; handle_txn_markers.c KTM1-KTM9): three
# `ringtail serve --voters ...` nodes and a topic of 6 partitions (RF 3); a confluent_kafka
# transactional producer bootstrapped at node X (the coordinator: the leader of
# `__transaction_state`-0, txn_cluster.c KTC1) commits two transactions on a partition X leads;
# AddOffsetsToTxn for a group another node coordinates is answered POLICY_VIOLATION, logged once.
# markers_wire.py then drives WriteTxnMarkers at node Y (the leader of another partition) byte
# by byte — a pending transaction made visible by a COMMIT marker, a repeated marker NONE, an
# ABORT hiding its record, NOT_LEADER_OR_FOLLOWER for X's partition, unknown topic, a stale
# epoch — and a transaction coordinated by X on Y's partition, whose commit marker X's writer
# sends to Y. A read_committed consumer sees the committed records exactly once and nothing
# aborted. Every node stopped, `ringtail cluster check` finds the replicas identical (no marker
# went into a copy a node only follows).
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
: >"$T/out"; : >"$T/err" # bad() shows them
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
status() { # the first running node's answer
    local i
    for i in 1 2 3; do
        [ "${PIDS[$i]}" = 0 ] && continue
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

# X: the transaction coordinator, the leader of __transaction_state-0 (MN10, KTC1)
txn_led() { [ "$(status | awk -F'\t' '$1 == "partition" && $2 == "__transaction_state" && $3 == 0 {print $5}')" -gt 0 ] 2>/dev/null; }
wait_for 20 txn_led || bad "__transaction_state-0 not led: $(status)"
X=$(status | awk -F'\t' '$1 == "partition" && $2 == "__transaction_state" && $3 == 0 {print $5}')
PX= PY_=
for p in 0 1 2 3 4 5; do l=$(leader_of $p); if [ -z "$PX" ] && [ "$l" = "$X" ]; then PX=$p; fi; done
for p in 0 1 2 3 4 5; do l=$(leader_of $p); if [ -n "$l" ] && [ "$l" != "$X" ]; then PY_=$p; Y=$l; break; fi; done
if [ -n "$X" ] && [ -n "$PX" ] && [ -n "$PY_" ]; then ok "coordinator node $X leads partition $PX, node $Y partition $PY_"
else bad "no two leaders among the partitions: $(status)"; PX=${PX:-0}; PY_=1; Y=0; fi

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

# ---- every node stopped: no replica diverged ----
for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done
run cluster check "$T/n1" "$T/n2" "$T/n3"
if [ "$(grep -c $'^partition\t'"$TOPIC"$'\t.*\tidentical\t' "$T/out")" = 6 ]; then
    ok "cluster check: the 6 partitions of $TOPIC identical on all 3 nodes"
else bad "cluster check (exit $RC): $(cat "$T/out")"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
