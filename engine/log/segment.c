/*
 * segment.c — one `<base>.log` with its indexes: create, open, recover, note appends, publish,
 * seal, find batches for readers, delete. See segment.h for the concurrency contract.
 *
 * Index entries follow Kafka's LogSegment.append: when more than index_interval_bytes of log
 * were appended since the last entry, the batch about to be counted is indexed as
 * (its last offset, its start position), and the time index gets (max timestamp so far, offset
 * of that timestamp). Recovery replays exactly the same rule, so rebuilt indexes are identical.
 *
 * Costs: recovery reads and CRCs the whole scanned segment (and checks its tail for non-zero
 * bytes to tell a torn write from preallocation); finding a batch is one binary search of the
 * offset index plus a walk of at most index_interval_bytes of batch headers.
 *
 * Pre-writing (issue 14 item 2, issue 21 F2; docs/format.md A.6). An active segment is extended
 * to its capacity sparsely (extend_sparse: no block allocated for what nobody wrote, so an empty
 * partition costs its index files), and, when the engine has a pre-writer (cfg.pool), zeros are
 * written and fdatasynced into it a bounded window ahead of the writer by segment_pool.c (SP5:
 * about a second of the segment's recent appends, at most 16 MiB), so the writer's fdatasync
 * finds written blocks. The writer and the pool share
 * the file through three atomics, and these invariants:
 *   SG1  the writer stores writer_end (seq_cst) before it queues any write below it, then waits
 *        while the pool's claimed chunk (zero_busy) starts below that end: so no zero write ever
 *        lands on a byte the writer has queued (with SP1 in segment_pool.c, a Dekker pair).
 *   SG2  the frontier is a lower bound: [0, zero_frontier) are written blocks that were
 *        fdatasynced (under sync=none only written: SP6 in segment_pool.c); bytes the writer
 *        appends past it are counted (pool missed_bytes) and land in unwritten extents, as
 *        every append did before pre-writing.
 *   SG3  sealing stores writer_end = UINT64_MAX and waits until the pool uses the descriptor no
 *        more (fd_busy clear: its chunk's write and fdatasync done) before its trim and close, so
 *        the pool never writes into a sealed (trimmed) file and holds no descriptor of its own
 *        past fd_busy (it writes through the segment's, kept alive by its reference and by
 *        fd_busy, and fdatasyncs through one it opens and closes inside fd_busy: SP8).
 *   SG4  every fdatasync of a segment's log file outside the shard's rounds (the seal's two, an
 *        active reopen's, the pool's chunks), and of its .txnindex (whose ABORT entries the
 *        rounds write through io/: segment_sync_txn_index, before txn_index_seal's own, then
 *        no-op, fdatasync), goes through io_fdatasync(cfg.faults, fd), on whatever thread runs
 *        it (the shard at a roll, the closing thread after the rings are gone, the pool's
 *        thread): under the fault injector a seal then makes the file durable in its model as
 *        on a real machine, and power loss never rolls back what a seal synced. The offset/time
 *        indexes' syncs stay plain: the injector does not model bytes written outside io/
 *        (they count as durable, io.h).
 *   SG5  every change of a segment's directory entries (the log created, a recycled or
 *        pre-written file renamed into place, a log renamed to the spare, the indexes removed)
 *        goes through io/'s directory calls with cfg.faults and is followed, before the call
 *        returns, by io_fsync_dir of the partition directory: a segment that segment_create
 *        returned, and a deletion segment_delete or segment_recycle reported, survive power
 *        loss by name (the injector's directory-entry model, io.h, undoes what no directory
 *        fsync covered). The indexes themselves are created by index/ with plain open(2),
 *        outside that model; they are derived data that open rebuilds when missing.
 *   SG6  a sealed segment opened on a recovery point's word with its files' sizes (open_lazy:
 *        the stamps hold now) opens, maps and reads nothing at open but a non-empty .txnindex;
 *        its end, largest timestamp and index entry counts come from the entry. Its log and
 *        indexes are mapped by the first segment_map (double-checked under map_lock, published
 *        by a release store of `mapped`), and every use of map, oidx_map and tidx_map comes
 *        after a segment_map that returned 0: partition_segment_for/after do it for every
 *        reader, and the open's and the writer's walks before they read. Mappings once made
 *        stay while any reference but the list's is held (SG8), so a reader's pointers need
 *        only its reference. So a clean open touches O(partitions) files and maps none of a
 *        sealed segment nobody reads (issue 21 item 6). A file may have grown since (the newest
 *        segment of a dormant partition is reopened active by a wake, PA11, while a reader
 *        holds the sealed object): its first size_bytes and its first published index entries
 *        are what was trusted, so only a shorter file is refused. A read-only engine opens such
 *        a segment lazily too (its first segment_map maps the files read-only; there is no
 *        budget to attach to, MM1, so the mapping stays until the close): `ringtail consume`,
 *        `topic list` and `txn list` of a big directory no longer open and map three files per
 *        segment (which would pass vm.max_map_count's 65 530 mappings past ~21 000 segments).
 *   SG7  a seal of an empty segment (size_bytes 0) makes only the trim durable: the log's
 *        fdatasync after its trim and the indexes' own; there is nothing before it to sync.
 *   SG8  the mappings of an attached sealed segment (segment_maps.h MM1) are released by
 *        segment_release_maps only while refs == 1 (the list's reference alone), and mapped
 *        again by the next segment_map, SG6's path. Every user of a sealed segment's bytes
 *        holds a reference of its own from before its segment_map to after its last use
 *        (readers through partition_segment_for/after, the writer through segment_pin), and
 *        the two sides are a Dekker pair: a user increments refs (seq_cst, segment_ref) and
 *        then loads `mapped` (seq_cst); the release stores mapped = false (seq_cst) under
 *        map_lock and then loads refs (seq_cst), restoring mapped when refs != 1. So either the
 *        release sees the user's reference and leaves the mapping, or the user sees mapped
 *        false and waits on map_lock for the release to finish, then maps again; no pointer
 *        into a released mapping is ever used.
 *   SG9  what a lazily opened segment's first reader finds. Damage made before the open moved a
 *        stamp, so the segment was not opened lazily: the open checked it as it checks any
 *        segment (OV1-OV3, L4: a misshapen or missing index rebuilt, a damaged log reported
 *        naming the file and the batch's offset), and verify reports the same files. A change
 *        made after the open (a .log now shorter than trusted, an index missing, misshapen or
 *        holding fewer entries than trusted) is refused by segment_map with RT_E_CORRUPT naming
 *        that file and a byte offset in it (for a misshapen index the offset verify names), and
 *        every reader of the segment gets that error (the fetch keeps segment_map's detail);
 *        nothing is rebuilt under a running engine, whose readers may hold the old mappings.
 *        The next open sees the moved stamps and judges the files as any open does, as verify
 *        does (a sound, sparser index is accepted by both; a misshapen one reported by verify
 *        and rebuilt by the open). Bits that rot under unchanged stamps: RT4 (format.md A.7).
 *   SG10 a recovery (recover_log) cuts the file at the log's end (ftruncate, then extended
 *        sparsely again) and makes the cut durable (SG4) only when the cut changes a byte: not
 *        when the tail window after the end reads all zeros (SC5's SEGMENT_TAIL_ZERO: no torn
 *        or stale bytes) and no block past that window holds data (lseek SEEK_DATA finds none:
 *        holes, unwritten extents; dirty page-cache pages count as data, so a crashed run's
 *        unsynced write out there is seen). The argument for bytes past the window, which the
 *        scan does not read: a file system reports every byte it cannot prove a hole as data,
 *        so "no data" means every such byte reads as zero now and after any power loss (no
 *        write is pending there; what a power loss can bring back is only what a durable write
 *        put there before, and a durable non-zero block is data). Inside the window the bytes
 *        read zero; the only zeros ever written over non-zero bytes are SH10's overwrite of a
 *        failed round, which it fdatasyncs (or fails the engine for good: the dead-disk case
 *        limits.md names), and the pre-writer's, which land only on holes or zeros (SG1, and a
 *        recycled file's frontier starts at its old size). So the file already is what the cut
 *        would make it, durably, and nothing is cut. When the window held data past it (a
 *        pre-writer lead longer than the window: big segments) or anything non-zero, the cut
 *        and its fdatasync stay. An uncut recovery then skips its fdatasync too when the
 *        engine may publish unsynced bytes (cfg.recovery_sync_lazy: sync other than always;
 *        the partition is marked unsynced, PA19) or when the recovery point's tail (durable,
 *        A.7 RP6) reaches the log's end; under sync=always with bytes past the tail the
 *        fdatasync stays, since every byte an engine publishes under sync=always is durable.
 * A recycled file (segment_recycle, segment_create_recycled) starts with its frontier at its old
 * size: those blocks are written, and hold the stale batches of the segment it was (RS1).
 */
#include "segment.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "error.h"
#include "fsutil.h"
#include "meta.h"
#include "segment_cache.h"
#include "segment_check.h"
#include "io/io.h"

