/*
 * server.c — the broker: wires the network loop (net.c) to the handlers (handle_*.c) over one
 * engine. It owns the per-slot state (decode arena, response writer, hole table, held fetches,
 * produce ops), the dispatch from (api key, version) to a handler, and the engine watch that
 * wakes parked fetches. It never parses a body itself (kmsg_*.c do) and never talks to sockets
 * (net.c does).
 *
 * Invariants:
 *   KS1  A request is handled only when its (key, version) is advertised (api.h's table): any
 *        other — an unknown key, a version outside the range, a header or body that does not
 *        decode — closes that connection with a log line naming the client, key and version
 *        (what a Kafka broker does with a request it cannot parse). ApiVersions is the
 *        exception: an unknown version is answered at v0 with UNSUPPORTED_VERSION (KIP-511).
 *   KS2  The slot's arena grows (doubling, up to KAFKA_ARENA_MAX_BYTES) only when a request's
 *        arrays did not fit, and is reused after: no allocation per request once warm.
 *   KS3  Every rt_fetch a response points into is held until net's release hook, which runs
 *        only after the bytes are on the wire and the kernel let go of them (net.c KN2).
 */
#include "tools/kafka/server/server.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/metrics/metrics.h"

static uint64_t server_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void kafka_server_options_init(struct kafka_server_options *o)
{
    memset(o, 0, sizeof(*o));
    o->net.host = "127.0.0.1";
    o->net.port = 9092;
    o->net.threads = 1;
    o->net.connections_max = 1024;
    o->net.request_max_bytes = 100u << 20;
    o->net.in_flight_max = 16;
    o->net.idle_max_ms = 600000;
    o->net.queued_max_bytes = 512u << 20;
    o->net.queued_max_response_bytes = 512u << 20;
    o->net.conn_max_response_bytes = 16u << 20;
    o->net.io = NET_IO_AUTO;
    o->net.zero_copy = true;
    o->broker_id = 0;
    o->advertise_host = "127.0.0.1";
    o->num_partitions = 1;
    o->auto_create_topics = true;
    o->auto_create_max_per_request = KAFKA_AUTO_CREATE_MAX_DEFAULT;
    o->transaction_max_timeout_ms = 900000;
    rt_options_init(&o->engine);
    o->zero_copy = true;
    o->fetch_max_bytes = 55u << 20;
    group_coord_options_init(&o->groups);
}

static void server_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void server_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ringtail serve: %s\n", line);
}

/* ---- helpers for the handlers ---- */

int kafka_resp_reserve(struct kafka_slot *s, size_t bytes)
{
    bytes += 1024; /* alignment slack */
    if (bytes < KAFKA_ARENA_MIN_BYTES)
        bytes = KAFKA_ARENA_MIN_BYTES;
    if (s->resp_bytes < bytes) {
        size_t cap = s->resp_bytes ? s->resp_bytes : KAFKA_ARENA_MIN_BYTES;
        while (cap < bytes)
            cap *= 2;
        uint8_t *b = realloc(s->resp_buf, cap);
        if (!b)
            return -ENOMEM;
        s->resp_buf = b;
        s->resp_bytes = cap;
    }
    kp_arena_init(&s->resp, s->resp_buf, s->resp_bytes);
    return 0;
}

void *kafka_alloc(struct kafka_slot *s, size_t count, size_t elem_size)
{
    if (count == 0 || count > INT32_MAX)
        return NULL;
    struct kp_reader dummy = {0};
    return kp_arena_array(&dummy, &s->resp, (int32_t)count, elem_size);
}

struct kp_str kafka_str_dup(struct kafka_slot *s, const char *c)
{
    size_t n = strlen(c);
    char *p = kafka_alloc(s, n + 1, 1);
    if (!p)
        return (struct kp_str){"", 0};
    memcpy(p, c, n);
    return (struct kp_str){p, (int32_t)n};
}

bool kafka_topic_name(struct kp_str name, char *out)
{
    if (name.len <= 0 || name.len > RT_TOPIC_NAME_MAX || !name.ptr)
        return false;
    memcpy(out, name.ptr, (size_t)name.len);
    out[name.len] = 0;
    return strlen(out) == (size_t)name.len; /* no NUL inside */
}

