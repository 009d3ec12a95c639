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

#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"

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
static _Alignas(16) uint8_t kf_arena2_buf[1 << 18];
static _Alignas(16) uint8_t kf_msg2[4096], kf_msg3[4096];

/* s1 (decoded from fuzz bytes) → bytes b1 → s2 → bytes b2: s1 == s2 (unless after_decode maps
 * a value to its meaning; then s2 == decode(b2)) and b1 == b2. */
static inline void kf_round_trip(const struct kd_message *m, int16_t version, const void *s1)
{
    KCHECK(m->body->size <= sizeof kf_msg2);
    struct kp_writer w1, w2;
    kp_writer_init(&w1, NULL, 0);
    kp_writer_init(&w2, NULL, 0);
    int rc = kd_encode(m, &w1, version, s1);
    if (rc == RT_E_INVALID_ARGUMENT) /* a compact string past 32767 bytes decodes, never encodes */
        goto out;
    KCHECK(rc == 0);
    uint64_t size = 0;
    KCHECK(kd_size(m, version, s1, &size) == 0 && size == w1.len); /* KDE3 */
    struct kp_arena a;
    kp_arena_init(&a, kf_arena2_buf, sizeof kf_arena2_buf);
    struct kp_reader r;
    kp_reader_init(&r, w1.buf, w1.len);
    KCHECK(kd_decode(m, &r, version, &a, kf_msg2) == 0);
    bool flex = kd_flexible(m, version);
    if (!m->after_decode)
        KCHECK(kd_equal(m->body, version, flex, s1, kf_msg2));
    KCHECK(kd_encode(m, &w2, version, kf_msg2) == 0);
    KCHECK(w1.len == w2.len && (w1.len == 0 || memcmp(w1.buf, w2.buf, w1.len) == 0));
    if (m->after_decode) {
        kp_reader_init(&r, w2.buf, w2.len);
        KCHECK(kd_decode(m, &r, version, &a, kf_msg3) == 0);
        KCHECK(kd_equal(m->body, version, flex, kf_msg2, kf_msg3));
    }
out:
    kp_writer_free(&w1);
    kp_writer_free(&w2);
}

/* The body as the response of (key, version), as a client reads it. */
static inline void kf_response_direction(int16_t key, int16_t version, size_t arena_size)
{
    const struct kd_message *m = kmsg_desc(key, true);
    KCHECK(m != NULL);
    static _Alignas(16) uint8_t resp[4096];
    static _Alignas(16) uint8_t arena[1 << 18];
    KCHECK(m->body->size <= sizeof resp);
    struct kp_arena a;
    kp_arena_init(&a, arena, arena_size);
    struct kp_reader r;
    kp_reader_init(&r, kf_data, kf_size);
    int rc = kd_decode(m, &r, version, &a, resp);
    if (version > m->max) {
        KCHECK(rc == RT_E_UNSUPPORTED);
        return;
    }
    KCHECK(rc == 0 || rc == RT_E_CORRUPT || rc == KP_E_LIMIT);
    KCHECK(r.p >= kf_data && r.p <= kf_data + kf_size);
    if (rc == 0)
        kf_round_trip(m, version, resp);
}

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
    kf_response_direction(key, version, arena_size);
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
    kf_round_trip(kmsg_desc(key, false), version, &req);
    struct kp_hole holes[64];
    struct kp_writer w;
    kp_writer_init(&w, holes, 64);
    w.len_max = 1 << 22;
    respond(key, version, &req, &w);
    kp_writer_free(&w);
    return 0;
}

#endif
