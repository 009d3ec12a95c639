/*
 * time_index.c — a segment's time index, `<base>.timeindex` (docs/format.md §C.2,
 * normative; §C.3 the life cycle it shares with the offset index).
 *
 * This module owns one time index file: preallocation, mapping, the in-memory count of live
 * entries, the binary search by timestamp and the trim at seal. It never reads the log, never
 * includes engine/, knows nothing about io_uring and never fsyncs per append: like the offset
 * index it is derived data that recovery rebuilds from the log.
 *
 *     entry i, 12 bytes, big-endian, at byte i * 12:
 *     +0  timestamp       i64   milliseconds; >= 0, strictly increasing
 *     +8  relativeOffset  i32   offset - base_offset, 0 <= relativeOffset <= INT32_MAX,
 *                               non-decreasing
 *
 * An entry (T, O) says: T is the largest timestamp among records up to offset O, and O's batch
 * is where it was first reached, so every record with timestamp > T comes after O (Kafka's
 * TimeIndex contract). Hence a search for the first record with timestamp >= t starts at the
 * last entry with T <= t.
 *
 * Invariants (kept by this module, asserted; never asserted of bytes read from disk):
 *   TI1. entries <= entries_max.
 *   TI2. writable: map_bytes == entries_max * 12 and the file is at least that long.
 *   TI3. map == NULL iff map_bytes == 0.
 *   TI4. entries appended here have strictly increasing timestamps >= 0 and non-decreasing
 *        offsets.
 *   TI5. the last slot is reserved (Kafka): time_index_full() is true one entry early so that
 *        the seal-time entry for the segment's max timestamp always fits.
 *   TI6. map never moves between open and close: seal shrinks the mapping in place, so a pointer
 *        to the live entries taken at any time stays valid until close (lock-free readers).
 *
 * Costs: append O(1) through the mapping; lookup and truncate O(log n), warm section first.
 */
#include "index/time_index.h"
#include "index/index_file.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(TIME_INDEX_ENTRY_BYTES == 12, "Kafka time index entries are 12 bytes");

