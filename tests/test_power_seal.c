/*
 * test_power_seal.c — a sealed segment survives power loss under every sync mode (segment.c
 * SG4, io.h io_fdatasync). A seal fdatasyncs the segment's log on whatever thread rolls or
 * closes, outside the shard's rounds; the fault injector must learn that the file became
 * durable there, or its power loss rolls back bytes a real machine had already kept. Under
 * sync=none and sync=interval (with an interval longer than the test) the seals are the only
 * fdatasyncs of the data, so these tests see exactly what they made durable: a run appends
 * across several rolls over the fault backend, loses the power and dies without closing (a
 * forked child), then the data directory is verified and reopened over the backend under test.
 * Every sealed segment must be intact and the power loss is no damage (verify exits 0 and
 * reports no problem; the newest segment's indexes past its rolled-back tail are a warning, SC7
 * in engine/log/segment_check.c, and must be seen), and every record below the
 * newest segment's base offset must be served, dense, each value naming its own offset. The
 * newest segment's unsynced records may go; that power loss did take something is asserted
 * (rolled-back bytes), so the test cannot pass by the injector doing nothing.
 *
 * It owns only these checks; it never looks inside the engine but through the public API,
 * rt_verify, the directory listing and the fault plan's counters.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback; the run
 * that loses power is always on the fault backend (the sync executor), the reopen on the backend
 * under test.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/child.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC             "seal"
#define RECORDS_PER_BATCH 16
#define VALUE_BYTES       1000
#define SEGMENTS_MIN      4 /* the child appends until this many segments exist */

static void options(struct rt_options *o, enum rt_sync_mode mode, uint64_t segment_bytes)
{
    tu_options_small(o, segment_bytes, 32 * 1024, 4096);
    o->sync_mode = mode;
    o->sync_interval_ms = 3600 * 1000; /* never within the test: only seals sync the data */
    o->sync_interval_bytes = 0;
    o->retention_bytes = -1;
}

static int append_batch(rt_engine *e, int64_t first, int64_t *base_out)
{
    return tu_append_offset_batch(e, TOPIC, first, RECORDS_PER_BATCH, VALUE_BYTES, base_out);
}

/* The segments of the partition: how many, and the newest one's base offset. */
static unsigned list_segments(const char *dir, int64_t *newest_base)
{
    char *pdir = tu_path("%s/" TOPIC "-0", dir);
    DIR *d = opendir(pdir);
    free(pdir);
    unsigned count = 0;
    *newest_base = -1;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n != 24 || strcmp(de->d_name + 20, ".log") != 0)
            continue;
        int64_t base = strtoll(de->d_name, NULL, 10);
        count++;
        if (base > *newest_base)
            *newest_base = base;
    }
    closedir(d);
    return count;
}

struct child_report {
    int64_t acked_end;           /* offset after the last acknowledged batch */
    uint64_t rolled_back_bytes;  /* what the power loss undid */
    uint64_t faults_seen_writes; /* writes the fault backend executed */
};

/* Appends over the fault backend until SEGMENTS_MIN segments exist and a few batches sit in
 * the newest, loses the power, reports, and dies without closing (nothing more is sealed). */
static void power_loss_child(const char *dir, enum rt_sync_mode mode, uint64_t segment_bytes,
                             int fd)
{
    struct rt_options o;
    options(&o, mode, segment_bytes);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
        _exit(2);
    int64_t next = 0, base = -1, newest = -1;
    while (list_segments(dir, &newest) < SEGMENTS_MIN || next < newest + 3 * RECORDS_PER_BATCH) {
        if (append_batch(e, next, &base) != 0 || base != next)
            _exit(3);
        next += RECORDS_PER_BATCH;
        if (next > 100000)
            _exit(4); /* never rolled */
    }
    if (io_fault_power_loss(&plan) != 0 || !plan.power_lost)
        _exit(5);
    struct child_report r = {.acked_end = next,
                             .rolled_back_bytes = plan.rolled_back_bytes,
                             .faults_seen_writes = plan.writes_seen};
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(6);
    _exit(0);
}

