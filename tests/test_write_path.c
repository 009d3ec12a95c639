/*
 * test_write_path.c — what a group-commit round may put into a segment and what an append from
 * outside may claim (issue 10, defects 1 and 3), tried from outside as a user or an attacker
 * would:
 *
 *   - many threads appending into one partition with small segments, so rounds straddle rolls:
 *     no segment file ever exceeds segment_size_bytes, and everything acknowledged reads back in
 *     the same process, after a reopen, and verify is clean;
 *   - the roll rule itself (partition_roll_needed) at the i32 limits no test can afford to
 *     write: 2 GiB positions and base + INT32_MAX offsets;
 *   - CRC-valid batches whose counts, offset deltas or timestamps disagree with their records,
 *     compressed with every codec or not, refused by rt_append_batch before anything is
 *     appended (nothing readable, the directory opens and verifies afterwards);
 *   - a batch already on disk whose offsets the offset index cannot hold: open reports
 *     RT_E_CORRUPT naming the file and offset instead of aborting, clean or after a crash;
 *     and a segment whose offsets are near base + INT32_MAX rolls before the next batch.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync
 * fallback (RT_TEST_IO).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "compression.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "partition.h"
#include "ringtail.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define TOPIC "w"

/* ---- helpers ------------------------------------------------------------------------------ */

static void reopen(struct tu_fixture *f)
{
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    tu_fixture_open(f);
}

/* Calls fn for every record of the partition from offset 0 to the high watermark; checks that
 * offsets are dense. Returns the number of records read. */
static int64_t read_partition(rt_engine *e, uint32_t part,
                              void (*fn)(void *ctx, const struct rt_record_view *r), void *ctx)
{
    int64_t next = 0;
    for (;;) {
        rt_fetch *fh = NULL;
        int rc = rt_fetch_start(e, TOPIC, part, next, 64 * 1024, RT_READ_UNCOMMITTED, &fh);
        if (rc)
            fprintf(stderr, "rt_fetch_start(%" PRId64 "): %s\n", next, rt_error_detail());
        assert_int_equal(rc, 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        if (v->size_bytes == 0) {
            assert_int_equal(next, v->high_watermark);
            rt_fetch_release(fh);
            return next;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fh, next), 0);
        struct rt_record_view r;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            assert_int_equal(r.offset, next);
            if (fn)
                fn(ctx, &r);
            next++;
        }
        if (rc != RT_E_END)
            fprintf(stderr, "rt_records_next at %" PRId64 ": %s\n", next, rt_error_detail());
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(fh);
    }
}

/* Every .log of the partition: the count, and the largest file size seen. */
static uint32_t segment_files(const char *dir, uint32_t part, uint64_t *largest_bytes)
{
    char *pdir = tu_path("%s/%s-%u", dir, TOPIC, part);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    uint32_t n = 0;
    *largest_bytes = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 4, ".log") != 0)
            continue;
        char *path = tu_path("%s/%s", pdir, de->d_name);
        uint64_t size = tu_file_size(path);
        if (size > *largest_bytes)
            *largest_bytes = size;
        free(path);
        n++;
    }
    closedir(d);
    free(pdir);
    return n;
}

/* ---- defect 1: a round never carries a segment past segment_size_bytes --------------------- */

enum { THREADS = 8, APPENDS_PER_THREAD = 400, RECORD_BYTES = 1000 };

struct appender {
    rt_engine *e;
    int id;
    int failures;
};

/* The value of thread `id`'s record `seq`: "<id> <seq> " padded to RECORD_BYTES. */
static void record_value(char *out, int id, int seq)
{
    memset(out, 'x', RECORD_BYTES);
    int n = snprintf(out, RECORD_BYTES, "%d %d ", id, seq);
    out[n] = 'x';
}

static void *appender_main(void *arg)
{
    struct appender *a = arg;
    char value[RECORD_BYTES];
    for (int seq = 0; seq < APPENDS_PER_THREAD; seq++) {
        record_value(value, a->id, seq);
        struct rt_record rec = {
            .key_len = -1, .value = value, .value_len = RECORD_BYTES, .timestamp_ms = 1000};
        int rc = rt_append(a->e, TOPIC, 0, &rec, 1, NULL);
        if (rc) {
            fprintf(stderr, "thread %d rt_append %d: %s\n", a->id, seq, rt_error_detail());
            a->failures++;
        }
    }
    return NULL;
}

