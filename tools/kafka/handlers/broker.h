/*
 * broker.h — what every handler reads of the broker it runs in: the options `ringtail serve`
 * was started with, the server's shared state (engine, advertised address, groups, the
 * auto-creation budget) and the counters it keeps (metrics/stats.h). It sits below server.c,
 * which starts and stops a broker, so a handler never includes the server (issue 22 item 2: no
 * handler calls up into server.c).
 */
#ifndef RT_KAFKA_BROKER_H
#define RT_KAFKA_BROKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/group/group_coord.h"
#include "tools/kafka/metrics/stats.h"
#include "tools/kafka/net/net.h"

struct kafka_metrics; /* tools/kafka/metrics/metrics.h */
struct authorizer;    /* tools/kafka/auth/authorizer.h */
struct cred_store;    /* tools/kafka/sasl/cred_store.h */
struct broker_config; /* tools/kafka/config/broker_config.h */

/* SASL mechanisms (Kafka's sasl.enabled.mechanisms), a bit each. */
enum kafka_sasl_mech {
    KAFKA_SASL_PLAIN = 1u << 0,
    KAFKA_SASL_SCRAM_SHA_256 = 1u << 1,
    KAFKA_SASL_SCRAM_SHA_512 = 1u << 2,
};
#define KAFKA_SASL_FAILED_DELAY_MS_DEFAULT 100 /* connection.failed.authentication.delay.ms */

/* A client names the few topics it uses in a Metadata or Produce request (librdkafka asks for
 * the topics its application produces to); a request naming more unknown topics than this is
 * not a client's but a scan's (issue 21: 100 000 names in one Metadata request created 1021). */
#define KAFKA_AUTO_CREATE_MAX_DEFAULT 100u

struct kafka_server_options {
    struct net_options net;
    struct kafka_metrics *metrics; /* --metrics: requests counted there (NULL: none) */
    int32_t broker_id;             /* broker.id (0) */
    /* Per listener (net.listeners[i]), Kafka's advertised.listeners: what Metadata and
     * FindCoordinator tell a client that came in on that listener. host NULL: "127.0.0.1";
     * port 0: the port the listener is bound to. */
    struct {
        const char *host;
        uint16_t port;
    } advertised[NET_LISTENERS_MAX];
    uint32_t num_partitions; /* num.partitions for auto-created topics (1) */
    /* default.replication.factor (1): in a cluster, the replication factor of a topic created
     * with -1 (auto-created ones included, autocreate.c AC1); a single broker's is 1. */
    int16_t default_replication_factor;
    bool auto_create_topics;            /* auto.create.topics.enable (true) */
    bool accept_replication_factor;     /* accept (and report as 1) replication factors > 1 */
    int32_t transaction_max_timeout_ms; /* transaction.max.timeout.ms (as the engine's) */
    struct rt_options engine; /* what the engine was opened with (DescribeConfigs reports it);
                                 rt_options_init's defaults unless the caller copies its own */
    bool zero_copy;           /* fetch records sent from the mapping (true); false copies
                                 them into the response buffer (the bench's comparison) */
    /* Auto-created topics at most per request, and per connection a bucket of as many that
     * refills at that many a second (100; --auto-create-max-per-request): a topic past either
     * bound is answered UNKNOWN_TOPIC_OR_PARTITION (retriable: a client retries its metadata)
     * and created by a later request. 0: no auto-creation at all. */
    uint32_t auto_create_max_per_request;
    uint32_t fetch_max_bytes; /* fetch.max.bytes: a Fetch response's records at most, whatever
                                 the client asks, but for KIP-74's first batch (55 MiB;
                                 0 = the default) */
    struct group_coord_options groups; /* --group-...: group_coord_options_init's defaults */
    /* --authorizer on (auth/authorizer.h): ACLs from `acl_dir`/acls.meta checked on every API
     * (handlers/authorize.h); off (false): everything is allowed and the ACL APIs answer
     * SECURITY_DISABLED. */
    bool authorizer;
    const char *acl_dir;     /* the data directory */
    const char *super_users; /* super.users: "User:admin;User:ops" (NULL: none) */
    bool allow_if_no_acl;    /* allow.everyone.if.no.acl.found (false) */
    uint32_t acl_watch_ms;   /* how often acls.meta's mtime is checked (1000) */
    /* SASL (handle_sasl.c): the enabled mechanisms (enum kafka_sasl_mech bits; 0 = none), the
     * credentials they check against (NULL: none; owned by the caller, outlives the server),
     * Kafka's connections.max.reauth.ms (0 = off: a session never expires, KIP-368) and
     * connection.failed.authentication.delay.ms (the failure's answer waits that long). */
    uint32_t sasl_mechanisms;
    struct cred_store *credentials;
    int64_t reauth_max_ms;
    int64_t auth_failed_delay_ms;
    /* Dynamic broker configs (AlterConfigs on a BROKER resource, config/broker_config.h): kept
     * durably in `config_dir`/broker-configs.meta (the data directory); NULL keeps them in
     * memory only (tests). */
    const char *config_dir;
    /* --voters: this server is a cluster node, and serves no request until
     * kafka_server_set_cluster hands it its cluster member (server.c KS7). false: a single
     * broker, serving from the start. */
    bool cluster_member;
};

