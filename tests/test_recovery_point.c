/*
 * test_recovery_point.c — an open that reads no data (issue 21 item 6; PA8 in partition.h,
 * docs/format.md A.7): the per-partition recovery point lets a clean open trust every segment
 * checked at its seal, a crash walk only the tail past it, and a stale, damaged or over-claiming
 * one cost a walk (and be reported by verify), never trust.
 *
 *   - a clean open trusts every segment (nothing checked, no byte walked) and, after the files
 *     were dropped from the page cache, leaves at most 1% of the log bytes resident (mincore);
 *     fetches, list-offsets and verify still work on the segments it never touched;
 *   - after a SIGKILL only the newest segment is walked; so after a crash right after a roll
 *     wrote the recovery point and before the next data;
 *   - with a tail (PA9) only the bytes appended past it are scanned (counted, and seen in the
 *     page cache); a stale tail still holds; a tail whose fields do not describe the files
 *     (each field wrong in turn) is never trusted;
 *   - a stale recovery point (from an earlier close) only costs walking the segments it does
 *     not name (and is written again);
 *   - every byte flipped and every truncation of the file: never trusted (all segments checked),
 *     reported by verify, written again by open, data intact;
 *   - a recovery point past the end (a segment it names is gone or shorter) is reported by
 *     verify, counted by open, written again;
 *   - a sealed .log changed after its seal (its mtime moves) is checked again, so open refuses a
 *     damaged header as it did before the recovery point existed.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "helpers/proc_self.h"
#include "helpers/test_util.h"
#include "partition.h"
#include "recovery_point.h"
#include "ringtail.h"

#define TOPIC       "r"
#define VALUE_BYTES 200
#define RECORDS     10 /* per batch: about 2.3 KiB, so a 64 KiB segment holds ~28 batches */

static const struct partition_recovery *recovery(rt_engine *e)
{
    return log_recovery(engine_log(e));
}

/* Appends `batches` batches after `*next` (dense offsets) to TOPIC's partition 0. */
static void append_batches(rt_engine *e, int64_t *next, int batches)
{
    for (int i = 0; i < batches; i++) {
        int64_t base = -1;
        assert_int_equal(tu_append_offset_batch(e, TOPIC, *next, RECORDS, VALUE_BYTES, &base), 0);
        assert_int_equal(base, *next);
        *next += RECORDS;
    }
}

static uint32_t count_logs(const char *pdir)
{
    DIR *d = opendir(pdir);
    assert_non_null(d);
    uint32_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        n += len > 4 && strcmp(de->d_name + len - 4, ".log") == 0;
    }
    closedir(d);
    return n;
}

struct reports {
    unsigned problems;
    unsigned warnings;
    bool named_rp; /* a problem names recovery-point */
    char first[1024];
};

static void collect(void *ctx, const char *line)
{
    struct reports *r = ctx;
    bool warning = strncmp(line, "warning: ", 9) == 0;
    if (warning) {
        r->warnings++;
        return;
    }
    if (r->problems++ == 0)
        snprintf(r->first, sizeof(r->first), "%s", line);
    if (strstr(line, RECOVERY_POINT_FILE))
        r->named_rp = true;
}

static void verify_reports(const char *dir, struct reports *r)
{
    memset(r, 0, sizeof(*r));
    (void)rt_verify(dir, collect, r);
}

/* A directory with several sealed segments in TOPIC-0, closed cleanly. Returns the next offset. */
static int64_t build(struct tu_fixture *f, int batches)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, 1), 0);
    int64_t next = 0;
    append_batches(f->e, &next, batches);
    tu_fixture_close(f);
    return next;
}

static char *pdir_of(struct tu_fixture *f)
{
    return tu_path("%s/%s-0", f->dir, TOPIC);
}

static void read_back(struct tu_fixture *f, int64_t next)
{
    int64_t start = -1;
    assert_int_equal(tu_read_back_offset_values(f->e, TOPIC, VALUE_BYTES, &start), next);
    assert_int_equal(start, 0);
}

static void assert_verify_clean(const char *dir)
{
    struct reports r;
    verify_reports(dir, &r);
    if (r.problems)
        fprintf(stderr, "verify: %s\n", r.first);
    assert_int_equal(r.problems, 0);
}

/* ---- a clean open ----------------------------------------------------------------------- */

static void test_clean_open_trusts_every_segment(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 120);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    assert_true(logs >= 4);
    char *rp_path = tu_path("%s/%s", pdir, RECOVERY_POINT_FILE);
    size_t rp_len = 0;
    uint8_t *rp_before = tu_read_file(rp_path, &rp_len);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_int_equal(rec->segments_trusted, logs);
    assert_int_equal(rec->segments_checked, 0);
    assert_int_equal(rec->bytes_checked, 0);
    assert_int_equal(rec->recovery_points_missing, 0);
    assert_int_equal(rec->recovery_points_damaged, 0);
    assert_int_equal(rec->recovery_points_written, 0); /* nothing new to record */
    /* Segments it never read still serve: fetch every record, list offsets by time. */
    read_back(f, next);
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, 1000000 + 905, RT_READ_UNCOMMITTED, &off), 0);
    assert_int_equal(off, 905); /* record i has timestamp 1000000 + i, in a later segment */
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    /* An idle open and close (nothing appended) leave the checkpoint byte for byte, and the
     * newest segment trusted: its files get their recorded mtimes back (cli_bad_input: a failed
     * command changes no byte of the directory). */
    size_t rp_len2 = 0;
    uint8_t *rp_after = tu_read_file(rp_path, &rp_len2);
    assert_int_equal(rp_len2, rp_len);
    assert_memory_equal(rp_after, rp_before, rp_len);
    free(rp_after);
    free(rp_before);
    free(rp_path);
    /* A read-only open trusts the same way. */
    f->o.read_only = true;
    tu_fixture_open(f);
    assert_int_equal(recovery(f->e)->segments_trusted, logs);
    assert_int_equal(recovery(f->e)->bytes_checked, 0);
    read_back(f, next);
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
    free(pdir);
}

