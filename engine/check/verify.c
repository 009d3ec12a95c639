/*
 * verify.c — rt_verify(): an offline check of a whole data directory, for operators (`ringtail
 * verify`) and tests. It reads, never writes: files are opened O_RDONLY and mapped PROT_READ,
 * the lock file is never created, nothing is renamed, truncated or rebuilt.
 *
 * What is checked (docs/format.md is normative for every layout named here):
 *   1. `<dir>/.lock` is not held (flock, and POSIX/OFD record locks) by a running engine;
 *      verify holds it (LOCK_EX) itself while it reads, so an engine cannot start mid-check.
 *   2. `ringtail.meta` parses (meta_parse: magic, version, CRC, names, sizes).
 *   3. For every topic and partition, `<topic>-<p>/` exists and holds only files named by a
 *      20-digit base offset (`.log`, `.index`, `.timeindex`, `.txnindex`, `.snapshot`) or
 *      `*.tmp`; anything else is a warning.
 *   4. Each `.log` is walked batch by batch (batch_size_at, batch_validate: lengths, magic, CRC,
 *      every record of uncompressed batches; compressed batches are decompressed and their
 *      records checked by the reader's own code, rt_records over a fetch of the batch). Offsets
 *      are dense: the first batch's baseOffset is the file name's base, every next batch starts
 *      at the previous lastOffset + 1, and each segment starts where the previous one ended (a
 *      gap is reported on the segment that ends short, as rt_open names it). A zero-filled tail
 *      after the last batch is preallocated space only in the newest segment of a directory
 *      without the clean-shutdown marker; so is a tail of stale batches of a recycled segment
 *      file (SC5, docs/format.md A.6 RS3: segment_tail_classify decides, as it does for open),
 *      and the indexes and the SC4 walk of that segment then stop where its log ends.
 *   5. Indexes, .txnindex files and snapshots are judged by the checks rt_open makes
 *      (engine/log/segment_check.c, docs/format.md §I), so verify reports exactly what open would
 *      refuse or repair: each `.index` / `.timeindex` has whole entries, no zero tail (same
 *      exception as above; a trimmed time index's all-zero entry 0 is an entry, format.md T5,
 *      time_index_live_entries), and passes segment_check_run (SC2, SC3); a missing one is reported
 *      (open rebuilds it). Each `.txnindex` passes txn_index_check (X1-X8, a torn entry
 *      included) and SC4 (txn_walk_compare: one entry per ABORT marker; SC6: not reported, as
 *      open keeps it, when its segment's log fails a CRC, which check_log reports); a missing
 *      one is an empty index. Index files without their `.log` are orphans. Every `.snapshot`
 *      must decode, and none may be past the partition's end offset. A missing `ringtail.meta`
 *      beside partition directories is a problem. SC7 (segment_check.c): in the newest segment
 *      of a directory that was not closed cleanly, .index, .timeindex and .txnindex entries past
 *      the log's end are what a crash that lost the log's tail leaves: a warning naming the file
 *      and the first such entry's byte offset, not a problem, as open drops them. (A snapshot
 *      past the end stays a problem: one is written only once the log below it is durable.)
 *   6. Every batch of the internal topics passes the record rules their replay at open applies
 *      (txn_log_batch_check for __transaction_state, group_batch_check for __consumer_offsets),
 *      so verify reports exactly the records that make rt_open fail.
 *   7. `producers.meta` parses; a directory with topics but no `producers.meta` lost it.
 *
 * When stderr is a terminal (and RINGTAIL_NO_PROGRESS is not set), a progress bar of the .log
 * bytes walked is drawn over one line of stderr, at most every 100 ms, and cleared at the end;
 * reports still go only through fn. The recovery point (docs/format.md A.7) is checked as open
 * reads it, but never used to skip anything: verify is the full check.
 *
 * Every problem is reported once through fn as "FILE: offset N: what" (or "FILE: what" when no
 * byte offset applies); warnings are reported as "warning: FILE: what" and do not fail. All
 * input is untrusted: only batch.h's validated accessors and the index/meta checkers read it,
 * and every length is checked first. Cost: one sequential read of every file (the .log three
 * times: its own walk with CRCs, then segment_check_run and the SC4 walk, which read headers).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "cleaner_checkpoint.h"
#include "error.h"
#include "records.h"
#include "fetch.h"
#include "index/offset_index.h"
#include "index/producer_snapshot.h"
#include "index/time_index.h"
#include "index/txn_index.h"
#include "leader_epoch.h"
#include "log_start.h"
#include "meta.h"
#include "group.h"
#include "producer_registry.h"
#include "recovery_point.h"
#include "segment_check.h"
#include "ringtail.h"
#include "txn_log.h"

/* Must match tools/cli.h until it moves to ringtail.h. */
#define VERIFY_PATH_BYTES    4096
#define VERIFY_MESSAGE_BYTES 1024
#define BASE_DIGITS          20

struct verifier {
    const char *dir;
    bool clean; /* the clean-shutdown marker is there: no segment may have preallocated space */
    void (*fn)(void *ctx, const char *problem);
    void *ctx;
    struct rt_verify_counts counts;
    /* The progress bar (stderr is a terminal): .log bytes walked of the directory's total. */
    bool progress;
    uint64_t progress_total_bytes;
    uint64_t progress_done_bytes;
    uint64_t progress_drawn_ns;
};

/* ---- progress (stderr a terminal, RINGTAIL_NO_PROGRESS unset) --------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Draws "verify: [#####.....]  45%  1.21 of 2.70 GB" over the line, at most every 100 ms
 * (always when final). Cost: one write(2) per draw. */
