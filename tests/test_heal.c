/*
 * test_heal.c — issue 21 F3: disk faults that heal without a restart (shard.c SH10, partition.c
 * PA12). Through the fault-injecting backend: a partition whose write, fdatasync or roll fails is
 * frozen alone (its appends answer RT_E_IO_FAILED naming the cause, the fault is counted and told
 * when it happens), the other partitions of the same shard keep writing, and once the disk takes
 * writes again the partition is recovered in place — truncated to its last acknowledged batch,
 * its producer state as a reopen would load it — so an idempotent producer's retry of the same
 * sequence is appended once, a duplicate of an earlier batch is recognised, and a power loss
 * after the recovery loses nothing acknowledged and shows nothing that was reported failed.
 * On a real tmpfs (mounted here; skipped when mounting is impossible): in-process idempotent
 * writers under a disk filled and freed in a loop — every acknowledged record present exactly
 * once, writes resume after each free, `ringtail verify` clean.
 * Transactions and the internal topics (SH11, CO15, GO1): a marker, a decision (__transaction_state)
 * or an offset commit (__consumer_offsets) that meets a full disk fails alone and heals in place;
 * a transaction ends committed or aborted on every partition it wrote, and a power loss after the
 * healing keeps what read_committed saw and what was acknowledged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC "heal"

/* ---- what the engine told (rt_options.on_fault) ---- */

struct fault_log {
    pthread_mutex_t lock;
    int faults, recoveries, engine_wide;
    int first_error;
    uint32_t first_partition;
    char first_detail[1024];
    uint32_t last_attempts;
};

