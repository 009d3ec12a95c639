/*
 * kmsg_admin.c — admin messages as data (kdesc.h): CreateTopics (v0-7, flexible from v5),
 * DeleteTopics (v0-6, flexible from v4), DescribeConfigs (v0-4, flexible from v4),
 * AlterConfigs (v0-2, flexible from v2), IncrementalAlterConfigs (v0-1, flexible from v1),
 * CreatePartitions (v0-3, flexible from v2), DeleteRecords (v0-2, flexible from v2). It owns
 * their descriptions (from Kafka's message JSON) and must never decide an answer (the server
 * does).
 *
 *   CreateTopics request: topics [name STRING, num_partitions i32, replication_factor i16,
 *     assignments [partition_index i32, broker_ids [i32]], configs [name STRING,
 *     value NSTRING]], timeout_ms i32, validate_only BOOL (v1+)
 *   CreateTopics response: throttle_time_ms i32 (v2+), topics [name STRING, topic_id UUID (v7+),
 *     error_code i16, error_message NSTRING (v1+), topic_config_error_code i16 (v5+, tag 0),
 *     num_partitions i32 (v5+), replication_factor i16 (v5+), configs NULLABLE (v5+)
 *     [name STRING, value NSTRING, read_only BOOL, config_source i8, is_sensitive BOOL]]
 *
 *   DeleteTopics request: topics (v6+) [name NSTRING, topic_id UUID], topic_names [STRING]
 *     (v0-5), timeout_ms i32
 *   DeleteTopics response: throttle_time_ms i32 (v1+), responses [name STRING (nullable v6+),
 *     topic_id UUID (v6+), error_code i16, error_message NSTRING (v5+)]
 *
 * Invariants:
 *   KMA1  A DeleteTopics v6 request decodes its topics[] and also topic_names[] (the names of
 *         topics[] in order, null for a topic named by id only), so the handler reads one list
 *         at every version; encoding at v6 writes topics[] only.
 *
 *   DescribeConfigs request: resources [resource_type i8, resource_name STRING,
 *     configuration_keys NULLABLE [STRING]], include_synonyms BOOL (v1+),
 *     include_documentation BOOL (v3+)
 *   DescribeConfigs response: throttle_time_ms i32, results [error_code i16,
 *     error_message NSTRING, resource_type i8, resource_name STRING, configs [name STRING,
 *     value NSTRING, read_only BOOL, is_default BOOL (v0 only), config_source i8 (v1+),
 *     is_sensitive BOOL, synonyms (v1+) [name STRING, value NSTRING, source i8],
 *     config_type i8 (v3+), documentation NSTRING (v3+)]]
 *
 *   AlterConfigs request: resources [resource_type i8, resource_name STRING, configs [name
 *     STRING, value NSTRING]], validate_only BOOL
 *   IncrementalAlterConfigs request: resources [resource_type i8, resource_name STRING,
 *     configs [name STRING, config_operation i8, value NSTRING]], validate_only BOOL
 *   both responses: throttle_time_ms i32, responses [error_code i16, error_message NSTRING,
 *     resource_type i8, resource_name STRING]
 *
 *   CreatePartitions request: topics [name STRING, count i32, assignments NULLABLE
 *     [broker_ids [i32]]], timeout_ms i32, validate_only BOOL
 *   CreatePartitions response: throttle_time_ms i32, results [name STRING, error_code i16,
 *     error_message NSTRING]
 *
 *   DeleteRecords request: topics [name STRING, partitions [partition_index i32, offset i64]],
 *     timeout_ms i32
 *   DeleteRecords response: throttle_time_ms i32, topics [name STRING, partitions
 *     [partition_index i32, low_watermark i64, error_code i16]]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- CreateTopics ---- */

#define S struct kmsg_create_topics_assignment
static const struct kd_field create_topics_assignment_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KP(S, broker_ids, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct create_topics_assignment_d =
    KD_STRUCT(struct kmsg_create_topics_assignment, create_topics_assignment_f);

#define S struct kmsg_create_topics_config
static const struct kd_field create_topics_config_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KFN(S, value, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct create_topics_config_d =
    KD_STRUCT(struct kmsg_create_topics_config, create_topics_config_f);

#define S struct kmsg_create_topics_topic
static const struct kd_field create_topics_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, num_partitions, KD_I32, 0, KD_NEVER),
    KF(S, replication_factor, KD_I16, 0, KD_NEVER),
    KA(S, assignments, 0, KD_NEVER, create_topics_assignment_d),
    KA(S, configs, 0, KD_NEVER, create_topics_config_d),
};
#undef S
static const struct kd_struct create_topics_topic_d =
    KD_STRUCT(struct kmsg_create_topics_topic, create_topics_topic_f);

