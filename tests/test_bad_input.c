/*
 * test_bad_input.c — every public entry point of ringtail.h fed what a careless or hostile
 * caller passes: NULL pointers, empty, oversized and invalid names, partitions out of range,
 * negative lengths other than -1, records too large, counts of 0, every option outside its
 * bounds (engine.c options_check), unknown enum values, rt_fetch_release(NULL), iterators that
 * were never initialised, rt_strerror of every code, and misuse from several threads. Each call
 * must return its documented error (never crash) and the data directory must be intact
 * afterwards: it is reopened and read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"

struct fixture {
    char *dir;
    rt_engine *e;
    struct rt_options o;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = tu_mkdtemp();
    tu_options(&f->o);
    f->o.segment_size_bytes = 64 * 1024;
    f->o.batch_size_max_bytes = 16 * 1024;
    f->o.shard_count = 2;
    f->o.retention_ms = -1;
    assert_int_equal(rt_open(f->dir, &f->o, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, "good", 2), 0);
    struct rt_record r = {.key_len = -1, .value = "v0", .value_len = 2, .timestamp_ms = 1};
    assert_int_equal(rt_append(f->e, "good", 0, &r, 1, NULL), 0);
    *state = f;
    return 0;
}

/* The directory is intact: reopen, the topic is there and offset 0 reads "v0"; rt_verify is
 * clean. */
static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->e)
        assert_int_equal(rt_close(f->e), 0);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), 0);
    uint32_t n = 0;
    assert_int_equal(rt_topic_describe(e, "good", &n), 0);
    assert_int_equal(n, 2);
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 4096, RT_READ_UNCOMMITTED, &fh), 0);
    struct rt_records it;
    struct rt_record_view r;
    assert_int_equal(rt_records_init(&it, fh, 0), 0);
    assert_int_equal(rt_records_next(&it, &r), 0);
    assert_int_equal(r.value_len, 2);
    assert_memory_equal(r.value, "v0", 2);
    rt_fetch_release(fh);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_verify(f->dir, NULL, NULL), 0);
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

static int64_t latest(rt_engine *e, const char *topic, uint32_t part)
{
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     0);
    return off;
}

/* ---- errors ---- */

static void test_strerror_every_code(void **state)
{
    (void)state;
    /* Retired numbers (RT_E_QUEUE_FULL, RT_E_LIMIT, RT_E_DUPLICATE_SEQUENCE): never returned,
     * named as unknown so that nobody mistakes one for a live code. */
    const int retired[] = {-10011, -10012, -10015};
    const char *seen[RT_E_FIRST - RT_E_LAST + 1] = {0};
    for (int c = RT_E_FIRST; c >= RT_E_LAST; c--) {
        bool is_retired = false;
        for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++)
            is_retired |= c == retired[i];
        if (is_retired) {
            assert_string_equal(rt_strerror(c), "unknown error code");
            seen[RT_E_FIRST - c] = "";
            continue;
        }
        const char *s = rt_strerror(c);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        assert_string_not_equal(s, "unknown error code");
        for (int k = RT_E_FIRST; k > c; k--)
            assert_string_not_equal(s, seen[RT_E_FIRST - k]); /* distinct */
        seen[RT_E_FIRST - c] = s;
    }
    int others[] = {0,     -EIO,          -ENOSPC, -EINVAL,   1,        12345,
                    -9999, RT_E_LAST - 1, -20000,  INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        assert_non_null(rt_strerror(others[i]));
    assert_non_null(rt_error_detail());
}

/* ---- life cycle and options ---- */

static void test_open_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rt_engine *e = (rt_engine *)0x1;
    assert_int_equal(rt_open(NULL, &f->o, &e), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_open("", &f->o, &e), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_open(f->dir, &f->o, NULL), RT_E_INVALID_ARGUMENT);
    /* A second handle on the open directory. */
    e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_DIRECTORY_LOCKED);
    assert_null(e);
    assert_int_equal(rt_close(NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_stats_get(NULL, &(struct rt_stats){0}), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_stats_get(f->e, NULL), RT_E_INVALID_ARGUMENT);
    /* A file where a directory should be, and a path that is far too long. */
    char *file = tu_path("%s/good-0/00000000000000000000.log", f->dir);
    e = NULL;
    int rc = rt_open(file, &f->o, &e);
    assert_true(rc < 0);
    assert_null(e);
    free(file);
    char longpath[8192];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(rt_open(longpath, &f->o, &e), -ENAMETOOLONG);
}

