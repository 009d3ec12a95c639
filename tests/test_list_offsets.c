/*
 * test_list_offsets.c — rt_list_offsets_by_timestamp, the engine's side of Kafka's ListOffsets
 * by timestamp (fetchOffsetByTimestamp / FileRecords.searchForTimestamp): the first record whose
 * timestamp is >= T, its offset and its own timestamp — inside a batch, inside a compressed
 * batch (decompressed to find it), in a LogAppendTime batch, across segments and after a reopen;
 * offset -1 and timestamp -1 when no record is at or after T (read_committed: below the LSO),
 * while rt_list_offsets keeps answering the bound for the same T; bad arguments are refused.
 * Pins handle_fetch.c KF6 at the engine API (issue 20, A2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"
#include "compression.h"
#include "helpers/test_util.h"

/* RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync backend. */

/* Appends one batch whose records have the given timestamps, values "v<i>". Returns its base. */
static int64_t append_ts(rt_engine *e, const char *topic, const int64_t *ts, int n)
{
    struct rt_record recs[16];
    char vals[16][16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        recs[i] = (struct rt_record){.key = NULL,
                                     .key_len = -1,
                                     .value = vals[i],
                                     .value_len = (int32_t)strlen(vals[i]),
                                     .timestamp_ms = ts[i]};
    }
    int64_t base = -1;
    assert_int_equal(rt_append(e, topic, 0, recs, (size_t)n, &base), 0);
    return base;
}

/* Appends one batch of n records at timestamps ts[i], its records compressed with `codec` (or,
 * codec 0 with log_append_time, a LogAppendTime batch stamped max_ts). Returns its base. */
