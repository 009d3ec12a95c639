/*
 * net_uring.c — the network loop's io_uring backend (net_backend.h): one ring per loop thread,
 * made, used and closed on that thread alone (a single issuer: its task work runs there and
 * nowhere else). A multishot accept on the shared listening socket, one recv per connection
 * into its receive buffer, one sendmsg (or sendmsg_zc with usage reports, when zero copy is on)
 * per connection at a time, a read on the loop's eventfd; completions are reported to the
 * state machine (net.c), which owns everything else. It never frames or bounds anything. A loop
 * whose ring cannot be made runs on epoll instead (net_epoll.c), logged.
 */
#include "tools/kafka/net/net_backend.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Kernel 6.2+ (liburing 2.3's headers predate them): ask the notification to say whether the
 * kernel copied after all. */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define NET_RING_ENTRIES 256
#define NET_CQ_ENTRIES   8192

struct uring_loop {
    struct io_uring ring;
    bool ring_open;
};

static struct io_uring *uring_ring(struct net_loop *l)
{
    return &((struct uring_loop *)l->be)->ring;
}

static struct io_uring_sqe *uring_sqe(struct net_loop *l)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(uring_ring(l));
    while (!sqe) {
        int rc = io_uring_submit(uring_ring(l));
        if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
            net_log("io_uring_submit: %s", strerror(-rc));
            abort(); /* the ring is the loop: nothing can go on without it */
        }
        sqe = io_uring_get_sqe(uring_ring(l));
    }
    return sqe;
}

/* A multishot accept on every listener's socket that has none armed. */
static void uring_arm_accept(struct net_loop *l)
{
    for (uint32_t i = 0; i < l->listen_count; i++) {
        if (l->accept_armed[i] || l->stopping || l->listen_fd[i] < 0)
            continue;
        struct io_uring_sqe *sqe = uring_sqe(l);
        io_uring_prep_multishot_accept(sqe, l->listen_fd[i], NULL, NULL, SOCK_CLOEXEC);
        io_uring_sqe_set_data(sqe, &l->accept_op[i]);
        l->accept_armed[i] = true;
    }
}

static bool uring_any_accept_armed(const struct net_loop *l)
{
    for (uint32_t i = 0; i < l->listen_count; i++)
        if (l->accept_armed[i])
            return true;
    return false;
}

static void uring_arm_event(struct net_loop *l)
{
    if (l->event_armed)
        return;
    struct io_uring_sqe *sqe = uring_sqe(l);
    io_uring_prep_read(sqe, l->event_fd, &l->event_buf, sizeof(l->event_buf), 0);
    io_uring_sqe_set_data(sqe, &l->event_op);
    l->event_armed = true;
}