static void progress_draw(struct verifier *v, bool final)
{
    if (!v->progress)
        return;
    uint64_t now = now_ns();
    if (!final && now - v->progress_drawn_ns < 100000000ull)
        return;
    v->progress_drawn_ns = now;
    uint64_t total = v->progress_total_bytes ? v->progress_total_bytes : 1;
    uint64_t done = v->progress_done_bytes < total ? v->progress_done_bytes : total;
    if (final)
        done = total;
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    unsigned fill = (unsigned)((double)done / (double)total * WIDTH);
    for (unsigned i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = 0;
    char line[160];
    int n = snprintf(line, sizeof line, "\rverify: [%s] %3u%%  %.2f of %.2f GB%s", bar,
                     (unsigned)(100.0 * (double)done / (double)total), (double)done / 1e9,
                     (double)v->progress_total_bytes / 1e9, final ? "\r\033[K" : "");
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The .log bytes under pdir, for the bar's total (one stat per file, nothing read). */
static uint64_t log_bytes_under(const char *pdir)
{
    DIR *d = opendir(pdir);
    if (!d)
        return 0;
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        struct stat st;
        if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0 &&
            fstatat(dirfd(d), de->d_name, &st, 0) == 0)
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

struct log_result {
    int64_t last_offset;   /* -1 when the segment holds no valid batch */
    int64_t max_timestamp; /* largest batch maxTimestamp, -1 when none */
    uint64_t data_bytes;   /* end of the last valid batch */
    uint64_t log_bytes;    /* the log's extent: the file, or data_bytes when a stale tail
                              (SC5) follows it */
};

enum file_kind { KIND_LOG, KIND_INDEX, KIND_TIMEINDEX, KIND_TXNINDEX, KIND_SNAPSHOT, KIND_COUNT };

static const char *const kind_ext[KIND_COUNT] = {"log", "index", "timeindex", "txnindex",
                                                 "snapshot"};

struct segment_files {
    int64_t base_offset;
    bool has[KIND_COUNT];
};

/* ---- reporting ------------------------------------------------------------------------- */

static void report(struct verifier *v, bool warning, const char *file, int64_t offset,
                   const char *fmt, va_list ap)
{
    char what[VERIFY_MESSAGE_BYTES];
    char msg[VERIFY_MESSAGE_BYTES + VERIFY_PATH_BYTES + 64];
    vsnprintf(what, sizeof what, fmt, ap);
    if (offset >= 0)
        snprintf(msg, sizeof msg, "%s%s: offset %" PRId64 ": %s", warning ? "warning: " : "", file,
                 offset, what);
    else
        snprintf(msg, sizeof msg, "%s%s: %s", warning ? "warning: " : "", file, what);
    if (warning)
        v->counts.warnings++;
    else
        v->counts.problems++;
    if (v->fn)
        v->fn(v->ctx, msg);
}

__attribute__((format(printf, 4, 5))) static void problem(struct verifier *v, const char *file,
                                                          int64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(v, false, file, offset, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void warning(struct verifier *v, const char *file,
                                                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(v, true, file, -1, fmt, ap);
    va_end(ap);
}

/* A warning at a byte offset of file: what open repairs as the normal aftermath of a crash. */
__attribute__((format(printf, 4, 5))) static void warning_at(struct verifier *v, const char *file,
                                                             int64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(v, true, file, offset, fmt, ap);
    va_end(ap);
}

/* ---- files ----------------------------------------------------------------------------- */

struct mapped {
    const uint8_t *buf;
    size_t len;
    void *map; /* NULL for an empty file */
};

/* Maps path read-only. Returns 0 or -errno (reported by the caller). */
static int map_file(const char *path, struct mapped *m)
{
    static const uint8_t empty[1];
    *m = (struct mapped){.buf = empty};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int e = -errno;
            close(fd);
            return e;
        }
        m->map = p;
        m->buf = p;
        m->len = (size_t)st.st_size;
    }
    close(fd);
    return 0;
}

static void unmap_file(struct mapped *m)
{
    if (m->map)
        munmap(m->map, m->len);
    m->map = NULL;
}

static bool all_zero(const uint8_t *p, size_t n, size_t *first_nonzero)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i]) {
            if (first_nonzero)
                *first_nonzero = i;
            return false;
        }
    }
    return true;
}

static bool path_join(char *buf, size_t cap, const char *a, const char *b)
{
    int n = snprintf(buf, cap, "%s/%s", a, b);
    return n >= 0 && (size_t)n < cap;
}

/* ---- segment name parsing -------------------------------------------------------------- */

/* "<20 digits>.<ext>" → base and kind. Returns false for any other name. *overflow is set when
 * the digits are there but the value does not fit an int64. */
