/*
 * cmd_serve.c — `ringtail serve DIR`: a single-node Kafka broker over the engine (tools/kafka/).
 * Parses the command line into kafka_server_options, opens the engine (creating DIR if needed),
 * starts the server, prints `listening on HOST:PORT` (per listener; `listening on
 * PROTOCOL://HOST:PORT` for the ones that are not PLAINTEXT) once it accepts connections, and waits for
 * SIGTERM or SIGINT (SIGHUP reloads the TLS certificate and key); then it stops accepting, lets the requests in flight finish (or fail),
 * closes the engine cleanly and exits 0. It owns the process's signal disposition and nothing
 * of the protocol. Signals are blocked in every thread and taken with sigwait here, so no
 * handler ever runs inside the engine or the loops.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/handlers/txn_verify.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/metrics/metrics.h"
#include "tools/kafka/net/net_tls.h"
#include "tools/kafka/sasl/cred_store.h"
#include "tools/kafka/server/server.h"

/* Issue 21 F3: a partition's disk fault is logged when it happens (the file, the operation,
 * the error), and again when the partition is recovered in place. On an engine thread: one
 * fprintf, nothing that blocks. */
static void serve_on_fault(void *ctx, const struct rt_partition_fault *f)
{
    (void)ctx;
    if (f->recovered)
        fprintf(stderr,
                "ringtail serve: partition %s-%" PRIu32 " recovered in place after %" PRIu32
                " attempt(s) (it had failed with %s): %s\n",
                f->topic, f->partition, f->attempts, rt_strerror(f->error), f->detail);
    else
        fprintf(stderr, "ringtail serve: partition %s-%" PRIu32 " failed: %s; %s\n", f->topic,
                f->partition, f->detail,
                f->engine_wide ? "the engine's write side failed with it: restart the broker"
                               : "produce answers KAFKA_STORAGE_ERROR until it is recovered in "
                                 "place (retried while the disk refuses)");
}

