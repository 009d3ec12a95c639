"""eos.py — the exactly-once pipelines of the cluster's transaction fault tests (issue 25 item
4, docs/cluster.md §9.2): consume-transform-produce loops in the shape Kafka's exactly-once
examples have, through librdkafka (Debian's confluent_kafka). Each pipeline is a consumer of
the input topic in one group (read_committed, no auto commit) and a transactional producer;
per batch it begins a transaction, writes "o-<value>" to the output partition of the same
number, adds the consumed offsets to the transaction (send_offsets_to_transaction, with the
consumer's group metadata: KIP-447) and commits. It records what happened and never judges
it: check() does, at the end.

EW1  An abortable error (txn_requires_abort) aborts the transaction and rewinds the consumer to
     the group's committed offsets, so the batch is processed again in a later transaction; a
     retriable error of a commit retries the commit; a fatal one (a fenced producer: the
     coordinator moved and fenced it, G.7 CM3) closes the producer and the consumer and starts
     a new incarnation under the same transactional id (init_transactions fences the old one).
     A rebalance is seen only inside consume() (on_assign/on_revoke): a batch whose consume saw
     one is dropped and the consumer rewound, and the offsets go with the group metadata read
     when the batch was polled; otherwise a batch polled before a rebalance can be committed
     under the new generation and then delivered again from the position the new assignment
     fetched before that commit (rdk_eos.c has the same rule).
EW2  The input is written before and during the run by one idempotent acks=all producer; the
     expected output is exactly the input topic's records as read back at the end (an input
     sent but not acknowledged may be there, and then must be processed too).
EW3  check(): every input value appears exactly once in the read_committed output, and nothing
     else does (no aborted record visible, none lost, none twice); read_committed reaches each
     output partition's end (no LSO pinned).
"""
import os
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def group_partition(g, partitions=4):
    """Kafka's abs(groupId.hashCode()) % partitions (the engine's rt_group_partition)."""
    h = 0
    for ch in g:
        h = (31 * h + ord(ch)) & 0xffffffff
    if h & 0x80000000:
        h -= 1 << 32
    return abs(h) % partitions


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.committed = 0      # transactions committed
        self.aborted = 0        # transactions aborted (EW1)
        self.records = 0        # records in committed transactions
        self.incarnations = 0   # new producers after a fatal error (EW1)
        self.errors = {}        # error name -> count
        self.phase = "setup"

    def error(self, name):
        with self.lock:
            self.errors[name] = self.errors.get(name, 0) + 1


class Input:
    """EW2: one idempotent acks=all producer writing "i-<n>" round robin, `rate` a second
    (RT_EOS_DEBUG=1 in the environment: librdkafka's eos,msg debug lines on stderr)."""

    def __init__(self, bootstrap, topic, parts, rate, log):
        self.bootstrap, self.topic, self.parts, self.rate, self.log = bootstrap, topic, parts, rate, log
        self.stop_flag = threading.Event()
        self.sent = 0
        self.t = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.t.start()

    def stop(self):
        self.stop_flag.set()
        self.t.join()

    def _run(self):
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                      "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000,
                      "topic.metadata.refresh.interval.ms": 1000,
                      "reconnect.backoff.max.ms": 500,
                      **({"debug": "eos,msg"} if os.environ.get("RT_EOS_DEBUG") else {})})
        n = 0
        period = 1.0 / self.rate
        while not self.stop_flag.is_set():
            try:
                p.produce(self.topic, value=f"i-{n}".encode(), partition=n % self.parts)
                n += 1
            except (BufferError, KafkaException):
                pass
            p.poll(0)
            time.sleep(period)
        left = p.flush(60)
        self.sent = n
        if left:
            self.log(f"input: {left} sends never reported")


