/*
 * test_txn_verify.c — KIP-890 part 1 across two engines: the transactional-batch verifier
 * (rt_options.txn_verifier) and rt_txn_verify (docs/format.md G.9 TV1-TV5; engine.c), and the
 * broker's cache of verified transactions (tools/kafka/handlers/txn_verify_cache.c KVC1-KVC4).
 *
 * What it pins: engine A coordinates the transactional id; engine B leads the data partition and
 * has no transaction of its own. Without a verifier B refuses every transactional batch of A's
 * producer (its own coordinator knows none: RT_E_INVALID_TXN_STATE) — the state before the
 * seam. With a verifier that asks A (rt_txn_verify), B accepts exactly the batches whose
 * partition A has in the producer's ongoing transaction: not a partition A was not told of, not
 * a batch after EndTxn, not an older (fenced) epoch. rt_txn_verify changes nothing at A (a
 * verified partition is not added; asking by id answers RT_E_PRODUCER_FENCED for an old epoch).
 *
 * And the wire (txn_verify.c KTV4, KTV5; api_table.c KA9): AddPartitionsToTxn v4 encodes to
 * Kafka's bytes and decodes back, is described but not advertised (only a cluster node serves
 * it), the coordinator's answer to a VerifyOnly batch is per partition (NONE, INVALID_TXN_STATE,
 * PRODUCER_FENCED, INVALID_REQUEST without VerifyOnly) and changes nothing, and the answers map
 * to Kafka 3.6+'s Produce codes. The partition leader's question (KTV2) against a scripted
 * coordinator on a socket: one v4 VerifyOnly request naming the partitions, a NONE cached and the
 * rest mapped (a fenced epoch INVALID_PRODUCER_EPOCH, a top-level CLUSTER_AUTHORIZATION_FAILED
 * INVALID_TXN_STATE, a partition the answer leaves out or a closed connection
 * NOT_ENOUGH_REPLICAS), two transactions in one request, one id at two epochs in two, the kept
 * connection dialled again after a close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/handlers/txn_verify.h"
#include "tools/kafka/handlers/txn_verify_cache.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#define DATA "t"
#define TXID "tv-1"

struct verifier {
    rt_engine *coordinator; /* engine A */
    int calls;
};

/* B's verifier: asks A's coordinator by producer id (what a cluster's verifier does locally). */
static int ask_a(void *ctx, const char *topic, uint32_t partition, int64_t pid, int16_t epoch)
{
    struct verifier *v = ctx;
    v->calls++;
    return rt_txn_verify(v->coordinator, NULL, pid, epoch, topic, partition);
}

static rt_engine *open_dir(const char *dir, struct verifier *v)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    if (v) {
        o.txn_verifier = ask_a;
        o.txn_verifier_ctx = v;
    }
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

static int append_txn(rt_engine *e, uint32_t partition, int64_t pid, int16_t epoch, int32_t seq)
{
    uint8_t buf[512];
    size_t n = tu_batch(buf, sizeof buf, BATCH_ATTR_TRANSACTIONAL, pid, epoch, seq, 1, "v", seq, 1);
    int64_t off = -1;
    return rt_append_batch(e, DATA, partition, buf, n, &off);
}

