/*
 * engine.c — rt_open/rt_close, options, the directory lock, topics, appends, stats.
 *
 * Open: validate options → take the lock (flock on <dir>/.lock, exclusive, non-blocking: it
 * conflicts across processes and across handles in one process) → load the catalogue → note
 * and remove the clean-shutdown marker (durably, before anything is written) → open every
 * partition (recovering the newest segment unless the marker was there) → start the shards.
 * Close: stop the shards (every queued append finishes) → seal the active segments → if no
 * write ever failed, write the clean-shutdown marker → release the lock.
 *
 * This file never touches io_uring or segment bytes directly.
 */
#include "engine.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "group.h"
#include "records.h"

#define SHARDS_MAX 64

static const struct topic *topic_find(rt_engine *e, const char *name);
#define RETENTION_CHECK_MS 1000

void rt_options_init(struct rt_options *o)
{
    memset(o, 0, sizeof(*o));
    o->segment_size_bytes = 1ull << 30;
    o->segment_ms = 7ll * 24 * 3600 * 1000;
    o->index_size_max_bytes = 10u << 20;
    o->index_interval_bytes = 4096;
    o->retention_bytes = -1;
    o->retention_ms = 7ll * 24 * 3600 * 1000;
    o->batch_size_max_bytes = (1u << 20) + 12;
    o->sync_mode = RT_SYNC_ALWAYS;
    o->sync_interval_ms = 1000;
    o->sync_interval_bytes = 0;
    o->io_backend = RT_IO_AUTO;
    o->io_queue_depth = 256;
    o->shard_count = 0;
    o->request_queue_depth = 1024;
    o->topics_max = 1024;
    o->partitions_max = 1024;
    o->producers_max = 65536;
    o->producer_id_expiration_ms = 24ll * 3600 * 1000;
    o->transaction_timeout_max_ms = 15 * 60 * 1000;
    o->transactional_id_expiration_ms = 7ll * 24 * 3600 * 1000;
    o->txn_check_interval_ms = 60 * 1000;
    o->txn_check_max = 15;
    o->txn_park_hanging = false;
    o->fault_injector = NULL;
    o->fetches_max = ENGINE_FETCHES_MAX_DEFAULT;
}

static int options_check(const struct rt_options *o)
{
#define CHECK(cond, msg)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return error_set(RT_E_INVALID_ARGUMENT, "invalid option: %s", msg);                    \
    } while (0)
    CHECK(o->batch_size_max_bytes >= CONTROL_BATCH_BYTES && o->batch_size_max_bytes <= (64u << 20),
          "batch_size_max_bytes must be 78 .. 64 MiB");
    CHECK(o->segment_size_bytes >= o->batch_size_max_bytes,
          "segment_size_bytes must be >= batch_size_max_bytes");
    CHECK(o->segment_size_bytes <= INT32_MAX,
          "segment_size_bytes must be < 2 GiB (positions are i32)");
    CHECK(o->index_size_max_bytes >= 4 * 12, "index_size_max_bytes must be >= 48");
    CHECK(o->index_interval_bytes > 0, "index_interval_bytes must be > 0");
    CHECK(o->sync_mode <= RT_SYNC_NONE, "sync_mode");
    CHECK(o->sync_mode != RT_SYNC_INTERVAL || o->sync_interval_ms > 0,
          "sync_interval_ms must be > 0 under RT_SYNC_INTERVAL");
    CHECK(o->io_backend <= RT_IO_FAULT, "io_backend");
    CHECK(o->io_backend != RT_IO_FAULT || o->fault_injector, "RT_IO_FAULT needs fault_injector");
    CHECK(o->io_queue_depth >= 4 && o->io_queue_depth <= 4096, "io_queue_depth must be 4..4096");
    CHECK(o->shard_count <= SHARDS_MAX, "shard_count must be <= 64");
    CHECK(o->request_queue_depth >= 1 && o->request_queue_depth <= (1u << 20),
          "request_queue_depth must be 1..1048576");
    CHECK(o->topics_max >= 1 && o->topics_max <= (1u << 20), "topics_max");
    CHECK(o->partitions_max >= 1 && o->partitions_max <= (1u << 20), "partitions_max");
    CHECK(o->retention_bytes >= -1, "retention_bytes must be >= -1");
    CHECK(o->producers_max >= 1 && o->producers_max <= (1u << 24), "producers_max must be 1..2^24");
    CHECK(o->producer_id_expiration_ms > 0, "producer_id_expiration_ms must be > 0");
    CHECK(o->transaction_timeout_max_ms > 0, "transaction_timeout_max_ms must be > 0");
    CHECK(o->transactional_id_expiration_ms > 0, "transactional_id_expiration_ms must be > 0");
    CHECK(o->txn_check_interval_ms > 0, "txn_check_interval_ms must be > 0");
    CHECK(o->txn_check_max >= 1, "txn_check_max must be >= 1");
    CHECK(o->retention_ms >= -1, "retention_ms must be >= -1");
    CHECK(o->fetches_max <= (1u << 20), "fetches_max must be 0 (default) .. 1048576");
#undef CHECK
    return 0;
}

