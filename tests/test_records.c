/*
 * test_records.c — the record iterator (engine/log/records.c) over fetches built from raw bytes
 * (fetch_from_bytes): read_committed filtering by the aborted list (architecture.md, Rules of the protocol, rules RC1-RC4 at the
 * top of records.c, Kafka's CompletedFetch), control records never yielded, compressed batches of
 * every codec decoded and checked (a damaged or oversized one is RT_E_CORRUPT naming its
 * position, and none of its records is served), start offsets inside batches, no reallocation
 * once warm, and a property test of random transactional histories against a reference model.
 * Pure in-memory tests: they run once, not once per io backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "compression.h"
#include "fetch.h"
#include "helpers/test_util.h"

/* test_util.c calls rt_options_init; a strong definition in libringtail wins. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* ---- a log of raw batches ---------------------------------------------------------------- */

#define TLOG_BATCHES_MAX     256
#define TLOG_BATCH_BYTES_MAX (64 * 1024)

enum tkind { T_DATA, T_MARKER };

struct tbatch {
    enum tkind kind;
    int64_t base, last;
    int64_t producer_id;
    bool transactional;
    enum control_type marker;
    int codec;
    int txn; /* index into the model's transactions, or -1 */
    size_t pos, size;
};

struct tlog {
    uint8_t *buf;
    size_t len, cap;
    int64_t next_offset;
    struct tbatch b[TLOG_BATCHES_MAX];
    size_t n;
    int32_t seq[16]; /* per producer slot */
    struct compression_buffer z;
};

static void tlog_init(struct tlog *l)
{
    memset(l, 0, sizeof(*l));
    l->cap = 1 << 16;
    l->buf = malloc(l->cap);
    assert_non_null(l->buf);
}

static void tlog_reset(struct tlog *l)
{
    l->len = 0;
    l->n = 0;
    l->next_offset = 0;
    memset(l->seq, 0, sizeof(l->seq));
}

static void tlog_free(struct tlog *l)
{
    free(l->buf);
    compression_buffer_free(&l->z);
}

static void tlog_append(struct tlog *l, const uint8_t *p, size_t n)
{
    while (l->len + n > l->cap) {
        l->cap *= 2;
        l->buf = realloc(l->buf, l->cap);
        assert_non_null(l->buf);
    }
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

/* The key and value every record at `offset` carries, so a yielded view can be checked. */
static int key_of(char *out, size_t cap, int64_t offset)
{
    return snprintf(out, cap, "k%" PRId64, offset);
}

static size_t value_of(uint8_t *out, int64_t offset)
{
    size_t n = (size_t)(offset % 97);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)('a' + (offset + (int64_t)i) % 26);
    return n;
}

/* Rewrites an uncompressed batch (from batch_builder) as a compressed one: the records section
 * through compression_compress, attributes and length updated, CRC sealed. batch.h has no
 * compressed builder (batch_builder_init refuses codec bits). */
