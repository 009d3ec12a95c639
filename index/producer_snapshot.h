/*
 * producer_snapshot.h — the producer-state snapshot file, `<offset>.snapshot`, in Kafka's layout
 * (ProducerStateManager.writeSnapshot/readSnapshot): version i16 (1), crc u32 (CRC-32C of every
 * byte from 6 to the end, the entry count included), count i32, then `count` 46-byte entries.
 * docs/format.md part D is normative; index/producer_snapshot.c repeats the table and numbers
 * the validity rules (S1..S12) that decode enforces.
 *
 * A pure codec (size, encode, decode) and four file helpers (atomic write, bounded read, list,
 * remove). It knows nothing of what the entries mean to the engine: engine/producer_state owns
 * that. index/ never includes engine/. Errors are -errno; bytes that break a rule are -EBADMSG
 * with a static reason and the byte offset of the offending field.
 */
#ifndef RT_PRODUCER_SNAPSHOT_H
#define RT_PRODUCER_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#define PRODUCER_SNAPSHOT_VERSION      1
#define PRODUCER_SNAPSHOT_HEADER_BYTES 10 /* version i16, crc u32, count i32 */
#define PRODUCER_SNAPSHOT_ENTRY_BYTES  46
/* ringtail's limit on entries in one snapshot (Kafka's is the i32 count). It bounds the file
 * producer_snapshot_read accepts: PRODUCER_SNAPSHOT_HEADER_BYTES + 46 * 2^20 = 48234506 bytes. */
#define PRODUCER_SNAPSHOT_ENTRIES_MAX (1u << 20)

/* One producer's state as Kafka snapshots it (ProducerStateEntry: the last retained batch plus
 * the epochs and the open transaction). A producer whose retained batches are gone (only markers
 * since the last epoch bump) has last_offset -1, last_sequence -1 and offset_delta 0. */
struct producer_snapshot_entry {
    int64_t producer_id;              /* >= 0 */
    int16_t epoch;                    /* producer epoch, >= 0 */
    int32_t last_sequence;            /* last sequence of the last batch; -1 none */
    int64_t last_offset;              /* last offset of the last batch; -1 none */
    int32_t offset_delta;             /* last offset - first offset of that batch, >= 0 */
    int64_t timestamp_ms;             /* max timestamp of the last append; any value (-1 none) */
    int32_t coordinator_epoch;        /* of the last marker; -1 none */
    int64_t current_txn_first_offset; /* first offset of the open transaction; -1 none */
};

/* Called by decode/read once per entry, in file order, only after the whole buffer has passed
 * every rule. Returning non-zero stops the walk; decode returns that value (use 0 or -errno). */
typedef int (*producer_snapshot_entry_fn)(void *ctx, const struct producer_snapshot_entry *e);

/* Encoded size of a snapshot holding n entries: 10 + 46 * n. Never fails (size_t is 64 bits). */
size_t producer_snapshot_size(uint32_t n);

/* Serialises e[0, n) in the given order into buf and sets *len_out to producer_snapshot_size(n).
 * The output is checked with decode's rules before returning, so whatever encode produces, decode
 * accepts (and re-encoding the decoded entries gives the same bytes).
 * Returns 0; -EINVAL when n > PRODUCER_SNAPSHOT_ENTRIES_MAX or an entry breaks rule S6..S12 (a
 * negative producer id, a duplicate producer id, ...); -ENOSPC when
 * cap < producer_snapshot_size(n); -ENOMEM (duplicate check, n > 1). buf is written only on
 * success.
 * e may be NULL when n == 0. O(n log n). */
int producer_snapshot_encode(const struct producer_snapshot_entry *e, uint32_t n, uint8_t *buf,
                             size_t cap, size_t *len_out);

/* Parses untrusted bytes buf[0, len) (never reads outside them). Validates everything first
 * (S1..S12), then calls fn for each entry in file order (fn may be NULL: validate only).
 * Returns 0; -EBADMSG with *why a static reason and *bad_offset the byte offset of the first
 * offending field (why and bad_offset may be NULL; on success they are set to NULL and 0);
 * -ENOMEM (duplicate check); or fn's non-zero return. On -EBADMSG fn was never called.
 * O(n log n): the duplicate check sorts a copy of the producer ids (16 * count bytes). */
int producer_snapshot_decode(const uint8_t *buf, size_t len, producer_snapshot_entry_fn fn,
                             void *ctx, const char **why, size_t *bad_offset);

/* Writes `<dir>/<offset as 20 digits>.snapshot` atomically: encode, write to the same name plus
 * ".tmp" (created or truncated), fdatasync, rename over the final name, fsync dir. A crash leaves
 * either the old state or the complete new file; a stale ".tmp" is ignored by list and replaced
 * by the next write of that offset. Returns 0; -EINVAL (offset < 0, or as encode); -ENOMEM;
 * -errno from open, write, fdatasync, rename, fsync (the .tmp is unlinked on failure). */
struct io_fault_plan;
/* `faults` (here and in the removals below): the engine's fault plan (tests) or NULL. The .tmp's
 * creation, its fdatasync, the rename, the unlinks and the directory fsyncs go through io/'s
 * calls with it (io.h), so the fault injector's directory-entry model sees them. */
int producer_snapshot_write(struct io_fault_plan *faults, const char *dir, int64_t offset,
                            const struct producer_snapshot_entry *e, uint32_t n);

/* Reads the file at path (any name) and decodes it as producer_snapshot_decode does.
 * Returns 0; -ENOENT; -EBADMSG with why/bad_offset (also for a file larger than
 * producer_snapshot_size(PRODUCER_SNAPSHOT_ENTRIES_MAX) or not a regular file, bad_offset = 0);
 * -ENOMEM; -errno from open, fstat, read; or fn's non-zero return. */
int producer_snapshot_read(const char *path, producer_snapshot_entry_fn fn, void *ctx,
                           const char **why, size_t *bad_offset);

/* Lists the snapshot offsets in dir, ascending: names of exactly 20 decimal digits (a value
 * <= INT64_MAX) followed by ".snapshot"; anything else (".tmp" leftovers, other files) is
 * skipped. *offsets_out is malloc'd (NULL when *count_out is 0); the caller frees it.
 * Returns 0, -ENOMEM, -EOVERFLOW (more than UINT32_MAX names) or -errno from opendir/readdir
 * (-ENOENT when dir is missing). Not atomic against concurrent writers. */
int producer_snapshot_list(const char *dir, int64_t **offsets_out, uint32_t *count_out);

/* Deletes `<dir>/<offset as 20 digits>.snapshot` and fsyncs dir. Deleting a missing snapshot
 * succeeds (Kafka's deleteIfExists). Returns 0, -EINVAL (offset < 0) or -errno from unlink and
 * the directory fsync. */
int producer_snapshot_remove(struct io_fault_plan *faults, const char *dir, int64_t offset);

/* Deletes every listed snapshot with offset < `offset` (retention: Kafka's
 * deleteSnapshotsBefore) or >= `offset` (truncation: snapshots past the new log end), then
 * fsyncs dir once. Returns 0 or the first error as list and remove report it; deletion stops at
 * the first error. */
int producer_snapshot_remove_before(struct io_fault_plan *faults, const char *dir, int64_t offset);
int producer_snapshot_remove_from(struct io_fault_plan *faults, const char *dir, int64_t offset);

#endif /* RT_PRODUCER_SNAPSHOT_H */
