/*
 * test_mapped_segments.c — mappings of sealed segments bounded by rt_options.mapped_segments_max,
 * not by the segments read (segment_maps.h MM1-MM3, segment.c SG8):
 *
 *   - a partition of several times the budget in segments, written (each roll puts the sealed
 *     segment in the budget), read whole, closed, reopened cleanly and read whole twice more:
 *     the process's mappings of the partition's files stay within 3 per budgeted segment plus
 *     the active segment's, every record reads back with its own value after its segment was
 *     released and mapped again, and verify is clean;
 *   - a zero-copy reader holding an old segment's bytes while every other segment is read (and
 *     released) still sees the same bytes: a segment a reader holds is never released (MM2),
 *     and the budget holds again once it lets go;
 *   - readers on several threads fetching at random while the writer rolls, under a budget of
 *     a few segments: every value right (the Dekker pair of SG8; run under TSan too);
 *   - a reader that maps a dormant newest segment after a wake grew its files maps the bytes
 *     it described (SG6: only a shorter file is refused).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "helpers/proc_self.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "log.h"
#include "partition.h"
#include "segment.h"
#include "ringtail.h"

#define TOPIC       "mm"
#define PART_DIR    "/mm-0/"
#define BUDGET      8
#define SEGMENTS    (5 * BUDGET) /* several times the budget */
#define VALUE_BYTES 1000
/* Mappings a sealed segment holds (.log, .index, .timeindex), the active segment's as many, and
 * one segment over the budget for a moment (the one a reader holds while it maps it). */
#define MAPS_PER_SEGMENT 3
#define MAPS_BOUND       ((BUDGET + 1) * MAPS_PER_SEGMENT + MAPS_PER_SEGMENT)

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.mapped_segments_max = BUDGET;
    f->o.shard_count = 1;
    f->o.sync_mode = RT_SYNC_NONE; /* the mappings matter here, not the flushes */
    return rc;
}

static struct segment_maps *maps_of(rt_engine *e)
{
    return &engine_log(e)->maps;
}

static uint32_t partition_maps(void)
{
    return tu_mappings_under(PART_DIR, NULL);
}

/* Appends one-record batches until partition 0 has `segments` segments; returns the log end. */
static int64_t write_segments(struct tu_fixture *f, uint32_t segments, uint32_t *most_maps)
{
    struct partition *p = log_partition(engine_log(f->e), TOPIC, 0);
    assert_non_null(p);
    int64_t next = p->next_offset;
    while (p->segment_count < segments) {
        int64_t base = -1;
        assert_int_equal(tu_append_offset_batch(f->e, TOPIC, next, 1, VALUE_BYTES, &base), 0);
        assert_int_equal(base, next);
        next++;
        uint32_t now = partition_maps();
        if (most_maps && now > *most_maps)
            *most_maps = now;
    }
    return next;
}

/* Reads [from, end) one fetch (one segment at most) at a time, each record checked against
 * tu_value_of(its offset); returns the most mappings of the partition seen after a release. */
static uint32_t read_all(rt_engine *e, int64_t from, int64_t end)
{
    uint32_t most = 0;
    int64_t offset = from;
    while (offset < end) {
        rt_fetch *fx = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, offset, 1 << 20, RT_READ_UNCOMMITTED, &fx), 0);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fx, offset), 0);
        struct rt_record_view rv;
        int rc;
        int64_t before = offset;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            char want[VALUE_BYTES];
            tu_value_of(rv.offset, want, sizeof(want));
            assert_int_equal(rv.offset, offset);
            assert_int_equal(rv.value_len, VALUE_BYTES);
            assert_memory_equal(rv.value, want, VALUE_BYTES);
            offset++;
        }
        assert_int_equal(rc, RT_E_END);
        assert_true(offset > before);
        rt_fetch_release(fx);
        uint32_t now = partition_maps();
        most = now > most ? now : most;
    }
    return most;
}

/* MM1-MM3: writing, reading, reopening and reading again a partition of 5 x the budget in
 * segments never holds more than the budget's mappings, and every record is right after its
 * segment was released and mapped again (SG6's path). */