static int lock_dir(rt_engine *e)
{
    char path[SEGMENT_PATH_BYTES];
    if (snprintf(path, sizeof(path), "%s/%s", e->dir, META_LOCK_FILE) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    bool read_only = e->opts.read_only;
    e->lock_fd = read_only ? open(path, O_RDONLY | O_CLOEXEC)
                           : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (e->lock_fd < 0 && read_only && errno == ENOENT)
        return 0; /* never opened for writing: nothing to lock against, nothing created */
    if (e->lock_fd < 0)
        return error_set(-errno, "%s: cannot open: %s", path, strerror(errno));
    /* Writers take it exclusively, read-only handles shared: readers coexist, and a reader
     * never sees a log that a writer is changing (truncating, rolling, deleting). */
    if (flock(e->lock_fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int err = errno;
        close(e->lock_fd);
        e->lock_fd = -1;
        if (err == EWOULDBLOCK)
            return error_set(RT_E_DIRECTORY_LOCKED,
                             "%s: the data directory is already open%s (lock held on %s)", e->dir,
                             read_only ? " for writing" : "", path);
        return error_set(-err, "%s: flock: %s", path, strerror(err));
    }
    if (read_only)
        return 0;
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(e->lock_fd, 0) == 0)
        (void)fs_pwrite_all(e->lock_fd, pid, (size_t)n, 0);
    return 0;
}

static uint32_t default_shards(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > SHARDS_MAX ? SHARDS_MAX : (uint32_t)n;
}

static void recovery_add(struct partition_recovery *sum, const struct partition_recovery *r)
{
    sum->segments_opened += r->segments_opened;
    sum->recovered |= r->recovered;
    sum->truncated_bytes += r->truncated_bytes;
    sum->indexes_rebuilt += r->indexes_rebuilt;
    sum->snapshots_rejected += r->snapshots_rejected;
    sum->batches_replayed += r->batches_replayed;
}

static int add_partition_call(struct shard *s, void *arg)
{
    return shard_add_partition(s, arg);
}

/* Builds a topic's partitions and hands each to a shard (round-robin over all partitions of
 * the engine, so partitions of one topic spread over shards). */
static int topic_build(rt_engine *e, struct topic *t, const char *name, uint32_t partitions,
                       bool clean, bool shards_running)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->partitions = calloc(partitions, sizeof(*t->partitions));
    if (!t->partitions)
        return -ENOMEM;
    int rc = 0;
    uint32_t opened = 0;
    /* Internal topics (__transaction_state, __consumer_offsets) hold little: small segments,
     * so they do not preallocate a user-sized segment each. */
    struct partition_config cfg = e->pcfg;
    if (meta_topic_name_internal(name)) {
        uint64_t small = 8u << 20;
        if (small < e->opts.batch_size_max_bytes)
            small = e->opts.batch_size_max_bytes;
        if (cfg.segment.capacity_bytes > small)
            cfg.segment.capacity_bytes = small;
        cfg.retention_bytes = -1;
        cfg.retention_ms = -1;
    }
    for (; opened < partitions; opened++) {
        struct partition_recovery rec;
        rc = partition_open(&t->partitions[opened], e->dir, name, opened, &cfg, clean, &rec);
        if (rc)
            break;
        recovery_add(&e->recovery, &rec);
    }
    if (rc == 0) {
        for (uint32_t i = 0; i < partitions && rc == 0; i++) {
            struct shard *s = &e->shards[(e->partitions_total + i) % e->shard_count];
            if (shards_running) {
                struct shard_request req = {.kind = SHARD_REQ_CALL};
                req.fn = add_partition_call;
                req.arg = &t->partitions[i];
                rc = shard_submit(s, &req);
            } else {
                rc = shard_add_partition(s, &t->partitions[i]);
            }
        }
    }
    if (rc) {
        for (uint32_t i = 0; i < opened; i++)
            partition_close(&t->partitions[i], false);
        free(t->partitions);
        t->partitions = NULL;
        return rc;
    }
    t->partition_count = partitions;
    e->partitions_total += partitions;
    return 0;
}

/* The catalogue's internal topics must have the shape the engine writes them with: an older
 * version let clients create them (rt_topic_create("__consumer_offsets", 1)), and the managers
 * would then fail later with a code that names no file. */
static int internal_topics_check(rt_engine *e)
{
    for (uint32_t i = 0; i < e->catalogue.count; i++) {
        const struct meta_topic *mt = &e->catalogue.topics[i];
        uint32_t want = 0;
        if (strcmp(mt->name, TXN_LOG_TOPIC) == 0)
            want = 1;
        else if (strcmp(mt->name, GROUP_OFFSETS_TOPIC) == 0)
            want = GROUP_OFFSETS_PARTITIONS;
        if (want && mt->partitions != want)
            return error_set(RT_E_CORRUPT,
                             "%s/%s: internal topic %s has %u partition%s; the engine keeps it "
                             "with %u (was it created by a client?)",
                             e->dir, META_FILE, mt->name, mt->partitions,
                             mt->partitions == 1 ? "" : "s", want);
    }
    return 0;
}

/* ---- producer ids: never handed out twice ---- */

struct pid_max {
    int64_t max;
};

static int pid_max_entry(void *ctx, const struct producer_entry *pe)
{
    struct pid_max *m = ctx;
    if (pe->producer_id > m->max)
        m->max = pe->producer_id;
    return 0;
}

/* The largest producer id partition p knows: its producer table (snapshot + replayed tail)
 * always, and when `scan_logs` every batch header of every segment as well (what expiry or
 * eviction dropped from the table). Runs at open, before the shards start. Cost of the scan:
 * one 61-byte header read per batch (a page touched per batch at most). */
static int64_t partition_producer_id_max(struct partition *p, bool scan_logs)
{
    struct pid_max m = {.max = -1};
    (void)producer_table_each(&p->producers, pid_max_entry, &m);
    if (!scan_logs)
        return m.max;
    for (uint32_t i = 0; i < p->segment_count; i++) {
        const struct segment *seg = p->segments[i];
        uint64_t end = atomic_load_explicit(&seg->readable_bytes, memory_order_acquire);
        if (end > seg->map_bytes)
            end = seg->map_bytes;
        uint64_t pos = 0;
        while (pos < end) {
            const char *why = NULL;
            struct batch_header h;
            int64_t size = batch_size_at(seg->map + pos, (size_t)(end - pos), &why);
            if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
                break; /* open validated what it trusts; nothing past this is acknowledged */
            if (h.producer_id > m.max)
                m.max = h.producer_id;
            pos += (uint64_t)size;
        }
    }
    return m.max;
}

/* Raises the producer-id allocator past every id the partitions know. producers.meta alone
 * is not enough: a deleted (or older) copy would hand out an id some partition still holds
 * state for, and that producer's first batch would be acknowledged as a duplicate of the old
 * one's and never stored. The logs are walked only when the file was missing. */
static int producer_ids_from_partitions(rt_engine *e)
{
    bool missing = !producer_registry_found(&e->producers);
    int64_t max = -1;
    uint32_t n = atomic_load(&e->topic_count);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < e->topics[t].partition_count; i++) {
            int64_t m = partition_producer_id_max(&e->topics[t].partitions[i], missing);
            if (m > max)
                max = m;
        }
    return producer_registry_raise(&e->producers, max + 1);
}

static void engine_free(rt_engine *e)
{
    if (e->producers_open)
        producer_registry_close(&e->producers);
    meta_catalogue_free(&e->catalogue);
    free(e->topics);
    free(e->shards);
    if (e->lock_fd >= 0)
        close(e->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&e->admin_lock);
    pthread_mutex_destroy(&e->internal_lock);
    fetch_pool_destroy(e->fetches);
    free(e);
}

static void shards_stop(rt_engine *e)
{
    for (uint32_t i = 0; i < e->shard_count; i++)
        shard_stop(&e->shards[i]);
}

static int close_topics(rt_engine *e, bool seal)
{
    int first = 0;
    uint32_t n = atomic_load(&e->topic_count);
    for (uint32_t t = 0; t < n; t++) {
        for (uint32_t i = 0; i < e->topics[t].partition_count; i++) {
            int rc = partition_close(&e->topics[t].partitions[i], seal);
            if (rc && !first)
                first = rc;
        }
        free(e->topics[t].partitions);
    }
    atomic_store(&e->topic_count, 0);
    return first;
}

