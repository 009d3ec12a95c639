/*
 * cleaner_checkpoint.c — the cleaner-checkpoint file (cleaner_checkpoint.h; docs/format.md A.9,
 * normative). Parses untrusted bytes without reading out of bounds, serialises, stores
 * atomically. Never touches a segment.
 *
 * Layout (all integers big-endian):
 *
 *   offset size field
 *        0    4 magic u32          0x52544343 ("RTCC")
 *        4    2 version u16        1
 *        6    4 crc u32            CRC-32C of bytes [10, end)
 *       10    8 cleaned_end i64    offsets below it may have gaps (CL1)
 *       18    8 swap_base i64      -1: no swap pending; else the new segment's base offset
 *       26    8 swap_end i64       the replaced range's end (-1 when no swap)
 *       34    4 source_count u32   segments the swap replaces (0 when no swap)
 *       38  8*n sources i64[n]     their base offsets
 *
 * Validity (what cleaner_checkpoint_parse enforces; anything else is RT_E_CORRUPT naming the
 * byte offset of the first bad field):
 *   CK1  at least 38 bytes; magic and version as above; exactly 38 + 8 * source_count bytes;
 *        the CRC matches.
 *   CK2  cleaned_end >= 0.
 *   CK3  no swap: swap_base = swap_end = -1 and source_count = 0.
 *   CK4  a swap: 1 <= source_count <= 65536; sources strictly ascending, sources[0] =
 *        swap_base >= 0, the last < swap_end; swap_base < cleaned_end (the new segment is one
 *        whose offsets may skip, CL1).
 */
#include "cleaner_checkpoint.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fsutil.h"
#include "index/byte_order.h"
#include "index/crc32c.h"
#include "io/io.h"
#include "meta.h"
#include "ringtail.h"

static int bad(const char **why, size_t *bad_offset, const char *what, size_t at)
{
    *why = what;
    *bad_offset = at;
    return RT_E_CORRUPT;
}

int cleaner_checkpoint_parse(const uint8_t *buf, size_t len, struct cleaner_checkpoint *out,
                             const char **why, size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    if (len < CLEANER_CHECKPOINT_HEADER) /* CK1 */
        return bad(why, bad_offset, "cleaner-checkpoint file is shorter than 38 bytes", len);
    if (be32_load(buf) != CLEANER_CHECKPOINT_MAGIC)
        return bad(why, bad_offset, "bad magic", 0);
    if (be16_load(buf + 4) != CLEANER_CHECKPOINT_VERSION)
        return bad(why, bad_offset, "unknown version", 4);
    uint32_t n = be32_load(buf + 34);
    if (n > CLEANER_SOURCES_MAX)
        return bad(why, bad_offset, "more sources than 65536", 34);
    if (len != CLEANER_CHECKPOINT_HEADER + 8 * (size_t)n)
        return bad(why, bad_offset, "file size does not match source_count", 34);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, len - 10))
        return bad(why, bad_offset, "CRC mismatch", 6);
    int64_t end = u64_as_i64(be64_load(buf + 10));
    int64_t base = u64_as_i64(be64_load(buf + 18));
    int64_t swap_end = u64_as_i64(be64_load(buf + 26));
    if (end < 0) /* CK2 */
        return bad(why, bad_offset, "negative cleaned_end", 10);
    if (base == -1 || n == 0) { /* CK3 */
        if (base != -1)
            return bad(why, bad_offset, "a swap without sources", 18);
        if (swap_end != -1)
            return bad(why, bad_offset, "swap_end without a swap", 26);
        if (n != 0)
            return bad(why, bad_offset, "sources without a swap", 34);
    } else { /* CK4 */
        if (base < 0)
            return bad(why, bad_offset, "negative swap_base", 18);
        if (base >= end)
            return bad(why, bad_offset, "swap_base not below cleaned_end", 18);
        if (swap_end <= base)
            return bad(why, bad_offset, "swap_end not above swap_base", 26);
        out->sources = malloc((size_t)n * sizeof(*out->sources));
        if (!out->sources)
            return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
            int64_t s = u64_as_i64(be64_load(buf + CLEANER_CHECKPOINT_HEADER + 8 * (size_t)i));
            if ((i == 0 && s != base) || (i > 0 && s <= out->sources[i - 1]) || s >= swap_end) {
                free(out->sources);
                out->sources = NULL;
                return bad(why, bad_offset,
                           i == 0 ? "first source is not swap_base"
                                  : "sources not ascending below swap_end",
                           CLEANER_CHECKPOINT_HEADER + 8 * (size_t)i);
            }
            out->sources[i] = s;
        }
    }
    out->cleaned_end = end;
    out->swap_base = base;
    out->swap_end = swap_end;
    out->source_count = n;
    return 0;
}

