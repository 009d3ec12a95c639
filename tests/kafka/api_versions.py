#!/usr/bin/python3
"""api_versions.py HOST PORT — asks a running broker for ApiVersions v0 and prints what it
advertises, one "KEY MIN MAX" line per API, sorted by key (tests/cli_readme.sh compares it with
README's table). Exit 1 when the broker does not answer or answers an error."""
import socket
import struct
import sys


def main(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    client = b"rt-api-versions"
    payload = struct.pack(">hhih", 18, 0, 7, len(client)) + client
    s.sendall(struct.pack(">i", len(payload)) + payload)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
        chunk = s.recv(65536)
        if not chunk:
            return 1
        buf += chunk
    corr, err, n = struct.unpack_from(">ihi", buf, 4)
    if corr != 7 or err != 0:
        return 1
    rows = sorted(struct.unpack_from(">hhh", buf, 14 + 6 * i) for i in range(n))
    for key, lo, hi in rows:
        print("%d %d %d" % (key, lo, hi))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
