/*
 * byte_order.h — the big-endian loads and stores every on-disk format of ringtail uses (Kafka's
 * bytes are big-endian throughout: docs/format.md §B.1), and the two's-complement
 * reinterpretations from unsigned to signed without implementation-defined conversions. One copy
 * for the whole tree: index/ and everything above it include this header; it includes nothing of
 * ringtail's and must never grow state or checks (callers bound their reads first).
 *
 * Inline: they are on every hot path (batch headers, index lookups). Each is a few shifts.
 */
#ifndef RT_BYTE_ORDER_H
#define RT_BYTE_ORDER_H

#include <stdint.h>

static inline uint16_t be16_load(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t be32_load(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64_load(const uint8_t *p)
{
    return (uint64_t)be32_load(p) << 32 | be32_load(p + 4);
}

static inline void be16_store(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void be32_store(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void be64_store(uint8_t *p, uint64_t v)
{
    be32_store(p, (uint32_t)(v >> 32));
    be32_store(p + 4, (uint32_t)v);
}

/* Two's-complement reinterpretation of the bits, without implementation-defined conversion. */
static inline int32_t u32_as_i32(uint32_t v)
{
    return v <= (uint32_t)INT32_MAX ? (int32_t)v : (int32_t)(v - 0x80000000u) + INT32_MIN;
}

static inline int64_t u64_as_i64(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : (int64_t)(v - 0x8000000000000000u) + INT64_MIN;
}

#endif /* RT_BYTE_ORDER_H */