static int64_t append_raw(rt_engine *e, const char *topic, const int64_t *ts, int n, int codec,
                          bool log_append_time, int64_t max_ts)
{
    static uint8_t plain[4096], packed[4096];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, plain, sizeof(plain), 0, -1, -1, -1), 0);
    for (int i = 0; i < n; i++) {
        char v[16];
        snprintf(v, sizeof(v), "z%d", i);
        struct rt_record r = {.key = NULL,
                              .key_len = -1,
                              .value = v,
                              .value_len = (int32_t)strlen(v),
                              .timestamp_ms = ts[i]};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    uint8_t *out = plain;
    if (codec) {
        struct compression_buffer z = COMPRESSION_BUFFER_INIT;
        assert_int_equal(compression_compress((enum batch_compression)codec,
                                              plain + BATCH_HEADER_BYTES, len - BATCH_HEADER_BYTES,
                                              &z, COMPRESSION_LEVEL_DEFAULT),
                         0);
        size_t total = BATCH_HEADER_BYTES + z.len;
        assert_true(total <= sizeof(packed));
        memcpy(packed, plain, BATCH_HEADER_BYTES);
        memcpy(packed + BATCH_HEADER_BYTES, z.data, z.len);
        compression_buffer_free(&z);
        be16_store(packed + BATCH_OFF_ATTRIBUTES,
                   (uint16_t)(be16_load(packed + BATCH_OFF_ATTRIBUTES) | (uint16_t)codec));
        be32_store(packed + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
        len = total;
        out = packed;
    }
    if (log_append_time) {
        be16_store(out + BATCH_OFF_ATTRIBUTES,
                   (uint16_t)(be16_load(out + BATCH_OFF_ATTRIBUTES) | BATCH_ATTR_LOG_APPEND_TIME));
        be64_store(out + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
    }
    batch_seal_crc(out, len);
    int64_t base = -1;
    int rc = rt_append_batch(e, topic, 0, out, len, &base);
    if (rc)
        fprintf(stderr, "rt_append_batch: %s: %s\n", rt_strerror(rc), rt_error_detail());
    assert_int_equal(rc, 0);
    return base;
}

static void expect_at(rt_engine *e, const char *topic, int64_t t, enum rt_isolation iso,
                      int64_t offset, int64_t timestamp)
{
    int64_t off = 7, ts = 7;
    int rc = rt_list_offsets_by_timestamp(e, topic, 0, t, iso, &off, &ts);
    if (rc)
        fprintf(stderr, "T=%lld: %s: %s\n", (long long)t, rt_strerror(rc), rt_error_detail());
    assert_int_equal(rc, 0);
    if (off != offset || ts != timestamp)
        fprintf(stderr, "T=%lld: got (%lld, %lld), want (%lld, %lld)\n", (long long)t,
                (long long)off, (long long)ts, (long long)offset, (long long)timestamp);
    assert_int_equal(off, offset);
    assert_int_equal(ts, timestamp);
}

/* Offsets 0-2 one plain batch (ts 100, 200, 300), 3-5 a gzip batch (1000, 1100, 1200), 6-7 a
 * batch the client marked LogAppendTime at 5000 (record ts 1 and 2; stored as CreateTime with its
 * records' max, as Kafka's validator stores it), 8 a plain record at 6000. */
static void fill(rt_engine *e)
{
    assert_int_equal(rt_topic_create(e, "ts", 1), 0);
    int64_t a[] = {100, 200, 300};
    assert_int_equal(append_ts(e, "ts", a, 3), 0);
    int64_t b[] = {1000, 1100, 1200};
    assert_int_equal(append_raw(e, "ts", b, 3, BATCH_COMPRESSION_GZIP, false, 0), 3);
    int64_t c[] = {1, 2};
    assert_int_equal(append_raw(e, "ts", c, 2, 0, true, 5000), 6);
    int64_t d[] = {6000};
    assert_int_equal(append_ts(e, "ts", d, 1), 8);
}

static void check_answers(rt_engine *e)
{
    expect_at(e, "ts", 0, RT_READ_UNCOMMITTED, 0, 100);
    expect_at(e, "ts", 100, RT_READ_UNCOMMITTED, 0, 100);
    expect_at(e, "ts", 150, RT_READ_UNCOMMITTED, 1, 200); /* inside a batch: the record's own */
    expect_at(e, "ts", 300, RT_READ_UNCOMMITTED, 2, 300);
    expect_at(e, "ts", 301, RT_READ_UNCOMMITTED, 3, 1000);
    expect_at(e, "ts", 1050, RT_READ_UNCOMMITTED, 4, 1100); /* inside a compressed batch */
    expect_at(e, "ts", 1200, RT_READ_UNCOMMITTED, 5, 1200);
    /* The client's LogAppendTime bit on 6-7 is cleared at append under the engine's CreateTime
     * (Kafka's LogValidator, format.md V16-V17): their records keep timestamps 1 and 2, below
     * 1201, so the first record at or after 1201 is offset 8. */
    expect_at(e, "ts", 1201, RT_READ_UNCOMMITTED, 8, 6000);
    expect_at(e, "ts", 5000, RT_READ_UNCOMMITTED, 8, 6000);
    expect_at(e, "ts", 5001, RT_READ_UNCOMMITTED, 8, 6000);
    expect_at(e, "ts", 6000, RT_READ_COMMITTED, 8, 6000);
    expect_at(e, "ts", 6001, RT_READ_UNCOMMITTED, -1, -1); /* none: Kafka's -1, -1 */
    expect_at(e, "ts", INT64_MAX, RT_READ_COMMITTED, -1, -1);
    /* rt_list_offsets keeps its documented answer for the same timestamps. */
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(e, "ts", 0, 1050, RT_READ_UNCOMMITTED, &off), 0);
    assert_int_equal(off, 4);
    assert_int_equal(rt_list_offsets(e, "ts", 0, 6001, RT_READ_UNCOMMITTED, &off), 0);
    assert_int_equal(off, 9);
}

static void test_by_timestamp(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    fill(f->e);
    check_answers(f->e);
    tu_fixture_close(f);
    tu_fixture_open(f); /* the time index read back from disk gives the same answers */
    check_answers(f->e);
}

/* Many segments: the search crosses to the segment whose records reach T. */
static void test_across_segments(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "seg", 1), 0);
    char big[2000];
    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 300; i++) {
        struct rt_record r = {.key_len = -1,
                              .value = big,
                              .value_len = (int32_t)sizeof(big),
                              .timestamp_ms = 10000 + 10 * i};
        assert_int_equal(rt_append(f->e, "seg", 0, &r, 1, NULL), 0);
    }
    int64_t off = -1, ts = -1;
    for (int i = 0; i < 300; i += 37) {
        assert_int_equal(rt_list_offsets_by_timestamp(f->e, "seg", 0, 10000 + 10 * i - 5,
                                                      RT_READ_UNCOMMITTED, &off, &ts),
                         0);
        assert_int_equal(off, i);
        assert_int_equal(ts, 10000 + 10 * i);
    }
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "seg", 0, 10000 + 10 * 299 + 1,
                                                  RT_READ_UNCOMMITTED, &off, &ts),
                     0);
    assert_int_equal(off, -1);
    assert_int_equal(ts, -1);
}

static void test_bad_arguments(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "b", 2), 0);
    int64_t off = 0, ts = 0;
    assert_int_equal(rt_list_offsets_by_timestamp(NULL, "b", 0, 0, RT_READ_UNCOMMITTED, &off, &ts),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 0, 0, RT_READ_UNCOMMITTED, NULL, &ts),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 0, 0, RT_READ_UNCOMMITTED, &off, NULL),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 0, -1, RT_READ_UNCOMMITTED, &off, &ts),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 0, 0, (enum rt_isolation)9, &off, &ts),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, NULL, 0, 0, RT_READ_UNCOMMITTED, &off, &ts),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 2, 0, RT_READ_UNCOMMITTED, &off, &ts),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(
        rt_list_offsets_by_timestamp(f->e, "nope", 0, 0, RT_READ_UNCOMMITTED, &off, &ts),
        RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    /* An empty partition: nothing at or after any timestamp. */
    assert_int_equal(rt_list_offsets_by_timestamp(f->e, "b", 1, 0, RT_READ_COMMITTED, &off, &ts),
                     0);
    assert_int_equal(off, -1);
    assert_int_equal(ts, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_by_timestamp, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_across_segments, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
