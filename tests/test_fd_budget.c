/*
 * test_fd_budget.c — every path that takes descriptors stays within the budget of open segments
 * under a low RLIMIT_NOFILE (issue 21 item 7 at small scale; segment_cache.h OS1-OS6, shard.c
 * SH12, partition.h PA15). Each case runs in a forked child whose descriptor limit is
 * lowered to FD_LIMIT, with the budget left to the engine (open_segments_max = 0, derived from
 * that limit, OS4), over PARTITIONS partitions, more than FD_LIMIT / 4:
 *
 *   - create them and append to each in turn, under sync=always, sync=interval and sync=none
 *     (whose partitions hold unsynced bytes between syncs): every append succeeds (OS5);
 *   - SIGKILL after appending to all (every newest segment then needs a scan), then open under the
 *     limit: the open succeeds (OS6), every acknowledged record reads back, every partition takes
 *     another append, and verify is clean;
 *   - in every case the process's descriptors stay within 4 per budgeted segment plus a small
 *     constant, and the budget leaves FD headroom below the limit (OS4).
 *
 * What it must never do: raise the test process's own limit (only the children's is lowered) or
 * depend on timing. RT_TEST_BOTH_BACKENDS: ctest runs it over io_uring and the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "helpers/child.h"
#include "helpers/proc_self.h"
#include "helpers/test_util.h"
#include "log.h"
#include "segment_cache.h"
#include "ringtail.h"

#define TOPIC      "fdb"
#define PARTITIONS 120
#define FD_LIMIT   256
/* .log, .index, .timeindex, .txnindex of an active segment. */
#define FDS_PER_SEGMENT 4
/* Descriptors of the engine's own (rings, eventfds, the lock, the pre-writer's and a snapshot's
 * transient ones) and of the test (the report pipe, stdio), beyond the segments. */
#define FDS_OTHER 48
#ifndef SEGMENT_CACHE_HEADROOM_MIN
#define SEGMENT_CACHE_HEADROOM_MIN 0 /* before OS4 */
#endif

/* Stages a child reports where it stopped (0: it did everything). */
enum { ST_DONE = 0, ST_OPEN = 1, ST_CREATE = 2, ST_APPEND = 3, ST_READ = 4, ST_CLOSE = 5 };

struct report {
    int stage;      /* where it failed, or ST_DONE */
    int rc;         /* the failing call's code */
    uint32_t index; /* the partition it failed at */
    uint32_t max;   /* the resolved budget */
    uint32_t peak;  /* the most segments counted open at once */
    long fds_most;  /* the most descriptors seen, past the ones held before the open */
    char detail[256];
};

static void lower_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        _exit(90);
    rl.rlim_cur = FD_LIMIT;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        _exit(91);
}

static void value_of(uint32_t part, int64_t offset, char *buf, size_t cap)
{
    snprintf(buf, cap, "p%u-%" PRId64, part, offset);
}

static int append_one(rt_engine *e, uint32_t part, int64_t offset)
{
    char v[32];
    value_of(part, offset, v, sizeof(v));
    struct rt_record rec = {
        .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = -1};
    int64_t base = -1;
    int rc = rt_append(e, TOPIC, part, &rec, 1, &base);
    if (rc == 0 && base != offset)
        rc = -1000;
    return rc;
}

/* 0 when records 0 .. count-1 of the partition read back with their values. */
static int read_all(rt_engine *e, uint32_t part, int64_t count)
{
    int64_t offset = 0;
    while (offset < count) {
        rt_fetch *fx = NULL;
        int rc = rt_fetch_start(e, TOPIC, part, offset, 1 << 16, RT_READ_UNCOMMITTED, &fx);
        if (rc)
            return rc;
        struct rt_records it;
        rc = rt_records_init(&it, fx, offset);
        struct rt_record_view rv;
        int64_t before = offset;
        while (rc == 0 && (rc = rt_records_next(&it, &rv)) == 0) {
            char want[32];
            value_of(part, rv.offset, want, sizeof(want));
            if (rv.offset != offset || rv.value_len != (int32_t)strlen(want) ||
                memcmp(rv.value, want, strlen(want)) != 0)
                rc = -2000;
            else
                offset++;
        }
        rt_fetch_release(fx);
        if (rc != RT_E_END)
            return rc;
        if (offset == before)
            return -3000; /* fewer records than acknowledged */
    }
    return 0;
}

static void note_fds(struct report *r, long base)
{
    long now = tu_fds_open() - base;
    if (now > r->fds_most)
        r->fds_most = now;
}

static _Noreturn void finish(int fd, struct report *r, rt_engine *e, int stage, int rc,
                             uint32_t index)
{
    r->stage = stage;
    r->rc = rc;
    r->index = index;
    if (e) {
        r->max = engine_log(e)->cache.max;
        r->peak = (uint32_t)atomic_load(&engine_log(e)->cache.peak);
    }
    if (rc)
        snprintf(r->detail, sizeof(r->detail), "%s", rt_error_detail());
    if (write(fd, r, sizeof(*r)) != (ssize_t)sizeof(*r))
        _exit(92);
    _exit(0);
}

/* In a child under FD_LIMIT: opens the engine (budget from the limit), creates the topic when
 * `create`, appends `rounds` records to every partition in turn (the first at offset `first`),
 * reads every partition back (first + rounds records each), and then closes cleanly or, when
 * `crash`, dies by SIGKILL. */
