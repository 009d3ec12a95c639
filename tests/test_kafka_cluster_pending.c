/*
 * test_kafka_cluster_pending.c — a cluster node serves nothing before it has joined its
 * metadata quorum (server.c KS7). `ringtail serve --voters` starts the Kafka listener before
 * the metadata quorum and hands the server its cluster member only once the quorum member
 * runs; a request served in between was a single broker's answer: Metadata naming this node
 * every partition's leader, Produce appended without the leadership check and acks=all
 * answered at once (a node restarted from SIGKILL acknowledged records its followers never
 * had, lost at its next truncation: docs/cluster.md §9.1).
 *
 * What it pins, with a kafka_server running in-process (kafka_wire.h's fixture): a server
 * started with opts.cluster_member and no cluster member yet closes the connection of an
 * ApiVersions, a Metadata and an acks=all Produce request without an answer, and appends
 * nothing; the same server without cluster_member (a single broker) answers them.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/batches.h"
#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

#define TOPIC "pending"

/* Restarts the fixture's server, a cluster node (not joined yet) or a single broker. */
static void restart(struct tk_fx *x, bool cluster_member)
{
    if (x->sock >= 0)
        close(x->sock);
    x->sock = -1;
    kafka_server_stop(x->srv);
    x->srv = NULL;
    struct kafka_server_options o;
    kafka_server_options_init(&o);
    o.net.listeners[0].port = 0;
    o.net.threads = 1;
    o.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    o.cluster_member = cluster_member;
    assert_int_equal(kafka_server_start(x->f.e, &o, &x->srv), 0);
}

static int setup(void **state)
{
    int rc = tk_fx_start(state, false, "test_kafka_cluster_pending");
    if (rc)
        return rc;
    struct tk_fx *x = *state;
    assert_int_equal(rt_topic_create(x->f.e, TOPIC, 1), 0);
    return 0;
}

static int teardown(void **state)
{
    return tk_fx_stop(state);
}

/* Sends one request of `key` (ApiVersions v0, Metadata v1 for every topic, or a Produce v3
 * acks=all of one record to TOPIC-0) on a new connection; returns tk_resp_read's answer (0
 * answered, -1 closed without an answer). */
static int ask(struct tk_fx *x, int16_t key)
{
    if (x->sock >= 0)
        close(x->sock);
    x->sock = -1;
    struct kp_writer w;
    uint8_t batch[512];
    if (key == KAFKA_API_VERSIONS) {
        tk_req_begin(x, &w, key, 0);
    } else if (key == KAFKA_METADATA) {
        tk_req_begin(x, &w, key, 1);
        kp_write_i32(&w, -1); /* every topic */
    } else {
        size_t n = tu_batch(batch, sizeof(batch), 0, -1, -1, -1, 1, "v", 0, 1000);
        tk_req_begin(x, &w, KAFKA_PRODUCE, 3);
        kp_write_i16(&w, -1); /* transactional id: null */
        kp_write_i16(&w, -1); /* acks=all */
        kp_write_i32(&w, 5000);
        kp_write_i32(&w, 1);
        kp_write_string(&w, kp_str_of(TOPIC));
        kp_write_i32(&w, 1);
        kp_write_i32(&w, 0);
        kp_write_i32(&w, (int32_t)n);
        kp_write_raw(&w, batch, n);
    }
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    int rc = tk_resp_read(x, &buf, &r, false);
    free(buf);
    return rc;
}

static int64_t log_end(struct tk_fx *x)
{
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(x->f.e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end),
                     0);
    return end;
}

/* KS7: not joined yet, every request closes its connection and nothing is appended. */
static void test_cluster_node_serves_nothing_before_it_joined(void **state)
{
    struct tk_fx *x = *state;
    restart(x, true);
    uint64_t refused = kafka_server_stats_get(x->srv)->requests_refused;
    assert_int_equal(ask(x, KAFKA_API_VERSIONS), -1);
    assert_int_equal(ask(x, KAFKA_METADATA), -1);
    assert_int_equal(ask(x, KAFKA_PRODUCE), -1);
    assert_int_equal(log_end(x), 0);
    assert_int_equal(kafka_server_stats_get(x->srv)->requests_refused, refused + 3);
}

/* The same requests on a single broker are answered (the produce appended): what the test
 * above tells apart. */
static void test_single_broker_serves_at_once(void **state)
{
    struct tk_fx *x = *state;
    restart(x, false);
    assert_int_equal(ask(x, KAFKA_API_VERSIONS), 0);
    assert_int_equal(ask(x, KAFKA_METADATA), 0);
    assert_int_equal(ask(x, KAFKA_PRODUCE), 0);
    assert_int_equal(log_end(x), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cluster_node_serves_nothing_before_it_joined, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_single_broker_serves_at_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
