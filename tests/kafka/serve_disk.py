#!/usr/bin/python3
"""serve_disk.py — issue 21 F2 and F6 from outside (tests/cli_kafka_disk.sh drives it):
  metadata PORT N   one connection sends two Metadata v1 requests, each naming the same N unknown
                    topics; prints how many of them each answer gave without an error (created).
  blocked PORT      two Metadata v1 requests naming topic "blocked", whose creation the disk
                    refuses (the driver put a file where its partition directory goes); prints
                    the two error codes (KAFKA_STORAGE_ERROR, 56, expected).
  segments BROKER   confluent_kafka (librdkafka) against a broker with --segment-bytes 1048576:
                    40 records of 300 KiB (about 12 segments) produced idempotently and read back;
                    one record whose batch is larger than a segment but within message.max.bytes
                    is refused with RECORD_LIST_TOO_LARGE (Kafka's answer), one above
                    message.max.bytes with MESSAGE_TOO_LARGE, and the producer goes on.
Exit 0 = passed.
"""
import struct
import sys

from kwire import dial, kstr, metadata_v1_topics, read_exact


def metadata_v1(corr, names):
    body = struct.pack(">hhi", 3, 1, corr) + kstr(b"serve_disk")
    body += struct.pack(">i", len(names)) + b"".join(kstr(n) for n in names)
    return struct.pack(">i", len(body)) + body


def parse_metadata_v1(body):
    """Returns [(error_code, name)] of a v1 response."""
    return [(err, name) for err, name, _ in metadata_v1_topics(body)]


def metadata(port, n):
    s = dial(port, 120)
    names = [b"scan-%06d" % i for i in range(int(n))]
    counts = []
    for corr in (1, 2):
        s.sendall(metadata_v1(corr, names))
        (size,) = struct.unpack(">i", read_exact(s, 4))
        topics = parse_metadata_v1(read_exact(s, size))
        if len(topics) != len(names):
            print("answer names %d topics, not %d" % (len(topics), len(names)))
            return 1
        counts.append(sum(1 for err, _ in topics if err == 0))
        others = {err for err, _ in topics if err != 0}
        if others - {3}:
            print("unexpected error codes %s" % sorted(others))
            return 1
    print("created %d %d" % tuple(counts))
    return 0


def segments(broker):
    from confluent_kafka import Consumer, KafkaError, Producer

    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True,
                  "message.max.bytes": 4000000, "linger.ms": 0, "batch.num.messages": 1,
                  "compression.type": "none"})
    results = []

    def on_delivery(err, msg):
        results.append(err)

    for i in range(40):
        p.produce("seg", value=(b"%04d" % i) * (300 * 1024 // 4), partition=0,
                  on_delivery=on_delivery)
        p.flush(30)
    if len(results) != 40 or any(results):
        print("40 records: %s" % results)
        return 1
    # A lone record's batch is its value + 72 bytes: 1 048 582 > the 1 MiB segment, <= 1 MiB + 12.
    big = Producer({"bootstrap.servers": broker, "message.max.bytes": 4000000, "linger.ms": 0,
                    "compression.type": "none", "retries": 0})
    errs = []
    big.produce("seg", value=b"x" * 1048510, partition=0, on_delivery=lambda e, m: errs.append(e))
    big.flush(30)
    big.produce("seg", value=b"y" * 1100000, partition=0, on_delivery=lambda e, m: errs.append(e))
    big.flush(30)
    codes = [e.code() if e else 0 for e in errs]
    if codes != [KafkaError.RECORD_LIST_TOO_LARGE, KafkaError.MSG_SIZE_TOO_LARGE]:
        print("oversized batches answered %s" % errs)
        return 1
    results.clear()
    p.produce("seg", value=b"after", partition=0, on_delivery=on_delivery)
    p.flush(30)
    if results != [None]:
        print("the record after: %s" % results)
        return 1
    c = Consumer({"bootstrap.servers": broker, "group.id": "seg", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.message.max.bytes": 2000000})
    c.subscribe(["seg"])
    got = []
    while len(got) < 41:
        m = c.poll(10)
        if m is None:
            break
        if m.error():
            continue
        got.append(m.value()[:4])
    c.close()
    want = [b"%04d" % i for i in range(40)] + [b"afte"]
    if got != want:
        print("read back %d records: %s" % (len(got), got[:3]))
        return 1
    print("segments ok")
    return 0


def blocked(port):
    s = dial(port, 30)
    codes = []
    for corr in (1, 2):
        s.sendall(metadata_v1(corr, [b"blocked"]))
        (size,) = struct.unpack(">i", read_exact(s, 4))
        codes += [err for err, _ in parse_metadata_v1(read_exact(s, size))]
    print("codes %s" % " ".join(str(c) for c in codes))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "blocked":
        sys.exit(blocked(sys.argv[2]))
    if sys.argv[1] == "metadata":
        sys.exit(metadata(sys.argv[2], sys.argv[3]))
    sys.exit(segments(sys.argv[2]))
