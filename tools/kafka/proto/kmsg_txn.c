/*
 * kmsg_txn.c — transaction and offset-commit messages as data (kdesc.h): AddPartitionsToTxn,
 * AddOffsetsToTxn, EndTxn and TxnOffsetCommit (v0-3 each, flexible from v3: compact strings and
 * arrays, a tagged-field section after each struct; Kafka's v2 of the first three differs from
 * v1 only in that PRODUCER_FENCED may be answered), OffsetCommit (v0-8, flexible from v8),
 * OffsetFetch (v0-8, flexible from v6). It owns their descriptions and must never decide an
 * answer (the server does). AddPartitionsToTxn v4 (KIP-890's broker-to-broker batches, a
 * partition leader's VerifyOnly question to the transaction coordinator) is described; v5
 * (TRANSACTION_ABORTABLE, KIP-890 part 2) is not.
 *
 *   AddPartitionsToTxn request v0-3: transactional_id STRING, producer_id i64, producer_epoch
 *     i16, topics [name STRING, partitions [i32]]; v4: transactions [transactional_id STRING,
 *     producer_id i64, producer_epoch i16, verify_only BOOL, topics [name STRING,
 *     partitions [i32]]] (and none of the v0-3 fields)
 *   AddPartitionsToTxn response: throttle_time_ms i32, error_code i16 (v4+),
 *     results_by_transaction (v4+) [transactional_id STRING, topic_results [name STRING,
 *     results [partition_index i32, error_code i16]]], results (v0-3) [name STRING,
 *     results [partition_index i32, error_code i16]]
 *   AddOffsetsToTxn request: transactional_id STRING, producer_id i64, producer_epoch i16,
 *     group_id STRING;  response: throttle_time_ms i32, error_code i16
 *   EndTxn request: transactional_id STRING, producer_id i64, producer_epoch i16, committed BOOL;
 *     response: throttle_time_ms i32, error_code i16
 *   TxnOffsetCommit request: transactional_id STRING, group_id STRING, producer_id i64,
 *     producer_epoch i16, generation_id i32 (v3+, default -1), member_id STRING (v3+,
 *     default ""), group_instance_id NSTRING (v3+, default null) (KIP-447),
 *     topics [name STRING, partitions [partition_index i32,
 *     committed_offset i64, committed_leader_epoch i32 (v2+), committed_metadata NSTRING]]
 *   TxnOffsetCommit response: throttle_time_ms i32, topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]
 *   OffsetCommit request: group_id STRING, generation_id i32 (v1+), member_id STRING (v1+),
 *     group_instance_id NSTRING (v7+), retention_time_ms i64 (v2-4), topics [name STRING,
 *     partitions [partition_index i32, committed_offset i64, committed_leader_epoch i32 (v6+),
 *     commit_timestamp i64 (v1 only), committed_metadata NSTRING]]; compact forms + tags
 *     from v8
 *   OffsetCommit response: throttle_time_ms i32 (v3+), topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]
 *   OffsetFetch request: group_id STRING (v0-7), topics ARRAY (v0-7, nullable v2-7)
 *     [name STRING, partition_indexes [i32]], groups (v8+, KIP-709) [group_id STRING,
 *     topics ARRAY (nullable) [name STRING, partition_indexes [i32]]], require_stable BOOL
 *     (v7+); compact forms + tags from v6
 *   OffsetFetch response: throttle_time_ms i32 (v3+), topics (v0-7) [name STRING, partitions
 *     [partition_index i32, committed_offset i64, committed_leader_epoch i32 (v5+),
 *     metadata NSTRING, error_code i16]], error_code i16 (v2-7), groups (v8+) [group_id
 *     STRING, topics [the same topics], error_code i16]; compact forms + tags from v6
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* Topics of partition indexes (AddPartitionsToTxn, OffsetFetch, DescribeProducers). */
#define S struct kmsg_txn_topic
static const struct kd_field txn_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KP(S, partitions, KD_I32, 0, KD_NEVER),
};
#undef S
const struct kd_struct kmsg_txn_topic_d = KD_STRUCT(struct kmsg_txn_topic, txn_topic_f);

/* Topics of partition errors (AddPartitionsToTxn, TxnOffsetCommit, OffsetCommit answers). */
#define S struct kmsg_partition_error
static const struct kd_field partition_error_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct partition_error_d =
    KD_STRUCT(struct kmsg_partition_error, partition_error_f);

