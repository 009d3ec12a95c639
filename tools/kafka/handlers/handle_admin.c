/*
 * handle_admin.c — CreateTopics and DeleteTopics. Topics are created through rt_topic_create
 * (durable before the answer). The engine cannot delete a topic, so DeleteTopics answers
 * TOPIC_DELETION_DISABLED (73) for every existing topic — what a Kafka broker with
 * delete.topic.enable=false answers — and UNKNOWN_TOPIC_OR_PARTITION for the others; it never
 * pretends to have deleted anything.
 *
 * Invariants:
 *   KAD1  Replication factor: 1 or -1 (the broker default, 1) are accepted; anything larger is
 *        INVALID_REPLICATION_FACTOR (38) unless --accept-replication-factor, which creates the
 *        topic with one replica (what Metadata then reports); 0 and below -1 are refused too.
 *   KAD2  validate_only checks the topic as a create would and creates nothing.
 *   KAD3  Topic configs in the request are not applied (the engine's are per engine): a create
 *        carrying any is answered INVALID_CONFIG and nothing is created — never silently
 *        ignored.
 */
#include <stdio.h>
#include <string.h>

#include "tools/kafka/handlers/handle.h"

static int16_t create_one(struct kafka_slot *s, const struct kmsg_create_topics_topic *t,
                          bool validate_only, const char **message)
{
    struct kafka_server *srv = s->server;
    char name[RT_TOPIC_NAME_MAX + 1];
    if (!kafka_topic_name(t->name, name)) {
        *message = "topic names are 1-249 characters of [a-zA-Z0-9._-]";
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    }
    int32_t partitions = t->num_partitions;
    if (t->assignments_count > 0) {
        if (partitions != -1) {
            *message = "both num_partitions and assignments given";
            return KAFKA_INVALID_REQUEST;
        }
        for (int32_t i = 0; i < t->assignments_count; i++) {
            const struct kmsg_create_topics_assignment *a = &t->assignments[i];
            if (a->partition_index != i || a->broker_ids_count != 1 ||
                a->broker_ids[0] != srv->opts.broker_id) {
                *message = "assignments must name partitions 0..n-1 on this broker alone";
                return KAFKA_INVALID_REPLICA_ASSIGNMENT;
            }
        }
        partitions = t->assignments_count;
    }
    if (partitions == -1)
        partitions = (int32_t)srv->opts.num_partitions;
    if (partitions <= 0) {
        *message = "the number of partitions must be at least 1";
        return KAFKA_INVALID_PARTITIONS;
    }
    int16_t rf = t->replication_factor;
    if (t->assignments_count > 0)
        rf = 1;
    if (rf == 0 || rf < -1) {
        *message = "the replication factor must be 1 (or -1 for the default)";
        return KAFKA_INVALID_REPLICATION_FACTOR;
    }
    if (rf > 1 && !srv->opts.accept_replication_factor) {
        *message = "this is a single broker: replication factor 1 only (start the server with "
                   "--accept-replication-factor to accept and report 1)";
        return KAFKA_INVALID_REPLICATION_FACTOR;
    }
    if (t->configs_count > 0) {
        *message = "topic configs are not supported: the engine's options apply to every topic";
        return KAFKA_INVALID_CONFIG;
    }
    if (strncmp(name, "__", 2) == 0) {
        *message = "names beginning with \"__\" are the broker's internal topics";
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    }
    uint32_t existing = 0;
    if (rt_topic_describe(srv->engine, name, &existing) == 0) {
        *message = "topic already exists";
        return KAFKA_TOPIC_ALREADY_EXISTS;
    }
    if (validate_only)
        return KAFKA_NONE;
    int rc = rt_topic_create(srv->engine, name, (uint32_t)partitions);
    switch (rc) {
    case 0:
        return KAFKA_NONE;
    case RT_E_TOPIC_ALREADY_EXISTS:
        *message = "topic already exists";
        return KAFKA_TOPIC_ALREADY_EXISTS;
    case RT_E_INVALID_TOPIC:
        *message = "invalid topic name";
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    case RT_E_INVALID_ARGUMENT: /* partitions beyond partitions_max */
        *message = rt_error_detail();
        return KAFKA_INVALID_PARTITIONS;
    case RT_E_TOPICS_FULL: /* topics_max */
        *message = rt_error_detail();
        return KAFKA_POLICY_VIOLATION;
    default:
        *message = rt_error_detail();
        return kafka_error_from_rt(rc);
    }
}

enum net_verdict kafka_handle_create_topics(struct kafka_slot *s)
{
    const struct kmsg_create_topics_request *q = &s->msg.create_topics;
    size_t n = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    if (kafka_resp_reserve(s, n * (sizeof(struct kmsg_create_topics_topic_response) + 512)) != 0)
        return NET_CLOSE;
    struct kmsg_create_topics_topic_response *res = kafka_alloc(s, n, sizeof(*res));
    for (size_t i = 0; i < n && res; i++) {
        const char *message = NULL;
        res[i].name = q->topics[i].name;
        res[i].error_code = create_one(s, &q->topics[i], q->validate_only, &message);
        res[i].error_message = message ? kafka_str_dup(s, message) : (struct kp_str){NULL, -1};
        kafka_count_error(s, res[i].error_code);
    }
    struct kmsg_create_topics_response m = {.topics = res, .topics_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_create_topics_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_delete_topics(struct kafka_slot *s)
{
    const struct kmsg_delete_topics_request *q = &s->msg.delete_topics;
    size_t n = q->topic_names_count > 0 ? (size_t)q->topic_names_count : 0;
    if (kafka_resp_reserve(s, n * sizeof(struct kmsg_delete_topics_topic_response)) != 0)
        return NET_CLOSE;
    struct kmsg_delete_topics_topic_response *res = kafka_alloc(s, n, sizeof(*res));
    for (size_t i = 0; i < n && res; i++) {
        res[i].name = q->topic_names[i];
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t parts = 0;
        if (!kafka_topic_name(q->topic_names[i], name) ||
            rt_topic_describe(s->server->engine, name, &parts) != 0)
            res[i].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        else
            res[i].error_code = KAFKA_TOPIC_DELETION_DISABLED; /* the engine cannot delete */
        kafka_count_error(s, res[i].error_code);
    }
    struct kmsg_delete_topics_response m = {.responses = res,
                                            .responses_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_delete_topics_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
