/*
 * test_kafka_txn_async.c — the asynchronous transactional calls (ringtail.h "Transactions over
 * the wire", TX3/TX4 in engine/txn/txn.h), KIP-360's init with an expected identity (CO14 in
 * coordinator.c), and the broker parking its transactional requests (KT5 in handle_txn.c):
 *   - rt_txn_*_async calls submitted back to back for one id (init, add, end) run in submission
 *     order, each reported exactly once on an engine thread, with the identity init handed out;
 *   - rt_txn_init_producer_expected bumps the epoch for the identity the id holds, answers a
 *     retry of the last init without a second bump, aborts an Ongoing transaction of that
 *     identity (its records never readable), fences any other identity without changing
 *     anything, and gives a new id a fresh producer;
 *   - while one connection's EndTxn is held in its durable round (IO_FAULT_STALL on the
 *     decision record's fdatasync), a produce on another connection of the same network loop
 *     (--threads 1) is answered; then the EndTxn is answered NONE once the round is released;
 *   - while one connection's TxnOffsetCommit is held in its durable write (IO_FAULT_STALL on
 *     the __consumer_offsets fdatasync), produces on other connections of the same loop are
 *     answered; the commit is answered NONE once released (KT5);
 *   - AddOffsetsToTxn and EndTxn answer a fenced epoch INVALID_PRODUCER_EPOCH (47) at v0-1 and
 *     PRODUCER_FENCED (90) from v2 (KT1); TxnOffsetCommit v3 checks the consumer's generation
 *     and member against the group (KT7);
 *   - InitProducerId v3+ over the wire (once the lead advertises it: skipped until then) bumps
 *     with the expected identity and answers a stale one PRODUCER_FENCED (90) at v4;
 *   - DescribeTransactions and ListTransactions (KIP-664, handle_ops.c KOP1-KOP2; skipped until
 *     advertised): every id asked answered in order (TRANSACTIONAL_ID_NOT_FOUND 105 for an
 *     unknown one), state, timeout, producer, start time and partitions grouped by topic; the
 *     list's state, producer id and duration filters;
 *   - rt_partition_producers lists a partition's idempotent and transactional producers (last
 *     sequence, timestamp, open transaction's first offset), and DescribeProducers answers
 *     them per partition asked, UNKNOWN_TOPIC_OR_PARTITION (3) for one that does not exist
 *     (the wire half skipped until advertised).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback (the
 * stall test runs on the fault injector, whose rings are synchronous, whatever the backend).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

#define ID "tx-async"

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.transaction_timeout_max_ms = 60000;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    return rc;
}

/* A batch of n records in buf (transactional when txn), for (pid, epoch) from seq. */
static size_t make_batch(uint8_t *buf, size_t cap, bool txn, int64_t pid, int16_t epoch,
                         int32_t seq, int n)
{
    return tu_batch(buf, cap, txn ? BATCH_ATTR_TRANSACTIONAL : 0, pid, epoch, seq, n, "v", seq,
                    1000);
}

static int committed_count(rt_engine *e, const char *topic, uint32_t part)
{
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.isolation = RT_READ_COMMITTED;
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(e, &co, &c), 0);
    assert_int_equal(rt_consumer_assign(c, topic, &part, 1), 0);
    int n = 0;
    struct rt_record_view r;
    const char *t;
    uint32_t p;
    while (rt_consumer_poll(c, &r, &t, &p, 0) == 0)
        n++;
    assert_int_equal(rt_consumer_close(c), 0);
    return n;
}

/* ---- the asynchronous calls: order per id, exactly one report each (TX3) ---- */

struct report {
    _Atomic int calls;
    int err;
    int64_t pid;
    int16_t epoch;
    int order; /* the position among the reports (1-based) */
    pthread_t thread;
};

static _Atomic int reports_seen;

static void on_report(void *ctx, int err, int64_t pid, int16_t epoch)
{
    struct report *r = ctx;
    r->err = err;
    r->pid = pid;
    r->epoch = epoch;
    r->thread = pthread_self();
    r->order = atomic_fetch_add(&reports_seen, 1) + 1;
    atomic_fetch_add(&r->calls, 1);
}

static void wait_reports(int n)
{
    for (int i = 0; i < 10000 && atomic_load(&reports_seen) < n; i++)
        usleep(1000);
    assert_int_equal(atomic_load(&reports_seen), n);
}

