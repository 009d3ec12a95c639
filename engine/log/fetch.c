/*
 * fetch.c — zero-copy reads of one partition: fetch_partition_start (behind rt_fetch_start and
 * log_fetch_start), rt_fetch_get, rt_fetch_release and fetch_partition_list_offsets (behind
 * rt_list_offsets). It never looks a topic up: the log layer (log.c) does.
 *
 * A fetch runs on the caller's thread: a lock-free snapshot of the partition's watermarks, one
 * short mutex hold to reference the segment holding the offset, a binary search of its offset
 * index and a walk over at most index_interval_bytes of batch headers, then a walk over the
 * headers of the batches it returns (to stop on a whole batch within max_bytes). No payload byte
 * is copied: the view points into the segment's read-only mapping, which stays mapped until
 * rt_fetch_release even if retention deletes the segment meanwhile. Handles come from the
 * engine's fetch pool (FP1-FP3 in fetch.h): a warm fetch allocates nothing.
 *
 * Invariants (asserted):
 *   FE1. A fetch's range is whole batches, [start, pos) within the segment's readable end for
 *       its isolation, starting at the batch holding the requested offset; empty only when the
 *       offset is the bound.
 *   FE2. The aborted list handed out is sorted by first offset, and only read_committed fetches
 *       have one.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "fetch.h"
#include "partition.h"

struct fetch_pool *fetch_pool_create(uint32_t capacity)
{
    assert(capacity > 0);
    struct fetch_pool *fp = calloc(1, sizeof(*fp));
    if (!fp)
        return NULL;
    pthread_mutex_init(&fp->lock, NULL);
    fp->capacity = capacity;
    return fp;
}

static void fetch_free(struct rt_fetch *f)
{
    free(f->aborted);
    free(f->aborted_producers);
    compression_buffer_free(&f->decompressed);
    free(f);
}

void fetch_pool_destroy(struct fetch_pool *fp)
{
    if (!fp)
        return;
    pthread_mutex_lock(&fp->lock);
    uint32_t listed = 0;
    while (fp->free) {
        struct rt_fetch *f = fp->free;
        fp->free = f->next;
        fetch_free(f);
        listed++;
    }
    assert(listed + fp->open == fp->made); /* FP2 */
    bool last = fp->open == 0;
    fp->orphaned = true;
    pthread_mutex_unlock(&fp->lock);
    if (last) { /* FP4: else the last rt_fetch_release frees it */
        pthread_mutex_destroy(&fp->lock);
        free(fp);
    }
}

/* A handle from the pool, reset as calloc would leave it but for the lists it keeps; or
 * RT_E_FETCHES_FULL (FP1), -ENOMEM. */
static int fetch_take(struct fetch_pool *fp, struct rt_fetch **out)
{
    pthread_mutex_lock(&fp->lock);
    if (fp->open == fp->capacity) {
        uint32_t cap = fp->capacity;
        pthread_mutex_unlock(&fp->lock);
        return error_set(RT_E_FETCHES_FULL,
                         "rt_fetch_start: %u fetches are open (fetches_max); release one first",
                         cap);
    }
    struct rt_fetch *f = fp->free;
    if (f) {
        fp->free = f->next;
    } else {
        f = calloc(1, sizeof(*f)); /* once per new high of fetches open at once */
        if (!f) {
            pthread_mutex_unlock(&fp->lock);
            return -ENOMEM;
        }
        fp->made++;
    }
    fp->open++;
    assert(fp->open <= fp->capacity); /* FP1 */
    pthread_mutex_unlock(&fp->lock);
    assert(f->segment == NULL && f->decompressed.data == NULL); /* FP3 */
    struct rt_aborted_txn *aborted = f->aborted;
    size_t aborted_capacity = f->aborted_capacity;
    int64_t *producers = f->aborted_producers;
    size_t producer_capacity = f->aborted_producer_capacity;
    memset(f, 0, sizeof(*f));
    f->pool = fp;
    f->aborted = aborted;
    f->aborted_capacity = aborted_capacity;
    f->aborted_producers = producers;
    f->aborted_producer_capacity = producer_capacity;
    *out = f;
    return 0;
}

