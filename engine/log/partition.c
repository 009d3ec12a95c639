/*
 * partition.c — the segment list of one topic-partition, its rolls, retention, and the
 * published watermarks (see partition.h for the invariants PA1-PA4 and the locking rules).
 *
 * Costs: opening reads the directory once and scans only the newest segment after a crash;
 * a roll costs one fdatasync of the old segment plus creating and preallocating the next (or
 * renaming the recycled or pre-written file into place, PA6/PA7, and extending it);
 * readers pay one short mutex hold and a binary search to find their segment.
 */
#include "partition.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleaner_checkpoint.h"
#include "error.h"
#include "fsutil.h"
#include "index/producer_snapshot.h"
#include "io/io.h"
#include "leader_epoch.h"
#include "log_start.h"
#include "meta.h"
#include "recovery_point.h"
#include "segment_cache.h"
#include "segment_check.h"
#include "segment_maps.h"
#include "segment_pool.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Parses "<20 digits>.<ext>" into the base offset; false for any other name. */
static bool parse_segment_name(const char *name, const char *ext, int64_t *base_out)
{
    size_t n = strlen(name), e = strlen(ext);
    if (n != 20 + 1 + e || name[20] != '.' || strcmp(name + 21, ext) != 0)
        return false;
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        if (v > (INT64_MAX - (name[i] - '0')) / 10)
            return false;
        v = v * 10 + (name[i] - '0');
    }
    *base_out = v;
    return true;
}

static int segments_push(struct partition *p, struct segment *seg)
{
    if (p->segment_count == p->segment_capacity) {
        uint32_t cap = p->segment_capacity ? p->segment_capacity * 2 : 16;
        struct segment **s = realloc(p->segments, (size_t)cap * sizeof(*s));
        if (!s)
            return -ENOMEM;
        p->segments = s;
        p->segment_capacity = cap;
    }
    p->segments[p->segment_count++] = seg;
    return 0;
}

/* Collects the base offsets of `<base>.log` files; removes orphans: index files of every kind
 * (.index, .timeindex, .txnindex) whose log is gone (a crash during retention or compaction
 * leaves them) and `*.tmp` / `*.deleted` / `*.cleaned` (A.9 CL6) leftovers of an interrupted
 * write, deletion or clean — unless read_only (then nothing is removed, and a missing directory
 * is a partition without segments). */
static int list_segments(const char *dir, bool read_only, bool *next_kept, int64_t **bases_out,
                         uint32_t *count_out)
{
    DIR *d = opendir(dir);
    if (!d && read_only && errno == ENOENT) {
        *bases_out = NULL;
        *count_out = 0;
        return 0;
    }
    if (!d)
        return error_set(-errno, "%s: cannot open directory: %s", dir, strerror(errno));
    int64_t *bases = NULL;
    uint32_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t base;
        if (!parse_segment_name(de->d_name, "log", &base))
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *b = realloc(bases, (size_t)cap * sizeof(*b));
            if (!b) {
                rc = -ENOMEM;
                break;
            }
            bases = b;
        }
        bases[count++] = base;
    }
    if (rc == 0) {
        rewinddir(d);
        if (count > 1)
            qsort(bases, count, sizeof(*bases), cmp_i64);
        while ((de = readdir(d)) != NULL) {
            int64_t base;
            char path[SEGMENT_PATH_BYTES];
            size_t len = strlen(de->d_name);
            size_t cl = sizeof(CLEANER_CLEANED_SUFFIX) - 1;
            bool leftover =
                (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) ||
                (len > 8 && strcmp(de->d_name + len - 8, ".deleted") == 0) ||
                (len > cl && strcmp(de->d_name + len - cl, CLEANER_CLEANED_SUFFIX) == 0);
            if (leftover && next_kept && strcmp(de->d_name, SEGMENT_POOL_NEXT_NAME) == 0) {
                *next_kept = true; /* SP9: the pre-writer unlinks it, off the open's path */
                continue;
            }
            if (leftover) {
                /* A snapshot or rewrite that never got renamed, or a deletion cut short. */
                if (!read_only &&
                    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
                    unlink(path);
                continue;
            }
            if (!parse_segment_name(de->d_name, "index", &base) &&
                !parse_segment_name(de->d_name, "timeindex", &base) &&
                !parse_segment_name(de->d_name, "txnindex", &base))
                continue;
            if (count > 0 && bsearch(&base, bases, count, sizeof(*bases), cmp_i64))
                continue;
            if (!read_only &&
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
                unlink(path);
        }
    }
    closedir(d);
    if (rc) {
        free(bases);
        return rc;
    }
    *bases_out = bases;
    *count_out = count;
    return 0;
}

/* ---- open transactions and the aborted-transaction index ---- */

static int open_txn_add(struct partition *p, int64_t pid, int64_t first_offset,
                        int64_t segment_base, uint64_t position)
{
    if (p->open_txn_count == p->open_txn_capacity) {
        uint32_t cap = p->open_txn_capacity ? p->open_txn_capacity * 2 : 8;
        struct open_txn *a = realloc(p->open_txns, (size_t)cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        p->open_txns = a;
        p->open_txn_capacity = cap;
    }
    /* Transactions start in offset order, so this is an append but for snapshot loads. */
    uint32_t i = p->open_txn_count;
    while (i > 0 && p->open_txns[i - 1].first_offset > first_offset) {
        p->open_txns[i] = p->open_txns[i - 1];
        i--;
    }
    p->open_txns[i] = (struct open_txn){.producer_id = pid,
                                        .first_offset = first_offset,
                                        .segment_base = segment_base,
                                        .position = position};
    p->open_txn_count++;
    return 0;
}

static void open_txn_remove(struct partition *p, int64_t pid)
{
    for (uint32_t i = 0; i < p->open_txn_count; i++) {
        if (p->open_txns[i].producer_id != pid)
            continue;
        memmove(p->open_txns + i, p->open_txns + i + 1,
                (size_t)(p->open_txn_count - i - 1) * sizeof(*p->open_txns));
        p->open_txn_count--;
        return;
    }
}

int partition_each_open_txn(const struct partition *p,
                            int (*fn)(void *ctx, const struct partition *p,
                                      const struct open_txn *t, int16_t epoch),
                            void *ctx)
{
    for (uint32_t i = 0; i < p->open_txn_count; i++) {
        const struct open_txn *t = &p->open_txns[i];
        const struct producer_entry *pe = producer_table_find(&p->producers, t->producer_id);
        /* An open transaction keeps its producer in the table (never evicted or expired
         * while open); -1 would mean the two disagree, and callers then leave it alone. */
        int rc = fn(ctx, p, t, pe ? pe->epoch : -1);
        if (rc)
            return rc;
    }
    return 0;
}

/* The ABORT entry for a transaction ended by the marker h (Kafka's CompletedTxn + the LSO
 * after it: the first offset of the oldest transaction still open, else the marker + 1). */
static struct txn_index_entry abort_entry(const struct partition *p, const struct batch_header *h,
                                          int64_t txn_first_offset)
{
    struct txn_index_entry e = {.producer_id = h->producer_id,
                                .first_offset =
                                    txn_first_offset >= 0 ? txn_first_offset : h->base_offset,
                                .last_offset = h->base_offset};
    e.last_stable_offset = p->open_txn_count ? p->open_txns[0].first_offset : h->base_offset + 1;
    return e;
}

int partition_reserve_txn(struct partition *p)
{
    if (p->open_txn_count < p->open_txn_capacity)
        return 0;
    uint32_t cap = p->open_txn_capacity ? p->open_txn_capacity * 2 : 8;
    struct open_txn *a = realloc(p->open_txns, (size_t)cap * sizeof(*a));
    if (!a)
        return -ENOMEM;
    p->open_txns = a;
    p->open_txn_capacity = cap;
    return 0;
}

int partition_place_txn(struct partition *p, const struct batch_header *h, uint64_t position,
                        bool txn_started, int64_t txn_first_offset, int marker_type,
                        struct partition_txn_write *w)
{
    assert(h->base_offset >= p->active->base_offset);
    assert(position >= p->active->size_bytes);
    w->staged = false;
    if (txn_started) {
        assert(p->open_txn_count < p->open_txn_capacity); /* partition_reserve_txn */
        int rc = open_txn_add(p, h->producer_id, h->base_offset, p->active->base_offset, position);
        assert(rc == 0);
        return rc;
    }
    if (!batch_is_control(h))
        return 0;
    open_txn_remove(p, h->producer_id);
    if (marker_type != CONTROL_ABORT)
        return 0;
    struct txn_index_entry e = abort_entry(p, h, txn_first_offset);
    int rc = txn_index_stage(&p->active->txns, &e, w->bytes, &w->file_offset);
    if (rc)
        return error_set(rc, "%s: staging the aborted-transaction index entry: %s", p->dir,
                         strerror(-rc));
    w->fd = p->active->txns.fd;
    w->staged = true;
    return 0;
}

/* ---- producer state: snapshots and replay ---- */

static int load_snapshot_entry(void *ctx, const struct producer_snapshot_entry *se)
{
    struct partition *p = ctx;
    struct producer_entry e;
    memset(&e, 0, sizeof(e));
    e.producer_id = se->producer_id;
    e.epoch = se->epoch;
    e.coordinator_epoch = se->coordinator_epoch;
    e.current_txn_first_offset = se->current_txn_first_offset;
    e.last_timestamp_ms = se->timestamp_ms;
    if (se->last_sequence >= 0 && se->last_offset >= 0) {
        /* Kafka's snapshots keep only the last batch: the window refills from later appends. */
        e.batch_count = 1;
        int64_t first = (int64_t)se->last_sequence - se->offset_delta;
        e.batches[0].first_seq = (int32_t)(first < 0 ? first + INT32_MAX + 1 : first);
        e.batches[0].last_seq = se->last_sequence;
        e.batches[0].first_offset = se->last_offset - se->offset_delta;
        e.batches[0].offset_delta = se->offset_delta;
        e.batches[0].timestamp_ms = se->timestamp_ms;
    }
    return producer_table_load(&p->producers, &e);
}

struct snapshot_export {
    struct producer_snapshot_entry *entries;
    uint32_t count;
};

static int export_entry(void *ctx, const struct producer_entry *e)
{
    struct snapshot_export *x = ctx;
    struct producer_snapshot_entry *se = &x->entries[x->count++];
    memset(se, 0, sizeof(*se));
    se->producer_id = e->producer_id;
    se->epoch = e->epoch < 0 ? 0 : e->epoch;
    se->coordinator_epoch = e->coordinator_epoch;
    se->current_txn_first_offset = e->current_txn_first_offset;
    se->timestamp_ms = e->last_timestamp_ms;
    if (e->batch_count > 0) {
        const struct producer_batch *b = &e->batches[e->batch_count - 1];
        se->last_sequence = b->last_seq;
        se->last_offset = b->first_offset + b->offset_delta;
        se->offset_delta = b->offset_delta;
    } else {
        se->last_sequence = -1;
        se->last_offset = -1;
        se->offset_delta = 0;
    }
    return 0;
}

int partition_snapshot_producers(struct partition *p)
{
    if (p->frozen) /* PA5: the table may hold batches that were reported failed */
        return error_set(RT_E_IO_FAILED, "%s: a write round failed: no snapshot until reopen",
                         p->dir);
    if (p->snapshot_offset == p->next_offset)
        return 0;
    struct snapshot_export x = {0};
    x.entries = calloc(p->producers.count ? p->producers.count : 1, sizeof(*x.entries));
    if (!x.entries)
        return -ENOMEM;
    producer_table_each(&p->producers, export_entry, &x);
    int rc =
        producer_snapshot_write(p->cfg.segment.faults, p->dir, p->next_offset, x.entries, x.count);
    free(x.entries);
    if (rc)
        return error_set(rc, "%s/%020" PRId64 ".snapshot: cannot write: %s", p->dir, p->next_offset,
                         strerror(-rc));
    int64_t previous = p->snapshot_offset;
    p->snapshot_offset = p->next_offset;
    p->snapshots_written++;
    if (previous >= 0)
        (void)producer_snapshot_remove_before(p->cfg.segment.faults, p->dir, previous); /* 2 kept */
    return 0;
}

/* One replayed producer batch: the same state changes the live append path makes. ABORT
 * markers at or after rebuild_txns_from re-create their .txnindex entries (the newest segment's
 * index was cut there by recovery); earlier ones are already in their sealed indexes. */
static int replay_batch(struct partition *p, struct segment *seg, const struct batch_header *h,
                        uint64_t pos, size_t size, int64_t rebuild_txns_from)
{
    if (!batch_is_control(h)) {
        const struct producer_entry *pe = producer_table_find(&p->producers, h->producer_id);
        bool had_txn = pe && pe->current_txn_first_offset >= 0;
        /* baseSequence -1: a coordinator-origin batch (offset commits), no sequence state. */
        int rc = h->base_sequence < 0 ? producer_table_update_coordinator(&p->producers, h)
                                      : producer_table_update(&p->producers, h);
        if (rc)
            return rc;
        if (batch_is_transactional(h) && !had_txn)
            return open_txn_add(p, h->producer_id, h->base_offset, seg->base_offset, pos);
        return 0;
    }
    int type = control_batch_type(seg->map + pos, size);
    int32_t coordinator_epoch = -1;
    {
        struct record_view rv;
        const char *why = NULL;
        enum control_type t;
        if (record_decode(seg->map + pos + BATCH_HEADER_BYTES, seg->map + pos + size, &rv, &why) >
            0)
            (void)control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, &t,
                                       &coordinator_epoch, &why);
    }
    int64_t txn_first = -1;
    int rc = producer_table_end_txn(&p->producers, h, coordinator_epoch, &txn_first);
    if (rc)
        return rc;
    open_txn_remove(p, h->producer_id);
    if (type == CONTROL_ABORT && h->base_offset >= rebuild_txns_from) {
        struct txn_index_entry e = abort_entry(p, h, txn_first);
        rc = txn_index_append(&seg->txns, &e);
        if (rc)
            return error_set(rc, "%s: rebuilding the aborted-transaction index: %s", seg->log_path,
                             strerror(-rc));
    }
    return 0;
}

/* After loading and replay: where each still-open transaction's first batch is. */
static int locate_open_txns(struct partition *p)
{
    for (uint32_t i = 0; i < p->open_txn_count; i++) {
        struct open_txn *t = &p->open_txns[i];
        struct segment *seg = NULL;
        int rc = partition_segment_for(p, t->first_offset, &seg);
        if (rc) {
            /* Retention removed its start: pin the LSO at the log start instead. */
            t->first_offset = p->segments[0]->base_offset;
            t->segment_base = p->segments[0]->base_offset;
            t->position = 0;
            continue;
        }
        uint64_t pos = 0;
        rc = segment_find_batch(seg, t->first_offset, seg->size_bytes, &pos);
        t->segment_base = seg->base_offset;
        t->position = rc == 0 ? pos : 0;
        segment_unref(seg);
    }
    return 0;
}

/* Replays the producer batches of one mapped (pinned) segment from `from` on. */
static int replay_segment(struct partition *p, struct segment *seg, int64_t from,
                          struct partition_recovery *rec, int64_t rebuild_txns_from)
{
    uint64_t pos = 0;
    if (from > seg->base_offset && segment_find_batch(seg, from, seg->size_bytes, &pos) != 0)
        return 0;
    while (pos < seg->size_bytes) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, seg->size_bytes - pos, &why);
        if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
            return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
        if (h.producer_id >= 0 && h.base_offset >= from) {
            int rc = replay_batch(p, seg, &h, pos, (size_t)size, rebuild_txns_from);
            if (rc)
                return rc;
            rec->batches_replayed++;
        }
        pos += (uint64_t)size;
    }
    return 0;
}

