/*
 * test_cleaner.c — log compaction (engine/log/cleaner.c, docs/format.md A.9) against a model.
 *
 * The model: every record ever written, with its key, its value and whether its transaction
 * committed. After any mix of plain keyed appends, tombstones, committed and aborted
 * transactions, cleaner runs (rt_topic_compact, with a key map small enough to need several
 * passes) and reopens, a read_committed read of the whole partition must give
 *   M1  no aborted record and nothing that was never written (each value is unique);
 *   M2  for every key, its latest committed value last (a tombstone, or nothing at all once the
 *       tombstone expired, for a deleted key);
 *   M3  offsets as they were: the records read after a clean are a subsequence, offsets equal, of
 *       those read before it (CLN6), and every record of the active segment is still there;
 *   M4  rt_verify reports no problem (open and verify agree on a compacted log, CL1, CL2);
 *   M5  right after a clean, no superseded record is left below the active segment: a record
 *       there is the last of its key below it (batches hold up to 3 keys, so a cleaner that
 *       keeps whole batches fails this; CLN7 rewrites them with the needed records only).
 * The crash tests kill a child (or lose the power under it) after each step of the swap
 * (CL3-CL6) and check M1-M4 after the reopen: the old segments or the new ones, never both,
 * never neither. Every test runs in seconds. The cleaner's own file steps do not go through the
 * io backend (its writes are pwrite and fdatasync, like a seal's), so one backend is enough.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/batches.h"
#include "helpers/child.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC     "ct"
#define KEYS      40
#define WRITES    200
#define VALUE_MAX 64

/* ---- the model ---- */

struct written {
    int key;
    bool tombstone;
    bool committed; /* false: aborted */
};

struct model {
    struct written w[WRITES * 4];
    int count;
    int latest[KEYS]; /* index into w of the latest committed record, -1 none */
};

/* Every record's timestamp: one clock reading per run, so batch sizes (and with them segment
 * boundaries) do not depend on when a record was written. */
static int64_t ts_ms;

static void model_init(struct model *m)
{
    memset(m, 0, sizeof(*m));
    for (int k = 0; k < KEYS; k++)
        m->latest[k] = -1;
}

/* A read record: offset and the model index its value names. */
struct seen {
    int64_t offset;
    int idx;
    bool tombstone;
};

static void options(struct rt_options *o)
{
    tu_options_small(o, 4096, 1024, 256);
    o->cleaner_buffer_bytes = 1024; /* 32 slots, 24 keys: several passes over 40 keys */
    o->sync_mode = RT_SYNC_NONE;    /* seconds, not minutes; the crash tests lose no page cache */
    /* segment_maps.h MM2, segment.c SG8: two mapped sealed segments at once, so the cleaner's
     * reads and swaps run while the budget keeps releasing the segments it does not pin. */
    o->mapped_segments_max = 2;
}

static void create_topic(rt_engine *e, const char *delete_retention_ms)
{
    struct rt_topic_config c[] = {{"cleanup.policy", "compact"},
                                  {"delete.retention.ms", delete_retention_ms}};
    assert_int_equal(rt_topic_create_with_configs(e, TOPIC, 1, c, 2), 0);
}

static void append_plain(rt_engine *e, struct model *m, int n, uint32_t *rnd)
{
    struct rt_record r[3];
    struct rt_header h[3];
    char keys[3][16], vals[3][VALUE_MAX];
    for (int i = 0; i < n; i++) {
        int k = (int)(rand_r(rnd) % KEYS);
        bool tomb = rand_r(rnd) % 8 == 0;
        int idx = m->count++;
        m->w[idx] = (struct written){k, tomb, true};
        snprintf(keys[i], sizeof keys[i], "k%d", k);
        snprintf(vals[i], sizeof vals[i], "v%d", idx);
        r[i] = (struct rt_record){.key = keys[i],
                                  .key_len = (int32_t)strlen(keys[i]),
                                  .value = tomb ? NULL : vals[i],
                                  .value_len = tomb ? -1 : (int32_t)strlen(vals[i]),
                                  .timestamp_ms = ts_ms};
        /* Every record names its model entry in a header "i" (tombstones have no value). */
        h[i] = (struct rt_header){"i", 1, vals[i] + 1, (int32_t)strlen(vals[i] + 1)};
        r[i].headers = &h[i];
        r[i].header_count = 1;
        m->latest[k] = idx;
    }
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, 0, r, (size_t)n, &base), 0);
}

static void txn(rt_producer *p, struct model *m, bool commit, uint32_t *rnd)
{
    assert_int_equal(rt_producer_begin(p), 0);
    int n = 1 + (int)(rand_r(rnd) % 3);
    int idx[3];
    for (int i = 0; i < n; i++) {
        int k = (int)(rand_r(rnd) % KEYS);
        idx[i] = m->count++;
        m->w[idx[i]] = (struct written){k, false, commit};
        char key[16], val[VALUE_MAX];
        snprintf(key, sizeof key, "k%d", k);
        snprintf(val, sizeof val, "v%d", idx[i]);
        struct rt_header h = {"i", 1, val + 1, (int32_t)strlen(val + 1)};
        struct rt_producer_message msg = {.record = {.key = key,
                                                     .key_len = (int32_t)strlen(key),
                                                     .value = val,
                                                     .value_len = (int32_t)strlen(val),
                                                     .timestamp_ms = ts_ms,
                                                     .headers = &h,
                                                     .header_count = 1},
                                          .sequence = -1};
        assert_int_equal(rt_producer_send(p, TOPIC, 0, &msg, NULL, NULL), 0);
    }
    if (commit) {
        assert_int_equal(rt_producer_commit(p, 10000), 0);
        for (int i = 0; i < n; i++)
            m->latest[m->w[idx[i]].key] = idx[i];
    } else {
        assert_int_equal(rt_producer_abort(p, 10000), 0);
    }
}

