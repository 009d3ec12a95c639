/*
 * test_kafka_server.c — the broker's request handlers over a real socket, from outside: a
 * kafka_server runs in-process on an engine (port 0 on 127.0.0.1, the network backend from
 * RT_TEST_IO) and the test speaks the wire protocol by hand (requests written with the codec's
 * kp_writer, answers read with kp_reader), asserting the error codes and offsets a Kafka client
 * would see:
 *   - ApiVersions v3 (flexible) is answered; an unknown version is answered at v0 with
 *     UNSUPPORTED_VERSION (35); a Produce at an unadvertised version closes the connection;
 *   - InitProducerId allocates distinct producer ids; Produce maps the producer rules
 *     (duplicate → NONE with the original offset, OUT_OF_ORDER_SEQUENCE_NUMBER 45,
 *     UNKNOWN_PRODUCER_ID 59, INVALID_PRODUCER_EPOCH 47), a corrupt CRC → CORRUPT_MESSAGE 2 with
 *     nothing appended, an internal topic → INVALID_TOPIC_EXCEPTION 17, acks 2 →
 *     INVALID_REQUIRED_ACKS 21; acks=0 is not answered, and a failed acks=0 produce closes the
 *     connection;
 *   - Produce stamps the leader epoch 0 (the client's -1 is not kept);
 *   - Fetch returns the segment's bytes exactly, OFFSET_OUT_OF_RANGE 1 past the end, and a long
 *     poll at the end is answered with a record appended while it waited; read_committed
 *     answers the aborted list and the LSO of transactions the engine wrote, an empty answer
 *     (not an error) between the LSO and the high watermark;
 *   - CreateTopics (replication factor 3 → 38, 0 partitions → 37, twice → 36), DeleteTopics
 *     (deleted → 0, unknown → 3), DescribeConfigs (the engine's options; an
 *     unknown topic → 3), Metadata without auto-create (3).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the epoll fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

static int setup(void **state)
{
    return tk_fx_start(state, true, "test_kafka_server");
}

static int setup_no_auto(void **state)
{
    return tk_fx_start(state, false, "test_kafka_server");
}

static int teardown(void **state)
{
    return tk_fx_stop(state);
}

/* A batch of n records (producer fields as given) in buf; returns its length. */
static size_t make_batch(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq, int n)
{
    return tu_batch(buf, cap, 0, pid, epoch, seq, n, "value-", seq, 5000);
}

/* Produce v7 of one batch to topic/partition; returns the error code, *base the offset. */
static int16_t produce(struct tk_fx *x, const char *topic, int32_t partition, int16_t acks,
                       const uint8_t *batch, size_t len, int64_t *base)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_PRODUCE, 7);
    kp_write_nullable_string(&w, (struct kp_str){NULL, -1});
    kp_write_i16(&w, acks);
    kp_write_i32(&w, 30000);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, partition);
    kp_write_bytes(&w, (struct kp_bytes){batch, (int32_t)len});
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    struct kp_str name = kp_read_string(&r);
    assert_true(kp_str_eq(name, topic));
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), partition);
    int16_t err = kp_read_i16(&r);
    *base = kp_read_i64(&r);
    (void)kp_read_i64(&r); /* log append time */
    (void)kp_read_i64(&r); /* log start */
    (void)kp_read_i32(&r); /* throttle */
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

/* Produce v7 with acks=0: nothing is read back. */
static void produce_noack(struct tk_fx *x, const char *topic, const uint8_t *batch, size_t len)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_PRODUCE, 7);
    kp_write_nullable_string(&w, (struct kp_str){NULL, -1});
    kp_write_i16(&w, 0);
    kp_write_i32(&w, 30000);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, 0);
    kp_write_bytes(&w, (struct kp_bytes){batch, (int32_t)len});
    tk_req_send(x, &w);
}

static int64_t hw_of(struct tk_fx *x, const char *topic, uint32_t p)
{
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(x->f.e, topic, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     0);
    return off;
}

