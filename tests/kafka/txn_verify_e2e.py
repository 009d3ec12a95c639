#!/usr/bin/env python3
"""txn_verify_e2e.py — KIP-890 part 1 across nodes at the byte level (for
tests/cli_cluster_txn_verify.sh; tools/kafka/handlers/txn_verify.c KTV1-KTV7, handle_produce.c
KPR7; docs/cluster.md §7.3). Standard library only.

usage: txn_verify_e2e.py PORT_C PORT_B TOPIC P Q
  node C (at PORT_C) is the transaction coordinator (the leader of __transaction_state-0); node B
  (at PORT_B) leads TOPIC-P and TOPIC-Q and is not the coordinator.

Checks: a transaction at C (InitProducerId, AddPartitionsToTxn of P) — its transactional Produce
to P at B is accepted (B asked C with AddPartitionsToTxn v4), and a second one too (cached); one
to Q, which the transaction has not added, is INVALID_TXN_STATE and nothing is written; after
EndTxn commit (C's marker lands at B by WriteTxnMarkers), a Produce of the same producer and
epoch to P is INVALID_TXN_STATE again (the cache forgot it at the marker); a new instance fences
the epoch: the old epoch's Produce is INVALID_PRODUCER_EPOCH, the new one's accepted once added,
and its commit leaves P's last stable offset at its log end (nothing pinned at B).
"""
import struct
import sys
import time

import kwire
from kwire import check, kstr, s32, s64

from txn_wire import Conn, add_partitions, end_txn, init_pid, produce, record_batch

PORT_C, PORT_B, TOPIC, P, Q = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
TID = "tv-e2e"


def retry(fn, ok, seconds=20):
    end = time.time() + seconds
    while True:
        got = fn()
        if ok(got) or time.time() > end:
            return got
        time.sleep(0.2)


def offsets(c, part):
    """(log end, last stable offset) of TOPIC-part: ListOffsets v2 latest at both isolations."""
    out = []
    for iso in (0, 1):
        body = s32(-1) + bytes([iso]) + s32(1) + kstr(TOPIC) + s32(1) + s32(part) + s64(-1)
        r = c.call(2, 2, body)
        off = 4 + 4  # throttle, topics count
        (ln,) = struct.unpack_from(">h", r, off)
        off += 2 + ln + 4
        _, err, _, o = struct.unpack_from(">ihqq", r, off)
        out.append(o if err == 0 else -1)
    return tuple(out)


c = Conn("127.0.0.1:%s" % PORT_C)
b = Conn("127.0.0.1:%s" % PORT_B)
err, pid, epoch = retry(lambda: init_pid(c, TID), lambda g: g[0] == 0)
check(err == 0, "InitProducerId at the coordinator: producer %d epoch %d" % (pid, epoch))
got = retry(lambda: add_partitions(c, TID, pid, epoch, TOPIC, [P]), lambda g: g == {P: 0})
check(got == {P: 0}, "AddPartitionsToTxn of %s-%d (led by B) at the coordinator: %s" % (TOPIC, P, got))

e = produce(b, TID, TOPIC, P, record_batch(pid, epoch, 0, b"e2e-1"))
check(e == 0, "transactional Produce to %s-%d at B, not the coordinator: NONE (%d)" % (TOPIC, P, e))
e = produce(b, TID, TOPIC, P, record_batch(pid, epoch, 1, b"e2e-2"))
check(e == 0, "... its second batch too (%d)" % e)
end_q = offsets(b, Q)[0]
e = produce(b, TID, TOPIC, Q, record_batch(pid, epoch, 0, b"not-added"))
check(e == 48, "to %s-%d, not added to the transaction: INVALID_TXN_STATE (%d)" % (TOPIC, Q, e))
check(offsets(b, Q)[0] == end_q, "... and nothing written there")
lso = offsets(b, P)
check(lso[1] < lso[0], "the open transaction pins %s-%d's last stable offset at B %s" % (TOPIC, P, lso))

e = end_txn(c, TID, pid, epoch, True)
check(e == 0, "EndTxn commit at the coordinator (%d)" % e)
lso = retry(lambda: offsets(b, P), lambda g: g[0] == g[1], 10)
check(lso[0] == lso[1], "after the commit its marker is in at B: nothing pinned %s" % (lso,))
e = produce(b, TID, TOPIC, P, record_batch(pid, epoch, 2, b"after-end"))
check(e == 48, "after EndTxn, a batch of the same epoch not added again: INVALID_TXN_STATE (%d)" % e)

err, pid2, epoch2 = retry(lambda: init_pid(c, TID), lambda g: g[0] == 0)
check(err == 0 and pid2 == pid and epoch2 > epoch, "a new instance: epoch %d -> %d" % (epoch, epoch2))
e = produce(b, TID, TOPIC, P, record_batch(pid, epoch, 3, b"fenced"))
check(e == 47, "the old epoch's Produce at B: INVALID_PRODUCER_EPOCH (%d)" % e)
got = add_partitions(c, TID, pid, epoch2, TOPIC, [P])
e = produce(b, TID, TOPIC, P, record_batch(pid, epoch2, 0, b"e2e-3"))
check(got == {P: 0} and e == 0, "the new epoch, added, is accepted at B (%s %d)" % (got, e))
check(end_txn(c, TID, pid, epoch2, True) == 0, "... and committed")
lso = retry(lambda: offsets(b, P), lambda g: g[0] == g[1], 10)
check(lso[0] == lso[1], "nothing pinned at B after it %s" % (lso,))

sys.exit(1 if kwire.failed else 0)
