/*
 * net.h — the broker's network loop: listening sockets, connections, Kafka framing (a 4-byte
 * big-endian size before every request and response), pipelining and the bounds on all of it,
 * over io_uring (accept, recv, sendmsg / sendmsg_zc) or, where io_uring cannot be set up, over
 * epoll with non-blocking sockets. It knows nothing of the Kafka APIs: a whole frame goes to the
 * server's request hook, and the server hands back the response bytes — a buffer it built plus
 * out-of-line slices (segment bytes of a fetch) that the loop sends without copying them.
 *
 * Threads: `threads` loop threads, each with its own ring (or epoll set) and
 * its own connections; they share one listening socket and each waits on it (a multishot accept,
 * or EPOLLEXCLUSIVE), so the kernel hands every connection to one loop. A connection lives on
 * one loop for its whole life. The only cross-thread
 * entry points are net_req_complete (a produce finished on a shard thread) and net_wake (an
 * append published data; a long-poll fetch may now be answered), both through the loop's
 * eventfd.
 */
#ifndef RT_KAFKA_NET_H
#define RT_KAFKA_NET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum net_io {
    NET_IO_AUTO = 0,  /* io_uring, falling back to epoll when it cannot be set up */
    NET_IO_URING = 1, /* io_uring or fail */
    NET_IO_SYNC = 2,  /* epoll + non-blocking sockets */
};

struct net_transport; /* net_transport.h */

/* Kafka's security protocols (a listener's PROTOCOL in `PROTOCOL://HOST:PORT`): what its
 * connections carry (plain TCP or TLS) and whether they must authenticate (SASL) first. net
 * only carries the tag to the server (net_session); the transport does the TLS part. */
enum net_security {
    NET_SEC_PLAINTEXT = 0,
    NET_SEC_SSL = 1,
    NET_SEC_SASL_PLAINTEXT = 2,
    NET_SEC_SASL_SSL = 3,
};

#define NET_LISTENERS_MAX 8
#define NET_PRINCIPAL_MAX 256

/* One listening socket (Kafka's `listeners` entry). */
struct net_listener {
    const char *host; /* listen address (numeric IPv4 or IPv6, or "localhost") */
    uint16_t port;    /* 0: the kernel picks one (net_listener_port tells which) */
    enum net_security security;
    const struct net_transport *transport; /* what carries its bytes: NULL is plain TCP
                                              (net_tcp.c); one that is not raw makes every
                                              loop run on epoll */
};

/* What the server knows of a connection for its whole life (one per connection, owned by net;
 * loop thread). The server keeps its own per-connection state (authentication, the principal)
 * in `user`, made and freed by the session hooks. */
struct net_session {
    uint32_t listener; /* which of net_options.listeners accepted it */
    enum net_security security;
    char peer_host[46]; /* the peer's numeric address (INET6_ADDRSTRLEN), "" if unknown */
    char peer_principal[NET_PRINCIPAL_MAX]; /* the transport's name for the peer once its
                                               handshake is done (TLS with a client
                                               certificate: User:<subject DN>), "" if none */
    uint64_t conn_id;
    void *user;
};

struct net_options {
    struct net_listener listeners[NET_LISTENERS_MAX]; /* at least one */
    uint32_t listener_count;
    uint32_t threads;           /* loop threads (>= 1) */
    uint32_t connections_max;   /* over all loops; a connection beyond it is closed at once */
    uint32_t request_max_bytes; /* socket.request.max.bytes: a bigger frame closes the conn */
    uint32_t in_flight_max;     /* requests parsed and not yet answered, per connection */
    int64_t idle_max_ms;        /* connections.max.idle.ms: a silent connection is closed */
    int64_t handshake_max_ms;   /* a transport's handshake (TLS) not done this long after
                                   accept closes the connection (KN9). 0 = idle_max_ms only */
    uint64_t queued_max_bytes;  /* queued.max.request.bytes: request bytes (of frames over
                                   64 KiB) held over all connections at once; a frame that
                                   would pass it waits to be read. 0 = no bound */
    uint64_t queued_max_response_bytes; /* response bytes answered and not yet sent (and
                                           released), over all connections: at or above it no
                                           connection hands the server another request (KN7).
                                           0 = no bound */
    uint64_t conn_max_response_bytes;   /* the same, per connection (KN7). 0 = no bound */
    enum net_io io;
    bool zero_copy;   /* send out-of-line slices with SEND_ZC / MSG_ZEROCOPY (else sendmsg) */
    bool copy_slices; /* copy slices through a bounded per-connection buffer instead of
                         sending from their memory (the copying comparison path; KN8) */
};

