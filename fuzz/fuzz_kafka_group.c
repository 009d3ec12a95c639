/*
 * fuzz_kafka_group.c — libFuzzer target for issue 13's request decoders (transactions:
 * AddPartitionsToTxn v0-4 (v4: KIP-890's broker-to-broker VerifyOnly batches), AddOffsetsToTxn,
 * EndTxn, TxnOffsetCommit; groups: OffsetCommit,
 * OffsetFetch, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups;
 * KIP-664: DescribeProducers, DescribeTransactions, ListTransactions; tools/kafka/proto/kmsg_txn.c,
 * kmsg_group.c, kmsg_ops.c), input layout in kafka_fuzz.h. What decodes is answered
 * through the matching response encoder, echoing the request's topics, members and bytes.
 */
#include "fuzz/kafka_fuzz.h"

static struct kmsg_topic_errors topic_errors[4096];
static struct kmsg_partition_error part_error = {0, 0};

static int32_t echo_txn_topics(const struct kmsg_txn_topic *t, int32_t n)
{
    n = n > 4096 ? 4096 : n;
    for (int32_t i = 0; i < n; i++) {
        kf_str_inside(t[i].name);
        topic_errors[i] = (struct kmsg_topic_errors){t[i].name, &part_error, 1};
    }
    return n < 0 ? 0 : n;
}

