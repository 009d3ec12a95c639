/*
 * fetch.h — the object behind rt_fetch, shared by fetch.c (which fills it from a partition) and
 * records.c (which iterates it). Internal.
 *
 * A fetch owns what its iterator needs so that iterating never allocates once warm: the aborted
 * list it hands out, the set of producers whose aborted transactions are being skipped
 * (read_committed filtering, architecture.md, Rules of the protocol), and the buffer compressed batches decompress into. One
 * iterator at a time per fetch (a fetch belongs to one thread).
 */
#ifndef RT_FETCH_H
#define RT_FETCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "compression.h"
#include "ringtail.h"

struct segment;
struct fetch_pool;

struct rt_fetch {
    struct rt_fetch_view view;      /* first: rt_fetch_get returns &fetch->view (records.c) */
    struct fetch_pool *pool;        /* NULL: made by fetch_from_bytes, freed at release */
    struct rt_fetch *next;          /* in the pool's free list */
    struct segment *segment;        /* referenced; NULL for an empty or in-memory fetch */
    struct rt_aborted_txn *aborted; /* view.aborted points here; owned */
    size_t aborted_capacity;
    int64_t *aborted_producers; /* iterator state: producers with an aborted txn in progress */
    size_t aborted_producer_count;
    size_t aborted_producer_capacity;
    size_t next_aborted; /* iterator state: next aborted entry (by first offset) to consider */
    struct compression_buffer decompressed; /* iterator state: the current batch's records */
};

/* FP1-FP4: the engine's rt_fetch handles. A released handle goes back to the pool's free list
 * with its aborted list and aborted-producer set (so a warm fetch and its read_committed
 * iteration allocate nothing); a handle is allocated only when the list is empty, the first
 * time that many fetches are open at once.
 *   FP1. open <= capacity (opts.fetches_max): one more is refused with RT_E_FETCHES_FULL.
 *   FP2. made == open + the free list's length: every handle made is open or listed.
 *   FP3. a listed handle references no segment and owns no decompression buffer (those can
 *        be big: a compressed batch of up to batch_size_max_bytes), so the pool's memory is
 *        made * (sizeof(struct rt_fetch) + the small lists it keeps).
 *   FP4. the pool outlives its engine while any of its handles is open, and no longer. */
struct fetch_pool {
    pthread_mutex_t lock;
    struct rt_fetch *free;
    uint32_t capacity;
    uint32_t open;
    uint32_t made;
    bool orphaned; /* fetch_pool_destroy ran with handles open: the last release frees it */
};

/* One allocation (the pool); NULL when out of memory. */
struct fetch_pool *fetch_pool_create(uint32_t capacity);
/* Frees the pool and every listed handle. Handles still open (a fetch may outlive rt_close)
 * keep the pool alive: it is orphaned, each later release frees its handle, and the last one
 * frees the pool (FP4). */
void fetch_pool_destroy(struct fetch_pool *fp);

/* A fetch over caller-owned bytes (whole batches), for tests and tools: nothing is referenced;
 * the aborted list is copied. Release with rt_fetch_release. */
int fetch_from_bytes(rt_fetch **out, const uint8_t *data, size_t len, enum rt_isolation isolation,
                     const struct rt_aborted_txn *aborted, size_t aborted_count);

struct partition;

/* rt_fetch_start and rt_list_offsets on one partition (log_fetch_start and log_list_offsets
 * look the partition up): same contract; the caller's error detail is not cleared. */
int fetch_partition_start(struct fetch_pool *fp, struct partition *p, int64_t offset,
                          size_t max_bytes, enum rt_isolation isolation, rt_fetch **out);
int fetch_partition_list_offsets(struct partition *p, int64_t spec, enum rt_isolation isolation,
                                 int64_t *offset_out);
/* rt_list_offsets_by_timestamp on one partition: same contract. */
int fetch_partition_offset_for_timestamp(struct partition *p, int64_t ts,
                                         enum rt_isolation isolation, int64_t *offset_out,
                                         int64_t *timestamp_out);

#endif /* RT_FETCH_H */
