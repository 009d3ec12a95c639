/*
 * alter_partition.h — the active controller's check of an AlterPartition (KIP-497) against the
 * metadata image, and the PARTITION record it commits on success. Pure: it reads the image it
 * is given, never a lock, an engine or a socket, so metadata_node.c (which calls it under its
 * lock on the controller) and the unit tests use it alike.
 *
 * Invariants:
 *   AP1  AlterPartition (KIP-497): checked against the image in Kafka's order — unknown
 *        partition UNKNOWN_TOPIC_OR_PARTITION, leader epoch not the image's FENCED_LEADER_EPOCH,
 *        a sender that is not the leader INVALID_REQUEST, a partition epoch that is not the
 *        image's INVALID_UPDATE_VERSION (95), an ISR without the leader, with a non-replica or
 *        adding a fenced or unregistered broker INVALID_REQUEST; else the PARTITION record with
 *        the new ISR (same replicas, leader and leader epoch) whose application raises the
 *        partition epoch by one (MI8).
 */
#ifndef RT_KAFKA_CLUSTER_ALTER_PARTITION_H
#define RT_KAFKA_CLUSTER_ALTER_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/cluster/metadata_image.h"

/* AP1 on an image: a Kafka error; on NONE the PARTITION record to commit in rec (cap bytes, at
 * least 64 + 8 * MI_REPLICAS_MAX) and its length in *len. */
int16_t alter_partition_check(const struct metadata_image *img, int32_t broker_id,
                              const char *topic, int32_t partition, int32_t leader_epoch,
                              int32_t partition_epoch, const int32_t *isr, unsigned isr_n,
                              uint8_t *rec, size_t cap, size_t *len);

#endif
