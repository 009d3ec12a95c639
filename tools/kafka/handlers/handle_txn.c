/*
 * handle_txn.c — Kafka's transactional APIs mapped onto the engine's coordinator (the
 * "Transactions over the wire" calls of ringtail.h): InitProducerId with a transactional id
 * (v0-1), AddPartitionsToTxn v0-1, AddOffsetsToTxn v0-1, TxnOffsetCommit v0-2 and EndTxn v0-1.
 * Requests are decoded by kmsg_txn.c's codecs (kafka_txn_request_decode reshapes them for the
 * handlers; strings point into the request frame, arrays go into the slot's arena); the answers
 * (none of these versions is flexible) are still encoded here. InitProducerId v3+ carries the
 * identity the producer holds (KIP-360), which goes to the engine as the expected one. It owns the mapping of engine errors to the Kafka codes these versions
 * define, and never writes records except through those engine calls.
 *
 * Invariants:
 *   KT1  A fenced producer is answered INVALID_PRODUCER_EPOCH (47): PRODUCER_FENCED (90) only
 *        exists from InitProducerId v4 / EndTxn v2, and is answered only by InitProducerId v4+
 *        (EndTxn v2 is not served).
 *   KT2  EndTxn is answered only once the engine returned, i.e. after every marker is durable;
 *        a commit acknowledged is visible to read_committed readers of every partition.
 *   KT3  AddPartitionsToTxn answers every partition it was asked: UNKNOWN_TOPIC_OR_PARTITION for
 *        one that does not exist, OPERATION_NOT_ATTEMPTED (55) for the others of that request
 *        (nothing is added), else the one outcome of the engine call for all.
 *   KT4  A request whose strings cannot be names (null, embedded NUL, too long) is answered
 *        with an error code and changes nothing; one whose bytes do not decode closes the
 *        connection (as every other API here).
 *   KT5  No handler here waits for the disk on the loop thread: InitProducerId,
 *        AddPartitionsToTxn, AddOffsetsToTxn and EndTxn check what they can on the loop thread,
 *        hand the call to the engine's asynchronous form (rt_txn_*_async) and answer
 *        NET_PENDING; the engine's done (on one of its transaction lanes) encodes the answer
 *        and hands the request back (net_req_complete), so the loop's other connections run
 *        meanwhile and net keeps the connection's answers in order. (TxnOffsetCommit still
 *        calls rt_txn_commit_offsets on the loop thread.)
 *   KT6  Everything an engine call in flight points to (its rt_txn_op, the NUL-terminated id
 *        and group, the partitions and their names, the answer's codes, the request's arrays)
 *        lives in the slot's arenas, which net's release hook resets only after the answer is
 *        sent; one kafka_resp_reserve per request, before any of it is taken.
 */
#include "tools/kafka/handlers/handle_txn.h"

#include "tools/kafka/handlers/handle_offsets.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TXN_ID_BYTES_MAX 1024 /* the engine's limit on transactional ids and group names */

/* ---- decoding: kmsg_txn.c's codecs, their answer reshaped for the handlers ---- */

