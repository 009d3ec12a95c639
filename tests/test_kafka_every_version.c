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

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_advertised_version, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