/* Replays producer batches from `from` to the log end into the producer table. */
static int replay_producers(struct partition *p, int64_t from, struct partition_recovery *rec,
                            int64_t rebuild_txns_from)
{
    for (uint32_t i = 0; i < p->segment_count; i++) {
        struct segment *seg = p->segments[i];
        if (seg->next_offset <= from)
            continue;
        int rc = segment_pin(seg); /* SG6, SG8: mapped, and kept so until unpinned */
        if (rc)
            return rc;
        rc = replay_segment(p, seg, from, rec, rebuild_txns_from);
        segment_unpin(seg);
        if (rc)
            return rc;
    }
    return 0;
}

/* Loads the newest sound snapshot at or below the log end, then replays the log after it. A
 * corrupt snapshot is reported (recovery counters) and removed, and an older one (or a full
 * replay) is used instead. */
static int load_producers(struct partition *p, struct partition_recovery *rec)
{
    int rc =
        producer_table_init(&p->producers, p->cfg.producers_max, p->cfg.is_named, p->cfg.named_ctx);
    if (rc)
        return rc;
    int64_t log_start = p->segments[0]->base_offset;
    int64_t from = log_start;
    rec->snapshot_offset = -1;
    int64_t *offsets = NULL;
    uint32_t n = 0;
    rc = producer_snapshot_list(p->dir, &offsets, &n);
    if (rc)
        return error_set(rc, "%s: cannot list snapshots: %s", p->dir, strerror(-rc));
    for (uint32_t k = n; k-- > 0;) {
        if (offsets[k] > p->next_offset) {
            /* Past the log end (the tail was truncated): it describes batches that are gone. */
            if (!p->cfg.segment.read_only)
                (void)producer_snapshot_remove(p->cfg.segment.faults, p->dir, offsets[k]);
            continue;
        }
        char path[SEGMENT_PATH_BYTES + 64];
        snprintf(path, sizeof(path), "%s/%020" PRId64 ".snapshot", p->dir, offsets[k]);
        const char *why = NULL;
        size_t bad = 0;
        rc = producer_snapshot_read(path, load_snapshot_entry, p, &why, &bad);
        if (rc == 0) {
            rec->snapshot_offset = offsets[k];
            p->snapshot_offset = offsets[k];
            from = offsets[k] > log_start ? offsets[k] : log_start;
            /* The older ones are not loaded but are checked as verify checks them: a damaged
             * one is removed now rather than reported on every verify (defect 10). */
            for (uint32_t old = 0; old < k; old++) {
                snprintf(path, sizeof(path), "%s/%020" PRId64 ".snapshot", p->dir, offsets[old]);
                if (producer_snapshot_read(path, NULL, NULL, &why, &bad) == -EBADMSG) {
                    rec->snapshots_rejected++;
                    if (!p->cfg.segment.read_only)
                        (void)producer_snapshot_remove(p->cfg.segment.faults, p->dir, offsets[old]);
                }
            }
            break;
        }
        if (rc != -EBADMSG && rc != -ENOENT) {
            free(offsets);
            return error_set(rc, "%s: cannot read: %s", path, strerror(-rc));
        }
        rec->snapshots_rejected++;
        error_set(RT_E_CORRUPT, "%s: offset %zu: %s (removed; using an older snapshot or the log)",
                  path, bad, why ? why : "unreadable");
        if (!p->cfg.segment.read_only)
            (void)producer_snapshot_remove(p->cfg.segment.faults, p->dir, offsets[k]);
        producer_table_free(&p->producers);
        rc = producer_table_init(&p->producers, p->cfg.producers_max, p->cfg.is_named,
                                 p->cfg.named_ctx);
        if (rc) {
            free(offsets);
            return rc;
        }
    }
    free(offsets);
    /* Transactions open at the snapshot join the open list; replay adds and ends the rest. */
    for (uint32_t i = 0; i < p->producers.capacity; i++) {
        const struct producer_entry *e = p->producers.slots[i];
        if (e && e->current_txn_first_offset >= 0) {
            rc = open_txn_add(p, e->producer_id, e->current_txn_first_offset, -1, 0);
            if (rc)
                return rc;
        }
    }
    /* After a crash the newest segment's .txnindex is rebuilt from `from` on (it was cut to
     * its valid prefix at open; entries past `from` are dropped and replayed). */
    int64_t rebuild_txns_from = INT64_MAX;
    if (rec->recovered) {
        struct segment *newest = p->segments[p->segment_count - 1];
        rebuild_txns_from = from > newest->base_offset ? from : newest->base_offset;
        rc = txn_index_truncate_to(&newest->txns, rebuild_txns_from);
        if (rc)
            return error_set(rc, "%s: cutting the aborted-transaction index: %s", newest->log_path,
                             strerror(-rc));
    }
    rc = replay_producers(p, from, rec, rebuild_txns_from);
    if (rc)
        return rc;
    return locate_open_txns(p);
}

/* Rebuilds the .txnindex of every segment from index `from` on, walking the whole log from
 * its start so each aborted transaction's first offset is known (SC4 in segment_check.c). */
static int rebuild_txn_indexes(struct partition *p, uint32_t from)
{
    for (uint32_t i = from; i < p->segment_count; i++) {
        struct segment *seg = p->segments[i];
        char path[SEGMENT_PATH_BYTES];
        snprintf(path, sizeof(path), "%.*stxnindex", (int)(strlen(seg->log_path) - 3),
                 seg->log_path);
        bool read_only = p->cfg.segment.read_only; /* rebuilt in memory, nothing written */
        if (read_only ? !seg->txns.memory : !seg->txns.writable) {
            txn_index_close(&seg->txns);
            int rc = txn_index_open(
                &seg->txns, path, seg->base_offset,
                (read_only ? TXN_INDEX_MEMORY : TXN_INDEX_WRITABLE) | TXN_INDEX_REPAIR, NULL, NULL);
            if (rc)
                return error_set(rc, "%s: cannot rebuild: %s", path, strerror(-rc));
        }
        int rc = txn_index_truncate_to(&seg->txns, INT64_MIN);
        if (rc)
            return error_set(rc, "%s: cannot rebuild: %s", path, strerror(-rc));
    }
    struct txn_walk w;
    txn_walk_init(&w, p->segments[0]->base_offset);
    if (p->cleaned_end > 0)
        w.complete = false; /* A.9: the cleaner dropped transactions' first batches */
    int rc = 0;
    for (uint32_t i = 0; i < p->segment_count && rc == 0; i++) {
        struct segment *seg = p->segments[i];
        rc = segment_pin(seg); /* SG6, SG8 */
        if (rc)
            break;
        rc = txn_walk_rebuild(&w, seg->map, seg->size_bytes, &seg->txns, i >= from);
        segment_unpin(seg);
        if (rc == 0 && i >= from)
            rc = segment_sync_txn_index(seg); /* SG4 in segment.c */
        if (rc)
            rc = error_set(rc, "%s: rebuilding the aborted-transaction index: %s", seg->log_path,
                           strerror(-rc));
    }
    txn_walk_free(&w);
    if (rc == 0 && !p->cfg.segment.read_only)
        rc = fs_fsync_dir(p->cfg.segment.faults, p->dir);
    return rc;
}

/* SC4 for every segment the open did not trust, the check verify makes too: a .txnindex that is
 * missing, short, torn or wrong would let read_committed serve aborted records, so it is rebuilt
 * from the log — unless that segment's log fails a CRC (SC6: then the walk, not the index, may be
 * wrong, and txn_walk_compare keeps this index and every later one). Segments before `from` were
 * trusted on the recovery point's word (PA8: checked when sealed, their files unchanged since),
 * so the walk starts at `from`, knowing nothing of transactions open before it (OV3: first
 * offsets and LSOs are then only bounded above, as for a log that starts above 0); a disagreement
 * rebuilds from the log start as before.
 * Cost: one walk of every batch header from `from` on; none after a clean shutdown. */
static int check_txn_indexes(struct partition *p, uint32_t from, struct partition_recovery *rec)
{
    if (from >= p->segment_count)
        return 0;
    struct txn_walk w;
    txn_walk_init(&w, p->segments[from]->base_offset);
    if (p->cleaned_end > 0)
        w.complete = false; /* A.9: the cleaner dropped transactions' first batches */
    uint32_t bad = p->segment_count;
    int rc = 0;
    for (uint32_t i = from; i < p->segment_count; i++) {
        struct segment *seg = p->segments[i];
        rc = segment_pin(seg); /* SG6: a trusted one after an untrusted one is lazy; SG8 */
        if (rc)
            break;
        rc = txn_walk_compare(&w, seg->map, seg->size_bytes, &seg->txns, NULL, NULL);
        segment_unpin(seg);
        if (rc == -EBADMSG) {
            bad = i;
            rc = 0;
            break;
        }
        if (rc)
            break;
    }
    txn_walk_free(&w);
    if (rc)
        return rc;
    if (bad < p->segment_count) {
        rec->indexes_rebuilt += p->segment_count - bad;
        return rebuild_txn_indexes(p, bad);
    }
    return 0;
}

/* ---- the recovery point (PA8; docs/format.md A.7) ---- */

/* A sealed segment may be named by the recovery point once checked (check: run SC1-SC3 now, as
 * at a seal; otherwise the caller just checked it) and stamped. Stamps are stat(2) calls. */
