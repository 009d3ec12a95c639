// kafkajs_sasl.test.js — kafkajs 2.2.4 over SASL_PLAINTEXT against `ringtail serve` at
// $RT_BROKER, run by tests/cli_kafka_sasl.sh with node's test runner: with each of
// scram-sha-512, scram-sha-256 and plain (user $RT_SASL_USER, password $RT_SASL_PASSWORD) a
// producer sends 10 records to topic "js-sasl" and a consumer group reads them back; a wrong
// password is refused (KafkaJSSASLAuthenticationError).
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
const username = process.env.RT_SASL_USER
const password = process.env.RT_SASL_PASSWORD
assert.ok(broker && username && password, 'RT_BROKER, RT_SASL_USER, RT_SASL_PASSWORD')
const clients = []
after(async () => {
  for (const c of clients) await c.disconnect().catch(() => {})
})

function kafka(mechanism, pw) {
  return new Kafka({
    clientId: 'rt-kafkajs-sasl',
    brokers: [broker],
    sasl: { mechanism, username, password: pw },
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    retry: { retries: 2 },
  })
}

for (const mechanism of ['scram-sha-512', 'scram-sha-256', 'plain']) {
  test(`${mechanism}: produce 10 records and read them back in a group`, async () => {
    const k = kafka(mechanism, password)
    const topic = `js-sasl-${mechanism}`
    const admin = k.admin()
    clients.push(admin)
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
    const producer = k.producer()
    clients.push(producer)
    await producer.connect()
    const values = []
    for (let i = 0; i < 10; i++) values.push(`${mechanism}-${i}`)
    await producer.send({ topic, messages: values.map((value) => ({ value })) })
    const consumer = k.consumer({ groupId: `js-sasl-g-${mechanism}` })
    clients.push(consumer)
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const got = []
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${got.length} of 10`)), 30000)
      consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString())
          if (got.length === values.length) {
            clearTimeout(timer)
            resolve()
          }
        },
      })
    })
    assert.deepEqual(got, values)
    await consumer.disconnect()
    await producer.disconnect()
    await admin.disconnect()
  })
}

test('a wrong password is refused with SASL_AUTHENTICATION_FAILED', async () => {
  const admin = kafka('scram-sha-512', password + 'x').admin()
  clients.push(admin)
  await assert.rejects(admin.connect(), (e) => {
    assert.match(`${e.name} ${e.message}`, /SASL|[Aa]uthentication/)
    return true
  })
})