static void uring_arm_recv(struct net_conn *c)
{
    struct net_loop *l = c->loop;
    if (c->recv_armed || c->closing)
        return;
    if (net_rbuf_reserve(c, 4096) != 0) {
        net_conn_close(c, "out of memory for the receive buffer");
        return;
    }
    struct io_uring_sqe *sqe = uring_sqe(l);
    io_uring_prep_recv(sqe, c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    io_uring_sqe_set_data(sqe, &c->recv_op);
    c->recv_armed = true;
    c->ops_outstanding++;
}

static void uring_arm_send(struct net_conn *c, struct net_slot *s)
{
    struct net_loop *l = c->loop;
    struct net *n = l->net;
    c->send_armed = true;
    memset(&s->msg, 0, sizeof(s->msg));
    struct iovec *iov;
    size_t iov_count;
    net_slot_send_window(c, s, &iov, &iov_count);
    s->msg.msg_iov = iov;
    s->msg.msg_iovlen = iov_count;
    struct io_uring_sqe *sqe = uring_sqe(l);
    bool zc = n->opts.zero_copy && s->req.slice_count > 0 && !s->staged;
    if (zc) {
        io_uring_prep_sendmsg_zc(sqe, c->fd, &s->msg, MSG_NOSIGNAL);
        if (!l->zc_no_report)
            sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
    } else
        io_uring_prep_sendmsg(sqe, c->fd, &s->msg, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, &s->send_op);
    c->ops_outstanding++;
}

static void uring_cqe(struct net_loop *l, struct io_uring_cqe *cqe)
{
    struct net_op *op = io_uring_cqe_get_data(cqe);
    if (!op)
        return;
    struct net *n = l->net;
    switch (op->kind) {
    case OP_ACCEPT:
        if (!(cqe->flags & IORING_CQE_F_MORE))
            l->accept_armed[op->listener] = false;
        if (cqe->res >= 0) {
            struct sockaddr_storage peer;
            socklen_t plen = sizeof(peer);
            bool have = getpeername(cqe->res, (struct sockaddr *)&peer, &plen) == 0;
            net_conn_new(l, op->listener, cqe->res, have ? &peer : NULL);
        } else if (cqe->res != -ECANCELED && !l->stopping) {
            net_log("accept failed: %s; retrying in 100 ms", strerror(-cqe->res));
            l->accept_retry_ms = net_now_ms() + 100;
        }
        if (!l->accept_armed[op->listener] && !l->stopping && l->accept_retry_ms == 0)
            uring_arm_accept(l);
        return;
    case OP_EVENT:
        l->event_armed = false;
        net_loop_handle_event(l, false);
        if (cqe->res == -ECANCELED)
            return;
        if (cqe->res >= 0 || cqe->res == -EINTR || cqe->res == -EAGAIN)
            uring_arm_event(l);
        else
            net_log("loop %u: reading its eventfd failed: %s", l->index, strerror(-cqe->res));
        return;
    case OP_CANCEL:
        return;
    case OP_RECV: {
        struct net_conn *c = op->conn;
        assert(c->ops_outstanding > 0);
        c->ops_outstanding--;
        c->recv_armed = false;
        net_conn_received(c, cqe->res);
        net_conn_progress(c);
        return;
    }
    case OP_SEND: {
        struct net_conn *c = op->conn;
        struct net_slot *s = op->slot;
        if (cqe->flags & IORING_CQE_F_NOTIF) {
            net_count_add(&n->counters.zc_notifications, 1);
            if (!l->zc_no_report && ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED))
                net_count_add(&n->counters.zc_kernel_copied, 1);
            assert(s->notifs_pending > 0);
            s->notifs_pending--;
            assert(c->ops_outstanding > 0);
            c->ops_outstanding--;
            net_conn_progress(c);
            return;
        }
        if (cqe->flags & IORING_CQE_F_MORE)
            s->notifs_pending++; /* its notification CQE carries the op's last reference */
        else {
            assert(c->ops_outstanding > 0);
            c->ops_outstanding--;
        }
        c->send_armed = false;
        if (c->closing) {
            net_conn_progress(c);
            return;
        }
        if (cqe->res < 0) {
            if (cqe->res == -EAGAIN || cqe->res == -EINTR ||
                (cqe->res == -EINVAL && !l->zc_no_report && s->req.slice_count > 0)) {
                if (cqe->res == -EINVAL)
                    l->zc_no_report = true; /* an older kernel: no usage report */
                c->send_armed = true;
                uring_arm_send(c, s);
                return;
            }
            if (cqe->res != -EPIPE && cqe->res != -ECONNRESET)
                net_log("connection %" PRIu64 " from %s: send failed: %s; closing", c->id, c->peer,
                        strerror(-cqe->res));
            net_conn_close(c, NULL);
            net_conn_progress(c);
            return;
        }
        net_count_add(&n->counters.bytes_out, (uint64_t)cqe->res);
        if (!net_slot_sent_bytes(c, s, (size_t)cqe->res)) {
            c->send_armed = true;
            uring_arm_send(c, s);
            return;
        }
        uint64_t payload = net_slot_slice_bytes(s);
        if (s->staged)
            net_count_add(&n->counters.payload_bytes_copied, payload);
        else if (n->opts.zero_copy)
            net_count_add(&n->counters.payload_bytes_zero_copy, payload);
        else
            net_count_add(&n->counters.payload_bytes_sendmsg, payload);
        net_slot_sent(c, s);
        net_conn_progress(c);
        return;
    }
    }
}

