#!/usr/bin/python3
"""serve_longpoll.py — a Fetch long poll on `ringtail serve` is woken by an append, not by its
timeout: a confluent-kafka consumer waits at the end of a partition with fetch.wait.max.ms =
WAIT; a record produced while it waits must arrive in well under WAIT (the append's round wakes
the parked fetch). Also: while nothing is produced, the consumer does not spin (the server
counts its requests: see the shell driver). usage: serve_longpoll.py PORT; exit 0 = passed.
"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

WAIT_MS = 10000


def main():
    port = sys.argv[1]
    bs = "127.0.0.1:" + port
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    p.produce("longpoll", value=b"first")
    p.flush(20)
    c = Consumer({"bootstrap.servers": bs, "group.id": "lp", "fetch.wait.max.ms": WAIT_MS,
                  "fetch.min.bytes": 1, "enable.auto.commit": False})
    c.assign([TopicPartition("longpoll", 0, 0)])
    got = None
    deadline = time.monotonic() + 20
    while got is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got = m.value()
    assert got == b"first", got
    time.sleep(2.0)  # the consumer is now parked in a long poll at the end
    t0 = time.monotonic()
    p.produce("longpoll", value=b"second")
    p.flush(20)
    got = None
    while got is None and time.monotonic() - t0 < 20:
        m = c.poll(0.1)
        if m is not None and not m.error():
            got = m.value()
    took = time.monotonic() - t0
    c.close()
    assert got == b"second", got
    assert took < WAIT_MS / 1000.0 / 2, "arrived after %.2f s: the append did not wake the poll" % took
    print("woken after %.3f s (wait %d ms)" % (took, WAIT_MS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