static void test_api_versions(void **state)
{
    struct tk_fx *x = *state;
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_API_VERSIONS, 3);
    kp_write_compact_string(&w, kp_str_of("test"));
    kp_write_compact_string(&w, kp_str_of("1.0"));
    kp_write_tags(&w, true);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0); /* ApiVersions: header v0 always */
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    int32_t n = kp_read_compact_array_len(&r, 1);
    assert_true(n >= 10);
    bool produce_seen = false;
    for (int32_t i = 0; i < n; i++) {
        int16_t key = kp_read_i16(&r), lo = kp_read_i16(&r), hi = kp_read_i16(&r);
        kp_skip_tags(&r);
        if (key == KAFKA_PRODUCE) {
            produce_seen = true;
            assert_true(lo <= 3 && hi >= 7);
        }
    }
    assert_true(produce_seen);
    assert_int_equal(r.err, 0);
    free(buf);

    /* A version it does not know: v0 with UNSUPPORTED_VERSION. */
    tk_req_begin(x, &w, KAFKA_API_VERSIONS, 99);
    tk_req_send(x, &w);
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    assert_int_equal(kp_read_i16(&r), KAFKA_UNSUPPORTED_VERSION);
    free(buf);

    /* Produce v2 is advertised (from v0, api.c KA4: librdkafka's codec check needs it) but
     * only record format v2 is taken: a magic-1 batch is answered CORRUPT_MESSAGE. */
    uint8_t b[4096];
    size_t len = make_batch(b, sizeof(b), -1, -1, -1, 1);
    b[16] = 1; /* magic (outside the CRC) */
    tk_req_begin(x, &w, KAFKA_PRODUCE, 2);
    kp_write_i16(&w, 1);
    kp_write_i32(&w, 1000);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of("p"));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, 0);
    kp_write_bytes(&w, (struct kp_bytes){b, (int32_t)len});
    tk_req_send(x, &w);
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_true(kp_str_eq(kp_read_string(&r), "p"));
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), 0);
    assert_int_equal(kp_read_i16(&r), KAFKA_CORRUPT_MESSAGE);
    free(buf);
}

static int64_t init_producer_id(struct tk_fx *x, int16_t *epoch)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_INIT_PRODUCER_ID, 1);
    kp_write_nullable_string(&w, (struct kp_str){NULL, -1});
    kp_write_i32(&w, 60000);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    int64_t pid = kp_read_i64(&r);
    *epoch = kp_read_i16(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return pid;
}