int rt_open(const char *dir, const struct rt_options *opts_in, rt_engine **out)
{
    error_clear();
    if (!dir || !*dir || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_open: dir and out are required");
    *out = NULL;
    struct rt_options defaults;
    if (!opts_in) {
        rt_options_init(&defaults);
        opts_in = &defaults;
    }
    int rc = options_check(opts_in);
    if (rc)
        return rc;
    if (strlen(dir) > SEGMENT_PATH_BYTES - 300)
        return error_set(-ENAMETOOLONG, "%s: path too long", dir);
    if (opts_in->read_only) {
        struct stat st;
        if (stat(dir, &st) != 0)
            return error_set(-errno, "%s: %s", dir, strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return error_set(-ENOTDIR, "%s: not a directory", dir);
    } else if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        return error_set(-errno, "%s: cannot create directory: %s", dir, strerror(errno));
    }

    rt_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    snprintf(e->dir, sizeof(e->dir), "%s", dir);
    e->lock_fd = -1;
    e->opts = *opts_in;
    if (e->opts.fetches_max == 0)
        e->opts.fetches_max = ENGINE_FETCHES_MAX_DEFAULT;
    e->fetches = fetch_pool_create(e->opts.fetches_max);
    if (!e->fetches) {
        free(e);
        return -ENOMEM;
    }
    pthread_mutex_init(&e->admin_lock, NULL);
    pthread_mutex_init(&e->internal_lock, NULL);
    atomic_init(&e->write_error, 0);
    atomic_init(&e->closing, false);
    atomic_init(&e->topic_count, 0);

    e->pcfg.segment.capacity_bytes = e->opts.segment_size_bytes;
    e->pcfg.segment.index_size_max_bytes = e->opts.index_size_max_bytes;
    e->pcfg.segment.index_interval_bytes = e->opts.index_interval_bytes;
    e->pcfg.segment.read_only = e->opts.read_only;
    e->pcfg.segment_ms = e->opts.segment_ms;
    e->pcfg.retention_bytes = e->opts.retention_bytes;
    e->pcfg.retention_ms = e->opts.retention_ms;
    e->pcfg.producers_max = e->opts.producers_max;
    e->pcfg.is_named = producer_registry_is_named;
    e->pcfg.named_ctx = &e->producers;

    e->env.sync_mode = e->opts.sync_mode;
    e->env.sync_interval_ms = e->opts.sync_interval_ms;
    e->env.sync_interval_bytes = e->opts.sync_interval_bytes;
    e->env.request_queue_depth = e->opts.request_queue_depth;
    e->env.retention_check_ms = RETENTION_CHECK_MS;
    e->env.producer_id_expiration_ms = e->opts.producer_id_expiration_ms;
    e->env.io.kind = (enum io_kind)e->opts.io_backend;
    e->env.io.queue_depth = e->opts.io_queue_depth;
    e->env.io.fault = e->opts.fault_injector;
    e->env.write_error = &e->write_error;
    e->env.counters = &e->counters;
    e->env.read_only = e->opts.read_only;
    if (e->opts.read_only)
        e->env.io.kind = IO_KIND_SYNC; /* no writes: no ring to set up */

    rc = lock_dir(e);
    if (rc)
        goto err_free;
    rc = meta_load(e->dir, &e->catalogue);
    if (rc)
        goto err_free;
    rc = producer_registry_open(&e->producers, e->dir);
    e->producers_open = true;
    if (rc)
        goto err_free;

    char marker[SEGMENT_PATH_BYTES + 32];
    snprintf(marker, sizeof(marker), "%s/%s", e->dir, META_CLEAN_FILE);
    bool clean = fs_exists(marker);
    e->clean_at_open = clean;
    if (clean && !e->opts.read_only) {
        /* Gone before the first write: a crash from here on must trigger recovery. */
        if (unlink(marker) != 0 || (rc = fs_fsync_dir(e->dir)) != 0) {
            rc = rc ? rc : -errno;
            error_set(rc, "%s: cannot remove: %s", marker, strerror(-rc));
            goto err_free;
        }
    }

    /* topics_max bounds the user's topics; the internal ones get slots of their own (and so
     * does any "__" topic an older version let a client create). */
    uint32_t user_topics = 0, internal_topics = 0;
    for (uint32_t i = 0; i < e->catalogue.count; i++) {
        if (meta_topic_name_internal(e->catalogue.topics[i].name))
            internal_topics++;
        else
            user_topics++;
    }
    e->topics_capacity = e->opts.topics_max + INTERNAL_TOPICS_MAX + internal_topics;
    e->topics = calloc(e->topics_capacity, sizeof(*e->topics));
    e->shard_count = e->opts.shard_count ? e->opts.shard_count : default_shards();
    e->shards = calloc(e->shard_count, sizeof(*e->shards));
    if (!e->topics || !e->shards) {
        rc = -ENOMEM;
        goto err_free;
    }
    uint32_t inited = 0;
    for (; inited < e->shard_count; inited++) {
        rc = shard_init(&e->shards[inited], inited, &e->env);
        if (rc) {
            shard_stop(&e->shards[inited]);
            break;
        }
    }
    if (rc) {
        e->shard_count = inited;
        goto err_shards;
    }
    if (user_topics > e->opts.topics_max) {
        rc = error_set(RT_E_LIMIT, "%s: %u topics exceed topics_max %u", e->dir, user_topics,
                       e->opts.topics_max);
        goto err_shards;
    }
    rc = internal_topics_check(e);
    if (rc)
        goto err_shards;
    for (uint32_t i = 0; i < e->catalogue.count; i++) {
        const struct meta_topic *mt = &e->catalogue.topics[i];
        rc = topic_build(e, &e->topics[i], mt->name, mt->partitions, clean, false);
        if (rc)
            goto err_topics;
        atomic_store_explicit(&e->topic_count, i + 1, memory_order_release);
    }
    if (!e->opts.read_only) { /* a read-only engine allocates no id and writes no file */
        rc = producer_ids_from_partitions(e);
        if (rc)
            goto err_topics;
    }
    for (uint32_t i = 0; i < e->shard_count && !e->opts.read_only; i++) {
        rc = shard_start(&e->shards[i]);
        if (rc)
            goto err_topics;
    }
    /* Internal state: consumer offsets first (the coordinator completes transactions that
     * carry offsets), then the coordinator, which finishes every Prepare* before we return. */
    if (topic_find(e, GROUP_OFFSETS_TOPIC)) {
        rc = group_manager_open(e, &e->groups);
        if (rc)
            goto err_internal;
    }
    if (topic_find(e, TXN_LOG_TOPIC)) {
        rc = coordinator_open(e, false, &e->coordinator);
        if (rc)
            goto err_internal;
        /* A transactional id that never wrote to a partition has its id only in the log (a
         * read-only engine allocates no id and writes no file). */
        if (!e->opts.read_only)
            rc = producer_registry_raise(&e->producers,
                                         coordinator_producer_id_max(e->coordinator) + 1);
        if (rc)
            goto err_internal;
    }
    *out = e;
    return 0;

err_internal:
    coordinator_close(e->coordinator);
    e->coordinator = NULL;
    if (e->groups)
        group_manager_close(e->groups);
    e->groups = NULL;

err_topics:
    shards_stop(e);
    close_topics(e, false);
    goto err_free;
err_shards:
    shards_stop(e);
err_free:
    engine_free(e);
    return rc;
}

int rt_close(rt_engine *e)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_close: NULL engine");
    /* The coordinator's timer writes through the shards: stop it first. */
    coordinator_close(e->coordinator);
    e->coordinator = NULL;
    atomic_store(&e->closing, true);
    shards_stop(e);
    if (e->groups)
        group_manager_close(e->groups);
    e->groups = NULL;
    int werr = atomic_load(&e->write_error);
    int rc = close_topics(e, werr == 0 && !e->opts.read_only);
    if (werr == 0 && rc == 0 && !e->opts.read_only) {
        char marker[SEGMENT_PATH_BYTES + 32];
        snprintf(marker, sizeof(marker), "%s/%s", e->dir, META_CLEAN_FILE);
        int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || fsync(fd) != 0)
            rc = -errno;
        if (fd >= 0)
            close(fd);
        if (rc == 0)
            rc = fs_fsync_dir(e->dir);
    }
    engine_free(e);
    if (werr)
        return error_set(RT_E_IO_FAILED,
                         "a write or fdatasync failed while open (%s); the next "
                         "open recovers",
                         rt_strerror(werr));
    return rc;
}

