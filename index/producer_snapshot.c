/*
 * producer_snapshot.c — the producer-state snapshot file `<offset>.snapshot` (docs/format.md
 * part D, normative), byte-for-byte Kafka's ProducerStateManager.writeSnapshot/readSnapshot
 * (storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateManager.java).
 *
 * This module owns the bytes of one snapshot and the files that hold them: encoding, the
 * validity rules below, the atomic replace, the bounded read and the directory listing. It
 * never interprets the entries (engine/producer_state does), never includes engine/, and never
 * trusts a byte it read: a damaged file is -EBADMSG with a reason, never an assert.
 *
 *     All integers big-endian, two's complement.
 *     byte  size  field
 *     0     2     version                 i16  = 1
 *     2     4     crc                     u32  CRC-32C of bytes [6, end): count and entries
 *     6     4     count                   i32  number of entries (Kafka's ArrayOf length)
 *     10    46*n  entries, entry i at 10 + 46 * i:
 *       +0   8    producerId              i64
 *       +8   2    epoch                   i16
 *       +10  4    lastSequence            i32  -1 when no batch is retained
 *       +14  8    lastOffset              i64  -1 when no batch is retained
 *       +22  4    offsetDelta             i32  lastOffset - first offset of that batch
 *       +26  8    timestamp               i64  ms; the last append's max timestamp
 *       +34  4    coordinatorEpoch        i32  -1 when no marker was seen
 *       +38  8    currentTxnFirstOffset   i64  -1 when no transaction is open
 *
 * Validity (decode checks them in this order and reports the first failure; encode refuses
 * entries that break S6..S12 with -EINVAL, so every file written here decodes):
 *   S1.  len >= 10 (the header).
 *   S2.  version == 1.
 *   S3.  0 <= count <= PRODUCER_SNAPSHOT_ENTRIES_MAX.
 *   S4.  len == 10 + 46 * count exactly (Kafka ignores trailing bytes; it never writes any).
 *   S5.  crc == CRC-32C(bytes [6, len)).
 *   S6.  producerId >= 0.
 *   S7.  epoch >= 0.
 *   S8.  lastOffset >= -1 and lastSequence >= -1, and both are -1 or neither is (Kafka writes
 *        -1, -1, 0 together for a producer whose batch metadata is empty).
 *   S9.  offsetDelta >= 0; == 0 when lastOffset == -1; <= lastOffset otherwise (the batch's
 *        first offset, lastOffset - offsetDelta, is a real offset).
 *   S10. coordinatorEpoch >= -1.
 *   S11. currentTxnFirstOffset >= -1.
 *   S12. no producerId appears twice (Kafka writes a map; a reader would keep only one).
 * timestamp is not constrained: a CreateTime timestamp may be any i64.
 *
 * Costs: encode and decode O(n log n) (the duplicate check sorts 16 bytes per entry, the
 * only allocation); read allocates the file once; list is one readdir and a sort.
 */
#include "index/producer_snapshot.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/crc32c.h"
#include "io/io.h"

/* Kafka: VERSION_OFFSET 0, CRC_OFFSET 2, PRODUCER_ENTRIES_OFFSET 6 (where the CRC starts). */
#define OFF_VERSION   0
#define OFF_CRC       2
#define OFF_COUNT     6
#define OFF_ENTRIES   10
#define CRC_FROM      OFF_COUNT
#define E_PRODUCER_ID 0
#define E_EPOCH       8
#define E_LAST_SEQ    10
#define E_LAST_OFFSET 14
#define E_DELTA       22
#define E_TIMESTAMP   26
#define E_COORD_EPOCH 34
#define E_TXN_FIRST   38
#define E_END         46

_Static_assert(PRODUCER_SNAPSHOT_HEADER_BYTES == OFF_ENTRIES, "header is 10 bytes");
_Static_assert(PRODUCER_SNAPSHOT_ENTRY_BYTES == E_END, "entry is 46 bytes");
_Static_assert(E_END == 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8, "entry fields add up to 46");
_Static_assert(PRODUCER_SNAPSHOT_ENTRIES_MAX <= (uint32_t)INT32_MAX, "count is an i32");
_Static_assert(sizeof(size_t) >= 8, "snapshot sizes are computed in size_t");

/* "<20 digits>.snapshot" and the temporary name beside it. */
#define NAME_DIGITS 20
#define SUFFIX      ".snapshot"
#define SUFFIX_LEN  (sizeof(SUFFIX) - 1)
#define TMP_SUFFIX  ".tmp"

