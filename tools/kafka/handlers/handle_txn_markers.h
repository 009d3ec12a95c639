/*
 * handle_txn_markers.h — WriteTxnMarkers (27) on a cluster node, both sides: the handler a
 * partition leader serves it with (handle_txn_markers.c, KTM1-KTM6) and the sender the engine's
 * marker writer uses for a partition another node leads (txn_marker_send.c, KTM7-KTM9).
 */
#ifndef RT_KAFKA_HANDLE_TXN_MARKERS_H
#define RT_KAFKA_HANDLE_TXN_MARKERS_H

#include "tools/kafka/handlers/handle.h"

struct metadata_node;

/* The request decoded in s->msg.write_txn_markers; runs off the loop threads (api_table.c KA7,
 * KA8) and answers NET_PENDING while the markers wait for the ISR (KTM4). */
enum net_verdict kafka_handle_write_txn_markers(struct kafka_slot *s);

/* KTM7: writes `mk` into (mk->topic, mk->partition) through node `leader` (the image's leader of
 * it, not this node): one WriteTxnMarkers v1 over the kept connection to that node, bounded by
 * KTM_SEND_TIMEOUT_MS. 0 when the node answered NONE; RT_E_INVALID_PRODUCER_EPOCH or
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION when it answered the marker stale or the topic gone (the engine
 * counts both as written, format.md G.8 MW3); any other failure RT_E_NOT_COORDINATOR (the engine
 * retries, CO15(b)). Blocks: only on an engine thread (MW5), never on a loop thread. */
int kafka_txn_marker_send(struct metadata_node *mn, int32_t leader, const struct rt_txn_marker *mk);

#define KTM_SEND_TIMEOUT_MS 10000 /* a peer's answer, its ISR wait (KTM4) included */
#define KTM_ISR_WAIT_MS     8000  /* the handler's wait for the ISR (KTM4), below the above */

#endif