static void test_mappings_bounded_by_the_budget(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    uint32_t most_writing = 0;
    int64_t end = write_segments(f, SEGMENTS, &most_writing);
    struct segment_maps *m = maps_of(f->e);
    fprintf(stderr, "writing %d segments (budget %d): at most %u mappings, %" PRIu64 " released\n",
            SEGMENTS, BUDGET, most_writing, (uint64_t)atomic_load(&m->releases));
    assert_true(most_writing <= MAPS_BOUND);
    assert_true(atomic_load(&m->releases) >= SEGMENTS - BUDGET - 2); /* each roll past it */
    uint32_t most = read_all(f->e, 0, end);
    fprintf(stderr, "reading them: at most %u mappings, %" PRIu64 " re-mapped\n", most,
            (uint64_t)atomic_load(&m->remaps));
    assert_true(most <= MAPS_BOUND);
    assert_true(atomic_load(&m->remaps) >= SEGMENTS - BUDGET - 2);
    assert_true(atomic_load(&m->count) <= BUDGET);
    tu_fixture_close(f);
    assert_int_equal(partition_maps(), 0); /* nothing leaked */

    /* A clean reopen maps nothing (SG6); two passes over everything map, release and map
     * again, within the budget. */
    tu_fixture_open(f);
    m = maps_of(f->e);
    assert_int_equal(partition_maps(), 0);
    most = read_all(f->e, 0, end);
    uint32_t again = read_all(f->e, 0, end);
    fprintf(stderr,
            "after a clean reopen, two passes: at most %u and %u mappings; peak %u segments, "
            "%" PRIu64 " released, %" PRIu64 " re-mapped\n",
            most, again, (uint32_t)atomic_load(&m->peak), (uint64_t)atomic_load(&m->releases),
            (uint64_t)atomic_load(&m->remaps));
    assert_true(most <= MAPS_BOUND && again <= MAPS_BOUND);
    assert_true(atomic_load(&m->peak) <= BUDGET + 1); /* MM3: one over while a reader maps */
    assert_true(atomic_load(&m->remaps) >= SEGMENTS - BUDGET - 2);
    /* Appending after all that (the newest segment woken from its released sealed object) and
     * rolling more: still within it, and everything reads back. */
    end = write_segments(f, SEGMENTS + 4, &most);
    assert_true(most <= MAPS_BOUND);
    assert_true(read_all(f->e, 0, end) <= MAPS_BOUND);
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_true(read_all(f->e, 0, end) <= MAPS_BOUND);
    tu_fixture_close(f);
    tu_expect_verify_clean(f->dir, "after the passes");
}

/* MM2, SG8: a zero-copy reader holds the oldest segment's bytes while every segment is read
 * (each new mapping sweeping the budget): the held segment is never released under it, its
 * bytes stay what they were; once released it may go, and reads back the same. */
static void test_held_bytes_survive_releases(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    int64_t end = write_segments(f, SEGMENTS, NULL);
    tu_fixture_close(f);
    tu_fixture_open(f);
    struct segment_maps *m = maps_of(f->e);
    rt_fetch *held = NULL;
    assert_int_equal(rt_fetch_start(f->e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &held), 0);
    const struct rt_fetch_view *v = rt_fetch_get(held);
    assert_true(v->size_bytes > 0);
    uint8_t *copy = malloc(v->size_bytes);
    assert_non_null(copy);
    memcpy(copy, v->data, v->size_bytes);
    /* Twice over everything: the held segment is the oldest in the budget's ring, so every
     * sweep reaches it (and must pass it). */
    assert_true(read_all(f->e, 0, end) <= MAPS_BOUND + MAPS_PER_SEGMENT);
    assert_true(read_all(f->e, 0, end) <= MAPS_BOUND + MAPS_PER_SEGMENT);
    fprintf(stderr, "a reader held segment 0: %" PRIu64 " releases, %" PRIu64 " sweeps met it\n",
            (uint64_t)atomic_load(&m->releases), (uint64_t)atomic_load(&m->pinned));
    assert_true(tu_mappings_under(v->segment_path, NULL) >= 1); /* its .log is still mapped */
    assert_memory_equal(v->data, copy, v->size_bytes);
    assert_true(atomic_load(&m->releases) > 0);
    assert_true(atomic_load(&m->pinned) > 0); /* the sweep met it and left it */
    struct rt_records it;
    assert_int_equal(rt_records_init(&it, held, 0), 0);
    struct rt_record_view rv;
    int64_t n = 0;
    while (rt_records_next(&it, &rv) == 0) {
        char want[VALUE_BYTES];
        tu_value_of(rv.offset, want, sizeof(want));
        assert_int_equal(rv.offset, n);
        assert_memory_equal(rv.value, want, VALUE_BYTES);
        n++;
    }
    assert_true(n > 0);
    size_t held_bytes = v->size_bytes;
    rt_fetch_release(held);
    assert_true(atomic_load(&m->count) <= BUDGET); /* MM2: its last holder swept again */
    rt_fetch *again = NULL;
    assert_int_equal(rt_fetch_start(f->e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &again), 0);
    assert_int_equal(rt_fetch_get(again)->size_bytes, held_bytes);
    assert_memory_equal(rt_fetch_get(again)->data, copy, held_bytes);
    rt_fetch_release(again);
    free(copy);
    tu_fixture_close(f);
}

