/*
 * test_kafka_net_tls.c — the TLS transport (tools/kafka/net/net_tls.c) under the network loop,
 * over net.h alone (no Kafka), with an OpenSSL client on 127.0.0.1 and certificates made by
 * tests/helpers/tls_certs.sh with the openssl CLI:
 *   - TLS 1.2 and 1.3: small pipelined frames and a frame of several records are echoed behind
 *     a 256 KiB out-of-line slice, which is copied through the bounded buffer (KN8) unless
 *     kernel TLS runs (NT4; the counters say which, as the probe does);
 *   - a verified client certificate becomes the session's principal, User:<subject DN in RFC
 *     2253 form>, before the first request (session_ready); a missing one under
 *     `required` and one from a wrong CA are refused;
 *   - a plaintext client, a garbage ClientHello and a client that never finishes its handshake
 *     (KN9) close only their own connection, counted as failed handshakes;
 *   - reload: new connections get the new certificate, an open one keeps working; a reload
 *     from a bad file fails and keeps the old context;
 *   - the kernel-TLS decision (net_tls_sends_mapped_decide) and the option errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "helpers/test_util.h"
#include "tools/kafka/net/net.h"
#include "tools/kafka/net/net_tls.h"

#define BIG_SLICE (256u << 10)
#define BIG_FRAME (200u << 10)

static char *certs; /* the group's certificate directory */
static uint8_t big_slice[BIG_SLICE];

static char *cert(const char *name)
{
    return tu_path("%s/%s", certs, name);
}

/* ---- the echo server: [size][slice][the frame] ---- */

static int hook_slot_init(void *ctx, struct net_req *req)
{
    (void)ctx;
    req->user = calloc(1, sizeof(struct net_slice));
    return req->user ? 0 : -ENOMEM;
}

static void hook_slot_free(void *ctx, struct net_req *req)
{
    (void)ctx;
    free(req->user);
}

/* Frames starting with 'B' get the big slice, the others a 16-byte one. */
static enum net_verdict hook_request(void *ctx, struct net_req *req)
{
    (void)ctx;
    struct net_slice *sl = req->user;
    uint32_t slen = req->frame_len > 0 && req->frame[0] == 'B' ? BIG_SLICE : 16;
    uint8_t *out = malloc(4 + req->frame_len);
    if (!out)
        return NET_CLOSE;
    uint32_t size = (uint32_t)(req->frame_len + slen);
    out[0] = (uint8_t)(size >> 24);
    out[1] = (uint8_t)(size >> 16);
    out[2] = (uint8_t)(size >> 8);
    out[3] = (uint8_t)size;
    memcpy(out + 4, req->frame, req->frame_len);
    *sl = (struct net_slice){.at = 4, .len = slen, .ptr = big_slice};
    req->out = out;
    req->out_len = 4 + req->frame_len;
    req->slices = sl;
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
    free((void *)req->out);
    req->out = NULL;
}

static char last_principal[NET_PRINCIPAL_MAX];
static _Atomic int sessions_ready;

static void hook_ready(void *ctx, struct net_session *ns)
{
    (void)ctx;
    snprintf(last_principal, sizeof(last_principal), "%s", ns->peer_principal);
    atomic_fetch_add(&sessions_ready, 1);
}

static const struct net_hooks hooks = {
    .slot_init = hook_slot_init,
    .slot_free = hook_slot_free,
    .request = hook_request,
    .retry = hook_retry,
    .release = hook_release,
    .session_ready = hook_ready,
};

static struct net_tls *tls_make(enum net_tls_client_auth auth, const char *cert_name,
                                const char *key_name)
{
    char *c = cert(cert_name), *k = cert(key_name), *ca = cert("ca.pem");
    struct net_tls_options to = {.cert_pem = c, .key_pem = k, .ca_pem = ca, .client_auth = auth};
    struct net_tls *t = NULL;
    char why[256] = "";
    int rc = net_tls_create(&to, &t, why, sizeof(why));
    if (rc)
        fprintf(stderr, "net_tls_create: %s\n", why);
    assert_int_equal(rc, 0);
    free(c);
    free(k);
    free(ca);
    return t;
}

