#!/usr/bin/env bash
# cli_cluster_txn_ops.sh — operating transactions on a cluster (issue 25 item 5; docs/cluster.md
# §7.6; handle_ops.c KOP5-KOP6, cmd_txn_cluster.c TXC1-TXC3, cmd_txn.c TXN1): three `ringtail
# serve --voters ...` nodes; two confluent_kafka transactional producers (ops-a, ops-b; a long
# transaction.timeout.ms) each begin a transaction, ops-a on a partition another node leads,
# ops-b on one the coordinator C leads, produce, and are SIGKILLed, which leaves both open and
# the partitions' LSO pinned.
# - KIP-664 at the broker (tests/kafka/txn_admin.py, an independent client): DescribeTransactions
#   answers Ongoing at C and NOT_COORDINATOR elsewhere; ListTransactions lists both at C and
#   nothing elsewhere; DescribeProducers of an RF-1 partition answers at its replica and
#   NOT_LEADER_OR_FOLLOWER at the other nodes, UNKNOWN_TOPIC_OR_PARTITION for no such topic.
# - `ringtail txn list --bootstrap` asked of every node prints the same view: both ids Ongoing,
#   coordinator C, their partitions with the offset each pins.
# - directory mode on a node's directory is refused (it holds __cluster_metadata/).
# - `txn abort --bootstrap --topic --partition --producer-id` for ops-b's partition is refused
#   while the coordinator holds it open; with --force WriteTxnMarkers releases that partition.
# - `txn abort --bootstrap --transactional-id ops-a`, asked of a node that is not C, releases
#   ops-a's partition (the coordinator's ABORT marker sent to its leader): a read_committed
#   consumer reaches the end, the LSO is the high watermark and it read none of the aborted
#   records; then ops-b's id is aborted too and `list` prints no open transaction.
# - a node stopped (SIGSTOP): `txn list` names it on stderr and exits 1 (the view incomplete).
# - `txn list DIR --force` of a stopped node's directory lists it; a single broker serving a
#   partition pinned by a transaction nothing decides: `txn list --bootstrap` shows it pinned
#   with no live transaction, an abort by partition passes TXC2 and is refused by the broker
#   (a single broker does not serve WriteTxnMarkers).
#
# usage: bash tests/cli_cluster_txn_ops.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_txn_ops.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cto-XXXXXX")
PIDS=(0 0 0 0)
PRODS=()
cleanup() {
    for p in "${PRODS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
: >"$T/out"; : >"$T/err" # bad() shows them
PY=/usr/bin/python3
ADMIN="$(cd "$(dirname "$0")" && pwd)/kafka/txn_admin.py"
TOPIC=to
SESSION_MS=6000 # no node is fenced on purpose; the SIGSTOP below stays within it
. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, brokers_of, wait_for, all_list

status() { "$RT" cluster status --bootstrap "127.0.0.1:$K1" 2>/dev/null; }
row() { status | awk -F'\t' -v t="$1" -v p="$2" '$1 == "partition" && $2 == t && $3 == p'; }
field() { awk -F'\t' -v f="$1" '{print $f}'; } # 5: leader, 9: replicas, 11: ISR
admin() { $PY "$ADMIN" "127.0.0.1:$(kport "$1")" "${@:2}" 2>&1; }
create_topic() { # create_topic NAME PARTITIONS RF
    $PY - "127.0.0.1:$K1" "$@" <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=int(sys.argv[3]),
                                  replication_factor=int(sys.argv[4]))],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
}
# read_end PART: "LSO HW COUNT EOF" of TOPIC-PART: the last stable offset (ListOffsets as a
# read_committed consumer asks it), the high watermark (as a read_uncommitted one asks it), the
# records a read_committed consumer from the start read, and whether it reached the end.
read_end() {
    $PY - "127.0.0.1:$K1" "$TOPIC" "$1" 2>>"$T/read.err" <<'PYEOF'
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
part = int(sys.argv[3])
def consumer(level):
    return Consumer({"bootstrap.servers": sys.argv[1], "group.id": "ops-reader",
                     "isolation.level": level, "enable.auto.commit": False,
                     "enable.partition.eof": True})
u = consumer("read_uncommitted")
hw = u.get_watermark_offsets(TopicPartition(sys.argv[2], part), timeout=5, cached=False)[1]
u.close()
c = consumer("read_committed")
lso = c.get_watermark_offsets(TopicPartition(sys.argv[2], part), timeout=5, cached=False)[1]
c.assign([TopicPartition(sys.argv[2], part, OFFSET_BEGINNING)])
got, eof, end = 0, False, time.time() + 4
while not eof and time.time() < end:
    m = c.poll(0.3)
    if m is None:
        continue
    if m.error():
        eof = m.error().name() == "_PARTITION_EOF"
        continue
    got += 1
c.close()
print(lso, hw, got, "eof" if eof else "no-eof")
PYEOF
}
# released PART: the LSO is the high watermark, the end is reached and no record was read
released() { local r; r=$(read_end "$1"); set -- $r; [ "$1" = "$2" ] && [ "$3" = 0 ] && [ "$4" = eof ]; }
pinned() { local r; r=$(read_end "$1"); set -- $r; [ "$1" = 0 ] && [ "$2" = 3 ] && [ "$3" = 0 ]; }

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered"
else bad "brokers: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi
txn_ready() { [ "$(row __transaction_state 0 | field 5)" -gt 0 ] 2>/dev/null &&
    [ "$(row __transaction_state 0 | field 11 | tr ',' '\n' | wc -l)" = 3 ]; }
