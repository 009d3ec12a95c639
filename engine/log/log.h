/*
 * log.h — the log layer's front: the topic table, the shards that group-commit into the
 * partitions, and the services every layer above calls (append, markers, roll, delete-before,
 * retention, snapshots, the open-transaction census). Internal; the public face is ringtail.h.
 *
 * The log knows nothing of transactions' coordinator, consumer groups or clients: those are
 * the layers above (txn/, client/), and they reach the disk only through these calls. Nothing
 * here includes a header from txn/, client/, check/ or engine.h.
 *
 * LG1. The topic table is append-only with a fixed capacity allocated at open: a topic is fully
 *      built before it is published by a release store of topic_count, so lookups from any
 *      thread take no lock. Topic creation, deletion (a slot is marked deleted, never reused
 *      while open: LG7), partition addition (LG10) and config changes are serialised by
 *      admin_lock.
 * LG2. Every write service refuses once `closing` is set or `write_error` is non-zero
 *      (log_write_check): a failed write leaves the write side failed until reopened.
 * LG7-LG9 (topic deletion), LG10 (partitions added) and LG11 (new partitions made in
 * parallel) are at their sections of log.c.
 * LG3. Calls that return an error set the thread's error detail but never clear it: only the
 *      public rt_* entry points (engine.c, client/) clear it, so an internal call made on a
 *      caller's behalf never erases the caller's detail.
 */
#ifndef RT_LOG_H
#define RT_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "meta.h"
#include "cleaner_pool.h"
#include "partition.h"
#include "ringtail.h"
#include "segment_cache.h"
#include "segment_maps.h"
#include "segment_pool.h"
#include "shard.h"

struct fetch_pool;

/* The log's ports (docs/architecture.md, rule L-5): the only calls the log makes into the
 * layers above it, given by the composition root (engine.c) at log_init and never changed after.
 * The log knows them only by these signatures; what answers is the root's business. */
struct log_ports {
    /* Is this producer id a named (monotonic) producer? The txn layer's registry
     * (producer_registry_is_named) answers; the partitions' producer tables ask it while they
     * replay at open and when they admit a new producer (producer_state.c). NULL: none is. */
    producer_named_fn is_named;
    void *named_ctx;
    /* May this client's transactional batch be appended? 0 or the refusal with its detail: the
     * coordinator's check (coordinator_verify, CO7, through engine.c). Asked on the caller's
     * thread before the batch is queued, only while switched on (log_txn_verify_enable). NULL:
     * every transactional batch is accepted (the partition's rules still run). */
    int (*txn_verify)(void *ctx, const char *topic, uint32_t partition, int64_t producer_id,
                      int16_t producer_epoch);
    void *txn_verify_ctx;
};

struct topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    /* LG10: room for partition_capacity partitions, each allocated on its own and never moved;
     * partition_count is published (release) after the partitions below it are built, so
     * lookups take no lock while partitions are added. */
    _Atomic uint32_t partition_count;
    uint32_t partition_capacity;
    struct partition **partitions;
    struct partition_config pcfg; /* what its partitions are opened with */
    /* The topic's configs the append paths act on (topic_config.h TC3): written under
     * admin_lock when an alter is stored, read by any appending thread. */
    _Atomic uint32_t max_message_bytes;
    _Atomic int timestamp_type; /* enum rt_timestamp_type */
    _Atomic bool compact;       /* cleanup.policy holds compact: records need keys (LG12) */
    uint64_t segment_bytes;     /* as opened: segment.bytes applies from the next open */
    /* LG7: set (release) when the topic is deleted: lookups skip it; its partitions stay
     * allocated (fetches and appends already holding them finish) until log_close. */
    _Atomic bool deleted;
};

struct log {
    char dir[SEGMENT_PATH_BYTES];
    struct rt_options opts;
    struct partition_config pcfg;
    struct shard_env env;

    pthread_mutex_t admin_lock;
    struct meta_catalogue catalogue;
    /* topic_config.h TC4: the run-time defaults of topics without their own override
     * (rt_topic_config_defaults_alter), under admin_lock; in memory only. */
    struct topic_config dyn_defaults;
    struct topic *topics;     /* topics_capacity slots */
    uint32_t topics_capacity; /* topics_max user topics + the internal ones + deleted slots */
    uint32_t topics_deleted;  /* slots of deleted topics (reclaimed at the next open) */
    pthread_t *reapers;       /* LG9: background removal of deleted topics' directories */
    uint32_t reaper_count;
    _Atomic uint32_t topic_count;
    uint32_t partitions_total; /* for shard assignment */

