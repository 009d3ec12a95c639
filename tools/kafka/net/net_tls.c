/*
 * net_tls.c — the TLS transport (net_tls.h) over OpenSSL 3: TLS 1.2 and 1.3 on each accepted
 * non-blocking socket, the handshake and every read and write one non-blocking step on the
 * connection's loop thread, the client certificate's subject as Kafka's principal, and the
 * shared context (certificate, key, CA, ssl.client.auth) reloaded on request. It owns the
 * SSL_CTX and each connection's SSL; it never owns, blocks on or closes the socket (net.c
 * does), never frames or parses Kafka bytes, and parses no TLS byte itself (OpenSSL does: the
 * only bytes read here are OpenSSL's answers).
 *
 * Invariants:
 *   NT1  Every OpenSSL call on a connection is one non-blocking step: SSL_ERROR_WANT_READ /
 *        WANT_WRITE become -EAGAIN with want READ / WRITE (a read that must write, a write
 *        that must read), so the loop waits on the readiness asked for and never blocks.
 *        Renegotiation is off (SSL_OP_NO_RENEGOTIATION): after the handshake a write never
 *        needs a read.
 *   NT2  Reload swaps the context pointer under the lock; every SSL takes its own reference to
 *        the context it was made from (SSL_new), so connections already open keep theirs and
 *        the old context is freed with its last connection. A reload that fails changes
 *        nothing.
 *   NT3  A failed call's reason (OpenSSL's error queue, the certificate verify result) is kept
 *        in the connection and handed to net through `error`, which logs it once when it
 *        closes the connection. The queue (per thread) is cleared before each call and
 *        drained after a failure, so one connection's reason never shows in another's line.
 *   NT4  Kernel TLS: SSL_OP_ENABLE_KTLS is set; once the handshake is done, a connection
 *        whose send side OpenSSL put in the kernel (BIO_get_ktls_send) answers sends_mapped
 *        true and its writes go as plain sendmsg on the socket (the kernel makes the records),
 *        so fetched segment bytes are sent from their mapping as on plain TCP; otherwise every
 *        write is an SSL_write and slices are copied through net's bounded buffer (KN8).
 *        net_tls_sends_mapped_decide is the decision, kept pure for its unit test.
 *   NT5  A write retried after WANT_WRITE offers OpenSSL the same bytes (its rule): net does
 *        not move its window until bytes are taken, and a write coalesced from several
 *        iovecs into the connection's record buffer is resent from that buffer with the same
 *        length.
 */
#include "tools/kafka/net/net_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define TLS_RECORD_BYTES 16384 /* TLS's largest plaintext record: what one coalesced write takes */

#ifdef OPENSSL_NO_KTLS
#define TLS_BUILT_WITH_KTLS false
#else
#define TLS_BUILT_WITH_KTLS true
#endif

struct net_tls {
    struct net_transport transport; /* ctx points back here */
    pthread_mutex_t lock;           /* NT2: guards ctx */
    SSL_CTX *ctx;
    char *cert_pem, *key_pem, *ca_pem;
    enum net_tls_client_auth client_auth;
};

struct tls_conn {
    SSL *ssl;
    int fd;
    bool done;              /* the handshake is done */
    bool ktls_send;         /* NT4: OpenSSL put the send side in the kernel */
    size_t wpending;        /* NT5: bytes of a write that answered WANT_WRITE, to offer again */
    bool wpending_buffered; /* ... from wbuf (coalesced) rather than the first iovec */
    uint8_t *wbuf;          /* NT5: coalesced record bytes (TLS_RECORD_BYTES, made at first use) */
    char err[256];          /* NT3 */
};

/* ---- errors (NT3) ---- */

/* Drains the thread's error queue into what[] (its first reason, which names the cause). */
static void tls_take_errors(char *what, size_t cap, const char *fallback)
{
    unsigned long e = ERR_get_error();
    if (e) {
        const char *r = ERR_reason_error_string(e);
        if (r)
            snprintf(what, cap, "%s", r);
        else
            ERR_error_string_n(e, what, cap);
    } else {
        snprintf(what, cap, "%s", fallback);
    }
    ERR_clear_error();
}

