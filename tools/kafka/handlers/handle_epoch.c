/*
 * handle_epoch.c — OffsetForLeaderEpoch (23; KIP-101, KIP-279, KIP-320): where a leader epoch
 * ends in this node's log, answered from the partition's leader-epoch checkpoint
 * (rt_partition_end_offset_for_epoch). A follower asks its new leader before it fetches and
 * truncates its divergent tail to the answer (tools/kafka/cluster/replica_fetcher.c). It reads
 * the engine and the metadata image and never changes either. The row is internal (api_table.c
 * KA8): never advertised, served only by a cluster node.
 *
 * Invariants:
 *   KE1  In a cluster, a partition this node does not lead in the image is answered
 *        NOT_LEADER_OR_FOLLOWER (6) (replica_id -2, Kafka's debugging id, excepted); a
 *        current_leader_epoch other than -1 below the image's epoch is FENCED_LEADER_EPOCH (74),
 *        above it UNKNOWN_LEADER_EPOCH (75) — as Kafka's Partition.lastOffsetForLeaderEpoch —
 *        and a partition the image does not hold is UNKNOWN_TOPIC_OR_PARTITION. Only an answered
 *        partition carries an epoch and an end offset; every error carries (-1, -1).
 */
#include <string.h>

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

#define DEBUGGING_REPLICA_ID (-2)

struct epoch_lookup {
    const char *topic;
    int32_t partition;
    bool found;
    int32_t leader, epoch;
};

static void lookup(void *ctx, const struct metadata_image *img)
{
    struct epoch_lookup *l = ctx;
    const struct mi_topic *t = metadata_image_topic(img, l->topic);
    if (!t || l->partition < 0 || l->partition >= t->partitions_count ||
        !t->partitions[l->partition].exists)
        return;
    l->found = true;
    l->leader = t->partitions[l->partition].leader;
    l->epoch = t->partitions[l->partition].leader_epoch;
}

/* KE1: the error of the image's view of (topic, partition), NONE when this node may answer. */
static int16_t cluster_check(struct metadata_node *mn, int32_t self, const char *topic,
                             int32_t partition, int32_t current_epoch, int32_t replica_id)
{
    struct epoch_lookup l = {.topic = topic, .partition = partition};
    metadata_node_read(mn, lookup, &l);
    if (!l.found)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    if (current_epoch >= 0 && current_epoch < l.epoch)
        return KAFKA_FENCED_LEADER_EPOCH;
    if (current_epoch >= 0 && current_epoch > l.epoch)
        return KAFKA_UNKNOWN_LEADER_EPOCH;
    if (l.leader != self && replica_id != DEBUGGING_REPLICA_ID)
        return KAFKA_NOT_LEADER_OR_FOLLOWER;
    return KAFKA_NONE;
}

enum net_verdict kafka_handle_offset_for_leader_epoch(struct kafka_slot *s)
{
    const struct kmsg_offset_for_leader_epoch_request *q = &s->msg.offset_for_leader_epoch;
    rt_engine *e = s->server->engine;
    struct metadata_node *mn = kafka_cluster(s->server);
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    size_t parts = 0;
    for (int32_t t = 0; t < nt; t++)
        parts += q->topics[t].partitions_count > 0 ? (size_t)q->topics[t].partitions_count : 0;
    size_t need = (size_t)nt * (sizeof(struct kmsg_epoch_topic_result) + 8) +
                  parts * sizeof(struct kmsg_epoch_end_offset) + 64;
    if (kafka_resp_reserve(s, need) != 0) {
        kafka_log("OffsetForLeaderEpoch: out of memory; closing");
        return NET_CLOSE;
    }
    struct kmsg_epoch_topic_result *topics =
        nt ? kafka_alloc(s, (size_t)nt, sizeof(*topics)) : NULL;
    if (nt && !topics)
        return NET_CLOSE;
    char name[RT_TOPIC_NAME_MAX + 1];
    for (int32_t t = 0; t < nt; t++) {
        int32_t np = q->topics[t].partitions_count > 0 ? q->topics[t].partitions_count : 0;
        struct kmsg_epoch_end_offset *pp = np ? kafka_alloc(s, (size_t)np, sizeof(*pp)) : NULL;
        if (np && !pp)
            return NET_CLOSE;
        topics[t] = (struct kmsg_epoch_topic_result){
            .topic = q->topics[t].topic, .partitions = pp, .partitions_count = np};
        bool named = kafka_topic_name(q->topics[t].topic, name);
        bool allowed =
            kafka_authorize_str(s, ACL_RESOURCE_TOPIC, q->topics[t].topic, ACL_OP_DESCRIBE);
        for (int32_t i = 0; i < np; i++) {
            const struct kmsg_epoch_partition *qp = &q->topics[t].partitions[i];
            struct kmsg_epoch_end_offset *r = &pp[i];
            *r = (struct kmsg_epoch_end_offset){
                .partition = qp->partition, .leader_epoch = -1, .end_offset = -1};
            if (!allowed)
                r->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
            else if (!named || qp->partition < 0)
                r->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (mn)
                r->error_code = cluster_check(mn, s->server->opts.broker_id, name, qp->partition,
                                              qp->current_leader_epoch, q->replica_id);
            if (r->error_code == KAFKA_NONE) {
                int64_t end = -1;
                int32_t found = -1;
                int rc = rt_partition_end_offset_for_epoch(e, name, (uint32_t)qp->partition,
                                                           qp->leader_epoch, &end, &found);
                if (rc) {
                    r->error_code = kafka_error_from_rt(rc);
                } else {
                    r->leader_epoch = found;
                    r->end_offset = end;
                }
            }
            kafka_count_error(s, r->error_code);
        }
    }
    struct kmsg_offset_for_leader_epoch_response m = {.topics = topics, .topics_count = nt};
    kafka_response_begin(s);
    kmsg_offset_for_leader_epoch_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
