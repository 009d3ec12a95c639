/*
 * test_producer_snapshot.c — the producer-state snapshot codec and files
 * (index/producer_snapshot.c, docs/format.md part D): round trips, the exact bytes of Kafka's
 * layout derived by hand, every validity rule S1..S12 by name, every byte flip and truncation,
 * the atomic write, list and remove. Pure file tests: they run once, not once per io backend.
 * CRCs here come from a bit-at-a-time CRC-32C written below, not from index/crc32c.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "index/producer_snapshot.h"

/* test_util.c calls rt_options_init; this keeps the test linking without the engine. A strong
 * definition in libringtail wins. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* ---- helpers ---------------------------------------------------------------------------- */

/* CRC-32C one bit at a time: reflected polynomial 0x82F63B78, init and final xor ~0. */
static uint32_t crc_bitwise(const uint8_t *p, size_t len)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Re-seals a hand-edited snapshot so that a structural rule, not S5, is what fails. */
static void fix_crc(uint8_t *buf, size_t len)
{
    assert_true(len >= 6);
    uint32_t c = crc_bitwise(buf + 6, len - 6);
    buf[2] = (uint8_t)(c >> 24);
    buf[3] = (uint8_t)(c >> 16);
    buf[4] = (uint8_t)(c >> 8);
    buf[5] = (uint8_t)c;
}

static void put_be(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = bytes; i > 0; i--) {
        p[i - 1] = (uint8_t)v;
        v >>= 8;
    }
}

static struct producer_snapshot_entry sample_entry(void)
{
    return (struct producer_snapshot_entry){
        .producer_id = 1000,
        .epoch = 5,
        .last_sequence = 41,
        .last_offset = 100,
        .offset_delta = 9,
        .timestamp_ms = 1700000000000,
        .coordinator_epoch = 3,
        .current_txn_first_offset = 91,
    };
}

/* A varied but valid entry i: extremes, "none" values and ordinary ones. */
static struct producer_snapshot_entry varied_entry(uint32_t i)
{
    struct producer_snapshot_entry e = sample_entry();
    e.producer_id = i == 0 ? INT64_MAX : (int64_t)i * 7919;
    e.epoch = (int16_t)(i % 3 == 0 ? INT16_MAX : (int)(i % 1000));
    if (i % 5 == 0) { /* markers only: no retained batch */
        e.last_sequence = -1;
        e.last_offset = -1;
        e.offset_delta = 0;
    } else {
        e.last_sequence = i % 7 == 0 ? INT32_MAX : (int32_t)i;
        e.last_offset = i % 11 == 0 ? INT64_MAX : (int64_t)i * 100;
        e.offset_delta = (int32_t)(i % 100);
    }
    e.timestamp_ms = i % 4 == 0 ? INT64_MIN : (i % 4 == 1 ? -1 : (int64_t)i * 1000);
    e.coordinator_epoch = i % 6 == 0 ? -1 : (int32_t)i;
    e.current_txn_first_offset = i % 2 == 0 ? -1 : (int64_t)i;
    return e;
}

static bool entry_eq(const struct producer_snapshot_entry *a,
                     const struct producer_snapshot_entry *b)
{
    return a->producer_id == b->producer_id && a->epoch == b->epoch &&
           a->last_sequence == b->last_sequence && a->last_offset == b->last_offset &&
           a->offset_delta == b->offset_delta && a->timestamp_ms == b->timestamp_ms &&
           a->coordinator_epoch == b->coordinator_epoch &&
           a->current_txn_first_offset == b->current_txn_first_offset;
}

struct collect {
    struct producer_snapshot_entry *e;
    uint32_t n;
    uint32_t cap;
    uint32_t stop_after; /* 0: never stop */
};

static int collect_fn(void *ctx, const struct producer_snapshot_entry *e)
{
    struct collect *c = ctx;
    if (c->stop_after != 0 && c->n == c->stop_after)
        return -ECANCELED;
    assert_true(c->n < c->cap);
    c->e[c->n++] = *e;
    return 0;
}

