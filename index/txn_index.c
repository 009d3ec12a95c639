/*
 * txn_index.c — a segment's aborted-transaction index, `<base>.txnindex` (docs/format.md §E).
 *
 * This module owns one .txnindex file and an in-memory copy of its entries: it loads and checks
 * them at open, appends with pwrite at the end of the file (or stages an entry whose write the
 * engine's group-commit round makes through its io ring, then commits or drops it), truncates
 * for recovery and answers "which aborted transactions overlap this fetch" without touching the
 * file. It never reads the log, never includes engine/ and never decides durability: txn_index_sync
 * is the caller's call.
 *
 *     entry i, 34 bytes, big-endian, at byte i * 34 (Kafka's AbortedTxn):
 *     +0   version           i16   0 (AbortedTxn.CURRENT_VERSION)
 *     +2   producerId        i64
 *     +10  firstOffset       i64   first offset of the transaction in this partition
 *     +18  lastOffset        i64   offset of its ABORT marker, which lies in this segment
 *     +26  lastStableOffset  i64   the partition's LSO when the marker was written
 *
 * Validity (txn_index_check; append enforces X3-X7 on its argument):
 *   X1. len is a multiple of 34 and at most INT32_MAX (Kafka reads it with int positions).
 *   X2. version == 0 (Kafka rejects versions above CURRENT_VERSION).
 *   X3. producerId >= 0.
 *   X4. 0 <= firstOffset <= lastOffset (equal when the aborted transaction wrote nothing here
 *       but its marker: Kafka's CompletedTxn takes the marker offset as the first offset then).
 *   X5. lastOffset >= base_offset (Kafka's TransactionIndex.sanityCheck).
 *   X6. lastOffset strictly increases from entry to entry (TransactionIndex.append).
 *   X7. 0 <= lastStableOffset <= lastOffset + 1 (ProducerStateManager.lastStableOffset: the
 *       first offset of the oldest other open transaction, or lastOffset + 1 when none).
 *   X8. An all-zero entry after the first is reported as "zero entry" (X6 rejects it anyway):
 *       the signature of a file extended by a crash before its data reached the disk.
 *
 * Invariants (kept here, asserted):
 *   XI1. count <= TXN_INDEX_ENTRIES_MAX; entries [0, count) satisfy X2-X7 pairwise.
 *   XI2. chunk c, once allocated, holds TXN_INDEX_CHUNK0_ENTRIES << c entries and never moves or
 *        is freed before close; chunks [0, chunk_of(count - 1)] are allocated.
 *   XI3. writable: file_bytes == count * 34 after every successful call.
 *   XI4. an entry's slot is written before the count that covers it is published (release), so
 *        readers (acquire) never see a partial entry.
 *
 * Why memory and not mmap: aborts are rare, so a segment's entries are a few KB; decoding them
 * once makes collect a binary search over host-endian structs, and chunks that never move let
 * readers run lock-free against one appender without remapping a growing file (a mapping past
 * EOF would SIGBUS a reader racing a truncation). Cost: 32 bytes of memory per entry.
 */
#include "index/txn_index.h"
#include "index/byte_order.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(TXN_INDEX_ENTRY_BYTES == 2 + 8 + 8 + 8 + 8, "Kafka AbortedTxn entries are 34 bytes");
_Static_assert((uint64_t)TXN_INDEX_CHUNK0_ENTRIES *((1ull << TXN_INDEX_CHUNKS) - 1) >=
                   TXN_INDEX_ENTRIES_MAX,
               "the chunks cover TXN_INDEX_ENTRIES_MAX entries");

#define OFF_VERSION     0
#define OFF_PRODUCER_ID 2
#define OFF_FIRST       10
#define OFF_LAST        18
#define OFF_LSO         26

/* Entries read per pread at open. */
#define READ_ENTRIES 256

static void decode(const uint8_t *p, struct txn_index_entry *e)
{
    e->producer_id = u64_as_i64(be64_load(p + OFF_PRODUCER_ID));
    e->first_offset = u64_as_i64(be64_load(p + OFF_FIRST));
    e->last_offset = u64_as_i64(be64_load(p + OFF_LAST));
    e->last_stable_offset = u64_as_i64(be64_load(p + OFF_LSO));
}

