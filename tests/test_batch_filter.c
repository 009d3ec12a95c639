/*
 * test_batch_filter.c — the log cleaner's batch rewrite (engine/log/batch_filter.c, BF1-BF5;
 * docs/format.md A.9 CL7, B.7 V10c/V13c): a batch of keyed records filtered by key keeps its
 * baseOffset, lastOffsetDelta, producer fields and attributes, its kept records byte for byte
 * with their offsets and timestamps, a recomputed maxTimestamp and a valid CRC; a compressed
 * batch is compressed again with its codec; a batch with nothing kept is dropped, or written as
 * its empty header when it is a producer's last; the relaxed read rules accept these batches
 * and the strict ones (appends) do not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "batch_filter.h"
#include "compression.h"
#include "msgset.h"
#include "records.h"

#define N 6

/* A batch of N records with keys "k0".."k5" (record i at timestamp 1000 + 10 i), producer 7,
 * epoch 2, base sequence 40, base offset 500, then compressed with codec. */
static size_t build(uint8_t *out, size_t cap, int codec, int16_t attrs)
{
    static uint8_t plain[4096];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, plain, sizeof plain, attrs, 7, 2, 40), 0);
    for (int i = 0; i < N; i++) {
        char key[8], val[16];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "value-%d", i);
        struct rt_record r = {.key = key,
                              .key_len = (int32_t)strlen(key),
                              .value = val,
                              .value_len = (int32_t)strlen(val),
                              .timestamp_ms = 1000 + 10 * i};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    batch_stamp_base_offset(plain, 500);
    if (codec == BATCH_COMPRESSION_NONE) {
        assert_true(len <= cap);
        memcpy(out, plain, len);
        return len;
    }
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_compress((enum batch_compression)codec, plain + BATCH_HEADER_BYTES,
                                          len - BATCH_HEADER_BYTES, &z, COMPRESSION_LEVEL_DEFAULT),
                     0);
    size_t total = BATCH_HEADER_BYTES + z.len;
    assert_true(total <= cap);
    memcpy(out, plain, BATCH_HEADER_BYTES);
    memcpy(out + BATCH_HEADER_BYTES, z.data, z.len);
    be16_store(out + BATCH_OFF_ATTRIBUTES, (uint16_t)(attrs | codec));
    be32_store(out + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
    batch_seal_crc(out, total);
    compression_buffer_free(&z);
    return total;
}

/* Keeps the records whose key's digit is set in *mask. */
static int by_mask(void *ctx, const struct batch_filter_record *r, bool *keep)
{
    const unsigned *mask = ctx;
    assert_int_equal(r->key_len, 2);
    int i = r->key[1] - '0';
    assert_int_equal(r->offset, 500 + i); /* offsets as appended */
    *keep = (*mask >> i) & 1u;
    return 0;
}

