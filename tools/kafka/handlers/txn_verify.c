/*
 * txn_verify.c — KIP-890 part 1 across a cluster's nodes (docs/cluster.md §7.3; the engine's
 * seam is docs/format.md G.9). It owns: where a transactional id's coordinator is (one
 * function), the engine's verifier of a cluster node, the parking of a transactional Produce
 * while the coordinator is asked (one sender thread, a kept connection per node), the mapping of
 * the coordinator's answers to Produce codes, and the coordinator's answer to AddPartitionsToTxn
 * v4 VerifyOnly. It never appends, never changes a transaction, and never blocks a loop thread.
 * A single broker (no --voters) runs none of it.
 *
 * Invariants:
 *   KTV1  The coordinator of a transactional id is found by kafka_txn_coordinator_node alone:
 *         the leader of `__transaction_state`-0 when the image has that topic, else this node
 *         (each node keeps its own `__transaction_state` until the controller creates it).
 *   KTV2  A transactional Produce whose coordinator is another node and which has a
 *         transactional partition this node leads that the cache does not hold is handed to the
 *         sender thread before anything is checked or appended (answer NET_PENDING); the
 *         thread asks the coordinator (AddPartitionsToTxn v4, VerifyOnly, every such
 *         partition; the Produces queued meanwhile, up to TV_BATCH_MAX, in one round: one
 *         request per coordinator node, each transactional id at most once in a request), then
 *         runs kafka_handle_produce again with the answers attached and completes the request. No loop thread waits for the network; the question is bounded
 *         by TV_TIMEOUT_MS.
 *   KTV3  The engine's verifier answers 0 for a (producer id, epoch, partition) the
 *         coordinator answered NONE: in the cache (put only from a NONE), or in the job whose
 *         second pass runs on the calling thread (so an entry the cache dropped in between
 *         still stands for that Produce); else it asks the local coordinator
 *         (rt_txn_verify): a partition the remote coordinator did not confirm is never
 *         appended.
 *   KTV4  A partition the coordinator refused is answered, appending nothing, with Kafka 3.6+'s
 *         Produce code: PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager);
 *         CONCURRENT_TRANSACTIONS, NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
 *         COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR -> NOT_ENOUGH_REPLICAS (ReplicaManager:
 *         retriable without a metadata refresh); a top-level CLUSTER_AUTHORIZATION_FAILED ->
 *         INVALID_TXN_STATE; the rest (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH,
 *         INVALID_PRODUCER_ID_MAPPING) as answered. No answer (connection, timeout, bytes that
 *         do not decode) is NETWORK_EXCEPTION, so NOT_ENOUGH_REPLICAS.
 *   KTV5  AddPartitionsToTxn v4 is served only on a cluster node (api_table.c KA9, never
 *         advertised), on the admin thread (the id's lock may be held by a marker writer's
 *         network round, G.8 MW5); with --authorizer on, a caller without CLUSTER_ACTION on the
 *         cluster is answered CLUSTER_AUTHORIZATION_FAILED at the top level and nothing else
 *         (Kafka's KafkaApis); each VerifyOnly transaction is answered per partition from
 *         rt_txn_verify by transactional id, changing nothing; a transaction without VerifyOnly
 *         (adding partitions from a broker) is answered INVALID_REQUEST per partition (ringtail
 *         nodes never send it).
 *   KTV6  The cache forgets a producer's partition when this node writes that producer's marker
 *         into it, and a producer's older epochs when a newer one is put (KVC2, KVC3).
 *   KTV7  A job holds what the second pass needs (the codes by partition) and is freed by the
 *         thread once kafka_handle_produce returned; the slot points to it only meanwhile.
 */
#include "tools/kafka/handlers/txn_verify.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/txn_verify_cache.h"

#define TV_TIMEOUT_MS      5000       /* one question to a coordinator (KTV2) */
#define TV_CACHE_ENTRIES   4096       /* verified (pid, epoch, partition) kept (KVC4) */
#define TV_NODES_MAX       64         /* kept connections, one per coordinator node */
#define TV_ARENA_BYTES     (1u << 20) /* a v4 answer's decoded arrays */
#define TV_ID_BYTES_MAX    1024       /* the engine's limit on transactional ids */
#define TV_VERSION         4
#define TV_BATCH_MAX       32   /* Produces asked about in one round (KTV2) */
#define TV_TOPICS_MAX      64   /* topics of one transaction in a question */
#define TV_PARTS_MAX       1024 /* partitions of one transaction in a question */
#define TXN_STATE_TOPIC    "__transaction_state"
#define BATCH_OFF_PRODUCER 43 /* producerId i64, then producerEpoch i16 at 51 */
#define BATCH_ATTR_TXN     0x10

