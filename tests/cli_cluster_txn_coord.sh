#!/usr/bin/env bash
# cli_cluster_txn_coord.sh — the transaction coordinator of a cluster is the leader of
# `__transaction_state`-0 (issue 25 item 1; docs/cluster.md §7.5; txn_cluster.c KTC1-KTC5,
# metadata_node.h MN10-MN11): three `ringtail serve --voters ...` nodes; the controller creates
# `__transaction_state` (RF 3, min.insync.replicas 2); FindCoordinator key type 1 answers its
# leader C from all three nodes, the others answer InitProducerId NOT_COORDINATOR; C answers it
# only once a stopped follower of the partition continues (the ISR wait, KTC4); a confluent_kafka
# transactional producer bootstrapped at another node commits one transaction on partitions C
# leads and leaves a second open; C is killed (-9):
# the next coordinator (another node) answers FindCoordinator from the survivors, a
# read_committed consumer reads the committed transaction and reaches the end (the open one
# aborted, no LSO pinned), the old producer is fenced, and a new producer with the same
# transactional id commits through the new coordinator. The killed node, restarted, resigns the
# partition its engine led from open, follows it back into the ISR and names the new coordinator.
#
# usage: bash tests/cli_cluster_txn_coord.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_txn_coord.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ctc-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
: >"$T/out"; : >"$T/err" # bad() shows them
PY=/usr/bin/python3
TOPIC=tc
SESSION_MS=2000
. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, brokers_of, wait_for, all_list
trap cluster_cleanup EXIT