#define S struct kmsg_topic_errors
static const struct kd_field topic_errors_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, partition_error_d),
};
#undef S
static const struct kd_struct topic_errors_d = KD_STRUCT(struct kmsg_topic_errors, topic_errors_f);

/* throttle + error_code, throttle at every version (AddOffsetsToTxn, EndTxn). */
#define S struct kmsg_error_response
static const struct kd_field error_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct error_response_d =
    KD_STRUCT(struct kmsg_error_response, error_response_f);

/* ---- AddPartitionsToTxn ---- */

#define S struct kmsg_add_partitions_to_txn_transaction
static const struct kd_field add_partitions_to_txn_transaction_f[] = {
    KF(S, transactional_id, KD_STR, 4, KD_NEVER), KF(S, producer_id, KD_I64, 4, KD_NEVER),
    KF(S, producer_epoch, KD_I16, 4, KD_NEVER),   KF(S, verify_only, KD_BOOL, 4, KD_NEVER),
    KA(S, topics, 4, KD_NEVER, kmsg_txn_topic_d),
};
#undef S
static const struct kd_struct add_partitions_to_txn_transaction_d =
    KD_STRUCT(struct kmsg_add_partitions_to_txn_transaction, add_partitions_to_txn_transaction_f);

#define S struct kmsg_add_partitions_to_txn_request
static const struct kd_field add_partitions_to_txn_request_f[] = {
    KA(S, transactions, 4, KD_NEVER, add_partitions_to_txn_transaction_d),
    KF(S, transactional_id, KD_STR, 0, 3),
    KF(S, producer_id, KD_I64, 0, 3),
    KF(S, producer_epoch, KD_I16, 0, 3),
    KA(S, topics, 0, 3, kmsg_txn_topic_d),
};
#undef S
static const struct kd_struct add_partitions_to_txn_request_d =
    KD_STRUCT(struct kmsg_add_partitions_to_txn_request, add_partitions_to_txn_request_f);

#define S struct kmsg_add_partitions_to_txn_result
static const struct kd_field add_partitions_to_txn_result_f[] = {
    KF(S, transactional_id, KD_STR, 4, KD_NEVER),
    KA(S, topic_results, 4, KD_NEVER, topic_errors_d),
};
#undef S
static const struct kd_struct add_partitions_to_txn_result_d =
    KD_STRUCT(struct kmsg_add_partitions_to_txn_result, add_partitions_to_txn_result_f);

#define S struct kmsg_add_partitions_to_txn_response
static const struct kd_field add_partitions_to_txn_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 4, KD_NEVER),
    KA(S, results_by_transaction, 4, KD_NEVER, add_partitions_to_txn_result_d),
    KA(S, results, 0, 3, topic_errors_d),
};
#undef S
static const struct kd_struct add_partitions_to_txn_response_d =
    KD_STRUCT(struct kmsg_add_partitions_to_txn_response, add_partitions_to_txn_response_f);

KD_MESSAGE(kd_add_partitions_to_txn_request, "AddPartitionsToTxnRequest",
           KAFKA_ADD_PARTITIONS_TO_TXN, 0, 4, 3, &add_partitions_to_txn_request_d, NULL);
KD_MESSAGE(kd_add_partitions_to_txn_response, "AddPartitionsToTxnResponse",
           KAFKA_ADD_PARTITIONS_TO_TXN, 0, 4, 3, &add_partitions_to_txn_response_d, NULL);

/* ---- AddOffsetsToTxn ---- */