void txn_index_entry_encode(uint8_t out[TXN_INDEX_ENTRY_BYTES], const struct txn_index_entry *e)
{
    out[OFF_VERSION] = 0;
    out[OFF_VERSION + 1] = TXN_INDEX_VERSION;
    be64_store(out + OFF_PRODUCER_ID, (uint64_t)e->producer_id);
    be64_store(out + OFF_FIRST, (uint64_t)e->first_offset);
    be64_store(out + OFF_LAST, (uint64_t)e->last_offset);
    be64_store(out + OFF_LSO, (uint64_t)e->last_stable_offset);
}

/* X3-X7 for one decoded entry; prev is the previous entry or NULL. Returns a reason or NULL. */
static const char *entry_rule(const struct txn_index_entry *e, const struct txn_index_entry *prev,
                              int64_t base_offset)
{
    if (e->producer_id < 0)
        return "negative producer id";
    if (e->first_offset < 0)
        return "negative first offset";
    if (e->first_offset > e->last_offset)
        return "first offset after last offset";
    if (e->last_offset < base_offset)
        return "last offset below the segment's base offset";
    if (prev != NULL && e->last_offset <= prev->last_offset)
        return "last offset not increasing";
    if (e->last_stable_offset < 0)
        return "negative last stable offset";
    /* last_offset >= 0 here, so + 1 cannot overflow unless it is INT64_MAX. */
    if (e->last_offset < INT64_MAX && e->last_stable_offset > e->last_offset + 1)
        return "last stable offset above last offset + 1";
    return NULL;
}

/* X2, X8 and X3-X7 for raw entry bytes. */
static const char *raw_rule(const uint8_t *p, bool first, const struct txn_index_entry *prev,
                            int64_t base_offset, struct txn_index_entry *out)
{
    static const uint8_t zero[TXN_INDEX_ENTRY_BYTES];
    if (!first && memcmp(p, zero, TXN_INDEX_ENTRY_BYTES) == 0)
        return "zero entry (file extended but never written)";
    if (p[OFF_VERSION] != 0 || p[OFF_VERSION + 1] != TXN_INDEX_VERSION)
        return "unknown entry version";
    decode(p, out);
    return entry_rule(out, first ? NULL : prev, base_offset);
}

int txn_index_check(const uint8_t *buf, size_t len, int64_t base_offset, const char **why,
                    uint32_t *bad_entry)
{
    const char *reason = NULL;
    uint64_t bad = 0;
    uint64_t n = len / TXN_INDEX_ENTRY_BYTES;
    struct txn_index_entry prev = {0}, cur;
    if (len > (size_t)INT32_MAX) {
        reason = "larger than Kafka's 2 GiB index limit";
        bad = TXN_INDEX_ENTRIES_MAX;
        goto out;
    }
    /* Whole entries first, so that the entries before the one named are always valid. */
    for (uint64_t i = 0; i < n; i++) {
        reason = raw_rule(buf + i * TXN_INDEX_ENTRY_BYTES, i == 0, &prev, base_offset, &cur);
        if (reason != NULL) {
            bad = i;
            goto out;
        }
        prev = cur;
    }
    if (len % TXN_INDEX_ENTRY_BYTES != 0) {
        reason = "size is not a multiple of 34 bytes (partial entry at the end)";
        bad = n;
    }
out:
    if (why != NULL)
        *why = reason;
    if (bad_entry != NULL)
        *bad_entry = reason != NULL ? (uint32_t)bad : 0;
    return reason != NULL ? -EBADMSG : 0;
}

/* ---- chunked storage ---- */

static unsigned chunk_of(uint32_t i, uint32_t *slot)
{
    uint64_t q = (uint64_t)i / TXN_INDEX_CHUNK0_ENTRIES + 1;
    unsigned c = 63u - (unsigned)__builtin_clzll(q);
    uint64_t start = (uint64_t)TXN_INDEX_CHUNK0_ENTRIES * ((1ull << c) - 1);
    assert(c < TXN_INDEX_CHUNKS);
    assert(i >= start);
    *slot = (uint32_t)(i - start);
    assert(*slot < (TXN_INDEX_CHUNK0_ENTRIES << c));
    return c;
}

