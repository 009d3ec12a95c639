/*
 * offset_index.c — a segment's sparse offset index, `<base>.index` (docs/format.md §C.1,
 * normative; §C.3 the life cycle it shares with the time index).
 *
 * This module owns what the entries of one index file mean: their encoding, the append rule and the
 * binary search over them. The file itself (preallocation, mapping, live count, trim at seal,
 * close) is index_file's (index/index_file.h, invariants IF1-IF5), shared with the time index. It
 * never reads the log, never includes engine/, knows nothing about io_uring and never fsyncs per
 * append: an index is derived data that recovery rebuilds from the log, so a crash may leave it
 * stale or untrimmed, never wrong in a way recovery cannot see.
 *
 *     entry i, 8 bytes, big-endian, at byte i * 8:
 *     +0  relativeOffset  i32   offset - base_offset, 0 <= relativeOffset <= INT32_MAX
 *     +4  position        i32   byte position in `<base>.log` of a batch, 0 <= position
 *
 * Invariants (kept by this module, asserted; never asserted of bytes read from disk), beside
 * index_file's IF1-IF5:
 *   OI1. entries appended by this module have strictly increasing offsets and positions
 *        (a writable reopen takes entries from disk unchecked: offset_index_check validates them).
 *
 * Costs: append O(1) through the mapping; lookup and truncate O(log n), searching Kafka's "warm
 * section" (the last 8 KiB of entries) first so that tail lookups touch the same few pages.
 */
#include "index/offset_index.h"
#include "index/byte_order.h"
#include "index/index_file.h"

#include <assert.h>
#include <errno.h>

_Static_assert(OFFSET_INDEX_ENTRY_BYTES == 8, "Kafka offset index entries are 8 bytes");

/* Kafka's warm section: lookups near the tail stay within the last 8 KiB of the file. */
#define WARM_ENTRIES (8192u / OFFSET_INDEX_ENTRY_BYTES)

static int32_t rel_at(const uint8_t *buf, uint32_t i)
{
    return u32_as_i32(be32_load(buf + (size_t)i * OFFSET_INDEX_ENTRY_BYTES));
}

static uint32_t pos_at(const uint8_t *buf, uint32_t i)
{
    return be32_load(buf + (size_t)i * OFFSET_INDEX_ENTRY_BYTES + 4);
}

/* Number of live entries with relativeOffset <= rel_target, assuming sorted entries (on
 * unsorted bytes the answer is meaningless but every read stays inside [0, entries)). */
static uint32_t count_le(const struct offset_index *idx, int64_t rel_target)
{
    uint32_t n = idx->file.entries;
    if (n == 0)
        return 0;
    uint32_t lo = 0;
    uint32_t hi = n;
    uint32_t hot = n > WARM_ENTRIES ? n - WARM_ENTRIES : 0;
    if ((int64_t)rel_at(idx->file.map, hot) <= rel_target)
        lo = hot + 1;
    else
        hi = hot;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)rel_at(idx->file.map, mid) <= rel_target)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(lo <= n);
    return lo;
}

int offset_index_open_memory(struct offset_index *idx, int64_t base_offset, size_t capacity_bytes)
{
    assert(idx != NULL);
    return index_file_open_memory(&idx->file, OFFSET_INDEX_ENTRY_BYTES, base_offset,
                                  capacity_bytes);
}

int offset_index_open(struct offset_index *idx, const char *path, int64_t base_offset,
                      size_t capacity_bytes, bool writable, uint32_t live_entries)
{
    assert(idx != NULL);
    return index_file_open(&idx->file, path, OFFSET_INDEX_ENTRY_BYTES, base_offset, capacity_bytes,
                           writable, live_entries);
}