    struct shard *shards;
    uint32_t shard_count;
    bool shards_started;
    bool shards_stopped;

    _Atomic int write_error;
    _Atomic bool closing;
    struct engine_counters counters;
    struct segment_pool pool;   /* the pre-writer (segment_pool.h); started for segments >= 1 MiB */
    struct segment_cache cache; /* the budget of open segments (segment_cache.h, SH12) */
    struct segment_maps maps;   /* the budget of mapped sealed segments (segment_maps.h) */
    struct fetch_pool *fetches; /* rt_fetch handles, at most opts.fetches_max open */
    struct publish_watch watch; /* rt_append_watch_set; the shards call it per round */
    struct log_ports ports;     /* L-5: the calls up, given at log_init */
    _Atomic bool txn_verify_on; /* ports.txn_verify asked (log_txn_verify_enable) */
    struct partition_recovery recovery; /* summed over partitions at open */
    bool clean_at_open;                 /* the clean-shutdown marker was there */
    struct cleaner_pool cleaner;        /* the cleaner thread (cleaner_pool.h) */
};

/* Internal topics the engine creates itself (__transaction_state, __consumer_offsets): slots
 * beyond topics_max. */
#define INTERNAL_TOPICS_MAX 2

#define LOG_FETCHES_MAX_DEFAULT 4096

/* ---- lifecycle (the composition root, engine.c, runs these in order) ---- */

/* Step 1: options into the partition and shard configuration, the catalogue loaded, the
 * clean-shutdown marker noted and removed (durably, before anything is written), the topic
 * table and the shards allocated and initialised (not started). `faults` (tests only, else
 * NULL) puts every shard on the fault-injecting io backend. `ports` (copied; NULL: none) are
 * the calls up (struct log_ports); is_named is called while partitions replay, txn_verify only
 * once switched on. On error everything is released. */
int log_init(struct log *lg, const char *dir, const struct rt_options *opts,
             struct io_fault_plan *faults, const struct log_ports *ports);

/* Step 2: every catalogued topic's partitions opened (the newest segment recovered unless the
 * marker was there) and handed to the shards. */
int log_open_topics(struct log *lg);

/* Switches the ports.txn_verify check of client transactional batches on or off (off after
 * log_init): on once the coordinator runs, before the log serves clients; may change at any
 * time (rt_txn_verify_set, ringtail_test.h). */
void log_txn_verify_enable(struct log *lg, bool on);

/* Step 3: the shard threads started (not for a read-only log). */
int log_start(struct log *lg);

/* The largest producer id the partitions know (-1 when none): their producer tables, and when
 * `scan_logs` every batch header of every segment. Runs between steps 2 and 3. */
int64_t log_producer_id_max(struct log *lg, bool scan_logs);

/* Marks the log closing (every later write is refused with RT_E_CLOSED) and stops the shards:
 * every queued request finishes first. */
void log_stop(struct log *lg);

/* Closes every partition and frees the log. With `seal` (a clean close) and no write ever
 * failed, active segments are sealed and the clean-shutdown marker written; without it (the
 * error path of an open) nothing is. Returns the first error, or RT_E_IO_FAILED naming the
 * cause when the write side had failed. */
int log_close(struct log *lg, bool seal);

/* ---- topics ---- */

/* Creates a topic (validated by the caller) under admin_lock, with `config` (checked by the
 * caller; NULL for none) stored in its catalogue entry in the same atomic replace. User topics
 * count against topics_max; internal ones use the slots reserved for them. */
int log_topic_create(struct log *lg, const char *name, uint32_t partitions,
                     const struct topic_config *config);

/* rt_topic_config_alter's contract: the topic's overrides become `config` (checked by the
 * caller), stored durably (one atomic replace of the catalogue), then applied to the running
 * partitions. */
int log_topic_config_store(struct log *lg, const char *name, const struct topic_config *config);

/* A copy of the topic's overrides into *out (empty on entry; the caller frees it). */
int log_topic_config_copy(struct log *lg, const char *name, struct topic_config *out);

/* rt_topic_config_defaults_alter's contract (topic_config.h TC4): the dynamic defaults become
 * `defaults` (checked by the caller; copied), then every user topic is applied again as
 * log_topic_config_store applies one. Nothing is stored on disk. */
int log_topic_defaults_store(struct log *lg, const struct topic_config *defaults);