static void vouch_sealed(struct partition *p, struct segment *seg, bool check)
{
    if (seg->vouched || !seg->sealed)
        return;
    /* PA18: the prefix the open (or a wake) vouched for is not walked again. */
    bool checked = seg == p->active && p->active_checked_bytes != UINT64_MAX &&
                   p->active_checked_bytes <= seg->size_bytes;
    if (check) {
        if (segment_pin(seg) != 0) /* SG8: a dormant one's mappings may have been released */
            return;
        uint64_t from = checked ? p->active_checked_bytes : 0;
        bool sound =
            segment_check_sealed(seg, from, checked ? p->active_checked_next : seg->base_offset);
        p->seal_bytes_walked += seg->size_bytes - from;
        segment_unpin(seg);
        if (!sound)
            return; /* never named: the next open checks it (and refuses what is wrong) */
    }
    if (recovery_stamp_segment(p->dir, seg->base_offset, seg->stamps) != 0)
        return;
    seg->vouched = true;
}

/* An active segment an open trusted and nothing was appended to: its bytes are what the stamps
 * describe (the open's preallocation was trimmed away by the seal), only their mtimes moved.
 * Gives each file its recorded mtime back; true when the stamps then match again. */
static bool restore_stamps(struct partition *p, const struct segment *seg,
                           const struct recovery_stamp want[RECOVERY_FILES])
{
    static const char *const exts[RECOVERY_FILES] = {"log", "index", "timeindex", "txnindex"};
    struct recovery_stamp now[RECOVERY_FILES];
    if (recovery_stamp_segment(p->dir, seg->base_offset, now) != 0)
        return false;
    for (int f = 0; f < RECOVERY_FILES; f++) {
        char path[SEGMENT_PATH_BYTES];
        if (meta_segment_file(path, sizeof(path), p->dir, seg->base_offset, exts[f]) != 0)
            return false;
        if (f == RECOVERY_TXNINDEX && want[f].mtime_ns == RECOVERY_STAMP_MISSING &&
            now[f].mtime_ns != RECOVERY_STAMP_MISSING && now[f].bytes == 0) {
            /* Created empty by the active open: a missing .txnindex is an empty one (E.3). */
            if (io_unlink(p->cfg.segment.faults, path) != 0)
                return false;
            now[f] = want[f];
        }
        if (now[f].bytes != want[f].bytes || (now[f].mtime_ns == RECOVERY_STAMP_MISSING) !=
                                                 (want[f].mtime_ns == RECOVERY_STAMP_MISSING))
            return false; /* the bytes differ: record it anew */
        if (now[f].mtime_ns == want[f].mtime_ns || want[f].mtime_ns == RECOVERY_STAMP_MISSING)
            continue;
        struct timespec ts[2] = {
            {.tv_nsec = UTIME_OMIT},
            {.tv_sec = want[f].mtime_ns / 1000000000, .tv_nsec = want[f].mtime_ns % 1000000000}};
        if (want[f].mtime_ns < 0 || utimensat(AT_FDCWD, path, ts, 0) != 0)
            return false;
    }
    return recovery_stamp_segment(p->dir, seg->base_offset, now) == 0 &&
           recovery_stamps_equal(now, want);
}

/* Stores the recovery point: the longest run of vouched segments ending at the newest sealed
 * one (every segment of the run is sealed, PA2, so the run is dense, L1). The checkpoint is a
 * cache of checks: a failure to store it costs the next open a walk, nothing else, so callers
 * may ignore the result. */
static int store_recovery_point_tail(struct partition *p, const struct recovery_tail *tail);

static int store_recovery_point(struct partition *p)
{
    return store_recovery_point_tail(p, NULL);
}

/* store_recovery_point, with the active segment's tail (PA9) when tail is set. */
static int store_recovery_point_tail(struct partition *p, const struct recovery_tail *tail)
{
    if (p->cfg.segment.read_only)
        return 0;
    uint32_t end = p->segment_count;
    while (end > 0 && !p->segments[end - 1]->sealed)
        end--;
    uint32_t start = end;
    while (start > 0 && p->segments[start - 1]->vouched)
        start--;
    struct recovery_point rp = {.count = end - start};
    rp.segments = calloc(rp.count ? rp.count : 1, sizeof(*rp.segments));
    if (!rp.segments)
        return -ENOMEM;
    for (uint32_t i = 0; i < rp.count; i++) {
        const struct segment *seg = p->segments[start + i];
        struct recovery_segment *e = &rp.segments[i];
        assert(seg->sealed);
        e->base_offset = seg->base_offset;
        e->next_offset = seg->next_offset;
        e->max_timestamp = atomic_load_explicit(&seg->max_timestamp_ms, memory_order_relaxed);
        e->max_timestamp_offset = seg->max_timestamp_offset;
        memcpy(e->files, seg->stamps, sizeof(e->files));
    }
    rp.offset = rp.count ? rp.segments[rp.count - 1].next_offset : 0;
    if (tail && (rp.count == 0 || tail->base_offset == rp.offset)) {
        rp.has_tail = true;
        rp.tail = *tail;
        rp.offset = tail->next_offset;
    }
    int rc = recovery_point_store(p->cfg.segment.faults, p->dir, &rp);
    free(rp.segments);
    if (rc == 0)
        p->recovery_points_written++;
    return rc;
}

int partition_vouch_all(struct partition *p, bool vouch)
{
    for (uint32_t i = 0; i < p->segment_count && vouch; i++)
        vouch_sealed(p, p->segments[i], false);
    return store_recovery_point(p);
}

int partition_wake(struct partition *p)
{
    struct segment *old = p->active;
    if (!old->sealed || p->cfg.segment.read_only)
        return 0;
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    assert(!p->round_touched);
    assert(old->next_offset == p->next_offset);
    struct segment_trust tr = {
        .next_offset = old->next_offset,
        .max_timestamp = atomic_load_explicit(&old->max_timestamp_ms, memory_order_relaxed),
        .max_timestamp_offset = old->max_timestamp_offset,
    };
    struct segment *seg = NULL;
    struct segment_recovery srec;
    /* MM1: out of the budget of mapped segments before its object leaves the list (a reader
     * holding it maps it again from the grown file: SG6). */
    segment_maps_forget(old);
    int rc = segment_open(&seg, p->dir, old->base_offset, &p->cfg.segment, true, false, &tr, &srec);
    if (rc) {
        segment_maps_attach(p->cfg.segment.maps, old); /* MM1: stays dormant, releasable */
        return rc; /* nothing changed: the partition stays as it was, dormant */
    }
    assert(!seg->sealed && seg->size_bytes == old->size_bytes);
    pthread_mutex_lock(&p->segments_lock);
    p->segments[p->segment_count - 1] = seg;
    pthread_mutex_unlock(&p->segments_lock);
    p->active = seg;
    /* As a clean open that trusted it: the close's seal walks only what is appended now. A
     * segment a sleep (PA15) could not vouch for is walked whole at its next seal instead. */
    p->active_trusted_bytes = old->vouched ? seg->size_bytes : UINT64_MAX;
    p->active_trusted_next = seg->next_offset;
    p->active_checked_bytes = p->active_trusted_bytes; /* PA18 */
    p->active_checked_next = seg->next_offset;
    memcpy(p->active_trusted_stamps, old->stamps, sizeof(p->active_trusted_stamps));
    partition_publish(p);
    segment_unref(old); /* a fetch still holding it keeps its mapping */
    p->wakes++;
    return 0;
}

int partition_sleep(struct partition *p)
{
    struct segment *a = p->active;
    if (!a || a->sealed || p->cfg.segment.read_only || p->frozen || p->round_touched ||
        p->rolling || p->unsynced)
        return 0; /* PA15: nothing in flight, nothing published unsynced */
    assert(a->next_offset == p->next_offset);
    p->rolling = true; /* PA12: a failure is recovered as a failed roll's seal is (by a roll) */
    int rc = segment_seal(a); /* fdatasync, trim, indexes sealed: its descriptors closed */
    if (rc)
        return rc;
    p->rolling = false;
    vouch_sealed(p, a, true); /* PA8: walks only what was appended since it was trusted */
    segment_maps_attach(p->cfg.segment.maps, a); /* MM1: its writer is done with it */
    if (a->vouched && store_recovery_point(p) == 0) {
        /* Its entry now names it (PA14 after a crash, trust after a clean close). */
    }
    p->tail_base = -1; /* the stored file has no tail any more */
    p->sleeps++;
    return 0;
}

int partition_checkpoint_tail(struct partition *p, bool force)
{
    if (p->frozen || p->cfg.segment.read_only || !p->active || p->active->sealed)
        return 0; /* PA5: a frozen partition's state may describe failed batches */
    struct segment *a = p->active;
    assert(!p->round_touched);
    if (a->size_bytes == 0)
        return 0;
    uint64_t since = a->size_bytes;
    if (p->tail_base == a->base_offset) {
        if (p->tail_bytes == a->size_bytes)
            return 0; /* nothing appended since the last one */
        since = a->size_bytes - p->tail_bytes;
    }
    if (!force && since < p->cfg.checkpoint_interval_bytes)
        return 0;
    int rc = segment_sync_prefix(a);
    if (rc == 0)
        rc = partition_snapshot_producers(p); /* so the replay after a crash starts here too */
    if (rc)
        return rc;
    struct recovery_tail t = {
        .base_offset = a->base_offset,
        .bytes = a->size_bytes,
        .next_offset = a->next_offset,
        .max_timestamp = atomic_load_explicit(&a->max_timestamp_ms, memory_order_relaxed),
        .max_timestamp_offset = a->max_timestamp_offset,
        .last_batch_position = a->last_batch_position,
        .index_entries = a->oidx.file.entries,
        .timeindex_entries = a->tidx.file.entries,
    };
    assert(t.next_offset == p->next_offset && t.next_offset > t.base_offset);
    rc = store_recovery_point_tail(p, &t);
    if (rc)
        return rc;
    p->tail_base = a->base_offset;
    p->tail_bytes = a->size_bytes;
    p->tail_checkpoints++;
    return 0;
}

/* What the recovery point says of the segment at `base` of an open: trust (filled, returned)
 * when it names the segment with the stamps its files have now. The newest segment is trusted
 * only after a clean shutdown (after a crash it is scanned: R1-R3). */
static const struct segment_trust *trust_for(struct partition *p, const struct recovery_point *rp,
                                             int64_t base, bool newest, bool clean,
                                             struct segment_trust *tr,
                                             struct partition_recovery *rec)
{
    memset(tr, 0, sizeof(*tr));
    if (newest && !clean && rp->has_tail && rp->tail.base_offset == base) {
        /* PA9: after a crash the newest segment is scanned from its recorded tail on. */
        tr->next_offset = rp->tail.next_offset;
        tr->max_timestamp = rp->tail.max_timestamp;
        tr->max_timestamp_offset = rp->tail.max_timestamp_offset;
        tr->bytes = rp->tail.bytes;
        tr->last_batch_position = rp->tail.last_batch_position;
        tr->index_entries = rp->tail.index_entries;
        tr->timeindex_entries = rp->tail.timeindex_entries;
        return tr;
    }
    const struct recovery_segment *e = recovery_point_find(rp, base);
    struct recovery_stamp cur[RECOVERY_FILES];
    if (e && newest && !clean && !rp->has_tail && e == &rp->segments[rp->count - 1] &&
        e->files[RECOVERY_LOG].bytes > 0 && recovery_stamp_segment(p->dir, base, cur) == 0 &&
        (cur[RECOVERY_LOG].bytes > e->files[RECOVERY_LOG].bytes ||
         recovery_stamps_equal(cur, e->files))) {
        /* PA14: a sealed entry for what is now the newest segment (it was sealed by a clean close
         * or made dormant, PA11, then woken and appended to before the crash): its files as
         * they were stamped are a tail — whole checked batches, fdatasynced by the seal, and
         * exactly the index entries the trimmed indexes held. The scan starts past them once
         * their first and last batch and index entries check out (tail_holds finds the last
         * batch by a walk from the last indexed one); otherwise from 0, as before. Only when
         * the log grew past them (a wake extends it to capacity) or nothing changed at all: a
         * file of the stamped size with another mtime was changed in place, and is scanned. */
        tr->next_offset = e->next_offset;
        tr->max_timestamp = e->max_timestamp;
        tr->max_timestamp_offset = e->max_timestamp_offset;
        tr->bytes = e->files[RECOVERY_LOG].bytes;
        tr->last_batch_position = UINT64_MAX; /* found by tail_holds' walk */
        tr->index_entries = (uint32_t)(e->files[RECOVERY_INDEX].bytes / OFFSET_INDEX_ENTRY_BYTES);
        tr->timeindex_entries =
            (uint32_t)(e->files[RECOVERY_TIMEINDEX].bytes / TIME_INDEX_ENTRY_BYTES);
        return tr;
    }
    if (!e || (newest && !clean))
        return NULL;
    struct recovery_stamp now[RECOVERY_FILES];
    if (recovery_stamp_segment(p->dir, base, now) != 0)
        return NULL;
    if (!recovery_stamps_equal(now, e->files)) {
        rec->recovery_point_mismatches++;
        if (now[RECOVERY_LOG].bytes < e->files[RECOVERY_LOG].bytes)
            rec->recovery_point_past_end++; /* it claims bytes the file no longer holds */
        return NULL;
    }
    tr->next_offset = e->next_offset;
    tr->max_timestamp = e->max_timestamp;
    tr->max_timestamp_offset = e->max_timestamp_offset;
    tr->sized = true; /* SG6: the stamps hold now, so the sizes are the files' */
    for (int f = 0; f < RECOVERY_FILES; f++)
        tr->file_bytes[f] = e->files[f].bytes;
    return tr;
}