static void on_fault(void *ctx, const struct rt_partition_fault *f)
{
    struct fault_log *l = ctx;
    pthread_mutex_lock(&l->lock);
    if (f->recovered) {
        l->recoveries++;
        l->last_attempts = f->attempts;
    } else {
        if (l->faults == 0) {
            l->first_error = f->error;
            l->first_partition = f->partition;
            snprintf(l->first_detail, sizeof(l->first_detail), "%s", f->detail);
        }
        l->faults++;
        l->engine_wide += f->engine_wide;
    }
    pthread_mutex_unlock(&l->lock);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- idempotent batches and what was acknowledged ---- */

#define VALUE_BYTES 48

/* One idempotent batch of `records` records of producer pid (epoch 0) at base sequence seq;
 * record i's value is "<tag>-<pid>-<seq + i>". Returns rt_append_batch's result (no cmocka
 * asserts: threads call it). */
static int append_idem(rt_engine *e, const char *topic, uint32_t part, int64_t pid, int32_t seq,
                       int records, const char *tag, int64_t *base_out, size_t pad_bytes)
{
    uint8_t buf[16384];
    struct batch_builder b;
    if (batch_builder_init(&b, buf, sizeof(buf), 0, pid, 0, seq))
        return RT_E_INVALID_ARGUMENT;
    char v[VALUE_BYTES + 4096];
    for (int i = 0; i < records; i++) {
        int n = snprintf(v, VALUE_BYTES, "%s-%" PRId64 "-%d", tag, pid, seq + i);
        size_t len = (size_t)n + (pad_bytes < 4096 ? pad_bytes : 4096);
        memset(v + n, '.', len - (size_t)n);
        struct rt_record r = {.key_len = -1,
                              .value = v,
                              .value_len = (int32_t)len,
                              .timestamp_ms = 1000000 + seq + i};
        if (batch_builder_add(&b, &r))
            return RT_E_INVALID_ARGUMENT;
    }
    size_t len = 0;
    if (batch_builder_finish(&b, &len))
        return RT_E_INVALID_ARGUMENT;
    return rt_append_batch(e, topic, part, buf, len, base_out);
}

/* The values of a partition from its log start to its high watermark, each cut at its first
 * '.', in offset order (dense offsets checked), as "a|b|c|". Caller frees. */
static char *read_values(rt_engine *e, const char *topic, uint32_t part, int64_t *count_out)
{
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    int64_t next = 0, count = 0;
    for (;;) {
        rt_fetch *fh = NULL;
        int rc = rt_fetch_start(e, topic, part, next, 65536, RT_READ_UNCOMMITTED, &fh);
        if (rc)
            fprintf(stderr, "rt_fetch_start(%" PRId64 "): %s\n", next, rt_error_detail());
        assert_int_equal(rc, 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        if (v->size_bytes == 0) {
            assert_int_equal(next, v->high_watermark);
            rt_fetch_release(fh);
            break;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fh, next), 0);
        struct rt_record_view r;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            assert_int_equal(r.offset, next);
            size_t n = 0;
            while (n < (size_t)r.value_len && ((const char *)r.value)[n] != '.')
                n++;
            if (len + n + 2 > cap) {
                cap = cap * 2 + n;
                out = realloc(out, cap);
                assert_non_null(out);
            }
            memcpy(out + len, r.value, n);
            len += n;
            out[len++] = '|';
            out[len] = '\0';
            next++;
            count++;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(fh);
    }
    if (count_out)
        *count_out = count;
    return out;
}

/* What one producer of one partition had acknowledged, as read_values renders it. */
struct acked {
    char *text;
    size_t len, cap;
    int64_t records;
};

static void acked_add(struct acked *a, const char *tag, int64_t pid, int32_t seq, int records)
{
    for (int i = 0; i < records; i++) {
        char v[VALUE_BYTES + 2];
        int n = snprintf(v, sizeof(v), "%s-%" PRId64 "-%d|", tag, pid, seq + i);
        if (a->len + (size_t)n + 1 > a->cap) {
            a->cap = a->cap * 2 + 4096;
            a->text = realloc(a->text, a->cap);
            assert_non_null(a->text);
        }
        memcpy(a->text + a->len, v, (size_t)n + 1);
        a->len += (size_t)n;
        a->records++;
    }
}

static int setup(void **state)
{
    return tu_fixture_setup(state);
}

static int teardown(void **state)
{
    return tu_fixture_teardown(state);
}

static void stats(rt_engine *e, struct rt_stats *s)
{
    assert_int_equal(rt_stats_get(e, s), 0);
}

/* Retries the same idempotent batch until it is acknowledged (or bound_ms passes: fails the
 * test). Returns its base offset. */
static int64_t append_until_ok(rt_engine *e, uint32_t part, int64_t pid, int32_t seq, int records,
                               const char *tag, int64_t bound_ms)
{
    int64_t until = now_ms() + bound_ms, base = -1;
    int rc;
    while ((rc = append_idem(e, TOPIC, part, pid, seq, records, tag, &base, 0)) != 0) {
        if (rc != RT_E_IO_FAILED || now_ms() > until)
            fprintf(stderr, "append (seq %d): %s\n", seq, rt_error_detail());
        assert_int_equal(rc, RT_E_IO_FAILED);
        assert_true(now_ms() <= until);
        usleep(20 * 1000);
    }
    return base;
}

/* The partition heal-0's files (not heal-1's): "heal-0/". */
static const char *const P0_FILES = TOPIC "-0/";

/* Runs the common scenario: partition 0 fails by `rule` while partition 1 (same shard) keeps
 * writing; the rule is removed ("space returns"); partition 0 recovers in place; then a power
 * loss; after a reopen everything acknowledged is there once and nothing reported failed. */
/* Whether text (as read_values renders it) holds the value "<tag>-<pid>-<seq>". */
static bool holds_value(const char *text, const char *tag, int64_t pid, int32_t seq)
{
    char v[VALUE_BYTES + 4];
    snprintf(v, sizeof(v), "%s-%" PRId64 "-%d|", tag, pid, seq);
    size_t n = strlen(v);
    for (const char *at = strstr(text, v); at; at = strstr(at + 1, v))
        if (at == text || at[-1] == '|')
            return true;
    (void)n;
    return false;
}

static void run_heal(struct tu_fixture *f, struct io_fault_rule rule, bool writeback_errors,
                     int records_per_batch, size_t pad_bytes)
{
    bool refuses = rule.mode == IO_FAULT_FOREVER; /* until the rule is cleared */
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.writeback_errors = writeback_errors;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct rt_options o = f->o;
    o.shard_count = 1; /* the partition that keeps writing shares the failed one's shard */
    o.sync_mode = RT_SYNC_ALWAYS;
    o.on_fault = on_fault;
    o.on_fault_ctx = &fl;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    struct acked a0 = {0}, a1 = {0};
    int32_t seq0 = 0, seq1 = 0;
    int64_t next0 = 0;
    /* Before the fault: both partitions take batches. */
    for (int i = 0; i < 3; i++) {
        int64_t base = -1;
        assert_int_equal(
            append_idem(f->e, TOPIC, 0, 7, seq0, records_per_batch, "a", &base, pad_bytes), 0);
        assert_int_equal(base, next0);
        acked_add(&a0, "a", 7, seq0, records_per_batch);
        seq0 += records_per_batch;
        next0 += records_per_batch;
        assert_int_equal(append_idem(f->e, TOPIC, 1, 8, seq1, 1, "b", &base, 0), 0);
        acked_add(&a1, "b", 8, seq1, 1);
        seq1++;
    }
    /* The disk refuses partition 0's files from now on. */
    rule.path_contains = P0_FILES;
    assert_int_equal(io_fault_rule_add(&plan, &rule), 0);
    int rc = 0;
    int64_t base = -1;
    char tag[16] = "a";
    for (int i = 0; i < 200 && rc == 0; i++) {
        snprintf(tag, sizeof(tag), "t%d", i); /* each attempt's values are its own */
        rc = append_idem(f->e, TOPIC, 0, 7, seq0, records_per_batch, tag, &base, pad_bytes);
        if (rc == 0) {
            assert_int_equal(base, next0);
            acked_add(&a0, tag, 7, seq0, records_per_batch);
            seq0 += records_per_batch;
            next0 += records_per_batch;
        }
    }
    char failed_tag[16];
    snprintf(failed_tag, sizeof(failed_tag), "%s", tag);
    assert_int_equal(rc, RT_E_IO_FAILED); /* SH10: the partition failed */
    const char *cause = strerror(rule.error ? rule.error : EIO);
    assert_non_null(strstr(rt_error_detail(), cause));
    /* Told and counted when it happened, naming the file, the operation and the error. */
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.partition_faults, 1);
    assert_int_equal(s.partitions_failed, 1);
    assert_int_equal(s.write_error, 0); /* not the engine's */
    pthread_mutex_lock(&fl.lock);
    assert_int_equal(fl.faults, 1);
    assert_int_equal(fl.engine_wide, 0);
    assert_int_equal(fl.first_partition, 0);
    assert_int_equal(fl.first_error, -(rule.error ? rule.error : EIO));
    assert_non_null(strstr(fl.first_detail, TOPIC "-0"));
    assert_non_null(strstr(fl.first_detail, cause));
    pthread_mutex_unlock(&fl.lock);
    fprintf(stderr, "fault told: %s\n", fl.first_detail);
    /* A batch reported failed that is never sent again: it must never be visible. */
    int32_t failed_seq = seq0;
    /* The other partition, on the same shard, keeps writing meanwhile. */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(append_idem(f->e, TOPIC, 1, 8, seq1, 1, "b", &base, 0), 0);
        acked_add(&a1, "b", 8, seq1, 1);
        seq1++;
    }
    /* While the disk still refuses, recovery attempts fail and change nothing. */
    int64_t until = now_ms() + 400;
    while (refuses && now_ms() < until) {
        rc = append_idem(f->e, TOPIC, 0, 7, seq0, records_per_batch, "never", &base, pad_bytes);
        assert_int_equal(rc, RT_E_IO_FAILED);
        usleep(20 * 1000);
    }
    stats(f->e, &s);
    if (refuses) {
        assert_int_equal(s.partition_recoveries, 0);
        assert_int_equal(s.partitions_failed, 1);
    }
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
                     0);
    assert_int_equal(hw, next0); /* readers keep the last acknowledged watermark */

    /* Space returns: the partition recovers in place, without a reopen. The same sequence (a
     * different batch: the failed one was given up) is appended at the next offset. */
    io_fault_rules_clear(&plan);
    base = append_until_ok(f->e, 0, 7, failed_seq, records_per_batch, "a", 30000);
    assert_int_equal(base, next0); /* truncated to the last acknowledged batch: no gap */
    acked_add(&a0, "a", 7, failed_seq, records_per_batch);
    seq0 = failed_seq + records_per_batch;
    next0 += records_per_batch;
    stats(f->e, &s);
    assert_int_equal(s.partition_recoveries, 1);
    assert_int_equal(s.partitions_failed, 0);
    assert_int_equal(s.write_error, 0);
    pthread_mutex_lock(&fl.lock);
    assert_int_equal(fl.recoveries, 1);
    assert_true(fl.last_attempts >= 1);
    pthread_mutex_unlock(&fl.lock);
    /* Producer state as a reopen loads it: a retry of the batch just acknowledged and of one
     * acknowledged before the fault are duplicates answered with their offsets, a gap is out of
     * order. */
    int64_t dup = -1;
    assert_int_equal(
        append_idem(f->e, TOPIC, 0, 7, failed_seq, records_per_batch, "a", &dup, pad_bytes), 0);
    assert_int_equal(dup, next0 - records_per_batch);
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, failed_seq - records_per_batch,
                                 records_per_batch, "a", &dup, pad_bytes),
                     0);
    assert_int_equal(dup, next0 - 2 * records_per_batch);
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, seq0 + 1, 1, "gap", &dup, 0),
                     RT_E_OUT_OF_ORDER_SEQUENCE);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(
            append_idem(f->e, TOPIC, 0, 7, seq0, records_per_batch, "a", &base, pad_bytes), 0);
        assert_int_equal(base, next0);
        acked_add(&a0, "a", 7, seq0, records_per_batch);
        seq0 += records_per_batch;
        next0 += records_per_batch;
    }
    char *v0 = read_values(f->e, TOPIC, 0, NULL);
    assert_string_equal(v0, a0.text);
    free(v0);

    /* Power loss after the recovery: nothing acknowledged is lost, nothing failed appears. */
    assert_int_equal(io_fault_power_loss(&plan), 0);
    (void)rt_close(f->e);
    f->e = NULL;
    io_fault_plan_release(&plan);
    struct rt_options ro = f->o;
    assert_int_equal(rt_open(f->dir, &ro, &f->e), 0);
    int64_t n0 = 0, n1 = 0;
    v0 = read_values(f->e, TOPIC, 0, &n0);
    char *v1 = read_values(f->e, TOPIC, 1, &n1);
    assert_string_equal(v0, a0.text);
    assert_string_equal(v1, a1.text);
    assert_null(strstr(v0, "never"));
    assert_false(holds_value(v0, failed_tag, 7, failed_seq)); /* reported failed: never seen */
    assert_int_equal(n0, a0.records);
    free(v0);
    free(v1);
    free(a0.text);
    free(a1.text);
    tu_fixture_close(f);
}

/* SH10, PA12: writes of one partition's files fail with ENOSPC until space returns. */
/* Adds a rule to the plan: the op's first matching call on a path containing `path` fails with
 * `error`, once or until the rules are cleared (`mode`). */
