/*
 * handle_txn.h — the transactional APIs' handlers (handle_txn.c) and the KIP-664 operator APIs'
 * (handle_ops.c): what api_table.c's rows and handle_meta.c's InitProducerId call. Every
 * request arrives decoded by its kmsg description in s->msg (api_table.c KA6).
 */
#ifndef RT_KAFKA_HANDLE_TXN_H
#define RT_KAFKA_HANDLE_TXN_H

#include "tools/kafka/handlers/handle.h"

/* AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit v0-3 (s->msg's member of the
 * same name); each answers NET_PENDING while the engine works (KT5). */
enum net_verdict kafka_handle_add_partitions_to_txn(struct kafka_slot *s);
enum net_verdict kafka_handle_add_offsets_to_txn(struct kafka_slot *s);
enum net_verdict kafka_handle_end_txn(struct kafka_slot *s);
enum net_verdict kafka_handle_txn_offset_commit(struct kafka_slot *s);

/* InitProducerId with a transactional id (the request decoded in s->msg.init_producer_id). */
enum net_verdict kafka_handle_init_producer_id_txn(struct kafka_slot *s);

/* KIP-664 (handle_ops.c): DescribeProducers v0, DescribeTransactions v0 and ListTransactions
 * v0-1, the request decoded in s->msg. */
enum net_verdict kafka_handle_describe_producers(struct kafka_slot *s);
enum net_verdict kafka_handle_describe_transactions(struct kafka_slot *s);
enum net_verdict kafka_handle_list_transactions(struct kafka_slot *s);

#endif
