/*
 * handle_offsets.h — the one offsets validator that OffsetCommit (handle_offsets.c) and
 * TxnOffsetCommit (handle_txn.c) share. It turns a decoded request's topics (kmsg's
 * kmsg_commit_topic, what both codecs produce) into the engine's rt_offset array and the
 * answer's per-partition codes, with every array in the request arena (no allocation per
 * request). It never writes anything: the handlers make the engine call. Also the
 * OffsetFetch and OffsetCommit handlers (handle_offsets.c).
 */
#ifndef RT_KAFKA_HANDLE_OFFSETS_H
#define RT_KAFKA_HANDLE_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/handlers/handle.h"

/* A commit request, checked. errors[t] is results[t].partitions (writable). */
struct kafka_offsets_commit {
    struct kmsg_topic_errors *results; /* the answer: one per request topic, in its order */
    struct kmsg_partition_error **errors;
    int32_t results_count;
    struct rt_offset *offsets; /* the partitions that passed, for one engine call */
    size_t offsets_count;
    char *names;    /* topics_count names of RT_TOPIC_NAME_MAX + 1 bytes */
    char *metadata; /* the passed partitions' metadata, NUL-terminated each */
};

/* Inside the request's decode callback (after the codec, same reader and arena): sizes every
 * array the validator needs. 0 or KP_E_LIMIT (kafka_slot_decode grows the arena and decodes
 * again). */
int kafka_offsets_prepare(struct kp_reader *r, struct kp_arena *a,
                          const struct kmsg_commit_topic *topics, int32_t topics_count,
                          struct kafka_offsets_commit *c);

/* Per partition, in this order (the first that applies): `all` when it is not NONE (the
 * request as a whole is refused: a bad group or transactional id, a generation check);
 * TOPIC_AUTHORIZATION_FAILED (no READ on the topic, KZ2); UNKNOWN_TOPIC_OR_PARTITION;
 * OFFSET_METADATA_TOO_LARGE (over RT_OFFSET_METADATA_MAX_BYTES,
 * Kafka's offset.metadata.max.bytes); INVALID_REQUEST (a negative offset, a NUL in the
 * metadata, which the engine's C strings cannot carry). The others go into c->offsets (null
 * metadata as "", as Kafka stores it) with code NONE. */
void kafka_offsets_validate(struct kafka_slot *s, const struct kmsg_commit_topic *topics,
                            int32_t topics_count, int16_t all, struct kafka_offsets_commit *c);

/* After the engine call: every partition still NONE gets `stored` (the call's outcome); every
 * code is counted for the slot's API. */
void kafka_offsets_settle(struct kafka_slot *s, struct kafka_offsets_commit *c, int16_t stored);

/* OffsetFetch v0-8 (handle_offsets.c), decoding the body at body_at itself. */
enum net_verdict kafka_handle_offset_fetch(struct kafka_slot *s, size_t body_at);

/* OffsetCommit v0-8 (handle_offsets.c). */
enum net_verdict kafka_handle_offset_commit(struct kafka_slot *s, size_t body_at);

#endif /* RT_KAFKA_HANDLE_OFFSETS_H */