static void serve_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ringtail serve DIR [OPTIONS]\n"
        "\n"
        "Serves DIR (created if missing) as a single-node Kafka broker: kcat, librdkafka,\n"
        "confluent-kafka-python and kafkajs produce and consume with it. Prints\n"
        "'listening on HOST:PORT' once it accepts connections; SIGTERM or SIGINT stop it\n"
        "(in-flight requests are answered, the engine is closed cleanly, exit 0).\n"
        "SASL_PLAINTEXT and SASL_SSL listeners authenticate with PLAIN or SCRAM against\n"
        "the users of `ringtail user` (DIR/scram-credentials); SSL and SASL_SSL ones run\n"
        "TLS (client certificates: --ssl-client-auth); PLAINTEXT ones do neither: keep\n"
        "those on loopback.\n"
        "\n"
        "Options (default; the Kafka broker config each mirrors):\n"
        "  --listeners LIST           comma-separated PROTOCOL://HOST:PORT, PROTOCOL one of\n"
        "                             PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, each at most\n"
        "                             once (PLAINTEXT://127.0.0.1:9092; listeners)\n"
        "  --listen HOST:PORT         shorthand for --listeners PLAINTEXT://HOST:PORT\n"
        "  --sasl-mechanisms LIST     comma-separated, of PLAIN, SCRAM-SHA-256,\n"
        "                             SCRAM-SHA-512; required by a SASL listener (Kafka's\n"
        "                             default, GSSAPI, is not served; sasl.enabled.mechanisms)\n"
        "  --connections-max-reauth-ms N  a SASL session's lifetime: past it, a request\n"
        "                             other than SASL's closes the connection unless the\n"
        "                             client re-authenticated (0: off;\n"
        "                             connections.max.reauth.ms, KIP-368)\n"
        "  --connection-failed-authentication-delay-ms N  a failed authentication is\n"
        "                             answered this much later (100;\n"
        "                             connection.failed.authentication.delay.ms)\n"
        "  --ssl-cert-pem FILE        the server's certificate (chain), PEM, for SSL and\n"
        "                             SASL_SSL listeners (ssl.keystore.certificate.chain);\n"
        "                             SIGHUP reloads it and the key for new connections\n"
        "  --ssl-key-pem FILE         its private key, PEM (ssl.keystore.key)\n"
        "  --ssl-ca-pem FILE          CA that client certificates are verified against\n"
        "                             (ssl.truststore.certificates)\n"
        "  --ssl-client-auth MODE     none|requested|required (none; ssl.client.auth); a\n"
        "                             verified client's principal is User:<subject DN>\n"
        "  --ssl-handshake-timeout-ms N  a TLS handshake not done in N ms is closed\n"
        "                             (10000)\n"
        "  --advertised-listeners LIST  PROTOCOL://HOST:PORT told to clients that came in\n"
        "                             on that protocol's listener, in Metadata and\n"
        "                             FindCoordinator (127.0.0.1 and the listener's port;\n"
        "                             advertised.listeners)\n"
        "  --advertise HOST:PORT      shorthand: the first listener's advertised address\n"
        "  --broker-id N              this broker's node id (0; broker.id / node.id)\n"
        "  --voters LIST              the cluster's metadata quorum: ID@HOST:PORT,...\n"
        "                             (controller.quorum.voters); starts this node's\n"
        "                             member of it (raft, DIR/__cluster_metadata/).\n"
        "                             Without it, a single broker as before\n"
        "  --node-id N                this node's id among the voters, 1.. (node.id; also\n"
        "                             the broker id); needs --voters\n"
        "  --controller-listen HOST:PORT  address the quorum binds (its voter's address;\n"
        "                             the same port)\n"
        "  --broker-session-timeout-ms N  a node whose heartbeats stop this long is fenced\n"
        "                             by the controller (9000; broker.session.timeout.ms)\n"
        "  --replica-lag-time-max-ms N  a follower not caught up for this long leaves the\n"
        "                             ISR (30000; replica.lag.time.max.ms)\n"
        "  --replica-high-watermark-checkpoint-interval-ms N  how often a cluster node\n"
        "                             writes DIR/replication-offset-checkpoint (5000)\n"
        "  --threads N                network loop threads (one per core;\n"
        "                             num.network.threads)\n"
        "  --connections-max N        open connections at most; more are closed at accept\n"
        "                             (1024; max.connections)\n"
        "  --request-max-bytes N      largest request frame; a bigger one closes its\n"
        "                             connection (104857600; socket.request.max.bytes)\n"
        "  --in-flight-max N          requests read ahead per connection before reading\n"
        "                             pauses (16; queued.max.requests, per connection)\n"
        "  --queued-max-request-bytes N  request bytes (of frames over 64 KiB) held at once\n"
        "                             over all connections; a larger frame waits to be read\n"
        "                             (536870912; queued.max.request.bytes; 0: no bound)\n"
        "  --queued-max-response-bytes N  response bytes answered and not yet taken by\n"
        "                             their clients, over all connections; at the bound no\n"
        "                             connection reads another request (536870912; 0: no\n"
        "                             bound)\n"
        "  --connection-max-response-bytes N  the same per connection: its reading pauses\n"
        "                             while its client has this much unread (16777216; as\n"
        "                             Kafka mutes a channel; 0: no bound)\n"
        "  --idle-ms N                close connections silent this long (600000;\n"
        "                             connections.max.idle.ms)\n"
        "  --num-partitions N         partitions of auto-created topics (1; num.partitions)\n"
        "  --default-replication-factor N  in a cluster (--voters), the replication factor\n"
        "                             of topics created without one, auto-created ones\n"
        "                             included (1; default.replication.factor)\n"
        "  --auto-create-topics B     create unknown topics on Metadata and Produce (true;\n"
        "                             auto.create.topics.enable)\n"
        "  --auto-create-max-per-request N  topics one request may auto-create, and one\n"
        "                             connection a second (100); the rest are answered\n"
        "                             UNKNOWN_TOPIC_OR_PARTITION until a later request\n"
        "  --print-api-versions       print the advertised APIs and versions as the\n"
        "                             README's markdown table, and exit\n"
        "  --accept-replication-factor  accept CreateTopics replication factors > 1 and\n"
        "                             create one replica (off: INVALID_REPLICATION_FACTOR;\n"
        "                             for test suites written for 3-broker clusters)\n"
        "  --transaction-max-timeout-ms N  largest transaction timeout (900000;\n"
        "                             transaction.max.timeout.ms)\n"
        "  --group-initial-rebalance-delay-ms N  how long the first rebalance of an empty\n"
        "                             group waits for more members (3000;\n"
        "                             group.initial.rebalance.delay.ms; 0: none)\n"
        "  --group-min-session-timeout-ms N  shortest session timeout a member may ask\n"
        "                             (6000; group.min.session.timeout.ms)\n"
        "  --group-max-session-timeout-ms N  longest (1800000;\n"
        "                             group.max.session.timeout.ms)\n"
        "  --sync MODE                always|interval|none: acknowledge produce after\n"
        "                             fdatasync, or not (always; log.flush.interval.*)\n"
        "  --segment-bytes N          segment size (67108864; log.segment.bytes)\n"
        "  --open-segments-max N      segments holding file descriptors at once (4\n"
        "                             each); beyond it idle partitions are closed and\n"
        "                             reopened at their next append (0: RLIMIT_NOFILE/9)\n"
        "  --mapped-segments-max N    sealed segments mapped at once (3 mappings each);\n"
        "                             beyond it the least recently read are unmapped and\n"
        "                             mapped again when read (0: vm.max_map_count/12)\n"
        "  --log-message-timestamp-type T  CreateTime|LogAppendTime: a batch's max\n"
        "                             timestamp is its records' or the broker's clock\n"
        "                             (CreateTime; log.message.timestamp.type)\n"
        "  --fetch-max-bytes N        record bytes of one Fetch response at most, whatever\n"
        "                             the client asks; the first batch is sent whole even\n"
        "                             if larger (57671680; fetch.max.bytes)\n"
        "  --io MODE                  auto|uring|sync: network loop on io_uring or epoll\n"
        "                             (auto: io_uring when it can be set up; the\n"
        "                             environment variable RT_KAFKA_IO sets the default)\n"
        "  --metrics HOST:PORT        serve Prometheus metrics at http://HOST:PORT/metrics\n"
        "                             (off; port 0 picks one, printed at start)\n"
        "  --authorizer on|off        check Kafka ACLs (DIR/acls.meta; `ringtail acl`,\n"
        "                             CreateAcls) on every request (off)\n"
        "  --super-users LIST         principals allowed everything, e.g.\n"
        "                             'User:admin;User:ops' (super.users)\n"
        "  --allow-everyone-if-no-acl-found B  a resource no ACL names is open to\n"
        "                             everyone (false; allow.everyone.if.no.acl.found)\n"
        "  --zero-copy MODE           true: fetched records go from the segment mapping to\n"
        "                             the socket with SEND_ZC / MSG_ZEROCOPY (true);\n"
        "                             sendmsg: a plain sendmsg from the mapping (no copy in\n"
        "                             user space, the kernel copies); false: copied in\n"
        "                             user space, through a 128 KiB buffer per connection\n"
        "                             as the socket drains (for comparison)\n"
        "\n"
        "Exit status: 0 after a signal, 1 when the engine or the socket cannot be set up,\n"
        "2 usage error.\n");
}

/* HOST:PORT, [V6]:PORT. host_out gets a NUL-terminated copy. */
static bool parse_host_port(const char *s, char *host_out, size_t cap, uint16_t *port_out)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return false;
    const char *h = s;
    size_t hl = (size_t)(colon - s);
    if (h[0] == '[') {
        if (hl < 3 || h[hl - 1] != ']')
            return false;
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= cap)
        return false;
    memcpy(host_out, h, hl);
    host_out[hl] = 0;
    uint32_t port = 0;
    if (!cli_parse_u32(colon + 1, 0, 65535, &port))
        return false;
    *port_out = (uint16_t)port;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "on") == 0 || strcmp(s, "1") == 0) {
        *out = true;
        return true;
    }
    if (strcmp(s, "false") == 0 || strcmp(s, "off") == 0 || strcmp(s, "0") == 0) {
        *out = false;
        return true;
    }
    return false;
}

static bool parse_io(const char *s, enum net_io *out)
{
    if (strcmp(s, "auto") == 0)
        *out = NET_IO_AUTO;
    else if (strcmp(s, "uring") == 0 || strcmp(s, "io_uring") == 0)
        *out = NET_IO_URING;
    else if (strcmp(s, "sync") == 0 || strcmp(s, "epoll") == 0)
        *out = NET_IO_SYNC;
    else
        return false;
    return true;
}