/* Resident bytes of [0, bytes) of path (mincore over a mapping of our own, which faults
 * nothing in). */
static uint64_t resident_bytes(const char *path, uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (bytes + (uint64_t)page - 1) / (uint64_t)page;
    unsigned char *vec = malloc(pages);
    assert_non_null(vec);
    assert_int_equal(mincore(m, bytes, vec), 0);
    uint64_t n = 0;
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    free(vec);
    munmap(m, bytes);
    close(fd);
    return n * (uint64_t)page;
}

struct log_file {
    char *path;
    uint64_t bytes;
};

static uint32_t list_logs(const char *pdir, struct log_file *out, uint32_t max)
{
    DIR *d = opendir(pdir);
    assert_non_null(d);
    uint32_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < max) {
        size_t len = strlen(de->d_name);
        if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0) {
            out[n].path = tu_path("%s/%s", pdir, de->d_name);
            out[n].bytes = tu_file_size(out[n].path);
            n++;
        }
    }
    closedir(d);
    return n;
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
}

/* Proof that a clean open reads no segment data: dropped from the page cache, the logs stay out
 * of it through an open (issue 21 F5: before the recovery point an open walked every batch
 * header, so every page of every log was resident afterwards). */
static void test_clean_open_leaves_the_page_cache_alone(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 200);
    char *pdir = pdir_of(f);
    struct log_file logs[64];
    uint32_t n = list_logs(pdir, logs, 64);
    assert_true(n >= 6);
    uint64_t total = 0, before = 0;
    for (uint32_t i = 0; i < n; i++) {
        drop_cache(logs[i].path);
        total += logs[i].bytes;
        before += resident_bytes(logs[i].path, logs[i].bytes);
    }
    if (before > total / 100) {
        fprintf(stderr,
                "the file system keeps dropped pages (%" PRIu64 " of %" PRIu64
                " bytes resident): mincore proves nothing here\n",
                before, total);
        skip();
    }
    tu_fixture_open(f);
    uint64_t after = 0;
    for (uint32_t i = 0; i < n; i++)
        after += resident_bytes(logs[i].path, logs[i].bytes);
    fprintf(stderr, "resident after a clean open: %" PRIu64 " of %" PRIu64 " log bytes\n", after,
            total);
    assert_true(after * 100 <= total);
    /* Appending and closing seals the newest segment: its check walks only what was appended
     * since the open vouched for the rest, so the close does not read the log either. */
    append_batches(f->e, &next, 3);
    tu_fixture_close(f);
    after = 0;
    for (uint32_t i = 0; i < n; i++)
        after += resident_bytes(logs[i].path, logs[i].bytes);
    fprintf(stderr, "resident after appends and a clean close: %" PRIu64 " of %" PRIu64 "\n", after,
            total);
    assert_true(after * 100 <= total);
    tu_fixture_open(f);
    read_back(f, next); /* and everything reads back */
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    for (uint32_t i = 0; i < n; i++)
        free(logs[i].path);
    free(pdir);
}

/* Resident bytes of every file under pdir whose name ends in `ext` (".index", ".timeindex"),
 * dropped from the page cache first when `drop` is set; *total_out: their sizes. */
static uint64_t resident_with_ext(const char *pdir, const char *ext, bool drop, uint64_t *total_out)
{
    DIR *d = opendir(pdir);
    assert_non_null(d);
    uint64_t resident = 0, total = 0;
    size_t elen = strlen(ext);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len <= elen || strcmp(de->d_name + len - elen, ext) != 0)
            continue;
        char *path = tu_path("%s/%s", pdir, de->d_name);
        uint64_t bytes = tu_file_size(path);
        if (drop && bytes > 0)
            drop_cache(path);
        total += bytes;
        resident += resident_bytes(path, bytes);
        free(path);
    }
    closedir(d);
    *total_out = total;
    return resident;
}

/* SG6, SG9: a clean open of many sealed segments opens and maps none of their files — in a
 * writing engine and in a read-only one (`ringtail consume`, `topic list`, `txn list`) alike —
 * and leaves their .log, .index and .timeindex pages out of the page cache; the first fetch
 * maps only the segments it reads. Before SG9 a read-only open opened and mapped all three
 * files of every segment (3 mappings per segment: O(bytes) descriptors opened, O(segments)
 * mappings kept, past vm.max_map_count for a big enough directory). */
