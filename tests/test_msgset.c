/*
 * test_msgset.c — Kafka message sets v0/v1 (engine/log/msgset.c, docs/format.md B.9): each
 * up-conversion rule MS1-MS9 on hand-built sets (every legacy codec, magic-0 LZ4's old header
 * checksum), and down-conversion MS10-MS12 (control batches and headers dropped, offsets and
 * timestamps kept, caps, zstd refused) checked by converting back.
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
#include <zlib.h>

#include "batch.h"
#include "compression.h"
#include "msgset.h"
#include "records.h"

/* One legacy entry at out; returns its size. */
static size_t put_msg(uint8_t *out, int8_t magic, int64_t offset, int8_t attrs, int64_t ts,
                      const void *key, int32_t key_len, const void *value, int32_t value_len)
{
    uint8_t *m = out + 12;
    size_t n = 4;
    m[n++] = (uint8_t)magic;
    m[n++] = (uint8_t)attrs;
    if (magic == 1) {
        be64_store(m + n, (uint64_t)ts);
        n += 8;
    }
    be32_store(m + n, (uint32_t)key_len);
    n += 4;
    if (key_len > 0) {
        memcpy(m + n, key, (size_t)key_len);
        n += (size_t)key_len;
    }
    be32_store(m + n, (uint32_t)value_len);
    n += 4;
    if (value_len > 0) {
        memcpy(m + n, value, (size_t)value_len);
        n += (size_t)value_len;
    }
    be32_store(m, (uint32_t)crc32(0L, m + 4, (uInt)(n - 4)));
    be64_store(out, (uint64_t)offset);
    be32_store(out + 8, (uint32_t)n);
    return 12 + n;
}

struct rec {
    int64_t offset, ts;
    char key[16], value[32];
    int32_t key_len, value_len;
};

/* Decodes a v2 batch (validated first) into recs; returns the count. */
static int read_batch(const uint8_t *b, size_t len, struct rec *recs, int max, int16_t *attrs)
{
    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_validate(b, len, 0, &h, &why), 0);
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    const uint8_t *p, *end;
    assert_int_equal(records_validate(b, len, &h, &z, &p, &end, &why), 0);
    int n = 0;
    while (p < end) {
        struct record_view r;
        int k = record_decode(p, end, &r, &why);
        assert_true(k > 0);
        p += k;
        assert_true(n < max);
        struct rec *o = &recs[n++];
        o->offset = h.base_offset + r.offset_delta;
        o->ts = h.base_timestamp + r.timestamp_delta;
        o->key_len = r.key_len;
        o->value_len = r.value_len;
        assert_true(r.key_len < 16 && r.value_len < 32);
        if (r.key_len > 0)
            memcpy(o->key, r.key, (size_t)r.key_len);
        if (r.value_len > 0)
            memcpy(o->value, r.value, (size_t)r.value_len);
        assert_int_equal(r.header_count, 0);
    }
    if (attrs)
        *attrs = h.attributes;
    compression_buffer_free(&z);
    return n;
}

/* Three plain messages of `magic` at out. */
static size_t three(uint8_t *out, int8_t magic, int64_t first_offset)
{
    size_t n = put_msg(out, magic, first_offset, 0, 100, "k0", 2, "value0", 6);
    n += put_msg(out + n, magic, first_offset + 1, 0, 50, NULL, -1, "value1", 6);
    n += put_msg(out + n, magic, first_offset + 2, 0, 300, "k2", 2, NULL, -1);
    return n;
}

static void check_three(const struct rec *r, int n, int8_t magic)
{
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].offset, i);
    assert_int_equal(r[0].ts, magic == 1 ? 100 : -1);
    assert_int_equal(r[1].ts, magic == 1 ? 50 : -1);
    assert_int_equal(r[2].ts, magic == 1 ? 300 : -1);
    assert_int_equal(r[0].key_len, 2);
    assert_memory_equal(r[0].value, "value0", 6);
    assert_int_equal(r[1].key_len, -1);
    assert_int_equal(r[2].value_len, -1);
}

/* MS1-MS4, MS8: plain sets of both magics become one uncompressed batch, offsets 0..n-1,
 * producer -1, timestamps the messages' (v1) or -1 (v0), max the largest. */