/* Reads the whole partition under read_committed; each record's header "i" names its model
 * entry. */
static int read_all(rt_engine *e, const struct model *m, struct seen *out, int cap,
                    int64_t *active_base)
{
    int n = 0;
    int64_t off = 0;
    *active_base = -1;
    for (;;) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, TOPIC, 0, off, 1 << 20, RT_READ_COMMITTED, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            break;
        if (rc)
            fprintf(stderr, "fetch at %" PRId64 ": %s\n", off, rt_error_detail());
        assert_int_equal(rc, 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        if (v->size_bytes == 0) {
            rt_fetch_release(f);
            break;
        }
        const char *slash = strrchr(v->segment_path, '/');
        *active_base = strtoll(slash ? slash + 1 : v->segment_path, NULL, 10);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, off), 0);
        struct rt_record_view r;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            assert_true(n < cap);
            assert_true(n == 0 || r.offset > out[n - 1].offset); /* increasing */
            assert_true(r.key_len > 1 && r.key[0] == 'k');
            int k = atoi((const char *)r.key + 1);
            assert_true(k >= 0 && k < KEYS);
            assert_int_equal(r.header_count, 1);
            struct rt_header h;
            assert_int_equal(rt_record_header(&r, 0, &h), 0);
            char buf[VALUE_MAX];
            assert_true(h.value_len > 0 && h.value_len < VALUE_MAX);
            memcpy(buf, h.value, (size_t)h.value_len);
            buf[h.value_len] = 0;
            int idx = atoi(buf);
            assert_true(idx >= 0 && idx < m->count);
            assert_int_equal(m->w[idx].key, k);
            assert_int_equal(m->w[idx].tombstone, r.value_len < 0);
            assert_true(m->w[idx].committed); /* M1 */
            out[n++] = (struct seen){r.offset, idx, r.value_len < 0};
        }
        assert_int_equal(rc, RT_E_END);
        int64_t next = rt_records_next_offset(&it);
        rt_fetch_release(f);
        assert_true(next > off);
        off = next;
    }
    return n;
}

/* M2: each key's latest committed record is the last one read of that key; a deleted key may
 * also be gone altogether (its tombstone expired, nothing older left). */
static void check_latest(const struct model *m, const struct seen *s, int n, bool tombs_may_go)
{
    int last[KEYS];
    for (int k = 0; k < KEYS; k++)
        last[k] = -1;
    for (int i = 0; i < n; i++)
        last[m->w[s[i].idx].key] = s[i].idx;
    for (int k = 0; k < KEYS; k++) {
        int want = m->latest[k];
        if (want >= 0 && m->w[want].tombstone && tombs_may_go && last[k] < 0)
            continue;
        if (last[k] != want) {
            fprintf(stderr, "key k%d: read last %d, latest committed %d\n", k, last[k], want);
            fail();
        }
    }
}

/* M5: no record below bound is followed by a record of its key below bound. */
static void check_no_superseded(const struct model *m, const struct seen *s, int n, int64_t bound)
{
    int64_t last[KEYS];
    for (int k = 0; k < KEYS; k++)
        last[k] = -1;
    for (int i = 0; i < n && s[i].offset < bound; i++) {
        int k = m->w[s[i].idx].key;
        if (last[k] >= 0) {
            fprintf(stderr, "key k%d: offset %" PRId64 " superseded by %" PRId64 " is left\n", k,
                    last[k], s[i].offset);
            fail();
        }
        last[k] = s[i].offset;
    }
}

/* M3: after is a subsequence of before (same offsets, same records), and keeps every record at
 * or past active_base. Returns how many records the clean removed. */
static int check_subsequence(const struct seen *before, int nb, const struct seen *after, int na,
                             int64_t active_base)
{
    int j = 0;
    for (int i = 0; i < nb; i++) {
        if (j < na && after[j].offset == before[i].offset) {
            assert_int_equal(after[j].idx, before[i].idx);
            j++;
        } else {
            assert_true(before[i].offset < active_base);
        }
    }
    assert_int_equal(j, na);
    return nb - na;
}

static void verify_clean(const char *dir)
{
    struct rt_verify_counts c;
    int rc = rt_verify_with_counts(dir, NULL, NULL, &c);
    if (rc != 0)
        (void)tu_system("%s verify %s >&2", getenv("RT_CLI") ? getenv("RT_CLI") : "false", dir);
    assert_int_equal(rc, 0); /* M4 */
}

static rt_producer *txn_producer(rt_engine *e)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "cleaner-model";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, 10000), 0);
    return p;
}

/* ---- the model-based run ---- */

