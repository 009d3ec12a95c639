/*
 * fuzz_control.c — libFuzzer target for transaction markers: control_record_parse
 * (engine/log/batch.c, docs/format.md §B.6) and the record iterator's handling of control and
 * transactional batches (engine/log/records.c, rules RC1-RC4).
 *
 * The input is used three ways:
 *   1. Split into a key and a value at every point up to 16 bytes, at the middle and at a point
 *      chosen by the first byte, plus null key / null value: control_record_parse must accept
 *      exactly the 4-byte key (version 0, type 0 ABORT or 1 COMMIT) and 6-byte value (version 0,
 *      coordinatorEpoch) a real marker carries, and what it accepts must be byte for byte what
 *      control_batch_build writes for the parsed type and epoch; anything else is RT_E_CORRUPT
 *      with a reason.
 *   2. As one whole batch, as found: batch_validate must never read out of bounds; a control
 *      batch it accepts is 78 bytes and its record parses as a marker.
 *   3. As one batch with the control and transactional bits forced on, the length field set to
 *      the input size and the CRC resealed, so mutations reach V15 behind the CRC; and as found
 *      with only length and CRC resealed. Each of these is also iterated (fetch_from_bytes, both
 *      isolations, with an aborted list naming the batch's producer): the iterator ends with
 *      RT_E_END or RT_E_CORRUPT, yields nothing from a control batch, and yields every record of
 *      a valid uncompressed data batch under read_uncommitted.
 * Every buffer is an exact-size heap copy so ASan catches a read past its end.
 *
 * Build: -DRT_FUZZ=ON with clang (CMakeLists.txt), or link against every engine/io/index source
 * with -fsanitize=fuzzer,address,undefined. Seeds: fuzz/corpus/control (a COMMIT and an ABORT
 * marker's key+value bytes, and the two whole 78-byte marker batches).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "fetch.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Marker layout (format.md §B.6): key at 66 (4 bytes), value at 71 (6 bytes). */
#define MARKER_KEY_AT   66
#define MARKER_VALUE_AT 71

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    CHECK(q != NULL);
    if (n)
        memcpy(q, p, n);
    return q;
}

static void parse_split(const uint8_t *data, size_t size, size_t k)
{
    uint8_t *key = dup_bytes(data, k);
    uint8_t *value = dup_bytes(data + k, size - k);
    enum control_type type = CONTROL_ABORT;
    int32_t epoch = 0;
    const char *why = NULL;
    int rc = control_record_parse(key, (int32_t)k, value, (int32_t)(size - k), &type, &epoch, &why);
    if (rc == 0) {
        CHECK(k == 4 && size - k == 6);
        CHECK(type == CONTROL_ABORT || type == CONTROL_COMMIT);
        uint8_t m[CONTROL_BATCH_BYTES];
        control_batch_build(m, 1, 0, type, epoch, 0);
        CHECK(memcmp(m + MARKER_KEY_AT, key, 4) == 0);
        CHECK(memcmp(m + MARKER_VALUE_AT, value, 6) == 0);
    } else {
        CHECK(rc == RT_E_CORRUPT);
        CHECK(why != NULL);
    }
    free(key);
    free(value);
}

/* A batch batch_validate accepted as control: its one record is a marker. */
static void check_control(const uint8_t *buf, size_t len)
{
    CHECK(len == CONTROL_BATCH_BYTES);
    struct record_view r;
    const char *why = NULL;
    int n = record_decode(buf + BATCH_HEADER_BYTES, buf + len, &r, &why);
    CHECK(n == (int)(len - BATCH_HEADER_BYTES));
    enum control_type type;
    CHECK(control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, NULL, &why) == 0);
}