static void test_clean_open_opens_no_sealed_segment(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 200);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    assert_true(logs >= 6);
    char *under = tu_path("/%s-0/", TOPIC);
    for (int ro = 0; ro <= 1; ro++) {
        uint64_t total_idx = 0, total_tidx = 0, total_log = 0;
        uint64_t before = resident_with_ext(pdir, ".index", true, &total_idx) +
                          resident_with_ext(pdir, ".timeindex", true, &total_tidx) +
                          resident_with_ext(pdir, ".log", true, &total_log);
        bool cache_proves = before * 100 <= total_idx + total_tidx + total_log;
        f->o.read_only = ro == 1;
        tu_fixture_open(f);
        assert_int_equal(recovery(f->e)->segments_trusted, logs);
        uint32_t idx_maps = 0;
        uint32_t maps = tu_mappings_under(under, &idx_maps);
        fprintf(stderr, "%s clean open of %u sealed segments: %u files mapped (%u indexes)\n",
                ro ? "read-only" : "writing", logs, maps, idx_maps);
        assert_int_equal(maps, 0);
        uint64_t t1 = 0, t2 = 0, t3 = 0;
        uint64_t idx_after = resident_with_ext(pdir, ".index", false, &t1) +
                             resident_with_ext(pdir, ".timeindex", false, &t2);
        uint64_t log_after = resident_with_ext(pdir, ".log", false, &t3);
        fprintf(stderr,
                "  resident after it: %" PRIu64 " of %" PRIu64 " index bytes, %" PRIu64
                " of %" PRIu64 " log bytes\n",
                idx_after, t1 + t2, log_after, t3);
        if (cache_proves) {
            assert_true(idx_after * 100 <= t1 + t2);
            assert_true(log_after * 100 <= t3);
        }
        /* One fetch from the newest record maps the one segment that holds it. */
        rt_fetch *fx = NULL;
        assert_int_equal(
            rt_fetch_start(f->e, TOPIC, 0, next - 1, 1 << 16, RT_READ_UNCOMMITTED, &fx), 0);
        maps = tu_mappings_under(under, NULL);
        rt_fetch_release(fx);
        assert_true(maps >= 1 && maps <= 3);
        read_back(f, next); /* and every lazily opened segment still serves */
        if (ro) {
            assert_int_equal(rt_close(f->e), 0);
            f->e = NULL;
        } else {
            tu_fixture_close(f);
        }
    }
    f->o.read_only = false;
    assert_verify_clean(f->dir);
    free(under);
    free(pdir);
}

/* SG9: an index changed under a running engine after a clean open trusted its segment lazily
 * is found by the segment's first reader, which refuses it (RT_E_CORRUPT naming the index file
 * and a byte offset in it), never serves it on the open's word; the next open's stamps see the
 * change and judge the segment as any open does, as verify does: a misshapen index (12 bytes of
 * 8-byte entries) is reported by verify and rebuilt from the log (L4); a shorter one that is
 * sound (one entry of many: an index may be sparser) is accepted by both. */
static void test_index_changed_after_a_lazy_open(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 200);
    char *pdir = pdir_of(f);
    char *index = tu_path("%s/00000000000000000000.index", pdir);
    assert_true(tu_file_size(index) > 2 * 12);
    const off_t cuts[] = {12, 8};
    for (int c = 0; c < 2; c++) {
        tu_fixture_open(f);
        assert_int_equal(recovery(f->e)->segments_checked, 0);
        assert_int_equal(truncate(index, cuts[c]), 0);
        rt_fetch *fx = NULL;
        assert_int_equal(rt_fetch_start(f->e, TOPIC, 0, 0, 1 << 16, RT_READ_UNCOMMITTED, &fx),
                         RT_E_CORRUPT);
        fprintf(stderr, "lazily found: %s\n", rt_error_detail());
        assert_non_null(strstr(rt_error_detail(), "00000000000000000000.index: offset "));
        tu_fixture_close(f);
        struct reports r;
        verify_reports(f->dir, &r);
        fprintf(stderr, "verify: %u problems, %u warnings: %s\n", r.problems, r.warnings, r.first);
        if (cuts[c] == 12) {
            assert_int_equal(r.problems, 1);
            assert_non_null(strstr(r.first, "00000000000000000000.index"));
        } else {
            assert_int_equal(r.problems, 0);
        }
        tu_fixture_open(f);
        assert_int_equal(recovery(f->e)->segments_checked, 1); /* the stamps moved */
        read_back(f, next);
        tu_fixture_close(f);
        if (cuts[c] == 12)
            assert_true(tu_file_size(index) > 12); /* rebuilt */
        assert_verify_clean(f->dir);
    }
    free(index);
    free(pdir);
}

/* ---- crashes ---------------------------------------------------------------------------- */

/* Forks a crash child: its pid in the parent; 0 in the child, *e the directory opened (the
 * child _exits 2 when the open fails). */
static pid_t crash_fork(struct tu_fixture *f, rt_engine **e)
{
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0 && rt_open(f->dir, &f->o, e) != 0)
        _exit(2);
    return pid;
}

/* In a crash child: leaves where its appends ended (<dir>/next.txt) for the parent and dies by
 * SIGKILL (no close, as a crash takes a process). */
static _Noreturn void die_leaving_next(struct tu_fixture *f, int64_t n)
{
    FILE *out = fopen(tu_path("%s/next.txt", f->dir), "w");
    if (!out)
        _exit(4);
    fprintf(out, "%" PRId64 "\n", n);
    fclose(out);
    raise(SIGKILL);
    _exit(5);
}

/* In the parent: reaps the crash child, which must have died by SIGKILL, and reads where its
 * appends ended into *next. */
static void reap_killed(struct tu_fixture *f, pid_t pid, int64_t *next)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
        fprintf(stderr, "child exited %d\n", WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char *path = tu_path("%s/next.txt", f->dir);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    assert_int_equal(fscanf(in, "%" SCNd64, next), 1);
    fclose(in);
    unlink(path);
    free(path);
}

/* A child that opens the directory, appends `batches` more batches (sync=always: each one is
 * acknowledged durable) and is SIGKILLed; *next advances past what it appended. With
 * stop_after_roll, it stops at the first roll instead: killed right after the roll wrote the
 * recovery point, before the next data. */
