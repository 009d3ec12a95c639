/*
 * fuzz_batch.c — libFuzzer target for engine/log/batch.c, the parser every byte from disk or from a
 * caller goes through first.
 *
 * The input is read as a segment: batches back to back. For each, batch_size_at,
 * batch_header_parse and batch_validate must agree with each other; a batch that validates is
 * walked record by record and header by header (record_decode, record_header_decode,
 * control_record_parse must all accept what batch_validate accepted), and an uncompressed one
 * is re-encoded with the builder and must validate again and decode to the same records. The
 * raw input is also fed to record_decode and record_header_decode directly. Every batch is
 * validated twice, as found and with its CRC recomputed, so mutations reach the structural
 * rules behind the CRC. Each batch is
 * copied into an exact-size heap buffer so ASan catches any read past its end.
 *
 * Build: see CMakeLists.txt (-DRT_FUZZ=ON with clang) or
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iengine -Iengine/log -I. \
 *     -msse4.2 index/crc32c.c engine/log/batch.c fuzz/fuzz_batch.c -o /tmp/fb
 *   /tmp/fb -max_total_time=60 fuzz/corpus/batch
 * Seeds: fuzz/corpus/batch, written by fuzz/gen_batch_corpus.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define BATCHES_MAX 64

struct decoded {
    int64_t timestamp_ms;
    struct record_view view;
};

static bool same_bytes(const uint8_t *a, int32_t alen, const uint8_t *b, int32_t blen)
{
    if (alen != blen)
        return false;
    if (alen < 0)
        return a == NULL && b == NULL;
    return alen == 0 || memcmp(a, b, (size_t)alen) == 0;
}

/* Walks the headers of a decoded record; they must tile [headers, headers + size) exactly.
 * Fills hdrs (may be NULL) with up to header_count entries. */
static void walk_headers(const struct record_view *r, struct rt_header *hdrs)
{
    const uint8_t *q = r->headers, *end = r->headers + r->headers_size_bytes;
    for (int32_t k = 0; k < r->header_count; k++) {
        struct rt_header h;
        const char *why = NULL;
        int n = record_header_decode(q, end, &h, &why);
        CHECK(n > 0);
        CHECK(h.key_len >= 0 && h.key != NULL);
        CHECK(h.value_len >= -1);
        CHECK((h.value_len < 0) == (h.value == NULL));
        if (hdrs)
            hdrs[k] = h;
        q += n;
    }
    CHECK(q == end);
}

/* Rebuilds a valid uncompressed batch through the builder; returns false when the batch holds
 * something the builder refuses by contract (negative timestamps, transactional without a
 * producer id). */
