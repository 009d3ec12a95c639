/*
 * group.h — consumer-group offsets in the internal topic `__consumer_offsets` (Kafka's
 * GroupMetadataManager, offsets part): plain commits, transactional commits held pending per
 * producer until the transaction's marker, and stable fetches. docs/format.md §H is normative
 * for the records.
 *
 * The group manager is created at engine open (after the topics exist) and replays the whole
 * topic into memory; it writes through log_append_coordinator. The transaction coordinator
 * calls group_partition_for (the partition it must add to the transaction and mark),
 * group_txn_commit_offsets (while the transaction is Ongoing) and group_txn_complete (after the
 * marker is durable). Thread-safe (one mutex).
 */
#ifndef RT_GROUP_H
#define RT_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

#define GROUP_OFFSETS_TOPIC      "__consumer_offsets"
#define GROUP_OFFSETS_PARTITIONS 4
#define GROUP_NAME_MAX_BYTES     1024

struct group_manager;

/* Replays `__consumer_offsets` (which the engine created). Returns 0, RT_E_CORRUPT (a record
 * that does not parse: names the file and offset), -ENOMEM. */
struct log;

int group_manager_open(struct log *lg, struct group_manager **out);
void group_manager_close(struct group_manager *g);

/* Kafka's placement: abs(java String.hashCode(group)) % GROUP_OFFSETS_PARTITIONS. */
uint32_t group_partition_for(const char *group);
/* The same for `len` bytes of a name (no NUL needed): rt_group_partition. */
uint32_t group_partition_of(const char *group, size_t len);

/* What the public commit calls check first (group_commit itself stores any topic name): every
 * offset names an existing topic and partition. 0 or RT_E_UNKNOWN_TOPIC_OR_PARTITION naming it. */
int group_offsets_check_known(struct log *lg, const struct rt_offset *offsets, size_t count);

/* Plain commit: durable before it returns. */
int group_commit(struct group_manager *g, const char *group, const struct rt_offset *offsets,
                 size_t count);

/* Transactional commit for producer (pid, epoch): written as a transactional batch into the
 * group's partition, held pending until group_txn_complete. The coordinator has already added
 * (GROUP_OFFSETS_TOPIC, group_partition_for(group)) to the transaction — the local one
 * (rt_txn_commit_offsets), or another node's (rt_group_commit_txn_offsets, format.md H.7
 * TXO1-TXO4: the marker arrives by rt_txn_write_marker, group_txn_complete_partition). */
int group_txn_commit_offsets(struct group_manager *g, int64_t producer_id, int16_t epoch,
                             const char *group, const struct rt_offset *offsets, size_t count);

/* After the transaction's marker is durable in the group's partition: apply (commit) or drop
 * (abort) every offset the producer has pending. */
void group_txn_complete(struct group_manager *g, int64_t producer_id, bool commit);
/* The same for the producer's pending offsets in one partition of __consumer_offsets only, as
 * a marker there resolves them (GO4): what reconciliation (coordinator_reconcile.c COR5) runs
 * after the marker it wrote into that partition. */
void group_txn_complete_partition(struct group_manager *g, int64_t producer_id,
                                  uint32_t offsets_partition, bool commit);

/* The committed offset or -1; RT_E_UNSTABLE_OFFSET_COMMIT when require_stable and a
 * transactional commit for it is pending. */
int group_fetch(struct group_manager *g, const char *group, const char *topic, uint32_t partition,
                bool require_stable, int64_t *offset_out);

/* The same with the committed value's metadata, leader epoch and timestamp (out->offset -1 and
 * "" when none); out->pending says a transactional commit is pending for it. */
int group_fetch_committed(struct group_manager *g, const char *group, const char *topic,
                          uint32_t partition, bool require_stable, struct rt_committed_offset *out);

/* fn for every committed key of `group` (any order), under the manager's lock: fn must not call
 * the engine. fn's non-zero return stops the walk and is returned. O(every stored key). */
typedef int (*group_offset_fn)(void *ctx, const char *topic, uint32_t partition,
                               const struct rt_committed_offset *o);
int group_offsets_each(struct group_manager *g, const char *group, group_offset_fn fn, void *ctx);

/* fn once for every group that has a committed offset, in byte order, under the lock. */
typedef int (*group_name_fn)(void *ctx, const char *group);
int group_names_each(struct group_manager *g, group_name_fn fn, void *ctx);

/* A group's metadata (Kafka's GroupMetadataValue bytes, docs/format.md H.6), durable before it
 * returns; the latest one per group is kept and replayed. RT_E_INVALID_ARGUMENT for bytes that
 * do not decode, write errors. */
int group_store_meta(struct group_manager *g, const char *group, const uint8_t *value,
                     size_t value_len);
/* fn for every group's latest metadata value, under the lock (fn must not call the engine). */
typedef int (*group_meta_fn)(void *ctx, const char *group, const uint8_t *value, size_t len);
int group_metas_each(struct group_manager *g, group_meta_fn fn, void *ctx);

/* rt_group_store_metadata / rt_group_list_metadata: the public struct form of the above. */
int group_store_metadata(struct group_manager *g, const char *group,
                         const struct rt_group_metadata *md);
/* The GroupMetadataValue bytes of md (malloc'd into *out), as group_store_metadata writes
 * them; RT_E_INVALID_ARGUMENT as rt_group_store_metadata, -ENOMEM. No manager needed. */
int group_metadata_encode(const char *group, const struct rt_group_metadata *md, uint8_t **out,
                          size_t *len_out);
/* GO7: deletes the group's committed offsets named by parts (count of them), or with parts NULL
 * every committed offset of the group and its metadata record: one batch of tombstones, durable
 * (under the sync mode) before the keys leave memory. *deleted_out (may be NULL): the keys
 * deleted (0: nothing was stored, nothing written). Errors: RT_E_INVALID_ARGUMENT, -ENOMEM,
 * RT_E_RECORD_TOO_LARGE, write errors. */
int group_delete(struct group_manager *g, const char *group, const struct rt_topic_partition *parts,
                 size_t count, size_t *deleted_out);
int group_metadata_each(struct group_manager *g, rt_group_metadata_fn fn, void *ctx);

/* GO8 (group.c; ringtail.h rt_partition_resign / rt_partition_become_leader): stop leading
 * offsets partition k (its state dropped; its groups answer RT_E_NOT_COORDINATOR), or lead it
 * again (its state replayed from its log to the log end; a partition already led is left as
 * is). Errors: RT_E_UNKNOWN_TOPIC_OR_PARTITION, and for a load RT_E_CORRUPT or -ENOMEM (the
 * partition stays not led, with no state). */
int group_partition_unload(struct group_manager *g, uint32_t k);
int group_partition_load(struct group_manager *g, uint32_t k);
bool group_partition_led(struct group_manager *g, uint32_t k);

struct batch_header;
/* The rules a validated batch of __consumer_offsets must pass when the group manager replays it
 * at open (and what rt_verify runs, so both judge it alike): uncompressed; a control batch's
 * record parses as a marker; every other record decodes, with a non-null offset key (or a key
 * version the manager skips) and a null or decodable value. 0, or RT_E_CORRUPT with *what (the
 * part) and *why. */
int group_batch_check(const uint8_t *batch, size_t size, const struct batch_header *h,
                      const char **what, const char **why);

#endif /* RT_GROUP_H */
