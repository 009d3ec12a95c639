/*
 * kmsg_data.c — the data-path codecs: Produce (v0-7, see api.c KA4), Fetch (v4-11), ListOffsets
 * (v1-3). It owns their byte layouts; it must never copy record bytes on decode (a produced batch
 * stays a kp_bytes into the request) and never copy fetched segment bytes on encode unless the
 * caller hands them inline (otherwise they become a hole, KP8). None of these versions is flexible.
 *
 *   Produce request: transactional_id NSTRING (v3+), acks i16, timeout_ms i32,
 *     topic_data [name STRING, partition_data [index i32, records NULLABLE_BYTES]]
 *   Produce response: responses [name STRING, partitions [index i32, error_code i16,
 *     base_offset i64, log_append_time_ms i64 (v2+), log_start_offset i64 (v5+)]],
 *     throttle_time_ms i32 (v1+)
 *
 *   Fetch request: replica_id i32, max_wait_ms i32, min_bytes i32, max_bytes i32,
 *     isolation_level i8, session_id i32 (v7+), session_epoch i32 (v7+),
 *     topics [topic STRING, partitions [partition i32, current_leader_epoch i32 (v9+),
 *       fetch_offset i64, log_start_offset i64 (v5+), partition_max_bytes i32]],
 *     forgotten_topics_data (v7+) [topic STRING, partitions [i32]], rack_id STRING (v11+)
 *   Fetch response: throttle_time_ms i32, error_code i16 (v7+), session_id i32 (v7+),
 *     responses [topic STRING, partitions [partition_index i32, error_code i16,
 *       high_watermark i64, last_stable_offset i64, log_start_offset i64 (v5+),
 *       aborted_transactions NULLABLE [producer_id i64, first_offset i64],
 *       preferred_read_replica i32 (v11+), records NULLABLE_BYTES]]
 *
 *   ListOffsets request: replica_id i32, isolation_level i8 (v2+),
 *     topics [name STRING, partitions [partition_index i32, timestamp i64]]
 *   ListOffsets response: throttle_time_ms i32 (v2+), topics [name STRING,
 *     partitions [partition_index i32, error_code i16, timestamp i64, offset i64]]
 *
 * Invariants:
 *   KD1  Every array count is checked against the least size of its element (KP4) with the
 *        element's fixed fields at that version, before the arena is asked for room.
 *   KD2  A fetch partition's records are either copied (records != NULL) or a hole of exactly
 *        records_len bytes placed right after their i32 length; never both.
 */
#include "tools/kafka/proto/kmsg.h"
#include "bench/kcodec/old_int.h"

#include <assert.h>

/* ---- Produce ---- */

int old_produce_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                               struct kmsg_produce_request *out)
{
    int rc = kmsg_version_check(KAFKA_PRODUCE, version);
    if (rc)
        return rc;
    out->transactional_id.ptr = NULL;
    out->transactional_id.len = -1;
    if (version >= 3)
        out->transactional_id = kp_read_nullable_string(r);
    out->acks = kp_read_i16(r);
    out->timeout_ms = kp_read_i32(r);
    out->topics_count = kp_read_array_len(r, 2 + 4); /* KD1 */
    out->topics = kp_arena_array(r, a, out->topics_count, sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_count && !r->err; i++) {
        struct kmsg_produce_topic *t = &out->topics[i];
        t->name = kp_read_string(r);
        t->partitions_count = kp_read_array_len(r, 4 + 4);
        t->partitions = kp_arena_array(r, a, t->partitions_count, sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_count && !r->err; j++) {
            t->partitions[j].index = kp_read_i32(r);
            t->partitions[j].records = kp_read_nullable_bytes(r);
        }
    }
    if (r->err)
        out->topics_count = 0;
    return kmsg_finish(r);
}

int old_produce_response_encode(struct kp_writer *w, int16_t version,
                                const struct kmsg_produce_response *m)
{
    int rc = kmsg_version_check(KAFKA_PRODUCE, version);
    if (rc)
        return rc;
    kp_write_array_len(w, m->responses_count);
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct kmsg_produce_topic_response *t = &m->responses[i];
        kp_write_string(w, t->name);
        kp_write_array_len(w, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_produce_partition_response *p = &t->partitions[j];
            kp_write_i32(w, p->index);
            kp_write_i16(w, p->error_code);
            kp_write_i64(w, p->base_offset);
            if (version >= 2)
                kp_write_i64(w, p->log_append_time_ms);
            if (version >= 5)
                kp_write_i64(w, p->log_start_offset);
        }
    }
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    return w->err;
}

/* ---- Fetch ---- */

