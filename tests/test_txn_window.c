/*
 * test_txn_window.c — the one-round commit's decision window held open (coordinator.c CO9,
 * CO10; docs/format.md G.6). The power-loss sweep in test_txn.c loses power between two ops;
 * this file stalls one op of the decision round in flight (io_fault.c FI1-FI3: the PrepareCommit's
 * fdatasync, or one data partition's) and looks at the engine from outside while it waits: no
 * read_committed reader may see the transaction and rt_producer_commit may not have returned,
 * because the outcome is not decided until that fdatasync completes. Then the power is lost with
 * the op still stalled (or, in the control case, the stall is released and the commit must
 * complete), the engine is reopened on the real backend, and the transaction must be whole
 * (committed in every partition or in none), an earlier committed one intact, and nothing a
 * reader saw undone. It never asserts a time: the window is watched for a bounded while and the
 * stall itself is bounded (FI1), so a broken engine fails instead of hanging.
 * Shown to bite: with coordinator_commit_one_round's wait for the PrepareCommit moved after the
 * markers (its error still returned), test_txn.c's sweep passes and this file fails ("a
 * read_committed reader saw T1 ... before the commit was decided"); with commit_wait_data not
 * waiting for the data's acknowledgements, the data-stalled cases fail the same way.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback (the
 * live phase always runs on the fault injector; the reopen uses RT_TEST_IO's backend).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define PARTS 3

static int send_value(rt_producer *p, uint32_t part, const char *v)
{
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = -1},
        .sequence = -1};
    return rt_producer_send(p, "out", (int32_t)part, &m, NULL, NULL);
}

/* Records valued `value` that a read_committed reader of `part` gets; -1 on any error (never
 * asserts: it also runs on shard threads, and against a machine that lost power). */
static int64_t committed_count(rt_engine *e, uint32_t part, const char *value)
{
    int64_t bound = 0, from = 0, n = 0;
    if (rt_list_offsets(e, "out", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &bound) ||
        rt_list_offsets(e, "out", part, RT_OFFSET_EARLIEST, RT_READ_COMMITTED, &from))
        return -1;
    size_t len = strlen(value);
    while (from < bound) {
        rt_fetch *fh = NULL;
        if (rt_fetch_start(e, "out", part, from, 1 << 20, RT_READ_COMMITTED, &fh))
            return -1;
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, from);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0)
            n += r.value_len == (int32_t)len && memcmp(r.value, value, len) == 0;
        int64_t next = tu_fetch_next_offset(v, from); /* markers and aborted batches included */
        rt_fetch_release(fh);
        if (rc != RT_E_END || next <= from)
            return rc != RT_E_END ? -1 : n;
        from = next;
    }
    return n;
}

/* A reader hooked into every round a shard publishes (rt_append_watch_set): whether T1 was ever
 * readable at read_committed while the power was on. */
struct watch {
    rt_engine *e;
    struct io_fault_plan *plan;
    atomic_bool seen_t1;
};

static void watch_round(void *arg)
{
    struct watch *w = arg;
    for (uint32_t part = 0; part < PARTS; part++)
        if (committed_count(w->e, part, "t1") > 0 && !io_fault_power_is_lost(w->plan))
            atomic_store(&w->seen_t1, true);
}

struct committer {
    rt_producer *p;
    int rc;
    atomic_bool returned;
};

static void *commit_main(void *arg)
{
    struct committer *c = arg;
    c->rc = rt_producer_commit(c->p, -1);
    atomic_store(&c->returned, true);
    return NULL;
}

/* One case: T0 committed in every partition, then T1 over the partitions in `mask`, committed
 * with the first fdatasync of a file whose path contains `stall_path` stalled. flush_first: T1's
 * data is flushed (durable) before the commit, so the decision round is the PrepareCommit
 * alone; else the data goes out in it. power_loss: the power goes while the op is stalled; else
 * the stall is released and the commit must succeed. */