static struct net *start(struct net_tls *t, int64_t handshake_max_ms)
{
    struct net_options o;
    memset(&o, 0, sizeof(o));
    o.listeners[0] = (struct net_listener){
        .host = "127.0.0.1", .security = NET_SEC_SSL, .transport = net_tls_transport(t)};
    o.listener_count = 1;
    o.threads = 1;
    o.connections_max = 16;
    o.request_max_bytes = 1 << 20;
    o.in_flight_max = 4;
    o.idle_max_ms = 60000;
    o.handshake_max_ms = handshake_max_ms;
    o.io = NET_IO_AUTO; /* TLS is not raw: epoll */
    struct net *n = NULL;
    assert_int_equal(net_start(&o, &hooks, &n), 0);
    assert_string_equal(net_backend_name(n), "epoll");
    return n;
}

static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* A blocking call interrupted (EINTR: the test process stopped and continued under load makes
 * timed socket calls return it) answers WANT_READ/WRITE: call again. */
static bool ssl_again(SSL *ssl, int r)
{
    int e = SSL_get_error(ssl, r);
    return (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_SYSCALL) &&
           errno == EINTR; /* not EAGAIN: the receive timeout fails the test */
}

/* A TLS client (blocking) that trusts `ca`; with a client certificate when cert_name is set.
 * NULL when the handshake fails. */
static SSL *tls_dial(uint16_t port, int version, const char *ca_name, const char *cert_name,
                     const char *key_name, int *fd_out)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    if (version) {
        SSL_CTX_set_min_proto_version(ctx, version);
        SSL_CTX_set_max_proto_version(ctx, version);
    }
    char *ca = cert(ca_name);
    assert_int_equal(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
    free(ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (cert_name) {
        char *c = cert(cert_name), *k = cert(key_name);
        assert_int_equal(SSL_CTX_use_certificate_file(ctx, c, SSL_FILETYPE_PEM), 1);
        assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, k, SSL_FILETYPE_PEM), 1);
        free(c);
        free(k);
    }
    int fd = dial(port);
    SSL *ssl = SSL_new(ctx);
    SSL_CTX_free(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set1_host(ssl, "localhost");
    int r;
    while ((r = SSL_connect(ssl)) != 1 && ssl_again(ssl, r))
        ;
    if (r != 1) {
        char e[256] = "";
        ERR_error_string_n(ERR_peek_error(), e, sizeof(e));
        fprintf(stderr, "test client: TLS handshake failed: %s (errno %d, verify %ld)\n", e, errno,
                SSL_get_verify_result(ssl));
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    *fd_out = fd;
    return ssl;
}

static void tls_bye(SSL *ssl, int fd)
{
    SSL_free(ssl);
    close(fd);
}

static void ssl_write_all(SSL *ssl, const uint8_t *buf, size_t n)
{
    size_t put = 0;
    while (put < n) {
        size_t w = 0;
        int r = SSL_write_ex(ssl, buf + put, n - put, &w);
        if (r != 1 && ssl_again(ssl, r))
            continue;
        assert_int_equal(r, 1);
        put += w;
    }
}

/* True when all n bytes arrived; false at a close or an error. */
static bool ssl_read_all(SSL *ssl, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t k = 0;
        int r = SSL_read_ex(ssl, buf + got, n - got, &k);
        if (r != 1 && ssl_again(ssl, r))
            continue;
        if (r != 1) {
            ERR_clear_error();
            return false;
        }
        got += k;
    }
    return true;
}

/* One frame of `len` bytes (its first byte `tag`) and its echo checked. */
static void echo(SSL *ssl, char tag, size_t len)
{
    uint8_t *f = malloc(4 + len);
    assert_non_null(f);
    f[0] = (uint8_t)(len >> 24);
    f[1] = (uint8_t)(len >> 16);
    f[2] = (uint8_t)(len >> 8);
    f[3] = (uint8_t)len;
    for (size_t i = 0; i < len; i++)
        f[4 + i] = (uint8_t)(i * 7 + 3);
    f[4] = (uint8_t)tag;
    ssl_write_all(ssl, f, 4 + len);
    size_t slen = tag == 'B' ? BIG_SLICE : 16;
    uint8_t *got = malloc(4 + slen + len);
    assert_non_null(got);
    assert_true(ssl_read_all(ssl, got, 4 + slen + len));
    uint32_t size =
        (uint32_t)got[0] << 24 | (uint32_t)got[1] << 16 | (uint32_t)got[2] << 8 | got[3];
    assert_int_equal(size, slen + len);
    assert_memory_equal(got + 4, big_slice, slen);
    assert_memory_equal(got + 4 + slen, f + 4, len);
    free(got);
    free(f);
}