static void conn_fail(struct tls_conn *c, int ssl_err)
{
    char reason[160];
    if (ssl_err == SSL_ERROR_SYSCALL)
        tls_take_errors(reason, sizeof(reason),
                        errno ? strerror(errno) : "the peer closed the connection");
    else
        tls_take_errors(reason, sizeof(reason), "TLS error");
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK)
        snprintf(c->err, sizeof(c->err), "%s (certificate: %s)", reason,
                 X509_verify_cert_error_string(v));
    else
        snprintf(c->err, sizeof(c->err), "%s", reason);
}

/* ---- the context ---- */

static int ctx_build(const struct net_tls *t, SSL_CTX **out, char *why, size_t cap)
{
    ERR_clear_error();
    char reason[160];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        tls_take_errors(reason, sizeof(reason), "out of memory");
        snprintf(why, cap, "cannot make a TLS context: %s", reason);
        return -ENOMEM;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    /* NT1: no renegotiation; NT4: kernel TLS where the kernel has it; a peer that closes the
     * TCP connection without close_notify (most Kafka clients) is an end of stream. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_ENABLE_KTLS |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    static const unsigned char sid[] = "ringtail";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    const char *file = t->cert_pem;
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_pem) != 1)
        goto fail;
    file = t->key_pem;
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key_pem, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1)
        goto fail;
    if (t->ca_pem) {
        file = t->ca_pem;
        if (SSL_CTX_load_verify_locations(ctx, t->ca_pem, NULL) != 1)
            goto fail;
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_pem);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
    }
    int mode = SSL_VERIFY_NONE;
    if (t->client_auth == NET_TLS_AUTH_REQUESTED)
        mode = SSL_VERIFY_PEER;
    else if (t->client_auth == NET_TLS_AUTH_REQUIRED)
        mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, NULL);
    *out = ctx;
    return 0;
fail:
    tls_take_errors(reason, sizeof(reason), "unreadable");
    snprintf(why, cap, "%s: %s", file, reason);
    SSL_CTX_free(ctx);
    return -EPROTO;
}

/* ---- the transport (net_transport.h) ---- */

static int tls_open(void *ctx, int fd, void **state)
{
    struct net_tls *t = ctx;
    struct tls_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    pthread_mutex_lock(&t->lock); /* NT2 */
    SSL_CTX *sc = t->ctx;
    SSL_CTX_up_ref(sc);
    pthread_mutex_unlock(&t->lock);
    ERR_clear_error();
    c->ssl = SSL_new(sc);
    SSL_CTX_free(sc); /* the SSL holds its own reference */
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        ERR_clear_error();
        if (c->ssl)
            SSL_free(c->ssl);
        free(c);
        return -ENOMEM;
    }
    SSL_set_accept_state(c->ssl);
    c->fd = fd;
    *state = c;
    return 0;
}

static void tls_close(void *state)
{
    struct tls_conn *c = state;
    if (!c)
        return;
    /* No close_notify: net closes the socket at once and Kafka clients do not wait for one. */
    SSL_set_quiet_shutdown(c->ssl, 1);
    SSL_free(c->ssl);
    ERR_clear_error();
    free(c->wbuf);
    free(c);
}

/* NT1: an SSL call that did not succeed, as the transport interface says it. */
static ssize_t tls_wait_or_fail(struct tls_conn *c, int r, enum net_want *want)
{
    int e = SSL_get_error(c->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = NET_WANT_READ;
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        *want = NET_WANT_WRITE;
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == EPIPE || errno == ECONNRESET) {
            int err = errno;
            ERR_clear_error();
            return -err;
        }
        conn_fail(c, e);
        return -EPROTO;
    default:
        conn_fail(c, e);
        return -EPROTO;
    }
}

static int tls_handshake(void *state, enum net_want *want)
{
    struct tls_conn *c = state;
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->done = true;
        c->ktls_send = BIO_get_ktls_send(SSL_get_wbio(c->ssl));
        *want = NET_WANT_NONE;
        return 0;
    }
    ssize_t rc = tls_wait_or_fail(c, r, want);
    if (rc == 0) { /* close_notify in the middle of a handshake */
        snprintf(c->err, sizeof(c->err), "the peer ended the TLS session during the handshake");
        return -EPROTO;
    }
    if (rc != -EAGAIN && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s", strerror((int)-rc));
    return (int)rc;
}

static ssize_t tls_read(void *state, void *buf, size_t len, enum net_want *want)
{
    struct tls_conn *c = state;
    size_t got = 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_read_ex(c->ssl, buf, len, &got);
    if (r == 1)
        return (ssize_t)got;
    return tls_wait_or_fail(c, r, want);
}

