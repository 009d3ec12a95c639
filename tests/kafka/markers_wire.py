#!/usr/bin/env python3
"""markers_wire.py — WriteTxnMarkers (27) on a cluster node at the byte level, and the markers a
coordinator sends to another node's partition (for tests/cli_cluster_txn.sh; handle_txn_markers.c
KTM1-KTM6, handle_txn.c KT8, KT9; docs/cluster.md §7.3). Standard library only.

usage: markers_wire.py PORT_Y PORT_X TOPIC PY PX
  node Y (at PORT_Y) leads TOPIC-PY and not TOPIC-PX; node X (at PORT_X) leads TOPIC-PX.

Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed. Checks, at node Y unless said:
  - a transaction of id mw-c (InitProducerId and AddPartitionsToTxn at X, the coordinator; a
    transactional Produce of "mw-c1" to PY at Y, which verifies it with X: txn_verify.c, KIP-890
    across nodes) pins the LSO of PY (ListOffsets READ_COMMITTED) below the log end;
  - WriteTxnMarkers v1 COMMIT of its producer id and epoch for PY answers NONE, and the LSO
    reaches the log end (the marker is in; read_committed readers see mw-c1);
  - the same marker again answers NONE (KTM5), written as a no-op control batch;
  - a transaction of id mw-a ("mw-a1"), then WriteTxnMarkers v0 ABORT: NONE and the LSO at the
    log end (the caller's read_committed consumer must not see mw-a1);
  - mw-a initialised again at X (the same producer id, a newer epoch) writes "mw-a2"; a marker at the
    older epoch answers INVALID_PRODUCER_EPOCH (47, stale: the sender counts it as written) and
    the LSO stays pinned; its ABORT at the new epoch answers NONE;
  - at node X, the coordinator, mw-c is committed and mw-a aborted (their markers repeat the
    ones above: nothing left open for a new coordinator to abort while the nodes stop);
  - WriteTxnMarkers for PX (led by X): NOT_LEADER_OR_FOLLOWER (6), and PX's log end unchanged;
  - WriteTxnMarkers for a topic no node has: UNKNOWN_TOPIC_OR_PARTITION (3);
  - at node X: AddPartitionsToTxn of PY (led by Y) answers NONE (KT8 no longer refuses it), and
    EndTxn commit answers NONE only because X's marker writer sent WriteTxnMarkers to Y: Y's log
    end of PY grows by the one marker.
"""
import struct
import sys
import time

import kwire
from kwire import check, kstr, s16, s32, s64

from txn_wire import add_partitions, end_txn, init_pid, produce, record_batch