status() { # the first running node's answer
    local i
    for i in 1 2 3; do
        [ "${PIDS[$i]}" = 0 ] && continue
        "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null; return
    done
}
row() { status | awk -F'\t' -v t="$1" -v p="$2" '$1 == "partition" && $2 == t && $3 == p'; }
field() { awk -F'\t' -v f="$1" '{print $f}'; } # 5: leader, 11: ISR
# find_coord NODE: "error node port" of FindCoordinator v1 (key type 1, id tc-1) asked of NODE
find_coord() {
    $PY - "$(kport "$1")" <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
key, cid = b"tc-1", b"t"
body = struct.pack(">hhih", 10, 1, 7, len(cid)) + cid + struct.pack(">h", len(key)) + key + b"\x01"
s.sendall(struct.pack(">i", len(body)) + body)
def read(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("closed")
        b += c
    return b
r = read(struct.unpack(">i", read(4))[0])
at = 8  # correlation id, throttle time
err, = struct.unpack_from(">h", r, at); at += 2
ml, = struct.unpack_from(">h", r, at); at += 2 + max(ml, 0)
node, = struct.unpack_from(">i", r, at); at += 4
hl, = struct.unpack_from(">h", r, at); at += 2 + hl
port, = struct.unpack_from(">i", r, at)
print(err, node, port)
PYEOF
}

# init_pid NODE: the error code of InitProducerId v0 (transactional id tc-probe) asked of NODE
init_pid() {
    $PY - "$(kport "$1")" <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
tid, cid = b"tc-probe", b"t"
body = (struct.pack(">hhih", 22, 0, 9, len(cid)) + cid + struct.pack(">h", len(tid)) + tid +
        struct.pack(">i", 60000))
s.sendall(struct.pack(">i", len(body)) + body)
def read(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("closed")
        b += c
    return b
r = read(struct.unpack(">i", read(4))[0])
print(struct.unpack_from(">h", r, 8)[0])  # after correlation id, throttle time
PYEOF
}

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered"
else bad "brokers: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi

# ---- MN10: the controller creates __transaction_state; KTC1: one coordinator for all ----
txn_ready() { [ "$(row __transaction_state 0 | field 5)" -gt 0 ] 2>/dev/null &&
    [ "$(row __transaction_state 0 | field 11 | tr ',' '\n' | wc -l)" = 3 ]; }
wait_for 30 txn_ready && ok "__transaction_state-0 created with a leader and an ISR of 3" ||
    bad "__transaction_state: $(status | grep -v '^partition.*\t\(tc\|__consumer_offsets\)\t')"
C=$(row __transaction_state 0 | field 5)
serves() { [ "$(find_coord "$1")" = "0 $C $(kport "$C")" ]; }
for i in 1 2 3; do
    wait_for 15 serves "$i" && ok "FindCoordinator(transaction) at node $i: node $C" ||
        bad "FindCoordinator at node $i: '$(find_coord "$i")', want '0 $C $(kport "$C")'"
done

# KTC2: the transactional requests are the coordinator's; another node answers NOT_COORDINATOR
for i in 1 2 3; do
    want=16; [ "$i" = "$C" ] && want=0
    got=$(init_pid "$i")
    [ "$got" = "$want" ] && ok "InitProducerId(tc-probe) at node $i: error $got" ||
        bad "InitProducerId at node $i: '$got', want $want"
done

# ---- KTC4: an answer waits for the ISR of __transaction_state-0 (min.insync.replicas 2) ----
# A follower F of it (not the controller) stopped: InitProducerId at C is not answered within
# 1 s (F still in the ISR: its fence takes the 2000 ms session); answered NONE once F continues
# (or is fenced and the ISR shrinks to 2).
CTL=$(status | sed -n 's/^controller\t//p')
F=$(row __transaction_state 0 | field 11 | tr ',' '\n' | grep -vx "$C" | grep -vx "$CTL" | head -1)
kill -STOP "${PIDS[$F]}"
$PY - "$(kport "$C")" >"$T/isr.out" 2>&1 <<'PYEOF' &
import select, socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
tid, cid = b"tc-isr", b"t"
body = (struct.pack(">hhih", 22, 0, 9, len(cid)) + cid + struct.pack(">h", len(tid)) + tid +
        struct.pack(">i", 60000))
s.sendall(struct.pack(">i", len(body)) + body)
ready = select.select([s], [], [], 1.0)[0]
print("answered within 1 s" if ready else "pending after 1 s", flush=True)
b = b""
while len(b) < 4 or len(b) < 4 + struct.unpack(">i", b[:4])[0]:
    c = s.recv(4096)
    if not c:
        break
    b += c
print("error", struct.unpack_from(">h", b, 12)[0], flush=True)
PYEOF
ISRPY=$!
wait_for 10 grep -q "after 1 s\|within 1 s" "$T/isr.out"
kill -CONT "${PIDS[$F]}"
wait "$ISRPY"
grep -qx "pending after 1 s" "$T/isr.out" && grep -qx "error 0" "$T/isr.out" &&
    ok "InitProducerId at node $C with follower $F stopped: pending after 1 s, NONE once it continues" ||
    bad "the ISR wait (follower $F stopped): $(cat "$T/isr.out")"
caught_up() { [ "$(row __transaction_state 0 | field 11 | tr ',' '\n' | wc -l)" = 3 ]; }
wait_for 40 caught_up || bad "node $F not back in the ISR: $(row __transaction_state 0)"
ISR=$(row __transaction_state 0 | field 11)
# the next coordinator once C is fenced: the first other member of the ISR (MI6)
N=$(echo "$ISR" | tr ',' '\n' | grep -vx "$C" | head -1)

# ---- a topic with partitions C leads whose next leader is N, as __transaction_state-0's ----
$PY - "127.0.0.1:$K1" "$TOPIC" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=12, replication_factor=3)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin.out" || bad "create: $(cat "$T/admin.out")"
tc_ready() { [ "$(status | awk -F'\t' -v t="$TOPIC" '$1 == "partition" && $2 == t && $5 > 0 && split($11, i, ",") == 3' | wc -l)" = 12 ]; }
wait_for 20 tc_ready || bad "partitions not led with a full ISR: $(status)"
PARTS=
for p in $(seq 0 11); do
    r=$(row "$TOPIC" "$p")
    [ "$(echo "$r" | field 5)" = "$C" ] || continue
    [ "$(echo "$r" | field 11 | tr ',' '\n' | grep -vx "$C" | head -1)" = "$N" ] && PARTS="$PARTS $p"
done
PARTS=$(echo $PARTS | cut -d' ' -f1,2)
[ -n "$PARTS" ] && ok "partitions $PARTS of $TOPIC led by node $C, next in their ISR node $N" ||
    { bad "no partition of $TOPIC led by $C with $N next: $(status | grep "	$TOPIC	")"; PARTS=0; }
B=$(for i in 1 2 3; do [ "$i" != "$C" ] && echo "$i"; done | head -1) # a node other than C

# ---- a producer bootstrapped at B: one committed transaction, one left open ----
$PY - "$(kport "$B")" "$TOPIC" "$PARTS" "$T/go" >"$T/p1.out" 2>"$T/p1.err" <<'PYEOF' &
import os, sys, time
from confluent_kafka import Producer, KafkaException
port, topic, parts, go = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()], sys.argv[4]
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": "tc-1",
              "transaction.timeout.ms": 60000})
p.init_transactions(30)
def send(tag):
    for q in parts:
        for i in range(3):
            p.produce(topic, value=("%s-%d-%d" % (tag, q, i)).encode(), partition=q)
p.begin_transaction()
send("a")
p.commit_transaction(30)
print("a committed", flush=True)
p.begin_transaction()
send("o")
p.flush(30)
print("o open", flush=True)
while not os.path.exists(go):
    time.sleep(0.1)
try:
    p.commit_transaction(20)
    print("o committed", flush=True)
except KafkaException as e:
    err = e.args[0]
    print("o error", err.name(), "fatal" if err.fatal() else "-", flush=True)
PYEOF
P1=$!
wait_for 40 grep -q "o open" "$T/p1.out" && ok "producer at node $B: a committed through node $C, o open" ||
    bad "producer: $(cat "$T/p1.out") // $(tail -c 600 "$T/p1.err")"

