#!/usr/bin/python3
"""proxy.py — capture proxy for the golden-byte tests (tests/kafka/golden/).

Listens on 127.0.0.1:LISTEN and forwards every connection to the mock broker at
127.0.0.1:UPSTREAM. Each request frame a client sends is written, without its 4-byte size, to
OUTDIR/<seq>_<api>_v<version>.bin (api key and version read from the frame's header). In
responses, the mock's own address (host "127.0.0.1", port UPSTREAM, as Metadata and
FindCoordinator carry it) is rewritten to the proxy's port — same length — so the client keeps
talking through the proxy. A traffic source only: nothing here judges the bytes.

usage: proxy.py LISTEN UPSTREAM OUTDIR   (prints "ready" once listening)
"""
import os
import socket
import struct
import sys
import threading

listen_port, upstream_port, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
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


def client_to_server(c, s):
    try:
        for f in frames(c):
            key, ver = struct.unpack(">hh", f[:4])
            with seq_lock:
                seq[0] += 1
                name = "%03d_k%d_v%d.bin" % (seq[0], key, ver)
            with open(os.path.join(outdir, name), "wb") as out:
                out.write(f)
            s.sendall(struct.pack(">i", len(f)) + f)
    except OSError:
        pass
    finally:
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def server_to_client(s, c):
    try:
        for f in frames(s):
            f = f.replace(old_addr, new_addr)
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
    threading.Thread(target=client_to_server, args=(c, s), daemon=True).start()
    threading.Thread(target=server_to_client, args=(s, c), daemon=True).start()
