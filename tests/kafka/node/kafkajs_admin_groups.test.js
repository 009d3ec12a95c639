// kafkajs_admin_groups.test.js — kafkajs 2.2.4's admin client deleting consumer groups
// (DeleteGroups) against `ringtail serve` at $RT_BROKER, run by tests/cli_kafka_group_delete.sh
// with node's test runner (node --test). Offsets committed by admin.setOffsets (OffsetCommit)
// for group "kjg" on the 3 partitions of "dt"; admin.deleteGroups(["kjg"]) succeeds and
// admin.fetchOffsets then answers -1 for each; deleting an unknown group rejects with
// GROUP_ID_NOT_FOUND; listGroups and describeGroups still answer at kafkajs' versions.
'use strict'
const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const broker = process.env.RT_BROKER
assert.ok(broker, 'RT_BROKER must name the broker (HOST:PORT)')
const kafka = new Kafka({
  clientId: 'rt-kafkajs-admin-groups',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 1 },
})
const admin = kafka.admin()
after(async () => {
  await admin.disconnect().catch(() => {})
})

test('deleteGroups deletes a group with committed offsets; an unknown one is GROUP_ID_NOT_FOUND', async () => {
  await admin.connect()
  await admin.setOffsets({
    groupId: 'kjg',
    topic: 'dt',
    partitions: [
      { partition: 0, offset: '4' },
      { partition: 1, offset: '5' },
    ],
  })
  let got = await admin.fetchOffsets({ groupId: 'kjg', topics: ['dt'] })
  assert.equal(got[0].partitions.find(p => p.partition === 1).offset, '5')
  const listed = await admin.listGroups()
  assert.ok(listed.groups.some(g => g.groupId === 'kjg'), 'kjg listed')
  const res = await admin.deleteGroups(['kjg'])
  assert.deepEqual(
    res.map(r => [r.groupId, r.errorCode]),
    [['kjg', 0]]
  )
  got = await admin.fetchOffsets({ groupId: 'kjg', topics: ['dt'] })
  for (const p of got[0].partitions) assert.equal(p.offset, '-1', `partition ${p.partition}`)
  const described = await admin.describeGroups(['kjg'])
  assert.equal(described.groups[0].state, 'Dead')
  await assert.rejects(admin.deleteGroups(['kjg-none']), err => {
    assert.equal(err.name, 'KafkaJSDeleteGroupsError')
    assert.equal(err.groups[0].groupId, 'kjg-none')
    assert.equal(err.groups[0].error.type, 'GROUP_ID_NOT_FOUND')
    return true
  })
})
