/*
 * txn_index.h — a segment's aborted-transaction index, `<base>.txnindex`, in Kafka's format
 * (TransactionIndex / AbortedTxn): 34-byte entries (version i16 = 0, producerId i64,
 * firstOffset i64, lastOffset i64, lastStableOffset i64), one per transaction aborted by an ABORT
 * marker written in this segment, in marker order (lastOffset strictly increasing).
 * docs/format.md §E is normative; the rules X1-X8 are numbered there and in txn_index.c.
 *
 * Unlike the offset and time indexes the file is not preallocated: an abort is rare, so each
 * entry is appended with one pwrite at the end of the file and made durable by txn_index_sync
 * when the caller wants it (the group-commit round's fdatasync). The entries are few, so open
 * loads them (validated) into memory and readers never touch the file.
 *
 * Concurrency: one writer (append, truncate_to, sync) and any number of readers (count, get,
 * collect) may run at the same time without a lock. Entries live in chunks that never move or
 * shrink until close; append fills the next slot and then publishes the new count with a release
 * store, and readers load the count with acquire, so a reader sees a prefix of the appended
 * entries, each complete. truncate_to lowers the count; it must not run while readers hold the
 * index (recovery truncates before the partition is published), because a later append reuses
 * the dropped slots. close requires that no reader and no writer is inside the index.
 *
 * index/ never includes engine/ and knows nothing about io_uring. Errors are -errno; a damaged
 * file is -EBADMSG with a static reason.
 */
#ifndef RT_TXN_INDEX_H
#define RT_TXN_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TXN_INDEX_ENTRY_BYTES 34
#define TXN_INDEX_VERSION     0
/* Kafka addresses the file with int positions: at most INT32_MAX bytes of whole entries. */
#define TXN_INDEX_ENTRIES_MAX ((uint32_t)(INT32_MAX / TXN_INDEX_ENTRY_BYTES))
/* Chunk c holds TXN_INDEX_CHUNK0_ENTRIES << c entries; together they cover TXN_INDEX_ENTRIES_MAX
 * (checked by a _Static_assert in txn_index.c). */
#define TXN_INDEX_CHUNK0_ENTRIES 16u
#define TXN_INDEX_CHUNKS         23

/* Open flags. */
#define TXN_INDEX_WRITABLE 0x1u /* read-write; the file is created if missing */
#define TXN_INDEX_REPAIR                                                                           \
    0x2u /* with WRITABLE: cut the file to its longest valid prefix                                \
          * instead of failing with -EBADMSG (recovery) */
#define TXN_INDEX_MEMORY                                                                           \
    0x4u /* without WRITABLE: the file is read once and never written or created; appends and      \
          * truncations change only the in-memory entries (a read-only engine's replay); with      \
          * REPAIR a damaged tail is dropped in memory only */

/* One aborted transaction (AbortedTxn). */
struct txn_index_entry {
    int64_t producer_id;
    int64_t first_offset;       /* first offset of the transaction in this partition */
    int64_t last_offset;        /* offset of its ABORT marker (in this segment) */
    int64_t last_stable_offset; /* the partition's LSO when the marker was written */
};

/* A closed index: close is a no-op on it. Open failures leave the struct in this state. */
/* clang-format off */
#define TXN_INDEX_INIT {.fd = -1}
/* clang-format on */

struct txn_index {
    int fd; /* -1 when closed or read-only (entries are loaded at open) */
    bool writable;
    bool memory; /* TXN_INDEX_MEMORY: changes stay in memory */
    int64_t base_offset;
    uint64_t file_bytes;    /* writer only: bytes of whole entries in the file */
    uint32_t staged;        /* writer only: entries stored past count, not yet in the file */
    _Atomic uint32_t count; /* published entries */
    struct txn_index_entry *_Atomic chunks[TXN_INDEX_CHUNKS];
};

/* Reports one entry; a nonzero return stops the collection and is returned by it. */
typedef int (*txn_index_collect_fn)(void *ctx, const struct txn_index_entry *entry);

/* Opens `path` for the segment starting at base_offset and loads its entries. Without
 * TXN_INDEX_WRITABLE a missing file is an empty index (Kafka creates the file lazily). Every
 * entry is checked (X1-X8); a failure is -EBADMSG with *why and *bad_entry (the number of valid
 * entries before it), unless TXN_INDEX_REPAIR is set, in which case the file is truncated to
 * those valid entries, 0 is returned and *why / *bad_entry still say what was cut (why NULL when
 * nothing was). A partial entry at the end (a torn append) counts as damage.
 * Returns 0, -EINVAL (base_offset < 0, unknown flags, REPAIR without WRITABLE or MEMORY, MEMORY
 * with WRITABLE), -EBADMSG,
 * -EFBIG (file > INT32_MAX bytes), -ENOMEM, or -errno from open/fstat/pread/ftruncate. A newly
 * created file's directory entry is durable only after the caller fsyncs the directory.
 * why and bad_entry may be NULL. */
