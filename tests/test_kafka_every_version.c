/*
 * test_kafka_every_version.c — every advertised version of every API, asked over a real socket
 * of an in-process kafka_server with a well-formed request (the API's request description
 * encoding a neutral struct: empty arrays, empty strings, acks -1), must be answered, and the
 * answer must decode whole by the API's response description at that version (api_table.c KA3,
 * KA6: what the table advertises, the dispatch serves and the codec reads back). A version the
 * table would advertise without a working handler, or a handler whose answer does not match the
 * description, fails here.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the epoll fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

struct fx {
    struct tu_fixture f;
    struct kafka_server *srv;
    int sock;
    int32_t corr;
};

static int start(void **state, bool auto_create)
{
    int rc = tu_fixture_setup(state);
    if (rc)
        return rc;
    struct tu_fixture *tf = *state;
    struct fx *x = calloc(1, sizeof(*x));
    x->f = *tf;
    free(tf);
    tu_fixture_open(&x->f);
    struct kafka_server_options o;
    kafka_server_options_init(&o);
    o.net.port = 0;
    o.net.threads = 2;
    o.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    o.auto_create_topics = auto_create;
    o.num_partitions = 2;
    assert_int_equal(kafka_server_start(x->f.e, &o, &x->srv), 0);
    x->sock = -1;
    *state = x;
    return 0;
}

static int setup(void **state)
{
    return start(state, true);
}

static int teardown(void **state)
{
    struct fx *x = *state;
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

static int dial(struct fx *x)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(kafka_server_port(x->srv))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return s;
}

/* ---- writing requests ---- */

static void req_begin(struct fx *x, struct kp_writer *w, int16_t key, int16_t version)
{
    kp_writer_init(w, NULL, 0);
    (void)kafka_frame_begin(w);
    kp_write_i16(w, key);
    kp_write_i16(w, version);
    kp_write_i32(w, ++x->corr);
    kp_write_string(w, kp_str_of("test_kafka_every_version"));
    if (kafka_request_header_version(key, version) == 2)
        kp_write_tags(w, true);
}

static void req_send(struct fx *x, struct kp_writer *w)
{
    assert_int_equal(kafka_frame_end(w, 0), 0);
    if (x->sock < 0)
        x->sock = dial(x);
    size_t sent = 0;
    while (sent < w->len) {
        ssize_t n = send(x->sock, w->buf + sent, w->len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        sent += (size_t)n;
    }
    kp_writer_free(w);
}

/* Reads one response into *buf (malloc'd) and returns a reader past the correlation id (and
 * the response header's tags when `flexible_header`). -1 from recv: the connection closed. */
static int resp_read(struct fx *x, uint8_t **buf, struct kp_reader *r, bool flexible_header)
{
    uint8_t hdr[4];
    size_t got = 0;
    while (got < 4) {
        ssize_t n = recv(x->sock, hdr + got, 4 - got, 0);
        if (n < 0 && errno == EINTR)
            continue; /* the fixture's child processes end with SIGCHLD */
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    uint32_t size =
        (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    *buf = malloc(size);
    got = 0;
    while (got < size) {
        ssize_t n = recv(x->sock, *buf + got, size - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        got += (size_t)n;
    }
    kp_reader_init(r, *buf, size);
    assert_int_equal(kp_read_i32(r), x->corr);
    if (flexible_header)
        kp_skip_tags(r);
    return 0;
}

static _Alignas(16) uint8_t arena_buf[1 << 20];
static _Alignas(16) uint8_t resp_buf[8192];

static void test_every_advertised_version(void **state)
{
    struct fx *x = *state;
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    int asked = 0, advertised = 0;
    for (size_t i = 0; i < count; i++) {
        if (!t[i].advertised)
            continue;
        advertised += t[i].adv_max - t[i].adv_min + 1;
        const struct kd_message *rq = kmsg_desc(t[i].key, false);
        const struct kd_message *rs = kmsg_desc(t[i].key, true);
        assert_non_null(rq);
        assert_non_null(rs);
        for (int16_t v = t[i].adv_min; v <= t[i].adv_max; v++) {
            union kmsg_request q;
            memset(&q, 0, sizeof q);
            if (t[i].key == KAFKA_PRODUCE) {
                q.produce.acks = -1; /* acks 0 is not answered */
                q.produce.timeout_ms = 1000;
                q.produce.transactional_id = (struct kp_str){NULL, -1};
            }
            if (t[i].key == KAFKA_INIT_PRODUCER_ID) {
                q.init_producer_id.transactional_id = (struct kp_str){NULL, -1};
                q.init_producer_id.transaction_timeout_ms = 60000;
                q.init_producer_id.producer_id = -1;
                q.init_producer_id.producer_epoch = -1;
            }
            if (t[i].key == KAFKA_FETCH)
                q.fetch.max_bytes = 1 << 20;
            struct kp_writer w;
            req_begin(x, &w, t[i].key, v);
            assert_int_equal(kd_encode(rq, &w, v, &q), 0);
            req_send(x, &w);
            uint8_t *buf = NULL;
            struct kp_reader r;
            if (resp_read(x, &buf, &r, kafka_response_header_version(t[i].key, v) == 1) != 0)
                fail_msg("%s v%d: the connection closed instead of an answer", t[i].name, v);
            struct kp_arena a;
            kp_arena_init(&a, arena_buf, sizeof arena_buf);
            assert_true(rs->body->size <= sizeof resp_buf);
            int rc = kd_decode(rs, &r, v, &a, resp_buf);
            if (rc != 0)
                fail_msg("%s v%d: the answer does not decode as its description: %d", t[i].name, v,
                         rc);
            free(buf);
            asked++;
        }
    }
    print_message("%d (API, version) pairs answered and decoded\n", asked);
    assert_int_equal(asked, advertised);
    assert_true(asked >= 93); /* the table at this commit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_advertised_version, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