static void test_async_order(void **state)
{
    struct tu_fixture *f = *state;
    atomic_store(&reports_seen, 0);
    struct rt_txn_op ops[4];
    struct report r[4];
    memset(r, 0, sizeof(r));
    /* The identity is known ahead: a new id's first init is epoch 0 of the next producer id;
     * add and end name it without waiting for the init's report. */
    assert_int_equal(rt_txn_init_producer_async(f->e, ID, 60000, -1, -1, &ops[0], on_report, &r[0]),
                     0);
    wait_reports(1);
    assert_int_equal(r[0].err, 0);
    int64_t pid = r[0].pid;
    int16_t epoch = r[0].epoch;
    assert_true(pid >= 0);
    assert_false(pthread_equal(r[0].thread, pthread_self())); /* an engine thread */
    uint8_t buf[512];
    size_t len = make_batch(buf, sizeof(buf), true, pid, epoch, 0, 3);
    struct rt_topic_partition tp = {"t", 0};
    assert_int_equal(
        rt_txn_add_partitions_async(f->e, ID, pid, epoch, &tp, 1, &ops[1], on_report, &r[1]), 0);
    wait_reports(2);
    assert_int_equal(r[1].err, 0);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(f->e, "t", 0, buf, len, &base), 0);
    /* Pipelined: the end, then a second end of the same outcome (a retry: 0, nothing written),
     * then an abort (the other outcome after the commit: RT_E_INVALID_TXN_STATE). Run out of
     * order, the retry would find the transaction open and the abort would abort it. */
    assert_int_equal(rt_txn_end_async(f->e, ID, pid, epoch, true, &ops[2], on_report, &r[2]), 0);
    assert_int_equal(rt_txn_end_async(f->e, ID, pid, epoch, true, &ops[3], on_report, &r[3]), 0);
    wait_reports(4);
    struct rt_txn_op op_abort;
    struct report ra;
    memset(&ra, 0, sizeof(ra));
    assert_int_equal(rt_txn_end_async(f->e, ID, pid, epoch, false, &op_abort, on_report, &ra), 0);
    wait_reports(5);
    for (int i = 0; i < 4; i++)
        assert_int_equal(atomic_load(&r[i].calls), 1);
    assert_int_equal(r[2].order, 3);
    assert_int_equal(r[3].order, 4);
    assert_int_equal(r[2].err, 0);
    assert_int_equal(r[3].err, 0);
    assert_int_equal(ra.err, RT_E_INVALID_TXN_STATE);
    assert_int_equal(committed_count(f->e, "t", 0), 3);
    /* Immediate errors: done is not called. */
    assert_int_equal(rt_txn_end_async(f->e, NULL, pid, epoch, true, &op_abort, on_report, &ra),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_end_async(f->e, ID, pid, epoch, true, &op_abort, NULL, &ra),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(atomic_load(&reports_seen), 5);
    /* Argument errors of the call itself arrive through done. */
    assert_int_equal(rt_txn_init_producer_async(f->e, ID, 0, -1, -1, &op_abort, on_report, &ra), 0);
    wait_reports(6);
    assert_int_equal(ra.err, RT_E_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(ra.pid, -1);
}

/* ---- KIP-360: init with the expected identity (CO14) ---- */

static void test_init_expected(void **state)
{
    struct tu_fixture *f = *state;
    rt_engine *e = f->e;
    int64_t pid = -1, p2 = -1;
    int16_t epoch = -1, e2 = -1;
    assert_int_equal(rt_txn_init_producer(e, ID, 60000, &pid, &epoch), 0);
    assert_int_equal(epoch, 0);
    /* The identity held: bumped. */
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, 0, &p2, &e2), 0);
    assert_int_equal(p2, pid);
    assert_int_equal(e2, 1);
    /* The same request again (its answer lost): a retry, the same answer, no second bump. */
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, 0, &p2, &e2), 0);
    assert_int_equal(p2, pid);
    assert_int_equal(e2, 1);
    /* A transaction at epoch 1 with data. */
    struct rt_topic_partition tp = {"t", 1};
    assert_int_equal(rt_txn_add_partitions(e, ID, pid, 1, &tp, 1), 0);
    uint8_t buf[512];
    size_t len = make_batch(buf, sizeof(buf), true, pid, 1, 0, 4);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(e, "t", 1, buf, len, &base), 0);
    /* Stale identities are fenced and change nothing: the epoch the retry named (no longer a
     * retry: the id has moved on), a newer epoch, another producer id. */
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, 0, &p2, &e2),
                     RT_E_PRODUCER_FENCED);
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, 7, &p2, &e2),
                     RT_E_PRODUCER_FENCED);
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid + 100, 1, &p2, &e2),
                     RT_E_PRODUCER_FENCED);
    assert_int_equal(committed_count(e, "t", 1), 0);
    /* The producer recovers: its Ongoing transaction is aborted, the epoch bumped past the
     * fence's (markers at 2, the producer at 3). */
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, 1, &p2, &e2), 0);
    assert_int_equal(p2, pid);
    assert_int_equal(e2, 3);
    assert_int_equal(rt_txn_end(e, ID, pid, 1, true), RT_E_PRODUCER_FENCED);
    /* The aborted records never become readable; the next transaction's do. */
    assert_int_equal(rt_txn_add_partitions(e, ID, pid, 3, &tp, 1), 0);
    len = make_batch(buf, sizeof(buf), true, pid, 3, 0, 2);
    assert_int_equal(rt_append_batch(e, "t", 1, buf, len, &base), 0);
    assert_int_equal(rt_txn_end(e, ID, pid, 3, true), 0);
    assert_int_equal(committed_count(e, "t", 1), 2);
    /* A new id with an expected identity: a fresh producer (KIP-360's UNKNOWN_PRODUCER_ID
     * recovery), as without one. */
    assert_int_equal(rt_txn_init_producer_expected(e, "tx-new", 60000, pid, 3, &p2, &e2), 0);
    assert_true(p2 != pid);
    assert_int_equal(e2, 0);
    /* Half a pair is an argument error. */
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, pid, -1, &p2, &e2),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_init_producer_expected(e, ID, 60000, -1, 2, &p2, &e2),
                     RT_E_INVALID_ARGUMENT);
}

/* ---- the broker: no transactional request waits on a loop thread (KT5) ---- */

struct wire {
    struct kafka_server *srv;
    int32_t corr;
};

static int dial(struct wire *x)
{
    return tk_dial(kafka_server_port(x->srv), 20);
}

static void req_begin(struct wire *x, struct kp_writer *w, int16_t key, int16_t version)
{
    tk_request_begin(w, key, version, ++x->corr, "test_kafka_txn_async");
}

/* One response into *buf (malloc'd); a reader past the correlation id (and the header's tags
 * when flexible_header). */
static void resp_read(int sock, uint8_t **buf, struct kp_reader *r, bool flexible_header)
{
    int32_t corr = 0;
    if (tk_response_read(sock, buf, r, flexible_header, &corr) < 0)
        fail_msg("the broker closed the connection (or 20 s passed) instead of answering");
}

