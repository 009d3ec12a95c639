/*
 * test_txn_wire_power.c — power loss at every step of wire transactions that keep their epoch
 * (coordinator.c CO7, CO12, CO13, COR8; docs/format.md G.6 W1-W4, R1, R4). It drives the wire API as
 * `ringtail serve` does for a Kafka client at EndTxn v0-v4 — rt_txn_init_producer,
 * rt_txn_add_partitions, rt_append_batch of the client's own transactional batches at (producer
 * id P, epoch E), rt_txn_add_offsets / rt_txn_commit_offsets, rt_txn_end — for three
 * consecutive transactions at the same (P, E) over three partitions on two shards:
 *   T1 commit  "a" into t-0 and t-1;
 *   T2 commit  "b" into t-0 and t-2, and group g's offset of t-1 = 10;
 *   T3 abort   "c" into t-0 and t-2, and group g's offset of t-1 = 20.
 * t-0 is touched by all three, t-1 by the first only. The fault injector loses power at the
 * n-th write, then at the n-th fdatasync, for every n the scenario reaches (and with torn
 * sectors, a random whole-sector prefix of each unsynced write kept, over a few seeds). After
 * each loss the directory is reopened on the real backend and checked from outside:
 *   - an rt_txn_end that returned 0 is never undone (T1, T2 visible; T3 never);
 *   - each transaction is all-or-nothing across its partitions and its offsets, and its records
 *     are seen once at most;
 *   - a read_committed reader never saw something later undone (a watch runs after every round
 *     the live engine published, while the power is on);
 *   - no LSO is pinned but by a transaction that is still Ongoing (durable AddPartitionsToTxn,
 *     CO12) and the reopen's second open appends nothing anywhere (every log end is unchanged);
 *   - an EndTxn retried after the reopen, as a client retries one that failed, answers 0 only if
 *     its transaction is then committed (commit) or aborted (abort): never a false success.
 * Beside the sweep, without the injector: a lazy marker cut off a closed directory, beside the
 * next transaction at the same (P, E) and under it (COR8 before COR1); a failed data fdatasync in
 * EndTxn's round makes the write side fail (sticky), so its retry cannot answer success.
 * test_end_decision_window holds the decision round open (IO_FAULT_STALL on the decision
 * record's fdatasync, or under sync=none on a data partition's) and watches from outside: no
 * read_committed reader sees the transaction and rt_txn_end has not returned; then the power
 * goes with the op held (or, the control, the stall is released).
 * Shown to bite, each with the engine broken on purpose: decision_find_kept matching a record by
 * (P, E, partition) without the first offset ("newest record wins"): "T2 seen 2/0 times in
 * t-0/t-2" and "T2's acknowledged commit is undone"; COR8 applied only after COR1 left nothing
 * live: "T1 seen 0/2 times in t-0/t-1"; the markers written before the decision round: "a
 * reader saw T1 committed, and it is undone" and, in the window, "a read_committed reader saw T2
 * before its decision round was durable"; the decision round without the data's fdatasync
 * (sync=none): "T1's acknowledged commit is undone"; no fence of a durable Ongoing at open under
 * sync=none (CO13): "T1's retried EndTxn(commit) answered 0, and it is aborted".
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback (the
 * live phase always runs on the fault injector; the reopen uses RT_TEST_IO's backend). Under
 * RT_TEST_SWEEP_STRIDE s (the sanitizer stages) the two backends sweep every 2s-th op from
 * different starts, together every s-th op (tu_sweep_first/step).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define ID      "wire"
#define PARTS   3
#define TXNS    3
#define RECORDS 2 /* per batch */

/* The scenario: which partitions each transaction writes, its tag, its outcome. */
static const char *const TAG[TXNS] = {"a", "b", "c"};
static const bool COMMIT[TXNS] = {true, true, false};
static const uint32_t PART_OF[TXNS][2] = {{0, 1}, {0, 2}, {0, 2}};
static const int64_t OFFSET_OF[TXNS] = {-1, 10, 20}; /* group g's offset of t-1 (-1: none) */

