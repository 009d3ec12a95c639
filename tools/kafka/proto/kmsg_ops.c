/*
 * kmsg_ops.c — the KIP-664 operator messages as data (kdesc.h): DescribeProducers (61, v0),
 * DescribeTransactions (65, v0), ListTransactions (66, v0-1). Every version is flexible: compact
 * strings and arrays, a tagged-field section after each struct. It owns their descriptions and
 * must never decide an answer (handle_ops.c does). The fields are those of Kafka 3.x's released
 * message JSON (DescribeProducers*.json, DescribeTransactions*.json, ListTransactions*.json;
 * ListTransactions v1 is KIP-994's duration filter, Kafka 3.8+).
 *
 *   DescribeProducers request: topics [name STRING, partition_indexes [i32]]
 *   DescribeProducers response: throttle_time_ms i32, topics [name STRING, partitions
 *     [partition_index i32, error_code i16, error_message NSTRING (default null),
 *     active_producers [producer_id i64, producer_epoch i32, last_sequence i32 (default -1),
 *     last_timestamp i64 (default -1), coordinator_epoch i32,
 *     current_txn_start_offset i64 (default -1)]]]
 *   DescribeTransactions request: transactional_ids [STRING]
 *   DescribeTransactions response: throttle_time_ms i32, transaction_states [error_code i16,
 *     transactional_id STRING, transaction_state STRING, transaction_timeout_ms i32,
 *     transaction_start_time_ms i64, producer_id i64, producer_epoch i16,
 *     topics [topic STRING, partitions [i32]]]
 *   ListTransactions request: state_filters [STRING], producer_id_filters [i64],
 *     duration_filter i64 (v1+, default -1)
 *   ListTransactions response: throttle_time_ms i32, error_code i16,
 *     unknown_state_filters [STRING], transaction_states [transactional_id STRING,
 *     producer_id i64, transaction_state STRING]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- DescribeProducers ---- */

#define S struct kmsg_describe_producers_request
static const struct kd_field describe_producers_request_f[] = {
    KA(S, topics, 0, KD_NEVER, kmsg_txn_topic_d),
};
#undef S
static const struct kd_struct describe_producers_request_d =
    KD_STRUCT(struct kmsg_describe_producers_request, describe_producers_request_f);

#define S struct kmsg_producer_state
static const struct kd_field producer_state_f[] = {
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, producer_epoch, KD_I32, 0, KD_NEVER),
    KFD(S, last_sequence, KD_I32, 0, KD_NEVER, -1),
    KFD(S, last_timestamp, KD_I64, 0, KD_NEVER, -1),
    KF(S, coordinator_epoch, KD_I32, 0, KD_NEVER),
    KFD(S, current_txn_start_offset, KD_I64, 0, KD_NEVER, -1),
};
#undef S
static const struct kd_struct producer_state_d =
    KD_STRUCT(struct kmsg_producer_state, producer_state_f);

#define S struct kmsg_describe_producers_partition
static const struct kd_field describe_producers_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KA(S, active_producers, 0, KD_NEVER, producer_state_d),
};
#undef S
static const struct kd_struct describe_producers_partition_d =
    KD_STRUCT(struct kmsg_describe_producers_partition, describe_producers_partition_f);

#define S struct kmsg_describe_producers_topic
static const struct kd_field describe_producers_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, describe_producers_partition_d),
};
#undef S
static const struct kd_struct describe_producers_topic_d =
    KD_STRUCT(struct kmsg_describe_producers_topic, describe_producers_topic_f);

#define S struct kmsg_describe_producers_response
static const struct kd_field describe_producers_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, describe_producers_topic_d),
};
#undef S
static const struct kd_struct describe_producers_response_d =
    KD_STRUCT(struct kmsg_describe_producers_response, describe_producers_response_f);

KD_MESSAGE(kd_describe_producers_request, "DescribeProducersRequest", KAFKA_DESCRIBE_PRODUCERS, 0,
           0, 0, &describe_producers_request_d, NULL);
KD_MESSAGE(kd_describe_producers_response, "DescribeProducersResponse", KAFKA_DESCRIBE_PRODUCERS, 0,
           0, 0, &describe_producers_response_d, NULL);

