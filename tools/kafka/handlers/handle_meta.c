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

#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_txn.h"

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
        .host = kp_str_of(srv->advertise_host),
        .port = srv->advertise_port,
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
            uint32_t n = 0;
            int rc =
                kafka_topic_ensure(s, name, q->allow_auto_topic_creation && !t->is_internal, &n);
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
    bool ok = err == KAFKA_NONE;
    struct kmsg_find_coordinator_response m = {
        .error_code = err,
        .error_message = ok ? (struct kp_str){NULL, -1} : kp_str_of("unknown key type"),
        .node_id = ok ? srv->opts.broker_id : -1,
        .host = ok ? kp_str_of(srv->advertise_host) : kp_str_of(""),
        .port = ok ? srv->advertise_port : -1,
    };
    int32_t n = q->coordinator_keys_count > 0 ? q->coordinator_keys_count : 0;
    if (n) {
        if (kafka_resp_reserve(s, (size_t)n * sizeof(struct kmsg_find_coordinator_coordinator)))
            return NET_CLOSE;
        struct kmsg_find_coordinator_coordinator *c = kafka_alloc(s, (size_t)n, sizeof(*c));
        for (int32_t i = 0; i < n; i++)
            c[i] = (struct kmsg_find_coordinator_coordinator){
                .key = q->coordinator_keys[i],
                .node_id = m.node_id,
                .host = m.host,
                .port = m.port,
                .error_code = err,
                .error_message = ok ? (struct kp_str){NULL, 0} : m.error_message,
            };
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
    if (q->transactional_id.len >= 0) {
        return kafka_handle_init_producer_id_txn(s); /* KM2: handle_txn.c */
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

/* ---- DescribeConfigs ---- */

struct config_kv {
    const char *name;
    char value[32];
};

/* The broker's configs: what `ringtail serve` was started with. */
static size_t broker_configs(const struct kafka_server *srv, struct config_kv *out)
{
    const struct kafka_server_options *o = &srv->opts;
    size_t n = 0;
    out[n].name = "broker.id";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId32, o->broker_id);
    out[n].name = "num.partitions";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", o->num_partitions);
    out[n].name = "auto.create.topics.enable";
    snprintf(out[n++].value, sizeof(out[0].value), "%s", o->auto_create_topics ? "true" : "false");
    out[n].name = "socket.request.max.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", o->net.request_max_bytes);
    out[n].name = "connections.max.idle.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, o->net.idle_max_ms);
    out[n].name = "queued.max.request.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRIu64, o->net.queued_max_bytes);
    out[n].name = "max.connections";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", o->net.connections_max);
    out[n].name = "num.network.threads";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", o->net.threads);
    out[n].name = "transaction.max.timeout.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId32, o->transaction_max_timeout_ms);
    out[n].name = "default.replication.factor";
    snprintf(out[n++].value, sizeof(out[0].value), "1");
    const struct rt_options *e = &o->engine;
    out[n].name = "message.max.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", e->batch_size_max_bytes);
    out[n].name = "log.segment.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRIu64, e->segment_size_bytes);
    out[n].name = "log.retention.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_ms);
    out[n].name = "log.retention.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_bytes);
    return n;
}

/* A topic's configs: the engine's per-partition behaviour (every topic shares them). */
static size_t topic_configs(const struct kafka_server *srv, struct config_kv *out)
{
    const struct rt_options *e = &srv->opts.engine;
    size_t n = 0;
    out[n].name = "segment.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRIu64, e->segment_size_bytes);
    out[n].name = "segment.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->segment_ms);
    out[n].name = "retention.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_ms);
    out[n].name = "retention.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_bytes);
    out[n].name = "max.message.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", e->batch_size_max_bytes);
    out[n].name = "index.interval.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", e->index_interval_bytes);
    out[n].name = "cleanup.policy";
    snprintf(out[n++].value, sizeof(out[0].value), "delete");
    out[n].name = "compression.type";
    snprintf(out[n++].value, sizeof(out[0].value), "producer");
    out[n].name = "message.timestamp.type";
    snprintf(out[n++].value, sizeof(out[0].value), "CreateTime");
    out[n].name = "min.insync.replicas";
    snprintf(out[n++].value, sizeof(out[0].value), "1");
    return n;
}

static bool key_wanted(const struct kmsg_describe_configs_resource *r, const char *name)
{
    if (r->configuration_keys_count < 0)
        return true;
    for (int32_t i = 0; i < r->configuration_keys_count; i++)
        if (kp_str_eq(r->configuration_keys[i], name))
            return true;
    return false;
}

enum net_verdict kafka_handle_describe_configs(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_describe_configs_request *q = &s->msg.describe_configs;
    size_t per = 24 * (sizeof(struct kmsg_describe_configs_entry) + 64);
    if (kafka_resp_reserve(s, (size_t)(q->resources_count > 0 ? q->resources_count : 0) *
                                  (per + sizeof(struct kmsg_describe_configs_result))) != 0)
        return NET_CLOSE;
    struct kmsg_describe_configs_result *res =
        kafka_alloc(s, (size_t)(q->resources_count > 0 ? q->resources_count : 0), sizeof(*res));
    for (int32_t i = 0; i < q->resources_count && res; i++) {
        const struct kmsg_describe_configs_resource *r = &q->resources[i];
        struct kmsg_describe_configs_result *o = &res[i];
        o->resource_type = r->resource_type;
        o->resource_name = r->resource_name;
        o->error_message = (struct kp_str){NULL, -1};
        struct config_kv kv[24];
        size_t n = 0;
        int8_t source = 5; /* DEFAULT_CONFIG */
        if (r->resource_type == KAFKA_RESOURCE_BROKER) {
            char id[16];
            snprintf(id, sizeof(id), "%" PRId32, srv->opts.broker_id);
            if (r->resource_name.len > 0 && !kp_str_eq(r->resource_name, id)) {
                o->error_code = KAFKA_INVALID_REQUEST;
                o->error_message = kp_str_of("no such broker: this is a single-node broker");
                continue;
            }
            n = broker_configs(srv, kv);
            source = 4; /* STATIC_BROKER_CONFIG: from the command line */
        } else if (r->resource_type == KAFKA_RESOURCE_TOPIC) {
            char name[RT_TOPIC_NAME_MAX + 1];
            uint32_t parts = 0;
            if (!kafka_topic_name(r->resource_name, name) ||
                rt_topic_describe(srv->engine, name, &parts) != 0) {
                o->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            n = topic_configs(srv, kv);
        } else {
            o->error_code = KAFKA_INVALID_REQUEST;
            o->error_message = kp_str_of("only BROKER and TOPIC resources have configs here");
            continue;
        }
        struct kmsg_describe_configs_entry *e = kafka_alloc(s, n, sizeof(*e));
        int32_t k = 0;
        for (size_t j = 0; j < n && e; j++) {
            if (!key_wanted(r, kv[j].name))
                continue;
            e[k].name = kp_str_of(kv[j].name);
            e[k].value = kafka_str_dup(s, kv[j].value);
            e[k].read_only = true;
            e[k].is_default = source == 5;
            e[k].config_source = source;
            k++;
        }
        o->configs = e;
        o->configs_count = k;
    }
    int32_t count = res ? q->resources_count : 0;
    for (int32_t i = 0; i < count; i++)
        kafka_count_error(s, res[i].error_code);
    struct kmsg_describe_configs_response m = {.results = res, .results_count = count};
    kafka_response_begin(s);
    kmsg_describe_configs_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
