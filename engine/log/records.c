/*
 * records.c — the record iterator over a fetch (rt_records_init / rt_records_next), the
 * consumer's read_committed filtering (architecture.md, Rules of the protocol) and header decoding for record views.
 *
 * What it reads (docs/format.md §B is normative, §F for compressed sections):
 *
 *   batch:  baseOffset i64 @0 | length i32 @8 | leaderEpoch i32 @12 | magic i8 @16 (2) |
 *           crc u32 @17 (CRC-32C of [21, end)) | attributes i16 @21 | lastOffsetDelta i32 @23 |
 *           baseTimestamp i64 @27 | maxTimestamp i64 @35 | producerId i64 @43 |
 *           producerEpoch i16 @51 | baseSequence i32 @53 | recordCount i32 @57 | records @61
 *   attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 LogAppendTime,
 *           bit 4 transactional, bit 5 control
 *   marker: a 78-byte control batch; its one record's key is version i16 + type i16
 *           (0 ABORT, 1 COMMIT)
 *
 * Every batch is checked with batch_validate before any of its records is yielded (as Kafka's
 * Java consumer does with check.crcs=true): CRC, header, and for uncompressed batches every
 * record (V1-V15). A compressed batch's records section is decompressed into the fetch's
 * reusable buffer (bounded by RECORDS_DECOMPRESSED_MAX_BYTES) and its records are then checked
 * here with the same rules batch_validate applies to uncompressed ones (V11-V14), before the
 * first of them is yielded. A damaged batch — bad CRC, bad codec stream, a decompression bomb,
 * records that do not match the header — is RT_E_CORRUPT naming the segment file and the
 * batch's byte position, and none of its records is served.
 *
 * Keys, values and headers of uncompressed batches point into the fetch's mapping (zero copy);
 * those of compressed batches point into the fetch's decompression buffer and are valid only
 * until the next rt_records_next on the fetch (or its release).
 *
 * Filtering (read_committed), as Kafka's CompletedFetch.nextFetchedRecord /
 * consumeAbortedTransactionsUpTo / isBatchAborted / containsAbortMarker:
 *
 *   for each batch with a producer id (producerId >= 0), in log order:
 *     RC1  every aborted entry with firstOffset <= batch.lastOffset not taken yet is taken
 *          (the list is sorted by firstOffset) and its producer joins the aborted-producer set;
 *     RC2  an ABORT marker removes its producer from the set (a COMMIT changes nothing);
 *     RC3  a transactional data batch whose producer is in the set is skipped entirely;
 *   and under either isolation:
 *     RC4  control batches are never yielded; records below the start offset are skipped.
 *
 * RC1-RC3 run on every batch of the fetch, including batches wholly below the start offset (as
 * Kafka's consumer runs them over every batch of a fetch response), so a start offset past a
 * marker still sees the marker. Under read_uncommitted only RC4 applies.
 *
 * The filtering state (the aborted-producer set and the next aborted entry) and the
 * decompression buffer live in the rt_fetch, not in the caller's rt_records, so iterating
 * mutates the fetch's scratch state: one iterator per fetch at a time, and rt_records_init
 * restarts it. The set is a small array searched linearly (it holds the producers with an
 * aborted transaction in progress across the fetch, usually zero to a few); it grows by
 * doubling, so once warm an iterator never allocates.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "compression.h"
#include "error.h"
#include "fetch.h"
#include "segment.h"
#include "records.h"
#include "ringtail.h"

#define ABORTED_PRODUCERS_INITIAL 4

_Static_assert(sizeof(struct rt_records) <= 256, "rt_records stays small enough for the stack");
_Static_assert(offsetof(struct rt_fetch, view) == 0, "rt_fetch_get returns &fetch->view");
_Static_assert(BATCH_HEADER_BYTES == 61, "RecordBatch v2 header is 61 bytes");
_Static_assert(CONTROL_BATCH_BYTES == 78, "a marker batch is 78 bytes");

/* The fetch behind an iterator: view is the fetch's first member (asserted above). The handle
 * is the caller's const pointer; iterating writes only the fetch's iterator scratch state. */
static struct rt_fetch *fetch_of(const struct rt_records *it)
{
    return (struct rt_fetch *)(uintptr_t)((const uint8_t *)it->view -
                                          offsetof(struct rt_fetch, view));
}

/* Whether the fetch's bytes come from a segment the log cleaner wrote (docs/format.md A.9 CL1):
 * its batches are read with V10c and V13c (batch_validate_stored). */
