/*
 * segment.h — one log segment: `<base>.log` with its `.index` and `.timeindex`.
 *
 * A segment is written only by its partition's shard thread and read by any thread through a
 * read-only shared mapping. The active segment's file is preallocated to capacity_bytes and
 * mapped whole; readers never look past `readable_bytes`, which the writer publishes (release)
 * only after a round's bytes are acknowledged. Sealing (on roll or clean close) fdatasyncs the
 * log, trims it and its indexes to their live sizes and never remaps, so a reader holding the
 * old mapping stays safe. Segments are reference counted: the partition's list holds one
 * reference and every fetch one more; a deleted segment's files are unlinked at once and its
 * mapping is released with the last reference. A sealed segment's mappings may also be released
 * while only its list holds it, for the budget of mapped segments (segment_maps.h, SG8), and
 * are made again by its next reader (segment_map). Under a pre-writer (cfg.pool) the preallocated
 * space ahead of the writer is also written with zeros by segment_pool.c (SG1-SG3 in segment.c),
 * and an active segment may be a recycled file whose stale batches follow its own
 * (docs/format.md A.6); retention may rename a deleted segment's log instead of unlinking it
 * (segment_recycle).
 *
 * This module never decides when to roll or delete (partition.c does) and never talks to
 * io_uring directly (the shard queues writes on segment->fd through io/).
 */
#ifndef RT_SEGMENT_H
#define RT_SEGMENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "index/offset_index.h"
#include "index/time_index.h"
#include "index/txn_index.h"
#include "recovery_point.h"

#define SEGMENT_PATH_BYTES 4096

struct segment_pool;
struct segment_cache;
struct segment;
struct segment_maps;

/* What this module tells the budget of mapped segments (segment_maps.c defines it as
 * segment_maps_ops and log.c sets it beside cfg.maps): segment_maps.c includes this header and
 * this module never includes segment_maps.h, so the two are no include cycle. */
struct segment_maps_ops {
    void (*forget)(struct segment *seg); /* segment_maps_forget */
    void (*mapped)(struct segment *seg,
                   bool remap);            /* segment_maps_mapped; remap: after a release */
    void (*sweep)(struct segment_maps *m); /* segment_maps_sweep */
};
struct io_fault_plan;

struct segment_config {
    uint64_t capacity_bytes;       /* preallocation of an active segment */
    uint32_t index_size_max_bytes; /* capacity of each index */
    uint32_t index_interval_bytes; /* log bytes between offset-index entries */
    bool read_only; /* open for reading only: files are never created, written, truncated or
                       preallocated; indexes that must be rebuilt are rebuilt in memory */
    struct segment_pool *pool;   /* pre-writes active segments ahead of the writer (SG1-SG3);
                                  NULL: none (sync=none, read-only, tools) */
    struct segment_cache *cache; /* the engine's budget of open segments (segment_cache.h,
                                     OS1), or NULL: not counted (tools, tests) */
    struct segment_maps *maps;   /* the engine's budget of mapped sealed segments
                                     (segment_maps.h MM1-MM3), or NULL: never released (tools,
                                     tests, read-only engines) */
    const struct segment_maps_ops *maps_ops; /* with maps: the budget's side (below) */
    struct io_fault_plan *faults; /* the engine's fault plan (tests) or NULL: every fdatasync of
                                     the log file goes through io_fdatasync (SG4) */
    bool gaps_ok; /* a segment the log cleaner wrote: offsets may skip (docs/format.md A.9 CL1) */
    bool recovery_sync_lazy; /* SG10: sync other than always: a recovery with nothing to cut
                                leaves its fdatasync to the partition's unsynced path */
};

struct segment_recovery {
    uint64_t valid_bytes;     /* bytes of whole valid batches kept */
    uint64_t truncated_bytes; /* non-zero bytes dropped after them (a torn or corrupt tail) */
    int64_t next_offset;      /* last valid offset + 1 (base when empty) */
    const char *why;          /* why the scan stopped early, or NULL at a clean end */
    bool stale;   /* a recycled file's stale batches followed the last one (cut, not counted) */
    bool trusted; /* opened on a recovery point's word (segment_trust): nothing was read */
    uint64_t tail_from_bytes; /* recover with a tail trust: the scan began here (0: from start) */
    bool tail_rejected;       /* a tail trust was given but did not hold: scanned from 0 */
    bool uncut;     /* SG10: every byte past the log's end read as zero: the file was not cut */
    bool sync_left; /* SG10: uncut and not fdatasynced; bytes below the end may be unsynced (the
                       caller marks its partition unsynced, PA19) */
};