static void refuse(struct io_fault_plan *plan, enum io_fault_mode mode, enum io_op_type op,
                   int error, const char *path)
{
    struct io_fault_rule rule = {
        .mode = mode, .op = op, .nth = 1, .error = error, .path_contains = path};
    assert_int_equal(io_fault_rule_add(plan, &rule), 0);
}

static void test_heal_write_enospc(void **state)
{
    run_heal(*state,
             (struct io_fault_rule){
                 .mode = IO_FAULT_FOREVER, .op = IO_OP_WRITE, .nth = 1, .error = ENOSPC},
             false, 3, 0);
}

/* SH10, PA12: a torn write (part of the batch lands, then EIO) until the disk recovers. */
static void test_heal_torn_write_eio(void **state)
{
    run_heal(
        *state,
        (struct io_fault_rule){
            .mode = IO_FAULT_TORN, .op = IO_OP_WRITE, .nth = 1, .error = EIO, .short_bytes = 100},
        false, 3, 200);
}

/* SH10, PA12: a failed fdatasync (with Linux's writeback-error semantics: the pages of the failed
 * sync are gone and no later sync makes them durable) — the recovery trusts only syncs made after
 * it, so the batch of the failed sync never comes back, not even after a power loss. */
static void test_heal_fdatasync_eio(void **state)
{
    run_heal(*state,
             (struct io_fault_rule){
                 .mode = IO_FAULT_ONCE, .op = IO_OP_FDATASYNC, .nth = 1, .error = EIO},
             true, 2, 0);
}

/* PA12: the fault interrupts a roll (the new segment's file cannot be created: ENOSPC on the
 * directory entry); the recovery finishes the roll. Batches of ~1 KiB fill the 64 KiB segment
 * soon, so the fault meets a roll. */
static void test_heal_failed_roll(void **state)
{
    run_heal(*state,
             (struct io_fault_rule){
                 .mode = IO_FAULT_FOREVER, .op = IO_OP_DIR_ENTRY, .nth = 1, .error = ENOSPC},
             false, 4, 1000);
}

/* SH10: a partition frozen at close (no recovery since) leaves the engine unclean: rt_close
 * reports it and the next open recovers it; with fault_recovery_ms -1 nothing is retried. */
static void test_heal_never_when_disabled(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o = f->o;
    o.shard_count = 1;
    o.fault_recovery_ms = -1;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 0, 1, "a", &base, 0), 0);
    refuse(&plan, IO_FAULT_ONCE, IO_OP_WRITE, EIO, P0_FILES);
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 1, 1, "x", &base, 0), RT_E_IO_FAILED);
    usleep(300 * 1000); /* well past the default first attempt */
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 1, 1, "x", &base, 0), RT_E_IO_FAILED);
    assert_int_equal(append_idem(f->e, TOPIC, 1, 8, 0, 1, "b", &base, 0), 0);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.partitions_failed, 1);
    assert_int_equal(s.partition_recoveries, 0);
    assert_int_equal(rt_close(f->e), RT_E_IO_FAILED);
    f->e = NULL;
    io_fault_plan_release(&plan);
    tu_fixture_open(f);
    stats(f->e, &s);
    assert_true(s.opened_unclean);
    int64_t n = 0;
    char *v = read_values(f->e, TOPIC, 0, &n);
    assert_string_equal(v, "a-7-0|");
    free(v);
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 1, 1, "a", &base, 0), 0);
    assert_int_equal(base, 1);
    tu_fixture_close(f);
}

/* ---- the real thing: a small tmpfs filled and freed in a loop ---- */

#define WRITERS 3
#define CYCLES  4

struct writer {
    rt_engine *e;
    int64_t pid;
    uint32_t part;
    _Atomic bool stop;
    _Atomic int64_t acked_at_ms; /* when the last append was acknowledged */
    _Atomic uint64_t failures;
    struct acked acked;
    int error; /* an unexpected error, 0 if none */
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    int32_t seq = 0;
    while (!atomic_load(&w->stop)) {
        int64_t base = -1;
        int rc = append_idem(w->e, TOPIC, w->part, w->pid, seq, 2, "w", &base, 100);
        if (rc == 0) {
            acked_add(&w->acked, "w", w->pid, seq, 2);
            seq += 2;
            atomic_store(&w->acked_at_ms, now_ms());
            usleep(2 * 1000); /* ~100 KB/s each: the data itself must not fill the disk */
        } else if (rc == RT_E_IO_FAILED) {
            atomic_fetch_add(&w->failures, 1);
            usleep(5 * 1000); /* then the same sequence again, as an idempotent producer */
        } else {
            w->error = rc;
            fprintf(stderr, "writer %" PRId64 ": %s\n", w->pid, rt_error_detail());
            break;
        }
    }
    return NULL;
}

/* An in-process rt_producer (anonymous, idempotent) sending one record at a time and flushing:
 * a failed delivery is not stored, and the same producer sends the same value again (PR9: a
 * partition fault is not sticky), for the whole run. */
struct pwriter {
    rt_engine *e;
    uint32_t part;
    _Atomic bool stop;
    _Atomic int64_t acked_at_ms;
    _Atomic uint64_t failures;
    struct acked acked;
    int error;
};

static void pdelivered(void *ctx, int err, int64_t offset, bool duplicate)
{
    (void)offset;
    (void)duplicate;
    *(int *)ctx = err;
}

static void *pwriter_main(void *arg)
{
    struct pwriter *w = arg;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    rt_producer *p = NULL;
    if (rt_producer_open(w->e, &po, &p) != 0) {
        w->error = -1;
        return NULL;
    }
    int32_t n = 0;
    while (!atomic_load(&w->stop)) {
        char v[VALUE_BYTES + 100];
        int len = snprintf(v, VALUE_BYTES, "q-%u-%d", w->part, n);
        memset(v + len, '.', 100);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = v, .value_len = len + 100, .timestamp_ms = -1},
            .sequence = -1};
        int err = 1;
        int rc = rt_producer_send(p, TOPIC, (int32_t)w->part, &m, pdelivered, &err);
        if (rc == 0)
            rc = rt_producer_flush(p, -1);
        if (rc == 0 && err == 0) {
            acked_add(&w->acked, "q", w->part, n, 1);
            n++;
            atomic_store(&w->acked_at_ms, now_ms());
            usleep(2 * 1000);
            continue;
        }
        int why = rc ? rc : err;
        if (why != RT_E_IO_FAILED && why != RT_E_OUT_OF_ORDER_SEQUENCE) {
            w->error = why;
            fprintf(stderr, "producer writer: %s\n", rt_error_detail());
            break;
        }
        atomic_fetch_add(&w->failures, 1);
        usleep(5 * 1000); /* PR9: the same producer sends the same value again */
    }
    if (p && rt_producer_close(p) != 0 && w->error == 0)
        w->error = -3;
    return NULL;
}

/* ---- SH11, CO15: transactions and the internal topics heal in place (issue 21 F3 part 3) ---- */

/* The values of a partition under `iso` ("a|b|" as read_values renders them), markers and
 * aborted records skipped. Caller frees. */
static char *read_values_iso(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso)
{
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    int64_t next = 0;
    for (;;) {
        rt_fetch *fh = NULL;
        int rc = rt_fetch_start(e, topic, part, next, 65536, iso, &fh);
        if (rc)
            fprintf(stderr, "rt_fetch_start(%" PRId64 "): %s\n", next, rt_error_detail());
        assert_int_equal(rc, 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        if (v->size_bytes == 0) {
            rt_fetch_release(fh);
            break;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fh, next), 0);
        struct rt_record_view r;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            if (len + (size_t)r.value_len + 2 > cap) {
                cap = cap * 2 + (size_t)r.value_len;
                out = realloc(out, cap);
                assert_non_null(out);
            }
            memcpy(out + len, r.value, (size_t)r.value_len);
            len += (size_t)r.value_len;
            out[len++] = '|';
            out[len] = '\0';
        }
        assert_int_equal(rc, RT_E_END);
        next = tu_fetch_next_offset(v, next);
        rt_fetch_release(fh);
    }
    return out;
}