struct seen {
    int next_seq[THREADS];
};

static void check_record(void *ctx, const struct rt_record_view *r)
{
    struct seen *s = ctx;
    assert_int_equal(r->value_len, RECORD_BYTES);
    char head[32];
    memcpy(head, r->value, sizeof(head) - 1);
    head[sizeof(head) - 1] = '\0';
    int id = -1, seq = -1;
    assert_int_equal(sscanf(head, "%d %d ", &id, &seq), 2);
    assert_true(id >= 0 && id < THREADS);
    char want[RECORD_BYTES];
    record_value(want, id, seq);
    assert_memory_equal(r->value, want, RECORD_BYTES);
    assert_int_equal(seq, s->next_seq[id]); /* each thread's records once, in its order */
    s->next_seq[id]++;
}

static void assert_all_read_back(rt_engine *e)
{
    struct seen s = {{0}};
    assert_int_equal(read_partition(e, 0, check_record, &s), THREADS * APPENDS_PER_THREAD);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(s.next_seq[i], APPENDS_PER_THREAD);
}

/* The scenario: 8 threads, one 1000-byte record per rt_append, shard_count 1, 64 KiB
 * segments, 16 KiB batches (the fixture's sizes). Rounds carry several batches, so they end
 * right at segment boundaries. */
static void test_round_never_overfills_segment(void **state)
{
    struct tu_fixture *f = *state;
    f->o.shard_count = 1;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    pthread_t th[THREADS];
    struct appender args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct appender){.e = f->e, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, appender_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    struct rt_stats st;
    rt_stats_get(f->e, &st);
    fprintf(stderr, "%" PRIu64 " batches in %" PRIu64 " rounds, %" PRIu64 " rolls\n",
            st.batches_appended, st.rounds, st.segments_rolled);
    assert_true(st.rounds < st.batches_appended); /* rounds did carry several batches */

    uint64_t largest = 0;
    uint32_t logs = segment_files(f->dir, 0, &largest);
    fprintf(stderr, "%u segments, largest %" PRIu64 " bytes\n", logs, largest);
    assert_true(logs >= (THREADS * APPENDS_PER_THREAD * RECORD_BYTES) / f->o.segment_size_bytes);
    assert_true(largest <= f->o.segment_size_bytes);

    assert_all_read_back(f->e); /* same process */
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    logs = segment_files(f->dir, 0, &largest);
    assert_true(largest <= f->o.segment_size_bytes);
    tu_expect_verify_clean(f->dir, "");
    tu_fixture_open(f);
    assert_all_read_back(f->e); /* after reopen */
}

/* ---- SH5: an append that finds its shard idle is written by the caller ------------------- */

/* One thread alone, one record per rt_append, 64 KiB segments (so rounds roll segments): under
 * sync=none and sync=always the rounds ran on the appending thread (rt_stats.rounds_inline
 * counts them: all but the few that met the shard busy with the engine's own work) and
 * everything reads back in order, before and after a reopen; under sync=interval, whose timer
 * belongs to the shard thread, none did. */
static void test_lone_appender_rounds_run_inline(void **state)
{
    struct tu_fixture *f = *state;
    const enum rt_sync_mode modes[] = {RT_SYNC_NONE, RT_SYNC_ALWAYS, RT_SYNC_INTERVAL};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        f->o.sync_mode = modes[m];
        f->o.shard_count = 1;
        tu_fixture_open(f);
        assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
        struct rt_stats before, after;
        rt_stats_get(f->e, &before);
        /* Every thread's share written by this one thread, in id order: the layout
         * assert_all_read_back expects, with one appender at a time. */
        for (int id = 0; id < THREADS; id++) {
            struct appender a = {.e = f->e, .id = id};
            appender_main(&a);
            assert_int_equal(a.failures, 0);
        }
        rt_stats_get(f->e, &after);
        uint64_t rounds = after.rounds - before.rounds;
        uint64_t inline_rounds = after.rounds_inline - before.rounds_inline;
        fprintf(stderr, "sync mode %d: %" PRIu64 " rounds, %" PRIu64 " inline, %" PRIu64 " rolls\n",
                (int)modes[m], rounds, inline_rounds, after.segments_rolled);
        assert_int_equal(after.batches_appended - before.batches_appended,
                         THREADS * APPENDS_PER_THREAD);
        assert_true(after.segments_rolled > 0);
        if (modes[m] == RT_SYNC_INTERVAL) {
            assert_int_equal(inline_rounds, 0);
        } else {
            assert_int_equal(rounds, THREADS * APPENDS_PER_THREAD); /* one append a round */
            /* All but a few: the engine's own work (its timers, a request of another engine
             * thread) may hold the shard at the moment an append arrives, which then queues. */
            assert_true(inline_rounds <= rounds);
            assert_true(inline_rounds * 100 >= rounds * 98);
        }
        assert_all_read_back(f->e);
        reopen(f);
        assert_all_read_back(f->e);
        tu_fixture_close(f);
        tu_expect_verify_clean(f->dir, "");
        tu_rmdir_free(f->dir);
        f->dir = tu_mkdtemp();
    }
}

