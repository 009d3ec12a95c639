/*
 * test_kafka_net_transport.c — the network loop's transport seam (tools/kafka/net/net_transport.h),
 * from outside, over net.h alone (no Kafka): a request hook that echoes each frame behind a
 * 16-byte out-of-line slice, driven by a real client socket on 127.0.0.1.
 *   - plain TCP (the default transport) on the backend under test: the slice goes from its
 *     memory (sendmsg), or through the connection's copy buffer with copy_slices (net.c KN8);
 *   - a test transport that is not raw — a one-byte handshake each way, bytes XORed on the
 *     wire, a first read that asks for write readiness (as a TLS read that must write first),
 *     and no sending from mapped memory — plugs in without any change to the state machine:
 *     net_start runs it on epoll (io_uring only runs raw transports: NET_IO_URING is refused
 *     with -ENOTSUP), the handshake completes before a request is read, answers arrive
 *     transformed, and the slice is copied (payload_bytes_copied), never sent from its memory;
 *   - several listeners (Kafka's `listeners`): each has its own port and security protocol,
 *     a connection's net_session says which listener accepted it, and the session hooks run
 *     once per connection, open before its first request and close after its last.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over epoll.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "tools/kafka/net/net.h"
#include "tools/kafka/net/net_transport.h"

static const char slice_bytes[16] = "SLICE-0123456789";

struct slot {
    uint8_t out[4096];
    struct net_slice slice;
};

static int hook_slot_init(void *ctx, struct net_req *req)
{
    (void)ctx;
    req->user = calloc(1, sizeof(struct slot));
    return req->user ? 0 : -ENOMEM;
}

static void hook_slot_free(void *ctx, struct net_req *req)
{
    (void)ctx;
    free(req->user);
}

/* The answer: [size][16 slice bytes][the request frame]. */
static enum net_verdict hook_request(void *ctx, struct net_req *req)
{
    (void)ctx;
    struct slot *s = req->user;
    if (req->frame_len + 4 > sizeof(s->out))
        return NET_CLOSE;
    uint32_t size = (uint32_t)(req->frame_len + sizeof(slice_bytes));
    s->out[0] = (uint8_t)(size >> 24);
    s->out[1] = (uint8_t)(size >> 16);
    s->out[2] = (uint8_t)(size >> 8);
    s->out[3] = (uint8_t)size;
    memcpy(s->out + 4, req->frame, req->frame_len);
    s->slice = (struct net_slice){.at = 4, .len = sizeof(slice_bytes), .ptr = slice_bytes};
    req->out = s->out;
    req->out_len = 4 + req->frame_len;
    req->slices = &s->slice;
    req->slice_count = 1;
    return NET_DONE;
}

static enum net_verdict hook_retry(void *ctx, struct net_req *req, bool expired)
{
    (void)ctx;
    (void)req;
    (void)expired;
    return NET_DONE;
}

static void hook_release(void *ctx, struct net_req *req)
{
    (void)ctx;
    (void)req;
}

static const struct net_hooks hooks = {
    .slot_init = hook_slot_init,
    .slot_free = hook_slot_free,
    .request = hook_request,
    .retry = hook_retry,
    .release = hook_release,
};

/* ---- the XOR transport: not raw, a handshake, an opposite-readiness read ---- */

#define XOR_KEY 0x5a

struct xor_state {
    int fd;
    int hs_step; /* 0: wait for 'H'; 1: send 'h'; 2: done */
    bool read_kicked;
};

static _Atomic int xor_handshakes_done;
static _Atomic int xor_read_wants_write;

static int xor_open(void *ctx, int fd, void **state)
{
    (void)ctx;
    struct xor_state *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->fd = fd;
    *state = x;
    return 0;
}

static void xor_close(void *state)
{
    free(state);
}

static int xor_handshake(void *state, enum net_want *want)
{
    struct xor_state *x = state;
    if (x->hs_step == 0) {
        char c;
        ssize_t r = recv(x->fd, &c, 1, MSG_DONTWAIT);
        if (r < 0 && errno == EAGAIN) {
            *want = NET_WANT_READ;
            return -EAGAIN;
        }
        if (r != 1 || c != 'H')
            return -EPROTO;
        x->hs_step = 1;
    }
    if (x->hs_step == 1) {
        ssize_t w = send(x->fd, "h", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) {
            *want = NET_WANT_WRITE;
            return -EAGAIN;
        }
        if (w != 1)
            return -EPIPE;
        x->hs_step = 2;
        atomic_fetch_add(&xor_handshakes_done, 1);
    }
    return 0;
}