wait_for 30 txn_ready || bad "__transaction_state not ready: $(status)"
C=$(row __transaction_state 0 | field 5)
OTHERS=$(for i in 1 2 3; do [ "$i" != "$C" ] && echo "$i"; done | tr '\n' ' ')
B=${OTHERS%% *}

[ "$(create_topic "$TOPIC" 9 3)" = created ] || bad "create $TOPIC failed"
[ "$(create_topic to1 1 1)" = created ] || bad "create to1 failed"
led() { [ "$(status | awk -F'\t' -v t="$TOPIC" '$1 == "partition" && $2 == t && $5 > 0 && split($11, i, ",") == 3' | wc -l)" = 9 ] &&
    [ "$(row to1 0 | field 5)" -gt 0 ] 2>/dev/null; }
wait_for 20 led || bad "partitions not led: $(status)"
# PA: led by another node than the coordinator (its markers go there as WriteTxnMarkers, the
# produce verified with the coordinator, KIP-890); PB: led by the coordinator itself.
PA=$(for p in $(seq 0 8); do [ "$(row "$TOPIC" "$p" | field 5)" != "$C" ] && echo "$p"; done | head -1)
PB=$(for p in $(seq 0 8); do [ "$(row "$TOPIC" "$p" | field 5)" = "$C" ] && echo "$p"; done | head -1)
LA=$(row "$TOPIC" "$PA" | field 5)
[ -n "$PA" ] && [ -n "$PB" ] && ok "$TOPIC-$PA led by node $LA, $TOPIC-$PB by the coordinator, node $C" ||
    bad "no partition led by node $C and one by another: $(status | grep "	$TOPIC	")"

# ---- two producers leave a transaction open each, then die (SIGKILL) ----
open_txn() { # open_txn ID PART: runs in the background; prints "open" once flushed
    $PY - "$(kport "$B")" "$TOPIC" "$2" "$1" <<'PYEOF'
import sys, time
from confluent_kafka import Producer
port, topic, part, tid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": tid,
              "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
for i in range(3):
    p.produce(topic, value=("%s-%d" % (tid, i)).encode(), partition=part)
p.flush(30)
print("open", flush=True)
time.sleep(600)
PYEOF
}
open_txn ops-a "$PA" >"$T/pa.out" 2>"$T/pa.err" & PRODS+=($!); PA_PID=$!
open_txn ops-b "$PB" >"$T/pb.out" 2>"$T/pb.err" & PRODS+=($!); PB_PID=$!
wait_for 40 grep -q open "$T/pa.out" && wait_for 40 grep -q open "$T/pb.out" &&
    ok "ops-a and ops-b each hold a transaction open (3 records in $TOPIC-$PA, $TOPIC-$PB)" ||
    bad "producers: $(cat "$T/pa.out" "$T/pb.out") // $(tail -c 400 "$T/pa.err") $(tail -c 400 "$T/pb.err")"