#define S struct kmsg_create_topics_request
static const struct kd_field create_topics_request_f[] = {
    KA(S, topics, 0, KD_NEVER, create_topics_topic_d),
    KFD(S, timeout_ms, KD_I32, 0, KD_NEVER, 60000),
    KF(S, validate_only, KD_BOOL, 1, KD_NEVER),
};
#undef S
static const struct kd_struct create_topics_request_d =
    KD_STRUCT(struct kmsg_create_topics_request, create_topics_request_f);

#define S struct kmsg_create_topics_config_result
static const struct kd_field create_topics_config_result_f[] = {
    KF(S, name, KD_STR, 5, KD_NEVER),          KFN(S, value, KD_STR, 5, KD_NEVER, 5),
    KF(S, read_only, KD_BOOL, 5, KD_NEVER),    KFZ(S, config_source, KD_I8, 5, KD_NEVER, -1),
    KF(S, is_sensitive, KD_BOOL, 5, KD_NEVER),
};
#undef S
static const struct kd_struct create_topics_config_result_d =
    KD_STRUCT(struct kmsg_create_topics_config_result, create_topics_config_result_f);

#define S struct kmsg_create_topics_topic_response
static const struct kd_field create_topics_topic_response_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, topic_id, KD_UUID, 7, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFN(S, error_message, KD_STR, 1, KD_NEVER, 0),
    KT(S, topic_config_error_code, KD_I16, 5, KD_NEVER, 0, 0),
    KFZ(S, num_partitions, KD_I32, 5, KD_NEVER, -1),
    KFZ(S, replication_factor, KD_I16, 5, KD_NEVER, -1),
    KAN(S, configs, 5, KD_NEVER, 5, create_topics_config_result_d),
};
#undef S
static const struct kd_struct create_topics_topic_response_d =
    KD_STRUCT(struct kmsg_create_topics_topic_response, create_topics_topic_response_f);

#define S struct kmsg_create_topics_response
static const struct kd_field create_topics_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 2, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, create_topics_topic_response_d),
};
#undef S
static const struct kd_struct create_topics_response_d =
    KD_STRUCT(struct kmsg_create_topics_response, create_topics_response_f);

KD_MESSAGE(kd_create_topics_request, "CreateTopicsRequest", KAFKA_CREATE_TOPICS, 0, 7, 5,
           &create_topics_request_d, NULL);
KD_MESSAGE(kd_create_topics_response, "CreateTopicsResponse", KAFKA_CREATE_TOPICS, 0, 7, 5,
           &create_topics_response_d, NULL);

/* ---- DeleteTopics ---- */

#define S struct kmsg_delete_topics_state
static const struct kd_field delete_topics_state_f[] = {
    KFN(S, name, KD_STR, 6, KD_NEVER, 6),
    KF(S, topic_id, KD_UUID, 6, KD_NEVER),
};
#undef S
static const struct kd_struct delete_topics_state_d =
    KD_STRUCT(struct kmsg_delete_topics_state, delete_topics_state_f);