static uint64_t counter_wait(const _Atomic uint64_t *c, uint64_t want)
{
    for (int i = 0; i < 500 && atomic_load(c) < want; i++)
        usleep(10000);
    return atomic_load(c);
}

/* True when the server closed a raw socket (EOF or a reset) within the receive timeout. */
static bool closed_by_server(int fd)
{
    char buf[512];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return true;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return false; /* the timeout */
    }
}

static int group_setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* the client writes to connections the server refused */
    for (size_t i = 0; i < BIG_SLICE; i++)
        big_slice[i] = (uint8_t)(i * 13 + i / 251);
    certs = tu_mkdtemp();
    char here[4096];
    snprintf(here, sizeof(here), "%s", __FILE__);
    return tu_system("bash '%s/helpers/tls_certs.sh' '%s'", dirname(here), certs) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_rmdir_free(certs);
    return 0;
}

/* ---- tests ---- */

static void test_echo_tls12_and_tls13(void **state)
{
    (void)state;
    char why[200];
    bool ktls = net_tls_ktls_probe(why, sizeof(why));
    int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
    for (int v = 0; v < 2; v++) {
        struct net_tls *t = tls_make(NET_TLS_AUTH_NONE, "server.pem", "server.key");
        struct net *n = start(t, 0);
        int fd = -1;
        SSL *ssl = tls_dial(net_port(n), versions[v], "ca.pem", NULL, NULL, &fd);
        assert_non_null(ssl);
        assert_int_equal(SSL_version(ssl), versions[v]);
        for (int i = 0; i < 3; i++)
            echo(ssl, 's', 10 + (size_t)i);
        echo(ssl, 'B', BIG_FRAME); /* many records each way; reads of records in part */
        echo(ssl, 's', 5);
        tls_bye(ssl, fd);
        const struct net_counters *c = net_counters_get(n);
        uint64_t payload = 4 * 16 + BIG_SLICE;
        uint64_t copied = counter_wait(&c->payload_bytes_copied, ktls ? 0 : payload);
        uint64_t mapped = atomic_load(&c->handshakes_mapped);
        uint64_t copying = atomic_load(&c->handshakes_copying);
        uint64_t sendmsg = atomic_load(&c->payload_bytes_sendmsg);
        uint64_t zc = atomic_load(&c->payload_bytes_zero_copy);
        net_stop(n, 1000);
        net_tls_free(t);
        assert_int_equal(mapped + copying, 1);
        assert_int_equal(zc, 0);
        if (!ktls) { /* this machine's path: no tls module, every slice copied (KN8) */
            assert_int_equal(copying, 1);
            assert_int_equal(copied, payload);
            assert_int_equal(sendmsg, 0);
        } else { /* NT4: the kernel encrypts; slices go from memory when the cipher allowed */
            assert_int_equal(copied + sendmsg, payload);
            assert_int_equal(sendmsg > 0, mapped == 1);
        }
    }
}

/* Frames of many sizes written in one stream by a thread while the test reads the answers: TLS
 * records then straddle frames, and the server's reads take records in part whenever its
 * receive buffer has less room than a record (the rest waits inside OpenSSL, where the socket's
 * readiness never shows it: net_transport.h `pending`). */
#define MIX_FRAMES 40
static size_t mix_len(int i)
{
    return 1 + ((size_t)i * 7919u + (size_t)i * (size_t)i * 131u) % 70000u;
}

