/*
 * test_kafka_txn_codec.c — the request decoders of tools/kafka/handlers/handle_txn.c
 * (kafka_txn_request_decode: AddPartitionsToTxn v0-1, AddOffsetsToTxn v0-1, EndTxn v0-1,
 * TxnOffsetCommit v0-2), from outside, as a hostile client would feed them: a valid body of
 * each decodes to its fields; the same body cut at every byte, or with a byte left over, is an
 * error and never a crash or a read past the end (ASan watches); array counts larger than the
 * bytes left are refused before anything is reserved; a full arena is KP_E_LIMIT; another API
 * key is RT_E_UNSUPPORTED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/kafka/handlers/handle_txn.h"

struct buf {
    uint8_t b[512];
    size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
    assert_true(b->n + n <= sizeof(b->b));
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void u8(struct buf *b, uint8_t v)
{
    put(b, &v, 1);
}

static void i16(struct buf *b, int16_t v)
{
    uint8_t x[2] = {(uint8_t)((uint16_t)v >> 8), (uint8_t)v};
    put(b, x, 2);
}

static void i32(struct buf *b, int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t x[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    put(b, x, 4);
}

static void i64(struct buf *b, int64_t v)
{
    i32(b, (int32_t)((uint64_t)v >> 32));
    i32(b, (int32_t)(uint32_t)v);
}

static void str(struct buf *b, const char *s)
{
    if (!s) {
        i16(b, -1);
        return;
    }
    i16(b, (int16_t)strlen(s));
    put(b, s, strlen(s));
}

static uint8_t arena_mem[1 << 16];

static int decode(const struct buf *b, size_t n, int16_t key, int16_t v,
                  struct kafka_txn_request *q, size_t arena_bytes)
{
    /* A copy of exactly n bytes on the heap, so a read past them is ASan's to see; it lives
     * until the next decode (the decoded strings point into it). */
    static uint8_t *copy;
    free(copy);
    copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, b->b, n);
    struct kp_arena a;
    kp_arena_init(&a, arena_mem, arena_bytes);
    struct kp_reader r;
    kp_reader_init(&r, copy, n);
    return kafka_txn_request_decode(&r, key, v, &a, q);
}

/* Every strict prefix and one byte more fail; the whole body decodes. */
static void every_cut_fails(const struct buf *b, int16_t key, int16_t v)
{
    struct kafka_txn_request q;
    for (size_t n = 0; n < b->n; n++)
        assert_int_not_equal(decode(b, n, key, v, &q, sizeof(arena_mem)), 0);
    struct buf more = *b;
    u8(&more, 0);
    assert_int_not_equal(decode(&more, more.n, key, v, &q, sizeof(arena_mem)), 0);
    assert_int_equal(decode(b, b->n, key, v, &q, sizeof(arena_mem)), 0);
}

static void add_partitions_body(struct buf *b)
{
    b->n = 0;
    str(b, "tx");
    i64(b, 7);
    i16(b, 3);
    i32(b, 2);
    str(b, "t");
    i32(b, 2);
    i32(b, 0);
    i32(b, 2);
    str(b, "u");
    i32(b, 1);
    i32(b, 5);
}

static void test_add_partitions(void **state)
{
    (void)state;
    struct buf b;
    add_partitions_body(&b);
    for (int16_t v = 0; v <= 1; v++) {
        struct kafka_txn_request q;
        assert_int_equal(decode(&b, b.n, 24, v, &q, sizeof(arena_mem)), 0);
        assert_true(kp_str_eq(q.transactional_id, "tx"));
        assert_true(q.producer_id == 7);
        assert_int_equal(q.producer_epoch, 3);
        assert_int_equal(q.topics_count, 2);
        assert_true(kp_str_eq(q.topics[0].name, "t"));
        assert_int_equal(q.topics[0].count, 2);
        assert_int_equal(q.topics[0].partitions[1], 2);
        assert_true(kp_str_eq(q.topics[1].name, "u"));
        assert_int_equal(q.topics[1].partitions[0], 5);
        every_cut_fails(&b, 24, v);
    }
}

