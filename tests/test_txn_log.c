/*
 * test_txn_log.c — the `__transaction_state` codec (engine/txn/txn_log.c, docs/format.md §G): the
 * exact bytes of a key and of a value (derived by hand from Kafka's TransactionLogKey.json and
 * TransactionLogValue.json), Kafka v0 values built by hand, round trips over every state and
 * over 0, 1 and many partitions, every truncation, and each rule (TLK1-TLK5, TLV1-TLV16) broken
 * once on both the decode and the encode side. Pure codec tests: no engine, no files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/test_util.h"
#include "txn_log.h"

/* test_util.c calls rt_options_init; a strong definition in libringtail wins. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* ---- hand-derived vectors ---- */

/* Key "tx-1". */
static const uint8_t KEY_TX1[] = {
    0x00, 0x00,            /* version 0 */
    0x00, 0x04,            /* id length 4 */
    0x74, 0x78, 0x2D, 0x31 /* "tx-1" */
};

/*
 * ringtail value 0x7201: producer 1000, epoch 5, timeout 60 s, Ongoing, partitions
 * orders-0, orders-2, pay-1, last update 1700000000000, started 1699999999000, two check-backs,
 * hanging. Field offsets are in the comments (used by the rule tests below).
 */
static const uint8_t VALUE_EX[] = {
    0x72, 0x01,                                     /* @0  version 0x7201 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8, /* @2  producer_id 1000 */
    0x00, 0x05,                                     /* @10 producer_epoch 5 */
    0x00, 0x00, 0xEA, 0x60,                         /* @12 timeout_ms 60000 */
    0x01,                                           /* @16 state Ongoing */
    0x00, 0x00, 0x00, 0x02,                         /* @17 two topics */
    0x00, 0x06,                                     /* @21 topic length 6 */
    0x6F, 0x72, 0x64, 0x65, 0x72, 0x73,             /* @23 "orders" */
    0x00, 0x00, 0x00, 0x02,                         /* @29 two partition ids */
    0x00, 0x00, 0x00, 0x00,                         /* @33 0 */
    0x00, 0x00, 0x00, 0x02,                         /* @37 2 */
    0x00, 0x03,                                     /* @41 topic length 3 */
    0x70, 0x61, 0x79,                               /* @43 "pay" */
    0x00, 0x00, 0x00, 0x01,                         /* @46 one partition id */
    0x00, 0x00, 0x00, 0x01,                         /* @50 1 */
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, /* @54 last_update_ms 1700000000000 */
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x64, 0x18, /* @62 start_ms 1699999999000 */
    0x00, 0x00, 0x00, 0x02,                         /* @70 check_count 2 */
    0x01,                                           /* @74 flags: hanging */
};
#define EX_STATE       16
#define EX_TOPIC_COUNT 17
#define EX_TOPIC1_LEN  21
#define EX_TOPIC1      23
#define EX_IDS1_COUNT  29
#define EX_ID1_1       37
#define EX_ID2         50
#define EX_CHECK_COUNT 70
#define EX_FLAGS       74

/* Kafka value v0 as Kafka writes an Empty transactional id: producer 7, epoch 0, timeout 60 s,
 * partitions null, last update 1700000000000, no transaction started (-1). */
static const uint8_t KAFKA_V0_EMPTY[] = {
    0x00, 0x00,                                     /* version 0 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* producer_id 7 */
    0x00, 0x00,                                     /* producer_epoch 0 */
    0x00, 0x00, 0xEA, 0x60,                         /* timeout_ms 60000 */
    0x00,                                           /* state Empty */
    0xFF, 0xFF, 0xFF, 0xFF,                         /* partitions null */
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, /* last_update_ms */
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* start_ms -1 */
};

/* Kafka value v0, PrepareCommit over t-3 and t-4: producer 9, epoch 1, timeout 900000. */
static const uint8_t KAFKA_V0_PREPARE[] = {
    0x00, 0x00,                                     /* version 0 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, /* producer_id 9 */
    0x00, 0x01,                                     /* producer_epoch 1 */
    0x00, 0x0D, 0xBB, 0xA0,                         /* timeout_ms 900000 */
    0x02,                                           /* state PrepareCommit */
    0x00, 0x00, 0x00, 0x01,                         /* one topic */
    0x00, 0x01, 0x74,                               /* "t" */
    0x00, 0x00, 0x00, 0x02,                         /* two ids */
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, /* 3, 4 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, /* last_update_ms 100 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, /* start_ms 50 */
};

/* Kafka value v0, CompleteCommit: partitions an empty list (count 0). */
static const uint8_t KAFKA_V0_COMPLETE[] = {
    0x00, 0x00,                                     /* version 0 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, /* producer_id 9 */
    0x00, 0x01,                                     /* producer_epoch 1 */
    0x00, 0x0D, 0xBB, 0xA0,                         /* timeout_ms 900000 */
    0x04,                                           /* state CompleteCommit */
    0x00, 0x00, 0x00, 0x00,                         /* zero topics */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x65, /* last_update_ms 101 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, /* start_ms 50 */
};

/* ---- helpers ---- */

static struct txn_log_partition part(const char *topic, uint32_t partition)
{
    struct txn_log_partition p;
    memset(&p, 0, sizeof(p));
    snprintf(p.topic, sizeof(p.topic), "%s", topic);
    p.partition = partition;
    return p;
}

