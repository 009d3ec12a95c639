#!/usr/bin/env bash
# cli_cluster_config.sh — topic configs through the controller (issue 24 item 2; docs/cluster.md
# §7.1): three `ringtail serve --voters ...` nodes. IncrementalAlterConfigs sent (raw) to a node
# that is not the controller is forwarded to it (controller_admin.h CA5) and committed as CONFIG
# records (CA3, metadata_image.h MI7), at v0 and at the flexible v1 (a DELETE too);
# confluent_kafka's AdminClient alters and describes too;
# DescribeConfigs answers the same from every node (handle_admin.c KAD11); each node applies the
# overrides to its engine (metadata_node.h MN6); min.insync.replicas comes from the image: with
# 3 and a follower down acks=all gets NOT_ENOUGH_REPLICAS (19), with 2 it goes through; an
# invalid value is INVALID_CONFIG (40) and changes nothing; a node restarted after missing a
# change replays the log and shows the new values. Admin requests forwarded (handle_admin.c
# KAD12, KIP-590): confluent_kafka's AdminClient bootstrapped at a non-controller creates a
# topic with retention.ms and cleanup.policy (in its TOPIC record), validate_only creates
# nothing, a bad or unknown config is INVALID_CONFIG (40), it adds partitions and deletes a
# topic; every node's Metadata and DescribeConfigs agree; raw CreateTopics, CreatePartitions and
# DeleteTopics v0 at the non-controller are forwarded (a controller's error relayed), but a
# client calling itself "ringtail" (the peer marker) gets NOT_CONTROLLER (41); kafkajs's
# createTopics through the non-controller works, and kafkajs produces (idempotent, acks=all) to
# the cluster and reads it back in a consumer group; a node left alone (no controller known) answers
# CreateTopics NOT_CONTROLLER, and one restarted alone, never caught up, serves nothing (KS7).
#
# usage: bash tests/cli_cluster_config.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_config.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ccfg-XXXXXX")
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
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
SESSION_MS=2000

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, brokers_of, wait_for, all_list, status_of
controller_of() { status_of "$1" | sed -n 's/^controller\t//p'; }
part_of() { status_of "$1" | grep $'^partition\tcfg\t0\t'; }
# topics_of NODE: "name:partitions " of every topic kcat -L lists on that node but the internal
# ones (__consumer_offsets is a cluster topic too), sorted
topics_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  topic "\([^"]*\)" with \([0-9]*\) partitions.*/\1:\2/p' | grep -v '^__' |
        sort | tr '\n' ' '
}

# raw Kafka requests (v0, so the test pins the bytes it means): incalter NODE KEY VALUE|-null
# [KEY VALUE]... prints the error code of the one TOPIC resource cfg; describe NODE KEY...
# prints KEY=VALUE per key asked (DescribeConfigs v0, every config of the topic $TOPIC, else
# cfg); create_as / partitions / delete print the error code of one CreateTopics /
# CreatePartitions / DeleteTopics v0.
cat >"$T/raw.py" <<'PYEOF'
import os, socket, struct, sys
def s16(b): return struct.pack(">h", len(b)) + b
def call(port, key, ver, body, client=b"test"):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    req = struct.pack(">hhih", key, ver, 5, len(client)) + client + body
    s.sendall(struct.pack(">i", len(req)) + req)
    def exact(k):
        b = b""
        while len(b) < k:
            c = s.recv(k - len(b))
            if not c: raise SystemExit("closed")
            b += c
        return b
    r = exact(struct.unpack(">i", exact(4))[0]); s.close(); return r[4:]
class R:
    def __init__(self, b): self.b, self.at = b, 0
    def take(self, f):
        v = struct.unpack_from(f, self.b, self.at); self.at += struct.calcsize(f); return v[0]
    def str(self):
        n = self.take(">h")
        if n < 0: return None
        v = self.b[self.at:self.at + n].decode(); self.at += n; return v