kill -KILL "$PA_PID" "$PB_PID"; wait "$PA_PID" "$PB_PID" 2>/dev/null
for p in "$PA" "$PB"; do
    pinned "$p" && ok "$TOPIC-$p pinned: LSO 0, high watermark 3, nothing read committed" ||
        bad "$TOPIC-$p not pinned before any abort: LSO, HW, read: $(read_end "$p")"
done

# ---- KOP5, KOP6: the KIP-664 APIs at each node ----
for i in 1 2 3; do
    d=$(admin "$i" describe ops-a)
    if [ "$i" = "$C" ]; then
        echo "$d" | grep -q "^ops-a error=0 state=Ongoing .*partitions=$TOPIC-$PA$" &&
            ok "DescribeTransactions(ops-a) at the coordinator, node $i: Ongoing, $TOPIC-$PA" ||
            bad "DescribeTransactions at node $i: $d"
        l=$(admin "$i" list | sort | awk '{print $1, $3}' | tr '\n' ' ')
        [ "$l" = "ops-a Ongoing ops-b Ongoing " ] && ok "ListTransactions at node $i: $l" ||
            bad "ListTransactions at node $i: '$l'"
    else
        echo "$d" | grep -q "^ops-a error=16 " &&
            ok "DescribeTransactions(ops-a) at node $i: NOT_COORDINATOR" ||
            bad "DescribeTransactions at node $i: $d"
        l=$(admin "$i" list)
        [ -z "$l" ] && ok "ListTransactions at node $i: nothing (it coordinates nothing)" ||
            bad "ListTransactions at node $i: '$l'"
    fi
done
R1=$(row to1 0 | field 5)
for i in 1 2 3; do
    want=6; [ "$i" = "$R1" ] && want=0
    d=$(admin "$i" describe-producers to1 0 | head -1)
    [ "$d" = "to1-0 error=$want" ] && ok "DescribeProducers(to1-0, replica node $R1) at node $i: error $want" ||
        bad "DescribeProducers(to1-0) at node $i: '$d', want error $want"
done
d=$(admin "$B" describe-producers nosuch 0 | head -1)
[ "$d" = "nosuch-0 error=3" ] && ok "DescribeProducers(nosuch-0): UNKNOWN_TOPIC_OR_PARTITION" ||
    bad "DescribeProducers(nosuch-0): '$d'"

# ---- txn list --bootstrap: the same view from every node ----
for i in 1 2 3; do
    "$RT" txn list --bootstrap "127.0.0.1:$(kport "$i")" >"$T/list$i" 2>"$T/list$i.err"
    rc=$?
    a=$(awk -F'\t' '$1 == "ops-a" {print $4, $6, $7, $8}' "$T/list$i")
    b=$(awk -F'\t' '$1 == "ops-b" {print $4, $6, $7, $8}' "$T/list$i")
    [ $rc = 0 ] && [ "$a" = "Ongoing 600000 $C $TOPIC-$PA(LSO 0)" ] &&
        [ "$b" = "Ongoing 600000 $C $TOPIC-$PB(LSO 0)" ] && ! grep -q pinned "$T/list$i" &&
        ok "txn list --bootstrap node $i: ops-a, ops-b Ongoing at coordinator $C, LSO 0 pinned" ||
        bad "txn list at node $i (exit $rc): $(cat "$T/list$i" "$T/list$i.err")"
done
cut -f1-4,6- "$T/list1" >"$T/l1"; cut -f1-4,6- "$T/list2" >"$T/l2"; cut -f1-4,6- "$T/list3" >"$T/l3"
cmp -s "$T/l1" "$T/l2" && cmp -s "$T/l1" "$T/l3" && ok "the three views agree (ages aside)" ||
    bad "views differ: $(cat "$T/l1" "$T/l2" "$T/l3")"

# ---- TXN1: directory mode refuses a cluster node's directory ----
"$RT" txn list "$T/n$C" >"$T/dir.out" 2>"$T/dir.err"; rc=$?
[ $rc = 1 ] && grep -q "cluster node's directory (it holds __cluster_metadata/)" "$T/dir.err" &&
    grep -q -- "--bootstrap" "$T/dir.err" && ok "txn list DIR of node $C: refused (exit 1)" ||
    bad "txn list DIR (exit $rc): $(cat "$T/dir.out" "$T/dir.err")"
