/*
 * handle_meta.c — the broker's answers about itself: ApiVersions (the api.h table),
 * Metadata (one broker, this one, as leader, replica, ISR and controller of everything; topics
 * auto-created when auto.create.topics.enable), FindCoordinator (this broker for every key),
 * InitProducerId without a transactional id (a fresh producer id from the engine) and
 * DescribeConfigs (the configs this broker really runs with, nothing invented). It reads the
 * engine (topics, producer ids) and never writes records.
 *
 * Invariants:
 *   KM1  Every broker id in an answer is opts.broker_id and every address the advertised one,
 *        so a client never learns of a broker that does not exist (kafkajs sends
 *        InitProducerId to the controller).
 *   KM2  A transactional InitProducerId is handle_txn.c's (the engine's coordinator).
 *   KM3  Topics carry no ids (KIP-516): Metadata v10+ answers every topic id as the zero UUID
 *        (Kafka's "unknown id", which librdkafka and kafkajs accept and ignore), and a topic
 *        asked by id alone (null name) is UNKNOWN_TOPIC_ID with a null name (v12).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/handlers/txn_cluster.h"

enum net_verdict kafka_handle_api_versions(struct kafka_slot *s)
{
    int16_t err = s->api_versions_error;
    struct kmsg_api_version_range table[64];
    struct kmsg_api_versions_response m = {
        .error_code = err,
        .api_keys = table,
        .api_keys_count = (int32_t)kmsg_api_versions_fill(table, 64),
    };
    kafka_count_error(s, err);
    kafka_response_begin(s);
    kmsg_api_versions_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- Metadata ---- */

struct topic_count_ctx {
    uint32_t topics;
    uint64_t partitions;
};

static int count_topic(void *ctx, const char *name, uint32_t partitions)
{
    (void)name;
    struct topic_count_ctx *c = ctx;
    c->topics++;
    c->partitions += partitions;
    return 0;
}

struct topic_fill_ctx {
    struct kafka_slot *s;
    struct kmsg_metadata_topic *topics;
    uint32_t count, max;
};

static void fill_partitions(struct kafka_slot *s, struct kmsg_metadata_topic *t,
                            uint32_t partitions, const int32_t *broker)
{
    struct kmsg_metadata_partition *p = kafka_alloc(s, partitions, sizeof(*p));
    if (!p && partitions > 0) {
        t->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
        return;
    }
    for (uint32_t i = 0; i < partitions; i++) {
        p[i].error_code = KAFKA_NONE;
        p[i].partition_index = (int32_t)i;
        p[i].leader_id = *broker;
        p[i].leader_epoch = -1; /* a single broker keeps no leader epochs */
        p[i].replica_nodes = broker;
        p[i].replica_nodes_count = 1;
        p[i].isr_nodes = broker;
        p[i].isr_nodes_count = 1;
    }
    t->partitions = p;
    t->partitions_count = (int32_t)partitions;
}

static int fill_topic(void *ctx, const char *name, uint32_t partitions)
{
    struct topic_fill_ctx *c = ctx;
    if (c->count >= c->max)
        return 1;
    if (!kafka_authorize_topic(c->s, name, ACL_OP_DESCRIBE))
        return 0; /* KZ2: all topics means those the principal may describe */
    struct kmsg_metadata_topic *t = &c->topics[c->count++];
    t->error_code = KAFKA_NONE;
    t->name = kafka_str_dup(c->s, name);
    t->is_internal = strncmp(name, "__", 2) == 0;
    const int32_t *broker = kafka_alloc(c->s, 1, sizeof(int32_t));
    if (!broker) {
        t->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
        return 0;
    }
    *(int32_t *)broker = c->s->server->opts.broker_id;
    fill_partitions(c->s, t, partitions, broker);
    return 0;
}

