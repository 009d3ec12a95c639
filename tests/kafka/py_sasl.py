#!/usr/bin/python3
"""py_sasl.py — python3-confluent-kafka (Debian's, on librdkafka) over SASL_PLAINTEXT against
`ringtail serve`, for tests/cli_kafka_sasl.sh. It drives the client and prints what it saw; the
driver checks.

usage: py_sasl.py BROKER MECHANISM USER PASSWORD TOPIC
  a transactional producer commits "py-0".."py-9" to TOPIC and aborts "py-aborted"; a
  read_committed consumer subscribed as group "py-sasl-g" reads TOPIC from the start and
  commits; prints "read <values comma-joined>" and "committed <offset>"; "error <what>" on
  failure (exit 1).
"""
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

broker, mech, user, password, topic = sys.argv[1:6]
auth = {
    "bootstrap.servers": broker,
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": mech,
    "sasl.username": user,
    "sasl.password": password,
}
try:
    p = Producer(dict(auth, **{"transactional.id": "py-sasl-tx", "enable.idempotence": True}))
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, ("py-%d" % i).encode(), partition=0)
    p.commit_transaction(15)
    p.begin_transaction()
    p.produce(topic, b"py-aborted", partition=0)
    p.abort_transaction(15)
    c = Consumer(dict(auth, **{"group.id": "py-sasl-g", "auto.offset.reset": "earliest",
                               "isolation.level": "read_committed",
                               "enable.auto.commit": False}))
    c.subscribe([topic])
    got = []
    for _ in range(300):
        m = c.poll(0.1)
        if m is None or m.error():
            if len(got) >= 10:
                break
            continue
        got.append(m.value().decode())
    c.commit(asynchronous=False)
    off = c.committed([TopicPartition(topic, 0)], 10)[0].offset
    c.close()
    print("read " + ",".join(got))
    print("committed %d" % off)
except KafkaException as e:
    print("error %s" % e)
    sys.exit(1)