/* NT4: the kernel makes the records; the socket takes the plain bytes. */
static ssize_t ktls_writev(struct tls_conn *c, const struct iovec *iov, int iov_count,
                           enum net_want *want)
{
    struct msghdr msg = {.msg_iov = (struct iovec *)iov,
                         .msg_iovlen = (size_t)(iov_count > IOV_MAX ? IOV_MAX : iov_count)};
    ssize_t w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w >= 0)
        return w;
    *want = NET_WANT_WRITE;
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static ssize_t tls_writev(void *state, const struct iovec *iov, int iov_count, int flags,
                          enum net_want *want)
{
    struct tls_conn *c = state;
    (void)flags; /* zero copy is never asked of a transport that is not raw (net_epoll.c) */
    if (iov_count <= 0)
        return 0;
    if (net_tls_sends_mapped_decide(TLS_BUILT_WITH_KTLS, c->done, c->ktls_send, c->wpending))
        return ktls_writev(c, iov, iov_count, want);
    const void *buf;
    size_t len;
    if (c->wpending) { /* NT5: the same bytes again */
        buf = c->wpending_buffered ? (const void *)c->wbuf : iov[0].iov_base;
        len = c->wpending;
    } else if (iov_count == 1 || iov[0].iov_len >= TLS_RECORD_BYTES) {
        buf = iov[0].iov_base;
        len = iov[0].iov_len;
        c->wpending_buffered = false;
    } else {
        /* Small pieces (a response's header, then its body) go in one record, not one each. */
        if (!c->wbuf && !(c->wbuf = malloc(TLS_RECORD_BYTES)))
            return -ENOMEM;
        size_t k = 0;
        for (int i = 0; i < iov_count && k < TLS_RECORD_BYTES; i++) {
            size_t take = iov[i].iov_len;
            if (take > TLS_RECORD_BYTES - k)
                take = TLS_RECORD_BYTES - k;
            memcpy(c->wbuf + k, iov[i].iov_base, take);
            k += take;
        }
        buf = c->wbuf;
        len = k;
        c->wpending_buffered = true;
    }
    if (len == 0)
        return 0;
    size_t put = 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_write_ex(c->ssl, buf, len, &put);
    if (r == 1) {
        c->wpending = 0;
        return (ssize_t)put;
    }
    ssize_t rc = tls_wait_or_fail(c, r, want);
    if (rc == -EAGAIN)
        c->wpending = len;
    else if (rc == 0)
        rc = -EPIPE;
    return rc;
}

static bool tls_sends_mapped(const void *state)
{
    const struct tls_conn *c = state;
    return net_tls_sends_mapped_decide(TLS_BUILT_WITH_KTLS, c->done, c->ktls_send, c->wpending);
}

static bool tls_pending(const void *state)
{
    const struct tls_conn *c = state;
    return SSL_pending(c->ssl) > 0; /* decrypted bytes only: never a partial record */
}

static const char *tls_error(void *state)
{
    struct tls_conn *c = state;
    return c->err[0] ? c->err : NULL;
}

/* Kafka's default principal builder for SSL: User: and the subject DN in RFC 2253 form. */
static bool tls_peer_principal(const void *state, char *buf, size_t cap)
{
    const struct tls_conn *c = state;
    X509 *peer = SSL_get0_peer_certificate(c->ssl);
    if (!peer || SSL_get_verify_result(c->ssl) != X509_V_OK)
        return false;
    BIO *mem = BIO_new(BIO_s_mem());
    if (!mem)
        return false;
    bool ok = false;
    int w = X509_NAME_print_ex(mem, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253);
    char *dn = NULL;
    long n = BIO_get_mem_data(mem, &dn);
    /* A subject too long for the principal leaves it anonymous rather than cut short (a cut
     * name could match another's ACLs). */
    if (w >= 0 && n > 0 && (size_t)n + 5 < cap) {
        memcpy(buf, "User:", 5);
        memcpy(buf + 5, dn, (size_t)n);
        buf[5 + n] = '\0';
        ok = true;
    }
    BIO_free(mem);
    ERR_clear_error();
    return ok;
}

