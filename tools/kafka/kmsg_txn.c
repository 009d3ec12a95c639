/*
 * kmsg_txn.c — transaction and offset-commit codecs (issue 13): AddPartitionsToTxn (v0-1),
 * AddOffsetsToTxn (v0-1), EndTxn (v0-1), TxnOffsetCommit (v0-2), OffsetCommit (v2-7),
 * OffsetFetch (v1-7, flexible from v6). It owns their byte layouts and must never decide an
 * answer; the APIs stay unadvertised (api.c) until the server handles them.
 *
 *   AddPartitionsToTxn request: transactional_id STRING, producer_id i64, producer_epoch i16,
 *     topics [name STRING, partitions [i32]]
 *   AddPartitionsToTxn response: throttle_time_ms i32, results [name STRING,
 *     results [partition_index i32, error_code i16]]
 *   AddOffsetsToTxn request: transactional_id STRING, producer_id i64, producer_epoch i16,
 *     group_id STRING;  response: throttle_time_ms i32, error_code i16
 *   EndTxn request: transactional_id STRING, producer_id i64, producer_epoch i16, committed BOOL;
 *     response: throttle_time_ms i32, error_code i16
 *   TxnOffsetCommit request: transactional_id STRING, group_id STRING, producer_id i64,
 *     producer_epoch i16, topics [name STRING, partitions [partition_index i32,
 *     committed_offset i64, committed_leader_epoch i32 (v2+), committed_metadata NSTRING]]
 *   TxnOffsetCommit response: throttle_time_ms i32, topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]
 *   OffsetCommit request: group_id STRING, generation_id i32, member_id STRING,
 *     group_instance_id NSTRING (v7+), retention_time_ms i64 (v2-4), topics [name STRING,
 *     partitions [partition_index i32, committed_offset i64, committed_leader_epoch i32 (v6+),
 *     committed_metadata NSTRING]]
 *   OffsetCommit response: throttle_time_ms i32 (v3+), topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]
 *   OffsetFetch request: group_id STRING, topics ARRAY (nullable v2+) [name STRING,
 *     partition_indexes [i32]], require_stable BOOL (v7+); compact forms + tags from v6
 *   OffsetFetch response: throttle_time_ms i32 (v3+), topics [name STRING, partitions
 *     [partition_index i32, committed_offset i64, committed_leader_epoch i32 (v5+),
 *     metadata NSTRING, error_code i16]], error_code i16 (v2+); compact forms + tags from v6
 */
#include "tools/kafka/kmsg.h"
#include "tools/kafka/kmsg_int.h"

/* Topics of partition indexes (AddPartitionsToTxn, OffsetFetch). */
static void read_txn_topics(struct kp_reader *r, bool flex, bool nullable, struct kp_arena *a,
                            struct kmsg_txn_topic **topics, int32_t *count)
{
    size_t min = kmsg_min_str(flex) + kmsg_min_arr(flex) + (flex ? 1 : 0);
    int32_t n = nullable ? kp_read_nalen(r, flex, min) : kp_read_alen(r, flex, min);
    struct kmsg_txn_topic *t = kp_arena_array(r, a, n, sizeof *t);
    for (int32_t i = 0; i < n && !r->err; i++) {
        t[i].name = kp_read_str(r, flex);
        t[i].partitions_count = kp_read_alen(r, flex, 4);
        t[i].partitions = kp_arena_array(r, a, t[i].partitions_count, sizeof *t[i].partitions);
        for (int32_t j = 0; j < t[i].partitions_count && !r->err; j++)
            t[i].partitions[j] = kp_read_i32(r);
        kp_read_tags(r, flex);
    }
    *topics = t;
    *count = r->err ? 0 : n;
}

