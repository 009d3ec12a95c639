/*
 * kmsg_data.c — the data-path messages as data (kdesc.h): Produce (v0-9, see api.c KA4; v9+
 * flexible), Fetch (v0-12; v12+ flexible), ListOffsets (v0-7; v6+ flexible), requests and
 * responses, written from Kafka's ProduceRequest/Response, FetchRequest/Response and
 * ListOffsetsRequest/Response JSON. It owns their descriptions and the kmsg.h entry points over
 * the interpreter; it must never copy record bytes on decode (a produced batch stays a kp_bytes
 * into the request) and never copy fetched segment bytes on encode unless the caller hands them
 * inline (otherwise they become a hole, KP8).
 *
 *   Produce request: transactional_id NSTRING (v3+), acks i16, timeout_ms i32,
 *     topic_data [name STRING, partition_data [index i32, records NULLABLE_BYTES]]
 *   Produce response: responses [name STRING, partitions [index i32, error_code i16,
 *     base_offset i64, log_append_time_ms i64 (v2+), log_start_offset i64 (v5+),
 *     record_errors (v8+) [batch_index i32, batch_index_error_message NSTRING],
 *     error_message NSTRING (v8+)]], throttle_time_ms i32 (v1+)
 *
 *   Fetch request: replica_id i32, max_wait_ms i32, min_bytes i32, max_bytes i32 (v3+),
 *     isolation_level i8 (v4+), session_id i32 (v7+), session_epoch i32 (v7+),
 *     topics [topic STRING, partitions [partition i32, current_leader_epoch i32 (v9+),
 *       fetch_offset i64, last_fetched_epoch i32 (v12+), log_start_offset i64 (v5+),
 *       partition_max_bytes i32]],
 *     forgotten_topics_data (v7+) [topic STRING, partitions [i32]], rack_id STRING (v11+),
 *     cluster_id NSTRING (v12+, tag 0)
 *   Fetch response: throttle_time_ms i32 (v1+), error_code i16 (v7+), session_id i32 (v7+),
 *     responses [topic STRING, partitions [partition_index i32, error_code i16,
 *       high_watermark i64, last_stable_offset i64 (v4+), log_start_offset i64 (v5+),
 *       aborted_transactions (v4+) NULLABLE [producer_id i64, first_offset i64],
 *       preferred_read_replica i32 (v11+), records NULLABLE_BYTES]]
 *     Not described: v12's three tagged structs of a partition (diverging_epoch tag 0,
 *     current_leader tag 1, snapshot_id tag 2; KIP-595). kdesc has no tagged struct: decode
 *     skips them by size (KDE2) and encode never writes them — a single broker has no
 *     diverging follower, no other leader and no snapshot, so each is at Kafka's default and
 *     Kafka would not write them either.
 *
 *   ListOffsets request: replica_id i32, isolation_level i8 (v2+),
 *     topics [name STRING, partitions [partition_index i32, current_leader_epoch i32 (v4+),
 *       timestamp i64, max_num_offsets i32 (v0 only)]]
 *   ListOffsets response: throttle_time_ms i32 (v2+), topics [name STRING,
 *     partitions [partition_index i32, error_code i16, old_style_offsets [i64] (v0 only),
 *       timestamp i64 (v1+), offset i64 (v1+), leader_epoch i32 (v4+)]]
 *
 * Invariants:
 *   KD1  Every array count is checked against the least size of its element (KP4) with the
 *        element's fixed fields at that version, before the arena is asked for room (KDE1).
 *   KD2  A fetch partition's records are either copied (records != NULL) or a hole of exactly
 *        records_len bytes placed right after their length; never both (KD_RECORDS).
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- Produce ---- */

#define S struct kmsg_produce_partition
static const struct kd_field produce_partition_f[] = {
    KF(S, index, KD_I32, 0, KD_NEVER),
    KFN(S, records, KD_BYTES, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct produce_partition_d =
    KD_STRUCT(struct kmsg_produce_partition, produce_partition_f);

#define S struct kmsg_produce_topic
static const struct kd_field produce_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, produce_partition_d),
};
#undef S
static const struct kd_struct produce_topic_d =
    KD_STRUCT(struct kmsg_produce_topic, produce_topic_f);

#define S struct kmsg_produce_request
static const struct kd_field produce_request_f[] = {
    KFN(S, transactional_id, KD_STR, 3, KD_NEVER, 3),
    KF(S, acks, KD_I16, 0, KD_NEVER),
    KF(S, timeout_ms, KD_I32, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, produce_topic_d),
};
#undef S
static const struct kd_struct produce_request_d =
    KD_STRUCT(struct kmsg_produce_request, produce_request_f);

#define S struct kmsg_produce_record_error
static const struct kd_field produce_record_error_f[] = {
    KF(S, batch_index, KD_I32, 8, KD_NEVER),
    KFNZ(S, batch_index_error_message, KD_STR, 8, KD_NEVER, 8),
};
#undef S
static const struct kd_struct produce_record_error_d =
    KD_STRUCT(struct kmsg_produce_record_error, produce_record_error_f);