static struct txn_log_value example_value(struct txn_log_partition *parts)
{
    parts[0] = part("orders", 0);
    parts[1] = part("orders", 2);
    parts[2] = part("pay", 1);
    struct txn_log_value v = {
        .producer_id = 1000,
        .producer_epoch = 5,
        .timeout_ms = 60000,
        .state = TXN_ONGOING,
        .partition_count = 3,
        .partitions = parts,
        .last_update_ms = 1700000000000,
        .start_ms = 1699999999000,
        .check_count = 2,
        .hanging = true,
    };
    return v;
}

static void assert_same_value(const struct txn_log_value *a, const struct txn_log_value *b)
{
    assert_int_equal(a->producer_id, b->producer_id);
    assert_int_equal(a->producer_epoch, b->producer_epoch);
    assert_int_equal(a->timeout_ms, b->timeout_ms);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->partition_count, b->partition_count);
    for (uint32_t i = 0; i < a->partition_count; i++) {
        assert_string_equal(a->partitions[i].topic, b->partitions[i].topic);
        assert_int_equal(a->partitions[i].partition, b->partitions[i].partition);
    }
    assert_int_equal(a->last_update_ms, b->last_update_ms);
    assert_int_equal(a->start_ms, b->start_ms);
    assert_int_equal(a->check_count, b->check_count);
    assert_int_equal(a->hanging, b->hanging);
    assert_int_equal(a->acked_durable, b->acked_durable);
}

/* Decoding must fail with RT_E_CORRUPT and a reason starting with `rule` ("TLV7 "). */
static void expect_value_corrupt(const uint8_t *buf, size_t len, const char *rule)
{
    struct txn_log_value v;
    const char *why = NULL;
    int rc = txn_log_value_decode(buf, len, &v, &why);
    if (rc != RT_E_CORRUPT || !why || strncmp(why, rule, strlen(rule)) != 0)
        fail_msg("len %zu: expected %s, got rc %d why \"%s\"", len, rule, rc, why ? why : "");
    assert_null(v.partitions);
}

static void expect_key_corrupt(const uint8_t *buf, size_t len, const char *rule)
{
    char id[TXN_ID_MAX_BYTES + 1];
    const char *why = NULL;
    int rc = txn_log_key_decode(buf, len, id, &why);
    if (rc != RT_E_CORRUPT || !why || strncmp(why, rule, strlen(rule)) != 0)
        fail_msg("len %zu: expected %s, got rc %d why \"%s\"", len, rule, rc, why ? why : "");
}

/* Copy of VALUE_EX with `n` bytes at `at` replaced. */
static void patched(uint8_t *out, size_t at, const uint8_t *bytes, size_t n)
{
    memcpy(out, VALUE_EX, sizeof(VALUE_EX));
    memcpy(out + at, bytes, n);
}

/* A tiny big-endian writer for the hand-built values below. */
struct wb {
    uint8_t *b;
    size_t n;
};
static void w8(struct wb *w, uint8_t v)
{
    w->b[w->n++] = v;
}
static void w16(struct wb *w, uint16_t v)
{
    w8(w, (uint8_t)(v >> 8));
    w8(w, (uint8_t)v);
}
static void w32(struct wb *w, uint32_t v)
{
    w16(w, (uint16_t)(v >> 16));
    w16(w, (uint16_t)v);
}
static void w64(struct wb *w, uint64_t v)
{
    w32(w, (uint32_t)(v >> 32));
    w32(w, (uint32_t)v);
}
static void wstr(struct wb *w, const char *s)
{
    w16(w, (uint16_t)strlen(s));
    memcpy(w->b + w->n, s, strlen(s));
    w->n += strlen(s);
}
/* Head of a ringtail value (Ongoing) up to and including the topic count. */
static void whead(struct wb *w, int32_t topics)
{
    w16(w, 0x7201);
    w64(w, 1);
    w16(w, 0);
    w32(w, 1000);
    w8(w, TXN_ONGOING);
    w32(w, (uint32_t)topics);
}
static void wtail(struct wb *w)
{
    w64(w, 5);
    w64(w, 4);
    w32(w, 0);
    w8(w, 0);
}

/* ---- key ---- */

static void test_key_bytes(void **state)
{
    (void)state;
    uint8_t buf[64];
    size_t len = 0;
    assert_int_equal(txn_log_key_encode("tx-1", buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(KEY_TX1));
    assert_memory_equal(buf, KEY_TX1, sizeof(KEY_TX1));

    char id[TXN_ID_MAX_BYTES + 1];
    const char *why = NULL;
    assert_int_equal(txn_log_key_decode(KEY_TX1, sizeof(KEY_TX1), id, &why), 0);
    assert_string_equal(id, "tx-1");

    /* exactly the size needed fits; one byte less does not */
    assert_int_equal(txn_log_key_encode("tx-1", buf, sizeof(KEY_TX1), &len), 0);
    assert_int_equal(txn_log_key_encode("tx-1", buf, sizeof(KEY_TX1) - 1, &len), -ENOSPC);
}

static void test_key_round_trips(void **state)
{
    (void)state;
    static uint8_t buf[TXN_ID_MAX_BYTES + 8];
    char id[TXN_ID_MAX_BYTES + 1];
    char longest[TXN_ID_MAX_BYTES + 1];
    memset(longest, 'x', TXN_ID_MAX_BYTES);
    longest[TXN_ID_MAX_BYTES] = '\0';
    const char *ids[] = {"a",    "payments-7", "caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80 ok",
                         longest};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        size_t len = 0;
        assert_int_equal(txn_log_key_encode(ids[i], buf, sizeof(buf), &len), 0);
        assert_int_equal(len, 4 + strlen(ids[i]));
        assert_int_equal(txn_log_key_decode(buf, len, id, NULL), 0);
        assert_string_equal(id, ids[i]);
    }
}