#define S struct kmsg_delete_topics_request
static const struct kd_field delete_topics_request_f[] = {
    KA(S, topics, 6, KD_NEVER, delete_topics_state_d),
    KP(S, topic_names, KD_STR, 0, 5),
    KF(S, timeout_ms, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_topics_request_d =
    KD_STRUCT(struct kmsg_delete_topics_request, delete_topics_request_f);

#define S struct kmsg_delete_topics_topic_response
static const struct kd_field delete_topics_topic_response_f[] = {
    KD_X(S, name, KD_STR, 0, 0, 0, KD_NEVER, 6, -1, 0, 0, NULL, 0),
    KF(S, topic_id, KD_UUID, 6, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 5, KD_NEVER, 5),
};
#undef S
static const struct kd_struct delete_topics_topic_response_d =
    KD_STRUCT(struct kmsg_delete_topics_topic_response, delete_topics_topic_response_f);

#define S struct kmsg_delete_topics_response
static const struct kd_field delete_topics_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KA(S, responses, 0, KD_NEVER, delete_topics_topic_response_d),
};
#undef S
static const struct kd_struct delete_topics_response_d =
    KD_STRUCT(struct kmsg_delete_topics_response, delete_topics_response_f);

KD_MESSAGE(kd_delete_topics_request, "DeleteTopicsRequest", KAFKA_DELETE_TOPICS, 0, 6, 4,
           &delete_topics_request_d, NULL);
KD_MESSAGE(kd_delete_topics_response, "DeleteTopicsResponse", KAFKA_DELETE_TOPICS, 0, 6, 4,
           &delete_topics_response_d, NULL);

/* ---- DescribeConfigs ---- */

#define S struct kmsg_describe_configs_resource
static const struct kd_field describe_configs_resource_f[] = {
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KPN(S, configuration_keys, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct describe_configs_resource_d =
    KD_STRUCT(struct kmsg_describe_configs_resource, describe_configs_resource_f);

#define S struct kmsg_describe_configs_request
static const struct kd_field describe_configs_request_f[] = {
    KA(S, resources, 0, KD_NEVER, describe_configs_resource_d),
    KF(S, include_synonyms, KD_BOOL, 1, KD_NEVER),
    KF(S, include_documentation, KD_BOOL, 3, KD_NEVER),
};
#undef S
static const struct kd_struct describe_configs_request_d =
    KD_STRUCT(struct kmsg_describe_configs_request, describe_configs_request_f);

#define S struct kmsg_describe_configs_synonym
static const struct kd_field describe_configs_synonym_f[] = {
    KF(S, name, KD_STR, 1, KD_NEVER),
    KFN(S, value, KD_STR, 1, KD_NEVER, 0),
    KF(S, source, KD_I8, 1, KD_NEVER),
};
#undef S
static const struct kd_struct describe_configs_synonym_d =
    KD_STRUCT(struct kmsg_describe_configs_synonym, describe_configs_synonym_f);

#define S struct kmsg_describe_configs_entry
static const struct kd_field describe_configs_entry_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KFN(S, value, KD_STR, 0, KD_NEVER, 0),
    KF(S, read_only, KD_BOOL, 0, KD_NEVER),
    KF(S, is_default, KD_BOOL, 0, 0),
    KFD(S, config_source, KD_I8, 1, KD_NEVER, -1),
    KF(S, is_sensitive, KD_BOOL, 0, KD_NEVER),
    KA(S, synonyms, 1, KD_NEVER, describe_configs_synonym_d),
    KF(S, config_type, KD_I8, 3, KD_NEVER),
    KFNZ(S, documentation, KD_STR, 3, KD_NEVER, 0),
};
#undef S
static const struct kd_struct describe_configs_entry_d =
    KD_STRUCT(struct kmsg_describe_configs_entry, describe_configs_entry_f);

#define S struct kmsg_describe_configs_result
static const struct kd_field describe_configs_result_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFN(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KA(S, configs, 0, KD_NEVER, describe_configs_entry_d),
};
#undef S
static const struct kd_struct describe_configs_result_d =
    KD_STRUCT(struct kmsg_describe_configs_result, describe_configs_result_f);

#define S struct kmsg_describe_configs_response
static const struct kd_field describe_configs_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, results, 0, KD_NEVER, describe_configs_result_d),
};
#undef S
static const struct kd_struct describe_configs_response_d =
    KD_STRUCT(struct kmsg_describe_configs_response, describe_configs_response_f);

KD_MESSAGE(kd_describe_configs_request, "DescribeConfigsRequest", KAFKA_DESCRIBE_CONFIGS, 0, 4, 4,
           &describe_configs_request_d, NULL);
KD_MESSAGE(kd_describe_configs_response, "DescribeConfigsResponse", KAFKA_DESCRIBE_CONFIGS, 0, 4, 4,
           &describe_configs_response_d, NULL);

/* ---- AlterConfigs and IncrementalAlterConfigs ---- */

