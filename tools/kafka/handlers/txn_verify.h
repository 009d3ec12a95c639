/*
 * txn_verify.h — KIP-890 part 1 across a cluster's nodes (docs/cluster.md §7.3, docs/format.md
 * G.9): a transactional Produce reaching a partition leader that is not the transactional id's
 * coordinator is accepted exactly when the coordinator has that partition in the producer's
 * ongoing transaction. The partition leader's side (the engine's verifier, the parked Produce,
 * the question sent as AddPartitionsToTxn v4 VerifyOnly) and the coordinator's side (the v4
 * answer) live in txn_verify.c; the cache of answers in txn_verify_cache.c. See txn_verify.c for
 * the invariants KTV1-KTV7.
 */
#ifndef RT_KAFKA_HANDLERS_TXN_VERIFY_H
#define RT_KAFKA_HANDLERS_TXN_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/net/net.h"
#include "tools/kafka/proto/kmsg.h"

struct kafka_slot;
struct metadata_image;

/* ---- a cluster node's lifetime (cmd_serve.c; a single broker calls none of these) ---- */

/* Starts the verifier (its cache and its sender thread) before the engine opens; 0 or -errno. */
int kafka_txn_verify_start(int32_t self);
/* The engine, once open (its coordinator answers when the id is coordinated here). */
void kafka_txn_verify_attach(rt_engine *engine);
/* After the server stopped (no Produce is parked any more): joins the thread, frees the cache. */
void kafka_txn_verify_stop(void);

/* rt_options.txn_verifier (format.md G.9; KTV3): the cache, else the local coordinator. */
int kafka_txn_verify_batch(void *ctx, const char *topic, uint32_t partition, int64_t producer_id,
                           int16_t producer_epoch);

/* ---- the Produce path (handle_produce.c) ---- */

/* KTV2: true when the Produce was handed to the verifier's thread (answer NET_PENDING: the
 * thread runs kafka_handle_produce again once the coordinator answered, and completes it);
 * false when it runs now (no transactional partition needs a remote answer). */
bool kafka_txn_verify_park(struct kafka_slot *s);
/* KTV4: the Produce error for (topic, partition) the coordinator refused on the second pass,
 * KAFKA_NONE otherwise. */
int16_t kafka_txn_verify_error(const struct kafka_slot *s, const char *topic, int32_t partition);

/* KTV6: the producer's marker landed in (topic, partition) on this node: forget its verified
 * entry there (called wherever this node writes a marker). */
void kafka_txn_verify_marker(int64_t producer_id, const char *topic, uint32_t partition);

/* ---- the coordinator's side ---- */

/* KTV1: the node coordinating `transactional_id` in `img` (NULL: no image, a single broker):
 * the leader of `__transaction_state`-0 when the image has that topic; `self` when it does not
 * (every node keeps its own `__transaction_state` until the controller creates it, issue 25
 * item 1); -1 when it has no leader now. The one place that says where a coordinator is. */
int32_t kafka_txn_coordinator_node(const struct metadata_image *img, int32_t self,
                                   const char *transactional_id);

/* KTV5: AddPartitionsToTxn v4 (a partition leader's batched VerifyOnly question), answered from
 * the local coordinator with no state change. Runs on the server's admin thread. */
enum net_verdict kafka_handle_add_partitions_to_txn_v4(struct kafka_slot *s);
/* The answer itself, built in arena `a` (the handler's response arena; a test's own): 0, or -1
 * when the arena is too small. */
int kafka_txn_verify_answer(rt_engine *engine, const struct kmsg_add_partitions_to_txn_request *q,
                            struct kp_arena *a, struct kmsg_add_partitions_to_txn_response *out);
/* KTV5: the v4 partition code for rt_txn_verify's answer. */
int16_t kafka_txn_verify_code(int rc);
/* KTV4: the Produce code for a v4 partition code (Kafka 3.6+'s AddPartitionsToTxnManager and
 * ReplicaManager mapping). */
int16_t kafka_txn_verify_produce_code(int16_t v4_code);

/* ---- for tests ---- */

/* One partition of a test's question. */
struct kafka_txn_verify_question {
    const char *id;
    int64_t producer_id;
    int16_t producer_epoch;
    const char *topic;
    int32_t partition;
};
/* The sender thread's round (KTV2, KTV4) run on the caller's thread against node `node` at
 * host:port: the questions grouped into one transaction per (id, producer, epoch), as few v4
 * requests as carry each id once; codes_out[i] gets question i's Produce code, a NONE is
 * cached. 0, or -EINVAL (the verifier not started, more than 32 transactions, an id too long,
 * no memory). Not for a running server (the kept connections are the sender thread's). */
int kafka_txn_verify_ask_node(int32_t node, const char *host, uint16_t port,
                              const struct kafka_txn_verify_question *qs, size_t n,
                              int16_t *codes_out);
/* Whether the cache holds (producer_id, producer_epoch, topic-partition) (KVC1). */
bool kafka_txn_verify_cached(int64_t producer_id, int16_t producer_epoch, const char *topic,
                             uint32_t partition);

#endif