static void model_run(const char *delete_retention_ms, bool tombs_may_go, uint32_t seed)
{
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    create_topic(e, delete_retention_ms);
    rt_producer *p = txn_producer(e);
    static struct model m;
    model_init(&m);
    static struct seen before[WRITES * 4], after[WRITES * 4];
    uint32_t rnd = seed;
    int removed_total = 0, cleans = 0;
    for (int step = 0; step < WRITES; step++) {
        uint32_t op = rand_r(&rnd) % 100;
        if (op < 60) {
            append_plain(e, &m, 1 + (int)(rand_r(&rnd) % 3), &rnd);
        } else if (op < 75) {
            txn(p, &m, true, &rnd);
        } else if (op < 91) {
            txn(p, &m, false, &rnd);
        } else if (op < 97) {
            int64_t ab = -1;
            int nb = read_all(e, &m, before, WRITES * 4, &ab);
            if (rt_topic_compact(e, TOPIC) != 0) {
                fprintf(stderr, "compact: %s\n", rt_error_detail());
                fail();
            }
            int64_t ab2 = -1;
            int na = read_all(e, &m, after, WRITES * 4, &ab2);
            removed_total += check_subsequence(before, nb, after, na, ab);
            check_latest(&m, after, na, tombs_may_go);
            check_no_superseded(&m, after, na, ab2);
            cleans++;
        } else {
            assert_int_equal(rt_producer_close(p), 0);
            assert_int_equal(rt_close(e), 0);
            verify_clean(dir);
            assert_int_equal(rt_open(dir, &o, &e), 0);
            p = txn_producer(e);
        }
    }
    int64_t ab = -1;
    int na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, tombs_may_go);
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    /* The model's claims hold after the last reopen too. */
    assert_int_equal(rt_open(dir, &o, &e), 0);
    na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, tombs_may_go);
    assert_int_equal(rt_close(e), 0);
    assert_true(cleans > 0);
    assert_true(removed_total > 0); /* the cleaner did remove something */
    tu_rmdir_free(dir);
}

static void model_tombstones_kept(void **state)
{
    (void)state;
    model_run("86400000", false, 7);
}

static void model_tombstones_expire(void **state)
{
    (void)state;
    model_run("0", true, 11);
}

