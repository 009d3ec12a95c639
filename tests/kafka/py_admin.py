"""py_admin.py — topic administration through Debian's confluent-kafka AdminClient against
`ringtail serve` (tests/cli_kafka_admin.sh runs it). Each subcommand prints one line per check,
"ok <what>" or "FAIL <what>: <why>", and exits 1 when any check failed.

  configs BROKER   CreateTopics with configs (honoured and kept ones), an unknown config and a
                   bad value refused with INVALID_CONFIG naming the key, DescribeConfigs with
                   each value's source, AlterConfigs (whole replacement) and its effect seen by
                   DescribeConfigs, validate_only; on the broker resource a dynamic config
                   (log.retention.ms, one day: it now applies to the topics) set and described as DYNAMIC_BROKER_CONFIG, a static one
                   (broker.id) refused INVALID_REQUEST and described read-only.
  recheck BROKER   after a restart: the configs `configs` left are still there, the broker's
                   dynamic one too.
  partitions BROKER
                   CreatePartitions: a 1-partition topic with records grows to 3, the new
                   partitions take records and the old one keeps its own; a count that is not
                   an increase refused with INVALID_PARTITIONS; validate_only changes nothing.
  dynlog BROKER    dynamic broker log configs applied (broker_config.h BC5): the cluster default
                   message.max.bytes=1000 (BROKER "") makes a 2 KB produce to a topic without
                   its own max.message.bytes fail with MSG_SIZE_TOO_LARGE (10) while a topic
                   with the override still takes it; DescribeConfigs of the topic reports
                   DYNAMIC_DEFAULT_BROKER_CONFIG with message.max.bytes as synonym; this
                   broker's own value (BROKER "0", 1500) wins over the default.
  dynlog_recheck BROKER
                   after a restart: still applied (broker-configs.meta, applied at start).
  delete BROKER    DeleteTopics of a topic with records: gone from Metadata, an unknown topic
                   refused with UNKNOWN_TOPIC_OR_PART, the topic recreated under its name starts
                   empty (librdkafka's 0107 does the same).
"""
import socket
import struct
import sys

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition, Consumer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

failed = 0


def check(what, cond, why=""):
    global failed
    if cond:
        print("ok", what)
    else:
        failed += 1
        print("FAIL", what + ":", why)


def result(fut):
    """(value, None) or (None, KafkaError)."""
    try:
        return fut.result(timeout=20), None
    except KafkaException as e:
        return None, e.args[0]


def describe_topic(admin, topic):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    fs = admin.describe_configs([res], request_timeout=20)
    out, err = result(list(fs.values())[0])
    if err:
        raise RuntimeError("describe_configs %s: %s" % (topic, err))
    return out


