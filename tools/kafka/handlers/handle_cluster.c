/*
 * handle_cluster.c — the broker's answers in cluster mode (`--voters`; issue 24): KRaft's
 * broker-to-controller APIs BrokerRegistration (62) and BrokerHeartbeat (63) (never advertised,
 * api_table.c KA8), Metadata made from the metadata image instead of the local engine, and the
 * CreateTopics of a cluster (the controller's, metadata_node.h MN3). It decides nothing about
 * the cluster itself: metadata_node.c does; it only reads the image and encodes answers.
 *
 * Invariants:
 *   KCL1 In cluster mode Metadata lists every registered unfenced broker at the listener it
 *        registered, the raft leader as controller (-1 when none is known), and per partition
 *        the image's leader, leader epoch, replicas, ISR (fenced replicas as offline, v5+); a
 *        topic not in the image is UNKNOWN_TOPIC_OR_PARTITION, or, when the request allows
 *        auto-creation and the broker has it on, created by the controller (autocreate.c AC1)
 *        and answered LEADER_NOT_AVAILABLE. Never on one node's engine alone: neither
 *        Metadata nor Produce creates a topic locally (autocreate.c, handle_produce.c).
 *   KCL2 CreateTopics, CreatePartitions and DeleteTopics on a node that is not the active
 *        controller are forwarded to it (handle_admin.c KAD12, KIP-590); one that cannot be
 *        (no controller known, or a peer's request: CA5) is answered NOT_CONTROLLER (41) per
 *        topic, which Kafka's clients retry. On the controller they commit records (MN3,
 *        controller_admin.h) and every node applies them to its engine; never to one node's
 *        engine alone. A cluster's CreateTopics takes every config the single broker takes,
 *        checked by the same code (KAD3), carried in the TOPIC record.
 *   KCL4 A topic's existence and partition count, where a handler checks a request's topic
 *        against them without touching its data (OffsetCommit, OffsetFetch), are the image's
 *        in a cluster (kafka_topic_partitions): a group coordinator need not replicate the
 *        topics its groups commit (Kafka's group coordinator reads its metadata cache).
 *   KCL3 An idempotent InitProducerId on a cluster node takes its id from the blocks the
 *        controller granted this node (producer_id_blocks.h PB2); with none left it answers
 *        COORDINATOR_LOAD_IN_PROGRESS (14, retriable) and wakes the agent to ask (PB3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/controller_admin.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/producer_id_blocks.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

struct metadata_node *kafka_cluster(const struct kafka_server *srv)
{
    return atomic_load_explicit(&((struct kafka_server *)srv)->cluster, memory_order_acquire);
}

struct replica_state *kafka_replicas(const struct kafka_server *srv)
{
    return metadata_node_replicas(kafka_cluster(srv));
}

enum net_verdict kafka_handle_broker_registration(struct kafka_slot *s)
{
    const struct kmsg_broker_registration_request *q = &s->msg.broker_registration;
    struct metadata_node *mn = kafka_cluster(s->server);
    struct kmsg_broker_registration_response m = {.error_code = KAFKA_NONE, .broker_epoch = -1};
    char host[MI_HOST_BYTES_MAX + 1];
    if (!mn)
        m.error_code = KAFKA_NOT_CONTROLLER;
    else if (q->listeners_count < 1 || q->listeners[0].host.len <= 0 ||
             q->listeners[0].host.len > MI_HOST_BYTES_MAX || q->listeners[0].port == 0)
        m.error_code = KAFKA_INVALID_REQUEST;
    else {
        memcpy(host, q->listeners[0].host.ptr, (size_t)q->listeners[0].host.len);
        host[q->listeners[0].host.len] = '\0';
        m.error_code =
            metadata_node_register(mn, q->broker_id, host, (uint16_t)q->listeners[0].port,
                                   q->incarnation_id, &m.broker_epoch);
    }
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_broker_registration_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_broker_heartbeat(struct kafka_slot *s)
{
    const struct kmsg_broker_heartbeat_request *q = &s->msg.broker_heartbeat;
    struct metadata_node *mn = kafka_cluster(s->server);
    struct kmsg_broker_heartbeat_response m = {.error_code = KAFKA_NOT_CONTROLLER,
                                               .is_fenced = true};
    if (mn && q->want_shut_down) /* metadata_node.h MN5 */
        m.error_code = metadata_node_heartbeat_shutdown(mn, q->broker_id, q->broker_epoch,
                                                        &m.is_fenced, &m.should_shut_down);
    else if (mn)
        m.error_code =
            metadata_node_heartbeat(mn, q->broker_id, q->broker_epoch, q->want_fence, &m.is_fenced);
    m.is_caught_up = m.error_code == KAFKA_NONE;
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_broker_heartbeat_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* AlterPartition (56) on the controller: metadata_node_alter_partition per partition (it waits
 * for the commit: this row runs off the loops, api_table.c). */
