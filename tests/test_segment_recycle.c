/*
 * test_segment_recycle.c — segments that fdatasync like overwrites (issue 14 item 2): the
 * pre-writer keeps zeros written ahead of the writer (SG1-SG3, SP1-SP4), retention recycles a
 * segment file for the next roll (PA6), and a recycled file's stale batches are never served,
 * after a clean close, a power loss (with torn sectors) or a SIGKILL (RS1-RS3, SC5 in
 * docs/format.md A.6). Every record's value names its offset, so a stale batch served in place
 * of a new one, or a lost acknowledged one, shows as a wrong value or a gap.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback;
 * the power-loss tests use the fault backend for the run that loses power and the backend under
 * test to reopen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
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

#define TOPIC             "seg"
#define RECORDS_PER_BATCH 16
#define VALUE_BYTES       1000

static void options(struct rt_options *o)
{
    /* segments of 1 MiB: a pre-write lead of 64 .. 128 KiB (segment_pool_lead_at) */
    tu_options_small(o, 1024 * 1024, 32 * 1024, 4096);
    o->sync_mode = RT_SYNC_ALWAYS;
    o->retention_bytes = 1024 * 1024; /* retention leaves about one sealed segment */
}

static int append_batch(rt_engine *e, int64_t first, int64_t *base_out)
{
    return tu_append_offset_batch(e, TOPIC, first, RECORDS_PER_BATCH, VALUE_BYTES, base_out);
}

/* Appends one batch at `*next` and advances it; fails the test unless it is acknowledged. */
static void append_acked(rt_engine *e, int64_t *next)
{
    int64_t base = -1;
    int rc = append_batch(e, *next, &base);
    if (rc != 0)
        fail_msg("append at %" PRId64 ": %s (%s)", *next, rt_strerror(rc), rt_error_detail());
    assert_int_equal(base, *next);
    *next += RECORDS_PER_BATCH;
}

static struct rt_stats stats(rt_engine *e)
{
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    return st;
}

static int64_t read_back(rt_engine *e, int64_t *start_out)
{
    return tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, start_out);
}

/* Appends until the active segment is a recycled file that held the batches of a deleted
 * segment (base offset 0): two rolls, retention, one more roll. Returns the next offset, or -1
 * (without cmocka, so a forked child can use it). */
static int64_t try_build_recycled(rt_engine *e)
{
    int64_t next = 0, base = -1;
    struct rt_stats st;
    for (;;) {
        if (rt_stats_get(e, &st) != 0)
            return -1;
        if (st.segments_rolled >= 2)
            break;
        if (append_batch(e, next, &base) != 0 || base != next)
            return -1;
        next += RECORDS_PER_BATCH;
    }
    if (log_enforce_retention(engine_log(e)) != 0)
        return -1;
    uint64_t rolled = st.segments_rolled;
    for (;;) {
        if (rt_stats_get(e, &st) != 0)
            return -1;
        if (st.segments_rolled > rolled)
            break;
        if (append_batch(e, next, &base) != 0 || base != next)
            return -1;
        next += RECORDS_PER_BATCH;
    }
    return st.segments_recycled == 1 && st.segments_deleted >= 1 ? next : -1;
}

static int64_t build_recycled(rt_engine *e)
{
    int64_t next = try_build_recycled(e);
    if (next < 0)
        fail_msg("no recycled segment: %s", rt_error_detail());
    return next;
}

/* SG2, SP2: once the pre-writer has caught up, appends inside its lead land on written blocks
 * (no missed byte), and zeros never replace a record. */