static void test_upconvert_plain(void **state)
{
    (void)state;
    struct msgset_scratch sc = {0};
    for (int8_t magic = 0; magic <= 1; magic++) {
        uint8_t set[512];
        size_t len = three(set, magic, 77);
        uint8_t *b = NULL;
        size_t blen = 0;
        int8_t got_magic = -1;
        const char *why = NULL;
        assert_int_equal(msgset_upconvert(&sc, set, len, 1 << 20, &b, &blen, &got_magic, &why), 0);
        assert_int_equal(got_magic, magic);
        struct batch_header h;
        assert_int_equal(batch_header_parse(b, blen, &h, &why), 0);
        assert_int_equal(h.producer_id, -1);
        assert_int_equal(h.producer_epoch, -1);
        assert_int_equal(h.base_sequence, -1);
        assert_int_equal(h.attributes, 0);
        assert_int_equal(h.max_timestamp, magic == 1 ? 300 : -1);
        struct rec r[8];
        check_three(r, read_batch(b, blen, r, 8, NULL), magic);
        free(b);
    }
    msgset_scratch_free(&sc);
}

/* MS6-MS8: a wrapper of each legacy codec, for both magics (v1 relative inner offsets, v0
 * absolute), is recompressed with the same codec; magic-0 LZ4 with Kafka 0.8-0.9's header
 * checksum (xxh32 from the frame magic on) is read (MS7). */
static void test_upconvert_wrappers(void **state)
{
    (void)state;
    struct msgset_scratch sc = {0};
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    const int codecs[] = {BATCH_COMPRESSION_GZIP, BATCH_COMPRESSION_SNAPPY, BATCH_COMPRESSION_LZ4};
    for (int8_t magic = 0; magic <= 1; magic++) {
        for (size_t c = 0; c < 3; c++) {
            uint8_t inner[512], set[1024];
            size_t ilen = three(inner, magic, magic == 1 ? 0 : 40);
            assert_int_equal(compression_compress((enum batch_compression)codecs[c], inner, ilen,
                                                  &z, COMPRESSION_LEVEL_DEFAULT),
                             0);
            if (magic == 0 && codecs[c] == BATCH_COMPRESSION_LZ4) {
                /* Break the header checksum the way Kafka 0.8-0.9 and librdkafka at v0 do. */
                z.data[6] ^= 0x5a;
            }
            size_t len =
                put_msg(set, magic, 42, (int8_t)codecs[c], 300, NULL, -1, z.data, (int32_t)z.len);
            uint8_t *b = NULL;
            size_t blen = 0;
            const char *why = NULL;
            int rc = msgset_upconvert(&sc, set, len, 1 << 20, &b, &blen, NULL, &why);
            if (rc)
                fprintf(stderr, "magic %d codec %d: %s\n", magic, codecs[c], why);
            assert_int_equal(rc, 0);
            int16_t attrs = -1;
            struct rec r[8];
            check_three(r, read_batch(b, blen, r, 8, &attrs), magic);
            assert_int_equal(attrs, codecs[c]);
            free(b);
        }
    }
    compression_buffer_free(&z);
    msgset_scratch_free(&sc);
}

struct refusal {
    const char *what;
    int rc;
    size_t len;
};

