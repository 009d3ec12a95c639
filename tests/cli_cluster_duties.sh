#!/usr/bin/env bash
# cli_cluster_duties.sh — the active controller's remaining duties (issue 24; docs/cluster.md
# §7.1): three `ringtail serve --voters ...` nodes; confluent_kafka's AdminClient grows a topic
# with CreatePartitions and deletes one with DeleteTopics, both through the controller
# (controller_admin.h CA1, CA2; a non-controller forwards them, KAD12; a peer's: NOT_CONTROLLER)
# and every node applies them (metadata_node.h MN2, MN4); idempotent InitProducerId on every
# node takes ids from the blocks the controller grants (producer_id_blocks.h PB1-PB3): no id
# twice across nodes, nor after a restart; SIGTERM of a partition leader is a controlled
# shutdown (MN5): its leaderships move (epoch + 1) before it exits, and it rejoins after a
# restart; SIGTERM of the controller hands the role over first (raft transfer); a node left
# alone (no quorum) whose block runs out answers COORDINATOR_LOAD_IN_PROGRESS (PB3).
#
# usage: bash tests/cli_cluster_duties.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_duties.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cduty-XXXXXX")
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
SESSION_MS=2000

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, brokers_of, wait_for, all_list, status_of
partitions_of() { status_of "$1" | grep '^partition' | sort; }
controller_of() { status_of "$1" | sed -n 's/^controller\t//p'; }
# raw InitProducerId v0 (no transactional id) to node I, N times; COORDINATOR_LOAD_IN_PROGRESS
# (14) is retried; prints one id per line, or "error E"
init_pids() {
    $PY - "$(kport "$1")" "$2" <<'PYEOF'
import socket, struct, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
def call(body, key, ver):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = struct.pack(">hhih", key, ver, 7, 1) + b"t" + body
    s.sendall(struct.pack(">i", len(req)) + req)
    def exact(k):
        b = b""
        while len(b) < k:
            c = s.recv(k - len(b))
            if not c: raise SystemExit("closed")
            b += c
        return b
    r = exact(struct.unpack(">i", exact(4))[0]); s.close(); return r[4:]
loads = 0
for i in range(n):
    for attempt in range(100):
        r = call(struct.pack(">hi", -1, 60000), 22, 0)
        thr, err, pid, ep = struct.unpack(">ihqh", r[:16])
        if err != 14: break
        loads += 1; time.sleep(0.1)
    print(pid if err == 0 else "error %d" % err)
print("loads", loads, file=sys.stderr)
PYEOF
}

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered and listed"
else bad "brokers listed: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi
CTL=$(controller_of 1)
NON=1; [ "$CTL" = 1 ] && NON=2
[ -n "$CTL" ] && ok "controller is node $CTL" || { bad "no controller"; CTL=3; NON=1; }

# ---- CreatePartitions and DeleteTopics through the controller (CA1, CA2, MN4) ----
$PY - "$(kport $NON)" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions
a = AdminClient({"bootstrap.servers": "127.0.0.1:" + sys.argv[1]})
def retry(what, f):
    for attempt in range(8):
        try:
            f(); print(what, "ok"); return
        except Exception as e:
            name = e.args[0].name() if e.args and hasattr(e.args[0], "name") else str(e)
            if name != "NOT_CONTROLLER" or attempt == 7:
                print(what, "error", name); return
            time.sleep(1)
retry("create grow", lambda: a.create_topics([NewTopic("grow", 3, 3)], request_timeout=15)["grow"].result())
retry("create gone", lambda: a.create_topics([NewTopic("gone", 2, 3)], request_timeout=15)["gone"].result())
time.sleep(1)
retry("partitions grow", lambda: a.create_partitions([NewPartitions("grow", 5)], request_timeout=15)["grow"].result())
retry("partitions shrink", lambda: a.create_partitions([NewPartitions("grow", 4)], request_timeout=15)["grow"].result())
retry("delete gone", lambda: a.delete_topics(["gone"], request_timeout=15)["gone"].result())
retry("delete unknown", lambda: a.delete_topics(["nosuch"], request_timeout=15)["nosuch"].result())
PYEOF
for w in "create grow ok" "create gone ok" "partitions grow ok" "partitions shrink error INVALID_PARTITIONS" \
    "delete gone ok" "delete unknown error UNKNOWN_TOPIC_OR_PART"; do
    grep -q "^$w" "$T/admin.out" && ok "AdminClient via non-controller node $NON: $w" ||
        bad "expected '$w': $(cat "$T/admin.out")"
