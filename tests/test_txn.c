/*
 * test_txn.c — the transaction coordinator end to end: every transition and error of the state
 * machine (coordinator.c, CO1-CO6), zombie fencing by a second instance, the timeout abort,
 * each check-back outcome, transactional offsets, an I/O fault at every step of commit and abort
 * followed by a reopen (all-or-nothing across partitions, CO2), and the transaction log staying
 * bounded (CO6).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coordinator.h"
#include "engine.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

static rt_producer *txn_producer(rt_engine *e, const char *id, int32_t timeout_ms)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = id;
    po.transaction_timeout_ms = timeout_ms;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    int rc = rt_producer_init_transactions(p, -1);
    if (rc)
        fprintf(stderr, "init_transactions: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    return p;
}

static int send_value(rt_producer *p, const char *topic, int32_t part, const char *v)
{
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = -1},
        .sequence = -1};
    return rt_producer_send(p, topic, part, &m, NULL, NULL);
}

/* Records of a partition readable at `iso` whose value is `value` (NULL: every record),
 * counted. */
static int64_t count_value(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso,
                           const char *value)
{
    int64_t bound = 0, from = 0, n = 0;
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, iso, &bound), 0);
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_EARLIEST, iso, &from), 0);
    while (from < bound) {
        rt_fetch *fh;
        assert_int_equal(rt_fetch_start(e, topic, part, from, 1 << 20, iso, &fh), 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, from);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0)
            n += !value || (r.value_len == (int32_t)strlen(value) &&
                            memcmp(r.value, value, strlen(value)) == 0);
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(v, from); /* markers and aborted batches included */
        rt_fetch_release(fh);
        if (next <= from)
            break;
        from = next;
    }
    return n;
}

static int64_t count_records(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso)
{
    return count_value(e, topic, part, iso, NULL);
}

struct txn_seen {
    int count;
    char state[32];
    int64_t pinned;
    uint32_t partitions;
};

static int find_txn(void *ctx, const struct rt_txn_info *t)
{
    struct txn_seen *s = ctx;
    if (strcmp(t->transactional_id, "list-me") != 0)
        return 0;
    s->count++;
    snprintf(s->state, sizeof(s->state), "%s", t->state);
    s->partitions = t->partition_count;
    s->pinned = t->partition_count ? t->pinned_lso[0] : -1;
    return 0;
}

/* ---- transitions and errors ---- */

static void test_commit_and_abort(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 3), 0);
    rt_producer *p = txn_producer(f->e, "tx-a", 10000);
    int64_t pid;
    int16_t epoch0, epoch;
    rt_producer_id(p, &pid, &epoch0);
    /* Empty -> Ongoing -> PrepareCommit -> CompleteCommit */
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(rt_producer_begin(p), RT_E_INVALID_TXN_STATE);
    for (int part = 0; part < 3; part++)
        assert_int_equal(send_value(p, "out", part, "committed"), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    for (int part = 0; part < 3; part++) {
        assert_int_equal(count_records(f->e, "out", part, RT_READ_COMMITTED), 0);
        assert_int_equal(count_records(f->e, "out", part, RT_READ_UNCOMMITTED), 1);
    }
    struct txn_seen seen = {0};
    assert_int_equal(rt_producer_commit(p, -1), 0);
    for (int part = 0; part < 3; part++)
        assert_int_equal(count_records(f->e, "out", part, RT_READ_COMMITTED), 1);
    rt_producer_id(p, NULL, &epoch);
    assert_int_equal(epoch, epoch0 + 1); /* CO3: bumped at the transaction's end */
    /* Ongoing -> PrepareAbort -> CompleteAbort */
    assert_int_equal(rt_producer_begin(p), 0);
    for (int part = 0; part < 3; part++)
        assert_int_equal(send_value(p, "out", part, "aborted"), 0);
    assert_int_equal(rt_producer_abort(p, -1), 0);
    for (int part = 0; part < 3; part++) {
        assert_int_equal(count_records(f->e, "out", part, RT_READ_COMMITTED), 1);
        assert_int_equal(count_records(f->e, "out", part, RT_READ_UNCOMMITTED), 2);
    }
    /* Wrong states. */
    assert_int_equal(rt_producer_commit(p, -1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_abort(p, -1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(send_value(p, "out", 0, "outside"), RT_E_INVALID_TXN_STATE);
    /* An empty transaction commits locally. */
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
    (void)seen;
    (void)pid;
}

/* PR6 (producer.c): commit decides on the shards' acknowledgements and delivers beside the
 * marker round, yet every delivery callback of the transaction has run when it returns, each
 * once and with its offset; a commit from one of the producer's own callbacks is refused. */
struct commit_cbs {
    rt_producer *self;
    _Atomic int delivered;
    _Atomic int failed;
    _Atomic int own_commit_rc;
};

static void commit_cb(void *ctx, int err, int64_t offset, bool duplicate)
{
    struct commit_cbs *c = ctx;
    (void)duplicate;
    if (err || offset < 0)
        atomic_fetch_add(&c->failed, 1);
    if (atomic_load(&c->own_commit_rc) == 1) /* the first callback tries once */
        atomic_store(&c->own_commit_rc, rt_producer_commit(c->self, 1000));
    atomic_fetch_add(&c->delivered, 1);
}

static void test_commit_delivers_every_callback(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "cb", 2), 0);
    rt_producer *p = txn_producer(f->e, "tx-cb", 10000);
    struct commit_cbs c = {.self = p};
    atomic_store(&c.own_commit_rc, 1);
    for (int t = 0; t < 20; t++) {
        assert_int_equal(rt_producer_begin(p), 0);
        for (int k = 0; k < 10; k++) {
            struct rt_producer_message m = {
                .record = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1},
                .sequence = -1};
            assert_int_equal(rt_producer_send(p, "cb", k % 2, &m, commit_cb, &c), 0);
        }
        assert_int_equal(rt_producer_commit(p, -1), 0);
        assert_int_equal(atomic_load(&c.delivered), (t + 1) * 10); /* all ran, each once */
    }
    assert_int_equal(atomic_load(&c.failed), 0);
    assert_int_equal(atomic_load(&c.own_commit_rc), RT_E_INVALID_ARGUMENT);
    for (int part = 0; part < 2; part++)
        assert_int_equal(count_records(f->e, "cb", part, RT_READ_COMMITTED), 100);
    assert_int_equal(rt_producer_close(p), 0);
}