static int segment_paths(struct segment *seg, const char *partition_dir, char *index_path,
                         char *time_path)
{
    char log_path[SEGMENT_PATH_BYTES];
    int rc = meta_segment_file(log_path, sizeof(log_path), partition_dir, seg->base_offset, "log");
    if (rc == 0 && !(seg->log_path = strdup(log_path)))
        rc = -ENOMEM;
    if (rc == 0)
        rc = meta_segment_file(index_path, SEGMENT_PATH_BYTES, partition_dir, seg->base_offset,
                               "index");
    if (rc == 0)
        rc = meta_segment_file(time_path, SEGMENT_PATH_BYTES, partition_dir, seg->base_offset,
                               "timeindex");
    return rc;
}

static struct segment *segment_alloc(int64_t base_offset, const struct segment_config *cfg)
{
    struct segment *seg = calloc(1, sizeof(*seg));
    if (!seg)
        return NULL;
    seg->base_offset = base_offset;
    seg->fd = -1;
    seg->oidx.file.fd = -1;
    seg->tidx.file.fd = -1;
    seg->txns.fd = -1;
    seg->next_offset = base_offset;
    seg->max_timestamp_offset = base_offset;
    atomic_init(&seg->max_timestamp_ms, -1);
    atomic_init(&seg->mapped, true); /* SG6: only a lazy open clears it */
    atomic_init(&seg->mm_used, false);
    atomic_init(&seg->mm_wanted, false);
    atomic_init(&seg->mm_linked, false);
    pthread_mutex_init(&seg->map_lock, NULL);
    atomic_init(&seg->refs, 1);
    atomic_init(&seg->doomed, false);
    atomic_init(&seg->readable_bytes, 0);
    atomic_init(&seg->oidx_published, 0);
    atomic_init(&seg->tidx_published, 0);
    atomic_init(&seg->zero_frontier, 0);
    atomic_init(&seg->writer_end, 0);
    atomic_init(&seg->zero_busy, UINT64_MAX);
    atomic_init(&seg->fd_busy, false);
    atomic_init(&seg->zero_queued, false);
    atomic_init(&seg->lead_bytes, 0); /* set by the writer's first claim (SP5) */
    seg->cfg = *cfg;
    seg->created_ms = fs_now_ms();
    return seg;
}

/* OS1 (segment_cache.h): a segment is counted while it holds its log descriptor. */
static void count_open(struct segment *seg)
{
    if (seg->fd >= 0 && !atomic_load_explicit(&seg->cache_counted, memory_order_relaxed)) {
        atomic_store_explicit(&seg->cache_counted, true, memory_order_relaxed);
        segment_cache_opened(seg->cfg.cache);
    }
}

/* Exactly once per count, whoever comes first: the writer dropping the descriptor, the
 * partition's close (segment_uncount), or the last reference's free. */
static void uncount_open(struct segment *seg)
{
    if (atomic_exchange_explicit(&seg->cache_counted, false, memory_order_acq_rel))
        segment_cache_closed(seg->cfg.cache);
}

void segment_uncount(struct segment *seg)
{
    uncount_open(seg);
}

static void segment_free(struct segment *seg)
{
    if (seg->cfg.maps)
        seg->cfg.maps_ops->forget(seg); /* MM1: normally done when its list let it go */
    uncount_open(seg);
    if (seg->map)
        munmap((void *)seg->map, seg->map_bytes);
    /* An active segment let go without a seal (a failed open, a close after a write error):
     * give its preallocated space back. Every byte ever written lies below size_bytes, so this
     * cuts only never-written blocks; a crash leaves them to recovery instead. */
    if (seg->fd >= 0 && seg->preallocated && !seg->sealed)
        (void)!ftruncate(seg->fd, (off_t)seg->size_bytes);
    if (seg->fd >= 0)
        close(seg->fd);
    /* Safe on closed indexes; a sealed index has no descriptor but still a mapping. */
    offset_index_close(&seg->oidx);
    time_index_close(&seg->tidx);
    txn_index_close(&seg->txns);
    free(seg->log_path);
    pthread_mutex_destroy(&seg->map_lock);
    free(seg);
}

/* A sealed segment is served from its mappings alone: its log descriptor goes (the indexes
 * drop theirs when sealed or opened read-only). So open descriptors are bounded by the active
 * segments (4 each), not by the segments in the directory (docs/limits.md). */
static void segment_drop_fd(struct segment *seg)
{
    if (seg->fd >= 0)
        close(seg->fd);
    seg->fd = -1;
    uncount_open(seg);
}

static int txn_path(const struct segment *seg, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%.*stxnindex", (int)(strlen(seg->log_path) - 3), seg->log_path);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

/* Opens the segment's .txnindex: writable for the active segment, repaired (cut to its valid
 * prefix) when the segment is being recovered or the file is damaged, read-only otherwise (a
 * missing file is an empty index, as Kafka creates it lazily). Whether its entries are the
 * segment's ABORT markers is checked by the partition (check_txn_indexes). */
static int open_txns(struct segment *seg, bool writable, bool repair)
{
    char path[SEGMENT_PATH_BYTES];
    int rc = txn_path(seg, path, sizeof(path));
    if (rc)
        return rc;
    const char *why = NULL;
    uint32_t bad = 0;
    unsigned flags =
        (writable ? TXN_INDEX_WRITABLE : 0) | (writable && repair ? TXN_INDEX_REPAIR : 0);
    if (seg->cfg.read_only)
        flags = TXN_INDEX_MEMORY | (repair ? TXN_INDEX_REPAIR : 0); /* changes stay in memory */
    rc = txn_index_open(&seg->txns, path, seg->base_offset, flags, &why, &bad);
    if (rc == -EBADMSG && !repair) {
        /* Derived data (SC4 in segment_check.c): cut it to its valid prefix; the partition
         * then finds it short of its segment's ABORT markers and rebuilds it. */
        unsigned fix = seg->cfg.read_only ? TXN_INDEX_MEMORY : TXN_INDEX_WRITABLE;
        rc = txn_index_open(&seg->txns, path, seg->base_offset, fix | TXN_INDEX_REPAIR, &why, &bad);
    }
    if (rc == -EBADMSG)
        return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": entry %u: %s", path,
                         (uint64_t)bad * TXN_INDEX_ENTRY_BYTES, bad, why ? why : "damaged");
    if (rc)
        return error_set(rc, "%s: cannot open: %s", path, strerror(-rc));
    return 0;
}

/* Extends the log file to `bytes` (never shortens it), sparse: the mapping and the roll rule see
 * a file of its capacity, but no block is allocated for what nobody wrote (issue 21 F2: a new or
 * idle partition costs what it holds, as Kafka without log.preallocate). The pre-writer writes
 * a bounded window of zeros ahead of the writer (SP5); past it the file is a hole, which reads
 * as zeros (format.md A.6, L3) and is allocated by the write that lands there. Cost: a write into
 * a hole allocates at write time (ENOSPC then fails that write, as it would under Kafka), where
 * a fallocate'd file failed at the roll. */
static int extend_sparse(int fd, uint64_t bytes)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    if ((uint64_t)st.st_size >= bytes)
        return 0;
    return ftruncate(fd, (off_t)bytes) == 0 ? 0 : -errno;
}

/* Index capacity: index_size_max_bytes, but no more than a segment can fill (one entry per
 * index_interval_bytes of log), since writable indexes reserve their blocks up front. */
static size_t index_capacity(const struct segment_config *cfg)
{
    uint64_t entries = cfg->capacity_bytes / cfg->index_interval_bytes + 2;
    uint64_t bytes = entries * TIME_INDEX_ENTRY_BYTES; /* the larger of the two entry sizes */
    return bytes < cfg->index_size_max_bytes ? (size_t)bytes : cfg->index_size_max_bytes;
}

static int map_log(struct segment *seg, uint64_t bytes)
{
    if (seg->map) {
        munmap((void *)seg->map, seg->map_bytes);
        seg->map = NULL;
        seg->map_bytes = 0;
    }
    if (bytes == 0)
        return 0;
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, seg->fd, 0);
    if (m == MAP_FAILED)
        return -errno;
    seg->map = m;
    seg->map_bytes = bytes;
    return 0;
}

/* Read-only engines: empty writable indexes in memory (replaced files are never touched). */
static int memory_indexes(struct segment *seg)
{
    offset_index_close(&seg->oidx);
    time_index_close(&seg->tidx);
    int rc = offset_index_open_memory(&seg->oidx, seg->base_offset, index_capacity(&seg->cfg));
    if (rc == 0)
        rc = time_index_open_memory(&seg->tidx, seg->base_offset, index_capacity(&seg->cfg));
    if (rc)
        return error_set(rc, "%s: cannot build indexes in memory: %s", seg->log_path,
                         strerror(-rc));
    return 0;
}