static void verify_problem(void *ctx, const char *problem)
{
    (void)ctx;
    fprintf(stderr, "verify: %s\n", problem);
}

/* Opens f->e for the transactional cases: one shard (the data partitions, __transaction_state
 * and __consumer_offsets share it), sync=always, faults told to fl. */
static void open_txn_engine_shards(struct tu_fixture *f, struct io_fault_plan *plan,
                                   struct fault_log *fl, uint32_t shards)
{
    memset(plan, 0, sizeof(*plan));
    struct rt_options o = f->o;
    o.shard_count = shards;
    o.sync_mode = RT_SYNC_ALWAYS;
    o.on_fault = on_fault;
    o.on_fault_ctx = fl;
    assert_int_equal(rt_test_open(f->dir, &o, plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
}

static void open_txn_engine(struct tu_fixture *f, struct io_fault_plan *plan, struct fault_log *fl)
{
    open_txn_engine_shards(f, plan, fl, 1);
}

static rt_producer *open_txn_producer(rt_engine *e)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "heal-txn";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    return p;
}

/* Sends records "<tag>-0".."<tag>-<n-1>" to partition 0 inside the open transaction and waits
 * until every one is acknowledged. */
static void send_txn_records_to(rt_producer *p, int32_t part, const char *tag, int n, bool flush)
{
    for (int i = 0; i < n; i++) {
        char v[32];
        int len = snprintf(v, sizeof(v), "%s-%d", tag, i);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = v, .value_len = len, .timestamp_ms = -1},
            .sequence = -1};
        assert_int_equal(rt_producer_send(p, TOPIC, part, &m, NULL, NULL), 0);
    }
    if (flush)
        assert_int_equal(rt_producer_flush(p, -1), 0);
}

static void send_txn_records(rt_producer *p, const char *tag, int n)
{
    send_txn_records_to(p, 0, tag, n, true);
}

/* Retries an end (commit or abort) until it answers 0, accepting only what a partition that
 * has not recovered yet answers meanwhile (bound_ms passes: fails the test). */
static void end_until_ok(rt_producer *p, bool commit, int64_t bound_ms)
{
    int64_t until = now_ms() + bound_ms;
    int rc;
    while ((rc = commit ? rt_producer_commit(p, -1) : rt_producer_abort(p, -1)) != 0) {
        if ((rc != RT_E_IO_FAILED && rc != RT_E_CONCURRENT_TRANSACTIONS) || now_ms() > until)
            fprintf(stderr, "%s: %s\n", commit ? "commit" : "abort", rt_error_detail());
        assert_true(rc == RT_E_IO_FAILED || rc == RT_E_CONCURRENT_TRANSACTIONS);
        assert_true(now_ms() <= until);
        usleep(20 * 1000);
    }
}

/* The engine's write side did not fail: only partitions did, and every one recovered. */
static void assert_healed(rt_engine *e, struct fault_log *fl)
{
    struct rt_stats s;
    int64_t until = now_ms() + 30000;
    do { /* the recovery runs between rounds: wait for it */
        stats(e, &s);
        if (s.partitions_failed == 0)
            break;
        usleep(20 * 1000);
    } while (now_ms() < until);
    assert_int_equal(s.write_error, 0);
    assert_int_equal(s.partitions_failed, 0);
    assert_true(s.partition_faults >= 1);
    assert_true(s.partition_recoveries >= 1);
    pthread_mutex_lock(&fl->lock);
    assert_int_equal(fl->engine_wide, 0);
    assert_true(fl->recoveries >= 1);
    pthread_mutex_unlock(&fl->lock);
}

/* A clean close (no partition left frozen), a clean verify, and a reopen that reads what the
 * running engine read under read_committed in partition 0. */
static void close_verify_reopen_part(struct tu_fixture *f, struct io_fault_plan *plan,
                                     uint32_t part, const char *committed)
{
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    io_fault_plan_release(plan);
    assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
    struct rt_options ro = f->o;
    assert_int_equal(rt_open(f->dir, &ro, &f->e), 0);
    char *v = read_values_iso(f->e, TOPIC, part, RT_READ_COMMITTED);
    assert_string_equal(v, committed);
    free(v);
}

static void close_verify_reopen(struct tu_fixture *f, struct io_fault_plan *plan,
                                const char *committed0)
{
    close_verify_reopen_part(f, plan, 0, committed0);
}

/* A power loss (every byte not fdatasynced is gone), the recovering open, then what it reads
 * under read_committed in partitions 0 and 1; then a clean close, a clean verify and a reopen
 * that reads the same. */
static void power_loss_reopen(struct tu_fixture *f, struct io_fault_plan *plan,
                              const char *committed0, const char *committed1)
{
    assert_int_equal(io_fault_power_loss(plan), 0);
    (void)rt_close(f->e);
    f->e = NULL;
    io_fault_plan_release(plan);
    struct rt_options ro = f->o;
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(rt_open(f->dir, &ro, &f->e), 0);
        char *v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
        assert_string_equal(v, committed0);
        free(v);
        v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
        assert_string_equal(v, committed1);
        free(v);
        if (pass == 0) {
            assert_int_equal(rt_close(f->e), 0);
            f->e = NULL;
            assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
        }
    }
}

/* SH11, CO15: the COMMIT marker of a one-round commit cannot be written (the data partition's
 * files refuse writes after the data was acknowledged). The commit is not reported done, the
 * engine keeps writing, read_committed does not see the transaction; once the disk takes writes
 * the partition recovers and the coordinator writes the marker (its PrepareCommit is durable),
 * so the records become visible exactly once; a retried commit answers the outcome. */
static void test_heal_marker_write(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine(f, &plan, &fl);
    rt_producer *p = open_txn_producer(f->e);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "c1", 3);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "c2", 3); /* acknowledged: durable before the fault */
    /* Offsets in the transaction: applied only once every marker is written (GO1, CO15). */
    struct rt_offset consumed = {.topic = TOPIC, .partition = 1, .offset = 42, .metadata = NULL};
    assert_int_equal(rt_producer_send_offsets(p, "heal-group", &consumed, 1), 0);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, P0_FILES);
    int rc = rt_producer_commit(p, -1);
    fprintf(stderr, "commit with its marker refused: %s\n", rt_error_detail());
    assert_int_not_equal(rc, 0); /* not reported committed */
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11: not the engine's */
    /* heal-0, and the offsets partition if its marker shared the failed round (SH4). */
    assert_true(s.partitions_failed >= 1 && s.partitions_failed <= 2);
    char *v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, "c1-0|c1-1|c1-2|");
    free(v);
    /* The other partition (same shard) and the coordinator keep writing. */
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 1, 8, 0, 1, "b", &base, 0), 0);
    usleep(200 * 1000); /* retries by the coordinator meanwhile change nothing */
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, "c1-0|c1-1|c1-2|");
    free(v);
    int64_t off = -2;
    assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 1, false, &off), 0);
    assert_int_equal(off, -1); /* pending: not applied before its transaction completes */
    io_fault_rules_clear(&plan);
    end_until_ok(p, true, 30000); /* the retry learns the outcome: committed */
    assert_healed(f->e, &fl);
    const char *want = "c1-0|c1-1|c1-2|c2-0|c2-1|c2-2|";
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, want);
    free(v);
    assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 1, true, &off), 0);
    assert_int_equal(off, 42); /* applied with the commit's completion */
    /* The producer goes on. */
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "c3", 2);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    want = "c1-0|c1-1|c1-2|c2-0|c2-1|c2-2|c3-0|c3-1|";
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, want);
    free(v);
    assert_int_equal(rt_producer_close(p), 0);
    close_verify_reopen(f, &plan, want);
    assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 1, true, &off), 0);
    assert_int_equal(off, 42);
    tu_fixture_close(f);
}

