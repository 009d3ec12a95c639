/*
 * handle_txn.c — Kafka's transactional APIs mapped onto the engine's coordinator (the
 * "Transactions over the wire" calls of ringtail.h): InitProducerId with a transactional id
 * (v0-4), AddPartitionsToTxn v0-3, AddOffsetsToTxn v0-3, TxnOffsetCommit v0-3 and EndTxn v0-3.
 * Requests arrive decoded by their kmsg_txn.c descriptions (in s->msg, by the server, as for
 * every API: api_table.c KA6); answers are the response structs encoded by those descriptions.
 * InitProducerId v3+ carries the identity the producer holds (KIP-360), which goes to the
 * engine as the expected one; TxnOffsetCommit v3+ carries the consumer's generation, member and
 * instance (KIP-447), checked against the group; on a cluster node that does not coordinate the
 * ids, TxnOffsetCommit goes to the group coordinator's engine call instead (KT11). It owns the
 * mapping of engine errors to the Kafka codes each version defines, and never writes records
 * except through those engine calls.
 *
 * Invariants:
 *   KT1  A fenced producer (RT_E_PRODUCER_FENCED) is answered PRODUCER_FENCED (90) where the
 *        version defines it (InitProducerId v4+, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
 *        v2+, as Kafka's KafkaApis), else INVALID_PRODUCER_EPOCH (47); TxnOffsetCommit answers
 *        INVALID_PRODUCER_EPOCH at every version.
 *   KT2  EndTxn is answered only once the engine returned, i.e. after every marker is durable;
 *        a commit acknowledged is visible to read_committed readers of every partition.
 *   KT3  AddPartitionsToTxn answers every partition it was asked: UNKNOWN_TOPIC_OR_PARTITION for
 *        one that does not exist, OPERATION_NOT_ATTEMPTED (55) for the others of that request
 *        (nothing is added), else the one outcome of the engine call for all. When no partition
 *        is refused but one only waits (KT8's COORDINATOR_LOAD_IN_PROGRESS), the others get that
 *        retriable code too, not 55 (which librdkafka takes for permanent).
 *   KT4  A request whose strings cannot be names (null, embedded NUL, too long) is answered
 *        with an error code and changes nothing; one whose bytes do not decode closes the
 *        connection (as every other API here).
 *   KT5  No handler here waits for the disk on the loop thread: InitProducerId,
 *        AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn check what they can on
 *        the loop thread, hand the call to the engine's asynchronous form (rt_txn_*_async) and
 *        answer NET_PENDING; the engine's done (on one of its transaction lanes) encodes the
 *        answer and hands the request back (net_req_complete), so the loop's other connections
 *        run meanwhile and net keeps the connection's answers in order.
 *   KT6  Everything an engine call in flight points to (its rt_txn_op, the NUL-terminated id
 *        and group, the partitions and their names, the offsets and their metadata, the
 *        answer's arrays) lives in the slot's response arena, and the decoded request in the
 *        slot (s->msg, its arrays in the decode arena, its strings in the frame); net's release
 *        hook resets them only after the answer is sent. One kafka_resp_reserve per request,
 *        before any of it is taken.
 *   KT7  TxnOffsetCommit v3+ with a generation, member or instance (KIP-447) is refused as a
 *        whole with the group coordinator's answer (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
 *        FENCED_INSTANCE_ID) when that member may not commit; REBALANCE_IN_PROGRESS is not an
 *        answer here (Kafka does not check it for transactional commits). Generation -1 with
 *        no member or instance (v0-2, or a producer without a consumer) is not checked.
 *   KT8  In a cluster (`--voters`; docs/cluster.md §7.3) the requests reach this node only when it
 *        is the transaction coordinator, the leader of `__transaction_state`-0 (txn_cluster.c
 *        KTC2). AddPartitionsToTxn accepts a partition
 *        the metadata image names a leader for: this node, once it is the ready leader
 *        (replica_state.h rs_check; COORDINATOR_LOAD_IN_PROGRESS, retriable, before), or another
 *        registered, unfenced node (issue 25: its marker goes there as WriteTxnMarkers, KT9);
 *        COORDINATOR_LOAD_IN_PROGRESS while the image names no leader or a fenced or
 *        unregistered one (a new leader comes); UNKNOWN_TOPIC_OR_PARTITION when the image does
 *        not have it. AddOffsetsToTxn: KT13. On a single broker nothing here runs.
 *   KT9  In a cluster the engine's marker writer (kafka_txn_marker_writer, format.md G.8) writes
 *        a marker into the local partition (rt_txn_write_marker) only when the image names this
 *        node its leader and this node is its ready leader; for a partition the image says
 *        another node leads, it sends that node WriteTxnMarkers (kafka_txn_marker_send,
 *        txn_marker_send.c KTM7-KTM9) and returns what the node answered (0 only for NONE);
 *        otherwise (no leader, or this node named but not ready) it fails
 *        (RT_E_NOT_COORDINATOR) and the transaction stays Prepare* (MW3), retried each
 *        coordinator tick: a replica this node only follows never gets a marker its leader
 *        does not have. A topic neither the image nor the engine has (deleted) counts as
 *        written (MW3); one the engine has but the image not yet, fails. Before any of it, the
 *        MW2 wait: the decision replicated to the ISR first (txn_cluster.c KTC5).
 *   KT10 Retired with KT13: it answered NONE to the EndTxn abort that followed an AddOffsetsToTxn
 *        refused POLICY_VIOLATION (librdkafka aborts a transaction with nothing added, which the
 *        engine answers INVALID_TXN_STATE, fatal to the producer); no transactional request is
 *        refused so any more, and an INVALID_TXN_STATE stands, as Kafka's coordinator answers it.
 *   KT11 TxnOffsetCommit goes to the group's coordinator (group_cluster.c KGC2), which may not
 *        be the transaction's. On a cluster node that does not coordinate the transactional ids
 *        (txn_coordinated_here: not the ready leader of `__transaction_state`-0, txn_cluster.c
 *        KTC2) the offsets are written by the group coordinator's engine call
 *        (rt_group_commit_txn_offsets_async, format.md H.7 TXO1-TXO5): pending until the
 *        transaction's marker reaches this node's `__consumer_offsets` partition, without the
 *        local coordinator's check of the id. Where the local engine coordinates the ids (a
 *        single broker always) the engine's transactional call (rt_txn_commit_offsets_async)
 *        stays, so a single broker answers byte for byte as before.
 *   KT12 In a cluster a TxnOffsetCommit is answered once its batch is on every ISR member of the
 *        group's `__consumer_offsets` partition (group_cluster.c KGC4, with its error mapping:
 *        NOT_COORDINATOR when the leadership went, COORDINATOR_NOT_AVAILABLE at the timeout or
 *        below min.insync.replicas), whichever call wrote it.
 *   KT14 A marker the writer puts into a partition this node leads (KT9) counts as written only
 *        once it is on the partition's ISR (marker_isr_wait: the high watermark past the log
 *        end read after the write, the ISR at least min.insync.replicas), as a peer answers
 *        WriteTxnMarkers (handle_txn_markers.c KTM4) and as Kafka appends every marker with
 *        acks=all; otherwise the transaction stays Prepare* and the coordinator's tick writes it
 *        again (a no-op, KTM5) and waits again. A wait is at most 5 s, and after one timed out
 *        the next second's fail at once (KTC5's rule: the agent thread may be the waiter). Without it a leader that died right after the
 *        write left a new leader without the marker and the coordinator, counting it written,
 *        never sent it again: an open transaction, a pinned LSO, in that partition for good.
 *   KT13 AddOffsetsToTxn in a cluster checks the group's `__consumer_offsets` partition as KT8
 *        checks a partition (txn_offsets_partition_check over txn_partition_check): accepted when
 *        this node is its ready leader or another registered, unfenced node leads it — the
 *        coordinator adds that partition to the transaction and its marker goes through the
 *        marker writer (KT9: WriteTxnMarkers to that node, which applies the offsets pending
 *        there, KT11); COORDINATOR_LOAD_IN_PROGRESS while it has no live leader, or the image no
 *        such partition yet (the topic comes, metadata_node.h MN8). It was POLICY_VIOLATION
 *        before issue 25.
 */
