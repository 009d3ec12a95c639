// kafkajs_txn.test.js — kafkajs 2.2.4's transactional producer against `ringtail serve` at
// $RT_BROKER, run by tests/cli_kafka_txn.sh with node's test runner (node --test): 9
// transactions over the 3 partitions of topic "jstx", each with offsets of group "jsg" sent in
// it (sendOffsets: AddOffsetsToTxn + TxnOffsetCommit), every third aborted; the group's
// committed offset (admin.fetchOffsets: OffsetFetch) must be the last committed transaction's;
// a second producer with the same transactionalId fences the first. The committed values go to
// $RT_KAFKAJS_OUT (one a line) for the driver to compare with what read_committed readers get.
// kafkajs's consumer needs group membership, which the broker does not serve yet, so the
// driver reads the output with kcat.
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
assert.ok(broker, 'RT_BROKER must name the broker (HOST:PORT)')
const out = process.env.RT_KAFKAJS_OUT
assert.ok(out, 'RT_KAFKAJS_OUT must name the output file')
const kafka = new Kafka({
  clientId: 'rt-kafkajs-txn',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 3 },
})
const clients = []
after(async () => {
  for (const c of clients) await c.disconnect().catch(() => {})
})

test('9 transactions with sendOffsets, a third aborted: the group offset is the last commit', async () => {
  const admin = kafka.admin()
  clients.push(admin)
  await admin.connect()
  await admin.createTopics({
    topics: [
      { topic: 'jstx', numPartitions: 3 },
      { topic: 'jsin', numPartitions: 1 },
    ],
    waitForLeaders: true,
  })
  const producer = kafka.producer({
    transactionalId: 'js-tx',
    idempotent: true,
    maxInFlightRequests: 1,
  })
  clients.push(producer)
  await producer.connect()
  const committed = []
  let lastCommitted = -1
  for (let i = 0; i < 9; i++) {
    const txn = await producer.transaction()
    const values = []
    for (let j = 0; j < 5; j++) values.push(`js${i}-${j}`)
    for (let j = 0; j < 5; j++)
      await txn.send({ topic: 'jstx', messages: [{ value: values[j], partition: (i + j) % 3 }] })
    await txn.sendOffsets({
      consumerGroupId: 'jsg',
      topics: [{ topic: 'jsin', partitions: [{ partition: 0, offset: String(10 * (i + 1)) }] }],
    })
    if (i % 3 === 2) {
      await txn.abort()
    } else {
      await txn.commit()
      committed.push(...values)
      lastCommitted = 10 * (i + 1)
    }
  }
  fs.writeFileSync(out, committed.join('\n') + '\n')
  const offs = await admin.fetchOffsets({ groupId: 'jsg', topics: ['jsin'] })
  assert.equal(offs.length, 1)
  assert.equal(offs[0].partitions[0].offset, String(lastCommitted))
})

test('a second producer with the same transactionalId fences the first', async () => {
  const a = kafka.producer({ transactionalId: 'js-fence', idempotent: true, maxInFlightRequests: 1 })
  clients.push(a)
  await a.connect()
  const ta = await a.transaction()
  await ta.send({ topic: 'jstx', messages: [{ value: 'js-a', partition: 0 }] })
  const b = kafka.producer({ transactionalId: 'js-fence', idempotent: true, maxInFlightRequests: 1 })
  clients.push(b)
  await b.connect()
  const tb = await b.transaction() // InitProducerId: bumps the epoch, aborts a's transaction
  await assert.rejects(ta.commit(), err => {
    assert.match(`${err.type || ''} ${err.message}`, /INVALID_PRODUCER_EPOCH|fenced|epoch/i)
    return true
  })
  await tb.send({ topic: 'jstx', messages: [{ value: 'js-b', partition: 0 }] })
  await tb.commit()
  fs.appendFileSync(out, 'js-b\n')
})
