/*
 * segment_pool.c — the pre-writer thread (see segment_pool.h for what it owns and must never
 * do). Why a thread and not the shard's idle time: a chunk's zeros are worthless until they are
 * fdatasynced (the extent conversion is the metadata a later fdatasync would otherwise commit),
 * and an fdatasync of a chunk takes milliseconds; on the shard it would delay the next round by
 * that much, and a round that arrives while it runs would wait behind it. The thread costs one
 * stack, and it competes for the disk with the writers: it writes every byte of a segment once
 * more (as zeros) and fdatasyncs once per chunk.
 *
 * Invariants (the claim protocol is in segment.c: SG1-SG3):
 *   SP1  a chunk starts at or above the segment's writer end as read after the chunk was
 *        claimed (zero_busy stored first, seq_cst), so the writer either sees the claim and waits
 *        for the write to finish, or the pool sees the writer's end and skips the chunk.
 *   SP2  the frontier only grows and is stored only after the chunk's fdatasync returned 0.
 *   SP3  a segment has at most one job (zero_queued), so the queue bounds the work in flight.
 *   SP4  the pool never writes past the segment's capacity (the file's preallocated size), so
 *        it never changes a file's size.
 *   SP5  a segment is pre-written only once its writer has appended SEGMENT_POOL_LEAD_MIN_BYTES
 *        to it, and never more than its current lead ahead of it: max(that minimum, what the
 *        writer appended in the last SEGMENT_POOL_RATE_WINDOW_MS, counting the window in
 *        progress), and never more than what it has appended to this segment nor
 *        segment_pool_lead_bytes (issue 21 F2). The zeros never exceed the data by more than
 *        that minimum per written segment, a slow writer's lead stays near the minimum however
 *        full its segment, and a partition that goes idle gets no more zeros (the pool runs
 *        only after an append): a topic of many lightly written partitions pays (almost)
 *        nothing, and an empty one nothing (its log is sparse: segment.c extend_sparse).
 *   SP6  under sync=none (sync_zeros false) a chunk is written and not fdatasynced: the zeros are
 *        there to put the pages in the page cache before the writer needs them (the kernel's
 *        fresh-page work, ext4_da_write_begin, moves off the round); the frontier then means
 *        "written", not "fdatasynced" (nothing under sync=none relies on the zeros' durability:
 *        past the log's end, zeros and unwritten blocks both read as zeros, L3).
 *   SP7  under sync=none each job, after its zeros, starts writeback (sync_file_range WRITE,
 *        which waits for nothing and promises nothing) of the segment up to 4 MiB below the
 *        writer's end, so the seal's fdatasync at a roll (L2) waits for a little dirty data,
 *        not the whole segment's. It uses seg->fd under fd_busy like a chunk (SG3).
 *   SP8  a chunk's fdatasync goes through a descriptor the pool opens (read-only) for that call
 *        and closes before clearing fd_busy, never through seg->fd: Linux reports a writeback
 *        error once per open file (errseq), so an error the pool met on the writer's own open
 *        file and set aside (a chunk is best effort) would be hidden from the writer's next
 *        fdatasync, which would then succeed although pages of the round it covers were
 *        dropped. On an open file of its own, the error stays owed to the writer's, whose
 *        round then fails (sticky). Cost: an open and a close per chunk, beside its
 *        milliseconds of fdatasync (io.h writeback_errors models it; test_power_dirs.c).
 *   SP9  a leftover next.log.tmp an engine's open found (a crash left it: a clean close removes
 *        them) is not unlinked by the open but handed to the pool (segment_pool_defer_unlink),
 *        which unlinks it when no job is queued, then clears the partition's next_leftover.
 *        Until then the partition asks for no next-segment file (partition_prepare_next, PA7),
 *        so the unlink can never remove a file the pool wrote for it, and a roll never renames
 *        a leftover (it renames only a file whose head the pool reported ready, next_ready_bytes,
 *        which is 0 after an open). Crash safety is the *.tmp rule's (OV4): whichever open, pool
 *        or close removes it, a crash before that leaves a *.tmp the next open finds again. The
 *        saving: an unlink frees the file's blocks (0.7 ms per partition in a crash open of
 *        1 000 partitions here, docs/bench.md), now off the open's path.
 *
 * Costs: one write of zeros per byte appended (from one static 1 MiB zero buffer: no heap;
 * under sync=none to the page cache only: the writer overwrites them long before writeback's
 * 30 s expiry, so the disk sees zeros only for the lead past a segment's end at its seal, at
 * most 16 MiB a segment),
 * one fdatasync per chunk, and the page cache those zeros occupy until the writer overwrites
 * them (at most the lead per segment being written).
 */
