/*
 * txn.h — the transaction layer's front: the producer-id registry, and the transaction
 * coordinator and the consumer-group offset manager, each created with its internal topic on
 * first use (or at open when its topic exists), and wired together. Internal.
 *
 * The layer above (client/) and the composition root (engine.c) reach the coordinator and the
 * group manager only through here; the txn layer reaches the disk only through log.h.
 *
 * TX1. The coordinator and the group manager, once created, live until txn_close; the pointers
 *      are read under `lock` and never change after that, so a caller may keep them.
 * TX2. The group manager is created before the coordinator at open (the coordinator completes
 *      transactions that carry offsets), and whenever it is created later the coordinator is
 *      told (coordinator_attach_groups).
 * TX3. The asynchronous transactional calls (rt_txn_*_async) run as jobs on TXN_LANES lane
 *      threads; a job goes to the lane its transactional id hashes to, and each lane runs its
 *      jobs one at a time in submission order, so the jobs of one id run in the order they
 *      were submitted (a client's pipelined requests keep their order), while different ids run
 *      in parallel (their durable writes share group-commit rounds). A lane thread is started
 *      at its first job. Every job submitted is run or reported exactly once: after txn_stop
 *      began, a queued job and any later submission get RT_E_CLOSED without running.
 * TX4. At most TXN_JOBS_QUEUED_MAX jobs wait over all lanes; a submission beyond it waits for
 *      room (back-pressure, as a full shard queue makes an append wait).
 * TX5. The coordinator is created once (TX1) but may follow: txn_coordinator_role makes this
 *      node a follower or the leader of `__transaction_state` (coordinator.c CO16), ordering the
 *      log partition's role (RL6) and the coordinator's state so that no write of ours lands in
 *      a followed log and no operation is answered from a state the log does not hold.
 */
#ifndef RT_TXN_H
#define RT_TXN_H

#include <pthread.h>
#include <stdbool.h>

#include "log.h"
#include "producer_registry.h"

struct coordinator;
struct group_manager;

#define TXN_LANES           16
#define TXN_JOBS_QUEUED_MAX 65536

/* One asynchronous call, in storage the caller owns (no allocation per call). */
struct txn_job {
    struct txn_job *next;
    /* Runs the call on a lane thread and reports it (err 0), or only reports err (RT_E_CLOSED:
     * the engine is closing) without running it. Must not block but on the engine's writes. */
    void (*run)(struct txn_job *job, int err);
};

struct txn_lane {
    pthread_t thread;
    bool started;
    struct txn_job *head, *tail;
    pthread_cond_t ready;
};

struct txn {
    struct log *log;
    struct producer_registry producers;
    bool producers_open;
    pthread_mutex_t lock; /* creates the internal topics and their managers lazily */
    struct coordinator *coordinator;
    struct group_manager *groups;
    /* TX3, TX4: the lanes of the asynchronous calls, under jobs_lock. */
    pthread_mutex_t jobs_lock;
    pthread_cond_t jobs_room;
    struct txn_lane lanes[TXN_LANES];
    uint32_t jobs_queued;
    bool jobs_stopping;
};

/* Opens the producer-id registry of `dir` (before the log opens: partitions ask it which ids
 * are named while they replay). */
int txn_registry_open(struct txn *t, const char *dir, struct io_fault_plan *faults);

/* Once the log's partitions are open, before its shards start (they change the producer tables
 * it reads): raises the registry past every id the partitions hold. */
int txn_registry_raise(struct txn *t, struct log *log);

/* Once the log's shards run: opens the group manager and the coordinator whose topics exist (the
 * coordinator finishes every Prepare* before this returns). */
int txn_start(struct txn *t, struct log *log);

/* Queues job to the lane of `key` (the transactional id; TX3), starting the lane's thread at its
 * first job. 0 (job->run will be called exactly once, on the lane thread), RT_E_CLOSED (txn_stop
 * began; run is not called) or -errno (the lane's thread could not be started). Blocks only
 * while TXN_JOBS_QUEUED_MAX jobs wait (TX4). */
int txn_job_submit(struct txn *t, const char *key, struct txn_job *job);

/* Stops the lanes (queued jobs are reported RT_E_CLOSED, the running ones finish), then closes
 * the coordinator (its timer writes through the shards: before the log stops). */
void txn_stop(struct txn *t);

/* Closes the group manager and the registry (after the log's shards stopped). */
void txn_close(struct txn *t);

/* The coordinator if it exists, else NULL with the error detail saying no transaction was
 * ever started. */
struct coordinator *txn_coordinator(struct txn *t);

/* The same, created (with its internal topic) on first use. Return 0, or the real cause of
 * failing (RT_E_READ_ONLY for a read-only engine, an I/O error, ...). */
int txn_coordinator_create(struct txn *t, struct coordinator **out);

/* TX5 (coordinator.c CO16): this node's role for partition `partition` of
 * `__transaction_state` (rt_partition_resign / rt_partition_become_leader). Creates the topic
 * and the coordinator when missing (a new follower). Resigning closes the log partition to the
 * coordinator's writes first, then drops its state; leading opens the log first, then rebuilds
 * the state from it (on failure the partition is a follower again). */
int txn_coordinator_role(struct txn *t, uint32_t partition, bool lead);

/* The group manager if it exists (NULL otherwise; no detail). */
struct group_manager *txn_groups(struct txn *t);
int txn_groups_create(struct txn *t, struct group_manager **out);

/* Producer ids: a fresh one, or a name's (its epoch bumped). */
int txn_producer_allocate(struct txn *t, int64_t *producer_id_out);
int txn_producer_open_name(struct txn *t, const char *name, int64_t *producer_id_out,
                           int16_t *epoch_out);

#endif /* RT_TXN_H */
