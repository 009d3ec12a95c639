/*
 * test_kafka_every_version.c — every advertised version of every API, asked over a real socket
 * of an in-process kafka_server with a well-formed request (the API's request description
 * encoding a neutral struct: empty arrays, empty strings, acks -1), must be answered, and the
 * answer must decode whole by the API's response description at that version (api_table.c KA3,
 * KA6: what the table advertises, the dispatch serves and the codec reads back). A version the
 * table would advertise without a working handler, or a handler whose answer does not match the
 * description, fails here.
 *
 * Then the same table with bad frames (test_every_version_bad_frames, below).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the epoll fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

static int setup(void **state)
{
    return tk_fx_start(state, true, "test_kafka_every_version");
}

static int teardown(void **state)
{
    return tk_fx_stop(state);
}

static _Alignas(16) uint8_t arena_buf[1 << 20];
static _Alignas(16) uint8_t resp_buf[8192];

static void test_every_advertised_version(void **state)
{
    struct tk_fx *x = *state;
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
            tk_req_begin(x, &w, t[i].key, v);
            assert_int_equal(kd_encode(rq, &w, v, &q), 0);
            tk_req_send(x, &w);
            uint8_t *buf = NULL;
            struct kp_reader r;
            if (tk_resp_read(x, &buf, &r, kafka_response_header_version(t[i].key, v) == 1) != 0)
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

/* ---- bad frames at every version (issue 20 item 9) ----
 *
 * A "rich" request per (API, version): the request description walked to fill every field the
 * version has — one element in every array, "rt-bad" in every string, empty bytes, zero
 * numbers (zero timeouts and partition counts are refused at once, so nothing parks or is
 * created) — then sent broken: cut at up to 48 points, with each array count set to lie
 * (classic 1 → 2^31-1 and -2; compact 1 → 126) and each string length set to lie (classic 6
 * → 32767; compact 7 → 127). A cut body must close the connection (Kafka cannot parse it); a
 * lie must close it or be answered with the request's correlation id (when the bytes happened
 * to parse); never a crash or a hang. Meanwhile another connection, opened first, is answered
 * after every (API, version): the broker keeps serving others. */

static _Alignas(16) uint8_t fill_pool[1 << 16];
static size_t fill_used;

static void *fill_alloc(size_t n)
{
    size_t at = (fill_used + 15) & ~(size_t)15;
    assert_true(at + n <= sizeof fill_pool);
    fill_used = at + n;
    memset(fill_pool + at, 0, n);
    return fill_pool + at;
}

static void fill_struct(const struct kd_struct *st, int16_t v, void *base, int depth)
{
    for (uint16_t i = 0; i < st->fields_count; i++) {
        const struct kd_field *f = &st->fields[i];
        if (v < f->vmin || v > f->vmax)
            continue;
        uint8_t *p = (uint8_t *)base + f->off;
        switch (f->type) {
        case KD_STR:
            *(struct kp_str *)p = kp_str_of("rt-bad");
            break;
        case KD_BYTES:
            *(struct kp_bytes *)p = (struct kp_bytes){(const uint8_t *)"", 0};
            break;
        case KD_ARRAY: {
            int32_t *count = (int32_t *)((uint8_t *)base + f->aux);
            if (depth >= 4) {
                *count = 0;
                break;
            }
            size_t es = f->sub ? f->sub->size : f->elem == KD_STR ? sizeof(struct kp_str) : 8;
            void *e = fill_alloc(es);
            if (f->sub)
                fill_struct(f->sub, v, e, depth + 1);
            else if (f->elem == KD_STR)
                *(struct kp_str *)e = kp_str_of("rt-bad");
            *(void **)p = e;
            *count = 1;
            break;
        }
        default:
            break; /* numbers and uuids stay 0 */
        }
    }
}

/* Sends `body` (len bytes) as a request of (key, v) on a fresh connection. Returns 1 when the
 * broker closed it, 0 when it answered with our correlation id; fails the test otherwise. */