static const struct txn_index_entry *slot_at(const struct txn_index *idx, uint32_t i)
{
    uint32_t slot;
    unsigned c = chunk_of(i, &slot);
    struct txn_index_entry *chunk = atomic_load_explicit(&idx->chunks[c], memory_order_acquire);
    assert(chunk != NULL); /* XI2 */
    return &chunk[slot];
}

/* Stores entry i (i == count) into its slot, allocating its chunk if needed; not published. */
static int store_slot(struct txn_index *idx, uint32_t i, const struct txn_index_entry *e)
{
    uint32_t slot;
    unsigned c = chunk_of(i, &slot);
    struct txn_index_entry *chunk = atomic_load_explicit(&idx->chunks[c], memory_order_relaxed);
    if (chunk == NULL) {
        chunk = calloc((size_t)TXN_INDEX_CHUNK0_ENTRIES << c, sizeof(*chunk));
        if (chunk == NULL)
            return -ENOMEM;
        atomic_store_explicit(&idx->chunks[c], chunk, memory_order_release);
    }
    chunk[slot] = *e;
    return 0;
}

static void publish(struct txn_index *idx, uint32_t count)
{
    assert(count <= TXN_INDEX_ENTRIES_MAX); /* XI1 */
    atomic_store_explicit(&idx->count, count, memory_order_release);
}

static void reset_struct(struct txn_index *idx, int64_t base_offset)
{
    memset(idx, 0, sizeof(*idx));
    idx->fd = -1;
    idx->base_offset = base_offset;
    atomic_init(&idx->count, 0);
    for (int c = 0; c < TXN_INDEX_CHUNKS; c++)
        atomic_init(&idx->chunks[c], NULL);
}

static void free_chunks(struct txn_index *idx)
{
    for (int c = 0; c < TXN_INDEX_CHUNKS; c++) {
        free(atomic_load_explicit(&idx->chunks[c], memory_order_relaxed));
        atomic_store_explicit(&idx->chunks[c], NULL, memory_order_relaxed);
    }
}

/* Reads exactly len bytes at off (a short read means the file shrank under us: -EIO). */
static int pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        done += (size_t)n;
    }
    return 0;
}

/* Loads and checks every whole entry of the file; stops at the first bad one. */
static int load(struct txn_index *idx, uint64_t file_bytes, const char **reason, uint32_t *valid)
{
    uint8_t buf[READ_ENTRIES * TXN_INDEX_ENTRY_BYTES];
    uint64_t whole = file_bytes / TXN_INDEX_ENTRY_BYTES;
    struct txn_index_entry prev = {0}, cur;
    *reason = NULL;
    uint32_t n = 0;
    while (n < whole) {
        uint64_t batch = whole - n < READ_ENTRIES ? whole - n : READ_ENTRIES;
        int rc = pread_full(idx->fd, buf, (size_t)batch * TXN_INDEX_ENTRY_BYTES,
                            (uint64_t)n * TXN_INDEX_ENTRY_BYTES);
        if (rc)
            return rc;
        for (uint64_t k = 0; k < batch; k++) {
            *reason =
                raw_rule(buf + k * TXN_INDEX_ENTRY_BYTES, n == 0, &prev, idx->base_offset, &cur);
            if (*reason != NULL)
                goto out;
            rc = store_slot(idx, n, &cur);
            if (rc)
                return rc;
            prev = cur;
            n++;
        }
    }
    if (file_bytes % TXN_INDEX_ENTRY_BYTES != 0)
        *reason = "partial entry at the end (torn append)";
out:
    *valid = n;
    return 0;
}