struct outcome {
    int end_rc[TXNS];   /* rt_txn_end's answer; 1 = never reached */
    bool failed_before; /* a step before some transaction's end failed */
    int64_t pid;
    int16_t epoch;
};

static size_t txn_batch(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq,
                        const char *tag)
{
    return tu_batch(buf, cap, BATCH_ATTR_TRANSACTIONAL, pid, epoch, seq, RECORDS, tag,
                    TU_BATCH_UNNUMBERED, 1000);
}

/* Runs T1..T3 until a step fails (the machine died), as a client that stops there. */
static void scenario(rt_engine *e, struct outcome *out)
{
    for (int t = 0; t < TXNS; t++)
        out->end_rc[t] = 1;
    if (rt_txn_init_producer(e, ID, 60000, &out->pid, &out->epoch) != 0) {
        out->failed_before = true;
        return;
    }
    int32_t seq[PARTS] = {0};
    for (int t = 0; t < TXNS; t++) {
        struct rt_topic_partition tp[2] = {{"t", PART_OF[t][0]}, {"t", PART_OF[t][1]}};
        int rc = rt_txn_add_partitions(e, ID, out->pid, out->epoch, tp, 2);
        for (int k = 0; rc == 0 && k < 2; k++) {
            uint8_t buf[1024];
            uint32_t part = PART_OF[t][k];
            size_t len = txn_batch(buf, sizeof(buf), out->pid, out->epoch, seq[part], TAG[t]);
            int64_t base = -1;
            rc = rt_append_batch(e, "t", part, buf, len, &base);
            seq[part] += RECORDS;
        }
        if (rc == 0 && OFFSET_OF[t] >= 0) {
            rc = rt_txn_add_offsets(e, ID, out->pid, out->epoch, "g");
            struct rt_offset off = {.topic = "t", .partition = 1, .offset = OFFSET_OF[t]};
            if (rc == 0)
                rc = rt_txn_commit_offsets(e, ID, out->pid, out->epoch, "g", &off, 1);
        }
        if (rc) {
            out->failed_before = true;
            return;
        }
        out->end_rc[t] = rt_txn_end(e, ID, out->pid, out->epoch, COMMIT[t]);
        if (out->end_rc[t])
            return;
    }
}

/* Records tagged `tag` a read_committed reader sees in t-part from offset 0 (-1 on an error:
 * a dead machine's pages). */
static int64_t visible(rt_engine *e, uint32_t part, const char *tag)
{
    rt_fetch *fh = NULL;
    if (rt_fetch_start(e, "t", part, 0, 1 << 20, RT_READ_COMMITTED, &fh))
        return -1;
    struct rt_records it;
    struct rt_record_view r;
    rt_records_init(&it, fh, 0);
    int64_t n = 0;
    int rc;
    while ((rc = rt_records_next(&it, &r)) == 0)
        n += r.value_len == 1 && r.value[0] == tag[0];
    rt_fetch_release(fh);
    return rc == RT_E_END ? n : -1;
}

/* A reader beside the live engine: what read_committed showed while the power was on. */
struct watch {
    rt_engine *e;
    struct io_fault_plan *plan;
    atomic_bool seen[TXNS];
};

static void watch_round(void *arg)
{
    struct watch *w = arg;
    for (int t = 0; t < TXNS; t++)
        for (int k = 0; k < 2; k++)
            if (visible(w->e, PART_OF[t][k], TAG[t]) > 0 && !io_fault_power_is_lost(w->plan))
                atomic_store(&w->seen[t], true);
}

struct sweep_stats {
    int cases;
    int acked[TXNS];
    int committed_at_reopen; /* an end that failed, committed by R1 */
    int retried_ok;
    int left_ongoing; /* a durable Ongoing found live at the reopen */
};

static int64_t log_end(rt_engine *e, const char *topic, uint32_t part)
{
    int64_t o = -1;
    int rc = rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &o);
    if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
        return -1; /* not created before the power went */
    assert_int_equal(rc, 0);
    return o;
}