/* segment_create, and segment_create_recycled when spare_path is set. */
static int create_segment(struct segment **out, const char *partition_dir, int64_t base_offset,
                          const struct segment_config *cfg, const char *spare_path,
                          uint64_t spare_bytes)
{
    assert(base_offset >= 0);
    assert(cfg->capacity_bytes > BATCH_HEADER_BYTES);
    struct segment *seg = segment_alloc(base_offset, cfg);
    if (!seg)
        return -ENOMEM;
    char index_path[SEGMENT_PATH_BYTES], time_path[SEGMENT_PATH_BYTES];
    int rc = segment_paths(seg, partition_dir, index_path, time_path);
    if (rc)
        goto err;
    if (cfg->read_only) {
        rc = memory_indexes(seg);
        if (rc == 0)
            rc = open_txns(seg, false, false);
        if (rc) {
            segment_free(seg);
            return rc;
        }
        seg->sealed = true;
        segment_publish(seg);
        *out = seg;
        return 0;
    }
    if (spare_path) {
        /* RS1: a former segment's log becomes this one. Its written blocks are kept (that is
         * the point: no zeros to write, no extents to convert); its stale batches all have base
         * offsets below base_offset, so recovery and verify end the log where they begin. */
        assert(spare_bytes > 0);
        rc = io_rename(cfg->faults, spare_path, seg->log_path); /* SG5 */
        if (rc) {
            error_set(rc, "%s: cannot rename to %s: %s", spare_path, seg->log_path, strerror(-rc));
            (void)io_unlink(cfg->faults, spare_path);
            goto err;
        }
        seg->fd = open(seg->log_path, O_RDWR | O_CLOEXEC);
        if (seg->fd >= 0 && spare_bytes > cfg->capacity_bytes &&
            ftruncate(seg->fd, (off_t)cfg->capacity_bytes) != 0) {
            close(seg->fd);
            seg->fd = -1;
        }
        if (spare_bytes > cfg->capacity_bytes)
            spare_bytes = cfg->capacity_bytes;
        if (seg->fd < 0)
            seg->fd = -errno;
    } else {
        seg->fd = io_file_create(cfg->faults, seg->log_path, O_RDWR | O_TRUNC, 0644); /* SG5 */
    }
    if (seg->fd < 0) {
        rc = error_set(seg->fd, "%s: cannot create: %s", seg->log_path, strerror(-seg->fd));
        seg->fd = -1;
        goto err;
    }
    atomic_store_explicit(&seg->zero_frontier, spare_bytes,
                          memory_order_relaxed); /* SG2: a new file has no written block */
    rc = extend_sparse(seg->fd, cfg->capacity_bytes);
    if (rc) {
        error_set(rc, "%s: cannot extend to %" PRIu64 " bytes: %s", seg->log_path,
                  cfg->capacity_bytes, strerror(-rc));
        goto err;
    }
    seg->preallocated = true;
    rc = map_log(seg, cfg->capacity_bytes);
    if (rc)
        goto err;
    (void)io_unlink(cfg->faults, index_path);
    (void)io_unlink(cfg->faults, time_path);
    rc = offset_index_open(&seg->oidx, index_path, base_offset, index_capacity(cfg), true, 0);
    if (rc) {
        error_set(rc, "%s: cannot create: %s", index_path, strerror(-rc));
        goto err;
    }
    rc = time_index_open(&seg->tidx, time_path, base_offset, index_capacity(cfg), true, 0);
    if (rc) {
        error_set(rc, "%s: cannot create: %s", time_path, strerror(-rc));
        goto err;
    }
    char txns[SEGMENT_PATH_BYTES];
    if (txn_path(seg, txns, sizeof(txns)) == 0)
        (void)io_unlink(cfg->faults, txns); /* a leftover of an earlier life of this base */
    rc = open_txns(seg, true, false);
    if (rc)
        goto err;
    rc = fs_fsync_dir(cfg->faults, partition_dir); /* SG5: the new names are durable */
    if (rc)
        goto err;
    seg->oidx_map = seg->oidx.file.map;
    seg->tidx_map = seg->tidx.file.map;
    count_open(seg);
    *out = seg;
    return 0;
err:
    segment_free(seg);
    if (rc != -ENAMETOOLONG) {
        /* Leave nothing half made (a roll that met EMFILE is retried by the next append). */
        const char *exts[] = {"log", "index", "timeindex", "txnindex"};
        char path[SEGMENT_PATH_BYTES];
        for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
            if (meta_segment_file(path, sizeof(path), partition_dir, base_offset, exts[i]) == 0)
                (void)io_unlink(cfg->faults, path);
    }
    return rc;
}

int segment_create_dormant(struct segment **out, const char *partition_dir, int64_t base_offset,
                           const struct segment_config *cfg)
{
    assert(base_offset >= 0 && !cfg->read_only);
    struct segment *seg = segment_alloc(base_offset, cfg);
    if (!seg)
        return -ENOMEM;
    char index_path[SEGMENT_PATH_BYTES], time_path[SEGMENT_PATH_BYTES], txns[SEGMENT_PATH_BYTES];
    int rc = segment_paths(seg, partition_dir, index_path, time_path);
    if (rc == 0)
        rc = txn_path(seg, txns, sizeof(txns));
    if (rc) {
        segment_free(seg);
        return rc;
    }
    /* Three empty files: an empty .log, and empty indexes (C.1/C.2: no entry), which a wake
     * reopens writable at capacity. The .txnindex is created by the wake (E.3: missing is
     * empty); a leftover of an earlier life of this base goes. */
    const char *paths[] = {seg->log_path, index_path, time_path};
    for (size_t i = 0; i < 3 && rc == 0; i++) {
        int fd = io_file_create(cfg->faults, paths[i], O_RDWR | O_TRUNC, 0644); /* SG5 */
        if (fd < 0)
            rc = error_set(fd, "%s: cannot create: %s", paths[i], strerror(-fd));
        else
            close(fd);
    }
    if (rc == 0) {
        (void)io_unlink(cfg->faults, txns);
        rc = fs_fsync_dir(cfg->faults, partition_dir); /* SG5 */
    }
    if (rc) {
        for (size_t i = 0; i < 3; i++)
            (void)io_unlink(cfg->faults, paths[i]);
        segment_free(seg);
        return rc;
    }
    seg->sealed = true; /* PA11's dormant state: no descriptor, nothing mapped (nothing to map) */
    segment_publish(seg);
    *out = seg;
    return 0;
}

int segment_create(struct segment **out, const char *partition_dir, int64_t base_offset,
                   const struct segment_config *cfg)
{
    return create_segment(out, partition_dir, base_offset, cfg, NULL, 0);
}

int segment_create_recycled(struct segment **out, const char *partition_dir, int64_t base_offset,
                            const struct segment_config *cfg, const char *spare_path,
                            uint64_t spare_bytes)
{
    assert(!cfg->read_only);
    return create_segment(out, partition_dir, base_offset, cfg, spare_path, spare_bytes);
}

void segment_note_append(struct segment *seg, const struct batch_header *h, uint64_t position,
                         uint64_t size_bytes)
{
    assert(position == seg->size_bytes);
    /* Dense, but for a segment the cleaner wrote (CL1, docs/format.md A.9). */
    assert(seg->cfg.gaps_ok ? h->base_offset >= seg->next_offset
                            : h->base_offset == seg->next_offset);
    int64_t last = batch_last_offset(h);
    if (h->max_timestamp > atomic_load_explicit(&seg->max_timestamp_ms, memory_order_relaxed)) {
        atomic_store_explicit(&seg->max_timestamp_ms, h->max_timestamp, memory_order_relaxed);
        seg->max_timestamp_offset = last;
    }
    if (seg->bytes_since_index > seg->cfg.index_interval_bytes) {
        /* Both appends can only fail when full (the partition rolls before that) or on a
         * non-increasing entry, which the offset and position checks above rule out. */
        int rc = offset_index_append(&seg->oidx, last, (uint32_t)position);
        assert(rc == 0 || rc == -ENOSPC);
        rc = time_index_append(&seg->tidx,
                               atomic_load_explicit(&seg->max_timestamp_ms, memory_order_relaxed),
                               seg->max_timestamp_offset);
        assert(rc == 0 || rc == -ENOSPC);
        (void)rc;
        seg->bytes_since_index = 0;
    }
    seg->bytes_since_index += size_bytes;
    seg->last_batch_position = position;
    seg->size_bytes = position + size_bytes;
    seg->next_offset = last + 1;
}

void segment_publish(struct segment *seg)
{
    if (!atomic_load_explicit(&seg->mapped, memory_order_acquire))
        return; /* SG6: sealed and published by its lazy open; nothing to add */
    atomic_store_explicit(&seg->oidx_published, seg->oidx.file.entries, memory_order_release);
    atomic_store_explicit(&seg->tidx_published, seg->tidx.file.entries, memory_order_release);
    atomic_store_explicit(&seg->readable_bytes, seg->size_bytes, memory_order_release);
}

uint64_t segment_free_bytes(const struct segment *seg)
{
    uint64_t cap =
        seg->cfg.capacity_bytes > seg->map_bytes ? seg->map_bytes : seg->cfg.capacity_bytes;
    return cap > seg->size_bytes ? cap - seg->size_bytes : 0;
}

int segment_reserve_indexes(struct segment *seg, uint32_t entries_more)
{
    int rc = index_file_reserve(&seg->oidx.file, seg->oidx.file.entries + entries_more);
    if (rc == 0)
        rc = index_file_reserve(&seg->tidx.file, seg->tidx.file.entries + entries_more);
    if (rc)
        return error_set(rc, "%s: cannot reserve index blocks: %s", seg->log_path, strerror(-rc));
    return 0;
}

