/*
 * test_kafka_metrics.c — the broker's metrics module (tools/kafka/metrics/metrics.c) from outside: loop
 * counters counted from several threads and summed at scrape (KMT1), histogram buckets that are
 * cumulative with +Inf equal to _count (KMT3), per-partition watermarks and log sizes read from a
 * real engine (KMT5), GET /metrics served over a real socket by libmicrohttpd and accepted by
 * `promtool check metrics`, other paths and methods refused, bad listen addresses and a port in
 * use reported as errors. The same scrape of a running `ringtail serve` is checked by
 * tests/cli_kafka_metrics.sh.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "tools/kafka/metrics/metrics.h"

/* A plain HTTP/1.0 exchange on 127.0.0.1:port; returns the whole answer (headers + body). */
static char *http(uint16_t port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    size_t len = strlen(request);
    assert_int_equal(write(fd, request, len), (ssize_t)len);
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (cap - got < 4096) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        ssize_t n = read(fd, buf + got, cap - got - 1);
        assert_true(n >= 0);
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    close(fd);
    return buf;
}

/* The value of the series written exactly as `series` (name and labels), or -1. */
static double series_value(const char *text, const char *series)
{
    size_t len = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += len) {
        if ((p == text || p[-1] == '\n') && p[len] == ' ')
            return strtod(p + len + 1, NULL);
    }
    return -1;
}

struct counter_thread {
    struct kafka_metrics_loop *loop;
    int requests;
};

static void *count_requests(void *arg)
{
    struct counter_thread *t = arg;
    for (int i = 0; i < t->requests; i++) {
        /* Latencies 0.05 ms .. 2 ms: buckets 0.0001 .. 0.0025 get some each. */
        kafka_metrics_request(t->loop, 0, 7, 50000u + (uint64_t)(i % 40) * 50000u);
        kafka_metrics_bytes_in(t->loop, 100);
        kafka_metrics_bytes_out(t->loop, 10);
    }
    kafka_metrics_connection_opened(t->loop);
    kafka_metrics_connection_opened(t->loop);
    kafka_metrics_connection_closed(t->loop);
    return NULL;
}

/* KMT1/KMT3: counts from four loop threads are summed; buckets are cumulative; +Inf = _count. */
static void test_loop_counters_are_summed(void **state)
{
    (void)state;
    struct kafka_metrics *m = NULL;
    assert_int_equal(kafka_metrics_create(4, &m), 0);
    pthread_t th[4];
    struct counter_thread ct[4];
    for (int i = 0; i < 4; i++) {
        ct[i] =
            (struct counter_thread){.loop = kafka_metrics_loop(m, (uint32_t)i), .requests = 10000};
        assert_non_null(ct[i].loop);
        assert_int_equal(pthread_create(&th[i], NULL, count_requests, &ct[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_null(kafka_metrics_loop(m, 4));
    kafka_metrics_request(kafka_metrics_loop(m, 0), 1, 11, 20000000000ull); /* > 10 s */
    kafka_metrics_request(kafka_metrics_loop(m, 0), 999, 0, 1);             /* unknown key */
    kafka_metrics_request(kafka_metrics_loop(m, 0), 3, 99, 1);              /* silly version */
    kafka_metrics_refusal(kafka_metrics_loop(m, 1), KAFKA_REFUSE_FRAME_TOO_LARGE);
    /* NULL loops are accepted and count nothing (a server without metrics). */
    kafka_metrics_request(NULL, 0, 7, 1);
    kafka_metrics_bytes_in(kafka_metrics_loop(NULL, 0), 5);

    char *text = NULL;
    size_t len = 0;
    assert_int_equal(kafka_metrics_render(m, NULL, NULL, &text, &len), 0);
    assert_int_equal(strlen(text), len);
    assert_true(series_value(text, "ringtail_kafka_requests_total{api=\"Produce\",api_key=\"0\","
                                   "version=\"7\"}") == 40000);
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_count{api="
                                   "\"Produce\",version=\"7\"}") == 40000);
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Produce\",version=\"7\",le=\"+Inf\"}") == 40000);
    /* 50 us: 1 of 40 latencies is <= 0.0001 s (50 us and 100 us: 2); <= 1 ms: 20 of 40. */
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Produce\",version=\"7\",le=\"0.0001\"}") == 2000);
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Produce\",version=\"7\",le=\"0.001\"}") == 20000);
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Produce\",version=\"7\",le=\"10\"}") == 40000);
    /* The 20 s fetch is only in +Inf. */
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Fetch\",version=\"11\",le=\"10\"}") == 0);
    assert_true(series_value(text, "ringtail_kafka_request_duration_seconds_bucket{api="
                                   "\"Fetch\",version=\"11\",le=\"+Inf\"}") == 1);
    assert_true(series_value(text, "ringtail_kafka_requests_unknown_total") == 2);
    assert_true(series_value(text, "ringtail_kafka_received_bytes_total") == 4000000);
    assert_true(series_value(text, "ringtail_kafka_sent_bytes_total") == 400000);
    assert_true(series_value(text, "ringtail_kafka_connections_opened_total") == 8);
    assert_true(series_value(text, "ringtail_kafka_connections") == 4);
    assert_true(series_value(text, "ringtail_kafka_refusals_total{reason=\"frame_too_large\"}") ==
                1);
    /* KMT4: no series for what never happened. */
    assert_null(strstr(text, "api=\"Metadata\""));
    free(text);
    kafka_metrics_destroy(m);
}