#define S struct kmsg_produce_partition_response
static const struct kd_field produce_partition_response_f[] = {
    KF(S, index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, base_offset, KD_I64, 0, KD_NEVER),
    KFD(S, log_append_time_ms, KD_I64, 2, KD_NEVER, -1),
    KFD(S, log_start_offset, KD_I64, 5, KD_NEVER, -1),
    KA(S, record_errors, 8, KD_NEVER, produce_record_error_d),
    KFNZ(S, error_message, KD_STR, 8, KD_NEVER, 8),
};
#undef S
static const struct kd_struct produce_partition_response_d =
    KD_STRUCT(struct kmsg_produce_partition_response, produce_partition_response_f);

#define S struct kmsg_produce_topic_response
static const struct kd_field produce_topic_response_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, produce_partition_response_d),
};
#undef S
static const struct kd_struct produce_topic_response_d =
    KD_STRUCT(struct kmsg_produce_topic_response, produce_topic_response_f);

#define S struct kmsg_produce_response
static const struct kd_field produce_response_f[] = {
    KA(S, responses, 0, KD_NEVER, produce_topic_response_d),
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
};
#undef S
static const struct kd_struct produce_response_d =
    KD_STRUCT(struct kmsg_produce_response, produce_response_f);

KD_MESSAGE(kd_produce_request, "ProduceRequest", KAFKA_PRODUCE, 0, 9, 9, &produce_request_d, NULL);
KD_MESSAGE(kd_produce_response, "ProduceResponse", KAFKA_PRODUCE, 0, 9, 9, &produce_response_d,
           NULL);

/* ---- Fetch ---- */

#define S struct kmsg_fetch_partition
static const struct kd_field fetch_partition_f[] = {
    KF(S, partition, KD_I32, 0, KD_NEVER),
    KFD(S, current_leader_epoch, KD_I32, 9, KD_NEVER, -1),
    KF(S, fetch_offset, KD_I64, 0, KD_NEVER),
    KFD(S, last_fetched_epoch, KD_I32, 12, KD_NEVER, -1),
    KFD(S, log_start_offset, KD_I64, 5, KD_NEVER, -1),
    KF(S, partition_max_bytes, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct fetch_partition_d =
    KD_STRUCT(struct kmsg_fetch_partition, fetch_partition_f);

#define S struct kmsg_fetch_topic
static const struct kd_field fetch_topic_f[] = {
    KF(S, topic, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, fetch_partition_d),
};
#undef S
static const struct kd_struct fetch_topic_d = KD_STRUCT(struct kmsg_fetch_topic, fetch_topic_f);

#define S struct kmsg_fetch_forgotten
static const struct kd_field fetch_forgotten_f[] = {
    KF(S, topic, KD_STR, 7, KD_NEVER),
    KP(S, partitions, KD_I32, 7, KD_NEVER),
};
#undef S
static const struct kd_struct fetch_forgotten_d =
    KD_STRUCT(struct kmsg_fetch_forgotten, fetch_forgotten_f);

#define S struct kmsg_fetch_request
static const struct kd_field fetch_request_f[] = {
    KF(S, replica_id, KD_I32, 0, KD_NEVER),
    KF(S, max_wait_ms, KD_I32, 0, KD_NEVER),
    KF(S, min_bytes, KD_I32, 0, KD_NEVER),
    KFD(S, max_bytes, KD_I32, 3, KD_NEVER, INT32_MAX),
    KF(S, isolation_level, KD_I8, 4, KD_NEVER),
    KF(S, session_id, KD_I32, 7, KD_NEVER),
    KFD(S, session_epoch, KD_I32, 7, KD_NEVER, -1),
    KA(S, topics, 0, KD_NEVER, fetch_topic_d),
    KA(S, forgotten_topics_data, 7, KD_NEVER, fetch_forgotten_d),
    KF(S, rack_id, KD_STR, 11, KD_NEVER),
    KTN(S, cluster_id, KD_STR, 12, KD_NEVER, 0),
};
#undef S
static const struct kd_struct fetch_request_d =
    KD_STRUCT(struct kmsg_fetch_request, fetch_request_f);

#define S struct kmsg_fetch_aborted
static const struct kd_field fetch_aborted_f[] = {
    KF(S, producer_id, KD_I64, 4, KD_NEVER),
    KF(S, first_offset, KD_I64, 4, KD_NEVER),
};
#undef S
static const struct kd_struct fetch_aborted_d =
    KD_STRUCT(struct kmsg_fetch_aborted, fetch_aborted_f);

#define S struct kmsg_fetch_partition_response
static const struct kd_field fetch_partition_response_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, high_watermark, KD_I64, 0, KD_NEVER),
    KFD(S, last_stable_offset, KD_I64, 4, KD_NEVER, -1),
    KFD(S, log_start_offset, KD_I64, 5, KD_NEVER, -1),
    KAN(S, aborted_transactions, 4, KD_NEVER, 4, fetch_aborted_d),
    KFD(S, preferred_read_replica, KD_I32, 11, KD_NEVER, -1),
    KD_X(S, records_len, KD_RECORDS, 0, 0, 0, KD_NEVER, 0, -1, (uint32_t)offsetof(S, records),
         (uint32_t)offsetof(S, records_ref), NULL, -1),
};
#undef S
static const struct kd_struct fetch_partition_response_d =
    KD_STRUCT(struct kmsg_fetch_partition_response, fetch_partition_response_f);