bool segment_index_full(const struct segment *seg)
{
    return offset_index_full(&seg->oidx) || time_index_full(&seg->tidx);
}

/* SG3: no zero write or fdatasync of the pool after this returns (and none in progress). */
static void claim_all(struct segment *seg)
{
    atomic_store(&seg->writer_end, UINT64_MAX);
    while (atomic_load(&seg->zero_busy) != UINT64_MAX || atomic_load(&seg->fd_busy))
        sched_yield();
}

int segment_sync_txn_index(struct segment *seg)
{
    if (!seg->txns.writable || seg->txns.fd < 0)
        return 0;
    return io_fdatasync(seg->cfg.faults, seg->txns.fd);
}

int segment_sync_prefix(struct segment *seg)
{
    assert(!seg->sealed && seg->fd >= 0);
    int rc = io_fdatasync(seg->cfg.faults, seg->fd); /* SG4 */
    if (rc == 0)
        rc = index_file_sync(&seg->oidx.file);
    if (rc == 0)
        rc = index_file_sync(&seg->tidx.file);
    if (rc == 0)
        rc = segment_sync_txn_index(seg); /* SG4 */
    if (rc)
        return error_set(rc, "%s: syncing for a recovery point: %s", seg->log_path, strerror(-rc));
    return 0;
}

int segment_seal(struct segment *seg)
{
    if (seg->sealed)
        return 0;
    claim_all(seg);
    /* SG7: an empty segment (a new or idle partition's) has no batch to make durable before
     * the trim and no ABORT marker, so no .txnindex entry: its seal skips both of those
     * fdatasyncs (the trim's, below, still runs). */
    bool empty = seg->size_bytes == 0;
    int rc = empty ? 0 : io_fdatasync(seg->cfg.faults, seg->fd); /* SG4 */
    if (rc)
        return error_set(rc, "%s: fdatasync: %s", seg->log_path, strerror(-rc));
    int64_t max_ts = atomic_load_explicit(&seg->max_timestamp_ms, memory_order_relaxed);
    if (max_ts >= 0) {
        int trc = time_index_append(&seg->tidx, max_ts, seg->max_timestamp_offset);
        if (trc == -ENOSPC) {
            /* A full time index keeps its last entry; lookups then scan a little further. */
        }
    }
    if (ftruncate(seg->fd, (off_t)seg->size_bytes) != 0)
        return error_set(-errno, "%s: ftruncate: %s", seg->log_path, strerror(errno));
    rc = offset_index_seal(&seg->oidx);
    if (rc == 0)
        rc = time_index_seal(&seg->tidx);
    if (rc == 0 && !empty)
        rc = segment_sync_txn_index(seg); /* SG4: its entries were written by the rounds */
    if (rc == 0)
        rc = txn_index_seal(&seg->txns);
    if (rc)
        return error_set(rc, "%s: sealing indexes: %s", seg->log_path, strerror(-rc));
    rc = io_fdatasync(seg->cfg.faults, seg->fd); /* SG4: the trim */
    if (rc)
        return error_set(rc, "%s: fdatasync: %s", seg->log_path, strerror(-rc));
    seg->sealed = true;
    segment_drop_fd(seg);
    segment_publish(seg);
    return 0;
}

/* A torn write's first bytes (its header) are non-zero, so a window much smaller than a batch
 * still tells it from preallocated zeros; truncated_bytes is then a lower bound. */
#define RECOVERY_TAIL_WINDOW_BYTES SEGMENT_TAIL_WINDOW_BYTES

static int segment_scan_from(struct segment *seg, uint64_t limit, struct segment_recovery *rec);

/* SG10: true when [from, to) of the log reads as zeros, reading only the file's data extents
 * through the map (lseek SEEK_DATA / SEEK_HOLE; holes read as zeros and are not faulted in);
 * false when a byte is not zero, or the extents cannot be listed (the caller then reads the
 * window whole, SC5). */
static bool zero_extents(const struct segment *seg, uint64_t from, uint64_t to)
{
    if (seg->fd < 0 || !seg->map)
        return false;
    uint64_t at = from;
    while (at < to) {
        off_t d = lseek(seg->fd, (off_t)at, SEEK_DATA);
        if (d < 0)
            return errno == ENXIO; /* no data from here to the end of the file */
        if ((uint64_t)d >= to)
            return true;
        off_t h = lseek(seg->fd, d, SEEK_HOLE);
        if (h < 0 || h <= d)
            return false;
        uint64_t end = (uint64_t)h < to ? (uint64_t)h : to;
        for (uint64_t i = (uint64_t)d; i < end; i++)
            if (seg->map[i])
                return false;
        at = end;
    }
    return true;
}

/* Walks the log from 0 (to `limit`), validating each batch, rebuilding the indexes. A batch that
 * stops the walk is reported in *rec (the caller cuts the tail there); a CRC-valid batch whose
 * offsets the index cannot hold is not a torn write and fails the scan with RT_E_CORRUPT. */
static int segment_scan(struct segment *seg, uint64_t limit, struct segment_recovery *rec)
{
    offset_index_reset(&seg->oidx);
    time_index_reset(&seg->tidx);
    seg->size_bytes = 0;
    seg->next_offset = seg->base_offset;
    seg->bytes_since_index = 0;
    atomic_store_explicit(&seg->max_timestamp_ms, -1, memory_order_relaxed);
    seg->max_timestamp_offset = seg->base_offset;
    memset(rec, 0, sizeof(*rec));
    return segment_scan_from(seg, limit, rec);
}

/* segment_scan's walk, from the segment's current end (size_bytes, next_offset, indexes and
 * largest timestamp as they describe [0, size_bytes)). */
static int segment_scan_from(struct segment *seg, uint64_t limit, struct segment_recovery *rec)
{
    uint64_t pos = seg->size_bytes;
    while (pos < limit) {
        const char *why = NULL;
        int64_t size = batch_size_at(seg->map + pos, limit - pos, &why);
        if (size < 0) {
            rec->why = why;
            break;
        }
        struct batch_header h;
        int rc = batch_validate_stored(seg->map + pos, (size_t)size, seg->cfg.gaps_ok, &h, &why);
        if (rc) {
            rec->why = why;
            break;
        }
        if (seg->cfg.gaps_ok ? h.base_offset < seg->next_offset
                             : h.base_offset != seg->next_offset) { /* CL1 */
            rec->why = "batch base offset is not the next offset";
            break;
        }
        if (pos + (uint64_t)size > INT32_MAX) {
            rec->why = "segment larger than 2 GiB (index positions are i32)";
            break;
        }
        if (batch_last_offset(&h) - seg->base_offset > INT32_MAX)
            return error_set(RT_E_CORRUPT,
                             "%s: offset %" PRIu64 ": batch ends at offset %" PRId64
                             ", beyond the segment's base + INT32_MAX (offset index entries "
                             "are i32); not repaired",
                             seg->log_path, pos, batch_last_offset(&h));
        segment_note_append(seg, &h, pos, (uint64_t)size);
        pos += (uint64_t)size;
    }
    rec->valid_bytes = pos;
    rec->next_offset = seg->next_offset;
    /* Tell a torn write from preallocated zeros by looking at a bounded window after the last
     * valid batch (a torn batch is at most one batch long; reading a whole preallocated 1 GiB
     * segment would make every crash recovery slow). Everything after pos is cut and re-zeroed
     * anyway. */
    uint64_t window =
        limit - pos < RECOVERY_TAIL_WINDOW_BYTES ? limit - pos : RECOVERY_TAIL_WINDOW_BYTES;
    uint64_t found = 0;
    enum segment_tail tail =
        zero_extents(seg, pos, pos + window)
            ? SEGMENT_TAIL_ZERO /* SG10: its holes were not read */
            : segment_tail_classify(seg->map, limit, pos, window, seg->next_offset,
                                    &found); /* SC5, as verify decides */
    if (tail == SEGMENT_TAIL_TORN) {
        uint64_t end = pos + window;
        while (end > pos && seg->map[end - 1] == 0)
            end--;
        rec->truncated_bytes = end - pos;
    } else {
        /* Only preallocated or pre-written zeros, or a recycled file's stale batches (RS1),
         * followed the last batch: the end of the log, not damage. */
        rec->stale = tail == SEGMENT_TAIL_STALE;
        rec->why = NULL;
    }
    return 0;
}

/* Checks a sealed index against the log; false if it must be rebuilt. */
static bool indexes_sound(struct segment *seg)
{
    const char *why = NULL;
    uint32_t bad = 0;
    if (offset_index_check(seg->oidx.file.map,
                           (size_t)seg->oidx.file.entries * OFFSET_INDEX_ENTRY_BYTES,
                           seg->size_bytes, &why, &bad) != 0)
        return false;
    if (time_index_check(seg->tidx.file.map,
                         (size_t)seg->tidx.file.entries * TIME_INDEX_ENTRY_BYTES, &why, &bad) != 0)
        return false;
    return true;
}

/* segment_open, step 1: the log's descriptor and its mapping (the whole file; nothing is read).
 * *file_bytes_out: the file's size. */
