/*
 * handle_admin.c — topic administration: CreateTopics (with configs), DeleteTopics, CreatePartitions,
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs. Topics and their configs go
 * through the engine (rt_topic_create_with_configs, rt_topic_config_alter: durable before the
 * answer), a cluster's topic configs through the active controller's metadata log (KAD11);
 * the broker's own configs are what `ringtail serve` was started with, read-only, as a Kafka
 * broker's static configs are, but for Kafka's dynamic broker configs (KAD10,
 * config/broker_config.h). It never decodes or encodes by hand (kmsg_admin.c).
 * DeleteTopics deletes through rt_topic_delete (durable before the answer; the files go in the
 * background); CreatePartitions adds through rt_topic_add_partitions; DeleteRecords moves log
 * start offsets through rt_partition_delete_records.
 *
 * Invariants:
 *   KAD1  Replication factor: 1 or -1 (the broker default, 1) are accepted; anything larger is
 *        INVALID_REPLICATION_FACTOR (38) unless --accept-replication-factor, which creates the
 *        topic with one replica (what Metadata then reports); 0 and below -1 are refused too.
 *   KAD2  validate_only checks the topic as a create would and creates nothing.
 *   KAD3  Topic configs in a create are checked by the engine's rule for each (Kafka's names
 *        and validators, ringtail.h "Topic configs"): one it refuses is INVALID_CONFIG (40) with
 *        the engine's detail naming the key, and nothing is created; a null value is
 *        INVALID_CONFIG too (Kafka: "Null value not supported for topic configs").
 *   KAD4  DescribeConfigs reports a topic's every config with its source: DYNAMIC_TOPIC_CONFIG
 *        (1) for the topic's override, DYNAMIC_BROKER_CONFIG (2) / DYNAMIC_DEFAULT_BROKER_CONFIG
 *        (3) where a dynamic broker log config gives it (this broker's level / the cluster
 *        default: BC5, the engine's RT_CONFIG_DYNAMIC_DEFAULT), STATIC_BROKER_CONFIG (4)
 *        where the engine option behind it was set at start, DEFAULT_CONFIG (5) otherwise;
 *        synonyms (v1+) list the topic's override and the broker synonym's dynamic levels
 *        that are set (Kafka's names: log.retention.ms for retention.ms, ...), highest first.
 *        Topic configs are not read-only; the broker's are (it cannot change them while
 *        running).
 *   KAD5  AlterConfigs replaces a topic's overrides, IncrementalAlterConfigs sets, deletes,
 *        appends to or subtracts from single ones (APPEND/SUBTRACT only on list configs, else
 *        INVALID_CONFIG); every entry of a resource is checked before any is applied; a key
 *        given twice is INVALID_REQUEST; validate_only changes nothing. A broker resource is
 *        KAD10's; internal topics' configs are the broker's (INVALID_REQUEST).
 *   KAD6  DeleteTopics answers NONE once the engine's deletion is durable, UNKNOWN_TOPIC_OR_
 *        PARTITION for a topic it does not have, INVALID_REQUEST for an internal topic.
 *   KAD7  CreatePartitions raises a topic's count through rt_topic_add_partitions (durable
 *        before the answer): a count not above the current one or beyond partitions_max is
 *        INVALID_PARTITIONS (37), assignments that do not name this broker alone for each new
 *        partition INVALID_REPLICA_ASSIGNMENT (39), a topic named twice INVALID_REQUEST,
 *        validate_only changes nothing.
 *   KAD8  DeleteRecords answers each partition once its new log start is durable
 *        (rt_partition_delete_records) with the low watermark (the log start after the call;
 *        offset -1 is the high watermark, one at or below the log start changes nothing);
 *        an offset above the high watermark or below -1 is OFFSET_OUT_OF_RANGE, an unknown
 *        topic or partition UNKNOWN_TOPIC_OR_PARTITION, an internal topic
 *        INVALID_TOPIC_EXCEPTION (17), as Kafka answers; low_watermark is -1 with any error.
 *        timeout_ms is not waited on: there is no replica to wait for.
 *   KAD9  A deleted topic's committed offsets are deleted from every group, as Kafka's group
 *        coordinator does for deleted partitions (GroupCoordinator.handleDeletedPartitions):
 *        after rt_topic_delete is durable and before the answer, one rt_group_delete_offsets
 *        per group that had any, so a topic created again under the name starts with no
 *        committed offsets. A failure there is logged and the answer stays NONE (the topic is
 *        gone; a crash in between leaves the old offsets, as the engine keeps them).
 *   KAD10 Dynamic broker configs, as Kafka's DynamicBrokerConfig: AlterConfigs (replacing the
 *        level's set) and IncrementalAlterConfigs (SET, DELETE, APPEND/SUBTRACT on lists) on a
 *        BROKER resource named this broker's id (its own level) or "" (the cluster default)
 *        take the names of config/broker_config.h's table (BC1-BC3); any other name is
 *        INVALID_REQUEST "Cannot update these configs dynamically" (Kafka's answer for a
 *        read-only config), a bad value INVALID_REQUEST naming it. The new set is durable in
 *        DIR/broker-configs.meta before the answer (BS2) and survives restarts.
 *        DescribeConfigs of the broker's id reports each config from its highest level
 *        (DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3, STATIC_BROKER_CONFIG 4)
 *        with the lower levels as synonyms, read-only only for configs that are not
 *        dynamic; of "" only the dynamic defaults. The DynamicLogConfig names are applied as
 *        the engine's topic defaults (BC5) after the set is durable and at start; the others
 *        are stored-only (BC4): reported and kept, not acted on.
 *   KAD11 In a cluster (`--voters`) a topic's configs are the metadata image's: its existence
 *        and overrides are read there (DescribeConfigs: the engine's rows where the node holds
 *        the topic, the image's overrides put in as DYNAMIC_TOPIC_CONFIG; the overrides alone
 *        where it holds none), an alter is checked as KAD5 says and then carried out by the
 *        active controller as CONFIG records (controller_admin.h CA3), never on this node's
 *        engine alone; a node that is not the controller forwards its TOPIC resources to it in
 *        one request and relays the answers (CA5). BROKER resources stay KAD10's, per node.
 *   KAD12 In a cluster, CreateTopics, CreatePartitions, DeleteTopics (topics named; one named
 *        by id only is answered here) and the TOPIC resources of AlterConfigs /
 *        IncrementalAlterConfigs on a node that is not the active controller are forwarded to
 *        it (KIP-590), after this node's authorization, as one request of the same API and
 *        version with validate_only kept, by one helper (`forward`), and its answers relayed
 *        entry by entry; no controller known: NOT_CONTROLLER (41), no answer:
 *        REQUEST_TIMED_OUT. A request from a peer (client id "ringtail") is never forwarded
 *        again (CA5) but answered here: on a node that is not the controller that is
 *        NOT_CONTROLLER, so a client taking that id skips neither authorization nor anything
 *        else. A single broker (no --voters) never forwards.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/controller_admin.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/config/broker_config.h"
#include "tools/kafka/config/broker_config_store.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

/* ---- forwarding to the active controller (KAD12, controller_admin.h CA5) ---- */

typedef int (*forward_decode_fn)(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                 void *out);

/* KAD12: whether this request's cluster entries go to the active controller: in a cluster, on a
 * node that is not it, unless a peer sent it (client id "ringtail": forwarded at most once, CA5;
 * answered here, so NOT_CONTROLLER, never authorized less). */
static bool forwards(const struct kafka_slot *s, struct metadata_node *cluster)
{
    return cluster && !metadata_node_is_controller(cluster) &&
           !kp_str_eq(s->header.client_id, "ringtail");
}

/* A forwarded answer's memory (malloc'ed), freed by forwarded_free. */
struct forwarded {
    uint8_t *frame, *arena;
};

static void forwarded_free(struct forwarded *f)
{
    free(f->arena);
    free(f->frame);
}

/* A string of a forwarded answer copied into the response arena (null stays null). */
static struct kp_str forwarded_str(struct kafka_slot *s, struct kp_str x)
{
    if (!x.ptr || x.len < 0)
        return (struct kp_str){NULL, -1};
    char *m = kafka_alloc(s, (size_t)x.len + 1, 1);
    if (!m)
        return (struct kp_str){"", 0};
    memcpy(m, x.ptr, (size_t)x.len);
    return (struct kp_str){m, x.len};
}

/* KAD12: req (the entries to forward, `want` of them) sent with this request's API and version
 * to the active controller (CA5). -1 once the answer decoded into *out (valid until
 * forwarded_free) with `want` entries in *count; else the error every forwarded entry gets,
 * with *message: NOT_CONTROLLER when no controller is known, REQUEST_TIMED_OUT when it did
 * not answer. */
