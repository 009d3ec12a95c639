/*
 * test_batch.c — RecordBatch v2 codec: varints, a batch derived by hand from the format, real
 * Kafka broker batches reproduced byte for byte, control markers, round trips, and every
 * validation rule (V1-V17 at the top of engine/log/batch.c) rejecting what it must.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"
#include "index/crc32c.h"
#include "helpers/test_util.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------------------------- */
/* Varints                                                                                   */
/* ---------------------------------------------------------------------------------------- */

struct varint_case {
    int64_t value;
    uint8_t bytes[10];
    size_t len;
};

/* Zigzag then base-128, least significant group first (Kafka ByteUtils.writeVarint). */
static const struct varint_case varint_cases[] = {
    {0, {0x00}, 1},
    {-1, {0x01}, 1},
    {1, {0x02}, 1},
    {-2, {0x03}, 1},
    {63, {0x7e}, 1},
    {-64, {0x7f}, 1},
    {64, {0x80, 0x01}, 2},
    {-65, {0x81, 0x01}, 2},
    {8191, {0xfe, 0x7f}, 2},
    {-8192, {0xff, 0x7f}, 2},
    {8192, {0x80, 0x80, 0x01}, 3},
    {INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}, 5},
    {INT32_MIN, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
};

static const struct varint_case varlong_cases[] = {
    {0, {0x00}, 1},
    {-1, {0x01}, 1},
    {1, {0x02}, 1},
    {INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}, 5},
    {(int64_t)INT32_MAX + 1, {0x80, 0x80, 0x80, 0x80, 0x10}, 5},
    {INT64_MAX, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
    {INT64_MIN, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
};

static void test_varint_known_bytes(void **state)
{
    (void)state;
    uint8_t out[VARLONG_MAX_BYTES];
    for (size_t i = 0; i < ARRAY_LEN(varint_cases); i++) {
        const struct varint_case *c = &varint_cases[i];
        assert_int_equal(varint_encode(out, (int32_t)c->value), c->len);
        assert_memory_equal(out, c->bytes, c->len);
        assert_int_equal(varint_size((int32_t)c->value), c->len);
        int32_t v;
        assert_int_equal(varint_decode(c->bytes, c->bytes + c->len, &v), (int)c->len);
        assert_int_equal(v, c->value);
    }
    for (size_t i = 0; i < ARRAY_LEN(varlong_cases); i++) {
        const struct varint_case *c = &varlong_cases[i];
        assert_int_equal(varlong_encode(out, c->value), c->len);
        assert_memory_equal(out, c->bytes, c->len);
        assert_int_equal(varlong_size(c->value), c->len);
        int64_t v;
        assert_int_equal(varlong_decode(c->bytes, c->bytes + c->len, &v), (int)c->len);
        assert_true(v == c->value);
    }
}

static void varint_roundtrip(int32_t v)
{
    uint8_t out[VARINT_MAX_BYTES + 3];
    memset(out, 0xAA, sizeof out);
    size_t n = varint_encode(out, v);
    assert_true(n >= 1 && n <= VARINT_MAX_BYTES);
    assert_int_equal(n, varint_size(v));
    assert_int_equal(out[n], 0xAA); /* wrote nothing past its size */
    int32_t back;
    assert_int_equal(varint_decode(out, out + n, &back), (int)n);
    assert_int_equal(back, v);
    /* Trailing bytes are not consumed. */
    assert_int_equal(varint_decode(out, out + sizeof out, &back), (int)n);
    /* Every proper prefix is a truncation. */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(varint_decode(out, out + k, &back), RT_E_CORRUPT);
}

static void varlong_roundtrip(int64_t v)
{
    uint8_t out[VARLONG_MAX_BYTES + 3];
    memset(out, 0xAA, sizeof out);
    size_t n = varlong_encode(out, v);
    assert_true(n >= 1 && n <= VARLONG_MAX_BYTES);
    assert_int_equal(n, varlong_size(v));
    assert_int_equal(out[n], 0xAA);
    int64_t back;
    assert_int_equal(varlong_decode(out, out + n, &back), (int)n);
    assert_true(back == v);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(varlong_decode(out, out + k, &back), RT_E_CORRUPT);
}

/* Every 7-bit group boundary on both sides of zero, and the extremes. */
static void test_varint_boundaries(void **state)
{
    (void)state;
    for (int k = 0; k < 31; k++) {
        int32_t p = (int32_t)(1u << k);
        varint_roundtrip(p);
        varint_roundtrip(p - 1);
        varint_roundtrip(-p);
        varint_roundtrip(-p - 1);
        varint_roundtrip(p + 1);
    }
    varint_roundtrip(INT32_MAX);
    varint_roundtrip(INT32_MIN);
    varint_roundtrip(INT32_MAX - 1);
    varint_roundtrip(INT32_MIN + 1);
    for (int k = 0; k < 63; k++) {
        int64_t p = (int64_t)(UINT64_C(1) << k);
        varlong_roundtrip(p);
        varlong_roundtrip(p - 1);
        varlong_roundtrip(-p);
        varlong_roundtrip(-p - 1);
        varlong_roundtrip(p + 1);
    }
    varlong_roundtrip(INT64_MAX);
    varlong_roundtrip(INT64_MIN);
    varlong_roundtrip(INT64_MAX - 1);
    varlong_roundtrip(INT64_MIN + 1);
    /* Sizes change exactly at 2^(7k) of the zigzag value. */
    assert_int_equal(varint_size(63), 1);
    assert_int_equal(varint_size(64), 2);
    assert_int_equal(varint_size(-64), 1);
    assert_int_equal(varint_size(-65), 2);
    assert_int_equal(varlong_size(INT64_MAX), 10);
}

static void test_varint_rejects(void **state)
{
    (void)state;
    int32_t v;
    int64_t l;
    static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(varint_decode(six, six + sizeof six, &v), RT_E_CORRUPT);
    /* Five bytes whose last still has the continuation bit. */
    static const uint8_t cont5[] = {0xff, 0xff, 0xff, 0xff, 0x8f, 0x00};
    assert_int_equal(varint_decode(cont5, cont5 + sizeof cont5, &v), RT_E_CORRUPT);
    /* Fifth byte carrying bits beyond 32 (Kafka would silently drop them). */
    static const uint8_t over5[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    assert_int_equal(varint_decode(over5, over5 + sizeof over5, &v), RT_E_CORRUPT);
    static const uint8_t max5[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(varint_decode(max5, max5 + sizeof max5, &v), 5);
    assert_int_equal(v, INT32_MIN);
    /* Empty input. */
    assert_int_equal(varint_decode(six, six, &v), RT_E_CORRUPT);
    assert_int_equal(varlong_decode(six, six, &l), RT_E_CORRUPT);
    /* Non-minimal but in-range encodings are accepted, as Kafka's reader accepts them. */
    static const uint8_t padded[] = {0x80, 0x80, 0x00};
    assert_int_equal(varint_decode(padded, padded + sizeof padded, &v), 3);
    assert_int_equal(v, 0);

    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(varlong_decode(eleven, eleven + sizeof eleven, &l), RT_E_CORRUPT);
    static const uint8_t over10[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03};
    assert_int_equal(varlong_decode(over10, over10 + sizeof over10, &l), RT_E_CORRUPT);
    static const uint8_t max10[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(varlong_decode(max10, max10 + sizeof max10, &l), 10);
    assert_true(l == INT64_MIN);
    /* A varlong of 6..10 bytes is not a varint. */
    assert_int_equal(varint_decode(max10, max10 + sizeof max10, &v), RT_E_CORRUPT);
}

/* ---------------------------------------------------------------------------------------- */
/* A batch derived by hand from the format                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Two records in a transactional batch of producer 1000, epoch 3, baseSequence 7:
 *   record 0: timestamp 1700000000000, key "k1", value "v", header "h" = "x"
 *   record 1: timestamp 1700000000010, key null, value null, no headers
 * The CRC was computed with a bit-at-a-time CRC-32C (reflected 0x82F63B78, init and final XOR
 * 0xFFFFFFFF) over bytes 21..81, independently of index/crc32c.c. */
static const uint8_t golden[82] = {
    /* @0  baseOffset i64 = 0 (stamped by the partition later) */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* @8  length i32 = 82 - 12 = 70 */
    0x00, 0x00, 0x00, 0x46,
    /* @12 partitionLeaderEpoch i32 = 0 */
    0x00, 0x00, 0x00, 0x00,
    /* @16 magic i8 = 2 */
    0x02,
    /* @17 crc u32 = CRC-32C(bytes 21..81) */
    0xf0, 0x5c, 0xaa, 0x9e,
    /* @21 attributes i16 = 0x0010: transactional, CreateTime, uncompressed */
    0x00, 0x10,
    /* @23 lastOffsetDelta i32 = 1 */
    0x00, 0x00, 0x00, 0x01,
    /* @27 baseTimestamp i64 = 1700000000000 = 0x0000018BCFE56800 */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00,
    /* @35 maxTimestamp i64 = 1700000000010 */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x0a,
    /* @43 producerId i64 = 1000 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,
    /* @51 producerEpoch i16 = 3 */
    0x00, 0x03,
    /* @53 baseSequence i32 = 7 */
    0x00, 0x00, 0x00, 0x07,
    /* @57 recordCount i32 = 2 */
    0x00, 0x00, 0x00, 0x02,
    /* @61 record 0 */
    0x1a,      /* length varint 13 (zigzag 26) */
    0x00,      /* attributes */
    0x00,      /* timestampDelta varlong 0 */
    0x00,      /* offsetDelta varint 0 */
    0x04,      /* keyLength 2 */
    'k', '1',  /* key */
    0x02,      /* valueLength 1 */
    'v',       /* value */
    0x02,      /* headerCount 1 */
    0x02, 'h', /* header keyLength 1, key */
    0x02, 'x', /* header valueLength 1, value */
    /* @75 record 1 */
    0x0c, /* length 6 */
    0x00, /* attributes */
    0x14, /* timestampDelta 10 (zigzag 20) */
    0x02, /* offsetDelta 1 */
    0x01, /* keyLength -1: null */
    0x01, /* valueLength -1: null */
    0x00, /* headerCount 0 */
};

#define GOLDEN_REC0 61
#define GOLDEN_REC1 75

static size_t build_golden(uint8_t *buf, size_t cap)
{
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, cap, BATCH_ATTR_TRANSACTIONAL, 1000, 3, 7), 0);
    struct rt_header h = {.key = "h", .key_len = 1, .value = "x", .value_len = 1};
    struct rt_record r0 = {.key = "k1",
                           .key_len = 2,
                           .value = "v",
                           .value_len = 1,
                           .timestamp_ms = 1700000000000,
                           .headers = &h,
                           .header_count = 1};
    struct rt_record r1 = {.key = NULL,
                           .key_len = -1,
                           .value = NULL,
                           .value_len = -1,
                           .timestamp_ms = 1700000000010,
                           .headers = NULL,
                           .header_count = 0};
    assert_int_equal(record_encoded_size(&r0, 0, 0), 14);
    assert_int_equal(record_encoded_size(&r1, 1, 10), 7);
    assert_int_equal(batch_builder_add(&b, &r0), 0);
    assert_int_equal(batch_builder_add(&b, &r1), 0);
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    return len;
}

static void test_golden_batch_by_hand(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t len = build_golden(buf, sizeof buf);
    assert_int_equal(len, sizeof golden);
    assert_memory_equal(buf, golden, sizeof golden);
    assert_int_equal(crc32c(0, golden + BATCH_CRC_START, sizeof golden - BATCH_CRC_START),
                     0xf05caa9eu);

    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_validate(golden, sizeof golden, 0, &h, &why), 0);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.length, 70);
    assert_int_equal(h.magic, 2);
    assert_int_equal(h.crc, 0xf05caa9eu);
    assert_int_equal(h.attributes, BATCH_ATTR_TRANSACTIONAL);
    assert_int_equal(h.last_offset_delta, 1);
    assert_true(h.base_timestamp == 1700000000000);
    assert_true(h.max_timestamp == 1700000000010);
    assert_int_equal(h.producer_id, 1000);
    assert_int_equal(h.producer_epoch, 3);
    assert_int_equal(h.base_sequence, 7);
    assert_int_equal(h.record_count, 2);
    assert_true(batch_is_transactional(&h));
    assert_false(batch_is_control(&h));

    struct record_view r;
    const uint8_t *end = golden + sizeof golden;
    int n = record_decode(golden + GOLDEN_REC0, end, &r, &why);
    assert_int_equal(n, 14);
    assert_int_equal(r.offset_delta, 0);
    assert_int_equal(r.timestamp_delta, 0);
    assert_int_equal(r.key_len, 2);
    assert_memory_equal(r.key, "k1", 2);
    assert_int_equal(r.value_len, 1);
    assert_memory_equal(r.value, "v", 1);
    assert_int_equal(r.header_count, 1);
    assert_int_equal(r.headers_size_bytes, 4);
    struct rt_header hd;
    assert_int_equal(record_header_decode(r.headers, r.headers + r.headers_size_bytes, &hd, &why),
                     4);
    assert_int_equal(hd.key_len, 1);
    assert_memory_equal(hd.key, "h", 1);
    assert_int_equal(hd.value_len, 1);
    assert_memory_equal(hd.value, "x", 1);

    n = record_decode(golden + GOLDEN_REC1, end, &r, &why);
    assert_int_equal(n, 7);
    assert_int_equal(r.offset_delta, 1);
    assert_int_equal(r.timestamp_delta, 10);
    assert_null(r.key);
    assert_int_equal(r.key_len, -1);
    assert_null(r.value);
    assert_int_equal(r.value_len, -1);
    assert_int_equal(r.header_count, 0);
    assert_int_equal(r.headers_size_bytes, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Real batches written by a Kafka broker                                                    */
/* ---------------------------------------------------------------------------------------- */

/* Source: dpkp/kafka-python, test/record/test_records.py, `record_batch_data_v2` ("This is real
 * live data from Kafka 11 broker"). Four batches, none with a producer id:
 *   0: offset 0, leader epoch 1, one record value "123" (key null), timestamp 1503229838908
 *   1: offset 1, leader epoch 2, two records with empty values, timestamps base and base+168
 *   2: offset 3, leader epoch 2, one record value "123"
 *   3: offset 0, leader epoch 0, value "hdr", header hkey=hval (a later broker) */
static const uint8_t kafka_b0[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3b, 0x00, 0x00, 0x00,
    0x01, 0x02, 0x03, 0x18, 0xa2, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x5d, 0xff, 0x7b, 0x06, 0x3c, 0x00, 0x00, 0x01, 0x5d, 0xff, 0x7b, 0x06, 0x3c, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
    0x01, 0x12, 0x00, 0x00, 0x00, 0x01, 0x06, 0x31, 0x32, 0x33, 0x00};
static const uint8_t kafka_b1[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x02,
    0x02, 0xc8, 0x5c, 0xbd, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x5d, 0xff,
    0x7c, 0xdd, 0x6c, 0x00, 0x00, 0x01, 0x5d, 0xff, 0x7c, 0xde, 0x14, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, 0x0c, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x0e, 0x00, 0xd0, 0x02, 0x02, 0x01, 0x00, 0x00};
static const uint8_t kafka_b2[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x3b, 0x00, 0x00, 0x00,
    0x02, 0x02, 0x2e, 0x0b, 0x85, 0xb7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x5d, 0xff, 0x7c, 0xe7, 0x9d, 0x00, 0x00, 0x01, 0x5d, 0xff, 0x7c, 0xe7, 0x9d, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
    0x01, 0x12, 0x00, 0x00, 0x00, 0x01, 0x06, 0x31, 0x32, 0x33, 0x00};
static const uint8_t kafka_b3[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00,
    0x00, 0x00, 0x02, 0x5c, 0xd8, 0xef, 0x52, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x01, 0x65, 0x85, 0xb6, 0xf3, 0xc1, 0x00, 0x00, 0x01, 0x65, 0x85, 0xb6, 0xf3,
    0xc1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0x00, 0x00, 0x00, 0x01, 0x26, 0x00, 0x00, 0x00, 0x01, 0x06, 0x68, 0x64, 0x72,
    0x02, 0x08, 0x68, 0x6b, 0x65, 0x79, 0x08, 0x68, 0x76, 0x61, 0x6c};

struct kafka_vec {
    const uint8_t *bytes;
    size_t len;
};
static const struct kafka_vec kafka_vecs[] = {
    {kafka_b0, sizeof kafka_b0},
    {kafka_b1, sizeof kafka_b1},
    {kafka_b2, sizeof kafka_b2},
    {kafka_b3, sizeof kafka_b3},
};

/* Re-encodes a validated uncompressed batch with our builder: same producer fields and
 * attributes, records rebuilt from their decoded fields and absolute timestamps, then the
 * base offset and leader epoch stamped (they are outside the CRC). */
static size_t reencode(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap)
{
    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_validate(in, in_len, 0, &h, &why), 0);
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, out, cap, h.attributes, h.producer_id, h.producer_epoch,
                                        h.base_sequence),
                     0);
    const uint8_t *p = in + BATCH_HEADER_BYTES, *end = in + in_len;
    for (int32_t i = 0; i < h.record_count; i++) {
        struct record_view rv;
        int n = record_decode(p, end, &rv, &why);
        assert_true(n > 0);
        struct rt_header hdrs[8];
        assert_true(rv.header_count <= 8);
        const uint8_t *q = rv.headers;
        for (int32_t k = 0; k < rv.header_count; k++) {
            int m = record_header_decode(q, rv.headers + rv.headers_size_bytes, &hdrs[k], &why);
            assert_true(m > 0);
            q += m;
        }
        struct rt_record r = {.key = rv.key,
                              .key_len = rv.key_len,
                              .value = rv.value,
                              .value_len = rv.value_len,
                              .timestamp_ms = h.base_timestamp + rv.timestamp_delta,
                              .headers = hdrs,
                              .header_count = (uint32_t)rv.header_count};
        assert_int_equal(batch_builder_add(&b, &r), 0);
        p += n;
    }
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    batch_stamp_base_offset(out, h.base_offset);
    be32_store(out + BATCH_OFF_LEADER_EPOCH, (uint32_t)h.partition_leader_epoch);
    return len;
}