int kafka_txn_request_decode(struct kp_reader *r, int16_t api_key, int16_t v, struct kp_arena *a,
                             struct kafka_txn_request *q)
{
    memset(q, 0, sizeof(*q));
    int rc;
    switch (api_key) {
    case KAFKA_ADD_PARTITIONS_TO_TXN: {
        struct kmsg_add_partitions_to_txn_request m = {0};
        rc = kmsg_add_partitions_to_txn_request_decode(r, v, a, &m);
        if (rc)
            return rc;
        q->transactional_id = m.transactional_id;
        q->producer_id = m.producer_id;
        q->producer_epoch = m.producer_epoch;
        q->topics_count = m.topics_count;
        q->topics = kp_arena_array(r, a, m.topics_count, sizeof(*q->topics));
        for (int32_t t = 0; t < m.topics_count && !r->err; t++)
            q->topics[t] = (struct kafka_txn_topic){.name = m.topics[t].name,
                                                    .count = m.topics[t].partitions_count,
                                                    .partitions = m.topics[t].partitions};
        break;
    }
    case KAFKA_ADD_OFFSETS_TO_TXN: {
        struct kmsg_add_offsets_to_txn_request m = {0};
        rc = kmsg_add_offsets_to_txn_request_decode(r, v, a, &m);
        if (rc)
            return rc;
        q->transactional_id = m.transactional_id;
        q->producer_id = m.producer_id;
        q->producer_epoch = m.producer_epoch;
        q->group = m.group_id;
        break;
    }
    case KAFKA_END_TXN: {
        struct kmsg_end_txn_request m = {0};
        rc = kmsg_end_txn_request_decode(r, v, a, &m);
        if (rc)
            return rc;
        q->transactional_id = m.transactional_id;
        q->producer_id = m.producer_id;
        q->producer_epoch = m.producer_epoch;
        q->committed = m.committed;
        break;
    }
    case KAFKA_TXN_OFFSET_COMMIT: {
        struct kmsg_txn_offset_commit_request m = {0};
        rc = kmsg_txn_offset_commit_request_decode(r, v, a, &m);
        if (rc)
            return rc;
        q->transactional_id = m.transactional_id;
        q->group = m.group_id;
        q->producer_id = m.producer_id;
        q->producer_epoch = m.producer_epoch;
        q->topics_count = m.topics_count;
        q->topics = kp_arena_array(r, a, m.topics_count, sizeof(*q->topics));
        for (int32_t t = 0; t < m.topics_count && !r->err; t++) {
            struct kafka_txn_topic *tp = &q->topics[t];
            int32_t n = m.topics[t].partitions_count;
            tp->name = m.topics[t].name;
            tp->count = n;
            tp->partitions = kp_arena_array(r, a, n, sizeof(*tp->partitions));
            tp->offsets = kp_arena_array(r, a, n, sizeof(*tp->offsets));
            tp->metadata = kp_arena_array(r, a, n, sizeof(*tp->metadata));
            for (int32_t i = 0; i < n && !r->err; i++) {
                tp->partitions[i] = m.topics[t].partitions[i].partition_index;
                tp->offsets[i] = m.topics[t].partitions[i].committed_offset;
                tp->metadata[i] = m.topics[t].partitions[i].committed_metadata;
            }
        }
        break;
    }
    default:
        return RT_E_UNSUPPORTED;
    }
    if (r->err) /* the reshaped arrays did not fit the arena */
        memset(q, 0, sizeof(*q));
    return r->err;
}

struct txn_decode {
    struct kafka_slot *s;
    struct kafka_txn_request *q;
};

static int txn_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct txn_decode *d = ctx;
    return kafka_txn_request_decode(r, d->s->header.api_key, d->s->header.api_version, a, d->q);
}

/* Decodes with the slot's arena (kafka_slot_decode grows it). */
static int decode_with_arena(struct kafka_slot *s, size_t body_at, struct kafka_txn_request *q)
{
    struct txn_decode d = {.s = s, .q = q};
    return kafka_slot_decode(s, body_at, txn_decode, &d);
}

/* ---- errors and names ---- */

/* KT1: the Kafka code for an engine error at these versions. */
static int16_t txn_error(int rc)
{
    switch (rc) {
    case RT_E_PRODUCER_FENCED:
    case RT_E_INVALID_PRODUCER_EPOCH:
        return KAFKA_INVALID_PRODUCER_EPOCH;
    case RT_E_INVALID_ARGUMENT:
    case RT_E_TXN_PARTITIONS_FULL:
        return KAFKA_INVALID_REQUEST;
    default:
        return kafka_error_from_rt(rc);
    }
}

