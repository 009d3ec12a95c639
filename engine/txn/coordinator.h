/*
 * coordinator.h — the transaction coordinator: transactional ids, their state machine, the
 * transaction log `__transaction_state`, two-phase commit through the partitions' marker API,
 * timeouts, check-back and expiry. The state machine and its invariants are at the top of
 * coordinator.c. Internal; the public face is the Transactions section of ringtail.h.
 *
 * The coordinator is created at engine open when the transaction log exists (it replays it and
 * finishes every Prepare* transaction before the engine is handed out), or lazily at the first
 * rt_producer_init_transactions. It runs one timer thread. Operations on different
 * transactional ids run concurrently (their log writes and markers share group-commit rounds);
 * operations on one id are serialised by that id's lock.
 */
#ifndef RT_COORDINATOR_H
#define RT_COORDINATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "ringtail.h"
#include "txn_log.h"

struct shard_request;

struct coordinator;

/* Opens the coordinator of engine e: replays the transaction log (creating the topic when
 * `create`), completes Prepare* transactions, aborts fenced ones, starts the timer. */
struct group_manager;
struct log;
struct producer_registry;

int coordinator_open(struct log *lg, struct producer_registry *producers,
                     struct group_manager *groups, bool create, struct coordinator **out);

/* The group manager created after the coordinator (TX2 in txn.h): transactions that carry
 * offsets complete them through it from now on. */
void coordinator_attach_groups(struct coordinator *c, struct group_manager *groups);
void coordinator_close(struct coordinator *c);

/* The largest producer id any transactional id of the log holds (-1 when none): open keeps the
 * producer-id allocator above it. */
int64_t coordinator_producer_id_max(struct coordinator *c);

/* InitProducerId for a transactional id: fences the previous instance (epoch bump), finishes
 * or aborts what it left open, and returns the producer id and the new epoch. */
int coordinator_init(struct coordinator *c, const char *transactional_id, int32_t timeout_ms,
                     rt_txn_check_fn check_fn, void *check_ctx, int64_t *producer_id_out,
                     int16_t *epoch_out);

/* coordinator_init for a producer that names the identity it holds (KIP-360, CO14):
 * expected_pid/expected_epoch -1 expect nothing (coordinator_init). RT_E_PRODUCER_FENCED when
 * the id holds another identity (nothing changes). */
int coordinator_init_expected(struct coordinator *c, const char *transactional_id,
                              int32_t timeout_ms, rt_txn_check_fn check_fn, void *check_ctx,
                              int64_t expected_pid, int16_t expected_epoch,
                              int64_t *producer_id_out, int16_t *epoch_out);

/* AddPartitionsToTxn: the transaction becomes (or stays) Ongoing with these partitions added,
 * durably, before the producer writes to them. */
int coordinator_add_partitions(struct coordinator *c, const char *transactional_id,
                               int64_t producer_id, int16_t epoch,
                               const struct txn_log_partition *parts, uint32_t count);

/* CO9: the partitions join the transaction in memory only (no log write): what the producer
 * calls before a partition's first batch. Errors as coordinator_add_partitions. */
int coordinator_join(struct coordinator *c, const char *transactional_id, int64_t producer_id,
                     int16_t epoch, const struct txn_log_partition *parts, uint32_t count);

/* The txn layer's port (docs/architecture.md, rule L-5): the one call the coordinator makes
 * into the client layer, given per commit by the in-process producer (producer.c
 * commit_wait_data). It hands over the transaction's last batches together with the
 * PrepareCommit's request `prep` (log_append_async_many, so they share a round where they share a
 * shard; it sets *queued), and returns once the batches are acknowledged (0) or failed. If it
 * leaves *queued false, the PrepareCommit is queued after it returns. In an empty transaction
 * prep is NULL. Runs on the committing thread with no coordinator lock held. */
typedef int (*coordinator_wait_data_fn)(void *ctx, struct shard_request *prep, bool *queued);

/* CO9: commit in one durable round. Builds the PrepareCommit naming, per partition, the
 * producer's last sequence in the transaction (seqs: topic, partition, last_sequence; others
 * are not checked), then calls wait_data(ctx, prep, &queued) (coordinator_wait_data_fn). With
 * both
 * durable, the markers are written without their own fdatasync and the call returns once they
 * are visible. If the data failed after the PrepareCommit was durable, the transaction is
 * aborted (PrepareAbort, markers), *aborted_out is set, the identity outputs are the next ones
 * and the data's error is returned. Other errors as coordinator_end. */