#include "segment_pool.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"
#include "segment.h"

static const uint8_t zeros[SEGMENT_POOL_CHUNK_BYTES];

uint64_t segment_pool_lead_bytes(uint64_t capacity_bytes)
{
    uint64_t lead = capacity_bytes / 8;
    if (lead < SEGMENT_POOL_LEAD_MIN_BYTES)
        lead = SEGMENT_POOL_LEAD_MIN_BYTES;
    if (lead > SEGMENT_POOL_LEAD_MAX_BYTES)
        lead = SEGMENT_POOL_LEAD_MAX_BYTES;
    return lead < capacity_bytes ? lead : capacity_bytes;
}

static uint64_t page_up(uint64_t n)
{
    return (n + 4095u) & ~(uint64_t)4095u;
}

uint64_t segment_pool_lead_at(uint64_t capacity_bytes, uint64_t end_bytes)
{
    uint64_t lead = segment_pool_lead_bytes(capacity_bytes);
    uint64_t grown =
        end_bytes > SEGMENT_POOL_LEAD_MIN_BYTES ? end_bytes : SEGMENT_POOL_LEAD_MIN_BYTES;
    return grown < lead ? grown : lead;
}

uint64_t segment_pool_lead_recent(uint64_t capacity_bytes, uint64_t end_bytes,
                                  uint64_t recent_bytes)
{
    uint64_t lead = segment_pool_lead_at(capacity_bytes, end_bytes);
    uint64_t want =
        recent_bytes > SEGMENT_POOL_LEAD_MIN_BYTES ? recent_bytes : SEGMENT_POOL_LEAD_MIN_BYTES;
    return want < lead ? want : lead;
}

static int64_t coarse_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SP5: the writer's append rate over the last whole window (or the window in progress, when it
 * holds more), in bytes per window; updates seg's window at most once per window. Writer only. */
static uint64_t recent_appended(struct segment *seg, uint64_t end_bytes, int64_t now_ms)
{
    if (seg->rate_start_ms == 0) {
        seg->rate_start_ms = now_ms;
        seg->rate_start_bytes = seg->claimed_bytes;
    }
    uint64_t in_window = end_bytes - seg->rate_start_bytes;
    int64_t elapsed = now_ms - seg->rate_start_ms;
    if (elapsed >= SEGMENT_POOL_RATE_WINDOW_MS) {
        /* Scaled to one window, so a writer idle for an hour has a rate near 0, not an hour's. */
        seg->recent_bytes = in_window * SEGMENT_POOL_RATE_WINDOW_MS / (uint64_t)elapsed;
        seg->rate_start_ms = now_ms;
        seg->rate_start_bytes = end_bytes;
        in_window = 0;
    }
    return in_window > seg->recent_bytes ? in_window : seg->recent_bytes;
}

/* SP7 (sync=none only): starts writeback (sync_file_range WRITE: no wait, no durability) of what
 * the writer wrote up to SEGMENT_POOL_WRITEBACK_BEHIND_BYTES below its end, so the seal's
 * fdatasync at the roll (L2) finds little dirty data left instead of the whole segment. */
