/*
 * controller_admin.c — CreatePartitions, DeleteTopics and topic configs on the active
 * controller (controller_admin.h CA1-CA3) and the forwarding of a request to the controller
 * (CA5): read the image, place or compare, commit the records.
 * Every node's agent makes the result local (metadata_node.c MN2, MN4, MN6). It never proposes
 * for a topic the image does not hold and never waits on a loop thread (its callers run on the
 * admin thread, KA7).
 */
#include "tools/kafka/cluster/controller_admin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/proto/api.h"

/* What the image says of a topic, copied under its lock. */
struct topic_view {
    const char *name;
    bool exists;
    uint8_t id[16];
    int32_t have;
    unsigned rf;
    int32_t first_replica;
    int32_t brokers[MI_BROKERS_MAX]; /* unfenced, sorted by id */
    unsigned brokers_n;
};

static void view_topic(void *ctx, const struct metadata_image *img)
{
    struct topic_view *v = ctx;
    const struct mi_topic *t = metadata_image_topic(img, v->name);
    v->exists = t != NULL;
    if (t) {
        memcpy(v->id, t->id, 16);
        v->have = t->partitions_count;
        v->rf = t->partitions_count > 0 ? t->partitions[0].replicas_count : 1;
        v->first_replica = t->partitions_count > 0 ? t->partitions[0].replicas[0] : -1;
    }
    for (unsigned i = 0; i < img->brokers_count; i++)
        if (!img->brokers[i].fenced)
            v->brokers[v->brokers_n++] = img->brokers[i].id;
}

int16_t ctl_create_partitions(struct metadata_node *n, const char *name, int32_t count,
                              bool validate_only, const char **message)
{
    *message = NULL;
    if (!metadata_node_is_controller(n)) { /* CA2 */
        *message = "this node is not the active controller";
        return KAFKA_NOT_CONTROLLER;
    }
    struct topic_view *v = calloc(1, sizeof(*v));
    if (!v)
        return KAFKA_UNKNOWN_SERVER_ERROR;
    v->name = name;
    metadata_node_read(n, view_topic, v);
    int16_t err = KAFKA_NONE;
    if (!v->exists) {
        err = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        *message = "This server does not host this topic-partition.";
    } else if (count <= v->have) {
        err = KAFKA_INVALID_PARTITIONS;
        *message = "the partition count can only grow";
    } else if (count > MI_PARTITIONS_MAX) {
        err = KAFKA_INVALID_PARTITIONS;
        *message = "at most 100000 partitions per topic";
    } else if (v->rf > v->brokers_n) {
        err = KAFKA_INVALID_REPLICATION_FACTOR;
        *message = "fewer unfenced brokers than the topic's replication factor";
    }
    unsigned add = err ? 0 : (unsigned)(count - v->have);
    int32_t *place = add ? malloc((size_t)add * v->rf * sizeof(int32_t)) : NULL;
    if (add && !place)
        err = KAFKA_UNKNOWN_SERVER_ERROR;
    if (!err) { /* CA1: Kafka's fixedStartIndex is partition 0's first replica's index */
        unsigned start = 0;
        for (unsigned i = 0; i < v->brokers_n; i++)
            if (v->brokers[i] == v->first_replica)
                start = i;
        (void)mi_place_replicas_from(v->brokers, v->brokers_n, (unsigned)v->have, add, v->rf, start,
                                     start, place);
    }
    /* CA6: the new PARTITION records go in BATCH entries (metadata_image.h MI9), each applied
     * whole or not at all: one entry unless they pass MI_RECORD_BYTES_MAX (~20000 partitions). */
    uint8_t rec[64 + 8 * MI_REPLICAS_MAX];
    struct mi_batch batch = {0};
    for (unsigned i = 0; !err && !validate_only && i <= add; i++) {
        int brc = 0;
        if (i < add) {
            const int32_t *r = &place[(size_t)i * v->rf];
            size_t len = mi_encode_partition(rec, sizeof rec, v->id, v->have + (int32_t)i, r, v->rf,
                                             r[0], 0, r, v->rf);
            if (!len) {
                err = KAFKA_UNKNOWN_SERVER_ERROR;
                break;
            }
            brc = mi_batch_add(&batch, rec, len);
            if (brc == -ENOMEM) {
                err = KAFKA_UNKNOWN_SERVER_ERROR;
                break;
            }
            if (brc == 0)
                continue;
        }
        if (brc == -E2BIG && batch.count == 0) { /* one record never passes an entry */
            err = KAFKA_UNKNOWN_SERVER_ERROR;
            break;
        }
        uint64_t index; /* the batch is full (-E2BIG) or the last record is in it */
        int rc = batch.count ? metadata_node_propose_wait(n, batch.buf, batch.len, &index) : 0;
        batch.count = 0;
        batch.len = 0;
        if (rc) {
            err = metadata_node_kafka_error(rc);
            *message = "the controller could not commit the new partitions (none of them, or "
                       "none past a multiple of a batch's count, exists)";
        } else if (brc == -E2BIG) {
            i--; /* the record that did not fit starts the next batch */
        }
    }
    mi_batch_free(&batch);
    free(place);
    free(v);
    return err;
}

