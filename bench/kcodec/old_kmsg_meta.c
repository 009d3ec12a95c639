/*
 * kmsg_meta.c — cluster and producer-id codecs: Metadata (v0-4), FindCoordinator (v0-3),
 * InitProducerId (v0-4). It owns their byte layouts and must never decide what a broker answers
 * (the server fills the response structs).
 *
 *   Metadata request: topics ARRAY [name STRING] (v0: non-null, empty = all; v1+: null = all,
 *     empty = none), allow_auto_topic_creation BOOL (v4+)
 *   Metadata response: throttle_time_ms i32 (v3+), brokers [node_id i32, host STRING, port i32,
 *     rack NSTRING (v1+)], cluster_id NSTRING (v2+), controller_id i32 (v1+),
 *     topics [error_code i16, name STRING, is_internal BOOL (v1+), partitions [error_code i16,
 *       partition_index i32, leader_id i32, replica_nodes [i32], isr_nodes [i32]]]
 *
 *   FindCoordinator request: key STRING, key_type i8 (v1+); v3 flexible (+TAGGED_FIELDS)
 *   FindCoordinator response: throttle_time_ms i32 (v1+), error_code i16,
 *     error_message NSTRING (v1+), node_id i32, host STRING, port i32
 *
 *   InitProducerId request: transactional_id NSTRING, transaction_timeout_ms i32,
 *     producer_id i64 (v3+), producer_epoch i16 (v3+); v2+ flexible
 *   InitProducerId response: throttle_time_ms i32, error_code i16, producer_id i64,
 *     producer_epoch i16
 *
 * Invariants:
 *   KM1  Metadata v0's empty topic array and v1+'s null array both decode as topics_count -1
 *        ("all topics"); v1+'s empty array decodes as 0 ("none").
 */
#include "tools/kafka/proto/kmsg.h"
#include "bench/kcodec/old_int.h"

/* ---- Metadata ---- */

int old_metadata_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                struct kmsg_metadata_request *out)
{
    int rc = kmsg_version_check(KAFKA_METADATA, version);
    if (rc)
        return rc;
    int32_t n = version == 0 ? kp_read_array_len(r, 2) : kp_read_nullable_array_len(r, 2);
    out->topics = kp_arena_array(r, a, n, sizeof *out->topics);
    for (int32_t i = 0; i < n && !r->err; i++)
        out->topics[i].name = kp_read_string(r);
    out->topics_count = (version == 0 && n == 0) ? -1 : n; /* KM1 */
    out->allow_auto_topic_creation = version >= 4 ? kp_read_bool(r) : true;
    if (r->err)
        out->topics_count = 0;
    return kmsg_finish(r);
}

static void write_i32_array(struct kp_writer *w, const int32_t *v, int32_t n)
{
    kp_write_array_len(w, n < 0 ? 0 : n);
    for (int32_t i = 0; i < n; i++)
        kp_write_i32(w, v[i]);
}

int old_metadata_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_metadata_response *m)
{
    int rc = kmsg_version_check(KAFKA_METADATA, version);
    if (rc)
        return rc;
    if (version >= 3)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->brokers_count);
    for (int32_t i = 0; i < m->brokers_count; i++) {
        const struct kmsg_metadata_broker *b = &m->brokers[i];
        kp_write_i32(w, b->node_id);
        kp_write_string(w, b->host);
        kp_write_i32(w, b->port);
        if (version >= 1)
            kp_write_nullable_string(w, b->rack);
    }
    if (version >= 2)
        kp_write_nullable_string(w, m->cluster_id);
    if (version >= 1)
        kp_write_i32(w, m->controller_id);
    kp_write_array_len(w, m->topics_count);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct kmsg_metadata_topic *t = &m->topics[i];
        kp_write_i16(w, t->error_code);
        kp_write_string(w, t->name);
        if (version >= 1)
            kp_write_bool(w, t->is_internal);
        kp_write_array_len(w, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_metadata_partition *p = &t->partitions[j];
            kp_write_i16(w, p->error_code);
            kp_write_i32(w, p->partition_index);
            kp_write_i32(w, p->leader_id);
            write_i32_array(w, p->replica_nodes, p->replica_nodes_count);
            write_i32_array(w, p->isr_nodes, p->isr_nodes_count);
        }
    }
    return w->err;
}

/* ---- FindCoordinator ---- */

int old_find_coordinator_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                        struct kmsg_find_coordinator_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_FIND_COORDINATOR, version);
    if (rc)
        return rc;
    bool flex = kafka_api_flexible(KAFKA_FIND_COORDINATOR, version);
    out->key = kp_read_str(r, flex);
    out->key_type = version >= 1 ? kp_read_i8(r) : 0;
    kp_read_tags(r, flex);
    return kmsg_finish(r);
}

int old_find_coordinator_response_encode(struct kp_writer *w, int16_t version,
                                         const struct kmsg_find_coordinator_response *m)
{
    int rc = kmsg_version_check(KAFKA_FIND_COORDINATOR, version);
    if (rc)
        return rc;
    bool flex = kafka_api_flexible(KAFKA_FIND_COORDINATOR, version);
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    if (version >= 1)
        kp_write_nstr(w, flex, m->error_message);
    kp_write_i32(w, m->node_id);
    kp_write_str(w, flex, m->host);
    kp_write_i32(w, m->port);
    kp_write_tags(w, flex);
    return w->err;
}

/* ---- InitProducerId ---- */

int old_init_producer_id_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                        struct kmsg_init_producer_id_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_INIT_PRODUCER_ID, version);
    if (rc)
        return rc;
    bool flex = kafka_api_flexible(KAFKA_INIT_PRODUCER_ID, version);
    out->transactional_id = kp_read_nstr(r, flex);
    out->transaction_timeout_ms = kp_read_i32(r);
    out->producer_id = -1;
    out->producer_epoch = -1;
    if (version >= 3) {
        out->producer_id = kp_read_i64(r);
        out->producer_epoch = kp_read_i16(r);
    }
    kp_read_tags(r, flex);
    return kmsg_finish(r);
}

int old_init_producer_id_response_encode(struct kp_writer *w, int16_t version,
                                         const struct kmsg_init_producer_id_response *m)
{
    int rc = kmsg_version_check(KAFKA_INIT_PRODUCER_ID, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    kp_write_i64(w, m->producer_id);
    kp_write_i16(w, m->producer_epoch);
    kp_write_tags(w, kafka_api_flexible(KAFKA_INIT_PRODUCER_ID, version));
    return w->err;
}