static void test_kafka_broker_batches(void **state)
{
    (void)state;
    const char *why = NULL;
    for (size_t i = 0; i < ARRAY_LEN(kafka_vecs); i++) {
        const struct kafka_vec *v = &kafka_vecs[i];
        struct batch_header h;
        assert_int_equal(batch_validate(v->bytes, v->len, 0, &h, &why), 0);
        assert_int_equal(h.producer_id, -1);
        assert_int_equal(h.producer_epoch, -1);
        assert_int_equal(h.base_sequence, -1);
        assert_int_equal(crc32c(0, v->bytes + BATCH_CRC_START, v->len - BATCH_CRC_START), h.crc);
        /* Our encoder writes exactly the bytes the broker wrote, CRC included. */
        uint8_t out[256];
        size_t len = reencode(v->bytes, v->len, out, sizeof out);
        assert_int_equal(len, v->len);
        assert_memory_equal(out, v->bytes, v->len);
    }
    /* A few decoded facts, as kafka-python's test asserts them. */
    struct batch_header h;
    assert_int_equal(batch_validate(kafka_b0, sizeof kafka_b0, 0, &h, &why), 0);
    assert_true(h.base_timestamp == 1503229838908);
    assert_int_equal(h.partition_leader_epoch, 1);
    struct record_view r;
    assert_true(record_decode(kafka_b0 + 61, kafka_b0 + sizeof kafka_b0, &r, &why) > 0);
    assert_null(r.key);
    assert_int_equal(r.value_len, 3);
    assert_memory_equal(r.value, "123", 3);
    assert_int_equal(batch_validate(kafka_b1, sizeof kafka_b1, 0, &h, &why), 0);
    assert_int_equal(batch_last_offset(&h), 2);
    assert_true(h.max_timestamp - h.base_timestamp == 168);
    assert_true(record_decode(kafka_b3 + 61, kafka_b3 + sizeof kafka_b3, &r, &why) > 0);
    struct rt_header hd;
    assert_true(record_header_decode(r.headers, r.headers + r.headers_size_bytes, &hd, &why) > 0);
    assert_memory_equal(hd.key, "hkey", 4);
    assert_memory_equal(hd.value, "hval", 4);

    /* The four batches back to back, as in a segment: walk them by size. */
    uint8_t seg[512];
    size_t seg_len = 0;
    for (size_t i = 0; i < ARRAY_LEN(kafka_vecs); i++) {
        memcpy(seg + seg_len, kafka_vecs[i].bytes, kafka_vecs[i].len);
        seg_len += kafka_vecs[i].len;
    }
    size_t pos = 0, count = 0;
    while (pos < seg_len) {
        int64_t size = batch_size_at(seg + pos, seg_len - pos, &why);
        assert_true(size == (int64_t)kafka_vecs[count].len);
        assert_int_equal(batch_header_parse(seg + pos, seg_len - pos, &h, &why), 0);
        assert_int_equal(batch_validate(seg + pos, (size_t)size, 0, &h, &why), 0);
        pos += (size_t)size;
        count++;
    }
    assert_int_equal(count, 4);
    /* kafka-python's reader sees 4 trailing zero bytes as a partial batch: so do we. */
    memset(seg + seg_len, 0, 4);
    assert_int_equal(batch_size_at(seg + seg_len, 4, &why), RT_E_CORRUPT);
}