/* An idle cleaner run changes nothing it should not: a delete-policy topic is refused. */
static void compact_needs_policy(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    assert_int_equal(rt_topic_compact(e, "plain"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_compact(e, "missing"), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    struct rt_topic_config c = {"cleanup.policy", "compact,delete"};
    assert_int_equal(rt_topic_config_alter(e, "plain", &c, 1, false), 0);
    assert_int_equal(rt_topic_compact(e, "plain"), 0);
    struct rt_topic_config bad = {"cleanup.policy", "compact,shred"};
    assert_int_equal(rt_topic_config_alter(e, "plain", &bad, 1, false), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* LG12: a compacted topic refuses a batch with a record without a key, before anything is
 * appended; a plain topic takes it, and refuses it once altered to compact. */
static void keyless_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    create_topic(e, "86400000");
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    uint8_t batch[512];
    size_t len = tu_batch(batch, sizeof batch, 0, -1, -1, -1, 2, "nokey", 0, ts_ms);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(e, TOPIC, 0, batch, len, &base), RT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(rt_error_detail(), "without a key"));
    len = tu_keyed_batch(batch, sizeof batch, -1, -1, -1, "k1", "v1", ts_ms);
    assert_int_equal(rt_append_batch(e, TOPIC, 0, batch, len, &base), 0);
    assert_int_equal(base, 0); /* the refused batch took no offset */
    len = tu_batch(batch, sizeof batch, 0, -1, -1, -1, 2, "nokey", 0, ts_ms);
    assert_int_equal(rt_append_batch(e, "plain", 0, batch, len, &base), 0);
    struct rt_topic_config c = {"cleanup.policy", "compact"};
    assert_int_equal(rt_topic_config_alter(e, "plain", &c, 1, false), 0);
    len = tu_batch(batch, sizeof batch, 0, -1, -1, -1, 2, "nokey", 0, ts_ms);
    assert_int_equal(rt_append_batch(e, "plain", 0, batch, len, &base), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* The shard's periodic pass (every second) cleans a topic once min.cleanable.dirty.ratio says
 * so, without rt_topic_compact. */
static void background_clean(void **state)
{
    (void)state;
    rt_test_cleaner_background_set(true);
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"cleanup.policy", "compact"},
                                  {"min.cleanable.dirty.ratio", "0.01"}};
    assert_int_equal(rt_topic_create_with_configs(e, TOPIC, 1, c, 2), 0);
    static struct model m;
    static struct seen before[WRITES * 4], after[WRITES * 4];
    model_init(&m);
    uint32_t rnd = 5;
    for (int i = 0; i < 150; i++)
        append_plain(e, &m, 2, &rnd);
    int64_t ab = -1, ab2 = -1;
    int nb = read_all(e, &m, before, WRITES * 4, &ab);
    int na = nb;
    for (int tries = 0; tries < 100 && na == nb; tries++) { /* 10 s at most */
        usleep(100 * 1000);
        na = read_all(e, &m, after, WRITES * 4, &ab2);
    }
    assert_true(na < nb);
    check_subsequence(before, nb, after, na, ab);
    check_latest(&m, after, na, false);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

/* CLN2: a producer's last batch survives the clean, even with nothing the map needs in it (its
 * record has no key), so a retry after a restart that lost every producer snapshot is still
 * recognised as a duplicate from the log alone. */
static void producer_last_batch_kept(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    create_topic(e, "86400000");
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_producer_id_allocate(e, &pid, &epoch), 0);
    uint8_t batch[512], copy[512];
    size_t len = tu_keyed_batch(batch, sizeof batch, pid, epoch, 0, "k-idem", "idem", ts_ms);
    memcpy(copy, batch, len);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(e, TOPIC, 0, batch, len, &base), 0);
    static struct model m;
    model_init(&m);
    uint32_t rnd = 9;
    for (int i = 0; i < 60; i++)
        append_plain(e, &m, 2, &rnd);
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(tu_system("rm -f %s/" TOPIC "-0/*.snapshot", dir), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t again = -1;
    assert_int_equal(rt_append_batch(e, TOPIC, 0, copy, len, &again), 0);
    assert_int_equal(again, base); /* a duplicate: the original offset, nothing appended */
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

/* ---- crashes inside the swap ---- */

struct crash_ctx {
    int die_at; /* step number (cleaner_checkpoint.h), 0: never */
    int nth;    /* die at the nth time that step is reached (SOURCE_GONE repeats) */
    int seen;
    struct io_fault_plan *plan; /* power loss before dying, or NULL (a process crash) */
};

static void crash_hook(int step, void *ctx)
{
    struct crash_ctx *c = ctx;
    if (step != c->die_at || ++c->seen < c->nth)
        return;
    if (c->plan)
        (void)io_fault_power_loss(c->plan);
    _exit(42);
}

/* Writes a log with superseded keys, aborted and committed transactions over many segments.
 * The engine's cleaner thread stays off from here on (until background_clean turns it on): the
 * log must be exactly what this function's own clean left, whatever the machine's load. With
 * it on, a build slower than the housekeeping period (1 s, a loaded machine) let the background
 * clean the whole log; the crash tests' clean then only merged small segments, removing
 * nothing, and "a clean after the crash removes something" failed (the old flake; forced by a
 * 2.5 s pause at i == 140). */
static void build_log(const char *dir, struct model *m)
{
    rt_test_cleaner_background_set(false);
    struct rt_options o;
    options(&o);
    o.cleaner_buffer_bytes = 16u << 20; /* one pass: the crash steps come in a known order */
    o.segment_size_bytes = 2048;        /* small segments: the second clean merges several */
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    create_topic(e, "86400000");
    rt_producer *p = txn_producer(e);
    uint32_t rnd = 3;
    model_init(m);
    for (int i = 0; i < 150; i++) {
        if (i % 10 == 3)
            txn(p, m, false, &rnd);
        else if (i % 10 == 7)
            txn(p, m, true, &rnd);
        else
            append_plain(e, m, 2, &rnd);
        /* One clean midway leaves small segments, so the next one merges several into one
         * (a swap with more than one source: CLEANER_STEP_SOURCE_GONE is reached). */
        if (i == 90)
            assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    }
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_close(e), 0);
}

/* A fresh directory holding build_log's log, opened with its small segments: what the tests
 * that clean it while something else happens start from. *dir: tu_rmdir_free it. */
static rt_engine *open_built(char **dir, struct model *m, struct rt_options *o)
{
    *dir = tu_mkdtemp();
    build_log(*dir, m);
    options(o);
    o->segment_size_bytes = 2048;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(*dir, o, &e), 0);
    return e;
}

/* The inode of the first segment's log: a swap renames a new file over it (CL5). */
static ino_t first_log_inode(const char *dir)
{
    char *path = tu_path("%s/" TOPIC "-0/00000000000000000000.log", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    free(path);
    return st.st_ino;
}

/* The log every crash test starts from, built once and copied. */
static char *template_dir;
static struct model template_model;

static void crash_at(int step, int nth, bool power)
{
    rt_test_cleaner_background_set(false); /* see build_log; the forked child inherits it */
    char *dir = tu_mkdtemp();
    static struct model m;
    static struct seen before[WRITES * 4], after[WRITES * 4];
    if (!template_dir) {
        template_dir = tu_mkdtemp();
        build_log(template_dir, &template_model);
    }
    m = template_model;
    assert_int_equal(tu_system("cp -a %s/. %s/", template_dir, dir), 0);
    ino_t ino_before = first_log_inode(dir);
    struct rt_options o;
    options(&o);
    o.cleaner_buffer_bytes = 16u << 20;
    o.segment_size_bytes = 2048;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t ab = -1;
    int nb = read_all(e, &m, before, WRITES * 4, &ab);
    assert_int_equal(rt_close(e), 0);

    int fd = -1;
    pid_t pid = tu_fork_piped(&fd);
    if (pid == 0) {
        struct io_fault_plan plan = {.track_dirs = true, .track_unsynced = true};
        struct crash_ctx c = {step, nth, 0, power ? &plan : NULL};
        rt_engine *ce = NULL;
        int rc = power ? rt_test_open(dir, &o, &plan, &ce) : rt_open(dir, &o, &ce);
        if (rc != 0)
            _exit(1);
        rt_test_cleaner_hook_set(crash_hook, &c);
        rc = rt_topic_compact(ce, TOPIC);
        if (rc)
            fprintf(stderr, "compact: %s\n", rt_error_detail());
        _exit(rc == 0 ? 0 : 2); /* 0: the step was never reached */
    }
    char rep[1];
    int status = 0;
    (void)tu_child_report(pid, fd, rep, sizeof rep, &status);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 42)
        fprintf(stderr, "step %d nth %d power %d: child exited %d\n", step, nth, power,
                WEXITSTATUS(status));
    assert_int_equal(WEXITSTATUS(status), 42); /* it died at the step */

    verify_clean(dir); /* a committed swap is a warning only: open finishes it */
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t ab2 = -1;
    int na = read_all(e, &m, after, WRITES * 4, &ab2);
    int removed = check_subsequence(before, nb, after, na, ab);
    check_latest(&m, after, na, false);
    if (step >= 2) { /* committed: open finished the swap; the new segment is served */
        assert_true(first_log_inode(dir) != ino_before);
    } else { /* not committed: the old segments, whole */
        assert_true(first_log_inode(dir) == ino_before);
        assert_int_equal(removed, 0);
    }
    /* A clean after the crash finishes the job. */
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    na = read_all(e, &m, after, WRITES * 4, &ab2);
    assert_true(check_subsequence(before, nb, after, na, ab) > 0);
    check_latest(&m, after, na, false);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

static void crash_each_step(void **state)
{
    (void)state;
    for (int step = 1; step <= 6; step++) {
        crash_at(step, 1, false);
        if (step == 3)
            crash_at(step, 2, false); /* between two removed sources */
    }
}

static void power_loss_each_step(void **state)
{
    (void)state;
    for (int step = 1; step <= 6; step++)
        crash_at(step, 1, true);
}

/* Zero copy: a fetch taken before a clean still reads the old bytes after it. */
static void fetch_survives_swap(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static struct model m;
    build_log(dir, &m);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    size_t len = v->size_bytes;
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, v->data, len);
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    assert_memory_equal(v->data, copy, len); /* the old mapping is still there */
    rt_fetch_release(f);
    free(copy);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* CLN8: once a clean has nothing left to remove from the first segment (further cleans of an
 * unchanged log), that segment is not swapped again: its .log keeps its inode, and no .cleaned
 * file is left behind. */
static void unchanged_segment_not_swapped(void **state)
{
    (void)state;
    static struct model m;
    struct rt_options o;
    char *dir = NULL;
    rt_engine *e = open_built(&dir, &m, &o);
    ino_t prev = first_log_inode(dir);
    bool stable = false;
    for (int i = 0; i < 6 && !stable; i++) { /* a clean may still merge small segments */
        assert_int_equal(rt_topic_compact(e, TOPIC), 0);
        ino_t now = first_log_inode(dir);
        stable = i > 0 && now == prev;
        prev = now;
    }
    assert_true(stable);
    char *stray = tu_path("%s/" TOPIC "-0/00000000000000000000.log.cleaned", dir);
    struct stat st;
    assert_int_not_equal(stat(stray, &st), 0);
    free(stray);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

/* The damage matrix over the cleaner's own files: a stray `*.cleaned` file (an uncommitted swap)
 * is a warning for verify and removed by open (CL6); a damaged cleaner-checkpoint (CK1) is a
 * problem for verify and open refuses the partition naming the file; a read-only open refuses a
 * committed swap it cannot finish. */
static void damaged_cleaner_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static struct model m;
    build_log(dir, &m);
    struct rt_options o;
    options(&o);
    o.segment_size_bytes = 2048;
    char *stray = tu_path("%s/" TOPIC "-0/00000000000000000000.log.cleaned", dir);
    tu_write_file(stray, (const uint8_t *)"junk", 4);
    assert_int_equal(rt_verify(dir, NULL, NULL), 0); /* a warning, not a problem */
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_false(fs_exists_for_test(stray));
    assert_int_equal(rt_close(e), 0);

    char *ck = tu_path("%s/" TOPIC "-0/cleaner-checkpoint", dir);
    assert_true(fs_exists_for_test(ck));
    tu_flip_byte(ck, 12, 0x01);
    assert_int_equal(rt_verify(dir, NULL, NULL), RT_E_CORRUPT);
    assert_int_equal(rt_open(dir, &o, &e), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), "cleaner-checkpoint"));
    tu_flip_byte(ck, 12, 0x01); /* repaired */

    /* A committed swap left unfinished (a child dies right after the commit). */
    int fd = -1;
    pid_t pid = tu_fork_piped(&fd);
    if (pid == 0) {
        struct crash_ctx c = {2, 1, 0, NULL};
        rt_engine *ce = NULL;
        if (rt_open(dir, &o, &ce) != 0)
            _exit(1);
        rt_test_cleaner_hook_set(crash_hook, &c);
        _exit(rt_topic_compact(ce, TOPIC) == 0 ? 0 : 2);
    }
    char rep[1];
    int status = 0;
    (void)tu_child_report(pid, fd, rep, sizeof rep, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 42);
    struct rt_options ro = o;
    ro.read_only = true;
    assert_int_equal(rt_open(dir, &ro, &e), RT_E_READ_ONLY);
    assert_int_equal(rt_open(dir, &o, &e), 0); /* the writable open finishes it */
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &ro, &e), 0);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    free(stray);
    free(ck);
    tu_rmdir_free(dir);
}