static void test_prewrite_stays_ahead(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    o.retention_bytes = -1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t next = 0;
    /* SP5: a segment that took less than 64 KiB is not pre-written at all. */
    for (int i = 0; i < 3; i++)
        append_acked(e, &next);
    assert_int_equal(stats(e).prewrite_bytes, 0);
    assert_true(stats(e).prewrite_missed_bytes >= 3 * 16000); /* counted as missed, though */
    append_acked(e, &next);
    append_acked(e, &next); /* 64 KiB and more: from now on it is pre-written */
    /* Wait (bounded by progress, not by a clock) for the first chunk: a lead of 64 KiB. */
    for (int i = 0; i < 20000 && stats(e).prewrite_bytes < 60 * 1024; i++)
        usleep(1000);
    struct rt_stats st = stats(e);
    assert_true(st.prewrite_bytes >= 60 * 1024);
    assert_true(st.prewrite_fdatasyncs >= 1);
    uint64_t missed = st.prewrite_missed_bytes;
    assert_true(missed > 0);
    /* Two batches (32 KiB) fit in the lead: no byte of them is missed. */
    append_acked(e, &next);
    append_acked(e, &next);
    assert_int_equal(stats(e).prewrite_missed_bytes, missed);
    /* Many more, across rolls: every record reads back as written. */
    for (int i = 0; i < 200; i++)
        append_acked(e, &next);
    int64_t start = -1;
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(start, 0);
    assert_true(stats(e).segments_rolled >= 2);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after a clean close");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* PA7: once the active segment is half full, the pre-writer writes the head of the next
 * segment's file; the roll renames it into place, so the first batches of the next segment land
 * on written blocks (no missed byte), and no stray file is left behind. */
static void test_roll_takes_the_prewritten_next_segment(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    o.retention_bytes = -1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    char *next_file = tu_path("%s/" TOPIC "-0/next.log.tmp", dir);
    int64_t next = 0;
    while (!fs_exists_for_test(next_file) || tu_file_size(next_file) < 128 * 1024) {
        append_acked(e, &next);
        assert_int_equal(stats(e).segments_rolled, 0); /* ready well before the roll */
        if (next > 20 * RECORDS_PER_BATCH)
            usleep(1000); /* past half: give the pre-writer its turn (bounded by progress) */
    }
    /* Its fdatasync comes after its last byte: wait for the count to move (progress, not time). */
    uint64_t syncs = stats(e).prewrite_fdatasyncs;
    for (int i = 0; i < 5000 && stats(e).prewrite_fdatasyncs == syncs; i++)
        usleep(1000);
    usleep(10 * 1000);
    for (;;) {
        uint64_t missed = stats(e).prewrite_missed_bytes;
        uint64_t rolled = stats(e).segments_rolled;
        append_acked(e, &next);
        if (stats(e).segments_rolled > rolled) {
            /* The rolling batch went to the renamed file, inside its pre-written head. */
            assert_int_equal(stats(e).prewrite_missed_bytes, missed);
            break;
        }
    }
    assert_false(fs_exists_for_test(next_file));
    int64_t start = -1;
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after a clean close");
    free(next_file);
    tu_rmdir_free(dir);
}

/* Nothing is pre-written for segments under SEGMENT_POOL_SEGMENT_MIN_BYTES (1 MiB). */
static void no_prewrite(enum rt_sync_mode mode, uint64_t segment_bytes)
{
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    o.sync_mode = mode;
    o.segment_size_bytes = segment_bytes;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t next = 0;
    for (int i = 0; i < 80; i++)
        append_acked(e, &next);
    struct rt_stats st = stats(e);
    assert_true(st.segments_rolled >= 1);
    assert_int_equal(st.prewrite_bytes, 0);
    assert_int_equal(st.prewrite_missed_bytes, 0);
    assert_int_equal(st.segments_recycled, 0);
    int64_t start = -1;
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

static void test_no_prewrite_for_small_segments(void **state)
{
    (void)state;
    no_prewrite(RT_SYNC_ALWAYS, 512 * 1024);
    no_prewrite(RT_SYNC_NONE, 512 * 1024);
}

/* SP6: under sync=none the zeros ahead of the writer are written but never fdatasynced (they only
 * put the pages in the page cache before the writer needs them); the only fdatasyncs of the
 * pre-writer are those of the next segments' heads (PA7), one per roll at most. Every record reads
 * back, before and after a clean close, and the directory verifies clean. */
static void test_sync_none_prewrites_without_fdatasync(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    o.sync_mode = RT_SYNC_NONE;
    o.retention_bytes = -1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t next = 0;
    for (int i = 0; i < 5; i++)
        append_acked(e, &next); /* past SP5's 64 KiB */
    for (int i = 0; i < 20000 && stats(e).prewrite_bytes < 60 * 1024; i++)
        usleep(1000); /* bounded by progress, not by a clock */
    assert_true(stats(e).prewrite_bytes >= 60 * 1024);
    for (int i = 0; i < 200; i++)
        append_acked(e, &next);
    struct rt_stats st = stats(e);
    assert_true(st.segments_rolled >= 2);
    assert_true(st.prewrite_fdatasyncs <= st.segments_rolled + 1);
    int64_t start = -1;
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(start, 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after a clean close under sync=none");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* PA6, RS1: retention's file becomes the next segment; its stale batches (offsets from 0) are
 * never served, before or after a clean close; the spare does not outlive the engine. */
static void test_recycled_segment_serves_only_new_batches(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t next = build_recycled(e);
    append_acked(e, &next); /* fewer new batches than the stale ones behind them */
    int64_t start = -1;
    assert_int_equal(read_back(e, &start), next);
    /* A second deletion: the spare slot is free again (the roll took it). */
    assert_int_equal(log_enforce_retention(engine_log(e)), 0);
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    char *spare = tu_path("%s/" TOPIC "-0/recycled.log.tmp", dir);
    assert_false(fs_exists_for_test(spare));
    free(spare);
    tu_expect_verify_clean(dir, "after a clean close");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(read_back(e, &start), next);
    append_acked(e, &next);
    assert_int_equal(read_back(e, &start), next);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* The child of test_power_loss_in_recycled_segment: builds a recycled active segment over the
 * fault backend, appends `extra` acknowledged batches, loses the power during the next one's
 * write and dies there, as the machine would: no close, so nothing is trimmed or sealed.
 * Reports the acknowledged end through fd. */
static void power_loss_child(const char *dir, uint64_t seed, int fd)
{
    struct rt_options o;
    options(&o);
    struct io_fault_plan plan = {.track_unsynced = true,
                                 .track_dirs = true,
                                 .power_loss_keep_sectors = seed > 1,
                                 .power_loss_seed = seed};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
        _exit(2);
    int64_t next = try_build_recycled(e);
    if (next < 0)
        _exit(3);
    int64_t base = -1;
    for (uint64_t i = 0; i < seed % 3; i++, next += RECORDS_PER_BATCH)
        if (append_batch(e, next, &base) != 0 || base != next)
            _exit(4);
    /* The next log write lands, then the power goes before its fdatasync. */
    plan.rules[0] = (struct io_fault_rule){
        .mode = IO_FAULT_POWER_LOSS, .op = IO_OP_WRITE, .nth = plan.writes_seen + 1};
    plan.rule_count = 1;
    if (append_batch(e, next, &base) != RT_E_IO_FAILED || !plan.power_lost ||
        plan.power_loss_error != 0)
        _exit(5);
    if (write(fd, &next, sizeof(next)) != (ssize_t)sizeof(next))
        _exit(6);
    _exit(0);
}

/* RS2, RS3: the power goes while a new batch is being written into a recycled file full of stale
 * batches; with torn sectors the new batch's prefix may land before the stale bytes. Verify and
 * open agree that this is the log's end, not damage; every acknowledged batch is there, and no
 * stale one is served. */
static void test_power_loss_in_recycled_segment(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char *dir = tu_mkdtemp();
        int report_fd = -1;
        pid_t pid = tu_fork_piped(&report_fd);
        if (pid == 0)
            power_loss_child(dir, seed, report_fd);
        int64_t acked = -1;
        int status = 0;
        assert_int_equal(tu_child_report(pid, report_fd, &acked, sizeof(acked), &status),
                         sizeof(acked));
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

        /* The newest segment still holds stale batches past the new ones (nothing trimmed). */
        char *newest = NULL;
        for (int64_t b = acked; b >= 0 && !newest; b--) {
            char *p = tu_path("%s/" TOPIC "-0/%020" PRId64 ".log", dir, b);
            if (fs_exists_for_test(p))
                newest = p;
            else
                free(p);
        }
        assert_non_null(newest);
        assert_true(tu_file_size(newest) > 512 * 1024);
        free(newest);

        tu_expect_verify_clean(dir, "after the power loss");
        struct rt_options o;
        options(&o);
        rt_engine *e = NULL;
        assert_int_equal(rt_open(dir, &o, &e), 0);
        struct rt_stats st = stats(e);
        assert_true(st.opened_unclean);
        assert_int_equal(st.tail_bytes_ignored, 0); /* stale, not torn (SC5) */
        int64_t start = -1;
        assert_int_equal(read_back(e, &start), acked);
        int64_t next = acked;
        append_acked(e, &next); /* the log goes on densely */
        assert_int_equal(read_back(e, &start), next);
        assert_int_equal(rt_close(e), 0);
        tu_expect_verify_clean(dir, "after recovery");
        tu_rmdir_free(dir);
    }
}

/* RS2: a child appends into a recycled segment and reports each acknowledged offset through a
 * pipe; it is SIGKILLed mid-stream. Every acknowledged batch survives, nothing stale is served. */
static void test_sigkill_in_recycled_segment(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        char *dir = tu_mkdtemp();
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            struct rt_options o;
            options(&o);
            rt_engine *e = NULL;
            if (rt_open(dir, &o, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
                _exit(2);
            int64_t next = try_build_recycled(e);
            if (next < 0)
                _exit(5);
            for (;;) {
                int64_t base = -1;
                if (append_batch(e, next, &base) != 0 || base != next)
                    _exit(3);
                next += RECORDS_PER_BATCH;
                if (write(fds[1], &next, sizeof(next)) != (ssize_t)sizeof(next))
                    _exit(4);
            }
        }
        close(fds[1]);
        int64_t acked = 0, v = 0;
        int reports = 0;
        /* Kill after a few acknowledgements beyond the recycling (a count, not a clock). */
        while (reports < 5 + round * 7 && read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v)) {
            acked = v;
            reports++;
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        while (read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v))
            acked = v; /* acknowledged before the kill */
        close(fds[0]);
        assert_true(WIFSIGNALED(status));
        assert_true(acked > 0);

        tu_expect_verify_clean(dir, "after SIGKILL");
        struct rt_options o;
        options(&o);
        rt_engine *e = NULL;
        assert_int_equal(rt_open(dir, &o, &e), 0);
        int64_t start = -1;
        int64_t end = read_back(e, &start);
        /* Acknowledged ones are there; the page cache survives a SIGKILL, so at most the batch
         * in flight is there too. */
        assert_true(end == acked || end == acked + RECORDS_PER_BATCH);
        assert_int_equal(stats(e).tail_bytes_ignored, 0);
        assert_int_equal(rt_close(e), 0);
        tu_expect_verify_clean(dir, "after recovery");
        tu_rmdir_free(dir);
    }
}

/* ---- PA10: retention removes a run in one step ------------------------------------------ */

#define RUN_SEGMENT_BYTES (512 * 1024) /* below the pre-writer's minimum: no pool, no spare */

/* Appends until `rolls` segments were sealed; returns the next offset. */
static int64_t append_rolls(rt_engine *e, uint64_t rolls)
{
    int64_t next = 0, base = -1;
    for (;;) {
        struct rt_stats st;
        if (rt_stats_get(e, &st) != 0)
            return -1;
        if (st.segments_rolled >= rolls)
            return next;
        if (append_batch(e, next, &base) != 0 || base != next)
            return -1;
        next += RECORDS_PER_BATCH;
    }
}

static void run_options(struct rt_options *o)
{
    options(o);
    o->segment_size_bytes = RUN_SEGMENT_BYTES;
    o->retention_bytes = -1; /* only the test deletes */
}

/* PA10: deleting the sealed segments of a partition is one list change and one directory fsync,
 * whatever the run's length (before, each segment cost its own fsync); everything after the new
 * log start reads back, before and after a clean close, and the directory verifies clean. */
static void test_retention_removes_a_run_in_one_step(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    run_options(&o);
    struct io_fault_plan plan = {0}; /* counts only */
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t next = append_rolls(e, 6);
    assert_true(next > 0);
    struct partition *p = log_partition(engine_log(e), TOPIC, 0);
    assert_non_null(p);
    int64_t start = p->active->base_offset; /* no append runs: the writer's state is still */
    uint64_t fsyncs = plan.dir_fsyncs_seen;
    int n = log_delete_before(engine_log(e), p, start);
    assert_true(n >= 6);
    assert_int_equal(plan.dir_fsyncs_seen - fsyncs, 1);
    assert_int_equal(p->run_deletions, 1);
    assert_int_equal(stats(e).segments_deleted, (uint64_t)n);
    int64_t first = -1;
    assert_int_equal(read_back(e, &first), next);
    assert_int_equal(first, start);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, "after a run was deleted");
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(read_back(e, &first), next);
    assert_int_equal(first, start);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* One child of test_power_loss_in_a_run: builds 4 sealed segments over the fault backend and
 * deletes them in one run, losing the power at the run's k-th directory change (k > 0; the op
 * runs, then the power goes) or right after its directory fsync (k == 0). Reports the
 * acknowledged end and the run's first offset kept through fd. */
static void run_power_loss_child(const char *dir, int k, int fd)
{
    struct rt_options o;
    run_options(&o);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
        _exit(2);
    int64_t next = append_rolls(e, 4);
    if (next < 0)
        _exit(3);
    struct partition *p = log_partition(engine_log(e), TOPIC, 0);
    int64_t start = p->active->base_offset;
    plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS,
                                           .op = k ? IO_OP_DIR_ENTRY : IO_OP_DIR_FSYNC,
                                           .nth = k ? plan.dir_entries_seen + (uint64_t)k
                                                    : plan.dir_fsyncs_seen + 1};
    plan.rule_count = 1;
    int n = log_delete_before(engine_log(e), p, start);
    if (!plan.power_lost || plan.power_loss_error != 0 || (k > 0 && n >= 0) ||
        (k > 0 && plan.dir_entries_undone != (uint64_t)k)) {
        fprintf(stderr, "child %d: deleted %d, power lost %d (%d), %" PRIu64 " undone\n", k, n,
                plan.power_lost, plan.power_loss_error, plan.dir_entries_undone);
        _exit(4);
    }
    int64_t report[2] = {next, start};
    if (write(fd, report, sizeof(report)) != (ssize_t)sizeof(report))
        _exit(5);
    _exit(0);
}

/* PA10: the power goes during a run's deletion (at each of several of its unlinks) or right
 * after its one directory fsync. Before the fsync every unlink of the run comes back (the
 * injector's model), so the log is dense again from offset 0; after it the run is gone and the
 * log starts at the active segment. Either way every acknowledged record (sync=always) above
 * the log start reads back and the directory opens and verifies clean. */
static void test_power_loss_in_a_run(void **state)
{
    (void)state;
    static const int at[] = {1, 2, 5, 9, 0};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        char *dir = tu_mkdtemp();
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(stderr);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            run_power_loss_child(dir, at[i], fds[1]);
        }
        close(fds[1]);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        int64_t report[2] = {-1, -1};
        assert_int_equal(read(fds[0], report, sizeof(report)), (ssize_t)sizeof(report));
        close(fds[0]);
        tu_expect_verify_clean(dir, "after power loss in a run's deletion");
        struct rt_options o;
        run_options(&o);
        rt_engine *e = NULL;
        assert_int_equal(rt_open(dir, &o, &e), 0);
        int64_t first = -1;
        assert_int_equal(read_back(e, &first), report[0]); /* sync=always: all durable */
        assert_int_equal(first, at[i] ? 0 : report[1]);
        assert_int_equal(rt_close(e), 0);
        tu_rmdir_free(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prewrite_stays_ahead),
        cmocka_unit_test(test_no_prewrite_for_small_segments),
        cmocka_unit_test(test_sync_none_prewrites_without_fdatasync),
        cmocka_unit_test(test_roll_takes_the_prewritten_next_segment),
        cmocka_unit_test(test_recycled_segment_serves_only_new_batches),
        cmocka_unit_test(test_power_loss_in_recycled_segment),
        cmocka_unit_test(test_sigkill_in_recycled_segment),
        cmocka_unit_test(test_retention_removes_a_run_in_one_step),
        cmocka_unit_test(test_power_loss_in_a_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