#define READERS       3
#define READS_EACH    300
#define THREAD_BUDGET 3

struct reader_arg {
    rt_engine *e;
    int64_t end;
    unsigned seed;
    int failures;
};

/* Random fetches of what was written before the readers started; a wrong value counts. */
static void *reader_main(void *p)
{
    struct reader_arg *a = p;
    for (int i = 0; i < READS_EACH; i++) {
        int64_t offset = (int64_t)(rand_r(&a->seed) % (unsigned)a->end);
        rt_fetch *fx = NULL;
        if (rt_fetch_start(a->e, TOPIC, 0, offset, 1 << 14, RT_READ_UNCOMMITTED, &fx) != 0) {
            a->failures++;
            continue;
        }
        struct rt_records it;
        struct rt_record_view rv;
        if (rt_records_init(&it, fx, offset) != 0 || rt_records_next(&it, &rv) != 0 ||
            rv.offset != offset || rv.value_len != VALUE_BYTES) {
            a->failures++;
        } else {
            char want[VALUE_BYTES];
            tu_value_of(rv.offset, want, sizeof(want));
            a->failures += memcmp(rv.value, want, VALUE_BYTES) != 0;
        }
        rt_fetch_release(fx);
    }
    return NULL;
}

/* SG8 under threads: readers map, hold and release segments at random under a budget of 3
 * while the writer rolls new ones into it; every value read is its offset's. */
static void test_concurrent_readers_and_rolls(void **state)
{
    struct tu_fixture *f = *state;
    f->o.mapped_segments_max = THREAD_BUDGET;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    int64_t end = write_segments(f, 16, NULL);
    pthread_t t[READERS];
    struct reader_arg args[READERS];
    for (int i = 0; i < READERS; i++) {
        args[i] = (struct reader_arg){.e = f->e, .end = end, .seed = 7u + (unsigned)i};
        assert_int_equal(pthread_create(&t[i], NULL, reader_main, &args[i]), 0);
    }
    (void)write_segments(f, 24, NULL); /* rolls while they read */
    int failures = 0;
    for (int i = 0; i < READERS; i++) {
        pthread_join(t[i], NULL);
        failures += args[i].failures;
    }
    struct segment_maps *m = maps_of(f->e);
    fprintf(stderr,
            "%d readers x %d fetches under budget %d: %" PRIu64 " releases, %" PRIu64
            " re-maps, %" PRIu64 " sweeps met a held segment\n",
            READERS, READS_EACH, THREAD_BUDGET, (uint64_t)atomic_load(&m->releases),
            (uint64_t)atomic_load(&m->remaps), (uint64_t)atomic_load(&m->pinned));
    assert_int_equal(failures, 0);
    assert_true(atomic_load(&m->remaps) > 0);
    assert_true(atomic_load(&m->count) <= THREAD_BUDGET);
    tu_fixture_close(f);
}

/* SG6 after SG8: a reader took its reference on a dormant partition's newest segment (sealed,
 * not mapped: a clean reopen maps nothing) and an append woke the partition before the reader
 * mapped it — the files grew into the active segment's (the log extended to capacity, the
 * indexes writable). The reader's late segment_map still maps the bytes the sealed object
 * describes, and they are the records it held. */
static void test_late_map_after_a_wake(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    int64_t end = write_segments(f, 3, NULL);
    tu_fixture_close(f);
    tu_fixture_open(f);
    struct partition *p = log_partition(engine_log(f->e), TOPIC, 0);
    assert_non_null(p);
    struct segment *old = p->active;
    assert_true(old->sealed);                /* dormant (PA11) */
    assert_false(atomic_load(&old->mapped)); /* lazy (SG6): nothing mapped yet */
    segment_ref(old);                        /* a reader's reference, not mapped yet */
    int64_t base = -1;
    assert_int_equal(tu_append_offset_batch(f->e, TOPIC, end, 1, VALUE_BYTES, &base), 0);
    assert_int_equal(base, end);
    assert_true(p->active != old); /* woken: a new object over the same, grown files */
    assert_int_equal(segment_map(old), 0);
    assert_true(old->map_bytes == old->size_bytes && old->size_bytes > 0);
    uint64_t pos = 0;
    assert_int_equal(segment_find_batch(old, old->base_offset, old->size_bytes, &pos), 0);
    assert_int_equal(pos, 0);
    assert_int_equal((int64_t)be64_of(old->map), old->base_offset);
    segment_unref(old);
    assert_true(read_all(f->e, 0, end + 1) <= MAPS_BOUND);
    tu_fixture_close(f);
    tu_expect_verify_clean(f->dir, "after the late map");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mappings_bounded_by_the_budget, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_held_bytes_survive_releases, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_readers_and_rolls, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_late_map_after_a_wake, setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