static bool is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

/* What the command line says: the server's and the engine's options, and what they point at. */
struct serve_args {
    struct kafka_server_options so;
    struct rt_options eo;
    char listen_host[NET_LISTENERS_MAX][256], adv_host[NET_LISTENERS_MAX][256];
    const char *advertised_list; /* --advertised-listeners, matched once listeners are known */
    const char *advertise_one;   /* --advertise */
    const char *dir;
    const char *metrics_addr;
    struct net_tls_options tls;    /* --ssl-*: for SSL and SASL_SSL listeners */
    struct net_tls *tls_ctx;       /* made by serve_start when a listener runs TLS */
    const char *voters;            /* --voters: the metadata quorum (NULL: a single broker) */
    const char *controller_listen; /* --controller-listen */
    int32_t node_id;               /* --node-id, -1 when not given */
    uint32_t session_ms;           /* --broker-session-timeout-ms (0: not given) */
    uint32_t replica_lag_ms;       /* --replica-lag-time-max-ms (0: not given) */
    uint32_t checkpoint_ms; /* --replica-high-watermark-checkpoint-interval-ms (0: not given) */
    bool broker_id_given;
};

/* A step's answer when the command goes on (else it is the exit code). */
#define SERVE_GO_ON (-1)

/* One PROTOCOL://HOST:PORT of a listener list (an empty HOST: every interface, as Kafka). */
static bool parse_endpoint(const char *s, size_t len, enum net_security *sec, char *host,
                           size_t cap, uint16_t *port)
{
    char buf[320];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *sep = strstr(buf, "://");
    if (!sep)
        return false;
    *sep = 0;
    if (!net_security_parse(buf, sec))
        return false;
    const char *hp = sep + 3;
    if (hp[0] == ':') { /* "PLAINTEXT://:9092" */
        uint32_t p = 0;
        if (!cli_parse_u32(hp + 1, 0, 65535, &p) || cap < 8)
            return false;
        snprintf(host, cap, "0.0.0.0");
        *port = (uint16_t)p;
        return true;
    }
    return parse_host_port(hp, host, cap, port);
}

/* --listeners: each protocol at most once (its name is its listener's name), at most
 * NET_LISTENERS_MAX of them. */
static bool parse_listeners(struct serve_args *a, const char *v)
{
    struct net_options *no = &a->so.net;
    uint32_t n = 0;
    for (const char *p = v; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n == NET_LISTENERS_MAX)
            return false;
        struct net_listener *l = &no->listeners[n];
        memset(l, 0, sizeof(*l));
        if (!parse_endpoint(p, len, &l->security, a->listen_host[n], sizeof(a->listen_host[n]),
                            &l->port))
            return false;
        for (uint32_t j = 0; j < n; j++)
            if (no->listeners[j].security == l->security)
                return false;
        l->host = a->listen_host[n];
        n++;
        p = end ? end + 1 : p + len;
    }
    if (n == 0)
        return false;
    no->listener_count = n;
    return true;
}

/* --advertised-listeners, once the listeners are known: each entry names a listener's protocol.
 * NULL, or what is wrong. */
static const char *apply_advertised(struct serve_args *a)
{
    struct kafka_server_options *so = &a->so;
    for (uint32_t i = 0; i < so->net.listener_count; i++) {
        so->advertised[i].host = NULL;
        so->advertised[i].port = 0;
    }
    if (a->advertise_one) {
        if (!parse_host_port(a->advertise_one, a->adv_host[0], sizeof(a->adv_host[0]),
                             &so->advertised[0].port))
            return "--advertise must be HOST:PORT";
        so->advertised[0].host = a->adv_host[0];
    }
    for (const char *p = a->advertised_list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        enum net_security sec;
        char host[256];
        uint16_t port = 0;
        if (!parse_endpoint(p, len, &sec, host, sizeof(host), &port))
            return "--advertised-listeners entries must be PROTOCOL://HOST:PORT";
        uint32_t i = 0;
        while (i < so->net.listener_count && so->net.listeners[i].security != sec)
            i++;
        if (i == so->net.listener_count)
            return "--advertised-listeners names a protocol no listener has";
        snprintf(a->adv_host[i], sizeof(a->adv_host[i]), "%s", host);
        so->advertised[i].host = a->adv_host[i];
        so->advertised[i].port = port;
        p = end ? end + 1 : p + len;
    }
    return NULL;
}

/* --sasl-mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, comma-separated. */
static bool parse_sasl_mechanisms(const char *v, uint32_t *out)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } names[] = {{"PLAIN", KAFKA_SASL_PLAIN},
                 {"SCRAM-SHA-256", KAFKA_SASL_SCRAM_SHA_256},
                 {"SCRAM-SHA-512", KAFKA_SASL_SCRAM_SHA_512}};
    uint32_t bits = 0;
    for (const char *p = v;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool known = false;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (len == strlen(names[i].name) && strncmp(p, names[i].name, len) == 0) {
                bits |= names[i].bit;
                known = true;
            }
        if (!known)
            return false;
        if (!end)
            break;
        p = end + 1;
    }
    *out = bits;
    return true;
}

/* A SASL listener's needs: the mechanisms. Kafka's default sasl.enabled.mechanisms is GSSAPI,
 * which is not served, so a SASL listener without --sasl-mechanisms is a usage error rather
 * than a listener no client can authenticate on. */
static const char *check_sasl(const struct serve_args *a)
{
    if (!a->so.sasl_mechanisms)
        return "a SASL listener needs --sasl-mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; "
               "Kafka's default, GSSAPI, is not served)";
    return NULL;
}

static bool listener_tls(const struct net_listener *l)
{
    return l->security == NET_SEC_SSL || l->security == NET_SEC_SASL_SSL;
}

/* A TLS listener's needs (SSL, SASL_SSL): a certificate and its key, a CA to verify client
 * certificates when they are asked for, and the epoll loop (net_tls.c is not raw). */
