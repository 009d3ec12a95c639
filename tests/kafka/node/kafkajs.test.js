// kafkajs.test.js — kafkajs 2.2.4 (pinned by package-lock.json, installed by tools/setup.sh
// with `npm ci`) against `ringtail serve` at $RT_BROKER, run by tests/cli_kafka_kafkajs.sh with
// node's test runner. kafkajs is a second, independent implementation of the protocol (its own
// encoders and decoders, in JavaScript): admin CreateTopics and Metadata, an idempotent producer
// (plain and gzip batches), ListOffsets, and Fetch decoded by kafkajs itself. Consumer groups
// are the next issue's, so records are read with kafkajs's own broker-level fetch (its Cluster
// and Broker classes, the code its consumer uses underneath) rather than kafka.consumer().
// Values are written to $RT_KAFKAJS_OUT (one per line, per partition) for the driver to compare
// with what the engine's own consumer reads.
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
assert.ok(broker, 'RT_BROKER must name the broker (HOST:PORT)')
const kafka = new Kafka({
  clientId: 'rt-kafkajs',
  brokers: [broker],
  logLevel: logLevel.ERROR,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 3 },
})
const TOPIC = 'js'
const PER_PARTITION = 1000

const clients = []
after(async () => {
  for (const c of clients) await c.disconnect().catch(() => {})
})

test('admin: CreateTopics makes a 2-partition topic and Metadata lists it', async () => {
  const admin = kafka.admin()
  clients.push(admin)
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic: TOPIC, numPartitions: 2, replicationFactor: 1 }],
    waitForLeaders: true,
  })
  assert.equal(created, true)
  const md = await admin.fetchTopicMetadata({ topics: [TOPIC] })
  assert.equal(md.topics.length, 1)
  assert.deepEqual(md.topics[0].partitions.map(p => p.partitionId).sort(), [0, 1])
  for (const p of md.topics[0].partitions) assert.equal(p.partitionErrorCode, 0)
  // A second create of the same topic: TOPIC_ALREADY_EXISTS, which kafkajs turns into false.
  const again = await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }] })
  assert.equal(again, false)
})

test('an idempotent producer sends 1000 records per partition, plain and gzip', async () => {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  clients.push(producer)
  await producer.connect()
  const next = [0, 0]
  for (let round = 0; round < 20; round++) {
    const messages = []
    for (let i = 0; i < 100; i++) {
      const partition = i % 2
      const n = next[partition]++
      messages.push({ partition, key: `k${n}`, value: `p${partition}-${n}`, headers: { n: `${n}` } })
    }
    const meta = await producer.send({
      topic: TOPIC,
      acks: -1,
      compression: round % 2 ? CompressionTypes.GZIP : CompressionTypes.None,
      messages,
    })
    for (const m of meta) {
      assert.equal(m.errorCode, 0)
      assert.equal(m.topicName, TOPIC)
      // Each send appends 50 records to each partition, right after the previous 50.
      assert.equal(Number(m.baseOffset), round * 50)
    }
  }
  assert.deepEqual(next, [PER_PARTITION, PER_PARTITION])
})

test('ListOffsets: earliest 0 and latest 1000 in each partition', async () => {
  const admin = kafka.admin()
  clients.push(admin)
  await admin.connect()
  const offsets = await admin.fetchTopicOffsets(TOPIC)
  assert.equal(offsets.length, 2)
  for (const o of offsets) {
    assert.equal(o.low, '0')
    assert.equal(o.high, String(PER_PARTITION))
    assert.equal(o.offset, String(PER_PARTITION))
  }
})

test('Fetch, decoded by kafkajs, reads every record back in order', async () => {
  // The Kafka instance's cluster factory (a private symbol): the same Cluster its consumer uses.
  const sym = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  assert.ok(sym, 'kafkajs 2.2.4 keeps its cluster factory under private:Kafka:createCluster')
  const cluster = kafka[sym]({ isolationLevel: 1 })
  clients.push(cluster)
  await cluster.connect()
  await cluster.addTargetTopic(TOPIC)
  const out = []
  for (const partition of [0, 1]) {
    const [leader] = Object.keys(cluster.findLeaderForPartitions(TOPIC, [partition]))
    const b = await cluster.findBroker({ nodeId: leader })
    let offset = 0
    let fetches = 0
    while (offset < PER_PARTITION) {
      assert.ok(++fetches < 200, 'fetch makes progress')
      const res = await b.fetch({
        replicaId: -1,
        isolationLevel: 1, // read_committed
        maxWaitTime: 100,
        minBytes: 1,
        maxBytes: 64 * 1024,
        topics: [{ topic: TOPIC, partitions: [{ partition, fetchOffset: String(offset), maxBytes: 16 * 1024 }] }],
      })
      const p = res.responses[0].partitions[0]
      assert.equal(p.errorCode, 0)
      assert.equal(p.highWatermark, String(PER_PARTITION))
      assert.equal(p.lastStableOffset, String(PER_PARTITION))
      for (const m of p.messages) {
        if (Number(m.offset) < offset) continue // a batch that starts before the fetch offset
        assert.equal(Number(m.offset), offset)
        assert.equal(m.key.toString(), `k${offset}`)
        assert.equal(m.value.toString(), `p${partition}-${offset}`)
        assert.equal(m.headers.n.toString(), `${offset}`)
        out.push(m.value.toString())
        offset++
      }
    }
  }
  if (process.env.RT_KAFKAJS_OUT) fs.writeFileSync(process.env.RT_KAFKAJS_OUT, out.join('\n') + '\n')
})