static void test_remote_coordinator(void **state)
{
    (void)state;
    char *da = tu_mkdtemp(), *db = tu_mkdtemp();
    rt_engine *a = open_dir(da, NULL);
    assert_int_equal(rt_topic_create(a, DATA, 2), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(a, TXID, 60000, &pid, &epoch), 0);
    const struct rt_topic_partition t0 = {.topic = DATA, .partition = 0};
    assert_int_equal(rt_txn_add_partitions(a, TXID, pid, epoch, &t0, 1), 0);

    /* Before the seam: B's own coordinator knows nothing of A's producer. */
    rt_engine *b = open_dir(db, NULL);
    assert_int_equal(rt_topic_create(b, DATA, 2), 0);
    assert_int_equal(append_txn(b, 0, pid, epoch, 0), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_close(b), 0);

    /* TV1: with the verifier, B asks it instead, and accepts what A has. */
    struct verifier v = {.coordinator = a};
    b = open_dir(db, &v);
    assert_int_equal(append_txn(b, 0, pid, epoch, 0), 0);
    assert_int_equal(v.calls, 1);
    /* Not added at A: refused, nothing appended (TV2). */
    assert_int_equal(append_txn(b, 1, pid, epoch, 0), RT_E_INVALID_TXN_STATE);
    assert_non_null(strstr(rt_error_detail(), DATA));
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(b, DATA, 1, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, 0);
    /* TV3: asking changed nothing at A — t-1 is still not in the transaction. */
    assert_int_equal(rt_txn_verify(a, TXID, pid, epoch, DATA, 1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_verify(a, TXID, pid, epoch, DATA, 0), 0);
    /* A non-transactional batch never asks the verifier. */
    uint8_t buf[512];
    size_t n = tu_batch(buf, sizeof buf, 0, -1, -1, -1, 1, "plain", 0, 1);
    int calls = v.calls;
    assert_int_equal(rt_append_batch(b, DATA, 1, buf, n, NULL), 0);
    assert_int_equal(v.calls, calls);

    /* EndTxn at A (its markers go to A's partitions; B's marker by hand, as WriteTxnMarkers
     * would): a later batch of that producer is refused until it adds the partition again. */
    assert_int_equal(rt_txn_end(a, TXID, pid, epoch, true), 0);
    assert_int_equal(rt_txn_write_marker(b, DATA, 0, pid, epoch, true), 0);
    assert_int_equal(append_txn(b, 0, pid, epoch, 1), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_add_partitions(a, TXID, pid, epoch, &t0, 1), 0);
    assert_int_equal(append_txn(b, 0, pid, epoch, 1), 0);

    /* A new instance fences the old epoch: A aborts the open transaction (marker into B by hand
     * again) and the old epoch's batch is refused at B, the new one's accepted once added. */
    int64_t pid2 = -1;
    int16_t epoch2 = -1;
    assert_int_equal(rt_txn_init_producer(a, TXID, 60000, &pid2, &epoch2), 0);
    assert_true(pid2 == pid && epoch2 > epoch);
    assert_int_equal(rt_txn_write_marker(b, DATA, 0, pid, epoch2, false), 0);
    assert_int_equal(append_txn(b, 0, pid, epoch, 2), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(rt_txn_verify(a, TXID, pid, epoch, DATA, 0), RT_E_PRODUCER_FENCED);
    assert_int_equal(rt_txn_add_partitions(a, TXID, pid2, epoch2, &t0, 1), 0);
    assert_int_equal(append_txn(b, 0, pid2, epoch2, 0), 0);

    /* rt_txn_verify's own checks. */
    assert_int_equal(rt_txn_verify(a, TXID, -1, 0, DATA, 0), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_verify(a, "", pid, 0, DATA, 0), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_verify(a, "nobody", pid2, epoch2, DATA, 0), RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_verify(a, TXID, pid2, (int16_t)(epoch2 + 1), DATA, 0),
                     RT_E_INVALID_PRODUCER_EPOCH);

    assert_int_equal(rt_txn_end(a, TXID, pid2, epoch2, false), 0);
    assert_int_equal(rt_close(b), 0);
    assert_int_equal(rt_close(a), 0);
    tu_rmdir_free(da);
    tu_rmdir_free(db);
}

/* The broker's cache of verified (pid, epoch, topic-partition) (KVC1-KVC4). */
static void test_cache(void **state)
{
    (void)state;
    struct txn_verify_cache *c = txn_verify_cache_new(4);
    assert_non_null(c);
    assert_false(txn_verify_cache_has(c, 7, 1, "t", 0));
    txn_verify_cache_put(c, 7, 1, "t", 0);
    txn_verify_cache_put(c, 7, 1, "t", 1);
    txn_verify_cache_put(c, 8, 0, "t", 0);
    assert_true(txn_verify_cache_has(c, 7, 1, "t", 0));
    assert_true(txn_verify_cache_has(c, 7, 1, "t", 1));
    assert_false(txn_verify_cache_has(c, 7, 1, "u", 0)); /* another topic */
    assert_false(txn_verify_cache_has(c, 7, 0, "t", 0)); /* another epoch */
    assert_false(txn_verify_cache_has(c, 7, 2, "t", 0));
    /* KVC2: the marker in t-0 drops (7, t-0) only. */
    txn_verify_cache_forget(c, 7, "t", 0);
    assert_false(txn_verify_cache_has(c, 7, 1, "t", 0));
    assert_true(txn_verify_cache_has(c, 7, 1, "t", 1));
    assert_true(txn_verify_cache_has(c, 8, 0, "t", 0));
    /* KVC3: a newer epoch of producer 7 drops its older entries. */
    txn_verify_cache_put(c, 7, 2, "t", 2);
    assert_false(txn_verify_cache_has(c, 7, 1, "t", 1));
    assert_true(txn_verify_cache_has(c, 7, 2, "t", 2));
    /* ...and an older epoch never replaces a newer one. */
    txn_verify_cache_put(c, 7, 1, "t", 3);
    assert_false(txn_verify_cache_has(c, 7, 1, "t", 3));
    /* KVC4: bounded: beyond its capacity the oldest entry goes. */
    txn_verify_cache_put(c, 9, 0, "t", 0);
    txn_verify_cache_put(c, 10, 0, "t", 0);
    txn_verify_cache_put(c, 11, 0, "t", 0);
    assert_true(txn_verify_cache_count(c) <= 4);
    assert_true(txn_verify_cache_has(c, 11, 0, "t", 0));
    assert_false(txn_verify_cache_has(c, 8, 0, "t", 0));
    /* The marker for a whole producer (any partition). */
    txn_verify_cache_forget(c, 11, NULL, 0);
    assert_false(txn_verify_cache_has(c, 11, 0, "t", 0));
    txn_verify_cache_free(c);
}

/* AddPartitionsToTxn v4's request, by hand: Kafka's AddPartitionsToTxnRequest.json v4 (flexible:
 * compact arrays and strings, a tag section after each struct). */
static const uint8_t V4_REQUEST[] = {
    0x02,                           /* transactions: 1 */
    0x02, 'a',                      /* transactional_id "a" */
    0,    0,   0, 0, 0, 0, 0, 7,    /* producer_id 7 */
    0,    2,                        /* producer_epoch 2 */
    1,                              /* verify_only */
    0x02,                           /* topics: 1 */
    0x02, 't',                      /* name "t" */
    0x03, 0,   0, 0, 0, 0, 0, 0, 1, /* partitions [0, 1] */
    0,                              /* topic tags */
    0,                              /* transaction tags */
    0,                              /* request tags */
};

static void test_v4_codec(void **state)
{
    (void)state;
    int32_t parts[] = {0, 1};
    struct kmsg_txn_topic topic = {
        .name = kp_str_of("t"), .partitions = parts, .partitions_count = 2};
    struct kmsg_add_partitions_to_txn_transaction txn = {.transactional_id = kp_str_of("a"),
                                                         .producer_id = 7,
                                                         .producer_epoch = 2,
                                                         .verify_only = true,
                                                         .topics = &topic,
                                                         .topics_count = 1};
    struct kmsg_add_partitions_to_txn_request q = {.transactions = &txn, .transactions_count = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_add_partitions_to_txn_request_encode(&w, 4, &q), 0);
    assert_int_equal(w.len, sizeof V4_REQUEST);
    assert_memory_equal(w.buf, V4_REQUEST, sizeof V4_REQUEST);

    uint8_t mem[4096];
    struct kp_arena a;
    kp_arena_init(&a, mem, sizeof mem);
    struct kp_reader r;
    kp_reader_init(&r, V4_REQUEST, sizeof V4_REQUEST);
    struct kmsg_add_partitions_to_txn_request d;
    assert_int_equal(kmsg_add_partitions_to_txn_request_decode(&r, 4, &a, &d), 0);
    assert_int_equal(d.transactions_count, 1);
    assert_int_equal(d.topics_count, 0); /* the v0-3 fields are not in v4 */
    assert_int_equal(d.transactions[0].producer_id, 7);
    assert_int_equal(d.transactions[0].producer_epoch, 2);
    assert_true(d.transactions[0].verify_only);
    assert_int_equal(d.transactions[0].topics[0].partitions_count, 2);
    assert_int_equal(d.transactions[0].topics[0].partitions[1], 1);
    /* Every cut of the body fails to decode, never reads past it (ASan). */
    for (size_t cut = 0; cut < sizeof V4_REQUEST; cut++) {
        kp_arena_reset(&a);
        kp_reader_init(&r, V4_REQUEST, cut);
        assert_int_not_equal(kmsg_add_partitions_to_txn_request_decode(&r, 4, &a, &d), 0);
    }

    /* The response: throttle, error_code, results_by_transaction; read back. */
    struct kmsg_partition_error pe[] = {{.partition_index = 0, .error_code = 0},
                                        {.partition_index = 1, .error_code = 48}};
    struct kmsg_topic_errors te = {.name = kp_str_of("t"), .partitions = pe, .partitions_count = 2};
    struct kmsg_add_partitions_to_txn_result res = {
        .transactional_id = kp_str_of("a"), .topic_results = &te, .topic_results_count = 1};
    struct kmsg_add_partitions_to_txn_response m = {.results_by_transaction = &res,
                                                    .results_by_transaction_count = 1};
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_add_partitions_to_txn_response_encode(&w, 4, &m), 0);
    static const uint8_t V4_RESPONSE[] = {
        0,    0,    0,   0,           /* throttle_time_ms */
        0,    0,                      /* error_code */
        0x02, 0x02, 'a',              /* results_by_transaction: 1, "a" */
        0x02, 0x02, 't',              /* topic_results: 1, "t" */
        0x03,                         /* results: 2 */
        0,    0,    0,   0, 0, 0,  0, /* partition 0, NONE, tags */
        0,    0,    0,   1, 0, 48, 0, /* partition 1, INVALID_TXN_STATE, tags */
        0,    0,    0,                /* topic, result and response tags */
    };
    assert_int_equal(w.len, sizeof V4_RESPONSE);
    assert_memory_equal(w.buf, V4_RESPONSE, sizeof V4_RESPONSE);
    struct kmsg_add_partitions_to_txn_response back;
    kp_arena_reset(&a);
    kp_reader_init(&r, w.buf, w.len);
    assert_int_equal(kmsg_add_partitions_to_txn_response_decode(&r, 4, &a, &back), 0);
    assert_int_equal(back.results_by_transaction_count, 1);
    assert_int_equal(back.results_by_transaction[0].topic_results[0].partitions[1].error_code, 48);
    kp_writer_free(&w);

    /* KA9: described to v4, advertised to v3, v4 a cluster node's only. */
    assert_true(kafka_api_supported(KAFKA_ADD_PARTITIONS_TO_TXN, 3));
    assert_false(kafka_api_supported(KAFKA_ADD_PARTITIONS_TO_TXN, 4));
    assert_true(kafka_api_internal(KAFKA_ADD_PARTITIONS_TO_TXN, 4));
    assert_false(kafka_api_internal(KAFKA_ADD_PARTITIONS_TO_TXN, 3));
    assert_false(kafka_api_internal(KAFKA_ADD_PARTITIONS_TO_TXN, 5));
}

/* KTV5: the coordinator's answer; KTV4: the Produce codes. */
static void test_v4_answer(void **state)
{
    (void)state;
    char *da = tu_mkdtemp();
    rt_engine *a = open_dir(da, NULL);
    assert_int_equal(rt_topic_create(a, DATA, 2), 0);
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(a, TXID, 60000, &pid, &epoch), 0);
    int16_t old_epoch = epoch; /* fenced by the second init */
    assert_int_equal(rt_txn_init_producer(a, TXID, 60000, &pid, &epoch), 0);
    assert_true(epoch > old_epoch);
    const struct rt_topic_partition t0 = {.topic = DATA, .partition = 0};
    assert_int_equal(rt_txn_add_partitions(a, TXID, pid, epoch, &t0, 1), 0);

    int32_t parts[] = {0, 1};
    struct kmsg_txn_topic topic = {
        .name = kp_str_of(DATA), .partitions = parts, .partitions_count = 2};
    struct kmsg_add_partitions_to_txn_transaction txns[] = {
        {.transactional_id = kp_str_of(TXID),
         .producer_id = pid,
         .producer_epoch = epoch,
         .verify_only = true,
         .topics = &topic,
         .topics_count = 1},
        {.transactional_id = kp_str_of(TXID),
         .producer_id = pid,
         .producer_epoch = old_epoch,
         .verify_only = true,
         .topics = &topic,
         .topics_count = 1},
        {.transactional_id = kp_str_of(TXID),
         .producer_id = pid,
         .producer_epoch = epoch,
         .verify_only = false,
         .topics = &topic,
         .topics_count = 1},
        {.transactional_id = kp_str_of("nobody"),
         .producer_id = pid,
         .producer_epoch = epoch,
         .verify_only = true,
         .topics = &topic,
         .topics_count = 1},
    };
    struct kmsg_add_partitions_to_txn_request q = {.transactions = txns, .transactions_count = 4};
    uint8_t mem[4096];
    struct kp_arena ar;
    kp_arena_init(&ar, mem, sizeof mem);
    struct kmsg_add_partitions_to_txn_response m;
    assert_int_equal(kafka_txn_verify_answer(a, &q, &ar, &m), 0);
    assert_int_equal(m.error_code, KAFKA_NONE);
    assert_int_equal(m.results_by_transaction_count, 4);
    const int16_t want[4][2] = {{KAFKA_NONE, KAFKA_INVALID_TXN_STATE},
                                {KAFKA_PRODUCER_FENCED, KAFKA_PRODUCER_FENCED},
                                {KAFKA_INVALID_REQUEST, KAFKA_INVALID_REQUEST},
                                {KAFKA_INVALID_TXN_STATE, KAFKA_INVALID_TXN_STATE}};
    for (int t = 0; t < 4; t++) {
        const struct kmsg_topic_errors *te = &m.results_by_transaction[t].topic_results[0];
        assert_int_equal(te->partitions_count, 2);
        for (int p = 0; p < 2; p++) {
            assert_int_equal(te->partitions[p].partition_index, p);
            assert_int_equal(te->partitions[p].error_code, want[t][p]);
        }
    }
    /* Nothing changed: t-1 was asked about, not added. */
    assert_int_equal(rt_txn_verify(a, TXID, pid, epoch, DATA, 1), RT_E_INVALID_TXN_STATE);
    /* A too small arena is -1, never an overrun. */
    kp_arena_init(&ar, mem, 64);
    assert_int_equal(kafka_txn_verify_answer(a, &q, &ar, &m), -1);

    /* KTV4: what a partition leader answers the Produce. */
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_NONE), KAFKA_NONE);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_INVALID_TXN_STATE),
                     KAFKA_INVALID_TXN_STATE);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_PRODUCER_FENCED),
                     KAFKA_INVALID_PRODUCER_EPOCH);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_NOT_COORDINATOR),
                     KAFKA_NOT_ENOUGH_REPLICAS);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_NETWORK_EXCEPTION),
                     KAFKA_NOT_ENOUGH_REPLICAS);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_CONCURRENT_TRANSACTIONS),
                     KAFKA_NOT_ENOUGH_REPLICAS);
    assert_int_equal(kafka_txn_verify_produce_code(KAFKA_CLUSTER_AUTHORIZATION_FAILED),
                     KAFKA_INVALID_TXN_STATE);
    assert_int_equal(kafka_txn_verify_code(RT_E_NOT_COORDINATOR), KAFKA_NOT_COORDINATOR);
    assert_int_equal(kafka_txn_verify_code(RT_E_INVALID_PRODUCER_EPOCH),
                     KAFKA_INVALID_PRODUCER_EPOCH);

    /* KTV1: without `__transaction_state` in the image (or no image) the node itself. */
    assert_int_equal(kafka_txn_coordinator_node(NULL, 3, TXID), 3);

    assert_int_equal(rt_txn_end(a, TXID, pid, epoch, false), 0);
    assert_int_equal(rt_close(a), 0);
    tu_rmdir_free(da);
}

