/*
 * recovery_point.c — the recovery-point checkpoint file (recovery_point.h; docs/format.md A.7,
 * normative). Parses untrusted bytes without reading out of bounds, serialises, stores
 * atomically, and stamps segment files with stat(2). Never reads a segment's bytes.
 *
 * Layout (all integers big-endian):
 *
 *   offset size field
 *        0    4 magic u32          0x52545250 ("RTRP")
 *        4    2 version u16        1, or 2 when a tail block follows the entries
 *        6    4 crc u32            CRC-32C of bytes [10, end)
 *       10    8 recovery_point i64 the tail's next_offset (version 2), else the next offset of
 *                                  the last entry (0 when there is none)
 *       18    4 count u32          entries that follow
 *       22   96 entry × count      base_offset i64, next_offset i64, max_timestamp i64,
 *                                  max_timestamp_offset i64, then for .log, .index, .timeindex,
 *                                  .txnindex: bytes u64, mtime_ns i64
 *   (version 2 only) a 56-byte tail block: base_offset i64, bytes u64, next_offset i64,
 *                                  max_timestamp i64, max_timestamp_offset i64,
 *                                  last_batch_position u64, index_entries u32,
 *                                  timeindex_entries u32
 *
 * Validity (what recovery_point_parse enforces; anything else is RT_E_CORRUPT naming the byte
 * offset of the first bad field):
 *   RP1  at least 22 bytes; magic, version as above; the CRC matches.
 *   RP2  count ≤ RECOVERY_POINT_SEGMENTS_MAX and the file ends exactly after the last entry
 *        (version 2: after the tail block) (checked before anything is allocated).
 *   RP3  every entry: 0 ≤ base ≤ next_offset, next_offset − base ≤ 2^31 (L5); entries
 *        ascending and dense (each base is the previous next_offset: A.1 L1); only the last
 *        entry may be empty (base == next_offset), and then no tail follows it: segment files
 *        are named by their base, so two segments never share one.
 *   RP4  recovery_point == the tail's next_offset (version 2), else the last entry's
 *        next_offset (0 when count is 0).
 *   RP5  every entry: max_timestamp ≥ −1; max_timestamp_offset in [base, max(base,
 *        next_offset − 1)]; the .log's bytes ≤ 2^31 − 1 (L5), every file's bytes < 2^63; a file
 *        stamped missing (mtime RECOVERY_STAMP_MISSING) has 0 bytes, and only the .txnindex
 *        may be missing.
 *   RP6  the tail (version 2): base ≥ 0 and, when there are entries, base == the last entry's
 *        next_offset; 0 < bytes ≤ 2^31 − 1; base < next_offset, next_offset − base ≤ 2^31;
 *        max_timestamp ≥ −1; max_timestamp_offset in [base, next_offset − 1];
 *        last_batch_position + 61 ≤ bytes (a whole batch header fits before the end).
 */
#include "recovery_point.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "fsutil.h"
#include "index/byte_order.h"
#include "index/crc32c.h"
#include "meta.h"

_Static_assert(RECOVERY_POINT_HEADER_BYTES == 22, "recovery-point header is 22 bytes");
_Static_assert(RECOVERY_POINT_ENTRY_BYTES == 4 * 8 + RECOVERY_FILES * 16,
               "recovery-point entry is 96 bytes");
_Static_assert(RECOVERY_POINT_TAIL_BYTES == 6 * 8 + 2 * 4, "recovery-point tail is 56 bytes");

/* The smallest batch header (docs/format.md B.1): a tail's last batch starts at least this far
 * before its end. */
#define TAIL_BATCH_HEADER_BYTES 61

#define PARSE_FAIL(msg, at)                                                                        \
    do {                                                                                           \
        *why = (msg);                                                                              \
        *bad_offset = (at);                                                                        \
        free(out->segments);                                                                       \
        memset(out, 0, sizeof(*out));                                                              \
        return RT_E_CORRUPT;                                                                       \
    } while (0)