/* InitProducerId (v1, or v3+ with the expected identity): the error, *pid and *epoch. */
static int16_t wire_init(struct wire *x, int sock, int16_t v, int64_t expected_pid,
                         int16_t expected_epoch, int64_t *pid, int16_t *epoch)
{
    bool flex = v >= 2;
    struct kp_writer w;
    req_begin(x, &w, KAFKA_INIT_PRODUCER_ID, v);
    kp_write_nstr(&w, flex, kp_str_of(ID));
    kp_write_i32(&w, 60000);
    if (v >= 3) {
        kp_write_i64(&w, expected_pid);
        kp_write_i16(&w, expected_epoch);
    }
    kp_write_tags(&w, flex);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, flex);
    (void)kp_read_i32(&r);
    int16_t err = kp_read_i16(&r);
    *pid = kp_read_i64(&r);
    *epoch = kp_read_i16(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

static int16_t wire_add_partition(struct wire *x, int sock, int64_t pid, int16_t epoch,
                                  const char *topic, int32_t part)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_ADD_PARTITIONS_TO_TXN, 1);
    kp_write_string(&w, kp_str_of(ID));
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, part);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, false);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    (void)kp_read_string(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), part);
    int16_t err = kp_read_i16(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

static void send_produce(struct wire *x, int sock, const char *topic, int32_t part,
                         const char *txn_id, const uint8_t *batch, size_t len)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_PRODUCE, 7);
    kp_write_nullable_string(&w, txn_id ? kp_str_of(txn_id) : (struct kp_str){NULL, -1});
    kp_write_i16(&w, -1);
    kp_write_i32(&w, 30000);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, part);
    kp_write_bytes(&w, (struct kp_bytes){batch, (int32_t)len});
    tk_request_send(sock, &w);
}

static int16_t read_produce(int sock)
{
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, false);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    (void)kp_read_string(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    (void)kp_read_i32(&r);
    int16_t err = kp_read_i16(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

static void send_end(struct wire *x, int sock, int64_t pid, int16_t epoch, bool commit)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_END_TXN, 1);
    kp_write_string(&w, kp_str_of(ID));
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    kp_write_bool(&w, commit);
    tk_request_send(sock, &w);
}

static int16_t read_code(int sock)
{
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, false);
    (void)kp_read_i32(&r);
    int16_t err = kp_read_i16(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

#define PLAIN_PARTS 4

/* The KT5 tests' broker: the fixture's engine closed and its directory reopened afresh over
 * the fault backend (plan armed for stalls, none yet) with two shards, topics "t" (1) and
 * "plain" (PLAIN_PARTS), and a server whose connections all share one loop. Returns the
 * transactional connection, InitProducerId done for ID (*pid, *epoch). */
static int one_loop_start(struct tu_fixture *f, struct io_fault_plan *plan, rt_engine **e,
                          struct wire *x, int64_t *pid, int16_t *epoch)
{
    tu_fixture_close(f);
    tu_system("rm -rf '%s'", f->dir);
    memset(plan, 0, sizeof(*plan));
    plan->stall_timeout_ms = 8000; /* far beyond the tests' waits; a hang fails (FI1) */
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.sync_mode = RT_SYNC_ALWAYS;
    assert_int_equal(rt_test_open(f->dir, &o, plan, e), 0);
    assert_int_equal(rt_topic_create(*e, "t", 1), 0);
    assert_int_equal(rt_topic_create(*e, "plain", PLAIN_PARTS), 0);
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1; /* every connection on one loop */
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    so.auto_create_topics = false;
    assert_int_equal(kafka_server_start(*e, &so, &x->srv), 0);
    int a = dial(x);
    assert_int_equal(wire_init(x, a, 1, -1, -1, pid, epoch), KAFKA_NONE);
    return a;
}

/* While `held`'s request is held in its stalled durable write: a plain produce on a new
 * connection b[p] of the same loop to each partition of "plain", polled up to 3 s until one is
 * answered. Then *held_answered says whether `held` had its answer already, *stalled how many
 * ops were stalled, and the stall is released. Returns how many produces were answered. */
static int plain_produces_answered(struct wire *x, int held, struct io_fault_plan *plan,
                                   int b[PLAIN_PARTS], bool *held_answered, uint32_t *stalled)
{
    uint8_t buf[512];
    for (int p = 0; p < PLAIN_PARTS; p++) {
        b[p] = dial(x);
        size_t len = make_batch(buf, sizeof(buf), false, -1, -1, -1, 1);
        send_produce(x, b[p], "plain", p, NULL, buf, len);
    }
    struct pollfd pf[PLAIN_PARTS + 1];
    for (int p = 0; p < PLAIN_PARTS; p++)
        pf[p] = (struct pollfd){.fd = b[p], .events = POLLIN};
    pf[PLAIN_PARTS] = (struct pollfd){.fd = held, .events = POLLIN};
    int answered = 0;
    for (int i = 0; i < 60 && answered == 0; i++) {
        assert_true(poll(pf, PLAIN_PARTS, 50) >= 0);
        for (int p = 0; p < PLAIN_PARTS; p++)
            answered += (pf[p].revents & POLLIN) != 0;
    }
    *held_answered = poll(&pf[PLAIN_PARTS], 1, 0) == 1;
    *stalled = plan->stalled;
    io_fault_stall_release(plan);
    return answered;
}

/* Undoes one_loop_start and gives the fixture its engine back. */
static void one_loop_stop(struct tu_fixture *f, struct io_fault_plan *plan, rt_engine *e,
                          struct wire *x)
{
    kafka_server_stop(x->srv);
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(plan);
    tu_fixture_open(f);
}

static void test_end_txn_does_not_block_the_loop(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    rt_engine *e = NULL;
    struct wire x = {0};
    int64_t pid = -1;
    int16_t epoch = -1;
    int a = one_loop_start(f, &plan, &e, &x, &pid, &epoch);
    assert_int_equal(wire_add_partition(&x, a, pid, epoch, "t", 0), KAFKA_NONE);
    uint8_t buf[512];
    size_t len = make_batch(buf, sizeof(buf), true, pid, epoch, 0, 3);
    send_produce(&x, a, "t", 0, ID, buf, len);
    assert_int_equal(read_produce(a), KAFKA_NONE);

    /* EndTxn held in its durable round: the decision record's fdatasync stalls. */
    struct io_fault_rule stall = {.mode = IO_FAULT_STALL,
                                  .op = IO_OP_FDATASYNC,
                                  .nth = 1,
                                  .path_contains = "__transaction_state"};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    send_end(&x, a, pid, epoch, true);
    if (io_fault_stall_wait(&plan, 5000) != 0)
        fail_msg("EndTxn never reached its decision record's fdatasync");

    /* Plain produces on other connections of the same loop, one per partition (the shard that
     * holds __transaction_state is stalled; the other shard's partitions answer). */
    int b[PLAIN_PARTS];
    bool end_answered = true;
    uint32_t stalled = 0;
    int answered = plain_produces_answered(&x, a, &plan, b, &end_answered, &stalled);
    if (answered == 0)
        fail_msg("no produce on another connection of the loop was answered in 3 s while an "
                 "EndTxn was held in its durable round (the loop thread waits for the disk)");
    assert_false(end_answered); /* KT2: not before its round is durable */
    assert_int_equal(stalled, 1);
    assert_int_equal(read_code(a), KAFKA_NONE);
    for (int p = 0; p < PLAIN_PARTS; p++) {
        assert_int_equal(read_produce(b[p]), KAFKA_NONE);
        close(b[p]);
    }
    assert_int_equal(committed_count(e, "t", 0), 3);
    assert_int_equal(plan.stall_timeouts, 0);
    close(a);
    one_loop_stop(f, &plan, e, &x);
}

/* ---- TxnOffsetCommit and the flexible versions (v3) of the transactional APIs ---- */

/* AddOffsetsToTxn (v0-3) for ID; the error. */
static int16_t wire_add_offsets(struct wire *x, int sock, int16_t v, int64_t pid, int16_t epoch,
                                const char *group)
{
    bool flex = v >= 3;
    struct kp_writer w;
    req_begin(x, &w, KAFKA_ADD_OFFSETS_TO_TXN, v);
    kp_write_cstr(&w, flex, ID);
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    kp_write_cstr(&w, flex, group);
    kp_write_tags(&w, flex);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, flex);
    (void)kp_read_i32(&r);
    int16_t err = kp_read_i16(&r);
    kp_read_tags(&r, flex);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

/* TxnOffsetCommit (v0-3) of one offset of topic-part for ID into group; v3 carries the
 * consumer's generation and member (KIP-447). */
static void send_txn_commit(struct wire *x, int sock, int16_t v, int64_t pid, int16_t epoch,
                            const char *group, int32_t generation, const char *member,
                            const char *topic, int32_t part, int64_t offset)
{
    bool flex = v >= 3;
    struct kp_writer w;
    req_begin(x, &w, KAFKA_TXN_OFFSET_COMMIT, v);
    kp_write_cstr(&w, flex, ID);
    kp_write_cstr(&w, flex, group);
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    if (v >= 3) {
        kp_write_i32(&w, generation);
        kp_write_cstr(&w, flex, member);
        kp_write_ncstr(&w, flex, NULL); /* group_instance_id */
    }
    kp_write_alen(&w, flex, 1);
    kp_write_cstr(&w, flex, topic);
    kp_write_alen(&w, flex, 1);
    kp_write_i32(&w, part);
    kp_write_i64(&w, offset);
    if (v >= 2)
        kp_write_i32(&w, -1); /* committed_leader_epoch */
    kp_write_ncstr(&w, flex, "meta");
    kp_write_tags(&w, flex);
    kp_write_tags(&w, flex);
    kp_write_tags(&w, flex);
    tk_request_send(sock, &w);
}

/* The one partition's code of a TxnOffsetCommit answer. */
static int16_t read_txn_commit(int sock, int16_t v, int32_t part)
{
    bool flex = v >= 3;
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, flex);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_alen(&r, flex, 1), 1);
    (void)kp_read_str(&r, flex);
    assert_int_equal(kp_read_alen(&r, flex, 1), 1);
    assert_int_equal(kp_read_i32(&r), part);
    int16_t err = kp_read_i16(&r);
    kp_read_tags(&r, flex);
    kp_read_tags(&r, flex);
    kp_read_tags(&r, flex);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

