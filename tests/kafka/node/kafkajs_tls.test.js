// kafkajs_tls.test.js — kafkajs 2.2.4 over TLS against `ringtail serve`'s SSL listener at
// $RT_BROKER, run by tests/cli_kafka_tls.sh with node's test runner (node --test). The
// certificates are in $RT_CERTS (tests/helpers/tls_certs.sh): kafkajs verifies the broker's
// against ca.pem (node's TLS, rejectUnauthorized) and presents client.pem. A producer sends
// "j0".."j59" to the 2 partitions of "jtls"; a consumer in group "jtls-g" reads all 60 through
// JoinGroup/SyncGroup/Fetch/OffsetCommit over TLS; a transactional producer commits "t0".."t4".
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
const certs = process.env.RT_CERTS
assert.ok(broker && certs, 'RT_BROKER (HOST:PORT of the SSL listener) and RT_CERTS must be set')
const kafka = new Kafka({
  clientId: 'rt-kafkajs-tls',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5 },
  ssl: {
    ca: [fs.readFileSync(path.join(certs, 'ca.pem'))],
    cert: fs.readFileSync(path.join(certs, 'client.pem')),
    key: fs.readFileSync(path.join(certs, 'client.key')),
    servername: 'localhost',
  },
})
const clients = []
after(async () => {
  for (const c of clients) await c.disconnect().catch(() => {})
})
const sleep = ms => new Promise(r => setTimeout(r, ms))

test('produce, a consumer group and a transaction over TLS', async () => {
  const admin = kafka.admin()
  clients.push(admin)
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'jtls', numPartitions: 2 }], waitForLeaders: true })
  const producer = kafka.producer()
  clients.push(producer)
  await producer.connect()
  const messages = []
  for (let i = 0; i < 60; i++) messages.push({ value: `j${i}`, partition: i % 2 })
  await producer.send({ topic: 'jtls', messages })

  const consumer = kafka.consumer({ groupId: 'jtls-g' })
  clients.push(consumer)
  await consumer.connect()
  await consumer.subscribe({ topic: 'jtls', fromBeginning: true })
  const seen = new Set()
  await consumer.run({ eachMessage: async ({ message }) => { seen.add(message.value.toString()) } })
  const end = Date.now() + 30000
  while (seen.size < 60 && Date.now() < end) await sleep(100)
  await consumer.stop()
  assert.equal(seen.size, 60)
  for (let i = 0; i < 60; i++) assert.ok(seen.has(`j${i}`))
  const offsets = await admin.fetchOffsets({ groupId: 'jtls-g', topics: ['jtls'] })
  const committed = offsets[0].partitions.reduce((s, p) => s + Number(p.offset), 0)
  assert.equal(committed, 60)

  const tp = kafka.producer({ transactionalId: 'jtls-tx', idempotent: true, maxInFlightRequests: 1 })
  clients.push(tp)
  await tp.connect()
  const txn = await tp.transaction()
  await txn.send({ topic: 'jtls', messages: [0, 1, 2, 3, 4].map(i => ({ value: `t${i}`, partition: 0 })) })
  await txn.commit()
  const lo = await admin.fetchTopicOffsets('jtls')
  const p0 = lo.find(p => p.partition === 0)
  assert.ok(Number(p0.high) >= 30 + 5 + 1) // 30 plain, 5 transactional and the commit marker
})