static int16_t forward(struct kafka_slot *s, struct metadata_node *cluster,
                       kclient_encode_fn encode, const void *req, forward_decode_fn decode,
                       void *out, const int32_t *count, size_t want, struct forwarded *f,
                       const char **message)
{
    *f = (struct forwarded){0};
    size_t frame_len = 0, body_at = 0;
    int rc = ctl_forward(cluster, s->header.api_key, s->header.api_version, encode, req, &f->frame,
                         &frame_len, &body_at);
    if (rc) {
        *message = rc == -ENOTCONN ? "no active controller known to forward to"
                                   : "the active controller did not answer";
        return rc == -ENOTCONN ? KAFKA_NOT_CONTROLLER : KAFKA_REQUEST_TIMED_OUT;
    }
    size_t arena_len = 8 * frame_len + 4096; /* decoded arrays outgrow their bytes */
    if (!(f->arena = malloc(arena_len))) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    struct kp_arena a;
    kp_arena_init(&a, f->arena, arena_len);
    struct kp_reader rd;
    kp_reader_init(&rd, f->frame + body_at, frame_len - body_at);
    if (decode(&rd, s->header.api_version, &a, out) != 0 || *count != (int32_t)want) {
        *message = "the active controller's answer did not decode";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    return -1;
}

/* The codecs of the forwarded APIs as forward() takes them. */
#define FORWARD_CODEC(api)                                                                         \
    static int encode_##api(struct kp_writer *w, int16_t v, const void *m)                         \
    {                                                                                              \
        return kmsg_##api##_request_encode(w, v, m);                                               \
    }                                                                                              \
    static int decode_##api(struct kp_reader *r, int16_t v, struct kp_arena *a, void *out)         \
    {                                                                                              \
        return kmsg_##api##_response_decode(r, v, a, out);                                         \
    }
FORWARD_CODEC(create_topics)
FORWARD_CODEC(delete_topics)
FORWARD_CODEC(create_partitions)
FORWARD_CODEC(alter_configs)
FORWARD_CODEC(incremental_alter_configs)

/* A forwarded API: its codecs, and its answer's entry (the same struct as the handler's result
 * entry): size, where error_code and error_message are, and what else to copy (NULL: none). */
struct forward_api {
    kclient_encode_fn encode;
    forward_decode_fn decode;
    size_t entry_size, code_at, message_at;
    void (*more)(struct kafka_slot *s, void *to, const void *from);
};

/* The entries fwd[0..nf) of a request's array (elem_size each), copied for the forwarded
 * request. */
static void *forward_pick(struct kafka_slot *s, const void *entries, size_t elem_size,
                          const size_t *fwd, size_t nf)
{
    uint8_t *out = kafka_alloc(s, nf, elem_size);
    for (size_t j = 0; j < nf && out; j++)
        memcpy(out + j * elem_size, (const uint8_t *)entries + fwd[j] * elem_size, elem_size);
    return out;
}

/* KAD12: fq (the entries fwd[0..nf) of the client's request; NULL: out of memory) forwarded and
 * each answer entry copied into results[fwd[j]] (its error, its message, api->more), or, with
 * no answer, forward()'s error into every one; each counted. `out` is the decoded response,
 * `count` and `entries` its entry count and entries pointer fields. */
static void forward_entries(struct kafka_slot *s, struct metadata_node *cluster,
                            const struct forward_api *api, const void *fq, void *out,
                            const int32_t *count, const void *entries, void *results,
                            const size_t *fwd, size_t nf)
{
    struct forwarded f = {0};
    const char *message = "out of memory";
    int16_t err =
        fq ? forward(s, cluster, api->encode, fq, api->decode, out, count, nf, &f, &message)
           : KAFKA_UNKNOWN_SERVER_ERROR;
    const uint8_t *answers = NULL;
    memcpy(&answers, entries, sizeof answers); /* the decoded array */
    for (size_t j = 0; j < nf; j++) {
        uint8_t *to = (uint8_t *)results + fwd[j] * api->entry_size;
        const uint8_t *from = err >= 0 ? NULL : answers + j * api->entry_size;
        int16_t code = err;
        struct kp_str m = from ? (struct kp_str){NULL, -1} : kafka_str_dup(s, message);
        if (from) {
            struct kp_str x;
            memcpy(&code, from + api->code_at, sizeof code);
            memcpy(&x, from + api->message_at, sizeof x);
            m = forwarded_str(s, x);
            if (api->more)
                api->more(s, to, from);
        }
        memcpy(to + api->code_at, &code, sizeof code);
        memcpy(to + api->message_at, &m, sizeof m);
        kafka_count_error(s, code);
    }
    forwarded_free(&f);
}

#define FORWARD_API(api, entry, more)                                                              \
    {                                                                                              \
        encode_##api, decode_##api, sizeof(struct entry), offsetof(struct entry, error_code),      \
            offsetof(struct entry, error_message), more                                            \
    }

/* CreateTopics' answer beyond the error (v5+: partitions, replication factor, configs). */
static void create_topics_more(struct kafka_slot *s, void *to, const void *from)
{
    struct kmsg_create_topics_topic_response *o = to;
    const struct kmsg_create_topics_topic_response *x = from;
    memcpy(o->topic_id, x->topic_id, sizeof o->topic_id);
    o->topic_config_error_code = x->topic_config_error_code;
    o->num_partitions = x->num_partitions;
    o->replication_factor = x->replication_factor;
    size_t nc = x->configs_count > 0 ? (size_t)x->configs_count : 0;
    struct kmsg_create_topics_config_result *c = kafka_alloc(s, nc, sizeof(*c));
    for (size_t k = 0; k < nc && c; k++)
        c[k] = (struct kmsg_create_topics_config_result){
            .name = forwarded_str(s, x->configs[k].name),
            .value = forwarded_str(s, x->configs[k].value),
            .read_only = x->configs[k].read_only,
            .config_source = x->configs[k].config_source,
            .is_sensitive = x->configs[k].is_sensitive};
    o->configs = c;
    o->configs_count = c ? (int32_t)nc : x->configs_count < 0 ? -1 : 0;
}

static const struct forward_api fwd_create_topics =
    FORWARD_API(create_topics, kmsg_create_topics_topic_response, create_topics_more);
static const struct forward_api fwd_delete_topics =
    FORWARD_API(delete_topics, kmsg_delete_topics_topic_response, NULL);
static const struct forward_api fwd_create_partitions =
    FORWARD_API(create_partitions, kmsg_create_partitions_result, NULL);
static const struct forward_api fwd_alter_configs =
    FORWARD_API(alter_configs, kmsg_alter_configs_resource_response, NULL);
static const struct forward_api fwd_incremental_alter_configs =
    FORWARD_API(incremental_alter_configs, kmsg_alter_configs_resource_response, NULL);

int16_t kafka_create_topic_configs(struct kafka_slot *s, const struct kmsg_create_topics_topic *t,
                                   struct rt_topic_config **out, size_t *count,
                                   const char **message)
{
    struct rt_topic_config *configs = NULL;
    size_t configs_count = t->configs_count > 0 ? (size_t)t->configs_count : 0;
    *out = NULL;
    *count = 0;
    if (configs_count > 0 && !(configs = kafka_alloc(s, configs_count, sizeof(*configs)))) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    for (size_t i = 0; i < configs_count; i++) { /* KAD3 */
        const struct kmsg_create_topics_config *c = &t->configs[i];
        char key[256];
        if (c->name.len < 0 || c->name.len >= (int32_t)sizeof(key)) {
            *message = "invalid config name";
            return KAFKA_INVALID_CONFIG;
        }
        memcpy(key, c->name.ptr, (size_t)c->name.len);
        key[c->name.len] = 0;
        if (c->value.len < 0) {
            char m[320];
            snprintf(m, sizeof(m), "Null value not supported for topic configs: %s", key);
            *message = kafka_str_dup(s, m).ptr;
            return KAFKA_INVALID_CONFIG;
        }
        struct kp_str k = kafka_str_dup(s, key);
        char *v = kafka_alloc(s, (size_t)c->value.len + 1, 1);
        if (!v || !k.ptr) {
            *message = "out of memory";
            return KAFKA_UNKNOWN_SERVER_ERROR;
        }
        memcpy(v, c->value.ptr, (size_t)c->value.len);
        v[c->value.len] = 0;
        if (strlen(v) != (size_t)c->value.len || rt_topic_config_check(k.ptr, v) != 0) {
            *message = kafka_str_dup(s, strlen(v) != (size_t)c->value.len
                                            ? "a config value holds a NUL byte"
                                            : rt_error_detail())
                           .ptr;
            return KAFKA_INVALID_CONFIG;
        }
        configs[i] = (struct rt_topic_config){k.ptr, v};
    }
    *out = configs;
    *count = configs_count;
    return KAFKA_NONE;
}

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
    struct rt_topic_config *configs = NULL;
    size_t configs_count = 0;
    int16_t err = kafka_create_topic_configs(s, t, &configs, &configs_count, message);
    if (err)
        return err;
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
    int rc = rt_topic_create_with_configs(srv->engine, name, (uint32_t)partitions, configs,
                                          configs_count);
    switch (rc) {
    case 0:
        return KAFKA_NONE;
    case RT_E_INVALID_CONFIG:
        *message = kafka_str_dup(s, rt_error_detail()).ptr;
        return KAFKA_INVALID_CONFIG;
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

/* ---- a deleted topic's committed offsets (KAD9) ---- */

#define FORGET_SLICE 256 /* partitions per rt_group_delete_offsets call */

struct name_list {
    char **names;
    size_t count, cap;
    const char *topic; /* the partitions list: this topic's only */
    struct rt_topic_partition *parts;
    size_t parts_count, parts_cap;
};

/* Under the group manager's lock: only copies (rt_group_list's rule). */
static int group_collect(void *ctx, const char *group)
{
    struct name_list *l = ctx;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **n = realloc(l->names, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        l->names = n;
        l->cap = cap;
    }
    if (!(l->names[l->count] = strdup(group)))
        return -ENOMEM;
    l->count++;
    return 0;
}

static int partition_collect(void *ctx, const char *topic, uint32_t partition,
                             const struct rt_committed_offset *offset)
{
    (void)offset;
    struct name_list *l = ctx;
    if (strcmp(topic, l->topic) != 0)
        return 0;
    if (l->parts_count == l->parts_cap) {
        size_t cap = l->parts_cap ? l->parts_cap * 2 : 16;
        struct rt_topic_partition *n = realloc(l->parts, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        l->parts = n;
        l->parts_cap = cap;
    }
    l->parts[l->parts_count++] =
        (struct rt_topic_partition){.topic = l->topic, .partition = partition};
    return 0;
}

static void forget_offsets(rt_engine *e, const char *topic)
{
    struct name_list l = {.topic = topic};
    int rc = rt_group_list(e, group_collect, &l);
    for (size_t g = 0; rc == 0 && g < l.count; g++) {
        l.parts_count = 0;
        rc = rt_group_list_offsets(e, l.names[g], partition_collect, &l);
        /* In slices: one call's tombstones must fit one batch (RT_E_RECORD_TOO_LARGE). */
        for (size_t at = 0; rc == 0 && at < l.parts_count; at += FORGET_SLICE)
            rc = rt_group_delete_offsets(
                e, l.names[g], l.parts + at,
                l.parts_count - at < FORGET_SLICE ? l.parts_count - at : FORGET_SLICE, NULL);
        if (rc)
            fprintf(stderr,
                    "ringtail serve: DeleteTopics '%s': its committed offsets in group '%s' "
                    "were not deleted: %s: %s\n",
                    topic, l.names[g], rt_strerror(rc), rt_error_detail());
        rc = 0; /* the other groups still get theirs deleted */
    }
    if (rc)
        fprintf(stderr, "ringtail serve: DeleteTopics '%s': listing groups failed: %s\n", topic,
                rt_strerror(rc));
    for (size_t g = 0; g < l.count; g++)
        free(l.names[g]);
    free(l.names);
    free(l.parts);
}

enum net_verdict kafka_handle_delete_topics(struct kafka_slot *s)
{
    const struct kmsg_delete_topics_request *q = &s->msg.delete_topics;
    size_t n = q->topic_names_count > 0 ? (size_t)q->topic_names_count : 0;
    if (kafka_resp_reserve(s, n * (sizeof(struct kmsg_delete_topics_topic_response) + 512 +
                                   sizeof(size_t) + sizeof(struct kp_str) +
                                   sizeof(struct kmsg_delete_topics_state))) != 0)
        return NET_CLOSE;
    struct kmsg_delete_topics_topic_response *res = kafka_alloc(s, n, sizeof(*res));
    struct metadata_node *cluster = kafka_cluster(s->server);
    size_t *fwd = forwards(s, cluster) && n ? kafka_alloc(s, n, sizeof(size_t)) : NULL;
    size_t nf = 0;
    for (size_t i = 0; i < n && res; i++) {
        res[i].name = q->topic_names[i];
        char name[RT_TOPIC_NAME_MAX + 1];
        if (!kafka_authorize_str(s, ACL_RESOURCE_TOPIC, q->topic_names[i], ACL_OP_DELETE)) {
            res[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2 */
            kafka_count_error(s, res[i].error_code);
            continue;
        }
        if (fwd && q->topic_names[i].ptr && q->topic_names[i].len > 0) { /* KAD12 */
            fwd[nf++] = i;
            continue;
        }
        if (cluster) { /* handle_cluster.c KCL2: through the controller */
            const char *message = NULL;
            res[i].error_code = kafka_cluster_delete_topic(s, cluster, q->topic_names[i], &message);
            res[i].error_message = message ? kafka_str_dup(s, message) : (struct kp_str){NULL, -1};
            kafka_count_error(s, res[i].error_code);
            continue;
        }
        int rc = kafka_topic_name(q->topic_names[i], name)
                     ? rt_topic_delete(s->server->engine, name)
                     : RT_E_UNKNOWN_TOPIC_OR_PARTITION;
        switch (rc) { /* KAD6 */
        case 0:
            res[i].error_code = KAFKA_NONE;
            forget_offsets(s->server->engine, name); /* KAD9 */
            break;
        case RT_E_UNKNOWN_TOPIC_OR_PARTITION:
            res[i].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            break;
        case RT_E_INTERNAL_TOPIC:
            res[i].error_code = KAFKA_INVALID_REQUEST;
            res[i].error_message = kp_str_of("the broker's internal topics cannot be deleted");
            break;
        default:
            res[i].error_code = kafka_error_from_rt(rc);
            res[i].error_message = kafka_str_dup(s, rt_error_detail());
            break;
        }
        kafka_count_error(s, res[i].error_code);
    }
    if (res && nf) { /* KAD12: by name (v6 writes topics[]) */
        struct kp_str *names = forward_pick(s, q->topic_names, sizeof(*names), fwd, nf);
        struct kmsg_delete_topics_state *ts = kafka_alloc(s, nf, sizeof(*ts));
        for (size_t j = 0; j < nf && names && ts; j++)
            ts[j] = (struct kmsg_delete_topics_state){.name = names[j]};
        struct kmsg_delete_topics_request fq = *q; /* the timeout kept */
        fq.topic_names = names;
        fq.topic_names_count = fq.topics_count = (int32_t)nf;
        fq.topics = ts;
        struct kmsg_delete_topics_response r = {0};
        forward_entries(s, cluster, &fwd_delete_topics, names && ts ? &fq : NULL, &r,
                        &r.responses_count, &r.responses, res, fwd, nf);
    }
    struct kmsg_delete_topics_response m = {.responses = res,
                                            .responses_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_delete_topics_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- topic configs as Kafka reports them (KAD4) ---- */

#define SOURCE_DYNAMIC_TOPIC          1
#define SOURCE_DYNAMIC_BROKER         2
#define SOURCE_DYNAMIC_DEFAULT_BROKER 3
#define SOURCE_STATIC_BROKER          4
#define SOURCE_DEFAULT                5

struct config_row {
    const char *name;
    const char *value;
    int8_t source;
};

struct config_rows {
    struct kafka_slot *s;
    struct config_row *rows;
    size_t count, cap;
};

static int config_collect(void *ctx, const char *name, const char *value,
                          enum rt_config_source source, bool honoured)
{
    (void)honoured;
    struct config_rows *c = ctx;
    if (c->count == c->cap)
        return 0;
    struct config_row *r = &c->rows[c->count++];
    r->name = kafka_str_dup(c->s, name).ptr;
    r->value = kafka_str_dup(c->s, value).ptr;
    r->source = source == RT_CONFIG_TOPIC    ? SOURCE_DYNAMIC_TOPIC
                : source == RT_CONFIG_ENGINE ? SOURCE_STATIC_BROKER
                                             : SOURCE_DEFAULT;
    if (source == RT_CONFIG_DYNAMIC_DEFAULT) { /* BC5: this broker's level or the cluster's */
        struct broker_config *d = c->s->server->dynamic;
        int k = broker_config_find_topic(name);
        pthread_mutex_lock(&d->lock);
        r->source = k >= 0 && d->set.value[BCL_BROKER][k] ? SOURCE_DYNAMIC_BROKER
                                                          : SOURCE_DYNAMIC_DEFAULT_BROKER;
        pthread_mutex_unlock(&d->lock);
    }
    return 0;
}

#define TOPIC_CONFIGS_MAX 64 /* Kafka's topic config names: 29 today */

/* The topic's every config (rt_topic_config_get) into the response arena. */
static int topic_config_rows(struct kafka_slot *s, const char *topic, struct config_rows *out)
{
    out->s = s;
    out->count = 0;
    out->cap = TOPIC_CONFIGS_MAX;
    out->rows = kafka_alloc(s, out->cap, sizeof(*out->rows));
    if (!out->rows)
        return -ENOMEM;
    return rt_topic_config_get(s->server->engine, topic, config_collect, out);
}

/* KAD11: a cluster topic's rows from the image: the engine's rows (defaults, broker levels)
 * where this node holds the topic, each override the image holds put in as DYNAMIC_TOPIC; a
 * node without a replica lists the image's overrides alone. -ENOENT: not in the image. */
struct image_rows {
    struct kafka_slot *s;
    const char **keys, **values;
    size_t n;
};

static void image_row(void *ctx, const char *key, const char *value)
{
    struct image_rows *r = ctx;
    if (r->n == TOPIC_CONFIGS_MAX || !r->keys || !r->values)
        return;
    r->keys[r->n] = kafka_str_dup(r->s, key).ptr;
    r->values[r->n] = kafka_str_dup(r->s, value).ptr;
    if (r->keys[r->n] && r->values[r->n])
        r->n++;
}

static int cluster_topic_rows(struct kafka_slot *s, struct metadata_node *cluster,
                              const char *topic, struct config_rows *out)
{
    struct image_rows ir = {.s = s,
                            .keys = kafka_alloc(s, TOPIC_CONFIGS_MAX, sizeof(char *)),
                            .values = kafka_alloc(s, TOPIC_CONFIGS_MAX, sizeof(char *))};
    if (metadata_node_topic_configs(cluster, topic, image_row, &ir) != 0)
        return -ENOENT;
    uint32_t parts = 0;
    if (rt_topic_describe(s->server->engine, topic, &parts) == 0 &&
        topic_config_rows(s, topic, out) == 0) {
        for (size_t j = 0; j < out->count; j++)
            for (size_t k = 0; k < ir.n; k++)
                if (strcmp(out->rows[j].name, ir.keys[k]) == 0) {
                    out->rows[j].value = ir.values[k];
                    out->rows[j].source = SOURCE_DYNAMIC_TOPIC;
                }
        return 0;
    }
    out->s = s;
    out->count = 0;
    out->rows = kafka_alloc(s, ir.n ? ir.n : 1, sizeof(*out->rows));
    for (size_t k = 0; k < ir.n && out->rows; k++)
        out->rows[out->count++] =
            (struct config_row){ir.keys[k], ir.values[k], SOURCE_DYNAMIC_TOPIC};
    return 0;
}

enum net_verdict kafka_handle_create_topics(struct kafka_slot *s)
{
    const struct kmsg_create_topics_request *q = &s->msg.create_topics;
    size_t n = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    if (kafka_resp_reserve(
            s, n * (sizeof(struct kmsg_create_topics_topic_response) + 512 + sizeof(size_t) +
                    sizeof(struct kmsg_create_topics_topic) +
                    TOPIC_CONFIGS_MAX * (sizeof(struct kmsg_create_topics_config_result) +
                                         sizeof(struct config_row) + 96))) != 0)
        return NET_CLOSE;
    struct kmsg_create_topics_topic_response *res = kafka_alloc(s, n, sizeof(*res));
    struct metadata_node *cluster = kafka_cluster(s->server);
    size_t *fwd = forwards(s, cluster) && n ? kafka_alloc(s, n, sizeof(size_t)) : NULL;
    size_t nf = 0;
    for (size_t i = 0; i < n && res; i++) {
        const char *message = NULL;
        res[i].name = q->topics[i].name;
        char want[RT_TOPIC_NAME_MAX + 1];
        if (kafka_topic_name(q->topics[i].name, want) && !kafka_authorize_create_topic(s, want))
            res[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2: CREATE */
        else if (fwd) {                                           /* KAD12 */
            fwd[nf++] = i;
            continue;
        } else if (cluster) /* handle_cluster.c KCL2 */
            res[i].error_code =
                kafka_cluster_create_topic(s, cluster, &q->topics[i], q->validate_only, &message);
        else
            res[i].error_code = create_one(s, &q->topics[i], q->validate_only, &message);
        res[i].error_message = message ? kafka_str_dup(s, message) : (struct kp_str){NULL, -1};
        kafka_count_error(s, res[i].error_code);
        if (cluster) {
            if (res[i].error_code == KAFKA_NONE) {
                res[i].num_partitions = q->topics[i].num_partitions == -1
                                            ? (int32_t)s->server->opts.num_partitions
                                            : q->topics[i].num_partitions;
                res[i].replication_factor =
                    q->topics[i].replication_factor == -1 ? 1 : q->topics[i].replication_factor;
            }
            continue;
        }
        /* v5+: what was created — its partitions, replication factor and configs. */
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t parts = 0;
        struct config_rows rows;
        if (res[i].error_code != KAFKA_NONE || q->validate_only ||
            !kafka_topic_name(q->topics[i].name, name) ||
            rt_topic_describe(s->server->engine, name, &parts) != 0)
            continue;
        res[i].num_partitions = (int32_t)parts;
        res[i].replication_factor = 1;
        if (s->header.api_version < 5 || topic_config_rows(s, name, &rows) != 0)
            continue;
        struct kmsg_create_topics_config_result *c = kafka_alloc(s, rows.count, sizeof(*c));
        for (size_t j = 0; j < rows.count && c; j++)
            c[j] = (struct kmsg_create_topics_config_result){.name = kp_str_of(rows.rows[j].name),
                                                             .value = kp_str_of(rows.rows[j].value),
                                                             .read_only = false,
                                                             .config_source = rows.rows[j].source,
                                                             .is_sensitive = false};
        res[i].configs = c;
        res[i].configs_count = c ? (int32_t)rows.count : 0;
    }
    if (res && nf) {                               /* KAD12 */
        struct kmsg_create_topics_request fq = *q; /* timeout and validate_only kept */
        fq.topics = forward_pick(s, q->topics, sizeof(*q->topics), fwd, nf);
        fq.topics_count = (int32_t)nf;
        struct kmsg_create_topics_response r = {0};
        forward_entries(s, cluster, &fwd_create_topics, fq.topics ? &fq : NULL, &r, &r.topics_count,
                        &r.topics, res, fwd, nf);
    }
    struct kmsg_create_topics_response m = {.topics = res, .topics_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_create_topics_response_encode(&s->w, s->header.api_version, &m);
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
    snprintf(out[n++].value, sizeof(out[0].value), "%d", (int)o->default_replication_factor);
    out[n].name = "delete.topic.enable";
    snprintf(out[n++].value, sizeof(out[0].value), "true");
    const struct rt_options *e = &o->engine;
    out[n].name = "message.max.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%u", e->batch_size_max_bytes);
    out[n].name = "log.segment.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRIu64, e->segment_size_bytes);
    out[n].name = "log.retention.ms";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_ms);
    out[n].name = "log.retention.bytes";
    snprintf(out[n++].value, sizeof(out[0].value), "%" PRId64, e->retention_bytes);
    out[n].name = "log.message.timestamp.type";
    snprintf(out[n++].value, sizeof(out[0].value), "%s",
             e->message_timestamp_type == RT_TIMESTAMP_LOG_APPEND_TIME ? "LogAppendTime"
                                                                       : "CreateTime");
    return n;
}

#define BROKER_CONFIGS_MAX 24

static bool key_wanted(const struct kmsg_describe_configs_resource *r, const char *name)
{
    if (r->configuration_keys_count < 0)
        return true;
    for (int32_t i = 0; i < r->configuration_keys_count; i++)
        if (kp_str_eq(r->configuration_keys[i], name))
            return true;
    return false;
}

/* "" or this broker's id: the one broker resource a single node has. */
static bool broker_name_ok(const struct kafka_server *srv, struct kp_str name)
{
    char id[16];
    snprintf(id, sizeof(id), "%" PRId32, srv->opts.broker_id);
    return name.len <= 0 || kp_str_eq(name, id);
}

/* One broker config's entry (KAD10): its value from the highest level that sets it (this
 * broker's dynamic value, the cluster default's, the static one), every level's as synonyms;
 * read-only unless it is a dynamic config. `k` is its index in the dynamic table or -1; at the
 * default level (resource name "") only the default's value counts, as Kafka describes it. */
static bool broker_entry(struct kafka_slot *s, const struct kmsg_describe_configs_request *q,
                         const struct kmsg_describe_configs_resource *r,
                         struct kmsg_describe_configs_entry *e, const char *name, int k,
                         const char *static_value, const struct broker_config_set *set,
                         bool default_level)
{
    if (!key_wanted(r, name))
        return false;
    const char *vals[3];
    int8_t srcs[3];
    int n = 0;
    if (k >= 0 && !default_level && set->value[BCL_BROKER][k]) {
        vals[n] = set->value[BCL_BROKER][k];
        srcs[n++] = SOURCE_DYNAMIC_BROKER;
    }
    if (k >= 0 && set->value[BCL_DEFAULT][k]) {
        vals[n] = set->value[BCL_DEFAULT][k];
        srcs[n++] = SOURCE_DYNAMIC_DEFAULT_BROKER;
    }
    if (static_value && !default_level) {
        vals[n] = static_value;
        srcs[n++] = SOURCE_STATIC_BROKER;
    }
    if (n == 0)
        return false;
    *e = (struct kmsg_describe_configs_entry){0};
    e->name = kafka_str_dup(s, name);
    e->value = kafka_str_dup(s, vals[0]);
    e->read_only = k < 0;
    e->config_source = srcs[0];
    e->config_type = k >= 0 ? (int8_t)broker_config_def((size_t)k)->type : 0;
    e->documentation = (struct kp_str){NULL, 0};
    if (q->include_synonyms) { /* v1+: every level's value, highest first */
        struct kmsg_describe_configs_synonym *sy = kafka_alloc(s, (size_t)n, sizeof(*sy));
        for (int j = 0; sy && j < n; j++)
            sy[j] =
                (struct kmsg_describe_configs_synonym){e->name, kafka_str_dup(s, vals[j]), srcs[j]};
        e->synonyms = sy;
        e->synonyms_count = sy ? n : 0;
    }
    return true;
}

/* A BROKER resource (KAD4, KAD10): for this broker's id, the static configs `ringtail serve`
 * was started with and every dynamic config set at either level; for "" (the cluster
 * default), the dynamic defaults only. */
static void describe_broker(struct kafka_slot *s, const struct kmsg_describe_configs_request *q,
                            const struct kmsg_describe_configs_resource *r,
                            struct kmsg_describe_configs_result *o)
{
    struct kafka_server *srv = s->server;
    bool default_level = r->resource_name.len <= 0;
    struct config_kv kv[BROKER_CONFIGS_MAX];
    size_t nstatic = default_level ? 0 : broker_configs(srv, kv);
    size_t ndyn = broker_config_count();
    struct kmsg_describe_configs_entry *e = kafka_alloc(s, nstatic + ndyn, sizeof(*e));
    o->configs = e;
    o->configs_count = 0;
    if (!e)
        return;
    int32_t n = 0;
    struct broker_config *d = srv->dynamic;
    pthread_mutex_lock(&d->lock);
    bool shown[BROKER_CONFIG_MAX] = {false};
    for (size_t j = 0; j < nstatic; j++) {
        int k = broker_config_find(kv[j].name);
        if (k >= 0)
            shown[k] = true;
        if (broker_entry(s, q, r, &e[n], kv[j].name, k, kv[j].value, &d->set, default_level))
            n++;
    }
    for (size_t k = 0; k < ndyn; k++)
        if (!shown[k] && broker_entry(s, q, r, &e[n], broker_config_def(k)->name, (int)k, NULL,
                                      &d->set, default_level))
            n++;
    pthread_mutex_unlock(&d->lock);
    o->configs_count = n;
}

/* A topic config's synonyms, highest first, as Kafka lists them: the topic's override, then
 * the broker synonym (BC5) at this broker's level and at the cluster default, each where set;
 * a value from the engine's options or Kafka's default is its own one synonym. */
static void topic_synonyms(struct kafka_slot *s, struct kmsg_describe_configs_entry *e,
                           int8_t source)
{
    struct kmsg_describe_configs_synonym *sy = kafka_alloc(s, 3, sizeof(*sy));
    if (!sy)
        return;
    int32_t n = 0;
    if (source == SOURCE_DYNAMIC_TOPIC || source == SOURCE_STATIC_BROKER ||
        source == SOURCE_DEFAULT)
        sy[n++] = (struct kmsg_describe_configs_synonym){e->name, e->value, source};
    char topic_name[128];
    snprintf(topic_name, sizeof(topic_name), "%.*s", e->name.len > 0 ? (int)e->name.len : 0,
             e->name.ptr ? e->name.ptr : "");
    int k = broker_config_find_topic(topic_name);
    if (k >= 0 && source != SOURCE_STATIC_BROKER && source != SOURCE_DEFAULT) {
        struct broker_config *d = s->server->dynamic;
        struct kp_str bname = kp_str_of(broker_config_def((size_t)k)->name);
        pthread_mutex_lock(&d->lock);
        if (d->set.value[BCL_BROKER][k])
            sy[n++] = (struct kmsg_describe_configs_synonym){
                bname, kafka_str_dup(s, d->set.value[BCL_BROKER][k]), SOURCE_DYNAMIC_BROKER};
        if (d->set.value[BCL_DEFAULT][k] && n < 3)
            sy[n++] = (struct kmsg_describe_configs_synonym){
                bname, kafka_str_dup(s, d->set.value[BCL_DEFAULT][k]),
                SOURCE_DYNAMIC_DEFAULT_BROKER};
        pthread_mutex_unlock(&d->lock);
    }
    if (n == 0) /* the dynamic value changed since the row was read: its own source */
        sy[n++] = (struct kmsg_describe_configs_synonym){e->name, e->value, source};
    e->synonyms = sy;
    e->synonyms_count = n;
}

static void describe_one(struct kafka_slot *s, const struct kmsg_describe_configs_request *q,
                         const struct kmsg_describe_configs_resource *r,
                         struct kmsg_describe_configs_result *o)
{
    struct kafka_server *srv = s->server;
    o->resource_type = r->resource_type;
    o->resource_name = r->resource_name;
    o->error_message = (struct kp_str){NULL, -1};
    struct config_row rows_b[1];
    struct config_rows rows = {.rows = rows_b};
    bool read_only = true;
    if (r->resource_type == KAFKA_RESOURCE_BROKER) {
        if (!broker_name_ok(srv, r->resource_name)) {
            o->error_code = KAFKA_INVALID_REQUEST;
            o->error_message = kp_str_of("no such broker: this is a single-node broker");
            return;
        }
        describe_broker(s, q, r, o);
        return;
    } else if (r->resource_type == KAFKA_RESOURCE_TOPIC) {
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t parts = 0;
        struct metadata_node *cluster = kafka_cluster(srv);
        if (!kafka_topic_name(r->resource_name, name) ||
            (cluster ? cluster_topic_rows(s, cluster, name, &rows) != 0 /* KAD11 */
                     : rt_topic_describe(srv->engine, name, &parts) != 0 ||
                           topic_config_rows(s, name, &rows) != 0)) {
            o->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            o->error_message = kp_str_of("This server does not host this topic-partition.");
            return;
        }
        read_only = false;
    } else {
        o->error_code = KAFKA_INVALID_REQUEST;
        o->error_message = kp_str_of("only BROKER and TOPIC resources have configs here");
        return;
    }
    struct kmsg_describe_configs_entry *e = kafka_alloc(s, rows.count, sizeof(*e));
    int32_t k = 0;
    for (size_t j = 0; j < rows.count && e; j++) {
        if (!key_wanted(r, rows.rows[j].name))
            continue;
        e[k].name = kafka_str_dup(s, rows.rows[j].name);
        e[k].value = kafka_str_dup(s, rows.rows[j].value);
        e[k].read_only = read_only;
        e[k].is_default = rows.rows[j].source == SOURCE_DEFAULT;
        e[k].config_source = rows.rows[j].source;
        if (q->include_synonyms) /* v1+ */
            topic_synonyms(s, &e[k], rows.rows[j].source);
        k++;
    }
    o->configs = e;
    o->configs_count = k;
}

/* KZ2: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, or on the cluster for the broker's. */
static int16_t config_denied(struct kafka_slot *s, int8_t type, struct kp_str name, uint8_t op)
{
    if (type == KAFKA_RESOURCE_BROKER)
        return kafka_authorize_cluster(s, op) ? KAFKA_NONE : KAFKA_CLUSTER_AUTHORIZATION_FAILED;
    if (type == KAFKA_RESOURCE_TOPIC)
        return kafka_authorize_str(s, ACL_RESOURCE_TOPIC, name, op)
                   ? KAFKA_NONE
                   : KAFKA_TOPIC_AUTHORIZATION_FAILED;
    return KAFKA_NONE; /* the handler refuses other types itself */
}

enum net_verdict kafka_handle_describe_configs(struct kafka_slot *s)
{
    const struct kmsg_describe_configs_request *q = &s->msg.describe_configs;
    size_t n = q->resources_count > 0 ? (size_t)q->resources_count : 0;
    size_t per = TOPIC_CONFIGS_MAX * (sizeof(struct kmsg_describe_configs_entry) +
                                      3 * sizeof(struct kmsg_describe_configs_synonym) +
                                      sizeof(struct config_row) + 4 * 96);
    /* A broker resource: its static rows and the dynamic table, each with up to 3 synonyms,
     * and every stored value twice (the entry's and a synonym's). */
    size_t dyn_bytes = 0;
    pthread_mutex_lock(&s->server->dynamic->lock);
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < broker_config_count(); k++)
            if (s->server->dynamic->set.value[l][k])
                dyn_bytes += 2 * (strlen(s->server->dynamic->set.value[l][k]) + 16);
    pthread_mutex_unlock(&s->server->dynamic->lock);
    size_t broker_per = (BROKER_CONFIGS_MAX + broker_config_count()) *
                            (sizeof(struct kmsg_describe_configs_entry) +
                             3 * sizeof(struct kmsg_describe_configs_synonym) + 3 * 96) +
                        dyn_bytes;
    if (broker_per > per)
        per = broker_per;
    per += dyn_bytes;             /* a topic's synonyms from the broker's levels (BC5) */
    if (kafka_cluster(s->server)) /* KAD11: the image's overrides, copied */
        per += 2 * TOPIC_CONFIGS_MAX * (sizeof(char *) + 256 + 64);
    if (kafka_resp_reserve(s, n * (per + sizeof(struct kmsg_describe_configs_result))) != 0)
        return NET_CLOSE;
    struct kmsg_describe_configs_result *res = kafka_alloc(s, n, sizeof(*res));
    for (size_t i = 0; i < n && res; i++) {
        int16_t denied = config_denied(s, q->resources[i].resource_type,
                                       q->resources[i].resource_name, ACL_OP_DESCRIBE_CONFIGS);
        if (denied) {
            res[i] = (struct kmsg_describe_configs_result){
                .error_code = denied,
                .resource_type = q->resources[i].resource_type,
                .resource_name = q->resources[i].resource_name};
            kafka_count_error(s, denied);
            continue;
        }
        describe_one(s, q, &q->resources[i], &res[i]);
        kafka_count_error(s, res[i].error_code);
    }
    struct kmsg_describe_configs_response m = {.results = res,
                                               .results_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_describe_configs_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- AlterConfigs and IncrementalAlterConfigs (KAD5) ---- */

enum { OP_SET = 0, OP_DELETE = 1, OP_APPEND = 2, OP_SUBTRACT = 3 };

static bool list_config(const char *name)
{
    return strcmp(name, "cleanup.policy") == 0 ||
           strcmp(name, "follower.replication.throttled.replicas") == 0 ||
           strcmp(name, "leader.replication.throttled.replicas") == 0;
}

/* A NUL-terminated copy of a wire string in the response arena (NULL for null). */
static char *arena_cstr(struct kafka_slot *s, struct kp_str v)
{
    if (v.len < 0)
        return NULL;
    char *c = kafka_alloc(s, (size_t)v.len + 1, 1);
    if (c) {
        memcpy(c, v.ptr, (size_t)v.len);
        c[v.len] = 0;
    }
    return c;
}

/* The item list `current` with `item` appended (when absent) or removed. */
static char *list_edit(struct kafka_slot *s, const char *current, const char *items, bool append)
{
    size_t cap = strlen(current) + strlen(items) + 2;
    char *out = kafka_alloc(s, cap, 1);
    if (!out)
        return NULL;
    out[0] = 0;
    /* Keep each current item unless subtracted; then append the new ones not present. */
    char *cur = strdup(current), *add = strdup(items);
    if (!cur || !add) {
        free(cur);
        free(add);
        return NULL;
    }
    char *save = NULL;
    for (char *it = strtok_r(cur, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        bool drop = false;
        if (!append) {
            char *copy = strdup(items), *s2 = NULL;
            for (char *x = copy ? strtok_r(copy, ",", &s2) : NULL; x; x = strtok_r(NULL, ",", &s2))
                drop = drop || strcmp(x, it) == 0;
            free(copy);
        }
        if (!drop)
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "," : "", it);
    }
    if (append) {
        for (char *x = strtok_r(add, ",", &save); x; x = strtok_r(NULL, ",", &save)) {
            char probe[512];
            snprintf(probe, sizeof(probe), ",%s,", x);
            char wrapped[1024];
            snprintf(wrapped, sizeof(wrapped), ",%s,", out);
            if (!strstr(wrapped, probe))
                snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "," : "", x);
        }
    }
    free(cur);
    free(add);
    return out;
}

struct current_value {
    const char *name;
    char value[256];
    bool found; /* KAD11: the image holds an override */
};

/* metadata_node_topic_configs' callback: the image's override of c->name (ctx NULL: existence only). */
static void image_value_of(void *ctx, const char *key, const char *value)
{
    struct current_value *c = ctx;
    if (c && strcmp(key, c->name) == 0) {
        snprintf(c->value, sizeof(c->value), "%s", value);
        c->found = true;
    }
}

static int current_collect(void *ctx, const char *name, const char *value,
                           enum rt_config_source source, bool honoured)
{
    (void)source;
    (void)honoured;
    struct current_value *c = ctx;
    if (strcmp(name, c->name) == 0)
        snprintf(c->value, sizeof(c->value), "%s", value);
    return 0;
}

/* Kafka's answer to a broker config it refuses (ZkAdminManager: a ConfigException is
 * INVALID_REQUEST "Invalid config value for resource ...: <reason>: Set(names)"). */
static int16_t broker_refuse(struct kafka_slot *s, const struct kmsg_alter_configs_resource *r,
                             const char *reason, const char *names, const char **message)
{
    char m[3200];
    snprintf(m, sizeof(m),
             "Invalid config value for resource ConfigResource(type=BROKER, name='%.*s'): %s%s%s%s",
             r->resource_name.len > 0 ? (int)r->resource_name.len : 0,
             r->resource_name.ptr ? r->resource_name.ptr : "", reason, names ? ": Set(" : "",
             names ? names : "", names ? ")" : "");
    *message = kafka_str_dup(s, m).ptr;
    return KAFKA_INVALID_REQUEST;
}

static void name_list_add(char *list, size_t cap, const char *name)
{
    size_t at = strlen(list);
    snprintf(list + at, cap - at, "%s%s", at ? ", " : "", name);
}

/* AlterConfigs / IncrementalAlterConfigs of a BROKER resource (KAD10): name = this broker's id
 * (its own level) or "" (the cluster default). Checked in Kafka's order (DynamicBrokerConfig.
 * validateConfigs): a key twice (incremental), an operation, APPEND/SUBTRACT on a non-list
 * (INVALID_CONFIG); then names that are not dynamic (BC1), security configs without a listener
 * prefix, values by type (BC2), per-broker configs at the default level (BC3), each
 * INVALID_REQUEST naming them. Legacy AlterConfigs replaces the level's whole set, as Kafka's;
 * the new set is durable (broker-configs.meta, BS2) before it is used and answered. */
static int16_t alter_broker(struct kafka_slot *s, const struct kmsg_alter_configs_resource *r,
                            bool incremental, bool validate_only, const char **message)
{
    struct kafka_server *srv = s->server;
    if (!broker_name_ok(srv, r->resource_name)) {
        char m[160];
        snprintf(m, sizeof(m),
                 "Unexpected broker id, expected %" PRId32 " or empty string, but received %.*s",
                 srv->opts.broker_id, r->resource_name.len > 0 ? (int)r->resource_name.len : 0,
                 r->resource_name.ptr ? r->resource_name.ptr : "");
        *message = kafka_str_dup(s, m).ptr;
        return KAFKA_INVALID_REQUEST;
    }
    int level = r->resource_name.len <= 0 ? BCL_DEFAULT : BCL_BROKER;
    size_t n = r->configs_count > 0 ? (size_t)r->configs_count : 0;
    char **names = n ? kafka_alloc(s, n, sizeof(*names)) : NULL;
    char **values = n ? kafka_alloc(s, n, sizeof(*values)) : NULL;
    if (n && (!names || !values)) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        const struct kmsg_alter_configs_config *e = &r->configs[i];
        names[i] = arena_cstr(s, e->name);
        values[i] = arena_cstr(s, e->value);
        if (!names[i] || strlen(names[i]) != (size_t)e->name.len) {
            *message = "invalid config name";
            return KAFKA_INVALID_REQUEST;
        }
        for (size_t j = 0; incremental && j < i; j++)
            if (strcmp(names[j], names[i]) == 0) {
                *message = "Error due to duplicate config keys";
                return KAFKA_INVALID_REQUEST;
            }
        int8_t op = incremental ? e->config_operation : OP_SET;
        if (op < OP_SET || op > OP_SUBTRACT) {
            *message = "unknown config operation";
            return KAFKA_INVALID_REQUEST;
        }
        int k = broker_config_find(names[i]);
        if ((op == OP_APPEND || op == OP_SUBTRACT) && k >= 0 &&
            broker_config_def((size_t)k)->type != BCT_LIST) {
            char m[320];
            snprintf(m, sizeof(m), "Config value %s is not allowed for config key: %s",
                     op == OP_APPEND ? "append" : "subtract", names[i]);
            *message = kafka_str_dup(s, m).ptr;
            return KAFKA_INVALID_CONFIG;
        }
        if (op != OP_DELETE && !values[i]) {
            char m[320];
            snprintf(m, sizeof(m), "Null value not supported for : %s", names[i]);
            *message = kafka_str_dup(s, m).ptr;
            return incremental ? KAFKA_INVALID_CONFIG : KAFKA_INVALID_REQUEST;
        }
    }
    /* The names given a value (a DELETE names none: Kafka validates what remains). */
    char list[1024] = "";
    for (size_t i = 0; i < n; i++) /* BC1 */
        if ((!incremental || r->configs[i].config_operation != OP_DELETE) &&
            broker_config_find(names[i]) < 0)
            name_list_add(list, sizeof(list), names[i]);
    if (list[0])
        return broker_refuse(s, r, "Cannot update these configs dynamically", list, message);
    for (size_t i = 0; i < n; i++) { /* BC3 */
        int k = broker_config_find(names[i]);
        if (k >= 0 && broker_config_def((size_t)k)->listener_only &&
            (!incremental || r->configs[i].config_operation != OP_DELETE))
            name_list_add(list, sizeof(list), names[i]);
    }
    if (list[0])
        return broker_refuse(s, r,
                             "These security configs can be dynamically updated only "
                             "per-listener using the listener prefix",
                             list, message);
    /* The level's new set: a copy of the current one, changed. */
    struct broker_config *d = srv->dynamic;
    struct broker_config_set next;
    pthread_mutex_lock(&d->lock);
    int rc = broker_config_set_copy(&next, &d->set);
    pthread_mutex_unlock(&d->lock);
    if (rc) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    int16_t err = KAFKA_NONE;
    if (!incremental)
        for (size_t k = 0; k < broker_config_count(); k++)
            broker_config_set_put(&next, level, k, NULL); /* legacy: the whole level */
    for (size_t i = 0; i < n && !err; i++) {
        size_t k = (size_t)broker_config_find(names[i]);
        int8_t op = incremental ? r->configs[i].config_operation : OP_SET;
        const char *v = values[i];
        if (op == OP_DELETE) {
            v = NULL;
        } else if (op == OP_APPEND || op == OP_SUBTRACT) {
            const char *cur = next.value[level][k] ? next.value[level][k] : "";
            v = list_edit(s, cur, values[i], op == OP_APPEND);
            if (!v) {
                *message = "out of memory";
                err = KAFKA_UNKNOWN_SERVER_ERROR;
                break;
            }
        }
        char canon[BROKER_CONFIG_VALUE_MAX + 1], why[256];
        if (v && broker_config_check(k, v, canon, why, sizeof(why)) != 0) { /* BC2 */
            char m[BROKER_CONFIG_VALUE_MAX + 512];
            snprintf(m, sizeof(m), "Invalid value %.*s for configuration %s: %s", 200, v, names[i],
                     why);
            err = broker_refuse(s, r, m, NULL, message);
            break;
        }
        if (broker_config_set_put(&next, level, k, v ? canon : NULL) != 0) {
            *message = "out of memory";
            err = KAFKA_UNKNOWN_SERVER_ERROR;
        }
    }
    if (!err && level == BCL_DEFAULT) { /* BC3 */
        for (size_t i = 0; i < n; i++) {
            int k = broker_config_find(names[i]);
            if (k >= 0 && broker_config_def((size_t)k)->per_broker && next.value[level][k])
                name_list_add(list, sizeof(list), names[i]);
        }
        if (list[0])
            err = broker_refuse(s, r,
                                "Cannot update these configs at default cluster level, broker "
                                "id must be specified",
                                list, message);
    }
    if (err || validate_only) {
        broker_config_set_free(&next);
        return err;
    }
    char ferr[600] = "";
    if (srv->opts.config_dir &&
        broker_config_store_save(srv->opts.config_dir, &next, ferr, sizeof(ferr)) != 0) { /* BS2 */
        broker_config_set_free(&next);
        kafka_log("dynamic broker configs: %s", ferr);
        *message = kafka_str_dup(s, ferr).ptr;
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    pthread_mutex_lock(&d->lock);
    struct broker_config_set old = d->set;
    d->set = next;
    /* BC5: the log configs applied as the engine's topic defaults (under the lock: two
     * changes apply in the order they were made). The set is durable and answered NONE
     * whatever this says, as Kafka's broker logs a reconfiguration failure. */
    size_t refused = 0;
    int arc = broker_config_apply(srv->engine, &d->set, &refused);
    pthread_mutex_unlock(&d->lock);
    if (arc || refused)
        kafka_log("dynamic broker configs: applying the log configs to the engine: %s (%zu "
                  "value(s) its topic rule refuses kept only)",
                  arc ? rt_error_detail() : "ok", refused);
    broker_config_set_free(&old);
    return KAFKA_NONE;
}

static int16_t alter_one(struct kafka_slot *s, const struct kmsg_alter_configs_resource *r,
                         bool incremental, bool validate_only, const char **message)
{
    struct kafka_server *srv = s->server;
    if (r->resource_type == KAFKA_RESOURCE_BROKER)
        return alter_broker(s, r, incremental, validate_only, message);
    if (r->resource_type != KAFKA_RESOURCE_TOPIC) {
        *message = "only TOPIC and BROKER resources have configs here";
        return KAFKA_INVALID_REQUEST;
    }
    char topic[RT_TOPIC_NAME_MAX + 1];
    uint32_t parts = 0;
    struct metadata_node *cluster = kafka_cluster(srv); /* KAD11: the image's topics */
    if (!kafka_topic_name(r->resource_name, topic) ||
        (cluster ? metadata_node_topic_configs(cluster, topic, image_value_of, NULL) != 0
                 : rt_topic_describe(srv->engine, topic, &parts) != 0)) {
        *message = "This server does not host this topic-partition.";
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (strncmp(topic, "__", 2) == 0) {
        *message = "the internal topics' configs are the broker's";
        return KAFKA_INVALID_REQUEST;
    }
    size_t n = r->configs_count > 0 ? (size_t)r->configs_count : 0;
    struct rt_topic_config *c = n ? kafka_alloc(s, n, sizeof(*c)) : NULL;
    if (n && !c) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    size_t keys = 0; /* distinct keys in c */
    for (size_t i = 0; i < n; i++) {
        const struct kmsg_alter_configs_config *e = &r->configs[i];
        char *name = arena_cstr(s, e->name);
        char *value = arena_cstr(s, e->value);
        if (!name || strlen(name) != (size_t)e->name.len) {
            *message = "invalid config name";
            return KAFKA_INVALID_REQUEST;
        }
        /* A key named twice: IncrementalAlterConfigs refuses the resource; legacy AlterConfigs
         * takes the last value, as Kafka's (its entries become a map; librdkafka's tests send
         * every described config plus the changed one). */
        size_t slot = keys;
        for (size_t j = 0; j < keys; j++)
            if (strcmp(c[j].name, name) == 0) {
                if (incremental) {
                    *message = "Error due to duplicate config keys";
                    return KAFKA_INVALID_REQUEST;
                }
                slot = j;
            }
        int8_t op = incremental ? e->config_operation : OP_SET;
        if (op < OP_SET || op > OP_SUBTRACT) {
            *message = "unknown config operation";
            return KAFKA_INVALID_REQUEST;
        }
        if (op != OP_DELETE && !value) {
            char m[320];
            snprintf(m, sizeof(m), "Null value not supported for : %s", name);
            *message = kafka_str_dup(s, m).ptr;
            return incremental ? KAFKA_INVALID_CONFIG : KAFKA_INVALID_REQUEST;
        }
        if (op == OP_APPEND || op == OP_SUBTRACT) {
            if (!list_config(name)) {
                char m[320];
                snprintf(m, sizeof(m), "Config value %s is only allowed for list type configs: %s",
                         op == OP_APPEND ? "append" : "subtract", name);
                *message = kafka_str_dup(s, m).ptr;
                return KAFKA_INVALID_CONFIG;
            }
            struct current_value cur = {.name = name};
            if (cluster) { /* KAD11: the image's override, else the value in effect here */
                (void)metadata_node_topic_configs(cluster, topic, image_value_of, &cur);
                if (!cur.found)
                    (void)rt_topic_config_get(srv->engine, topic, current_collect, &cur);
            } else if (rt_topic_config_get(srv->engine, topic, current_collect, &cur) != 0) {
                *message = "This server does not host this topic-partition.";
                return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            }
            value = list_edit(s, cur.value, value, op == OP_APPEND);
            if (!value) {
                *message = "out of memory";
                return KAFKA_UNKNOWN_SERVER_ERROR;
            }
        }
        if (op == OP_DELETE) {
            if (rt_topic_config_check(name, NULL) != 0) { /* the name only */
                *message = kafka_str_dup(s, rt_error_detail()).ptr;
                return KAFKA_INVALID_CONFIG;
            }
            value = NULL;
        } else if (rt_topic_config_check(name, value) != 0) {
            *message = kafka_str_dup(s, rt_error_detail()).ptr;
            return KAFKA_INVALID_CONFIG;
        }
        c[slot] = (struct rt_topic_config){name, value};
        if (slot == keys)
            keys++;
    }
    if (cluster) /* KAD11: CONFIG records through the controller (controller_admin.h CA3) */
        return ctl_alter_topic_configs(cluster, topic, c, keys, !incremental, validate_only,
                                       message);
    if (validate_only)
        return KAFKA_NONE;
    int rc = rt_topic_config_alter(srv->engine, topic, c, keys, !incremental);
    if (rc == 0)
        return KAFKA_NONE;
    *message = kafka_str_dup(s, rt_error_detail()).ptr;
    return rc == RT_E_INVALID_CONFIG ? KAFKA_INVALID_CONFIG : kafka_error_from_rt(rc);
}

static enum net_verdict alter_configs(struct kafka_slot *s, bool incremental)
{
    const struct kmsg_alter_configs_request *q = &s->msg.alter_configs;
    size_t n = q->resources_count > 0 ? (size_t)q->resources_count : 0;
    size_t configs = 0;
    for (size_t i = 0; i < n; i++)
        configs += q->resources[i].configs_count > 0 ? (size_t)q->resources[i].configs_count : 0;
    if (kafka_resp_reserve(s, n * (sizeof(struct kmsg_alter_configs_resource_response) + 1024 +
                                   sizeof(size_t) + sizeof(struct kmsg_alter_configs_resource)) +
                                  configs * (sizeof(struct rt_topic_config) + 1024)) != 0)
        return NET_CLOSE;
    struct kmsg_alter_configs_resource_response *res = kafka_alloc(s, n, sizeof(*res));
    /* KAD11: a cluster node that is not the active controller forwards its TOPIC resources
     * (KAD12) */
    struct metadata_node *cluster = kafka_cluster(s->server);
    size_t *fwd = forwards(s, cluster) && n ? kafka_alloc(s, n, sizeof(size_t)) : NULL;
    size_t nf = 0;
    for (size_t i = 0; i < n && res; i++) {
        const char *message = NULL;
        res[i].resource_type = q->resources[i].resource_type;
        res[i].resource_name = q->resources[i].resource_name;
        res[i].error_code = config_denied(s, q->resources[i].resource_type,
                                          q->resources[i].resource_name, ACL_OP_ALTER_CONFIGS);
        if (!res[i].error_code && fwd && q->resources[i].resource_type == KAFKA_RESOURCE_TOPIC) {
            fwd[nf++] = i;
            continue;
        }
        if (!res[i].error_code)
            res[i].error_code =
                alter_one(s, &q->resources[i], incremental, q->validate_only, &message);
        res[i].error_message = message ? kafka_str_dup(s, message) : (struct kp_str){NULL, -1};
        kafka_count_error(s, res[i].error_code);
    }
    if (res && nf) { /* KAD11, KAD12: the TOPIC resources, same API and version */
        struct kmsg_alter_configs_request fq = *q; /* validate_only kept */
        fq.resources = forward_pick(s, q->resources, sizeof(*q->resources), fwd, nf);
        fq.resources_count = (int32_t)nf;
        struct kmsg_alter_configs_response r = {0};
        forward_entries(
            s, cluster, incremental ? &fwd_incremental_alter_configs : &fwd_alter_configs,
            fq.resources ? &fq : NULL, &r, &r.responses_count, &r.responses, res, fwd, nf);
    }
    struct kmsg_alter_configs_response m = {.responses = res,
                                            .responses_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    if (incremental)
        kmsg_incremental_alter_configs_response_encode(&s->w, s->header.api_version, &m);
    else
        kmsg_alter_configs_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_alter_configs(struct kafka_slot *s)
{
    return alter_configs(s, false);
}

enum net_verdict kafka_handle_incremental_alter_configs(struct kafka_slot *s)
{
    return alter_configs(s, true);
}

/* ---- CreatePartitions (KAD7) ---- */

static int16_t create_partitions_one(struct kafka_slot *s,
                                     const struct kmsg_create_partitions_topic *t,
                                     bool validate_only, const char **message)
{
    struct kafka_server *srv = s->server;
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t have = 0;
    if (!kafka_topic_name(t->name, name) || rt_topic_describe(srv->engine, name, &have) != 0) {
        *message = "This server does not host this topic-partition.";
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (strncmp(name, "__", 2) == 0) {
        *message = "the broker's internal topics keep their partition count";
        return KAFKA_INVALID_REQUEST;
    }
    if (t->count <= (int32_t)have) {
        char m[160];
        snprintf(m, sizeof(m),
                 "Topic currently has %u partitions, %" PRId32 " would not be an increase.", have,
                 t->count);
        *message = kafka_str_dup(s, m).ptr;
        return KAFKA_INVALID_PARTITIONS;
    }
    if (t->assignments_count >= 0) {
        if (t->assignments_count != t->count - (int32_t)have) {
            *message = "the assignments must name each new partition";
            return KAFKA_INVALID_REPLICA_ASSIGNMENT;
        }
        for (int32_t i = 0; i < t->assignments_count; i++)
            if (t->assignments[i].broker_ids_count != 1 ||
                t->assignments[i].broker_ids[0] != srv->opts.broker_id) {
                *message = "assignments must name this broker alone";
                return KAFKA_INVALID_REPLICA_ASSIGNMENT;
            }
    }
    if ((uint32_t)t->count > srv->opts.engine.partitions_max) {
        char m[160];
        snprintf(m, sizeof(m), "at most %u partitions per topic here",
                 srv->opts.engine.partitions_max);
        *message = kafka_str_dup(s, m).ptr;
        return KAFKA_INVALID_PARTITIONS;
    }
    if (validate_only)
        return KAFKA_NONE;
    int rc = rt_topic_add_partitions(srv->engine, name, (uint32_t)t->count);
    if (rc == 0)
        return KAFKA_NONE;
    *message = kafka_str_dup(s, rt_error_detail()).ptr;
    if (rc == RT_E_INVALID_ARGUMENT)
        return KAFKA_INVALID_PARTITIONS;
    if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    return kafka_error_from_rt(rc);
}

enum net_verdict kafka_handle_create_partitions(struct kafka_slot *s)
{
    const struct kmsg_create_partitions_request *q = &s->msg.create_partitions;
    size_t n = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    if (kafka_resp_reserve(s, n * (sizeof(struct kmsg_create_partitions_result) + 512 +
                                   sizeof(size_t) + sizeof(struct kmsg_create_partitions_topic))) !=
        0)
        return NET_CLOSE;
    struct kmsg_create_partitions_result *res = kafka_alloc(s, n, sizeof(*res));
    struct metadata_node *cluster = kafka_cluster(s->server);
    size_t *fwd = forwards(s, cluster) && n ? kafka_alloc(s, n, sizeof(size_t)) : NULL;
    size_t nf = 0;
    for (size_t i = 0; i < n && res; i++) {
        const char *message = NULL;
        res[i].name = q->topics[i].name;
        bool twice = false;
        for (size_t j = 0; j < i; j++)
            twice = twice || (q->topics[j].name.len == q->topics[i].name.len &&
                              memcmp(q->topics[j].name.ptr, q->topics[i].name.ptr,
                                     (size_t)q->topics[i].name.len) == 0);
        if (twice) {
            res[i].error_code = KAFKA_INVALID_REQUEST;
            message = "Duplicate topic in request.";
        } else if (!kafka_authorize_str(s, ACL_RESOURCE_TOPIC, q->topics[i].name, ACL_OP_ALTER)) {
            res[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2 */
        } else if (fwd) {                                         /* KAD12 */
            fwd[nf++] = i;
            continue;
        } else if (cluster) { /* handle_cluster.c KCL2 */
            res[i].error_code = kafka_cluster_create_partitions(s, cluster, &q->topics[i],
                                                                q->validate_only, &message);
        } else {
            res[i].error_code = create_partitions_one(s, &q->topics[i], q->validate_only, &message);
        }
        res[i].error_message = message ? kafka_str_dup(s, message) : (struct kp_str){NULL, -1};
        kafka_count_error(s, res[i].error_code);
    }
    if (res && nf) {                                   /* KAD12 */
        struct kmsg_create_partitions_request fq = *q; /* timeout and validate_only kept */
        fq.topics = forward_pick(s, q->topics, sizeof(*q->topics), fwd, nf);
        fq.topics_count = (int32_t)nf;
        struct kmsg_create_partitions_response r = {0};
        forward_entries(s, cluster, &fwd_create_partitions, fq.topics ? &fq : NULL, &r,
                        &r.results_count, &r.results, res, fwd, nf);
    }
    struct kmsg_create_partitions_response m = {.results = res,
                                                .results_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_create_partitions_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- DeleteRecords (KAD8) ---- */

static int16_t delete_records_one(struct kafka_slot *s, struct kp_str topic,
                                  const struct kmsg_delete_records_partition *q, int64_t *low)
{
    char name[RT_TOPIC_NAME_MAX + 1];
    *low = -1;
    if (!kafka_topic_name(topic, name) || q->partition_index < 0)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    int rc = rt_partition_delete_records(s->server->engine, name, (uint32_t)q->partition_index,
                                         q->offset, low);
    if (rc == 0)
        return KAFKA_NONE;
    *low = -1;
    if (rc == RT_E_INTERNAL_TOPIC)
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    return kafka_error_from_rt(rc);
}

enum net_verdict kafka_handle_delete_records(struct kafka_slot *s)
{
    const struct kmsg_delete_records_request *q = &s->msg.delete_records;
    size_t n = q->topics_count > 0 ? (size_t)q->topics_count : 0;
    size_t parts = 0;
    for (size_t i = 0; i < n; i++)
        parts += q->topics[i].partitions_count > 0 ? (size_t)q->topics[i].partitions_count : 0;
    if (kafka_resp_reserve(s, n * sizeof(struct kmsg_delete_records_topic_result) +
                                  parts * sizeof(struct kmsg_delete_records_partition_result) +
                                  64) != 0)
        return NET_CLOSE;
    struct kmsg_delete_records_topic_result *res = kafka_alloc(s, n, sizeof(*res));
    for (size_t i = 0; i < n && res; i++) {
        const struct kmsg_delete_records_topic *t = &q->topics[i];
        size_t np = t->partitions_count > 0 ? (size_t)t->partitions_count : 0;
        struct kmsg_delete_records_partition_result *pr = kafka_alloc(s, np, sizeof(*pr));
        res[i].name = t->name;
        res[i].partitions = pr;
        res[i].partitions_count = pr ? (int32_t)np : 0;
        bool allowed = kafka_authorize_str(s, ACL_RESOURCE_TOPIC, t->name, ACL_OP_DELETE);
        for (size_t j = 0; j < np && pr; j++) {
            pr[j].partition_index = t->partitions[j].partition_index;
            pr[j].low_watermark = -1;
            pr[j].error_code =
                allowed ? delete_records_one(s, t->name, &t->partitions[j], &pr[j].low_watermark)
                        : KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2 */
            kafka_count_error(s, pr[j].error_code);
        }
    }
    struct kmsg_delete_records_response m = {.topics = res, .topics_count = res ? (int32_t)n : 0};
    kafka_response_begin(s);
    kmsg_delete_records_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
