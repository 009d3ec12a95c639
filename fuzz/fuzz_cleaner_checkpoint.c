/*
 * fuzz_cleaner_checkpoint.c — libFuzzer target for the cleaner-checkpoint parser
 * (`<topic>-<p>/cleaner-checkpoint`, engine/log/cleaner_checkpoint.c, docs/format.md A.9).
 * cleaner_checkpoint_parse must never read out of bounds; what it accepts satisfies CK2-CK4 and
 * serialises back to exactly the input bytes (one encoding per value).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleaner_checkpoint.h"
#include "index/crc32c.h"
#include "ringtail.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_cleaner_checkpoint: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void one(const uint8_t *data, size_t size)
{
    struct cleaner_checkpoint c;
    const char *why = NULL;
    size_t bad = 0;
    int rc = cleaner_checkpoint_parse(data, size, &c, &why, &bad);
    if (rc != 0) {
        CHECK((rc == RT_E_CORRUPT && why != NULL && bad <= size) || rc == -ENOMEM);
        CHECK(c.sources == NULL);
        return;
    }
    CHECK(c.cleaned_end >= 0);
    CHECK(size == CLEANER_CHECKPOINT_HEADER + 8 * (size_t)c.source_count);
    if (c.source_count > 0) {
        CHECK(c.sources[0] == c.swap_base && c.swap_base < c.cleaned_end);
        for (uint32_t i = 1; i < c.source_count; i++)
            CHECK(c.sources[i] > c.sources[i - 1]);
        CHECK(c.sources[c.source_count - 1] < c.swap_end);
    } else {
        CHECK(c.swap_base == -1 && c.swap_end == -1);
    }
    uint8_t *back = NULL;
    size_t len = 0;
    CHECK(cleaner_checkpoint_serialise(&c, &back, &len) == 0);
    CHECK(len == size && memcmp(back, data, size) == 0);
    free(back);
    cleaner_checkpoint_free(&c);
}

/* Each input twice: as it is, and with its CRC made right, so mutations reach CK2-CK4 behind the
 * checksum instead of stopping at CK1. */
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