/* One partition asked about, and its answer. */
struct tv_part {
    char topic[RT_TOPIC_NAME_MAX + 1];
    int32_t partition;
    int16_t code; /* the Produce code (KTV4) */
};

struct kafka_txn_verify_job {
    struct kafka_txn_verify_job *next;
    struct kafka_slot *slot;
    char id[TV_ID_BYTES_MAX + 1];
    int64_t pid;
    int16_t epoch;
    int32_t node; /* the coordinator (KTV1), -1: none now */
    size_t count;
    struct tv_part parts[];
};

struct tv_conn {
    int32_t node;
    struct kclient_conn conn;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running, stopping;
    pthread_t thread;
    struct kafka_txn_verify_job *head, *tail;
    struct txn_verify_cache *cache;
    _Atomic(rt_engine *) engine;
    int32_t self;
    struct tv_conn conns[TV_NODES_MAX]; /* the thread's own */
    uint8_t *arena;
} tv = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- where the coordinator is (KTV1) ---- */

int32_t kafka_txn_coordinator_node(const struct metadata_image *img, int32_t self,
                                   const char *transactional_id)
{
    (void)transactional_id; /* `__transaction_state` has one partition: every id maps to 0 */
    if (!img)
        return self;
    const struct mi_topic *t = metadata_image_topic(img, TXN_STATE_TOPIC);
    if (!t)
        return self;
    if (t->partitions_count < 1 || !t->partitions[0].exists)
        return -1;
    return t->partitions[0].leader;
}

/* ---- codes (KTV4, KTV5) ---- */

int16_t kafka_txn_verify_code(int rc)
{
    switch (rc) {
    case 0:
        return KAFKA_NONE;
    case RT_E_INVALID_TXN_STATE:
        return KAFKA_INVALID_TXN_STATE;
    case RT_E_PRODUCER_FENCED:
        return KAFKA_PRODUCER_FENCED;
    case RT_E_INVALID_PRODUCER_EPOCH:
        return KAFKA_INVALID_PRODUCER_EPOCH;
    case RT_E_NOT_COORDINATOR:
        return KAFKA_NOT_COORDINATOR;
    case RT_E_CONCURRENT_TRANSACTIONS:
        return KAFKA_CONCURRENT_TRANSACTIONS;
    case RT_E_INVALID_ARGUMENT:
        return KAFKA_INVALID_REQUEST;
    default:
        return kafka_error_from_rt(rc);
    }
}

int16_t kafka_txn_verify_produce_code(int16_t code)
{
    switch (code) {
    case KAFKA_PRODUCER_FENCED:
        return KAFKA_INVALID_PRODUCER_EPOCH;
    case KAFKA_CONCURRENT_TRANSACTIONS:
    case KAFKA_NETWORK_EXCEPTION:
    case KAFKA_COORDINATOR_LOAD_IN_PROGRESS:
    case KAFKA_COORDINATOR_NOT_AVAILABLE:
    case KAFKA_NOT_COORDINATOR:
        return KAFKA_NOT_ENOUGH_REPLICAS;
    case KAFKA_CLUSTER_AUTHORIZATION_FAILED:
        return KAFKA_INVALID_TXN_STATE;
    default:
        return code;
    }
}

/* ---- the engine's verifier (KTV3) ---- */

/* The job whose second pass runs on this thread (KTV3, KTV7): its answers stand even if the
 * cache dropped them meanwhile (KVC4). */
static _Thread_local const struct kafka_txn_verify_job *tv_current;

static bool current_confirms(const char *topic, uint32_t partition, int64_t pid, int16_t epoch)
{
    const struct kafka_txn_verify_job *job = tv_current;
    if (!job || job->pid != pid || job->epoch != epoch)
        return false;
    for (size_t i = 0; i < job->count; i++)
        if ((uint32_t)job->parts[i].partition == partition &&
            strcmp(job->parts[i].topic, topic) == 0)
            return job->parts[i].code == KAFKA_NONE;
    return false;
}

