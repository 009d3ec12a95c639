#!/usr/bin/python3
"""fetch_offsets.py — Fetch's response-wide byte budget and ListOffsets by timestamp, checked on
the wire against `ringtail serve` (tests/cli_kafka_fetch_offsets.sh drives it). Records are
produced with Debian's confluent-kafka; Fetch v4 and ListOffsets v2 are spoken by hand so the
check sees exactly what the broker answers.

usage: fetch_offsets.py COMMAND ARGS; exit 0 = passed, the reason on stderr otherwise.
  fill BROKER TOPIC PARTITIONS RECORDS RECORD_BYTES
        each partition gets RECORDS records of RECORD_BYTES bytes, one batch each
  budget PORT TOPIC PARTITIONS MAX_BYTES PARTITION_MAX_BYTES CAP
        one Fetch v4 of every partition from offset 0: the records answered are whole batches;
        their sum is at most min(MAX_BYTES, CAP) unless the first partition's only batch is
        larger (KIP-74: then the response holds that one batch); a partition after the budget
        is spent is empty with error NONE and its high watermark; the first partition has data.
        Prints "partition P: N bytes, B batches" per partition.
  times BROKER TOPIC
        fills TOPIC partition 0: offsets 0-2 at timestamps 1000, 2000, 3000 (one batch), 3-4
        gzip-compressed at 4000, 5000
  list PORT TOPIC TIMESTAMP OFFSET RECORD_TIMESTAMP
        ListOffsets v2 (read_uncommitted) for TIMESTAMP answers OFFSET and RECORD_TIMESTAMP
  maxfill BROKER TOPIC
        fills TOPIC partition 0: timestamps 1000, 7000, 3000 (one batch), 7000, 2000 (gzip)
  list7 PORT TOPIC TIMESTAMP OFFSET RECORD_TIMESTAMP
        the same at ListOffsets v7 (flexible; TIMESTAMP -3 is KIP-734's max timestamp)
  list0 PORT TOPIC TIMESTAMP MAX_NUM OFFSETS
        ListOffsets v0 answers old_style_offsets OFFSETS (comma-separated, "" for none)
  notime BROKER TOPIC
        one record with timestamp -1 to partition 0 (librdkafka writes the batch's
        maxTimestamp as 0, so the segment's time index gets the entry (0, base offset))
"""
import struct
import sys

from kwire import dial, read_exact


def fail(msg):
    sys.stderr.write(msg + "\n")
    sys.exit(1)


def connect(port):
    return dial(port, 30)


def call(s, api_key, version, corr, body, flexible=False):
    client = b"fetch_offsets"
    head = struct.pack(">hhih", api_key, version, corr, len(client)) + client
    frame = head + (b"\x00" if flexible else b"") + body
    s.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", read_exact(s, 4))[0]
    resp = read_exact(s, size)
    got = struct.unpack(">i", resp[:4])[0]
    if got != corr:
        fail("correlation id %d, sent %d" % (got, corr))
    return resp[5:] if flexible else resp[4:]  # a flexible response header ends with tags


class Reader:
    def __init__(self, b):
        self.b = b
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v if len(v) > 1 else v[0]

    def string(self):
        n = self.take(">h")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s.decode()

    def bytes_(self):
        n = self.take(">i")
        if n < 0:
            return None
        s = self.b[self.p:self.p + n]
        self.p += n
        return s


def batch_sizes(records):
    """The sizes of the whole batches in records; fails on a partial one."""
    sizes = []
    p = 0
    while p < len(records):
        if len(records) - p < 12:
            fail("a partial batch header at byte %d of %d" % (p, len(records)))
        length = struct.unpack_from(">i", records, p + 8)[0]
        if p + 12 + length > len(records):
            fail("a partial batch at byte %d (%d of %d bytes)" % (p, len(records) - p,
                                                                  12 + length))
        sizes.append(12 + length)
        p += 12 + length
    return sizes


def cmd_fill(broker, topic, partitions, records, record_bytes):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker, "linger.ms": 0, "batch.num.messages": 1,
                  "message.max.bytes": 2000000, "compression.type": "none"})
    errors = []
    value = b"x" * int(record_bytes)
    for part in range(int(partitions)):
        for _ in range(int(records)):
            p.produce(topic, value, partition=part,
                      on_delivery=lambda err, msg: errors.append(err) if err else None)
            p.flush(30)  # one batch each
    if p.flush(30) != 0 or errors:
        fail("produce failed: %r" % errors[:3])