/* ---- the clean off the shard thread (cleaner.c CLB1-CLB5) ---- */

struct during {
    rt_engine *e;
    int what; /* 1 append, 2 DeleteRecords, 3 topic deletion */
    int fired;
    int rc;
    int64_t value;
    pthread_t deleter;
};

static void *delete_topic_main(void *arg)
{
    struct during *d = arg;
    d->rc = rt_topic_delete(d->e, TOPIC);
    return NULL;
}

/* At step 7 (a group's files sealed on the cleaner's thread, its swap not asked for yet), the
 * first time: acts on the engine from that very thread. */
static void during_hook(int step, void *ctx)
{
    struct during *d = ctx;
    if (step != 7 || d->fired++)
        return;
    if (d->what == 1) { /* CLB1: an append of the partition being cleaned completes now */
        struct rt_record r = {.key = "k0", .key_len = 2, .value = "v-during", .value_len = 8};
        d->rc = rt_append(d->e, TOPIC, 0, &r, 1, &d->value);
    } else if (d->what == 2) { /* CLB4: the sources go before their swap */
        d->rc = rt_partition_delete_records(d->e, TOPIC, 0, -1, &d->value);
    } else { /* CLB5: the deletion cancels; it waits for this clean, so it runs beside it */
        assert_int_equal(pthread_create(&d->deleter, NULL, delete_topic_main, d), 0);
        uint32_t parts = 0;
        for (int i = 0; i < 5000 && rt_topic_describe(d->e, TOPIC, &parts) == 0; i++)
            usleep(1000); /* hidden only after the cancel (log.c): the swap must see it */
    }
}