static const char *check_tls(const struct serve_args *a)
{
    if (!a->tls.cert_pem || !a->tls.key_pem)
        return "SSL and SASL_SSL listeners need --ssl-cert-pem and --ssl-key-pem";
    if (a->tls.client_auth != NET_TLS_AUTH_NONE && !a->tls.ca_pem)
        return "--ssl-client-auth requested or required needs --ssl-ca-pem";
    if (a->so.net.io == NET_IO_URING)
        return "--io uring cannot serve SSL and SASL_SSL listeners (io_uring's loop does "
               "plain sockets only; --io auto runs them on epoll)";
    return NULL;
}

/* What this build can serve: the security protocols whose layers exist, one condition per
 * protocol. NULL, or why not. */
static const char *check_security(const struct serve_args *a)
{
    for (uint32_t i = 0; i < a->so.net.listener_count; i++) {
        enum net_security sec = a->so.net.listeners[i].security;
        const char *why = NULL;
        if (sec == NET_SEC_SSL)
            why = check_tls(a);
        else if (sec == NET_SEC_SASL_PLAINTEXT)
            why = check_sasl(a);
        else if (sec == NET_SEC_SASL_SSL)
            why = check_tls(a) ? check_tls(a) : check_sasl(a);
        if (why)
            return why;
    }
    return NULL;
}

/* One `--name value` option into a; false for a bad value; *unknown for a name it does not know. */
static bool serve_option(struct serve_args *a, const char *name, const char *v, bool *unknown)
{
    struct kafka_server_options *so = &a->so;
    struct rt_options *eo = &a->eo;
    uint32_t u = 0;
    int64_t q64 = 0;
    bool ok = true;
    *unknown = false;
    if (strcmp(name, "--listen") == 0) {
        ok = parse_host_port(v, a->listen_host[0], sizeof(a->listen_host[0]),
                             &so->net.listeners[0].port);
        so->net.listeners[0].host = a->listen_host[0];
        so->net.listeners[0].security = NET_SEC_PLAINTEXT;
        so->net.listener_count = 1;
    } else if (strcmp(name, "--listeners") == 0)
        ok = parse_listeners(a, v);
    else if (strcmp(name, "--advertised-listeners") == 0)
        a->advertised_list = v;
    else if (strcmp(name, "--advertise") == 0) {
        char h[256];
        uint16_t p;
        ok = parse_host_port(v, h, sizeof(h), &p) && ((a->advertise_one = v), true);
    } else if (strcmp(name, "--broker-id") == 0) {
        ok = cli_parse_u32(v, 0, INT32_MAX, &u) && ((so->broker_id = (int32_t)u), true);
        a->broker_id_given = true;
    } else if (strcmp(name, "--node-id") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) && ((a->node_id = (int32_t)u), true);
    else if (strcmp(name, "--voters") == 0)
        a->voters = v; /* checked once every option is known (serve_parse) */
    else if (strcmp(name, "--broker-session-timeout-ms") == 0)
        ok = cli_parse_u32(v, 100, 3600000, &a->session_ms);
    else if (strcmp(name, "--replica-lag-time-max-ms") == 0)
        ok = cli_parse_u32(v, 100, 3600000, &a->replica_lag_ms);
    else if (strcmp(name, "--replica-high-watermark-checkpoint-interval-ms") == 0)
        ok = cli_parse_u32(v, 10, 3600000, &a->checkpoint_ms);
    else if (strcmp(name, "--controller-listen") == 0) {
        char h[256];
        uint16_t p;
        ok = parse_host_port(v, h, sizeof(h), &p) && p != 0 && ((a->controller_listen = v), true);
    } else if (strcmp(name, "--threads") == 0)
        ok = cli_parse_u32(v, 1, 256, &so->net.threads);
    else if (strcmp(name, "--connections-max") == 0)
        ok = cli_parse_u32(v, 1, 1000000, &so->net.connections_max);
    else if (strcmp(name, "--request-max-bytes") == 0)
        ok = cli_parse_u32(v, 64, INT32_MAX, &so->net.request_max_bytes);
    else if (strcmp(name, "--in-flight-max") == 0)
        ok = cli_parse_u32(v, 1, 1024, &so->net.in_flight_max);
    else if (strcmp(name, "--queued-max-request-bytes") == 0)
        ok = cli_parse_i64(v, &q64) && q64 >= 0 &&
             ((so->net.queued_max_bytes = (uint64_t)q64), true);
    else if (strcmp(name, "--queued-max-response-bytes") == 0)
        ok = cli_parse_i64(v, &q64) && q64 >= 0 &&
             ((so->net.queued_max_response_bytes = (uint64_t)q64), true);
    else if (strcmp(name, "--connection-max-response-bytes") == 0)
        ok = cli_parse_i64(v, &q64) && q64 >= 0 &&
             ((so->net.conn_max_response_bytes = (uint64_t)q64), true);
    else if (strcmp(name, "--idle-ms") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) && ((so->net.idle_max_ms = u), true);
    else if (strcmp(name, "--num-partitions") == 0)
        ok = cli_parse_u32(v, 1, eo->partitions_max, &so->num_partitions);
    else if (strcmp(name, "--default-replication-factor") == 0)
        ok = cli_parse_u32(v, 1, INT16_MAX, &u) &&
             ((so->default_replication_factor = (int16_t)u), true);
    else if (strcmp(name, "--auto-create-topics") == 0)
        ok = parse_bool(v, &so->auto_create_topics);
    else if (strcmp(name, "--auto-create-max-per-request") == 0)
        ok = cli_parse_u32(v, 0, 1u << 20, &so->auto_create_max_per_request);
    else if (strcmp(name, "--transaction-max-timeout-ms") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) &&
             ((so->transaction_max_timeout_ms = (int32_t)u), true);
    else if (strcmp(name, "--group-initial-rebalance-delay-ms") == 0)
        ok = cli_parse_u32(v, 0, INT32_MAX, &u) &&
             ((so->groups.initial_rebalance_delay_ms = (int32_t)u), true);
    else if (strcmp(name, "--group-min-session-timeout-ms") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) &&
             ((so->groups.session_timeout_min_ms = (int32_t)u), true);
    else if (strcmp(name, "--group-max-session-timeout-ms") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) &&
             ((so->groups.session_timeout_max_ms = (int32_t)u), true);
    else if (strcmp(name, "--sync") == 0) {
        if (strcmp(v, "always") == 0)
            eo->sync_mode = RT_SYNC_ALWAYS;
        else if (strcmp(v, "interval") == 0)
            eo->sync_mode = RT_SYNC_INTERVAL;
        else if (strcmp(v, "none") == 0)
            eo->sync_mode = RT_SYNC_NONE;
        else
            ok = false;
    } else if (strcmp(name, "--log-message-timestamp-type") == 0) {
        if (strcmp(v, "CreateTime") == 0)
            eo->message_timestamp_type = RT_TIMESTAMP_CREATE_TIME;
        else if (strcmp(v, "LogAppendTime") == 0)
            eo->message_timestamp_type = RT_TIMESTAMP_LOG_APPEND_TIME;
        else
            ok = false;
    } else if (strcmp(name, "--segment-bytes") == 0)
        ok = cli_parse_u32(v, 14, INT32_MAX, &u) && /* Kafka 3.x's segment.bytes */
             ((eo->segment_size_bytes = u), true);
    else if (strcmp(name, "--open-segments-max") == 0)
        ok = cli_parse_u32(v, 0, 1u << 20, &eo->open_segments_max);
    else if (strcmp(name, "--mapped-segments-max") == 0)
        ok = cli_parse_u32(v, 0, 1u << 20, &eo->mapped_segments_max);
    else if (strcmp(name, "--fetch-max-bytes") == 0)
        ok = cli_parse_u32(v, 1024, INT32_MAX, &so->fetch_max_bytes);
    else if (strcmp(name, "--io") == 0)
        ok = parse_io(v, &so->net.io);
    else if (strcmp(name, "--sasl-mechanisms") == 0)
        ok = parse_sasl_mechanisms(v, &so->sasl_mechanisms);
    else if (strcmp(name, "--connections-max-reauth-ms") == 0)
        ok = cli_parse_u32(v, 0, INT32_MAX, &u) && ((so->reauth_max_ms = u), true);
    else if (strcmp(name, "--connection-failed-authentication-delay-ms") == 0)
        ok = cli_parse_u32(v, 0, 60000, &u) && ((so->auth_failed_delay_ms = u), true);
    else if (strcmp(name, "--metrics") == 0)
        ok = kafka_metrics_check_addr(v) == 0 && ((a->metrics_addr = v), true);
    else if (strcmp(name, "--ssl-cert-pem") == 0)
        a->tls.cert_pem = v;
    else if (strcmp(name, "--ssl-key-pem") == 0)
        a->tls.key_pem = v;
    else if (strcmp(name, "--ssl-ca-pem") == 0)
        a->tls.ca_pem = v;
    else if (strcmp(name, "--ssl-client-auth") == 0)
        ok = net_tls_client_auth_parse(v, &a->tls.client_auth);
    else if (strcmp(name, "--ssl-handshake-timeout-ms") == 0)
        ok = cli_parse_u32(v, 1, INT32_MAX, &u) && ((so->net.handshake_max_ms = u), true);
    else if (strcmp(name, "--zero-copy") == 0) {
        so->net.zero_copy = true;
        if (strcmp(v, "sendmsg") == 0) {
            so->zero_copy = true;
            so->net.zero_copy = false;
        } else {
            ok = parse_bool(v, &so->zero_copy);
        }
    } else if (strcmp(name, "--authorizer") == 0) {
        if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)
            so->authorizer = strcmp(v, "on") == 0;
        else
            ok = parse_bool(v, &so->authorizer);
    } else if (strcmp(name, "--super-users") == 0)
        so->super_users = v;
    else if (strcmp(name, "--allow-everyone-if-no-acl-found") == 0)
        ok = parse_bool(v, &so->allow_if_no_acl);
    else
        *unknown = true;
    return ok;
}