struct problems {
    unsigned count;
    char text[4096];
    /* With a newest segment set (>= 0): warnings naming that segment's .index or .timeindex
     * entries past the log's end, counted apart (below). */
    int64_t newest;
    unsigned newest_past_end;
};

/* The newest segment is the unsealed one the power cut: its log lost its unsynced tail while
 * its indexes (mmap stores, outside the injector's model: io.h) kept entries for it, as a real
 * disk may write back index pages before log pages. That is what a crash leaves (SC7 in
 * segment_check.c): verify warns, exits 0, and open drops the entries. */
static bool is_newest_past_end(const struct problems *p, const char *msg)
{
    if (p->newest < 0 || !strstr(msg, "past the log's end"))
        return false;
    char name[64];
    snprintf(name, sizeof(name), "/%020" PRId64 ".index:", p->newest);
    if (strstr(msg, name))
        return true;
    snprintf(name, sizeof(name), "/%020" PRId64 ".timeindex:", p->newest);
    return strstr(msg, name) != NULL;
}

static void on_problem(void *ctx, const char *msg)
{
    struct problems *p = ctx;
    if (strncmp(msg, "warning: ", 9) == 0) {
        p->newest_past_end += is_newest_past_end(p, msg);
        return;
    }
    size_t n = strlen(p->text);
    snprintf(p->text + n, sizeof(p->text) - n, "%s\n", msg);
    p->count++;
}

/* Every record from offset 0 to the high watermark, dense, each value naming its offset.
 * Returns the high watermark. */
static int64_t read_back(rt_engine *e)
{
    int64_t start = -1;
    int64_t end = tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, &start);
    assert_int_equal(start, 0);
    return end;
}

static void sealed_segments_survive(enum rt_sync_mode mode, uint64_t segment_bytes)
{
    char *dir = tu_mkdtemp();
    int report_fd = -1;
    pid_t pid = tu_fork_piped(&report_fd);
    if (pid == 0)
        power_loss_child(dir, mode, segment_bytes, report_fd);
    struct child_report r;
    int status = 0;
    size_t got = tu_child_report(pid, report_fd, &r, sizeof(r), &status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the power-loss run failed (status %d)", status);
    assert_int_equal(got, sizeof(r));
    /* The power loss undid something: the newest segment's unsynced appends. */
    assert_true(r.rolled_back_bytes > 0);

    int64_t newest = -1;
    unsigned segments = list_segments(dir, &newest);
    assert_true(segments >= SEGMENTS_MIN);
    assert_true(newest > 0 && newest < r.acked_end);

    /* Every sealed segment intact and the power loss no damage at all: verify names no
     * problem; the newest segment's indexes point past its rolled-back tail, a warning (SC7). */
    struct problems p = {.newest = newest};
    int rc = rt_verify(dir, on_problem, &p);
    if (rc != 0 || p.count != 0)
        fail_msg("verify after the power loss (%s, %u segments): %s\n%s",
                 mode == RT_SYNC_NONE ? "sync=none" : "sync=interval", segments, rt_strerror(rc),
                 p.text);
    assert_true(p.newest_past_end > 0); /* the case SC7 classifies did happen */

    struct rt_options o;
    options(&o, mode, segment_bytes);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    /* Every record of every sealed segment is there; at most the newest segment's are lost. */
    int64_t end = read_back(e);
    if (end < newest)
        fail_msg("only %" PRId64 " records after reopen; the sealed segments held %" PRId64, end,
                 newest);
    assert_true(end <= r.acked_end);
    int64_t base = -1;
    assert_int_equal(append_batch(e, end, &base), 0); /* the log goes on densely */
    assert_int_equal(base, end);
    assert_int_equal(rt_close(e), 0);
    p = (struct problems){.newest = -1}; /* after recovery: nothing at all */
    rc = rt_verify(dir, on_problem, &p);
    if (rc != 0 || p.count != 0)
        fail_msg("verify after recovery: %s\n%s", rt_strerror(rc), p.text);
    tu_rmdir_free(dir);
}

/* SG4 under sync=none, with the pre-writer (1 MiB segments) and without it (64 KiB). */
static void test_power_loss_keeps_sealed_segments_sync_none(void **state)
{
    (void)state;
    sealed_segments_survive(RT_SYNC_NONE, 1024 * 1024);
    sealed_segments_survive(RT_SYNC_NONE, 64 * 1024);
}

/* SG4 under sync=interval (no interval sync within the test), with and without the pre-writer. */
static void test_power_loss_keeps_sealed_segments_sync_interval(void **state)
{
    (void)state;
    sealed_segments_survive(RT_SYNC_INTERVAL, 1024 * 1024);
    sealed_segments_survive(RT_SYNC_INTERVAL, 64 * 1024);
}

/* Records of TOPIC-0 readable at `iso` whose value is `value`, counted over the whole log. */
static int64_t count_value(rt_engine *e, enum rt_isolation iso, const char *value)
{
    int64_t bound = 0, from = 0, n = 0;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, iso, &bound), 0);
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_EARLIEST, iso, &from), 0);
    while (from < bound) {
        rt_fetch *fh = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, from, 1 << 20, iso, &fh), 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        assert_int_equal(rt_records_init(&it, fh, from), 0);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0)
            n +=
                r.value_len == (int32_t)strlen(value) && memcmp(r.value, value, strlen(value)) == 0;
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(v, from); /* markers and aborted batches included */
        rt_fetch_release(fh);
        if (next <= from)
            break;
        from = next;
    }
    return n;
}

