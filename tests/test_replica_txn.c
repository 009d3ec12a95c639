/*
 * test_replica_txn.c — `__transaction_state` replicated like any partition and the transaction
 * coordinator moved with its leadership (issue 25 item 1; coordinator.c CO16, txn.h TX5,
 * coordinator_reconcile.c COR9, partition.h RL6, docs/format.md A.10 "Internal partitions" and
 * G.7).
 *
 * What it pins: two engines in one process. Engine A leads `__transaction_state` and holds the
 * data partition; engine B, having resigned `__transaction_state`, answers no transactional call
 * (RT_E_NOT_COORDINATOR) while it takes A's batches of both partitions by
 * rt_partition_append_replica. On A, over the wire calls: one transaction committed, one left
 * open, and one whose commit decision (its 0x7203 PrepareCommit) is the last record B receives —
 * B's copy of the data partition stops before that commit's marker, so on B it is decided and not
 * marked. Then A resigns (its calls answer RT_E_NOT_COORDINATOR, its log takes no write of its
 * own) and B becomes leader: the committed transaction stays committed, the decided one is
 * completed (its COMMIT marker written by B: G.6 R1), the open one is fenced and aborted (its
 * epoch bumped: the old producer's EndTxn is RT_E_PRODUCER_FENCED, its batch
 * RT_E_INVALID_PRODUCER_EPOCH) and nothing is pinned; B runs the next transaction. A, now a
 * follower, truncates its transaction log to the common prefix and catches up from B.
 *
 * And the marker writer (coordinator.c CO17, docs/format.md G.8 MW1-MW5): with
 * rt_options.txn_marker_writer every marker of a decided transaction goes through it; while it
 * fails the commit is decided but pending (the end answers the writer's error, its retry
 * RT_E_CONCURRENT_TRANSACTIONS, the LSO stays pinned, the timer calls the writer again), and once
 * it writes (rt_txn_write_marker) the end's retry answers 0 and the records are visible.
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
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "ringtail.h"

#define TXNS "__transaction_state"
#define DATA "t"

static rt_engine *open_dir(const char *dir)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    o.transaction_timeout_max_ms = 600000;
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The end of the whole batches in [d, d + n) that end at or before `to` (every batch when `to`
 * is -1), as an offset; `from` when none does. Batch header: baseOffset at 0, batchLength at 8,
 * lastOffsetDelta at 23. *bytes_out: their length. */
static int64_t batches_upto(const uint8_t *d, size_t n, int64_t from, int64_t to, size_t *bytes_out)
{
    size_t pos = 0;
    int64_t at = from;
    while (n - pos >= 61) {
        size_t len = 12 + (size_t)be(d + pos + 8, 4);
        if (len > n - pos)
            break;
        int64_t last = (int64_t)be(d + pos, 8) + (int64_t)(int32_t)be(d + pos + 23, 4);
        if (to >= 0 && last + 1 > to)
            break;
        at = last + 1;
        pos += len;
    }
    *bytes_out = pos;
    return at;
}

/* The partition's log end, past any held high watermark (replica fetches to the last batch). */
static int64_t log_end(rt_engine *e, const char *topic)
{
    int64_t at = 0;
    for (;;) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, topic, 0, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        size_t bytes = 0;
        int64_t next = batches_upto(v->data, v->size_bytes, at, -1, &bytes);
        rt_fetch_release(f);
        if (next == at)
            return at;
        at = next;
    }
}

/* The end of the first batch at or after `at` in the leader's partition. */
static int64_t next_batch_end(rt_engine *e, const char *topic, int64_t at)
{
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, topic, 0, at, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_true(v->size_bytes >= 61);
    int64_t end = (int64_t)be(v->data, 8) + (int64_t)(int32_t)be(v->data + 23, 4) + 1;
    rt_fetch_release(f);
    return end;
}

/* The follower's fetcher: the leader's batches appended as they are, until the follower's log
 * end is `to` (a batch boundary of the leader's log). */
static void replicate(rt_engine *leader, rt_engine *follower, const char *topic, int64_t to)
{
    int64_t at = log_end(follower, topic);
    while (at < to) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(leader, topic, 0, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        size_t bytes = 0;
        int64_t upto = batches_upto(v->data, v->size_bytes, at, to, &bytes);
        assert_true(upto > at);
        int64_t end = -1;
        int rc = rt_partition_append_replica(follower, topic, 0, v->data, bytes, &end);
        if (rc)
            fail_msg("append_replica %s at %" PRId64 ": %s", topic, at, rt_error_detail());
        assert_int_equal(end, upto);
        at = end;
        rt_fetch_release(f);
    }
    assert_int_equal(at, to);
}

