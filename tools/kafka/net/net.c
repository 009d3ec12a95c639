/*
 * net.c — the broker's network loop (see net.h): the connection state machine — loop threads,
 * connections, framing, pipelining, bounds, parked and pending requests — over an event backend
 * (net_backend.h: io_uring in net_uring.c, epoll in net_epoll.c), which does the socket I/O and
 * the waiting and reports back. It owns per-connection buffers and request slots; it never
 * parses anything but the 4-byte frame size, never touches the engine, and has no code for one
 * backend or another (a new backend is a file and a struct net_backend).
 *
 * A connection's requests live in a ring of in_flight_max slots, in arrival order:
 *
 *     head ............ head+sent ............ head+count
 *     [on the wire, waiting for  [answered, pending, parked: waiting their turn to be sent]
 *      zero-copy notifications]
 *
 * Frames are cut from the receive buffer as soon as they are whole and handed to the server at
 * once, so a later request is decoded (and its appends queued) while an earlier one waits —
 * pipelining — but only the slot at head+sent may be sent: answers go out strictly in request
 * order (Kafka's rule; clients match answers by order as well as by correlation id).
 *
 * Invariants:
 *   KN1  At most one recv and one send (of the slot at head+sent) are outstanding per
 *        connection; a slot's response is sent whole before the next slot's starts.
 *   KN2  A slot is released (the server's release hook: fetches dropped) only after its bytes
 *        are on the wire and every zero-copy notification for them arrived — or the connection
 *        is gone — and slots are freed in ring order.
 *   KN3  A connection is freed only when no operation of the kernel (recv, send, notification)
 *        and no NET_PENDING request (a produce on a shard thread) refers to it.
 *   KN4  Bounds: a frame size < 0 or > request_max_bytes closes that connection (logged); at
 *        in_flight_max slots in use the connection stops reading (back-pressure; its first
 *        pause is logged, every pause counted); a connection silent for idle_max_ms with
 *        nothing in flight is closed (logged); a connection beyond connections_max is closed at
 *        accept (logged). None of them touches another connection.
 *   KN6  Memory: a frame over 64 KiB reserves its size in net's queued_bytes when its size
 *        field is read, before its body is buffered, and gives it back when its slot is
 *        released (or its connection freed). A reservation that would pass queued_max_bytes
 *        (unless nothing is reserved at all, so one frame always proceeds) pauses that
 *        connection's reading (counted per wait; logged at the connection's first wait, and
 *        when net's budget is exhausted and again half free), and is retried every tick: many
 *        connections sending large frames at once cannot run the broker out of memory, and
 *        all-or-nothing reservations cannot deadlock.
 *   KN5  The receive buffer grows only to the largest frame seen (at most request_max_bytes + 4)
 *        and slot buffers to the largest frame they held: no allocation per request once warm.
 *        Buffers grown past NET_KEEP_BYTES (16 MiB) are given back once empty (a receive buffer) or
 *        released (a slot's frame), so one large request does not pin its memory for the life
 *        of the connection.
 *   KN7  Response memory: from its answer until its release a slot holds its response's bytes
 *        — buffer and slices (the mapping pages a fetch pins) — in its connection's resp_held,
 *        and its buffer's bytes (what is materialised) in net's queued_response_bytes. A
 *        connection hands the server no further request (its reading pauses, its parked polls
 *        are not retried) while its resp_held is at or above conn_max_response_bytes or net's
 *        sum is at or above queued_max_response_bytes: Kafka mutes a channel until its response
 *        is sent. The check precedes each request, so each loop passes a bound by at most one
 *        answer (held buffers stay below queued_max_response_bytes + threads x the largest
 *        answer), and one answer larger than a bound is still made and sent. Slices are not in
 *        net's sum: never-reading clients of fetches cannot exhaust it for everyone else.
 *   KN8  Copying (copy_slices: --zero-copy false, or a transport that cannot send from a
 *        mapping): a slot's slices are copied through its connection's NET_STAGE_BYTES buffer
 *        as the socket takes them, never into a buffer of the response's size, so a copying
 *        fetch materialises at most NET_STAGE_BYTES per connection whatever its client reads.
 *   KN10 Generated slices (net_slice.fill: a Fetch v0-3's down-converted records): a slot with
 *        one is staged (KN8) whatever copy_slices says, so it never reaches SEND_ZC or
 *        MSG_ZEROCOPY; fill is called only when the copy buffer is refilled, in slice order, for
 *        exactly the slice's len bytes in all, so what a generator materialises at once is
 *        bounded by NET_STAGE_BYTES plus its own bounded state, never by the slice's len. A slot
 *        without one is sent exactly as before (zero copy stays the path of every other
 *        response).
 *   KN9  A transport's handshake (TLS) runs on the loop one non-blocking step per readiness and
 *        is bounded in time: a connection whose handshake is not done handshake_max_ms after
 *        accept is closed at the next tick (logged, counted in handshakes_failed), so a slow or
 *        silent client holds neither a loop nor, for long, a connection slot. A failed
 *        handshake closes that connection only, logged once with the transport's reason.
 */
#include "tools/kafka/net/net_backend.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---- */

int64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void net_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ringtail serve: %s\n", line);
}

