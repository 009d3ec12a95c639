/*
 * net_backend.h — inside the broker's network loop (net.h): the connection state machine
 * (net.c) over an event backend, one file each as io/ does for files — io_uring (net_uring.c:
 * completions of accept, recv, sendmsg / sendmsg_zc) and epoll (net_epoll.c: readiness with
 * non-blocking sockets). It holds the structures both sides share and the two small interfaces
 * between them: struct net_backend (what the state machine asks of a backend) and the net_*
 * calls below (what a backend reports to the state machine). Backends own the socket I/O and
 * their waiting; they never frame, parse, bound or answer anything (net.c does). A
 * connection's bytes pass through its transport (net_transport.h: plain TCP in net_tcp.c):
 * a readiness backend (epoll) calls the transport's read and writev, a completion backend
 * (io_uring) does the socket's I/O itself and so runs only raw transports. Nothing here is seen
 * outside tools/kafka/net*.c.
 */
#ifndef RT_KAFKA_NET_BACKEND_H
#define RT_KAFKA_NET_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "tools/kafka/net/net.h"
#include "tools/kafka/net/net_transport.h"

#define NET_RBUF_INITIAL_BYTES (64u << 10)
#define NET_TICK_MS            200          /* idle scans and deadline checks at least this often */
#define NET_KEEP_BYTES         (16u << 20)  /* larger buffers are freed once empty (KN5) */
#define NET_STAGE_BYTES        (128u << 10) /* a connection's copy buffer (KN8) */

enum slot_state {
    SLOT_FREE = 0,
    SLOT_PENDING, /* the server owns it (a produce in the engine) */
    SLOT_PARKED,  /* a long poll */
    SLOT_READY,   /* answered; waiting for its turn */
    SLOT_SENDING,
    SLOT_SENT, /* on the wire; maybe waiting for zero-copy notifications */
};

enum op_kind {
    OP_ACCEPT = 1,
    OP_EVENT,
    OP_RECV,
    OP_SEND,
    OP_CANCEL,
};

struct net_op {
    enum op_kind kind;
    struct net_conn *conn;
    struct net_slot *slot;
    uint32_t listener; /* OP_ACCEPT: which listener's socket */
};

struct net_slot {
    struct net_req req; /* first: the hooks see &slot->req */
    enum slot_state state;
    size_t frame_cap;
    struct net_op send_op;
    struct iovec *iov;
    size_t iov_cap, iov_count, iov_pos;
    const struct net_slice **iov_gen; /* KN10: per iov, its generated slice (else NULL) */
    bool generated;                   /* KN10: the response has a generated slice */
    struct msghdr msg;
    uint32_t notifs_pending; /* zero-copy notifications still to come (either backend) */
    uint64_t reserved;       /* KN6: bytes of queued_bytes this slot's frame holds */
    uint64_t zc_seq_last;    /* epoll: the last MSG_ZEROCOPY id used for this slot */
    uint64_t resp_held;      /* KN7: its answer's bytes, buffer and slices (the connection's) */
    uint64_t resp_heap;      /* KN7: of which in its buffer (net's queued_response_bytes) */
    bool staged;             /* KN8: sent through the connection's copy buffer */
    struct net_slot *next_done;
    struct net_slot *next_parked, *prev_parked;
    bool parked;
};

