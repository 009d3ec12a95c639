/*
 * fuzz_leader_epoch.c — libFuzzer target for the leader-epoch checkpoint parser
 * (`<topic>-<p>/leader-epoch-checkpoint`, engine/log/leader_epoch.c, docs/format.md A.10).
 * leader_epoch_parse must never read out of bounds; what it accepts satisfies LE2-LE4 and
 * serialises back to exactly the input bytes (one encoding per list); the list's rules
 * (end offset for an epoch, truncation) keep LE3 on what it accepted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/crc32c.h"
#include "leader_epoch.h"
#include "ringtail.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_leader_epoch: %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void one(const uint8_t *data, size_t size)
{
    struct leader_epoch_cache c;
    const char *why = NULL;
    size_t bad = 0;
    int rc = leader_epoch_parse(data, size, &c, &why, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT && why != NULL && bad <= size);
        CHECK(c.count == 0 && c.entries == NULL);
        return;
    }
    CHECK(c.truncate_to >= -1);
    for (uint32_t i = 0; i < c.count; i++) {
        CHECK(c.entries[i].epoch >= 0 && c.entries[i].start_offset >= 0);
        CHECK(i == 0 || c.entries[i].epoch > c.entries[i - 1].epoch);
        CHECK(i == 0 || c.entries[i].start_offset > c.entries[i - 1].start_offset);
        CHECK(c.truncate_to < 0 || c.entries[i].start_offset < c.truncate_to);
    }
    uint8_t *back = NULL;
    size_t len = 0;
    CHECK(leader_epoch_serialise(&c, &back, &len) == 0);
    CHECK(len == size && memcmp(back, data, size) == 0);
    free(back);
    if (c.count > 0) {
        int64_t end = -1;
        int32_t found = -1;
        int64_t log_end = c.entries[c.count - 1].start_offset + 1;
        leader_epoch_end_offset(&c, c.entries[0].epoch, log_end, &end, &found);
        CHECK(found == c.entries[0].epoch);
        CHECK(end == (c.count > 1 ? c.entries[1].start_offset : log_end));
        leader_epoch_truncate_from_end(&c, c.entries[c.count - 1].start_offset);
        CHECK(leader_epoch_latest(&c) == (c.count ? c.entries[c.count - 1].epoch : -1));
    }
    leader_epoch_free(&c);
}

/* Each input twice: as it is, and with its CRC made right, so mutations reach LE2-LE4 behind
 * the checksum instead of stopping at LE1. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    if (size >= 10) {
        uint8_t *copy = malloc(size);
        CHECK(copy != NULL);
        memcpy(copy, data, size);
        uint32_t crc = crc32c(0, copy + 10, size - 10);
        copy[6] = (uint8_t)(crc >> 24);
        copy[7] = (uint8_t)(crc >> 16);
        copy[8] = (uint8_t)(crc >> 8);
        copy[9] = (uint8_t)crc;
        one(copy, size);
        free(copy);
    }
    return 0;
}
