/*
 * session.h — the broker's own state of one connection, beside net's net_session (which says
 * which listener accepted it, under which security protocol, from which host): who the peer is
 * (Kafka's principal) and whether it has authenticated. Made and freed by server.c's session
 * hooks (KS5); read and written on the connection's loop thread, and read by handlers of
 * off-loop rows (admin thread) while the request holds its slot. It never holds the socket or
 * a request, and never blocks.
 *
 *   KSE1 On a PLAINTEXT or SSL listener a session is authenticated from accept with principal
 *        User:ANONYMOUS; on SSL, a client certificate verified in the TLS handshake makes it
 *        User:<the certificate's subject DN, RFC 2253> (Kafka's default principal builder)
 *        before the first request is read (server.c's session_ready hook); on a SASL listener
 *        it is not authenticated until SASL completes, and the principal is User:ANONYMOUS
 *        (or, SASL_SSL, the certificate's) until then: handle_sasl.c then sets User:NAME
 *        (KSA1-KSA4; a re-authentication keeps the same name).
 */
#ifndef RT_KAFKA_SESSION_H
#define RT_KAFKA_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/kafka/net/net.h"

#define KAFKA_PRINCIPAL_ANONYMOUS "User:ANONYMOUS"
#define KAFKA_PRINCIPAL_MAX       256

struct kafka_session {
    char principal[KAFKA_PRINCIPAL_MAX]; /* Kafka's "Type:name", e.g. User:alice */
    bool authenticated;                  /* KSE1 */
    int64_t auth_expiry_ms;              /* KIP-368 re-authentication deadline (0: none) */
    void *sasl;                          /* the SASL exchange's own state (NULL: none) */
    void *acl_cache;                     /* the authorizer's per-connection cache (NULL: none) */
};

/* The session of the connection a request came on. */
static inline struct kafka_session *kafka_session_of(const struct net_req *req)
{
    return req && req->session ? (struct kafka_session *)req->session->user : NULL;
}

#endif /* RT_KAFKA_SESSION_H */
