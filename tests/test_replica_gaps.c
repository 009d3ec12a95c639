/*
 * test_replica_gaps.c — a follower copying a compacted leader's log, and a led partition refusing
 * replica writes (issue 24; RL8 and RL9 in engine/log/partition.h, docs/format.md A.10 "Replica
 * appends").
 *
 * What it pins: a leader whose log the cleaner compacted (batches dropped, so base offsets skip;
 * batches rewritten with records missing inside them) is copied by a follower through replica
 * fetches and rt_partition_append_replica, gaps included, and the follower's batch stream is
 * byte for byte the leader's (RL8); the follower's copy passes rt_verify, reopens cleanly and
 * after a crash (its active segment scanned), and keeps taking the leader's later batches; a
 * replica batch below the log end, or below its predecessor in the same call, is still refused
 * (RL3, RL8); a power loss at any step of a replica append with gaps leaves nothing, the first
 * batch or both, each as the leader wrote it, in a log an open and verify accept (RL8: the
 * cleaned_end that allows the gap is durable before the batch). A user partition this engine
 * was made leader of (rt_partition_become_leader) refuses replica appends, truncations and
 * restarts until it resigns (RL9).
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
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
#include <time.h>

#include "batch.h"
#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC     "cg"
#define BATCHES   60
#define PER_BATCH 3

static void options(struct rt_options *o)
{
    tu_options_small(o, 4096, 1024, 256); /* a segment holds ~10 batches: several sealed ones */
    o->sync_mode = RT_SYNC_ALWAYS;        /* the copied "crash" image holds every append */
}

static rt_engine *open_dir(const char *dir)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

static void create_compacted(rt_engine *e)
{
    struct rt_topic_config c[] = {{"cleanup.policy", "compact"}};
    assert_int_equal(rt_topic_create_with_configs(e, TOPIC, 1, c, 1), 0);
}

/* `n` batches of PER_BATCH keyed records: every third batch holds only keys the next batches
 * supersede (the cleaner drops it whole: a gap between batches), the others one key of their own
 * first (the cleaner rewrites them without their last records: a gap inside the batch). */
static void append_keyed(rt_engine *e, int first, int n)
{
    for (int b = first; b < first + n; b++) {
        struct rt_record r[PER_BATCH];
        char keys[PER_BATCH][16], vals[PER_BATCH][64];
        for (int i = 0; i < PER_BATCH; i++) {
            if (i == 0 && b % 3 != 2)
                snprintf(keys[i], sizeof keys[i], "u%d", b); /* never superseded */
            else
                snprintf(keys[i], sizeof keys[i], "s%d", i); /* superseded by the next batch */
            snprintf(vals[i], sizeof vals[i], "value-of-batch-%d-record-%d-xxxxxxxxxxxxxxxxxxxx", b,
                     i);
            r[i] = (struct rt_record){.key = keys[i],
                                      .key_len = (int32_t)strlen(keys[i]),
                                      .value = vals[i],
                                      .value_len = (int32_t)strlen(vals[i]),
                                      .timestamp_ms = 1000000 + b};
        }
        assert_int_equal(rt_append(e, TOPIC, 0, r, PER_BATCH, NULL), 0);
    }
}

static int64_t log_end(rt_engine *e)
{
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    return end;
}

/* The partition's batch stream from offset `from` (a batch boundary) to its log end, as replica
 * fetches return it. */
static uint8_t *stream(rt_engine *e, int64_t from, size_t *len_out)
{
    int64_t end = log_end(e), at = from;
    size_t len = 0, cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    while (at < end) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        assert_true(v->size_bytes > 0);
        size_t pos = 0;
        while (pos < v->size_bytes) {
            struct batch_header h;
            const char *why = NULL;
            int64_t size = batch_size_at(v->data + pos, v->size_bytes - pos, &why);
            assert_true(size > 0);
            assert_int_equal(batch_header_parse(v->data + pos, (size_t)size, &h, &why), 0);
            if (len + (size_t)size > cap) {
                cap = 2 * (len + (size_t)size);
                buf = realloc(buf, cap);
                assert_non_null(buf);
            }
            memcpy(buf + len, v->data + pos, (size_t)size);
            len += (size_t)size;
            pos += (size_t)size;
            at = batch_last_offset(&h) + 1;
        }
        rt_fetch_release(f);
    }
    *len_out = len;
    return buf;
}

