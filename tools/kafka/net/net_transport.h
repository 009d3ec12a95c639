/*
 * net_transport.h — what carries a connection's bytes over its socket, between the network
 * loop's state machine (net.c) and its event backends (net_uring.c, net_epoll.c): plain TCP
 * (net_tcp.c) and TLS over OpenSSL (net_tls.c), each one struct net_transport, touching neither
 * the handlers nor the state machine. A transport owns its per-connection state (a TLS session,
 * say) and the bytes' form on the wire; it never frames, bounds or parses requests, and never
 * owns the socket (net.c closes it).
 *
 * What the interface can express, for TLS: a handshake run step by step before any request is
 * read; reads and writes that need the opposite readiness (a TLS read that must first write, a
 * write that must first read), reported through `want`; and whether slices can go from their
 * memory (a segment mapping) to the socket without a user-space copy — true only where bytes
 * pass unchanged (plain TCP, or kernel TLS once set up), so zero copy stays on plain TCP and a
 * transport that must transform the bytes gets them copied through the connection's bounded
 * buffer (net.c KN8).
 */
#ifndef RT_KAFKA_NET_TRANSPORT_H
#define RT_KAFKA_NET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The socket readiness a transport call waits for before it can go on. */
enum net_want {
    NET_WANT_NONE = 0,
    NET_WANT_READ = 1,  /* call again once the socket is readable */
    NET_WANT_WRITE = 2, /* call again once the socket is writable */
};

struct net_transport {
    const char *name;
    /* Bytes pass to the socket unchanged, so a completion backend (io_uring) may do the
     * socket's I/O itself (recv into the receive buffer, sendmsg / sendmsg_zc) instead of
     * calling read and writev. A transport that is not raw runs on a readiness backend
     * (epoll): net_start picks it (net.c). */
    bool raw;
    /* What the transport shares between its connections (a TLS context), handed to open. */
    void *ctx;
    /* Per connection, over an accepted non-blocking socket: sets *state for the transport's
     * own use. 0, or -errno (the connection is refused, logged). */
    int (*open)(void *ctx, int fd, void **state);
    /* The connection is gone (its socket is closed by net afterwards). */
    void (*close)(void *state);
    /* One step of the handshake, run before any request is read: 0 when it is done (plain TCP:
     * at once); -EAGAIN with *want set: call again on that readiness; another -errno: it
     * failed, the connection is closed (logged). */
    int (*handshake)(void *state, enum net_want *want);
    /* Plain bytes in: > 0 bytes read, 0 at the end of the stream, -EAGAIN with *want (READ;
     * WRITE when the transport must send before it can read), or another -errno. */
    ssize_t (*read)(void *state, void *buf, size_t len, enum net_want *want);
    /* Plain bytes out: the bytes taken (maybe fewer), -EAGAIN with *want (WRITE; READ when the
     * transport must read first), or another -errno (-EPIPE, -ECONNRESET: the peer left).
     * flags: MSG_ZEROCOPY when the caller sends mapped memory zero-copy (only where
     * sends_mapped says so). */
    ssize_t (*writev)(void *state, const struct iovec *iov, int iov_count, int flags,
                      enum net_want *want);
    /* Slices may be sent from their memory without a user-space copy (zero copy, or a plain
     * sendmsg from the mapping). False: they are copied through the connection's buffer. */
    bool (*sends_mapped)(const void *state);
    /* Optional: plain bytes already taken off the socket and held by the transport (the rest
     * of a TLS record read in part), so a readiness backend reads again without waiting for
     * the socket (it would never become readable for them). NULL: never. */
    bool (*pending)(const void *state);
    /* Optional: why the last call that failed did (TLS: OpenSSL's reason), for the one line
     * net logs when it closes the connection. NULL, or NULL answered: strerror is used. */
    const char *(*error)(void *state);
    /* Optional, once the handshake is done: the peer's principal as the transport knows it
     * (TLS: User: and the client certificate's subject DN), written NUL-terminated into buf;
     * false when it knows none (no client certificate). net copies it into net_session. */
    bool (*peer_principal)(const void *state, char *buf, size_t cap);
};

/* Plain TCP (net_tcp.c): the default (net_options.transport NULL). */
extern const struct net_transport net_transport_tcp;

#endif /* RT_KAFKA_NET_TRANSPORT_H */
