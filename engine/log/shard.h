/*
 * shard.h — a writer thread that owns a set of partitions and one io ring, and turns the
 * appends queued while its previous round was in flight into the next group-commit round.
 *
 * Callers hand requests to a shard through a bounded FIFO (callers block when it is full:
 * back-pressure, never unbounded growth) and wait until their request is done. Requests live
 * in the caller's stack frame; the shard never allocates per request. Only the shard thread
 * touches its partitions' writer state, so the write path takes no lock but the queue's.
 */
#ifndef RT_SHARD_H
#define RT_SHARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "io/io.h"
#include "partition.h"
#include "ringtail.h"

struct partition;
struct shard;
struct segment_cache;

/* Counters shared by every shard of an engine (relaxed atomics). */
struct engine_counters {
    _Atomic uint64_t rounds;
    _Atomic uint64_t batches_appended;
    _Atomic uint64_t bytes_appended;
    _Atomic uint64_t fdatasyncs;
    _Atomic uint64_t segments_rolled;
    _Atomic uint64_t segments_deleted;
    _Atomic uint64_t duplicates;
    _Atomic uint64_t producers_expired;
    _Atomic uint64_t snapshots_written;
    _Atomic uint64_t snapshots_rejected;
    _Atomic uint64_t rounds_inline; /* rounds run by a submitter (SH5 in shard.c) */
    /* SH10 (shard.c): partitions frozen by a fault, recovered in place, frozen now. */
    _Atomic uint64_t partition_faults;
    _Atomic uint64_t partition_recoveries;
    _Atomic uint64_t partitions_failed;
};

/* SH10: the first recovery attempt of a frozen partition comes heal_ms_min (by default
 * SHARD_HEAL_MS_MIN) after its fault; each failed attempt doubles the wait, up to
 * max(SHARD_HEAL_MS_MAX, heal_ms_min) (so writes resume within about a second of the disk
 * taking them again). */
#define SHARD_HEAL_MS_MIN 100u
#define SHARD_HEAL_MS_MAX 1000u

/* Who hears that a round published new high watermarks (rt_append_watch_set). The shard calls
 * fn under lock, so a caller that clears it knows no call is running once it has. */
struct publish_watch {
    pthread_mutex_t lock;
    void (*fn)(void *ctx);
    void *ctx;
};

struct shard_env {
    enum rt_sync_mode sync_mode;
    uint32_t sync_interval_ms;
    uint64_t sync_interval_bytes;
    uint32_t request_queue_depth;
    uint32_t retention_check_ms;
    int64_t producer_id_expiration_ms;
    struct io_options io;
    _Atomic int *write_error; /* sticky: first write/fsync failure of the engine */
    struct engine_counters *counters;
    bool read_only; /* a read-only engine: every request is refused with RT_E_READ_ONLY */
    struct publish_watch *watch; /* may be NULL (tests building a shard alone) */
    rt_fault_fn on_fault;        /* SH10: told of every fault and recovery (may be NULL) */
    int32_t heal_ms_min;         /* SH10: first attempt after a fault; -1 never (0: default) */
    struct segment_cache *cache; /* SH12: the budget of open segments (NULL: none) */
    void *on_fault_ctx;
    /* Housekeeping's last step for each partition, on the shard thread; must not block (log.c:
     * offers a compacted partition due a clean to the cleaner thread). NULL: none. A hook, so
     * the shard knows nothing of the cleaner, which calls the shard (shard_submit). Returns
     * true when p's active segment should be rolled now (cleaner.c CLN10: a compacted
     * partition's aged active segment): the shard rolls it and, when it did, calls again. */
    bool (*housekeep)(void *ctx, struct partition *p, int64_t wall_ms);
    void *housekeep_ctx;
};

enum shard_request_kind {
    SHARD_REQ_APPEND = 0,
    SHARD_REQ_CALL = 1, /* run fn(shard, arg) on the shard thread before the round */
};

struct shard_request {
    enum shard_request_kind kind;
    struct partition *partition;
    uint8_t *batch; /* APPEND: encoded, validated batch; base offset stamped by the shard */
    size_t len;
    struct batch_header header; /* parsed by the caller */
    int (*fn)(struct shard *shard, void *arg);
    void *arg;
    int64_t base_offset; /* out: assigned, or the original offset of a duplicate (or -1) */
    int result;          /* out */
    bool duplicate;      /* out: a producer batch that was already appended */
    const char *rule;    /* out: the producer-state rule that rejected the batch */
    /* Asynchronous completion: called once on the shard thread after the out fields are set.
     * The request must stay valid until then; it may be freed or reused inside the callback.
     * With may_run_inline it may instead run on the submitting thread, before
     * shard_submit_async returns (SH5 in shard.c). */
    void (*on_done)(struct shard_request *req);
    /* shard_submit_async only: the submitter holds no lock on_done takes and accepts running
     * the round itself when the shard is idle (SH5). shard_submit always accepts it. */
    bool may_run_inline;
    /* Part of a commit's decision (its last batches and its PrepareCommit, handed over
     * together: producer.c PR6): the shard may hold it back for the rest of its group (SH9). */
    bool decision;
    void *owner;
    /* Transaction markers (control batches written by the coordinator's marker API). */
    int32_t coordinator_epoch;
    int marker_type; /* enum control_type */
    bool force_sync; /* fdatasync this batch's file in its round whatever the sync mode */
    /* A marker of a transaction already decided (coordinator.c CO9): published once written;
     * its file is fdatasynced only if another batch of the round needs it (SH6). */
    bool lazy_sync;
    bool coordinator; /* coordinator origin: epoch fencing only, no sequence rules */
    /* A leader's batch copied as it is (partition.h RL3): its base offset must be at or past the
     * log end (RL8: a gap the leader's cleaner made); nothing in it is stamped; producer state
     * changes as a replay's would, with no rule. */
    bool replica;
    bool replica_compacted;   /* RL8: it passed only the cleaned rules (V10c, V13c, V15c) */
    int64_t replica_gaps_end; /* RL8: the end of the call's last batch (gaps allowed below) */
    /* Set by the shard between check and apply. */
    bool txn_started;
    int64_t txn_first_offset;
    struct partition_txn_write
        txn_write;         /* an ABORT marker's .txnindex entry, written by the round */
    _Atomic uint32_t done; /* after result: REQ_DONE, release (a futex word, SH8 in shard.c) */
    struct shard_request *next;
};