/* What b holds from `from` on is byte for byte what a holds there. */
static void expect_same_stream(rt_engine *a, rt_engine *b, int64_t from)
{
    assert_int_equal(log_end(a), log_end(b));
    size_t la = 0, lb = 0;
    uint8_t *sa = stream(a, from, &la);
    uint8_t *sb = stream(b, from, &lb);
    assert_true(la > 0);
    if (la != lb || memcmp(sa, sb, la) != 0)
        fail_msg("the follower's batches differ from the leader's (%zu and %zu bytes)", la, lb);
    free(sa);
    free(sb);
}

/* The follower's fetcher: replica fetches from the leader at the follower's log end, appended as
 * they are, until the follower's log end is the leader's. Returns how many fetched batches began
 * past the end of the one before them (or past the follower's log end): the gaps copied;
 * *partial_out (may be NULL): how many had records missing inside them. */
static int replicate(rt_engine *leader, rt_engine *follower, size_t max_bytes, int *partial_out)
{
    int gaps = 0, partial = 0;
    int64_t to = log_end(leader), at = log_end(follower);
    while (at < to) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(leader, TOPIC, 0, at, max_bytes, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        assert_true(v->size_bytes > 0);
        int64_t prev = at;
        for (size_t pos = 0; pos < v->size_bytes;) {
            struct batch_header h;
            const char *why = NULL;
            int64_t size = batch_size_at(v->data + pos, v->size_bytes - pos, &why);
            if (size < 0 || (size_t)size > v->size_bytes - pos)
                break; /* a trailing partial batch */
            assert_int_equal(batch_header_parse(v->data + pos, (size_t)size, &h, &why), 0);
            gaps += h.base_offset > prev;
            partial += h.record_count < h.last_offset_delta + 1; /* rewritten by the cleaner */
            prev = batch_last_offset(&h) + 1;
            pos += (size_t)size;
        }
        int64_t end = -1;
        int rc = rt_partition_append_replica(follower, TOPIC, 0, v->data, v->size_bytes, &end);
        if (rc)
            fail_msg("append_replica at %" PRId64 ": %s", at, rt_error_detail());
        assert_true(end > at);
        at = end;
        rt_fetch_release(f);
    }
    assert_int_equal(at, to);
    if (partial_out)
        *partial_out = partial;
    return gaps;
}

/* RL8: a compacted leader's log, gaps and rewritten batches included, copied exactly; the copy
 * verifies, reopens (cleanly and after a crash) and keeps following. */
static void test_follower_copies_a_compacted_log(void **state)
{
    (void)state;
    rt_test_cleaner_background_set(false); /* only this test's rt_topic_compact cleans */
    char *da = tu_mkdtemp(), *db = tu_mkdtemp(), *dc = tu_mkdtemp();
    rt_engine *a = open_dir(da), *b = open_dir(db);
    create_compacted(a);
    create_compacted(b);
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 1), 0);
    append_keyed(a, 0, BATCHES);
    /* The follower copies the first few batches before it goes down. */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 0, 600, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    int64_t end = -1;
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data, v->size_bytes, &end), 0);
    rt_fetch_release(f);
    assert_true(end > 0);
    /* The leader's cleaner runs while the follower is behind (what the follower copied before
     * stays as it was: from `end` on, its log is the leader's). */
    assert_int_equal(rt_topic_compact(a, TOPIC), 0);
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 2), 0);
    append_keyed(a, BATCHES, 5);
    /* RL8: the follower copies the gaps (small fetches, and then large ones). */
    int partial = 0;
    int gaps = replicate(a, b, 700, &partial);
    /* The premise: the leader's log skips offsets, between batches and inside them. */
    assert_true(gaps >= 2);
    assert_true(partial >= 1);
    expect_same_stream(a, b, end);
    /* A crash image of the follower (its newest segment is scanned at open). */
    assert_int_equal(tu_system("cp -a %s/. %s/", db, dc), 0);
    assert_int_equal(rt_close(b), 0);
    tu_expect_verify_clean(db, "the follower's copy");
    b = open_dir(db);
    expect_same_stream(a, b, end);
    rt_engine *c = open_dir(dc);
    expect_same_stream(a, c, end);
    assert_int_equal(rt_close(c), 0);
    /* Later batches, and a second clean on the leader, still follow the gaps (from where the
     * follower was: the leader's clean rewrote what the follower already holds, and each
     * replica's log below that is its own, as in Kafka). */
    append_keyed(a, BATCHES + 5, 20);
    assert_int_equal(rt_topic_compact(a, TOPIC), 0);
    append_keyed(a, BATCHES + 25, 3);
    int64_t end2 = log_end(b);
    replicate(a, b, 1 << 20, NULL);
    expect_same_stream(a, b, end2);
    assert_int_equal(rt_close(b), 0);
    tu_expect_verify_clean(db, "the follower's copy after a second clean");
    b = open_dir(db);
    expect_same_stream(a, b, end2);
    /* The follower's own cleaner over a log with copied gaps (RL8: cleaned_end raised). */
    int64_t b_end = log_end(b);
    assert_int_equal(rt_topic_compact(b, TOPIC), 0);
    assert_int_equal(log_end(b), b_end);
    assert_int_equal(rt_close(b), 0);
    tu_expect_verify_clean(db, "the follower's copy compacted by its own cleaner");
    b = open_dir(db);
    assert_int_equal(log_end(b), b_end);
    assert_int_equal(rt_close(b), 0);
    assert_int_equal(rt_close(a), 0);
    rt_test_cleaner_background_set(true);
    tu_rmdir_free(da);
    tu_rmdir_free(db);
    tu_rmdir_free(dc);
}