/* SH11: a write of __transaction_state fails (the PrepareCommit, then the PrepareAbort). Nothing
 * is adopted that is not durable: the transaction stays open (its records invisible to
 * read_committed), the abort retried once the disk takes writes aborts it, and the aborted
 * records are never visible; the next transaction commits. */
static void test_heal_txn_state_write(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine(f, &plan, &fl);
    rt_producer *p = open_txn_producer(f->e);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "c1", 2);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "x2", 3);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, "__transaction_state-");
    int rc = rt_producer_commit(p, -1);
    fprintf(stderr, "commit with its PrepareCommit refused: %s\n", rt_error_detail());
    assert_int_not_equal(rc, 0);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11 */
    assert_int_equal(s.partitions_failed, 1);
    assert_int_not_equal(rt_producer_abort(p, -1), 0); /* its PrepareAbort cannot be written */
    char *v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, "c1-0|c1-1|");
    free(v);
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 1, 8, 0, 1, "b", &base, 0), 0);
    io_fault_rules_clear(&plan);
    end_until_ok(p, false, 30000);
    assert_healed(f->e, &fl);
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_UNCOMMITTED);
    assert_non_null(strstr(v, "x2-0|x2-1|x2-2|")); /* written, then aborted */
    free(v);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records(p, "c3", 2);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    const char *want = "c1-0|c1-1|c3-0|c3-1|";
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, want);
    free(v);
    assert_int_equal(rt_producer_close(p), 0);
    close_verify_reopen(f, &plan, want);
    tu_fixture_close(f);
}

/* CO15, CO10 at run time: a one-round commit whose last batch cannot be written (heal-1, on
 * its own shard) while its PrepareCommit is durable (__transaction_state, on the other shard),
 * and whose PrepareAbort then fails too. The PrepareCommit left in memory is completed by CO10's
 * rule from the partition's state once it recovered — an abort, since the data never became
 * durable — not by its state's name; the producer's abort learns the outcome, the failed
 * records are never visible, and the next transaction commits. */
static int txn_state_of(void *ctx, const struct rt_txn_info *t)
{
    if (strcmp(t->transactional_id, "heal-txn") == 0)
        snprintf(ctx, 32, "%s", t->state);
    return 0;
}

static void test_heal_txn_data_and_abort_write(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    /* Partitions are placed on shards in creation order: heal-0 and __transaction_state-0
     * (created by the producer's init, after the topic) on one shard, heal-1 on the other. */
    open_txn_engine_shards(f, &plan, &fl, 2);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "heal-txn";
    po.linger_ms = 60000; /* the records stay in the producer until the commit hands them over */
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 1, "c1", 2, true);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    usleep(200 * 1000); /* its lazy CompleteCommit is written */
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 1, "x2", 3, false); /* the commit's last batch */
    struct io_fault_rule data = {.mode = IO_FAULT_FOREVER,
                                 .op = IO_OP_WRITE,
                                 .nth = 1,
                                 .error = ENOSPC,
                                 .path_contains = TOPIC "-1/"};
    struct io_fault_rule abort_record = {.mode = IO_FAULT_ONCE,
                                         .op = IO_OP_WRITE,
                                         .nth =
                                             2, /* the PrepareCommit passes, its PrepareAbort not */
                                         .error = ENOSPC,
                                         .path_contains = "__transaction_state-"};
    assert_int_equal(io_fault_rule_add(&plan, &data), 0);
    assert_int_equal(io_fault_rule_add(&plan, &abort_record), 0);
    int rc = rt_producer_commit(p, -1);
    fprintf(stderr, "commit with its data and its abort refused: %s\n", rt_error_detail());
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(rt_error_detail(), "its abort could not be written yet"));
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11 */
    char *v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
    assert_string_equal(v, "c1-0|c1-1|");
    free(v);
    io_fault_rules_clear(&plan);
    end_until_ok(p, false, 30000); /* CO10 decided abort: the abort learns it */
    char st[32] = "";
    assert_int_equal(rt_txn_list(f->e, txn_state_of, st), 0);
    assert_string_equal(st, "CompleteAbort");
    assert_healed(f->e, &fl);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 1, "c3", 2, true);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    const char *want = "c1-0|c1-1|c3-0|c3-1|";
    v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
    assert_string_equal(v, want);
    free(v);
    assert_int_equal(rt_producer_close(p), 0);
    close_verify_reopen_part(f, &plan, 1, want);
    tu_fixture_close(f);
}

/* SH11, CO15 across shards: a transaction on two partitions (heal-0 with __transaction_state on
 * one shard, heal-1 on the other) whose PrepareCommit is durable and whose COMMIT marker lands in
 * heal-0 but not in heal-1 (ENOSPC there). The commit is not reported done; heal-0 shows the
 * transaction, heal-1 holds it back (its LSO), and nothing is engine-wide. Once heal-1's disk takes
 * writes it heals and the coordinator writes its marker: both partitions show the transaction
 * once (the decision is never flipped: CO2). A power loss right after changes nothing that
 * read_committed saw, and the producer goes on. */
static void test_heal_marker_write_two_partitions(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine_shards(f, &plan, &fl, 2);
    rt_producer *p = open_txn_producer(f->e);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 0, "c1", 2, false);
    send_txn_records_to(p, 1, "d1", 2, true);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 0, "c2", 2, false);
    send_txn_records_to(p, 1, "d2", 2, true); /* acknowledged: durable before the fault */
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, TOPIC "-1/");
    int rc = rt_producer_commit(p, -1);
    fprintf(stderr, "commit with one of its two markers refused: %s\n", rt_error_detail());
    assert_int_not_equal(rc, 0);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11: not the engine's */
    assert_int_equal(s.partitions_failed, 1);
    char *v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
    assert_string_equal(v, "d1-0|d1-1|"); /* held back until its marker is written */
    free(v);
    io_fault_rules_clear(&plan);
    end_until_ok(p, true, 30000); /* decided: the retry learns it committed */
    assert_healed(f->e, &fl);
    const char *want0 = "c1-0|c1-1|c2-0|c2-1|", *want1 = "d1-0|d1-1|d2-0|d2-1|";
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, want0);
    free(v);
    v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
    assert_string_equal(v, want1);
    free(v);
    assert_int_equal(rt_producer_close(p), 0);
    power_loss_reopen(f, &plan, want0, want1);
    p = open_txn_producer(f->e);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 0, "c3", 1, false);
    send_txn_records_to(p, 1, "d3", 1, true);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
    v = read_values_iso(f->e, TOPIC, 0, RT_READ_COMMITTED);
    assert_string_equal(v, "c1-0|c1-1|c2-0|c2-1|c3-0|");
    free(v);
    v = read_values_iso(f->e, TOPIC, 1, RT_READ_COMMITTED);
    assert_string_equal(v, "d1-0|d1-1|d2-0|d2-1|d3-0|");
    free(v);
    tu_fixture_close(f);
}

/* SH11, CO15: the PrepareCommit of a transaction on two partitions cannot be written
 * (__transaction_state refuses writes): not decided, so as if never asked — neither partition
 * shows it, the abort retried after the disk frees aborts it on both; then a power loss after
 * the healing: the aborted records stay invisible everywhere, the committed ones stay. */
