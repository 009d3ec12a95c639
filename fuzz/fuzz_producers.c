/*
 * fuzz_producers.c — libFuzzer target for the producer-id registry parser (producers.meta, see
 * engine/txn/producer_registry.c and docs/format.md §A.5). It must never read out of bounds; what
 * it accepts must have unique, valid names with ids below the recorded block end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "producer_registry.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_producers: %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t block_end = -1;
    struct producer_name *names = NULL;
    uint32_t n = 0;
    const char *why = NULL;
    size_t bad = 0;
    int rc = producer_registry_parse(data, size, &block_end, &names, &n, &why, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT || rc == -12);
        CHECK(rc != RT_E_CORRUPT || (why != NULL && bad <= size));
        CHECK(names == NULL || rc == 0);
        return 0;
    }
    CHECK(block_end >= 0);
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(names[i].name);
        CHECK(len >= 1 && len <= PRODUCER_NAME_MAX);
        CHECK(names[i].producer_id >= 0 && names[i].producer_id < block_end);
        CHECK(names[i].epoch >= 0);
        for (uint32_t k = 0; k < i; k++)
            CHECK(strcmp(names[k].name, names[i].name) != 0);
    }
    free(names);
    return 0;
}