/* MS1-MS6, MS9: every refusal, and that nothing is returned for it. */
static void test_upconvert_refusals(void **state)
{
    (void)state;
    struct msgset_scratch sc = {0};
    uint8_t good[256], set[1024];
    size_t glen = put_msg(good, 1, 0, 0, 5, "k", 1, "v", 1);
    struct refusal cases[16];
    size_t nc = 0;
    uint8_t sets[16][512];
    /* crc */
    memcpy(sets[nc], good, glen);
    sets[nc][glen - 1] ^= 1;
    cases[nc++] = (struct refusal){"crc mismatch", RT_E_CORRUPT, glen};
    /* truncated */
    memcpy(sets[nc], good, glen);
    cases[nc++] = (struct refusal){"truncated", RT_E_CORRUPT, glen - 1};
    /* mixed magics */
    memcpy(sets[nc], good, glen);
    size_t n = glen + put_msg(sets[nc] + glen, 0, 1, 0, 0, "k", 1, "v", 1);
    cases[nc++] = (struct refusal){"mixed magic", RT_E_CORRUPT, n};
    /* magic 2 */
    memcpy(sets[nc], good, glen);
    sets[nc][16] = 2;
    cases[nc++] = (struct refusal){"magic 2", RT_E_CORRUPT, glen};
    /* zstd */
    n = put_msg(sets[nc], 1, 0, 4, 0, NULL, -1, "x", 1);
    cases[nc++] = (struct refusal){"zstd", RT_E_UNSUPPORTED_COMPRESSION, n};
    /* wrapper without value */
    n = put_msg(sets[nc], 1, 0, 1, 0, NULL, -1, NULL, -1);
    cases[nc++] = (struct refusal){"null wrapper", RT_E_CORRUPT, n};
    /* wrapper with garbage */
    n = put_msg(sets[nc], 1, 0, 2, 0, NULL, -1, "garbage!", 8);
    cases[nc++] = (struct refusal){"bad snappy", RT_E_CORRUPT, n};
    /* key length beyond the message: re-crc'd so only MS4 fails */
    n = put_msg(sets[nc], 0, 0, 0, 0, "kk", 2, "v", 1);
    be32_store(sets[nc] + 18, 200);
    be32_store(sets[nc] + 12, (uint32_t)crc32(0L, sets[nc] + 16, (uInt)(n - 16)));
    cases[nc++] = (struct refusal){"key beyond message", RT_E_CORRUPT, n};
    /* size below minimum */
    memset(sets[nc], 0, 26);
    be32_store(sets[nc] + 8, 13);
    cases[nc++] = (struct refusal){"size 13", RT_E_CORRUPT, 25};
    /* empty set */
    cases[nc++] = (struct refusal){"empty", RT_E_CORRUPT, 0};
    for (size_t i = 0; i < nc; i++) {
        uint8_t *b = (uint8_t *)1;
        size_t blen = 7;
        const char *why = NULL;
        int rc = msgset_upconvert(&sc, sets[i], cases[i].len, 1 << 20, &b, &blen, NULL, &why);
        if (rc != cases[i].rc)
            fprintf(stderr, "%s: rc %d (%s)\n", cases[i].what, rc, why ? why : "");
        assert_int_equal(rc, cases[i].rc);
        assert_null(b);
        assert_int_equal(blen, 0);
        assert_non_null(why);
    }
    /* nested compression */
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, good, glen, &z, 0), 0);
    uint8_t inner[512];
    size_t ilen = put_msg(inner, 1, 0, 1, 0, NULL, -1, z.data, (int32_t)z.len);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, inner, ilen, &z, 0), 0);
    n = put_msg(set, 1, 0, 1, 0, NULL, -1, z.data, (int32_t)z.len);
    uint8_t *b = NULL;
    size_t blen = 0;
    const char *why = NULL;
    assert_int_equal(msgset_upconvert(&sc, set, n, 1 << 20, &b, &blen, NULL, &why), RT_E_CORRUPT);
    assert_string_equal(why, "compressed message inside a compressed message");
    /* MS9: too large for the maximum batch */
    n = three(set, 1, 0);
    assert_int_equal(msgset_upconvert(&sc, set, n, 70, &b, &blen, NULL, &why),
                     RT_E_RECORD_TOO_LARGE);
    compression_buffer_free(&z);
    msgset_scratch_free(&sc);
}

/* MS10-MS12: v2 batches (plain, compressed, with headers, a control batch between) down to each
 * magic and back up again: same keys, values, offsets and timestamps (v1), control batch and
 * headers gone; fetch_offset skips; a cap too small says what is needed; zstd is refused. */