/* Loads the partition's recovery point for an open; counts a damaged or missing one (a partition
 * with nothing sealed yet, fresh or never closed cleanly, has none to miss). */
static void load_recovery_point(struct partition *p, uint32_t segments, bool clean,
                                struct recovery_point *rp, struct partition_recovery *rec)
{
    memset(rp, 0, sizeof(*rp));
    if (segments == 0)
        return;
    const char *why = NULL;
    size_t bad = 0;
    int rc = recovery_point_load(p->dir, rp, &why, &bad);
    if (rc == -ENOENT && (segments > 1 || clean))
        rec->recovery_points_missing++;
    else if (rc && rc != -ENOENT)
        rec->recovery_points_damaged++; /* never trusted: every segment is checked */
}

/* After an open: entries of segments the directory does not hold (at or past its log start) or
 * a recovery point past the log's end claim more than the files hold. */
static void note_past_end(const struct partition *p, const struct recovery_point *rp,
                          struct partition_recovery *rec)
{
    if (rp->count == 0)
        return;
    int64_t log_start = p->segments[0]->base_offset;
    if (rp->offset > p->segments[p->segment_count - 1]->next_offset)
        rec->recovery_point_past_end++;
    for (uint32_t i = 0; i < rp->count; i++) {
        int64_t base = rp->segments[i].base_offset;
        if (base < log_start)
            continue; /* retention removed it: stale, not wrong */
        uint32_t lo = 0, hi = p->segment_count;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (p->segments[mid]->base_offset < base)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == p->segment_count || p->segments[lo]->base_offset != base) {
            rec->recovery_point_past_end++;
            break;
        }
    }
}

/* PA13: the log start DeleteRecords stored, capped at the log end (a crash under a sync mode
 * other than always may have lost records below it). A damaged file is reported and ignored: the
 * oldest segment's base rules, as before any DeleteRecords. */
/* RL7: removes every file of the old log (segments and their indexes, producer snapshots, the
 * leader-epoch checkpoint, the recovery point, the cleaner checkpoint) and stores the log start
 * `offset`; the intent (LOG_RESTART_FILE) stays. Idempotent, so an open may run it again. */
static int restart_clear(struct partition *p, int64_t offset)
{
    struct io_fault_plan *faults = p->cfg.segment.faults;
    DIR *d = opendir(p->dir);
    if (!d)
        return error_set(-errno, "%s: opendir: %s", p->dir, strerror(errno));
    static const char *const exts[] = {".log", ".index", ".timeindex", ".txnindex", ".snapshot"};
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        bool old = strcmp(n, LEADER_EPOCH_FILE) == 0 || strcmp(n, RECOVERY_POINT_FILE) == 0 ||
                   strcmp(n, CLEANER_CHECKPOINT_FILE) == 0;
        if (strlen(n) > 20 && strspn(n, "0123456789") == 20)
            for (size_t k = 0; k < sizeof(exts) / sizeof(exts[0]); k++)
                old = old || strcmp(n + 20, exts[k]) == 0;
        if (!old)
            continue;
        char path[SEGMENT_PATH_BYTES + 300];
        snprintf(path, sizeof(path), "%s/%s", p->dir, n);
        int urc = io_unlink(faults, path);
        if (urc && urc != -ENOENT && rc == 0)
            rc = error_set(urc, "%s: unlink: %s", path, strerror(-urc));
    }
    closedir(d);
    if (rc == 0)
        rc = fs_fsync_dir(faults, p->dir);
    if (rc == 0) {
        rc = log_start_store(faults, p->dir, offset);
        if (rc)
            rc = error_set(rc, "%s: cannot store the log start offset %" PRId64 ": %s", p->dir,
                           offset, strerror(-rc));
    }
    p->cleaned_end = 0;
    atomic_store_explicit(&p->replica_gaps_end, 0, memory_order_relaxed); /* RL8 */
    return rc;
}

/* RL7 at open: *base_out is -1, or the offset of a restart-at the crash interrupted, whose old
 * log is removed here (the open then creates the empty segment at *base_out). */
static int restart_pending(struct partition *p, int64_t *base_out)
{
    int64_t off = -1;
    const char *why = NULL;
    size_t bad = 0;
    int rc = log_start_load_named(p->dir, LOG_RESTART_FILE, &off, &why, &bad);
    if (rc == -ENOENT)
        return 0;
    if (rc == RT_E_CORRUPT) {
        /* Stored by temp + rename: a damaged one is not ours to act on; the old log stays. */
        fprintf(stderr, "ringtail: %s/%s: offset %zu: %s (ignored)\n", p->dir, LOG_RESTART_FILE,
                bad, why);
        return 0;
    }
    if (rc)
        return error_set(rc, "%s/%s: %s", p->dir, LOG_RESTART_FILE, rt_strerror(rc));
    rc = restart_clear(p, off);
    if (rc == 0)
        *base_out = off;
    return rc;
}

/* RL7: the intent goes once the new empty log is durable. */
static int restart_done(struct partition *p)
{
    struct io_fault_plan *faults = p->cfg.segment.faults;
    int rc = fs_fsync_dir(faults, p->dir); /* the new segment's name */
    char path[SEGMENT_PATH_BYTES + 32];
    snprintf(path, sizeof(path), "%s/%s", p->dir, LOG_RESTART_FILE);
    if (rc == 0) {
        rc = io_unlink(faults, path);
        if (rc == -ENOENT)
            rc = 0;
    }
    if (rc == 0)
        rc = fs_fsync_dir(faults, p->dir);
    if (rc)
        return error_set(rc, "%s: finishing a restart: %s", path, strerror(-rc));
    return 0;
}

static void load_records_start(struct partition *p)
{
    int64_t off = 0;
    const char *why = NULL;
    size_t bad = 0;
    int rc = log_start_load(p->dir, &off, &why, &bad);
    if (rc == RT_E_CORRUPT)
        fprintf(stderr, "ringtail: %s/%s: offset %zu: %s (ignored)\n", p->dir, LOG_START_FILE, bad,
                why);
    if (rc)
        off = 0;
    p->records_start = off < p->next_offset ? off : p->next_offset;
}

static int load_epochs(struct partition *p);

int partition_open(struct partition *p, const char *data_dir, const char *topic, uint32_t id,
                   const struct partition_config *cfg, bool clean, struct partition_recovery *rec)
{
    memset(p, 0, sizeof(*p));
    memset(rec, 0, sizeof(*rec));
    leader_epoch_init(&p->epochs);
    p->leader_epoch = -1;
    p->id = id;
    p->cfg = *cfg;
    snprintf(p->topic, sizeof(p->topic), "%s", topic);
    char path[SEGMENT_PATH_BYTES];
    int rc = meta_partition_dir(path, sizeof(path), data_dir, topic, id);
    if (rc)
        return rc;
    if (!(p->dir = strdup(path)))
        return -ENOMEM;
    pthread_mutex_init(&p->segments_lock, NULL);
    pthread_mutex_init(&p->gaps_lock, NULL);
    if (cfg->segment.read_only) {
        /* Read-only: nothing is created (see list_segments and segment_create). */
    } else if ((rc = io_mkdir(cfg->segment.faults, p->dir, 0755)) == 0) {
        rc = fs_fsync_dir(cfg->segment.faults, data_dir); /* its name is durable */
    } else if (rc != -EEXIST) {
        rc = error_set(rc, "%s: cannot create: %s", p->dir, strerror(-rc));
    } else {
        rc = 0;
    }
    /* CL6 (docs/format.md A.9): a committed compaction swap is finished and an uncommitted one
     * removed before the segments are listed. */
    if (rc == 0) /* a failed mkdir stands: it is what the open answers */
        rc = cleaner_checkpoint_recover(cfg->segment.faults, p->dir, cfg->segment.read_only,
                                        &p->cleaned_end);
    /* RL7: a restart-at the crash interrupted is finished before the segments are listed. */
    int64_t restart_base = -1;
    if (rc == 0 && !cfg->segment.read_only)
        rc = restart_pending(p, &restart_base);
    int64_t *bases = NULL;
    uint32_t count = 0;
    bool next_kept = false;
    if (rc == 0)
        rc = list_segments(p->dir, cfg->segment.read_only,
                           cfg->segment.pool && !cfg->segment.read_only ? &next_kept : NULL, &bases,
                           &count);
    atomic_store_explicit(&p->next_leftover, next_kept, memory_order_relaxed);
    if (rc) {
        partition_close(p, false);
        return rc;
    }
    struct recovery_point rp;
    load_recovery_point(p, count, clean, &rp, rec);
    uint32_t first_untrusted = count;
    bool newest_trusted = false;
    bool sync_left = false;
    struct recovery_stamp newest_stamps[RECOVERY_FILES];
    memset(newest_stamps, 0, sizeof(newest_stamps));
    for (uint32_t i = 0; i < count; i++) {
        bool newest = i + 1 == count;
        struct segment *seg = NULL;
        struct segment_recovery srec;
        struct segment_trust tr;
        const struct segment_trust *trust = trust_for(p, &rp, bases[i], newest, clean, &tr, rec);
        /* PA11: after a clean shutdown a trusted newest segment is opened as it was closed,
         * sealed (mapped, no descriptor, indexes read-only): it becomes active at its first
         * append (partition_wake), so an idle partition costs no descriptor and no flush. */
        bool dormant = newest && clean && trust != NULL;
        struct segment_config scfg = cfg->segment;
        scfg.gaps_ok = bases[i] < p->cleaned_end; /* CL1: the cleaner wrote it */
        rc = segment_open(&seg, p->dir, bases[i], &scfg, newest && !dormant, newest && !clean,
                          trust, &srec);
        if (rc)
            break;
        if (newest && !clean)
            rec->recovered = true;
        if (newest && srec.sync_left)
            sync_left = true; /* PA19 */
        rec->truncated_bytes += srec.truncated_bytes;
        rec->segments_opened++;
        if (srec.tail_rejected)
            rec->recovery_tails_rejected++;
        rec->tail_bytes_trusted += srec.tail_from_bytes;
        if (srec.trusted) {
            rec->segments_trusted++;
            newest_trusted = newest;
            if (newest)
                memcpy(newest_stamps, recovery_point_find(&rp, bases[i])->files,
                       sizeof(newest_stamps));
            if (seg->sealed) {
                seg->vouched = true; /* PA8: its stamps are the ones recorded */
                memcpy(seg->stamps, recovery_point_find(&rp, bases[i])->files, sizeof(seg->stamps));
            }
        } else {
            rec->segments_checked++;
            rec->bytes_checked += seg->size_bytes + srec.truncated_bytes - srec.tail_from_bytes;
            /* PA9: a tail-trusted newest segment's .txnindex is trusted to the tail and rebuilt
             * past it by the producer replay (load_producers), not walked whole. */
            if (first_untrusted == count && srec.tail_from_bytes == 0)
                first_untrusted = i;
        }
        if (i > 0) {
            struct segment *prev = p->segments[p->segment_count - 1];
            if (prev->cfg.gaps_ok && prev->next_offset < seg->base_offset)
                prev->next_offset = seg->base_offset; /* CL2: the cleaned range runs to here */
            if (prev->next_offset != seg->base_offset) {
                /* L1 (docs/format.md A.1): offsets are dense across segments. A gap means a
                 * sealed segment lost whole batches; an overlap means a name or a log is wrong. */
                rc =
                    error_set(RT_E_CORRUPT,
                              "%s: offset %" PRIu64 ": segment ends at offset %" PRId64
                              " but the next segment begins at %" PRId64 " (%s)",
                              prev->log_path, prev->size_bytes, prev->next_offset, seg->base_offset,
                              prev->next_offset < seg->base_offset ? "records are missing"
                                                                   : "segments overlap");
                segment_unref(seg);
                break;
            }
        }
        rc = segments_push(p, seg);
        if (rc) {
            segment_unref(seg);
            break;
        }
        /* MM1: a sealed one may be released from now on (the open's walks below pin what they
         * read), so an open that checks every segment maps at most the budget at once. */
        if (seg->sealed)
            segment_maps_attach(cfg->segment.maps, seg);
    }
    free(bases);
    if (rc == 0 && p->segment_count > 0)
        note_past_end(p, &rp, rec);
    recovery_point_free(&rp);
    bool born = rc == 0 && p->segment_count == 0; /* OS3 admitted it, or it is dormant */
    if (born) {
        struct segment *seg = NULL;
        /* OS3: with the budget of open segments spent, a new partition is born dormant. */
        if (!cfg->segment.read_only && !segment_cache_reserve(cfg->segment.cache)) {
            rc = segment_create_dormant(&seg, p->dir, restart_base > 0 ? restart_base : 0,
                                        &cfg->segment);
        } else {
            rc = segment_create(&seg, p->dir, restart_base > 0 ? restart_base : 0, &cfg->segment);
            if (!cfg->segment.read_only)
                segment_cache_unreserve(cfg->segment.cache); /* counted in open now, or failed */
        }
        if (rc == 0) {
            rc = segments_push(p, seg);
            if (rc)
                segment_unref(seg);
        }
    }
    if (rc) {
        partition_close(p, false);
        return rc;
    }
    p->active = p->segments[p->segment_count - 1];
    p->next_offset = p->active->next_offset;
    p->active_trusted_bytes = newest_trusted ? p->active->size_bytes : UINT64_MAX;
    p->active_trusted_next = p->active->next_offset;
    /* PA18: trusted (RT1), checked whole or recovered (scanned from 0 or past a tail that held):
     * every open vouches for the newest segment's bytes as it leaves them. */
    p->active_checked_bytes = p->active->size_bytes;
    p->active_checked_next = p->active->next_offset;
    p->tail_base = -1;
    memcpy(p->active_trusted_stamps, newest_stamps, sizeof(newest_stamps));
    p->snapshot_offset = -1;
    rc = load_producers(p, rec);
    if (rc == 0)
        rc = check_txn_indexes(p, first_untrusted, rec);
    if (rc) {
        partition_close(p, false);
        return rc;
    }
    /* PA8: sealed segments this open checked (no checkpoint named them, or their files changed)
     * are named now, so the next open reads none of them. */
    bool store = rec->recovery_points_damaged > 0 || rec->recovery_point_past_end > 0;
    for (uint32_t i = 0; i < p->segment_count && !cfg->segment.read_only; i++) {
        struct segment *seg = p->segments[i];
        if (seg->sealed && !seg->vouched) {
            vouch_sealed(p, seg, false);
            store = true;
        }
    }
    if (store && store_recovery_point(p) == 0)
        rec->recovery_points_written++;
    if (!born && !p->active->sealed && !cfg->segment.read_only &&
        segment_cache_above_low(cfg->segment.cache)) {
        /* OS6: the scan needed its descriptors; past the budget they go now, not at the
         * shards' next housekeeping, so an open of many such partitions stays within it. */
        uint32_t stored = p->recovery_points_written;
        rc = partition_sleep(p);
        if (rc == 0 && p->active->sealed)
            atomic_fetch_add_explicit(&cfg->segment.cache->sleeps, 1, memory_order_relaxed);
        rec->recovery_points_written += p->recovery_points_written - stored;
        if (rc) {
            partition_close(p, false);
            return rc;
        }
    }
    /* PA19: a recovery that left its fdatasync (SG10) publishes bytes that may be unsynced, as a
     * round under sync=interval or none does; the shard's paths for such bytes sync them (the
     * interval's, OS5's before a sleep, PA17's before a roll, the seal at a clean close). After
     * OS6's sleep above, whose seal synced them, nothing is left. */
    if (sync_left && !p->active->sealed)
        p->unsynced = true;
    p->recovery = *rec;
    load_records_start(p);
    rc = load_epochs(p);
    if (rc == 0 && restart_base >= 0)
        rc = restart_done(p); /* RL7: the new empty log is durable; the intent goes */
    if (rc) {
        partition_close(p, false);
        return rc;
    }
    atomic_init(&p->seq, 0);
    partition_publish(p);
    return 0;
}

