/*
 * test_corruption.c — damaged data directories and power loss, end to end through the public
 * API. For every file kind (the newest and a sealed `.log`, `.index`, `.timeindex`,
 * `ringtail.meta`) and every damage class (flipped bits at chosen header and payload
 * positions, truncation, a zeroed 4 KiB page, appended garbage) a directory is built through
 * rt_append with small segments, closed cleanly, damaged, and then:
 *   - rt_verify (run first, on the closed directory) must report the damage: a non-zero
 *     problem count and a message naming the damaged file;
 *   - rt_open either repairs (docs/format.md CR1-CR3 and D1: a torn or corrupt tail of the newest
 *     segment is truncated, an index is rebuilt; everything acknowledged before the damage is
 *     readable and equal to what was written) or fails with RT_E_CORRUPT whose
 *     rt_error_detail() names the file and a byte offset; it never crashes;
 *   - a fetch + rt_records_next over a damaged sealed segment returns RT_E_CORRUPT naming file
 *     and offset and never yields a record of the damaged batch;
 *   - after a repairing open and a clean close, rt_verify is clean.
 * Each case pins today's outcome precisely (the `expect` column of the table below).
 *
 * Power loss: the engine runs over the fault injector (rt_test_open) with sync=always and a plan
 * that tracks unsynced writes; after N acknowledged appends the power is lost (io_fault_power_loss,
 * or an IO_FAULT_POWER_LOSS rule at the Nth write or fdatasync). Every acknowledged batch must
 * survive, nothing unacknowledged may appear unless it was synced, and rt_verify must be clean
 * after the recovering reopen. Limitation of the model: only the log writes of group-commit
 * rounds go through io/ and are rolled back; segment creation and preallocation, sealing,
 * index writes (mmap) and the catalogue use plain syscalls and count as durable.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync
 * fallback (RT_TEST_IO); the power-loss tests always use the fault backend for the crashing
 * engine and the backend under test for the reopen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC             "c"
#define BATCHES           150
#define RECORDS_PER_BATCH 4
#define RECORDS_TOTAL     (BATCHES * RECORDS_PER_BATCH)

static void options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = 16 * 1024;
    o->batch_size_max_bytes = 4 * 1024;
    o->index_interval_bytes = 256;
    o->index_size_max_bytes = 4096;
    o->shard_count = 1;
    o->retention_ms = -1;
}

static void value_of(int64_t offset, char *buf, size_t cap)
{
    snprintf(buf, cap, "value-%08" PRId64 "-padding-padding-padding", offset);
}

static int append_batch(rt_engine *e, int64_t first, int64_t *base_out)
{
    struct rt_record recs[RECORDS_PER_BATCH];
    char vals[RECORDS_PER_BATCH][64];
    for (int i = 0; i < RECORDS_PER_BATCH; i++) {
        value_of(first + i, vals[i], sizeof(vals[i]));
        recs[i] = (struct rt_record){.key = "key",
                                     .key_len = 3,
                                     .value = vals[i],
                                     .value_len = (int32_t)strlen(vals[i]),
                                     .timestamp_ms = 1000000 + first + i};
    }
    return rt_append(e, TOPIC, 0, recs, RECORDS_PER_BATCH, base_out);
}

/* Builds the directory: BATCHES batches of RECORDS_PER_BATCH records in ~3 segments; closes
 * cleanly. */
static void build(const char *dir)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    for (int64_t i = 0; i < BATCHES; i++) {
        int64_t base = -1;
        assert_int_equal(append_batch(e, i * RECORDS_PER_BATCH, &base), 0);
        assert_int_equal(base, i * RECORDS_PER_BATCH);
    }
    assert_int_equal(rt_close(e), 0);
}

/* ---- what happened ---- */

enum read_end {
    READ_ALL = 0,     /* reached the high watermark */
    READ_CORRUPT = 1, /* RT_E_CORRUPT from rt_fetch_start or rt_records_next */
    READ_GAP = 2,     /* an offset was skipped or a fetch failed otherwise */
};

struct outcome {
    int verify_rc;
    uint64_t verify_problems;
    bool verify_names_file;
    int open_rc;
    bool open_detail_ok; /* RT_E_CORRUPT detail names the file and "offset" */
    int64_t read;        /* records read, dense from 0, each equal to what was written */
    enum read_end read_end;
    bool read_detail_ok; /* RT_E_CORRUPT detail names the file and "offset" */
    int64_t high_watermark;
    int verify_after_rc; /* rt_verify after a successful open and clean close */
    char verify_after[512];
};