/* Filters with mask {1, 3, 4} and checks BF1-BF4 and the read rules. */
static void check_rewrite(int codec, int16_t attrs)
{
    static uint8_t in[8192];
    size_t len = build(in, sizeof in, codec, attrs);
    struct batch_header h;
    assert_int_equal(batch_validate_stored(in, len, false, &h, NULL), 0);
    struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    unsigned mask = (1u << 1) | (1u << 3) | (1u << 4);
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    struct batch_header nh;
    assert_int_equal(
        batch_filter(in, len, &h, false, by_mask, &mask, &s, &res, &out, &out_len, &nh), 0);
    assert_int_equal(res, BATCH_FILTER_REWRITTEN);
    /* BF1 */
    assert_int_equal(nh.base_offset, 500);
    assert_int_equal(nh.last_offset_delta, N - 1);
    assert_int_equal(nh.producer_id, 7);
    assert_int_equal(nh.producer_epoch, 2);
    assert_int_equal(nh.base_sequence, 40);
    assert_int_equal(nh.attributes, h.attributes); /* codec, transactional kept (BF3) */
    assert_int_equal(nh.base_timestamp, h.base_timestamp);
    assert_int_equal(nh.record_count, 3);
    /* BF4: CreateTime: the kept records' largest timestamp (record 4's) */
    assert_int_equal(nh.max_timestamp, 1040);
    /* CRC valid, V10c/V13c accept it, the strict rules do not */
    const char *why = NULL;
    struct batch_header vh;
    assert_int_equal(batch_validate_stored(out, out_len, true, &vh, &why), 0);
    struct compression_buffer scratch = COMPRESSION_BUFFER_INIT;
    const uint8_t *rp = NULL, *re = NULL;
    assert_int_equal(records_validate_stored(out, out_len, &vh, true, &scratch, &rp, &re, &why), 0);
    assert_int_not_equal(batch_validate(out, out_len, 0, &vh, NULL) == 0 &&
                             records_validate(out, out_len, &vh, &scratch, NULL, NULL, NULL) == 0,
                         1);
    /* BF2: the kept records, offsets and timestamps as they were */
    assert_int_equal(records_validate_stored(out, out_len, &vh, true, &scratch, &rp, &re, &why), 0);
    const int want[] = {1, 3, 4};
    for (int i = 0; i < 3; i++) {
        struct record_view rv;
        int n = record_decode(rp, re, &rv, &why);
        assert_true(n > 0);
        assert_int_equal(rv.offset_delta, want[i]);
        assert_int_equal(nh.base_timestamp + rv.timestamp_delta, 1000 + 10 * want[i]);
        char key[8];
        snprintf(key, sizeof key, "k%d", want[i]);
        assert_int_equal(rv.key_len, 2);
        assert_memory_equal(rv.key, key, 2);
        rp += n;
    }
    assert_ptr_equal(rp, re);
    compression_buffer_free(&scratch);
    batch_filter_scratch_free(&s);
}

static void rewrite_uncompressed(void **state)
{
    (void)state;
    check_rewrite(BATCH_COMPRESSION_NONE, 0);
}

static void rewrite_compressed(void **state)
{
    (void)state;
    const int codecs[] = {BATCH_COMPRESSION_GZIP, BATCH_COMPRESSION_SNAPPY, BATCH_COMPRESSION_LZ4,
                          BATCH_COMPRESSION_ZSTD};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        check_rewrite(codecs[i], BATCH_ATTR_TRANSACTIONAL);
}

static void all_kept_is_whole(void **state)
{
    (void)state;
    static uint8_t in[4096];
    size_t len = build(in, sizeof in, BATCH_COMPRESSION_LZ4, 0);
    struct batch_header h, nh;
    assert_int_equal(batch_validate_stored(in, len, false, &h, NULL), 0);
    struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    unsigned mask = (1u << N) - 1;
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    assert_int_equal(batch_filter(in, len, &h, true, by_mask, &mask, &s, &res, &out, &out_len, &nh),
                     0);
    assert_int_equal(res, BATCH_FILTER_WHOLE);
    assert_ptr_equal(out, in);
    assert_int_equal(out_len, len);
    batch_filter_scratch_free(&s);
}

