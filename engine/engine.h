/*
 * engine.h — the engine object behind rt_engine: the data directory and its lock, options,
 * the topic table, the shards, and recovery orchestration at open. Internal; the public face
 * is ringtail.h.
 *
 * The topic table is append-only with a fixed capacity (topics_max) allocated at open: a topic
 * is fully built before it is published by a release store of topic_count, so lookups from
 * any thread take no lock. Topic creation is serialised by admin_lock.
 */
#ifndef RT_ENGINE_H
#define RT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "meta.h"
#include "partition.h"
#include "producer_registry.h"

struct coordinator;
struct group_manager;
#include "ringtail.h"
#include "shard.h"

struct topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partition_count;
    struct partition *partitions;
};

struct fetch_pool;

struct rt_engine {
    char dir[SEGMENT_PATH_BYTES];
    int lock_fd;
    struct rt_options opts;
    struct partition_config pcfg;
    struct shard_env env;

    pthread_mutex_t admin_lock;
    struct meta_catalogue catalogue;
    struct topic *topics;     /* topics_capacity slots */
    uint32_t topics_capacity; /* topics_max user topics + the internal ones */
    _Atomic uint32_t topic_count;
    uint32_t partitions_total; /* for shard assignment */

    struct shard *shards;
    uint32_t shard_count;

    _Atomic int write_error;
    _Atomic bool closing;
    struct engine_counters counters;
    struct producer_registry producers;
    bool producers_open;
    pthread_mutex_t internal_lock; /* creates the internal topics and their managers lazily */
    struct coordinator *coordinator;
    struct group_manager *groups;
    struct partition_recovery recovery; /* summed over partitions at open */
    bool clean_at_open;                 /* the clean-shutdown marker was there */
    struct fetch_pool *fetches;         /* rt_fetch handles, at most opts.fetches_max open */
};

#define ENGINE_FETCHES_MAX_DEFAULT 4096

/* Internal topics the engine creates itself (__transaction_state, __consumer_offsets): slots
 * beyond topics_max. */
#define INTERNAL_TOPICS_MAX 2

/* Creates an internal topic (a name beginning with "__"): not counted against topics_max, and
 * the only way such a topic comes to exist. Errors as rt_topic_create. */
int engine_internal_topic_create(rt_engine *e, const char *name, uint32_t partitions);

/* 0 when clients may write to `topic`; RT_E_INTERNAL_TOPIC (detail set) for an internal topic.
 * Every client append path (rt_append, rt_append_batch, rt_producer_send) asks this. */
int engine_client_topic_check(const char *topic);

/* True for an engine opened with opts.read_only. */
bool engine_read_only(const rt_engine *e);

/* RT_E_READ_ONLY with a detail naming the directory and `what` was refused, when the engine is
 * read-only; else 0. */
int engine_refuse_if_read_only(const rt_engine *e, const char *what);

/* The partition, or NULL (with the thread's error detail set). */
struct partition *engine_partition(rt_engine *e, const char *topic, uint32_t partition);

/* Appends an encoded, validated batch whose header is parsed, waiting for the outcome. For a
 * producer batch (producer id >= 0) the partition's producer rules apply; a duplicate returns 0
 * with the original base offset (-1 if unknown) and *duplicate_out set. */
int engine_append(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                  const struct batch_header *h, int64_t *base_offset_out, bool *duplicate_out);

/* Producer ids: a fresh one, or a name's (epoch bumped). */
int engine_producer_allocate(rt_engine *e, int64_t *producer_id_out);
int engine_producer_open_name(rt_engine *e, const char *name, int64_t *producer_id_out,
                              int16_t *epoch_out);

/* Queues a prepared append request (kind APPEND, partition, batch, len, header, on_done) and
 * returns; on_done runs on the shard thread. RT_E_CLOSED / RT_E_IO_FAILED without queuing. */
int engine_append_async(rt_engine *e, struct shard_request *req);