int partition_close(struct partition *p, bool seal)
{
    int rc = 0;
    if (p->spare_bytes > 0 && !p->cfg.segment.read_only) {
        /* PA6: the spare holds deleted records; it does not outlive the engine. */
        char spare[SEGMENT_PATH_BYTES];
        if (snprintf(spare, sizeof(spare), "%s/%s", p->dir, PARTITION_SPARE_NAME) <
            (int)sizeof(spare))
            (void)io_unlink(p->cfg.segment.faults, spare);
        p->spare_bytes = 0;
    }
    if ((atomic_load_explicit(&p->next_ready_bytes, memory_order_acquire) > 0 ||
         atomic_load_explicit(&p->next_leftover, memory_order_acquire)) &&
        !p->cfg.segment.read_only) {
        char next[SEGMENT_PATH_BYTES]; /* PA7: zeros; an open would remove it anyway */
        if (snprintf(next, sizeof(next), "%s/%s", p->dir, SEGMENT_POOL_NEXT_NAME) <
            (int)sizeof(next))
            (void)io_unlink(p->cfg.segment.faults, next);
    }
    if (seal && p->active)
        rc = segment_seal(p->active);
    if (seal && p->active && rc == 0 && p->producers.slots && p->next_offset > 0)
        rc = partition_snapshot_producers(p); /* PA16: none for a log that never held a batch */
    if (seal && p->active && rc == 0 && p->active->sealed) {
        /* PA8: the next clean open reads nothing. */
        if (p->active->size_bytes == p->active_trusted_bytes &&
            restore_stamps(p, p->active, p->active_trusted_stamps) &&
            p->recovery_points_written == 0) {
            /* Nothing appended since the open trusted it, and the checkpoint the open found
             * (which names it) was not replaced since: it holds as it is. */
        } else {
            vouch_sealed(p, p->active, true);
            (void)store_recovery_point(p);
        }
    }
    producer_table_free(&p->producers);
    free(p->open_txns);
    leader_epoch_free(&p->epochs);
    p->open_txns = NULL;
    p->open_txn_count = p->open_txn_capacity = 0;
    pthread_mutex_lock(&p->segments_lock);
    for (uint32_t i = 0; i < p->segment_count; i++) {
        segment_uncount(p->segments[i]);     /* OS1: the budget dies with the engine */
        segment_maps_forget(p->segments[i]); /* MM1: so does the budget of mappings */
        segment_unref(p->segments[i]);
    }
    free(p->segments);
    p->segments = NULL;
    p->segment_count = p->segment_capacity = 0;
    p->active = NULL;
    pthread_mutex_unlock(&p->segments_lock);
    pthread_mutex_destroy(&p->segments_lock);
    pthread_mutex_destroy(&p->gaps_lock);
    free(p->dir);
    p->dir = NULL;
    return rc;
}

/* The roll decision for a batch of size_bytes whose last offset is last_offset_delta past the
 * partition's next offset. It counts what this round has already placed in the active segment
 * (round_bytes; next_offset is already advanced past those batches), not only what earlier rounds
 * left there, so a round never carries a segment past its capacity (PAR1), past INT32_MAX bytes
 * (PAR2: index positions are i32) or past base + INT32_MAX offsets (PAR3: index relative offsets
 * are i32); an empty segment takes any batch the options allow (PAR4). PAR1-PAR4 are the writer's
 * side of docs/format.md A.1 L5. */
bool partition_roll_needed(const struct partition_roll_state *st, uint64_t size_bytes,
                           int32_t last_offset_delta)
{
    assert(size_bytes > 0);
    assert(last_offset_delta >= 0);
    assert(st->next_offset >= st->base_offset);
    uint64_t used = st->size_bytes + st->round_bytes;
    if (used == 0)
        return false; /* an empty segment takes any batch the options allow (PAR4) */
    uint64_t cap =
        st->capacity_bytes < SEGMENT_SIZE_MAX_BYTES ? st->capacity_bytes : SEGMENT_SIZE_MAX_BYTES;
    if (used > cap || cap - used < size_bytes)
        return true; /* PAR1, PAR2 */
    if (st->next_offset - st->base_offset > (int64_t)INT32_MAX - last_offset_delta)
        return true; /* PAR3 */
    return false;
}

static bool needs_roll(const struct partition *p, uint64_t size_bytes, int32_t last_offset_delta,
                       int64_t now_ms)
{
    const struct segment *a = p->active;
    struct partition_roll_state st = {
        .size_bytes = a->size_bytes,
        .round_bytes = p->round_touched ? p->round_bytes : 0,
        .capacity_bytes =
            a->cfg.capacity_bytes < a->map_bytes ? a->cfg.capacity_bytes : a->map_bytes,
        .base_offset = a->base_offset,
        .next_offset = p->next_offset,
    };
    if (partition_roll_needed(&st, size_bytes, last_offset_delta))
        return true;
    if (st.size_bytes + st.round_bytes == 0)
        return false;
    if (segment_index_full(a))
        return true;
    if (p->cfg.segment_ms > 0 && now_ms - a->created_ms >= p->cfg.segment_ms)
        return true;
    return false;
}

static int partition_roll(struct partition *p)
{
    struct segment *old = p->active;
    assert(!p->round_touched);
    assert(old->next_offset == p->next_offset);
    p->rolling = true; /* PA12: cleared below, once the new segment is active */
    if (p->unsynced) {
        /* PA17: published bytes durable first; a failure here may have dropped them (the
         * caller fails the engine's write side, shard.c SH10), any later one loses nothing. */
        int src = io_fdatasync(old->cfg.faults, old->fd);
        if (src)
            return error_set(src, "%s: fdatasync before sealing: %s", old->log_path,
                             strerror(-src));
        p->unsynced = false;
    }
    int rc = segment_seal(old); /* PA2: sealed and synced before the next one exists */
    if (rc)
        return rc;
    rc = partition_snapshot_producers(p); /* as Kafka: a snapshot at every roll */
    if (rc)
        return rc;
    vouch_sealed(p, old, true); /* PA8: checked once, at its seal */
    (void)store_recovery_point(p);
    segment_maps_attach(p->cfg.segment.maps, old); /* MM1: its writer is done with it */
    p->active_trusted_bytes = UINT64_MAX;          /* the next active segment is new */
    p->active_checked_bytes = UINT64_MAX;          /* PA18: walked whole at its seal */
    struct segment *seg = NULL;
    rc = -ENOENT;
    if (p->spare_bytes > 0) {
        /* PA6: the recycled file, its blocks already written (RS1). On failure it is gone and
         * the roll makes a new file as before. */
        char spare[SEGMENT_PATH_BYTES];
        if (snprintf(spare, sizeof(spare), "%s/%s", p->dir, PARTITION_SPARE_NAME) <
            (int)sizeof(spare))
            rc = segment_create_recycled(&seg, p->dir, p->next_offset, &p->cfg.segment, spare,
                                         p->spare_bytes);
        p->spare_bytes = 0;
        if (rc == 0)
            atomic_fetch_add_explicit(&p->cfg.segment.pool->stats.recycled, 1,
                                      memory_order_relaxed);
    }
    uint64_t next_ready = atomic_load_explicit(&p->next_ready_bytes, memory_order_acquire);
    if (rc && next_ready > 0) {
        /* PA7: the pre-written head of the next segment (zeros, fdatasynced). */
        char next[SEGMENT_PATH_BYTES];
        if (snprintf(next, sizeof(next), "%s/%s", p->dir, SEGMENT_POOL_NEXT_NAME) <
            (int)sizeof(next))
            rc = segment_create_recycled(&seg, p->dir, p->next_offset, &p->cfg.segment, next,
                                         next_ready);
        atomic_store_explicit(&p->next_ready_bytes, 0, memory_order_relaxed);
    }
    if (rc)
        rc = segment_create(&seg, p->dir, p->next_offset, &p->cfg.segment);
    if (rc)
        return rc;
    pthread_mutex_lock(&p->segments_lock);
    rc = segments_push(p, seg);
    pthread_mutex_unlock(&p->segments_lock);
    if (rc) {
        segment_delete(seg);
        segment_unref(seg);
        return rc;
    }
    p->active = seg;
    p->rolling = false;
    return 0;
}

