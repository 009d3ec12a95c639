/*
 * test_producer.c — exactly-once appends: every producer sequence rule (PS1-PS7 of
 * engine/log/producer_state.c) through the engine, fencing by epoch, expiry and the table bound,
 * snapshots (clean close, unclean replay, a corrupt snapshot rejected), a property test that
 * snapshot-plus-replay equals a full replay over random histories, the embedded producer API,
 * and a crash test: a child sends under a producer name and is SIGKILLed at a random point; the
 * parent reopens under the same name, resends everything, and every record is stored once.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 * RT_TEST_CRASH_ITERATIONS sets the crash test's iterations (default 8).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "engine.h"
#include "fsutil.h"
#include "murmur2.h"
#include "helpers/test_util.h"
#include "ringtail.h"

/* Appends a producer batch of n records with sequences seq..seq+n-1; returns rt code, the base
 * offset and whether it was a duplicate. */
static int pappend(rt_engine *e, const char *topic, uint32_t part, int64_t pid, int16_t epoch,
                   int32_t seq, int n, int64_t ts, int64_t *base, bool *dup)
{
    uint8_t buf[8192];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof(buf), 0, pid, epoch, seq), 0);
    for (int i = 0; i < n; i++) {
        char v[32];
        snprintf(v, sizeof(v), "p%" PRId64 "e%ds%d", pid, epoch, seq + i);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = ts};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_header_parse(buf, len, &h, &why), 0);
    struct partition *p = log_partition(engine_log(e), topic, part);
    assert_non_null(p);
    int64_t b0 = -2;
    bool d = false;
    int rc = log_append(engine_log(e), p, buf, len, &h, &b0, &d);
    if (base)
        *base = b0;
    if (dup)
        *dup = d;
    return rc;
}

static int64_t hw(rt_engine *e, const char *topic, uint32_t part)
{
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &off),
                     0);
    return off;
}

/* ---- the rules ---- */

static void test_sequence_rules(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "s", 1), 0);
    int64_t base;
    bool dup;
    /* PS4: an unknown producer must start at 0. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 5, 1, 1, &base, &dup), RT_E_UNKNOWN_PRODUCER_ID);
    assert_non_null(strstr(rt_error_detail(), "PS4"));
    /* PS6: contiguous sequences append. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 0, 3, 1, &base, &dup), 0);
    assert_int_equal(base, 0);
    assert_false(dup);
    for (int i = 1; i < 7; i++) {
        assert_int_equal(pappend(f->e, "s", 0, 7, 0, i * 3, 3, 1, &base, &dup), 0);
        assert_int_equal(base, i * 3);
    }
    assert_int_equal(hw(f->e, "s", 0), 21);
    /* PS2: an exact retry of each of the last 5 batches returns its original offset. */
    for (int i = 2; i < 7; i++) {
        assert_int_equal(pappend(f->e, "s", 0, 7, 0, i * 3, 3, 1, &base, &dup), 0);
        assert_true(dup);
        assert_int_equal(base, i * 3);
    }
    assert_int_equal(hw(f->e, "s", 0), 21); /* nothing appended */
    /* Older than the window: out of order. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 3, 3, 1, &base, &dup), RT_E_OUT_OF_ORDER_SEQUENCE);
    /* PS7: a gap, or an overlapping but different batch. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 22, 1, 1, &base, &dup),
                     RT_E_OUT_OF_ORDER_SEQUENCE);
    assert_non_null(strstr(rt_error_detail(), "PS7"));
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 18, 2, 1, &base, &dup),
                     RT_E_OUT_OF_ORDER_SEQUENCE);
    /* PS5: a new epoch starts at 0. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 1, 21, 1, 1, &base, &dup),
                     RT_E_OUT_OF_ORDER_SEQUENCE);
    assert_non_null(strstr(rt_error_detail(), "PS5"));
    assert_int_equal(pappend(f->e, "s", 0, 7, 1, 0, 2, 1, &base, &dup), 0);
    assert_int_equal(base, 21);
    /* PS1: the old epoch is fenced from now on. */
    assert_int_equal(pappend(f->e, "s", 0, 7, 0, 21, 1, 1, &base, &dup),
                     RT_E_INVALID_PRODUCER_EPOCH);
    assert_non_null(strstr(rt_error_detail(), "PS1"));
    /* Another producer is independent. */
    assert_int_equal(pappend(f->e, "s", 0, 8, 0, 0, 1, 1, &base, &dup), 0);
    assert_int_equal(base, 23);
    assert_int_equal(hw(f->e, "s", 0), 24);
    /* Public entry point: rt_append_batch holds batches to the same rules. */
    uint8_t buf[256];
    struct batch_builder b;
    batch_builder_init(&b, buf, sizeof(buf), 0, 8, 0, 5);
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = 1};
    batch_builder_add(&b, &r);
    size_t len;
    batch_builder_finish(&b, &len);
    assert_int_equal(rt_append_batch(f->e, "s", 0, buf, len, &base), RT_E_OUT_OF_ORDER_SEQUENCE);
}

