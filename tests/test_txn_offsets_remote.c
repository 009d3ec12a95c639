/*
 * test_txn_offsets_remote.c — transactional consumer offsets on a group coordinator that is
 * not the transaction's coordinator (issue 25 item 2, "txnoffsets"; docs/format.md H.7
 * TXO1-TXO5, ringtail.h rt_group_commit_txn_offsets).
 *
 * What it pins: two engines in one process. Engine A coordinates the transaction (InitProducerId,
 * AddOffsetsToTxn, EndTxn); engine B leads the group's `__consumer_offsets` partition and takes
 * the TxnOffsetCommit (rt_group_commit_txn_offsets). A's marker writer (G.8) hands every marker
 * for `__consumer_offsets` to B (rt_txn_write_marker), as a broker's WriteTxnMarkers would. On B
 * the offsets are pending (not fetched, unstable with require_stable, not listed) until A's end:
 * a commit makes them B's committed offsets, an abort drops them (TXO1). B refuses a commit
 * while it follows the partition (TXO2) and one from an older epoch of the producer (TXO3). A
 * restart of B, and a follower C that takes B's batches by rt_partition_append_replica and then
 * becomes the leader, rebuild the pending offsets from the log, and a marker there resolves
 * them (TXO4). The asynchronous form reports the same outcomes (TXO5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/test_util.h"
#include "ringtail.h"

#define OFFSETS "__consumer_offsets"
#define DATA    "t"
#define GROUP   "my-group" /* partition 2 of __consumer_offsets (format.md H.4's vector) */

/* A's marker writer: `__consumer_offsets` markers go to B (the group's leader), the rest to A. */
struct writer {
    rt_engine *a, *b;
    int to_b;
};

static int marker_writer(void *ctx, const struct rt_txn_marker *mk)
{
    struct writer *w = ctx;
    rt_engine *a = __atomic_load_n(&w->a, __ATOMIC_SEQ_CST);
    rt_engine *b = __atomic_load_n(&w->b, __ATOMIC_SEQ_CST);
    bool remote = strcmp(mk->topic, OFFSETS) == 0;
    rt_engine *to = remote ? b : a;
    if (!to)
        return -EAGAIN;
    if (remote)
        __atomic_add_fetch(&w->to_b, 1, __ATOMIC_SEQ_CST);
    return rt_txn_write_marker(to, mk->topic, mk->partition, mk->producer_id, mk->producer_epoch,
                               mk->commit);
}

static rt_engine *open_dir(const char *dir, struct writer *w)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    o.transaction_timeout_max_ms = 600000;
    if (w) {
        o.txn_marker_writer = marker_writer;
        o.txn_marker_writer_ctx = w;
    }
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

/* B's view of (GROUP, DATA, 0): the committed offset (-1: none) and whether one is pending. */
static int64_t fetched(rt_engine *e, bool *pending)
{
    struct rt_committed_offset *o = malloc(sizeof(*o));
    assert_non_null(o);
    int rc = rt_group_fetch_offset(e, GROUP, DATA, 0, false, o);
    assert_int_equal(rc, 0);
    int64_t off = o->offset;
    *pending = o->pending;
    rc = rt_group_fetch_offset(e, GROUP, DATA, 0, true, o);
    assert_int_equal(rc, *pending ? RT_E_UNSTABLE_OFFSET_COMMIT : 0);
    free(o);
    int64_t plain = -2;
    assert_int_equal(rt_group_fetch_offsets(e, GROUP, DATA, 0, false, &plain), 0);
    assert_int_equal(plain, off);
    return off;
}

static int count_listed(void *ctx, const char *topic, uint32_t partition,
                        const struct rt_committed_offset *o)
{
    (void)topic;
    (void)partition;
    (void)o;
    (*(int *)ctx)++;
    return 0;
}