static size_t compress_batch(struct compression_buffer *z, const uint8_t *plain, size_t len,
                             int codec, uint8_t *out, size_t cap)
{
    assert_int_equal(compression_compress((enum batch_compression)codec, plain + BATCH_HEADER_BYTES,
                                          len - BATCH_HEADER_BYTES, z, COMPRESSION_LEVEL_DEFAULT),
                     0);
    size_t total = BATCH_HEADER_BYTES + z->len;
    assert_true(total <= cap);
    memcpy(out, plain, BATCH_HEADER_BYTES);
    memcpy(out + BATCH_HEADER_BYTES, z->data, z->len);
    uint16_t attributes = be16_load(out + BATCH_OFF_ATTRIBUTES);
    be16_store(out + BATCH_OFF_ATTRIBUTES, (uint16_t)(attributes | (uint16_t)codec));
    be32_store(out + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
    batch_seal_crc(out, total);
    return total;
}

/* Appends a data batch of `count` records; producer_id -1 for none. Returns its index. */
static size_t tlog_data(struct tlog *l, int64_t producer_id, bool transactional, int codec,
                        int count)
{
    static uint8_t plain[TLOG_BATCH_BYTES_MAX], packed[TLOG_BATCH_BYTES_MAX];
    assert_true(l->n < TLOG_BATCHES_MAX);
    int slot = producer_id >= 0 ? (int)(producer_id % 16) : 0;
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, plain, sizeof(plain),
                                        transactional ? BATCH_ATTR_TRANSACTIONAL : 0, producer_id,
                                        producer_id >= 0 ? 3 : -1,
                                        producer_id >= 0 ? l->seq[slot] : -1),
                     0);
    for (int i = 0; i < count; i++) {
        int64_t offset = l->next_offset + i;
        char key[32];
        uint8_t value[128], hval[32];
        struct rt_header h = {.key = "h", .key_len = 1, .value = hval};
        h.value_len = snprintf((char *)hval, sizeof(hval), "x%" PRId64, offset);
        struct rt_record r = {
            .key = key,
            .key_len = key_of(key, sizeof(key), offset),
            .value = value,
            .value_len = (int32_t)value_of(value, offset),
            .timestamp_ms = 1000 + offset,
            .headers = &h,
            .header_count = offset % 3 == 0 ? 1 : 0,
        };
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    const uint8_t *bytes = plain;
    if (codec != BATCH_COMPRESSION_NONE) {
        len = compress_batch(&l->z, plain, len, codec, packed, sizeof(packed));
        bytes = packed;
    }
    batch_stamp_base_offset((uint8_t *)bytes, l->next_offset);
    struct tbatch *t = &l->b[l->n];
    *t = (struct tbatch){.kind = T_DATA,
                         .base = l->next_offset,
                         .last = l->next_offset + count - 1,
                         .producer_id = producer_id,
                         .transactional = transactional,
                         .codec = codec,
                         .txn = -1,
                         .pos = l->len,
                         .size = len};
    tlog_append(l, bytes, len);
    l->next_offset += count;
    if (producer_id >= 0)
        l->seq[slot] += count;
    return l->n++;
}

static size_t tlog_marker(struct tlog *l, int64_t producer_id, enum control_type type)
{
    assert_true(l->n < TLOG_BATCHES_MAX);
    uint8_t m[CONTROL_BATCH_BYTES];
    control_batch_build(m, producer_id, 3, type, 7, 1000 + l->next_offset);
    batch_stamp_base_offset(m, l->next_offset);
    struct tbatch *t = &l->b[l->n];
    *t = (struct tbatch){.kind = T_MARKER,
                         .base = l->next_offset,
                         .last = l->next_offset,
                         .producer_id = producer_id,
                         .transactional = true,
                         .marker = type,
                         .txn = -1,
                         .pos = l->len,
                         .size = CONTROL_BATCH_BYTES};
    tlog_append(l, m, sizeof(m));
    l->next_offset++;
    return l->n++;
}

/* Bytes of batches [from, to). */
static const uint8_t *tlog_bytes(const struct tlog *l, size_t from, size_t to, size_t *len)
{
    if (from >= to) {
        *len = 0;
        return l->buf;
    }
    *len = l->b[to - 1].pos + l->b[to - 1].size - l->b[from].pos;
    return l->buf + l->b[from].pos;
}

/* ---- iterating ---------------------------------------------------------------------------- */

/* Checks that a view is the record the log wrote at its offset. */
static void check_view(const struct rt_record_view *r)
{
    char key[32];
    uint8_t value[128];
    int klen = key_of(key, sizeof(key), r->offset);
    assert_int_equal(r->key_len, klen);
    assert_memory_equal(r->key, key, (size_t)klen);
    size_t vlen = value_of(value, r->offset);
    assert_int_equal(r->value_len, (int32_t)vlen);
    if (vlen > 0)
        assert_memory_equal(r->value, value, vlen);
    assert_int_equal(r->timestamp_ms, 1000 + r->offset);
    assert_int_equal(r->header_count, r->offset % 3 == 0 ? 1 : 0);
    if (r->header_count) {
        struct rt_header h;
        char hv[32];
        int n = snprintf(hv, sizeof(hv), "x%" PRId64, r->offset);
        assert_int_equal(rt_record_header(r, 0, &h), 0);
        assert_int_equal(h.key_len, 1);
        assert_memory_equal(h.key, "h", 1);
        assert_int_equal(h.value_len, n);
        assert_memory_equal(h.value, hv, (size_t)n);
    }
}

/* Iterates from `start` into offsets[]; returns the final code (RT_E_END when all went well). */
static int collect(rt_fetch *f, int64_t start, int64_t *offsets, size_t max, size_t *count)
{
    struct rt_records it;
    assert_int_equal(rt_records_init(&it, f, start), 0);
    struct rt_record_view r;
    int rc;
    *count = 0;
    while ((rc = rt_records_next(&it, &r)) == 0) {
        assert_true(*count < max);
        assert_true(r.offset >= start);
        if (*count > 0)
            assert_true(r.offset > offsets[*count - 1]);
        check_view(&r);
        offsets[(*count)++] = r.offset;
    }
    return rc;
}