/* Every log end of the directory that open could append to. */
#define ENDS (PARTS + 1 + 4)
static void log_ends(rt_engine *e, int64_t *ends)
{
    for (uint32_t p = 0; p < PARTS; p++)
        ends[p] = log_end(e, "t", p);
    ends[PARTS] = log_end(e, "__transaction_state", 0);
    for (uint32_t p = 0; p < 4; p++)
        ends[PARTS + 1 + p] = log_end(e, "__consumer_offsets", p);
}

static bool lso_settled(rt_engine *e)
{
    for (uint32_t p = 0; p < PARTS; p++) {
        int64_t lso = -1;
        assert_int_equal(rt_list_offsets(e, "t", p, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
        if (lso != log_end(e, "t", p))
            return false;
    }
    return true;
}

/* Whether T is whole: committed (1) in both partitions, in none (0); fails otherwise. */
static int whole(rt_engine *e, int t, const char *where)
{
    int64_t n0 = visible(e, PART_OF[t][0], TAG[t]), n1 = visible(e, PART_OF[t][1], TAG[t]);
    if (n0 != n1 || (n0 != 0 && n0 != RECORDS))
        fail_msg("%s: T%d seen %" PRId64 "/%" PRId64 " times in t-%u/t-%u (all-or-nothing, once)",
                 where, t + 1, n0, n1, PART_OF[t][0], PART_OF[t][1]);
    return n0 == RECORDS;
}

/* Group g's committed offset of t-1 must follow T2 (10) and never show T3's (20). */
static void offsets_follow(rt_engine *e, const bool *committed, const char *where)
{
    int64_t off = -2;
    int rc = rt_group_fetch_offsets(e, "g", "t", 1, false, &off);
    if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION || rc == RT_E_INVALID_ARGUMENT)
        off = -1; /* no group state at all */
    else
        assert_int_equal(rc, 0);
    int64_t want = committed[1] ? 10 : -1;
    if (off != want)
        fail_msg("%s: group offset %" PRId64 ", want %" PRId64 " (T2 %s, T3 aborted)", where, off,
                 want, committed[1] ? "committed" : "not committed");
}

static void power_case(struct tu_fixture *f, enum rt_sync_mode sync, enum io_op_type op,
                       uint64_t nth, uint64_t seed, struct sweep_stats *st, uint64_t *writes_out,
                       uint64_t *syncs_out)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.power_loss_keep_sectors = seed != 0;
    plan.power_loss_seed = seed;
    if (nth) {
        plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS, .op = op, .nth = nth};
        plan.rule_count = 1;
    }
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = sync;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    struct outcome out = {.pid = -1};
    struct watch w = {.e = e, .plan = &plan};
    bool made = rt_topic_create(e, "t", PARTS) == 0;
    if (made) {
        assert_int_equal(rt_append_watch_set(e, watch_round, &w), 0);
        scenario(e, &out);
    } else {
        for (int t = 0; t < TXNS; t++)
            out.end_rc[t] = 1;
    }
    usleep(10 * 1000); /* let the lazy markers and Complete* land (or not) */
    assert_int_equal(io_fault_power_loss(&plan), 0); /* no-op when a rule already fired */
    if (made)
        assert_int_equal(rt_append_watch_set(e, NULL, NULL), 0);
    assert_int_equal(plan.power_loss_error, 0);
    if (writes_out)
        *writes_out = plan.writes_seen;
    if (syncs_out)
        *syncs_out = plan.fdatasyncs_seen;
    assert_int_not_equal(rt_close(e), 0); /* a dead machine: the close fails */
    io_fault_plan_release(&plan);
    st->cases++;
    for (int t = 0; t < TXNS; t++)
        st->acked[t] += out.end_rc[t] == 0;

    char where[96];
    snprintf(where, sizeof(where), "sync=%s, power loss at %s #%" PRIu64 " (torn seed %" PRIu64 ")",
             sync == RT_SYNC_ALWAYS ? "always" : "none", op == IO_OP_WRITE ? "write" : "fdatasync",
             nth, seed);
    f->o.sync_mode = sync;
    tu_fixture_open(f);
    uint32_t parts = 0;
    if (rt_topic_describe(f->e, "t", &parts) != 0) {
        tu_fixture_close(f);
        return;
    }
    /* What the reopen decided; then a second open, which must append nothing (its log ends,
     * read once its asynchronous Complete* records landed: at the third open, are the same as
     * the first open left them: read at the second). */
    bool committed[TXNS];
    for (int t = 0; t < TXNS; t++)
        committed[t] = whole(f->e, t, where);
    tu_fixture_close(f);
    tu_fixture_open(f);
    int64_t ends[ENDS], again[ENDS];
    log_ends(f->e, ends);
    tu_fixture_close(f);
    tu_fixture_open(f);
    log_ends(f->e, again);
    for (int i = 0; i < ENDS; i++)
        if (ends[i] != again[i])
            fail_msg("%s: the second open appended (log end %d: %" PRId64 " -> %" PRId64 ")", where,
                     i, ends[i], again[i]);
    for (int t = 0; t < TXNS; t++) {
        if (whole(f->e, t, where) != committed[t])
            fail_msg("%s: T%d changed at the second open", where, t + 1);
        if (out.end_rc[t] == 0 && committed[t] != COMMIT[t])
            fail_msg("%s: T%d's acknowledged %s is undone", where, t + 1,
                     COMMIT[t] ? "commit" : "abort");
        if (!COMMIT[t] && committed[t])
            fail_msg("%s: T%d was aborted and is readable", where, t + 1);
        if (atomic_load(&w.seen[t]) && !committed[t])
            fail_msg("%s: a reader saw T%d committed, and it is undone", where, t + 1);
        if (out.end_rc[t] != 0 && out.end_rc[t] != 1 && committed[t])
            st->committed_at_reopen++;
    }
    offsets_follow(f->e, committed, where);
    /* A client retries the EndTxn that failed: 0 only for the outcome it asked. */
    for (int t = 0; t < TXNS; t++) {
        if (out.end_rc[t] == 0 || out.end_rc[t] == 1)
            continue;
        int rc = rt_txn_end(f->e, ID, out.pid, out.epoch, COMMIT[t]);
        if (rc == 0) {
            st->retried_ok++;
            bool now = whole(f->e, t, where);
            if (now != COMMIT[t])
                fail_msg("%s: T%d's retried EndTxn(%s) answered 0, and it is %s", where, t + 1,
                         COMMIT[t] ? "commit" : "abort", now ? "committed" : "aborted");
            committed[t] = now;
        }
    }
    /* Whatever is still open is a durable Ongoing (COR1): the operator releases it. */
    if (!lso_settled(f->e)) {
        st->left_ongoing++;
        assert_int_equal(rt_txn_abort(f->e, ID), 0);
        if (!lso_settled(f->e))
            fail_msg("%s: an LSO stays pinned after the open transaction was aborted", where);
    }
    for (int t = 0; t < TXNS; t++)
        if (whole(f->e, t, where) != committed[t])
            fail_msg("%s: T%d changed when the open transaction was released", where, t + 1);
    offsets_follow(f->e, committed, where);
    tu_fixture_close(f);
}