#define INDEX_BYTES_MAX ((uint64_t)INT32_MAX)
#define BASE_OFFSET_MAX (INT64_MAX - INT32_MAX)
#define WARM_ENTRIES    (8192u / TIME_INDEX_ENTRY_BYTES)
/* Kafka's RecordBatch.NO_TIMESTAMP: what an empty index reports as its max timestamp. */
#define NO_TIMESTAMP (-1)

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t load_be64(const uint8_t *p)
{
    return (uint64_t)load_be32(p) << 32 | load_be32(p + 4);
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void store_be64(uint8_t *p, uint64_t v)
{
    store_be32(p, (uint32_t)(v >> 32));
    store_be32(p + 4, (uint32_t)v);
}

/* Two's-complement reinterpretations without implementation-defined conversions. */
static int32_t as_i32(uint32_t v)
{
    return v <= (uint32_t)INT32_MAX ? (int32_t)v : (int32_t)(v - 0x80000000u) + INT32_MIN;
}

static int64_t as_i64(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : (int64_t)(v - 0x8000000000000000u) + INT64_MIN;
}

static int64_t ts_at(const uint8_t *buf, uint32_t i)
{
    return as_i64(load_be64(buf + (size_t)i * TIME_INDEX_ENTRY_BYTES));
}

static int32_t rel_at(const uint8_t *buf, uint32_t i)
{
    return as_i32(load_be32(buf + (size_t)i * TIME_INDEX_ENTRY_BYTES + 8));
}

static void assert_invariants(const struct time_index *idx)
{
    assert(idx->entries <= idx->entries_max);            /* TI1 */
    assert((idx->map == NULL) == (idx->map_bytes == 0)); /* TI3 */
    assert(!idx->writable ||
           idx->map_bytes == (size_t)idx->entries_max * TIME_INDEX_ENTRY_BYTES); /* TI2 */
    assert(idx->map_bytes >= (size_t)idx->entries * TIME_INDEX_ENTRY_BYTES);
}

/* Partition point over live entries: the number of leading entries for which key <= target,
 * where key is the timestamp (by_offset false) or the relative offset (by_offset true).
 * Assumes sorted keys; on unsorted bytes the answer is meaningless but every read stays
 * inside [0, entries). */
static uint32_t count_le(const struct time_index *idx, int64_t target, bool by_offset)
{
    uint32_t n = idx->entries;
    if (n == 0)
        return 0;
    uint32_t lo = 0;
    uint32_t hi = n;
    uint32_t hot = n > WARM_ENTRIES ? n - WARM_ENTRIES : 0;
    int64_t key = by_offset ? rel_at(idx->map, hot) : ts_at(idx->map, hot);
    if (key <= target)
        lo = hot + 1;
    else
        hi = hot;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        key = by_offset ? rel_at(idx->map, mid) : ts_at(idx->map, mid);
        if (key <= target)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(lo <= n);
    return lo;
}

static void reset_struct(struct time_index *idx, int64_t base_offset)
{
    memset(idx, 0, sizeof(*idx));
    idx->fd = -1;
    idx->base_offset = base_offset;
}

int time_index_open_memory(struct time_index *idx, int64_t base_offset, size_t capacity_bytes)
{
    assert(idx != NULL);
    reset_struct(idx, base_offset);
    if (base_offset < 0 || base_offset > BASE_OFFSET_MAX)
        return -EINVAL;
    struct index_file file;
    int rc = index_file_open_memory(TIME_INDEX_ENTRY_BYTES, capacity_bytes, &file);
    if (rc)
        return rc;
    idx->map = file.map;
    idx->map_bytes = file.map_bytes;
    idx->entries_max = file.entries_max;
    idx->entries = 0;
    idx->writable = true;
    assert_invariants(idx);
    return 0;
}

int time_index_open(struct time_index *idx, const char *path, int64_t base_offset,
                    size_t capacity_bytes, bool writable, uint32_t live_entries)
{
    assert(idx != NULL);
    assert(path != NULL);
    reset_struct(idx, base_offset);
    if (base_offset < 0 || base_offset > BASE_OFFSET_MAX)
        return -EINVAL;
    struct index_file file;
    int rc = index_file_open(path, TIME_INDEX_ENTRY_BYTES, capacity_bytes, writable, live_entries,
                             &file);
    if (rc)
        return rc;
    idx->fd = file.fd;
    idx->map = file.map;
    idx->map_bytes = file.map_bytes;
    idx->entries_max = file.entries_max;
    idx->entries = file.entries;
    idx->writable = writable;
    assert_invariants(idx);
    return 0;
}

int64_t time_index_max_timestamp(const struct time_index *idx)
{
    assert_invariants(idx);
    if (idx->entries == 0)
        return NO_TIMESTAMP;
    return ts_at(idx->map, idx->entries - 1);
}

int time_index_append(struct time_index *idx, int64_t timestamp_ms, int64_t offset)
{
    assert_invariants(idx);
    if (!idx->writable)
        return -EROFS;
    if (offset < idx->base_offset || offset - idx->base_offset > INT32_MAX)
        return -EINVAL;
    int32_t rel = (int32_t)(offset - idx->base_offset);
    if (idx->entries > 0 && rel < rel_at(idx->map, idx->entries - 1))
        return -EINVAL;
    /* Kafka's maybeAppend: only a new maximum is indexed; -1 (NO_TIMESTAMP) never is. */
    if (timestamp_ms <= time_index_max_timestamp(idx))
        return 0;
    if (idx->entries >= idx->entries_max)
        return -ENOSPC;

    uint8_t *p = idx->map + (size_t)idx->entries * TIME_INDEX_ENTRY_BYTES;
    store_be64(p, (uint64_t)timestamp_ms);
    store_be32(p + 8, (uint32_t)rel);
    idx->entries++;
    assert(ts_at(idx->map, idx->entries - 1) == timestamp_ms); /* TI4, read back */
    assert(rel_at(idx->map, idx->entries - 1) == rel);
    return 0;
}

bool time_index_full(const struct time_index *idx)
{
    assert_invariants(idx);
    /* TI5: the last slot is kept for the seal-time entry. */
    return idx->entries_max == 0 || idx->entries >= idx->entries_max - 1;
}

int time_index_lookup(const struct time_index *idx, int64_t target_ms, int64_t *offset_out,
                      int64_t *floor_offset_out)
{
    assert_invariants(idx);
    uint32_t le = count_le(idx, target_ms, false);
    int64_t floor = le == 0 ? idx->base_offset : idx->base_offset + rel_at(idx->map, le - 1);
    if (floor_offset_out != NULL)
        *floor_offset_out = floor;
    /* First entry with timestamp >= target: the floor itself on an exact hit, else the next. */
    uint32_t first = le > 0 && ts_at(idx->map, le - 1) == target_ms ? le - 1 : le;
    int rc = 0;
    int64_t offset = floor;
    if (first < idx->entries)
        offset = idx->base_offset + rel_at(idx->map, first);
    else
        rc = -ENOENT;
    if (offset_out != NULL)
        *offset_out = offset;
    return rc;
}

void time_index_entry(const struct time_index *idx, uint32_t i, int64_t *timestamp_out,
                      int64_t *offset_out)
{
    assert_invariants(idx);
    assert(i < idx->entries);
    *timestamp_out = ts_at(idx->map, i);
    *offset_out = idx->base_offset + rel_at(idx->map, i);
}

void time_index_truncate_offset(struct time_index *idx, int64_t offset)
{
    assert_invariants(idx);
    if (offset <= idx->base_offset) {
        idx->entries = 0;
        return;
    }
    /* Offsets are non-decreasing: keep the prefix with relativeOffset < offset - base. */
    uint32_t keep = count_le(idx, offset - idx->base_offset - 1, true);
    assert(keep <= idx->entries);
    idx->entries = keep;
}

void time_index_reset(struct time_index *idx)
{
    assert_invariants(idx);
    idx->entries = 0;
}

int time_index_seal(struct time_index *idx)
{
    assert_invariants(idx);
    if (!idx->writable)
        return 0;
    bool trimmed = false;
    int rc = index_file_seal(idx->fd, &idx->map, &idx->map_bytes,
                             (size_t)idx->entries * TIME_INDEX_ENTRY_BYTES, &trimmed);
    if (trimmed) {
        /* The mapping now reaches past the end of the file: read-only from here on. */
        idx->writable = false;
        idx->entries_max = idx->entries;
    }
    if (rc == 0) {
        idx->fd = -1; /* closed by index_file_seal: the mapping serves readers */
        assert_invariants(idx);
    }
    return rc;
}

int time_index_sync(const struct time_index *idx)
{
    assert_invariants(idx);
    if (!idx->writable || idx->entries == 0)
        return 0;
    if (msync(idx->map, (size_t)idx->entries * TIME_INDEX_ENTRY_BYTES, MS_SYNC) != 0)
        return -errno;
    return 0;
}

void time_index_close(struct time_index *idx)
{
    if (idx == NULL)
        return;
    index_file_close(idx->fd, idx->map, idx->map_bytes, idx->writable,
                     (size_t)idx->entries * TIME_INDEX_ENTRY_BYTES);
    reset_struct(idx, idx->base_offset);
}

int time_index_check(const uint8_t *buf, size_t len, const char **why, uint32_t *bad_entry)
{
    const char *reason = NULL;
    uint64_t bad = 0;
    uint64_t n = len / TIME_INDEX_ENTRY_BYTES;
    if (len % TIME_INDEX_ENTRY_BYTES != 0) {
        reason = "size is not a multiple of 12 bytes";
        bad = n;
        goto out;
    }
    if (len > INDEX_BYTES_MAX) {
        reason = "larger than Kafka's 2 GiB index limit";
        bad = INDEX_BYTES_MAX / TIME_INDEX_ENTRY_BYTES;
        goto out;
    }
    assert(n <= UINT32_MAX);
    for (uint32_t i = 0; i < n; i++) {
        int64_t ts = ts_at(buf, i);
        int32_t rel = rel_at(buf, i);
        bad = i;
        if (i > 0 && ts == 0 && rel == 0) {
            reason = "zero entry (preallocated space left untrimmed)";
            goto out;
        }
        if (ts < 0) {
            reason = "negative timestamp";
            goto out;
        }
        if (rel < 0) {
            reason = "negative relative offset";
            goto out;
        }
        if (i > 0 && ts <= ts_at(buf, i - 1)) {
            reason = "timestamp not increasing";
            goto out;
        }
        if (i > 0 && rel < rel_at(buf, i - 1)) {
            reason = "relative offset decreasing";
            goto out;
        }
    }
out:
    if (why != NULL)
        *why = reason;
    if (bad_entry != NULL)
        *bad_entry = reason != NULL ? (uint32_t)bad : 0;
    return reason != NULL ? -EBADMSG : 0;
}