static void expect_offsets(const uint8_t *data, size_t len, enum rt_isolation isolation,
                           const struct rt_aborted_txn *aborted, size_t aborted_count,
                           int64_t start, const int64_t *want, size_t want_count)
{
    rt_fetch *f = NULL;
    assert_int_equal(fetch_from_bytes(&f, data, len, isolation, aborted, aborted_count), 0);
    int64_t got[512];
    size_t n = 0;
    assert_int_equal(collect(f, start, got, 512, &n), RT_E_END);
    if (n != want_count) {
        fprintf(stderr, "isolation %d start %" PRId64 ": got %zu records, want %zu\n",
                (int)isolation, start, n, want_count);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %" PRId64, got[i]);
        fputc('\n', stderr);
    }
    assert_int_equal(n, want_count);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
    rt_fetch_release(f);
}

#define A          1000
#define B          2000
#define C          3000
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- cases --------------------------------------------------------------------------------- */

/* RC1-RC4: three producers interleaved; B aborts, A commits, C is idempotent only. */
static void test_interleaved_transactions(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_data(&l, A, true, 0, 2);       /* 0-1 */
    tlog_data(&l, B, true, 0, 2);       /* 2-3 */
    tlog_data(&l, A, true, 0, 1);       /* 4 */
    tlog_data(&l, C, false, 0, 1);      /* 5 */
    tlog_data(&l, B, true, 0, 1);       /* 6 */
    tlog_marker(&l, B, CONTROL_ABORT);  /* 7 */
    tlog_marker(&l, A, CONTROL_COMMIT); /* 8 */
    tlog_data(&l, -1, false, 0, 2);     /* 9-10 */
    struct rt_aborted_txn aborted[] = {{B, 2}};
    int64_t committed[] = {0, 1, 4, 5, 9, 10};
    int64_t all[] = {0, 1, 2, 3, 4, 5, 6, 9, 10};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 0, committed, N_ELEMS(committed));
    /* read_uncommitted ignores the aborted list and skips only the control records. */
    expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, aborted, 1, 0, all, N_ELEMS(all));
    expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 0, all, N_ELEMS(all));
    /* Without an aborted list read_committed returns everything but control records. */
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, NULL, 0, 0, all, N_ELEMS(all));
    tlog_free(&l);
}

/* An aborted transaction that began before the fetch: its entry's firstOffset lies below the
 * fetch's first batch, and the first batch taken pulls it in (RC1). */
static void test_aborted_txn_spans_fetch_start(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_data(&l, A, true, 0, 3);               /* 0-2 */
    size_t from = tlog_data(&l, A, true, 0, 3); /* 3-5 */
    tlog_data(&l, B, true, 0, 1);               /* 6 */
    tlog_marker(&l, A, CONTROL_ABORT);          /* 7 */
    tlog_data(&l, A, true, 0, 1);               /* 8: A's next transaction */
    tlog_marker(&l, B, CONTROL_COMMIT);         /* 9 */
    tlog_marker(&l, A, CONTROL_COMMIT);         /* 10 */
    size_t len;
    const uint8_t *bytes = tlog_bytes(&l, from, l.n, &len);
    struct rt_aborted_txn aborted[] = {{A, 0}};
    int64_t want[] = {6, 8};
    expect_offsets(bytes, len, RT_READ_COMMITTED, aborted, 1, 3, want, 2);
    expect_offsets(bytes, len, RT_READ_COMMITTED, aborted, 1, 4, want, 2);
    int64_t all[] = {4, 5, 6, 8};
    expect_offsets(bytes, len, RT_READ_UNCOMMITTED, NULL, 0, 4, all, 4);
    tlog_free(&l);
}

/* A producer aborts, then commits a later transaction, then aborts and commits again: its ABORT
 * marker takes it out of the set (RC2), so the later transactions are returned. */
