/*
 * offset_index.h — a segment's sparse offset index, `<base>.index`, in Kafka's format:
 * 8-byte entries (relativeOffset i32 BE, position i32 BE), both strictly increasing.
 * docs/format.md §C.1 is normative.
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

#include "index/index_file.h"

#define OFFSET_INDEX_ENTRY_BYTES 8

/* A closed index: close is a no-op on it. offset_index_open leaves the struct in this state when
 * it fails, and offset_index_close returns it to this state, so close is safe after any open
 * (successful or not) and twice. A struct that was only zeroed has fd 0: use this initialiser
 * (or set fd = -1) before closing one that may never have been opened. */
/* clang-format off */
#define OFFSET_INDEX_INIT {.file = INDEX_FILE_INIT}
/* clang-format on */

/* The file, its mapping and the live count are index_file's (index/index_file.h, IF1-IF5);
 * readers take entries from file.map[0 .. file.entries). */
struct offset_index {
    struct index_file file;
};

/* Opens or creates `path`. writable: the file is sized (ftruncate) to capacity_bytes rounded
 * down to a multiple of 8 (or to the live entries if they need more; then it is full) and mapped
 * read-write; `live_entries` tells how many of the existing entries are valid (pass UINT32_MAX
 * to take file_size / 8, as after a clean trim); bytes past them are zeroed (a hole, no I/O).
 * Read-only: maps the file as it is (an empty file maps nothing); entries = file size / 8.
 * Does not validate contents (see offset_index_check); lookups over unchecked bytes are
 * memory-safe but meaningless.
 * Returns 0, -EINVAL (base_offset < 0 or > INT64_MAX - INT32_MAX; writable with capacity_bytes
 * < 8 or > INT32_MAX), -EBADMSG (size not a multiple of 8 when the whole file is taken;
 * live_entries > file_size / 8), -EFBIG (file > INT32_MAX bytes) or -errno from open, fstat,
 * ftruncate, mmap. On failure the struct is closed (OFFSET_INDEX_INIT state). */
int offset_index_open(struct offset_index *idx, const char *path, int64_t base_offset,
                      size_t capacity_bytes, bool writable, uint32_t live_entries);

/* An index held only in memory (an anonymous mapping, no file, no descriptor), writable, empty:
 * a read-only engine rebuilds an index it cannot trust here rather than in its file. Sealing it
 * is not supported; close unmaps it. Returns 0, -EINVAL (as offset_index_open for a writable
 * index) or -errno from mmap. */
int offset_index_open_memory(struct offset_index *idx, int64_t base_offset, size_t capacity_bytes);

/* Appends an entry for (offset, position) through the mapping (no syscall). -EINVAL unless
 * base <= offset <= base + INT32_MAX, position <= INT32_MAX, and both are greater than the last
 * entry's (Kafka's AbstractIndex.toRelative and OffsetIndex.append); -ENOSPC when full (the
 * segment rolls); -EROFS on a read-only or sealed index. Argument errors win over -ENOSPC. */
int offset_index_append(struct offset_index *idx, int64_t offset, uint32_t position);

/* True when no entry can be appended (always true once read-only or sealed). */
bool offset_index_full(const struct offset_index *idx);

/* Finds the last entry with offset <= target; when none, (base_offset, 0). Never fails. O(log n).
 */
void offset_index_lookup(const struct offset_index *idx, int64_t target, int64_t *offset_out,
                         uint32_t *position_out);

/* Entry i (< entries) as absolute offset and position. */
void offset_index_entry(const struct offset_index *idx, uint32_t i, int64_t *offset_out,
                        uint32_t *position_out);

/* Drops every entry with offset >= offset. O(log n). Only the in-memory count changes: on a
 * writable index the file follows at seal/close; on a read-only one the entries are only hidden
 * (reopen writable to drop them from the file). */
void offset_index_truncate_offset(struct offset_index *idx, int64_t offset);
/* Drops all entries (same rules as truncate). */
void offset_index_reset(struct offset_index *idx);

/* msync(MS_SYNC) + ftruncate to entries * 8 + fdatasync, then shrinks the mapping in place: the
 * pages holding the live entries stay mapped at the same address, now read-only, the rest is
 * unmapped (nothing stays mapped when empty). So idx->file.map never moves between open and close
 * and readers holding it stay valid. A no-op returning 0 on a read-only index. Returns 0 or -errno;
 * once the ftruncate has succeeded the index is read-only even if a later step fails. */
int offset_index_seal(struct offset_index *idx);

/* msync(MS_SYNC) of the live entries; 0 when read-only or empty. Returns 0 or -errno. */
int offset_index_sync(const struct offset_index *idx);

/* Unmaps and closes; a writable index is first trimmed to entries * 8 (as Kafka does on close;
 * no fsync, errors ignored: an untrimmed zero tail is what offset_index_check reports as
 * "zero entry"). Safe on a closed struct, see OFFSET_INDEX_INIT. */
void offset_index_close(struct offset_index *idx);

/* Validates raw index bytes against Kafka's rules: len a multiple of 8 and <= INT32_MAX;
 * relative offsets >= 0 and strictly increasing; positions in [0, INT32_MAX] and strictly
 * increasing; every position < log_size_bytes when log_size_bytes > 0. Returns 0 (why = NULL,
 * bad_entry = 0) or -EBADMSG with *why a static reason and *bad_entry the number of the first bad
 * entry (= the count of valid entries before it; for a bad length, len / 8). An all-zero entry
 * after the first is reported as "zero entry (preallocated space left untrimmed)", the state a
 * crash leaves an active segment's index in. why and bad_entry may be NULL. Pure, never reads
 * outside buf[0, len): used by open-time checks, verify and the fuzz target. */
int offset_index_check(const uint8_t *buf, size_t len, uint64_t log_size_bytes, const char **why,
                       uint32_t *bad_entry);

#endif /* RT_OFFSET_INDEX_H */