static void crash_child(struct tu_fixture *f, int64_t *next, int batches, bool stop_after_roll)
{
    char *pdir = pdir_of(f);
    uint32_t logs_before = count_logs(pdir);
    rt_engine *e = NULL;
    pid_t pid = crash_fork(f, &e);
    if (pid == 0) {
        int64_t n = *next;
        for (int i = 0; i < batches; i++) {
            int64_t base = -1;
            if (tu_append_offset_batch(e, TOPIC, n, RECORDS, VALUE_BYTES, &base) != 0)
                _exit(3);
            n += RECORDS;
            if (stop_after_roll && count_logs(pdir) > logs_before) {
                /* The roll sealed the old segment and stored the recovery point; the batch
                 * that caused it sits in the new one. */
                break;
            }
        }
        die_leaving_next(f, n);
    }
    reap_killed(f, pid, next);
    free(pdir);
}

static void test_crash_walks_only_the_tail(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 60);
    crash_child(f, &next, 90, false);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    assert_true(logs >= 4);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_true(rec->recovered);
    assert_int_equal(rec->segments_checked, 1); /* the newest: scanned (R1-R3) */
    assert_int_equal(rec->segments_trusted, logs - 1);
    assert_true(rec->bytes_checked <= 64 * 1024);
    read_back(f, next); /* nothing acknowledged is lost */
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    free(pdir);
}

static void test_crash_after_the_recovery_point_before_data(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 40);
    crash_child(f, &next, 100, true);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(recovery_point_load(pdir, &rp, &why, &bad), 0);
    assert_int_equal(rp.count, logs - 1); /* every sealed segment, the one just sealed too */
    int64_t point = rp.offset;
    recovery_point_free(&rp);
    assert_true(point > 0 && point < next);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_int_equal(rec->segments_trusted, logs - 1);
    assert_int_equal(rec->segments_checked, 1);
    read_back(f, next);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    free(pdir);
}

/* ---- a stale, damaged or over-claiming recovery point ------------------------------------- */

static void test_stale_recovery_point(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 40);
    char *pdir = pdir_of(f);
    char *rp_path = tu_path("%s/%s", pdir, RECOVERY_POINT_FILE);
    size_t old_len = 0;
    uint8_t *old = tu_read_file(rp_path, &old_len);
    uint32_t logs_then = count_logs(pdir);
    tu_fixture_open(f);
    append_batches(f->e, &next, 80);
    tu_fixture_close(f);
    uint32_t logs = count_logs(pdir);
    assert_true(logs > logs_then + 1);
    /* Put the old one back: it names the segments sealed then, and its newest has grown. */
    int fd = open(rp_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, old, old_len), (ssize_t)old_len);
    close(fd);
    assert_verify_clean(f->dir); /* stale is not wrong */
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_int_equal(rec->segments_trusted, logs_then - 1);
    assert_int_equal(rec->segments_checked, logs - (logs_then - 1));
    assert_int_equal(rec->recovery_point_mismatches, 1); /* the then-newest one grew */
    assert_int_equal(rec->recovery_point_past_end, 0);
    assert_int_equal(rec->recovery_points_written, 1);
    read_back(f, next);
    tu_fixture_close(f);
    /* Written again: the next open trusts everything. */
    tu_fixture_open(f);
    assert_int_equal(recovery(f->e)->segments_trusted, logs);
    assert_int_equal(recovery(f->e)->segments_checked, 0);
    tu_fixture_close(f);
    free(old);
    free(rp_path);
    free(pdir);
}

/* One damaged variant: verify reports the file, open trusts nothing and writes it again. */
static void damaged_case(struct tu_fixture *f, const char *rp_path, const uint8_t *bytes,
                         size_t len, uint32_t logs, int64_t next, const char *what)
{
    int fd = open(rp_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    if (len)
        assert_int_equal(write(fd, bytes, len), (ssize_t)len);
    close(fd);
    struct reports r;
    verify_reports(f->dir, &r);
    if (!r.named_rp)
        fprintf(stderr, "%s: verify did not report %s (%u problems: %s)\n", what, rp_path,
                r.problems, r.first);
    assert_true(r.named_rp);
    assert_int_equal(r.problems, 1);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_int_equal(rec->recovery_points_damaged, 1);
    assert_int_equal(rec->segments_trusted, 0);
    assert_int_equal(rec->segments_checked, logs);
    assert_int_equal(rec->recovery_points_written, 1);
    if (len % 7 == 0)
        read_back(f, next); /* (a sample: every case checks the counts) */
    tu_fixture_close(f);
    verify_reports(f->dir, &r);
    assert_int_equal(r.problems, 0);
}

static void test_damaged_recovery_point(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 70);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    char *rp_path = tu_path("%s/%s", pdir, RECOVERY_POINT_FILE);
    size_t len = 0;
    uint8_t *good = tu_read_file(rp_path, &len);
    assert_int_equal(len, RECOVERY_POINT_HEADER_BYTES + (size_t)logs * RECOVERY_POINT_ENTRY_BYTES);
    uint8_t *bad = malloc(len);
    assert_non_null(bad);
    char what[64];
    for (size_t at = 0; at < len; at++) {
        memcpy(bad, good, len);
        bad[at] ^= (uint8_t)(1u << (at % 8));
        snprintf(what, sizeof(what), "byte %zu flipped", at);
        damaged_case(f, rp_path, bad, len, logs, next, what);
    }
    for (size_t cut = 0; cut < len; cut += (cut < 40 ? 1 : 13)) {
        snprintf(what, sizeof(what), "cut to %zu bytes", cut);
        damaged_case(f, rp_path, good, cut, logs, next, what);
    }
    free(bad);
    free(good);
    free(rp_path);
    free(pdir);
}

