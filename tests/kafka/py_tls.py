#!/usr/bin/python3
"""py_tls.py — TLS clients against `ringtail serve`'s SSL listener, for tests/cli_kafka_tls.sh:
python3-confluent-kafka (Debian's, on librdkafka) with security.protocol=SSL, and Python's own
ssl module for what a Kafka client cannot do (hold a raw connection, stall a handshake). It
drives the clients and reports what they saw; the driver checks.

usage (CERTS: the directory tests/helpers/tls_certs.sh made):
  py_tls.py BROKER CERTS clients TOPIC [mtls]
        a producer sends "p0".."p99" to TOPIC (3 partitions, created by AdminClient), a consumer
        of group "g-tls" subscribes, reads all 100 and commits; its committed offsets are asked
        back; then a transactional producer commits "t0".."t9" and aborts "a0".."a9", and a
        read_committed consumer sees the ten committed ones only. mtls: with the client
        certificate. Prints "produced 100", "group read 100 committed 100", "txn read 10".
  py_tls.py BROKER CERTS reload PID CERTFILE KEYFILE
        connection A (ssl module, trusting the CA) asks ApiVersions; the server's cert files
        are replaced by server2's and PID gets SIGHUP; a new connection sees CN=reloaded (polled
        for 10 s) while A still answers ApiVersions; then the cert file is broken, SIGHUP again:
        a new connection still sees CN=reloaded. Prints "before localhost", "after reloaded",
        "A answers", "kept reloaded".
  py_tls.py BROKER CERTS slow
        opens a TCP connection to the TLS port and sends nothing; prints "closed after MS" once
        the server closes it (or "open" after 15 s)
  py_tls.py BROKER CERTS garbage
        sends a TLS record header and garbage; prints "closed" when the server closes it
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def fail(msg):
    print(msg, file=sys.stderr, flush=True)
    sys.exit(1)


def conf(broker, certs, mtls, **extra):
    c = {
        "bootstrap.servers": broker,
        "security.protocol": "SSL",
        "ssl.ca.location": os.path.join(certs, "ca.pem"),
    }
    if mtls:
        c["ssl.certificate.location"] = os.path.join(certs, "client.pem")
        c["ssl.key.location"] = os.path.join(certs, "client.key")
    c.update(extra)
    return c


def consume(consumer, want, deadline_s=30):
    got = []
    until = time.time() + deadline_s
    while len(got) < want and time.time() < until:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            fail("consume error: %s" % m.error())
        got.append(m)
    return got


def clients(broker, certs, topic, mtls):
    admin = AdminClient(conf(broker, certs, mtls))
    fs = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    for f in fs.values():
        f.result(30)
    p = Producer(conf(broker, certs, mtls, **{"enable.idempotence": True}))
    for i in range(100):
        p.produce(topic, value=("p%d" % i).encode(), partition=i % 3)
    if p.flush(30) != 0:
        fail("produce did not finish")
    print("produced 100", flush=True)

    group = "g-tls" + ("-m" if mtls else "")
    c = Consumer(conf(broker, certs, mtls, **{"group.id": group, "auto.offset.reset": "earliest",
                                                "enable.auto.commit": False}))
    c.subscribe([topic])
    got = consume(c, 100)
    values = sorted(m.value().decode() for m in got)
    if values != sorted("p%d" % i for i in range(100)):
        fail("group read %d records, not p0..p99" % len(got))
    c.commit(asynchronous=False)
    parts = [TopicPartition(topic, i) for i in range(3)]
    committed = sum(tp.offset for tp in c.committed(parts, timeout=10))
    c.close()
    print("group read %d committed %d" % (len(got), committed), flush=True)

    t = Producer(conf(broker, certs, mtls, **{"transactional.id": group + "-tx"}))
    t.init_transactions(30)
    t.begin_transaction()
    for i in range(10):
        t.produce(topic + "-tx", value=("t%d" % i).encode(), partition=0)
    t.commit_transaction(30)
    t.begin_transaction()
    for i in range(10):
        t.produce(topic + "-tx", value=("a%d" % i).encode(), partition=0)
    t.abort_transaction(30)
    t.begin_transaction()
    t.produce(topic + "-tx", value=b"end", partition=0)
    t.commit_transaction(30)
    rc = Consumer(conf(broker, certs, mtls, **{"group.id": group + "-rc",
                                                 "isolation.level": "read_committed",
                                                 "enable.auto.commit": False}))
    rc.assign([TopicPartition(topic + "-tx", 0, 0)])
    seen = []
    until = time.time() + 30
    while time.time() < until and b"end" not in seen:
        m = rc.poll(0.5)
        if m is None:
            continue
        if m.error():
            fail("read_committed error: %s" % m.error())
        seen.append(m.value())
    rc.close()
    if b"end" not in seen or any(v.startswith(b"a") for v in seen):
        fail("read_committed saw %r" % seen)
    print("txn read %d" % (len(seen) - 1), flush=True)


def tls_connect(broker, certs):
    host, port = broker.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    raw = socket.create_connection((host, int(port)), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def peer_cn(s):
    for rdn in s.getpeercert()["subject"]:
        for k, v in rdn:
            if k == "commonName":
                return v
    return "?"


def api_versions(s, corr):
    client = b"rt-py-tls"
    payload = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    s.sendall(struct.pack(">i", len(payload)) + payload)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
        chunk = s.recv(65536)
        if not chunk:
            return False
        buf += chunk
    got, err = struct.unpack_from(">ih", buf, 4)
    return got == corr and err == 0


def reload(broker, certs, pid, certfile, keyfile):
    a = tls_connect(broker, certs)
    if not api_versions(a, 1):
        fail("A: no ApiVersions answer")
    print("before %s" % peer_cn(a), flush=True)
    shutil.copyfile(os.path.join(certs, "server2.pem"), certfile)
    shutil.copyfile(os.path.join(certs, "server2.key"), keyfile)
    os.kill(pid, signal.SIGHUP)
    cn = "?"
    until = time.time() + 10
    while time.time() < until:
        b = tls_connect(broker, certs)
        cn = peer_cn(b)
        b.close()
        if cn == "reloaded":
            break
        time.sleep(0.1)
    print("after %s" % cn, flush=True)
    if api_versions(a, 2):
        print("A answers", flush=True)
    with open(certfile, "w") as f:
        f.write("broken\n")
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.5)
    c = tls_connect(broker, certs)
    print("kept %s" % peer_cn(c), flush=True)
    c.close()
    a.close()


def slow(broker):
    host, port = broker.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=15)
    start = time.time()
    try:
        r = s.recv(1)
    except socket.timeout:
        print("open", flush=True)
        return
    except ConnectionResetError:
        r = b""
    if r == b"":
        print("closed after %d" % int((time.time() - start) * 1000), flush=True)
    else:
        print("open", flush=True)


def garbage(broker):
    host, port = broker.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(bytes([0x16, 0x03, 0x01, 0x01, 0x20]) + bytes((i * 37) & 0xff for i in range(300)))
    try:
        while True:
            r = s.recv(4096)
            if not r:
                break
    except ConnectionResetError:
        pass
    print("closed", flush=True)


def main(argv):
    broker, certs, cmd = argv[1], argv[2], argv[3]
    try:
        if cmd == "clients":
            clients(broker, certs, argv[4], len(argv) > 5 and argv[5] == "mtls")
        elif cmd == "reload":
            reload(broker, certs, int(argv[4]), argv[5], argv[6])
        elif cmd == "slow":
            slow(broker)
        elif cmd == "garbage":
            garbage(broker)
        else:
            fail("unknown command %s" % cmd)
    except KafkaException as e:
        fail("kafka: %s" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