int offset_index_append(struct offset_index *idx, int64_t offset, uint32_t position)
{
    index_file_assert(&idx->file);
    if (!idx->file.writable)
        return -EROFS;
    if (offset < idx->file.base_offset || offset - idx->file.base_offset > INT32_MAX)
        return -EINVAL;
    if (position > (uint32_t)INT32_MAX)
        return -EINVAL;
    int32_t rel = (int32_t)(offset - idx->file.base_offset);
    if (idx->file.entries > 0) {
        uint32_t last = idx->file.entries - 1;
        if (rel <= rel_at(idx->file.map, last) || position <= pos_at(idx->file.map, last))
            return -EINVAL;
    }
    if (idx->file.entries >= idx->file.entries_max)
        return -ENOSPC;
    /* IF6: its blocks exist before the store (the engine reserves ahead of its appends, so this
     * only fails when that failed too); a reservation that fails makes the index full. */
    if (index_file_reserve(&idx->file, idx->file.entries + 1) != 0)
        return -ENOSPC;

    uint8_t *p = idx->file.map + (size_t)idx->file.entries * OFFSET_INDEX_ENTRY_BYTES;
    be32_store(p, (uint32_t)rel);
    be32_store(p + 4, position);
    idx->file.entries++;
    assert(rel_at(idx->file.map, idx->file.entries - 1) == rel); /* OI1, read back */
    assert(pos_at(idx->file.map, idx->file.entries - 1) == position);
    return 0;
}

bool offset_index_full(const struct offset_index *idx)
{
    index_file_assert(&idx->file);
    return idx->file.entries >= idx->file.entries_max;
}

void offset_index_lookup(const struct offset_index *idx, int64_t target, int64_t *offset_out,
                         uint32_t *position_out)
{
    index_file_assert(&idx->file);
    assert(offset_out != NULL && position_out != NULL);
    *offset_out = idx->file.base_offset;
    *position_out = 0;
    if (target < idx->file.base_offset)
        return;
    uint32_t n = count_le(idx, target - idx->file.base_offset);
    if (n == 0)
        return;
    *offset_out = idx->file.base_offset + rel_at(idx->file.map, n - 1);
    *position_out = pos_at(idx->file.map, n - 1);
}

void offset_index_entry(const struct offset_index *idx, uint32_t i, int64_t *offset_out,
                        uint32_t *position_out)
{
    index_file_assert(&idx->file);
    assert(i < idx->file.entries);
    *offset_out = idx->file.base_offset + rel_at(idx->file.map, i);
    *position_out = pos_at(idx->file.map, i);
}

void offset_index_truncate_offset(struct offset_index *idx, int64_t offset)
{
    index_file_assert(&idx->file);
    if (offset <= idx->file.base_offset) {
        index_file_keep(&idx->file, 0);
        return;
    }
    /* Entries with relativeOffset < offset - base survive, i.e. those <= offset - base - 1. */
    uint32_t keep = count_le(idx, offset - idx->file.base_offset - 1);
    index_file_keep(&idx->file, keep);
}

void offset_index_reset(struct offset_index *idx)
{
    index_file_keep(&idx->file, 0);
}

int offset_index_seal(struct offset_index *idx)
{
    return index_file_seal(&idx->file);
}

int offset_index_sync(const struct offset_index *idx)
{
    return index_file_sync(&idx->file);
}

void offset_index_close(struct offset_index *idx)
{
    if (idx != NULL)
        index_file_close(&idx->file);
}

int offset_index_check(const uint8_t *buf, size_t len, uint64_t log_size_bytes, const char **why,
                       uint32_t *bad_entry)
{
    const char *reason = NULL;
    uint64_t bad = 0;
    uint64_t n = len / OFFSET_INDEX_ENTRY_BYTES;
    if (len % OFFSET_INDEX_ENTRY_BYTES != 0) {
        reason = "size is not a multiple of 8 bytes";
        bad = n;
        goto out;
    }
    if (len > INDEX_FILE_BYTES_MAX) {
        reason = "larger than Kafka's 2 GiB index limit";
        bad = INDEX_FILE_BYTES_MAX / OFFSET_INDEX_ENTRY_BYTES;
        goto out;
    }
    assert(n <= UINT32_MAX);
    for (uint32_t i = 0; i < n; i++) {
        int32_t rel = rel_at(buf, i);
        uint32_t pos = pos_at(buf, i);
        bad = i;
        if (i > 0 && rel == 0 && pos == 0) {
            reason = "zero entry (preallocated space left untrimmed)";
            goto out;
        }
        if (rel < 0) {
            reason = "negative relative offset";
            goto out;
        }
        if (pos > (uint32_t)INT32_MAX) {
            reason = "negative position";
            goto out;
        }
        if (i > 0 && rel <= rel_at(buf, i - 1)) {
            reason = "relative offset not increasing";
            goto out;
        }
        if (i > 0 && pos <= pos_at(buf, i - 1)) {
            reason = "position not increasing";
            goto out;
        }
        if (log_size_bytes > 0 && pos >= log_size_bytes) {
            reason = "position past the end of the log";
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