static void store_edited(const char *pdir, void (*edit)(struct recovery_point *rp))
{
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(recovery_point_load(pdir, &rp, &why, &bad), 0);
    struct recovery_segment *s = realloc(rp.segments, (rp.count + 1) * sizeof(*s));
    assert_non_null(s);
    rp.segments = s;
    edit(&rp);
    assert_int_equal(recovery_point_store(NULL, pdir, &rp), 0);
    recovery_point_free(&rp);
}

/* A segment past the log's end: named, dense, but not on disk. */
static void add_phantom(struct recovery_point *rp)
{
    struct recovery_segment *last = &rp->segments[rp->count - 1];
    struct recovery_segment *e = &rp->segments[rp->count++];
    *e = *last;
    e->base_offset = last->next_offset;
    e->next_offset = last->next_offset + 100;
    e->max_timestamp_offset = e->base_offset;
    rp->offset = e->next_offset;
}

static void test_recovery_point_past_the_end(void **state)
{
    struct tu_fixture *f = *state;
    int64_t next = build(f, 70);
    char *pdir = pdir_of(f);
    uint32_t logs = count_logs(pdir);
    /* 1. It names a segment the directory does not hold. */
    store_edited(pdir, add_phantom);
    struct reports r;
    verify_reports(f->dir, &r);
    assert_true(r.named_rp);
    assert_int_equal(r.problems, 2); /* past the log's end; names a segment not there */
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_true(rec->recovery_point_past_end >= 1);
    assert_int_equal(rec->segments_trusted, logs); /* what it says of the others holds */
    assert_int_equal(rec->recovery_points_written, 1);
    read_back(f, next);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    /* 2. It records more bytes than the newest .log holds: a clean close's last batches lost
     * (cut at a batch boundary, its indexes trimmed to match, so only the recovery point can
     * tell). */
    char *newest = NULL;
    {
        struct log_file lf[64];
        uint32_t n = list_logs(pdir, lf, 64);
        int64_t best = -1;
        for (uint32_t i = 0; i < n; i++) {
            const char *base = strrchr(lf[i].path, '/') + 1;
            int64_t b = strtoll(base, NULL, 10);
            if (b > best) {
                best = b;
                free(newest);
                newest = tu_path("%s", lf[i].path);
            }
            free(lf[i].path);
        }
    }
    size_t log_len = 0;
    uint8_t *log = tu_read_file(newest, &log_len);
    uint64_t pos = 0, last_start = 0;
    while (pos + 12 <= log_len) {
        last_start = pos;
        pos += 12 + be32_of(log + pos + 8);
    }
    assert_int_equal(pos, log_len);
    assert_true(last_start > 0);
    free(log);
    tu_truncate(newest, last_start); /* the last batch is gone */
    verify_reports(f->dir, &r);
    assert_true(r.named_rp);
    tu_fixture_open(f);
    rec = recovery(f->e);
    assert_true(rec->recovery_point_past_end >= 1);
    assert_int_equal(rec->segments_trusted, logs - 1);
    assert_int_equal(rec->recovery_points_written, 1);
    tu_fixture_close(f);
    verify_reports(f->dir, &r);
    assert_int_equal(r.problems, 0);
    free(newest);
    free(pdir);
}

/* A sealed .log written after its seal: its mtime moves, so open checks it and refuses the
 * damaged header as before (the recovery point never hides damage made through the file
 * system; bit rot that keeps the mtime is found by readers and verify: OV1). */
static void test_changed_segment_is_checked(void **state)
{
    struct tu_fixture *f = *state;
    (void)build(f, 70);
    char *log = tu_path("%s/%s-0/%020d.log", f->dir, TOPIC, 0);
    struct timespec pause = {.tv_nsec = 30 * 1000 * 1000}; /* past the file system's clock tick */
    nanosleep(&pause, NULL);
    tu_flip_byte(log, 16, 0x01); /* the first batch's magic */
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), "00000000000000000000.log"));
    struct reports r;
    verify_reports(f->dir, &r);
    assert_true(r.problems >= 1);
    free(log);
}

/* ---- the active segment's tail (PA9) ------------------------------------------------------ */

#define TAIL_SEGMENT_BYTES (8u << 20) /* every batch of these tests stays in one segment */

/* A child that opens the directory and, `checkpoints` times, appends `before` batches and stores
 * every partition's tail (log_checkpoint_tails), copying the recovery point to
 * <dir>/rp-<k>.bin after the k-th; then appends `after` more batches and is SIGKILLed. */
static void crash_child_tail(struct tu_fixture *f, int64_t *next, int before, int checkpoints,
                             int after)
{
    char *pdir = pdir_of(f);
    rt_engine *e = NULL;
    pid_t pid = crash_fork(f, &e);
    if (pid == 0) {
        int64_t n = *next;
        for (int k = 0; k <= checkpoints; k++) {
            int batches = k < checkpoints ? before : after;
            for (int i = 0; i < batches; i++) {
                int64_t base = -1;
                if (tu_append_offset_batch(e, TOPIC, n, RECORDS, VALUE_BYTES, &base) != 0)
                    _exit(3);
                n += RECORDS;
            }
            if (k == checkpoints)
                break;
            if (log_checkpoint_tails(engine_log(e)) != 0)
                _exit(6);
            size_t len = 0;
            uint8_t *rp = tu_read_file(tu_path("%s/%s", pdir, RECOVERY_POINT_FILE), &len);
            FILE *out = fopen(tu_path("%s/rp-%d.bin", f->dir, k), "w");
            if (!rp || !out || fwrite(rp, 1, len, out) != len)
                _exit(7);
            fclose(out);
            free(rp);
        }
        die_leaving_next(f, n);
    }
    reap_killed(f, pid, next);
    free(pdir);
}

