/*
 * test_power_rounds.c — power loss while rounds of several shards are in flight at once (issue 27
 * item 2; log.c LG14 runs two shards per core by default, so concurrent rounds are the common
 * case). The rules it holds the engine to are docs/architecture.md's "Concurrent rounds" CR2-CR4:
 * a round is acknowledged and published only after its own fdatasync, nothing of a later round
 * is ever exposed over a lost earlier one, and what survives a power loss is every acknowledged
 * record plus, per partition, a prefix of what followed, dense.
 *
 * A forked child opens the engine over the fault injector (sync=always, unsynced writes tracked,
 * rolled back whole at the power loss), PARTS partitions on PARTS shards, and runs two appender
 * threads per partition; each thread appends batches whose values name (partition, thread,
 * sequence) and keeps the sequence of its last acknowledged batch. A STALL rule holds the
 * STALL_NTH-th fdatasync of partition 0's log on its shard thread: that round's writes are in
 * the file, its fdatasync is in flight, and partition 0's other appender waits queued behind it.
 * While it is held the other shards go on, writing and syncing rounds of their own (the child
 * waits until each acknowledged OTHERS_MIN more batches, and checks that partition 0 acknowledged
 * nothing meanwhile). Then the power is lost, the stall released (the held fdatasync fails: a dead
 * machine), the threads joined, and the child reports and dies without closing.
 * The parent reopens the directory over the backend under test and checks, for every partition:
 * offsets dense from 0 to the high watermark; each thread's sequences in that partition
 * contiguous from 0 (a later batch never survives without an earlier one); each thread's last
 * acknowledged sequence present. For partition 0, nothing past its last acknowledgement before
 * the stall: the held round's bytes were never synced and the power loss took them all
 * (the injector rolls unsynced writes back whole here), so no later round can have exposed them.
 * That the power loss took something is asserted (rolled-back bytes), so the test cannot pass by
 * the injector doing nothing; so is the stall (exactly one, no timeout).
 *
 * It owns only these checks and looks at the engine only through the public API and the fault
 * plan's counters. RT_TEST_BOTH_BACKENDS: the reopen runs over io_uring and over the sync
 * fallback; the run that loses power is always on the fault backend.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/child.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC             "rounds"
#define PARTS             4
#define THREADS_PER_PART  2
#define THREADS           (PARTS * THREADS_PER_PART)
#define RECORDS_PER_BATCH 4
#define VALUE_BYTES       64
#define STALL_NTH         6 /* partition 0's sixth fdatasync: some rounds already durable */
#define OTHERS_MIN        3 /* batches each other partition acknowledges during the stall */
#define SEQ_MAX           100000

struct appender {
    rt_engine *e;
    uint32_t part, thread;
    _Atomic int64_t acked; /* sequence of the last acknowledged batch, -1 before the first */
    _Atomic bool *stop;
    int last_rc;
};

static void value_of(uint32_t part, uint32_t thread, int64_t seq, uint32_t rec, char *buf)
{
    memset(buf, '.', VALUE_BYTES);
    int n = snprintf(buf, VALUE_BYTES, "p%u-t%u-s%08" PRId64 "-r%u|", part, thread, seq, rec);
    buf[n] = '|'; /* snprintf's terminator replaced: fixed-length values */
}

static void *appender_main(void *arg)
{
    struct appender *a = arg;
    char values[RECORDS_PER_BATCH][VALUE_BYTES];
    struct rt_record recs[RECORDS_PER_BATCH];
    for (int64_t seq = 0; seq < SEQ_MAX && !atomic_load(a->stop); seq++) {
        for (uint32_t r = 0; r < RECORDS_PER_BATCH; r++) {
            value_of(a->part, a->thread, seq, r, values[r]);
            recs[r] = (struct rt_record){.key = NULL,
                                         .key_len = -1,
                                         .value = values[r],
                                         .value_len = VALUE_BYTES,
                                         .timestamp_ms = 1000000 + seq};
        }
        int rc = rt_append(a->e, TOPIC, a->part, recs, RECORDS_PER_BATCH, NULL);
        if (rc != 0) {
            a->last_rc = rc;
            break;
        }
        atomic_store(&a->acked, seq);
    }
    return NULL;
}