struct producer_side {
    rt_engine *e;
    int failures;
    _Atomic int delivered;
    _Atomic int64_t last_offset;
    _Atomic int out_of_order;
};

static void on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    struct producer_side *ps = ctx;
    if (err || duplicate)
        ps->failures++;
    if (offset <= atomic_load(&ps->last_offset))
        atomic_fetch_add(&ps->out_of_order, 1);
    atomic_store(&ps->last_offset, offset);
    atomic_fetch_add(&ps->delivered, 1);
}

/* The producer as thread THREADS - 1: its records, in order, through rt_producer_send. */
static void *producer_main(void *arg)
{
    struct producer_side *ps = arg;
    rt_producer *p = NULL;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    if (rt_producer_open(ps->e, &po, &p) != 0) {
        ps->failures++;
        return NULL;
    }
    char value[RECORD_BYTES];
    for (int seq = 0; seq < APPENDS_PER_THREAD; seq++) {
        record_value(value, THREADS - 1, seq);
        struct rt_producer_message m = {.record = {.key_len = -1,
                                                   .value = value,
                                                   .value_len = RECORD_BYTES,
                                                   .timestamp_ms = 1000},
                                        .sequence = -1};
        if (rt_producer_send(p, TOPIC, 0, &m, on_delivery, ps) != 0)
            ps->failures++;
    }
    if (rt_producer_flush(p, -1) != 0)
        ps->failures++;
    if (rt_producer_close(p) != 0)
        ps->failures++;
    return NULL;
}

/* Appenders racing for one shard, some rounds run by a caller, the rest by the shard thread:
 * seven rt_append threads and one asynchronous producer (its batches may run inline on its
 * sender) into one partition, under sync=none and sync=always. Every record is there exactly
 * once and in its thread's order, offsets dense; the producer's deliveries all succeed, in
 * offset order; rounds still carry several batches (group commit holds), and inline rounds are
 * a subset of rounds. */
static void test_inline_and_shard_rounds_interleave(void **state)
{
    struct tu_fixture *f = *state;
    const enum rt_sync_mode modes[] = {RT_SYNC_NONE, RT_SYNC_ALWAYS};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        f->o.sync_mode = modes[m];
        f->o.shard_count = 1;
        tu_fixture_open(f);
        assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
        pthread_t th[THREADS];
        struct appender args[THREADS - 1];
        struct producer_side ps = {.e = f->e, .last_offset = -1};
        for (int i = 0; i < THREADS - 1; i++) {
            args[i] = (struct appender){.e = f->e, .id = i};
            assert_int_equal(pthread_create(&th[i], NULL, appender_main, &args[i]), 0);
        }
        assert_int_equal(pthread_create(&th[THREADS - 1], NULL, producer_main, &ps), 0);
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < THREADS - 1; i++)
            assert_int_equal(args[i].failures, 0);
        assert_int_equal(ps.failures, 0);
        assert_int_equal(atomic_load(&ps.delivered), APPENDS_PER_THREAD);
        assert_int_equal(atomic_load(&ps.out_of_order), 0);
        struct rt_stats st;
        rt_stats_get(f->e, &st);
        fprintf(stderr,
                "sync mode %d: %" PRIu64 " batches, %" PRIu64 " rounds, %" PRIu64 " inline\n",
                (int)modes[m], st.batches_appended, st.rounds, st.rounds_inline);
        assert_true(st.rounds_inline <= st.rounds);
        assert_true(st.rounds < st.batches_appended);
        assert_all_read_back(f->e);
        reopen(f);
        assert_all_read_back(f->e);
        tu_fixture_close(f);
        tu_expect_verify_clean(f->dir, "");
        tu_rmdir_free(f->dir);
        f->dir = tu_mkdtemp();
    }
}