struct shard {
    uint32_t id;
    struct shard_env env;
    io_ring *ring;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t has_work;
    pthread_cond_t has_room;
    struct shard_request *head, *tail;
    uint32_t queued;
    uint32_t queued_decisions; /* of `queued`, a commit's decision appends (SH9 in shard.c) */
    bool stopping;
    /* SH9, the shard thread's own (read and written under lock): how many durable appends the
     * next round waits for, and until when (CLOCK_MONOTONIC ns; 0 = no wait). */
    uint32_t group_target;
    uint64_t group_until_ns;
    /* Who runs rounds (SH5 in shard.c), under lock: the shard thread while it works through a
     * list (thread_busy), or one submitter running its own append (inline_running); never
     * both. thread_waits_inline: the shard thread waits for an inline round to end. */
    bool thread_busy;
    bool inline_running;
    bool thread_waits_inline;

    /* The round's state: touched only by whoever runs rounds (the shard thread, or an inline
     * submitter while inline_running), handed over under lock. */
    uint64_t write_seq; /* SH12: appends placed, for the partitions' last_write_seq */
    struct partition **partitions;
    uint32_t partition_count, partition_capacity;
    bool round_inline; /* the round running is an inline one (stats) */
    struct iovec *iov;
    uint32_t iov_capacity;
    struct io_completion *cqes;
    int64_t last_sync_ms;
    uint64_t bytes_since_sync;
    int64_t last_retention_ms;
    uint32_t partitions_frozen; /* SH10: of `partitions`, those frozen alone (to recover) */
    uint64_t io_failed_tag;     /* run_io: the user_data of the first op that failed */
};

/* Opens the shard's io ring; the thread starts with shard_start. */
int shard_init(struct shard *s, uint32_t id, const struct shard_env *env);
int shard_start(struct shard *s);
/* Finishes every queued request, stops the thread, closes the ring. */
void shard_stop(struct shard *s);
const char *shard_backend_name(const struct shard *s);

/* Before shard_start, or from the shard thread (a SHARD_REQ_CALL). */
int shard_add_partition(struct shard *s, struct partition *p);

/* Retention, then producer expiry, over every partition of the shard: what its timer runs each
 * retention period, and what log_enforce_retention runs on demand. On the shard thread (a
 * SHARD_REQ_CALL) or before shard_start. Returns the first partition's error (every partition
 * is still visited), else 0. */
int shard_enforce_retention(struct shard *s);

/* Queues req and waits until the shard has run it, or (an APPEND, when the shard is idle) runs
 * its round on the calling thread (SH5). Returns req->result (RT_E_CLOSED after shard_stop
 * began). */
int shard_submit(struct shard *s, struct shard_request *req);

/* Queues req (which must have on_done set) and returns at once; blocks only while the queue is
 * full. With req->may_run_inline and an idle shard, runs the round on the calling thread and
 * calls on_done before returning (SH5). Returns 0, or RT_E_CLOSED without queuing (on_done is
 * then not called). */
int shard_submit_async(struct shard *s, struct shard_request *req);

/* SH5 for a caller that waits with shard_wait_many: if the shard is idle, runs req (an APPEND,
 * on_done cleared) as its own round on the calling thread and returns true — req is then done,
 * or deferred to the shard thread's queue (a roll), so shard_wait_many still waits right;
 * otherwise returns false and queues nothing. */
bool shard_try_inline(struct shard *s, struct shard_request *req);

/* Queues n asynchronous requests (each with on_done) under one hold of the shard's lock, so the
 * next round the shard takes holds all of them (coordinator.c CO9: a commit's PrepareCommit and
 * its last data batches on one shard share one round and one fdatasync per file). Never runs a
 * round inline. A request that cannot be queued (closing, read-only) completes with its error
 * (on_done called on this thread before the call returns); only a full queue blocks. */
void shard_submit_async_many(struct shard *s, struct shard_request **reqs, size_t n);

/* Fdatasyncs every partition of the shard written without a sync since its last one (lazy
 * markers, SH6; sync=interval's unsynced tail). On the shard thread (a SHARD_REQ_CALL). */
int shard_sync_unsynced(struct shard *s);

/* Queues n requests at once (so they share the next round) and waits for all of them. Returns
 * 0 when every request ran (each has its own result), or RT_E_CLOSED if none was queued. */
int shard_submit_many(struct shard *s, struct shard_request **reqs, size_t n);

/* shard_submit_many in two steps, so a caller can queue on several shards before waiting for
 * any (their rounds then run in parallel): queue the n requests (a closing shard reports
 * RT_E_CLOSED in each request not queued), then wait until all n ran. */
void shard_enqueue_many(struct shard *s, struct shard_request **reqs, size_t n);
void shard_wait_many(struct shard *s, struct shard_request **reqs, size_t n);

#endif /* RT_SHARD_H */