static void start_writeback(struct segment *seg)
{
    atomic_store(&seg->fd_busy, true); /* SG3: store, then look */
    uint64_t end = atomic_load(&seg->writer_end);
    if (end != UINT64_MAX && end > SEGMENT_POOL_WRITEBACK_BEHIND_BYTES) {
        uint64_t upto = (end - SEGMENT_POOL_WRITEBACK_BEHIND_BYTES) & ~(uint64_t)4095u;
        if (upto > seg->writeback_bytes &&
            sync_file_range(seg->fd, (off_t)seg->writeback_bytes,
                            (off_t)(upto - seg->writeback_bytes), SYNC_FILE_RANGE_WRITE) == 0)
            seg->writeback_bytes = upto;
    }
    atomic_store(&seg->fd_busy, false);
}

/* SP8: fdatasync of seg's log through an open file of the pool's own. Called under fd_busy. */
static bool sync_own(const struct segment *seg)
{
    int fd = open(seg->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = io_fdatasync(seg->cfg.faults, fd) == 0;
    close(fd);
    return ok;
}

/* Writes zeros ahead of seg's writer until it is its lead ahead or the segment is sealing. */
static void prewrite(struct segment_pool *pool, struct segment *seg)
{
    uint64_t cap =
        seg->map_bytes < seg->cfg.capacity_bytes ? seg->map_bytes : seg->cfg.capacity_bytes;
    for (;;) {
        uint64_t end = atomic_load(&seg->writer_end);
        if (end == UINT64_MAX)
            return; /* sealing (SG3) */
        uint64_t lead = atomic_load_explicit(&seg->lead_bytes, memory_order_relaxed); /* SP5 */
        uint64_t frontier = atomic_load_explicit(&seg->zero_frontier, memory_order_acquire);
        uint64_t start = frontier > page_up(end) ? frontier : page_up(end);
        uint64_t goal = page_up(end) + lead < cap ? page_up(end) + lead : cap;
        if (start >= goal)
            return;
        uint64_t len =
            goal - start < SEGMENT_POOL_CHUNK_BYTES ? goal - start : SEGMENT_POOL_CHUNK_BYTES;
        atomic_store(&seg->fd_busy, true);    /* SG3: the descriptor stays open ... */
        atomic_store(&seg->zero_busy, start); /* SP1: claim, then look */
        uint64_t now = atomic_load(&seg->writer_end);
        if (now == UINT64_MAX || now > start) {
            atomic_store(&seg->zero_busy, UINT64_MAX);
            atomic_store(&seg->fd_busy, false);
            if (now == UINT64_MAX)
                return; /* sealing: the descriptor may go */
            continue;   /* the writer got there first: start again above it */
        }
        int fd = seg->fd; /* ... until fd_busy is cleared (seal waits for it) */
        uint64_t done = 0;
        while (done < len) {
            ssize_t n = pwrite(fd, zeros, (size_t)(len - done), (off_t)(start + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            done += (uint64_t)n;
        }
        atomic_store(&seg->zero_busy, UINT64_MAX);
        bool synced = done == len && (!pool->sync_zeros || sync_own(seg)); /* SP6, SP8, SG4 */
        atomic_store(&seg->fd_busy, false);
        if (!synced)
            return; /* best effort: the writer falls back to the unwritten blocks (counted) */
        assert(start + len <= cap);                                                    /* SP4 */
        atomic_store_explicit(&seg->zero_frontier, start + len, memory_order_release); /* SP2 */
        atomic_fetch_add_explicit(&pool->stats.bytes_written, len, memory_order_relaxed);
        if (pool->sync_zeros)
            atomic_fetch_add_explicit(&pool->stats.fdatasyncs, 1, memory_order_relaxed);
    }
}

/* The head of a next segment: a file of job->bytes zeros, fdatasynced, in job->dir. */
static void prewrite_next(struct segment_pool *pool, const struct segment_pool_job *job)
{
    char path[SEGMENT_PATH_BYTES];
    int plen = snprintf(path, sizeof(path), "%s/%s", job->dir, SEGMENT_POOL_NEXT_NAME);
    if (plen < 0 || (size_t)plen >= sizeof(path))
        return;
    /* Its name needs no directory fsync: the roll that renames it into place fsyncs the
     * directory (segment.c SG5), and an open removes a stray one. */
    int fd = io_file_create(pool->faults, path, O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return; /* best effort: the roll creates the file itself (its bytes count as missed) */
    uint64_t done = 0;
    while (done < job->bytes) {
        uint64_t len = job->bytes - done < SEGMENT_POOL_CHUNK_BYTES ? job->bytes - done
                                                                    : SEGMENT_POOL_CHUNK_BYTES;
        ssize_t n = pwrite(fd, zeros, (size_t)len, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (uint64_t)n;
    }
    bool ok = done == job->bytes && io_fdatasync(pool->faults, fd) == 0; /* SG4 */
    close(fd);
    if (!ok) {
        (void)io_unlink(pool->faults, path);
        return;
    }
    atomic_fetch_add_explicit(&pool->stats.bytes_written, job->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->stats.fdatasyncs, 1, memory_order_relaxed);
    atomic_store_explicit(job->ready, job->bytes, memory_order_release);
}

static void job_done(struct segment_pool_job *job)
{
    if (!job->seg) {
        atomic_store_explicit(job->queued, false, memory_order_release);
        return;
    }
    atomic_store_explicit(&job->seg->zero_queued, false, memory_order_release); /* SP3 */
    segment_unref(job->seg);
}

static void *pool_main(void *arg)
{
    struct segment_pool *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->count == 0 && !pool->leftovers && !pool->stop)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop)
            break;
        if (pool->count == 0) { /* SP9: a leftover, when no job waits */
            struct segment_pool_leftover *l = pool->leftovers;
            pool->leftovers = l->next;
            if (!pool->leftovers)
                pool->leftovers_tail = &pool->leftovers;
            pthread_mutex_unlock(&pool->lock);
            (void)io_unlink(pool->faults, l->path); /* ENOENT: gone already, as wanted */
            atomic_store_explicit(l->pending, false, memory_order_release);
            free(l);
            pthread_mutex_lock(&pool->lock);
            continue;
        }
        struct segment_pool_job job = pool->jobs[pool->head];
        pool->head = (pool->head + 1) % SEGMENT_POOL_JOBS_MAX;
        pool->count--;
        pthread_mutex_unlock(&pool->lock);
        if (job.seg) {
            prewrite(pool, job.seg);
            if (!pool->sync_zeros)
                start_writeback(job.seg); /* SP7: after the zeros, which the writer waits for */
        } else
            prewrite_next(pool, &job);
        job_done(&job);
        pthread_mutex_lock(&pool->lock);
    }
    /* Stopping: the queued jobs are dropped, their references released. */
    while (pool->count > 0) {
        struct segment_pool_job job = pool->jobs[pool->head];
        pool->head = (pool->head + 1) % SEGMENT_POOL_JOBS_MAX;
        pool->count--;
        job_done(&job);
    }
    while (pool->leftovers) { /* SP9: left for the close or the next open (a *.tmp) */
        struct segment_pool_leftover *l = pool->leftovers;
        pool->leftovers = l->next;
        free(l);
    }
    pool->leftovers_tail = &pool->leftovers;
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int segment_pool_start(struct segment_pool *pool)
{
    assert(!pool->started);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->head = pool->count = 0;
    pool->leftovers = NULL;
    pool->leftovers_tail = &pool->leftovers;
    pool->stop = false;
    int rc = pthread_create(&pool->thread, NULL, pool_main, pool);
    if (rc) {
        pthread_cond_destroy(&pool->wake);
        pthread_mutex_destroy(&pool->lock);
        return -rc;
    }
    pool->started = true;
    return 0;
}

void segment_pool_stop(struct segment_pool *pool)
{
    if (!pool->started)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = true;
    pthread_cond_signal(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    pthread_join(pool->thread, NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pool->started = false;
}

bool segment_pool_request(struct segment_pool *pool, struct segment *seg)
{
    if (!pool->started)
        return false; /* not running (yet): the writer writes into unwritten blocks, counted */
    assert(seg->fd >= 0);
    if (atomic_exchange_explicit(&seg->zero_queued, true, memory_order_acq_rel))
        return true; /* SP3: already queued */
    pthread_mutex_lock(&pool->lock);
    bool ok = pool->count < SEGMENT_POOL_JOBS_MAX && !pool->stop;
    if (ok) {
        segment_ref(seg);
        pool->jobs[(pool->head + pool->count) % SEGMENT_POOL_JOBS_MAX] =
            (struct segment_pool_job){.seg = seg};
        pool->count++;
        pthread_cond_signal(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
    if (!ok) {
        atomic_store_explicit(&seg->zero_queued, false, memory_order_release);
        atomic_fetch_add_explicit(&pool->stats.dropped, 1, memory_order_relaxed);
    }
    return ok;
}

bool segment_pool_request_next(struct segment_pool *pool, const char *dir, uint64_t bytes,
                               _Atomic uint64_t *ready, _Atomic bool *queued)
{
    if (!pool->started)
        return false;
    assert(bytes > 0);
    if (atomic_exchange_explicit(queued, true, memory_order_acq_rel))
        return true;
    pthread_mutex_lock(&pool->lock);
    bool ok = pool->count < SEGMENT_POOL_JOBS_MAX && !pool->stop;
    if (ok) {
        pool->jobs[(pool->head + pool->count) % SEGMENT_POOL_JOBS_MAX] = (struct segment_pool_job){
            .seg = NULL, .dir = dir, .bytes = bytes, .ready = ready, .queued = queued};
        pool->count++;
        pthread_cond_signal(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
    if (!ok) {
        atomic_store_explicit(queued, false, memory_order_release);
        atomic_fetch_add_explicit(&pool->stats.dropped, 1, memory_order_relaxed);
    }
    return ok;
}

bool segment_pool_defer_unlink(struct segment_pool *pool, const char *path, _Atomic bool *pending)
{
    if (!pool->started)
        return false;
    size_t len = strlen(path);
    struct segment_pool_leftover *l = malloc(sizeof(*l) + len + 1);
    if (!l)
        return false;
    l->next = NULL;
    l->pending = pending;
    memcpy(l->path, path, len + 1);
    pthread_mutex_lock(&pool->lock);
    bool ok = !pool->stop;
    if (ok) {
        *pool->leftovers_tail = l;
        pool->leftovers_tail = &l->next;
        pthread_cond_signal(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
    if (!ok)
        free(l);
    return ok;
}

/* SG1, SG2 (segment.c): the writer's side of the claim protocol. */
void segment_pool_claim(struct segment *seg, uint64_t end_bytes)
{
    assert(!seg->sealed);
    if (!seg->cfg.pool || end_bytes <= seg->claimed_bytes)
        return;
    atomic_store(&seg->writer_end, end_bytes); /* SG1: store, then look */
    while (atomic_load(&seg->zero_busy) < end_bytes)
        sched_yield(); /* the pool is writing one chunk where this write goes: one pwrite */
    uint64_t frontier = atomic_load_explicit(&seg->zero_frontier, memory_order_acquire);
    if (end_bytes > frontier) { /* SG2: appended into blocks nobody pre-wrote */
        uint64_t from = frontier > seg->claimed_bytes ? frontier : seg->claimed_bytes;
        atomic_fetch_add_explicit(&seg->cfg.pool->stats.missed_bytes, end_bytes - from,
                                  memory_order_relaxed);
    }
    seg->claimed_bytes = end_bytes;
    uint64_t cap =
        seg->cfg.capacity_bytes > seg->map_bytes ? seg->map_bytes : seg->cfg.capacity_bytes;
    /* SP5: nothing for a segment that has taken less than the smallest lead (a partition written
     * once costs no zeros), then a lead of about one rate window of its appends, up to the cap. */
    uint64_t recent = recent_appended(seg, end_bytes, coarse_now_ms());
    uint64_t lead = segment_pool_lead_recent(seg->cfg.capacity_bytes, end_bytes, recent);
    atomic_store_explicit(&seg->lead_bytes, lead, memory_order_relaxed);
    if (end_bytes >= SEGMENT_POOL_LEAD_MIN_BYTES && frontier < cap &&
        frontier < end_bytes + lead / 2 &&
        !atomic_load_explicit(&seg->zero_queued, memory_order_acquire))
        (void)segment_pool_request(seg->cfg.pool, seg);
}
