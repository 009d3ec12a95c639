#!/usr/bin/env bash
# cli_cluster_meta.sh — issue 24's second block (docs/cluster.md §7): three `ringtail serve
# --voters ...` nodes register with the controller and heartbeat (metadata_node.h MN1); kcat -L
# and confluent_kafka's AdminClient see three brokers and the controller (handle_cluster.c
# KCL1); a topic of replication factor 3 and 6 partitions created through a non-controller node
# (the client is sent to the controller; a CreateTopics sent straight to that node is forwarded,
# NOT_CONTROLLER when sent as a peer: KCL2) is placed round-robin (MN3), every node's
# Metadata and `ringtail cluster status` show the same leaders and ISR, and every node has the
# partition directories (MN2); a replication factor above the node count is
# INVALID_REPLICATION_FACTOR; a SIGKILLed non-controller is fenced (not listed, "fenced" in
# status) within the session timeout, and listed again once restarted; SIGTERM stops each node.
#
# usage: bash tests/cli_cluster_meta.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_meta.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cmeta-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
SESSION_MS=2000

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport

start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
brokers_of() { # brokers_of I : the broker ids node I's Metadata lists, sorted, space-separated
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  broker \([0-9]*\) at.*/\1/p' | sort | tr '\n' ' '
}
# wait_for SECONDS COMMAND... : until the command succeeds
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.1; done
}
all_list() { local want=$1; shift; for i in "$@"; do [ "$(brokers_of "$i")" = "$want" ] || return 1; done; }
status_of() { "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$1")" 2>&1; }
# the test topic's partitions (not __consumer_offsets, which the controller creates itself)
partitions_of() { status_of "$1" | grep '^partition' | grep -v '^partition	__' | sort; }

for i in 1 2 3; do start_node "$i"; done
T0=$(date +%s%N)
if wait_for 30 all_list "1 2 3 " 1 2 3; then
    ok "kcat -L on every node lists brokers 1 2 3 ($(( ($(date +%s%N) - T0) / 1000000 )) ms after start)"
else
    bad "brokers listed: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'; $(tail -c 600 "$T/n1.err")"
fi
CTL=$(status_of 1 | sed -n 's/^controller\t//p')
NON=1; [ "$CTL" = 1 ] && NON=2
OTHER=$(( 6 - CTL - NON ))
if [ -n "$CTL" ] && [ "$CTL" -ge 1 ] && [ "$CTL" -le 3 ]; then ok "cluster status names controller $CTL"
else bad "cluster status: no controller: $(status_of 1)"; CTL=3; NON=1; OTHER=2; fi

# confluent_kafka's AdminClient, bootstrapped on a non-controller node only
$PY - "$(kport $NON)" "$CTL" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
port, ctl = sys.argv[1], int(sys.argv[2])
a = AdminClient({"bootstrap.servers": "127.0.0.1:" + port})
md = a.list_topics(timeout=10)
print("brokers", sorted(md.brokers), "controller", md.controller_id)
# NOT_CONTROLLER (the controller moved, as at a first election on a busy machine) is retried,
# as Kafka's Java AdminClient does
for t, n, rf in (("rf3", 6, 3), ("rf4", 1, 4)):
    for attempt in range(5):
        try:
            a.create_topics([NewTopic(t, num_partitions=n, replication_factor=rf)],
                            request_timeout=15)[t].result()
            print(t, "created"); break
        except Exception as e:
            if e.args[0].name() != "NOT_CONTROLLER" or attempt == 4:
                print(t, "error", e.args[0].name()); break
            time.sleep(1)
PYEOF
grep -q "brokers \[1, 2, 3\] controller $CTL" "$T/admin.out" &&
    ok "AdminClient (confluent_kafka) sees brokers [1, 2, 3] and controller $CTL" ||
    bad "AdminClient: $(cat "$T/admin.out")"
grep -q "rf3 created" "$T/admin.out" &&
    ok "CreateTopics rf3 (RF 3, 6 partitions) bootstrapped on non-controller node $NON" ||
    bad "rf3: $(cat "$T/admin.out")"
grep -q "rf4 error INVALID_REPLICATION_FACTOR" "$T/admin.out" &&
    ok "RF 4 on three nodes: INVALID_REPLICATION_FACTOR" || bad "rf4: $(cat "$T/admin.out")"