/* The bound a reader at `isolation` may read to, with its segment and position. */
static void read_bound(const struct partition_watermarks *w, enum rt_isolation isolation,
                       int64_t *offset, int64_t *segment_base, uint64_t *position)
{
    if (isolation == RT_READ_COMMITTED) {
        *offset = w->last_stable_offset;
        *segment_base = w->lso_segment_base;
        *position = w->lso_position;
    } else if (isolation == RT_READ_REPLICA) { /* partition.h RL5: past a held high watermark */
        *offset = w->log_end;
        *segment_base = w->end_segment_base;
        *position = w->end_position;
    } else {
        *offset = w->high_watermark;
        *segment_base = w->hw_segment_base;
        *position = w->hw_position;
    }
}

/* Readable end of `seg` for a reader bounded at (bound_base, bound_pos). */
static uint64_t readable_end(struct segment *seg, int64_t bound_base, uint64_t bound_pos)
{
    if (seg->base_offset == bound_base)
        return bound_pos;
    return atomic_load_explicit(&seg->readable_bytes, memory_order_acquire);
}

/* Last offset of the whole batches in [start, end) of seg (headers were checked by the walk). */
static int64_t last_offset_of(const struct segment *seg, uint64_t start, uint64_t end)
{
    int64_t last = -1;
    uint64_t pos = start;
    while (pos < end) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, end - pos, &why);
        if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
            break;
        last = batch_last_offset(&h);
        pos += (uint64_t)size;
    }
    return last;
}