static void test_sequence_wraps(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "w", 1), 0);
    /* Reaching INT32_MAX through appends takes 2^31 records: load the boundary into a table
     * and check the rule there. */
    struct producer_table t;
    assert_int_equal(producer_table_init(&t, 16, NULL, NULL), 0);
    struct batch_header h = {.producer_id = 1,
                             .producer_epoch = 0,
                             .base_sequence = 0,
                             .last_offset_delta = 0,
                             .base_offset = 0};
    int64_t dup;
    const char *rule;
    assert_int_equal(producer_table_check(&t, &h, &dup, &rule), PRODUCER_APPEND);
    struct producer_entry e;
    memset(&e, 0, sizeof(e));
    e.producer_id = 1;
    e.epoch = 0;
    e.batch_count = 1;
    e.batches[0] = (struct producer_batch){.first_seq = INT32_MAX - 1, .last_seq = INT32_MAX};
    e.current_txn_first_offset = -1;
    assert_int_equal(producer_table_load(&t, &e), 0);
    h.base_sequence = 0;
    h.last_offset_delta = 1;
    assert_int_equal(producer_table_check(&t, &h, &dup, &rule), PRODUCER_APPEND);
    h.base_sequence = 1;
    assert_int_equal(producer_table_check(&t, &h, &dup, &rule), RT_E_OUT_OF_ORDER_SEQUENCE);
    producer_table_free(&t);
}

static void test_expiry_and_bound(void **state)
{
    struct tu_fixture *f = *state;
    f->o.producers_max = 4;
    f->o.producer_id_expiration_ms = 60 * 1000;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "x", 1), 0);
    int64_t now = fs_now_ms();
    /* Producer 1 writes with an old timestamp: it expires at the next housekeeping pass. */
    assert_int_equal(pappend(f->e, "x", 0, 1, 0, 0, 1, now - 120 * 1000, NULL, NULL), 0);
    for (int pid = 2; pid <= 4; pid++)
        assert_int_equal(pappend(f->e, "x", 0, pid, 0, 0, 1, now, NULL, NULL), 0);
    assert_int_equal(log_enforce_retention(engine_log(f->e)), 0);
    struct rt_stats st;
    rt_stats_get(f->e, &st);
    assert_int_equal(st.producers_expired, 1);
    assert_int_equal(pappend(f->e, "x", 0, 1, 0, 1, 1, now, NULL, NULL), RT_E_UNKNOWN_PRODUCER_ID);
    /* The table is bounded: producers 5 and 6 evict the least recently used (2, then 3). */
    assert_int_equal(pappend(f->e, "x", 0, 5, 0, 0, 1, now, NULL, NULL), 0);
    assert_int_equal(pappend(f->e, "x", 0, 6, 0, 0, 1, now, NULL, NULL), 0);
    assert_int_equal(pappend(f->e, "x", 0, 7, 0, 0, 1, now, NULL, NULL), 0);
    int unknown = 0;
    for (int pid = 2; pid <= 7; pid++)
        if (pappend(f->e, "x", 0, pid, 0, 1, 1, now, NULL, NULL) == RT_E_UNKNOWN_PRODUCER_ID)
            unknown++;
    assert_int_equal(unknown, 2); /* exactly as many as were evicted; the rest appended */
}