/* Iterates buf as a fetch; `valid` is batch_validate's verdict on it. */
static void iterate(const uint8_t *buf, size_t len, bool valid, const struct batch_header *h)
{
    /* The iterator also rejects what batch_validate cannot see: a baseOffset (outside the CRC)
     * that is negative or makes lastOffset overflow. */
    bool sane = valid && h->base_offset >= 0 && h->base_offset <= INT64_MAX - h->last_offset_delta;
    for (int iso = RT_READ_UNCOMMITTED; iso <= RT_READ_COMMITTED; iso++) {
        struct rt_aborted_txn aborted = {0, 0};
        size_t aborted_count = 0;
        if (len >= BATCH_HEADER_BYTES) {
            aborted.producer_id = (int64_t)be64_load(buf + BATCH_OFF_PRODUCER_ID);
            aborted.first_offset = (int64_t)be64_load(buf + BATCH_OFF_BASE_OFFSET);
            aborted_count = 1;
        }
        rt_fetch *f = NULL;
        int rc = fetch_from_bytes(&f, buf, len, (enum rt_isolation)iso, &aborted, aborted_count);
        if (rc == -ENOMEM)
            return;
        CHECK(rc == 0);
        struct rt_records it;
        CHECK(rt_records_init(&it, f, INT64_MIN) == 0);
        struct rt_record_view r;
        int32_t yielded = 0;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            CHECK(sane);
            CHECK(!batch_is_control(h));
            CHECK(r.offset == h->base_offset + yielded);
            yielded++;
        }
        CHECK(rc == RT_E_END || rc == RT_E_CORRUPT || rc == -ENOMEM);
        if (!valid)
            CHECK(rc != RT_E_END || len == 0);
        if (sane && batch_is_control(h))
            CHECK(rc == RT_E_END && yielded == 0);
        if (valid && !sane)
            CHECK(rc == RT_E_CORRUPT && yielded == 0);
        bool plain = sane && (h->attributes & BATCH_ATTR_COMPRESSION_MASK) == 0;
        if (plain && !batch_is_control(h) && iso == RT_READ_UNCOMMITTED)
            CHECK(rc == RT_E_END && yielded == h->record_count);
        if (rc == RT_E_END && sane && !batch_is_control(h))
            CHECK(yielded == h->record_count || (iso == RT_READ_COMMITTED && yielded == 0));
        rt_fetch_release(f);
    }
}

static void whole_batch(uint8_t *buf, size_t len, bool iterate_it)
{
    struct batch_header h;
    memset(&h, 0, sizeof(h));
    const char *why = NULL;
    int rc = batch_validate(buf, len, 0, &h, &why);
    if (rc == 0 && batch_is_control(&h))
        check_control(buf, len);
    if (rc != 0)
        CHECK(why != NULL);
    if (iterate_it)
        iterate(buf, len, rc == 0, &h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    /* 1. key/value splits. */
    for (size_t k = 0; k <= size && k <= 16; k++)
        parse_split(data, size, k);
    parse_split(data, size, size / 2);
    if (size > 0)
        parse_split(data, size, data[0] % (size + 1));
    {
        uint8_t *copy = dup_bytes(data, size);
        const char *why = NULL;
        enum control_type type;
        CHECK(control_record_parse(NULL, -1, copy, (int32_t)size, &type, NULL, &why) ==
              RT_E_CORRUPT);
        CHECK(control_record_parse(copy, (int32_t)size, NULL, -1, &type, NULL, &why) ==
              RT_E_CORRUPT);
        free(copy);
    }
    /* 2. the whole input as a batch, as found (not iterated: bytes after a batch whose length
     * field is short would be a second batch to the iterator). */
    uint8_t *buf = dup_bytes(data, size);
    whole_batch(buf, size, false);
    free(buf);
    if (size < BATCH_HEADER_BYTES || size - BATCH_LOG_OVERHEAD_BYTES > INT32_MAX)
        return 0;
    /* 3a. length and CRC resealed, attributes as found. */
    buf = dup_bytes(data, size);
    be32_store(buf + BATCH_OFF_LENGTH, (uint32_t)(size - BATCH_LOG_OVERHEAD_BYTES));
    batch_seal_crc(buf, size);
    whole_batch(buf, size, true);
    /* 3b. forced into a control batch. */
    uint16_t attributes = be16_load(buf + BATCH_OFF_ATTRIBUTES);
    be16_store(buf + BATCH_OFF_ATTRIBUTES,
               (uint16_t)(attributes | BATCH_ATTR_CONTROL | BATCH_ATTR_TRANSACTIONAL));
    batch_seal_crc(buf, size);
    whole_batch(buf, size, true);
    free(buf);
    return 0;
}
