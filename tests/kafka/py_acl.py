"""py_acl.py — a client without ACLs against `ringtail serve --authorizer on` (tests/
cli_kafka_acl.sh runs it), through Debian's confluent-kafka (librdkafka 2.0.2): every API it
can send is answered with Kafka's authorization code, never a hang or a dropped connection.
Prints "ok <what>" or "FAIL <what>: <why>" per check; exits 1 when any failed.

  denied BROKER TOPIC GROUP   TOPIC exists; the principal (User:ANONYMOUS) has no ACL at all
  describe-only BROKER TOPIC GROUP
                              the principal may DESCRIBE the topic and the group, no more
  txn BROKER TOPIC GROUP      ... and WRITE on transactional id acl-txn2
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

failed = 0


def check(what, cond, why=""):
    global failed
    if cond:
        print("ok", what)
    else:
        failed += 1
        print("FAIL", what + ":", why)


def code_of(fut):
    try:
        fut.result(timeout=20)
        return KafkaError.NO_ERROR
    except KafkaException as e:
        return e.args[0].code()


def denied(broker, topic, group):
    conf = {"bootstrap.servers": broker, "socket.timeout.ms": 10000}
    admin = AdminClient(conf)
    md = admin.list_topics(timeout=20)
    check("Metadata (all topics) lists none", len(md.topics) == 0, str(list(md.topics)))
    md = admin.list_topics(topic=topic, timeout=20)
    err = md.topics[topic].error
    check("Metadata of the topic: TOPIC_AUTHORIZATION_FAILED",
          err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, str(err))
    fs = admin.create_topics([NewTopic(topic + "-new", 1, 1)], request_timeout=20)
    c = code_of(fs[topic + "-new"])
    check("CreateTopics: TOPIC_AUTHORIZATION_FAILED", c == KafkaError.TOPIC_AUTHORIZATION_FAILED, c)
    fs = admin.create_partitions([NewPartitions(topic, 3)], request_timeout=20)
    c = code_of(fs[topic])
    check("CreatePartitions: TOPIC_AUTHORIZATION_FAILED",
          c == KafkaError.TOPIC_AUTHORIZATION_FAILED, c)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    c = code_of(list(admin.describe_configs([res], request_timeout=20).values())[0])
    check("DescribeConfigs (topic): TOPIC_AUTHORIZATION_FAILED",
          c == KafkaError.TOPIC_AUTHORIZATION_FAILED, c)
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    c = code_of(list(admin.describe_configs([res], request_timeout=20).values())[0])
    check("DescribeConfigs (broker): CLUSTER_AUTHORIZATION_FAILED",
          c == KafkaError.CLUSTER_AUTHORIZATION_FAILED, c)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "1000"})
    c = code_of(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("AlterConfigs: TOPIC_AUTHORIZATION_FAILED", c == KafkaError.TOPIC_AUTHORIZATION_FAILED, c)
    fs = admin.delete_topics([topic], request_timeout=20)
    c = code_of(fs[topic])
    check("DeleteTopics: TOPIC_AUTHORIZATION_FAILED", c == KafkaError.TOPIC_AUTHORIZATION_FAILED, c)
    groups = admin.list_groups(timeout=20)
    check("ListGroups lists none", len(groups) == 0, str(groups))

    # Produce (a plain producer: Metadata then Produce).
    errs = []
    p = Producer(dict(conf, **{"enable.idempotence": False, "message.timeout.ms": 10000}))
    p.produce(topic, b"v", callback=lambda e, m: errs.append(e))
    p.flush(20)
    check("Produce: TOPIC_AUTHORIZATION_FAILED",
          len(errs) == 1 and errs[0] is not None
          and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, str(errs))

    # InitProducerId for a transactional id.
    tp = Producer(dict(conf, **{"transactional.id": "acl-txn", "transaction.timeout.ms": 10000}))
    try:
        tp.init_transactions(20)
        check("InitProducerId (transactional): TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False,
              "it succeeded")
    except KafkaException as e:
        check("InitProducerId (transactional): TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
              e.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, str(e))

    # A consumer group: FindCoordinator refused.
    cerrs = []
    c = Consumer(dict(conf, **{"group.id": group, "auto.offset.reset": "earliest",
                               "error_cb": lambda e: cerrs.append(e)}))
    c.subscribe([topic])
    got = None
    deadline = time.time() + 15
    while time.time() < deadline and got is None:
        m = c.poll(0.5)
        if m is not None and m.error():
            got = m.error()
        for e in cerrs:
            if e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                got = e
    check("a group consumer: GROUP_AUTHORIZATION_FAILED",
          got is not None and got.code() == KafkaError.GROUP_AUTHORIZATION_FAILED,
          "%s %s" % (got, cerrs))
    c.close()



def describe_only(broker, topic, group):
    """DESCRIBE on the topic and the group, nothing else: what reads need READ is refused."""
    conf = {"bootstrap.servers": broker, "socket.timeout.ms": 10000}
    c = Consumer(dict(conf, **{"group.id": group, "enable.auto.commit": False,
                               "auto.offset.reset": "earliest"}))
    try:
        got = c.committed([TopicPartition(topic, 0)], timeout=15)
        check("OffsetFetch with DESCRIBE on the group: answered", got[0].error is None, str(got))
    except KafkaException as e:
        check("OffsetFetch with DESCRIBE on the group: answered", False, str(e))
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        check("OffsetCommit without READ on the group: GROUP_AUTHORIZATION_FAILED", False,
              "answered")
    except KafkaException as e:
        check("OffsetCommit without READ on the group: GROUP_AUTHORIZATION_FAILED",
              e.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, str(e))
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        check("ListOffsets with DESCRIBE on the topic: answered", hi >= 0, "%d %d" % (lo, hi))
    except KafkaException as e:
        check("ListOffsets with DESCRIBE on the topic: answered", False, str(e))
    c.assign([TopicPartition(topic, 0, 0)])
    got = None
    deadline = time.time() + 15
    while time.time() < deadline and got is None:
        m = c.poll(0.5)
        if m is not None:
            got = m.error() or "a record"
    check("Fetch without READ on the topic: TOPIC_AUTHORIZATION_FAILED",
          isinstance(got, KafkaError) and got.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED,
          str(got))
    c.close()
    # FindCoordinator passes (DESCRIBE), JoinGroup needs READ on the group.
    cerrs = []
    c = Consumer(dict(conf, **{"group.id": group, "error_cb": lambda e: cerrs.append(e)}))
    c.subscribe([topic])
    got = None
    deadline = time.time() + 15
    while time.time() < deadline and got is None:
        m = c.poll(0.5)
        if m is not None and m.error():
            got = m.error()
        for e in cerrs:
            if e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                got = e
    check("JoinGroup without READ on the group: GROUP_AUTHORIZATION_FAILED",
          got is not None and got.code() == KafkaError.GROUP_AUTHORIZATION_FAILED,
          "%s %s" % (got, cerrs))
    c.close()


def txn(broker, topic, group):
    """WRITE on transactional id acl-txn2 only (DESCRIBE on TOPIC and GROUP): the transaction
    starts, AddPartitionsToTxn refuses TOPIC, AddOffsetsToTxn refuses GROUP."""
    conf = {"bootstrap.servers": broker, "socket.timeout.ms": 10000}
    p = Producer(dict(conf, **{"transactional.id": "acl-txn2", "transaction.timeout.ms": 10000}))
    try:
        p.init_transactions(20)
        check("InitProducerId with WRITE on the transactional id: answered", True)
    except KafkaException as e:
        check("InitProducerId with WRITE on the transactional id: answered", False, str(e))
        return
    p.begin_transaction()
    p.produce(topic, b"t")
    try:
        p.commit_transaction(20)
        check("AddPartitionsToTxn without WRITE on the topic: TOPIC_AUTHORIZATION_FAILED", False,
              "committed")
    except KafkaException as e:
        check("AddPartitionsToTxn without WRITE on the topic: TOPIC_AUTHORIZATION_FAILED",
              e.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, str(e))
    p.abort_transaction(20)
    c = Consumer(dict(conf, **{"group.id": group}))
    p.begin_transaction()
    try:
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], c.consumer_group_metadata(),
                                      20)
        check("AddOffsetsToTxn without READ on the group: GROUP_AUTHORIZATION_FAILED", False,
              "answered")
    except KafkaException as e:
        check("AddOffsetsToTxn without READ on the group: GROUP_AUTHORIZATION_FAILED",
              e.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, str(e))
    c.close()


if __name__ == "__main__":
    if sys.argv[1] == "denied":
        denied(*sys.argv[2:5])
    elif sys.argv[1] == "describe-only":
        describe_only(*sys.argv[2:5])
    elif sys.argv[1] == "txn":
        txn(*sys.argv[2:5])
    else:
        check("known subcommand", False, sys.argv[1])
    sys.exit(1 if failed else 0)
