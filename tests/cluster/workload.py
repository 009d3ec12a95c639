"""workload.py — the clients of the fault tests, in the style of Jepsen's Kafka workload
(issue 24 item 5, docs/cluster.md §9): idempotent producers (librdkafka through Debian's
confluent_kafka, enable.idempotence=true, acks=all) writing unique values to every partition,
recording each send and what its delivery report said (acknowledged at an offset, failed, or
never reported); and, once the cluster is healed, readers of everything each partition holds
with read_uncommitted and with read_committed. It records what the clients saw and never judges
it: checker.py does.

A value is "P<producer>.<incarnation>-<seq>" (WL1: unique in the whole run; a producer that
hits a fatal error starts a new incarnation, so one incarnation's sequence numbers are the order
its idempotent producer promised).

WL2: every fatal error of a producer (librdkafka's err.fatal(): for an idempotent producer
OUT_OF_ORDER_SEQUENCE_NUMBER 45 or UNKNOWN_PRODUCER_ID 59 from a broker, which it cannot recover
from) is recorded once per incarnation with its error name and the phase it came in, whichever
way it arrives (the error callback, a delivery report, or poll raising it); checker.py's JC8
judges them.
"""
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


class History:
    """Everything the producers did: sends and their outcomes, tagged with the phase (the
    scenario running) at the time of the send."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sent = {}     # value -> (partition, phase)
        self.acked = {}    # value -> (partition, offset, phase)
        self.failed = {}   # value -> (partition, error name, phase)
        self.fatal = []    # (producer incarnation, error name, error text, phase): WL2
        self.sent_at = {}  # value -> time.monotonic() of the send
        self.reported_at = {}  # value -> time.monotonic() of its delivery report
        self.phase = "setup"


class Producers:
    def __init__(self, bootstrap, topic, partitions, history, count=2, rate=100, log=print):
        self.bootstrap, self.topic, self.parts = bootstrap, topic, partitions
        self.h, self.count, self.rate, self.log = history, count, rate, log
        self.stop_flag = threading.Event()
        self.threads = []

    def start(self):
        for n in range(self.count):
            t = threading.Thread(target=self._run, args=(n,), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self, flush_s=40):
        self.flush_s = flush_s
        self.stop_flag.set()
        for t in self.threads:
            t.join()

    def _producer(self, on_error):
        return Producer({
            "error_cb": on_error, "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 30000, "request.timeout.ms": 5000,
            "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
            "socket.connection.setup.timeout.ms": 3000, "reconnect.backoff.max.ms": 500,
        })

    def _run(self, n):
        h = self.h
        inc = 0
        seq = 0
        fatal = []
        p = None

        def report(err, msg):
            v = msg.value().decode()
            with h.lock:
                phase = h.sent.get(v, (None, h.phase))[1]  # the phase of the send
                h.reported_at[v] = time.monotonic()
                if err is None:
                    h.acked[v] = (msg.partition(), msg.offset(), phase)
                else:
                    h.failed[v] = (msg.partition(), err.name(), phase)
                    if err.fatal():
                        fatal.append(err)

        def on_error(err):
            if err.fatal():
                fatal.append(err)

        period = 1.0 / self.rate
        nxt = time.monotonic()
        while not self.stop_flag.is_set():
            if p is None or fatal:
                if p is not None:
                    with h.lock:  # WL2
                        h.fatal.append((f"P{n}.{inc}", fatal[0].name(), str(fatal[0]), h.phase))
                    self.log(f"producer P{n}.{inc}: fatal error {fatal[0]}, a new incarnation")
                    try:
                        p.flush(5)
                    except KafkaException:
                        pass
                    fatal.clear()
                    inc += 1
                    seq = 0
                p = self._producer(on_error)
            part = seq % self.parts
            v = f"P{n}.{inc}-{seq}"
            try:
                p.produce(self.topic, value=v.encode(), partition=part, on_delivery=report)
                with h.lock:
                    h.sent[v] = (part, h.phase)
                    h.sent_at[v] = time.monotonic()
                seq += 1
            except BufferError:
                pass
            except KafkaException as e:  # no metadata for the partition yet: again later
                if e.args[0].code() not in (KafkaError._UNKNOWN_PARTITION,
                                            KafkaError._UNKNOWN_TOPIC):
                    self.log(f"producer P{n}.{inc}: produce: {e}")
            try:
                p.poll(0)
            except KafkaException as e:  # confluent_kafka raises a fatal error from poll
                if not fatal:
                    fatal.append(e.args[0])
            nxt += period
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                nxt = time.monotonic()
        try:
            left = p.flush(getattr(self, "flush_s", 40))
        except KafkaException as e:
            left = -1
            self.log(f"producer P{n}.{inc}: flush: {e}")
        if left:
            self.log(f"producer P{n}.{inc}: {left} sends never reported after the flush")


def read_all(bootstrap, topic, partitions, isolation, timeout=60):
    """Every record of every partition from offset 0 to the end the leader reports at the
    start: {partition: [(offset, value)]} in the order the consumer returned them."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"jepsen-{isolation}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "topic.metadata.refresh.interval.ms": 1000})
    ends = {}
    for p in range(partitions):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ends[p] = hi
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = {p: [] for p in range(partitions)}
    done = {p for p in range(partitions) if ends[p] == 0}
    deadline = time.monotonic() + timeout
    while len(done) < partitions and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                if m.offset() >= ends[m.partition()]:
                    done.add(m.partition())
            continue
        got[m.partition()].append((m.offset(), m.value().decode()))
        if m.offset() + 1 >= ends[m.partition()]:
            done.add(m.partition())
    c.close()
    return got, ends, sorted(set(range(partitions)) - done)