/* EndTxn (v0-3) for ID: the error. */
static int16_t wire_end(struct wire *x, int sock, int16_t v, int64_t pid, int16_t epoch,
                        bool commit)
{
    bool flex = v >= 3;
    struct kp_writer w;
    req_begin(x, &w, KAFKA_END_TXN, v);
    kp_write_cstr(&w, flex, ID);
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    kp_write_bool(&w, commit);
    kp_write_tags(&w, flex);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, flex);
    (void)kp_read_i32(&r);
    int16_t err = kp_read_i16(&r);
    kp_read_tags(&r, flex);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

/* KS4's tests: connection a has its request stalled in a directory change (the test's stall
 * rule); waits for the stall, shows plain produces on other connections of the same loop
 * answered while `held` is not, then reads those produces. `what` names the held request. */
static void loop_serves_others_while_held(struct wire *x, int a, struct io_fault_plan *plan,
                                          const char *what)
{
    if (io_fault_stall_wait(plan, 5000) != 0)
        fail_msg("%s never reached its directory change", what);
    int b[PLAIN_PARTS];
    bool held_answered = true;
    uint32_t stalled = 0;
    int answered = plain_produces_answered(x, a, plan, b, &held_answered, &stalled);
    if (answered == 0)
        fail_msg("no produce on another connection of the loop was answered in 3 s while %s was "
                 "held in its directory change (the loop thread waits for the disk)",
                 what);
    assert_false(held_answered); /* not before its durable change */
    assert_int_equal(stalled, 1);
    for (int p = 0; p < PLAIN_PARTS; p++) {
        assert_int_equal(read_produce(b[p]), KAFKA_NONE);
        close(b[p]);
    }
}

/* server.c KS4: a Produce that names a topic auto-creation must create runs on the admin
 * thread too. While the new topic's directory change is stalled, plain produces on other
 * connections of the same loop are answered; the produce to the new topic is answered (and
 * stored) once the stall is released. */
