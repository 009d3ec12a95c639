#!/usr/bin/env python3
"""txn_admin.py — what Kafka's `kafka-transactions.sh` asks (KIP-664: ListTransactions 66,
DescribeTransactions 65, DescribeProducers 61), as a client of its own: no Kafka client on
this machine has these calls (python3-confluent-kafka 1.7.0 and librdkafka 2.0.2 predate
them, kafkajs has none), so this one writes and reads the frames from Kafka's released message
JSON (clients/src/main/resources/common/message/*.json), independently of the broker's
descriptions (tools/kafka/proto/kmsg_ops.c). For tests/cli_kafka_txn.sh. Standard library only.

usage: txn_admin.py HOST:PORT list [STATE...]
       txn_admin.py HOST:PORT describe ID...
       txn_admin.py HOST:PORT describe-producers TOPIC PARTITION...

It asks ApiVersions v0 first and uses the highest version both sides have (exit 2 when the
broker does not advertise the API). Output, one line per entry:
  list:               "<transactional id> <producer id> <state>", then "unknown <filter>" for
                      every filter the broker did not know
  describe:           "<id> error=<code> state=<state> timeout=<ms> start=<ms> producer=<pid>
                      epoch=<epoch> partitions=<topic>-<p>,..."
  describe-producers: "<topic>-<p> error=<code>" then per producer "  producer=<pid>
                      epoch=<e> last_sequence=<s> last_timestamp=<ms> coordinator_epoch=<c>
                      txn_start_offset=<offset>"
Every answer must be consumed exactly (bytes left over exit 1).
"""
import socket
import struct
import sys

OURS = {61: 0, 65: 0, 66: 1}  # the versions this client knows


class Reader:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, n):
        if self.p + n > len(self.b):
            raise ValueError("answer cut short")
        out = self.b[self.p:self.p + n]
        self.p += n
        return out

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        v, shift = 0, 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def cstr(self, nullable=False):
        n = self.uvarint()
        if n == 0:
            if not nullable:
                raise ValueError("null where Kafka has a non-nullable string")
            return None
        return self.take(n - 1).decode()

    def carray(self):
        n = self.uvarint()
        if n == 0:
            raise ValueError("null array where Kafka has none")
        return n - 1

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def end(self):
        if self.p != len(self.b):
            raise ValueError("%d bytes left over" % (len(self.b) - self.p))


def uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def cstr(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


def carray(items):
    return uvarint(len(items) + 1) + b"".join(items)


class Conn:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=20)
        self.corr = 0

    def call(self, key, ver, body, flexible):
        self.corr += 1
        client = b"txn_admin"
        hdr = struct.pack(">hhih", key, ver, self.corr, len(client)) + client
        if flexible:
            hdr += b"\x00"  # request header v2: tags
        frame = hdr + body
        self.s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        r = Reader(self._read(size))
        if r.i32() != self.corr:
            raise ValueError("correlation id mismatch")
        if flexible:
            r.tags()  # response header v1
        return r

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise ValueError("the broker closed the connection")
            out += chunk
        return out


def versions(c):
    """ApiVersions v0: key -> (min, max)."""
    r = c.call(18, 0, b"", False)
    err = r.i16()
    if err:
        raise ValueError("ApiVersions error %d" % err)
    out = {}
    for _ in range(r.i32()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        out[k] = (lo, hi)
    r.end()
    return out


def pick(adv, key):
    if key not in adv or adv[key][0] > OURS[key]:
        print("API %d not advertised" % key)
        sys.exit(2)
    return min(adv[key][1], OURS[key])


def list_txns(c, v, states):
    body = carray([cstr(s) for s in states]) + carray([])  # StateFilters, ProducerIdFilters
    if v >= 1:
        body += struct.pack(">q", -1)  # DurationFilter
    body += b"\x00"
    r = c.call(66, v, body, True)
    r.i32()  # ThrottleTimeMs
    err = r.i16()
    unknown = [r.cstr() for _ in range(r.carray())]  # UnknownStateFilters
    rows = []
    for _ in range(r.carray()):
        tid, pid, state = r.cstr(), r.i64(), r.cstr()
        r.tags()
        rows.append("%s %d %s" % (tid, pid, state))
    r.tags()
    r.end()
    if err:
        print("error=%d" % err)
    for row in rows:
        print(row)
    for u in unknown:
        print("unknown %s" % u)


def describe(c, v, ids):
    r = c.call(65, v, carray([cstr(i) for i in ids]) + b"\x00", True)
    r.i32()
    for _ in range(r.carray()):
        err = r.i16()
        tid = r.cstr()
        state = r.cstr()
        timeout = r.i32()
        start = r.i64()
        pid = r.i64()
        epoch = r.i16()  # int16 in Kafka's JSON
        parts = []
        for _ in range(r.carray()):
            topic = r.cstr()
            parts += ["%s-%d" % (topic, r.i32()) for _ in range(r.carray())]
            r.tags()
        r.tags()
        print("%s error=%d state=%s timeout=%d start=%d producer=%d epoch=%d partitions=%s" %
              (tid, err, state, timeout, start, pid, epoch, ",".join(parts)))
    r.tags()
    r.end()


def describe_producers(c, v, topic, parts):
    t = cstr(topic) + carray([struct.pack(">i", p) for p in parts]) + b"\x00"
    r = c.call(61, v, carray([t]) + b"\x00", True)
    r.i32()
    for _ in range(r.carray()):
        name = r.cstr()
        for _ in range(r.carray()):
            index, err = r.i32(), r.i16()
            r.cstr(nullable=True)  # ErrorMessage
            print("%s-%d error=%d" % (name, index, err))
            for _ in range(r.carray()):
                pid, epoch, seq, ts = r.i64(), r.i32(), r.i32(), r.i64()
                ce, start = r.i32(), r.i64()  # CoordinatorEpoch, CurrentTxnStartOffset
                r.tags()
                print("  producer=%d epoch=%d last_sequence=%d last_timestamp=%d "
                      "coordinator_epoch=%d txn_start_offset=%d" % (pid, epoch, seq, ts, ce,
                                                                    start))
            r.tags()
        r.tags()
    r.tags()
    r.end()


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    c = Conn(sys.argv[1])
    adv = versions(c)
    mode, args = sys.argv[2], sys.argv[3:]
    if mode == "list":
        list_txns(c, pick(adv, 66), args)
    elif mode == "describe":
        describe(c, pick(adv, 65), args)
    elif mode == "describe-producers":
        describe_producers(c, pick(adv, 61), args[0], [int(p) for p in args[1:]])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    try:
        main()
    except (ValueError, OSError) as e:
        print("FAIL - %s" % e)
        sys.exit(1)
