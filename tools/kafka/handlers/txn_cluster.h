/*
 * txn_cluster.h — the transaction coordinator on a cluster node (txn_cluster.c, KTC1-KTC5):
 * what the transactional handlers (handle_txn.c), FindCoordinator (handle_meta.c), the engine's
 * marker writer and the server's start (server.c) call. On a single broker every check answers
 * "this node" and every wait answers at once.
 */
#ifndef RT_KAFKA_TXN_CLUSTER_H
#define RT_KAFKA_TXN_CLUSTER_H

#include "tools/kafka/handlers/handle.h"

struct metadata_node;

/* KTC2: NONE when this node coordinates transactions now (a single broker always does); else
 * NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE. */
int16_t kafka_txn_coordinator_check(const struct kafka_server *srv);

/* KTC1: FindCoordinator key type 1 on a cluster node: the coordinator's node, host (copied into
 * the slot's arena) and port, or COORDINATOR_NOT_AVAILABLE. false on a single broker (the
 * caller answers itself). */
bool kafka_txn_coordinator_find(struct kafka_slot *s, int16_t *err, int32_t *node,
                                struct kp_str *host, int32_t *port);

/* KTC3: the hook metadata_node.h MN11 calls on the agent thread (ctx: the kafka_server). */
bool kafka_txn_state_role(void *ctx, bool lead);

/* KTC4: parks a transactional answer until `__transaction_state`-0's high watermark reaches the
 * log end read after the engine call returned; done(ctx, the replica side's code, RS5) then
 * runs once, on the replica thread (or at once, with NOT_LEADER_OR_FOLLOWER, when this node no
 * longer leads it). -1 on a single broker (answer now, done never runs); 0 parked; -ENOMEM or
 * -ESHUTDOWN when it cannot park (done never runs). */
int kafka_txn_answer_wait(struct kafka_server *srv, void (*done)(void *ctx, int16_t error),
                          void *ctx);
/* KTC4: the Kafka code a transactional answer carries for the replica side's code. */
int16_t kafka_txn_answer_error(int16_t replication_error);

/* KTC5 (format.md G.8 MW2): called first by kafka_txn_marker_writer, on the engine's thread of
 * the transactional call or timer (MW5: it may block). 0 once `__transaction_state`-0's high
 * watermark has reached its log end as of this call (the decision the marker carries is on the
 * ISR); RT_E_NOT_COORDINATOR when this node does not lead it or lost it, or after
 * KTC_DECISION_WAIT_MS — the marker is then not written and the engine retries it (MW3).
 * mn: the writer's node (NULL before it runs: retried). */
int kafka_txn_decision_replicated(struct metadata_node *mn);

#endif