/* ---- the roll rule at the i32 limits (no 2 GiB written) ---------------------------------- */

static void test_roll_rule_limits(void **state)
{
    (void)state;
    const uint64_t max = (uint64_t)INT32_MAX;
    /* An empty segment takes any batch the options allow. */
    struct partition_roll_state st = {.capacity_bytes = 64 * 1024};
    assert_false(partition_roll_needed(&st, 16 * 1024, 0));

    /* Defect 1: bytes this round already placed count as much as bytes of earlier rounds. */
    st = (struct partition_roll_state){
        .size_bytes = 40000, .round_bytes = 24000, .capacity_bytes = 64 * 1024};
    assert_false(partition_roll_needed(&st, 65536 - 64000, 0)); /* ends exactly at capacity */
    assert_true(partition_roll_needed(&st, 65536 - 64000 + 1, 0));
    st.size_bytes = 0; /* a round that opened an empty segment, then filled it */
    st.round_bytes = 65000;
    assert_true(partition_roll_needed(&st, 1000, 0));

    /* segment_size_bytes = 2^31 - 1: the last batch may end at byte INT32_MAX, not beyond. */
    st = (struct partition_roll_state){
        .size_bytes = max - 3000, .round_bytes = 2000, .capacity_bytes = max};
    assert_false(partition_roll_needed(&st, 1000, 0));
    assert_true(partition_roll_needed(&st, 1001, 0));
    /* A capacity past 2 GiB (whatever the option or mapping says) is clamped to INT32_MAX. */
    st.capacity_bytes = 4 * max;
    assert_false(partition_roll_needed(&st, 1000, 0));
    assert_true(partition_roll_needed(&st, 1001, 0));
    st.round_bytes = max; /* already past the clamp: roll, never wrap */
    assert_true(partition_roll_needed(&st, 1, 0));

    /* Offsets: the last offset of the batch stays within base + INT32_MAX (i32 relative
     * offsets in the offset index), counting this round's batches (next_offset). */
    st = (struct partition_roll_state){.size_bytes = 100,
                                       .capacity_bytes = 64 * 1024,
                                       .base_offset = 1000,
                                       .next_offset = 1000 + (int64_t)INT32_MAX - 9};
    assert_false(partition_roll_needed(&st, 100, 9)); /* last relative offset INT32_MAX */
    assert_true(partition_roll_needed(&st, 100, 10));
    st.next_offset = 1000 + (int64_t)INT32_MAX + 1; /* a segment already at the limit */
    assert_true(partition_roll_needed(&st, 100, 0));
}

/* The option itself: 2^31 - 1 is the largest segment_size_bytes accepted. */
static void test_segment_size_option_bound(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = (uint64_t)INT32_MAX + 1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_INVALID_ARGUMENT);
    assert_null(e);
    assert_non_null(strstr(rt_error_detail(), "segment_size_bytes"));
}

/* ---- defect 3: batches whose counts and offsets disagree ------------------------------------ */

/* One record as Kafka encodes it: offsetDelta and timestampDelta as given, null key, value. */
static size_t put_record(uint8_t *out, int32_t offset_delta, int64_t timestamp_delta,
                         const char *value)
{
    uint8_t body[1024];
    size_t n = 0;
    assert_true(strlen(value) < sizeof(body) - 32);
    int32_t vlen = (int32_t)strlen(value);
    body[n++] = 0; /* attributes */
    n += varlong_encode(body + n, timestamp_delta);
    n += varint_encode(body + n, offset_delta);
    n += varint_encode(body + n, -1); /* null key */
    n += varint_encode(body + n, vlen);
    memcpy(body + n, value, (size_t)vlen);
    n += (size_t)vlen;
    n += varint_encode(body + n, 0); /* no headers */
    size_t m = varint_encode(out, (int32_t)n);
    memcpy(out + m, body, n);
    return m + n;
}

/* A CRC-valid batch from a records section and the header's own claims, compressed with
 * `codec` (0 none). Returns its size. */