int16_t ctl_delete_topic(struct metadata_node *n, const char *name, const char **message)
{
    *message = NULL;
    if (!metadata_node_is_controller(n)) { /* CA2 */
        *message = "this node is not the active controller";
        return KAFKA_NOT_CONTROLLER;
    }
    struct topic_view *v = calloc(1, sizeof(*v));
    if (!v)
        return KAFKA_UNKNOWN_SERVER_ERROR;
    v->name = name;
    metadata_node_read(n, view_topic, v);
    int16_t err = KAFKA_NONE;
    if (!v->exists) {
        err = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    } else {
        uint8_t rec[32];
        size_t len = mi_encode_delete_topic(rec, sizeof rec, v->id);
        uint64_t index;
        int rc = len ? metadata_node_propose_wait(n, rec, len, &index) : -1;
        if (rc) {
            err = len ? metadata_node_kafka_error(rc) : KAFKA_UNKNOWN_SERVER_ERROR;
            *message = "the controller could not commit the deletion";
        }
    }
    free(v);
    return err;
}

/* ---- topic configs (CA3) ---- */

/* The topic's overrides, copied (malloc'ed) so records can be planned outside the lock. */
struct current {
    char **keys, **values;
    unsigned n;
    bool oom;
};

static void collect_current(void *ctx, const char *key, const char *value)
{
    struct current *c = ctx;
    if (c->oom || c->n == MI_CONFIGS_MAX)
        return;
    c->keys[c->n] = strdup(key);
    c->values[c->n] = strdup(value);
    if (!c->keys[c->n] || !c->values[c->n]) {
        free(c->keys[c->n]);
        free(c->values[c->n]);
        c->oom = true;
        return;
    }
    c->n++;
}

static const char *current_value(const struct current *c, const char *key)
{
    for (unsigned i = 0; i < c->n; i++)
        if (strcmp(c->keys[i], key) == 0)
            return c->values[i];
    return NULL;
}

/* Proposes one CONFIG record and waits for its commit (CA3). */
static int16_t propose_config(struct metadata_node *n, const char *name, const char *key,
                              const char *value, uint8_t *rec, size_t cap)
{
    size_t len = mi_encode_config(rec, cap, MI_RESOURCE_TOPIC, name, key, value);
    if (!len)
        return KAFKA_INVALID_CONFIG; /* a key or value the record cannot carry */
    uint64_t index;
    int rc = metadata_node_propose_wait(n, rec, len, &index);
    return rc ? metadata_node_kafka_error(rc) : KAFKA_NONE;
}