static int32_t echo_commit_topics(const struct kmsg_commit_topic *t, int32_t n)
{
    n = n > 4096 ? 4096 : n;
    for (int32_t i = 0; i < n; i++) {
        kf_str_inside(t[i].name);
        for (int32_t j = 0; j < t[i].partitions_count; j++)
            kf_str_inside(t[i].partitions[j].committed_metadata);
        topic_errors[i] = (struct kmsg_topic_errors){t[i].name, &part_error, 1};
    }
    return n;
}

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 3) == 0);
    struct kmsg_error_response er = {0, 0};
    int rc = 0;
    switch (key) {
    case KAFKA_ADD_PARTITIONS_TO_TXN: {
        const struct kmsg_add_partitions_to_txn_request *q = &req->add_partitions_to_txn;
        kf_str_inside(q->transactional_id);
        /* v4 (KIP-890's batches): the first transaction's id and topics echoed */
        static struct kmsg_add_partitions_to_txn_result txn_result;
        struct kmsg_add_partitions_to_txn_response m = {
            .results = topic_errors, .results_count = echo_txn_topics(q->topics, q->topics_count)};
        if (q->transactions_count > 0) {
            kf_str_inside(q->transactions[0].transactional_id);
            txn_result = (struct kmsg_add_partitions_to_txn_result){
                q->transactions[0].transactional_id, topic_errors,
                echo_txn_topics(q->transactions[0].topics, q->transactions[0].topics_count)};
            m.results_by_transaction = &txn_result;
            m.results_by_transaction_count = 1;
        }
        rc = kmsg_add_partitions_to_txn_response_encode(w, version, &m);
        break;
    }
    case KAFKA_ADD_OFFSETS_TO_TXN:
        kf_str_inside(req->add_offsets_to_txn.group_id);
        rc = kmsg_add_offsets_to_txn_response_encode(w, version, &er);
        break;
    case KAFKA_END_TXN:
        kf_str_inside(req->end_txn.transactional_id);
        rc = kmsg_end_txn_response_encode(w, version, &er);
        break;
    case KAFKA_TXN_OFFSET_COMMIT: {
        const struct kmsg_txn_offset_commit_request *q = &req->txn_offset_commit;
        struct kmsg_commit_response m = {0, topic_errors,
                                         echo_commit_topics(q->topics, q->topics_count)};
        rc = kmsg_txn_offset_commit_response_encode(w, version, &m);
        break;
    }
    case KAFKA_OFFSET_COMMIT: {
        const struct kmsg_offset_commit_request *q = &req->offset_commit;
        kf_str_inside(q->group_instance_id);
        struct kmsg_commit_response m = {0, topic_errors,
                                         echo_commit_topics(q->topics, q->topics_count)};
        rc = kmsg_offset_commit_response_encode(w, version, &m);
        break;
    }
    case KAFKA_OFFSET_FETCH: {
        const struct kmsg_offset_fetch_request *q = &req->offset_fetch;
        kf_str_inside(q->group_id);
        static struct kmsg_offset_fetch_topic t[4096];
        static const struct kmsg_offset_fetch_partition p = {0, 5, -1, {NULL, -1}, 0};
        int32_t n = q->topics_count > 4096 ? 4096 : q->topics_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            t[i] = (struct kmsg_offset_fetch_topic){q->topics[i].name, &p, 1};
        }
        static struct kmsg_offset_fetch_group gs[4096];
        int32_t gn = q->groups_count > 4096 ? 4096 : q->groups_count;
        for (int32_t i = 0; i < gn; i++) { /* v8: each group answered with no topics */
            kf_str_inside(q->groups[i].group_id);
            gs[i] = (struct kmsg_offset_fetch_group){q->groups[i].group_id, NULL, 0, 0};
        }
        struct kmsg_offset_fetch_response m = {0, t, n < 0 ? 0 : n, 0, gs, gn < 0 ? 0 : gn};
        rc = kmsg_offset_fetch_response_encode(w, version, &m);
        break;
    }
    case KAFKA_JOIN_GROUP: {
        const struct kmsg_join_group_request *q = &req->join_group;
        static struct kmsg_join_group_member mb[4096];
        int32_t n = q->protocols_count > 4096 ? 4096 : q->protocols_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->protocols[i].name);
            kf_bytes_inside(q->protocols[i].metadata);
            mb[i] = (struct kmsg_join_group_member){q->member_id, q->group_instance_id,
                                                    q->protocols[i].metadata};
        }
        struct kmsg_join_group_response m = {0,
                                             0,
                                             1,
                                             n ? q->protocols[0].name : q->protocol_type,
                                             q->member_id,
                                             q->member_id,
                                             mb,
                                             n,
                                             q->protocol_type,
                                             true};
        rc = kmsg_join_group_response_encode(w, version, &m);
        break;
    }
    case KAFKA_SYNC_GROUP: {
        const struct kmsg_sync_group_request *q = &req->sync_group;
        struct kp_bytes b = {NULL, 0};
        if (q->assignments_count > 0) {
            kf_bytes_inside(q->assignments[0].assignment);
            b = q->assignments[0].assignment;
        }
        kf_str_inside(q->protocol_name);
        struct kmsg_sync_group_response m = {0, 0, b, q->protocol_type, q->protocol_name};
        rc = kmsg_sync_group_response_encode(w, version, &m);
        break;
    }
    case KAFKA_HEARTBEAT:
        kf_str_inside(req->heartbeat.group_instance_id);
        rc = kmsg_heartbeat_response_encode(w, version, &er);
        break;
    case KAFKA_LEAVE_GROUP: {
        const struct kmsg_leave_group_request *q = &req->leave_group;
        kf_str_inside(q->member_id);
        static struct kmsg_leave_group_member_response lm[4096];
        int32_t n = q->members_count > 4096 ? 4096 : q->members_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->members[i].reason);
            lm[i] = (struct kmsg_leave_group_member_response){q->members[i].member_id,
                                                              q->members[i].group_instance_id, 0};
        }
        struct kmsg_leave_group_response m = {0, 0, lm, n < 0 ? 0 : n};
        rc = kmsg_leave_group_response_encode(w, version, &m);
        break;
    }
    case KAFKA_DELETE_GROUPS: {
        const struct kmsg_delete_groups_request *q = &req->delete_groups;
        static struct kmsg_delete_groups_result r[4096];
        int32_t n = q->groups_names_count > 4096 ? 4096 : q->groups_names_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->groups_names[i]);
            r[i] = (struct kmsg_delete_groups_result){q->groups_names[i], 69};
        }
        struct kmsg_delete_groups_response m = {0, r, n < 0 ? 0 : n};
        rc = kmsg_delete_groups_response_encode(w, version, &m);
        break;
    }
    case KAFKA_OFFSET_DELETE: {
        const struct kmsg_offset_delete_request *q = &req->offset_delete;
        kf_str_inside(q->group_id);
        int32_t n = q->topics_count > 4096 ? 4096 : q->topics_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            topic_errors[i] = (struct kmsg_topic_errors){q->topics[i].name, &part_error, 1};
        }
        struct kmsg_offset_delete_response m = {0, 0, topic_errors, n < 0 ? 0 : n};
        rc = kmsg_offset_delete_response_encode(w, version, &m);
        break;
    }
    case KAFKA_LIST_GROUPS: {
        static const struct kmsg_list_groups_group g = {{"g", 1}, {"consumer", 8}, {"Stable", 6}};
        struct kmsg_list_groups_response m = {0, 0, &g, 1};
        rc = kmsg_list_groups_response_encode(w, version, &m);
        break;
    }
    case KAFKA_DESCRIBE_PRODUCERS: {
        const struct kmsg_describe_producers_request *q = &req->describe_producers;
        static struct kmsg_describe_producers_topic t[4096];
        static const struct kmsg_producer_state ps = {1, 0, 5, 10, -1, 42};
        static const struct kmsg_describe_producers_partition dp = {0, 0, {NULL, -1}, &ps, 1};
        int32_t n = q->topics_count > 4096 ? 4096 : q->topics_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name);
            t[i] = (struct kmsg_describe_producers_topic){q->topics[i].name, &dp, 1};
        }
        struct kmsg_describe_producers_response m = {0, t, n};
        rc = kmsg_describe_producers_response_encode(w, version, &m);
        break;
    }
    case KAFKA_DESCRIBE_TRANSACTIONS: {
        const struct kmsg_describe_transactions_request *q = &req->describe_transactions;
        static struct kmsg_transaction_state t[4096];
        int32_t n = q->transactional_ids_count > 4096 ? 4096 : q->transactional_ids_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->transactional_ids[i]);
            t[i] = (struct kmsg_transaction_state){
                0, q->transactional_ids[i], {"Empty", 5}, 60000, -1, 1, 0, NULL, 0};
        }
        struct kmsg_describe_transactions_response m = {0, t, n};
        rc = kmsg_describe_transactions_response_encode(w, version, &m);
        break;
    }
    case KAFKA_LIST_TRANSACTIONS: {
        const struct kmsg_list_transactions_request *q = &req->list_transactions;
        static struct kmsg_listed_transaction t[4096];
        int32_t n = q->state_filters_count > 4096 ? 4096 : q->state_filters_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->state_filters[i]);
            t[i] = (struct kmsg_listed_transaction){{"t", 1}, 1, q->state_filters[i]};
        }
        /* The filters answered back as unknown too (KOP2's shape). */
        struct kmsg_list_transactions_response m = {0, 0, q->state_filters, n, t, n};
        rc = kmsg_list_transactions_response_encode(w, version, &m);
        break;
    }
    default: {
        const struct kmsg_describe_groups_request *q = &req->describe_groups;
        static struct kmsg_describe_groups_group g[4096];
        int32_t n = q->groups_count > 4096 ? 4096 : q->groups_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->groups[i]);
            g[i] = (struct kmsg_describe_groups_group){
                0, q->groups[i], {"Empty", 5}, {"", 0}, {"", 0}, NULL, 0, 0};
        }
        struct kmsg_describe_groups_response m = {0, g, n};
        rc = kmsg_describe_groups_response_encode(w, version, &m);
        break;
    }
    }
    KCHECK(rc == 0 || rc == -12);
    if (rc == 0)
        KCHECK(kafka_frame_end(w, at) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_ADD_PARTITIONS_TO_TXN,
                                   KAFKA_ADD_OFFSETS_TO_TXN,
                                   KAFKA_END_TXN,
                                   KAFKA_TXN_OFFSET_COMMIT,
                                   KAFKA_OFFSET_COMMIT,
                                   KAFKA_OFFSET_FETCH,
                                   KAFKA_JOIN_GROUP,
                                   KAFKA_SYNC_GROUP,
                                   KAFKA_HEARTBEAT,
                                   KAFKA_LEAVE_GROUP,
                                   KAFKA_LIST_GROUPS,
                                   KAFKA_DESCRIBE_GROUPS,
                                   KAFKA_DESCRIBE_PRODUCERS,
                                   KAFKA_DESCRIBE_TRANSACTIONS,
                                   KAFKA_LIST_TRANSACTIONS,
                                   KAFKA_DELETE_GROUPS,
                                   KAFKA_OFFSET_DELETE};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
