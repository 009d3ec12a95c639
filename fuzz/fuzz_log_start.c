/*
 * fuzz_log_start.c — libFuzzer target for the log-start-offset file parser
 * (`<topic>-<p>/log-start-offset`, engine/log/log_start.c, docs/format.md A.8).
 * log_start_parse must never read out of bounds; what it accepts satisfies LS2 (a log start
 * >= 0) and serialises back to exactly the input bytes (one encoding per value).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/crc32c.h"
#include "log_start.h"
#include "ringtail.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_log_start: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void one(const uint8_t *data, size_t size)
{
    int64_t off = -1;
    const char *why = NULL;
    size_t bad = 0;
    int rc = log_start_parse(data, size, &off, &why, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT && why != NULL && bad <= size);
        return;
    }
    CHECK(off >= 0 && size == LOG_START_BYTES);
    uint8_t back[LOG_START_BYTES];
    log_start_serialise(off, back);
    CHECK(memcmp(back, data, LOG_START_BYTES) == 0);
}

/* Each input twice: as it is, and with its CRC made right, so mutations reach LS2 behind the
 * checksum instead of stopping at LS1. */
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
