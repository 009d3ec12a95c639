/*
 * fetch.h — the object behind rt_fetch, shared by fetch.c (which fills it from a partition) and
 * records.c (which iterates it). Internal.
 *
 * A fetch owns what its iterator needs so that iterating never allocates once warm: the aborted
 * list it hands out, the set of producers whose aborted transactions are being skipped
 * (read_committed filtering, DESIGN §5), and the buffer compressed batches decompress into. One
 * iterator at a time per fetch (a fetch belongs to one thread).
 */
#ifndef RT_FETCH_H
#define RT_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "compression.h"
#include "ringtail.h"

struct segment;

struct rt_fetch {
    struct rt_fetch_view view;
    struct segment *segment;        /* referenced; NULL for an empty or in-memory fetch */
    struct rt_aborted_txn *aborted; /* view.aborted points here; owned */
    size_t aborted_capacity;
    int64_t *aborted_producers; /* iterator state: producers with an aborted txn in progress */
    size_t aborted_producer_count;
    size_t aborted_producer_capacity;
    size_t next_aborted; /* iterator state: next aborted entry (by first offset) to consider */
    struct compression_buffer decompressed; /* iterator state: the current batch's records */
};

/* A fetch over caller-owned bytes (whole batches), for tests and tools: nothing is referenced;
 * the aborted list is copied. Release with rt_fetch_release. */
int fetch_from_bytes(rt_fetch **out, const uint8_t *data, size_t len, enum rt_isolation isolation,
                     const struct rt_aborted_txn *aborted, size_t aborted_count);

struct partition;

/* rt_fetch_start and rt_list_offsets on one partition (log_fetch_start and log_list_offsets
 * look the partition up): same contract; the caller's error detail is not cleared. */
int fetch_partition_start(struct partition *p, int64_t offset, size_t max_bytes,
                          enum rt_isolation isolation, rt_fetch **out);
int fetch_partition_list_offsets(struct partition *p, int64_t spec, enum rt_isolation isolation,
                                 int64_t *offset_out);

#endif /* RT_FETCH_H */