/* What a recovery point (recovery_point.h) recorded of a sealed segment whose files have not
 * changed since: the segment's end and largest timestamp, as the check at its seal found them. */
struct segment_trust {
    int64_t next_offset;
    int64_t max_timestamp;
    int64_t max_timestamp_offset;
    /* A recover only (the recovery point's tail, A.7 RP6): the first `bytes` of the log are whole
     * batches, fdatasynced, ending with the batch at last_batch_position, and the first
     * index_entries / timeindex_entries entries of the indexes describe them (synced). The scan
     * starts there once that batch and those entries check out; otherwise from 0. */
    uint64_t bytes; /* 0: a sealed segment's trust (above) */
    uint64_t last_batch_position;
    uint32_t index_entries;
    uint32_t timeindex_entries;
    /* A sealed segment's trust only (SG6): the sizes of its four files as stamped, equal to
     * what stat says now; then nothing is opened at all until the first reader (segment_map). */
    bool sized;
    uint64_t file_bytes[RECOVERY_FILES];
};

struct segment {
    int64_t base_offset;
    char *log_path; /* its own allocation, set by segment_paths (not SEGMENT_PATH_BYTES in every
                       segment: memory per partition, docs/limits.md) */
    int fd;
    const uint8_t *map; /* PROT_READ, MAP_SHARED */
    uint64_t map_bytes;
    uint64_t size_bytes;             /* writer's end of data */
    _Atomic uint64_t readable_bytes; /* published end of acknowledged data */
    struct offset_index oidx;
    struct time_index tidx;
    struct txn_index txns; /* aborted transactions whose ABORT marker is in this segment */
    _Atomic uint32_t oidx_published; /* index entries readers may use */
    _Atomic uint32_t tidx_published;
    const uint8_t *oidx_map; /* the index mappings readers use (set before any publish) */
    const uint8_t *tidx_map;
    int64_t next_offset;              /* writer: last offset + 1 */
    _Atomic int64_t max_timestamp_ms; /* largest record timestamp, -1 when none */
    int64_t max_timestamp_offset;
    uint64_t bytes_since_index;
    uint64_t last_batch_position; /* writer: where the last appended batch starts */
    int64_t created_ms;           /* wall clock, for roll by age */
    bool sealed;
    bool preallocated; /* active and extended past size_bytes: trimmed back when freed unsealed */
    _Atomic bool cache_counted; /* counted in cfg.cache while it holds its log descriptor (OS1) */
    /* SG6: a sealed segment opened on a recovery point's word maps its log and indexes at
     * first use (segment_map), not at open. mapped: they are made (always, for the others,
     * until the budget of mapped segments releases them: SG8). */
    _Atomic bool mapped;
    pthread_mutex_t map_lock; /* serialises segment_map and segment_release_maps */
    /* The budget of mapped segments (segment_maps.h): the ring's links and flags, under
     * cfg.maps->lock; mm_used, mm_wanted and mm_linked are also read without it. */
    struct segment *mm_prev, *mm_next;
    bool mm_attached;       /* MM1: releasable (in a list, sealed, its writer done with it) */
    bool mm_in;             /* in the ring */
    bool mm_released;       /* its mappings were released once (under map_lock): remaps count */
    _Atomic bool mm_used;   /* a reader mapped it since the sweep's hand last passed */
    _Atomic bool mm_wanted; /* MM2: a sweep met it pinned; its last reader sweeps again */
    _Atomic bool mm_linked; /* mm_attached, for readers without the lock */
    _Atomic int refs;
    _Atomic bool doomed; /* unlinked; close the mapping with the last reference */
    struct segment_config cfg;
    /* Pre-writing (segment_pool.c; SG1-SG3 in segment.c). */
    _Atomic uint64_t zero_frontier; /* [0, frontier) written (and fdatasynced unless sync=none) */
    _Atomic uint64_t writer_end;    /* end of what the writer queued; UINT64_MAX once sealing */
    _Atomic uint64_t zero_busy;     /* start of the chunk the pool is writing, or UINT64_MAX */
    _Atomic bool fd_busy;           /* the pool is using fd (write or fdatasync) */
    _Atomic bool zero_queued;       /* a pool job for this segment exists */
    uint64_t claimed_bytes;         /* writer: writer_end as it last stored it */
    uint64_t writeback_bytes;       /* pool (sync=none): writeback started on [0, this), SP7 */
    /* Recovery point (partition.c, PA8): set once the sealed segment was checked (at its seal,
     * or by an open) or trusted, with its files' stamps as they were then. Writer only. */
    bool vouched;
    struct recovery_stamp stamps[RECOVERY_FILES];
    _Atomic uint64_t lead_bytes; /* writer: how far ahead the pool keeps zeros now (SP5) */
    int64_t rate_start_ms;       /* writer: the append-rate window's start (0: none yet) */
    uint64_t rate_start_bytes;   /* writer: claimed_bytes at rate_start_ms */
    uint64_t recent_bytes;       /* writer: bytes appended in the last whole rate window */
};