static void test_abort_then_commit(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_data(&l, A, true, 0, 2);       /* 0-1 aborted */
    tlog_marker(&l, A, CONTROL_ABORT);  /* 2 */
    tlog_data(&l, A, true, 0, 2);       /* 3-4 committed */
    tlog_marker(&l, A, CONTROL_COMMIT); /* 5 */
    tlog_data(&l, A, true, 0, 1);       /* 6 aborted */
    tlog_data(&l, B, true, 0, 1);       /* 7 committed */
    tlog_marker(&l, A, CONTROL_ABORT);  /* 8 */
    tlog_data(&l, A, true, 0, 1);       /* 9 committed */
    tlog_marker(&l, B, CONTROL_COMMIT); /* 10 */
    tlog_marker(&l, A, CONTROL_COMMIT); /* 11 */
    struct rt_aborted_txn aborted[] = {{A, 0}, {A, 6}};
    int64_t want[] = {3, 4, 7, 9};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 2, 0, want, N_ELEMS(want));
    /* Starting past the first abort: the list no longer holds it (its marker is below start). */
    int64_t want5[] = {7, 9};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted + 1, 1, 5, want5, 2);
    /* Iterating from a later start over the same fetch still sees the early markers (RC1-RC3 run
     * over batches below the start offset). */
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 2, 5, want5, 2);
    int64_t want3[] = {3, 4, 7, 9};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 2, 3, want3, 4);
    tlog_free(&l);
}

/* Non-transactional batches of a producer in the aborted set are returned (RC3 needs the
 * transactional bit), as are batches without a producer id. */
static void test_non_transactional_of_aborted_producer(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_data(&l, A, true, 0, 1);      /* 0 aborted */
    tlog_data(&l, A, false, 0, 2);     /* 1-2 idempotent, not transactional */
    tlog_data(&l, -1, false, 0, 1);    /* 3 no producer */
    tlog_data(&l, A, true, 0, 1);      /* 4 aborted */
    tlog_marker(&l, A, CONTROL_ABORT); /* 5 */
    struct rt_aborted_txn aborted[] = {{A, 0}};
    int64_t want[] = {1, 2, 3};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 0, want, 3);
    tlog_free(&l);
}

/* Empty transactions: a marker with no data. An empty aborted transaction's entry has
 * firstOffset = its marker's offset (docs/format.md §E.1). */
static void test_empty_transactions(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_marker(&l, A, CONTROL_ABORT);  /* 0: empty abort */
    tlog_data(&l, B, true, 0, 1);       /* 1 */
    tlog_marker(&l, A, CONTROL_COMMIT); /* 2: empty commit */
    tlog_data(&l, A, true, 0, 1);       /* 3 */
    tlog_marker(&l, B, CONTROL_COMMIT); /* 4 */
    tlog_marker(&l, A, CONTROL_COMMIT); /* 5 */
    struct rt_aborted_txn aborted[] = {{A, 0}};
    int64_t want[] = {1, 3};
    expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 0, want, 2);
    expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 0, want, 2);
    /* A fetch of markers only yields nothing, under both isolations. */
    size_t len;
    const uint8_t *bytes = tlog_bytes(&l, 4, 6, &len);
    expect_offsets(bytes, len, RT_READ_COMMITTED, NULL, 0, 4, NULL, 0);
    expect_offsets(bytes, len, RT_READ_UNCOMMITTED, NULL, 0, 0, NULL, 0);
    /* And an empty fetch ends at once. */
    expect_offsets(NULL, 0, RT_READ_COMMITTED, NULL, 0, 0, NULL, 0);
    tlog_free(&l);
}

/* Every codec, committed and aborted, with start offsets inside the batches. Keys of
 * uncompressed batches point into the fetched bytes; those of compressed ones do not. */
