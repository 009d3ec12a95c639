/*
 * fuzz_kafka_hw_checkpoint.c — libFuzzer target for the replication-offset-checkpoint parser
 * (tools/kafka/cluster/hw_checkpoint.c, docs/format.md M). hw_checkpoint_parse must never read
 * outside the input; a refusal is RT_E_CORRUPT naming a line that exists (or the one after the
 * last) and leaves nothing allocated; what it accepts formats back to exactly the input bytes
 * (HC1: one text per entry list), with valid names, partitions and offsets.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ringtail.h"
#include "tools/kafka/cluster/hw_checkpoint.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_hw_checkpoint: %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy without a terminator: reads past `size` are ASan's to catch */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct hw_checkpoint c;
    size_t bad = 0;
    int rc = hw_checkpoint_parse(buf, size, &c, &bad);
    if (rc != 0) {
        CHECK(rc == RT_E_CORRUPT || rc == -ENOMEM);
        CHECK(c.entries == NULL && c.count == 0);
        size_t lines = 0;
        for (size_t i = 0; i < size; i++)
            lines += buf[i] == '\n';
        CHECK(rc != RT_E_CORRUPT || (bad >= 1 && bad <= lines + 1));
        free(buf);
        return 0;
    }
    for (size_t i = 0; i < c.count; i++) {
        size_t n = strlen(c.entries[i].topic);
        CHECK(n >= 1 && n <= HW_CHECKPOINT_TOPIC_MAX);
        CHECK(c.entries[i].partition >= 0 && c.entries[i].offset >= 0);
    }
    char *text = NULL;
    size_t len = 0;
    CHECK(hw_checkpoint_format(&c, &text, &len) == 0);
    CHECK(len == size && memcmp(text, buf, size) == 0);
    free(text);
    hw_checkpoint_free(&c);
    free(buf);
    return 0;
}
