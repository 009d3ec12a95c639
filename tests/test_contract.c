/*
 * test_contract.c — promises of engine/ringtail.h that belong to no single module, checked from
 * outside as an embedder meets them: each limit has its own error code (issue 11 item 5: no
 * blanket RT_E_LIMIT; a crafted producers.meta stands for an engine that used up its ids), rt_close
 * refuses while producers or consumers of the engine are open and leaves the engine and the handles
 * fully usable, a fetch taken before rt_close stays readable until it is released, and an
 * idempotent producer takes rt_producer_send and rt_producer_flush from several threads at once
 * (the thread rules at the top of ringtail.h). It never reaches into the engine's state to make a
 * case pass: the internal batch encoder only builds the bytes an embedder of rt_append_batch would
 * send.
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
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "batch.h"
#include "index/crc32c.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "ringtail_test.h"

static int64_t high_watermark(rt_engine *e, const char *topic, uint32_t partition)
{
    int64_t hw = -1;
    assert_int_equal(
        rt_list_offsets(e, topic, partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    return hw;
}

/* One record in a transactional batch of producer `pid` (epoch 0, sequence 0), as a Kafka
 * client's first write inside a transaction would encode it. */
static int txn_batch_append(rt_engine *e, const char *topic, int64_t pid)
{
    uint8_t buf[512];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, 0, 0),
                     0);
    struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = 1000};
    assert_int_equal(batch_builder_add(&b, &r), 0);
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    return rt_append_batch(e, topic, 0, buf, len, NULL);
}

static void append_one(rt_engine *e, const char *topic, const char *value)
{
    struct rt_record r = {
        .key_len = -1, .value = value, .value_len = (int32_t)strlen(value), .timestamp_ms = -1};
    int rc = rt_append(e, topic, 0, &r, 1, NULL);
    if (rc)
        fail_msg("rt_append: %s: %s", rt_strerror(rc), rt_error_detail());
}

/* ---- one code per limit ---- */

/* topics_max: rt_topic_create and an rt_open of a bigger catalogue both say RT_E_TOPICS_FULL. */
static void test_topics_max_is_topics_full(void **state)
{
    struct tu_fixture *f = *state;
    f->o.topics_max = 2;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "a", 1), 0);
    assert_int_equal(rt_topic_create(f->e, "b", 1), 0);
    assert_int_equal(rt_topic_create(f->e, "c", 1), RT_E_TOPICS_FULL);
    assert_non_null(strstr(rt_error_detail(), "topics_max"));
    assert_int_equal(rt_topic_describe(f->e, "c", &(uint32_t){0}), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    tu_fixture_close(f);
    f->o.topics_max = 1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_TOPICS_FULL);
    assert_null(e);
}

/* producers_max: a partition whose producer table holds only producers with open transactions
 * (which it may not evict) refuses a new producer with RT_E_PRODUCERS_FULL, appends nothing,
 * and its write side stays healthy. */
static void test_producer_table_full_is_producers_full(void **state)
{
    struct tu_fixture *f = *state;
    f->o.producers_max = 2;
    tu_fixture_open(f);
    /* Raw transactional batches with no coordinator behind them: the partition's rules alone. */
    assert_int_equal(rt_txn_verify_set(f->e, false), 0);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    assert_int_equal(txn_batch_append(f->e, "t", 101), 0);
    assert_int_equal(txn_batch_append(f->e, "t", 102), 0);
    int64_t hw = high_watermark(f->e, "t", 0);
    assert_int_equal(hw, 2);
    assert_int_equal(txn_batch_append(f->e, "t", 103), RT_E_PRODUCERS_FULL);
    assert_true(strlen(rt_error_detail()) > 0);
    assert_int_equal(high_watermark(f->e, "t", 0), hw);
    append_one(f->e, "t", "plain"); /* no producer id: no table slot needed */
    assert_int_equal(high_watermark(f->e, "t", 0), hw + 1);
}