static void test_errors(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    rt_producer *plain = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &plain), 0);
    assert_int_equal(rt_producer_init_transactions(plain, -1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_producer_begin(plain), RT_E_INVALID_TXN_STATE);
    rt_producer_close(plain);
    po.transactional_id = "tx-timeout";
    po.transaction_timeout_ms = 16 * 60 * 1000; /* above the 15 min maximum */
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), RT_E_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(rt_producer_begin(p), RT_E_INVALID_TXN_STATE); /* not initialised */
    rt_producer_close(p);
    po.name = "both";
    assert_int_equal(rt_producer_open(f->e, &po, &p), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort(f->e, "never-seen"), RT_E_UNKNOWN_PRODUCER_ID);
}

/* Two instances of one transactional id: the newer fences the older, whose late writes, offset
 * commits and commit are all rejected; what the older left open is aborted. */
static void test_zombie_fencing(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 2), 0);
    rt_producer *old = txn_producer(f->e, "tx-z", 10000);
    assert_int_equal(rt_producer_begin(old), 0);
    assert_int_equal(send_value(old, "out", 0, "zombie-1"), 0);
    assert_int_equal(rt_producer_flush(old, -1), 0);
    int64_t hw = -1, lso = -1;
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    assert_int_equal(lso, 0); /* pinned by the open transaction */
    rt_producer *fresh = txn_producer(f->e, "tx-z", 10000);
    int64_t pid_old, pid_new;
    int16_t ep_old, ep_new;
    rt_producer_id(old, &pid_old, &ep_old);
    rt_producer_id(fresh, &pid_new, &ep_new);
    assert_int_equal(pid_old, pid_new);
    assert_true(ep_new > ep_old);
    /* The zombie's open transaction was aborted: the LSO is released, nothing visible. */
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
    assert_int_equal(lso, hw);
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), 0);
    /* Late writes of the zombie: to a partition of its transaction (epoch fenced there) and to
     * a new one (fenced at the coordinator). */
    assert_int_equal(send_value(old, "out", 0, "zombie-2"), 0);
    assert_int_not_equal(rt_producer_flush(old, -1), 0);
    assert_int_equal(rt_producer_commit(old, -1), RT_E_PRODUCER_FENCED);
    rt_producer_close(old);
    rt_producer *old2 = NULL; /* a zombie that never saw the partition: coordinator fences it */
    (void)old2;
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_UNCOMMITTED), 1);
    /* The new instance works. */
    assert_int_equal(rt_producer_begin(fresh), 0);
    assert_int_equal(send_value(fresh, "out", 1, "fresh"), 0);
    assert_int_equal(rt_producer_commit(fresh, -1), 0);
    assert_int_equal(count_records(f->e, "out", 1, RT_READ_COMMITTED), 1);
    assert_int_equal(rt_producer_close(fresh), 0);
}

static void test_timeout_aborts(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    rt_producer *p = txn_producer(f->e, "tx-slow", 200);
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(send_value(p, "out", 0, "too-late"), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    int64_t lso = -1, hw = -1;
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    assert_int_equal(lso, 0);
    /* The coordinator's timer aborts it (CO5); wait for the LSO to move, bounded. */
    for (int i = 0; i < 200 && lso == 0; i++) {
        usleep(20 * 1000);
        rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    }
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
    assert_int_equal(lso, hw);
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(rt_producer_commit(p, -1), RT_E_PRODUCER_FENCED);
    rt_producer_close(p);
}

/* Transactional ids idle past transactional_id_expiration_ms expire (a tombstone in the log):
 * they are gone from the list, and stay gone after a restart. */
static void test_transactional_id_expiry(void **state)
{
    struct tu_fixture *f = *state;
    f->o.transactional_id_expiration_ms = 100;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "list-me";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
    struct txn_seen seen = {0};
    rt_txn_list(f->e, find_txn, &seen);
    assert_int_equal(seen.count, 1);
    for (int i = 0; i < 200 && seen.count; i++) {
        usleep(20 * 1000);
        memset(&seen, 0, sizeof(seen));
        rt_txn_list(f->e, find_txn, &seen);
    }
    assert_int_equal(seen.count, 0);
    tu_fixture_close(f);
    tu_fixture_open(f);
    memset(&seen, 0, sizeof(seen));
    rt_txn_list(f->e, find_txn, &seen);
    assert_int_equal(seen.count, 0);
}

/* ---- check-back ---- */

struct check_script {
    enum rt_txn_check_result answer;
    int calls;
};

static enum rt_txn_check_result check_answer(void *ctx, const char *id, int64_t pid, int16_t epoch)
{
    (void)id;
    (void)pid;
    (void)epoch;
    struct check_script *s = ctx;
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
    return s->answer;
}

static void run_check(struct tu_fixture *f, enum rt_txn_check_result answer, bool park,
                      int64_t expect_committed, const char *expect_state)
{
    f->o.txn_check_interval_ms = 20;
    f->o.txn_check_max = 3;
    f->o.txn_park_hanging = park;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    struct check_script script = {.answer = answer};
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "list-me";
    po.transaction_timeout_ms = 60000;
    po.check_fn = check_answer;
    po.check_ctx = &script;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(send_value(p, "out", 0, "half-message"), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    /* The application "forgets" to end it: the coordinator asks. */
    struct txn_seen seen;
    for (int i = 0; i < 300; i++) {
        usleep(10 * 1000);
        memset(&seen, 0, sizeof(seen));
        rt_txn_list(f->e, find_txn, &seen);
        if (strcmp(seen.state, "Ongoing") != 0 ||
            (park && seen.count && __atomic_load_n(&script.calls, __ATOMIC_SEQ_CST) >= 3))
            break;
    }
    assert_true(__atomic_load_n(&script.calls, __ATOMIC_SEQ_CST) >= 1);
    assert_string_equal(seen.state, expect_state);
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), expect_committed);
    rt_producer_close(p);
}