static void log_refusal(struct kafka_slot *s, const char *id, int rc)
{
    /* Fencing and state errors are the clients' business; anything else is the broker's. */
    if (rc == RT_E_PRODUCER_FENCED || rc == RT_E_INVALID_PRODUCER_EPOCH ||
        rc == RT_E_INVALID_TXN_STATE || rc == RT_E_CONCURRENT_TRANSACTIONS ||
        rc == RT_E_INVALID_TRANSACTION_TIMEOUT || rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
        return;
    fprintf(stderr, "ringtail serve: %s for '%s': %s: %s\n", kafka_api_name(s->header.api_key), id,
            rt_strerror(rc), rt_error_detail());
}

/* KT4: a NUL-terminated copy of a name (1..TXN_ID_BYTES_MAX bytes, no NUL inside) into out
 * (TXN_ID_BYTES_MAX + 1 bytes); false when it cannot be one. */
static bool name_of(struct kp_str n, char *out)
{
    if (n.len <= 0 || n.len > TXN_ID_BYTES_MAX || memchr(n.ptr, 0, (size_t)n.len))
        return false;
    memcpy(out, n.ptr, (size_t)n.len);
    out[n.len] = 0;
    return true;
}

static void refuse_log(struct kafka_slot *s, const char *why)
{
    atomic_fetch_add_explicit(&s->server->stats.requests_refused, 1, memory_order_relaxed);
    fprintf(stderr,
            "ringtail serve: connection %" PRIu64 ": %s (%s v%d, correlation id %" PRId32
            "); closing\n",
            s->req->conn_id, why, kafka_api_name(s->header.api_key), s->header.api_version,
            s->header.correlation_id);
}

/* ---- the answers ---- */

static enum net_verdict answer_code(struct kafka_slot *s, int16_t code)
{
    kafka_count_error(s, code);
    kafka_response_begin(s);
    kp_write_i32(&s->w, 0); /* throttle_time_ms */
    kp_write_i16(&s->w, code);
    return kafka_response_end(s);
}

/* The per-partition answer of AddPartitionsToTxn and TxnOffsetCommit (same shape at these
 * versions): throttle, then [name [partition error]]. codes[t][i] per partition. */
static enum net_verdict answer_partitions(struct kafka_slot *s, const struct kafka_txn_request *q,
                                          int16_t *const *codes)
{
    kafka_response_begin(s);
    kp_write_i32(&s->w, 0);
    kp_write_array_len(&s->w, q->topics_count);
    for (int32_t t = 0; t < q->topics_count; t++) {
        kp_write_string(&s->w, q->topics[t].name);
        kp_write_array_len(&s->w, q->topics[t].count);
        for (int32_t i = 0; i < q->topics[t].count; i++) {
            kp_write_i32(&s->w, q->topics[t].partitions[i]);
            kp_write_i16(&s->w, codes[t][i]);
            kafka_count_error(s, codes[t][i]);
        }
    }
    return kafka_response_end(s);
}

/* codes[t] arrays for every topic of q, all set to `code`, from the response arena as it is;
 * NULL when it is full. */
static int16_t **codes_fill(struct kafka_slot *s, const struct kafka_txn_request *q, int16_t code)
{
    static int16_t *none[1];
    int16_t **codes =
        q->topics_count ? kafka_alloc(s, (size_t)q->topics_count, sizeof(*codes)) : none;
    for (int32_t t = 0; codes && t < q->topics_count; t++) {
        int32_t n = q->topics[t].count;
        codes[t] = n ? kafka_alloc(s, (size_t)n, sizeof(int16_t)) : NULL;
        if (n && !codes[t])
            return NULL;
        for (int32_t i = 0; i < n; i++)
            codes[t][i] = code;
    }
    return codes;
}

/* The response arena's bytes for codes_fill over q. */
static size_t codes_bytes(const struct kafka_txn_request *q)
{
    size_t need = (size_t)q->topics_count * (sizeof(int16_t *) + 8);
    for (int32_t t = 0; t < q->topics_count; t++)
        need += (size_t)q->topics[t].count * sizeof(int16_t) + 8;
    return need;
}

/* ---- handlers: the engine's asynchronous calls (KT5) ---- */

/* One transactional call in the engine, in the response arena (valid until net's release hook,
 * which runs only after the answer is sent): the op and every string and array the call points
 * to (KT6). */
struct txn_call {
    struct rt_txn_op op;
    struct kafka_slot *s;
    struct kafka_txn_request q; /* its arrays in the slot's decode arena, kept until release */
    int16_t **codes;            /* AddPartitionsToTxn */
    char id[TXN_ID_BYTES_MAX + 1];
    char group[TXN_ID_BYTES_MAX + 1];
};

static struct txn_call *call_alloc(struct kafka_slot *s)
{
    struct txn_call *k = kafka_alloc(s, 1, sizeof(*k));
    if (k)
        k->s = s;
    return k;
}

/* Hands the answer built in the slot's writer back to the loop (any thread). */
static void call_complete(struct kafka_slot *s, enum net_verdict v)
{
    if (v != NET_DONE)
        s->req->close_reason = "the transactional answer could not be encoded";
    net_req_complete(s->req);
}

/* KT1 at InitProducerId: PRODUCER_FENCED exists from v4. */
static int16_t init_error(const struct kafka_slot *s, int rc)
{
    if (rc == RT_E_PRODUCER_FENCED && s->header.api_version >= 4)
        return KAFKA_PRODUCER_FENCED;
    return txn_error(rc);
}

static enum net_verdict answer_init(struct kafka_slot *s, int16_t code, int64_t pid, int16_t epoch)
{
    struct kmsg_init_producer_id_response m = {
        .error_code = code, .producer_id = code ? -1 : pid, .producer_epoch = code ? -1 : epoch};
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_init_producer_id_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* On an engine lane thread (KT5). */
static void init_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    struct txn_call *k = ctx;
    struct kafka_slot *s = k->s;
    if (err)
        log_refusal(s, k->id, err);
    call_complete(s, answer_init(s, err ? init_error(s, err) : KAFKA_NONE, pid, epoch));
}

enum net_verdict kafka_handle_init_producer_id_txn(struct kafka_slot *s)
{
    const struct kmsg_init_producer_id_request *q = &s->msg.init_producer_id;
    if (kafka_resp_reserve(s, sizeof(struct txn_call) + 64) != 0) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    struct txn_call *k = call_alloc(s);
    if (!k || !name_of(q->transactional_id, k->id))
        return answer_init(s, KAFKA_INVALID_REQUEST, -1, -1);
    /* KIP-360 (v3+): the identity the producer holds, -1/-1 when it has none (v0-2 decode
     * -1/-1). */
    int rc = rt_txn_init_producer_async(s->server->engine, k->id, q->transaction_timeout_ms,
                                        q->producer_id, q->producer_epoch, &k->op, init_done, k);
    if (rc) {
        log_refusal(s, k->id, rc);
        return answer_init(s, init_error(s, rc), -1, -1);
    }
    return NET_PENDING;
}

/* KT3: the engine's outcome for every partition that passed the checks. */
static enum net_verdict answer_added(struct txn_call *k, int err)
{
    if (err)
        log_refusal(k->s, k->id, err);
    int16_t outcome = txn_error(err);
    for (int32_t t = 0; t < k->q.topics_count; t++)
        for (int32_t i = 0; i < k->q.topics[t].count; i++)
            if (k->codes[t][i] == KAFKA_NONE)
                k->codes[t][i] = outcome;
    return answer_partitions(k->s, &k->q, k->codes);
}

static void add_partitions_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    (void)pid;
    (void)epoch;
    struct txn_call *k = ctx;
    call_complete(k->s, answer_added(k, err));
}

