/*
 * test_kafka_txn_codec.c — the transactional requests as the server decodes them (the
 * kmsg_txn.c descriptions through kmsg_request_decode, what api_table.c's rows run before
 * handle_txn.c's handlers: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit
 * v0-3, v3 flexible), from outside, as a hostile client would feed them: a valid body of each
 * decodes to its fields at every version, Kafka's defaults where a version lacks a field; the
 * same body cut at every byte, or with a byte left over, is an error and never a crash or a read
 * past the end (ASan watches); array counts larger than the bytes left are refused before
 * anything is reserved; a full arena is KP_E_LIMIT; a version past the description (4, and
 * AddPartitionsToTxn's 5) is RT_E_UNSUPPORTED. AddPartitionsToTxn v4 is test_txn_verify.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

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

/* An unsigned varint (the flexible versions' lengths). */
static void uv(struct buf *b, uint32_t v)
{
    while (v >= 0x80) {
        u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    u8(b, (uint8_t)v);
}

/* A string (nullable when s is NULL) in the encoding of the version: compact when flex. */
static void fstr(struct buf *b, bool flex, const char *s)
{
    if (flex) {
        uv(b, s ? (uint32_t)strlen(s) + 1 : 0);
    } else {
        i16(b, s ? (int16_t)strlen(s) : -1);
    }
    if (s)
        put(b, s, strlen(s));
}

static void str(struct buf *b, const char *s)
{
    fstr(b, false, s);
}

static void arr(struct buf *b, bool flex, int32_t n)
{
    if (flex)
        uv(b, (uint32_t)(n + 1));
    else
        i32(b, n);
}

static void tags(struct buf *b, bool flex)
{
    if (flex)
        u8(b, 0);
}

static uint8_t arena_mem[1 << 16];

static int decode(const struct buf *b, size_t n, int16_t key, int16_t v, union kmsg_request *q,
                  size_t arena_bytes)
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
    return kmsg_request_decode(&r, key, v, &a, q);
}

/* Every strict prefix and one byte more fail; the whole body decodes. */
static void every_cut_fails(const struct buf *b, int16_t key, int16_t v)
{
    union kmsg_request q;
    for (size_t n = 0; n < b->n; n++)
        assert_int_not_equal(decode(b, n, key, v, &q, sizeof(arena_mem)), 0);
    struct buf more = *b;
    u8(&more, 0);
    assert_int_not_equal(decode(&more, more.n, key, v, &q, sizeof(arena_mem)), 0);
    assert_int_equal(decode(b, b->n, key, v, &q, sizeof(arena_mem)), 0);
}

static void add_partitions_body(struct buf *b, int16_t v)
{
    bool flex = v >= 3;
    b->n = 0;
    fstr(b, flex, "tx");
    i64(b, 7);
    i16(b, 3);
    arr(b, flex, 2);
    fstr(b, flex, "t");
    arr(b, flex, 2);
    i32(b, 0);
    i32(b, 2);
    tags(b, flex);
    fstr(b, flex, "u");
    arr(b, flex, 1);
    i32(b, 5);
    tags(b, flex);
    tags(b, flex);
}

static void test_add_partitions(void **state)
{
    (void)state;
    struct buf b;
    for (int16_t v = 0; v <= 3; v++) {
        add_partitions_body(&b, v);
        union kmsg_request u;
        assert_int_equal(decode(&b, b.n, 24, v, &u, sizeof(arena_mem)), 0);
        const struct kmsg_add_partitions_to_txn_request *q = &u.add_partitions_to_txn;
        assert_true(kp_str_eq(q->transactional_id, "tx"));
        assert_true(q->producer_id == 7);
        assert_int_equal(q->producer_epoch, 3);
        assert_int_equal(q->topics_count, 2);
        assert_true(kp_str_eq(q->topics[0].name, "t"));
        assert_int_equal(q->topics[0].partitions_count, 2);
        assert_int_equal(q->topics[0].partitions[1], 2);
        assert_true(kp_str_eq(q->topics[1].name, "u"));
        assert_int_equal(q->topics[1].partitions[0], 5);
        every_cut_fails(&b, 24, v);
    }
    /* The non-flexible body is not a v3 one, nor the other way round. */
    add_partitions_body(&b, 1);
    assert_int_not_equal(decode(&b, b.n, 24, 3, &(union kmsg_request){0}, sizeof(arena_mem)), 0);
    add_partitions_body(&b, 3);
    assert_int_not_equal(decode(&b, b.n, 24, 1, &(union kmsg_request){0}, sizeof(arena_mem)), 0);
}

static void test_lying_counts(void **state)
{
    (void)state;
    union kmsg_request q;
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
    add_partitions_body(&b, 1);
    union kmsg_request q;
    assert_int_equal(decode(&b, b.n, 24, 1, &q, 16), KP_E_LIMIT);
}

