#!/usr/bin/env python3
"""produce_wire.py — Kafka's produce validation (LogValidator) in `ringtail serve`, at the byte
level, with hand-built record batches (for tests/cli_kafka_oldformat.sh). Standard library only.

usage: produce_wire.py HOST:PORT TOPIC CreateTime|LogAppendTime
       produce_wire.py HOST:PORT TOPIC msgset WANT_FILE
       produce_wire.py HOST:PORT TOPIC fetch WANT_FILE   (skips unless Fetch v0 is advertised)

The broker runs with --log-message-timestamp-type as given. Checks (docs/format.md B.7, V16-V17):
  - CreateTime: RecordBatch v2 batches of three records (timestamps 1000, 1001, 1002) whose
    maxTimestamp is -1, 1001 (below a record) and 5000 (above) are accepted by Produce v3 (Kafka
    accepts them; ringtail used to answer CORRUPT_MESSAGE 2 for the first two) and read back by
    Fetch v4 with maxTimestamp 1002, a valid CRC-32C and the records as sent; a batch already
    right comes back byte for byte as sent (bytes 12.. : the broker stamps offset and epoch);
    the answer's log_append_time is -1; ListOffsets v1 for timestamp 1002 finds the first batch's
    third record (the time index holds the recomputed max);
  - LogAppendTime: the answer's log_append_time is the broker's clock (within the test's
    window), the stored batch has attribute bit 3 set and that maxTimestamp, CRC valid.
  - msgset: message sets v0/v1 (engine/log/msgset.c): magic 1 at Produce v2 plain and in a gzip
    wrapper (relative inner offsets), magic 0 at Produce v3 (an old client at a new version) and
    in a gzip wrapper at Produce v1, are accepted; the records they hold (key:value timestamp)
    are written to WANT_FILE for the caller to compare with a modern consumer; a CRC mismatch,
    mixed magics, a truncated message, nested compression, a bad or missing wrapper value and a
    short message are CORRUPT_MESSAGE (2), zstd in a legacy message UNSUPPORTED_COMPRESSION_TYPE
    (76).
Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed.
"""
import struct
import sys
import time
import zlib

import kwire
from kwire import check, crc32c, kstr, s16, s32, s64, zigzag


class Conn(kwire.Conn):
    def __init__(self, addr):
        super().__init__(addr, "produce_wire")


VALUES = [b"alpha", b"beta", b"gamma"]


def batch(max_ts, base_ts=1000):
    recs = b""
    for i, v in enumerate(VALUES):
        r = bytes([0]) + zigzag(i) + zigzag(i) + zigzag(-1) + zigzag(len(v)) + v + zigzag(0)
        recs += zigzag(len(r)) + r
    after_crc = (s16(0) + s32(len(VALUES) - 1) + s64(base_ts) + s64(max_ts) + s64(-1) + s16(-1)
                 + s32(-1) + s32(len(VALUES)) + recs)
    body = s32(0) + bytes([2]) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return s64(0) + s32(len(body)) + body


def produce(c, topic, records, ver=3):
    """Produce v0-3 of one partition (0); returns (error, base_offset, log_append_time)."""
    body = b""
    if ver >= 3:
        body += s16(-1)  # transactional id: null
    body += s16(-1) + s32(10000) + s32(1) + kstr(topic) + s32(1) + s32(0)
    body += s32(len(records)) + records
    r = c.call(0, ver, body)
    if r is None:
        return None
    off = 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    p, e, base = struct.unpack(">ihq", r[off:off + 14])
    lat = struct.unpack(">q", r[off + 14:off + 22])[0] if ver >= 2 else -1
    return e, base, lat


def fetch_v4(c, topic, offset, max_bytes=1 << 20):
    body = s32(-1) + s32(100) + s32(0) + s32(max_bytes) + bytes([0])
    body += s32(1) + kstr(topic) + s32(1) + s32(0) + s64(offset) + s32(max_bytes)
    r = c.call(1, 4, body)
    off = 4 + 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    p, e, hw, lso = struct.unpack(">ihqq", r[off:off + 22])
    off += 22
    (na,) = struct.unpack(">i", r[off:off + 4])
    off += 4 + max(na, 0) * 16
    (nb,) = struct.unpack(">i", r[off:off + 4])
    return r[off + 4:off + 4 + max(nb, 0)]