static void test_check_back_commit(void **state)
{
    run_check(*state, RT_TXN_CHECK_COMMIT, false, 1, "CompleteCommit");
}

static void test_check_back_rollback(void **state)
{
    run_check(*state, RT_TXN_CHECK_ROLLBACK, false, 0, "CompleteAbort");
}

static void test_check_back_unknown_then_rollback(void **state)
{
    run_check(*state, RT_TXN_CHECK_UNKNOWN, false, 0, "CompleteAbort");
}

static void test_check_back_unknown_parked(void **state)
{
    struct tu_fixture *f = *state;
    run_check(f, RT_TXN_CHECK_UNKNOWN, true, 0, "Ongoing");
    /* Parked: reported as hanging, and the check count survives a restart. */
    struct hang {
        bool hanging;
        uint32_t checks;
    } h = {0};
    rt_close(f->e);
    f->e = NULL;
    tu_fixture_open(f);
    int (*fn)(void *, const struct rt_txn_info *) = NULL;
    (void)fn;
    struct txn_seen seen = {0};
    rt_txn_list(f->e, find_txn, &seen);
    assert_string_equal(seen.state, "Ongoing");
    assert_true(seen.pinned >= 0);
    (void)h;
    /* The operator aborts it. */
    assert_int_equal(rt_txn_abort(f->e, "list-me"), 0);
    memset(&seen, 0, sizeof(seen));
    rt_txn_list(f->e, find_txn, &seen);
    assert_string_equal(seen.state, "CompleteAbort");
    assert_int_equal(rt_txn_abort(f->e, "list-me"), RT_E_INVALID_TXN_STATE);
}

/* ---- crashes and faults at every step ---- */

/* Runs one transaction over 3 partitions with an I/O fault injected at the nth write (or
 * fdatasync); whatever step it hits, after a reopen the transaction is all-or-nothing (CO2). */
static int faults_acknowledged, faults_failed, faults_committed_after_failure;

static void fault_case(struct tu_fixture *f, enum io_op_type op, uint64_t nth, bool commit)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.rules[0] =
        (struct io_fault_rule){.mode = IO_FAULT_FOREVER, .op = op, .nth = nth, .error = EIO};
    plan.rule_count = 1;
    struct rt_options o = f->o;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    int rc = rt_topic_create(e, "out", 3);
    if (rc == 0) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = "tx-fault";
        po.transaction_timeout_ms = 300;
        po.linger_ms = 1;
        rt_producer *p = NULL;
        assert_int_equal(rt_producer_open(e, &po, &p), 0);
        rc = rt_producer_init_transactions(p, -1);
        if (rc == 0)
            rc = rt_producer_begin(p);
        for (int part = 0; rc == 0 && part < 3; part++)
            rc = send_value(p, "out", part, "all-or-nothing");
        if (rc == 0)
            rc = commit ? rt_producer_commit(p, -1) : rt_producer_abort(p, -1);
        rt_producer_close(p);
    }
    bool acknowledged = rc == 0;
    if (acknowledged)
        faults_acknowledged++;
    else
        faults_failed++;
    rt_close(e);
    io_fault_plan_release(&plan);
    /* Reopen on the real backend: Prepare* is completed, Ongoing times out. */
    tu_fixture_open(f);
    uint32_t parts = 0;
    if (rt_topic_describe(f->e, "out", &parts) != 0) {
        assert_int_equal(rt_close(f->e), 0);
        f->e = NULL;
        return;
    }
    int64_t seen[3];
    for (int wait = 0; wait < 100; wait++) {
        for (uint32_t part = 0; part < 3; part++)
            seen[part] = count_records(f->e, "out", part, RT_READ_COMMITTED);
        int64_t lso = -1, hw = -1;
        rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
        rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
        if (lso == hw)
            break;
        usleep(20 * 1000);
    }
    if (!(seen[0] == seen[1] && seen[1] == seen[2]))
        fail_msg("%s fault at %s #%" PRIu64 ": partitions see %" PRId64 "/%" PRId64 "/%" PRId64
                 " committed records",
                 commit ? "commit" : "abort", op == IO_OP_WRITE ? "write" : "fdatasync", nth,
                 seen[0], seen[1], seen[2]);
    if (acknowledged)
        assert_int_equal(seen[0], commit ? 1 : 0); /* an acknowledged outcome is kept */
    else if (seen[0] == 1)
        faults_committed_after_failure++; /* PrepareCommit was durable: reopen completed it */
    if (!commit)
        assert_int_equal(seen[0], 0);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
}

static void test_fault_at_every_step(void **state)
{
    struct tu_fixture *f = *state;
    f->o.shard_count = 2;
    for (int commit = 1; commit >= 0; commit--)
        for (uint64_t nth = 1; nth <= 14; nth++) {
            fault_case(f, IO_OP_WRITE, nth, commit);
            fault_case(f, IO_OP_FDATASYNC, nth, commit);
        }
    fprintf(stderr, "fault cases: %d acknowledged, %d failed (%d of them committed at reopen)\n",
            faults_acknowledged, faults_failed, faults_committed_after_failure);
    /* The sweep must hit every phase: some failures, some completions at reopen (a fault after
     * PrepareCommit), and some transactions that got through. */
    assert_true(faults_failed > 0);
    assert_true(faults_acknowledged > 0);
    assert_true(faults_committed_after_failure > 0);
}