struct bound_thread {
    struct kafka_metrics *m;
    struct kafka_metrics_loop *first, *second;
};

static void *count_bound(void *arg)
{
    struct bound_thread *t = arg;
    t->first = kafka_metrics_thread(t->m);
    for (int i = 0; i < 1000; i++)
        kafka_metrics_request(kafka_metrics_thread(t->m), 1, 11, 1000);
    t->second = kafka_metrics_thread(t->m);
    return NULL;
}

/* kafka_metrics_thread: a set per thread while they last, the same one on every call; threads
 * beyond them share the overflow set and still lose no count. */
static void test_thread_bound_counters(void **state)
{
    (void)state;
    struct kafka_metrics *m = NULL;
    assert_int_equal(kafka_metrics_create(2, &m), 0);
    assert_null(kafka_metrics_thread(NULL));
    struct bound_thread t[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        t[i] = (struct bound_thread){.m = m};
        assert_int_equal(pthread_create(&th[i], NULL, count_bound, &t[i]), 0);
    }
    for (int i = 0; i < 6; i++)
        pthread_join(th[i], NULL);
    int own = 0;
    for (int i = 0; i < 6; i++) {
        assert_non_null(t[i].first);
        assert_ptr_equal(t[i].first, t[i].second);
        if (t[i].first == kafka_metrics_loop(m, 0) || t[i].first == kafka_metrics_loop(m, 1))
            own++;
    }
    assert_int_equal(own, 2);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(kafka_metrics_render(m, NULL, NULL, &text, &len), 0);
    assert_true(series_value(text, "ringtail_kafka_requests_total{api=\"Fetch\",api_key=\"1\","
                                   "version=\"11\"}") == 6000);
    assert_true(series_value(text, "ringtail_kafka_counting_threads") == 6);
    free(text);
    kafka_metrics_destroy(m);
    /* A new instance (perhaps at the same address) gives this thread a fresh set, never the
     * destroyed one's. */
    assert_int_equal(kafka_metrics_create(1, &m), 0);
    struct kafka_metrics_loop *l = kafka_metrics_thread(m);
    assert_ptr_equal(l, kafka_metrics_loop(m, 0));
    kafka_metrics_destroy(m);
}

static void test_create_refuses_bad_loop_counts(void **state)
{
    (void)state;
    struct kafka_metrics *m = NULL;
    assert_int_equal(kafka_metrics_create(0, &m), RT_E_INVALID_ARGUMENT);
    assert_int_equal(kafka_metrics_create(KAFKA_METRICS_LOOPS_MAX + 1, &m), RT_E_INVALID_ARGUMENT);
    assert_int_equal(kafka_metrics_create(1, NULL), RT_E_INVALID_ARGUMENT);
    kafka_metrics_destroy(NULL);
}

/* GET /metrics over a real socket on a real engine; promtool accepts it; engine figures are
 * the engine's. */
