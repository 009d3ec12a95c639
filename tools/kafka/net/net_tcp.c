/*
 * net_tcp.c — the plain-TCP transport (net_transport.h): bytes go to and from the socket as
 * they are, so it is raw (io_uring does its I/O itself), it has no handshake, its reads and
 * writes only ever wait for their own readiness, and slices go from their mapping to the socket
 * without a user-space copy (SEND_ZC / MSG_ZEROCOPY or a plain sendmsg). It keeps no state and
 * never closes the socket.
 */
#include "tools/kafka/net/net_transport.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/socket.h>

static int tcp_open(void *ctx, int fd, void **state)
{
    (void)ctx;
    /* The socket is all the state: its descriptor, carried in the pointer. */
    *state = (void *)(intptr_t)fd;
    return 0;
}

static void tcp_close(void *state)
{
    (void)state;
}

static int tcp_handshake(void *state, enum net_want *want)
{
    (void)state;
    *want = NET_WANT_NONE;
    return 0;
}

static ssize_t tcp_read(void *state, void *buf, size_t len, enum net_want *want)
{
    ssize_t r = recv((int)(intptr_t)state, buf, len, MSG_DONTWAIT);
    if (r >= 0)
        return r;
    *want = NET_WANT_READ;
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static ssize_t tcp_writev(void *state, const struct iovec *iov, int iov_count, int flags,
                          enum net_want *want)
{
    struct msghdr msg = {.msg_iov = (struct iovec *)iov,
                         .msg_iovlen = (size_t)(iov_count > IOV_MAX ? IOV_MAX : iov_count)};
    ssize_t w = sendmsg((int)(intptr_t)state, &msg, MSG_NOSIGNAL | MSG_DONTWAIT | flags);
    if (w >= 0)
        return w;
    *want = NET_WANT_WRITE;
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static bool tcp_sends_mapped(const void *state)
{
    (void)state;
    return true;
}

const struct net_transport net_transport_tcp = {
    .name = "tcp",
    .raw = true,
    .open = tcp_open,
    .close = tcp_close,
    .handshake = tcp_handshake,
    .read = tcp_read,
    .writev = tcp_writev,
    .sends_mapped = tcp_sends_mapped,
};
