/*
 * test_producer_concurrency.c — a producer used from several threads at once, as ringtail.h's
 * thread rules allow, driven from outside through the public API only.
 *
 *   - Flush under load (PR7 in engine/client/producer.c): one thread sends without pause while
 *     another flushes. rt_producer_flush must return once the records sent before it began are
 *     acknowledged — their delivery callbacks have run — not wait for the batches other threads
 *     keep opening (Kafka's flush, librdkafka's rd_kafka_flush). Each flush is bounded by a
 *     generous timeout (RT_E_TIMED_OUT would be the failure); nothing asserts a duration.
 *   - Transactions racing their own sends (txn_add_pending in producer.c): several producers,
 *     each on its own thread, run many short transactions. A transaction's first send to a
 *     partition wakes the sender pool, whose pass joins the partition (coordinator_join) while
 *     this thread, after a random pause, asks for the same join itself from send_offsets,
 *     commit or abort, so the two joins of one partition sometimes run at once (measured while
 *     writing the test: a handful per run of 1 200 transactions). The guard that a join counts
 *     only if the producer's id and epoch are unchanged must hold: every commit and abort
 *     succeeds, read_committed serves exactly the committed records, each once, none of an
 *     aborted transaction, and read_uncommitted every record once. Meant for TSan too. (A join
 *     answered after its transaction ended was never seen: commit waits for the pool's
 *     hand-over, which holds the join, and abort's flush for the batches that need it.)
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/test_util.h"
#include "ringtail.h"

#define TOPIC            "conc"
#define FLUSH_TIMEOUT_MS 30000 /* generous: a flush that waits for the sender never gets there */
#define FLUSH_ROUNDS     5

/* ---- flush under load ------------------------------------------------------------------ */

struct sender {
    rt_producer *p;
    atomic_bool stop;
    atomic_int_fast64_t sent;      /* records whose rt_producer_send returned 0 */
    atomic_int_fast64_t delivered; /* delivery callbacks run (one partition: in send order) */
    atomic_int_fast64_t failed;    /* callbacks with an error */
    int send_rc;
};

static void on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    struct sender *s = ctx;
    (void)offset;
    (void)duplicate;
    if (err)
        atomic_fetch_add(&s->failed, 1);
    atomic_fetch_add(&s->delivered, 1);
}

static void *send_loop(void *arg)
{
    struct sender *s = arg;
    char v[64];
    for (int64_t i = 0; !atomic_load(&s->stop); i++) {
        int n = snprintf(v, sizeof(v), "record-%" PRId64, i);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = v, .value_len = n, .timestamp_ms = -1},
            .sequence = -1};
        int rc = rt_producer_send(s->p, TOPIC, 0, &m, on_delivery, s);
        if (rc != 0) {
            s->send_rc = rc;
            break;
        }
        atomic_fetch_add(&s->sent, 1);
    }
    return NULL;
}

/* While one thread sends without pause, each flush returns 0 and, when it does, every record
 * sent before it began has been delivered. The sender never stops meanwhile (it keeps opening
 * batches), which is what a flush that waited for every outstanding batch could not outlast. */
static void test_flush_returns_while_others_send(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_ALWAYS; /* acknowledgements take an fdatasync: sends outrun them */
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    /* Batches close when full or at the flush, so the sender always has one open: a flush that
     * waited for no batch to be outstanding would wait for the sender to stop. */
    po.linger_ms = 1000;
    po.batch_size_bytes = 256 * 1024;
    po.buffer_memory_bytes = 1u << 20; /* back-pressure keeps what a flush waits for small */
    struct sender s = {0};
    assert_int_equal(rt_producer_open(f->e, &po, &s.p), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, send_loop, &s), 0);
    for (int round = 0; round < FLUSH_ROUNDS; round++) {
        while (atomic_load(&s.sent) < (round + 1) * 2000 && s.send_rc == 0)
            ; /* let the sender get going (a count, not a time) */
        int64_t before = atomic_load(&s.sent);
        int rc = rt_producer_flush(s.p, FLUSH_TIMEOUT_MS);
        if (rc != 0)
            fail_msg("flush %d while another thread sends: %s (%s)", round, rt_strerror(rc),
                     rt_error_detail());
        int64_t delivered = atomic_load(&s.delivered);
        if (delivered < before)
            fail_msg("flush %d returned with %" PRId64 " of the %" PRId64
                     " records sent before it delivered",
                     round, delivered, before);
    }
    /* The sender never paused for the flushes: it stops only now. */
    atomic_store(&s.stop, true);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(s.send_rc, 0);
    assert_int_equal(rt_producer_flush(s.p, -1), 0); /* and now everything */
    assert_int_equal(atomic_load(&s.delivered), atomic_load(&s.sent));
    assert_int_equal(atomic_load(&s.failed), 0);
    assert_int_equal(rt_producer_close(s.p), 0);
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                     0);
    assert_int_equal(hw, atomic_load(&s.sent));
}