static bool parse_segment_name(const char *name, int64_t *base, enum file_kind *kind,
                               bool *overflow)
{
    *overflow = false;
    for (int i = 0; i < BASE_DIGITS; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    if (name[BASE_DIGITS] != '.')
        return false;
    const char *ext = name + BASE_DIGITS + 1;
    int k;
    for (k = 0; k < KIND_COUNT; k++)
        if (strcmp(ext, kind_ext[k]) == 0)
            break;
    if (k == KIND_COUNT)
        return false;
    int64_t v = 0;
    for (int i = 0; i < BASE_DIGITS; i++) {
        int d = name[i] - '0';
        if (v > (INT64_MAX - d) / 10) {
            *overflow = true;
            return true;
        }
        v = v * 10 + d;
    }
    *base = v;
    *kind = (enum file_kind)k;
    return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ---- .log ------------------------------------------------------------------------------ */

/* A compressed batch's records, decoded by the reader's own code (rt_records over a fetch of
 * just this batch): the codec stream and V11-V14 on the decompressed records. batch_validate
 * stops at the records of a compressed batch. */
static int check_compressed(struct verifier *v, const char *path, size_t pos, const uint8_t *batch,
                            size_t size, const struct batch_header *h, bool cleaned)
{
    int64_t base_offset = h->base_offset;
    if (cleaned) { /* a cleaned segment's batch: V10c, V13c (the reader's records_validate_stored) */
        struct compression_buffer buf = COMPRESSION_BUFFER_INIT;
        const char *why = NULL;
        int crc = records_validate_stored(batch, size, h, true, &buf, NULL, NULL, &why);
        compression_buffer_free(&buf);
        if (crc == -ENOMEM)
            return crc;
        if (crc)
            problem(v, path, (int64_t)pos, "batch: compressed records: %s",
                    why ? why : rt_strerror(crc));
        return 0;
    }
    rt_fetch *f = NULL;
    int rc = fetch_from_bytes(&f, batch, size, RT_READ_UNCOMMITTED, NULL, 0);
    if (rc != 0)
        return rc;
    struct rt_records it;
    rc = records_init(&it, f, base_offset);
    struct rt_record_view r;
    while (rc == 0)
        rc = records_next(&it, &r);
    if (rc == RT_E_CORRUPT) {
        /* The detail names the batch by its position in these bytes: restate it. */
        const char *d = rt_error_detail();
        const char *why = strstr(d, "offset 0: ");
        problem(v, path, (int64_t)pos, "batch: %s", why ? why + 10 : d);
    }
    rt_fetch_release(f);
    return rc == RT_E_END || rc == RT_E_CORRUPT ? 0 : rc;
}

/* SC5 (segment_check.c): in the newest segment of a directory that was not closed cleanly,
 * the log ends at the first position that is not the next batch; when what follows is a
 * recycled file's stale batches (docs/format.md A.6 RS3) open cuts it without counting it as a
 * torn tail, so verify reports nothing. Only called where a batch is due at pos. */
static bool stale_tail(const struct verifier *v, const struct mapped *m, size_t pos, int64_t next,
                       bool newest)
{
    if (!newest || v->clean || next < 0)
        return false;
    struct batch_header h;
    const char *why = NULL;
    int64_t size = batch_size_at(m->buf + pos, m->len - pos, &why);
    if (size > 0 && batch_validate(m->buf + pos, (size_t)size, 0, &h, &why) == 0 &&
        h.base_offset == next)
        return false; /* the next batch: the log goes on */
    uint64_t found = 0;
    return segment_tail_classify(m->buf, m->len, pos, SEGMENT_TAIL_WINDOW_BYTES, next, &found) ==
           SEGMENT_TAIL_STALE;
}

/* Walks one .log. expected_base is where the previous segment ended (-1 for the first).
 * Returns 0 or -ENOMEM; problems go to fn. */
static int check_log(struct verifier *v, const char *path, int64_t seg_base, int64_t expected_base,
                     const char *prev_path, uint64_t prev_bytes, bool newest, bool gaps_ok,
                     bool prev_gaps_ok, struct log_result *r)
{
    r->last_offset = -1;
    r->max_timestamp = -1;
    r->data_bytes = 0;
    r->log_bytes = UINT64_MAX;

    struct mapped m;
    int rc = map_file(path, &m);
    if (rc != 0) {
        problem(v, path, -1, "cannot read: %s", strerror(-rc));
        return 0;
    }
    v->progress_done_bytes += m.len;
    progress_draw(v, false);
    /* CL2 (docs/format.md A.9): a cleaned segment's range runs to the next segment's base. */
    if (expected_base >= 0 && seg_base != expected_base &&
        !(prev_gaps_ok && expected_base < seg_base))
        problem(v, prev_path, (int64_t)prev_bytes,
                "segment ends at offset %" PRId64 " but the next segment (%s) begins at %" PRId64
                " (%s)",
                expected_base, path, seg_base,
                expected_base < seg_base ? "records are missing" : "segments overlap");

    int64_t next = seg_base; /* the baseOffset the next batch must have */
    size_t pos = 0;
    int internal = strstr(path, "/" TXN_LOG_TOPIC "-")         ? 1
                   : strstr(path, "/" GROUP_OFFSETS_TOPIC "-") ? 2
                                                               : 0;
    while (pos < m.len) {
        size_t left = m.len - pos;
        size_t nz = 0;
        if (stale_tail(v, &m, pos, next, newest)) {
            r->log_bytes = pos; /* SC5: the log ends here, as open ends it */
            break;
        }
        if (left < BATCH_LOG_OVERHEAD_BYTES ||
            all_zero(m.buf + pos, BATCH_LOG_OVERHEAD_BYTES, NULL)) {
            if (all_zero(m.buf + pos, left, &nz)) {
                if (!newest || v->clean)
                    problem(v, path, (int64_t)pos,
                            "zero-filled tail of %zu bytes after the last batch (only the "
                            "newest segment of a directory that was not closed cleanly is "
                            "preallocated)",
                            left);
            } else if (left < BATCH_LOG_OVERHEAD_BYTES) {
                problem(v, path, (int64_t)pos, "%zu trailing bytes, too few for a batch", left);
            } else {
                problem(v, path, (int64_t)(pos + nz),
                        "non-zero bytes after a zero-filled gap starting at offset %zu", pos);
            }
            break;
        }
        const char *why = NULL;
        int64_t size = batch_size_at(m.buf + pos, left, &why);
        if (size < 0) {
            problem(v, path, (int64_t)pos, "%s (%zu bytes from here not checked)",
                    why ? why : "bad batch length", left);
            break;
        }
        struct batch_header h;
        rc = batch_validate_stored(m.buf + pos, (size_t)size, gaps_ok, &h, &why); /* V10c, V13c */
        if (rc != 0) {
            problem(v, path, (int64_t)pos, "batch: %s", why ? why : rt_strerror(rc));
            /* The length field is in bounds, so the next batch's position is still known. Its
             * offsets cannot be trusted: resynchronise continuity on the next good batch. */
            next = -1;
            pos += (size_t)size;
            continue;
        }
        /* Internal topics: the record rules their replay at open applies (one check each). */
        const char *what = NULL;
        if (internal == 1 && txn_log_batch_check(m.buf + pos, (size_t)size, &h, &what, &why))
            problem(v, path, (int64_t)pos, "%s record: %s: %s", TXN_LOG_TOPIC, what, why);
        if (internal == 2 && group_batch_check(m.buf + pos, (size_t)size, &h, &what, &why))
            problem(v, path, (int64_t)pos, "%s %s: %s", GROUP_OFFSETS_TOPIC, what, why);
        if (next >= 0 && (gaps_ok ? h.base_offset < next : h.base_offset != next)) /* CL1 */
            problem(v, path, (int64_t)pos, "baseOffset %" PRId64 ", expected %" PRId64 " (%s)",
                    h.base_offset, next,
                    pos == 0 ? "the segment's base offset from its file name"
                             : "the previous batch's lastOffset + 1");
        if ((h.attributes & BATCH_ATTR_COMPRESSION_MASK) != 0 && !batch_is_control(&h) &&
            check_compressed(v, path, pos, m.buf + pos, (size_t)size, &h, gaps_ok) == -ENOMEM) {
            unmap_file(&m);
            return -ENOMEM;
        }
        int64_t last = batch_last_offset(&h);
        if (h.max_timestamp > r->max_timestamp)
            r->max_timestamp = h.max_timestamp;
        r->last_offset = last;
        next = last + 1;
        v->counts.batches++;
        v->counts.records += (uint64_t)h.record_count;
        pos += (size_t)size;
        r->data_bytes = pos;
    }
    if (m.len == 0 && !newest && !gaps_ok)
        warning(v, path, "empty segment that is not the newest");
    v->counts.bytes += m.len;
    unmap_file(&m);
    return 0;
}

/* ---- indexes --------------------------------------------------------------------------- */

static size_t live_entries(const uint8_t *buf, size_t entries, size_t entry_bytes)
{
    while (entries > 0 && all_zero(buf + (entries - 1) * entry_bytes, entry_bytes, NULL))
        entries--;
    return entries;
}

/* Maps an index file of fixed-size entries and checks its shape: whole entries, and no
 * zero-filled (untrimmed) tail unless it is the newest segment's. False when it cannot be read
 * (reported); else *live is the number of entries before any zero tail. */
static bool map_index(struct verifier *v, const char *path, size_t entry_bytes, bool newest,
                      struct mapped *m, size_t *live)
{
    int rc = map_file(path, m);
    if (rc != 0) {
        problem(v, path, -1, "cannot read: %s", strerror(-rc));
        return false;
    }
    v->counts.bytes += m->len;
    size_t total = m->len / entry_bytes;
    if (m->len % entry_bytes)
        problem(v, path, (int64_t)(total * entry_bytes), "size %zu is not a multiple of %zu",
                m->len, entry_bytes);
    /* A sealed or cleanly closed segment's index was trimmed: open reads it whole, and the
     * time index's entry 0 may be all zero, (timestamp 0, base offset), and real. */
    bool trimmed = !newest || v->clean;
    *live = entry_bytes == TIME_INDEX_ENTRY_BYTES && total <= UINT32_MAX
                ? time_index_live_entries(m->buf, (uint32_t)total, trimmed)
                : live_entries(m->buf, total, entry_bytes);
    if (*live < total && trimmed)
        problem(v, path, (int64_t)(*live * entry_bytes),
                "%zu zero-filled entries at the end: the index of a sealed segment was not "
                "trimmed",
                total - *live);
    return true;
}

/* Index entries beyond their shape are judged by segment_check_run, the check open makes
 * (SC2, SC3): verify reports exactly what open would rebuild. */
static void check_indexes(struct verifier *v, const char *log_path, const char *index_path,
                          const char *time_path, int64_t seg_base, bool newest, bool gaps_ok,
                          uint64_t log_bytes)
{
    struct mapped log, oidx = {0}, tidx = {0};
    size_t olive = 0, tlive = 0;
    bool has_oidx =
        index_path && map_index(v, index_path, OFFSET_INDEX_ENTRY_BYTES, newest, &oidx, &olive);
    bool has_tidx =
        time_path && map_index(v, time_path, TIME_INDEX_ENTRY_BYTES, newest, &tidx, &tlive);
    if ((has_oidx || has_tidx) && map_file(log_path, &log) == 0) {
        struct segment_check chk;
        segment_check_run_gaps(log.buf, log.len < log_bytes ? log.len : log_bytes, seg_base,
                               newest && !v->clean, gaps_ok, has_oidx ? oidx.buf : NULL,
                               (uint32_t)olive, has_tidx ? tidx.buf : NULL, (uint32_t)tlive, &chk);
        if (has_oidx && chk.oidx_bad != SEGMENT_CHECK_SOUND)
            problem(v, index_path, (int64_t)chk.oidx_bad * OFFSET_INDEX_ENTRY_BYTES,
                    "entry %" PRIu32 ": %s (open rebuilds it)", chk.oidx_bad, chk.oidx_why);
        if (has_tidx && chk.tidx_bad != SEGMENT_CHECK_SOUND)
            problem(v, time_path, (int64_t)chk.tidx_bad * TIME_INDEX_ENTRY_BYTES,
                    "entry %" PRIu32 ": %s (open rebuilds it)", chk.tidx_bad, chk.tidx_why);
        /* SC7: the newest segment after a crash; the entries before them were checked. */
        if (has_oidx && chk.oidx_past_end > 0)
            warning_at(
                v, index_path, (int64_t)(olive - chk.oidx_past_end) * OFFSET_INDEX_ENTRY_BYTES,
                "entry %zu and the %" PRIu32 " after it: past the log's end (byte %" PRIu64
                ", offset %" PRId64 "), left by a crash that lost the log's tail; the next "
                "open drops them",
                olive - chk.oidx_past_end, chk.oidx_past_end - 1, chk.data_bytes, chk.next_offset);
        if (has_tidx && chk.tidx_past_end > 0)
            warning_at(v, time_path, (int64_t)(tlive - chk.tidx_past_end) * TIME_INDEX_ENTRY_BYTES,
                       "entry %zu and the %" PRIu32 " after it: past the log's end (offset %" PRId64
                       "), left by a crash that lost the log's tail; the next open drops them",
                       tlive - chk.tidx_past_end, chk.tidx_past_end - 1, chk.next_offset);
        unmap_file(&log);
    }
    if (has_oidx)
        unmap_file(&oidx);
    if (has_tidx)
        unmap_file(&tidx);
}

/* A .txnindex: its shape (X1-X8, txn_index_check; a torn entry is damage wherever it is) and
 * SC4, the check open makes (txn_walk_compare): one entry per ABORT marker of the segment. A
 * missing file is an empty index. Open rebuilds one that fails either. */
static void check_txn_index(struct verifier *v, struct txn_walk *w, const char *log_path,
                            const char *path, bool present, int64_t seg_base, uint64_t log_bytes,
                            bool newest, int64_t next_offset)
{
    bool shaped = true;
    if (present) {
        struct mapped m;
        int rc = map_file(path, &m);
        if (rc != 0) {
            problem(v, path, -1, "cannot read: %s", strerror(-rc));
            return;
        }
        v->counts.bytes += m.len;
        const char *why = NULL;
        uint32_t bad = 0;
        if (txn_index_check(m.buf, m.len, seg_base, &why, &bad) != 0) {
            problem(v, path, (int64_t)bad * TXN_INDEX_ENTRY_BYTES, "entry %" PRIu32 ": %s", bad,
                    why ? why : "invalid");
            shaped = false;
        }
        unmap_file(&m);
    }
    struct mapped log;
    if (map_file(log_path, &log) != 0)
        return;                                                     /* reported by check_log */
    size_t len = log.len < log_bytes ? log.len : (size_t)log_bytes; /* SC5: not a stale tail */
    struct txn_index idx = TXN_INDEX_INIT;
    bool loaded = shaped && txn_index_open(&idx, path, seg_base, 0, NULL, NULL) == 0;
    if (loaded) {
        const char *why = NULL;
        uint32_t bad = 0;
        /* SC7: entries of markers a crash took with the log's tail (newest segment only). */
        uint32_t count = txn_index_count(&idx);
        uint32_t past = newest && !v->clean ? txn_index_past_end(&idx, next_offset) : 0;
        if (txn_walk_compare_prefix(w, log.buf, len, &idx, count - past, &why, &bad) == -EBADMSG)
            problem(v, path, (int64_t)bad * TXN_INDEX_ENTRY_BYTES,
                    "entry %" PRIu32 ": %s (open rebuilds it)%s", bad, why,
                    present ? "" : " (the file is missing)");
        else if (past > 0)
            warning_at(v, path, (int64_t)(count - past) * TXN_INDEX_ENTRY_BYTES,
                       "entry %" PRIu32 " and the %" PRIu32 " after it: their ABORT markers are "
                       "past the log's end (offset %" PRId64 "), lost with its tail in a crash; "
                       "the next open drops them",
                       count - past, past - 1, next_offset);
    } else {
        (void)txn_walk_rebuild(w, log.buf, len, NULL, false);
    }
    txn_index_close(&idx);
    unmap_file(&log);
}

/* ---- partitions ------------------------------------------------------------------------ */

static int cmp_segments(const void *a, const void *b)
{
    const struct segment_files *x = a, *y = b;
    return x->base_offset < y->base_offset ? -1 : x->base_offset > y->base_offset;
}

static int find_or_add(struct segment_files **segs, size_t *count, size_t *cap, int64_t base)
{
    for (size_t i = 0; i < *count; i++)
        if ((*segs)[i].base_offset == base)
            return (int)i;
    if (*count == *cap) {
        size_t n = *cap ? *cap * 2 : 16;
        struct segment_files *p = realloc(*segs, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        *segs = p;
        *cap = n;
    }
    (*segs)[*count] = (struct segment_files){.base_offset = base};
    return (int)(*count)++;
}

/* The recovery point (docs/format.md A.7, PA8 in partition.h), judged as open judges it: one
 * that fails RP1-RP5 is never trusted (open checks every segment and writes it again): a
 * problem. One that claims more than the files hold — a recovery point past the log's end, a
 * segment at or past the log start that the directory lacks, a .log shorter than recorded — is
 * not trusted for those segments and is written again by open: a problem, except for the newest
 * segment of a directory that was not closed cleanly (open scans that one whatever it says): a
 * warning. A missing one beside sealed segments costs the next open a walk: a warning. Entries
 * whose files merely changed are not reported: open checks those segments as verify does. */
static void check_recovery_point(struct verifier *v, const char *pdir, bool present,
                                 const struct segment_files *segs, size_t count,
                                 int64_t newest_base, int64_t end_offset)
{
    char path[VERIFY_PATH_BYTES];
    if (!path_join(path, sizeof path, pdir, RECOVERY_POINT_FILE))
        return;
    size_t logs = 0;
    for (size_t i = 0; i < count; i++)
        logs += segs[i].has[KIND_LOG];
    if (!present) {
        if (logs > 1)
            warning(v, path, "missing: the next open checks every segment and writes it");
        return;
    }
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    int rc = recovery_point_load(pdir, &rp, &why, &bad);
    if (rc == RT_E_CORRUPT) {
        problem(v, path, (int64_t)bad,
                "%s (not trusted: open checks every segment and writes it "
                "again)",
                why ? why : "damaged");
        return;
    }
    if (rc) {
        problem(v, path, -1, "cannot read: %s", strerror(-rc));
        return;
    }
    int64_t log_start = -1;
    for (size_t i = 0; i < count && log_start < 0; i++)
        if (segs[i].has[KIND_LOG])
            log_start = segs[i].base_offset;
    if (rp.count > 0 && end_offset >= 0 && rp.offset > end_offset) {
        if (v->clean)
            problem(v, path, 10,
                    "recovery point %" PRId64 " is past the log's end offset %" PRId64
                    " (open writes it again)",
                    rp.offset, end_offset);
        else
            warning_at(v, path, 10,
                       "recovery point %" PRId64 " is past the log's end offset %" PRId64
                       " after a crash (open writes it again)",
                       rp.offset, end_offset);
    }
    for (uint32_t i = 0; i < rp.count; i++) {
        const struct recovery_segment *e = &rp.segments[i];
        int64_t at = RECOVERY_POINT_HEADER_BYTES + (int64_t)i * RECOVERY_POINT_ENTRY_BYTES;
        if (log_start < 0 || e->base_offset < log_start)
            continue; /* retention removed it: stale, not wrong */
        const struct segment_files *s = NULL;
        for (size_t k = 0; k < count && !s; k++)
            if (segs[k].base_offset == e->base_offset && segs[k].has[KIND_LOG])
                s = &segs[k];
        if (!s) {
            problem(v, path, at,
                    "names segment %0*" PRId64 ".log, which the directory does not hold (open "
                    "writes it again)",
                    BASE_DIGITS, e->base_offset);
            continue;
        }
        char name[BASE_DIGITS + 16], log_path[VERIFY_PATH_BYTES];
        snprintf(name, sizeof name, "%0*" PRId64 ".log", BASE_DIGITS, e->base_offset);
        struct recovery_stamp now;
        if (!path_join(log_path, sizeof log_path, pdir, name) || recovery_stamp(log_path, &now))
            continue;
        if (now.bytes >= e->files[RECOVERY_LOG].bytes)
            continue;
        if (e->base_offset == newest_base && !v->clean)
            warning_at(v, path, at,
                       "records %" PRIu64 " bytes of %s, which holds %" PRIu64
                       " after a crash (open scans it and writes this again)",
                       e->files[RECOVERY_LOG].bytes, name, now.bytes);
        else
            problem(v, path, at,
                    "records %" PRIu64 " bytes of %s, which holds %" PRIu64
                    " (open checks it and writes this again)",
                    e->files[RECOVERY_LOG].bytes, name, now.bytes);
    }
    if (rp.has_tail && log_start >= 0 && rp.tail.base_offset >= log_start) {
        /* PA9: the tail names a prefix of the newest segment; a .log shorter than it (or a base
         * that is no segment) claims bytes the files do not hold. After a crash it may name the
         * segment a roll had just sealed: that is stale, not wrong (open scans it whole). */
        int64_t at = RECOVERY_POINT_HEADER_BYTES + (int64_t)rp.count * RECOVERY_POINT_ENTRY_BYTES;
        char name[BASE_DIGITS + 16], log_path[VERIFY_PATH_BYTES];
        snprintf(name, sizeof name, "%0*" PRId64 ".log", BASE_DIGITS, rp.tail.base_offset);
        struct recovery_stamp now;
        if (path_join(log_path, sizeof log_path, pdir, name) &&
            recovery_stamp(log_path, &now) == 0 &&
            (now.mtime_ns == RECOVERY_STAMP_MISSING || now.bytes < rp.tail.bytes)) {
            if (v->clean)
                problem(v, path, at,
                        "its tail records %" PRIu64 " bytes of %s, which holds %" PRIu64
                        " (open scans it from its start)",
                        rp.tail.bytes, name, now.bytes);
            else
                warning_at(v, path, at,
                           "its tail records %" PRIu64 " bytes of %s, which holds %" PRIu64
                           " after a crash (open scans it from its start)",
                           rp.tail.bytes, name, now.bytes);
        }
    }
    recovery_point_free(&rp);
}

static int check_partition(struct verifier *v, const char *pdir)
{
    DIR *d = opendir(pdir);
    if (!d) {
        problem(v, pdir, -1, "partition directory %s",
                errno == ENOENT ? "missing" : strerror(errno));
        return 0;
    }
    struct segment_files *segs = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    char path[VERIFY_PATH_BYTES];
    int64_t snapshot_max = -1; /* the newest sound snapshot */
    bool has_recovery_point = false;
    int64_t gap_limit = 0; /* A.9 CL1: segments based below it may skip offsets */
    bool swap_pending = false;
    int64_t swap_base = -1, swap_end = -1; /* A.9 CL5: the swap open will finish */
    uint32_t cleaned_files = 0;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || has_suffix(name, ".tmp"))
            continue;
        int64_t base = 0;
        enum file_kind kind = KIND_LOG;
        bool overflow = false;
        if (!path_join(path, sizeof path, pdir, name))
            continue;
        if (strcmp(name, RECOVERY_POINT_FILE) == 0) {
            has_recovery_point = true; /* checked below, once the segments are known */
            continue;
        }
        if (strcmp(name, CLEANER_CHECKPOINT_FILE) == 0) { /* A.9: open refuses a damaged one */
            struct cleaner_checkpoint c;
            const char *why = NULL;
            size_t bad = 0;
            int crc = cleaner_checkpoint_load(pdir, &c, &why, &bad);
            if (crc == RT_E_CORRUPT)
                problem(v, path, (int64_t)bad, "%s (open refuses the partition)", why);
            else if (crc)
                problem(v, path, -1, "cannot read: %s", strerror(-crc));
            if (crc == 0) {
                gap_limit = c.cleaned_end;
                if (c.source_count > 0) {
                    swap_pending = true;
                    swap_base = c.swap_base;
                    swap_end = c.swap_end;
                    if (c.swap_end > gap_limit)
                        gap_limit = c.swap_end;
                    warning(v, path,
                            "a compaction swap of %" PRIu32 " segments from offset %" PRId64
                            " is committed but not finished (the next writable open finishes "
                            "it)",
                            c.source_count, c.swap_base);
                }
            }
            cleaner_checkpoint_free(&c);
            continue;
        }
        if (has_suffix(name, CLEANER_CLEANED_SUFFIX)) {
            cleaned_files++; /* judged once the checkpoint is read */
            continue;
        }
        if (strcmp(name, LEADER_EPOCH_FILE) == 0) { /* A.10: open rebuilds a damaged one */
            struct leader_epoch_cache c;
            const char *why = NULL;
            size_t bad = 0;
            int lrc = leader_epoch_load(pdir, &c, &why, &bad);
            if (lrc == RT_E_CORRUPT)
                warning(v, path, "offset %zu: %s (open rebuilds it from the batches)", bad, why);
            else if (lrc == 0 && c.truncate_to >= 0)
                warning(v, path,
                        "a truncation to offset %" PRId64 " is unfinished (open "
                        "finishes it)",
                        c.truncate_to);
            if (lrc == 0)
                leader_epoch_free(&c);
            continue;
        }
        if (strcmp(name, LOG_RESTART_FILE) == 0) { /* A.11: open finishes the restart */
            int64_t at = 0;
            const char *why = NULL;
            size_t bad = 0;
            if (log_start_load_named(pdir, LOG_RESTART_FILE, &at, &why, &bad) == RT_E_CORRUPT)
                warning(v, path, "offset %zu: %s (open ignores it)", bad, why);
            else
                warning(v, path,
                        "a restart of the log at offset %" PRId64 " is unfinished (open "
                        "finishes it)",
                        at);
            continue;
        }
        if (strcmp(name, LOG_START_FILE) == 0) { /* A.8: open ignores a damaged one */
            int64_t start = 0;
            const char *why = NULL;
            size_t bad = 0;
            if (log_start_load(pdir, &start, &why, &bad) == RT_E_CORRUPT)
                warning(v, path, "offset %zu: %s (open ignores it)", bad, why);
            continue;
        }
        if (!parse_segment_name(name, &base, &kind, &overflow)) {
            warning(v, path, "unexpected file in a partition directory");
            continue;
        }
        if (overflow) {
            problem(v, path, -1, "base offset in the file name does not fit a 64-bit offset");
            continue;
        }
        if (kind == KIND_SNAPSHOT) {
            /* Producer-state snapshots are named by offset, not by segment: check alone. */
            const char *why = NULL;
            size_t bad = 0;
            int src = producer_snapshot_read(path, NULL, NULL, &why, &bad);
            if (src == -EBADMSG)
                problem(v, path, (int64_t)bad, "%s (open removes it)",
                        why ? why : "invalid snapshot");
            else if (src != 0)
                problem(v, path, -1, "cannot read: %s", strerror(-src));
            else if (base > snapshot_max)
                snapshot_max = base;
            continue;
        }
        int i = find_or_add(&segs, &count, &cap, base);
        if (i < 0) {
            rc = i;
            break;
        }
        segs[i].has[kind] = true;
    }
    closedir(d);
    if (rc != 0) {
        free(segs);
        return rc;
    }
    qsort(segs, count, sizeof *segs, cmp_segments);
    if (cleaned_files > 0 && !swap_pending)
        warning(v, pdir,
                "%" PRIu32 " *.cleaned file(s) of a compaction that was not committed (the next "
                "writable open removes them)",
                cleaned_files);

    /* The newest segment is the one with the largest base that has a log. */
    int64_t newest_base = -1;
    for (size_t i = 0; i < count; i++)
        if (segs[i].has[KIND_LOG])
            newest_base = segs[i].base_offset;

    struct log_result r = {0};
    int64_t expected = -1;
    char prev_path[VERIFY_PATH_BYTES] = "";
    uint64_t prev_bytes = 0;
    struct txn_walk w;
    bool walking = false;
    bool prev_gaps_ok = false;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const struct segment_files *s = &segs[i];
        char name[BASE_DIGITS + 16];
        if (!s->has[KIND_LOG]) {
            for (int k = KIND_INDEX; k <= KIND_TXNINDEX; k++) {
                if (!s->has[k])
                    continue;
                snprintf(name, sizeof name, "%0*" PRId64 ".%s", BASE_DIGITS, s->base_offset,
                         kind_ext[k]);
                if (path_join(path, sizeof path, pdir, name))
                    problem(v, path, -1,
                            "index without a log segment (%0*" PRId64 ".log); open removes it",
                            BASE_DIGITS, s->base_offset);
            }
            continue; /* a .snapshot alone is normal: snapshots are named by offset */
        }
        bool newest = s->base_offset == newest_base;
        if (swap_pending && s->base_offset > swap_base && s->base_offset < swap_end)
            continue; /* CL5: a source the committed swap replaces; open removes it */
        v->counts.segments++;
        if (!walking) {
            txn_walk_init(&w, s->base_offset);
            if (gap_limit > 0)
                w.complete = false; /* CLN5: the cleaner dropped transactions' first batches */
            walking = true;
        }
        bool gaps_ok = s->base_offset < gap_limit;
        char log_path[VERIFY_PATH_BYTES], index_path[VERIFY_PATH_BYTES],
            time_path[VERIFY_PATH_BYTES], txn_path[VERIFY_PATH_BYTES];
        snprintf(name, sizeof name, "%0*" PRId64 ".log", BASE_DIGITS, s->base_offset);
        if (!path_join(log_path, sizeof log_path, pdir, name))
            continue;
        snprintf(name, sizeof name, "%0*" PRId64 ".index", BASE_DIGITS, s->base_offset);
        bool ok = path_join(index_path, sizeof index_path, pdir, name);
        snprintf(name, sizeof name, "%0*" PRId64 ".timeindex", BASE_DIGITS, s->base_offset);
        ok = ok && path_join(time_path, sizeof time_path, pdir, name);
        snprintf(name, sizeof name, "%0*" PRId64 ".txnindex", BASE_DIGITS, s->base_offset);
        ok = ok && path_join(txn_path, sizeof txn_path, pdir, name);
        if (!ok)
            continue;
        bool has[KIND_TXNINDEX + 1];
        memcpy(has, s->has, sizeof has);
        if (swap_pending && s->base_offset == swap_base) {
            /* CL5: open renames the .cleaned files over these; judge what it will serve. */
            char *paths[] = {log_path, index_path, time_path, txn_path};
            const int kinds[] = {KIND_LOG, KIND_INDEX, KIND_TIMEINDEX, KIND_TXNINDEX};
            for (size_t k = 0; k < 4; k++) {
                char cleaned[VERIFY_PATH_BYTES];
                if (snprintf(cleaned, sizeof cleaned, "%s%s", paths[k], CLEANER_CLEANED_SUFFIX) <
                        (int)sizeof cleaned &&
                    access(cleaned, F_OK) == 0) {
                    memcpy(paths[k], cleaned, strlen(cleaned) + 1);
                    has[kinds[k]] = true;
                }
            }
        }
        rc = check_log(v, log_path, s->base_offset, expected, prev_path, prev_bytes, newest,
                       gaps_ok, prev_gaps_ok, &r);
        if (rc != 0)
            break;
        prev_gaps_ok = gaps_ok;
        expected = r.last_offset >= 0 ? r.last_offset + 1 : s->base_offset;
        snprintf(prev_path, sizeof prev_path, "%s", log_path);
        prev_bytes = r.data_bytes;

        /* The engine creates both indexes with the log; open rebuilds a missing one. */
        if (!has[KIND_INDEX])
            problem(v, index_path, -1, "missing (open rebuilds it from the log)");
        if (!has[KIND_TIMEINDEX])
            problem(v, time_path, -1, "missing (open rebuilds it from the log)");
        check_indexes(v, log_path, has[KIND_INDEX] ? index_path : NULL,
                      has[KIND_TIMEINDEX] ? time_path : NULL, s->base_offset, newest, gaps_ok,
                      r.log_bytes);
        check_txn_index(v, &w, log_path, txn_path, has[KIND_TXNINDEX], s->base_offset, r.log_bytes,
                        newest, expected);
    }
    if (walking)
        txn_walk_free(&w);
    /* Snapshots describe the log up to their offset: one past the log's end is stale (the tail
     * it saw is gone) and open removes it. */
    if (rc == 0 && snapshot_max >= 0 && expected >= 0 && snapshot_max > expected) {
        char name[BASE_DIGITS + 16];
        snprintf(name, sizeof name, "%0*" PRId64 ".snapshot", BASE_DIGITS, snapshot_max);
        if (path_join(path, sizeof path, pdir, name))
            problem(v, path, -1,
                    "snapshot at offset %" PRId64 " is past the log's end offset %" PRId64
                    " (open removes it)",
                    snapshot_max, expected);
    }
    if (rc == 0)
        check_recovery_point(v, pdir, has_recovery_point, segs, count, newest_base, expected);
    free(segs);
    return rc;
}