static void test_records_straddle_frames(void **state)
{
    (void)state;
    struct net_tls *t = tls_make(NET_TLS_AUTH_NONE, "server.pem", "server.key");
    struct net *n = start(t, 0);
    int fd = -1;
    SSL *ssl = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fd);
    assert_non_null(ssl);
    size_t total = 0, want = 0;
    for (int i = 0; i < MIX_FRAMES; i++) {
        total += 4 + mix_len(i);
        want += 4 + 16 + mix_len(i);
    }
    uint8_t *out = malloc(total), *in = malloc(want), *p = out;
    assert_true(out && in);
    for (int i = 0; i < MIX_FRAMES; i++) {
        size_t len = mix_len(i);
        p[0] = (uint8_t)(len >> 24);
        p[1] = (uint8_t)(len >> 16);
        p[2] = (uint8_t)(len >> 8);
        p[3] = (uint8_t)len;
        for (size_t j = 0; j < len; j++)
            p[4 + j] = (uint8_t)(j + (size_t)i);
        p[4] = 's';
        p += 4 + len;
    }
    /* One thread, the socket non-blocking: write what it takes, read what came (an SSL is
     * not for two threads at once). */
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    size_t put = 0, got = 0, wlen = 0;
    int64_t until = net_now_ms() + 20000;
    while (got < want && net_now_ms() < until) {
        if (put < total) {
            size_t w = 0;
            if (!wlen)
                wlen = total - put > 50000 ? 50000 : total - put; /* the same on a retry */
            if (SSL_write_ex(ssl, out + put, wlen, &w) == 1) {
                put += w;
                wlen = 0;
            }
        }
        size_t r = 0;
        if (SSL_read_ex(ssl, in + got, want - got, &r) == 1)
            got += r;
        ERR_clear_error();
        struct pollfd pf = {.fd = fd, .events = (short)(POLLIN | (put < total ? POLLOUT : 0))};
        poll(&pf, 1, 50);
    }
    assert_int_equal(got, want);
    const uint8_t *q = in;
    for (int i = 0; i < MIX_FRAMES; i++) {
        size_t len = mix_len(i);
        uint32_t size = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        assert_int_equal(size, 16 + len);
        assert_int_equal(q[4 + 16], 's');
        for (size_t j = 1; j < len; j++)
            assert_int_equal(q[4 + 16 + j], (uint8_t)(j + (size_t)i));
        q += 4 + 16 + len;
    }
    free(out);
    free(in);
    tls_bye(ssl, fd);
    net_stop(n, 1000);
    net_tls_free(t);
}

/* Frames whose last bytes the server took off the socket inside a record it read in part (its
 * receive buffer had less room than the record): nothing more comes from the client, which
 * waits for the answers, so only the transport's `pending` gets them read (net_transport.h).
 * The layout (TLS records of 16 KiB; the receive buffer of 64 KiB, NET_RBUF_INITIAL_BYTES): a
 * first write leaves frame A unfinished, so the buffer is compacted to an offset that is not a
 * multiple of a record; the second write (A's rest, B, C) ends exactly at a record's end, the
 * record that the buffer takes only in part. */
static void test_record_read_in_part_is_finished(void **state)
{
    (void)state;
    struct net_tls *t = tls_make(NET_TLS_AUTH_NONE, "server.pem", "server.key");
    struct net *n = start(t, 0);
    static const size_t b_sizes[] = {50000, 56000, 60000, 64000};
    for (size_t k = 0; k < sizeof(b_sizes) / sizeof(b_sizes[0]); k++) {
        int fd = -1;
        SSL *ssl = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fd);
        assert_non_null(ssl);
        size_t a = 19996, bs = b_sizes[k];
        size_t second = 5 * 16384; /* A's rest, B and C: five whole records */
        size_t cs = second - (10000 + 4 + bs) - 4;
        size_t lens[3] = {a, bs, cs}, total = 10000 + second;
        uint8_t *f = calloc(1, total), *p = f;
        assert_non_null(f);
        for (int i = 0; i < 3; i++) {
            p[1] = (uint8_t)(lens[i] >> 16);
            p[2] = (uint8_t)(lens[i] >> 8);
            p[3] = (uint8_t)lens[i];
            p[4] = 's';
            p[4 + lens[i] - 1] = (uint8_t)(0xA0 + i);
            p += 4 + lens[i];
        }
        ssl_write_all(ssl, f, 10000);
        usleep(20000); /* read alone: A is unfinished */
        ssl_write_all(ssl, f + 10000, total - 10000);
        uint8_t *got = malloc(4 + 16 + 70000);
        assert_non_null(got);
        for (int i = 0; i < 3; i++) {
            assert_true(ssl_read_all(ssl, got, 4 + 16 + lens[i]));
            assert_int_equal(got[4 + 16 + lens[i] - 1], 0xA0 + i);
        }
        free(got);
        free(f);
        tls_bye(ssl, fd);
    }
    net_stop(n, 1000);
    net_tls_free(t);
}