op, port = sys.argv[1], int(sys.argv[2])
if op == "incalter":
    kv = sys.argv[3:]
    cfgs = b""
    for i in range(0, len(kv), 2):
        v = kv[i + 1]
        cfgs += s16(kv[i].encode()) + struct.pack(">b", 1 if v == "-null" else 0) + \
            (struct.pack(">h", -1) if v == "-null" else s16(v.encode()))
    body = struct.pack(">ib", 1, 2) + s16(b"cfg") + struct.pack(">i", len(kv) // 2) + cfgs + b"\0"
    r = R(call(port, 44, 0, body))
    r.take(">i"); r.take(">i")
    err = r.take(">h"); msg = r.str()
    print(err, msg or "")
elif op == "incalter1": # v1, flexible (compact strings, tagged fields): KEY VALUE
    def cs(b): return bytes([len(b) + 1]) + b
    k, v = sys.argv[3].encode(), sys.argv[4].encode()
    body = bytes([2]) + struct.pack(">b", 2) + cs(b"cfg") + bytes([2]) + cs(k) + \
        struct.pack(">b", 0) + cs(v) + b"\0" + b"\0" + b"\0" + b"\0"
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    req = struct.pack(">hhih", 44, 1, 6, 4) + b"test" + b"\0" + body
    s.sendall(struct.pack(">i", len(req)) + req)
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c: raise SystemExit("closed")
            b += c
        return b
    r = exact(struct.unpack(">i", exact(4))[0])
    # correlation i32, header tags, throttle i32, responses count+1, error_code i16
    assert r[4] == 0 and r[9] == 2, r
    print(struct.unpack(">h", r[10:12])[0])
elif op == "describe": # the topic: $TOPIC, else cfg
    body = struct.pack(">ib", 1, 2) + s16(os.environ.get("TOPIC", "cfg").encode()) + \
        struct.pack(">i", -1)
    r = R(call(port, 32, 0, body))
    r.take(">i"); r.take(">i")
    err = r.take(">h"); r.str(); r.take(">b"); r.str()
    got = {}
    for _ in range(r.take(">i")):
        k = r.str(); v = r.str(); r.take(">b"); r.take(">b"); r.take(">b")
        got[k] = v
    print(" ".join("%s=%s" % (k, got.get(k)) for k in sys.argv[3:]) if err == 0 else "error %d" % err)
elif op == "create_as": # CreateTopics v0 of topic argv[4] (1 partition, RF 1) with client id argv[3]
    body = struct.pack(">i", 1) + s16(sys.argv[4].encode()) + struct.pack(">ihii", 1, 1, 0, 0) + \
        struct.pack(">i", 15000)
    r = R(call(port, 19, 0, body, sys.argv[3].encode()))
    r.take(">i"); r.str()
    print(r.take(">h"))
elif op == "partitions": # CreatePartitions v0: topic argv[3] to argv[4] partitions
    body = struct.pack(">i", 1) + s16(sys.argv[3].encode()) + struct.pack(">ii", int(sys.argv[4]), -1) + \
        struct.pack(">ib", 15000, 0)
    r = R(call(port, 37, 0, body))
    r.take(">i"); r.take(">i"); r.str()
    print(r.take(">h"))
elif op == "delete": # DeleteTopics v0 of topic argv[3]
    body = struct.pack(">i", 1) + s16(sys.argv[3].encode()) + struct.pack(">i", 15000)
    r = R(call(port, 20, 0, body))
    r.take(">i"); r.str()
    print(r.take(">h"))
PYEOF
incalter() { local n=$1; shift; $PY "$T/raw.py" incalter "$(kport "$n")" "$@" 2>&1; }
describe() { local n=$1; shift; $PY "$T/raw.py" describe "$(kport "$n")" "$@" 2>&1; }

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered and listed"
else bad "brokers listed: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi
CTL=$(controller_of 1)
[ -n "$CTL" ] && ok "controller is node $CTL" || { bad "no controller"; CTL=3; }
NON=1; [ "$CTL" = 1 ] && NON=2

$PY - "$(kport "$CTL")" >"$T/create.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": "127.0.0.1:" + sys.argv[1]})
a.create_topics([NewTopic("cfg", 1, 3)], request_timeout=15)["cfg"].result()
print("created")
PYEOF
grep -q created "$T/create.out" && ok "topic cfg created (1 partition, RF 3)" || bad "create: $(cat "$T/create.out")"
isr3() { part_of "$CTL" | awk -F'\t' '{ exit !(split($11, a, ",") == 3) }'; }
wait_for 15 isr3 && ok "cfg-0 has an ISR of three: $(part_of "$CTL" | cut -f4-11 | tr '\t' ' ')" ||
    bad "cfg-0: $(part_of "$CTL")"

# ---- IncrementalAlterConfigs to a non-controller node: forwarded, committed, seen everywhere ----
got=$(incalter "$NON" retention.ms 3600000 min.insync.replicas 2)
[ "$got" = "0 " ] && ok "IncrementalAlterConfigs via non-controller node $NON: NONE (forwarded to node $CTL)" ||
    bad "IncrementalAlterConfigs via node $NON: '$got'"