int rt_stats_get(rt_engine *e, struct rt_stats *out)
{
    error_clear();
    if (!e || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_stats_get: NULL argument");
    memset(out, 0, sizeof(*out));
    out->rounds = atomic_load_explicit(&e->counters.rounds, memory_order_relaxed);
    out->batches_appended =
        atomic_load_explicit(&e->counters.batches_appended, memory_order_relaxed);
    out->bytes_appended = atomic_load_explicit(&e->counters.bytes_appended, memory_order_relaxed);
    out->fdatasyncs = atomic_load_explicit(&e->counters.fdatasyncs, memory_order_relaxed);
    out->segments_rolled = atomic_load_explicit(&e->counters.segments_rolled, memory_order_relaxed);
    out->segments_deleted =
        atomic_load_explicit(&e->counters.segments_deleted, memory_order_relaxed);
    out->duplicates = atomic_load_explicit(&e->counters.duplicates, memory_order_relaxed);
    out->producers_expired =
        atomic_load_explicit(&e->counters.producers_expired, memory_order_relaxed);
    out->snapshots_written =
        atomic_load_explicit(&e->counters.snapshots_written, memory_order_relaxed);
    out->snapshots_rejected = e->recovery.snapshots_rejected;
    out->shard_count = e->shard_count;
    out->io_backend = shard_backend_name(&e->shards[0]);
    out->read_only = e->opts.read_only;
    out->opened_unclean = !e->clean_at_open;
    out->tail_bytes_ignored = e->recovery.truncated_bytes;
    return 0;
}

bool engine_read_only(const rt_engine *e)
{
    return e->opts.read_only;
}

int engine_refuse_if_read_only(const rt_engine *e, const char *what)
{
    if (!e->opts.read_only)
        return 0;
    return error_set(RT_E_READ_ONLY, "%s: %s refused: the engine was opened read-only", e->dir,
                     what);
}

const struct partition_recovery *engine_recovery(const rt_engine *e)
{
    return &e->recovery;
}

/* ---- topics ---- */

static const struct topic *topic_find(rt_engine *e, const char *name)
{
    uint32_t n = atomic_load_explicit(&e->topic_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e->topics[i].name, name) == 0)
            return &e->topics[i];
    return NULL;
}

/* Creates a topic under admin_lock. User topics count against topics_max; internal ones use
 * the slots reserved for them. */
static int topic_create(rt_engine *e, const char *name, uint32_t partitions)
{
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_topic_create");
    if (atomic_load(&e->closing))
        return error_set(RT_E_CLOSED, "the engine is closing");
    bool internal = meta_topic_name_internal(name);
    pthread_mutex_lock(&e->admin_lock);
    int rc = 0;
    uint32_t n = atomic_load(&e->topic_count);
    if (topic_find(e, name)) {
        rc = error_set(RT_E_TOPIC_ALREADY_EXISTS, "topic '%s' already exists", name);
        goto out;
    }
    uint32_t users = 0;
    for (uint32_t i = 0; i < n; i++)
        users += !meta_topic_name_internal(e->topics[i].name);
    if (!internal && users >= e->opts.topics_max) {
        rc = error_set(RT_E_LIMIT, "topics_max (%u) reached", e->opts.topics_max);
        goto out;
    }
    if (n >= e->topics_capacity) { /* only internal topics get here: two at most */
        rc = error_set(RT_E_LIMIT, "no slot left for internal topic '%s' (%u topics)", name, n);
        goto out;
    }
    /* Directories and first segments first, then the catalogue: a crash in between leaves
     * unreferenced directories (harmless, reused by a later create), never a topic without
     * its partitions. */
    rc = topic_build(e, &e->topics[n], name, partitions, false, true);
    if (rc)
        goto out;
    rc = meta_add_topic(&e->catalogue, name, partitions);
    if (rc == 0)
        rc = meta_store(e->dir, &e->catalogue);
    if (rc) {
        error_set(rc, "%s/%s: cannot store the topic catalogue: %s", e->dir, META_FILE,
                  rt_strerror(rc));
        /* The partitions are attached to shards already; keep them usable but unlisted
         * would be worse than failing loudly: leave the engine's write side failed. */
        int expected = 0;
        atomic_compare_exchange_strong(&e->write_error, &expected, rc);
        goto out;
    }
    atomic_store_explicit(&e->topic_count, n + 1, memory_order_release);
out:
    pthread_mutex_unlock(&e->admin_lock);
    return rc;
}

int rt_topic_create(rt_engine *e, const char *name, uint32_t partitions)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_create: NULL engine");
    if (!meta_topic_name_valid(name))
        return error_set(RT_E_INVALID_TOPIC, "invalid topic name '%s'", name ? name : "(null)");
    if (meta_topic_name_internal(name))
        return error_set(RT_E_INTERNAL_TOPIC,
                         "topic name '%s': names beginning with '__' are reserved for the "
                         "engine's internal topics",
                         name);
    if (partitions == 0 || partitions > e->opts.partitions_max)
        return error_set(RT_E_INVALID_ARGUMENT, "partitions must be 1..%u, got %u",
                         e->opts.partitions_max, partitions);
    return topic_create(e, name, partitions);
}

