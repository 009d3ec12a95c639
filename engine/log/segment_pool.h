/*
 * segment_pool.h — the pre-writer: one background thread per writable engine that writes
 * zeros (and, unless sync=none, fdatasyncs them) into each active segment a bounded distance
 * ahead of its writer, so that the writer's own fdatasync flushes data into blocks that are
 * already written and commits no extent metadata (issue 14 item 2; docs/format.md A.6). Under
 * sync=none the zeros only put the pages in the page cache ahead of the writer, and the thread
 * starts writeback behind it (SP6, SP7 in segment_pool.c).
 *
 * It also writes the head of the next segment's file before the roll needs it (a partition's
 * next.log.tmp: its first lead bytes, zeroed and fdatasynced), so a roll renames a file whose
 * first blocks are written instead of creating one whose every block is unwritten.
 *
 * And it unlinks the leftover next-segment files an engine's open found (SP9 in segment_pool.c),
 * so that an open after a crash does not pay a file system's block freeing per partition.
 *
 * It owns only the zeroing thread, its bounded job queue, the list of leftovers and its
 * counters. It never writes at
 * or below a segment's writer end (the claim protocol in segment.c, SG1-SG3), never extends or
 * truncates a file, never decides rolls or deletions, and is never on a shard's round: a shard
 * only pushes a job (one mutex hold, no syscall) when its segment's pre-written
 * frontier is less than half the lead ahead of it.
 */
#ifndef RT_SEGMENT_POOL_H
#define RT_SEGMENT_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct segment;

/* Jobs queued at most; a request beyond it is dropped (counted) and made again at the writer's
 * next claim. One job per segment at a time, so this bounds the partitions being pre-written
 * at once, not the partitions of the engine. */
#define SEGMENT_POOL_JOBS_MAX 1024u

/* The most a segment is pre-written ahead of its writer: 16 MiB, or an eighth of a small
 * segment (at least 64 KiB). One zero write of at most SEGMENT_POOL_CHUNK_BYTES is followed by
 * one fdatasync. */
#define SEGMENT_POOL_LEAD_MAX_BYTES (16u << 20)
#define SEGMENT_POOL_LEAD_MIN_BYTES (64u << 10)
#define SEGMENT_POOL_CHUNK_BYTES    (1u << 20)

/* Under sync=none, writeback is started on what lies this far below the writer's end (SP7): far
 * enough that the writer's next partial page is not under writeback. */
#define SEGMENT_POOL_WRITEBACK_BEHIND_BYTES (4u << 20)

/* Segments smaller than this are not pre-written at all: one rolls every few hundred KiB, and
 * a roll (an fdatasync of the old segment, a directory fsync) costs more than the extent commits
 * pre-writing would save; the lead would also be most of the file. */
#define SEGMENT_POOL_SEGMENT_MIN_BYTES (1u << 20)

struct segment_pool_stats {
    _Atomic uint64_t bytes_written; /* zeros written ahead of writers */
    _Atomic uint64_t fdatasyncs;    /* the pool's own, one per chunk */
    _Atomic uint64_t missed_bytes;  /* appended bytes that landed past a segment's frontier */
    _Atomic uint64_t dropped;       /* requests refused because the queue was full */
    _Atomic uint64_t recycled;      /* segment files renamed into place instead of created */
};

struct segment_pool_job {
    struct segment *seg; /* one reference held by the job; NULL for a next-segment file */
    /* A next-segment file (seg == NULL): `bytes` of zeros written and fdatasynced to
     * dir/SEGMENT_POOL_NEXT_NAME (dir owned by the partition, which outlives the pool's run),
     * then *ready = bytes. */
    const char *dir;
    uint64_t bytes;
    _Atomic uint64_t *ready;
    _Atomic bool *queued;
};

/* SP9: a leftover next-segment file an open found, unlinked on the pool's thread. */
struct segment_pool_leftover {
    struct segment_pool_leftover *next;
    _Atomic bool *pending; /* cleared (release) once the unlink was made */
    char path[];
};