static void test_downconvert_round_trip(void **state)
{
    (void)state;
    struct msgset_scratch sc = {0}, sc2 = {0};
    uint8_t data[4096];
    size_t len = 0;
    /* batch 1: offsets 10..12, uncompressed, a header on the middle record */
    struct batch_builder bb;
    assert_int_equal(batch_builder_init(&bb, data, 1024, 0, -1, -1, -1), 0);
    struct rt_header hdr = {.key = "h", .key_len = 1, .value = "x", .value_len = 1};
    struct rt_record rs[3] = {
        {.key = "k0", .key_len = 2, .value = "value0", .value_len = 6, .timestamp_ms = 100},
        {.key_len = -1,
         .value = "value1",
         .value_len = 6,
         .timestamp_ms = 50,
         .headers = &hdr,
         .header_count = 1},
        {.key = "k2", .key_len = 2, .value_len = -1, .timestamp_ms = 300}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(batch_builder_add(&bb, &rs[i]), 0);
    size_t l1 = 0;
    assert_int_equal(batch_builder_finish(&bb, &l1), 0);
    batch_stamp_base_offset(data, 10);
    len += l1;
    /* a control batch at 13 */
    control_batch_build(data + len, 5, 0, CONTROL_COMMIT, 0, 400);
    batch_stamp_base_offset(data + len, 13);
    len += CONTROL_BATCH_BYTES;
    /* batch 2: offsets 14..16, gzip: the same records up-converted from a gzip wrapper */
    uint8_t inner[512], set[1024];
    size_t ilen = three(inner, 1, 0);
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, inner, ilen, &z, 0), 0);
    size_t slen = put_msg(set, 1, 2, 1, 300, NULL, -1, z.data, (int32_t)z.len);
    uint8_t *b2 = NULL;
    size_t l2 = 0;
    const char *why = NULL;
    assert_int_equal(msgset_upconvert(&sc, set, slen, 1 << 20, &b2, &l2, NULL, &why), 0);
    batch_stamp_base_offset(b2, 14);
    memcpy(data + len, b2, l2);
    len += l2;
    free(b2);

    for (int8_t magic = 0; magic <= 1; magic++) {
        uint8_t out[4096];
        size_t bytes = 0, needed = 0;
        uint32_t batches = 0;
        uint64_t messages = 0;
        assert_int_equal(msgset_downconvert(&sc, data, len, 11, magic, out, sizeof out, &bytes,
                                            &needed, &batches, &messages, &why),
                         0);
        assert_int_equal(batches, 2);
        assert_int_equal(messages, 5); /* 11, 12 and 14..16; 10 skipped, 13 a marker */
        assert_int_equal(needed, 0);
        /* The plain part: two entries with absolute offsets 11 and 12. */
        assert_int_equal((int64_t)be64_load(out), 11);
        /* Up again: every message reappears, in order. */
        uint8_t *b = NULL;
        size_t bl = 0;
        assert_int_equal(msgset_upconvert(&sc2, out, bytes, 1 << 20, &b, &bl, NULL, &why), 0);
        struct rec r[8];
        int n = read_batch(b, bl, r, 8, NULL);
        assert_int_equal(n, 5);
        assert_memory_equal(r[0].value, "value1", 6); /* offset 11, its header dropped */
        assert_int_equal(r[0].key_len, -1);
        assert_int_equal(r[1].key_len, 2);
        assert_int_equal(r[1].value_len, -1);
        assert_memory_equal(r[2].value, "value0", 6);
        if (magic == 1) {
            assert_int_equal(r[0].ts, 50);
            assert_int_equal(r[1].ts, 300);
            assert_int_equal(r[2].ts, 100);
        } else {
            for (int i = 0; i < n; i++)
                assert_int_equal(r[i].ts, -1);
        }
        free(b);
        /* The compressed part is one gzip wrapper whose offset is the batch's last (16). */
        size_t plain = 0;
        for (int i = 0; i < 2; i++)
            plain += 12 + be32_load(out + plain + 8);
        assert_int_equal((int64_t)be64_load(out + plain), 16);
        assert_int_equal(out[plain + 17] & 7, BATCH_COMPRESSION_GZIP);
        /* A cap below the first batch's messages: nothing written, the need said. */
        assert_int_equal(msgset_downconvert(&sc, data, len, 0, magic, out, 20, &bytes, &needed,
                                            &batches, &messages, &why),
                         0);
        assert_int_equal(bytes, 0);
        assert_true(needed > 20);
        /* Only the first batch fits: whole batches only. */
        assert_int_equal(msgset_downconvert(&sc, data, len, 0, magic, out, needed, &bytes, &needed,
                                            &batches, &messages, &why),
                         0);
        assert_int_equal(batches, 1);
        assert_int_equal(messages, 3);
        /* MS14: resumable. Cap 0 converts nothing and says the first batch's need; the cap of
         * one batch goes through it and the marker skipped after it (consumed = their bytes,
         * first = the batch's output); from there the gzip batch is converted, to the end. */
        size_t first_need = bytes; /* what the cap of one batch wrote */
        struct rt_downconvert_result res;
        assert_int_equal(rt_message_set_downconvert(data, len, 0, magic, NULL, 0, &res), 0);
        assert_int_equal(res.size_bytes, 0);
        assert_int_equal(res.needed_bytes, first_need);
        assert_int_equal(res.consumed_bytes, 0);
        assert_int_equal(rt_message_set_downconvert(data, len, 0, magic, out, first_need, &res), 0);
        assert_int_equal(res.size_bytes, first_need);
        assert_int_equal(res.first_bytes, first_need);
        assert_int_equal(res.consumed_bytes, l1 + CONTROL_BATCH_BYTES); /* the marker too */
        size_t at = res.consumed_bytes;
        assert_int_equal(
            rt_message_set_downconvert(data + at, len - at, 0, magic, out, sizeof out, &res), 0);
        assert_int_equal(res.batches, 1);
        assert_int_equal(res.messages, 3);
        assert_int_equal(res.consumed_bytes, len - at);
        assert_int_equal(res.first_bytes, res.size_bytes); /* the one gzip wrapper */
        assert_int_equal((int64_t)be64_load(out), 16);
    }
    /* zstd first: refused. */
    uint8_t zb[1024];
    memcpy(zb, data, l1);
    struct batch_header h;
    assert_int_equal(batch_header_parse(zb, l1, &h, &why), 0);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_ZSTD, data + 61, l1 - 61, &z, 0), 0);
    memcpy(zb + 61, z.data, z.len);
    be32_store(zb + BATCH_OFF_LENGTH, (uint32_t)(61 + z.len - 12));
    be16_store(zb + BATCH_OFF_ATTRIBUTES, BATCH_COMPRESSION_ZSTD);
    batch_seal_crc(zb, 61 + z.len);
    uint8_t out[1024];
    size_t bytes = 0, needed = 0;
    uint32_t batches = 0;
    uint64_t messages = 0;
    assert_int_equal(msgset_downconvert(&sc, zb, 61 + z.len, 0, 1, out, sizeof out, &bytes, &needed,
                                        &batches, &messages, &why),
                     RT_E_UNSUPPORTED_COMPRESSION);
    compression_buffer_free(&z);
    msgset_scratch_free(&sc);
    msgset_scratch_free(&sc2);
}