void partition_prepare_next(struct partition *p)
{
    struct segment_pool *pool = p->cfg.segment.pool;
    if (!pool || p->spare_bytes > 0 || p->frozen)
        return; /* no pre-writer, or the recycled file is next (PA6) */
    const struct segment *a = p->active;
    if (a->claimed_bytes < a->cfg.capacity_bytes / 2 ||
        atomic_load_explicit(&p->next_leftover, memory_order_acquire) || /* SP9 */
        atomic_load_explicit(&p->next_ready_bytes, memory_order_acquire) > 0 ||
        atomic_load_explicit(&p->next_queued, memory_order_acquire))
        return;
    /* The head is as long as the active segment's current lead (SP5): a slow partition's next
     * file holds little, a fast one's the whole lead. */
    uint64_t head = atomic_load_explicit(&a->lead_bytes, memory_order_relaxed);
    uint64_t most = segment_pool_lead_bytes(a->cfg.capacity_bytes);
    (void)segment_pool_request_next(pool, p->dir, head < most ? head : most, &p->next_ready_bytes,
                                    &p->next_queued);
}

void partition_leftover_dispose(struct partition *p, bool defer)
{
    if (!atomic_load_explicit(&p->next_leftover, memory_order_acquire))
        return;
    char next[SEGMENT_PATH_BYTES];
    if (snprintf(next, sizeof(next), "%s/%s", p->dir, SEGMENT_POOL_NEXT_NAME) >= (int)sizeof(next))
        return;
    if (defer && p->cfg.segment.pool &&
        segment_pool_defer_unlink(p->cfg.segment.pool, next, &p->next_leftover))
        return;
    (void)io_unlink(p->cfg.segment.faults, next);
    atomic_store_explicit(&p->next_leftover, false, memory_order_release);
}

bool partition_roll_due(const struct partition *p, uint64_t size_bytes, int32_t last_offset_delta,
                        int64_t now_ms)
{
    return needs_roll(p, size_bytes, last_offset_delta, now_ms);
}

/* IF6 (index_file.h): this batch and the round's earlier ones add at most one entry each to
 * either index, and the seal one more time-index entry: their blocks are allocated before any is
 * placed, so an index store never meets a hole the disk cannot fill. */
static int reserve_index_room(struct partition *p)
{
    uint32_t batches = p->round_touched ? p->round_batches : 0;
    return segment_reserve_indexes(p->active, batches + 2);
}

int partition_make_room(struct partition *p, uint64_t size_bytes, int32_t last_offset_delta,
                        int64_t now_ms)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    if (!needs_roll(p, size_bytes, last_offset_delta, now_ms)) {
        /* Fits: PAR1-PAR3 hold for this batch on top of the round's (the append checks refuse a
         * batch larger than a segment, so an empty segment holds every batch they accept). */
        assert(segment_free_bytes(p->active) >=
               size_bytes + (p->round_touched ? p->round_bytes : 0));
        return reserve_index_room(p);
    }
    if (p->round_touched)
        return 1;
    int rc = partition_roll(p);
    return rc ? rc : reserve_index_room(p);
}

void partition_freeze(struct partition *p)
{
    p->frozen = true;
}

int partition_recover(struct partition *p)
{
    assert(p->frozen);
    assert(!p->round_touched);
    struct segment *a = p->active;
    assert(a->next_offset <= p->next_offset);
    /* PA12: the published end is the durable end; what the failed rounds placed past it is
     * forgotten (their requests were answered with errors). */
    p->next_offset = a->next_offset;
    p->unsynced = false; /* the caller fdatasynced the active segment (SH10) */
    producer_table_free(&p->producers);
    p->open_txn_count = 0;
    struct partition_recovery rec;
    memset(&rec, 0, sizeof(rec)); /* not `recovered`: the active .txnindex holds only published
                                     entries (staged ones were dropped), nothing to cut */
    int rc = load_producers(p, &rec);
    if (rc) {
        /* Stays frozen with an empty table (calls that read it meanwhile find no producer);
         * the next attempt loads it again. */
        producer_table_free(&p->producers);
        (void)producer_table_init(&p->producers, p->cfg.producers_max, p->cfg.is_named,
                                  p->cfg.named_ctx);
        p->open_txn_count = 0;
        return error_set(rc, "%s: reloading the producer state: %s", p->dir, rt_strerror(rc));
    }
    p->frozen = false;
    if (p->rolling || a->sealed) {
        /* The failure interrupted a roll: finish it (a seal runs again to its end; a snapshot
         * already taken at this offset is kept: partition_snapshot_producers skips it). */
        rc = partition_roll(p);
        if (rc) {
            p->frozen = true;
            return rc;
        }
    }
    partition_publish(p); /* the same watermarks, now on the recovered writer state */
    return 0;
}

void partition_publish(struct partition *p)
{
    assert(!p->frozen); /* PA5 */
    struct segment *a = p->active;
    assert(a->size_bytes >= atomic_load_explicit(&a->readable_bytes, memory_order_relaxed));
    segment_publish(a);
    uint64_t s = atomic_load_explicit(&p->seq, memory_order_relaxed);
    atomic_store_explicit(&p->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&p->pub_end, p->next_offset, memory_order_relaxed);
    atomic_store_explicit(&p->pub_end_segment_base, a->base_offset, memory_order_relaxed);
    atomic_store_explicit(&p->pub_end_position, a->size_bytes, memory_order_relaxed);
    /* RL5: a held high watermark (never past the log end: a truncation cut it there). */
    int64_t hw = p->next_offset, hw_base = a->base_offset;
    uint64_t hw_pos = a->size_bytes;
    if (p->hw_held && p->held_hw < p->next_offset) {
        hw = p->held_hw;
        hw_base = p->held_hw_segment_base;
        hw_pos = p->held_hw_position;
    }
    atomic_store_explicit(&p->pub_hw, hw, memory_order_relaxed);
    atomic_store_explicit(&p->pub_hw_segment_base, hw_base, memory_order_relaxed);
    atomic_store_explicit(&p->pub_hw_position, hw_pos, memory_order_relaxed);
    /* LSO = min(first offset of the oldest open transaction, high watermark) (architecture.md, Rules of the protocol). */
    int64_t log_start = p->segments[0]->base_offset;
    if (p->records_start > log_start)
        log_start = p->records_start; /* PA4, PA13 */
    if (p->open_txn_count > 0 && p->open_txns[0].first_offset < log_start) {
        /* Retention or DeleteRecords passed the transaction's start: the LSO never goes below
         * the log start (as Kafka's). Its position is never read: no reader starts below the
         * log start, and one at the bound reads nothing; the segment holding it is named. */
        int64_t base = p->segments[0]->base_offset;
        for (uint32_t i = 1; i < p->segment_count && p->segments[i]->base_offset <= log_start; i++)
            base = p->segments[i]->base_offset; /* only while a transaction is that old */
        atomic_store_explicit(&p->pub_lso, log_start, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_segment_base, base, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_position, 0, memory_order_relaxed);
    } else if (p->open_txn_count > 0 && p->open_txns[0].first_offset < hw) {
        const struct open_txn *t = &p->open_txns[0];
        atomic_store_explicit(&p->pub_lso, t->first_offset, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_segment_base, t->segment_base, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_position, t->position, memory_order_relaxed);
    } else {
        atomic_store_explicit(&p->pub_lso, hw, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_segment_base, hw_base, memory_order_relaxed);
        atomic_store_explicit(&p->pub_lso_position, hw_pos, memory_order_relaxed);
    }
    atomic_store_explicit(&p->pub_log_start, log_start, memory_order_relaxed);
    atomic_store_explicit(&p->seq, s + 2, memory_order_release);
}

void partition_watermarks(struct partition *p, struct partition_watermarks *out)
{
    for (;;) {
        uint64_t s1 = atomic_load_explicit(&p->seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        out->log_end = atomic_load_explicit(&p->pub_end, memory_order_relaxed);
        out->end_segment_base =
            atomic_load_explicit(&p->pub_end_segment_base, memory_order_relaxed);
        out->end_position = atomic_load_explicit(&p->pub_end_position, memory_order_relaxed);
        out->high_watermark = atomic_load_explicit(&p->pub_hw, memory_order_relaxed);
        out->hw_segment_base = atomic_load_explicit(&p->pub_hw_segment_base, memory_order_relaxed);
        out->hw_position = atomic_load_explicit(&p->pub_hw_position, memory_order_relaxed);
        out->last_stable_offset = atomic_load_explicit(&p->pub_lso, memory_order_relaxed);
        out->lso_segment_base =
            atomic_load_explicit(&p->pub_lso_segment_base, memory_order_relaxed);
        out->lso_position = atomic_load_explicit(&p->pub_lso_position, memory_order_relaxed);
        out->log_start_offset = atomic_load_explicit(&p->pub_log_start, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&p->seq, memory_order_relaxed) == s1)
            return;
    }
}

/* Whether seg is still in p's list (a wake, the cleaner's swap or retention may have replaced
 * or removed it since a reader took its reference). */
static bool still_listed(struct partition *p, const struct segment *seg)
{
    bool found = false;
    pthread_mutex_lock(&p->segments_lock);
    for (uint32_t i = p->segment_count; i-- > 0 && !found;)
        found = p->segments[i] == seg;
    pthread_mutex_unlock(&p->segments_lock);
    return found;
}

/* SG6, SG8: a segment whose mappings were released (or never made) is mapped by its reader from
 * its files; when its object left the list in the meantime (a wake grew its files into the
 * active segment's, the cleaner's swap replaced them, retention unlinked them), the reader
 * looks it up again — a few times at most — instead of failing on files that are not its own
 * any more. */
#define SEGMENT_LOOKUP_TRIES 4

int partition_segment_for(struct partition *p, int64_t offset, struct segment **out)
{
    for (int tries = 1;; tries++) {
        pthread_mutex_lock(&p->segments_lock);
        uint32_t lo = 0, hi = p->segment_count;
        while (lo < hi) { /* first segment with base > offset */
            uint32_t mid = lo + (hi - lo) / 2;
            if (p->segments[mid]->base_offset <= offset)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0) {
            pthread_mutex_unlock(&p->segments_lock);
            return RT_E_OFFSET_OUT_OF_RANGE;
        }
        struct segment *seg = p->segments[lo - 1];
        segment_ref(seg);
        pthread_mutex_unlock(&p->segments_lock);
        int rc = segment_map(seg); /* SG6: a lazily opened segment's first reader maps it */
        if (rc == 0) {
            *out = seg;
            return 0;
        }
        bool again = tries < SEGMENT_LOOKUP_TRIES && !still_listed(p, seg);
        segment_unref(seg);
        if (!again)
            return rc;
    }
}

struct segment *partition_segment_after(struct partition *p, int64_t base_offset)
{
    for (int tries = 1;; tries++) {
        struct segment *found = NULL;
        pthread_mutex_lock(&p->segments_lock);
        for (uint32_t i = 0; i < p->segment_count; i++) {
            if (p->segments[i]->base_offset > base_offset) {
                found = p->segments[i];
                segment_ref(found);
                break;
            }
        }
        pthread_mutex_unlock(&p->segments_lock);
        if (!found || segment_map(found) == 0)
            return found;
        /* SG6: the detail names the file; the fetch ends before it, as at the log's end. */
        bool again = tries < SEGMENT_LOOKUP_TRIES && !still_listed(p, found);
        segment_unref(found);
        if (!again)
            return NULL;
    }
}

/* Removes the `n` oldest segments (never the active one) in one step (PA10): one change of the
 * list and one publish of the log start, then every file of the run unlinked oldest first (at
 * most one .log kept as the recycled spare, PA6), then one fsync of the directory. Returns n or
 * the first error (the run is out of the list whatever failed: a file left behind is an orphan
 * the next open removes, L4, or an older segment it opens below the log start). */
