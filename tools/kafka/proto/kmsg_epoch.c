/*
 * kmsg_epoch.c — OffsetForLeaderEpoch (23, v0-4, flexible from v4) as data (kdesc.h): the
 * question of Kafka's leader-epoch protocol (KIP-101, KIP-279; consumers' KIP-320), asked by a
 * follower of its leader before it fetches (tools/kafka/cluster/replica_fetcher.c) and answered
 * by handlers/handle_epoch.c. It owns the description only and must never decide an answer.
 * Fields as Kafka 3.x's OffsetForLeaderEpochRequest.json / OffsetForLeaderEpochResponse.json:
 *
 *   request: replica_id i32 (v3+, default -2), topics [topic STRING, partitions [partition i32,
 *     current_leader_epoch i32 (v2+, default -1), leader_epoch i32]]
 *   response: throttle_time_ms i32 (v2+), topics [topic STRING, partitions [error_code i16,
 *     partition i32, leader_epoch i32 (v1+, default -1), end_offset i64 (default -1)]]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

#define S struct kmsg_epoch_partition
static const struct kd_field epoch_partition_f[] = {
    KF(S, partition, KD_I32, 0, KD_NEVER),
    KFD(S, current_leader_epoch, KD_I32, 2, KD_NEVER, -1),
    KF(S, leader_epoch, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct epoch_partition_d =
    KD_STRUCT(struct kmsg_epoch_partition, epoch_partition_f);

#define S struct kmsg_epoch_topic
static const struct kd_field epoch_topic_f[] = {
    KF(S, topic, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, epoch_partition_d),
};
#undef S
static const struct kd_struct epoch_topic_d = KD_STRUCT(struct kmsg_epoch_topic, epoch_topic_f);

#define S struct kmsg_offset_for_leader_epoch_request
static const struct kd_field epoch_request_f[] = {
    KFD(S, replica_id, KD_I32, 3, KD_NEVER, -2),
    KA(S, topics, 0, KD_NEVER, epoch_topic_d),
};
#undef S
static const struct kd_struct epoch_request_d =
    KD_STRUCT(struct kmsg_offset_for_leader_epoch_request, epoch_request_f);

#define S struct kmsg_epoch_end_offset
static const struct kd_field epoch_end_offset_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, partition, KD_I32, 0, KD_NEVER),
    KFD(S, leader_epoch, KD_I32, 1, KD_NEVER, -1),
    KFD(S, end_offset, KD_I64, 0, KD_NEVER, -1),
};
#undef S
static const struct kd_struct epoch_end_offset_d =
    KD_STRUCT(struct kmsg_epoch_end_offset, epoch_end_offset_f);

#define S struct kmsg_epoch_topic_result
static const struct kd_field epoch_topic_result_f[] = {
    KF(S, topic, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, epoch_end_offset_d),
};
#undef S
static const struct kd_struct epoch_topic_result_d =
    KD_STRUCT(struct kmsg_epoch_topic_result, epoch_topic_result_f);

#define S struct kmsg_offset_for_leader_epoch_response
static const struct kd_field epoch_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 2, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, epoch_topic_result_d),
};
#undef S
static const struct kd_struct epoch_response_d =
    KD_STRUCT(struct kmsg_offset_for_leader_epoch_response, epoch_response_f);

KD_MESSAGE(kd_offset_for_leader_epoch_request, "OffsetForLeaderEpochRequest",
           KAFKA_OFFSET_FOR_LEADER_EPOCH, 0, 4, 4, &epoch_request_d, NULL);
KD_MESSAGE(kd_offset_for_leader_epoch_response, "OffsetForLeaderEpochResponse",
           KAFKA_OFFSET_FOR_LEADER_EPOCH, 0, 4, 4, &epoch_response_d, NULL);

KMSG_CODEC(offset_for_leader_epoch, offset_for_leader_epoch_request,
           offset_for_leader_epoch_response)
