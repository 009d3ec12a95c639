#!/usr/bin/env bash
# cli_kafka_compact.sh — a compacted topic (cleanup.policy=compact, issue 26) through real
# clients: kcat produces keyed records and a tombstone to `ringtail serve`, the broker stops,
# `ringtail topic compact` cleans the sealed segments (engine/log/cleaner.c), `ringtail verify`
# is clean (offset gaps are legal in a cleaned segment, docs/format.md A.9), and after a restart
# kcat reads back every key's latest value last, the deleted key's tombstone, fewer records than
# were written, and offsets that only increase (kept as they were, with gaps). Two more clients
# read the cleaned topic the same way: confluent-kafka-python (librdkafka's consumer, under
# /usr/bin/python3) and kafkajs 2.2.4 (tests/kafka/node, its own decoder, a group consumer):
# each sees every key's latest value, the tombstone as a null value, increasing offsets with
# gaps, and no more records than kcat saw.
#
# usage: bash tests/cli_kafka_compact.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_compact.sh /path/to/ringtail}
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-compact-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
# min.compaction.lag.ms keeps the broker's background cleaner off the topic while it serves (the
# reads before the clean must see every record); the offline clean below runs after it is removed.
run topic create "$D" ct --partitions 1 --config cleanup.policy=compact --config segment.bytes=1024 \
    --config min.compaction.lag.ms=3600000
expect "a compacted topic with small segments" 0 "^created topic ct"
serve_start "$D"

KC=(kcat -b "$BROKER" -X socket.timeout.ms=10000 -m 15)

# 60 records over 5 keys, one batch each (small segments fill and roll), then a tombstone of k3
# (-Z: an empty value is sent as null) and a last record so the tombstone's segment is sealed.
for i in $(seq 0 59); do echo "k$((i % 5)):v$i"; done >"$T/in"
echo "k3:" >>"$T/in"
for i in $(seq 0 29); do echo "pad:p$i"; done >>"$T/in"
check "kcat produced 91 keyed records (a tombstone among them)" \
    "${KC[@]}" -P -t ct -p 0 -K: -Z -X linger.ms=0 -X batch.num.messages=1 -l "$T/in"

"${KC[@]}" -C -t ct -p 0 -o beginning -e -Z -f '%o %k %s\n' >"$T/before" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] && [ "$(wc -l <"$T/before")" -eq 91 ] && ok "kcat read 91 records back before the clean" ||
    bad "kcat read 91 records back before the clean"
before=$(wc -l <"$T/before")
serve_stop

run topic alter "$D" ct --delete-config min.compaction.lag.ms
expect "the compaction lag removed" 0 "^altered 1 config of topic ct"
run topic compact "$D" ct
expect "ringtail topic compact cleans the topic" 0 "^compacted topic ct"
serve_verify "$D"

SERVE_PORT=$PORT serve_start "$D"
"${KC[@]}" -C -t ct -p 0 -o beginning -e -Z -f '%o %k %s\n' >"$T/after" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] && ok "kcat reads the compacted topic" || bad "kcat reads the compacted topic"
after=$(wc -l <"$T/after")
if python3 - "$T/before" "$T/after" <<'EOF'; then
import sys
def rows(path):
    out = []
    for line in open(path):
        parts = line.rstrip("\n").split(" ", 2)
        out.append((int(parts[0]), parts[1], parts[2] if len(parts) > 2 else ""))
    return out
before, after = rows(sys.argv[1]), rows(sys.argv[2])
assert len(after) < len(before), (len(before), len(after))
offsets = [o for o, _, _ in after]
assert offsets == sorted(set(offsets)), offsets                 # increasing
assert set(after) <= set(before), set(after) - set(before)      # offsets and records kept
latest = {}
for o, k, v in before:
    latest[k] = v
last = {}
for o, k, v in after:
    last[k] = v
assert last == latest, (last, latest)                            # latest value per key, last
assert last["k3"] in ("", "NULL"), last["k3"]                    # the tombstone is still there
assert len(set(o for o, _, _ in before) - set(offsets)) > 0      # gaps where batches went
EOF
    ok "after the clean: each key's latest value last, fewer records ($before -> $after), offsets kept with gaps"
else
    bad "after the clean: each key's latest value last, fewer records ($before -> $after), offsets kept with gaps"
    cat "$T/after"
fi