/* ---- a scripted coordinator (KTV2's other end) ---- */

struct fake {
    int lfd;
    uint16_t port;
    /* per request: the answer body (after the header's tags), or len 0: close instead */
    const uint8_t *answers[8];
    size_t answer_len[8];
    int count;
    int served;       /* requests read */
    int connections;  /* accepted */
    bool verify_only; /* of the last request */
    int32_t partitions_asked;
    int32_t transactions; /* of the last request */
};

static bool read_full(int fd, void *buf, size_t n)
{
    size_t at = 0;
    while (at < n) {
        ssize_t k = read(fd, (uint8_t *)buf + at, n - at);
        if (k <= 0)
            return false;
        at += (size_t)k;
    }
    return true;
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    while (f->served < f->count) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            break;
        f->connections++;
        while (f->served < f->count) {
            uint8_t len4[4];
            if (!read_full(fd, len4, 4))
                break;
            uint32_t n = (uint32_t)len4[0] << 24 | (uint32_t)len4[1] << 16 |
                         (uint32_t)len4[2] << 8 | len4[3];
            uint8_t *frame = malloc(n);
            if (!frame || !read_full(fd, frame, n)) {
                free(frame);
                break;
            }
            /* header v2: key, version, correlation id, client id, tags */
            size_t at = 8;
            int16_t cid_len = (int16_t)(frame[at] << 8 | frame[at + 1]);
            at += 2 + (size_t)(cid_len > 0 ? cid_len : 0) + 1;
            struct kp_reader r;
            kp_reader_init(&r, frame + at, n - at);
            static uint8_t mem[8192];
            struct kp_arena a;
            kp_arena_init(&a, mem, sizeof mem);
            struct kmsg_add_partitions_to_txn_request q;
            int key = frame[0] << 8 | frame[1], ver = frame[2] << 8 | frame[3];
            if (key == 24 && ver == 4 &&
                kmsg_add_partitions_to_txn_request_decode(&r, 4, &a, &q) == 0 &&
                q.transactions_count >= 1) {
                f->verify_only = q.transactions[0].verify_only;
                f->transactions = q.transactions_count;
                f->partitions_asked = 0;
                for (int32_t t = 0; t < q.transactions[0].topics_count; t++)
                    f->partitions_asked += q.transactions[0].topics[t].partitions_count;
            }
            int i = f->served++;
            if (f->answer_len[i] == 0) {
                free(frame);
                break; /* close */
            }
            uint32_t out_len = 4 + 1 + (uint32_t)f->answer_len[i];
            uint8_t head[9] = {(uint8_t)(out_len >> 24),
                               (uint8_t)(out_len >> 16),
                               (uint8_t)(out_len >> 8),
                               (uint8_t)out_len,
                               frame[4],
                               frame[5],
                               frame[6],
                               frame[7],
                               0};
            free(frame);
            if (write(fd, head, sizeof head) != (ssize_t)sizeof head ||
                write(fd, f->answers[i], f->answer_len[i]) != (ssize_t)f->answer_len[i])
                break;
        }
        close(fd);
    }
    return NULL;
}