static void test_produce_creating_a_topic_does_not_block_the_loop(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    rt_engine *e = NULL;
    struct wire x = {0};
    int64_t pid = -1;
    int16_t epoch = -1;
    int a = one_loop_start(f, &plan, &e, &x, &pid, &epoch);
    /* one_loop_start's server does not auto-create; this test's does (read per request, and no
     * request is in flight yet). */
    x.srv->opts.auto_create_topics = true;
    struct io_fault_rule stall = {
        .mode = IO_FAULT_STALL, .op = IO_OP_DIR_ENTRY, .nth = 1, .path_contains = "np-0"};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    uint8_t batch[512];
    size_t len = make_batch(batch, sizeof(batch), false, -1, -1, -1, 2);
    send_produce(&x, a, "np", 0, NULL, batch, len);
    loop_serves_others_while_held(&x, a, &plan, "a produce creating its topic");
    assert_int_equal(read_produce(a), KAFKA_NONE);
    assert_int_equal(committed_count(e, "np", 0), 2);
    assert_int_equal(plan.stall_timeouts, 0);
    close(a);
    one_loop_stop(f, &plan, e, &x);
}

/* server.c KS4, api_table.c KA7: CreateTopics runs on the admin thread, not the loop thread.
 * While its topic creation is held in a stalled directory change (the new partition's
 * directory), plain produces on other connections of the same loop are answered; CreateTopics
 * is answered only after the stall is released, and the topic exists. */
static void test_create_topics_does_not_block_the_loop(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    rt_engine *e = NULL;
    struct wire x = {0};
    int64_t pid = -1;
    int16_t epoch = -1;
    int a = one_loop_start(f, &plan, &e, &x, &pid, &epoch);
    struct io_fault_rule stall = {
        .mode = IO_FAULT_STALL, .op = IO_OP_DIR_ENTRY, .nth = 1, .path_contains = "nt-0"};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    struct kp_writer w;
    req_begin(&x, &w, KAFKA_CREATE_TOPICS, 0);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of("nt"));
    kp_write_i32(&w, 1);       /* partitions */
    kp_write_i16(&w, 1);       /* replication factor */
    kp_write_array_len(&w, 0); /* assignments */
    kp_write_array_len(&w, 0); /* configs */
    kp_write_i32(&w, 30000);
    tk_request_send(a, &w);
    loop_serves_others_while_held(&x, a, &plan, "a CreateTopics");
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(a, &buf, &r, false);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    struct kp_str name = kp_read_string(&r);
    assert_int_equal(name.len, 2);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_int_equal(r.err, 0);
    free(buf);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, "nt", &parts), 0);
    assert_int_equal(parts, 1);
    assert_int_equal(plan.stall_timeouts, 0);
    close(a);
    one_loop_stop(f, &plan, e, &x);
}

/* KT5 for TxnOffsetCommit: while one connection's TxnOffsetCommit is held in its durable write
 * (the __consumer_offsets append's fdatasync stalls), produces on other connections of the same
 * loop are answered; the commit is answered NONE once released, and its offset is visible
 * after the EndTxn commit. */
static void test_txn_offset_commit_does_not_block_the_loop(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    rt_engine *e = NULL;
    struct wire x = {0};
    int64_t pid = -1;
    int16_t epoch = -1;
    int a = one_loop_start(f, &plan, &e, &x, &pid, &epoch);
    assert_int_equal(wire_add_offsets(&x, a, 3, pid, epoch, "g"), KAFKA_NONE);

    /* TxnOffsetCommit held in its durable write: the __consumer_offsets fdatasync stalls. */
    struct io_fault_rule stall = {.mode = IO_FAULT_STALL,
                                  .op = IO_OP_FDATASYNC,
                                  .nth = 1,
                                  .path_contains = "__consumer_offsets"};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    send_txn_commit(&x, a, 3, pid, epoch, "g", -1, "", "t", 0, 5);
    if (io_fault_stall_wait(&plan, 5000) != 0)
        fail_msg("TxnOffsetCommit never reached its __consumer_offsets fdatasync");

    int b[PLAIN_PARTS];
    bool commit_answered = true;
    uint32_t stalled = 0;
    int answered = plain_produces_answered(&x, a, &plan, b, &commit_answered, &stalled);
    if (answered == 0)
        fail_msg("no produce on another connection of the loop was answered in 3 s while a "
                 "TxnOffsetCommit was held in its durable write (the loop thread waits for the "
                 "disk)");
    assert_false(commit_answered); /* not before its write is durable */
    assert_int_equal(stalled, 1);
    assert_int_equal(read_txn_commit(a, 3, 0), KAFKA_NONE);
    for (int p = 0; p < PLAIN_PARTS; p++) {
        assert_int_equal(read_produce(b[p]), KAFKA_NONE);
        close(b[p]);
    }
    int64_t off = -2;
    assert_int_equal(rt_group_fetch_offsets(e, "g", "t", 0, false, &off), 0);
    assert_int_equal(off, -1); /* pending until the commit marker */
    assert_int_equal(wire_end(&x, a, 3, pid, epoch, true), KAFKA_NONE);
    assert_int_equal(rt_group_fetch_offsets(e, "g", "t", 0, false, &off), 0);
    assert_int_equal(off, 5);
    assert_int_equal(plan.stall_timeouts, 0);
    close(a);
    one_loop_stop(f, &plan, e, &x);
}

/* The new versions' own answers: KT1 (PRODUCER_FENCED from v2 of AddOffsetsToTxn and EndTxn,
 * INVALID_PRODUCER_EPOCH before) and KT7 (TxnOffsetCommit v3 with a generation and member the
 * group does not know is refused as a whole; v3 without them, as v0-2, is not checked). */