def uv(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def cstr(s):
    b = s.encode()
    return uv(len(b) + 1) + b


def markers_body(ver, pid, epoch, commit, topic, part):
    """One marker, one topic, one partition; coordinator epoch 0."""
    if ver == 0:
        return (s32(1) + s64(pid) + s16(epoch) + bytes([1 if commit else 0]) + s32(1) + kstr(topic)
                + s32(1) + s32(part) + s32(0))
    return (uv(2) + s64(pid) + s16(epoch) + bytes([1 if commit else 0]) + uv(2) + cstr(topic)
            + uv(2) + s32(part) + b"\x00" + s32(0) + b"\x00" + b"\x00")


class Rd:
    def __init__(self, b):
        self.b, self.o = b, 0

    def take(self, n):
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def uv(self):
        v = sh = 0
        while True:
            c = self.b[self.o]
            self.o += 1
            v |= (c & 0x7F) << sh
            sh += 7
            if c < 0x80:
                return v


def write_markers(addr, ver, pid, epoch, commit, topic, part):
    """The error code of (topic, part) in the answer, or None (closed / not named)."""
    c = kwire.Conn(addr, "markers_wire")
    c.send(27, ver, markers_body(ver, pid, epoch, commit, topic, part), header_v2=ver >= 1)
    got = c.recv()
    if not got:
        return None
    r = Rd(got[1])
    found = None
    if ver >= 1:
        r.uv()  # the response header's tags
    nm = r.uv() - 1 if ver >= 1 else struct.unpack(">i", r.take(4))[0]
    for _ in range(nm):
        (mpid,) = struct.unpack(">q", r.take(8))
        nt = r.uv() - 1 if ver >= 1 else struct.unpack(">i", r.take(4))[0]
        for _ in range(nt):
            ln = r.uv() - 1 if ver >= 1 else struct.unpack(">h", r.take(2))[0]
            name = r.take(ln).decode()
            npart = r.uv() - 1 if ver >= 1 else struct.unpack(">i", r.take(4))[0]
            for _ in range(npart):
                p, e = struct.unpack(">ih", r.take(6))
                if ver >= 1:
                    r.uv()
                if mpid == pid and name == topic and p == part:
                    found = e
            if ver >= 1:
                r.uv()
        if ver >= 1:
            r.uv()
    return found


def offsets(c, topic, part):
    """(log end, LSO) of topic-part: ListOffsets v2 latest, READ_UNCOMMITTED then READ_COMMITTED."""
    out = []
    for iso in (0, 1):
        body = s32(-1) + bytes([iso]) + s32(1) + kstr(topic) + s32(1) + s32(part) + s64(-1)
        r = c.call(2, 2, body)
        off = 4 + 4
        (ln,) = struct.unpack(">h", r[off:off + 2])
        off += 2 + ln + 4
        p, e, ts, o = struct.unpack(">ihqq", r[off:off + 22])
        out.append(o if e == 0 else -1)
    return tuple(out)


def pending_txn(cc, c, txn_id, topic, part, value):
    """A transaction of txn_id, begun at the coordinator (cc), holding one record in topic-part
    at this node (c; verified with the coordinator, KIP-890 across nodes): (pid, epoch)."""
    err, pid, epoch = init_pid(cc, txn_id, 60000)
    res = add_partitions(cc, txn_id, pid, epoch, topic, [part])
    e = produce(c, txn_id, topic, part, record_batch(pid, epoch, 0, value))
    check(err == 0 and res == {part: 0} and e == 0,
          "%s: InitProducerId, AddPartitionsToTxn and a transactional Produce (%d %r %d)"
          % (txn_id, err, res, e))
    return pid, epoch


def main():
    py_port, px_port, topic, py, px = sys.argv[1:6]
    ay, ax = "127.0.0.1:" + py_port, "127.0.0.1:" + px_port
    py, px = int(py), int(px)
    cy = kwire.Conn(ay, "markers_wire")
    cx = kwire.Conn(ax, "markers_wire")  # the coordinator's node

    pid, epoch = pending_txn(cx, cy, "mw-c", topic, py, b"mw-c1")
    end, lso = offsets(cy, topic, py)
    check(0 <= lso < end, "pending: the LSO of %s-%d (%d) below its log end (%d)" % (topic, py, lso, end))
    e = write_markers(ay, 1, pid, epoch, True, topic, py)
    check(e == 0, "WriteTxnMarkers v1 COMMIT into a partition this node leads: NONE (%r)" % e)
    end2, lso2 = offsets(cy, topic, py)
    check(end2 == end + 1 and lso2 == end2,
          "the marker is in and the LSO reaches the log end (%d/%d -> %d/%d)" % (lso, end, lso2, end2))
    e = write_markers(ay, 1, pid, epoch, True, topic, py)
    check(e == 0, "the same marker again: NONE (%r)" % e)
    end3, lso3 = offsets(cy, topic, py)
    check(lso3 == end3, "... the LSO still at the log end (%d/%d)" % (lso3, end3))

    pid_a, epoch_a = pending_txn(cx, cy, "mw-a", topic, py, b"mw-a1")
    e = write_markers(ay, 0, pid_a, epoch_a, False, topic, py)
    check(e == 0, "WriteTxnMarkers v0 ABORT: NONE (%r)" % e)
    end4, lso4 = offsets(cy, topic, py)
    check(lso4 == end4, "the aborted transaction no longer pins the LSO (%d/%d)" % (lso4, end4))

    # a newer epoch of mw-a's producer (InitProducerId again: its coordinator ends what it held
    # and bumps the epoch), then a marker at the old epoch: stale (KTM5)
    for _ in range(50):
        err, pid_b, epoch_b = init_pid(cx, "mw-a", 60000)
        if err != 51:  # CONCURRENT_TRANSACTIONS while the old one ends
            break
        time.sleep(0.1)
    res = add_partitions(cx, "mw-a", pid_b, epoch_b, topic, [py])
    e = produce(cy, "mw-a", topic, py, record_batch(pid_b, epoch_b, 0, b"mw-a2"))
    check(err == 0 and pid_b == pid_a and epoch_b > epoch_a and res == {py: 0} and e == 0,
          "mw-a again: the same producer id at a newer epoch, writing (%d %d %d %r %d)"
          % (err, pid_b, epoch_b, res, e))
    e = write_markers(ay, 1, pid_a, epoch_a, True, topic, py)
    check(e == 47, "a marker at the older epoch: INVALID_PRODUCER_EPOCH (%r)" % e)
    end5, lso5 = offsets(cy, topic, py)
    check(lso5 < end5, "... and the newer transaction still pending (%d/%d)" % (lso5, end5))
    e = write_markers(ay, 1, pid_b, epoch_b, False, topic, py)
    check(e == 0, "its ABORT marker: NONE (%r)" % e)
    # The coordinator X still holds mw-c and mw-a open (the markers above were this script's):
    # ended there now, their markers (repeats: no-op control batches) go to Y on the ISR, so no
    # open transaction is left for a new coordinator to abort while the nodes stop one by one.
    e1 = end_txn(cx, "mw-c", pid, epoch, True)
    e2 = end_txn(cx, "mw-a", pid_b, epoch_b, False)
    check(e1 == 0 and e2 == 0, "at node X: mw-c committed and mw-a aborted (%d %d)" % (e1, e2))

    endx, _ = offsets(kwire.Conn(ax, "markers_wire"), topic, px)
    e = write_markers(ay, 1, pid, epoch, True, topic, px)
    check(e == 6, "WriteTxnMarkers for a partition another node leads: NOT_LEADER_OR_FOLLOWER (%r)" % e)
    endx2, _ = offsets(kwire.Conn(ax, "markers_wire"), topic, px)
    check(endx2 == endx, "... and nothing written there (%d -> %d)" % (endx, endx2))
    e = write_markers(ay, 1, pid, epoch, True, "no-such-topic", 0)
    check(e == 3, "WriteTxnMarkers for a topic no node has: UNKNOWN_TOPIC_OR_PARTITION (%r)" % e)

    # ---- the coordinator at X, a partition led by Y: X sends the marker ----
    err, xpid, xepoch = init_pid(cx, "mw-x", 60000)
    res = add_partitions(cx, "mw-x", xpid, xepoch, topic, [py])
    check(err == 0 and res == {py: 0},
          "at node X: AddPartitionsToTxn of a partition node Y leads: NONE (KT8) (%d %r)" % (err, res))
    before, _ = offsets(cy, topic, py)
    e = end_txn(cx, "mw-x", xpid, xepoch, True)
    check(e == 0, "at node X: EndTxn commit: NONE (%d)" % e)
    after, lso5 = offsets(cy, topic, py)
    for _ in range(20):  # the marker is acknowledged at Y's HW; a follower-served read could lag
        if after == before + 1:
            break
        time.sleep(0.1)
        after, lso5 = offsets(cy, topic, py)
    check(after == before + 1 and lso5 == after,
          "node X's marker landed in node Y's partition (log end %d -> %d, LSO %d)" % (before, after, lso5))
    sys.exit(1 if kwire.failed else 0)


if __name__ == "__main__":
    main()