static struct recovery_tail load_tail(const char *pdir)
{
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(recovery_point_load(pdir, &rp, &why, &bad), 0);
    assert_true(rp.has_tail);
    assert_int_equal(rp.offset, rp.tail.next_offset); /* RP4 */
    struct recovery_tail t = rp.tail;
    recovery_point_free(&rp);
    return t;
}

/* PA14: a crash after a clean open that stored no tail (no checkpoint period passed) scans only
 * what was appended since that open: the clean close's entry for the newest segment serves as a
 * tail. Before PA14 the whole newest segment was scanned (bytes_checked was its size). */
static void test_crash_after_a_clean_open_scans_only_the_appends(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 300); /* one segment, closed cleanly: its entry names it */
    char *pdir = pdir_of(f);
    char *log = tu_path("%s/%020d.log", pdir, 0);
    uint64_t sealed_bytes = tu_file_size(log);
    assert_true(sealed_bytes > 600 * 1024);
    crash_child(f, &next, 10, false); /* a clean open, 10 batches, SIGKILL: no tail stored */
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(recovery_point_load(pdir, &rp, &why, &bad), 0);
    assert_false(rp.has_tail);
    assert_int_equal(rp.count, 1);
    recovery_point_free(&rp);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_true(rec->recovered);
    assert_int_equal(rec->recovery_tails_rejected, 0);
    assert_int_equal(rec->tail_bytes_trusted, sealed_bytes);
    assert_int_equal(rec->segments_checked, 1);
    assert_true(rec->bytes_checked <= 10 * 2600); /* the 10 batches after the open */
    assert_true(rec->bytes_checked >= 10 * 2000);
    read_back(f, next);
    append_batches(f->e, &next, 3);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    tu_fixture_open(f);
    read_back(f, next);
    tu_fixture_close(f);
    free(log);
    free(pdir);
}

/* PA9: after a SIGKILL the open scans only what was appended past the last tail. Shown two ways:
 * the open's own count, and the page cache — the log was dropped from it before the open, and
 * afterwards only about the scanned tail is resident (before PA9 the whole segment was: the
 * scan CRCed it from byte 0). */
static void test_crash_scans_only_past_the_tail(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 0);
    crash_child_tail(f, &next, 300, 1, 10);
    char *pdir = pdir_of(f);
    assert_int_equal(count_logs(pdir), 1);
    struct recovery_tail t = load_tail(pdir);
    assert_int_equal(t.base_offset, 0);
    assert_int_equal(t.next_offset, 300 * RECORDS);
    assert_true(t.bytes > 600 * 1024);
    assert_true(t.index_entries > 0);
    char *log = tu_path("%s/%020d.log", pdir, 0);
    drop_cache(log);
    bool cache_proves = resident_bytes(log, tu_file_size(log)) <= 16 * 1024;
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_true(rec->recovered);
    assert_int_equal(rec->recovery_tails_rejected, 0);
    assert_int_equal(rec->tail_bytes_trusted, t.bytes);
    assert_int_equal(rec->segments_checked, 1);
    assert_true(rec->bytes_checked <= 10 * 2600); /* the 10 batches after the tail */
    assert_true(rec->bytes_checked >= 10 * 2000);
    char *snap = tu_path("%s/%020" PRId64 ".snapshot", pdir, t.next_offset);
    assert_int_equal(access(snap, F_OK), 0); /* the producer replay starts there too */
    free(snap);
    uint64_t resident = resident_bytes(log, tu_file_size(log));
    fprintf(stderr, "resident after a crash open: %" PRIu64 " of %" PRIu64 " log bytes\n", resident,
            t.bytes);
    if (cache_proves)
        assert_true(resident <= 128 * 1024); /* the tail and a few pages, not the prefix */
    read_back(f, next); /* nothing acknowledged is lost, the prefix serves as before */
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(f->e, TOPIC, 0, 1000000 + 2905, RT_READ_UNCOMMITTED, &off), 0);
    assert_int_equal(off, 2905); /* a time lookup inside the trusted prefix */
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    free(log);
    free(pdir);
}

/* A stale tail (an older checkpoint's: the file was replaced by an earlier copy) is still true
 * of the prefix it names: the scan starts there and walks the rest, nothing is lost. */
static void test_crash_with_a_stale_tail(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 0);
    crash_child_tail(f, &next, 100, 2, 5);
    char *pdir = pdir_of(f);
    struct recovery_tail newest = load_tail(pdir);
    char *first = tu_path("%s/rp-0.bin", f->dir);
    char *rp_path = tu_path("%s/%s", pdir, RECOVERY_POINT_FILE);
    assert_int_equal(rename(first, rp_path), 0);
    struct recovery_tail old = load_tail(pdir);
    assert_true(old.bytes < newest.bytes);
    assert_int_equal(old.next_offset, 100 * RECORDS);
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_int_equal(rec->recovery_tails_rejected, 0);
    assert_int_equal(rec->tail_bytes_trusted, old.bytes);
    assert_true(rec->bytes_checked >= newest.bytes - old.bytes);
    read_back(f, next);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    free(rp_path);
    free(first);
    free(pdir);
}

