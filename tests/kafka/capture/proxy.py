#!/usr/bin/python3
"""proxy.py — capture proxy for the golden-byte tests (tests/kafka/golden/).

Listens on 127.0.0.1:LISTEN and forwards every connection to the mock broker at
127.0.0.1:UPSTREAM. Each request frame a client sends is written, without its 4-byte size, to
OUTDIR/<seq>_<api>_v<version>.bin (api key and version read from the frame's header). In
responses, the mock's own address (host "127.0.0.1", port UPSTREAM, as Metadata and
FindCoordinator carry it) is rewritten to the proxy's port — same length — so the client keeps
talking through the proxy. A traffic source only: nothing here judges the bytes.

ApiVersions is answered by the proxy itself from TABLE (mock_cluster.c's "api KEY MIN MAX"
lines: ringtail's table), never forwarded: the client then uses the versions ringtail offers.
A version past 3 is answered at v0 with UNSUPPORTED_VERSION, as Kafka (and ringtail) do.

The 2.0.2 mock has Metadata 0-2 only and OffsetFetch 0-5: Metadata v3/v4 requests go to it as
v2 (v4's trailing allow_auto_topic_creation dropped) and its v2 answers come back with the v3+
throttle_time_ms in front (the only difference), and with controller_id set to the first broker
(the mock answers one that is not in its broker list; admin requests and kafkajs's
InitProducerId go to the controller); OffsetFetch is offered up to v5.

usage: proxy.py LISTEN UPSTREAM OUTDIR TABLE   (prints "ready" once listening)
"""
import os
import socket
import struct
import sys
import threading

listen_port, upstream_port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
MOCK_MAX = {9: 5}
table = [tuple(int(x) for x in l.split()[1:4]) for l in open(sys.argv[4]) if l.startswith("api ")]
os.makedirs(outdir, exist_ok=True)
seq_lock = threading.Lock()
seq = [0]
host = b"127.0.0.1"
old_addr = struct.pack(">h", len(host)) + host + struct.pack(">i", upstream_port)
new_addr = struct.pack(">h", len(host)) + host + struct.pack(">i", listen_port)


def frames(sock):
    buf = b""
    while True:
        while len(buf) >= 4:
            (n,) = struct.unpack(">i", buf[:4])
            if len(buf) < 4 + n:
                break
            yield buf[4:4 + n]
            buf = buf[4 + n:]
        data = sock.recv(65536)
        if not data:
            return
        buf += data


table = [(k, lo, min(hi, MOCK_MAX.get(k, hi))) for k, lo, hi in table]


def uvarint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7f) | 0x80])
        n >>= 7
    return out + bytes([n])


def api_versions_answer(corr, version):
    err = 0
    if version > 3:
        version, err = 0, 35
    body = struct.pack(">h", err)
    if version >= 3:
        body += uvarint(len(table) + 1)
        body += b"".join(struct.pack(">hhh", *t) + b"\0" for t in table)
        body += struct.pack(">i", 0) + b"\0"
    else:
        body += struct.pack(">i", len(table)) + b"".join(struct.pack(">hhh", *t) for t in table)
        if version >= 1:
            body += struct.pack(">i", 0)
    f = struct.pack(">i", corr) + body  # response header v0 at every version
    return struct.pack(">i", len(f)) + f


def fix_controller(body):
    """body: a Metadata v2 response body. Returns it with controller_id = first broker's id."""
    def nstr(p):
        (n,) = struct.unpack(">h", body[p:p + 2])
        return p + 2 + max(n, 0)
    (count,) = struct.unpack(">i", body[:4])
    p, first = 4, -1
    for i in range(count):
        (node,) = struct.unpack(">i", body[p:p + 4])
        first = node if i == 0 else first
        p = nstr(p + 4) + 4
        p = nstr(p)
    p = nstr(p)  # cluster_id
    return body[:p] + struct.pack(">i", first) + body[p + 4:]


def client_to_server(c, s, lock, translated):
    try:
        for f in frames(c):
            key, ver = struct.unpack(">hh", f[:4])
            fwd = f
            with seq_lock:
                seq[0] += 1
                name = "%03d_k%d_v%d.bin" % (seq[0], key, ver)
            with open(os.path.join(outdir, name), "wb") as out:
                out.write(f)
            if key == 18:
                (corr,) = struct.unpack(">i", f[4:8])
                with lock:
                    c.sendall(api_versions_answer(corr, ver))
                continue
            if key == 3 and ver in (3, 4):
                (corr,) = struct.unpack(">i", f[4:8])
                translated.add(corr)
                fwd = f[:2] + struct.pack(">h", 2) + f[4:(len(f) - 1 if ver == 4 else len(f))]
            s.sendall(struct.pack(">i", len(fwd)) + fwd)
    except OSError:
        pass
    finally:
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def server_to_client(s, c, lock, translated):
    try:
        for f in frames(s):
            f = f.replace(old_addr, new_addr)
            (corr,) = struct.unpack(">i", f[:4])
            if corr in translated:
                translated.discard(corr)
                f = f[:4] + struct.pack(">i", 0) + fix_controller(f[4:])
            with lock:
                c.sendall(struct.pack(">i", len(f)) + f)
    except OSError:
        pass
    finally:
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port))
ls.listen(64)
print("ready", flush=True)
while True:
    c, _ = ls.accept()
    s = socket.create_connection(("127.0.0.1", upstream_port))
    lock = threading.Lock()
    translated = set()
    threading.Thread(target=client_to_server, args=(c, s, lock, translated), daemon=True).start()
    threading.Thread(target=server_to_client, args=(s, c, lock, translated), daemon=True).start()
