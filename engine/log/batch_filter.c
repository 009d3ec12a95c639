/*
 * batch_filter.c — a RecordBatch v2 rewritten with only the records a predicate keeps
 * (batch_filter.h BF1-BF5; docs/format.md A.9 CL7): Kafka's MemoryRecords.filterTo for the log
 * cleaner, in our words. It owns the rewritten batch's bytes; it must never change a kept
 * record's bytes (but the timestampDelta a delete horizon rebases, BF6) nor decide which record
 * is kept.
 */
#include "batch_filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint8_t *p = realloc(*buf, n);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

/* Writes the header of the new batch: the original's 61 bytes with length, attributes,
 * timestamps and recordCount replaced (BF1, BF4, BF5), then seals its CRC. */
static void finish_header(uint8_t *out, size_t size, const uint8_t *orig, int16_t attributes,
                          int64_t base_ts, int64_t max_ts, int32_t count)
{
    memcpy(out, orig, BATCH_HEADER_BYTES);
    be32_store(out + BATCH_OFF_LENGTH, (uint32_t)(size - BATCH_LOG_OVERHEAD_BYTES));
    be16_store(out + BATCH_OFF_ATTRIBUTES, (uint16_t)attributes);
    be64_store(out + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)base_ts);
    be64_store(out + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
    be32_store(out + BATCH_OFF_RECORD_COUNT, (uint32_t)count);
    batch_seal_crc(out, size);
}

/* BF6: appends the record p[0, n) to s->plain with its timestampDelta replaced by delta (the
 * rest of its bytes unchanged, its length varint recomputed). */
static int append_rebased(struct batch_filter_scratch *s, const uint8_t *p, int n, int64_t delta)
{
    const uint8_t *end = p + n;
    int32_t body_len;
    int a = varint_decode(p, end, &body_len);
    if (a < 0 || a + 1 >= n)
        return RT_E_CORRUPT; /* record_decode accepted it: cannot happen */
    int64_t old_delta;
    int t = varlong_decode(p + a + 1, end, &old_delta);
    if (t < 0)
        return RT_E_CORRUPT;
    const uint8_t *rest = p + a + 1 + t; /* offsetDelta, key, value, headers */
    size_t rest_len = (size_t)(end - rest);
    size_t new_body = 1 + varlong_size(delta) + rest_len;
    if (new_body > (size_t)INT32_MAX - 16)
        return RT_E_RECORD_TOO_LARGE;
    int rc = reserve(&s->plain, &s->plain_cap, s->plain_len + 5 + new_body);
    if (rc)
        return rc;
    uint8_t *o = s->plain + s->plain_len;
    size_t k = varint_encode(o, (int32_t)new_body);
    o[k++] = 0; /* record attributes (V12: 0) */
    k += varlong_encode(o + k, delta);
    memcpy(o + k, rest, rest_len);
    s->plain_len += k + rest_len;
    return 0;
}

int batch_filter(const uint8_t *b, size_t len, const struct batch_header *h, bool keep_empty,
                 batch_filter_fn fn, void *ctx, struct batch_filter_scratch *s,
                 enum batch_filter_result *result, const uint8_t **out_batch, size_t *out_len,
                 struct batch_header *out_h)
{
    return batch_filter_horizon(b, len, h, keep_empty, -1, fn, ctx, s, result, out_batch, out_len,
                                out_h);
}