static int listed(rt_engine *e)
{
    int n = 0;
    assert_int_equal(rt_group_list_offsets(e, GROUP, count_listed, &n), 0);
    return n;
}

static int commit_at(rt_engine *b, int64_t pid, int16_t epoch, int64_t offset)
{
    struct rt_offset o = {.topic = DATA, .partition = 0, .offset = offset};
    return rt_group_commit_txn_offsets(b, GROUP, pid, epoch, &o, 1);
}

/* A transaction of `tid` on A with the group's offsets partition added (AddOffsetsToTxn). */
static void txn_with_offsets(rt_engine *a, const char *tid, int64_t pid, int16_t epoch)
{
    assert_int_equal(rt_txn_add_offsets(a, tid, pid, epoch, GROUP), 0);
}

/* ---- the asynchronous form ---- */

struct wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int err;
    size_t deleted;
};

static void wait_done(void *ctx, int err, size_t deleted)
{
    struct wait *w = ctx; /* on a lane thread: no cmocka assertion here */
    pthread_mutex_lock(&w->mu);
    w->err = err;
    w->deleted = deleted;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int commit_async(rt_engine *b, int64_t pid, int16_t epoch, int64_t offset)
{
    struct wait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct rt_offset o = {.topic = DATA, .partition = 0, .offset = offset};
    struct rt_group_op op;
    int rc = rt_group_commit_txn_offsets_async(b, GROUP, pid, epoch, &o, 1, &op, wait_done, &w);
    if (rc)
        return rc;
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    assert_int_equal(w.deleted, 0);
    return w.err;
}

/* ---- replication of B's offsets partition to C (as test_replica_txn.c's fetcher) ---- */

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Every whole batch the leader holds from `at` on, appended to the follower as it is. */
static void replicate(rt_engine *leader, rt_engine *follower, uint32_t k)
{
    int64_t at = 0;
    assert_int_equal(
        rt_list_offsets(follower, OFFSETS, k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &at), 0);
    for (;;) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(leader, OFFSETS, k, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        size_t pos = 0;
        while (v->size_bytes - pos >= 61) {
            size_t len = 12 + (size_t)be(v->data + pos + 8, 4);
            if (len > v->size_bytes - pos)
                break;
            pos += len;
        }
        if (pos == 0) {
            rt_fetch_release(f);
            return;
        }
        int64_t end = -1;
        int rc = rt_partition_append_replica(follower, OFFSETS, k, v->data, pos, &end);
        rt_fetch_release(f);
        if (rc)
            fail_msg("append_replica at %" PRId64 ": %s", at, rt_error_detail());
        assert_true(end > at);
        at = end;
    }
}

struct world {
    char *dir[3];
    struct writer w;
    rt_engine *a, *b;
    uint32_t k;
};

static void world_open(struct world *x)
{
    memset(x, 0, sizeof(*x));
    for (int i = 0; i < 3; i++)
        x->dir[i] = tu_mkdtemp();
    x->a = open_dir(x->dir[0], &x->w);
    x->b = open_dir(x->dir[1], NULL);
    __atomic_store_n(&x->w.a, x->a, __ATOMIC_SEQ_CST);
    __atomic_store_n(&x->w.b, x->b, __ATOMIC_SEQ_CST);
    assert_int_equal(rt_topic_create(x->b, DATA, 1), 0);
    x->k = rt_group_partition(GROUP, strlen(GROUP));
    assert_int_equal(x->k, 2);
}

static void world_close(struct world *x)
{
    if (x->a)
        assert_int_equal(rt_close(x->a), 0);
    if (x->b)
        assert_int_equal(rt_close(x->b), 0);
    for (int i = 0; i < 3; i++)
        tu_rmdir_free(x->dir[i]);
}

/* TXO1: pending on B until A's end; a commit applies, an abort drops. */
static void test_commit_and_abort(void **state)
{
    (void)state;
    struct world x;
    world_open(&x);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(x.a, "tx", 600000, &pid, &epoch), 0);

    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(x.b, pid, epoch, 42), 0);
    bool pending = false;
    assert_int_equal(fetched(x.b, &pending), -1); /* invisible until the marker */
    assert_true(pending);
    assert_int_equal(listed(x.b), 0);
    /* A marker of the producer in another offsets partition does not resolve them (TXO1). */
    assert_int_equal(rt_txn_write_marker(x.b, OFFSETS, (x.k + 1) % RT_GROUP_OFFSETS_PARTITIONS, pid,
                                         epoch, true),
                     0);
    assert_int_equal(fetched(x.b, &pending), -1);
    assert_true(pending);
    /* A's engine knows nothing of it: its own group state is untouched. */
    assert_int_equal(fetched(x.a, &pending), -1);
    assert_false(pending);

    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, true), 0);
    assert_int_equal(__atomic_load_n(&x.w.to_b, __ATOMIC_SEQ_CST), 1);
    assert_int_equal(fetched(x.b, &pending), 42);
    assert_false(pending);
    assert_int_equal(listed(x.b), 1);

    /* The next transaction aborts: its offset is dropped, 42 stays. Two commits in it: the
     * later replaces the earlier (GO2). */
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(x.b, pid, epoch, 50), 0);
    assert_int_equal(commit_async(x.b, pid, epoch, 51), 0);
    assert_int_equal(fetched(x.b, &pending), 42);
    assert_true(pending);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, false), 0);
    assert_int_equal(fetched(x.b, &pending), 42);
    assert_false(pending);

    /* A third commits: the async commit's value is the one applied. */
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_async(x.b, pid, epoch, 60), 0);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, true), 0);
    assert_int_equal(fetched(x.b, &pending), 60);
    assert_false(pending);

    /* Arguments the engine refuses, nothing written. */
    assert_int_equal(commit_at(x.b, -1, 0, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(commit_at(x.b, pid, -1, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(commit_async(x.b, pid, -1, 1), RT_E_INVALID_ARGUMENT);
    struct rt_offset unknown = {.topic = "nope", .partition = 0, .offset = 1};
    assert_int_equal(rt_group_commit_txn_offsets(x.b, GROUP, pid, epoch, &unknown, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(fetched(x.b, &pending), 60);
    assert_false(pending);
    world_close(&x);
}

/* TXO2 and TXO3: a followed partition and an older epoch are refused, nothing written. */
static void test_refusals(void **state)
{
    (void)state;
    struct world x;
    world_open(&x);
    int64_t pid = -1;
    int16_t e0 = -1, e1 = -1;
    assert_int_equal(rt_txn_init_producer(x.a, "tx", 600000, &pid, &e0), 0);
    txn_with_offsets(x.a, "tx", pid, e0);
    assert_int_equal(commit_at(x.b, pid, e0, 10), 0);
    /* A new instance of the producer: the coordinator fences e0 (its ABORT marker, at the
     * bumped epoch, lands on B and drops 10), and the new epoch commits on B. */
    assert_int_equal(rt_txn_init_producer(x.a, "tx", 600000, &pid, &e1), 0);
    assert_true(e1 > e0);
    bool pending = false;
    assert_int_equal(fetched(x.b, &pending), -1);
    assert_false(pending);
    txn_with_offsets(x.a, "tx", pid, e1);
    assert_int_equal(commit_at(x.b, pid, e1, 20), 0);
    /* TXO3: the zombie at e0 is refused, synchronously and asynchronously. */
    assert_int_equal(commit_at(x.b, pid, e0, 11), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(commit_async(x.b, pid, e0, 12), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, e1, true), 0);
    assert_int_equal(fetched(x.b, &pending), 20); /* e1's, not a zombie's */
    assert_false(pending);

    /* TXO2: B follows the partition: refused, and nothing is written there. */
    int64_t end_before = -1, end_after = -1;
    assert_int_equal(
        rt_list_offsets(x.b, OFFSETS, x.k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end_before), 0);
    assert_int_equal(rt_partition_resign(x.b, OFFSETS, x.k), 0);
    assert_int_equal(commit_at(x.b, pid, e1, 30), RT_E_NOT_COORDINATOR);
    assert_int_equal(commit_async(x.b, pid, e1, 31), RT_E_NOT_COORDINATOR);
    assert_int_equal(
        rt_list_offsets(x.b, OFFSETS, x.k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end_after), 0);
    assert_int_equal(end_after, end_before);
    /* Leading it again: the committed offset is replayed, and commits are taken again. */
    assert_int_equal(rt_partition_become_leader(x.b, OFFSETS, x.k), 0);
    assert_int_equal(fetched(x.b, &pending), 20);
    assert_int_equal(commit_at(x.b, pid, e1, 30), 0);
    world_close(&x);
}

/* TXO4: a restart of B, and a follower C that becomes the leader, rebuild the pending offsets;
 * the marker there resolves them. */
static void test_replay(void **state)
{
    (void)state;
    struct world x;
    world_open(&x);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(x.a, "tx", 600000, &pid, &epoch), 0);
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(x.b, pid, epoch, 7), 0);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, true), 0); /* 7 committed */
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(x.b, pid, epoch, 8), 0); /* pending at the restart */

    /* B restarts while A's transaction is open: 8 is still pending, 7 committed. A's markers
     * wait meanwhile (the writer has no B). */
    __atomic_store_n(&x.w.b, NULL, __ATOMIC_SEQ_CST);
    assert_int_equal(rt_close(x.b), 0);
    x.b = open_dir(x.dir[1], NULL);
    bool pending = false;
    assert_int_equal(fetched(x.b, &pending), 7);
    assert_true(pending);
    /* The COMMIT marker (here by hand, as WriteTxnMarkers would) applies it. */
    assert_int_equal(rt_txn_write_marker(x.b, OFFSETS, x.k, pid, epoch, true), 0);
    assert_int_equal(fetched(x.b, &pending), 8);
    assert_false(pending);
    __atomic_store_n(&x.w.b, x.b, __ATOMIC_SEQ_CST);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, true), 0); /* a repeated marker: 0 */
    assert_int_equal(fetched(x.b, &pending), 8);

    /* C follows B's offsets partition, takes a pending commit by replication, and becomes
     * the leader: it rebuilds 9 as pending; an ABORT marker there drops it, a later COMMIT of
     * the next transaction applies 10. */
    rt_engine *c = open_dir(x.dir[2], NULL);
    assert_int_equal(rt_topic_create(c, DATA, 1), 0);
    assert_int_equal(rt_partition_resign(c, OFFSETS, x.k), 0);
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(x.b, pid, epoch, 9), 0);
    replicate(x.b, c, x.k);
    assert_int_equal(rt_partition_resign(x.b, OFFSETS, x.k), 0); /* B steps down */
    assert_int_equal(rt_partition_become_leader(c, OFFSETS, x.k), 0);
    assert_int_equal(fetched(c, &pending), 8);
    assert_true(pending);
    __atomic_store_n(&x.w.b, c, __ATOMIC_SEQ_CST); /* the writer finds the new leader */
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, false), 0);
    assert_int_equal(fetched(c, &pending), 8);
    assert_false(pending);
    txn_with_offsets(x.a, "tx", pid, epoch);
    assert_int_equal(commit_at(c, pid, epoch, 10), 0);
    assert_int_equal(commit_at(x.b, pid, epoch, 11), RT_E_NOT_COORDINATOR);
    assert_int_equal(rt_txn_end(x.a, "tx", pid, epoch, true), 0);
    assert_int_equal(fetched(c, &pending), 10);
    assert_false(pending);
    assert_int_equal(rt_close(c), 0);
    world_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_and_abort),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
