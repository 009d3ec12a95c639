/*
 * cleaner.h — the log cleaner: Kafka's log compaction (cleanup.policy=compact) of one
 * partition. It keeps the latest record of every key, drops records of aborted transactions,
 * drops tombstones and transaction markers once delete.retention.ms has passed (markers only
 * when no data of their transaction is left), keeps every producer's last batch, and rewrites
 * the sealed segments below the cleanable bound into new segment files through the crash-safe
 * swap of docs/format.md A.9 (CL1-CL6). The active segment is never touched.
 *
 * Its work (the key map, the filtering, the writing and syncing of the cleaned files) runs on the
 * calling thread — the engine's cleaner thread (cleaner_pool.h) or rt_topic_compact's caller —
 * never on a shard thread; only short calls run on the partition's shard thread between rounds:
 * the prepare (what may be read, copies of the writer state), each swap (CL3-CL5 and the list
 * change) and the end of each pass (CLB1-CLB6 in cleaner.c). Readers keep the old segments'
 * mappings through their references (zero copy stays valid until they release). It never
 * decides when retention deletes (partition.c does) and never writes a segment the shard writes.
 */
#ifndef RT_CLEANER_H
#define RT_CLEANER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "partition.h"

struct cleaner_result {
    uint32_t passes;             /* passes that swapped segments in */
    uint32_t segments_in;        /* segments replaced */
    uint32_t segments_out;       /* segments written */
    uint64_t bytes_in;           /* log bytes read */
    uint64_t bytes_out;          /* log bytes written */
    uint64_t batches_dropped;    /* batches not copied */
    uint64_t batches_rewritten;  /* batches written with some of their records (CLN7) */
    uint32_t segments_unchanged; /* segments left in place: nothing to remove (CLN8) */
};

/* Cleans partition p, from any thread but a shard thread (it waits for calls on p's shard).
 * force: clean whatever is cleanable now (rt_topic_compact),
 * else only when min.cleanable.dirty.ratio or max.compaction.lag.ms says it is due. Returns 0
 * (also when nothing was cleanable), RT_E_INVALID_CONFIG (force on a topic that is not
 * compacted; 0 without force), RT_E_IO_FAILED (frozen partition; a failure after a swap's
 * commit freezes it too, the next open finishes the swap, CL6), RT_E_READ_ONLY, RT_E_CORRUPT (a
 * batch that does not parse), -ENOBUFS when one batch holds more keys than the key map
 * (rt_options.cleaner_buffer_bytes) takes, -ENOMEM, or -errno of a file step (before the
 * commit the .cleaned files are left for the next open to remove). out may be NULL. */
int cleaner_clean(struct partition *p, int64_t now_ms, bool force, struct cleaner_result *out);

/* Whether a clean of p is due now (min.cleanable.dirty.ratio, max.compaction.lag.ms) and none
 * runs (CLB3). On p's shard thread. */
bool cleaner_due(struct partition *p, int64_t now_ms);

/* CLN10: whether p's active segment should be rolled now so the cleaner can take it: p is
 * compacted, writable, not frozen, between rounds, its active segment open and not empty, and
 * older (since it was created or opened) than min(segment.ms, max.compaction.lag.ms) — Kafka's
 * maxSegmentMs, acted on by the shard's housekeeping too, not only at an append. On p's shard
 * thread. */
bool cleaner_roll_due(const struct partition *p, int64_t now_ms);

/* Tests only (rt_test_cleaner_clock_set): added to every now_ms cleaner_clean and cleaner_due
 * are given, so a test moves the cleaner past delete.retention.ms without sleeping. */
extern _Atomic int64_t cleaner_clock_skew_ms;

/* CLB5: no clean of p starts or swaps any more (returns at once). */
void cleaner_cancel(struct partition *p);

/* CLB5: returns once no clean of p runs (after cleaner_cancel). Not on p's shard thread nor on
 * a thread running a clean (a running clean may wait for a call on the shard). */
void cleaner_wait(struct partition *p);

#endif /* RT_CLEANER_H */
