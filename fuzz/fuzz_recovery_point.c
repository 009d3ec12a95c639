/*
 * fuzz_recovery_point.c — libFuzzer target for the recovery-point checkpoint parser
 * (`<topic>-<p>/recovery-point`, engine/log/recovery_point.c, docs/format.md A.7).
 * recovery_point_parse must never read out of bounds; what it accepts satisfies RP3-RP5 (dense,
 * ascending entries; the recovery point is the last one's next offset), serialises back to
 * exactly the input bytes (one encoding per checkpoint) and re-parses to the same entries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/crc32c.h"
#include "ringtail.h"
#include "recovery_point.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_recovery_point: %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int one(const uint8_t *data, size_t size);

/* Each input twice: as it is, and with its CRC made right, so mutations reach RP2-RP5 behind
 * the checksum instead of stopping at RP1. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)one(data, size);
    if (size >= 10) {
        uint8_t *copy = malloc(size);
        CHECK(copy != NULL);
        memcpy(copy, data, size);
        uint32_t crc = crc32c(0, copy + 10, size - 10);
        copy[6] = (uint8_t)(crc >> 24);
        copy[7] = (uint8_t)(crc >> 16);
        copy[8] = (uint8_t)(crc >> 8);
        copy[9] = (uint8_t)crc;
        (void)one(copy, size);
        free(copy);
    }
    return 0;
}

static int one(const uint8_t *data, size_t size)
{
    struct recovery_point rp;
    const char *why = NULL;
    size_t bad = 0;
    int rc = recovery_point_parse(data, size, &rp, &why, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT || rc == -12 /* ENOMEM */);
        CHECK(rc != RT_E_CORRUPT || why != NULL);
        CHECK(bad <= size);
        CHECK(rp.count == 0 && rp.segments == NULL);
        return 0;
    }
    for (uint32_t i = 0; i < rp.count; i++) {
        const struct recovery_segment *s = &rp.segments[i];
        CHECK(s->base_offset >= 0);
        CHECK(s->next_offset >= s->base_offset);
        CHECK(i == 0 || s->base_offset == rp.segments[i - 1].next_offset);
        CHECK(recovery_point_find(&rp, s->base_offset) == s);
    }
    if (rp.has_tail) {
        /* RP6 */
        CHECK(rp.offset == rp.tail.next_offset);
        CHECK(rp.count == 0 || rp.tail.base_offset == rp.segments[rp.count - 1].next_offset);
        CHECK(rp.tail.bytes > 0 && rp.tail.bytes <= INT32_MAX);
        CHECK(rp.tail.next_offset > rp.tail.base_offset);
        CHECK(rp.tail.last_batch_position + 61 <= rp.tail.bytes);
    } else {
        CHECK(rp.offset == (rp.count ? rp.segments[rp.count - 1].next_offset : 0));
    }
    uint8_t *out = NULL;
    size_t len = 0;
    CHECK(recovery_point_serialise(&rp, &out, &len) == 0);
    CHECK(len == size);
    CHECK(memcmp(out, data, size) == 0);
    struct recovery_point again;
    CHECK(recovery_point_parse(out, len, &again, &why, &bad) == 0);
    CHECK(again.count == rp.count && again.offset == rp.offset);
    CHECK(again.has_tail == rp.has_tail);
    CHECK(!rp.has_tail || memcmp(&again.tail, &rp.tail, sizeof(rp.tail)) == 0);
    CHECK(rp.count == 0 ||
          memcmp(again.segments, rp.segments, rp.count * sizeof(*rp.segments)) == 0);
    recovery_point_free(&again);
    recovery_point_free(&rp);
    free(out);
    return 0;
}