static int append(rt_engine *e, int64_t pid, int16_t epoch, int32_t seq, int n, const char *tag)
{
    uint8_t buf[2048];
    size_t len =
        tu_batch(buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, seq, n, tag, 0, 1000);
    int64_t base = -1;
    return rt_append_batch(e, DATA, 0, buf, len, &base);
}

/* A wire transaction of `tid` writing 2 records tagged `tag` into DATA-0, not ended. */
static void txn_begin(rt_engine *e, const char *tid, const char *tag, int64_t *pid, int16_t *epoch)
{
    assert_int_equal(rt_txn_init_producer(e, tid, 600000, pid, epoch), 0);
    struct rt_topic_partition tp = {DATA, 0};
    assert_int_equal(rt_txn_add_partitions(e, tid, *pid, *epoch, &tp, 1), 0);
    assert_int_equal(append(e, *pid, *epoch, 0, 2, tag), 0);
}

/* Records a read_committed reader sees in DATA-0, and how many of them carry `tag`. */
static int committed(rt_engine *e, const char *tag, int *tagged)
{
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.isolation = RT_READ_COMMITTED;
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(e, &co, &c), 0);
    uint32_t part = 0;
    assert_int_equal(rt_consumer_assign(c, DATA, &part, 1), 0);
    int n = 0;
    *tagged = 0;
    struct rt_record_view r;
    const char *topic;
    uint32_t p;
    size_t tl = strlen(tag);
    while (rt_consumer_poll(c, &r, &topic, &p, 0) == 0) {
        n++;
        if (getenv("RT_TEST_DEBUG"))
            fprintf(stderr, "offset %" PRId64 " value %.*s\n", r.offset, (int)r.value_len,
                    (const char *)r.value);
        if (r.value && (size_t)r.value_len >= tl && memcmp(r.value, tag, tl) == 0)
            (*tagged)++;
    }
    assert_int_equal(rt_consumer_close(c), 0);
    return n;
}

static int count_open(void *ctx, const struct rt_partition_txn *t)
{
    if (strcmp(t->topic, DATA) == 0)
        (*(int *)ctx)++;
    return 0;
}

static int open_txns(rt_engine *e)
{
    int n = 0;
    assert_int_equal(rt_txn_list_partitions(e, count_open, &n), 0);
    return n;
}

static int count_ids(void *ctx, const struct rt_txn_info *t)
{
    (void)t;
    (*(int *)ctx)++;
    return 0;
}

