/*
 * net_tls.h — TLS for the broker's listeners (Kafka's SSL and SASL_SSL): a struct net_transport
 * (net_transport.h) over Debian's OpenSSL 3, with the context its connections share — the
 * server's certificate and key, the CA that client certificates are verified against and
 * Kafka's ssl.client.auth — swapped whole on reload. See net_tls.c for what it owns.
 */
#ifndef RT_KAFKA_NET_TLS_H
#define RT_KAFKA_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/kafka/net/net_transport.h"

/* Kafka's ssl.client.auth. */
enum net_tls_client_auth {
    NET_TLS_AUTH_NONE = 0,      /* no client certificate asked for */
    NET_TLS_AUTH_REQUESTED = 1, /* asked for; one that is sent must verify against the CA */
    NET_TLS_AUTH_REQUIRED = 2,  /* a client without a verified certificate is refused */
};

struct net_tls_options {
    const char *cert_pem; /* the server's certificate (chain), PEM */
    const char *key_pem;  /* its private key, PEM (unencrypted) */
    const char *ca_pem;   /* client certificates are verified against it; NULL: none */
    enum net_tls_client_auth client_auth;
};

struct net_tls;

/* Loads the files into a first context. 0, or -errno / -EPROTO with why[] telling what is
 * wrong (OpenSSL's reason and the file). The options' strings are copied (reload reads the
 * same files again). */
int net_tls_create(const struct net_tls_options *o, struct net_tls **out, char *why, size_t cap);
/* The transport to set in net_listener.transport (lives as long as t). */
const struct net_transport *net_tls_transport(struct net_tls *t);
/* Reads the certificate, key and CA files again into a new context that every connection
 * accepted from now on uses; connections already open keep theirs (NT2). On failure the old
 * context stays and why[] says what is wrong. Any thread. */
int net_tls_reload(struct net_tls *t, char *why, size_t cap);
/* After net_stop (no connection uses it any more). NULL is accepted. */
void net_tls_free(struct net_tls *t);

/* "none", "requested", "required"; false if s names none. */
bool net_tls_client_auth_parse(const char *s, enum net_tls_client_auth *out);
const char *net_tls_client_auth_name(enum net_tls_client_auth a);

/* Kernel TLS (NT4). Whether this process can have the kernel encrypt a socket's sends: OpenSSL
 * built with KTLS and the kernel's `tls` upper-layer protocol present (probed by setting
 * TCP_ULP "tls" on a loopback TCP socket). why[] says which, in words for the startup line. */
bool net_tls_ktls_probe(char *why, size_t cap);
/* The decision of NT4, on what one connection knows: slices go from the mapping by plain
 * sendmsg only when OpenSSL was built with KTLS, the handshake is done, OpenSSL put the send
 * side in the kernel (BIO_get_ktls_send) and no record of OpenSSL's own is waiting to be
 * written; otherwise they are copied (net.c KN8). */
bool net_tls_sends_mapped_decide(bool built_with_ktls, bool handshake_done, bool ktls_send,
                                 size_t write_pending);

#endif /* RT_KAFKA_NET_TLS_H */
