#!/usr/bin/python3
"""serve_heal.py — issue 21 F3 from outside (tests/cli_kafka_heal.sh drives it): a broker whose
data directory is on a small tmpfs that this script fills and frees in a loop.

  serve_heal.py BROKER MOUNT METRICS_PORT CYCLES

Two idempotent acks=all producers (confluent_kafka, i.e. librdkafka) write unique values to the
two partitions of topic "heal" the whole time. Each cycle: fill the tmpfs (a file in MOUNT
written until ENOSPC), wait until the broker counts a partition fault
(ringtail_engine_partition_faults_total), send probes with retries off until one is answered
KAFKA_STORAGE_ERROR (56: the client sees the cause, not a timeout), free the space, and wait
until both producers have deliveries again (writes resume; the bound is generous, the time is
printed). At the end every value delivered is in the log exactly once, and nothing else is: no
probe that was answered with an error, no duplicate. Exit 0 = passed.
"""
import os
import sys
import threading
import time
import urllib.request

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "heal"
PARTITIONS = 2


def log(msg):
    print(msg, flush=True)


def scrape(mport):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10).read()
    out = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


class Writer(threading.Thread):
    def __init__(self, broker, partition):
        super().__init__(daemon=True)
        self.partition = partition
        self.p = ck.Producer({
            "bootstrap.servers": broker,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "retry.backoff.ms": 100,
            "message.timeout.ms": 600000,
        })
        self.lock = threading.Lock()
        self.delivered = []
        self.failed = []
        self.stop = threading.Event()
        self.sent = 0

    def on_delivery(self, err, msg):
        with self.lock:
            value = msg.value().decode().split(".")[0]
            if err is None:
                self.delivered.append(value)
            else:
                self.failed.append((value, str(err)))

    def count(self):
        with self.lock:
            return len(self.delivered)

    def run(self):
        while not self.stop.is_set():
            v = "w%d-%d" % (self.partition, self.sent)
            try:
                self.p.produce(TOPIC, v.encode() + b"." * 60, partition=self.partition,
                               on_delivery=self.on_delivery)
                self.sent += 1
            except BufferError:
                pass  # the queue is full while the disk is: wait for deliveries
            self.p.poll(0.004)
        left = self.p.flush(300)
        if left:
            with self.lock:
                self.failed.append(("flush", "%d messages left" % left))


def fill(path):
    """Writes path until the file system is full; returns the bytes written."""
    written = 0
    chunk = b"f" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        size = len(chunk)
        while size >= 4096:
            try:
                n = f.write(chunk[:size])
                written += n
                if n < size:
                    size //= 2
            except OSError:
                size //= 2
    return written


def probe_until_56(broker, cycle, deadline):
    """Sends one record at a time with retries off until one is answered 56; returns the values
    acknowledged meanwhile and whether 56 was seen."""
    p = ck.Producer({"bootstrap.servers": broker, "acks": "all", "enable.idempotence": False,
                     "retries": 0, "message.timeout.ms": 20000, "linger.ms": 0})
    acked, codes = [], []
    n = 0
    while time.monotonic() < deadline:
        res = {}

        def cb(err, msg, res=res):
            res["err"] = err
            res["value"] = msg.value().decode()

        for part in range(PARTITIONS):
            v = "probe-%d-%d-%d" % (cycle, part, n)
            n += 1
            p.produce(TOPIC, v.encode(), partition=part, on_delivery=cb)
            p.flush(30)
            err = res.get("err")
            if err is None:
                acked.append(v)
                continue
            codes.append(err.code())
            if err.code() == ck.KafkaError.KAFKA_STORAGE_ERROR:
                return acked, True, codes
        time.sleep(0.05)
    return acked, False, codes


def read_all(broker):
    c = ck.Consumer({"bootstrap.servers": broker, "group.id": "serve-heal-check",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "auto.offset.reset": "earliest"})
    c.assign([ck.TopicPartition(TOPIC, i, ck.OFFSET_BEGINNING) for i in range(PARTITIONS)])
    values, eof = [], set()
    deadline = time.monotonic() + 120
    while len(eof) < PARTITIONS and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                eof.add(m.partition())
                continue
            raise RuntimeError("consume: %s" % m.error())
        values.append(m.value().decode().split(".")[0])
    c.close()
    if len(eof) < PARTITIONS:
        raise RuntimeError("did not reach the end of every partition")
    return values


def main():
    broker, mount, mport, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    admin = AdminClient({"bootstrap.servers": broker})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        f.result(30)
    writers = [Writer(broker, i) for i in range(PARTITIONS)]
    for w in writers:
        w.start()
    filler = os.path.join(mount, "filler")
    probes, saw56 = [], 0
    ok = True
    for c in range(cycles):
        time.sleep(1.0)
        before = scrape(mport).get("ringtail_engine_partition_faults_total", 0)
        n = fill(filler)
        deadline = time.monotonic() + 60
        faults = before
        while faults == before and time.monotonic() < deadline:
            time.sleep(0.05)
            faults = scrape(mport).get("ringtail_engine_partition_faults_total", 0)
        if faults == before:
            log("cycle %d: no partition failed within 60 s of filling the disk (%d bytes)" % (c, n))
            ok = False
        acked, seen, codes = probe_until_56(broker, c, time.monotonic() + 30)
        probes += acked
        saw56 += seen
        if not seen:
            log("cycle %d: no probe was answered KAFKA_STORAGE_ERROR (codes %s)" % (c, codes))
        time.sleep(0.5)
        os.unlink(filler)
        freed = time.monotonic()
        marks = [w.count() for w in writers]
        while time.monotonic() - freed < 120:
            if all(w.count() > m for w, m in zip(writers, marks)):
                break
            time.sleep(0.05)
        resumed = time.monotonic() - freed
        if not all(w.count() > m for w, m in zip(writers, marks)):
            log("cycle %d: writes did not resume within 120 s of freeing the disk" % c)
            ok = False
        m = scrape(mport)
        log("cycle %d: filled %d MiB, faults %d, recoveries %d, failed now %d, writes resumed "
            "%.2f s after the free" % (c, n >> 20, m.get("ringtail_engine_partition_faults_total", 0),
                                       m.get("ringtail_engine_partition_recoveries_total", 0),
                                       m.get("ringtail_engine_partitions_failed", 0), resumed))
    for w in writers:
        w.stop.set()
    for w in writers:
        w.join(400)
    if saw56 == 0:
        log("no client ever saw KAFKA_STORAGE_ERROR")
        ok = False
    delivered = probes[:]
    for w in writers:
        if w.failed:
            log("writer %d: %d deliveries failed, e.g. %s" % (w.partition, len(w.failed), w.failed[:3]))
            ok = False
        delivered += w.delivered
    values = read_all(broker)
    seen = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    dups = [v for v, k in seen.items() if k > 1]
    missing = [v for v in delivered if v not in seen]
    extra = [v for v in seen if v not in set(delivered)]
    log("delivered %d (%d probes), read %d, duplicates %d, missing %d, not acknowledged %d, "
        "cycles answered 56: %d" % (len(delivered), len(probes), len(values), len(dups),
                                    len(missing), len(extra), saw56))
    if dups or missing or extra:
        log("duplicates %s missing %s extra %s" % (dups[:5], missing[:5], extra[:5]))
        ok = False
    print("heal ok" if ok else "heal FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
