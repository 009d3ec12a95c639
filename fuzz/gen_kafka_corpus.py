#!/usr/bin/python3
"""gen_kafka_corpus.py — seeds the fuzz_kafka_* corpora (fuzz/corpus/kafka_*) from the golden
request frames real clients sent (tests/kafka/golden/). kafka_frame gets the frames as they are;
the per-group targets get [api index in the group][version - codec_min][0xff = full arena] +
the body after the request header (layout in fuzz/kafka_fuzz.h). The groups, codec minimums and
first flexible versions mirror tools/kafka/proto/api.c and the fuzz targets' key lists.

usage: fuzz/gen_kafka_corpus.py   (from the repository root)"""
import glob, os, struct

GROUPS = {
    "kafka_data": [0, 1, 2],
    "kafka_meta": [18, 3, 10, 22],
    "kafka_admin": [19, 20, 32, 33, 37, 21, 44],
    "kafka_group": [24, 25, 26, 28, 8, 9, 11, 14, 12, 13, 16, 15, 61, 65, 66, 42, 47],
}
CODEC_MIN = {0: 0, 1: 0, 2: 0, 3: 0, 8: 0, 9: 0, 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0,
             16: 0, 18: 0, 19: 0, 20: 0, 22: 0, 24: 0, 25: 0, 26: 0, 28: 0, 32: 0, 61: 0, 65: 0,
             66: 0, 42: 0, 47: 0, 21: 0, 33: 0, 37: 0, 44: 0}
FIRST_FLEX = {0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5,
              16: 3, 18: 3, 19: 5, 20: 4, 22: 2, 24: 3, 25: 3, 26: 3, 28: 3, 32: 4, 61: 0,
              65: 0, 66: 0, 42: 2, 47: 99, 21: 2, 33: 2, 37: 2, 44: 1}


def body_of(frame, key, ver):
    (n,) = struct.unpack(">h", frame[8:10])
    p = 10 + max(n, 0)
    if ver >= FIRST_FLEX[key]:
        count, p = frame[p], p + 1  # the clients write no tagged fields: count 0, one byte
        assert count == 0
    return frame[p:]


for d in list(GROUPS) + ["kafka_frame"]:
    os.makedirs(os.path.join("fuzz/corpus", d), exist_ok=True)
for path in sorted(glob.glob("tests/kafka/golden/*.bin")):
    frame = open(path, "rb").read()
    key, ver = struct.unpack(">hh", frame[:4])
    name = os.path.basename(path)[:-4]
    open(os.path.join("fuzz/corpus/kafka_frame", name), "wb").write(frame)
    for g, keys in GROUPS.items():
        if key in keys:
            seed = bytes([keys.index(key), ver - CODEC_MIN[key], 0xff]) + body_of(frame, key, ver)
            open(os.path.join("fuzz/corpus", g, name), "wb").write(seed)

# Hand-made seeds for versions no captured client sent: the KIP-664 operator requests
# (DescribeProducers 61 v0, DescribeTransactions 65 v0, ListTransactions 66 v0-1, as
# tests/kafka/txn_admin.py writes them) and the transactional requests' flexible v3.


