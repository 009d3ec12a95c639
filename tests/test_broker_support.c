/*
 * test_broker_support.c — the engine calls `ringtail serve` is built on (the "Broker support"
 * section of ringtail.h), from outside, as the broker uses them:
 *   - rt_producer_id_allocate hands out distinct ids with epoch 0, never reused after a
 *     reopen, and the ids it gives are held to the producer rules by rt_append_batch;
 *   - granted producer-id blocks (opts.producer_ids_granted, rt_producer_id_grant): no id before
 *     a grant, ids only from the blocks granted and in order (the spare block after the first),
 *     RT_E_PRODUCER_IDS_EXHAUSTED when both are spent, no third block held, and after a reopen
 *     nothing until a new grant, never an id below the end of a block granted before (a grant
 *     below it gives nothing);
 *   - rt_append_watch_set: the watch is called after an append's round (and is quiet after
 *     removal);
 *   - rt_append_batch_async: returns at once, the completion carries the base offset, the
 *     producer rules (duplicate with the original offset, out-of-order, unknown producer id),
 *     immediate errors for a corrupt batch and an unknown partition (no completion), and the
 *     data is readable once the completion ran.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "ringtail.h"

/* Builds a batch of n records into buf (producer fields as given); returns its length. */
static size_t build(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq, int n)
{
    return tu_batch(buf, cap, 0, pid, epoch, seq, n, "v", seq, 1000);
}

struct done_box {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    int err;
    int64_t base;
    bool dup;
};

static void box_init(struct done_box *b)
{
    memset(b, 0, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
}

static void on_done(void *ctx, int err, int64_t base, bool dup)
{
    struct done_box *b = ctx;
    pthread_mutex_lock(&b->lock);
    b->calls++;
    b->err = err;
    b->base = base;
    b->dup = dup;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static void box_wait(struct done_box *b, int calls)
{
    pthread_mutex_lock(&b->lock);
    while (b->calls < calls)
        pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

static void test_producer_id_allocate(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    int64_t a = -1, b = -1;
    int16_t ea = -1, eb = -1;
    assert_int_equal(rt_producer_id_allocate(f->e, &a, &ea), 0);
    assert_int_equal(rt_producer_id_allocate(f->e, &b, &eb), 0);
    assert_true(a >= 0);
    assert_true(b >= 0);
    assert_true(a != b);
    assert_int_equal(ea, 0);
    assert_int_equal(eb, 0);
    assert_int_equal(rt_producer_id_allocate(f->e, NULL, &ea), RT_E_INVALID_ARGUMENT);

    /* The id is a real producer: sequence 0 appends, a retry is a duplicate, a gap is refused. */
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    uint8_t buf[4096];
    size_t len = build(buf, sizeof(buf), a, 0, 0, 3);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(f->e, "t", 0, buf, len, &base), 0);
    assert_int_equal(base, 0);
    len = build(buf, sizeof(buf), a, 0, 0, 3);
    assert_int_equal(rt_append_batch(f->e, "t", 0, buf, len, &base), 0);
    assert_int_equal(base, 0);
    len = build(buf, sizeof(buf), a, 0, 7, 1);
    assert_int_equal(rt_append_batch(f->e, "t", 0, buf, len, &base), RT_E_OUT_OF_ORDER_SEQUENCE);

    /* Never reused after a reopen. */
    tu_fixture_close(f);
    tu_fixture_open(f);
    int64_t c = -1;
    int16_t ec = -1;
    assert_int_equal(rt_producer_id_allocate(f->e, &c, &ec), 0);
    assert_true(c != a && c != b);
    assert_true(c > a && c > b);
}

static void test_producer_id_granted(void **state)
{
    struct tu_fixture *f = *state;
    f->o.producer_ids_granted = true;
    tu_fixture_open(f);
    int64_t id = -1, left = -1;
    int16_t ep = -1;
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), RT_E_PRODUCER_IDS_EXHAUSTED);
    assert_int_equal(rt_producer_id_available(f->e, &left), 0);
    assert_int_equal(left, 0);
    assert_int_equal(rt_producer_id_grant(f->e, 5000, 5002), 0);
    assert_int_equal(rt_producer_id_grant(f->e, 9000, 9001), 0); /* the spare */
    assert_int_equal(rt_producer_id_grant(f->e, 7000, 7001), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_id_grant(f->e, 10, 10), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_id_available(f->e, &left), 0);
    assert_int_equal(left, 3);
    const int64_t want[] = {5000, 5001, 9000};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), 0);
        assert_int_equal(id, want[i]);
        assert_int_equal(ep, 0);
    }
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), RT_E_PRODUCER_IDS_EXHAUSTED);
    /* A named producer's id comes from the blocks too (and producers.meta stays valid). */
    assert_int_equal(rt_producer_id_grant(f->e, 12000, 12010), 0);
    int64_t named = -1;
    assert_int_equal(rt_txn_init_producer(f->e, "app", 60000, &named, &ep), 0);
    assert_true(named >= 12000 && named < 12010);

    /* After a reopen: nothing until a grant, and a grant below what was handed out is skipped
     * up to it. */
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), RT_E_PRODUCER_IDS_EXHAUSTED);
    assert_int_equal(rt_producer_id_grant(f->e, 5000, 12005), 0); /* below producers.meta's */
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), RT_E_PRODUCER_IDS_EXHAUSTED);
    assert_int_equal(rt_producer_id_grant(f->e, 12000, 13000), 0); /* partly above it */
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), 0);
    assert_int_equal(id, 12010); /* the end of the block granted before the reopen */

    /* Without the option, grants are refused and the engine's own blocks serve. */
    tu_fixture_close(f);
    f->o.producer_ids_granted = false;
    tu_fixture_open(f);
    assert_int_equal(rt_producer_id_grant(f->e, 0, 1000), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_producer_id_allocate(f->e, &id, &ep), 0);
    assert_true(id >= 13000); /* past every block granted before (producers.meta) */
}