static size_t make_batch(uint8_t *out, size_t cap, int codec, const uint8_t *records,
                         size_t records_len, int32_t record_count, int32_t last_offset_delta,
                         int64_t max_timestamp)
{
    struct compression_buffer z = COMPRESSION_BUFFER_INIT;
    const uint8_t *section = records;
    size_t section_len = records_len;
    if (codec != BATCH_COMPRESSION_NONE) {
        assert_int_equal(compression_compress((enum batch_compression)codec, records, records_len,
                                              &z, COMPRESSION_LEVEL_DEFAULT),
                         0);
        section = z.data;
        section_len = z.len;
    }
    size_t total = BATCH_HEADER_BYTES + section_len;
    assert_true(total <= cap);
    memset(out, 0, BATCH_HEADER_BYTES);
    be32_store(out + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
    out[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    be16_store(out + BATCH_OFF_ATTRIBUTES, (uint16_t)codec);
    be32_store(out + BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)last_offset_delta);
    be64_store(out + BATCH_OFF_BASE_TIMESTAMP, 1000);
    be64_store(out + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_timestamp);
    be64_store(out + BATCH_OFF_PRODUCER_ID, UINT64_MAX);    /* -1 */
    be16_store(out + BATCH_OFF_PRODUCER_EPOCH, UINT16_MAX); /* -1 */
    be32_store(out + BATCH_OFF_BASE_SEQUENCE, UINT32_MAX);  /* -1 */
    be32_store(out + BATCH_OFF_RECORD_COUNT, (uint32_t)record_count);
    memcpy(out + BATCH_HEADER_BYTES, section, section_len);
    batch_seal_crc(out, total);
    compression_buffer_free(&z);
    return total;
}

/* Three records with the given offset deltas and timestamp deltas 0, 1, 2. */
static size_t three_records(uint8_t *out, int32_t d0, int32_t d1, int32_t d2)
{
    size_t n = put_record(out, d0, 0, "alpha");
    n += put_record(out + n, d1, 1, "beta");
    n += put_record(out + n, d2, 2, "gamma");
    return n;
}

struct liar {
    const char *what;
    int32_t record_count, last_offset_delta;
    int32_t deltas[3];
    int64_t max_timestamp;
};

static const struct liar LIARS[] = {
    {"recordCount INT32_MAX over three records", INT32_MAX, INT32_MAX - 1, {0, 1, 2}, 1002},
    {"recordCount 2 over three records", 2, 1, {0, 1, 2}, 1002},
    {"recordCount 4 over three records", 4, 3, {0, 1, 2}, 1002},
    {"offset deltas 0, 2, 3", 3, 2, {0, 2, 3}, 1002},
    {"offset deltas 0, 0, 1", 3, 2, {0, 0, 1}, 1002},
    {"offset deltas 1, 2, 3 (a gap before the first)", 3, 2, {1, 2, 3}, 1002},
    {"lastOffsetDelta 5 with three records", 3, 5, {0, 1, 2}, 1002},
};

static const int CODECS[] = {BATCH_COMPRESSION_NONE, BATCH_COMPRESSION_GZIP,
                             BATCH_COMPRESSION_SNAPPY, BATCH_COMPRESSION_LZ4,
                             BATCH_COMPRESSION_ZSTD};

static void test_append_batch_refuses_disagreeing_counts(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    uint8_t records[1024], batch[4096];
    int64_t expect_hw = 0;
    for (size_t c = 0; c < sizeof(CODECS) / sizeof(CODECS[0]); c++) {
        for (size_t i = 0; i < sizeof(LIARS) / sizeof(LIARS[0]); i++) {
            const struct liar *l = &LIARS[i];
            size_t rlen = three_records(records, l->deltas[0], l->deltas[1], l->deltas[2]);
            size_t len = make_batch(batch, sizeof(batch), CODECS[c], records, rlen, l->record_count,
                                    l->last_offset_delta, l->max_timestamp);
            int64_t base = -7;
            int rc = rt_append_batch(f->e, TOPIC, 0, batch, len, &base);
            if (rc != RT_E_CORRUPT)
                fprintf(stderr, "codec %d, %s: accepted (rc %d)\n", CODECS[c], l->what, rc);
            assert_int_equal(rc, RT_E_CORRUPT);
            assert_true(strlen(rt_error_detail()) > 0);
            assert_int_equal(base, -7);
        }
        /* The honest batch with the same codec goes in and reads back. */
        size_t rlen = three_records(records, 0, 1, 2);
        size_t len = make_batch(batch, sizeof(batch), CODECS[c], records, rlen, 3, 2, 1002);
        int64_t base = -1;
        int rc = rt_append_batch(f->e, TOPIC, 0, batch, len, &base);
        if (rc)
            fprintf(stderr, "codec %d honest batch: %s\n", CODECS[c], rt_error_detail());
        assert_int_equal(rc, 0);
        assert_int_equal(base, expect_hw);
        expect_hw += 3;
    }
    /* Only the honest batches were appended: offsets dense, nothing of the liars readable. */
    assert_int_equal(read_partition(f->e, 0, NULL, NULL), expect_hw);
    reopen(f);
    assert_int_equal(read_partition(f->e, 0, NULL, NULL), expect_hw);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    tu_expect_verify_clean(f->dir, "");
}

/* ---- Kafka's LogValidator: maxTimestamp recomputed, LogAppendTime (batch.c V16-V17) -------- */

struct ts_seen {
    int64_t n;
    int64_t ts[128];
};

static void collect_ts(void *ctx, const struct rt_record_view *r)
{
    struct ts_seen *s = ctx;
    assert_true(s->n < 128);
    s->ts[s->n++] = r->timestamp_ms;
}

/* The stored header of the batch holding `offset` (partition 0): attributes and maxTimestamp. */
static void stored_header(rt_engine *e, int64_t offset, int16_t *attributes, int64_t *max_ts)
{
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, offset, 1, RT_READ_UNCOMMITTED, &fh), 0);
    const struct rt_fetch_view *v = rt_fetch_get(fh);
    assert_true(v->size_bytes >= BATCH_HEADER_BYTES);
    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_header_parse(v->data, v->size_bytes, &h, &why), 0);
    assert_true(offset >= h.base_offset && offset <= batch_last_offset(&h));
    /* The stored CRC holds: a rewritten header was sealed again. */
    assert_int_equal(batch_validate(v->data, (size_t)h.length + 12, 0, NULL, &why), 0);
    *attributes = h.attributes;
    *max_ts = h.max_timestamp;
    rt_fetch_release(fh);
}