static bool detail_names(const char *detail, const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    return strstr(detail, base) != NULL && strstr(detail, "offset") != NULL;
}

/* Reads the whole partition from offset 0, checking every record; stops at the first error. */
static void read_back(rt_engine *e, const char *damaged_file, struct outcome *out)
{
    int64_t next = 0;
    out->read = 0;
    out->read_end = READ_GAP;
    for (;;) {
        rt_fetch *fh = NULL;
        int rc = rt_fetch_start(e, TOPIC, 0, next, 2048, RT_READ_UNCOMMITTED, &fh);
        if (rc == RT_E_CORRUPT) {
            out->read_end = READ_CORRUPT;
            out->read_detail_ok = detail_names(rt_error_detail(), damaged_file);
            return;
        }
        if (rc != 0)
            return;
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        out->high_watermark = v->high_watermark;
        if (v->size_bytes == 0) {
            out->read_end = next == v->high_watermark ? READ_ALL : READ_GAP;
            rt_fetch_release(fh);
            return;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, fh, next), 0);
        struct rt_record_view r;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            char want[64];
            value_of(r.offset, want, sizeof(want));
            if (r.offset != next || r.value_len != (int32_t)strlen(want) ||
                memcmp(r.value, want, strlen(want)) != 0) {
                rt_fetch_release(fh);
                return; /* READ_GAP: a skipped offset or wrong bytes */
            }
            next++;
            out->read++;
        }
        rt_fetch_release(fh);
        if (rc == RT_E_CORRUPT) {
            out->read_end = READ_CORRUPT;
            out->read_detail_ok = detail_names(rt_error_detail(), damaged_file);
            return;
        }
        if (rc != RT_E_END)
            return;
    }
}

static void run_checks(const char *dir, const char *damaged_file, struct outcome *out)
{
    memset(out, 0, sizeof(*out));
    struct tu_verify_log vl = {.with_warnings = true};
    struct rt_verify_counts counts;
    out->verify_rc = rt_verify_with_counts(dir, tu_on_problem, &vl, &counts);
    out->verify_problems = counts.problems;
    const char *base = strrchr(damaged_file, '/');
    out->verify_names_file = strstr(vl.all, base ? base + 1 : damaged_file) != NULL;

    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    out->open_rc = rt_open(dir, &o, &e);
    if (out->open_rc != 0) {
        assert_null(e);
        out->open_detail_ok = detail_names(rt_error_detail(), damaged_file);
        out->read = -1;
        return;
    }
    read_back(e, damaged_file, out);
    assert_int_equal(rt_close(e), 0);
    struct tu_verify_log after = {.with_warnings = true};
    out->verify_after_rc = rt_verify(dir, tu_on_problem, &after);
    size_t n = strnlen(after.all, sizeof(out->verify_after) - 1);
    memcpy(out->verify_after, after.all, n);
    out->verify_after[n] = '\0';
}

/* ---- damage ---- */

enum target {
    T_NEWEST_LOG,       /* .clean_shutdown removed: recovery scans it */
    T_NEWEST_LOG_CLEAN, /* marker kept: the segment is trusted as trimmed */
    T_SEALED_LOG,
    T_SEALED_INDEX,
    T_SEALED_TIMEINDEX,
    T_NEWEST_INDEX, /* marker kept, so the index is used rather than rebuilt */
    T_NEWEST_TIMEINDEX,
    T_META,
};

static const char *target_name(enum target t)
{
    static const char *names[] = {"newest .log (recovery)",
                                  "newest .log (clean marker)",
                                  "sealed .log",
                                  "sealed .index",
                                  "sealed .timeindex",
                                  "newest .index",
                                  "newest .timeindex",
                                  "ringtail.meta"};
    return names[t];
}

enum damage {
    D_FLIP,      /* xor `arg` into the byte at `at` (relative to `where`) */
    D_TRUNCATE,  /* cut the file at `at` (relative to `where`) */
    D_ZERO_PAGE, /* zero the 4 KiB page holding `at` */
    D_APPEND,    /* append `arg` bytes of 0xA5 */
};