int coordinator_commit_one_round(struct coordinator *c, const char *transactional_id,
                                 int64_t producer_id, int16_t epoch,
                                 const struct txn_log_partition *seqs, uint32_t seq_count,
                                 coordinator_wait_data_fn wait_data, void *ctx,
                                 int64_t *producer_id_out, int16_t *epoch_out, bool *aborted_out);

/* EndTxn: two-phase commit or abort. On success *epoch_out is the producer's next epoch (bumped
 * at every transaction end), and *producer_id_out its id (new if the epoch was exhausted). */
int coordinator_end(struct coordinator *c, const char *transactional_id, int64_t producer_id,
                    int16_t epoch, bool commit, int64_t *producer_id_out, int16_t *epoch_out);

/* EndTxn as Kafka clients before KIP-890 part 2 send it (CO7): the transaction ends with
 * markers at the current epoch, and the producer keeps its id and epoch. An id with nothing
 * open answers 0 without writing when Empty or when its last end had the same outcome (a
 * retried EndTxn), RT_E_INVALID_TXN_STATE when it had the other one. */
int coordinator_end_keep_epoch(struct coordinator *c, const char *transactional_id,
                               int64_t producer_id, int16_t epoch, bool commit);

/* CO7: may producer (pid, epoch) write transactional data into (topic, partition) now? 0 when
 * the id holding pid (or `transactional_id`, if not NULL) is Ongoing at that epoch with the
 * partition added; RT_E_INVALID_TXN_STATE (not added, nothing open, no such producer),
 * RT_E_PRODUCER_FENCED (an older epoch or another producer id; asked by producer id alone, as
 * an append asks: RT_E_INVALID_PRODUCER_EPOCH, the partition's own answer),
 * RT_E_INVALID_PRODUCER_EPOCH (a newer epoch than the coordinator's). */
int coordinator_verify(struct coordinator *c, const char *transactional_id, int64_t producer_id,
                       int16_t epoch, const char *topic, uint32_t partition);

/* The producer is closing: forget its check-back handler. */
void coordinator_release(struct coordinator *c, const char *transactional_id);

int coordinator_set_check_handler(struct coordinator *c, rt_txn_check_fn fn, void *ctx);
int coordinator_list(struct coordinator *c, int (*fn)(void *ctx, const struct rt_txn_info *txn),
                     void *ctx);
int coordinator_abort(struct coordinator *c, const char *transactional_id);

/* Every transaction open in a partition of e (rt_txn_list_partitions), with what the
 * coordinator c (NULL: none) knows of its producer id. fn runs with no lock held. */
int coordinator_list_partitions(struct log *lg, struct coordinator *c,
                                int (*fn)(void *ctx, const struct rt_partition_txn *txn),
                                void *ctx);

/* rt_txn_abort_partition (COR6); c may be NULL (no transaction log). */
int coordinator_abort_partition(struct log *lg, struct coordinator *c, struct group_manager *groups,
                                const char *topic, uint32_t partition, int64_t producer_id,
                                int16_t producer_epoch);

/* rt_txn_write_marker (format.md G.8): one marker into a local partition, durably; in a
 * __consumer_offsets partition the producer's pending offsets follow it. */
int coordinator_write_marker(struct log *lg, struct group_manager *groups, const char *topic,
                             uint32_t partition, int64_t producer_id, int16_t producer_epoch,
                             bool commit);

/* rt_partition_producers: the partition's producer table, copied on its shard thread, then fn
 * for each entry on the caller's thread. */
int coordinator_partition_producers(struct log *lg, const char *topic, uint32_t partition,
                                    int (*fn)(void *ctx, const struct rt_partition_producer *pr),
                                    void *ctx);

/* CO16 (rt_partition_resign of __transaction_state-0): this node stops coordinating. Operations
 * already running finish first (their writes into the followed log fail: RT_E_NOT_COORDINATOR,
 * nothing adopted), then the table of ids is dropped and every later operation on an id answers
 * RT_E_NOT_COORDINATOR until coordinator_lead. The caller has made the log partition a follower
 * first (log_internal_set_follower). A no-op when already following. */
int coordinator_resign(struct coordinator *c);

/* CO16 (rt_partition_become_leader): rebuilds the table from the log (to its log end) as open
 * does — reconciliation with the partitions (COR1-COR8), every Prepare* completed (CO2, CO10) —
 * and fences and aborts every Ongoing transaction (its epoch bumped); only then are operations
 * answered. The caller has made the log partition led first. A no-op when leading. On failure
 * the table is dropped again and the coordinator stays a follower. */
int coordinator_lead(struct coordinator *c);

/* Runs one timer pass now (timeouts, check-back, expiry, compaction) — tests. */
void coordinator_tick(struct coordinator *c);

#endif /* RT_COORDINATOR_H */