static void test_produce_rules(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "p", 1), 0);
    int16_t epoch = -1, e2 = -1;
    int64_t pid = init_producer_id(x, &epoch);
    int64_t pid2 = init_producer_id(x, &e2);
    assert_true(pid >= 0 && pid2 >= 0 && pid != pid2);
    assert_int_equal(epoch, 0);

    uint8_t b[4096];
    int64_t base = -9;
    size_t len = make_batch(b, sizeof(b), pid, 0, 0, 3);
    assert_int_equal(produce(x, "p", 0, -1, b, len, &base), KAFKA_NONE);
    assert_int_equal(base, 0);
    len = make_batch(b, sizeof(b), pid, 0, 0, 3); /* a retry */
    assert_int_equal(produce(x, "p", 0, -1, b, len, &base), KAFKA_NONE);
    assert_int_equal(base, 0);
    assert_int_equal(hw_of(x, "p", 0), 3);
    len = make_batch(b, sizeof(b), pid, 0, 9, 1);
    assert_int_equal(produce(x, "p", 0, 1, b, len, &base), KAFKA_OUT_OF_ORDER_SEQUENCE_NUMBER);
    len = make_batch(b, sizeof(b), pid2, 0, 5, 1);
    assert_int_equal(produce(x, "p", 0, 1, b, len, &base), KAFKA_UNKNOWN_PRODUCER_ID);
    len = make_batch(b, sizeof(b), pid, 1, 0, 1); /* a new epoch starts at 0 */
    assert_int_equal(produce(x, "p", 0, -1, b, len, &base), KAFKA_NONE);
    assert_int_equal(base, 3);
    len = make_batch(b, sizeof(b), pid, 0, 3, 1); /* the old epoch is fenced */
    assert_int_equal(produce(x, "p", 0, -1, b, len, &base), KAFKA_INVALID_PRODUCER_EPOCH);
    assert_int_equal(hw_of(x, "p", 0), 4);

    len = make_batch(b, sizeof(b), -1, -1, -1, 2);
    b[len - 1] ^= 0x5a; /* the CRC no longer matches */
    assert_int_equal(produce(x, "p", 0, -1, b, len, &base), KAFKA_CORRUPT_MESSAGE);
    len = make_batch(b, sizeof(b), -1, -1, -1, 2);
    assert_int_equal(produce(x, "p", 0, 2, b, len, &base), KAFKA_INVALID_REQUIRED_ACKS);
    assert_int_equal(produce(x, "__consumer_offsets", 0, 1, b, len, &base),
                     KAFKA_INVALID_TOPIC_EXCEPTION);
    assert_int_equal(produce(x, "p", 7, 1, b, len, &base), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(hw_of(x, "p", 0), 4); /* nothing of the refused batches landed */

    /* acks=0: no answer (the next request's answer comes first), the records land; a failed
     * one closes the connection (Kafka's way of telling an acks=0 client). */
    len = make_batch(b, sizeof(b), -1, -1, -1, 2);
    produce_noack(x, "p", b, len);
    len = make_batch(b, sizeof(b), -1, -1, -1, 1);
    assert_int_equal(produce(x, "p", 0, 1, b, len, &base), KAFKA_NONE); /* reads its own answer */
    assert_int_equal(base, 6);
    len = make_batch(b, sizeof(b), -1, -1, -1, 2);
    b[len - 1] ^= 0x5a;
    produce_noack(x, "p", b, len);
    uint8_t *cbuf = NULL;
    struct kp_reader cr;
    assert_int_equal(tk_resp_read(x, &cbuf, &cr, false), -1); /* closed, nothing answered */
    close(x->sock);
    x->sock = -1;
    assert_int_equal(hw_of(x, "p", 0), 7);

    /* Auto-created on produce, with num.partitions (2). */
    len = make_batch(b, sizeof(b), -1, -1, -1, 2);
    assert_int_equal(produce(x, "auto", 1, 1, b, len, &base), KAFKA_NONE);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(x->f.e, "auto", &parts), 0);
    assert_int_equal(parts, 2);
}

struct fetch_extra {
    int64_t lso;
    int32_t aborted_count; /* -1: null */
    int64_t aborted_pid, aborted_first;
};

/* Fetch v11 of one partition at `isolation`; returns the error, the records (malloc'd copy),
 * the HW, and (extra, may be NULL) the LSO and the aborted list's first entry. */
