/*
 * kmsg_ops.c — the KIP-664 operator codecs (issue 13): DescribeProducers (61, v0),
 * DescribeTransactions (65, v0), ListTransactions (66, v0-1). Every version is flexible: compact
 * strings and arrays, a tagged-field section after each struct. It owns their byte layouts and
 * must never decide an answer; the APIs stay unadvertised (api.c) until the server handles them.
 *
 *   DescribeProducers request: topics [name STRING, partition_indexes [i32]]
 *   DescribeProducers response: throttle_time_ms i32, topics [name STRING, partitions
 *     [partition_index i32, error_code i16, active_producers [producer_id i64,
 *     producer_epoch i32, last_sequence i32, last_timestamp i64,
 *     current_txn_start_timestamp i64]]]
 *   DescribeTransactions request: transactional_ids [STRING]
 *   DescribeTransactions response: throttle_time_ms i32, transaction_states [error_code i16,
 *     transactional_id STRING, transaction_state STRING, transaction_timeout_ms i32,
 *     transaction_start_time_ms i64, producer_id i64, producer_epoch i32,
 *     topic_partitions [name STRING, partition_indexes [i32]]]
 *   ListTransactions request: state_filters [STRING], producer_id_filters [i64],
 *     duration_filter i64 (v1+)
 *   ListTransactions response: throttle_time_ms i32, error_code i16,
 *     transaction_states [transactional_id STRING, producer_id i64, transaction_state STRING]
 */
#include "tools/kafka/kmsg.h"
#include "tools/kafka/kmsg_int.h"

int kmsg_describe_producers_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                           struct kmsg_describe_producers_request *out)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_PRODUCERS, version);
    if (rc)
        return rc;
    out->topics_count = kp_read_compact_array_len(r, 1 + 1 + 1);
    out->topics = kp_arena_array(r, a, out->topics_count, sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_count && !r->err; i++) {
        struct kmsg_txn_topic *t = &out->topics[i];
        t->name = kp_read_compact_string(r);
        t->partitions_count = kp_read_compact_array_len(r, 4);
        t->partitions = kp_arena_array(r, a, t->partitions_count, sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_count && !r->err; j++)
            t->partitions[j] = kp_read_i32(r);
        kp_skip_tags(r);
    }
    kp_skip_tags(r);
    if (r->err)
        out->topics_count = 0;
    return kmsg_finish(r);
}

int kmsg_describe_producers_response_encode(struct kp_writer *w, int16_t version,
                                            const struct kmsg_describe_producers_response *m)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_PRODUCERS, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    kp_write_compact_array_len(w, m->topics_count);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct kmsg_describe_producers_topic *t = &m->topics[i];
        kp_write_compact_string(w, t->name);
        kp_write_compact_array_len(w, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_describe_producers_partition *p = &t->partitions[j];
            kp_write_i32(w, p->partition_index);
            kp_write_i16(w, p->error_code);
            kp_write_compact_array_len(w, p->active_producers_count);
            for (int32_t k = 0; k < p->active_producers_count; k++) {
                const struct kmsg_producer_state *s = &p->active_producers[k];
                kp_write_i64(w, s->producer_id);
                kp_write_i32(w, s->producer_epoch);
                kp_write_i32(w, s->last_sequence);
                kp_write_i64(w, s->last_timestamp);
                kp_write_i64(w, s->current_txn_start_timestamp);
                kp_write_tags(w, true);
            }
            kp_write_tags(w, true);
        }
        kp_write_tags(w, true);
    }
    kp_write_tags(w, true);
    return w->err;
}

int kmsg_describe_transactions_request_decode(struct kp_reader *r, int16_t version,
                                              struct kp_arena *a,
                                              struct kmsg_describe_transactions_request *out)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_TRANSACTIONS, version);
    if (rc)
        return rc;
    out->transactional_ids_count = kp_read_compact_array_len(r, 1);
    out->transactional_ids =
        kp_arena_array(r, a, out->transactional_ids_count, sizeof *out->transactional_ids);
    for (int32_t i = 0; i < out->transactional_ids_count && !r->err; i++)
        out->transactional_ids[i] = kp_read_compact_string(r);
    kp_skip_tags(r);
    if (r->err)
        out->transactional_ids_count = 0;
    return kmsg_finish(r);
}

int kmsg_describe_transactions_response_encode(struct kp_writer *w, int16_t version,
                                               const struct kmsg_describe_transactions_response *m)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_TRANSACTIONS, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    kp_write_compact_array_len(w, m->transaction_states_count);
    for (int32_t i = 0; i < m->transaction_states_count; i++) {
        const struct kmsg_transaction_state *s = &m->transaction_states[i];
        kp_write_i16(w, s->error_code);
        kp_write_compact_string(w, s->transactional_id);
        kp_write_compact_string(w, s->transaction_state);
        kp_write_i32(w, s->transaction_timeout_ms);
        kp_write_i64(w, s->transaction_start_time_ms);
        kp_write_i64(w, s->producer_id);
        kp_write_i32(w, s->producer_epoch);
        kp_write_compact_array_len(w, s->topic_partitions_count);
        for (int32_t j = 0; j < s->topic_partitions_count; j++) {
            const struct kmsg_transaction_partitions *t = &s->topic_partitions[j];
            kp_write_compact_string(w, t->name);
            kp_write_compact_array_len(w, t->partition_indexes_count);
            for (int32_t k = 0; k < t->partition_indexes_count; k++)
                kp_write_i32(w, t->partition_indexes[k]);
            kp_write_tags(w, true);
        }
        kp_write_tags(w, true);
    }
    kp_write_tags(w, true);
    return w->err;
}

int kmsg_list_transactions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_list_transactions_request *out)
{
    int rc = kmsg_version_check(KAFKA_LIST_TRANSACTIONS, version);
    if (rc)
        return rc;
    out->state_filters_count = kp_read_compact_array_len(r, 1);
    out->state_filters = kp_arena_array(r, a, out->state_filters_count, sizeof *out->state_filters);
    for (int32_t i = 0; i < out->state_filters_count && !r->err; i++)
        out->state_filters[i] = kp_read_compact_string(r);
    out->producer_id_filters_count = kp_read_compact_array_len(r, 8);
    out->producer_id_filters =
        kp_arena_array(r, a, out->producer_id_filters_count, sizeof *out->producer_id_filters);
    for (int32_t i = 0; i < out->producer_id_filters_count && !r->err; i++)
        out->producer_id_filters[i] = kp_read_i64(r);
    out->duration_filter_ms = version >= 1 ? kp_read_i64(r) : -1;
    kp_skip_tags(r);
    if (r->err) {
        out->state_filters_count = 0;
        out->producer_id_filters_count = 0;
    }
    return kmsg_finish(r);
}

int kmsg_list_transactions_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_list_transactions_response *m)
{
    int rc = kmsg_version_check(KAFKA_LIST_TRANSACTIONS, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    kp_write_compact_array_len(w, m->transaction_states_count);
    for (int32_t i = 0; i < m->transaction_states_count; i++) {
        kp_write_compact_string(w, m->transaction_states[i].transactional_id);
        kp_write_i64(w, m->transaction_states[i].producer_id);
        kp_write_compact_string(w, m->transaction_states[i].transaction_state);
        kp_write_tags(w, true);
    }
    kp_write_tags(w, true);
    return w->err;
}