/* A consumer is assigned at most 65536 partitions: RT_E_CONSUMER_PARTITIONS_FULL, and the
 * assignment it had is kept. */
static void test_consumer_assignment_full(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, NULL, &c), 0);
    uint32_t zero = 0;
    assert_int_equal(rt_consumer_assign(c, "t", &zero, 1), 0);
    size_t many = 65536;
    uint32_t *parts = calloc(many, sizeof(*parts));
    assert_non_null(parts);
    assert_int_equal(rt_consumer_assign(c, "t", parts, many), RT_E_CONSUMER_PARTITIONS_FULL);
    free(parts);
    struct rt_offset out[2];
    size_t n = 0;
    assert_int_equal(rt_consumer_positions(c, out, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rt_consumer_close(c), 0);
}

/* rt_consumer_positions with too short an array: the first `max` entries and
 * RT_E_BUFFER_TOO_SMALL. */
static void test_positions_array_too_small(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 3), 0);
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, NULL, &c), 0);
    uint32_t parts[3] = {0, 1, 2};
    assert_int_equal(rt_consumer_assign(c, "t", parts, 3), 0);
    struct rt_offset out[2];
    size_t n = 9;
    assert_int_equal(rt_consumer_positions(c, out, 2, &n), RT_E_BUFFER_TOO_SMALL);
    assert_int_equal(n, 2);
    assert_int_equal(rt_consumer_positions(c, NULL, 0, &n), RT_E_BUFFER_TOO_SMALL);
    assert_int_equal(n, 0);
    assert_int_equal(rt_consumer_close(c), 0);
}

/* A producer writes to at most 4096 partitions: the send to a 4097th is
 * RT_E_PRODUCER_PARTITIONS_FULL, queues nothing, and the producer goes on with the ones it has.
 * (Small segments and no syncs: 4097 partitions hold 16388 descriptors and 16 MiB.) */
static void test_producer_partitions_full(void **state)
{
    struct tu_fixture *f = *state;
    /* 4 descriptors per active segment: raise the soft limit as far as the hard one allows. */
    struct rlimit nofile;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    if (nofile.rlim_cur < 20000) {
        nofile.rlim_cur = nofile.rlim_max < 20000 ? nofile.rlim_max : 20000;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &nofile), 0);
    }
    if (nofile.rlim_cur < 17000)
        fail_msg("RLIMIT_NOFILE hard limit %llu: 4097 partitions need about 16400 descriptors",
                 (unsigned long long)nofile.rlim_max);
    f->o.partitions_max = 8192;
    f->o.batch_size_max_bytes = 1024;
    f->o.segment_size_bytes = 4096;
    f->o.sync_mode = RT_SYNC_NONE;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "wide", 4097), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.linger_ms = 60000; /* nothing leaves before the flush */
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1},
        .sequence = -1};
    for (int32_t part = 0; part < 4096; part++)
        assert_int_equal(rt_producer_send(p, "wide", part, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_send(p, "wide", 4096, &m, NULL, NULL),
                     RT_E_PRODUCER_PARTITIONS_FULL);
    assert_non_null(strstr(rt_error_detail(), "4096"));
    assert_int_equal(rt_producer_send(p, "wide", 7, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(high_watermark(f->e, "wide", 7), 2);
    assert_int_equal(high_watermark(f->e, "wide", 4096), 0);
}

/* A producers.meta whose block_end leaves fewer than one block of ids below 2^63 (as an
 * engine that handed out nearly all of them would write): the next allocation is
 * RT_E_PRODUCER_IDS_EXHAUSTED, the failed open leaves nothing counted (rt_close succeeds),
 * and the engine is otherwise fine. */
static void test_producer_ids_exhausted(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    tu_fixture_close(f);
    uint8_t meta[22] = {0x52, 0x54, 0x50, 0x52, 0, 1}; /* "RTPR", version 1 */
    uint64_t block_end = (uint64_t)INT64_MAX - 10;
    for (int i = 0; i < 8; i++)
        meta[10 + i] = (uint8_t)(block_end >> (56 - 8 * i));
    uint32_t crc = crc32c(0, meta + 10, sizeof(meta) - 10); /* name_count 0 */
    for (int i = 0; i < 4; i++)
        meta[6 + i] = (uint8_t)(crc >> (24 - 8 * i));
    char *path = tu_path("%s/producers.meta", f->dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(meta, 1, sizeof(meta), fp), sizeof(meta));
    assert_int_equal(fclose(fp), 0);
    free(path);
    tu_fixture_open(f);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, NULL, &p), RT_E_PRODUCER_IDS_EXHAUSTED);
    assert_null(p);
    append_one(f->e, "t", "still writable");
    tu_fixture_close(f); /* nothing counted: no RT_E_HANDLES_OPEN */
}

