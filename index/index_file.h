/*
 * index_file.h — the file side shared by the offset and time indexes: open (or create) an index
 * file of fixed-size entries, size it and map it. A writable index is sized to its capacity with
 * its blocks reserved (fallocate), so a store through the mapping can never hit a hole the file
 * system cannot fill (that would be SIGBUS, not an error); a read-only one is mapped as it is.
 * Knows nothing of what the entries mean. Errors are -errno; a misshapen file is -EBADMSG.
 */
#ifndef RT_INDEX_FILE_H
#define RT_INDEX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka addresses indexes with int positions. */
#define INDEX_FILE_BYTES_MAX ((uint64_t)INT32_MAX)

struct index_file {
    int fd;
    uint8_t *map; /* NULL when map_bytes is 0 */
    size_t map_bytes;
    uint32_t entries_max;
    uint32_t entries; /* live entries */
};

/* Opens `path`. writable: created if missing, sized to capacity_bytes (rounded down to whole
 * entries, or to the live entries if they need more) and mapped read-write; live_entries says how
 * many existing entries are valid (UINT32_MAX: file size / entry_bytes); what follows them reads
 * as zeros. Read-only: the whole file is mapped as it is and the descriptor closed at once
 * (out->fd is -1: the mapping is all a reader needs). Returns 0, -EINVAL (capacity below one
 * entry or above INDEX_FILE_BYTES_MAX when writable), -EFBIG, -EBADMSG (a size that is not whole
 * entries when the whole file is taken; live_entries beyond the file) or -errno. On failure
 * nothing stays open. */
int index_file_open(const char *path, size_t entry_bytes, size_t capacity_bytes, bool writable,
                    uint32_t live_entries, struct index_file *out);

/* Seals a writable index whose first live_bytes are its entries: msync them, trim the file to
 * them, fdatasync (so it reopens with exactly its entries), then shrink the mapping in place —
 * never remap, so the address lock-free readers hold stays valid: the live pages become
 * read-only and the rest is unmapped (*map becomes NULL when nothing is live). *trimmed is set
 * once the file is cut: from then on the index is read-only whatever fails later. On success fd
 * is closed (a sealed index holds no descriptor); on failure it stays open. 0 or -errno. */
int index_file_seal(int fd, uint8_t **map, size_t *map_bytes, size_t live_bytes, bool *trimmed);

/* An index held in memory only (anonymous mapping of capacity_bytes, rounded down to whole
 * entries; fd -1, nothing on disk). Returns 0, -EINVAL (below one entry or above
 * INDEX_FILE_BYTES_MAX) or -errno from mmap. */
int index_file_open_memory(size_t entry_bytes, size_t capacity_bytes, struct index_file *out);

/* Unmaps and closes; a writable index is trimmed to live_bytes first, as Kafka does on close
 * (a failure only leaves a zero tail that recovery handles). */
void index_file_close(int fd, uint8_t *map, size_t map_bytes, bool writable, size_t live_bytes);

#endif /* RT_INDEX_FILE_H */
