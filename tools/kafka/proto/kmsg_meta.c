/*
 * kmsg_meta.c — cluster and producer-id messages as data (kdesc.h): Metadata (v0-12, flexible
 * from v9; Kafka's MetadataRequest/Response JSON),
 * FindCoordinator (v0-4), InitProducerId (v0-4), requests and responses. It owns their
 * descriptions and must never decide what a broker answers
 * (the server fills the response structs).
 *
 *   Metadata request: topics ARRAY [topic_id UUID (v10+), name STRING (nullable v10+)] (v0:
 *     non-null, empty = all; v1+: null = all, empty = none), allow_auto_topic_creation BOOL (v4+),
 *     include_cluster_authorized_operations BOOL (v8-10), include_topic_authorized_operations
 *     BOOL (v8+)
 *   Metadata response: throttle_time_ms i32 (v3+), brokers [node_id i32, host STRING, port i32,
 *     rack NSTRING (v1+)], cluster_id NSTRING (v2+), controller_id i32 (v1+),
 *     topics [error_code i16, name STRING (nullable v12+), topic_id UUID (v10+),
 *       is_internal BOOL (v1+), partitions [error_code i16,
 *       partition_index i32, leader_id i32, leader_epoch i32 (v7+), replica_nodes [i32],
 *       isr_nodes [i32], offline_replicas [i32] (v5+)], topic_authorized_operations i32 (v8+)],
 *     cluster_authorized_operations i32 (v8-10). The handler fills neither epochs nor
 *     authorized operations: their 0 goes out as Kafka's defaults -1 and INT32_MIN
 *     (KDF_ZERO_IS_DEFAULT), "unknown epoch" and "not asked for", as a broker without ACLs
 *     answers.
 *
 *   FindCoordinator request: key STRING (v0-3), key_type i8 (v1+), coordinator_keys [STRING]
 *     (v4+, KIP-699); v3+ flexible (+TAGGED_FIELDS)
 *   FindCoordinator response: throttle_time_ms i32 (v1+), error_code i16 (v0-3),
 *     error_message NSTRING (v1-3), node_id i32 (v0-3), host STRING (v0-3), port i32 (v0-3),
 *     coordinators (v4+) [key STRING, node_id i32, host STRING, port i32, error_code i16,
 *     error_message NSTRING]
 *
 *   InitProducerId request: transactional_id NSTRING, transaction_timeout_ms i32,
 *     producer_id i64 (v3+), producer_epoch i16 (v3+); v2+ flexible
 *   InitProducerId response: throttle_time_ms i32, error_code i16, producer_id i64,
 *     producer_epoch i16
 *
 * Invariants:
 *   KMD1  Metadata v0's empty topic array and v1+'s null array both decode as topics_count -1
 *        ("all topics"); v1+'s empty array decodes as 0 ("none").
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- Metadata ---- */

#define S struct kmsg_metadata_request_topic
static const struct kd_field metadata_request_topic_f[] = {
    KF(S, topic_id, KD_UUID, 10, KD_NEVER),
    KD_X(S, name, KD_STR, 0, 0, 0, KD_NEVER, 10, -1, 0, 0, NULL, 0),
};
#undef S
static const struct kd_struct metadata_request_topic_d =
    KD_STRUCT(struct kmsg_metadata_request_topic, metadata_request_topic_f);

#define S struct kmsg_metadata_request
static const struct kd_field metadata_request_f[] = {
    KAN(S, topics, 0, KD_NEVER, 1, metadata_request_topic_d),
    KFD(S, allow_auto_topic_creation, KD_BOOL, 4, KD_NEVER, 1),
    KF(S, include_cluster_authorized_operations, KD_BOOL, 8, 10),
    KF(S, include_topic_authorized_operations, KD_BOOL, 8, KD_NEVER),
};
#undef S
static const struct kd_struct metadata_request_d =
    KD_STRUCT(struct kmsg_metadata_request, metadata_request_f);

/* KMD1: v0 has no null array; its empty array means "all topics". (Encoding -1 at v0 writes
 * the empty array, KDE4.) */
static void metadata_request_after(void *msg, int16_t version)
{
    struct kmsg_metadata_request *m = msg;
    if (version == 0 && m->topics_count == 0)
        m->topics_count = -1;
}

#define S struct kmsg_metadata_broker
static const struct kd_field metadata_broker_f[] = {
    KF(S, node_id, KD_I32, 0, KD_NEVER),
    KF(S, host, KD_STR, 0, KD_NEVER),
    KF(S, port, KD_I32, 0, KD_NEVER),
    KFN(S, rack, KD_STR, 1, KD_NEVER, 1),
};
#undef S
static const struct kd_struct metadata_broker_d =
    KD_STRUCT(struct kmsg_metadata_broker, metadata_broker_f);

#define S struct kmsg_metadata_partition
static const struct kd_field metadata_partition_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),       KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, leader_id, KD_I32, 0, KD_NEVER),        KFD(S, leader_epoch, KD_I32, 7, KD_NEVER, -1),
    KP(S, replica_nodes, KD_I32, 0, KD_NEVER),    KP(S, isr_nodes, KD_I32, 0, KD_NEVER),
    KP(S, offline_replicas, KD_I32, 5, KD_NEVER),
};
#undef S
static const struct kd_struct metadata_partition_d =
    KD_STRUCT(struct kmsg_metadata_partition, metadata_partition_f);

