/*
 * leader_epoch.c — the leader-epoch checkpoint (leader_epoch.h; docs/format.md A.10, normative).
 * The list's rules (Kafka's LeaderEpochFileCache: assign, truncateFromEnd, endOffsetFor), the
 * file's bytes and its atomic replacement. Never touches a segment.
 *
 * Layout (all integers big-endian):
 *
 *   offset size field
 *        0    4 magic u32          0x52544c45 ("RTLE")
 *        4    2 version u16        1
 *        6    4 crc u32            CRC-32C of bytes [10, end)
 *       10    8 truncate_to i64    -1, or the log end a truncation in progress cuts to
 *       18    4 count u32          entries that follow
 *       22   12 entry × count      epoch i32, start_offset i64
 *
 * Validity (what leader_epoch_parse enforces; anything else is RT_E_CORRUPT naming the byte
 * offset of the first bad field):
 *   LE1  at least 22 bytes; magic and version as above; count <= 65536 and the file exactly
 *        22 + 12 × count bytes; the CRC matches.
 *   LE2  truncate_to >= -1.
 *   LE3  every epoch >= 0 and every start_offset >= 0; both strictly increasing entry to entry.
 *   LE4  with truncate_to >= 0, every start_offset < truncate_to (the intent is stored with the
 *        list already cut, partition.h RL4).
 */
#include "leader_epoch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "fsutil.h"
#include "index/byte_order.h"
#include "index/crc32c.h"
#include "ringtail.h"

_Static_assert(LEADER_EPOCH_HEADER_BYTES == 10 + 8 + 4, "header: magic, version, crc, trunc, n");
_Static_assert(LEADER_EPOCH_ENTRY_BYTES == 4 + 8, "entry: epoch, start offset");

void leader_epoch_init(struct leader_epoch_cache *c)
{
    c->entries = NULL;
    c->count = 0;
    c->capacity = 0;
    c->truncate_to = -1;
}

void leader_epoch_free(struct leader_epoch_cache *c)
{
    free(c->entries);
    leader_epoch_init(c);
}

int32_t leader_epoch_latest(const struct leader_epoch_cache *c)
{
    return c->count ? c->entries[c->count - 1].epoch : -1;
}

