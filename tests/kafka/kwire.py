"""kwire.py — the little Kafka wire client the byte-level python tests share (produce_wire.py,
txn_wire.py, group_wire.py, serve_bounds.py, serve_disk.py, fetch_offsets.py, bad_input.py):
the "ok/FAIL" check line, big-endian encoders, a reader of answers, CRC-32C and zigzag varints for
hand-built record batches, a connection that frames requests (request header v1, or v2 with its
empty tags) and reads answers, and the Metadata v1 answer's topic list. Standard library only.

It owns the framing and the primitives; it never decides what an answer must be: each test
asserts that itself. Imported by the scripts beside it (python puts a script's own folder on
sys.path).
"""
import socket
import struct

HOST = "127.0.0.1"

# ---- checks ------------------------------------------------------------------------------------

failed = 0  # how many check() calls failed


def check(cond, desc):
    """Prints "ok   - desc" or "FAIL - desc" (flushed, so it interleaves with the broker's
    output in order) and counts a failure."""
    global failed
    print(("ok   - " if cond else "FAIL - ") + desc, flush=True)
    if not cond:
        failed += 1


# ---- encoding ----------------------------------------------------------------------------------


def s16(v):
    return struct.pack(">h", v)


def s32(v):
    return struct.pack(">i", v)


def s64(v):
    return struct.pack(">q", v)


def kstr(s):
    """STRING / NULLABLE_STRING: a 16-bit length, then the bytes (None: length -1)."""
    if s is None:
        return s16(-1)
    b = s.encode() if isinstance(s, str) else s
    return s16(len(b)) + b


def kbytes(b):
    return s32(len(b)) + b


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), the record batch's checksum."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def zigzag(v):
    """A signed varint (zigzag), as record fields are written."""
    v = (v << 1) ^ (v >> 63)
    out = b""
    while True:
        if v & ~0x7F:
            out += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        else:
            return out + bytes([v])


# ---- decoding ----------------------------------------------------------------------------------


class R:
    """Reads an answer's fields in order."""

    def __init__(self, b):
        self.b, self.i = b, 0

    def i16(self):
        v = struct.unpack_from(">h", self.b, self.i)[0]
        self.i += 2
        return v

    def i32(self):
        v = struct.unpack_from(">i", self.b, self.i)[0]
        self.i += 4
        return v

    def str(self):
        n = self.i16()
        if n < 0:
            return None
        v = self.b[self.i:self.i + n].decode()
        self.i += n
        return v

    def bytes(self):
        n = self.i32()
        if n < 0:
            return None
        v = self.b[self.i:self.i + n]
        self.i += n
        return v


def metadata_v1_topics(body):
    """The topics of a Metadata v1 answer (body from the correlation id on):
    [(error_code, name bytes, partition count)]."""
    at = 4  # correlation id
    (nb,) = struct.unpack_from(">i", body, at)
    at += 4
    for _ in range(nb):
        at += 4  # node id
        (hl,) = struct.unpack_from(">h", body, at)
        at += 2 + hl + 4  # host, port
        (rl,) = struct.unpack_from(">h", body, at)
        at += 2 + max(rl, 0)  # rack
    at += 4  # controller id
    (nt,) = struct.unpack_from(">i", body, at)
    at += 4
    out = []
    for _ in range(nt):
        (err,) = struct.unpack_from(">h", body, at)
        at += 2
        (nl,) = struct.unpack_from(">h", body, at)
        name = body[at + 2:at + 2 + nl]
        at += 2 + nl + 1  # is_internal
        (np_,) = struct.unpack_from(">i", body, at)
        at += 4
        for _ in range(np_):
            at += 2 + 4 + 4  # error, index, leader
            for _arr in range(2):  # replicas, isr
                (k,) = struct.unpack_from(">i", body, at)
                at += 4 + 4 * max(k, 0)
        out.append((err, name, np_))
    return out


# ---- the socket --------------------------------------------------------------------------------


def dial(port, timeout):
    """A TCP connection to HOST:port (TCP_NODELAY) with that timeout, in seconds."""
    s = socket.create_connection((HOST, int(port)), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_exact(s, n):
    """n bytes from s; EOFError when the peer closes first."""
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return bytes(out)


class Conn:
    """A connection to a broker at "HOST:PORT" that numbers its requests. An answer is the frame's
    bytes past the correlation id, passed through `answer` (bytes by default, R for a reader);
    None when the connection closed, was reset or timed out instead."""

    def __init__(self, addr, client_id, timeout=10, answer=bytes):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        self.corr = 0
        self.client_id = client_id
        self.answer = answer

    def send(self, key, ver, body, header_v2=False):
        """Sends one request; returns its correlation id."""
        self.corr += 1
        frame = s16(key) + s16(ver) + s32(self.corr) + kstr(self.client_id)
        if header_v2:
            frame += b"\x00"  # the header's empty tagged fields
        frame += body
        self.s.sendall(s32(len(frame)) + frame)
        return self.corr

    def recv(self):
        """(correlation id, answer) of the next frame, or None when the connection closed."""
        n = self._read(4)
        if n is None:
            return None
        data = self._read(struct.unpack(">i", n)[0])
        if data is None:
            return None
        return struct.unpack(">i", data[:4])[0], self.answer(data[4:])

    def call(self, key, ver, body):
        """send then recv: the answer, or None."""
        self.send(key, ver, body)
        got = self.recv()
        return got[1] if got else None

    def _read(self, n):
        out = b""
        while len(out) < n:
            try:
                c = self.s.recv(n - len(out))
            except (ConnectionError, socket.timeout):
                return None
            if not c:
                return None
            out += c
        return out
