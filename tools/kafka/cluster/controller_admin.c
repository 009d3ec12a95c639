/*
 * controller_admin.c — CreatePartitions and DeleteTopics on the active controller
 * (controller_admin.h CA1, CA2): read the image, place, commit the records. Every node's agent
 * makes the result local (metadata_node.c MN2, MN4). It never proposes for a topic the image
 * does not hold and never waits on a loop thread (its callers run on the admin thread, KA7).
 */
#include "tools/kafka/cluster/controller_admin.h"

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
    uint8_t rec[64 + 8 * MI_REPLICAS_MAX];
    for (unsigned i = 0; !err && !validate_only && i < add; i++) {
        const int32_t *r = &place[(size_t)i * v->rf];
        size_t len = mi_encode_partition(rec, sizeof rec, v->id, v->have + (int32_t)i, r, v->rf,
                                         r[0], 0, r, v->rf);
        uint64_t index;
        int rc = len ? metadata_node_propose_wait(n, rec, len, &index) : -1;
        if (rc) {
            err = len ? metadata_node_kafka_error(rc) : KAFKA_UNKNOWN_SERVER_ERROR;
            *message = "the controller could not commit the new partitions (those before the "
                       "failure may exist)";
        }
    }
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