int txn_index_open(struct txn_index *idx, const char *path, int64_t base_offset, unsigned flags,
                   const char **why, uint32_t *bad_entry)
{
    assert(idx != NULL);
    assert(path != NULL);
    reset_struct(idx, base_offset);
    if (why != NULL)
        *why = NULL;
    if (bad_entry != NULL)
        *bad_entry = 0;
    bool writable = (flags & TXN_INDEX_WRITABLE) != 0;
    bool repair = (flags & TXN_INDEX_REPAIR) != 0;
    bool memory = (flags & TXN_INDEX_MEMORY) != 0;
    if (base_offset < 0 ||
        (flags & ~(TXN_INDEX_WRITABLE | TXN_INDEX_REPAIR | TXN_INDEX_MEMORY)) != 0 ||
        (repair && !writable && !memory) || (memory && writable))
        return -EINVAL;
    idx->memory = memory;

    int fd = writable ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)
                      : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (!writable && errno == ENOENT)
            return 0;
        int err = -errno;
        reset_struct(idx, base_offset);
        return err;
    }
    idx->fd = fd;
    idx->writable = writable;
    int rc;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto err;
    }
    uint64_t file_bytes = (uint64_t)st.st_size;
    if (file_bytes > (uint64_t)INT32_MAX) {
        rc = -EFBIG;
        goto err;
    }
    const char *reason;
    uint32_t valid;
    rc = load(idx, file_bytes, &reason, &valid);
    if (rc)
        goto err;
    if (why != NULL)
        *why = reason;
    if (bad_entry != NULL)
        *bad_entry = reason != NULL ? valid : 0;
    uint64_t valid_bytes = (uint64_t)valid * TXN_INDEX_ENTRY_BYTES;
    if (reason != NULL) {
        if (!repair) {
            rc = -EBADMSG;
            goto err;
        }
        if (writable && ftruncate(fd, (off_t)valid_bytes) != 0) {
            rc = -errno;
            goto err;
        }
    }
    idx->file_bytes = valid_bytes;
    publish(idx, valid);
    if (!writable) {
        /* The entries are in memory now: a read-only index needs no descriptor. */
        close(fd);
        idx->fd = -1;
    }
    return 0;

err:
    free_chunks(idx);
    close(fd);
    reset_struct(idx, base_offset);
    return rc;
}

