/*
 * handle_txn_markers.c — WriteTxnMarkers (27, v0-1) served by a cluster node: a transaction
 * coordinator on another node (txn_marker_send.c) asks this node, the leader of a partition its
 * transaction wrote, to write the COMMIT or ABORT marker there (Kafka's
 * KafkaApis.handleWriteTxnMarkersRequest; docs/format.md G.8, docs/cluster.md §7.3), or an
 * operator's `ringtail txn abort --bootstrap --topic ...` (kafka-transactions.sh abort, §7.6)
 * ends a hanging transaction in one partition. Each marker
 * goes into the engine by rt_txn_write_marker (durable; in `__consumer_offsets` the producer's
 * pending offsets follow it, MW4), then waits for the partition's ISR (replica_state.h rs_wait)
 * before it is answered. It owns the per-partition answer and never writes a record any other
 * way; it never decides a transaction (the coordinator did).
 *
 * Invariants:
 *   KTM1 Only a caller with CLUSTER_ACTION on the cluster may write markers (Kafka's rule for
 *        this inter-broker API): with --authorizer on, any other principal is answered
 *        CLUSTER_AUTHORIZATION_FAILED (31) for every partition and nothing is written. Without
 *        an authorizer every caller is allowed (authorize.h KZ1), as Kafka. The row is internal
 *        (api_table.c KA8): a single broker refuses the request as an unknown version.
 *   KTM2 A marker is written only into a partition this node is the ready leader of
 *        (replica_state.h rs_check: the image names it leader and the replica thread set the
 *        epoch, RS2); else NOT_LEADER_OR_FOLLOWER (6), which the coordinator retries: a replica
 *        this node follows never gets a marker its leader lacks (as handle_txn.c KT9).
 *   KTM3 UNKNOWN_TOPIC_OR_PARTITION (3) only when neither the image nor the engine has the
 *        partition (deleted: the coordinator counts it as written, MW3); one the engine still
 *        has but the image not is NOT_LEADER_OR_FOLLOWER (retried), so a lagging image never
 *        drops a marker.
 *   KTM4 NONE is answered only once the marker is durable here and the partition's high
 *        watermark passed the log end read after the write (rs_wait with need -1, RS7) with an
 *        ISR of at least min.insync.replicas — Kafka appends markers with acks=all — so a
 *        marker acknowledged survives this leader's loss; the ISR's answer otherwise
 *        (NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT after KTM_ISR_WAIT_MS,
 *        NOT_LEADER_OR_FOLLOWER), each retried by the coordinator.
 *   KTM5 A repeated marker (the same producer id, epoch and result) is written again as the
 *        harmless no-op rt_txn_write_marker makes it and answered NONE; a marker older than the
 *        partition's producer epoch is answered INVALID_PRODUCER_EPOCH (47), which the sender
 *        counts as written (MW3) — the partition already holds a newer epoch's outcome.
 *   KTM6 The coordinator epoch of a marker is carried on the wire but not checked: the engine
 *        writes coordinator epoch 0 in every marker (format.md G.8) and has no per-producer
 *        coordinator epoch to compare with. Kafka's check (a marker whose coordinator epoch is
 *        below the partition's last is TRANSACTION_COORDINATOR_FENCED) guards against a deposed
 *        coordinator's markers; here a coordinator sends a marker only for a decision
 *        replicated to the ISR of `__transaction_state` (MW2), which a new coordinator
 *        completes the same way (G.7 CM3), and a zombie's older producer epoch is refused as
 *        KTM5 says.
 *   KTM7 (txn_marker_send.c) The sender waits at most KTM_SEND_TIMEOUT_MS for an answer, over one
 *        connection kept per peer node, used by one engine thread at a time.
 *   KTM8 (txn_marker_send.c) The sender returns 0 only for NONE from the node for exactly that
 *        producer id, topic and partition; an answer that does not name them is a failure.
 *   KTM9 (txn_marker_send.c) The sender sends only to a node the image registers unfenced.
 *
 * Runs on the server's admin thread (api_table.c KA7: rt_txn_write_marker waits for the disk),
 * never on a loop thread; the ISR waits complete on the replica thread (RS5), the last of them
 * encodes the answer and hands it back (net_req_complete).
 */
#include "tools/kafka/handlers/handle_txn_markers.h"

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/txn_verify.h"

