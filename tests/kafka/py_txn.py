#!/usr/bin/python3
"""py_txn.py — python3-confluent-kafka (Debian's, on librdkafka) against `ringtail serve`, for
tests/cli_kafka_txn.sh. It drives the clients and reports what they saw; the driver checks.

usage:
  py_txn.py BROKER fill TOPIC N           N records "v0".."v<N-1>" (record i to partition i % 3),
                                          idempotent producer; prints "filled N"
  py_txn.py BROKER pipe IN OUT GROUP [SLOW_MS]
                                          consume-transform-produce, exactly once: a consumer of
                                          IN (assigned every partition at GROUP's committed
                                          offset, read_committed) and a transactional producer
                                          (transactional.id "pipe-" + GROUP) turn each "v<i>"
                                          into "x-v<i>" on the same partition of OUT, up to 10
                                          records per transaction, with the consumed offsets sent
                                          in it; every third transaction is aborted and its input
                                          read again. Prints "committed K" after each commit (K
                                          input records committed so far by this run) and "done"
                                          when every partition's committed offset is its end.
                                          SLOW_MS sleeps that long in each transaction (so a
                                          SIGKILL lands inside one).
  py_txn.py BROKER commit TOPIC GROUP OFF a consumer of GROUP (assigned, no membership) commits
                                          OFF for TOPIC-0 .. TOPIC-2 (OffsetCommit) and asks it
                                          back (OffsetFetch); prints "committed OFF OFF OFF"
  py_txn.py BROKER committed TOPIC GROUP  just asks; prints "committed A B C"
  py_txn.py BROKER hang TOPIC TIMEOUT_MS  a transactional producer (transaction.timeout.ms
                                          TIMEOUT_MS) writes "h0".."h4" to partition 0, prints
                                          "open" and never ends its transaction
  py_txn.py BROKER after TOPIC            commits "after" to partition 0 in a transaction
  py_txn.py BROKER wait TOPIC             a read_committed consumer of partition 0 from the start
                                          until it receives "after"; prints every value and then
                                          "waited MS" (how long "after" took to arrive)
  py_txn.py BROKER kip447 TOPIC GROUP     KIP-447 (TxnOffsetCommit v3): a consumer subscribed as
                                          GROUP reads one record of TOPIC-0; a transactional
                                          producer sends its offset with the consumer's group
                                          metadata (generation, member id) and commits: prints
                                          "live committed OFF" (GROUP's committed offset); then
                                          the consumer leaves and the producer sends offsets with
                                          the metadata it held: prints "stale refused <error>"
                                          and, after abort_transaction, "aborted"
"""
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def fail(msg):
    print(msg, file=sys.stderr, flush=True)
    sys.exit(1)


def fill(broker, topic, n):
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, value=("v%d" % i).encode(), partition=i % 3)
        p.poll(0)
    if p.flush(30) != 0:
        fail("fill: not every record was delivered")
    print("filled %d" % n, flush=True)


def partitions_of(c, topic):
    md = c.list_topics(topic, timeout=10)
    return sorted(md.topics[topic].partitions.keys())


