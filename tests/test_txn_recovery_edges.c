/*
 * test_txn_recovery_edges.c — recovery edges of the one-round commit (coordinator.c CO10, CO13;
 * docs/format.md G.6 R1, W4) that a reviewer reproduced: a producer evicted from a partition's
 * producer table after its marker there became durable (R1 must read its data, never "missing"),
 * for a wire transaction at a kept epoch (0x7203) and an in-process one (0x7202); a durable
 * Ongoing written under sync=none and reopened under sync=always (CO13 keys on the mode the data
 * was acknowledged under); and the wrap-aware sequence compare (PST4), directly and end to end
 * (a producer snapshot puts P's sequence at INT32_MAX - 1, its data past the wrap is lost at power
 * loss). Real files, real io backends, power loss by the fault injector. It never asserts a
 * time.
 * RT_TEST_BOTH_BACKENDS
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "producer_state.h"
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "index/producer_snapshot.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

static size_t mk_batch(uint8_t *buf, size_t cap, uint16_t attrs, int64_t pid, int16_t epoch,
                       int32_t seq, const char *tag)
{
    return tu_batch(buf, cap, attrs, pid, epoch, seq, 2, tag, TU_BATCH_UNNUMBERED, 1000);
}

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

static void run(struct tu_fixture *f, uint32_t producers_max, bool other_producer)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = RT_SYNC_ALWAYS;
    o.producers_max = producers_max;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 2), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, "wire", 60000, &pid, &epoch), 0);
    struct rt_topic_partition tp[2] = {{"t", 0}, {"t", 1}};
    assert_int_equal(rt_txn_add_partitions(e, "wire", pid, epoch, tp, 2), 0);
    for (uint32_t part = 0; part < 2; part++) {
        uint8_t buf[1024];
        size_t len = mk_batch(buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, 0, "a");
        int64_t base = -1;
        assert_int_equal(rt_append_batch(e, "t", part, buf, len, &base), 0);
    }
    int end_rc = rt_txn_end(e, "wire", pid, epoch, true);
    assert_int_equal(end_rc, 0); /* the commit is acknowledged */
    usleep(5 * 1000);            /* the lazy markers (and Complete*) land, unsynced */
    if (other_producer) {
        /* another (idempotent) producer appends to t-0: its round fdatasyncs t-0 (sync=always),
         * which makes T1's COMMIT marker there durable, and its entry evicts P from t-0's table */
        uint8_t buf[1024];
        size_t len = mk_batch(buf, sizeof(buf), 0, pid + 1000, 0, 0, "q");
        int64_t base = -1;
        int rc = rt_append_batch(e, "t", 0, buf, len, &base);
        if (rc)
            fail_msg("other producer's append: %d %s", rc, rt_error_detail());
    }
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_int_not_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);

    f->o.sync_mode = RT_SYNC_ALWAYS;
    f->o.shard_count = 2;
    f->o.producers_max = producers_max;
    tu_fixture_open(f);
    int64_t n0 = visible(f->e, 0, "a"), n1 = visible(f->e, 1, "a");
    printf("producers_max=%u other_producer=%d: acknowledged commit T1 visible %" PRId64
           " in t-0, %" PRId64 " in t-1\n",
           producers_max, other_producer, n0, n1);
    tu_fixture_close(f);
    if (n0 != 2 || n1 != 2)
        fail_msg("acknowledged commit undone: t-0 %" PRId64 ", t-1 %" PRId64, n0, n1);
}

static void test_control_default_table(void **state)
{
    run(*state, 65536, true);
}

static void test_control_no_other_producer(void **state)
{
    run(*state, 1, false);
}

static void test_evicted_producer(void **state)
{
    run(*state, 1, true);
}

/* The same for an in-process producer's one-round commit (0x7202: no first offset recorded, the
 * epoch bumped at the end): R1 finds the evicted producer's batch holding the recorded last
 * sequence in t-0 and leaves its marker there. */