static void test_every_codec(void **state)
{
    (void)state;
    for (int codec = BATCH_COMPRESSION_NONE; codec <= BATCH_COMPRESSION_ZSTD; codec++) {
        struct tlog l;
        tlog_init(&l);
        tlog_data(&l, A, true, codec, 50);   /* 0-49 committed */
        tlog_data(&l, B, true, codec, 40);   /* 50-89 aborted */
        tlog_data(&l, -1, false, codec, 30); /* 90-119 */
        tlog_marker(&l, B, CONTROL_ABORT);   /* 120 */
        tlog_marker(&l, A, CONTROL_COMMIT);  /* 121 */
        struct rt_aborted_txn aborted[] = {{B, 50}};
        int64_t want[120];
        size_t n = 0;
        for (int64_t o = 0; o < 120; o++)
            if (o < 50 || o >= 90)
                want[n++] = o;
        expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 0, want, n);
        expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 17, want + 17, n - 17);
        expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 60, want + 50, n - 50);
        expect_offsets(l.buf, l.len, RT_READ_COMMITTED, aborted, 1, 95, want + 55, n - 55);
        int64_t all[120];
        for (int64_t o = 0; o < 120; o++)
            all[o] = o;
        expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 0, all, 120);
        expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 49, all + 49, 71);
        expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 119, all + 119, 1);
        expect_offsets(l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0, 120, NULL, 0);

        rt_fetch *f = NULL;
        assert_int_equal(fetch_from_bytes(&f, l.buf, l.len, RT_READ_UNCOMMITTED, NULL, 0), 0);
        struct rt_records it;
        struct rt_record_view r;
        assert_int_equal(rt_records_init(&it, f, 0), 0);
        assert_int_equal(rt_records_next(&it, &r), 0);
        uintptr_t key = (uintptr_t)r.key, lo = (uintptr_t)l.buf;
        bool in_mapping = key >= lo && key < lo + l.len;
        assert_true(in_mapping == (codec == BATCH_COMPRESSION_NONE));
        rt_fetch_release(f);
        tlog_free(&l);
    }
}

/* Damaged compressed batches: the batch before is served, the damaged one never, and the error
 * names the segment and the batch's byte position. */
static void expect_corrupt_second(const uint8_t *first, size_t first_len, const uint8_t *bad,
                                  size_t bad_len, const char *why_part)
{
    uint8_t *buf = malloc(first_len + bad_len);
    assert_non_null(buf);
    memcpy(buf, first, first_len);
    memcpy(buf + first_len, bad, bad_len);
    rt_fetch *f = NULL;
    assert_int_equal(fetch_from_bytes(&f, buf, first_len + bad_len, RT_READ_UNCOMMITTED, NULL, 0),
                     0);
    struct rt_records it;
    struct rt_record_view r;
    assert_int_equal(rt_records_init(&it, f, 0), 0);
    int64_t first_last = (int64_t)be64_load(first) + (int32_t)be32_load(first + 23);
    for (int64_t o = 0; o <= first_last; o++) {
        assert_int_equal(rt_records_next(&it, &r), 0);
        assert_int_equal(r.offset, o);
    }
    assert_int_equal(rt_records_next(&it, &r), RT_E_CORRUPT);
    char want[64];
    snprintf(want, sizeof(want), "(memory): offset %zu: ", first_len);
    const char *detail = rt_error_detail();
    if (!strstr(detail, want) || !strstr(detail, why_part))
        fail_msg("detail '%s' lacks '%s' or '%s'", detail, want, why_part);
    /* Starting past the good batch: still corrupt, still nothing served. */
    assert_int_equal(rt_records_init(&it, f, first_last + 1), 0);
    assert_int_equal(rt_records_next(&it, &r), RT_E_CORRUPT);
    rt_fetch_release(f);
    free(buf);
}