static void test_client_certificate_principal(void **state)
{
    (void)state;
    struct net_tls *t = tls_make(NET_TLS_AUTH_REQUIRED, "server.pem", "server.key");
    struct net *n = start(t, 0);
    const struct net_counters *c = net_counters_get(n);
    atomic_store(&sessions_ready, 0);
    int fd = -1;
    SSL *ssl = tls_dial(net_port(n), 0, "ca.pem", "client.pem", "client.key", &fd);
    assert_non_null(ssl);
    echo(ssl, 's', 8); /* answered: session_ready ran before the first request */
    assert_int_equal(atomic_load(&sessions_ready), 1);
    assert_string_equal(last_principal, "User:CN=alice,OU=test,O=ringtail");
    /* Without a certificate under `required`, and with one from a CA nobody trusts: refused
     * (TLS 1.3 lets the client finish first; its first read then fails). */
    const char *who[][2] = {{NULL, NULL}, {"bad.pem", "bad.key"}};
    for (int i = 0; i < 2; i++) {
        int fd2 = -1;
        SSL *s2 = tls_dial(net_port(n), 0, "ca.pem", who[i][0], who[i][1], &fd2);
        if (s2) {
            uint8_t f[5] = {0, 0, 0, 1, 's'}, got[32];
            size_t w = 0;
            (void)SSL_write_ex(s2, f, sizeof(f), &w);
            assert_false(ssl_read_all(s2, got, 21));
            tls_bye(s2, fd2);
        }
    }
    assert_int_equal(counter_wait(&c->handshakes_failed, 2), 2);
    echo(ssl, 's', 9); /* the good one is untouched */
    tls_bye(ssl, fd);
    net_stop(n, 1000);
    net_tls_free(t);
    assert_int_equal(atomic_load(&sessions_ready), 1);
}

static void test_bad_clients_close_only_themselves(void **state)
{
    (void)state;
    struct net_tls *t = tls_make(NET_TLS_AUTH_NONE, "server.pem", "server.key");
    struct net *n = start(t, 300);
    const struct net_counters *c = net_counters_get(n);
    int fd = -1;
    SSL *ssl = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fd);
    assert_non_null(ssl);
    echo(ssl, 's', 4);
    /* A plaintext Kafka client (an ApiVersions request) on the TLS port. */
    int p = dial(net_port(n));
    static const uint8_t api_versions[] = {0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0};
    assert_int_equal(send(p, api_versions, sizeof(api_versions), MSG_NOSIGNAL),
                     (ssize_t)sizeof(api_versions));
    assert_true(closed_by_server(p));
    close(p);
    /* A record header that says handshake, then garbage. */
    int g = dial(net_port(n));
    uint8_t junk[300] = {0x16, 0x03, 0x01, 0x01, 0x20};
    for (size_t i = 5; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(i * 37);
    assert_int_equal(send(g, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
    assert_true(closed_by_server(g));
    close(g);
    /* KN9: a client that never finishes its handshake (half a ClientHello, then nothing). */
    int slow = dial(net_port(n));
    assert_int_equal(send(slow, junk, 3, MSG_NOSIGNAL), 3);
    assert_true(closed_by_server(slow));
    close(slow);
    assert_int_equal(counter_wait(&c->handshakes_failed, 3), 3);
    echo(ssl, 's', 6); /* the TLS client is untouched */
    echo(ssl, 'B', 1000);
    tls_bye(ssl, fd);
    net_stop(n, 1000);
    net_tls_free(t);
}

static char *peer_cn(SSL *ssl)
{
    X509 *x = SSL_get1_peer_certificate(ssl);
    assert_non_null(x);
    char cn[64] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
    X509_free(x);
    return strdup(cn);
}

static void test_reload_new_connections_only(void **state)
{
    (void)state;
    /* The files the server reads, copied so the test can change them under it. */
    char *dir = tu_mkdtemp();
    assert_int_equal(tu_system("cp '%s/server.pem' '%s/server.key' '%s/'", certs, certs, dir), 0);
    char *c = tu_path("%s/server.pem", dir), *k = tu_path("%s/server.key", dir);
    struct net_tls_options to = {.cert_pem = c, .key_pem = k};
    struct net_tls *t = NULL;
    char why[256] = "";
    assert_int_equal(net_tls_create(&to, &t, why, sizeof(why)), 0);
    struct net *n = start(t, 0);
    int fa = -1, fb = -1, fc = -1;
    SSL *a = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fa);
    assert_non_null(a);
    char *cn = peer_cn(a);
    assert_string_equal(cn, "localhost");
    free(cn);
    assert_int_equal(tu_system("cp '%s/server2.pem' '%s/server.pem' && cp '%s/server2.key' "
                               "'%s/server.key'",
                               certs, dir, certs, dir),
                     0);
    assert_int_equal(net_tls_reload(t, why, sizeof(why)), 0);
    SSL *b = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fb);
    assert_non_null(b);
    cn = peer_cn(b);
    assert_string_equal(cn, "reloaded");
    free(cn);
    echo(a, 's', 7); /* the connection made before the reload goes on */
    echo(b, 's', 7);
    /* A reload from a broken file fails, says which file, and keeps the context. */
    assert_int_equal(tu_system("echo broken > '%s/server.pem'", dir), 0);
    why[0] = '\0';
    assert_int_not_equal(net_tls_reload(t, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "server.pem"));
    SSL *cc = tls_dial(net_port(n), 0, "ca.pem", NULL, NULL, &fc);
    assert_non_null(cc);
    cn = peer_cn(cc);
    assert_string_equal(cn, "reloaded");
    free(cn);
    echo(cc, 's', 3);
    tls_bye(a, fa);
    tls_bye(b, fb);
    tls_bye(cc, fc);
    net_stop(n, 1000);
    net_tls_free(t);
    free(c);
    free(k);
    tu_rmdir_free(dir);
}

