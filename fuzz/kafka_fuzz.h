/*
 * kafka_fuzz.h — shared harness of the fuzz_kafka_* targets (one per API group). Input layout:
 * byte 0 picks an API of the group (mod its size), byte 1 a version (codec_min + b mod
 * (range + 2), so one version past the codec's max is tried too: it must be RT_E_UNSUPPORTED),
 * byte 2 the arena size (small ones reach KP_E_LIMIT), the rest is the request body. The
 * decoder must return one of its documented codes, never read outside the input (ASan: libFuzzer
 * hands exactly-sized buffers), and every string it returns must point inside the input. What
 * it accepts is handed to the target's `respond` to exercise the response encoders.
 */
#ifndef RT_FUZZ_KAFKA_H
#define RT_FUZZ_KAFKA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/kmsg.h"

#define KCHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka: %s:%d: %s\n", __FILE__, __LINE__, #cond);                 \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static const uint8_t *kf_data;
static size_t kf_size;

/* A string from a decoder: null, or inside the input. */
static inline void kf_str_inside(struct kp_str s)
{
    if (s.len < 0) {
        KCHECK(s.ptr == NULL);
        return;
    }
    if (s.len == 0)
        return;
    KCHECK((const uint8_t *)s.ptr >= kf_data);
    KCHECK((const uint8_t *)s.ptr + s.len <= kf_data + kf_size);
}

static inline void kf_bytes_inside(struct kp_bytes b)
{
    kf_str_inside((struct kp_str){(const char *)b.ptr, b.len});
}

typedef void (*kf_respond_fn)(int16_t key, int16_t version, const union kmsg_request *req,
                              struct kp_writer *w);

static _Alignas(16) uint8_t kf_arena_buf[1 << 18];

static inline int kf_run(const uint8_t *data, size_t size, const int16_t *keys, size_t nkeys,
                         kf_respond_fn respond)
{
    if (size < 3)
        return 0;
    int16_t key = keys[data[0] % nkeys];
    const struct kafka_api *api = kafka_api_find(key);
    KCHECK(api != NULL);
    int span = api->codec_max - api->codec_min + 2;
    int16_t version = (int16_t)(api->codec_min + data[1] % span);
    size_t arena_size = data[2] < 16 ? (size_t)data[2] * 8 : sizeof kf_arena_buf;
    kf_data = data + 3;
    kf_size = size - 3;
    struct kp_arena a;
    kp_arena_init(&a, kf_arena_buf, arena_size);
    struct kp_reader r;
    kp_reader_init(&r, kf_data, kf_size);
    union kmsg_request req;
    memset(&req, 0xa5, sizeof req);
    int rc = kmsg_request_decode(&r, key, version, &a, &req);
    if (version > api->codec_max) {
        KCHECK(rc == RT_E_UNSUPPORTED);
        return 0;
    }
    KCHECK(rc == 0 || rc == RT_E_CORRUPT || rc == KP_E_LIMIT);
    KCHECK(a.used_bytes <= a.size_bytes);
    KCHECK(r.p >= kf_data && r.p <= kf_data + kf_size);
    if (rc != 0)
        return 0;
    KCHECK(r.p == kf_data + kf_size); /* accepted means consumed whole */
    struct kp_hole holes[64];
    struct kp_writer w;
    kp_writer_init(&w, holes, 64);
    w.len_max = 1 << 22;
    respond(key, version, &req, &w);
    kp_writer_free(&w);
    return 0;
}

#endif
