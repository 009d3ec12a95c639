/*
 * server.c — the broker: wires the network loop (net.c) to the handlers (handle_*.c) over one
 * engine. It owns the slots' life (created and freed with net's requests; their memory and
 * response helpers are handlers/slot.c's), the dispatch from (api key, version) to the table
 * row's handler, and the engine watch that wakes parked fetches. It is the broker's top layer:
 * nothing in tools/kafka includes it. It never parses a body itself (kmsg_*.c do) and never
 * talks to sockets (net.c does).
 *
 * Invariants:
 *   KS1  A request is handled only when its (key, version) is advertised (api.h's table): any
 *        other — an unknown key, a version outside the range, a header or body that does not
 *        decode — closes that connection with a log line naming the client, key and version
 *        (what a Kafka broker does with a request it cannot parse). ApiVersions is the
 *        exception: an unknown version is answered at v0 with UNSUPPORTED_VERSION (KIP-511);
 *        on a cluster node (--voters) the internal broker-to-controller rows are handled too
 *        within their codec range (api_table.c KA8), and an advertised API's broker-to-broker
 *        versions above the advertised ones (KA9: AddPartitionsToTxn v4), never advertised.
 *   KS2  The slot's arena grows (doubling, up to KAFKA_ARENA_MAX_BYTES) only when a request's
 *        arrays did not fit, and is reused after: no allocation per request once warm.
 *   KS3  Every rt_fetch a response points into is held until net's release hook, which runs
 *        only after the bytes are on the wire and the kernel let go of them (net.c KN2).
 *   KS4  A request of an off_loop row (api_table.c KA7: its handler may wait for the disk) is
 *        decoded on its loop thread, answered NET_PENDING there, and handled on the server's
 *        one admin thread, in arrival order; the answer goes back through net_req_complete,
 *        so the connection's answers keep their order and the loop keeps serving its other
 *        connections while a topic is created, deleted or altered. A Produce that names a
 *        topic auto-creation must create goes there too (its appends then complete it as
 *        usual: NET_PENDING is not completed by the admin thread), and AddPartitionsToTxn v4
 *        (txn_verify.c KTV5: the coordinator's lock on an id may be held across a marker
 *        writer's network round). The admin thread outlives
 *        net_stop (which waits for pending requests) and is joined after it.
 *   KS5  Every connection has its kafka_session (handlers/session.h) from accept to close,
 *        made before its slots and freed after them: a handler may always read
 *        s->req->session->user.
 *   KS6  On a SASL listener the gate runs before any dispatch (handle_sasl.c KSA1): a raw
 *        SASL token after SaslHandshake v0 goes to handle_sasl.c before a header is decoded
 *        (KSA2), and a request the session may not make yet (or any more: KIP-368's expiry)
 *        closes the connection with a log line. A failed authentication's delayed answer
 *        (KSA3) comes back through the retry hook.
 *   KS7  A server started as a cluster node (opts.cluster_member, --voters) serves no request
 *        until kafka_server_set_cluster handed it its cluster member and that member has caught
 *        up with the metadata log once (metadata_node.h MN9): before that every request
 *        (ApiVersions too) closes its connection with a log line, as a Kafka broker accepts no
 *        request before it has caught up with the metadata. Served earlier it would be a single
 *        broker for that moment (Metadata naming it every partition's leader, Produce appended
 *        without the leadership check and acks=all answered without the ISR, KPR6: a node
 *        restarted from SIGKILL acknowledged records its followers never had, lost at the next
 *        truncation), or answer from the image of its own stale log (a topic without its
 *        partitions, leaderships that moved while it was down, producer state behind the
 *        producer's: OUT_OF_ORDER_SEQUENCE_NUMBER) (docs/cluster.md §9.1).
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

#include "tools/kafka/auth/authorizer.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/config/broker_config_store.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/handlers/txn_cluster.h"
#include "tools/kafka/metrics/metrics.h"

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
    free(s->dc_buf);
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
    free(s->dc_buf); /* handle_fetch.c KF10 */
    s->dc_buf = NULL;
    s->dc_cap = s->dc_off = s->dc_len = 0;
    s->dc_owner = NULL;
    s->dc_generated = false;
    kp_arena_reset(&s->arena);
    kp_arena_reset(&s->resp);
    /* A response buffer grown past 1 MiB (records copied by --zero-copy false, a huge
     * Metadata) is given back: kept, it would pin the largest answer per slot for the life of
     * the connection, past net's bound on response bytes (net.c KN7). */
    if (s->w.cap > (1u << 20))
        kp_writer_free(&s->w);
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
    kafka_log("connection %" PRIu64 ": %s (api key %d %s, version %d, correlation id %" PRId32
              ", client '%.*s'); closing",
              s->req->conn_id, why, s->header.api_key, kafka_api_name(s->header.api_key),
              s->header.api_version, s->header.correlation_id,
              s->header.client_id.len > 0 ? (int)s->header.client_id.len : 0,
              s->header.client_id.len > 0 ? s->header.client_id.ptr : "");
    return NET_CLOSE;
}