done
five_on() { [ "$(partitions_of "$1" | grep -c $'^partition\tgrow\t')" = 5 ]; }
gone_on() { ! partitions_of "$1" | grep -q $'^partition\tgone\t'; }
agree() { [ "$(partitions_of 1)" = "$(partitions_of 2)" ] && [ "$(partitions_of 1)" = "$(partitions_of 3)" ]; }
if wait_for 10 five_on 1 && wait_for 10 five_on 2 && wait_for 10 five_on 3 && wait_for 10 agree; then
    ok "every node's Metadata shows grow with 5 partitions, the same leaders and ISR"
else bad "grow: $(partitions_of 1) // $(partitions_of 2) // $(partitions_of 3)"; fi
# the new partitions continue the round-robin: leaders of grow-0..4 cover every node
P=$(partitions_of "$CTL" | grep $'^partition\tgrow\t')
nleaders=$(echo "$P" | cut -f5 | sort -u | grep -c .)
[ "$nleaders" = 3 ] && ! echo "$P" | awk -F'\t' '$11 != $9 || length($9) != 5' | grep -q . &&
    ok "new partitions placed over all three nodes (RF 3, ISR = replicas)" || bad "placement: $P"
has_grow() { [ -d "$T/n$1/grow-3" ] && [ -d "$T/n$1/grow-4" ]; }
no_gone() { [ ! -e "$T/n$1/gone-0" ] && [ ! -e "$T/n$1/gone-1" ]; }
if wait_for 10 has_grow 1 && wait_for 10 has_grow 2 && wait_for 10 has_grow 3; then
    ok "each node added the directories grow-3, grow-4 to its engine"
else bad "grow dirs: $(ls "$T/n1" "$T/n2" "$T/n3" | tr '\n' ' ')"; fi
if wait_for 10 gone_on 1 && wait_for 10 gone_on 2 && wait_for 10 gone_on 3 && wait_for 10 no_gone 1 && wait_for 10 no_gone 2 &&
    wait_for 10 no_gone 3; then
    ok "topic gone: in no node's Metadata, its directories deleted on every node"
else bad "gone still there: $(ls "$T/n1" "$T/n2" "$T/n3" | tr '\n' ' ')"; fi
# KCL2, KAD12: DeleteTopics v0 with the peer marker (client id "ringtail") sent straight to the
# non-controller node is not forwarded (a client forwarded: cli_cluster_forward.sh); it answers NOT_CONTROLLER (41)
nc_err=$($PY - "$(kport $NON)" <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
name = b"grow"
body = struct.pack(">ih", 1, len(name)) + name + struct.pack(">i", 5000)
req = struct.pack(">hhih", 20, 0, 9, 8) + b"ringtail" + body
s.sendall(struct.pack(">i", len(req)) + req)
def exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("closed")
        b += c
    return b
resp = exact(struct.unpack(">i", exact(4))[0])
corr, count, nlen = struct.unpack(">iih", resp[:10])
print(struct.unpack(">h", resp[10 + nlen:12 + nlen])[0])
PYEOF
)
[ "$nc_err" = 41 ] && ok "DeleteTopics as a peer to non-controller node $NON: NOT_CONTROLLER (41)" ||
    bad "DeleteTopics on node $NON answered '$nc_err'"

# ---- producer-id blocks (PB1-PB3) ----
for i in 1 2 3; do init_pids "$i" 4 >"$T/pids$i" 2>"$T/pids$i.err"; done
cat "$T/pids1" "$T/pids2" "$T/pids3" >"$T/pids.all"
if ! grep -q error "$T/pids.all" && [ "$(sort -u "$T/pids.all" | grep -c .)" = 12 ]; then
    ok "12 InitProducerId on three nodes: 12 distinct ids ($(tr '\n' ' ' <"$T/pids.all"))"