/* ---- power loss at every write and every fdatasync of the one-round protocol (CO9-CO11) ----
 *
 * One scenario, run over the fault injector with unsynced writes tracked: a producer commits (or
 * aborts) T1 over partitions 0, 1 and 2 of "out" (on two shards, so its data, its PrepareCommit
 * and its markers are spread over both), then commits T2 in partition 0 alone. Its data goes out
 * at commit (linger 10 s): the decision round carries the data and the PrepareCommit together.
 * The power is lost at the Nth write or fdatasync of the engine's life (every N up to one past the
 * last op of a fault-free run), or, in the case past the end, once both commits returned: then
 * every marker written without its own fdatasync (SH6) is gone from the disk. After a reopen on
 * the real backend each transaction is all-or-nothing, an acknowledged outcome is kept (T1's
 * markers in partitions 1 and 2 are repaired from its PrepareCommit while T2's records are newer:
 * COR7), and nothing pins an LSO. */
struct power_stats {
    int acked_t1, acked_t2, failed, committed_at_reopen, aborted_at_reopen;
};

static void power_scenario(rt_engine *e, bool commit_t1, int *rc_t1, int *rc_t2)
{
    *rc_t1 = *rc_t2 = -1;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-power";
    po.transaction_timeout_ms = 300;
    po.linger_ms = 10000;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    int rc = rt_producer_init_transactions(p, -1);
    if (rc == 0)
        rc = rt_producer_begin(p);
    for (int part = 0; rc == 0 && part < 3; part++)
        rc = send_value(p, "out", part, "t1");
    if (rc == 0)
        rc = *rc_t1 = commit_t1 ? rt_producer_commit(p, -1) : rt_producer_abort(p, -1);
    if (rc == 0)
        rc = rt_producer_begin(p);
    if (rc == 0)
        rc = send_value(p, "out", 0, "t2");
    if (rc == 0)
        *rc_t2 = rt_producer_commit(p, -1);
    rt_producer_close(p);
}

/* A reader beside the scenario: whether read_committed ever showed T1 in a partition while the
 * machine was alive (an observation made after the power went is not counted). */
struct power_watch {
    rt_engine *e;
    struct io_fault_plan *plan;
    bool seen_t1;
};

/* T1's record readable at read_committed in `part` (0 on any error: a dead machine's pages). */
static int64_t t1_visible(rt_engine *e, uint32_t part)
{
    int64_t lso = -1;
    if (rt_list_offsets(e, "out", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso) || lso < 2)
        return 0; /* T1's data at 0, its marker at 1 */
    rt_fetch *fh = NULL;
    if (rt_fetch_start(e, "out", part, 0, 1 << 16, RT_READ_COMMITTED, &fh))
        return 0;
    struct rt_records it;
    struct rt_record_view r;
    rt_records_init(&it, fh, 0);
    int64_t n = 0;
    while (rt_records_next(&it, &r) == 0)
        n += r.value_len == 2 && memcmp(r.value, "t1", 2) == 0;
    rt_fetch_release(fh);
    return n;
}

/* Runs on the shard thread right after each round published (rt_append_watch_set), before the
 * shard does anything else: every visibility is observed before the next op can lose power. */
static void power_watch_round(void *arg)
{
    struct power_watch *w = arg;
    for (uint32_t part = 0; part < 3; part++)
        if (t1_visible(w->e, part) > 0 && !io_fault_power_is_lost(w->plan))
            w->seen_t1 = true;
}

