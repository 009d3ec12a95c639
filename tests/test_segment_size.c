/*
 * test_segment_size.c — segment sizes as Kafka has them (issue 21 F6): any segment_size_bytes
 * Kafka 3.x accepts for segment.bytes (at least 14, LogConfig's bound) opens, also below
 * batch_size_max_bytes; a batch larger than its partition's segment is refused at the call with
 * RT_E_RECORD_TOO_LARGE (as Kafka's UnifiedLog refuses it with RecordBatchTooLargeException),
 * nothing of it is written, and the engine goes on: the next batch is appended and every record
 * reads back, across rolls, after a reopen, and verify is clean.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
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

#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "ringtail.h"

#define TOPIC "seg"

/* One record of value_bytes whose bytes name `tag`. */
static int append_value(rt_engine *e, size_t value_bytes, char tag, int64_t *base_out)
{
    char *v = malloc(value_bytes);
    assert_non_null(v);
    memset(v, tag, value_bytes);
    struct rt_record r = {
        .key_len = -1, .value = v, .value_len = (int32_t)value_bytes, .timestamp_ms = -1};
    int rc = rt_append(e, TOPIC, 0, &r, 1, base_out);
    free(v);
    return rc;
}

/* Reads offsets [0, n) and checks each record's first value byte against tags[]. */
static void read_back(rt_engine *e, const char *tags, int64_t n)
{
    int64_t offset = 0;
    while (offset < n) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, offset, 4u << 20, RT_READ_UNCOMMITTED, &f), 0);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view v;
        int rc;
        int64_t before = offset;
        while ((rc = rt_records_next(&it, &v)) == 0) {
            assert_int_equal(v.offset, offset);
            assert_true(v.value_len > 0);
            assert_int_equal(((const char *)v.value)[0], tags[offset]);
            offset++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(f);
        assert_true(offset > before);
    }
}

/* Kafka's default broker sizes: segment.bytes 1 MiB below message.max.bytes 1 MiB + 12. */
static void test_segment_below_batch_max_opens(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    tu_options(&o);
    o.segment_size_bytes = 1u << 20;
    assert_true(o.batch_size_max_bytes > o.segment_size_bytes); /* 1 MiB + 12 */
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0); /* refused before issue 21 F6 */
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    char tags[64];
    int64_t n = 0, base = -1;
    /* Fits a segment: one per segment, rolling each time. */
    for (int i = 0; i < 3; i++, n++) {
        tags[n] = (char)('a' + i);
        assert_int_equal(append_value(e, 700u << 10, tags[n], &base), 0);
        assert_int_equal(base, n);
    }
    /* Within batch_size_max_bytes but larger than the segment: refused, nothing written. */
    /* value + 72 bytes of batch and record framing: 1 048 582 bytes, 6 over the segment. */
    assert_int_equal(append_value(e, 1048510, 'x', &base), RT_E_RECORD_TOO_LARGE);
    assert_non_null(strstr(rt_error_detail(), "larger than the segment size"));
    /* Above batch_size_max_bytes: refused as before. */
    assert_int_equal(append_value(e, (1u << 20) + 100, 'y', &base), RT_E_RECORD_TOO_LARGE);
    /* The engine goes on: the write side is not failed. */
    for (int i = 0; i < 3; i++, n++) {
        tags[n] = (char)('p' + i);
        assert_int_equal(append_value(e, 100, tags[n], &base), 0);
        assert_int_equal(base, n);
    }
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    assert_true(st.segments_rolled >= 2);
    read_back(e, tags, n);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    read_back(e, tags, n);
    assert_int_equal(append_value(e, 1048510, 'x', &base), RT_E_RECORD_TOO_LARGE);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* The smallest segment.bytes Kafka 3.x accepts (14) opens; every client batch is larger, so each
 * is refused at the call; 13 is refused as an option. Internal topics (the transaction log, the
 * group offsets) keep segments that hold their largest batch, so they still work. */
static void test_smallest_segment(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    tu_options(&o);
    o.segment_size_bytes = 13;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), RT_E_INVALID_ARGUMENT);
    o.segment_size_bytes = 14;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t base = -1;
    assert_int_equal(append_value(e, 1, 'a', &base), RT_E_RECORD_TOO_LARGE);
    struct rt_offset commit = {.topic = TOPIC, .partition = 0, .offset = 0};
    int rc = rt_group_commit_offsets(e, "g", &commit, 1);
    if (rc)
        fail_msg("commit: %s: %s", rt_strerror(rc), rt_error_detail());
    int64_t off = -1;
    assert_int_equal(rt_group_fetch_offsets(e, "g", TOPIC, 0, false, &off), 0);
    assert_int_equal(off, 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "");
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_below_batch_max_opens),
        cmocka_unit_test(test_smallest_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
