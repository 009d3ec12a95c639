/*
 * kclient.h — a blocking Kafka client call for a node talking to its peers (the controller) and
 * for `ringtail cluster status`: connect to HOST:PORT (plain TCP), send one request frame (the
 * request header api.h's table says, then the body a kmsg_*_request_encode writes), read the
 * response frame back and check its correlation id. kclient_call owns no connection across
 * calls; a struct kclient_conn keeps one open across calls to the same peer (a replica
 * fetcher's, replica_fetcher.c) and closes it on any error. It never decides what an answer
 * means: the caller decodes the body with the kmsg_*_response_decode of
 * its API. Every wait is bounded by the timeout; a peer's bytes are bounded (KC1).
 *
 * Invariants:
 *   KC1  A response frame over KCLIENT_FRAME_MAX, a short read, a correlation id that is not the
 *       request's, or a deadline passed is an error (-EPROTO / -ETIMEDOUT / -errno), never a
 *       crash or an unbounded allocation.
 */
#ifndef RT_KAFKA_CLUSTER_KCLIENT_H
#define RT_KAFKA_CLUSTER_KCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/proto/proto.h"

#define KCLIENT_FRAME_MAX (64u << 20)

/* Writes a request body at `version` (a kmsg_*_request_encode). */
typedef int (*kclient_encode_fn)(struct kp_writer *w, int16_t version, const void *req);

/* One round trip. On 0, *frame is a malloc'ed response frame (without its size prefix) that the
 * caller frees, and *body_at where the body starts after the response header. */
int kclient_call(const char *host, uint16_t port, int timeout_ms, int16_t api_key, int16_t version,
                 kclient_encode_fn encode, const void *req, uint8_t **frame, size_t *frame_len,
                 size_t *body_at);

/* A connection kept open across calls (fd -1: none). Zero-initialise with KCLIENT_CONN_INIT. */
struct kclient_conn {
    int fd;
    char host[256];
    uint16_t port;
};
#define KCLIENT_CONN_INIT                                                                          \
    {                                                                                              \
        .fd = -1                                                                                   \
    }

/* kclient_call over c: dials host:port first when c holds no connection or one to another
 * peer; any error closes it (the next call dials again). */
int kclient_conn_call(struct kclient_conn *c, const char *host, uint16_t port, int timeout_ms,
                      int16_t api_key, int16_t version, kclient_encode_fn encode, const void *req,
                      uint8_t **frame, size_t *frame_len, size_t *body_at);
/* Closes c's connection, if any. */
void kclient_conn_close(struct kclient_conn *c);

#endif