def configs(broker):
    admin = AdminClient({"bootstrap.servers": broker})
    fs = admin.create_topics([
        NewTopic("cfg", 2, 1, config={"retention.ms": "5000", "compression.type": "lz4",
                                      "cleanup.policy": "delete",
                                      "message.timestamp.type": "LogAppendTime"}),
        NewTopic("cfg-bad-name", 1, 1, config={"dummy.doesntexist": "x"}),
        NewTopic("cfg-bad-value", 1, 1, config={"segment.bytes": "10"}),
        NewTopic("cfg-bad-policy", 1, 1, config={"cleanup.policy": "shred"}),
        NewTopic("cfg-compact", 1, 1, config={"cleanup.policy": "compact",
                                              "min.cleanable.dirty.ratio": "0.1",
                                              "delete.retention.ms": "1000"}),
    ], request_timeout=20)
    _, err = result(fs["cfg"])
    check("create_topics with four configs", err is None, str(err))
    _, err = result(fs["cfg-compact"])
    check("create_topics with cleanup.policy=compact (issue 26)", err is None, str(err))
    for t, key in (("cfg-bad-name", "dummy.doesntexist"), ("cfg-bad-value", "segment.bytes"),
                   ("cfg-bad-policy", "cleanup.policy")):
        _, err = result(fs[t])
        check("create %s refused with INVALID_CONFIG naming %s" % (t, key),
              err is not None and err.name() == "INVALID_CONFIG" and key in err.str(),
              str(err))
    md = admin.list_topics(timeout=10)
    check("refused topics do not exist",
          not any(t in md.topics for t in ("cfg-bad-name", "cfg-bad-value", "cfg-bad-policy")),
          str(sorted(md.topics)))

    d = describe_topic(admin, "cfg")
    ms = d.get("retention.ms")
    check("describe_configs: retention.ms 5000 from DYNAMIC_TOPIC_CONFIG",
          ms is not None and ms.value == "5000" and
          ms.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and
          not ms.is_default and not ms.is_read_only,
          str(ms and (ms.value, ms.source)))
    ct = d.get("compression.type")
    check("describe_configs: compression.type lz4", ct is not None and ct.value == "lz4",
          str(ct and ct.value))
    rb = d.get("retention.bytes")
    check("describe_configs: retention.bytes -1 from DEFAULT_CONFIG",
          rb is not None and rb.value == "-1" and
          rb.source == ConfigSource.DEFAULT_CONFIG.value and rb.is_default,
          str(rb and (rb.value, rb.source)))
    check("describe_configs lists every topic config (>= 25)", len(d) >= 25, str(len(d)))

    # AlterConfigs replaces the topic's overrides: retention.ms goes back to its default.
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg",
                         set_config={"retention.bytes": "1048576", "max.message.bytes": "2000"})
    fs = admin.alter_configs([res], request_timeout=20)
    _, err = result(list(fs.values())[0])
    check("alter_configs on the topic", err is None, str(err))
    d = describe_topic(admin, "cfg")
    check("after alter: retention.bytes 1048576 (topic), retention.ms back to its default",
          d["retention.bytes"].value == "1048576" and
          d["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and
          d["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
          "%s %s" % (d["retention.bytes"].value, d["retention.ms"].value))

    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.ms": "-7"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("alter_configs with a bad value: INVALID_CONFIG naming retention.ms",
          err is not None and err.name() == "INVALID_CONFIG" and "retention.ms" in err.str(),
          str(err))
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.ms": "1"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20,
                                             validate_only=True).values())[0])
    check("alter_configs validate_only accepted", err is None, str(err))
    d = describe_topic(admin, "cfg")
    check("validate_only changed nothing", d["retention.bytes"].value == "1048576" and
          d["retention.ms"].value != "1", d["retention.ms"].value)

    res = ConfigResource(ConfigResource.Type.TOPIC, "nope", set_config={"retention.ms": "1"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("alter_configs of an unknown topic: UNKNOWN_TOPIC_OR_PART",
          err is not None and err.name() == "UNKNOWN_TOPIC_OR_PART", str(err))

    # Dynamic broker configs (handle_admin.c KAD10): log.retention.ms is one of Kafka's.
    res = ConfigResource(ConfigResource.Type.BROKER, "0",
                         set_config={"log.retention.ms": "86400000"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("alter_configs of the broker's dynamic log.retention.ms", err is None, str(err))
    res = ConfigResource(ConfigResource.Type.BROKER, "0", set_config={"broker.id": "7"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("alter_configs of the broker's static broker.id: INVALID_REQUEST",
          err is not None and err.name() == "INVALID_REQUEST", str(err))
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    out, err = result(list(admin.describe_configs([res], request_timeout=20).values())[0])
    check("describe_configs of the broker: log.retention.ms 86400000 from DYNAMIC_BROKER_CONFIG",
          err is None and out["log.retention.ms"].value == "86400000" and
          not out["log.retention.ms"].is_read_only and
          out["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value, str(err))
    check("describe_configs of the broker: broker.id read-only, STATIC_BROKER_CONFIG",
          err is None and out["broker.id"].is_read_only and
          out["broker.id"].source == ConfigSource.STATIC_BROKER_CONFIG.value, str(err))


def recheck(broker):
    admin = AdminClient({"bootstrap.servers": broker})
    d = describe_topic(admin, "cfg")
    check("after a restart: retention.bytes 1048576 and max.message.bytes 2000 kept",
          d["retention.bytes"].value == "1048576" and d["max.message.bytes"].value == "2000",
          "%s %s" % (d["retention.bytes"].value, d["max.message.bytes"].value))
    check("after a restart: message.timestamp.type back to its default (replaced)",
          d["message.timestamp.type"].value == "CreateTime", d["message.timestamp.type"].value)
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    out, err = result(list(admin.describe_configs([res], request_timeout=20).values())[0])
    check("after a restart: the broker's log.retention.ms 86400000 (broker-configs.meta)",
          err is None and out["log.retention.ms"].value == "86400000" and
          out["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value, str(err))


def produce_one(broker, topic, size):
    """The delivery error code of one record of `size` bytes (0: delivered)."""
    got = []
    p = Producer({"bootstrap.servers": broker, "linger.ms": 0, "retries": 0,
                  "message.timeout.ms": 15000})
    p.produce(topic, b"x" * size, on_delivery=lambda err, msg: got.append(err))
    p.flush(20)
    if not got:
        return None
    return 0 if got[0] is None else got[0].code()


def topic_max_message_bytes(admin, topic):
    e = describe_topic(admin, topic)["max.message.bytes"]
    syn = [(s.name, s.source) for s in e.synonyms.values()] if e.synonyms else []
    return e.value, e.source, syn


def alter_broker_default(broker, key, value):
    """AlterConfigs v0 of the BROKER resource "" (the cluster default: kafka-configs.sh
    --entity-default), spoken by hand: confluent_kafka's ConfigResource refuses an empty name.
    The answer's error code."""
    def kstr(v):
        b = v.encode()
        return struct.pack(">h", len(b)) + b
    body = (struct.pack(">hhi", 33, 0, 7) + kstr("py_admin") + struct.pack(">i", 1) +
            struct.pack(">b", 4) + kstr("") + struct.pack(">i", 1) + kstr(key) + kstr(value) +
            struct.pack(">?", False))
    host, port = broker.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as c:
        c.sendall(struct.pack(">i", len(body)) + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = c.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            buf += chunk
    # size, correlation id, throttle, resources count, then the first one's error code
    return struct.unpack(">h", buf[16:18])[0]


def dynlog(broker):
    admin = AdminClient({"bootstrap.servers": broker})
    fs = admin.create_topics([NewTopic("dl_plain", 1, 1),
                              NewTopic("dl_own", 1, 1, config={"max.message.bytes": "100000"})],
                             request_timeout=20)
    for t, f in fs.items():
        _, err = result(f)
        check("create %s" % t, err is None, str(err))
    check("before: a 2 KB record to a topic without override is taken",
          produce_one(broker, "dl_plain", 2048) == 0)
    err = alter_broker_default(broker, "message.max.bytes", "1000")
    check("alter_configs of the cluster default message.max.bytes=1000", err == 0, str(err))
    rc = produce_one(broker, "dl_plain", 2048)
    check("a 2 KB record to a topic without override: MSG_SIZE_TOO_LARGE (10)",
          rc == KafkaError.MSG_SIZE_TOO_LARGE, str(rc))
    check("a 2 KB record to a topic with its own max.message.bytes: taken",
          produce_one(broker, "dl_own", 2048) == 0)
    v, src, syn = topic_max_message_bytes(admin, "dl_plain")
    check("describe dl_plain: max.message.bytes 1000 from DYNAMIC_DEFAULT_BROKER_CONFIG, "
          "synonym message.max.bytes",
          v == "1000" and src == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value and
          ("message.max.bytes", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value) in
          [(n, s.value if hasattr(s, "value") else s) for n, s in syn],
          "%s %s %s" % (v, src, syn))
    v, src, _ = topic_max_message_bytes(admin, "dl_own")
    check("describe dl_own: its own 100000 (DYNAMIC_TOPIC_CONFIG)",
          v == "100000" and src == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, "%s %s" % (v, src))
    res = ConfigResource(ConfigResource.Type.BROKER, "0", set_config={"message.max.bytes": "1500"})
    _, err = result(list(admin.alter_configs([res], request_timeout=20).values())[0])
    check("alter_configs of this broker's message.max.bytes=1500", err is None, str(err))
    check("this broker's value wins over the default: 1200 bytes taken, 2 KB refused",
          produce_one(broker, "dl_plain", 1200) == 0 and
          produce_one(broker, "dl_plain", 2048) == KafkaError.MSG_SIZE_TOO_LARGE)
    v, src, _ = topic_max_message_bytes(admin, "dl_plain")
    check("describe dl_plain: 1500 from DYNAMIC_BROKER_CONFIG",
          v == "1500" and src == ConfigSource.DYNAMIC_BROKER_CONFIG.value, "%s %s" % (v, src))


def dynlog_recheck(broker):
    admin = AdminClient({"bootstrap.servers": broker})
    rc = produce_one(broker, "dl_plain", 2048)
    check("after a restart: a 2 KB record to dl_plain still MSG_SIZE_TOO_LARGE",
          rc == KafkaError.MSG_SIZE_TOO_LARGE, str(rc))
    check("after a restart: 1200 bytes to dl_plain taken, 2 KB to dl_own taken",
          produce_one(broker, "dl_plain", 1200) == 0 and produce_one(broker, "dl_own", 2048) == 0)
    v, src, _ = topic_max_message_bytes(admin, "dl_plain")
    check("after a restart: describe dl_plain 1500 from DYNAMIC_BROKER_CONFIG",
          v == "1500" and src == ConfigSource.DYNAMIC_BROKER_CONFIG.value, "%s %s" % (v, src))


def end_offsets(broker, topic, parts):
    c = Consumer({"bootstrap.servers": broker, "group.id": "rt-admin-probe"})
    out = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(parts)]
    c.close()
    return out


def delete(broker):
    admin = AdminClient({"bootstrap.servers": broker})
    _, err = result(admin.create_topics([NewTopic("del", 2, 1)], request_timeout=20)["del"])
    check("create a 2-partition topic", err is None, str(err))
    p = Producer({"bootstrap.servers": broker})
    for i in range(100):
        p.produce("del", value=b"v%d" % i, partition=i % 2)
    check("100 records produced", p.flush(20) == 0, "unflushed")
    check("its end offsets are 50 and 50", end_offsets(broker, "del", 2) == [50, 50],
          str(end_offsets(broker, "del", 2)))
    fs = admin.delete_topics(["del", "never-was"], request_timeout=20)
    _, err = result(fs["del"])
    check("delete_topics of the topic", err is None, str(err))
    _, err = result(fs["never-was"])
    check("delete_topics of an unknown topic: UNKNOWN_TOPIC_OR_PART",
          err is not None and err.name() == "UNKNOWN_TOPIC_OR_PART", str(err))
    md = admin.list_topics(timeout=10)
    check("the deleted topic is gone from Metadata", "del" not in md.topics, str(sorted(md.topics)))
    _, err = result(admin.create_topics([NewTopic("del", 3, 1)], request_timeout=20)["del"])
    check("recreated with 3 partitions", err is None, str(err))
    check("the recreated topic starts empty", end_offsets(broker, "del", 3) == [0, 0, 0],
          str(end_offsets(broker, "del", 3)))
    p = Producer({"bootstrap.servers": broker})  # metadata of the recreated topic
    p.produce("del", value=b"new", partition=2)
    check("a record produced to the recreated topic", p.flush(20) == 0, "unflushed")
    check("...lands at offset 0", end_offsets(broker, "del", 3) == [0, 0, 1],
          str(end_offsets(broker, "del", 3)))


def partitions(broker):
    from confluent_kafka.admin import NewPartitions
    admin = AdminClient({"bootstrap.servers": broker})
    _, err = result(admin.create_topics([NewTopic("grow", 1, 1)], request_timeout=20)["grow"])
    check("create a 1-partition topic", err is None, str(err))
    p = Producer({"bootstrap.servers": broker})
    for i in range(10):
        p.produce("grow", value=b"old%d" % i, partition=0)
    check("10 records produced to partition 0", p.flush(20) == 0, "unflushed")
    fs = admin.create_partitions([NewPartitions("grow", 3)], request_timeout=20)
    _, err = result(fs["grow"])
    check("create_partitions to 3", err is None, str(err))
    md = admin.list_topics(topic="grow", timeout=10)
    check("Metadata lists 3 partitions", len(md.topics["grow"].partitions) == 3,
          str(md.topics["grow"].partitions))
    p = Producer({"bootstrap.servers": broker})
    p.produce("grow", value=b"new", partition=2)
    check("a record produced to a new partition", p.flush(20) == 0, "unflushed")
    check("end offsets 10, 0, 1", end_offsets(broker, "grow", 3) == [10, 0, 1],
          str(end_offsets(broker, "grow", 3)))
    fs = admin.create_partitions([NewPartitions("grow", 2)], request_timeout=20)
    _, err = result(fs["grow"])
    check("create_partitions to fewer: INVALID_PARTITIONS",
          err is not None and err.name() == "INVALID_PARTITIONS", str(err))
    fs = admin.create_partitions([NewPartitions("grow", 5)], request_timeout=20,
                                 validate_only=True)
    _, err = result(fs["grow"])
    md = admin.list_topics(topic="grow", timeout=10)
    check("validate_only: accepted and still 3 partitions",
          err is None and len(md.topics["grow"].partitions) == 3, str(err))
    fs = admin.create_partitions([NewPartitions("nope", 5)], request_timeout=20)
    _, err = result(fs["nope"])
    check("create_partitions of an unknown topic: UNKNOWN_TOPIC_OR_PART",
          err is not None and err.name() == "UNKNOWN_TOPIC_OR_PART", str(err))


if __name__ == "__main__":
    {"configs": configs, "recheck": recheck, "delete": delete,
     "partitions": partitions, "dynlog": dynlog, "dynlog_recheck": dynlog_recheck}[sys.argv[1]](sys.argv[2])
    sys.exit(1 if failed else 0)