static int count_cleaned_files(const char *dir)
{
    return tu_system("ls %s/" TOPIC "-0/ | grep -q cleaned", dir) == 0 ? 1 : 0;
}

/* CLB1: a clean's work is not on the shard thread: an append to the very partition being cleaned,
 * made while the clean holds its sealed .cleaned files, completes (on the shard thread the clean
 * would hold that append's round until its end: here, on the clean's own thread, a deadlock). */
static void append_during_clean(void **state)
{
    (void)state;
    static struct model m;
    struct rt_options o;
    char *dir = NULL;
    rt_engine *e = open_built(&dir, &m, &o);
    struct during d = {.e = e, .what = 1, .rc = -1};
    rt_test_cleaner_hook_set(during_hook, &d);
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    rt_test_cleaner_hook_set(NULL, NULL);
    assert_true(d.fired > 0);
    assert_int_equal(d.rc, 0);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, d.value, 1 << 20, RT_READ_COMMITTED, &f), 0);
    assert_true(rt_fetch_get(f)->size_bytes > 0);
    rt_fetch_release(f);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

/* CLB4: DeleteRecords removes the sources of a group whose files are written but not swapped:
 * the swap is refused (nothing committed, the .cleaned files removed), so no segment comes back
 * below the new log start, and the log is as DeleteRecords left it. */
static void delete_records_during_clean(void **state)
{
    (void)state;
    static struct model m;
    struct rt_options o;
    char *dir = NULL;
    rt_engine *e = open_built(&dir, &m, &o);
    struct during d = {.e = e, .what = 2, .rc = -1};
    rt_test_cleaner_hook_set(during_hook, &d);
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    rt_test_cleaner_hook_set(NULL, NULL);
    assert_true(d.fired > 0);
    assert_int_equal(d.rc, 0);
    assert_true(d.value > 0);
    char *first = tu_path("%s/" TOPIC "-0/00000000000000000000.log", dir);
    assert_false(fs_exists_for_test(first)); /* deleted, not swapped back in */
    assert_int_equal(count_cleaned_files(dir), 0);
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_COMMITTED, &(rt_fetch *){0}),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_close(e), 0);
    free(first);
    tu_rmdir_free(dir);
}

/* CLB5: a topic deleted while its partition is being cleaned: the deletion cancels the clean,
 * which swaps nothing more, and waits for it before the directory moves; both return. */
static void topic_deleted_during_clean(void **state)
{
    (void)state;
    static struct model m;
    struct rt_options o;
    char *dir = NULL;
    rt_engine *e = open_built(&dir, &m, &o);
    ino_t ino = first_log_inode(dir);
    struct during d = {.e = e, .what = 3, .rc = -1};
    rt_test_cleaner_hook_set(during_hook, &d);
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    rt_test_cleaner_hook_set(NULL, NULL);
    assert_true(d.fired > 0);
    assert_int_equal(pthread_join(d.deleter, NULL), 0);
    assert_int_equal(d.rc, 0);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    (void)ino;
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_describe(e, TOPIC, &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

/* At step 7 on the engine's cleaner thread: tells the test, then holds the clean a while, so
 * the close the test makes meanwhile finds it between its work and its swap. */
static void hold_hook(int step, void *ctx)
{
    atomic_int *fired = ctx;
    if (step != 7 || atomic_fetch_add(fired, 1) != 0)
        return;
    usleep(300 * 1000);
}

/* CLP3, CLB5: rt_close while the engine's cleaner thread is inside a clean: the close cancels it
 * and waits for it before the shards stop (its swap call needs them: stopping them first made
 * it lock a destroyed shard mutex, TSan's report), the clean swaps nothing more, and the reopened
 * log is whole and holds no .cleaned file. */
static void close_during_background_clean(void **state)
{
    (void)state;
    static struct model m;
    struct rt_options o;
    char *dir = NULL;
    rt_engine *e = open_built(&dir, &m, &o);
    static atomic_int fired;
    atomic_store(&fired, 0);
    rt_test_cleaner_hook_set(hold_hook, &fired);
    rt_test_cleaner_background_set(true);
    struct rt_topic_config c = {"min.cleanable.dirty.ratio", "0.01"};
    assert_int_equal(rt_topic_config_alter(e, TOPIC, &c, 1, false), 0);
    for (int i = 0; i < 1000 && atomic_load(&fired) == 0; i++) /* 10 s at most */
        usleep(10 * 1000);
    assert_true(atomic_load(&fired) > 0);
    assert_int_equal(rt_close(e), 0);
    rt_test_cleaner_hook_set(NULL, NULL);
    rt_test_cleaner_background_set(false);
    assert_int_equal(count_cleaned_files(dir), 0);
    verify_clean(dir);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    static struct seen after[WRITES * 4];
    int64_t ab = -1;
    int na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, false);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* ---- KIP-534: delete horizons of markers and tombstones (cleaner.c CLN9, batch_filter BF6) --- */

/* One keyed record (a tombstone when tomb) in a batch of its own. */
static void put(rt_engine *e, struct model *m, int k, bool tomb)
{
    int idx = m->count++;
    m->w[idx] = (struct written){k, tomb, true};
    m->latest[k] = idx;
    char key[16], val[VALUE_MAX];
    snprintf(key, sizeof key, "k%d", k);
    snprintf(val, sizeof val, "v%d", idx);
    struct rt_header h = {"i", 1, val + 1, (int32_t)strlen(val + 1)};
    struct rt_record r = {.key = key,
                          .key_len = (int32_t)strlen(key),
                          .value = tomb ? NULL : val,
                          .value_len = tomb ? -1 : (int32_t)strlen(val),
                          .timestamp_ms = ts_ms,
                          .headers = &h,
                          .header_count = 1};
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, 0, &r, 1, &base), 0);
}