#define S struct kmsg_add_offsets_to_txn_request
static const struct kd_field add_offsets_to_txn_request_f[] = {
    KF(S, transactional_id, KD_STR, 0, KD_NEVER),
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
    KF(S, group_id, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct add_offsets_to_txn_request_d =
    KD_STRUCT(struct kmsg_add_offsets_to_txn_request, add_offsets_to_txn_request_f);

KD_MESSAGE(kd_add_offsets_to_txn_request, "AddOffsetsToTxnRequest", KAFKA_ADD_OFFSETS_TO_TXN, 0, 3,
           3, &add_offsets_to_txn_request_d, NULL);
KD_MESSAGE(kd_add_offsets_to_txn_response, "AddOffsetsToTxnResponse", KAFKA_ADD_OFFSETS_TO_TXN, 0,
           3, 3, &error_response_d, NULL);

/* ---- EndTxn ---- */

#define S struct kmsg_end_txn_request
static const struct kd_field end_txn_request_f[] = {
    KF(S, transactional_id, KD_STR, 0, KD_NEVER),
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
    KF(S, committed, KD_BOOL, 0, KD_NEVER),
};
#undef S
static const struct kd_struct end_txn_request_d =
    KD_STRUCT(struct kmsg_end_txn_request, end_txn_request_f);

KD_MESSAGE(kd_end_txn_request, "EndTxnRequest", KAFKA_END_TXN, 0, 3, 3, &end_txn_request_d, NULL);
KD_MESSAGE(kd_end_txn_response, "EndTxnResponse", KAFKA_END_TXN, 0, 3, 3, &error_response_d, NULL);

/* ---- TxnOffsetCommit and OffsetCommit (the leader epoch arrives at v2 and v6) ---- */

#define S struct kmsg_commit_partition
static const struct kd_field txn_commit_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, committed_offset, KD_I64, 0, KD_NEVER),
    KFD(S, committed_leader_epoch, KD_I32, 2, KD_NEVER, -1),
    KFN(S, committed_metadata, KD_STR, 0, KD_NEVER, 0),
};
static const struct kd_field commit_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, committed_offset, KD_I64, 0, KD_NEVER),
    KFD(S, committed_leader_epoch, KD_I32, 6, KD_NEVER, -1),
    KFD(S, commit_timestamp, KD_I64, 1, 1, -1),
    KFN(S, committed_metadata, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct txn_commit_partition_d =
    KD_STRUCT(struct kmsg_commit_partition, txn_commit_partition_f);
static const struct kd_struct commit_partition_d =
    KD_STRUCT(struct kmsg_commit_partition, commit_partition_f);

#define S struct kmsg_commit_topic
static const struct kd_field txn_commit_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, txn_commit_partition_d),
};
static const struct kd_field commit_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, commit_partition_d),
};
#undef S
static const struct kd_struct txn_commit_topic_d =
    KD_STRUCT(struct kmsg_commit_topic, txn_commit_topic_f);
static const struct kd_struct commit_topic_d = KD_STRUCT(struct kmsg_commit_topic, commit_topic_f);

#define S struct kmsg_txn_offset_commit_request
static const struct kd_field txn_offset_commit_request_f[] = {
    KF(S, transactional_id, KD_STR, 0, KD_NEVER),
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
    KFD(S, generation_id, KD_I32, 3, KD_NEVER, -1),
    KF(S, member_id, KD_STR, 3, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 3, KD_NEVER, 3),
    KA(S, topics, 0, KD_NEVER, txn_commit_topic_d),
};
#undef S
static const struct kd_struct txn_offset_commit_request_d =
    KD_STRUCT(struct kmsg_txn_offset_commit_request, txn_offset_commit_request_f);

#define S struct kmsg_commit_response
static const struct kd_field txn_commit_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, topic_errors_d),
};
static const struct kd_field commit_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 3, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, topic_errors_d),
};
#undef S
static const struct kd_struct txn_commit_response_d =
    KD_STRUCT(struct kmsg_commit_response, txn_commit_response_f);
static const struct kd_struct commit_response_d =
    KD_STRUCT(struct kmsg_commit_response, commit_response_f);

KD_MESSAGE(kd_txn_offset_commit_request, "TxnOffsetCommitRequest", KAFKA_TXN_OFFSET_COMMIT, 0, 3, 3,
           &txn_offset_commit_request_d, NULL);
KD_MESSAGE(kd_txn_offset_commit_response, "TxnOffsetCommitResponse", KAFKA_TXN_OFFSET_COMMIT, 0, 3,
           3, &txn_commit_response_d, NULL);

#define S struct kmsg_offset_commit_request
static const struct kd_field offset_commit_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),        KFD(S, generation_id, KD_I32, 1, KD_NEVER, -1),
    KF(S, member_id, KD_STR, 1, KD_NEVER),       KFN(S, group_instance_id, KD_STR, 7, KD_NEVER, 7),
    KFD(S, retention_time_ms, KD_I64, 2, 4, -1), KA(S, topics, 0, KD_NEVER, commit_topic_d),
};
#undef S
static const struct kd_struct offset_commit_request_d =
    KD_STRUCT(struct kmsg_offset_commit_request, offset_commit_request_f);

