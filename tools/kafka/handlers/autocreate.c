/*
 * autocreate.c — auto.create.topics.enable, bounded: kafka_topic_ensure creates a topic a
 * Metadata or Produce request names when the broker allows it, within the request's and the
 * connection's budgets (auto_create_max_per_request; issue 21 F2), and logs a refused creation
 * with its cause at a bounded rate. It never creates a topic a request did not name.
 * In a cluster (`--voters`) a topic is created by the active controller, never on one node's
 * engine: kafka_cluster_auto_create asks it (AC1).
 *
 * Invariants:
 *   AC1 In a cluster, a Metadata request allowing auto-creation that names a topic the image
 *       does not hold creates it as Kafka's AutoTopicCreationManager does: a CreateTopics of
 *       the topic (the broker's --num-partitions, the default replication factor) by the
 *       active controller (handle_cluster.c KCL2: here when this node is it, else forwarded
 *       as one CreateTopics v4 from the peer id, controller_admin.h CA5), within the same
 *       budgets as a single broker's, after the same CREATE authorization; the topic's answer
 *       is then LEADER_NOT_AVAILABLE (5, retriable: the clients ask again and find it once
 *       their node applied the record), the creation's own error when it refused the topic
 *       for a reason a retry cannot change (an invalid name, a policy).
 */
#include "tools/kafka/handlers/handle.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/controller_admin.h"
#include "tools/kafka/cluster/metadata_node.h"

static int64_t autocreate_now_ms(void)
{
    return (int64_t)(kafka_now_ns() / 1000000u);
}

/* Whether the slot's request and its connection may auto-create one more topic now; takes it
 * when so. The request's count is reset when a request starts in the slot (hook_request). */
static bool auto_create_take(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    uint32_t max = srv->opts.auto_create_max_per_request;
    if (max == 0)
        return false;
    if (s->auto_created >= max)
        return false;
    uint64_t conn = s->req ? s->req->conn_id : 0;
    int64_t now = autocreate_now_ms();
    pthread_mutex_lock(&srv->create_lock);
    struct kafka_create_bucket *b = &srv->create_buckets[conn % KAFKA_CREATE_BUCKETS];
    if (b->conn_id != conn || b->refilled_ms == 0) {
        *b = (struct kafka_create_bucket){.conn_id = conn, .tokens = max, .refilled_ms = now};
    } else if (now > b->refilled_ms) {
        b->tokens += (double)(now - b->refilled_ms) * max / 1000.0; /* max a second */
        if (b->tokens > max)
            b->tokens = max;
        b->refilled_ms = now;
    }
    bool ok = b->tokens >= 1.0;
    if (ok)
        b->tokens -= 1.0;
    pthread_mutex_unlock(&srv->create_lock);
    if (ok)
        s->auto_created++;
    return ok;
}

/* A refused creation, logged with its cause: the first of each cause, then at most one line
 * per 10 s (with the count of those not logged), so a client retrying cannot flood the log. */
static void auto_create_failed(struct kafka_slot *s, const char *topic, int rc)
{
    struct kafka_server *srv = s->server;
    atomic_fetch_add_explicit(&srv->stats.topics_auto_create_failed, 1, memory_order_relaxed);
    int64_t now = autocreate_now_ms();
    pthread_mutex_lock(&srv->create_lock);
    bool log = rc != srv->create_failure_logged_rc ||
               now - srv->create_failure_logged_ms >= 10000 || srv->create_failure_logged_ms == 0;
    uint64_t unlogged = srv->create_failures_unlogged;
    if (log) {
        srv->create_failure_logged_rc = rc;
        srv->create_failure_logged_ms = now;
        srv->create_failures_unlogged = 0;
    } else {
        srv->create_failures_unlogged++;
    }
    pthread_mutex_unlock(&srv->create_lock);
    if (log)
        kafka_log("connection %" PRIu64 ": cannot auto-create topic '%s': %s (%s)%s",
                  s->req ? s->req->conn_id : 0, topic, rt_strerror(rc), rt_error_detail(),
                  unlogged ? " (and earlier failures not logged)" : "");
}