class Pipeline:
    def __init__(self, k, bootstrap, src, dst, group, stats, log, batch=50, pace_s=0.05):
        self.k, self.bootstrap, self.src, self.dst, self.group = k, bootstrap, src, dst, group
        self.s, self.log, self.batch, self.pace_s = stats, log, batch, pace_s
        self.stop_flag = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.t.start()

    def stop(self):
        self.stop_flag.set()
        self.t.join()

    def _clients(self):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 1000, "topic.metadata.refresh.interval.ms": 1000,
                      "reconnect.backoff.max.ms": 500})
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": f"{self.group}-{self.k}",
                      "transaction.timeout.ms": 20000, "linger.ms": 5,
                      "topic.metadata.refresh.interval.ms": 1000,
                      "reconnect.backoff.max.ms": 500, "request.timeout.ms": 5000})
        return c, p

    def _rewind(self, c):
        """EW1: back to the group's committed offsets (the aborted batch again)."""
        parts = c.assignment()
        if not parts:
            return
        for tp in c.committed(parts, timeout=30):
            off = tp.offset if tp.offset >= 0 else 0
            try:
                c.seek(TopicPartition(tp.topic, tp.partition, off))
            except KafkaException:
                pass  # revoked meanwhile: its next owner starts from the committed offset

    def _commit(self, p):
        for attempt in range(10):
            try:
                p.commit_transaction(30)
                return
            except KafkaException as e:
                if e.args[0].retriable() and not e.args[0].txn_requires_abort():
                    self.s.error("commit:" + e.args[0].name())
                    time.sleep(0.5)
                    continue
                raise
        p.commit_transaction(30)

    def _session(self):
        c, p = self._clients()
        try:
            p.init_transactions(60)
            moved = []  # EW1: rebalances come through these, inside consume() only

            def on_change(consumer, parts):
                moved.append(len(parts))

            c.subscribe([self.src], on_assign=on_change, on_revoke=on_change)
            while not self.stop_flag.is_set():
                del moved[:]
                msgs = c.consume(self.batch, 0.5)
                msgs = [m for m in msgs if m.error() is None]
                if moved:  # the batch may straddle an assignment: drop it, start again
                    self._rewind(c)
                    continue
                if not msgs:
                    continue
                meta = c.consumer_group_metadata()  # the generation the batch was polled in
                offs = {}
                try:
                    p.begin_transaction()
                    for m in msgs:
                        p.produce(self.dst, value=b"o-" + m.value(), partition=m.partition())
                        offs[m.partition()] = m.offset() + 1
                    p.send_offsets_to_transaction(
                        [TopicPartition(self.src, q, o) for q, o in offs.items()], meta, 30)
                    self._commit(p)
                    with self.s.lock:
                        self.s.committed += 1
                        self.s.records += len(msgs)
                except KafkaException as e:
                    err = e.args[0]
                    self.s.error(err.name())
                    if err.fatal() or not err.txn_requires_abort():
                        raise
                    p.abort_transaction(30)
                    with self.s.lock:
                        self.s.aborted += 1
                    self._rewind(c)
                time.sleep(self.pace_s)
        finally:
            try:
                c.close()
            except KafkaException:
                pass

    def _run(self):
        while not self.stop_flag.is_set():
            try:
                self._session()
            except KafkaException as e:
                self.log(f"pipeline {self.k}: {e.args[0].name()}: {e}; a new incarnation")
                with self.s.lock:
                    self.s.incarnations += 1
                time.sleep(0.5)


def progress(bootstrap, topic, parts, group):
    """The group's committed offsets over the input, summed (every client's commits move it);
    -1 when it cannot be read now."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        com = c.committed([TopicPartition(topic, q) for q in range(parts)], timeout=10)
        return sum(max(tp.offset, 0) for tp in com)
    except KafkaException:
        return -1
    finally:
        c.close()


def lag(bootstrap, topic, parts, group):
    """What the group has not committed yet: sum over partitions of (end - committed), or None
    when it cannot be read now."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = [TopicPartition(topic, q) for q in range(parts)]
        com = c.committed(tps, timeout=10)
        total = 0
        for tp in com:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
            total += hi - max(tp.offset, 0)
        return total
    except KafkaException:
        return None
    finally:
        c.close()