static void test_corrupt_compressed(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    tlog_data(&l, -1, false, 0, 3);                                   /* 0-2 */
    size_t gz = tlog_data(&l, -1, false, BATCH_COMPRESSION_GZIP, 20); /* 3-22 */
    size_t first_len = l.b[0].size;
    uint8_t bad[TLOG_BATCH_BYTES_MAX];
    size_t bad_len = l.b[gz].size;

    /* A flipped byte inside the deflate stream, CRC resealed so only the codec can tell. */
    memcpy(bad, l.buf + l.b[gz].pos, bad_len);
    bad[BATCH_HEADER_BYTES + (bad_len - BATCH_HEADER_BYTES) / 2] ^= 0x55;
    batch_seal_crc(bad, bad_len);
    expect_corrupt_second(l.buf, first_len, bad, bad_len, "compressed records: ");

    /* The same flip without resealing: the CRC catches it first. */
    memcpy(bad, l.buf + l.b[gz].pos, bad_len);
    bad[BATCH_HEADER_BYTES + 3] ^= 0x01;
    expect_corrupt_second(l.buf, first_len, bad, bad_len, "crc mismatch");

    /* A valid stream whose records disagree with the header: recordCount one too high. */
    memcpy(bad, l.buf + l.b[gz].pos, bad_len);
    be32_store(bad + BATCH_OFF_RECORD_COUNT, 21);
    be32_store(bad + BATCH_OFF_LAST_OFFSET_DELTA, 20);
    batch_seal_crc(bad, bad_len);
    expect_corrupt_second(l.buf, first_len, bad, bad_len, "fewer records than recordCount");

    /* ... and one too low: bytes after the last record. */
    be32_store(bad + BATCH_OFF_RECORD_COUNT, 19);
    be32_store(bad + BATCH_OFF_LAST_OFFSET_DELTA, 18);
    batch_seal_crc(bad, bad_len);
    expect_corrupt_second(l.buf, first_len, bad, bad_len, "bytes after the last record");

    /* Records whose offset deltas are out of order (two uncompressed batches' records glued
     * together: deltas 0,1,0), compressed with zstd. */
    {
        struct tlog m;
        tlog_init(&m);
        tlog_data(&m, -1, false, 0, 2);
        tlog_data(&m, -1, false, 0, 1);
        uint8_t plain[1024];
        size_t s0 = m.b[0].size, s1 = m.b[1].size;
        memcpy(plain, m.buf, s0);
        memcpy(plain + s0, m.buf + m.b[1].pos + BATCH_HEADER_BYTES, s1 - BATCH_HEADER_BYTES);
        size_t plen = s0 + s1 - BATCH_HEADER_BYTES;
        be32_store(plain + BATCH_OFF_RECORD_COUNT, 3);
        be32_store(plain + BATCH_OFF_LAST_OFFSET_DELTA, 2);
        bad_len = compress_batch(&m.z, plain, plen, BATCH_COMPRESSION_ZSTD, bad, sizeof(bad));
        batch_stamp_base_offset(bad, 3);
        expect_corrupt_second(l.buf, first_len, bad, bad_len, "offsetDelta out of sequence");
        tlog_free(&m);
    }

    /* A decompression bomb: 65 MiB of zeros in a few KiB of zstd. */
    {
        size_t big = (size_t)65 << 20;
        uint8_t *zeros = calloc(1, big);
        assert_non_null(zeros);
        struct compression_buffer z = COMPRESSION_BUFFER_INIT;
        assert_int_equal(
            compression_compress(BATCH_COMPRESSION_ZSTD, zeros, big - BATCH_HEADER_BYTES, &z, 1),
            0);
        free(zeros);
        size_t total = BATCH_HEADER_BYTES + z.len;
        uint8_t *bomb = malloc(total);
        assert_non_null(bomb);
        memcpy(bomb, l.buf + l.b[gz].pos, BATCH_HEADER_BYTES);
        memcpy(bomb + BATCH_HEADER_BYTES, z.data, z.len);
        be16_store(bomb + BATCH_OFF_ATTRIBUTES, BATCH_COMPRESSION_ZSTD);
        be32_store(bomb + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
        batch_seal_crc(bomb, total);
        expect_corrupt_second(l.buf, first_len, bomb, total, "expand beyond");
        free(bomb);
        compression_buffer_free(&z);
    }
    tlog_free(&l);
}

/* Once warm, iterating again allocates nothing: the set and the decompression buffer keep
 * their storage (same pointers, same capacities). */
static void test_no_reallocation_when_warm(void **state)
{
    (void)state;
    struct tlog l;
    tlog_init(&l);
    struct rt_aborted_txn aborted[8];
    for (int p = 0; p < 8; p++) {
        tlog_data(&l, A + p, true, BATCH_COMPRESSION_LZ4, 10 + p);
        aborted[p] = (struct rt_aborted_txn){A + p, l.b[l.n - 1].base};
    }
    for (int p = 0; p < 8; p++)
        tlog_marker(&l, A + p, CONTROL_ABORT);
    tlog_data(&l, B, true, BATCH_COMPRESSION_SNAPPY, 100);
    tlog_marker(&l, B, CONTROL_COMMIT);
    rt_fetch *fh = NULL;
    assert_int_equal(fetch_from_bytes(&fh, l.buf, l.len, RT_READ_COMMITTED, aborted, 8), 0);
    struct rt_fetch *f = (struct rt_fetch *)fh;
    int64_t got[512];
    size_t n = 0;
    assert_int_equal(collect(fh, 0, got, 512, &n), RT_E_END);
    assert_int_equal(n, 100);
    assert_true(f->aborted_producer_capacity >= 8);
    int64_t *set = f->aborted_producers;
    size_t set_cap = f->aborted_producer_capacity;
    uint8_t *dz = f->decompressed.data;
    size_t dz_cap = f->decompressed.cap;
    for (int round = 0; round < 3; round++) {
        assert_int_equal(collect(fh, 0, got, 512, &n), RT_E_END);
        assert_int_equal(n, 100);
        assert_ptr_equal(f->aborted_producers, set);
        assert_int_equal(f->aborted_producer_capacity, set_cap);
        assert_ptr_equal(f->decompressed.data, dz);
        assert_int_equal(f->decompressed.cap, dz_cap);
    }
    rt_fetch_release(fh);
    tlog_free(&l);
}

/* ---- property test ------------------------------------------------------------------------ */

struct mtxn {
    int64_t producer_id;
    int64_t first;  /* first offset (the marker's for an empty transaction) */
    int64_t marker; /* offset of its marker, or -1 while open */
    enum control_type outcome;
};

struct model {
    struct mtxn t[TLOG_BATCHES_MAX];
    size_t n;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint32_t below(uint32_t n)
{
    return (uint32_t)(rng() % n);
}

static int random_codec(void)
{
    return below(3) == 0 ? (int)below(5) : BATCH_COMPRESSION_NONE;
}

/* A random history: several producers, transactional batches interleaved, commits, aborts, empty
 * transactions, idempotent and plain batches; every transaction ends before the history does. */
static void make_history(struct tlog *l, struct model *m)
{
    tlog_reset(l);
    m->n = 0;
    int producers = 1 + (int)below(4);
    int open[4] = {-1, -1, -1, -1};
    int steps = 3 + (int)below(40);
    for (int s = 0; s < steps || open[0] >= 0 || open[1] >= 0 || open[2] >= 0 || open[3] >= 0;
         s++) {
        int p = (int)below((uint32_t)producers);
        int64_t pid = A + p;
        uint32_t action = s < steps ? below(100) : 60;
        if (action < 45) { /* transactional data */
            if (open[p] < 0) {
                open[p] = (int)m->n;
                m->t[m->n++] = (struct mtxn){pid, l->next_offset, -1, CONTROL_COMMIT};
            }
            size_t b = tlog_data(l, pid, true, random_codec(), 1 + (int)below(4));
            l->b[b].txn = open[p];
        } else if (action < 55) { /* idempotent or plain */
            tlog_data(l, below(2) ? pid : -1, false, random_codec(), 1 + (int)below(3));
        } else { /* end a transaction (or an empty one) */
            if (open[p] < 0) {
                if (s >= steps || below(4) != 0)
                    continue;
                open[p] = (int)m->n;
                m->t[m->n++] = (struct mtxn){pid, l->next_offset, -1, CONTROL_COMMIT};
            }
            enum control_type type = below(2) ? CONTROL_ABORT : CONTROL_COMMIT;
            size_t b = tlog_marker(l, pid, type);
            l->b[b].txn = open[p];
            m->t[open[p]].marker = l->b[b].base;
            m->t[open[p]].outcome = type;
            open[p] = -1;
        }
    }
}

static int cmp_aborted(const void *a, const void *b)
{
    const struct rt_aborted_txn *x = a, *y = b;
    return x->first_offset < y->first_offset ? -1 : x->first_offset > y->first_offset;
}

/* One fetch of the log as it stood after its first `k` batches. */
static void check_fetch(const struct tlog *l, const struct model *m, size_t k)
{
    int64_t hw = l->b[k - 1].last + 1;
    int64_t lso = hw;
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].first < hw && (m->t[i].marker < 0 || m->t[i].marker >= hw) &&
            m->t[i].first < lso)
            lso = m->t[i].first;
    enum rt_isolation iso = below(2) ? RT_READ_COMMITTED : RT_READ_UNCOMMITTED;
    int64_t bound = iso == RT_READ_COMMITTED ? lso : hw;
    int64_t start = (int64_t)below((uint32_t)bound + 1);
    /* The batches the fetch returns: from the one holding start, up to a random cut, below the
     * bound; sometimes from the very first batch (the iterator skips what is below start). */
    size_t from = 0;
    while (from < k && l->b[from].last < start)
        from++;
    size_t limit = from;
    while (limit < k && l->b[limit].last < bound)
        limit++;
    size_t to = limit > from ? from + 1 + below((uint32_t)(limit - from)) : from;
    if (below(4) == 0)
        to = limit;
    /* Sometimes the fetch was made from offset 0 and the iterator starts later: the aborted
     * list then holds transactions that ended before start, whose markers the iterator must
     * still see. */
    int64_t list_start = start;
    if (below(4) == 0) {
        from = 0;
        list_start = 0;
    }
    if (to < from)
        to = from;
    int64_t upper = to > 0 ? l->b[to - 1].last + 1 : 0;
    if (upper < start)
        upper = start;
    /* architecture.md, Rules of the protocol: every aborted transaction with lastOffset >= start and firstOffset < upper, as
     * the txn indexes hold them at this point (markers below hw), sorted by firstOffset. */
    struct rt_aborted_txn aborted[TLOG_BATCHES_MAX];
    size_t na = 0;
    if (iso == RT_READ_COMMITTED)
        for (size_t i = 0; i < m->n; i++)
            if (m->t[i].marker >= 0 && m->t[i].marker < hw && m->t[i].outcome == CONTROL_ABORT &&
                m->t[i].marker >= list_start && m->t[i].first < upper)
                aborted[na++] = (struct rt_aborted_txn){m->t[i].producer_id, m->t[i].first};
    qsort(aborted, na, sizeof(aborted[0]), cmp_aborted);
    /* The model: data records of [from, to) at or above start, less aborted ones. */
    int64_t want[2048];
    size_t nw = 0;
    for (size_t i = from; i < to; i++) {
        const struct tbatch *b = &l->b[i];
        if (b->kind != T_DATA)
            continue;
        if (iso == RT_READ_COMMITTED && b->transactional) {
            assert_true(b->txn >= 0);
            const struct mtxn *t = &m->t[b->txn];
            assert_true(t->marker >= 0 && t->marker < hw); /* below the LSO: ended */
            if (t->outcome == CONTROL_ABORT)
                continue;
        }
        for (int64_t o = b->base; o <= b->last; o++)
            if (o >= start)
                want[nw++] = o;
    }
    size_t len;
    const uint8_t *bytes = tlog_bytes(l, from, to, &len);
    rt_fetch *f = NULL;
    assert_int_equal(fetch_from_bytes(&f, bytes, len, iso, aborted, na), 0);
    int64_t got[2048];
    size_t ng = 0;
    int rc = collect(f, start, got, 2048, &ng);
    if (rc != RT_E_END || ng != nw || memcmp(got, want, nw * sizeof(want[0])) != 0) {
        fprintf(stderr,
                "mismatch: seed state %" PRIu64 " k %zu iso %d start %" PRId64 " batches [%zu, %zu)"
                " rc %d (%s) got %zu want %zu\n",
                rng_state, k, (int)iso, start, from, to, rc, rt_error_detail(), ng, nw);
        for (size_t i = 0; i < l->n; i++)
            fprintf(stderr,
                    "  batch %zu: %s pid %" PRId64 " %s [%" PRId64 ", %" PRId64 "] txn %d\n", i,
                    l->b[i].kind == T_DATA            ? "data"
                    : l->b[i].marker == CONTROL_ABORT ? "ABORT"
                                                      : "COMMIT",
                    l->b[i].producer_id, l->b[i].transactional ? "txn" : "-", l->b[i].base,
                    l->b[i].last, l->b[i].txn);
        fail();
    }
    rt_fetch_release(f);
}

