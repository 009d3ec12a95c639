#!/usr/bin/env python3
"""cluster_isr.py — single requests tests/cli_cluster_isr.sh sends to a cluster's nodes
(docs/cluster.md §8, replica_state.h) and whose answers it asserts. Standard library only.

usage: cluster_isr.py produce  HOST:PORT TOPIC PART ACKS TIMEOUT_MS
         (prints "ERROR BASE_OFFSET" of one Produce v3 of a 3-record batch)
       cluster_isr.py fetch    HOST:PORT TOPIC PART REPLICA_ID CURRENT_LEADER_EPOCH
         (prints "ERROR HIGH_WATERMARK" of one Fetch v11 at offset 0; REPLICA_ID >= 0 is a
         follower's fetch)
       cluster_isr.py offsets  HOST:PORT TOPIC PART CURRENT_LEADER_EPOCH
         (prints "ERROR OFFSET" of one ListOffsets v4 for the latest offset)
It never decides what an answer must be: the shell test does.
"""
import struct
import sys
import time

import kwire
from kwire import crc32c, kstr, s16, s32, s64, zigzag


def batch(values):
    recs = b""
    for i, v in enumerate(values):
        r = bytes([0]) + zigzag(0) + zigzag(i) + zigzag(-1) + zigzag(len(v)) + v + zigzag(0)
        recs += zigzag(len(r)) + r
    ts = int(time.time() * 1000)
    after_crc = (s16(0) + s32(len(values) - 1) + s64(ts) + s64(ts) + s64(-1) + s16(-1) + s32(-1)
                 + s32(len(values)) + recs)
    body = s32(0) + bytes([2]) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return s64(0) + s32(len(body)) + body


def produce(c, topic, part, acks, timeout_ms):
    rec = batch([b"a", b"b", b"c"])
    body = s16(-1) + s16(acks) + s32(timeout_ms) + s32(1) + kstr(topic) + s32(1) + s32(part)
    body += s32(len(rec)) + rec
    r = c.call(0, 3, body)
    if r is None:
        return None
    off = 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    _, e, base = struct.unpack(">ihq", r[off:off + 14])
    return e, base


def fetch(c, topic, part, replica_id, epoch, offset, wait_ms=0):
    """Fetch v11 of one partition: (error, high watermark, records bytes)."""
    body = s32(replica_id) + s32(wait_ms) + s32(1) + s32(1 << 20) + bytes([0]) + s32(0) + s32(-1)
    body += s32(1) + kstr(topic) + s32(1) + s32(part) + s32(epoch) + s64(offset) + s64(-1)
    body += s32(1 << 20) + s32(0) + kstr("")
    r = c.call(1, 11, body)
    if r is None:
        return None
    rd = kwire.R(r)
    rd.i32()  # throttle
    top = rd.i16()
    rd.i32()  # session id
    rd.i32()  # topics
    rd.str()
    rd.i32()  # partitions
    rd.i32()
    e = rd.i16()
    hw = struct.unpack_from(">q", r, rd.i)[0]
    rd.i += 24  # hw, lso, log start
    na = rd.i32()
    rd.i += max(na, 0) * 16
    rd.i32()  # preferred read replica
    recs = rd.bytes() or b""
    return (top or e), hw, recs


def offsets(c, topic, part, epoch):
    body = s32(-1) + bytes([0]) + s32(1) + kstr(topic) + s32(1) + s32(part) + s32(epoch)
    body += s64(-1)
    r = c.call(2, 4, body)
    if r is None:
        return None
    off = 4 + 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    _, e, _ts, o = struct.unpack(">ihqq", r[off:off + 22])
    return e, o


def main():
    cmd, addr, topic, part = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    c = kwire.Conn(addr, "cluster_isr", timeout=30)
    if cmd == "produce":
        got = produce(c, topic, part, int(sys.argv[5]), int(sys.argv[6]))
        print("%d %d" % got if got else "closed")
    elif cmd == "fetch":
        got = fetch(c, topic, part, int(sys.argv[5]), int(sys.argv[6]), 0)
        print("%d %d" % got[:2] if got else "closed")
    elif cmd == "offsets":
        got = offsets(c, topic, part, int(sys.argv[5]))
        print("%d %d" % got if got else "closed")


if __name__ == "__main__":
    main()
