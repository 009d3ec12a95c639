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

HOST = "127.0.0.1"


def connect(port):
    s = socket.create_connection((HOST, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def api_versions(corr, version=0):
    client = b"serve_bounds"
    body = struct.pack(">hhih", 18, version, corr, len(client)) + client
    return struct.pack(">i", len(body)) + body


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return out


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
    elif check == "connections-max":
        check_connections_max(port, int(args[0]))
    else:
        print("unknown check " + check)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