static int16_t fetch_iso(struct tk_fx *x, const char *topic, int64_t offset, int32_t max_wait_ms,
                         int8_t isolation, uint8_t **records, int32_t *records_len, int64_t *hw,
                         struct fetch_extra *extra)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_FETCH, 11);
    kp_write_i32(&w, -1);
    kp_write_i32(&w, max_wait_ms);
    kp_write_i32(&w, 1);
    kp_write_i32(&w, 1 << 20);
    kp_write_i8(&w, isolation);
    kp_write_i32(&w, 0);
    kp_write_i32(&w, -1);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_i32(&w, 0);
    kp_write_i32(&w, -1);
    kp_write_i64(&w, offset);
    kp_write_i64(&w, -1);
    kp_write_i32(&w, 1 << 20);
    kp_write_array_len(&w, 0);
    kp_write_string(&w, kp_str_of(""));
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_int_equal(kp_read_i32(&r), 0); /* no fetch sessions */
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_true(kp_str_eq(kp_read_string(&r), topic));
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), 0);
    int16_t err = kp_read_i16(&r);
    *hw = kp_read_i64(&r);
    int64_t lso = kp_read_i64(&r);
    (void)kp_read_i64(&r);
    int32_t na = kp_read_nullable_array_len(&r, 16);
    if (isolation == 0)
        assert_int_equal(na, -1); /* read_uncommitted: null */
    else
        assert_true(na >= 0);
    struct fetch_extra ex = {
        .lso = lso, .aborted_count = na, .aborted_pid = -1, .aborted_first = -1};
    for (int32_t i = 0; i < na; i++) {
        int64_t pid = kp_read_i64(&r), first = kp_read_i64(&r);
        if (i == 0) {
            ex.aborted_pid = pid;
            ex.aborted_first = first;
        }
    }
    if (extra)
        *extra = ex;
    assert_int_equal(kp_read_i32(&r), -1); /* preferred read replica */
    struct kp_bytes rec = kp_read_nullable_bytes(&r);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    *records_len = rec.len;
    *records = NULL;
    if (rec.len > 0) {
        *records = malloc((size_t)rec.len);
        memcpy(*records, rec.ptr, (size_t)rec.len);
    }
    free(buf);
    return err;
}

static int16_t fetch(struct tk_fx *x, const char *topic, int64_t offset, int32_t max_wait_ms,
                     uint8_t **records, int32_t *records_len, int64_t *hw)
{
    return fetch_iso(x, topic, offset, max_wait_ms, 0, records, records_len, hw, NULL);
}

struct late_append {
    rt_engine *e;
    useconds_t delay_us;
};

static void *append_later(void *arg)
{
    struct late_append *la = arg;
    usleep(la->delay_us);
    struct rt_record rec = {.key_len = -1, .value = "late", .value_len = 4, .timestamp_ms = -1};
    assert_int_equal(rt_append(la->e, "f", 0, &rec, 1, NULL), 0);
    return NULL;
}

static void test_fetch(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "f", 1), 0);
    uint8_t b[4096];
    int64_t base = -1;
    size_t len1 = make_batch(b, sizeof(b), -1, -1, -1, 4);
    memset(b + 12, 0xff, 4); /* leader epoch -1, as a client may send it (outside the CRC) */
    assert_int_equal(produce(x, "f", 0, -1, b, len1, &base), KAFKA_NONE);
    size_t len2 = make_batch(b, sizeof(b), -1, -1, -1, 2);
    assert_int_equal(produce(x, "f", 0, -1, b, len2, &base), KAFKA_NONE);
    assert_int_equal(base, 4);

    uint8_t *rec = NULL;
    int32_t rec_len = 0;
    int64_t hw = -1;
    assert_int_equal(fetch(x, "f", 0, 0, &rec, &rec_len, &hw), KAFKA_NONE);
    assert_int_equal(hw, 6);
    assert_int_equal(rec_len, (int32_t)(len1 + len2));
    /* Byte for byte what the segment holds. */
    rt_fetch *fe = NULL;
    assert_int_equal(rt_fetch_start(x->f.e, "f", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &fe), 0);
    const struct rt_fetch_view *v = rt_fetch_get(fe);
    assert_int_equal(v->size_bytes, (size_t)rec_len);
    assert_memory_equal(v->data, rec, (size_t)rec_len);
    assert_true(rec[12] == 0 && rec[13] == 0 && rec[14] == 0 && rec[15] == 0); /* epoch 0 */
    rt_fetch_release(fe);
    free(rec);

    assert_int_equal(fetch(x, "f", 100, 0, &rec, &rec_len, &hw), KAFKA_OFFSET_OUT_OF_RANGE);
    assert_int_equal(hw, 6);
    free(rec);
    assert_int_equal(fetch(x, "f", 6, 0, &rec, &rec_len, &hw), KAFKA_NONE); /* at the end */
    assert_int_equal(rec_len, 0);
    free(rec);

    /* A long poll at the end gets the record appended while it waits (max_wait 20 s: an
     * answer without it would be empty). */
    pthread_t t;
    struct late_append la = {.e = x->f.e, .delay_us = 200000};
    assert_int_equal(pthread_create(&t, NULL, append_later, &la), 0);
    assert_int_equal(fetch(x, "f", 6, 20000, &rec, &rec_len, &hw), KAFKA_NONE);
    pthread_join(t, NULL);
    assert_true(rec_len > 0);
    assert_int_equal(hw, 7);
    free(rec);
}

