/*
 * net_epoll.c — the network loop's epoll backend (net_backend.h): one epoll set per loop
 * thread with non-blocking sockets, level-triggered. The listening socket is shared with
 * EPOLLEXCLUSIVE (one loop woken per connection); a connection's EPOLLIN stands for its armed
 * recv and EPOLLOUT is asked for only while a send is short; zero copy is MSG_ZEROCOPY with
 * its notifications read off the socket's error queue. Bytes read and sent are reported to the
 * state machine (net.c), which owns everything else. It never frames or bounds anything.
 */
#include "tools/kafka/net/net_backend.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define NET_EPOLL_EVENTS 128

static void epoll_update(struct net_conn *c)
{
    if (c->closing)
        return;
    uint32_t want = 0;
    if (c->handshaking) {
        want = c->hs_want == NET_WANT_WRITE ? EPOLLOUT : EPOLLIN;
    } else {
        /* A transport may need the opposite readiness to go on (TLS: a read that must write). */
        if (c->recv_armed && !net_conn_reading_paused(c))
            want |= c->read_wants_write ? EPOLLOUT : EPOLLIN;
        if (c->send_armed)
            want |= c->write_wants_read ? EPOLLIN : EPOLLOUT;
    }
    /* Bytes the transport already holds (a TLS record read in part) never make the socket
     * readable: the loop reads them without waiting (epoll_run). */
    if (!c->handshaking && c->recv_armed && !c->read_wants_write && !net_conn_reading_paused(c) &&
        c->transport->pending && c->transport->pending(c->tstate))
        c->loop->reads_pending = true;
    if (want == c->ep_events)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = c};
    if (epoll_ctl(c->loop->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->ep_events = want;
}

/* Reads MSG_ZEROCOPY notifications off the socket's error queue. */
static void epoll_read_errqueue(struct net_conn *c)
{
    for (;;) {
        char control[128];
        struct msghdr msg = {.msg_control = control, .msg_controllen = sizeof(control)};
        ssize_t r = recvmsg(c->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
        if (r < 0)
            break;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
                  (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
                continue;
            const struct sock_extended_err *ee = (const void *)CMSG_DATA(cm);
            if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            /* [ee_info, ee_data] are done; TCP reports them in order. */
            net_count_add(&c->loop->net->counters.zc_notifications, 1);
            if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                net_count_add(&c->loop->net->counters.zc_kernel_copied, 1);
            if ((uint64_t)ee->ee_data + 1 > c->zc_seq_done)
                c->zc_seq_done = (uint64_t)ee->ee_data + 1;
        }
    }
    for (uint32_t i = 0; i < c->count; i++) {
        struct net_slot *s = net_slot_at(c, i);
        if (s->notifs_pending > 0 && s->zc_seq_last < c->zc_seq_done)
            s->notifs_pending = 0;
    }
}

static void epoll_try_send(struct net_conn *c)
{
    struct net *n = c->loop->net;
    c->in_send = true;
    while (c->send_armed && !c->closing) {
        struct net_slot *s = net_slot_at(c, c->sent);
        assert(s->state == SLOT_SENDING);
        struct iovec *iov;
        size_t iov_count;
        net_slot_send_window(c, s, &iov, &iov_count);
        if (iov_count > IOV_MAX)
            iov_count = IOV_MAX;
        bool zc = c->zc_enabled && s->req.slice_count > 0 && !s->staged;
        enum net_want tw = NET_WANT_WRITE;
        ssize_t w =
            c->transport->writev(c->tstate, iov, (int)iov_count, zc ? MSG_ZEROCOPY : 0, &tw);
        if (w < 0) {
            if (w == -EAGAIN || w == -EINTR) {
                c->write_wants_read = w == -EAGAIN && tw == NET_WANT_READ;
                break; /* the readiness asked for brings us back */
            }
            if (w == -ENOBUFS && zc) {
                c->zc_enabled = false; /* the optmem limit: go on without zero copy */
                continue;
            }
            if (w != -EPIPE && w != -ECONNRESET) {
                const char *why = c->transport->error ? c->transport->error(c->tstate) : NULL;
                net_log("connection %" PRIu64 " from %s: send failed: %s; closing", c->id, c->peer,
                        why ? why : strerror((int)-w));
            }
            net_conn_close(c, NULL);
            return;
        }
        c->write_wants_read = false;
        if (zc) {
            s->zc_seq_last = c->zc_seq_next++;
            s->notifs_pending = 1;
        }
        net_count_add(&n->counters.bytes_out, (uint64_t)w);
        if (!net_slot_sent_bytes(c, s, (size_t)w))
            continue;
        uint64_t payload = net_slot_slice_bytes(s);
        if (s->staged)
            net_count_add(&n->counters.payload_bytes_copied, payload);
        else if (s->notifs_pending)
            net_count_add(&n->counters.payload_bytes_zero_copy, payload);
        else
            net_count_add(&n->counters.payload_bytes_sendmsg, payload);
        c->send_armed = false;
        net_slot_sent(c, s);
        net_conn_reap_slots(c);
        net_conn_pump_send(c); /* arms the next slot's send (no recursion: in_send) */
    }
    c->in_send = false;
}

static void epoll_conn_event(struct net_conn *c, uint32_t events)
{
    if (events & EPOLLERR)
        epoll_read_errqueue(c);
    if (c->handshaking && !c->closing && (events & (EPOLLIN | EPOLLOUT))) {
        net_conn_handshake(c); /* updates the interest, or goes on to progress */
        return;
    }
    uint32_t read_on = c->read_wants_write ? EPOLLOUT : EPOLLIN;
    uint32_t send_on = c->write_wants_read ? EPOLLIN : EPOLLOUT;
    if ((events & read_on) && !c->closing && !c->handshaking) {
        if (net_rbuf_reserve(c, 4096) != 0) {
            net_conn_close(c, "out of memory for the receive buffer");
        } else {
            enum net_want tw = NET_WANT_READ;
            ssize_t r = c->transport->read(c->tstate, c->rbuf + c->rlen, c->rcap - c->rlen, &tw);
            c->read_wants_write = r == -EAGAIN && tw == NET_WANT_WRITE;
            net_conn_received(c, r);
        }
    }
    if ((events & EPOLLHUP) && !(events & EPOLLIN) && !c->closing)
        net_conn_close(c, NULL);
    if ((events & send_on) && c->send_armed && !c->closing)
        epoll_try_send(c);
    net_conn_progress(c);
}

static void epoll_accept(struct net_loop *l, uint32_t listener)
{
    for (;;) {
        if (l->listen_fd[listener] < 0)
            return;
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd = accept4(l->listen_fd[listener], (struct sockaddr *)&peer, &plen,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                net_log("accept failed: %s", strerror(errno));
            return;
        }
        net_conn_new(l, listener, fd, &peer);
    }
}

static void epoll_run(struct net_loop *l)
{
    struct epoll_event evs[NET_EPOLL_EVENTS];
    for (;;) {
        if (l->stopping && l->conn_count == 0)
            break;
        int64_t t = l->reads_pending ? 0 : net_loop_timeout_ms(l);
        int k = epoll_wait(l->epfd, evs, NET_EPOLL_EVENTS, (int)t);
        if (k < 0 && errno != EINTR) {
            net_log("loop %u: epoll_wait failed: %s", l->index, strerror(errno));
            abort();
        }
        for (int i = 0; i < k; i++) {
            void *p = evs[i].data.ptr;
            /* A connection's events carry the connection; the others, the loop's ops. */
            uint32_t li = 0;
            while (li < l->listen_count && p != &l->accept_op[li])
                li++;
            if (li < l->listen_count) {
                epoll_accept(l, li);
            } else if (p == &l->event_op) {
                uint64_t v;
                ssize_t r = read(l->event_fd, &v, sizeof(v));
                (void)r;
                net_loop_handle_event(l, false);
            } else {
                epoll_conn_event(p, evs[i].events);
            }
        }
        if (l->reads_pending) {
            l->reads_pending = false; /* set again by epoll_update while some are left */
            for (struct net_conn *c = l->conns; c; c = c->next)
                if (!c->closing && !c->handshaking && c->recv_armed && !c->read_wants_write &&
                    !net_conn_reading_paused(c) && c->transport->pending &&
                    c->transport->pending(c->tstate))
                    epoll_conn_event(c, EPOLLIN);
        }
        net_loop_tick(l);
        net_loop_sweep(l);
        if (atomic_load_explicit(&l->net->stopping, memory_order_acquire) && !l->stopping) {
            l->stopping = true;
            l->stop_deadline_ms = net_now_ms() + l->net->drain_ms;
            for (uint32_t j = 0; j < l->listen_count; j++) {
                if (l->listen_fd[j] >= 0)
                    epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->listen_fd[j], NULL);
                l->listen_fd[j] = -1; /* net's: closed by net_free */
            }
            net_loop_handle_event(l, true);
        }
        if (l->stopping) {
            bool late = net_now_ms() > l->stop_deadline_ms;
            for (struct net_conn *c = l->conns, *next; c; c = next) {
                next = c->next;
                if (!c->closing && (c->count == 0 || late))
                    net_conn_close(c, NULL);
            }
            net_loop_sweep(l);
        }
    }
}

/* ---- the backend seam (net_backend.h) ---- */

static bool epoll_usable(void)
{
    return true;
}

/* The loop's set, with the listening socket and the eventfd in it. */
static int epoll_loop_init(struct net_loop *l)
{
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return -errno;
    /* EPOLLEXCLUSIVE: one loop is woken per incoming connection, not all of them. */
    for (uint32_t i = 0; i < l->listen_count; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &l->accept_op[i]};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->listen_fd[i], &ev) != 0)
            return -errno;
    }
    struct epoll_event eev = {.events = EPOLLIN, .data.ptr = &l->event_op};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->event_fd, &eev) != 0)
        return -errno;
    return 0;
}

