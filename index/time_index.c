/*
 * time_index.c — a segment's time index, `<base>.timeindex` (docs/format.md §C.2,
 * normative; §C.3 the life cycle it shares with the offset index).
 *
 * This module owns what the entries of one time index file mean: their encoding, Kafka's
 * maybeAppend rule and the binary search by timestamp. The file itself (preallocation, mapping,
 * live count, trim at seal, close) is index_file's (index/index_file.h, IF1-IF5), shared with the
 * offset index. It never reads the log, never
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
 * Invariants (kept by this module, asserted; never asserted of bytes read from disk), beside
 * index_file's IF1-IF5:
 *   TI1. entries appended here have strictly increasing timestamps >= 0 and non-decreasing
 *        offsets.
 *   TI2. the last slot is reserved (Kafka): time_index_full() is true one entry early so that
 *        the seal-time entry for the segment's max timestamp always fits.
 *
 * Costs: append O(1) through the mapping; lookup and truncate O(log n), warm section first.
 */
#include "index/time_index.h"
#include "index/byte_order.h"
#include "index/index_file.h"

#include <assert.h>
#include <errno.h>

_Static_assert(TIME_INDEX_ENTRY_BYTES == 12, "Kafka time index entries are 12 bytes");

#define WARM_ENTRIES (8192u / TIME_INDEX_ENTRY_BYTES)
/* Kafka's RecordBatch.NO_TIMESTAMP: what an empty index reports as its max timestamp. */
#define NO_TIMESTAMP (-1)

static int64_t ts_at(const uint8_t *buf, uint32_t i)
{
    return u64_as_i64(be64_load(buf + (size_t)i * TIME_INDEX_ENTRY_BYTES));
}

static int32_t rel_at(const uint8_t *buf, uint32_t i)
{
    return u32_as_i32(be32_load(buf + (size_t)i * TIME_INDEX_ENTRY_BYTES + 8));
}

/* Partition point over live entries: the number of leading entries for which key <= target,
 * where key is the timestamp (by_offset false) or the relative offset (by_offset true).
 * Assumes sorted keys; on unsorted bytes the answer is meaningless but every read stays
 * inside [0, entries). */
static uint32_t count_le(const struct time_index *idx, int64_t target, bool by_offset)
{
    uint32_t n = idx->file.entries;
    if (n == 0)
        return 0;
    uint32_t lo = 0;
    uint32_t hi = n;
    uint32_t hot = n > WARM_ENTRIES ? n - WARM_ENTRIES : 0;
    int64_t key = by_offset ? rel_at(idx->file.map, hot) : ts_at(idx->file.map, hot);
    if (key <= target)
        lo = hot + 1;
    else
        hi = hot;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        key = by_offset ? rel_at(idx->file.map, mid) : ts_at(idx->file.map, mid);
        if (key <= target)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(lo <= n);
    return lo;
}

int time_index_open_memory(struct time_index *idx, int64_t base_offset, size_t capacity_bytes)
{
    assert(idx != NULL);
    return index_file_open_memory(&idx->file, TIME_INDEX_ENTRY_BYTES, base_offset, capacity_bytes);
}

int time_index_open(struct time_index *idx, const char *path, int64_t base_offset,
                    size_t capacity_bytes, bool writable, uint32_t live_entries)
{
    assert(idx != NULL);
    return index_file_open(&idx->file, path, TIME_INDEX_ENTRY_BYTES, base_offset, capacity_bytes,
                           writable, live_entries);
}

int64_t time_index_max_timestamp(const struct time_index *idx)
{
    index_file_assert(&idx->file);
    if (idx->file.entries == 0)
        return NO_TIMESTAMP;
    return ts_at(idx->file.map, idx->file.entries - 1);
}