else bad "ids: $(cat "$T/pids.all")"; fi
blocks() { awk '{print int($1 / 1000)}' "$T/pids$1" | sort -u | tr '\n' ' '; }
b1=$(blocks 1); b2=$(blocks 2); b3=$(blocks 3)
[ "$b1" != "$b2" ] && [ "$b1" != "$b3" ] && [ "$b2" != "$b3" ] &&
    ok "each node's ids come from its own block of 1000 (blocks $b1/ $b2/ $b3)" ||
    bad "blocks overlap: $b1/ $b2/ $b3"
loads=$(cat "$T"/pids[123].err | awk '/^loads/ {s += $2} END {print s + 0}')
echo "# COORDINATOR_LOAD_IN_PROGRESS answers retried: $loads"
# librdkafka's idempotent producer (InitProducerId through its own retry of 14) on the cluster
$PY - "$(kport $NON)" >"$T/idem.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": "127.0.0.1:" + sys.argv[1], "enable.idempotence": True,
              "acks": "all", "message.timeout.ms": 20000})
errs = []
for i in range(20):
    p.produce("grow", value=b"v%d" % i, partition=i % 5,
              on_delivery=lambda e, m: errs.append(e) if e else None)
left = p.flush(25)
print("undelivered", left, "errors", len(errs), errs[:1])
PYEOF
grep -q "undelivered 0 errors 0" "$T/idem.out" &&
    ok "confluent_kafka idempotent producer (acks=all): 20 records delivered on the cluster" ||
    bad "idempotent producer: $(cat "$T/idem.out")"
grep -q "producer ids \[.*) granted to node $NON" "$T/n$NON.err" &&
    ok "node $NON logged its grant: $(grep -o 'producer ids \[.*) granted' "$T/n$NON.err" | head -1)" ||
    bad "no grant line on node $NON: $(tail -c 400 "$T/n$NON.err")"

# ---- controlled shutdown of a partition leader (MN5) ----
CTL=$(controller_of "$NON"); [ -n "$CTL" ] || CTL=3
X=1; [ "$CTL" = 1 ] && X=2
Y=$(( 6 - CTL - X ))
led_by() { partitions_of "$1" | awk -F'\t' -v n="$2" '$5 == n' | grep -c .; }
before=$(led_by "$CTL" "$X")
[ "$before" -ge 1 ] && ok "node $X leads $before partitions before its SIGTERM" ||
    bad "node $X leads none: $(partitions_of "$CTL")"
EPOCHS_BEFORE=$(partitions_of "$CTL" | awk -F'\t' -v n="$X" '$5 == n {print $3 ":" $7}' | tr '\n' ' ')
T0=$(date +%s%N)
kill -TERM "${PIDS[$X]}"; wait "${PIDS[$X]}"; rc=$?; PIDS[$X]=0
ms=$(( ($(date +%s%N) - T0) / 1000000 ))
after=$(led_by "$CTL" "$X")
if [ $rc = 0 ] && grep -q "controlled shutdown: the controller moved every leadership" "$T/n$X.err" &&
    grep -q "stopped cleanly" "$T/n$X.err"; then
    ok "SIGTERM of node $X: controlled shutdown confirmed, exit 0 after $ms ms"
else bad "node $X: exit $rc after $ms ms: $(tail -c 600 "$T/n$X.err")"; fi
[ "$after" = 0 ] && ok "right after node $X exited, the controller's Metadata names it leader of no partition" ||
    bad "node $X still leads $after: $(partitions_of "$CTL")"
