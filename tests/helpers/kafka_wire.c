/*
 * kafka_wire.c — the broker tests' in-process kafka_server fixture and their hand-written Kafka
 * client (kafka_wire.h). Test support only: fails the test instead of returning errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers/kafka_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

int tk_dial(uint16_t port, int rcv_timeout_s)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {.tv_sec = rcv_timeout_s};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return s;
}

void tk_request_begin(struct kp_writer *w, int16_t key, int16_t version, int32_t correlation_id,
                      const char *client_id)
{
    kp_writer_init(w, NULL, 0);
    (void)kafka_frame_begin(w);
    kp_write_i16(w, key);
    kp_write_i16(w, version);
    kp_write_i32(w, correlation_id);
    kp_write_string(w, kp_str_of(client_id));
    if (kafka_request_header_version(key, version) == 2)
        kp_write_tags(w, true);
}

void tk_request_send(int sock, struct kp_writer *w)
{
    assert_int_equal(kafka_frame_end(w, 0), 0);
    size_t sent = 0;
    while (sent < w->len) {
        ssize_t n = send(sock, w->buf + sent, w->len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        sent += (size_t)n;
    }
    kp_writer_free(w);
}

int tk_response_read(int sock, uint8_t **buf, struct kp_reader *r, bool flexible_header,
                     int32_t *correlation_id)
{
    uint8_t hdr[4];
    size_t got = 0;
    while (got < 4) {
        ssize_t n = recv(sock, hdr + got, 4 - got, 0);
        if (n < 0 && errno == EINTR)
            continue; /* a fixture's child processes end with SIGCHLD */
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    uint32_t size =
        (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    *buf = malloc(size);
    got = 0;
    while (got < size) {
        ssize_t n = recv(sock, *buf + got, size - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        got += (size_t)n;
    }
    kp_reader_init(r, *buf, size);
    *correlation_id = kp_read_i32(r);
    if (flexible_header)
        kp_skip_tags(r);
    return 0;
}

/* ---- the broker fixture ---- */

int tk_fx_start(void **state, bool auto_create, const char *client_id)
{
    int rc = tu_fixture_setup(state);
    if (rc)
        return rc;
    struct tu_fixture *tf = *state;
    struct tk_fx *x = calloc(1, sizeof(*x));
    x->f = *tf;
    free(tf);
    tu_fixture_open(&x->f);
    struct kafka_server_options o;
    kafka_server_options_init(&o);
    o.net.listeners[0].port = 0;
    o.net.threads = 2;
    o.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    o.auto_create_topics = auto_create;
    o.num_partitions = 2;
    assert_int_equal(kafka_server_start(x->f.e, &o, &x->srv), 0);
    x->sock = -1;
    x->client_id = client_id;
    *state = x;
    return 0;
}

int tk_fx_stop(void **state)
{
    struct tk_fx *x = *state;
    if (x->sock >= 0)
        close(x->sock);
    kafka_server_stop(x->srv);
    tu_fixture_close(&x->f);
    struct tu_fixture *tf = malloc(sizeof(*tf));
    *tf = x->f;
    free(x);
    *state = tf;
    return tu_fixture_teardown(state);
}

void tk_req_begin(struct tk_fx *x, struct kp_writer *w, int16_t key, int16_t version)
{
    tk_request_begin(w, key, version, ++x->corr, x->client_id);
}

void tk_req_send(struct tk_fx *x, struct kp_writer *w)
{
    if (x->sock < 0)
        x->sock = tk_dial(kafka_server_port(x->srv), 10);
    tk_request_send(x->sock, w);
}

int tk_resp_read(struct tk_fx *x, uint8_t **buf, struct kp_reader *r, bool flexible_header)
{
    int32_t corr = 0;
    if (tk_response_read(x->sock, buf, r, flexible_header, &corr) < 0)
        return -1;
    assert_int_equal(corr, x->corr);
    return 0;
}