/* ---- transactions racing their own sends --------------------------------------------------- */

#define TXN_THREADS    4
#define TXN_PARTITIONS 4
#define TXN_ROUNDS     300
#define TXN_SENDS      3

struct txn_worker {
    rt_engine *e;
    int id;
    int failed_rc; /* the first call that failed */
    char failed_call[64];
    char failed_detail[256];
    int committed, aborted; /* records of committed / aborted transactions */
    uint64_t rng;           /* xorshift64 state */
};

static void worker_fail(struct txn_worker *w, const char *call, int rc)
{
    if (w->failed_rc)
        return;
    w->failed_rc = rc;
    snprintf(w->failed_call, sizeof(w->failed_call), "%s", call);
    snprintf(w->failed_detail, sizeof(w->failed_detail), "%s", rt_error_detail());
}

/* Short transactions, each sending to several partitions (the first send of each hands its
 * batch to the pool, which joins the partition, while this thread goes straight on to commit or
 * abort, which joins what is still pending itself), every fifth with consumer offsets, every
 * third aborted. Values: "<c|a>-<worker>-<round>-<k>". */
static void *txn_loop(void *arg)
{
    struct txn_worker *w = arg;
    char txn_id[32];
    snprintf(txn_id, sizeof(txn_id), "race-%d", w->id);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = txn_id;
    po.linger_ms = 0;
    rt_producer *p = NULL;
    int rc = rt_producer_open(w->e, &po, &p);
    if (rc == 0)
        rc = rt_producer_init_transactions(p, -1);
    if (rc != 0) {
        worker_fail(w, "open", rc);
        return NULL;
    }
    for (int round = 0; round < TXN_ROUNDS && !w->failed_rc; round++) {
        bool abort = round % 3 == 2;
        if ((rc = rt_producer_begin(p)) != 0) {
            worker_fail(w, "begin", rc);
            break;
        }
        for (int k = 0; k < TXN_SENDS; k++) {
            char v[64];
            int n = snprintf(v, sizeof(v), "%c-%d-%d-%d", abort ? 'a' : 'c', w->id, round, k);
            struct rt_producer_message m = {
                .record = {.key_len = -1, .value = v, .value_len = n, .timestamp_ms = -1},
                .sequence = -1};
            int32_t part = (w->id + round + k) % TXN_PARTITIONS;
            if ((rc = rt_producer_send(p, TOPIC, part, &m, NULL, NULL)) != 0) {
                worker_fail(w, "send", rc);
                break;
            }
        }
        if (w->failed_rc)
            break;
        /* A random pause (a count of spins, not a time) spreads the moment this thread asks
         * the coordinator against the moment the pool thread it woke does. */
        w->rng ^= w->rng << 13;
        w->rng ^= w->rng >> 7;
        w->rng ^= w->rng << 17;
        for (volatile uint64_t spin = w->rng % 20000; spin > 0; spin--)
            ;
        if (round % 5 == 0) {
            struct rt_offset off = {.topic = TOPIC, .partition = 0, .offset = round};
            char group[32];
            snprintf(group, sizeof(group), "g-%d", w->id);
            if ((rc = rt_producer_send_offsets(p, group, &off, 1)) != 0) {
                worker_fail(w, "send_offsets", rc);
                break;
            }
        }
        rc = abort ? rt_producer_abort(p, -1) : rt_producer_commit(p, -1);
        if (rc != 0) {
            worker_fail(w, abort ? "abort" : "commit", rc);
            break;
        }
        if (abort)
            w->aborted += TXN_SENDS;
        else
            w->committed += TXN_SENDS;
    }
    rc = rt_producer_close(p);
    if (rc != 0)
        worker_fail(w, "close", rc);
    return NULL;
}