#define ABORTED_VALUE "aborted-in-segment-0"

/* The child of test_power_loss_keeps_sealed_txnindex: an aborted transaction in segment 0 (its
 * ABORT marker's .txnindex entry written by the round through io/, not synced by it), then
 * appends across rolls, then power loss. */
static void txn_power_loss_child(const char *dir, int fd)
{
    struct rt_options o;
    options(&o, RT_SYNC_NONE, 64 * 1024);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, 1) != 0)
        _exit(2);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "seal-txn";
    po.linger_ms = 1;
    rt_producer *p = NULL;
    if (rt_producer_open(e, &po, &p) != 0 || rt_producer_init_transactions(p, -1) != 0 ||
        rt_producer_begin(p) != 0)
        _exit(3);
    struct rt_producer_message m = {.record = {.key_len = -1,
                                               .value = ABORTED_VALUE,
                                               .value_len = (int32_t)strlen(ABORTED_VALUE),
                                               .timestamp_ms = -1},
                                    .sequence = -1};
    if (rt_producer_send(p, TOPIC, 0, &m, NULL, NULL) != 0 || rt_producer_abort(p, -1) != 0 ||
        rt_producer_close(p) != 0)
        _exit(4);
    int64_t next = 0, base = -1, newest = -1;
    if (rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &next) != 0 || next < 2)
        _exit(5);
    while (list_segments(dir, &newest) < SEGMENTS_MIN || next < newest + 3 * RECORDS_PER_BATCH) {
        if (append_batch(e, next, &base) != 0 || base != next)
            _exit(6);
        next += RECORDS_PER_BATCH;
        if (next > 100000)
            _exit(7);
    }
    if (io_fault_power_loss(&plan) != 0)
        _exit(8);
    struct child_report r = {.acked_end = next, .rolled_back_bytes = plan.rolled_back_bytes};
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(9);
    _exit(0);
}

/* SG4 for the .txnindex: the seal syncs the aborted-transaction index the rounds wrote, so
 * after power loss segment 0 still lists its aborted transaction: verify names nothing in it,
 * read_committed hides the aborted record and read_uncommitted still has it. */
