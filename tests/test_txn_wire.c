/*
 * test_txn_wire.c — the "Transactions over the wire" calls of ringtail.h, from outside, as
 * `ringtail serve` uses them for a Kafka client that keeps its own sequences:
 *   - rt_txn_init_producer hands out an id and bumps its epoch at every init; a timeout outside
 *     1..transaction_timeout_max_ms is RT_E_INVALID_TRANSACTION_TIMEOUT;
 *   - a transactional batch is accepted by rt_append_batch(_async) only for a partition added
 *     to its producer's Ongoing transaction at that epoch (RT_E_INVALID_TXN_STATE otherwise,
 *     also once the transaction has ended), and the producer keeps its epoch and sequences from
 *     one transaction to the next, across a reopen too;
 *   - rt_txn_end commits (visible to read_committed once it returns) or aborts (never visible);
 *   - a second init fences the first instance (RT_E_PRODUCER_FENCED) and aborts what it left;
 *   - transactional offsets are pending (RT_E_UNSTABLE_OFFSET_COMMIT) until the commit, dropped
 *     by an abort, and refused unless the group was added;
 *   - a transaction past its timeout is aborted by the engine and its producer fenced.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "ringtail_test.h"

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.transaction_timeout_max_ms = 60000;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 3), 0);
    return rc;
}

/* A transactional batch of n records (values "<tag><i>") for (pid, epoch) from sequence seq. */
static size_t txn_batch(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq, int n,
                        const char *tag)
{
    return tu_batch(buf, cap, BATCH_ATTR_TRANSACTIONAL, pid, epoch, seq, n, tag, 0, 1000);
}

static int append(rt_engine *e, uint32_t part, int64_t pid, int16_t epoch, int32_t seq, int n,
                  const char *tag)
{
    uint8_t buf[2048];
    size_t len = txn_batch(buf, sizeof(buf), pid, epoch, seq, n, tag);
    int64_t base = -1;
    return rt_append_batch(e, "t", part, buf, len, &base);
}

/* Records a read_committed reader sees in partition `part` from offset 0. */
static int committed_count(rt_engine *e, uint32_t part)
{
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.isolation = RT_READ_COMMITTED;
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(e, &co, &c), 0);
    assert_int_equal(rt_consumer_assign(c, "t", &part, 1), 0);
    int n = 0;
    struct rt_record_view r;
    const char *topic;
    uint32_t p;
    while (rt_consumer_poll(c, &r, &topic, &p, 0) == 0)
        n++;
    assert_int_equal(rt_consumer_close(c), 0);
    return n;
}

static int64_t lso(rt_engine *e, uint32_t part)
{
    int64_t o = -1;
    assert_int_equal(rt_list_offsets(e, "t", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &o), 0);
    return o;
}