static bool reencode_and_compare(const uint8_t *buf, size_t len, const struct batch_header *h)
{
    if ((h->attributes & BATCH_ATTR_TRANSACTIONAL) && h->producer_id < 0)
        return false;
    int32_t n = h->record_count;
    struct decoded *recs = calloc((size_t)n, sizeof *recs);
    CHECK(recs != NULL);
    const uint8_t *p = buf + BATCH_HEADER_BYTES, *end = buf + len;
    bool ok = true;
    int64_t ts_max = INT64_MIN;
    size_t headers_total = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *why = NULL;
        int m = record_decode(p, end, &recs[i].view, &why);
        CHECK(m > 0);
        p += m;
        if (__builtin_add_overflow(h->base_timestamp, recs[i].view.timestamp_delta,
                                   &recs[i].timestamp_ms) ||
            recs[i].timestamp_ms < 0)
            ok = false;
        else if (recs[i].timestamp_ms > ts_max)
            ts_max = recs[i].timestamp_ms;
        headers_total += (size_t)recs[i].view.header_count;
    }
    CHECK(p == end);
    if (!ok) {
        free(recs);
        return false;
    }

    /* Deltas are re-based on the first record, so a varlong may grow: leave slack. */
    size_t cap = len + (size_t)n * VARLONG_MAX_BYTES + 64;
    uint8_t *out = malloc(cap);
    struct rt_header *hdrs = calloc(headers_total + 1, sizeof *hdrs);
    CHECK(out != NULL && hdrs != NULL);
    struct batch_builder b;
    CHECK(batch_builder_init(&b, out, cap, h->attributes, h->producer_id, h->producer_epoch,
                             h->base_sequence) == 0);
    struct rt_header *hp = hdrs;
    for (int32_t i = 0; i < n; i++) {
        const struct record_view *v = &recs[i].view;
        walk_headers(v, hp);
        struct rt_record r = {.key = v->key,
                              .key_len = v->key_len,
                              .value = v->value,
                              .value_len = v->value_len,
                              .timestamp_ms = recs[i].timestamp_ms,
                              .headers = v->header_count ? hp : NULL,
                              .header_count = (uint32_t)v->header_count};
        size_t before = b.len;
        int64_t delta = i == 0 ? 0 : recs[i].timestamp_ms - b.base_timestamp;
        size_t want = record_encoded_size(&r, i, delta);
        CHECK(batch_builder_add(&b, &r) == 0);
        CHECK(b.len - before == want);
        hp += v->header_count;
    }
    size_t out_len = 0;
    CHECK(batch_builder_finish(&b, &out_len) == 0);

    const char *why = NULL;
    struct batch_header h2;
    int rc = batch_validate(out, out_len, 0, &h2, &why);
    if (rc != 0)
        fprintf(stderr, "re-encoded batch invalid: %s\n", why);
    CHECK(rc == 0);
    CHECK(h2.record_count == n);
    CHECK(h2.attributes == h->attributes);
    CHECK(h2.producer_id == h->producer_id);
    CHECK(h2.producer_epoch == h->producer_epoch);
    CHECK(h2.base_sequence == h->base_sequence);
    CHECK(h2.max_timestamp == ts_max);
    CHECK(out_len <= cap);

    const uint8_t *q = out + BATCH_HEADER_BYTES;
    for (int32_t i = 0; i < n; i++) {
        struct record_view v;
        int m = record_decode(q, out + out_len, &v, &why);
        CHECK(m > 0);
        const struct record_view *o = &recs[i].view;
        CHECK(v.offset_delta == i);
        CHECK(h2.base_timestamp + v.timestamp_delta == recs[i].timestamp_ms);
        CHECK(same_bytes(v.key, v.key_len, o->key, o->key_len));
        CHECK(same_bytes(v.value, v.value_len, o->value, o->value_len));
        CHECK(v.header_count == o->header_count);
        /* Headers re-encode canonically, so compare them decoded. */
        const uint8_t *a = v.headers, *ae = v.headers + v.headers_size_bytes;
        const uint8_t *c = o->headers, *ce = o->headers + o->headers_size_bytes;
        for (int32_t k = 0; k < v.header_count; k++) {
            struct rt_header x, y;
            int na = record_header_decode(a, ae, &x, &why);
            int nc = record_header_decode(c, ce, &y, &why);
            CHECK(na > 0 && nc > 0);
            CHECK(same_bytes(x.key, x.key_len, y.key, y.key_len));
            CHECK(same_bytes(x.value, x.value_len, y.value, y.value_len));
            a += na;
            c += nc;
        }
        q += m;
    }
    CHECK(q == out + out_len);
    free(hdrs);
    free(out);
    free(recs);
    return true;
}