int kafka_txn_verify_batch(void *ctx, const char *topic, uint32_t partition, int64_t producer_id,
                           int16_t producer_epoch)
{
    (void)ctx;
    if (current_confirms(topic, partition, producer_id, producer_epoch) ||
        txn_verify_cache_has(tv.cache, producer_id, producer_epoch, topic, partition))
        return 0;
    rt_engine *e = atomic_load_explicit(&tv.engine, memory_order_acquire);
    if (!e)
        return RT_E_NOT_COORDINATOR;
    return rt_txn_verify(e, NULL, producer_id, producer_epoch, topic, partition);
}

void kafka_txn_verify_marker(int64_t producer_id, const char *topic, uint32_t partition)
{
    txn_verify_cache_forget(tv.cache, producer_id, topic, partition); /* KTV6 */
}

/* ---- the coordinator's side (KTV5) ---- */

static bool copy_name(struct kp_str n, char *out, size_t max)
{
    if (n.len <= 0 || (size_t)n.len > max || memchr(n.ptr, 0, (size_t)n.len))
        return false;
    memcpy(out, n.ptr, (size_t)n.len);
    out[n.len] = 0;
    return true;
}

int kafka_txn_verify_answer(rt_engine *engine, const struct kmsg_add_partitions_to_txn_request *q,
                            struct kp_arena *a, struct kmsg_add_partitions_to_txn_response *out)
{
    struct kp_reader r = {0}; /* kp_arena_array's error flag only */
    *out = (struct kmsg_add_partitions_to_txn_response){0};
    int32_t nt = q->transactions_count > 0 ? q->transactions_count : 0;
    struct kmsg_add_partitions_to_txn_result *res =
        nt ? kp_arena_array(&r, a, nt, sizeof(*res)) : NULL;
    if (nt && !res)
        return -1;
    for (int32_t i = 0; i < nt; i++) {
        const struct kmsg_add_partitions_to_txn_transaction *t = &q->transactions[i];
        char id[TV_ID_BYTES_MAX + 1];
        bool id_ok = copy_name(t->transactional_id, id, TV_ID_BYTES_MAX);
        int32_t ntp = t->topics_count > 0 ? t->topics_count : 0;
        struct kmsg_topic_errors *te = ntp ? kp_arena_array(&r, a, ntp, sizeof(*te)) : NULL;
        if (ntp && !te)
            return -1;
        res[i] = (struct kmsg_add_partitions_to_txn_result){.transactional_id = t->transactional_id,
                                                            .topic_results = te,
                                                            .topic_results_count = ntp};
        for (int32_t k = 0; k < ntp; k++) {
            int32_t np = t->topics[k].partitions_count > 0 ? t->topics[k].partitions_count : 0;
            struct kmsg_partition_error *pe = np ? kp_arena_array(&r, a, np, sizeof(*pe)) : NULL;
            if (np && !pe)
                return -1;
            te[k] = (struct kmsg_topic_errors){
                .name = t->topics[k].name, .partitions = pe, .partitions_count = np};
            char topic[RT_TOPIC_NAME_MAX + 1];
            bool topic_ok = copy_name(t->topics[k].name, topic, RT_TOPIC_NAME_MAX);
            for (int32_t j = 0; j < np; j++) {
                int32_t p = t->topics[k].partitions[j];
                int16_t code = KAFKA_INVALID_REQUEST;
                if (id_ok && topic_ok && t->verify_only && p >= 0)
                    code = kafka_txn_verify_code(rt_txn_verify(
                        engine, id, t->producer_id, t->producer_epoch, topic, (uint32_t)p));
                pe[j] = (struct kmsg_partition_error){.partition_index = p, .error_code = code};
            }
        }
    }
    out->results_by_transaction = res;
    out->results_by_transaction_count = nt;
    return 0;
}

