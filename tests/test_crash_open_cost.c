/*
 * test_crash_open_cost.c — what an open after a SIGKILL pays per partition (issue 21 items 7-8):
 * the recovery's fdatasync only when the open cut something or sync=always needs it (segment.c
 * SG10, partition.h PA19), the leftover next.log.tmp unlinked by the pre-writer off the open's
 * path (segment_pool.c SP9), and existing partitions opened on several threads (log.c LG15).
 *
 *   - sync=none and interval: a crash open whose newest segments hold only zeros past their
 *     logs makes no fdatasync of any log (the fault injector counts them: one per partition
 *     before SG10), marks the partitions unsynced, serves every record, closes and verifies
 *     clean;
 *   - a non-zero byte past the tail window (which the scan does not read) is still cut, and
 *     only that partition's recovery fdatasyncs;
 *   - sync=always keeps the recovery's fdatasync of a log with bytes past its durable tail;
 *   - the leftover next.log.tmp files are still there when rt_open returns while the
 *     pre-writer's unlink is held (a stall), and gone once it runs; before SP9 the open had
 *     unlinked them itself;
 *   - two partitions' opens are in their fdatasyncs at once (two stalls held together; before
 *     LG15 an engine open opened one partition at a time);
 *   - a damaged partition fails the parallel open naming its file, and the open leaves no
 *     descriptor behind.
 *
 * Run once: the opens under test go through the fault injector's backend whatever RT_TEST_IO
 * says (the crash child uses it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "partition.h"
#include "ringtail.h"
#include "ringtail_test.h"
#include "segment_pool.h"

#define TOPIC       "c"
#define PARTITIONS  4
#define VALUE_BYTES 200
#define RECORDS     10 /* per batch: about 2.3 KiB */

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Appends `batches` batches of RECORDS records to partition p; returns rt_append's first error. */
static int append_to(rt_engine *e, uint32_t p, int batches)
{
    char value[VALUE_BYTES];
    memset(value, 'v', sizeof(value));
    struct rt_record recs[RECORDS];
    for (int i = 0; i < RECORDS; i++)
        recs[i] = (struct rt_record){
            .key_len = -1, .value = value, .value_len = VALUE_BYTES, .timestamp_ms = 1000000};
    for (int b = 0; b < batches; b++) {
        int rc = rt_append(e, TOPIC, p, recs, RECORDS, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* Options: segments of segment_bytes (1 MiB and more get a pre-writer), the given sync mode. */
static void options(struct tu_fixture *f, uint64_t segment_bytes, enum rt_sync_mode sync)
{
    tu_options_small(&f->o, segment_bytes, 64u << 10, 4096);
    f->o.sync_mode = sync;
    f->o.shard_count = 2;
}

/* A topic of PARTITIONS partitions holding `batches` batches each, closed cleanly; then a child
 * opens it, appends `crash_batches` more to each, waits (wait_next) until every partition's
 * next.log.tmp head is ready (PA7) and is SIGKILLed. */
static void build_and_crash(struct tu_fixture *f, int batches, int crash_batches, bool wait_next)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, PARTITIONS), 0);
    for (uint32_t p = 0; p < PARTITIONS; p++)
        assert_int_equal(append_to(f->e, p, batches), 0);
    tu_fixture_close(f);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rt_engine *e = NULL;
        if (rt_open(f->dir, &f->o, &e) != 0)
            _exit(2);
        for (uint32_t p = 0; p < PARTITIONS; p++)
            if (append_to(e, p, crash_batches) != 0)
                _exit(3);
        for (int waited = 0; wait_next; waited += 10) {
            uint32_t ready = 0;
            for (uint32_t p = 0; p < PARTITIONS; p++) {
                struct partition *part = log_partition(engine_log(e), TOPIC, p);
                ready += atomic_load(&part->next_ready_bytes) > 0;
            }
            if (ready == PARTITIONS)
                break;
            if (waited > 20000)
                _exit(4);
            sleep_ms(10);
        }
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
        fprintf(stderr, "crash child exited %d\n", WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static char *log_of(struct tu_fixture *f, uint32_t p)
{
    return tu_path("%s/%s-%u/%020d.log", f->dir, TOPIC, p, 0);
}

static char *next_of(struct tu_fixture *f, uint32_t p)
{
    return tu_path("%s/%s-%u/%s", f->dir, TOPIC, p, SEGMENT_POOL_NEXT_NAME);
}

static void read_all(rt_engine *e, int64_t expect_each)
{
    for (uint32_t p = 0; p < PARTITIONS; p++) {
        int64_t hw = -1;
        assert_int_equal(rt_list_offsets(e, TOPIC, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                         0);
        assert_int_equal(hw, expect_each);
    }
}

struct reports {
    unsigned problems;
    char first[1024];
};

static void collect(void *ctx, const char *line)
{
    struct reports *r = ctx;
    if (strncmp(line, "warning: ", 9) == 0)
        return;
    if (r->problems++ == 0)
        snprintf(r->first, sizeof(r->first), "%s", line);
}

static void assert_verify_clean(const char *dir)
{
    struct reports r = {0};
    (void)rt_verify(dir, collect, &r);
    if (r.problems)
        fprintf(stderr, "verify: %s\n", r.first);
    assert_int_equal(r.problems, 0);
}

static rt_engine *open_with(struct tu_fixture *f, struct io_fault_plan *plan)
{
    rt_engine *e = NULL;
    int rc = rt_test_open(f->dir, &f->o, plan, &e);
    if (rc)
        fprintf(stderr, "rt_test_open: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    return e;
}

/* SG10/PA19 under sync=none or interval: nothing to cut, so no recovery fdatasync at all. */
static void crash_open_without_flush(struct tu_fixture *f, enum rt_sync_mode sync)
{
    options(f, 1u << 20, sync);
    build_and_crash(f, 20, 10, false);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    rt_engine *e = open_with(f, &plan);
    uint64_t syncs = plan.direct_fdatasyncs_seen;
    fprintf(stderr, "crash open of %d partitions (sync %d): %" PRIu64 " direct fdatasyncs\n",
            PARTITIONS, (int)sync, syncs);
    const struct partition_recovery *rec = log_recovery(engine_log(e));
    assert_true(rec->recovered);
    assert_int_equal(rec->truncated_bytes, 0);
    assert_int_equal(syncs, 0); /* one per partition before SG10 */
    for (uint32_t p = 0; p < PARTITIONS; p++) {
        struct partition *part = log_partition(engine_log(e), TOPIC, p);
        assert_true(part->active->sealed || part->unsynced); /* PA19 */
    }
    read_all(e, 30 * RECORDS);
    assert_int_equal(append_to(e, 1, 2), 0);
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    assert_verify_clean(f->dir);
    tu_fixture_open(f);
    assert_false(log_recovery(engine_log(f->e))->recovered);
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 1, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                     0);
    assert_int_equal(hw, 32 * RECORDS);
    tu_fixture_close(f);
}

static void test_crash_open_under_sync_none_flushes_nothing(void **state)
{
    crash_open_without_flush(*state, RT_SYNC_NONE);
}

static void test_crash_open_under_sync_interval_flushes_nothing(void **state)
{
    crash_open_without_flush(*state, RT_SYNC_INTERVAL);
}

/* SG10: a non-zero byte the scan's window does not reach (past the log's end + 2 MiB) is cut,
 * and that partition's recovery fdatasyncs; the others make none. */
static void test_bytes_past_the_window_are_cut(void **state)
{
    struct tu_fixture *f = *state;
    options(f, 8u << 20, RT_SYNC_NONE);
    build_and_crash(f, 20, 10, false);
    char *log = log_of(f, 2);
    uint64_t far = 6u << 20; /* the log holds ~70 KiB: far past its end plus the window */
    assert_true(tu_file_size(log) > far + 4096);
    int fd = open(log, O_WRONLY);
    assert_true(fd >= 0);
    uint8_t junk[512];
    memset(junk, 0xa5, sizeof(junk));
    assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)far), (ssize_t)sizeof(junk));
    close(fd);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    rt_engine *e = open_with(f, &plan);
    assert_int_equal(plan.direct_fdatasyncs_seen, 1); /* partition 2's cut alone */
    fd = open(log, O_RDONLY);
    assert_true(fd >= 0);
    uint8_t back[512];
    ssize_t n = pread(fd, back, sizeof(back), (off_t)far);
    close(fd);
    assert_true(n == 0 || n == (ssize_t)sizeof(back));
    for (ssize_t i = 0; i < n; i++)
        assert_int_equal(back[i], 0); /* cut: a hole again */
    read_all(e, 30 * RECORDS);
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    assert_verify_clean(f->dir);
    free(log);
}

