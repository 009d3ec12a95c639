/*
 * fuzz_meta.c — libFuzzer target for the topic catalogue parser (ringtail.meta, see
 * engine/log/meta.h and docs/format.md). meta_parse must never read out of bounds; whatever it
 * accepts (version 1, or 2 with topic configs) must serialise back to exactly the input bytes (the format has one encoding per
 * catalogue) and re-parse to the same topics.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_meta: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct meta_catalogue cat;
    const char *why = NULL;
    size_t bad = 0;
    int rc = meta_parse(data, size, &cat, &why, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT || rc == -12 /* ENOMEM */);
        CHECK(why != NULL);
        CHECK(bad <= size);
        return 0;
    }
    uint8_t *out = NULL;
    size_t len = 0;
    CHECK(meta_serialise(&cat, &out, &len) == 0);
    CHECK(len == size);
    CHECK(memcmp(out, data, size) == 0);
    struct meta_catalogue again;
    CHECK(meta_parse(out, len, &again, &why, &bad) == 0);
    CHECK(again.count == cat.count);
    for (uint32_t i = 0; i < cat.count; i++) {
        CHECK(meta_topic_name_valid(cat.topics[i].name));
        CHECK(strcmp(again.topics[i].name, cat.topics[i].name) == 0);
        CHECK(again.topics[i].partitions == cat.topics[i].partitions);
        for (int k = 0; k < TC_KEYS; k++) { /* version 2: the configs (M5) */
            const char *a = again.topics[i].config.value[k], *b = cat.topics[i].config.value[k];
            CHECK((a == NULL) == (b == NULL));
            CHECK(!a || strcmp(a, b) == 0);
        }
    }
    meta_catalogue_free(&again);
    meta_catalogue_free(&cat);
    free(out);
    return 0;
}
