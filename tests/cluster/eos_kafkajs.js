// eos_kafkajs.js — an exactly-once pipeline on kafkajs 2.2.4 (tests/kafka/node/node_modules), for
// the cluster's transaction fault tests (tests/cluster/eos_run.py, issue 25 item 4). It only
// drives the client and reports what the client said; the runner's checker judges the topics.
//
//   node eos_kafkajs.js BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID
//
// A consumer of SRC in GROUP (kafkajs reads read_committed by default; no auto commit) and a
// transactional producer; per batch (eachBatch) a transaction writes "o-<value>" to DST's
// partition of the same number, sends the batch's offsets (sendOffsets: AddOffsetsToTxn and
// TxnOffsetCommit) and commits. Any error aborts the transaction if it can and ends the session:
// both clients disconnect and a new session starts from the group's committed offsets under the
// same transactional id (its InitProducerId fences what is left of the old one) — eos.py's EW1,
// in the one form kafkajs offers. Runs until SIGTERM, then prints
// "committed C aborted A records R incarnations I" and exits 0.
'use strict'
const path = require('node:path')
const { Kafka, logLevel } = require(path.join(__dirname, '../kafka/node/node_modules/kafkajs'))

const [bootstrap, src, dst, group, tid] = process.argv.slice(2)
if (!tid) {
  console.error('usage: node eos_kafkajs.js BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID')
  process.exit(1)
}
const kafka = new Kafka({
  clientId: 'rt-eos-kafkajs',
  brokers: bootstrap.split(','),
  logLevel: logLevel.ERROR, // to stdout (eos-<lane>.out; eos_run.py shows its tail on a failure)
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 2000 },
})
let stop = false
const n = { committed: 0, aborted: 0, records: 0, incarnations: 0 }
let wake = null
process.on('SIGTERM', () => {
  stop = true
  if (wake) wake()
})

// A kafkajs call that may never settle (disconnect waits for its runner; seen stalling a whole
// long run after a fenced EndTxn: the session never ended, SIGTERM was ignored) gets ms to
// settle; then the session goes on without it (the abandoned clients are fenced or time out).
function within(promise, ms) {
  let timer
  return Promise.race([
    promise.catch(() => {}),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

async function session() {
  const consumer = kafka.consumer({
    groupId: group,
    sessionTimeout: 6000,
    heartbeatInterval: 1000,
    readUncommitted: false,
    maxWaitTimeInMs: 500,
  })
  const producer = kafka.producer({
    transactionalId: tid,
    idempotent: true,
    maxInFlightRequests: 1,
    transactionTimeout: 20000,
  })
  let failed = null
  const ended = new Promise((resolve) => {
    wake = resolve
  })
  try {
    await producer.connect()
    await consumer.connect()
    await consumer.subscribe({ topic: src, fromBeginning: true })
    consumer.on(consumer.events.CRASH, (e) => {
      failed = failed || e.payload.error
      if (wake) wake()
    })
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (stop || failed || batch.messages.length === 0) return
        const txn = await producer.transaction()
        try {
          const last = batch.messages[batch.messages.length - 1]
          await txn.send({
            topic: dst,
            messages: batch.messages.map((m) => ({
              value: 'o-' + m.value.toString(),
              partition: batch.partition,
            })),
          })
          await txn.sendOffsets({
            consumerGroupId: group,
            topics: [
              {
                topic: src,
                partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }],
              },
            ],
          })
          await txn.commit()
          resolveOffset(last.offset) // the next fetch starts after it
          n.committed++
          n.records += batch.messages.length
        } catch (e) {
          failed = e
          try {
            await within(
              txn.abort().then(() => n.aborted++),
              15000,
            )
          } catch (_) {}
          if (wake) wake()
          throw e
        }
      },
    })
    await ended
  } catch (e) {
    failed = failed || e
  }
  await within(consumer.disconnect(), 15000)
  await within(producer.disconnect(), 15000)
  return failed
}

async function main() {
  while (!stop) {
    const failed = await session()
    if (failed && !stop) {
      n.incarnations++
      await new Promise((r) => setTimeout(r, 500))
    }
  }
  console.log(
    `committed ${n.committed} aborted ${n.aborted} records ${n.records} incarnations ${n.incarnations}`,
  )
  process.exit(0)
}
main()
