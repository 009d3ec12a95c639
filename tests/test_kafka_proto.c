/*
 * test_kafka_proto.c — the Kafka wire primitives (tools/kafka/proto/proto.c) at every boundary: each
 * primitive truncated at every byte, varints of 1..5 (10) bytes and one byte overlong, negative
 * lengths other than -1, lengths of 2^31-1, array counts larger than the bytes left (KP4), the
 * sticky error (KP2), the arena's limit (KP6), holes (KP8), and writer/reader round trips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/kafka/proto/proto.h"

static struct kp_reader rd(const void *p, size_t n)
{
    struct kp_reader r;
    kp_reader_init(&r, p, n);
    return r;
}

/* KP1: every fixed-width read of n bytes fails on each shorter buffer and never moves. */
static void test_fixed_width_truncated_at_every_byte(void **state)
{
    (void)state;
    static const uint8_t b[16] = {0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10};
    for (size_t n = 0; n <= 8; n++) {
        struct kp_reader r = rd(b, n);
        int64_t v = kp_read_i64(&r);
        if (n < 8) {
            assert_int_equal(r.err, RT_E_CORRUPT);
            assert_int_equal(v, 0);
            assert_ptr_equal(r.p, b);
        } else {
            assert_int_equal(r.err, 0);
            assert_true(v == (int64_t)0x8102030405060708ull);
        }
    }
    for (size_t n = 0; n <= 4; n++) {
        struct kp_reader r = rd(b, n);
        int32_t v = kp_read_i32(&r);
        assert_int_equal(r.err, n < 4 ? RT_E_CORRUPT : 0);
        assert_int_equal(v, n < 4 ? 0 : (int32_t)0x81020304u);
        r = rd(b, n);
        uint32_t u = kp_read_u32(&r);
        assert_int_equal(r.err, n < 4 ? RT_E_CORRUPT : 0);
        assert_true(u == (n < 4 ? 0u : 0x81020304u));
    }
    for (size_t n = 0; n <= 2; n++) {
        struct kp_reader r = rd(b, n);
        int16_t v = kp_read_i16(&r);
        assert_int_equal(r.err, n < 2 ? RT_E_CORRUPT : 0);
        assert_int_equal(v, n < 2 ? 0 : (int16_t)0x8102);
    }
    struct kp_reader r = rd(b, 0);
    assert_int_equal(kp_read_i8(&r), 0);
    assert_int_equal(r.err, RT_E_CORRUPT);
    r = rd(b, 1);
    assert_int_equal(kp_read_i8(&r), (int8_t)0x81);
    assert_true(kp_read_bool(&(struct kp_reader){b, b + 1, 0}));
    uint8_t u[16];
    for (size_t n = 0; n <= 16; n++) {
        r = rd(b, n);
        kp_read_uuid(&r, u);
        assert_int_equal(r.err, n < 16 ? RT_E_CORRUPT : 0);
    }
    assert_memory_equal(u, b, 16);
}

/* KP2: after the first failure every read returns zero and the error stays the first one. */
static void test_error_is_sticky(void **state)
{
    (void)state;
    static const uint8_t b[] = {0x00, 0x05, 'a', 'b'}; /* a string claiming 5 bytes, 2 there */
    struct kp_reader r = rd(b, sizeof b);
    struct kp_str s = kp_read_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    assert_int_equal(s.len, 0);
    const uint8_t *at = r.p;
    assert_int_equal(kp_read_i8(&r), 0);
    assert_int_equal(kp_read_i16(&r), 0);
    assert_ptr_equal(r.p, at);
    kp_fail(&r, KP_E_LIMIT);
    assert_int_equal(r.err, RT_E_CORRUPT);
}

static void write_read_varint(int32_t v, size_t want_len)
{
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_varint(&w, v);
    assert_int_equal(w.err, 0);
    assert_int_equal(w.len, want_len);
    struct kp_reader r = rd(w.buf, w.len);
    assert_int_equal(kp_read_varint(&r), v);
    assert_int_equal(r.err, 0);
    assert_true(r.p == r.end);
    for (size_t n = 0; n < w.len; n++) { /* truncated at every byte */
        r = rd(w.buf, n);
        assert_int_equal(kp_read_varint(&r), 0);
        assert_int_equal(r.err, RT_E_CORRUPT);
    }
    kp_writer_free(&w);
}