struct net_conn {
    struct net_loop *loop;
    int fd;
    uint64_t id;
    char peer[64];
    struct net_conn *next, *prev;
    uint8_t *rbuf;
    size_t roff, rlen, rcap; /* unparsed bytes are rbuf[roff, rlen) */
    struct net_slot *slots;
    uint32_t head, count, sent;
    bool recv_armed, send_armed;
    bool closing, eof;
    bool stall_logged;         /* KN4: its first in-flight pause was logged (only the first) */
    bool stall_paused;         /* ... and it is paused so now (pauses are counted, not logged) */
    bool mem_wait, mem_logged; /* KN6: waiting for queued_bytes room; first wait logged */
    bool mem_paused;           /* KN6: inside one wait (mem_wait is cleared by each retry) */
    uint64_t reserved;         /* KN6: held for the frame being received */
    uint64_t resp_held;        /* KN7: response bytes its slots hold */
    uint8_t *stage;            /* KN8: the copy buffer (NET_STAGE_BYTES, made at first use) */
    size_t stage_off, stage_len;
    struct iovec stage_iov;   /* what is sent from it now */
    bool resp_wait;           /* KN7: reading paused at a response bound */
    bool resp_logged;         /* ... and the first such pause was logged */
    uint32_t ops_outstanding; /* io_uring: SQEs whose last CQE has not arrived */
    uint32_t pending;         /* slots in SLOT_PENDING */
    struct net_op recv_op;
    int64_t last_active_ms;
    uint64_t zc_seq_next, zc_seq_done; /* epoll: MSG_ZEROCOPY ids issued / notified */
    uint32_t ep_events;                /* epoll: what is registered */
    bool in_send;                      /* epoll: inside epoll_try_send (no recursion) */
    bool zc_enabled;
    const struct net_transport *transport;   /* what carries its bytes (net_transport.h) */
    void *tstate;                            /* ... and that transport's own state */
    bool handshaking;                        /* the transport's handshake is not done */
    enum net_want hs_want;                   /* ... and waits for this readiness */
    int64_t hs_deadline_ms;                  /* KN9: closed if still handshaking then (0: no) */
    bool read_wants_write, write_wants_read; /* readiness backends: the opposite one asked */
    struct net_session session;              /* what the server sees of it (net.h) */
};

struct net_loop {
    struct net *net;
    uint32_t index;
    pthread_t thread;
    bool started;
    int listen_fd[NET_LISTENERS_MAX]; /* net's sockets (-1 once this loop stops accepting) */
    uint32_t listen_count;
    int event_fd;
    const struct net_backend *backend; /* what this loop runs on (io_uring may fall back) */
    void *be;                          /* the backend's own per-loop state (net_uring.c) */
    int epfd;                          /* epoll: the loop's set */
    struct net_op accept_op[NET_LISTENERS_MAX], event_op, cancel_op;
    uint64_t event_buf;
    bool accept_armed[NET_LISTENERS_MAX], event_armed;
    bool zc_no_report;       /* the kernel refused IORING_SEND_ZC_REPORT_USAGE: sent without it */
    int64_t accept_retry_ms; /* after EMFILE and friends: re-arm then, not in a spin */

    pthread_mutex_t lock; /* the completion list */
    struct net_slot *done_head;
    _Atomic uint32_t parked_count;
    _Atomic bool wake_pending;

    struct net_slot *parked; /* loop thread only */
    uint32_t resp_waiting;   /* KN7: connections here with resp_wait set */
    struct net_conn *conns;
    uint32_t conn_count;
    bool stopping;
    int64_t stop_deadline_ms;
    int64_t next_idle_scan_ms;
    bool reads_pending; /* epoll: a connection's transport holds bytes to read (pending) */
};

struct net {
    struct net_options opts;
    struct net_hooks hooks;
    struct net_loop *loops;
    uint32_t loop_count;
    uint16_t port[NET_LISTENERS_MAX];
    int listen_fd[NET_LISTENERS_MAX];  /* a socket per listener; every loop accepts on each (the
                                         kernel hands each connection to one waiting loop) */
    const struct net_backend *backend; /* what the loops were started on */
    _Atomic bool stopping;
    int64_t drain_ms; /* set by net_stop before `stopping` (release) */
    _Atomic uint64_t next_conn_id;
    _Atomic bool resp_exhausted; /* KN7: net's response budget is full (logged at changes) */
    _Atomic bool req_exhausted;  /* KN6: the same for queued_bytes */
    struct net_counters counters;
};

