#!/usr/bin/python3
"""serve_bounds.py — raw-socket checks of `ringtail serve`'s network loop (tests/cli_kafka_serve.sh
drives it): framing bounds, pipelining order, idle close and the connection bound, each checked
from outside while a second, healthy connection keeps getting answers. Speaks just enough of the
protocol (ApiVersions v0) by hand. usage: serve_bounds.py PORT CHECK [ARGS]; exit 0 = passed.
"""
import socket
import struct
import sys
import time

from kwire import HOST, dial, read_exact


def connect(port):
    return dial(port, 10)


def api_versions(corr, version=0):
    client = b"serve_bounds"
    body = struct.pack(">hhih", 18, version, corr, len(client)) + client
    return struct.pack(">i", len(body)) + body


def read_response(s):
    size = struct.unpack(">i", read_exact(s, 4))[0]
    body = read_exact(s, size)
    return struct.unpack(">i", body[:4])[0], body


def healthy(port):
    """A fresh connection gets an ApiVersions answer with error NONE and a table."""
    s = connect(port)
    s.sendall(api_versions(4242))
    corr, body = read_response(s)
    err = struct.unpack(">h", body[4:6])[0]
    s.close()
    assert corr == 4242 and err == 0, (corr, err)


def closed_by_server(s, within_s):
    """True when the server closes s (recv returns b'' or a reset) within within_s."""
    s.settimeout(within_s)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def check_frame(port, size_field, send_body_bytes=0):
    s = connect(port)
    s.sendall(struct.pack(">I", size_field) + b"\0" * send_body_bytes)
    assert closed_by_server(s, 5), "connection with a bad frame size was not closed"
    healthy(port)  # the others are untouched


def check_garbage(port):
    s = connect(port)
    s.sendall(b"\x00\x00\x00\x10" + b"\xff" * 16)  # 16 bytes: api key -1
    assert closed_by_server(s, 5), "garbage did not close the connection"
    healthy(port)


def check_unknown_key(port):
    s = connect(port)
    client = b"x"
    body = struct.pack(">hhih", 999, 0, 7, len(client)) + client
    s.sendall(struct.pack(">i", len(body)) + body)
    assert closed_by_server(s, 5), "an unknown API key did not close the connection"
    healthy(port)


def check_truncated(port):
    """A frame cut short, then the client goes quiet: the server waits (it cannot know) and the
    rest of the broker is unaffected; when the client closes, nothing was answered."""
    s = connect(port)
    frame = api_versions(9)
    s.sendall(frame[:-3])
    healthy(port)
    s.settimeout(0.5)
    try:
        data = s.recv(100)
        assert data == b"", "an incomplete frame got an answer"
    except socket.timeout:
        pass
    s.close()
    healthy(port)


def check_pipelining(port, n):
    """n requests in one write are answered in request order."""
    s = connect(port)
    s.sendall(b"".join(api_versions(100 + i) for i in range(n)))
    got = [read_response(s)[0] for _ in range(n)]
    s.close()
    assert got == [100 + i for i in range(n)], got


def check_idle(port, idle_ms):
    s = connect(port)
    start = time.monotonic()
    assert closed_by_server(s, idle_ms / 1000.0 + 5), "idle connection not closed"
    took = time.monotonic() - start
    assert took >= idle_ms / 1000.0 * 0.9, "closed after %.2fs, before the idle limit" % took
    # A connection that keeps talking is not closed.
    s = connect(port)
    for i in range(int(idle_ms / 1000.0 / 0.25) + 4):
        s.sendall(api_versions(i))
        read_response(s)
        time.sleep(0.25)
    s.close()


def check_connections_max(port, n):
    held = [connect(port) for _ in range(n)]
    for h in held:  # each of them is served
        h.sendall(api_versions(1))
        read_response(h)
    extra = connect(port)
    assert closed_by_server(extra, 5), "connection beyond --connections-max was kept"
    for h in held:  # the held ones still are
        h.sendall(api_versions(2))
        read_response(h)
    for h in held:
        h.close()
    time.sleep(0.3)
    healthy(port)  # room again