/* RL3, RL8: a gap is allowed, going back is not — below the log end, or below the previous
 * batch of the same call; nothing of a refused call before the refusal is lost. */
static void test_replica_offsets_only_grow(void **state)
{
    (void)state;
    char *da = tu_mkdtemp(), *db = tu_mkdtemp();
    rt_engine *a = open_dir(da), *b = open_dir(db);
    assert_int_equal(rt_topic_create(a, TOPIC, 1), 0);
    assert_int_equal(rt_topic_create(b, TOPIC, 1), 0);
    append_keyed(a, 0, 4); /* offsets 0..11, one batch per 3 */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 0, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    size_t one = (size_t)batch_size_at(v->data, v->size_bytes, NULL);
    assert_int_equal(one * 4, v->size_bytes);
    /* Batches 1 and 0, in that order: the second goes back. */
    uint8_t *swapped = malloc(2 * one);
    assert_non_null(swapped);
    memcpy(swapped, v->data + one, one);
    memcpy(swapped + one, v->data, one);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, swapped, 2 * one, NULL),
                     RT_E_CORRUPT);
    assert_int_equal(log_end(b), 0);
    /* Batch 1 alone (a gap of 3 offsets) is taken; then batch 0 is below the log end. */
    int64_t end = -1;
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data + one, one, &end), 0);
    assert_int_equal(end, 6);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data, one, NULL),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data + one, one, NULL),
                     RT_E_INVALID_ARGUMENT);
    /* Batch 3 (another gap) then reopen: both gaps are what the open finds. */
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data + 3 * one, one, &end), 0);
    assert_int_equal(end, 12);
    rt_fetch_release(f);
    free(swapped);
    assert_int_equal(rt_close(b), 0);
    tu_expect_verify_clean(db, "a follower's log with gaps");
    b = open_dir(db);
    assert_int_equal(log_end(b), 12);
    assert_int_equal(rt_close(b), 0);
    assert_int_equal(rt_close(a), 0);
    tu_rmdir_free(da);
    tu_rmdir_free(db);
}

/* RL9: once the engine leads a user partition, a replica append, a truncation and a restart are
 * refused until it resigns — the fetcher's "still following" check and its append can no longer
 * be split by a role change. */