static int delete_oldest_run(struct partition *p, uint32_t n)
{
    assert(n < p->segment_count);
    if (n == 0)
        return 0;
    struct segment **run = malloc((size_t)n * sizeof(*run));
    if (!run)
        return -ENOMEM;
    pthread_mutex_lock(&p->segments_lock);
    memcpy(run, p->segments, (size_t)n * sizeof(*run));
    memmove(p->segments, p->segments + n, (size_t)(p->segment_count - n) * sizeof(*p->segments));
    p->segment_count -= n;
    pthread_mutex_unlock(&p->segments_lock);
    for (uint32_t i = 0; i < n; i++)
        segment_maps_forget(run[i]); /* MM1: out of the list, never released but by the last
                                        reference */
    partition_publish(p);            /* PA4: the log start moves before the files go */
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct segment *seg = run[i];
        /* PA6: keep one file for the next roll when nothing can read it any more: out of the
         * list, so no fetch can take a reference, and none holds one (its mapping would change
         * under it). A file smaller than the lead saves less than the rename costs. */
        if (p->cfg.segment.pool && p->spare_bytes == 0 &&
            atomic_load_explicit(&seg->refs, memory_order_acquire) == 1 &&
            seg->size_bytes >= segment_pool_lead_bytes(p->cfg.segment.capacity_bytes)) {
            char spare[SEGMENT_PATH_BYTES];
            uint64_t bytes = 0;
            if (snprintf(spare, sizeof(spare), "%s/%s", p->dir, PARTITION_SPARE_NAME) <
                    (int)sizeof(spare) &&
                segment_recycle(seg, spare, false, &bytes) == 0) {
                p->spare_bytes = bytes;
                continue;
            }
            (void)io_unlink(p->cfg.segment.faults, spare); /* a half-done recycle: as below */
        }
        int urc = segment_unlink(seg); /* a fetch still holding it keeps the mapping alive */
        if (urc && rc == 0)
            rc = urc;
    }
    int src = fs_fsync_dir(p->cfg.segment.faults, p->dir); /* SG5, once for the run */
    if (src && rc == 0)
        rc = src;
    if (src)
        p->spare_bytes = 0; /* its name may not survive a power loss: not reused */
    for (uint32_t i = 0; i < n; i++)
        segment_unref(run[i]);
    free(run);
    p->run_deletions++;
    return rc ? rc : (int)n;
}

int partition_enforce_retention(struct partition *p, int64_t now_ms)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5: a deletion publishes the log start */
    uint32_t n = 0;            /* the run of oldest segments to delete */
    if (p->cfg.retention_bytes >= 0) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < p->segment_count; i++)
            total += p->segments[i]->size_bytes;
        /* As Kafka: delete the oldest while the excess over the limit is at least its size,
         * so the log never drops below retention_bytes. */
        while (p->segment_count - n > 1 && total > (uint64_t)p->cfg.retention_bytes) {
            uint64_t oldest = p->segments[n]->size_bytes;
            if (total - (uint64_t)p->cfg.retention_bytes < oldest)
                break;
            total -= oldest;
            n++;
        }
    }
    if (p->cfg.retention_ms >= 0) {
        while (p->segment_count - n > 1) {
            struct segment *s = p->segments[n];
            int64_t ts = atomic_load_explicit(&s->max_timestamp_ms, memory_order_relaxed);
            if (ts < 0)
                ts = s->created_ms;
            if (now_ms - ts <= p->cfg.retention_ms)
                break;
            n++;
        }
    }
    while (p->segment_count - n > 1 && p->segments[n]->next_offset <= p->records_start)
        n++; /* PA13: wholly below the log start DeleteRecords set */
    while (p->hw_held && n > 0 && p->segments[n - 1]->next_offset > p->held_hw)
        n--; /* RL5: as Kafka, retention deletes only below the high watermark */
    return delete_oldest_run(p, n);
}

int partition_roll_now(struct partition *p)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5: the active segment and next offset disagree */
    assert(p->active->size_bytes > 0);
    return partition_roll(p);
}

int partition_delete_before(struct partition *p, int64_t offset)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    uint32_t n = 0;
    while (p->segment_count - n > 1 && p->segments[n]->next_offset <= offset)
        n++;
    return delete_oldest_run(p, n);
}

int partition_delete_records(struct partition *p, int64_t offset, int64_t *low_watermark_out)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    int64_t hw = atomic_load_explicit(&p->pub_hw, memory_order_relaxed);
    int64_t start = atomic_load_explicit(&p->pub_log_start, memory_order_relaxed);
    if (offset == -1)
        offset = hw;
    if (offset < 0 || offset > hw)
        return error_set(RT_E_OFFSET_OUT_OF_RANGE,
                         "%s: delete records to offset %" PRId64 ": outside [log start %" PRId64
                         ", high watermark %" PRId64 "]",
                         p->dir, offset, start, hw);
    if (offset > start) {
        int rc = log_start_store(p->cfg.segment.faults, p->dir, offset); /* PA13: durable first */
        if (rc)
            return error_set(rc, "%s: cannot store the log start offset %" PRId64 ": %s", p->dir,
                             offset, strerror(-rc));
        p->records_start = offset;
        partition_publish(p);
        start = offset;
        (void)partition_delete_before(p, offset); /* a failure: the next retention pass again */
    }
    *low_watermark_out = start;
    return 0;
}

/* ---- Replication (RL1-RL5) ---- */

static int epochs_copy(const struct leader_epoch_cache *from, struct leader_epoch_cache *to)
{
    leader_epoch_init(to);
    to->truncate_to = from->truncate_to;
    if (from->count == 0)
        return 0;
    to->entries = malloc((size_t)from->count * sizeof(*to->entries));
    if (!to->entries)
        return -ENOMEM;
    memcpy(to->entries, from->entries, (size_t)from->count * sizeof(*to->entries));
    to->count = to->capacity = from->count;
    return 0;
}

/* Stores c and, once it is durable, makes it the partition's list (c is taken either way). */
static int epochs_commit(struct partition *p, struct leader_epoch_cache *c)
{
    int rc = leader_epoch_store(p->cfg.segment.faults, p->dir, c);
    if (rc) {
        leader_epoch_free(c);
        return error_set(rc, "%s: cannot store the %s: %s", p->dir, LEADER_EPOCH_FILE,
                         strerror(-rc));
    }
    leader_epoch_free(&p->epochs);
    p->epochs = *c;
    p->leader_epoch = leader_epoch_latest(&p->epochs);
    return 0;
}

/* RL2: Kafka's assign over every batch of the log with an epoch >= 0, in log order (an epoch
 * below one already assigned is skipped: it cannot start an entry). */
static int epochs_rebuild(struct partition *p, struct leader_epoch_cache *c)
{
    leader_epoch_init(c);
    for (uint32_t i = 0; i < p->segment_count; i++) {
        struct segment *seg = p->segments[i];
        int rc = segment_pin(seg);
        if (rc)
            return rc;
        uint64_t pos = 0;
        while (rc == 0 && pos < seg->size_bytes) {
            const char *why = NULL;
            struct batch_header h;
            int64_t size = batch_size_at(seg->map + pos, seg->size_bytes - pos, &why);
            if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0) {
                rc = error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
                break;
            }
            if (h.partition_leader_epoch >= 0 &&
                leader_epoch_assign(c, h.partition_leader_epoch, h.base_offset) == -ENOMEM)
                rc = -ENOMEM;
            pos += (uint64_t)size;
        }
        segment_unpin(seg);
        if (rc) {
            leader_epoch_free(c);
            return rc;
        }
    }
    return 0;
}

/* Where a truncation to `offset` (< next_offset) cuts: the segment index, the byte position of
 * the batch holding offset, and that batch's base offset (the new log end). */
static int truncate_locate(struct partition *p, int64_t offset, uint32_t *i_out, uint64_t *pos_out,
                           int64_t *end_out)
{
    uint32_t i = p->segment_count - 1;
    while (i > 0 && p->segments[i]->base_offset > offset)
        i--;
    struct segment *seg = p->segments[i];
    *i_out = i;
    *pos_out = 0;
    *end_out = seg->base_offset;
    if (offset <= seg->base_offset)
        return 0;
    int rc = segment_pin(seg);
    if (rc)
        return rc;
    uint64_t pos = 0;
    rc = segment_find_batch(seg, offset, seg->size_bytes, &pos);
    if (rc == 0) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, seg->size_bytes - pos, &why);
        if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
            rc = error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
        else
            *end_out = h.base_offset;
        *pos_out = pos;
    }
    segment_unpin(seg);
    return rc;
}

/* RL4, the steps after the intent: segment i holds the cut at byte pos; end is the new log end. */
static int truncate_apply(struct partition *p, uint32_t i, uint64_t pos, int64_t end)
{
    assert(!p->round_touched);
    int rc = segment_seal(p->active); /* a no-op when dormant; nothing preallocated stays */
    if (rc)
        return rc;
    struct segment *cut = p->segments[i];
    uint32_t n = p->segment_count - (i + 1);
    if (n > 0) {
        struct segment **run = malloc((size_t)n * sizeof(*run));
        if (!run)
            return -ENOMEM;
        pthread_mutex_lock(&p->segments_lock);
        memcpy(run, p->segments + i + 1, (size_t)n * sizeof(*run));
        p->segment_count = i + 1;
        pthread_mutex_unlock(&p->segments_lock);
        p->active = cut;
        for (uint32_t k = 0; k < n; k++)
            segment_maps_forget(run[k]);
        for (uint32_t k = n; k-- > 0 && rc == 0;)
            rc = segment_unlink(run[k]); /* newest first: what survives stays dense (PA1) */
        if (rc == 0)
            rc = fs_fsync_dir(p->cfg.segment.faults, p->dir);
        for (uint32_t k = 0; k < n; k++)
            segment_unref(run[k]);
        free(run);
        if (rc)
            return rc;
    }
    if (pos < cut->size_bytes) { /* zeros: what L3a says is not part of the log */
        int fd = open(cut->log_path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return error_set(-errno, "%s: open: %s", cut->log_path, strerror(errno));
        static const uint8_t zeros[65536];
        for (uint64_t at = pos; at < cut->size_bytes && rc == 0;) {
            uint64_t k =
                cut->size_bytes - at < sizeof(zeros) ? cut->size_bytes - at : sizeof(zeros);
            rc = fs_pwrite_all(fd, zeros, (size_t)k, at);
            at += k;
        }
        if (rc == 0)
            rc = io_fdatasync(p->cfg.segment.faults, fd);
        close(fd);
        if (rc)
            return error_set(rc, "%s: zeroing past the truncation: %s", cut->log_path,
                             strerror(-rc));
    }
    /* Its offset and time indexes are rebuilt by the open below; unlinked, not cut, so a reader
     * still holding the old object keeps its mappings whole. */
    for (int k = 0; k < 2; k++) {
        char path[SEGMENT_PATH_BYTES + 16];
        snprintf(path, sizeof(path), "%s/%020" PRId64 "%s", p->dir, cut->base_offset,
                 k == 0 ? ".index" : ".timeindex");
        int urc = io_unlink(p->cfg.segment.faults, path);
        if (urc && urc != -ENOENT)
            return error_set(urc, "%s: unlink: %s", path, strerror(-urc));
    }
    rc = fs_fsync_dir(p->cfg.segment.faults, p->dir);
    if (rc)
        return rc;
    struct segment *seg = NULL;
    struct segment_recovery srec;
    segment_maps_forget(cut);
    rc = segment_open(&seg, p->dir, cut->base_offset, &p->cfg.segment, true, true, NULL, &srec);
    if (rc)
        return rc;
    if (seg->next_offset != end) {
        int64_t got = seg->next_offset;
        segment_unref(seg);
        return error_set(RT_E_CORRUPT,
                         "%s: truncated to offset %" PRId64 " but the log ends at %" PRId64,
                         cut->log_path, end, got);
    }
    rc = txn_index_truncate_to(&seg->txns, end);
    if (rc) {
        segment_unref(seg);
        return rc;
    }
    pthread_mutex_lock(&p->segments_lock);
    p->segments[i] = seg;
    pthread_mutex_unlock(&p->segments_lock);
    p->active = seg;
    segment_unref(cut); /* a fetch still holding it keeps its mapping */
    p->next_offset = end;
    p->unsynced = false;
    p->active_trusted_bytes = UINT64_MAX;
    p->active_trusted_next = end;
    p->active_checked_bytes = UINT64_MAX; /* PA18: the cut one is walked whole at its seal */
    p->tail_base = -1;
    p->tail_bytes = 0;
    if (p->hw_held && p->held_hw > end) {
        p->held_hw = end;
        p->held_hw_segment_base = seg->base_offset;
        p->held_hw_position = seg->size_bytes;
    }
    struct producer_table before = p->producers; /* PST5: its windows below the cut */
    memset(&p->producers, 0, sizeof(p->producers));
    p->open_txn_count = 0;
    p->snapshot_offset = -1;
    struct partition_recovery rec;
    memset(&rec, 0, sizeof(rec));
    rc = load_producers(p, &rec); /* snapshots past the end are removed there */
    if (rc == 0)
        producer_table_keep_window(&p->producers, &before, end);
    producer_table_free(&before);
    if (rc)
        return rc;
    (void)store_recovery_point(p); /* no tail past the cut; a failure costs a walk, not trust */
    partition_publish(p);
    return 0;
}

static int load_epochs(struct partition *p)
{
    const char *why = NULL;
    size_t bad = 0;
    struct leader_epoch_cache c;
    int rc = leader_epoch_load(p->dir, &c, &why, &bad);
    if (rc == -ENOENT)
        return 0; /* RL1: never set */
    bool store = false;
    if (rc == RT_E_CORRUPT) {
        fprintf(stderr, "ringtail: %s/%s: offset %zu: %s (rebuilt from the batches)\n", p->dir,
                LEADER_EPOCH_FILE, bad, why);
        rc = epochs_rebuild(p, &c); /* RL2 */
        store = true;
    }
    if (rc)
        return error_set(rc, "%s/%s: %s", p->dir, LEADER_EPOCH_FILE, rt_strerror(rc));
    p->epochs = c;
    bool writable = !p->cfg.segment.read_only;
    if (p->epochs.truncate_to >= 0 && writable) {
        /* RL4: a truncation the crash interrupted is finished before the log is served. */
        int64_t to = p->epochs.truncate_to;
        if (to < p->next_offset) {
            uint32_t i = 0;
            uint64_t pos = 0;
            int64_t end = 0;
            rc = truncate_locate(p, to, &i, &pos, &end);
            if (rc == 0)
                rc = truncate_apply(p, i, pos, end);
            if (rc)
                return error_set(rc, "%s: finishing a truncation to offset %" PRId64 ": %s", p->dir,
                                 to, rt_strerror(rc));
        }
        p->epochs.truncate_to = -1;
        store = true;
    }
    if (leader_epoch_truncate_from_end(&p->epochs, p->next_offset + 1))
        store = true; /* RL2: a crash lost the batches these epochs started with */
    p->leader_epoch = leader_epoch_latest(&p->epochs);
    if (store && writable) {
        rc = leader_epoch_store(p->cfg.segment.faults, p->dir, &p->epochs);
        if (rc)
            return error_set(rc, "%s: cannot store the %s: %s", p->dir, LEADER_EPOCH_FILE,
                             strerror(-rc));
    }
    return 0;
}

int partition_set_leader_epoch(struct partition *p, int32_t epoch)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    int32_t latest = leader_epoch_latest(&p->epochs);
    if (epoch < 0 || epoch < latest)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "%s: leader epoch %" PRId32 " is below the latest, %" PRId32, p->dir,
                         epoch, latest);
    if (epoch == latest) {
        p->leader_epoch = epoch;
        return 0;
    }
    struct leader_epoch_cache c;
    int rc = epochs_copy(&p->epochs, &c);
    if (rc == 0)
        rc = leader_epoch_assign(&c, epoch, p->next_offset);
    if (rc < 0) {
        leader_epoch_free(&c);
        return error_set(rc, "%s: assigning leader epoch %" PRId32 ": %s", p->dir, epoch,
                         rt_strerror(rc));
    }
    return epochs_commit(p, &c);
}

