/*
 * test_delete_records.c — Kafka's DeleteRecords in the engine (rt_partition_delete_records,
 * PA13 in engine/log/partition.h; the log-start-offset file, docs/format.md A.8).
 *
 * What it pins: the log start moves to the asked offset (-1: the high watermark) and never
 * back; offsets above the high watermark are refused; below the new start a fetch gets
 * RT_E_OFFSET_OUT_OF_RANGE and the earliest lookup answers it; segments wholly below it are
 * deleted and the one holding it is kept; a reopen keeps it. Then power is lost around the
 * persisting write (the fault injector, io/io.h, with its directory model): at the temp file's
 * fdatasync, at the rename, at the directory fsync, and right after the call returned. The log
 * start after the reopen is never below an answered DeleteRecords and never above what was asked
 * (and the model is shown to act: a loss before the rename keeps the old start).
 * It looks at the engine through the public API, the partition's segment list and the fault
 * plan; power-losing runs happen in a forked child that dies without closing.
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
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "helpers/child.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "log.h"
#include "partition.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC             "dr"
#define RECORDS_PER_BATCH 16
#define VALUE_BYTES       1000
#define BATCHES           24

static void options(struct rt_options *o)
{
    tu_options_small(o, 64 * 1024, 32 * 1024, 4096); /* about 4 batches a segment */
    o->sync_mode = RT_SYNC_ALWAYS;
    o->retention_bytes = -1;
    o->retention_ms = -1;
}

/* Appends BATCHES batches (dense offsets from 0); returns the next offset, -1 on failure
 * (without cmocka, so a forked child can use it). */
static int64_t fill(rt_engine *e)
{
    int64_t next = 0;
    for (int i = 0; i < BATCHES; i++) {
        int64_t base = -1;
        if (tu_append_offset_batch(e, TOPIC, next, RECORDS_PER_BATCH, VALUE_BYTES, &base) != 0 ||
            base != next)
            return -1;
        next += RECORDS_PER_BATCH;
    }
    return next;
}

static int64_t earliest(rt_engine *e)
{
    int64_t off = -99;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &off),
                     0);
    return off;
}

static int fetch_at(rt_engine *e, int64_t offset)
{
    rt_fetch *f = NULL;
    int rc = rt_fetch_start(e, TOPIC, 0, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
    rt_fetch_release(f);
    return rc;
}

static void expect_start(rt_engine *e, int64_t start, const char *when)
{
    int64_t got = earliest(e);
    if (got != start)
        fail_msg("%s: earliest is %" PRId64 ", want %" PRId64, when, got, start);
    assert_int_equal(fetch_at(e, start), 0);
    if (start > 0 && fetch_at(e, start - 1) != RT_E_OFFSET_OUT_OF_RANGE)
        fail_msg("%s: a fetch at %" PRId64 " (below the log start) was not refused", when,
                 start - 1);
}

static void test_delete_records_moves_the_log_start(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t hw = fill(e);
    assert_true(hw > 0);
    struct partition *p = log_partition(engine_log(e), TOPIC, 0);
    assert_non_null(p);
    uint32_t segments = p->segment_count;
    assert_true(segments >= 5);
    expect_start(e, 0, "before");

    int64_t low = -1;
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, hw + 1, &low),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, -2, &low), RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 1, 0, &low),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    expect_start(e, 0, "after refused calls");

    /* Inside a segment, not on a batch boundary: segments wholly below go, its own stays. */
    int64_t target = 10 * RECORDS_PER_BATCH + 3;
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, target, &low), 0);
    assert_int_equal(low, target);
    expect_start(e, target, "after delete-records");
    assert_true(p->segment_count < segments);
    assert_true(p->segments[0]->base_offset <= target && p->segments[0]->next_offset > target);

    /* Below the current start: a no-op answering it. */
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, 5, &low), 0);
    assert_int_equal(low, target);
    expect_start(e, target, "after a lower delete-records");

    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after delete-records");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    expect_start(e, target, "after a reopen");

    /* -1: the high watermark; the log is then empty to readers, and takes appends. */
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, -1, &low), 0);
    assert_int_equal(low, hw);
    expect_start(e, hw, "after delete-records to the high watermark");
    int64_t base = -1;
    assert_int_equal(tu_append_offset_batch(e, TOPIC, hw, RECORDS_PER_BATCH, VALUE_BYTES, &base),
                     0);
    assert_int_equal(base, hw);
    int64_t start = -1;
    assert_int_equal(tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, &start),
                     hw + RECORDS_PER_BATCH);
    assert_int_equal(start, hw);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    expect_start(e, hw, "after a second reopen");
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "at the end");
    tu_rmdir_free(dir);
}

