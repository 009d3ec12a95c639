/*
 * autocreate.c — auto.create.topics.enable, bounded: kafka_topic_ensure creates a topic a
 * Metadata or Produce request names when the broker allows it, within the request's and the
 * connection's budgets (auto_create_max_per_request; issue 21 F2), and logs a refused creation
 * with its cause at a bounded rate. It never creates a topic a request did not name.
 */
#include "tools/kafka/handlers/handle.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

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
