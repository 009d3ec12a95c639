#!/usr/bin/env python3
"""txn_wire.py — the transactional APIs of `ringtail serve` at the byte level, as a hostile or
broken client would use them (for tests/cli_kafka_txn.sh). Standard library only.

usage: txn_wire.py HOST:PORT TOPIC      (TOPIC has 3 partitions)

Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed. Checks:
  - InitProducerId v1 with a transactional id answers NONE with a producer id and epoch;
  - AddPartitionsToTxn v1 naming partition 0 and partition 99: 99 is UNKNOWN_TOPIC_OR_PARTITION
    (3), 0 is OPERATION_NOT_ATTEMPTED (55) — nothing added;
  - a transactional Produce v3 to a partition not added is refused INVALID_TXN_STATE (48) and
    nothing is written (the high watermark stays); after AddPartitionsToTxn it is accepted;
  - EndTxn v1 with an older epoch answers INVALID_PRODUCER_EPOCH (47); with an id holding an
    embedded NUL, INVALID_REQUEST (42); the right one commits (NONE);
  - AddOffsetsToTxn / EndTxn for an id never initialised: INVALID_TXN_STATE (48);
  - InitProducerId with a transaction timeout of 0: INVALID_TRANSACTION_TIMEOUT (50);
  - OffsetCommit v2 with generation 5 (no group membership is served): ILLEGAL_GENERATION (22),
    nothing stored; with generation -1: NONE, and OffsetFetch v1 returns it;
  - a truncated AddPartitionsToTxn body, and one claiming 2^31-1 topics, close the connection
    and the broker goes on answering new connections.
"""
import struct
import sys

import kwire
from kwire import check, crc32c, kstr, s16, s32, s64, zigzag


class Conn(kwire.Conn):
    def __init__(self, addr):
        super().__init__(addr, "txn_wire")


def record_batch(pid, epoch, seq, value, transactional=True):
    rec = bytes([0]) + zigzag(0) + zigzag(0) + zigzag(-1) + zigzag(len(value)) + value + zigzag(0)
    rec = zigzag(len(rec)) + rec
    attrs = 0x10 if transactional else 0
    after_crc = (
        s16(attrs) + s32(0) + s64(1000) + s64(1000) + s64(pid) + s16(epoch) + s32(seq) + s32(1) + rec
    )
    body = s32(0) + bytes([2]) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return s64(0) + s32(len(body)) + body


def init_pid(c, txn_id, timeout=10000):
    r = c.call(22, 1, kstr(txn_id) + s32(timeout))
    _, err, pid, epoch = struct.unpack(">ihqh", r[:16])
    return err, pid, epoch


def add_partitions(c, txn_id, pid, epoch, topic, parts):
    body = kstr(txn_id) + s64(pid) + s16(epoch) + s32(1) + kstr(topic) + s32(len(parts))
    for p in parts:
        body += s32(p)
    r = c.call(24, 1, body)
    # throttle, [name [partition error]]
    off = 4
    (nt,) = struct.unpack(">i", r[off : off + 4])
    off += 4
    out = {}
    for _ in range(nt):
        (ln,) = struct.unpack(">h", r[off : off + 2])
        off += 2 + ln
        (np_,) = struct.unpack(">i", r[off : off + 4])
        off += 4
        for _ in range(np_):
            p, e = struct.unpack(">ih", r[off : off + 6])
            off += 6
            out[p] = e
    return out


def produce(c, txn_id, topic, part, batch):
    body = kstr(txn_id) + s16(-1) + s32(10000) + s32(1) + kstr(topic) + s32(1) + s32(part)
    body += s32(len(batch)) + batch
    r = c.call(0, 3, body)
    # [name [partition error base_offset log_append_time]] throttle
    off = 4
    (ln,) = struct.unpack(">h", r[off : off + 2])
    off += 2 + ln + 4
    p, e = struct.unpack(">ih", r[off : off + 6])
    return e


def high_watermark(c, topic, part):
    # ListOffsets v1: replica -1, [topic [partition timestamp]]
    body = s32(-1) + s32(1) + kstr(topic) + s32(1) + s32(part) + s64(-1)
    r = c.call(2, 1, body)
    off = 4
    (ln,) = struct.unpack(">h", r[off : off + 2])
    off += 2 + ln + 4
    p, e, ts, o = struct.unpack(">ihqq", r[off : off + 22])
    return o


def end_txn(c, txn_id, pid, epoch, commit):
    r = c.call(26, 1, kstr(txn_id) + s64(pid) + s16(epoch) + bytes([1 if commit else 0]))
    return struct.unpack(">ih", r[:6])[1]