/* V16-V17 under CreateTime: a batch whose maxTimestamp is -1, understated or overstated is
 * accepted (Kafka's LogValidator) and stored with maxTimestamp = its records' max (1002), for
 * every codec; a batch already right is not rewritten (its bytes, CRC included, are what the
 * caller passed). The time index is fed the true max: a lookup of 1002 finds the batch. */
static void test_append_batch_recomputes_max_timestamp(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    uint8_t records[1024], batch[4096], copy[4096];
    const int64_t claims[] = {-1, 1001, 1000, 0, 5000, 1002};
    int64_t next = 0;
    for (size_t c = 0; c < ARRAY_LEN(CODECS); c++) {
        for (size_t i = 0; i < ARRAY_LEN(claims); i++) {
            size_t rlen = three_records(records, 0, 1, 2);
            size_t len =
                make_batch(batch, sizeof(batch), CODECS[c], records, rlen, 3, 2, claims[i]);
            memcpy(copy, batch, len);
            int64_t base = -7;
            int rc = rt_append_batch(f->e, TOPIC, 0, batch, len, &base);
            if (rc)
                fprintf(stderr, "codec %d max %" PRId64 ": %s\n", CODECS[c], claims[i],
                        rt_error_detail());
            assert_int_equal(rc, 0);
            assert_int_equal(base, next);
            /* In place: bytes 8.. are the caller's unless the header had to change. */
            if (claims[i] == 1002)
                assert_memory_equal(batch + 8, copy + 8, len - 8);
            else
                assert_int_equal(be64_of(batch + BATCH_OFF_MAX_TIMESTAMP), 1002);
            int16_t attrs = -1;
            int64_t max_ts = -7;
            stored_header(f->e, next, &attrs, &max_ts);
            assert_int_equal(max_ts, 1002);
            assert_int_equal(attrs, CODECS[c]);
            next += 3;
        }
    }
    int64_t found = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, 1002, RT_READ_UNCOMMITTED, &found), 0);
    assert_int_equal(found, 2); /* the first batch's third record */
    struct ts_seen seen = {0};
    assert_int_equal(read_partition(f->e, 0, collect_ts, &seen), next);
    for (int64_t k = 0; k < seen.n; k++)
        assert_int_equal(seen.ts[k], 1000 + k % 3);
    reopen(f);
    assert_int_equal(read_partition(f->e, 0, NULL, NULL), next);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    tu_expect_verify_clean(f->dir, "");
}

