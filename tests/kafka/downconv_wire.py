#!/usr/bin/env python3
"""downconv_wire.py — a large partition read at Fetch v0-3 (handle_fetch.c KF5, streamed
down-conversion KF9-KF12), for tests/cli_kafka_downconv.sh. Standard library only.

usage: downconv_wire.py HOST:PORT TOPIC VERSION MAX_BYTES COUNT [MARKERS]
       downconv_wire.py HOST:PORT TOPIC multi     (three partitions in one answer; see multi())

Reads partition 0 of TOPIC from offset 0 to its high watermark with Fetch VERSION (0-3),
max_bytes and partition_max_bytes MAX_BYTES, each answer parsed as message format 0 (v0-1) or 1
(v2-3), gzip wrappers opened, a partial message at the end of an answer ignored (as old clients
do), and checks that the records come in offset order, each exactly once, with the value the
producer wrote: "v<index>-" then 'x' up to the produced length (tests/cli_kafka_downconv.sh
writes them), COUNT of them in all; CRC-32 of every message valid; the first message of every
non-empty answer whole. MARKERS: how many offsets hold control records (a transactional
topic): exactly that many offsets are missing from what is read, and never a record — aborted
records are served like the others (these versions read uncommitted, as Kafka serves them).
Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed.
"""
import struct
import sys
import zlib

import kwire
from kwire import check, kstr, s32, s64


def fetch(c, topic, ver, offset, max_bytes):
    body = s32(-1) + s32(100) + s32(0)
    if ver >= 3:
        body += s32(max_bytes)
    body += s32(1) + kstr(topic) + s32(1) + s32(0) + s64(offset) + s32(max_bytes)
    r = c.call(1, ver, body)
    off = (4 if ver >= 1 else 0) + 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    p, e, hw = struct.unpack(">ihq", r[off:off + 14])
    off += 14
    (nb,) = struct.unpack(">i", r[off:off + 4])
    return e, hw, r[off + 4:off + 4 + max(nb, 0)], nb


def messages(data, out, magic_want, wrapper_off=None):
    """(offset, value) of every whole message; returns how many bytes were whole."""
    at = 0
    while at + 12 <= len(data):
        off, size = struct.unpack(">qi", data[at:at + 12])
        if size < 0 or at + 12 + size > len(data):
            break  # partial: the rest of the answer is ignored, as old consumers do
        m = data[at + 12:at + 12 + size]
        at += 12 + size
        (crc,) = struct.unpack(">I", m[:4])
        if crc != zlib.crc32(m[4:]) & 0xFFFFFFFF:
            check(False, "message at %d: CRC-32 valid" % off)
            return at
        magic, attrs = m[4], m[5]
        if magic != magic_want:
            check(False, "message at %d: magic %d (%d)" % (off, magic_want, magic))
            return at
        q = 6 + (8 if magic == 1 else 0)
        fields = []
        for _ in range(2):
            (n,) = struct.unpack(">i", m[q:q + 4])
            q += 4
            fields.append(None if n < 0 else m[q:q + n])
            q += max(n, 0)
        if attrs & 7 == 1:
            sub = []
            messages(zlib.decompress(fields[1], 31), sub, magic_want, off)
            if magic == 1 and sub:  # relative inner offsets: the wrapper holds the last's
                base = off - sub[-1][0]
                sub = [(base + o, v) for o, v in sub]
            out.extend(sub)
        elif attrs & 7:
            check(False, "message at %d: codec %d is not read here" % (off, attrs & 7))
        else:
            out.append((off, fields[1]))
    return at