static int never_fn(void *ctx, const struct producer_snapshot_entry *e)
{
    (void)ctx;
    (void)e;
    fail_msg("fn called for a snapshot that breaks a rule");
    return 0;
}

static uint8_t *encode_alloc(const struct producer_snapshot_entry *e, uint32_t n, size_t *len)
{
    size_t cap = producer_snapshot_size(n);
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    assert_int_equal(producer_snapshot_encode(e, n, buf, cap, len), 0);
    assert_int_equal(*len, cap);
    return buf;
}

/* Decodes and expects -EBADMSG with the given reason fragment and offset (SIZE_MAX: any). */
static void expect_bad(const uint8_t *buf, size_t len, const char *reason_part, size_t offset)
{
    const char *why = NULL;
    size_t bad = 12345;
    assert_int_equal(producer_snapshot_decode(buf, len, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(why);
    if (reason_part != NULL && strstr(why, reason_part) == NULL)
        fail_msg("reason \"%s\" does not mention \"%s\"", why, reason_part);
    if (offset != SIZE_MAX)
        assert_int_equal(bad, offset);
    assert_true(bad <= len);
}

static void round_trip(uint32_t n)
{
    struct producer_snapshot_entry *in = calloc(n > 0 ? n : 1, sizeof(*in));
    assert_non_null(in);
    for (uint32_t i = 0; i < n; i++)
        in[i] = varied_entry(i);
    size_t len;
    uint8_t *buf = encode_alloc(in, n, &len);
    assert_int_equal(len, 10 + 46 * (size_t)n);
    assert_int_equal(crc_bitwise(buf + 6, len - 6), be32_of(buf + 2));

    struct collect c = {.e = calloc(n > 0 ? n : 1, sizeof(*c.e)), .cap = n};
    const char *why = "unset";
    size_t bad = 99;
    assert_int_equal(producer_snapshot_decode(buf, len, collect_fn, &c, &why, &bad), 0);
    assert_null(why);
    assert_int_equal(bad, 0);
    assert_int_equal(c.n, n);
    for (uint32_t i = 0; i < n; i++)
        assert_true(entry_eq(&c.e[i], &in[i]));

    /* Re-encoding what was decoded gives the same bytes. */
    size_t len2;
    uint8_t *buf2 = encode_alloc(c.e, c.n, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(buf2, buf, len);
    free(buf2);
    free(c.e);
    free(buf);
    free(in);
}

/* ---- codec ------------------------------------------------------------------------------ */

static void test_crc_bitwise_reference(void **state)
{
    (void)state;
    assert_int_equal(crc_bitwise((const uint8_t *)"123456789", 9), 0xE3069283u);
}

static void test_size(void **state)
{
    (void)state;
    assert_int_equal(producer_snapshot_size(0), 10);
    assert_int_equal(producer_snapshot_size(1), 56);
    assert_int_equal(producer_snapshot_size(1000), 46010);
    assert_int_equal(producer_snapshot_size(UINT32_MAX), 10 + 46 * (size_t)UINT32_MAX);
}

static void test_round_trip_0(void **state)
{
    (void)state;
    round_trip(0);
}

static void test_round_trip_1(void **state)
{
    (void)state;
    round_trip(1);
}

static void test_round_trip_many(void **state)
{
    (void)state;
    round_trip(2);
    round_trip(1000);
    round_trip(20000);
}

/* The exact bytes of a one-entry snapshot, field by field from docs/format.md D.1/D.2. */
static void test_exact_bytes_one_entry(void **state)
{
    (void)state;
    static const uint8_t want[56] = {
        0x00, 0x01,                                     /* @0  version i16 = 1 */
        0x0B, 0x50, 0xE6, 0xFD,                         /* @2  crc u32 over [6, 56) */
        0x00, 0x00, 0x00, 0x01,                         /* @6  count i32 = 1 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8, /* @10 producerId i64 = 1000 */
        0x00, 0x05,                                     /* @18 epoch i16 = 5 */
        0x00, 0x00, 0x00, 0x29,                         /* @20 lastSequence i32 = 41 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, /* @24 lastOffset i64 = 100 */
        0x00, 0x00, 0x00, 0x09,                         /* @32 offsetDelta i32 = 9 */
        0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, /* @36 timestamp i64 = 1700000000000 */
        0x00, 0x00, 0x00, 0x03,                         /* @44 coordinatorEpoch i32 = 3 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5B, /* @48 currentTxnFirstOffset = 91 */
    };
    /* The literal CRC is the independent bitwise CRC-32C of bytes 6..55 (count included). */
    assert_int_equal(crc_bitwise(want + 6, sizeof(want) - 6), 0x0B50E6FDu);

    struct producer_snapshot_entry e = sample_entry();
    uint8_t buf[56 + 8];
    memset(buf, 0xAA, sizeof(buf));
    size_t len = 0;
    assert_int_equal(producer_snapshot_encode(&e, 1, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(buf[56], 0xAA); /* nothing written past len */

    struct producer_snapshot_entry got;
    struct collect c = {.e = &got, .cap = 1};
    assert_int_equal(producer_snapshot_decode(want, sizeof(want), collect_fn, &c, NULL, NULL), 0);
    assert_int_equal(c.n, 1);
    assert_true(entry_eq(&got, &e));
}

static void test_exact_bytes_empty(void **state)
{
    (void)state;
    static const uint8_t want[10] = {
        0x00, 0x01,             /* version 1 */
        0x48, 0x67, 0x4B, 0xC7, /* CRC-32C of the four zero bytes of count */
        0x00, 0x00, 0x00, 0x00, /* count 0 */
    };
    assert_int_equal(crc_bitwise(want + 6, 4), 0x48674BC7u);
    uint8_t buf[10];
    size_t len = 0;
    assert_int_equal(producer_snapshot_encode(NULL, 0, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, 10);
    assert_memory_equal(buf, want, 10);
    assert_int_equal(producer_snapshot_decode(want, 10, never_fn, NULL, NULL, NULL), 0);
}

/* S5 (and S2/S3/S4 for the header bytes): every single-bit flip and every whole-byte flip of
 * a valid snapshot is rejected. */
static void test_every_flip_rejected(void **state)
{
    (void)state;
    struct producer_snapshot_entry in[3] = {varied_entry(1), varied_entry(2), varied_entry(5)};
    for (uint32_t n = 0; n <= 3; n++) {
        size_t len;
        uint8_t *buf = encode_alloc(in, n, &len);
        for (size_t i = 0; i < len; i++) {
            for (int m = 0; m <= 8; m++) {
                uint8_t mask = m == 8 ? 0xFF : (uint8_t)(1u << m);
                buf[i] ^= mask;
                expect_bad(buf, len, NULL, SIZE_MAX);
                buf[i] ^= mask;
            }
        }
        assert_int_equal(producer_snapshot_decode(buf, len, NULL, NULL, NULL, NULL), 0);
        free(buf);
    }
}

/* S1/S4: every proper prefix is rejected; one byte more is rejected. */
static void test_every_truncation_rejected(void **state)
{
    (void)state;
    struct producer_snapshot_entry in[3] = {varied_entry(1), varied_entry(2), varied_entry(3)};
    size_t len;
    uint8_t *buf = encode_alloc(in, 3, &len);
    for (size_t cut = 0; cut < len; cut++) {
        if (cut < 10)
            expect_bad(buf, cut, "(S1)", cut);
        else
            expect_bad(buf, cut, "(S4)", cut);
    }
    expect_bad(NULL, 0, "(S1)", 0);
    free(buf);
}

static void test_version_rule(void **state)
{
    (void)state;
    struct producer_snapshot_entry e = sample_entry();
    size_t len;
    uint8_t *buf = encode_alloc(&e, 1, &len);
    static const uint16_t versions[] = {0, 2, 0x0100, 0xFFFF};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        put_be(buf, versions[i], 2); /* the CRC does not cover the version */
        expect_bad(buf, len, "(S2)", 0);
    }
    free(buf);
}

/* S3/S4: a count that disagrees with the size, with the CRC re-sealed so the count is what
 * fails. */
static void test_wrong_count(void **state)
{
    (void)state;
    struct producer_snapshot_entry in[2] = {varied_entry(1), varied_entry(2)};
    size_t len;
    uint8_t *buf = encode_alloc(in, 2, &len);

    put_be(buf + 6, 3, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "(S4)", len);
    put_be(buf + 6, 1, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "trailing", 56);
    put_be(buf + 6, 0, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "trailing", 10);
    put_be(buf + 6, 0xFFFFFFFFu, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "negative entry count (S3)", 6);
    put_be(buf + 6, 0x80000000u, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "negative entry count (S3)", 6);
    put_be(buf + 6, PRODUCER_SNAPSHOT_ENTRIES_MAX + 1u, 4);
    fix_crc(buf, len);
    expect_bad(buf, len, "PRODUCER_SNAPSHOT_ENTRIES_MAX (S3)", 6);
    put_be(buf + 6, 2, 4);
    fix_crc(buf, len);
    assert_int_equal(producer_snapshot_decode(buf, len, NULL, NULL, NULL, NULL), 0);
    free(buf);
}

/* S4: bytes after the last entry are rejected even when the CRC covers them (Kafka would read
 * past them; it never writes any). */
static void test_trailing_bytes(void **state)
{
    (void)state;
    struct producer_snapshot_entry e = sample_entry();
    size_t len;
    uint8_t *one = encode_alloc(&e, 1, &len);
    for (size_t extra = 1; extra <= 46; extra += 45) {
        uint8_t *buf = calloc(1, len + extra);
        assert_non_null(buf);
        memcpy(buf, one, len);
        fix_crc(buf, len + extra);
        expect_bad(buf, len + extra, "trailing bytes after the last entry (S4)", len);
        free(buf);
    }
    free(one);
}

/* S12: a repeated producer id is rejected, naming the first repeat; encode refuses it too. */
static void test_duplicate_producer_ids(void **state)
{
    (void)state;
    struct producer_snapshot_entry in[5];
    for (uint32_t i = 0; i < 5; i++)
        in[i] = varied_entry(i + 1);
    in[4].producer_id = in[1].producer_id; /* entry 4 repeats entry 1 */
    in[3].producer_id = in[0].producer_id; /* entry 3 repeats entry 0: the first repeat */
    uint8_t buf[10 + 5 * 46];
    size_t len = 0;
    assert_int_equal(producer_snapshot_encode(in, 5, buf, sizeof(buf), &len), -EINVAL);

    /* Build the bytes from a valid snapshot, then alias the ids and re-seal. */
    in[3].producer_id = 777001;
    in[4].producer_id = 777002;
    uint8_t *ok = encode_alloc(in, 5, &len);
    memcpy(ok + 10 + 4 * 46, ok + 10 + 1 * 46, 8);
    memcpy(ok + 10 + 3 * 46, ok + 10 + 0 * 46, 8);
    fix_crc(ok, len);
    expect_bad(ok, len, "duplicate producer id (S12)", 10 + 3 * 46);
    free(ok);

    /* Same id at both ends. */
    struct producer_snapshot_entry two[2] = {sample_entry(), sample_entry()};
    assert_int_equal(producer_snapshot_encode(two, 2, buf, sizeof(buf), &len), -EINVAL);
}

struct field_case {
    const char *rule;
    size_t field; /* offset of the reported field inside the entry */
    void (*edit)(struct producer_snapshot_entry *e);
};

static void neg_pid(struct producer_snapshot_entry *e)
{
    e->producer_id = -1;
}
static void min_pid(struct producer_snapshot_entry *e)
{
    e->producer_id = INT64_MIN;
}
static void neg_epoch(struct producer_snapshot_entry *e)
{
    e->epoch = -1;
}
static void last_offset_m2(struct producer_snapshot_entry *e)
{
    e->last_offset = -2;
}
static void last_seq_m2(struct producer_snapshot_entry *e)
{
    e->last_sequence = -2;
}
static void seq_without_offset(struct producer_snapshot_entry *e)
{
    e->last_offset = -1;
    e->offset_delta = 0;
}
static void offset_without_seq(struct producer_snapshot_entry *e)
{
    e->last_sequence = -1;
}
static void neg_delta(struct producer_snapshot_entry *e)
{
    e->offset_delta = -1;
}
static void delta_without_batch(struct producer_snapshot_entry *e)
{
    e->last_offset = -1;
    e->last_sequence = -1;
    e->offset_delta = 1;
}
static void delta_past_zero(struct producer_snapshot_entry *e)
{
    e->offset_delta = (int32_t)e->last_offset + 1;
}
static void coord_m2(struct producer_snapshot_entry *e)
{
    e->coordinator_epoch = -2;
}
static void txn_m2(struct producer_snapshot_entry *e)
{
    e->current_txn_first_offset = -2;
}

/* S6..S11, each with the field it names; encode refuses the same entry with -EINVAL. */
static void test_field_rules(void **state)
{
    (void)state;
    static const struct field_case cases[] = {
        {"(S6)", 0, neg_pid},
        {"(S6)", 0, min_pid},
        {"(S7)", 8, neg_epoch},
        {"last offset below -1 (S8)", 14, last_offset_m2},
        {"last sequence below -1 (S8)", 10, last_seq_m2},
        {"disagree", 10, seq_without_offset},
        {"disagree", 10, offset_without_seq},
        {"negative offset delta (S9)", 22, neg_delta},
        {"without a retained batch (S9)", 22, delta_without_batch},
        {"larger than last offset (S9)", 22, delta_past_zero},
        {"(S10)", 34, coord_m2},
        {"(S11)", 38, txn_m2},
    };
    struct producer_snapshot_entry good[3] = {varied_entry(1), varied_entry(2), varied_entry(3)};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct producer_snapshot_entry in[3];
        memcpy(in, good, sizeof(in));
        cases[k].edit(&in[2]);
        uint8_t buf[10 + 3 * 46];
        uint8_t before[sizeof(buf)];
        memset(buf, 0x5C, sizeof(buf));
        memcpy(before, buf, sizeof(buf));
        size_t len = 0;
        assert_int_equal(producer_snapshot_encode(in, 3, buf, sizeof(buf), &len), -EINVAL);
        assert_memory_equal(buf, before, sizeof(buf)); /* untouched on failure */

        /* Put the bad entry's bytes in by hand. */
        size_t ok_len;
        uint8_t *bytes = encode_alloc(good, 3, &ok_len);
        uint8_t *p = bytes + 10 + 2 * 46;
        put_be(p + 0, (uint64_t)in[2].producer_id, 8);
        put_be(p + 8, (uint16_t)in[2].epoch, 2);
        put_be(p + 10, (uint32_t)in[2].last_sequence, 4);
        put_be(p + 14, (uint64_t)in[2].last_offset, 8);
        put_be(p + 22, (uint32_t)in[2].offset_delta, 4);
        put_be(p + 26, (uint64_t)in[2].timestamp_ms, 8);
        put_be(p + 34, (uint32_t)in[2].coordinator_epoch, 4);
        put_be(p + 38, (uint64_t)in[2].current_txn_first_offset, 8);
        fix_crc(bytes, ok_len);
        expect_bad(bytes, ok_len, cases[k].rule, 10 + 2 * 46 + cases[k].field);
        free(bytes);
    }
}

/* The edges each rule allows. */
static void test_field_edges_accepted(void **state)
{
    (void)state;
    struct producer_snapshot_entry e[4] = {sample_entry(), sample_entry(), sample_entry(),
                                           sample_entry()};
    e[0].producer_id = 0;
    e[0].epoch = 0;
    e[0].last_sequence = 0;
    e[0].last_offset = 0;
    e[0].offset_delta = 0;
    e[0].coordinator_epoch = -1;
    e[0].current_txn_first_offset = 0;
    e[1].producer_id = INT64_MAX;
    e[1].epoch = INT16_MAX;
    e[1].last_sequence = INT32_MAX;
    e[1].last_offset = INT64_MAX;
    e[1].offset_delta = INT32_MAX;
    e[1].timestamp_ms = INT64_MIN;
    e[1].coordinator_epoch = INT32_MAX;
    e[1].current_txn_first_offset = INT64_MAX;
    e[2].producer_id = 1;
    e[2].last_sequence = -1;
    e[2].last_offset = -1;
    e[2].offset_delta = 0;
    e[2].current_txn_first_offset = -1;
    e[3].producer_id = 2;
    e[3].last_offset = 9;
    e[3].offset_delta = 9; /* first offset 0 */
    size_t len;
    uint8_t *buf = encode_alloc(e, 4, &len);
    assert_int_equal(producer_snapshot_decode(buf, len, NULL, NULL, NULL, NULL), 0);
    free(buf);
}

static void test_encode_errors(void **state)
{
    (void)state;
    struct producer_snapshot_entry e = sample_entry();
    uint8_t buf[56];
    size_t len = 7;
    assert_int_equal(producer_snapshot_encode(&e, 1, buf, 55, &len), -ENOSPC);
    assert_int_equal(producer_snapshot_encode(NULL, 0, buf, 9, &len), -ENOSPC);
    assert_int_equal(len, 7);
    assert_int_equal(
        producer_snapshot_encode(&e, PRODUCER_SNAPSHOT_ENTRIES_MAX + 1u, buf, SIZE_MAX, &len),
        -EINVAL);
}

/* fn runs in file order after validation; a non-zero return stops the walk and is returned. */
static void test_callback_stop(void **state)
{
    (void)state;
    struct producer_snapshot_entry in[4] = {varied_entry(1), varied_entry(2), varied_entry(3),
                                            varied_entry(4)};
    size_t len;
    uint8_t *buf = encode_alloc(in, 4, &len);
    struct producer_snapshot_entry got[4];
    struct collect c = {.e = got, .cap = 4, .stop_after = 2};
    assert_int_equal(producer_snapshot_decode(buf, len, collect_fn, &c, NULL, NULL), -ECANCELED);
    assert_int_equal(c.n, 2);
    assert_true(entry_eq(&got[0], &in[0]));
    assert_true(entry_eq(&got[1], &in[1]));
    free(buf);
}

/* ---- files ------------------------------------------------------------------------------ */

static size_t count_dir_entries(const char *dir, const char *contains)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (contains == NULL || strstr(de->d_name, contains) != NULL)
            n++;
    }
    closedir(d);
    return n;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

static void test_write_read_atomic(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct producer_snapshot_entry in[50];
    for (uint32_t i = 0; i < 50; i++)
        in[i] = varied_entry(i);

    /* A stale .tmp from a crash is replaced, and nothing but the snapshot remains. */
    char *tmp = tu_path("%s/%020d.snapshot.tmp", dir, 4242);
    touch(tmp);
    assert_int_equal(producer_snapshot_write(NULL, dir, 4242, in, 50), 0);
    assert_false(fs_exists_for_test(tmp));
    assert_int_equal(count_dir_entries(dir, NULL), 1);
    char *path = tu_path("%s/00000000000000004242.snapshot", dir);
    assert_true(fs_exists_for_test(path));

    size_t len;
    uint8_t *bytes = tu_read_file(path, &len);
    size_t want_len;
    uint8_t *want = encode_alloc(in, 50, &want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(bytes, want, len);
    free(bytes);
    free(want);

    struct producer_snapshot_entry got[50];
    struct collect c = {.e = got, .cap = 50};
    const char *why = "unset";
    size_t bad = 1;
    assert_int_equal(producer_snapshot_read(path, collect_fn, &c, &why, &bad), 0);
    assert_null(why);
    assert_int_equal(bad, 0);
    assert_int_equal(c.n, 50);
    for (uint32_t i = 0; i < 50; i++)
        assert_true(entry_eq(&got[i], &in[i]));

    /* Overwrite in place with fewer entries. */
    assert_int_equal(producer_snapshot_write(NULL, dir, 4242, in, 0), 0);
    assert_int_equal(tu_file_size(path), 10);
    assert_int_equal(count_dir_entries(dir, NULL), 1);

    /* Offset 0 and the largest offset name the files as Kafka does. */
    assert_int_equal(producer_snapshot_write(NULL, dir, 0, in, 1), 0);
    assert_int_equal(producer_snapshot_write(NULL, dir, INT64_MAX, in, 1), 0);
    char *p0 = tu_path("%s/00000000000000000000.snapshot", dir);
    char *pmax = tu_path("%s/09223372036854775807.snapshot", dir);
    assert_true(fs_exists_for_test(p0));
    assert_true(fs_exists_for_test(pmax));
    assert_int_equal(count_dir_entries(dir, ".tmp"), 0);

    free(p0);
    free(pmax);
    free(path);
    free(tmp);
    tu_rmdir_free(dir);
}

static void test_write_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct producer_snapshot_entry e[2] = {sample_entry(), sample_entry()};
    assert_int_equal(producer_snapshot_write(NULL, dir, -1, e, 1), -EINVAL);
    assert_int_equal(producer_snapshot_write(NULL, dir, 5, e, 2), -EINVAL); /* duplicate id */
    assert_int_equal(count_dir_entries(dir, NULL), 0); /* nothing, not even a .tmp */
    char *missing = tu_path("%s/missing", dir);
    assert_int_equal(producer_snapshot_write(NULL, missing, 5, e, 1), -ENOENT);
    free(missing);
    tu_rmdir_free(dir);
}

static void test_read_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *missing = tu_path("%s/00000000000000000001.snapshot", dir);
    const char *why = "unset";
    size_t bad = 1;
    assert_int_equal(producer_snapshot_read(missing, never_fn, NULL, &why, &bad), -ENOENT);
    assert_null(why);
    assert_int_equal(producer_snapshot_read(dir, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(why);
    assert_non_null(strstr(why, "regular file"));

    /* Larger than the biggest snapshot ringtail writes: rejected without reading it. */
    char *big = tu_path("%s/00000000000000000002.snapshot", dir);
    touch(big);
    tu_truncate(big, producer_snapshot_size(PRODUCER_SNAPSHOT_ENTRIES_MAX) + 1);
    assert_int_equal(producer_snapshot_read(big, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(strstr(why, "larger"));
    assert_int_equal(bad, 0);

    /* Damage on disk: flips and truncation are reported with the file's reason and offset. */
    struct producer_snapshot_entry in[3] = {varied_entry(1), varied_entry(2), varied_entry(3)};
    assert_int_equal(producer_snapshot_write(NULL, dir, 7, in, 3), 0);
    char *path = tu_path("%s/00000000000000000007.snapshot", dir);
    tu_flip_byte(path, 0, 0x02);
    assert_int_equal(producer_snapshot_read(path, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(strstr(why, "(S2)"));
    tu_flip_byte(path, 0, 0x02);
    tu_flip_byte(path, 100, 0x10);
    assert_int_equal(producer_snapshot_read(path, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(strstr(why, "(S5)"));
    assert_int_equal(bad, 2);
    tu_flip_byte(path, 100, 0x10);
    assert_int_equal(producer_snapshot_read(path, NULL, NULL, &why, &bad), 0);
    tu_truncate(path, 101);
    assert_int_equal(producer_snapshot_read(path, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(strstr(why, "(S4)"));
    assert_int_equal(bad, 101);
    tu_truncate(path, 0);
    assert_int_equal(producer_snapshot_read(path, never_fn, NULL, &why, &bad), -EBADMSG);
    assert_non_null(strstr(why, "(S1)"));

    free(path);
    free(big);
    free(missing);
    tu_rmdir_free(dir);
}

static void test_list(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int64_t *offsets = (int64_t *)1;
    uint32_t count = 99;
    assert_int_equal(producer_snapshot_list(dir, &offsets, &count), 0);
    assert_null(offsets);
    assert_int_equal(count, 0);

    struct producer_snapshot_entry e = sample_entry();
    static const int64_t written[] = {1000, 0, INT64_MAX, 5, 999999};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(producer_snapshot_write(NULL, dir, written[i], &e, 1), 0);
    static const char *const junk[] = {
        "00000000000000000007.snapshot.tmp", /* an interrupted write */
        "7.snapshot",                        /* not 20 digits */
        "0000000000000000000a.snapshot",     /* not a digit */
        "99999999999999999999.snapshot",     /* > INT64_MAX */
        "09223372036854775808.snapshot",     /* INT64_MAX + 1 */
        "00000000000000000010.log",          /* another file */
        "00000000000000000010.snapshotx",    /* suffix plus more */
        "000000000000000000010.snapshot",    /* 21 digits */
        "+0000000000000000010.snapshot",     /* a sign */
    };
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        char *p = tu_path("%s/%s", dir, junk[i]);
        touch(p);
        free(p);
    }
    assert_int_equal(producer_snapshot_list(dir, &offsets, &count), 0);
    assert_int_equal(count, 5);
    static const int64_t sorted[] = {0, 5, 1000, 999999, INT64_MAX};
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(offsets[i], sorted[i]);
    free(offsets);

    char *missing = tu_path("%s/missing", dir);
    assert_int_equal(producer_snapshot_list(missing, &offsets, &count), -ENOENT);
    assert_null(offsets);
    assert_int_equal(count, 0);
    free(missing);
    tu_rmdir_free(dir);
}

static void expect_offsets(const char *dir, const int64_t *want, uint32_t n)
{
    int64_t *offsets;
    uint32_t count;
    assert_int_equal(producer_snapshot_list(dir, &offsets, &count), 0);
    assert_int_equal(count, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(offsets[i], want[i]);
    free(offsets);
}

static void test_remove(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct producer_snapshot_entry e = sample_entry();
    for (int64_t o = 0; o <= 50; o += 10)
        assert_int_equal(producer_snapshot_write(NULL, dir, o, &e, 1), 0);
    char *junk = tu_path("%s/00000000000000000005.snapshot.tmp", dir);
    touch(junk);

    assert_int_equal(producer_snapshot_remove(NULL, dir, 20), 0);
    assert_int_equal(producer_snapshot_remove(NULL, dir, 20), 0); /* already gone: still 0 */
    assert_int_equal(producer_snapshot_remove(NULL, dir, 21), 0); /* never there */
    assert_int_equal(producer_snapshot_remove(NULL, dir, -1), -EINVAL);
    expect_offsets(dir, (const int64_t[]){0, 10, 30, 40, 50}, 5);

    assert_int_equal(producer_snapshot_remove_before(NULL, dir, 30), 0); /* 0 and 10 go; 30 stays */
    expect_offsets(dir, (const int64_t[]){30, 40, 50}, 3);
    assert_int_equal(producer_snapshot_remove_from(NULL, dir, 40), 0); /* 40 and 50 go */
    expect_offsets(dir, (const int64_t[]){30}, 1);
    assert_int_equal(producer_snapshot_remove_before(NULL, dir, 30), 0); /* nothing below 30 */
    assert_int_equal(producer_snapshot_remove_from(NULL, dir, 31), 0);   /* nothing from 31 */
    expect_offsets(dir, (const int64_t[]){30}, 1);
    assert_int_equal(producer_snapshot_remove_from(NULL, dir, 0), 0);
    expect_offsets(dir, NULL, 0);
    assert_true(fs_exists_for_test(junk)); /* not a snapshot name: left alone */

    char *missing = tu_path("%s/missing", dir);
    assert_int_equal(producer_snapshot_remove_before(NULL, missing, 10), -ENOENT);
    assert_int_equal(producer_snapshot_remove(NULL, missing, 10), -ENOENT); /* the dir fsync */
    free(missing);
    free(junk);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_bitwise_reference),
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_round_trip_0),
        cmocka_unit_test(test_round_trip_1),
        cmocka_unit_test(test_round_trip_many),
        cmocka_unit_test(test_exact_bytes_one_entry),
        cmocka_unit_test(test_exact_bytes_empty),
        cmocka_unit_test(test_every_flip_rejected),
        cmocka_unit_test(test_every_truncation_rejected),
        cmocka_unit_test(test_version_rule),
        cmocka_unit_test(test_wrong_count),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_duplicate_producer_ids),
        cmocka_unit_test(test_field_rules),
        cmocka_unit_test(test_field_edges_accepted),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_write_read_atomic),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