/* Where a damage position is measured from. */
enum where {
    W_FILE,  /* byte `at` of the file (negative: from its end) */
    W_BATCH, /* byte `at` of the middle batch of the segment */
};

enum expect {
    /* rt_open repairs: readable = every batch that ends before the damaged batch. */
    E_RECOVER_PREFIX,
    /* rt_open succeeds and everything is readable (derived data rebuilt, or nothing lost). */
    E_ALL,
    /* rt_open fails with RT_E_CORRUPT naming the file and an offset. */
    E_OPEN_CORRUPT,
    /* rt_open succeeds; reading reports RT_E_CORRUPT (file + offset) at the damaged batch and
     * serves exactly the records before it. */
    E_READ_CORRUPT,
};

struct corruption_case {
    enum target target;
    enum damage damage;
    enum where where;
    int64_t at;
    uint32_t arg;
    enum expect expect;
    int verify_reports; /* 1: rt_verify fails naming the file; 2: it fails (naming the damage
                           through another file); 0: it is clean (the damage is invisible) */
    const char *why;
};

static const struct corruption_case cases[] = {
    /* newest .log, recovery: CR1/CR2 truncate at the first bad batch. */
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 7, 0x01, E_RECOVER_PREFIX, 1, "baseOffset (R1 order)"},
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 11, 0x04, E_RECOVER_PREFIX, 1, "length"},
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 16, 0x01, E_RECOVER_PREFIX, 1, "magic"},
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 18, 0x80, E_RECOVER_PREFIX, 1, "crc"},
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 30, 0x10, E_RECOVER_PREFIX, 1, "baseTimestamp (CRC)"},
    {T_NEWEST_LOG, D_FLIP, W_BATCH, 80, 0x02, E_RECOVER_PREFIX, 1, "record bytes (CRC)"},
    {T_NEWEST_LOG, D_FLIP, W_FILE, -1, 0x40, E_RECOVER_PREFIX, 1, "last byte"},
    {T_NEWEST_LOG, D_TRUNCATE, W_BATCH, 30, 0, E_RECOVER_PREFIX, 1, "mid-batch"},
    {T_NEWEST_LOG, D_TRUNCATE, W_FILE, -7, 0, E_RECOVER_PREFIX, 1, "last batch torn"},
    {T_NEWEST_LOG, D_ZERO_PAGE, W_BATCH, 0, 0, E_RECOVER_PREFIX, 1, "zeroed page"},
    {T_NEWEST_LOG, D_APPEND, W_FILE, 0, 37, E_ALL, 1, "garbage after the last batch"},
    /* newest .log with the clean marker: trusted at open, checked by readers. */
    {T_NEWEST_LOG_CLEAN, D_FLIP, W_BATCH, 80, 0x02, E_READ_CORRUPT, 1, "record bytes"},
    /* sealed .log: never repaired. Payload damage (under the CRC) is refused by readers; a
     * header that no longer parses is refused by open, which walks every header (SC1 in
     * engine/log/segment_check.c, the check rt_verify shares). */
    {T_SEALED_LOG, D_FLIP, W_BATCH, 18, 0x80, E_READ_CORRUPT, 1, "crc"},
    {T_SEALED_LOG, D_FLIP, W_BATCH, 30, 0x10, E_READ_CORRUPT, 1, "baseTimestamp (CRC)"},
    {T_SEALED_LOG, D_FLIP, W_BATCH, 80, 0x02, E_READ_CORRUPT, 1, "record bytes"},
    {T_SEALED_LOG, D_FLIP, W_BATCH, 16, 0x01, E_OPEN_CORRUPT, 1, "magic"},
    {T_SEALED_LOG, D_FLIP, W_BATCH, 11, 0x04, E_OPEN_CORRUPT, 1, "length"},
    {T_SEALED_LOG, D_ZERO_PAGE, W_BATCH, 0, 0, E_OPEN_CORRUPT, 1, "zeroed page"},
    {T_SEALED_LOG, D_APPEND, W_FILE, 0, 37, E_OPEN_CORRUPT, 1, "garbage after the last batch"},
    /* indexes: derived data (D1). */
    {T_SEALED_INDEX, D_FLIP, W_FILE, 0, 0x80, E_ALL, 1, "relativeOffset negative (O2)"},
    {T_SEALED_INDEX, D_TRUNCATE, W_FILE, 12, 0, E_ALL, 1, "not a multiple of 8 (O1)"},
    {T_SEALED_INDEX, D_ZERO_PAGE, W_FILE, 0, 0, E_ALL, 1, "zeroed (O6)"},
    {T_SEALED_INDEX, D_APPEND, W_FILE, 0, 8, E_ALL, 1, "8 bytes 0xA5 (O2)"},
    {T_SEALED_TIMEINDEX, D_FLIP, W_FILE, 0, 0x80, E_ALL, 1, "timestamp negative (T2)"},
    {T_SEALED_TIMEINDEX, D_TRUNCATE, W_FILE, 5, 0, E_ALL, 1, "not a multiple of 12 (T1)"},
    {T_SEALED_TIMEINDEX, D_ZERO_PAGE, W_FILE, 0, 0, E_ALL, 1, "zeroed (T5)"},
    {T_SEALED_TIMEINDEX, D_APPEND, W_FILE, 0, 12, E_ALL, 1, "12 bytes 0xA5 (T3)"},
    {T_NEWEST_INDEX, D_FLIP, W_FILE, 0, 0x80, E_ALL, 1, "relativeOffset negative (O2)"},
    {T_NEWEST_INDEX, D_APPEND, W_FILE, 0, 3, E_ALL, 1, "3 bytes (O1)"},
    /* Zero entries in the newest segment's index are preallocated space only when the
     * directory was not closed cleanly: with .clean_shutdown present open rebuilds the index
     * (T5), so rt_verify reports it (issue 10, defect 10: they agree). */
    {T_NEWEST_TIMEINDEX, D_ZERO_PAGE, W_FILE, 0, 0, E_ALL, 1, "zeroed (T5)"},
    /* catalogue: M1-M4, never repaired. */
    {T_META, D_FLIP, W_FILE, 0, 0x01, E_OPEN_CORRUPT, 1, "magic"},
    {T_META, D_FLIP, W_FILE, 5, 0x01, E_OPEN_CORRUPT, 1, "version"},
    {T_META, D_FLIP, W_FILE, 7, 0x01, E_OPEN_CORRUPT, 1, "crc"},
    {T_META, D_FLIP, W_FILE, -1, 0x01, E_OPEN_CORRUPT, 1, "partitions (CRC)"},
    {T_META, D_TRUNCATE, W_FILE, 12, 0, E_OPEN_CORRUPT, 1, "shorter than a header"},
    {T_META, D_TRUNCATE, W_FILE, -2, 0, E_OPEN_CORRUPT, 1, "entry cut"},
    {T_META, D_ZERO_PAGE, W_FILE, 0, 0, E_OPEN_CORRUPT, 1, "zeroed"},
    {T_META, D_APPEND, W_FILE, 0, 5, E_OPEN_CORRUPT, 1, "trailing bytes (M4)"},
};