static void test_scrape_of_an_engine_passes_promtool(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "orders", 2), 0);
    char value[300];
    memset(value, 'v', sizeof(value));
    struct rt_record r[2] = {
        {.value = value, .value_len = (int32_t)sizeof(value), .timestamp_ms = -1, .key_len = -1},
        {.value = value, .value_len = (int32_t)sizeof(value), .timestamp_ms = -1, .key_len = -1}};
    for (int i = 0; i < 50; i++)
        assert_int_equal(rt_append(f->e, "orders", 1, r, 2, NULL), 0);

    struct kafka_metrics *m = NULL;
    assert_int_equal(kafka_metrics_create(2, &m), 0);
    kafka_metrics_request(kafka_metrics_loop(m, 1), 18, 3, 30000);
    assert_int_equal(kafka_metrics_serve(m, "127.0.0.1:0", f->e, f->dir), 0);
    uint16_t port = kafka_metrics_port(m);
    assert_true(port > 0);

    char *answer = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(answer, "HTTP/1.0 200") ? answer : strstr(answer, "HTTP/1.1 200"));
    assert_non_null(strstr(answer, "Content-Type: text/plain; version=0.0.4"));
    char *body = strstr(answer, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    assert_true(series_value(body, "ringtail_partition_high_watermark{topic=\"orders\","
                                   "partition=\"1\"}") == 100);
    assert_true(series_value(body, "ringtail_partition_high_watermark{topic=\"orders\","
                                   "partition=\"0\"}") == 0);
    assert_true(series_value(body, "ringtail_partition_last_stable_offset{topic=\"orders\","
                                   "partition=\"1\"}") == 100);
    assert_true(series_value(body, "ringtail_partition_log_start_offset{topic=\"orders\","
                                   "partition=\"1\"}") == 0);
    /* 50 batches of 2 records of 300 bytes: more than the values, less than twice them. */
    double size =
        series_value(body, "ringtail_partition_log_size_bytes{topic=\"orders\",partition=\"1\"}");
    if (!(size > 50 * 2 * 300 && size < 2 * 50 * 2 * 300))
        print_error("log size %f\n", size);
    assert_true(size > 50 * 2 * 300 && size < 2 * 50 * 2 * 300);
    assert_true(series_value(body, "ringtail_partition_log_size_bytes{topic=\"orders\","
                                   "partition=\"0\"}") == 0);
    struct rt_stats st;
    assert_int_equal(rt_stats_get(f->e, &st), 0);
    assert_true(series_value(body, "ringtail_engine_rounds_total") >= 1);
    assert_true(series_value(body, "ringtail_engine_rounds_total") <= (double)st.rounds);
    assert_true(series_value(body, "ringtail_engine_batches_appended_total") >= 50);
    assert_true(series_value(body, "ringtail_transactions_open") == 0);
    assert_true(series_value(body, "ringtail_kafka_requests_total{api=\"ApiVersions\",api_key="
                                   "\"18\",version=\"3\"}") == 1);

    char *file = tu_path("%s/scrape.txt", f->dir);
    FILE *out = fopen(file, "w");
    assert_non_null(out);
    fputs(body, out);
    fclose(out);
    int rc = tu_system("promtool check metrics < '%s'", file);
    if (rc != 0)
        print_error("promtool rejected:\n%s\n", body);
    assert_int_equal(rc, 0);
    free(file);
    free(answer);

    answer = http(port, "GET /other HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(answer, " 404 "));
    free(answer);
    answer = http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
    assert_non_null(strstr(answer, " 405 "));
    free(answer);
    answer = http(port, "garbage\r\n\r\n");
    assert_null(strstr(answer, " 200 ")); /* libmicrohttpd answers 400 or closes */
    free(answer);

    /* A second daemon on the same port: the bind error comes back as -EADDRINUSE. */
    struct kafka_metrics *m2 = NULL;
    assert_int_equal(kafka_metrics_create(1, &m2), 0);
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
    assert_int_equal(kafka_metrics_serve(m2, addr, f->e, f->dir), -EADDRINUSE);
    assert_int_equal(kafka_metrics_port(m2), 0);
    kafka_metrics_destroy(m2);

    kafka_metrics_stop(m);
    assert_int_equal(kafka_metrics_port(m), 0);
    kafka_metrics_stop(m); /* idempotent */
    kafka_metrics_destroy(m);
    tu_fixture_close(f);
}

static void test_bad_listen_addresses(void **state)
{
    (void)state;
    struct kafka_metrics *m = NULL;
    assert_int_equal(kafka_metrics_create(1, &m), 0);
    const char *bad[] = {"",
                         "9100",
                         ":9100",
                         "127.0.0.1:",
                         "127.0.0.1:x",
                         "127.0.0.1:70000",
                         "nosuchhost:9100",
                         "1.2.3:9100",
                         "127.0.0.1:-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(kafka_metrics_serve(m, bad[i], NULL, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(kafka_metrics_serve(m, NULL, NULL, NULL), RT_E_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(kafka_metrics_check_addr(bad[i]), RT_E_INVALID_ARGUMENT);
    assert_int_equal(kafka_metrics_check_addr(NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(kafka_metrics_check_addr("127.0.0.1:9100"), 0);
    assert_int_equal(kafka_metrics_check_addr("localhost:0"), 0);
    /* localhost is accepted (as 127.0.0.1); a scrape without an engine has loop counters. */
    assert_int_equal(kafka_metrics_serve(m, "localhost:0", NULL, NULL), 0);
    char *answer = http(kafka_metrics_port(m), "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(answer, "ringtail_kafka_connections 0"));
    assert_null(strstr(answer, "ringtail_partition_high_watermark{"));
    free(answer);
    /* Serving twice is refused. */
    assert_int_equal(kafka_metrics_serve(m, "127.0.0.1:0", NULL, NULL), RT_E_INVALID_ARGUMENT);
    kafka_metrics_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_counters_are_summed),
        cmocka_unit_test(test_thread_bound_counters),
        cmocka_unit_test(test_create_refuses_bad_loop_counts),
        cmocka_unit_test_setup_teardown(test_scrape_of_an_engine_passes_promtool, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test(test_bad_listen_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