/* A copy of the dynamic defaults into *out (empty on entry; the caller frees it). */
int log_topic_defaults_copy(struct log *lg, struct topic_config *out);

/* Creates an internal topic (a name beginning with "__"): not counted against topics_max, and
 * the only way such a topic comes to exist. Errors as rt_topic_create. */
int log_internal_topic_create(struct log *lg, const char *name, uint32_t partitions);

/* rt_topic_add_partitions' contract (log.c LG10). */
int log_topic_add_partitions(struct log *lg, const char *name, uint32_t count);

/* rt_topic_delete's contract (log.c LG7-LG9). */
int log_topic_delete(struct log *lg, const char *name);

/* Slots for deleted topics beyond topics_max (reclaimed at the next open). */
#define TOPICS_DELETED_MAX 1024

/* True when the topic exists. */
bool log_topic_exists(struct log *lg, const char *name);

/* The partition count of `name`, or RT_E_UNKNOWN_TOPIC_OR_PARTITION. */
int log_topic_describe(struct log *lg, const char *name, uint32_t *partitions_out);

/* Calls fn for each user topic in creation order; stops at fn's first non-zero return. */
int log_topic_list(struct log *lg, int (*fn)(void *ctx, const char *name, uint32_t partitions),
                   void *ctx);

/* 0 when clients may write to `topic`; RT_E_INTERNAL_TOPIC (detail set) for an internal topic.
 * Every client append path (rt_append, rt_append_batch, rt_producer_send) asks this. */
int log_client_topic_check(const char *topic);

/* The partition, or NULL (with the thread's error detail set). */
struct partition *log_partition(struct log *lg, const char *topic, uint32_t partition);

/* ---- options, state ---- */

const struct rt_options *log_options(const struct log *lg);
bool log_read_only(const struct log *lg);

/* RT_E_READ_ONLY with a detail naming the directory and `what` was refused, when the log is
 * read-only; else 0. */
int log_refuse_if_read_only(const struct log *lg, const char *what);

/* 0, or RT_E_CLOSED / RT_E_IO_FAILED (detail set) when the write side is closing or failed
 * (LG2). */
int log_write_check(struct log *lg);

/* What the last open recovered (tests and the demo). */
const struct partition_recovery *log_recovery(const struct log *lg);

/* The counters and shape rt_stats reports. */
void log_stats(struct log *lg, struct rt_stats *out);

/* ---- reads ---- */

/* rt_fetch_start and rt_list_offsets for the layers that read the log on their own behalf:
 * the same contract, and the caller's error detail is not cleared (LG3). */
int log_fetch_start(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                    size_t max_bytes, enum rt_isolation isolation, rt_fetch **out);
int log_list_offsets(struct log *lg, const char *topic, uint32_t partition, int64_t spec,
                     enum rt_isolation isolation, int64_t *offset_out);

/* ---- appends ---- */

/* Encodes `count` records as one batch and appends it (rt_append's contract). */
int log_append_records(struct log *lg, const char *topic, uint32_t partition,
                       const struct rt_record *records, size_t count, int64_t *base_offset_out);

/* Validates and appends a client's encoded batch (rt_append_batch's contract). */
int log_append_batch(struct log *lg, const char *topic, uint32_t partition, void *batch, size_t len,
                     int64_t *base_offset_out);

/* rt_append_batch_async's contract: checked as log_append_batch, then queued; fn reports. */
int log_append_batch_async(struct log *lg, const char *topic, uint32_t partition, void *batch,
                           size_t len, struct rt_append_op *storage, rt_append_done_fn fn,
                           void *ctx);

/* rt_append_watch_set's contract. */
void log_watch_set(struct log *lg, void (*fn)(void *ctx), void *ctx);

/* V17 (batch.c) for a user-topic batch about to be appended: under p's topic's
 * message.timestamp.type (the engine's message_timestamp_type unless the topic sets one), makes attribute bit 3 and maxTimestamp true (LogAppendTime: the
 * clock now; CreateTime: records_max_timestamp, the records' largest timestamp), rewriting
 * the batch and its CRC only when they change (returns true then) and updating *h. */
bool log_stamp_timestamps(const struct log *lg, const struct partition *p, uint8_t *batch,
                          size_t len, struct batch_header *h, int64_t records_max_timestamp);

/* Appends an encoded, validated batch whose header is parsed, waiting for the outcome. For a
 * batch with a producer id, the producer rules apply; *duplicate_out (may be NULL) says the
 * batch was a duplicate and nothing was appended. */