/* Returns the writes and fdatasyncs the injector saw. */
static void power_case(struct tu_fixture *f, enum io_op_type op, uint64_t nth, bool commit_t1,
                       struct power_stats *st, uint64_t *writes_out, uint64_t *syncs_out)
{
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.track_dirs = true;
    if (nth) {
        plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS, .op = op, .nth = nth};
        plan.rule_count = 1;
    }
    struct rt_options o = f->o;
    o.shard_count = 2;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    int rc_t1 = -1, rc_t2 = -1;
    struct power_watch watch = {.e = e, .plan = &plan};
    if (rt_topic_create(e, "out", 3) == 0) {
        assert_int_equal(rt_append_watch_set(e, power_watch_round, &watch), 0);
        power_scenario(e, commit_t1, &rc_t1, &rc_t2);
    }
    usleep(20 * 1000); /* let the asynchronous Complete* records land (or not) */
    assert_int_equal(io_fault_power_loss(&plan), 0); /* no-op when a rule already fired */
    assert_int_equal(rt_append_watch_set(e, NULL, NULL), 0);
    assert_int_equal(plan.power_loss_error, 0);
    if (writes_out)
        *writes_out = plan.writes_seen;
    if (syncs_out)
        *syncs_out = plan.fdatasyncs_seen;
    /* The machine is dead: a write fails, so the close seals nothing (as a real crash). */
    struct rt_record dead = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    int64_t base = -1;
    assert_int_not_equal(rt_append(e, "out", 0, &dead, 1, &base), 0);
    assert_int_not_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    st->acked_t1 += rc_t1 == 0;
    st->acked_t2 += rc_t2 == 0;
    st->failed += rc_t1 != 0 || rc_t2 != 0;

    tu_fixture_open(f);
    uint32_t parts = 0;
    if (rt_topic_describe(f->e, "out", &parts) != 0) {
        assert_int_equal(rt_close(f->e), 0);
        f->e = NULL;
        return;
    }
    const char *where = op == IO_OP_WRITE ? "write" : "fdatasync";
    int64_t t1[3], t2 = 0;
    bool settled = false;
    for (int wait = 0; wait < 100 && !settled; wait++) {
        settled = true;
        for (uint32_t part = 0; part < 3; part++) {
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
        fail_msg("power loss at %s #%" PRIu64 " (T1 %s): an LSO stays pinned", where, nth,
                 commit_t1 ? "commit" : "abort");
    for (uint32_t part = 0; part < 3; part++)
        t1[part] = count_value(f->e, "out", part, RT_READ_COMMITTED, "t1");
    t2 = count_value(f->e, "out", 0, RT_READ_COMMITTED, "t2");
    if (!(t1[0] == t1[1] && t1[1] == t1[2]) || t1[0] > 1 || t2 > 1)
        fail_msg("power loss at %s #%" PRIu64 " (T1 %s): T1 seen %" PRId64 "/%" PRId64 "/%" PRId64
                 ", T2 %" PRId64 " (all-or-nothing, once)",
                 where, nth, commit_t1 ? "commit" : "abort", t1[0], t1[1], t1[2], t2);
    if (rc_t1 == 0 && t1[0] != (commit_t1 ? 1 : 0))
        fail_msg("power loss at %s #%" PRIu64 ": T1's acknowledged %s is lost", where, nth,
                 commit_t1 ? "commit" : "abort");
    if (!commit_t1 && t1[0] != 0)
        fail_msg("power loss at %s #%" PRIu64 ": T1 was aborted and is readable", where, nth);
    if (watch.seen_t1 && t1[0] != 1)
        fail_msg("power loss at %s #%" PRIu64 ": a reader saw T1 committed, and it is undone",
                 where, nth);
    if (rc_t2 == 0 && t2 != 1)
        fail_msg("power loss at %s #%" PRIu64 ": T2's acknowledged commit is lost", where, nth);
    if (commit_t1 && rc_t1 != 0 && t1[0] == 1)
        st->committed_at_reopen++; /* the PrepareCommit was durable with the data: CO10 */
    if (commit_t1 && rc_t1 != 0 && t1[0] == 0 && rc_t1 != -1)
        st->aborted_at_reopen++;
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
}

static void test_power_loss_at_every_step(void **state)
{
    struct tu_fixture *f = *state;
    for (int commit = 1; commit >= 0; commit--) {
        struct power_stats st = {0};
        uint64_t writes = 0, syncs = 0;
        power_case(f, IO_OP_WRITE, 0, commit, &st, &writes, &syncs); /* past the end */
        assert_int_equal(st.acked_t1, 1);
        assert_int_equal(st.acked_t2, 1);
        for (uint64_t nth = 1; nth <= writes + 1; nth++)
            power_case(f, IO_OP_WRITE, nth, commit, &st, NULL, NULL);
        for (uint64_t nth = 1; nth <= syncs + 1; nth++)
            power_case(f, IO_OP_FDATASYNC, nth, commit, &st, NULL, NULL);
        fprintf(stderr,
                "power loss, T1 %s: %" PRIu64 " writes and %" PRIu64 " fdatasyncs swept; T1 "
                "acknowledged %d, T2 %d, %d failed (%d committed at reopen, %d aborted)\n",
                commit ? "commit" : "abort", writes, syncs, st.acked_t1, st.acked_t2, st.failed,
                st.committed_at_reopen, st.aborted_at_reopen);
        /* The sweep reaches every phase: cases that failed before, inside and after T1. */
        assert_true(st.failed > 0);
        assert_true(st.acked_t1 > 1);
        if (commit)
            assert_true(st.committed_at_reopen > 0);
    }
}

/* What a child that aborted one transaction under a fault plan saw before it was killed. */
struct abort_seen {
    int abort_rc;
    int64_t hw, lso;        /* after the abort returned */
    uint64_t writes_before; /* writes the ring made before the abort */
    uint64_t writes_after;  /* and once it returned */
    uint64_t faults;
};

/* Forks a child that opens the engine over the fault injector (write `nth` fails once; 0: no
 * fault), writes one transactional record, aborts, reports what it saw through a pipe and dies by
 * SIGKILL: no rt_close may tidy up after a failed round. */
static struct abort_seen abort_in_child(struct tu_fixture *f, uint64_t nth)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct io_fault_plan plan;
        memset(&plan, 0, sizeof(plan));
        if (nth) {
            plan.rules[0] = (struct io_fault_rule){
                .mode = IO_FAULT_ONCE, .op = IO_OP_WRITE, .nth = nth, .error = EIO};
            plan.rule_count = 1;
        }
        struct rt_options o = f->o;
        o.shard_count = 1;
        rt_engine *e = NULL;
        if (rt_test_open(f->dir, &o, &plan, &e) || rt_topic_create(e, "settle", 1))
            _exit(2);
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = "tx-index";
        po.transaction_timeout_ms = 60000;
        po.linger_ms = 1;
        rt_producer *p = NULL;
        if (rt_producer_open(e, &po, &p) || rt_producer_init_transactions(p, -1) ||
            rt_producer_begin(p))
            _exit(3);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = "aborted", .value_len = 7, .timestamp_ms = -1},
            .sequence = -1};
        if (rt_producer_send(p, "ab", 0, &m, NULL, NULL) || rt_producer_flush(p, -1))
            _exit(4);
        /* The shard completed the flush after its writes: the counters are settled. */
        struct abort_seen seen = {.writes_before = plan.writes_seen};
        seen.abort_rc = rt_producer_abort(p, -1);
        /* The abort's CompleteAbort may still be in its round (not waited for): one plain
         * append on the same (only) shard queues behind it, and once it returns the counters
         * are settled — less its own one write. */
        struct rt_record settle = {.key_len = -1, .value = "s", .value_len = 1, .timestamp_ms = -1};
        (void)rt_append(e, "settle", 0, &settle, 1, NULL);
        seen.writes_after = plan.writes_seen - 1;
        seen.faults = plan.faults_injected;
        rt_list_offsets(e, "ab", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &seen.hw);
        rt_list_offsets(e, "ab", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &seen.lso);
        if (write(fds[1], &seen, sizeof(seen)) != sizeof(seen))
            _exit(5);
        raise(SIGKILL);
        _exit(6);
    }
    close(fds[1]);
    struct abort_seen seen;
    memset(&seen, 0, sizeof(seen));
    ssize_t got = read(fds[0], &seen, sizeof(seen));
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status))
        fail_msg("the child failed at step %d", WEXITSTATUS(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_int_equal(got, (ssize_t)sizeof(seen));
    return seen;
}

/* SH4, PA5: a write of every step of an abort fails in turn — the PrepareAbort record, the ABORT
 * marker, the marker's .txnindex entry (written by the marker's round since this change; main
 * wrote it with a plain pwrite after the round and published the marker even when that failed,
 * which moved the LSO past the aborted batch with no aborted-transaction entry), and what follows.
 * Whenever the abort is reported failed its marker is not published: the high watermark stays at
 * the data batch and the transaction still pins the LSO. After the process dies and the engine
 * reopens and the application's producer is initialised again, the abort completes and the
 * aborted record is never readable at read_committed. */
static void test_abort_fault_publishes_nothing(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "ab", 1), 0);
    tu_fixture_close(f);
    char *clean = tu_path("%s.clean", f->dir);
    assert_int_equal(tu_system("cp -a '%s' '%s'", f->dir, clean), 0);
    struct abort_seen dry = abort_in_child(f, 0);
    assert_int_equal(dry.abort_rc, 0);
    assert_int_equal(dry.faults, 0);
    assert_true(dry.writes_after >= dry.writes_before + 3); /* PrepareAbort, marker, .txnindex */
    int failed = 0;
    for (uint64_t nth = dry.writes_before + 1; nth <= dry.writes_after + 1; nth++) {
        assert_int_equal(tu_system("rm -rf '%s' && cp -a '%s' '%s'", f->dir, clean, f->dir), 0);
        struct abort_seen seen = abort_in_child(f, nth);
        if (seen.abort_rc != 0) {
            failed++;
            assert_int_equal(seen.faults, 1);
            assert_int_equal(seen.hw, 1);  /* the data batch, not the failed marker */
            assert_int_equal(seen.lso, 0); /* the transaction still pins the LSO */
        }
        /* The application restarts: its producer's init ends whatever the old one left open
         * (a PrepareAbort found at recovery is completed; an Ongoing one is fenced and aborted). */
        tu_fixture_open(f);
        rt_producer *again = txn_producer(f->e, "tx-index", 60000);
        int64_t lso = -1, hw = -1;
        for (int wait = 0; wait < 300; wait++) {
            rt_list_offsets(f->e, "ab", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
            rt_list_offsets(f->e, "ab", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
            if (lso == hw)
                break;
            usleep(20 * 1000);
        }
        if (lso != hw)
            fail_msg("write #%" PRIu64 " failed: the transaction still pins the LSO at %" PRId64
                     " (high watermark %" PRId64 ") after the reopen",
                     nth, lso, hw);
        assert_int_equal(count_records(f->e, "ab", 0, RT_READ_COMMITTED), 0);
        assert_int_equal(count_records(f->e, "ab", 0, RT_READ_UNCOMMITTED), 1);
        assert_int_equal(rt_producer_close(again), 0);
        tu_fixture_close(f);
    }
    assert_true(failed >= 2); /* at least the marker's and its .txnindex entry's writes */
    tu_system("rm -rf '%s'", clean);
    free(clean);
}

/* CO4 and CO2: when phase two fails (here: the markers' fdatasync), the id stays PrepareCommit;
 * a producer request meanwhile is RT_E_CONCURRENT_TRANSACTIONS, and the next open completes the
 * commit with the same outcome. */
static void test_concurrent_transactions_and_completion(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o = f->o;
    o.shard_count = 1;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "out", 2), 0);
    rt_producer *p = txn_producer(e, "tx-c", 10000);
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(send_value(p, "out", 0, "prepared"), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    /* Fail from the second write on: the PrepareCommit is durable (CO9: the data was flushed
     * already, so it is the decision round's only write), its markers are not written. */
    plan.rules[0] = (struct io_fault_rule){
        .mode = IO_FAULT_FOREVER, .op = IO_OP_WRITE, .nth = plan.writes_seen + 2, .error = EIO};
    plan.rule_count = 1;
    assert_int_not_equal(rt_producer_commit(p, -1), 0);
    struct txn_seen seen = {0};
    int list_rc = 0;
    (void)list_rc;
    /* The id is left completing: a request now is a concurrent-transactions error. */
    /* (Partitions join at the coordinator when their first batch goes out: the error comes
     * with the flush.) */
    assert_int_equal(send_value(p, "out", 1, "meanwhile"), 0);
    assert_int_equal(rt_producer_flush(p, -1), RT_E_CONCURRENT_TRANSACTIONS);
    rt_producer_close(p);
    rt_close(e);
    io_fault_plan_release(&plan);
    (void)seen;
    tu_fixture_open(f); /* CO10: a PrepareCommit found at open with its data in is committed */
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), 1);
    int64_t lso = -1, hw = -1;
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    rt_list_offsets(f->e, "out", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
    assert_int_equal(lso, hw);
}