/* ---- the admin thread (KS4) ---- */

static void *admin_main(void *arg)
{
    struct kafka_server *srv = arg;
    pthread_mutex_lock(&srv->admin_lock);
    for (;;) {
        while (!srv->admin_head && !srv->admin_stop)
            pthread_cond_wait(&srv->admin_cond, &srv->admin_lock);
        struct kafka_slot *s = srv->admin_head;
        if (!s)
            break; /* stopping, and nothing is left */
        srv->admin_head = s->admin_next;
        if (!srv->admin_head)
            srv->admin_tail = NULL;
        pthread_mutex_unlock(&srv->admin_lock);
        const struct kafka_api *api = kafka_api_find(s->header.api_key);
        assert(api);
        enum net_verdict v = (enum net_verdict)api->handler(s, s->admin_body_at);
        assert(v != NET_PARK); /* no off-loop handler parks */
        if (v == NET_CLOSE)
            s->req->close_reason = "the request could not be answered";
        if (v != NET_PENDING) /* a pending one (a produce) completes itself */
            net_req_complete(s->req);
        pthread_mutex_lock(&srv->admin_lock);
    }
    pthread_mutex_unlock(&srv->admin_lock);
    return NULL;
}

static enum net_verdict admin_enqueue(struct kafka_server *srv, struct kafka_slot *s,
                                      size_t body_at)
{
    s->admin_next = NULL;
    s->admin_body_at = body_at;
    pthread_mutex_lock(&srv->admin_lock);
    if (srv->admin_tail)
        srv->admin_tail->admin_next = s;
    else
        srv->admin_head = s;
    srv->admin_tail = s;
    pthread_cond_signal(&srv->admin_cond);
    pthread_mutex_unlock(&srv->admin_lock);
    return NET_PENDING;
}

static int admin_start(struct kafka_server *srv)
{
    pthread_mutex_init(&srv->admin_lock, NULL);
    pthread_cond_init(&srv->admin_cond, NULL);
    int rc = pthread_create(&srv->admin_thread, NULL, admin_main, srv);
    if (rc) {
        pthread_cond_destroy(&srv->admin_cond);
        pthread_mutex_destroy(&srv->admin_lock);
        return -rc;
    }
    return 0;
}

/* After net_stop: every queued request was handled (net_stop waits for pending ones). */
static void admin_stop(struct kafka_server *srv)
{
    pthread_mutex_lock(&srv->admin_lock);
    srv->admin_stop = true;
    pthread_cond_signal(&srv->admin_cond);
    pthread_mutex_unlock(&srv->admin_lock);
    pthread_join(srv->admin_thread, NULL);
    pthread_cond_destroy(&srv->admin_cond);
    pthread_mutex_destroy(&srv->admin_lock);
}

static enum net_verdict hook_request(void *ctx, struct net_req *req)
{
    struct kafka_server *srv = ctx;
    struct kafka_slot *s = req->user;
    s->fetch_count = 0;
    s->acks_none = false;
    s->started_ns = srv->opts.metrics ? kafka_now_ns() : 0;
    s->auto_created = 0; /* a new request: its own auto-creation bound */
    s->sasl_delayed = false;
    struct kafka_session *ks = kafka_session_of(req);
    if (kafka_sasl_raw_pending(ks)) /* KS6, handle_sasl.c KSA2 */
        return kafka_sasl_raw_token(s);
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
    if (srv->opts.cluster_member && !metadata_node_caught_up(kafka_cluster(srv))) /* KS7 */
        return refuse(s, "this cluster node has not caught up with its metadata log yet");
    const char *why = NULL; /* KS6: the SASL gate (handle_sasl.c KSA1) */
    if ((!ks->authenticated || ks->auth_expiry_ms || ks->sasl) &&
        !kafka_sasl_allows(ks, key, net_now_ms(), &why))
        return refuse(s, why);
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
    if (!kafka_api_supported(key, s->header.api_version) &&
        !(kafka_cluster(srv) && kafka_api_internal(key, s->header.api_version))) /* KA8 */
        return refuse(s, "API version not supported (see ApiVersions)");
    if (!api->handler)
        return refuse(s, "API advertised without a handler");
    if (!api->decodes_itself) { /* api_table.c KA6 */
        rc = decode_body(s, body_at);
        if (rc)
            return refuse(s, rc == KP_E_LIMIT ? "request arrays too large"
                                              : "request body does not decode");
    }
    if (api->off_loop || (key == KAFKA_PRODUCE && kafka_produce_creates_topic(s)) ||
        (key == KAFKA_ADD_PARTITIONS_TO_TXN && s->header.api_version >= 4)) /* txn_verify KTV5 */
        return admin_enqueue(srv, s, body_at);                              /* KS4 */
    return (enum net_verdict)api->handler(s, body_at);
}