static ssize_t xor_read(void *state, void *buf, size_t len, enum net_want *want)
{
    struct xor_state *x = state;
    if (!x->read_kicked) { /* as a TLS read that must write before it can go on */
        x->read_kicked = true;
        atomic_fetch_add(&xor_read_wants_write, 1);
        *want = NET_WANT_WRITE;
        return -EAGAIN;
    }
    ssize_t r = recv(x->fd, buf, len, MSG_DONTWAIT);
    if (r < 0) {
        *want = NET_WANT_READ;
        return -errno;
    }
    for (ssize_t i = 0; i < r; i++)
        ((uint8_t *)buf)[i] ^= XOR_KEY;
    return r;
}

static ssize_t xor_writev(void *state, const struct iovec *iov, int iov_count, int flags,
                          enum net_want *want)
{
    struct xor_state *x = state;
    assert_int_equal(flags, 0); /* never zero copy: it does not send mapped memory */
    uint8_t tmp[8192];
    size_t k = 0;
    for (int i = 0; i < iov_count && k < sizeof(tmp); i++)
        for (size_t j = 0; j < iov[i].iov_len && k < sizeof(tmp); j++)
            tmp[k++] = ((const uint8_t *)iov[i].iov_base)[j] ^ XOR_KEY;
    ssize_t w = send(x->fd, tmp, k, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
        *want = NET_WANT_WRITE;
        return -errno;
    }
    return w;
}

static bool xor_sends_mapped(const void *state)
{
    (void)state;
    return false;
}

static const struct net_transport xor_transport = {
    .name = "xor",
    .raw = false,
    .open = xor_open,
    .close = xor_close,
    .handshake = xor_handshake,
    .read = xor_read,
    .writev = xor_writev,
    .sends_mapped = xor_sends_mapped,
};

/* ---- the client ---- */

static void options(struct net_options *o)
{
    memset(o, 0, sizeof(*o));
    o->listeners[0] = (struct net_listener){.host = "127.0.0.1", .port = 0};
    o->listener_count = 1;
    o->threads = 1;
    o->connections_max = 16;
    o->request_max_bytes = 1 << 20;
    o->in_flight_max = 4;
    o->idle_max_ms = 60000;
    o->io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
}