want="retention.ms=3600000 min.insync.replicas=2"
same_on() { [ "$(describe "$1" retention.ms min.insync.replicas)" = "$2" ]; }
everywhere() { # everywhere TOPIC "K=V ..." K...: every node describes it, every engine took it (MN6)
    local topic=$1 want=$2 i n=0; shift 2
    shows() { [ "$(TOPIC=$topic describe "$1" "${@:2}")" = "$want" ]; }
    for i in 1 2 3; do
        if wait_for 10 shows "$i" "$@"; then ok "DescribeConfigs of $topic on node $i: $want"
        else bad "DescribeConfigs of $topic on node $i: '$(TOPIC=$topic describe "$i" "$@")'"; fi
    done
    for i in 1 2 3; do
        wait_for 10 grep -q "$topic: $# config overrides from the log" "$T/n$i.err" && n=$((n + 1))
    done
    if [ "$n" = 3 ]; then ok "every node's engine took $topic's $# overrides from the log (MN6)"
    else bad "engines applied on $n nodes: $(grep -h 'config overrides' "$T"/n?.err)"; fi
}
everywhere cfg "$want" retention.ms min.insync.replicas

# the flexible version (v1: compact strings, tagged fields) is forwarded at its own version
got=$($PY "$T/raw.py" incalter1 "$(kport "$NON")" segment.ms 86400000 2>&1)
seg_on() { [ "$(describe "$1" segment.ms)" = "segment.ms=86400000" ]; }
[ "$got" = 0 ] && wait_for 10 seg_on "$CTL" && wait_for 10 seg_on "$NON" &&
    ok "IncrementalAlterConfigs v1 (flexible) via node $NON: NONE, segment.ms=86400000 on nodes $CTL and $NON" ||
    bad "IncrementalAlterConfigs v1 via node $NON: '$got', $(describe "$CTL" segment.ms)"
got=$(incalter "$NON" segment.ms -null)
seg_default() { [ "$(describe "$1" segment.ms)" = "segment.ms=604800000" ]; }
[ "$got" = "0 " ] && wait_for 10 seg_default "$NON" && wait_for 10 seg_default "$CTL" &&
    ok "DELETE of segment.ms via node $NON: back to Kafka's default on nodes $NON and $CTL" ||
    bad "DELETE of segment.ms: '$got', $(describe "$NON" segment.ms)"

# ---- invalid values: INVALID_CONFIG (40), nothing changed ----
got=$(incalter "$NON" retention.ms abc)
case "$got" in 40\ *) ok "retention.ms=abc via node $NON: INVALID_CONFIG (40): ${got#40 }" ;;
*) bad "retention.ms=abc: '$got'" ;; esac
got=$(incalter "$CTL" min.insync.replicas 0)
case "$got" in 40\ *) ok "min.insync.replicas=0 on the controller: INVALID_CONFIG (40)" ;;
*) bad "min.insync.replicas=0: '$got'" ;; esac
same_on "$NON" "$want" && ok "the refused values changed nothing" ||
    bad "after the refusals: '$(describe "$NON" retention.ms min.insync.replicas)'"

# ---- confluent_kafka AdminClient: AlterConfigs (replace) and DescribeConfigs ----
$PY - "$(kport "$NON")" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": "127.0.0.1:" + sys.argv[1]})
r = ConfigResource("topic", "cfg", set_config={"retention.ms": "7200000", "min.insync.replicas": "3"})
try:
    a.alter_configs([r], request_timeout=15)[r].result(); print("alter ok")
except Exception as e:
    print("alter error", e)
bad = ConfigResource("topic", "cfg", set_config={"retention.ms": "-5x"})
try:
    a.alter_configs([bad], request_timeout=15)[bad].result(); print("bad ok")
except Exception as e:
    print("bad error", e.args[0].name() if e.args and hasattr(e.args[0], "name") else e)
d = a.describe_configs([ConfigResource("topic", "cfg")], request_timeout=15)
for res, f in d.items():
    c = f.result()
    print("describe", c["retention.ms"].value, c["min.insync.replicas"].value)
PYEOF
grep -q "^alter ok" "$T/admin.out" && ok "AdminClient.alter_configs: retention.ms=7200000 min.insync.replicas=3" ||
    bad "alter_configs: $(cat "$T/admin.out")"
