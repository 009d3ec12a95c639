/*
 * fuzz_kafka_admin.c — libFuzzer target for the admin request decoders (CreateTopics,
 * DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, CreatePartitions,
 * DeleteRecords; tools/kafka/proto/kmsg_admin.c), input layout in kafka_fuzz.h. What
 * decodes is answered with one result per topic/resource through the response encoders.
 */
#include "fuzz/kafka_fuzz.h"

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 2) == 0);
    int rc = 0;
    if (key == KAFKA_CREATE_TOPICS) {
        const struct kmsg_create_topics_request *q = &req->create_topics;
        static struct kmsg_create_topics_topic_response t[4096];
        int32_t n = q->topics_count > 4096 ? 4096 : q->topics_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            for (int32_t j = 0; j < q->topics[i].configs_count; j++) {
                kf_str_inside(q->topics[i].configs[j].name);
                kf_str_inside(q->topics[i].configs[j].value);
            }
            t[i] = (struct kmsg_create_topics_topic_response){
                .name = q->topics[i].name, .error_code = 0, .error_message = {NULL, -1}};
        }
        struct kmsg_create_topics_response m = {0, t, n};
        rc = kmsg_create_topics_response_encode(w, version, &m);
    } else if (key == KAFKA_DELETE_TOPICS) {
        const struct kmsg_delete_topics_request *q = &req->delete_topics;
        static struct kmsg_delete_topics_topic_response t[4096];
        int32_t n = q->topic_names_count > 4096 ? 4096 : q->topic_names_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topic_names[i]);
            t[i] = (struct kmsg_delete_topics_topic_response){.name = q->topic_names[i],
                                                              .error_code = 3};
        }
        struct kmsg_delete_topics_response m = {0, t, n};
        rc = kmsg_delete_topics_response_encode(w, version, &m);
    } else if (key == KAFKA_ALTER_CONFIGS || key == KAFKA_INCREMENTAL_ALTER_CONFIGS) {
        const struct kmsg_alter_configs_request *q = &req->alter_configs;
        static struct kmsg_alter_configs_resource_response res[4096];
        int32_t n = q->resources_count > 4096 ? 4096 : q->resources_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->resources[i].resource_name);
            for (int32_t j = 0; j < q->resources[i].configs_count; j++) {
                kf_str_inside(q->resources[i].configs[j].name);
                kf_str_inside(q->resources[i].configs[j].value);
            }
            res[i] = (struct kmsg_alter_configs_resource_response){
                40, {"bad", 3}, q->resources[i].resource_type, q->resources[i].resource_name};
        }
        struct kmsg_alter_configs_response m = {0, res, n};
        rc = key == KAFKA_ALTER_CONFIGS
                 ? kmsg_alter_configs_response_encode(w, version, &m)
                 : kmsg_incremental_alter_configs_response_encode(w, version, &m);
    } else if (key == KAFKA_CREATE_PARTITIONS) {
        const struct kmsg_create_partitions_request *q = &req->create_partitions;
        static struct kmsg_create_partitions_result res[4096];
        int32_t n = q->topics_count > 4096 ? 4096 : q->topics_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            res[i] = (struct kmsg_create_partitions_result){q->topics[i].name, 0, {NULL, -1}};
        }
        struct kmsg_create_partitions_response m = {0, res, n};
        rc = kmsg_create_partitions_response_encode(w, version, &m);
    } else if (key == KAFKA_DELETE_RECORDS) {
        const struct kmsg_delete_records_request *q = &req->delete_records;
        static struct kmsg_delete_records_topic_result res[256];
        static struct kmsg_delete_records_partition_result parts[4096];
        int32_t n = q->topics_count > 256 ? 256 : q->topics_count;
        int32_t used = 0;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            int32_t pn = q->topics[i].partitions_count;
            if (pn > 4096 - used)
                pn = 4096 - used;
            for (int32_t j = 0; j < pn; j++)
                parts[used + j] = (struct kmsg_delete_records_partition_result){
                    q->topics[i].partitions[j].partition_index, q->topics[i].partitions[j].offset,
                    0};
            res[i] = (struct kmsg_delete_records_topic_result){q->topics[i].name, parts + used, pn};
            used += pn;
        }
        struct kmsg_delete_records_response m = {0, res, n};
        rc = kmsg_delete_records_response_encode(w, version, &m);
    } else {
        const struct kmsg_describe_configs_request *q = &req->describe_configs;
        static struct kmsg_describe_configs_result res[4096];
        static const struct kmsg_describe_configs_synonym syn = {
            {"retention.ms", 12}, {"-1", 2}, 5};
        static const struct kmsg_describe_configs_entry e = {.name = {"retention.ms", 12},
                                                             .value = {"-1", 2},
                                                             .read_only = true,
                                                             .is_default = true,
                                                             .config_source = 5,
                                                             .is_sensitive = false,
                                                             .synonyms = &syn,
                                                             .synonyms_count = 1};
        int32_t n = q->resources_count > 4096 ? 4096 : q->resources_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->resources[i].resource_name);
            for (int32_t j = 0; j < q->resources[i].configuration_keys_count; j++)
                kf_str_inside(q->resources[i].configuration_keys[j]);
            res[i] = (struct kmsg_describe_configs_result){
                0, {NULL, -1}, q->resources[i].resource_type, q->resources[i].resource_name, &e, 1};
        }
        struct kmsg_describe_configs_response m = {0, res, n};
        rc = kmsg_describe_configs_response_encode(w, version, &m);
    }
    KCHECK(rc == 0 || rc == -12);
    if (rc == 0)
        KCHECK(kafka_frame_end(w, at) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_CREATE_TOPICS,
                                   KAFKA_DELETE_TOPICS,
                                   KAFKA_DESCRIBE_CONFIGS,
                                   KAFKA_ALTER_CONFIGS,
                                   KAFKA_CREATE_PARTITIONS,
                                   KAFKA_DELETE_RECORDS,
                                   KAFKA_INCREMENTAL_ALTER_CONFIGS};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
