/*
 * kmsg_admin.c — admin codecs: CreateTopics (v0-4), DeleteTopics (v0-3), DescribeConfigs
 * (v0-2). None of these versions is flexible. It owns their byte layouts and must never decide
 * an answer (the server does).
 *
 *   CreateTopics request: topics [name STRING, num_partitions i32, replication_factor i16,
 *     assignments [partition_index i32, broker_ids [i32]], configs [name STRING,
 *     value NSTRING]], timeout_ms i32, validate_only BOOL (v1+)
 *   CreateTopics response: throttle_time_ms i32 (v2+), topics [name STRING, error_code i16,
 *     error_message NSTRING (v1+)]
 *
 *   DeleteTopics request: topic_names [STRING], timeout_ms i32
 *   DeleteTopics response: throttle_time_ms i32 (v1+), responses [name STRING, error_code i16]
 *
 *   DescribeConfigs request: resources [resource_type i8, resource_name STRING,
 *     configuration_keys NULLABLE [STRING]], include_synonyms BOOL (v1+)
 *   DescribeConfigs response: throttle_time_ms i32, results [error_code i16,
 *     error_message NSTRING, resource_type i8, resource_name STRING, configs [name STRING,
 *     value NSTRING, read_only BOOL, is_default BOOL (v0 only), config_source i8 (v1+),
 *     is_sensitive BOOL, synonyms (v1+) [name STRING, value NSTRING, source i8]]]
 */
#include "tools/kafka/kmsg.h"
#include "tools/kafka/kmsg_int.h"

/* ---- CreateTopics ---- */

int kmsg_create_topics_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_create_topics_request *out)
{
    int rc = kmsg_version_check(KAFKA_CREATE_TOPICS, version);
    if (rc)
        return rc;
    out->topics_count = kp_read_array_len(r, 2 + 4 + 2 + 4 + 4);
    out->topics = kp_arena_array(r, a, out->topics_count, sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_count && !r->err; i++) {
        struct kmsg_create_topics_topic *t = &out->topics[i];
        t->name = kp_read_string(r);
        t->num_partitions = kp_read_i32(r);
        t->replication_factor = kp_read_i16(r);
        t->assignments_count = kp_read_array_len(r, 4 + 4);
        t->assignments = kp_arena_array(r, a, t->assignments_count, sizeof *t->assignments);
        for (int32_t j = 0; j < t->assignments_count && !r->err; j++) {
            struct kmsg_create_topics_assignment *as = &t->assignments[j];
            as->partition_index = kp_read_i32(r);
            as->broker_ids_count = kp_read_array_len(r, 4);
            as->broker_ids = kp_arena_array(r, a, as->broker_ids_count, sizeof *as->broker_ids);
            for (int32_t k = 0; k < as->broker_ids_count && !r->err; k++)
                as->broker_ids[k] = kp_read_i32(r);
        }
        t->configs_count = kp_read_array_len(r, 2 + 2);
        t->configs = kp_arena_array(r, a, t->configs_count, sizeof *t->configs);
        for (int32_t j = 0; j < t->configs_count && !r->err; j++) {
            t->configs[j].name = kp_read_string(r);
            t->configs[j].value = kp_read_nullable_string(r);
        }
    }
    out->timeout_ms = kp_read_i32(r);
    out->validate_only = version >= 1 ? kp_read_bool(r) : false;
    if (r->err)
        out->topics_count = 0;
    return kmsg_finish(r);
}

int kmsg_create_topics_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_create_topics_response *m)
{
    int rc = kmsg_version_check(KAFKA_CREATE_TOPICS, version);
    if (rc)
        return rc;
    if (version >= 2)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->topics_count);
    for (int32_t i = 0; i < m->topics_count; i++) {
        kp_write_string(w, m->topics[i].name);
        kp_write_i16(w, m->topics[i].error_code);
        if (version >= 1)
            kp_write_nullable_string(w, m->topics[i].error_message);
    }
    return w->err;
}

/* ---- DeleteTopics ---- */

int kmsg_delete_topics_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_delete_topics_request *out)
{
    int rc = kmsg_version_check(KAFKA_DELETE_TOPICS, version);
    if (rc)
        return rc;
    out->topic_names_count = kp_read_array_len(r, 2);
    out->topic_names = kp_arena_array(r, a, out->topic_names_count, sizeof *out->topic_names);
    for (int32_t i = 0; i < out->topic_names_count && !r->err; i++)
        out->topic_names[i] = kp_read_string(r);
    out->timeout_ms = kp_read_i32(r);
    if (r->err)
        out->topic_names_count = 0;
    return kmsg_finish(r);
}

int kmsg_delete_topics_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_delete_topics_response *m)
{
    int rc = kmsg_version_check(KAFKA_DELETE_TOPICS, version);
    if (rc)
        return rc;
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->responses_count);
    for (int32_t i = 0; i < m->responses_count; i++) {
        kp_write_string(w, m->responses[i].name);
        kp_write_i16(w, m->responses[i].error_code);
    }
    return w->err;
}

/* ---- DescribeConfigs ---- */

int kmsg_describe_configs_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                         struct kmsg_describe_configs_request *out)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_CONFIGS, version);
    if (rc)
        return rc;
    out->resources_count = kp_read_array_len(r, 1 + 2 + 4);
    out->resources = kp_arena_array(r, a, out->resources_count, sizeof *out->resources);
    for (int32_t i = 0; i < out->resources_count && !r->err; i++) {
        struct kmsg_describe_configs_resource *res = &out->resources[i];
        res->resource_type = kp_read_i8(r);
        res->resource_name = kp_read_string(r);
        res->configuration_keys_count = kp_read_nullable_array_len(r, 2);
        res->configuration_keys =
            kp_arena_array(r, a, res->configuration_keys_count, sizeof *res->configuration_keys);
        for (int32_t j = 0; j < res->configuration_keys_count && !r->err; j++)
            res->configuration_keys[j] = kp_read_string(r);
    }
    out->include_synonyms = version >= 1 ? kp_read_bool(r) : false;
    if (r->err)
        out->resources_count = 0;
    return kmsg_finish(r);
}

int kmsg_describe_configs_response_encode(struct kp_writer *w, int16_t version,
                                          const struct kmsg_describe_configs_response *m)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_CONFIGS, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->results_count);
    for (int32_t i = 0; i < m->results_count; i++) {
        const struct kmsg_describe_configs_result *res = &m->results[i];
        kp_write_i16(w, res->error_code);
        kp_write_nullable_string(w, res->error_message);
        kp_write_i8(w, res->resource_type);
        kp_write_string(w, res->resource_name);
        kp_write_array_len(w, res->configs_count);
        for (int32_t j = 0; j < res->configs_count; j++) {
            const struct kmsg_describe_configs_entry *c = &res->configs[j];
            kp_write_string(w, c->name);
            kp_write_nullable_string(w, c->value);
            kp_write_bool(w, c->read_only);
            if (version == 0)
                kp_write_bool(w, c->is_default);
            else
                kp_write_i8(w, c->config_source);
            kp_write_bool(w, c->is_sensitive);
            if (version >= 1) {
                kp_write_array_len(w, c->synonyms_count);
                for (int32_t k = 0; k < c->synonyms_count; k++) {
                    kp_write_string(w, c->synonyms[k].name);
                    kp_write_nullable_string(w, c->synonyms[k].value);
                    kp_write_i8(w, c->synonyms[k].source);
                }
            }
        }
    }
    return w->err;
}
