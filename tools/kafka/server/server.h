/*
 * server.h — the Kafka broker behind `ringtail serve`: the network loop (net.h) wired to the
 * request handlers (handle_*.c) over one open engine. cmd_serve.c parses the command line into
 * kafka_server_options, opens the engine, starts the server, waits for a signal and stops it.
 */
#ifndef RT_KAFKA_SERVER_H
#define RT_KAFKA_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/group/group_coord.h"
#include "tools/kafka/net/net.h"

struct kafka_metrics; /* tools/kafka/metrics.h */

/* A client names the few topics it uses in a Metadata or Produce request (librdkafka asks for
 * the topics its application produces to); a request naming more unknown topics than this is
 * not a client's but a scan's (issue 21: 100 000 names in one Metadata request created 1021). */
#define KAFKA_AUTO_CREATE_MAX_DEFAULT 100u

struct kafka_server_options {
    struct net_options net;
    struct kafka_metrics *metrics;  /* --metrics: requests counted there (NULL: none) */
    int32_t broker_id;              /* broker.id (0) */
    const char *advertise_host;     /* what Metadata/FindCoordinator tell clients ("127.0.0.1") */
    uint16_t advertise_port;        /* 0: the port the server listens on */
    uint32_t num_partitions;        /* num.partitions for auto-created topics (1) */
    bool auto_create_topics;        /* auto.create.topics.enable (true) */
    bool accept_replication_factor; /* accept (and report as 1) replication factors > 1 */
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
};

void kafka_server_options_init(struct kafka_server_options *o);

/* Counters over the server's life (relaxed atomics; metrics and the bench read them). */
#define KAFKA_STATS_API_MAX 64
struct kafka_server_stats {
    _Atomic uint64_t requests_by_api[KAFKA_STATS_API_MAX];
    _Atomic uint64_t errors_by_api[KAFKA_STATS_API_MAX]; /* responses carrying an error code */
    _Atomic uint64_t produce_batches;
    _Atomic uint64_t produce_bytes;
    _Atomic uint64_t fetch_bytes;        /* record bytes answered */
    _Atomic uint64_t fetch_bytes_copied; /* ... of which copied into a buffer (zero_copy off) */
    _Atomic uint64_t fetch_long_polls;   /* fetches parked to wait for data */
    _Atomic uint64_t topics_auto_created;
    _Atomic uint64_t requests_refused; /* connection closed: bad header, version, body */
    /* Auto-creation (kafka_topic_ensure): topics answered UNKNOWN_TOPIC_OR_PARTITION past
     * auto_create_max_per_request, and creations the engine refused. */
    _Atomic uint64_t topics_auto_create_deferred;
    _Atomic uint64_t topics_auto_create_failed;
    _Atomic uint64_t produce_upconverted_sets;    /* message sets v0/v1 converted to v2 */
    _Atomic uint64_t produce_upconverted_bytes;   /* ... their bytes as received */
    _Atomic uint64_t fetch_downconverted_batches; /* v2 batches converted for Fetch v0-3 */
    _Atomic uint64_t fetch_downconverted_bytes;   /* ... the message bytes answered */
};

struct kafka_server;

/* Starts serving `engine` (which must stay open until kafka_server_stop returned). Errors:
 * -errno from net_start (bind, io set-up), RT_E_INVALID_ARGUMENT. */
int kafka_server_start(rt_engine *engine, const struct kafka_server_options *opts,
                       struct kafka_server **out);
uint16_t kafka_server_port(const struct kafka_server *s);
const char *kafka_server_backend(const struct kafka_server *s);
const struct kafka_server_stats *kafka_server_stats_get(const struct kafka_server *s);
const struct net_counters *kafka_server_net_counters(const struct kafka_server *s);
/* Stops accepting, answers what is in flight, closes every connection, drops the engine watch.
 * After it returns the engine may be closed. Frees s. */
void kafka_server_stop(struct kafka_server *s);

#endif /* RT_KAFKA_SERVER_H */