/* ---- rt_close and the handles still open ---- */

/* EN1: an open producer makes rt_close refuse (RT_E_HANDLES_OPEN) and change nothing: the engine
 * and the producer go on working, and once the producer is closed rt_close succeeds and what was
 * written is there at the next open. */
static void test_close_refused_while_producer_open(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, NULL, &p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "before", .value_len = 6, .timestamp_ms = -1},
        .sequence = -1};
    assert_int_equal(rt_producer_send(p, "t", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_close(f->e), RT_E_HANDLES_OPEN);
    assert_non_null(strstr(rt_error_detail(), "1 producer(s)"));
    /* Nothing was closed: the producer flushes, the engine appends and opens new handles. */
    assert_int_equal(rt_producer_flush(p, -1), 0);
    m.record.value = "after!";
    assert_int_equal(rt_producer_send(p, "t", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    append_one(f->e, "t", "plain");
    rt_producer *q = NULL;
    assert_int_equal(rt_producer_open(f->e, NULL, &q), 0);
    assert_int_equal(rt_close(f->e), RT_E_HANDLES_OPEN);
    assert_non_null(strstr(rt_error_detail(), "2 producer(s)"));
    assert_int_equal(rt_producer_close(q), 0);
    assert_int_equal(rt_producer_close(p), 0);
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(high_watermark(f->e, "t", 0), 3);
}

/* The same for a consumer (one with auto_commit, whose close writes through the engine). */
static void test_close_refused_while_consumer_open(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    append_one(f->e, "t", "one");
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = "g";
    co.auto_commit = true;
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    uint32_t zero = 0;
    assert_int_equal(rt_consumer_assign(c, "t", &zero, 1), 0);
    struct rt_record_view v;
    assert_int_equal(rt_consumer_poll(c, &v, NULL, NULL, 5000), 0);
    assert_int_equal(rt_close(f->e), RT_E_HANDLES_OPEN);
    assert_non_null(strstr(rt_error_detail(), "1 consumer(s)"));
    /* The view polled before the refused close is intact; the consumer goes on. */
    assert_int_equal(v.value_len, 3);
    assert_memory_equal(v.value, "one", 3);
    assert_int_equal(rt_consumer_commit(c), 0);
    assert_int_equal(rt_consumer_close(c), 0);
    tu_fixture_close(f);
    tu_fixture_open(f);
    int64_t committed = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, true, &committed), 0);
    assert_int_equal(committed, 1);
}

/* A fetch may outlive rt_close: its segment stays mapped, its view and records stay readable
 * until rt_fetch_release (an ASan build checks no freed memory is touched). */
static void test_fetch_outlives_close(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    append_one(f->e, "t", "kept");
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_COMMITTED, &fh), 0);
    tu_fixture_close(f); /* a fetch does not hold the engine open */
    const struct rt_fetch_view *view = rt_fetch_get(fh);
    assert_true(view->size_bytes > 0);
    assert_int_equal(view->high_watermark, 1);
    struct rt_records it;
    assert_int_equal(rt_records_init(&it, fh, 0), 0);
    struct rt_record_view rec;
    assert_int_equal(rt_records_next(&it, &rec), 0);
    assert_int_equal(rec.value_len, 4);
    assert_memory_equal(rec.value, "kept", 4);
    assert_int_equal(rt_records_next(&it, &rec), RT_E_END);
    rt_fetch_release(fh);
}