#include "tools/kafka/handlers/handle_txn.h"

#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle_offsets.h"
#include "tools/kafka/handlers/handle_txn_markers.h"
#include "tools/kafka/handlers/txn_cluster.h"
#include "tools/kafka/handlers/txn_verify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TXN_ID_BYTES_MAX      1024 /* the engine's limit on transactional ids and group names */
#define MARKER_ISR_WAIT_MS    5000 /* KT14, as txn_cluster.c's KTC_DECISION_WAIT_MS */
#define MARKER_ISR_BACKOFF_MS 1000 /* KT14: after a timed-out wait, fail at once this long */

/* ---- errors and names ---- */

/* KT1: the Kafka code for an engine error at the slot's API and version. */
static int16_t txn_error(const struct kafka_slot *s, int rc)
{
    int16_t v = s->header.api_version;
    switch (rc) {
    case RT_E_PRODUCER_FENCED:
        switch (s->header.api_key) {
        case KAFKA_INIT_PRODUCER_ID:
            return v >= 4 ? KAFKA_PRODUCER_FENCED : KAFKA_INVALID_PRODUCER_EPOCH;
        case KAFKA_ADD_PARTITIONS_TO_TXN:
        case KAFKA_ADD_OFFSETS_TO_TXN:
        case KAFKA_END_TXN:
            return v >= 2 ? KAFKA_PRODUCER_FENCED : KAFKA_INVALID_PRODUCER_EPOCH;
        default:
            return KAFKA_INVALID_PRODUCER_EPOCH;
        }
    case RT_E_INVALID_PRODUCER_EPOCH:
        return KAFKA_INVALID_PRODUCER_EPOCH;
    case RT_E_PRODUCER_IDS_EXHAUSTED:
        if (kafka_cluster(s->server)) { /* handle_cluster.c KCL3: no granted id left yet */
            metadata_node_kick(kafka_cluster(s->server));
            return KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
        }
        return kafka_error_from_rt(rc);
    case RT_E_INVALID_ARGUMENT:
    case RT_E_TXN_PARTITIONS_FULL:
        return KAFKA_INVALID_REQUEST;
    case RT_E_IO_FAILED:
        /* The coordinator's log write failed (engine CO15: the decision may stand, its markers
         * are retried once the partition heals). Kafka's coordinators answer a failed log
         * append with NOT_COORDINATOR (storage error mapped), which clients retry; 56 would be
         * fatal to a Java producer's EndTxn. */
        return KAFKA_NOT_COORDINATOR;
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

/* ---- a cluster: partitions led by this node only (KT8, KT9) ---- */

#define OFFSETS_TOPIC "__consumer_offsets"

struct lead_look {
    const char *topic;
    int32_t partition;
    bool found;
    int32_t leader;
};

static void lead_lookup(void *ctx, const struct metadata_image *img)
{
    struct lead_look *l = ctx;
    const struct mi_topic *t = metadata_image_topic(img, l->topic);
    if (!t || l->partition < 0 || l->partition >= t->partitions_count ||
        !t->partitions[l->partition].exists)
        return;
    l->found = true;
    l->leader = t->partitions[l->partition].leader;
}

/* KT8: NONE when (topic, partition) may join a transaction coordinated here; *leader_out: the
 * image's leader (-1: none or unknown). */
static int16_t txn_lead_check(const struct kafka_server *srv, const char *topic, int32_t partition,
                              int32_t *leader_out)
{
    struct metadata_node *mn = kafka_cluster(srv);
    *leader_out = -1;
    if (!mn)
        return KAFKA_NONE; /* a single broker: every partition is its own */
    struct lead_look l = {.topic = topic, .partition = partition, .leader = -1};
    metadata_node_read(mn, lead_lookup, &l);
    *leader_out = l.leader;
    if (!l.found)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    if (l.leader < 0)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS; /* no leader now: one comes */
    if (l.leader != srv->opts.broker_id)
        return KAFKA_POLICY_VIOLATION;
    struct replica_state *rs = metadata_node_replicas(mn);
    if (rs && rs_check(rs, topic, partition, -1, NULL, NULL) != KAFKA_NONE)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS; /* named leader, not ready yet */
    return KAFKA_NONE;
}

static void live_lookup(void *ctx, const struct metadata_image *img)
{
    int32_t *id = ctx;
    const struct mi_broker *b = metadata_image_broker(img, *id);
    if (!b || b->fenced)
        *id = -1;
}

/* KT8 (issue 25): AddPartitionsToTxn's check of a partition: NONE also when the image names
 * another registered, unfenced node its leader (the transaction's marker goes there,
 * kafka_txn_marker_writer, KT9); a fenced or unregistered leader is COORDINATOR_LOAD_IN_PROGRESS
 * (a new leader comes). */
static int16_t txn_partition_check(const struct kafka_server *srv, const char *topic,
                                   int32_t partition)
{
    int32_t leader = -1;
    int16_t code = txn_lead_check(srv, topic, partition, &leader);
    if (code != KAFKA_POLICY_VIOLATION)
        return code;
    metadata_node_read(kafka_cluster(srv), live_lookup, &leader);
    return leader >= 0 ? KAFKA_NONE : KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
}

/* KT11: whether this node's engine coordinates the transactional ids: a single broker does, a
 * cluster node when it is the ready leader of `__transaction_state`-0 (txn_cluster.c KTC2). */
static bool txn_coordinated_here(const struct kafka_server *srv)
{
    return kafka_txn_coordinator_check(srv) == KAFKA_NONE;
}

/* KT13: NONE when the group's `__consumer_offsets` partition p may join a transaction
 * coordinated here: led here (KT8's check) or by another live node. */
static int16_t txn_offsets_partition_check(const struct kafka_server *srv, int32_t p)
{
    int16_t led = txn_partition_check(srv, OFFSETS_TOPIC, p);
    return led == KAFKA_UNKNOWN_TOPIC_OR_PARTITION /* the topic comes (metadata_node.h MN8) */
               ? KAFKA_COORDINATOR_LOAD_IN_PROGRESS
               : led;
}

static int marker_isr_failed(const struct rt_txn_marker *mk, const char *why)
{
    static _Atomic int64_t last_logged = -1; /* once per producer id and epoch */
    int64_t key = (mk->producer_id << 16) ^ (uint16_t)mk->producer_epoch;
    if (atomic_exchange(&last_logged, key) != key)
        fprintf(stderr,
                "ringtail serve: the %s marker of producer id %" PRId64 " epoch %d for "
                "%s-%" PRIu32 " is written here but not on the ISR (%s); retried "
                "(docs/cluster.md 7.3)\n",
                mk->commit ? "commit" : "abort", mk->producer_id, (int)mk->producer_epoch,
                mk->topic, mk->partition, why);
    return RT_E_TIMED_OUT;
}

static _Atomic int64_t marker_isr_timed_out_ms = -1; /* KT14's backoff */

static int marker_isr_wait(struct replica_state *rs, const struct rt_txn_marker *mk,
                           unsigned min_isr)
{
    int64_t last = atomic_load(&marker_isr_timed_out_ms);
    if (last >= 0 && rs_now_ms() - last < MARKER_ISR_BACKOFF_MS)
        return marker_isr_failed(mk, "a wait timed out a moment ago");
    int16_t error = KAFKA_NONE;
    if (rs_wait_blocking(rs, mk->topic, (int32_t)mk->partition, -1,
                         rs_now_ms() + MARKER_ISR_WAIT_MS, min_isr, &error) != 0)
        return marker_isr_failed(mk, "the replica side is stopping");
    if (error == KAFKA_NONE)
        return 0;
    if (error == KAFKA_REQUEST_TIMED_OUT)
        atomic_store(&marker_isr_timed_out_ms, rs_now_ms());
    return marker_isr_failed(mk, kafka_error_name(error));
}

int kafka_txn_marker_writer(void *ctx, const struct rt_txn_marker *mk)
{
    struct kafka_txn_writer *w = ctx;
    rt_engine *e = atomic_load_explicit(&w->engine, memory_order_acquire);
    struct metadata_node *mn = atomic_load_explicit(&w->cluster, memory_order_acquire);
    if (!e || !mn)
        return RT_E_NOT_COORDINATOR; /* not serving yet: retried (MW3) */
    /* txn_cluster.c KTC5 (G.8 MW2): the decision on the ISR before any marker is handed on */
    int replicated = kafka_txn_decision_replicated(mn);
    if (replicated)
        return replicated;
    struct lead_look l = {.topic = mk->topic, .partition = (int32_t)mk->partition, .leader = -1};
    metadata_node_read(mn, lead_lookup, &l);
    if (!l.found) {
        uint32_t parts = 0; /* KT9: gone from both counts as written (MW3) */
        if (rt_topic_describe(e, mk->topic, &parts) != 0 || mk->partition >= parts)
            return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
        return RT_E_NOT_COORDINATOR;
    }
    if (l.leader >= 0 && l.leader != w->self) /* KT9: led by another node: WriteTxnMarkers */
        return kafka_txn_marker_send(mn, l.leader, mk);
    struct replica_state *rs = metadata_node_replicas(mn);
    unsigned min_isr = 1;
    if (l.leader != w->self || !rs ||
        rs_check(rs, mk->topic, (int32_t)mk->partition, -1, NULL, &min_isr) != KAFKA_NONE) {
        /* KT9: never into a replica this node follows; once per producer id and epoch */
        static _Atomic int64_t last_logged = -1;
        int64_t key = (mk->producer_id << 16) ^ (uint16_t)mk->producer_epoch;
        if (atomic_exchange(&last_logged, key) != key)
            fprintf(stderr,
                    "ringtail serve: the %s marker of producer id %" PRId64 " epoch %d for "
                    "%s-%" PRIu32 " waits: that partition has no ready leader (the image names "
                    "node %" PRId32 "; this node is %" PRId32
                    "); the transaction stays pending until one leads it (docs/cluster.md 7.3)\n",
                    mk->commit ? "commit" : "abort", mk->producer_id, (int)mk->producer_epoch,
                    mk->topic, mk->partition, l.leader, w->self);
        return RT_E_NOT_COORDINATOR;
    }
    int rc = rt_txn_write_marker(e, mk->topic, mk->partition, mk->producer_id, mk->producer_epoch,
                                 mk->commit);
    if (rc == 0)
        rc = marker_isr_wait(rs, mk, min_isr); /* KT14 */
    if (rc == 0) /* txn_verify.c KTV6: the transaction ended in that partition */
        kafka_txn_verify_marker(mk->producer_id, mk->topic, mk->partition);
    return rc;
}

/* ---- the engine's asynchronous calls (KT5) ---- */

/* One transactional call in the engine, in the response arena (valid until net's release hook,
 * which runs only after the answer is sent): the op and every string and array the call points
 * to (KT6). */
struct txn_call {
    struct rt_txn_op op;
    struct rt_group_op group_op; /* KT11: the group coordinator's call */
    struct kafka_slot *s;
    struct kmsg_topic_errors *results; /* AddPartitionsToTxn: one per request topic */
    int32_t results_count;
    struct kafka_offsets_commit commit; /* TxnOffsetCommit */
    char id[TXN_ID_BYTES_MAX + 1];
    char group[TXN_ID_BYTES_MAX + 1];
    int64_t pid; /* InitProducerId's answer, while it waits for the ISR (KTC4) */
    int16_t epoch;
};

/* Reserves the response arena (bytes beyond the call) and takes the call from it; NULL when
 * memory is short (logged: the connection closes). */
static struct txn_call *call_begin(struct kafka_slot *s, size_t bytes)
{
    if (kafka_resp_reserve(s, sizeof(struct txn_call) + bytes + 64) != 0) {
        refuse_log(s, "out of memory");
        return NULL;
    }
    struct txn_call *k = kafka_alloc(s, 1, sizeof(*k));
    if (k)
        k->s = s;
    else
        refuse_log(s, "out of memory");
    return k;
}

/* Hands the answer built in the slot's writer back to the loop (any thread). */
static void call_complete(struct kafka_slot *s, enum net_verdict v)
{
    if (v != NET_DONE)
        s->req->close_reason = "the transactional answer could not be encoded";
    net_req_complete(s->req);
}

/* txn_cluster.c KTC4: true when the answer of a successful call waits for the coordinator's
 * record on the ISR (fn answers it then, on the replica thread); false on a single broker. */
static bool answer_parked(struct txn_call *k, void (*fn)(void *ctx, int16_t error))
{
    int rc = kafka_txn_answer_wait(k->s->server, fn, k);
    if (rc == -1)
        return false;
    if (rc != 0)
        fn(k, KAFKA_REQUEST_TIMED_OUT); /* could not park: COORDINATOR_NOT_AVAILABLE */
    return true;
}

/* KTC4: the Kafka code of a parked answer, logged when it is not NONE. */
static int16_t replicated_code(struct txn_call *k, int16_t error)
{
    int16_t code = kafka_txn_answer_error(error);
    if (code != KAFKA_NONE)
        fprintf(stderr,
                "ringtail serve: %s for '%s': the coordinator's record is not on the ISR of "
                "__transaction_state-0 (%s); answered %s\n",
                kafka_api_name(k->s->header.api_key), k->id, kafka_error_name(error),
                kafka_error_name(code));
    return code;
}

/* ---- InitProducerId with a transactional id ---- */

static enum net_verdict answer_init(struct kafka_slot *s, int16_t code, int64_t pid, int16_t epoch)
{
    struct kmsg_init_producer_id_response m = {
        .error_code = code, .producer_id = code ? -1 : pid, .producer_epoch = code ? -1 : epoch};
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_init_producer_id_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

static void init_replicated(void *ctx, int16_t error)
{
    struct txn_call *k = ctx;
    call_complete(k->s, answer_init(k->s, replicated_code(k, error), k->pid, k->epoch));
}

/* On an engine lane thread (KT5). */
static void init_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    struct txn_call *k = ctx;
    struct kafka_slot *s = k->s;
    if (err)
        log_refusal(s, k->id, err);
    k->pid = pid;
    k->epoch = epoch;
    if (!err && answer_parked(k, init_replicated))
        return; /* KTC4 */
    call_complete(s, answer_init(s, err ? txn_error(s, err) : KAFKA_NONE, pid, epoch));
}

enum net_verdict kafka_handle_init_producer_id_txn(struct kafka_slot *s)
{
    const struct kmsg_init_producer_id_request *q = &s->msg.init_producer_id;
    struct txn_call *k = call_begin(s, 0);
    if (!k)
        return NET_CLOSE;
    if (!name_of(q->transactional_id, k->id))
        return answer_init(s, KAFKA_INVALID_REQUEST, -1, -1);
    int16_t coord = kafka_txn_coordinator_check(s->server); /* txn_cluster.c KTC2 */
    if (coord != KAFKA_NONE)
        return answer_init(s, coord, -1, -1);
    /* KIP-360 (v3+): the identity the producer holds, -1/-1 when it has none (v0-2 decode
     * -1/-1). */
    int rc = rt_txn_init_producer_async(s->server->engine, k->id, q->transaction_timeout_ms,
                                        q->producer_id, q->producer_epoch, &k->op, init_done, k);
    if (rc) {
        log_refusal(s, k->id, rc);
        return answer_init(s, txn_error(s, rc), -1, -1);
    }
    return NET_PENDING;
}

/* ---- AddPartitionsToTxn ---- */

static enum net_verdict answer_partitions(struct txn_call *k)
{
    struct kafka_slot *s = k->s;
    for (int32_t t = 0; t < k->results_count; t++)
        for (int32_t i = 0; i < k->results[t].partitions_count; i++)
            kafka_count_error(s, k->results[t].partitions[i].error_code);
    struct kmsg_add_partitions_to_txn_response m = {.results = k->results,
                                                    .results_count = k->results_count};
    kafka_response_begin(s);
    kmsg_add_partitions_to_txn_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* KT3: every partition still NONE gets `outcome`. */
static void partitions_settle(struct txn_call *k, int16_t outcome)
{
    for (int32_t t = 0; t < k->results_count; t++) {
        struct kmsg_partition_error *pe = (struct kmsg_partition_error *)k->results[t].partitions;
        for (int32_t i = 0; i < k->results[t].partitions_count; i++)
            if (pe[i].error_code == KAFKA_NONE)
                pe[i].error_code = outcome;
    }
}

static enum net_verdict answer_added(struct txn_call *k, int err)
{
    if (err)
        log_refusal(k->s, k->id, err);
    partitions_settle(k, err ? txn_error(k->s, err) : KAFKA_NONE);
    return answer_partitions(k);
}

static void partitions_replicated(void *ctx, int16_t error)
{
    struct txn_call *k = ctx;
    partitions_settle(k, replicated_code(k, error));
    call_complete(k->s, answer_partitions(k));
}

static void add_partitions_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    (void)pid;
    (void)epoch;
    struct txn_call *k = ctx;
    if (!err && answer_parked(k, partitions_replicated))
        return; /* KTC4 */
    call_complete(k->s, answer_added(k, err));
}

enum net_verdict kafka_handle_add_partitions_to_txn(struct kafka_slot *s)
{
    const struct kmsg_add_partitions_to_txn_request *q = &s->msg.add_partitions_to_txn;
    rt_engine *e = s->server->engine;
    size_t total = 0;
    for (int32_t t = 0; t < q->topics_count; t++)
        total += (size_t)q->topics[t].partitions_count;
    size_t topics = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    /* One reservation for the whole call (a later one would reset the arena). */
    size_t extra =
        topics * (sizeof(struct kmsg_topic_errors) + RT_TOPIC_NAME_MAX + 1 + 16) +
        total * (sizeof(struct kmsg_partition_error) + sizeof(struct rt_topic_partition));
    struct txn_call *k = call_begin(s, extra);
    if (!k)
        return NET_CLOSE;
    struct kmsg_topic_errors *results = topics ? kafka_alloc(s, topics, sizeof(*results)) : NULL;
    struct rt_topic_partition *tp = total ? kafka_alloc(s, total, sizeof(*tp)) : NULL;
    char *names = topics ? kafka_alloc(s, topics, RT_TOPIC_NAME_MAX + 1) : NULL;
    if ((topics && (!results || !names)) || (total && !tp)) {
        refuse_log(s, "out of memory");
        return NET_CLOSE;
    }
    k->results = results;
    k->results_count = (int32_t)topics;
    bool id_ok = name_of(q->transactional_id, k->id);
    /* KZ2: WRITE on the transactional id (every partition refused), then on each topic. */
    bool id_denied = id_ok && !kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID,
                                                   q->transactional_id, ACL_OP_WRITE);
    /* KT3: every partition checked first. */
    bool failed = !id_ok || id_denied;
    bool refused = failed;          /* a failure of the request itself, not a partition's wait */
    int16_t wait_code = KAFKA_NONE; /* KT3: a partition's retriable answer (KT8) */
    /* txn_cluster.c KTC2: every partition answers it when this node is not the coordinator */
    int16_t coord = failed ? KAFKA_NONE : kafka_txn_coordinator_check(s->server);
    size_t n = 0;
    for (int32_t t = 0; t < q->topics_count; t++) {
        int32_t np = q->topics[t].partitions_count;
        struct kmsg_partition_error *pe = np > 0 ? kafka_alloc(s, (size_t)np, sizeof(*pe)) : NULL;
        if (np > 0 && !pe) {
            refuse_log(s, "out of memory");
            return NET_CLOSE;
        }
        results[t] = (struct kmsg_topic_errors){
            .name = q->topics[t].name, .partitions = pe, .partitions_count = np};
        char *name = names + (size_t)t * (RT_TOPIC_NAME_MAX + 1);
        bool name_ok = kafka_topic_name(q->topics[t].name, name);
        uint32_t parts = 0;
        bool known = name_ok && /* handle_cluster.c KCL4: the cluster's metadata, not this node's */
                     kafka_topic_partitions(s->server, name, &parts) == 0;
        bool write = id_denied ||
                     kafka_authorize_str(s, ACL_RESOURCE_TOPIC, q->topics[t].name, ACL_OP_WRITE);
        for (int32_t i = 0; i < np; i++) {
            int32_t p = q->topics[t].partitions[i];
            pe[i] = (struct kmsg_partition_error){.partition_index = p, .error_code = KAFKA_NONE};
            if (id_denied) {
                pe[i].error_code = KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            } else if (coord != KAFKA_NONE) {
                pe[i].error_code = coord;
                failed = true;
            } else if (!write) {
                pe[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
                failed = refused = true;
            } else if (!name_ok || (name[0] == '_' && name[1] == '_')) {
                pe[i].error_code = KAFKA_INVALID_TOPIC_EXCEPTION;
                failed = refused = true;
            } else if (!known || p < 0 || (uint32_t)p >= parts) {
                pe[i].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                failed = refused = true;
            } else if ((pe[i].error_code = txn_partition_check(s->server, name, p)) !=
                       KAFKA_NONE) { /* KT8 */
                failed = true;
                wait_code = pe[i].error_code;
            } else {
                tp[n++] = (struct rt_topic_partition){.topic = name, .partition = (uint32_t)p};
            }
        }
    }
    if (failed) {
        /* KT3: OPERATION_NOT_ATTEMPTED beside a refused partition, as Kafka; beside one that
         * only waits (KT8: COORDINATOR_LOAD_IN_PROGRESS), that same retriable code, as Kafka
         * answers a coordinator's error for every partition — librdkafka takes 55 for a
         * permanent error and fails the transaction (its 0103 on a cluster) */
        partitions_settle(k, !id_ok                               ? KAFKA_INVALID_REQUEST
                             : refused || wait_code == KAFKA_NONE ? KAFKA_OPERATION_NOT_ATTEMPTED
                                                                  : wait_code);
        return answer_partitions(k);
    }
    int rc = rt_txn_add_partitions_async(e, k->id, q->producer_id, q->producer_epoch, tp, n, &k->op,
                                         add_partitions_done, k);
    return rc ? answer_added(k, rc) : NET_PENDING;
}

/* ---- AddOffsetsToTxn and EndTxn: throttle + one code ---- */

static enum net_verdict answer_code(struct kafka_slot *s, int16_t code)
{
    struct kmsg_error_response m = {.error_code = code};
    kafka_count_error(s, code);
    kafka_response_begin(s);
    if (s->header.api_key == KAFKA_END_TXN)
        kmsg_end_txn_response_encode(&s->w, s->header.api_version, &m);
    else
        kmsg_add_offsets_to_txn_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

static enum net_verdict answer_outcome(struct txn_call *k, int err)
{
    if (err)
        log_refusal(k->s, k->id, err);
    return answer_code(k->s, err ? txn_error(k->s, err) : KAFKA_NONE);
}

static void code_replicated(void *ctx, int16_t error)
{
    struct txn_call *k = ctx;
    call_complete(k->s, answer_code(k->s, replicated_code(k, error)));
}

static void code_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    (void)pid;
    (void)epoch;
    struct txn_call *k = ctx;
    if (!err && answer_parked(k, code_replicated))
        return; /* KTC4 */
    call_complete(k->s, answer_outcome(k, err));
}

enum net_verdict kafka_handle_add_offsets_to_txn(struct kafka_slot *s)
{
    const struct kmsg_add_offsets_to_txn_request *q = &s->msg.add_offsets_to_txn;
    struct txn_call *k = call_begin(s, 0);
    if (!k)
        return NET_CLOSE;
    if (!name_of(q->transactional_id, k->id) || !name_of(q->group_id, k->group))
        return answer_code(s, KAFKA_INVALID_REQUEST);
    if (!kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE))
        return answer_code(s, KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED); /* KZ2 */
    if (!kafka_authorize_str(s, ACL_RESOURCE_GROUP, q->group_id, ACL_OP_READ))
        return answer_code(s, KAFKA_GROUP_AUTHORIZATION_FAILED);
    int16_t coord = kafka_txn_coordinator_check(s->server); /* txn_cluster.c KTC2 */
    if (coord != KAFKA_NONE)
        return answer_code(s, coord);
    int32_t p = (int32_t)rt_group_partition(k->group, strlen(k->group));
    int16_t led = txn_offsets_partition_check(s->server, p); /* KT13 */
    if (led != KAFKA_NONE)
        return answer_code(s, led);
    int rc = rt_txn_add_offsets_async(s->server->engine, k->id, q->producer_id, q->producer_epoch,
                                      k->group, &k->op, code_done, k);
    return rc ? answer_outcome(k, rc) : NET_PENDING;
}

enum net_verdict kafka_handle_end_txn(struct kafka_slot *s)
{
    const struct kmsg_end_txn_request *q = &s->msg.end_txn;
    struct txn_call *k = call_begin(s, 0);
    if (!k)
        return NET_CLOSE;
    if (!name_of(q->transactional_id, k->id))
        return answer_code(s, KAFKA_INVALID_REQUEST);
    if (!kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE))
        return answer_code(s, KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED); /* KZ2 */
    int16_t coord = kafka_txn_coordinator_check(s->server);                 /* txn_cluster.c KTC2 */
    if (coord != KAFKA_NONE)
        return answer_code(s, coord);
    /* KT2: answered once the markers are visible (the engine's done). */
    int rc = rt_txn_end_async(s->server->engine, k->id, q->producer_id, q->producer_epoch,
                              q->committed, &k->op, code_done, k);
    return rc ? answer_outcome(k, rc) : NET_PENDING;
}

