#!/usr/bin/python3
"""py_clients.py — Debian's confluent-kafka (python3-confluent-kafka, librdkafka 2.0.2 under
/usr/bin/python3) against `ringtail serve`, for tests/cli_kafka_python.sh.

  roundtrip BROKER TOPIC N
      An idempotent producer sends N keyed records (with headers) to TOPIC, flushes, and a
      consumer assigned to every partition from the beginning reads them back: each record
      once, with its key, value and headers, in send order per partition. Exit 0 when so.
  produce-until BROKER TOPIC STOPFILE ACKED
      An idempotent producer (acks=all) sends "0", "1", ... as fast as the broker takes them
      until STOPFILE exists, then flushes; each value acknowledged is appended to ACKED (one
      per line, flushed at once) from the delivery callback. The broker may be killed and
      restarted meanwhile: the producer reconnects. Exit 0 unless the producer hit a fatal
      error (which idempotence raises on a sequence gap the broker reports); prints
      "acked A failed F".

Never talks to anything but BROKER.
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def roundtrip(broker, topic, n):
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "linger.ms": 5,
                  "partitioner": "murmur2_random"})
    for i in range(n):
        p.produce(topic, key=("k%d" % (i % 7)).encode(), value=("v%d" % i).encode(),
                  headers=[("h", ("%d" % i).encode())], on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(60)
    if left or errors:
        print("not delivered: %d; errors: %s" % (left, errors[:5]))
        return 1
    c = Consumer({"bootstrap.servers": broker, "group.id": "py-roundtrip",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True})
    md = c.list_topics(topic, timeout=10)
    parts = sorted(md.topics[topic].partitions)
    c.assign([TopicPartition(topic, q, 0) for q in parts])
    got = {}
    eof = set()
    deadline = time.time() + 60
    while len(eof) < len(parts) and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(m.partition())
                continue
            print("consume error: %s" % m.error())
            return 1
        got.setdefault(m.partition(), []).append((m.key(), m.value(), m.headers()))
    c.close()
    if len(eof) < len(parts):
        print("did not reach the end of every partition")
        return 1
    total = sum(len(v) for v in got.values())
    if total != n:
        print("read %d records, sent %d" % (total, n))
        return 1
    for q, recs in got.items():
        last = -1
        for key, value, headers in recs:
            i = int(value[1:])
            if i <= last or key != ("k%d" % (i % 7)).encode() or \
                    headers != [("h", ("%d" % i).encode())]:
                print("partition %d: record %r after %d" % (q, (key, value, headers), last))
                return 1
            last = i
    # One key, one partition (the murmur2 partitioner on every record of a key).
    keys_per_partition = {q: {k for k, _, _ in recs} for q, recs in got.items()}
    seen = set()
    for ks in keys_per_partition.values():
        if ks & seen:
            print("a key in two partitions")
            return 1
        seen |= ks
    print("roundtrip %d records over %d partitions" % (n, len(parts)))
    return 0


def produce_until(broker, topic, stopfile, acked_path):
    acked = open(acked_path, "a", buffering=1)
    state = {"acked": 0, "failed": 0, "fatal": None}

    def on_delivery(err, msg):
        if err is None:
            acked.write(msg.value().decode() + "\n")
            state["acked"] += 1
        else:
            state["failed"] += 1
            if err.fatal():
                state["fatal"] = str(err)

    def on_error(err):
        if err.fatal():
            state["fatal"] = str(err)
        sys.stderr.write("py_clients: %s\n" % err)

    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "message.timeout.ms": 30000, "reconnect.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 200, "error_cb": on_error})
    i = 0
    while not os.path.exists(stopfile) and state["fatal"] is None:
        try:
            p.produce(topic, value=str(i).encode(), on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.05)
            continue
        if i % 100 == 0:
            p.poll(0.005)  # a steady rate, so the kill lands among many batches in flight
    p.flush(60)
    acked.close()
    print("sent %d acked %d failed %d" % (i, state["acked"], state["failed"]))
    if state["fatal"] is not None:
        print("fatal: %s" % state["fatal"])
        return 1
    return 0


def main(argv):
    if len(argv) == 4 and argv[0] == "roundtrip":
        return roundtrip(argv[1], argv[2], int(argv[3]))
    if len(argv) == 5 and argv[0] == "produce-until":
        return produce_until(argv[1], argv[2], argv[3], argv[4])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