/* Writes the next `len` bytes of a generated slice at dst (net asks for a slice's bytes in
 * order, `len` in all over the calls, each call at most NET_STAGE_BYTES): it cannot fail, so a
 * generator that meets an error fills what is left with bytes the client reads as nothing
 * (KN10). Loop thread. */
typedef void (*net_slice_fill_fn)(void *ctx, uint8_t *dst, size_t len);

/* One out-of-line run of response bytes: `len` bytes at `ptr` go on the wire right before the
 * response buffer's byte `at`. The memory must stay valid (and unchanged) until the server's
 * release hook runs for the request. A generated slice (fill set, ptr NULL) has no memory: its
 * `len` bytes are made by fill as the socket drains, through the connection's copy buffer
 * (KN10); `fill_ctx` must stay valid until the release hook. */
struct net_slice {
    size_t at;
    uint32_t len;
    const void *ptr;
    net_slice_fill_fn fill;
    void *fill_ctx;
};

/* One request slot of a connection (in_flight_max of them, reused). */
struct net_req {
    /* The request frame without its size prefix; valid until the release hook. Writable: a
     * produce's batches are appended from it in place. */
    uint8_t *frame;
    size_t frame_len;
    /* The response, set by the server when it answers: the whole frame (its 4-byte size first,
     * counting the slices too) with slices sent in between. no_response: acks=0 produce,
     * nothing is sent. */
    const uint8_t *out;
    size_t out_len;
    const struct net_slice *slices;
    size_t slice_count;
    bool no_response;
    /* Close the connection when this request's turn comes instead of answering (Kafka's
     * answer to a failed acks=0 produce: the client learns of it by the close). */
    const char *close_reason;
    /* Long poll: when the request hook answers NET_PARK, the loop calls the retry hook on
     * every wake and once the monotonic clock passes deadline_ms (then with expired set). */
    int64_t deadline_ms;
    void *user;                  /* the server's per-slot state (made by the slot hooks) */
    uint64_t conn_id;            /* for log lines */
    struct net_session *session; /* its connection's; valid from slot_init to slot_free */
};

/* What the request and retry hooks answer. */
enum net_verdict {
    NET_DONE = 0,    /* the response is set; send it when its turn comes */
    NET_PENDING = 1, /* the server calls net_req_complete later (any thread) */
    NET_PARK = 2,    /* a long poll: retry on wakes, until deadline_ms */
    NET_CLOSE = 3,   /* a protocol violation: close the connection (logged by the server) */
};

struct net_hooks {
    void *ctx;
    /* Per slot, at connection set-up and tear-down. */
    int (*slot_init)(void *ctx, struct net_req *req);
    void (*slot_free)(void *ctx, struct net_req *req);
    /* A whole frame arrived (on the loop thread). */
    enum net_verdict (*request)(void *ctx, struct net_req *req);
    /* A parked request: answer now, park again, or (expired) answer with what there is. */
    enum net_verdict (*retry)(void *ctx, struct net_req *req, bool expired);
    /* The response is on the wire (and, zero-copy, the kernel let go of the slices), or the
     * connection closed: drop what the request held (fetches, buffers). Loop thread. */
    void (*release)(void *ctx, struct net_req *req);
    /* Optional: listener `listener` is bound to `port`; called once per listener by net_start
     * before any loop thread runs (so what it sets is seen by every request hook). */
    void (*bound)(void *ctx, uint32_t listener, uint16_t port);
    /* Optional, per connection, before its slots are made (slot_init sees the session) and
     * after they are freed: the server's own per-connection state in session->user. A
     * nonzero answer refuses the connection. Loop thread. */
    int (*session_open)(void *ctx, struct net_session *session);
    void (*session_close)(void *ctx, struct net_session *session);
    /* Optional: the transport's handshake is done (session->peer_principal is set, if the
     * transport knows one), before the connection's first request is read. Loop thread. */
    void (*session_ready)(void *ctx, struct net_session *session);
};

