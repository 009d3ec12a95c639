/*
 * fuzz_kafka_tls.c — libFuzzer target for what a client sends an SSL listener before and right
 * after its handshake, through the TLS transport (tools/kafka/net/net_tls.c) as the network loop
 * drives it: the input is written to the peer end of a socketpair (then closed), and the server
 * end runs handshake steps and, once a handshake is done, reads until the end. ringtail parses
 * no TLS byte itself (OpenSSL does: ClientHello, records, certificates); this target checks the
 * transport's side of it on hostile bytes — every step answers 0, -EAGAIN with a readiness, or a
 * failure with its reason (NT1, NT3), never a crash, a hang or a leak. Seeds are real
 * ClientHellos (TLS 1.2 and 1.3) from Python's ssl module. The server's certificate is a
 * self-signed one made here once, with OpenSSL, into a temporary directory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tools/kafka/net/net_tls.h"

#define TCHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_tls: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static struct net_tls *tls;

static void make_server(void)
{
    char dir[] = "/tmp/rt-fuzz-tls-XXXXXX";
    TCHECK(mkdtemp(dir));
    char cert[64], key[64];
    snprintf(cert, sizeof(cert), "%s/c.pem", dir);
    snprintf(key, sizeof(key), "%s/k.pem", dir);
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    TCHECK(pk && x);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    TCHECK(X509_sign(x, pk, EVP_sha256()) > 0);
    FILE *f = fopen(cert, "w");
    TCHECK(f && PEM_write_X509(f, x) == 1);
    fclose(f);
    f = fopen(key, "w");
    TCHECK(f && PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL) == 1);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pk);
    /* Client certificates requested and verified against the server's own: the verify path is
     * fuzzed too. */
    struct net_tls_options o = {
        .cert_pem = cert, .key_pem = key, .ca_pem = cert, .client_auth = NET_TLS_AUTH_REQUESTED};
    char why[256];
    TCHECK(net_tls_create(&o, &tls, why, sizeof(why)) == 0);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

/* Reads what the server wrote, so its writes never wait on a full socket. */
static void drain(int fd)
{
    char buf[16384];
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
        ;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tls)
        make_server();
    if (size > 65536)
        return 0; /* what one socketpair buffer surely takes at once */
    int sv[2];
    TCHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    size_t put = 0;
    while (put < size) {
        ssize_t w = send(sv[1], data + put, size - put, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    shutdown(sv[1], SHUT_WR); /* the client says nothing more */
    const struct net_transport *t = net_tls_transport(tls);
    void *st = NULL;
    TCHECK(t->open(t->ctx, sv[0], &st) == 0);
    int steps = 0, rc = -EAGAIN;
    enum net_want want = NET_WANT_NONE;
    while (rc == -EAGAIN && steps++ < 64) {
        rc = t->handshake(st, &want);
        drain(sv[1]);
        TCHECK(rc == 0 || (rc == -EAGAIN && (want == NET_WANT_READ || want == NET_WANT_WRITE)) ||
               (rc < 0 && rc != -EAGAIN));
        if (rc == -EAGAIN && want == NET_WANT_READ)
            break; /* nothing more will come: the loop would wait (and KN9 close it) */
    }
    if (rc < 0 && rc != -EAGAIN)
        TCHECK(t->error(st) != NULL && t->error(st)[0] != '\0'); /* NT3: a reason to log */
    if (rc == 0) {
        TCHECK(!t->sends_mapped(st) || t->raw == false);
        char principal[256];
        (void)t->peer_principal(st, principal, sizeof(principal));
        uint8_t buf[4096];
        for (int i = 0; i < 64; i++) {
            ssize_t r = t->read(st, buf, sizeof(buf), &want);
            drain(sv[1]);
            TCHECK(r >= -4096);
            if (r <= 0 && r != -EAGAIN)
                break;
            if (r == -EAGAIN && want == NET_WANT_READ)
                break;
        }
    }
    t->close(st);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