static void test_heal_decision_write_power_loss(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine_shards(f, &plan, &fl, 2);
    rt_producer *p = open_txn_producer(f->e);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 0, "c1", 1, false);
    send_txn_records_to(p, 1, "d1", 1, true);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_begin(p), 0);
    send_txn_records_to(p, 0, "x2", 2, false);
    send_txn_records_to(p, 1, "y2", 2, true);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, "__transaction_state-");
    assert_int_not_equal(rt_producer_commit(p, -1), 0);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11 */
    for (uint32_t part = 0; part < 2; part++) {
        char *v = read_values_iso(f->e, TOPIC, part, RT_READ_COMMITTED);
        assert_string_equal(v, part == 0 ? "c1-0|" : "d1-0|");
        free(v);
    }
    io_fault_rules_clear(&plan);
    end_until_ok(p, false, 30000);
    assert_healed(f->e, &fl);
    assert_int_equal(rt_producer_close(p), 0);
    power_loss_reopen(f, &plan, "c1-0|", "d1-0|");
    for (uint32_t part = 0; part < 2; part++) { /* written, then aborted: never visible */
        char *v = read_values_iso(f->e, TOPIC, part, RT_READ_UNCOMMITTED);
        assert_non_null(strstr(v, part == 0 ? "x2-0|x2-1|" : "y2-0|y2-1|"));
        free(v);
    }
    tu_fixture_close(f);
}

/* PA17, SH10: under sync=interval (published bytes not yet fdatasynced) a roll meets a full
 * disk (the next segment's or the producer snapshot's file cannot be created). The roll
 * fdatasyncs the published bytes first, so the failure concerns the partition alone: it heals in
 * place once the disk takes writes, the other partition never stops, and every acknowledged
 * record is there once, in order, before and after a reopen. (Before PA17 the engine's write
 * side failed until a reopen.) */
static void test_heal_failed_roll_interval(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct rt_options o = f->o;
    o.shard_count = 1;
    o.sync_mode = RT_SYNC_INTERVAL;
    o.sync_interval_ms = 600000; /* nothing synced by time: every batch stays unsynced */
    o.sync_interval_bytes = 0;
    o.on_fault = on_fault;
    o.on_fault_ctx = &fl;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    struct acked a0 = {0}, a1 = {0};
    int32_t seq0 = 0, seq1 = 0;
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, seq0, 4, "a", &base, 1000), 0);
    acked_add(&a0, "a", 7, seq0, 4);
    seq0 += 4;
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_DIR_ENTRY, ENOSPC, P0_FILES);
    int rc = 0;
    for (int i = 0; i < 400 && rc == 0; i++) {
        rc = append_idem(f->e, TOPIC, 0, 7, seq0, 4, "a", &base, 1000);
        if (rc == 0) {
            acked_add(&a0, "a", 7, seq0, 4);
            seq0 += 4;
        }
    }
    fprintf(stderr, "a roll under sync=interval refused: %s\n", rt_error_detail());
    assert_int_equal(rc, RT_E_IO_FAILED);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* PA17: the partition's fault, not the engine's */
    assert_int_equal(s.partitions_failed, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(append_idem(f->e, TOPIC, 1, 8, seq1, 1, "b", &base, 0), 0);
        acked_add(&a1, "b", 8, seq1, 1);
        seq1++;
    }
    io_fault_rules_clear(&plan);
    (void)append_until_ok(f->e, 0, 7, seq0, 4, "a", 30000); /* the same batch, once */
    acked_add(&a0, "a", 7, seq0, 4);
    seq0 += 4;
    assert_healed(f->e, &fl);
    for (int pass = 0; pass < 2; pass++) {
        char *v0 = read_values(f->e, TOPIC, 0, NULL);
        char *v1 = read_values(f->e, TOPIC, 1, NULL);
        assert_string_equal(v0, a0.text);
        assert_string_equal(v1, a1.text);
        free(v0);
        free(v1);
        if (pass == 0) {
            assert_int_equal(rt_close(f->e), 0);
            f->e = NULL;
            io_fault_plan_release(&plan);
            assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
            assert_int_equal(rt_open(f->dir, &o, &f->e), 0);
        }
    }
    free(a0.text);
    free(a1.text);
    tu_fixture_close(f);
}

/* SH10: under sync=interval a partition frozen by a failed write (alone: the write concerns no
 * published byte) still holds published bytes not yet synced; its recovery attempt's fdatasync
 * covers them too, and when that fdatasync fails (EIO, Linux dropping the pages) they may be gone:
 * the attempt fails the engine's write side instead of recovering later over a hole. */
static void test_heal_attempt_fdatasync_unsynced(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.track_unsynced = true;
    plan.writeback_errors = true;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct rt_options o = f->o;
    o.shard_count = 1;
    o.sync_mode = RT_SYNC_INTERVAL;
    o.sync_interval_ms = 600000;
    o.sync_interval_bytes = 0;
    o.on_fault = on_fault;
    o.on_fault_ctx = &fl;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    int64_t base = -1;
    for (int32_t seq = 0; seq < 3; seq++) /* published, not synced */
        assert_int_equal(append_idem(f->e, TOPIC, 0, 7, seq, 1, "a", &base, 0), 0);
    struct io_fault_rule full = {.mode = IO_FAULT_FOREVER,
                                 .op = IO_OP_WRITE,
                                 .nth = 1,
                                 .error = ENOSPC,
                                 .path_contains = P0_FILES};
    assert_int_equal(io_fault_rule_add(&plan, &full), 0);
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 3, 1, "x", &base, 0), RT_E_IO_FAILED);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* a write: the partition's alone */
    assert_int_equal(s.partitions_failed, 1);
    io_fault_rules_clear(&plan);
    struct io_fault_rule sync_eio = {.mode = IO_FAULT_FOREVER,
                                     .op = IO_OP_FDATASYNC,
                                     .nth = 1,
                                     .error = EIO,
                                     .path_contains = P0_FILES};
    assert_int_equal(io_fault_rule_add(&plan, &sync_eio), 0);
    int64_t until = now_ms() + 30000;
    do { /* the recovery attempt comes between rounds */
        usleep(20 * 1000);
        stats(f->e, &s);
    } while (s.write_error == 0 && now_ms() < until);
    assert_int_equal(s.write_error, -EIO);
    pthread_mutex_lock(&fl.lock);
    assert_true(fl.engine_wide >= 1);
    pthread_mutex_unlock(&fl.lock);
    assert_int_equal(s.partition_recoveries, 0);
    io_fault_rules_clear(&plan);
    usleep(100 * 1000);
    stats(f->e, &s);
    assert_int_equal(s.partition_recoveries, 0); /* never trusted again until a reopen */
    assert_int_equal(append_idem(f->e, TOPIC, 1, 8, 0, 1, "b", &base, 0), RT_E_IO_FAILED);
    (void)rt_close(f->e);
    f->e = NULL;
    io_fault_plan_release(&plan);
    tu_fixture_open(f);
    tu_fixture_close(f);
}

/* LG13: a topic creation whose catalogue (ringtail.meta) cannot be stored — its new copy's
 * fdatasync refused, the old one left — is undone in place: no directory and no intent left,
 * the engine's write side up (the other topic keeps writing), and the same creation succeeds
 * once the disk takes writes; verify is clean and a reopen finds the topic. (Before LG13 the
 * engine's write side failed until a reopen.) */