#define S struct kmsg_metadata_topic
static const struct kd_field metadata_topic_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KD_X(S, name, KD_STR, 0, 0, 0, KD_NEVER, 12, -1, 0, 0, NULL, 0),
    KF(S, topic_id, KD_UUID, 10, KD_NEVER),
    KF(S, is_internal, KD_BOOL, 1, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, metadata_partition_d),
    KFZ(S, topic_authorized_operations, KD_I32, 8, KD_NEVER, INT32_MIN),
};
#undef S
static const struct kd_struct metadata_topic_d =
    KD_STRUCT(struct kmsg_metadata_topic, metadata_topic_f);

#define S struct kmsg_metadata_response
static const struct kd_field metadata_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 3, KD_NEVER),
    KA(S, brokers, 0, KD_NEVER, metadata_broker_d),
    KFN(S, cluster_id, KD_STR, 2, KD_NEVER, 2),
    KFD(S, controller_id, KD_I32, 1, KD_NEVER, -1),
    KA(S, topics, 0, KD_NEVER, metadata_topic_d),
    KFZ(S, cluster_authorized_operations, KD_I32, 8, 10, INT32_MIN),
};
#undef S
static const struct kd_struct metadata_response_d =
    KD_STRUCT(struct kmsg_metadata_response, metadata_response_f);

KD_MESSAGE(kd_metadata_request, "MetadataRequest", KAFKA_METADATA, 0, 12, 9, &metadata_request_d,
           metadata_request_after);
KD_MESSAGE(kd_metadata_response, "MetadataResponse", KAFKA_METADATA, 0, 12, 9, &metadata_response_d,
           NULL);

/* ---- FindCoordinator ---- */

#define S struct kmsg_find_coordinator_request
static const struct kd_field find_coordinator_request_f[] = {
    KF(S, key, KD_STR, 0, 3),
    KF(S, key_type, KD_I8, 1, KD_NEVER),
    KP(S, coordinator_keys, KD_STR, 4, KD_NEVER),
};
#undef S
static const struct kd_struct find_coordinator_request_d =
    KD_STRUCT(struct kmsg_find_coordinator_request, find_coordinator_request_f);

#define S struct kmsg_find_coordinator_coordinator
static const struct kd_field find_coordinator_coordinator_f[] = {
    KF(S, key, KD_STR, 4, KD_NEVER),        KF(S, node_id, KD_I32, 4, KD_NEVER),
    KF(S, host, KD_STR, 4, KD_NEVER),       KF(S, port, KD_I32, 4, KD_NEVER),
    KF(S, error_code, KD_I16, 4, KD_NEVER), KFNZ(S, error_message, KD_STR, 4, KD_NEVER, 4),
};
#undef S
static const struct kd_struct find_coordinator_coordinator_d =
    KD_STRUCT(struct kmsg_find_coordinator_coordinator, find_coordinator_coordinator_f);

#define S struct kmsg_find_coordinator_response
static const struct kd_field find_coordinator_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KF(S, error_code, KD_I16, 0, 3),
    KFN(S, error_message, KD_STR, 1, 3, 1),
    KF(S, node_id, KD_I32, 0, 3),
    KF(S, host, KD_STR, 0, 3),
    KF(S, port, KD_I32, 0, 3),
    KA(S, coordinators, 4, KD_NEVER, find_coordinator_coordinator_d),
};
#undef S
static const struct kd_struct find_coordinator_response_d =
    KD_STRUCT(struct kmsg_find_coordinator_response, find_coordinator_response_f);

KD_MESSAGE(kd_find_coordinator_request, "FindCoordinatorRequest", KAFKA_FIND_COORDINATOR, 0, 4, 3,
           &find_coordinator_request_d, NULL);
KD_MESSAGE(kd_find_coordinator_response, "FindCoordinatorResponse", KAFKA_FIND_COORDINATOR, 0, 4, 3,
           &find_coordinator_response_d, NULL);

/* ---- InitProducerId ---- */

#define S struct kmsg_init_producer_id_request
static const struct kd_field init_producer_id_request_f[] = {
    KFN(S, transactional_id, KD_STR, 0, KD_NEVER, 0),
    KF(S, transaction_timeout_ms, KD_I32, 0, KD_NEVER),
    KFD(S, producer_id, KD_I64, 3, KD_NEVER, -1),
    KFD(S, producer_epoch, KD_I16, 3, KD_NEVER, -1),
};
#undef S
static const struct kd_struct init_producer_id_request_d =
    KD_STRUCT(struct kmsg_init_producer_id_request, init_producer_id_request_f);

#define S struct kmsg_init_producer_id_response
static const struct kd_field init_producer_id_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFD(S, producer_id, KD_I64, 0, KD_NEVER, -1),
    KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct init_producer_id_response_d =
    KD_STRUCT(struct kmsg_init_producer_id_response, init_producer_id_response_f);

KD_MESSAGE(kd_init_producer_id_request, "InitProducerIdRequest", KAFKA_INIT_PRODUCER_ID, 0, 4, 2,
           &init_producer_id_request_d, NULL);
KD_MESSAGE(kd_init_producer_id_response, "InitProducerIdResponse", KAFKA_INIT_PRODUCER_ID, 0, 4, 2,
           &init_producer_id_response_d, NULL);

KMSG_CODEC(metadata, metadata_request, metadata_response)
KMSG_CODEC(find_coordinator, find_coordinator_request, find_coordinator_response)
KMSG_CODEC(init_producer_id, init_producer_id_request, init_producer_id_response)