static void txn_send(rt_producer *p, const char *topic, int n)
{
    for (int i = 0; i < n; i++) {
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = "t", .value_len = 1, .timestamp_ms = -1},
            .sequence = -1};
        assert_int_equal(rt_producer_send(p, topic, 0, &m, NULL, NULL), 0);
    }
    assert_int_equal(rt_producer_flush(p, 10000), 0);
}

/* read_committed over the wire: the aborted list and the LSO, from transactions the engine's
 * own transactional producer wrote (transactions over the wire are issue 13's). */
static void test_fetch_read_committed(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "rc", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx-wire";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(x->f.e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, 10000), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    txn_send(p, "rc", 3); /* offsets 0..2, then the ABORT marker at 3 */
    assert_int_equal(rt_producer_abort(p, 10000), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    txn_send(p, "rc", 2); /* 4..5, COMMIT marker at 6 */
    assert_int_equal(rt_producer_commit(p, 10000), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_producer_id(p, &pid, &epoch), 0);

    uint8_t *rec = NULL;
    int32_t len = 0;
    int64_t hw = -1;
    struct fetch_extra ex;
    assert_int_equal(fetch_iso(x, "rc", 0, 0, 1, &rec, &len, &hw, &ex), KAFKA_NONE);
    assert_int_equal(hw, 7);
    assert_int_equal(ex.lso, 7);
    assert_int_equal(ex.aborted_count, 1);
    assert_int_equal(ex.aborted_pid, pid);
    assert_int_equal(ex.aborted_first, 0);
    assert_true(len > 0);
    free(rec);

    /* An open transaction holds the LSO; read_committed past it is empty, not an error. */
    assert_int_equal(rt_producer_begin(p), 0);
    txn_send(p, "rc", 2); /* 7..8 */
    assert_int_equal(fetch_iso(x, "rc", 7, 0, 1, &rec, &len, &hw, &ex), KAFKA_NONE);
    assert_int_equal(hw, 9);
    assert_int_equal(ex.lso, 7);
    assert_int_equal(len, 0);
    free(rec);
    assert_int_equal(fetch_iso(x, "rc", 8, 0, 1, &rec, &len, &hw, &ex), KAFKA_NONE);
    assert_int_equal(len, 0);
    free(rec);
    assert_int_equal(fetch_iso(x, "rc", 10, 0, 1, &rec, &len, &hw, &ex), KAFKA_OFFSET_OUT_OF_RANGE);
    free(rec);
    /* read_uncommitted sees the open transaction's records. */
    assert_int_equal(fetch_iso(x, "rc", 7, 0, 0, &rec, &len, &hw, &ex), KAFKA_NONE);
    assert_true(len > 0);
    free(rec);
    assert_int_equal(rt_producer_abort(p, 10000), 0);
    assert_int_equal(rt_producer_close(p), 0);
}

static int16_t create_topic(struct tk_fx *x, const char *name, int32_t partitions, int16_t rf)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_CREATE_TOPICS, 4);
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(name));
    kp_write_i32(&w, partitions);
    kp_write_i16(&w, rf);
    kp_write_array_len(&w, 0);
    kp_write_array_len(&w, 0);
    kp_write_i32(&w, 10000);
    kp_write_bool(&w, false);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_true(kp_str_eq(kp_read_string(&r), name));
    int16_t err = kp_read_i16(&r);
    (void)kp_read_nullable_string(&r);
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