/* ---- snapshots ---- */

static int count_snapshots(const char *pdir)
{
    DIR *d = opendir(pdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".snapshot") && !strstr(de->d_name, ".tmp"))
            n++;
    closedir(d);
    return n;
}

static void test_state_survives_restart(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "r", 1), 0);
    int64_t base;
    bool dup;
    for (int i = 0; i < 10; i++)
        assert_int_equal(pappend(f->e, "r", 0, 3, 0, i * 2, 2, 1, &base, &dup), 0);
    tu_fixture_close(f); /* clean close writes a snapshot at the log end */
    char *pdir = tu_path("%s/r-0", f->dir);
    assert_int_equal(count_snapshots(pdir), 1);
    tu_fixture_open(f);
    assert_int_equal(log_partition(engine_log(f->e), "r", 0)->recovery.snapshot_offset, 20);
    assert_int_equal(pappend(f->e, "r", 0, 3, 0, 18, 2, 1, &base, &dup), 0);
    assert_true(dup);
    assert_int_equal(base, 18);
    assert_int_equal(pappend(f->e, "r", 0, 3, 0, 20, 2, 1, &base, &dup), 0);
    assert_false(dup);
    /* Unclean: the log after the snapshot is replayed. */
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    char *marker = tu_path("%s/.clean_shutdown", f->dir);
    unlink(marker);
    char *snap = tu_path("%s/%020d.snapshot", pdir, 22);
    unlink(snap); /* as if the crash happened before the close wrote it */
    tu_fixture_open(f);
    assert_int_equal(log_partition(engine_log(f->e), "r", 0)->recovery.snapshot_offset, 20);
    assert_int_equal(log_partition(engine_log(f->e), "r", 0)->recovery.batches_replayed, 1);
    assert_int_equal(pappend(f->e, "r", 0, 3, 0, 20, 2, 1, &base, &dup), 0);
    assert_true(dup);
    assert_int_equal(base, 20);
    /* A corrupt snapshot is reported, removed, and a full replay takes its place. */
    tu_fixture_close(f);
    char *snap22 = tu_path("%s/%020d.snapshot", pdir, 22);
    tu_flip_byte(snap22, 12, 0x10);
    tu_fixture_open(f);
    assert_int_equal(log_recovery(engine_log(f->e))->snapshots_rejected, 1);
    struct rt_stats st;
    rt_stats_get(f->e, &st);
    assert_int_equal(st.snapshots_rejected, 1);
    assert_false(fs_exists_for_test(snap22));
    assert_int_equal(pappend(f->e, "r", 0, 3, 0, 20, 2, 1, &base, &dup), 0);
    assert_true(dup);
    assert_int_equal(pappend(f->e, "r", 0, 3, 0, 22, 2, 1, &base, &dup), 0);
    assert_false(dup);
    free(marker);
    free(snap);
    free(snap22);
    free(pdir);
}

/* Property: over random histories (several producers, epoch bumps, rolls, snapshots at random
 * points, restarts), the state rebuilt from the newest snapshot plus replay equals the state a
 * full replay of the log rebuilds, and both equal a reference model. */
struct model_producer {
    int16_t epoch;
    int32_t next_seq;
    int64_t last_offset;
};

static void export_last(rt_engine *e, const char *topic, int64_t pid, int16_t *epoch,
                        int32_t *last_seq, int64_t *last_off)
{
    struct partition *p = log_partition(engine_log(e), topic, 0);
    const struct producer_entry *pe = producer_table_find(&p->producers, pid);
    assert_non_null(pe);
    *epoch = pe->epoch;
    assert_true(pe->batch_count > 0);
    const struct producer_batch *b = &pe->batches[pe->batch_count - 1];
    *last_seq = b->last_seq;
    *last_off = b->first_offset + b->offset_delta;
}

static void remove_all_snapshots(const char *pdir)
{
    assert_int_equal(tu_system("rm -f '%s'/*.snapshot", pdir), 0);
}