/* --voters, --node-id, --controller-listen: all or none (but --controller-listen, optional);
 * the node id one of the voters, and the broker id. NULL, or why not. */
static const char *check_cluster(struct serve_args *a)
{
    static char why[512];
    if (!a->voters) {
        if (a->node_id >= 0 || a->controller_listen || a->session_ms || a->replica_lag_ms ||
            a->checkpoint_ms || a->so.default_replication_factor != 1)
            return "--node-id, --controller-listen, --broker-session-timeout-ms, "
                   "--replica-lag-time-max-ms, --replica-high-watermark-checkpoint-interval-ms "
                   "and --default-replication-factor need --voters (controller.quorum.voters)";
        return NULL;
    }
    if (a->node_id < 0)
        return "--voters needs --node-id (this node's id among the voters)";
    struct quorum_voter v[QUORUM_VOTERS_MAX];
    int n = 0;
    char err[256];
    if (quorum_voters_parse(a->voters, strlen(a->voters), v, &n, err, sizeof(err)) != 0) {
        snprintf(why, sizeof(why), "--voters '%.120s': %s", a->voters, err);
        return why;
    }
    bool in = false;
    for (int i = 0; i < n; i++)
        in |= v[i].id == a->node_id;
    if (!in) {
        snprintf(why, sizeof(why), "--node-id %d is not one of --voters", (int)a->node_id);
        return why;
    }
    if (a->broker_id_given && a->so.broker_id != a->node_id) {
        snprintf(why, sizeof(why), "--broker-id %d differs from --node-id %d (they are one id)",
                 (int)a->so.broker_id, (int)a->node_id);
        return why;
    }
    a->so.broker_id = a->node_id;
    return NULL;
}

/* Step 1: the defaults (a loop thread per core, RT_KAFKA_IO) and the command line into a, then
 * the options that depend on each other. SERVE_GO_ON, or the exit code (help, a usage error). */