static void test_led_partition_refuses_replica_writes(void **state)
{
    (void)state;
    char *da = tu_mkdtemp(), *db = tu_mkdtemp();
    rt_engine *a = open_dir(da), *b = open_dir(db);
    assert_int_equal(rt_topic_create(a, TOPIC, 1), 0);
    assert_int_equal(rt_topic_create(b, TOPIC, 1), 0);
    append_keyed(a, 0, 2);
    int64_t hw = -1; /* a follower's held high watermark (RL5), so it may truncate */
    assert_int_equal(rt_partition_set_high_watermark(b, TOPIC, 0, 0, &hw), 0);
    assert_int_equal(hw, 0);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 0, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    size_t one = (size_t)batch_size_at(v->data, v->size_bytes, NULL);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data, one, NULL), 0);
    /* B is made leader: the second batch, fetched while it followed, is refused. */
    assert_int_equal(rt_partition_become_leader(b, TOPIC, 0), 0);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data + one, one, NULL),
                     RT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(rt_error_detail(), "rt_partition_resign first"));
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, 0, NULL), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_partition_restart_at(b, TOPIC, 0, 100), RT_E_INVALID_ARGUMENT);
    /* Its own appends go on. */
    append_keyed(b, 2, 1);
    /* Resigned, it follows again: a truncation and the leader's batch are taken. */
    assert_int_equal(rt_partition_resign(b, TOPIC, 0), 0);
    int64_t cut = -1;
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, 3, &cut), 0);
    assert_int_equal(cut, 3);
    int64_t end = -1;
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data + one, one, &end), 0);
    assert_int_equal(end, 6);
    rt_fetch_release(f);
    /* The role is not stored: an open follows (takes replica appends) again. */
    assert_int_equal(rt_partition_become_leader(b, TOPIC, 0), 0);
    assert_int_equal(rt_close(b), 0);
    b = open_dir(db);
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, INT64_MAX, NULL), 0);
    assert_int_equal(rt_close(b), 0);
    assert_int_equal(rt_close(a), 0);
    tu_rmdir_free(da);
    tu_rmdir_free(db);
}

/* ---- RL8 against the follower's own cleaner: neither store lowers the other's ---- */

struct racer {
    rt_engine *e;
    const uint8_t *bytes;
    size_t len;
    int rc;
    pthread_t th;
    bool started;
};

static struct racer racer;

static void *racer_main(void *arg)
{
    struct racer *r = arg;
    r->rc = rt_partition_append_replica(r->e, TOPIC, 0, r->bytes, r->len, NULL);
    return NULL;
}

/* At the settle's step 5 (the cleaner's thread, between its directory fsync and its checkpoint
 * store): a replica append with a gap starts beside it and is given time to store its own
 * checkpoint. With RL8's lock it waits for the settle and raises what the settle stored;
 * without it, the settle's older cleaned_end would overwrite the gap's. */