static enum net_verdict add_partitions(struct kafka_slot *s, const struct kafka_txn_request *q)
{
    rt_engine *e = s->server->engine;
    size_t total = 0;
    for (int32_t t = 0; t < q->topics_count; t++)
        total += (size_t)q->topics[t].count;
    size_t topics = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    /* One reservation for the whole call (a later one would reset the arena). */
    size_t extra = sizeof(struct txn_call) + total * sizeof(struct rt_topic_partition) +
                   topics * (RT_TOPIC_NAME_MAX + 1) + 64;
    if (kafka_resp_reserve(s, codes_bytes(q) + extra) != 0) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    struct txn_call *k = call_alloc(s);
    int16_t **codes = k ? codes_fill(s, q, KAFKA_NONE) : NULL;
    struct rt_topic_partition *tp = total ? kafka_alloc(s, total, sizeof(*tp)) : NULL;
    char *names = topics ? kafka_alloc(s, topics, RT_TOPIC_NAME_MAX + 1) : NULL;
    if (!k || !codes || (total && !tp) || (topics && !names)) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    k->q = *q;
    k->codes = codes;
    bool id_ok = name_of(q->transactional_id, k->id);
    /* KT3: every partition checked first. */
    bool failed = !id_ok;
    size_t n = 0;
    for (int32_t t = 0; t < q->topics_count; t++) {
        char *name = names + (size_t)t * (RT_TOPIC_NAME_MAX + 1);
        bool name_ok = kafka_topic_name(q->topics[t].name, name);
        uint32_t parts = 0;
        bool known = name_ok && rt_topic_describe(e, name, &parts) == 0;
        for (int32_t i = 0; i < q->topics[t].count; i++) {
            int32_t p = q->topics[t].partitions[i];
            if (!name_ok || (name[0] == '_' && name[1] == '_')) {
                codes[t][i] = KAFKA_INVALID_TOPIC_EXCEPTION;
                failed = true;
            } else if (!known || p < 0 || (uint32_t)p >= parts) {
                codes[t][i] = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                failed = true;
            } else {
                tp[n++] = (struct rt_topic_partition){.topic = name, .partition = (uint32_t)p};
            }
        }
    }
    if (!id_ok || failed) {
        int16_t outcome = !id_ok ? KAFKA_INVALID_REQUEST : KAFKA_OPERATION_NOT_ATTEMPTED;
        for (int32_t t = 0; t < q->topics_count; t++)
            for (int32_t i = 0; i < q->topics[t].count; i++)
                if (codes[t][i] == KAFKA_NONE)
                    codes[t][i] = outcome;
        return answer_partitions(s, q, codes);
    }
    int rc = rt_txn_add_partitions_async(e, k->id, q->producer_id, q->producer_epoch, tp, n, &k->op,
                                         add_partitions_done, k);
    return rc ? answer_added(k, rc) : NET_PENDING;
}

