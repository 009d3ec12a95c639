/*
 * coordinator_internal.h — what the transaction coordinator's files share: the table of ids
 * (struct txn_meta, struct coordinator) and the calls one file makes into another. The
 * coordinator is one module (coordinator.h) kept in one file per concept:
 *   coordinator.c            the state machine, its invariants (CO1-CO14) and the operations
 *   coordinator_table.c      the table of ids (by name and by producer id, CO8)
 *   coordinator_write.c      the records of __transaction_state written, transitions, phase two
 *   coordinator_reconcile.c  the partitions' open transactions reconciled (COR1-COR8), CO10
 *   coordinator_list.c       listings (rt_txn_list, rt_partition_producers)
 *   coordinator_timer.c      timeouts, check-back, expiry, compaction (CO5, CO6, CO11)
 *   coordinator_open.c       open (replay, finish what was left), close
 *   coordinator_role.c       leader or follower of __transaction_state (CO16): resign, lead
 * Internal to those files: nothing else includes it.
 */
#ifndef RT_COORDINATOR_INTERNAL_H
#define RT_COORDINATOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "coordinator.h"
#include "log.h"

#define COORD_BUCKETS             1024
#define COORD_TICK_MS             50
#define COORD_COMPACT_MIN_RECORDS 4096
#define COORDINATOR_EPOCH         0 /* one coordinator per data directory, guarded by the lock file */

struct txn_meta {
    char id[TXN_ID_MAX_BYTES + 1];
    pthread_mutex_t lock; /* serialises operations on this id; held across its log writes */
    int refs;             /* table lookups in flight (under the table lock) */
    bool removed;
    struct txn_log_value v; /* partitions owned */
    uint32_t part_capacity;
    int64_t last_check_ms;
    rt_txn_check_fn check_fn; /* the live producer's handler, if any */
    void *check_ctx;
    struct txn_meta *next;
    int64_t pid_key; /* the producer id it is indexed under in pid_buckets (-1: none; CO8) */
    struct txn_meta *pid_next;
    /* CO9: a one-round commit is between queuing its PrepareCommit and adopting it (the id's
     * lock is dropped meanwhile, so the producer's sender can run); `decided` is broadcast
     * when it clears. */
    bool deciding;
    pthread_cond_t decided;
    /* CO14: the identity the last init bumped from and the one it handed out (-1: none since
     * this process opened the coordinator). Memory only, as Kafka's lastProducerEpoch. */
    int64_t init_from_pid, init_to_pid;
    int16_t init_from_epoch, init_to_epoch;
    /* CO15: the Complete* last queued without waiting (it has no partitions), and whether its
     * write failed with no record of this id durable since: the timer writes it again. */
    struct txn_log_value complete_value;
    atomic_bool complete_lost;
    /* CO15: the producer (id, epoch) whose own end was decided but left its markers pending
     * (-1: none); memory only, as CO14's identities. */
    int64_t end_retry_pid;
    int16_t end_retry_epoch;
};

/* COR7: a one-round decision record replayed at open (PrepareCommit or PrepareAbort with
 * one_round), kept until reconciliation has run. */
struct decision {
    int64_t producer_id; /* the producer the transaction's data carries */
    int16_t txn_epoch;   /* ... and its epoch */
    int16_t marker_epoch;
    bool commit;
    bool kept_epoch; /* 0x7203: identified per partition by first offset (COR8) */
    uint32_t partition_count;
    struct txn_log_partition *partitions;
};

struct coordinator {
    struct log *lg;
    struct producer_registry *producers;
    _Atomic(struct group_manager *) groups; /* NULL until consumer offsets exist (TX2) */
    struct partition *log;
    pthread_mutex_t table_lock;
    struct txn_meta *buckets[COORD_BUCKETS];
    struct txn_meta *pid_buckets[COORD_BUCKETS]; /* the same ids by producer id (CO8) */
    uint32_t live;
    uint64_t log_records;     /* appended since the last compaction (or replayed) */
    uint32_t async_in_flight; /* Complete* records handed to the log, not yet written */
    rt_txn_check_fn check_fn; /* engine-wide handler */
    void *check_ctx;
    pthread_t timer;
    bool timer_running;
    pthread_mutex_t timer_lock;
    pthread_cond_t timer_cv;
    bool stopping;
    struct decision *decisions; /* COR7, open only: in log order */
    size_t decision_count, decision_capacity;
    /* CO16: this node's role for __transaction_state. Every operation on an id holds role_lock
     * shared (coord_enter) and answers RT_E_NOT_COORDINATOR while `following`; resign and lead
     * hold it exclusive, so none runs while the table is dropped or rebuilt. */
    pthread_rwlock_t role_lock;
    bool following;
};

