"""txn_verify_wire.py — AddPartitionsToTxn v4 (KIP-890's broker-to-broker VerifyOnly batches) on
the wire (tools/kafka/handlers/txn_verify.c KTV5, api_table.c KA9).

usage: txn_verify_wire.py coordinator PORT TOPIC
         (tests/cli_cluster_txn_verify_e2e.sh: PORT is the transaction coordinator's node, TOPIC
         has partitions 0 and 1 with leaders) a
         transaction opened over the wire (InitProducerId v1, AddPartitionsToTxn v1) is asked about
         with v4 — its added partition NONE, one not added INVALID_TXN_STATE, an older epoch
         PRODUCER_FENCED, a newer one INVALID_PRODUCER_EPOCH, an unknown id INVALID_TXN_STATE,
         without VerifyOnly INVALID_REQUEST — and asking added nothing (the partition asked
         about is still not in the transaction); after EndTxn the partition is INVALID_TXN_STATE.
       txn_verify_wire.py refusals CLUSTER_PORT SINGLE_PORT AUTHORIZER_NODE_PORT
         (tests/cli_cluster_txn_verify.sh) ApiVersions advertises AddPartitionsToTxn 0-3 on both a
         cluster node and a single broker, the single broker refuses v4 (closes the connection),
         and a cluster node with --authorizer on and no ACL answers v4
         CLUSTER_AUTHORIZATION_FAILED at the top level, with no result (Kafka's rule for v4).
"""
import struct
import sys
import time

from kwire import R, check, kstr, s16, s32, s64, Conn
import kwire

MODE = sys.argv[1]
TOPIC = sys.argv[3] if MODE == "coordinator" else "tv"