static void test_snapshot_replay_property(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = 16 * 1024;
    f->o.batch_size_max_bytes = 8 * 1024;
    char *pdir = tu_path("%s/prop-0", f->dir);
    unsigned seed = 12345;
    for (int iter = 0; iter < 6; iter++) {
        tu_fixture_open(f);
        if (iter == 0)
            assert_int_equal(rt_topic_create(f->e, "prop", 1), 0);
        static struct model_producer model[5];
        if (iter == 0)
            memset(model, 0, sizeof(model));
        for (int op = 0; op < 300; op++) {
            int pid = rand_r(&seed) % 5;
            int kind = rand_r(&seed) % 20;
            if (kind == 0) {
                model[pid].epoch++;
                model[pid].next_seq = 0;
            } else if (kind == 1) {
                assert_int_equal(log_snapshot_producers(engine_log(f->e)), 0);
                continue;
            }
            int n = 1 + rand_r(&seed) % 7;
            int64_t base;
            bool dup;
            assert_int_equal(pappend(f->e, "prop", 0, pid, model[pid].epoch, model[pid].next_seq, n,
                                     1000 + op, &base, &dup),
                             0);
            assert_false(dup);
            model[pid].next_seq += n;
            model[pid].last_offset = base + n - 1;
        }
        /* Restart: cleanly half the time, uncleanly (replay from an older snapshot) otherwise. */
        int64_t end = hw(f->e, "prop", 0);
        tu_fixture_close(f);
        if (iter % 2) {
            char *marker = tu_path("%s/.clean_shutdown", f->dir);
            unlink(marker);
            free(marker);
            /* Drop the close-time snapshot so replay has work to do. */
            char *snap = tu_path("%s/%020" PRId64 ".snapshot", pdir, end);
            unlink(snap);
            free(snap);
        }
        tu_fixture_open(f);
        int16_t ep_a[5];
        int32_t seq_a[5];
        int64_t off_a[5];
        for (int pid = 0; pid < 5; pid++) {
            if (model[pid].next_seq == 0)
                continue; /* bumped epoch with nothing written yet */
            export_last(f->e, "prop", pid, &ep_a[pid], &seq_a[pid], &off_a[pid]);
            assert_int_equal(ep_a[pid], model[pid].epoch);
            assert_int_equal(seq_a[pid], model[pid].next_seq - 1);
            assert_int_equal(off_a[pid], model[pid].last_offset);
        }
        tu_fixture_close(f);
        remove_all_snapshots(pdir);
        tu_fixture_open(f); /* full replay */
        assert_int_equal(log_partition(engine_log(f->e), "prop", 0)->recovery.snapshot_offset, -1);
        for (int pid = 0; pid < 5; pid++) {
            if (model[pid].next_seq == 0)
                continue;
            int16_t ep;
            int32_t seq;
            int64_t off;
            export_last(f->e, "prop", pid, &ep, &seq, &off);
            assert_int_equal(ep, ep_a[pid]);
            assert_int_equal(seq, seq_a[pid]);
            assert_int_equal(off, off_a[pid]);
        }
        tu_fixture_close(f);
    }
    free(pdir);
}

/* ---- the producer API ---- */

struct delivery_log {
    pthread_mutex_t lock;
    int64_t *offsets; /* per record index */
    int errors;
    int duplicates;
    int delivered;
};

struct delivery_ctx {
    struct delivery_log *log;
    int index;
};

static void on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    struct delivery_ctx *c = ctx;
    pthread_mutex_lock(&c->log->lock);
    if (err)
        c->log->errors++;
    if (duplicate)
        c->log->duplicates++;
    c->log->offsets[c->index] = offset;
    c->log->delivered++;
    pthread_mutex_unlock(&c->log->lock);
}

