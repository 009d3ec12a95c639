/*
 * kdesc.h — Kafka messages as data: a message is described once (its fields, their types, the
 * versions each exists in, nullable versions, flexible versions, tagged fields, defaults) as
 * static const tables of `struct kd_field` with offsetof into the kmsg.h structs, and one small
 * interpreter (kdesc.c) decodes, encodes and sizes every message at every version from them, in
 * both directions (requests and responses). The descriptions live beside their wrappers in
 * kmsg_*.c; nothing but kmsg_*.c and the tests include this header.
 *
 * Defaults (what a field holds when the version lacks it, or a tagged field is absent):
 *   - decode writes `dflt` into every field the version lacks (a string: "" or, with
 *     KDF_NULL_DEFAULT, null; an array: empty), so the struct always holds Kafka's value;
 *   - encode writes a field only at the versions that have it. A field marked
 *     KDF_ZERO_IS_DEFAULT (Kafka's default is not 0, e.g. leader epochs -1) is written as its
 *     `dflt` when the handler left it 0 (a nullable string: null when left {NULL, 0}): handlers leave arena memory zeroed, and zero there means
 *     "not set". Only fields a handler does not fill carry the mark;
 *   - a tagged field is written only when its value differs from its default.
 *
 * Errors are those of kmsg.h: decode returns 0, RT_E_CORRUPT, KP_E_LIMIT or RT_E_UNSUPPORTED;
 * encode returns 0, RT_E_UNSUPPORTED, RT_E_INVALID_ARGUMENT, KP_E_LIMIT or -ENOMEM.
 */
#ifndef RT_KAFKA_KDESC_H
#define RT_KAFKA_KDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/proto/proto.h"

#define KD_NEVER INT16_MAX /* a version bound no message reaches */

enum kd_type {
    KD_BOOL = 1,
    KD_I8,
    KD_I16,
    KD_I32,
    KD_I64,
    KD_UUID, /* uint8_t[16] */
    KD_STR,  /* struct kp_str */
    KD_BYTES,
    /* Fetch response records: int32_t length at `off` (-1 null), `const uint8_t *` at `aux`,
     * `void *` hole cookie at `aux2` (KD2: inline when the pointer is set, else a hole). */
    KD_RECORDS,
    /* An array: element pointer at `off`, int32_t count at `aux` (-1 null); elements are the
     * struct `sub`, or when `sub` is NULL values of the primitive type `elem`. */
    KD_ARRAY,
};

enum kd_flag {
    KDF_NULL_DEFAULT = 1,    /* a string's default is null (else "") */
    KDF_ZERO_IS_DEFAULT = 2, /* encode: 0 means "unset", written as dflt */
};

struct kd_struct;

struct kd_field {
    const char *name;
    uint8_t type;       /* enum kd_type */
    uint8_t elem;       /* KD_ARRAY of primitives: their type */
    uint8_t flags;      /* enum kd_flag */
    int16_t vmin, vmax; /* versions the field exists in (KD_NEVER: open) */
    int16_t null_min;   /* first nullable version (KD_NEVER: never) */
    int16_t tag;        /* tag number in flexible versions, -1 = not tagged */
    uint32_t off;       /* offsetof the value (array: its pointer) */
    uint32_t aux, aux2; /* KD_ARRAY: count; KD_RECORDS: pointer, cookie */
    const struct kd_struct *sub;
    int64_t dflt;
};

struct kd_struct {
    const char *name;
    const struct kd_field *fields;
    uint16_t fields_count;
    uint32_t size; /* sizeof the C struct (arena elements) */
};

#define KD_VERSIONS_MAX 16 /* versions 0..15 of any message */

struct kd_plan;

/* Per message: the compiled plan of each version (kdesc.c builds it on first use). */
struct kd_cache {
    const struct kd_plan *_Atomic plans[KD_VERSIONS_MAX];
};

struct kd_message {
    const char *name; /* "ProduceRequest", ... */
    int16_t api_key;
    int16_t min, max; /* versions described */
    int16_t flex_min; /* first flexible version, KD_NEVER for none */
    const struct kd_struct *body;
    /* A Kafka default that depends on another field (JoinGroup's rebalance timeout, Metadata
     * v0's "empty means all"); NULL for most. Runs after a successful decode. */
    void (*after_decode)(void *msg, int16_t version);
    struct kd_cache *cache;
};