/* A v4 answer for transaction "tv-1", topic "t", partitions 0 and 1 with these codes; top-level
 * error `top`; with `only_first`, partition 1 left out. */
static size_t answer(uint8_t *b, int16_t top, int16_t c0, int16_t c1, bool only_first)
{
    size_t n = 0;
    const uint8_t head[] = {
        0,   0,    0,    0,   (uint8_t)(top >> 8),     (uint8_t)top, 0x02, 0x05, 't', 'v', '-',
        '1', 0x02, 0x02, 't', only_first ? 0x02 : 0x03};
    memcpy(b, head, sizeof head);
    n = sizeof head;
    const uint8_t p0[] = {0, 0, 0, 0, (uint8_t)(c0 >> 8), (uint8_t)c0, 0};
    memcpy(b + n, p0, sizeof p0);
    n += sizeof p0;
    if (!only_first) {
        const uint8_t p1[] = {0, 0, 0, 1, (uint8_t)(c1 >> 8), (uint8_t)c1, 0};
        memcpy(b + n, p1, sizeof p1);
        n += sizeof p1;
    }
    b[n++] = 0; /* topic tags */
    b[n++] = 0; /* transaction tags */
    b[n++] = 0; /* response tags */
    return n;
}

static void test_ask_remote(void **state)
{
    (void)state;
    uint8_t a0[64], a1[64], a2[64], a3[64], a5[64], a6[64];
    struct fake f = {.count = 7};
    f.answers[0] = a0;
    f.answer_len[0] = answer(a0, 0, KAFKA_NONE, KAFKA_INVALID_TXN_STATE, false);
    f.answers[1] = a1;
    f.answer_len[1] = answer(a1, 0, KAFKA_PRODUCER_FENCED, KAFKA_PRODUCER_FENCED, false);
    f.answers[2] = a2;
    f.answer_len[2] = answer(a2, KAFKA_CLUSTER_AUTHORIZATION_FAILED, 0, 0, false);
    f.answers[3] = a3;
    f.answer_len[3] = answer(a3, 0, KAFKA_NONE, 0, true);
    f.answer_len[4] = 0; /* the connection closed instead */
    f.answers[5] = a5;
    f.answer_len[5] = answer(a5, 0, KAFKA_NONE, 0, true);
    f.answers[6] = a6;
    f.answer_len[6] = answer(a6, 0, KAFKA_NONE, 0, true);
    f.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(f.lfd, 4), 0);
    socklen_t sl = sizeof sa;
    assert_int_equal(getsockname(f.lfd, (struct sockaddr *)&sa, &sl), 0);
    f.port = ntohs(sa.sin_port);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_main, &f), 0);

    assert_int_equal(kafka_txn_verify_start(1), 0);
    const struct kafka_txn_verify_question q2[] = {{"tv-1", 9, 3, "t", 0}, {"tv-1", 9, 3, "t", 1}};
    int16_t codes[2];