static void on_watch(void *ctx)
{
    atomic_fetch_add((_Atomic int *)ctx, 1);
}

static void test_append_watch(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    _Atomic int calls = 0;
    assert_int_equal(rt_append_watch_set(f->e, on_watch, &calls), 0);
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(f->e, "t", 0, &r, 1, NULL), 0);
    /* rt_append returns after the round completed; the watch ran in that round, before the
     * waiter was released. */
    assert_true(atomic_load(&calls) >= 1);
    int seen = atomic_load(&calls);
    assert_int_equal(rt_append(f->e, "t", 1, &r, 1, NULL), 0);
    assert_true(atomic_load(&calls) > seen);
    assert_int_equal(rt_append_watch_set(f->e, NULL, NULL), 0);
    seen = atomic_load(&calls);
    assert_int_equal(rt_append(f->e, "t", 0, &r, 1, NULL), 0);
    assert_int_equal(atomic_load(&calls), seen);
    assert_int_equal(rt_append_watch_set(NULL, on_watch, NULL), RT_E_INVALID_ARGUMENT);
}

static void test_append_batch_async(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_producer_id_allocate(f->e, &pid, &epoch), 0);

    static uint8_t bufs[4][4096];
    struct rt_append_op ops[4];
    struct done_box box;
    box_init(&box);

    size_t len = build(bufs[0], sizeof(bufs[0]), pid, epoch, 0, 5);
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[0], len, &ops[0], on_done, &box), 0);
    box_wait(&box, 1);
    assert_int_equal(box.err, 0);
    assert_int_equal(box.base, 0);
    assert_false(box.dup);

    /* Readable once the completion ran. */
    rt_fetch *fe = NULL;
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &fe), 0);
    assert_int_equal(rt_fetch_get(fe)->high_watermark, 5);
    rt_fetch_release(fe);

    /* A retry of the same batch: a duplicate with the original offset. */
    len = build(bufs[1], sizeof(bufs[1]), pid, epoch, 0, 5);
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[1], len, &ops[1], on_done, &box), 0);
    box_wait(&box, 2);
    assert_int_equal(box.err, 0);
    assert_int_equal(box.base, 0);
    assert_true(box.dup);

    /* A gap: out of order, reported through the completion. */
    len = build(bufs[2], sizeof(bufs[2]), pid, epoch, 9, 1);
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[2], len, &ops[2], on_done, &box), 0);
    box_wait(&box, 3);
    assert_int_equal(box.err, RT_E_OUT_OF_ORDER_SEQUENCE);
    assert_int_equal(box.base, -1);

    /* A producer id the partition never saw, starting above 0. */
    len = build(bufs[3], sizeof(bufs[3]), pid + 1000, 0, 4, 1);
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[3], len, &ops[3], on_done, &box), 0);
    box_wait(&box, 4);
    assert_int_equal(box.err, RT_E_UNKNOWN_PRODUCER_ID);

    /* Immediate errors: no completion. */
    len = build(bufs[0], sizeof(bufs[0]), -1, -1, -1, 2);
    bufs[0][len - 1] ^= 0x40; /* the CRC no longer matches */
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[0], len, &ops[0], on_done, &box),
                     RT_E_CORRUPT);
    len = build(bufs[0], sizeof(bufs[0]), -1, -1, -1, 2);
    assert_int_equal(rt_append_batch_async(f->e, "t", 3, bufs[0], len, &ops[0], on_done, &box),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_append_batch_async(f->e, "t", 0, bufs[0], len, NULL, on_done, &box),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(box.calls, 4);

    /* Many in flight at once from one thread (what a network loop does): all complete, with
     * distinct, dense offsets. */
    enum { N = 64 };
    static uint8_t many[N][256];
    static struct rt_append_op many_ops[N];
    struct done_box mbox;
    box_init(&mbox);
    for (int i = 0; i < N; i++) {
        size_t l = build(many[i], sizeof(many[i]), -1, -1, -1, 1);
        assert_int_equal(
            rt_append_batch_async(f->e, "t", 0, many[i], l, &many_ops[i], on_done, &mbox), 0);
    }
    box_wait(&mbox, N);
    assert_int_equal(mbox.err, 0);
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &fe), 0);
    assert_int_equal(rt_fetch_get(fe)->high_watermark, 5 + N);
    rt_fetch_release(fe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_producer_id_allocate, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_producer_id_granted, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_append_watch, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_append_batch_async, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