int time_index_append(struct time_index *idx, int64_t timestamp_ms, int64_t offset)
{
    index_file_assert(&idx->file);
    if (!idx->file.writable)
        return -EROFS;
    if (offset < idx->file.base_offset || offset - idx->file.base_offset > INT32_MAX)
        return -EINVAL;
    int32_t rel = (int32_t)(offset - idx->file.base_offset);
    if (idx->file.entries > 0 && rel < rel_at(idx->file.map, idx->file.entries - 1))
        return -EINVAL;
    /* Kafka's maybeAppend: only a new maximum is indexed; -1 (NO_TIMESTAMP) never is. */
    if (timestamp_ms <= time_index_max_timestamp(idx))
        return 0;
    if (idx->file.entries >= idx->file.entries_max)
        return -ENOSPC;
    /* IF6: its blocks exist before the store (the engine reserves ahead of its appends, so this
     * only fails when that failed too); a reservation that fails makes the index full. */
    if (index_file_reserve(&idx->file, idx->file.entries + 1) != 0)
        return -ENOSPC;

    uint8_t *p = idx->file.map + (size_t)idx->file.entries * TIME_INDEX_ENTRY_BYTES;
    be64_store(p, (uint64_t)timestamp_ms);
    be32_store(p + 8, (uint32_t)rel);
    idx->file.entries++;
    assert(ts_at(idx->file.map, idx->file.entries - 1) == timestamp_ms); /* TI1, read back */
    assert(rel_at(idx->file.map, idx->file.entries - 1) == rel);
    return 0;
}

bool time_index_full(const struct time_index *idx)
{
    index_file_assert(&idx->file);
    /* TI2: the last slot is kept for the seal-time entry. */
    return idx->file.entries_max == 0 || idx->file.entries >= idx->file.entries_max - 1;
}

int time_index_lookup(const struct time_index *idx, int64_t target_ms, int64_t *offset_out,
                      int64_t *floor_offset_out)
{
    index_file_assert(&idx->file);
    uint32_t le = count_le(idx, target_ms, false);
    int64_t floor =
        le == 0 ? idx->file.base_offset : idx->file.base_offset + rel_at(idx->file.map, le - 1);
    if (floor_offset_out != NULL)
        *floor_offset_out = floor;
    /* First entry with timestamp >= target: the floor itself on an exact hit, else the next. */
    uint32_t first = le > 0 && ts_at(idx->file.map, le - 1) == target_ms ? le - 1 : le;
    int rc = 0;
    int64_t offset = floor;
    if (first < idx->file.entries)
        offset = idx->file.base_offset + rel_at(idx->file.map, first);
    else
        rc = -ENOENT;
    if (offset_out != NULL)
        *offset_out = offset;
    return rc;
}

void time_index_entry(const struct time_index *idx, uint32_t i, int64_t *timestamp_out,
                      int64_t *offset_out)
{
    index_file_assert(&idx->file);
    assert(i < idx->file.entries);
    *timestamp_out = ts_at(idx->file.map, i);
    *offset_out = idx->file.base_offset + rel_at(idx->file.map, i);
}

void time_index_truncate_offset(struct time_index *idx, int64_t offset)
{
    index_file_assert(&idx->file);
    if (offset <= idx->file.base_offset) {
        index_file_keep(&idx->file, 0);
        return;
    }
    /* Offsets are non-decreasing: keep the prefix with relativeOffset < offset - base. */
    uint32_t keep = count_le(idx, offset - idx->file.base_offset - 1, true);
    index_file_keep(&idx->file, keep);
}

void time_index_reset(struct time_index *idx)
{
    index_file_keep(&idx->file, 0);
}

int time_index_seal(struct time_index *idx)
{
    return index_file_seal(&idx->file);
}

int time_index_sync(const struct time_index *idx)
{
    return index_file_sync(&idx->file);
}

void time_index_close(struct time_index *idx)
{
    if (idx != NULL)
        index_file_close(&idx->file);
}

uint32_t time_index_live_entries(const uint8_t *buf, uint32_t entries, bool trimmed)
{
    uint32_t keep = trimmed && entries > 0 ? 1 : 0; /* entry 0 may be (0, base): real */
    while (entries > keep) {
        if (ts_at(buf, entries - 1) != 0 || rel_at(buf, entries - 1) != 0)
            break;
        entries--;
    }
    return entries;
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
    if (len > INDEX_FILE_BYTES_MAX) {
        reason = "larger than Kafka's 2 GiB index limit";
        bad = INDEX_FILE_BYTES_MAX / TIME_INDEX_ENTRY_BYTES;
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