def check_produce_batches(port, n):
    """A produce whose record set is n tiny batches (lengths that tile it) beyond the per-request
    bound closes the connection; the broker keeps serving."""
    # 61 bytes: a batch header's length and magic 2 only (magic 0/1 would make the record set
    # a message set v0/v1, converted as one batch: handle_produce.c KPC1)
    batch = struct.pack(">qii", 0, 49, 0) + b"\2" + b"\0" * 44
    client = b"x"
    topic = b"bounds"
    body = struct.pack(">hhih", 0, 3, 11, len(client)) + client
    body += struct.pack(">hhi", -1, 1, 1000)  # transactional id null, acks 1, timeout
    body += struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">ii", 1, 0)
    records = batch * n
    body += struct.pack(">i", len(records)) + records
    s = connect(port)
    s.sendall(struct.pack(">i", len(body)) + body)
    assert closed_by_server(s, 10), "a produce of %d batches was not refused" % n
    healthy(port)


def produce_frame(corr, topic, batch_bytes):
    """A Produce v3 frame carrying one 'batch' of batch_bytes bytes whose length field tiles the
    record set (the content fails the batch checks, so it is answered with an error code)."""
    client = b"x"
    body = struct.pack(">hhih", 0, 3, corr, len(client)) + client
    body += struct.pack(">hhi", -1, 1, 1000)
    body += struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">ii", 1, 0)
    batch = struct.pack(">qi", 0, batch_bytes - 12) + b"\0" * (batch_bytes - 12)
    body += struct.pack(">i", len(batch)) + batch
    return struct.pack(">i", len(body)) + body


def check_queued(port, big):
    """With --queued-max-request-bytes below two big frames: while A holds the bound with a
    frame it has not finished sending, B's complete frame is not taken (no answer); once A's
    frame is whole and answered, B's is read and answered."""
    healthy(port)  # creates nothing, but proves the broker is up
    fa = produce_frame(21, b"queued", big)
    fb = produce_frame(22, b"queued", big)
    a = connect(port)
    a.sendall(fa[:-1000])
    time.sleep(0.3)
    b = connect(port)
    b.sendall(fb)
    b.settimeout(0.3)
    # A keeps trickling its frame (so it is not closed as idle) but does not finish it.
    for i in range(5):
        try:
            data = b.recv(100)
            raise AssertionError("B was answered while A held the bound: %r" % data[:16])
        except socket.timeout:
            pass
        a.sendall(fa[-1000 + i * 100:-1000 + (i + 1) * 100])
    a.sendall(fa[-500:])
    corr, _ = read_response(a)
    assert corr == 21, corr
    b.settimeout(10)
    corr, _ = read_response(b)
    assert corr == 22, corr
    a.close()
    b.close()
    healthy(port)


def fetch_frame(corr, topic, max_bytes=0x7FFFFFFF):
    """A Fetch v4 frame for partition 0 of topic from offset 0, max_bytes and partition_max_bytes
    both max_bytes (2^31-1: "all you have"), no wait."""
    client = b"serve_bounds"
    body = struct.pack(">hhih", 1, 4, corr, len(client)) + client
    body += struct.pack(">iiiib", -1, 0, 1, max_bytes, 0)  # replica, max_wait, min_bytes, max, iso
    body += struct.pack(">ih", 1, len(topic)) + topic
    body += struct.pack(">iiqi", 1, 0, 0, max_bytes)
    return struct.pack(">i", len(body)) + body


def fetch_records(body):
    """(error, high watermark, records) of a Fetch v4 response to fetch_frame."""
    off = 4 + 4  # correlation id, throttle_time_ms
    assert struct.unpack(">i", body[off:off + 4])[0] == 1
    off += 4
    tl = struct.unpack(">h", body[off:off + 2])[0]
    off += 2 + tl
    assert struct.unpack(">i", body[off:off + 4])[0] == 1
    off += 4
    _, err, hw, _lso, aborted = struct.unpack(">ihqqi", body[off:off + 26])
    off += 26 + (aborted * 16 if aborted > 0 else 0)
    n = struct.unpack(">i", body[off:off + 4])[0]
    off += 4
    records = body[off:off + max(n, 0)]
    assert len(records) == max(n, 0) and off + max(n, 0) == len(body), "trailing bytes"
    return err, hw, records