static void window_case(struct tu_fixture *f, const char *stall_path, uint32_t mask,
                        bool flush_first, bool power_loss)
{
    char what[128]; /* the case, for failure messages */
    snprintf(what, sizeof(what), "fdatasync of '%s' stalled, T1 in partitions 0x%x, data %s",
             stall_path, mask, flush_first ? "flushed first" : "in the decision round");
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.stall_timeout_ms = 5000; /* FI1: far beyond the window below; a hang fails */
    struct rt_options o = f->o;
    o.shard_count = 2; /* the partitions and __transaction_state spread over two shards */
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "out", PARTS), 0);

    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-window";
    po.transaction_timeout_ms = 60000; /* the timer never aborts T1 in the window */
    po.linger_ms = 10000;              /* the data goes out at commit, in the decision round */
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    for (uint32_t part = 0; part < PARTS; part++)
        assert_int_equal(send_value(p, part, "t0"), 0);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    for (uint32_t part = 0; part < PARTS; part++)
        if (mask & (1u << part))
            assert_int_equal(send_value(p, part, "t1"), 0);
    if (flush_first)
        assert_int_equal(rt_producer_flush(p, -1), 0);

    struct watch w = {.e = e, .plan = &plan};
    assert_int_equal(rt_append_watch_set(e, watch_round, &w), 0);
    struct io_fault_rule stall = {
        .mode = IO_FAULT_STALL, .op = IO_OP_FDATASYNC, .nth = 1, .path_contains = stall_path};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    struct committer c = {.p = p, .rc = -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, commit_main, &c), 0);
    if (io_fault_stall_wait(&plan, 5000) != 0)
        fail_msg("%s: the commit never reached that fdatasync", what);

    /* The window: the decision round is in flight. Watched for a bounded while (what a broken
     * protocol shows here, markers of an undecided commit, shows within a round or two). */
    bool returned_in_window = false;
    int64_t seen_part = -1;
    for (int i = 0; i < 40 && seen_part < 0 && !returned_in_window; i++) {
        for (uint32_t part = 0; part < PARTS; part++)
            if (committed_count(e, part, "t1") > 0)
                seen_part = part;
        if (atomic_load(&w.seen_t1) && seen_part < 0)
            seen_part = PARTS; /* seen by the round hook, partition unknown */
        returned_in_window = atomic_load(&c.returned);
        usleep(5 * 1000);
    }
    /* Checked after the outcome, so a failing case still ends the commit thread first. */
    if (power_loss)
        assert_int_equal(io_fault_power_loss(&plan), 0);
    io_fault_stall_release(&plan);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(rt_append_watch_set(e, NULL, NULL), 0);
    if (seen_part >= 0)
        fail_msg("%s (decision round in flight): a read_committed reader saw T1 (partition "
                 "%" PRId64 "%s) before the commit was decided",
                 what, seen_part, seen_part == PARTS ? ": round hook" : "");
    if (returned_in_window)
        fail_msg("%s: rt_producer_commit returned %d before the decision round was durable", what,
                 c.rc);
    assert_int_equal(plan.stalls, 1);
    assert_int_equal(plan.stall_timeouts, 0); /* FI1: the window ended by the test, not by time */

    if (!power_loss) {
        /* Released: the round completes, the commit is decided and returns, all of T1 shows. */
        assert_int_equal(c.rc, 0);
        for (uint32_t part = 0; part < PARTS; part++)
            assert_int_equal(committed_count(e, part, "t1"), (mask >> part) & 1);
        rt_producer_close(p);
        assert_int_equal(rt_close(e), 0);
        io_fault_plan_release(&plan);
        tu_fixture_open(f);
        for (uint32_t part = 0; part < PARTS; part++)
            assert_int_equal(committed_count(f->e, part, "t1"), (mask >> part) & 1);
        tu_fixture_close(f);
        return;
    }

    /* Power lost with the op stalled: it failed (FI3), so T1 must not be acknowledged (checked
     * after the reopen, which says what an acknowledgement would have cost). */
    bool acked = c.rc == 0;
    rt_producer_close(p);
    assert_int_not_equal(rt_close(e), 0); /* a dead machine seals nothing */
    assert_int_equal(plan.power_loss_error, 0);
    io_fault_plan_release(&plan);
    bool seen = atomic_load(&w.seen_t1) || seen_part >= 0; /* by the hook or the test */

    tu_fixture_open(f);
    bool settled = false;
    for (int wait = 0; wait < 100 && !settled; wait++) {
        settled = true;
        for (uint32_t part = 0; part < PARTS; part++) {
            int64_t lso = -1, hw = -1;
            assert_int_equal(
                rt_list_offsets(f->e, "out", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
            assert_int_equal(
                rt_list_offsets(f->e, "out", part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
            settled = settled && lso == hw;
        }
        if (!settled)
            usleep(20 * 1000);
    }
    if (!settled)
        fail_msg("%s, power lost: an LSO stays pinned after reopen", what);
    int64_t t0[PARTS], t1[PARTS], t1_whole = -2;
    bool whole = true;
    for (uint32_t part = 0; part < PARTS; part++) {
        t0[part] = committed_count(f->e, part, "t0");
        t1[part] = committed_count(f->e, part, "t1");
        if (t0[part] != 1)
            fail_msg("%s, power lost: acknowledged T0 reads %" PRId64 " times in partition %u",
                     what, t0[part], part);
        if (!(mask & (1u << part)))
            whole = whole && t1[part] == 0;
        else if (t1_whole == -2)
            t1_whole = t1[part];
        else
            whole = whole && t1[part] == t1_whole;
    }
    if (!whole || t1_whole < 0 || t1_whole > 1)
        fail_msg("%s, power lost: T1 reads %" PRId64 "/%" PRId64 "/%" PRId64
                 " (all-or-nothing, once)",
                 what, t1[0], t1[1], t1[2]);
    if (seen && t1_whole != 1)
        fail_msg("%s, power lost: a reader saw T1 committed, and it is undone", what);
    if (acked && t1_whole != 1)
        fail_msg("%s, power lost: T1's acknowledged commit is lost", what);
    if (acked)
        fail_msg("%s, power lost: rt_producer_commit acknowledged T1 though its decision round "
                 "never became durable",
                 what);
    tu_fixture_close(f);
}

#define ALL_PARTS ((1u << PARTS) - 1)
#define TXN_STATE "/__transaction_state-"

/* CO9(c): the PrepareCommit's fdatasync in flight decides nothing yet: with the data in the
 * same round (over every partition, and over each partition alone, so that some case has its
 * data on the shard without the PrepareCommit), and with the data durable before the commit. */
static void test_prepare_commit_stalled_then_power_loss(void **state)
{
    window_case(*state, TXN_STATE, ALL_PARTS, false, true);
    for (uint32_t part = 0; part < PARTS; part++)
        window_case(*state, TXN_STATE, 1u << part, false, true);
    window_case(*state, TXN_STATE, ALL_PARTS, true, true);
}

/* Control: the same stall released; the commit completes only then, and T1 is whole. */
static void test_prepare_commit_stalled_then_released(void **state)
{
    window_case(*state, TXN_STATE, ALL_PARTS, false, false);
    window_case(*state, TXN_STATE, ALL_PARTS, true, false);
}

/* CO9(c): each data partition's fdatasync of the decision round in flight decides nothing yet. */
static void test_data_stalled_then_power_loss(void **state)
{
    for (uint32_t part = 0; part < PARTS; part++) {
        char path[32];
        snprintf(path, sizeof(path), "/out-%u/", part);
        window_case(*state, path, ALL_PARTS, false, true);
    }
}

/* ---- the stall rule itself (io_fault.c FI1-FI3), on one fault ring over two files ---- */

struct submitter {
    io_ring *ring;
    struct io_completion done[2];
    int got;
};

static void *submit_main(void *arg)
{
    struct submitter *sb = arg;
    sb->got = io_submit(sb->ring) == 0 ? io_reap(sb->ring, sb->done, 2, 2) : -1;
    return NULL;
}

/* Writes "abcd" at 0 of fd and fdatasyncs it in one round, on another thread. */
static void round_start(struct submitter *sb, pthread_t *th, int fd)
{
    struct iovec iov = {.iov_base = "abcd", .iov_len = 4};
    assert_int_equal(io_queue_write(sb->ring, fd, &iov, 1, 0, 1), 0);
    assert_int_equal(io_queue_fdatasync(sb->ring, fd, 2), 0);
    assert_int_equal(pthread_create(th, NULL, submit_main, sb), 0);
}

static int64_t result_of(const struct submitter *sb, uint64_t user_data)
{
    for (int i = 0; i < sb->got; i++)
        if (sb->done[i].user_data == user_data)
            return sb->done[i].result;
    fail_msg("no completion for op %" PRIu64, user_data);
    return 0;
}

static void test_stall_rule(void **state)
{
    struct tu_fixture *f = *state;
    tu_system("mkdir -p '%s'", f->dir);
    char hold[512], other[512];
    snprintf(hold, sizeof(hold), "%s/hold-me.bin", f->dir);
    snprintf(other, sizeof(other), "%s/other.bin", f->dir);
    int hfd = open(hold, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int ofd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(hfd >= 0 && ofd >= 0);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.stall_timeout_ms = 5000;
    struct io_options opts = {.kind = IO_KIND_FAULT, .queue_depth = 8, .fault = &plan};
    io_ring *ring = NULL;
    assert_int_equal(io_ring_open(&opts, &ring), 0);
    struct io_fault_rule rule = {
        .mode = IO_FAULT_STALL, .op = IO_OP_FDATASYNC, .nth = 1, .path_contains = "hold-me"};
    assert_int_equal(io_fault_rule_add(&plan, &rule), 0);

    /* A file the pattern does not name is not held, nor counted by the rule. */
    struct submitter sb = {.ring = ring};
    pthread_t th;
    round_start(&sb, &th, ofd);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(sb.got, 2);
    assert_int_equal(result_of(&sb, 2), 0);
    assert_int_equal(plan.stalls, 0);
    assert_int_equal(plan.rules[0].seen, 0);

    /* FI2: held, the fdatasync has not run: the write is still unsynced; released, it runs. */
    round_start(&sb, &th, hfd);
    assert_int_equal(io_fault_stall_wait(&plan, 5000), 0);
    assert_int_equal(plan.unsynced_bytes, 4); /* ordered by io_fault_stall_wait's lock */
    io_fault_stall_release(&plan);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(result_of(&sb, 2), 0);
    assert_int_equal(plan.stalls, 1);
    assert_int_equal(plan.stall_timeouts, 0);

    /* FI1: a stall nobody releases ends by its timeout, and says so; the op then runs. */
    plan.stall_timeout_ms = 20;
    plan.rules[0].nth = 2; /* the rule's own count: hold-me's second fdatasync */
    round_start(&sb, &th, hfd);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(result_of(&sb, 2), 0);
    assert_int_equal(plan.stalls, 2);
    assert_int_equal(plan.stall_timeouts, 1);
    assert_int_equal(plan.unsynced_bytes, 0);

    /* FI3: the power goes while an fdatasync is held: it fails, and its write is undone. */
    plan.stall_timeout_ms = 5000;
    plan.rules[0].nth = 3;
    assert_int_equal(ftruncate(hfd, 0), 0); /* outside the model: counts as durable */
    round_start(&sb, &th, hfd);
    assert_int_equal(io_fault_stall_wait(&plan, 5000), 0);
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(result_of(&sb, 1), 4);
    assert_int_equal(result_of(&sb, 2), -EIO);
    assert_int_equal(plan.stall_timeouts, 1);
    struct stat st;
    assert_int_equal(fstat(hfd, &st), 0);
    assert_int_equal(st.st_size, 0);

    /* Nothing is stalled now: waiting for a stall times out instead of hanging. */
    assert_int_equal(io_fault_stall_wait(&plan, 10), -ETIMEDOUT);
    /* A full plan refuses another rule. */
    while (plan.rule_count < IO_FAULT_RULES_MAX)
        assert_int_equal(io_fault_rule_add(&plan, &rule), 0);
    assert_int_equal(io_fault_rule_add(&plan, &rule), -ENOSPC);
    io_ring_close(ring);
    io_fault_plan_release(&plan);
    close(hfd);
    close(ofd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stall_rule, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_prepare_commit_stalled_then_power_loss,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_prepare_commit_stalled_then_released, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_data_stalled_then_power_loss, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
