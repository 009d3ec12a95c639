#!/usr/bin/python3
"""py_groups.py — python3-confluent-kafka (on librdkafka) consumer groups against `ringtail serve`,
for tests/cli_kafka_groups.sh. It drives the clients and reports what they saw; the driver checks.

usage:
  py_groups.py BROKER fill TOPIC N PARTS   N records "v0".."v<N-1>" (record i to partition
                                           i % PARTS); prints "filled N"
  py_groups.py BROKER member TOPIC GROUP NAME [SESSION_MS]
                                           one group member (subscribe, range assignor,
                                           auto commit off, commits after each record it
                                           prints). Prints "assigned NAME p,p,.." on every
                                           assignment, "got NAME partition offset value" per
                                           record; stops on a line "leave" on stdin (closes:
                                           LeaveGroup) or when killed. With
                                           RT_GROUP_INSTANCE_ID set, a static member of that
                                           group.instance.id (KIP-345).
  py_groups.py BROKER committed TOPIC GROUP PARTS
                                           prints "committed o0 o1 .." (OffsetFetch)
  py_groups.py BROKER pipe IN OUT GROUP [SLOW_MS]
                                           tests/kafka/py_txn.py's consume-transform-produce
                                           pipeline with subscribe() instead of assign(): a
                                           member of GROUP (read_committed, session 3 s) and a
                                           transactional producer ("gpipe-" + GROUP) turn "v<i>"
                                           into "x-v<i>" on the same partition of OUT, at most 10
                                           records per transaction with the consumed offsets sent
                                           in it (the group's generation and member id with
                                           them); every third aborted and its input read again.
                                           Prints "committed K" after each commit and "done" when
                                           the group's committed offsets are every end.
  py_groups.py BROKER read TOPIC PARTS     every value of TOPIC read_committed, one a line
  py_groups.py BROKER describe GROUP       prints "state S members N protocol P"
                                           (DescribeGroups) and "listed" if ListGroups names
                                           GROUP
"""
import os
import select
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient


def fail(msg):
    print(msg, file=sys.stderr, flush=True)
    sys.exit(1)


def fill(broker, topic, n, parts):
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, value=("v%d" % i).encode(), partition=i % parts)
        p.poll(0)
    if p.flush(30) != 0:
        fail("fill: not every record was delivered")
    print("filled %d" % n, flush=True)


def member(broker, topic, group, name, session_ms):
    def on_assign(c, parts):
        print("assigned %s %s" % (name, ",".join(str(p.partition) for p in sorted(parts, key=lambda p: p.partition))), flush=True)

    def on_revoke(c, parts):
        print("revoked %s" % name, flush=True)

    conf = {}
    if os.environ.get("RT_GROUP_INSTANCE_ID"):
        conf["group.instance.id"] = os.environ["RT_GROUP_INSTANCE_ID"]
    c = Consumer({
        **conf,
        "bootstrap.servers": broker,
        "group.id": group,
        "client.id": name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": 300,
        "partition.assignment.strategy": "range",
        "topic.metadata.refresh.interval.ms": 1000,
    })
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    while True:
        r, _, _ = select.select([sys.stdin], [], [], 0)
        if r and sys.stdin.readline().strip() == "leave":
            break
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        c.commit(message=m, asynchronous=False)
        print("got %s %d %d %s" % (name, m.partition(), m.offset(), m.value().decode()), flush=True)
    c.close()
    print("left %s" % name, flush=True)


def pipe(broker, src, dst, group, slow_ms):
    c = Consumer({
        "bootstrap.servers": broker,
        "group.id": group,
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 3000,
        "heartbeat.interval.ms": 300,
    })
    p = Producer({"bootstrap.servers": broker, "transactional.id": "gpipe-" + group})
    p.init_transactions(30)  # fences an older instance, aborts what it left open
    md = c.list_topics(src, timeout=10)
    parts = [TopicPartition(src, i) for i in sorted(md.topics[src].partitions.keys())]
    ends = {tp.partition: c.get_watermark_offsets(tp, timeout=10)[1] for tp in parts}
    c.subscribe([src])

    def rewind():
        mine = c.assignment()
        if mine:
            for tp in c.committed(mine, timeout=10):
                c.seek(TopicPartition(src, tp.partition, tp.offset if tp.offset >= 0 else 0))

    total, n_txn = 0, 0
    while True:
        msgs = c.consume(10, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            got = c.committed(parts, timeout=10)
            if all(tp.offset >= ends[tp.partition] for tp in got):
                break
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
            rewind()  # read that input again
            continue
        p.commit_transaction(30)
        total += len(msgs)
        print("committed %d" % total, flush=True)
    c.close()
    print("done", flush=True)


def read(broker, topic, parts):
    c = Consumer({"bootstrap.servers": broker, "group.id": "py-read", "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, i, 0) for i in range(parts)])
    eof = set()
    deadline = time.time() + 30
    while len(eof) < parts and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
            continue
        print(m.value().decode(), flush=True)
    c.close()
    if len(eof) < parts:
        fail("read: not every partition reached its end")


def committed(broker, topic, group, parts):
    c = Consumer({"bootstrap.servers": broker, "group.id": group})
    got = c.committed([TopicPartition(topic, p) for p in range(parts)], timeout=10)
    print("committed " + " ".join(str(tp.offset) for tp in got), flush=True)
    c.close()


def describe(broker, group):
    a = AdminClient({"bootstrap.servers": broker})
    got = a.list_groups(group, timeout=10)  # DescribeGroups
    for g in got:
        print("state %s members %d protocol %s" % (g.state, len(g.members), g.protocol), flush=True)
    if any(g.id == group for g in a.list_groups(timeout=10)):  # ListGroups, then DescribeGroups
        print("listed", flush=True)


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    broker, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "fill":
        fill(broker, args[0], int(args[1]), int(args[2]))
    elif mode == "member":
        member(broker, args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 6000)
    elif mode == "pipe":
        pipe(broker, args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 0)
    elif mode == "read":
        read(broker, args[0], int(args[1]))
    elif mode == "committed":
        committed(broker, args[0], args[1], int(args[2]))
    elif mode == "describe":
        describe(broker, args[0])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