/* SG10: under sync=always the recovery's fdatasync stays for a log with bytes past its
 * recovery point's tail (every byte an engine publishes under sync=always is durable). */
static void test_crash_open_under_sync_always_still_flushes(void **state)
{
    struct tu_fixture *f = *state;
    options(f, 1u << 20, RT_SYNC_ALWAYS);
    build_and_crash(f, 20, 10, false);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    rt_engine *e = open_with(f, &plan);
    assert_true(plan.direct_fdatasyncs_seen >= PARTITIONS);
    for (uint32_t p = 0; p < PARTITIONS; p++)
        assert_false(log_partition(engine_log(e), TOPIC, p)->unsynced);
    read_all(e, 30 * RECORDS);
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    assert_verify_clean(f->dir);
}

/* SP9: the leftover next.log.tmp files are unlinked by the pre-writer, not by the open: while
 * its unlink is held the files are there after rt_open returned; once released they go, and a
 * roll still finds a fresh head later (PA7 resumes). */
static void test_leftover_next_heads_are_unlinked_off_the_open(void **state)
{
    struct tu_fixture *f = *state;
    options(f, 1u << 20, RT_SYNC_NONE);
    build_and_crash(f, 0, 250, true); /* ~575 KiB each: past half a segment, heads pre-written */
    for (uint32_t p = 0; p < PARTITIONS; p++) {
        char *next = next_of(f, p);
        assert_true(fs_exists_for_test(next));
        free(next);
    }
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_STALL,
                                           .op = IO_OP_DIR_ENTRY,
                                           .nth = 1,
                                           .path_contains = SEGMENT_POOL_NEXT_NAME};
    plan.rule_count = 1;
    rt_engine *e = open_with(f, &plan);
    uint32_t left = 0;
    for (uint32_t p = 0; p < PARTITIONS; p++) {
        char *next = next_of(f, p);
        left += fs_exists_for_test(next);
        free(next);
    }
    assert_int_equal(left, PARTITIONS); /* before SP9 the open had unlinked every one */
    assert_int_equal(io_fault_stall_wait(&plan, 10000), 0); /* the pre-writer's first unlink */
    io_fault_stall_release(&plan);
    for (uint32_t p = 0; p < PARTITIONS; p++) {
        struct partition *part = log_partition(engine_log(e), TOPIC, p);
        for (int waited = 0; atomic_load(&part->next_leftover) && waited < 10000; waited += 10)
            sleep_ms(10);
        assert_false(atomic_load(&part->next_leftover));
        char *next = next_of(f, p);
        assert_false(fs_exists_for_test(next));
        free(next);
    }
    assert_int_equal(plan.stall_timeouts, 0);
    read_all(e, 250 * RECORDS);
    assert_int_equal(append_to(e, 0, 300), 0); /* rolls: past the 1 MiB segment */
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    assert_verify_clean(f->dir);
}

