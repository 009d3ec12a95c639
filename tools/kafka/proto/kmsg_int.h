/*
 * kmsg_int.h — what the kmsg_*.c descriptions share (not part of the codec interface): the
 * macro that makes an API's four entry points over its descriptions,
 * and the descriptions' names. It holds no state and must never be included
 * outside tools/kafka/kmsg_*.c.
 */
#ifndef RT_KAFKA_KMSG_INT_H
#define RT_KAFKA_KMSG_INT_H

#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"

/* The four kmsg.h entry points of an API over its two descriptions kd_<api>_request and
 * kd_<api>_response (rq and rs name the request and response structs without "kmsg_"). */
#define KMSG_CODEC(api, rq, rs)                                                                    \
    int kmsg_##api##_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,      \
                                    struct kmsg_##rq *out)                                         \
    {                                                                                              \
        return kd_decode(&kd_##api##_request, r, version, a, out);                                 \
    }                                                                                              \
    int kmsg_##api##_request_encode(struct kp_writer *w, int16_t version,                          \
                                    const struct kmsg_##rq *m)                                     \
    {                                                                                              \
        return kd_encode(&kd_##api##_request, w, version, m);                                      \
    }                                                                                              \
    int kmsg_##api##_response_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,     \
                                     struct kmsg_##rs *out)                                        \
    {                                                                                              \
        return kd_decode(&kd_##api##_response, r, version, a, out);                                \
    }                                                                                              \
    int kmsg_##api##_response_encode(struct kp_writer *w, int16_t version,                         \
                                     const struct kmsg_##rs *m)                                    \
    {                                                                                              \
        return kd_encode(&kd_##api##_response, w, version, m);                                     \
    }

#define KMSG_DESCS(api)                                                                            \
    extern const struct kd_message kd_##api##_request;                                             \
    extern const struct kd_message kd_##api##_response;
KMSG_DESCS(produce)
KMSG_DESCS(fetch)
KMSG_DESCS(list_offsets)
KMSG_DESCS(metadata)
KMSG_DESCS(offset_commit)
KMSG_DESCS(offset_fetch)
KMSG_DESCS(find_coordinator)
KMSG_DESCS(join_group)
KMSG_DESCS(heartbeat)
KMSG_DESCS(leave_group)
KMSG_DESCS(sync_group)
KMSG_DESCS(describe_groups)
KMSG_DESCS(list_groups)
KMSG_DESCS(delete_groups)
KMSG_DESCS(offset_delete)
KMSG_DESCS(api_versions)
KMSG_DESCS(create_topics)
KMSG_DESCS(delete_topics)
KMSG_DESCS(init_producer_id)
KMSG_DESCS(add_partitions_to_txn)
KMSG_DESCS(add_offsets_to_txn)
KMSG_DESCS(end_txn)
KMSG_DESCS(txn_offset_commit)
KMSG_DESCS(describe_configs)
KMSG_DESCS(alter_configs)
KMSG_DESCS(incremental_alter_configs)
KMSG_DESCS(create_partitions)
KMSG_DESCS(delete_records)
KMSG_DESCS(describe_producers)
KMSG_DESCS(allocate_producer_ids)
KMSG_DESCS(broker_registration)
KMSG_DESCS(broker_heartbeat)
KMSG_DESCS(alter_partition)
KMSG_DESCS(offset_for_leader_epoch)
KMSG_DESCS(write_txn_markers)
KMSG_DESCS(describe_transactions)
KMSG_DESCS(list_transactions)
KMSG_DESCS(describe_acls)
KMSG_DESCS(create_acls)
KMSG_DESCS(delete_acls)
KMSG_DESCS(sasl_handshake)
KMSG_DESCS(sasl_authenticate)
KMSG_DESCS(describe_user_scram_credentials)
KMSG_DESCS(alter_user_scram_credentials)
#undef KMSG_DESCS

/* Topics of partition indexes, shared by three requests (kmsg_txn.c). */
extern const struct kd_struct kmsg_txn_topic_d;

#endif
