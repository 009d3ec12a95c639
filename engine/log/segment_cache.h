/*
 * segment_cache.h — the engine's budget of open segments: how many segments hold file
 * descriptors now (an active segment holds four: its .log, the two writable indexes and the
 * .txnindex; a sealed one none, segment.c), against `rt_options.open_segments_max`. segment.c
 * counts a segment in when it opens its descriptors and out when it drops them; the shards
 * (shard.c SH12) make the least recently written idle partitions of their own dormant
 * (partition_sleep, PA15: the active segment sealed as a clean close seals it, its descriptors
 * closed) while the count is over the budget, and a dormant partition's next append reopens it
 * (partition_wake, PA11). So descriptors are bounded by the budget, not by the partition count.
 *
 * Invariants:
 *   OS1. open == the number of live segments whose `cache_counted` is set; a segment is counted
 *         exactly while it holds a log descriptor (set where the descriptor is taken, cleared
 *         where it is closed), so open never drifts from the descriptors actually held.
 *   OS2. The budget is a soft bound: a create or a wake is never refused for it (an append must
 *         not fail because other partitions are idle-but-open); the shards bring open back to
 *         at most the low-water mark (max - max/8) at their next housekeeping period or before
 *         their next wake, sleeping only partitions with nothing in flight (PA15; OS5 for
 *         unsynced ones).
 *   OS3. A new partition is born active only with a reservation (segment_cache_reserve: open
 *        plus the reservations held stays <= max, however many threads create partitions at
 *        once, log.c LG11), released once its segment is counted; without one it is born
 *        dormant (segment_create_dormant: empty files, no descriptor kept), so creating N
 *        partitions never holds 4 N descriptors; its first append wakes it (PA11).
 *   OS4. The default budget (open_segments_max = 0, segment_cache_resolve) leaves at least half
 *        of RLIMIT_NOFILE, and never fewer than SEGMENT_CACHE_HEADROOM_MIN descriptors, to
 *        everything that is not a segment (a broker's sockets, the rings, the lock, a snapshot
 *        or a pre-written file for a moment, a roll's new segment), counting OS2's batch of
 *        wakes past the budget: 4 x (max + max/8) <= limit / 2 (but at SEGMENT_CACHE_MIN).
 *   OS5. Every wake makes room first: the shard sleeps its least recently written idle
 *        partitions (SH12) whether or not they hold published bytes not yet synced (sync=
 *        interval or none, a lazy marker): such a partition's log is fdatasynced through the
 *        ring before its sleep (PA15 then finds nothing unsynced), and a failure of that
 *        fdatasync fails the write side as sync_dirty's does (SH10). So appends to more
 *        partitions than the budget hold it under every sync mode.
 *   OS6. An open that must scan a newest segment (after a crash, or one the recovery point did
 *        not vouch for) opens it active for the scan, then, while open is above the low-water
 *        mark, makes the partition dormant at once (partition_sleep, PA15: sealed, vouched,
 *        named by the recovery point), so an open of any number of such partitions holds at
 *        most the low-water mark plus one partition's descriptors per thread opening
 *        partitions at once (log.c LG15: at most OPEN_THREADS_MAX, 2 on a 2-core machine;
 *        inside OS2's max/8 batch past the budget, for which OS4 leaves room, whenever max/8
 *        is at least the thread count). A failed seal fails the open (as any failed write of
 *        a recovery does).
 *
 * Thread-safety: the counters are atomics, read and written by any thread. This module never
 * closes a segment itself and never takes a lock.
 */
#ifndef RT_SEGMENT_CACHE_H
#define RT_SEGMENT_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* rt_options.open_segments_max = 0 (OS4): RLIMIT_NOFILE / 9, so that the segments' worst case
 * (4 descriptors each, for the budget and OS2's batch of wakes past it: 4 x 9/8 x max) is half
 * the limit; at least SEGMENT_CACHE_HEADROOM_MIN descriptors are left for everything else; at
 * least SEGMENT_CACHE_MIN and at most SEGMENT_CACHE_AUTO_MAX segments. */
#define SEGMENT_CACHE_MIN          8u
#define SEGMENT_CACHE_AUTO_MAX     16384u
#define SEGMENT_CACHE_HEADROOM_MIN 64u

struct segment_cache {
    uint32_t max;              /* the budget (open_segments_max, resolved) */
    _Atomic uint32_t open;     /* segments holding descriptors now (OS1) */
    _Atomic uint32_t reserved; /* creations admitted and not yet counted in open (OS3) */
    _Atomic uint64_t sleeps;   /* active segments closed for the budget (PA15) */
    _Atomic uint64_t peak;     /* the largest `open` seen */
};

/* The budget for open_segments_max (0: from RLIMIT_NOFILE, above). */
uint32_t segment_cache_resolve(uint32_t open_segments_max);

void segment_cache_init(struct segment_cache *c, uint32_t max);

/* segment.c: one more (fewer) segment holds descriptors. c may be NULL (tools, tests). */
void segment_cache_opened(struct segment_cache *c);
void segment_cache_closed(struct segment_cache *c);

/* OS3: true when the budget is spent (c may be NULL: never). */
bool segment_cache_full(const struct segment_cache *c);

/* OS3: admits one new active segment (true: create it, then segment_cache_unreserve once it is
 * counted or failed) or refuses it (false: the budget is spent; nothing to release). c NULL or
 * no budget: always true. */
bool segment_cache_reserve(struct segment_cache *c);
void segment_cache_unreserve(struct segment_cache *c);

/* How many segments a shard should close now to bring `open` down to the low-water mark
 * (OS2); 0 when open is within the budget. */
uint32_t segment_cache_excess(const struct segment_cache *c);

/* OS2: true while open is above the low-water mark (a shard that started closing goes on). */
bool segment_cache_above_low(const struct segment_cache *c);

#endif /* RT_SEGMENT_CACHE_H */