/* Source: IBM/sarama, record_test.go, recordBatchTestCases(): "uncompressed record" and "empty
 * record" (encodings produced by another independent client). Sarama's test leaves
 * MaxTimestamp at 0 while its record is at baseTimestamp + 5, which a Kafka broker would repair
 * and ringtail rejects (V14); the CRC and the record layout still have to agree with ours. */
static const uint8_t sarama_uncompressed[] = {
    0,  0,   0,  0,   0,   0,   0,  0,  /* First Offset */
    0,  0,   0,  70,                    /* Length */
    0,  0,   0,  0,                     /* Partition Leader Epoch */
    2,                                  /* Version */
    84, 121, 97, 253,                   /* CRC */
    0,  0,                              /* Attributes */
    0,  0,   0,  0,                     /* Last Offset Delta */
    0,  0,   1,  88,  141, 205, 89, 56, /* First Timestamp */
    0,  0,   0,  0,   0,   0,   0,  0,  /* Max Timestamp */
    0,  0,   0,  0,   0,   0,   0,  0,  /* Producer ID */
    0,  0,                              /* Producer Epoch */
    0,  0,   0,  0,                     /* First Sequence */
    0,  0,   0,  1,                     /* Number of Records */
    40, 0,   10, 0,   8,   1,   2,  3,  4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
};
static const uint8_t sarama_empty[] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0, 0, 0, 0, 2, 89, 95, 183, 221,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0,  0,  0,   0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0,  0,
};

