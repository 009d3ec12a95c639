"""topic_recreate.py — what a group's committed offsets are after DeleteTopics and a create of
the same name, spoken on the wire (kwire): Kafka's group coordinator deletes a deleted topic's
committed offsets from every group (GroupCoordinator.handleDeletedPartitions), so the topic
created again starts with none (handle_admin.c KAD9). librdkafka's 0107_topic_recreate deletes
and recreates a topic under a consuming group (docs/conformance.md).

usage: topic_recreate.py HOST:PORT [restarted] — prints ok/FAIL lines; exit 1 on any failure.
With "restarted", only checks what the first run left, after a broker restart.
"""
import sys

from kwire import R, check, kstr, s16, s32, s64
import kwire

addr = sys.argv[1]
c = kwire.Conn(addr, "topic-recreate", answer=R)
TOPIC = "recreated"
NONE, UNKNOWN = 0, 3


def create(n):
    r = c.call(19, 0, s32(1) + kstr(TOPIC) + s32(n) + s16(1) + s32(0) + s32(0) + s32(10000))
    r.i32()
    r.str()
    return r.i16()


def delete():
    r = c.call(20, 0, s32(1) + kstr(TOPIC) + s32(10000))
    r.i32()
    r.str()
    return r.i16()


def commit(group, parts, offset):
    """OffsetCommit v2 as a simple consumer (generation -1): {partition: error}."""
    body = kstr(group) + s32(-1) + kstr("") + s64(-1) + s32(1) + kstr(TOPIC) + s32(len(parts))
    for p in parts:
        body += s32(p) + s64(offset) + kstr("")
    r = c.call(8, 2, body)
    out = {}
    for _ in range(r.i32()):
        r.str()
        for _ in range(r.i32()):
            p = r.i32()
            out[p] = r.i16()
    return out


def fetch(group, parts):
    """OffsetFetch v1: {partition: (offset, error)}."""
    body = kstr(group) + s32(1) + kstr(TOPIC) + s32(len(parts)) + b"".join(s32(p) for p in parts)
    r = c.call(9, 1, body)
    out = {}
    for _ in range(r.i32()):
        r.str()
        for _ in range(r.i32()):
            p = r.i32()
            hi, lo = r.i32(), r.i32()
            r.str()
            out[p] = ((hi << 32) | (lo & 0xFFFFFFFF), r.i16())
    return out


def fetch_all(group):
    """OffsetFetch v2 with a null topic array: [(topic, partition, offset)]."""
    r = c.call(9, 2, kstr(group) + s32(-1))
    out = []
    for _ in range(r.i32()):
        t = r.str()
        for _ in range(r.i32()):
            p = r.i32()
            hi, lo = r.i32(), r.i32()
            r.str()
            r.i16()
            out.append((t, p, (hi << 32) | (lo & 0xFFFFFFFF)))
    return out


if sys.argv[2:] == ["restarted"]:
    got = fetch_all("g-a")
    check(got == [(TOPIC, p, 2) for p in range(3)],
          "after a restart g-a has only its commits to the new topic (got %s)" % got)
    check(fetch_all("g-b") == [], "and g-b's deleted offset stays deleted")
    sys.exit(1 if kwire.failed else 0)

check(create(10) == NONE, "a topic of 10 partitions is created")
got = commit("g-a", range(10), 7)
check(got == {p: NONE for p in range(10)}, "group g-a commits offset 7 on its 10 partitions")
check(commit("g-b", [1], 9) == {1: NONE}, "group g-b commits offset 9 on partition 1")
check(fetch("g-a", [0, 9]) == {0: (7, NONE), 9: (7, NONE)}, "g-a's commits are fetched back")
check(delete() == NONE, "DeleteTopics deletes it")
check(fetch_all("g-a") == [], "after the delete, g-a has no committed offset left (KAD9)")
check(fetch_all("g-b") == [], "after the delete, g-b has none left either")
check(create(3) == NONE, "the name is created again, with 3 partitions")
got = fetch("g-a", [0, 1, 2])
check(got == {p: (-1, NONE) for p in range(3)},
      "the new topic starts with no committed offset for g-a (got %s)" % got)
check(fetch("g-b", [1]) == {1: (-1, NONE)}, "nor for g-b")
got = commit("g-a", range(10), 2)
check(got == dict([(p, NONE) for p in range(3)] + [(p, UNKNOWN) for p in range(3, 10)]),
      "a commit naming the old 10 partitions: the 3 that exist again are stored, the other 7 are "
      "UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers (got %s)" % got)
check(fetch("g-a", [0, 2]) == {0: (2, NONE), 2: (2, NONE)}, "and the stored ones are fetched back")
sys.exit(1 if kwire.failed else 0)