#include <stdatomic.h>
#include <string.h>

/* One request in flight (in the slot's response arena: valid until the answer is sent). */
struct markers_call {
    struct kafka_slot *s;
    atomic_int pending; /* ISR waits not answered yet, plus one while the handler runs */
    struct kmsg_txn_marker_result *results;
    int32_t results_count;
};

/* One partition's ISR wait (KTM4). */
struct marker_wait {
    struct markers_call *call;
    struct kmsg_partition_error *pe;
};

static enum net_verdict markers_answer(struct markers_call *k)
{
    struct kafka_slot *s = k->s;
    for (int32_t m = 0; m < k->results_count; m++)
        for (int32_t t = 0; t < k->results[m].topics_count; t++)
            for (int32_t i = 0; i < k->results[m].topics[t].partitions_count; i++)
                kafka_count_error(s, k->results[m].topics[t].partitions[i].error_code);
    struct kmsg_write_txn_markers_response r = {.markers = k->results,
                                                .markers_count = k->results_count};
    kafka_response_begin(s);
    kmsg_write_txn_markers_response_encode(&s->w, s->header.api_version, &r);
    return kafka_response_end(s);
}

/* On the replica thread (RS5): one partition's ISR outcome; the last one answers. */
static void isr_done(void *ctx, int16_t error)
{
    struct marker_wait *w = ctx;
    struct markers_call *k = w->call;
    w->pe->error_code = error; /* KTM4: NONE, or the ISR's refusal (retried) */
    if (atomic_fetch_sub_explicit(&k->pending, 1, memory_order_acq_rel) == 1) {
        if (markers_answer(k) != NET_DONE)
            k->s->req->close_reason = "the WriteTxnMarkers answer could not be encoded";
        net_req_complete(k->s->req);
    }
}

/* KTM2, KTM3, KTM5: writes one marker into (name, p); NONE when it is durable here (the ISR
 * wait follows), else the partition's answer. *min_isr: the topic's min.insync.replicas. */