int engine_internal_topic_create(rt_engine *e, const char *name, uint32_t partitions)
{
    assert(meta_topic_name_internal(name));
    assert(partitions > 0);
    return topic_create(e, name, partitions);
}

int engine_client_topic_check(const char *topic)
{
    if (meta_topic_name_internal(topic))
        return error_set(RT_E_INTERNAL_TOPIC,
                         "topic '%s' is internal: only the engine writes it (names beginning "
                         "with '__' are reserved)",
                         topic);
    return 0;
}

int rt_topic_describe(rt_engine *e, const char *name, uint32_t *partitions_out)
{
    error_clear();
    if (!e || !name || !partitions_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_describe: NULL argument");
    const struct topic *t = topic_find(e, name);
    if (!t)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
    *partitions_out = t->partition_count;
    return 0;
}

int rt_topic_list(rt_engine *e, int (*fn)(void *ctx, const char *name, uint32_t partitions),
                  void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_list: NULL argument");
    uint32_t n = atomic_load_explicit(&e->topic_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        if (meta_topic_name_internal(e->topics[i].name))
            continue; /* internal topics (transaction log, consumer offsets) */
        int rc = fn(ctx, e->topics[i].name, e->topics[i].partition_count);
        if (rc)
            return rc;
    }
    return 0;
}

struct partition *engine_partition(rt_engine *e, const char *topic, uint32_t partition)
{
    if (!topic) {
        error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "NULL topic");
        return NULL;
    }
    const struct topic *t = topic_find(e, topic);
    if (!t) {
        error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", topic);
        return NULL;
    }
    if (partition >= t->partition_count) {
        error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION,
                  "topic '%s' has %u partitions; %u is out of "
                  "range",
                  topic, t->partition_count, partition);
        return NULL;
    }
    return &t->partitions[partition];
}

/* ---- appends ---- */

int engine_append(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                  const struct batch_header *h, int64_t *base_offset_out, bool *duplicate_out)
{
    if (atomic_load_explicit(&e->closing, memory_order_relaxed))
        return error_set(RT_E_CLOSED, "the engine is closing");
    int werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED, "the write side failed earlier (%s); close and reopen",
                         rt_strerror(werr));
    struct shard_request req = {
        .kind = SHARD_REQ_APPEND, .partition = p, .batch = batch, .len = len, .header = *h};
    int rc = shard_submit(p->shard, &req);
    if (rc) {
        werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
        if (rc == RT_E_IO_FAILED)
            return error_set(rc,
                             "append to %s failed: %s; the engine's write side is now "
                             "failed until reopened",
                             p->dir, werr ? rt_strerror(werr) : "unknown");
        if (req.rule)
            return error_set(rc, "append to %s: producer %" PRId64 " epoch %d sequence %d: %s",
                             p->dir, h->producer_id, h->producer_epoch, h->base_sequence, req.rule);
        return error_set(rc, "append to %s: %s", p->dir, rt_strerror(rc));
    }
    if (base_offset_out)
        *base_offset_out = req.base_offset;
    if (duplicate_out)
        *duplicate_out = req.duplicate;
    return 0;
}

/* Each calling thread encodes its batches in its own buffer, kept between calls (no allocation
 * once it is big enough) and freed when the thread exits; beside it, the buffer rt_append_batch
 * decompresses a caller's compressed batch into to check its records. */
struct encode_buffer {
    uint8_t *buf;
    size_t cap;
    struct compression_buffer scratch;
};
static pthread_key_t encode_key;
static pthread_once_t encode_once = PTHREAD_ONCE_INIT;

static void encode_buffer_free(void *p)
{
    struct encode_buffer *b = p;
    free(b->buf);
    compression_buffer_free(&b->scratch);
    free(b);
}

static void encode_key_create(void)
{
    (void)pthread_key_create(&encode_key, encode_buffer_free);
}

