/*
 * offset_index.h — a segment's sparse offset index, `<base>.index`, in Kafka's format:
 * 8-byte entries (relativeOffset i32 BE, position i32 BE), both strictly increasing.
 * docs/format.md §Offset index is normative.
 *
 * The file is preallocated to its capacity and mmap'd; entries are written through the mapping
 * (an index is derived data: recovery rebuilds it from the log, so it needs no fsync per append;
 * it is msync'd when its segment is sealed). The number of live entries is tracked in memory;
 * at seal/close the file is trimmed to exactly count * 8 bytes. index/ never includes engine/
 * and knows nothing about io_uring. Errors are -errno; a damaged file is -EBADMSG with a reason.
 */
#ifndef RT_OFFSET_INDEX_H
#define RT_OFFSET_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFFSET_INDEX_ENTRY_BYTES 8

struct offset_index {
    int fd;
    uint8_t *map;
    size_t map_bytes;        /* mapped length (capacity when writable, file size when not) */
    uint32_t entries_max;    /* capacity */
    uint32_t entries;        /* live entries */
    int64_t base_offset;
    bool writable;
};

/* Opens or creates `path`. writable: the file is extended (ftruncate) to capacity_bytes
 * (rounded down to a multiple of 8) and mapped read-write; `live_entries` tells how many of
 * the existing entries are valid (pass UINT32_MAX to take file_size / 8, as after a clean
 * trim). Read-only: maps the file as it is; entries = file size / 8 (a size that is not a
 * multiple of 8 is -EBADMSG). Does not validate contents; see offset_index_check.
 * Returns 0 or -errno. */
int offset_index_open(struct offset_index *idx, const char *path, int64_t base_offset,
                      size_t capacity_bytes, bool writable, uint32_t live_entries);

/* Appends an entry for (offset, position). offset must be > base and > the last entry's offset,
 * position > the last entry's position (else -EINVAL); -ENOSPC when full (the segment rolls). */
int offset_index_append(struct offset_index *idx, int64_t offset, uint32_t position);

bool offset_index_full(const struct offset_index *idx);

/* Finds the last entry with offset <= target; when none, (base_offset, 0). Never fails. O(log n). */
void offset_index_lookup(const struct offset_index *idx, int64_t target, int64_t *offset_out,
                         uint32_t *position_out);

/* Entry i (< entries) as absolute offset and position. */
void offset_index_entry(const struct offset_index *idx, uint32_t i, int64_t *offset_out,
                        uint32_t *position_out);

/* Drops every entry with offset >= offset. */
void offset_index_truncate_offset(struct offset_index *idx, int64_t offset);
/* Drops all entries. */
void offset_index_reset(struct offset_index *idx);

/* msync + ftruncate to entries * 8 and remap read-only sized to it. Returns 0 or -errno. */
int offset_index_seal(struct offset_index *idx);

/* msync(MS_SYNC) of the live entries. */
int offset_index_sync(const struct offset_index *idx);

void offset_index_close(struct offset_index *idx);

/* Validates raw index bytes against Kafka's rules: len multiple of 8; relative offsets >= 0 and
 * strictly increasing; positions strictly increasing; every position < log_size_bytes when log_size_bytes > 0. Returns 0 or -EBADMSG
 * with *why and *bad_entry (entry number) set. Pure: used by open-time checks, verify and the
 * fuzz target. */
int offset_index_check(const uint8_t *buf, size_t len, uint64_t log_size_bytes,
                       const char **why, uint32_t *bad_entry);

#endif /* RT_OFFSET_INDEX_H */