def batches(data):
    """Whole batches of a fetch's bytes: (baseOffset, attributes, maxTimestamp, crc_ok, bytes)."""
    out = []
    at = 0
    while at + 61 <= len(data):
        base, length = struct.unpack(">qi", data[at:at + 12])
        if at + 12 + length > len(data):
            break
        b = data[at:at + 12 + length]
        (crc,) = struct.unpack(">I", b[17:21])
        (attrs,) = struct.unpack(">h", b[21:23])
        (max_ts,) = struct.unpack(">q", b[35:43])
        out.append((base, attrs, max_ts, crc == crc32c(b[21:]), b))
        at += 12 + length
    return out


def list_offset(c, topic, ts):
    body = s32(-1) + s32(1) + kstr(topic) + s32(1) + s32(0) + s64(ts)
    r = c.call(2, 1, body)
    off = 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    p, e, t, o = struct.unpack(">ihqq", r[off:off + 22])
    return e, o


def message(magic, key, value, ts=-1, attrs=0, offset=0):
    """One legacy entry (offset, size, crc, magic, attributes, [timestamp], key, value)."""
    body = bytes([magic, attrs])
    if magic == 1:
        body += s64(ts)
    for f in (key, value):
        body += s32(-1) if f is None else s32(len(f)) + f
    m = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return s64(offset) + s32(len(m)) + m


def gzip_bytes(b):
    co = zlib.compressobj(6, zlib.DEFLATED, 31)
    return co.compress(b) + co.flush()


def msgset_mode(c, topic):
    """Message sets v0/v1 up-converted (engine/log/msgset.c MS1-MS9): what each partition holds
    afterwards is printed as 'key:value timestamp' lines to stdout-expected file argv[4]."""
    want = []
    # v1 plain at Produce v2
    ms = b"".join(message(1, b"k%d" % i, b"v1-plain-%d" % i, ts=1000 + i, offset=i) for i in range(3))
    res = produce(c, topic, ms, ver=2)
    check(res is not None and res[0] == 0, "Produce v2, 3 magic-1 messages: accepted (%s)" % (res,))
    want += ["k%d:v1-plain-%d %d" % (i, i, 1000 + i) for i in range(3)]
    # v1 gzip wrapper: relative inner offsets, wrapper offset = last inner, timestamp = max
    inner = b"".join(message(1, b"g%d" % i, b"v1-gzip-%d" % i, ts=2000 + i, offset=i) for i in range(4))
    ms = message(1, None, gzip_bytes(inner), ts=2003, attrs=1, offset=3)
    res = produce(c, topic, ms, ver=2)
    check(res is not None and res[0] == 0, "Produce v2, a gzip wrapper of 4 magic-1 messages: accepted (%s)"
          % (res,))
    want += ["g%d:v1-gzip-%d %d" % (i, i, 2000 + i) for i in range(4)]
    # v0 at Produce v3 (an old client at a new version), plain then gzip
    ms = b"".join(message(0, b"z%d" % i, b"v0-plain-%d" % i) for i in range(2))
    res = produce(c, topic, ms, ver=3)
    check(res is not None and res[0] == 0, "Produce v3 carrying magic-0 messages: accepted (%s)" % (res,))
    want += ["z%d:v0-plain-%d -1" % (i, i) for i in range(2)]
    inner = b"".join(message(0, b"y%d" % i, b"v0-gzip-%d" % i, offset=i) for i in range(2))
    res = produce(c, topic, message(0, None, gzip_bytes(inner), attrs=1, offset=1), ver=1)
    check(res is not None and res[0] == 0, "Produce v1, a gzip wrapper of magic-0 messages: accepted (%s)"
          % (res,))
    want += ["y%d:v0-gzip-%d -1" % (i, i) for i in range(2)]
    # refusals: nothing appended
    good = message(1, b"x", b"refused", ts=5)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    cases = [
        ("a crc mismatch", bytes(bad_crc), 2),
        ("magic 0 and 1 in one set", good + message(0, b"x", b"y"), 2),
        ("a truncated last message", good + good[:-3], 2),
        ("codec 4 (zstd) in a magic-1 message", message(1, None, b"\x28\xb5\x2f\xfd", attrs=4), 76),
        ("a compressed message inside a gzip wrapper",
         message(1, None, gzip_bytes(message(1, None, gzip_bytes(good), attrs=1)), attrs=1), 2),
        ("a gzip wrapper whose value is not gzip", message(1, None, b"not gzip", attrs=1), 2),
        ("a gzip wrapper without a value", message(1, None, None, attrs=1), 2),
        ("a message size of 13", s64(0) + s32(13) + b"\0" * 13, 2),
    ]
    for desc, ms, err in cases:
        res = produce(c, topic, ms, ver=2)
        check(res is not None and res[0] == err, "%s: refused with error %d (%s)" % (desc, err, res))
    return want