static enum net_verdict hook_retry(void *ctx, struct net_req *req, bool expired)
{
    (void)ctx;
    struct kafka_slot *s = req->user;
    if (s->sasl_delayed) /* KS6: a failed authentication's answer, delayed (KSA3) */
        return kafka_sasl_retry(s, expired);
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

static void hook_bound(void *ctx, uint32_t listener, uint16_t port)
{
    struct kafka_server *srv = ctx;
    uint16_t adv = srv->opts.advertised[listener].port;
    srv->advertise_port[listener] = adv ? adv : port;
}

/* KS5: every connection has its kafka_session from accept to close; it starts unauthenticated
 * (principal User:ANONYMOUS) on a SASL listener and authenticated on the others. */
static int hook_session_open(void *ctx, struct net_session *ns)
{
    struct kafka_server *srv = ctx;
    struct kafka_session *ks = calloc(1, sizeof(*ks));
    if (!ks)
        return -ENOMEM;
    if (srv->authorizer && !(ks->acl_cache = authorizer_cache_new())) { /* authorizer.h AZ3 */
        free(ks);
        return -ENOMEM;
    }
    snprintf(ks->principal, sizeof(ks->principal), "%s", KAFKA_PRINCIPAL_ANONYMOUS);
    ks->authenticated = ns->security == NET_SEC_PLAINTEXT || ns->security == NET_SEC_SSL;
    ns->user = ks;
    return 0;
}

/* KSE1: on an SSL listener a client certificate's principal (User:<subject DN>, set by the TLS
 * transport once its handshake is done) is the session's, before its first request. */
static void hook_session_ready(void *ctx, struct net_session *ns)
{
    (void)ctx;
    struct kafka_session *ks = ns->user;
    if (ks && ns->peer_principal[0])
        snprintf(ks->principal, sizeof(ks->principal), "%s", ns->peer_principal);
}

static void hook_session_close(void *ctx, struct net_session *ns)
{
    (void)ctx;
    struct kafka_session *ks = ns->user;
    if (ks)
        authorizer_cache_free(ks->acl_cache);
    kafka_sasl_free(ns->user);
    free(ns->user);
    ns->user = NULL;
}

static void authorizer_log(const char *line)
{
    kafka_log("%s", line);
}

static void on_append_watch(void *ctx)
{
    struct kafka_server *srv = ctx;
    net_wake(srv->net);
}

/* The dynamic broker configs: DIR/broker-configs.meta when the options name a directory
 * (a corrupt file refuses the start, as acls.meta does: BS1). */
static int dynamic_open(struct kafka_server *srv)
{
    struct broker_config *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    pthread_mutex_init(&d->lock, NULL);
    if (srv->opts.config_dir) {
        char err[600] = "";
        int rc = broker_config_store_load(srv->opts.config_dir, &d->set, err, sizeof(err));
        if (rc) {
            kafka_log("dynamic broker configs: %s", err[0] ? err : "cannot load");
            pthread_mutex_destroy(&d->lock);
            free(d);
            return rc;
        }
    }
    srv->dynamic = d;
    /* BC5: the stored DynamicLogConfig values become the engine's topic defaults again (it
     * keeps them in memory only). A failure is logged and the broker starts on (stored-only). */
    size_t refused = 0;
    int arc = broker_config_apply(srv->engine, &d->set, &refused);
    if (arc || refused)
        kafka_log("dynamic broker configs: applying the log configs to the engine: %s (%zu "
                  "value(s) its topic rule refuses kept only)",
                  arc ? rt_error_detail() : "ok", refused);
    return 0;
}

static void dynamic_close(struct kafka_server *srv)
{
    if (!srv->dynamic)
        return;
    broker_config_set_free(&srv->dynamic->set);
    pthread_mutex_destroy(&srv->dynamic->lock);
    free(srv->dynamic);
    srv->dynamic = NULL;
}

int kafka_server_start(rt_engine *engine, const struct kafka_server_options *opts,
                       struct kafka_server **out)
{
    if (!engine || !opts || !out || opts->net.listener_count == 0 ||
        opts->net.listener_count > NET_LISTENERS_MAX)
        return RT_E_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < opts->net.listener_count; i++)
        if (opts->advertised[i].host && strlen(opts->advertised[i].host) >=
                                            sizeof(((struct kafka_server *)0)->advertise_host[0]))
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
    for (uint32_t i = 0; i < opts->net.listener_count; i++)
        snprintf(srv->advertise_host[i], sizeof(srv->advertise_host[i]), "%s",
                 opts->advertised[i].host ? opts->advertised[i].host : "127.0.0.1");
    int rc = 0;
    if (opts->authorizer) {
        char err[600] = "";
        struct authorizer_options ao = {opts->acl_dir, opts->super_users, opts->allow_if_no_acl,
                                        opts->acl_watch_ms, authorizer_log};
        rc = authorizer_open(&ao, &srv->authorizer, err, sizeof(err));
        if (rc)
            kafka_log("--authorizer on: %s", err[0] ? err : "cannot start the authorizer");
    }
    if (!rc)
        rc = dynamic_open(srv);
    if (!rc)
        rc = admin_start(srv);
    if (rc) {
        dynamic_close(srv);
        authorizer_close(srv->authorizer);
        group_coord_free(srv->groups);
        pthread_mutex_destroy(&srv->create_lock);
        free(srv);
        return rc;
    }
    struct net_hooks hooks = {
        .ctx = srv,
        .slot_init = hook_slot_init,
        .slot_free = hook_slot_free,
        .request = hook_request,
        .retry = hook_retry,
        .release = hook_release,
        .bound = hook_bound,
        .session_open = hook_session_open,
        .session_close = hook_session_close,
        .session_ready = hook_session_ready,
    };
    rc = net_start(&srv->opts.net, &hooks, &srv->net);
    if (rc) {
        admin_stop(srv);
        dynamic_close(srv);
        authorizer_close(srv->authorizer);
        group_coord_free(srv->groups);
        pthread_mutex_destroy(&srv->create_lock);
        free(srv);
        return rc;
    }
    rc = group_coord_timer_start(srv->groups, on_append_watch, srv); /* wakes parked joins */
    if (rc) {
        net_stop(srv->net, 0);
        admin_stop(srv);
        dynamic_close(srv);
        authorizer_close(srv->authorizer);
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

uint16_t kafka_server_listener_port(const struct kafka_server *s, uint32_t i)
{
    return net_listener_port(s->net, i);
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

void kafka_server_set_cluster(struct kafka_server *s, struct metadata_node *n)
{
    /* a high watermark the leader side moves re-runs parked fetches, as an append does */
    replica_state_set_wake(metadata_node_replicas(n), on_append_watch, s);
    atomic_store_explicit(&s->cluster, n, memory_order_release);
    /* groups in the cluster: `__consumer_offsets` roles (group_cluster.c KGC3) */
    metadata_node_set_group_role(n, kafka_group_partition_role, s);
    /* the transaction coordinator: `__transaction_state`-0's role (txn_cluster.c KTC3) */
    metadata_node_set_txn_role(n, kafka_txn_state_role, s);
}

const char *kafka_server_advertised_host(const struct kafka_server *s)
{
    return kafka_advertised_host(s, NULL);
}

uint16_t kafka_server_advertised_port(const struct kafka_server *s)
{
    return kafka_advertised_port(s, NULL);
}

void kafka_server_stop(struct kafka_server *s)
{
    /* The watch goes first: once rt_append_watch_set returns no call into net is running.
     * Parked fetches are answered by net_stop itself (as expired). */
    rt_append_watch_set(s->engine, NULL, NULL);
    group_coord_timer_stop(s->groups); /* its wake calls into net */
    net_stop(s->net, 5000);            /* every produce completion has arrived when it returns */
    admin_stop(s);                     /* KS4: after net_stop, which waited for its answers */
    authorizer_close(s->authorizer);   /* no request checks any more */
    dynamic_close(s);                  /* after admin_stop: no AlterConfigs runs */
    group_coord_free(s->groups);       /* after net_stop: parked joins are answered by it */
    pthread_mutex_destroy(&s->create_lock);
    free(s);
}