enum net_verdict kafka_handle_metadata(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_metadata_request *q = &s->msg.metadata;
    struct metadata_node *mn = kafka_cluster(srv);
    if (mn) /* --voters: the cluster's image answers (handle_cluster.c KCL1) */
        return kafka_handle_metadata_cluster(s, mn);
    /* Size the response arena first (it may not move once arrays are in it). */
    struct topic_count_ctx cnt = {0};
    rt_topic_list(srv->engine, count_topic, &cnt);
    uint64_t want_topics = q->topics_count < 0 ? cnt.topics : (uint64_t)q->topics_count;
    uint64_t parts = q->topics_count < 0 ? cnt.partitions : 0;
    if (q->topics_count >= 0)
        for (int32_t i = 0; i < q->topics_count; i++) {
            char name[RT_TOPIC_NAME_MAX + 1];
            uint32_t n = 0;
            if (kafka_topic_name(q->topics[i].name, name) &&
                rt_topic_describe(srv->engine, name, &n) == 0)
                parts += n;
            else
                parts += srv->opts.num_partitions; /* it may be created below */
        }
    size_t need = (size_t)want_topics * (sizeof(struct kmsg_metadata_topic) + 8 + 256) +
                  (size_t)parts * sizeof(struct kmsg_metadata_partition) + 4096;
    if (kafka_resp_reserve(s, need) != 0)
        return NET_CLOSE;

    struct kmsg_metadata_broker broker = {
        .node_id = srv->opts.broker_id,
        .host = kp_str_of(kafka_advertised_host(srv, s->req)),
        .port = kafka_advertised_port(srv, s->req),
        .rack = {NULL, -1},
    };
    struct kmsg_metadata_topic *topics = kafka_alloc(s, want_topics, sizeof(*topics));
    int32_t topic_count = 0;
    if (q->topics_count < 0) {
        struct topic_fill_ctx c = {.s = s, .topics = topics, .max = (uint32_t)want_topics};
        rt_topic_list(srv->engine, fill_topic, &c);
        topic_count = (int32_t)c.count;
    } else {
        int32_t *bid = kafka_alloc(s, 1, sizeof(int32_t));
        if (bid)
            *bid = srv->opts.broker_id;
        for (int32_t i = 0; i < q->topics_count && topics; i++) {
            struct kmsg_metadata_topic *t = &topics[topic_count++];
            t->name = q->topics[i].name;
            char name[RT_TOPIC_NAME_MAX + 1];
            if (q->topics[i].name.len < 0) { /* v10+: by id alone (KM3) */
                memcpy(t->topic_id, q->topics[i].topic_id, sizeof t->topic_id);
                t->error_code = KAFKA_UNKNOWN_TOPIC_ID;
                continue;
            }
            if (!kafka_topic_name(q->topics[i].name, name)) {
                t->error_code = KAFKA_INVALID_TOPIC_EXCEPTION;
                continue;
            }
            t->is_internal = strncmp(name, "__", 2) == 0;
            if (!kafka_authorize_topic(s, name, ACL_OP_DESCRIBE)) { /* KZ2 */
                t->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            uint32_t n = 0;
            bool create = q->allow_auto_topic_creation && !t->is_internal;
            bool may_create = create && kafka_authorize_create_topic(s, name); /* KZ2 */
            int rc = kafka_topic_ensure(s, name, may_create, &n);
            if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION && create && !may_create &&
                srv->opts.auto_create_topics) {
                t->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* Kafka: CREATE denied */
                continue;
            }
            if (rc) {
                t->error_code = rc == RT_E_INVALID_TOPIC ? KAFKA_INVALID_TOPIC_EXCEPTION
                                                         : kafka_error_from_rt(rc);
                if (rc == RT_E_INTERNAL_TOPIC)
                    t->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (!bid) {
                t->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
                continue;
            }
            fill_partitions(s, t, n, bid);
        }
    }
    for (int32_t i = 0; i < topic_count; i++)
        kafka_count_error(s, topics[i].error_code);
    struct kmsg_metadata_response m = {
        .brokers = &broker,
        .brokers_count = 1,
        .cluster_id = kp_str_of("ringtail"),
        .controller_id = srv->opts.broker_id,
        .topics = topics,
        .topics_count = topic_count,
    };
    kafka_response_begin(s);
    kmsg_metadata_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* This node coordinates every group and transactional id; a key type other than group (0) or
 * transaction (1) is INVALID_REQUEST, as Kafka. v4 (KIP-699) answers each key of the batch. */
enum net_verdict kafka_handle_find_coordinator(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_find_coordinator_request *q = &s->msg.find_coordinator;
    int16_t err = q->key_type == 0 || q->key_type == 1 ? KAFKA_NONE : KAFKA_INVALID_REQUEST;
    /* KZ2: DESCRIBE on the group or transactional id (each key of a v4 batch on its own). */
    uint8_t rtype = q->key_type == 1 ? ACL_RESOURCE_TRANSACTIONAL_ID : ACL_RESOURCE_GROUP;
    int16_t denied = q->key_type == 1 ? KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                                      : KAFKA_GROUP_AUTHORIZATION_FAILED;
    if (err == KAFKA_NONE && s->header.api_version < 4 &&
        !kafka_authorize_str(s, rtype, q->key, ACL_OP_DESCRIBE))
        err = denied;
    bool ok = err == KAFKA_NONE;
    struct kmsg_find_coordinator_response m = {
        .error_code = err,
        .error_message = err != KAFKA_INVALID_REQUEST ? (struct kp_str){NULL, -1}
                                                      : kp_str_of("unknown key type"),
        .node_id = ok ? srv->opts.broker_id : -1,
        .host = ok ? kp_str_of(kafka_advertised_host(srv, s->req)) : kp_str_of(""),
        .port = ok ? kafka_advertised_port(srv, s->req) : -1,
    };
    /* group_cluster.c KGC1: in a cluster a group's coordinator is its partition's leader;
     * txn_cluster.c KTC1: every transactional id's is the leader of `__transaction_state`-0 */
    int32_t n = q->coordinator_keys_count > 0 ? q->coordinator_keys_count : 0;
    /* in a cluster, each key's coordinator host is copied from the image into the arena */
    size_t host_room = kafka_cluster(srv) ? KAFKA_COORDINATOR_HOST_MAX : 0;
    if ((n || host_room) &&
        kafka_resp_reserve(s, (size_t)n * sizeof(struct kmsg_find_coordinator_coordinator) +
                                  (size_t)(n + 1) * host_room))
        return NET_CLOSE;
    if (ok && q->key_type == 0 && s->header.api_version < 4)
        (void)kafka_group_coordinator_find(s, q->key, &m.error_code, &m.node_id, &m.host, &m.port);
    if (ok && q->key_type == 1) /* KTC1: one coordinator for every key */
        (void)kafka_txn_coordinator_find(s, &m.error_code, &m.node_id, &m.host, &m.port);
    if (n) {
        struct kmsg_find_coordinator_coordinator *c = kafka_alloc(s, (size_t)n, sizeof(*c));
        for (int32_t i = 0; c && i < n; i++) {
            bool allowed =
                !ok || kafka_authorize_str(s, rtype, q->coordinator_keys[i], ACL_OP_DESCRIBE);
            c[i] = (struct kmsg_find_coordinator_coordinator){
                .key = q->coordinator_keys[i],
                .node_id = allowed ? m.node_id : -1,
                .host = allowed ? m.host : kp_str_of(""),
                .port = allowed ? m.port : -1,
                .error_code = allowed ? (q->key_type == 1 ? m.error_code : err) : denied,
                .error_message =
                    err != KAFKA_INVALID_REQUEST ? (struct kp_str){NULL, 0} : m.error_message,
            };
            if (allowed && ok && q->key_type == 0) /* KGC1, each key on its own */
                (void)kafka_group_coordinator_find(s, c[i].key, &c[i].error_code, &c[i].node_id,
                                                   &c[i].host, &c[i].port);
        }
        m.coordinators = c;
        m.coordinators_count = n;
    }
    kafka_count_error(s, err);
    kafka_response_begin(s);
    kmsg_find_coordinator_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_init_producer_id(struct kafka_slot *s)
{
    const struct kmsg_init_producer_id_request *q = &s->msg.init_producer_id;
    struct kmsg_init_producer_id_response m = {.producer_id = -1, .producer_epoch = -1};
    if (q->transactional_id.len >= 0 &&
        !kafka_authorize_str(s, ACL_RESOURCE_TRANSACTIONAL_ID, q->transactional_id, ACL_OP_WRITE)) {
        m.error_code = KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; /* KZ2 */
    } else if (q->transactional_id.len >= 0) {
        return kafka_handle_init_producer_id_txn(s); /* KM2: handle_txn.c */
    } else if (!kafka_authorize_idempotent(s)) {
        m.error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED; /* KZ2: IDEMPOTENT_WRITE */
    } else if (kafka_cluster(s->server)) {                 /* handle_cluster.c KCL3 */
        m.error_code = kafka_cluster_producer_id(s, kafka_cluster(s->server), &m.producer_id,
                                                 &m.producer_epoch);
        if (m.error_code != KAFKA_NONE)
            m.producer_id = -1, m.producer_epoch = -1;
    } else {
        int64_t id = -1;
        int16_t epoch = -1;
        int rc = rt_producer_id_allocate(s->server->engine, &id, &epoch);
        if (rc) {
            m.error_code = kafka_error_from_rt(rc);
            fprintf(stderr, "ringtail serve: InitProducerId: %s: %s\n", rt_strerror(rc),
                    rt_error_detail());
        } else {
            m.producer_id = id;
            m.producer_epoch = epoch;
        }
    }
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_init_producer_id_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
