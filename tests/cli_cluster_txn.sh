#!/usr/bin/env bash
# cli_cluster_txn.sh — transactions on a cluster (issue 24; issue 25 items 1 and 2's markers;
# docs/cluster.md §7.3, §7.5; handle_txn.c KT8, KT9; handle_txn_markers.c KTM1-KTM9): three
# `ringtail serve --voters ...` nodes and a topic of 6 partitions (RF 3); a confluent_kafka
# transactional producer bootstrapped at node X (the coordinator: the leader of
# `__transaction_state`-0, txn_cluster.c KTC1) commits two transactions on a partition X leads.
# markers_wire.py then drives WriteTxnMarkers at node Y (the leader of another partition) byte
# by byte — a pending transaction made visible by a COMMIT marker, a repeated marker NONE, an
# ABORT hiding its record, NOT_LEADER_OR_FOLLOWER for X's partition, unknown topic, a stale
# epoch — and a transaction coordinated by X on Y's partition, whose commit marker X's writer
# sends to Y. A read_committed consumer sees the committed records exactly once and nothing
# aborted. Every node stopped, `ringtail cluster check` finds the replicas identical (no marker
# went into a copy a node only follows).
# Transactional offsets (issue 25 "txnoffsets"; handle_txn.c KT11-KT13, format.md H.7), for
# groups whose coordinator G is not the transaction coordinator C: AddOffsetsToTxn (KT13, no
# longer POLICY_VIOLATION) and TxnOffsetCommit (at G, through the group coordinator's call) are
# taken, the offset pending at G (read_uncommitted: none;
# read_committed: unstable) while its transaction is open; another one's commit, whose marker
# its coordinator sends there (WriteTxnMarkers), makes its offset committed there, and an
# aborted one leaves nothing, not even pending.
# With a follower of the group's partition stopped the TxnOffsetCommit is not answered until
# it continues (KT12, the ISR wait).
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

# ---- the producer at X: commit (X's partition), refused (Y's) twice, commit again ----
$PY - "$(kport "$X")" "$TOPIC" "$PX" "$PY_" >"$T/txn.out" 2>"$T/txn.err" <<'PYEOF'
import sys
from confluent_kafka import Consumer, Producer, KafkaException, TopicPartition
port, topic, px, py = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
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
PYEOF
for w in "a committed" "c committed"; do
    grep -qx "$w" "$T/txn.out" && ok "producer at node $X: $w" ||
        bad "expected '$w': $(cat "$T/txn.out") // $(tail -c 600 "$T/txn.err")"
done

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

# ---- transactional offsets (KT11-KT13): the groups' coordinator G is not the transaction
# coordinator C (the leader of __transaction_state-0) ----
leader_row() { status | awk -F'\t' -v t="$1" -v p="$2" '$1 == "partition" && $2 == t && $3 == p && $5 > 0 {print $5}'; }
C=$(leader_row __transaction_state 0)
PG="" G=""
for p in 0 1 2 3; do l=$(leader_row __consumer_offsets $p); [ -n "$l" ] && [ "$l" != "$C" ] && { PG=$p; G=$l; break; }; done
[ -n "$C" ] && [ -n "$PG" ] && ok "transaction coordinator node $C; __consumer_offsets-$PG led by node $G" ||
    { bad "no __consumer_offsets partition led by another node than the coordinator '$C': $(status)"; PG=0; G=1; }
# offsets_txn NODE TXN-ID GROUP OFFSET END: one transaction of offsets only, ended at once
# (commit | abort), or left open (open: the process exits without EndTxn; the coordinator aborts
# it after transaction.timeout.ms, past the end of this test).
offsets_txn() {
    $PY - "$(kport "$1")" "$TOPIC" "$2" "$3" "$4" "$5" 2>>"$T/otxn.err" <<'PYEOF'
import os, sys
from confluent_kafka import Consumer, Producer, KafkaException, TopicPartition
port, topic, tid, group, off, end = sys.argv[1:7]
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": tid,
              "transaction.timeout.ms": 60000})
c = Consumer({"bootstrap.servers": "127.0.0.1:" + port, "group.id": group})
try:
    p.init_transactions(30)
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition(topic, 0, int(off))],
                                  c.consumer_group_metadata(), 30)
    print("offsets added", flush=True)
    if end == "open":
        os._exit(0)
    if end == "commit":
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
    print(end, "done", flush=True)
except KafkaException as e:
    print("error", e.args[0].name(), flush=True)