/* Creates a new, empty active segment at base_offset in partition_dir: files created,
 * preallocated, mapped; the directory is fsynced. On failure nothing is left on disk. With
 * cfg->read_only: an empty sealed segment held in memory only (no file is touched), for a
 * partition that has none on disk. */
int segment_create(struct segment **out, const char *partition_dir, int64_t base_offset,
                   const struct segment_config *cfg);

/* Creates a new, empty segment at base_offset as a dormant one (PA11): empty .log, .index and
 * .timeindex files, the directory fsynced, no descriptor kept and nothing mapped; sealed, so
 * the partition's first append reopens it active (partition_wake). What a new partition gets
 * while the budget of open segments is spent (segment_cache.h OS3). Not for read-only engines. */
int segment_create_dormant(struct segment **out, const char *partition_dir, int64_t base_offset,
                           const struct segment_config *cfg);

/* Opens an existing segment. active: it will be appended to (the log is extended back to
 * capacity and the indexes opened writable). recover: the log is scanned from the start (or,
 * with a tail trust whose last batch and index entries check out, from trust->bytes), a
 * torn or corrupt tail is cut off (and the file re-zeroed past it), and the indexes rebuilt;
 * *rec reports what happened. Without recover: with `trust` (a recovery point vouches for the
 * files, unchanged since the segment was checked at its seal) nothing of the log or its indexes
 * is read — the mappings are made, the .txnindex is read (it is small) and the segment's end is
 * trust's; without it, the sealed segment's log and indexes are checked (SC1-SC3, one walk of
 * every batch header) and the indexes rebuilt from the log if they fail the check. A sealed
 * segment keeps no file descriptor (its mappings serve readers). With cfg->read_only, `active`
 * is ignored (nothing is preallocated) and recover scans in memory: the log is read up to its
 * last valid batch and nothing is cut; *rec still says what lies beyond. */
int segment_open(struct segment **out, const char *partition_dir, int64_t base_offset,
                 const struct segment_config *cfg, bool active, bool recover,
                 const struct segment_trust *trust, struct segment_recovery *rec);

/* Reader (SG6): makes sure the segment's log and index mappings exist — a no-op (one acquire
 * load) once they do; for a segment opened lazily, the first call opens, maps and closes the
 * log and both indexes under map_lock. Every use of map, oidx_map or tidx_map (fetches through
 * partition_segment_for/after, the open's walks, the writer's own lookups) comes after it.
 * Returns 0, or RT_E_CORRUPT / -errno with the detail naming the file (then nothing changed and
 * a later call tries again). */
int segment_map(struct segment *seg);

/* A reference and a mapping for a use of the segment's bytes (segment_ref, then segment_map;
 * on failure the reference is dropped). Every use of a sealed segment's map, oidx_map or
 * tidx_map holds one (SG8, segment_maps.h MM2): readers through partition_segment_for/after,
 * the writer's walks through this. segment_unpin is segment_unref. */
int segment_pin(struct segment *seg);
void segment_unpin(struct segment *seg);

/* segment_maps.c's sweep, under its lock (SG8): unmaps the log and both indexes of a mapped
 * segment no one but its list holds (refs == 1); true when released (or nothing was mapped),
 * false when a reader holds it (nothing changed). The next segment_map maps them again. */
bool segment_release_maps(struct segment *seg);

/* Makes the active segment's bytes, index entries and ABORT entries written so far durable
 * (fdatasync of the log and .txnindex, msync of the offset and time indexes), for a recovery
 * point's tail (PA9 in partition.h). Writer only, between rounds. Returns 0 or -errno. */
int segment_sync_prefix(struct segment *seg);

