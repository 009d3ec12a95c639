/*
 * kclient.c — one blocking request/response round trip over plain TCP (kclient.h): the request
 * header v1/v2 written here (client id "ringtail"), the body by the caller's encoder, the
 * response header v0/v1 skipped after checking the correlation id (KC1).
 */
#include "tools/kafka/cluster/kclient.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    int64_t left = deadline - now_ms();
    if (left <= 0)
        return -ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = ev};
    int rc = poll(&p, 1, (int)left);
    if (rc < 0)
        return errno == EINTR ? 0 : -errno;
    return rc == 0 ? -ETIMEDOUT : 0;
}

static int dial(const char *host, uint16_t port, int64_t deadline)
{
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, ps, &hints, &ai) != 0 || !ai)
        return -EHOSTUNREACH;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return -errno;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc != 0 && errno != EINPROGRESS) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (rc != 0) {
        rc = wait_fd(fd, POLLOUT, deadline);
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr)
            rc = -soerr;
        if (rc) {
            close(fd);
            return rc;
        }
    }
    return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n, int64_t deadline)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        int rc = wait_fd(fd, POLLOUT, deadline);
        if (rc)
            return rc;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n, int64_t deadline)
{
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0)
            return -EPROTO; /* closed before the whole frame */
        if (errno != EAGAIN && errno != EINTR)
            return -errno;
        int rc = wait_fd(fd, POLLIN, deadline);
        if (rc)
            return rc;
    }
    return 0;
}

void kclient_conn_close(struct kclient_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int kclient_conn_call(struct kclient_conn *c, const char *host, uint16_t port, int timeout_ms,
                      int16_t api_key, int16_t version, kclient_encode_fn encode, const void *req,
                      uint8_t **frame, size_t *frame_len, size_t *body_at)
{
    *frame = NULL;
    int64_t deadline = now_ms() + timeout_ms;
    static _Atomic int32_t corr_next = 1;
    int32_t corr = corr_next++;
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    size_t at = kafka_frame_begin(&w);
    kp_write_i16(&w, api_key);
    kp_write_i16(&w, version);
    kp_write_i32(&w, corr);
    kp_write_nullable_string(&w, kp_str_of("ringtail"));
    if (kafka_request_header_version(api_key, version) == 2)
        kp_write_uvarint(&w, 0); /* no tagged fields */
    int rc = encode(&w, version, req);
    if (rc == 0)
        rc = kafka_frame_end(&w, at);
    if (rc == 0)
        rc = w.err;
    if (rc) {
        kp_writer_free(&w);
        return rc;
    }
    if (c->fd >= 0 && (c->port != port || strcmp(c->host, host) != 0))
        kclient_conn_close(c);
    if (c->fd < 0) {
        int fd = dial(host, port, deadline);
        if (fd < 0) {
            kp_writer_free(&w);
            return fd;
        }
        c->fd = fd;
        snprintf(c->host, sizeof c->host, "%s", host);
        c->port = port;
    }
    int fd = c->fd;
    rc = send_all(fd, w.buf, w.len, deadline);
    kp_writer_free(&w);
    uint8_t sz[4];
    if (rc == 0)
        rc = recv_all(fd, sz, 4, deadline);
    uint32_t len = rc == 0 ? kp_load_be32(sz) : 0;
    if (rc == 0 && (len < 4 || len > KCLIENT_FRAME_MAX))
        rc = -EPROTO; /* KC1 */
    uint8_t *buf = rc == 0 ? malloc(len) : NULL;
    if (rc == 0 && !buf)
        rc = -ENOMEM;
    if (rc == 0)
        rc = recv_all(fd, buf, len, deadline);
    if (rc == 0 && (int32_t)kp_load_be32(buf) != corr)
        rc = -EPROTO;
    size_t hdr = 4;
    if (rc == 0 && kafka_response_header_version(api_key, version) == 1) {
        struct kp_reader r;
        kp_reader_init(&r, buf + 4, len - 4);
        kp_skip_tags(&r);
        if (r.err)
            rc = -EPROTO;
        hdr = (size_t)(r.p - buf);
    }
    if (rc) {
        free(buf);
        kclient_conn_close(c); /* the stream's position is unknown now */
        return rc;
    }
    *frame = buf;
    *frame_len = len;
    *body_at = hdr;
    return 0;
}

int kclient_call(const char *host, uint16_t port, int timeout_ms, int16_t api_key, int16_t version,
                 kclient_encode_fn encode, const void *req, uint8_t **frame, size_t *frame_len,
                 size_t *body_at)
{
    struct kclient_conn c = KCLIENT_CONN_INIT;
    int rc = kclient_conn_call(&c, host, port, timeout_ms, api_key, version, encode, req, frame,
                               frame_len, body_at);
    kclient_conn_close(&c);
    return rc;
}