static uint32_t be32_load(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- slots ---- */

/* KN6: takes `bytes` of the shared bound, or fails (nothing taken). */
static bool queued_reserve(struct net *n, uint64_t bytes)
{
    uint64_t cur = atomic_load_explicit(&n->counters.queued_bytes, memory_order_relaxed);
    for (;;) {
        if (n->opts.queued_max_bytes && cur > 0 && cur + bytes > n->opts.queued_max_bytes)
            return false;
        if (atomic_compare_exchange_weak_explicit(&n->counters.queued_bytes, &cur, cur + bytes,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    }
}

static void queued_release(struct net *n, uint64_t *bytes)
{
    if (!*bytes)
        return;
    uint64_t was =
        atomic_fetch_sub_explicit(&n->counters.queued_bytes, *bytes, memory_order_relaxed);
    uint64_t now = was - *bytes;
    *bytes = 0;
    /* Logged at state changes only: recovered once half the bound is free again. */
    uint64_t max = n->opts.queued_max_bytes;
    if (max && now <= max / 2 && atomic_load_explicit(&n->req_exhausted, memory_order_relaxed) &&
        atomic_exchange_explicit(&n->req_exhausted, false, memory_order_relaxed))
        net_log("request memory recovered: %" PRIu64 " request bytes are held "
                "(--queued-max-request-bytes %" PRIu64 "); waiting requests are read again",
                now, max);
}

/* KN7: the answer of slot s now holds its bytes (buffer and slices) until its release. */
static void slot_hold_response(struct net_conn *c, struct net_slot *s)
{
    struct net *n = c->loop->net;
    assert(s->resp_held == 0);
    if (s->req.no_response || !s->req.out)
        return;
    uint64_t b = s->req.out_len;
    for (size_t i = 0; i < s->req.slice_count; i++)
        b += s->req.slices[i].len;
    s->resp_held = b;
    s->resp_heap = s->req.out_len;
    c->resp_held += b;
    net_count_add(&n->counters.queued_response_bytes, s->resp_heap);
}

static void slot_drop_response(struct net_conn *c, struct net_slot *s)
{
    struct net *n = c->loop->net;
    if (s->resp_held == 0)
        return;
    assert(c->resp_held >= s->resp_held);
    assert(s->resp_held >= s->resp_heap);
    c->resp_held -= s->resp_held;
    uint64_t was = atomic_fetch_sub_explicit(&n->counters.queued_response_bytes, s->resp_heap,
                                             memory_order_relaxed);
    uint64_t now = was - s->resp_heap;
    s->resp_held = 0;
    s->resp_heap = 0;
    /* The state change is logged, not every pause: "recovered" once half the budget (at least) is free,
     * so a budget that hovers at its bound does not print a line per request. */
    uint64_t max = n->opts.queued_max_response_bytes;
    if (max && now <= max / 2 && atomic_load_explicit(&n->resp_exhausted, memory_order_relaxed) &&
        atomic_exchange_explicit(&n->resp_exhausted, false, memory_order_relaxed))
        net_log("response memory recovered: %" PRIu64 " response bytes are held "
                "(--queued-max-response-bytes %" PRIu64 "); paused connections read again",
                now, max);
}

/* KN7: true when connection c may hand the server another request (or retry a parked one). */
static bool conn_resp_room(struct net_conn *c)
{
    struct net *n = c->loop->net;
    if (c->loop->stopping)
        return true; /* the drain answers everything */
    if (n->opts.conn_max_response_bytes && c->resp_held >= n->opts.conn_max_response_bytes)
        return false;
    uint64_t max = n->opts.queued_max_response_bytes;
    if (!max)
        return true;
    uint64_t held = atomic_load_explicit(&n->counters.queued_response_bytes, memory_order_relaxed);
    if (held < max)
        return true;
    if (!atomic_load_explicit(&n->resp_exhausted, memory_order_relaxed) &&
        !atomic_exchange_explicit(&n->resp_exhausted, true, memory_order_relaxed))
        net_log("response memory exhausted: %" PRIu64 " response bytes are held, unsent "
                "(--queued-max-response-bytes %" PRIu64 "); connections pause reading until "
                "their clients take them",
                held, max);
    return false;
}

static void slot_release(struct net_conn *c, struct net_slot *s)
{
    struct net *n = c->loop->net;
    queued_release(n, &s->reserved);
    slot_drop_response(c, s);
    if (s->state != SLOT_FREE)
        n->hooks.release(n->hooks.ctx, &s->req);
    s->state = SLOT_FREE;
    s->req.out = NULL;
    s->req.out_len = 0;
    s->req.slices = NULL;
    s->req.slice_count = 0;
    s->req.no_response = false;
    s->req.close_reason = NULL;
    s->notifs_pending = 0;
    s->staged = false;
    if (s->frame_cap > NET_KEEP_BYTES) {
        free(s->req.frame);
        s->req.frame = NULL;
        s->frame_cap = 0;
    }
}

static void park(struct net_loop *l, struct net_slot *s)
{
    assert(!s->parked);
    s->parked = true;
    s->prev_parked = NULL;
    s->next_parked = l->parked;
    if (l->parked)
        l->parked->prev_parked = s;
    l->parked = s;
    atomic_fetch_add_explicit(&l->parked_count, 1, memory_order_release);
}

static void unpark(struct net_loop *l, struct net_slot *s)
{
    assert(s->parked);
    if (s->prev_parked)
        s->prev_parked->next_parked = s->next_parked;
    else
        l->parked = s->next_parked;
    if (s->next_parked)
        s->next_parked->prev_parked = s->prev_parked;
    s->parked = false;
    s->next_parked = s->prev_parked = NULL;
    atomic_fetch_sub_explicit(&l->parked_count, 1, memory_order_relaxed);
}

/* Applies a hook's verdict to a slot. */
static void slot_verdict(struct net_conn *c, struct net_slot *s, enum net_verdict v)
{
    switch (v) {
    case NET_DONE:
        s->state = SLOT_READY;
        slot_hold_response(c, s);
        break;
    case NET_PENDING:
        s->state = SLOT_PENDING;
        c->pending++;
        break;
    case NET_PARK:
        s->state = SLOT_PARKED;
        park(c->loop, s);
        break;
    case NET_CLOSE:
        /* The server answered nothing it needs to keep; what it holds goes at release. */
        s->state = SLOT_READY;
        s->req.no_response = true;
        net_conn_close(c, "protocol error");
        net_count_add(&c->loop->net->counters.connections_closed_protocol, 1);
        break;
    }
}

/* ---- receiving and framing ---- */

int net_rbuf_reserve(struct net_conn *c, size_t need)
{
    if (c->roff > 0 && (c->rcap - c->rlen < need || c->roff == c->rlen)) {
        memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    if (c->rcap - c->rlen >= need)
        return 0;
    size_t cap = c->rcap ? c->rcap : NET_RBUF_INITIAL_BYTES;
    while (cap - c->rlen < need)
        cap *= 2;
    uint8_t *b = realloc(c->rbuf, cap);
    if (!b)
        return -ENOMEM;
    c->rbuf = b;
    c->rcap = cap;
    return 0;
}

/* Cuts whole frames out of the receive buffer and hands them to the server. */
static void conn_parse(struct net_conn *c)
{
    struct net *n = c->loop->net;
    while (!c->closing && !c->loop->stopping) {
        size_t avail = c->rlen - c->roff;
        if (avail < 4)
            return;
        int32_t size = (int32_t)be32_load(c->rbuf + c->roff);
        if (size < 0 || (uint32_t)size > n->opts.request_max_bytes) {
            net_log("connection %" PRIu64 " from %s: frame of %" PRId32
                    " bytes is outside 0..%u (socket.request.max.bytes); closing it",
                    c->id, c->peer, size, n->opts.request_max_bytes);
            net_count_add(&n->counters.connections_closed_oversize, 1);
            net_conn_close(c, NULL);
            return;
        }
        if ((size_t)size > NET_RBUF_INITIAL_BYTES && c->reserved == 0) {
            if (!queued_reserve(n, (uint64_t)size)) { /* KN6 */
                uint64_t held =
                    atomic_load_explicit(&n->counters.queued_bytes, memory_order_relaxed);
                if (!atomic_load_explicit(&n->req_exhausted, memory_order_relaxed) &&
                    !atomic_exchange_explicit(&n->req_exhausted, true, memory_order_relaxed))
                    net_log("request memory exhausted: %" PRIu64
                            " request bytes are held (--queued-max-request-bytes %" PRIu64
                            "); large requests wait to be read",
                            held, n->opts.queued_max_bytes);
                if (!c->mem_logged)
                    net_log("connection %" PRIu64 " from %s: a %" PRId32
                            "-byte request waits: %" PRIu64
                            " request bytes are held (--queued-max-request-bytes %" PRIu64
                            ") (logged once per connection)",
                            c->id, c->peer, size, held, n->opts.queued_max_bytes);
                c->mem_logged = true;
                if (!c->mem_paused)
                    net_count_add(&n->counters.memory_stalls, 1);
                c->mem_paused = true;
                c->mem_wait = true;
                return;
            }
            c->reserved = (uint64_t)size;
            c->mem_wait = false;
            c->mem_paused = false;
        }
        if (avail < 4 + (size_t)size) {
            /* An armed recv (io_uring's) points into the buffer: it must not move now (the recv's
             * completion parses again and makes room then). */
            if (c->recv_armed && c->loop->backend->recv_holds_buffer)
                return;
            if (net_rbuf_reserve(c, 4 + (size_t)size - avail) != 0) {
                net_log("connection %" PRIu64 ": no memory for a %" PRId32 "-byte frame; closing",
                        c->id, size);
                net_conn_close(c, NULL);
            }
            return;
        }
        if (c->count == n->opts.in_flight_max) {
            if (!c->stall_logged)
                net_log("connection %" PRIu64 " from %s: %u requests in flight (the per-connection "
                        "bound); reading paused until one is answered (logged once per "
                        "connection; ringtail_kafka_read_pauses_total counts every pause)",
                        c->id, c->peer, n->opts.in_flight_max);
            c->stall_logged = true;
            if (!c->stall_paused)
                net_count_add(&n->counters.in_flight_stalls, 1);
            c->stall_paused = true;
            return;
        }
        if (!conn_resp_room(c)) { /* KN7 */
            if (!c->resp_wait) {
                net_count_add(&n->counters.response_stalls, 1);
                if (!c->resp_logged)
                    net_log("connection %" PRIu64 " from %s: %" PRIu64
                            " response bytes wait for the client to read them "
                            "(--connection-max-response-bytes %" PRIu64
                            ", --queued-max-response-bytes %" PRIu64
                            "); reading paused (logged once per connection)",
                            c->id, c->peer, c->resp_held, n->opts.conn_max_response_bytes,
                            n->opts.queued_max_response_bytes);
                c->resp_logged = true;
            }
            if (!c->resp_wait)
                c->loop->resp_waiting++;
            c->resp_wait = true;
            return;
        }
        if (c->resp_wait)
            c->loop->resp_waiting--;
        c->resp_wait = false;
        struct net_slot *s = net_slot_at(c, c->count);
        assert(s->state == SLOT_FREE);
        if (s->frame_cap < (size_t)size || !s->req.frame) {
            size_t cap = (size_t)size < 256 ? 256 : (size_t)size;
            uint8_t *f = realloc(s->req.frame, cap);
            if (!f) {
                net_log("connection %" PRIu64 ": no memory for a request; closing", c->id);
                net_conn_close(c, NULL);
                return;
            }
            s->req.frame = f;
            s->frame_cap = cap;
        }
        memcpy(s->req.frame, c->rbuf + c->roff + 4, (size_t)size);
        s->req.frame_len = (size_t)size;
        s->reserved = c->reserved; /* KN6: the slot holds it now */
        c->reserved = 0;
        c->roff += 4 + (size_t)size;
        if (c->roff == c->rlen) {
            c->roff = c->rlen = 0;
            if (c->rcap > NET_KEEP_BYTES && !c->recv_armed) {
                uint8_t *b = realloc(c->rbuf, NET_RBUF_INITIAL_BYTES);
                if (b) {
                    c->rbuf = b;
                    c->rcap = NET_RBUF_INITIAL_BYTES;
                }
            }
        }
        c->count++;
        s->state = SLOT_PENDING; /* the hook runs now; slot_verdict sets the real state */
        s->req.deadline_ms = 0;
        net_count_add(&n->counters.requests, 1);
        enum net_verdict v = n->hooks.request(n->hooks.ctx, &s->req);
        slot_verdict(c, s, v);
    }
}

/* Called with bytes that arrived (n > 0), or 0 at EOF, or -errno. */
void net_conn_received(struct net_conn *c, ssize_t got)
{
    if (got > 0) {
        c->rlen += (size_t)got;
        c->last_active_ms = net_now_ms();
        net_count_add(&c->loop->net->counters.bytes_in, (uint64_t)got);
        return;
    }
    if (got == 0) {
        c->eof = true;
        net_conn_close(c, NULL);
        return;
    }
    if (got == -EAGAIN || got == -EINTR || got == -ENOBUFS)
        return;
    if (got != -ECONNRESET && got != -ECANCELED) {
        const char *why = c->transport->error ? c->transport->error(c->tstate) : NULL;
        net_log("connection %" PRIu64 " from %s: recv failed: %s; closing", c->id, c->peer,
                why ? why : strerror((int)-got));
    }
    net_conn_close(c, NULL);
}

/* ---- sending ---- */

/* Builds the iovec list of a slot's response: [buf .. slice .. buf .. slice .. buf]; the
 * server's buffer starts with the frame size. */
static int slot_build_iov(struct net_slot *s)
{
    size_t need = 1 + s->req.slice_count * 2;
    if (need > s->iov_cap) {
        struct iovec *v = realloc(s->iov, need * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->iov = v;
        const struct net_slice **g = realloc(s->iov_gen, need * sizeof(*g));
        if (!g)
            return -ENOMEM;
        s->iov_gen = g;
        s->iov_cap = need;
    }
    s->generated = false;
    uint64_t total = s->req.out_len;
    for (size_t i = 0; i < s->req.slice_count; i++)
        total += s->req.slices[i].len;
    if (total < 4 || total - 4 > INT32_MAX || be32_load(s->req.out) != total - 4)
        return -EMSGSIZE; /* the server's frame size must say what is sent */
    size_t k = 0, at = 0;
    for (size_t i = 0; i < s->req.slice_count; i++) {
        const struct net_slice *sl = &s->req.slices[i];
        assert(sl->at >= at && sl->at <= s->req.out_len);
        if (sl->at > at) {
            s->iov_gen[k] = NULL;
            s->iov[k++] = (struct iovec){(void *)(s->req.out + at), sl->at - at};
        }
        if (sl->len > 0) {
            s->iov_gen[k] = sl->fill ? sl : NULL; /* KN10: made as the socket drains */
            s->generated |= sl->fill != NULL;
            s->iov[k++] = (struct iovec){sl->fill ? NULL : (void *)sl->ptr, sl->len};
        }
        at = sl->at;
    }
    if (s->req.out_len > at) {
        s->iov_gen[k] = NULL;
        s->iov[k++] = (struct iovec){(void *)(s->req.out + at), s->req.out_len - at};
    }
    s->iov_count = k;
    s->iov_pos = 0;
    return 0;
}

/* Advances the slot's iovec window past `n` sent bytes; true when everything is sent. */
static bool slot_advance(struct net_slot *s, size_t n)
{
    while (n > 0 && s->iov_pos < s->iov_count) {
        struct iovec *v = &s->iov[s->iov_pos];
        if (n >= v->iov_len) {
            n -= v->iov_len;
            s->iov_pos++;
        } else {
            v->iov_base = (uint8_t *)v->iov_base + n;
            v->iov_len -= n;
            n = 0;
        }
    }
    while (s->iov_pos < s->iov_count && s->iov[s->iov_pos].iov_len == 0)
        s->iov_pos++;
    return s->iov_pos == s->iov_count;
}

/* KN8: what goes on the wire next for slot s — its iovec window or, staged, the copy buffer,
 * refilled from the window (the copy in user space) once the socket took all of it. */
void net_slot_send_window(struct net_conn *c, struct net_slot *s, struct iovec **iov, size_t *count)
{
    if (!s->staged) {
        *iov = &s->iov[s->iov_pos];
        *count = s->iov_count - s->iov_pos;
        return;
    }
    assert(c->stage);
    if (c->stage_off == c->stage_len) {
        size_t k = 0;
        while (s->iov_pos < s->iov_count && k < NET_STAGE_BYTES) {
            struct iovec *v = &s->iov[s->iov_pos];
            size_t take = v->iov_len;
            if (take > NET_STAGE_BYTES - k)
                take = NET_STAGE_BYTES - k;
            const struct net_slice *g = s->iov_gen[s->iov_pos];
            if (g) { /* KN10: the generator writes the next bytes of its slice */
                g->fill(g->fill_ctx, c->stage + k, take);
            } else {
                memcpy(c->stage + k, v->iov_base, take);
                v->iov_base = (uint8_t *)v->iov_base + take;
            }
            v->iov_len -= take;
            k += take;
            if (v->iov_len == 0)
                s->iov_pos++;
        }
        assert(k > 0);
        c->stage_off = 0;
        c->stage_len = k;
    }
    c->stage_iov = (struct iovec){c->stage + c->stage_off, c->stage_len - c->stage_off};
    *iov = &c->stage_iov;
    *count = 1;
}

/* `n` bytes of what net_slot_send_window gave are on the wire; true when the slot is all sent. */
bool net_slot_sent_bytes(struct net_conn *c, struct net_slot *s, size_t n)
{
    if (!s->staged)
        return slot_advance(s, n);
    assert(n <= c->stage_len - c->stage_off);
    c->stage_off += n;
    return c->stage_off == c->stage_len && s->iov_pos == s->iov_count;
}

uint64_t net_slot_slice_bytes(const struct net_slot *s)
{
    uint64_t b = 0;
    for (size_t i = 0; i < s->req.slice_count; i++)
        b += s->req.slices[i].len;
    return b;
}

/* Frees finished slots from the head, in ring order (KN2). */
void net_conn_reap_slots(struct net_conn *c)
{
    while (c->count > 0 && c->sent > 0) {
        struct net_slot *s = net_slot_at(c, 0);
        if (s->state != SLOT_SENT || s->notifs_pending > 0)
            return;
        slot_release(c, s);
        c->head = (c->head + 1) % c->loop->net->opts.in_flight_max;
        c->count--;
        c->sent--;
        c->stall_paused = false; /* a slot is free: the next stall is a new pause */
    }
}

/* A slot's bytes are all on the wire. */
void net_slot_sent(struct net_conn *c, struct net_slot *s)
{
    s->state = SLOT_SENT;
    c->sent++;
    c->last_active_ms = net_now_ms();
}

/* Starts the next send if its turn has come, and keeps the connection moving. */
void net_conn_pump_send(struct net_conn *c)
{
    while (!c->send_armed && c->sent < c->count && !c->closing) {
        struct net_slot *s = net_slot_at(c, c->sent);
        if (s->state != SLOT_READY)
            return;
        if (s->req.close_reason) {
            net_log("connection %" PRIu64 " from %s: %s; closing", c->id, c->peer,
                    s->req.close_reason);
            s->req.no_response = true;
            net_conn_close(c, NULL);
            return;
        }
        if (s->req.no_response) {
            net_slot_sent(c, s);
            continue;
        }
        int rc = slot_build_iov(s);
        if (rc) {
            net_log("connection %" PRIu64 ": cannot send a response: %s; closing", c->id,
                    strerror(-rc));
            net_conn_close(c, NULL);
            return;
        }
        s->staged = (c->loop->net->opts.copy_slices || !c->transport->sends_mapped(c->tstate) ||
                     s->generated) &&
                    s->req.slice_count > 0; /* KN8, KN10 */
        if (s->staged && !c->stage && !(c->stage = malloc(NET_STAGE_BYTES))) {
            net_log("connection %" PRIu64 ": no memory for its copy buffer; closing", c->id);
            net_conn_close(c, NULL);
            return;
        }
        c->stage_off = c->stage_len = 0;
        s->state = SLOT_SENDING;
        c->loop->backend->arm_send(c, s);
        return;
    }
}

bool net_conn_reading_paused(const struct net_conn *c)
{
    return c->loop->stopping || c->handshaking || c->mem_wait || c->resp_wait ||
           c->count >= c->loop->net->opts.in_flight_max;
}

/* Parses what is buffered, sends what is due, frees what is done, reads more. Never frees the
 * connection itself (net_loop_sweep does, after the event that closed it), so callers may go on
 * using it. */
void net_conn_progress(struct net_conn *c)
{
    /* Until nothing moves: a send that completes at once (epoll) frees slots, which lets
     * buffered frames be parsed, whose answers may go out at once too. */
    for (;;) {
        uint32_t head = c->head, count = c->count, sent = c->sent;
        size_t roff = c->roff, rlen = c->rlen;
        net_conn_reap_slots(c);
        conn_parse(c);
        net_conn_pump_send(c);
        net_conn_reap_slots(c);
        if (c->closing || (head == c->head && count == c->count && sent == c->sent &&
                           roff == c->roff && rlen == c->rlen))
            break;
    }
    if (c->closing)
        return;
    c->loop->backend->update_conn(c);
}

/* ---- connections ---- */

static void conn_free(struct net_conn *c)
{
    struct net_loop *l = c->loop;
    struct net *n = l->net;
    if (c->resp_wait)
        l->resp_waiting--;
    for (uint32_t i = 0; i < n->opts.in_flight_max; i++) {
        struct net_slot *s = &c->slots[i];
        if (s->parked)
            unpark(l, s);
        slot_release(c, s);
        n->hooks.slot_free(n->hooks.ctx, &s->req);
        free(s->req.frame);
        free(s->iov);
        free(s->iov_gen);
    }
    queued_release(n, &c->reserved);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    l->conn_count--;
    if (n->hooks.session_close)
        n->hooks.session_close(n->hooks.ctx, &c->session);
    c->transport->close(c->tstate);
    if (c->fd >= 0)
        close(c->fd);
    atomic_fetch_sub_explicit(&n->counters.connections_open, 1, memory_order_relaxed);
    free(c->slots);
    free(c->rbuf);
    free(c->stage);
    free(c);
}

/* KN3: the connection goes once nothing refers to it. */
static void conn_maybe_free(struct net_conn *c)
{
    if (!c->closing || c->ops_outstanding > 0 || c->pending > 0)
        return;
    conn_free(c);
}

void net_conn_close(struct net_conn *c, const char *why)
{
    if (c->closing)
        return;
    if (why)
        net_log("connection %" PRIu64 " from %s: %s; closing", c->id, c->peer, why);
    c->closing = true;
    for (uint32_t i = 0; i < c->count; i++) {
        struct net_slot *s = net_slot_at(c, i);
        if (s->parked) {
            unpark(c->loop, s);
            s->state = SLOT_READY;
        }
    }
    /* Outstanding recv/send come back with errors (or 0); notifications still arrive. */
    shutdown(c->fd, SHUT_RDWR);
    c->loop->backend->close_conn(c);
}

void net_conn_new(struct net_loop *l, uint32_t listener, int fd,
                  const struct sockaddr_storage *peer)
{
    struct net *n = l->net;
    uint64_t open = atomic_load_explicit(&n->counters.connections_open, memory_order_relaxed);
    char name[64] = "?";
    char host[INET6_ADDRSTRLEN] = "";
    if (peer) {
        uint16_t port = 0;
        if (peer->ss_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)peer;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            port = ntohs(a->sin_port);
        } else if (peer->ss_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)peer;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            port = ntohs(a->sin6_port);
        }
        snprintf(name, sizeof(name), "%s:%u", host, port);
    }
    net_count_add(&n->counters.connections_accepted, 1);
    if (open >= n->opts.connections_max || l->stopping) {
        if (!l->stopping) {
            net_log("connection from %s refused: %" PRIu64
                    " connections open (--connections-max %u)",
                    name, open, n->opts.connections_max);
            net_count_add(&n->counters.connections_refused_max, 1);
        }
        close(fd);
        return;
    }
    struct net_conn *c = calloc(1, sizeof(*c));
    struct net_slot *slots = calloc(n->opts.in_flight_max, sizeof(*slots));
    if (!c || !slots) {
        free(c);
        free(slots);
        net_log("connection from %s refused: out of memory", name);
        close(fd);
        return;
    }
    const struct net_listener *li = &n->opts.listeners[listener];
    c->loop = l;
    c->fd = fd;
    c->transport = li->transport ? li->transport : &net_transport_tcp;
    c->handshaking = true;
    c->slots = slots;
    c->id = atomic_fetch_add_explicit(&n->next_conn_id, 1, memory_order_relaxed) + 1;
    memcpy(c->peer, name, sizeof(c->peer));
    c->session.listener = listener;
    c->session.security = li->security;
    c->session.conn_id = c->id;
    snprintf(c->session.peer_host, sizeof(c->session.peer_host), "%s", host);
    c->last_active_ms = net_now_ms();
    c->recv_op = (struct net_op){.kind = OP_RECV, .conn = c};
    if (n->hooks.session_open && n->hooks.session_open(n->hooks.ctx, &c->session) != 0) {
        free(slots);
        free(c);
        net_log("connection from %s refused: out of memory", name);
        close(fd);
        return;
    }
    for (uint32_t i = 0; i < n->opts.in_flight_max; i++) {
        slots[i].send_op = (struct net_op){.kind = OP_SEND, .conn = c, .slot = &slots[i]};
        slots[i].req.conn_id = c->id;
        slots[i].req.session = &c->session;
        if (n->hooks.slot_init(n->hooks.ctx, &slots[i].req) != 0) {
            for (uint32_t j = 0; j < i; j++)
                n->hooks.slot_free(n->hooks.ctx, &slots[j].req);
            if (n->hooks.session_close)
                n->hooks.session_close(n->hooks.ctx, &c->session);
            free(slots);
            free(c);
            net_log("connection from %s refused: out of memory", name);
            close(fd);
            return;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->hs_deadline_ms =
        n->opts.handshake_max_ms > 0 ? c->last_active_ms + n->opts.handshake_max_ms : 0; /* KN9 */
    int trc = c->transport->open(c->transport->ctx, fd, &c->tstate);
    if (trc != 0)
        net_log("connection %" PRIu64 " from %s refused: the %s transport: %s", c->id, name,
                c->transport->name, strerror(-trc));
    if (trc != 0 || net_rbuf_reserve(c, NET_RBUF_INITIAL_BYTES) != 0) {
        if (trc == 0)
            c->transport->close(c->tstate);
        for (uint32_t j = 0; j < n->opts.in_flight_max; j++)
            n->hooks.slot_free(n->hooks.ctx, &slots[j].req);
        if (n->hooks.session_close)
            n->hooks.session_close(n->hooks.ctx, &c->session);
        free(slots);
        free(c);
        close(fd);
        return;
    }
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    l->conn_count++;
    atomic_fetch_add_explicit(&n->counters.connections_open, 1, memory_order_relaxed);
    l->backend->open_conn(c);
    if (!c->closing)
        net_conn_handshake(c); /* plain TCP: done at once */
}

void net_conn_handshake(struct net_conn *c)
{
    assert(c->handshaking);
    struct net *n = c->loop->net;
    enum net_want want = NET_WANT_NONE;
    int rc = c->transport->handshake(c->tstate, &want);
    if (rc == 0) {
        c->handshaking = false;
        c->last_active_ms = net_now_ms();
        if (c->transport->peer_principal &&
            !c->transport->peer_principal(c->tstate, c->session.peer_principal,
                                          sizeof(c->session.peer_principal)))
            c->session.peer_principal[0] = '\0';
        if (!c->transport->raw)
            net_count_add(c->transport->sends_mapped(c->tstate) ? &n->counters.handshakes_mapped
                                                                : &n->counters.handshakes_copying,
                          1);
        if (n->hooks.session_ready)
            n->hooks.session_ready(n->hooks.ctx, &c->session);
        net_conn_progress(c);
        return;
    }
    if (rc == -EAGAIN) {
        c->hs_want = want;
        c->loop->backend->update_conn(c);
        return;
    }
    const char *why = c->transport->error ? c->transport->error(c->tstate) : NULL;
    net_log("connection %" PRIu64 " from %s: %s handshake failed: %s; closing", c->id, c->peer,
            c->transport->name, why ? why : strerror(-rc));
    net_count_add(&n->counters.connections_closed_protocol, 1);
    net_count_add(&n->counters.handshakes_failed, 1);
    net_conn_close(c, NULL);
}

/* ---- completions handed back from other threads ---- */

void net_req_complete(struct net_req *req)
{
    struct net_slot *s = (struct net_slot *)req;
    struct net_conn *c = s->send_op.conn;
    struct net_loop *l = c->loop;
    /* The eventfd is written under the lock: once the loop has taken this slot off the list
     * (under the same lock) nothing here touches the loop again, so a loop that then finishes
     * and is freed by net_stop is never written to. */
    pthread_mutex_lock(&l->lock);
    s->next_done = l->done_head;
    l->done_head = s;
    uint64_t one = 1;
    ssize_t w = write(l->event_fd, &one, sizeof(one));
    (void)w; /* a full eventfd counter still wakes the loop */
    pthread_mutex_unlock(&l->lock);
}

void net_wake(struct net *n)
{
    for (uint32_t i = 0; i < n->loop_count; i++) {
        struct net_loop *l = &n->loops[i];
        if (atomic_load_explicit(&l->parked_count, memory_order_acquire) == 0)
            continue;
        if (atomic_exchange_explicit(&l->wake_pending, true, memory_order_acq_rel))
            continue;
        uint64_t one = 1;
        ssize_t w = write(l->event_fd, &one, sizeof(one));
        (void)w;
    }
}

/* Runs the completions and, when woken by an append (or at a deadline), the parked slots. */
void net_loop_handle_event(struct net_loop *l, bool all_parked)
{
    struct net *n = l->net;
    pthread_mutex_lock(&l->lock);
    struct net_slot *list = l->done_head;
    l->done_head = NULL;
    pthread_mutex_unlock(&l->lock);
    for (struct net_slot *s = list, *next; s; s = next) {
        next = s->next_done;
        struct net_conn *c = s->send_op.conn;
        assert(s->state == SLOT_PENDING);
        assert(c->pending > 0);
        c->pending--;
        s->state = SLOT_READY;
        slot_hold_response(c, s);
        net_conn_progress(c);
    }
    bool woken = atomic_exchange_explicit(&l->wake_pending, false, memory_order_acq_rel);
    if (!woken && !all_parked)
        return;
    int64_t now = net_now_ms();
    struct net_slot *p = l->parked;
    while (p) {
        struct net_slot *next = p->next_parked;
        bool expired = l->stopping || now >= p->req.deadline_ms;
        if ((woken || expired || all_parked) && conn_resp_room(p->send_op.conn)) { /* KN7 */
            unpark(l, p);
            struct net_conn *c = p->send_op.conn;
            enum net_verdict v = n->hooks.retry(n->hooks.ctx, &p->req, expired);
            if (v == NET_PARK && expired)
                v = NET_DONE; /* the hook must answer an expired poll; never park forever */
            slot_verdict(c, p, v);
            net_conn_progress(c);
        }
        p = next;
    }
}

/* Deadlines of parked slots and idle connections. */
void net_loop_tick(struct net_loop *l)
{
    int64_t now = net_now_ms();
    bool any_expired = false;
    for (struct net_slot *p = l->parked; p; p = p->next_parked)
        if (now >= p->req.deadline_ms && conn_resp_room(p->send_op.conn))
            any_expired = true;
    if (any_expired) {
        /* Only the expired ones are retried: net_loop_handle_event checks each deadline. */
        struct net_slot *p = l->parked;
        while (p) {
            struct net_slot *next = p->next_parked;
            if (now >= p->req.deadline_ms && conn_resp_room(p->send_op.conn)) { /* KN7 */
                unpark(l, p);
                struct net_conn *c = p->send_op.conn;
                enum net_verdict v = l->net->hooks.retry(l->net->hooks.ctx, &p->req, true);
                if (v == NET_PARK)
                    v = NET_DONE;
                slot_verdict(c, p, v);
                net_conn_progress(c);
            }
            p = next;
        }
    }
    /* KN7: room in net's response budget goes to the waiting connections at once, not at the
     * next tick (their own releases wake the others; this is for the budget shared). */
    uint64_t resp_max = l->net->opts.queued_max_response_bytes;
    if (l->resp_waiting > 0 && resp_max &&
        atomic_load_explicit(&l->net->counters.queued_response_bytes, memory_order_relaxed) <
            resp_max)
        for (struct net_conn *c = l->conns; c; c = c->next)
            if (c->resp_wait && !c->closing)
                net_conn_progress(c);
    if (now < l->next_idle_scan_ms)
        return;
    l->next_idle_scan_ms = now + NET_TICK_MS;
    for (struct net_conn *c = l->conns; c; c = c->next) /* KN6, KN7: retry waiting ones */
        if ((c->mem_wait || c->resp_wait) && !c->closing) {
            c->mem_wait = false;
            /* Waiting for the broker is not idleness, also on the tick its wait ends: a loop
             * held up past idle_max_ms (a slow topic creation) must not close the connection
             * whose request it has only now begun to read. */
            c->last_active_ms = now;
            net_conn_progress(c);
        }
    for (struct net_conn *c = l->conns; c; c = c->next) /* KN9 */
        if (c->handshaking && !c->closing && c->hs_deadline_ms && now >= c->hs_deadline_ms) {
            net_log("connection %" PRIu64 " from %s: %s handshake not done within %" PRId64
                    " ms; closing",
                    c->id, c->peer, c->transport->name, l->net->opts.handshake_max_ms);
            net_count_add(&l->net->counters.handshakes_failed, 1);
            net_conn_close(c, NULL);
        }
    int64_t idle = l->net->opts.idle_max_ms;
    if (idle <= 0)
        return;
    for (struct net_conn *c = l->conns, *next; c; c = next) {
        next = c->next;
        if (!c->closing && c->count == 0 && now - c->last_active_ms > idle) {
            net_log("connection %" PRIu64 " from %s: idle for more than %" PRId64
                    " ms (connections.max.idle.ms); closing",
                    c->id, c->peer, idle);
            net_count_add(&l->net->counters.connections_closed_idle, 1);
            net_conn_close(c, NULL);
        }
    }
}

/* Frees the connections that closed and that nothing refers to any more (KN3). Where
 * notifications do not outlive a close (epoll) a closed socket's zero-copy pages are the
 * kernel's to release: nothing of ours is waited for. */
void net_loop_sweep(struct net_loop *l)
{
    for (struct net_conn *c = l->conns, *next; c; c = next) {
        next = c->next;
        if (!c->closing)
            continue;
        if (!l->backend->notifs_outlive_close)
            for (uint32_t i = 0; i < c->count; i++)
                net_slot_at(c, i)->notifs_pending = 0;
        conn_maybe_free(c);
    }
}

/* The wait timeout: the nearest parked deadline, at most one tick. */
int64_t net_loop_timeout_ms(struct net_loop *l)
{
    int64_t now = net_now_ms();
    int64_t t = NET_TICK_MS;
    for (struct net_slot *p = l->parked; p; p = p->next_parked) {
        if (!conn_resp_room(p->send_op.conn))
            continue; /* KN7: retried by the tick once there is room, not in a spin */
        int64_t d = p->req.deadline_ms - now;
        if (d < t)
            t = d < 0 ? 0 : d;
    }
    return t;
}
/* ---- set-up ---- */

static void *loop_main(void *arg)
{
    struct net_loop *l = arg;
    l->backend->loop_run(l); /* io_uring may hand the loop to epoll (net_uring.c) */
    return NULL;
}

static int listen_socket(const struct net_listener *o, int *fd_out, uint16_t *port_out)
{
    char service[8];
    snprintf(service, sizeof(service), "%u", o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(o->host, service, &hints, &res);
    if (g != 0)
        return -EADDRNOTAVAIL;
    int rc = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            rc = -errno;
            close(fd);
            continue;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        *port_out = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
        *fd_out = fd;
        rc = 0;
        break;
    }
    freeaddrinfo(res);
    return rc;
}

static int loop_init(struct net *n, struct net_loop *l, uint32_t index)
{
    l->net = n;
    l->index = index;
    l->backend = n->backend;
    l->listen_count = n->opts.listener_count;
    for (uint32_t i = 0; i < l->listen_count; i++) {
        l->listen_fd[i] = n->listen_fd[i];
        l->accept_op[i] = (struct net_op){.kind = OP_ACCEPT, .listener = i};
    }
    l->event_fd = -1;
    l->epfd = -1;
    l->event_op.kind = OP_EVENT;
    l->cancel_op.kind = OP_CANCEL;
    pthread_mutex_init(&l->lock, NULL);
    /* Blocking: an io_uring read waits on it; epoll reads it only once it is readable. */
    l->event_fd = eventfd(0, EFD_CLOEXEC);
    if (l->event_fd < 0)
        return -errno;
    return l->backend->loop_init(l);
}

static void loop_destroy(struct net_loop *l)
{
    if (l->backend)
        l->backend->loop_destroy(l);
    /* A net_req_complete still inside its critical section finishes before the eventfd goes. */
    pthread_mutex_lock(&l->lock);
    pthread_mutex_unlock(&l->lock);
    if (l->event_fd >= 0)
        close(l->event_fd);
    pthread_mutex_destroy(&l->lock);
}

static void net_free(struct net *n)
{
    for (uint32_t i = 0; i < n->loop_count; i++)
        loop_destroy(&n->loops[i]);
    for (uint32_t i = 0; i < NET_LISTENERS_MAX; i++)
        if (n->listen_fd[i] >= 0)
            close(n->listen_fd[i]);
    free(n->loops);
    free(n);
}

int net_start(const struct net_options *opts, const struct net_hooks *hooks, struct net **out)
{
    if (!opts || !hooks || !out || opts->threads == 0 || opts->in_flight_max == 0 ||
        opts->connections_max == 0 || !hooks->request || !hooks->retry || !hooks->release ||
        !hooks->slot_init || !hooks->slot_free || opts->listener_count == 0 ||
        opts->listener_count > NET_LISTENERS_MAX)
        return -EINVAL;
    for (uint32_t i = 0; i < opts->listener_count; i++)
        if (!net_security_name(opts->listeners[i].security))
            return -EINVAL;
    /* The probe makes (and closes) a ring on this thread: io_uring is set up where it can. */
    bool uring = opts->io != NET_IO_SYNC && net_backend_uring.usable();
    if (opts->io == NET_IO_URING && !uring)
        return -ENOSYS;
    struct net *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->opts = *opts;
    n->hooks = *hooks;
    for (uint32_t i = 0; i < NET_LISTENERS_MAX; i++)
        n->listen_fd[i] = -1;
    n->backend = uring ? &net_backend_uring : &net_backend_epoll;
    bool all_raw = true;
    for (uint32_t i = 0; i < opts->listener_count; i++) {
        const struct net_transport *t = opts->listeners[i].transport;
        all_raw = all_raw && (!t || t->raw);
    }
    if (n->backend->needs_raw_transport && !all_raw) {
        if (opts->io == NET_IO_URING) {
            free(n);
            return -ENOTSUP; /* io_uring runs raw transports only (net_backend.h) */
        }
        n->backend = &net_backend_epoll;
    }
    n->loops = calloc(opts->threads, sizeof(*n->loops));
    if (!n->loops) {
        free(n);
        return -ENOMEM;
    }
    int rc = 0;
    for (uint32_t i = 0; i < opts->listener_count; i++) {
        rc = listen_socket(&opts->listeners[i], &n->listen_fd[i], &n->port[i]);
        if (rc)
            goto err_free;
        if (hooks->bound) /* before pthread_create: seen by every loop */
            hooks->bound(hooks->ctx, i, n->port[i]);
    }
    for (uint32_t i = 0; i < opts->threads; i++) {
        n->loop_count = i + 1;
        rc = loop_init(n, &n->loops[i], i);
        if (rc)
            goto err_free;
    }
    for (uint32_t i = 0; i < n->loop_count; i++) {
        rc = -pthread_create(&n->loops[i].thread, NULL, loop_main, &n->loops[i]);
        if (rc) {
            atomic_store(&n->stopping, true);
            for (uint32_t j = 0; j < i; j++) {
                uint64_t one = 1;
                ssize_t w = write(n->loops[j].event_fd, &one, sizeof(one));
                (void)w;
                pthread_join(n->loops[j].thread, NULL);
            }
            goto err_free;
        }
        n->loops[i].started = true;
    }
    *out = n;
    return 0;

err_free:
    net_free(n);
    return rc;
}

uint16_t net_port(const struct net *n)
{
    return n->port[0];
}

uint16_t net_listener_port(const struct net *n, uint32_t i)
{
    return i < n->opts.listener_count ? n->port[i] : 0;
}

static const char *const security_names[] = {
    [NET_SEC_PLAINTEXT] = "PLAINTEXT",
    [NET_SEC_SSL] = "SSL",
    [NET_SEC_SASL_PLAINTEXT] = "SASL_PLAINTEXT",
    [NET_SEC_SASL_SSL] = "SASL_SSL",
};

const char *net_security_name(enum net_security s)
{
    return (unsigned)s < sizeof(security_names) / sizeof(security_names[0]) ? security_names[s]
                                                                            : NULL;
}

bool net_security_parse(const char *name, enum net_security *out)
{
    for (size_t i = 0; i < sizeof(security_names) / sizeof(security_names[0]); i++)
        if (strcmp(name, security_names[i]) == 0) {
            *out = (enum net_security)i;
            return true;
        }
    return false;
}

const char *net_backend_name(const struct net *n)
{
    return n->backend->name;
}

const struct net_counters *net_counters_get(const struct net *n)
{
    return &n->counters;
}

void net_stop(struct net *n, int64_t drain_ms)
{
    n->drain_ms = drain_ms > 0 ? drain_ms : 0;
    atomic_store_explicit(&n->stopping, true, memory_order_release);
    for (uint32_t i = 0; i < n->loop_count; i++) {
        uint64_t one = 1;
        ssize_t w = write(n->loops[i].event_fd, &one, sizeof(one));
        (void)w;
    }
    for (uint32_t i = 0; i < n->loop_count; i++)
        if (n->loops[i].started)
            pthread_join(n->loops[i].thread, NULL);
    net_free(n);
}