int txn_index_open(struct txn_index *idx, const char *path, int64_t base_offset, unsigned flags,
                   const char **why, uint32_t *bad_entry);

/* Appends one entry: pwrite at the end of the file, then publish. Not durable until
 * txn_index_sync. The entry must satisfy X3-X7 and have lastOffset greater than the last entry's
 * (Kafka's TransactionIndex.append: "The last offset of appended transactions must increase
 * sequentially"). Returns 0, -EINVAL (entry breaks a rule), -EROFS (read-only), -EFBIG
 * (TXN_INDEX_ENTRIES_MAX reached), -ENOMEM, or -errno from pwrite (the partial entry is cut off
 * again when possible; nothing is published). Writer only. */
int txn_index_append(struct txn_index *idx, const struct txn_index_entry *entry);

/* The append split in three for a writer whose file writes go through its own io ring (the
 * engine's group-commit round): txn_index_stage checks the entry as txn_index_append does
 * (against the last staged entry, if any), stores it past the published count, encodes it into
 * out and says where in the file it belongs (*file_offset_out; the caller writes it there when
 * idx->fd >= 0). Nothing is published and the file is not touched. txn_index_commit_staged then
 * publishes every staged entry (the caller wrote them all); txn_index_drop_staged forgets them
 * (the caller's writes failed) and cuts the file back to its published entries, best effort.
 * Returns (stage) 0, -EINVAL, -EROFS, -EFBIG or -ENOMEM, as txn_index_append. Writer only. */
int txn_index_stage(struct txn_index *idx, const struct txn_index_entry *entry,
                    uint8_t out[TXN_INDEX_ENTRY_BYTES], uint64_t *file_offset_out);
void txn_index_commit_staged(struct txn_index *idx);
void txn_index_drop_staged(struct txn_index *idx);

/* fdatasync of the file; 0 on a read-only index. Returns 0 or -errno. Writer only. */
int txn_index_sync(struct txn_index *idx);

/* Seals a writable index for good: fdatasync, then the descriptor is closed and the index is
 * read-only (its entries stay in memory). 0 on a read-only index. Returns 0 or -errno (then it
 * stays writable). Writer only. */
int txn_index_seal(struct txn_index *idx);

/* Drops every entry with lastOffset >= offset (Kafka's truncateTo; used when the log is
 * truncated to `offset`). O(log n). A writable index cuts the file too (no sync); a read-only one
 * only hides the entries. Returns 0 or -errno from ftruncate (then nothing changed). Must not run
 * concurrently with readers (see the top of this file). truncate_to(idx, INT64_MIN) resets. */
int txn_index_truncate_to(struct txn_index *idx, int64_t offset);

/* Published entries. Any thread. */
uint32_t txn_index_count(const struct txn_index *idx);

/* Entry i (< a count this thread has loaded). Any thread. */
void txn_index_get(const struct txn_index *idx, uint32_t i, struct txn_index_entry *out);

/* Reports, in index order (lastOffset increasing), every entry with
 * lastOffset >= fetch_start and firstOffset < fetch_upper — the aborted transactions that
 * overlap the fetch range [fetch_start, fetch_upper) — and sets *stop_out when the caller need
 * not look at later segments: as soon as an entry with lastStableOffset >= fetch_upper is met
 * (it is reported first if it overlaps), the scan ends. That entry proves that when its marker
 * was written every transaction starting below fetch_upper had already ended, so every later
 * abort (in this segment or the next) has firstOffset >= fetch_upper (Kafka's
 * TransactionIndex.collectAbortedTxns / UnifiedLog.collectAbortedTransactions). The caller
 * starts at the segment holding fetch_start and sorts the union by firstOffset (architecture.md, Rules of the protocol).
 * An empty range (fetch_upper <= fetch_start) reports nothing and sets *stop_out.
 * O(log n + reported). Returns 0 or the first nonzero return of fn (then *stop_out is false).
 * Any thread; lock-free. */
int txn_index_collect(const struct txn_index *idx, int64_t fetch_start, int64_t fetch_upper,
                      txn_index_collect_fn fn, void *ctx, bool *stop_out);

/* Frees the entries and closes the file. Safe on a closed struct (TXN_INDEX_INIT) and twice. */
void txn_index_close(struct txn_index *idx);

/* Validates raw .txnindex bytes (X1-X8) for a segment starting at base_offset. Returns 0
 * (why = NULL, bad_entry = 0) or -EBADMSG with *why a static reason and *bad_entry the number of
 * the first bad entry (= the count of valid entries before it; for a bad length, len / 34).
 * Pure, never reads outside buf[0, len); why and bad_entry may be NULL. */
int txn_index_check(const uint8_t *buf, size_t len, int64_t base_offset, const char **why,
                    uint32_t *bad_entry);

/* Encodes one entry (34 bytes, version 0). */
void txn_index_entry_encode(uint8_t out[TXN_INDEX_ENTRY_BYTES], const struct txn_index_entry *e);

#endif /* RT_TXN_INDEX_H */
