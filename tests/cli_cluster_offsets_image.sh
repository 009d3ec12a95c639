#!/usr/bin/env bash
# cli_cluster_offsets_image.sh — a group coordinator answers OffsetFetch for a topic it holds no
# partition of (handle_cluster.c KCL4; docs/cluster.md): three `ringtail serve --voters ...`
# nodes; a topic of one partition with replication factor 1 (confluent_kafka's AdminClient);
# for a group whose coordinator (FindCoordinator) is not that partition's replica, a raw
# OffsetFetch v1 of the partition answers NONE with offset -1 (nothing committed, as Kafka's
# group coordinator answers), so does one of a partition the topic does not have (Kafka's v1+
# does not look: handle_offsets.c KO2), and v0 of that one UNKNOWN_TOPIC_OR_PARTITION (3, v0
# looks, from the image: KCL4); an OffsetCommit of the partition there is
# taken and read back (rt_options.partitions_elsewhere).
#
# usage: bash tests/cli_cluster_offsets_image.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_offsets_image.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-coi-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
: >"$T/out"; : >"$T/err" # bad() shows them
PY=/usr/bin/python3
SESSION_MS=2000
. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, wait_for, all_list, status_of
trap cluster_cleanup EXIT

for i in 1 2 3; do start_node "$i"; done
offsets_led() { status_of 1 | awk -F'\t' '$1 == "partition" && $2 == "__consumer_offsets" && $5 != -1 { n++ } END { exit !(n > 0) }'; }
if wait_for 30 all_list "1 2 3 " 1 2 3 && wait_for 30 offsets_led; then
    ok "three nodes listed, __consumer_offsets led"
else
    bad "the cluster did not form"
    echo "$passed passed, $failed failed"
    exit 1
fi

$PY - "127.0.0.1:$K1" >"$T/out" 2>"$T/err" <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(20):  # the controller may not be known for the first instants
    try:
        a.create_topics([NewTopic("oi", num_partitions=1, replication_factor=1)])["oi"].result(15)
        break
    except Exception as e:
        print("create: %s" % e, file=sys.stderr)
        time.sleep(0.5)
else:
    raise SystemExit("could not create oi")
PYEOF
RC=$?
leader() { status_of 1 | awk -F'\t' '$1 == "partition" && $2 == "oi" && $3 == 0 { print $5 }'; }
has_leader() { [ -n "$(leader)" ] && [ "$(leader)" != -1 ]; }
if [ "$RC" = 0 ] && wait_for 20 has_leader; then
    ok "topic oi (1 partition, replication factor 1) led by node $(leader)"
else
    bad "creating topic oi"
fi
LEADER=$(leader)

# raw.py PORT...: for groups g0..g199, the first whose coordinator (FindCoordinator v0 asked of
# the first port) is not node $LEADER; then OffsetFetch v1 of oi partitions 0 and 7 at it:
# prints "GROUP COORDINATOR err0 offset0 err7"
$PY - "$LEADER" "$K1" "$K2" "$K3" >"$T/out" 2>"$T/err" <<'PYEOF'
import socket, struct, sys
leader, ports = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
def s16(b): return struct.pack(">h", len(b)) + b
def call(port, key, ver, body):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = struct.pack(">hhi", key, ver, 1) + s16(b"t") + body
    s.sendall(struct.pack(">i", len(req)) + req)
    def read(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise SystemExit("closed")
            b += c
        return b
    r = read(struct.unpack(">i", read(4))[0])
    s.close()
    return r[4:]  # past the correlation id
for g in range(200):
    group = b"g%d" % g
    r = call(ports[0], 10, 0, s16(group))
    err, node = struct.unpack_from(">hi", r, 0)
    if err or node == leader:
        continue
    hl, = struct.unpack_from(">h", r, 6)
    port, = struct.unpack_from(">i", r, 8 + hl)
    def fetch(ver):  # v0 and v1 share their layouts
        r = call(port, 9, ver, s16(group) + struct.pack(">i", 1) + s16(b"oi") +
                 struct.pack(">iii", 2, 0, 7))
        at = 4  # past the topics count (no throttle time)
        tl, = struct.unpack_from(">h", r, at); at += 2 + tl
        at += 4  # partitions count
        out = []
        for _ in range(2):
            p, off = struct.unpack_from(">iq", r, at); at += 12
            ml, = struct.unpack_from(">h", r, at); at += 2 + max(ml, 0)
            e, = struct.unpack_from(">h", r, at); at += 2
            out.append((p, off, e))
        return out
    out, out0 = fetch(1), fetch(0)
    print(group.decode(), node, out[0][2], out[0][1], out[1][2], out[1][1], out0[1][2])
    break
else:
    raise SystemExit("no group coordinated by a node other than %d" % leader)
PYEOF
RC=$?
read -r grp coord e0 o0 e7 o7 e7v0 <"$T/out"
if [ "$RC" = 0 ] && [ "$coord" != "$LEADER" ] && [ "$e0" = 0 ] && [ "$o0" = -1 ]; then
    ok "group $grp's coordinator, node $coord (not oi's replica $LEADER), answers OffsetFetch of oi-0: NONE, offset -1"
else
    bad "OffsetFetch of oi-0 at a coordinator without the topic: $(cat "$T/out")"
fi
[ "$RC" = 0 ] && [ "$e7" = 0 ] && [ "$o7" = -1 ] &&
    ok "and of oi-7 (no such partition): NONE, offset -1 (Kafka's v1+ does not look: KO2)" ||
    bad "OffsetFetch v1 of oi-7: $(cat "$T/out")"
[ "$RC" = 0 ] && [ "$e7v0" = 3 ] &&
    ok "OffsetFetch v0 of oi-7: UNKNOWN_TOPIC_OR_PARTITION (v0 looks, as Kafka's)" ||
    bad "OffsetFetch v0 of oi-7: $(cat "$T/out")"

# OffsetCommit of oi-0 for that group, at its coordinator (no replica of oi): taken and read
# back (the engine's rt_options.partitions_elsewhere; before it the engine refused it,
# UNKNOWN_TOPIC_OR_PARTITION: librdkafka 0099 on the cluster)
$PY - "127.0.0.1:$K1" "$grp" >"$T/commit.out" 2>"$T/commit.err" <<'PYEOF'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "enable.auto.commit": False})
try:
    r = c.commit(offsets=[TopicPartition("oi", 0, 5)], asynchronous=False)
    print("commit", r[0].error.name() if r[0].error else "NONE")
except Exception as e:
    print("commit", e.args[0].name() if e.args and hasattr(e.args[0], "name") else e)
print("committed", c.committed([TopicPartition("oi", 0)], timeout=15)[0].offset)
c.close()
PYEOF
if [ "$(tr '\n' ' ' <"$T/commit.out")" = "commit NONE committed 5 " ]; then
    ok "OffsetCommit of oi-0 at node $coord (not its replica): NONE, read back 5"
else
    bad "OffsetCommit at a coordinator without the topic: $(cat "$T/commit.out") $(tail -c 300 "$T/commit.err")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