struct segments {
    int64_t bases[16];
    int count;
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void list_segments(const char *dir, struct segments *s)
{
    char *pdir = tu_path("%s/%s-0", dir, TOPIC);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    s->count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n == 24 && strcmp(de->d_name + 20, ".log") == 0) {
            assert_true(s->count < 16);
            s->bases[s->count++] = strtoll(de->d_name, NULL, 10);
        }
    }
    closedir(d);
    free(pdir);
    qsort(s->bases, (size_t)s->count, sizeof(s->bases[0]), cmp_i64);
}

/* Batch positions of a log file: pos[i] for i < *count, and the file's batches end at
 * pos[*count]. */
static void batch_positions(const char *log, uint64_t *pos, int cap, int *count)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(log, &len);
    int n = 0;
    uint64_t p = 0;
    while (p + 12 <= len && n < cap - 1) {
        uint32_t l = be32_of(b + p + 8);
        if (l == 0)
            break;
        pos[n++] = p;
        p += 12 + (uint64_t)l;
    }
    pos[n] = p;
    *count = n;
    free(b);
}

static void zero_range(const char *path, uint64_t off, uint64_t len)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    uint8_t z[4096] = {0};
    assert_true(len <= sizeof(z));
    assert_int_equal(pwrite(fd, z, len, (off_t)off), (ssize_t)len);
    close(fd);
}

static void append_bytes(const char *path, uint32_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    uint8_t g[256];
    memset(g, 0xA5, sizeof(g));
    assert_true(n <= sizeof(g));
    assert_int_equal(write(fd, g, n), (ssize_t)n);
    close(fd);
}