"$RT" txn abort "$T/n$C" --transactional-id ops-a >"$T/dir.out" 2>"$T/dir.err"; rc=$?
[ $rc = 1 ] && grep -q "cluster node's directory" "$T/dir.err" &&
    ok "txn abort DIR of node $C: refused (exit 1)" || bad "txn abort DIR (exit $rc): $(cat "$T/dir.err")"

# ---- TXC2: abort by partition is refused while the coordinator holds it; --force writes ----
PIDB=$(awk -F'\t' '$1 == "ops-b" {print $2}' "$T/list1")
"$RT" txn abort --bootstrap "127.0.0.1:$(kport "$B")" --topic "$TOPIC" --partition "$PB" \
    --producer-id "$PIDB" >"$T/ab.out" 2>"$T/ab.err"; rc=$?
[ $rc = 1 ] && grep -q "is 'ops-b', which its coordinator (node $C) holds Ongoing" "$T/ab.err" &&
    ok "abort of producer $PIDB in $TOPIC-$PB refused: the coordinator holds ops-b open" ||
    bad "abort by partition without --force (exit $rc): $(cat "$T/ab.out" "$T/ab.err")"
pinned "$PB" && ok "$TOPIC-$PB still pinned" || bad "$TOPIC-$PB changed by a refused abort: $(read_end "$PB")"
"$RT" txn abort --bootstrap "127.0.0.1:$(kport "$B")" --topic "$TOPIC" --partition "$PB" \
    --producer-id "$PIDB" --force >"$T/ab.out" 2>"$T/ab.err"; rc=$?
[ $rc = 0 ] && grep -q "aborted the transaction of producer $PIDB (epoch [0-9]*) in $TOPIC-$PB at its leader, node $C (first offset 0; now none open)" "$T/ab.out" &&
    ok "abort --force of producer $PIDB in $TOPIC-$PB: WriteTxnMarkers at node $C" ||
    bad "abort --force (exit $rc): $(cat "$T/ab.out" "$T/ab.err")"
wait_for 10 released "$PB" && ok "$TOPIC-$PB released: LSO, HW, read: $(read_end "$PB")" ||
    bad "$TOPIC-$PB still pinned: $(read_end "$PB")"

# ---- abort by transactional id, asked of a node that is not the coordinator ----
"$RT" txn abort --bootstrap "127.0.0.1:$(kport "$B")" --transactional-id ops-a >"$T/aa.out" 2>"$T/aa.err"; rc=$?
[ $rc = 0 ] && grep -q "aborted the transaction of 'ops-a' (producer [0-9]*, epoch [0-9]*, Ongoing; partitions $TOPIC-$PA) at its coordinator, node $C" "$T/aa.out" &&
    ok "txn abort --bootstrap node $B --transactional-id ops-a: $(cat "$T/aa.out")" ||
    bad "abort ops-a (exit $rc): $(cat "$T/aa.out" "$T/aa.err")"
wait_for 10 released "$PA" && ok "$TOPIC-$PA released: LSO, HW, read: $(read_end "$PA")" ||
    bad "$TOPIC-$PA still pinned: $(read_end "$PA")"
"$RT" txn abort --bootstrap "127.0.0.1:$(kport "$B")" --transactional-id ops-a >"$T/aa.out" 2>"$T/aa.err"; rc=$?
[ $rc = 1 ] && grep -q "has no open transaction" "$T/aa.err" &&
    ok "a second abort of ops-a: nothing open (exit 1)" || bad "second abort (exit $rc): $(cat "$T/aa.out" "$T/aa.err")"

# ---- ops-b is still Ongoing at its coordinator (its partition released): abort it too ----
"$RT" txn list --bootstrap "127.0.0.1:$K1" >"$T/list" 2>&1
[ "$(awk -F'\t' '$1 == "ops-b" {print $4, $8}' "$T/list")" = "Ongoing $TOPIC-$PB(LSO -)" ] &&
    ok "txn list: ops-b Ongoing, $TOPIC-$PB pins nothing" || bad "txn list: $(cat "$T/list")"
"$RT" txn abort --bootstrap "127.0.0.1:$(kport "$C")" ops-b >"$T/ab.out" 2>"$T/ab.err" &&
    grep -q "aborted the transaction of 'ops-b' (producer $PIDB, epoch [0-9]*, Ongoing; partitions $TOPIC-$PB)" "$T/ab.out" &&
    ok "txn abort --bootstrap ... ops-b (the id as an argument)" || bad "abort ops-b: $(cat "$T/ab.out" "$T/ab.err")"