/* ---- directory ------------------------------------------------------------------------- */

/* Files the engine keeps at the top of a data directory. */
static bool top_level_known(const char *name)
{
    /* scram-credentials: the broker's (docs/format.md S), checked by `ringtail verify` itself;
     * __cluster_metadata/: the broker's metadata quorum, raft's own files (docs/format.md L);
     * replication-offset-checkpoint: a cluster node's (M), checked by `ringtail verify` */
    return strcmp(name, META_FILE) == 0 || strcmp(name, META_LOCK_FILE) == 0 ||
           strcmp(name, "__cluster_metadata") == 0 || strcmp(name, "scram-credentials") == 0 ||
           strcmp(name, "replication-offset-checkpoint") == 0 ||
           strcmp(name, PRODUCER_REGISTRY_FILE) == 0 || strcmp(name, META_CLEAN_FILE) == 0 ||
           has_suffix(name, ".tmp") || strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* True when name is "<topic>-<p>" for a catalogued topic and p < its partition count. */
static bool is_partition_dir(const struct meta_catalogue *cat, const char *name)
{
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || dash[1] == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long p = strtoul(dash + 1, &end, 10);
    if (errno || *end || dash[1] < '0' || dash[1] > '9')
        return false;
    size_t n = (size_t)(dash - name);
    for (uint32_t i = 0; i < cat->count; i++)
        if (strlen(cat->topics[i].name) == n && memcmp(cat->topics[i].name, name, n) == 0 &&
            p < cat->topics[i].partitions)
            return true;
    return false;
}

static int load_catalogue(struct verifier *v, struct meta_catalogue *cat, bool *ok)
{
    char path[VERIFY_PATH_BYTES];
    *ok = false;
    if (!path_join(path, sizeof path, v->dir, META_FILE))
        return -ENAMETOOLONG;
    struct mapped m;
    int rc = map_file(path, &m);
    char orphan[256];
    if (rc == -ENOENT && meta_orphan_partition(v->dir, orphan, sizeof orphan)) {
        problem(v, path, -1, "missing, but the directory holds partition data (%s/)", orphan);
        return 0;
    }
    if (rc == -ENOENT) {
        warning(v, path, "missing: the directory has no topics");
        *ok = true;
        return 0;
    }
    if (rc != 0) {
        problem(v, path, -1, "cannot read: %s", strerror(-rc));
        return 0;
    }
    v->counts.bytes += m.len;
    const char *why = NULL;
    size_t bad = 0;
    rc = meta_parse(m.buf, m.len, cat, &why, &bad);
    unmap_file(&m);
    if (rc == -ENOMEM)
        return rc;
    if (rc != 0) {
        problem(v, path, (int64_t)bad, "%s", why ? why : "corrupt catalogue");
        return 0;
    }
    *ok = true;
    return 0;
}

/* Takes dir/.lock without creating it. Returns the fd (or -1 when there is no lock file),
 * RT_E_DIRECTORY_LOCKED, or -errno. */
static int take_lock(const char *dir)
{
    char path[VERIFY_PATH_BYTES];
    if (!path_join(path, sizeof path, dir, META_LOCK_FILE))
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? -1 : -errno;
    /* Shared, as a read-only rt_open: readers coexist, a writer's exclusive lock excludes us. */
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        return e == EWOULDBLOCK ? RT_E_DIRECTORY_LOCKED : -e;
    }
    /* An engine that locks with fcntl record locks instead would not conflict with flock:
     * ask for those too. F_GETLK needs no write access. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
        close(fd);
        return RT_E_DIRECTORY_LOCKED;
    }
    return fd;
}

int rt_verify_with_counts(const char *dir, void (*fn)(void *ctx, const char *problem), void *ctx,
                          struct rt_verify_counts *out)
{
    error_clear();
    if (out)
        *out = (struct rt_verify_counts){0};
    if (!dir || !*dir)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_verify: no directory");
    struct stat st;
    if (stat(dir, &st) != 0)
        return error_set(-errno, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return error_set(-ENOTDIR, "%s: not a directory", dir);

    int lock_fd = take_lock(dir);
    if (lock_fd == RT_E_DIRECTORY_LOCKED)
        return error_set(RT_E_DIRECTORY_LOCKED,
                         "%s/%s is held by a running engine; verify needs a closed directory", dir,
                         META_LOCK_FILE);
    if (lock_fd < -1)
        return error_set(lock_fd, "%s/%s: %s", dir, META_LOCK_FILE, strerror(-lock_fd));

    struct verifier v = {.dir = dir, .fn = fn, .ctx = ctx};
    char clean_path[VERIFY_PATH_BYTES];
    v.clean = path_join(clean_path, sizeof clean_path, dir, META_CLEAN_FILE) &&
              access(clean_path, F_OK) == 0;
    struct meta_catalogue cat = {0};
    bool cat_ok = false;
    int rc = load_catalogue(&v, &cat, &cat_ok);
    char path[VERIFY_PATH_BYTES];
    if (rc == 0 && path_join(path, sizeof path, dir, PRODUCER_REGISTRY_FILE)) {
        struct mapped m;
        int mrc = map_file(path, &m);
        if (mrc == 0) {
            v.counts.bytes += m.len;
            int64_t block_end = 0;
            struct producer_name *names = NULL;
            uint32_t n = 0;
            const char *why = NULL;
            size_t bad = 0;
            mrc = producer_registry_parse(m.buf, m.len, &block_end, &names, &n, &why, &bad);
            unmap_file(&m);
            free(names);
            if (mrc == RT_E_CORRUPT)
                problem(&v, path, (int64_t)bad, "%s", why);
            else if (mrc == -ENOMEM)
                rc = mrc;
        } else if (mrc != -ENOENT) {
            problem(&v, path, -1, "cannot read: %s", strerror(-mrc));
        } else if (cat_ok && cat.count > 0) {
            /* rt_open writes the file at every open (engine.c, producer_ids_from_partitions),
             * so a directory with topics and no file has lost it: the next open derives the
             * producer ids from the partitions and rewrites it. */
            problem(&v, path, -1,
                    "missing: the producer-id allocator is gone (named producers forgotten); "
                    "rt_open rebuilds it above every producer id the partitions know");
        }
    }
    v.progress = isatty(STDERR_FILENO) && !getenv("RINGTAIL_NO_PROGRESS");
    for (uint32_t t = 0; v.progress && rc == 0 && cat_ok && t < cat.count; t++)
        for (uint32_t p = 0; p < cat.topics[t].partitions; p++)
            if (meta_partition_dir(path, sizeof path, dir, cat.topics[t].name, p) == 0)
                v.progress_total_bytes += log_bytes_under(path);
    if (rc == 0 && cat_ok) {
        v.counts.topics = cat.count;
        for (uint32_t t = 0; t < cat.count && rc == 0; t++) {
            for (uint32_t p = 0; p < cat.topics[t].partitions && rc == 0; p++) {
                if (meta_partition_dir(path, sizeof path, dir, cat.topics[t].name, p) != 0) {
                    problem(&v, dir, -1, "partition directory name too long for %s-%" PRIu32,
                            cat.topics[t].name, p);
                    continue;
                }
                v.counts.partitions++;
                rc = check_partition(&v, path);
            }
        }
        DIR *d = rc == 0 ? opendir(dir) : NULL;
        if (d) {
            struct dirent *de;
            while ((de = readdir(d)) != NULL) {
                if (top_level_known(de->d_name) || is_partition_dir(&cat, de->d_name))
                    continue;
                size_t dl = strlen(de->d_name);
                if (dl > 7 && strcmp(de->d_name + dl - 7, "-delete") == 0 &&
                    strchr(de->d_name, '.'))
                    continue; /* a deleted topic's data (log.c LG9): the next open removes it */
                if (path_join(path, sizeof path, dir, de->d_name))
                    warning(&v, path, "unexpected entry in the data directory");
            }
            closedir(d);
        }
    }
    progress_draw(&v, true); /* 100%, then the line is cleared for the report */
    meta_catalogue_free(&cat);
    if (lock_fd >= 0) {
        flock(lock_fd, LOCK_UN);
        close(lock_fd);
    }
    if (out)
        *out = v.counts;
    if (rc != 0)
        return error_set(rc, "%s: verify stopped: %s", dir, strerror(-rc));
    if (v.counts.problems > 0)
        return error_set(RT_E_CORRUPT, "%s: %" PRIu64 " problem%s found", dir, v.counts.problems,
                         v.counts.problems == 1 ? "" : "s");
    return 0;
}

int rt_verify(const char *dir, void (*fn)(void *ctx, const char *problem), void *ctx)
{
    return rt_verify_with_counts(dir, fn, ctx, NULL);
}