static void test_idempotent_producer_api(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "api", 3), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.batch_size_bytes = 1024;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    int64_t pid;
    int16_t epoch;
    rt_producer_id(p, &pid, &epoch);
    assert_true(pid >= 0);
    enum { N = 3000 };
    struct delivery_log log = {.offsets = calloc(N, sizeof(int64_t))};
    pthread_mutex_init(&log.lock, NULL);
    struct delivery_ctx *ctx = calloc(N, sizeof(*ctx));
    for (int i = 0; i < N; i++) {
        char key[16], val[16];
        snprintf(key, sizeof(key), "k%d", i % 17);
        snprintf(val, sizeof(val), "%d", i);
        struct rt_producer_message m = {.record = {.key = key,
                                                   .key_len = (int32_t)strlen(key),
                                                   .value = val,
                                                   .value_len = (int32_t)strlen(val),
                                                   .timestamp_ms = -1},
                                        .sequence = -1};
        ctx[i] = (struct delivery_ctx){.log = &log, .index = i};
        assert_int_equal(rt_producer_send(p, "api", -1, &m, on_delivery, &ctx[i]), 0);
    }
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(log.delivered, N);
    assert_int_equal(log.errors, 0);
    assert_int_equal(log.duplicates, 0);
    /* Every record is where its delivery said, once, in send order per key. */
    int64_t total = 0;
    for (uint32_t part = 0; part < 3; part++)
        total += hw(f->e, "api", part);
    assert_int_equal(total, N);
    rt_fetch *fh;
    for (int i = 0; i < N; i += 97) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i % 17);
        uint32_t part = murmur2_partition(key, strlen(key), 3);
        assert_int_equal(
            rt_fetch_start(f->e, "api", part, log.offsets[i], 1, RT_READ_UNCOMMITTED, &fh), 0);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, log.offsets[i]);
        assert_int_equal(rt_records_next(&it, &r), 0);
        char want[16];
        snprintf(want, sizeof(want), "%d", i);
        assert_int_equal(r.value_len, (int)strlen(want));
        assert_memory_equal(r.value, want, strlen(want));
        assert_int_equal(r.producer_id, pid);
        rt_fetch_release(fh);
    }
    assert_int_equal(rt_producer_close(p), 0);
    /* Producer ids are never reused, even across restarts. */
    tu_fixture_close(f);
    tu_fixture_open(f);
    rt_producer *q = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &q), 0);
    int64_t pid2;
    rt_producer_id(q, &pid2, NULL);
    assert_true(pid2 > pid);
    assert_int_equal(rt_producer_close(q), 0);
    /* Bad options. */
    po.max_in_flight = 6;
    assert_int_equal(rt_producer_open(f->e, &po, &q), RT_E_INVALID_ARGUMENT);
    free(ctx);
    free(log.offsets);
}

/* PR1: batches are recycled through the producer's pool, bounded by buffer_memory_bytes
 * (here two standard batches): sends block while both are in flight (back-pressure, never an
 * error), records larger than a batch get their own buffer (which trims the pool to stay in
 * the bound), and every record lands once, in order, with its own bytes — a recycled buffer
 * never leaks an earlier batch's records. */
static void test_batch_pool_reuse(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "pool", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.batch_size_bytes = 1024;
    po.buffer_memory_bytes = 2048;
    po.linger_ms = 0;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    enum { N = 2000 };
    static char big[1500];
    struct delivery_log log = {.offsets = calloc(N, sizeof(int64_t))};
    pthread_mutex_init(&log.lock, NULL);
    struct delivery_ctx *ctx = calloc(N, sizeof(*ctx));
    for (int i = 0; i < N; i++) {
        char val[16];
        int len = snprintf(val, sizeof(val), "%d", i);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = val, .value_len = len, .timestamp_ms = -1},
            .sequence = -1};
        if (i % 101 == 100) { /* a record larger than a batch: its own buffer */
            memset(big, 'a' + i % 26, sizeof(big));
            memcpy(big, val, (size_t)len);
            m.record.value = big;
            m.record.value_len = (int32_t)sizeof(big);
        }
        ctx[i] = (struct delivery_ctx){.log = &log, .index = i};
        assert_int_equal(rt_producer_send(p, "pool", 0, &m, on_delivery, &ctx[i]), 0);
    }
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(log.delivered, N);
    assert_int_equal(log.errors, 0);
    assert_int_equal(hw(f->e, "pool", 0), N);
    int64_t next = 0;
    while (next < N) {
        rt_fetch *fh = NULL;
        assert_int_equal(rt_fetch_start(f->e, "pool", 0, next, 64 * 1024, RT_READ_UNCOMMITTED, &fh),
                         0);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, next);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            assert_int_equal(r.offset, next);
            assert_int_equal(log.offsets[next], next); /* sent in order, one partition */
            char want[16];
            int len = snprintf(want, sizeof(want), "%" PRId64, next);
            if (next % 101 == 100) {
                assert_int_equal(r.value_len, (int)sizeof(big));
                assert_memory_equal(r.value, want, (size_t)len);
                assert_int_equal(((const char *)r.value)[sizeof(big) - 1], 'a' + next % 26);
            } else {
                assert_int_equal(r.value_len, len);
                assert_memory_equal(r.value, want, (size_t)len);
            }
            next++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(fh);
    }
    assert_int_equal(rt_producer_close(p), 0);
    free(ctx);
    free(log.offsets);
    tu_fixture_close(f);
}