/* Applies the case's damage; returns the damaged file's path and sets *records_before_damage
 * to the records held by the batches wholly before the first damaged byte (in partition order). */
static char *apply_damage(const char *dir, const struct corruption_case *c,
                          int64_t *records_before_damage)
{
    struct segments segs;
    list_segments(dir, &segs);
    assert_true(segs.count >= 3);
    bool newest = c->target == T_NEWEST_LOG || c->target == T_NEWEST_LOG_CLEAN ||
                  c->target == T_NEWEST_INDEX || c->target == T_NEWEST_TIMEINDEX;
    int64_t base = newest ? segs.bases[segs.count - 1] : segs.bases[0];
    const char *ext = "log";
    if (c->target == T_SEALED_INDEX || c->target == T_NEWEST_INDEX)
        ext = "index";
    if (c->target == T_SEALED_TIMEINDEX || c->target == T_NEWEST_TIMEINDEX)
        ext = "timeindex";
    char *path = c->target == T_META ? tu_path("%s/ringtail.meta", dir)
                                     : tu_path("%s/%s-0/%020" PRId64 ".%s", dir, TOPIC, base, ext);
    char *log = tu_path("%s/%s-0/%020" PRId64 ".log", dir, TOPIC, base);
    uint64_t pos[512];
    int nb = 0;
    batch_positions(log, pos, 512, &nb);
    assert_true(nb >= 4);
    free(log);

    uint64_t size = tu_file_size(path);
    uint64_t at;
    if (c->where == W_BATCH)
        at = pos[nb / 2] + (uint64_t)c->at;
    else
        at = c->at >= 0 ? (uint64_t)c->at : size - (uint64_t)(-c->at);
    uint64_t first_bad = at; /* first damaged byte */
    switch (c->damage) {
    case D_FLIP:
        assert_true(at < size);
        tu_flip_byte(path, at, (uint8_t)c->arg);
        break;
    case D_TRUNCATE:
        assert_true(at < size);
        tu_truncate(path, at);
        break;
    case D_ZERO_PAGE: {
        uint64_t page = at / 4096 * 4096;
        uint64_t len = size - page < 4096 ? size - page : 4096;
        zero_range(path, page, len);
        first_bad = page;
        break;
    }
    case D_APPEND:
        append_bytes(path, c->arg);
        first_bad = size;
        break;
    }
    /* Records of the batches that end before first_bad, counting earlier segments whole. */
    int whole = 0;
    while (whole < nb && pos[whole + 1] <= first_bad)
        whole++;
    *records_before_damage = base + (int64_t)whole * RECORDS_PER_BATCH;
    if (c->target == T_NEWEST_LOG) {
        char *m = tu_path("%s/.clean_shutdown", dir);
        assert_int_equal(unlink(m), 0);
        free(m);
    }
    return path;
}

static const char *expect_name(enum expect e)
{
    static const char *n[] = {"recover-prefix", "all", "open-corrupt", "read-corrupt"};
    return n[e];
}