/* Power lost at op n of the kind, for n = 1 .. count + 1 (count + 1: past the last one). Every op
 * in the Release stage; under the sanitizers' stride the two backends split the ops between them
 * (tu_sweep_first/step: memory and thread errors are looked for on the same paths, each op's power
 * loss checked once per stage), and count + 1 always runs, so each backend still reaches the phase
 * after the last end. */
static void sweep_ops(struct tu_fixture *f, enum rt_sync_mode sync, enum io_op_type op,
                      uint64_t count, uint64_t seed, struct sweep_stats *st)
{
    uint64_t nth = tu_sweep_first();
    for (; nth <= count + 1; nth += tu_sweep_step())
        power_case(f, sync, op, nth, seed, st, NULL, NULL);
    if (nth - tu_sweep_step() != count + 1)
        power_case(f, sync, op, count + 1, seed, st, NULL, NULL);
}

static void sweep(struct tu_fixture *f, enum rt_sync_mode sync, uint64_t seed, bool syncs_too)
{
    struct sweep_stats st = {0};
    uint64_t writes = 0, syncs = 0;
    power_case(f, sync, IO_OP_WRITE, 0, seed, &st, &writes, &syncs); /* past the end */
    for (int t = 0; t < TXNS; t++)
        assert_int_equal(st.acked[t], 1);
    sweep_ops(f, sync, IO_OP_WRITE, writes, seed, &st);
    if (syncs_too)
        sweep_ops(f, sync, IO_OP_FDATASYNC, syncs, seed, &st);
    fprintf(stderr,
            "wire power loss, sync=%s, torn seed %" PRIu64 ": %" PRIu64 " writes, %" PRIu64
            " fdatasyncs (%s), %d cases; acknowledged T1 %d, T2 %d, T3 %d; %d committed at "
            "reopen after a failed end, %d retried ends answered 0, %d left Ongoing\n",
            sync == RT_SYNC_ALWAYS ? "always" : "none", seed, writes, syncs,
            syncs_too ? "both swept" : "writes swept", st.cases, st.acked[0], st.acked[1],
            st.acked[2], st.committed_at_reopen, st.retried_ok, st.left_ongoing);
    /* The sweep reaches every phase: ends acknowledged and not, and (sync=always: CO13) a
     * durable Ongoing left live by the reopen. */
    assert_true(st.acked[2] > 1);
    assert_true(st.acked[0] < st.cases);
    if (sync == RT_SYNC_ALWAYS)
        assert_true(st.left_ongoing > 0);
    else
        assert_int_equal(st.left_ongoing, 0);
}