enum net_verdict kafka_handle_add_partitions_to_txn_v4(struct kafka_slot *s)
{
    const struct kmsg_add_partitions_to_txn_request *q = &s->msg.add_partitions_to_txn;
    size_t need = 64;
    for (int32_t i = 0; i < q->transactions_count; i++) {
        need += sizeof(struct kmsg_add_partitions_to_txn_result) + 16;
        for (int32_t k = 0; k < q->transactions[i].topics_count; k++)
            need += sizeof(struct kmsg_topic_errors) + 16 +
                    (size_t)(q->transactions[i].topics[k].partitions_count > 0
                                 ? q->transactions[i].topics[k].partitions_count
                                 : 0) *
                        sizeof(struct kmsg_partition_error) +
                    16;
    }
    if (kafka_resp_reserve(s, need) != 0)
        return NET_CLOSE;
    struct kmsg_add_partitions_to_txn_response m = {0};
    if (!kafka_authorize_cluster(s, ACL_OP_CLUSTER_ACTION)) /* KTV5: Kafka's rule for v4 */
        m.error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
    else if (kafka_txn_verify_answer(s->server->engine, q, &s->resp, &m) != 0)
        return NET_CLOSE; /* sized above; cannot happen */
    kafka_response_begin(s);
    kmsg_add_partitions_to_txn_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- the Produce path (KTV2, KTV4, KTV7) ---- */

static uint64_t load_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The transactional producer of a record set (its first batch's), false for none. */
static bool txn_producer_of(struct kp_bytes rec, int64_t *pid, int16_t *epoch)
{
    if (!rec.ptr || rec.len < RT_BATCH_HEADER_BYTES || rec.ptr[RT_BATCH_OFF_MAGIC] != 2)
        return false;
    if (!(load_be(rec.ptr + RT_BATCH_OFF_ATTRIBUTES, 2) & BATCH_ATTR_TXN))
        return false;
    *pid = (int64_t)load_be(rec.ptr + BATCH_OFF_PRODUCER, 8);
    *epoch = (int16_t)load_be(rec.ptr + BATCH_OFF_PRODUCER + 8, 2);
    return *pid >= 0 && *epoch >= 0;
}

struct coord_look {
    int32_t self, node;
    const char *id;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
    bool addressed;
};

static void coord_lookup(void *ctx, const struct metadata_image *img)
{
    struct coord_look *l = ctx;
    l->node = kafka_txn_coordinator_node(img, l->self, l->id);
    const struct mi_broker *b = l->node >= 0 ? metadata_image_broker(img, l->node) : NULL;
    if (b && !b->fenced) {
        snprintf(l->host, sizeof l->host, "%s", b->host);
        l->port = b->port;
        l->addressed = true;
    }
}

bool kafka_txn_verify_park(struct kafka_slot *s)
{
    const struct kmsg_produce_request *q = &s->msg.produce;
    struct metadata_node *mn = kafka_cluster(s->server);
    if (!mn || !tv.running || s->txn_verify || q->transactional_id.len <= 0 ||
        q->transactional_id.len > TV_ID_BYTES_MAX)
        return false; /* a single broker, the second pass, or not transactional */
    char id[TV_ID_BYTES_MAX + 1];
    if (!copy_name(q->transactional_id, id, TV_ID_BYTES_MAX))
        return false; /* the engine's verifier refuses it as any other */
    if (!kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE))
        return false; /* KZ2 refuses it: nobody is asked for a producer that may not write */
    struct coord_look l = {.self = tv.self, .node = -1, .id = id};
    metadata_node_read(mn, coord_lookup, &l);
    if (l.node == tv.self)
        return false; /* KTV3: the local coordinator answers at the append */
    struct replica_state *rs = metadata_node_replicas(mn);
    size_t count = 0;
    int64_t pid = -1;
    int16_t epoch = -1;
    for (int32_t t = 0; t < q->topics_count; t++)
        count += (size_t)(q->topics[t].partitions_count > 0 ? q->topics[t].partitions_count : 0);
    if (count == 0)
        return false;
    struct kafka_txn_verify_job *job = calloc(1, sizeof(*job) + count * sizeof(struct tv_part));
    if (!job)
        return false; /* then the engine's verifier refuses what is not cached */
    size_t n = 0;
    for (int32_t t = 0; t < q->topics_count; t++) {
        char name[RT_TOPIC_NAME_MAX + 1];
        if (!kafka_topic_name(q->topics[t].name, name))
            continue;
        for (int32_t p = 0; p < q->topics[t].partitions_count; p++) {
            const struct kmsg_produce_partition *qp = &q->topics[t].partitions[p];
            int64_t bp = -1;
            int16_t be = -1;
            if (qp->index < 0 || !txn_producer_of(qp->records, &bp, &be))
                continue;
            if (pid < 0) {
                pid = bp;
                epoch = be;
            }
            if (bp != pid || be != epoch) /* one producer per request: the rest unverified */
                continue;
            if (txn_verify_cache_has(tv.cache, pid, epoch, name, (uint32_t)qp->index))
                continue;
            if (rs && rs_check(rs, name, qp->index, -1, NULL, NULL) != KAFKA_NONE)
                continue; /* not led here: the second pass answers that */
            struct tv_part *tp = &job->parts[n++];
            memcpy(tp->topic, name, sizeof tp->topic);
            tp->partition = qp->index;
            tp->code = KAFKA_NONE;
        }
    }
    if (n == 0) {
        free(job);
        return false;
    }
    job->slot = s;
    memcpy(job->id, id, sizeof id);
    job->pid = pid;
    job->epoch = epoch;
    job->node = l.addressed ? l.node : -1;
    job->count = n;
    pthread_mutex_lock(&tv.mu);
    if (!tv.running || tv.stopping) {
        pthread_mutex_unlock(&tv.mu);
        free(job);
        return false;
    }
    if (tv.tail)
        tv.tail->next = job;
    else
        tv.head = job;
    tv.tail = job;
    pthread_cond_signal(&tv.cv);
    pthread_mutex_unlock(&tv.mu);
    return true;
}

int16_t kafka_txn_verify_error(const struct kafka_slot *s, const char *topic, int32_t partition)
{
    const struct kafka_txn_verify_job *job = s->txn_verify;
    if (!job)
        return KAFKA_NONE;
    for (size_t i = 0; i < job->count; i++)
        if (job->parts[i].partition == partition && strcmp(job->parts[i].topic, topic) == 0)
            return job->parts[i].code;
    return KAFKA_NONE;
}

static int encode_request(struct kp_writer *w, int16_t version, const void *req)
{
    return kmsg_add_partitions_to_txn_request_encode(w, version, req);
}

static struct kclient_conn *conn_for(int32_t node)
{
    struct tv_conn *free_slot = NULL;
    for (size_t i = 0; i < TV_NODES_MAX; i++) {
        if (tv.conns[i].node == node)
            return &tv.conns[i].conn;
        if (tv.conns[i].node < 0 && !free_slot)
            free_slot = &tv.conns[i];
    }
    if (!free_slot) { /* more coordinator nodes than kept connections: reuse the first */
        kclient_conn_close(&tv.conns[0].conn);
        free_slot = &tv.conns[0];
    }
    free_slot->node = node;
    return &free_slot->conn;
}

/* Sets every partition's code to `code` (a v4 code, mapped by KTV4). */
static void job_fail(struct kafka_txn_verify_job *job, int16_t code)
{
    for (size_t i = 0; i < job->count; i++)
        job->parts[i].code = kafka_txn_verify_produce_code(code);
}

/* One transaction of a request: the job's partitions grouped by topic (at most TV_TOPICS_MAX
 * topics and TV_PARTS_MAX partitions; a partition left out is not in the answer: retried, KTV4).
 * `topics` and `parts` are the caller's, TV_TOPICS_MAX and TV_PARTS_MAX long. */
static void txn_of(const struct kafka_txn_verify_job *job, struct kmsg_txn_topic *topics,
                   int32_t *parts, struct kmsg_add_partitions_to_txn_transaction *out)
{
    size_t nt = 0, np = 0;
    for (size_t i = 0; i < job->count; i++) {
        size_t k = 0;
        while (k < nt && strcmp(topics[k].name.ptr, job->parts[i].topic) != 0)
            k++;
        if (k == nt && nt < TV_TOPICS_MAX)
            topics[nt++] = (struct kmsg_txn_topic){.name = kp_str_of(job->parts[i].topic)};
    }
    for (size_t k = 0; k < nt; k++) {
        topics[k].partitions = parts + np;
        for (size_t i = 0; i < job->count && np < TV_PARTS_MAX; i++)
            if (strcmp(topics[k].name.ptr, job->parts[i].topic) == 0) {
                parts[np++] = job->parts[i].partition;
                topics[k].partitions_count++;
            }
    }
    *out = (struct kmsg_add_partitions_to_txn_transaction){.transactional_id = kp_str_of(job->id),
                                                           .producer_id = job->pid,
                                                           .producer_epoch = job->epoch,
                                                           .verify_only = true,
                                                           .topics = topics,
                                                           .topics_count = (int32_t)nt};
}

static bool str_is(struct kp_str s, const char *c)
{
    return s.len >= 0 && (size_t)s.len == strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

/* The job's codes from a decoded answer (KTV3, KTV4): a partition it does not name stays
 * unverified (NETWORK_EXCEPTION, retried). */
static void job_apply(struct kafka_txn_verify_job *job,
                      const struct kmsg_add_partitions_to_txn_response *r)
{
    for (size_t i = 0; i < job->count; i++) {
        int16_t c = KAFKA_NETWORK_EXCEPTION;
        for (int32_t x = 0; x < r->results_by_transaction_count; x++) {
            const struct kmsg_add_partitions_to_txn_result *tr = &r->results_by_transaction[x];
            if (!str_is(tr->transactional_id, job->id))
                continue;
            for (int32_t k = 0; k < tr->topic_results_count; k++) {
                const struct kmsg_topic_errors *te = &tr->topic_results[k];
                if (!str_is(te->name, job->parts[i].topic))
                    continue;
                for (int32_t j = 0; j < te->partitions_count; j++)
                    if (te->partitions[j].partition_index == job->parts[i].partition)
                        c = te->partitions[j].error_code;
            }
        }
        if (c == KAFKA_NONE) /* KTV3: only the coordinator's NONE is cached */
            txn_verify_cache_put(tv.cache, job->pid, job->epoch, job->parts[i].topic,
                                 (uint32_t)job->parts[i].partition);
        job->parts[i].code = kafka_txn_verify_produce_code(c);
    }
}

/* The v4 question about `n` jobs of distinct transactional ids to node `node` at host:port, in
 * one request (KTV2, KTV4); the sender thread's only. */
static void ask_remote(struct kafka_txn_verify_job **jobs, size_t n, int32_t node, const char *host,
                       uint16_t port)
{
    struct kmsg_add_partitions_to_txn_transaction *txns = calloc(n, sizeof(*txns));
    struct kmsg_txn_topic *topics = calloc(n * TV_TOPICS_MAX, sizeof(*topics));
    int32_t *parts = calloc(n * TV_PARTS_MAX, sizeof(*parts));
    int rc = txns && topics && parts ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        txn_of(jobs[i], topics + i * TV_TOPICS_MAX, parts + i * TV_PARTS_MAX, &txns[i]);
    struct kmsg_add_partitions_to_txn_request q = {.transactions = txns,
                                                   .transactions_count = (int32_t)n};
    uint8_t *frame = NULL;
    size_t flen = 0, body = 0;
    if (rc == 0)
        rc = kclient_conn_call(conn_for(node), host, port, TV_TIMEOUT_MS,
                               KAFKA_ADD_PARTITIONS_TO_TXN, TV_VERSION, encode_request, &q, &frame,
                               &flen, &body);
    struct kmsg_add_partitions_to_txn_response r = {0};
    if (rc == 0) {
        struct kp_reader rd;
        struct kp_arena a;
        kp_reader_init(&rd, frame + body, flen - body);
        kp_arena_init(&a, tv.arena, TV_ARENA_BYTES);
        if (kmsg_add_partitions_to_txn_response_decode(&rd, TV_VERSION, &a, &r) != 0)
            rc = -EPROTO;
    }
    if (rc) {
        static _Atomic int32_t last_logged = -2;
        if (atomic_exchange(&last_logged, node) != node)
            fprintf(stderr,
                    "ringtail serve: transaction verification: AddPartitionsToTxn v4 to node "
                    "%" PRId32 " (%s:%u), the coordinator of '%s': %s; the Produce is answered "
                    "NOT_ENOUGH_REPLICAS (retriable)\n",
                    node, host, port, jobs[0]->id,
                    rc == -EPROTO ? "closed, or not a whole answer" : strerror(-rc));
    }
    for (size_t i = 0; i < n; i++) {
        if (rc)
            job_fail(jobs[i], KAFKA_NETWORK_EXCEPTION);
        else if (r.error_code != KAFKA_NONE)
            job_fail(jobs[i], r.error_code);
        else
            job_apply(jobs[i], &r);
    }
    free(frame);
    free(parts);
    free(topics);
    free(txns);
}

/* Where each job's coordinator is now (it may have moved since the Produce was parked): a job
 * with none is failed, one coordinated here answered by the local coordinator, and true is
 * returned for one that must be asked remotely (*l filled). */
static bool locate(struct kafka_txn_verify_job *job, struct coord_look *l)
{
    *l = (struct coord_look){.self = tv.self, .node = -1, .id = job->id};
    struct metadata_node *mn = kafka_cluster(job->slot->server);
    if (mn)
        metadata_node_read(mn, coord_lookup, l);
    if (!l->addressed || l->node < 0) {
        job_fail(job, KAFKA_COORDINATOR_NOT_AVAILABLE);
        return false;
    }
    if (l->node != tv.self)
        return true;
    rt_engine *e = atomic_load_explicit(&tv.engine, memory_order_acquire);
    for (size_t i = 0; i < job->count; i++) {
        int16_t c = e ? kafka_txn_verify_code(rt_txn_verify(e, job->id, job->pid, job->epoch,
                                                            job->parts[i].topic,
                                                            (uint32_t)job->parts[i].partition))
                      : KAFKA_COORDINATOR_NOT_AVAILABLE;
        if (c == KAFKA_NONE)
            txn_verify_cache_put(tv.cache, job->pid, job->epoch, job->parts[i].topic,
                                 (uint32_t)job->parts[i].partition);
        job->parts[i].code = kafka_txn_verify_produce_code(c);
    }
    return false;
}

/* Asks node `node` about `n` jobs: as few requests as carry each transactional id at most once
 * (Kafka's map key), the first with every distinct id. */
static void ask_node_jobs(struct kafka_txn_verify_job **jobs, size_t n, int32_t node,
                          const char *host, uint16_t port)
{
    bool done[TV_BATCH_MAX] = {false};
    for (size_t left = n; left > 0;) {
        struct kafka_txn_verify_job *group[TV_BATCH_MAX];
        size_t g = 0;
        for (size_t k = 0; k < n; k++) {
            bool dup = done[k];
            for (size_t x = 0; x < g && !dup; x++)
                dup = strcmp(group[x]->id, jobs[k]->id) == 0;
            if (dup)
                continue;
            group[g++] = jobs[k];
            done[k] = true;
        }
        ask_remote(group, g, node, host, port);
        left -= g;
    }
}

/* Asks about `n` jobs (KTV2): one round per coordinator node carrying every job bound there;
 * the answers land in the jobs and the cache. */
static void ask_all(struct kafka_txn_verify_job **jobs, size_t n)
{
    struct coord_look look[TV_BATCH_MAX];
    bool todo[TV_BATCH_MAX];
    for (size_t i = 0; i < n; i++)
        todo[i] = locate(jobs[i], &look[i]);
    for (size_t i = 0; i < n; i++) {
        if (!todo[i])
            continue;
        struct kafka_txn_verify_job *bound[TV_BATCH_MAX];
        size_t m = 0;
        for (size_t k = i; k < n; k++)
            if (todo[k] && look[k].node == look[i].node) {
                bound[m++] = jobs[k];
                todo[k] = false;
            }
        ask_node_jobs(bound, m, look[i].node, look[i].host, look[i].port);
    }
}

/* The second pass (KTV2, KTV7), on the sender thread. */
static void resume(struct kafka_txn_verify_job *job)
{
    struct kafka_slot *s = job->slot;
    s->txn_verify = job;
    tv_current = job;
    enum net_verdict v = kafka_handle_produce(s);
    tv_current = NULL;
    s->txn_verify = NULL;
    free(job);
    if (v == NET_CLOSE)
        s->req->close_reason = "the request could not be answered";
    if (v != NET_PENDING) /* a pending one completes itself (its last append or HW wait) */
        net_req_complete(s->req);
}

static void *sender_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tv.mu);
    for (;;) {
        while (!tv.head && !tv.stopping)
            pthread_cond_wait(&tv.cv, &tv.mu);
        if (!tv.head)
            break; /* stopping, nothing left */
        struct kafka_txn_verify_job *batch[TV_BATCH_MAX];
        size_t n = 0;
        while (tv.head && n < TV_BATCH_MAX) { /* what queued while the last round ran */
            batch[n++] = tv.head;
            tv.head = tv.head->next;
        }
        if (!tv.head)
            tv.tail = NULL;
        pthread_mutex_unlock(&tv.mu);
        ask_all(batch, n);
        for (size_t i = 0; i < n; i++)
            resume(batch[i]);
        pthread_mutex_lock(&tv.mu);
    }
    pthread_mutex_unlock(&tv.mu);
    for (size_t i = 0; i < TV_NODES_MAX; i++)
        kclient_conn_close(&tv.conns[i].conn);
    return NULL;
}