int leader_epoch_assign(struct leader_epoch_cache *c, int32_t epoch, int64_t start_offset)
{
    if (epoch < 0 || start_offset < 0)
        return RT_E_INVALID_ARGUMENT;
    if (c->count > 0) {
        const struct leader_epoch_entry *last = &c->entries[c->count - 1];
        if (epoch == last->epoch)
            return 0;
        if (epoch < last->epoch || start_offset < last->start_offset)
            return RT_E_INVALID_ARGUMENT;
        if (start_offset == last->start_offset)
            c->count--; /* the latest epoch wrote nothing: the new one starts there (LE3) */
    }
    if (c->count == LEADER_EPOCH_ENTRIES_MAX)
        return RT_E_INVALID_ARGUMENT;
    if (c->count == c->capacity) {
        uint32_t cap = c->capacity ? c->capacity * 2 : 8;
        struct leader_epoch_entry *e = realloc(c->entries, (size_t)cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        c->entries = e;
        c->capacity = cap;
    }
    c->entries[c->count].epoch = epoch;
    c->entries[c->count].start_offset = start_offset;
    c->count++;
    return 1;
}

bool leader_epoch_truncate_from_end(struct leader_epoch_cache *c, int64_t end_offset)
{
    uint32_t n = c->count;
    while (c->count > 0 && c->entries[c->count - 1].start_offset >= end_offset)
        c->count--;
    return c->count != n;
}

void leader_epoch_end_offset(const struct leader_epoch_cache *c, int32_t epoch, int64_t log_end,
                             int64_t *end_offset, int32_t *found_epoch)
{
    *end_offset = -1;
    *found_epoch = -1;
    if (epoch < 0 || c->count == 0)
        return;
    if (epoch == c->entries[c->count - 1].epoch) {
        *found_epoch = epoch;
        *end_offset = log_end;
        return;
    }
    uint32_t higher = 0; /* the first entry whose epoch is above the one asked */
    while (higher < c->count && c->entries[higher].epoch <= epoch)
        higher++;
    if (higher == c->count)
        return; /* above the latest: undefined, as Kafka */
    *end_offset = c->entries[higher].start_offset;
    *found_epoch = higher == 0 ? epoch : c->entries[higher - 1].epoch;
}

static int bad(const char **why, size_t *bad_offset, const char *what, size_t at)
{
    *why = what;
    *bad_offset = at;
    return RT_E_CORRUPT;
}

int leader_epoch_parse(const uint8_t *buf, size_t len, struct leader_epoch_cache *out,
                       const char **why, size_t *bad_offset)
{
    leader_epoch_init(out);
    if (len < LEADER_EPOCH_HEADER_BYTES) /* LE1 */
        return bad(why, bad_offset, "leader-epoch-checkpoint file is shorter than its header", len);
    if (be32_load(buf) != LEADER_EPOCH_MAGIC)
        return bad(why, bad_offset, "bad magic", 0);
    if (be16_load(buf + 4) != LEADER_EPOCH_VERSION)
        return bad(why, bad_offset, "unknown version", 4);
    uint32_t count = be32_load(buf + 18);
    if (count > LEADER_EPOCH_ENTRIES_MAX)
        return bad(why, bad_offset, "more entries than 65536", 18);
    if (len != LEADER_EPOCH_HEADER_BYTES + (size_t)count * LEADER_EPOCH_ENTRY_BYTES)
        return bad(why, bad_offset, "file size disagrees with its entry count", 18);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, len - 10))
        return bad(why, bad_offset, "CRC mismatch", 6);
    int64_t trunc = u64_as_i64(be64_load(buf + 10));
    if (trunc < -1) /* LE2 */
        return bad(why, bad_offset, "truncation offset below -1", 10);
    if (count > 0) {
        out->entries = malloc((size_t)count * sizeof(*out->entries));
        if (!out->entries)
            return -ENOMEM;
        out->capacity = count;
    }
    for (uint32_t i = 0; i < count; i++) {
        size_t at = LEADER_EPOCH_HEADER_BYTES + (size_t)i * LEADER_EPOCH_ENTRY_BYTES;
        int32_t epoch = (int32_t)be32_load(buf + at);
        int64_t start = u64_as_i64(be64_load(buf + at + 4));
        int rc = 0;
        if (epoch < 0) /* LE3 */
            rc = bad(why, bad_offset, "negative epoch", at);
        else if (start < 0)
            rc = bad(why, bad_offset, "negative start offset", at + 4);
        else if (i > 0 && epoch <= out->entries[i - 1].epoch)
            rc = bad(why, bad_offset, "epochs not increasing", at);
        else if (i > 0 && start <= out->entries[i - 1].start_offset)
            rc = bad(why, bad_offset, "start offsets not increasing", at + 4);
        else if (trunc >= 0 && start >= trunc) /* LE4 */
            rc = bad(why, bad_offset, "entry at or past the truncation in progress", at + 4);
        if (rc) {
            leader_epoch_free(out);
            return rc;
        }
        out->entries[i].epoch = epoch;
        out->entries[i].start_offset = start;
        out->count = i + 1;
    }
    out->truncate_to = trunc;
    return 0;
}

int leader_epoch_serialise(const struct leader_epoch_cache *c, uint8_t **buf_out, size_t *len_out)
{
    size_t len = LEADER_EPOCH_HEADER_BYTES + (size_t)c->count * LEADER_EPOCH_ENTRY_BYTES;
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    be32_store(buf, LEADER_EPOCH_MAGIC);
    be16_store(buf + 4, LEADER_EPOCH_VERSION);
    be64_store(buf + 10, (uint64_t)c->truncate_to);
    be32_store(buf + 18, c->count);
    for (uint32_t i = 0; i < c->count; i++) {
        size_t at = LEADER_EPOCH_HEADER_BYTES + (size_t)i * LEADER_EPOCH_ENTRY_BYTES;
        be32_store(buf + at, (uint32_t)c->entries[i].epoch);
        be64_store(buf + at + 4, (uint64_t)c->entries[i].start_offset);
    }
    be32_store(buf + 6, crc32c(0, buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int leader_epoch_load(const char *partition_dir, struct leader_epoch_cache *out, const char **why,
                      size_t *bad_offset)
{
    leader_epoch_init(out);
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", partition_dir, LEADER_EPOCH_FILE) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    size_t max =
        LEADER_EPOCH_HEADER_BYTES + (size_t)LEADER_EPOCH_ENTRIES_MAX * LEADER_EPOCH_ENTRY_BYTES;
    int rc = fs_read_file(path, &buf, &len, max);
    if (rc == -EFBIG)
        return bad(why, bad_offset, "leader-epoch-checkpoint file is too large", max);
    if (rc)
        return rc;
    rc = leader_epoch_parse(buf, len, out, why, bad_offset);
    free(buf);
    return rc;
}

int leader_epoch_store(struct io_fault_plan *faults, const char *partition_dir,
                       const struct leader_epoch_cache *c)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = leader_epoch_serialise(c, &buf, &len);
    if (rc)
        return rc;
    rc = fs_replace_file(faults, partition_dir, LEADER_EPOCH_TMP_FILE, LEADER_EPOCH_FILE, buf, len);
    free(buf);
    return rc;
}
