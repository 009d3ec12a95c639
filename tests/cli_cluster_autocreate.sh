#!/usr/bin/env bash
# cli_cluster_autocreate.sh — auto-creation in a cluster (autocreate.c AC1, handle_cluster.c
# KCL1; docs/cluster.md): three `ringtail serve --voters ...` nodes with --num-partitions 2
# --default-replication-factor 3. A Metadata request allowing auto-creation (kcat producing to
# a new topic) sent to a node that is not the controller creates the topic through the
# controller (the CreateTopics forwarded, CA5) and to the controller itself (created there):
# every node then lists it with 2 partitions and 3 replicas each, and the produced message is
# read back; a raw Metadata v4 allowing it is answered LEADER_NOT_AVAILABLE (5) and the topic
# appears, one not allowing it UNKNOWN_TOPIC_OR_PARTITION (3) and nothing is created; a single broker refuses --default-replication-factor 2 (it needs
# --voters).
#
# usage: bash tests/cli_cluster_autocreate.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_autocreate.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cac-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
: >"$T/out"; : >"$T/err" # bad() shows them
SESSION_MS=2000
. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # wait_for, all_list, status_of
trap cluster_cleanup EXIT

for i in 1 2 3; do # start_node's line, with this test's topic options
    mkdir -p "$T/n$i"
    c="C$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:$(kport "$i")" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS --num-partitions 2 \
        --default-replication-factor 3 >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
done
controller_of() { status_of "$1" | sed -n 's/^controller\t//p'; }
has_controller() { [ -n "$(controller_of 1)" ] && [ "$(controller_of 1)" != -1 ]; }
if wait_for 30 all_list "1 2 3 " 1 2 3 && wait_for 30 has_controller; then
    ok "three nodes listed, controller $(controller_of 1)"
else
    bad "the cluster did not form"
    echo "0 passed, 1 failed"
    exit 1
fi
CTL=$(controller_of 1)
OTHER=1
[ "$CTL" = 1 ] && OTHER=2

# rows_of NODE TOPIC: "P:replicas " per partition of TOPIC in NODE's status
rows_of() {
    status_of "$1" | awk -F'\t' -v t="$2" '$1 == "partition" && $2 == t { printf "%s:%s ", $3, $9 }'
}
three_replicas_everywhere() { # TOPIC: every node lists 2 partitions, each with 3 replicas
    local i r
    for i in 1 2 3; do
        r=$(rows_of "$i" "$1")
        [ "$(wc -w <<<"$r")" = 2 ] || return 1
        grep -Eq '^0:[1-3],[1-3],[1-3] 1:[1-3],[1-3],[1-3] $' <<<"$r" || return 1
    done
}
for node in "$OTHER" "$CTL"; do
    topic=ac$node
    echo "hello-$node" | timeout 30 kcat -P -b "127.0.0.1:$(kport "$node")" -t "$topic" \
        -p 0 >"$T/out" 2>"$T/err"
    RC=$?
    if [ "$RC" = 0 ] && wait_for 20 three_replicas_everywhere "$topic"; then
        ok "produce at node $node (controller $CTL) auto-created $topic: 2 partitions x 3 replicas on every node"
    else
        bad "auto-creation through node $node: $(rows_of 1 "$topic")"
    fi
    got=$(timeout 20 kcat -C -b "127.0.0.1:$(kport "$node")" -t "$topic" -p 0 -o beginning -c 1 \
        -e 2>"$T/err")
    [ "$got" = "hello-$node" ] && ok "the message produced to $topic is read back" ||
        bad "read back of $topic: '$got'"
done
grep -q "asked the controller to create topic 'ac$OTHER'" "$T/n$OTHER.err" &&
    ok "node $OTHER logged asking the controller" || bad "no auto-creation line in node $OTHER's log"

# meta_err NODE TOPIC ALLOW: the topic's error code in a raw Metadata v4 answer from NODE, the
# request's allow_auto_topic_creation ALLOW (0 or 1)
meta_err() {
    /usr/bin/python3 - "$(kport "$1")" "$2" "$3" <<'PYEOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
t, cid = sys.argv[2].encode(), b"t"
body = (struct.pack(">hhih", 3, 4, 5, len(cid)) + cid + struct.pack(">ih", 1, len(t)) + t +
        struct.pack(">b", int(sys.argv[3])))
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
n, = struct.unpack_from(">i", r, at); at += 4
for _ in range(n):  # brokers: id, host, port, rack
    at += 4
    hl, = struct.unpack_from(">h", r, at); at += 2 + hl + 4
    rl, = struct.unpack_from(">h", r, at); at += 2 + max(rl, 0)
cl, = struct.unpack_from(">h", r, at); at += 2 + max(cl, 0) + 4  # cluster id, controller
at += 4  # one topic
print(struct.unpack_from(">h", r, at)[0])
PYEOF
}
e=$(meta_err "$OTHER" nocreate 0)
sleep 1
if [ "$e" = 3 ] && [ -z "$(rows_of "$CTL" nocreate)" ]; then
    ok "Metadata v4 with allow_auto_topic_creation false: UNKNOWN_TOPIC_OR_PARTITION, nothing created"
else
    bad "nocreate (allow false): error '$e', rows $(rows_of "$CTL" nocreate)"
fi
e=$(meta_err "$OTHER" yescreate 1)
if [ "$e" = 5 ] && wait_for 20 three_replicas_everywhere yescreate; then
    ok "Metadata v4 allowing it: LEADER_NOT_AVAILABLE (5), then the topic on every node"
else
    bad "yescreate (allow true): error '$e', rows $(rows_of "$CTL" yescreate)"
fi

run serve "$T/single" --listen 127.0.0.1:0 --default-replication-factor 2
expect "a single broker refuses --default-replication-factor 2" 2 "need --voters"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