static int open_log(struct segment *seg, bool recover, uint64_t *file_bytes_out)
{
    seg->fd = open(seg->log_path, (seg->cfg.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (seg->fd < 0)
        return error_set(-errno, "%s: cannot open: %s", seg->log_path, strerror(errno));
    struct stat st;
    if (fstat(seg->fd, &st) != 0)
        return -errno;
    uint64_t file_bytes = (uint64_t)st.st_size;
    if (file_bytes > INT32_MAX && !recover)
        return error_set(RT_E_CORRUPT, "%s: offset 0: segment larger than 2 GiB", seg->log_path);
    *file_bytes_out = file_bytes;
    return map_log(seg, file_bytes);
}

/* Closes and removes both indexes and opens them again empty and writable, to be rebuilt. */
static int reset_indexes(struct segment *seg, const char *index_path, const char *time_path)
{
    offset_index_close(&seg->oidx); /* safe when closed; a read-only one has no fd */
    time_index_close(&seg->tidx);
    (void)io_unlink(seg->cfg.faults, index_path);
    (void)io_unlink(seg->cfg.faults, time_path);
    size_t cap = index_capacity(&seg->cfg);
    int rc = offset_index_open(&seg->oidx, index_path, seg->base_offset, cap, true, 0);
    if (rc == 0)
        rc = time_index_open(&seg->tidx, time_path, seg->base_offset, cap, true, 0);
    return rc;
}

/* What segment_open's index step decided. */
struct open_state {
    bool active;
    bool recover;         /* the log is scanned (a read-only open may turn it on, below) */
    bool writable_index;  /* the indexes are open for writing (sealed again when not active) */
    bool rebuild_indexes; /* the indexes were missing or misshapen: rebuild from a whole log */
    uint32_t oidx_live;   /* live entries to open the indexes with (UINT32_MAX: the file's) */
    uint32_t tidx_live;
};

/* segment_open, step 2: the offset and time indexes. A writable index is reopened at capacity;
 * its live entries are those the clean trim left (file size / entry size). A missing or
 * misshapen one is derived data: rebuilt from the log (in memory when read-only). */
static int open_indexes(struct segment *seg, const char *index_path, const char *time_path,
                        struct open_state *st)
{
    bool read_only = seg->cfg.read_only;
    size_t cap = index_capacity(&seg->cfg);
    int rc;
    if (read_only && st->recover) {
        rc = memory_indexes(seg); /* the scan rebuilds them */
        if (rc)
            return rc;
    } else {
        rc = offset_index_open(&seg->oidx, index_path, seg->base_offset, cap, st->writable_index,
                               st->oidx_live);
        if (rc == 0)
            rc = time_index_open(&seg->tidx, time_path, seg->base_offset, cap, st->writable_index,
                                 st->tidx_live);
    }
    if ((rc == -EBADMSG || rc == -ENOENT) && read_only) {
        /* Rebuilt in memory by the scan; a read-only open never cuts, so scanning a sealed log
         * here changes nothing on disk. */
        rc = memory_indexes(seg);
        if (rc)
            return rc;
        st->recover = true;
    } else if (rc == -EBADMSG || rc == -ENOENT) {
        rc = reset_indexes(seg, index_path, time_path);
        /* Rebuilt by the recovery scan when the segment is recovered anyway, else only from a
         * log that is whole (a sealed log is never cut because an index was lost). */
        st->rebuild_indexes = !st->recover;
        st->writable_index = true;
    }
    if (rc)
        return error_set(rc, "%s: cannot open indexes: %s", seg->log_path, strerror(-rc));
    return 0;
}

static void adopt_checked(struct segment *seg, uint64_t file_bytes, int64_t next_offset,
                          int64_t max_timestamp, int64_t max_timestamp_offset);

/* A recovery point's tail (PA9 in partition.h; A.7 RP6), checked before the scan starts past it:
 * the indexes opened with exactly the recorded entries, those entries sound and below its end,
 * and its last batch whole and CRC-valid, ending at its end with the recorded next offset.
 * Reads one batch and the recorded index entries (1/4096 of the prefix at the default interval),
 * nothing else of the prefix. Cheap evidence that the files are the ones the tail describes; the
 * prefix itself was fdatasynced before the tail was stored, as a sealed segment's bytes were. */
static bool tail_holds(const struct segment *seg, uint64_t file_bytes,
                       const struct segment_trust *t, uint64_t *last_batch_out)
{
    bool walk = t->last_batch_position == UINT64_MAX; /* a sealed entry's: found below */
    if (t->bytes > file_bytes || t->bytes > INT32_MAX ||
        (!walk && t->last_batch_position >= t->bytes))
        return false;
    if (seg->oidx.file.entries != t->index_entries ||
        seg->tidx.file.entries != t->timeindex_entries)
        return false;
    const char *why = NULL;
    uint32_t bad = 0;
    if (offset_index_check(seg->oidx.file.map,
                           (size_t)seg->oidx.file.entries * OFFSET_INDEX_ENTRY_BYTES, t->bytes,
                           &why, &bad) != 0 ||
        time_index_check(seg->tidx.file.map,
                         (size_t)seg->tidx.file.entries * TIME_INDEX_ENTRY_BYTES, &why, &bad) != 0)
        return false;
    /* The index rule (segment_note_append) indexes a batch once more than the interval was
     * appended since the last entry: so the prefix's last batch starts at most one interval
     * past the last entry (an entry count that is short fails here). */
    uint64_t last_indexed = 0;
    int64_t last_indexed_offset = seg->base_offset - 1;
    if (seg->oidx.file.entries > 0) {
        int64_t off;
        uint32_t pos;
        offset_index_entry(&seg->oidx, seg->oidx.file.entries - 1, &off, &pos);
        if (off >= t->next_offset || pos >= t->bytes)
            return false;
        last_indexed = pos;
        last_indexed_offset = off;
    }
    /* The file still begins with this segment's first batch, whole and CRC-valid: a header
     * damaged there after the crash (its stamps moved with the appends) is seen, and the scan
     * from 0 cuts it, as before any tail (test_damage, crashed). One batch more read. */
    {
        struct batch_header h0;
        int64_t size0 = batch_size_at(seg->map, t->bytes, &why);
        if (size0 < 0 ||
            batch_validate_stored(seg->map, (size_t)size0, seg->cfg.gaps_ok, &h0, &why) != 0 ||
            h0.base_offset != seg->base_offset)
            return false;
    }
    uint64_t at = t->last_batch_position;
    if (walk) {
        /* Headers from the last indexed batch to the end: at most one interval and a batch. */
        at = last_indexed;
        for (;;) {
            int64_t size = batch_size_at(seg->map + at, t->bytes - at, &why);
            if (size < 0 || at - last_indexed > seg->cfg.index_interval_bytes)
                return false;
            if (at + (uint64_t)size == t->bytes)
                break;
            at += (uint64_t)size;
        }
    }
    if (at < last_indexed || at - last_indexed > seg->cfg.index_interval_bytes)
        return false;
    if (seg->tidx.file.entries > 0) {
        int64_t ts, off;
        time_index_entry(&seg->tidx, seg->tidx.file.entries - 1, &ts, &off);
        if (off >= t->next_offset || ts > t->max_timestamp)
            return false;
    }
    int64_t size = batch_size_at(seg->map + at, t->bytes - at, &why);
    struct batch_header h;
    if (size < 0 || (uint64_t)size != t->bytes - at ||
        batch_validate_stored(seg->map + at, (size_t)size, seg->cfg.gaps_ok, &h, &why) != 0)
        return false;
    if (batch_last_offset(&h) + 1 != t->next_offset || h.base_offset < seg->base_offset ||
        h.max_timestamp > t->max_timestamp ||
        (at == last_indexed && seg->oidx.file.entries > 0 &&
         batch_last_offset(&h) != last_indexed_offset))
        return false;
    *last_batch_out = at;
    return true;
}

/* SG10: true when no block of the file from `from` on holds data (holes and unwritten extents
 * only: lseek SEEK_DATA finds none, dirty pages in the page cache counted as data); false when one
 * does or the file system cannot tell (a file system without SEEK_DATA reports all of it data). */
static bool no_data_from(int fd, uint64_t from, uint64_t file_bytes)
{
    if (from >= file_bytes)
        return true;
    return lseek(fd, (off_t)from, SEEK_DATA) < 0 && errno == ENXIO;
}

/* segment_open, step 3 (recover): scan the log from byte 0 — or from a recovery point's tail
 * that holds (tail_holds) — and cut a torn or corrupt tail (and let the file system zero it:
 * leftover bytes past a shorter rewrite must never parse as batches at the next recovery). */
static int recover_log(struct segment *seg, uint64_t *file_bytes, const struct segment_trust *t,
                       struct segment_recovery *rec)
{
    int rc;
    bool tail = t && t->bytes > 0 && seg->map;
    /* No read-around while the tail is checked and walked: a fault would otherwise read up to
     * the device's read-ahead window (8 MiB here) of the prefix nobody needs. */
    if (tail)
        (void)madvise((void *)seg->map, seg->map_bytes, MADV_RANDOM);
    uint64_t last_batch = 0;
    if (tail && tail_holds(seg, *file_bytes, t, &last_batch)) {
        memset(rec, 0, sizeof(*rec));
        adopt_checked(seg, t->bytes, t->next_offset, t->max_timestamp, t->max_timestamp_offset);
        seg->last_batch_position = last_batch;
        rec->tail_from_bytes = t->bytes;
        rc = segment_scan_from(seg, *file_bytes, rec);
        (void)madvise((void *)seg->map, seg->map_bytes, MADV_NORMAL);
    } else {
        if (tail)
            (void)madvise((void *)seg->map, seg->map_bytes, MADV_NORMAL);
        rc = segment_scan(seg, *file_bytes, rec);
        rec->tail_rejected = t && t->bytes > 0;
    }
    if (rc)
        return rc;
    /* SG10: nothing to cut when every byte past the log's end reads as zero already. */
    rec->uncut = !seg->cfg.read_only && rec->truncated_bytes == 0 && !rec->stale &&
                 *file_bytes <= (seg->cfg.capacity_bytes > seg->size_bytes ? seg->cfg.capacity_bytes
                                                                           : seg->size_bytes) &&
                 no_data_from(seg->fd, seg->size_bytes + RECOVERY_TAIL_WINDOW_BYTES, *file_bytes);
    if (rec->uncut && *file_bytes > seg->size_bytes) {
        /* SG10: what the walk and the zero check faulted in past the end goes from the page
         * cache as the cut would have taken it (clean pages; unmapped first, so the advice
         * reaches them). */
        uint64_t from = (seg->size_bytes + 4095u) & ~(uint64_t)4095u;
        uint64_t to = seg->size_bytes + RECOVERY_TAIL_WINDOW_BYTES;
        to = to < *file_bytes ? to : *file_bytes;
        if (to > from && to <= seg->map_bytes) {
            (void)madvise((void *)(seg->map + from), to - from, MADV_DONTNEED);
            (void)posix_fadvise(seg->fd, (off_t)from, (off_t)(to - from), POSIX_FADV_DONTNEED);
        }
    }
    if (seg->size_bytes < *file_bytes && !seg->cfg.read_only && !rec->uncut) {
        if (ftruncate(seg->fd, (off_t)seg->size_bytes) != 0)
            return error_set(-errno, "%s: ftruncate: %s", seg->log_path, strerror(errno));
        *file_bytes = seg->size_bytes;
    }
    return 0;
}

/* A checked segment's end and largest timestamp, from the check or the recovery point. */
static void adopt_checked(struct segment *seg, uint64_t file_bytes, int64_t next_offset,
                          int64_t max_timestamp, int64_t max_timestamp_offset)
{
    seg->size_bytes = file_bytes;
    atomic_store_explicit(&seg->max_timestamp_ms, max_timestamp, memory_order_relaxed);
    seg->max_timestamp_offset = max_timestamp_offset;
    seg->next_offset = next_offset;
    uint64_t last_indexed = 0;
    if (seg->oidx.file.entries > 0) {
        int64_t off;
        uint32_t p;
        offset_index_entry(&seg->oidx, seg->oidx.file.entries - 1, &off, &p); /* one page */
        last_indexed = p;
    }
    seg->bytes_since_index = file_bytes - last_indexed;
}

/* Walks a sealed log's batches (headers only) from 0; true when they end exactly at its end. */
static bool log_whole(const struct segment *seg, uint64_t file_bytes, uint64_t *pos_out,
                      const char **why_out)
{
    uint64_t pos = 0;
    int64_t expect = seg->base_offset;
    const char *why = NULL;
    while (pos < file_bytes) {
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, file_bytes - pos, &why);
        if (size < 0 ||
            batch_validate_stored(seg->map + pos, (size_t)size, seg->cfg.gaps_ok, &h, &why) != 0)
            break;
        if (seg->cfg.gaps_ok ? h.base_offset < expect : h.base_offset != expect) { /* CL1 */
            why = "batch base offset is not the next offset";
            break;
        }
        expect = batch_last_offset(&h) + 1;
        pos += (uint64_t)size;
    }
    *pos_out = pos;
    *why_out = why ? why : "damaged batch";
    return pos == file_bytes;
}

/* segment_open, step 3 (a segment open trusts): SC1, SC2, SC3, the check verify makes too
 * (segment_check.c). A damaged log is refused, never cut; damaged indexes are rebuilt from a
 * whole log. Cost: one walk of every batch header (and a CRC of every batch when an index must
 * be rebuilt). */
static int check_log(struct segment *seg, const char *index_path, const char *time_path,
                     uint64_t file_bytes, struct open_state *st, struct segment_recovery *rec)
{
    seg->size_bytes = file_bytes;
    struct segment_check chk;
    segment_check_run_gaps(seg->map, file_bytes, seg->base_offset, false, seg->cfg.gaps_ok,
                           seg->oidx.file.map, seg->oidx.file.entries, seg->tidx.file.map,
                           seg->tidx.file.entries, &chk);
    if (chk.log_rc)
        return error_set(RT_E_CORRUPT,
                         "%s: offset %" PRIu64 ": %s (a sealed or cleanly closed segment must "
                         "hold whole valid batches to its end; not repaired)",
                         seg->log_path, chk.log_bad_position, chk.log_why);
    if (!st->rebuild_indexes && indexes_sound(seg) && chk.oidx_bad == SEGMENT_CHECK_SOUND &&
        chk.tidx_bad == SEGMENT_CHECK_SOUND) {
        adopt_checked(seg, file_bytes, chk.next_offset, chk.max_timestamp,
                      chk.max_timestamp_offset);
        return 0;
    }
    /* Rebuild only from a log that is whole: a sealed segment (SC1) must consist of valid
     * batches to its last byte. A damaged one is reported, never cut. */
    uint64_t pos = 0;
    const char *why = NULL;
    if (!log_whole(seg, file_bytes, &pos, &why))
        return error_set(RT_E_CORRUPT,
                         "%s: offset %" PRIu64 ": %s (a sealed segment must hold whole "
                         "valid batches to its end; not repaired)",
                         seg->log_path, pos, why);
    int rc;
    if (seg->cfg.read_only) {
        rc = memory_indexes(seg);
    } else {
        rc = reset_indexes(seg, index_path, time_path);
        st->writable_index = true; /* sealed again below, so the rebuilt files are trimmed */
    }
    if (rc == 0)
        rc = segment_scan(seg, file_bytes, rec);
    return rc;
}

/* segment_open, step 4 (active): extend the log back to capacity and map it whole. */
static int make_active(struct segment *seg, uint64_t file_bytes, bool recovered,
                       struct segment_recovery *rec)
{
    /* SG2: what lies below the data is written; what lies past it may be preallocated. */
    atomic_store_explicit(&seg->zero_frontier, seg->size_bytes, memory_order_relaxed);
    atomic_store_explicit(&seg->writer_end, seg->size_bytes, memory_order_relaxed);
    seg->claimed_bytes = seg->size_bytes;
    uint64_t cap =
        seg->cfg.capacity_bytes > seg->size_bytes ? seg->cfg.capacity_bytes : seg->size_bytes;
    if (cap > file_bytes) {
        int rc = extend_sparse(seg->fd, cap);
        if (rc)
            return error_set(rc, "%s: cannot extend: %s", seg->log_path, strerror(-rc));
    }
    seg->preallocated = true;
    int rc = map_log(seg, cap);
    if (rc)
        return rc;
    seg->cfg.capacity_bytes = cap;
    /* A recovery's cut (recover_log) is made durable before anything is appended over it (SG4).
     * An open that cut nothing leaves the extension to the first round's fdatasync (which
     * flushes the size its data needs): an open of N idle partitions then costs no flush per
     * partition (issue 21 item 7: 1 000 partitions took seconds on a loaded disk). SG10: a
     * recovery that had nothing to cut changed no byte; its fdatasync is left to the partition
     * (rec->sync_left) when the log below its end was already durable (the recovery point's
     * tail reaches it) or the engine may leave published bytes unsynced (sync other than
     * always). */
    if (recovered && rec->uncut &&
        (seg->cfg.recovery_sync_lazy || seg->size_bytes <= rec->tail_from_bytes)) {
        rec->sync_left = seg->size_bytes > rec->tail_from_bytes;
        return 0;
    }
    return recovered ? io_fdatasync(seg->cfg.faults, seg->fd) : 0; /* SG4 */
}

/* segment_open, step 4 (sealed): a recovered or rebuilt older segment is sealed again so its
 * files are trimmed; then it keeps no log descriptor. */
static int reseal(struct segment *seg, bool writable_index)
{
    if (writable_index) {
        int rc = offset_index_seal(&seg->oidx);
        if (rc == 0)
            rc = time_index_seal(&seg->tidx);
        if (rc == 0)
            rc = segment_sync_txn_index(seg);
        if (rc == 0)
            rc = txn_index_seal(&seg->txns);
        if (rc)
            return rc;
    }
    seg->sealed = true;
    segment_drop_fd(seg);
    return 0;
}

/* A path beside the log: `<base>.<ext>`. */
static int sibling_path(const struct segment *seg, const char *ext, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%.*s%s", (int)(strlen(seg->log_path) - 3), seg->log_path, ext);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

/* segment_open of a sealed segment a recovery point vouches for with its files' sizes (SG6):
 * nothing is opened but a non-empty .txnindex (its ABORT entries serve every fetch's aborted
 * list); the log and indexes are mapped by the first segment_map. */
static int open_lazy(struct segment *seg, const char *partition_dir, const struct segment_trust *t,
                     struct segment_recovery *rec)
{
    char index_path[SEGMENT_PATH_BYTES], time_path[SEGMENT_PATH_BYTES];
    int rc = segment_paths(seg, partition_dir, index_path, time_path);
    if (rc == 0 && t->file_bytes[RECOVERY_TXNINDEX] > 0)
        rc = open_txns(seg, false, false);
    if (rc)
        return rc;
    seg->size_bytes = t->file_bytes[RECOVERY_LOG];
    seg->next_offset = t->next_offset;
    atomic_store_explicit(&seg->max_timestamp_ms, t->max_timestamp, memory_order_relaxed);
    seg->max_timestamp_offset = t->max_timestamp_offset;
    seg->sealed = true;
    rec->trusted = true;
    atomic_store_explicit(&seg->oidx_published,
                          (uint32_t)(t->file_bytes[RECOVERY_INDEX] / OFFSET_INDEX_ENTRY_BYTES),
                          memory_order_relaxed);
    atomic_store_explicit(&seg->tidx_published,
                          (uint32_t)(t->file_bytes[RECOVERY_TIMEINDEX] / TIME_INDEX_ENTRY_BYTES),
                          memory_order_relaxed);
    atomic_store_explicit(&seg->readable_bytes, seg->size_bytes, memory_order_relaxed);
    atomic_store_explicit(&seg->mapped, false, memory_order_release);
    return 0;
}

int segment_map(struct segment *seg)
{
    /* The CLOCK's mark (segment_maps.h): one load, a store only the first time. */
    if (!atomic_load_explicit(&seg->mm_used, memory_order_relaxed))
        atomic_store_explicit(&seg->mm_used, true, memory_order_relaxed);
    if (atomic_load(&seg->mapped)) /* seq_cst: SG8's Dekker pair with segment_release_maps */
        return 0;
    pthread_mutex_lock(&seg->map_lock);
    int rc = 0;
    bool made = false;
    if (!atomic_load_explicit(&seg->mapped, memory_order_relaxed)) {
        char index_path[SEGMENT_PATH_BYTES], time_path[SEGMENT_PATH_BYTES];
        uint32_t oidx = atomic_load_explicit(&seg->oidx_published, memory_order_relaxed);
        uint32_t tidx = atomic_load_explicit(&seg->tidx_published, memory_order_relaxed);
        rc = sibling_path(seg, "index", index_path, sizeof(index_path));
        if (rc == 0)
            rc = sibling_path(seg, "timeindex", time_path, sizeof(time_path));
        int fd = rc ? -1 : open(seg->log_path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (rc == 0 && fd < 0 && errno == ENOENT &&
            atomic_load_explicit(&seg->doomed, memory_order_acquire))
            rc = error_set(RT_E_OFFSET_OUT_OF_RANGE, "%s: deleted by retention", seg->log_path);
        else if (rc == 0 && (fd < 0 || fstat(fd, &st) != 0))
            rc = error_set(-errno, "%s: cannot open: %s", seg->log_path, strerror(errno));
        else if (rc == 0 && (uint64_t)st.st_size < seg->size_bytes) /* SG6: may have grown */
            rc = error_set(RT_E_CORRUPT,
                           "%s: offset %" PRIu64 ": the sealed segment changed size since the open "
                           "trusted it (%" PRIu64 " bytes now)",
                           seg->log_path, seg->size_bytes, (uint64_t)st.st_size);
        void *m = NULL;
        if (rc == 0 && seg->size_bytes > 0) {
            m = mmap(NULL, seg->size_bytes, PROT_READ, MAP_SHARED, fd, 0);
            if (m == MAP_FAILED) {
                m = NULL;
                rc = error_set(-errno, "%s: cannot map: %s", seg->log_path, strerror(errno));
            }
        }
        if (fd >= 0)
            close(fd);
        int irc = 0;
        const char *failed = index_path; /* the index irc speaks of */
        if (rc == 0)
            irc = offset_index_open(&seg->oidx, index_path, seg->base_offset, 0, false, oidx);
        if (rc == 0 && irc == 0) {
            failed = time_path;
            irc = time_index_open(&seg->tidx, time_path, seg->base_offset, 0, false, tidx);
        }
        /* SG9: not the files the recovery point stamped (changed under the running engine, as
         * the open's stamps would have seen before it): refused naming the index and the byte
         * offset up to which the open trusted it; the next open's stamps see it and rebuild. */
        bool oidx_short = irc == 0 && seg->oidx.file.entries < oidx;
        bool tidx_short = irc == 0 && !oidx_short && seg->tidx.file.entries < tidx;
        if (oidx_short || tidx_short)
            rc = error_set(RT_E_CORRUPT,
                           "%s: offset %" PRIu64
                           ": the index changed since the open trusted it (%u entries now, %u "
                           "trusted)",
                           oidx_short ? index_path : time_path,
                           oidx_short ? (uint64_t)oidx * OFFSET_INDEX_ENTRY_BYTES
                                      : (uint64_t)tidx * TIME_INDEX_ENTRY_BYTES,
                           oidx_short ? seg->oidx.file.entries : seg->tidx.file.entries,
                           oidx_short ? oidx : tidx);
        else if (irc == -EBADMSG || irc == -ENOENT) {
            /* The offset verify names: where the first partial entry begins (0 when missing). */
            struct stat ist;
            uint64_t eb = failed == index_path ? OFFSET_INDEX_ENTRY_BYTES : TIME_INDEX_ENTRY_BYTES;
            uint64_t at = stat(failed, &ist) == 0 ? (uint64_t)ist.st_size / eb * eb : 0;
            rc = error_set(RT_E_CORRUPT,
                           "%s: offset %" PRIu64
                           ": the index changed since the open trusted it (%s)",
                           failed, at, irc == -ENOENT ? "missing" : "misshapen");
        } else if (irc)
            rc = error_set(irc, "%s: cannot open indexes: %s", seg->log_path, strerror(-irc));
        if (rc) {
            if (m)
                munmap(m, seg->size_bytes);
            offset_index_close(&seg->oidx);
            time_index_close(&seg->tidx);
        } else {
            seg->map = m;
            seg->map_bytes = m ? seg->size_bytes : 0;
            seg->oidx_map = seg->oidx.file.map;
            seg->tidx_map = seg->tidx.file.map;
            atomic_store(&seg->mapped, true); /* seq_cst: MM1's pair with segment_maps_attach */
            made = true;
        }
    }
    bool again = made && seg->mm_released;
    pthread_mutex_unlock(&seg->map_lock);
    if (made && seg->cfg.maps) /* MM1: into the ring, then a sweep if over the budget */
        seg->cfg.maps_ops->mapped(seg, again);
    return rc;
}

int segment_pin(struct segment *seg)
{
    segment_ref(seg);
    int rc = segment_map(seg);
    if (rc)
        segment_unref(seg);
    return rc;
}

void segment_unpin(struct segment *seg)
{
    segment_unref(seg);
}

bool segment_release_maps(struct segment *seg)
{
    pthread_mutex_lock(&seg->map_lock);
    bool released = true;
    if (atomic_load_explicit(&seg->mapped, memory_order_relaxed)) {
        atomic_store(&seg->mapped, false); /* SG8: seq_cst, then refs (seq_cst) */
        if (atomic_load(&seg->refs) != 1) {
            atomic_store_explicit(&seg->mapped, true, memory_order_release); /* a reader holds it */
            released = false;
        } else {
            if (seg->map)
                munmap((void *)seg->map, seg->map_bytes);
            seg->map = NULL;
            seg->map_bytes = 0;
            offset_index_close(&seg->oidx); /* a sealed index: its mapping only */
            time_index_close(&seg->tidx);
            seg->oidx_map = NULL;
            seg->tidx_map = NULL;
            seg->mm_released = true;
        }
    }
    pthread_mutex_unlock(&seg->map_lock);
    return released;
}

int segment_open(struct segment **out, const char *partition_dir, int64_t base_offset,
                 const struct segment_config *cfg, bool active, bool recover,
                 const struct segment_trust *trust, struct segment_recovery *rec)
{
    struct segment_recovery local;
    if (!rec)
        rec = &local;
    memset(rec, 0, sizeof(*rec));
    struct segment *seg = segment_alloc(base_offset, cfg);
    if (!seg)
        return -ENOMEM;
    char index_path[SEGMENT_PATH_BYTES], time_path[SEGMENT_PATH_BYTES];
    uint64_t file_bytes = 0;
    struct open_state st = {
        .active = active && !cfg->read_only, /* read-only: served as it is, never extended */
        .recover = recover,
    };
    st.writable_index = (st.active || recover) && !cfg->read_only;
    st.oidx_live = st.tidx_live = UINT32_MAX;
    if (recover && trust && trust->bytes > 0) {
        /* A tail (PA9): the entries past it describe bytes the scan will walk again. */
        st.oidx_live = trust->index_entries;
        st.tidx_live = trust->timeindex_entries;
    }
    if (!active && !recover && trust && trust->sized && trust->next_offset >= base_offset) {
        int lrc = open_lazy(seg, partition_dir, trust, rec); /* SG6 */
        if (lrc) {
            segment_free(seg);
            return lrc;
        }
        *out = seg;
        return 0;
    }
    int rc = segment_paths(seg, partition_dir, index_path, time_path);
    if (rc == 0)
        rc = open_log(seg, recover, &file_bytes);
    if (rc == 0)
        rc = open_indexes(seg, index_path, time_path, &st);
    if (rc == 0)
        rc = open_txns(seg, (st.active || st.recover) && !cfg->read_only, st.recover);
    if (rc)
        goto err;
    if (st.recover) {
        rc = recover_log(seg, &file_bytes, trust, rec);
    } else if (trust && !st.rebuild_indexes && trust->next_offset >= base_offset) {
        /* RP (recovery_point.h): checked at its seal and unchanged since; nothing is read. */
        adopt_checked(seg, file_bytes, trust->next_offset, trust->max_timestamp,
                      trust->max_timestamp_offset);
        rec->trusted = true;
    } else {
        rc = check_log(seg, index_path, time_path, file_bytes, &st, rec);
    }
    if (rc)
        goto err;
    rc = st.active ? make_active(seg, file_bytes, st.recover, rec) : reseal(seg, st.writable_index);
    if (rc)
        goto err;
    seg->oidx_map = seg->oidx.file.map;
    seg->tidx_map = seg->tidx.file.map;
    segment_publish(seg);
    count_open(seg);
    *out = seg;
    return 0;
err:
    segment_free(seg);
    return rc;
}

bool segment_check_sealed(const struct segment *seg, uint64_t from_bytes, int64_t from_offset)
{
    assert(seg->sealed);
    assert(from_bytes <= seg->size_bytes);
    if (!seg->map && seg->size_bytes > 0)
        return false;
    struct segment_check chk;
    if (from_bytes > 0) {
        /* [0, from_bytes) was checked at its earlier seal (and vouched for since): walk the
         * batches appended after it, then the indexes' structure (their pages only). */
        segment_check_run_gaps(seg->map + from_bytes, seg->size_bytes - from_bytes, from_offset,
                               false, seg->cfg.gaps_ok, NULL, 0, NULL, 0, &chk);
        return chk.log_rc == 0 && chk.data_bytes == seg->size_bytes - from_bytes &&
               chk.next_offset == seg->next_offset && indexes_sound((struct segment *)seg);
    }
    segment_check_run_gaps(seg->map, seg->size_bytes, seg->base_offset, false, seg->cfg.gaps_ok,
                           seg->oidx.file.map, seg->oidx.file.entries, seg->tidx.file.map,
                           seg->tidx.file.entries, &chk);
    return chk.log_rc == 0 && chk.data_bytes == seg->size_bytes &&
           chk.next_offset == seg->next_offset && chk.oidx_bad == SEGMENT_CHECK_SOUND &&
           chk.tidx_bad == SEGMENT_CHECK_SOUND && indexes_sound((struct segment *)seg);
}

/* A reader's view of an index: the mapping (stable for the segment's life: sealing trims the
 * file but never remaps) limited to the published entries. Built field by field so a reader
 * never reads the writer's live counters. */
static struct offset_index offset_view(struct segment *seg)
{
    uint32_t n = atomic_load_explicit(&seg->oidx_published, memory_order_acquire);
    struct offset_index v = {
        .file = index_file_view(seg->oidx_map, n, OFFSET_INDEX_ENTRY_BYTES, seg->base_offset)};
    return v;
}

static struct time_index time_view(struct segment *seg)
{
    uint32_t n = atomic_load_explicit(&seg->tidx_published, memory_order_acquire);
    struct time_index v = {
        .file = index_file_view(seg->tidx_map, n, TIME_INDEX_ENTRY_BYTES, seg->base_offset)};
    return v;
}

int segment_find_batch(struct segment *seg, int64_t offset, uint64_t end, uint64_t *pos_out)
{
    if (end > seg->map_bytes)
        end = seg->map_bytes;
    struct offset_index view = offset_view(seg);
    int64_t idx_offset = seg->base_offset;
    uint32_t idx_pos = 0;
    offset_index_lookup(&view, offset, &idx_offset, &idx_pos);
    uint64_t pos = idx_pos;
    while (pos < end) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, end - pos, &why);
        if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
            return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
        if (batch_last_offset(&h) >= offset) {
            *pos_out = pos;
            return 0;
        }
        pos += (uint64_t)size;
    }
    return RT_E_OFFSET_OUT_OF_RANGE;
}

uint64_t segment_batch_floor(struct segment *seg, uint64_t position)
{
    struct offset_index view = offset_view(seg);
    uint32_t lo = 0, hi = view.file.entries; /* first entry whose position > position */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t off;
        uint32_t pos;
        offset_index_entry(&view, mid, &off, &pos);
        if (pos <= position)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    int64_t off;
    uint32_t pos;
    offset_index_entry(&view, lo - 1, &off, &pos);
    return pos;
}

int segment_find_timestamp(struct segment *seg, int64_t ts_ms, uint64_t end, uint64_t *pos_out)
{
    if (end > seg->map_bytes)
        end = seg->map_bytes;
    struct time_index tview = time_view(seg);
    int64_t found = 0, floor_offset = seg->base_offset;
    (void)time_index_lookup(&tview, ts_ms, &found, &floor_offset);
    uint64_t pos = 0;
    if (floor_offset > seg->base_offset && segment_find_batch(seg, floor_offset, end, &pos) != 0)
        pos = 0;
    while (pos < end) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(seg->map + pos, end - pos, &why);
        if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
            return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos, why);
        if (h.max_timestamp >= ts_ms) {
            *pos_out = pos;
            return 0;
        }
        pos += (uint64_t)size;
    }
    return RT_E_END;
}