static void test_heal_topic_create_catalogue(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o = f->o;
    o.shard_count = 1;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_FDATASYNC_DIRECT, ENOSPC, "ringtail.meta.tmp");
    int rc = rt_topic_create(f->e, "made", 3);
    fprintf(stderr, "creation with its catalogue refused: %s\n", rt_error_detail());
    assert_int_not_equal(rc, 0);
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* LG13 */
    uint32_t parts = 0;
    assert_int_not_equal(rt_topic_describe(f->e, "made", &parts), 0);
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/made-%d", f->dir, i);
        assert_int_not_equal(access(path, F_OK), 0);
    }
    char intent[4096];
    snprintf(intent, sizeof(intent), "%s/topic-create.tmp", f->dir);
    assert_int_not_equal(access(intent, F_OK), 0);
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 0, 1, "a", &base, 0), 0);
    io_fault_rules_clear(&plan);
    assert_int_equal(rt_topic_create(f->e, "made", 3), 0);
    assert_int_equal(append_idem(f->e, "made", 2, 9, 0, 1, "m", &base, 0), 0);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    io_fault_plan_release(&plan);
    assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
    tu_fixture_open(f);
    assert_int_equal(rt_topic_describe(f->e, "made", &parts), 0);
    assert_int_equal(parts, 3);
    char *v = read_values(f->e, "made", 2, NULL);
    assert_string_equal(v, "m-9-0|");
    free(v);
    tu_fixture_close(f);
}

/* LG13 for LG10: partitions being added whose catalogue cannot be stored are undone in place:
 * the topic keeps its count, no directory is left, the write side stays up, and the same
 * addition succeeds once the disk takes writes. (Before, the engine's write side failed.) */
static void test_heal_add_partitions_catalogue(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o = f->o;
    o.shard_count = 2;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &f->e), 0);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 2), 0);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_FDATASYNC_DIRECT, ENOSPC, "ringtail.meta.tmp");
    assert_int_not_equal(rt_topic_add_partitions(f->e, TOPIC, 4), 0);
    fprintf(stderr, "partitions added, catalogue refused: %s\n", rt_error_detail());
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* LG13 */
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(f->e, TOPIC, &parts), 0);
    assert_int_equal(parts, 2);
    for (int i = 2; i < 4; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s-%d", f->dir, TOPIC, i);
        assert_int_not_equal(access(path, F_OK), 0);
    }
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 1, 7, 0, 1, "a", &base, 0), 0);
    io_fault_rules_clear(&plan);
    assert_int_equal(rt_topic_add_partitions(f->e, TOPIC, 4), 0);
    assert_int_equal(append_idem(f->e, TOPIC, 3, 9, 0, 1, "m", &base, 0), 0);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    io_fault_plan_release(&plan);
    assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
    tu_fixture_open(f);
    assert_int_equal(rt_topic_describe(f->e, TOPIC, &parts), 0);
    assert_int_equal(parts, 4);
    char *v = read_values(f->e, TOPIC, 3, NULL);
    assert_string_equal(v, "m-9-0|");
    free(v);
    tu_fixture_close(f);
}

/* SH11, GO1: a write of __consumer_offsets fails. The commit answers RT_E_IO_FAILED and is not
 * applied (the fetched offset stays the last durable one), data partitions keep writing, and
 * once the disk takes writes the same commit goes through; a reopen finds what was acknowledged. */
static void test_heal_offsets_write(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine(f, &plan, &fl);
    struct rt_offset o5 = {.topic = TOPIC, .partition = 0, .offset = 5, .metadata = "m5"};
    assert_int_equal(rt_group_commit_offsets(f->e, "heal-group", &o5, 1), 0);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, "__consumer_offsets-");
    struct rt_offset o9 = {.topic = TOPIC, .partition = 0, .offset = 9, .metadata = "m9"};
    assert_int_equal(rt_group_commit_offsets(f->e, "heal-group", &o9, 1), RT_E_IO_FAILED);
    fprintf(stderr, "offset commit refused: %s\n", rt_error_detail());
    struct rt_stats s;
    stats(f->e, &s);
    assert_int_equal(s.write_error, 0); /* SH11 */
    int64_t off = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 0, true, &off), 0);
    assert_int_equal(off, 5); /* GO1: nothing applied that is not in the log */
    int64_t base = -1;
    assert_int_equal(append_idem(f->e, TOPIC, 0, 7, 0, 1, "a", &base, 0), 0);
    assert_int_equal(rt_group_commit_offsets(f->e, "heal-group", &o9, 1), RT_E_IO_FAILED);
    io_fault_rules_clear(&plan);
    int64_t until = now_ms() + 30000;
    int rc;
    while ((rc = rt_group_commit_offsets(f->e, "heal-group", &o9, 1)) != 0) {
        assert_int_equal(rc, RT_E_IO_FAILED);
        assert_true(now_ms() <= until);
        usleep(20 * 1000);
    }
    assert_healed(f->e, &fl);
    assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 0, true, &off), 0);
    assert_int_equal(off, 9);
    struct rt_offset o12 = {.topic = TOPIC, .partition = 1, .offset = 12, .metadata = NULL};
    assert_int_equal(rt_group_commit_offsets(f->e, "heal-group", &o12, 1), 0);
    /* A power loss after the healing: every acknowledged commit is there (recovering open,
     * then again after a clean close and a clean verify). */
    assert_int_equal(io_fault_power_loss(&plan), 0);
    (void)rt_close(f->e);
    f->e = NULL;
    io_fault_plan_release(&plan);
    struct rt_options ro = f->o;
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(rt_open(f->dir, &ro, &f->e), 0);
        assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 0, true, &off), 0);
        assert_int_equal(off, 9);
        assert_int_equal(rt_group_fetch_offsets(f->e, "heal-group", TOPIC, 1, true, &off), 0);
        assert_int_equal(off, 12);
        if (pass == 0) {
            assert_int_equal(rt_close(f->e), 0);
            f->e = NULL;
            assert_int_equal(rt_verify(f->dir, verify_problem, NULL), 0);
        }
    }
    tu_fixture_close(f);
}

/* PR9: an in-process rt_producer (anonymous, idempotent) whose batch met a partition fault: the
 * delivery and the flush report RT_E_IO_FAILED naming the cause, sends to that partition answer
 * it meanwhile, and the same producer writes again once the partition has recovered in place;
 * the failed record is never visible, every acknowledged one is there once, and the producer's
 * other partition was never refused. */
static void test_heal_producer_after_fault(void **state)
{
    struct tu_fixture *f = *state;
    struct io_fault_plan plan;
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    open_txn_engine(f, &plan, &fl);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    struct rt_producer_message m = {
        .record = {.key_len = -1, .value = "p-0", .value_len = 3, .timestamp_ms = -1},
        .sequence = -1};
    int err = 1;
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(err, 0);
    refuse(&plan, IO_FAULT_FOREVER, IO_OP_WRITE, ENOSPC, P0_FILES);
    m.record.value = "lost";
    m.record.value_len = 4;
    err = 1;
    int err2 = 1;
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err), 0);
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err2), 0);
    assert_int_equal(rt_producer_flush(p, -1), RT_E_IO_FAILED);
    assert_int_equal(err, RT_E_IO_FAILED);
    assert_true(err2 == RT_E_IO_FAILED || err2 == RT_E_OUT_OF_ORDER_SEQUENCE);
    /* The other partition is not refused: the fault is not the producer's end. */
    m.record.value = "q-0";
    m.record.value_len = 3;
    err = 1;
    assert_int_equal(rt_producer_send(p, TOPIC, 1, &m, pdelivered, &err), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(err, 0);
    /* While the disk refuses, the same producer keeps answering RT_E_IO_FAILED. */
    m.record.value = "lost";
    m.record.value_len = 4;
    for (int i = 0; i < 3; i++) {
        err = 1;
        int rc = rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err);
        if (rc == 0)
            rc = rt_producer_flush(p, -1);
        assert_int_equal(rc ? rc : err, RT_E_IO_FAILED);
        if (i == 0)
            fprintf(stderr, "producer meanwhile: %s\n", rt_error_detail());
        usleep(30 * 1000);
    }
    io_fault_rules_clear(&plan);
    m.record.value = "p-1";
    m.record.value_len = 3;
    int64_t until = now_ms() + 30000;
    for (;;) { /* the same producer, the same record, until it is stored */
        err = 1;
        int rc = rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err);
        if (rc == 0)
            rc = rt_producer_flush(p, -1);
        if (rc == 0 && err == 0)
            break;
        assert_true((rc ? rc : err) == RT_E_IO_FAILED ||
                    (rc ? rc : err) == RT_E_OUT_OF_ORDER_SEQUENCE);
        assert_true(now_ms() <= until);
        usleep(20 * 1000);
    }
    m.record.value = "p-2";
    err = 1;
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, pdelivered, &err), 0);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    assert_int_equal(err, 0);
    assert_int_equal(rt_producer_close(p), 0);
    assert_healed(f->e, &fl);
    char *v1 = read_values_iso(f->e, TOPIC, 1, RT_READ_UNCOMMITTED);
    assert_string_equal(v1, "q-0|");
    free(v1);
    close_verify_reopen(f, &plan, "p-0|p-1|p-2|");
    tu_fixture_close(f);
}