/* BF5: nothing kept: dropped, or (a producer's last batch) the empty header. */
static void none_kept(void **state)
{
    (void)state;
    static uint8_t in[4096];
    size_t len = build(in, sizeof in, BATCH_COMPRESSION_ZSTD, BATCH_ATTR_TRANSACTIONAL);
    struct batch_header h, nh;
    assert_int_equal(batch_validate_stored(in, len, false, &h, NULL), 0);
    struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    unsigned mask = 0;
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    assert_int_equal(
        batch_filter(in, len, &h, false, by_mask, &mask, &s, &res, &out, &out_len, &nh), 0);
    assert_int_equal(res, BATCH_FILTER_DROP);
    for (int with_fn = 0; with_fn < 2; with_fn++) {
        assert_int_equal(batch_filter(in, len, &h, true, with_fn ? by_mask : NULL, &mask, &s, &res,
                                      &out, &out_len, &nh),
                         0);
        assert_int_equal(res, BATCH_FILTER_REWRITTEN);
        assert_int_equal(out_len, BATCH_HEADER_BYTES);
        assert_int_equal(nh.record_count, 0);
        assert_int_equal(nh.base_offset, 500);
        assert_int_equal(nh.last_offset_delta, N - 1); /* the producer's last sequence survives */
        assert_int_equal(nh.producer_id, 7);
        assert_int_equal(nh.producer_epoch, 2);
        assert_int_equal(nh.base_sequence, 40);
        assert_int_equal(nh.attributes, BATCH_ATTR_TRANSACTIONAL); /* codec none */
        assert_int_equal(nh.base_timestamp, h.max_timestamp);
        assert_int_equal(nh.max_timestamp, h.max_timestamp);
        struct batch_header vh;
        assert_int_equal(batch_validate_stored(out, out_len, true, &vh, NULL), 0); /* CRC too */
        assert_int_not_equal(batch_validate(out, out_len, 0, &vh, NULL), 0);       /* V10 */
    }
    batch_filter_scratch_free(&s);
}

/* V10c/V13c still refuse what no cleaner writes. */
static void relaxed_rules_refuse(void **state)
{
    (void)state;
    static uint8_t in[4096];
    size_t len = build(in, sizeof in, BATCH_COMPRESSION_NONE, 0);
    /* lastOffsetDelta below recordCount - 1 */
    be32_store(in + BATCH_OFF_LAST_OFFSET_DELTA, N - 2);
    batch_seal_crc(in, len);
    assert_int_not_equal(batch_validate_stored(in, len, true, NULL, NULL), 0);
    /* an empty batch with bytes after its header */
    len = build(in, sizeof in, BATCH_COMPRESSION_NONE, 0);
    be32_store(in + BATCH_OFF_RECORD_COUNT, 0);
    batch_seal_crc(in, len);
    assert_int_not_equal(batch_validate_stored(in, len, true, NULL, NULL), 0);
    /* a damaged CRC */
    len = build(in, sizeof in, BATCH_COMPRESSION_NONE, 0);
    in[len - 1] ^= 1;
    assert_int_not_equal(batch_validate_stored(in, len, true, NULL, NULL), 0);
}

/* MS13: a rewritten batch (records 1, 3, 4 kept) down-converts for a Fetch v0-3 consumer: three
 * v1 messages at their own offsets (uncompressed), or one wrapper of three (gzip). */
static void rewritten_batch_downconverts(void **state)
{
    (void)state;
    for (int codec = BATCH_COMPRESSION_NONE; codec <= BATCH_COMPRESSION_GZIP; codec++) {
        static uint8_t in[8192], down[8192];
        size_t len = build(in, sizeof in, codec, 0);
        struct batch_header h;
        assert_int_equal(batch_validate_stored(in, len, false, &h, NULL), 0);
        struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
        unsigned mask = (1u << 1) | (1u << 3) | (1u << 4);
        enum batch_filter_result res;
        const uint8_t *out = NULL;
        size_t out_len = 0;
        struct batch_header nh;
        assert_int_equal(
            batch_filter(in, len, &h, false, by_mask, &mask, &s, &res, &out, &out_len, &nh), 0);
        struct msgset_scratch sc = {0};
        size_t bytes = 0, needed = 0;
        uint32_t batches = 0;
        uint64_t messages = 0;
        const char *why = NULL;
        assert_int_equal(msgset_downconvert(&sc, out, out_len, 0, 1, down, sizeof down, &bytes,
                                            &needed, &batches, &messages, &why),
                         0);
        assert_int_equal(messages, 3);
        if (codec == BATCH_COMPRESSION_NONE) {
            const int64_t want[] = {501, 503, 504};
            size_t at = 0;
            for (int i = 0; i < 3; i++) {
                assert_true(at + 12 <= bytes);
                assert_int_equal((int64_t)be64_load(down + at), want[i]);
                at += 12 + be32_load(down + at + 8);
            }
            assert_int_equal(at, bytes);
        } else {
            assert_int_equal((int64_t)be64_load(down), 504); /* the wrapper: the last offset */
        }
        msgset_scratch_free(&sc);
        batch_filter_scratch_free(&s);
    }
}