static enum net_verdict answer_outcome(struct txn_call *k, int err)
{
    if (err)
        log_refusal(k->s, k->id, err);
    return answer_code(k->s, txn_error(err));
}

static void code_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    (void)pid;
    (void)epoch;
    struct txn_call *k = ctx;
    call_complete(k->s, answer_outcome(k, err));
}

static enum net_verdict add_offsets(struct kafka_slot *s, const struct kafka_txn_request *q)
{
    if (kafka_resp_reserve(s, sizeof(struct txn_call) + 64) != 0) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    struct txn_call *k = call_alloc(s);
    if (!k || !name_of(q->transactional_id, k->id) || !name_of(q->group, k->group))
        return answer_code(s, KAFKA_INVALID_REQUEST);
    int rc = rt_txn_add_offsets_async(s->server->engine, k->id, q->producer_id, q->producer_epoch,
                                      k->group, &k->op, code_done, k);
    return rc ? answer_outcome(k, rc) : NET_PENDING;
}

static enum net_verdict end_txn(struct kafka_slot *s, const struct kafka_txn_request *q)
{
    if (kafka_resp_reserve(s, sizeof(struct txn_call) + 64) != 0) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    struct txn_call *k = call_alloc(s);
    if (!k || !name_of(q->transactional_id, k->id))
        return answer_code(s, KAFKA_INVALID_REQUEST);
    /* KT2: answered once the markers are visible (the engine's done). */
    int rc = rt_txn_end_async(s->server->engine, k->id, q->producer_id, q->producer_epoch,
                              q->committed, &k->op, code_done, k);
    return rc ? answer_outcome(k, rc) : NET_PENDING;
}

