/*
 * test_named_producer.c — the README's exactly-once promise for named producers, tried as a user
 * would: records with null keys sent with partition -1 (the producer places them) and the
 * caller's own sequence ids (line numbers), on a 3-partition topic.
 *   - The README's rerun: the same 2000 lines produced twice, with different batching options
 *     the second time, store exactly 2000 records, each line once, where ringtail.h says a
 *     null-key record of a named producer goes (RT_NAMED_NULL_KEY_SPAN).
 *   - SIGKILL and rerun: several children each send every line and are killed at random points;
 *     a final full rerun leaves every line stored exactly once.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"

#define TOPIC      "orders"
#define PARTITIONS 3

/* How many times each line 1..lines is stored across the topic's partitions, and how many
 * records sit in another partition than ringtail.h places them; fails the test if a record is
 * not one of the lines. */
static void count_lines(rt_engine *e, int lines, int *seen, int *misplaced)
{
    *misplaced = 0;
    memset(seen, 0, (size_t)(lines + 1) * sizeof(*seen));
    for (uint32_t part = 0; part < PARTITIONS; part++) {
        int64_t end = 0;
        assert_int_equal(
            rt_list_offsets(e, TOPIC, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
        int64_t off = 0;
        while (off < end) {
            rt_fetch *fh = NULL;
            assert_int_equal(rt_fetch_start(e, TOPIC, part, off, 1 << 16, RT_READ_UNCOMMITTED, &fh),
                             0);
            struct rt_records it;
            struct rt_record_view r;
            assert_int_equal(rt_records_init(&it, fh, off), 0);
            int64_t before = off;
            int rc;
            while ((rc = rt_records_next(&it, &r)) == 0) {
                char v[32];
                assert_true(r.value_len > 0 && r.value_len < (int32_t)sizeof(v));
                memcpy(v, r.value, (size_t)r.value_len);
                v[r.value_len] = 0;
                int line = 0;
                if (sscanf(v, "line-%d", &line) != 1 || line < 1 || line > lines)
                    fail_msg("%s-%u offset %" PRId64 " holds '%s'", TOPIC, part, r.offset, v);
                *misplaced += (uint32_t)((line / RT_NAMED_NULL_KEY_SPAN) % PARTITIONS) != part;
                seen[line]++;
                off = r.offset + 1;
            }
            assert_int_equal(rc, RT_E_END);
            off = rt_records_next_offset(&it) > off ? rt_records_next_offset(&it) : off;
            rt_fetch_release(fh);
            assert_true(off > before);
        }
    }
}

static void assert_each_once(rt_engine *e, int lines, const char *when)
{
    int *seen = calloc((size_t)lines + 1, sizeof(*seen));
    assert_non_null(seen);
    int misplaced = 0;
    count_lines(e, lines, seen, &misplaced);
    int missing = 0, repeated = 0;
    for (int i = 1; i <= lines; i++) {
        missing += seen[i] == 0;
        repeated += seen[i] > 1;
    }
    if (missing || repeated || misplaced)
        fail_msg("%s: %d of %d lines missing, %d stored more than once, %d records not in the "
                 "partition ringtail.h places them",
                 when, missing, lines, repeated, misplaced);
    free(seen);
}

/* Sends lines from..to under `name`, null keys, partition -1, sequence id = line number. */
static int send_lines(rt_engine *e, const char *name, int from, int to, uint32_t batch_bytes,
                      uint32_t linger_ms, rt_delivery_fn cb)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.name = name;
    po.batch_size_bytes = batch_bytes;
    po.linger_ms = linger_ms;
    rt_producer *p = NULL;
    int rc = rt_producer_open(e, &po, &p);
    if (rc)
        return rc;
    for (int line = from; line <= to && rc == 0; line++) {
        char v[32];
        snprintf(v, sizeof(v), "line-%d", line);
        struct rt_producer_message m = {.record = {.key_len = -1,
                                                   .value = v,
                                                   .value_len = (int32_t)strlen(v),
                                                   .timestamp_ms = -1},
                                        .sequence = line};
        rc = rt_producer_send(p, TOPIC, -1, &m, cb, (void *)(intptr_t)line);
    }
    int crc = rt_producer_close(p);
    return rc ? rc : crc;
}

/* README "Named producers": `seq 1 2000 | ringtail produce DIR orders --producer-name importer`
 * twice (here through the API, the second run in a new engine with other batching) stores 2000
 * records, each line once. */
static void test_null_key_rerun_stores_each_line_once(void **state)
{
    struct tu_fixture *f = *state;
    enum { LINES = 2000 };
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, PARTITIONS), 0);
    assert_int_equal(send_lines(f->e, "importer", 1, LINES, 16 * 1024, 5, NULL), 0);
    assert_each_once(f->e, LINES, "first run");
    tu_fixture_close(f);

    tu_fixture_open(f);
    assert_int_equal(send_lines(f->e, "importer", 1, LINES, 256, 0, NULL), 0);
    assert_each_once(f->e, LINES, "after the rerun");
    int64_t total = 0;
    for (uint32_t part = 0; part < PARTITIONS; part++) {
        int64_t end = 0;
        assert_int_equal(
            rt_list_offsets(f->e, TOPIC, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
        total += end;
    }
    assert_int_equal(total, LINES);
    tu_fixture_close(f);
}

static int child_fd = -1;

static void child_on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    (void)offset;
    (void)duplicate;
    if (err)
        _exit(5);
    int32_t line = (int32_t)(intptr_t)ctx;
    if (write(child_fd, &line, sizeof(line)) != sizeof(line))
        _exit(6);
}

/* Children send every line under one name and are SIGKILLed at random points (each child
 * resends from line 1, as a rerun script would); a final full rerun stores each line once. */
static void test_null_key_sigkill_and_rerun(void **state)
{
    struct tu_fixture *f = *state;
    enum { LINES = 20000, KILLS = 6 };
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, PARTITIONS), 0);
    tu_fixture_close(f);
    unsigned seed = (unsigned)getpid();
    fprintf(stderr, "seed %u\n", seed);
    for (int k = 0; k < KILLS; k++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        uint32_t batch_bytes = 128u + (uint32_t)(rand_r(&seed) % 8192u);
        uint32_t linger_ms = (uint32_t)(rand_r(&seed) % 4u);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_fd = fds[1];
            rt_engine *e = NULL;
            if (rt_open(f->dir, &f->o, &e))
                _exit(2);
            if (send_lines(e, "importer", 1, LINES, batch_bytes, linger_ms, child_on_delivery))
                _exit(3);
            rt_close(e);
            _exit(0);
        }
        close(fds[1]);
        int kill_after = 1 + (int)(rand_r(&seed) % LINES);
        int32_t line = 0;
        int acked = 0;
        while (acked < kill_after && read(fds[0], &line, sizeof(line)) == sizeof(line))
            acked++;
        kill(pid, SIGKILL);
        while (read(fds[0], &line, sizeof(line)) == sizeof(line))
            ;
        close(fds[0]);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            fail_msg("child %d exited %d", k, WEXITSTATUS(status));
    }
    tu_fixture_open(f);
    assert_int_equal(send_lines(f->e, "importer", 1, LINES, 16 * 1024, 5, NULL), 0);
    assert_each_once(f->e, LINES, "after the kills and the final rerun");
    tu_fixture_close(f);
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_null_key_rerun_stores_each_line_once, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_null_key_sigkill_and_rerun, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