#define S struct kmsg_alter_configs_config
static const struct kd_field alter_configs_config_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KFN(S, value, KD_STR, 0, KD_NEVER, 0),
};
static const struct kd_field incremental_alter_configs_config_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, config_operation, KD_I8, 0, KD_NEVER),
    KFN(S, value, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct alter_configs_config_d =
    KD_STRUCT(struct kmsg_alter_configs_config, alter_configs_config_f);
static const struct kd_struct incremental_alter_configs_config_d =
    KD_STRUCT(struct kmsg_alter_configs_config, incremental_alter_configs_config_f);

#define S struct kmsg_alter_configs_resource
static const struct kd_field alter_configs_resource_f[] = {
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KA(S, configs, 0, KD_NEVER, alter_configs_config_d),
};
static const struct kd_field incremental_alter_configs_resource_f[] = {
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KA(S, configs, 0, KD_NEVER, incremental_alter_configs_config_d),
};
#undef S
static const struct kd_struct alter_configs_resource_d =
    KD_STRUCT(struct kmsg_alter_configs_resource, alter_configs_resource_f);
static const struct kd_struct incremental_alter_configs_resource_d =
    KD_STRUCT(struct kmsg_alter_configs_resource, incremental_alter_configs_resource_f);

#define S struct kmsg_alter_configs_request
static const struct kd_field alter_configs_request_f[] = {
    KA(S, resources, 0, KD_NEVER, alter_configs_resource_d),
    KF(S, validate_only, KD_BOOL, 0, KD_NEVER),
};
static const struct kd_field incremental_alter_configs_request_f[] = {
    KA(S, resources, 0, KD_NEVER, incremental_alter_configs_resource_d),
    KF(S, validate_only, KD_BOOL, 0, KD_NEVER),
};
#undef S
static const struct kd_struct alter_configs_request_d =
    KD_STRUCT(struct kmsg_alter_configs_request, alter_configs_request_f);
static const struct kd_struct incremental_alter_configs_request_d =
    KD_STRUCT(struct kmsg_alter_configs_request, incremental_alter_configs_request_f);

#define S struct kmsg_alter_configs_resource_response
static const struct kd_field alter_configs_resource_response_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFN(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct alter_configs_resource_response_d =
    KD_STRUCT(struct kmsg_alter_configs_resource_response, alter_configs_resource_response_f);

#define S struct kmsg_alter_configs_response
static const struct kd_field alter_configs_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, responses, 0, KD_NEVER, alter_configs_resource_response_d),
};
#undef S
static const struct kd_struct alter_configs_response_d =
    KD_STRUCT(struct kmsg_alter_configs_response, alter_configs_response_f);

KD_MESSAGE(kd_alter_configs_request, "AlterConfigsRequest", KAFKA_ALTER_CONFIGS, 0, 2, 2,
           &alter_configs_request_d, NULL);
KD_MESSAGE(kd_alter_configs_response, "AlterConfigsResponse", KAFKA_ALTER_CONFIGS, 0, 2, 2,
           &alter_configs_response_d, NULL);
KD_MESSAGE(kd_incremental_alter_configs_request, "IncrementalAlterConfigsRequest",
           KAFKA_INCREMENTAL_ALTER_CONFIGS, 0, 1, 1, &incremental_alter_configs_request_d, NULL);
KD_MESSAGE(kd_incremental_alter_configs_response, "IncrementalAlterConfigsResponse",
           KAFKA_INCREMENTAL_ALTER_CONFIGS, 0, 1, 1, &alter_configs_response_d, NULL);

/* ---- CreatePartitions ---- */

#define S struct kmsg_create_partitions_assignment
static const struct kd_field create_partitions_assignment_f[] = {
    KP(S, broker_ids, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct create_partitions_assignment_d =
    KD_STRUCT(struct kmsg_create_partitions_assignment, create_partitions_assignment_f);

#define S struct kmsg_create_partitions_topic
static const struct kd_field create_partitions_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, count, KD_I32, 0, KD_NEVER),
    KAN(S, assignments, 0, KD_NEVER, 0, create_partitions_assignment_d),
};
#undef S
static const struct kd_struct create_partitions_topic_d =
    KD_STRUCT(struct kmsg_create_partitions_topic, create_partitions_topic_f);

#define S struct kmsg_create_partitions_request
static const struct kd_field create_partitions_request_f[] = {
    KA(S, topics, 0, KD_NEVER, create_partitions_topic_d),
    KF(S, timeout_ms, KD_I32, 0, KD_NEVER),
    KF(S, validate_only, KD_BOOL, 0, KD_NEVER),
};
#undef S
static const struct kd_struct create_partitions_request_d =
    KD_STRUCT(struct kmsg_create_partitions_request, create_partitions_request_f);