static void write_read_varlong(int64_t v, size_t want_len)
{
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_varlong(&w, v);
    assert_int_equal(w.len, want_len);
    struct kp_reader r = rd(w.buf, w.len);
    assert_true(kp_read_varlong(&r) == v);
    assert_int_equal(r.err, 0);
    for (size_t n = 0; n < w.len; n++) {
        r = rd(w.buf, n);
        (void)kp_read_varlong(&r);
        assert_int_equal(r.err, RT_E_CORRUPT);
    }
    kp_writer_free(&w);
}

/* KP5: zigzag varints of every length, the extremes, and one byte too many. */
static void test_varint_lengths_and_overlong(void **state)
{
    (void)state;
    write_read_varint(0, 1);
    write_read_varint(-1, 1);
    write_read_varint(63, 1);
    write_read_varint(-64, 1);
    write_read_varint(64, 2);
    write_read_varint(8191, 2);
    write_read_varint(8192, 3);
    write_read_varint(1 << 19, 3);
    write_read_varint(1 << 20, 4);
    write_read_varint(1 << 26, 4);
    write_read_varint(1 << 27, 5);
    write_read_varint(INT32_MAX, 5);
    write_read_varint(INT32_MIN, 5);
    write_read_varlong(0, 1);
    write_read_varlong(-1, 1);
    write_read_varlong(INT64_MAX, 10);
    write_read_varlong(INT64_MIN, 10);
    write_read_varlong((int64_t)1 << 40, 6);

    /* Six bytes for an int32: refused at the fifth (it still has the continuation bit). */
    static const uint8_t over6[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    struct kp_reader r = rd(over6, sizeof over6);
    (void)kp_read_varint(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    /* Five bytes whose last carries bits past 32. */
    static const uint8_t wide5[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    r = rd(wide5, sizeof wide5);
    (void)kp_read_uvarint(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t max5[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    r = rd(max5, sizeof max5);
    assert_true(kp_read_uvarint(&r) == UINT32_MAX);
    assert_int_equal(r.err, 0);
    /* Eleven bytes for an int64, and ten whose last carries a bit past 64. */
    uint8_t over11[11];
    memset(over11, 0x80, 10);
    over11[10] = 0;
    r = rd(over11, sizeof over11);
    (void)kp_read_varlong(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    uint8_t wide10[10];
    memset(wide10, 0xff, 9);
    wide10[9] = 0x02;
    r = rd(wide10, sizeof wide10);
    (void)kp_read_varlong(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
}

/* KP3: classic strings — -1 is null only where nullable; other negatives and lengths past the
 * end (up to 32767 and, for bytes, 2^31-1) are corrupt; truncation at every byte. */
static void test_string_lengths(void **state)
{
    (void)state;
    static const uint8_t ok[] = {0x00, 0x03, 'a', 'b', 'c'};
    for (size_t n = 0; n <= sizeof ok; n++) {
        struct kp_reader r = rd(ok, n);
        struct kp_str s = kp_read_string(&r);
        if (n < sizeof ok) {
            assert_int_equal(r.err, RT_E_CORRUPT);
        } else {
            assert_int_equal(r.err, 0);
            assert_true(kp_str_eq(s, "abc"));
        }
    }
    static const uint8_t null16[] = {0xff, 0xff};
    struct kp_reader r = rd(null16, 2);
    struct kp_str s = kp_read_nullable_string(&r);
    assert_int_equal(r.err, 0);
    assert_int_equal(s.len, -1);
    assert_null(s.ptr);
    r = rd(null16, 2);
    (void)kp_read_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t neg2[] = {0xff, 0xfe, 'x', 'x'};
    r = rd(neg2, sizeof neg2);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t max16[] = {0x7f, 0xff, 'x'};
    r = rd(max16, sizeof max16);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);

    static const uint8_t max32[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3};
    r = rd(max32, sizeof max32);
    struct kp_bytes b = kp_read_nullable_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    assert_int_equal(b.len, -1);
    static const uint8_t neg32[] = {0xff, 0xff, 0xff, 0xfe};
    r = rd(neg32, sizeof neg32);
    (void)kp_read_nullable_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t min32[] = {0x80, 0x00, 0x00, 0x00};
    r = rd(min32, sizeof min32);
    (void)kp_read_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t null32[] = {0xff, 0xff, 0xff, 0xff};
    r = rd(null32, sizeof null32);
    b = kp_read_nullable_bytes(&r);
    assert_int_equal(r.err, 0);
    assert_int_equal(b.len, -1);
    r = rd(null32, sizeof null32);
    (void)kp_read_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t b3[] = {0, 0, 0, 3, 7, 8, 9};
    for (size_t n = 0; n <= sizeof b3; n++) {
        r = rd(b3, n);
        b = kp_read_bytes(&r);
        assert_int_equal(r.err, n < sizeof b3 ? RT_E_CORRUPT : 0);
    }
    assert_int_equal(b.len, 3);
    assert_ptr_equal(b.ptr, b3 + 4); /* points into the buffer: no copy */
}

/* Compact forms: uvarint length+1, 0 = null (nullable only), lengths past the end refused. */
static void test_compact_lengths(void **state)
{
    (void)state;
    static const uint8_t ok[] = {0x04, 'a', 'b', 'c'};
    for (size_t n = 0; n <= sizeof ok; n++) {
        struct kp_reader r = rd(ok, n);
        struct kp_str s = kp_read_compact_string(&r);
        assert_int_equal(r.err, n < sizeof ok ? RT_E_CORRUPT : 0);
        if (n == sizeof ok)
            assert_true(kp_str_eq(s, "abc"));
    }
    static const uint8_t zero[] = {0x00};
    struct kp_reader r = rd(zero, 1);
    struct kp_str s = kp_read_compact_nullable_string(&r);
    assert_int_equal(r.err, 0);
    assert_int_equal(s.len, -1);
    r = rd(zero, 1);
    (void)kp_read_compact_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    r = rd(zero, 1);
    (void)kp_read_compact_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    r = rd(zero, 1);
    struct kp_bytes b = kp_read_compact_nullable_bytes(&r);
    assert_int_equal(r.err, 0);
    assert_int_equal(b.len, -1);
    /* uvarint 2^31 (length 2^31-1) with three bytes after it. */
    static const uint8_t huge[] = {0x80, 0x80, 0x80, 0x80, 0x08, 'a', 'b', 'c'};
    r = rd(huge, sizeof huge);
    (void)kp_read_compact_nullable_bytes(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    /* UINT32_MAX: length 2^32-2, beyond int32. */
    static const uint8_t umax[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    r = rd(umax, sizeof umax);
    (void)kp_read_compact_nullable_string(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
}

/* KP4: array counts — -1 is null only where nullable; a count the bytes left cannot hold at the
 * element's least size is refused; 2^31-1 is refused; compact counts likewise. */
static void test_array_counts(void **state)
{
    (void)state;
    static const uint8_t two[] = {0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2};
    struct kp_reader r = rd(two, sizeof two);
    assert_int_equal(kp_read_array_len(&r, 4), 2);
    assert_int_equal(r.err, 0);
    r = rd(two, sizeof two);
    assert_int_equal(kp_read_array_len(&r, 5), 0); /* 2 × 5 > 8 bytes left */
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t null32[] = {0xff, 0xff, 0xff, 0xff};
    r = rd(null32, 4);
    assert_int_equal(kp_read_nullable_array_len(&r, 1), -1);
    assert_int_equal(r.err, 0);
    r = rd(null32, 4);
    (void)kp_read_array_len(&r, 1);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t neg2[] = {0xff, 0xff, 0xff, 0xfe};
    r = rd(neg2, 4);
    (void)kp_read_nullable_array_len(&r, 1);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t max[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    r = rd(max, sizeof max);
    (void)kp_read_array_len(&r, 1);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t c3[] = {0x04, 1, 2, 3};
    r = rd(c3, sizeof c3);
    assert_int_equal(kp_read_compact_array_len(&r, 1), 3);
    r = rd(c3, sizeof c3);
    (void)kp_read_compact_array_len(&r, 2);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t c0[] = {0x00};
    r = rd(c0, 1);
    assert_int_equal(kp_read_compact_nullable_array_len(&r, 1), -1);
    r = rd(c0, 1);
    (void)kp_read_compact_array_len(&r, 1);
    assert_int_equal(r.err, RT_E_CORRUPT);
    for (size_t n = 0; n < 4; n++) {
        r = rd(two, n);
        (void)kp_read_array_len(&r, 1);
        assert_int_equal(r.err, RT_E_CORRUPT);
    }
}

/* KP9: tagged fields are skipped by their sizes; a section that lies about them is refused. */
static void test_tagged_fields(void **state)
{
    (void)state;
    static const uint8_t two[] = {0x02, 0x00, 0x02, 'h', 'i', 0x05, 0x01, 0x2a};
    struct kp_reader r = rd(two, sizeof two);
    kp_skip_tags(&r);
    assert_int_equal(r.err, 0);
    assert_true(r.p == r.end);
    for (size_t n = 0; n < sizeof two; n++) {
        r = rd(two, n);
        kp_skip_tags(&r);
        assert_int_equal(r.err, RT_E_CORRUPT);
    }
    static const uint8_t liar[] = {0x7f, 0x00, 0x00}; /* 127 fields in 2 bytes */
    r = rd(liar, sizeof liar);
    kp_skip_tags(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    static const uint8_t big[] = {0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x07};
    r = rd(big, sizeof big);
    kp_skip_tags(&r);
    assert_int_equal(r.err, RT_E_CORRUPT);
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_tags(&w, false);
    assert_int_equal(w.len, 0);
    kp_write_tags(&w, true);
    assert_int_equal(w.len, 1);
    assert_int_equal(w.buf[0], 0);
    kp_writer_free(&w);
}

/* KP6: the arena hands out zeroed, aligned room and refuses what does not fit. */
static void test_arena_limit(void **state)
{
    (void)state;
    _Alignas(8) uint8_t buf[64];
    struct kp_arena a;
    kp_arena_init(&a, buf, sizeof buf);
    static const uint8_t none[1];
    struct kp_reader r = rd(none, 0);
    uint8_t *p1 = kp_arena_array(&r, &a, 3, 1);
    assert_non_null(p1);
    int64_t *p2 = kp_arena_array(&r, &a, 4, sizeof(int64_t));
    assert_non_null(p2);
    assert_int_equal((uintptr_t)p2 % 8, 0);
    assert_int_equal(p2[3], 0);
    assert_null(kp_arena_array(&r, &a, 0, 8));
    assert_int_equal(r.err, 0);
    assert_null(kp_arena_array(&r, &a, 4, 8)); /* 8 + 32 used, 32 more do not fit */
    assert_int_equal(r.err, KP_E_LIMIT);
    kp_arena_reset(&a);
    r = rd(none, 0);
    assert_null(kp_arena_array(&r, &a, INT32_MAX, 1 << 20));
    assert_int_equal(r.err, KP_E_LIMIT);
}

/* Writer and reader agree on every form; nullable forms write null, others the empty string. */
static void test_writer_round_trip(void **state)
{
    (void)state;
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_i8(&w, -3);
    kp_write_bool(&w, true);
    kp_write_i16(&w, -2);
    kp_write_i32(&w, INT32_MIN);
    kp_write_i64(&w, INT64_MIN + 5);
    kp_write_u32(&w, 0xdeadbeefu);
    kp_write_uvarint(&w, 300);
    kp_write_string(&w, kp_str_of("topic"));
    kp_write_nullable_string(&w, kp_str_of(NULL));
    kp_write_string(&w, kp_str_of(NULL));
    kp_write_compact_string(&w, kp_str_of("c"));
    kp_write_compact_nullable_string(&w, kp_str_of(NULL));
    kp_write_nullable_bytes(&w, (struct kp_bytes){(const uint8_t *)"xyz", 3});
    kp_write_compact_nullable_bytes(&w, (struct kp_bytes){NULL, -1});
    kp_write_array_len(&w, -1);
    kp_write_compact_array_len(&w, 2);
    assert_int_equal(w.err, 0);
    struct kp_reader r = rd(w.buf, w.len);
    assert_int_equal(kp_read_i8(&r), -3);
    assert_true(kp_read_bool(&r));
    assert_int_equal(kp_read_i16(&r), -2);
    assert_int_equal(kp_read_i32(&r), INT32_MIN);
    assert_true(kp_read_i64(&r) == INT64_MIN + 5);
    assert_true(kp_read_u32(&r) == 0xdeadbeefu);
    assert_int_equal(kp_read_uvarint(&r), 300);
    assert_true(kp_str_eq(kp_read_string(&r), "topic"));
    assert_int_equal(kp_read_nullable_string(&r).len, -1);
    assert_int_equal(kp_read_string(&r).len, 0);
    assert_true(kp_str_eq(kp_read_compact_string(&r), "c"));
    assert_int_equal(kp_read_compact_nullable_string(&r).len, -1);
    struct kp_bytes b = kp_read_nullable_bytes(&r);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.ptr, "xyz", 3);
    assert_int_equal(kp_read_compact_nullable_bytes(&r).len, -1);
    assert_int_equal(kp_read_nullable_array_len(&r, 1), -1);
    /* the compact count 2 needs two more bytes than are left: refused (KP4) */
    (void)kp_read_compact_array_len(&r, 1);
    assert_int_equal(r.err, RT_E_CORRUPT);

    /* A string over 32767 bytes cannot be written. */
    char *big = malloc(40000);
    assert_non_null(big);
    memset(big, 'a', 40000);
    kp_writer_reset(&w, NULL, 0);
    kp_write_string(&w, (struct kp_str){big, 40000});
    assert_int_equal(w.err, RT_E_INVALID_ARGUMENT);
    free(big);

    /* Growth limit (KP7): a sticky -ENOMEM, nothing written after it. */
    kp_writer_reset(&w, NULL, 0);
    w.len_max = 16;
    kp_write_i64(&w, 1);
    kp_write_i64(&w, 2);
    assert_int_equal(w.err, 0);
    kp_write_i8(&w, 3);
    assert_int_equal(w.err, -12);
    assert_int_equal(w.len, 16);
    kp_writer_free(&w);
}

/* KP8: holes record where the server's bytes go and count toward the wire size. */
static void test_holes(void **state)
{
    (void)state;
    struct kp_hole holes[2];
    struct kp_writer w;
    kp_writer_init(&w, holes, 2);
    int tag1, tag2;
    kp_write_i32(&w, 100);
    kp_write_hole(&w, 100, &tag1);
    kp_write_i16(&w, 7);
    kp_write_hole(&w, 5, &tag2);
    assert_int_equal(w.err, 0);
    assert_int_equal(w.holes_count, 2);
    assert_int_equal(holes[0].at, 4);
    assert_ptr_equal(holes[0].ref, &tag1);
    assert_int_equal(holes[1].at, 6);
    assert_int_equal(holes[1].len, 5);
    assert_true(kp_writer_wire_bytes(&w) == 6 + 105);
    kp_write_hole(&w, 1, NULL);
    assert_int_equal(w.err, KP_E_LIMIT);
    kp_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_width_truncated_at_every_byte),
        cmocka_unit_test(test_error_is_sticky),
        cmocka_unit_test(test_varint_lengths_and_overlong),
        cmocka_unit_test(test_string_lengths),
        cmocka_unit_test(test_compact_lengths),
        cmocka_unit_test(test_array_counts),
        cmocka_unit_test(test_tagged_fields),
        cmocka_unit_test(test_arena_limit),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_holes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