#define ASK(qs, n) kafka_txn_verify_ask_node(2, "127.0.0.1", f.port, qs, n, codes)
    assert_int_equal(ASK(q2, 2), 0);
    assert_true(f.verify_only);
    assert_int_equal(f.transactions, 1);
    assert_int_equal(f.partitions_asked, 2);
    assert_int_equal(codes[0], KAFKA_NONE);
    assert_int_equal(codes[1], KAFKA_INVALID_TXN_STATE);
    assert_true(kafka_txn_verify_cached(9, 3, "t", 0)); /* KTV3: only the NONE is cached */
    assert_false(kafka_txn_verify_cached(9, 3, "t", 1));
    /* The engine's verifier answers from the cache (no engine attached: a miss is refused). */
    assert_int_equal(kafka_txn_verify_batch(NULL, "t", 0, 9, 3), 0);
    assert_int_equal(kafka_txn_verify_batch(NULL, "t", 1, 9, 3), RT_E_NOT_COORDINATOR);
    /* KTV6: the marker in t-0 forgets it. */
    kafka_txn_verify_marker(9, "t", 0);
    assert_false(kafka_txn_verify_cached(9, 3, "t", 0));

    /* KTV4: PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH */
    assert_int_equal(ASK(q2, 2), 0);
    assert_int_equal(codes[0], KAFKA_INVALID_PRODUCER_EPOCH);
    assert_int_equal(codes[1], KAFKA_INVALID_PRODUCER_EPOCH);
    /* a top-level CLUSTER_AUTHORIZATION_FAILED -> INVALID_TXN_STATE for all */
    assert_int_equal(ASK(q2, 2), 0);
    assert_int_equal(codes[0], KAFKA_INVALID_TXN_STATE);
    assert_int_equal(codes[1], KAFKA_INVALID_TXN_STATE);
    /* KTV2: two transactions in one request; the answer names only tv-1's t-0, so tv-2's
     * partition is not verified (retriable) */
    const struct kafka_txn_verify_question qb[] = {{"tv-1", 9, 3, "t", 0}, {"tv-2", 10, 0, "t", 1}};
    int served = f.served;
    assert_int_equal(ASK(qb, 2), 0);
    assert_int_equal(f.served, served + 1);
    assert_int_equal(f.transactions, 2);
    assert_int_equal(codes[0], KAFKA_NONE);
    assert_int_equal(codes[1], KAFKA_NOT_ENOUGH_REPLICAS);
    assert_false(kafka_txn_verify_cached(10, 0, "t", 1));
    assert_int_equal(f.connections, 1); /* one kept connection so far */
    /* no answer (closed): NOT_ENOUGH_REPLICAS, nothing cached */
    kafka_txn_verify_marker(9, NULL, 0);
    assert_int_equal(ASK(q2, 2), 0);
    assert_int_equal(codes[0], KAFKA_NOT_ENOUGH_REPLICAS);
    assert_int_equal(codes[1], KAFKA_NOT_ENOUGH_REPLICAS);
    assert_false(kafka_txn_verify_cached(9, 3, "t", 0));
    /* one id at two epochs: two requests (an id once per request), the second dialled anew */
    const struct kafka_txn_verify_question qd[] = {{"tv-1", 9, 3, "t", 0}, {"tv-1", 9, 4, "t", 0}};
    served = f.served;
    assert_int_equal(ASK(qd, 2), 0);
    assert_int_equal(f.served, served + 2);
    assert_int_equal(f.connections, 2);
    assert_int_equal(f.transactions, 1);
    assert_int_equal(codes[0], KAFKA_NONE);
    assert_int_equal(codes[1], KAFKA_NONE);
    assert_true(kafka_txn_verify_cached(9, 4, "t", 0));
    assert_false(kafka_txn_verify_cached(9, 3, "t", 0)); /* KVC3: the newer epoch replaced it */
#undef ASK

    kafka_txn_verify_stop();
    pthread_join(th, NULL);
    close(f.lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_coordinator), cmocka_unit_test(test_cache),
        cmocka_unit_test(test_v4_codec),           cmocka_unit_test(test_v4_answer),
        cmocka_unit_test(test_ask_remote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