/* Builds, damages and checks one case; prints a line; returns whether the outcome matched. */
static bool run_case(const struct corruption_case *c)
{
    char *dir = tu_mkdtemp();
    build(dir);
    int64_t before = -1;
    char *file = apply_damage(dir, c, &before);
    struct outcome o;
    run_checks(dir, file, &o);
    bool ok = true;
    char why[256] = "";
#define PIN(cond, msg)                                                                             \
    do {                                                                                           \
        if (ok && !(cond)) {                                                                       \
            ok = false;                                                                            \
            snprintf(why, sizeof(why), "%s", msg);                                                 \
        }                                                                                          \
    } while (0)
    if (c->verify_reports) {
        PIN(o.verify_rc == RT_E_CORRUPT, "rt_verify did not fail");
        PIN(o.verify_problems > 0, "rt_verify counted no problem");
        PIN(c->verify_reports == 2 || o.verify_names_file, "rt_verify did not name the file");
    } else {
        PIN(o.verify_rc == 0, "rt_verify reported an invisible damage");
    }
    switch (c->expect) {
    case E_RECOVER_PREFIX:
    case E_ALL: {
        int64_t want = c->expect == E_ALL ? RECORDS_TOTAL : before;
        PIN(o.open_rc == 0, "rt_open failed");
        PIN(o.read_end == READ_ALL, "reading did not reach the high watermark cleanly");
        PIN(o.read == want, "wrong number of records readable");
        PIN(o.high_watermark == want, "wrong high watermark");
        PIN(o.verify_after_rc == 0, "rt_verify not clean after the repairing open");
        break;
    }
    case E_OPEN_CORRUPT:
        PIN(o.open_rc == RT_E_CORRUPT, "rt_open did not fail with RT_E_CORRUPT");
        PIN(o.open_detail_ok, "RT_E_CORRUPT detail lacks the file or the offset");
        break;
    case E_READ_CORRUPT:
        PIN(o.open_rc == 0, "rt_open failed");
        PIN(o.read_end == READ_CORRUPT, "reading did not report RT_E_CORRUPT");
        PIN(o.read_detail_ok, "RT_E_CORRUPT detail lacks the file or the offset");
        PIN(o.read == before, "records of the damaged batch were served (or too few)");
        break;
    }
#undef PIN
    fprintf(stderr,
            "%-4s %-26s %-9s %-30s expect %-14s | verify rc %d problems %" PRIu64
            " names %d | open %d detail %d | read %" PRId64 "/%" PRId64
            " end %d detail %d hw %" PRId64 " | after %d%s%s\n",
            ok ? "ok" : "FAIL", target_name(c->target),
            c->damage == D_FLIP        ? "flip"
            : c->damage == D_TRUNCATE  ? "truncate"
            : c->damage == D_ZERO_PAGE ? "zero-page"
                                       : "append",
            c->why, expect_name(c->expect), o.verify_rc, o.verify_problems, o.verify_names_file,
            o.open_rc, o.open_detail_ok, o.read, before, o.read_end, o.read_detail_ok,
            o.high_watermark, o.verify_after_rc, ok ? "" : " WHY: ", ok ? "" : why);
    if (!ok && o.verify_after[0])
        fprintf(stderr, "     verify after: %s", o.verify_after);
    free(file);
    tu_rmdir_free(dir);
    return ok;
}

static void test_corruption_matrix(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        failures += run_case(&cases[i]) ? 0 : 1;
    assert_int_equal(failures, 0);
}

/* Was an ENGINE BUG (fixed: segment_open refuses to rebuild a sealed segment's indexes from a
 * log that is not whole, and partition_open checks that segments are dense): a sealed segment whose
 * .log lost its tail (truncated mid-batch, or at a batch boundary) is silently "recovered" at the
 * first rt_open instead of being reported. L2 says only the newest segment can have a torn tail; a
 * sealed one is corruption. What happens: the sealed .index now points past the shorter log (O5
 * fails), so segment_open() (engine/log/segment.c, the `!indexes_sound(seg)` branch of the
 * non-recovering path) rebuilds the indexes with segment_scan(), which stops at the torn batch like
 * CR2 and sets size_bytes there without reporting anything. rt_open returns 0; offsets 128..255
 * (acknowledged, below the high watermark 600) are gone and rt_fetch_start answers
 * RT_E_OFFSET_OUT_OF_RANGE for them (L1 broken: the next segment starts at 256); the rebuilt,
 * shorter index is written to disk, so the *second* rt_open fails with RT_E_CORRUPT "offset 8096:
 * batch length field beyond buffer end" — the answer the first open should have given. Expected:
 * rt_open fails with RT_E_CORRUPT naming the .log and the offset of the torn batch (or, at the
 * least, reads of 128..255 return RT_E_CORRUPT), and nothing on disk changes. */
static void test_sealed_log_truncated_is_reported(void **state)
{
    (void)state;
    static const struct corruption_case bug_cases[] = {
        {T_SEALED_LOG, D_TRUNCATE, W_BATCH, 30, 0, E_OPEN_CORRUPT, 1, "mid-batch"},
        {T_SEALED_LOG, D_TRUNCATE, W_BATCH, 0, 0, E_OPEN_CORRUPT, 2, "at a batch boundary"},
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof(bug_cases) / sizeof(bug_cases[0]); i++)
        failures += run_case(&bug_cases[i]) ? 0 : 1;
    assert_int_equal(failures, 0);
}

/* ---- power loss ---- */

/* Opens over the fault backend with sync=always and a tracking plan, appends `acked_target`
 * batches (or until an append fails), loses power (by call when no rule fired), closes, and
 * reopens with the backend under test. Returns the batches acknowledged. */