/* TxnOffsetCommit: decoded by kmsg_txn_offset_commit_request_decode, each partition judged by
 * the offsets validator OffsetCommit uses (handle_offsets.h, KO7), answered by
 * kmsg_txn_offset_commit_response_encode. */
struct txn_commit_decode {
    int16_t version;
    struct kmsg_txn_offset_commit_request *q;
    struct kafka_offsets_commit *c;
};

static int txn_commit_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct txn_commit_decode *d = ctx;
    memset(d->q, 0, sizeof(*d->q));
    int rc = kmsg_txn_offset_commit_request_decode(r, d->version, a, d->q);
    if (rc)
        return rc;
    return kafka_offsets_prepare(r, a, d->q->topics, d->q->topics_count, d->c);
}

static enum net_verdict txn_offset_commit(struct kafka_slot *s, size_t body_at)
{
    struct kmsg_txn_offset_commit_request q;
    struct kafka_offsets_commit c;
    int16_t v = s->header.api_version;
    struct txn_commit_decode d = {.version = v, .q = &q, .c = &c};
    int rc = kafka_slot_decode(s, body_at, txn_commit_decode, &d);
    if (rc) {
        refuse_log(s,
                   rc == KP_E_LIMIT ? "request arrays too large" : "request body does not decode");
        return NET_CLOSE;
    }
    rt_engine *e = s->server->engine;
    char id[TXN_ID_BYTES_MAX + 1], group[TXN_ID_BYTES_MAX + 1];
    bool ok = name_of(q.transactional_id, id) && name_of(q.group_id, group);
    kafka_offsets_validate(e, q.topics, q.topics_count, ok ? KAFKA_NONE : KAFKA_INVALID_REQUEST,
                           &c);
    int16_t stored = KAFKA_NONE;
    if (c.offsets_count) {
        rc = rt_txn_commit_offsets(e, id, q.producer_id, q.producer_epoch, group, c.offsets,
                                   c.offsets_count);
        if (rc)
            log_refusal(s, id, rc);
        stored = txn_error(rc);
    }
    kafka_offsets_settle(s, &c, stored);
    struct kmsg_commit_response m = {.topics = c.results, .topics_count = c.results_count};
    kafka_response_begin(s);
    kmsg_txn_offset_commit_response_encode(&s->w, v, &m);
    return kafka_response_end(s);
}

bool kafka_txn_api(int16_t key)
{
    return key == KAFKA_ADD_PARTITIONS_TO_TXN || key == KAFKA_ADD_OFFSETS_TO_TXN ||
           key == KAFKA_END_TXN || key == KAFKA_TXN_OFFSET_COMMIT;
}

enum net_verdict kafka_handle_txn(struct kafka_slot *s, size_t body_at)
{
    if (s->header.api_key == KAFKA_TXN_OFFSET_COMMIT) /* decodes its own (KO7) */
        return txn_offset_commit(s, body_at);
    struct kafka_txn_request q;
    int rc = decode_with_arena(s, body_at, &q);
    if (rc) {
        refuse_log(s,
                   rc == KP_E_LIMIT ? "request arrays too large" : "request body does not decode");
        return NET_CLOSE;
    }
    switch (s->header.api_key) {
    case KAFKA_ADD_PARTITIONS_TO_TXN:
        return add_partitions(s, &q);
    case KAFKA_ADD_OFFSETS_TO_TXN:
        return add_offsets(s, &q);
    default:
        return end_txn(s, &q);
    }
}
