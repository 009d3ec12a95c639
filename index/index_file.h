/*
 * index_file.h — the file side shared by the offset and time indexes: open (or create) an index
 * file of fixed-size entries, size it, map it, count its live entries, seal, sync and close it. A
 * writable index is sized to its capacity (sparse) and its blocks are reserved (fallocate) a
 * window ahead of its live entries (IF6), so a store through the mapping can never hit a hole the
 * file system cannot fill (that would be SIGBUS, not an error) while an empty index costs one
 * page of disk, not its capacity (issue 21 F2); a read-only one is mapped as it is. Knows nothing of what the entries mean: the owning
 * module (offset_index.c, time_index.c) reads and writes them through map and decides what to
 * append. Errors are -errno; a misshapen file is -EBADMSG.
 *
 * Invariants (kept here and by the owners, asserted by index_file_assert; never asserted of bytes
 * read from disk):
 *   IF1. entries <= entries_max.
 *   IF2. writable: map_bytes == entries_max * entry_bytes and the file is at least that long.
 *   IF3. map_bytes >= entries * entry_bytes (read-only: equal until truncate/reset hide entries).
 *   IF4. map == NULL iff map_bytes == 0.
 *   IF5. map never moves between open and close: seal shrinks the mapping in place, so a pointer
 *        to the live entries taken at any time stays valid until close (lock-free readers).
 *   IF6. reserved_bytes <= map_bytes, and a writable file-backed index stores an entry only below
 *        reserved_bytes: [0, reserved_bytes) has its blocks allocated (index_file_reserve grows it
 *        by a window of INDEX_FILE_RESERVE_MIN_BYTES doubling up to INDEX_FILE_RESERVE_MAX_BYTES;
 *        where the file system has no fallocate the whole mapping counts as reserved, as before).
 */
#ifndef RT_INDEX_FILE_H
#define RT_INDEX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka addresses indexes with int positions. */
#define INDEX_FILE_BYTES_MAX ((uint64_t)INT32_MAX)
/* base + INT32_MAX (the largest relative offset) must not overflow an int64. */
#define INDEX_FILE_BASE_OFFSET_MAX (INT64_MAX - INT32_MAX)

/* IF6: the reservation window ahead of the live entries. One page at first (an empty index costs
 * 4 KiB of disk), doubling with each growth up to 64 KiB (one fallocate per 8192 offset-index
 * entries, about 32 MiB of log at the default index interval, once it is written fast). */
#define INDEX_FILE_RESERVE_MIN_BYTES ((size_t)4096)
#define INDEX_FILE_RESERVE_MAX_BYTES ((size_t)64 << 10)

/* A closed index: close is a no-op on it (see OFFSET_INDEX_INIT). */
/* clang-format off */
#define INDEX_FILE_INIT {.fd = -1}
/* clang-format on */

struct index_file {
    int fd;                /* -1 when read-only, sealed, in memory or closed */
    uint8_t *map;          /* NULL when map_bytes is 0 */
    size_t map_bytes;      /* mapped length (capacity when writable, file size when not) */
    size_t reserved_bytes; /* IF6: [0, this) has its blocks allocated (== map_bytes unless a
                              writable file-backed index) */
    uint32_t entries_max;  /* capacity */
    uint32_t entries;      /* live entries */
    uint32_t entry_bytes;
    int64_t base_offset; /* the segment's: entries hold offsets relative to it */
    bool writable;
};

/* Opens `path` for the segment at base_offset. writable: created if missing, sized to
 * capacity_bytes (rounded down to whole entries, or to the live entries if they need more) and
 * mapped read-write; live_entries says how many existing entries are valid (UINT32_MAX: file size
 * / entry_bytes); what follows them reads as zeros. Read-only: the whole file is mapped as it is
 * and the descriptor closed at once (fd is -1: the mapping is all a reader needs). Returns 0,
 * -EINVAL (base_offset < 0 or > INDEX_FILE_BASE_OFFSET_MAX; capacity below one entry or above
 * INDEX_FILE_BYTES_MAX when writable), -EFBIG, -EBADMSG (a size that is not whole entries when
 * the whole file is taken; live_entries beyond the file) or -errno. On failure nothing stays
 * open and f is closed (INDEX_FILE_INIT, base_offset kept). */
int index_file_open(struct index_file *f, const char *path, size_t entry_bytes, int64_t base_offset,
                    size_t capacity_bytes, bool writable, uint32_t live_entries);

/* An index held in memory only (anonymous mapping of capacity_bytes, rounded down to whole
 * entries; fd -1, nothing on disk), writable and empty. Returns 0, -EINVAL (as index_file_open
 * for a writable index) or -errno from mmap. Sealing it is not supported; close unmaps it. */
int index_file_open_memory(struct index_file *f, size_t entry_bytes, int64_t base_offset,
                           size_t capacity_bytes);

/* A read-only view of the first `entries` entries at map (a mapping another index_file owns, e.g.
 * the published prefix a lock-free reader may use): no descriptor, nothing to close. */
struct index_file index_file_view(const uint8_t *map, uint32_t entries, size_t entry_bytes,
                                  int64_t base_offset);

/* IF6: makes sure the first `entries` entries of a writable file-backed index have their blocks
 * allocated, growing the reservation by its window (never past the mapping). A no-op for other
 * indexes and when already reserved. Returns 0, or -errno from fallocate (-ENOSPC: the disk is
 * full; nothing changed, and nothing may be stored past reserved_bytes). */
int index_file_reserve(struct index_file *f, uint32_t entries);

/* Asserts IF1-IF4 and IF6. */
void index_file_assert(const struct index_file *f);

/* Keeps the first `keep` live entries (keep <= entries): only the in-memory count changes; on a
 * writable index the file follows at seal/close. */
void index_file_keep(struct index_file *f, uint32_t keep);

/* Seals a writable index: msync its live entries, trim the file to them, fdatasync (so it reopens
 * with exactly its entries), then shrink the mapping in place — never remap (IF5): the live pages
 * become read-only and the rest is unmapped (map becomes NULL when nothing is live). Once the file
 * is cut the index is read-only whatever fails later. On success fd is closed (a sealed index
 * holds no descriptor); on failure it stays open. A no-op returning 0 on a read-only index.
 * Returns 0 or -errno. */
int index_file_seal(struct index_file *f);

/* msync(MS_SYNC) of the live entries; 0 when read-only or empty. Returns 0 or -errno. */
int index_file_sync(const struct index_file *f);

/* Unmaps and closes; a writable index is trimmed to its live entries first, as Kafka does on
 * close (no fsync, errors ignored: a failure only leaves a zero tail that recovery handles).
 * Leaves f closed (INDEX_FILE_INIT, base_offset and entry_bytes kept); safe on a closed one. */
void index_file_close(struct index_file *f);

#endif /* RT_INDEX_FILE_H */