/* Defines `const struct kd_message var` with its plan cache. */
#define KD_MESSAGE(var, nm, key, lo, hi, flex, body, after)                                        \
    static struct kd_cache var##_cache;                                                            \
    const struct kd_message var = {nm, key, lo, hi, flex, body, after, &var##_cache}

/* ---- describing (used in kmsg_*.c) ---- */

#define KD_X(S, m, T, E, fl, lo, hi, nlo, tg, a1, a2, sb, d)                                       \
    {                                                                                              \
#m, T, E, fl, lo, hi, nlo, tg, (uint32_t)offsetof(S, m), a1, a2, sb, d                     \
    }
/* A scalar or string present in versions lo..hi. */
#define KF(S, m, T, lo, hi) KD_X(S, m, T, 0, 0, lo, hi, KD_NEVER, -1, 0, 0, NULL, 0)
/* ... with Kafka's default for the versions without it. */
#define KFD(S, m, T, lo, hi, d) KD_X(S, m, T, 0, 0, lo, hi, KD_NEVER, -1, 0, 0, NULL, d)
/* A string or bytes nullable from version nlo (default null). */
#define KFN(S, m, T, lo, hi, nlo) KD_X(S, m, T, 0, KDF_NULL_DEFAULT, lo, hi, nlo, -1, 0, 0, NULL, 0)
/* An array of structs `sb` (count in m##_count), nullable from nlo. */
#define KA(S, m, lo, hi, sb)                                                                       \
    KD_X(S, m, KD_ARRAY, 0, 0, lo, hi, KD_NEVER, -1, (uint32_t)offsetof(S, m##_count), 0, &sb, 0)
#define KAN(S, m, lo, hi, nlo, sb)                                                                 \
    KD_X(S, m, KD_ARRAY, 0, 0, lo, hi, nlo, -1, (uint32_t)offsetof(S, m##_count), 0, &sb, 0)
/* An array of primitives of type E. */
#define KP(S, m, E, lo, hi)                                                                        \
    KD_X(S, m, KD_ARRAY, E, 0, lo, hi, KD_NEVER, -1, (uint32_t)offsetof(S, m##_count), 0, NULL, 0)
#define KPN(S, m, E, lo, hi, nlo)                                                                  \
    KD_X(S, m, KD_ARRAY, E, 0, lo, hi, nlo, -1, (uint32_t)offsetof(S, m##_count), 0, NULL, 0)
/* A tagged scalar or string (tag tg) in versions lo..hi, default d. */
#define KT(S, m, T, lo, hi, tg, d) KD_X(S, m, T, 0, 0, lo, hi, KD_NEVER, tg, 0, 0, NULL, d)
#define KTN(S, m, T, lo, hi, tg)   KD_X(S, m, T, 0, KDF_NULL_DEFAULT, lo, hi, lo, tg, 0, 0, NULL, 0)
/* A nullable string whose handler-left {NULL, 0} encodes as null. */
#define KFNZ(S, m, T, lo, hi, nlo)                                                                 \
    KD_X(S, m, T, 0, KDF_NULL_DEFAULT | KDF_ZERO_IS_DEFAULT, lo, hi, nlo, -1, 0, 0, NULL, 0)
/* A scalar whose handler-left 0 encodes as d (KDF_ZERO_IS_DEFAULT). */
#define KFZ(S, m, T, lo, hi, d)                                                                    \
    KD_X(S, m, T, 0, KDF_ZERO_IS_DEFAULT, lo, hi, KD_NEVER, -1, 0, 0, NULL, d)
#define KD_STRUCT(S, f)                                                                            \
    {                                                                                              \
#S, f, (uint16_t)(sizeof f / sizeof f[0]), (uint32_t)sizeof(S)                             \
    }

/* ---- the interpreter ---- */

/* Decodes a body of `m` at `version` into `out` (the C struct the description points into),
 * which it overwrites whole. Strings/bytes point into the reader's buffer, arrays into the
 * arena. The body must be consumed whole. */
int kd_decode(const struct kd_message *m, struct kp_reader *r, int16_t version, struct kp_arena *a,
              void *out);
/* Writes the body of `m` at `version` from `in`. */
int kd_encode(const struct kd_message *m, struct kp_writer *w, int16_t version, const void *in);
/* The bytes kd_encode would put on the wire (holes included), without writing. Returns 0 or
 * RT_E_UNSUPPORTED. */
int kd_size(const struct kd_message *m, int16_t version, const void *in, uint64_t *size);
/* The least wire size of one `s` at `version` (KP4's bound for an array of them); >= 1. */
size_t kd_min_size(const struct kd_struct *s, int16_t version, bool flexible);
static inline bool kd_flexible(const struct kd_message *m, int16_t version)
{
    return version >= m->flex_min;
}
/* Compares two decoded structs of `s` field by field at `version` (deeply: arrays, strings by
 * content). For the round-trip tests and fuzz targets. */
bool kd_equal(const struct kd_struct *s, int16_t version, bool flexible, const void *x,
              const void *y);

#endif
