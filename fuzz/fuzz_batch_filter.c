/*
 * fuzz_batch_filter.c — libFuzzer target for the log cleaner's batch rewrite
 * (engine/log/batch_filter.c BF1-BF5, docs/format.md A.9 CL7) over batches read from disk
 * (batch_validate_stored, V10c/V13c). A batch the read rules accept is filtered with a
 * predicate drawn from its keys; batch_filter must never read out of bounds, and a rewritten
 * batch must pass the same read rules with its baseOffset, lastOffsetDelta and producer fields
 * unchanged and no more records than it had; the same with a delete horizon (BF6, markers
 * included).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "batch_filter.h"
#include "compression.h"
#include "index/crc32c.h"
#include "records.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_batch_filter: %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Keeps a record when its key's first byte is odd (no key: dropped). */
static int odd_key(void *ctx, const struct batch_filter_record *r, bool *keep)
{
    (void)ctx;
    *keep = r->key_len > 0 && (r->key[0] & 1);
    return 0;
}

static void one(const uint8_t *data, size_t size, bool keep_empty)
{
    static struct compression_buffer scratch = COMPRESSION_BUFFER_INIT;
    static struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    struct batch_header h;
    if (batch_validate_stored(data, size, true, &h, NULL) != 0 || batch_is_control(&h))
        return;
    if (records_validate_stored(data, size, &h, true, &scratch, NULL, NULL, NULL) != 0)
        return;
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    struct batch_header nh;
    if (batch_filter(data, size, &h, keep_empty, odd_key, NULL, &s, &res, &out, &out_len, &nh) != 0)
        return;
    if (res != BATCH_FILTER_REWRITTEN)
        return;
    struct batch_header vh;
    CHECK(batch_validate_stored(out, out_len, true, &vh, NULL) == 0);
    CHECK(records_validate_stored(out, out_len, &vh, true, &scratch, NULL, NULL, NULL) == 0);
    CHECK(vh.base_offset == h.base_offset && vh.last_offset_delta == h.last_offset_delta);
    CHECK(vh.producer_id == h.producer_id && vh.producer_epoch == h.producer_epoch &&
          vh.base_sequence == h.base_sequence);
    CHECK(vh.record_count < h.record_count || h.record_count == 0);
}

static int keep_all(void *ctx, const struct batch_filter_record *r, bool *keep)
{
    (void)ctx;
    (void)r;
    *keep = true;
    return 0;
}

/* BF6: the same with a delete horizon (markers included, kept whole): the result passes the read
 * rules (V15c for a marker), keeps its offsets and producer fields, and carries the horizon when
 * it has bit 6 and had none. */
static void one_horizon(const uint8_t *data, size_t size)
{
    static struct compression_buffer scratch = COMPRESSION_BUFFER_INIT;
    static struct batch_filter_scratch s = BATCH_FILTER_SCRATCH_INIT;
    struct batch_header h;
    if (batch_validate_stored(data, size, true, &h, NULL) != 0)
        return;
    if (records_validate_stored(data, size, &h, true, &scratch, NULL, NULL, NULL) != 0)
        return;
    int64_t horizon;
    if (__builtin_add_overflow(h.max_timestamp, (int64_t)3600000, &horizon) || horizon < 0)
        return;
    bool control = batch_is_control(&h);
    enum batch_filter_result res;
    const uint8_t *out = NULL;
    size_t out_len = 0;
    struct batch_header nh;
    if (batch_filter_horizon(data, size, &h, false, horizon, control ? keep_all : odd_key, NULL, &s,
                             &res, &out, &out_len, &nh) != 0)
        return;
    if (res != BATCH_FILTER_REWRITTEN)
        return;
    struct batch_header vh;
    CHECK(batch_validate_stored(out, out_len, true, &vh, NULL) == 0);
    CHECK(records_validate_stored(out, out_len, &vh, true, &scratch, NULL, NULL, NULL) == 0);
    CHECK(vh.base_offset == h.base_offset && vh.last_offset_delta == h.last_offset_delta);
    CHECK(vh.producer_id == h.producer_id && vh.producer_epoch == h.producer_epoch);
    CHECK(vh.record_count <= h.record_count);
    if ((vh.attributes & BATCH_ATTR_DELETE_HORIZON) && !(h.attributes & BATCH_ATTR_DELETE_HORIZON))
        CHECK(vh.base_timestamp == horizon);
}

/* The input with its CRC made right, so mutations reach the records behind the checksum. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < BATCH_HEADER_BYTES)
        return 0;
    uint8_t *copy = malloc(size);
    CHECK(copy != NULL);
    memcpy(copy, data, size);
    uint32_t crc = crc32c(0, copy + 21, size - 21);
    copy[17] = (uint8_t)(crc >> 24);
    copy[18] = (uint8_t)(crc >> 16);
    copy[19] = (uint8_t)(crc >> 8);
    copy[20] = (uint8_t)crc;
    one(copy, size, false);
    one(copy, size, true);
    one_horizon(copy, size);
    free(copy);
    return 0;
}
