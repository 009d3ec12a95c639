/*
 * kmsg_cluster.c — the broker-to-controller messages of KRaft as data (kdesc.h):
 * BrokerRegistration (62, v0) and BrokerHeartbeat (63, v0), both flexible from v0. A cluster
 * node (tools/kafka/cluster/metadata_node.c) sends them to the active controller's Kafka
 * listener; the controller answers them (handlers/handle_cluster.c). They are never advertised
 * to clients (api_table.c KA8). It owns their descriptions and must never decide an answer.
 * Fields as Kafka 3.x's BrokerRegistrationRequest.json / BrokerHeartbeatRequest.json at v0:
 *
 *   BrokerRegistration request: broker_id i32, cluster_id STRING, incarnation_id UUID,
 *     listeners [name STRING, host STRING, port u16 (as i16 bits), security_protocol i16],
 *     features [name STRING, min_supported_version i16, max_supported_version i16],
 *     rack NSTRING
 *   BrokerRegistration response: throttle_time_ms i32, error_code i16, broker_epoch i64 (-1)
 *   BrokerHeartbeat request: broker_id i32, broker_epoch i64 (-1), current_metadata_offset i64,
 *     want_fence bool, want_shut_down bool
 *   BrokerHeartbeat response: throttle_time_ms i32, error_code i16, is_caught_up bool,
 *     is_fenced bool (default true), should_shut_down bool
 *
 * and AlterPartition (56, v0, flexible), a partition leader's ISR change (KIP-497), as Kafka
 * 3.x's AlterPartitionRequest.json at v0:
 *   request: broker_id i32, broker_epoch i64 (-1), topics [topic_name STRING, partitions
 *     [partition_index i32, leader_epoch i32, new_isr [i32], partition_epoch i32]]
 *   response: throttle_time_ms i32, error_code i16, topics [topic_name STRING, partitions
 *     [partition_index i32, error_code i16, leader_id i32, leader_epoch i32, isr [i32],
 *     partition_epoch i32]]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- BrokerRegistration ---- */

#define S struct kmsg_broker_listener
static const struct kd_field broker_listener_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, host, KD_STR, 0, KD_NEVER),
    KF(S, port, KD_I16, 0, KD_NEVER),
    KF(S, security_protocol, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct broker_listener_d =
    KD_STRUCT(struct kmsg_broker_listener, broker_listener_f);

#define S struct kmsg_broker_feature
static const struct kd_field broker_feature_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, min_supported_version, KD_I16, 0, KD_NEVER),
    KF(S, max_supported_version, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct broker_feature_d =
    KD_STRUCT(struct kmsg_broker_feature, broker_feature_f);

#define S struct kmsg_broker_registration_request
static const struct kd_field broker_registration_request_f[] = {
    KF(S, broker_id, KD_I32, 0, KD_NEVER),
    KF(S, cluster_id, KD_STR, 0, KD_NEVER),
    KF(S, incarnation_id, KD_UUID, 0, KD_NEVER),
    KA(S, listeners, 0, KD_NEVER, broker_listener_d),
    KA(S, features, 0, KD_NEVER, broker_feature_d),
    KFN(S, rack, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct broker_registration_request_d =
    KD_STRUCT(struct kmsg_broker_registration_request, broker_registration_request_f);

#define S struct kmsg_broker_registration_response
static const struct kd_field broker_registration_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFD(S, broker_epoch, KD_I64, 0, KD_NEVER, -1),
};
#undef S
static const struct kd_struct broker_registration_response_d =
    KD_STRUCT(struct kmsg_broker_registration_response, broker_registration_response_f);

KD_MESSAGE(kd_broker_registration_request, "BrokerRegistrationRequest", KAFKA_BROKER_REGISTRATION,
           0, 0, 0, &broker_registration_request_d, NULL);
KD_MESSAGE(kd_broker_registration_response, "BrokerRegistrationResponse", KAFKA_BROKER_REGISTRATION,
           0, 0, 0, &broker_registration_response_d, NULL);

/* ---- BrokerHeartbeat ---- */

#define S struct kmsg_broker_heartbeat_request
static const struct kd_field broker_heartbeat_request_f[] = {
    KF(S, broker_id, KD_I32, 0, KD_NEVER),
    KFD(S, broker_epoch, KD_I64, 0, KD_NEVER, -1),
    KF(S, current_metadata_offset, KD_I64, 0, KD_NEVER),
    KF(S, want_fence, KD_BOOL, 0, KD_NEVER),
    KF(S, want_shut_down, KD_BOOL, 0, KD_NEVER),
};
#undef S
static const struct kd_struct broker_heartbeat_request_d =
    KD_STRUCT(struct kmsg_broker_heartbeat_request, broker_heartbeat_request_f);

#define S struct kmsg_broker_heartbeat_response
static const struct kd_field broker_heartbeat_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),  KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, is_caught_up, KD_BOOL, 0, KD_NEVER),     KFD(S, is_fenced, KD_BOOL, 0, KD_NEVER, 1),
    KF(S, should_shut_down, KD_BOOL, 0, KD_NEVER),
};
#undef S
static const struct kd_struct broker_heartbeat_response_d =
    KD_STRUCT(struct kmsg_broker_heartbeat_response, broker_heartbeat_response_f);