struct bad_option {
    const char *what;
    void (*set)(struct rt_options *o);
};

#define BAD(name, stmt)                                                                            \
    static void bad_##name(struct rt_options *o)                                                   \
    {                                                                                              \
        stmt;                                                                                      \
    }
BAD(batch_small, o->batch_size_max_bytes = 77)
BAD(batch_big, o->batch_size_max_bytes = (64u << 20) + 1)
BAD(segment_small, o->segment_size_bytes = 13) /* Kafka 3.x: segment.bytes >= 14 */
BAD(segment_2gib, o->segment_size_bytes = (uint64_t)INT32_MAX + 1)
BAD(segment_huge, o->segment_size_bytes = UINT64_MAX)
BAD(index_small, o->index_size_max_bytes = 47)
BAD(interval_zero, o->index_interval_bytes = 0)
BAD(sync_mode, o->sync_mode = (enum rt_sync_mode)3)
BAD(sync_mode_neg, o->sync_mode = (enum rt_sync_mode) - 1)
BAD(sync_interval_zero, (o->sync_mode = RT_SYNC_INTERVAL, o->sync_interval_ms = 0))
BAD(backend, o->io_backend = (enum rt_io_backend)4)
BAD(backend_fault,
    o->io_backend = (enum rt_io_backend)3) /* the fault injector: rt_test_open only */
BAD(qdepth_small, o->io_queue_depth = 3)
BAD(qdepth_big, o->io_queue_depth = 4097)
BAD(shards_big, o->shard_count = 65)
BAD(request_depth_zero, o->request_queue_depth = 0)
BAD(request_depth_big, o->request_queue_depth = (1u << 20) + 1)
BAD(topics_zero, o->topics_max = 0)
BAD(topics_big, o->topics_max = (1u << 20) + 1)
BAD(partitions_zero, o->partitions_max = 0)
BAD(partitions_big, o->partitions_max = (1u << 20) + 1)
BAD(retention_bytes, o->retention_bytes = -2)
BAD(retention_ms, o->retention_ms = -2)
#undef BAD

static void test_options_bounds(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    static const struct bad_option bad[] = {
        {"batch_size_max_bytes < 78", bad_batch_small},
        {"batch_size_max_bytes > 64 MiB", bad_batch_big},
        {"segment_size_bytes < 14", bad_segment_small},
        {"segment_size_bytes >= 2 GiB", bad_segment_2gib},
        {"segment_size_bytes UINT64_MAX", bad_segment_huge},
        {"index_size_max_bytes < 48", bad_index_small},
        {"index_interval_bytes 0", bad_interval_zero},
        {"sync_mode 3", bad_sync_mode},
        {"sync_mode -1", bad_sync_mode_neg},
        {"sync_interval_ms 0 under RT_SYNC_INTERVAL", bad_sync_interval_zero},
        {"io_backend 4", bad_backend},
        {"io_backend 3 (the test-only fault injector)", bad_backend_fault},
        {"io_queue_depth 3", bad_qdepth_small},
        {"io_queue_depth 4097", bad_qdepth_big},
        {"shard_count 65", bad_shards_big},
        {"request_queue_depth 0", bad_request_depth_zero},
        {"request_queue_depth 2^20 + 1", bad_request_depth_big},
        {"topics_max 0", bad_topics_zero},
        {"topics_max 2^20 + 1", bad_topics_big},
        {"partitions_max 0", bad_partitions_zero},
        {"partitions_max 2^20 + 1", bad_partitions_big},
        {"retention_bytes -2", bad_retention_bytes},
        {"retention_ms -2", bad_retention_ms},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct rt_options o = f->o;
        bad[i].set(&o);
        rt_engine *e = (rt_engine *)0x1;
        int rc = rt_open(f->dir, &o, &e);
        if (rc != RT_E_INVALID_ARGUMENT)
            fail_msg("%s: rt_open returned %d (%s)", bad[i].what, rc, rt_strerror(rc));
        assert_null(e);
        assert_non_null(strstr(rt_error_detail(), "invalid option"));
    }
    /* The edges that are allowed. */
    struct rt_options o = f->o;
    o.batch_size_max_bytes = 78;
    o.segment_size_bytes = 78 * 1024;
    o.index_size_max_bytes = 48;
    o.io_queue_depth = 4;
    o.shard_count = 64;
    o.request_queue_depth = 1;
    o.retention_bytes = -1;
    o.retention_ms = -1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &o, &e), 0);
    assert_int_equal(rt_close(e), 0);
    /* NULL options mean the defaults. */
    assert_int_equal(rt_open(f->dir, NULL, &e), 0);
    assert_int_equal(rt_close(e), 0);
}

