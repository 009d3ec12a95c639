/*
 * handle_produce.c — Produce: each partition's record set (one or more RecordBatch v2, as
 * the client encoded them, inside the request frame; or a message set v0/v1, KPC1) goes to
 * rt_append_batch_async, which validates it (magic, sizes, CRC, counts and offset deltas,
 * codec; maxTimestamp recomputed or LogAppendTime stamped: docs/format.md B.7 V16-V17) on the
 * loop thread and queues it to the partition's shard; the broker stamps the leader epoch (0) and the shard the
 * base offset in place (neither is covered by the CRC); the shard calls back
 * once the round is acknowledged under the engine's sync mode (durable under sync=always). The
 * last callback encodes the answer and hands the request back to its loop (net_req_complete).
 * acks=0 is appended the same way and answered with nothing. No thread waits for a disk.
 *
 * Invariants:
 *   KPR1  The request frame (and so every batch in it) stays untouched from submission until the
 *        last callback: the slot is NET_PENDING meanwhile and net never reuses it.
 *   KPR2  ops_pending counts the batches in the engine plus one guard held by the handler while
 *        it submits, so the answer is encoded exactly once, by whoever brings it to zero.
 *   KPR3  A partition's answer is its first batch's base offset, or the first error among its
 *        batches; the producer rules are the engine's (duplicates answered NONE with the
 *        original offset, OUT_OF_ORDER_SEQUENCE_NUMBER 45, INVALID_PRODUCER_EPOCH 47,
 *        UNKNOWN_PRODUCER_ID 59, CORRUPT_MESSAGE 2 for a batch that fails validation).
 *   KPR4  At most KAFKA_PRODUCE_BATCHES_MAX batches per request (more closes the connection,
 *        logged): the ops array is bounded.
 *   KPR5  An acks=0 produce that fails in any partition closes its connection when its turn
 *        comes (Kafka does the same: there is no answer to carry the error).
 *   KPC1  A partition whose records are a message set of format v0/v1 (byte 16, the magic, below
 *        2: Produce v0-2, or an old client at v3+) is up-converted to one RecordBatch v2
 *        (rt_message_set_upconvert: Kafka's up-conversion, recompressed with the set's codec)
 *        and appended like a client batch; the converted copy is the op's and is freed by its
 *        callback (or at once when the append is refused). At most
 *        KAFKA_PRODUCE_CONVERTED_MAX_BYTES of converted batches per request: a partition beyond
 *        it is answered MESSAGE_TOO_LARGE, so a request of many small compressed sets cannot
 *        make the broker hold many full-size batches.
 *   KPR6  In a cluster (--voters) a partition is appended only on its ready leader at the
 *        image's epoch (replica_state.h rs_check: NOT_LEADER_OR_FOLLOWER otherwise, nothing
 *        appended); acks=all is refused NOT_ENOUGH_REPLICAS, nothing appended, when the image's
 *        ISR is smaller than the topic's min.insync.replicas. An acks=all answer is then parked
 *        in the replica state once every batch is appended (never a loop thread waiting): each
 *        appended partition waits for the high watermark to pass its last batch (rs_wait, RS5),
 *        counted in ops_pending as the batches were, so the answer is still encoded once.
 *   KPR7  In a cluster a transactional Produce whose transactional id another node coordinates
 *        is first handed to the transaction verifier (txn_verify.c KTV2, KIP-890 part 1) when
 *        a partition it leads is not yet verified: the handler answers NET_PENDING having
 *        touched nothing, and the verifier's thread runs it again with the coordinator's
 *        answers, a refused partition answered with its code (KTV4), nothing appended.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/txn_verify.h"

/* Each batch in flight takes an rt_append_op (~0.5 KiB): a 100 MiB request of 61-byte batches
 * would otherwise make the broker hold ~0.9 GiB of ops for it. */
#define KAFKA_PRODUCE_BATCHES_MAX 65536u
/* KPC1: converted message sets held by one request. */
#define KAFKA_PRODUCE_CONVERTED_MAX_BYTES ((size_t)64 << 20)
#define MSGSET_MAGIC_AT                   16 /* the magic of a v0/v1 message and of a v2 batch */

/* The Kafka error for an append failure. */
static int max_bytes_of(void *ctx, const char *name, const char *value,
                        enum rt_config_source source, bool honoured)
{
    (void)source;
    (void)honoured;
    if (strcmp(name, "max.message.bytes") == 0)
        *(uint64_t *)ctx = strtoull(value, NULL, 10);
    return 0;
}

/* The max.message.bytes in effect for `topic` (a refused batch's answer only: it reads the
 * topic's configs), or `fallback` when it cannot be read. */
