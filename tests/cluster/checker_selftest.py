#!/usr/bin/python3
"""checker_selftest.py — shows that the fault tests' checker (checker.py JC1-JC8) can fail:
one clean synthetic history passes, and each planted fault (a lost, a duplicated, a misplaced,
a reordered, a never-sent record, read_committed differing, replicas differing or short of the
high watermark, a producer's fatal error or a delivery report with an idempotence error) is
reported under its own check. No cluster, no network; under a second.
"""
import copy
import sys

import checker
import workload

T = "jepsen"


def clean():
    h = workload.History()
    reads = {0: [], 1: []}
    for seq in range(6):
        p = seq % 2
        v = f"P0.0-{seq}"
        off = len(reads[p])
        h.sent[v] = (p, "steady")
        h.acked[v] = (p, off, "steady")
        reads[p].append((off, v))
    cc = (0, {(T, 0): ("identical", [3, 3, 3], [3, 3, 3]),
              (T, 1): ("identical", [3, 3, 3], [3, 3, 3])}, "")
    return h, reads, copy.deepcopy(reads), cc


def run(name, plant, want):
    h, reads, committed, cc = clean()
    plant(h, reads, committed, cc)
    bad, _ = checker.check(h, reads, committed, cc, T)
    got = sorted({b.split()[0] for b in bad})
    ok = got == want
    print(f"{'ok ' if ok else 'BAD'} {name}: {got}" + ("" if ok else f" (want {want}): {bad}"))
    return ok


def lose(h, r, c, cc):
    del r[0][1:]
    del c[0][1:]
    cc[1][(T, 0)] = ("identical", [1, 1, 1], [1, 1, 1])


def dup(h, r, c, cc):
    r[1].append((3, r[1][0][1]))


def misplace(h, r, c, cc):
    v, (p, off, ph) = "P0.0-2", h.acked["P0.0-2"]
    h.acked[v] = (p, off + 1, ph)


def reorder(h, r, c, cc):
    r[0][0], r[0][1] = (0, r[0][1][1]), (1, r[0][0][1])
    c[0] = list(r[0])


def backwards(h, r, c, cc):
    r[1][2] = (0, r[1][2][1])
    c[1] = list(r[1])


def never(h, r, c, cc):
    r[0].append((3, "P9.0-0"))


def committed_differs(h, r, c, cc):
    c[1][1] = (1, "P0.0-5")


def replicas_differ(h, r, c, cc):
    cc[1][(T, 1)] = ("differ@2", [3, 3, 3], [3, 3, 3])


def replica_short(h, r, c, cc):
    cc[1][(T, 0)] = ("identical", [3, 2, 3], [3, 3, 3])


def fatal(h, r, c, cc):
    h.fatal.append(("P0.0", "OUT_OF_ORDER_SEQUENCE_NUMBER", "KafkaError{FATAL,...}", "steady"))


def idempotence_failed(h, r, c, cc):
    h.sent["P0.0-6"] = (0, "steady")
    h.failed["P0.0-6"] = (0, "UNKNOWN_PRODUCER_ID", "steady")


cases = [
    ("clean", lambda *a: None, []),
    ("an acknowledged record lost", lose, ["JC1", "JC5"]),  # and the HW below the ack
    ("a record read twice", dup, ["JC2", "JC4"]),  # its second copy is out of send order
    ("an ack at another offset", misplace, ["JC3"]),
    ("one producer's records out of order", reorder, ["JC3", "JC4"]),
    ("offsets going backwards", backwards, ["JC3"]),  # and the ack's offset not the read's
    ("a value nobody sent", never, ["JC7"]),
    ("read_committed differs", committed_differs, ["JC6"]),
    ("replicas differ", replicas_differ, ["JC5"]),
    ("a replica below the high watermark", replica_short, ["JC5"]),
    ("a producer's fatal error", fatal, ["JC8"]),
    ("a send failed UNKNOWN_PRODUCER_ID", idempotence_failed, ["JC8"]),
]
results = [run(*c) for c in cases]
print(f"{sum(results)} of {len(results)} as expected")
sys.exit(0 if all(results) else 1)
