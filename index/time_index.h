/*
 * time_index.h — a segment's time index, `<base>.timeindex`, in Kafka's format: 12-byte
 * entries (timestamp i64 BE, relativeOffset i32 BE); timestamps strictly increasing, offsets
 * non-decreasing. An entry is added when a batch raises the segment's max timestamp and at
 * least index_interval_bytes were appended since the last entry (and always at seal, for the
 * segment's max timestamp). docs/format.md §Time index is normative.
 *
 * Same life cycle and rules as offset_index.h: preallocated, mmap'd, derived data rebuilt by
 * recovery, trimmed at seal. Never includes engine/; errors are -errno / -EBADMSG.
 */
#ifndef RT_TIME_INDEX_H
#define RT_TIME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIME_INDEX_ENTRY_BYTES 12

struct time_index {
    int fd;
    uint8_t *map;
    size_t map_bytes;
    uint32_t entries_max;
    uint32_t entries;
    int64_t base_offset;
    bool writable;
};

int time_index_open(struct time_index *idx, const char *path, int64_t base_offset,
                    size_t capacity_bytes, bool writable, uint32_t live_entries);

/* Appends (timestamp, offset) if timestamp > the last entry's timestamp (otherwise it is a
 * no-op returning 0); offset must be >= the last entry's offset (else -EINVAL). -ENOSPC when
 * full. */
int time_index_append(struct time_index *idx, int64_t timestamp_ms, int64_t offset);

bool time_index_full(const struct time_index *idx);

/* Finds the first entry with timestamp >= target. Returns 0 and the entry's offset, or
 * -ENOENT when every entry is older (callers then scan from the last entry's offset). Also
 * reports the last entry with timestamp < target through *floor_offset_out (base when none),
 * which is where a scan for `target` must start. */
int time_index_lookup(const struct time_index *idx, int64_t target_ms, int64_t *offset_out,
                      int64_t *floor_offset_out);

void time_index_entry(const struct time_index *idx, uint32_t i, int64_t *timestamp_out,
                      int64_t *offset_out);

/* Largest timestamp indexed, or -1 when empty. */
int64_t time_index_max_timestamp(const struct time_index *idx);

void time_index_truncate_offset(struct time_index *idx, int64_t offset);
void time_index_reset(struct time_index *idx);
int time_index_seal(struct time_index *idx);
int time_index_sync(const struct time_index *idx);
void time_index_close(struct time_index *idx);

/* Validates raw bytes: len multiple of 12, timestamps strictly increasing, relative offsets
 * >= 0 and non-decreasing. Returns 0 or -EBADMSG with *why and *bad_entry. */
int time_index_check(const uint8_t *buf, size_t len, const char **why, uint32_t *bad_entry);

#endif /* RT_TIME_INDEX_H */