static uint64_t topic_max_message_bytes(rt_engine *engine, const char *topic, uint64_t fallback)
{
    uint64_t v = fallback;
    if (rt_topic_config_get(engine, topic, max_bytes_of, &v) != 0)
        v = fallback;
    return v;
}

static int16_t produce_error(int rc)
{
    switch (rc) {
    case RT_E_INVALID_ARGUMENT:
        return KAFKA_INVALID_RECORD; /* an empty batch, a control batch from a client, ... */
    case RT_E_INTERNAL_TOPIC:
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    default:
        return kafka_error_from_rt(rc);
    }
}

static void produce_finish(struct kafka_slot *s)
{
    const struct kmsg_produce_response *m = s->produce_resp;
    if (s->acks_none) {
        /* KPR5: acks=0 has no answer to carry an error; a failure closes the connection. */
        s->req->no_response = true;
        for (int32_t t = 0; t < m->responses_count; t++)
            for (int32_t p = 0; p < m->responses[t].partitions_count; p++)
                if (m->responses[t].partitions[p].error_code != KAFKA_NONE) {
                    kafka_count_error(s, m->responses[t].partitions[p].error_code);
                    s->req->close_reason = "an acks=0 produce failed (as Kafka, the connection "
                                           "is closed so the client learns of it)";
                }
        return;
    }
    for (int32_t t = 0; t < m->responses_count; t++)
        for (int32_t p = 0; p < m->responses[t].partitions_count; p++)
            kafka_count_error(s, m->responses[t].partitions[p].error_code);
    kafka_response_begin(s);
    kmsg_produce_response_encode(&s->w, s->header.api_version, m);
    if (kafka_response_end(s) != NET_DONE)
        s->req->no_response = true; /* cannot happen short of memory; logged by the end */
}

/* KPR6: a parked partition answered (on the replica thread). */
static void on_acked(void *ctx, int16_t error)
{
    struct kafka_produce_wait *w = ctx;
    struct kafka_slot *s = w->slot;
    if (error != KAFKA_NONE) {
        w->resp->error_code = error;
        w->resp->base_offset = -1;
    }
    if (atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_acq_rel) == 1) {
        produce_finish(s);
        net_req_complete(s->req);
    }
}

/* Every batch is in (ops_pending is 0): true when the answer goes now, false when acks=all
 * parked it (KPR6; the last on_acked answers). */
static bool produce_appended(struct kafka_slot *s)
{
    if (!s->produce_rs)
        return true;
    if (!s->produce_wait_all || s->produce_waits_count == 0) {
        replica_state_poke(s->produce_rs); /* acks=0/1: the HW of an ISR {leader} moves now */
        return true;
    }
    atomic_store_explicit(&s->ops_pending, 1, memory_order_relaxed); /* KPR2: a guard again */
    for (uint32_t i = 0; i < s->produce_waits_count; i++) {
        struct kafka_produce_wait *w = &s->produce_waits[i];
        if (w->resp->error_code != KAFKA_NONE || w->need <= 0)
            continue;
        atomic_fetch_add_explicit(&s->ops_pending, 1, memory_order_relaxed);
        unsigned isr_n = 0, min_isr = 1;
        int16_t err = rs_check(s->produce_rs, w->topic, w->resp->index, -1, &isr_n, &min_isr);
        if (err == KAFKA_NONE && rs_wait(s->produce_rs, w->topic, w->resp->index, w->need,
                                         s->produce_deadline_ms, min_isr, on_acked, w) == 0)
            continue;
        atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_relaxed);
        w->resp->error_code = err ? err : KAFKA_NOT_LEADER_OR_FOLLOWER;
        w->resp->base_offset = -1;
    }
    return atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_acq_rel) == 1;
}

/* On a shard thread (KPR1-KPR3). */
static void on_batch_done(void *ctx, int err, int64_t base_offset, bool duplicate)
{
    struct kafka_produce_op *op = ctx;
    struct kafka_slot *s = op->slot;
    (void)duplicate;
    free(op->converted); /* KPC1: the engine is done with it */
    op->converted = NULL;
    if (err) {
        if (op->resp->error_code == KAFKA_NONE)
            op->resp->error_code = produce_error(err);
        op->resp->base_offset = -1;
    } else {
        if (op->first && op->resp->error_code == KAFKA_NONE)
            op->resp->base_offset = base_offset;
        if (op->need && base_offset + (int64_t)op->last_delta + 1 > *op->need)
            *op->need = base_offset + (int64_t)op->last_delta + 1; /* KPR6 */
    }
    if (atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_acq_rel) == 1 &&
        produce_appended(s)) {
        produce_finish(s);
        net_req_complete(s->req);
    }
}