def uv(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def cs(s):
    return uv(len(s) + 1) + s.encode()


def ca(items):
    return uv(len(items) + 1) + b"".join(items)


i16, i32, i64 = (lambda v: struct.pack(">h", v)), (lambda v: struct.pack(">i", v)), (
    lambda v: struct.pack(">q", v))
HAND = {
    "kip664.DescribeProducers": (61, 0, ca([cs("t") + ca([i32(0), i32(9)]) + b"\0"]) + b"\0"),
    "kip664.DescribeTransactions": (65, 0, ca([cs("tx-a"), cs("nope")]) + b"\0"),
    "kip664.ListTransactions.v0": (66, 0, ca([cs("Ongoing")]) + ca([i64(7)]) + b"\0"),
    "kip664.ListTransactions.v1": (66, 1, ca([cs("Bogus")]) + ca([]) + i64(60000) + b"\0"),
    "v3.AddPartitionsToTxn": (24, 3, cs("tx") + i64(7) + i16(3) +
                              ca([cs("t") + ca([i32(0), i32(2)]) + b"\0"]) + b"\0"),
    "v3.AddOffsetsToTxn": (25, 3, cs("tx") + i64(7) + i16(3) + cs("g") + b"\0"),
    "v3.EndTxn": (26, 3, cs("tx") + i64(7) + i16(3) + b"\1" + b"\0"),
    "v3.TxnOffsetCommit": (28, 3, cs("tx") + cs("g") + i64(7) + i16(3) + i32(4) + cs("m-1") +
                           b"\0" + ca([cs("t") + ca([i32(0) + i64(42) + i32(-1) + cs("meta") +
                                                     b"\0"]) + b"\0"]) + b"\0"),
}
for name, (key, ver, body) in HAND.items():
    keys = GROUPS["kafka_group"]
    seed = bytes([keys.index(key), ver - CODEC_MIN[key], 0xff]) + body
    open(os.path.join("fuzz/corpus/kafka_group", name), "wb").write(seed)

# Hand-made seeds for versions no golden frame has (the group APIs widened to Kafka 3.x's):
# compact forms from the first flexible version, every struct ending with an empty tag buffer.
def cstr(b):  # compact string
    return bytes([len(b) + 1]) + b


def s16(b):  # classic string
    return struct.pack(">h", len(b)) + b


def seed(group, key, ver, body, name):
    keys = GROUPS[group]
    data = bytes([keys.index(key), ver - CODEC_MIN[key], 0xff]) + body
    open(os.path.join("fuzz/corpus", group, name), "wb").write(data)


T = b"\x00"  # an empty tag buffer
seed("kafka_group", 42, 2, bytes([3]) + cstr(b"g1") + cstr(b"g2") + T, "hand.DeleteGroups_v2")
seed("kafka_group", 42, 0, struct.pack(">i", 1) + s16(b"g1"), "hand.DeleteGroups_v0")
seed("kafka_group", 47, 0, s16(b"g") + struct.pack(">i", 1) + s16(b"t") +
     struct.pack(">ii", 2, 0) + struct.pack(">i", 3), "hand.OffsetDelete_v0")
seed("kafka_group", 9, 8, bytes([2]) + cstr(b"g") + bytes([2]) + cstr(b"t") + bytes([2]) +
     struct.pack(">i", 0) + T + T + bytes([0]) + T, "hand.OffsetFetch_v8")
seed("kafka_group", 9, 0, s16(b"g") + struct.pack(">i", 1) + s16(b"t") +
     struct.pack(">ii", 1, 0), "hand.OffsetFetch_v0")
seed("kafka_group", 8, 1, s16(b"g") + struct.pack(">i", 3) + s16(b"m") + struct.pack(">i", 1) +
     s16(b"t") + struct.pack(">iiqq", 1, 0, 5, 1000) + s16(b"md"), "hand.OffsetCommit_v1")
seed("kafka_group", 8, 8, cstr(b"g") + struct.pack(">i", 3) + cstr(b"m") + bytes([0]) +
     bytes([2]) + cstr(b"t") + bytes([2]) + struct.pack(">iqi", 0, 5, -1) + cstr(b"md") + T + T +
     T, "hand.OffsetCommit_v8")
seed("kafka_group", 13, 5, cstr(b"g") + bytes([2]) + cstr(b"m") + cstr(b"i") + cstr(b"why") + T +
     T, "hand.LeaveGroup_v5")
seed("kafka_group", 11, 9, cstr(b"g") + struct.pack(">ii", 10000, 10000) + cstr(b"") +
     cstr(b"i") + cstr(b"consumer") + bytes([2]) + cstr(b"range") + bytes([3]) + b"\x00\x01" + T +
     cstr(b"why") + T, "hand.JoinGroup_v9")
seed("kafka_group", 14, 5, cstr(b"g") + struct.pack(">i", 1) + cstr(b"m") + bytes([0]) +
     cstr(b"consumer") + cstr(b"range") + bytes([2]) + cstr(b"m") + bytes([3]) + b"\x00\x01" + T +
     T, "hand.SyncGroup_v5")
seed("kafka_group", 16, 4, bytes([2]) + cstr(b"Stable") + T, "hand.ListGroups_v4")
seed("kafka_group", 15, 5, bytes([2]) + cstr(b"g") + bytes([1]) + T, "hand.DescribeGroups_v5")
seed("kafka_meta", 10, 4, bytes([1]) + bytes([3]) + cstr(b"g1") + cstr(b"g2") + T,
     "hand.FindCoordinator_v4")
# AddPartitionsToTxn v4 (KIP-890's batched VerifyOnly, broker to broker; txn_verify.c KTV5)
seed("kafka_group", 24, 4, bytes([2]) + cstr(b"tx") + struct.pack(">qh", 7, 2) + bytes([1]) +
     bytes([2]) + cstr(b"t") + bytes([3]) + struct.pack(">ii", 0, 1) + T + T + T,
     "hand.AddPartitionsToTxn_v4")
