/*
 * time_index.h — a segment's time index, `<base>.timeindex`, in Kafka's format: 12-byte
 * entries (timestamp i64 BE, relativeOffset i32 BE); timestamps >= 0 and strictly increasing,
 * offsets non-decreasing. An entry (T, O) means: T is the largest timestamp among records up to
 * offset O, first reached in O's batch, so every record with timestamp > T comes after O.
 * Entries are offered whenever an offset-index entry is added (the segment's max timestamp so
 * far and the offset where it was reached) and kept only if they raise the max; and once at seal
 * for the segment's max timestamp. docs/format.md §C.2 is normative.
 *
 * Same life cycle and rules as offset_index.h: preallocated, mmap'd, derived data rebuilt by
 * recovery, trimmed at seal. Never includes engine/; errors are -errno / -EBADMSG.
 */
#ifndef RT_TIME_INDEX_H
#define RT_TIME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index_file.h"

#define TIME_INDEX_ENTRY_BYTES 12

/* A closed index; same rules as OFFSET_INDEX_INIT. */
/* clang-format off */
#define TIME_INDEX_INIT {.file = INDEX_FILE_INIT}
/* clang-format on */

/* As struct offset_index: the file side is index_file's (IF1-IF5). */
struct time_index {
    struct index_file file;
};

/* As offset_index_open, with 12-byte entries (capacity_bytes rounded down to a multiple of 12). */
int time_index_open(struct time_index *idx, const char *path, int64_t base_offset,
                    size_t capacity_bytes, bool writable, uint32_t live_entries);

/* An index held only in memory (an anonymous mapping, no file, no descriptor), writable, empty:
 * a read-only engine rebuilds an index it cannot trust here rather than in its file. Sealing it
 * is not supported; close unmaps it. Returns 0, -EINVAL (as offset_index_open for a writable
 * index) or -errno from mmap. */
int time_index_open_memory(struct time_index *idx, int64_t base_offset, size_t capacity_bytes);

/* Appends (timestamp, offset) if timestamp > time_index_max_timestamp() (Kafka's maybeAppend:
 * otherwise a no-op returning 0, so NO_TIMESTAMP -1 is never indexed). -EINVAL unless
 * base <= offset <= base + INT32_MAX and offset >= the last entry's offset (checked even when
 * the append would be a no-op); -ENOSPC only when every slot is used, which includes the slot
 * time_index_full() reserves; -EROFS on a read-only or sealed index. */
int time_index_append(struct time_index *idx, int64_t timestamp_ms, int64_t offset);

/* True when the segment must roll: as Kafka's TimeIndex.isFull, one slot before capacity, so that
 * the seal-time append of the segment's max timestamp always fits. Always true when read-only. */
bool time_index_full(const struct time_index *idx);

/* Where to look for the first record with timestamp >= target_ms. O(log n).
 * *floor_offset_out: the offset of the last entry with timestamp <= target (Kafka's
 * TimeIndex.lookup), base_offset when none. A scan for the first record with timestamp >= target
 * starts at offset_index_lookup(floor).position (Kafka's LogSegment.findOffsetByTimestamp).
 * *offset_out: the offset of the first entry with timestamp >= target; the record sought has an
 * offset <= it, so a scan may stop there. Returns 0, or -ENOENT when no entry has timestamp >=
 * target (then *offset_out = *floor_offset_out = the last entry's offset): records after the last
 * entry are not indexed, so -ENOENT does not mean the segment holds no such record; compare
 * with the segment's max timestamp for that. Either pointer may be NULL. */
int time_index_lookup(const struct time_index *idx, int64_t target_ms, int64_t *offset_out,
                      int64_t *floor_offset_out);

/* Entry i (< entries) as timestamp and absolute offset. */
void time_index_entry(const struct time_index *idx, uint32_t i, int64_t *timestamp_out,
                      int64_t *offset_out);

/* Largest timestamp indexed, or -1 when empty. */
int64_t time_index_max_timestamp(const struct time_index *idx);

/* Drops every entry with offset >= offset; then as offset_index_truncate_offset. */
void time_index_truncate_offset(struct time_index *idx, int64_t offset);
void time_index_reset(struct time_index *idx);
/* As offset_index_seal / _sync / _close with 12-byte entries. */
int time_index_seal(struct time_index *idx);
int time_index_sync(const struct time_index *idx);
void time_index_close(struct time_index *idx);

/* Validates raw bytes: len a multiple of 12 and <= INT32_MAX; timestamps >= 0 and strictly
 * increasing; relative offsets >= 0 and non-decreasing. Returns 0 or -EBADMSG with *why and
 * *bad_entry as offset_index_check (including the "zero entry" reason). Pure. */
int time_index_check(const uint8_t *buf, size_t len, const char **why, uint32_t *bad_entry);

/* How many of a time index file's `entries` whole entries are entries, not zero fill, by the
 * rule time_index_check applies (an all-zero entry after the first is fill): trailing all-zero
 * entries are fill, except entry 0 of a `trimmed` file (a sealed segment's, or any segment's
 * after a clean close: rt_open reads such a file whole), which is the real entry (timestamp 0,
 * base offset) a batch whose maxTimestamp is 0 puts there (librdkafka writes maxTimestamp 0 for
 * records without a timestamp, -1). In a file that may be preallocated (the newest segment's
 * after a crash) an all-zero entry 0 cannot be told from fill and counts as fill: recovery
 * rebuilds that index anyway. verify and dump count entries with it. Pure, O(entries). */
uint32_t time_index_live_entries(const uint8_t *buf, uint32_t entries, bool trimmed);

#endif /* RT_TIME_INDEX_H */