static void run_child(const char *dir, const struct rt_options *o, bool limit, bool create,
                      int64_t first, int rounds, bool crash, int fd)
{
    if (limit)
        lower_limit();
    struct report r;
    memset(&r, 0, sizeof(r));
    long base = tu_fds_open();
    rt_engine *e = NULL;
    int rc = rt_open(dir, o, &e);
    if (rc)
        finish(fd, &r, NULL, ST_OPEN, rc, 0);
    note_fds(&r, base);
    if (create && (rc = rt_topic_create(e, TOPIC, PARTITIONS)) != 0)
        finish(fd, &r, e, ST_CREATE, rc, 0);
    note_fds(&r, base);
    for (int round = 0; round < rounds; round++)
        for (uint32_t i = 0; i < PARTITIONS; i++) {
            if ((rc = append_one(e, i, first + round)) != 0)
                finish(fd, &r, e, ST_APPEND, rc, i);
            note_fds(&r, base);
        }
    for (uint32_t i = 0; i < PARTITIONS; i++)
        if ((rc = read_all(e, i, first + rounds)) != 0)
            finish(fd, &r, e, ST_READ, rc, i);
    note_fds(&r, base);
    if (crash) {
        r.max = engine_log(e)->cache.max;
        r.peak = (uint32_t)atomic_load(&engine_log(e)->cache.peak);
        if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
            _exit(92);
        raise(SIGKILL); /* no close: every newest segment is left to the next open's scan */
        _exit(93);
    }
    r.max = engine_log(e)->cache.max;
    r.peak = (uint32_t)atomic_load(&engine_log(e)->cache.peak);
    rc = rt_close(e);
    finish(fd, &r, NULL, rc ? ST_CLOSE : ST_DONE, rc, 0);
}

/* Forks run_child and returns its report (the parent's process keeps its own limit). */
static struct report child(struct tu_fixture *f, bool limit, bool create, int64_t first, int rounds,
                           bool crash)
{
    fflush(stdout);
    fflush(stderr);
    int fd = -1;
    pid_t pid = tu_fork_piped(&fd);
    if (pid == 0)
        run_child(f->dir, &f->o, limit, create, first, rounds, crash, fd);
    struct report r;
    int status = 0;
    size_t got = tu_child_report(pid, fd, &r, sizeof(r), &status);
    if (got != sizeof(r))
        fail_msg("child died: %zu bytes of report, status %d", got, status);
    if (r.stage == ST_DONE && crash)
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child died: status %d", status);
    if (r.stage != ST_DONE)
        fprintf(stderr, "child failed at stage %d, partition %u: rc %d (%s)\n", r.stage, r.index,
                r.rc, r.detail);
    fprintf(stderr, "budget %u segments under a limit of %d: peak %u open, %ld descriptors\n",
            r.max, FD_LIMIT, r.peak, r.fds_most);
    return r;
}

/* What every child must show: done, the budget below the limit with headroom (OS4), the peak
 * within the budget and one batch of wakes (OS2), descriptors within 4 per budgeted segment. */
static void assert_within_budget(const struct report *r)
{
    assert_int_equal(r->stage, ST_DONE);
    assert_true(r->max >= SEGMENT_CACHE_MIN);
    assert_true((long)r->max * FDS_PER_SEGMENT + SEGMENT_CACHE_HEADROOM_MIN <= FD_LIMIT);
    assert_true(r->peak <= r->max + r->max / 8 + 2);
    assert_true(r->fds_most <= (long)(r->max + r->max / 8 + 2) * FDS_PER_SEGMENT + FDS_OTHER);
}

static void count_problem(void *ctx, const char *line)
{
    if (strncmp(line, "warning: ", 9) != 0 && (*(unsigned *)ctx)++ == 0)
        fprintf(stderr, "verify: %s\n", line);
}

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    tu_options(&f->o); /* the defaults: the budget is derived from the limit (OS4) */
    f->o.shard_count = 2;
    f->o.partitions_max = 1024;
    return rc;
}

/* OS5: a run of first appends to many partitions under sync=always. */
static void test_appends_within_the_limit(void **state)
{
    struct tu_fixture *f = *state;
    struct report r = child(f, true, true, 0, 2, false);
    assert_within_budget(&r);
}

/* OS5: the same under sync=interval and sync=none, whose partitions hold unsynced bytes (PA15 sleeps none of
 * those) until the interval's sync: the wakes sync them first. */
static void test_appends_within_the_limit_sync_interval(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_INTERVAL;
    f->o.sync_interval_ms = 60 * 1000; /* no interval sync during the run */
    struct report r = child(f, true, true, 0, 1, false);
    assert_within_budget(&r);
    f->o.sync_mode = RT_SYNC_NONE; /* never synced but by a seal */
    r = child(f, true, false, 1, 1, false);
    assert_within_budget(&r);
}

/* OS6: a crash leaves every partition's newest segment to scan; the open under the limit scans
 * each, and lets it sleep while the budget is spent. Everything acknowledged reads back. */
static void test_crash_open_within_the_limit(void **state)
{
    struct tu_fixture *f = *state;
    /* The crashing run under the parent's own limit and a budget holding every partition, so
     * every newest segment is active (and needs its scan) at the kill. */
    struct rt_options o = f->o;
    f->o.open_segments_max = 4 * PARTITIONS;
    struct report r = child(f, false, true, 0, 1, true);
    assert_int_equal(r.stage, ST_DONE);
    f->o = o;
    r = child(f, true, false, 1, 1, false); /* open, append to all, read 2 each */
    assert_within_budget(&r);
    unsigned problems = 0;
    (void)rt_verify(f->dir, count_problem, &problems);
    assert_int_equal(problems, 0);
    /* And once more after a crash of a run under the limit itself. */
    r = child(f, true, false, 2, 1, true);
    assert_within_budget(&r);
    r = child(f, true, false, 3, 1, false);
    assert_within_budget(&r);
    (void)rt_verify(f->dir, count_problem, &problems);
    assert_int_equal(problems, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_appends_within_the_limit, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_appends_within_the_limit_sync_interval, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_open_within_the_limit, setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
