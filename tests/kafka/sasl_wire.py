#!/usr/bin/python3
"""sasl_wire.py — SASL at the byte level against `ringtail serve`, for tests/cli_kafka_sasl.sh
(what no real client sends: a request before authentication, SaslHandshake v0's raw tokens,
truncated and oversized tokens, re-authentication under another name). Each check prints "ok" or
"FAIL" (kwire.check); exit 1 on any failure.

usage:
  sasl_wire.py main BROKER USER PASSWORD DELAY_MS   a server with PLAIN and both SCRAMs
  sasl_wire.py reauth BROKER USER PASSWORD OTHER OTHER_PASSWORD REAUTH_MS
                                                    a server with PLAIN and SCRAM-SHA-512 only,
                                                    --connections-max-reauth-ms REAUTH_MS
  sasl_wire.py alter BROKER USER PASSWORD NEWUSER NEWPASSWORD
                                                    AlterUserScramCredentials (as the AdminClient
                                                    sends it: a salted password) then
                                                    DescribeUserScramCredentials
"""
import hashlib
import os
import struct
import sys
import time

import kwire
from kwire import Conn, check, kbytes, kstr, s16, s32

API_VERSIONS, METADATA, HANDSHAKE, AUTHENTICATE = 18, 3, 17, 36
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51


def conn(broker):
    return Conn(broker, "sasl-wire", timeout=10, answer=kwire.R)


def handshake(c, mech, ver=1):
    r = c.call(HANDSHAKE, ver, kstr(mech))
    if r is None:
        return None, []
    err = r.i16()
    return err, [r.str() for _ in range(r.i32())]


def authenticate(c, token, ver=1):
    """(error, message, auth bytes, session lifetime or None); None when closed."""
    r = c.call(AUTHENTICATE, ver, kbytes(token))
    if r is None:
        return None
    err, msg, data = r.i16(), r.str(), r.bytes()
    life = struct.unpack_from(">q", r.b, r.i)[0] if ver >= 1 else None
    return err, msg, data, life


def plain(user, pw):
    return b"\0" + user.encode() + b"\0" + pw.encode()


def metadata_ok(c):
    """True when a Metadata v1 request is answered; False when the connection closed."""
    return c.call(METADATA, 1, s32(-1)) is not None


def closed(c):
    """True when the broker closed the connection (reading finds EOF)."""
    c.s.settimeout(5)
    try:
        return c.s.recv(1) == b""
    except (ConnectionError, OSError):
        return True


def main(broker, user, pw, delay_ms):
    c = conn(broker)
    check(c.call(API_VERSIONS, 0, b"") is not None, "ApiVersions is answered before authentication")
    check(not metadata_ok(c), "Metadata before authentication closes the connection")

    c = conn(broker)
    err, mechs = handshake(c, "GSSAPI")
    check(err == 33 and mechs == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
          "SaslHandshake GSSAPI: UNSUPPORTED_SASL_MECHANISM (33) with the enabled list (%s %s)" %
          (err, mechs))
    check(not metadata_ok(c), "... and the connection is closed at its next request")

    c = conn(broker)
    got = authenticate(c, plain(user, pw))
    check(got is not None and got[0] == 34,
          "SaslAuthenticate without SaslHandshake: ILLEGAL_SASL_STATE (34)")

    c = conn(broker)
    handshake(c, "PLAIN")
    t0 = time.monotonic()
    got = authenticate(c, plain(user, pw + "x"))
    waited = (time.monotonic() - t0) * 1000
    check(got is not None and got[0] == 58, "PLAIN, wrong password: SASL_AUTHENTICATION_FAILED (58)")
    check(waited >= delay_ms * 0.9,
          "... answered after the failure delay (%d ms, at least %d)" % (waited, delay_ms))
    check(not metadata_ok(c), "... and a request after it closes the connection")

    c = conn(broker)
    handshake(c, "PLAIN")
    got = authenticate(c, plain("nobody", pw))
    check(got is not None and got[0] == 58, "PLAIN, unknown user: 58")

    c = conn(broker)
    handshake(c, "SCRAM-SHA-512")
    got = authenticate(c, b"n,,n=nobody,r=abcdefgh")
    check(got is not None and got[0] == 58, "SCRAM-SHA-512, unknown user: 58")

    c = conn(broker)
    handshake(c, "SCRAM-SHA-256")
    got = authenticate(c, b"\xff\x00garbage,,=")
    check(got is not None and got[0] == 58, "SCRAM-SHA-256, a garbage client-first: 58")

    c = conn(broker)
    handshake(c, "PLAIN")
    got = authenticate(c, plain(user, "p" * 5000))
    check(got is not None and got[0] == 58, "PLAIN, an oversized (5 KB) token: 58")

    c = conn(broker)
    handshake(c, "PLAIN")
    c.send(AUTHENTICATE, 1, s32(100) + b"abc")  # the token claims 100 bytes, 3 follow
    check(c.recv() is None, "SaslAuthenticate with a truncated token closes the connection")

    c = conn(broker)
    handshake(c, "PLAIN")
    got = authenticate(c, plain(user, pw))
    check(got is not None and got[0] == 0 and got[3] == 0,
          "PLAIN, right password: answered 0, session lifetime 0 (no re-authentication)")
    check(metadata_ok(c), "... and Metadata is answered after it")

    # SaslHandshake v0: raw tokens, no Kafka header (KSA2)
    c = conn(broker)
    err, _ = handshake(c, "PLAIN", ver=0)
    check(err == 0, "SaslHandshake v0 PLAIN: answered 0")
    tok = plain(user, pw)
    c.s.sendall(s32(len(tok)) + tok)
    n = c._read(4)
    check(n is not None and struct.unpack(">i", n)[0] == 0,
          "v0 raw PLAIN token: answered by an empty raw frame")
    check(metadata_ok(c), "... and Metadata is answered after it")
    c = conn(broker)
    handshake(c, "PLAIN", ver=0)
    tok = plain(user, pw + "x")
    c.s.sendall(s32(len(tok)) + tok)
    check(closed(c), "v0 raw PLAIN token, wrong password: the connection is closed")