/* ---- topics ---- */

static int list_cb(void *ctx, const char *name, uint32_t partitions)
{
    (void)name;
    (void)partitions;
    return ++*(int *)ctx == 1 ? 42 : 0; /* stop at once with 42 */
}

static void test_topic_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rt_engine *e = f->e;
    assert_int_equal(rt_topic_create(NULL, "t", 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_create(e, NULL, 1), RT_E_INVALID_TOPIC);
    const char *bad_names[] = {"", ".", "..", "a/b", "a b", "tab\t", "ünï", "a\\b", "x\n", "*"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        int rc = rt_topic_create(e, bad_names[i], 1);
        if (rc != RT_E_INVALID_TOPIC)
            fail_msg("topic \"%s\": %d", bad_names[i], rc);
    }
    char name[300];
    memset(name, 'n', sizeof(name));
    name[RT_TOPIC_NAME_MAX + 1] = '\0';
    assert_int_equal(rt_topic_create(e, name, 1), RT_E_INVALID_TOPIC);
    name[RT_TOPIC_NAME_MAX] = '\0';
    assert_int_equal(rt_topic_create(e, name, 1), 0); /* exactly 249 is legal */
    assert_int_equal(rt_topic_create(e, "zero", 0), RT_E_INVALID_ARGUMENT);
    /* Above partitions_max is an invalid argument today (not RT_E_TOPICS_FULL). */
    assert_int_equal(rt_topic_create(e, "many", f->o.partitions_max + 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_create(e, "huge", UINT32_MAX), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_create(e, "good", 2), RT_E_TOPIC_ALREADY_EXISTS);
    assert_int_equal(rt_topic_create(e, "good", 5), RT_E_TOPIC_ALREADY_EXISTS);
    uint32_t n = 0;
    assert_int_equal(rt_topic_describe(NULL, "good", &n), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_describe(e, NULL, &n), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_describe(e, "good", NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_describe(e, "", &n), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_describe(e, "../good", &n), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_list(NULL, list_cb, &n), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_list(e, NULL, NULL), RT_E_INVALID_ARGUMENT);
    int calls = 0;
    assert_int_equal(rt_topic_list(e, list_cb, &calls), 42);
    assert_int_equal(calls, 1);
}

/* topics_max is enforced. */
static void test_topics_max(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    struct rt_options o = f->o;
    o.topics_max = 3;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "t2", 1), 0);
    assert_int_equal(rt_topic_create(e, "t3", 1), 0);
    assert_int_equal(rt_topic_create(e, "t4", 1), RT_E_TOPICS_FULL);
    assert_int_equal(rt_close(e), 0);
    /* A catalogue holding more topics than topics_max refuses to open. */
    o.topics_max = 2;
    assert_int_equal(rt_open(f->dir, &o, &e), RT_E_TOPICS_FULL);
    assert_null(e);
}

/* ---- appends ---- */