static int64_t server_now_ms(void)
{
    return (int64_t)(server_now_ns() / 1000000u);
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
    int64_t now = server_now_ms();
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
    int64_t now = server_now_ms();
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
        server_log("connection %" PRIu64 ": cannot auto-create topic '%s': %s (%s)%s",
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
    if (!auto_create_take(s)) {
        atomic_fetch_add_explicit(&srv->stats.topics_auto_create_deferred, 1, memory_order_relaxed);
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION; /* retriable: a later request creates it */
    }
    rc = rt_topic_create(srv->engine, topic, srv->opts.num_partitions);
    if (rc == 0) {
        atomic_fetch_add_explicit(&srv->stats.topics_auto_created, 1, memory_order_relaxed);
        server_log("created topic '%s' with %u partition(s) (auto.create.topics.enable)", topic,
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

void kafka_count_error(struct kafka_slot *s, int16_t code)
{
    if (code == KAFKA_NONE)
        return;
    int16_t key = s->header.api_key;
    if (key >= 0 && key < KAFKA_STATS_API_MAX)
        atomic_fetch_add_explicit(&s->server->stats.errors_by_api[key], 1, memory_order_relaxed);
}

int kafka_holes_reserve(struct kafka_slot *s, uint64_t n)
{
    if (n > KAFKA_HOLES_MAX)
        n = KAFKA_HOLES_MAX;
    if (n <= s->holes_cap)
        return 0;
    assert(s->fetch_count == 0); /* nothing points into the arrays while they move */
    struct kp_hole *h = realloc(s->holes, n * sizeof(*h));
    if (h)
        s->holes = h;
    struct net_slice *sl = realloc(s->slices, n * sizeof(*sl));
    if (sl)
        s->slices = sl;
    rt_fetch **f = realloc(s->fetches, n * sizeof(*f));
    if (f)
        s->fetches = f;
    if (!h || !sl || !f)
        return -ENOMEM;
    s->holes_cap = (uint32_t)n;
    return 0;
}

void kafka_response_begin(struct kafka_slot *s)
{
    kp_writer_reset(&s->w, s->holes, s->holes_cap);
    (void)kafka_frame_begin(&s->w);
    kafka_response_header_encode(&s->w, s->header.api_key, s->header.api_version,
                                 s->header.correlation_id);
}

enum net_verdict kafka_response_end(struct kafka_slot *s)
{
    int rc = kafka_frame_end(&s->w, 0);
    if (rc) {
        server_log("connection %" PRIu64 ": cannot encode the %s v%d response: %s; closing",
                   s->req->conn_id, kafka_api_name(s->header.api_key), s->header.api_version,
                   rt_strerror(rc));
        return NET_CLOSE;
    }
    for (size_t i = 0; i < s->w.holes_count; i++)
        s->slices[i] = (struct net_slice){
            .at = s->w.holes[i].at, .len = s->w.holes[i].len, .ptr = s->w.holes[i].ref};
    s->req->out = s->w.buf;
    s->req->out_len = s->w.len;
    s->req->slices = s->slices;
    s->req->slice_count = s->w.holes_count;
    if (s->server->opts.metrics)
        kafka_metrics_request(kafka_metrics_thread(s->server->opts.metrics), s->header.api_key,
                              s->header.api_version, server_now_ns() - s->started_ns);
    return NET_DONE;
}

/* ---- net hooks ---- */

static int hook_slot_init(void *ctx, struct net_req *req)
{
    struct kafka_slot *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->server = ctx;
    s->req = req;
    kp_writer_init(&s->w, NULL, 0);
    req->user = s;
    return 0;
}

static void hook_slot_free(void *ctx, struct net_req *req)
{
    (void)ctx;
    struct kafka_slot *s = req->user;
    if (!s)
        return;
    kp_writer_free(&s->w);
    free(s->arena_buf);
    free(s->resp_buf);
    free(s->holes);
    free(s->slices);
    free(s->fetches);
    free(s->ops);
    free(s);
    req->user = NULL;
}

static void release_fetches(struct kafka_slot *s)
{
    for (uint32_t i = 0; i < s->fetch_count; i++)
        rt_fetch_release(s->fetches[i]);
    s->fetch_count = 0;
}

static void hook_release(void *ctx, struct net_req *req)
{
    (void)ctx;
    struct kafka_slot *s = req->user;
    release_fetches(s);
    kp_arena_reset(&s->arena);
    kp_arena_reset(&s->resp);
    /* A response buffer grown past 1 MiB (records copied by --zero-copy false, a huge
     * Metadata) is given back: kept, it would pin the largest answer per slot for the life of
     * the connection, past net's bound on response bytes (net.c KN7). */
    if (s->w.cap > (1u << 20))
        kp_writer_free(&s->w);
}

int kafka_slot_decode(struct kafka_slot *s, size_t body_at, kafka_body_decode_fn decode, void *ctx)
{
    for (;;) {
        if (!s->arena_buf) {
            s->arena_buf = malloc(KAFKA_ARENA_MIN_BYTES);
            if (!s->arena_buf)
                return -ENOMEM;
            s->arena_bytes = KAFKA_ARENA_MIN_BYTES;
        }
        kp_arena_init(&s->arena, s->arena_buf, s->arena_bytes);
        struct kp_reader r;
        kp_reader_init(&r, s->req->frame + body_at, s->req->frame_len - body_at);
        int rc = decode(&r, &s->arena, ctx);
        if (rc != KP_E_LIMIT || s->arena_bytes >= KAFKA_ARENA_MAX_BYTES)
            return rc;
        size_t bigger = s->arena_bytes * 2;
        uint8_t *b = realloc(s->arena_buf, bigger);
        if (!b)
            return -ENOMEM;
        s->arena_buf = b;
        s->arena_bytes = bigger;
    }
}

static int decode_msg(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct kafka_slot *s = ctx;
    return kmsg_request_decode(r, s->header.api_key, s->header.api_version, a, &s->msg);
}

/* Decodes the body into s->msg (KS2). */
static int decode_body(struct kafka_slot *s, size_t body_at)
{
    return kafka_slot_decode(s, body_at, decode_msg, s);
}

static enum net_verdict refuse(struct kafka_slot *s, const char *why)
{
    atomic_fetch_add_explicit(&s->server->stats.requests_refused, 1, memory_order_relaxed);
    server_log("connection %" PRIu64 ": %s (api key %d %s, version %d, correlation id %" PRId32
               ", client '%.*s'); closing",
               s->req->conn_id, why, s->header.api_key, kafka_api_name(s->header.api_key),
               s->header.api_version, s->header.correlation_id,
               s->header.client_id.len > 0 ? (int)s->header.client_id.len : 0,
               s->header.client_id.len > 0 ? s->header.client_id.ptr : "");
    return NET_CLOSE;
}

static enum net_verdict hook_request(void *ctx, struct net_req *req)
{
    struct kafka_server *srv = ctx;
    struct kafka_slot *s = req->user;
    s->fetch_count = 0;
    s->acks_none = false;
    s->started_ns = srv->opts.metrics ? server_now_ns() : 0;
    s->auto_created = 0; /* a new request: its own auto-creation bound */
    struct kp_reader r;
    kp_reader_init(&r, req->frame, req->frame_len);
    memset(&s->header, 0, sizeof(s->header));
    int rc = kafka_request_header_decode(&r, &s->header);
    if (rc)
        return refuse(s, "request header does not decode");
    int16_t key = s->header.api_key;
    if (key >= 0 && key < KAFKA_STATS_API_MAX)
        atomic_fetch_add_explicit(&srv->stats.requests_by_api[key], 1, memory_order_relaxed);
    size_t body_at = (size_t)(r.p - req->frame);
    if (key == KAFKA_API_VERSIONS) {
        int16_t err = KAFKA_NONE;
        int16_t v = kmsg_api_versions_response_version(s->header.api_version, &err);
        if (err == KAFKA_NONE) {
            rc = decode_body(s, body_at);
            if (rc)
                return refuse(s, "ApiVersions body does not decode");
        }
        s->header.api_version = v; /* the answer's version (v0 for one we do not know) */
        s->api_versions_error = err;
        return kafka_handle_api_versions(s);
    }
    const struct kafka_api *api = kafka_api_find(key);
    if (!api)
        return refuse(s, "unknown API key");
    if (!kafka_api_supported(key, s->header.api_version))
        return refuse(s, "API version not supported (see ApiVersions)");
    if (!api->handler)
        return refuse(s, "API advertised without a handler");
    if (!api->decodes_itself) { /* api_table.c KA6 */
        rc = decode_body(s, body_at);
        if (rc)
            return refuse(s, rc == KP_E_LIMIT ? "request arrays too large"
                                              : "request body does not decode");
    }
    return (enum net_verdict)api->handler(s, body_at);
}

static enum net_verdict hook_retry(void *ctx, struct net_req *req, bool expired)
{
    (void)ctx;
    struct kafka_slot *s = req->user;
    /* Fetches, JoinGroups and SyncGroups park. The body is decoded again: the arena may have
     * been reused. */
    size_t body_at = 0;
    struct kp_reader r;
    kp_reader_init(&r, req->frame, req->frame_len);
    struct kafka_request_header h;
    if (kafka_request_header_decode(&r, &h) != 0)
        return NET_CLOSE;
    body_at = (size_t)(r.p - req->frame);
    if (decode_body(s, body_at) != 0)
        return NET_CLOSE;
    if (h.api_key == KAFKA_JOIN_GROUP || h.api_key == KAFKA_SYNC_GROUP)
        return kafka_handle_group_retry(s, expired);
    return kafka_handle_fetch(s, true, expired);
}

static void hook_bound(void *ctx, uint16_t port)
{
    struct kafka_server *srv = ctx;
    srv->advertise_port = srv->opts.advertise_port ? srv->opts.advertise_port : port;
}

static void on_append_watch(void *ctx)
{
    struct kafka_server *srv = ctx;
    net_wake(srv->net);
}

int kafka_server_start(rt_engine *engine, const struct kafka_server_options *opts,
                       struct kafka_server **out)
{
    if (!engine || !opts || !out || !opts->advertise_host ||
        strlen(opts->advertise_host) >= sizeof(((struct kafka_server *)0)->advertise_host))
        return RT_E_INVALID_ARGUMENT;
    struct kafka_server *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return -ENOMEM;
    srv->engine = engine;
    srv->opts = *opts;
    pthread_mutex_init(&srv->create_lock, NULL);
    srv->groups = group_coord_new(&opts->groups);
    if (!srv->groups || kafka_groups_open(srv) != 0) {
        group_coord_free(srv->groups);
        pthread_mutex_destroy(&srv->create_lock);
        free(srv);
        return -ENOMEM;
    }
    /* Slices exist only when zero_copy; net.zero_copy picks SEND_ZC/MSG_ZEROCOPY for them
     * (else a plain sendmsg from the mapping: the kernel copies, user space does not). */
    srv->opts.net.zero_copy = opts->zero_copy && opts->net.zero_copy;
    /* zero_copy off: the handlers still answer with slices and net copies them through a
     * bounded buffer per connection as the socket drains (net.c KN8), so a copying fetch never
     * materialises a whole response. */
    srv->opts.net.copy_slices = !opts->zero_copy;
    srv->opts.zero_copy = true;
    if (srv->opts.fetch_max_bytes == 0)
        srv->opts.fetch_max_bytes = 55u << 20; /* options not from kafka_server_options_init */
    snprintf(srv->advertise_host, sizeof(srv->advertise_host), "%s", opts->advertise_host);
    struct net_hooks hooks = {
        .ctx = srv,
        .slot_init = hook_slot_init,
        .slot_free = hook_slot_free,
        .request = hook_request,
        .retry = hook_retry,
        .release = hook_release,
        .bound = hook_bound,
    };
    int rc = net_start(&srv->opts.net, &hooks, &srv->net);
    if (rc) {
        group_coord_free(srv->groups);
        pthread_mutex_destroy(&srv->create_lock);
        free(srv);
        return rc;
    }
    rc = group_coord_timer_start(srv->groups, on_append_watch, srv); /* wakes parked joins */
    if (rc) {
        net_stop(srv->net, 0);
        group_coord_free(srv->groups);
        pthread_mutex_destroy(&srv->create_lock);
        free(srv);
        return rc;
    }
    rt_append_watch_set(engine, on_append_watch, srv);
    *out = srv;
    return 0;
}

uint16_t kafka_server_port(const struct kafka_server *s)
{
    return net_port(s->net);
}

const char *kafka_server_backend(const struct kafka_server *s)
{
    return net_backend_name(s->net);
}

const struct kafka_server_stats *kafka_server_stats_get(const struct kafka_server *s)
{
    return &s->stats;
}

const struct net_counters *kafka_server_net_counters(const struct kafka_server *s)
{
    return net_counters_get(s->net);
}

void kafka_server_stop(struct kafka_server *s)
{
    /* The watch goes first: once rt_append_watch_set returns no call into net is running.
     * Parked fetches are answered by net_stop itself (as expired). */
    rt_append_watch_set(s->engine, NULL, NULL);
    group_coord_timer_stop(s->groups); /* its wake calls into net */
    net_stop(s->net, 5000);            /* every produce completion has arrived when it returns */
    group_coord_free(s->groups);       /* after net_stop: parked joins are answered by it */
    pthread_mutex_destroy(&s->create_lock);
    free(s);
}