static bool fetch_cleaned(const struct rt_fetch *f)
{
    return f->segment != NULL && f->segment->cfg.gaps_ok;
}

int rt_records_init(struct rt_records *it, const rt_fetch *fetch, int64_t start_offset)
{
    error_clear();
    return records_init(it, fetch, start_offset);
}

int records_init(struct rt_records *it, const rt_fetch *fetch, int64_t start_offset)
{
    if (!it || !fetch)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_records_init: NULL argument");
    memset(it, 0, sizeof(*it));
    it->view = rt_fetch_get(fetch);
    it->pos = it->view->data;
    it->end = it->view->data ? it->view->data + it->view->size_bytes : NULL;
    it->start_offset = start_offset;
    it->bound_offset = INT64_MAX;
    it->next_offset = start_offset;
    struct rt_fetch *f = fetch_of(it);
    assert(f == (const struct rt_fetch *)fetch);
    f->aborted_producer_count = 0;
    f->next_aborted = 0;
    /* The engine sorts the aborted list (architecture.md, Rules of the protocol); RC1 relies on it. */
    for (size_t i = 1; i < it->view->aborted_count; i++)
        assert(it->view->aborted[i - 1].first_offset <= it->view->aborted[i].first_offset);
    return 0;
}

static uint64_t position_of(const struct rt_records *it, const uint8_t *at)
{
    assert(at >= it->view->data);
    return it->view->segment_position + (uint64_t)(at - it->view->data);
}

static int corrupt_at(const struct rt_records *it, const uint8_t *at, const char *what,
                      const char *why)
{
    return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s%s", it->view->segment_path,
                     position_of(it, at), what, why ? why : "invalid batch");
}

/* ---- the aborted-producer set (RC1, RC2) -------------------------------------------------- */

static bool producer_set_contains(const struct rt_fetch *f, int64_t producer_id)
{
    for (size_t i = 0; i < f->aborted_producer_count; i++)
        if (f->aborted_producers[i] == producer_id)
            return true;
    return false;
}

static int producer_set_add(struct rt_fetch *f, int64_t producer_id)
{
    if (producer_set_contains(f, producer_id))
        return 0;
    if (f->aborted_producer_count == f->aborted_producer_capacity) {
        size_t cap = f->aborted_producer_capacity ? f->aborted_producer_capacity * 2
                                                  : ABORTED_PRODUCERS_INITIAL;
        int64_t *p = realloc(f->aborted_producers, cap * sizeof(*p));
        if (!p)
            return error_set(-ENOMEM, "rt_records_next: aborted-producer set of %zu", cap);
        f->aborted_producers = p;
        f->aborted_producer_capacity = cap;
    }
    f->aborted_producers[f->aborted_producer_count++] = producer_id;
    assert(f->aborted_producer_count <= f->aborted_producer_capacity);
    return 0;
}

static void producer_set_remove(struct rt_fetch *f, int64_t producer_id)
{
    for (size_t i = 0; i < f->aborted_producer_count; i++) {
        if (f->aborted_producers[i] == producer_id) {
            f->aborted_producers[i] = f->aborted_producers[--f->aborted_producer_count];
            return; /* a producer is in the set at most once */
        }
    }
}

/* RC1: takes every aborted entry that begins at or before last_offset. */
static int take_aborted_up_to(struct rt_fetch *f, int64_t last_offset)
{
    const struct rt_fetch_view *v = &f->view;
    while (f->next_aborted < v->aborted_count &&
           v->aborted[f->next_aborted].first_offset <= last_offset) {
        int rc = producer_set_add(f, v->aborted[f->next_aborted].producer_id);
        if (rc)
            return rc;
        f->next_aborted++;
    }
    assert(f->next_aborted <= v->aborted_count);
    return 0;
}

/* The type of a validated control batch's marker. */
static int marker_type(const struct rt_records *it, const uint8_t *batch, size_t size,
                       enum control_type *type)
{
    struct record_view rv;
    const char *why = NULL;
    int n = record_decode(batch + BATCH_HEADER_BYTES, batch + size, &rv, &why);
    if (n <= 0)
        return corrupt_at(it, batch, "control record: ", why);
    int rc = control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, type, NULL, &why);
    if (rc)
        return corrupt_at(it, batch, "control record: ", why);
    return 0;
}

/* ---- compressed batches ------------------------------------------------------------------ */

_Static_assert(RECORDS_DECOMPRESSED_MAX_BYTES == (size_t)64 << 20, "the reason string says 64 MiB");