/* V17 under LogAppendTime (rt_options.message_timestamp_type, Kafka's
 * message.timestamp.type): every batch — rt_append_batch (any codec, any claimed max),
 * rt_append, rt_producer — is stored with attribute bit 3 set and maxTimestamp = the engine's
 * clock at the
 * append, and its records read back with that time. */
static void test_log_append_time(void **state)
{
    struct tu_fixture *f = *state;
    f->o.message_timestamp_type = RT_TIMESTAMP_LOG_APPEND_TIME;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    uint8_t records[1024], batch[4096];
    int64_t next = 0;
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    int64_t before = (int64_t)t0.tv_sec * 1000 + t0.tv_nsec / 1000000;
    for (size_t c = 0; c < ARRAY_LEN(CODECS); c++) {
        size_t rlen = three_records(records, 0, 1, 2);
        size_t len = make_batch(batch, sizeof(batch), CODECS[c], records, rlen, 3, 2, -1);
        int64_t base = -7;
        assert_int_equal(rt_append_batch(f->e, TOPIC, 0, batch, len, &base), 0);
        assert_int_equal(base, next);
        next += 3;
    }
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = 7};
    int64_t base = -7;
    assert_int_equal(rt_append(f->e, TOPIC, 0, &r, 1, &base), 0);
    assert_int_equal(base, next);
    next += 1;
    /* An rt_producer's batch (engine/client/producer.c) too. */
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    rt_producer *prod = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &prod), 0);
    struct rt_producer_message pm = {
        .record = {.key_len = -1, .value = "p", .value_len = 1, .timestamp_ms = 9}, .sequence = -1};
    assert_int_equal(rt_producer_send(prod, TOPIC, 0, &pm, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(prod, 10000), 0);
    assert_int_equal(rt_producer_close(prod), 0);
    next += 1;
    struct timespec t1;
    clock_gettime(CLOCK_REALTIME, &t1);
    int64_t after = (int64_t)t1.tv_sec * 1000 + t1.tv_nsec / 1000000;
    const int64_t firsts[] = {0, 3, 6, 9, 12, 15, 16}; /* five codecs, rt_append, rt_producer */
    for (size_t i = 0; i < ARRAY_LEN(firsts); i++) {
        int64_t o = firsts[i];
        int16_t attrs = 0;
        int64_t max_ts = -7;
        stored_header(f->e, o, &attrs, &max_ts);
        assert_true(attrs & BATCH_ATTR_LOG_APPEND_TIME);
        assert_true(max_ts >= before && max_ts <= after);
    }
    struct ts_seen seen = {0};
    assert_int_equal(read_partition(f->e, 0, collect_ts, &seen), next);
    for (int64_t k = 0; k < seen.n; k++)
        assert_true(seen.ts[k] >= before && seen.ts[k] <= after);
    /* An unknown timestamp type is refused at open. */
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    tu_expect_verify_clean(f->dir, "");
    struct rt_options bad;
    rt_options_init(&bad);
    bad.message_timestamp_type = (enum rt_timestamp_type)2;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &bad, &e), RT_E_INVALID_ARGUMENT);
    assert_null(e);
}

/* ---- an index-overflowing batch already on disk ------------------------------------------ */

/* Writes into the cleanly closed, empty newest segment of partition 0 what an unvalidated
 * writer could have left: a compressed batch claiming INT32_MAX records (offsets 0 ..
 * INT32_MAX - 1) and, when `overflow`, a two-record batch after it whose last offset is
 * INT32_MAX + 1 — one past what an i32 relative offset holds. Returns the log's path. */