#define S struct kmsg_fetch_topic_response
static const struct kd_field fetch_topic_response_f[] = {
    KF(S, topic, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, fetch_partition_response_d),
};
#undef S
static const struct kd_struct fetch_topic_response_d =
    KD_STRUCT(struct kmsg_fetch_topic_response, fetch_topic_response_f);

#define S struct kmsg_fetch_response
static const struct kd_field fetch_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KF(S, error_code, KD_I16, 7, KD_NEVER),
    KF(S, session_id, KD_I32, 7, KD_NEVER),
    KA(S, responses, 0, KD_NEVER, fetch_topic_response_d),
};
#undef S
static const struct kd_struct fetch_response_d =
    KD_STRUCT(struct kmsg_fetch_response, fetch_response_f);

KD_MESSAGE(kd_fetch_request, "FetchRequest", KAFKA_FETCH, 0, 12, 12, &fetch_request_d, NULL);
KD_MESSAGE(kd_fetch_response, "FetchResponse", KAFKA_FETCH, 0, 12, 12, &fetch_response_d, NULL);

/* ---- ListOffsets ---- */

#define S struct kmsg_list_offsets_partition
static const struct kd_field list_offsets_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KFD(S, current_leader_epoch, KD_I32, 4, KD_NEVER, -1),
    KF(S, timestamp, KD_I64, 0, KD_NEVER),
    KFD(S, max_num_offsets, KD_I32, 0, 0, 1),
};
#undef S
static const struct kd_struct list_offsets_partition_d =
    KD_STRUCT(struct kmsg_list_offsets_partition, list_offsets_partition_f);

#define S struct kmsg_list_offsets_topic
static const struct kd_field list_offsets_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, list_offsets_partition_d),
};
#undef S
static const struct kd_struct list_offsets_topic_d =
    KD_STRUCT(struct kmsg_list_offsets_topic, list_offsets_topic_f);

#define S struct kmsg_list_offsets_request
static const struct kd_field list_offsets_request_f[] = {
    KF(S, replica_id, KD_I32, 0, KD_NEVER),
    KF(S, isolation_level, KD_I8, 2, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, list_offsets_topic_d),
};
#undef S
static const struct kd_struct list_offsets_request_d =
    KD_STRUCT(struct kmsg_list_offsets_request, list_offsets_request_f);

#define S struct kmsg_list_offsets_partition_response
static const struct kd_field list_offsets_partition_response_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER), KF(S, error_code, KD_I16, 0, KD_NEVER),
    KP(S, old_style_offsets, KD_I64, 0, 0),      KFD(S, timestamp, KD_I64, 1, KD_NEVER, -1),
    KFD(S, offset, KD_I64, 1, KD_NEVER, -1),     KFZ(S, leader_epoch, KD_I32, 4, KD_NEVER, -1),
};
#undef S
static const struct kd_struct list_offsets_partition_response_d =
    KD_STRUCT(struct kmsg_list_offsets_partition_response, list_offsets_partition_response_f);

#define S struct kmsg_list_offsets_topic_response
static const struct kd_field list_offsets_topic_response_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, list_offsets_partition_response_d),
};
#undef S
static const struct kd_struct list_offsets_topic_response_d =
    KD_STRUCT(struct kmsg_list_offsets_topic_response, list_offsets_topic_response_f);

#define S struct kmsg_list_offsets_response
static const struct kd_field list_offsets_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 2, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, list_offsets_topic_response_d),
};
#undef S
static const struct kd_struct list_offsets_response_d =
    KD_STRUCT(struct kmsg_list_offsets_response, list_offsets_response_f);

KD_MESSAGE(kd_list_offsets_request, "ListOffsetsRequest", KAFKA_LIST_OFFSETS, 0, 7, 6,
           &list_offsets_request_d, NULL);
KD_MESSAGE(kd_list_offsets_response, "ListOffsetsResponse", KAFKA_LIST_OFFSETS, 0, 7, 6,
           &list_offsets_response_d, NULL);

KMSG_CODEC(produce, produce_request, produce_response)
KMSG_CODEC(fetch, fetch_request, fetch_response)
KMSG_CODEC(list_offsets, list_offsets_request, list_offsets_response)