static void uring_run(struct net_loop *l)
{
    uring_arm_event(l);
    uring_arm_accept(l);
    for (;;) {
        if (l->stopping && l->conn_count == 0)
            break;
        if (l->stopping && net_now_ms() > l->stop_deadline_ms) {
            for (struct net_conn *c = l->conns; c; c = c->next)
                net_conn_close(c, NULL);
            net_loop_sweep(l);
        }
        if (l->accept_retry_ms && net_now_ms() >= l->accept_retry_ms) {
            l->accept_retry_ms = 0;
            uring_arm_accept(l);
        }
        int64_t t = net_loop_timeout_ms(l);
        struct __kernel_timespec ts = {.tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000};
        struct io_uring_cqe *cqe = NULL;
        int rc = io_uring_submit_and_wait_timeout(uring_ring(l), &cqe, 1, &ts, NULL);
        if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            net_log("loop %u: io_uring wait failed: %s", l->index, strerror(-rc));
            abort();
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(uring_ring(l), head, cqe)
        {
            seen++;
            struct io_uring_cqe copy = *cqe;
            uring_cqe(l, &copy);
        }
        io_uring_cq_advance(uring_ring(l), seen);
        net_loop_tick(l);
        if (atomic_load_explicit(&l->net->stopping, memory_order_acquire) && !l->stopping) {
            l->stopping = true;
            l->stop_deadline_ms = net_now_ms() + l->net->drain_ms;
            for (uint32_t i = 0; i < l->listen_count; i++) {
                if (l->listen_fd[i] >= 0 && l->accept_armed[i]) {
                    struct io_uring_sqe *sqe = uring_sqe(l);
                    io_uring_prep_cancel(sqe, &l->accept_op[i], 0);
                    io_uring_sqe_set_data(sqe, &l->cancel_op);
                }
            }
            net_loop_handle_event(l, true); /* parked polls answer now */
            for (struct net_conn *c = l->conns; c; c = c->next) {
                if (c->count == 0)
                    net_conn_close(c, NULL);
                net_conn_progress(c);
            }
        }
        if (l->stopping) {
            for (struct net_conn *c = l->conns; c; c = c->next)
                if (!c->closing && c->count == 0)
                    net_conn_close(c, NULL);
        }
        net_loop_sweep(l);
    }
    /* Nothing refers to a connection any more; the accept and the eventfd read may still be
     * armed. They are cancelled and reaped here, and the ring is closed on this thread. */
    struct io_uring_sqe *sqe;
    for (uint32_t i = 0; i < l->listen_count; i++) {
        sqe = uring_sqe(l);
        io_uring_prep_cancel(sqe, &l->accept_op[i], IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data(sqe, &l->cancel_op);
    }
    sqe = uring_sqe(l);
    io_uring_prep_cancel(sqe, &l->event_op, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data(sqe, &l->cancel_op);
    int64_t until = net_now_ms() + 1000;
    while ((uring_any_accept_armed(l) || l->event_armed) && net_now_ms() < until) {
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000};
        struct io_uring_cqe *cqe = NULL;
        (void)io_uring_submit_and_wait_timeout(uring_ring(l), &cqe, 1, &ts, NULL);
        unsigned head, seen = 0;
        io_uring_for_each_cqe(uring_ring(l), head, cqe)
        {
            seen++;
            struct net_op *op = io_uring_cqe_get_data(cqe);
            if (op && op->kind == OP_ACCEPT && !(cqe->flags & IORING_CQE_F_MORE))
                l->accept_armed[op->listener] = false;
            else if (op == &l->event_op)
                l->event_armed = false;
        }
        io_uring_cq_advance(uring_ring(l), seen);
    }
    io_uring_queue_exit(uring_ring(l));
    ((struct uring_loop *)l->be)->ring_open = false;
}

/* ---- the backend seam (net_backend.h) ---- */

/* True when io_uring here has what the loop uses (multishot accept, sendmsg_zc). */
static bool uring_usable(void)
{
    struct io_uring_probe *probe = io_uring_get_probe();
    if (!probe)
        return false;
    bool ok = io_uring_opcode_supported(probe, IORING_OP_ACCEPT) &&
              io_uring_opcode_supported(probe, IORING_OP_RECV) &&
              io_uring_opcode_supported(probe, IORING_OP_SENDMSG) &&
              io_uring_opcode_supported(probe, IORING_OP_SENDMSG_ZC) &&
              io_uring_opcode_supported(probe, IORING_OP_READ);
    io_uring_free_probe(probe);
    return ok;
}

static int uring_loop_init(struct net_loop *l)
{
    (void)l; /* the ring itself is made by the loop thread (uring_loop_run) */
    return 0;
}

static void uring_loop_run(struct net_loop *l)
{
    struct uring_loop *u = calloc(1, sizeof(*u));
    int rc = -ENOMEM;
    if (u) {
        struct io_uring_params p = {.flags = IORING_SETUP_CQSIZE, .cq_entries = NET_CQ_ENTRIES};
        rc = io_uring_queue_init_params(NET_RING_ENTRIES, &u->ring, &p);
    }
    if (rc == 0) {
        u->ring_open = true;
        l->be = u;
        uring_run(l);
        return;
    }
    free(u);
    net_log("loop %u: io_uring_queue_init failed (%s); this loop runs on epoll", l->index,
            strerror(-rc));
    l->backend = &net_backend_epoll;
    rc = l->backend->loop_init(l);
    if (rc) {
        net_log("loop %u: no epoll either (%s); the loop is lost", l->index, strerror(-rc));
        abort();
    }
    l->backend->loop_run(l);
}

static void uring_loop_destroy(struct net_loop *l)
{
    struct uring_loop *u = l->be;
    if (!u)
        return;
    if (u->ring_open)
        io_uring_queue_exit(&u->ring);
    free(u);
    l->be = NULL;
}

static void uring_update_conn(struct net_conn *c)
{
    assert(c->transport->raw);
    if (!c->recv_armed && !net_conn_reading_paused(c))
        uring_arm_recv(c);
}

/* Nothing to register: the first recv is armed once the (raw, so immediate) handshake is
 * done and net_conn_progress updates the connection. */
static void uring_open_conn(struct net_conn *c)
{
    uring_update_conn(c);
}

static void uring_close_conn(struct net_conn *c)
{
    if (c->ops_outstanding == 0)
        return;
    struct io_uring_sqe *sqe = io_uring_get_sqe(uring_ring(c->loop));
    if (!sqe) {
        io_uring_submit(uring_ring(c->loop));
        sqe = io_uring_get_sqe(uring_ring(c->loop));
    }
    if (sqe) {
        io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data(sqe, &c->loop->cancel_op);
    }
}

const struct net_backend net_backend_uring = {
    .name = "io_uring",
    .recv_holds_buffer = true,
    .notifs_outlive_close = true,
    .needs_raw_transport = true,
    .usable = uring_usable,
    .loop_init = uring_loop_init,
    .loop_run = uring_loop_run,
    .loop_destroy = uring_loop_destroy,
    .open_conn = uring_open_conn,
    .update_conn = uring_update_conn,
    .arm_send = uring_arm_send,
    .close_conn = uring_close_conn,
};