int kafka_topic_ensure(struct kafka_slot *s, const char *topic, bool allow,
                       uint32_t *partitions_out)
{
    struct kafka_server *srv = s->server;
    uint32_t parts = 0;
    int rc = rt_topic_describe(srv->engine, topic, &parts);
    if (rc == 0) {
        *partitions_out = parts;
        return 0;
    }
    if (rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION || !allow || !srv->opts.auto_create_topics)
        return rc;
    if (kafka_cluster(srv)) /* a cluster's topics are the controller's (handle_cluster.c KCL1) */
        return rc;
    if (!auto_create_take(s)) {
        atomic_fetch_add_explicit(&srv->stats.topics_auto_create_deferred, 1, memory_order_relaxed);
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION; /* retriable: a later request creates it */
    }
    rc = rt_topic_create(srv->engine, topic, srv->opts.num_partitions);
    if (rc == 0) {
        atomic_fetch_add_explicit(&srv->stats.topics_auto_created, 1, memory_order_relaxed);
        kafka_log("created topic '%s' with %u partition(s) (auto.create.topics.enable)", topic,
                  srv->opts.num_partitions);
    } else if (rc == RT_E_INVALID_TOPIC || rc == RT_E_INTERNAL_TOPIC) {
        return rc;
    } else if (rc != RT_E_TOPIC_ALREADY_EXISTS) {
        auto_create_failed(s, topic, rc);
        /* An OS error is the disk's (ENOSPC, EIO, ...): KAFKA_STORAGE_ERROR, as Kafka answers
         * a log directory failure; the engine's limits keep their own codes (POLICY_VIOLATION). */
        return rc > -4096 && rc < 0 ? RT_E_IO_FAILED : rc;
    }
    rc = rt_topic_describe(srv->engine, topic, &parts);
    if (rc == 0)
        *partitions_out = parts;
    return rc;
}

/* ---- a cluster's auto-creation (AC1) ---- */

static int encode_create_topics(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_create_topics_request_encode(w, v, m);
}

/* The CreateTopics of `topic` forwarded to the active controller: its answer's error code, or
 * NOT_CONTROLLER / REQUEST_TIMED_OUT / UNKNOWN_SERVER_ERROR when there was none. */
static int16_t auto_create_forward(struct metadata_node *mn, struct kmsg_create_topics_request *q)
{
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    int rc = ctl_forward(mn, KAFKA_CREATE_TOPICS, 4, encode_create_topics, q, &frame, &frame_len,
                         &body_at);
    if (rc)
        return rc == -ENOTCONN ? KAFKA_NOT_CONTROLLER : KAFKA_REQUEST_TIMED_OUT;
    int16_t err = KAFKA_UNKNOWN_SERVER_ERROR;
    size_t arena_len = 8 * frame_len + 4096;
    void *arena = malloc(arena_len);
    if (arena) {
        struct kp_arena a;
        kp_arena_init(&a, arena, arena_len);
        struct kp_reader rd;
        kp_reader_init(&rd, frame + body_at, frame_len - body_at);
        struct kmsg_create_topics_response r = {0};
        if (kmsg_create_topics_response_decode(&rd, 4, &a, &r) == 0 && r.topics_count == 1)
            err = r.topics[0].error_code;
        free(arena);
    }
    free(frame);
    return err;
}

int16_t kafka_cluster_auto_create(struct kafka_slot *s, struct metadata_node *mn, const char *topic)
{
    struct kafka_server *srv = s->server;
    if (!auto_create_take(s)) {
        atomic_fetch_add_explicit(&srv->stats.topics_auto_create_deferred, 1, memory_order_relaxed);
        return KAFKA_LEADER_NOT_AVAILABLE; /* retriable: a later request creates it */
    }
    struct kmsg_create_topics_topic t = {
        .name = kp_str_of(topic),
        .num_partitions = (int32_t)srv->opts.num_partitions,
        .replication_factor = -1,
    };
    int16_t err;
    const char *message = NULL;
    if (metadata_node_is_controller(mn)) {
        err = kafka_cluster_create_topic(s, mn, &t, false, &message);
    } else {
        struct kmsg_create_topics_request q = {
            .topics = &t, .topics_count = 1, .timeout_ms = 10000};
        err = auto_create_forward(mn, &q);
    }
    switch (err) {
    case KAFKA_NONE:
        atomic_fetch_add_explicit(&srv->stats.topics_auto_created, 1, memory_order_relaxed);
        kafka_log("asked the controller to create topic '%s' with %u partition(s) "
                  "(auto.create.topics.enable)",
                  topic, srv->opts.num_partitions);
        return KAFKA_LEADER_NOT_AVAILABLE;
    case KAFKA_TOPIC_ALREADY_EXISTS: /* another node's request created it first */
    case KAFKA_NOT_CONTROLLER:
    case KAFKA_REQUEST_TIMED_OUT:
        return KAFKA_LEADER_NOT_AVAILABLE;
    default: /* the controller's own refusal (an invalid name, a policy), answered as it is */
        atomic_fetch_add_explicit(&srv->stats.topics_auto_create_failed, 1, memory_order_relaxed);
        return err;
    }
}
