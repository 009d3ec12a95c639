// admin.js — kafkajs 2.2.4's admin client against `ringtail serve` at argv[2], run by
// tests/cli_kafka_admin.sh: CreateTopics with configEntries, an unknown config refused with
// INVALID_CONFIG, DescribeConfigs with each value's source, AlterConfigs and its effect.
// Prints "ok <what>" or "FAIL <what>: <why>" per check; exits 1 when any failed.
'use strict'
const { Kafka, ConfigResourceTypes, logLevel } = require('kafkajs')

const broker = process.argv[2]
const kafka = new Kafka({
  clientId: 'rt-kafkajs-admin',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 2 },
})
let failed = 0
function check(what, cond, why) {
  if (cond) console.log('ok ' + what)
  else {
    failed++
    console.log('FAIL ' + what + ': ' + why)
  }
}
function errorTypes(e) {
  const types = []
  if (e && e.type) types.push(e.type)
  for (const x of (e && e.errors) || []) if (x.type) types.push(x.type)
  for (const x of (e && e.originalError && e.originalError.errors) || []) if (x.type) types.push(x.type)
  return types
}

async function describe(admin, topic) {
  const d = await admin.describeConfigs({
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    includeSynonyms: false,
  })
  const r = d.resources[0]
  const m = {}
  for (const c of r.configEntries) m[c.configName] = c
  return { r, m }
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const created = await admin.createTopics({
      topics: [{ topic: 'jscfg', numPartitions: 2, replicationFactor: 1,
                 configEntries: [{ name: 'retention.ms', value: '6000' },
                                 { name: 'max.message.bytes', value: '50000' }] }],
    })
    check('createTopics with configEntries', created === true, String(created))
  } catch (e) {
    check('createTopics with configEntries', false, e.message)
  }
  try {
    await admin.createTopics({
      topics: [{ topic: 'jsbad', numPartitions: 1, configEntries: [{ name: 'nope.nope', value: '1' }] }],
    })
    check('createTopics with an unknown config refused', false, 'accepted')
  } catch (e) {
    check('createTopics with an unknown config: INVALID_CONFIG',
          errorTypes(e).includes('INVALID_CONFIG'), JSON.stringify(errorTypes(e)) + ' ' + e.message)
  }
  let { r, m } = await describe(admin, 'jscfg')
  check('describeConfigs: no error', r.errorCode === 0, String(r.errorCode))
  check('describeConfigs: retention.ms 6000 from the topic (source 1)',
        m['retention.ms'] && m['retention.ms'].configValue === '6000' &&
        m['retention.ms'].configSource === 1, JSON.stringify(m['retention.ms']))
  check('describeConfigs: segment.ms has a default', m['segment.ms'] && m['segment.ms'].isDefault === true,
        JSON.stringify(m['segment.ms']))
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: 'jscfg',
                  configEntries: [{ name: 'retention.ms', value: '7000' }] }],
  })
  ;({ r, m } = await describe(admin, 'jscfg'))
  check('alterConfigs: retention.ms 7000, max.message.bytes back to its default',
        m['retention.ms'].configValue === '7000' && m['max.message.bytes'].configSource !== 1,
        JSON.stringify([m['retention.ms'], m['max.message.bytes']]))
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'jscfg',
                    configEntries: [{ name: 'cleanup.policy', value: 'shred' }] }],
    })
    check('alterConfigs cleanup.policy=shred refused', false, 'accepted')
  } catch (e) {
    check('alterConfigs cleanup.policy=shred: INVALID_CONFIG',
          errorTypes(e).includes('INVALID_CONFIG'), JSON.stringify(errorTypes(e)) + ' ' + e.message)
  }
  await admin.createTopics({ topics: [{ topic: 'jsgrow', numPartitions: 1 }] })
  await admin.createPartitions({ topicPartitions: [{ topic: 'jsgrow', count: 4 }] })
  const md = await admin.fetchTopicMetadata({ topics: ['jsgrow'] })
  check('createPartitions: 4 partitions', md.topics[0].partitions.length === 4,
        JSON.stringify(md.topics[0].partitions.length))
  try {
    await admin.createPartitions({ topicPartitions: [{ topic: 'jsgrow', count: 2 }] })
    check('createPartitions to fewer refused', false, 'accepted')
  } catch (e) {
    check('createPartitions to fewer: INVALID_PARTITIONS', errorTypes(e).includes('INVALID_PARTITIONS'),
          JSON.stringify(errorTypes(e)) + ' ' + e.message)
  }
  await admin.deleteTopics({ topics: ['jscfg'] })
  const listed = await admin.listTopics()
  check('deleteTopics: the topic is gone', !listed.includes('jscfg'), JSON.stringify(listed))
  try {
    await admin.deleteTopics({ topics: ['never-was'] })
    check('deleteTopics of an unknown topic refused', false, 'accepted')
  } catch (e) {
    check('deleteTopics of an unknown topic: UNKNOWN_TOPIC_OR_PARTITION',
          errorTypes(e).includes('UNKNOWN_TOPIC_OR_PARTITION') || /UNKNOWN_TOPIC|does not host/i.test(e.message),
          JSON.stringify(errorTypes(e)) + ' ' + e.message)
  }
  await admin.disconnect()
}

main().then(
  () => process.exit(failed ? 1 : 0),
  (e) => {
    console.log('FAIL kafkajs admin: ' + (e && e.stack))
    process.exit(1)
  })