static void write_topic_errors(struct kp_writer *w, const struct kmsg_topic_errors *t, int32_t n)
{
    kp_write_array_len(w, n);
    for (int32_t i = 0; i < n; i++) {
        kp_write_string(w, t[i].name);
        kp_write_array_len(w, t[i].partitions_count);
        for (int32_t j = 0; j < t[i].partitions_count; j++) {
            kp_write_i32(w, t[i].partitions[j].partition_index);
            kp_write_i16(w, t[i].partitions[j].error_code);
        }
    }
}

/* Commit topics (TxnOffsetCommit, OffsetCommit); `epoch` says whether partitions carry
 * committed_leader_epoch at this version. */
static void read_commit_topics(struct kp_reader *r, bool epoch, struct kp_arena *a,
                               struct kmsg_commit_topic **topics, int32_t *count)
{
    int32_t n = kp_read_array_len(r, 2 + 4);
    struct kmsg_commit_topic *t = kp_arena_array(r, a, n, sizeof *t);
    size_t part_min = 4 + 8 + (epoch ? 4 : 0) + 2;
    for (int32_t i = 0; i < n && !r->err; i++) {
        t[i].name = kp_read_string(r);
        t[i].partitions_count = kp_read_array_len(r, part_min);
        t[i].partitions = kp_arena_array(r, a, t[i].partitions_count, sizeof *t[i].partitions);
        for (int32_t j = 0; j < t[i].partitions_count && !r->err; j++) {
            struct kmsg_commit_partition *p = &t[i].partitions[j];
            p->partition_index = kp_read_i32(r);
            p->committed_offset = kp_read_i64(r);
            p->committed_leader_epoch = epoch ? kp_read_i32(r) : -1;
            p->committed_metadata = kp_read_nullable_string(r);
        }
    }
    *topics = t;
    *count = r->err ? 0 : n;
}

int kmsg_add_partitions_to_txn_request_decode(struct kp_reader *r, int16_t version,
                                              struct kp_arena *a,
                                              struct kmsg_add_partitions_to_txn_request *out)
{
    int rc = kmsg_version_check(KAFKA_ADD_PARTITIONS_TO_TXN, version);
    if (rc)
        return rc;
    out->transactional_id = kp_read_string(r);
    out->producer_id = kp_read_i64(r);
    out->producer_epoch = kp_read_i16(r);
    read_txn_topics(r, false, false, a, &out->topics, &out->topics_count);
    return kmsg_finish(r);
}

int kmsg_add_partitions_to_txn_response_encode(struct kp_writer *w, int16_t version,
                                               const struct kmsg_add_partitions_to_txn_response *m)
{
    int rc = kmsg_version_check(KAFKA_ADD_PARTITIONS_TO_TXN, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    write_topic_errors(w, m->results, m->results_count);
    return w->err;
}

int kmsg_add_offsets_to_txn_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                           struct kmsg_add_offsets_to_txn_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_ADD_OFFSETS_TO_TXN, version);
    if (rc)
        return rc;
    out->transactional_id = kp_read_string(r);
    out->producer_id = kp_read_i64(r);
    out->producer_epoch = kp_read_i16(r);
    out->group_id = kp_read_string(r);
    return kmsg_finish(r);
}

static int write_error_response(struct kp_writer *w, const struct kmsg_error_response *m,
                                bool throttle)
{
    if (throttle)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    return w->err;
}

int kmsg_add_offsets_to_txn_response_encode(struct kp_writer *w, int16_t version,
                                            const struct kmsg_error_response *m)
{
    int rc = kmsg_version_check(KAFKA_ADD_OFFSETS_TO_TXN, version);
    return rc ? rc : write_error_response(w, m, true);
}

int kmsg_end_txn_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                struct kmsg_end_txn_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_END_TXN, version);
    if (rc)
        return rc;
    out->transactional_id = kp_read_string(r);
    out->producer_id = kp_read_i64(r);
    out->producer_epoch = kp_read_i16(r);
    out->committed = kp_read_bool(r);
    return kmsg_finish(r);
}