int txn_index_append(struct txn_index *idx, const struct txn_index_entry *entry)
{
    assert(idx != NULL);
    assert(entry != NULL);
    if (!idx->writable && !idx->memory)
        return -EROFS;
    assert(idx->staged == 0); /* a staged append is committed or dropped first */
    uint32_t n = atomic_load_explicit(&idx->count, memory_order_relaxed);
    assert(idx->file_bytes == (uint64_t)n * TXN_INDEX_ENTRY_BYTES); /* XI3 */
    const struct txn_index_entry *prev = n > 0 ? slot_at(idx, n - 1) : NULL;
    if (entry_rule(entry, prev, idx->base_offset) != NULL)
        return -EINVAL;
    if (n >= TXN_INDEX_ENTRIES_MAX)
        return -EFBIG;

    uint8_t buf[TXN_INDEX_ENTRY_BYTES];
    txn_index_entry_encode(buf, entry);
    /* The slot first (it may need memory), the file second, the count last (XI4). */
    int rc = store_slot(idx, n, entry);
    if (rc)
        return rc;
    size_t done = idx->memory ? sizeof(buf) : 0;
    while (done < sizeof(buf)) {
        ssize_t w =
            pwrite(idx->fd, buf + done, sizeof(buf) - done, (off_t)(idx->file_bytes + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            /* Cut a partial entry off so that the file stays whole entries; if even that fails,
             * the next open reports the torn tail. */
            if (done > 0)
                (void)!ftruncate(idx->fd, (off_t)idx->file_bytes);
            return rc;
        }
        done += (size_t)w;
    }
    idx->file_bytes += TXN_INDEX_ENTRY_BYTES;
    publish(idx, n + 1);
    return 0;
}

int txn_index_stage(struct txn_index *idx, const struct txn_index_entry *entry,
                    uint8_t out[TXN_INDEX_ENTRY_BYTES], uint64_t *file_offset_out)
{
    assert(idx != NULL);
    assert(entry != NULL);
    if (!idx->writable && !idx->memory)
        return -EROFS;
    uint32_t n = atomic_load_explicit(&idx->count, memory_order_relaxed);
    assert(idx->file_bytes == (uint64_t)n * TXN_INDEX_ENTRY_BYTES); /* I3 */
    uint32_t at = n + idx->staged;
    const struct txn_index_entry *prev = at > 0 ? slot_at(idx, at - 1) : NULL;
    if (entry_rule(entry, prev, idx->base_offset) != NULL)
        return -EINVAL;
    if (at >= TXN_INDEX_ENTRIES_MAX)
        return -EFBIG;
    int rc = store_slot(idx, at, entry); /* past count: readers never look there (I4) */
    if (rc)
        return rc;
    txn_index_entry_encode(out, entry);
    *file_offset_out = idx->file_bytes + (uint64_t)idx->staged * TXN_INDEX_ENTRY_BYTES;
    idx->staged++;
    return 0;
}

void txn_index_commit_staged(struct txn_index *idx)
{
    uint32_t n = atomic_load_explicit(&idx->count, memory_order_relaxed);
    assert((uint64_t)n + idx->staged <= TXN_INDEX_ENTRIES_MAX);
    idx->file_bytes += (uint64_t)idx->staged * TXN_INDEX_ENTRY_BYTES;
    publish(idx, n + idx->staged);
    idx->staged = 0;
    assert(idx->file_bytes == (uint64_t)atomic_load_explicit(&idx->count, memory_order_relaxed) *
                                  TXN_INDEX_ENTRY_BYTES); /* I3 */
}

void txn_index_drop_staged(struct txn_index *idx)
{
    if (idx->staged == 0)
        return;
    idx->staged = 0;
    /* The caller's writes of them may have landed: keep the file whole published entries. */
    if (idx->fd >= 0)
        (void)!ftruncate(idx->fd, (off_t)idx->file_bytes);
}

int txn_index_sync(struct txn_index *idx)
{
    assert(idx != NULL);
    if (!idx->writable)
        return 0;
    if (fdatasync(idx->fd) != 0)
        return -errno;
    return 0;
}

/* Number of entries with lastOffset < offset (lastOffset is strictly increasing, XI1). */
static uint32_t count_below(const struct txn_index *idx, uint32_t n, int64_t offset)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (slot_at(idx, mid)->last_offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int txn_index_truncate_to(struct txn_index *idx, int64_t offset)
{
    assert(idx != NULL);
    uint32_t n = atomic_load_explicit(&idx->count, memory_order_relaxed);
    uint32_t keep = count_below(idx, n, offset);
    assert(keep <= n);
    if (keep == n)
        return 0;
    if (idx->writable || idx->memory) {
        uint64_t keep_bytes = (uint64_t)keep * TXN_INDEX_ENTRY_BYTES;
        if (idx->writable && ftruncate(idx->fd, (off_t)keep_bytes) != 0)
            return -errno;
        idx->file_bytes = keep_bytes;
    }
    publish(idx, keep);
    return 0;
}

uint32_t txn_index_count(const struct txn_index *idx)
{
    assert(idx != NULL);
    return atomic_load_explicit(&idx->count, memory_order_acquire);
}

void txn_index_get(const struct txn_index *idx, uint32_t i, struct txn_index_entry *out)
{
    assert(idx != NULL);
    assert(out != NULL);
    assert(i < atomic_load_explicit(&idx->count, memory_order_acquire));
    *out = *slot_at(idx, i);
}

int txn_index_collect(const struct txn_index *idx, int64_t fetch_start, int64_t fetch_upper,
                      txn_index_collect_fn fn, void *ctx, bool *stop_out)
{
    assert(idx != NULL);
    assert(fn != NULL);
    assert(stop_out != NULL);
    *stop_out = false;
    if (fetch_upper <= fetch_start) {
        *stop_out = true;
        return 0;
    }
    uint32_t n = atomic_load_explicit(&idx->count, memory_order_acquire);
    /* Entries before `first` end below fetch_start, so they neither overlap the range nor can
     * stop the scan: by X7 their lastStableOffset <= lastOffset + 1 <= fetch_start <
     * fetch_upper. Skipping them keeps Kafka's answer exactly. */
    for (uint32_t i = count_below(idx, n, fetch_start); i < n; i++) {
        const struct txn_index_entry *e = slot_at(idx, i);
        assert(e->last_offset >= fetch_start);
        if (e->first_offset < fetch_upper) {
            int rc = fn(ctx, e);
            if (rc)
                return rc;
        }
        if (e->last_stable_offset >= fetch_upper) {
            *stop_out = true;
            return 0;
        }
    }
    return 0;
}

int txn_index_seal(struct txn_index *idx)
{
    if (!idx->writable)
        return 0;
    if (fdatasync(idx->fd) != 0)
        return -errno;
    close(idx->fd);
    idx->fd = -1;
    idx->writable = false;
    return 0;
}

void txn_index_close(struct txn_index *idx)
{
    if (idx == NULL)
        return;
    free_chunks(idx);
    if (idx->fd >= 0)
        close(idx->fd);
    reset_struct(idx, idx->base_offset);
}