static void test_power_loss_keeps_sealed_txnindex(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int report_fd = -1;
    pid_t pid = tu_fork_piped(&report_fd);
    if (pid == 0)
        txn_power_loss_child(dir, report_fd);
    struct child_report r;
    int status = 0;
    size_t got = tu_child_report(pid, report_fd, &r, sizeof(r), &status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the power-loss run failed (status %d)", status);
    assert_int_equal(got, sizeof(r));
    assert_true(r.rolled_back_bytes > 0);
    int64_t newest = -1;
    assert_true(list_segments(dir, &newest) >= SEGMENTS_MIN);

    struct problems p = {.newest = newest};
    int rc = rt_verify(dir, on_problem, &p);
    if (rc != 0 || p.count != 0)
        fail_msg("verify after the power loss: %s\n%s", rt_strerror(rc), p.text);

    struct rt_options o;
    options(&o, RT_SYNC_NONE, 64 * 1024);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_true(end >= newest);
    assert_int_equal(count_value(e, RT_READ_UNCOMMITTED, ABORTED_VALUE), 1);
    assert_int_equal(count_value(e, RT_READ_COMMITTED, ABORTED_VALUE), 0);
    assert_int_equal(rt_close(e), 0);
    p = (struct problems){.newest = -1};
    rc = rt_verify(dir, on_problem, &p);
    if (rc != 0 || p.count != 0)
        fail_msg("verify after recovery: %s\n%s", rt_strerror(rc), p.text);
    tu_rmdir_free(dir);
}

/* io_fdatasync outside any ring: with a plan it forgets what the file had unsynced, so power
 * loss keeps it; after the power is lost it fails with EIO; without a plan it is fdatasync. */
static void test_io_fdatasync_is_seen_by_the_injector(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    struct io_options opts = {.kind = IO_KIND_FAULT, .queue_depth = 8, .fault = &plan};
    io_ring *ring = NULL;
    assert_int_equal(io_ring_open(&opts, &ring), 0);
    char a[4096], b[4096];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    struct iovec iv = {.iov_base = a, .iov_len = sizeof(a)};
    struct io_completion c;
    assert_int_equal(io_queue_write(ring, fd, &iv, 1, 0, 1), 0);
    assert_int_equal(io_submit(ring), 0);
    assert_int_equal(io_reap(ring, &c, 1, 1), 1);
    assert_int_equal(c.result, (int64_t)sizeof(a));
    assert_int_equal(plan.unsynced_bytes, sizeof(a));
    uint64_t syncs_before = plan.fdatasyncs_seen;
    assert_int_equal(io_fdatasync(&plan, fd), 0); /* synced outside the ring's rounds */
    assert_int_equal(plan.unsynced_bytes, 0);
    assert_int_equal(plan.fdatasyncs_seen, syncs_before); /* not counted: rule numbers stay */
    iv.iov_base = b;
    assert_int_equal(io_queue_write(ring, fd, &iv, 1, sizeof(a), 2), 0);
    assert_int_equal(io_submit(ring), 0);
    assert_int_equal(io_reap(ring, &c, 1, 1), 1);
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_int_equal(plan.rolled_back_bytes, sizeof(b));
    assert_int_equal(io_fdatasync(&plan, fd), -EIO); /* a dead machine syncs nothing */
    io_ring_close(ring);
    assert_int_equal(tu_file_size(path), sizeof(a)); /* the synced write kept, the other gone */
    size_t len = 0;
    uint8_t *bytes = tu_read_file(path, &len);
    assert_int_equal(len, sizeof(a));
    assert_memory_equal(bytes, a, sizeof(a));
    free(bytes);
    assert_int_equal(io_fdatasync(NULL, fd), 0);
    assert_int_equal(io_fdatasync(NULL, -1), -EBADF);
    close(fd);
    io_fault_plan_release(&plan);
    free(path);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_io_fdatasync_is_seen_by_the_injector),
        cmocka_unit_test(test_power_loss_keeps_sealed_segments_sync_none),
        cmocka_unit_test(test_power_loss_keeps_sealed_segments_sync_interval),
        cmocka_unit_test(test_power_loss_keeps_sealed_txnindex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