static int keep_every(void *ctx, const struct batch_filter_record *r, bool *keep)
{
    (void)ctx;
    (void)r;
    *keep = true;
    return 0;
}

/* BF6 (A.9 CL8, B.7 V15c): a marker given a delete horizon: bit 6, baseTimestamp = the horizon,
 * its record's timestamp unchanged through a rebased timestampDelta (the batch grows past 78
 * bytes: only a cleaned segment takes it); a batch that has its horizon, or a data batch with no
 * tombstone kept, gets none. */
static void horizon_rebases(void **state)
{
    (void)state;
    uint8_t m[CONTROL_BATCH_BYTES];
    control_batch_build(m, 9, 3, CONTROL_ABORT, 4, 5000);
    batch_stamp_base_offset(m, 77);
    struct batch_header h, nh, vh;
    assert_int_equal(batch_validate_stored(m, sizeof m, true, &h, NULL), 0);
    struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    const int64_t horizon = 5000 + 3600000;
    assert_int_equal(batch_filter_horizon(m, sizeof m, &h, false, horizon, keep_every, NULL, &s,
                                          &res, &out, &out_len, &nh),
                     0);
    assert_int_equal(res, BATCH_FILTER_REWRITTEN);
    assert_true(nh.attributes & BATCH_ATTR_DELETE_HORIZON);
    assert_int_equal(nh.attributes & ~BATCH_ATTR_DELETE_HORIZON, h.attributes);
    assert_int_equal(nh.base_timestamp, horizon);
    assert_int_equal(nh.max_timestamp, 5000);
    assert_int_equal(nh.base_offset, 77);
    assert_true(out_len > CONTROL_BATCH_BYTES && out_len <= CONTROL_BATCH_BYTES + 9);
    const char *why = NULL;
    assert_int_equal(batch_validate_stored(out, out_len, true, &vh, &why), 0);      /* V15c */
    assert_int_not_equal(batch_validate_stored(out, out_len, false, &vh, &why), 0); /* V15 */
    assert_int_equal(control_batch_type(out, out_len), CONTROL_ABORT);
    struct record_view rv;
    assert_true(record_decode(out + BATCH_HEADER_BYTES, out + out_len, &rv, &why) > 0);
    assert_int_equal(nh.base_timestamp + rv.timestamp_delta, 5000);
    /* Already has one: kept as it is. */
    static uint8_t again[128];
    memcpy(again, out, out_len);
    size_t again_len = out_len;
    assert_int_equal(batch_filter_horizon(again, again_len, &nh, false, horizon + 1, keep_every,
                                          NULL, &s, &res, &out, &out_len, &vh),
                     0);
    assert_int_equal(res, BATCH_FILTER_WHOLE);
    /* A data batch without tombstones: no horizon. */
    static uint8_t in[4096];
    size_t len = build(in, sizeof in, BATCH_COMPRESSION_NONE, 0);
    assert_int_equal(batch_validate_stored(in, len, false, &h, NULL), 0);
    assert_int_equal(batch_filter_horizon(in, len, &h, false, horizon, keep_every, NULL, &s, &res,
                                          &out, &out_len, &nh),
                     0);
    assert_int_equal(res, BATCH_FILTER_WHOLE);
    batch_filter_scratch_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rewrite_uncompressed), cmocka_unit_test(rewrite_compressed),
        cmocka_unit_test(all_kept_is_whole),    cmocka_unit_test(none_kept),
        cmocka_unit_test(relaxed_rules_refuse), cmocka_unit_test(rewritten_batch_downconverts),
        cmocka_unit_test(horizon_rebases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