/* ---- concurrent commits sharing files (shard.c SH7, SH8, SH9) ---- */

#define GROUP_PRODUCERS 8
#define GROUP_TXNS      40
#define GROUP_PARTS     3
#define GROUP_PLAIN     200

struct group_worker {
    rt_engine *e;
    int id;
    int committed, aborted;
    int rc;
};

/* Each transaction sends "c<id>-<n>" (or "a<id>-<n>" for the aborted fifth) to two partitions
 * that other producers share, then commits or aborts it: many decisions meet in the shards'
 * rounds, where SH9 may hold them back for their group and SH7 runs the markers ahead. */
static void *group_main(void *arg)
{
    struct group_worker *w = arg;
    char id[32];
    snprintf(id, sizeof(id), "tx-group-%d", w->id);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = id;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    w->rc = rt_producer_open(w->e, &po, &p);
    if (w->rc == 0)
        w->rc = rt_producer_init_transactions(p, -1);
    for (int n = 0; w->rc == 0 && n < GROUP_TXNS; n++) {
        bool abort = n % 5 == 4;
        char v[32];
        snprintf(v, sizeof(v), "%c%d-%d", abort ? 'a' : 'c', w->id, n);
        w->rc = rt_producer_begin(p);
        for (int k = 0; w->rc == 0 && k < 2; k++)
            w->rc = send_value(p, "grp", (w->id + k) % GROUP_PARTS, v);
        if (w->rc == 0)
            w->rc = abort ? rt_producer_abort(p, -1) : rt_producer_commit(p, -1);
        if (w->rc == 0)
            *(abort ? &w->aborted : &w->committed) += 1;
    }
    if (p && rt_producer_close(p) && w->rc == 0)
        w->rc = -1;
    return NULL;
}