def api_max(c, key):
    """(min, max) version the broker advertises for `key` (ApiVersions v0), or None."""
    r = c.call(18, 0, b"")
    (err, n) = struct.unpack(">hi", r[:6])
    for i in range(n):
        k, lo, hi = struct.unpack(">hhh", r[6 + 6 * i:12 + 6 * i])
        if k == key:
            return lo, hi
    return None


def fetch_old(c, topic, ver, offset=0, max_bytes=1 << 20):
    """Fetch v0-3 of partition 0: (error, high watermark, message-set bytes)."""
    body = s32(-1) + s32(100) + s32(0)
    if ver >= 3:
        body += s32(max_bytes)
    body += s32(1) + kstr(topic) + s32(1) + s32(0) + s64(offset) + s32(max_bytes)
    r = c.call(1, ver, body)
    off = 4 if ver >= 1 else 0
    off += 4
    (ln,) = struct.unpack(">h", r[off:off + 2])
    off += 2 + ln + 4
    p, e, hw = struct.unpack(">ihq", r[off:off + 14])
    off += 14
    (nb,) = struct.unpack(">i", r[off:off + 4])
    return e, hw, r[off + 4:off + 4 + max(nb, 0)]


def legacy_messages(data, out, wrapper=None):
    """Flattens a message set (decompressing gzip wrappers) into (offset, magic, ts, key, value);
    a partial message at the end is ignored, as old consumers ignore it."""
    at = 0
    while at + 12 <= len(data):
        off, size = struct.unpack(">qi", data[at:at + 12])
        if size < 0 or at + 12 + size > len(data):
            break  # a partial message ends the answer (handle_fetch.c KF11-KF12): ignored
        m = data[at + 12:at + 12 + size]
        at += 12 + size
        (crc,) = struct.unpack(">I", m[:4])
        check(crc == zlib.crc32(m[4:]) & 0xFFFFFFFF, "message at %d: CRC-32 valid" % off)
        magic, attrs = m[4], m[5]
        q = 6
        ts = -1
        if magic == 1:
            (ts,) = struct.unpack(">q", m[q:q + 8])
            q += 8
        fields = []
        for _ in range(2):
            (n,) = struct.unpack(">i", m[q:q + 4])
            q += 4
            fields.append(None if n < 0 else m[q:q + n])
            q += max(n, 0)
        if attrs & 7 == 1:
            legacy_messages(zlib.decompress(fields[1], 31), out, (off, magic))
        elif attrs & 7:
            out.append((off, magic, ts, b"<codec %d>" % (attrs & 7), b""))
        else:
            if wrapper and magic == 1:
                off = wrapper[0] + off  # relative: fixed up below
            out.append((off, magic, ts, fields[0], fields[1]))