/* PA18: the seal that follows a crash open — here a sleep's, as OS6 makes past the budget of
 * open segments right after the scan (the 10 000-partition crash open) — walks only what the open
 * did not vouch for, so the open and that seal together read the bytes past the tail and nothing
 * below it. Before PA18 a segment recovered from its tail did not count as checked and the seal
 * walked it from byte 0 (issue 21: a crash open of 10 000 partitions left 60 % of the data in
 * the page cache). The directory then opens cleanly trusting it, and verify agrees. */
static void test_crash_open_and_its_seal_read_only_the_tail(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 0);
    crash_child_tail(f, &next, 300, 1, 10);
    char *pdir = pdir_of(f);
    struct recovery_tail t = load_tail(pdir);
    assert_true(t.bytes > 600 * 1024);
    char *log = tu_path("%s/%020d.log", pdir, 0);
    drop_cache(log);
    bool cache_proves = resident_bytes(log, tu_file_size(log)) <= 16 * 1024;
    tu_fixture_open(f);
    const struct partition_recovery *rec = recovery(f->e);
    assert_true(rec->recovered);
    assert_int_equal(rec->tail_bytes_trusted, t.bytes);
    assert_true(rec->bytes_checked <= 10 * 2600); /* the open: the 10 batches after the tail */
    struct partition *p = log_partition(engine_log(f->e), TOPIC, 0);
    assert_non_null(p);
    assert_int_equal(p->seal_bytes_walked, 0);
    assert_int_equal(log_sleep_partitions(engine_log(f->e)), 0); /* OS6's sleep, on its shard */
    assert_int_equal(p->sleeps, 1);
    assert_true(p->active->sealed && p->active->vouched);
    fprintf(stderr, "seal after a crash open walked %" PRIu64 " of %" PRIu64 " log bytes\n",
            p->seal_bytes_walked, p->active->size_bytes);
    assert_int_equal(p->seal_bytes_walked, 0); /* the open vouched for all of it */
    uint64_t resident = resident_bytes(log, tu_file_size(log));
    fprintf(stderr, "resident after the crash open and seal: %" PRIu64 " bytes\n", resident);
    if (cache_proves)
        assert_true(resident <= 128 * 1024);
    read_back(f, next);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    tu_fixture_open(f); /* clean: its entry names the recovered segment as sealed and checked */
    rec = recovery(f->e);
    assert_false(rec->recovered);
    assert_int_equal(rec->segments_trusted, 1);
    assert_int_equal(rec->bytes_checked, 0);
    read_back(f, next);
    tu_fixture_close(f);
    free(log);
    free(pdir);
}

/* PA18: the same after a crash open that keeps the partition active: appends after it and the
 * clean close's seal walk only the appended bytes and what the open scanned is not walked again;
 * the idle close's shortcut (restore_stamps) is not taken for a recovered segment, so the next
 * clean open trusts what the close named. */
static void test_close_after_a_crash_open_walks_only_the_appends(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 0);
    crash_child_tail(f, &next, 300, 1, 10);
    char *pdir = pdir_of(f);
    struct recovery_tail t = load_tail(pdir);
    tu_fixture_open(f);
    assert_int_equal(recovery(f->e)->tail_bytes_trusted, t.bytes);
    struct partition *p = log_partition(engine_log(f->e), TOPIC, 0);
    assert_non_null(p);
    assert_false(p->active->sealed);
    uint64_t open_end = p->active->size_bytes;
    assert_int_equal(p->active_checked_bytes, open_end);
    assert_true(p->active_trusted_bytes == UINT64_MAX); /* no idle-close shortcut for it */
    append_batches(f->e, &next, 4);
    uint64_t appended = p->active->size_bytes - open_end;
    assert_true(appended > 0);
    /* The seal is the close's; a sleep is the same walk (vouch_sealed), run on the shard
     * thread between rounds, so the count can be read before the close frees it. */
    assert_int_equal(log_sleep_partitions(engine_log(f->e)), 0);
    assert_true(p->active->sealed && p->active->vouched);
    assert_int_equal(p->seal_bytes_walked, appended);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    tu_fixture_open(f);
    assert_false(recovery(f->e)->recovered);
    assert_int_equal(recovery(f->e)->bytes_checked, 0);
    read_back(f, next);
    tu_fixture_close(f);
    free(pdir);
}

enum tail_damage {
    TAIL_BYTES_PAST_ITS_BATCH,
    TAIL_BYTES_PAST_THE_FILE,
    TAIL_NEXT_OFFSET_WRONG,
    TAIL_LAST_BATCH_MISPLACED,
    TAIL_INDEX_ENTRIES_MORE,
    TAIL_INDEX_ENTRIES_FEWER,
    TAIL_TIMEINDEX_ENTRIES_MORE,
    TAIL_BASE_NOT_THE_NEWEST,
    TAIL_DAMAGES
};

/* A tail whose fields (each one in turn, the file's CRC made right again) do not describe the
 * files is never trusted: the scan starts from byte 0 as before PA9 and nothing is lost. */