/* What the state machine asks of an event backend. Every call runs on the loop's thread. */
struct net_backend {
    const char *name; /* "io_uring", "epoll": net_backend_name */
    /* An armed recv points into the connection's receive buffer: it must not move then. */
    bool recv_holds_buffer;
    /* Zero-copy notifications still arrive (and are waited for) after a connection closed;
     * else a closed socket's pages are the kernel's to release (KN2, KN3). */
    bool notifs_outlive_close;
    /* Does the socket's I/O itself (completions), so it runs only raw transports
     * (net_transport.h); net_start picks epoll for the others. */
    bool needs_raw_transport;
    /* True when this kernel has what the backend uses (probed on net_start's thread). */
    bool (*usable)(void);
    /* Per loop, on net_start's thread, after the loop's eventfd and listen_fd[] are set. */
    int (*loop_init)(struct net_loop *l);
    /* The loop thread's body: returns once the loop is stopping and has no connection. */
    void (*loop_run)(struct net_loop *l);
    /* After the thread is joined (or never started). */
    void (*loop_destroy)(struct net_loop *l);
    /* A new connection (on the list, counted): start receiving. May close it. */
    void (*open_conn)(struct net_conn *c);
    /* After the state machine moved: receive again if it should (recv_armed tells whether it
     * wants to; reading_paused says whether it may). */
    void (*update_conn)(struct net_conn *c);
    /* Send slot s (net_slot_send_window says what); report with net_slot_sent_bytes. */
    void (*arm_send)(struct net_conn *c, struct net_slot *s);
    /* The connection is closing (its socket shut down): cancel or deregister what is armed. */
    void (*close_conn)(struct net_conn *c);
};

extern const struct net_backend net_backend_uring;
extern const struct net_backend net_backend_epoll;

/* ---- what backends call (net.c) ---- */

void net_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void net_count_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static inline struct net_slot *net_slot_at(struct net_conn *c, uint32_t i)
{
    return &c->slots[(c->head + i) % c->loop->net->opts.in_flight_max];
}

/* True when the connection must not read now (in-flight, request or response bounds, stop). */
bool net_conn_reading_paused(const struct net_conn *c);
/* One step of the transport's handshake (the readiness it waited for came): done, it goes on to
 * net_conn_progress; still waiting, update_conn asks for what it wants; failed, it closes. */
void net_conn_handshake(struct net_conn *c);
/* Makes room for `need` more bytes at rbuf + rlen. 0 or -ENOMEM. */
int net_rbuf_reserve(struct net_conn *c, size_t need);
/* A new socket from accept (the peer's address if known): set up, or refused and closed. */
void net_conn_new(struct net_loop *l, uint32_t listener, int fd,
                  const struct sockaddr_storage *peer);
/* Bytes that arrived at rbuf + rlen (got > 0), 0 at EOF, or -errno. */
void net_conn_received(struct net_conn *c, ssize_t got);
/* Parse, answer, send and free what can be; then update_conn. Never frees c. */
void net_conn_progress(struct net_conn *c);
void net_conn_close(struct net_conn *c, const char *why);
void net_conn_reap_slots(struct net_conn *c);
void net_conn_pump_send(struct net_conn *c);
void net_slot_send_window(struct net_conn *c, struct net_slot *s, struct iovec **iov,
                          size_t *count);
bool net_slot_sent_bytes(struct net_conn *c, struct net_slot *s, size_t n);
void net_slot_sent(struct net_conn *c, struct net_slot *s);
uint64_t net_slot_slice_bytes(const struct net_slot *s);
/* Completions handed back and, woken (or all_parked), the parked slots. */
void net_loop_handle_event(struct net_loop *l, bool all_parked);
void net_loop_tick(struct net_loop *l);
void net_loop_sweep(struct net_loop *l);
int64_t net_loop_timeout_ms(struct net_loop *l);

#endif /* RT_KAFKA_NET_BACKEND_H */