/* A log write queued now and waited for later (CO9: the PrepareCommit rides the same rounds as
 * the transaction's last data). The request, its waiter and the batch bytes in one allocation. */
struct wait_write {
    struct shard_request req;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static inline struct group_manager *coord_groups(struct coordinator *c)
{
    return atomic_load_explicit(&c->groups, memory_order_acquire);
}

/* coordinator_table.c */
struct txn_meta *coord_meta_get(struct coordinator *c, const char *id, bool create);
void coord_meta_free(struct txn_meta *m);
void coord_meta_put(struct coordinator *c, struct txn_meta *m);
void coord_meta_remove(struct coordinator *c, struct txn_meta *m);
uint32_t coord_pid_bucket_of(int64_t pid);
void coord_pid_index(struct coordinator *c, struct txn_meta *m);
struct txn_meta **coord_table_snapshot(struct coordinator *c, uint32_t *n_out);

/* coordinator_write.c */
int coord_log_write_prepare(struct coordinator *c, const char *id, const struct txn_log_value *v,
                            struct wait_write **out);
void coord_log_write_discard(struct wait_write *w);
int coord_log_write_wait(struct coordinator *c, struct wait_write *w);
int coord_log_write(struct coordinator *c, const char *id, const struct txn_log_value *v);
int coord_transition(struct coordinator *c, struct txn_meta *m, struct txn_log_value *next);
bool coord_is_prepare(enum txn_state s);
int coord_next_identity(struct coordinator *c, const struct txn_meta *m, int16_t *marker_epoch,
                        int64_t *next_pid, int16_t *next_epoch);
int coord_write_markers(struct coordinator *c, struct marker_spec *specs, size_t n);
int coord_finish_as(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                    int16_t next_epoch, bool lazy, const bool *skip);
int coord_finish(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                 int16_t next_epoch);
int coord_end_locked_as(struct coordinator *c, struct txn_meta *m, bool commit, bool fence,
                        bool bump);
int coord_end_locked(struct coordinator *c, struct txn_meta *m, bool commit, bool fence);
int coord_complete_prepared(struct coordinator *c, struct txn_meta *m);
void coord_note_durable(struct txn_meta *m);
int coord_rewrite_lost(struct coordinator *c, struct txn_meta *m);

/* coordinator.c */
int coord_fenced(const struct txn_meta *m, int64_t pid, int16_t epoch);

/* coordinator_reconcile.c */
bool coord_holds_partition(const struct txn_meta *m, const char *topic, uint32_t partition);
int coord_reconcile(struct coordinator *c, bool failover);
int coord_complete_one_round(struct coordinator *c, struct txn_meta *m);

/* coordinator_role.c (CO16): coord_enter takes the role lock shared and answers
 * RT_E_NOT_COORDINATOR (lock not held) while this node follows __transaction_state; every
 * successful coord_enter is paired with coord_leave. */
int coord_enter(struct coordinator *c, const char *id);
void coord_leave(struct coordinator *c);
/* Drops the table (every id unlinked, its memory going with its last reference) and what the
 * replay kept. Caller holds the role lock exclusive, or is open/close. */
void coord_table_drop(struct coordinator *c);
/* Replays the log and finishes what it left (open, and a new leader: CO2, CO10, CO13, CO16). */
int coord_load(struct coordinator *c, bool failover);

/* coordinator_timer.c */
void *coord_timer_main(void *arg);

/* coordinator_open.c */
const struct decision *coord_decision_find_kept(const struct coordinator *c,
                                                const struct log_open_txn *t);
const struct decision *coord_decision_find(const struct coordinator *c, int64_t pid, int16_t epoch,
                                           const char *topic, uint32_t partition);
int coord_replay(struct coordinator *c);
void coord_decisions_free(struct coordinator *c);

#endif