static int send_bad(struct tk_fx *x, int16_t key, int16_t v, const uint8_t *body, size_t len)
{
    struct kp_writer w;
    tk_req_begin(x, &w, key, v);
    kp_write_raw(&w, body, len);
    if (x->sock >= 0)
        close(x->sock);
    x->sock = -1;
    tk_req_send(x, &w);
    uint8_t hdr[4];
    size_t got = 0;
    while (got < 4) {
        ssize_t n = recv(x->sock, hdr + got, 4 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            fail_msg("key %d v%d: neither answered nor closed (%s)", key, v, strerror(errno));
        got += (size_t)n;
    }
    uint32_t size =
        (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    assert_true(size >= 4 && size < (64u << 20));
    uint8_t *buf = malloc(size);
    got = 0;
    while (got < size) {
        ssize_t n = recv(x->sock, buf + got, size - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        got += (size_t)n;
    }
    int32_t corr =
        (int32_t)((uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3]);
    free(buf);
    assert_int_equal(corr, x->corr);
    return 0;
}

/* The other client: ApiVersions v0 on its own connection, answered. */
static void other_is_served(struct tk_fx *x, int other)
{
    int keep = x->sock;
    x->sock = other;
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_API_VERSIONS, 0);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    if (tk_resp_read(x, &buf, &r, true) != 0)
        fail_msg("the other connection was closed");
    free(buf);
    x->sock = keep;
}

static void test_every_version_bad_frames(void **state)
{
    struct tk_fx *x = *state;
    int other = tk_dial(kafka_server_port(x->srv), 10);
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    int pairs = 0, cuts = 0, lies = 0, lies_closed = 0;
    for (size_t i = 0; i < count; i++) {
        if (!t[i].advertised)
            continue;
        const struct kd_message *rq = kmsg_desc(t[i].key, false);
        for (int16_t v = t[i].adv_min; v <= t[i].adv_max; v++) {
            union kmsg_request q;
            memset(&q, 0, sizeof q);
            fill_used = 0;
            fill_struct(rq->body, v, &q, 0);
            if (t[i].key == KAFKA_PRODUCE)
                q.produce.acks = -1; /* acks 0 is not answered */
            struct kp_writer w;
            kp_writer_init(&w, NULL, 0);
            assert_int_equal(kd_encode(rq, &w, v, &q), 0);
            size_t len = w.len;
            uint8_t *body = malloc(len + 8);
            assert_non_null(body);
            if (len) /* an empty body (ApiVersions v0-2) has no buffer: memcpy(_, NULL, 0) is UB */
                memcpy(body, w.buf, len);
            kp_writer_free(&w);
            bool flex = kd_flexible(rq, v);
            /* Cuts: every one of them refused by a close. */
            size_t step = len > 48 ? len / 48 : 1;
            for (size_t cut = 0; cut < len; cut += step) {
                if (!send_bad(x, t[i].key, v, body, cut))
                    fail_msg("%s v%d cut at %zu of %zu: answered, not closed", t[i].name, v, cut,
                             len);
                cuts++;
            }
            /* Lies: counts and lengths. */
            uint8_t *m = malloc(len + 8);
            for (size_t at = 0; at < len; at++) {
                static const uint8_t big32[4] = {0x7f, 0xff, 0xff, 0xff};
                static const uint8_t neg32[4] = {0xff, 0xff, 0xff, 0xfe};
                const uint8_t *repl[2] = {NULL, NULL};
                size_t rlen = 0;
                uint8_t one[1];
                if (!flex && at + 4 <= len && body[at] == 0 && body[at + 1] == 0 &&
                    body[at + 2] == 0 && body[at + 3] == 1) {
                    repl[0] = big32;
                    repl[1] = neg32;
                    rlen = 4;
                } else if (!flex && at + 2 <= len && body[at] == 0 && body[at + 1] == 6 &&
                           at + 8 <= len && memcmp(body + at + 2, "rt-bad", 6) == 0) {
                    static const uint8_t big16[2] = {0x7f, 0xff};
                    repl[0] = big16;
                    rlen = 2;
                } else if (flex && (body[at] == 2 || (body[at] == 7 && at + 7 <= len &&
                                                      memcmp(body + at + 1, "rt-bad", 6) == 0))) {
                    one[0] = body[at] == 2 ? 0x7f : 0x7f;
                    repl[0] = one;
                    rlen = 1;
                }
                for (int k = 0; k < 2 && repl[k]; k++) {
                    memcpy(m, body, len);
                    memcpy(m + at, repl[k], rlen);
                    lies_closed += send_bad(x, t[i].key, v, m, len);
                    lies++;
                }
            }
            free(m);
            free(body);
            other_is_served(x, other);
            pairs++;
        }
    }
    close(other);
    print_message("%d (API, version) pairs: %d cut bodies closed, %d lies (%d closed, the rest "
                  "answered), the other connection served after each\n",
                  pairs, cuts, lies, lies_closed);
    assert_true(pairs >= 93);
    assert_true(lies_closed > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_advertised_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_version_bad_frames, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