# The same cleaned topic through confluent-kafka-python and kafkajs: one line per record,
# "offset key value", a null value written as NULL (the tombstone must be null, not empty).
/usr/bin/python3 - "$BROKER" >"$T/py" 2>"$T/err" <<'EOF'
import sys, time
from confluent_kafka import Consumer, KafkaError, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "compact-py",
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "enable.partition.eof": True})
c.assign([TopicPartition("ct", 0, 0)])
deadline = time.time() + 60
while time.time() < deadline:
    m = c.poll(1.0)
    if m is None:
        continue
    if m.error():
        if m.error().code() == KafkaError._PARTITION_EOF:
            break
        sys.exit("consume error: %s" % m.error())
    v = m.value()
    print(m.offset(), m.key().decode(), "NULL" if v is None else v.decode())
else:
    sys.exit("no end of partition within 60 s")
c.close()
EOF
RC=$?
[ $RC -eq 0 ] && ok "confluent-kafka-python reads the compacted topic" ||
    bad "confluent-kafka-python reads the compacted topic"
last=$(tail -1 "$T/after" | cut -d' ' -f1)
(cd "$NODE_DIR" && NODE_PATH=$NODE_DIR/node_modules RT_BROKER=$BROKER RT_LAST=$last timeout 120 node - >"$T/js" 2>"$T/err") <<'EOF'
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const kafka = new Kafka({ clientId: 'rt-compact', brokers: [process.env.RT_BROKER],
                          logLevel: logLevel.NOTHING, retry: { retries: 3 } })
const last = Number(process.env.RT_LAST)
const consumer = kafka.consumer({ groupId: 'compact-js', sessionTimeout: 10000,
                                  heartbeatInterval: 1000 })
const lines = []
const timer = setTimeout(() => { console.error('did not reach offset ' + last); process.exit(1) },
                         60000)
;(async () => {
  await consumer.connect()
  await consumer.subscribe({ topic: 'ct', fromBeginning: true })
  let done
  const finished = new Promise(r => { done = r })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      const v = message.value === null ? 'NULL' : message.value.toString()
      lines.push(`${message.offset} ${message.key.toString()} ${v}`)
      if (Number(message.offset) >= last) done()
    },
  })
  await finished
  await consumer.disconnect()
  clearTimeout(timer)
  process.stdout.write(lines.join('\n') + '\n')
})().catch(e => { console.error(e); process.exit(1) })
EOF
RC=$?
[ $RC -eq 0 ] && ok "kafkajs reads the compacted topic" || bad "kafkajs reads the compacted topic"
for client in py js; do
    if python3 - "$T/before" "$T/after" "$T/$client" <<'EOF'; then
import sys
def rows(path):
    out = []
    for line in open(path):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split(" ", 2)
        out.append((int(parts[0]), parts[1], parts[2] if len(parts) > 2 else ""))
    return out
before, kcat, got = rows(sys.argv[1]), rows(sys.argv[2]), rows(sys.argv[3])
null = lambda v: "NULL" if v in ("", "NULL") else v
before = [(o, k, null(v)) for o, k, v in before]
assert 0 < len(got) <= len(kcat), (len(got), len(kcat))          # no more than kcat saw
offsets = [o for o, _, _ in got]
assert offsets == sorted(set(offsets)), offsets                   # increasing
assert set(got) <= set(before), set(got) - set(before)            # offsets and records kept
latest, last = {}, {}
for o, k, v in before:
    latest[k] = v
for o, k, v in got:
    last[k] = v
assert last == latest, (last, latest)                              # latest value per key
assert [v for o, k, v in got if k == "k3"][-1] == "NULL"           # the tombstone, null
assert len(set(o for o, _, _ in before) - set(offsets)) > 0        # gaps
EOF
        ok "$client after the clean: each key's latest value, the tombstone null, offsets with gaps, $(wc -l <"$T/$client") <= $after records"
    else
        bad "$client after the clean: each key's latest value, the tombstone null, offsets with gaps"
        cat "$T/$client" "$T/err"
    fi
done

# Reading from inside a gap starts at the next record after it (CL2).
gap=$(python3 - "$T/before" "$T/after" <<'EOF'
import sys
b = [int(l.split(" ")[0]) for l in open(sys.argv[1])]
a = set(int(l.split(" ")[0]) for l in open(sys.argv[2]))
print(min(o for o in b if o not in a))
EOF
)
"${KC[@]}" -C -t ct -p 0 -o "$gap" -c 1 -e -Z -f '%o\n' >"$T/one" 2>"$T/err"
first=$(head -1 "$T/one")
if [ -n "$first" ] && [ "$first" -gt "$gap" ]; then
    ok "a fetch at offset $gap (removed) starts at the next record, $first"
else
    bad "a fetch at offset $gap (removed) starts at the next record (got '$first')"
fi
serve_stop
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