static void test_txn_versions(void **state)
{
    struct tu_fixture *f = *state;
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1;
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    struct wire x = {0};
    assert_int_equal(kafka_server_start(f->e, &so, &x.srv), 0);
    int s = dial(&x);
    int64_t pid = -1, p2 = -1;
    int16_t old = -1, epoch = -1;
    assert_int_equal(wire_init(&x, s, 1, -1, -1, &pid, &old), KAFKA_NONE);
    assert_int_equal(wire_init(&x, s, 1, -1, -1, &p2, &epoch), KAFKA_NONE); /* fences `old` */
    assert_int_equal(p2, pid);
    assert_int_equal(wire_add_offsets(&x, s, 1, pid, old, "g"), KAFKA_INVALID_PRODUCER_EPOCH);
    assert_int_equal(wire_add_offsets(&x, s, 2, pid, old, "g"), KAFKA_PRODUCER_FENCED);
    assert_int_equal(wire_add_offsets(&x, s, 3, pid, old, "g"), KAFKA_PRODUCER_FENCED);
    assert_int_equal(wire_end(&x, s, 1, pid, old, true), KAFKA_INVALID_PRODUCER_EPOCH);
    assert_int_equal(wire_end(&x, s, 3, pid, old, true), KAFKA_PRODUCER_FENCED);

    assert_int_equal(wire_add_offsets(&x, s, 3, pid, epoch, "g"), KAFKA_NONE);
    send_txn_commit(&x, s, 3, pid, epoch, "g", 5, "ghost", "t", 0, 7);
    assert_int_equal(read_txn_commit(s, 3, 0), KAFKA_ILLEGAL_GENERATION); /* KT7 */
    send_txn_commit(&x, s, 2, pid, epoch, "g", -1, "", "t", 1, 7);
    assert_int_equal(read_txn_commit(s, 2, 1), KAFKA_NONE);
    send_txn_commit(&x, s, 3, pid, epoch, "g", -1, "", "t", 0, 8);
    assert_int_equal(read_txn_commit(s, 3, 0), KAFKA_NONE);
    assert_int_equal(wire_end(&x, s, 3, pid, epoch, true), KAFKA_NONE);
    int64_t off = -2;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, false, &off), 0);
    assert_int_equal(off, 8);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 1, false, &off), 0);
    assert_int_equal(off, 7);
    close(s);
    kafka_server_stop(x.srv);
}

/* InitProducerId v3-4 over the wire (KIP-360): advertised by the lead at merge. */
static void test_wire_init_expected(void **state)
{
    struct tu_fixture *f = *state;
    if (!kafka_api_supported(KAFKA_INIT_PRODUCER_ID, 4)) {
        fprintf(stderr, "skipped: InitProducerId v3-4 are not advertised yet (api.c)\n");
        skip();
    }
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1;
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    struct wire x = {0};
    assert_int_equal(kafka_server_start(f->e, &so, &x.srv), 0);
    int s = dial(&x);
    int64_t pid = -1, p2 = -1;
    int16_t epoch = -1, e2 = -1;
    assert_int_equal(wire_init(&x, s, 4, -1, -1, &pid, &epoch), KAFKA_NONE);
    assert_int_equal(wire_init(&x, s, 4, pid, epoch, &p2, &e2), KAFKA_NONE);
    assert_int_equal(p2, pid);
    assert_int_equal(e2, epoch + 1);
    assert_int_equal(wire_init(&x, s, 4, pid, (int16_t)(epoch + 5), &p2, &e2),
                     KAFKA_PRODUCER_FENCED);
    assert_int_equal(p2, -1);
    assert_int_equal(wire_init(&x, s, 3, pid, (int16_t)(epoch + 5), &p2, &e2),
                     KAFKA_INVALID_PRODUCER_EPOCH);
    /* An idempotent producer (no transactional id) naming its identity gets a fresh producer
     * id, as Kafka answers it. */
    struct kp_writer w;
    req_begin(&x, &w, KAFKA_INIT_PRODUCER_ID, 4);
    kp_write_compact_nullable_string(&w, (struct kp_str){NULL, -1});
    kp_write_i32(&w, 60000);
    kp_write_i64(&w, pid);
    kp_write_i16(&w, epoch);
    kp_write_tags(&w, true);
    tk_request_send(s, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(s, &buf, &r, true);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    int64_t fresh = kp_read_i64(&r);
    assert_true(fresh >= 0 && fresh != pid);
    assert_int_equal(kp_read_i16(&r), 0);
    assert_int_equal(r.err, 0);
    free(buf);
    close(s);
    kafka_server_stop(x.srv);
}

/* ---- KIP-664 operator APIs (handle_ops.c, KOP1-KOP2): advertised by the lead at merge ---- */

/* The wire tests below read the answers by hand in the layouts of Kafka's released JSON
 * (DescribeTransactions' ProducerEpoch int16; ListTransactions' UnknownStateFilters between
 * ErrorCode and TransactionStates; DescribeProducers' ErrorMessage, CoordinatorEpoch and
 * CurrentTxnStartOffset), not through kmsg_ops.c's descriptions, so a description that drifts
 * from Kafka fails here. */

struct described {
    int16_t err;
    char state[32];
    int32_t timeout_ms;
    int64_t start_ms, pid;
    int16_t epoch;
    int32_t topics, parts;
};

static void describe_txns(struct wire *x, int sock, const char *const *ids, int n,
                          struct described *out)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_DESCRIBE_TRANSACTIONS, 0);
    kp_write_compact_array_len(&w, n);
    for (int i = 0; i < n; i++)
        kp_write_compact_string(&w, kp_str_of(ids[i]));
    kp_write_tags(&w, true);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, true);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_compact_array_len(&r, 1), n);
    for (int i = 0; i < n; i++) {
        struct described *d = &out[i];
        d->err = kp_read_i16(&r);
        struct kp_str id = kp_read_compact_string(&r);
        assert_true(kp_str_eq(id, ids[i])); /* KOP1: in the order asked */
        struct kp_str st = kp_read_compact_string(&r);
        snprintf(d->state, sizeof(d->state), "%.*s", st.len > 0 ? (int)st.len : 0,
                 st.len > 0 ? st.ptr : "");
        d->timeout_ms = kp_read_i32(&r);
        d->start_ms = kp_read_i64(&r);
        d->pid = kp_read_i64(&r);
        d->epoch = kp_read_i16(&r); /* int16 in Kafka's JSON */
        d->topics = kp_read_compact_array_len(&r, 1);
        d->parts = 0;
        for (int32_t t = 0; t < d->topics; t++) {
            struct kp_str name = kp_read_compact_string(&r);
            assert_true(kp_str_eq(name, "t"));
            int32_t np = kp_read_compact_array_len(&r, 4);
            for (int32_t k = 0; k < np; k++)
                assert_int_equal(kp_read_i32(&r), k);
            d->parts += np;
            kp_skip_tags(&r);
        }
        kp_skip_tags(&r);
    }
    kp_skip_tags(&r);
    assert_int_equal(r.err, 0);
    kp_expect_end(&r);
    free(buf);
}