static void test_coordinator_fails_over(void **state)
{
    (void)state;
    char *dir[2] = {tu_mkdtemp(), tu_mkdtemp()};
    rt_engine *a = open_dir(dir[0]), *b = open_dir(dir[1]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(rt_topic_create(i ? b : a, DATA, 1), 0);

    /* B follows __transaction_state (created by the call): no coordinator answers there. */
    assert_int_equal(rt_partition_resign(b, TXNS, 0), 0);
    assert_int_equal(rt_partition_resign(b, TXNS, 0), 0); /* again: a no-op */
    assert_int_equal(rt_partition_resign(b, TXNS, 1), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(b, "t-commit", 600000, &pid, &epoch),
                     RT_E_NOT_COORDINATOR);

    /* On A: a committed transaction, one left open, and one whose commit is decided. */
    int64_t p1, p2, p3;
    int16_t e1, e2, e3;
    txn_begin(a, "t-commit", "c", &p1, &e1);
    assert_int_equal(rt_txn_end(a, "t-commit", p1, e1, true), 0);
    txn_begin(a, "t-open", "o", &p3, &e3);
    txn_begin(a, "t-decided", "d", &p2, &e2);
    /* A led internal partition takes no replica batch and no truncation (RL6). */
    assert_int_equal(rt_partition_truncate(a, TXNS, 0, 0, NULL), RT_E_INVALID_ARGUMENT);
    int64_t txn_cut = log_end(a, TXNS), data_cut = log_end(a, DATA);
    assert_int_equal(rt_txn_end(a, "t-decided", p2, e2, true), 0);
    int with_tag = 0;
    assert_int_equal(committed(a, "d", &with_tag), 2); /* t-open pins the LSO before it */
    assert_int_equal(with_tag, 0);
    /* The decision (the first record after the cut) reaches B; the data stops before its
     * marker; A's high watermark is what B holds (the leader's ISR minimum). */
    int64_t txn_to = next_batch_end(a, TXNS, txn_cut);
    replicate(a, b, TXNS, txn_to);
    replicate(a, b, DATA, data_cut);
    assert_int_equal(rt_partition_set_high_watermark(a, TXNS, 0, txn_to, NULL), 0);
    /* Following: the records are only a log on B. */
    assert_int_equal(rt_txn_end(b, "t-decided", p2, e2, true), RT_E_NOT_COORDINATOR);
    assert_int_equal(open_txns(b), 2); /* t-open's and t-decided's, unmarked */
    int ids = 0;
    assert_int_equal(rt_txn_list(b, count_ids, &ids), 0);
    assert_int_equal(ids, 0);

    /* A goes: it resigns (as the broker tells it; or it died). */
    assert_int_equal(rt_partition_resign(a, TXNS, 0), 0);
    assert_int_equal(rt_txn_init_producer(a, "t-commit", 600000, &pid, &epoch),
                     RT_E_NOT_COORDINATOR);
    struct rt_topic_partition tp = {DATA, 0};
    assert_int_equal(rt_txn_add_partitions(a, "t-open", p3, e3, &tp, 1), RT_E_NOT_COORDINATOR);
    assert_int_equal(rt_txn_end(a, "t-open", p3, e3, false), RT_E_NOT_COORDINATOR);
    assert_int_equal(rt_txn_abort(a, "t-open"), RT_E_NOT_COORDINATOR);
    /* The producer's next batch cannot be verified here either. */
    assert_int_equal(append(a, p3, e3, 2, 1, "z"), RT_E_NOT_COORDINATOR);
    ids = 0;
    assert_int_equal(rt_txn_list(a, count_ids, &ids), 0);
    assert_int_equal(ids, 0); /* its state is dropped */
    int64_t a_end = log_end(a, TXNS);

    /* B leads (a new leader epoch first, as the broker does): the state rebuilt from its log. */
    assert_int_equal(rt_partition_set_leader_epoch(b, TXNS, 0, 1), 0);
    assert_int_equal(rt_partition_become_leader(b, DATA, 0), 0);
    assert_int_equal(rt_partition_become_leader(b, TXNS, 0), 0);
    assert_int_equal(rt_partition_become_leader(b, TXNS, 0), 0); /* again: a no-op */
    int n = committed(b, "d", &with_tag);
    assert_int_equal(with_tag, 2); /* the decided commit completed by B (R1) */
    assert_int_equal(n, 4);        /* with t-commit's; t-open's aborted */
    n = committed(b, "o", &with_tag);
    assert_int_equal(with_tag, 0);
    assert_int_equal(open_txns(b), 0); /* nothing pinned: the LSO is the log end */
    int64_t lso = -1, end = -1;
    assert_int_equal(rt_list_offsets(b, DATA, 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(rt_list_offsets(b, DATA, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(lso, end);

    /* The open one's producer is fenced (its epoch bumped by B). */
    assert_int_equal(rt_txn_end(b, "t-open", p3, e3, true), RT_E_PRODUCER_FENCED);
    assert_int_equal(append(b, p3, e3, 2, 1, "z"), RT_E_INVALID_PRODUCER_EPOCH);
    int64_t p3b = -1;
    int16_t e3b = -1;
    assert_int_equal(rt_txn_init_producer(b, "t-open", 600000, &p3b, &e3b), 0);
    assert_int_equal(p3b, p3);
    assert_int_equal(e3b, e3 + 2); /* the fence's bump, then this init's */
    /* The decided one's retried EndTxn learns its outcome; the other outcome is refused. */
    assert_int_equal(rt_txn_end(b, "t-decided", p2, e2, true), 0);
    assert_int_equal(rt_txn_end(b, "t-decided", p2, e2, false), RT_E_INVALID_TXN_STATE);
    /* The committed one goes on at B: its next transaction commits there. */
    assert_int_equal(rt_txn_add_partitions(b, "t-commit", p1, e1, &tp, 1), 0);
    assert_int_equal(append(b, p1, e1, 2, 3, "n"), 0);
    assert_int_equal(rt_txn_end(b, "t-commit", p1, e1, true), 0);
    assert_int_equal(committed(b, "n", &with_tag), 7);
    assert_int_equal(with_tag, 3);

    /* A follows B: its log took nothing of its own, it truncates to the common prefix and
     * catches up (the replica calls work on a followed __transaction_state). */
    assert_int_equal(log_end(a, TXNS), a_end);
    assert_int_equal(rt_partition_truncate(a, TXNS, 0, txn_to, &end), 0);
    assert_int_equal(end, txn_to);
    int64_t b_end = log_end(b, TXNS);
    replicate(b, a, TXNS, b_end);
    assert_int_equal(log_end(a, TXNS), b_end);

    assert_int_equal(rt_close(a), 0);
    assert_int_equal(rt_close(b), 0);
    for (int i = 0; i < 2; i++)
        tu_rmdir_free(dir[i]);
}

/* ---- CO17: the marker writer (docs/format.md G.8) ---- */

struct writer {
    rt_engine *e; /* set once rt_open returned; read on the coordinator's threads */
    int calls;
    int fail; /* while set, every marker fails (a leader that cannot be reached) */
};

static int marker_writer(void *ctx, const struct rt_txn_marker *mk)
{
    struct writer *w = ctx;
    __atomic_add_fetch(&w->calls, 1, __ATOMIC_SEQ_CST);
    rt_engine *e = __atomic_load_n(&w->e, __ATOMIC_SEQ_CST);
    if (!e || __atomic_load_n(&w->fail, __ATOMIC_SEQ_CST))
        return -EAGAIN;
    return rt_txn_write_marker(e, mk->topic, mk->partition, mk->producer_id, mk->producer_epoch,
                               mk->commit);
}

static void test_marker_writer(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct writer w = {0};
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    o.transaction_timeout_max_ms = 600000;
    o.txn_marker_writer = marker_writer;
    o.txn_marker_writer_ctx = &w;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    __atomic_store_n(&w.e, e, __ATOMIC_SEQ_CST);
    assert_int_equal(rt_topic_create(e, DATA, 1), 0);

    /* Every marker goes through the writer, which writes it here (rt_txn_write_marker). */
    int64_t pid;
    int16_t epoch;
    txn_begin(e, "w", "a", &pid, &epoch);
    assert_int_equal(rt_txn_end(e, "w", pid, epoch, true), 0);
    assert_int_equal(__atomic_load_n(&w.calls, __ATOMIC_SEQ_CST), 1);
    int tagged = 0;
    assert_int_equal(committed(e, "a", &tagged), 2);
    assert_int_equal(tagged, 2);

    /* The partition's leader cannot be reached: the commit is decided, its marker pending, the
     * LSO pinned, the end's retry told to wait; the coordinator keeps calling the writer. */
    __atomic_store_n(&w.fail, 1, __ATOMIC_SEQ_CST);
    struct rt_topic_partition tp = {DATA, 0};
    assert_int_equal(rt_txn_add_partitions(e, "w", pid, epoch, &tp, 1), 0);
    assert_int_equal(append(e, pid, epoch, 2, 2, "b"), 0);
    assert_int_equal(rt_txn_end(e, "w", pid, epoch, true), -EAGAIN);
    assert_non_null(strstr(rt_error_detail(), "marker writer"));
    assert_int_equal(committed(e, "b", &tagged), 2);
    assert_int_equal(tagged, 0);
    assert_int_equal(open_txns(e), 1);
    assert_int_equal(rt_txn_end(e, "w", pid, epoch, true), RT_E_CONCURRENT_TRANSACTIONS);
    int calls = __atomic_load_n(&w.calls, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 2000 && __atomic_load_n(&w.calls, __ATOMIC_SEQ_CST) < calls + 2; i++)
        usleep(5000); /* the timer retries (CO15(b)); bounded so a missing retry fails */
    assert_true(__atomic_load_n(&w.calls, __ATOMIC_SEQ_CST) >= calls + 2);
    assert_int_equal(open_txns(e), 1);

    /* Reachable again: the next retry writes it, and the end's retry learns the commit. */
    __atomic_store_n(&w.fail, 0, __ATOMIC_SEQ_CST);
    int rc = RT_E_CONCURRENT_TRANSACTIONS;
    for (int i = 0; i < 2000 && rc == RT_E_CONCURRENT_TRANSACTIONS; i++) {
        rc = rt_txn_end(e, "w", pid, epoch, true);
        if (rc == RT_E_CONCURRENT_TRANSACTIONS)
            usleep(5000);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(committed(e, "b", &tagged), 4);
    assert_int_equal(tagged, 2);
    assert_int_equal(open_txns(e), 0);

    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coordinator_fails_over),
        cmocka_unit_test(test_marker_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