static void test_crash_with_a_wrong_tail(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = TAIL_SEGMENT_BYTES;
    int64_t next = build(f, 0);
    char *pdir = pdir_of(f);
    char *log = tu_path("%s/%020d.log", pdir, 0);
    for (int d = 0; d < TAIL_DAMAGES; d++) {
        crash_child_tail(f, &next, 40, 1, 3);
        struct recovery_point rp;
        const char *why = NULL;
        size_t bad = 0;
        assert_int_equal(recovery_point_load(pdir, &rp, &why, &bad), 0);
        assert_true(rp.has_tail);
        struct recovery_tail *t = &rp.tail;
        switch ((enum tail_damage)d) {
        case TAIL_BYTES_PAST_ITS_BATCH:
            t->bytes += 100;
            break;
        case TAIL_BYTES_PAST_THE_FILE:
            t->bytes = (uint64_t)tu_file_size(log) + 4096;
            t->last_batch_position = t->bytes - 2000;
            break;
        case TAIL_NEXT_OFFSET_WRONG:
            t->next_offset -= 1;
            if (t->max_timestamp_offset > t->next_offset - 1)
                t->max_timestamp_offset = t->next_offset - 1; /* still well-formed (RP6) */
            break;
        case TAIL_LAST_BATCH_MISPLACED:
            t->last_batch_position -= 8;
            break;
        case TAIL_INDEX_ENTRIES_MORE:
            t->index_entries += 3;
            break;
        case TAIL_INDEX_ENTRIES_FEWER:
            t->index_entries -= 1;
            break;
        case TAIL_TIMEINDEX_ENTRIES_MORE:
            t->timeindex_entries += 1;
            break;
        case TAIL_BASE_NOT_THE_NEWEST:
            t->base_offset = 5; /* not a segment base; with no entries, still well-formed */
            t->max_timestamp_offset = t->max_timestamp_offset < 5 ? 5 : t->max_timestamp_offset;
            break;
        case TAIL_DAMAGES:
            break;
        }
        rp.offset = t->next_offset;
        assert_int_equal(recovery_point_store(NULL, pdir, &rp), 0);
        recovery_point_free(&rp);
        tu_fixture_open(f);
        const struct partition_recovery *rec = recovery(f->e);
        if (rec->tail_bytes_trusted != 0)
            fprintf(stderr, "damage %d: trusted %" PRIu64 " bytes\n", d, rec->tail_bytes_trusted);
        assert_int_equal(rec->tail_bytes_trusted, 0);
        assert_int_equal(rec->recovery_tails_rejected, d == TAIL_BASE_NOT_THE_NEWEST ? 0 : 1);
        assert_true(rec->bytes_checked >= (uint64_t)(next - 3 * RECORDS) * 200);
        read_back(f, next);
        tu_fixture_close(f);
        assert_verify_clean(f->dir);
    }
    free(log);
    free(pdir);
}

/* ---- PA11: an idle partition holds no descriptor -------------------------------------------- */

#define IDLE_PARTITIONS 40

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

static void expect_readable(rt_engine *e, uint32_t part, int64_t offset)
{
    rt_fetch *fx = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, part, offset, 1 << 16, RT_READ_UNCOMMITTED, &fx), 0);
    const struct rt_fetch_view *fv = rt_fetch_get(fx);
    assert_true(fv->size_bytes > 0);
    assert_true(fv->high_watermark > offset);
    rt_fetch_release(fx);
}

/* After a clean close, opening N partitions that hold data opens no descriptor per partition:
 * their newest segments stay sealed (before PA11 each held four: the log, two writable indexes
 * and the .txnindex). The first append to one wakes only that one; what it and the others hold
 * reads back, then and after another close and open, and verify is clean. */
static void test_idle_partitions_hold_no_descriptor(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, TOPIC, IDLE_PARTITIONS), 0);
    for (uint32_t i = 0; i < IDLE_PARTITIONS; i++)
        append_to(f->e, i, 0);
    tu_fixture_close(f);
    long before = tu_fds_open();
    tu_fixture_open(f);
    long opened = tu_fds_open() - before;
    fprintf(stderr, "descriptors an open of %d idle partitions holds: %ld\n", IDLE_PARTITIONS,
            opened);
    assert_true(opened <
                IDLE_PARTITIONS); /* the engine's own (rings, threads), none per partition */
    struct partition *p3 = log_partition(engine_log(f->e), TOPIC, 3);
    assert_non_null(p3);
    assert_true(p3->active->sealed);
    append_to(f->e, 3, 1);
    assert_int_equal(p3->wakes, 1);
    assert_false(p3->active->sealed);
    long woken = tu_fds_open() - before - opened;
    assert_true(woken >= 1 && woken <= 4);
    append_to(f->e, 3, 2); /* no second wake */
    assert_int_equal(p3->wakes, 1);
    for (uint32_t i = 0; i < IDLE_PARTITIONS; i++)
        expect_readable(f->e, i, 0);
    expect_readable(f->e, 3, 2);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
    tu_fixture_open(f);
    expect_readable(f->e, 3, 2);
    append_to(f->e, 3, 3);
    append_to(f->e, 7, 1);
    tu_fixture_close(f);
    assert_verify_clean(f->dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_open_trusts_every_segment, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_clean_open_leaves_the_page_cache_alone,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_clean_open_opens_no_sealed_segment, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_index_changed_after_a_lazy_open, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_walks_only_the_tail, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_the_recovery_point_before_data,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_stale_recovery_point, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_damaged_recovery_point, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recovery_point_past_the_end, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_changed_segment_is_checked, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_a_clean_open_scans_only_the_appends,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_scans_only_past_the_tail, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_with_a_stale_tail, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_open_and_its_seal_read_only_the_tail,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_close_after_a_crash_open_walks_only_the_appends,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash_with_a_wrong_tail, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_idle_partitions_hold_no_descriptor, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
