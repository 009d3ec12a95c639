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
#include "tools/kafka/handlers/broker.h"
#include "tools/kafka/net/net.h"

struct kafka_server;

/* Starts serving `engine` (which must stay open until kafka_server_stop returned). Errors:
 * -errno from net_start (bind, io set-up), RT_E_INVALID_ARGUMENT. */
int kafka_server_start(rt_engine *engine, const struct kafka_server_options *opts,
                       struct kafka_server **out);
uint16_t kafka_server_port(const struct kafka_server *s);
/* The port listener i (options' net.listeners[i]) is bound to. */
uint16_t kafka_server_listener_port(const struct kafka_server *s, uint32_t i);
const char *kafka_server_backend(const struct kafka_server *s);
const struct kafka_server_stats *kafka_server_stats_get(const struct kafka_server *s);
const struct net_counters *kafka_server_net_counters(const struct kafka_server *s);
/* Stops accepting, answers what is in flight, closes every connection, drops the engine watch.
 * After it returns the engine may be closed. Frees s. */
void kafka_server_stop(struct kafka_server *s);
/* --voters: hands the server this node's cluster member (metadata_node.h) once it runs; from
 * then on Metadata and CreateTopics answer from the cluster and the broker-to-controller APIs
 * are served (api_table.c KA8). It must outlive kafka_server_stop. */
struct metadata_node;
void kafka_server_set_cluster(struct kafka_server *s, struct metadata_node *n);
/* The host and port listener 0 advertises (what a cluster node registers). */
const char *kafka_server_advertised_host(const struct kafka_server *s);
uint16_t kafka_server_advertised_port(const struct kafka_server *s);

#endif /* RT_KAFKA_SERVER_H */
