/*
 * test_topic_delete.c — rt_topic_delete (log.c LG7-LG9): a deleted topic is gone for every call
 * at once and after a reopen; its directories are renamed aside and removed in the background;
 * a fetch that holds its segment keeps reading it; a topic recreated under the name starts
 * empty; internal topics are refused. Power loss at every directory change, directory fsync
 * and direct fdatasync of a deletion (the fault injector, io/io.h) leaves a whole topic or none
 * after the next open, nothing of it on disk, and a directory verify finds spotless.
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
#include <unistd.h>

#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "ringtail.h"

#define TOPIC "gone"
#define PARTS 3

static void options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = 64 * 1024;
    o->batch_size_max_bytes = 16 * 1024;
    o->shard_count = 1;
}

/* Entries of dir whose name starts with prefix. */
static unsigned entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void fill(rt_engine *e, const char *topic, uint32_t parts, int per)
{
    char v[100];
    memset(v, 'z', sizeof(v));
    struct rt_record r = {.key_len = -1, .value = v, .value_len = sizeof(v), .timestamp_ms = -1};
    for (uint32_t p = 0; p < parts; p++)
        for (int i = 0; i < per; i++)
            assert_int_equal(rt_append(e, topic, p, &r, 1, NULL), 0);
}

static void test_delete_recreate_and_reopen(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, PARTS), 0);
    assert_int_equal(rt_topic_create(e, "kept", 1), 0);
    fill(e, TOPIC, PARTS, 50);
    fill(e, "kept", 1, 5);
    /* A fetch holding partition 0's segment (LG7). */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_true(v->size_bytes > 0);
    uint64_t sum_before = 0;
    for (size_t i = 0; i < v->size_bytes; i++)
        sum_before += v->data[i];

    assert_int_equal(rt_topic_delete(e, TOPIC), 0);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(e, TOPIC, 0, &r, 1, NULL), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    rt_fetch *g = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &g),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_delete(e, TOPIC), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_delete(e, "__consumer_offsets"), RT_E_INTERNAL_TOPIC);
    for (int p = 0; p < PARTS; p++) { /* renamed aside at once */
        char *pd = tu_path("%s/" TOPIC "-%d", dir, p);
        assert_int_equal(access(pd, F_OK), -1);
        free(pd);
    }
    /* The held fetch still reads its bytes. */
    uint64_t sum_after = 0;
    for (size_t i = 0; i < v->size_bytes; i++)
        sum_after += v->data[i];
    assert_true(sum_after == sum_before);
    rt_fetch_release(f);

    /* Recreated: empty, fewer partitions. */
    assert_int_equal(rt_topic_create(e, TOPIC, 2), 0);
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, 0);
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, 1, &r, 1, &base), 0);
    assert_int_equal(base, 0);
    assert_int_equal(rt_list_offsets(e, "kept", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, 5);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(entries(dir, TOPIC "-0."), 0); /* the background removal finished */
    tu_expect_verify_spotless(dir, "after delete and recreate");

    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), 0);
    assert_int_equal(parts, 2);
    assert_int_equal(rt_list_offsets(e, TOPIC, 1, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, 1);
    assert_int_equal(rt_topic_delete(e, TOPIC), 0);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_describe(e, "kept", &parts), 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after delete and reopen");
    tu_rmdir_free(dir);
}

/* A crash left the data of a deletion behind: renamed `*-delete` directories and the intent
 * naming the topic, with `<topic>-<p>` directories not renamed yet: the open removes them. */
static void test_open_finishes_a_deletion(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "other", 2), 0);
    fill(e, "other", 2, 3);
    assert_int_equal(rt_close(e), 0);
    /* As a deletion of a 2-partition topic "x" would leave it after its commit. */
    assert_int_equal(tu_system("cp -r %s/other-0 %s/x-0.0123-delete && cp -r %s/other-1 %s/x-1",
                               dir, dir, dir, dir),
                     0);
    char *intent = tu_path("%s/topic-delete.tmp", dir);
    FILE *fp = fopen(intent, "w");
    assert_non_null(fp);
    fputs("ringtail topic delete 1\nx\n2\nend\n", fp);
    fclose(fp);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(entries(dir, "x-"), 0);
    assert_int_equal(access(intent, F_OK), -1);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, "other", &parts), 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the open");
    free(intent);
    tu_rmdir_free(dir);
}

/* A transaction open in a topic that is deleted commits in its other partitions, and the
 * engine keeps working: other topics take appends, the directory reopens, verify is clean. */
static void test_delete_under_an_open_transaction(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    assert_int_equal(rt_topic_create(e, "kept", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-delete";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, 10000), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "t", .value_len = 1, .timestamp_ms = -1},
        .sequence = -1};
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_send(p, "kept", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(p, 10000), 0);
    assert_int_equal(rt_topic_delete(e, TOPIC), 0);
    int rc = rt_producer_commit(p, 10000);
    print_message("commit after the deletion: %s (%s)\n", rt_strerror(rc),
                  rc ? rt_error_detail() : "");
    assert_int_equal(rt_producer_close(p), 0);
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(e, "kept", 0, &r, 1, NULL), 0);
    int64_t lso = -1;
    assert_int_equal(rt_list_offsets(e, "kept", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(lso, 3); /* record, marker, record */
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after a deletion under a transaction");
    tu_rmdir_free(dir);
}

static void power_prepare(rt_engine *e)
{
    assert_int_equal(rt_topic_create(e, TOPIC, PARTS), 0);
    fill(e, TOPIC, PARTS, 3);
}

static int power_act(rt_engine *e)
{
    return rt_topic_delete(e, TOPIC);
}

static void power_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    uint32_t parts = 0;
    int drc = rt_topic_describe(e, TOPIC, &parts);
    if (acked && drc == 0)
        fail_msg("%s: an acknowledged deletion came back", what);
    if (drc == 0) {
        /* Whole: every partition with its records. */
        assert_int_equal(parts, PARTS);
        for (uint32_t p = 0; p < PARTS; p++) {
            int64_t end = -1;
            assert_int_equal(
                rt_list_offsets(e, TOPIC, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
            if (end != 3)
                fail_msg("%s: partition %u has %lld records", what, p, (long long)end);
        }
    } else if (entries(dir, TOPIC "-") != 0) {
        fail_msg("%s: %u leftovers of a deleted topic after the open", what,
                 entries(dir, TOPIC "-"));
    }
}

static const struct tu_power_sweep sweep = {.options = options,
                                            .runs_max = 100,
                                            .what = "of a deletion",
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
        cmocka_unit_test(test_delete_recreate_and_reopen),
        cmocka_unit_test(test_open_finishes_a_deletion),
        cmocka_unit_test(test_delete_under_an_open_transaction),
        cmocka_unit_test(test_power_loss_at_every_directory_change),
        cmocka_unit_test(test_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_at_every_direct_fdatasync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