/* A read-only engine refuses; the file a read-write one stored is honoured by it. */
static void test_delete_records_read_only(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    assert_true(fill(e) > 0);
    int64_t low = -1;
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, 40, &low), 0);
    assert_int_equal(rt_close(e), 0);
    o.read_only = true;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, 50, &low), RT_E_READ_ONLY);
    expect_start(e, 40, "read-only");
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* An open transaction that began below the new log start: the last stable offset moves up to
 * the log start (as Kafka's does), so a read_committed reader at the log start is in range. */
static void test_delete_records_past_an_open_transaction(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t hw = fill(e);
    assert_true(hw > 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "dr-tx";
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "open", .value_len = 4, .timestamp_ms = -1},
        .sequence = -1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    int64_t lso = -1, end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(lso, hw); /* the transaction's first offset */
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, hw + 5);

    int64_t low = -1;
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, hw + 2, &low), 0);
    assert_int_equal(low, hw + 2);
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(lso, hw + 2);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, hw + 2, 1 << 20, RT_READ_COMMITTED, &f), 0);
    rt_fetch_release(f);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_true(lso > hw + 5); /* past the commit marker */
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after delete-records past a transaction");
    tu_rmdir_free(dir);
}

enum loss_at { LOSS_FDATASYNC, LOSS_RENAME, LOSS_DIR_FSYNC, LOSS_AFTER };

struct loss_report {
    int64_t old_start, asked;
    int rc;
    int power_lost;
};

static void loss_child(const char *dir, enum loss_at at, int fd)
{
    struct rt_options o;
    options(&o);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
        _exit(2);
    if (fill(e) < 0)
        _exit(3);
    int64_t low = -1;
    struct loss_report r = {.old_start = 4 * RECORDS_PER_BATCH + 1,
                            .asked = 12 * RECORDS_PER_BATCH + 5};
    if (rt_partition_delete_records(e, TOPIC, 0, r.old_start, &low) != 0 || low != r.old_start)
        _exit(4);
    struct io_fault_rule rule = {.mode = IO_FAULT_POWER_LOSS, .nth = 1};
    switch (at) {
    case LOSS_FDATASYNC:
        rule.op = IO_OP_FDATASYNC_DIRECT, rule.path_contains = "log-start-offset";
        break;
    case LOSS_RENAME: /* the temp file's create, then the rename */
        rule.op = IO_OP_DIR_ENTRY, rule.path_contains = "log-start-offset", rule.nth = 2;
        break;
    case LOSS_DIR_FSYNC:
        rule.op = IO_OP_DIR_FSYNC, rule.path_contains = TOPIC "-0";
        break;
    case LOSS_AFTER:
        break;
    }
    if (at != LOSS_AFTER)
        plan.rules[plan.rule_count++] = rule;
    r.rc = rt_partition_delete_records(e, TOPIC, 0, r.asked, &low);
    if (r.rc == 0 && low != r.asked)
        _exit(5);
    r.power_lost = io_fault_power_is_lost(&plan);
    if (!r.power_lost)
        (void)io_fault_power_loss(&plan);
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(6);
    _exit(0);
}

static int64_t power_loss_at(enum loss_at at, struct loss_report *r)
{
    char *dir = tu_mkdtemp();
    int fd = -1;
    pid_t pid = tu_fork_piped(&fd);
    if (pid == 0)
        loss_child(dir, at, fd);
    int status = 0;
    assert_int_equal(tu_child_report(pid, fd, r, sizeof(*r), &status), sizeof(*r));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t start = earliest(e);
    expect_start(e, start, "after the power loss");
    /* PA13: never below an answered DeleteRecords, never above what was asked. */
    if (start > r->asked || start < r->old_start || (r->rc == 0 && start != r->asked))
        fail_msg("power loss %d: log start %" PRId64 " (old %" PRId64 ", asked %" PRId64
                 ", answered %d)",
                 (int)at, start, r->old_start, r->asked, r->rc);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after delete-records and a power loss");
    tu_rmdir_free(dir);
    return start;
}

static void test_power_loss_around_the_persisting_write(void **state)
{
    (void)state;
    /* Before the rename is durable: the call fails, the old start comes back (the model acts). */
    struct loss_report r = {0};
    int64_t start = power_loss_at(LOSS_FDATASYNC, &r);
    assert_int_equal(start, r.old_start);
    assert_true(r.power_lost && r.rc != 0);
    start = power_loss_at(LOSS_RENAME, &r);
    assert_int_equal(start, r.old_start);
    assert_true(r.power_lost && r.rc != 0);
    /* The directory fsync ran: durable, answered. */
    start = power_loss_at(LOSS_DIR_FSYNC, &r);
    assert_int_equal(start, r.asked);
    assert_true(r.power_lost && r.rc == 0);
    start = power_loss_at(LOSS_AFTER, &r);
    assert_int_equal(start, r.asked);
    assert_int_equal(r.rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delete_records_moves_the_log_start),
        cmocka_unit_test(test_delete_records_read_only),
        cmocka_unit_test(test_delete_records_past_an_open_transaction),
        cmocka_unit_test(test_power_loss_around_the_persisting_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