/* Fills the file system at dir until ENOSPC; returns the open descriptor of the filler. */
static int fill(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    static char chunk[65536];
    memset(chunk, 'f', sizeof(chunk));
    size_t size = sizeof(chunk);
    while (size >= 4096) {
        ssize_t n = write(fd, chunk, size);
        if (n < 0 && errno != ENOSPC)
            fail_msg("filling the tmpfs: %s", strerror(errno));
        if (n < (ssize_t)size)
            size /= 2; /* the last blocks, smaller */
    }
    return fd;
}

/* The tmpfs mounted by the test, unmounted by its teardown whatever happened. */
static char *tmpfs_mnt;

static int teardown_tmpfs(void **state)
{
    int rc = tu_fixture_teardown(state);
    if (tmpfs_mnt) {
        if (umount2(tmpfs_mnt, MNT_DETACH) != 0)
            fprintf(stderr, "umount %s: %s\n", tmpfs_mnt, strerror(errno));
        tu_rmdir_free(tmpfs_mnt);
        tmpfs_mnt = NULL;
    }
    return rc;
}

static void test_heal_tmpfs_fill_and_free(void **state)
{
    struct tu_fixture *f = *state;
    char *mnt = tu_mkdtemp();
    if (mount("ringtail-heal", mnt, "tmpfs", 0, "size=24m") != 0) {
        fprintf(stderr, "SKIP test_heal_tmpfs_fill_and_free: cannot mount a tmpfs at %s: %s\n", mnt,
                strerror(errno));
        tu_rmdir_free(mnt);
        skip();
    }
    tmpfs_mnt = mnt;
    char *dir = tu_path("%s/data", mnt);
    char *filler = tu_path("%s/filler", mnt);
    struct fault_log fl = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct rt_options o = f->o;
    o.shard_count = 2;
    o.segment_size_bytes = 1 << 20;
    o.on_fault = on_fault;
    o.on_fault_ctx = &fl;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, WRITERS + 1), 0);
    struct pwriter pw = {.e = e, .part = WRITERS};
    atomic_store(&pw.acked_at_ms, now_ms());
    pthread_t pth;
    assert_int_equal(pthread_create(&pth, NULL, pwriter_main, &pw), 0);
    struct writer w[WRITERS];
    pthread_t th[WRITERS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < WRITERS; i++) {
        w[i].e = e;
        w[i].pid = 100 + i;
        w[i].part = (uint32_t)i;
        atomic_store(&w[i].acked_at_ms, now_ms());
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    }
    int cycles_failed = 0;
    for (int c = 0; c < CYCLES; c++) {
        usleep(200 * 1000);
        struct rt_stats before;
        stats(e, &before);
        int fd = fill(filler);
        /* Hold the disk full until a partition has failed (the pre-written lead ahead of each
         * writer lets some appends through for a while), at most 20 s. */
        int64_t until = now_ms() + 20000;
        struct rt_stats s;
        do {
            usleep(20 * 1000);
            stats(e, &s);
        } while (s.partition_faults == before.partition_faults && now_ms() < until);
        cycles_failed += s.partition_faults > before.partition_faults;
        usleep(300 * 1000);
        close(fd);
        assert_int_equal(unlink(filler), 0);
        /* Writes resume: every writer has an append acknowledged after the free (a generous
         * bound, not a figure). */
        int64_t freed = now_ms();
        for (int i = 0; i < WRITERS; i++) {
            while (atomic_load(&w[i].acked_at_ms) <= freed && now_ms() - freed < 30000)
                usleep(10 * 1000);
            assert_true(atomic_load(&w[i].acked_at_ms) > freed);
        }
        while (atomic_load(&pw.acked_at_ms) <= freed && now_ms() - freed < 30000)
            usleep(10 * 1000);
        assert_true(atomic_load(&pw.acked_at_ms) > freed);
        stats(e, &s);
        fprintf(stderr,
                "cycle %d: faults %" PRIu64 ", recoveries %" PRIu64 ", failed now %" PRIu64
                ", resumed after %" PRId64 " ms\n",
                c, s.partition_faults, s.partition_recoveries, s.partitions_failed,
                now_ms() - freed);
    }
    for (int i = 0; i < WRITERS; i++) {
        atomic_store(&w[i].stop, true);
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].error, 0);
    }
    atomic_store(&pw.stop, true);
    pthread_join(pth, NULL);
    assert_int_equal(pw.error, 0);
    fprintf(stderr,
            "rt_producer writer: %" PRId64 " records acknowledged, %" PRIu64
            " failed deliveries (one producer throughout)\n",
            pw.acked.records, atomic_load(&pw.failures));
    assert_true(cycles_failed >= 1); /* the disk really filled */
    struct rt_stats s;
    stats(e, &s);
    assert_int_equal(s.write_error, 0);
    assert_int_equal(s.partitions_failed, 0);
    assert_true(s.partition_recoveries >= 1);
    for (int i = 0; i < WRITERS; i++) {
        int64_t n = 0;
        char *v = read_values(e, TOPIC, (uint32_t)i, &n);
        assert_string_equal(v, w[i].acked.text); /* every acknowledged record, once, in order */
        free(v);
    }
    char *pv = read_values(e, TOPIC, WRITERS, NULL);
    assert_string_equal(pv, pw.acked.text);
    free(pv);
    assert_int_equal(rt_close(e), 0);
    const char *cli = getenv("RT_CLI");
    if (cli)
        assert_int_equal(tu_system("'%s' verify '%s' >/dev/null", cli, dir), 0);
    /* And after a reopen. */
    assert_int_equal(rt_open(dir, &o, &e), 0);
    for (int i = 0; i < WRITERS; i++) {
        char *v = read_values(e, TOPIC, (uint32_t)i, NULL);
        assert_string_equal(v, w[i].acked.text);
        free(v);
        free(w[i].acked.text);
    }
    pv = read_values(e, TOPIC, WRITERS, NULL);
    assert_string_equal(pv, pw.acked.text);
    free(pv);
    free(pw.acked.text);
    assert_int_equal(rt_close(e), 0);
    free(dir);
    free(filler);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_heal_write_enospc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_torn_write_eio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_fdatasync_eio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_failed_roll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_failed_roll_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_attempt_fdatasync_unsynced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_topic_create_catalogue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_add_partitions_catalogue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_never_when_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_marker_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_txn_state_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_txn_data_and_abort_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_marker_write_two_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_decision_write_power_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_offsets_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_producer_after_fault, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_tmpfs_fill_and_free, setup, teardown_tmpfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