def count_records(records):
    """Walks the record batches: returns the number of records; offsets must be contiguous."""
    off, want, total = 0, 0, 0
    while off < len(records):
        base, length = struct.unpack(">qi", records[off:off + 12])
        count = struct.unpack(">i", records[off + 57:off + 61])[0]
        assert base == want, "batch at offset %d, expected %d" % (base, want)
        want += count
        total += count
        off += 12 + length
    assert off == len(records), "batches do not tile the records"
    return total


def vm_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


def check_response_memory(port, pid, topic, records_want, conns, fetches, queued_max, threads):
    """F1 (issue 21): conns connections each pipeline `fetches` Fetch requests with max_bytes
    2^31-1 for everything in topic (R bytes per answer) and never read. The broker holds at most
    --queued-max-response-bytes G of answers in its buffers, passed by at most one answer per
    loop thread T (net.c KN7), and copies records only through a 128 KiB buffer per connection
    (KN8): its VmRSS may grow by at most G + T * R + conns * 128 KiB + 32 MiB (receive buffers,
    slots, allocator slack). Without the bounds it grows by conns * fetches * R. Then the clients
    read (concurrently, as clients read their sockets): each gets all its answers, in order,
    each with every record, byte for byte as a lone fetch got them."""
    import threading
    topic = topic.encode()
    ref = connect(port)
    ref.sendall(fetch_frame(1, topic))
    corr, body = read_response(ref)
    ref.close()
    err, hw, want = fetch_records(body)
    assert corr == 1 and err == 0, (corr, err)
    assert hw == records_want and count_records(want) == records_want, (hw, records_want)
    r = len(want)
    bound = queued_max + threads * r + conns * (128 << 10) + (32 << 20)
    unbounded = conns * fetches * r
    assert unbounded > 2 * bound, "the test cannot tell: %d bytes unbounded, bound %d" % (
        unbounded, bound)
    time.sleep(0.5)
    base = vm_rss(pid)
    socks = []
    for i in range(conns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # before connect: a small window
        s.settimeout(60)
        s.connect((HOST, port))
        s.sendall(b"".join(fetch_frame(1000 * i + k, topic) for k in range(fetches)))
        socks.append(s)
    peak = base
    end = time.monotonic() + 3
    while time.monotonic() < end:
        peak = max(peak, vm_rss(pid))
        time.sleep(0.05)
    grew = peak - base
    print("VmRSS %d -> peak %d: grew %d bytes (bound %d; %d answers of %d bytes unbounded: %d)" %
          (base, peak, grew, bound, conns * fetches, r, unbounded))
    assert grew <= bound, "the broker grew by %d bytes, above the bound %d" % (grew, bound)
    problems = []

    def reader(i, s):
        try:
            for k in range(fetches):
                corr, body = read_response(s)
                assert corr == 1000 * i + k, (corr, 1000 * i + k)
                err, hw, got = fetch_records(body)
                assert err == 0 and hw == records_want, (err, hw)
                assert got == want, "connection %d answer %d differs from the reference" % (i, k)
        except Exception as e:  # reported by the main thread
            problems.append("connection %d: %r" % (i, e))
        s.close()

    readers = [threading.Thread(target=reader, args=(i, s)) for i, s in enumerate(socks)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    assert not problems, problems
    healthy(port)


def main():
    port = int(sys.argv[1])
    check = sys.argv[2]
    args = sys.argv[3:]
    if check == "healthy":
        healthy(port)
    elif check == "frame-max":
        check_frame(port, 0x7FFFFFFF)
    elif check == "frame-negative":
        check_frame(port, 0x80000000)
    elif check == "frame-over":
        check_frame(port, int(args[0]) + 1, 1000)
    elif check == "garbage":
        check_garbage(port)
    elif check == "unknown-key":
        check_unknown_key(port)
    elif check == "truncated":
        check_truncated(port)
    elif check == "queued":
        check_queued(port, int(args[0]))
    elif check == "produce-batches":
        check_produce_batches(port, int(args[0]))
    elif check == "pipelining":
        check_pipelining(port, int(args[0]))
    elif check == "idle":
        check_idle(port, int(args[0]))
    elif check == "response-memory":
        check_response_memory(port, int(args[0]), args[1], int(args[2]), int(args[3]),
                              int(args[4]), int(args[5]), int(args[6]))
    elif check == "connections-max":
        check_connections_max(port, int(args[0]))
    else:
        print("unknown check " + check)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