# ---- kill -9 the coordinator ----
kill -KILL "${PIDS[$C]}"; wait "${PIDS[$C]}" 2>/dev/null; PIDS[$C]=0
moved() { [ "$(row __transaction_state 0 | field 5)" = "$N" ] && [ "$(row "$TOPIC" "${PARTS%% *}" | field 5)" = "$N" ]; }
wait_for 30 moved && ok "node $C killed: __transaction_state-0 and the partitions led by node $N" ||
    bad "after the kill: $(row __transaction_state 0) // $(row "$TOPIC" "${PARTS%% *}")"
loaded() { grep -q "transactions: coordinator (leader of __transaction_state-0)" "$T/n$N.err"; }
wait_for 30 loaded || bad "node $N never became the coordinator: $(tail -c 600 "$T/n$N.err")"
serves_n() { [ "$(find_coord "$1")" = "0 $N $(kport "$N")" ]; }
for i in 1 2 3; do
    [ "$i" = "$C" ] && continue
    wait_for 15 serves_n "$i" && ok "FindCoordinator(transaction) at node $i after the kill: node $N" ||
        bad "FindCoordinator at node $i: '$(find_coord "$i")', want '0 $N $(kport "$N")'"
done

# ---- the old producer is fenced; read_committed: a-*, nothing of o-*, the end reached ----
touch "$T/go"
wait_for 40 grep -Eq "^o (error|committed)" "$T/p1.out"
grep -Eq "^o error (PRODUCER_FENCED|_FENCED|INVALID_PRODUCER_EPOCH) fatal" "$T/p1.out" &&
    ok "the old producer's commit: $(grep -E '^o (error|committed)' "$T/p1.out")" ||
    bad "the old producer: $(cat "$T/p1.out") // $(tail -c 600 "$T/p1.err")"
kill "$P1" 2>/dev/null; wait "$P1" 2>/dev/null
read_committed() { # values of PARTS, read_committed, bootstrapped at N; "eof K" at the end
    $PY - "127.0.0.1:$(kport "$N")" "$TOPIC" "$PARTS" 2>>"$T/read.err" <<'PYEOF'
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
parts = [int(x) for x in sys.argv[3].split()]
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "tc-reader",
              "isolation.level": "read_committed", "enable.auto.commit": False,
              "enable.partition.eof": True})
c.assign([TopicPartition(sys.argv[2], q, OFFSET_BEGINNING) for q in parts])
eof, got, end = set(), [], time.time() + 10
while len(eof) < len(parts) and time.time() < end:
    m = c.poll(0.3)
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
}
expect_read() { [ "$(read_committed)" = "$1" ]; }
NP=$(echo $PARTS | wc -w)
want=$(for q in $PARTS; do for i in 0 1 2; do echo "a-$q-$i"; done; done | sort | tr '\n' ' ')"eof $NP"
wait_for 20 expect_read "$want" && ok "read_committed at node $N: a committed, o aborted, the end reached" ||
    bad "read_committed: '$(read_committed)', want '$want' // $(tail -c 300 "$T/read.err")"

# ---- a new producer with the same id commits through the new coordinator ----
$PY - "$(kport "$N")" "$TOPIC" "$PARTS" >"$T/p2.out" 2>"$T/p2.err" <<'PYEOF'
import sys
from confluent_kafka import Producer
port, topic, parts = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()]
p = Producer({"bootstrap.servers": "127.0.0.1:" + port, "transactional.id": "tc-1"})
p.init_transactions(30)
p.begin_transaction()
for q in parts:
    p.produce(topic, value=("n-%d-0" % q).encode(), partition=q)
p.commit_transaction(30)
print("n committed")
PYEOF
grep -qx "n committed" "$T/p2.out" && ok "a new producer tc-1 commits through node $N" ||
    bad "new producer: $(cat "$T/p2.out") // $(tail -c 600 "$T/p2.err")"
want=$( (for q in $PARTS; do for i in 0 1 2; do echo "a-$q-$i"; done; echo "n-$q-0"; done) | sort | tr '\n' ' ')"eof $NP"
wait_for 20 expect_read "$want" && ok "read_committed at node $N: a and n, the end reached" ||
    bad "read_committed: '$(read_committed)', want '$want'"

# ---- the killed node restarted: it resigns what its engine led from open and follows ----
start_node "$C"
wait_for 40 caught_up && ok "node $C restarted: back in the ISR of __transaction_state-0" ||
    bad "node $C not back in the ISR: $(row __transaction_state 0)"
serves_n "$C" && ok "FindCoordinator(transaction) at node $C: node $N" ||
    bad "FindCoordinator at node $C: '$(find_coord "$C")'"
[ "$(init_pid "$C")" = 16 ] && ok "InitProducerId at node $C: NOT_COORDINATOR" ||
    bad "InitProducerId at node $C: '$(init_pid "$C")'"

# ---- every node stops cleanly (a controlled shutdown moves the coordinator on) ----
for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] && ok "node $i stopped: exit 0" || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