/* MS10: transactional data is converted like any data (Fetch v0-3 read uncommitted: Kafka's
 * down-conversion keeps aborted records too); only the marker after it is dropped. */
static void test_downconvert_keeps_transactional_data(void **state)
{
    (void)state;
    struct msgset_scratch sc = {0};
    uint8_t data[1024];
    struct batch_builder bb;
    assert_int_equal(batch_builder_init(&bb, data, 512, BATCH_ATTR_TRANSACTIONAL, 7, 0, 0), 0);
    struct rt_record r = {.key_len = -1, .value = "aborted", .value_len = 7, .timestamp_ms = 1};
    assert_int_equal(batch_builder_add(&bb, &r), 0);
    size_t l1 = 0;
    assert_int_equal(batch_builder_finish(&bb, &l1), 0);
    control_batch_build(data + l1, 7, 0, CONTROL_ABORT, 0, 2);
    batch_stamp_base_offset(data + l1, 1);
    uint8_t out[512];
    size_t bytes = 0, needed = 0;
    uint32_t batches = 0;
    uint64_t messages = 0;
    const char *why = NULL;
    assert_int_equal(msgset_downconvert(&sc, data, l1 + CONTROL_BATCH_BYTES, 0, 1, out, sizeof out,
                                        &bytes, &needed, &batches, &messages, &why),
                     0);
    assert_int_equal(batches, 1);
    assert_int_equal(messages, 1);
    assert_int_equal(bytes, 12 + 22 + 7);
    assert_memory_equal(out + bytes - 7, "aborted", 7);
    msgset_scratch_free(&sc);
}

/* The public wrappers: errors carry a detail, outputs are the caller's. */
static void test_public_api(void **state)
{
    (void)state;
    uint8_t set[512];
    size_t len = three(set, 1, 0);
    void *b = NULL;
    size_t bl = 0;
    int8_t magic = -1;
    assert_int_equal(rt_message_set_upconvert(set, len, 1 << 20, &b, &bl, &magic), 0);
    assert_int_equal(magic, 1);
    assert_non_null(b);
    struct rt_downconvert_result res;
    uint8_t out[1024];
    assert_int_equal(rt_message_set_downconvert(b, bl, 0, 1, out, sizeof out, &res), 0);
    assert_int_equal(res.messages, 3);
    assert_int_equal(res.size_bytes, len); /* v1 -> v2 -> v1: the same bytes */
    assert_memory_equal(out, set, len);
    free(b);
    set[len - 1] ^= 1;
    assert_int_equal(rt_message_set_upconvert(set, len, 1 << 20, &b, &bl, NULL), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), "crc"));
    assert_int_equal(rt_message_set_downconvert(set, len, 0, 2, out, sizeof out, &res),
                     RT_E_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upconvert_plain),
        cmocka_unit_test(test_upconvert_wrappers),
        cmocka_unit_test(test_upconvert_refusals),
        cmocka_unit_test(test_downconvert_round_trip),
        cmocka_unit_test(test_downconvert_keeps_transactional_data),
        cmocka_unit_test(test_public_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