int16_t ctl_alter_topic_configs(struct metadata_node *n, const char *name,
                                const struct rt_topic_config *c, size_t count, bool replace_all,
                                bool validate_only, const char **message)
{
    *message = NULL;
    if (!metadata_node_is_controller(n)) { /* CA2's rule */
        *message = "this node is not the active controller";
        return KAFKA_NOT_CONTROLLER;
    }
    struct current cur = {.keys = calloc(MI_CONFIGS_MAX, sizeof(char *)),
                          .values = calloc(MI_CONFIGS_MAX, sizeof(char *))};
    size_t cap = 64 + MI_TOPIC_NAME_MAX + MI_CONFIG_KEY_MAX + MI_CONFIG_VALUE_MAX;
    uint8_t *rec = malloc(cap);
    int16_t err = KAFKA_NONE;
    if (!cur.keys || !cur.values || !rec) {
        err = KAFKA_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (metadata_node_topic_configs(n, name, collect_current, &cur) != 0) {
        err = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        *message = "This server does not host this topic-partition.";
        goto out;
    }
    if (cur.oom) {
        err = KAFKA_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    /* the set after the change must fit MI_CONFIGS_MAX (MI7) */
    unsigned after = replace_all ? 0 : cur.n;
    for (size_t i = 0; i < count; i++)
        if (replace_all ? c[i].value != NULL : c[i].value && !current_value(&cur, c[i].name))
            after++;
    if (after > MI_CONFIGS_MAX) {
        err = KAFKA_INVALID_CONFIG;
        *message = "a topic holds at most 256 config overrides";
        goto out;
    }
    if (validate_only)
        goto out;
    if (replace_all) /* AlterConfigs: the overrides it does not name go first */
        for (unsigned i = 0; i < cur.n && !err; i++) {
            bool named = false;
            for (size_t j = 0; j < count && !named; j++)
                named = c[j].value && strcmp(c[j].name, cur.keys[i]) == 0;
            if (!named)
                err = propose_config(n, name, cur.keys[i], NULL, rec, cap);
        }
    for (size_t i = 0; i < count && !err; i++) {
        const char *now = current_value(&cur, c[i].name);
        if (c[i].value ? now && strcmp(now, c[i].value) == 0 : !now)
            continue; /* no change: no record */
        err = propose_config(n, name, c[i].name, c[i].value, rec, cap);
    }
    if (err)
        *message = "the controller could not commit the config change (the keys before the "
                   "failure may have changed)";
out:
    for (unsigned i = 0; i < cur.n; i++) {
        free(cur.keys[i]);
        free(cur.values[i]);
    }
    free(cur.keys);
    free(cur.values);
    free(rec);
    return err;
}

/* ---- forwarding (CA5) ---- */

#define FORWARD_TIMEOUT_MS 15000 /* a peer's answer plus the controller's commit wait */

struct controller_at {
    int32_t id;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
};

static void find_controller(void *ctx, const struct metadata_image *img)
{
    struct controller_at *c = ctx;
    const struct mi_broker *b = metadata_image_broker(img, c->id);
    if (b) {
        memcpy(c->host, b->host, sizeof c->host);
        c->port = b->port;
    }
}

int ctl_forward(struct metadata_node *n, int16_t api_key, int16_t version, kclient_encode_fn encode,
                const void *req, uint8_t **frame, size_t *frame_len, size_t *body_at)
{
    struct quorum_status st;
    uint64_t applied, digest;
    metadata_node_status(n, &st, &applied, &digest);
    if (st.is_leader || st.leader_id <= 0)
        return -ENOTCONN;
    struct controller_at c = {.id = st.leader_id};
    metadata_node_read(n, find_controller, &c);
    if (!c.port)
        return -ENOTCONN;
    return kclient_call(c.host, c.port, FORWARD_TIMEOUT_MS, api_key, version, encode, req, frame,
                        frame_len, body_at);
}