static void run_in_process(struct tu_fixture *f, uint32_t producers_max)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = RT_SYNC_ALWAYS;
    o.producers_max = producers_max;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 2), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "inproc";
    po.transaction_timeout_ms = 600000;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    for (int32_t part = 0; part < 2; part++) {
        for (int i = 0; i < 2; i++) {
            struct rt_producer_message msg = {
                .record = {.key_len = -1, .value = "a", .value_len = 1, .timestamp_ms = -1},
                .sequence = -1};
            assert_int_equal(rt_producer_send(p, "t", part, &msg, NULL, NULL), 0);
        }
    }
    assert_int_equal(rt_producer_commit(p, 10000), 0); /* the commit is acknowledged */
    usleep(5 * 1000);                                  /* the lazy markers land, unsynced */
    uint8_t buf[1024];
    size_t len = mk_batch(buf, sizeof(buf), 0, 424242, 0, 0, "q");
    int64_t base = -1;
    int rc = rt_append_batch(e, "t", 0, buf, len, &base); /* fdatasyncs t-0, evicts P there */
    if (rc)
        fail_msg("other producer's append: %d %s", rc, rt_error_detail());
    assert_int_equal(io_fault_power_loss(&plan), 0);
    (void)rt_producer_close(p);
    assert_int_not_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);

    f->o.sync_mode = RT_SYNC_ALWAYS;
    f->o.shard_count = 2;
    f->o.producers_max = producers_max;
    tu_fixture_open(f);
    int64_t n0 = visible(f->e, 0, "a"), n1 = visible(f->e, 1, "a");
    printf("in-process, producers_max=%u: acknowledged commit visible %" PRId64 " in t-0, %" PRId64
           " in t-1\n",
           producers_max, n0, n1);
    tu_fixture_close(f);
    if (n0 != 2 || n1 != 2)
        fail_msg("acknowledged commit undone: t-0 %" PRId64 ", t-1 %" PRId64, n0, n1);
}

static void test_evicted_producer_in_process(void **state)
{
    run_in_process(*state, 1);
}

static void test_control_in_process_default_table(void **state)
{
    run_in_process(*state, 65536);
}

/* CO13 keys on the sync mode of the run that wrote the Ongoing (its acked_durable flag) and of
 * the open that finds it. A wire transaction adds t-0 and t-1 and appends to both (acknowledged)
 * under `first`; then power is lost (or the engine closes cleanly); the reopen runs under
 * `reopen` and the client retries EndTxn(commit). It may succeed only when both runs are
 * sync=always; otherwise it is fenced, and it never answers 0 with data gone. */
static const char *sync_name(enum rt_sync_mode m)
{
    return m == RT_SYNC_ALWAYS ? "always" : m == RT_SYNC_NONE ? "none" : "interval";
}

static void run_sync_modes(struct tu_fixture *f, enum rt_sync_mode first, enum rt_sync_mode reopen,
                           bool power_loss, bool want_live)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = first;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 2), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, "wire", 60000, &pid, &epoch), 0);
    struct rt_topic_partition tp[2] = {{"t", 0}, {"t", 1}};
    assert_int_equal(rt_txn_add_partitions(e, "wire", pid, epoch, tp, 2), 0);
    for (uint32_t part = 0; part < 2; part++) {
        uint8_t buf[1024];
        size_t len = mk_batch(buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, 0, "a");
        int64_t base = -1;
        assert_int_equal(rt_append_batch(e, "t", part, buf, len, &base), 0); /* acknowledged */
    }
    if (power_loss) {
        assert_int_equal(io_fault_power_loss(&plan), 0); /* the page cache is gone */
        assert_int_not_equal(rt_close(e), 0);
    } else {
        assert_int_equal(rt_close(e), 0);
    }
    io_fault_plan_release(&plan);

    f->o.shard_count = 2;
    f->o.sync_mode = reopen;
    tu_fixture_open(f);
    int rc = rt_txn_end(f->e, "wire", pid, epoch, true); /* the client's EndTxn after reconnect */
    int64_t n0 = visible(f->e, 0, "a"), n1 = visible(f->e, 1, "a");
    printf("written sync=%s, %s, reopened sync=%s: EndTxn(commit) rc=%d, visible %" PRId64
           " in t-0, %" PRId64 " in t-1 (2 each acknowledged)\n",
           sync_name(first), power_loss ? "power lost" : "closed", sync_name(reopen), rc, n0, n1);
    tu_fixture_close(f);
    if (rc == 0 && (n0 != 2 || n1 != 2))
        fail_msg("EndTxn(commit) answered 0 for a transaction whose acknowledged data is gone");
    if (want_live) {
        assert_int_equal(rc, 0);
    } else {
        assert_int_equal(rc, RT_E_PRODUCER_FENCED);
        assert_int_equal(n0, 0);
        assert_int_equal(n1, 0);
    }
}