static void race_hook(int step, void *ctx)
{
    (void)ctx;
    if (step != 5 || racer.started)
        return;
    racer.started = true;
    assert_int_equal(pthread_create(&racer.th, NULL, racer_main, &racer), 0);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void test_gap_beside_the_followers_own_clean(void **state)
{
    (void)state;
    rt_test_cleaner_background_set(false);
    char *da = tu_mkdtemp(), *db = tu_mkdtemp();
    rt_engine *a = open_dir(da), *b = open_dir(db);
    create_compacted(a);
    create_compacted(b);
    append_keyed(a, 0, 40); /* dense: the follower's clean will have work */
    replicate(a, b, 1 << 20, NULL);
    int64_t end = log_end(b);
    append_keyed(a, 40, 2); /* the follower takes only the second: a gap of 3 */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, end + 3, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    racer = (struct racer){.e = b, .bytes = v->data, .len = v->size_bytes, .rc = -1};
    rt_test_cleaner_hook_set(race_hook, NULL);
    assert_int_equal(rt_topic_compact(b, TOPIC), 0);
    rt_test_cleaner_hook_set(NULL, NULL);
    assert_true(racer.started); /* the premise: the follower's clean swapped and settled */
    assert_int_equal(pthread_join(racer.th, NULL), 0);
    assert_int_equal(racer.rc, 0);
    rt_fetch_release(f);
    assert_int_equal(log_end(b), end + 6);
    assert_int_equal(rt_close(b), 0);
    tu_expect_verify_clean(db, "a gap stored beside the follower's settle");
    b = open_dir(db); /* the gap's segment is one that may skip offsets (RL8, CL1) */
    assert_int_equal(log_end(b), end + 6);
    assert_int_equal(rt_close(b), 0);
    assert_int_equal(rt_close(a), 0);
    rt_test_cleaner_background_set(true);
    tu_rmdir_free(da);
    tu_rmdir_free(db);
}

/* ---- RL8 under power loss: the gap's cleaned_end is durable before the batch ---- */

static uint8_t sweep_bytes[4096]; /* the leader's batches 1 and 3 (bases 3 and 9): two gaps */
static size_t sweep_len;
static size_t sweep_first; /* the size of batch 1 */

static void sweep_prepare(rt_engine *e)
{
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
}

static int sweep_act(rt_engine *e)
{
    return rt_partition_append_replica(e, TOPIC, 0, sweep_bytes, sweep_len, NULL);
}

/* What a power loss may leave: nothing, batch 1, or both — each as the leader wrote it, an
 * open that takes the gaps (RL8), and a log that goes on taking the leader's batches. */
static void sweep_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    (void)dir;
    int64_t end = -1;
    assert_int_equal(rt_partition_truncate(e, TOPIC, 0, INT64_MAX, &end), 0); /* the log end */
    if (end != 0 && end != 6 && end != 12)
        fail_msg("%s: the log ends at %" PRId64 ", not 0, 6 or 12", what, end);
    if (acked && end != 12)
        fail_msg("%s: an acknowledged replica append came back short (%" PRId64 ")", what, end);
    if (end > 0) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        size_t want = end == 6 ? sweep_first : sweep_len;
        if (v->size_bytes != want || memcmp(v->data, sweep_bytes, want) != 0)
            fail_msg("%s: the follower's bytes are not the leader's (%zu, want %zu)", what,
                     v->size_bytes, want);
        rt_fetch_release(f);
    }
    /* It goes on: the rest of the call again (a duplicate of what landed is refused). */
    const uint8_t *rest = end == 0 ? sweep_bytes : sweep_bytes + sweep_first;
    size_t rest_len = end == 0 ? sweep_len : sweep_len - sweep_first;
    if (end < 12) {
        int64_t after = -1;
        assert_int_equal(rt_partition_append_replica(e, TOPIC, 0, rest, rest_len, &after), 0);
        assert_int_equal(after, 12);
    }
}

static void sweep_options(struct rt_options *o)
{
    options(o);
}

static void sweep_after(const char *dir, const char *what)
{
    tu_expect_verify_clean(dir, what);
}

static const struct tu_power_sweep sweep = {.options = sweep_options,
                                            .runs_max = 80,
                                            .what = "of a replica append with gaps",
                                            .prepare = sweep_prepare,
                                            .act = sweep_act,
                                            .check = sweep_check,
                                            .after = sweep_after};

static void sweep_setup(void)
{
    char *d = tu_mkdtemp();
    rt_engine *a = open_dir(d);
    assert_int_equal(rt_topic_create(a, TOPIC, 1), 0);
    append_keyed(a, 0, 4); /* batches at 0, 3, 6, 9 */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 0, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    size_t one = (size_t)batch_size_at(v->data, v->size_bytes, NULL);
    assert_int_equal(v->size_bytes, 4 * one);
    assert_true(2 * one <= sizeof(sweep_bytes));
    memcpy(sweep_bytes, v->data + one, one);
    memcpy(sweep_bytes + one, v->data + 3 * one, one);
    sweep_first = one;
    sweep_len = 2 * one;
    rt_fetch_release(f);
    assert_int_equal(rt_close(a), 0);
    tu_rmdir_free(d);
}

static void test_gap_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    sweep_setup();
    tu_power_sweep(&sweep, IO_OP_DIR_ENTRY);
}

static void test_gap_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    sweep_setup();
    tu_power_sweep(&sweep, IO_OP_FDATASYNC_DIRECT);
}

static void test_gap_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    sweep_setup();
    tu_power_sweep(&sweep, IO_OP_DIR_FSYNC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_copies_a_compacted_log),
        cmocka_unit_test(test_replica_offsets_only_grow),
        cmocka_unit_test(test_led_partition_refuses_replica_writes),
        cmocka_unit_test(test_gap_beside_the_followers_own_clean),
        cmocka_unit_test(test_gap_power_loss_at_every_directory_change),
        cmocka_unit_test(test_gap_power_loss_at_every_direct_fdatasync),
        cmocka_unit_test(test_gap_power_loss_at_every_directory_fsync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
