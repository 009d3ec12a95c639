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
    "kafka_group": [24, 25, 26, 28, 8, 9, 11, 14, 12, 13, 16, 15, 61, 65, 66],
}
CODEC_MIN = {0: 0, 1: 4, 2: 1, 3: 0, 8: 2, 9: 1, 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0,
             16: 0, 18: 0, 19: 0, 20: 0, 22: 0, 24: 0, 25: 0, 26: 0, 28: 0, 32: 0, 61: 0, 65: 0,
             66: 0, 21: 0, 33: 0, 37: 0, 44: 0}
FIRST_FLEX = {0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5,
              16: 3, 18: 3, 19: 5, 20: 4, 22: 2, 24: 3, 25: 3, 26: 3, 28: 3, 32: 4, 61: 0,
              65: 0, 66: 0, 21: 2, 33: 2, 37: 2, 44: 1}


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