static void test_key_encode_rejects(void **state)
{
    (void)state;
    uint8_t buf[TXN_ID_MAX_BYTES + 8];
    size_t len = 0;
    char too_long[TXN_ID_MAX_BYTES + 2];
    memset(too_long, 'x', TXN_ID_MAX_BYTES + 1);
    too_long[TXN_ID_MAX_BYTES + 1] = '\0';
    assert_int_equal(txn_log_key_encode(NULL, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    assert_int_equal(txn_log_key_encode("", buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    assert_int_equal(txn_log_key_encode(too_long, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    assert_int_equal(txn_log_key_encode("bad\xC3", buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    assert_int_equal(txn_log_key_encode("\xED\xA0\x80", buf, sizeof(buf), &len),
                     RT_E_INVALID_ARGUMENT);
}

static void test_key_truncations(void **state)
{
    (void)state;
    expect_key_corrupt(KEY_TX1, 0, "TLK1 ");
    expect_key_corrupt(KEY_TX1, 1, "TLK1 ");
    for (size_t len = 2; len < sizeof(KEY_TX1); len++)
        expect_key_corrupt(KEY_TX1, len, "TLK3 ");
}

static void test_key_rules(void **state)
{
    (void)state;
    /* TLK1 version */
    const uint8_t v1[] = {0x00, 0x01, 0x00, 0x01, 0x61};
    expect_key_corrupt(v1, sizeof(v1), "TLK1 ");
    const uint8_t vneg[] = {0xFF, 0xFF, 0x00, 0x01, 0x61};
    expect_key_corrupt(vneg, sizeof(vneg), "TLK1 ");
    /* TLK2 null, empty, too long (1025) */
    const uint8_t null_id[] = {0x00, 0x00, 0xFF, 0xFF};
    expect_key_corrupt(null_id, sizeof(null_id), "TLK2 ");
    const uint8_t empty_id[] = {0x00, 0x00, 0x00, 0x00};
    expect_key_corrupt(empty_id, sizeof(empty_id), "TLK2 ");
    static uint8_t big[4 + TXN_ID_MAX_BYTES + 1];
    memset(big, 'x', sizeof(big));
    big[0] = 0x00;
    big[1] = 0x00;
    big[2] = (uint8_t)((TXN_ID_MAX_BYTES + 1) >> 8);
    big[3] = (uint8_t)(TXN_ID_MAX_BYTES + 1);
    expect_key_corrupt(big, sizeof(big), "TLK2 ");
    /* ...while exactly TXN_ID_MAX_BYTES is accepted */
    big[2] = (uint8_t)(TXN_ID_MAX_BYTES >> 8);
    big[3] = (uint8_t)TXN_ID_MAX_BYTES;
    char id[TXN_ID_MAX_BYTES + 1];
    assert_int_equal(txn_log_key_decode(big, sizeof(big) - 1, id, NULL), 0);
    assert_int_equal(strlen(id), TXN_ID_MAX_BYTES);
    /* TLK3 trailing byte */
    const uint8_t trailing[] = {0x00, 0x00, 0x00, 0x01, 0x61, 0x00};
    expect_key_corrupt(trailing, sizeof(trailing), "TLK3 ");
    /* TLK4 NUL inside the id */
    const uint8_t nul[] = {0x00, 0x00, 0x00, 0x03, 0x61, 0x00, 0x62};
    expect_key_corrupt(nul, sizeof(nul), "TLK4 ");
    /* TLK5: stray continuation, truncated sequence, overlong '/', surrogate, above U+10FFFF */
    const uint8_t bad[][7] = {
        {0x00, 0x00, 0x00, 0x03, 0x61, 0x80, 0x62}, {0x00, 0x00, 0x00, 0x03, 0x61, 0x62, 0xC3},
        {0x00, 0x00, 0x00, 0x03, 0x61, 0xC0, 0xAF}, {0x00, 0x00, 0x00, 0x03, 0xED, 0xA0, 0x80},
        {0x00, 0x00, 0x00, 0x03, 0xE0, 0x80, 0xAF}, {0x00, 0x00, 0x00, 0x03, 0xF5, 0x80, 0x80},
        {0x00, 0x00, 0x00, 0x03, 0xFF, 0x61, 0x61},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_key_corrupt(bad[i], sizeof(bad[i]), "TLK5 ");
    const uint8_t astral[] = {0x00, 0x00, 0x00, 0x04, 0xF4, 0x90, 0x80, 0x80}; /* U+110000 */
    expect_key_corrupt(astral, sizeof(astral), "TLK5 ");
    const uint8_t max_cp[] = {0x00, 0x00, 0x00, 0x04, 0xF4, 0x8F, 0xBF, 0xBF}; /* U+10FFFF */
    assert_int_equal(txn_log_key_decode(max_cp, sizeof(max_cp), id, NULL), 0);
}

/* ---- value ---- */

static void test_value_bytes(void **state)
{
    (void)state;
    struct txn_log_partition parts[3];
    struct txn_log_value v = example_value(parts);
    assert_int_equal(txn_log_value_size(&v), sizeof(VALUE_EX));
    uint8_t buf[128];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(VALUE_EX));
    assert_memory_equal(buf, VALUE_EX, sizeof(VALUE_EX));
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(VALUE_EX) - 1, &len), -ENOSPC);

    struct txn_log_value d;
    const char *why = NULL;
    assert_int_equal(txn_log_value_decode(VALUE_EX, sizeof(VALUE_EX), &d, &why), 0);
    assert_same_value(&v, &d);
    txn_log_value_free(&d);
    assert_null(d.partitions);
    assert_int_equal(d.partition_count, 0);
    txn_log_value_free(&d); /* twice is harmless */
}

static void round_trip(const struct txn_log_value *v)
{
    size_t size = txn_log_value_size(v);
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(v, buf, size, &len), 0);
    assert_int_equal(len, size);
    struct txn_log_value d;
    const char *why = NULL;
    int rc = txn_log_value_decode(buf, len, &d, &why);
    if (rc)
        fail_msg("decode: %d %s", rc, why);
    assert_same_value(v, &d);
    /* and the bytes again */
    uint8_t *again = malloc(size);
    assert_non_null(again);
    size_t len2 = 0;
    assert_int_equal(txn_log_value_encode(&d, again, size, &len2), 0);
    assert_int_equal(len2, len);
    assert_memory_equal(buf, again, len);
    free(again);
    txn_log_value_free(&d);
    free(buf);
}

static void test_value_round_trips_each_state(void **state)
{
    (void)state;
    struct txn_log_partition one = part("t", 0);
    for (int s = TXN_EMPTY; s <= TXN_PREPARE_EPOCH_FENCE; s++) {
        struct txn_log_value v = {
            .producer_id = s == TXN_DEAD ? -1 : 42,
            .producer_epoch = s == TXN_DEAD ? -1 : (int16_t)s,
            .timeout_ms = 0,
            .state = (enum txn_state)s,
            .last_update_ms = -1,
            .start_ms = INT64_MIN,
            .check_count = (uint32_t)s,
            .hanging = s & 1,
            .acked_durable = (s & 2) != 0,
        };
        round_trip(&v); /* no partitions: null for Empty, an empty list otherwise */
        if (s != TXN_EMPTY) {
            v.partition_count = 1;
            v.partitions = &one;
            v.start_ms = INT64_MAX;
            v.check_count = INT32_MAX;
            round_trip(&v);
        }
    }
}

static void test_value_empty_is_null(void **state)
{
    (void)state;
    struct txn_log_value v = {.producer_id = 3, .state = TXN_EMPTY, .timeout_ms = 10};
    uint8_t buf[64];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, 21 + 16 + 5);
    const uint8_t null_count[] = {0xFF, 0xFF, 0xFF, 0xFF};
    assert_memory_equal(buf + 17, null_count, 4);
    v.state = TXN_COMPLETE_ABORT;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    const uint8_t zero_count[] = {0x00, 0x00, 0x00, 0x00};
    assert_memory_equal(buf + 17, zero_count, 4);
}

static void test_value_round_trip_many(void **state)
{
    (void)state;
    /* 7 topics, grouped, with 1, 2, ... 400 partitions: 4 + 9 + ... + a long one */
    const char *topics[] = {"a", "orders", "orders.v2", "x_y-z", "T", "long-topic-name", "z"};
    const uint32_t counts[] = {1, 2, 17, 400, 3, 1000, 1};
    uint32_t n = 0;
    for (size_t t = 0; t < 7; t++)
        n += counts[t];
    struct txn_log_partition *parts = calloc(n, sizeof(*parts));
    assert_non_null(parts);
    uint32_t k = 0;
    for (size_t t = 0; t < 7; t++)
        for (uint32_t i = 0; i < counts[t]; i++)
            parts[k++] = part(topics[t], counts[t] - 1 - i); /* descending: order is kept */
    struct txn_log_value v = {
        .producer_id = INT64_MAX,
        .producer_epoch = INT16_MAX,
        .timeout_ms = INT32_MAX,
        .state = TXN_PREPARE_ABORT,
        .partition_count = n,
        .partitions = parts,
        .last_update_ms = 1,
        .start_ms = 0,
    };
    assert_int_equal(txn_log_value_size(&v),
                     21 + 16 + 5 + n * 4 + 7 * 6 + (1 + 6 + 9 + 5 + 1 + 15 + 1));
    round_trip(&v);

    /* the largest partition id and TXN_LOG_PARTITIONS_MAX pairs of one topic */
    free(parts);
    parts = calloc(TXN_LOG_PARTITIONS_MAX, sizeof(*parts));
    assert_non_null(parts);
    for (uint32_t i = 0; i < TXN_LOG_PARTITIONS_MAX; i++)
        parts[i] = part("big", i == 0 ? INT32_MAX : i);
    v.partitions = parts;
    v.partition_count = TXN_LOG_PARTITIONS_MAX;
    round_trip(&v);
    free(parts);
}

static void test_value_interleaved_topics(void **state)
{
    (void)state;
    /* a topic that comes back after another is written as a second entry and still decodes */
    struct txn_log_partition parts[3] = {part("a", 0), part("b", 0), part("a", 1)};
    struct txn_log_value v = {.state = TXN_ONGOING, .partition_count = 3, .partitions = parts};
    uint8_t buf[128];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, 21 + 16 + 5 + 3 * (2 + 1 + 4 + 4));
    assert_int_equal(be32_of(buf + 17), 3);
    struct txn_log_value d;
    assert_int_equal(txn_log_value_decode(buf, len, &d, NULL), 0);
    assert_same_value(&v, &d);
    txn_log_value_free(&d);
}

static void test_value_kafka_v0(void **state)
{
    (void)state;
    struct txn_log_value d;
    const char *why = NULL;

    assert_int_equal(txn_log_value_decode(KAFKA_V0_EMPTY, sizeof(KAFKA_V0_EMPTY), &d, &why), 0);
    assert_int_equal(d.producer_id, 7);
    assert_int_equal(d.producer_epoch, 0);
    assert_int_equal(d.timeout_ms, 60000);
    assert_int_equal(d.state, TXN_EMPTY);
    assert_int_equal(d.partition_count, 0);
    assert_null(d.partitions);
    assert_int_equal(d.last_update_ms, 1700000000000);
    assert_int_equal(d.start_ms, -1);
    assert_int_equal(d.check_count, 0);
    assert_false(d.hanging);
    txn_log_value_free(&d);

    assert_int_equal(txn_log_value_decode(KAFKA_V0_PREPARE, sizeof(KAFKA_V0_PREPARE), &d, &why), 0);
    assert_int_equal(d.producer_id, 9);
    assert_int_equal(d.producer_epoch, 1);
    assert_int_equal(d.timeout_ms, 900000);
    assert_int_equal(d.state, TXN_PREPARE_COMMIT);
    assert_int_equal(d.partition_count, 2);
    assert_string_equal(d.partitions[0].topic, "t");
    assert_int_equal(d.partitions[0].partition, 3);
    assert_string_equal(d.partitions[1].topic, "t");
    assert_int_equal(d.partitions[1].partition, 4);
    assert_int_equal(d.last_update_ms, 100);
    assert_int_equal(d.start_ms, 50);
    assert_int_equal(d.check_count, 0);
    assert_false(d.hanging);
    /* re-encoded it is ringtail's version: Kafka's bytes with 0x7201 and five more bytes */
    uint8_t buf[128];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&d, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(KAFKA_V0_PREPARE) + 5);
    assert_int_equal(buf[0], 0x72);
    assert_int_equal(buf[1], 0x01);
    assert_memory_equal(buf + 2, KAFKA_V0_PREPARE + 2, sizeof(KAFKA_V0_PREPARE) - 2);
    const uint8_t ext[] = {0, 0, 0, 0, 0};
    assert_memory_equal(buf + sizeof(KAFKA_V0_PREPARE), ext, 5);
    txn_log_value_free(&d);

    assert_int_equal(txn_log_value_decode(KAFKA_V0_COMPLETE, sizeof(KAFKA_V0_COMPLETE), &d, &why),
                     0);
    assert_int_equal(d.state, TXN_COMPLETE_COMMIT);
    assert_int_equal(d.partition_count, 0);
    assert_int_equal(d.last_update_ms, 101);
    txn_log_value_free(&d);

    /* a v0 value carrying ringtail's extension bytes is trailing garbage to v0 */
    uint8_t longer[sizeof(KAFKA_V0_COMPLETE) + 5] = {0};
    memcpy(longer, KAFKA_V0_COMPLETE, sizeof(KAFKA_V0_COMPLETE));
    expect_value_corrupt(longer, sizeof(longer), "TLV13 ");
}

static void test_value_truncations(void **state)
{
    (void)state;
    const struct {
        const uint8_t *b;
        size_t n;
    } vecs[] = {
        {VALUE_EX, sizeof(VALUE_EX)},
        {KAFKA_V0_EMPTY, sizeof(KAFKA_V0_EMPTY)},
        {KAFKA_V0_PREPARE, sizeof(KAFKA_V0_PREPARE)},
        {KAFKA_V0_COMPLETE, sizeof(KAFKA_V0_COMPLETE)},
    };
    size_t checked = 0;
    for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
        /* exact-size copies, so a read past the end is ASan's to see */
        for (size_t len = 0; len < vecs[i].n; len++) {
            uint8_t *copy = malloc(len ? len : 1);
            assert_non_null(copy);
            memcpy(copy, vecs[i].b, len);
            expect_value_corrupt(copy, len, len < 2 ? "TLV1 " : "TLV2 ");
            free(copy);
            checked++;
        }
    }
    assert_int_equal(checked, 75 + 37 + 52 + 37);
}

static void test_value_rules(void **state)
{
    (void)state;
    uint8_t b[sizeof(VALUE_EX) + 8];

    /* TLV1 */
    expect_value_corrupt(VALUE_EX, 0, "TLV1 zero-length");
    patched(b, 0, (const uint8_t[]){0x00, 0x01}, 2); /* Kafka's flexible v1 */
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV1 ");
    patched(b, 0, (const uint8_t[]){0x72, 0x04}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV1 ");
    patched(b, 0, (const uint8_t[]){0xFF, 0xFF}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV1 ");
    /* TLV3 producer_id -2 (and -1 is fine) */
    patched(b, 2, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}, 8);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV3 ");
    struct txn_log_value d;
    patched(b, 2, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 8);
    assert_int_equal(txn_log_value_decode(b, sizeof(VALUE_EX), &d, NULL), 0);
    assert_int_equal(d.producer_id, -1);
    txn_log_value_free(&d);
    /* TLV4 epoch -2 */
    patched(b, 10, (const uint8_t[]){0xFF, 0xFE}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV4 ");
    /* TLV5 timeout -1 */
    patched(b, 12, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV5 ");
    /* TLV6 state 8 and -1 */
    patched(b, EX_STATE, (const uint8_t[]){8}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV6 ");
    patched(b, EX_STATE, (const uint8_t[]){0xFF}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV6 ");
    /* TLV7 topic count -2 and above the limit */
    patched(b, EX_TOPIC_COUNT, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFE}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV7 ");
    patched(b, EX_TOPIC_COUNT, (const uint8_t[]){0x7F, 0xFF, 0xFF, 0xFF}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV7 ");
    /* ...a count the bytes cannot hold is caught before anything is allocated */
    patched(b, EX_TOPIC_COUNT, (const uint8_t[]){0x00, 0x00, 0x00, 0x10}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV2 ");
    /* TLV8 a list in state Empty; null in state Ongoing */
    patched(b, EX_STATE, (const uint8_t[]){TXN_EMPTY}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV8 ");
    uint8_t e[sizeof(KAFKA_V0_EMPTY)];
    memcpy(e, KAFKA_V0_EMPTY, sizeof(e));
    e[16] = TXN_ONGOING;
    expect_value_corrupt(e, sizeof(e), "TLV8 ");
    /* TLV9 "..", a space, an empty name, a NUL, a length above 249 */
    patched(b, EX_TOPIC1, (const uint8_t[]){'o', 'r', 'd', 'e', 'r', ' '}, 6);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV9 ");
    patched(b, EX_TOPIC1, (const uint8_t[]){'o', 'r', 'd', 0, 'r', 's'}, 6);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV9 ");
    patched(b, EX_TOPIC1_LEN, (const uint8_t[]){0x00, 0x00}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV9 ");
    patched(b, EX_TOPIC1_LEN, (const uint8_t[]){0xFF, 0xFF}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV9 ");
    patched(b, EX_TOPIC1_LEN, (const uint8_t[]){0x00, 250}, 2);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV9 ");
    uint8_t dots[64];
    struct wb w = {dots, 0};
    whead(&w, 1);
    wstr(&w, "..");
    w32(&w, 1);
    w32(&w, 0);
    wtail(&w);
    expect_value_corrupt(dots, w.n, "TLV9 ");
    dots[21 + 2 + 1] = 'a'; /* ".a" is a valid name */
    assert_int_equal(txn_log_value_decode(dots, w.n, &d, NULL), 0);
    assert_string_equal(d.partitions[0].topic, ".a");
    txn_log_value_free(&d);
    /* TLV10 an empty and a null id list */
    uint8_t r10[64];
    w = (struct wb){r10, 0};
    whead(&w, 1);
    wstr(&w, "t");
    w32(&w, 0);
    wtail(&w);
    expect_value_corrupt(r10, w.n, "TLV10 ");
    memset(r10 + 21 + 3, 0xFF, 4); /* the id count (after head and "t") becomes -1 */
    expect_value_corrupt(r10, w.n, "TLV10 ");
    /* TLV11 a negative partition id */
    patched(b, EX_ID2, (const uint8_t[]){0x80, 0x00, 0x00, 0x00}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV11 ");
    /* TLV12 check_count -1, an unknown flag */
    patched(b, EX_CHECK_COUNT, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV12 ");
    patched(b, EX_FLAGS, (const uint8_t[]){0x07}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV12 ");
    patched(b, EX_FLAGS, (const uint8_t[]){0x04}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV12 ");
    patched(b, EX_FLAGS, (const uint8_t[]){0x80}, 1);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV12 ");
    /* TLV13 one trailing byte */
    patched(b, 0, (const uint8_t[]){0x72}, 1);
    b[sizeof(VALUE_EX)] = 0;
    expect_value_corrupt(b, sizeof(VALUE_EX) + 1, "TLV13 ");
    /* TLV14 orders-0 twice in one entry; a-1 twice across two entries of "a" */
    patched(b, EX_ID1_1, (const uint8_t[]){0x00, 0x00, 0x00, 0x00}, 4);
    expect_value_corrupt(b, sizeof(VALUE_EX), "TLV14 ");
    uint8_t r14[96];
    w = (struct wb){r14, 0};
    whead(&w, 3);
    wstr(&w, "a");
    w32(&w, 2);
    w32(&w, 0);
    w32(&w, 1);
    wstr(&w, "b");
    w32(&w, 1);
    w32(&w, 1);
    wstr(&w, "a");
    w32(&w, 1);
    w32(&w, 1);
    wtail(&w);
    expect_value_corrupt(r14, w.n, "TLV14 ");
    r14[w.n - 21 - 1] = 2; /* a-2 instead: a set again */
    assert_int_equal(txn_log_value_decode(r14, w.n, &d, NULL), 0);
    assert_int_equal(d.partition_count, 4);
    txn_log_value_free(&d);
    /* TLV14 with two pairs only (the short path) */
    uint8_t two[64];
    w = (struct wb){two, 0};
    whead(&w, 1);
    wstr(&w, "t");
    w32(&w, 2);
    w32(&w, 9);
    w32(&w, 9);
    wtail(&w);
    expect_value_corrupt(two, w.n, "TLV14 ");
}

static void test_value_too_many_pairs(void **state)
{
    (void)state;
    /* TLV7: TXN_LOG_PARTITIONS_MAX + 1 pairs over two topics */
    uint32_t first = TXN_LOG_PARTITIONS_MAX / 2 + 1;
    uint32_t second = TXN_LOG_PARTITIONS_MAX - first + 1;
    size_t size = 21 + 2 * (2 + 1 + 4) + 4 * (size_t)(first + second) + 21;
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    struct wb w = {buf, 0};
    whead(&w, 2);
    wstr(&w, "a");
    w32(&w, first);
    for (uint32_t i = 0; i < first; i++)
        w32(&w, i);
    wstr(&w, "b");
    w32(&w, second);
    for (uint32_t i = 0; i < second; i++)
        w32(&w, i);
    wtail(&w);
    assert_int_equal(w.n, size);
    expect_value_corrupt(buf, size, "TLV7 ");
    free(buf);
}

static void test_value_encode_rejects(void **state)
{
    (void)state;
    struct txn_log_partition parts[3];
    uint8_t buf[256];
    size_t len = 0;
    struct txn_log_value v;
#define REJECT(mutation)                                                                           \
    do {                                                                                           \
        v = example_value(parts);                                                                  \
        mutation;                                                                                  \
        assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT); \
    } while (0)
    REJECT(v.producer_id = -2);                                  /* TLV3 */
    REJECT(v.producer_epoch = -2);                               /* TLV4 */
    REJECT(v.timeout_ms = -1);                                   /* TLV5 */
    REJECT(v.state = (enum txn_state)8);                         /* TLV6 */
    REJECT(v.partition_count = TXN_LOG_PARTITIONS_MAX + 1);      /* TLV7 */
    REJECT(v.state = TXN_EMPTY);                                 /* TLV8 */
    REJECT(v.partitions = NULL);                                 /* no array */
    REJECT(parts[1] = part("..", 0));                            /* TLV9 */
    REJECT(parts[1] = part("a/b", 0));                           /* TLV9 */
    REJECT(parts[1] = part("", 0));                              /* TLV9 */
    REJECT(memset(parts[1].topic, 'a', sizeof(parts[1].topic))); /* TLV9: not terminated */
    REJECT(parts[1].partition = (uint32_t)INT32_MAX + 1);        /* TLV11 */
    REJECT(v.check_count = (uint32_t)INT32_MAX + 1);             /* TLV12 */
    REJECT(parts[1] = part("orders", 0));                        /* TLV14 */
    REJECT(parts[2] = part("orders", 0));                        /* TLV14, not adjacent */
#undef REJECT
    /* a 249-byte topic name is fine */
    v = example_value(parts);
    memset(parts[2].topic, 'q', RT_TOPIC_NAME_MAX);
    parts[2].topic[RT_TOPIC_NAME_MAX] = '\0';
    round_trip(&v);
}

/* Version 0x7202 (a transaction decided in one durable round, coordinator.c CO9): txn_epoch and
 * one last_sequence per pair round-trip in pair order; older versions decode with last_sequence
 * -1; TLV15 is refused on both sides; every truncation is TLV2. */
/* Flag bit 1 (acked_durable, coordinator.c CO13) decodes as written; VALUE_EX (flags 0x01)
 * predates it and decodes false, so an old directory's Ongoing reads as not durable. */
static void test_value_acked_durable_flag(void **state)
{
    (void)state;
    struct txn_log_value d;
    const char *why = NULL;
    assert_int_equal(txn_log_value_decode(VALUE_EX, sizeof(VALUE_EX), &d, &why), 0);
    assert_false(d.acked_durable);
    assert_true(d.hanging);
    txn_log_value_free(&d);
    uint8_t b[sizeof(VALUE_EX)];
    memcpy(b, VALUE_EX, sizeof(b));
    b[74] = 0x02;
    assert_int_equal(txn_log_value_decode(b, sizeof(b), &d, &why), 0);
    assert_true(d.acked_durable);
    assert_false(d.hanging);
    txn_log_value_free(&d);
}

static void test_value_one_round(void **state)
{
    (void)state;
    struct txn_log_partition parts[3];
    struct txn_log_value v = example_value(parts);
    v.state = TXN_PREPARE_COMMIT;
    v.one_round = true;
    v.txn_epoch = 4;
    parts[0].last_sequence = 7;
    parts[1].last_sequence = -1;
    parts[2].last_sequence = 123456;
    uint8_t buf[512];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, txn_log_value_size(&v));
    assert_int_equal(buf[0], 0x72);
    assert_int_equal(buf[1], 0x02);
    struct txn_log_value d;
    const char *why = NULL;
    assert_int_equal(txn_log_value_decode(buf, len, &d, &why), 0);
    assert_same_value(&v, &d);
    assert_true(d.one_round);
    assert_int_equal(d.txn_epoch, 4);
    assert_int_equal(d.partitions[0].last_sequence, 7);
    assert_int_equal(d.partitions[1].last_sequence, -1);
    assert_int_equal(d.partitions[2].last_sequence, 123456);
    txn_log_value_free(&d);
    for (size_t n = 0; n < len; n++)
        expect_value_corrupt(buf, n, n < 2 ? "TLV1 " : "TLV2 ");
    uint8_t longer[520];
    memcpy(longer, buf, len);
    longer[len] = 0;
    expect_value_corrupt(longer, len + 1, "TLV13 ");
    /* TLV15: a negative txn_epoch, a last_sequence below -1, a state that decides nothing */
    uint8_t bad[512];
    size_t seq_at = len - 12, epoch_at = len - 14;
    memcpy(bad, buf, len);
    bad[epoch_at] = 0xFF;
    bad[epoch_at + 1] = 0xFF;
    expect_value_corrupt(bad, len, "TLV15 ");
    memcpy(bad, buf, len);
    memcpy(bad + seq_at, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFE}, 4);
    expect_value_corrupt(bad, len, "TLV15 ");
    memcpy(bad, buf, len);
    bad[16] = TXN_ONGOING;
    expect_value_corrupt(bad, len, "TLV15 ");
    /* encode refuses what decode would */
    v.txn_epoch = -1;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    v.txn_epoch = 4;
    parts[1].last_sequence = -2;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    parts[1].last_sequence = -1;
    v.state = TXN_ONGOING;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    /* without one_round: version 0x7201, and sequences are not written (decoded as -1) */
    v.one_round = false;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(buf[1], 0x01);
    assert_int_equal(txn_log_value_decode(buf, len, &d, &why), 0);
    assert_false(d.one_round);
    assert_int_equal(d.txn_epoch, -1);
    assert_int_equal(d.partitions[0].last_sequence, -1);
    txn_log_value_free(&d);
}

/* Version 0x7203 (a wire transaction decided in one round at a kept epoch, coordinator.c CO12):
 * 0x7202 and one first_offset per pair, round-tripped in pair order; older versions decode with
 * first_offset -1; TLV16 is refused on both sides; every truncation is TLV2; kept_epoch without
 * one_round is refused by the encoder. */
static void test_value_kept_epoch(void **state)
{
    (void)state;
    struct txn_log_partition parts[3];
    struct txn_log_value v = example_value(parts);
    v.state = TXN_PREPARE_ABORT;
    v.one_round = true;
    v.kept_epoch = true;
    v.txn_epoch = 3;
    parts[0].last_sequence = 9;
    parts[0].first_offset = 4000000000LL;
    parts[1].last_sequence = -1;
    parts[1].first_offset = -1;
    parts[2].last_sequence = 5;
    parts[2].first_offset = 0;
    uint8_t buf[512];
    size_t len = 0;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, txn_log_value_size(&v));
    assert_int_equal(buf[0], 0x72);
    assert_int_equal(buf[1], 0x03);
    struct txn_log_value d;
    const char *why = NULL;
    assert_int_equal(txn_log_value_decode(buf, len, &d, &why), 0);
    assert_same_value(&v, &d);
    assert_true(d.one_round);
    assert_true(d.kept_epoch);
    assert_int_equal(d.txn_epoch, 3);
    assert_int_equal(d.partitions[0].last_sequence, 9);
    assert_int_equal(d.partitions[0].first_offset, 4000000000LL);
    assert_int_equal(d.partitions[1].first_offset, -1);
    assert_int_equal(d.partitions[2].first_offset, 0);
    assert_int_equal(d.partitions[2].last_sequence, 5);
    txn_log_value_free(&d);
    for (size_t n = 0; n < len; n++)
        expect_value_corrupt(buf, n, n < 2 ? "TLV1 " : "TLV2 ");
    uint8_t longer[520];
    memcpy(longer, buf, len);
    longer[len] = 0;
    expect_value_corrupt(longer, len + 1, "TLV13 ");
    /* TLV16: a first_offset below -1 (the last pair's: the value's last 8 bytes) */
    uint8_t bad[512];
    memcpy(bad, buf, len);
    memcpy(bad + len - 8, (const uint8_t[]){0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}, 8);
    expect_value_corrupt(bad, len, "TLV16 ");
    /* TLV15 still holds: a state that decides nothing */
    memcpy(bad, buf, len);
    bad[16] = TXN_ONGOING;
    expect_value_corrupt(bad, len, "TLV15 ");
    /* encode refuses what decode would, and kept_epoch without one_round */
    parts[1].first_offset = -2;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    parts[1].first_offset = -1;
    v.one_round = false;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), RT_E_INVALID_ARGUMENT);
    /* 0x7202: first offsets are not written (decoded as -1) */
    v.one_round = true;
    v.kept_epoch = false;
    assert_int_equal(txn_log_value_encode(&v, buf, sizeof(buf), &len), 0);
    assert_int_equal(buf[1], 0x02);
    assert_int_equal(txn_log_value_decode(buf, len, &d, &why), 0);
    assert_false(d.kept_epoch);
    assert_int_equal(d.partitions[0].first_offset, -1);
    assert_int_equal(d.partitions[0].last_sequence, 9);
    txn_log_value_free(&d);
}

static void test_state_names(void **state)
{
    (void)state;
    assert_string_equal(txn_state_name(TXN_EMPTY), "Empty");
    assert_string_equal(txn_state_name(TXN_ONGOING), "Ongoing");
    assert_string_equal(txn_state_name(TXN_PREPARE_COMMIT), "PrepareCommit");
    assert_string_equal(txn_state_name(TXN_PREPARE_ABORT), "PrepareAbort");
    assert_string_equal(txn_state_name(TXN_COMPLETE_COMMIT), "CompleteCommit");
    assert_string_equal(txn_state_name(TXN_COMPLETE_ABORT), "CompleteAbort");
    assert_string_equal(txn_state_name(TXN_DEAD), "Dead");
    assert_string_equal(txn_state_name(TXN_PREPARE_EPOCH_FENCE), "PrepareEpochFence");
    assert_string_equal(txn_state_name((enum txn_state)9), "Unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_bytes),
        cmocka_unit_test(test_key_round_trips),
        cmocka_unit_test(test_key_encode_rejects),
        cmocka_unit_test(test_key_truncations),
        cmocka_unit_test(test_key_rules),
        cmocka_unit_test(test_value_bytes),
        cmocka_unit_test(test_value_round_trips_each_state),
        cmocka_unit_test(test_value_empty_is_null),
        cmocka_unit_test(test_value_round_trip_many),
        cmocka_unit_test(test_value_interleaved_topics),
        cmocka_unit_test(test_value_kafka_v0),
        cmocka_unit_test(test_value_truncations),
        cmocka_unit_test(test_value_rules),
        cmocka_unit_test(test_value_too_many_pairs),
        cmocka_unit_test(test_value_encode_rejects),
        cmocka_unit_test(test_value_acked_durable_flag),
        cmocka_unit_test(test_value_one_round),
        cmocka_unit_test(test_value_kept_epoch),
        cmocka_unit_test(test_state_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