"$RT" txn list --bootstrap "127.0.0.1:$K1,127.0.0.1:$K2" >"$T/list" 2>&1; rc=$?
[ $rc = 0 ] && [ "$(cat "$T/list")" = "no open transactions in the cluster (3 nodes asked)" ] &&
    ok "txn list: no open transactions in the cluster" || bad "txn list (exit $rc): $(cat "$T/list")"
released "$PB" && ok "$TOPIC-$PB still released" || bad "$TOPIC-$PB: $(read_end "$PB")"

# ---- TXC1: a node that does not answer makes the view incomplete: named, exit 1 ----
kill -STOP "${PIDS[$B]}"
"$RT" txn list --bootstrap "127.0.0.1:$(kport "$C")" --timeout-ms 500 >"$T/list" 2>"$T/list.err"; rc=$?
kill -CONT "${PIDS[$B]}"
[ $rc = 1 ] && grep -q "node $B (127.0.0.1:$(kport "$B")): ListTransactions" "$T/list.err" &&
    grep -q "the view is incomplete" "$T/list.err" &&
    ok "txn list with node $B stopped: named on stderr, exit 1" ||
    bad "txn list with node $B stopped (exit $rc): $(cat "$T/list" "$T/list.err")"

for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] && ok "node $i stopped: exit 0" || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done

# TXN1's --force: the stopped coordinator's directory opens (read-only) and lists
"$RT" txn list "$T/n$C" --force >"$T/dir.out" 2>"$T/dir.err"; rc=$?
[ $rc = 0 ] && grep -q "^no open transactions in $T/n$C$" "$T/dir.out" &&
    ok "txn list DIR --force of stopped node $C: exit 0, nothing open" ||
    bad "txn list DIR --force (exit $rc): $(cat "$T/dir.out" "$T/dir.err")"

# ---- a single broker with a partition pinned by a transaction nothing decides (as
# tests/cli_readme.sh makes it: the COMMIT marker cut off, the coordinator's state lost) ----
PD=$T/pinned
"$RT" topic create "$PD" t --partitions 1 >/dev/null
printf 'p1\np2\np3\n' | "$RT" produce "$PD" t -p 0 --txn-id ops-pin --txn-records 3 >/dev/null 2>&1
plog=$(ls "$PD"/t-0/*.log | sort | tail -n 1)
truncate -s -78 "$plog" # the marker batch is the last 78 bytes
for f in "$PD"/__transaction_state-0/*.log; do truncate -s 0 "$f"; done
rm -f "$PD/.clean_shutdown"
"$RT" recover "$PD" >/dev/null 2>&1
"$RT" serve "$PD" --listen "127.0.0.1:$K1" --threads 1 >"$T/sb.out" 2>"$T/sb.err" &
PIDS[1]=$!
sb_up() { "$RT" txn list --bootstrap "127.0.0.1:$K1" >"$T/list" 2>"$T/list.err"; }
wait_for 10 sb_up
p=$(awk -F'\t' '$1 == "t" && $2 == "0" {print $3, $5, $6, $7, $8, $9, $10}' "$T/list")
set -- $p
[ $# = 7 ] && [ "$2 $3 $4 $5 $6 $7" = "0 0 3 0 - -" ] && grep -q "^pinned partitions with no live transaction:$" "$T/list" &&
    ok "single broker: txn list --bootstrap shows t-0 pinned by producer $1 with no live transaction (first offset 0, LSO 0, HW 3)" ||
    bad "single broker: txn list: $(cat "$T/list" "$T/list.err")"
"$RT" txn abort --bootstrap "127.0.0.1:$K1" --topic t --partition 0 --producer-id "${1:-0}" >"$T/ab.out" 2>"$T/ab.err"; rc=$?
[ $rc = 1 ] && grep -q "WriteTxnMarkers at node 0: .*a single broker does not serve it" "$T/ab.err" &&
    ok "single broker: abort by partition passes TXC2 (nothing live), WriteTxnMarkers not served: exit 1" ||
    bad "single broker: abort by partition (exit $rc): $(cat "$T/ab.out" "$T/ab.err")"
kill -TERM "${PIDS[1]}"; wait "${PIDS[1]}"; PIDS[1]=0

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