static void test_named_producer_fencing_and_dedup(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "n", 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.name = "source-a";
    rt_producer *a = NULL, *b = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &a), 0);
    int64_t pid_a, pid_b;
    int16_t ep_a, ep_b;
    rt_producer_id(a, &pid_a, &ep_a);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1}};
    for (int64_t s = 10; s <= 50; s += 10) { /* user sequence ids with gaps */
        m.sequence = s;
        assert_int_equal(rt_producer_send(a, "n", 0, &m, NULL, NULL), 0);
    }
    assert_int_equal(rt_producer_flush(a, -1), 0);
    assert_int_equal(hw(f->e, "n", 0), 5);
    m.sequence = 40; /* not above the last one sent: a duplicate, acknowledged, not appended */
    struct delivery_log log = {.offsets = calloc(2, sizeof(int64_t))};
    pthread_mutex_init(&log.lock, NULL);
    struct delivery_ctx c0 = {.log = &log, .index = 0};
    assert_int_equal(rt_producer_send(a, "n", 0, &m, on_delivery, &c0), 0);
    assert_int_equal(rt_producer_flush(a, -1), 0);
    assert_int_equal(log.duplicates, 1);
    assert_int_equal(hw(f->e, "n", 0), 5);
    /* A second instance under the same name: same id, newer epoch, continues after 50. */
    assert_int_equal(rt_producer_open(f->e, &po, &b), 0);
    rt_producer_id(b, &pid_b, &ep_b);
    assert_int_equal(pid_b, pid_a);
    assert_int_equal(ep_b, ep_a + 1);
    int64_t last = -2;
    assert_int_equal(rt_producer_last_sequence(b, "n", 0, &last), 0);
    assert_int_equal(last, 50);
    m.sequence = 30;
    struct delivery_ctx c1 = {.log = &log, .index = 1};
    assert_int_equal(rt_producer_send(b, "n", 0, &m, on_delivery, &c1), 0);
    m.sequence = 60;
    assert_int_equal(rt_producer_send(b, "n", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(b, -1), 0);
    assert_int_equal(log.duplicates, 2);
    assert_int_equal(hw(f->e, "n", 0), 6);
    /* The older instance is fenced. */
    m.sequence = 70;
    assert_int_equal(rt_producer_send(a, "n", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_flush(a, -1), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(rt_producer_send(a, "n", 0, &m, NULL, NULL), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(hw(f->e, "n", 0), 6);
    rt_producer_close(a);
    assert_int_equal(rt_producer_close(b), 0);
    /* Across an engine restart the name keeps its id and its highest sequence. */
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(rt_producer_open(f->e, &po, &b), 0);
    rt_producer_id(b, &pid_b, &ep_b);
    assert_int_equal(pid_b, pid_a);
    assert_int_equal(rt_producer_last_sequence(b, "n", 0, &last), 0);
    assert_int_equal(last, 60);
    assert_int_equal(rt_producer_close(b), 0);
    free(log.offsets);
}

/* ---- the crash test ---- */

static int child_fd_for_test = -1;

static void child_on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    (void)offset;
    (void)duplicate;
    if (err)
        _exit(5);
    intptr_t line = (intptr_t)ctx;
    int32_t v = (int32_t)line;
    if (write(child_fd_for_test, &v, sizeof(v)) != sizeof(v))
        _exit(6);
}

static void send_lines(rt_engine *e, const char *name, int from, int to, rt_delivery_fn cb)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.name = name;
    po.batch_size_bytes = 512;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    if (rt_producer_open(e, &po, &p))
        _exit(7);
    for (int line = from; line <= to; line++) {
        char v[32];
        snprintf(v, sizeof(v), "line-%d", line);
        struct rt_producer_message m = {.record = {.key_len = -1,
                                                   .value = v,
                                                   .value_len = (int32_t)strlen(v),
                                                   .timestamp_ms = -1},
                                        .sequence = line};
        if (rt_producer_send(p, "crash", 0, &m, cb, (void *)(intptr_t)line))
            _exit(8);
        if (line % 50 == 0)
            usleep(200);
    }
    if (rt_producer_close(p))
        _exit(9);
}

static void test_named_producer_crash_exactly_once(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "crash", 1), 0);
    tu_fixture_close(f);
    const char *it_env = getenv("RT_TEST_CRASH_ITERATIONS");
    int iterations = it_env ? atoi(it_env) : 8;
    enum { LINES = 2000 };
    unsigned seed = 99;
    for (int iter = 0; iter < iterations; iter++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            child_fd_for_test = fds[1];
            rt_engine *e = NULL;
            if (rt_open(f->dir, &f->o, &e))
                _exit(2);
            send_lines(e, "crash-src", 1, LINES, child_on_delivery);
            rt_close(e);
            _exit(0);
        }
        close(fds[1]);
        int kill_after = 1 + (int)(rand_r(&seed) % (LINES / 2));
        int32_t v = 0;
        int acked = 0, max_acked = 0;
        while (acked < kill_after && read(fds[0], &v, sizeof(v)) == sizeof(v)) {
            acked++;
            if (v > max_acked)
                max_acked = v;
        }
        kill(pid, SIGKILL);
        while (read(fds[0], &v, sizeof(v)) == sizeof(v))
            if (v > max_acked)
                max_acked = v;
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        /* Restart under the same name and resend everything from line 1. */
        tu_fixture_open(f);
        send_lines(f->e, "crash-src", 1, LINES, NULL);
        /* Each line exactly once, in order, and every acknowledged line among them. */
        int64_t end = hw(f->e, "crash", 0);
        int64_t off = 0;
        int expect = 1;
        while (off < end) {
            rt_fetch *fh;
            assert_int_equal(
                rt_fetch_start(f->e, "crash", 0, off, 1 << 16, RT_READ_UNCOMMITTED, &fh), 0);
            struct rt_records it;
            struct rt_record_view r;
            rt_records_init(&it, fh, off);
            while (rt_records_next(&it, &r) == 0) {
                char want[32];
                snprintf(want, sizeof(want), "line-%d", expect);
                if (r.value_len != (int)strlen(want) || memcmp(r.value, want, strlen(want)) != 0)
                    fail_msg("iteration %d: offset %" PRId64 " holds %.*s, expected %s", iter,
                             r.offset, r.value_len, (const char *)r.value, want);
                expect++;
                off = r.offset + 1;
            }
            rt_fetch_release(fh);
        }
        assert_int_equal(expect - 1, LINES);
        assert_true(max_acked <= LINES);
        /* Next iteration appends to the same log: truncate by recreating the topic. */
        tu_fixture_close(f);
        assert_int_equal(tu_system("rm -rf '%s'", f->dir), 0);
        tu_fixture_open(f);
        assert_int_equal(rt_topic_create(f->e, "crash", 1), 0);
        tu_fixture_close(f);
    }
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sequence_rules, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_sequence_wraps, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_expiry_and_bound, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_state_survives_restart, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_replay_property, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_idempotent_producer_api, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_batch_pool_reuse, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_named_producer_fencing_and_dedup, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_named_producer_crash_exactly_once, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