static void test_sarama_vectors(void **state)
{
    (void)state;
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_header_parse(sarama_uncompressed, sizeof sarama_uncompressed, &h, &why),
                     0);
    assert_int_equal(crc32c(0, sarama_uncompressed + 21, sizeof sarama_uncompressed - 21), h.crc);
    assert_int_equal(h.crc, 0x547961fdu);
    struct record_view r;
    int n = record_decode(sarama_uncompressed + 61,
                          sarama_uncompressed + sizeof sarama_uncompressed, &r, &why);
    assert_int_equal(n, 21);
    assert_int_equal(r.timestamp_delta, 5);
    assert_memory_equal(r.key, "\x01\x02\x03\x04", 4);
    assert_memory_equal(r.value, "\x05\x06\x07", 3);
    assert_int_equal(r.header_count, 1);
    struct rt_header hd;
    assert_int_equal(record_header_decode(r.headers, r.headers + r.headers_size_bytes, &hd, &why),
                     7);
    assert_memory_equal(hd.key, "\x08\x09\x0a", 3);
    assert_memory_equal(hd.value, "\x0b\x0c", 2);
    assert_int_equal(batch_validate(sarama_uncompressed, sizeof sarama_uncompressed, 0, &h, &why),
                     RT_E_CORRUPT);
    assert_string_equal(why, "record timestamp above maxTimestamp");

    /* An empty batch (what Kafka's compaction can leave behind) parses; batch_validate wants
     * records (V10). */
    assert_int_equal(batch_header_parse(sarama_empty, sizeof sarama_empty, &h, &why), 0);
    assert_int_equal(h.record_count, 0);
    assert_int_equal(crc32c(0, sarama_empty + 21, sizeof sarama_empty - 21), h.crc);
    assert_int_equal(batch_validate(sarama_empty, sizeof sarama_empty, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "batch holds no records");
}

/* ---------------------------------------------------------------------------------------- */
/* Control batches                                                                           */
/* ---------------------------------------------------------------------------------------- */

/* COMMIT marker of producer 1000 epoch 3, coordinator epoch 5, at 1700000000000. Layout from
 * Kafka's MemoryRecords.withEndTransactionMarker: CreateTime, transactional + control,
 * baseSequence -1, one record with timestampDelta 0 and offsetDelta 0, key
 * ControlRecordType v0, value EndTransactionMarker v0. CRC by the bit-at-a-time reference. */
static const uint8_t control_commit[CONTROL_BATCH_BYTES] = {
    /* @0  baseOffset */ 0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    /* @8  length = 66 */ 0x00,
    0x00,
    0x00,
    0x42,
    /* @12 partitionLeaderEpoch */ 0x00,
    0x00,
    0x00,
    0x00,
    /* @16 magic */ 0x02,
    /* @17 crc */ 0x8a,
    0x77,
    0x3c,
    0x25,
    /* @21 attributes = 0x30: transactional | control */ 0x00,
    0x30,
    /* @23 lastOffsetDelta */ 0x00,
    0x00,
    0x00,
    0x00,
    /* @27 baseTimestamp */ 0x00,
    0x00,
    0x01,
    0x8b,
    0xcf,
    0xe5,
    0x68,
    0x00,
    /* @35 maxTimestamp */ 0x00,
    0x00,
    0x01,
    0x8b,
    0xcf,
    0xe5,
    0x68,
    0x00,
    /* @43 producerId = 1000 */ 0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x03,
    0xe8,
    /* @51 producerEpoch = 3 */ 0x00,
    0x03,
    /* @53 baseSequence = -1 */ 0xff,
    0xff,
    0xff,
    0xff,
    /* @57 recordCount = 1 */ 0x00,
    0x00,
    0x00,
    0x01,
    /* @61 record length 16 */ 0x20,
    /* @62 attributes */ 0x00,
    /* @63 timestampDelta 0 */ 0x00,
    /* @64 offsetDelta 0 */ 0x00,
    /* @65 keyLength 4 */ 0x08,
    /* @66 key: version 0, type 1 COMMIT */ 0x00,
    0x00,
    0x00,
    0x01,
    /* @70 valueLength 6 */ 0x0c,
    /* @71 value: version 0, coordinatorEpoch 5 */ 0x00,
    0x00,
    0x00,
    0x00,
    0x00,
    0x05,
    /* @77 headerCount 0 */ 0x00,
};

static void test_control_batch_layout(void **state)
{
    (void)state;
    uint8_t buf[CONTROL_BATCH_BYTES];
    control_batch_build(buf, 1000, 3, CONTROL_COMMIT, 5, 1700000000000);
    assert_memory_equal(buf, control_commit, CONTROL_BATCH_BYTES);

    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(buf, sizeof buf, 0, &h, &why), 0);
    assert_true(batch_is_control(&h));
    assert_true(batch_is_transactional(&h));
    assert_int_equal(h.record_count, 1);
    assert_int_equal(h.base_sequence, -1);
    struct record_view r;
    assert_int_equal(record_decode(buf + 61, buf + sizeof buf, &r, &why), 17);
    enum control_type type;
    int32_t epoch;
    assert_int_equal(
        control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, &epoch, &why), 0);
    assert_int_equal(type, CONTROL_COMMIT);
    assert_int_equal(epoch, 5);

    /* ABORT differs in the type byte and the CRC only. */
    uint8_t abort_buf[CONTROL_BATCH_BYTES];
    control_batch_build(abort_buf, 1000, 3, CONTROL_ABORT, 5, 1700000000000);
    for (size_t i = 0; i < CONTROL_BATCH_BYTES; i++)
        if (i != 69 && (i < 17 || i > 20))
            assert_int_equal(abort_buf[i], control_commit[i]);
    assert_int_equal(abort_buf[69], 0);
    assert_int_equal(be32_load(abort_buf + 17), 0x7e49ea6du);
    assert_int_equal(batch_validate(abort_buf, sizeof abort_buf, 0, &h, &why), 0);
    assert_int_equal(record_decode(abort_buf + 61, abort_buf + sizeof abort_buf, &r, &why), 17);
    assert_int_equal(
        control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, &epoch, &why), 0);
    assert_int_equal(type, CONTROL_ABORT);

    /* Stamping the offset leaves it valid. */
    batch_stamp_base_offset(abort_buf, 123456789);
    assert_int_equal(batch_validate(abort_buf, sizeof abort_buf, 0, &h, &why), 0);
    assert_int_equal(batch_last_offset(&h), 123456789);
}