/* Counters over all loops (relaxed atomics; metrics and the bench read them). */
struct net_counters {
    _Atomic uint64_t connections_accepted;
    _Atomic uint64_t connections_open;
    _Atomic uint64_t connections_refused_max; /* closed at accept: --connections-max */
    _Atomic uint64_t connections_closed_idle;
    _Atomic uint64_t connections_closed_oversize; /* socket.request.max.bytes */
    _Atomic uint64_t connections_closed_protocol; /* a bad frame or a NET_CLOSE */
    _Atomic uint64_t requests;
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t in_flight_stalls;        /* reads paused at in_flight_max (per pause) */
    _Atomic uint64_t memory_stalls;           /* reads paused at queued_max_bytes (per pause) */
    _Atomic uint64_t queued_bytes;            /* request bytes held now (frames > 64 KiB) */
    _Atomic uint64_t response_stalls;         /* reads paused at a response bound (KN7, per
                                                 pause) */
    _Atomic uint64_t queued_response_bytes;   /* response bytes held now (KN7) */
    _Atomic uint64_t payload_bytes_zero_copy; /* slice bytes handed to SEND_ZC/MSG_ZEROCOPY */
    _Atomic uint64_t payload_bytes_sendmsg;   /* slice bytes sent by plain sendmsg from the
                                                 mapping (the kernel copies; user space does
                                                 not) */
    _Atomic uint64_t payload_bytes_copied;    /* slice bytes copied in user space (KN8) */
    _Atomic uint64_t zc_notifications;        /* zero-copy completions the kernel reported */
    _Atomic uint64_t zc_kernel_copied;        /* ... of which say the kernel copied the pages
                                                 after all (loopback delivers to a local socket
                                                 by copying: still no user-space copy) */
    /* Connections of transports that are not raw (TLS) by how their handshake ended. */
    _Atomic uint64_t handshakes_mapped;  /* done; slices go from the mapping (kernel TLS) */
    _Atomic uint64_t handshakes_copying; /* done; slices are copied (KN8) */
    _Atomic uint64_t handshakes_failed;  /* failed, or not done in handshake_max_ms (KN9) */
};

struct net;

/* Binds and listens (every loop's socket), starts the loop threads. On return the broker
 * accepts connections. Errors: -errno (bind, listen, ring/epoll set-up), -EINVAL (options). */
int net_start(const struct net_options *opts, const struct net_hooks *hooks, struct net **out);

/* The port listener 0 is bound to. */
uint16_t net_port(const struct net *n);
/* The port listener i is bound to (0 for no such listener). */
uint16_t net_listener_port(const struct net *n, uint32_t i);
/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"; NULL for another value. */
const char *net_security_name(enum net_security s);
/* The protocol named (Kafka's spelling, upper case); false if it names none. */
bool net_security_parse(const char *name, enum net_security *out);
/* "io_uring" or "epoll": what the loops run on. */
const char *net_backend_name(const struct net *n);
const struct net_counters *net_counters_get(const struct net *n);

/* Stops accepting, stops reading new requests, finishes the requests in flight (parked ones are
 * retried as expired; pending ones are waited for), sends their answers (for at most
 * drain_ms), closes every connection and joins the loops. Frees n. */
void net_stop(struct net *n, int64_t drain_ms);

/* Hands a NET_PENDING request back to its loop with its response set. Any thread. */
void net_req_complete(struct net_req *req);

/* Wakes every loop that has parked requests (any thread; cheap when none has). */
void net_wake(struct net *n);

/* The monotonic clock in ms (deadlines). */
int64_t net_now_ms(void);

#endif /* RT_KAFKA_NET_H */