#define S struct kmsg_create_partitions_result
static const struct kd_field create_partitions_result_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFN(S, error_message, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct create_partitions_result_d =
    KD_STRUCT(struct kmsg_create_partitions_result, create_partitions_result_f);

#define S struct kmsg_create_partitions_response
static const struct kd_field create_partitions_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, results, 0, KD_NEVER, create_partitions_result_d),
};
#undef S
static const struct kd_struct create_partitions_response_d =
    KD_STRUCT(struct kmsg_create_partitions_response, create_partitions_response_f);

KD_MESSAGE(kd_create_partitions_request, "CreatePartitionsRequest", KAFKA_CREATE_PARTITIONS, 0, 3,
           2, &create_partitions_request_d, NULL);
KD_MESSAGE(kd_create_partitions_response, "CreatePartitionsResponse", KAFKA_CREATE_PARTITIONS, 0, 3,
           2, &create_partitions_response_d, NULL);

/* ---- DeleteRecords ---- */

#define S struct kmsg_delete_records_partition
static const struct kd_field delete_records_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, offset, KD_I64, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_records_partition_d =
    KD_STRUCT(struct kmsg_delete_records_partition, delete_records_partition_f);

#define S struct kmsg_delete_records_topic
static const struct kd_field delete_records_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, delete_records_partition_d),
};
#undef S
static const struct kd_struct delete_records_topic_d =
    KD_STRUCT(struct kmsg_delete_records_topic, delete_records_topic_f);

#define S struct kmsg_delete_records_request
static const struct kd_field delete_records_request_f[] = {
    KA(S, topics, 0, KD_NEVER, delete_records_topic_d),
    KF(S, timeout_ms, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_records_request_d =
    KD_STRUCT(struct kmsg_delete_records_request, delete_records_request_f);

#define S struct kmsg_delete_records_partition_result
static const struct kd_field delete_records_partition_result_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, low_watermark, KD_I64, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_records_partition_result_d =
    KD_STRUCT(struct kmsg_delete_records_partition_result, delete_records_partition_result_f);

#define S struct kmsg_delete_records_topic_result
static const struct kd_field delete_records_topic_result_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, delete_records_partition_result_d),
};
#undef S
static const struct kd_struct delete_records_topic_result_d =
    KD_STRUCT(struct kmsg_delete_records_topic_result, delete_records_topic_result_f);

#define S struct kmsg_delete_records_response
static const struct kd_field delete_records_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, delete_records_topic_result_d),
};
#undef S
static const struct kd_struct delete_records_response_d =
    KD_STRUCT(struct kmsg_delete_records_response, delete_records_response_f);

KD_MESSAGE(kd_delete_records_request, "DeleteRecordsRequest", KAFKA_DELETE_RECORDS, 0, 2, 2,
           &delete_records_request_d, NULL);
KD_MESSAGE(kd_delete_records_response, "DeleteRecordsResponse", KAFKA_DELETE_RECORDS, 0, 2, 2,
           &delete_records_response_d, NULL);

KMSG_CODEC(create_topics, create_topics_request, create_topics_response)

/* KMA1: at v6 the names of topics[] become topic_names[] too (in the arena). */
int kmsg_delete_topics_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_delete_topics_request *out)
{
    int rc = kd_decode(&kd_delete_topics_request, r, version, a, out);
    if (rc || version < 6)
        return rc;
    out->topic_names = NULL;
    out->topic_names_count = out->topics_count;
    if (out->topics_count <= 0)
        return 0;
    struct kp_str *names = kp_arena_array(r, a, out->topics_count, sizeof(*names));
    if (!names)
        return r->err ? r->err : KP_E_LIMIT;
    for (int32_t i = 0; i < out->topics_count; i++)
        names[i] = out->topics[i].name;
    out->topic_names = names;
    return 0;
}
int kmsg_delete_topics_request_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_delete_topics_request *m)
{
    return kd_encode(&kd_delete_topics_request, w, version, m);
}
int kmsg_delete_topics_response_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                       struct kmsg_delete_topics_response *out)
{
    return kd_decode(&kd_delete_topics_response, r, version, a, out);
}
int kmsg_delete_topics_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_delete_topics_response *m)
{
    return kd_encode(&kd_delete_topics_response, w, version, m);
}
KMSG_CODEC(describe_configs, describe_configs_request, describe_configs_response)
KMSG_CODEC(alter_configs, alter_configs_request, alter_configs_response)
KMSG_CODEC(incremental_alter_configs, alter_configs_request, alter_configs_response)
KMSG_CODEC(create_partitions, create_partitions_request, create_partitions_response)
KMSG_CODEC(delete_records, delete_records_request, delete_records_response)
