#!/usr/bin/python3
"""bad_input.py — hostile bytes at `ringtail serve` (issue 12 item 9), for
tests/cli_kafka_bad_input.sh, which keeps a healthy producer and consumer running meanwhile.

  bad_input.py HOST PORT SERVER_PID

Each case opens its own TCP connection, sends one kind of bad input, and checks the broker's
answer: the right Kafka error where the protocol has one, else the connection closed — never a
crash (SERVER_PID still alive and a fresh connection still answered after every case), never a
hang (every answer within 10 s), never an effect on the data (a refused produce appends
nothing). Requests are encoded here by hand (the point is bytes no client library would send);
the layouts are Kafka's (clients/src/main/resources/common/message/*.json).

Prints "ok   - ..." or "FAIL - ..." per check; exits 1 if any check failed.
"""
import os
import socket
import struct
import sys
import time

from kwire import crc32c, metadata_v1_topics
from kwire import kstr as string
from kwire import zigzag as varint

TIMEOUT = 10.0
passed = 0
failed = 0


def ok(desc):
    global passed
    passed += 1
    print("ok   - " + desc, flush=True)


def bad(desc, why):
    global failed
    failed += 1
    print("FAIL - %s: %s" % (desc, why), flush=True)


# ---- encoding ---------------------------------------------------------------------------------

def record_batch(values, corrupt_crc=False):
    """A RecordBatch v2 without producer id, uncompressed, one record per value."""
    now = int(time.time() * 1000)
    recs = b""
    for i, v in enumerate(values):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0)
        recs += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, now, now, -1, -1, -1, len(values)) + recs
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0x00010000
    head = struct.pack(">iBI", 0, 2, crc)  # partitionLeaderEpoch, magic, crc
    batch_len = len(head) + len(after_crc)  # everything after the length field
    return struct.pack(">qi", 0, batch_len) + head + after_crc


def request(api_key, version, correlation_id, body, client_id="rt-bad-input", header_v2=False):
    """The frame: request header v1, or v2 (v1 + empty tagged fields, what a client sends with a
    flexible version: ApiVersions v3 and above, including versions the broker does not know)."""
    payload = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id)
    if header_v2:
        payload += b"\x00"
    payload += body
    return struct.pack(">i", len(payload)) + payload


def produce_v3(topic, partition, records, acks=-1):
    body = string(None) + struct.pack(">hi", acks, 10000)
    body += struct.pack(">i", 1) + string(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", partition)
    body += struct.pack(">i", len(records)) + records
    return body


def metadata_v1(topics):
    if topics is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(topics)) + b"".join(string(t) for t in topics)


# ---- the wire ---------------------------------------------------------------------------------