/* sync=always: every acknowledged produce is durable; a durable Ongoing survives the reopen. */
static void test_power_loss_at_every_step(void **state)
{
    sweep(*state, RT_SYNC_ALWAYS, 0, true);
}

/* sync=none: produces are acknowledged from the page cache, so the decision round itself must
 * make the data durable (CO12), and an Ongoing found at the reopen is fenced (CO13). */
static void test_power_loss_sync_none(void **state)
{
    sweep(*state, RT_SYNC_NONE, 0, true);
}

static void test_power_loss_torn_sectors(void **state)
{
    for (uint64_t seed = 1; seed <= 3; seed++)
        sweep(*state, RT_SYNC_ALWAYS, seed, seed == 1);
    for (uint64_t seed = 4; seed <= 5; seed++)
        sweep(*state, RT_SYNC_NONE, seed, seed == 4);
}

/* ---- the decision window held open (as test_txn_window.c does for rt_producer_commit) ---- */

struct ender {
    rt_engine *e;
    int64_t pid;
    int16_t epoch;
    int rc;
    atomic_bool returned;
};

static void *end_main(void *arg)
{
    struct ender *x = arg;
    x->rc = rt_txn_end(x->e, ID, x->pid, x->epoch, true);
    atomic_store(&x->returned, true);
    return NULL;
}

/* T1 committed over the wire, then T2 ("b" into t-0 and t-2) ended with commit while the first
 * fdatasync of a file whose path holds `stall_path` is stalled: until it completes no
 * read_committed reader may see T2 and rt_txn_end may not return (CO12(d)). Then the power goes
 * with the op held (or, power_loss false, the stall is released and the end must succeed), and
 * after the reopen T1 is intact and T2 whole, committed if a reader saw it, never acknowledged. */
