/*
 * murmur2.c — Kafka's murmur2 key hash and the default partitioner built on it (see murmur2.h).
 *
 * Java does the arithmetic on signed ints with wrap-around and uses >>> (logical shift); here
 * everything is uint32_t, which wraps the same way and shifts logically, and the result is
 * reinterpreted as int32_t at the end. The fall-through in the tail switch is Kafka's.
 */
#include "murmur2.h"

#include <assert.h>

int32_t murmur2(const void *data, size_t len)
{
    const uint8_t *p = data;
    const uint32_t seed = 0x9747b28cu;
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    /* Java: int h = seed ^ length (length is an int; keys are far below 2 GiB). */
    uint32_t h = seed ^ (uint32_t)len;
    size_t blocks = len / 4;

    for (size_t i = 0; i < blocks; i++) {
        const uint8_t *b = p + i * 4;
        uint32_t k =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }

    const uint8_t *tail = p + (len & ~(size_t)3);
    switch (len % 4) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)tail[0];
        h *= m;
        break;
    default:
        break;
    }

    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

uint32_t murmur2_partition(const void *key, size_t len, uint32_t partitions)
{
    assert(partitions >= 1);
    uint32_t positive = (uint32_t)murmur2(key, len) & 0x7fffffffu;
    return positive % partitions;
}