int log_append(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
               const struct batch_header *h, int64_t *base_offset_out, bool *duplicate_out);

/* Queues a prepared append request (kind APPEND, partition, batch, len, header, on_done) and
 * returns without waiting; on_done runs on the shard thread with the outcome. */
int log_append_async(struct log *lg, struct shard_request *req);

/* Queues up to LOG_APPEND_ASYNC_MANY_MAX prepared append requests (as log_append_async) so that
 * the ones for one shard go out in one round (shard_submit_async_many; coordinator.c CO9). Once
 * the others are queued, one shard's lone request may run its round on the calling thread when
 * that shard is idle (SH5), so on_done may run on this thread: the caller must hold no lock
 * on_done takes. Every request is either queued or completed with its error (on_done called
 * before this returns); returns 0, or the error that refused all of them. */
#define LOG_APPEND_ASYNC_MANY_MAX 64
int log_append_async_many(struct log *lg, struct shard_request **reqs, size_t n);

/* Appends a batch on behalf of the coordinator or the group manager (Kafka's "coordinator
 * origin": the producer rules do not apply). */
int log_append_coordinator(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
                           int64_t *base_offset_out);

/* As log_append_coordinator, and the batch's file is fdatasynced in its round whatever the
 * sync mode (the transaction log's decisions). */
int log_append_forced(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
                      int64_t *base_offset_out);

/* The last sequence the partition has for a producer (-1: none), read on its shard thread. */
int log_producer_last_sequence(struct log *lg, struct partition *p, int64_t producer_id,
                               int64_t *sequence_out);

/* ---- transaction markers and open transactions ---- */

/* One transaction marker to write (the coordinator's marker API). */
struct marker_spec {
    const char *topic;
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t coordinator_epoch;
    int type;       /* CONTROL_COMMIT or CONTROL_ABORT */
    bool lazy;      /* the outcome is decided by a durable record: no fdatasync (SH6) */
    int result;     /* out: 0 or the rule that rejected it */
    int64_t offset; /* out: where the marker landed */
};

/* Writes every marker in specs: the markers of one shard go out in one group-commit round, all
 * fdatasynced whatever the sync mode, except `lazy` ones: those are published once written and
 * become durable with their file's next fdatasync (shard.c SH6). Returns 0 when all landed,
 * else the first failure (each spec's result says which). */
int log_write_markers(struct log *lg, struct marker_spec *specs, size_t n);

/* A transaction open in one partition, as its producer state holds it (log_open_txns). */
struct log_open_txn {
    const char *topic; /* the partition's own name: valid while the log is open */
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch; /* the producer's epoch in that partition; -1 unknown */
    int64_t first_offset;   /* the transaction's first offset: the LSO it pins */
};

/* Every transaction open in the partitions of the log (or, when `only` is set, in that one
 * partition), read on the shard threads. *out is malloc'd (free it); *count_out may be 0. */
int log_open_txns(struct log *lg, struct partition *only, struct log_open_txn **out,
                  size_t *count_out);

/* A producer as one partition's producer table holds it (log_producer_state). */
struct log_producer_view {
    bool known;               /* the table has an entry for the producer */
    int16_t epoch;            /* its epoch there (-1 unknown) */
    int64_t last_sequence;    /* the last sequence of its newest batch (-1: none) */
    int64_t txn_first_offset; /* its open transaction's first offset (-1: none open) */
    bool unsynced;            /* the partition holds bytes written since its last fdatasync */
};

/* The producer's state in p, read on its shard thread (in place on a read-only log). */
int log_producer_state(struct log *lg, struct partition *p, int64_t producer_id,
                       struct log_producer_view *out);

/* log_producer_state for n partitions (any shards): every shard's calls are queued before any
 * is waited for, so the shards answer in parallel (one wake-up per shard). out[i] is parts[i]'s
 * view. 0, the first call's error, or -ENOMEM. */
int log_producer_states(struct log *lg, struct partition *const *parts, size_t n,
                        int64_t producer_id, struct log_producer_view *out);

/* Fdatasyncs every partition written since its last fdatasync (lazy markers, SH6), on every
 * shard; returns once all are durable. */
int log_sync_unsynced(struct log *lg);

/* The same on the shards of parts[0..n) only (every partition of such a shard written since
 * its last fdatasync, those among them), the shards in parallel: what a wire transaction's
 * decision round runs for partitions whose data may not be durable yet (coordinator.c CO12).
 * Costs one shard call per such shard, no fdatasync where nothing is unsynced. */