static void window_case(struct tu_fixture *f, enum rt_sync_mode sync, const char *stall_path,
                        bool power_loss)
{
    char what[128];
    snprintf(what, sizeof(what), "sync=%s, fdatasync of '%s' stalled in T2's EndTxn",
             sync == RT_SYNC_ALWAYS ? "always" : "none", stall_path);
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.stall_timeout_ms = 5000; /* far beyond the window below; a hang fails (FI1) */
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = sync;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", PARTS), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, ID, 60000, &pid, &epoch), 0);
    int32_t seq[PARTS] = {0};
    for (int t = 0; t < 2; t++) {
        struct rt_topic_partition tp[2] = {{"t", PART_OF[t][0]}, {"t", PART_OF[t][1]}};
        assert_int_equal(rt_txn_add_partitions(e, ID, pid, epoch, tp, 2), 0);
        for (int k = 0; k < 2; k++) {
            uint8_t buf[1024];
            uint32_t part = PART_OF[t][k];
            size_t len = txn_batch(buf, sizeof(buf), pid, epoch, seq[part], TAG[t]);
            int64_t base = -1;
            assert_int_equal(rt_append_batch(e, "t", part, buf, len, &base), 0);
            seq[part] += RECORDS;
        }
        if (t == 0)
            assert_int_equal(rt_txn_end(e, ID, pid, epoch, true), 0);
    }
    struct watch w = {.e = e, .plan = &plan};
    assert_int_equal(rt_append_watch_set(e, watch_round, &w), 0);
    struct io_fault_rule stall = {
        .mode = IO_FAULT_STALL, .op = IO_OP_FDATASYNC, .nth = 1, .path_contains = stall_path};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    struct ender x = {.e = e, .pid = pid, .epoch = epoch, .rc = -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, end_main, &x), 0);
    if (io_fault_stall_wait(&plan, 5000) != 0)
        fail_msg("%s: EndTxn never reached that fdatasync", what);
    bool seen_in_window = false, returned_in_window = false;
    for (int i = 0; i < 40 && !seen_in_window && !returned_in_window; i++) {
        seen_in_window =
            visible(e, 0, "b") > 0 || visible(e, 2, "b") > 0 || atomic_load(&w.seen[1]);
        returned_in_window = atomic_load(&x.returned);
        usleep(5 * 1000);
    }
    if (power_loss)
        assert_int_equal(io_fault_power_loss(&plan), 0);
    io_fault_stall_release(&plan);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(rt_append_watch_set(e, NULL, NULL), 0);
    if (seen_in_window)
        fail_msg("%s: a read_committed reader saw T2 before its decision round was durable", what);
    if (returned_in_window)
        fail_msg("%s: rt_txn_end returned %d before its decision round was durable", what, x.rc);
    assert_int_equal(plan.stalls, 1);
    assert_int_equal(plan.stall_timeouts, 0);
    if (!power_loss) {
        assert_int_equal(x.rc, 0);
        assert_int_equal(visible(e, 0, "b"), RECORDS);
        assert_int_equal(visible(e, 2, "b"), RECORDS);
        assert_int_equal(rt_close(e), 0);
        io_fault_plan_release(&plan);
        f->o.sync_mode = sync;
        tu_fixture_open(f);
        assert_true(whole(f->e, 0, what));
        assert_true(whole(f->e, 1, what));
        tu_fixture_close(f);
        return;
    }
    bool acked = x.rc == 0, seen = atomic_load(&w.seen[1]);
    assert_int_not_equal(rt_close(e), 0);
    assert_int_equal(plan.power_loss_error, 0);
    io_fault_plan_release(&plan);
    f->o.sync_mode = sync;
    tu_fixture_open(f);
    if (!whole(f->e, 0, what))
        fail_msg("%s, power lost: T1's acknowledged commit is lost", what);
    bool t2 = whole(f->e, 1, what);
    if (seen && !t2)
        fail_msg("%s, power lost: a reader saw T2 committed, and it is undone", what);
    if (acked)
        fail_msg("%s, power lost: rt_txn_end acknowledged T2 though its decision round never "
                 "became durable",
                 what);
    tu_fixture_close(f);
}

/* ---- COR8 pinned without the injector: markers cut off with the directory closed ---- */

/* With the directory closed: truncates dir/t-<part>'s newest .log at its first control batch
 * (that marker and everything after it lost, as a torn tail leaves them) and removes the
 * clean-shutdown file. */
