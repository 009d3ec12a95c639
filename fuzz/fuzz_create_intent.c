/*
 * fuzz_create_intent.c — libFuzzer target for the topic-creation intent parser
 * (`topic-create.tmp`, engine/log/log.c LG4-LG6, docs/format.md A.2). log_create_intent_parse
 * must never read out of bounds; whatever it accepts is exactly what log_create_intent_format
 * writes for the name and count it returns (one encoding), with a valid topic name and a count
 * of at least 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_create_intent: %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partitions = 0;
    int rc = log_create_intent_parse((const char *)data, size, name, &partitions);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT);
        return 0;
    }
    CHECK(partitions >= 1);
    CHECK(meta_topic_name_valid(name));
    char again[LOG_CREATE_INTENT_BYTES_MAX];
    size_t len = log_create_intent_format(again, name, partitions);
    CHECK(len == size);
    CHECK(memcmp(again, data, size) == 0);
    return 0;
}