struct opener {
    struct tu_fixture *f;
    struct io_fault_plan *plan;
    rt_engine *e;
    int rc;
};

static void *open_thread(void *arg)
{
    struct opener *o = arg;
    o->rc = rt_test_open(o->f->dir, &o->f->o, o->plan, &o->e);
    return NULL;
}

/* LG15: an engine open opens its partitions on more than one thread. Each of the first two
 * recovery fdatasyncs (sync=always keeps them) is held; both are held at once only when two
 * partitions are being opened at the same time. */
static void test_partitions_open_in_parallel(void **state)
{
    struct tu_fixture *f = *state;
    options(f, 1u << 20, RT_SYNC_ALWAYS);
    build_and_crash(f, 20, 10, false);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.stall_timeout_ms = 15000;
    for (uint32_t i = 0; i < 2; i++)
        plan.rules[i] = (struct io_fault_rule){
            .mode = IO_FAULT_STALL, .op = IO_OP_FDATASYNC_DIRECT, .nth = i + 1};
    plan.rule_count = 2;
    struct opener o = {.f = f, .plan = &plan};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, open_thread, &o), 0);
    uint32_t most = 0;
    for (int waited = 0; waited < 8000 && most < 2; waited += 10) {
        uint32_t now = io_fault_stalled_now(&plan);
        most = now > most ? now : most;
        if (most < 2)
            sleep_ms(10);
    }
    io_fault_stall_release(&plan);
    assert_int_equal(pthread_join(th, NULL), 0);
    fprintf(stderr, "recovery fdatasyncs held at once: %u\n", most);
    assert_int_equal(o.rc, 0);
    assert_int_equal(most, 2); /* before LG15: 1, the second came only after the first ran */
    read_all(o.e, 30 * RECORDS);
    assert_int_equal(rt_close(o.e), 0);
    io_fault_plan_release(&plan);
}

static long fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    long n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* LG15: a partition that fails its open fails the parallel open with its file named, and every
 * partition the other threads opened is closed again: no descriptor is left. */
static void test_parallel_open_error_names_the_file(void **state)
{
    struct tu_fixture *f = *state;
    options(f, 64u << 10, RT_SYNC_NONE);
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 8), 0);
    for (uint32_t p = 0; p < 8; p++)
        assert_int_equal(append_to(f->e, p, 60), 0); /* ~140 KiB: sealed segments each */
    tu_fixture_close(f);
    sleep_ms(30); /* past the file system's clock tick: the mtime moves */
    char *log = tu_path("%s/%s-5/%020d.log", f->dir, TOPIC, 0);
    tu_flip_byte(log, 16, 0x01); /* a sealed segment's first batch magic */
    long before = fds_open();
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_CORRUPT);
    fprintf(stderr, "open failed: %s\n", rt_error_detail());
    assert_non_null(strstr(rt_error_detail(), TOPIC "-5/00000000000000000000.log"));
    assert_int_equal(fds_open(), before);
    tu_flip_byte(log, 16, 0x01);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_open_under_sync_none_flushes_nothing,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_open_under_sync_interval_flushes_nothing,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bytes_past_the_window_are_cut, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_open_under_sync_always_still_flushes,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_leftover_next_heads_are_unlinked_off_the_open,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_partitions_open_in_parallel, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_parallel_open_error_names_the_file, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