static void cut_at_first_marker(const char *dir, uint32_t part)
{
    char *pdir = tu_path("%s/t-%u", dir, part);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    char best[256] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n == 24 && strcmp(de->d_name + 20, ".log") == 0 && strcmp(de->d_name, best) > 0)
            snprintf(best, sizeof(best), "%s", de->d_name);
    }
    closedir(d);
    assert_true(best[0] != '\0');
    char *log = tu_path("%s/%s", pdir, best);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(log, &len);
    size_t pos = 0, cut = len;
    while (pos + 61 <= len && be32_of(bytes + pos + 8) != 0 && cut == len) {
        if (bytes[pos + 22] & 0x20)
            cut = pos;
        pos += 12 + be32_of(bytes + pos + 8);
    }
    assert_true(cut < len);
    free(bytes);
    tu_truncate(log, cut);
    free(log);
    free(pdir);
    char *clean = tu_path("%s/.clean_shutdown", dir);
    unlink(clean);
    free(clean);
}

/* T1 committed into t-0 and t-1, then T2 Ongoing at the same (P, E) with data in t-0 and t-2;
 * the directory closed. */
static void two_at_one_epoch(struct tu_fixture *f, int64_t *pid, int16_t *epoch)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", PARTS), 0);
    assert_int_equal(rt_txn_init_producer(f->e, ID, 60000, pid, epoch), 0);
    int32_t seq[PARTS] = {0};
    for (int t = 0; t < 2; t++) {
        struct rt_topic_partition tp[2] = {{"t", PART_OF[t][0]}, {"t", PART_OF[t][1]}};
        assert_int_equal(rt_txn_add_partitions(f->e, ID, *pid, *epoch, tp, 2), 0);
        for (int k = 0; k < 2; k++) {
            uint8_t buf[1024];
            uint32_t part = PART_OF[t][k];
            size_t len = txn_batch(buf, sizeof(buf), *pid, *epoch, seq[part], TAG[t]);
            int64_t base = -1;
            assert_int_equal(rt_append_batch(f->e, "t", part, buf, len, &base), 0);
            seq[part] += RECORDS;
        }
        if (t == 0)
            assert_int_equal(rt_txn_end(f->e, ID, *pid, *epoch, true), 0);
    }
    tu_fixture_close(f);
}

/* COR8: T1's lazy marker lost in t-1 (which T2 does not touch) while T2 is Ongoing at the same
 * (P, E): the open finds T1 open in t-1 with first offset 0, and T1's 0x7203 record naming
 * (t-1, 0) commits it; T2 stays live (COR1, sync=always) and commits afterwards. Under the
 * rules for 0x7201 records (G.5: the id is Ongoing, not Complete* at E + 1) it was aborted. */
static void test_lost_marker_beside_next_transaction(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid = -1;
    int16_t epoch = -1;
    two_at_one_epoch(f, &pid, &epoch);
    cut_at_first_marker(f->dir, 1);
    tu_fixture_open(f);
    assert_true(whole(f->e, 0, "T1's marker lost in t-1"));
    assert_false(whole(f->e, 1, "T1's marker lost in t-1"));
    assert_true(lso_settled(f->e) == false); /* T2 is open in t-0 and t-2 */
    assert_int_equal(rt_txn_end(f->e, ID, pid, epoch, true), 0);
    assert_true(whole(f->e, 1, "T2 committed after the reopen"));
    assert_true(lso_settled(f->e));
    tu_fixture_close(f);
    tu_fixture_open(f); /* the markers the open wrote are durable */
    assert_true(whole(f->e, 0, "second open"));
    assert_true(whole(f->e, 1, "second open"));
    tu_fixture_close(f);
}

/* COR8 before COR1: under sync=none T1's marker in t-0 is lost with T2's data after it (a power
 * loss before T2's end), so t-0 holds T1 open at (P, E) while the id is Ongoing at E listing
 * t-0. T1's record naming (t-0, its first offset) commits it there; T2 is fenced and aborted
 * (CO13). Were T1's data left to the Ongoing T2 (COR1), the fence's ABORT would undo T1 in t-0. */