enum net_verdict kafka_handle_alter_partition(struct kafka_slot *s)
{
    const struct kmsg_alter_partition_request *q = &s->msg.alter_partition;
    struct metadata_node *mn = kafka_cluster(s->server);
    struct kmsg_alter_partition_response m = {.error_code = KAFKA_NONE};
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    size_t parts = 0;
    for (int32_t t = 0; t < nt; t++)
        parts += q->topics[t].partitions_count > 0 ? (size_t)q->topics[t].partitions_count : 0;
    if (kafka_resp_reserve(s, (size_t)nt * sizeof(struct kmsg_alter_partition_topic_response) +
                                  parts * sizeof(struct kmsg_alter_partition_partition_response) +
                                  64) != 0)
        return NET_CLOSE;
    m.topics = kafka_alloc(s, (size_t)nt, sizeof(*m.topics));
    if (nt > 0 && !m.topics)
        return NET_CLOSE;
    m.topics_count = nt;
    for (int32_t t = 0; t < nt; t++) {
        const struct kmsg_alter_partition_topic *qt = &q->topics[t];
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_alter_partition_partition_response *rp =
            kafka_alloc(s, (size_t)np, sizeof(*rp));
        if (np > 0 && !rp)
            return NET_CLOSE;
        m.topics[t] = (struct kmsg_alter_partition_topic_response){
            .topic_name = qt->topic_name, .partitions = rp, .partitions_count = np};
        char name[RT_TOPIC_NAME_MAX + 1];
        bool named = kafka_topic_name(qt->topic_name, name);
        for (int32_t p = 0; p < np; p++) {
            const struct kmsg_alter_partition_partition *qp = &qt->partitions[p];
            rp[p] = (struct kmsg_alter_partition_partition_response){
                .partition_index = qp->partition_index,
                .leader_id = q->broker_id,
                .leader_epoch = qp->leader_epoch,
                .isr = qp->new_isr,
                .isr_count = qp->new_isr_count,
                .partition_epoch = qp->partition_epoch};
            if (!mn)
                rp[p].error_code = KAFKA_NOT_CONTROLLER;
            else if (!named)
                rp[p].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (qp->new_isr_count < 1 || qp->new_isr_count > MI_REPLICAS_MAX)
                rp[p].error_code = KAFKA_INVALID_REQUEST;
            else
                rp[p].error_code = metadata_node_alter_partition(
                    mn, q->broker_id, name, qp->partition_index, qp->leader_epoch,
                    qp->partition_epoch, qp->new_isr, (unsigned)qp->new_isr_count);
            if (rp[p].error_code == KAFKA_NONE) /* the record raised it by one (MI8) */
                rp[p].partition_epoch = qp->partition_epoch + 1;
            kafka_count_error(s, rp[p].error_code);
        }
    }
    kafka_response_begin(s);
    kmsg_alter_partition_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- a topic as the broker knows it (KCL4) ---- */

struct topic_parts {
    const char *name;
    uint32_t parts;
    bool found;
};

static void read_topic_parts(void *ctx, const struct metadata_image *img)
{
    struct topic_parts *tp = ctx;
    const struct mi_topic *t = metadata_image_topic(img, tp->name);
    if (t) {
        tp->found = true;
        tp->parts = (uint32_t)t->partitions_count;
    }
}

int kafka_topic_partitions(struct kafka_server *srv, const char *name, uint32_t *parts)
{
    struct metadata_node *mn = kafka_cluster(srv);
    if (!mn)
        return rt_topic_describe(srv->engine, name, parts);
    struct topic_parts tp = {.name = name};
    metadata_node_read(mn, read_topic_parts, &tp);
    if (!tp.found)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    *parts = tp.parts;
    return 0;
}

/* ---- Metadata from the image (KCL1) ---- */

struct meta_build {
    struct kafka_slot *s;
    const struct kmsg_metadata_request *q;
    struct kmsg_metadata_broker *brokers;
    int32_t brokers_count;
    struct kmsg_metadata_topic *topics;
    int32_t topics_count;
    bool failed;
};

static bool fenced(const struct metadata_image *img, int32_t id)
{
    const struct mi_broker *b = metadata_image_broker(img, id);
    return !b || b->fenced;
}

static void fill_topic(struct meta_build *mb, const struct metadata_image *img,
                       const struct mi_topic *t, struct kmsg_metadata_topic *out)
{
    struct kafka_slot *s = mb->s;
    out->error_code = KAFKA_NONE;
    out->is_internal = strncmp(t->name, "__", 2) == 0;
    int32_t n = t->partitions_count;
    struct kmsg_metadata_partition *p = kafka_alloc(s, (size_t)n, sizeof(*p));
    if (!p && n > 0) {
        out->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        const struct mi_partition *ip = &t->partitions[i];
        int32_t *rep = kafka_alloc(s, ip->replicas_count, sizeof(int32_t));
        int32_t *isr = kafka_alloc(s, ip->isr_count ? ip->isr_count : 1, sizeof(int32_t));
        int32_t *off = kafka_alloc(s, ip->replicas_count, sizeof(int32_t));
        if (!rep || !isr || !off) {
            out->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
            return;
        }
        int32_t offc = 0;
        for (unsigned r = 0; r < ip->replicas_count; r++) {
            rep[r] = ip->replicas[r];
            if (fenced(img, ip->replicas[r]))
                off[offc++] = ip->replicas[r];
        }
        memcpy(isr, ip->isr, ip->isr_count * sizeof(int32_t));
        p[i] = (struct kmsg_metadata_partition){
            .error_code = ip->leader < 0 ? KAFKA_LEADER_NOT_AVAILABLE : KAFKA_NONE,
            .partition_index = i,
            .leader_id = ip->leader,
            .replica_nodes = rep,
            .replica_nodes_count = ip->replicas_count,
            .isr_nodes = isr,
            .isr_nodes_count = ip->isr_count,
            .leader_epoch = ip->leader_epoch,
            .offline_replicas = off,
            .offline_replicas_count = offc,
        };
    }
    out->partitions = p;
    out->partitions_count = n;
}

static void build_metadata(void *ctx, const struct metadata_image *img)
{
    struct meta_build *mb = ctx;
    struct kafka_slot *s = mb->s;
    const struct kmsg_metadata_request *q = mb->q;
    size_t want = q->topics_count < 0 ? img->topics_count : (size_t)q->topics_count;
    size_t rows = 0, reps = 0; /* the partitions answered, and their replicas */
    for (size_t i = 0; i < want; i++) {
        const struct mi_topic *t = NULL;
        char name[RT_TOPIC_NAME_MAX + 1];
        if (q->topics_count < 0)
            t = img->topics[i];
        else if (q->topics[i].name.len >= 0 && kafka_topic_name(q->topics[i].name, name))
            t = metadata_image_topic(img, name);
        for (int32_t p = 0; t && p < t->partitions_count; p++) {
            rows++;
            reps += t->partitions[p].replicas_count + 1u;
        }
    }
    size_t need = img->brokers_count * (sizeof(struct kmsg_metadata_broker) + 8 + 264) +
                  want * (sizeof(struct kmsg_metadata_topic) + 8 + 256) +
                  rows * (sizeof(struct kmsg_metadata_partition) + 8 + 3 * 8) + reps * 3 * 4 + 4096;
    if (kafka_resp_reserve(s, need) != 0) {
        mb->failed = true;
        return;
    }
    mb->brokers = kafka_alloc(s, img->brokers_count ? img->brokers_count : 1, sizeof(*mb->brokers));
    for (unsigned i = 0; mb->brokers && i < img->brokers_count; i++) {
        const struct mi_broker *b = &img->brokers[i];
        if (b->fenced)
            continue;
        mb->brokers[mb->brokers_count++] = (struct kmsg_metadata_broker){
            .node_id = b->id,
            .host = kafka_str_dup(s, b->host),
            .port = b->port,
            .rack = {NULL, -1},
        };
    }
    mb->topics = kafka_alloc(s, want ? want : 1, sizeof(*mb->topics));
    if (!mb->topics || !mb->brokers) {
        mb->failed = true;
        return;
    }
    if (q->topics_count < 0) {
        for (unsigned i = 0; i < img->topics_count; i++) {
            const struct mi_topic *t = img->topics[i];
            if (!kafka_authorize_topic(s, t->name, ACL_OP_DESCRIBE))
                continue; /* KZ2 */
            struct kmsg_metadata_topic *out = &mb->topics[mb->topics_count++];
            out->name = kafka_str_dup(s, t->name);
            fill_topic(mb, img, t, out);
        }
        return;
    }
    for (int32_t i = 0; i < q->topics_count; i++) {
        struct kmsg_metadata_topic *out = &mb->topics[mb->topics_count++];
        out->name = q->topics[i].name;
        char name[RT_TOPIC_NAME_MAX + 1];
        if (q->topics[i].name.len < 0) { /* by id alone (KM3) */
            memcpy(out->topic_id, q->topics[i].topic_id, sizeof out->topic_id);
            out->error_code = KAFKA_UNKNOWN_TOPIC_ID;
            continue;
        }
        if (!kafka_topic_name(q->topics[i].name, name)) {
            out->error_code = KAFKA_INVALID_TOPIC_EXCEPTION;
            continue;
        }
        if (!kafka_authorize_topic(s, name, ACL_OP_DESCRIBE)) {
            out->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        const struct mi_topic *t = metadata_image_topic(img, name);
        if (!t) {
            out->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        fill_topic(mb, img, t, out);
    }
}

/* AC1: each named topic the image does not hold, asked of the controller (outside the image's
 * read: the creation may wait for the quorum); its answer LEADER_NOT_AVAILABLE, or the error
 * the creation gave. The broker's internal topics and a denied CREATE keep theirs. */
static void auto_create_unknown(struct kafka_slot *s, struct metadata_node *mn,
                                struct meta_build *mb)
{
    for (int32_t i = 0; i < mb->topics_count; i++) {
        struct kmsg_metadata_topic *t = &mb->topics[i];
        char name[RT_TOPIC_NAME_MAX + 1];
        if (t->error_code != KAFKA_UNKNOWN_TOPIC_OR_PARTITION || !kafka_topic_name(t->name, name) ||
            strncmp(name, "__", 2) == 0)
            continue;
        if (!kafka_authorize_create_topic(s, name)) { /* KZ2; Kafka: CREATE denied */
            t->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        t->error_code = kafka_cluster_auto_create(s, mn, name);
    }
}

enum net_verdict kafka_handle_metadata_cluster(struct kafka_slot *s, struct metadata_node *mn)
{
    struct kafka_server *srv = s->server;
    struct meta_build mb = {.s = s, .q = &s->msg.metadata};
    metadata_node_read(mn, build_metadata, &mb);
    if (mb.failed)
        return NET_CLOSE;
    if (s->msg.metadata.allow_auto_topic_creation && srv->opts.auto_create_topics)
        auto_create_unknown(s, mn, &mb); /* autocreate.c AC1 */
    struct quorum_status st;
    uint64_t applied, digest;
    metadata_node_status(mn, &st, &applied, &digest);
    struct kmsg_metadata_broker self = {
        .node_id = srv->opts.broker_id,
        .host = kp_str_of(kafka_advertised_host(srv, s->req)),
        .port = kafka_advertised_port(srv, s->req),
        .rack = {NULL, -1},
    };
    for (int32_t i = 0; i < mb.topics_count; i++)
        kafka_count_error(s, mb.topics[i].error_code);
    struct kmsg_metadata_response m = {
        /* before any registration commits, this node alone (a client needs one broker) */
        .brokers = mb.brokers_count ? mb.brokers : &self,
        .brokers_count = mb.brokers_count ? mb.brokers_count : 1,
        .cluster_id = kp_str_of("ringtail"),
        .controller_id = st.leader_id > 0 ? st.leader_id : -1,
        .topics = mb.topics,
        .topics_count = mb.topics_count,
    };
    kafka_response_begin(s);
    kmsg_metadata_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- CreateTopics (KCL2) ---- */

int16_t kafka_cluster_create_topic(struct kafka_slot *s, struct metadata_node *mn,
                                   const struct kmsg_create_topics_topic *t, bool validate_only,
                                   const char **message)
{
    char name[RT_TOPIC_NAME_MAX + 1];
    if (!kafka_topic_name(t->name, name)) {
        *message = "topic names are 1-249 characters of [a-zA-Z0-9._-]";
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    }
    if (strncmp(name, "__", 2) == 0) { /* the controller's (metadata_node.h MN8), as a broker's */
        *message = "names beginning with \"__\" are the broker's internal topics";
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    }
    if (t->assignments_count > 0) {
        *message = "manual replica assignments are not served by a cluster yet";
        return KAFKA_INVALID_REPLICA_ASSIGNMENT;
    }
    struct rt_topic_config *c = NULL;
    size_t n = 0;
    int16_t err = kafka_create_topic_configs(s, t, &c, &n, message); /* the single broker's KAD3 */
    if (err)
        return err;
    const char **keys = n ? kafka_alloc(s, n, sizeof(char *)) : NULL;
    const char **values = n ? kafka_alloc(s, n, sizeof(char *)) : NULL;
    if (n && (!keys || !values)) {
        *message = "out of memory";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(c[j].name, c[i].name) == 0) { /* the engine's refusal, KAD3 */
                char m[320];
                snprintf(m, sizeof m, "config %s given twice", c[i].name);
                *message = kafka_str_dup(s, m).ptr;
                return KAFKA_INVALID_CONFIG;
            }
        keys[i] = c[i].name;
        values[i] = c[i].value;
    }
    if (n > MI_CONFIGS_MAX) {
        *message = "a topic holds at most 256 config overrides";
        return KAFKA_INVALID_CONFIG;
    }
    int32_t partitions =
        t->num_partitions == -1 ? (int32_t)s->server->opts.num_partitions : t->num_partitions;
    int16_t rf = t->replication_factor == -1 ? s->server->opts.default_replication_factor
                                             : t->replication_factor;
    return metadata_node_create_topic(mn, name, partitions, rf, keys, values, (unsigned)n,
                                      validate_only, message);
}

/* ---- CreatePartitions, DeleteTopics (KCL2), InitProducerId (KCL3) ---- */

int16_t kafka_cluster_create_partitions(struct kafka_slot *s, struct metadata_node *mn,
                                        const struct kmsg_create_partitions_topic *t,
                                        bool validate_only, const char **message)
{
    (void)s;
    char name[RT_TOPIC_NAME_MAX + 1];
    if (!kafka_topic_name(t->name, name)) {
        *message = "This server does not host this topic-partition.";
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (strncmp(name, "__", 2) == 0) { /* __consumer_offsets keeps the engine's count (MN8) */
        *message = "the broker's internal topics keep their partition count";
        return KAFKA_INVALID_REQUEST;
    }
    if (t->assignments_count >= 0) {
        *message = "manual replica assignments are not served by a cluster yet";
        return KAFKA_INVALID_REPLICA_ASSIGNMENT;
    }
    return ctl_create_partitions(mn, name, t->count, validate_only, message);
}

int16_t kafka_cluster_delete_topic(struct kafka_slot *s, struct metadata_node *mn,
                                   struct kp_str name, const char **message)
{
    (void)s;
    char topic[RT_TOPIC_NAME_MAX + 1];
    if (!kafka_topic_name(name, topic))
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    if (strncmp(topic, "__", 2) == 0) { /* as a single broker answers (handle_admin.c KAD6) */
        *message = "the broker's internal topics cannot be deleted";
        return KAFKA_INVALID_REQUEST;
    }
    return ctl_delete_topic(mn, topic, message);
}

int16_t kafka_cluster_producer_id(struct kafka_slot *s, struct metadata_node *mn, int64_t *id,
                                  int16_t *epoch)
{
    int rc = rt_producer_id_allocate(s->server->engine, id, epoch);
    int64_t left = 0;
    if ((rc == 0 || rc == RT_E_PRODUCER_IDS_EXHAUSTED) &&
        rt_producer_id_available(s->server->engine, &left) == 0 && left < PID_BLOCK_LOW)
        metadata_node_kick(mn); /* PB3: the agent asks for the next block now */
    if (rc == RT_E_PRODUCER_IDS_EXHAUSTED)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
    if (rc) {
        fprintf(stderr, "ringtail serve: InitProducerId: %s: %s\n", rt_strerror(rc),
                rt_error_detail());
        return kafka_error_from_rt(rc);
    }
    return KAFKA_NONE;
}

/* ---- AllocateProducerIds (producer_id_blocks.h PB1) ---- */

enum net_verdict kafka_handle_allocate_producer_ids(struct kafka_slot *s)
{
    const struct kmsg_allocate_producer_ids_request *q = &s->msg.allocate_producer_ids;
    struct metadata_node *mn = kafka_cluster(s->server);
    struct kmsg_allocate_producer_ids_response m = {.error_code = KAFKA_NOT_CONTROLLER,
                                                    .producer_id_start = -1};
    if (mn) /* producer_id_blocks.h PB1 */
        m.error_code = metadata_node_allocate_producer_ids(
            mn, q->broker_id, q->broker_epoch, &m.producer_id_start, &m.producer_id_len);
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_allocate_producer_ids_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