static void test_control_record_parse_rejects(void **state)
{
    (void)state;
    const char *why = NULL;
    enum control_type type;
    int32_t epoch;
    const uint8_t key[] = {0, 0, 0, 1}, value[] = {0, 0, 0, 0, 0, 9};
    assert_int_equal(control_record_parse(key, 4, value, 6, &type, &epoch, &why), 0);
    assert_int_equal(epoch, 9);
    assert_int_equal(control_record_parse(NULL, -1, value, 6, &type, &epoch, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record key is not 4 bytes");
    assert_int_equal(control_record_parse(key, 3, value, 6, &type, &epoch, &why), RT_E_CORRUPT);
    const uint8_t key_v1[] = {0, 1, 0, 1};
    assert_int_equal(control_record_parse(key_v1, 4, value, 6, &type, &epoch, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record key version is not 0");
    const uint8_t key_t2[] = {0, 0, 0, 2};
    assert_int_equal(control_record_parse(key_t2, 4, value, 6, &type, &epoch, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record type is neither ABORT (0) nor COMMIT (1)");
    assert_int_equal(control_record_parse(key, 4, value, 5, &type, &epoch, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record value is not 6 bytes");
    assert_int_equal(control_record_parse(key, 4, NULL, -1, &type, &epoch, &why), RT_E_CORRUPT);
    const uint8_t value_v1[] = {0, 1, 0, 0, 0, 9};
    assert_int_equal(control_record_parse(key, 4, value_v1, 6, &type, &epoch, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record value version is not 0");
}

/* V15 through the builder: control-flagged batches that are not a single well-formed marker. */
static void test_control_batch_rules(void **state)
{
    (void)state;
    uint8_t buf[256];
    const char *why = NULL;
    struct batch_header h;
    struct batch_builder b;
    const uint8_t key[] = {0, 0, 0, 1}, value[] = {0, 0, 0, 0, 0, 9};
    struct rt_record marker = {.key = key,
                               .key_len = 4,
                               .value = value,
                               .value_len = 6,
                               .timestamp_ms = 5,
                               .headers = NULL,
                               .header_count = 0};
    size_t len;

    /* The builder can write a marker too, and it equals control_batch_build's. */
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0x30, 7, 1, -1), 0);
    assert_int_equal(batch_builder_add(&b, &marker), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    uint8_t ref[CONTROL_BATCH_BYTES];
    control_batch_build(ref, 7, 1, CONTROL_COMMIT, 9, 5);
    assert_int_equal(len, CONTROL_BATCH_BYTES);
    assert_memory_equal(buf, ref, CONTROL_BATCH_BYTES);

    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0x30, 7, 1, -1), 0);
    assert_int_equal(batch_builder_add(&b, &marker), 0);
    assert_int_equal(batch_builder_add(&b, &marker), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control batch does not hold exactly one record");

    struct rt_header hd = {.key = "a", .key_len = 1, .value = NULL, .value_len = -1};
    struct rt_record with_header = marker;
    with_header.headers = &hd;
    with_header.header_count = 1;
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0x30, 7, 1, -1), 0);
    assert_int_equal(batch_builder_add(&b, &with_header), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control batch is not 78 bytes");

    const uint8_t bad_type[] = {0, 0, 0, 7};
    struct rt_record bad = marker;
    bad.key = bad_type;
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0x30, 7, 1, -1), 0);
    assert_int_equal(batch_builder_add(&b, &bad), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(len, CONTROL_BATCH_BYTES);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control record type is neither ABORT (0) nor COMMIT (1)");

    /* A marker whose bytes claim gzip. */
    control_batch_build(buf, 7, 1, CONTROL_ABORT, 9, 5);
    buf[22] |= BATCH_COMPRESSION_GZIP;
    batch_seal_crc(buf, CONTROL_BATCH_BYTES);
    assert_int_equal(batch_validate(buf, CONTROL_BATCH_BYTES, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "control batch is compressed");
}

/* ---------------------------------------------------------------------------------------- */
/* Round trips                                                                               */
/* ---------------------------------------------------------------------------------------- */

struct gen_record {
    struct rt_record r;
    struct rt_header h[4];
    uint8_t bytes[600];
};

static int32_t gen_len(int max)
{
    int pick = rand() % 10;
    if (pick == 0)
        return -1;
    if (pick == 1)
        return 0;
    return rand() % (max + 1);
}

static void gen(struct gen_record *g, int64_t ts)
{
    for (size_t i = 0; i < sizeof g->bytes; i++)
        g->bytes[i] = (uint8_t)rand();
    uint8_t *p = g->bytes;
    g->r.key_len = gen_len(100);
    g->r.key = g->r.key_len >= 0 ? p : NULL;
    p += g->r.key_len > 0 ? g->r.key_len : 0;
    g->r.value_len = gen_len(300);
    g->r.value = g->r.value_len >= 0 ? p : NULL;
    p += g->r.value_len > 0 ? g->r.value_len : 0;
    g->r.timestamp_ms = ts;
    g->r.header_count = (uint32_t)(rand() % 5);
    g->r.headers = g->r.header_count ? g->h : NULL;
    for (uint32_t i = 0; i < g->r.header_count; i++) {
        g->h[i].key_len = rand() % 20;
        g->h[i].key = p;
        p += g->h[i].key_len;
        g->h[i].value_len = gen_len(20);
        g->h[i].value = g->h[i].value_len >= 0 ? p : NULL;
        p += g->h[i].value_len > 0 ? g->h[i].value_len : 0;
    }
    assert_true(p <= g->bytes + sizeof g->bytes);
}

static void assert_bytes_equal(const void *a, int32_t alen, const void *b, int32_t blen)
{
    assert_int_equal(alen, blen);
    if (alen < 0) {
        assert_null(a);
        assert_null(b);
    } else if (alen > 0) {
        assert_memory_equal(a, b, (size_t)alen);
    }
}

static void test_roundtrip_many(void **state)
{
    (void)state;
    enum { N = 1000 };
    const size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap);
    struct gen_record *g = calloc(N, sizeof *g);
    assert_non_null(buf);
    assert_non_null(g);
    srand(1234);
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, cap, 0, 77, 0, 0), 0);
    int64_t ts_max = 0;
    for (int i = 0; i < N; i++) {
        /* Timestamps wander both ways around the first: negative deltas are legal. */
        int64_t ts = 1600000000000 + (rand() % 20000) - 10000;
        gen(&g[i], ts);
        if (i == 0 || ts > ts_max)
            ts_max = ts;
        size_t before = b.len;
        size_t want = record_encoded_size(&g[i].r, i, ts - (i ? b.base_timestamp : ts));
        assert_int_equal(batch_builder_add(&b, &g[i].r), 0);
        assert_int_equal(b.len - before, want);
    }
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    assert_int_equal(h.record_count, N);
    assert_int_equal(h.last_offset_delta, N - 1);
    assert_true(h.base_timestamp == g[0].r.timestamp_ms);
    assert_true(h.max_timestamp == ts_max); /* exact for batches we build */
    assert_int_equal(h.producer_id, 77);

    const uint8_t *p = buf + BATCH_HEADER_BYTES, *end = buf + len;
    for (int i = 0; i < N; i++) {
        struct record_view r;
        int n = record_decode(p, end, &r, &why);
        assert_true(n > 0);
        assert_int_equal(r.offset_delta, i);
        assert_true(h.base_timestamp + r.timestamp_delta == g[i].r.timestamp_ms);
        assert_bytes_equal(r.key, r.key_len, g[i].r.key, g[i].r.key_len);
        assert_bytes_equal(r.value, r.value_len, g[i].r.value, g[i].r.value_len);
        assert_int_equal(r.header_count, (int32_t)g[i].r.header_count);
        const uint8_t *q = r.headers, *qend = r.headers + r.headers_size_bytes;
        for (int32_t k = 0; k < r.header_count; k++) {
            struct rt_header hd;
            int m = record_header_decode(q, qend, &hd, &why);
            assert_true(m > 0);
            assert_non_null(hd.key);
            assert_bytes_equal(hd.key, hd.key_len, g[i].h[k].key, g[i].h[k].key_len);
            assert_bytes_equal(hd.value, hd.value_len, g[i].h[k].value, g[i].h[k].value_len);
            q += m;
        }
        assert_ptr_equal(q, qend);
        p += n;
    }
    assert_ptr_equal(p, end);
    free(g);
    free(buf);
}

/* Null vs empty keys and values, empty header keys, null header values. */
static void test_roundtrip_null_and_empty(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct rt_header hs[2] = {{.key = "", .key_len = 0, .value = NULL, .value_len = -1},
                              {.key = "k", .key_len = 1, .value = "", .value_len = 0}};
    struct rt_record rs[4] = {
        {.key = NULL, .key_len = -1, .value = NULL, .value_len = -1, .timestamp_ms = 0},
        {.key = "", .key_len = 0, .value = "", .value_len = 0, .timestamp_ms = 0},
        {.key = NULL, .key_len = -1, .value = "", .value_len = 0, .timestamp_ms = 0},
        {.key = "x",
         .key_len = 1,
         .value = NULL,
         .value_len = -1,
         .headers = hs,
         .header_count = 2,
         .timestamp_ms = 0},
    };
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0, -1, -1, -1), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(batch_builder_add(&b, &rs[i]), 0);
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    const uint8_t *p = buf + 61;
    struct record_view r;
    p += record_decode(p, buf + len, &r, &why);
    assert_null(r.key);
    assert_null(r.value);
    p += record_decode(p, buf + len, &r, &why);
    assert_int_equal(r.key_len, 0);
    assert_non_null(r.key);
    assert_int_equal(r.value_len, 0);
    assert_non_null(r.value);
    p += record_decode(p, buf + len, &r, &why);
    assert_null(r.key);
    assert_int_equal(r.value_len, 0);
    int n = record_decode(p, buf + len, &r, &why);
    assert_true(n > 0);
    assert_int_equal(r.value_len, -1);
    struct rt_header hd;
    int m = record_header_decode(r.headers, r.headers + r.headers_size_bytes, &hd, &why);
    assert_int_equal(m, 2);
    assert_int_equal(hd.key_len, 0);
    assert_int_equal(hd.value_len, -1);
    assert_null(hd.value);
    m = record_header_decode(r.headers + 2, r.headers + r.headers_size_bytes, &hd, &why);
    assert_int_equal(m, 3);
    assert_int_equal(hd.value_len, 0);
    assert_ptr_equal(p + n, buf + len);
}

static void test_builder_errors(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, 60, 0, -1, -1, -1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, BATCH_COMPRESSION_LZ4, -1, -1, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0x80, -1, -1, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, BATCH_ATTR_TRANSACTIONAL, -1, -1, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0, -1, -1, -1), 0);
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), RT_E_INVALID_ARGUMENT); /* no records */

    struct rt_record ok = {.key = "k", .key_len = 1, .value = "v", .value_len = 1};
    struct rt_record r = ok;
    r.key_len = -2;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT);
    r = ok;
    r.value = NULL;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT);
    r = ok;
    r.timestamp_ms = -1;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT);
    r = ok;
    r.header_count = 1;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT); /* headers NULL */
    struct rt_header null_key = {.key = NULL, .key_len = -1, .value = "v", .value_len = 1};
    r.headers = &null_key;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT);
    struct rt_header bad_value = {.key = "k", .key_len = 1, .value = "v", .value_len = -3};
    r.headers = &bad_value;
    assert_int_equal(batch_builder_add(&b, &r), RT_E_INVALID_ARGUMENT);
    assert_int_equal(b.len, BATCH_HEADER_BYTES);
    assert_int_equal(b.count, 0);

    /* -ENOSPC leaves the builder as it was: what fits is still a valid batch. */
    uint8_t big[100];
    memset(big, 'b', sizeof big);
    struct rt_record large = {.key = NULL, .key_len = -1, .value = big, .value_len = 60};
    assert_int_equal(batch_builder_add(&b, &ok), 0);
    size_t used = b.len;
    assert_int_equal(batch_builder_add(&b, &large), -ENOSPC);
    assert_int_equal(b.len, used);
    assert_int_equal(b.count, 1);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    assert_int_equal(h.record_count, 1);
    /* Exactly full is not ENOSPC. */
    size_t exact = BATCH_HEADER_BYTES + record_encoded_size(&ok, 0, 0);
    assert_int_equal(batch_builder_init(&b, buf, exact, 0, -1, -1, -1), 0);
    assert_int_equal(batch_builder_add(&b, &ok), 0);
    assert_int_equal(batch_builder_add(&b, &ok), -ENOSPC);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(len, exact);
}