grep -q "^bad error INVALID_CONFIG" "$T/admin.out" && ok "AdminClient.alter_configs retention.ms=-5x: INVALID_CONFIG" ||
    bad "alter_configs -5x: $(cat "$T/admin.out")"
grep -q "^describe 7200000 3" "$T/admin.out" && ok "AdminClient.describe_configs: 7200000, 3" ||
    bad "describe_configs: $(cat "$T/admin.out")"
want="retention.ms=7200000 min.insync.replicas=3"
for i in 1 2 3; do
    wait_for 10 same_on "$i" "$want" || bad "node $i: '$(describe "$i" retention.ms min.insync.replicas)'"
done

# ---- confluent_kafka AdminClient bootstrapped at the non-controller only ----
$PY - "$(kport "$NON")" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions
a = AdminClient({"bootstrap.servers": "127.0.0.1:" + sys.argv[1]})
def run(what, fs):
    for k, f in fs.items():
        try:
            f.result(); print(what, "ok")
        except Exception as e:
            err = e.args[0] if e.args else e
            print(what, "error", err.name() if hasattr(err, "name") else err)
run("create", a.create_topics([NewTopic("fwd", 2, 3, config={"retention.ms": "3600000",
                                                             "cleanup.policy": "compact"}),
                               NewTopic("gone", 1, 3)], request_timeout=15))
run("validate", a.create_topics([NewTopic("dry", 1, 3, config={"segment.ms": "60000"})],
                                validate_only=True, request_timeout=15))
run("badcfg", a.create_topics([NewTopic("badcfg", 1, 3, config={"retention.ms": "abc"})],
                              request_timeout=15))
run("unknowncfg", a.create_topics([NewTopic("badkey", 1, 3, config={"no.such.config": "1"})],
                                  request_timeout=15))
run("partitions", a.create_partitions([NewPartitions("fwd", 4)], request_timeout=15))
run("delete", a.delete_topics(["gone"], request_timeout=15))
PYEOF
for w in create partitions delete; do
    [ "$(grep -c "^$w ok" "$T/admin.out")" -ge 1 ] &&
        ok "AdminClient at non-controller node $NON: $w succeeded (forwarded to node $CTL)" ||
        bad "$w: $(cat "$T/admin.out")"
done
[ "$(grep -c '^create ok' "$T/admin.out")" = 2 ] || bad "create: $(grep '^create' "$T/admin.out")"
answered() { # answered OP ANSWER WHAT: the AdminClient's line for OP is ANSWER
    if grep -q "^$1 $2" "$T/admin.out"; then ok "$3"; else bad "$3: $(grep "^$1 " "$T/admin.out")"; fi
}
answered validate ok "validate_only CreateTopics forwarded: NONE"
answered badcfg "error INVALID_CONFIG" "retention.ms=abc: INVALID_CONFIG (40)"
answered unknowncfg "error INVALID_CONFIG" "an unknown config: INVALID_CONFIG (40)"

# ---- every node agrees: Metadata and DescribeConfigs ----
want="cfg:1 fwd:4 "
agree() { [ "$(topics_of "$1")" = "$want" ]; }
for i in 1 2 3; do
    wait_for 10 agree "$i" && ok "Metadata on node $i: fwd with 4 partitions; gone, dry, badcfg, badkey absent" ||
        bad "Metadata on node $i: '$(topics_of "$i")'"
done
everywhere fwd "retention.ms=3600000 cleanup.policy=compact" retention.ms cleanup.policy

# ---- the peer marker: client id "ringtail" on a non-controller is answered, not forwarded ----
got=$($PY "$T/raw.py" create_as "$(kport "$NON")" ringtail peer 2>&1)
[ "$got" = 41 ] && ok "CreateTopics with client id 'ringtail' on node $NON: NOT_CONTROLLER (41), not forwarded" ||
    bad "client id ringtail: '$got'"
got=$($PY "$T/raw.py" create_as "$(kport "$NON")" test raw 2>&1)
[ "$got" = 0 ] && ok "the same CreateTopics v0 with another client id: forwarded, NONE" ||
    bad "raw CreateTopics v0: '$got'"

