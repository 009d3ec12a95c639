/*
 * alter_partition.c — the AlterPartition check (alter_partition.h AP1) in Kafka's order, on an
 * image the caller holds. It never takes a lock and never commits: the caller proposes the
 * record it returns.
 */
#include "tools/kafka/cluster/alter_partition.h"

#include <stdbool.h>

#include "tools/kafka/proto/api.h"

int16_t alter_partition_check(const struct metadata_image *img, int32_t broker_id,
                              const char *topic, int32_t partition, int32_t leader_epoch,
                              int32_t partition_epoch, const int32_t *isr, unsigned isr_n,
                              uint8_t *rec, size_t cap, size_t *len)
{
    *len = 0;
    const struct mi_topic *t = metadata_image_topic(img, topic);
    if (!t || partition < 0 || partition >= t->partitions_count || !t->partitions[partition].exists)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    const struct mi_partition *p = &t->partitions[partition];
    if (leader_epoch != p->leader_epoch) /* Kafka's validateAlterPartitionData */
        return KAFKA_FENCED_LEADER_EPOCH;
    if (broker_id != p->leader)
        return KAFKA_INVALID_REQUEST; /* only the leader changes its ISR */
    if (partition_epoch != p->partition_epoch)
        return KAFKA_INVALID_UPDATE_VERSION; /* KIP-497: a change made on a stale view */
    if (isr_n == 0 || isr_n > MI_REPLICAS_MAX)
        return KAFKA_INVALID_REQUEST;
    bool self_in = false;
    for (unsigned i = 0; i < isr_n; i++) {
        bool replica = mi_partition_has(p, isr[i], false);
        const struct mi_broker *b = metadata_image_broker(img, isr[i]);
        bool added = !mi_partition_has(p, isr[i], true);
        if (!replica || (added && (!b || b->fenced)))
            return KAFKA_INVALID_REQUEST; /* Kafka 3.5+: INELIGIBLE_REPLICA */
        self_in |= isr[i] == p->leader;
    }
    if (!self_in)
        return KAFKA_INVALID_REQUEST;
    *len = mi_encode_partition(rec, cap, t->id, partition, p->replicas, p->replicas_count,
                               p->leader, p->leader_epoch, isr, isr_n);
    return *len ? KAFKA_NONE : KAFKA_INVALID_REQUEST;
}