int cleaner_checkpoint_serialise(const struct cleaner_checkpoint *c, uint8_t **buf_out,
                                 size_t *len_out)
{
    size_t len = CLEANER_CHECKPOINT_HEADER + 8 * (size_t)c->source_count;
    uint8_t *buf = calloc(1, len);
    if (!buf)
        return -ENOMEM;
    be32_store(buf, CLEANER_CHECKPOINT_MAGIC);
    be16_store(buf + 4, CLEANER_CHECKPOINT_VERSION);
    be64_store(buf + 10, (uint64_t)c->cleaned_end);
    be64_store(buf + 18, (uint64_t)(c->source_count ? c->swap_base : -1));
    be64_store(buf + 26, (uint64_t)(c->source_count ? c->swap_end : -1));
    be32_store(buf + 34, c->source_count);
    for (uint32_t i = 0; i < c->source_count; i++)
        be64_store(buf + CLEANER_CHECKPOINT_HEADER + 8 * (size_t)i, (uint64_t)c->sources[i]);
    be32_store(buf + 6, crc32c(0, buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int cleaner_checkpoint_load(const char *partition_dir, struct cleaner_checkpoint *out,
                            const char **why, size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", partition_dir, CLEANER_CHECKPOINT_FILE) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, &buf, &len, CLEANER_CHECKPOINT_HEADER + 8 * CLEANER_SOURCES_MAX);
    if (rc == -EFBIG)
        return bad(why, bad_offset, "cleaner-checkpoint file too large", 34);
    if (rc)
        return rc;
    rc = cleaner_checkpoint_parse(buf, len, out, why, bad_offset);
    free(buf);
    return rc;
}

int cleaner_checkpoint_store(struct io_fault_plan *faults, const char *partition_dir,
                             const struct cleaner_checkpoint *c)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = cleaner_checkpoint_serialise(c, &buf, &len);
    if (rc)
        return rc;
    rc = fs_replace_file(faults, partition_dir, CLEANER_CHECKPOINT_TMP_FILE,
                         CLEANER_CHECKPOINT_FILE, buf, len);
    free(buf);
    return rc;
}

void cleaner_checkpoint_free(struct cleaner_checkpoint *c)
{
    free(c->sources);
    c->sources = NULL;
    c->source_count = 0;
}

/* ---- the swap's file steps (docs/format.md A.9 CL5, CL6) ---- */

void (*cleaner_step_hook)(int step, void *ctx);
void *cleaner_step_hook_ctx;

void cleaner_step(enum cleaner_step step)
{
    if (cleaner_step_hook)
        cleaner_step_hook((int)step, cleaner_step_hook_ctx);
}

static const char *const segment_exts[] = {"log", "index", "timeindex", "txnindex"};

/* dir/<base>.<ext>, plus CLEANER_CLEANED_SUFFIX when cleaned. */
static int segment_path(char *buf, size_t cap, const char *dir, int64_t base, const char *ext,
                        bool cleaned)
{
    int rc = meta_segment_file(buf, cap, dir, base, ext);
    if (rc == 0 && cleaned) {
        size_t n = strlen(buf);
        if (n + sizeof(CLEANER_CLEANED_SUFFIX) > cap)
            return -ENAMETOOLONG;
        memcpy(buf + n, CLEANER_CLEANED_SUFFIX, sizeof(CLEANER_CLEANED_SUFFIX));
    }
    return rc;
}

int cleaner_swap_finish(struct io_fault_plan *faults, const char *dir, struct cleaner_checkpoint *c)
{
    int rc = cleaner_swap_move(faults, dir, c);
    return rc ? rc : cleaner_swap_settle(faults, dir, c);
}

int cleaner_swap_move(struct io_fault_plan *faults, const char *dir,
                      const struct cleaner_checkpoint *c)
{
    assert(c->source_count > 0 && c->sources[0] == c->swap_base);
    char from[4096], to[4096];
    /* The sources after the first: their offsets now live in the cleaned segment. Each .log
     * goes first, so a crash leaves at worst index files without a log (L4 removes them). */
    for (uint32_t i = c->source_count; i-- > 1;) {
        for (size_t e = 0; e < sizeof(segment_exts) / sizeof(segment_exts[0]); e++) {
            int rc = segment_path(to, sizeof(to), dir, c->sources[i], segment_exts[e], false);
            if (rc == 0)
                rc = io_unlink(faults, to);
            if (rc && rc != -ENOENT)
                return error_set(rc, "%s: cannot remove: %s", to, strerror(-rc));
        }
        cleaner_step(CLEANER_STEP_SOURCE_GONE);
    }
    /* The first source's files are replaced by rename (atomic per name): indexes, then the log.
     * A .cleaned file already gone was renamed before a crash. */
    static const int order[] = {1, 2, 3, 0};
    for (size_t k = 0; k < 4; k++) {
        const char *ext = segment_exts[order[k]];
        int rc = segment_path(from, sizeof(from), dir, c->swap_base, ext, true);
        if (rc == 0)
            rc = segment_path(to, sizeof(to), dir, c->swap_base, ext, false);
        if (rc == 0)
            rc = io_rename(faults, from, to);
        if (rc && rc != -ENOENT)
            return error_set(rc, "%s: cannot rename into place: %s", from, strerror(-rc));
        if (k == 2)
            cleaner_step(CLEANER_STEP_INDEXES_MOVED);
    }
    return 0;
}

int cleaner_swap_settle(struct io_fault_plan *faults, const char *dir, struct cleaner_checkpoint *c)
{
    assert(c->source_count > 0);
    int rc = fs_fsync_dir(faults, dir);
    if (rc)
        return error_set(rc, "%s: cannot sync the directory: %s", dir, strerror(-rc));
    cleaner_step(CLEANER_STEP_LOG_MOVED);
    struct cleaner_checkpoint done = {
        .cleaned_end = c->cleaned_end, .swap_base = -1, .swap_end = -1};
    rc = cleaner_checkpoint_store(faults, dir, &done);
    if (rc)
        return error_set(rc, "%s/%s: cannot store: %s", dir, CLEANER_CHECKPOINT_FILE,
                         strerror(-rc));
    cleaner_checkpoint_free(c);
    c->swap_base = c->swap_end = -1;
    cleaner_step(CLEANER_STEP_DONE);
    return 0;
}

int cleaner_checkpoint_recover(struct io_fault_plan *faults, const char *dir, bool read_only,
                               int64_t *cleaned_end_out)
{
    *cleaned_end_out = 0;
    struct cleaner_checkpoint c;
    const char *why = NULL;
    size_t bad_at = 0;
    int rc = cleaner_checkpoint_load(dir, &c, &why, &bad_at);
    if (rc == RT_E_CORRUPT)
        return error_set(rc, "%s/%s: offset %zu: %s (not repaired)", dir, CLEANER_CHECKPOINT_FILE,
                         bad_at, why);
    if (rc && rc != -ENOENT)
        return error_set(rc, "%s/%s: cannot read: %s", dir, CLEANER_CHECKPOINT_FILE, strerror(-rc));
    if (rc == 0 && c.source_count > 0) {
        if (read_only) {
            cleaner_checkpoint_free(&c);
            return error_set(RT_E_READ_ONLY,
                             "%s: a compaction swap is committed but not finished; open the "
                             "directory writable once to finish it",
                             dir);
        }
        rc = cleaner_swap_finish(faults, dir, &c);
        if (rc) {
            cleaner_checkpoint_free(&c);
            return rc;
        }
    }
    if (rc == 0)
        *cleaned_end_out = c.cleaned_end;
    cleaner_checkpoint_free(&c);
    return 0; /* leftover *.cleaned files go with the listing's other leftovers (partition.c) */
}
