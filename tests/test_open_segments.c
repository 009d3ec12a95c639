/*
 * test_open_segments.c — descriptors bounded by the budget of open segments, not by the
 * partition count (issue 21 item 7; segment_cache.h OS1-OS2, shard.c SH12, partition.h PA15):
 *
 *   - 160 partitions under open_segments_max = 16: after a topic create, once the shards'
 *     housekeeping ran, and during an append to every partition after a clean reopen, the
 *     process holds about 4 descriptors per budgeted segment, not 4 per partition; every
 *     partition stays readable (what it held and what was appended) and appendable, across a
 *     clean close and reopen, and verify is clean;
 *   - a reader's pointers into a segment's mapping stay valid while its partition is made
 *     dormant (sealed, descriptors closed) and woken again;
 *   - a crash after partitions were made dormant loses nothing and scans nothing of them (PA14);
 *   - a clean open maps no sealed segment (SG6): the logs and indexes are mapped by their
 *     first reader, so an open touches O(partitions) files.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
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
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "helpers/proc_self.h"
#include "helpers/test_util.h"
#include "log.h"
#include "partition.h"
#include "ringtail.h"

#define TOPIC      "fd"
#define PARTITIONS 160
#define BUDGET     16
/* Descriptors one open segment holds (.log, .index, .timeindex, .txnindex). */
#define FDS_PER_SEGMENT 4
/* What the budget allows: the budget itself plus one batch of wakes past the low-water mark,
 * and the engine's own descriptors (rings, eventfds, the directory lock) counted in the
 * baseline. */
#define FDS_BOUND ((BUDGET + BUDGET / 8 + 2) * FDS_PER_SEGMENT)

static void count_problem(void *ctx, const char *line)
{
    if (strncmp(line, "warning: ", 9) != 0) {
        if ((*(unsigned *)ctx)++ == 0)
            fprintf(stderr, "verify: %s\n", line);
    }
}

static void assert_verify_clean(const char *dir)
{
    unsigned problems = 0;
    (void)rt_verify(dir, count_problem, &problems);
    assert_int_equal(problems, 0);
}

static void append_to(rt_engine *e, uint32_t part, int64_t value)
{
    char v[32];
    snprintf(v, sizeof(v), "p%u-%" PRId64, part, value);
    struct rt_record rec = {
        .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = 1000000};
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, part, &rec, 1, &base), 0);
    assert_int_equal(base, value);
}

/* Every record 0 .. count-1 of the partition reads back with its value. */
static void expect_records(rt_engine *e, uint32_t part, int64_t count)
{
    int64_t offset = 0;
    while (offset < count) {
        rt_fetch *fx = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, part, offset, 1 << 16, RT_READ_UNCOMMITTED, &fx),
                         0);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fx, offset), 0);
        struct rt_record_view rv;
        int rc;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            char want[32];
            snprintf(want, sizeof(want), "p%u-%" PRId64, part, rv.offset);
            assert_int_equal(rv.offset, offset);
            assert_int_equal(rv.value_len, (int32_t)strlen(want));
            assert_memory_equal(rv.value, want, strlen(want));
            offset++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(fx);
    }
}

static uint32_t open_segments(rt_engine *e)
{
    return atomic_load(&engine_log(e)->cache.open);
}

/* Waits (10 s at most: a few housekeeping periods) until the shards brought the open segments
 * down to the low-water mark (OS2); returns the count then. */
static uint32_t wait_within_budget(rt_engine *e)
{
    for (int i = 0; i < 200 && open_segments(e) > BUDGET - BUDGET / 8; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return open_segments(e);
}

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.open_segments_max = BUDGET;
    f->o.partitions_max = 1024;
    return rc;
}