static void test_admin(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(create_topic(x, "three", 1, 3), KAFKA_INVALID_REPLICATION_FACTOR);
    assert_int_equal(create_topic(x, "zero", 0, 1), KAFKA_INVALID_PARTITIONS);
    assert_int_equal(create_topic(x, "bad/name", 1, 1), KAFKA_INVALID_TOPIC_EXCEPTION);
    assert_int_equal(create_topic(x, "made", 3, 1), KAFKA_NONE);
    assert_int_equal(create_topic(x, "made", 3, 1), KAFKA_TOPIC_ALREADY_EXISTS);
    assert_int_equal(create_topic(x, "dflt", -1, -1), KAFKA_NONE);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(x->f.e, "made", &parts), 0);
    assert_int_equal(parts, 3);
    assert_int_equal(rt_topic_describe(x->f.e, "dflt", &parts), 0);
    assert_int_equal(parts, 2); /* num.partitions */
    assert_int_equal(rt_topic_describe(x->f.e, "three", &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);

    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_DELETE_TOPICS, 3);
    kp_write_array_len(&w, 2);
    kp_write_string(&w, kp_str_of("made"));
    kp_write_string(&w, kp_str_of("nope"));
    kp_write_i32(&w, 10000);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 2);
    assert_true(kp_str_eq(kp_read_string(&r), "made"));
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_true(kp_str_eq(kp_read_string(&r), "nope"));
    assert_int_equal(kp_read_i16(&r), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    free(buf);
    assert_int_equal(rt_topic_describe(x->f.e, "made", &parts),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION); /* deleted (KAD6) */
}

static void test_metadata_no_auto_create(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "known", 3), 0);
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_METADATA, 4);
    kp_write_array_len(&w, 2);
    kp_write_string(&w, kp_str_of("known"));
    kp_write_string(&w, kp_str_of("unknown"));
    kp_write_bool(&w, true);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r); /* throttle */
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i32(&r), 0); /* node id */
    assert_true(kp_str_eq(kp_read_string(&r), "127.0.0.1"));
    assert_int_equal(kp_read_i32(&r), kafka_server_port(x->srv));
    (void)kp_read_nullable_string(&r);    /* rack */
    (void)kp_read_nullable_string(&r);    /* cluster id */
    assert_int_equal(kp_read_i32(&r), 0); /* controller: this broker */
    assert_int_equal(kp_read_array_len(&r, 1), 2);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_true(kp_str_eq(kp_read_string(&r), "known"));
    (void)kp_read_bool(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
        assert_int_equal(kp_read_i32(&r), i);
        assert_int_equal(kp_read_i32(&r), 0); /* leader */
        assert_int_equal(kp_read_array_len(&r, 4), 1);
        assert_int_equal(kp_read_i32(&r), 0);
        assert_int_equal(kp_read_array_len(&r, 4), 1);
        assert_int_equal(kp_read_i32(&r), 0);
    }
    assert_int_equal(kp_read_i16(&r), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_true(kp_str_eq(kp_read_string(&r), "unknown"));
    assert_int_equal(r.err, 0);
    free(buf);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(x->f.e, "unknown", &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
}

/* DescribeConfigs v0: a topic's configs are the engine's real options (KAD4); an unknown topic is
 * UNKNOWN_TOPIC_OR_PARTITION. */
static void test_describe_configs(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "cfg", 1), 0);
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_DESCRIBE_CONFIGS, 0);
    kp_write_array_len(&w, 2);
    kp_write_i8(&w, KAFKA_RESOURCE_TOPIC);
    kp_write_string(&w, kp_str_of("cfg"));
    kp_write_array_len(&w, -1);
    kp_write_i8(&w, KAFKA_RESOURCE_TOPIC);
    kp_write_string(&w, kp_str_of("nope"));
    kp_write_array_len(&w, -1);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 2);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(kp_read_i8(&r), KAFKA_RESOURCE_TOPIC);
    assert_true(kp_str_eq(kp_read_string(&r), "cfg"));
    int32_t n = kp_read_array_len(&r, 1);
    assert_true(n >= 4);
    bool segment_seen = false;
    for (int32_t i = 0; i < n; i++) {
        struct kp_str name = kp_read_string(&r);
        struct kp_str value = kp_read_nullable_string(&r);
        (void)kp_read_bool(&r);
        (void)kp_read_bool(&r);
        (void)kp_read_bool(&r);
        /* the engine's own segment size (KAD4: what the topic really gets) */
        if (kp_str_eq(name, "segment.bytes")) {
            char want[32];
            snprintf(want, sizeof(want), "%" PRIu64, x->f.o.segment_size_bytes);
            segment_seen = true;
            assert_true(kp_str_eq(value, want));
        }
    }
    assert_true(segment_seen);
    assert_int_equal(kp_read_i16(&r), KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(r.err, 0);
    free(buf);
}