struct child_report {
    int64_t acked[THREADS]; /* last acknowledged sequence per thread, -1 if none */
    uint64_t rolled_back_bytes;
    uint64_t stalls, stall_timeouts;
    uint32_t others_progressed; /* 1: every other partition acknowledged OTHERS_MIN meanwhile */
    uint32_t p0_still;          /* 1: partition 0 acknowledged nothing while its sync was held */
};

static void options(struct rt_options *o)
{
    tu_options_small(o, 4 * 1024 * 1024, 32 * 1024, 4096);
    o->sync_mode = RT_SYNC_ALWAYS;
    o->shard_count = PARTS; /* one partition per shard: PARTS rounds may be in flight */
}

static int64_t sum_acked(struct appender *a, uint32_t part)
{
    int64_t s = 0;
    for (uint32_t t = 0; t < THREADS_PER_PART; t++)
        s += atomic_load(&a[part * THREADS_PER_PART + t].acked) + 1;
    return s;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void power_loss_child(const char *dir, int fd)
{
    struct rt_options o;
    options(&o);
    struct io_fault_plan plan = {.track_unsynced = true, .stall_timeout_ms = 20000};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, TOPIC, PARTS) != 0)
        _exit(2);
    struct io_fault_rule stall = {.mode = IO_FAULT_STALL,
                                  .op = IO_OP_FDATASYNC,
                                  .nth = STALL_NTH,
                                  .path_contains = "/" TOPIC "-0/"};
    if (io_fault_rule_add(&plan, &stall) != 0)
        _exit(3);
    _Atomic bool stop = false;
    struct appender a[THREADS];
    pthread_t th[THREADS];
    for (uint32_t i = 0; i < THREADS; i++) {
        a[i] = (struct appender){
            .e = e, .part = i / THREADS_PER_PART, .thread = i % THREADS_PER_PART, .stop = &stop};
        atomic_init(&a[i].acked, -1);
        if (pthread_create(&th[i], NULL, appender_main, &a[i]) != 0)
            _exit(4);
    }
    if (io_fault_stall_wait(&plan, 10000) != 0)
        _exit(5);
    /* The window: partition 0's round is written, its fdatasync held; the others go on. */
    struct child_report r = {.others_progressed = 1, .p0_still = 1};
    int64_t base[PARTS];
    for (uint32_t p = 1; p < PARTS; p++)
        base[p] = sum_acked(a, p);
    for (uint32_t p = 1; p < PARTS; p++) {
        int waited = 0;
        while (sum_acked(a, p) < base[p] + OTHERS_MIN && waited < 10000) {
            sleep_ms(5);
            waited += 5;
        }
        if (sum_acked(a, p) < base[p] + OTHERS_MIN)
            r.others_progressed = 0;
    }
    /* By now (milliseconds on) the last acknowledgement before the hold is stored: partition
     * 0 must acknowledge nothing more while its fdatasync is held. */
    int64_t p0_before = sum_acked(a, 0);
    sleep_ms(20);
    r.p0_still = sum_acked(a, 0) == p0_before;
    atomic_store(&stop, true);
    if (io_fault_power_loss(&plan) != 0)
        _exit(6);
    io_fault_stall_release(&plan);
    for (uint32_t i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (uint32_t i = 0; i < THREADS; i++)
        r.acked[i] = atomic_load(&a[i].acked);
    r.rolled_back_bytes = plan.rolled_back_bytes;
    r.stalls = plan.stalls;
    r.stall_timeouts = plan.stall_timeouts;
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(7);
    _exit(0); /* a dead machine closes nothing */
}

/* Reads partition `part` from 0 to its high watermark: offsets dense, every value well formed
 * and of this partition, each thread's sequences contiguous from 0 (RECORDS_PER_BATCH records
 * each, in order). Fills last[] with each thread's highest sequence (-1: none). */