static struct encode_buffer *encode_state(void)
{
    pthread_once(&encode_once, encode_key_create);
    struct encode_buffer *b = pthread_getspecific(encode_key);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b || pthread_setspecific(encode_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    return b;
}

static uint8_t *encode_buffer_get(size_t size)
{
    struct encode_buffer *b = encode_state();
    if (!b)
        return NULL;
    if (size > b->cap) {
        uint8_t *n = realloc(b->buf, size);
        if (!n)
            return NULL;
        b->buf = n;
        b->cap = size;
    }
    return b->buf;
}

int rt_append(rt_engine *e, const char *topic, uint32_t partition, const struct rt_record *records,
              size_t count, int64_t *base_offset_out)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: NULL engine");
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_append");
    if (!records || count == 0)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: no records");
    if (count > INT32_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: too many records");
    int rc = engine_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = engine_partition(e, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    int64_t now = fs_now_ms();
    int64_t base_ts = -1;
    uint64_t size = BATCH_HEADER_BYTES;
    for (size_t i = 0; i < count; i++) {
        const struct rt_record *r = &records[i];
        if (r->key_len < -1 || r->value_len < -1 || (r->key_len > 0 && !r->key) ||
            (r->value_len > 0 && !r->value) || (r->header_count > 0 && !r->headers))
            return error_set(RT_E_INVALID_ARGUMENT,
                             "record %zu: lengths must be >= -1 and non-empty data non-NULL", i);
        if (r->timestamp_ms < -1)
            return error_set(RT_E_INVALID_ARGUMENT, "record %zu: timestamp must be >= -1", i);
        int64_t ts = r->timestamp_ms < 0 ? now : r->timestamp_ms;
        if (base_ts < 0)
            base_ts = ts;
        struct rt_record tmp = *r;
        tmp.timestamp_ms = ts;
        size += record_encoded_size(&tmp, (int32_t)i, ts - base_ts);
        if (size > e->opts.batch_size_max_bytes)
            return error_set(RT_E_RECORD_TOO_LARGE,
                             "batch of %zu records exceeds batch_size_max_bytes (%u)", count,
                             e->opts.batch_size_max_bytes);
    }
    uint8_t *buf = encode_buffer_get(size);
    if (!buf)
        return error_set(-ENOMEM, "rt_append: no memory for a %" PRIu64 "-byte batch", size);
    struct batch_builder b;
    rc = batch_builder_init(&b, buf, size, 0, -1, -1, -1);
    for (size_t i = 0; i < count && rc == 0; i++) {
        struct rt_record tmp = records[i];
        if (tmp.timestamp_ms < 0)
            tmp.timestamp_ms = now;
        rc = batch_builder_add(&b, &tmp);
    }
    size_t len = 0;
    if (rc == 0)
        rc = batch_builder_finish(&b, &len);
    if (rc)
        return error_set(rc, "encoding the batch: %s", rt_strerror(rc));
    struct batch_header h;
    const char *why = NULL;
    rc = batch_header_parse(buf, len, &h, &why);
    assert(rc == 0);
    return engine_append(e, p, buf, len, &h, base_offset_out, NULL);
}

int rt_append_batch(rt_engine *e, const char *topic, uint32_t partition, void *batch, size_t len,
                    int64_t *base_offset_out)
{
    error_clear();
    if (!e || !batch)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: NULL argument");
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_append_batch");
    int rc = engine_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = engine_partition(e, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    struct batch_header h;
    const char *why = NULL;
    int64_t size = batch_size_at(batch, len, &why);
    if (size < 0)
        return error_set(RT_E_CORRUPT, "rt_append_batch: %s", why);
    if ((size_t)size != len)
        return error_set(RT_E_CORRUPT,
                         "rt_append_batch: batch length field says %" PRId64
                         " bytes but %zu were given",
                         size, len);
    rc = batch_validate(batch, len, e->opts.batch_size_max_bytes, &h, &why);
    if (rc)
        return error_set(rc, "rt_append_batch: %s", why ? why : rt_strerror(rc));
    if (h.record_count == 0)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: empty batch");
    if ((h.attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE) {
        /* batch_validate checked an uncompressed batch's records; a compressed one's are
         * decompressed and held to the same rules before anything is appended (Kafka's
         * LogValidator), so counts and offset deltas that disagree never reach the log. */
        struct encode_buffer *b = encode_state();
        if (!b)
            return error_set(-ENOMEM, "rt_append_batch: no memory to check the records");
        rc = records_validate(batch, len, &h, &b->scratch, NULL, NULL, &why);
        if (rc == -ENOMEM)
            return error_set(rc, "rt_append_batch: out of memory decompressing the records");
        if (rc)
            return error_set(rc, "rt_append_batch: compressed records: %s",
                             why ? why : rt_strerror(rc));
    }
    if (batch_is_control(&h))
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_append_batch: control batches are written by the transaction "
                         "coordinator, not by clients (as Kafka)");
    if (batch_is_transactional(&h) && h.producer_id < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_append_batch: a transactional batch needs a producer id");
    if (h.producer_id >= 0 && (h.producer_epoch < 0 || h.base_sequence < 0))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: a batch with a producer id "
                                                "needs an epoch and a base sequence >= 0");
    return engine_append(e, p, batch, len, &h, base_offset_out, NULL);
}

/* ---- maintenance ---- */

static int retention_call(struct shard *s, void *arg)
{
    (void)arg;
    int total = 0;
    uint32_t expired = 0;
    int64_t now = fs_now_ms();
    for (uint32_t i = 0; i < s->partition_count; i++) {
        int n = partition_enforce_retention(s->partitions[i], now);
        if (n < 0)
            return n;
        total += n;
        expired += producer_table_expire(&s->partitions[i]->producers, now,
                                         s->env.producer_id_expiration_ms);
    }
    atomic_fetch_add_explicit(&s->env.counters->segments_deleted, (uint64_t)total,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.counters->producers_expired, expired, memory_order_relaxed);
    return 0;
}

int engine_enforce_retention(rt_engine *e)
{
    for (uint32_t i = 0; i < e->shard_count; i++) {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = retention_call};
        int rc = shard_submit(&e->shards[i], &req);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- producers ---- */

int engine_producer_allocate(rt_engine *e, int64_t *producer_id_out)
{
    return producer_registry_allocate(&e->producers, producer_id_out);
}

int engine_producer_open_name(rt_engine *e, const char *name, int64_t *producer_id_out,
                              int16_t *epoch_out)
{
    return producer_registry_open_name(&e->producers, name, producer_id_out, epoch_out);
}

int engine_append_async(rt_engine *e, struct shard_request *req)
{
    if (atomic_load_explicit(&e->closing, memory_order_relaxed))
        return error_set(RT_E_CLOSED, "the engine is closing");
    int werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED, "the write side failed earlier (%s); close and reopen",
                         rt_strerror(werr));
    return shard_submit_async(req->partition->shard, req);
}

struct last_sequence_call {
    struct partition *partition;
    int64_t producer_id;
    int64_t sequence;
};

static int last_sequence_call(struct shard *s, void *arg)
{
    (void)s;
    struct last_sequence_call *c = arg;
    const struct producer_entry *pe = producer_table_find(&c->partition->producers, c->producer_id);
    c->sequence = (pe && pe->batch_count) ? pe->batches[pe->batch_count - 1].last_seq : -1;
    return 0;
}

int engine_producer_last_sequence(rt_engine *e, struct partition *p, int64_t producer_id,
                                  int64_t *sequence_out)
{
    (void)e;
    struct last_sequence_call c = {.partition = p, .producer_id = producer_id, .sequence = -1};
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = last_sequence_call, .arg = &c};
    int rc = shard_submit(p->shard, &req);
    if (rc)
        return rc;
    *sequence_out = c.sequence;
    return 0;
}

static int snapshot_call(struct shard *s, void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        struct partition *p = s->partitions[i];
        uint32_t before = p->snapshots_written;
        int rc = partition_snapshot_producers(p);
        if (rc)
            return rc;
        atomic_fetch_add_explicit(&s->env.counters->snapshots_written,
                                  p->snapshots_written - before, memory_order_relaxed);
    }
    return 0;
}

int engine_snapshot_producers(rt_engine *e)
{
    for (uint32_t i = 0; i < e->shard_count; i++) {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = snapshot_call};
        int rc = shard_submit(&e->shards[i], &req);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- transactions open in the partitions ---- */

struct open_txns_call {
    struct partition *only; /* NULL: every partition of the shard */
    struct engine_open_txn *txns;
    size_t count, capacity;
};

static int open_txn_collect(void *ctx, const struct partition *p, const struct open_txn *t,
                            int16_t epoch)
{
    struct open_txns_call *c = ctx;
    if (c->count == c->capacity) {
        size_t cap = c->capacity ? c->capacity * 2 : 16;
        struct engine_open_txn *a = realloc(c->txns, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        c->txns = a;
        c->capacity = cap;
    }
    c->txns[c->count++] = (struct engine_open_txn){.topic = p->topic,
                                                   .partition = p->id,
                                                   .producer_id = t->producer_id,
                                                   .producer_epoch = epoch,
                                                   .first_offset = t->first_offset};
    return 0;
}

static int open_txns_call(struct shard *s, void *arg)
{
    struct open_txns_call *c = arg;
    if (c->only)
        return partition_each_open_txn(c->only, open_txn_collect, c);
    for (uint32_t i = 0; i < s->partition_count; i++) {
        int rc = partition_each_open_txn(s->partitions[i], open_txn_collect, c);
        if (rc)
            return rc;
    }
    return 0;
}

int engine_open_txns(rt_engine *e, struct partition *only, struct engine_open_txn **out,
                     size_t *count_out)
{
    struct open_txns_call c = {.only = only};
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < e->shard_count; i++) {
        if (only && only->shard != &e->shards[i])
            continue;
        if (e->opts.read_only) { /* no shard thread runs and nothing writes: read in place */
            rc = open_txns_call(&e->shards[i], &c);
            continue;
        }
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = open_txns_call, .arg = &c};
        rc = shard_submit(&e->shards[i], &req);
    }
    if (rc) {
        free(c.txns);
        return rc;
    }
    *out = c.txns;
    *count_out = c.count;
    return 0;
}

/* ---- transaction markers ---- */

struct marker_slot {
    struct shard_request req;
    uint8_t bytes[CONTROL_BATCH_BYTES];
};

#define MARKERS_ON_STACK 8 /* about 3 KiB of stack */

int engine_write_markers(rt_engine *e, struct marker_spec *specs, size_t n)
{
    error_clear();
    if (n == 0)
        return 0;
    if (atomic_load_explicit(&e->closing, memory_order_relaxed))
        return error_set(RT_E_CLOSED, "the engine is closing");
    int werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED, "the write side failed earlier (%s); close and reopen",
                         rt_strerror(werr));
    /* A transaction of up to MARKERS_ON_STACK partitions (the common case) writes its markers
     * without allocating (STYLE rule 8); a larger one allocates its slots once. */
    struct marker_slot stack_slots[MARKERS_ON_STACK];
    struct shard_request *stack_by_shard[MARKERS_ON_STACK];
    struct marker_slot *slots = stack_slots;
    struct shard_request **by_shard = stack_by_shard;
    memset(stack_slots, 0, sizeof(stack_slots));
    if (n > MARKERS_ON_STACK) {
        slots = calloc(n, sizeof(*slots));
        by_shard = calloc(n, sizeof(*by_shard));
        if (!slots || !by_shard) {
            free(slots);
            free(by_shard);
            return -ENOMEM;
        }
    }
    int64_t now = fs_now_ms();
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        struct marker_spec *m = &specs[i];
        m->result = 0;
        m->offset = -1;
        struct partition *p = engine_partition(e, m->topic, m->partition);
        if (!p || m->producer_id < 0 || m->producer_epoch < 0 ||
            (m->type != CONTROL_COMMIT && m->type != CONTROL_ABORT)) {
            m->result = p ? RT_E_INVALID_ARGUMENT : RT_E_UNKNOWN_TOPIC_OR_PARTITION;
            if (!first)
                first = m->result;
            continue;
        }
        struct marker_slot *sl = &slots[i];
        control_batch_build(sl->bytes, m->producer_id, m->producer_epoch,
                            (enum control_type)m->type, m->coordinator_epoch, now);
        const char *why = NULL;
        int rc = batch_header_parse(sl->bytes, CONTROL_BATCH_BYTES, &sl->req.header, &why);
        assert(rc == 0);
        (void)rc;
        sl->req.kind = SHARD_REQ_APPEND;
        sl->req.partition = p;
        sl->req.batch = sl->bytes;
        sl->req.len = CONTROL_BATCH_BYTES;
        sl->req.coordinator_epoch = m->coordinator_epoch;
        sl->req.marker_type = m->type;
        sl->req.force_sync = true;
    }
    /* Hand each shard its markers in one go (one round), then wait for every shard. Shards are
     * served one after another here, but each shard's round starts as soon as it is queued:
     * the waits overlap with the other shards' rounds only from the second shard on. */
    for (uint32_t s = 0; s < e->shard_count; s++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (specs[i].result == 0 && slots[i].req.partition &&
                slots[i].req.partition->shard == &e->shards[s])
                by_shard[k++] = &slots[i].req;
        if (k)
            shard_submit_many(&e->shards[s], by_shard, k);
    }
    for (size_t i = 0; i < n; i++) {
        if (specs[i].result != 0 || !slots[i].req.partition)
            continue;
        specs[i].result = slots[i].req.result;
        specs[i].offset = slots[i].req.base_offset;
        if (specs[i].result && !first) {
            first = specs[i].result;
            if (slots[i].req.rule)
                error_set(first, "marker for producer %" PRId64 " on %s: %s", specs[i].producer_id,
                          slots[i].req.partition->dir, slots[i].req.rule);
            else
                error_set(first, "marker for producer %" PRId64 " on %s: %s", specs[i].producer_id,
                          slots[i].req.partition->dir, rt_strerror(first));
        }
    }
    if (slots != stack_slots) {
        free(slots);
        free(by_shard);
    }
    return first;
}

