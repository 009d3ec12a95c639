/*
 * kmsg_int.h — helpers shared by the kmsg_*.c codecs (not part of the codec interface): the
 * version check against api.c's codec range, the "consumed whole" end of a decode, and the least
 * wire sizes used for KP4's array-count checks. It holds no state and must never be included
 * outside tools/kafka/kmsg_*.c.
 */
#ifndef RT_BENCH_KCODEC_OLD_INT_H
#define RT_BENCH_KCODEC_OLD_INT_H

#include "tools/kafka/proto/kmsg.h"

/* RT_E_UNSUPPORTED unless `version` is inside the codec range of `key` (api.h). */
static inline int kmsg_version_check(int16_t key, int16_t version)
{
    const struct kafka_api *a = kafka_api_find(key);
    if (!a || version < a->codec_min || version > a->codec_max)
        return RT_E_UNSUPPORTED;
    return 0;
}

/* Ends a decode: the body must be consumed whole; returns the sticky error. */
static inline int kmsg_finish(struct kp_reader *r)
{
    kp_expect_end(r);
    return r->err;
}

/* Least wire sizes of common array elements (KP4): a classic string is at least its i16
 * length, a compact one its 1-byte uvarint; the same for arrays. */
static inline size_t kmsg_min_str(bool flexible)
{
    return flexible ? 1 : 2;
}

static inline size_t kmsg_min_arr(bool flexible)
{
    return flexible ? 1 : 4;
}

#endif