c.close()
PYEOF
}
committed_at() { # committed_at NODE GROUP ISOLATION: the group's committed offset of TOPIC-0
    $PY - "$(kport "$1")" "$TOPIC" "$2" "$3" 2>>"$T/otxn.err" <<'PYEOF'
import sys
from confluent_kafka import Consumer, KafkaException, TopicPartition
port, topic, group, iso = sys.argv[1:5]
c = Consumer({"bootstrap.servers": "127.0.0.1:" + port, "group.id": group,
              "isolation.level": iso})
try:
    print(c.committed([TopicPartition(topic, 0)], timeout=6)[0].offset)
except KafkaException as e:
    print("error", e.args[0].name())
c.close()
PYEOF
}
group_on() { # a group name whose __consumer_offsets partition is $1, tagged $2
    $PY -c '
import sys
def part(g):
    h = 0
    for ch in g:
        h = (31 * h + ord(ch)) & 0xffffffff
    h = h - (1 << 32) if h & 0x80000000 else h
    return 0 if h == -(1 << 31) else abs(h) % 4
print(next("%s-%d" % (sys.argv[2], i) for i in range(1000) if part("%s-%d" % (sys.argv[2], i)) == int(sys.argv[1])))' "$1" "$2"
}
GB=$(group_on "$PG" txo-b) GC=$(group_on "$PG" txo-c) GD=$(group_on "$PG" txo-d)
got=$(offsets_txn "$C" txg-o2 "$GB" 9 open | tr '\n' ' ')
[ "$got" = "offsets added " ] &&
    ok "AddOffsetsToTxn at node $C and TxnOffsetCommit at node $G for group $GB accepted" ||
    bad "txg-o2: '$got' // $(tail -c 600 "$T/otxn.err")"
got=$(committed_at "$G" "$GB" read_uncommitted)
[ "$got" = -1001 ] && ok "group $GB: nothing committed while its transaction is open" ||
    bad "group $GB read_uncommitted: '$got'"
got=$(committed_at "$G" "$GB" read_committed)
[ "$got" != 9 ] && [ "$got" != -1001 ] && ok "group $GB: the offset is pending at node $G (read_committed: $got)" ||
    bad "group $GB read_committed: '$got'"
got=$(offsets_txn "$C" txg-o4 "$GD" 11 commit | tr '\n' ' ')
[ "$got" = "offsets added commit done " ] && ok "txg-o4 commits offsets of group $GD: node $C's marker reaches node $G" ||
    bad "txg-o4: '$got' // $(tail -c 600 "$T/otxn.err")"
got=$(committed_at "$G" "$GD" read_committed)
[ "$got" = 11 ] && ok "group $GD's committed offset at node $G is 11 after the commit" ||
    bad "group $GD after the commit: '$got'"
got=$(offsets_txn "$C" txg-o3 "$GC" 5 abort | tr '\n' ' ')
[ "$got" = "offsets added abort done " ] && ok "txg-o3 aborts offsets of group $GC" ||
    bad "txg-o3: '$got' // $(tail -c 600 "$T/otxn.err")"
got=$(committed_at "$G" "$GC" read_committed)
[ "$got" = -1001 ] && ok "group $GC: the aborted offset is dropped at node $G (nothing committed, nothing pending)" ||
    bad "group $GC after the abort: '$got'"
# a group the coordinator's node also coordinates: the engine's transactional call (KT11)
PC=""; for p in 0 1 2 3; do [ "$(leader_row __consumer_offsets $p)" = "$C" ] && { PC=$p; break; }; done
if [ -n "$PC" ]; then
    GA=$(group_on "$PC" txo-a)
    got=$(offsets_txn "$C" txg-o1 "$GA" 7 commit | tr '\n' ' ')
    got="$got$(committed_at "$C" "$GA" read_committed)"
    [ "$got" = "offsets added commit done 7" ] && ok "group $GA, coordinated by node $C too: its offset committed in a transaction" ||
        bad "txg-o1 for group $GA at node $C: '$got' // $(tail -c 600 "$T/otxn.err")"
else ok "# skipped: node $C leads no __consumer_offsets partition"; fi
# KT12: a TxnOffsetCommit is answered once on the ISR: with a follower S of __consumer_offsets-PG
# stopped (not G, not C, still in the ISR) it is not answered after 1 s; once S continues, it is
S=""; for i in 1 2 3; do [ "$i" != "$G" ] && [ "$i" != "$C" ] && { S=$i; break; }; done
GE=$(group_on "$PG" txo-e)
if [ -n "$S" ]; then
    kill -STOP "${PIDS[$S]}"
    offsets_txn "$C" txg-o5 "$GE" 13 open >"$T/o5.out" &
    O5=$!
    sleep 1
    early=$(cat "$T/o5.out")
    kill -CONT "${PIDS[$S]}"
    wait $O5
    late=$(tr '\n' ' ' <"$T/o5.out")
    [ -z "$early" ] && [ "$late" = "offsets added " ] &&
        ok "TxnOffsetCommit at node $G with follower $S stopped: not answered after 1 s; answered once $S continued" ||
        bad "TxnOffsetCommit with follower $S stopped: after 1 s '$early', at the end '$late' // $(tail -c 400 "$T/otxn.err")"
else bad "no node other than $G and $C"; fi

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