/* One IncrementalAlterConfigs v0 resource (a topic) with one config op; the answer's error. */
static int16_t incremental(struct tk_fx *x, const char *topic, const char *name, int8_t op,
                           const char *value)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_INCREMENTAL_ALTER_CONFIGS, 0);
    kp_write_array_len(&w, 1);
    kp_write_i8(&w, KAFKA_RESOURCE_TOPIC);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(name));
    kp_write_i8(&w, op);
    kp_write_nullable_string(&w, kp_str_of(value));
    kp_write_bool(&w, false);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    int16_t err = kp_read_i16(&r);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(kp_read_i8(&r), KAFKA_RESOURCE_TOPIC);
    assert_true(kp_str_eq(kp_read_string(&r), topic));
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

struct one_config {
    const char *name;
    char value[64];
    enum rt_config_source source;
};

static int one_config_fn(void *ctx, const char *name, const char *value,
                         enum rt_config_source source, bool honoured)
{
    (void)honoured;
    struct one_config *c = ctx;
    if (strcmp(name, c->name) == 0) {
        snprintf(c->value, sizeof(c->value), "%s", value);
        c->source = source;
    }
    return 0;
}

/* IncrementalAlterConfigs (KAD5): SET, DELETE, APPEND on a list config, APPEND on a scalar
 * refused (INVALID_CONFIG), an unknown operation refused (INVALID_REQUEST), an unknown topic
 * (UNKNOWN_TOPIC_OR_PARTITION); what is set is the engine's config. */
static void test_incremental_alter_configs(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "inc", 1), 0);
    struct one_config c = {.name = "retention.ms"};
    assert_int_equal(incremental(x, "inc", "retention.ms", 0, "9000"), KAFKA_NONE);
    assert_int_equal(rt_topic_config_get(x->f.e, "inc", one_config_fn, &c), 0);
    assert_string_equal(c.value, "9000");
    assert_int_equal(c.source, RT_CONFIG_TOPIC);
    assert_int_equal(incremental(x, "inc", "retention.ms", 1, NULL), KAFKA_NONE);
    assert_int_equal(rt_topic_config_get(x->f.e, "inc", one_config_fn, &c), 0);
    assert_int_not_equal(c.source, RT_CONFIG_TOPIC);
    assert_int_equal(incremental(x, "inc", "cleanup.policy", 2, "delete"), KAFKA_NONE);
    c.name = "cleanup.policy";
    assert_int_equal(rt_topic_config_get(x->f.e, "inc", one_config_fn, &c), 0);
    assert_string_equal(c.value, "delete"); /* appended once: already there */
    assert_int_equal(incremental(x, "inc", "cleanup.policy", 2, "compact"), KAFKA_NONE);
    assert_int_equal(rt_topic_config_get(x->f.e, "inc", one_config_fn, &c), 0);
    assert_string_equal(c.value, "delete,compact"); /* appended (issue 26: compaction) */
    assert_int_equal(incremental(x, "inc", "cleanup.policy", 2, "shred"), KAFKA_INVALID_CONFIG);
    assert_int_equal(incremental(x, "inc", "retention.ms", 2, "1"), KAFKA_INVALID_CONFIG);
    assert_int_equal(incremental(x, "inc", "retention.ms", 9, "1"), KAFKA_INVALID_REQUEST);
    assert_int_equal(incremental(x, "inc", "no.such.config", 0, "1"), KAFKA_INVALID_CONFIG);
    assert_int_equal(incremental(x, "nope", "retention.ms", 0, "1"),
                     KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
}