static int serve_parse(struct serve_args *a, int argc, char **argv)
{
    kafka_server_options_init(&a->so);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a->so.net.threads = cores > 0 ? (uint32_t)cores : 1;
    const char *env_io = getenv("RT_KAFKA_IO");
    if (env_io && *env_io && !parse_io(env_io, &a->so.net.io))
        return cli_usage("serve", "RT_KAFKA_IO must be auto, uring or sync, not '%s'", env_io);
    cli_options_init(&a->eo);
    snprintf(a->listen_host[0], sizeof(a->listen_host[0]), "127.0.0.1");
    a->so.net.listeners[0].host = a->listen_host[0];
    a->advertised_list = NULL;
    a->advertise_one = NULL;
    a->dir = NULL;
    a->metrics_addr = NULL;
    a->voters = NULL;
    a->controller_listen = NULL;
    a->node_id = -1;
    a->session_ms = 0;
    a->broker_id_given = false;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            serve_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(arg, "--print-api-versions") == 0) { /* the README's table (api_table.c) */
            static char table[8192];
            size_t n = kafka_api_markdown(table, sizeof table);
            if (n >= sizeof table)
                return cli_usage("serve", "the API table does not fit %zu bytes", sizeof table);
            fputs(table, stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(arg, "--accept-replication-factor") == 0) {
            a->so.accept_replication_factor = true;
            continue;
        }
        if (arg[0] == '-' && arg[1] == '-') {
            if (i + 1 >= argc)
                return cli_usage("serve", "%s needs a value", arg);
            const char *v = argv[++i];
            bool unknown = false;
            bool ok = serve_option(a, arg, v, &unknown);
            if (unknown)
                return cli_usage("serve", "unknown option %s", arg);
            if (!ok)
                return cli_usage("serve", "bad value '%s' for %s", v, arg);
            continue;
        }
        if (a->dir)
            return cli_usage("serve", "unexpected argument '%s'", arg);
        a->dir = arg;
    }
    if (!a->dir)
        return cli_usage("serve", "missing DIR");
    struct kafka_server_options *so = &a->so;
    if (so->groups.session_timeout_min_ms > so->groups.session_timeout_max_ms)
        return cli_usage("serve",
                         "--group-min-session-timeout-ms %d is above "
                         "--group-max-session-timeout-ms %d",
                         so->groups.session_timeout_min_ms, so->groups.session_timeout_max_ms);
    const char *why = apply_advertised(a);
    if (!why)
        why = check_security(a);
    if (!why)
        why = check_cluster(a);
    if (why)
        return cli_usage("serve", "%s", why);
    so->acl_dir = a->dir;    /* --authorizer: DIR/acls.meta */
    so->config_dir = a->dir; /* DIR/broker-configs.meta: dynamic broker configs */
    a->eo.transaction_timeout_max_ms = so->transaction_max_timeout_ms;
    a->eo.on_fault = serve_on_fault;
    so->engine = a->eo;
    return SERVE_GO_ON;
}

/* Step 2: the engine opened, the server started and, with --metrics, the counters served.
 * SERVE_GO_ON with *e_out, *srv_out (and *metrics_out, or NULL), or the exit code with
 * everything undone. */
static int serve_start(struct serve_args *a, rt_engine **e_out, struct kafka_server **srv_out,
                       struct kafka_metrics **metrics_out)
{
    /* --metrics: counter sets for the loop threads plus the shard threads that finish
     * produces (kafka_metrics_thread binds one per thread); served once the server runs. */
    for (uint32_t i = 0; i < a->so.net.listener_count; i++) {
        struct net_listener *l = &a->so.net.listeners[i];
        if (!listener_tls(l))
            continue;
        char why[320];
        if (!a->tls_ctx && net_tls_create(&a->tls, &a->tls_ctx, why, sizeof(why)) != 0) {
            cli_fail("serve", "TLS: %s", why);
            return CLI_EXIT_FAIL;
        }
        l->transport = net_tls_transport(a->tls_ctx);
    }
    struct kafka_metrics *metrics = NULL;
    if (a->metrics_addr) {
        uint32_t sets = a->so.net.threads + 64;
        if (sets > KAFKA_METRICS_LOOPS_MAX)
            sets = KAFKA_METRICS_LOOPS_MAX;
        if (kafka_metrics_create(sets, &metrics) != 0) {
            cli_fail("serve", "cannot allocate the metrics counters");
            return CLI_EXIT_FAIL;
        }
        a->so.metrics = metrics;
    }
    rt_engine *e = NULL;
    int code = cli_engine_open("serve", a->dir, true, &a->eo, &e, NULL);
    if (code != CLI_EXIT_OK) {
        kafka_metrics_destroy(metrics);
        return code;
    }
    /* The SCRAM credentials (`ringtail user`): a damaged file is not served (CS4). */
    char err[CRED_ERROR_MAX] = "";
    int rc = cred_store_open(a->dir, &a->so.credentials, err, sizeof(err));
    if (rc) {
        cli_fail("serve", "SCRAM credentials: %s", rc == RT_E_CORRUPT ? err : rt_strerror(rc));
        cli_engine_close("serve", e);
        kafka_metrics_destroy(metrics);
        return CLI_EXIT_FAIL;
    }
    struct kafka_server *srv = NULL;
    rc = kafka_server_start(e, &a->so, &srv);
    if (rc) {
        cred_store_close(a->so.credentials);
        a->so.credentials = NULL;
        const struct net_listener *l0 = &a->so.net.listeners[0];
        /* kafka_server_start fails on a listen, or on a broker file it loads (acls.meta,
         * broker-configs.meta: logged above with the file and offset): say both. */
        cli_fail("serve", "cannot start the broker on %s:%u%s: %s", l0->host, l0->port,
                 a->so.net.listener_count > 1 ? " (or another of --listeners)" : "",
                 rc == RT_E_CORRUPT ? "a broker file is damaged (named above)" : rt_strerror(rc));
        cli_engine_close("serve", e);
        kafka_metrics_destroy(metrics);
        return CLI_EXIT_FAIL;
    }
    if (metrics) {
        kafka_metrics_attach(metrics, kafka_server_stats_get(srv), kafka_server_net_counters(srv));
        rc = kafka_metrics_serve(metrics, a->metrics_addr, e, a->dir);
        if (rc) {
            cli_fail("serve", "--metrics %s: %s", a->metrics_addr,
                     rc == RT_E_INVALID_ARGUMENT ? "not an IPv4 HOST:PORT" : rt_strerror(rc));
            kafka_server_stop(srv);
            cred_store_close(a->so.credentials);
            a->so.credentials = NULL;
            cli_engine_close("serve", e);
            kafka_metrics_destroy(metrics);
            return rc == RT_E_INVALID_ARGUMENT ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
        }
        fprintf(stderr, "ringtail serve: metrics at http://%.*s:%u/metrics\n",
                (int)(strrchr(a->metrics_addr, ':') - a->metrics_addr), a->metrics_addr,
                kafka_metrics_port(metrics));
    }
    *e_out = e;
    *srv_out = srv;
    *metrics_out = metrics;
    return SERVE_GO_ON;
}