int log_sync_unsynced_shards(struct log *lg, struct partition *const *parts, size_t n);

/* ---- maintenance ---- */

/* Rolls the partition to a new, empty segment now (unless its active segment is empty). */
int log_roll(struct log *lg, struct partition *p);

/* Deletes every whole segment whose records all lie below `offset` (never the active one) and
 * moves the log start to the first remaining offset. Returns the number deleted or an error. */
int log_delete_before(struct log *lg, struct partition *p, int64_t offset);

/* rt_topic_compact (ringtail.h): cleaner_clean (cleaner.c) on each partition in turn, its work on
 * the calling thread (CLB1), only its swaps on the partition's shard thread. */
int log_topic_compact(struct log *lg, const char *topic);

/* rt_partition_delete_records (ringtail.h): on the partition's shard thread
 * (partition_delete_records, PA13). */
int log_delete_records(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                       int64_t *low_watermark_out);

/* Replication (partition.h RL1-RL5; ringtail.h rt_partition_* calls of the same names): each on
 * the partition's shard thread, between rounds. */
int log_set_leader_epoch(struct log *lg, const char *topic, uint32_t partition, int32_t epoch);
int log_end_offset_for_epoch(struct log *lg, const char *topic, uint32_t partition, int32_t epoch,
                             int64_t *end_offset_out, int32_t *found_epoch_out);
/* rt_partition_restart_at (ringtail.h; partition.h RL7). */
int log_restart_at(struct log *lg, const char *topic, uint32_t partition, int64_t offset);

int log_truncate(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                 int64_t *log_end_out);
int log_set_high_watermark(struct log *lg, const char *topic, uint32_t partition, int64_t hw,
                           int64_t *hw_out);
/* RL3: every batch of [batches, +len) validated (V1-V15) before any is queued; they are placed
 * in order by one submission, each at the log end. */
int log_append_replica(struct log *lg, const char *topic, uint32_t partition, const void *batches,
                       size_t len, int64_t *log_end_out);

/* RL6: the internal partition's role, on its shard thread: follower (takes only replica appends
 * and truncations) or leader (only the engine's own appends). Only LOG_OFFSETS_TOPIC and
 * LOG_TXN_TOPIC; the caller (engine.c, txn.c) orders it with the group manager's or the
 * transaction coordinator's state. */
#define LOG_OFFSETS_TOPIC "__consumer_offsets"
#define LOG_TXN_TOPIC     "__transaction_state"
int log_internal_set_follower(struct log *lg, const char *topic, uint32_t partition, bool follower);

/* RL9: a user topic's partition's role, on its shard thread: led (rt_partition_become_leader:
 * replica appends, truncations and restarts refused) or followed (rt_partition_resign, and the
 * state an open leaves). */
int log_replica_set_led(struct log *lg, const char *topic, uint32_t partition, bool led);

/* Writes a producer-state snapshot of every partition now, on the shard threads (tests). */
int log_snapshot_producers(struct log *lg);

/* Runs retention and producer expiry on every partition now, on the shard threads (tests and
 * the retention timer's work, on demand). */
int log_enforce_retention(struct log *lg);

/* Stores every partition's recovery point with its active segment's tail now (PA9 in
 * partition.h; the housekeeping period does it once a partition grew its interval), on the shard
 * threads. Returns 0 or the first error. */
int log_checkpoint_tails(struct log *lg);

/* Tests: makes every idle partition dormant now (partition_sleep, PA15: its active segment sealed
 * and vouched for, as the shards do past the budget of open segments), on the shard threads.
 * Returns 0 or the first error (a failed seal is not recovered here: tests only). */
int log_sleep_partitions(struct log *lg);

/* The topic-creation intent (F4; log.c LG4-LG6; docs/format.md A.2): its one encoding, at most
 * LOG_CREATE_INTENT_BYTES_MAX bytes. format returns the length (name must be a valid topic name,
 * partitions >= 1); parse returns 0 with the name and count, or RT_E_CORRUPT for anything that is
 * not exactly what format writes (a torn write included). Exposed for fuzz/fuzz_create_intent.c. */
#define LOG_CREATE_INTENT_BYTES_MAX 320u
size_t log_create_intent_format(char out[LOG_CREATE_INTENT_BYTES_MAX], const char *name,
                                uint32_t partitions);
int log_create_intent_parse(const char *text, size_t len, char name[RT_TOPIC_NAME_MAX + 1],
                            uint32_t *partitions);

#endif /* RT_LOG_H */