/* ListTransactions v1; returns the count listed, the ids joined by ',' into `ids`, the
 * unknown state filters answered back into `unknown` (joined by ','). */
static int list_txns_unknown(struct wire *x, int sock, const char *state, int64_t pid,
                             int64_t duration, char *ids, size_t cap, char *unknown, size_t ucap)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_LIST_TRANSACTIONS, 1);
    kp_write_compact_array_len(&w, state ? 1 : 0);
    if (state)
        kp_write_compact_string(&w, kp_str_of(state));
    kp_write_compact_array_len(&w, pid >= 0 ? 1 : 0);
    if (pid >= 0)
        kp_write_i64(&w, pid);
    kp_write_i64(&w, duration);
    kp_write_tags(&w, true);
    tk_request_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, true);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    int32_t nu = kp_read_compact_array_len(&r, 1); /* UnknownStateFilters */
    unknown[0] = 0;
    for (int32_t i = 0; i < nu; i++) {
        struct kp_str u = kp_read_compact_string(&r);
        size_t at = strlen(unknown);
        snprintf(unknown + at, ucap - at, "%s%.*s", at ? "," : "", (int)u.len, u.ptr);
    }
    int32_t n = kp_read_compact_array_len(&r, 1);
    ids[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        struct kp_str id = kp_read_compact_string(&r);
        (void)kp_read_i64(&r);
        (void)kp_read_compact_string(&r);
        kp_skip_tags(&r);
        size_t at = strlen(ids);
        snprintf(ids + at, cap - at, "%s%.*s", at ? "," : "", (int)id.len, id.ptr);
    }
    kp_skip_tags(&r);
    assert_int_equal(r.err, 0);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return n;
}

static int list_txns(struct wire *x, int sock, const char *state, int64_t pid, int64_t duration,
                     char *ids, size_t cap)
{
    char unknown[128];
    int n = list_txns_unknown(x, sock, state, pid, duration, ids, cap, unknown, sizeof(unknown));
    if (!state || strcmp(state, "Bogus") != 0)
        assert_string_equal(unknown, "");
    return n;
}

static void test_operator_apis(void **state)
{
    struct tu_fixture *f = *state;
    if (!kafka_api_supported(KAFKA_DESCRIBE_TRANSACTIONS, 0) ||
        !kafka_api_supported(KAFKA_LIST_TRANSACTIONS, 1)) {
        fprintf(stderr, "skipped: DescribeTransactions / ListTransactions are not advertised "
                        "yet (api.c)\n");
        skip();
    }
    rt_engine *e = f->e;
    int64_t pa = -1, pb = -1;
    int16_t ea = -1, eb = -1;
    assert_int_equal(rt_txn_init_producer(e, "tx-a", 45000, &pa, &ea), 0);
    assert_int_equal(rt_txn_init_producer(e, "tx-b", 30000, &pb, &eb), 0);
    struct rt_topic_partition tp[2] = {{"t", 0}, {"t", 1}};
    assert_int_equal(rt_txn_add_partitions(e, "tx-a", pa, ea, tp, 2), 0);
    usleep(30 * 1000); /* tx-a's transaction is older than the duration filter below */
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1;
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    struct wire x = {0};
    assert_int_equal(kafka_server_start(e, &so, &x.srv), 0);
    int s = dial(&x);
    const char *ids[3] = {"tx-a", "nope", "tx-b"};
    struct described d[3];
    describe_txns(&x, s, ids, 3, d);
    assert_int_equal(d[0].err, KAFKA_NONE);
    assert_string_equal(d[0].state, "Ongoing");
    assert_int_equal(d[0].timeout_ms, 45000);
    assert_int_equal(d[0].pid, pa);
    assert_int_equal(d[0].epoch, ea);
    assert_true(d[0].start_ms > 1600000000000LL); /* wall clock */
    assert_int_equal(d[0].topics, 1);             /* grouped by topic */
    assert_int_equal(d[0].parts, 2);
    assert_int_equal(d[1].err, 105); /* TRANSACTIONAL_ID_NOT_FOUND */
    assert_int_equal(d[1].pid, -1);
    assert_int_equal(d[2].err, KAFKA_NONE);
    assert_string_equal(d[2].state, "Empty");
    assert_int_equal(d[2].start_ms, -1);
    assert_int_equal(d[2].topics, 0);
    char listed[256];
    assert_int_equal(list_txns(&x, s, NULL, -1, -1, listed, sizeof(listed)), 2);
    assert_int_equal(list_txns(&x, s, "Ongoing", -1, -1, listed, sizeof(listed)), 1);
    assert_string_equal(listed, "tx-a");
    char unknown[128];
    assert_int_equal(
        list_txns_unknown(&x, s, "Bogus", -1, -1, listed, sizeof(listed), unknown, sizeof(unknown)),
        0);
    assert_string_equal(unknown, "Bogus"); /* KOP2: answered back, as Kafka does */
    assert_int_equal(list_txns(&x, s, NULL, pb, -1, listed, sizeof(listed)), 1);
    assert_string_equal(listed, "tx-b");
    assert_int_equal(list_txns(&x, s, NULL, -1, 10, listed, sizeof(listed)), 1);
    assert_string_equal(listed, "tx-a");
    assert_int_equal(list_txns(&x, s, NULL, -1, 3600000, listed, sizeof(listed)), 0);
    close(s);
    kafka_server_stop(x.srv);
}

/* ---- the partitions' producer state (rt_partition_producers) and DescribeProducers ---- */

struct seen_producers {
    int n;
    struct rt_partition_producer p[8];
};

static int collect_producer(void *ctx, const struct rt_partition_producer *pr)
{
    struct seen_producers *s = ctx;
    if (s->n < 8)
        s->p[s->n++] = *pr;
    return 0;
}

static const struct rt_partition_producer *producer_of(const struct seen_producers *s, int64_t pid)
{
    for (int i = 0; i < s->n; i++)
        if (s->p[i].producer_id == pid)
            return &s->p[i];
    return NULL;
}