static uint64_t load_be(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

static void store_be(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = bytes; i > 0; i--) {
        p[i - 1] = (uint8_t)v;
        v >>= 8;
    }
}

/* Two's-complement reinterpretation without implementation-defined conversions. */
static int64_t load_i64(const uint8_t *p)
{
    uint64_t u = load_be(p, 8);
    int64_t v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static int32_t load_i32(const uint8_t *p)
{
    uint32_t u = (uint32_t)load_be(p, 4);
    int32_t v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static int16_t load_i16(const uint8_t *p)
{
    uint16_t u = (uint16_t)load_be(p, 2);
    int16_t v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static void store_i64(uint8_t *p, int64_t v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    store_be(p, u, 8);
}

static void store_i32(uint8_t *p, int32_t v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    store_be(p, u, 4);
}

static void store_i16(uint8_t *p, int16_t v)
{
    uint16_t u;
    memcpy(&u, &v, sizeof(u));
    store_be(p, u, 2);
}

size_t producer_snapshot_size(uint32_t n)
{
    return (size_t)OFF_ENTRIES + (size_t)n * E_END;
}

static void entry_load(const uint8_t *p, struct producer_snapshot_entry *e)
{
    e->producer_id = load_i64(p + E_PRODUCER_ID);
    e->epoch = load_i16(p + E_EPOCH);
    e->last_sequence = load_i32(p + E_LAST_SEQ);
    e->last_offset = load_i64(p + E_LAST_OFFSET);
    e->offset_delta = load_i32(p + E_DELTA);
    e->timestamp_ms = load_i64(p + E_TIMESTAMP);
    e->coordinator_epoch = load_i32(p + E_COORD_EPOCH);
    e->current_txn_first_offset = load_i64(p + E_TXN_FIRST);
}

static void entry_store(uint8_t *p, const struct producer_snapshot_entry *e)
{
    store_i64(p + E_PRODUCER_ID, e->producer_id);
    store_i16(p + E_EPOCH, e->epoch);
    store_i32(p + E_LAST_SEQ, e->last_sequence);
    store_i64(p + E_LAST_OFFSET, e->last_offset);
    store_i32(p + E_DELTA, e->offset_delta);
    store_i64(p + E_TIMESTAMP, e->timestamp_ms);
    store_i32(p + E_COORD_EPOCH, e->coordinator_epoch);
    store_i64(p + E_TXN_FIRST, e->current_txn_first_offset);
}

/* S6..S11 for one entry: NULL, or a static reason and the offending field's offset in the
 * entry. */
static const char *entry_check(const struct producer_snapshot_entry *e, size_t *field_out)
{
    if (e->producer_id < 0) {
        *field_out = E_PRODUCER_ID;
        return "negative producer id (S6)";
    }
    if (e->epoch < 0) {
        *field_out = E_EPOCH;
        return "negative producer epoch (S7)";
    }
    if (e->last_offset < -1) {
        *field_out = E_LAST_OFFSET;
        return "last offset below -1 (S8)";
    }
    if (e->last_sequence < -1) {
        *field_out = E_LAST_SEQ;
        return "last sequence below -1 (S8)";
    }
    if ((e->last_sequence == -1) != (e->last_offset == -1)) {
        *field_out = E_LAST_SEQ;
        return "last sequence and last offset disagree on a retained batch (S8)";
    }
    if (e->offset_delta < 0) {
        *field_out = E_DELTA;
        return "negative offset delta (S9)";
    }
    if (e->last_offset == -1 && e->offset_delta != 0) {
        *field_out = E_DELTA;
        return "offset delta without a retained batch (S9)";
    }
    if (e->last_offset >= 0 && e->offset_delta > e->last_offset) {
        *field_out = E_DELTA;
        return "offset delta larger than last offset (S9)";
    }
    if (e->coordinator_epoch < -1) {
        *field_out = E_COORD_EPOCH;
        return "coordinator epoch below -1 (S10)";
    }
    if (e->current_txn_first_offset < -1) {
        *field_out = E_TXN_FIRST;
        return "current transaction first offset below -1 (S11)";
    }
    return NULL;
}

struct id_slot {
    int64_t producer_id;
    uint32_t entry;
};

static int id_slot_cmp(const void *a, const void *b)
{
    const struct id_slot *x = a;
    const struct id_slot *y = b;
    if (x->producer_id != y->producer_id)
        return x->producer_id < y->producer_id ? -1 : 1;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* S12: 0 when ids[0, n) are distinct; 1 with *dup_entry the smallest i such that some j < i
 * has the same id; -ENOMEM. Sorts ids in place. */
static int find_duplicate(struct id_slot *ids, uint32_t n, uint32_t *dup_entry)
{
    qsort(ids, n, sizeof(*ids), id_slot_cmp);
    bool found = false;
    uint32_t first = 0;
    for (uint32_t i = 1; i < n; i++) {
        /* Within a run of one id the entries ascend, so ids[i] is that id's first repeat when
         * ids[i - 1] opens the run. */
        if (ids[i].producer_id == ids[i - 1].producer_id &&
            (i == 1 || ids[i - 2].producer_id != ids[i].producer_id)) {
            assert(ids[i].entry > ids[i - 1].entry);
            if (!found || ids[i].entry < first)
                first = ids[i].entry;
            found = true;
        }
    }
    if (found)
        *dup_entry = first;
    return found ? 1 : 0;
}

int producer_snapshot_encode(const struct producer_snapshot_entry *e, uint32_t n, uint8_t *buf,
                             size_t cap, size_t *len_out)
{
    assert(e != NULL || n == 0);
    assert(buf != NULL);
    assert(len_out != NULL);
    if (n > PRODUCER_SNAPSHOT_ENTRIES_MAX)
        return -EINVAL;
    size_t len = producer_snapshot_size(n);
    if (cap < len)
        return -ENOSPC;
    for (uint32_t i = 0; i < n; i++) {
        size_t field;
        if (entry_check(&e[i], &field) != NULL)
            return -EINVAL;
    }
    if (n > 1) {
        struct id_slot *ids = malloc((size_t)n * sizeof(*ids));
        if (ids == NULL)
            return -ENOMEM;
        for (uint32_t i = 0; i < n; i++)
            ids[i] = (struct id_slot){.producer_id = e[i].producer_id, .entry = i};
        uint32_t dup;
        int rc = find_duplicate(ids, n, &dup);
        free(ids);
        if (rc != 0)
            return -EINVAL;
    }

    store_i16(buf + OFF_VERSION, PRODUCER_SNAPSHOT_VERSION);
    store_i32(buf + OFF_COUNT, (int32_t)n);
    for (uint32_t i = 0; i < n; i++)
        entry_store(buf + OFF_ENTRIES + (size_t)i * E_END, &e[i]);
    /* As Kafka: the CRC field is filled last, over everything after it. */
    store_be(buf + OFF_CRC, crc32c(0, buf + CRC_FROM, len - CRC_FROM), 4);
    *len_out = len;

    /* Read back what was written: header fields and the last entry. */
    assert(load_i16(buf + OFF_VERSION) == PRODUCER_SNAPSHOT_VERSION);
    assert(load_i32(buf + OFF_COUNT) == (int32_t)n);
    if (n > 0) {
        struct producer_snapshot_entry back;
        entry_load(buf + OFF_ENTRIES + (size_t)(n - 1) * E_END, &back);
        assert(back.producer_id == e[n - 1].producer_id);
        assert(back.current_txn_first_offset == e[n - 1].current_txn_first_offset);
    }
    return 0;
}

int producer_snapshot_decode(const uint8_t *buf, size_t len, producer_snapshot_entry_fn fn,
                             void *ctx, const char **why, size_t *bad_offset)
{
    assert(buf != NULL || len == 0);
    const char *reason = NULL;
    size_t bad = 0;
    int rc = 0;
    struct id_slot *ids = NULL;
    uint32_t n = 0;

    if (len < OFF_ENTRIES) { /* S1 */
        reason = "shorter than the 10-byte header (S1)";
        bad = len;
        goto out;
    }
    int16_t version = load_i16(buf + OFF_VERSION);
    if (version != PRODUCER_SNAPSHOT_VERSION) { /* S2 */
        reason = "unknown version (S2)";
        bad = OFF_VERSION;
        goto out;
    }
    int32_t count = load_i32(buf + OFF_COUNT);
    if (count < 0) { /* S3 */
        reason = "negative entry count (S3)";
        bad = OFF_COUNT;
        goto out;
    }
    if ((uint32_t)count > PRODUCER_SNAPSHOT_ENTRIES_MAX) {
        reason = "more entries than PRODUCER_SNAPSHOT_ENTRIES_MAX (S3)";
        bad = OFF_COUNT;
        goto out;
    }
    n = (uint32_t)count;
    size_t want = producer_snapshot_size(n);
    if (len < want) { /* S4 */
        reason = "fewer bytes than the entry count needs (S4)";
        bad = len;
        goto out;
    }
    if (len > want) {
        reason = "trailing bytes after the last entry (S4)";
        bad = want;
        goto out;
    }
    uint32_t crc = (uint32_t)load_be(buf + OFF_CRC, 4);
    if (crc != crc32c(0, buf + CRC_FROM, len - CRC_FROM)) { /* S5 */
        reason = "CRC-32C mismatch (S5)";
        bad = OFF_CRC;
        goto out;
    }
    /* From here every read is inside [0, len): len == 10 + 46 * n. */
    for (uint32_t i = 0; i < n; i++) { /* S6..S11 */
        struct producer_snapshot_entry e;
        size_t at = OFF_ENTRIES + (size_t)i * E_END;
        entry_load(buf + at, &e);
        size_t field = 0;
        reason = entry_check(&e, &field);
        if (reason != NULL) {
            bad = at + field;
            goto out;
        }
    }
    if (n > 1) { /* S12 */
        ids = malloc((size_t)n * sizeof(*ids));
        if (ids == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        for (uint32_t i = 0; i < n; i++) {
            size_t at = OFF_ENTRIES + (size_t)i * E_END;
            ids[i] = (struct id_slot){.producer_id = load_i64(buf + at), .entry = i};
        }
        uint32_t dup = 0;
        if (find_duplicate(ids, n, &dup) != 0) {
            assert(dup < n);
            reason = "duplicate producer id (S12)";
            bad = OFF_ENTRIES + (size_t)dup * E_END + E_PRODUCER_ID;
            goto out;
        }
    }
    if (fn != NULL) {
        for (uint32_t i = 0; i < n && rc == 0; i++) {
            struct producer_snapshot_entry e;
            entry_load(buf + OFF_ENTRIES + (size_t)i * E_END, &e);
            rc = fn(ctx, &e);
        }
    }
out:
    free(ids);
    if (reason != NULL) {
        assert(rc == 0);
        assert(bad <= len);
        rc = -EBADMSG;
    }
    if (why != NULL)
        *why = reason;
    if (bad_offset != NULL)
        *bad_offset = reason != NULL ? bad : 0;
    return rc;
}

/* ---- files ---------------------------------------------------------------------------- */

/* "<dir>/<20 digits>.snapshot<extra>" into out[PATH_MAX]. */
static int snapshot_path(char *out, const char *dir, int64_t offset, const char *extra)
{
    assert(offset >= 0);
    int w = snprintf(out, PATH_MAX, "%s/%020lld" SUFFIX "%s", dir, (long long)offset, extra);
    if (w < 0 || w >= PATH_MAX)
        return -ENAMETOOLONG;
    return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        assert(w > 0 || len - done == 0);
        done += (size_t)w;
    }
    return 0;
}

int producer_snapshot_write(struct io_fault_plan *faults, const char *dir, int64_t offset,
                            const struct producer_snapshot_entry *e, uint32_t n)
{
    assert(dir != NULL);
    if (offset < 0 || n > PRODUCER_SNAPSHOT_ENTRIES_MAX)
        return -EINVAL;
    char path[PATH_MAX];
    char tmp[PATH_MAX];
    int rc = snapshot_path(path, dir, offset, "");
    if (rc == 0)
        rc = snapshot_path(tmp, dir, offset, TMP_SUFFIX);
    if (rc != 0)
        return rc;

    size_t cap = producer_snapshot_size(n);
    uint8_t *buf = malloc(cap);
    if (buf == NULL)
        return -ENOMEM;
    size_t len = 0;
    rc = producer_snapshot_encode(e, n, buf, cap, &len);
    if (rc != 0)
        goto err_free;
    assert(len == cap);

    int fd = io_file_create(faults, tmp, O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) {
        rc = fd;
        goto err_free;
    }
    rc = write_all(fd, buf, len);
    if (rc == 0)
        rc = io_fdatasync(faults, fd);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc != 0)
        goto err_unlink;
    rc = io_rename(faults, tmp, path);
    if (rc != 0)
        goto err_unlink;
    free(buf);
    /* The rename is durable only once the directory is. */
    return io_fsync_dir(faults, dir);

err_unlink:
    (void)io_unlink(faults, tmp);
err_free:
    free(buf);
    return rc;
}

int producer_snapshot_read(const char *path, producer_snapshot_entry_fn fn, void *ctx,
                           const char **why, size_t *bad_offset)
{
    assert(path != NULL);
    if (why != NULL)
        *why = NULL;
    if (bad_offset != NULL)
        *bad_offset = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc;
    uint8_t *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    const char *reason = NULL;
    if (!S_ISREG(st.st_mode))
        reason = "not a regular file";
    else if ((uint64_t)st.st_size > producer_snapshot_size(PRODUCER_SNAPSHOT_ENTRIES_MAX))
        reason = "larger than a snapshot of PRODUCER_SNAPSHOT_ENTRIES_MAX entries";
    if (reason != NULL) {
        if (why != NULL)
            *why = reason;
        rc = -EBADMSG;
        goto out;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size > 0 ? size : 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    /* Read at most the size fstat saw; a file that shrank meanwhile decodes as what was read. */
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    assert(got <= size);
    rc = producer_snapshot_decode(buf, got, fn, ctx, why, bad_offset);
out:
    free(buf);
    close(fd);
    return rc;
}

/* Offset named by `name` when it is exactly "<20 digits>.snapshot" with a value <= INT64_MAX. */
static bool parse_name(const char *name, int64_t *offset_out)
{
    if (strlen(name) != NAME_DIGITS + SUFFIX_LEN)
        return false;
    if (memcmp(name + NAME_DIGITS, SUFFIX, SUFFIX_LEN) != 0)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < NAME_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        unsigned d = (unsigned)(name[i] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    assert(v <= (uint64_t)INT64_MAX);
    *offset_out = (int64_t)v;
    return true;
}

static int offset_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int producer_snapshot_list(const char *dir, int64_t **offsets_out, uint32_t *count_out)
{
    assert(dir != NULL);
    assert(offsets_out != NULL);
    assert(count_out != NULL);
    *offsets_out = NULL;
    *count_out = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return -errno;
    int64_t *offsets = NULL;
    size_t count = 0;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (de == NULL) {
            rc = -errno; /* 0 at the end of the directory */
            break;
        }
        int64_t offset;
        if (!parse_name(de->d_name, &offset))
            continue;
        if (count == UINT32_MAX) {
            rc = -EOVERFLOW;
            break;
        }
        if (count == cap) {
            size_t grown = cap > 0 ? cap * 2 : 16;
            int64_t *p = realloc(offsets, grown * sizeof(*p));
            if (p == NULL) {
                rc = -ENOMEM;
                break;
            }
            offsets = p;
            cap = grown;
        }
        offsets[count++] = offset;
    }
    closedir(d);
    if (rc != 0) {
        free(offsets);
        return rc;
    }
    if (count > 0)
        qsort(offsets, count, sizeof(*offsets), offset_cmp);
    for (size_t i = 1; i < count; i++)
        assert(offsets[i - 1] < offsets[i]); /* names are unique and parse_name is injective */
    *offsets_out = offsets;
    *count_out = (uint32_t)count;
    return 0;
}

static int unlink_one(struct io_fault_plan *faults, const char *dir, int64_t offset)
{
    char path[PATH_MAX];
    int rc = snapshot_path(path, dir, offset, "");
    if (rc != 0)
        return rc;
    rc = io_unlink(faults, path);
    return rc == -ENOENT ? 0 : rc;
}

int producer_snapshot_remove(struct io_fault_plan *faults, const char *dir, int64_t offset)
{
    assert(dir != NULL);
    if (offset < 0)
        return -EINVAL;
    int rc = unlink_one(faults, dir, offset);
    return rc != 0 ? rc : io_fsync_dir(faults, dir);
}

/* Removes the listed snapshots with (offset < bound) == below, then fsyncs dir once. */
static int remove_side(struct io_fault_plan *faults, const char *dir, int64_t bound, bool below)
{
    assert(dir != NULL);
    int64_t *offsets;
    uint32_t count;
    int rc = producer_snapshot_list(dir, &offsets, &count);
    if (rc != 0)
        return rc;
    uint32_t removed = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        if ((offsets[i] < bound) != below)
            continue;
        rc = unlink_one(faults, dir, offsets[i]);
        removed++;
    }
    free(offsets);
    if (removed > 0) {
        int sync_rc = io_fsync_dir(faults, dir);
        if (rc == 0)
            rc = sync_rc;
    }
    return rc;
}

int producer_snapshot_remove_before(struct io_fault_plan *faults, const char *dir, int64_t offset)
{
    return remove_side(faults, dir, offset, true);
}

int producer_snapshot_remove_from(struct io_fault_plan *faults, const char *dir, int64_t offset)
{
    return remove_side(faults, dir, offset, false);
}