static void test_add_offsets_and_end(void **state)
{
    (void)state;
    struct buf b = {.n = 0};
    for (int16_t v = 0; v <= 3; v++) {
        bool flex = v >= 3;
        b.n = 0;
        fstr(&b, flex, "tx");
        i64(&b, 9);
        i16(&b, 1);
        fstr(&b, flex, "group");
        tags(&b, flex);
        union kmsg_request q;
        assert_int_equal(decode(&b, b.n, 25, v, &q, sizeof(arena_mem)), 0);
        assert_true(kp_str_eq(q.add_offsets_to_txn.group_id, "group"));
        assert_true(q.add_offsets_to_txn.producer_id == 9);
        every_cut_fails(&b, 25, v);
    }
    for (int16_t v = 0; v <= 3; v++) {
        bool flex = v >= 3;
        b.n = 0;
        fstr(&b, flex, "tx");
        i64(&b, 9);
        i16(&b, 1);
        u8(&b, 1);
        tags(&b, flex);
        union kmsg_request q;
        assert_int_equal(decode(&b, b.n, 26, v, &q, sizeof(arena_mem)), 0);
        assert_true(q.end_txn.committed);
        assert_true(kp_str_eq(q.end_txn.transactional_id, "tx"));
        every_cut_fails(&b, 26, v);
    }
    /* A null transactional id decodes (len -1); the handler answers INVALID_REQUEST. */
    b.n = 0;
    str(&b, NULL);
    i64(&b, 9);
    i16(&b, 1);
    u8(&b, 0);
    union kmsg_request q;
    int rc = decode(&b, b.n, 26, 1, &q, sizeof(arena_mem));
    assert_true(rc != 0 || q.end_txn.transactional_id.len <= 0);
}

static void test_txn_offset_commit(void **state)
{
    (void)state;
    for (int16_t v = 0; v <= 3; v++) {
        bool flex = v >= 3;
        struct buf b = {.n = 0};
        fstr(&b, flex, "tx");
        fstr(&b, flex, "g");
        i64(&b, 11);
        i16(&b, 2);
        if (v >= 3) { /* KIP-447: generation, member, instance */
            i32(&b, 4);
            fstr(&b, flex, "m-1");
            fstr(&b, flex, v == 3 ? "i-1" : NULL);
        }
        arr(&b, flex, 1);
        fstr(&b, flex, "t");
        arr(&b, flex, 2);
        i32(&b, 0);
        i64(&b, 42);
        if (v >= 2)
            i32(&b, -1); /* committed_leader_epoch */
        fstr(&b, flex, "meta");
        tags(&b, flex);
        i32(&b, 1);
        i64(&b, 43);
        if (v >= 2)
            i32(&b, 5);
        fstr(&b, flex, NULL);
        tags(&b, flex);
        tags(&b, flex);
        tags(&b, flex);
        union kmsg_request u;
        assert_int_equal(decode(&b, b.n, 28, v, &u, sizeof(arena_mem)), 0);
        const struct kmsg_txn_offset_commit_request *q = &u.txn_offset_commit;
        assert_true(kp_str_eq(q->group_id, "g"));
        assert_int_equal(q->topics_count, 1);
        assert_int_equal(q->topics[0].partitions_count, 2);
        assert_true(q->topics[0].partitions[0].committed_offset == 42 &&
                    q->topics[0].partitions[1].committed_offset == 43);
        assert_int_equal(q->topics[0].partitions[1].committed_leader_epoch, v >= 2 ? 5 : -1);
        assert_true(kp_str_eq(q->topics[0].partitions[0].committed_metadata, "meta"));
        assert_int_equal(q->topics[0].partitions[1].committed_metadata.len, -1);
        if (v >= 3) {
            assert_int_equal(q->generation_id, 4);
            assert_true(kp_str_eq(q->member_id, "m-1"));
            assert_true(kp_str_eq(q->group_instance_id, "i-1"));
        } else { /* Kafka's defaults */
            assert_int_equal(q->generation_id, -1);
            assert_int_equal(q->member_id.len, 0);
            assert_int_equal(q->group_instance_id.len, -1);
        }
        every_cut_fails(&b, 28, v);
    }
}

static void test_other_version(void **state)
{
    (void)state;
    struct buf b;
    add_partitions_body(&b, 3);
    union kmsg_request q;
    /* AddPartitionsToTxn v4 (KIP-890's batches, txn_verify.c) is described, v5 is not; the
     * others stop at v3. */
    assert_int_equal(decode(&b, b.n, 24, 5, &q, sizeof(arena_mem)), RT_E_UNSUPPORTED);
    for (int16_t key = 25; key <= 28; key++)
        if (key != 27)
            assert_int_equal(decode(&b, b.n, key, 4, &q, sizeof(arena_mem)), RT_E_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_partitions),    cmocka_unit_test(test_lying_counts),
        cmocka_unit_test(test_arena_full),        cmocka_unit_test(test_add_offsets_and_end),
        cmocka_unit_test(test_txn_offset_commit), cmocka_unit_test(test_other_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