raised=1
for pe in $EPOCHS_BEFORE; do
    p=${pe%%:*}; e=${pe##*:}
    now=$(partitions_of "$CTL" | awk -F'\t' -v p="$p" '$2 == "grow" && $3 == p {print $7}')
    [ -n "$now" ] && [ "$now" -gt "$e" ] || raised=0
done
[ $raised = 1 ] && ok "each moved partition's leader epoch rose ($EPOCHS_BEFORE→ raised)" ||
    bad "epochs: before $EPOCHS_BEFORE now $(partitions_of "$CTL")"
status_of "$CTL" | grep -q "^node	$X	-	fenced" && ok "cluster status shows the stopped node $X as fenced" ||
    bad "status after node $X's shutdown: $(status_of "$CTL")"
grep -q "node $X asks to shut down" "$T/n$CTL.err" && ok "the controller logged node $X's shutdown request" ||
    bad "no shutdown line on the controller: $(tail -c 400 "$T/n$CTL.err")"
start_node "$X"
if wait_for 30 all_list "1 2 3 " "$CTL" "$Y" "$X"; then ok "node $X restarted: registered and listed again"
else bad "after restart: '$(brokers_of "$CTL")'"; fi
init_pids "$X" 2 >"$T/pidsX" 2>/dev/null
if ! grep -q error "$T/pidsX" && ! grep -qxFf "$T/pidsX" "$T/pids.all" &&
    [ "$(awk '{print int($1 / 1000)}' "$T/pidsX" | sort -u)" != "$(blocks "$X" | tr -d ' ')" ]; then
    ok "after its restart node $X hands out ids from a new block ($(tr '\n' ' ' <"$T/pidsX"))"
else bad "ids after restart: $(cat "$T/pidsX") (before: $(cat "$T/pids$X"))"; fi

# ---- SIGTERM of the controller: the role is handed over first ----
T0=$(date +%s%N)
kill -TERM "${PIDS[$CTL]}"; wait "${PIDS[$CTL]}"; rc=$?; PIDS[$CTL]=0
ms=$(( ($(date +%s%N) - T0) / 1000000 ))
NEWC=$(controller_of "$X")
if [ $rc = 0 ] && grep -q "handing the controller role" "$T/n$CTL.err" &&
    grep -q "controlled shutdown: the controller moved" "$T/n$CTL.err"; then
    ok "SIGTERM of controller $CTL: role handed over, controlled shutdown confirmed, exit 0 after $ms ms"
else bad "controller $CTL: exit $rc after $ms ms: $(tail -c 800 "$T/n$CTL.err")"; fi
[ -n "$NEWC" ] && [ "$NEWC" != "$CTL" ] && [ "$(led_by "$NEWC" "$CTL")" = 0 ] &&
    ok "node $NEWC is controller now; node $CTL leads nothing" ||
    bad "after the controller's stop: controller '$NEWC': $(partitions_of "$X")"

# ---- PB3: a node whose ids run out with no controller to ask answers 14, never a used id ----
kill -KILL "${PIDS[$Y]}"; wait "${PIDS[$Y]}" 2>/dev/null; PIDS[$Y]=0 # node X alone: no quorum
$PY - "$(kport "$X")" "$T/exhaust.ids" >"$T/exhaust.out" 2>&1 <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
def exact(k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c: raise SystemExit("closed")
        b += c
    return b
ids, errs = [], {}
for i in range(5000):
    req = struct.pack(">hhih", 22, 0, i, 1) + b"t" + struct.pack(">hi", -1, 60000)
    s.sendall(struct.pack(">i", len(req)) + req)
    r = exact(struct.unpack(">i", exact(4))[0])[4:]
    thr, err, pid, ep = struct.unpack(">ihqh", r[:16])
    if err == 0: ids.append(pid)
    else: errs[err] = errs.get(err, 0) + 1
    if err == 14: break
print("ids", len(ids), "distinct", len(set(ids)), "errors", errs)
with open(sys.argv[2], "w") as f:
    f.write("".join("%d\n" % i for i in ids))
PYEOF
if grep -q "errors {14: 1}" "$T/exhaust.out" && awk '{ if ($2 != $4) exit 1 }' "$T/exhaust.out" &&
    ! grep -qxFf "$T/pids.all" "$T/exhaust.ids"; then
    ok "node $X alone, its ids used up: InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS (14) ($(cat "$T/exhaust.out"))"
else bad "exhausting node $X: $(cat "$T/exhaust.out")"; fi

for i in 1 2 3; do
    [ "${PIDS[$i]}" = 0 ] && continue
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    if [ $rc = 0 ] && grep -q "stopped cleanly" "$T/n$i.err"; then ok "node $i: SIGTERM stops it cleanly"
    else bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"; fi
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