static void test_ktls_decision(void **state)
{
    (void)state;
    /* NT4: mapped only when every condition holds. */
    assert_true(net_tls_sends_mapped_decide(true, true, true, 0));
    assert_false(net_tls_sends_mapped_decide(false, true, true, 0));  /* OpenSSL without KTLS */
    assert_false(net_tls_sends_mapped_decide(true, false, true, 0));  /* handshake running */
    assert_false(net_tls_sends_mapped_decide(true, true, false, 0));  /* kernel said no */
    assert_false(net_tls_sends_mapped_decide(true, true, true, 100)); /* a write to finish */
    /* The probe answers with its reason either way, and says what it saw. */
    char why[200] = "";
    bool ktls = net_tls_ktls_probe(why, sizeof(why));
    assert_true(strlen(why) > 0);
    if (!ktls)
        assert_true(strstr(why, "tls module") || strstr(why, "without KTLS") ||
                    strstr(why, "cannot probe"));
}

static void test_option_errors(void **state)
{
    (void)state;
    enum net_tls_client_auth a;
    assert_true(net_tls_client_auth_parse("required", &a) && a == NET_TLS_AUTH_REQUIRED);
    assert_true(net_tls_client_auth_parse("requested", &a) && a == NET_TLS_AUTH_REQUESTED);
    assert_true(net_tls_client_auth_parse("none", &a) && a == NET_TLS_AUTH_NONE);
    assert_false(net_tls_client_auth_parse("REQUIRED", &a));
    char *c = cert("server.pem"), *k = cert("server.key"), *missing = cert("missing.pem");
    struct net_tls *t = NULL;
    char why[256] = "";
    struct net_tls_options o = {.cert_pem = missing, .key_pem = k};
    assert_int_not_equal(net_tls_create(&o, &t, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "missing.pem"));
    o = (struct net_tls_options){.cert_pem = c, .key_pem = k, .client_auth = NET_TLS_AUTH_REQUIRED};
    assert_int_equal(net_tls_create(&o, &t, why, sizeof(why)), -EINVAL); /* no CA */
    char *wrongkey = cert("client.key");
    o = (struct net_tls_options){.cert_pem = c, .key_pem = wrongkey};
    assert_int_not_equal(net_tls_create(&o, &t, why, sizeof(why)), 0); /* key of another cert */
    assert_null(t);
    free(c);
    free(k);
    free(missing);
    free(wrongkey);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_tls12_and_tls13),
        cmocka_unit_test(test_records_straddle_frames),
        cmocka_unit_test(test_record_read_in_part_is_finished),
        cmocka_unit_test(test_client_certificate_principal),
        cmocka_unit_test(test_bad_clients_close_only_themselves),
        cmocka_unit_test(test_reload_new_connections_only),
        cmocka_unit_test(test_ktls_decision),
        cmocka_unit_test(test_option_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