def check(inputs, outputs, short, producer_of=None):
    """EW3. inputs, outputs: {partition: [(offset, value)]} (read_uncommitted input,
    read_committed output); short: the output partitions read_committed did not reach the end
    of; producer_of(partition, offset): the (producer id, epoch) of an input record's batch, or
    None. Returns (violations, notes, figures).

    An input written twice is the broker's dedup failing only when both copies carry one
    producer epoch. Copies of one producer id at two epochs are librdkafka's own re-send: after
    a leader change it may take a batch the old leader appended (and answered
    NOT_LEADER_OR_FOLLOWER, as Kafka's DelayedProduce does) for not persisted, bump its epoch
    on the next OUT_OF_ORDER_SEQUENCE_NUMBER and send the batch again at sequence 0, which no
    broker can tell from a new record (confluentinc/librdkafka#4953, open, seen against Kafka).
    That is a note, and each copy is then an input the pipeline must turn into one output."""
    bad, notes = [], []
    want = {}  # value -> where each copy is
    for q, recs in inputs.items():
        for off, v in recs:
            want.setdefault(v, []).append((q, off))
    for v, at in want.items():
        if len(at) < 2:
            continue
        ids = [producer_of(q, off) if producer_of else None for q, off in at]
        where = " and ".join(f"{q}@{off} {pe}" for (q, off), pe in zip(at, ids))
        if None not in ids and len({pe[0] for pe in ids}) == 1 and len({pe[1] for pe in ids}) == len(ids):
            notes.append(f"input {v} written {len(at)} times by the idempotent producer, each at "
                         f"a new epoch (librdkafka#4953): {where}")
        else:
            bad.append(f"input {v} twice (idempotent producer): {where}")
    seen = {}
    for q, recs in outputs.items():
        for off, v in recs:
            seen.setdefault(v, []).append(f"{q}@{off}")
    for v, at in want.items():
        got = seen.get("o-" + v, [])
        if not got:
            bad.append(f"lost: input {v} ({at}) has no committed output")
        elif len(got) > len(at):
            bad.append(f"twice: o-{v} at {got}" + (f" for {len(at)} inputs" if len(at) > 1 else ""))
        elif len(got) < len(at):
            bad.append(f"lost: {len(at)} inputs {v} at {at}, {len(got)} outputs at {got}")
    for v, at in seen.items():
        if not v.startswith("o-") or v[2:] not in want:
            bad.append(f"never an input: {v} at {at}")
    for q in short:
        bad.append(f"read_committed did not reach the end of output partition {q} (LSO pinned?)")
    fig = {"inputs": sum(len(a) for a in want.values()),
           "committed outputs": sum(len(r) for r in outputs.values()),
           "distinct outputs": len(seen)}
    return bad, notes, fig


def batch_producers(ringtail, partition_dir):
    """{(base offset, last offset): (producer id, epoch)} of every batch in a partition
    directory's segments, read by `ringtail dump --no-records` (a stopped node's files)."""
    import glob
    import re
    import subprocess
    logs = sorted(glob.glob(os.path.join(partition_dir, "*.log")))
    if not logs:
        return {}
    out = subprocess.run([ringtail, "dump", "--no-records", *logs], capture_output=True,
                         text=True).stdout
    found, span = {}, None
    for line in out.splitlines():
        m = re.search(r"baseOffset (\d+) lastOffset (\d+)", line)
        if m:
            span = (int(m.group(1)), int(m.group(2)))
            continue
        m = re.search(r"producerId (-?\d+) epoch (-?\d+)", line)
        if m and span:
            found[span] = (int(m.group(1)), int(m.group(2)))
            span = None
    return found
