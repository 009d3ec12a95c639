/*
 * handle_txn.h — the transactional APIs' handlers (handle_txn.c): what server.c's dispatch and
 * handle_meta.c's InitProducerId call. They decode their own requests (no kmsg codec yet).
 */
#ifndef RT_KAFKA_HANDLE_TXN_H
#define RT_KAFKA_HANDLE_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/handle.h"

/* AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit: handled by kafka_handle_txn. */
bool kafka_txn_api(int16_t key);

/* Decodes the slot's request body (at body_at in the frame) and answers it. */
enum net_verdict kafka_handle_txn(struct kafka_slot *s, size_t body_at);

/* InitProducerId with a transactional id (the request decoded in s->msg.init_producer_id). */
enum net_verdict kafka_handle_init_producer_id_txn(struct kafka_slot *s);

/* OffsetFetch v1-5 (handle_offsets.c), decoding the body at body_at itself. */
enum net_verdict kafka_handle_offset_fetch(struct kafka_slot *s, size_t body_at);

/* OffsetCommit v2-7 for consumers without group membership (handle_offsets.c). */
enum net_verdict kafka_handle_offset_commit(struct kafka_slot *s, size_t body_at);

#endif