struct segment_pool {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct segment_pool_job jobs[SEGMENT_POOL_JOBS_MAX];
    uint32_t head, count;
    /* SP9: leftovers to unlink, oldest first, after the queued jobs (a list, not the queue: an
     * open of N partitions may hand over N of them, and none is ever dropped for room). */
    struct segment_pool_leftover *leftovers, **leftovers_tail;
    bool stop;
    bool started;
    /* fdatasync each chunk (sync=always/interval: the extent conversion is what the zeros buy)
     * or not (sync=none: the zeros only put the pages in the page cache ahead of the writer,
     * SP6). Set before segment_pool_start. */
    bool sync_zeros;
    /* The engine's fault plan (tests) or NULL: the pool's fdatasyncs go through io_fdatasync so
     * the injector knows what they made durable (segment.c SG4). Set before segment_pool_start. */
    struct io_fault_plan *faults;
    struct segment_pool_stats stats;
};

/* Starts the thread. Returns 0 or -errno. */
int segment_pool_start(struct segment_pool *pool);

/* Stops the thread after the chunk in progress; drops queued jobs (their references go). */
void segment_pool_stop(struct segment_pool *pool);

/* The append-rate window of SP5: a segment's lead is about what its writer appended in the
 * last window (at least SEGMENT_POOL_LEAD_MIN_BYTES, at most segment_pool_lead_bytes). One
 * second: long enough that the pool, which writes one chunk and fdatasyncs it per step, stays
 * ahead of a writer at the disk's speed; short enough that a partition written at 100 KB/s keeps
 * about 100 KB of zeros ahead, not 16 MiB. */
#define SEGMENT_POOL_RATE_WINDOW_MS 1000

/* Bytes a segment of capacity_bytes is kept pre-written ahead of its writer at most (never more
 * than the segment). */
uint64_t segment_pool_lead_bytes(uint64_t capacity_bytes);

/* The lead for a writer at end_bytes (SP5): max(SEGMENT_POOL_LEAD_MIN_BYTES, end_bytes), at most
 * segment_pool_lead_bytes(capacity_bytes). */
uint64_t segment_pool_lead_at(uint64_t capacity_bytes, uint64_t end_bytes);

/* The lead for a writer at end_bytes that appended recent_bytes in the last rate window (SP5):
 * max(SEGMENT_POOL_LEAD_MIN_BYTES, recent_bytes), at most segment_pool_lead_at(...). */
uint64_t segment_pool_lead_recent(uint64_t capacity_bytes, uint64_t end_bytes,
                                  uint64_t recent_bytes);

/* Writer (shard thread): queue seg for pre-writing. Takes a reference; the pool writes through
 * seg->fd (SG3 keeps it open while it does). Never blocks but on the queue's mutex; false when
 * the queue is full. */
bool segment_pool_request(struct segment_pool *pool, struct segment *seg);

/* The next segment's pre-written head in a partition directory: a *.tmp, so an open removes a
 * leftover and verify skips it. */
#define SEGMENT_POOL_NEXT_NAME "next.log.tmp"

/* Writer (shard thread): have the pool write the first `bytes` of the next segment's file,
 * dir/SEGMENT_POOL_NEXT_NAME (zeros, fdatasynced), then store bytes in *ready; *queued is true
 * meanwhile. The roll renames the file into place (segment_create_recycled). false when the
 * queue is full. */
bool segment_pool_request_next(struct segment_pool *pool, const char *dir, uint64_t bytes,
                               _Atomic uint64_t *ready, _Atomic bool *queued);

/* An engine's open (after segment_pool_start, before the shards run): have the pool unlink a
 * leftover next-segment file at `path` (copied) off the open's path, then clear *pending
 * (release). While *pending is set its partition asks for no next-segment file (PA7, SP9).
 * false (nothing queued, *pending untouched) when the pool is not running or out of memory: the
 * caller unlinks it itself. A stop drops what is left (*pending stays set: the partition's close
 * unlinks it, or the next open does: it is a *.tmp). */
bool segment_pool_defer_unlink(struct segment_pool *pool, const char *path, _Atomic bool *pending);

/* Writer (shard thread), before queuing writes that end at `end_bytes`: makes sure no zero write
 * of the pre-writer overlaps them (SG1, SG2), counts the bytes that land past the pre-written
 * frontier, and asks seg's pool for more when the frontier is less than half its lead ahead. */
void segment_pool_claim(struct segment *seg, uint64_t end_bytes);

#endif /* RT_SEGMENT_POOL_H */
