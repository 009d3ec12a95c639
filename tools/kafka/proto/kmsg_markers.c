/*
 * kmsg_markers.c — WriteTxnMarkers (27, v0-1, flexible from v1) as data (kdesc.h): a transaction
 * coordinator's request to a partition leader to write COMMIT or ABORT markers (Kafka's
 * TransactionMarkerChannelManager sends it; KIP-98). In ringtail a cluster node both sends it
 * (handlers/txn_marker_send.c, the engine's marker writer for a partition led by another node)
 * and serves it (handlers/handle_txn_markers.c), so both directions are made here. It owns the
 * description only and must never decide an answer. Fields as Kafka 3.x's
 * WriteTxnMarkersRequest.json / WriteTxnMarkersResponse.json (no throttle time in the answer):
 *
 *   request: markers [producer_id i64, producer_epoch i16, transaction_result BOOL,
 *     topics [name STRING, partition_indexes [i32]], coordinator_epoch i32]
 *   response: markers [producer_id i64, topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

#define S struct kmsg_txn_marker
static const struct kd_field marker_f[] = {
    KF(S, producer_id, KD_I64, 0, KD_NEVER),         KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
    KF(S, transaction_result, KD_BOOL, 0, KD_NEVER), KA(S, topics, 0, KD_NEVER, kmsg_txn_topic_d),
    KF(S, coordinator_epoch, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct marker_d = KD_STRUCT(struct kmsg_txn_marker, marker_f);

#define S struct kmsg_write_txn_markers_request
static const struct kd_field markers_request_f[] = {
    KA(S, markers, 0, KD_NEVER, marker_d),
};
#undef S
static const struct kd_struct markers_request_d =
    KD_STRUCT(struct kmsg_write_txn_markers_request, markers_request_f);

#define S struct kmsg_partition_error
static const struct kd_field marker_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct marker_partition_d =
    KD_STRUCT(struct kmsg_partition_error, marker_partition_f);

#define S struct kmsg_topic_errors
static const struct kd_field marker_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, marker_partition_d),
};
#undef S
static const struct kd_struct marker_topic_d = KD_STRUCT(struct kmsg_topic_errors, marker_topic_f);

#define S struct kmsg_txn_marker_result
static const struct kd_field marker_result_f[] = {
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, marker_topic_d),
};
#undef S
static const struct kd_struct marker_result_d =
    KD_STRUCT(struct kmsg_txn_marker_result, marker_result_f);

#define S struct kmsg_write_txn_markers_response
static const struct kd_field markers_response_f[] = {
    KA(S, markers, 0, KD_NEVER, marker_result_d),
};
#undef S
static const struct kd_struct markers_response_d =
    KD_STRUCT(struct kmsg_write_txn_markers_response, markers_response_f);

KD_MESSAGE(kd_write_txn_markers_request, "WriteTxnMarkersRequest", KAFKA_WRITE_TXN_MARKERS, 0, 1, 1,
           &markers_request_d, NULL);
KD_MESSAGE(kd_write_txn_markers_response, "WriteTxnMarkersResponse", KAFKA_WRITE_TXN_MARKERS, 0, 1,
           1, &markers_response_d, NULL);

KMSG_CODEC(write_txn_markers, write_txn_markers_request, write_txn_markers_response)