KD_MESSAGE(kd_offset_commit_request, "OffsetCommitRequest", KAFKA_OFFSET_COMMIT, 0, 8, 8,
           &offset_commit_request_d, NULL);
KD_MESSAGE(kd_offset_commit_response, "OffsetCommitResponse", KAFKA_OFFSET_COMMIT, 0, 8, 8,
           &commit_response_d, NULL);

/* ---- OffsetFetch ---- */

#define S struct kmsg_offset_fetch_group_request
static const struct kd_field offset_fetch_group_request_f[] = {
    KF(S, group_id, KD_STR, 8, KD_NEVER),
    KAN(S, topics, 8, KD_NEVER, 8, kmsg_txn_topic_d),
};
#undef S
static const struct kd_struct offset_fetch_group_request_d =
    KD_STRUCT(struct kmsg_offset_fetch_group_request, offset_fetch_group_request_f);

#define S struct kmsg_offset_fetch_request
static const struct kd_field offset_fetch_request_f[] = {
    KF(S, group_id, KD_STR, 0, 7),
    KAN(S, topics, 0, 7, 2, kmsg_txn_topic_d),
    KA(S, groups, 8, KD_NEVER, offset_fetch_group_request_d),
    KF(S, require_stable, KD_BOOL, 7, KD_NEVER),
};
#undef S
static const struct kd_struct offset_fetch_request_d =
    KD_STRUCT(struct kmsg_offset_fetch_request, offset_fetch_request_f);

#define S struct kmsg_offset_fetch_partition
static const struct kd_field offset_fetch_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, committed_offset, KD_I64, 0, KD_NEVER),
    KFD(S, committed_leader_epoch, KD_I32, 5, KD_NEVER, -1),
    KFN(S, metadata, KD_STR, 0, KD_NEVER, 0),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct offset_fetch_partition_d =
    KD_STRUCT(struct kmsg_offset_fetch_partition, offset_fetch_partition_f);

#define S struct kmsg_offset_fetch_topic
static const struct kd_field offset_fetch_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, offset_fetch_partition_d),
};
#undef S
static const struct kd_struct offset_fetch_topic_d =
    KD_STRUCT(struct kmsg_offset_fetch_topic, offset_fetch_topic_f);

#define S struct kmsg_offset_fetch_group
static const struct kd_field offset_fetch_group_f[] = {
    KF(S, group_id, KD_STR, 8, KD_NEVER),
    KA(S, topics, 8, KD_NEVER, offset_fetch_topic_d),
    KF(S, error_code, KD_I16, 8, KD_NEVER),
};
#undef S
static const struct kd_struct offset_fetch_group_d =
    KD_STRUCT(struct kmsg_offset_fetch_group, offset_fetch_group_f);

#define S struct kmsg_offset_fetch_response
static const struct kd_field offset_fetch_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 3, KD_NEVER),
    KA(S, topics, 0, 7, offset_fetch_topic_d),
    KF(S, error_code, KD_I16, 2, 7),
    KA(S, groups, 8, KD_NEVER, offset_fetch_group_d),
};
#undef S
static const struct kd_struct offset_fetch_response_d =
    KD_STRUCT(struct kmsg_offset_fetch_response, offset_fetch_response_f);

KD_MESSAGE(kd_offset_fetch_request, "OffsetFetchRequest", KAFKA_OFFSET_FETCH, 0, 8, 6,
           &offset_fetch_request_d, NULL);
KD_MESSAGE(kd_offset_fetch_response, "OffsetFetchResponse", KAFKA_OFFSET_FETCH, 0, 8, 6,
           &offset_fetch_response_d, NULL);

KMSG_CODEC(add_partitions_to_txn, add_partitions_to_txn_request, add_partitions_to_txn_response)
KMSG_CODEC(add_offsets_to_txn, add_offsets_to_txn_request, error_response)
KMSG_CODEC(end_txn, end_txn_request, error_response)
KMSG_CODEC(txn_offset_commit, txn_offset_commit_request, commit_response)
KMSG_CODEC(offset_commit, offset_commit_request, commit_response)
KMSG_CODEC(offset_fetch, offset_fetch_request, offset_fetch_response)