/* ---- internal topics: coordinator-origin appends, roll, delete-before ---- */

/* The coordinator-origin append behind engine_append_coordinator and engine_append_forced. */
static int append_internal(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                           bool force_sync, int64_t *base_offset_out)
{
    struct batch_header h;
    const char *why = NULL;
    int rc = batch_validate(batch, len, e->opts.batch_size_max_bytes, &h, &why);
    if (rc)
        return error_set(rc, "coordinator append to %s: %s", p->dir, why ? why : rt_strerror(rc));
    if (batch_is_control(&h))
        return error_set(RT_E_INVALID_ARGUMENT, "coordinator append: markers go through "
                                                "engine_write_markers");
    if (atomic_load_explicit(&e->closing, memory_order_relaxed))
        return error_set(RT_E_CLOSED, "the engine is closing");
    int werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED, "the write side failed earlier (%s); close and reopen",
                         rt_strerror(werr));
    struct shard_request req = {.kind = SHARD_REQ_APPEND,
                                .partition = p,
                                .batch = batch,
                                .len = len,
                                .header = h,
                                .coordinator = true,
                                .force_sync = force_sync};
    rc = shard_submit(p->shard, &req);
    if (rc == RT_E_IO_FAILED) {
        /* Name the cause (-ENOSPC, -EIO, ...) the write side failed with, as engine_append. */
        werr = atomic_load_explicit(&e->write_error, memory_order_acquire);
        return error_set(rc,
                         "coordinator append to %s failed: %s; the engine's write side is "
                         "now failed until reopened",
                         p->dir, werr ? rt_strerror(werr) : "unknown");
    }
    if (rc)
        return error_set(rc, "coordinator append to %s: %s", p->dir,
                         req.rule ? req.rule : rt_strerror(rc));
    if (base_offset_out)
        *base_offset_out = req.base_offset;
    return 0;
}

