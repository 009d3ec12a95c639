// clients.js SCENARIO BOOTSTRAP — kafkajs 2.2.4 traffic for the golden captures (capture.sh).
// The mock's answers are not judged; it is only a traffic source.
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const [scenario, broker] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'golden-kafkajs', brokers: [broker], logLevel: logLevel.NOTHING,
  retry: { retries: 1, initialRetryTime: 100 }, requestTimeout: 3000 })
const tryit = async (f) => { try { await f() } catch (e) { console.log(scenario, e.message) } }

async function main () {
  if (scenario === 'produce') {
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await p.connect()
    await tryit(() => p.send({ topic: 'golden', acks: -1, compression: CompressionTypes.GZIP,
      messages: [0, 1, 2, 3].map(i => ({ key: 'jk' + i, value: 'jv' + i, partition: 2 })) }))
    await tryit(() => p.send({ topic: 'golden', acks: -1,
      messages: [0, 1].map(i => ({ key: 'jn' + i, value: 'jw' + i, partition: 2 })) }))
    await p.disconnect()
  } else if (scenario === 'admin') {
    const a = kafka.admin()
    await a.connect()
    await tryit(() => a.createTopics({ topics: [{ topic: 'gj-created', numPartitions: 5, replicationFactor: 1 }] }))
    await tryit(() => a.describeConfigs({ resources: [{ type: 2, name: 'golden' }], includeSynonyms: false }))
    await tryit(() => a.fetchTopicOffsets('golden'))
    await tryit(() => a.listGroups())
    await tryit(() => a.describeGroups(['golden-group']))
    await tryit(() => a.deleteTopics({ topics: ['gj-created'] }))
    await a.disconnect()
  } else if (scenario === 'consume') {
    const c = kafka.consumer({ groupId: 'golden-js', readUncommitted: false, sessionTimeout: 6000,
      heartbeatInterval: 500, maxWaitTimeInMs: 100 })
    await c.connect()
    await c.subscribe({ topic: 'golden', fromBeginning: true })
    let seen = 0
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 6000)
      c.run({ eachMessage: async () => { if (++seen >= 3) { clearTimeout(t); resolve() } } })
    })
    await tryit(() => c.disconnect())
  } else if (scenario === 'txn') {
    const p = kafka.producer({ transactionalId: 'golden-js-txn', idempotent: true, maxInFlightRequests: 1 })
    await p.connect()
    await tryit(async () => {
      const t = await p.transaction()
      await t.send({ topic: 'golden', messages: [{ key: 'x', value: 'y', partition: 1 }] })
      await t.sendOffsets({ consumerGroupId: 'golden-js', topics: [{ topic: 'golden', partitions: [{ partition: 0, offset: '1' }] }] })
      await t.commit()
    })
    await tryit(() => p.disconnect())
  }
}
main().then(() => process.exit(0), (e) => { console.log(scenario, e.message); process.exit(0) })