def uv(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def cstr(s):
    b = s.encode()
    return uv(len(b) + 1) + b


def v4_body(txns):
    """txns: [(id, pid, epoch, verify_only, {topic: [partitions]})]"""
    out = uv(len(txns) + 1)
    for tid, pid, epoch, verify, topics in txns:
        out += cstr(tid) + s64(pid) + s16(epoch) + bytes([1 if verify else 0])
        out += uv(len(topics) + 1)
        for name, parts in topics.items():
            out += cstr(name) + uv(len(parts) + 1) + b"".join(s32(p) for p in parts) + b"\x00"
        out += b"\x00"
    return out + b"\x00"


def read_uv(r):
    v, shift = 0, 0
    while True:
        b = r.b[r.i]
        r.i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v
        shift += 7


def read_cstr(r):
    n = read_uv(r) - 1
    s = r.b[r.i:r.i + n].decode()
    r.i += n
    return s


def v4_answer(data):
    """The top-level error and [(transaction index, id, topic, partition, code)], from a v4
    answer (after the correlation id: the response header's tags first)."""
    r = R(data)
    read_uv(r)  # the response header's tags
    r.i32()  # throttle
    top = r.i16()
    out = []
    for x in range(read_uv(r) - 1):
        tid = read_cstr(r)
        for _ in range(read_uv(r) - 1):
            name = read_cstr(r)
            for _ in range(read_uv(r) - 1):
                p, code = r.i32(), r.i16()
                read_uv(r)
                out.append((x, tid, name, p, code))
            read_uv(r)
        read_uv(r)
    return top, out


def ask_v4(conn, txns):
    conn.send(24, 4, v4_body(txns), header_v2=True)
    got = conn.recv()
    return v4_answer(got[1]) if got else (None, None)


def retry(fn, want, seconds=30):
    """fn() until it returns something whose [0] is `want` (retriable codes meanwhile)."""
    end = time.time() + seconds
    while True:
        got = fn()
        if got[0] == want or time.time() > end:
            return got
        time.sleep(0.2)


def i64(r):
    v = struct.unpack_from(">q", r.b, r.i)[0]
    r.i += 8
    return v


def api_max(port, key):
    c = Conn("127.0.0.1:%s" % port, "tv", answer=R)
    r = c.call(18, 0, b"")
    if r is None:
        return None
    r.i16()
    for _ in range(r.i32()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        if k == key:
            return hi
    return None




def coordinator_checks(port):
    """The transaction and the v4 questions, at the transaction coordinator's node."""
    global c, pid, epoch
    c = Conn("127.0.0.1:%s" % port, "tv", answer=bytes)

    # InitProducerId v1 with a transactional id, retried while the node has no producer-id block or
    # is not yet the coordinator.
    def init():
        a = R(c.call(22, 1, kstr("tv-1") + s32(60000)))
        a.i32()
        err = a.i16()
        return err, i64(a), a.i16()


    err, pid, old_epoch = retry(init, 0)
    err, pid, epoch = init()  # a second instance: the first epoch is fenced
    check(err == 0 and pid >= 0 and epoch == old_epoch + 1,
          "InitProducerId twice: producer %d epoch %d (error %d)" % (pid, epoch, err))


    def add(parts):
        body = kstr("tv-1") + s64(pid) + s16(epoch) + s32(1) + kstr(TOPIC) + s32(len(parts))
        body += b"".join(s32(p) for p in parts)
        a = R(c.call(24, 1, body))
        a.i32()
        codes = []
        for _ in range(a.i32()):
            a.str()
            for _ in range(a.i32()):
                a.i32()
                codes.append(a.i16())
        return (max(codes) if codes else -1,)


    # Retried while the partition's leadership is not ready (COORDINATOR_LOAD_IN_PROGRESS).
    added = retry(lambda: add([0]), 0)[0]
    check(added == 0, "AddPartitionsToTxn v1 adds %s-0 (%d)" % (TOPIC, added))

    top, got = ask_v4(c, [("tv-1", pid, epoch, True, {TOPIC: [0, 1]}),
                          ("tv-1", pid, old_epoch, True, {TOPIC: [0]}),
                          ("nobody", pid, epoch, True, {TOPIC: [0]}),
                          ("tv-1", pid, epoch, False, {TOPIC: [1]}),
                          ("tv-1", pid, epoch + 1, True, {TOPIC: [0]})])
    check(top == 0, "v4 answered, top-level NONE (%s)" % top)
    want = [(0, "tv-1", TOPIC, 0, 0),    # added: NONE
            (0, "tv-1", TOPIC, 1, 48),   # not added: INVALID_TXN_STATE
            (1, "tv-1", TOPIC, 0, 90),   # the fenced epoch: PRODUCER_FENCED
            (2, "nobody", TOPIC, 0, 48),  # an unknown id: INVALID_TXN_STATE
            (3, "tv-1", TOPIC, 1, 42),   # not VerifyOnly: INVALID_REQUEST
            (4, "tv-1", TOPIC, 0, 47)]   # a newer epoch: INVALID_PRODUCER_EPOCH
    check(got == want, "v4: every partition answered in order, as Kafka's codes (%s)" % got)
    _, again = ask_v4(c, [("tv-1", pid, epoch, True, {TOPIC: [1]})])
    check(again == [(0, "tv-1", TOPIC, 1, 48)],
          "v4 changed nothing: %s-1 is still not in the transaction" % TOPIC)

    # EndTxn v1 (abort): the partition is no longer in an ongoing transaction.
    a = R(c.call(26, 1, kstr("tv-1") + s64(pid) + s16(epoch) + b"\x00"))
    a.i32()
    check(a.i16() == 0, "EndTxn abort")
    _, after = ask_v4(c, [("tv-1", pid, epoch, True, {TOPIC: [0]})])
    check(after == [(0, "tv-1", TOPIC, 0, 48)], "after EndTxn: INVALID_TXN_STATE")



def refusal_checks(cluster, single, authz):
    """What is advertised and who refuses v4."""
    # KA9: advertised 0-3 on both; the single broker refuses v4.
    check(api_max(cluster, 24) == 3, "ApiVersions on the cluster node: AddPartitionsToTxn max 3")
    check(api_max(single, 24) == 3, "ApiVersions on the single broker: AddPartitionsToTxn max 3")
    s = Conn("127.0.0.1:%s" % single, "tv", answer=bytes)
    s.send(24, 4, v4_body([("tv-1", 1, 0, True, {TOPIC: [0]})]), header_v2=True)
    check(s.recv() is None, "the single broker closes a v4 request (not served)")

    # KTV5: CLUSTER_ACTION, as Kafka's KafkaApis asks for v4.
    def ask_authz():  # a new connection each time: the node closes them until it has joined
        try:
            return ask_v4(Conn("127.0.0.1:%s" % authz, "tv", answer=bytes),
                          [("tv-1", 1, 0, True, {TOPIC: [0]})])
        except OSError:
            return None, None


    top, res = retry(ask_authz, 31, 30)
    check(top == 31 and res == [], "--authorizer on, no ACL: v4 is CLUSTER_AUTHORIZATION_FAILED, "
          "no result (%s %s)" % (top, res))



if MODE == "coordinator":
    coordinator_checks(sys.argv[2])
else:
    refusal_checks(sys.argv[2], sys.argv[3], sys.argv[4])
sys.exit(1 if kwire.failed else 0)