# librdkafka and kafkajs send these to the controller Metadata names; raw requests pin the
# forwarding itself: CreatePartitions and DeleteTopics v0 sent to the non-controller
got=$($PY "$T/raw.py" partitions "$(kport "$NON")" raw 3 2>&1)
raw3() { [ "$(topics_of "$1")" = "cfg:1 fwd:4 raw:3 " ]; }
[ "$got" = 0 ] && wait_for 10 raw3 "$CTL" && ok "raw CreatePartitions v0 at node $NON: forwarded, raw has 3 partitions" ||
    bad "raw CreatePartitions: '$got', $(topics_of "$CTL")"
got=$($PY "$T/raw.py" partitions "$(kport "$NON")" raw 2 2>&1)
[ "$got" = 37 ] && ok "raw CreatePartitions to fewer at node $NON: the controller's INVALID_PARTITIONS (37) relayed" ||
    bad "raw CreatePartitions to 2: '$got'"
got=$($PY "$T/raw.py" delete "$(kport "$NON")" raw 2>&1)
raw_gone() { [ "$(topics_of "$1")" = "cfg:1 fwd:4 " ]; }
[ "$got" = 0 ] && wait_for 10 raw_gone "$NON" && ok "raw DeleteTopics v0 at node $NON: forwarded, raw gone" ||
    bad "raw DeleteTopics: '$got', $(topics_of "$NON")"

# ---- kafkajs admin createTopics against the non-controller ----
if [ -d "$NODE_DIR/node_modules/kafkajs" ] && command -v node >/dev/null; then
    out=$(cd "$NODE_DIR" && node - "127.0.0.1:$(kport "$NON")" 2>&1 <<'JSEOF'
const { Kafka, logLevel } = require('kafkajs')
const kafka = new Kafka({ clientId: 'rt-fwd', brokers: [process.argv[2]], logLevel: logLevel.NOTHING,
                          retry: { retries: 2 } })
const admin = kafka.admin()
;(async () => {
  await admin.connect()
  const made = await admin.createTopics({ topics: [{ topic: 'kjs', numPartitions: 3, replicationFactor: 2,
                                                      configEntries: [{ name: 'retention.ms', value: '120000' }] }],
                                          waitForLeaders: true, timeout: 15000 })
  console.log('created ' + made)
  await admin.disconnect()
})().catch((e) => { console.log('error ' + (e.type || e.message)); process.exit(1) })
JSEOF
)
    kjs() { [ "$(topics_of "$1")" = "cfg:1 fwd:4 kjs:3 " ]; }
    [ "$out" = "created true" ] && wait_for 10 kjs 1 && wait_for 10 kjs 2 && wait_for 10 kjs 3 &&
        [ "$(TOPIC=kjs describe "$CTL" retention.ms)" = "retention.ms=120000" ] &&
        ok "kafkajs createTopics at node $NON: created, on every node's Metadata, retention.ms=120000" ||
        bad "kafkajs: '$out'; $(topics_of 1) / $(topics_of 2) / $(topics_of 3); $(TOPIC=kjs describe "$CTL" retention.ms)"
    # kafkajs as a client of the cluster: an idempotent acks=all producer writes 30 records
    # over kjs's three partitions (their leaders spread over the nodes), and a consumer group
    # (its coordinator the leader of the group's __consumer_offsets partition) reads all 30
    out=$(cd "$NODE_DIR" && timeout 90 node - "127.0.0.1:$(kport "$NON")" 2>&1 <<'JSEOF'
const { Kafka, logLevel } = require('kafkajs')
const kafka = new Kafka({ clientId: 'rt-cluster', brokers: [process.argv[2]], logLevel: logLevel.NOTHING })
;(async () => {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const messages = []
  for (let i = 0; i < 30; i++) messages.push({ key: 'k' + i, value: 'v' + i })
  await producer.send({ topic: 'kjs', acks: -1, messages })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'kjs-group', sessionTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic: 'kjs', fromBeginning: true })
  const seen = new Set()
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout with ' + seen.size)), 60000)
    consumer.run({ eachMessage: async ({ message }) => {
      seen.add(message.value.toString())
      if (seen.size === 30) { clearTimeout(timer); resolve() }
    } }).catch(reject)
  })
  await consumer.disconnect()
  console.log('read ' + seen.size)
})().catch((e) => { console.log('error ' + (e.type || e.message)); process.exit(1) })
JSEOF
)
    [ "$out" = "read 30" ] && ok "kafkajs on the cluster: 30 records produced (idempotent, acks=all) and read by a consumer group" ||
        bad "kafkajs produce/consume on the cluster: '$out'"
else
    bad "kafkajs not installed in $NODE_DIR (symlink node_modules)"
