// acl.js — kafkajs 2.2.4's ACL admin calls (CreateAcls, DescribeAcls, DeleteAcls) against
// `ringtail serve` at argv[2], run by tests/cli_kafka_acl.sh (python3-confluent-kafka 1.7.0,
// Debian's, has no ACL calls). Subcommands:
//   create BROKER PREFIX GROUP   ALLOW User:ANONYMOUS WRITE, READ and CREATE on topics PREFIX*
//                                and READ on group GROUP
//   describe BROKER PREFIX       the ACLs of topic pattern PREFIX (prefixed): one line each
//   delete BROKER PREFIX         deletes every ACL of topic pattern PREFIX (prefixed)
//   disabled BROKER              DescribeAcls refused with SECURITY_DISABLED (no --authorizer)
//   denied BROKER                DescribeAcls refused with CLUSTER_AUTHORIZATION_FAILED
// Prints "ok <what>" or "FAIL <what>: <why>" per check; exits 1 when any failed.
'use strict'
const {
  Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes,
} = require('kafkajs')

const [cmd, broker, prefix, group] = process.argv.slice(2)
const kafka = new Kafka({
  clientId: 'rt-kafkajs-acl',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 0 },
})
let failed = 0
function check(what, cond, why) {
  if (cond) console.log('ok ' + what)
  else {
    failed++
    console.log('FAIL ' + what + ': ' + why)
  }
}
const entry = (resourceType, resourceName, resourcePatternType, operation) => ({
  resourceType, resourceName, resourcePatternType, operation,
  principal: 'User:ANONYMOUS', host: '*', permissionType: AclPermissionTypes.ALLOW,
})
const topicFilter = () => ({
  resourceType: AclResourceTypes.TOPIC, resourceName: prefix,
  resourcePatternType: ResourcePatternTypes.PREFIXED, principal: 'User:ANONYMOUS', host: '*',
  operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY,
})

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  try {
    if (cmd === 'create') {
      const P = ResourcePatternTypes.PREFIXED
      await admin.createAcls({
        acl: [
          entry(AclResourceTypes.TOPIC, prefix, P, AclOperationTypes.WRITE),
          entry(AclResourceTypes.TOPIC, prefix, P, AclOperationTypes.READ),
          entry(AclResourceTypes.TOPIC, prefix, P, AclOperationTypes.CREATE),
          entry(AclResourceTypes.GROUP, group, ResourcePatternTypes.LITERAL, AclOperationTypes.READ),
        ],
      })
      check('CreateAcls: four ACLs created', true, '')
    } else if (cmd === 'describe') {
      const r = await admin.describeAcls(topicFilter())
      for (const res of r.resources)
        for (const a of res.acls)
          console.log(`acl ${res.resourceName} ${res.resourcePatternType} ${a.principal} ${a.operation}`)
      check('DescribeAcls answered without error', !r.errorCode, JSON.stringify(r))
    } else if (cmd === 'delete') {
      const r = await admin.deleteAcls({ filters: [topicFilter()] })
      const n = r.filterResponses[0].matchingAcls.length
      console.log(`deleted ${n}`)
      check('DeleteAcls answered without error', r.filterResponses[0].errorCode === 0,
        JSON.stringify(r))
    } else if (cmd === 'disabled' || cmd === 'denied') {
      const want = cmd === 'disabled' ? 'SECURITY_DISABLED' : 'CLUSTER_AUTHORIZATION_FAILED'
      try {
        await admin.describeAcls(topicFilter())
        check(`DescribeAcls refused with ${want}`, false, 'it was answered')
      } catch (e) {
        check(`DescribeAcls refused with ${want}`, e.type === want, `${e.type}: ${e.message}`)
      }
    } else {
      check('known subcommand', false, cmd)
    }
  } finally {
    await admin.disconnect()
  }
}
main().then(
  () => process.exit(failed ? 1 : 0),
  (e) => {
    console.log(`FAIL ${cmd}: ${e.type || ''} ${e.message}`)
    process.exit(1)
  },
)
