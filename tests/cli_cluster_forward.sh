#!/usr/bin/env bash
# cli_cluster_forward.sh — admin requests forwarded to the active controller (issue 24 item 2;
# docs/cluster.md §7.1; handle_admin.c KAD12, KIP-590): three `ringtail serve --voters ...`
# nodes. confluent_kafka's AdminClient bootstrapped at a node that is not the controller creates
# a topic with retention.ms and cleanup.policy (carried in its TOPIC record), adds partitions
# and deletes a topic; a bad config is INVALID_CONFIG (40) and creates nothing; validate_only
# creates nothing; every node's Metadata and DescribeConfigs agree; a raw CreateTopics from a
# client calling itself "ringtail" (the peer marker) on a non-controller gets NOT_CONTROLLER
# (41), not a create; kafkajs's admin createTopics against a non-controller works.
#
# usage: bash tests/cli_cluster_forward.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_forward.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cfwd-XXXXXX")
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

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport

start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms 2000 >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
brokers_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  broker \([0-9]*\) at.*/\1/p' | sort | tr '\n' ' '
}
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.1; done
}
all_list() { local want=$1; shift; for i in "$@"; do [ "$(brokers_of "$i")" = "$want" ] || return 1; done; }
controller_of() { "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$1")" 2>&1 | sed -n 's/^controller\t//p'; }

# topics NODE: "name:partitions" of every topic kcat -L lists on that node, sorted
topics_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  topic "\([^"]*\)" with \([0-9]*\) partitions.*/\1:\2/p' | sort | tr '\n' ' '
}
# describe NODE TOPIC KEY...: KEY=VALUE per key (DescribeConfigs v0, raw)
cat >"$T/raw.py" <<'PYEOF'
import socket, struct, sys
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
if op == "describe":
    body = struct.pack(">ib", 1, 2) + s16(sys.argv[3].encode()) + struct.pack(">i", -1)
    r = R(call(port, 32, 0, body))
    r.take(">i"); r.take(">i")
    err = r.take(">h"); r.str(); r.take(">b"); r.str()
    got = {}
    for _ in range(r.take(">i")):
        k = r.str(); v = r.str(); r.take(">b"); r.take(">b"); r.take(">b")
        got[k] = v
    print(" ".join("%s=%s" % (k, got.get(k)) for k in sys.argv[4:]) if err == 0 else "error %d" % err)
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
describe() { local n=$1; shift; $PY "$T/raw.py" describe "$(kport "$n")" "$@" 2>&1; }

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered and listed"
else bad "brokers listed: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi
CTL=$(controller_of 1)
[ -n "$CTL" ] && ok "controller is node $CTL" || { bad "no controller"; CTL=3; }
NON=1; [ "$CTL" = 1 ] && NON=2

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
grep -q '^validate ok' "$T/admin.out" && ok "validate_only CreateTopics forwarded: NONE" ||
    bad "validate_only: $(grep '^validate' "$T/admin.out")"
grep -q '^badcfg error INVALID_CONFIG' "$T/admin.out" && ok "retention.ms=abc: INVALID_CONFIG (40)" ||
    bad "retention.ms=abc: $(grep '^badcfg' "$T/admin.out")"
grep -q '^unknowncfg error INVALID_CONFIG' "$T/admin.out" && ok "an unknown config: INVALID_CONFIG (40)" ||
    bad "unknown config: $(grep '^unknowncfg' "$T/admin.out")"

# ---- every node agrees: Metadata and DescribeConfigs ----
want="fwd:4 "
agree() { [ "$(topics_of "$1")" = "$want" ]; }
for i in 1 2 3; do
    wait_for 10 agree "$i" && ok "Metadata on node $i: fwd with 4 partitions; gone, dry, badcfg, badkey absent" ||
        bad "Metadata on node $i: '$(topics_of "$i")'"
done
wantc="retention.ms=3600000 cleanup.policy=compact"
cfg_on() { [ "$(describe "$1" fwd retention.ms cleanup.policy)" = "$wantc" ]; }
for i in 1 2 3; do
    wait_for 10 cfg_on "$i" && ok "DescribeConfigs on node $i: $wantc" ||
        bad "DescribeConfigs on node $i: '$(describe "$i" fwd retention.ms cleanup.policy)'"
done
applied() { grep -q "fwd: 2 config overrides from the log" "$T/n$1.err"; }
n_applied=0
for i in 1 2 3; do wait_for 10 applied "$i" && n_applied=$((n_applied + 1)); done
[ "$n_applied" = 3 ] && ok "every node's engine took fwd's two configs from the log" ||
    bad "engines applied on $n_applied nodes: $(grep -h 'config overrides' "$T"/n?.err)"

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
raw3() { [ "$(topics_of "$1")" = "fwd:4 raw:3 " ]; }
[ "$got" = 0 ] && wait_for 10 raw3 "$CTL" && ok "raw CreatePartitions v0 at node $NON: forwarded, raw has 3 partitions" ||
    bad "raw CreatePartitions: '$got', $(topics_of "$CTL")"
got=$($PY "$T/raw.py" partitions "$(kport "$NON")" raw 2 2>&1)
[ "$got" = 37 ] && ok "raw CreatePartitions to fewer at node $NON: the controller's INVALID_PARTITIONS (37) relayed" ||
    bad "raw CreatePartitions to 2: '$got'"
got=$($PY "$T/raw.py" delete "$(kport "$NON")" raw 2>&1)
raw_gone() { [ "$(topics_of "$1")" = "fwd:4 " ]; }
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
    kjs() { [ "$(topics_of "$1")" = "fwd:4 kjs:3 " ]; }
    [ "$out" = "created true" ] && wait_for 10 kjs 1 && wait_for 10 kjs 2 && wait_for 10 kjs 3 &&
        [ "$(describe "$CTL" kjs retention.ms)" = "retention.ms=120000" ] &&
        ok "kafkajs createTopics at node $NON: created, on every node's Metadata, retention.ms=120000" ||
        bad "kafkajs: '$out'; $(topics_of 1) / $(topics_of 2) / $(topics_of 3); $(describe "$CTL" kjs retention.ms)"
else
    bad "kafkajs not installed in $NODE_DIR (symlink node_modules)"
fi

for i in 1 2 3; do
    [ "${PIDS[$i]}" = 0 ] && continue
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; PIDS[$i]=0
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