static void power_loss_run(struct io_fault_plan *plan, int batches, bool expect_synced_extra)
{
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(dir, &o, plan, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t acked = 0;
    int rc = 0;
    for (int i = 0; i < batches; i++) {
        int64_t base = -1;
        rc = append_batch(e, acked, &base);
        if (rc != 0)
            break;
        assert_int_equal(base, acked);
        acked += RECORDS_PER_BATCH;
    }
    if (!plan->power_lost) {
        assert_int_equal(rc, 0);
        assert_int_equal(io_fault_power_loss(plan), 0);
    } else {
        assert_int_equal(rc, RT_E_IO_FAILED);
    }
    assert_true(plan->power_lost);
    assert_int_equal(plan->power_loss_error, 0);
    /* The dead engine refuses writes. */
    int64_t base = -1;
    assert_int_equal(append_batch(e, acked, &base), RT_E_IO_FAILED);
    assert_int_equal(rt_close(e), RT_E_IO_FAILED);
    io_fault_plan_release(plan);

    struct tu_verify_log vl = {.with_warnings = true};
    options(&o);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct outcome out;
    memset(&out, 0, sizeof(out));
    read_back(e, "", &out);
    assert_int_equal(out.read_end, READ_ALL);
    /* Every acknowledged batch is there; beyond them only a batch that was synced before the
     * power went (a POWER_LOSS rule on an fdatasync lets that sync succeed). */
    if (expect_synced_extra)
        assert_true(out.read == acked || out.read == acked + RECORDS_PER_BATCH);
    else
        assert_int_equal(out.read, acked);
    /* The log continues densely after recovery. */
    assert_int_equal(append_batch(e, out.read, &base), 0);
    assert_int_equal(base, out.read);
    assert_int_equal(rt_close(e), 0);
    int vrc = rt_verify(dir, tu_on_problem, &vl);
    if (vrc)
        fprintf(stderr, "verify after power loss: %s", vl.all);
    assert_int_equal(vrc, 0);
    tu_rmdir_free(dir);
}

static void test_power_loss_after_acks(void **state)
{
    (void)state;
    /* Enough batches to roll segments, so sealed and newest segments are both involved. */
    for (int batches = 1; batches <= 121; batches += 60) {
        struct io_fault_plan plan = {.track_unsynced = true};
        power_loss_run(&plan, batches, false);
    }
}

/* The power goes at the Nth log write: that round's batch was never synced, so it must be
 * gone and never acknowledged. */
static void test_power_loss_at_nth_write(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth <= 90; nth += 22) {
        struct io_fault_plan plan = {.track_unsynced = true, .rule_count = 1};
        plan.rules[0] =
            (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS, .op = IO_OP_WRITE, .nth = nth};
        power_loss_run(&plan, 100, false);
    }
}

/* The power goes right after the Nth fdatasync succeeded: that batch is durable (and may be
 * acknowledged); everything later is refused. */
static void test_power_loss_at_nth_fdatasync(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth <= 90; nth += 22) {
        struct io_fault_plan plan = {.track_unsynced = true, .rule_count = 1};
        plan.rules[0] =
            (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS, .op = IO_OP_FDATASYNC, .nth = nth};
        power_loss_run(&plan, 100, true);
    }
}

/* Torn sectors: the unsynced round keeps a random whole-sector prefix of its write. Recovery
 * must cut a partial batch (CR1/CR2) and keep every acknowledged one; a batch whose sectors all
 * happened to persist may survive although it was never acknowledged (as on a real disk). */
static void test_power_loss_torn_sectors(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct io_fault_plan plan = {.track_unsynced = true,
                                     .power_loss_keep_sectors = true,
                                     .power_loss_seed = seed,
                                     .rule_count = 1};
        plan.rules[0] = (struct io_fault_rule){
            .mode = IO_FAULT_POWER_LOSS, .op = IO_OP_WRITE, .nth = 10 + seed * 7};
        power_loss_run(&plan, 100, true);
    }
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corruption_matrix),
        cmocka_unit_test(test_sealed_log_truncated_is_reported),
        cmocka_unit_test(test_power_loss_after_acks),
        cmocka_unit_test(test_power_loss_at_nth_write),
        cmocka_unit_test(test_power_loss_at_nth_fdatasync),
        cmocka_unit_test(test_power_loss_torn_sectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