int engine_append_coordinator(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                              int64_t *base_offset_out)
{
    return append_internal(e, p, batch, len, false, base_offset_out);
}

static int roll_call(struct shard *s, void *arg)
{
    struct partition *p = arg;
    (void)s;
    if (p->active->size_bytes == 0)
        return 0;
    /* An append earlier in this round already wrote to the active segment: roll in a later
     * round (a roll must not seal a segment with writes in flight). */
    if (p->round_touched)
        return -EAGAIN;
    return partition_roll_now(p);
}

int engine_roll(rt_engine *e, struct partition *p)
{
    (void)e;
    for (;;) {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = roll_call, .arg = p};
        int rc = shard_submit(p->shard, &req);
        if (rc != -EAGAIN)
            return rc;
    }
}

struct delete_before_call {
    struct partition *p;
    int64_t offset;
};

static int delete_before_call(struct shard *s, void *arg)
{
    struct delete_before_call *c = arg;
    int n = partition_delete_before(c->p, c->offset);
    if (n > 0)
        atomic_fetch_add_explicit(&s->env.counters->segments_deleted, (uint64_t)n,
                                  memory_order_relaxed);
    return n;
}

int engine_delete_before(rt_engine *e, struct partition *p, int64_t offset)
{
    (void)e;
    struct delete_before_call c = {.p = p, .offset = offset};
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = delete_before_call, .arg = &c};
    return shard_submit(p->shard, &req);
}

int engine_append_forced(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                         int64_t *base_offset_out)
{
    return append_internal(e, p, batch, len, true, base_offset_out);
}

const struct rt_options *engine_options(const rt_engine *e)
{
    return &e->opts;
}

struct coordinator *engine_coordinator(rt_engine *e)
{
    pthread_mutex_lock(&e->internal_lock);
    struct coordinator *c = e->coordinator;
    pthread_mutex_unlock(&e->internal_lock);
    if (!c)
        error_set(RT_E_INVALID_TXN_STATE, "no transaction has ever been started in %s", e->dir);
    return c;
}

int engine_coordinator_create(rt_engine *e, struct coordinator **out)
{
    int rc = 0;
    pthread_mutex_lock(&e->internal_lock);
    if (!e->coordinator && e->opts.read_only) {
        rc = engine_refuse_if_read_only(e, "a transaction coordinator");
    } else if (!e->coordinator) {
        rc = coordinator_open(e, true, &e->coordinator);
        if (rc)
            e->coordinator = NULL;
    }
    *out = e->coordinator;
    pthread_mutex_unlock(&e->internal_lock);
    return rc;
}

struct group_manager *engine_group_manager(rt_engine *e)
{
    pthread_mutex_lock(&e->internal_lock);
    struct group_manager *g = e->groups;
    pthread_mutex_unlock(&e->internal_lock);
    return g;
}

int engine_group_manager_create(rt_engine *e, struct group_manager **out)
{
    int rc = 0;
    pthread_mutex_lock(&e->internal_lock);
    if (!e->groups) {
        rc = engine_internal_topic_create(e, GROUP_OFFSETS_TOPIC, GROUP_OFFSETS_PARTITIONS);
        if (rc == 0 || rc == RT_E_TOPIC_ALREADY_EXISTS)
            rc = group_manager_open(e, &e->groups);
        if (rc)
            e->groups = NULL;
    }
    *out = e->groups;
    pthread_mutex_unlock(&e->internal_lock);
    return rc;
}

/* ---- public wrappers: transactions admin and group offsets ---- */

int rt_txn_set_check_handler(rt_engine *e, rt_txn_check_fn fn, void *ctx)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_set_check_handler: NULL engine");
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_txn_set_check_handler");
    struct coordinator *c = NULL;
    int rc = engine_coordinator_create(e, &c);
    if (rc)
        return rc;
    return coordinator_set_check_handler(c, fn, ctx);
}

int rt_txn_list(rt_engine *e, int (*fn)(void *ctx, const struct rt_txn_info *txn), void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_list: NULL argument");
    struct coordinator *c = engine_coordinator(e);
    if (!c)
        return 0; /* no transaction log: nothing to list */
    return coordinator_list(c, fn, ctx);
}

int rt_txn_abort(rt_engine *e, const char *transactional_id)
{
    error_clear();
    if (!e || !transactional_id)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_abort: NULL argument");
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_txn_abort");
    struct coordinator *c = engine_coordinator(e);
    if (!c)
        return error_set(RT_E_UNKNOWN_PRODUCER_ID, "no transactional id '%s'", transactional_id);
    return coordinator_abort(c, transactional_id);
}

int rt_txn_list_partitions(rt_engine *e, int (*fn)(void *ctx, const struct rt_partition_txn *txn),
                           void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_list_partitions: NULL argument");
    struct coordinator *c = engine_coordinator(e);
    error_clear(); /* no coordinator: every open transaction is one it does not know */
    return coordinator_list_partitions(e, c, fn, ctx);
}

int rt_txn_abort_partition(rt_engine *e, const char *topic, uint32_t partition, int64_t producer_id,
                           int16_t producer_epoch)
{
    error_clear();
    if (!e || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_abort_partition: NULL argument");
    if (producer_id < 0 || producer_epoch < -1)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_txn_abort_partition: producer id %" PRId64
                         " must be >= 0 and epoch %d >= -1",
                         producer_id, (int)producer_epoch);
    struct coordinator *c = engine_coordinator(e);
    error_clear();
    return coordinator_abort_partition(e, c, topic, partition, producer_id, producer_epoch);
}

int rt_group_commit_offsets(rt_engine *e, const char *group, const struct rt_offset *offsets,
                            size_t count)
{
    error_clear();
    if (!e || !group || !*group || (!offsets && count))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_commit_offsets: NULL argument");
    if (e->opts.read_only)
        return engine_refuse_if_read_only(e, "rt_group_commit_offsets");
    int rc = group_offsets_check_known(e, offsets, count);
    if (rc)
        return rc;
    struct group_manager *g = NULL;
    rc = engine_group_manager_create(e, &g);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    return group_commit(g, group, offsets, count);
}

int rt_group_fetch_offsets(rt_engine *e, const char *group, const char *topic, uint32_t partition,
                           bool require_stable, int64_t *offset_out)
{
    error_clear();
    if (!e || !group || !topic || !offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_fetch_offsets: NULL argument");
    struct group_manager *g = engine_group_manager(e);
    if (!g) {
        *offset_out = -1;
        return 0;
    }
    return group_fetch(g, group, topic, partition, require_stable, offset_out);
}