void kafka_server_options_init(struct kafka_server_options *o);

/* A connection's auto-creation budget (kafka_topic_ensure): KAFKA_CREATE_BUCKETS of them, a
 * connection in the one its id picks (a collision makes two connections share one: still
 * bounded). */
#define KAFKA_CREATE_BUCKETS 1024
struct kafka_create_bucket {
    uint64_t conn_id;
    double tokens;
    int64_t refilled_ms;
};

struct kafka_server {
    rt_engine *engine;
    struct kafka_server_options opts;
    pthread_mutex_t create_lock; /* the buckets and the failure log's rate */
    struct kafka_create_bucket create_buckets[KAFKA_CREATE_BUCKETS];
    int64_t create_failure_logged_ms;
    int create_failure_logged_rc;
    uint64_t create_failures_unlogged;
    struct net *net;
    char advertise_host[NET_LISTENERS_MAX][256]; /* per listener (options' advertised) */
    uint16_t advertise_port[NET_LISTENERS_MAX];
    struct kafka_server_stats stats;
    struct group_coord *groups; /* consumer groups (group_coord.c) */
    /* Under the coordinator's lock: the request whose call may store group metadata; the store
     * it starts holds its answer (handle_group.c KH4). */
    struct kafka_slot *group_storing;
    /* The admin thread (server.c KS4): requests of off_loop rows, in arrival order. */
    pthread_t admin_thread;
    pthread_mutex_t admin_lock;
    pthread_cond_t admin_cond;
    struct kafka_slot *admin_head, *admin_tail;
    bool admin_stop;
    struct authorizer *authorizer; /* --authorizer on; NULL when off */
    struct broker_config *dynamic; /* the dynamic broker configs (handle_admin.c KAD10) */
    /* --voters: this node's cluster member (metadata_node.h), set once it runs; NULL for a
     * single broker (kafka_cluster reads it). */
    _Atomic(struct metadata_node *) cluster;
    /* per `__consumer_offsets` partition, this node's role as its group coordinator
     * (group_cluster.c KGC3; cluster nodes only) */
    _Atomic int group_roles[RT_GROUP_OFFSETS_PARTITIONS];
    /* this node's role as the transaction coordinator, the leader of `__transaction_state`-0
     * (txn_cluster.c KTC3; cluster nodes only) */
    _Atomic int txn_role;
};

/* The address a client on the request's listener is told (Metadata, FindCoordinator). */
const char *kafka_advertised_host(const struct kafka_server *srv, const struct net_req *req);
uint16_t kafka_advertised_port(const struct kafka_server *srv, const struct net_req *req);

#endif /* RT_KAFKA_BROKER_H */