static void test_init(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid = -1, pid2 = -1;
    int16_t epoch = -1, epoch2 = -1;
    assert_int_equal(rt_txn_init_producer(f->e, "a", 10000, &pid, &epoch), 0);
    assert_true(pid >= 0);
    assert_true(epoch >= 0);
    assert_int_equal(rt_txn_init_producer(f->e, "a", 10000, &pid2, &epoch2), 0);
    assert_int_equal(pid2, pid);
    assert_int_equal(epoch2, epoch + 1);
    assert_int_equal(rt_txn_init_producer(f->e, "a", 60001, &pid2, &epoch2),
                     RT_E_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(rt_txn_init_producer(f->e, "a", 0, &pid2, &epoch2),
                     RT_E_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(rt_txn_init_producer(f->e, "", 1000, &pid2, &epoch2), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_init_producer(f->e, NULL, 1000, &pid2, &epoch2), RT_E_INVALID_ARGUMENT);
    /* Calls for an id never initialised. */
    struct rt_topic_partition tp = {"t", 0};
    assert_int_equal(rt_txn_add_partitions(f->e, "never", pid, epoch, &tp, 1),
                     RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_end(f->e, "never", pid, epoch, true), RT_E_INVALID_TXN_STATE);
}

static void test_verify_and_end(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid;
    int16_t epoch;
    assert_int_equal(rt_txn_init_producer(f->e, "v", 10000, &pid, &epoch), 0);
    /* Nothing added: refused, nothing written. */
    assert_int_equal(append(f->e, 0, pid, epoch, 0, 2, "x"), RT_E_INVALID_TXN_STATE);
    struct rt_topic_partition tp = {"t", 0};
    assert_int_equal(rt_txn_add_partitions(f->e, "v", pid, epoch, &tp, 1), 0);
    assert_int_equal(append(f->e, 0, pid, epoch, 0, 2, "c"), 0);
    /* Partition 1 was not added. */
    assert_int_equal(append(f->e, 1, pid, epoch, 0, 2, "x"), RT_E_INVALID_TXN_STATE);
    /* An older or a newer epoch. */
    assert_int_equal(append(f->e, 0, pid, (int16_t)(epoch + 1), 0, 1, "x"),
                     RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(committed_count(f->e, 0), 0);
    assert_int_equal(lso(f->e, 0), 0); /* pinned by the open transaction */
    assert_int_equal(rt_txn_end(f->e, "v", pid, epoch, true), 0);
    assert_int_equal(committed_count(f->e, 0), 2); /* visible once end returned */
    /* Ended: a late batch of the same epoch is refused (it would open a transaction no one
     * ends). */
    assert_int_equal(append(f->e, 0, pid, epoch, 2, 1, "late"), RT_E_INVALID_TXN_STATE);
    /* A retried EndTxn answers 0 and writes nothing; the other outcome is refused (the
     * commit went through: it must not be reported aborted). */
    assert_int_equal(rt_txn_end(f->e, "v", pid, epoch, true), 0);
    assert_int_equal(rt_txn_end(f->e, "v", pid, epoch, false), RT_E_INVALID_TXN_STATE);
    assert_int_equal(lso(f->e, 0), 3);
    /* The next transaction: same epoch, sequences go on (the client's view before KIP-890
     * part 2); aborted, so never visible. */
    assert_int_equal(rt_txn_add_partitions(f->e, "v", pid, epoch, &tp, 1), 0);
    assert_int_equal(append(f->e, 0, pid, epoch, 2, 3, "a"), 0);
    assert_int_equal(rt_txn_end(f->e, "v", pid, epoch, false), 0);
    assert_int_equal(committed_count(f->e, 0), 2);
    assert_int_equal(lso(f->e, 0), 7); /* 2 + a marker + 3 + a marker */
    /* Across a reopen the identity and the sequences stay. */
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(rt_txn_add_partitions(f->e, "v", pid, epoch, &tp, 1), 0);
    assert_int_equal(append(f->e, 0, pid, epoch, 5, 1, "r"), 0);
    assert_int_equal(rt_txn_end(f->e, "v", pid, epoch, true), 0);
    assert_int_equal(committed_count(f->e, 0), 3);
    /* An internal topic or a partition that does not exist is refused, nothing added. */
    struct rt_topic_partition bad[2] = {{"t", 0}, {"t", 3}};
    assert_int_equal(rt_txn_add_partitions(f->e, "v", pid, epoch, bad, 2),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(append(f->e, 0, pid, epoch, 6, 1, "x"), RT_E_INVALID_TXN_STATE);
    struct rt_topic_partition internal = {"__consumer_offsets", 0};
    assert_int_equal(rt_txn_add_partitions(f->e, "v", pid, epoch, &internal, 1),
                     RT_E_INTERNAL_TOPIC);
}

static void on_done(void *ctx, int err, int64_t base, bool dup)
{
    (void)ctx;
    (void)err;
    (void)base;
    (void)dup;
}

static void test_verify_async(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid;
    int16_t epoch;
    assert_int_equal(rt_txn_init_producer(f->e, "as", 10000, &pid, &epoch), 0);
    uint8_t buf[2048];
    size_t len = txn_batch(buf, sizeof(buf), pid, epoch, 0, 1, "x");
    struct rt_append_op op;
    assert_int_equal(rt_append_batch_async(f->e, "t", 1, buf, len, &op, on_done, NULL),
                     RT_E_INVALID_TXN_STATE);
    assert_non_null(strstr(rt_error_detail(), "t-1"));
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(f->e, "t", 1, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    assert_int_equal(hw, 0); /* nothing written */
    /* A producer id no transactional id holds (an idempotent one) may not write transactional
     * batches at all. */
    int64_t anon;
    int16_t anon_epoch;
    assert_int_equal(rt_producer_id_allocate(f->e, &anon, &anon_epoch), 0);
    assert_int_equal(append(f->e, 1, anon, anon_epoch, 0, 1, "x"), RT_E_INVALID_TXN_STATE);
    /* Turned off, the partition's rules alone apply (tools writing raw batches). */
    assert_int_equal(rt_txn_verify_set(f->e, false), 0);
    assert_int_equal(append(f->e, 1, anon, anon_epoch, 0, 1, "x"), 0);
    assert_int_equal(rt_txn_verify_set(f->e, true), 0);
    assert_int_equal(append(f->e, 1, anon, anon_epoch, 1, 1, "x"), RT_E_INVALID_TXN_STATE);
}

static void test_fence(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid, pid2;
    int16_t epoch, epoch2;
    assert_int_equal(rt_txn_init_producer(f->e, "z", 10000, &pid, &epoch), 0);
    struct rt_topic_partition tp[2] = {{"t", 1}, {"t", 2}};
    assert_int_equal(rt_txn_add_partitions(f->e, "z", pid, epoch, tp, 2), 0);
    assert_int_equal(append(f->e, 1, pid, epoch, 0, 2, "z"), 0);
    assert_int_equal(append(f->e, 2, pid, epoch, 0, 2, "z"), 0);
    /* A second instance: the open transaction is aborted, the first instance fenced. */
    assert_int_equal(rt_txn_init_producer(f->e, "z", 10000, &pid2, &epoch2), 0);
    assert_int_equal(pid2, pid);
    assert_true(epoch2 > epoch);
    assert_int_equal(lso(f->e, 1), 3); /* released: 2 records + the ABORT marker */
    assert_int_equal(committed_count(f->e, 1), 0);
    assert_int_equal(committed_count(f->e, 2), 0);
    assert_int_equal(rt_txn_end(f->e, "z", pid, epoch, true), RT_E_PRODUCER_FENCED);
    assert_int_equal(rt_txn_add_partitions(f->e, "z", pid, epoch, tp, 1), RT_E_PRODUCER_FENCED);
    assert_int_equal(append(f->e, 1, pid, epoch, 2, 1, "zombie"), RT_E_INVALID_PRODUCER_EPOCH);
    /* The new instance works. */
    assert_int_equal(rt_txn_add_partitions(f->e, "z", pid2, epoch2, tp, 1), 0);
    assert_int_equal(append(f->e, 1, pid2, epoch2, 0, 4, "n"), 0);
    assert_int_equal(rt_txn_end(f->e, "z", pid2, epoch2, true), 0);
    assert_int_equal(committed_count(f->e, 1), 4);
}

static void test_offsets(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid;
    int16_t epoch;
    assert_int_equal(rt_txn_init_producer(f->e, "o", 10000, &pid, &epoch), 0);
    struct rt_offset off = {.topic = "t", .partition = 0, .offset = 7};
    /* Not added: refused. */
    assert_int_equal(rt_txn_commit_offsets(f->e, "o", pid, epoch, "g", &off, 1),
                     RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_add_offsets(f->e, "o", pid, epoch, "g"), 0);
    assert_int_equal(rt_txn_commit_offsets(f->e, "o", pid, epoch, "other", &off, 1) == 0, false);
    assert_int_equal(rt_txn_commit_offsets(f->e, "o", pid, epoch, "g", &off, 1), 0);
    int64_t got = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, true, &got),
                     RT_E_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, false, &got), 0);
    assert_int_equal(got, -1); /* pending: not committed yet */
    assert_int_equal(rt_txn_end(f->e, "o", pid, epoch, true), 0);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, true, &got), 0);
    assert_int_equal(got, 7);
    /* An aborted commit is dropped. */
    off.offset = 9;
    assert_int_equal(rt_txn_add_offsets(f->e, "o", pid, epoch, "g"), 0);
    assert_int_equal(rt_txn_commit_offsets(f->e, "o", pid, epoch, "g", &off, 1), 0);
    assert_int_equal(rt_txn_end(f->e, "o", pid, epoch, false), 0);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, true, &got), 0);
    assert_int_equal(got, 7);
    /* An offset for a partition that does not exist: nothing written. */
    struct rt_offset bad = {.topic = "t", .partition = 5, .offset = 1};
    assert_int_equal(rt_txn_add_offsets(f->e, "o", pid, epoch, "g"), 0);
    assert_int_equal(rt_txn_commit_offsets(f->e, "o", pid, epoch, "g", &bad, 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_txn_add_offsets(f->e, "o", pid, epoch, ""), RT_E_INVALID_ARGUMENT);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_timeout(void **state)
{
    struct tu_fixture *f = *state;
    int64_t pid;
    int16_t epoch;
    assert_int_equal(rt_txn_init_producer(f->e, "slow", 200, &pid, &epoch), 0);
    struct rt_topic_partition tp = {"t", 2};
    assert_int_equal(rt_txn_add_partitions(f->e, "slow", pid, epoch, &tp, 1), 0);
    assert_int_equal(append(f->e, 2, pid, epoch, 0, 3, "s"), 0);
    assert_int_equal(lso(f->e, 2), 0);
    /* The engine's timer aborts it: the LSO moves past it (bounded wait, no absolute time). */
    for (int i = 0; i < 600 && lso(f->e, 2) == 0; i++)
        sleep_ms(50);
    assert_int_equal(lso(f->e, 2), 4);
    assert_int_equal(committed_count(f->e, 2), 0);
    assert_int_equal(rt_txn_end(f->e, "slow", pid, epoch, true), RT_E_PRODUCER_FENCED);
    assert_int_equal(append(f->e, 2, pid, epoch, 3, 1, "s"), RT_E_INVALID_PRODUCER_EPOCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_verify_and_end, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_verify_async, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fence, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_offsets, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