int kmsg_end_txn_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_error_response *m)
{
    int rc = kmsg_version_check(KAFKA_END_TXN, version);
    return rc ? rc : write_error_response(w, m, true);
}

int kmsg_txn_offset_commit_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_txn_offset_commit_request *out)
{
    int rc = kmsg_version_check(KAFKA_TXN_OFFSET_COMMIT, version);
    if (rc)
        return rc;
    out->transactional_id = kp_read_string(r);
    out->group_id = kp_read_string(r);
    out->producer_id = kp_read_i64(r);
    out->producer_epoch = kp_read_i16(r);
    read_commit_topics(r, version >= 2, a, &out->topics, &out->topics_count);
    return kmsg_finish(r);
}

int kmsg_txn_offset_commit_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_commit_response *m)
{
    int rc = kmsg_version_check(KAFKA_TXN_OFFSET_COMMIT, version);
    if (rc)
        return rc;
    kp_write_i32(w, m->throttle_time_ms);
    write_topic_errors(w, m->topics, m->topics_count);
    return w->err;
}

int kmsg_offset_commit_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_offset_commit_request *out)
{
    int rc = kmsg_version_check(KAFKA_OFFSET_COMMIT, version);
    if (rc)
        return rc;
    out->group_id = kp_read_string(r);
    out->generation_id = kp_read_i32(r);
    out->member_id = kp_read_string(r);
    out->group_instance_id.ptr = NULL;
    out->group_instance_id.len = -1;
    if (version >= 7)
        out->group_instance_id = kp_read_nullable_string(r);
    out->retention_time_ms = version <= 4 ? kp_read_i64(r) : -1;
    read_commit_topics(r, version >= 6, a, &out->topics, &out->topics_count);
    return kmsg_finish(r);
}

int kmsg_offset_commit_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_commit_response *m)
{
    int rc = kmsg_version_check(KAFKA_OFFSET_COMMIT, version);
    if (rc)
        return rc;
    if (version >= 3)
        kp_write_i32(w, m->throttle_time_ms);
    write_topic_errors(w, m->topics, m->topics_count);
    return w->err;
}

int kmsg_offset_fetch_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_offset_fetch_request *out)
{
    int rc = kmsg_version_check(KAFKA_OFFSET_FETCH, version);
    if (rc)
        return rc;
    bool flex = kafka_api_flexible(KAFKA_OFFSET_FETCH, version);
    out->group_id = kp_read_str(r, flex);
    read_txn_topics(r, flex, version >= 2, a, &out->topics, &out->topics_count);
    out->require_stable = version >= 7 ? kp_read_bool(r) : false;
    kp_read_tags(r, flex);
    return kmsg_finish(r);
}

int kmsg_offset_fetch_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_offset_fetch_response *m)
{
    int rc = kmsg_version_check(KAFKA_OFFSET_FETCH, version);
    if (rc)
        return rc;
    bool flex = kafka_api_flexible(KAFKA_OFFSET_FETCH, version);
    if (version >= 3)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_alen(w, flex, m->topics_count);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct kmsg_offset_fetch_topic *t = &m->topics[i];
        kp_write_str(w, flex, t->name);
        kp_write_alen(w, flex, t->partitions_count);
        for (int32_t j = 0; j < t->partitions_count; j++) {
            const struct kmsg_offset_fetch_partition *p = &t->partitions[j];
            kp_write_i32(w, p->partition_index);
            kp_write_i64(w, p->committed_offset);
            if (version >= 5)
                kp_write_i32(w, p->committed_leader_epoch);
            kp_write_nstr(w, flex, p->metadata);
            kp_write_i16(w, p->error_code);
            kp_write_tags(w, flex);
        }
        kp_write_tags(w, flex);
    }
    if (version >= 2)
        kp_write_i16(w, m->error_code);
    kp_write_tags(w, flex);
    return w->err;
}