/* Records arriving out of timestamp order: the first one is the base, deltas may be negative,
 * maxTimestamp is the true maximum (V14 holds with equality). */
static void test_builder_timestamps(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0, -1, -1, -1), 0);
    const int64_t ts[] = {100, 50, 300, 200};
    for (size_t i = 0; i < ARRAY_LEN(ts); i++) {
        struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = ts[i]};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    assert_int_equal(h.base_timestamp, 100);
    assert_int_equal(h.max_timestamp, 300);
    const uint8_t *p = buf + 61;
    for (size_t i = 0; i < ARRAY_LEN(ts); i++) {
        struct record_view r;
        p += record_decode(p, buf + len, &r, &why);
        assert_int_equal(r.timestamp_delta, ts[i] - 100);
    }

    /* Overstated maxTimestamp is accepted (Kafka never rejects it; only lookups scan further). */
    be64_store(buf + BATCH_OFF_MAX_TIMESTAMP, 1000);
    batch_seal_crc(buf, len);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    /* Understated is V14. */
    be64_store(buf + BATCH_OFF_MAX_TIMESTAMP, 299);
    batch_seal_crc(buf, len);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "record timestamp above maxTimestamp");
    /* LogAppendTime: record timestamps are ignored, maxTimestamp is every record's time. */
    be16_store(buf + BATCH_OFF_ATTRIBUTES, BATCH_ATTR_LOG_APPEND_TIME);
    batch_seal_crc(buf, len);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    /* baseTimestamp + delta overflowing int64 is V14 too. */
    be16_store(buf + BATCH_OFF_ATTRIBUTES, 0);
    be64_store(buf + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)INT64_MAX - 10);
    be64_store(buf + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)INT64_MAX);
    batch_seal_crc(buf, len);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "record timestamp overflows");
}

/* V16-V17: an append measures the records' max instead of comparing (a maxTimestamp of -1 or
 * below a record is accepted), and batch_stamp_timestamps makes the header true, sealing the
 * CRC again only when a field changes. */