static int16_t marker_write(struct kafka_slot *s, struct replica_state *rs,
                            const struct kmsg_txn_marker *m, const char *name, int32_t p,
                            unsigned *min_isr)
{
    rt_engine *e = s->server->engine;
    if (p < 0)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    if (!rs)
        return KAFKA_NOT_LEADER_OR_FOLLOWER; /* the replica side is not running yet */
    int16_t code = rs_check(rs, name, p, -1, NULL, min_isr);
    if (code == KAFKA_UNKNOWN_TOPIC_OR_PARTITION) { /* KTM3 */
        uint32_t parts = 0;
        if (rt_topic_describe(e, name, &parts) == 0 && (uint32_t)p < parts)
            return KAFKA_NOT_LEADER_OR_FOLLOWER;
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (code != KAFKA_NONE)
        return code; /* KTM2 */
    int rc = rt_txn_write_marker(e, name, (uint32_t)p, m->producer_id, m->producer_epoch,
                                 m->transaction_result);
    switch (rc) {
    case 0: /* txn_verify.c KTV6: the transaction ended in that partition */
        kafka_txn_verify_marker(m->producer_id, name, (uint32_t)p);
        return KAFKA_NONE; /* KTM5: a repeated marker too */
    case RT_E_INVALID_PRODUCER_EPOCH:
        return KAFKA_INVALID_PRODUCER_EPOCH; /* KTM5: stale */
    case RT_E_UNKNOWN_TOPIC_OR_PARTITION:
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    case RT_E_INVALID_ARGUMENT:
        return KAFKA_INVALID_REQUEST; /* a negative producer id or epoch */
    case RT_E_NOT_COORDINATOR:
        return KAFKA_NOT_LEADER_OR_FOLLOWER; /* the engine follows it */
    default:
        kafka_log("WriteTxnMarkers: the %s marker of producer id %lld epoch %d into %s-%d: %s: %s",
                  m->transaction_result ? "commit" : "abort", (long long)m->producer_id,
                  (int)m->producer_epoch, name, (int)p, rt_strerror(rc), rt_error_detail());
        return kafka_error_from_rt(rc);
    }
}

enum net_verdict kafka_handle_write_txn_markers(struct kafka_slot *s)
{
    const struct kmsg_write_txn_markers_request *q = &s->msg.write_txn_markers;
    struct metadata_node *mn = kafka_cluster(s->server);
    struct replica_state *rs = mn ? metadata_node_replicas(mn) : NULL;
    int32_t nm = q->markers_count > 0 ? q->markers_count : 0;
    size_t topics = 0, parts = 0;
    for (int32_t m = 0; m < nm; m++) {
        topics += q->markers[m].topics_count > 0 ? (size_t)q->markers[m].topics_count : 0;
        for (int32_t t = 0; t < q->markers[m].topics_count; t++)
            parts += q->markers[m].topics[t].partitions_count > 0
                         ? (size_t)q->markers[m].topics[t].partitions_count
                         : 0;
    }
    size_t need = sizeof(struct markers_call) + (size_t)nm * sizeof(struct kmsg_txn_marker_result) +
                  topics * sizeof(struct kmsg_topic_errors) +
                  parts * (sizeof(struct kmsg_partition_error) + sizeof(struct marker_wait)) +
                  (size_t)(nm + topics + parts + 4) * 16;
    if (kafka_resp_reserve(s, need) != 0) {
        kafka_log("WriteTxnMarkers: out of memory; closing");
        return NET_CLOSE;
    }
    struct markers_call *k = kafka_alloc(s, 1, sizeof(*k));
    struct kmsg_txn_marker_result *results =
        nm ? kafka_alloc(s, (size_t)nm, sizeof(*results)) : NULL;
    if (!k || (nm && !results))
        return NET_CLOSE;
    k->s = s;
    k->results = results;
    k->results_count = nm;
    atomic_init(&k->pending, 1);
    bool allowed = kafka_authorize_cluster(s, ACL_OP_CLUSTER_ACTION); /* KTM1 */
    char name[RT_TOPIC_NAME_MAX + 1];
    for (int32_t m = 0; m < nm; m++) {
        const struct kmsg_txn_marker *qm = &q->markers[m];
        int32_t nt = qm->topics_count > 0 ? qm->topics_count : 0;
        struct kmsg_topic_errors *rt = nt ? kafka_alloc(s, (size_t)nt, sizeof(*rt)) : NULL;
        if (nt && !rt)
            return NET_CLOSE;
        results[m] = (struct kmsg_txn_marker_result){
            .producer_id = qm->producer_id, .topics = rt, .topics_count = nt};
        for (int32_t t = 0; t < nt; t++) {
            int32_t np = qm->topics[t].partitions_count > 0 ? qm->topics[t].partitions_count : 0;
            struct kmsg_partition_error *pe = np ? kafka_alloc(s, (size_t)np, sizeof(*pe)) : NULL;
            struct marker_wait *wt = np ? kafka_alloc(s, (size_t)np, sizeof(*wt)) : NULL;
            if (np && (!pe || !wt))
                return NET_CLOSE;
            rt[t] = (struct kmsg_topic_errors){
                .name = qm->topics[t].name, .partitions = pe, .partitions_count = np};
            bool named = kafka_topic_name(qm->topics[t].name, name);
            for (int32_t i = 0; i < np; i++) {
                int32_t p = qm->topics[t].partitions[i];
                pe[i] = (struct kmsg_partition_error){.partition_index = p};
                unsigned min_isr = 1;
                if (!allowed)
                    pe[i].error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
                else if (!named)
                    pe[i].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                else
                    pe[i].error_code = marker_write(s, rs, qm, name, p, &min_isr);
                if (pe[i].error_code != KAFKA_NONE)
                    continue;
                wt[i] = (struct marker_wait){.call = k, .pe = &pe[i]};
                atomic_fetch_add_explicit(&k->pending, 1, memory_order_acq_rel);
                if (rs_wait(rs, name, p, -1, rs_now_ms() + KTM_ISR_WAIT_MS, min_isr, isr_done,
                            &wt[i]) != 0) { /* KTM4: stopping, or out of memory */
                    atomic_fetch_sub_explicit(&k->pending, 1, memory_order_acq_rel);
                    pe[i].error_code = KAFKA_NOT_LEADER_OR_FOLLOWER;
                }
            }
        }
    }
    if (atomic_fetch_sub_explicit(&k->pending, 1, memory_order_acq_rel) == 1)
        return markers_answer(k); /* nothing waits: the admin thread hands it back */
    return NET_PENDING;           /* the last isr_done answers */
}
