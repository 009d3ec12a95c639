/*
 * records.c — the record iterator over a fetch (rt_records_init / rt_records_next) and header
 * decoding for record views.
 *
 * Every batch's CRC and structure are checked before any of its records is yielded (as Kafka's
 * Java consumer does with check.crcs=true); a damaged batch is reported as RT_E_CORRUPT naming
 * the segment file and byte position and is never served. Keys, values and headers point into
 * the fetch's mapping. Control batches are skipped. Compressed batches are not decoded yet
 * (RT_E_UNSUPPORTED_COMPRESSION); read_committed filtering of aborted transactions arrives with
 * transactional partitions.
 */
#include <inttypes.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "ringtail.h"

_Static_assert(sizeof(struct rt_records) <= 256, "rt_records stays small enough for the stack");

int rt_records_init(struct rt_records *it, const rt_fetch *fetch, int64_t start_offset)
{
    error_clear();
    if (!it || !fetch)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_records_init: NULL argument");
    memset(it, 0, sizeof(*it));
    it->view = rt_fetch_get(fetch);
    it->pos = it->view->data;
    it->end = it->view->data ? it->view->data + it->view->size_bytes : NULL;
    it->start_offset = start_offset;
    it->bound_offset = INT64_MAX;
    return 0;
}

static int corrupt_at(const struct rt_records *it, const uint8_t *at, const char *why)
{
    uint64_t pos = it->view->segment_position + (uint64_t)(at - it->view->data);
    return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", it->view->segment_path, pos,
                     why);
}

/* Moves to the next batch that has records to yield; RT_E_END at the end. */
static int next_batch(struct rt_records *it)
{
    while (it->pos && it->pos < it->end) {
        const char *why = NULL;
        int64_t size = batch_size_at(it->pos, (size_t)(it->end - it->pos), &why);
        if (size < 0)
            return corrupt_at(it, it->pos, why);
        struct batch_header h;
        int rc = batch_validate(it->pos, (size_t)size, 0, &h, &why);
        if (rc)
            return corrupt_at(it, it->pos, why ? why : "invalid batch");
        const uint8_t *batch = it->pos;
        it->pos += size;
        if (batch_last_offset(&h) < it->start_offset || batch_is_control(&h))
            continue;
        if ((h.attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE)
            return error_set(RT_E_UNSUPPORTED_COMPRESSION,
                             "%s: offset %" PRIu64 ": compressed batches are not decoded yet",
                             it->view->segment_path,
                             it->view->segment_position + (uint64_t)(batch - it->view->data));
        it->batch = batch;
        it->rec_pos = batch + BATCH_HEADER_BYTES;
        it->rec_end = batch + size;
        it->rec_left = h.record_count;
        return 0;
    }
    return RT_E_END;
}

int rt_records_next(struct rt_records *it, struct rt_record_view *out)
{
    error_clear();
    if (!it || !out || !it->view)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_records_next: NULL or uninitialised");
    for (;;) {
        if (!it->batch || it->rec_left == 0) {
            it->batch = NULL;
            int rc = next_batch(it);
            if (rc)
                return rc;
        }
        struct batch_header h;
        const char *why = NULL;
        /* Validated when entered; re-reading the fixed header is cheaper than caching it. */
        (void)batch_header_parse(it->batch, (size_t)(it->rec_end - it->batch), &h, &why);
        struct record_view rv;
        int n = record_decode(it->rec_pos, it->rec_end, &rv, &why);
        if (n <= 0)
            return corrupt_at(it, it->rec_pos, why ? why : "bad record");
        it->rec_pos += n;
        it->rec_left--;
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