/* ---- thread rules ---- */

enum { SENDERS = 4, SENDS_PER_THREAD = 3000 };

struct sender {
    rt_producer *p;
    int id;
    _Atomic int *delivered;
    _Atomic int *failed;
};

static void count_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    struct sender *s = ctx;
    (void)offset;
    (void)duplicate;
    atomic_fetch_add(err ? s->failed : s->delivered, 1);
}

static void *send_main(void *arg)
{
    struct sender *s = arg;
    char key[8], value[32];
    snprintf(key, sizeof(key), "k%d", s->id);
    for (int i = 0; i < SENDS_PER_THREAD; i++) {
        snprintf(value, sizeof(value), "%d:%d", s->id, i);
        struct rt_producer_message m = {.record = {.key = key,
                                                   .key_len = (int32_t)strlen(key),
                                                   .value = value,
                                                   .value_len = (int32_t)strlen(value),
                                                   .timestamp_ms = -1},
                                        .sequence = -1};
        if (rt_producer_send(s->p, "t", -1, &m, count_delivery, s) != 0)
            return (void *)1;
        if (i % 500 == 0 && rt_producer_flush(s->p, -1) != 0) /* flushes overlap sends */
            return (void *)1;
    }
    return NULL;
}

/* One anonymous producer, four threads sending and flushing at once: every record is delivered
 * once and stored once, and each thread's records keep their order in the log. */
static void test_producer_send_and_flush_from_many_threads(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = 1 << 20;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, NULL, &p), 0);
    _Atomic int delivered = 0, failed = 0;
    struct sender s[SENDERS];
    pthread_t th[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        s[i] = (struct sender){.p = p, .id = i, .delivered = &delivered, .failed = &failed};
        assert_int_equal(pthread_create(&th[i], NULL, send_main, &s[i]), 0);
    }
    for (int i = 0; i < SENDERS; i++) {
        void *ret = NULL;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(atomic_load(&delivered), SENDERS * SENDS_PER_THREAD);
    assert_int_equal(atomic_load(&failed), 0);
    assert_int_equal(rt_producer_close(p), 0);
    int next[SENDERS] = {0};
    int stored = 0;
    for (uint32_t part = 0; part < 2; part++) {
        int64_t hw = high_watermark(f->e, "t", part), at = 0;
        while (at < hw) {
            rt_fetch *fh = NULL;
            assert_int_equal(rt_fetch_start(f->e, "t", part, at, 1 << 20, RT_READ_UNCOMMITTED, &fh),
                             0);
            struct rt_records it;
            assert_int_equal(rt_records_init(&it, fh, at), 0);
            struct rt_record_view v;
            while (rt_records_next(&it, &v) == 0) {
                char text[32] = {0};
                assert_true(v.value_len > 0 && v.value_len < (int32_t)sizeof(text));
                memcpy(text, v.value, (size_t)v.value_len);
                int id = -1, seq = -1;
                assert_int_equal(sscanf(text, "%d:%d", &id, &seq), 2);
                assert_true(id >= 0 && id < SENDERS);
                assert_int_equal(seq, next[id]); /* in order, none lost, none twice */
                next[id]++;
                stored++;
            }
            at = rt_records_next_offset(&it);
            rt_fetch_release(fh);
        }
    }
    assert_int_equal(stored, SENDERS * SENDS_PER_THREAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_topics_max_is_topics_full, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_producer_table_full_is_producers_full,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_consumer_assignment_full, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_positions_array_too_small, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_producer_partitions_full, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_producer_ids_exhausted, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_close_refused_while_producer_open, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_close_refused_while_consumer_open, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fetch_outlives_close, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_producer_send_and_flush_from_many_threads,
                                        tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
