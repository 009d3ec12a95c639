/*
 * segment_maps.h — the engine's budget of mapped sealed segments: which sealed segments hold
 * their mappings now (`.log`, `.index`, `.timeindex`: up to three each, segment.c), against
 * `rt_options.mapped_segments_max`, and which to release when a new mapping passes it. It owns
 * the ring of releasable segments (a CLOCK: readers mark a segment used with one relaxed store,
 * no lock; a sweep gives a used segment a second chance and releases the first unused one), the
 * counters, and the decision; segment.c owns the mapping itself (segment_release_maps unmaps,
 * segment_map maps again, SG6).
 *
 * Why a budget of its own and not open_segments_max: they bound different resources of
 * different segments. Descriptors (RLIMIT_NOFILE, 4 per segment) are held by active segments
 * only and given back by the shards sealing idle partitions (SH12: I/O, writer state, the
 * shard thread); mappings (vm.max_map_count, 3 per segment) are held by sealed segments that
 * were read and given back by an munmap on whatever thread maps the next one (no I/O, no writer
 * state). One number for both would size one limit by the other's.
 *
 * Invariants:
 *   MM1. A segment is in the ring exactly while it is attached (its partition's list holds it,
 *        it is sealed and its writer is done with it: segment_maps_attach, undone by
 *        segment_maps_forget before the list lets it go) and mapped; `count` is the ring's
 *        length. Active segments, segments out of their list and read-only engines' are never
 *        in it, so never released (an active one is bounded by open_segments_max, OS1).
 *   MM2. A mapping is released only while no reference but its list's is held (refs == 1,
 *        under the segment's map_lock, with the Dekker pair of segment.c SG8 against a reader
 *        taking one): every reader, the writer's own walks included, holds a reference of its
 *        own from before its segment_map to after its last use of the bytes (segment_pin), so
 *        no pointer into a mapping is ever left dangling. A pinned segment the sweep wanted is
 *        marked `wanted` and released when its last holder lets go (segment_unref sweeps).
 *   MM3. The budget is a hard bound except for pins: after a sweep, count <= max unless every
 *        segment over it is pinned by a reader (then count - max <= the segments pinned); a
 *        sweep visits each segment at most twice, so it ends.
 *
 * Cost of a release: three munmaps; of the re-map at the next read (SG6's path): an open,
 * fstat and mmap of the log and of each non-empty index, then closes — no data read, and the
 * file pages stay in the page cache, so the bytes come back by minor faults.
 *
 * Thread-safety: the ring and its flags are under `lock`, taken by any thread; the counters are
 * atomics. Lock order: lock, then a segment's map_lock (never the other way round).
 */
#ifndef RT_SEGMENT_MAPS_H
#define RT_SEGMENT_MAPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct segment;

/* rt_options.mapped_segments_max = 0: a quarter of vm.max_map_count over 3 mappings a segment
 * (5 460 at the default 65 530), within SEGMENT_MAPS_MIN .. SEGMENT_MAPS_AUTO_MAX. */
#define SEGMENT_MAPS_MIN      16u
#define SEGMENT_MAPS_AUTO_MAX 65536u

struct segment_maps {
    uint32_t max;              /* the budget (mapped_segments_max, resolved) */
    pthread_mutex_t lock;      /* the ring, and every segment's mm_* fields */
    struct segment *hand;      /* the ring's oldest entry (the CLOCK's hand), NULL when empty */
    _Atomic uint32_t count;    /* segments in the ring (MM1) */
    _Atomic uint32_t peak;     /* the largest count seen */
    _Atomic uint64_t releases; /* mappings released for the budget */
    _Atomic uint64_t remaps;   /* segments mapped again after a release */
    _Atomic uint64_t pinned;   /* sweeps that met a segment a reader held (MM2) */
};

/* The budget for mapped_segments_max (0: from /proc/sys/vm/max_map_count, above). */
uint32_t segment_maps_resolve(uint32_t mapped_segments_max);

void segment_maps_init(struct segment_maps *m, uint32_t max);
void segment_maps_destroy(struct segment_maps *m);

/* MM1: the writer is done with the sealed segment `seg` of a list; from now on it may be
 * released (and is put in the ring at once when mapped, which may release others). m may be
 * NULL (tools, read-only engines): nothing happens. */
void segment_maps_attach(struct segment_maps *m, struct segment *seg);

/* MM1: the segment leaves its list (retention, the cleaner's swap, a wake, the close): out of
 * the ring for good, never released again; waits for a release in progress. */
void segment_maps_forget(struct segment *seg);

/* segment.c, after segment_map made a new mapping of seg (the caller holds a reference): into
 * the ring when attached, then a sweep if over the budget; remap: its mappings had been
 * released (counted in remaps). */
void segment_maps_mapped(struct segment *seg, bool remap);

/* segment.c (segment_unref, MM2): a wanted segment's last reader let go: sweep again. */
void segment_maps_sweep(struct segment_maps *m);

/* The three above, as segment.c calls them (segment.h struct segment_maps_ops). */
extern const struct segment_maps_ops segment_maps_ops;

#endif /* RT_SEGMENT_MAPS_H */