static void test_append_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rt_engine *e = f->e;
    int64_t before = latest(e, "good", 0);
    struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = 1};
    int64_t base = 77;
    assert_int_equal(rt_append(NULL, "good", 0, &r, 1, &base), RT_E_INVALID_ARGUMENT);
    /* A NULL topic is reported as an unknown topic today. */
    assert_int_equal(rt_append(e, NULL, 0, &r, 1, &base), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_append(e, "good", 0, NULL, 1, &base), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_append(e, "good", 0, &r, 0, &base), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_append(e, "nope", 0, &r, 1, &base), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_append(e, "good", 2, &r, 1, &base), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_append(e, "good", UINT32_MAX, &r, 1, &base),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_append(e, "", 0, &r, 1, &base), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    struct rt_record bad[] = {
        {.key = "k", .key_len = -2, .value = "v", .value_len = 1, .timestamp_ms = 1},
        {.key_len = -1, .value = "v", .value_len = -2, .timestamp_ms = 1},
        {.key_len = -1, .value = "v", .value_len = INT32_MIN, .timestamp_ms = 1},
        {.key = NULL, .key_len = 3, .value = "v", .value_len = 1, .timestamp_ms = 1},
        {.key_len = -1, .value = NULL, .value_len = 1, .timestamp_ms = 1},
        {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -2},
        {.key_len = -1,
         .value = "v",
         .value_len = 1,
         .timestamp_ms = 1,
         .headers = NULL,
         .header_count = 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = rt_append(e, "good", 0, &bad[i], 1, &base);
        if (rc != RT_E_INVALID_ARGUMENT)
            fail_msg("bad record %zu: %d (%s)", i, rc, rt_error_detail());
    }
    struct rt_header hdr_bad[] = {
        {.key = "h", .key_len = -1, .value = "x", .value_len = 1},
        {.key = "h", .key_len = 1, .value = "x", .value_len = -2},
        {.key = NULL, .key_len = 1, .value = "x", .value_len = 1},
        {.key = "h", .key_len = 1, .value = NULL, .value_len = 1},
    };
    for (size_t i = 0; i < sizeof(hdr_bad) / sizeof(hdr_bad[0]); i++) {
        struct rt_record rh = r;
        rh.headers = &hdr_bad[i];
        rh.header_count = 1;
        int rc = rt_append(e, "good", 0, &rh, 1, &base);
        if (rc != RT_E_INVALID_ARGUMENT)
            fail_msg("bad header %zu: %d (%s)", i, rc, rt_error_detail());
    }
    /* Too large: one record, and many small records that add up. */
    size_t big_len = f->o.batch_size_max_bytes;
    uint8_t *big = calloc(1, big_len);
    struct rt_record huge = {
        .key_len = -1, .value = big, .value_len = (int32_t)big_len, .timestamp_ms = 1};
    assert_int_equal(rt_append(e, "good", 0, &huge, 1, &base), RT_E_RECORD_TOO_LARGE);
    huge.value_len = INT32_MAX;
    assert_int_equal(rt_append(e, "good", 0, &huge, 1, &base), RT_E_RECORD_TOO_LARGE);
    enum { MANY = 2000 };
    struct rt_record *many = calloc(MANY, sizeof(*many));
    for (int i = 0; i < MANY; i++)
        many[i] =
            (struct rt_record){.key_len = -1, .value = big, .value_len = 16, .timestamp_ms = 1};
    assert_int_equal(rt_append(e, "good", 0, many, MANY, &base), RT_E_RECORD_TOO_LARGE);
    free(many);
    free(big);
    /* rt_append_batch: NULL, too short, junk, too large. */
    uint8_t junk[200];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(rt_append_batch(e, "good", 0, NULL, 100, &base), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_append_batch(NULL, "good", 0, junk, sizeof(junk), &base),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_append_batch(e, "good", 0, junk, 0, &base), RT_E_CORRUPT);
    assert_int_equal(rt_append_batch(e, "good", 0, junk, 11, &base), RT_E_CORRUPT);
    assert_int_equal(rt_append_batch(e, "good", 0, junk, sizeof(junk), &base), RT_E_CORRUPT);
    assert_int_equal(rt_append_batch(e, "nope", 0, junk, sizeof(junk), &base),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    /* Nothing reached the log. */
    assert_int_equal(latest(e, "good", 0), before);
}

/* ---- reads ---- */

static void test_read_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rt_engine *e = f->e;
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(NULL, "good", 0, 0, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_fetch_start(e, NULL, 0, 0, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION); /* NULL topic: unknown, today */
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 100, RT_READ_UNCOMMITTED, NULL),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 100, (enum rt_isolation)3, &fh),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 100, (enum rt_isolation) - 1, &fh),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_fetch_start(e, "nope", 0, 0, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_fetch_start(e, "good", 9, 0, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_fetch_start(e, "good", 0, -1, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_fetch_start(e, "good", 0, INT64_MAX, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_fetch_start(e, "good", 0, INT64_MIN, 100, RT_READ_UNCOMMITTED, &fh),
                     RT_E_OFFSET_OUT_OF_RANGE);
    /* max_bytes 0 still returns one whole batch (as Kafka). */
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 0, RT_READ_UNCOMMITTED, &fh), 0);
    assert_true(rt_fetch_get(fh)->size_bytes > 0);
    rt_fetch_release(fh);
    rt_fetch_release(NULL); /* a no-op */

    int64_t off = -1;
    assert_int_equal(rt_list_offsets(NULL, "good", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets(e, NULL, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION); /* NULL topic: unknown, today */
    assert_int_equal(rt_list_offsets(e, "good", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, NULL),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets(e, "good", 0, -3, RT_READ_UNCOMMITTED, &off),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets(e, "good", 0, INT64_MIN, RT_READ_UNCOMMITTED, &off),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets(e, "good", 0, RT_OFFSET_LATEST, (enum rt_isolation)5, &off),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_list_offsets(e, "good", 7, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);

    /* Iterators: NULL, zeroed, never initialised. */
    struct rt_records it;
    struct rt_record_view r;
    assert_int_equal(rt_records_init(NULL, NULL, 0), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_records_init(&it, NULL, 0), RT_E_INVALID_ARGUMENT);
    memset(&it, 0, sizeof(it));
    assert_int_equal(rt_records_next(&it, &r), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_records_next(NULL, &r), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_fetch_start(e, "good", 0, 0, 100, RT_READ_UNCOMMITTED, &fh), 0);
    assert_int_equal(rt_records_init(&it, fh, 0), 0);
    assert_int_equal(rt_records_next(&it, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_records_next(&it, &r), 0);
    assert_int_equal(rt_records_next(&it, &r), RT_E_END);
    assert_int_equal(rt_records_next(&it, &r), RT_E_END); /* stays at the end */
    struct rt_header h;
    assert_int_equal(rt_record_header(&r, 0, &h), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_record_header(NULL, 0, &h), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_record_header(&r, 0, NULL), RT_E_INVALID_ARGUMENT);
    rt_fetch_release(fh);

    /* rt_verify on bad paths. */
    assert_int_equal(rt_verify(NULL, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_verify(f->dir, NULL, NULL), RT_E_DIRECTORY_LOCKED);
    char *missing = tu_path("%s/does-not-exist", f->dir);
    assert_true(rt_verify(missing, NULL, NULL) < 0);
    free(missing);
}

/* ---- threads ---- */

enum { THREADS = 8 };

struct race {
    rt_engine *e;
    atomic_int go;
    const char *name;
    int rc[THREADS];
    int index;
    atomic_int appends_ok;
    atomic_int stop;
};

struct race_arg {
    struct race *race;
    int id;
};

static void *create_same(void *p)
{
    struct race_arg *a = p;
    while (!atomic_load(&a->race->go))
        ;
    a->race->rc[a->id] = rt_topic_create(a->race->e, a->race->name, 3);
    return NULL;
}

/* 8 threads create the same topic at once: exactly one wins, the others are told it exists. */
static void test_concurrent_create_same_topic(void **state)
{
    struct fixture *f = *state;
    for (int round = 0; round < 5; round++) {
        struct race race = {.e = f->e};
        char name[32];
        snprintf(name, sizeof(name), "race-%d", round);
        race.name = name;
        pthread_t th[THREADS];
        struct race_arg args[THREADS];
        for (int i = 0; i < THREADS; i++) {
            args[i] = (struct race_arg){.race = &race, .id = i};
            pthread_create(&th[i], NULL, create_same, &args[i]);
        }
        atomic_store(&race.go, 1);
        int won = 0;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            if (race.rc[i] == 0)
                won++;
            else
                assert_int_equal(race.rc[i], RT_E_TOPIC_ALREADY_EXISTS);
        }
        assert_int_equal(won, 1);
        uint32_t n = 0;
        assert_int_equal(rt_topic_describe(f->e, name, &n), 0);
        assert_int_equal(n, 3);
    }
}

static void *append_loop(void *p)
{
    struct race_arg *a = p;
    char v[16];
    while (!atomic_load(&a->race->stop)) {
        snprintf(v, sizeof(v), "t%d", a->id);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = 1};
        int rc = rt_append(a->race->e, "good", (uint32_t)(a->id % 2), &r, 1, NULL);
        if (rc != 0) {
            fprintf(stderr, "append: %s\n", rt_error_detail());
            abort();
        }
        atomic_fetch_add(&a->race->appends_ok, 1);
    }
    return NULL;
}

/* Appends from 4 threads keep working while another thread creates topics (and fails to
 * create bad ones); every append is acknowledged and readable, the new topics are usable. */
static void test_appends_while_creating_topics(void **state)
{
    struct fixture *f = *state;
    struct race race = {.e = f->e};
    pthread_t th[4];
    struct race_arg args[4];
    int64_t before0 = latest(f->e, "good", 0), before1 = latest(f->e, "good", 1);
    for (int i = 0; i < 4; i++) {
        args[i] = (struct race_arg){.race = &race, .id = i};
        pthread_create(&th[i], NULL, append_loop, &args[i]);
    }
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof(name), "new-%d", i);
        assert_int_equal(rt_topic_create(f->e, name, 2), 0);
        assert_int_equal(rt_topic_create(f->e, name, 2), RT_E_TOPIC_ALREADY_EXISTS);
        assert_int_equal(rt_topic_create(f->e, "bad name", 2), RT_E_INVALID_TOPIC);
        struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = 1};
        assert_int_equal(rt_append(f->e, name, 1, &r, 1, NULL), 0);
    }
    atomic_store(&race.stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int64_t added = latest(f->e, "good", 0) - before0 + latest(f->e, "good", 1) - before1;
    assert_int_equal(added, atomic_load(&race.appends_ok));
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), 0);
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof(name), "new-%d", i);
        assert_int_equal(latest(e, name, 1), 1);
    }
    assert_int_equal(latest(e, "good", 0) - before0 + latest(e, "good", 1) - before1, added);
    assert_int_equal(rt_close(e), 0);
}