static void test_descriptors_bounded_by_the_budget(void **state)
{
    struct tu_fixture *f = *state;
    long base = tu_fds_open();
    tu_fixture_open(f);
    long engine_own = tu_fds_open() - base;
    assert_int_equal(rt_topic_create(f->e, TOPIC, PARTITIONS), 0);
    /* OS3: once the budget is spent, the partitions a create makes are born dormant. */
    uint32_t open = open_segments(f->e);
    long held = tu_fds_open() - base - engine_own;
    fprintf(stderr, "after creating %d partitions: %u open segments, %ld descriptors\n", PARTITIONS,
            open, held);
    assert_true(open <= BUDGET);
    assert_true(held <= FDS_BOUND);
    /* Every partition appendable while the budget holds: woken, and others closed for it. */
    long most = 0;
    for (uint32_t i = 0; i < PARTITIONS; i++) {
        append_to(f->e, i, 0);
        long now = tu_fds_open() - base - engine_own;
        most = now > most ? now : most;
    }
    fprintf(stderr, "appending to all: at most %ld descriptors (budget %d segments)\n", most,
            BUDGET);
    assert_true(most <= FDS_BOUND);
    /* Every partition past the budget was woken, and as many others closed for it. */
    assert_true(atomic_load(&engine_log(f->e)->cache.sleeps) >= PARTITIONS - 2 * BUDGET);
    for (uint32_t i = 0; i < PARTITIONS; i++)
        expect_records(f->e, i, 1);
    tu_fixture_close(f);
    assert_int_equal(tu_fds_open(), base); /* nothing leaked */

    /* A clean reopen holds nothing per partition; a second append to every one wakes them in
     * turn within the budget, and what each held reads back. */
    tu_fixture_open(f);
    assert_true(open_segments(f->e) <= 1); /* internal topics only, if any */
    most = 0;
    for (uint32_t i = 0; i < PARTITIONS; i++) {
        append_to(f->e, i, 1);
        long now = tu_fds_open() - base - engine_own;
        most = now > most ? now : most;
    }
    fprintf(stderr, "after a reopen, appending to all: at most %ld descriptors\n", most);
    assert_true(most <= FDS_BOUND);
    assert_true(atomic_load(&engine_log(f->e)->cache.peak) <= BUDGET + BUDGET / 8 + 2);
    for (uint32_t i = 0; i < PARTITIONS; i++)
        expect_records(f->e, i, 2);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    tu_fixture_open(f);
    for (uint32_t i = 0; i < PARTITIONS; i += 7)
        expect_records(f->e, i, 2);
    tu_fixture_close(f);
}

/* A fetch's view points into the segment's mapping. Its partition is made dormant under the
 * reader (the seal closes the descriptors and never unmaps) and woken again by an append; the
 * bytes the reader holds do not change and stay readable until it releases them. */
static void test_reader_pointers_survive_a_sleep(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, PARTITIONS), 0);
    (void)wait_within_budget(f->e);
    for (int64_t v = 0; v < 5; v++)
        append_to(f->e, 0, v);
    struct partition *p0 = log_partition(engine_log(f->e), TOPIC, 0);
    assert_non_null(p0);
    assert_false(p0->active->sealed);
    rt_fetch *fx = NULL;
    assert_int_equal(rt_fetch_start(f->e, TOPIC, 0, 0, 1 << 16, RT_READ_UNCOMMITTED, &fx), 0);
    const struct rt_fetch_view *fv = rt_fetch_get(fx);
    assert_true(fv->size_bytes > 0);
    uint8_t *copy = malloc(fv->size_bytes);
    assert_non_null(copy);
    memcpy(copy, fv->data, fv->size_bytes);
    uint64_t sleeps = p0->sleeps;
    /* Waking other partitions closes the least recently written: partition 0 once the ones
     * never written are gone (at most about 2 x BUDGET wakes). */
    for (uint32_t i = 1; i < PARTITIONS && p0->sleeps == sleeps; i++)
        append_to(f->e, i, 0);
    assert_true(p0->sleeps > sleeps);
    assert_true(p0->active->sealed);
    assert_memory_equal(fv->data, copy, fv->size_bytes); /* the mapping is still there */
    append_to(f->e, 0, 5);                               /* woken while the reader holds it */
    assert_false(p0->active->sealed);
    assert_memory_equal(fv->data, copy, fv->size_bytes);
    struct rt_records it;
    assert_int_equal(rt_records_init(&it, fx, 0), 0);
    struct rt_record_view rv;
    int n = 0;
    while (rt_records_next(&it, &rv) == 0)
        n++;
    assert_int_equal(n, 5);
    rt_fetch_release(fx);
    free(copy);
    expect_records(f->e, 0, 6);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
}

/* A SIGKILL after partitions were made dormant: nothing acknowledged is lost, and the open walks
 * only the partitions written since they were last closed (PA14: a dormant one's entry is its
 * tail, nothing past it). */