def multi(addr, topic):
    """Three partitions in one answer (p holds "v<p*3000+i>-..." at offset i; partition 1
    gzip): each partition's generated slice in turn (KN10, KF10: one buffer, partition after
    partition), every non-empty answer's first message whole and its values as written; with
    max_bytes 2000000 the budget shrinks partition by partition (KF2); with
    partition_max_bytes 100 the first partition gets its first batch, whole (KIP-74, KF9), and the
    others only what fits in 100 bytes (kcat's gzip batches are timed: a first one of one record
    compresses below 100 bytes)."""
    c = kwire.Conn(addr, "downconv_wire")
    for ver, mb, pmb in ((3, 2000000, 1500000), (1, 0, 1000000), (2, 0, 100)):
        body = s32(-1) + s32(100) + s32(0)
        if ver >= 3:
            body += s32(mb)
        body += s32(1) + kstr(topic) + s32(3)
        for p in range(3):
            body += s32(p) + s64(0) + s32(pmb)
        r = c.call(1, ver, body)
        off = (4 if ver >= 1 else 0) + 4
        (ln,) = struct.unpack(">h", r[off:off + 2])
        off += 2 + ln
        (n,) = struct.unpack(">i", r[off:off + 4])
        off += 4
        total, got, sizes = 0, [], []
        for _ in range(n):
            p, e, hw = struct.unpack(">ihq", r[off:off + 14])
            off += 14
            (nb,) = struct.unpack(">i", r[off:off + 4])
            off += 4
            data = r[off:off + max(nb, 0)]
            off += max(nb, 0)
            total += max(nb, 0)
            msgs = []
            messages(data, msgs, 1 if ver >= 2 else 0)
            good = all(v is not None and v.startswith(b"v%d-" % (p * 3000 + o)) for o, v in msgs)
            check(e == 0 and hw == 3000 and good and [o for o, _ in msgs] == list(range(len(msgs)))
                  and (nb == 0) == (len(msgs) == 0),
                  "Fetch v%d (partition_max_bytes %d), partition %d: %d records from 0, values as "
                  "written, the first whole (%d bytes)" % (ver, pmb, p, len(msgs), nb))
            got.append(len(msgs))
            sizes.append(nb)
        check(off == len(r), "Fetch v%d: the answer's size is what its partitions say" % ver)
        if mb:
            check(total <= mb,
                  "Fetch v%d: %d record bytes within max_bytes %d" % (ver, total, mb))
        if pmb == 100:
            # The first partition's first batch goes whole past the limit; the others get only
            # what fits in it (nothing, unless kcat happened to send a first batch whose gzip
            # wrapper is that small).
            check(got[0] > 0 and all(n <= pmb for n in sizes[1:]),
                  "Fetch v%d, partition_max_bytes 100: the first partition answers one whole "
                  "batch, the others at most 100 bytes (%s records, %s bytes)" % (ver, got, sizes))
        else:
            check(all(g > 0 for g in got), "Fetch v%d: every partition answers records (%s)"
                  % (ver, got))
    sys.exit(1 if kwire.failed else 0)


def main():
    if sys.argv[3] == "multi":
        multi(sys.argv[1], sys.argv[2])
    addr, topic, ver, max_bytes, count = sys.argv[1:6]
    ver, max_bytes, count = int(ver), int(max_bytes), int(count)
    c = kwire.Conn(addr, "downconv_wire")
    magic = 1 if ver >= 2 else 0
    offset, seen, answers, partial, bad, gaps = 0, 0, 0, 0, 0, 0
    markers = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    hw = None
    length = None
    while True:
        e, hw, data, nb = fetch(c, topic, ver, offset, max_bytes)
        answers += 1
        if e != 0:
            check(False, "Fetch v%d at %d: error %d" % (ver, offset, e))
            break
        if offset >= hw:
            break
        msgs = []
        whole = messages(data, msgs, magic)
        if whole < len(data):
            partial += 1
        if not msgs and seen == count and not data.strip(b"\0\xff"):
            break  # only markers (or nothing) are left: an old consumer waits there
        if not msgs:
            check(False, "Fetch v%d at %d: the answer's first message is whole (%d bytes)"
                  % (ver, offset, len(data)))
            break
        for off, v in msgs:
            if off < offset:
                continue  # below the fetch offset in a wrapper: old clients drop them
            if off > offset:
                gaps += off - offset  # offsets of control records (markers)
            if off < offset:
                bad += 1
                if bad < 5:
                    check(False, "record at %d: below the offset asked, %d" % (off, offset))
            want = b"v%d-" % seen
            if length is None and v is not None:
                length = len(v)
            if v is None or not v.startswith(want) or len(v) != length or \
                    v[len(want):] != b"x" * (length - len(want)):
                bad += 1
                if bad < 5:
                    check(False, "record %d (offset %d): the value written (%r...)" % (seen, off, v[:20] if v else v))
            seen += 1
            offset = off + 1
    check(bad == 0, "Fetch v%d, max_bytes %d: every record's value as written, in order (%d bad)"
          % (ver, max_bytes, bad))
    check(seen == count, "Fetch v%d: %d records read (%d), high watermark %s, %d answers, %d ending in a partial message"
          % (ver, count, seen, hw, answers, partial))
    if hw is not None and offset < hw:
        gaps += hw - offset  # markers after the last record
    check(gaps == markers, "Fetch v%d: %d offsets skipped (control records), %d expected"
          % (ver, gaps, markers))
    sys.exit(1 if kwire.failed else 0)


if __name__ == "__main__":
    main()