/* Reads a partition from 0 to its end; counts values by their first letter and checks that no
 * value is served twice (the caller's seen[] holds every value read so far). */
struct seen {
    char (*values)[32];
    size_t count, cap;
};

static int cmp_value(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void read_partition(rt_engine *e, uint32_t part, enum rt_isolation iso, int *c, int *a,
                           struct seen *seen)
{
    int64_t end = -1, offset = 0;
    assert_int_equal(rt_list_offsets(e, TOPIC, part, RT_OFFSET_LATEST, iso, &end), 0);
    while (offset < end) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, part, offset, 1 << 20, iso, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view r;
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            assert_true(r.value_len > 0 && r.value_len < 32);
            if (((const char *)r.value)[0] == 'c')
                (*c)++;
            else
                (*a)++;
            if (seen) {
                if (seen->count == seen->cap) {
                    seen->cap = seen->cap ? seen->cap * 2 : 1024;
                    seen->values = realloc(seen->values, seen->cap * sizeof(*seen->values));
                    assert_non_null(seen->values);
                }
                snprintf(seen->values[seen->count++], 32, "%.*s", (int)r.value_len,
                         (const char *)r.value);
            }
        }
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(v, offset);
        rt_fetch_release(f);
        if (next <= offset)
            break;
        offset = next;
    }
}

/* The join a pool thread asks for and the one commit, abort or send_offsets asks for may run
 * at once (txn_add_pending drops the producer's lock around it). Every call succeeds, and the
 * log holds each committed record once under read_committed and every record once under
 * read_uncommitted — so no join counted for the wrong transaction (a partition the coordinator
 * never joined would fail the commit, or leave its records outside the transaction). */
static void test_txn_joins_race_commit_and_abort(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_NONE; /* many rounds; the race is in memory, not on the disk */
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, TXN_PARTITIONS), 0);
    struct txn_worker w[TXN_THREADS];
    pthread_t t[TXN_THREADS];
    for (int i = 0; i < TXN_THREADS; i++) {
        w[i] = (struct txn_worker){.e = f->e, .id = i, .rng = 0x9e3779b97f4a7c15ull * (i + 1)};
        assert_int_equal(pthread_create(&t[i], NULL, txn_loop, &w[i]), 0);
    }
    int committed = 0, aborted = 0;
    for (int i = 0; i < TXN_THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        if (w[i].failed_rc)
            fail_msg("worker %d: %s: %s (%s)", i, w[i].failed_call, rt_strerror(w[i].failed_rc),
                     w[i].failed_detail);
        committed += w[i].committed;
        aborted += w[i].aborted;
    }
    assert_int_equal(committed + aborted, TXN_THREADS * TXN_ROUNDS * TXN_SENDS);
    struct seen seen = {0};
    int rc_c = 0, rc_a = 0, ru_c = 0, ru_a = 0;
    for (uint32_t part = 0; part < TXN_PARTITIONS; part++) {
        read_partition(f->e, part, RT_READ_COMMITTED, &rc_c, &rc_a, &seen);
        read_partition(f->e, part, RT_READ_UNCOMMITTED, &ru_c, &ru_a, NULL);
    }
    assert_int_equal(rc_a, 0);         /* no aborted record under read_committed */
    assert_int_equal(rc_c, committed); /* every committed one */
    assert_int_equal(ru_c, committed); /* each stored once */
    assert_int_equal(ru_a, aborted);
    qsort(seen.values, seen.count, sizeof(*seen.values), cmp_value);
    for (size_t i = 1; i < seen.count; i++)
        if (strcmp(seen.values[i - 1], seen.values[i]) == 0)
            fail_msg("%s served twice under read_committed", seen.values[i]);
    free(seen.values);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_returns_while_others_send, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_txn_joins_race_commit_and_abort, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