def reauth(broker, user, pw, other, other_pw, reauth_ms):
    c = conn(broker)
    err, mechs = handshake(c, "SCRAM-SHA-256")
    check(err == 33 and mechs == ["PLAIN", "SCRAM-SHA-512"],
          "a mechanism not enabled: 33, listing PLAIN and SCRAM-SHA-512 (%s)" % mechs)

    c = conn(broker)
    handshake(c, "PLAIN")
    got = authenticate(c, plain(user, pw))
    check(got is not None and got[0] == 0 and got[3] == reauth_ms,
          "SaslAuthenticate v1: session_lifetime_ms is --connections-max-reauth-ms (%s)" %
          (got and got[3]))
    check(metadata_ok(c), "Metadata within the session's lifetime is answered")
    handshake(c, "PLAIN")
    got = authenticate(c, plain(user, pw))
    check(got is not None and got[0] == 0, "re-authentication as the same user succeeds (KIP-368)")
    check(metadata_ok(c), "... and the connection goes on")
    handshake(c, "PLAIN")
    got = authenticate(c, plain(other, other_pw))
    check(got is not None and got[0] == 58,
          "re-authentication as another user: 58 (the principal may not change)")
    check(not metadata_ok(c), "... and the connection is closed at its next request")

    c = conn(broker)
    handshake(c, "PLAIN")
    authenticate(c, plain(user, pw))
    time.sleep(reauth_ms / 1000 + 0.3)
    check(not metadata_ok(c), "past the session's lifetime a request closes the connection")