static void test_lost_marker_under_next_transaction(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_NONE;
    int64_t pid = -1;
    int16_t epoch = -1;
    two_at_one_epoch(f, &pid, &epoch);
    cut_at_first_marker(f->dir, 0);
    tu_fixture_open(f);
    assert_true(whole(f->e, 0, "T1's marker and T2's data lost in t-0"));
    assert_false(whole(f->e, 1, "T1's marker and T2's data lost in t-0"));
    assert_true(lso_settled(f->e));
    assert_int_equal(rt_txn_end(f->e, ID, pid, epoch, true), RT_E_PRODUCER_FENCED);
    tu_fixture_close(f);
}

/* CO12(c, d): under sync=none the data's fdatasync in EndTxn's round fails (EIO, once): EndTxn
 * fails, the engine's write side fails with it (sticky: the bytes may be lost, so neither a
 * retried EndTxn nor anything else may answer success), and the reopen finds T2 whole. */
static void test_end_data_sync_fails(void **state)
{
    struct tu_fixture *f = *state;
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", PARTS), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, ID, 60000, &pid, &epoch), 0);
    int32_t seq[PARTS] = {0};
    for (int t = 0; t < 2; t++) {
        struct rt_topic_partition tp[2] = {{"t", PART_OF[t][0]}, {"t", PART_OF[t][1]}};
        assert_int_equal(rt_txn_add_partitions(e, ID, pid, epoch, tp, 2), 0);
        for (int k = 0; k < 2; k++) {
            uint8_t buf[1024];
            uint32_t part = PART_OF[t][k];
            size_t len = txn_batch(buf, sizeof(buf), pid, epoch, seq[part], TAG[t]);
            int64_t base = -1;
            assert_int_equal(rt_append_batch(e, "t", part, buf, len, &base), 0);
            seq[part] += RECORDS;
        }
        if (t == 0)
            assert_int_equal(rt_txn_end(e, ID, pid, epoch, true), 0);
    }
    struct io_fault_rule fail = {.mode = IO_FAULT_ONCE,
                                 .op = IO_OP_FDATASYNC,
                                 .nth = 1,
                                 .error = EIO,
                                 .path_contains = "/t-2/"};
    assert_int_equal(io_fault_rule_add(&plan, &fail), 0);
    assert_int_not_equal(rt_txn_end(e, ID, pid, epoch, true), 0);
    assert_int_equal(plan.faults_injected, 1);
    assert_int_equal(visible(e, 0, "b"), 0); /* no marker of an undecided commit */
    assert_int_equal(visible(e, 2, "b"), 0);
    assert_int_not_equal(rt_txn_end(e, ID, pid, epoch, true), 0); /* sticky */
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    int64_t base = -1;
    assert_int_not_equal(rt_append(e, "t", 1, &r, 1, &base), 0);
    (void)rt_close(e);
    io_fault_plan_release(&plan);
    tu_fixture_open(f);
    assert_true(whole(f->e, 0, "data sync failed"));
    (void)whole(f->e, 1, "data sync failed"); /* either outcome, but whole */
    tu_fixture_close(f);
}

/* CO12(d): the decision record's fdatasync in flight decides nothing yet; under sync=none the
 * data's own fdatasync in the round (t-0's, t-2's) neither. Control: the same stall released. */
static void test_end_decision_window(void **state)
{
    window_case(*state, RT_SYNC_ALWAYS, "/__transaction_state-", true);
    window_case(*state, RT_SYNC_NONE, "/__transaction_state-", true);
    window_case(*state, RT_SYNC_NONE, "/t-0/", true);
    window_case(*state, RT_SYNC_NONE, "/t-2/", true);
    window_case(*state, RT_SYNC_ALWAYS, "/__transaction_state-", false);
    window_case(*state, RT_SYNC_NONE, "/t-2/", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_power_loss_at_every_step, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_marker_beside_next_transaction, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_marker_under_next_transaction, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_end_data_sync_fails, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_end_decision_window, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_power_loss_sync_none, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_power_loss_torn_sectors, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