/* ---- TxnOffsetCommit: the offsets validator OffsetCommit uses (handle_offsets.h, KO7) ---- */

static enum net_verdict answer_commit(struct txn_call *k, int16_t stored)
{
    struct kafka_slot *s = k->s;
    kafka_offsets_settle(s, &k->commit, stored);
    struct kmsg_commit_response m = {.topics = k->commit.results,
                                     .topics_count = k->commit.results_count};
    kafka_response_begin(s);
    kmsg_txn_offset_commit_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* KT12: the commit reached the ISR of its `__consumer_offsets` partition (or could not). */
static void commit_replicated(void *ctx, int16_t error)
{
    struct txn_call *k = ctx;
    int16_t stored = kafka_group_commit_error(error);
    if (stored != KAFKA_NONE)
        fprintf(stderr,
                "ringtail serve: TxnOffsetCommit for '%s', group '%s': not on the ISR: %s\n", k->id,
                k->group, kafka_error_name(error));
    call_complete(k->s, answer_commit(k, stored));
}

static void commit_finish(struct txn_call *k, int err)
{
    if (err)
        log_refusal(k->s, k->id, err);
    else if (kafka_group_commit_wait(k->s->server, kp_str_of(k->group), commit_replicated, k) == 0)
        return; /* KT12: answered once the ISR has it; a single broker answers now */
    call_complete(k->s, answer_commit(k, err ? txn_error(k->s, err) : KAFKA_NONE));
}

static void commit_done(void *ctx, int err, int64_t pid, int16_t epoch)
{
    (void)pid;
    (void)epoch;
    commit_finish(ctx, err);
}

/* KT11: the group coordinator's call answered. */
static void group_commit_done(void *ctx, int err, size_t deleted)
{
    (void)deleted;
    commit_finish(ctx, err);
}

/* The validator's arrays for q, from the response arena (KT6): a kp_arena over `bytes` of it,
 * grown until kafka_offsets_prepare fits. NULL when memory is short. */
static struct txn_call *commit_begin(struct kafka_slot *s,
                                     const struct kmsg_txn_offset_commit_request *q)
{
    size_t bytes = 256;
    for (int32_t t = 0; t < q->topics_count; t++) {
        bytes += sizeof(struct kmsg_topic_errors) + sizeof(void *) + RT_TOPIC_NAME_MAX + 1 + 48;
        for (int32_t i = 0; i < q->topics[t].partitions_count; i++) {
            int32_t ml = q->topics[t].partitions[i].committed_metadata.len;
            bytes += sizeof(struct rt_offset) + sizeof(struct kmsg_partition_error) + 1 +
                     (ml > 0 && ml <= RT_OFFSET_METADATA_MAX_BYTES ? (size_t)ml : 0);
        }
    }
    for (;;) {
        struct txn_call *k = call_begin(s, bytes + 16);
        uint8_t *mem = k ? kafka_alloc(s, bytes, 1) : NULL;
        if (!mem) {
            if (k)
                refuse_log(s, "out of memory");
            return NULL;
        }
        struct kp_arena a;
        kp_arena_init(&a, mem, bytes);
        struct kp_reader r;
        kp_reader_init(&r, mem, 0);
        int rc = kafka_offsets_prepare(&r, &a, q->topics, q->topics_count, &k->commit);
        if (rc == 0)
            return k;
        if (rc != KP_E_LIMIT || bytes >= KAFKA_ARENA_MAX_BYTES) {
            refuse_log(s, "request arrays too large");
            return NULL;
        }
        bytes *= 2; /* the next reservation starts the arena over */
    }
}

enum net_verdict kafka_handle_txn_offset_commit(struct kafka_slot *s)
{
    const struct kmsg_txn_offset_commit_request *q = &s->msg.txn_offset_commit;
    struct txn_call *k = commit_begin(s, q);
    if (!k)
        return NET_CLOSE;
    rt_engine *e = s->server->engine;
    int16_t all = name_of(q->transactional_id, k->id) && name_of(q->group_id, k->group)
                      ? KAFKA_NONE
                      : KAFKA_INVALID_REQUEST;
    if (all == KAFKA_NONE &&
        !kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE))
        all = KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; /* KZ2 */
    else if (all == KAFKA_NONE &&
             !kafka_authorize_str(s, ACL_RESOURCE_GROUP, q->group_id, ACL_OP_READ))
        all = KAFKA_GROUP_AUTHORIZATION_FAILED;
    else if (all == KAFKA_NONE) /* group_cluster.c KGC2: the group's coordinator only */
        all = kafka_group_coordinator_check(s->server, q->group_id);
    /* KT7: a consumer's generation, member or instance (v3+) is checked against its group. */
    if (all == KAFKA_NONE &&
        (q->generation_id >= 0 || q->member_id.len > 0 || q->group_instance_id.len >= 0)) {
        bool wake = false;
        group_coord_lock(s->server->groups);
        all = group_coord_commit_check(s->server->groups, q->group_id, q->generation_id,
                                       q->member_id, q->group_instance_id, net_now_ms(), &wake);
        group_coord_unlock(s->server->groups);
        if (wake)
            net_wake(s->server->net);
        if (all == KAFKA_REBALANCE_IN_PROGRESS)
            all = KAFKA_NONE;
    }
    kafka_offsets_validate(s, q->topics, q->topics_count, all, &k->commit);
    if (!k->commit.offsets_count)
        return answer_commit(k, KAFKA_NONE);
    int rc = txn_coordinated_here(s->server)
                 ? rt_txn_commit_offsets_async(e, k->id, q->producer_id, q->producer_epoch,
                                               k->group, k->commit.offsets, k->commit.offsets_count,
                                               &k->op, commit_done, k)
                 : rt_group_commit_txn_offsets_async(e, k->group, q->producer_id, q->producer_epoch,
                                                     k->commit.offsets, k->commit.offsets_count,
                                                     &k->group_op, group_commit_done, k); /* KT11 */
    if (rc) {
        log_refusal(s, k->id, rc);
        return answer_commit(k, txn_error(s, rc));
    }
    return NET_PENDING;
}
