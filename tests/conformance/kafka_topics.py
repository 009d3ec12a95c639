"""kafka_topics.py — the few kafka-topics.sh commands librdkafka's test suite runs (test.c's
test_kafka_topics(): --create with --partitions, --replication-factor and --config k=v; --alter
--partitions; --delete), done with confluent-kafka's AdminClient against the broker, so the
conformance run (tools/conformance.sh) can run those tests without Kafka's Java tools. The broker
address comes from --bootstrap-server, or --zookeeper (the suite passes ZK_ADDRESS for brokers
older than 3.0: tools/conformance.sh points it at the broker). It only forwards: it never decides
an outcome beyond exiting non-zero (with the broker's error on stderr) when the request fails, as
kafka-topics.sh does. Anything else it is handed is refused with exit 2.
"""
import argparse
import sys

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic


def main():
    ap = argparse.ArgumentParser(prog="kafka-topics.sh")
    ap.add_argument("--bootstrap-server")
    ap.add_argument("--zookeeper")
    op = ap.add_mutually_exclusive_group(required=True)
    op.add_argument("--create", action="store_true")
    op.add_argument("--alter", action="store_true")
    op.add_argument("--delete", action="store_true")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int)
    ap.add_argument("--replication-factor", type=int)
    ap.add_argument("--config", action="append", default=[])
    a = ap.parse_args()
    broker = a.bootstrap_server or a.zookeeper
    if not broker:
        ap.error("--bootstrap-server or --zookeeper is needed")
    configs = {}
    for kv in a.config:
        k, sep, v = kv.partition("=")
        if not sep:
            ap.error("--config takes key=value, not %r" % kv)
        configs[k] = v
    admin = AdminClient({"bootstrap.servers": broker})
    if a.create:
        fut = admin.create_topics([NewTopic(a.topic, a.partitions or 1, a.replication_factor or 1,
                                            config=configs)])
    elif a.alter:
        if a.partitions is None or configs:
            ap.error("--alter is supported with --partitions only")
        fut = admin.create_partitions([NewPartitions(a.topic, a.partitions)])
    else:
        fut = admin.delete_topics([a.topic])
    try:
        fut[a.topic].result(30)
    except Exception as e:  # the broker's answer, as kafka-topics.sh prints it
        print("kafka-topics.sh: %s of %s failed: %s" % (
            "create" if a.create else "alter" if a.alter else "delete", a.topic, e),
            file=sys.stderr)
        return 1
    print("%s topic %s." % ("Created" if a.create else "Altered" if a.alter else "Deleted",
                            a.topic))
    return 0


if __name__ == "__main__":
    sys.exit(main())
