/*
 * producer_internal.h — what the producer's files share: its handle (struct rt_producer), its
 * batches and per-partition state, and the calls one file makes into another. The producer is
 * one module (producer.h, the rt_producer_* calls of ringtail.h) kept in one file per concept:
 *   producer.c           the producer's invariants (PR1-PR8), open, send, flush, close
 *   producer_batch.c     batches: the pool (PR1), memory, open and close, per-partition state
 *   producer_delivery.c  hand-over to the shards (PR5), completion (shard thread) and delivery
 *                        (the sender pool's pass, PR2)
 *   producer_txn.c       transactions: partitions noted and added, init, begin, offsets,
 *                        commit in one round (PR6), abort
 * Internal to those files: nothing else includes it.
 */
#ifndef RT_PRODUCER_INTERNAL_H
#define RT_PRODUCER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "fsutil.h"
#include "log.h"
#include "ringtail.h"
#include "sender_pool.h"
#include "txn.h"

#define PRODUCER_PARTITIONS_MAX 4096
#define TXN_ADD_ON_STACK        4 /* partitions added in one call from the stack: ~1 KiB */

struct record_cb {
    rt_delivery_fn fn;
    void *ctx;
};

struct pbatch {
    struct shard_request req; /* handed to the shard; completion lands here */
    struct rt_producer *producer;
    struct ppart *pp;
    uint8_t *buf;
    size_t cap;
    struct batch_builder b;
    int32_t base_seq;
    int32_t count;
    int64_t last_seq;  /* named producers: the highest sequence id in the batch */
    int64_t opened_ms; /* monotonic, for linger */
    uint64_t number;   /* PR7: the producer's count of batches opened before this one */
    struct record_cb *cbs;
    uint32_t cbs_cap;
    bool completed;
    bool skip; /* named producer: records at or below the persisted sequence, never sent */
    struct pbatch *next;
};

struct ppart {
    struct partition *part;
    int64_t next_seq; /* the next sequence to assign (contiguous for anonymous producers) */
    int64_t last_seq; /* the last sequence accepted by send (named producers) */
    struct pbatch *open;
    struct pbatch *ready_head, *ready_tail;   /* closed, waiting for an in-flight slot */
    struct pbatch *flight_head, *flight_tail; /* handed over, in order */
    uint32_t in_flight;
    /* PR9: a batch here failed with a partition fault; sends here are refused until every
     * batch of this partition is back, then the sequences go on from resync_seq. */
    bool resync;
    int32_t resync_seq;
};

struct sticky_topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partition; /* where null-key records go until that batch closes */
};

struct rt_producer {
    struct log *log;
    struct txn *txn_layer;
    _Atomic uint32_t *open_count; /* the engine's census of open producers (EN1 in engine.c) */
    struct rt_producer_options opts;
    char name[PRODUCER_NAME_MAX + 1];
    bool named;
    int64_t producer_id;
    int16_t epoch;

    pthread_mutex_t lock;
    pthread_cond_t changed; /* a batch completed, memory freed, or flush progress */
    /* PR2: the producer's send-side work, run by the engine's sender pool (sender_pool.c) */
    struct sender_pool *senders;
    struct sender_task task;

    /* PR3: one entry per partition written to, each allocated on its first send and kept
     * (its sequences must survive idleness); the pointer array grows by doubling. Batches
     * point at their entry, whose address never changes. */
    struct ppart **parts;
    uint32_t part_count, part_capacity;
    struct sticky_topic *sticky;
    uint32_t sticky_count, sticky_capacity;

    /* transactions */
    bool transactional;
    char txn_id[TXN_ID_MAX_BYTES + 1];
    struct coordinator *coordinator;
    enum { TXN_UNINITIALISED, TXN_READY, TXN_IN_TXN, TXN_FATAL } txn;
    struct partition **txn_parts; /* partitions of the open transaction */
    bool *txn_added;              /* ... and whether the coordinator has recorded each yet */
    uint32_t txn_part_count, txn_part_capacity;

    uint64_t memory_bytes; /* buffers of batches not yet acknowledged */
    uint32_t outstanding;  /* batches open, ready or in flight */
    /* PR7: batches opened so far (each gets the count before it as its number), and the number
     * of the batch whose callbacks are running (UINT64_MAX for none; one at a time, PR2). */
    uint64_t batches_opened;
    uint64_t delivering;
    /* PR1: acknowledged batches of batch_size_bytes, kept with their buffer and callback array
     * for the next batch (Kafka's BufferPool): once warm, a batch costs no allocation.
     * memory_bytes + pooled_bytes <= buffer_memory_bytes, but for one batch larger than it. */
    struct pbatch *pool;
    uint64_t pooled_bytes;
    int sticky_error;
    int first_error; /* since the last flush */
    /* PR5: one thread hands batches over at a time (the pool's pass, a send or a flush); one
     * that finds another doing it leaves its batches to it (dispatch_again). */
    bool dispatching, dispatch_again;
    /* PR6: a commit's hand-over in progress (on the committing thread's stack), or NULL. */
    struct commit_handover *handover;
    bool handover_waiting; /* a commit waits for another thread's hand-over to end */
    bool acks_waiting;     /* a commit waits for its batches' acknowledgements (PR6) */
};

/* PR6 (coordinator.c CO9): a commit's last batches and its PrepareCommit, gathered by the
 * dispatcher and queued in one log_append_async_many, so where the PrepareCommit's shard also
 * owns one of the transaction's partitions both go out in one round (one fdatasync round for the
 * decision, not two in a row); only the last lone request may run its round on the committing
 * thread (SH5), after every other shard has its part, so no partition's round waits for
 * another's fdatasync. Touched only by the dispatcher. */
struct commit_handover {
    struct shard_request *reqs[LOG_APPEND_ASYNC_MANY_MAX];
    size_t count;
    struct shard_request *prep; /* queued with the first requests, then NULL */
};

static inline int64_t producer_mono_ms(void)
{
    return fs_monotonic_ms();
}

/* producer.c */
int producer_own_callback_refused(const char *call);
int producer_flush(rt_producer *p, int32_t timeout_ms, bool all);

/* producer_batch.c */
void producer_batch_destroy(struct pbatch *b);
void producer_batch_free(struct rt_producer *p, struct pbatch *b);
struct ppart *producer_part_find(struct rt_producer *p, struct partition *part);
bool producer_close_batch(struct rt_producer *p, struct ppart *pp, bool wake);
void producer_close_open_batch(struct rt_producer *p, struct ppart *pp);
size_t producer_batch_cap_for(const struct rt_producer *p, size_t need);
bool producer_memory_full(const struct rt_producer *p, size_t cap);
void producer_wait_changed(struct rt_producer *p);
void producer_memory_wait(struct rt_producer *p);
int producer_open_batch(struct rt_producer *p, struct ppart *pp, size_t need, int32_t base_seq);

/* producer_delivery.c */
void producer_dispatch_ready(struct rt_producer *p);
bool producer_has_work(const struct rt_producer *p);
void producer_hand_over_closed(struct rt_producer *p, bool may_write);
int64_t producer_pass(struct sender_task *t);

/* producer_txn.c */
int producer_txn_note_partition(struct rt_producer *p, struct partition *part);
bool producer_txn_partition_added(const struct rt_producer *p, const struct partition *part);
int producer_txn_add_pending(struct rt_producer *p);

#endif