/* Step 3: what runs where, and `listening on HOST:PORT` on stdout (the line scripts wait for). */
static void serve_announce(const struct serve_args *a, struct kafka_server *srv)
{
    const struct kafka_server_options *so = &a->so;
    fprintf(stderr, "ringtail serve: %s: network on %s (%u loop thread%s), %s, broker id %d\n",
            a->dir, kafka_server_backend(srv), so->net.threads, so->net.threads == 1 ? "" : "s",
            !so->zero_copy      ? "fetch copies records"
            : so->net.zero_copy ? "zero-copy fetch (SEND_ZC / MSG_ZEROCOPY)"
                                : "fetch by sendmsg from the mapping",
            so->broker_id);
    if (so->sasl_mechanisms) {
        char reauth[48] = "off";
        if (so->reauth_max_ms)
            snprintf(reauth, sizeof(reauth), "every %" PRId64 " ms", so->reauth_max_ms);
        fprintf(stderr,
                "ringtail serve: SASL mechanisms:%s%s%s; re-authentication %s; failed "
                "authentications answered after %" PRId64 " ms\n",
                so->sasl_mechanisms & KAFKA_SASL_PLAIN ? " PLAIN" : "",
                so->sasl_mechanisms & KAFKA_SASL_SCRAM_SHA_256 ? " SCRAM-SHA-256" : "",
                so->sasl_mechanisms & KAFKA_SASL_SCRAM_SHA_512 ? " SCRAM-SHA-512" : "", reauth,
                so->auth_failed_delay_ms);
    }
    for (uint32_t i = 0; i < so->net.listener_count; i++) {
        const struct net_listener *l = &so->net.listeners[i];
        bool v6 = strchr(l->host, ':') != NULL;
        bool plain = l->security == NET_SEC_PLAINTEXT;
        printf("listening on %s%s%s%s%s:%u\n", plain ? "" : net_security_name(l->security),
               plain ? "" : "://", v6 ? "[" : "", l->host, v6 ? "]" : "",
               kafka_server_listener_port(srv, i));
        if (listener_tls(l)) { /* net_tls.c NT4: which send path its connections take */
            char why[200];
            bool ktls = net_tls_ktls_probe(why, sizeof(why));
            fprintf(stderr,
                    "ringtail serve: %s://%s%s%s:%u: TLS 1.2-1.3, client auth %s; kernel TLS: "
                    "%s (%s)%s\n",
                    net_security_name(l->security), v6 ? "[" : "", l->host, v6 ? "]" : "",
                    kafka_server_listener_port(srv, i),
                    net_tls_client_auth_name(a->tls.client_auth),
                    ktls ? "available" : "unavailable", why,
                    ktls ? ": fetched records go from the mapping to the socket where the cipher "
                           "allows"
                         : ": fetched records are copied through a 128 KiB buffer per connection");
        }
    }
    fflush(stdout);
}

#define SERVE_CONTROLLED_SHUTDOWN_MS 10000 /* a cluster node's bound on its controlled shutdown */

/* Step 4: waits for SIGTERM or SIGINT (blocked in every thread, taken here). SIGHUP reloads the
 * TLS certificate and key (net_tls.c NT2: new connections get them, open ones keep theirs; a
 * failed reload keeps the old ones) and waits on. */