static void test_append_rules_v16_v17(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof buf, 0, -1, -1, -1), 0);
    const int64_t ts[] = {100, 50, 300, 200};
    for (size_t i = 0; i < ARRAY_LEN(ts); i++) {
        struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = ts[i]};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const char *why = NULL;
    struct batch_header h;
    int64_t m = 0;
    /* Right already: measured 300, nothing to stamp, not one byte changes. */
    assert_int_equal(batch_validate_append(buf, len, 0, &h, &m, &why), 0);
    assert_int_equal(m, 300);
    uint8_t copy[256];
    memcpy(copy, buf, len);
    assert_false(batch_stamp_timestamps(buf, len, &h, false, m));
    assert_memory_equal(buf, copy, len);
    const int64_t claims[] = {-1, 0, 299, 1000};
    for (size_t i = 0; i < ARRAY_LEN(claims); i++) {
        be64_store(buf + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)claims[i]);
        batch_seal_crc(buf, len);
        if (claims[i] < 300) /* the read rule still refuses it */
            assert_int_equal(batch_validate(buf, len, 0, &h, &why), RT_E_CORRUPT);
        m = 0;
        assert_int_equal(batch_validate_append(buf, len, 0, &h, &m, &why), 0);
        assert_int_equal(m, 300);
        assert_true(batch_stamp_timestamps(buf, len, &h, false, m));
        assert_int_equal(h.max_timestamp, 300);
        assert_memory_equal(buf, copy, len); /* exactly the builder's bytes again, CRC too */
        assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    }
    /* LogAppendTime: bit 3 set, maxTimestamp the clock; CRC sealed; idempotent. */
    assert_true(batch_stamp_timestamps(buf, len, &h, true, 12345));
    assert_int_equal(h.attributes, BATCH_ATTR_LOG_APPEND_TIME);
    assert_int_equal(be64_load(buf + BATCH_OFF_MAX_TIMESTAMP), 12345);
    assert_int_equal(batch_validate(buf, len, 0, &h, &why), 0);
    assert_false(batch_stamp_timestamps(buf, len, &h, true, 12345));
    /* Back to CreateTime clears the bit and takes the measured max. */
    assert_int_equal(batch_validate_append(buf, len, 0, &h, &m, &why), 0);
    assert_int_equal(m, 300);
    assert_true(batch_stamp_timestamps(buf, len, &h, false, m));
    assert_memory_equal(buf, copy, len);
    /* V16 keeps the overflow rule, whatever the timestamp type. */
    be16_store(buf + BATCH_OFF_ATTRIBUTES, BATCH_ATTR_LOG_APPEND_TIME);
    be64_store(buf + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)INT64_MAX - 10);
    batch_seal_crc(buf, len);
    assert_int_equal(batch_validate_append(buf, len, 0, &h, &m, &why), RT_E_CORRUPT);
    assert_string_equal(why, "record timestamp overflows");
}

/* ---------------------------------------------------------------------------------------- */
/* Corruption                                                                                */
/* ---------------------------------------------------------------------------------------- */

/* Bytes outside the CRC that a writer may stamp: baseOffset @0..7, partitionLeaderEpoch
 * @12..15. */
static bool stampable(size_t i)
{
    return i < 8 || (i >= 12 && i < 16);
}

static void flip_all(const uint8_t *orig, size_t len)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    const uint8_t masks[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff};
    for (size_t i = 0; i < len; i++)
        for (size_t m = 0; m < ARRAY_LEN(masks); m++) {
            memcpy(buf, orig, len);
            buf[i] ^= masks[m];
            const char *why = NULL;
            struct batch_header h;
            int rc = batch_validate(buf, len, 0, &h, &why);
            if (stampable(i)) {
                assert_int_equal(rc, 0);
            } else {
                if (rc != RT_E_CORRUPT)
                    fail_msg("byte %zu mask 0x%02x: rc %d", i, masks[m], rc);
                assert_non_null(why);
            }
        }
    free(buf);
}

static void test_flip_every_byte(void **state)
{
    (void)state;
    flip_all(golden, sizeof golden);
    flip_all(control_commit, sizeof control_commit);
    for (size_t i = 0; i < ARRAY_LEN(kafka_vecs); i++)
        flip_all(kafka_vecs[i].bytes, kafka_vecs[i].len);
}

struct corruption {
    size_t off;
    uint8_t value;
    bool reseal; /* recompute the CRC so the structural check is what fires */
    const char *why;
};

/* Each structural rule, reached with a correct CRC (a writer bug, not a disk error). */
static const struct corruption corruptions[] = {
    {BATCH_OFF_MAGIC, 1, false, "magic is not 2"},                                        /* V3 */
    {BATCH_OFF_RECORD_COUNT, 0xff, true, "negative record count"},                        /* V4 */
    {BATCH_OFF_LAST_OFFSET_DELTA, 0xff, true, "negative lastOffsetDelta"},                /* V5 */
    {BATCH_OFF_CRC + 3, 0x00, false, "crc mismatch"},                                     /* V8 */
    {BATCH_OFF_ATTRIBUTES, 0x01, true, "unknown attribute bits set"},                     /* V9 */
    {BATCH_OFF_ATTRIBUTES + 1, 0x80, true, "unknown attribute bits set"},                 /* V9 */
    {BATCH_OFF_ATTRIBUTES + 1, 0x05, true, "unknown compression codec"},                  /* V9 */
    {BATCH_OFF_LAST_OFFSET_DELTA + 3, 2, true, "lastOffsetDelta is not recordCount - 1"}, /* V10 */
    {GOLDEN_REC0 + 0, 0x1c, true, "record length does not match its fields"},             /* V12 */
    {GOLDEN_REC1 + 0, 0x10, true, "record length beyond batch end"},                      /* V12 */
    {GOLDEN_REC0 + 1, 0x01, true, "record attributes not zero"},                          /* V12 */
    {GOLDEN_REC0 + 4, 0x64, true, "record key beyond record end"},                        /* V12 */
    {GOLDEN_REC1 + 4, 0x03, true, "record key length below -1"},                          /* V12 */
    {GOLDEN_REC0 + 7, 0x7e, true, "record value beyond record end"},                      /* V12 */
    {GOLDEN_REC1 + 5, 0x05, true, "record value length below -1"},                        /* V12 */
    {GOLDEN_REC0 + 9, 0x06, true, "record header count exceeds record bytes"},            /* V12 */
    {GOLDEN_REC0 + 9, 0x04, true, "header key length truncated or over-long"},            /* V12 */
    {GOLDEN_REC1 + 6, 0x01, true, "record header count negative"},                        /* V12 */
    {GOLDEN_REC0 + 10, 0x01, true, "header key length negative (header keys are never null)"},
    {GOLDEN_REC0 + 12, 0x03, true, "header value length below -1"},                   /* V12 */
    {GOLDEN_REC0 + 12, 0x06, true, "header value beyond record end"},                 /* V12 */
    {GOLDEN_REC1 + 6, 0x80, true, "record header count truncated or over-long"},      /* V12 */
    {GOLDEN_REC1 + 3, 0x0a, true, "record offsetDelta out of sequence"},              /* V13 */
    {BATCH_OFF_MAX_TIMESTAMP + 7, 0x09, true, "record timestamp above maxTimestamp"}, /* V14 */
};

