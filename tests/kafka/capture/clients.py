#!/usr/bin/python3
"""clients.py SCENARIO BOOTSTRAP — python3-confluent-kafka (librdkafka 2.0.2) traffic for the
golden captures (capture.sh). Each scenario sends what its name says; answers from the mock are
not judged (it is only a traffic source)."""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

scenario, bootstrap = sys.argv[1], sys.argv[2]
base = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}

if scenario == "admin":
    a = AdminClient(base)
    for f in a.create_topics([NewTopic("gt-created", num_partitions=4, replication_factor=1)],
                             operation_timeout=5, request_timeout=5).values():
        try:
            f.result()
        except Exception as e:
            print("create:", e)
    for f in a.describe_configs([ConfigResource("topic", "golden")],
                                request_timeout=5).values():
        try:
            f.result()
        except Exception as e:
            print("describe:", e)
    for f in a.delete_topics(["gt-created"], operation_timeout=5, request_timeout=5).values():
        try:
            f.result()
        except Exception as e:
            print("delete:", e)
elif scenario == "txn":
    p = Producer(dict(base, **{"transactional.id": "golden-txn", "acks": "all"}))
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(3):
        p.produce("golden", key=b"tk%d" % i, value=b"tv%d" % i, partition=1)
    c = Consumer(dict(base, **{"group.id": "golden-group", "enable.auto.commit": False}))
    p.send_offsets_to_transaction([TopicPartition("golden", 0, 2)],
                                  c.consumer_group_metadata(), 10)
    p.commit_transaction(10)
    c.close()
elif scenario == "group":
    c = Consumer(dict(base, **{"group.id": "golden-group", "auto.offset.reset": "earliest",
                               "enable.auto.commit": False, "isolation.level": "read_committed",
                               "session.timeout.ms": 6000}))
    c.subscribe(["golden"])
    got = 0
    for _ in range(40):
        m = c.poll(0.25)
        if m is not None and not m.error():
            got += 1
            if got == 3:
                c.commit(m, asynchronous=False)
                break
    c.committed([TopicPartition("golden", 0)], timeout=5)
    c.close()
else:
    sys.exit("unknown scenario " + scenario)