def cmd_budget(port, topic, partitions, max_bytes, partition_max_bytes, cap):
    partitions, max_bytes = int(partitions), int(max_bytes)
    partition_max_bytes, cap = int(partition_max_bytes), int(cap)
    t = topic.encode()
    body = struct.pack(">iiiib", -1, 100, 1, max_bytes, 0)
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">i", partitions)
    for part in range(partitions):
        body += struct.pack(">iqi", part, 0, partition_max_bytes)
    s = connect(port)
    r = Reader(call(s, 1, 4, 77, body))
    s.close()
    r.take(">i")  # throttle
    if r.take(">i") != 1 or r.string() != topic:
        fail("not one topic answered")
    n = r.take(">i")
    if n != partitions:
        fail("%d partitions answered, asked %d" % (n, partitions))
    got = []
    for _ in range(n):
        part, err, hw, _lso = r.take(">ihqq")
        aborted = r.take(">i")
        for _ in range(max(aborted, 0)):
            r.take(">qq")
        records = r.bytes_() or b""
        if err != 0:
            fail("partition %d: error %d" % (part, err))
        if hw <= 0:
            fail("partition %d: high watermark %d" % (part, hw))
        sizes = batch_sizes(records)
        got.append((part, len(records), sizes))
        print("partition %d: %d bytes, %d batches" % (part, len(records), len(sizes)))
    total = sum(g[1] for g in got)
    limit = min(max_bytes, cap)
    first = next((g for g in got if g[1] > 0), None)
    if first is None or first[0] != 0:
        fail("the first partition got no records: %r" % [(g[0], g[1]) for g in got])
    if total > limit and not (len(first[2]) == 1 and total == first[1]):
        fail("%d record bytes answered, budget %d (client %d, broker cap %d): %r" %
             (total, limit, max_bytes, cap, [(g[0], g[1]) for g in got]))
    for part, size, sizes in got:
        if size > partition_max_bytes and not (part == first[0] and len(sizes) == 1):
            fail("partition %d: %d bytes over partition_max_bytes %d" %
                 (part, size, partition_max_bytes))
    print("total %d bytes" % total)


def cmd_times(broker, topic):
    from confluent_kafka import Producer
    for codec, stamps in (("none", (1000, 2000, 3000)), ("gzip", (4000, 5000))):
        p = Producer({"bootstrap.servers": broker, "linger.ms": 100,
                      "compression.type": codec})
        for ts in stamps:
            p.produce(topic, b"t%d" % ts, partition=0, timestamp=ts)
        if p.flush(30) != 0:
            fail("produce at %r did not finish" % (stamps,))


def cmd_list(port, topic, timestamp, offset, record_ts):
    t = topic.encode()
    body = struct.pack(">ib", -1, 0)
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">iiq", 1, 0, int(timestamp))
    s = connect(port)
    r = Reader(call(s, 2, 2, 78, body))
    s.close()
    r.take(">i")  # throttle
    if r.take(">i") != 1 or r.string() != topic or r.take(">i") != 1:
        fail("not one partition answered")
    part, err, ts, off = r.take(">ihqq")
    if err != 0:
        fail("error %d" % err)
    if (off, ts) != (int(offset), int(record_ts)):
        fail("timestamp %s: answered offset %d timestamp %d, Kafka answers offset %s timestamp %s"
             % (timestamp, off, ts, offset, record_ts))


def cmd_maxfill(broker, topic):
    from confluent_kafka import Producer
    for codec, stamps in (("none", (1000, 7000, 3000)), ("gzip", (7000, 2000))):
        p = Producer({"bootstrap.servers": broker, "linger.ms": 100,
                      "compression.type": codec})
        for ts in stamps:
            p.produce(topic, b"m%d" % ts, partition=0, timestamp=ts)
        if p.flush(30) != 0:
            fail("produce at %r did not finish" % (stamps,))


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cmd_list7(port, topic, timestamp, offset, record_ts):
    t = topic.encode()
    body = struct.pack(">ib", -1, 0) + uvarint(2) + uvarint(len(t) + 1) + t
    body += uvarint(2) + struct.pack(">iiq", 0, -1, int(timestamp)) + b"\x00"  # partition
    body += b"\x00" + b"\x00"  # the topic's and the request's tags
    s = connect(port)
    r = Reader(call(s, 2, 7, 79, body, flexible=True))
    s.close()
    r.take(">i")  # throttle
    if r.take(">B") != 2:
        fail("not one topic answered")
    n = r.take(">B") - 1
    name = r.b[r.p:r.p + n].decode()
    r.p += n
    if name != topic or r.take(">B") != 2:
        fail("not one partition answered")
    part, err, ts, off, epoch = r.take(">ihqqi")
    if err != 0:
        fail("error %d" % err)
    if (off, ts) != (int(offset), int(record_ts)):
        fail("v7 timestamp %s: answered offset %d timestamp %d, Kafka answers offset %s "
             "timestamp %s" % (timestamp, off, ts, offset, record_ts))


def cmd_list0(port, topic, timestamp, max_num, offsets):
    t = topic.encode()
    body = struct.pack(">i", -1)
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">iiqi", 1, 0, int(timestamp),
                                                            int(max_num))
    s = connect(port)
    r = Reader(call(s, 2, 0, 80, body))
    s.close()
    if r.take(">i") != 1 or r.string() != topic or r.take(">i") != 1:
        fail("not one partition answered")
    part, err, n = r.take(">ihi")
    got = [r.take(">q") for _ in range(n)]
    want = [int(x) for x in offsets.split(",") if x]
    if err != 0 or got != want:
        fail("v0 timestamp %s max %s: error %d offsets %r, Kafka answers %r"
             % (timestamp, max_num, err, got, want))


def cmd_notime(broker, topic):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker})
    p.produce(topic, b"no timestamp", partition=0, timestamp=-1)
    if p.flush(30) != 0:
        fail("produce did not finish")


def main(argv):
    cmds = {"fill": cmd_fill, "budget": cmd_budget, "times": cmd_times, "list": cmd_list,
            "notime": cmd_notime, "maxfill": cmd_maxfill, "list7": cmd_list7,
            "list0": cmd_list0}
    if len(argv) < 2 or argv[1] not in cmds:
        fail(__doc__)
    cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
