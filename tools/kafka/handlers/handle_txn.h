/*
 * handle_txn.h — the transactional APIs' handlers (handle_txn.c): what server.c's dispatch and
 * handle_meta.c's InitProducerId call. Their requests are decoded by kmsg_txn.c's codecs,
 * reshaped into kafka_txn_request.
 */
#ifndef RT_KAFKA_HANDLE_TXN_H
#define RT_KAFKA_HANDLE_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/handlers/handle.h"

/* A decoded AddPartitionsToTxn v0-1, AddOffsetsToTxn v0-1, EndTxn v0-1 or TxnOffsetCommit v0-2
 * request (the fields its API has; strings point into the request frame, arrays into the
 * arena). */
struct kafka_txn_topic {
    struct kp_str name;
    int32_t count;
    int32_t *partitions;     /* AddPartitionsToTxn, TxnOffsetCommit */
    int64_t *offsets;        /* TxnOffsetCommit */
    struct kp_str *metadata; /* TxnOffsetCommit, nullable each */
};

struct kafka_txn_request {
    struct kp_str transactional_id;
    struct kp_str group; /* AddOffsetsToTxn, TxnOffsetCommit */
    int64_t producer_id;
    int16_t producer_epoch;
    bool committed; /* EndTxn */
    int32_t topics_count;
    struct kafka_txn_topic *topics;
};

/* Decodes the body of (api_key, version) with kmsg_txn.c's decoder: 0, the reader's error (truncation, a bad length, an
 * array count the bytes left cannot hold, bytes left over), KP_E_LIMIT (arena full), or
 * RT_E_UNSUPPORTED for another key. Never reads outside the reader's bytes. */
int kafka_txn_request_decode(struct kp_reader *r, int16_t api_key, int16_t version,
                             struct kp_arena *a, struct kafka_txn_request *out);

/* AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit: handled by kafka_handle_txn. */
bool kafka_txn_api(int16_t key);

/* Decodes the slot's request body (at body_at in the frame) and answers it. */
enum net_verdict kafka_handle_txn(struct kafka_slot *s, size_t body_at);

/* InitProducerId with a transactional id (the request decoded in s->msg.init_producer_id). */
enum net_verdict kafka_handle_init_producer_id_txn(struct kafka_slot *s);

/* KIP-664 (handle_ops.c): DescribeProducers v0, DescribeTransactions v0 and ListTransactions
 * v0-1, the request decoded in s->msg. */
enum net_verdict kafka_handle_describe_producers(struct kafka_slot *s);
enum net_verdict kafka_handle_describe_transactions(struct kafka_slot *s);
enum net_verdict kafka_handle_list_transactions(struct kafka_slot *s);

#endif