int old_fetch_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                             struct kmsg_fetch_request *out)
{
    int rc = kmsg_version_check(KAFKA_FETCH, version);
    if (rc)
        return rc;
    out->replica_id = kp_read_i32(r);
    out->max_wait_ms = kp_read_i32(r);
    out->min_bytes = kp_read_i32(r);
    out->max_bytes = kp_read_i32(r);
    out->isolation_level = kp_read_i8(r);
    out->session_id = 0;
    out->session_epoch = -1;
    if (version >= 7) {
        out->session_id = kp_read_i32(r);
        out->session_epoch = kp_read_i32(r);
    }
    size_t part_min = 4 + 8 + 4 + (version >= 9 ? 4 : 0) + (version >= 5 ? 8 : 0); /* KD1 */
    out->topics_count = kp_read_array_len(r, 2 + 4);
    out->topics = kp_arena_array(r, a, out->topics_count, sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_count && !r->err; i++) {
        struct kmsg_fetch_topic *t = &out->topics[i];
        t->topic = kp_read_string(r);
        t->partitions_count = kp_read_array_len(r, part_min);
        t->partitions = kp_arena_array(r, a, t->partitions_count, sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_count && !r->err; j++) {
            struct kmsg_fetch_partition *p = &t->partitions[j];
            p->partition = kp_read_i32(r);
            p->current_leader_epoch = version >= 9 ? kp_read_i32(r) : -1;
            p->fetch_offset = kp_read_i64(r);
            p->log_start_offset = version >= 5 ? kp_read_i64(r) : -1;
            p->partition_max_bytes = kp_read_i32(r);
        }
    }
    out->forgotten_topics_data = NULL;
    out->forgotten_topics_data_count = 0;
    if (version >= 7) {
        out->forgotten_topics_data_count = kp_read_array_len(r, 2 + 4);
        out->forgotten_topics_data = kp_arena_array(r, a, out->forgotten_topics_data_count,
                                                    sizeof *out->forgotten_topics_data);
        for (int32_t i = 0; i < out->forgotten_topics_data_count && !r->err; i++) {
            struct kmsg_fetch_forgotten *f = &out->forgotten_topics_data[i];
            f->topic = kp_read_string(r);
            f->partitions_count = kp_read_array_len(r, 4);
            f->partitions = kp_arena_array(r, a, f->partitions_count, sizeof *f->partitions);
            for (int32_t j = 0; j < f->partitions_count && !r->err; j++)
                f->partitions[j] = kp_read_i32(r);
        }
    }
    out->rack_id.ptr = "";
    out->rack_id.len = 0;
    if (version >= 11)
        out->rack_id = kp_read_string(r);
    if (r->err) {
        out->topics_count = 0;
        out->forgotten_topics_data_count = 0;
    }
    return kmsg_finish(r);
}

int old_fetch_response_encode(struct kp_writer *w, int16_t version,
                              const struct kmsg_fetch_response *m)
{
    int rc = kmsg_version_check(KAFKA_FETCH, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    if (version >= 7) {
        kp_write_i16(w, m->error_code);
        kp_write_i32(w, m->session_id);
    }
    kp_write_array_len(w, m->responses_count);
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct kmsg_fetch_topic_response *t = &m->responses[i];
        kp_write_string(w, t->topic);
        kp_write_array_len(w, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_fetch_partition_response *p = &t->partitions[j];
            kp_write_i32(w, p->partition_index);
            kp_write_i16(w, p->error_code);
            kp_write_i64(w, p->high_watermark);
            kp_write_i64(w, p->last_stable_offset);
            if (version >= 5)
                kp_write_i64(w, p->log_start_offset);
            kp_write_array_len(
                w, p->aborted_transactions_count < 0 ? -1 : p->aborted_transactions_count);
            for (int32_t k = 0; k < p->aborted_transactions_count; k++) {
                kp_write_i64(w, p->aborted_transactions[k].producer_id);
                kp_write_i64(w, p->aborted_transactions[k].first_offset);
            }
            if (version >= 11)
                kp_write_i32(w, p->preferred_read_replica);
            if (p->records_len < 0) {
                kp_write_i32(w, -1);
                continue;
            }
            kp_write_i32(w, p->records_len);
            if (p->records) /* KD2 */
                kp_write_raw(w, p->records, (size_t)p->records_len);
            else if (p->records_len > 0)
                kp_write_hole(w, (uint32_t)p->records_len, p->records_ref);
        }
    }
    return w->err;
}

/* ---- ListOffsets ---- */

int old_list_offsets_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_list_offsets_request *out)
{
    int rc = kmsg_version_check(KAFKA_LIST_OFFSETS, version);
    if (rc)
        return rc;
    out->replica_id = kp_read_i32(r);
    out->isolation_level = version >= 2 ? kp_read_i8(r) : 0;
    out->topics_count = kp_read_array_len(r, 2 + 4);
    out->topics = kp_arena_array(r, a, out->topics_count, sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_count && !r->err; i++) {
        struct kmsg_list_offsets_topic *t = &out->topics[i];
        t->name = kp_read_string(r);
        t->partitions_count = kp_read_array_len(r, 4 + 8);
        t->partitions = kp_arena_array(r, a, t->partitions_count, sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_count && !r->err; j++) {
            t->partitions[j].partition_index = kp_read_i32(r);
            t->partitions[j].current_leader_epoch = -1;
            t->partitions[j].timestamp = kp_read_i64(r);
        }
    }
    if (r->err)
        out->topics_count = 0;
    return kmsg_finish(r);
}

int old_list_offsets_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_list_offsets_response *m)
{
    int rc = kmsg_version_check(KAFKA_LIST_OFFSETS, version);
    if (rc)
        return rc;
    if (version >= 2)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->topics_count);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct kmsg_list_offsets_topic_response *t = &m->topics[i];
        kp_write_string(w, t->name);
        kp_write_array_len(w, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_list_offsets_partition_response *p = &t->partitions[j];
            kp_write_i32(w, p->partition_index);
            kp_write_i16(w, p->error_code);
            kp_write_i64(w, p->timestamp);
            kp_write_i64(w, p->offset);
        }
    }
    return w->err;
}