/* A transaction writing one record of key k. */
static void txn_one(rt_producer *p, struct model *m, int k, bool commit)
{
    assert_int_equal(rt_producer_begin(p), 0);
    int idx = m->count++;
    m->w[idx] = (struct written){k, false, commit};
    char key[16], val[VALUE_MAX];
    snprintf(key, sizeof key, "k%d", k);
    snprintf(val, sizeof val, "v%d", idx);
    struct rt_header h = {"i", 1, val + 1, (int32_t)strlen(val + 1)};
    struct rt_producer_message msg = {.record = {.key = key,
                                                 .key_len = (int32_t)strlen(key),
                                                 .value = val,
                                                 .value_len = (int32_t)strlen(val),
                                                 .timestamp_ms = ts_ms,
                                                 .headers = &h,
                                                 .header_count = 1},
                                      .sequence = -1};
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &msg, NULL, NULL), 0);
    if (commit) {
        assert_int_equal(rt_producer_commit(p, 10000), 0);
        m->latest[k] = idx;
    } else {
        assert_int_equal(rt_producer_abort(p, 10000), 0);
    }
}

struct log_counts {
    int markers, aborts, horizons, marker_horizons, tombstone_batches, txnindex_entries;
};

/* Walks every .log of the partition (batch headers only, B.2) and sizes its .txnindex files. */
static void count_log(const char *dir, struct log_counts *c)
{
    memset(c, 0, sizeof(*c));
    char *cmd = tu_path("ls %s/" TOPIC "-0/", dir);
    FILE *ls = popen(cmd, "r");
    free(cmd);
    assert_non_null(ls);
    char name[256];
    while (fgets(name, sizeof name, ls)) {
        name[strcspn(name, "\n")] = 0;
        size_t n = strlen(name);
        char *path = tu_path("%s/" TOPIC "-0/%s", dir, name);
        if (n > 9 && strcmp(name + n - 9, ".txnindex") == 0) {
            c->txnindex_entries += (int)(tu_file_size(path) / 34);
        } else if (n > 4 && strcmp(name + n - 4, ".log") == 0) {
            FILE *f = fopen(path, "rb");
            assert_non_null(f);
            static uint8_t buf[1 << 20];
            size_t len = fread(buf, 1, sizeof buf, f);
            fclose(f);
            size_t pos = 0;
            while (pos + 61 <= len) {
                uint32_t blen = (uint32_t)buf[pos + 8] << 24 | (uint32_t)buf[pos + 9] << 16 |
                                (uint32_t)buf[pos + 10] << 8 | buf[pos + 11];
                if (blen < 49 || pos + 12 + blen > len || buf[pos + 16] != 2)
                    break; /* the active segment's zeros */
                uint16_t attr = (uint16_t)(buf[pos + 21] << 8 | buf[pos + 22]);
                if (attr & 0x40)
                    c->horizons++;
                if (attr & 0x20) {
                    c->markers++;
                    if (attr & 0x40)
                        c->marker_horizons++;
                    /* the record: length, attributes, timestampDelta, offsetDelta, keyLen (4),
                     * key version i16, type i16 (0 ABORT) */
                    const uint8_t *r = buf + pos + 61;
                    size_t k = 2; /* length varint (1 byte) and attributes */
                    while (r[k] & 0x80)
                        k++;            /* timestampDelta */
                    k += 1 + 1 + 1 + 2; /* its last byte, offsetDelta, keyLen, key version */
                    if (r[k] == 0 && r[k + 1] == 0)
                        c->aborts++;
                }
                pos += 12 + blen;
            }
        }
        free(path);
    }
    pclose(ls);
}

/* CLN9, BF6, V15c (KIP-98, KIP-534): the first clean after a transaction's data are gone gives
 * its marker a delete horizon (now + delete.retention.ms) and keeps it, as it keeps a tombstone
 * with its horizon; a clean before the horizon keeps both; the shard's periodic pass cleans
 * again once the horizon has passed (no new data: nothing dirty) and drops them, with the
 * aborted transactions' .txnindex entries. read_committed never sees an aborted record and
 * verify stays clean throughout. */