def main():
    addr, topic = sys.argv[1], sys.argv[2]
    c = Conn(addr)
    err, pid, epoch = init_pid(c, "wire")
    check(err == 0 and pid >= 0 and epoch >= 0, "InitProducerId v1 with a transactional id")

    res = add_partitions(c, "wire", pid, epoch, topic, [0, 99])
    check(res == {0: 55, 99: 3}, "AddPartitionsToTxn: unknown partition 3, the rest 55 (%r)" % res)

    hw = high_watermark(c, topic, 1)
    e = produce(c, "wire", topic, 1, record_batch(pid, epoch, 0, b"not-added"))
    check(e == 48, "transactional Produce to a partition not added: INVALID_TXN_STATE (%d)" % e)
    check(high_watermark(c, topic, 1) == hw, "... and nothing written")

    res = add_partitions(c, "wire", pid, epoch, topic, [1])
    check(res == {1: 0}, "AddPartitionsToTxn of an existing partition: NONE (%r)" % res)
    e = produce(c, "wire", topic, 1, record_batch(pid, epoch, 0, b"added"))
    check(e == 0, "transactional Produce after AddPartitionsToTxn: NONE (%d)" % e)

    e = end_txn(c, "wire", pid, epoch - 1 if epoch > 0 else epoch + 1, True)
    check(e == 47, "EndTxn with another epoch: INVALID_PRODUCER_EPOCH (%d)" % e)
    e = end_txn(c, b"wi\x00re", pid, epoch, True)
    check(e == 42, "EndTxn with a NUL inside the id: INVALID_REQUEST (%d)" % e)
    e = end_txn(c, "wire", pid, epoch, True)
    check(e == 0, "EndTxn commit: NONE (%d)" % e)
    check(high_watermark(c, topic, 1) == hw + 2, "the record and its marker are in the log")

    r = c.call(25, 1, kstr("never-initialised") + s64(pid) + s16(epoch) + kstr("g"))
    e = struct.unpack(">ih", r[:6])[1]
    check(e == 48, "AddOffsetsToTxn for an id never initialised: INVALID_TXN_STATE (%d)" % e)
    e = end_txn(c, "never-initialised", pid, epoch, False)
    check(e == 48, "EndTxn for an id never initialised: INVALID_TXN_STATE (%d)" % e)
    err, _, _ = init_pid(c, "wire", 0)
    check(err == 50, "InitProducerId with timeout 0: INVALID_TRANSACTION_TIMEOUT (%d)" % err)

    def offset_commit(gen, off):
        body = kstr("wg") + s32(gen) + kstr("") + s64(-1) + s32(1) + kstr(topic) + s32(1)
        body += s32(2) + s64(off) + kstr("md")
        r = c.call(8, 2, body)  # [name [partition error]]
        (ln,) = struct.unpack(">h", r[4:6])
        return struct.unpack(">ih", r[6 + ln + 4 : 6 + ln + 10])[1]

    def offset_fetch():
        r = c.call(9, 1, kstr("wg") + s32(1) + kstr(topic) + s32(1) + s32(2))
        (ln,) = struct.unpack(">h", r[4:6])
        return struct.unpack(">iq", r[6 + ln + 4 : 6 + ln + 16])[1]

    e = offset_commit(5, 11)
    check(e == 22 and offset_fetch() == -1,
          "OffsetCommit with generation 5: ILLEGAL_GENERATION (%d), nothing stored" % e)
    e = offset_commit(-1, 11)
    check(e == 0 and offset_fetch() == 11, "OffsetCommit with generation -1: stored (%d)" % e)

    # OffsetFetch v7's require_stable (KO6): a transactional commit pending for the partition
    # answers UNSTABLE_OFFSET_COMMIT (88) until its marker; v0-6, which cannot ask for stable
    # offsets, answer COORDINATOR_LOAD_IN_PROGRESS (14) meanwhile (KO12): top level for v5, in
    # the partition for v1.
    def uvar(n):
        out = b""
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out += bytes([b | 0x80])
            else:
                return out + bytes([b])

    def cstr(x):
        b = x.encode()
        return uvar(len(b) + 1) + b

    def offset_fetch_v7(stable):
        body = cstr("wg") + uvar(2) + cstr(topic) + uvar(2) + s32(2) + b"\x00"
        body += bytes([1 if stable else 0]) + b"\x00"
        c.send(9, 7, body, header_v2=True)
        r = c.recv()[1]
        off = 1 + 4  # response header v1's tags, throttle
        off += 1  # topics: one
        off += 1 + len(topic.encode())  # compact name
        off += 1  # partitions: one
        p_, o, _ = struct.unpack(">iqi", r[off : off + 16])
        off += 16
        off += 1 if r[off] == 0 else r[off]  # metadata (compact nullable: "" is length 1)
        (err,) = struct.unpack(">h", r[off : off + 2])
        return o, err

    def offset_fetch_v5():
        r = c.call(9, 5, kstr("wg") + s32(1) + kstr(topic) + s32(1) + s32(2))
        # throttle, [name [partition offset leader_epoch metadata error]], error
        (n,) = struct.unpack(">i", r[4:8])
        if n == 0:  # a group-level error alone
            return -1, struct.unpack(">h", r[8:10])[0]
        (ln,) = struct.unpack(">h", r[8:10])
        (o,) = struct.unpack(">q", r[10 + ln + 8 : 10 + ln + 16])
        return o, struct.unpack(">h", r[-2:])[0]

    def offset_fetch_v1():
        r = c.call(9, 1, kstr("wg") + s32(1) + kstr(topic) + s32(1) + s32(2))
        (ln,) = struct.unpack(">h", r[4:6])
        o, md = struct.unpack(">qh", r[6 + ln + 8 : 6 + ln + 18])
        (err,) = struct.unpack(">h", r[6 + ln + 18 + max(md, 0) : 6 + ln + 20 + max(md, 0)])
        return o, err

    err, pid2, epoch2 = init_pid(c, "wire-offsets")
    r = c.call(25, 1, kstr("wire-offsets") + s64(pid2) + s16(epoch2) + kstr("wg"))
    e = struct.unpack(">ih", r[:6])[1]
    check(err == 0 and e == 0, "AddOffsetsToTxn of group wg: NONE (%d)" % e)
    body = kstr("wire-offsets") + kstr("wg") + s64(pid2) + s16(epoch2) + s32(1) + kstr(topic)
    body += s32(1) + s32(2) + s64(20) + kstr("")
    r = c.call(28, 0, body)
    (ln,) = struct.unpack(">h", r[8:10])
    e = struct.unpack(">ih", r[10 + ln + 4 : 10 + ln + 10])[1]
    check(e == 0, "TxnOffsetCommit of offset 20: NONE (%d), pending until the marker" % e)
    o, e = offset_fetch_v7(True)
    check(e == 88, "OffsetFetch v7 require_stable while it is pending: UNSTABLE_OFFSET_COMMIT (%d)" % e)
    o, e = offset_fetch_v7(False)
    check(e == 0 and o == 11, "OffsetFetch v7 without require_stable: the committed 11 (%d, %d)" % (o, e))
    o, e = offset_fetch_v5()
    check(e == 14, "OffsetFetch v5 while it is pending: COORDINATOR_LOAD_IN_PROGRESS (%d, %d)" % (o, e))
    o, e = offset_fetch_v1()
    check(e == 14 and o == -1,
          "OffsetFetch v1 while it is pending: COORDINATOR_LOAD_IN_PROGRESS in the partition (%d, %d)" % (o, e))
    e = end_txn(c, "wire-offsets", pid2, epoch2, True)
    check(e == 0, "EndTxn commit of the offsets: NONE (%d)" % e)
    o, e = offset_fetch_v7(True)
    check(e == 0 and o == 20, "OffsetFetch v7 require_stable after the marker: 20 (%d, %d)" % (o, e))
    o, e = offset_fetch_v5()
    check(e == 0 and o == 20, "OffsetFetch v5 after the marker: 20 (%d, %d)" % (o, e))
    o, e = offset_fetch_v1()
    check(e == 0 and o == 20, "OffsetFetch v1 after the marker: 20 (%d, %d)" % (o, e))

    body = kstr("wire") + s64(pid) + s16(epoch) + s32(1) + kstr(topic) + s32(2) + s32(0)
    r = c.call(24, 1, body)  # one partition short
    check(r is None, "a truncated AddPartitionsToTxn closes the connection")
    c = Conn(addr)
    r = c.call(24, 1, kstr("wire") + s64(pid) + s16(epoch) + s32(0x7FFFFFFF))
    check(r is None, "AddPartitionsToTxn claiming 2^31-1 topics closes the connection")
    c = Conn(addr)
    err, _, _ = init_pid(c, "wire")
    check(err == 0, "the broker answers a new connection afterwards")
    return 1 if kwire.failed else 0


if __name__ == "__main__":
    sys.exit(main())