bool kafka_produce_creates_topic(struct kafka_slot *s)
{
    const struct kafka_server *srv = s->server;
    if (!srv->opts.auto_create_topics || srv->opts.auto_create_max_per_request == 0 ||
        kafka_cluster(srv)) /* no auto-creation in a cluster (KCL1) */
        return false;
    const struct kmsg_produce_request *q = &s->msg.produce;
    for (int32_t t = 0; t < q->topics_count; t++) {
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t parts = 0;
        if (kafka_topic_name(q->topics[t].name, name) && strncmp(name, "__", 2) != 0 &&
            rt_topic_describe(srv->engine, name, &parts) == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            return true;
    }
    return false;
}

/* KPC1: a record set of message format v0/v1 (its first entry's magic below 2). */
static bool is_message_set(struct kp_bytes rec)
{
    return rec.ptr && rec.len > MSGSET_MAGIC_AT && rec.ptr[MSGSET_MAGIC_AT] < 2;
}

/* Counts the batches in a record set; -1 when the lengths do not tile it exactly. A message
 * set counts as the one batch it is converted to (its own rules are checked then). */
static int64_t count_batches(struct kp_bytes rec)
{
    if (is_message_set(rec))
        return 1;
    if (rec.len < RT_BATCH_HEADER_BYTES || !rec.ptr)
        return -1;
    int64_t n = 0;
    size_t at = 0, len = (size_t)rec.len;
    while (at < len) {
        if (len - at < RT_BATCH_HEADER_BYTES)
            return -1;
        uint32_t l = kp_load_be32(rec.ptr + at + RT_BATCH_OFF_LENGTH);
        size_t span = (size_t)l + RT_BATCH_LOG_OVERHEAD_BYTES;
        if (l > INT32_MAX || span > len - at || span < RT_BATCH_HEADER_BYTES)
            return -1;
        at += span;
        n++;
    }
    return n;
}

enum net_verdict kafka_handle_produce(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_produce_request *q = &s->msg.produce;
    if (kafka_txn_verify_park(s)) /* KPR7: the coordinator is asked first */
        return NET_PENDING;
    bool acks_ok = q->acks == 0 || q->acks == 1 || q->acks == -1;
    s->acks_none = q->acks == 0;

    /* Size everything first: the response arrays and one op per batch. */
    uint64_t parts = 0, batches = 0;
    for (int32_t t = 0; t < q->topics_count; t++) {
        parts += (uint64_t)q->topics[t].partitions_count;
        for (int32_t p = 0; p < q->topics[t].partitions_count; p++) {
            int64_t n = count_batches(q->topics[t].partitions[p].records);
            if (n > 0)
                batches += (uint64_t)n;
        }
    }
    if (batches > KAFKA_PRODUCE_BATCHES_MAX) {
        fprintf(stderr,
                "ringtail serve: connection %" PRIu64 ": a produce request of %" PRIu64
                " batches (at most %u per request); closing\n",
                s->req->conn_id, batches, KAFKA_PRODUCE_BATCHES_MAX);
        return NET_CLOSE;
    }
    /* KPR6: acks=all in a cluster waits for the high watermark. */
    struct replica_state *rs = kafka_replicas(srv);
    s->produce_rs = rs;
    s->produce_wait_all = q->acks == -1;
    s->produce_waits = NULL;
    s->produce_waits_count = 0;
    s->produce_deadline_ms = rs_now_ms() + (q->timeout_ms > 0 ? q->timeout_ms : 0);
    size_t need =
        (size_t)q->topics_count * sizeof(struct kmsg_produce_topic_response) +
        (size_t)parts * sizeof(struct kmsg_produce_partition_response) + 64 +
        (s->produce_wait_all && rs ? (size_t)parts * sizeof(struct kafka_produce_wait) + 64 : 0);
    if (kafka_resp_reserve(s, need) != 0)
        return NET_CLOSE;
    if (batches > s->ops_cap) {
        struct kafka_produce_op *ops = realloc(s->ops, (size_t)batches * sizeof(*ops));
        if (!ops)
            return NET_CLOSE;
        s->ops = ops;
        s->ops_cap = (uint32_t)batches;
    }
    struct kmsg_produce_response *m = kafka_alloc(s, 1, sizeof(*m));
    struct kmsg_produce_topic_response *topics =
        kafka_alloc(s, (size_t)(q->topics_count > 0 ? q->topics_count : 0), sizeof(*topics));
    if (!m || (q->topics_count > 0 && !topics))
        return NET_CLOSE;
    m->responses = topics;
    m->responses_count = q->topics_count > 0 ? q->topics_count : 0;
    s->produce_resp = m;
    if (s->produce_rs && s->produce_wait_all && parts > 0) {
        s->produce_waits = kafka_alloc(s, (size_t)parts, sizeof(struct kafka_produce_wait));
        if (!s->produce_waits)
            return NET_CLOSE;
    }

    atomic_store_explicit(&s->ops_pending, 1, memory_order_relaxed); /* KPR2: the guard */
    uint32_t op_index = 0;
    /* KZ2: a transactional produce needs WRITE on its transactional id (every partition). */
    bool txn_ok =
        q->transactional_id.len <= 0 ||
        kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE);
    size_t converted_bytes = 0; /* KPC1 */
    for (int32_t t = 0; t < q->topics_count; t++) {
        const struct kmsg_produce_topic *qt = &q->topics[t];
        struct kmsg_produce_topic_response *rt = &topics[t];
        rt->name = qt->name;
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_produce_partition_response *rp = kafka_alloc(s, (size_t)np, sizeof(*rp));
        if (np > 0 && !rp)
            return NET_CLOSE; /* sized above; cannot happen */
        rt->partitions = rp;
        rt->partitions_count = np;
        char name[RT_TOPIC_NAME_MAX + 1];
        int16_t topic_err = KAFKA_NONE;
        uint32_t partitions = 0;
        if (!acks_ok) {
            topic_err = KAFKA_INVALID_REQUIRED_ACKS;
        } else if (!txn_ok) {
            topic_err = KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        } else if (!kafka_topic_name(qt->name, name)) {
            topic_err = KAFKA_INVALID_TOPIC_EXCEPTION;
        } else if (!kafka_authorize_topic(s, name, ACL_OP_WRITE)) { /* KZ2 */
            topic_err = KAFKA_TOPIC_AUTHORIZATION_FAILED;
        } else if (strncmp(name, "__", 2) == 0) {
            topic_err = KAFKA_INVALID_TOPIC_EXCEPTION; /* "Cannot append to internal topic" */
        } else {
            int rc =
                kafka_topic_ensure(s, name, kafka_authorize_create_topic(s, name), &partitions);
            if (rc)
                topic_err = produce_error(rc);
        }
        for (int32_t p = 0; p < np; p++) {
            const struct kmsg_produce_partition *qp = &qt->partitions[p];
            struct kmsg_produce_partition_response *r = &rp[p];
            r->index = qp->index;
            r->base_offset = -1;
            r->log_append_time_ms = -1;
            r->log_start_offset = -1;
            r->error_code = topic_err;
            if (topic_err)
                continue;
            if (qp->index < 0 || (uint32_t)qp->index >= partitions) {
                r->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (count_batches(qp->records) < 0) {
                r->error_code = KAFKA_CORRUPT_MESSAGE;
                fprintf(stderr,
                        "ringtail serve: connection %" PRIu64 ": produce to %s-%d: the record "
                        "set's batch lengths do not add up to its %d bytes; refused\n",
                        s->req->conn_id, name, qp->index, qp->records.len);
                continue;
            }
            int64_t *need_at = NULL;
            if (rs) { /* KPR6: the leader, at the image's epoch; acks=all and the ISR */
                unsigned isr_n = 0, min_isr = 1;
                r->error_code = rs_check(rs, name, qp->index, -1, &isr_n, &min_isr);
                if (r->error_code == KAFKA_NONE && q->acks == -1 && isr_n < min_isr)
                    r->error_code = KAFKA_NOT_ENOUGH_REPLICAS;
                if (r->error_code == KAFKA_NONE) /* KPR7: what the coordinator refused */
                    r->error_code = kafka_txn_verify_error(s, name, qp->index);
                if (r->error_code != KAFKA_NONE)
                    continue;
                if (s->produce_waits) {
                    struct kafka_produce_wait *w = &s->produce_waits[s->produce_waits_count++];
                    w->slot = s;
                    w->resp = r;
                    w->need = 0;
                    memcpy(w->topic, name, sizeof w->topic);
                    need_at = &w->need;
                }
            }
            int64_t log_start = -1;
            if (rt_list_offsets(srv->engine, name, (uint32_t)qp->index, RT_OFFSET_EARLIEST,
                                RT_READ_UNCOMMITTED, &log_start) == 0)
                r->log_start_offset = log_start;
            uint8_t *at = (uint8_t *)qp->records.ptr; /* into the slot's frame: writable */
            const uint8_t *end = at + qp->records.len;
            void *converted = NULL;
            if (is_message_set(qp->records)) { /* KPC1 */
                size_t clen = 0;
                int rc = converted_bytes >= KAFKA_PRODUCE_CONVERTED_MAX_BYTES
                             ? RT_E_RECORD_TOO_LARGE
                             : rt_message_set_upconvert(qp->records.ptr, (size_t)qp->records.len,
                                                        srv->opts.engine.batch_size_max_bytes,
                                                        &converted, &clen, NULL);
                if (rc) {
                    r->error_code = produce_error(rc);
                    fprintf(stderr,
                            "ringtail serve: connection %" PRIu64 ": produce to %s-%d: message "
                            "set v0/v1 refused: %s (%s)\n",
                            s->req->conn_id, name, qp->index, rt_strerror(rc),
                            converted_bytes >= KAFKA_PRODUCE_CONVERTED_MAX_BYTES
                                ? "the request's converted sets reached 64 MiB"
                                : rt_error_detail());
                    continue;
                }
                converted_bytes += clen;
                atomic_fetch_add_explicit(&srv->stats.produce_upconverted_sets, 1,
                                          memory_order_relaxed);
                atomic_fetch_add_explicit(&srv->stats.produce_upconverted_bytes,
                                          (uint64_t)qp->records.len, memory_order_relaxed);
                at = converted;
                end = at + clen;
            }
            bool first = true;
            while (at < end) {
                size_t len =
                    (size_t)kp_load_be32(at + RT_BATCH_OFF_LENGTH) + RT_BATCH_LOG_OVERHEAD_BYTES;
                /* The broker stamps the partition leader epoch (bytes 12..15, outside the CRC):
                 * this single broker's only epoch, 0. The shard stamps the base offset. */
                memset(at + RT_BATCH_OFF_LEADER_EPOCH, 0, 4);
                struct kafka_produce_op *op = &s->ops[op_index];
                op->slot = s;
                op->resp = r;
                op->first = first;
                op->converted = converted;
                op->need = need_at;
                op->last_delta = kp_load_be32(at + RT_BATCH_OFF_LAST_OFFSET_DELTA);
                atomic_fetch_add_explicit(&s->ops_pending, 1, memory_order_relaxed);
                int rc = rt_append_batch_async(srv->engine, name, (uint32_t)qp->index, at, len,
                                               &op->op, on_batch_done, op);
                if (rc) {
                    atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_relaxed);
                    free(converted); /* KPC1: refused, no callback comes */
                    op->converted = NULL;
                    char detail[256];
                    snprintf(detail, sizeof(detail), "%s", rt_error_detail());
                    /* Within the topic's max.message.bytes (its override, the dynamic broker
                     * default, or the option) but larger than a segment: Kafka's
                     * RecordBatchTooLargeException (issue 21 F6). */
                    if (r->error_code == KAFKA_NONE)
                        r->error_code = rc == RT_E_RECORD_TOO_LARGE &&
                                                len <= topic_max_message_bytes(
                                                           srv->engine, name,
                                                           srv->opts.engine.batch_size_max_bytes)
                                            ? KAFKA_RECORD_LIST_TOO_LARGE
                                            : produce_error(rc);
                    fprintf(stderr,
                            "ringtail serve: connection %" PRIu64 ": produce to %s-%d refused: "
                            "%s (%s)\n",
                            s->req->conn_id, name, qp->index, rt_strerror(rc), detail);
                    break; /* later batches of this partition would be out of order */
                }
                /* The engine stamped the timestamps on this thread (V17, batch.c) and the
                 * shard writes only bytes 0..7; the guard (KPR2) keeps the answer unencoded
                 * until this loop is done, so the field is ours to set. Kafka answers the
                 * LogAppendTime it stamped, -1 under CreateTime. */
                if (at[RT_BATCH_OFF_ATTRIBUTES + 1] & RT_BATCH_ATTR_LOG_APPEND_TIME)
                    r->log_append_time_ms = (int64_t)kp_load_be64(at + RT_BATCH_OFF_MAX_TIMESTAMP);
                atomic_fetch_add_explicit(&srv->stats.produce_batches, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&srv->stats.produce_bytes, len, memory_order_relaxed);
                op_index++;
                first = false;
                at += len;
            }
        }
    }
    if (atomic_fetch_sub_explicit(&s->ops_pending, 1, memory_order_acq_rel) == 1 &&
        produce_appended(s)) {
        produce_finish(s); /* nothing in the engine (or all done already) */
        return NET_DONE;
    }
    return NET_PENDING;
}