/* One AlterConfigs v0 (legacy, key 33) or IncrementalAlterConfigs v0 (key 44, op SET) resource,
 * a topic, naming `name` twice: first v1, then v2. The answer's error. */
static int16_t alter_twice(struct tk_fx *x, int16_t key, const char *topic, const char *name,
                           const char *v1, const char *v2)
{
    struct kp_writer w;
    tk_req_begin(x, &w, key, 0);
    kp_write_array_len(&w, 1);
    kp_write_i8(&w, KAFKA_RESOURCE_TOPIC);
    kp_write_string(&w, kp_str_of(topic));
    kp_write_array_len(&w, 2);
    const char *values[2] = {v1, v2};
    for (int i = 0; i < 2; i++) {
        kp_write_string(&w, kp_str_of(name));
        if (key == KAFKA_INCREMENTAL_ALTER_CONFIGS)
            kp_write_i8(&w, 0); /* SET */
        kp_write_nullable_string(&w, kp_str_of(values[i]));
    }
    kp_write_bool(&w, false);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    int16_t err = kp_read_i16(&r);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(kp_read_i8(&r), KAFKA_RESOURCE_TOPIC);
    assert_true(kp_str_eq(kp_read_string(&r), topic));
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

/* A key named twice in one resource (KAD5): legacy AlterConfigs takes the last value, as
 * Kafka's (its entries become a map; librdkafka's 0092 sends every described config plus the
 * changed one); IncrementalAlterConfigs refuses the resource (INVALID_REQUEST), nothing set. */
static void test_alter_configs_duplicate_keys(void **state)
{
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, "dup", 1), 0);
    struct one_config c = {.name = "retention.ms"};
    assert_int_equal(alter_twice(x, KAFKA_ALTER_CONFIGS, "dup", "retention.ms", "1000", "2000"),
                     KAFKA_NONE);
    assert_int_equal(rt_topic_config_get(x->f.e, "dup", one_config_fn, &c), 0);
    assert_string_equal(c.value, "2000");
    assert_int_equal(
        alter_twice(x, KAFKA_INCREMENTAL_ALTER_CONFIGS, "dup", "retention.ms", "3000", "4000"),
        KAFKA_INVALID_REQUEST);
    assert_int_equal(rt_topic_config_get(x->f.e, "dup", one_config_fn, &c), 0);
    assert_string_equal(c.value, "2000");
}

/* KO10: librdkafka 2.0.2's OffsetFetch v7 for all of a group's offsets (ListConsumerGroupOffsets
 * with no partitions) carries its null topic array as four zero bytes; Kafka answers it (topics
 * null, require_stable false, three bytes after the body ignored), so must the broker: every
 * committed offset of the group (none here), not a closed connection. */
static void test_offset_fetch_librdkafka_null_topics(void **state)
{
    struct tk_fx *x = *state;
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_OFFSET_FETCH, 7);
    const uint8_t body[] = {0x02, 'g', 0x00, 0x00, 0x00, 0x00, 0x01, 0x00};
    for (size_t i = 0; i < sizeof(body); i++)
        kp_write_i8(&w, (int8_t)body[i]);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, true), 0);
    (void)kp_read_i32(&r);               /* throttle */
    assert_int_equal(kp_read_i8(&r), 1); /* topics: a compact array of none */
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    assert_int_equal(r.err, 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_api_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_produce_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_read_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incremental_alter_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alter_configs_duplicate_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_fetch_librdkafka_null_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_no_auto_create, setup_no_auto, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