static void test_structural_rules(void **state)
{
    (void)state;
    uint8_t buf[sizeof golden];
    for (size_t i = 0; i < ARRAY_LEN(corruptions); i++) {
        const struct corruption *c = &corruptions[i];
        memcpy(buf, golden, sizeof golden);
        buf[c->off] = c->value;
        if (c->reseal)
            batch_seal_crc(buf, sizeof buf);
        const char *why = NULL;
        struct batch_header h;
        int rc = batch_validate(buf, sizeof buf, 0, &h, &why);
        if (rc != RT_E_CORRUPT || why == NULL || strcmp(why, c->why) != 0)
            fail_msg("case %zu (byte %zu = 0x%02x): rc %d why \"%s\", want \"%s\"", i, c->off,
                     c->value, rc, why ? why : "(null)", c->why);
    }

    /* recordCount and lastOffsetDelta both one higher / lower than the records (V11). */
    const char *why = NULL;
    struct batch_header h;
    memcpy(buf, golden, sizeof golden);
    be32_store(buf + BATCH_OFF_RECORD_COUNT, 3);
    be32_store(buf + BATCH_OFF_LAST_OFFSET_DELTA, 2);
    batch_seal_crc(buf, sizeof buf);
    assert_int_equal(batch_validate(buf, sizeof buf, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "fewer records than recordCount");
    be32_store(buf + BATCH_OFF_RECORD_COUNT, 1);
    be32_store(buf + BATCH_OFF_LAST_OFFSET_DELTA, 0);
    batch_seal_crc(buf, sizeof buf);
    assert_int_equal(batch_validate(buf, sizeof buf, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "bytes after the last record");

    /* A compressed batch is checked through V10 only: its records are opaque here. */
    memcpy(buf, golden, sizeof golden);
    buf[BATCH_OFF_ATTRIBUTES + 1] |= BATCH_COMPRESSION_ZSTD;
    buf[GOLDEN_REC0] = 0xff; /* not a record any more */
    batch_seal_crc(buf, sizeof buf);
    assert_int_equal(batch_validate(buf, sizeof buf, 0, &h, &why), 0);
    assert_int_equal(h.attributes & BATCH_ATTR_COMPRESSION_MASK, BATCH_COMPRESSION_ZSTD);

    /* V6: a buffer holding more than the batch. */
    uint8_t two[2 * sizeof golden];
    memcpy(two, golden, sizeof golden);
    memcpy(two + sizeof golden, golden, sizeof golden);
    assert_int_equal(batch_validate(two, sizeof two, 0, &h, &why), RT_E_CORRUPT);
    assert_string_equal(why, "buffer does not end where the batch ends");
    assert_int_equal(batch_header_parse(two, sizeof two, &h, &why), 0);
    assert_true(batch_size_at(two, sizeof two, &why) == (int64_t)sizeof golden);
}

/* V1/V2: a batch cut at every length. */
static void test_truncation_every_length(void **state)
{
    (void)state;
    const char *why = NULL;
    struct batch_header h;
    for (size_t n = 0; n < sizeof golden; n++) {
        why = NULL;
        assert_int_equal(batch_validate(golden, n, 0, &h, &why), RT_E_CORRUPT);
        assert_non_null(why);
        assert_int_equal(batch_header_parse(golden, n, &h, &why), RT_E_CORRUPT);
        assert_true(batch_size_at(golden, n, &why) == RT_E_CORRUPT);
        if (n >= BATCH_LOG_OVERHEAD_BYTES)
            assert_string_equal(why, "batch length field beyond buffer end");
        else
            assert_string_equal(why, "fewer than 12 bytes: no batch length");
    }
    /* The records region cut at every length, with the length field and CRC made to agree:
     * records must then fail on their own bounds. */
    uint8_t buf[sizeof golden];
    for (size_t n = BATCH_HEADER_BYTES; n < sizeof golden; n++) {
        memcpy(buf, golden, n);
        be32_store(buf + BATCH_OFF_LENGTH, (uint32_t)(n - BATCH_LOG_OVERHEAD_BYTES));
        batch_seal_crc(buf, n);
        assert_int_equal(batch_validate(buf, n, 0, &h, &why), RT_E_CORRUPT);
    }
    /* Length field below 49. */
    memcpy(buf, golden, sizeof golden);
    be32_store(buf + BATCH_OFF_LENGTH, 48);
    assert_true(batch_size_at(buf, sizeof buf, &why) == RT_E_CORRUPT);
    assert_string_equal(why, "batch length field below 49");
    be32_store(buf + BATCH_OFF_LENGTH, 0x80000000u);
    assert_true(batch_size_at(buf, sizeof buf, &why) == RT_E_CORRUPT);
}

/* Records decoded on their own stop at every truncation. */
static void test_record_truncation(void **state)
{
    (void)state;
    const char *why = NULL;
    struct record_view r;
    const uint8_t *rec = golden + GOLDEN_REC0;
    for (size_t n = 0; n < 14; n++)
        assert_int_equal(record_decode(rec, rec + n, &r, &why), RT_E_CORRUPT);
    assert_int_equal(record_decode(rec, rec + 14, &r, &why), 14);
    const uint8_t *hdr = golden + GOLDEN_REC0 + 10;
    struct rt_header h;
    for (size_t n = 0; n < 4; n++)
        assert_int_equal(record_header_decode(hdr, hdr + n, &h, &why), RT_E_CORRUPT);
    assert_int_equal(record_header_decode(hdr, hdr + 4, &h, &why), 4);
    /* why may be NULL. */
    assert_int_equal(record_decode(rec, rec + 3, &r, NULL), RT_E_CORRUPT);
}

/* V7: the size limit applies to the whole batch, 12-byte log overhead included (as Kafka's
 * max.message.bytes), and is checked before the CRC. */
static void test_oversized(void **state)
{
    (void)state;
    const char *why = NULL;
    struct batch_header h;
    assert_int_equal(batch_validate(golden, sizeof golden, sizeof golden, &h, &why), 0);
    assert_int_equal(batch_validate(golden, sizeof golden, sizeof golden - 1, &h, &why),
                     RT_E_RECORD_TOO_LARGE);
    assert_string_equal(why, "batch larger than the maximum batch size");
    uint8_t buf[sizeof golden];
    memcpy(buf, golden, sizeof golden);
    buf[40] ^= 1; /* bad CRC too: size wins, it is the cheaper check */
    assert_int_equal(batch_validate(buf, sizeof buf, 64, &h, &why), RT_E_RECORD_TOO_LARGE);
    assert_int_equal(batch_validate(buf, sizeof buf, 0, &h, &why), RT_E_CORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_known_bytes),
        cmocka_unit_test(test_varint_boundaries),
        cmocka_unit_test(test_varint_rejects),
        cmocka_unit_test(test_golden_batch_by_hand),
        cmocka_unit_test(test_kafka_broker_batches),
        cmocka_unit_test(test_sarama_vectors),
        cmocka_unit_test(test_control_batch_layout),
        cmocka_unit_test(test_control_record_parse_rejects),
        cmocka_unit_test(test_control_batch_rules),
        cmocka_unit_test(test_roundtrip_many),
        cmocka_unit_test(test_roundtrip_null_and_empty),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_builder_timestamps),
        cmocka_unit_test(test_append_rules_v16_v17),
        cmocka_unit_test(test_flip_every_byte),
        cmocka_unit_test(test_structural_rules),
        cmocka_unit_test(test_truncation_every_length),
        cmocka_unit_test(test_record_truncation),
        cmocka_unit_test(test_oversized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