KD_MESSAGE(kd_broker_heartbeat_request, "BrokerHeartbeatRequest", KAFKA_BROKER_HEARTBEAT, 0, 0, 0,
           &broker_heartbeat_request_d, NULL);
KD_MESSAGE(kd_broker_heartbeat_response, "BrokerHeartbeatResponse", KAFKA_BROKER_HEARTBEAT, 0, 0, 0,
           &broker_heartbeat_response_d, NULL);

/* ---- AllocateProducerIds (67, v0, flexible from v0): KIP-730, a node asks the controller for
 * its next producer-id block; never advertised either (KA8). Fields as Kafka 3.x's
 * AllocateProducerIdsRequest.json at v0:
 *
 *   request: broker_id i32, broker_epoch i64 (-1)
 *   response: throttle_time_ms i32, error_code i16, producer_id_start i64, producer_id_len i32
 */

#define S struct kmsg_allocate_producer_ids_request
static const struct kd_field allocate_producer_ids_request_f[] = {
    KF(S, broker_id, KD_I32, 0, KD_NEVER),
    KFD(S, broker_epoch, KD_I64, 0, KD_NEVER, -1),
};
#undef S
static const struct kd_struct allocate_producer_ids_request_d =
    KD_STRUCT(struct kmsg_allocate_producer_ids_request, allocate_producer_ids_request_f);

#define S struct kmsg_allocate_producer_ids_response
static const struct kd_field allocate_producer_ids_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, producer_id_start, KD_I64, 0, KD_NEVER),
    KF(S, producer_id_len, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct allocate_producer_ids_response_d =
    KD_STRUCT(struct kmsg_allocate_producer_ids_response, allocate_producer_ids_response_f);

KD_MESSAGE(kd_allocate_producer_ids_request, "AllocateProducerIdsRequest",
           KAFKA_ALLOCATE_PRODUCER_IDS, 0, 0, 0, &allocate_producer_ids_request_d, NULL);
KD_MESSAGE(kd_allocate_producer_ids_response, "AllocateProducerIdsResponse",
           KAFKA_ALLOCATE_PRODUCER_IDS, 0, 0, 0, &allocate_producer_ids_response_d, NULL);

KMSG_CODEC(allocate_producer_ids, allocate_producer_ids_request, allocate_producer_ids_response)
KMSG_CODEC(broker_registration, broker_registration_request, broker_registration_response)
KMSG_CODEC(broker_heartbeat, broker_heartbeat_request, broker_heartbeat_response)

/* ---- AlterPartition ---- */

#define S struct kmsg_alter_partition_partition
static const struct kd_field alter_partition_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, leader_epoch, KD_I32, 0, KD_NEVER),
    KP(S, new_isr, KD_I32, 0, KD_NEVER),
    KF(S, partition_epoch, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct alter_partition_partition_d =
    KD_STRUCT(struct kmsg_alter_partition_partition, alter_partition_partition_f);

#define S struct kmsg_alter_partition_topic
static const struct kd_field alter_partition_topic_f[] = {
    KF(S, topic_name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, alter_partition_partition_d),
};
#undef S
static const struct kd_struct alter_partition_topic_d =
    KD_STRUCT(struct kmsg_alter_partition_topic, alter_partition_topic_f);

#define S struct kmsg_alter_partition_request
static const struct kd_field alter_partition_request_f[] = {
    KF(S, broker_id, KD_I32, 0, KD_NEVER),
    KFD(S, broker_epoch, KD_I64, 0, KD_NEVER, -1),
    KA(S, topics, 0, KD_NEVER, alter_partition_topic_d),
};
#undef S
static const struct kd_struct alter_partition_request_d =
    KD_STRUCT(struct kmsg_alter_partition_request, alter_partition_request_f);

#define S struct kmsg_alter_partition_partition_response
static const struct kd_field alter_partition_partition_response_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, leader_id, KD_I32, 0, KD_NEVER),
    KF(S, leader_epoch, KD_I32, 0, KD_NEVER),
    KP(S, isr, KD_I32, 0, KD_NEVER),
    KF(S, partition_epoch, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct alter_partition_partition_response_d =
    KD_STRUCT(struct kmsg_alter_partition_partition_response, alter_partition_partition_response_f);

#define S struct kmsg_alter_partition_topic_response
static const struct kd_field alter_partition_topic_response_f[] = {
    KF(S, topic_name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, alter_partition_partition_response_d),
};
#undef S
static const struct kd_struct alter_partition_topic_response_d =
    KD_STRUCT(struct kmsg_alter_partition_topic_response, alter_partition_topic_response_f);

#define S struct kmsg_alter_partition_response
static const struct kd_field alter_partition_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, alter_partition_topic_response_d),
};
#undef S
static const struct kd_struct alter_partition_response_d =
    KD_STRUCT(struct kmsg_alter_partition_response, alter_partition_response_f);

KD_MESSAGE(kd_alter_partition_request, "AlterPartitionRequest", KAFKA_ALTER_PARTITION, 0, 0, 0,
           &alter_partition_request_d, NULL);
KD_MESSAGE(kd_alter_partition_response, "AlterPartitionResponse", KAFKA_ALTER_PARTITION, 0, 0, 0,
           &alter_partition_response_d, NULL);

KMSG_CODEC(alter_partition, alter_partition_request, alter_partition_response)
