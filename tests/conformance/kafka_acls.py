"""kafka_acls.py — the kafka-acls.sh commands librdkafka's test suite runs (0109, 0115, 0119:
`--bootstrap-server B --add --allow-principal|--deny-principal P --operation O
--allow-host|--deny-host H --topic T`), plus --remove and --list, sent to the broker as
kafka-acls.sh sends them: CreateAcls v1, DeleteAcls v1, DescribeAcls v1 over one plaintext
connection. Debian's python3-confluent-kafka (1.7) has no ACL API, so the few requests are
written here by hand from Kafka's protocol guide (non-flexible versions: no tagged fields).
It only forwards: it exits non-zero (the broker's error on stderr) when the broker refuses,
as kafka-acls.sh does, and 2 on anything it was not written for.
"""
import argparse
import socket
import struct
import sys

RESOURCE = {"topic": 2, "group": 3, "cluster": 4, "transactional-id": 5}
PATTERN = {"literal": 3, "prefixed": 4, "any": 1, "match": 2}
OPERATION = {"all": 2, "read": 3, "write": 4, "create": 5, "delete": 6, "alter": 7,
             "describe": 8, "clusteraction": 9, "describeconfigs": 10, "alterconfigs": 11,
             "idempotentwrite": 12}
ALLOW, DENY, ANY = 3, 2, 1


def s16(v):
    b = v.encode()
    return struct.pack(">h", len(b)) + b


def ns16(v):
    return struct.pack(">h", -1) if v is None else s16(v)


class Reader:
    def __init__(self, b):
        self.b, self.at = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.at)
        self.at += struct.calcsize(fmt)
        return v[0]

    def nstr(self):
        n = self.take(">h")
        if n < 0:
            return None
        v = self.b[self.at:self.at + n].decode()
        self.at += n
        return v


def call(broker, key, version, body):
    host, _, port = broker.rpartition(":")
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=30) as s:
        req = struct.pack(">hhi", key, version, 1) + s16("kafka-acls.sh") + body
        s.sendall(struct.pack(">i", len(req)) + req)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            head += chunk
        n = struct.unpack(">i", head)[0]
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            data += chunk
    r = Reader(data)
    r.take(">i")  # correlation id
    return r


def main():
    ap = argparse.ArgumentParser(prog="kafka-acls.sh")
    ap.add_argument("--bootstrap-server", required=True)
    op = ap.add_mutually_exclusive_group(required=True)
    op.add_argument("--add", action="store_true")
    op.add_argument("--remove", action="store_true")
    op.add_argument("--list", action="store_true")
    ap.add_argument("--allow-principal", action="append", default=[])
    ap.add_argument("--deny-principal", action="append", default=[])
    ap.add_argument("--allow-host", action="append", default=[])
    ap.add_argument("--deny-host", action="append", default=[])
    ap.add_argument("--operation", action="append", default=[])
    ap.add_argument("--topic", action="append", default=[])
    ap.add_argument("--group", action="append", default=[])
    ap.add_argument("--transactional-id", action="append", default=[])
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--resource-pattern-type", default="literal")
    ap.add_argument("--force", action="store_true")  # never prompts anyway
    a = ap.parse_args()
    pattern = PATTERN.get(a.resource_pattern_type.lower())
    if pattern is None:
        ap.error("unknown --resource-pattern-type %s" % a.resource_pattern_type)
    try:
        ops = [OPERATION[o.lower()] for o in (a.operation or ["All"])]
    except KeyError as e:
        ap.error("unknown --operation %s" % e)
    resources = ([(2, t) for t in a.topic] + [(3, g) for g in a.group] +
                 [(5, t) for t in a.transactional_id] + ([(4, "kafka-cluster")] if a.cluster else []))
    entries = []  # (principal, host, permission)
    for perm, principals, hosts in ((ALLOW, a.allow_principal, a.allow_host),
                                    (DENY, a.deny_principal, a.deny_host)):
        for p in principals:
            for h in hosts or ["*"]:
                entries.append((p, h, perm))
    if a.list:
        rtype, rname = resources[0] if resources else (1, None)
        r = call(a.bootstrap_server, 29, 1,
                 struct.pack(">b", rtype) + ns16(rname) +
                 struct.pack(">b", pattern if resources else 1) + ns16(None) + ns16(None) +
                 struct.pack(">bb", 1, 1))
        r.take(">i")
        err, msg = r.take(">h"), r.nstr()
        if err:
            print("kafka-acls.sh: list failed: error %d: %s" % (err, msg), file=sys.stderr)
            return 1
        for _ in range(r.take(">i")):
            rt, rn, pt = r.take(">b"), r.nstr(), r.take(">b")
            print("Current ACLs for resource `ResourcePattern(resourceType=%d, name=%s, "
                  "patternType=%d)`:" % (rt, rn, pt))
            for _ in range(r.take(">i")):
                pr, ho, o, pe = r.nstr(), r.nstr(), r.take(">b"), r.take(">b")
                print(" \t(principal=%s, host=%s, operation=%d, permissionType=%d)"
                      % (pr, ho, o, pe))
        return 0
    if not resources:
        ap.error("a resource is needed (--topic, --group, --transactional-id, --cluster)")
    if a.add and not entries:
        ap.error("--add needs --allow-principal or --deny-principal")
    body = b""
    count = 0
    for rtype, rname in resources:
        for o in ops:
            if a.add:
                for p, h, perm in entries:
                    body += (struct.pack(">b", rtype) + s16(rname) + struct.pack(">b", pattern) +
                             s16(p) + s16(h) + struct.pack(">bb", o, perm))
                    count += 1
            else:  # --remove: the given principals, or every one of the resource
                for p, h, perm in entries or [(None, None, ANY)]:
                    body += (struct.pack(">b", rtype) + ns16(rname) +
                             struct.pack(">b", pattern) + ns16(p) + ns16(h) +
                             struct.pack(">bb", o, perm))
                    count += 1
    r = call(a.bootstrap_server, 30 if a.add else 31, 1, struct.pack(">i", count) + body)
    r.take(">i")  # throttle
    failed = 0
    for _ in range(r.take(">i")):
        err, msg = r.take(">h"), r.nstr()
        if a.remove:  # skip the matching ACLs
            for _ in range(r.take(">i")):
                r.take(">h"), r.nstr(), r.take(">b"), r.nstr(), r.take(">b")
                r.nstr(), r.nstr(), r.take(">b"), r.take(">b")
        if err:
            failed += 1
            print("kafka-acls.sh: %s failed: error %d: %s"
                  % ("add" if a.add else "remove", err, msg), file=sys.stderr)
    if failed:
        return 1
    print("%s %d ACL binding(s)." % ("Added" if a.add else "Removed filters for", count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