static void read_partition(rt_engine *e, uint32_t part, int64_t last[THREADS_PER_PART])
{
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end),
                     0);
    int64_t next_seq[THREADS_PER_PART];
    uint32_t next_rec[THREADS_PER_PART];
    for (uint32_t t = 0; t < THREADS_PER_PART; t++) {
        next_seq[t] = 0;
        next_rec[t] = 0;
    }
    int64_t offset = 0;
    char want[VALUE_BYTES];
    while (offset < end) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, TOPIC, part, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
        if (rc != 0)
            fail_msg("partition %u: fetch at %" PRId64 ": %s", part, offset, rt_strerror(rc));
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        int64_t before = offset;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            if (rv.offset != offset)
                fail_msg("partition %u: record at offset %" PRId64 " where %" PRId64
                         " was due (a gap)",
                         part, rv.offset, offset);
            unsigned vp = 0, vt = 0, vr = 0;
            long long vs = -1;
            if (rv.value_len != VALUE_BYTES ||
                sscanf((const char *)rv.value, "p%u-t%u-s%lld-r%u|", &vp, &vt, &vs, &vr) != 4 ||
                vp != part || vt >= THREADS_PER_PART)
                fail_msg("partition %u offset %" PRId64 ": a value not of this partition: %.30s",
                         part, offset, (const char *)rv.value);
            value_of(vp, vt, vs, vr, want);
            if (memcmp(rv.value, want, VALUE_BYTES) != 0)
                fail_msg("partition %u offset %" PRId64 ": a damaged value", part, offset);
            if (vs != next_seq[vt] || vr != next_rec[vt])
                fail_msg("partition %u offset %" PRId64 ": thread %u's s%lld-r%u where s%" PRId64
                         "-r%u was due (a later batch without an earlier one)",
                         part, offset, vt, vs, vr, next_seq[vt], next_rec[vt]);
            if (++next_rec[vt] == RECORDS_PER_BATCH) {
                next_rec[vt] = 0;
                next_seq[vt]++;
            }
            offset++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(f);
        assert_true(offset > before);
    }
    for (uint32_t t = 0; t < THREADS_PER_PART; t++) {
        if (next_rec[t] != 0)
            fail_msg("partition %u: thread %u's batch %" PRId64 " survived in part", part, t,
                     next_seq[t]);
        last[t] = next_seq[t] - 1;
    }
}

static void power_loss_with_rounds_in_flight(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int report_fd = -1;
    pid_t pid = tu_fork_piped(&report_fd);
    if (pid == 0)
        power_loss_child(dir, report_fd);
    struct child_report r;
    int status = 0;
    size_t got = tu_child_report(pid, report_fd, &r, sizeof(r), &status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the power-loss run failed (status %d)", status);
    assert_int_equal(got, sizeof(r));
    assert_int_equal(r.stalls, 1);
    assert_int_equal(r.stall_timeouts, 0);
    /* The overlap happened: other shards' rounds completed while partition 0's was held. */
    assert_int_equal(r.others_progressed, 1);
    assert_int_equal(r.p0_still, 1);
    assert_true(r.rolled_back_bytes > 0); /* at least the held round's writes */

    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    for (uint32_t part = 0; part < PARTS; part++) {
        int64_t last[THREADS_PER_PART];
        read_partition(e, part, last);
        for (uint32_t t = 0; t < THREADS_PER_PART; t++) {
            int64_t acked = r.acked[part * THREADS_PER_PART + t];
            if (last[t] < acked)
                fail_msg("partition %u thread %u: acknowledged s%" PRId64 " lost (%" PRId64
                         " survived)",
                         part, t, acked, last[t]);
            /* Partition 0: its held round and anything queued behind it failed; what
             * survives is exactly what was acknowledged (all of it before the hold). */
            if (part == 0 && last[t] != acked)
                fail_msg("partition 0 thread %u: s%" PRId64 " survived, s%" PRId64
                         " was its last acknowledgement (the held round's bytes were never "
                         "synced)",
                         t, last[t], acked);
        }
    }
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_loss_with_rounds_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
