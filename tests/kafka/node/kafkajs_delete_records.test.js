// kafkajs_delete_records.test.js — kafkajs 2.2.4's admin.deleteTopicRecords (DeleteRecords)
// against `ringtail serve` at $RT_BROKER, run by tests/cli_kafka_delete_records.sh with node's
// test runner (node --test). 50 records into "drk"; deleteTopicRecords to offset 20 moves the log
// start: fetchTopicOffsets answers low 20, and a new consumer group reading from the beginning
// starts at offset 20 (value m20). An offset above the high watermark is refused (kafkajs'
// KafkaJSDeleteTopicRecordsError, OFFSET_OUT_OF_RANGE); offset -1 moves the start to the high
// watermark. The shell then checks the metric, a restart, and ringtail's own consumer.
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
assert.ok(broker, 'RT_BROKER must name the broker (HOST:PORT)')
const kafka = new Kafka({
  clientId: 'rt-kafkajs-delete-records',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 1 },
})
const admin = kafka.admin()
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
const consumer = kafka.consumer({ groupId: 'drk-from-beginning', retry: { retries: 1 } })
after(async () => {
  await consumer.disconnect().catch(() => {})
  await producer.disconnect().catch(() => {})
  await admin.disconnect().catch(() => {})
})

test('deleteTopicRecords moves the log start; a consumer from the beginning starts there', async () => {
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'drk', numPartitions: 1 }], waitForLeaders: true })
  await producer.connect()
  const messages = []
  for (let i = 0; i < 50; i++) messages.push({ value: `m${i}` })
  await producer.send({ topic: 'drk', acks: -1, messages })
  // kafkajs looks the leader up in the admin's metadata cache before it fetches any: load it.
  await admin.fetchTopicMetadata({ topics: ['drk'] })

  await admin.deleteTopicRecords({ topic: 'drk', partitions: [{ partition: 0, offset: '20' }] })
  let offsets = await admin.fetchTopicOffsets('drk')
  assert.equal(offsets[0].low, '20')
  assert.equal(offsets[0].high, '50')

  await consumer.connect()
  await consumer.subscribe({ topic: 'drk', fromBeginning: true })
  const first = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30000)
    consumer
      .run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer)
          resolve({ offset: message.offset, value: message.value.toString() })
        },
      })
      .catch(reject)
  })
  assert.deepEqual(first, { offset: '20', value: 'm20' })
  await consumer.stop()

  await assert.rejects(
    admin.deleteTopicRecords({ topic: 'drk', partitions: [{ partition: 0, offset: '51' }] }),
    err => {
      // kafkajs wraps its KafkaJSDeleteTopicRecordsError (one entry per partition) in a
      // non-retriable error once its retrier gives up.
      const e = err.originalError || err.cause || err
      const types = (e.partitions || []).map(p => p.error && p.error.type)
      assert.deepEqual(types, ['OFFSET_OUT_OF_RANGE'], `${err.name}: ${err.message}`)
      return true
    }
  )
  offsets = await admin.fetchTopicOffsets('drk')
  assert.equal(offsets[0].low, '20', 'a refused call changes nothing')

  await admin.deleteTopicRecords({ topic: 'drk', partitions: [{ partition: 0, offset: '-1' }] })
  offsets = await admin.fetchTopicOffsets('drk')
  assert.equal(offsets[0].low, '50')
})
