/*
 * fuzz_msgset.c — libFuzzer target for engine/log/msgset.c (docs/format.md §B.9): the input is a
 * message set of format v0/v1 as a Produce request carries it. Up-conversion must never crash and
 * fail only with RT_E_CORRUPT, RT_E_UNSUPPORTED_COMPRESSION or RT_E_RECORD_TOO_LARGE (with a
 * reason) or -ENOMEM. When it succeeds, the batch must pass the engine's full validation
 * (batch_validate, records_validate: what rt_append_batch would check), and down-converting it
 * to both magics and up-converting that again must give the same records section (MS8, MS10-MS11:
 * a lossless round trip for what v0/v1 can hold), within a 1 MiB output cap.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgset.h"
#include "records.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_msgset: %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define BATCH_MAX_BYTES (1u << 20)

static struct msgset_scratch sc, sc2;
static struct compression_buffer z = COMPRESSION_BUFFER_INIT;
static uint8_t down[2u << 20];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *b = NULL;
    size_t blen = 0;
    int8_t magic = -1;
    const char *why = NULL;
    int rc = msgset_upconvert(&sc, data, size, BATCH_MAX_BYTES, &b, &blen, &magic, &why);
    if (rc) {
        CHECK(b == NULL && blen == 0);
        CHECK(rc == RT_E_CORRUPT || rc == RT_E_UNSUPPORTED_COMPRESSION ||
              rc == RT_E_RECORD_TOO_LARGE || rc == -ENOMEM);
        CHECK(rc == -ENOMEM || why != NULL);
        return 0;
    }
    CHECK(magic == 0 || magic == 1);
    CHECK(blen <= BATCH_MAX_BYTES);
    struct batch_header h;
    CHECK(batch_validate(b, blen, 0, &h, &why) == 0);
    const uint8_t *p = NULL, *end = NULL;
    CHECK(records_validate(b, blen, &h, &z, &p, &end, &why) == 0);
    size_t section = (size_t)(end - p);
    uint8_t *records = malloc(section ? section : 1);
    CHECK(records != NULL);
    memcpy(records, p, section);
    for (int8_t m = 0; m <= 1; m++) {
        size_t bytes = 0, needed = 0;
        uint32_t batches = 0;
        uint64_t messages = 0;
        rc = msgset_downconvert(&sc, b, blen, 0, m, down, sizeof down, &bytes, &needed, &batches,
                                &messages, &why);
        CHECK(rc == 0 || rc == RT_E_RECORD_TOO_LARGE || rc == -ENOMEM);
        if (rc || bytes == 0)
            continue; /* a 64 MiB expansion, or messages beyond the cap */
        CHECK(batches == 1 && messages == (uint64_t)h.record_count);
        uint8_t *b2 = NULL;
        size_t blen2 = 0;
        rc = msgset_upconvert(&sc2, down, bytes, 2 * BATCH_MAX_BYTES, &b2, &blen2, NULL, &why);
        CHECK(rc == 0 || rc == RT_E_RECORD_TOO_LARGE || rc == -ENOMEM);
        if (rc)
            continue;
        struct batch_header h2;
        CHECK(batch_validate(b2, blen2, 0, &h2, &why) == 0);
        CHECK(h2.record_count == h.record_count);
        CHECK(records_validate(b2, blen2, &h2, &z, &p, &end, &why) == 0);
        if (m == magic) /* same magic: timestamps survive too, the records are the same bytes */
            CHECK((size_t)(end - p) == section && memcmp(p, records, section) == 0);
        free(b2);
    }
    free(records);
    free(b);
    return 0;
}