/* The check a seal makes before a recovery point may vouch for the segment (SC1-SC3 of
 * segment_check.c over its log and indexes, as an open without trust makes it): true when the
 * sealed segment's batches end exactly at its end and its indexes are sound. Reads every batch
 * header (the pages a seal just wrote, normally in the page cache). from_bytes > 0: the segment
 * was vouched for up to that size (and from_offset) when this engine opened it, so only the
 * batches after it are walked (SC1) and the indexes checked for structure (C.1/C.2 validity):
 * a close or roll after a clean open does not read what the open did not. */
bool segment_check_sealed(const struct segment *seg, uint64_t from_bytes, int64_t from_offset);

/* Creates the active segment at base_offset from a recycled file (`spare_path`, a former
 * segment's .log that retention let go): renamed into place, extended to capacity, the
 * directory fsynced. Its first `spare_bytes` are written blocks holding stale batches of the
 * segment it was (base offsets below base_offset: docs/format.md A.6 RS1). On failure the
 * spare is unlinked and the caller falls back to segment_create. */
int segment_create_recycled(struct segment **out, const char *partition_dir, int64_t base_offset,
                            const struct segment_config *cfg, const char *spare_path,
                            uint64_t spare_bytes);

/* Writer: account a batch just written at `position` (index entries, timestamps). Not yet
 * visible to readers. */
struct batch_header;
void segment_note_append(struct segment *seg, const struct batch_header *h, uint64_t position,
                         uint64_t size_bytes);

/* Writer: make everything noted so far visible to readers (release stores). */
void segment_publish(struct segment *seg);

/* Writer: fdatasync of the segment's writable .txnindex through io_fdatasync (SG4 in segment.c),
 * so the fault injector knows its entries written by the rounds are durable; 0 when it is not
 * writable. Returns 0 or -errno. */
int segment_sync_txn_index(struct segment *seg);

/* Writer: seal for good (roll or close): fdatasync, trim log and indexes to their live sizes,
 * sync indexes. Readers holding the mapping are unaffected. */
int segment_seal(struct segment *seg);

/* Writer: bytes still free in an active segment. */
uint64_t segment_free_bytes(const struct segment *seg);
bool segment_index_full(const struct segment *seg);

/* Writer: allocates the blocks of the next `entries_more` entries of both indexes (index_file.h
 * IF6) before a round may append them, so no store through an index mapping meets a hole the
 * disk cannot fill. 0, or -errno (-ENOSPC) with the error detail naming the segment. */
int segment_reserve_indexes(struct segment *seg, uint32_t entries_more);

/* Reader: byte position of the batch that contains `offset`, searching [0, end). Uses only
 * published index entries. Returns 0, RT_E_OFFSET_OUT_OF_RANGE when no batch at or after
 * offset lies below end, or RT_E_CORRUPT (detail names file and position). The batch found
 * has lastOffset >= offset. */
int segment_find_batch(struct segment *seg, int64_t offset, uint64_t end, uint64_t *pos_out);

/* Reader: the largest indexed batch start <= position (0 when none): lets a reader skip to near
 * a byte position without walking every batch header before it. O(log n). */
uint64_t segment_batch_floor(struct segment *seg, uint64_t position);

/* Reader: first position at or after `from` whose batch has maxTimestamp >= ts; walks batches
 * below `end`, starting at the time index's floor entry. RT_E_END when none. */
int segment_find_timestamp(struct segment *seg, int64_t ts_ms, uint64_t end, uint64_t *pos_out);

/* The partition's close: the segment leaves the engine's budget now (OS1), so a fetch that
 * outlives rt_close and frees it later never touches the engine's counters. */
void segment_uncount(struct segment *seg);

void segment_ref(struct segment *seg);
void segment_unref(struct segment *seg);

/* Unlinks the segment's files now; memory goes with the last reference. The directory is fsynced
 * before it returns (SG5). */
int segment_delete(struct segment *seg);

/* segment_delete without the directory fsync: the caller fsyncs the partition directory once
 * for a run of deletions (partition.c PA10) before it reports them. */
int segment_unlink(struct segment *seg);

/* Retention, for a segment no reader holds (refs == 1, out of the partition's list): renames its
 * .log to spare_path for reuse as a later segment (segment_create_recycled) and unlinks its
 * indexes; the directory is fsynced unless !sync_dir (then the caller does, as for
 * segment_unlink). *bytes_out: the file's size. Falls back to nothing: on failure the caller
 * deletes the segment as usual. */
int segment_recycle(struct segment *seg, const char *spare_path, bool sync_dir,
                    uint64_t *bytes_out);

#endif /* RT_SEGMENT_H */
