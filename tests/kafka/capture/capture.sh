#!/bin/bash
# capture.sh — records the golden request frames in tests/kafka/golden/ from the real clients'
# own encoders: kcat and python3-confluent-kafka (librdkafka 2.0.2) and kafkajs 2.2.4, each
# talking through proxy.py to librdkafka's mock cluster (mock_cluster.c). The proxy answers
# ApiVersions from ringtail's API table, so the clients pick the versions ringtail offers. The
# mock is only a traffic source. Not run by the test suite (the goldens are committed); re-run by
# hand after changing the API table:
#   bash tests/kafka/capture/capture.sh   (needs kcat, librdkafka-dev, python3-confluent-kafka,
#                                         node; KAFKAJS_DIR=a dir with kafkajs@2.2.4 installed)
# Keeps, per scenario, the first request frame of each API key as
# golden/<scenario>.<ApiName>.bin (the frame without its 4-byte size: header + body).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$root/tests/kafka/golden
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cc -std=c11 -D_GNU_SOURCE -I"$root" -o "$work/mock" "$here/mock_cluster.c" \
    "$root/tools/kafka/proto/api.c" -lrdkafka
if [ ! -d "${KAFKAJS_DIR:-}/node_modules/kafkajs" ]; then
    KAFKAJS_DIR=$work/js
    mkdir -p "$KAFKAJS_DIR"
    (cd "$KAFKAJS_DIR" && npm install --silent kafkajs@2.2.4 >/dev/null)
fi

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run SCENARIO COMMAND...: a fresh mock and proxy; $B is the proxy's address for the command.
run() {
    local name=$1
    shift
    "$work/mock" golden:3 </dev/null >"$work/mock.$name" 2>/dev/null &
    local mock=$!
    for _ in $(seq 300); do grep -q bootstrap "$work/mock.$name" && break; sleep 0.1; done
    local up
    up=$(sed -n 's/^bootstrap [^:]*:\([0-9]*\).*/\1/p' "$work/mock.$name")
    local port
    port=$(free_port)
    /usr/bin/python3 "$here/proxy.py" "$port" "$up" "$work/cap.$name" "$work/mock.$name" \
        >"$work/proxy.$name" &
    local proxy=$!
    for _ in $(seq 50); do grep -q ready "$work/proxy.$name" && break; sleep 0.1; done
    B=127.0.0.1:$port
    (eval "$@") >"$work/log.$name" 2>&1 || echo "capture: $name exited $? (see the mock's answer)"
    kill $proxy $mock
    wait $proxy $mock 2>/dev/null || true
}

# Compressible values: librdkafka sends a batch uncompressed when compression does not shrink it.
records() { for i in 0 1 2 3 4; do echo "key$i:$(printf "value$i-%.0s" $(seq 30))"; done; }
run kcat_metadata 'kcat -b $B -L -m 5'
for z in none gzip snappy lz4 zstd; do
    run "kcat_produce_$z" 'records | kcat -b $B -P -t golden -p 0 -K: -z '$z' -X acks=all -X linger.ms=500 -m 5'
done
run kcat_idempotent 'records | kcat -b $B -P -t golden -p 1 -K: -z zstd -X enable.idempotence=true -X linger.ms=500 -m 5'
run kcat_consume 'records | kcat -b $B -P -t golden -p 0 -K: -X linger.ms=500 -m 5 && kcat -b $B -C -t golden -p 0 -o beginning -c 5 -e -X isolation.level=read_committed -m 5'
run py_admin '/usr/bin/python3 $here/clients.py admin $B'
run py_txn '/usr/bin/python3 $here/clients.py txn $B'
run py_group 'records | kcat -b $B -P -t golden -p 0 -K: -X linger.ms=500 -m 5 && /usr/bin/python3 $here/clients.py group $B'
for s in produce admin consume txn; do
    run "kafkajs_$s" 'NODE_PATH=$KAFKAJS_DIR/node_modules node $here/clients.js '$s' $B'
done

mkdir -p "$out"
/usr/bin/python3 - "$work" "$out" <<'PY'
import glob, os, struct, sys
names = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
         9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
         13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
         18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics", 22: "InitProducerId",
         24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit",
         32: "DescribeConfigs"}
work, out = sys.argv[1], sys.argv[2]
for d in sorted(glob.glob(os.path.join(work, "cap.*"))):
    scen = d.split("cap.", 1)[1]
    seen = set()
    for f in sorted(os.listdir(d)):
        b = open(os.path.join(d, f), "rb").read()
        key, ver = struct.unpack(">hh", b[:4])
        if key in seen:
            continue
        seen.add(key)
        name = "%s.%s.bin" % (scen, names.get(key, "k%d" % key))
        open(os.path.join(out, name), "wb").write(b)
        print("golden", name, "v%d" % ver, len(b), "bytes")
PY
