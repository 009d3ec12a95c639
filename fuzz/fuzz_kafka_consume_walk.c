/*
 * fuzz_kafka_consume_walk.c — libFuzzer target for bench/consume_walk.h (the bench's thin Fetch
 * client reading one partition's records). The first input byte is the number of aborted
 * transactions (mod 17), then 16 bytes each (producer id, first offset, big-endian), sorted by
 * first offset as a broker sends them (KF3); the rest is the records. The walk must never read
 * out of bounds, must count no more records than the headers it passed claim, and must leave the
 * next fetch offset unchanged or one past a whole batch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/consume_walk.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_consume_walk: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int cmp_first(const void *a, const void *b)
{
    const struct kmsg_fetch_aborted *x = a, *y = b;
    return x->first_offset < y->first_offset ? -1 : x->first_offset > y->first_offset;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = data[0] % 17;
    data++;
    size--;
    if (size < n * 16)
        return 0;
    struct kmsg_fetch_aborted ab[16];
    for (size_t i = 0; i < n; i++) {
        ab[i].producer_id = (int64_t)kp_load_be64(data + 16 * i);
        ab[i].first_offset = (int64_t)kp_load_be64(data + 16 * i + 8);
    }
    qsort(ab, n, sizeof(ab[0]), cmp_first);
    data += n * 16;
    size -= n * 16;
    /* An exact copy, so ASan sees any read past `size`. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int64_t next = -7;
    uint64_t records = 0, sum = 0, claimed = 0;
    consume_walk_batches(buf, size, ab, (int32_t)n, &next, &records, &sum);
    /* The headers a walk can pass claim at most this many records in all. */
    for (size_t pos = 0; size - pos >= RT_BATCH_HEADER_BYTES;) {
        size_t len =
            (size_t)kp_load_be32(buf + pos + RT_BATCH_OFF_LENGTH) + RT_BATCH_LOG_OVERHEAD_BYTES;
        if (len < RT_BATCH_HEADER_BYTES || len > size - pos)
            break;
        claimed += kp_load_be32(buf + pos + RT_BATCH_HEADER_BYTES - 4);
        pos += len;
    }
    CHECK(records <= claimed);
    CHECK(next == -7 || size >= RT_BATCH_HEADER_BYTES);
    free(buf);
    return 0;
}
