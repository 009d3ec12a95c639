/*
 * broker.c — the broker's defaults (Kafka's where Kafka has one): what `ringtail serve` runs
 * with when no flag says otherwise. It only fills a struct.
 */
#include "tools/kafka/handlers/broker.h"

#include <string.h>

void kafka_server_options_init(struct kafka_server_options *o)
{
    memset(o, 0, sizeof(*o));
    o->net.listeners[0] = (struct net_listener){.host = "127.0.0.1", .port = 9092};
    o->net.listener_count = 1;
    o->net.threads = 1;
    o->net.connections_max = 1024;
    o->net.request_max_bytes = 100u << 20;
    o->net.in_flight_max = 16;
    o->net.idle_max_ms = 600000;
    o->net.queued_max_bytes = 512u << 20;
    o->net.queued_max_response_bytes = 512u << 20;
    o->net.conn_max_response_bytes = 16u << 20;
    o->net.io = NET_IO_AUTO;
    o->net.handshake_max_ms = 10000; /* KN9: a TLS handshake not done in 10 s is closed */
    o->net.zero_copy = true;
    o->broker_id = 0;
    o->num_partitions = 1;
    o->default_replication_factor = 1;
    o->auto_create_topics = true;
    o->auto_create_max_per_request = KAFKA_AUTO_CREATE_MAX_DEFAULT;
    o->transaction_max_timeout_ms = 900000;
    rt_options_init(&o->engine);
    o->zero_copy = true;
    o->fetch_max_bytes = 55u << 20;
    group_coord_options_init(&o->groups);
    o->acl_watch_ms = 1000;
    o->auth_failed_delay_ms = KAFKA_SASL_FAILED_DELAY_MS_DEFAULT;
}

static uint32_t listener_of(const struct net_req *req)
{
    uint32_t i = req && req->session ? req->session->listener : 0;
    return i < NET_LISTENERS_MAX ? i : 0;
}

const char *kafka_advertised_host(const struct kafka_server *srv, const struct net_req *req)
{
    return srv->advertise_host[listener_of(req)];
}

uint16_t kafka_advertised_port(const struct kafka_server *srv, const struct net_req *req)
{
    return srv->advertise_port[listener_of(req)];
}