struct plain_worker {
    rt_engine *e;
    int appended;
    int rc;
};

/* Plain durable appends into a partition the transactions use, beside them: they end SH9's
 * wait, and their callers wait on their own requests (SH8). */
static void *plain_main(void *arg)
{
    struct plain_worker *w = arg;
    for (int n = 0; w->rc == 0 && n < GROUP_PLAIN; n++) {
        char v[32];
        snprintf(v, sizeof(v), "plain-%d", n);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = -1};
        w->rc = rt_append(w->e, "grp", 0, &r, 1, NULL);
        if (w->rc == 0)
            w->appended++;
    }
    return NULL;
}

/* Walks a partition at read_committed: every value once, each producer's committed values in
 * its commit order, no aborted value, and the plain appends in their order. Adds what it saw to
 * seen[id] and *plain. */
static void group_check_partition(rt_engine *e, uint32_t part, int *seen, int *plain)
{
    int last[GROUP_PRODUCERS], last_plain = -1;
    for (int i = 0; i < GROUP_PRODUCERS; i++)
        last[i] = -1;
    int64_t bound = 0, from = 0;
    assert_int_equal(rt_list_offsets(e, "grp", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &bound),
                     0);
    assert_int_equal(rt_list_offsets(e, "grp", part, RT_OFFSET_EARLIEST, RT_READ_COMMITTED, &from),
                     0);
    while (from < bound) {
        rt_fetch *fh;
        assert_int_equal(rt_fetch_start(e, "grp", part, from, 1 << 20, RT_READ_COMMITTED, &fh), 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, from);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            char buf[32];
            assert_true(r.value_len > 0 && r.value_len < (int32_t)sizeof(buf));
            memcpy(buf, r.value, (size_t)r.value_len);
            buf[r.value_len] = 0;
            int id = -1, n = -1;
            if (sscanf(buf, "plain-%d", &n) == 1) {
                assert_int_equal(n, last_plain + 1); /* in order, each once */
                last_plain = n;
                (*plain)++;
                continue;
            }
            if (buf[0] == 'a')
                fail_msg("partition %u: aborted value %s readable at read_committed", part, buf);
            assert_int_equal(sscanf(buf, "c%d-%d", &id, &n), 2);
            assert_true(id >= 0 && id < GROUP_PRODUCERS);
            if (n <= last[id])
                fail_msg("partition %u: %s after c%d-%d", part, buf, id, last[id]);
            last[id] = n;
            seen[id]++;
        }
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(v, from);
        rt_fetch_release(fh);
        if (next <= from)
            break;
        from = next;
    }
    int64_t lso = -1, hw = -1;
    assert_int_equal(rt_list_offsets(e, "grp", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(rt_list_offsets(e, "grp", part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                     0);
    assert_int_equal(lso, hw); /* nothing left open */
}

static void group_check(rt_engine *e, const struct group_worker *ws, const struct plain_worker *pw)
{
    int seen[GROUP_PRODUCERS] = {0}, plain = 0;
    for (uint32_t part = 0; part < GROUP_PARTS; part++)
        group_check_partition(e, part, seen, &plain);
    for (int i = 0; i < GROUP_PRODUCERS; i++)
        assert_int_equal(seen[i], 2 * ws[i].committed); /* both halves of every commit */
    assert_int_equal(plain, pw->appended);
}

/* SH7, SH8, SH9: eight transactional producers commit (and abort every fifth) concurrently over
 * three shared partitions while a thread appends plainly into one of them. Every commit that
 * returned is whole in both its partitions, in each producer's order, exactly once; no abort is
 * readable; the plain appends are all there in order; no transaction pins an LSO — and the same
 * after a reopen. */
static void test_concurrent_commits_share_rounds(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "grp", GROUP_PARTS), 0);
    struct group_worker ws[GROUP_PRODUCERS];
    pthread_t th[GROUP_PRODUCERS + 1];
    struct plain_worker pw = {.e = f->e};
    for (int i = 0; i < GROUP_PRODUCERS; i++) {
        ws[i] = (struct group_worker){.e = f->e, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, group_main, &ws[i]), 0);
    }
    assert_int_equal(pthread_create(&th[GROUP_PRODUCERS], NULL, plain_main, &pw), 0);
    for (int i = 0; i <= GROUP_PRODUCERS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < GROUP_PRODUCERS; i++) {
        if (ws[i].rc)
            fail_msg("producer %d: %s (%s)", i, rt_strerror(ws[i].rc), rt_error_detail());
        assert_int_equal(ws[i].committed + ws[i].aborted, GROUP_TXNS);
    }
    assert_int_equal(pw.rc, 0);
    assert_int_equal(pw.appended, GROUP_PLAIN);
    group_check(f->e, ws, &pw);
    tu_fixture_close(f);
    tu_fixture_open(f);
    group_check(f->e, ws, &pw);
}