/* The last sequence the partition has for a producer (-1: none), read on its shard thread. */
int engine_producer_last_sequence(rt_engine *e, struct partition *p, int64_t producer_id,
                                  int64_t *sequence_out);

/* One transaction marker to write (the coordinator's marker API). */
struct marker_spec {
    const char *topic;
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t coordinator_epoch;
    int type;       /* CONTROL_COMMIT or CONTROL_ABORT */
    int result;     /* out: 0 or the rule that rejected it */
    int64_t offset; /* out: where the marker landed */
};

/* Writes every marker in specs: the markers of one shard go out in one group-commit round, all
 * shards' rounds run at the same time, and each marker's file is fdatasynced whatever the sync
 * mode, so every marker is durable before this returns. A marker from an epoch older than the
 * producer's (RT_E_INVALID_PRODUCER_EPOCH) or a coordinator epoch older than the last seen
 * (RT_E_PRODUCER_FENCED) is rejected (its spec's result). Returns 0 when all succeeded, else the
 * first failure; each spec carries its own result. */
int engine_write_markers(rt_engine *e, struct marker_spec *specs, size_t n);

/* A transaction open in one partition, as its producer state holds it (engine_open_txns). */
struct engine_open_txn {
    const char *topic; /* the partition's own name: valid while the engine is open */
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch; /* the producer's epoch in that partition; -1 unknown */
    int64_t first_offset;   /* the transaction's first offset: the LSO it pins */
};

/* Every transaction open in the partitions of the engine (or, when `only` is set, in that one
 * partition), read on the shard threads (one call per shard). *out is malloc'd (NULL when
 * none): free it. Returns 0 or -ENOMEM / RT_E_CLOSED. */
int engine_open_txns(rt_engine *e, struct partition *only, struct engine_open_txn **out,
                     size_t *count_out);

/* Appends a batch on behalf of the coordinator or the group manager (Kafka's "coordinator
 * origin"): a batch with a producer id is checked for epoch fencing only (no sequence rules; its
 * baseSequence may be -1) and still opens the producer's transaction if transactional. Control
 * batches are not accepted here (engine_write_markers). Waits for the append. */
int engine_append_coordinator(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                              int64_t *base_offset_out);

/* As engine_append_coordinator, and the batch's file is fdatasynced in its round whatever the
 * sync mode (the transaction log's records must be durable before anything depends on them). */
int engine_append_forced(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                         int64_t *base_offset_out);

/* The engine's options. */
const struct rt_options *engine_options(const rt_engine *e);

/* The coordinator and the group manager if they exist (NULL otherwise; the coordinator's
 * lookup sets the error detail). */
struct coordinator *engine_coordinator(rt_engine *e);
struct group_manager *engine_group_manager(rt_engine *e);

/* The same, created (with their internal topics) on first use. Return 0, or the real cause of
 * a failure (RT_E_LIMIT, -ENOSPC, RT_E_CORRUPT naming a file, ...) with the detail set: never a
 * blanket -EIO. */
int engine_coordinator_create(rt_engine *e, struct coordinator **out);
int engine_group_manager_create(rt_engine *e, struct group_manager **out);

/* Rolls the partition to a new, empty segment now (unless its active segment is empty). */
int engine_roll(rt_engine *e, struct partition *p);

/* Deletes every whole segment whose records all lie below `offset` (never the active one) and
 * advances the log start: the compaction of internal topics by checkpoint (they re-append their
 * live state, then drop everything older). Returns the number of segments deleted. */
int engine_delete_before(rt_engine *e, struct partition *p, int64_t offset);

/* Writes a producer-state snapshot of every partition now, on the shard threads (tests). */
int engine_snapshot_producers(rt_engine *e);

/* Runs retention and producer expiry on every partition now, on the shard threads (tests and
 * tools). */
int engine_enforce_retention(rt_engine *e);

/* What the last open recovered (tests and the demo). */
const struct partition_recovery *engine_recovery(const rt_engine *e);

#endif /* RT_ENGINE_H */
