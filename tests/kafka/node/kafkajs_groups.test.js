// kafkajs_groups.test.js — kafkajs 2.2.4's group consumer against `ringtail serve` at
// $RT_BROKER, run by tests/cli_kafka_groups.sh with node's test runner (node --test):
// consume-transform-produce, exactly once. A consumer in group "jgg" (JoinGroup v5 with
// MEMBER_ID_REQUIRED, SyncGroup, Heartbeat; read_committed) reads "g0".."g89" from the 3
// partitions of "jgin"; a transactional producer writes "x-g<i>" to the same partition of
// "jgout", at most 10 records per transaction, with the consumed offsets sent in it
// (sendOffsets); every third transaction is aborted and its input read again (seek). Then a
// read_committed consumer of another group reads "jgout": each "x-g<i>" exactly once; the
// group's committed offsets (admin.fetchOffsets) are the last committed transaction's; and
// DescribeGroups shows the pipeline's group.
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
assert.ok(broker, 'RT_BROKER must name the broker (HOST:PORT)')
const kafka = new Kafka({
  clientId: 'rt-kafkajs-groups',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5 },
})
const clients = []
after(async () => {
  for (const c of clients) await c.disconnect().catch(() => {})
})

const N = 90
const sleep = ms => new Promise(r => setTimeout(r, ms))

async function until(what, ms, cond) {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

test('consume-transform-produce in a group with sendOffsets, a third aborted: exactly once', async () => {
  const admin = kafka.admin()
  clients.push(admin)
  await admin.connect()
  await admin.createTopics({
    topics: [
      { topic: 'jgin', numPartitions: 3 },
      { topic: 'jgout', numPartitions: 3 },
    ],
    waitForLeaders: true,
  })
  const plain = kafka.producer()
  clients.push(plain)
  await plain.connect()
  const input = []
  for (let i = 0; i < N; i++) input.push({ value: `g${i}`, partition: i % 3 })
  await plain.send({ topic: 'jgin', messages: input })

  const producer = kafka.producer({
    transactionalId: 'jg-tx',
    idempotent: true,
    maxInFlightRequests: 1,
  })
  clients.push(producer)
  await producer.connect()
  const consumer = kafka.consumer({
    groupId: 'jgg',
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    readUncommitted: false,
  })
  clients.push(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic: 'jgin', fromBeginning: true })

  let txns = 0
  let aborted = 0
  const done = new Map() // partition -> next offset committed in a transaction
  let committedRecords = 0
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning, isStale, heartbeat }) => {
      const msgs = batch.messages
      for (let at = 0; at < msgs.length && isRunning() && !isStale(); at += 10) {
        const chunk = msgs.slice(at, at + 10)
        const txn = await producer.transaction()
        await txn.send({
          topic: 'jgout',
          messages: chunk.map(m => ({ value: `x-${m.value.toString()}`, partition: batch.partition })),
        })
        const next = String(Number(chunk[chunk.length - 1].offset) + 1)
        await txn.sendOffsets({
          consumerGroupId: 'jgg',
          topics: [{ topic: 'jgin', partitions: [{ partition: batch.partition, offset: next }] }],
        })
        txns++
        if (txns % 3 === 0) {
          await txn.abort()
          aborted++
          consumer.seek({ topic: 'jgin', partition: batch.partition, offset: chunk[0].offset })
          return
        }
        await txn.commit()
        committedRecords += chunk.length
        done.set(batch.partition, Number(next))
        resolveOffset(chunk[chunk.length - 1].offset) // the consumer's position moves on
        await heartbeat()
      }
    },
  })
  await until('every input record committed', 60000, () => committedRecords >= N)
  await consumer.stop()
  assert.equal(committedRecords, N, 'no input record is committed twice')
  assert.ok(aborted >= 2, `some transactions were aborted (${aborted} of ${txns})`)

  const offs = await admin.fetchOffsets({ groupId: 'jgg', topics: ['jgin'] })
  const got = new Map(offs[0].partitions.map(p => [p.partition, Number(p.offset)]))
  for (const p of [0, 1, 2]) assert.equal(got.get(p), done.get(p), `partition ${p}'s offset`)
  for (const p of [0, 1, 2]) assert.equal(got.get(p), N / 3)

  const desc = await admin.describeGroups(['jgg'])
  assert.equal(desc.groups[0].groupId, 'jgg')
  assert.equal(desc.groups[0].protocolType, 'consumer')
  assert.equal(desc.groups[0].state, 'Empty', 'stop() left the group (LeaveGroup)')
  await consumer.disconnect() // LeaveGroup

  const reader = kafka.consumer({ groupId: 'jg-check', readUncommitted: false })
  clients.push(reader)
  await reader.connect()
  await reader.subscribe({ topic: 'jgout', fromBeginning: true })
  const seen = []
  await reader.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()) } })
  await until('the committed output', 30000, () => seen.length >= N)
  await sleep(1000) // anything beyond N (an aborted record) would arrive meanwhile
  await reader.stop()
  const want = []
  for (let i = 0; i < N; i++) want.push(`x-g${i}`)
  assert.deepEqual([...seen].sort(), want.sort(), 'each output record exactly once')
})