def connect(host, port):
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_response(s):
    """The next response frame (without its size), or None when the broker closed."""
    head = recv_exact(s, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if size < 4 or size > 64 << 20:
        raise ValueError("response frame size %d" % size)
    return recv_exact(s, size)


def closed_within(s, seconds=TIMEOUT):
    """True when the broker closes (EOF or reset) without sending anything, within `seconds`."""
    s.settimeout(seconds)
    try:
        data = s.recv(65536)
        return data == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def send_all(s, data):
    try:
        s.sendall(data)
        return True
    except (ConnectionResetError, BrokenPipeError):
        return False  # the broker already closed: fine for a bad frame


# ---- checks -----------------------------------------------------------------------------------

class Broker:
    def __init__(self, host, port, pid):
        self.host, self.port, self.pid = host, port, pid
        self.corr = 1000

    def next_corr(self):
        self.corr += 1
        return self.corr

    def alive(self):
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def metadata(self, topics):
        """Metadata v1 on a fresh connection: {topic: (error, partition count)}."""
        s = connect(self.host, self.port)
        corr = self.next_corr()
        s.sendall(request(3, 1, corr, metadata_v1(topics)))
        r = read_response(s)
        s.close()
        if r is None:
            raise ValueError("metadata: connection closed")
        (got,) = struct.unpack_from(">i", r, 0)
        if got != corr:
            raise ValueError("metadata: correlation id %d, sent %d" % (got, corr))
        return {name.decode(): (err, np_) for err, name, np_ in metadata_v1_topics(r)}

    def healthy(self, desc):
        """After a case: the process lives and a fresh connection is answered."""
        if not self.alive():
            bad(desc + ": the broker is still running", "process %d is gone" % self.pid)
            return False
        try:
            self.metadata([])
        except Exception as e:  # noqa: BLE001 — any failure here is the finding
            bad(desc + ": a fresh connection is answered afterwards", repr(e))
            return False
        ok(desc + ": the broker still answers a fresh connection")
        return True


def produce(s, b, topic, partition, records, corr):
    s.sendall(request(0, 3, corr, produce_v3(topic, partition, records)))
    r = read_response(s)
    if r is None:
        return None
    got, nt = struct.unpack_from(">ii", r, 0)
    if got != corr or nt != 1:
        raise ValueError("produce: correlation %d topics %d" % (got, nt))
    pos = 8
    (tl,) = struct.unpack_from(">h", r, pos)
    pos += 2 + tl
    (np_,) = struct.unpack_from(">i", r, pos)
    pos += 4
    part, err, base = struct.unpack_from(">ihq", r, pos)
    return err, base


def case_closed(b, desc, data, half_close=False):
    s = connect(b.host, b.port)
    sent = send_all(s, data)
    if half_close and sent:
        s.shutdown(socket.SHUT_WR)
    if not sent or closed_within(s):
        ok(desc + ": the broker closes the connection")
    else:
        bad(desc + ": the broker closes the connection", "still open after %.0f s" % TIMEOUT)
    s.close()
    b.healthy(desc)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    b = Broker(argv[0], int(argv[1]), int(argv[2]))

    # 1. garbage: a plausible length, then bytes that are no request header (api key -1).
    case_closed(b, "garbage bytes", struct.pack(">i", 64) + b"\xff" * 64)
    # 1b. garbage with no sane framing at all.
    case_closed(b, "random bytes", bytes((i * 73 + 41) & 0xFF for i in range(4096)))
    # 2. a frame length of 2^31 - 1: refused before anything is allocated for it.
    rss_before = rss_kib(b.pid)
    case_closed(b, "frame length 2^31-1", struct.pack(">i", 2**31 - 1) + b"\x00" * 64)
    rss_after = rss_kib(b.pid)
    if rss_before and rss_after and rss_after - rss_before < 256 * 1024:
        ok("frame length 2^31-1: no memory reserved for it (RSS +%d KiB)" % (rss_after - rss_before))
    elif rss_before and rss_after:
        bad("frame length 2^31-1: no memory reserved for it", "RSS grew %d KiB" % (rss_after - rss_before))
    # 2b. a negative frame length.
    case_closed(b, "frame length -1", struct.pack(">i", -1) + b"\x00" * 8)
    # 3. a truncated frame: 100 bytes announced, 30 sent, then the client's side shut.
    case_closed(b, "truncated frame", struct.pack(">i", 100) + b"\x00\x12\x00\x00" + b"\x00" * 26,
                half_close=True)
    # 3b. a frame too short to hold a request header.
    case_closed(b, "frame shorter than a header", struct.pack(">i", 3) + b"\x00\x03\x00")

    # 4. an unknown API key: Kafka closes the connection (there is no response schema for it).
    s = connect(b.host, b.port)
    corr = b.next_corr()
    s.sendall(request(9999, 0, corr, b""))
    try:
        r = read_response(s)
        if r is None:
            ok("unknown API key 9999: the connection is closed")
        else:
            (got,) = struct.unpack_from(">i", r, 0)
            if got == corr:
                ok("unknown API key 9999: answered with its correlation id")
            else:
                bad("unknown API key 9999", "answered with correlation %d" % got)
    except (ConnectionResetError, socket.timeout) as e:
        if isinstance(e, socket.timeout):
            bad("unknown API key 9999", "no answer and not closed within %.0f s" % TIMEOUT)
        else:
            ok("unknown API key 9999: the connection is closed")
    s.close()
    b.healthy("unknown API key")

    # 5. ApiVersions at a version the broker does not know: v0 answer, UNSUPPORTED_VERSION (35).
    s = connect(b.host, b.port)
    corr = b.next_corr()
    # A client newer than the broker sends its ApiVersions in the flexible encoding (header v2,
    # compact client software name and version, tagged fields); the broker reads the header and
    # answers v0 without reading the body (KIP-511).
    s.sendall(request(18, 99, corr, b"\x05ncat\x041.0\x00", header_v2=True))
    r = read_response(s)
    if r is None:
        bad("ApiVersions v99", "connection closed")
    else:
        got, err = struct.unpack_from(">ih", r, 0)
        (n,) = struct.unpack_from(">i", r, 6)
        keys = {struct.unpack_from(">hhh", r, 10 + 6 * i)[0] for i in range(n)} if 0 <= n < 1000 else set()
        if got == corr and err == 35 and 18 in keys and 0 in keys:
            ok("ApiVersions v99: a v0 answer with UNSUPPORTED_VERSION (35) and the API table")
        else:
            bad("ApiVersions v99", "correlation %d error %d keys %s" % (got, err, sorted(keys)[:8]))
        # The connection goes on: a proper ApiVersions v0 on it is answered.
        corr = b.next_corr()
        s.sendall(request(18, 0, corr, b""))
        r = read_response(s)
        if r is not None and struct.unpack_from(">ih", r, 0) == (corr, 0):
            ok("ApiVersions v99: the same connection then answers ApiVersions v0 with NONE")
        else:
            bad("ApiVersions v99: the same connection then answers ApiVersions v0", repr(r and r[:8]))
    s.close()

    # 5b. Metadata at an unsupported version: UNSUPPORTED_VERSION in the answer, or closed.
    s = connect(b.host, b.port)
    corr = b.next_corr()
    s.sendall(request(3, 99, corr, metadata_v1([])))
    try:
        r = read_response(s)
        if r is None:
            ok("Metadata v99: closed")
        elif struct.unpack_from(">i", r, 0)[0] == corr and b"\x00\x23" in r[4:]:
            ok("Metadata v99: answered UNSUPPORTED_VERSION (35)")
        else:
            bad("Metadata v99", "answer %r" % r[:16])
    except (ConnectionResetError, socket.timeout) as e:
        if isinstance(e, socket.timeout):
            bad("Metadata v99", "no answer and not closed")
        else:
            ok("Metadata v99: closed")
    s.close()
    b.healthy("unsupported version")

    # 6. inner array lengths that lie.
    lies = [
        ("Metadata with 1000000 topics in 20 bytes",
         request(3, 1, b.next_corr(), struct.pack(">i", 1000000) + string("a") * 6)),
        ("Metadata with a topic name longer than the frame",
         request(3, 1, b.next_corr(), struct.pack(">i", 1) + struct.pack(">h", 30000) + b"abc")),
        ("Produce with 2^31-1 topics",
         request(0, 3, b.next_corr(), string(None) + struct.pack(">hii", -1, 1000, 2**31 - 1))),
        ("Produce with a records length past the frame",
         request(0, 3, b.next_corr(), string(None) + struct.pack(">hi", -1, 1000) + struct.pack(">i", 1)
                 + string("lies") + struct.pack(">ii", 1, 0) + struct.pack(">i", 1 << 30) + b"\x00" * 40)),
        ("Produce with a negative partition count",
         request(0, 3, b.next_corr(), string(None) + struct.pack(">hi", -1, 1000) + struct.pack(">i", 1)
                 + string("lies") + struct.pack(">i", -5))),
    ]
    for desc, data in lies:
        s = connect(b.host, b.port)
        send_all(s, data)
        try:
            r = read_response(s)
            if r is None:
                ok(desc + ": closed")
            else:
                # An answer is fine only if it is an error answer; one of ours would have to say
                # so in a partition, which a lying array cannot produce: report what came back.
                bad(desc, "answered %r instead of closing" % r[:24])
        except ConnectionResetError:
            ok(desc + ": closed (reset)")
        except socket.timeout:
            bad(desc, "neither answered nor closed within %.0f s" % TIMEOUT)
        except ValueError as e:
            bad(desc, str(e))
        s.close()
        b.healthy(desc)
    topics = b.metadata(None)
    if "lies" not in topics:
        ok("no topic was created by the lying requests")
    else:
        bad("no topic was created by the lying requests", "topic 'lies' exists")

    # 6c. the transactional APIs at their flexible v3 and KIP-664's operator APIs (flexible
    #     from v0): lying compact counts and lengths, cut bodies: the connection closes.
    def uv(v):
        out = b""
        while v >= 0x80:
            out += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        return out + bytes([v])

    def cstr(t):
        return uv(len(t) + 1) + t.encode()

    flex_lies = [
        ("AddPartitionsToTxn v3 with 2^31-2 topics",
         request(24, 3, b.next_corr(), cstr("tx") + struct.pack(">qh", 7, 0) + uv(2**31 - 1) + b"\x00",
                 header_v2=True)),
        ("AddOffsetsToTxn v3 with a group id longer than the frame",
         request(25, 3, b.next_corr(), cstr("tx") + struct.pack(">qh", 7, 0) + uv(30000) + b"g\x00",
                 header_v2=True)),
        ("EndTxn v3 cut before its tagged fields",
         request(26, 3, b.next_corr(), cstr("tx") + struct.pack(">qh", 7, 0) + b"\x01", header_v2=True)),
        ("TxnOffsetCommit v3 with 1000000 partitions in a few bytes",
         request(28, 3, b.next_corr(), cstr("tx") + cstr("g") + struct.pack(">qhi", 7, 0, -1) + cstr("")
                 + b"\x00" + uv(2) + cstr("t") + uv(1000001) + b"\x00" * 8, header_v2=True)),
        ("TxnOffsetCommit v2 (not flexible) sent in v3's compact form",
         request(28, 2, b.next_corr(), cstr("tx") + cstr("g") + struct.pack(">qh", 7, 0) + uv(1) + b"\x00")),
        ("DescribeProducers v0 with 2^31-2 topics",
         request(61, 0, b.next_corr(), uv(2**31 - 1) + b"\x00", header_v2=True)),
        ("DescribeTransactions v0 with an id longer than the frame",
         request(65, 0, b.next_corr(), uv(2) + uv(5000) + b"tx\x00", header_v2=True)),
        ("ListTransactions v1 cut inside its duration filter",
         request(66, 1, b.next_corr(), uv(1) + uv(1) + b"\x00\x00\x00", header_v2=True)),
        ("ListTransactions v0 with 2^28 producer id filters",
         request(66, 0, b.next_corr(), uv(1) + uv(2**28) + struct.pack(">q", 1) + b"\x00", header_v2=True)),
    ]
    for desc, data in flex_lies:
        s = connect(b.host, b.port)
        send_all(s, data)
        try:
            r = read_response(s)
            if r is None:
                ok(desc + ": closed")
            else:
                bad(desc, "answered %r instead of closing" % r[:24])
        except ConnectionResetError:
            ok(desc + ": closed (reset)")
        except socket.timeout:
            bad(desc, "neither answered nor closed within %.0f s" % TIMEOUT)
        except ValueError as e:
            bad(desc, str(e))
        s.close()
        b.healthy(desc)

    # 7. a produce whose batch CRC is wrong: CORRUPT_MESSAGE (2), nothing appended; the same
    #    connection then appends a good batch at the offset the bad one would have had.
    s = connect(b.host, b.port)
    try:
        base0 = produce(s, b, "crc", 0, record_batch([b"good-0"]), b.next_corr())
        res = produce(s, b, "crc", 0, record_batch([b"bad-1", b"bad-2"], corrupt_crc=True), b.next_corr())
        if res is not None and res[0] == 2:
            ok("produce with a corrupt batch CRC: CORRUPT_MESSAGE (2)")
        else:
            bad("produce with a corrupt batch CRC: CORRUPT_MESSAGE (2)", "answer %r" % (res,))
        base2 = produce(s, b, "crc", 0, record_batch([b"good-3"]), b.next_corr())
        if base0 is not None and base2 is not None and base0[0] == 0 and base2 == (0, base0[1] + 1):
            ok("after the corrupt batch the same connection appends at the next offset (nothing was appended)")
        else:
            bad("after the corrupt batch the same connection appends at the next offset", "%r %r" % (base0, base2))
    except (ValueError, ConnectionResetError, socket.timeout) as e:
        bad("produce with a corrupt batch CRC", repr(e))
    s.close()
    b.healthy("corrupt CRC")

    # 7b. every advertised (API, version) of the broker's own table (ApiVersions v0), with bodies
    #     no version of any API can parse whole: cut (3 bytes), a count or length that lies
    #     (2^31-1, twice) and one that is negative (-2), each behind a request header v1 and v2
    #     (flexible versions take v2). Each must close the connection or be answered with its
    #     correlation id (an error) — never crash or hang the broker; the broker still answers
    #     a fresh connection after each API. tests/test_kafka_every_version.c does the same with
    #     well-formed bodies cut and lying at every field.
    table = api_table(b)
    if not table:
        bad("the version table", "ApiVersions v0 gave no table")
    bodies = [b"\xff\xff\xff", b"\x7f\xff\xff\xff" * 2, b"\xff\xff\xff\xfe" * 3]
    pairs = closed = answered = 0
    for key, lo, hi in table:
        problems = []
        for v in range(lo, hi + 1):
            for body in bodies:
                for hv2 in (False, True):
                    corr = b.next_corr()
                    s = connect(b.host, b.port)
                    send_all(s, request(key, v, corr, body, header_v2=hv2))
                    try:
                        r = read_response(s)
                        if r is None:
                            closed += 1
                        elif struct.unpack_from(">i", r, 0)[0] == corr:
                            answered += 1
                        else:
                            problems.append("v%d: answered with another correlation id" % v)
                    except ConnectionResetError:
                        closed += 1
                    except socket.timeout:
                        problems.append("v%d: neither answered nor closed in %.0f s" % (v, TIMEOUT))
                    except ValueError as e:
                        problems.append("v%d: %s" % (v, e))
                    s.close()
            pairs += 1
        if problems:
            bad("API %d v%d-%d with unparseable bodies" % (key, lo, hi), "; ".join(problems[:3]))
        else:
            ok("API %d v%d-%d with unparseable bodies: closed or answered, never hung" % (key, lo, hi))
        if not b.alive():
            bad("API %d: the broker is still running" % key, "process %d is gone" % b.pid)
            break
    b.healthy("every advertised version with unparseable bodies (%d pairs, %d closed, %d answered)"
              % (pairs, closed, answered))

    # 8. many bad connections at once, then the good ones still work (no leak of slots).
    socks = []
    for i in range(50):
        s = connect(b.host, b.port)
        send_all(s, struct.pack(">i", 2**31 - 1))
        socks.append(s)
    for s in socks:
        s.close()
    b.healthy("50 oversized frames at once")

    print("bad_input: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def api_table(b):
    """[(api key, min version, max version)] from ApiVersions v0 on a fresh connection."""
    s = connect(b.host, b.port)
    corr = b.next_corr()
    s.sendall(request(18, 0, corr, b""))
    r = read_response(s)
    s.close()
    if r is None:
        return []
    got, err, n = struct.unpack_from(">ihi", r, 0)
    if got != corr or err != 0 or not 0 < n < 1000:
        return []
    return [struct.unpack_from(">hhh", r, 10 + 6 * i) for i in range(n)]


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