static int serve_wait_signal(struct net_tls *tls)
{
    sigset_t wait_set;
    sigemptyset(&wait_set);
    sigaddset(&wait_set, SIGTERM);
    sigaddset(&wait_set, SIGINT);
    sigaddset(&wait_set, SIGHUP);
    for (;;) {
        int sig = 0;
        if (sigwait(&wait_set, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            return sig;
        char why[320];
        if (!tls)
            fprintf(stderr, "ringtail serve: SIGHUP: no TLS listener, nothing to reload\n");
        else if (net_tls_reload(tls, why, sizeof(why)) == 0)
            fprintf(stderr, "ringtail serve: SIGHUP: TLS certificate and key reloaded (new "
                            "connections use them)\n");
        else
            fprintf(stderr,
                    "ringtail serve: SIGHUP: TLS reload failed, the old certificate stays: %s\n",
                    why);
    }
}

/* Step 5: stops the metrics and the server (requests in flight answered), prints what was
 * served, closes the engine cleanly. The exit code. */
static int serve_stop(struct kafka_server *srv, rt_engine *e, struct kafka_metrics *metrics,
                      struct net_tls *tls)
{
    /* The counters are read before the stop frees them; the loops are idle by then except for
     * what is in flight, which the summary does not need to the byte. */
    const struct net_counters *nc = kafka_server_net_counters(srv);
    const struct kafka_server_stats *st = kafka_server_stats_get(srv);
    uint64_t conns = atomic_load(&nc->connections_accepted), reqs = atomic_load(&nc->requests);
    uint64_t zc = atomic_load(&nc->payload_bytes_zero_copy);
    uint64_t plain = atomic_load(&nc->payload_bytes_sendmsg);
    uint64_t copied = atomic_load(&st->fetch_bytes_copied) + atomic_load(&nc->payload_bytes_copied);
    uint64_t notifs = atomic_load(&nc->zc_notifications);
    uint64_t kcopied = atomic_load(&nc->zc_kernel_copied);
    kafka_metrics_stop(metrics); /* no scrape reads the server or the engine after this */
    kafka_server_stop(srv);
    kafka_txn_verify_stop(); /* no Produce is parked after the stop (txn_verify.c KTV2) */
    net_tls_free(tls);       /* no connection uses it after the stop */
    fprintf(stderr,
            "ringtail serve: %" PRIu64 " connections, %" PRIu64
            " requests; fetched records: %" PRIu64 " bytes sent zero-copy, %" PRIu64
            " sent by sendmsg from the mapping, %" PRIu64 " copied in user space\n",
            conns, reqs, zc, plain, copied);
    if (notifs)
        fprintf(stderr,
                "ringtail serve: %" PRIu64 " zero-copy completions, %" PRIu64
                " of which the kernel reports it copied (loopback delivers to a local socket "
                "by copying)\n",
                notifs, kcopied);
    struct rt_stats es;
    if (rt_stats_get(e, &es) == 0)
        fprintf(stderr,
                "ringtail serve: engine: %" PRIu64 " batches appended in %" PRIu64
                " group-commit rounds, %" PRIu64 " fdatasyncs, %" PRIu64 " duplicates\n",
                es.batches_appended, es.rounds, es.fdatasyncs, es.duplicates);
    int code = cli_engine_close("serve", e);
    kafka_metrics_destroy(metrics);
    if (code == CLI_EXIT_OK)
        fprintf(stderr, "ringtail serve: stopped cleanly\n");
    return code;
}

int cmd_serve(int argc, char **argv)
{
    static struct serve_args a; /* the server's options point into it until the stop */
    int code = serve_parse(&a, argc, argv);
    if (code != SERVE_GO_ON)
        return code;
    for (uint32_t i = 0; i < a.so.net.listener_count; i++) {
        const struct net_listener *l = &a.so.net.listeners[i];
        if (l->security == NET_SEC_PLAINTEXT && !is_loopback(l->host))
            fprintf(stderr,
                    "ringtail serve: warning: listening on %s, not loopback, with no "
                    "authentication or TLS: anyone who reaches this port can read and write "
                    "every topic\n",
                    l->host);
        else if (l->security == NET_SEC_SSL && !is_loopback(l->host) &&
                 a.tls.client_auth != NET_TLS_AUTH_REQUIRED)
            fprintf(stderr,
                    "ringtail serve: warning: listening on SSL://%s, not loopback, with TLS but "
                    "no required client certificate (--ssl-client-auth required): anyone who "
                    "reaches this port can read and write every topic\n",
                    l->host);
        if (l->security == NET_SEC_SASL_PLAINTEXT && !is_loopback(l->host) &&
            (a.so.sasl_mechanisms & KAFKA_SASL_PLAIN))
            fprintf(stderr,
                    "ringtail serve: warning: SASL PLAIN on %s without TLS: passwords cross the "
                    "network in the clear (SCRAM does not send them)\n",
                    l->host);
    }

    /* Every thread made from here on (engine shards, loops) inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    rt_engine *e = NULL;
    struct kafka_server *srv = NULL;
    struct kafka_metrics *metrics = NULL;
    /* a cluster's markers only into partitions this node leads (handle_txn.c KT9) */
    static struct kafka_txn_writer txn_writer;
    if (a.voters) { /* producer ids only from the controller's blocks (producer_id_blocks.h PB2) */
        a.eo.producer_ids_granted = true;
        a.so.cluster_member = true; /* no request served before it joined (server.c KS7) */
        txn_writer.self = a.node_id;
        a.eo.txn_marker_writer = kafka_txn_marker_writer;
        a.eo.txn_marker_writer_ctx = &txn_writer;
        /* format.md G.7 CM7: the coordinator loads only once this node leads
         * __transaction_state-0 (txn_cluster.c KTC3), never from a copy that may lag at open */
        a.eo.txn_coordinator_follows = true;
        /* a transaction's partitions and a group's offsets may be held by other nodes only
         * (checked against the metadata image: handle_cluster.c KCL4) */
        a.eo.partitions_elsewhere = true;
        /* KIP-890 across nodes (txn_verify.c KTV3; format.md G.9) */
        int vrc = kafka_txn_verify_start(a.node_id);
        if (vrc) {
            cli_fail("serve", "transaction verifier: %s", strerror(-vrc));
            net_tls_free(a.tls_ctx);
            return CLI_EXIT_FAIL;
        }
        a.eo.txn_verifier = kafka_txn_verify_batch;
    }
    code = serve_start(&a, &e, &srv, &metrics);
    if (code != SERVE_GO_ON) {
        kafka_txn_verify_stop();
        net_tls_free(a.tls_ctx);
        return code;
    }
    atomic_store_explicit(&txn_writer.engine, e, memory_order_release);
    kafka_txn_verify_attach(e);
    struct metadata_node *cluster = NULL; /* --voters: the metadata quorum beside the broker */
    if (a.voters) {
        char err[1024] = "";
        int rc = metadata_node_start(a.dir, a.node_id, a.controller_listen, a.voters, &cluster, err,
                                     sizeof(err));
        if (rc) {
            cli_fail("serve", "metadata quorum: %s", err[0] ? err : quorum_strerror(rc));
            code = serve_stop(srv, e, metrics, a.tls_ctx);
            cred_store_close(a.so.credentials);
            a.so.credentials = NULL;
            return CLI_EXIT_FAIL;
        }
        fprintf(stderr,
                "ringtail serve: controller: node %d of the metadata quorum %s (raft in "
                "%s/" QUORUM_DIR_NAME ")\n",
                (int)a.node_id, a.voters, a.dir);
        rc = metadata_node_run(cluster, e, kafka_server_advertised_host(srv),
                               kafka_server_advertised_port(srv), a.session_ms, a.replica_lag_ms,
                               a.checkpoint_ms);
        if (rc) {
            cli_fail("serve", "cluster member: %s", strerror(-rc));
            code = serve_stop(srv, e, metrics, a.tls_ctx);
            metadata_node_stop(cluster);
            cred_store_close(a.so.credentials);
            a.so.credentials = NULL;
            return CLI_EXIT_FAIL;
        }
        kafka_server_set_cluster(srv, cluster);
        atomic_store_explicit(&txn_writer.cluster, cluster, memory_order_release);
    }
    serve_announce(&a, srv);
    int sig = serve_wait_signal(a.tls_ctx);
    fprintf(stderr, "ringtail serve: %s: stopping (answering requests in flight)\n",
            strsignal(sig));
    /* metadata_node.h MN5: leaderships moved away first (at most 10 s), then the agent stops
     * (it uses the engine) */
    (void)metadata_node_shutdown(cluster, SERVE_CONTROLLED_SHUTDOWN_MS);
    metadata_node_halt(cluster);
    code = serve_stop(srv, e, metrics, a.tls_ctx);
    metadata_node_stop(cluster);        /* after the server: no handler reaches it any more */
    cred_store_close(a.so.credentials); /* after the server: no authentication runs now */
    a.so.credentials = NULL;
    return code;
}
