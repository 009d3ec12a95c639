/*
 * test_topic_partitions.c — rt_topic_add_partitions (log.c LG10): new partitions are empty and
 * take appends, the old ones keep their records and readers, the count survives a reopen, a
 * count not above the current one is refused, and power loss at every directory change,
 * directory fsync and direct fdatasync of an addition (the fault injector) leaves the old count
 * or the new one after the next open, nothing of an unfinished addition on disk, and a
 * directory verify finds spotless.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "ringtail.h"

#define TOPIC "grow"

static void options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = 64 * 1024;
    o->batch_size_max_bytes = 16 * 1024;
    o->shard_count = 2;
    o->partitions_max = 16;
}

static int64_t end_of(rt_engine *e, uint32_t p)
{
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    return end;
}

static void append_one(rt_engine *e, uint32_t p)
{
    struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(e, TOPIC, p, &r, 1, NULL), 0);
}

static void test_add_partitions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 2), 0);
    for (int i = 0; i < 5; i++) {
        append_one(e, 0);
        append_one(e, 1);
    }
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
    assert_int_equal(rt_topic_add_partitions(e, TOPIC, 2), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_add_partitions(e, TOPIC, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_add_partitions(e, TOPIC, 17), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_topic_add_partitions(e, "nope", 4), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_add_partitions(e, "__consumer_offsets", 60), RT_E_INTERNAL_TOPIC);
    assert_int_equal(rt_topic_add_partitions(e, TOPIC, 5), 0);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), 0);
    assert_int_equal(parts, 5);
    assert_true(rt_fetch_get(f)->size_bytes > 0); /* a reader of an old partition is untouched */
    rt_fetch_release(f);
    assert_int_equal(end_of(e, 0), 5);
    for (uint32_t p = 2; p < 5; p++) {
        assert_int_equal(end_of(e, p), 0);
        append_one(e, p);
        assert_int_equal(end_of(e, p), 1);
    }
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the addition");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), 0);
    assert_int_equal(parts, 5);
    assert_int_equal(end_of(e, 4), 1);
    assert_int_equal(end_of(e, 1), 5);
    assert_int_equal(rt_topic_add_partitions(e, TOPIC, 6), 0);
    append_one(e, 5);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

static void power_prepare(rt_engine *e)
{
    assert_int_equal(rt_topic_create(e, TOPIC, 2), 0);
    append_one(e, 0);
    append_one(e, 1);
}

static int power_act(rt_engine *e)
{
    return rt_topic_add_partitions(e, TOPIC, 4);
}

static void power_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    (void)dir;
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), 0);
    if ((parts != 2 && parts != 4) || (acked && parts != 4))
        fail_msg("%s: %u partitions (%s)", what, parts, acked ? "acknowledged" : "not");
    assert_int_equal(end_of(e, 0), 1);
    assert_int_equal(end_of(e, 1), 1);
    if (parts == 4)
        assert_int_equal(end_of(e, 3), 0);
}

static const struct tu_power_sweep sweep = {.options = options,
                                            .runs_max = 200,
                                            .what = "of an addition",
                                            .prepare = power_prepare,
                                            .act = power_act,
                                            .check = power_check,
                                            .after = tu_expect_verify_spotless};

static void test_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_ENTRY);
}

static void test_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_FSYNC);
}

static void test_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_FDATASYNC_DIRECT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_partitions),
        cmocka_unit_test(test_power_loss_at_every_directory_change),
        cmocka_unit_test(test_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_at_every_direct_fdatasync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