static void test_property_random_histories(void **state)
{
    (void)state;
    const char *seed_env = getenv("RT_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);
    rng_state = seed ? seed : 1;
    fprintf(stderr, "property test seed %" PRIu64 " (RT_TEST_SEED to repeat)\n", seed);
    struct tlog *l = malloc(sizeof(*l));
    struct model *m = malloc(sizeof(*m));
    assert_non_null(l);
    assert_non_null(m);
    tlog_init(l);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t histories = 0, fetches = 0;
    for (; histories < 20000; histories++) {
        make_history(l, m);
        if (l->n == 0)
            continue;
        for (int j = 0; j < 8; j++, fetches++)
            check_fetch(l, m, 1 + below((uint32_t)l->n));
        check_fetch(l, m, l->n);
        fetches++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (histories >= 300 &&
            (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 > 4000)
            break;
    }
    fprintf(stderr, "property test: %zu histories, %zu fetches\n", histories, fetches);
    tlog_free(l);
    free(l);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved_transactions),
        cmocka_unit_test(test_aborted_txn_spans_fetch_start),
        cmocka_unit_test(test_abort_then_commit),
        cmocka_unit_test(test_non_transactional_of_aborted_producer),
        cmocka_unit_test(test_empty_transactions),
        cmocka_unit_test(test_every_codec),
        cmocka_unit_test(test_corrupt_compressed),
        cmocka_unit_test(test_no_reallocation_when_warm),
        cmocka_unit_test(test_property_random_histories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