static void test_crash_after_sleeps(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 64), 0);
    tu_fixture_close(f);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rt_engine *e = NULL;
        if (rt_open(f->dir, &f->o, &e) != 0)
            _exit(2);
        for (uint32_t i = 0; i < 64; i++) {
            struct rt_record rec = {
                .key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = 1000000};
            if (rt_append(e, TOPIC, i, &rec, 1, NULL) != 0)
                _exit(3);
        }
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    tu_fixture_open(f);
    const struct partition_recovery *rec = log_recovery(engine_log(f->e));
    fprintf(stderr, "crash open after sleeps: %" PRIu64 " bytes checked\n", rec->bytes_checked);
    for (uint32_t i = 0; i < 64; i++) {
        rt_fetch *fx = NULL;
        assert_int_equal(rt_fetch_start(f->e, TOPIC, i, 0, 1 << 16, RT_READ_UNCOMMITTED, &fx), 0);
        assert_int_equal(rt_fetch_get(fx)->high_watermark, 1);
        rt_fetch_release(fx);
    }
    /* A crash's open recovers every newest segment active (64 > the budget); the shards'
     * housekeeping (SH12) closes the idle ones without any append. */
    uint32_t open = wait_within_budget(f->e);
    fprintf(stderr, "after the crash open and housekeeping: %u open segments, %" PRIu64 " sleeps\n",
            open, (uint64_t)atomic_load(&engine_log(f->e)->cache.sleeps));
    assert_true(open <= BUDGET - BUDGET / 8); /* OS2: down to the low-water mark */
    assert_true(atomic_load(&engine_log(f->e)->cache.sleeps) > 0);
    for (uint32_t i = 0; i < 64; i += 5)
        append_to(f->e, i, 1);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
}

#define MAPPED_PARTITIONS 20
#define MAPPED_RECORDS    60 /* of 4 KiB: about four 64 KiB segments per partition */

/* SG6: a clean open of partitions with several sealed segments each maps none of them — not the
 * logs, not the indexes (before SG6 every sealed segment held three mappings from the open on);
 * a fetch maps the segments it reads and no others; a time lookup and a read from the start
 * work on segments mapped at first use. */
static void test_clean_open_maps_nothing(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_NONE; /* the segments' contents matter here, not their flushes */
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, MAPPED_PARTITIONS), 0);
    static char value[4096];
    memset(value, 'v', sizeof(value));
    for (uint32_t i = 0; i < MAPPED_PARTITIONS; i++)
        for (int r = 0; r < MAPPED_RECORDS; r++) {
            struct rt_record rec = {.key_len = -1,
                                    .value = value,
                                    .value_len = (int32_t)sizeof(value),
                                    .timestamp_ms = 1000000 + r};
            assert_int_equal(rt_append(f->e, TOPIC, i, &rec, 1, NULL), 0);
        }
    struct partition *p0 = log_partition(engine_log(f->e), TOPIC, 0);
    assert_true(p0->segment_count >= 3);
    uint32_t segments = p0->segment_count;
    tu_fixture_close(f);

    tu_fixture_open(f);
    uint32_t idx = 0;
    uint32_t maps = tu_mappings_under(f->dir, &idx);
    fprintf(stderr, "mappings after a clean open of %d partitions x %u segments: %u (%u indexes)\n",
            MAPPED_PARTITIONS, segments, maps, idx);
    assert_int_equal(idx, 0);
    assert_true(maps <= 2); /* the internal topics' active segments, if any */
    /* Reading partition 3 from its start maps what the fetch reads: its first segment. */
    rt_fetch *fx = NULL;
    assert_int_equal(rt_fetch_start(f->e, TOPIC, 3, 0, 1024, RT_READ_UNCOMMITTED, &fx), 0);
    assert_true(rt_fetch_get(fx)->size_bytes > 0);
    rt_fetch_release(fx);
    uint32_t maps_after = tu_mappings_under(f->dir, &idx);
    assert_true(maps_after > maps && maps_after <= maps + 3); /* one segment's log + 2 indexes */
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 5, 1000000 + 45, RT_READ_UNCOMMITTED, &off), 0);
    assert_int_equal(off, 45);
    for (uint32_t i = 0; i < MAPPED_PARTITIONS; i++) {
        rt_fetch *g = NULL;
        assert_int_equal(
            rt_fetch_start(f->e, TOPIC, i, MAPPED_RECORDS - 1, 1 << 16, RT_READ_UNCOMMITTED, &g),
            0);
        assert_int_equal(rt_fetch_get(g)->high_watermark, MAPPED_RECORDS);
        rt_fetch_release(g);
    }
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_descriptors_bounded_by_the_budget, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_reader_pointers_survive_a_sleep, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_sleeps, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_clean_open_maps_nothing, setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