static char *plant_liar(struct tu_fixture *f, bool overflow)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    char *log = tu_path("%s/%s-0/%020d.log", f->dir, TOPIC, 0);
    assert_int_equal(tu_file_size(log), 0);
    /* Values that do not compress, so the liar is longer than index_interval_bytes and the
     * batch after it is due an offset-index entry. */
    char noise[3][400];
    uint32_t x = 2463534242u;
    for (int r = 0; r < 3; r++) {
        for (size_t i = 0; i + 1 < sizeof(noise[r]); i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            noise[r][i] = (char)('!' + x % 90);
        }
        noise[r][sizeof(noise[r]) - 1] = '\0';
    }
    uint8_t records[2048], a[4096], b[4096];
    size_t rlen = put_record(records, 0, 0, noise[0]);
    rlen += put_record(records + rlen, 1, 1, noise[1]);
    rlen += put_record(records + rlen, 2, 2, noise[2]);
    size_t alen = make_batch(a, sizeof(a), BATCH_COMPRESSION_ZSTD, records, rlen, INT32_MAX,
                             INT32_MAX - 1, 1002);
    size_t blen = 0;
    if (overflow) {
        size_t n = put_record(records, 0, 0, "one");
        n += put_record(records + n, 1, 0, "two");
        blen = make_batch(b, sizeof(b), BATCH_COMPRESSION_NONE, records, n, 2, 1, 1000);
        be64_store(b + BATCH_OFF_BASE_OFFSET, (uint64_t)INT32_MAX); /* outside the CRC */
    }
    int fd = open(log, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_true(alen > f->o.index_interval_bytes);
    assert_int_equal(write(fd, a, alen), (ssize_t)alen);
    if (blen)
        assert_int_equal(write(fd, b, blen), (ssize_t)blen);
    assert_int_equal(close(fd), 0);
    return log;
}

static void assert_open_corrupt_naming(struct tu_fixture *f, const char *log)
{
    rt_engine *e = NULL;
    int rc = rt_open(f->dir, &f->o, &e);
    if (rc != RT_E_CORRUPT)
        fprintf(stderr, "rt_open: rc %d: %s\n", rc, rt_error_detail());
    assert_int_equal(rc, RT_E_CORRUPT);
    assert_null(e);
    const char *detail = rt_error_detail();
    fprintf(stderr, "rt_open: %s\n", detail);
    assert_non_null(strstr(detail, strrchr(log, '/') + 1));
    assert_non_null(strstr(detail, "offset "));
}

static void test_open_reports_index_overflow_clean(void **state)
{
    struct tu_fixture *f = *state;
    char *log = plant_liar(f, true);
    assert_open_corrupt_naming(f, log);
    assert_open_corrupt_naming(f, log); /* every open says the same; nothing was changed */
    free(log);
}

static void test_open_reports_index_overflow_after_crash(void **state)
{
    struct tu_fixture *f = *state;
    char *log = plant_liar(f, true);
    char *marker = tu_path("%s/.clean_shutdown", f->dir);
    assert_int_equal(unlink(marker), 0); /* as after a crash: open scans the newest segment */
    free(marker);
    assert_open_corrupt_naming(f, log);
    assert_open_corrupt_naming(f, log);
    free(log);
}

/* A segment whose offsets already reach base + INT32_MAX - 1: the next batch goes to a new
 * segment (roll first), so no relative offset overflows and reopen works. */
static void test_roll_before_relative_offset_overflows(void **state)
{
    struct tu_fixture *f = *state;
    char *log = plant_liar(f, false);
    tu_fixture_open(f);
    struct rt_record recs[2] = {
        {.key_len = -1, .value = "one", .value_len = 3, .timestamp_ms = 1000},
        {.key_len = -1, .value = "two", .value_len = 3, .timestamp_ms = 1000},
    };
    int64_t base = -1;
    int rc = rt_append(f->e, TOPIC, 0, recs, 2, &base);
    if (rc)
        fprintf(stderr, "rt_append: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    assert_int_equal(base, INT32_MAX);
    char *next = tu_path("%s/%s-0/%020" PRId64 ".log", f->dir, TOPIC, (int64_t)INT32_MAX);
    assert_true(fs_exists_for_test(next)); /* the batch opened a new segment */
    reopen(f);
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                     0);
    assert_int_equal(hw, (int64_t)INT32_MAX + 2);
    free(next);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_never_overfills_segment, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lone_appender_rounds_run_inline, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_inline_and_shard_rounds_interleave, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test(test_roll_rule_limits),
        cmocka_unit_test_setup_teardown(test_segment_size_option_bound, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_append_batch_refuses_disagreeing_counts,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_append_batch_recomputes_max_timestamp,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_log_append_time, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_open_reports_index_overflow_clean, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_open_reports_index_overflow_after_crash,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_roll_before_relative_offset_overflows,
                                        tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