static void markers_expire_after_horizon(void **state)
{
    (void)state;
    rt_test_cleaner_background_set(false);
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    create_topic(e, "3600000");
    rt_producer *p = txn_producer(e);
    static struct model m;
    model_init(&m);
    for (int i = 0; i < 6; i++)
        txn_one(p, &m, i, i % 2 == 0); /* keys 0-5: 3 committed, 3 aborted */
    for (int k = 0; k < KEYS; k++)
        put(e, &m, k, false); /* supersedes the committed transactions' data */
    for (int k = 0; k < 10; k++)
        put(e, &m, k, true);                /* keys 0-9 deleted */
    for (int round = 0; round < 3; round++) /* the above sealed, well below the active segment */
        for (int k = 10; k < KEYS; k++)
            put(e, &m, k, false);
    struct log_counts c0, c1, c2, c3;
    count_log(dir, &c0);
    assert_int_equal(c0.markers, 6);
    assert_int_equal(c0.aborts, 3);
    assert_int_equal(c0.horizons, 0);
    assert_int_equal(c0.txnindex_entries, 3);

    static struct seen after[WRITES * 4];
    int64_t ab = -1;
    assert_int_equal(rt_topic_compact(e, TOPIC), 0); /* the data go, the markers get horizons */
    count_log(dir, &c1);
    assert_int_equal(c1.markers, 6);
    assert_int_equal(c1.aborts, 3);
    /* The last transaction's marker is its producer's last entry (CLN5: it keeps the epoch, as
     * Kafka keeps it): no horizon, never dropped. */
    assert_int_equal(c1.marker_horizons, 5);
    assert_true(c1.horizons >= 5 + 1); /* and at least one batch of tombstones */
    assert_int_equal(c1.txnindex_entries, 3);
    int na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, false); /* the tombstones are there */
    rt_producer_close(p);
    assert_int_equal(rt_close(e), 0);
    verify_clean(dir); /* V15c: markers with a rebased record are longer than 78 bytes */
    assert_int_equal(rt_open(dir, &o, &e), 0);

    rt_test_cleaner_clock_set(3600000 - 60000); /* a minute before the horizon */
    assert_int_equal(rt_topic_compact(e, TOPIC), 0);
    count_log(dir, &c2);
    assert_int_equal(c2.markers, 6);
    assert_int_equal(c2.marker_horizons, 5);
    na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, false);

    /* Past the horizon: the periodic pass offers the partition (nothing dirty) and drops them. */
    rt_test_cleaner_clock_set(3600000 + 60000);
    rt_test_cleaner_background_set(true);
    for (int i = 0; i < 600; i++) {
        count_log(dir, &c3);
        if (c3.markers == 1)
            break;
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    rt_test_cleaner_background_set(false);
    assert_int_equal(c3.markers, 1);         /* the producer's last transaction's */
    assert_int_equal(c3.marker_horizons, 0); /* that one never had data gone */
    assert_int_equal(c3.txnindex_entries, c3.aborts);
    na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, true);
    for (int i = 0; i < na; i++)
        assert_false(after[i].tombstone); /* every tombstone is past its horizon */
    assert_int_equal(rt_close(e), 0);
    rt_test_cleaner_clock_set(0);
    verify_clean(dir);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    na = read_all(e, &m, after, WRITES * 4, &ab);
    check_latest(&m, after, na, true);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* CLN10 (KIP-354): a compacted partition that stops receiving appends has its active segment
 * rolled by the shard's housekeeping once older than max.compaction.lag.ms, and cleaned: every
 * superseded record goes although no append came after them. */
static void idle_partition_cleaned(void **state)
{
    (void)state;
    rt_test_cleaner_background_set(true);
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"cleanup.policy", "compact"}, {"max.compaction.lag.ms", "500"}};
    assert_int_equal(rt_topic_create_with_configs(e, TOPIC, 1, c, 2), 0);
    static struct model m;
    model_init(&m);
    for (int round = 0; round < 4; round++) /* 12 records, well inside one segment */
        for (int k = 0; k < 3; k++)
            put(e, &m, k, false);
    static struct seen after[WRITES * 4];
    int64_t ab = -1;
    int na = 0;
    for (int i = 0; i < 600; i++) { /* a roll, then a clean: two housekeeping passes */
        na = read_all(e, &m, after, WRITES * 4, &ab);
        if (na == 3)
            break;
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(na, 3);
    check_latest(&m, after, na, false);
    check_no_superseded(&m, after, na, INT64_MAX);
    assert_int_equal(rt_close(e), 0);
    rt_test_cleaner_background_set(false);
    verify_clean(dir);
    tu_rmdir_free(dir);
}

static int teardown_template(void **state)
{
    (void)state;
    if (template_dir)
        tu_rmdir_free(template_dir);
    template_dir = NULL;
    return 0;
}

int main(void)
{
    ts_ms = (int64_t)time(NULL) * 1000;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compact_needs_policy),
        cmocka_unit_test(keyless_refused),
        cmocka_unit_test(model_tombstones_kept),
        cmocka_unit_test(model_tombstones_expire),
        cmocka_unit_test(fetch_survives_swap),
        cmocka_unit_test(crash_each_step),
        cmocka_unit_test(power_loss_each_step),
        cmocka_unit_test(background_clean),
        cmocka_unit_test(producer_last_batch_kept),
        cmocka_unit_test(damaged_cleaner_files),
        cmocka_unit_test(unchanged_segment_not_swapped),
        cmocka_unit_test(append_during_clean),
        cmocka_unit_test(delete_records_during_clean),
        cmocka_unit_test(topic_deleted_during_clean),
        cmocka_unit_test(close_during_background_clean),
        cmocka_unit_test(markers_expire_after_horizon),
        cmocka_unit_test(idle_partition_cleaned),
    };
    if (getenv("TEST_FILTER")) /* one test by name, when debugging */
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, teardown_template);
}