/* ---- producers, transactions, groups, consumers ---- */

static void test_producer_txn_group_consumer_bad_arguments(void **state)
{
    struct fixture *f = *state;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(NULL, &po, &p), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_open(f->e, &po, NULL), RT_E_INVALID_ARGUMENT);
    po.max_in_flight = 0;
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
    po.max_in_flight = 6;
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
    rt_producer_options_init(&po);
    po.batch_size_bytes = 10;
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
    rt_producer_options_init(&po);
    po.name = "";
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
    rt_producer_options_init(&po);
    po.transactional_id = "";
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);

    rt_producer_options_init(&po);
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1},
        .sequence = -1};
    assert_int_equal(rt_producer_send(NULL, "good", 0, &m, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_send(p, NULL, 0, &m, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_send(p, "good", 0, NULL, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_send(p, "nope", 0, &m, NULL, NULL),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_producer_send(p, "good", 7, &m, NULL, NULL),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    struct rt_producer_message bad = m;
    bad.record.value_len = -2;
    assert_int_equal(rt_producer_send(p, "good", 0, &bad, NULL, NULL), RT_E_INVALID_ARGUMENT);
    bad = m;
    bad.sequence = 5; /* only named producers supply sequences */
    assert_int_equal(rt_producer_send(p, "good", 0, &bad, NULL, NULL), RT_E_INVALID_ARGUMENT);
    static uint8_t huge[20 * 1024];
    bad = m;
    bad.record.value = huge;
    bad.record.value_len = sizeof(huge);
    assert_int_equal(rt_producer_send(p, "good", 0, &bad, NULL, NULL), RT_E_RECORD_TOO_LARGE);
    /* Not transactional: every transactional call is a state error. */
    assert_int_equal(rt_producer_init_transactions(p, -1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_begin(p), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_commit(p, -1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_abort(p, -1), RT_E_INVALID_TXN_STATE);
    struct rt_offset off = {.topic = "good", .partition = 0, .offset = 1};
    assert_int_equal(rt_producer_send_offsets(p, NULL, &off, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_send_offsets(p, "g", &off, 1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_flush(NULL, -1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_producer_close(NULL), RT_E_INVALID_ARGUMENT);

    /* Transactions admin and groups. */
    assert_int_equal(rt_txn_abort(f->e, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort(NULL, "x"), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_list(f->e, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_commit_offsets(f->e, NULL, &off, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_commit_offsets(f->e, "", &off, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_commit_offsets(f->e, "g", NULL, 1), RT_E_INVALID_ARGUMENT);
    int64_t committed = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", NULL, 0, false, &committed),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "good", 0, false, NULL),
                     RT_E_INVALID_ARGUMENT);

    /* Consumers. */
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    rt_consumer *c = NULL;
    assert_int_not_equal(rt_consumer_open(NULL, &co, &c), 0);
    assert_int_not_equal(rt_consumer_open(f->e, &co, NULL), 0);
    co.isolation = (enum rt_isolation)9;
    assert_int_not_equal(rt_consumer_open(f->e, &co, &c), 0);
    rt_consumer_options_init(&co);
    co.group = "g";
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    uint32_t parts[1] = {5};
    assert_int_not_equal(rt_consumer_assign(c, "good", parts, 1), 0);
    assert_int_not_equal(rt_consumer_assign(c, "nope", parts, 1), 0);
    assert_int_not_equal(rt_consumer_assign(c, NULL, parts, 1), 0);
    assert_int_not_equal(rt_consumer_seek(c, "good", 1, 0), 0); /* not assigned */
    int64_t pos = 0;
    assert_int_not_equal(rt_consumer_position(c, "good", 0, &pos), 0);
    assert_int_equal(rt_consumer_close(c), 0);
    assert_int_equal(rt_consumer_close(NULL), 0); /* a no-op, like rt_fetch_release(NULL) */
    assert_int_equal(latest(f->e, "good", 0), 1); /* nothing above reached the log */
}

/* ---- contract gaps of issue 10 (defect 12): each a clear error at the call ---- */

/* The error detail of the last failed call mentions `what`. */
static void assert_detail_has(const char *what)
{
    const char *d = rt_error_detail();
    if (!d || !strstr(d, what))
        fail_msg("rt_error_detail() is '%s', expected it to mention '%s'", d ? d : "(null)", what);
}

static struct rt_producer_message null_key_message(const char *value)
{
    return (struct rt_producer_message){.record = {.key_len = -1,
                                                   .value = value,
                                                   .value_len = (int32_t)strlen(value),
                                                   .timestamp_ms = -1},
                                        .sequence = -1};
}

static void test_send_partition_below_minus_one(void **state)
{
    struct fixture *f = *state;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, NULL, &p), 0);
    struct rt_producer_message m = null_key_message("x");
    assert_int_equal(rt_producer_send(p, "good", -2, &m, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_detail_has("partition -2");
    assert_int_equal(rt_producer_send(p, "good", INT32_MIN, &m, NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_send(p, "good", 2, &m, NULL, NULL),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_detail_has("partition 2");
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(latest(f->e, "good", 0) + latest(f->e, "good", 1), 1);
}

static void test_transactional_id_not_utf8(void **state)
{
    struct fixture *f = *state;
    const char *bad_ids[] = {"tx\xff", "tx\xc0\xaf", "\xed\xa0\x80", "tx\xe2\x82"};
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = bad_ids[i];
        rt_producer *p = (rt_producer *)&po; /* must be cleared on failure */
        assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
        assert_null(p);
        assert_detail_has("UTF-8");
    }
}

static void test_transaction_timeout_negative(void **state)
{
    struct fixture *f = *state;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-timeout";
    po.transaction_timeout_ms = -5;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_TRANSACTION_TIMEOUT);
    assert_detail_has("-5");
    po.transaction_timeout_ms = INT32_MIN;
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_TRANSACTION_TIMEOUT);
    po.transaction_timeout_ms = 1000;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
}

/* init_transactions inside an open transaction is refused and aborts nothing: the transaction
 * still commits with its record and its offsets. */
static void test_init_transactions_inside_transaction(void **state)
{
    struct fixture *f = *state;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-reinit";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    struct rt_producer_message m = null_key_message("in-txn");
    assert_int_equal(rt_producer_send(p, "good", 1, &m, NULL, NULL), 0);
    struct rt_offset off = {.topic = "good", .partition = 0, .offset = 1};
    assert_int_equal(rt_producer_send_offsets(p, "g-reinit", &off, 1), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), RT_E_INVALID_TXN_STATE);
    assert_detail_has("transaction is open");
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
    int64_t committed = -2;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-reinit", "good", 0, true, &committed), 0);
    assert_int_equal(committed, 1);
    int64_t lso = -1;
    assert_int_equal(rt_list_offsets(f->e, "good", 1, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso),
                     0);
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(f->e, "good", 1, 0, 4096, RT_READ_COMMITTED, &fh), 0);
    struct rt_records it;
    struct rt_record_view r;
    assert_int_equal(rt_records_init(&it, fh, 0), 0);
    assert_int_equal(rt_records_next(&it, &r), 0);
    assert_int_equal(r.value_len, 6);
    assert_memory_equal(r.value, "in-txn", 6);
    rt_fetch_release(fh);
}

/* Offsets for a topic that does not exist, or a partition beyond the topic's count, are
 * refused by every commit entry point; nothing is committed. */
static void test_offset_commit_unknown_partition(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(rt_topic_create(f->e, "one", 1), 0);
    struct rt_offset unknown_topic = {.topic = "nope", .partition = 0, .offset = 0};
    struct rt_offset far_partition = {.topic = "one", .partition = 99, .offset = 0};
    struct rt_offset mixed[2] = {{.topic = "one", .partition = 0, .offset = 0}, far_partition};
    assert_int_equal(rt_group_commit_offsets(f->e, "g-unknown", &unknown_topic, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_detail_has("nope-0");
    assert_int_equal(rt_group_commit_offsets(f->e, "g-unknown", &far_partition, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_detail_has("one-99");
    assert_int_equal(rt_group_commit_offsets(f->e, "g-unknown", mixed, 2),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    int64_t committed = -2;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-unknown", "one", 0, false, &committed), 0);
    assert_int_equal(committed, -1);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-unknown", "one", 99, false, &committed), 0);
    assert_int_equal(committed, -1);

    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-unknown";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(rt_producer_send_offsets(p, "g-unknown", &unknown_topic, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_producer_send_offsets(p, "g-unknown", &far_partition, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_detail_has("one-99");
    assert_int_equal(rt_producer_commit(p, -1), 0); /* the transaction was not poisoned */
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-unknown", "one", 99, true, &committed), 0);
    assert_int_equal(committed, -1);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-unknown", "nope", 0, true, &committed), 0);
    assert_int_equal(committed, -1);
}

/* A seek beyond the high watermark is accepted (as Kafka's), but poll reports the position as
 * out of range instead of returning RT_E_END forever, and commit never stores it. */
static void test_consumer_seek_beyond_high_watermark(void **state)
{
    struct fixture *f = *state;
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = "g-seek";
    co.isolation = RT_READ_UNCOMMITTED;
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    uint32_t part = 0;
    assert_int_equal(rt_consumer_assign(c, "good", &part, 1), 0);
    assert_int_equal(rt_consumer_seek(c, "good", 0, 500), 0);
    struct rt_record_view r;
    assert_int_equal(rt_consumer_poll(c, &r, NULL, NULL, 0), RT_E_OFFSET_OUT_OF_RANGE);
    assert_detail_has("500");
    assert_int_equal(rt_consumer_poll(c, &r, NULL, NULL, 10), RT_E_OFFSET_OUT_OF_RANGE);
    int64_t pos = 0;
    assert_int_equal(rt_consumer_position(c, "good", 0, &pos), 0);
    assert_int_equal(pos, 500);
    assert_int_equal(rt_consumer_commit(c), RT_E_OFFSET_OUT_OF_RANGE);
    assert_detail_has("500");
    int64_t committed = -2;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-seek", "good", 0, true, &committed), 0);
    assert_int_equal(committed, -1);
    /* Seeking back into range recovers: the end of the log waits, as usual. */
    assert_int_equal(rt_consumer_seek(c, "good", 0, RT_OFFSET_LATEST), 0);
    assert_int_equal(rt_consumer_poll(c, &r, NULL, NULL, 0), RT_E_END);
    assert_int_equal(rt_consumer_commit(c), 0);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g-seek", "good", 0, true, &committed), 0);
    assert_int_equal(committed, 1);
    assert_int_equal(rt_consumer_seek(c, "good", 0, 0), 0);
    assert_int_equal(rt_consumer_poll(c, &r, NULL, NULL, 0), 0);
    assert_int_equal(r.offset, 0);
    assert_int_equal(rt_consumer_close(c), 0);
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_every_code),
        cmocka_unit_test_setup_teardown(test_open_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topics_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_create_same_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_appends_while_creating_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_producer_txn_group_consumer_bad_arguments, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_send_partition_below_minus_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactional_id_not_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transaction_timeout_negative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_transactions_inside_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_commit_unknown_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_seek_beyond_high_watermark, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
