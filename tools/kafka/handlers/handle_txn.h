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

/* The engine's marker writer on a cluster node (handle_txn.c KT9; format.md G.8): installed as
 * rt_options.txn_marker_writer with a kafka_txn_writer as its context, which `ringtail serve
 * --voters` fills once the engine is open (engine) and the node runs (cluster); until both are
 * set every marker fails and is retried (MW3). Never installed on a single broker. */
struct kafka_txn_writer {
    _Atomic(rt_engine *) engine;
    _Atomic(struct metadata_node *) cluster;
    int32_t self; /* this node's id */
};
int kafka_txn_marker_writer(void *ctx, const struct rt_txn_marker *marker);

/* KIP-664 (handle_ops.c): DescribeProducers v0, DescribeTransactions v0 and ListTransactions
 * v0-1, the request decoded in s->msg. */
enum net_verdict kafka_handle_describe_producers(struct kafka_slot *s);
enum net_verdict kafka_handle_describe_transactions(struct kafka_slot *s);
enum net_verdict kafka_handle_list_transactions(struct kafka_slot *s);

#endif