def pipe(broker, src, dst, group, slow_ms):
    c = Consumer(
        {
            "bootstrap.servers": broker,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    p = Producer({"bootstrap.servers": broker, "transactional.id": "pipe-" + group})
    p.init_transactions(30)  # fences an older instance, aborts what it left open
    parts = [TopicPartition(src, i) for i in partitions_of(c, src)]
    ends = {}
    for tp in parts:
        lo, hi = c.get_watermark_offsets(tp, timeout=10)
        ends[tp.partition] = hi

    def rewind():
        committed = c.committed(parts, timeout=10)
        c.assign([TopicPartition(src, tp.partition, tp.offset if tp.offset >= 0 else 0)
                  for tp in committed])
        return {tp.partition: (tp.offset if tp.offset >= 0 else 0) for tp in committed}

    pos = rewind()
    total, n_txn = 0, 0
    while any(pos[k] < ends[k] for k in ends):
        msgs = c.consume(10, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        n_txn += 1
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, value=b"x-" + m.value(), partition=m.partition())
        offsets = {}
        for m in msgs:
            offsets[m.partition()] = m.offset() + 1
        if slow_ms:
            time.sleep(slow_ms / 1000.0)
        p.send_offsets_to_transaction(
            [TopicPartition(src, k, v) for k, v in offsets.items()],
            c.consumer_group_metadata(),
            30,
        )
        if n_txn % 3 == 0:
            p.abort_transaction(30)
            pos = rewind()  # read that input again
            continue
        p.commit_transaction(30)
        total += len(msgs)
        pos.update(offsets)
        print("committed %d" % total, flush=True)
    c.close()
    print("done", flush=True)


def commit(broker, topic, group, off):
    c = Consumer({"bootstrap.servers": broker, "group.id": group, "enable.auto.commit": False})
    parts = [TopicPartition(topic, i, 0) for i in range(3)]
    c.assign(parts)
    if off is not None:
        c.commit(offsets=[TopicPartition(topic, i, off) for i in range(3)], asynchronous=False)
    got = c.committed([TopicPartition(topic, i) for i in range(3)], timeout=10)
    print("committed " + " ".join(str(tp.offset) for tp in got), flush=True)
    c.close()


def hang(broker, topic, timeout_ms):
    p = Producer(
        {
            "bootstrap.servers": broker,
            "transactional.id": "py-hang",
            "transaction.timeout.ms": int(timeout_ms),
        }
    )
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=("h%d" % i).encode(), partition=0)
    p.flush(30)
    print("open", flush=True)
    while True:
        time.sleep(1)


def after(broker, topic):
    p = Producer({"bootstrap.servers": broker, "transactional.id": "py-after"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"after", partition=0)
    p.commit_transaction(30)
    print("after committed", flush=True)


def wait(broker, topic):
    c = Consumer(
        {
            "bootstrap.servers": broker,
            "group.id": "py-wait",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    start = time.monotonic()
    while time.monotonic() - start < 60:
        m = c.poll(0.5)
        if m is None or m.error() is not None:
            continue
        v = m.value().decode()
        print(v, flush=True)
        if v == "after":
            print("waited %d" % int((time.monotonic() - start) * 1000), flush=True)
            c.close()
            return
    fail("wait: 'after' never arrived")


def kip447(broker, topic, group):
    p0 = Producer({"bootstrap.servers": broker})
    p0.produce(topic, value=b"k", partition=0)
    p0.flush(30)
    c = Consumer({"bootstrap.servers": broker, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([topic])
    m = None
    deadline = time.time() + 60
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            break
    if m is None or m.error():
        fail("kip447: the member read nothing")
    tp = TopicPartition(topic, m.partition(), m.offset() + 1)
    p = Producer({"bootstrap.servers": broker, "transactional.id": "kip447-" + group})
    p.init_transactions(30)
    p.begin_transaction()
    p.send_offsets_to_transaction([tp], c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    got = c.committed([TopicPartition(topic, m.partition())], 30)[0].offset
    print("live committed %d" % got, flush=True)
    md = c.consumer_group_metadata()
    c.close()  # LeaveGroup: the member id and generation it held are gone
    p.begin_transaction()
    try:
        p.send_offsets_to_transaction([TopicPartition(topic, m.partition(), got + 1)], md, 30)
        print("stale accepted", flush=True)
    except KafkaException as e:
        print("stale refused %s" % e.args[0].name(), flush=True)
    p.abort_transaction(30)
    print("aborted", flush=True)


def main():
    broker, mode = sys.argv[1], sys.argv[2]
    try:
        if mode == "fill":
            fill(broker, sys.argv[3], int(sys.argv[4]))
        elif mode == "pipe":
            pipe(broker, sys.argv[3], sys.argv[4], sys.argv[5],
                 int(sys.argv[6]) if len(sys.argv) > 6 else 0)
        elif mode == "commit":
            commit(broker, sys.argv[3], sys.argv[4], int(sys.argv[5]))
        elif mode == "committed":
            commit(broker, sys.argv[3], sys.argv[4], None)
        elif mode == "hang":
            hang(broker, sys.argv[3], sys.argv[4])
        elif mode == "after":
            after(broker, sys.argv[3])
        elif mode == "wait":
            wait(broker, sys.argv[3])
        elif mode == "kip447":
            kip447(broker, sys.argv[3], sys.argv[4])
        else:
            fail(__doc__)
    except KafkaException as e:
        fail("%s: %s" % (mode, e))


if __name__ == "__main__":
    main()