fi

# ---- min.insync.replicas from the image: 3 with a follower down refuses acks=all ----
LEADER=$(part_of "$CTL" | cut -f5)
F=0
for i in 1 2 3; do [ "$i" != "$LEADER" ] && [ "$i" != "$CTL" ] && F=$i; done
[ "$F" = 0 ] && for i in 1 2 3; do [ "$i" != "$LEADER" ] && F=$i; done
kill -KILL "${PIDS[$F]}"; wait "${PIDS[$F]}" 2>/dev/null; PIDS[$F]=0
LIVE=$LEADER
isr2() { part_of "$LIVE" | awk -F'\t' '{ exit !(split($11, a, ",") == 2) }'; }
wait_for 20 isr2 && ok "follower $F killed: cfg-0's ISR shrank to $(part_of "$LIVE" | cut -f11)" ||
    bad "ISR after killing $F: $(part_of "$LIVE")"
produce() { # produce NODE: one acks=all record, no retries; prints ok or the error's name
    $PY - "$(kport "$1")" 2>&1 <<'PYEOF'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": "127.0.0.1:" + sys.argv[1], "acks": "all", "retries": 0,
              "message.timeout.ms": 8000})
out = []
p.produce("cfg", value=b"x", partition=0, on_delivery=lambda e, m: out.append(e.name() if e else "ok"))
p.flush(10)
print(out[0] if out else "undelivered")
PYEOF
}
got=$(produce "$LEADER")
[ "$got" = NOT_ENOUGH_REPLICAS ] && ok "min.insync.replicas=3, ISR of 2: acks=all gets NOT_ENOUGH_REPLICAS (19)" ||
    bad "acks=all with min.insync.replicas=3: '$got'"
OTHER=$(( 6 - LEADER - F ))
got=$(incalter "$OTHER" min.insync.replicas 2)
[ "$got" = "0 " ] && ok "min.insync.replicas=2 via node $OTHER" || bad "set 2 via node $OTHER: '$got'"
sleep 0.5
got=$(produce "$LEADER")
[ "$got" = ok ] && ok "min.insync.replicas=2, ISR of 2: acks=all delivered" || bad "acks=all with 2: '$got'"

# ---- the node that missed the change replays the log ----
before=$(wc -l <"$T/n$F.err")
start_node "$F"
want="retention.ms=7200000 min.insync.replicas=2"
wait_for 30 same_on "$F" "$want" && ok "node $F restarted: DescribeConfigs shows $want (log replay)" ||
    bad "node $F after restart: '$(describe "$F" retention.ms min.insync.replicas)'"
applied_again() { tail -n +$((before + 1)) "$T/n$F.err" | grep -q "cfg: 2 config overrides from the log"; }
wait_for 10 applied_again &&
    ok "node $F's engine took the change it missed" ||
    bad "node $F's engine: $(grep 'config overrides' "$T/n$F.err")"

# ---- no controller known (the other two stopped: no quorum): NOT_CONTROLLER, which clients
# retry; node $NON caught up with the log before, so it still serves (server.c KS7) ----
for i in 1 2 3; do
    [ "$i" = "$NON" ] && continue
    [ "${PIDS[$i]}" = 0 ] && continue
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; PIDS[$i]=0
done
lone() { [ "$($PY "$T/raw.py" create_as "$(kport "$NON")" test lone 2>/dev/null)" = 41 ]; }
wait_for 30 lone && ok "node $NON alone (no controller): CreateTopics answered NOT_CONTROLLER (41)" ||
    bad "node $NON alone: '$($PY "$T/raw.py" create_as "$(kport "$NON")" test lone 2>&1 | tail -1)'"
kill -TERM "${PIDS[$NON]}"; wait "${PIDS[$NON]}"; PIDS[$NON]=0

# ---- restarted alone it never caught up with the log: it serves nothing (KS7, connection closed) ----
start_node "$NON"
shut() { $PY "$T/raw.py" create_as "$(kport "$NON")" test lone 2>&1 | tail -1 | grep -q "closed\|reset"; }
wait_for 10 shut && ok "node $NON restarted alone (never caught up): connection closed, nothing served (KS7)" ||
    bad "node $NON restarted alone: '$($PY "$T/raw.py" create_as "$(kport "$NON")" test lone 2>&1 | tail -1)'"
kill -TERM "${PIDS[$NON]}"; wait "${PIDS[$NON]}"; PIDS[$NON]=0

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