static void test_partition_producers(void **state)
{
    struct tu_fixture *f = *state;
    rt_engine *e = f->e;
    int64_t idem = -1, tx = -1;
    int16_t ie = -1, te = -1;
    assert_int_equal(rt_producer_id_allocate(e, &idem, &ie), 0);
    uint8_t buf[512];
    int64_t base = -1;
    size_t len = make_batch(buf, sizeof(buf), false, idem, ie, 0, 3);
    assert_int_equal(rt_append_batch(e, "t", 0, buf, len, &base), 0);
    assert_int_equal(rt_txn_init_producer(e, ID, 60000, &tx, &te), 0);
    struct rt_topic_partition tp = {"t", 0};
    assert_int_equal(rt_txn_add_partitions(e, ID, tx, te, &tp, 1), 0);
    len = make_batch(buf, sizeof(buf), true, tx, te, 0, 2);
    int64_t txn_base = -1;
    assert_int_equal(rt_append_batch(e, "t", 0, buf, len, &txn_base), 0);
    struct seen_producers seen = {0};
    assert_int_equal(rt_partition_producers(e, "t", 0, collect_producer, &seen), 0);
    assert_int_equal(seen.n, 2);
    const struct rt_partition_producer *a = producer_of(&seen, idem), *b = producer_of(&seen, tx);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->last_sequence, 2);
    assert_int_equal(a->current_txn_first_offset, -1);
    assert_int_equal(a->last_timestamp_ms, 1000);
    assert_int_equal(b->producer_epoch, te);
    assert_int_equal(b->last_sequence, 1);
    assert_int_equal(b->current_txn_first_offset, txn_base);
    seen.n = 0;
    assert_int_equal(rt_partition_producers(e, "t", 1, collect_producer, &seen), 0);
    assert_int_equal(seen.n, 0);
    assert_int_equal(rt_partition_producers(e, "t", 7, collect_producer, &seen),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_partition_producers(e, NULL, 0, collect_producer, &seen),
                     RT_E_INVALID_ARGUMENT);

    if (!kafka_api_supported(KAFKA_DESCRIBE_PRODUCERS, 0)) {
        fprintf(stderr, "skipped: DescribeProducers is not advertised yet (api.c)\n");
        skip();
    }
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1;
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    struct wire x = {0};
    assert_int_equal(kafka_server_start(e, &so, &x.srv), 0);
    int sock = dial(&x);
    struct kp_writer w;
    req_begin(&x, &w, KAFKA_DESCRIBE_PRODUCERS, 0);
    kp_write_compact_array_len(&w, 2);
    kp_write_compact_string(&w, kp_str_of("t"));
    kp_write_compact_array_len(&w, 2);
    kp_write_i32(&w, 0);
    kp_write_i32(&w, 9);
    kp_write_tags(&w, true);
    kp_write_compact_string(&w, kp_str_of("nosuch"));
    kp_write_compact_array_len(&w, 1);
    kp_write_i32(&w, 0);
    kp_write_tags(&w, true);
    kp_write_tags(&w, true);
    tk_request_send(sock, &w);
    uint8_t *rb = NULL;
    struct kp_reader r;
    resp_read(sock, &rb, &r, true);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_compact_array_len(&r, 1), 2);
    /* t: partition 0 with both producers, 9 unknown (KOP4; Kafka's layout). */
    assert_true(kp_str_eq(kp_read_compact_string(&r), "t"));
    assert_int_equal(kp_read_compact_array_len(&r, 1), 2);
    assert_int_equal(kp_read_i32(&r), 0);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_int_equal(kp_read_compact_nullable_string(&r).len, -1); /* ErrorMessage: null */
    int32_t np = kp_read_compact_array_len(&r, 1);
    assert_int_equal(np, 2);
    bool saw_txn = false;
    for (int32_t i = 0; i < np; i++) {
        int64_t pid = kp_read_i64(&r);
        int32_t epoch = kp_read_i32(&r); /* int32 on this wire */
        int32_t last_seq = kp_read_i32(&r);
        int64_t last_ts = kp_read_i64(&r);
        int32_t coordinator_epoch = kp_read_i32(&r);
        int64_t txn_start = kp_read_i64(&r); /* CurrentTxnStartOffset */
        kp_skip_tags(&r);
        assert_true(pid == idem || pid == tx);
        assert_int_equal(epoch, pid == idem ? ie : te);
        assert_int_equal(last_seq, pid == idem ? 2 : 1);
        assert_int_equal(last_ts, 1000);
        assert_int_equal(coordinator_epoch, -1);
        if (pid == tx) {
            saw_txn = true;
            assert_int_equal(txn_start, txn_base);
        } else {
            assert_int_equal(txn_start, -1);
        }
    }
    assert_true(saw_txn);
    kp_skip_tags(&r);
    assert_int_equal(kp_read_i32(&r), 9);
    assert_int_equal(kp_read_i16(&r), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(kp_read_compact_nullable_string(&r).len, -1);
    assert_int_equal(kp_read_compact_array_len(&r, 1), 0);
    kp_skip_tags(&r);
    kp_skip_tags(&r);
    assert_true(kp_str_eq(kp_read_compact_string(&r), "nosuch"));
    assert_int_equal(kp_read_compact_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), 0);
    assert_int_equal(kp_read_i16(&r), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(kp_read_compact_nullable_string(&r).len, -1);
    assert_int_equal(kp_read_compact_array_len(&r, 1), 0);
    kp_skip_tags(&r);
    kp_skip_tags(&r);
    kp_skip_tags(&r);
    assert_int_equal(r.err, 0);
    kp_expect_end(&r);
    free(rb);
    close(sock);
    kafka_server_stop(x.srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_async_order, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_init_expected, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_end_txn_does_not_block_the_loop, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_txn_offset_commit_does_not_block_the_loop, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_create_topics_does_not_block_the_loop, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_produce_creating_a_topic_does_not_block_the_loop,
                                        setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_txn_versions, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_wire_init_expected, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_operator_apis, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_partition_producers, setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
