#!/usr/bin/env python3
"""produce_wire.py — Kafka's produce validation (LogValidator) in `ringtail serve`, at the byte
level, with hand-built record batches (for tests/cli_kafka_oldformat.sh). Standard library only.

usage: produce_wire.py HOST:PORT TOPIC CreateTime|LogAppendTime

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
Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed.
"""
import socket
import struct
import sys
import time

failed = 0


def check(cond, desc):
    global failed
    print(("ok   - " if cond else "FAIL - ") + desc)
    if not cond:
        failed += 1


def s16(v):
    return struct.pack(">h", v)


def s32(v):
    return struct.pack(">i", v)


def s64(v):
    return struct.pack(">q", v)


def kstr(s):
    b = s.encode() if isinstance(s, str) else s
    return s16(len(b)) + b


class Conn:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10)
        self.corr = 0

    def call(self, key, ver, body):
        self.corr += 1
        frame = s16(key) + s16(ver) + s32(self.corr) + kstr("produce_wire") + body
        self.s.sendall(s32(len(frame)) + frame)
        n = self._read(4)
        if n is None:
            return None
        data = self._read(struct.unpack(">i", n)[0])
        return None if data is None else data[4:]

    def _read(self, n):
        out = b""
        while len(out) < n:
            try:
                c = self.s.recv(n - len(out))
            except (ConnectionResetError, socket.timeout):
                return None
            if not c:
                return None
            out += c
        return out


_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def zigzag(v):
    v = (v << 1) ^ (v >> 63)
    out = b""
    while True:
        if v & ~0x7F:
            out += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        else:
            return out + bytes([v])


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


def main():
    addr, topic, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    c = Conn(addr)
    if mode == "CreateTime":
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
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