static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* recv, again after EINTR: with SO_RCVTIMEO set a blocking recv is not restarted, and the io_uring
 * probe ring net_start makes on this thread (liburing's io_uring_get_probe) can interrupt the
 * next one with its task work (seen under ASan: "Interrupted system call", no signal). */
static ssize_t recv_retry(int fd, void *buf, size_t n)
{
    ssize_t r;
    do
        r = recv(fd, buf, n, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

static void read_all(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv_retry(fd, buf + got, n - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
}

/* Sends pipelined frames "frame-N" (XORed when key != 0) and checks each echo. */
static void exchange(int fd, uint8_t key, int frames)
{
    for (int i = 0; i < frames; i++) {
        char body[32];
        int len = snprintf(body, sizeof(body), "frame-%d", i);
        uint8_t f[64] = {0, 0, 0, (uint8_t)len};
        memcpy(f + 4, body, (size_t)len);
        for (int j = 0; j < 4 + len; j++)
            f[j] ^= key;
        assert_int_equal(send(fd, f, (size_t)(4 + len), MSG_NOSIGNAL), 4 + len);
    }
    for (int i = 0; i < frames; i++) {
        char body[32];
        int len = snprintf(body, sizeof(body), "frame-%d", i);
        uint8_t got[128];
        size_t n = 4 + sizeof(slice_bytes) + (size_t)len;
        read_all(fd, got, n);
        for (size_t j = 0; j < n; j++)
            got[j] ^= key;
        uint32_t size = (uint32_t)got[0] << 24 | got[1] << 16 | got[2] << 8 | got[3];
        assert_int_equal(size, sizeof(slice_bytes) + (size_t)len);
        assert_memory_equal(got + 4, slice_bytes, sizeof(slice_bytes));
        assert_memory_equal(got + 4 + sizeof(slice_bytes), body, (size_t)len);
    }
}

/* A counter once it reaches want (the loop counts a send after the client may have read it),
 * or what it holds after 5 s. */
static uint64_t counter_wait(const _Atomic uint64_t *c, uint64_t want)
{
    for (int i = 0; i < 500 && atomic_load(c) < want; i++)
        usleep(10000);
    return atomic_load(c);
}

static void test_tcp_sends_slices_from_memory(void **state)
{
    (void)state;
    for (int copy = 0; copy <= 1; copy++) {
        struct net_options o;
        options(&o);
        o.copy_slices = copy;
        struct net *n = NULL;
        assert_int_equal(net_start(&o, &hooks, &n), 0);
        assert_string_equal(net_backend_name(n), o.io == NET_IO_SYNC ? "epoll" : "io_uring");
        int fd = dial(net_port(n));
        exchange(fd, 0, 6);
        close(fd);
        const struct net_counters *c = net_counters_get(n);
        uint64_t want = 6 * sizeof(slice_bytes);
        uint64_t copied = counter_wait(&c->payload_bytes_copied, copy ? want : 0);
        uint64_t mapped = counter_wait(&c->payload_bytes_sendmsg, copy ? 0 : want);
        net_stop(n, 1000);
        assert_int_equal(copied, copy ? 6 * sizeof(slice_bytes) : 0);
        assert_int_equal(mapped, copy ? 0 : 6 * sizeof(slice_bytes));
    }
}

static void test_transport_not_raw_plugs_in(void **state)
{
    (void)state;
    struct net_options o;
    options(&o);
    o.listeners[0].transport = &xor_transport;
    struct net *n = NULL;
    if (o.io == NET_IO_URING) {
        /* io_uring does the socket's I/O itself: only raw transports. */
        assert_int_equal(net_start(&o, &hooks, &n), -ENOTSUP);
        o.io = NET_IO_AUTO; /* auto: such a transport runs on epoll */
    }
    assert_int_equal(net_start(&o, &hooks, &n), 0);
    assert_string_equal(net_backend_name(n), "epoll");
    atomic_store(&xor_handshakes_done, 0);
    atomic_store(&xor_read_wants_write, 0);
    int fd = dial(net_port(n));
    assert_int_equal(send(fd, "H", 1, MSG_NOSIGNAL), 1);
    char c = 0;
    assert_int_equal(recv_retry(fd, &c, 1), 1);
    assert_int_equal(c, 'h');
    exchange(fd, XOR_KEY, 5);
    int fd2 = dial(net_port(n));
    assert_int_equal(send(fd2, "X", 1, MSG_NOSIGNAL), 1); /* a bad handshake closes it */
    assert_int_equal(recv_retry(fd2, &c, 1), 0);
    close(fd2);
    close(fd);
    const struct net_counters *nc = net_counters_get(n);
    uint64_t copied = counter_wait(&nc->payload_bytes_copied, 5 * sizeof(slice_bytes));
    uint64_t zc = atomic_load(&nc->payload_bytes_zero_copy);
    uint64_t mapped = atomic_load(&nc->payload_bytes_sendmsg);
    uint64_t protocol = counter_wait(&nc->connections_closed_protocol, 1);
    net_stop(n, 1000);
    assert_int_equal(atomic_load(&xor_handshakes_done), 1);
    assert_true(atomic_load(&xor_read_wants_write) >= 1);
    assert_int_equal(copied, 5 * sizeof(slice_bytes)); /* KN8: copied, never from memory */
    assert_int_equal(zc, 0);
    assert_int_equal(mapped, 0);
    assert_int_equal(protocol, 1);
}

/* ---- listeners ---- */

static _Atomic int sessions_open, sessions_closed;

static int tag_session_open(void *ctx, struct net_session *ns)
{
    (void)ctx;
    ns->user = (void *)(uintptr_t)(0x100 + ns->listener); /* seen by the request hook */
    atomic_fetch_add(&sessions_open, 1);
    return 0;
}

static void tag_session_close(void *ctx, struct net_session *ns)
{
    (void)ctx;
    assert_int_equal((uintptr_t)ns->user, 0x100 + ns->listener);
    atomic_fetch_add(&sessions_closed, 1);
}

/* The answer: [size] 'L', the listener, the security protocol, whether the session's user
 * pointer is the one its open set, and whether the peer's host was filled in. */
static enum net_verdict tag_request(void *ctx, struct net_req *req)
{
    (void)ctx;
    struct slot *s = req->user;
    const struct net_session *ns = req->session;
    s->out[0] = s->out[1] = s->out[2] = 0;
    s->out[3] = 5;
    s->out[4] = 'L';
    s->out[5] = (uint8_t)('0' + ns->listener);
    s->out[6] = (uint8_t)('0' + ns->security);
    s->out[7] = (uintptr_t)ns->user == 0x100 + ns->listener ? 'u' : '-';
    s->out[8] = strcmp(ns->peer_host, "127.0.0.1") == 0 ? 'h' : '-';
    req->out = s->out;
    req->out_len = 9;
    req->slices = NULL;
    req->slice_count = 0;
    return NET_DONE;
}

static void test_listeners_tag_sessions(void **state)
{
    (void)state;
    struct net_options o;
    options(&o);
    o.listeners[1] =
        (struct net_listener){.host = "127.0.0.1", .port = 0, .security = NET_SEC_SASL_PLAINTEXT};
    o.listener_count = 2;
    struct net_hooks h = hooks;
    h.request = tag_request;
    h.session_open = tag_session_open;
    h.session_close = tag_session_close;
    atomic_store(&sessions_open, 0);
    atomic_store(&sessions_closed, 0);
    struct net *n = NULL;
    assert_int_equal(net_start(&o, &h, &n), 0);
    assert_int_equal(net_port(n), net_listener_port(n, 0));
    assert_true(net_listener_port(n, 0) != 0 && net_listener_port(n, 1) != 0);
    assert_true(net_listener_port(n, 0) != net_listener_port(n, 1));
    assert_int_equal(net_listener_port(n, 2), 0);
    for (int round = 0; round < 2; round++) {
        for (uint32_t li = 0; li < 2; li++) {
            int fd = dial(net_listener_port(n, li));
            uint8_t f[5] = {0, 0, 0, 1, 'x'};
            assert_int_equal(send(fd, f, sizeof(f), MSG_NOSIGNAL), (ssize_t)sizeof(f));
            uint8_t got[9];
            read_all(fd, got, sizeof(got));
            char want[6] = {'L',
                            (char)('0' + li),
                            (char)('0' + (li ? NET_SEC_SASL_PLAINTEXT : NET_SEC_PLAINTEXT)),
                            'u',
                            'h',
                            0};
            assert_memory_equal(got + 4, want, 5);
            close(fd);
        }
    }
    net_stop(n, 1000);
    assert_int_equal(atomic_load(&sessions_open), 4);
    assert_int_equal(atomic_load(&sessions_closed), 4);
}

static void test_listener_options_checked(void **state)
{
    (void)state;
    struct net_options o;
    options(&o);
    struct net *n = NULL;
    o.listener_count = 0;
    assert_int_equal(net_start(&o, &hooks, &n), -EINVAL);
    o.listener_count = NET_LISTENERS_MAX + 1;
    assert_int_equal(net_start(&o, &hooks, &n), -EINVAL);
    o.listener_count = 1;
    o.listeners[0].security = (enum net_security)7;
    assert_int_equal(net_start(&o, &hooks, &n), -EINVAL);
    enum net_security sec;
    assert_true(net_security_parse("SASL_SSL", &sec) && sec == NET_SEC_SASL_SSL);
    assert_false(net_security_parse("sasl_ssl", &sec));
    assert_string_equal(net_security_name(NET_SEC_SSL), "SSL");
    assert_null(net_security_name((enum net_security)9));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_sends_slices_from_memory),
        cmocka_unit_test(test_transport_not_raw_plugs_in),
        cmocka_unit_test(test_listeners_tag_sessions),
        cmocka_unit_test(test_listener_options_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