# KCL2, KAD12: CreateTopics v0 with the peer marker (client id "ringtail") sent straight to the
# non-controller node is not forwarded (a client forwarded: cli_cluster_forward.sh); it answers NOT_CONTROLLER (41)
nc_err=$($PY - "$(kport $NON)" <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
name = b"direct"
body = struct.pack(">i", 1) + struct.pack(">h", len(name)) + name + struct.pack(">ihii", 1, 1, 0, 0)
body += struct.pack(">i", 5000)
req = struct.pack(">hhih", 19, 0, 9, 8) + b"ringtail" + body
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
[ "$nc_err" = 41 ] && ok "CreateTopics as a peer to non-controller node $NON: NOT_CONTROLLER (41)" ||
    bad "CreateTopics on node $NON answered '$nc_err'"

six_on() { [ "$(partitions_of "$1" | grep -c $'^partition\trf3\t')" = 6 ]; }
if wait_for 10 six_on 1 && wait_for 10 six_on 2 && wait_for 10 six_on 3 &&
    [ "$(partitions_of 1)" = "$(partitions_of 2)" ] && [ "$(partitions_of 1)" = "$(partitions_of 3)" ]; then
    ok "every node's Metadata shows the same 6 partitions (leaders, epochs, replicas, ISR)"
else
    bad "partitions differ: $(partitions_of 1) // $(partitions_of 2) // $(partitions_of 3)"
fi
# leaders round-robin (each node leads two), replicas = ISR = all three, epoch 0
P=$(partitions_of "$CTL")
leaders=$(echo "$P" | cut -f5 | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')
if [ "$leaders" = "2 2 2 " ] && ! echo "$P" | awk -F'\t' '$7 != 0 || $11 != $9 || length($9) != 5' | grep -q .; then
    ok "placement: each node leads 2 partitions; epoch 0; ISR = replicas, 3 each"
else
    bad "placement: $P"
fi
has_dirs() { for p in 0 1 2 3 4 5; do [ -d "$T/n$1/rf3-$p" ] || return 1; done; }
if wait_for 10 has_dirs 1 && wait_for 10 has_dirs 2 && wait_for 10 has_dirs 3; then
    ok "each node has the partition directories rf3-0..5 it is a replica of"
else bad "partition directories: $(ls "$T/n1" "$T/n2" "$T/n3" | tr '\n' ' ')"; fi
[ ! -e "$T/n$NON/rf4-0" ] && ok "the refused topic made no directory" || bad "rf4-0 exists"

# SIGKILL a non-controller: fenced within the session timeout (plus a heartbeat interval)
CNOW=$(status_of 1 | sed -n 's/^controller\t//p')
if [ -n "$CNOW" ] && [ "$CNOW" != "$CTL" ] && [ "$CNOW" -ge 1 ]; then # the controller moved meanwhile
    CTL=$CNOW; NON=1; [ "$CTL" = 1 ] && NON=2; OTHER=$(( 6 - CTL - NON ))
fi
kill -KILL "${PIDS[$NON]}"; wait "${PIDS[$NON]}" 2>/dev/null; PIDS[$NON]=0
WANT=$(echo "$CTL $OTHER" | tr ' ' '\n' | sort | tr '\n' ' ')
T0=$(date +%s%N)
if wait_for 15 all_list "$WANT" "$CTL" "$OTHER"; then
    ok "SIGKILL of node $NON: fenced, no longer listed ($(( ($(date +%s%N) - T0) / 1000000 )) ms; session $SESSION_MS ms)"
else
    bad "after SIGKILL of $NON: listed '$(brokers_of "$CTL")'"
fi
status_of "$CTL" | grep -q "^node	$NON	-	fenced" && ok "cluster status shows node $NON fenced" ||
    bad "status: $(status_of "$CTL")"
grep -q "fencing node $NON" "$T/n$CTL.err" && ok "the controller logged the fence" ||
    bad "no fence line: $(tail -c 400 "$T/n$CTL.err")"
# its leaderships and ISR places moved to the live replicas (MI6), epochs raised
moved() {
    local P; P=$(partitions_of "$CTL")
    [ "$(echo "$P" | grep -c .)" = 6 ] &&
        ! echo "$P" | awk -F'\t' -v n="$NON" '$5 == n || $5 == -1 || ("," $11 ",") ~ ("," n ",")' | grep -q . &&
        ! echo "$P" | awk -F'\t' '$7 != 1' | grep -q .
}
if wait_for 10 moved; then ok "node $NON's leaderships moved to ISR members, it left every ISR, epochs 1"
else bad "after the fence: $(partitions_of "$CTL")"; fi

start_node "$NON"
T0=$(date +%s%N)
if wait_for 30 all_list "1 2 3 " 1 2 3; then
    ok "node $NON restarted: registered and listed again ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else
    bad "after restart: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'; $(tail -c 600 "$T/n$NON.err")"
fi

for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    if [ $rc = 0 ] && grep -q "stopped cleanly" "$T/n$i.err"; then ok "node $i: SIGTERM stops it cleanly"
    else bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"; fi
done

# a single broker (no --voters): cluster status still answers, from its one-node Metadata
mkdir -p "$T/s"
"$RT" serve "$T/s" --listen "127.0.0.1:$K1" --threads 1 >"$T/s.out" 2>"$T/s.err" &
SP=$!
wait_for 10 grep -q "listening on" "$T/s.out"
run cluster status --bootstrap "127.0.0.1:$K1"
expect "cluster status on a single broker: itself, controller 0" 0 "^controller.0"
kill -TERM $SP; wait $SP
run cluster status
expect "cluster status without --bootstrap is a usage error" 2 "needs --bootstrap"
run cluster status --bootstrap "127.0.0.1:$K1" --replica-listener 2-127.0.0.1:9
expect "cluster status --replica-listener without ID@HOST:PORT is a usage error" 2 "ID@HOST:PORT"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
