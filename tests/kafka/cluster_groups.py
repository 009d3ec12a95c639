#!/usr/bin/env python3
"""cluster_groups.py — what tests/cli_cluster_groups.sh asks of a cluster's group coordinators
(docs/cluster.md §7.4, tools/kafka/handlers/group_cluster.c KGC1-KGC4), printing what it got; the
shell test decides what is right.

usage: cluster_groups.py coord     HOST:PORT GROUP
         (FindCoordinator v1 and v4 for GROUP: prints "ERROR NODE ERROR4 NODE4")
       cluster_groups.py heartbeat HOST:PORT GROUP
         (one Heartbeat v0 with an unknown member: prints its error code)
       cluster_groups.py commit    HOST:PORT GROUP TOPIC PART OFFSET
         (one OffsetCommit v2 of a simple consumer, generation -1: prints its error code once
         answered)
       cluster_groups.py consume   BOOTSTRAP TOPIC GROUP COUNT OUT.json
         (a confluent-kafka consumer of GROUP reads COUNT records, no auto commit, commits them
         synchronously, reads the committed offsets back, closes; OUT.json gets
         {"values": [...], "committed": {"P": OFFSET}})
       cluster_groups.py resume    BOOTSTRAP TOPIC GROUP PARTS OUT.json
         (a new consumer of GROUP: the committed offsets of partitions 0..PARTS-1 first, then
         every record it reads until none arrives for 4 s: {"committed": ..., "values": [...]})
"""
import json
import sys
import time

import kwire
from kwire import kstr, s16, s32


def coord(addr, group):
    c = kwire.Conn(addr, "cluster-groups", answer=kwire.R)
    r = c.call(10, 1, kstr(group) + bytes([0]))  # v1: key, key_type 0
    err1, node1 = -1, -1
    if r is not None:
        r.i32()  # throttle
        err1 = r.i16()
        r.str()  # error message
        node1 = r.i32()
    # v4 (flexible, header v2): key_type, coordinator_keys as a compact array
    key = group.encode()
    body = bytes([0]) + bytes([2]) + bytes([len(key) + 1]) + key + b"\x00"
    c.send(10, 4, body, header_v2=True)
    got = c.recv()
    err4, node4 = -1, -1
    if got is not None:
        b = got[1].b
        at = 1 + 4  # response header v1's tags, throttle
        n = b[at] - 1
        at += 1
        if n == 1:
            kl = b[at] - 1
            at += 1 + kl
            node4 = int.from_bytes(b[at:at + 4], "big", signed=True)
            at += 4
            hl = b[at] - 1
            at += 1 + hl + 4
            err4 = int.from_bytes(b[at:at + 2], "big", signed=True)
    print(err1, node1, err4, node4)


def heartbeat(addr, group):
    c = kwire.Conn(addr, "cluster-groups", answer=kwire.R)
    r = c.call(12, 0, kstr(group) + s32(1) + kstr("nobody"))
    print(r.i16() if r is not None else -1)


def commit(addr, group, topic, part, offset):
    c = kwire.Conn(addr, "cluster-groups", timeout=30, answer=kwire.R)
    body = kstr(group) + s32(-1) + kstr("") + kwire.s64(-1)
    body += s32(1) + kstr(topic) + s32(1) + s32(part) + kwire.s64(offset) + kstr("")
    r = c.call(8, 2, body)
    if r is None:
        print(-1)
        return
    r.i32()  # topics
    r.str()
    r.i32()  # partitions
    r.i32()  # partition
    print(r.i16(), flush=True)


def consumer(bootstrap, group):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "topic.metadata.refresh.interval.ms": 1000,
                     "socket.connection.setup.timeout.ms": 2000,
                     "reconnect.backoff.max.ms": 500})


def committed(c, topic, parts):
    from confluent_kafka import TopicPartition
    end = time.time() + 20
    while True:
        try:
            got = c.committed([TopicPartition(topic, p) for p in range(parts)], timeout=5)
            return {str(tp.partition): tp.offset for tp in got}
        except Exception as e:  # a coordinator still moving: retried
            if time.time() > end:
                return {"error": str(e)}
            time.sleep(0.5)


def consume(bootstrap, topic, group, count, out):
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    values = []
    end = time.time() + 30
    while len(values) < count and time.time() < end:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        values.append(m.value().decode())
    c.commit(asynchronous=False)
    parts = len(c.assignment())
    got = committed(c, topic, 2 if parts < 2 else parts)
    c.close()
    json.dump({"values": values, "committed": got}, open(out, "w"))


def resume(bootstrap, topic, group, parts, out):
    c = consumer(bootstrap, group)
    got = committed(c, topic, parts)
    c.subscribe([topic])
    values = []
    last = time.time()
    end = time.time() + 30
    while time.time() < end and (not values or time.time() - last < 4):
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        values.append(m.value().decode())
        last = time.time()
    c.close()
    json.dump({"values": values, "committed": got}, open(out, "w"))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "coord":
        coord(a[1], a[2])
    elif a[0] == "heartbeat":
        heartbeat(a[1], a[2])
    elif a[0] == "commit":
        commit(a[1], a[2], a[3], int(a[4]), int(a[5]))
    elif a[0] == "consume":
        consume(a[1], a[2], a[3], int(a[4]), a[5])
    elif a[0] == "resume":
        resume(a[1], a[2], a[3], int(a[4]), a[5])
    else:
        sys.exit("unknown command " + a[0])