static void test_sync_mode_changed_across_open(void **state)
{
    run_sync_modes(*state, RT_SYNC_NONE, RT_SYNC_ALWAYS, true, false);
}

static void test_sync_always_then_none_is_fenced(void **state)
{
    run_sync_modes(*state, RT_SYNC_ALWAYS, RT_SYNC_NONE, true, false);
}

static void test_sync_always_both_runs_stays_live(void **state)
{
    run_sync_modes(*state, RT_SYNC_ALWAYS, RT_SYNC_ALWAYS, true, true);
}

/* PST4 / R1: at a kept epoch a producer's sequence runs on past INT32_MAX to 0, so "the last
 * sequence L has reached the recorded S" is read in wrap space. The plain L >= S that R1 used
 * answers every case marked "wrap" below wrongly. */
static void test_sequence_compare_at_wrap(void **state)
{
    (void)state;
    /* no wrap */
    assert_true(producer_seq_reached(5, 5));
    assert_true(producer_seq_reached(6, 5));
    assert_false(producer_seq_reached(4, 5));
    assert_true(producer_seq_reached(INT32_MAX, INT32_MAX - 1));
    assert_false(producer_seq_reached(INT32_MAX - 1, INT32_MAX));
    /* wrap: L ran past INT32_MAX to a small number, S was recorded just before the wrap */
    assert_true(producer_seq_reached(0, INT32_MAX));
    assert_true(producer_seq_reached(3, INT32_MAX - 2));
    /* wrap: S was recorded after the wrap, L is the state from before it (data lost) */
    assert_false(producer_seq_reached(INT32_MAX, 0));
    assert_false(producer_seq_reached(INT32_MAX - 2, 3));
    /* the window: up to 2^30 - 1 behind counts as reached, further does not */
    assert_true(producer_seq_reached((1 << 30) - 1, 0));
    assert_false(producer_seq_reached(1 << 30, 0));
    assert_true(producer_seq_reached(((int64_t)INT32_MAX + 1 + 100) % ((int64_t)INT32_MAX + 1),
                                     INT32_MAX - 100));
    /* none written / not recorded reaches nothing */
    assert_false(producer_seq_reached(-1, 0));
    assert_false(producer_seq_reached(0, -1));
}

/* R1 across the sequence wrap (PST4), end to end: at a kept epoch P's state in t-0 (a producer
 * snapshot, as a long-lived client leaves it) has last sequence INT32_MAX - 1; the transaction
 * writes t-0 at sequences INT32_MAX, 0 (it wraps) and t-1 at 0, 1, under sync=none. EndTxn's
 * decision round fdatasyncs the decision record, t-1 and t-0, and t-0's fdatasync fails (its
 * bytes lost, Linux writeback semantics), so EndTxn fails; then power is lost. Where the record
 * became durable, R1 at the reopen finds t-0's last sequence INT32_MAX - 1 against the recorded
 * 0: not reached (the plain L >= S read it as reached and committed t-1 alone). Either way the
 * transaction is all-or-nothing. */
static int epoch_of(void *ctx, const struct rt_txn_info *txn)
{
    if (strcmp(txn->transactional_id, "wire") == 0)
        *(int16_t *)ctx = txn->epoch;
    return 0;
}