void segment_ref(struct segment *seg)
{
    int before = atomic_fetch_add(&seg->refs, 1); /* seq_cst: SG8 */
    assert(before > 0);
    (void)before;
}

void segment_unref(struct segment *seg)
{
    /* MM2: read before the reference goes (after it, only the list may hold seg). */
    struct segment_maps *maps = seg->cfg.maps;
    bool wanted = maps && atomic_load_explicit(&seg->mm_wanted, memory_order_relaxed);
    int before = atomic_fetch_sub_explicit(&seg->refs, 1, memory_order_acq_rel);
    assert(before > 0);
    if (before == 1)
        segment_free(seg);
    else if (before == 2 && wanted)
        seg->cfg.maps_ops->sweep(maps); /* its last reader let go: release it if still over */
}

static void segment_dir(const struct segment *seg, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s", seg->log_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
}

int segment_delete(struct segment *seg)
{
    char dir[SEGMENT_PATH_BYTES];
    segment_dir(seg, dir, sizeof(dir));
    int rc = segment_unlink(seg);
    int src = fs_fsync_dir(seg->cfg.faults, dir); /* SG5 */
    return rc ? rc : src;
}

int segment_unlink(struct segment *seg)
{
    char dir[SEGMENT_PATH_BYTES];
    segment_dir(seg, dir, sizeof(dir));
    char path[SEGMENT_PATH_BYTES];
    int rc = 0;
    const char *exts[] = {"log", "index", "timeindex", "txnindex"};
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        if (meta_segment_file(path, sizeof(path), dir, seg->base_offset, exts[i]) == 0) {
            int urc = io_unlink(seg->cfg.faults, path);
            if (urc && urc != -ENOENT && rc == 0)
                rc = urc;
        }
    }
    atomic_store_explicit(&seg->doomed, true, memory_order_release);
    return rc;
}

int segment_recycle(struct segment *seg, const char *spare_path, bool sync_dir, uint64_t *bytes_out)
{
    assert(seg->sealed);
    assert(atomic_load_explicit(&seg->refs, memory_order_acquire) == 1);
    char dir[SEGMENT_PATH_BYTES];
    snprintf(dir, sizeof(dir), "%s", seg->log_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    struct stat st;
    if (stat(seg->log_path, &st) != 0)
        return -errno;
    int rc = io_rename(seg->cfg.faults, seg->log_path, spare_path);
    if (rc)
        return rc;
    /* The indexes go as in segment_delete; the log lives on under spare_path (RS2: a name no
     * reader or open ever takes for a segment, removed at open as a leftover *.tmp). */
    char path[SEGMENT_PATH_BYTES];
    const char *exts[] = {"index", "timeindex", "txnindex"};
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
        if (meta_segment_file(path, sizeof(path), dir, seg->base_offset, exts[i]) == 0)
            (void)io_unlink(seg->cfg.faults, path);
    atomic_store_explicit(&seg->doomed, true, memory_order_release);
    *bytes_out = (uint64_t)st.st_size;
    return sync_dir ? fs_fsync_dir(seg->cfg.faults, dir) : 0; /* SG5 */
}