static void test_lying_counts(void **state)
{
    (void)state;
    struct kafka_txn_request q;
    struct buf b = {.n = 0};
    str(&b, "tx");
    i64(&b, 7);
    i16(&b, 3);
    i32(&b, 0x7fffffff); /* topics */
    assert_int_not_equal(decode(&b, b.n, 24, 1, &q, sizeof(arena_mem)), 0);
    b.n = 0;
    str(&b, "tx");
    i64(&b, 7);
    i16(&b, 3);
    i32(&b, 1);
    str(&b, "t");
    i32(&b, 1 << 30); /* partitions */
    i32(&b, 0);
    assert_int_not_equal(decode(&b, b.n, 24, 1, &q, sizeof(arena_mem)), 0);
    /* A negative count other than -1, and a string longer than the bytes left. */
    b.n = 0;
    str(&b, "tx");
    i64(&b, 7);
    i16(&b, 3);
    i32(&b, -2);
    assert_int_not_equal(decode(&b, b.n, 24, 1, &q, sizeof(arena_mem)), 0);
    b.n = 0;
    i16(&b, 300);
    put(&b, "short", 5);
    assert_int_not_equal(decode(&b, b.n, 26, 1, &q, sizeof(arena_mem)), 0);
}

static void test_arena_full(void **state)
{
    (void)state;
    struct buf b;
    add_partitions_body(&b);
    struct kafka_txn_request q;
    assert_int_equal(decode(&b, b.n, 24, 1, &q, 16), KP_E_LIMIT);
}

static void test_add_offsets_and_end(void **state)
{
    (void)state;
    struct buf b = {.n = 0};
    str(&b, "tx");
    i64(&b, 9);
    i16(&b, 1);
    str(&b, "group");
    for (int16_t v = 0; v <= 1; v++) {
        struct kafka_txn_request q;
        assert_int_equal(decode(&b, b.n, 25, v, &q, sizeof(arena_mem)), 0);
        assert_true(kp_str_eq(q.group, "group"));
        assert_true(q.producer_id == 9);
        every_cut_fails(&b, 25, v);
    }
    b.n = 0;
    str(&b, "tx");
    i64(&b, 9);
    i16(&b, 1);
    u8(&b, 1);
    for (int16_t v = 0; v <= 1; v++) {
        struct kafka_txn_request q;
        assert_int_equal(decode(&b, b.n, 26, v, &q, sizeof(arena_mem)), 0);
        assert_true(q.committed);
        every_cut_fails(&b, 26, v);
    }
    /* A null transactional id decodes (len -1); the handler answers INVALID_REQUEST. */
    b.n = 0;
    str(&b, NULL);
    i64(&b, 9);
    i16(&b, 1);
    u8(&b, 0);
    struct kafka_txn_request q;
    int rc = decode(&b, b.n, 26, 1, &q, sizeof(arena_mem));
    assert_true(rc != 0 || q.transactional_id.len <= 0);
}

static void test_txn_offset_commit(void **state)
{
    (void)state;
    for (int16_t v = 0; v <= 2; v++) {
        struct buf b = {.n = 0};
        str(&b, "tx");
        str(&b, "g");
        i64(&b, 11);
        i16(&b, 2);
        i32(&b, 1);
        str(&b, "t");
        i32(&b, 2);
        i32(&b, 0);
        i64(&b, 42);
        if (v >= 2)
            i32(&b, -1); /* committed_leader_epoch */
        str(&b, "meta");
        i32(&b, 1);
        i64(&b, 43);
        if (v >= 2)
            i32(&b, 5);
        str(&b, NULL);
        struct kafka_txn_request q;
        assert_int_equal(decode(&b, b.n, 28, v, &q, sizeof(arena_mem)), 0);
        assert_true(kp_str_eq(q.group, "g"));
        assert_int_equal(q.topics_count, 1);
        assert_int_equal(q.topics[0].count, 2);
        assert_true(q.topics[0].offsets[0] == 42 && q.topics[0].offsets[1] == 43);
        assert_true(kp_str_eq(q.topics[0].metadata[0], "meta"));
        assert_int_equal(q.topics[0].metadata[1].len, -1);
        every_cut_fails(&b, 28, v);
    }
}

static void test_other_key(void **state)
{
    (void)state;
    struct buf b;
    add_partitions_body(&b);
    struct kafka_txn_request q;
    assert_int_equal(decode(&b, b.n, 0, 3, &q, sizeof(arena_mem)), RT_E_UNSUPPORTED);
    assert_false(kafka_txn_api(0));
    assert_true(kafka_txn_api(24) && kafka_txn_api(25) && kafka_txn_api(26) && kafka_txn_api(28));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_partitions),    cmocka_unit_test(test_lying_counts),
        cmocka_unit_test(test_arena_full),        cmocka_unit_test(test_add_offsets_and_end),
        cmocka_unit_test(test_txn_offset_commit), cmocka_unit_test(test_other_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