int recovery_point_parse(const uint8_t *buf, size_t len, struct recovery_point *out,
                         const char **why, size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    if (len < RECOVERY_POINT_HEADER_BYTES)
        PARSE_FAIL("file shorter than the 22-byte header", len);
    if (be32_load(buf) != RECOVERY_POINT_MAGIC)
        PARSE_FAIL("bad magic", 0);
    uint16_t version = be16_load(buf + 4);
    if (version != RECOVERY_POINT_VERSION && version != RECOVERY_POINT_VERSION_TAIL)
        PARSE_FAIL("unsupported version", 4);
    size_t tail_bytes = version == RECOVERY_POINT_VERSION_TAIL ? RECOVERY_POINT_TAIL_BYTES : 0;
    if (len < RECOVERY_POINT_HEADER_BYTES + tail_bytes)
        PARSE_FAIL("file shorter than its header and tail block", len);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, len - 10))
        PARSE_FAIL("crc mismatch", 6);
    int64_t point = u64_as_i64(be64_load(buf + 10));
    uint32_t count = be32_load(buf + 18);
    if (count > RECOVERY_POINT_SEGMENTS_MAX)
        PARSE_FAIL("more segments than a partition may hold", 18); /* RP2 */
    if ((uint64_t)count * RECOVERY_POINT_ENTRY_BYTES !=
        len - RECOVERY_POINT_HEADER_BYTES - tail_bytes)
        PARSE_FAIL("file size does not match the segment count", 18); /* RP2 */
    if (count > 0) {
        out->segments = calloc(count, sizeof(*out->segments));
        if (!out->segments)
            return -ENOMEM;
    }
    int64_t expect = -1;
    bool last_empty = false;
    for (uint32_t i = 0; i < count; i++) {
        size_t at = RECOVERY_POINT_HEADER_BYTES + (size_t)i * RECOVERY_POINT_ENTRY_BYTES;
        const uint8_t *e = buf + at;
        struct recovery_segment *s = &out->segments[i];
        s->base_offset = u64_as_i64(be64_load(e));
        s->next_offset = u64_as_i64(be64_load(e + 8));
        s->max_timestamp = u64_as_i64(be64_load(e + 16));
        s->max_timestamp_offset = u64_as_i64(be64_load(e + 24));
        if (s->base_offset < 0)
            PARSE_FAIL("negative base offset", at); /* RP3 */
        if (expect >= 0 && s->base_offset != expect)
            PARSE_FAIL("segments are not dense (base is not the previous next offset)", at);
        if (last_empty)
            PARSE_FAIL("an empty segment is not the last (two segments share a base)",
                       at); /* RP3 */
        if (s->next_offset < s->base_offset || s->next_offset - s->base_offset > INT32_MAX + 1ll)
            PARSE_FAIL("next offset outside the segment's range", at + 8); /* RP3, L5 */
        if (s->max_timestamp < -1)
            PARSE_FAIL("max timestamp below -1", at + 16); /* RP5 */
        int64_t last = s->next_offset > s->base_offset ? s->next_offset - 1 : s->base_offset;
        if (s->max_timestamp_offset < s->base_offset || s->max_timestamp_offset > last)
            PARSE_FAIL("max timestamp offset outside the segment", at + 24); /* RP5 */
        for (int f = 0; f < RECOVERY_FILES; f++) {
            size_t fat = at + 32 + (size_t)f * 16;
            s->files[f].bytes = be64_load(buf + fat);
            s->files[f].mtime_ns = u64_as_i64(be64_load(buf + fat + 8));
            if (s->files[f].bytes > (uint64_t)INT64_MAX)
                PARSE_FAIL("file size out of range", fat);
            if (f == RECOVERY_LOG && s->files[f].bytes > (uint64_t)INT32_MAX)
                PARSE_FAIL("segment larger than 2 GiB", fat); /* RP5, L5 */
            if (s->files[f].mtime_ns == RECOVERY_STAMP_MISSING &&
                (f != RECOVERY_TXNINDEX || s->files[f].bytes != 0))
                PARSE_FAIL("a file stamped missing that must exist or has bytes", fat + 8);
        }
        expect = s->next_offset;
        last_empty = s->next_offset == s->base_offset;
    }
    if (tail_bytes) {
        size_t at = len - RECOVERY_POINT_TAIL_BYTES;
        const uint8_t *e = buf + at;
        struct recovery_tail *t = &out->tail;
        t->base_offset = u64_as_i64(be64_load(e));
        t->bytes = be64_load(e + 8);
        t->next_offset = u64_as_i64(be64_load(e + 16));
        t->max_timestamp = u64_as_i64(be64_load(e + 24));
        t->max_timestamp_offset = u64_as_i64(be64_load(e + 32));
        t->last_batch_position = be64_load(e + 40);
        t->index_entries = be32_load(e + 48);
        t->timeindex_entries = be32_load(e + 52);
        if (t->base_offset < 0 || (expect >= 0 && t->base_offset != expect))
            PARSE_FAIL("tail base is not the last segment's next offset", at); /* RP6 */
        if (last_empty)
            PARSE_FAIL("tail follows an empty segment (the two share a base)", at); /* RP3 */
        if (t->bytes == 0 || t->bytes > (uint64_t)INT32_MAX)
            PARSE_FAIL("tail bytes outside (0, 2^31)", at + 8); /* RP6, L5 */
        if (t->next_offset <= t->base_offset || t->next_offset - t->base_offset > INT32_MAX + 1ll)
            PARSE_FAIL("tail next offset outside the segment's range", at + 16); /* RP6 */
        if (t->max_timestamp < -1)
            PARSE_FAIL("tail max timestamp below -1", at + 24); /* RP6 */
        if (t->max_timestamp_offset < t->base_offset ||
            t->max_timestamp_offset > t->next_offset - 1)
            PARSE_FAIL("tail max timestamp offset outside the segment", at + 32); /* RP6 */
        if (t->bytes < TAIL_BATCH_HEADER_BYTES ||
            t->last_batch_position > t->bytes - TAIL_BATCH_HEADER_BYTES)
            PARSE_FAIL("tail's last batch does not fit before its end", at + 40); /* RP6 */
        out->has_tail = true;
        expect = t->next_offset;
    }
    if (point != (expect >= 0 ? expect : 0))
        PARSE_FAIL("recovery point is not the last segment's next offset", 10); /* RP4 */
    out->offset = point;
    out->count = count;
    return 0;
}