int batch_filter_horizon(const uint8_t *b, size_t len, const struct batch_header *h,
                         bool keep_empty, int64_t horizon_ms, batch_filter_fn fn, void *ctx,
                         struct batch_filter_scratch *s, enum batch_filter_result *result,
                         const uint8_t **out_batch, size_t *out_len, struct batch_header *out_h)
{
    enum batch_compression codec =
        (enum batch_compression)(h->attributes & BATCH_ATTR_COMPRESSION_MASK);
    bool append_time = (h->attributes & BATCH_ATTR_LOG_APPEND_TIME) != 0;
    int32_t kept = 0;
    int64_t max_ts = INT64_MIN;
    bool has_horizon = (h->attributes & BATCH_ATTR_DELETE_HORIZON) != 0;
    /* BF6: whether the result gets a delete horizon: a control batch (its caller asks only for
     * a marker whose transaction has no data left), or a data batch keeping a tombstone. */
    bool set_horizon = horizon_ms >= 0 && !has_horizon && batch_is_control(h);
    bool kept_tombstone = false;
    s->plain_len = 0;
    if (fn && h->record_count > 0) {
        const uint8_t *p = b + BATCH_HEADER_BYTES, *end = b + len;
        const char *why = NULL;
        if (codec != BATCH_COMPRESSION_NONE) {
            int rc = compression_decompress(codec, p, len - BATCH_HEADER_BYTES, &s->records,
                                            (size_t)64 << 20, &why);
            if (rc)
                return rc == -ENOMEM ? rc : RT_E_CORRUPT;
            p = s->records.data;
            end = p + s->records.len;
        }
        for (int32_t i = 0; i < h->record_count; i++) {
            struct record_view rv;
            int n = record_decode(p, end, &rv, &why);
            if (n <= 0)
                return RT_E_CORRUPT;
            struct batch_filter_record r = {h->base_offset + rv.offset_delta, rv.key, rv.key_len,
                                            rv.value_len};
            bool keep = false;
            int rc = fn(ctx, &r, &keep);
            if (rc)
                return rc;
            if (keep) { /* BF2 */
                rc = reserve(&s->plain, &s->plain_cap, s->plain_len + (size_t)n);
                if (rc)
                    return rc;
                memcpy(s->plain + s->plain_len, p, (size_t)n);
                s->plain_len += (size_t)n;
                kept++;
                int64_t ts = h->base_timestamp + rv.timestamp_delta; /* V14: representable */
                if (ts > max_ts)
                    max_ts = ts;
                if (rv.value_len < 0 && !batch_is_control(h))
                    kept_tombstone = true;
            }
            p += n;
        }
    }
    if (horizon_ms >= 0 && !has_horizon && kept_tombstone)
        set_horizon = true;
    if (set_horizon && kept > 0 && !append_time) {
        /* BF6: the kept records again, each timestampDelta rebased on the horizon, so every
         * record keeps its timestamp (Kafka's builder does the same). */
        size_t plain_len = s->plain_len;
        uint8_t *plain = s->plain;
        s->plain = NULL;
        s->plain_len = s->plain_cap = 0;
        const uint8_t *q = plain, *qend = plain + plain_len;
        int rc = 0;
        while (rc == 0 && q < qend) {
            struct record_view rv;
            const char *why = NULL;
            int n = record_decode(q, qend, &rv, &why);
            if (n <= 0) {
                rc = RT_E_CORRUPT;
                break;
            }
            int64_t ts = h->base_timestamp + rv.timestamp_delta;
            int64_t delta;
            if (__builtin_sub_overflow(ts, horizon_ms, &delta))
                rc = RT_E_CORRUPT; /* a timestamp the horizon cannot reach: no horizon */
            else
                rc = append_rebased(s, q, n, delta);
            q += n;
        }
        if (rc == RT_E_CORRUPT && q <= qend) {
            /* Keep the records as they were (no horizon): the batch stays as it is. */
            free(s->plain);
            s->plain = plain;
            s->plain_len = plain_len;
            s->plain_cap = plain_len;
            set_horizon = false;
            rc = 0;
        } else {
            free(plain);
        }
        if (rc)
            return rc;
    }
    if (kept == h->record_count && h->record_count > 0 && !set_horizon) {
        *result = BATCH_FILTER_WHOLE;
        *out_batch = b;
        *out_len = len;
        *out_h = *h;
        return 0;
    }
    if (kept == 0 && !keep_empty) {
        *result = BATCH_FILTER_DROP;
        return 0;
    }
    const uint8_t *section = s->plain;
    size_t section_len = s->plain_len;
    int16_t attributes = h->attributes;
    int64_t base_ts = h->base_timestamp;
    if (kept == 0) { /* BF5 */
        attributes =
            (int16_t)(attributes & ~(BATCH_ATTR_COMPRESSION_MASK | BATCH_ATTR_DELETE_HORIZON));
        base_ts = max_ts = h->max_timestamp;
        section_len = 0;
    } else {
        if (set_horizon) { /* BF6 */
            attributes = (int16_t)(attributes | BATCH_ATTR_DELETE_HORIZON);
            base_ts = horizon_ms;
        }
        if (append_time) /* BF4 */
            max_ts = h->max_timestamp;
        if (codec != BATCH_COMPRESSION_NONE) { /* BF3 */
            int rc = compression_compress(codec, s->plain, s->plain_len, &s->packed,
                                          COMPRESSION_LEVEL_DEFAULT);
            if (rc)
                return rc;
            section = s->packed.data;
            section_len = s->packed.len;
        }
    }
    size_t size = BATCH_HEADER_BYTES + section_len;
    if (size > (size_t)INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    int rc = reserve(&s->batch, &s->batch_cap, size);
    if (rc)
        return rc;
    if (section_len)
        memcpy(s->batch + BATCH_HEADER_BYTES, section, section_len);
    finish_header(s->batch, size, b, attributes, base_ts, max_ts, kept);
    const char *why = NULL;
    rc = batch_header_parse(s->batch, size, out_h, &why);
    if (rc)
        return rc;
    *result = BATCH_FILTER_REWRITTEN;
    *out_batch = s->batch;
    *out_len = size;
    return 0;
}

void batch_filter_scratch_free(struct batch_filter_scratch *s)
{
    compression_buffer_free(&s->records);
    compression_buffer_free(&s->packed);
    free(s->plain);
    free(s->batch);
    s->plain = s->batch = NULL;
    s->plain_len = s->plain_cap = s->batch_cap = 0;
}