int kafka_txn_verify_start(int32_t self)
{
    if (tv.running)
        return -EALREADY;
    tv.cache = txn_verify_cache_new(TV_CACHE_ENTRIES);
    tv.arena = malloc(TV_ARENA_BYTES);
    if (!tv.cache || !tv.arena) {
        txn_verify_cache_free(tv.cache);
        free(tv.arena);
        tv.cache = NULL;
        tv.arena = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < TV_NODES_MAX; i++)
        tv.conns[i] = (struct tv_conn){.node = -1, .conn = KCLIENT_CONN_INIT};
    tv.self = self;
    tv.stopping = false;
    int rc = pthread_create(&tv.thread, NULL, sender_main, NULL);
    if (rc) {
        txn_verify_cache_free(tv.cache);
        free(tv.arena);
        tv.cache = NULL;
        tv.arena = NULL;
        return -rc;
    }
    tv.running = true;
    return 0;
}

void kafka_txn_verify_attach(rt_engine *engine)
{
    atomic_store_explicit(&tv.engine, engine, memory_order_release);
}

void kafka_txn_verify_stop(void)
{
    if (!tv.running)
        return;
    pthread_mutex_lock(&tv.mu);
    tv.stopping = true;
    pthread_cond_signal(&tv.cv);
    pthread_mutex_unlock(&tv.mu);
    pthread_join(tv.thread, NULL); /* it answers what is queued first */
    tv.running = false;
    atomic_store_explicit(&tv.engine, NULL, memory_order_release);
    txn_verify_cache_free(tv.cache);
    tv.cache = NULL;
    free(tv.arena);
    tv.arena = NULL;
}