static void check_valid(uint8_t *buf, size_t len, const struct batch_header *h)
{
    CHECK(h->magic == BATCH_MAGIC);
    CHECK((size_t)h->length + BATCH_LOG_OVERHEAD_BYTES == len);
    CHECK(h->record_count >= 1);
    CHECK(h->last_offset_delta == h->record_count - 1);
    const char *why = NULL;

    /* V7 fires before anything else once the limit is below the size. */
    CHECK(batch_validate(buf, len, (uint32_t)len, NULL, &why) == 0);
    CHECK(batch_validate(buf, len, (uint32_t)len - 1, NULL, &why) == RT_E_RECORD_TOO_LARGE);

    if ((h->attributes & BATCH_ATTR_COMPRESSION_MASK) == BATCH_COMPRESSION_NONE) {
        const uint8_t *p = buf + BATCH_HEADER_BYTES, *end = buf + len;
        for (int32_t i = 0; i < h->record_count; i++) {
            struct record_view r;
            int n = record_decode(p, end, &r, &why);
            CHECK(n > 0);
            CHECK(r.offset_delta == i);
            CHECK((r.key_len < 0) == (r.key == NULL));
            CHECK((r.value_len < 0) == (r.value == NULL));
            CHECK(r.headers >= p && r.headers + r.headers_size_bytes == p + n);
            walk_headers(&r, NULL);
            if (batch_is_control(h)) {
                enum control_type type;
                int32_t epoch;
                CHECK(control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, &epoch,
                                           &why) == 0);
                CHECK(type == CONTROL_ABORT || type == CONTROL_COMMIT);
                CHECK(len == CONTROL_BATCH_BYTES);
                /* A valid marker is what control_batch_build writes for the same fields. */
                uint8_t again[CONTROL_BATCH_BYTES];
                control_batch_build(again, h->producer_id >= 0 ? h->producer_id : 0,
                                    h->producer_epoch, type, epoch, h->base_timestamp);
                if (h->producer_id >= 0 && h->attributes == 0x30 && h->base_sequence == -1 &&
                    h->max_timestamp == h->base_timestamp && r.timestamp_delta == 0) {
                    CHECK(memcmp(again + BATCH_CRC_START, buf + BATCH_CRC_START,
                                 CONTROL_BATCH_BYTES - BATCH_CRC_START) == 0);
                }
            }
            p += n;
        }
        CHECK(p == end);
        reencode_and_compare(buf, len, h);
    }

    /* Bytes outside the CRC may be stamped freely. */
    batch_stamp_base_offset(buf, h->base_offset ^ 0x5a5a5a5a5a5aLL);
    be32_store(buf + BATCH_OFF_LEADER_EPOCH, (uint32_t)h->partition_leader_epoch ^ 0x77u);
    CHECK(batch_validate(buf, len, 0, NULL, &why) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    for (int i = 0; i < BATCHES_MAX && pos < size; i++) {
        const uint8_t *p = data + pos;
        size_t left = size - pos;
        const char *why = NULL;
        struct batch_header h;
        int64_t n = batch_size_at(p, left, &why);
        CHECK(n < 0 ? (n == RT_E_CORRUPT && why != NULL) : (n >= BATCH_HEADER_BYTES));
        int hr = batch_header_parse(p, left, &h, &why);
        CHECK(hr == 0 || hr == RT_E_CORRUPT);
        if (hr == 0)
            CHECK(n == (int64_t)BATCH_LOG_OVERHEAD_BYTES + h.length);
        if (n < 0) {
            CHECK(hr < 0);
            break;
        }
        size_t len = (size_t)n;
        uint8_t *copy = malloc(len);
        CHECK(copy != NULL);
        memcpy(copy, p, len);
        struct batch_header vh;
        why = NULL;
        int vr = batch_validate(copy, len, 0, &vh, &why);
        CHECK(vr == 0 || vr == RT_E_CORRUPT);
        if (vr == 0) {
            CHECK(hr == 0);
            CHECK(memcmp(&vh.base_offset, &h.base_offset, sizeof h.base_offset) == 0);
            CHECK(vh.crc == h.crc && vh.record_count == h.record_count);
            check_valid(copy, len, &vh);
        } else {
            CHECK(why != NULL);
        }
        /* A mutated batch almost never keeps a matching CRC, which would hide every later
         * rule from the fuzzer: validate again with the CRC recomputed. */
        if (vr == 0 || hr == 0) {
            batch_seal_crc(copy, len);
            why = NULL;
            vr = batch_validate(copy, len, 0, &vh, &why);
            CHECK(vr == 0 || vr == RT_E_CORRUPT);
            if (vr == 0)
                check_valid(copy, len, &vh);
            else
                CHECK(why != NULL && strcmp(why, "crc mismatch") != 0);
        }
        free(copy);
        pos += len;
    }

    /* The record and header decoders on their own, over raw input. */
    if (size > 0) {
        uint8_t *copy = malloc(size);
        CHECK(copy != NULL);
        memcpy(copy, data, size);
        const char *why = NULL;
        struct record_view r;
        int n = record_decode(copy, copy + size, &r, &why);
        if (n > 0) {
            CHECK((size_t)n <= size);
            walk_headers(&r, NULL);
        } else {
            CHECK(n == RT_E_CORRUPT && why != NULL);
        }
        struct rt_header hd;
        n = record_header_decode(copy, copy + size, &hd, &why);
        CHECK(n == RT_E_CORRUPT || (n > 0 && (size_t)n <= size));
        int32_t v32;
        int64_t v64;
        n = varint_decode(copy, copy + size, &v32);
        if (n > 0) {
            CHECK(n <= VARINT_MAX_BYTES);
            CHECK(varint_size(v32) <= (size_t)n);
        }
        n = varlong_decode(copy, copy + size, &v64);
        if (n > 0) {
            CHECK(n <= VARLONG_MAX_BYTES);
            CHECK(varlong_size(v64) <= (size_t)n);
        }
        free(copy);
    }
    return 0;
}
