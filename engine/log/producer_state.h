/*
 * producer_state.h — one partition's table of producers: epochs, the last 5 batches of each
 * (the dedup window), coordinator epoch, the first offset of an open transaction, and the last
 * timestamp (for expiry). It decides, for each producer batch about to be appended, whether it
 * is the next one, an exact duplicate, or a violation of the sequence rules (ringtail.h,
 * "Producers").
 *
 * Only the partition's shard thread touches a table, so it takes no lock. The table is bounded
 * (producers_max): when full, an idle anonymous producer without an open transaction is evicted
 * (an approximate LRU over a bounded scan), so a flood of short-lived producer ids cannot grow
 * it. Named producers are durable identities: never evicted, never expired (their dedup state
 * is the whole promise).
 * Snapshots (index/producer_snapshot.h) persist it; replaying batches rebuilds it.
 *
 * Invariants:
 *   PST1. At most one entry per producer id; count <= max.
 *   PST2. An entry's batches are in append order, at most PRODUCER_BATCHES_KEPT of them, and
 *         their offsets and sequences increase.
 *   PST3. check() never changes the table; update() is the only writer of an entry's batches.
 *   PST4. Sequences are compared in wrap space (producer_seq_reached), never with < or >=
 *         across batches: at a kept epoch a producer's sequence runs on past INT32_MAX to 0.
 *   PST5. A truncation loses no dedup window below its cut: a table reloaded from a snapshot
 *         (which keeps each producer's last batch only) and the log up to the cut gets back,
 *         from the table held before the cut, every batch below the cut of the same producer
 *         and epoch that it lacks, oldest dropped past PRODUCER_BATCHES_KEPT
 *         (producer_table_keep_window). A new leader then answers a retry of any of the
 *         producer's last 5 batches still in its log as a duplicate, as the old leader would.
 */
#ifndef RT_PRODUCER_STATE_H
#define RT_PRODUCER_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "batch.h"

#define PRODUCER_BATCHES_KEPT 5

struct producer_batch {
    int32_t first_seq;
    int32_t last_seq;
    int64_t first_offset;
    int32_t offset_delta; /* last offset - first offset */
    int64_t timestamp_ms; /* the batch's max timestamp */
};

struct producer_entry {
    int64_t producer_id;
    int16_t epoch;
    bool monotonic; /* a named producer: sequences increase, gaps allowed (Pulsar) */
    uint8_t batch_count;
    struct producer_batch batches[PRODUCER_BATCHES_KEPT]; /* oldest first */
    int32_t coordinator_epoch;
    int64_t current_txn_first_offset; /* -1: no open transaction */
    int64_t last_timestamp_ms;
    uint64_t last_used; /* table clock at the last update, for eviction */
};

/* Is this producer id a named (monotonic) producer? Answered by the engine's registry. */
typedef bool (*producer_named_fn)(void *ctx, int64_t producer_id);

struct producer_table {
    struct producer_entry **slots; /* open addressing, linear probing; NULL = empty */
    uint32_t capacity;             /* power of two, > count */
    uint32_t count;
    uint32_t max;
    uint32_t evict_hand;
    uint64_t clock;
    producer_named_fn is_named;
    void *named_ctx;
};

/* Has a producer whose last sequence is `last` written sequence `seq`? In wrap space (PST4):
 * sequences run on past INT32_MAX to 0 (Kafka's DefaultRecordBatch.incrementSequence), so
 * `last` has reached `seq` iff (last - seq) mod 2^31 < 2^30 — a window of 2^30 sequences
 * behind `last`, far more than any producer has in flight. last < 0 (none written) or
 * seq < 0 reaches nothing. */
static inline bool producer_seq_reached(int64_t last, int64_t seq)
{
    if (last < 0 || seq < 0 || last > INT32_MAX || seq > INT32_MAX)
        return false;
    return (uint32_t)((last - seq) & 0x7FFFFFFF) < (UINT32_C(1) << 30);
}

enum producer_verdict {
    PRODUCER_APPEND = 0,    /* the batch is the producer's next: append it, then update() */
    PRODUCER_DUPLICATE = 1, /* already appended: acknowledge with *dup_offset, append nothing */
};

int producer_table_init(struct producer_table *t, uint32_t max, producer_named_fn is_named,
                        void *named_ctx);
void producer_table_free(struct producer_table *t);

/* Applies the sequence rules to a batch with producer_id >= 0. Returns a verdict (>= 0) or
 * RT_E_INVALID_PRODUCER_EPOCH, RT_E_OUT_OF_ORDER_SEQUENCE, RT_E_UNKNOWN_PRODUCER_ID; *rule
 * names the rule. For a duplicate, *dup_offset is the original base offset (or -1 for a
 * named producer's batch older than the window). */
int producer_table_check(const struct producer_table *t, const struct batch_header *h,
                         int64_t *dup_offset, const char **rule);

/* Rules for a transaction marker (a control batch) of producer h->producer_id: an epoch older
 * than the producer's is RT_E_INVALID_PRODUCER_EPOCH; a coordinator epoch older than the last
 * one seen for the producer is RT_E_PRODUCER_FENCED (a zombie coordinator). Returns 0 or the
 * error with *rule set. */
int producer_table_check_marker(const struct producer_table *t, const struct batch_header *h,
                                int32_t coordinator_epoch, const char **rule);

/* Records a marker appended at h->base_offset: ends the producer's open transaction (if any) and
 * remembers the coordinator epoch. *txn_first_offset_out receives the first offset of the
 * transaction it ended (-1 when none was open here). */
int producer_table_end_txn(struct producer_table *t, const struct batch_header *h,
                           int32_t coordinator_epoch, int64_t *txn_first_offset_out);

/* Records a batch appended at h->base_offset (live appends after check(), and log replay).
 * Returns 0 or -ENOMEM / RT_E_PRODUCERS_FULL (no room and nothing evictable). */
int producer_table_update(struct producer_table *t, const struct batch_header *h);

/* A coordinator-origin batch (offset commits in __consumer_offsets): epoch fencing only (PS1);
 * update records the epoch and opens the transaction without touching the sequence window. */
int producer_table_check_coordinator(const struct producer_table *t, const struct batch_header *h,
                                     const char **rule);
int producer_table_update_coordinator(struct producer_table *t, const struct batch_header *h);

/* Forgets producers idle since now - expiration_ms without an open transaction. Returns the
 * number removed. */
uint32_t producer_table_expire(struct producer_table *t, int64_t now_ms, int64_t expiration_ms);

const struct producer_entry *producer_table_find(const struct producer_table *t,
                                                 int64_t producer_id);

/* PST5: after a truncation to `end` reloaded t, gives each of t's anonymous producers back the
 * batches of its entry in `before` (the table held before the truncation) that lie below `end`,
 * at the same epoch, older than t's oldest batch of it; at most PRODUCER_BATCHES_KEPT kept
 * (the newest). Never adds a producer nor changes an epoch, a transaction or a timestamp. */
void producer_table_keep_window(struct producer_table *t, const struct producer_table *before,
                                int64_t end);

/* Inserts (or replaces) an entry as loaded from a snapshot. */
int producer_table_load(struct producer_table *t, const struct producer_entry *e);

/* Calls fn for every entry (order unspecified). */
int producer_table_each(const struct producer_table *t,
                        int (*fn)(void *ctx, const struct producer_entry *e), void *ctx);

#endif /* RT_PRODUCER_STATE_H */