/* ---- DescribeTransactions ---- */

#define S struct kmsg_describe_transactions_request
static const struct kd_field describe_transactions_request_f[] = {
    KP(S, transactional_ids, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct describe_transactions_request_d =
    KD_STRUCT(struct kmsg_describe_transactions_request, describe_transactions_request_f);

#define S struct kmsg_transaction_partitions
static const struct kd_field transaction_partitions_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KP(S, partition_indexes, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct transaction_partitions_d =
    KD_STRUCT(struct kmsg_transaction_partitions, transaction_partitions_f);

#define S struct kmsg_transaction_state
static const struct kd_field transaction_state_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, transactional_id, KD_STR, 0, KD_NEVER),
    KF(S, transaction_state, KD_STR, 0, KD_NEVER),
    KF(S, transaction_timeout_ms, KD_I32, 0, KD_NEVER),
    KF(S, transaction_start_time_ms, KD_I64, 0, KD_NEVER),
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, producer_epoch, KD_I16, 0, KD_NEVER),
    KA(S, topic_partitions, 0, KD_NEVER, transaction_partitions_d),
};
#undef S
static const struct kd_struct transaction_state_d =
    KD_STRUCT(struct kmsg_transaction_state, transaction_state_f);

#define S struct kmsg_describe_transactions_response
static const struct kd_field describe_transactions_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, transaction_states, 0, KD_NEVER, transaction_state_d),
};
#undef S
static const struct kd_struct describe_transactions_response_d =
    KD_STRUCT(struct kmsg_describe_transactions_response, describe_transactions_response_f);

KD_MESSAGE(kd_describe_transactions_request, "DescribeTransactionsRequest",
           KAFKA_DESCRIBE_TRANSACTIONS, 0, 0, 0, &describe_transactions_request_d, NULL);
KD_MESSAGE(kd_describe_transactions_response, "DescribeTransactionsResponse",
           KAFKA_DESCRIBE_TRANSACTIONS, 0, 0, 0, &describe_transactions_response_d, NULL);

/* ---- ListTransactions ---- */

#define S struct kmsg_list_transactions_request
static const struct kd_field list_transactions_request_f[] = {
    KP(S, state_filters, KD_STR, 0, KD_NEVER),
    KP(S, producer_id_filters, KD_I64, 0, KD_NEVER),
    KFD(S, duration_filter_ms, KD_I64, 1, KD_NEVER, -1),
};
#undef S
static const struct kd_struct list_transactions_request_d =
    KD_STRUCT(struct kmsg_list_transactions_request, list_transactions_request_f);

#define S struct kmsg_listed_transaction
static const struct kd_field listed_transaction_f[] = {
    KF(S, transactional_id, KD_STR, 0, KD_NEVER),
    KF(S, producer_id, KD_I64, 0, KD_NEVER),
    KF(S, transaction_state, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct listed_transaction_d =
    KD_STRUCT(struct kmsg_listed_transaction, listed_transaction_f);

#define S struct kmsg_list_transactions_response
static const struct kd_field list_transactions_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KP(S, unknown_state_filters, KD_STR, 0, KD_NEVER),
    KA(S, transaction_states, 0, KD_NEVER, listed_transaction_d),
};
#undef S
static const struct kd_struct list_transactions_response_d =
    KD_STRUCT(struct kmsg_list_transactions_response, list_transactions_response_f);

KD_MESSAGE(kd_list_transactions_request, "ListTransactionsRequest", KAFKA_LIST_TRANSACTIONS, 0, 1,
           0, &list_transactions_request_d, NULL);
KD_MESSAGE(kd_list_transactions_response, "ListTransactionsResponse", KAFKA_LIST_TRANSACTIONS, 0, 1,
           0, &list_transactions_response_d, NULL);

KMSG_CODEC(describe_producers, describe_producers_request, describe_producers_response)
KMSG_CODEC(describe_transactions, describe_transactions_request, describe_transactions_response)
KMSG_CODEC(list_transactions, list_transactions_request, list_transactions_response)