/* ---- for tests (txn_verify.h) ---- */

int kafka_txn_verify_ask_node(int32_t node, const char *host, uint16_t port,
                              const struct kafka_txn_verify_question *qs, size_t n,
                              int16_t *codes_out)
{
    if (!tv.running)
        return -EINVAL;
    struct kafka_txn_verify_job *jobs[TV_BATCH_MAX];
    size_t nj = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) { /* one job per (id, producer, epoch), in order */
        size_t j = 0;
        while (j < nj &&
               !(strcmp(jobs[j]->id, qs[i].id) == 0 && jobs[j]->pid == qs[i].producer_id &&
                 jobs[j]->epoch == qs[i].producer_epoch))
            j++;
        if (j == nj) {
            if (nj == TV_BATCH_MAX || strlen(qs[i].id) > TV_ID_BYTES_MAX ||
                !(jobs[nj] = calloc(1, sizeof(struct kafka_txn_verify_job) +
                                           n * sizeof(struct tv_part)))) {
                rc = -EINVAL;
                break;
            }
            snprintf(jobs[nj]->id, sizeof jobs[nj]->id, "%s", qs[i].id);
            jobs[nj]->pid = qs[i].producer_id;
            jobs[nj]->epoch = qs[i].producer_epoch;
            nj++;
        }
        struct tv_part *tp = &jobs[j]->parts[jobs[j]->count++];
        snprintf(tp->topic, sizeof tp->topic, "%s", qs[i].topic);
        tp->partition = qs[i].partition;
    }
    if (rc == 0)
        ask_node_jobs(jobs, nj, node, host, port);
    for (size_t i = 0; rc == 0 && i < n; i++)
        for (size_t j = 0; j < nj; j++)
            if (strcmp(jobs[j]->id, qs[i].id) == 0 && jobs[j]->pid == qs[i].producer_id &&
                jobs[j]->epoch == qs[i].producer_epoch)
                for (size_t k = 0; k < jobs[j]->count; k++)
                    if (jobs[j]->parts[k].partition == qs[i].partition &&
                        strcmp(jobs[j]->parts[k].topic, qs[i].topic) == 0)
                        codes_out[i] = jobs[j]->parts[k].code;
    for (size_t j = 0; j < nj; j++)
        free(jobs[j]);
    return rc;
}

bool kafka_txn_verify_cached(int64_t producer_id, int16_t producer_epoch, const char *topic,
                             uint32_t partition)
{
    return txn_verify_cache_has(tv.cache, producer_id, producer_epoch, topic, partition);
}