/* One run of the scenario below; true when the reopen decided the transaction from its durable
 * decision record (R1 keeps the identity at a kept epoch), false when the record was lost with
 * the power and the open fenced the Ongoing instead (the epoch bumped, CO13). */
static bool wrap_lost_data_once(struct tu_fixture *f)
{
    tu_system("rm -rf '%s'", f->dir);
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 2), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, "wire", 60000, &pid, &epoch), 0);
    uint8_t buf[1024];
    size_t len = mk_batch(buf, sizeof(buf), 0, -1, -1, -1, "z"); /* offsets 0, 1: no producer */
    int64_t base = -1;
    assert_int_equal(rt_append_batch(e, "t", 0, buf, len, &base), 0);
    assert_int_equal(rt_close(e), 0);
    struct producer_snapshot_entry se = {.producer_id = pid,
                                         .epoch = epoch,
                                         .last_sequence = INT32_MAX - 1,
                                         .last_offset = 1,
                                         .offset_delta = 0,
                                         .timestamp_ms = 1000,
                                         .coordinator_epoch = -1,
                                         .current_txn_first_offset = -1};
    char pdir[1024];
    snprintf(pdir, sizeof(pdir), "%s/t-0", f->dir);
    io_fault_plan_release(&plan);
    assert_int_equal(producer_snapshot_write(NULL, pdir, 2, &se, 1), 0);

    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.writeback_errors = true;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    struct rt_topic_partition tp[2] = {{"t", 0}, {"t", 1}};
    assert_int_equal(rt_txn_add_partitions(e, "wire", pid, epoch, tp, 2), 0);
    len = mk_batch(buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, INT32_MAX, "a");
    int rc = rt_append_batch(e, "t", 0, buf, len, &base);
    if (rc)
        fail_msg("append at the wrap: %d %s", rc, rt_error_detail());
    len = mk_batch(buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, 0, "a");
    assert_int_equal(rt_append_batch(e, "t", 1, buf, len, &base), 0);
    plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_ONCE,
                                           .op = IO_OP_FDATASYNC,
                                           .nth = 1,
                                           .error = EIO,
                                           .path_contains = "/t-0/"};
    plan.rule_count = 1;
    int end_rc = rt_txn_end(e, "wire", pid, epoch, true);
    assert_int_not_equal(end_rc, 0); /* t-0's data never became durable: not acknowledged */
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_int_not_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);

    f->o.shard_count = 2;
    f->o.sync_mode = RT_SYNC_NONE;
    tu_fixture_open(f);
    int64_t n0 = visible(f->e, 0, "a"), n1 = visible(f->e, 1, "a");
    int16_t now = -1;
    assert_int_equal(rt_txn_list(f->e, epoch_of, &now), 0);
    tu_fixture_close(f);
    if (n0 != n1)
        fail_msg("transaction split across the wrap: t-0 %" PRId64 ", t-1 %" PRId64, n0, n1);
    return now == epoch;
}

static void test_wrap_lost_data_aborts(void **state)
{
    /* Whether the decision record's fdatasync ran before the power loss is the shards' race
     * (about 1 run in 15 here): repeat until R1 decided it twice; every run is all-or-nothing. */
    int decided = 0, runs = 0;
    while (decided < 2 && runs < 200) {
        decided += wrap_lost_data_once(*state);
        runs++;
    }
    printf("wrap, t-0's data lost: %d of %d runs decided by R1, every one all-or-nothing\n",
           decided, runs);
    assert_int_equal(decided, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_control_default_table, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_control_no_other_producer, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_evicted_producer, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_evicted_producer_in_process, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_control_in_process_default_table, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test(test_sequence_compare_at_wrap),
        cmocka_unit_test_setup_teardown(test_wrap_lost_data_aborts, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sync_always_then_none_is_fenced, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sync_always_both_runs_stays_live, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sync_mode_changed_across_open, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