/* CO6: many transactions do not grow the transaction log without bound. */
static void test_log_compaction(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    rt_producer *p = txn_producer(f->e, "tx-many", 10000);
    /* 2 records per transaction (CO9: PrepareCommit, CompleteCommit): past the 4096 at which
     * compaction starts. */
    for (int i = 0; i < 2100; i++) {
        assert_int_equal(rt_producer_begin(p), 0);
        assert_int_equal(send_value(p, "out", 0, "x"), 0);
        assert_int_equal(rt_producer_commit(p, -1), 0);
    }
    coordinator_tick(txn_coordinator(engine_txn(f->e)));
    int64_t start = -1, end = -1;
    rt_list_offsets(f->e, TXN_LOG_TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start);
    rt_list_offsets(f->e, TXN_LOG_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    assert_true(start > 0); /* older records were dropped */
    assert_true(end - start < 4800);
    assert_int_equal(rt_producer_close(p), 0);
    /* The state survives the compaction and a restart. */
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    tu_fixture_open(f);
    p = txn_producer(f->e, "tx-many", 10000);
    assert_int_equal(rt_producer_begin(p), 0);
    assert_int_equal(send_value(p, "out", 0, "after"), 0);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), 2101);
    assert_int_equal(rt_producer_close(p), 0);
}

/* Consume-transform-produce from 3 input to 3 output partitions with random aborts and
 * restarts (mid-transaction ones included): the output equals the input exactly once, and the
 * group's committed offsets always match the output (they commit in the same transactions). */
static void test_consume_transform_produce(void **state)
{
    struct tu_fixture *f = *state;
    enum { PER_PARTITION = 200 };
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "in", 3), 0);
    assert_int_equal(rt_topic_create(f->e, "out", 3), 0);
    for (uint32_t part = 0; part < 3; part++)
        for (int o = 0; o < PER_PARTITION; o++) {
            char v[32];
            snprintf(v, sizeof(v), "in-%u-%d", part, o);
            struct rt_record r = {
                .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = -1};
            assert_int_equal(rt_append(f->e, "in", part, &r, 1, NULL), 0);
        }
    unsigned seed = 4242;
    int restarts = 0, aborts = 0, commits = 0;
    bool done = false;
    while (!done) {
        /* As a Kafka application does: init the producer first (it aborts what the previous
         * incarnation left open, releasing its pending offsets), then position the consumer. */
        rt_producer *p = txn_producer(f->e, "ctp", 10000);
        struct rt_consumer_options co;
        rt_consumer_options_init(&co);
        co.group = "ctp";
        co.isolation = RT_READ_COMMITTED;
        rt_consumer *c = NULL;
        assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
        uint32_t parts[3] = {0, 1, 2};
        int rc = rt_consumer_assign(c, "in", parts, 3);
        if (rc)
            fprintf(stderr, "assign: %s\n", rt_error_detail());
        assert_int_equal(rc, 0);
        for (int round = 0; round < 40; round++) {
            assert_int_equal(rt_producer_begin(p), 0);
            int want = 1 + (int)(rand_r(&seed) % 25), got = 0;
            struct rt_record_view r;
            const char *topic;
            uint32_t part;
            while (got < want && rt_consumer_poll(c, &r, &topic, &part, 0) == 0) {
                char v[48];
                snprintf(v, sizeof(v), "OUT:%.*s", r.value_len, (const char *)r.value);
                assert_int_equal(send_value(p, "out", (int32_t)part, v), 0);
                got++;
            }
            struct rt_offset offs[3];
            size_t n = 0;
            assert_int_equal(rt_consumer_positions(c, offs, 3, &n), 0);
            assert_int_equal(rt_producer_send_offsets(p, "ctp", offs, n), 0);
            unsigned dice = rand_r(&seed) % 10;
            if (dice == 0) {
                restarts++; /* die mid-transaction: the next init aborts it */
                break;
            }
            if (dice <= 2) {
                assert_int_equal(rt_producer_abort(p, -1), 0);
                assert_int_equal(rt_consumer_rewind_to_committed(c), 0);
                aborts++;
            } else {
                assert_int_equal(rt_producer_commit(p, -1), 0);
                commits++;
                if (got == 0) {
                    done = true;
                    break;
                }
            }
        }
        rt_producer_close(p);
        rt_consumer_close(c);
        assert_int_equal(rt_close(f->e), 0);
        f->e = NULL;
        tu_fixture_open(f);
    }
    fprintf(stderr, "ctp: %d commits, %d aborts, %d restarts\n", commits, aborts, restarts);
    assert_true(aborts > 0 && restarts > 0);
    /* Exactly once, in order per partition, and the committed offsets equal the output. */
    for (uint32_t part = 0; part < 3; part++) {
        int64_t bound = 0, from = 0;
        int next = 0;
        rt_list_offsets(f->e, "out", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &bound);
        while (from < bound) {
            rt_fetch *fh;
            assert_int_equal(
                rt_fetch_start(f->e, "out", part, from, 1 << 20, RT_READ_COMMITTED, &fh), 0);
            struct rt_records it;
            struct rt_record_view r;
            rt_records_init(&it, fh, from);
            while (rt_records_next(&it, &r) == 0) {
                char want[48];
                snprintf(want, sizeof(want), "OUT:in-%u-%d", part, next);
                if (r.value_len != (int)strlen(want) || memcmp(r.value, want, strlen(want)))
                    fail_msg("out-%u offset %" PRId64 ": %.*s, expected %s", part, r.offset,
                             r.value_len, (const char *)r.value, want);
                next++;
            }
            int64_t nf = rt_records_next_offset(&it);
            rt_fetch_release(fh);
            assert_true(nf > from);
            from = nf;
        }
        assert_int_equal(next, PER_PARTITION);
        int64_t committed = -1;
        assert_int_equal(rt_group_fetch_offsets(f->e, "ctp", "in", part, true, &committed), 0);
        assert_int_equal(committed, PER_PARTITION);
    }
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_and_abort, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_commit_delivers_every_callback, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_zombie_fencing, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_timeout_aborts, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_transactional_id_expiry, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_check_back_commit, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_check_back_rollback, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_check_back_unknown_then_rollback, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_check_back_unknown_parked, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fault_at_every_step, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_abort_fault_publishes_nothing, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_power_loss_at_every_step, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_transactions_and_completion,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_commits_share_rounds, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_log_compaction, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_consume_transform_produce, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