/* records_validate (max_out NULL) and records_validate_append (V16: max_out set). */
static int validate_records(const uint8_t *batch, size_t len, const struct batch_header *h,
                            bool cleaned, struct compression_buffer *scratch,
                            const uint8_t **rec_pos, const uint8_t **rec_end, int64_t *max_out,
                            const char **why)
{
    assert(len >= BATCH_HEADER_BYTES);
    assert((size_t)BATCH_LOG_OVERHEAD_BYTES + (size_t)h->length == len);
    const char *local = NULL;
    if (!why)
        why = &local;
    enum batch_compression codec =
        (enum batch_compression)(h->attributes & BATCH_ATTR_COMPRESSION_MASK);
    const uint8_t *p = batch + BATCH_HEADER_BYTES, *end = batch + len;
    if (codec != BATCH_COMPRESSION_NONE && h->record_count == 0 && cleaned) {
        p = end; /* V10c: an empty batch is its header alone, whatever its codec */
    } else if (codec != BATCH_COMPRESSION_NONE) {
        int rc = compression_decompress(codec, batch + BATCH_HEADER_BYTES, len - BATCH_HEADER_BYTES,
                                        scratch, RECORDS_DECOMPRESSED_MAX_BYTES, why);
        if (rc == RT_E_RECORD_TOO_LARGE) {
            *why = "compressed records expand beyond 64 MiB";
            return RT_E_CORRUPT;
        }
        if (rc)
            return rc;
        p = scratch->data;
        end = p + scratch->len;
        if (scratch->len == 0)
            p = end = (const uint8_t *)""; /* never NULL arithmetic */
    }
    int rc = max_out ? batch_records_max_timestamp(h, p, end, max_out, why) /* V10-V16 */
                     : batch_records_check_stored(h, p, end, cleaned, why); /* V10-V15 */
    if (rc)
        return rc;
    if (rec_pos)
        *rec_pos = p;
    if (rec_end)
        *rec_end = end;
    return 0;
}

int records_validate(const uint8_t *batch, size_t len, const struct batch_header *h,
                     struct compression_buffer *scratch, const uint8_t **rec_pos,
                     const uint8_t **rec_end, const char **why)
{
    return validate_records(batch, len, h, false, scratch, rec_pos, rec_end, NULL, why);
}

int records_validate_stored(const uint8_t *batch, size_t len, const struct batch_header *h,
                            bool cleaned, struct compression_buffer *scratch,
                            const uint8_t **rec_pos, const uint8_t **rec_end, const char **why)
{
    return validate_records(batch, len, h, cleaned, scratch, rec_pos, rec_end, NULL, why);
}

int records_validate_append(const uint8_t *batch, size_t len, const struct batch_header *h,
                            struct compression_buffer *scratch, int64_t *records_max_timestamp_out,
                            const char **why)
{
    assert(records_max_timestamp_out != NULL);
    return validate_records(batch, len, h, false, scratch, NULL, NULL, records_max_timestamp_out,
                            why);
}

/* Decompresses the validated batch at `batch` into the fetch's buffer and checks its records;
 * on success [*rec_pos, *rec_end) is the records section. */
static int decompress_batch(const struct rt_records *it, const uint8_t *batch, size_t size,
                            const struct batch_header *h, const uint8_t **rec_pos,
                            const uint8_t **rec_end)
{
    struct rt_fetch *f = fetch_of(it);
    const char *why = NULL;
    int rc = records_validate_stored(batch, size, h, fetch_cleaned(f), &f->decompressed, rec_pos,
                                     rec_end, &why);
    if (rc == -ENOMEM)
        return error_set(rc, "%s: offset %" PRIu64 ": out of memory decompressing records",
                         it->view->segment_path, position_of(it, batch));
    if (rc)
        return corrupt_at(it, batch, "compressed records: ", why);
    return 0;
}

/* ---- iteration --------------------------------------------------------------------------- */