static int add_aborted(void *ctx, const struct txn_index_entry *entry)
{
    struct rt_fetch *f = ctx;
    if (f->view.aborted_count == f->aborted_capacity) {
        size_t cap = f->aborted_capacity ? f->aborted_capacity * 2 : 8;
        struct rt_aborted_txn *a = realloc(f->aborted, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        f->aborted = a;
        f->aborted_capacity = cap;
    }
    f->aborted[f->view.aborted_count++] = (struct rt_aborted_txn){
        .producer_id = entry->producer_id, .first_offset = entry->first_offset};
    return 0;
}

static int cmp_aborted(const void *a, const void *b)
{
    const struct rt_aborted_txn *x = a, *y = b;
    if (x->first_offset != y->first_offset)
        return x->first_offset < y->first_offset ? -1 : 1;
    return x->producer_id < y->producer_id ? -1 : x->producer_id > y->producer_id;
}

/* The aborted transactions overlapping [start, upper): from the segment holding start onwards,
 * each segment's .txnindex, until an entry proves no later abort can overlap (its last stable
 * offset >= upper), sorted by first offset (architecture.md, Rules of the protocol; Kafka's collectAbortedTransactions). */
static int collect_aborted(struct rt_fetch *f, struct partition *p, struct segment *first,
                           int64_t start, int64_t upper)
{
    struct segment *seg = first;
    segment_ref(seg);
    int rc = 0;
    while (seg) {
        bool stop = false;
        rc = txn_index_collect(&seg->txns, start, upper, add_aborted, f, &stop);
        struct segment *next = (rc || stop) ? NULL : partition_segment_after(p, seg->base_offset);
        segment_unref(seg);
        seg = next;
    }
    if (rc)
        return error_set(rc, "%s: collecting aborted transactions: %s", p->dir, rt_strerror(rc));
    if (f->view.aborted_count > 1)
        qsort(f->aborted, f->view.aborted_count, sizeof(*f->aborted), cmp_aborted);
    f->view.aborted = f->aborted;
    for (size_t i = 1; i < f->view.aborted_count; i++)
        assert(f->aborted[i - 1].first_offset <= f->aborted[i].first_offset); /* FE2 */
    assert(f->view.isolation == RT_READ_COMMITTED);
    return 0;
}

int fetch_partition_start(struct fetch_pool *fp, struct partition *p, int64_t offset,
                          size_t max_bytes, enum rt_isolation isolation, rt_fetch **out)
{
    if (!out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_fetch_start: NULL argument");
    *out = NULL;
    if (isolation != RT_READ_COMMITTED && isolation != RT_READ_UNCOMMITTED &&
        isolation != RT_READ_REPLICA)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_fetch_start: unknown isolation %d",
                         (int)isolation);
    struct partition_watermarks w;
    partition_watermarks(p, &w);
    int64_t bound, bound_base;
    uint64_t bound_pos;
    read_bound(&w, isolation, &bound, &bound_base, &bound_pos);
    /* RL5: past a held high watermark but not past the log end, a consumer's fetch is empty
     * (Kafka's answer), not out of range — read_committed too: a consumer at its position on a
     * new leader whose high watermark has not caught up yet must not be told to reset its
     * offset (it would read everything again). Between the LSO and the high watermark a
     * read_committed fetch stays out of range here (the broker answers it empty, KF1). */
    bool past_held = (isolation == RT_READ_UNCOMMITTED || isolation == RT_READ_COMMITTED) &&
                     w.high_watermark < w.log_end && offset > w.high_watermark &&
                     offset <= w.log_end;
    if (offset < w.log_start_offset || (offset > bound && !past_held))
        return error_set(RT_E_OFFSET_OUT_OF_RANGE,
                         "%s: offset %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", p->dir,
                         offset, w.log_start_offset, bound);
    struct rt_fetch *f = NULL;
    int rc = fetch_take(fp, &f);
    if (rc)
        return rc;
    f->view.high_watermark = w.high_watermark;
    f->view.last_stable_offset = w.last_stable_offset;
    f->view.log_start_offset = w.log_start_offset;
    f->view.segment_path = "";
    f->view.isolation = isolation;
    if (offset >= bound) {
        *out = f;
        return 0;
    }
    struct segment *seg = NULL;
    rc = partition_segment_for(p, offset, &seg);
    if (rc) {
        rt_fetch_release(f);
        /* SG9: a segment its first reader found changed (RT_E_CORRUPT) or could not map keeps
         * the detail segment_map set, which names its file. */
        if (rc != RT_E_OFFSET_OUT_OF_RANGE)
            return rc;
        return error_set(rc, "%s: offset %" PRId64 " was deleted by retention", p->dir, offset);
    }
    uint64_t end = readable_end(seg, bound_base, bound_pos);
    uint64_t start = 0;
    rc = segment_find_batch(seg, offset, end, &start);
    bool skipped = false;
    while (rc == RT_E_OFFSET_OUT_OF_RANGE && seg->cfg.gaps_ok) {
        /* CL2 (docs/format.md A.9): the cleaner dropped the segment's last batches; the next
         * record is in a later segment, as Kafka reads on past a compacted segment's end. */
        struct segment *next = partition_segment_after(p, seg->base_offset);
        if (!next)
            break;
        segment_unref(seg);
        seg = next;
        skipped = true;
        end = readable_end(seg, bound_base, bound_pos);
        rc = segment_find_batch(seg, offset, end, &start);
    }
    if (rc == RT_E_OFFSET_OUT_OF_RANGE && skipped) {
        segment_unref(seg); /* nothing readable past the gap yet: an empty answer */
        *out = f;
        return 0;
    }
    if (rc) {
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            error_set(rc, "%s: no batch holds offset %" PRId64, seg->log_path, offset);
        segment_unref(seg);
        rt_fetch_release(f);
        return rc;
    }
    /* Whole batches up to max_bytes, but at least one (as Kafka, so a big batch is never
     * stuck). A damaged header past the first batch ends the fetch early; the next fetch from
     * there reports it. */
    uint64_t pos = start, last_start = start;
    bool first = true;
    while (pos < end) {
        const char *why = NULL;
        int64_t size = batch_size_at(seg->map + pos, end - pos, &why);
        if (size < 0) {
            if (first) {
                rc = error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
                segment_unref(seg);
                rt_fetch_release(f);
                return rc;
            }
            break;
        }
        if (!first && pos + (uint64_t)size - start > max_bytes)
            break;
        last_start = pos;
        pos += (uint64_t)size;
        if (first) {
            first = false;
            /* Skip to the last indexed batch start that still fits, so the walk covers at most
             * index_interval_bytes of headers, not the whole max_bytes: a fetch's cost does not
             * grow with how many (small) batches it returns. */
            uint64_t target = start + max_bytes < start ? UINT64_MAX : start + max_bytes;
            uint64_t jump = segment_batch_floor(seg, target < end ? target : end);
            if (jump > pos && jump < end)
                pos = jump;
        }
    }
    if (isolation == RT_READ_COMMITTED && pos > start) {
        rc = collect_aborted(f, p, seg, offset, last_offset_of(seg, last_start, pos) + 1);
        if (rc) {
            segment_unref(seg);
            rt_fetch_release(f);
            return rc;
        }
    }
    /* FE1 */
    assert(pos > start);
    assert(pos <= end);
    assert(end <= seg->map_bytes);
    if ((int64_t)be64_load(seg->map + start) > offset && !seg->cfg.gaps_ok && !skipped) {
        /* Disk bytes, not an invariant: the batch the index led to must hold offset. A segment
         * an open trusted without reading (format.md RT1, RT4) may have changed under it. */
        rc = error_set(RT_E_CORRUPT,
                       "%s: offset %" PRIu64 ": batch base offset %" PRId64
                       " is past the fetched offset %" PRId64,
                       seg->log_path, start, (int64_t)be64_load(seg->map + start), offset);
        segment_unref(seg);
        rt_fetch_release(f);
        return rc;
    }
    f->segment = seg;
    f->view.data = seg->map + start;
    f->view.size_bytes = pos - start;
    f->view.segment_path = seg->log_path;
    f->view.segment_position = start;
    *out = f;
    return 0;
}

const struct rt_fetch_view *rt_fetch_get(const rt_fetch *f)
{
    return f ? &f->view : NULL;
}

/* Lists kept by a pooled handle are bounded: a longer one is freed (FP3's "small lists"). */
#define FETCH_KEEP_ENTRIES_MAX 256

void rt_fetch_release(rt_fetch *f)
{
    if (!f)
        return;
    if (f->segment)
        segment_unref(f->segment);
    f->segment = NULL;
    struct fetch_pool *fp = f->pool;
    if (!fp) {
        fetch_free(f);
        return;
    }
    compression_buffer_free(&f->decompressed); /* FP3 */
    memset(&f->decompressed, 0, sizeof(f->decompressed));
    if (f->aborted_capacity > FETCH_KEEP_ENTRIES_MAX) {
        free(f->aborted);
        f->aborted = NULL;
        f->aborted_capacity = 0;
    }
    if (f->aborted_producer_capacity > FETCH_KEEP_ENTRIES_MAX) {
        free(f->aborted_producers);
        f->aborted_producers = NULL;
        f->aborted_producer_capacity = 0;
    }
    pthread_mutex_lock(&fp->lock);
    assert(fp->open > 0);
    fp->open--;
    if (fp->orphaned) { /* FP4: the engine is gone */
        bool last = fp->open == 0;
        pthread_mutex_unlock(&fp->lock);
        fetch_free(f);
        if (last) {
            pthread_mutex_destroy(&fp->lock);
            free(fp);
        }
        return;
    }
    f->next = fp->free;
    fp->free = f;
    pthread_mutex_unlock(&fp->lock);
}

int fetch_from_bytes(rt_fetch **out, const uint8_t *data, size_t len, enum rt_isolation isolation,
                     const struct rt_aborted_txn *aborted, size_t aborted_count)
{
    struct rt_fetch *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    if (aborted_count > 0) {
        f->aborted = malloc(aborted_count * sizeof(*f->aborted));
        if (!f->aborted) {
            free(f);
            return -ENOMEM;
        }
        memcpy(f->aborted, aborted, aborted_count * sizeof(*f->aborted));
        f->aborted_capacity = aborted_count;
    }
    f->view.data = data;
    f->view.size_bytes = len;
    f->view.isolation = isolation;
    f->view.aborted = f->aborted;
    f->view.aborted_count = aborted_count;
    f->view.segment_path = "(memory)";
    *out = f;
    return 0;
}

/* Kafka's FileRecords.searchForTimestamp over the batch at p[0, len): the first record below
 * `bound` whose timestamp is >= ts. 0 with its offset and timestamp; RT_E_END when none is (or
 * the next record is at the bound); RT_E_CORRUPT with *why; -ENOMEM. A compressed batch is
 * decompressed into *scratch (bounded by RECORDS_DECOMPRESSED_MAX_BYTES), because the record
 * Kafka answers may be any of its records; a LogAppendTime batch's records all carry its max
 * timestamp. */
static int first_record_at_or_after(const uint8_t *p, size_t len, bool cleaned, int64_t ts,
                                    int64_t bound, struct compression_buffer *scratch,
                                    int64_t *offset_out, int64_t *timestamp_out, const char **why)
{
    struct batch_header h;
    if (batch_validate_stored(p, len, cleaned, &h, why) != 0)
        return RT_E_CORRUPT;
    const uint8_t *r = p + BATCH_HEADER_BYTES, *end = p + len;
    enum batch_compression codec =
        (enum batch_compression)(h.attributes & BATCH_ATTR_COMPRESSION_MASK);
    if (codec != BATCH_COMPRESSION_NONE && h.record_count > 0) { /* V10c: empty, no stream */
        /* The reader's bound (records.h RECORDS_DECOMPRESSED_MAX_BYTES, 64 MiB; records.h is
         * not included here: it includes fetch.h). Each record is then decoded with bounds. */
        int rc = compression_decompress(codec, p + BATCH_HEADER_BYTES, len - BATCH_HEADER_BYTES,
                                        scratch, (size_t)64 << 20, why);
        if (rc)
            return rc == -ENOMEM ? rc : RT_E_CORRUPT;
        r = scratch->data;
        end = r + scratch->len;
        if (scratch->len == 0)
            r = end = (const uint8_t *)"";
    }
    bool append_time = (h.attributes & BATCH_ATTR_LOG_APPEND_TIME) != 0;
    for (int32_t i = 0; i < h.record_count; i++) {
        struct record_view rv;
        int n = record_decode(r, end, &rv, why);
        if (n <= 0)
            return RT_E_CORRUPT;
        int64_t off = h.base_offset + rv.offset_delta;
        if (off >= bound)
            return RT_E_END;
        int64_t rts = h.max_timestamp;
        if (!append_time && __builtin_add_overflow(h.base_timestamp, rv.timestamp_delta, &rts)) {
            *why = "record timestamp overflows";
            return RT_E_CORRUPT;
        }
        if (rts >= ts) {
            assert(off >= h.base_offset);
            *offset_out = off;
            *timestamp_out = rts;
            return 0;
        }
        r += n;
    }
    return RT_E_END;
}

int fetch_partition_offset_for_timestamp(struct partition *p, int64_t ts,
                                         enum rt_isolation isolation, int64_t *offset_out,
                                         int64_t *timestamp_out)
{
    if (!offset_out || !timestamp_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets_by_timestamp: NULL argument");
    if (ts < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_list_offsets_by_timestamp: timestamp %" PRId64 " is below 0", ts);
    if (isolation != RT_READ_COMMITTED && isolation != RT_READ_UNCOMMITTED)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets_by_timestamp: unknown isolation");
    *offset_out = -1;
    *timestamp_out = -1;
    struct partition_watermarks w;
    partition_watermarks(p, &w);
    int64_t bound, bound_base;
    uint64_t bound_pos;
    read_bound(&w, isolation, &bound, &bound_base, &bound_pos);
    struct compression_buffer scratch = COMPRESSION_BUFFER_INIT;
    int rc = RT_E_END;
    int64_t off = w.log_start_offset;
    while (off < bound && rc == RT_E_END) {
        struct segment *seg = NULL;
        if (partition_segment_for(p, off, &seg) != 0) {
            /* Retention moved the start meanwhile: begin again from the new start. */
            partition_watermarks(p, &w);
            if (w.log_start_offset <= off)
                break;
            off = w.log_start_offset;
            continue;
        }
        bool last = seg->base_offset == bound_base;
        uint64_t end = readable_end(seg, bound_base, bound_pos);
        int64_t next = last ? bound : seg->next_offset;
        if (atomic_load_explicit(&seg->max_timestamp_ms, memory_order_acquire) >= ts || last) {
            uint64_t pos = 0;
            int found = segment_find_timestamp(seg, ts, end, &pos);
            if (found != 0 && found != RT_E_END)
                rc = found;
            while (found == 0 && rc == RT_E_END && pos < end) {
                const char *why = "damaged batch";
                int64_t size = batch_size_at(seg->map + pos, end - pos, &why);
                if (size < 0)
                    rc = RT_E_CORRUPT;
                else
                    rc =
                        first_record_at_or_after(seg->map + pos, (size_t)size, seg->cfg.gaps_ok, ts,
                                                 bound, &scratch, offset_out, timestamp_out, &why);
                if (rc == RT_E_CORRUPT)
                    rc = error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos,
                                   why);
                else if (rc == -ENOMEM)
                    rc = error_set(rc, "%s: offset %" PRIu64 ": out of memory decompressing",
                                   seg->log_path, pos);
                pos += size > 0 ? (uint64_t)size : 0;
            }
        }
        segment_unref(seg);
        if (last)
            break;
        off = next;
    }
    compression_buffer_free(&scratch);
    if (rc == RT_E_END) {
        *offset_out = -1;
        *timestamp_out = -1;
        return 0;
    }
    if (rc == 0 && *offset_out < w.log_start_offset)
        *offset_out = w.log_start_offset; /* PA13: a batch that begins below the log start */
    assert(rc != 0 || (*offset_out >= w.log_start_offset && *offset_out < bound));
    return rc;
}

int fetch_partition_list_offsets(struct partition *p, int64_t spec, enum rt_isolation isolation,
                                 int64_t *offset_out)
{
    if (!offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets: NULL argument");
    if (spec < RT_OFFSET_EARLIEST)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_list_offsets: spec %" PRId64 " is neither -2, -1 nor a timestamp",
                         spec);
    if (isolation != RT_READ_COMMITTED && isolation != RT_READ_UNCOMMITTED)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets: unknown isolation");
    struct partition_watermarks w;
    partition_watermarks(p, &w);
    int64_t bound, bound_base;
    uint64_t bound_pos;
    read_bound(&w, isolation, &bound, &bound_base, &bound_pos);
    if (spec == RT_OFFSET_EARLIEST) {
        *offset_out = w.log_start_offset;
        return 0;
    }
    if (spec == RT_OFFSET_LATEST) {
        *offset_out = bound;
        return 0;
    }
    int64_t found_ts = -1;
    int rc = fetch_partition_offset_for_timestamp(p, spec, isolation, offset_out, &found_ts);
    if (rc == 0 && *offset_out < 0)
        *offset_out = bound; /* none at or after spec: the bound, as documented */
    return rc;
}