def uvarint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def cstr(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


def cbytes(b):
    return uvarint(len(b) + 1) + b


def alter(broker, user, pw, new_user, new_pw):
    c = Conn(broker, "sasl-wire", timeout=10)
    c.send(HANDSHAKE, 1, kstr("PLAIN"))
    c.recv()
    c.send(AUTHENTICATE, 1, kbytes(plain(user, pw)))
    c.recv()
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", new_pw.encode(), salt, 4096)
    body = uvarint(1)  # no deletions
    body += uvarint(3)  # two upsertions
    body += cstr(new_user) + bytes([2]) + s32(4096) + cbytes(salt) + cbytes(salted) + b"\0"
    body += cstr("weak") + bytes([2]) + s32(100) + cbytes(salt) + cbytes(salted) + b"\0"
    body += b"\0"
    c.send(ALTER_SCRAM, 0, body, header_v2=True)
    got = c.recv()
    check(got is not None, "AlterUserScramCredentials is answered")
    b = got[1]
    # header v1's tags, throttle, results: [user, error, message, tags]
    at = 1 + 4
    n = b[at] - 1
    at += 1
    res = {}
    for _ in range(n):
        ln = b[at] - 1
        name = b[at + 1:at + 1 + ln].decode()
        at += 1 + ln
        (err,) = struct.unpack_from(">h", b, at)
        at += 2
        ml = b[at]
        at += 1 + (ml - 1 if ml else 0)
        at += 1  # tags
        res[name] = err
    check(res.get(new_user) == 0, "AlterUserScramCredentials upserts %s (SCRAM-SHA-512)" % new_user)
    check(res.get("weak") == 93, "... and refuses 100 iterations: UNACCEPTABLE_CREDENTIAL (93)")
    c.send(DESCRIBE_SCRAM, 0, b"\0\0", header_v2=True)  # users: null; tags
    got = c.recv()
    res = describe_results(got[1]) if got else {}
    check(res.get(new_user) == (0, [(2, 4096)]) and user in res,
          "DescribeUserScramCredentials (all users) lists both, with mechanism and iterations (%s)" %
          res)
    body = uvarint(3) + cstr(new_user) + b"\0" + cstr("nobody") + b"\0" + b"\0"
    c.send(DESCRIBE_SCRAM, 0, body, header_v2=True)
    got = c.recv()
    res = describe_results(got[1]) if got else {}
    check(res == {new_user: (0, [(2, 4096)]), "nobody": (91, [])},
          "DescribeUserScramCredentials of a user and an unknown one: RESOURCE_NOT_FOUND (91) (%s)"
          % res)


def denied(broker, user, pw):
    """With --authorizer on and no ACL on the cluster for user: DescribeUserScramCredentials is
    answered CLUSTER_AUTHORIZATION_FAILED (31) as a whole, AlterUserScramCredentials per user,
    and the credential store is unchanged (KSA6)."""
    c = Conn(broker, "sasl-wire", timeout=10)
    c.send(HANDSHAKE, 1, kstr("PLAIN"))
    c.recv()
    c.send(AUTHENTICATE, 1, kbytes(plain(user, pw)))
    c.recv()
    c.send(DESCRIBE_SCRAM, 0, b"\0\0", header_v2=True)
    got = c.recv()
    check(got is not None, "DescribeUserScramCredentials is answered")
    (err,) = struct.unpack_from(">h", got[1], 1 + 4) if got else (None,)
    check(err == 31, "... CLUSTER_AUTHORIZATION_FAILED (31) without DESCRIBE on the cluster (%s)" %
          err)
    check(describe_results(got[1]) == {} if got else False, "... and lists no user")
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", b"mallory-pw", salt, 4096)
    body = uvarint(1) + uvarint(2)
    body += cstr("mallory") + bytes([2]) + s32(4096) + cbytes(salt) + cbytes(salted) + b"\0"
    body += b"\0"
    c.send(ALTER_SCRAM, 0, body, header_v2=True)
    got = c.recv()
    check(got is not None, "AlterUserScramCredentials is answered")
    b = got[1] if got else b""
    at = 1 + 4 + 1
    ln = b[at] - 1 if got else 0
    name = b[at + 1:at + 1 + ln].decode() if got else ""
    (err,) = struct.unpack_from(">h", b, at + 1 + ln) if got else (None,)
    check(name == "mallory" and err == 31,
          "... mallory's upsert refused CLUSTER_AUTHORIZATION_FAILED (31) without ALTER (%s, %s)"
          % (name, err))


def describe_results(b):
    """{user: (error, [(mechanism, iterations)])} of a DescribeUserScramCredentials v0 answer
    (b from past the correlation id: the header's tags first). Lengths here fit one byte."""
    at = 1 + 4 + 2  # tags, throttle, error
    ml = b[at]
    at += 1 + (ml - 1 if ml else 0)  # error message (compact nullable)
    n = b[at] - 1
    at += 1
    out = {}
    for _ in range(max(n, 0)):
        ln = b[at] - 1
        name = b[at + 1:at + 1 + ln].decode()
        at += 1 + ln
        (err,) = struct.unpack_from(">h", b, at)
        at += 2
        ml = b[at]
        at += 1 + (ml - 1 if ml else 0)
        k = b[at] - 1
        at += 1
        infos = []
        for _i in range(max(k, 0)):
            (iters,) = struct.unpack_from(">i", b, at + 1)
            infos.append((b[at], iters))
            at += 5 + 1  # mechanism, iterations, tags
        at += 1  # tags
        out[name] = (err, infos)
    return out


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "main":
        main(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif mode == "denied":
        denied(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "reauth":
        reauth(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]))
    else:
        alter(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6])
    sys.exit(1 if kwire.failed else 0)