/* Moves to the next batch that has records to yield; RT_E_END at the end. */
static int next_batch(struct rt_records *it)
{
    struct rt_fetch *f = fetch_of(it);
    bool committed = it->view->isolation == RT_READ_COMMITTED;
    while (it->pos && it->pos < it->end) {
        const char *why = NULL;
        int64_t size = batch_size_at(it->pos, (size_t)(it->end - it->pos), &why);
        if (size < 0)
            return corrupt_at(it, it->pos, "", why);
        struct batch_header h;
        int rc = batch_validate_stored(it->pos, (size_t)size, fetch_cleaned(f), &h, &why);
        if (rc)
            return corrupt_at(it, it->pos, "", why);
        /* The CRC does not cover baseOffset: a damaged one must not overflow lastOffset. */
        if (h.base_offset < 0 || h.base_offset > INT64_MAX - h.last_offset_delta)
            return corrupt_at(it, it->pos, "", "baseOffset out of range");
        const uint8_t *batch = it->pos;
        it->pos += size;
        /* Kafka's nextFetchOffset: past every batch walked, served or not. */
        if (batch_last_offset(&h) + 1 > it->next_offset)
            it->next_offset = batch_last_offset(&h) + 1;
        if (committed && h.producer_id >= 0) {
            rc = take_aborted_up_to(f, batch_last_offset(&h)); /* RC1 */
            if (rc)
                return rc;
            if (batch_is_control(&h)) {
                enum control_type type;
                rc = marker_type(it, batch, (size_t)size, &type);
                if (rc)
                    return rc;
                if (type == CONTROL_ABORT)
                    producer_set_remove(f, h.producer_id); /* RC2 */
            } else if (batch_is_transactional(&h) && producer_set_contains(f, h.producer_id)) {
                continue; /* RC3 */
            }
        }
        if (batch_is_control(&h) || batch_last_offset(&h) < it->start_offset)
            continue; /* RC4 */
        const uint8_t *rec_pos = batch + BATCH_HEADER_BYTES, *rec_end = batch + size;
        if ((h.attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE) {
            rc = decompress_batch(it, batch, (size_t)size, &h, &rec_pos, &rec_end);
            if (rc)
                return rc;
        }
        it->batch = batch;
        it->rec_pos = rec_pos;
        it->rec_end = rec_end;
        it->rec_left = h.record_count;
        return 0;
    }
    return RT_E_END;
}

int rt_records_next(struct rt_records *it, struct rt_record_view *out)
{
    error_clear();
    return records_next(it, out);
}

int records_next(struct rt_records *it, struct rt_record_view *out)
{
    if (!it || !out || !it->view)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_records_next: NULL or uninitialised");
    for (;;) {
        if (!it->batch || it->rec_left == 0) {
            it->batch = NULL;
            int rc = next_batch(it);
            if (rc)
                return rc;
        }
        /* Validated when entered; re-reading the fixed header is cheaper than caching it (the
         * records may live in the decompression buffer, so the size comes from `length`). */
        struct batch_header h;
        const char *why = NULL;
        size_t size = BATCH_LOG_OVERHEAD_BYTES + be32_load(it->batch + BATCH_OFF_LENGTH);
        int rc = batch_header_parse(it->batch, size, &h, &why);
        assert(rc == 0);
        (void)rc;
        struct record_view rv;
        int n = record_decode(it->rec_pos, it->rec_end, &rv, &why);
        if (n <= 0) /* checked when the batch was entered; kept as a guard */
            return corrupt_at(it, it->batch, "record: ", why);
        it->rec_pos += n;
        it->rec_left--;
        assert(it->rec_pos <= it->rec_end);
        int64_t offset = h.base_offset + rv.offset_delta;
        if (offset < it->start_offset)
            continue;
        memset(out, 0, sizeof(*out));
        out->offset = offset;
        out->timestamp_ms = (h.attributes & BATCH_ATTR_LOG_APPEND_TIME)
                                ? h.max_timestamp
                                : h.base_timestamp + rv.timestamp_delta;
        out->key = rv.key_len >= 0 ? rv.key : NULL;
        out->key_len = rv.key_len;
        out->value = rv.value_len >= 0 ? rv.value : NULL;
        out->value_len = rv.value_len;
        out->header_count = (uint32_t)rv.header_count;
        out->headers = rv.headers;
        out->headers_size_bytes = rv.headers_size_bytes;
        out->producer_id = h.producer_id;
        out->producer_epoch = h.producer_epoch;
        out->transactional = batch_is_transactional(&h);
        return 0;
    }
}

int rt_record_header(const struct rt_record_view *rec, uint32_t index, struct rt_header *out)
{
    error_clear();
    if (!rec || !out || index >= rec->header_count)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_record_header: index out of range");
    const uint8_t *p = rec->headers, *end = rec->headers + rec->headers_size_bytes;
    for (uint32_t i = 0;; i++) {
        const char *why = NULL;
        int n = record_header_decode(p, end, out, &why);
        if (n <= 0)
            return error_set(RT_E_CORRUPT, "record %" PRId64 ": header %u: %s", rec->offset, i,
                             why ? why : "bad header");
        if (i == index)
            return 0;
        p += n;
    }
}

int64_t rt_records_next_offset(const struct rt_records *it)
{
    return it ? it->next_offset : -1;
}