/* ---- the public calls ---- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void net_tls_free(struct net_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->lock);
    free(t->cert_pem);
    free(t->key_pem);
    free(t->ca_pem);
    free(t);
}

int net_tls_create(const struct net_tls_options *o, struct net_tls **out, char *why, size_t cap)
{
    if (!o || !o->cert_pem || !o->key_pem || !out) {
        snprintf(why, cap, "TLS needs a certificate and a key");
        return -EINVAL;
    }
    if (o->client_auth != NET_TLS_AUTH_NONE && !o->ca_pem) {
        snprintf(why, cap, "client authentication needs a CA to verify client certificates");
        return -EINVAL;
    }
    struct net_tls *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(why, cap, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->cert_pem = dup_or_null(o->cert_pem);
    t->key_pem = dup_or_null(o->key_pem);
    t->ca_pem = dup_or_null(o->ca_pem);
    t->client_auth = o->client_auth;
    if (!t->cert_pem || !t->key_pem || (o->ca_pem && !t->ca_pem)) {
        net_tls_free(t);
        snprintf(why, cap, "out of memory");
        return -ENOMEM;
    }
    int rc = ctx_build(t, &t->ctx, why, cap);
    if (rc) {
        net_tls_free(t);
        return rc;
    }
    t->transport = (struct net_transport){
        .name = "tls",
        .raw = false,
        .ctx = t,
        .open = tls_open,
        .close = tls_close,
        .handshake = tls_handshake,
        .read = tls_read,
        .writev = tls_writev,
        .sends_mapped = tls_sends_mapped,
        .pending = tls_pending,
        .error = tls_error,
        .peer_principal = tls_peer_principal,
    };
    *out = t;
    return 0;
}

const struct net_transport *net_tls_transport(struct net_tls *t)
{
    return &t->transport;
}

int net_tls_reload(struct net_tls *t, char *why, size_t cap)
{
    SSL_CTX *fresh = NULL;
    int rc = ctx_build(t, &fresh, why, cap);
    if (rc)
        return rc; /* NT2: the old context stays */
    pthread_mutex_lock(&t->lock);
    SSL_CTX *old = t->ctx;
    t->ctx = fresh;
    pthread_mutex_unlock(&t->lock);
    SSL_CTX_free(old); /* freed once its last connection's SSL is */
    return 0;
}

static const char *const auth_names[] = {
    [NET_TLS_AUTH_NONE] = "none",
    [NET_TLS_AUTH_REQUESTED] = "requested",
    [NET_TLS_AUTH_REQUIRED] = "required",
};

bool net_tls_client_auth_parse(const char *s, enum net_tls_client_auth *out)
{
    for (size_t i = 0; i < sizeof(auth_names) / sizeof(auth_names[0]); i++)
        if (strcmp(s, auth_names[i]) == 0) {
            *out = (enum net_tls_client_auth)i;
            return true;
        }
    return false;
}

const char *net_tls_client_auth_name(enum net_tls_client_auth a)
{
    return (unsigned)a < sizeof(auth_names) / sizeof(auth_names[0]) ? auth_names[a] : "?";
}

/* ---- kernel TLS (NT4) ---- */

bool net_tls_sends_mapped_decide(bool built_with_ktls, bool handshake_done, bool ktls_send,
                                 size_t write_pending)
{
    return built_with_ktls && handshake_done && ktls_send && write_pending == 0;
}

bool net_tls_ktls_probe(char *why, size_t cap)
{
    if (!TLS_BUILT_WITH_KTLS) {
        snprintf(why, cap, "OpenSSL was built without KTLS");
        return false;
    }
    /* The kernel's tls ULP attaches only to an established TCP socket: a loopback pair. */
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int afd = -1;
    bool ok = false;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (lfd < 0 || cfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(lfd, 1) != 0 || getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0 ||
        connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        (afd = accept(lfd, NULL, NULL)) < 0) {
        snprintf(why, cap, "cannot probe it: %s", strerror(errno));
    } else if (setsockopt(cfd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) != 0) {
        snprintf(why, cap, "the kernel has no tls module (TCP_ULP \"tls\": %s)", strerror(errno));
    } else {
        snprintf(why, cap, "the kernel's tls module and OpenSSL's KTLS");
        ok = true;
    }
    if (afd >= 0)
        close(afd);
    if (cfd >= 0)
        close(cfd);
    if (lfd >= 0)
        close(lfd);
    return ok;
}