def fetch_mode(c, topic, want_file):
    """Fetch v0-3 down-conversion (handle_fetch.c KF5): the records of `topic` (written by the
    msgset mode) read at every old version are want_file's, in message format 0 (v0-1) or 1
    (v2-3), CRCs valid, timestamps kept at v2-3."""
    want = [l.rstrip("\n") for l in open(want_file)]
    for ver in (0, 1, 2, 3):
        e, hw, data = fetch_old(c, topic, ver)
        msgs = []
        legacy_messages(data, msgs)
        magic = 1 if ver >= 2 else 0
        got = ["%s:%s %d" % (m[3].decode(), m[4].decode(), m[2] if magic == 1 else -1)
               for m in msgs]
        exp = [w if magic == 1 else w.rsplit(" ", 1)[0] + " -1" for w in want]
        check(e == 0 and hw == len(want), "Fetch v%d: no error, high watermark %d (%d, %d)"
              % (ver, len(want), e, hw))
        check(all(m[1] == magic for m in msgs), "Fetch v%d: every message has magic %d" % (ver, magic))
        check(got == exp, "Fetch v%d: the records as produced (%d of %d)" % (ver, len(got), len(exp)))
    # from the middle: nothing below the offset
    e, hw, data = fetch_old(c, topic, 2, offset=5)
    msgs = []
    legacy_messages(data, msgs)
    check(e == 0 and len(msgs) == len(want) - 5, "Fetch v2 from offset 5: %d messages (%d)"
          % (len(want) - 5, len(msgs)))


def main():
    addr, topic, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    c = Conn(addr)
    if mode == "fetch":
        rng = api_max(c, 1)
        if rng is None or rng[0] > 0:
            print("skip - the broker does not advertise Fetch v0-3 (%s)" % (rng,))
            sys.exit(0)
        fetch_mode(c, topic, sys.argv[4])
    elif mode == "msgset":
        want = msgset_mode(c, topic)
        with open(sys.argv[4], "w") as f:
            f.write("".join(w + "\n" for w in want))
    elif mode == "CreateTime":
        sent = {}
        for claim in (-1, 1001, 5000, 1002):
            b = batch(claim)
            res = produce(c, topic, b)
            check(res is not None and res[0] == 0,
                  "Produce v3 of a batch with maxTimestamp %d is accepted (%s)" % (claim, res))
            if res:
                check(res[2] == -1, "CreateTime: the answer's log_append_time is -1 (%d)" % res[2])
                sent[res[1]] = (claim, b)
        got = batches(fetch_v4(c, topic, 0))
        check(len(got) == 4, "Fetch v4 returns the 4 batches (%d)" % len(got))
        for base, attrs, max_ts, crc_ok, raw in got:
            claim, b = sent.get(base, (None, b""))
            check(max_ts == 1002 and attrs == 0 and crc_ok,
                  "batch at %d (sent with maxTimestamp %s) stored with maxTimestamp 1002, "
                  "CreateTime, a valid CRC (%d, attrs %d, crc %s)" % (base, claim, max_ts, attrs,
                                                                    crc_ok))
            check(raw[61:] == b[61:], "batch at %d: its records are the bytes sent" % base)
            if claim == 1002:
                check(raw[16:] == b[16:], "the batch already right is stored as sent (no rewrite)")
        e, o = list_offset(c, topic, 1002)
        check(e == 0 and o == 2, "ListOffsets v1 for timestamp 1002 finds offset 2 (%d, %d)" % (e, o))
    else:
        t0 = int(time.time() * 1000)
        res = produce(c, topic, batch(-1))
        t1 = int(time.time() * 1000)
        check(res is not None and res[0] == 0, "Produce v3 under LogAppendTime accepted (%s)" % (res,))
        lat = res[2] if res else -2
        check(t0 <= lat <= t1, "the answer's log_append_time %d is the broker's clock [%d, %d]"
              % (lat, t0, t1))
        got = batches(fetch_v4(c, topic, res[1] if res else 0))
        check(len(got) >= 1 and got[0][1] & 0x08 and got[0][2] == lat and got[0][3],
              "the stored batch has bit 3 set, maxTimestamp = log_append_time, a valid CRC (%s)"
              % ([g[:4] for g in got],))
    sys.exit(1 if kwire.failed else 0)


if __name__ == "__main__":
    main()
