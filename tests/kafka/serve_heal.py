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
probe that was answered with an error, no duplicate.

Beside them (issue 21 F3 part 3: transactions and the internal topics heal too), the whole time:
a transactional producer (transactional.id serve-heal-txn) commits transactions of 3 records to
each of the two partitions of topic "heal-txn", retrying a retriable commit and aborting an
abortable one, as the confluent_kafka docs say; and a consumer group (serve-heal-group) reads
"heal" and commits its position synchronously every 100 records. After every free both commit
again (no restart, no new producer); no OffsetCommit is answered KAFKA_STORAGE_ERROR (56: not
retriable for a commit; Kafka answers NOT_COORDINATOR, serve's KO11); the transactional producer
never meets a fatal error. At the end, under read_committed, every committed transaction's 6
records are there once, no aborted one's, and any other transaction is all or nothing; the
group's committed offsets are its last acknowledged commit's. Exit 0 = passed.
"""
import os
import sys
import threading
import time
import urllib.request

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "heal"
TXN_TOPIC = "heal-txn"
PARTITIONS = 2
TXN_RECORDS = 3  # per partition and transaction
GROUP = "serve-heal-group"


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


class TxnWriter(threading.Thread):
    """Transactions of TXN_RECORDS records to each partition of TXN_TOPIC, committed in a loop."""

    def __init__(self, broker):
        super().__init__(daemon=True)
        self.p = ck.Producer({
            "bootstrap.servers": broker,
            "transactional.id": "serve-heal-txn",
            "linger.ms": 5,
            "transaction.timeout.ms": 600000,
            "message.timeout.ms": 590000,
        })
        self.p.init_transactions(60)
        self.lock = threading.Lock()
        self.committed, self.aborted, self.codes = [], [], []
        self.fatal = None
        self.stop = threading.Event()
        self.attempted = 0

    def count(self):
        with self.lock:
            return len(self.committed)

    def note(self, err):
        with self.lock:
            self.codes.append(err.code())
        if err.fatal():
            self.fatal = str(err)

    def produce(self, value, part):
        while True:
            try:
                self.p.produce(TXN_TOPIC, value.encode(), partition=part)
                return
            except BufferError:
                self.p.poll(0.05)

    def end(self, n):
        """Commits transaction n (retrying a retriable failure), or aborts it."""
        while self.fatal is None:
            try:
                self.p.commit_transaction(120)
                with self.lock:
                    self.committed.append(n)
                return
            except ck.KafkaException as e:
                err = e.args[0]
                self.note(err)
                if err.retriable():
                    time.sleep(0.1)
                    continue
                if not err.txn_requires_abort():
                    self.fatal = self.fatal or str(err)
                    return
                break
        while self.fatal is None:
            try:
                self.p.abort_transaction(120)
                with self.lock:
                    self.aborted.append(n)
                return
            except ck.KafkaException as e:
                err = e.args[0]
                self.note(err)
                if not err.retriable():
                    self.fatal = self.fatal or str(err)
                    return
                time.sleep(0.1)

    def run(self):
        n = 0
        while not self.stop.is_set() and self.fatal is None:
            try:
                self.p.begin_transaction()
            except ck.KafkaException as e:
                self.note(e.args[0])
                self.fatal = self.fatal or str(e.args[0])
                return
            self.attempted = n + 1
            for part in range(PARTITIONS):
                for i in range(TXN_RECORDS):
                    self.produce("t%d-%d-%d" % (n, part, i), part)
            self.end(n)
            n += 1


class Committer(threading.Thread):
    """A member of GROUP reading TOPIC and committing its position every 100 records."""

    def __init__(self, broker):
        super().__init__(daemon=True)
        self.c = ck.Consumer({"bootstrap.servers": broker, "group.id": GROUP,
                              "enable.auto.commit": False, "auto.offset.reset": "earliest",
                              "session.timeout.ms": 30000})
        self.c.subscribe([TOPIC])
        self.lock = threading.Lock()
        self.ok, self.codes = 0, []
        self.last = None  # {partition: offset} of the last commit acknowledged
        self.stop = threading.Event()
        self.error = None

    def count(self):
        with self.lock:
            return self.ok

    def commit(self):
        try:
            res = self.c.commit(asynchronous=False)
        except ck.KafkaException as e:
            with self.lock:
                self.codes.append(e.args[0].code())
            return False
        bad = [tp for tp in res if tp.error is not None]
        with self.lock:
            if bad:
                self.codes += [tp.error.code() for tp in bad]
                return False
            self.ok += 1
            last = dict(self.last or {})
            last.update({tp.partition: tp.offset for tp in res if tp.topic == TOPIC})
            self.last = last
        return True

    def run(self):
        since = 0
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is not None and not m.error():
                since += 1
            if since >= 100 and self.commit():
                since = 0
        # The last commit, with the disk free: it must go through (retried as a client would).
        deadline = time.monotonic() + 60
        while not self.commit():
            if time.monotonic() > deadline:
                self.error = "the final commit failed for 60 s"
                break
            time.sleep(0.2)
        self.c.close()


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


def committed_of(broker):
    """The group's committed offsets of TOPIC, as a new member of it would start from."""
    c = ck.Consumer({"bootstrap.servers": broker, "group.id": GROUP, "enable.auto.commit": False})
    res = c.committed([ck.TopicPartition(TOPIC, i) for i in range(PARTITIONS)], timeout=30)
    c.close()
    return {tp.partition: tp.offset for tp in res if tp.offset >= 0}


def read_committed_txn(broker):
    c = ck.Consumer({"bootstrap.servers": broker, "group.id": "serve-heal-txn-check",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    c.assign([ck.TopicPartition(TXN_TOPIC, i, ck.OFFSET_BEGINNING) for i in range(PARTITIONS)])
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
        values.append(m.value().decode())
    c.close()
    if len(eof) < PARTITIONS:
        raise RuntimeError("did not reach the end of every %s partition" % TXN_TOPIC)
    return values


def check_txns(broker, tw):
    """Every committed transaction whole and once, no aborted one, the others all or nothing."""
    values = read_committed_txn(broker)
    seen = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    by_txn = {}
    for v in seen:
        by_txn.setdefault(int(v[1:].split("-")[0]), []).append(v)
    whole = PARTITIONS * TXN_RECORDS
    dups = [v for v, k in seen.items() if k > 1]
    committed, aborted = set(tw.committed), set(tw.aborted)
    lost = [n for n in committed if len(by_txn.get(n, [])) != whole]
    shown = [n for n in aborted if n in by_txn]
    partial = [n for n, vs in by_txn.items() if len(vs) != whole]
    log("transactions: %d committed, %d aborted, %d attempted, read_committed shows %d "
        "(%d records); duplicates %d, committed not whole %d, aborted shown %d, partial %d; "
        "error codes met %s" % (len(committed), len(aborted), tw.attempted, len(by_txn),
                                len(values), len(dups), len(lost), len(shown), len(partial),
                                sorted(set(tw.codes))))
    ok = not (dups or lost or shown or partial)
    if not ok:
        log("duplicates %s committed-not-whole %s aborted-shown %s partial %s" %
            (dups[:5], lost[:5], shown[:5], partial[:5]))
    if tw.fatal:
        log("the transactional producer met a fatal error: %s" % tw.fatal)
        ok = False
    return ok


def main():
    broker, mount, mport, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    admin = AdminClient({"bootstrap.servers": broker})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1),
                                  NewTopic(TXN_TOPIC, PARTITIONS, 1)]).values():
        f.result(30)
    writers = [Writer(broker, i) for i in range(PARTITIONS)]
    for w in writers:
        w.start()
    tw = TxnWriter(broker)
    committer = Committer(broker)
    tw.start()
    committer.start()
    others = [("the transactional producer's commits", tw), ("the group's offset commits",
                                                              committer)]
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
        others_marks = [o.count() for _, o in others]
        while time.monotonic() - freed < 120:
            if all(w.count() > m for w, m in zip(writers, marks)):
                break
            time.sleep(0.05)
        resumed = time.monotonic() - freed
        if not all(w.count() > m for w, m in zip(writers, marks)):
            log("cycle %d: writes did not resume within 120 s of freeing the disk" % c)
            ok = False
        while time.monotonic() - freed < 120:
            if all(o.count() > m for (_, o), m in zip(others, others_marks)):
                break
            time.sleep(0.05)
        for (what, o), m in zip(others, others_marks):
            if o.count() <= m:
                log("cycle %d: %s did not resume within 120 s of freeing the disk" % (c, what))
                ok = False
        log("cycle %d: transactions committed %d, offset commits %d, %.2f s after the free" %
            (c, tw.count(), committer.count(), time.monotonic() - freed))
        m = scrape(mport)
        log("cycle %d: filled %d MiB, faults %d, recoveries %d, failed now %d, writes resumed "
            "%.2f s after the free" % (c, n >> 20, m.get("ringtail_engine_partition_faults_total", 0),
                                       m.get("ringtail_engine_partition_recoveries_total", 0),
                                       m.get("ringtail_engine_partitions_failed", 0), resumed))
    for w in writers + [tw, committer]:
        w.stop.set()
    for w in writers + [tw, committer]:
        w.join(400)
    if committer.error:
        log("group: %s" % committer.error)
        ok = False
    log("group: %d commits acknowledged, failures answered %s" %
        (committer.ok, sorted(set(committer.codes))))
    if ck.KafkaError.KAFKA_STORAGE_ERROR in committer.codes:
        log("an OffsetCommit was answered KAFKA_STORAGE_ERROR (56), which a consumer does not "
            "retry (Kafka answers NOT_COORDINATOR)")
        ok = False
    got = committed_of(broker)
    if got != (committer.last or {}):
        log("the group's committed offsets %s are not its last acknowledged commit's %s" %
            (got, committer.last))
        ok = False
    if not check_txns(broker, tw):
        ok = False
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