void partition_end_offset_for_epoch(struct partition *p, int32_t epoch, int64_t *end_offset,
                                    int32_t *found_epoch)
{
    leader_epoch_end_offset(&p->epochs, epoch, p->next_offset, end_offset, found_epoch);
}

int partition_note_replica_epoch(struct partition *p, int32_t epoch, int64_t base_offset)
{
    int32_t latest = leader_epoch_latest(&p->epochs);
    if (epoch < 0 || epoch == latest)
        return 0;
    struct leader_epoch_cache c;
    int rc = epochs_copy(&p->epochs, &c);
    if (rc)
        return rc;
    /* Epochs that wrote nothing yet (started at or past this batch) give way, as Kafka's assign
     * drops conflicting entries; one that holds batches means the logs diverged. */
    while (c.count > 0 && c.entries[c.count - 1].epoch >= epoch &&
           c.entries[c.count - 1].start_offset >= base_offset)
        c.count--;
    rc = leader_epoch_assign(&c, epoch, base_offset);
    if (rc < 0) {
        leader_epoch_free(&c);
        return error_set(rc == -ENOMEM ? rc : RT_E_INVALID_ARGUMENT,
                         "%s: a replica batch at offset %" PRId64 " has leader epoch %" PRId32
                         " but the log already holds epoch %" PRId32
                         ": the logs diverged (truncate first)",
                         p->dir, base_offset, epoch, latest);
    }
    return epochs_commit(p, &c);
}

int partition_truncate(struct partition *p, int64_t offset, int64_t *end_out, bool *after_intent)
{
    *after_intent = false;
    if (p->cfg.segment.read_only)
        return RT_E_READ_ONLY;
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    int64_t hw = atomic_load_explicit(&p->pub_hw, memory_order_relaxed);
    int64_t start = atomic_load_explicit(&p->pub_log_start, memory_order_relaxed);
    if (offset < 0)
        return error_set(RT_E_OFFSET_OUT_OF_RANGE, "%s: truncate to a negative offset", p->dir);
    struct leader_epoch_cache c;
    int rc = 0;
    if (offset >= p->next_offset) {
        /* The log stays; epochs that start at or past the offset (and wrote nothing) go. */
        *end_out = p->next_offset;
        bool cut = false;
        for (uint32_t k = 0; k < p->epochs.count; k++)
            cut = cut || p->epochs.entries[k].start_offset >= offset;
        if (!cut)
            return 0;
        rc = epochs_copy(&p->epochs, &c);
        if (rc)
            return rc;
        leader_epoch_truncate_from_end(&c, offset);
        return epochs_commit(p, &c);
    }
    uint32_t i = 0;
    uint64_t pos = 0;
    int64_t end = 0;
    rc = truncate_locate(p, offset, &i, &pos, &end);
    if (rc)
        return rc;
    if (end < hw || end < start)
        return error_set(RT_E_OFFSET_OUT_OF_RANGE,
                         "%s: truncating to offset %" PRId64 " would cut the log to %" PRId64
                         ", below the high watermark %" PRId64 " or the log start %" PRId64,
                         p->dir, offset, end, hw, start);
    rc = epochs_copy(&p->epochs, &c);
    if (rc)
        return rc;
    leader_epoch_truncate_from_end(&c, end);
    c.truncate_to = end; /* the intent */
    rc = epochs_commit(p, &c);
    if (rc)
        return rc;
    *after_intent = true;
    rc = truncate_apply(p, i, pos, end);
    if (rc)
        return rc;
    p->epochs.truncate_to = -1;
    rc = leader_epoch_store(p->cfg.segment.faults, p->dir, &p->epochs);
    if (rc)
        return error_set(rc, "%s: cannot store the %s: %s", p->dir, LEADER_EPOCH_FILE,
                         strerror(-rc));
    *end_out = end;
    return 0;
}

int partition_allow_replica_gaps(struct partition *p, int64_t end)
{
    assert(end > 0);
    if (p->cleaned_end >= end)
        return 0;
    pthread_mutex_lock(&p->gaps_lock);
    struct cleaner_checkpoint c = {.cleaned_end = 0, .swap_base = -1, .swap_end = -1};
    int rc = cleaner_checkpoint_load(p->dir, &c, NULL, NULL);
    if (rc == -ENOENT) {
        rc = 0;
        c = (struct cleaner_checkpoint){.cleaned_end = 0, .swap_base = -1, .swap_end = -1};
    }
    if (rc == 0) {
        /* RL8: a pending swap (committed, not settled: cleaner.c CLB7) is kept as it is. */
        if (c.cleaned_end < end)
            c.cleaned_end = end;
        rc = cleaner_checkpoint_store(p->cfg.segment.faults, p->dir, &c);
    }
    if (rc == 0) {
        if (p->cleaned_end < c.cleaned_end)
            p->cleaned_end = c.cleaned_end;
        atomic_store_explicit(&p->replica_gaps_end, p->cleaned_end, memory_order_relaxed);
    }
    cleaner_checkpoint_free(&c);
    pthread_mutex_unlock(&p->gaps_lock);
    if (rc)
        return error_set(rc, "%s/%s: cannot store: %s", p->dir, CLEANER_CHECKPOINT_FILE,
                         rc == RT_E_CORRUPT ? "the file is damaged" : strerror(-rc));
    assert(p->cleaned_end >= end);
    return 0;
}

int64_t partition_gaps_floor(struct partition *p, int64_t cleaned_end)
{
    int64_t floor = atomic_load_explicit(&p->replica_gaps_end, memory_order_relaxed);
    return floor > cleaned_end ? floor : cleaned_end;
}

int partition_restart_at(struct partition *p, int64_t offset, bool *after_intent)
{
    *after_intent = false;
    if (p->cfg.segment.read_only)
        return RT_E_READ_ONLY;
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    if (offset < 0)
        return error_set(RT_E_OFFSET_OUT_OF_RANGE, "%s: restart at a negative offset", p->dir);
    assert(!p->round_touched);
    struct io_fault_plan *faults = p->cfg.segment.faults;
    int rc = log_start_store_named(faults, p->dir, LOG_RESTART_TMP_FILE, LOG_RESTART_FILE, offset);
    if (rc)
        return error_set(rc, "%s: cannot store the %s intent: %s", p->dir, LOG_RESTART_FILE,
                         strerror(-rc));
    *after_intent = true;
    rc = segment_seal(p->active); /* a no-op when dormant; nothing preallocated stays */
    for (uint32_t k = p->segment_count; k-- > 0 && rc == 0;)
        rc = segment_unlink(p->segments[k]); /* the objects stay for readers holding them */
    if (rc == 0)
        rc = restart_clear(p, offset);
    struct segment *seg = NULL;
    if (rc == 0)
        rc = segment_create(&seg, p->dir, offset, &p->cfg.segment);
    if (rc)
        return rc;
    uint32_t n = p->segment_count;
    struct segment **run = malloc((size_t)n * sizeof(*run));
    if (!run) {
        segment_unref(seg);
        return -ENOMEM;
    }
    pthread_mutex_lock(&p->segments_lock);
    memcpy(run, p->segments, (size_t)n * sizeof(*run));
    p->segments[0] = seg;
    p->segment_count = 1;
    pthread_mutex_unlock(&p->segments_lock);
    p->active = seg;
    for (uint32_t k = 0; k < n; k++) {
        segment_maps_forget(run[k]);
        segment_unref(run[k]); /* a fetch still holding one keeps its mapping */
    }
    free(run);
    p->next_offset = offset;
    p->records_start = offset;
    p->unsynced = false;
    p->active_trusted_bytes = UINT64_MAX;
    p->active_trusted_next = offset;
    p->active_checked_bytes = UINT64_MAX;
    p->tail_base = -1;
    p->tail_bytes = 0;
    if (p->hw_held) {
        p->held_hw = offset;
        p->held_hw_segment_base = offset;
        p->held_hw_position = 0;
    }
    leader_epoch_free(&p->epochs);
    leader_epoch_init(&p->epochs);
    p->leader_epoch = -1;
    producer_table_free(&p->producers);
    p->open_txn_count = 0;
    p->snapshot_offset = -1;
    struct partition_recovery rec;
    memset(&rec, 0, sizeof(rec));
    rc = load_producers(p, &rec); /* no snapshot, nothing to replay: empty */
    if (rc)
        return rc;
    (void)store_recovery_point(p); /* a failure costs a scan of the empty segment */
    partition_publish(p);
    return restart_done(p);
}

int partition_set_high_watermark(struct partition *p, int64_t hw, int64_t *hw_out)
{
    if (p->frozen)
        return RT_E_IO_FAILED; /* PA5 */
    if (hw < 0)
        return error_set(RT_E_INVALID_ARGUMENT, "%s: negative high watermark", p->dir);
    if (hw > p->next_offset)
        hw = p->next_offset;
    *hw_out = atomic_load_explicit(&p->pub_hw, memory_order_relaxed);
    if (p->hw_held && hw <= p->held_hw)
        return 0; /* RL5: never lowered */
    int64_t base = p->active->base_offset;
    uint64_t pos = p->active->size_bytes;
    if (hw < p->next_offset) {
        uint32_t i = 0;
        int rc = truncate_locate(p, hw, &i, &pos, &hw); /* down to the batch holding it */
        if (rc)
            return rc;
        base = p->segments[i]->base_offset;
        if (p->hw_held && hw <= p->held_hw)
            return 0;
    }
    p->hw_held = true;
    p->held_hw = hw;
    p->held_hw_segment_base = base;
    p->held_hw_position = pos;
    partition_publish(p);
    *hw_out = hw;
    return 0;
}