int recovery_point_serialise(const struct recovery_point *rp, uint8_t **buf_out, size_t *len_out)
{
    assert(rp->count <= RECOVERY_POINT_SEGMENTS_MAX);
    size_t tail_bytes = rp->has_tail ? RECOVERY_POINT_TAIL_BYTES : 0;
    size_t len =
        RECOVERY_POINT_HEADER_BYTES + (size_t)rp->count * RECOVERY_POINT_ENTRY_BYTES + tail_bytes;
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    be32_store(buf, RECOVERY_POINT_MAGIC);
    be16_store(buf + 4, rp->has_tail ? RECOVERY_POINT_VERSION_TAIL : RECOVERY_POINT_VERSION);
    be64_store(buf + 10, (uint64_t)rp->offset);
    be32_store(buf + 18, rp->count);
    for (uint32_t i = 0; i < rp->count; i++) {
        const struct recovery_segment *s = &rp->segments[i];
        assert(s->base_offset >= 0);
        assert(s->next_offset >= s->base_offset);
        assert(i == 0 || s->base_offset == rp->segments[i - 1].next_offset); /* RP3 */
        uint8_t *e = buf + RECOVERY_POINT_HEADER_BYTES + (size_t)i * RECOVERY_POINT_ENTRY_BYTES;
        be64_store(e, (uint64_t)s->base_offset);
        be64_store(e + 8, (uint64_t)s->next_offset);
        be64_store(e + 16, (uint64_t)s->max_timestamp);
        be64_store(e + 24, (uint64_t)s->max_timestamp_offset);
        for (int f = 0; f < RECOVERY_FILES; f++) {
            be64_store(e + 32 + f * 16, s->files[f].bytes);
            be64_store(e + 32 + f * 16 + 8, (uint64_t)s->files[f].mtime_ns);
        }
    }
    if (rp->has_tail) {
        const struct recovery_tail *t = &rp->tail;
        assert(rp->count == 0 || t->base_offset == rp->segments[rp->count - 1].next_offset);
        assert(t->bytes > 0 && t->next_offset > t->base_offset); /* RP6 */
        uint8_t *e = buf + len - RECOVERY_POINT_TAIL_BYTES;
        be64_store(e, (uint64_t)t->base_offset);
        be64_store(e + 8, t->bytes);
        be64_store(e + 16, (uint64_t)t->next_offset);
        be64_store(e + 24, (uint64_t)t->max_timestamp);
        be64_store(e + 32, (uint64_t)t->max_timestamp_offset);
        be64_store(e + 40, t->last_batch_position);
        be32_store(e + 48, t->index_entries);
        be32_store(e + 52, t->timeindex_entries);
        assert(rp->offset == t->next_offset); /* RP4 */
    } else {
        assert(rp->offset == (rp->count ? rp->segments[rp->count - 1].next_offset : 0)); /* RP4 */
    }
    be32_store(buf + 6, crc32c(0, buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int recovery_point_load(const char *partition_dir, struct recovery_point *out, const char **why,
                        size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", partition_dir, RECOVERY_POINT_FILE) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, &buf, &len,
                          RECOVERY_POINT_HEADER_BYTES +
                              (size_t)RECOVERY_POINT_SEGMENTS_MAX * RECOVERY_POINT_ENTRY_BYTES +
                              RECOVERY_POINT_TAIL_BYTES);
    if (rc == -EFBIG) {
        *why = "file larger than the largest checkpoint";
        *bad_offset = 0;
        return RT_E_CORRUPT;
    }
    if (rc)
        return rc;
    rc = recovery_point_parse(buf, len, out, why, bad_offset);
    free(buf);
    return rc;
}

int recovery_point_store(struct io_fault_plan *faults, const char *partition_dir,
                         const struct recovery_point *rp)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = recovery_point_serialise(rp, &buf, &len);
    if (rc)
        return rc;
    rc = fs_replace_file(faults, partition_dir, RECOVERY_POINT_TMP_FILE, RECOVERY_POINT_FILE, buf,
                         len);
    free(buf);
    return rc;
}

void recovery_point_free(struct recovery_point *rp)
{
    free(rp->segments);
    memset(rp, 0, sizeof(*rp));
}

const struct recovery_segment *recovery_point_find(const struct recovery_point *rp,
                                                   int64_t base_offset)
{
    uint32_t lo = 0, hi = rp->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t b = rp->segments[mid].base_offset;
        if (b == base_offset)
            return &rp->segments[mid];
        if (b < base_offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int recovery_stamp(const char *path, struct recovery_stamp *out)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return -errno;
        out->bytes = 0;
        out->mtime_ns = RECOVERY_STAMP_MISSING;
        return 0;
    }
    out->bytes = (uint64_t)st.st_size;
    out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (out->mtime_ns == RECOVERY_STAMP_MISSING)
        out->mtime_ns++;
    return 0;
}

int recovery_stamp_segment(const char *partition_dir, int64_t base_offset,
                           struct recovery_stamp files[RECOVERY_FILES])
{
    static const char *const exts[RECOVERY_FILES] = {"log", "index", "timeindex", "txnindex"};
    for (int f = 0; f < RECOVERY_FILES; f++) {
        char path[4096];
        int rc = meta_segment_file(path, sizeof(path), partition_dir, base_offset, exts[f]);
        if (rc == 0)
            rc = recovery_stamp(path, &files[f]);
        if (rc)
            return rc;
    }
    return 0;
}

bool recovery_stamps_equal(const struct recovery_stamp a[RECOVERY_FILES],
                           const struct recovery_stamp b[RECOVERY_FILES])
{
    for (int f = 0; f < RECOVERY_FILES; f++)
        if (a[f].bytes != b[f].bytes || a[f].mtime_ns != b[f].mtime_ns)
            return false;
    return true;
}