static void epoll_loop_destroy(struct net_loop *l)
{
    if (l->epfd >= 0)
        close(l->epfd);
    l->epfd = -1;
}

static void epoll_open_conn(struct net_conn *c)
{
    int one = 1;
    if (c->loop->net->opts.zero_copy && c->transport->raw && c->transport->sends_mapped(c->tstate))
        c->zc_enabled = setsockopt(c->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) == 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    c->ep_events = EPOLLIN;
    if (epoll_ctl(c->loop->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        net_log("connection %" PRIu64 ": epoll_ctl: %s; closing", c->id, strerror(errno));
        c->closing = true; /* net_loop_sweep frees it */
        return;
    }
    c->recv_armed = true; /* level-triggered EPOLLIN stands for the armed recv */
}

static void epoll_arm_send(struct net_conn *c, struct net_slot *s)
{
    (void)s; /* the slot at head+sent: epoll_try_send takes it from there */
    c->send_armed = true;
    if (!c->in_send)
        epoll_try_send(c); /* what the socket does not take now waits for EPOLLOUT */
}

static void epoll_close_conn(struct net_conn *c)
{
    epoll_ctl(c->loop->epfd, EPOLL_CTL_DEL, c->fd, NULL);
}

const struct net_backend net_backend_epoll = {
    .name = "epoll",
    .recv_holds_buffer = false,
    .notifs_outlive_close = false,
    .needs_raw_transport = false,
    .usable = epoll_usable,
    .loop_init = epoll_loop_init,
    .loop_run = epoll_run,
    .loop_destroy = epoll_loop_destroy,
    .open_conn = epoll_open_conn,
    .update_conn = epoll_update,
    .arm_send = epoll_arm_send,
    .close_conn = epoll_close_conn,
};
