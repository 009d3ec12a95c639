/*
 * log.c — the log layer's front (log.h): the topic table, the shards, open and close of the
 * partitions, and the services the layers above write and maintain the log through.
 *
 * Open (log_init → log_open_topics → log_start, run by engine.c): options into partition and
 * shard configuration → load the catalogue → note and remove the clean-shutdown marker
 * (durably, before anything is written) → open every partition (recovering the newest segment
 * unless the marker was there) → start the shards. Close (log_stop → log_close): stop the
 * shards (every queued append finishes) → seal the active segments → if no write ever failed,
 * write the clean-shutdown marker.
 *
 * This file never touches io_uring or segment bytes directly, and never calls up into the
 * transaction layer, the clients or the public API (LG3 in log.h).
 */
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleaner.h"
#include "cleaner_pool.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "io/io.h"
#include "records.h"

#define SHARDS_MAX         64
#define RETENTION_CHECK_MS 1000

static const struct topic *topic_find(struct log *lg, const char *name);

/* LG14. Without rt_options.shard_count, two shards per online core (SHARDS_PER_CORE), capped at
 * SHARDS_MAX. A shard runs one group-commit round at a time and spends most of a synced round
 * in its io stage, mostly fdatasync wait (docs/bench.md, issue 27 item 2: 69-88 % of a round at
 * W2 p16/p64), so one shard per core leaves the core idle and the disk with one round in flight
 * per shard;
 * with two per core, rounds of other shards run while one waits on the disk: W2 median +20 % at
 * 16 producers and +10 % at 64 on this 2-core VM (9 interleaved pairs each; docs/bench.md
 * "Concurrent rounds"). Partitions are spread over the shards round-robin as before; a shard
 * with no partition only sleeps. */
#define SHARDS_PER_CORE 2

static uint32_t default_shards(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    n *= SHARDS_PER_CORE;
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
    sum->segments_trusted += r->segments_trusted;
    sum->segments_checked += r->segments_checked;
    sum->bytes_checked += r->bytes_checked;
    sum->recovery_points_missing += r->recovery_points_missing;
    sum->recovery_points_damaged += r->recovery_points_damaged;
    sum->recovery_point_mismatches += r->recovery_point_mismatches;
    sum->recovery_point_past_end += r->recovery_point_past_end;
    sum->recovery_points_written += r->recovery_points_written;
    sum->tail_bytes_trusted += r->tail_bytes_trusted;
    sum->recovery_tails_rejected += r->recovery_tails_rejected;
}

static int add_partition_call(struct shard *s, void *arg)
{
    return shard_add_partition(s, arg);
}

/* Builds a topic's partitions and hands each to a shard (round-robin over all partitions of
 * the engine, so partitions of one topic spread over shards). */
static int shard_remove_call(struct shard *s, void *arg);

/* Opens partitions [from, to) of t and hands each to a shard (round-robin over all partitions
 * of the engine, so partitions of one topic spread over shards). On failure, what it opened is
 * taken off the shards and closed, and t is as before. */
/* New partitions of a running engine (rt_topic_create, rt_topic_add_partitions):
 *   LG11. They are made on up to OPEN_THREADS_MAX threads, each making a partition's directory
 *        (io_mkdir, no fsync of the data directory) and opening it (its first segment's files
 *        and one fsync of its own directory, SG5); then the data directory is fsynced once for
 *        all the new names. The intent written before (LG4, LG5, topic-add.tmp) names every
 *        directory this may leave behind, and the catalogue is stored only after this returns,
 *        so a crash at any point leaves a complete topic or one the next open removes.
 *        Partitions share nothing an open of a new one touches (the recovery summary is added
 *        up afterwards, on the calling thread); the first failure's code and detail are kept.
 *   LG15. An engine open (clean or after a crash) opens a topic's existing partitions on
 *        open_threads_existing() threads at once (the calling thread and up to
 *        max(2, online cores) - 1 more, at most OPEN_THREADS_MAX), each taking the next
 *        partition: what an open waits on per partition (a crash open's fdatasyncs, OS6's seal,
 *        the files a cold open reads) overlaps. What partitions share at open is thread-safe
 *        already (LG11's new partitions are opened the same way): the budget of open segments
 *        (atomics, segment_cache.h; OS6 then bounds a crash open to the budget plus one
 *        partition per open thread, within OS4's headroom), the budget of mappings (its lock),
 *        the fault injector (its lock), the error detail (thread-local). The first failure
 *        stops the others taking more, and every partition any thread opened is closed before
 *        partitions_open returns the error, whose detail names the failing partition's file
 *        (as partition_open set it on its thread); nothing is left half-open.
 * Cost: 1 000 new partitions in 0.5-1.5 s here (4.2-10 s made one at a time, each with two
 * directory fsyncs; docs/limits.md). */
#define OPEN_THREADS_MAX         8
#define OPEN_PARTITIONS_A_THREAD 32

/* LG15: threads beside the calling one for opening `count` existing partitions. */
static uint32_t open_threads_existing(uint32_t count)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t workers = cores > 2 ? (uint32_t)cores : 2;
    if (workers > OPEN_THREADS_MAX)
        workers = OPEN_THREADS_MAX;
    if (workers > count)
        workers = count;
    return workers > 1 ? workers - 1 : 0;
}

struct open_work {
    struct log *lg;
    struct topic *t;
    uint32_t from, to;
    bool clean, fresh;
    struct partition_recovery *recs; /* [to - from] */
    _Atomic uint32_t next;
    pthread_mutex_t lock;
    _Atomic int first; /* written under lock; read without it to stop early */
    char detail[512];
};

static void *open_worker(void *arg)
{
    struct open_work *w = arg;
    for (;;) {
        uint32_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->to - w->from || atomic_load(&w->first))
            return NULL;
        uint32_t id = w->from + i;
        int rc = 0;
        struct partition *p = calloc(1, sizeof(*p));
        if (!p)
            rc = error_set(-ENOMEM, "out of memory");
        if (rc == 0 && w->fresh) {
            char pdir[SEGMENT_PATH_BYTES];
            rc = meta_partition_dir(pdir, sizeof(pdir), w->lg->dir, w->t->name, id);
            if (rc == 0) {
                rc = io_mkdir(w->t->pcfg.segment.faults, pdir, 0755);
                if (rc && rc != -EEXIST)
                    rc = error_set(rc, "%s: cannot create: %s", pdir, strerror(-rc));
                else
                    rc = 0; /* partition_open finds it made: no fsync of the data dir each */
            }
        }
        if (rc == 0)
            rc = partition_open(p, w->lg->dir, w->t->name, id, &w->t->pcfg, w->clean, &w->recs[i]);
        if (rc) {
            free(p);
            pthread_mutex_lock(&w->lock);
            if (!atomic_load(&w->first)) {
                atomic_store(&w->first, rc);
                snprintf(w->detail, sizeof(w->detail), "%s", rt_error_detail());
            }
            pthread_mutex_unlock(&w->lock);
            continue;
        }
        w->t->partitions[id] = p;
    }
}

/* Opens partitions [from, to) of t into t->partitions (LG11 when fresh). On failure every one
 * it opened is closed and freed, and the slots are NULL again. */
static int partitions_open(struct log *lg, struct topic *t, uint32_t from, uint32_t to, bool clean,
                           bool fresh)
{
    uint32_t count = to - from;
    struct open_work w = {.lg = lg, .t = t, .from = from, .to = to, .clean = clean, .fresh = fresh};
    w.recs = calloc(count ? count : 1, sizeof(*w.recs));
    if (!w.recs)
        return -ENOMEM;
    atomic_init(&w.next, 0);
    atomic_init(&w.first, 0);
    pthread_mutex_init(&w.lock, NULL);
    uint32_t threads = fresh ? count / OPEN_PARTITIONS_A_THREAD : open_threads_existing(count);
    if (threads > OPEN_THREADS_MAX)
        threads = OPEN_THREADS_MAX;
    pthread_t th[OPEN_THREADS_MAX];
    uint32_t started = 0;
    for (; started < threads; started++)
        if (pthread_create(&th[started], NULL, open_worker, &w) != 0)
            break; /* the calling thread does what is left */
    (void)open_worker(&w);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&w.lock);
    int first = atomic_load(&w.first);
    int rc = first ? error_set(first, "%s", w.detail) : 0;
    if (rc == 0 && fresh && count > 0) {
        rc = fs_fsync_dir(t->pcfg.segment.faults, lg->dir); /* LG11: every new name at once */
        if (rc)
            rc = error_set(rc, "%s: fsync: %s", lg->dir, strerror(-rc));
    }
    for (uint32_t i = from; i < to; i++) {
        if (!t->partitions[i])
            continue;
        if (rc) {
            partition_close(t->partitions[i], false);
            free(t->partitions[i]);
            t->partitions[i] = NULL;
        } else {
            recovery_add(&lg->recovery, &w.recs[i - from]);
        }
    }
    free(w.recs);
    return rc;
}

static int partitions_build(struct log *lg, struct topic *t, uint32_t from, uint32_t to, bool clean,
                            bool shards_running)
{
    /* New partitions of a running engine are made in parallel (LG11), and so are an engine
     * open's (LG15). */
    int rc = partitions_open(lg, t, from, to, clean, shards_running && !t->pcfg.segment.read_only);
    if (rc)
        return rc;
    if (shards_running) /* SP9: the pre-writer's list is for an engine's open (log_start) */
        for (uint32_t i = from; i < to; i++)
            partition_leftover_dispose(t->partitions[i], false);
    uint32_t opened = to, attached = from;
    for (; rc == 0 && attached < to; attached++) {
        struct shard *s = &lg->shards[(lg->partitions_total + attached - from) % lg->shard_count];
        if (shards_running) {
            struct shard_request req = {.kind = SHARD_REQ_CALL};
            req.fn = add_partition_call;
            req.arg = t->partitions[attached];
            rc = shard_submit(s, &req);
        } else {
            rc = shard_add_partition(s, t->partitions[attached]);
        }
        if (rc)
            break;
    }
    if (rc) {
        for (uint32_t i = from; i < attached; i++) {
            struct shard_request req = {
                .kind = SHARD_REQ_CALL, .fn = shard_remove_call, .arg = t->partitions[i]};
            if (shards_running)
                (void)shard_submit(t->partitions[i]->shard, &req);
            else
                (void)shard_remove_call(t->partitions[i]->shard, t->partitions[i]);
        }
        for (uint32_t i = from; i < opened; i++) {
            partition_close(t->partitions[i], false);
            free(t->partitions[i]);
            t->partitions[i] = NULL;
        }
        return rc;
    }
    lg->partitions_total += to - from;
    return 0;
}

/* LG13: undoes partitions_build(lg, t, from, to, ..., true) that succeeded, for partitions
 * nobody can see yet (topic_count or partition_count not raised past them): off their shards
 * (synchronously: the shard no longer touches them), closed and freed. Their directories stay;
 * the caller removes them under its intent. */
static void partitions_unbuild(struct log *lg, struct topic *t, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        struct partition *p = t->partitions[i];
        cleaner_cancel(p);
        cleaner_pool_forget(&lg->cleaner, p);
        cleaner_wait(p);
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = shard_remove_call, .arg = p};
        (void)shard_submit(p->shard, &req);
        partition_close(p, false);
        free(p);
        t->partitions[i] = NULL;
    }
    lg->partitions_total -= to - from;
}

/* LG13: undoes a topic_build that succeeded for a topic nobody can see yet. */
static void topic_unbuild(struct log *lg, struct topic *t)
{
    partitions_unbuild(lg, t, 0, atomic_load_explicit(&t->partition_count, memory_order_acquire));
    atomic_store_explicit(&t->partition_count, 0, memory_order_release);
    free(t->partitions);
    t->partitions = NULL;
}

/* The partitions' compaction settings from a topic's resolved configs (cleaner.c). */
static void log_compaction_config(const struct log *lg, const struct topic_config_honoured *hc,
                                  struct partition_compaction *out)
{
    out->compact = hc->compact;
    out->min_dirty_ratio = hc->min_dirty_ratio;
    out->min_lag_ms = hc->min_compaction_lag_ms;
    out->max_lag_ms = hc->max_compaction_lag_ms;
    out->delete_retention_ms = hc->delete_retention_ms;
    out->buffer_bytes = lg->opts.cleaner_buffer_bytes;
}

/* A topic's honoured configs (TC3): its overrides over the dynamic defaults (TC4) over the
 * engine's options. Under admin_lock (or before the engine is shared). */
static void log_topic_resolve(const struct log *lg, const struct topic_config *config,
                              struct topic_config_honoured *out)
{
    struct topic_config merged = {{0}}; /* borrowed strings: never freed */
    for (int k = 0; k < TC_KEYS; k++)
        merged.value[k] = config && config->value[k] ? config->value[k] : lg->dyn_defaults.value[k];
    topic_config_resolve(&merged, &lg->opts, out);
}

/* Builds a topic: its configs, its partition table (room for partitions_max, so partitions
 * are added without moving any: LG10), its partitions. */
static int topic_build(struct log *lg, struct topic *t, const char *name, uint32_t partitions,
                       const struct topic_config *config, bool clean, bool shards_running)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    /* The topic's configs (topic_config.h TC3) over the engine's options. */
    struct topic_config_honoured hc;
    if (meta_topic_name_internal(name)) {
        struct topic_config none = {{0}}; /* internal topics: the engine's options alone */
        topic_config_resolve(config ? config : &none, &lg->opts, &hc);
    } else {
        log_topic_resolve(lg, config, &hc); /* TC4 */
    }
    atomic_init(&t->max_message_bytes, hc.max_message_bytes);
    atomic_init(&t->timestamp_type, (int)hc.timestamp_type);
    atomic_init(&t->compact, hc.compact);
    t->segment_bytes = hc.segment_bytes;
    t->partition_capacity =
        partitions > lg->opts.partitions_max ? partitions : lg->opts.partitions_max;
    t->partitions = calloc(t->partition_capacity, sizeof(*t->partitions));
    if (!t->partitions)
        return -ENOMEM;
    /* Internal topics (__transaction_state, __consumer_offsets) hold little: small segments,
     * so they do not preallocate a user-sized segment each. */
    struct partition_config cfg = lg->pcfg;
    cfg.topic = t;
    cfg.retention_ms = hc.delete_enabled ? hc.retention_ms : -1;
    cfg.retention_bytes = hc.delete_enabled ? hc.retention_bytes : -1;
    cfg.segment_ms = hc.segment_ms;
    log_compaction_config(lg, &hc, &cfg.compaction);
    cfg.segment.capacity_bytes =
        hc.segment_bytes < SEGMENT_FILE_MIN_BYTES ? SEGMENT_FILE_MIN_BYTES : hc.segment_bytes;
    if (cfg.segment.capacity_bytes < SEGMENT_POOL_SEGMENT_MIN_BYTES)
        cfg.segment.pool = NULL; /* as log_init decides for the engine's segment size */
    if (meta_topic_name_internal(name)) {
        /* Never below the largest batch: the coordinator's records and a group's offsets must
         * fit whatever segment size the user topics have (Kafka sizes these topics apart:
         * offsets.topic.segment.bytes, transaction.state.log.segment.bytes). */
        uint64_t small = 8u << 20;
        if (small < lg->opts.batch_size_max_bytes)
            small = lg->opts.batch_size_max_bytes;
        if (cfg.segment.capacity_bytes > small)
            cfg.segment.capacity_bytes = small;
        if (cfg.segment.capacity_bytes < lg->opts.batch_size_max_bytes)
            cfg.segment.capacity_bytes = lg->opts.batch_size_max_bytes;
        cfg.retention_bytes = -1;
        cfg.retention_ms = -1;
        cfg.compaction.compact = false; /* their own checkpoint compaction (format.md H.5) */
    }
    t->pcfg = cfg;
    int rc = partitions_build(lg, t, 0, partitions, clean, shards_running);
    if (rc) {
        free(t->partitions);
        t->partitions = NULL;
        return rc;
    }
    atomic_store_explicit(&t->partition_count, partitions, memory_order_release);
    return 0;
}

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
        struct segment *seg = p->segments[i];
        if (segment_pin(seg) != 0) /* SG6, SG8 */
            break;
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
        segment_unpin(seg);
    }
    return m.max;
}

static void shards_stop(struct log *lg)
{
    if (lg->shards_stopped)
        return;
    lg->shards_stopped = true;
    for (uint32_t i = 0; i < lg->shard_count; i++)
        shard_stop(&lg->shards[i]);
}

/* Closing many partitions: each seal waits for a few flushes of its own files, so they run on
 * up to CLOSE_THREADS_MAX threads (a device serves parallel flushes at little more than the cost
 * of one); partitions share nothing a close touches once the shards and the pre-writer stopped.
 * The first failure's code and detail are kept (the detail is thread-local, error.h). */
#define CLOSE_THREADS_MAX         8
#define CLOSE_PARTITIONS_A_THREAD 64

struct close_work {
    struct partition **parts;
    uint32_t count;
    bool seal;
    _Atomic uint32_t next;
    pthread_mutex_t lock;
    int first;
    char detail[512];
};

static void *close_worker(void *arg)
{
    struct close_work *w = arg;
    for (;;) {
        uint32_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->count)
            return NULL;
        int rc = partition_close(w->parts[i], w->seal);
        if (rc) {
            pthread_mutex_lock(&w->lock);
            if (!w->first) {
                w->first = rc;
                snprintf(w->detail, sizeof(w->detail), "%s", rt_error_detail());
            }
            pthread_mutex_unlock(&w->lock);
        }
    }
}

static int close_partitions(struct partition **parts, uint32_t count, bool seal)
{
    struct close_work w = {.parts = parts, .count = count, .seal = seal};
    atomic_init(&w.next, 0);
    pthread_mutex_init(&w.lock, NULL);
    uint32_t threads = count / CLOSE_PARTITIONS_A_THREAD;
    if (threads > CLOSE_THREADS_MAX)
        threads = CLOSE_THREADS_MAX;
    pthread_t th[CLOSE_THREADS_MAX];
    uint32_t started = 0;
    for (; started < threads; started++)
        if (pthread_create(&th[started], NULL, close_worker, &w) != 0)
            break; /* the calling thread does what is left */
    (void)close_worker(&w);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&w.lock);
    if (w.first)
        return error_set(w.first, "%s", w.detail);
    return 0;
}

static int close_topics(struct log *lg, bool seal)
{
    int first = 0, rc_one = 0;
    uint32_t n = atomic_load(&lg->topic_count);
    uint32_t total = 0;
    for (uint32_t t = 0; t < n; t++)
        total += lg->topics[t].partition_count;
    struct partition **parts = total ? malloc((size_t)total * sizeof(*parts)) : NULL;
    uint32_t k = 0;
    for (uint32_t t = 0; t < n; t++) {
        /* LG8: a deleted topic's files are renamed away: closed without a seal, errors
         * ignored. */
        bool gone = atomic_load_explicit(&lg->topics[t].deleted, memory_order_acquire);
        for (uint32_t i = 0; i < lg->topics[t].partition_count; i++) {
            if (gone)
                (void)partition_close(lg->topics[t].partitions[i], false);
            else if (parts)
                parts[k++] = lg->topics[t].partitions[i];
            else if ((rc_one = partition_close(lg->topics[t].partitions[i], seal)) && !first)
                first = rc_one;
        }
    }
    if (parts) {
        first = close_partitions(parts, k, seal);
        free(parts);
    }
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < lg->topics[t].partition_count; i++)
            free(lg->topics[t].partitions[i]);
    for (uint32_t t = 0; t < n; t++)
        free(lg->topics[t].partitions);
    /* A topic whose catalogue update failed (log_topic_create) stays in the slot past the
     * count, its partitions attached to the shards until they stopped: closed here. */
    if (lg->topics && n < lg->topics_capacity && lg->topics[n].partitions) {
        for (uint32_t i = 0; i < lg->topics[n].partition_count; i++) {
            (void)partition_close(lg->topics[n].partitions[i], false);
            free(lg->topics[n].partitions[i]);
        }
        free(lg->topics[n].partitions);
        lg->topics[n].partitions = NULL;
    }
    atomic_store(&lg->topic_count, 0);
    return first;
}

static const struct topic *topic_find(struct log *lg, const char *name)
{
    uint32_t n = atomic_load_explicit(&lg->topic_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(lg->topics[i].name, name) == 0 &&
            !atomic_load_explicit(&lg->topics[i].deleted, memory_order_acquire))
            return &lg->topics[i];
    return NULL;
}

/* ---- F4 (issue 21): a topic creation that fails or crashes leaves nothing behind ----
 *
 * Before a creation makes its first partition directory it makes its intent durable:
 * `<dir>/topic-create.tmp` holds "ringtail topic create 1\n<name>\n<partitions>\nend\n",
 * written, fdatasynced, its name fsynced into the data directory. Once the catalogue names the
 * topic the intent is removed. A creation that fails removes the directories it made (every
 * `<name>-<p>`, p < partitions: their files unlinked, each directory fsynced, then removed, the
 * data directory fsynced), then the intent. A writing open that finds the intent (a crash, or a
 * rollback that failed) does the same unless the catalogue names the topic (the creation was
 * complete). The invariants (beside LG1-LG3 in log.h):
 *   LG4  no `<name>-<p>` directory is created, or reused, before the intent naming it is
 *          durable, so a directory a crashed creation made is always covered by an intent;
 *   LG5  the intent is removed only after the catalogue names the topic durably or every
 *          directory it covers is gone durably, so a crash at any step leaves either a complete
 *          topic or an intent that the next open resolves;
 *   LG6  an intent that does not parse (a torn write of it) covers nothing: no directory was
 *          made after it (LG4 waits for its fdatasync), so open just removes it.
 *   LG13 a creation whose catalogue could not be stored, ringtail.meta left as it was (the
 *          write or fdatasync of its new copy failed: a full disk), is undone in place like a
 *          failed build (topic_unbuild: its partitions off their shards, closed; its
 *          directories, then its intent, removed): the engine's write side stays up and the
 *          same creation may be retried once the disk takes writes; partitions being added
 *          (LG10) are undone the same way (partitions_unbuild). Only a failure after the
 *          rename (the directory's fsync) leaves the write side failed until a reopen.
 * A `<name>-<p>` directory that no catalogued topic owns is never a topic's data: a creation
 * removes such leftovers (of a crash before this rule) under its intent before making its own, so
 * a new topic never inherits a stale log. Verify skips the intent (a *.tmp). */
#define LOG_CREATE_INTENT_FILE  "topic-create.tmp"
#define LOG_CREATE_INTENT_MAGIC "ringtail topic create 1"

size_t log_create_intent_format(char out[LOG_CREATE_INTENT_BYTES_MAX], const char *name,
                                uint32_t partitions)
{
    assert(meta_topic_name_valid(name));
    assert(partitions > 0);
    int len = snprintf(out, LOG_CREATE_INTENT_BYTES_MAX, "%s\n%s\n%" PRIu32 "\nend\n",
                       LOG_CREATE_INTENT_MAGIC, name, partitions);
    assert(len > 0 && len < (int)LOG_CREATE_INTENT_BYTES_MAX);
    return (size_t)len;
}

int log_create_intent_parse(const char *text, size_t len, char name[RT_TOPIC_NAME_MAX + 1],
                            uint32_t *partitions)
{
    /* Input from disk: bounded scans only, then the one encoding (formatting what was read must
     * give back exactly the input), so a torn or edited file is never half believed (LG6). */
    size_t magic_len = strlen(LOG_CREATE_INTENT_MAGIC);
    if (len < magic_len + 1 || len > LOG_CREATE_INTENT_BYTES_MAX ||
        memcmp(text, LOG_CREATE_INTENT_MAGIC "\n", magic_len + 1) != 0)
        return RT_E_CORRUPT;
    size_t at = magic_len + 1;
    const char *nl = memchr(text + at, '\n', len - at);
    if (!nl || nl == text + at || (size_t)(nl - (text + at)) > RT_TOPIC_NAME_MAX)
        return RT_E_CORRUPT;
    size_t name_len = (size_t)(nl - (text + at));
    char topic[RT_TOPIC_NAME_MAX + 1];
    memcpy(topic, text + at, name_len);
    topic[name_len] = 0;
    if (strlen(topic) != name_len || !meta_topic_name_valid(topic))
        return RT_E_CORRUPT;
    at += name_len + 1;
    uint64_t v = 0;
    size_t digits = 0;
    while (at < len && text[at] >= '0' && text[at] <= '9' && digits < 11) {
        v = v * 10 + (uint64_t)(text[at] - '0');
        at++;
        digits++;
    }
    if (digits == 0 || v == 0 || v > UINT32_MAX)
        return RT_E_CORRUPT;
    char again[LOG_CREATE_INTENT_BYTES_MAX];
    size_t again_len = log_create_intent_format(again, topic, (uint32_t)v);
    if (again_len != len || memcmp(again, text, len) != 0)
        return RT_E_CORRUPT;
    memcpy(name, topic, name_len + 1);
    *partitions = (uint32_t)v;
    return 0;
}

static int intent_path(const struct log *lg, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s", lg->dir, LOG_CREATE_INTENT_FILE);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* LG4: the intent for (name, partitions), durable on return. 0 or -errno. */
static int intent_write(struct log *lg, const char *name, uint32_t partitions)
{
    struct io_fault_plan *faults = lg->pcfg.segment.faults;
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = intent_path(lg, path, sizeof(path));
    if (rc)
        return rc;
    char text[LOG_CREATE_INTENT_BYTES_MAX];
    size_t len = log_create_intent_format(text, name, partitions);
    int fd = io_file_create(faults, path, O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return error_set(fd, "%s: cannot create: %s", path, strerror(-fd));
    rc = 0;
    size_t done = 0;
    while (done < len && rc == 0) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = n < 0 ? -errno : -EIO;
        else
            done += (size_t)n;
    }
    if (rc == 0)
        rc = io_fdatasync(faults, fd);
    close(fd);
    if (rc == 0)
        rc = fs_fsync_dir(faults, lg->dir);
    if (rc) {
        /* Nothing was made under it (LG4): take it back; if that fails too, it covers no
         * directory, and the next create or open removes it. */
        if (io_unlink(faults, path) == 0)
            (void)fs_fsync_dir(faults, lg->dir);
        return error_set(rc, "%s: cannot write: %s", path, strerror(-rc));
    }
    return 0;
}

/* Reads the intent: 0 with name and *partitions, -ENOENT (none), or RT_E_CORRUPT (torn or not
 * ours: LG6). */
static int intent_read(const struct log *lg, char *name, uint32_t *partitions)
{
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = intent_path(lg, path, sizeof(path));
    if (rc)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char text[LOG_CREATE_INTENT_BYTES_MAX + 1];
    ssize_t n = read(fd, text, sizeof(text));
    close(fd);
    if (n < 0)
        return -errno;
    return log_create_intent_parse(text, (size_t)n, name, partitions);
}

static int intent_clear(struct log *lg)
{
    struct io_fault_plan *faults = lg->pcfg.segment.faults;
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = intent_path(lg, path, sizeof(path));
    if (rc == 0)
        rc = io_unlink(faults, path);
    if (rc == -ENOENT)
        rc = 0;
    if (rc == 0)
        rc = fs_fsync_dir(faults, lg->dir);
    if (rc)
        return error_set(rc, "%s: cannot remove: %s", path, strerror(-rc));
    return 0;
}

/* Removes one partition directory and what it holds (files only: a partition directory holds
 * nothing else), durably: its entries are unlinked and the directory fsynced before it is
 * removed (the fault injector's model, and ext4, then never bring a file back into it). Its
 * own removal is made durable by the caller's fsync of the data directory. 0 when it is gone
 * (or never was), else -errno with the error detail set. */
static int partition_dir_remove(struct log *lg, const char *pdir)
{
    struct io_fault_plan *faults = lg->pcfg.segment.faults;
    DIR *d = opendir(pdir);
    if (!d)
        return errno == ENOENT ? 0
                               : error_set(-errno, "%s: cannot open: %s", pdir, strerror(errno));
    /* Names first, then the unlinks: the directory changes under readdir otherwise. */
    char **names = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nn = realloc(names, ncap * sizeof(*nn));
            if (!nn) {
                rc = -ENOMEM;
                break;
            }
            names = nn;
            cap = ncap;
        }
        if (!(names[count] = strdup(de->d_name)))
            rc = -ENOMEM;
        else
            count++;
    }
    closedir(d);
    for (size_t i = 0; i < count && rc == 0; i++) {
        char path[SEGMENT_PATH_BYTES];
        if (snprintf(path, sizeof(path), "%s/%s", pdir, names[i]) >= (int)sizeof(path))
            rc = -ENAMETOOLONG;
        else if ((rc = io_unlink(faults, path)) == -ENOENT)
            rc = 0;
        if (rc)
            error_set(rc, "%s: cannot remove: %s", path, strerror(-rc));
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    if (rc)
        return rc == -ENOMEM ? error_set(rc, "%s: out of memory", pdir) : rc;
    rc = fs_fsync_dir(faults, pdir);
    if (rc == 0)
        rc = io_rmdir(faults, pdir);
    if (rc == -ENOENT)
        rc = 0;
    if (rc)
        return error_set(rc, "%s: cannot remove: %s", pdir, strerror(-rc));
    return 0;
}

/* Removes `<name>-<p>` for every p < partitions (none of them catalogued: the caller checked),
 * then fsyncs the data directory. 0, or the first error (the rest are still tried). */
static int partition_dirs_remove_range(struct log *lg, const char *name, uint32_t from,
                                       uint32_t partitions)
{
    int first = 0;
    bool removed = false;
    for (uint32_t p = from; p < partitions; p++) {
        char pdir[SEGMENT_PATH_BYTES];
        int rc = meta_partition_dir(pdir, sizeof(pdir), lg->dir, name, p);
        if (rc == 0) {
            if (!fs_exists(pdir))
                continue;
            rc = partition_dir_remove(lg, pdir);
            removed = true;
        }
        if (rc && !first)
            first = rc;
    }
    if (removed) {
        int rc = fs_fsync_dir(lg->pcfg.segment.faults, lg->dir);
        if (rc && !first)
            first = error_set(rc, "%s: fsync: %s", lg->dir, strerror(-rc));
    }
    return first;
}

static int partition_dirs_remove(struct log *lg, const char *name, uint32_t partitions)
{
    return partition_dirs_remove_range(lg, name, 0, partitions);
}

/* LG5, LG6: resolves an intent left by a crash or a failed rollback. `catalogued` says
 * whether the topic it names is a complete topic. 0 when there is none left. */
static int intent_resolve(struct log *lg, bool (*catalogued)(struct log *lg, const char *name))
{
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partitions = 0;
    int rc = intent_read(lg, name, &partitions);
    if (rc == -ENOENT)
        return 0;
    if (rc == 0 && !catalogued(lg, name)) {
        rc = partition_dirs_remove(lg, name, partitions);
        if (rc)
            return rc;
    } else if (rc && rc != RT_E_CORRUPT) {
        return error_set(rc, "%s/%s: cannot read: %s", lg->dir, LOG_CREATE_INTENT_FILE,
                         strerror(-rc));
    }
    return intent_clear(lg);
}

static bool in_catalogue(struct log *lg, const char *name)
{
    return meta_find(&lg->catalogue, name) != NULL;
}

static bool in_topics(struct log *lg, const char *name)
{
    return topic_find(lg, name) != NULL;
}

/* Creates a topic under admin_lock. User topics count against topics_max; internal ones use
 * the slots reserved for them. */
int log_topic_create(struct log *lg, const char *name, uint32_t partitions,
                     const struct topic_config *config)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_topic_create");
    if (atomic_load(&lg->closing))
        return error_set(RT_E_CLOSED, "the engine is closing");
    bool internal = meta_topic_name_internal(name);
    pthread_mutex_lock(&lg->admin_lock);
    int rc = 0;
    uint32_t n = atomic_load(&lg->topic_count);
    if (topic_find(lg, name)) {
        rc = error_set(RT_E_TOPIC_ALREADY_EXISTS, "topic '%s' already exists", name);
        goto out;
    }
    uint32_t users = 0;
    for (uint32_t i = 0; i < n; i++)
        users +=
            !meta_topic_name_internal(lg->topics[i].name) && !atomic_load(&lg->topics[i].deleted);
    if (!internal && users >= lg->opts.topics_max) {
        rc = error_set(RT_E_TOPICS_FULL, "topics_max (%u) reached", lg->opts.topics_max);
        goto out;
    }
    if (n >= lg->topics_capacity) { /* internal topics, or TOPICS_DELETED_MAX deletions */
        rc = error_set(RT_E_TOPICS_FULL,
                       "no slot left for topic '%s' (%u slots, %u of deleted topics: those are "
                       "reclaimed at the next open)",
                       name, n, lg->topics_deleted);
        goto out;
    }
    /* The intent, then directories and first segments, then the catalogue, then no intent: a
     * crash in between leaves an intent the next open resolves (LG4, LG5), never a topic
     * without its partitions; a failure removes what was made. */
    char intent[SEGMENT_PATH_BYTES + 32];
    if (lg->topics[n].partitions ||
        (intent_path(lg, intent, sizeof(intent)) == 0 && fs_exists(intent) &&
         atomic_load_explicit(&lg->write_error, memory_order_acquire) != 0)) {
        /* The intent may name a topic whose catalogue update failed while its partitions are
         * attached to the shards (below): only a reopen may remove them. */
        rc = error_set(RT_E_IO_FAILED,
                       "an earlier topic creation could not be completed or undone (%s); "
                       "the engine's write side is failed until reopened",
                       rt_strerror(atomic_load(&lg->write_error)));
        goto out;
    }
    rc = intent_resolve(lg, in_topics); /* a rollback that failed earlier */
    if (rc == 0)
        rc = intent_write(lg, name, partitions);
    if (rc == 0)
        rc = partition_dirs_remove(lg, name, partitions); /* uncatalogued leftovers */
    if (rc)
        goto out;
    rc = topic_build(lg, &lg->topics[n], name, partitions, config, false, true);
    if (rc) {
        char cause[256];
        snprintf(cause, sizeof(cause), "%s", rt_error_detail());
        int rrc = partition_dirs_remove(lg, name, partitions);
        if (rrc == 0)
            rrc = intent_clear(lg);
        if (rrc)
            error_set(rc, "%s (and removing what it made failed: %s; the next open removes it)",
                      cause, rt_error_detail());
        else
            error_set(rc, "%s", cause);
        goto out;
    }
    bool added = false, renamed = false;
    rc = meta_add_topic(&lg->catalogue, name, partitions);
    added = rc == 0;
    if (rc == 0 && config)
        rc = topic_config_copy(&lg->catalogue.topics[lg->catalogue.count - 1].config, config);
    if (rc == 0)
        rc = meta_store_renamed(lg->pcfg.segment.faults, lg->dir, &lg->catalogue, &renamed);
    if (rc && !renamed) {
        /* LG13: ringtail.meta is as it was (a full disk refused the new one): nothing names
         * the topic, so it is undone as a failed build is — off the shards, its directories
         * and then its intent removed (LG5) — and the engine's write side stays up. */
        char cause[SEGMENT_PATH_BYTES + 128];
        snprintf(cause, sizeof(cause), "%s/%s: cannot store the topic catalogue: %s", lg->dir,
                 META_FILE, rt_strerror(rc));
        if (added) {
            struct meta_topic gone;
            uint32_t at = 0;
            if (meta_remove_topic(&lg->catalogue, name, &gone, &at) == 0)
                topic_config_free(&gone.config);
        }
        topic_unbuild(lg, &lg->topics[n]);
        int rrc = partition_dirs_remove(lg, name, partitions);
        if (rrc == 0)
            rrc = intent_clear(lg);
        if (rrc)
            error_set(rc, "%s (and removing what it made failed: %s; the next open removes it)",
                      cause, rt_error_detail());
        else
            error_set(rc, "%s; nothing of the topic is left", cause);
        goto out;
    }
    if (rc) {
        error_set(rc, "%s/%s: cannot store the topic catalogue: %s", lg->dir, META_FILE,
                  rt_strerror(rc));
        /* The partitions are attached to shards already; keep them usable but unlisted
         * would be worse than failing loudly: leave the engine's write side failed. */
        int expected = 0;
        atomic_compare_exchange_strong(&lg->write_error, &expected, rc);
        goto out;
    }
    atomic_store_explicit(&lg->topic_count, n + 1, memory_order_release);
    /* LG5: the topic is catalogued durably; an intent this fails to remove names a complete
     * topic, which the next open recognises (and a later create resolves first). */
    (void)intent_clear(lg);
out:
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

/* Runs on the partition's shard (the writer owns p->cfg): retention, segment.ms and compaction
 * as the topic's configs now say; the shard's next retention pass applies it. */
struct retention_set {
    struct partition *p;
    int64_t retention_ms;
    int64_t retention_bytes;
    int64_t segment_ms;
    struct partition_compaction compaction;
};

static int retention_set_call(struct shard *s, void *arg)
{
    (void)s;
    struct retention_set *r = arg;
    r->p->cfg.retention_ms = r->retention_ms;
    r->p->cfg.retention_bytes = r->retention_bytes;
    r->p->cfg.segment_ms = r->segment_ms;
    r->p->cfg.compaction = r->compaction;
    return 0;
}

/* Applies a topic's honoured configs (TC3, over the dynamic defaults: TC4) to the running
 * topic and its partitions (retention, segment.ms and compaction on each partition's shard). Under
 * admin_lock. */
static int topic_apply(struct log *lg, struct topic *t, const struct topic_config *config)
{
    struct topic_config_honoured hc;
    struct topic_config none = {{0}};
    if (meta_topic_name_internal(t->name))
        topic_config_resolve(config ? config : &none, &lg->opts, &hc); /* not TC4's */
    else
        log_topic_resolve(lg, config, &hc); /* TC4 */
    int rc = 0;
    atomic_store_explicit(&t->max_message_bytes, hc.max_message_bytes, memory_order_relaxed);
    atomic_store_explicit(&t->timestamp_type, (int)hc.timestamp_type, memory_order_relaxed);
    atomic_store_explicit(&t->compact, hc.compact, memory_order_relaxed);
    if (!meta_topic_name_internal(t->name)) {
        /* Partitions added later (LG10) are opened with t->pcfg: the same values. */
        t->pcfg.retention_ms = hc.delete_enabled ? hc.retention_ms : -1;
        t->pcfg.retention_bytes = hc.delete_enabled ? hc.retention_bytes : -1;
        t->pcfg.segment_ms = hc.segment_ms;
        log_compaction_config(lg, &hc, &t->pcfg.compaction);
    }
    for (uint32_t i = 0; i < t->partition_count && !meta_topic_name_internal(t->name); i++) {
        struct partition *p = t->partitions[i];
        struct retention_set r = {p,
                                  hc.delete_enabled ? hc.retention_ms : -1,
                                  hc.delete_enabled ? hc.retention_bytes : -1,
                                  hc.segment_ms,
                                  {0}};
        log_compaction_config(lg, &hc, &r.compaction);
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = retention_set_call, .arg = &r};
        if (lg->shards_started && !lg->shards_stopped) {
            int src = shard_submit(p->shard, &req);
            if (src && !rc)
                rc = error_set(src, "%s: applying retention: %s", p->dir, rt_strerror(src));
        } else {
            retention_set_call(NULL, &r); /* no shard thread runs: nothing else writes p */
        }
    }
    return rc;
}

int log_topic_config_store(struct log *lg, const char *name, const struct topic_config *config)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_topic_config_alter");
    int rc = log_write_check(lg);
    if (rc)
        return rc;
    pthread_mutex_lock(&lg->admin_lock);
    struct topic *t = (struct topic *)topic_find(lg, name);
    struct meta_topic *mt = meta_find_mut(&lg->catalogue, name);
    struct topic_config fresh, old;
    if (!t || !mt) {
        rc = error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
        goto out;
    }
    rc = topic_config_copy(&fresh, config);
    if (rc)
        goto out;
    /* TC: the new overrides go into the catalogue, which is replaced atomically (A.2): a crash
     * leaves the old or the new configs, never a mix. On failure memory keeps the old ones. */
    old = mt->config;
    mt->config = fresh;
    rc = meta_store(lg->pcfg.segment.faults, lg->dir, &lg->catalogue);
    if (rc) {
        mt->config = old;
        topic_config_free(&fresh);
        rc = error_set(rc,
                       "%s/%s: cannot store topic '%s' configs: %s (the file holds the old or the "
                       "new ones; the running topic keeps the old)",
                       lg->dir, META_FILE, name, rt_strerror(rc));
        goto out;
    }
    topic_config_free(&old);
    rc = topic_apply(lg, t, &mt->config);
out:
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

int log_topic_config_copy(struct log *lg, const char *name, struct topic_config *out)
{
    pthread_mutex_lock(&lg->admin_lock);
    const struct meta_topic *mt = meta_find(&lg->catalogue, name);
    int rc = mt ? topic_config_copy(out, &mt->config)
                : error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

int log_topic_defaults_store(struct log *lg, const struct topic_config *defaults)
{
    if (atomic_load(&lg->closing))
        return error_set(RT_E_CLOSED, "the engine is closing");
    struct topic_config fresh;
    int rc = topic_config_copy(&fresh, defaults);
    if (rc)
        return error_set(rc, "out of memory");
    pthread_mutex_lock(&lg->admin_lock);
    topic_config_free(&lg->dyn_defaults);
    lg->dyn_defaults = fresh;
    /* TC4: every user topic again; those with their own override of a key keep it. */
    uint32_t n = atomic_load(&lg->topic_count);
    for (uint32_t i = 0; i < n; i++) {
        struct topic *t = &lg->topics[i];
        if (atomic_load_explicit(&t->deleted, memory_order_acquire) ||
            meta_topic_name_internal(t->name))
            continue;
        const struct meta_topic *mt = meta_find(&lg->catalogue, t->name);
        int arc = topic_apply(lg, t, mt ? &mt->config : NULL);
        if (arc && !rc)
            rc = arc;
    }
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

int log_topic_defaults_copy(struct log *lg, struct topic_config *out)
{
    pthread_mutex_lock(&lg->admin_lock);
    int rc = topic_config_copy(out, &lg->dyn_defaults);
    pthread_mutex_unlock(&lg->admin_lock);
    return rc ? error_set(rc, "out of memory") : 0;
}

/* ---- topic deletion (issue 20 item 6) ----
 *
 * rt_topic_delete: (1) a deletion intent, `<dir>/topic-delete.tmp` ("ringtail topic delete 1\n
 * <name>\n<partitions>\nend\n"), durable; (2) the catalogue without the topic, stored (the
 * commit point); (3) the topic hidden from lookups and its partitions detached from their
 * shards; (4) each `<name>-<p>` renamed to `<name>-<p>.<id>-delete` (as Kafka renames a deleted
 * log aside), the data directory fsynced; (5) no intent; (6) a background thread removes the
 * renamed directories. A writing open removes every `*-delete` directory, and, when it finds
 * the intent and the catalogue does not name its topic, that topic's `<name>-<p>` directories
 * (the crash came between 2 and 4); then the intent.
 *   LG7  A deleted topic's slot is never reused while the engine is open: lookups skip it (a
 *        release store of `deleted`), and its partitions stay allocated until log_close, so a
 *        caller that found a partition before the deletion (a fetch, an append in flight)
 *        finishes against valid memory; fetches keep their segments mapped (renamed and
 *        unlinked files stay readable through their mappings) until released.
 *   LG8  A deleted topic's partitions are closed without sealing and their errors ignored:
 *        their directories are gone, and nothing of them is read again.
 *   LG9  The intent is removed only after every `<name>-<p>` is renamed aside durably or the
 *        catalogue still names the topic, so a crash at any step leaves a whole topic or one
 *        the next open finishes deleting; a recreated topic of the name starts empty (its
 *        creation removes uncatalogued `<name>-<p>` leftovers under its own intent, LG4). */
#define LOG_DELETE_INTENT_FILE  "topic-delete.tmp"
#define LOG_DELETE_INTENT_MAGIC "ringtail topic delete 1"
#define LOG_DELETE_SUFFIX       "-delete"

/* The deletion and partition-addition intents: a file, its first line; the create intent's
 * grammar below it. */
struct intent_kind {
    const char *file;
    const char *tmp;
    const char *magic;
};
static const struct intent_kind delete_intent = {LOG_DELETE_INTENT_FILE, "topic-delete.part.tmp",
                                                 LOG_DELETE_INTENT_MAGIC};
static const struct intent_kind add_intent = {"topic-add.tmp", "topic-add.part.tmp",
                                              "ringtail topic add 1"};

static int kind_intent_path(const struct log *lg, const struct intent_kind *k, char *buf,
                            size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s", lg->dir, k->file);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int delete_intent_path(const struct log *lg, char *buf, size_t cap)
{
    return kind_intent_path(lg, &delete_intent, buf, cap);
}

/* Durable on return (an atomic replace: a crash leaves it whole or absent). */
static int kind_intent_write(struct log *lg, const struct intent_kind *k, const char *name,
                             uint32_t partitions)
{
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = kind_intent_path(lg, k, path, sizeof(path));
    if (rc)
        return rc;
    char text[LOG_CREATE_INTENT_BYTES_MAX + 8];
    int len =
        snprintf(text, sizeof(text), "%s\n%s\n%" PRIu32 "\nend\n", k->magic, name, partitions);
    assert(len > 0 && len < (int)sizeof(text));
    rc = fs_replace_file(lg->pcfg.segment.faults, lg->dir, k->tmp, k->file, (const uint8_t *)text,
                         (size_t)len);
    if (rc)
        return error_set(rc, "%s: cannot write: %s", path, strerror(-rc));
    return 0;
}

static int delete_intent_write(struct log *lg, const char *name, uint32_t partitions)
{
    return kind_intent_write(lg, &delete_intent, name, partitions);
}

/* The intent's topic and partition count: 0, -ENOENT, or RT_E_CORRUPT (torn: covers nothing,
 * since it was made durable by an atomic replace before anything else). */
static int kind_intent_read(const struct log *lg, const struct intent_kind *k,
                            char name[RT_TOPIC_NAME_MAX + 1], uint32_t *partitions)
{
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = kind_intent_path(lg, k, path, sizeof(path));
    if (rc)
        return rc;
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = fs_read_file(path, &buf, &len, LOG_CREATE_INTENT_BYTES_MAX + 8);
    if (rc)
        return rc;
    /* The create intent's grammar under another first line. */
    size_t magic = strlen(k->magic);
    char as_create[LOG_CREATE_INTENT_BYTES_MAX + 8];
    rc = RT_E_CORRUPT;
    if (len > magic && memcmp(buf, k->magic, magic) == 0 &&
        len - magic + strlen(LOG_CREATE_INTENT_MAGIC) <= LOG_CREATE_INTENT_BYTES_MAX) {
        size_t n = (size_t)snprintf(as_create, sizeof(as_create), "%s", LOG_CREATE_INTENT_MAGIC);
        memcpy(as_create + n, buf + magic, len - magic);
        rc = log_create_intent_parse(as_create, n + len - magic, name, partitions);
    }
    free(buf);
    return rc;
}

static int delete_intent_read(const struct log *lg, char name[RT_TOPIC_NAME_MAX + 1],
                              uint32_t *partitions)
{
    return kind_intent_read(lg, &delete_intent, name, partitions);
}

static int kind_intent_clear(struct log *lg, const struct intent_kind *k)
{
    char path[SEGMENT_PATH_BYTES + 32];
    int rc = kind_intent_path(lg, k, path, sizeof(path));
    if (rc == 0)
        rc = io_unlink(lg->pcfg.segment.faults, path);
    if (rc == -ENOENT)
        rc = 0;
    if (rc == 0)
        rc = fs_fsync_dir(lg->pcfg.segment.faults, lg->dir);
    if (rc)
        return error_set(rc, "%s: cannot remove: %s", path, strerror(-rc));
    return 0;
}

static int delete_intent_clear(struct log *lg)
{
    return kind_intent_clear(lg, &delete_intent);
}

static bool delete_dir_name(const char *n)
{
    size_t len = strlen(n), s = strlen(LOG_DELETE_SUFFIX);
    return len > s && strcmp(n + len - s, LOG_DELETE_SUFFIX) == 0 && strchr(n, '.') != NULL;
}

/* Removes every `*-delete` directory of the data directory (what deletions left), then
 * fsyncs it. 0 or the first error. */
static int deleted_dirs_remove(struct log *lg)
{
    DIR *d = opendir(lg->dir);
    if (!d)
        return error_set(-errno, "%s: cannot open: %s", lg->dir, strerror(errno));
    int first = 0;
    bool removed = false;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!delete_dir_name(de->d_name))
            continue;
        char path[SEGMENT_PATH_BYTES];
        if (snprintf(path, sizeof(path), "%s/%s", lg->dir, de->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        int rc = partition_dir_remove(lg, path);
        removed = removed || rc == 0;
        if (rc && !first)
            first = rc;
    }
    closedir(d);
    if (removed) {
        int rc = fs_fsync_dir(lg->pcfg.segment.faults, lg->dir);
        if (rc && !first)
            first = error_set(rc, "%s: fsync: %s", lg->dir, strerror(-rc));
    }
    return first;
}

/* LG9 at open: finishes a deletion a crash interrupted. */
static int delete_resolve(struct log *lg)
{
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partitions = 0;
    int rc = delete_intent_read(lg, name, &partitions);
    if (rc == 0 && !in_catalogue(lg, name))
        rc = partition_dirs_remove(lg, name, partitions);
    else if (rc == RT_E_CORRUPT || (rc == 0 && in_catalogue(lg, name)))
        rc = 0; /* torn (it covered nothing) or the commit never happened */
    if (rc == 0 || rc == -ENOENT) {
        bool had = rc == 0;
        rc = deleted_dirs_remove(lg);
        if (rc == 0 && had)
            rc = delete_intent_clear(lg);
        if (rc == 0) {
            char path[SEGMENT_PATH_BYTES + 32];
            if (delete_intent_path(lg, path, sizeof(path)) == 0 && fs_exists(path))
                rc = delete_intent_clear(lg); /* a torn one */
        }
        return rc;
    }
    return error_set(rc, "%s/%s: cannot read: %s", lg->dir, LOG_DELETE_INTENT_FILE,
                     rt_strerror(rc));
}

static int shard_remove_call(struct shard *s, void *arg)
{
    struct partition *p = arg;
    for (uint32_t i = 0; i < s->partition_count; i++)
        if (s->partitions[i] == p) {
            s->partitions[i] = s->partitions[--s->partition_count];
            break;
        }
    return 0;
}

struct reaper {
    struct log *lg;
    char **dirs;
    uint32_t count;
};

static void *reaper_main(void *arg)
{
    struct reaper *r = arg;
    for (uint32_t i = 0; i < r->count; i++) {
        (void)partition_dir_remove(r->lg, r->dirs[i]); /* a failure: the next open removes it */
        free(r->dirs[i]);
    }
    (void)fs_fsync_dir(r->lg->pcfg.segment.faults, r->lg->dir);
    free(r->dirs);
    free(r);
    return NULL;
}

int log_topic_delete(struct log *lg, const char *name)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_topic_delete");
    int rc = log_write_check(lg);
    if (rc)
        return rc;
    if (meta_topic_name_internal(name))
        return error_set(RT_E_INTERNAL_TOPIC, "topic '%s' is internal: the engine's own", name);
    pthread_mutex_lock(&lg->admin_lock);
    struct topic *t = (struct topic *)topic_find(lg, name);
    if (!t) {
        rc = error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
        goto out;
    }
    uint32_t parts = t->partition_count;
    /* The reaper's list before anything changes: nothing can fail for memory after (5). */
    struct reaper *r = calloc(1, sizeof(*r));
    char **dirs = calloc(parts, sizeof(*dirs));
    pthread_t *reapers = realloc(lg->reapers, (lg->reaper_count + 1) * sizeof(*reapers));
    if (reapers)
        lg->reapers = reapers;
    if (!r || !dirs || !reapers) {
        free(r);
        free(dirs);
        rc = error_set(-ENOMEM, "deleting topic '%s': out of memory", name);
        goto out;
    }
    char id[24];
    snprintf(id, sizeof(id), "%016" PRIx64, (uint64_t)fs_now_ms() ^ ((uint64_t)getpid() << 40));
    for (uint32_t p = 0; p < parts && rc == 0; p++) {
        char buf[SEGMENT_PATH_BYTES];
        int n = snprintf(buf, sizeof(buf), "%s.%s%s", t->partitions[p]->dir, id, LOG_DELETE_SUFFIX);
        if (n < 0 || n >= (int)sizeof(buf) || !(dirs[p] = strdup(buf)))
            rc = error_set(-ENAMETOOLONG, "deleting topic '%s': a name too long", name);
    }
    /* (1), (2): the intent, then the commit. */
    struct meta_topic removed;
    uint32_t index = 0;
    if (rc == 0)
        rc = delete_intent_write(lg, name, parts);
    if (rc == 0 && meta_remove_topic(&lg->catalogue, name, &removed, &index) != 0)
        rc = error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "topic '%s' is not catalogued", name);
    else if (rc == 0) {
        rc = meta_store(lg->pcfg.segment.faults, lg->dir, &lg->catalogue);
        if (rc) {
            meta_insert_topic(&lg->catalogue, &removed, index);
            error_set(rc,
                      "%s/%s: cannot store the topic catalogue: %s (the file names the topic "
                      "or not; the next open finishes or forgets the deletion)",
                      lg->dir, META_FILE, rt_strerror(rc));
            (void)delete_intent_clear(lg); /* only if the old catalogue is what is on disk */
        } else {
            topic_config_free(&removed.config);
        }
    }
    if (rc) {
        for (uint32_t p = 0; p < parts; p++)
            free(dirs[p]);
        free(dirs);
        free(r);
        goto out;
    }
    /* (3): no clean swaps any more (cleaner.c CLB5: before the topic is hidden, so whoever sees
     * it hidden sees the cancel), hidden (LG7), then off the shards (appends already queued
     * finish first). */
    for (uint32_t p = 0; p < parts; p++) {
        cleaner_cancel(t->partitions[p]);
        cleaner_pool_forget(&lg->cleaner, t->partitions[p]);
    }
    atomic_store_explicit(&t->deleted, true, memory_order_release);
    lg->topics_deleted++;
    for (uint32_t p = 0; p < parts; p++) {
        cleaner_wait(t->partitions[p]); /* CLB5: none runs when the directory moves */
        struct shard_request req = {
            .kind = SHARD_REQ_CALL, .fn = shard_remove_call, .arg = t->partitions[p]};
        (void)shard_submit(t->partitions[p]->shard, &req);
    }
    /* (4), (5): renamed aside durably; then no intent (LG9). */
    for (uint32_t p = 0; p < parts && rc == 0; p++) {
        rc = io_rename(lg->pcfg.segment.faults, t->partitions[p]->dir, dirs[p]);
        if (rc == -ENOENT)
            rc = 0;
        if (rc)
            error_set(rc, "%s: cannot rename to %s: %s (the next open removes it)",
                      t->partitions[p]->dir, dirs[p], strerror(-rc));
    }
    if (rc == 0) {
        rc = fs_fsync_dir(lg->pcfg.segment.faults, lg->dir);
        if (rc)
            error_set(rc, "%s: fsync: %s (the next open finishes the deletion)", lg->dir,
                      strerror(-rc));
    }
    if (rc == 0)
        (void)delete_intent_clear(lg); /* left: the next open finds it finished */
    /* (6): the files go in the background; fds and mappings keep what fetches read. */
    r->lg = lg;
    r->dirs = dirs;
    r->count = parts;
    if (pthread_create(&lg->reapers[lg->reaper_count], NULL, reaper_main, r) == 0) {
        lg->reaper_count++;
    } else {
        for (uint32_t p = 0; p < parts; p++)
            free(dirs[p]);
        free(dirs);
        free(r); /* the next open removes them */
    }
    /* The deletion is committed (2): a failure after it is reported, the topic is gone. */
    rc = 0;
out:
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

/* ---- partitions added to a topic (CreatePartitions) ----
 *
 * rt_topic_add_partitions: (1) an addition intent, `<dir>/topic-add.tmp` ("ringtail topic add
 * 1\n<name>\n<new count>\nend\n"), durable; (2) uncatalogued `<name>-<p>` leftovers for the new
 * p removed; (3) the new partitions opened (directories and first segments durable) and handed
 * to shards; (4) the catalogue with the new count, stored (the commit); (5) the count published
 * (LG10); (6) no intent. A failure before (4) takes the new partitions off their shards, closes
 * and removes them; a writing open that finds the intent removes `<name>-<p>` for every p at
 * or above the catalogued count and below the intent's (a crash before the commit).
 *   LG10 A topic's partition table has room for partitions_max partitions from its creation;
 *        partitions are allocated one by one and never move, and partition_count rises only
 *        after the partitions below it are open and on their shards: a lookup that sees the new
 *        count finds them whole. */
static int add_resolve(struct log *lg)
{
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t count = 0;
    int rc = kind_intent_read(lg, &add_intent, name, &count);
    if (rc == -ENOENT)
        return 0;
    if (rc == 0) {
        const struct meta_topic *mt = meta_find(&lg->catalogue, name);
        uint32_t have = mt ? mt->partitions : 0;
        if (have < count)
            rc = partition_dirs_remove_range(lg, name, have, count);
    } else if (rc == RT_E_CORRUPT) {
        rc = 0; /* torn: an atomic replace that never happened covers nothing */
    }
    if (rc == 0)
        rc = kind_intent_clear(lg, &add_intent);
    return rc;
}

int log_topic_add_partitions(struct log *lg, const char *name, uint32_t count)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_topic_add_partitions");
    int rc = log_write_check(lg);
    if (rc)
        return rc;
    if (meta_topic_name_internal(name))
        return error_set(RT_E_INTERNAL_TOPIC, "topic '%s' is internal: the engine's own", name);
    pthread_mutex_lock(&lg->admin_lock);
    struct topic *t = (struct topic *)topic_find(lg, name);
    struct meta_topic *mt = meta_find_mut(&lg->catalogue, name);
    if (!t || !mt) {
        rc = error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
        goto out;
    }
    uint32_t have = atomic_load(&t->partition_count);
    if (count <= have || count > t->partition_capacity || count > lg->opts.partitions_max) {
        rc = error_set(RT_E_INVALID_ARGUMENT,
                       "topic '%s' has %u partitions; a new count must be above it and at most "
                       "partitions_max (%u), got %u",
                       name, have, lg->opts.partitions_max, count);
        goto out;
    }
    rc = kind_intent_write(lg, &add_intent, name, count);
    if (rc == 0)
        rc = partition_dirs_remove_range(lg, name, have, count);
    if (rc == 0)
        rc = partitions_build(lg, t, have, count, false, true);
    if (rc) {
        char cause[256];
        snprintf(cause, sizeof(cause), "%s", rt_error_detail());
        int rrc = partition_dirs_remove_range(lg, name, have, count);
        if (rrc == 0)
            rrc = kind_intent_clear(lg, &add_intent);
        error_set(rc, "%s%s", cause,
                  rrc ? " (and removing what it made failed; the next open does)" : "");
        goto out;
    }
    mt->partitions = count;
    bool renamed = false;
    rc = meta_store_renamed(lg->pcfg.segment.faults, lg->dir, &lg->catalogue, &renamed);
    if (rc && !renamed) {
        /* LG13: ringtail.meta still says `have`: the new partitions are undone in place. */
        mt->partitions = have;
        char cause[SEGMENT_PATH_BYTES + 128];
        snprintf(cause, sizeof(cause), "%s/%s: cannot store the topic catalogue: %s", lg->dir,
                 META_FILE, rt_strerror(rc));
        partitions_unbuild(lg, t, have, count);
        int rrc = partition_dirs_remove_range(lg, name, have, count);
        if (rrc == 0)
            rrc = kind_intent_clear(lg, &add_intent);
        if (rrc)
            error_set(rc, "%s (and removing what it made failed: %s; the next open removes it)",
                      cause, rt_error_detail());
        else
            error_set(rc, "%s; the topic keeps its %u partitions", cause, have);
        goto out;
    }
    if (rc) {
        mt->partitions = have;
        error_set(rc, "%s/%s: cannot store the topic catalogue: %s", lg->dir, META_FILE,
                  rt_strerror(rc));
        /* As a create whose catalogue failed: the new partitions are on their shards and the
         * file may name them or not; only a reopen decides (the intent resolves it). */
        int expected = 0;
        atomic_compare_exchange_strong(&lg->write_error, &expected, rc);
        goto out;
    }
    atomic_store_explicit(&t->partition_count, count, memory_order_release);
    (void)kind_intent_clear(lg, &add_intent); /* left: the next open finds it committed */
out:
    pthread_mutex_unlock(&lg->admin_lock);
    return rc;
}

int log_internal_topic_create(struct log *lg, const char *name, uint32_t partitions)
{
    assert(meta_topic_name_internal(name));
    assert(partitions > 0);
    return log_topic_create(lg, name, partitions, NULL);
}

int log_client_topic_check(const char *topic)
{
    if (meta_topic_name_internal(topic))
        return error_set(RT_E_INTERNAL_TOPIC,
                         "topic '%s' is internal: only the engine writes it (names beginning "
                         "with '__' are reserved)",
                         topic);
    return 0;
}

bool log_topic_exists(struct log *lg, const char *name)
{
    return topic_find(lg, name) != NULL;
}

int log_topic_describe(struct log *lg, const char *name, uint32_t *partitions_out)
{
    const struct topic *t = topic_find(lg, name);
    if (!t)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", name);
    *partitions_out = t->partition_count;
    return 0;
}

int log_topic_list(struct log *lg, int (*fn)(void *ctx, const char *name, uint32_t partitions),
                   void *ctx)
{
    uint32_t n = atomic_load_explicit(&lg->topic_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        if (meta_topic_name_internal(lg->topics[i].name) ||
            atomic_load_explicit(&lg->topics[i].deleted, memory_order_acquire))
            continue; /* internal topics (transaction log, consumer offsets), deleted ones */
        int rc = fn(ctx, lg->topics[i].name, lg->topics[i].partition_count);
        if (rc)
            return rc;
    }
    return 0;
}

struct partition *log_partition(struct log *lg, const char *topic, uint32_t partition)
{
    if (!topic) {
        error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "NULL topic");
        return NULL;
    }
    const struct topic *t = topic_find(lg, topic);
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
    return t->partitions[partition];
}

/* ---- reads ---- */

int log_fetch_start(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                    size_t max_bytes, enum rt_isolation isolation, rt_fetch **out)
{
    if (out)
        *out = NULL;
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    return fetch_partition_start(lg->fetches, p, offset, max_bytes, isolation, out);
}

int log_list_offsets(struct log *lg, const char *topic, uint32_t partition, int64_t spec,
                     enum rt_isolation isolation, int64_t *offset_out)
{
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    return fetch_partition_list_offsets(p, spec, isolation, offset_out);
}

/* ---- appends ---- */

/* The topic's max.message.bytes (topic_config.h TC3; the engine's batch_size_max_bytes unless
 * the topic sets one): what rt_append and rt_append_batch accept. */
static uint32_t topic_max_message_bytes(const struct partition *p)
{
    assert(p->cfg.topic);
    return atomic_load_explicit(&p->cfg.topic->max_message_bytes, memory_order_relaxed);
}

/* F6 (issue 21): a batch larger than its partition's segment is refused, not the
 * configuration, as Kafka's UnifiedLog refuses it (RecordBatchTooLargeException). Every append
 * that reaches a shard passes here, so an empty segment holds any batch placed in it (PAR4). */
static int segment_fit_check(const struct log *lg, const struct partition *p, size_t len)
{
    /* A user topic's limit is segment_size_bytes itself, also below one control batch (its
     * files are at least that long, so markers fit: SEGMENT_FILE_MIN_BYTES); an internal
     * topic's is its own segment size. */
    (void)lg;
    uint64_t limit = p->cfg.segment.capacity_bytes;
    if (!meta_topic_name_internal(p->topic) && p->cfg.topic && p->cfg.topic->segment_bytes < limit)
        limit = p->cfg.topic->segment_bytes;
    if (len <= limit)
        return 0;
    return error_set(RT_E_RECORD_TOO_LARGE,
                     "append to %s: a %zu-byte batch is larger than the segment size (%" PRIu64
                     " bytes, segment_size_bytes)",
                     p->dir, len, limit);
}

/* The detail of an RT_E_IO_FAILED of a write to p (`what`: "append", "coordinator append",
 * "marker"): the engine's failure, or p's own, which heals in place (shard.c SH10, SH11). */
static int io_failed(struct log *lg, struct partition *p, const char *what)
{
    int werr = atomic_load_explicit(&lg->write_error, memory_order_acquire);
    int perr = atomic_load_explicit(&p->fault_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED,
                         "%s to %s failed: %s; the engine's write side is now failed until "
                         "reopened",
                         what, p->dir, rt_strerror(werr));
    return error_set(RT_E_IO_FAILED,
                     "%s to %s failed: the partition's write side failed (%s); it is recovered "
                     "in place once the disk takes writes again",
                     what, p->dir, perr ? rt_strerror(perr) : "no longer");
}

int log_append(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
               const struct batch_header *h, int64_t *base_offset_out, bool *duplicate_out)
{
    int rc = log_write_check(lg);
    if (rc)
        return rc;
    rc = segment_fit_check(lg, p, len);
    if (rc)
        return rc;
    struct shard_request req = {
        .kind = SHARD_REQ_APPEND, .partition = p, .batch = batch, .len = len, .header = *h};
    rc = shard_submit(p->shard, &req);
    if (rc) {
        int werr = atomic_load_explicit(&lg->write_error, memory_order_acquire);
        int perr = atomic_load_explicit(&p->fault_error, memory_order_acquire);
        if (rc == RT_E_IO_FAILED && werr)
            return error_set(rc,
                             "append to %s failed: %s; the engine's write side is now "
                             "failed until reopened",
                             p->dir, rt_strerror(werr));
        if (rc == RT_E_IO_FAILED)
            return error_set(rc,
                             "append to %s failed: the partition's write side failed (%s); it "
                             "is recovered in place once the disk takes writes again",
                             p->dir, perr ? rt_strerror(perr) : "unknown");
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

int log_append_records(struct log *lg, const char *topic, uint32_t partition,
                       const struct rt_record *records, size_t count, int64_t *base_offset_out)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_append");
    if (!records || count == 0)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: no records");
    if (count > INT32_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: too many records");
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = log_partition(lg, topic, partition);
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
        uint32_t max = topic_max_message_bytes(p);
        if (size > max)
            return error_set(RT_E_RECORD_TOO_LARGE,
                             "batch of %zu records exceeds the topic's max.message.bytes (%u)",
                             count, max);
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
    assert(h.max_timestamp >= h.base_timestamp);
    log_stamp_timestamps(lg, p, buf, len, &h, b.max_timestamp); /* LogAppendTime: a second CRC */
    return log_append(lg, p, buf, len, &h, base_offset_out, NULL);
}

bool log_stamp_timestamps(const struct log *lg, const struct partition *p, uint8_t *batch,
                          size_t len, struct batch_header *h, int64_t records_max_timestamp)
{
    assert(records_max_timestamp != INT64_MIN); /* measured: recordCount >= 1 */
    int type = p->cfg.topic
                   ? atomic_load_explicit(&p->cfg.topic->timestamp_type, memory_order_relaxed)
                   : (int)lg->opts.message_timestamp_type;
    if (type == RT_TIMESTAMP_LOG_APPEND_TIME)
        return batch_stamp_timestamps(batch, len, h, true, fs_now_ms());
    return batch_stamp_timestamps(batch, len, h, false, records_max_timestamp);
}

/* The checks every client batch passes before it is queued (log_append_batch and
 * log_append_batch_async): *p_out and *h_out are filled on success.
 *   LG12 A record without a key is refused on a topic whose cleanup.policy holds compact
 *        (RT_E_INVALID_ARGUMENT, Kafka's INVALID_RECORD over the wire: "compacted topic cannot
 *        accept message without key"), before anything is appended: the cleaner could not
 *        keep or drop it by key. Control batches (the coordinator's markers) have no such
 *        rule. */
static int append_batch_check(struct log *lg, const char *topic, uint32_t partition, void *batch,
                              size_t len, struct partition **p_out, struct batch_header *h_out)
{
    if (!batch)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: NULL batch");
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_append_batch");
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = log_partition(lg, topic, partition);
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
    int64_t records_max_ts = INT64_MIN;
    rc = batch_validate_append(batch, len, topic_max_message_bytes(p), &h, &records_max_ts, &why);
    if (rc)
        return error_set(rc, "rt_append_batch: %s", why ? why : rt_strerror(rc));
    if (h.record_count == 0)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: empty batch");
    const uint8_t *rec = batch + BATCH_HEADER_BYTES, *rec_end = batch + len;
    if ((h.attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE) {
        /* batch_validate_append checked an uncompressed batch's records; a compressed one's
         * are decompressed and held to the same rules before anything is appended (Kafka's
         * LogValidator), so counts and offset deltas that disagree never reach the log. */
        struct encode_buffer *b = encode_state();
        if (!b)
            return error_set(-ENOMEM, "rt_append_batch: no memory to check the records");
        rc = records_validate_append(batch, len, &h, &b->scratch, &records_max_ts, &why);
        if (rc == -ENOMEM)
            return error_set(rc, "rt_append_batch: out of memory decompressing the records");
        if (rc)
            return error_set(rc, "rt_append_batch: compressed records: %s",
                             why ? why : rt_strerror(rc));
        rec = b->scratch.len ? b->scratch.data : rec_end;
        rec_end = rec + b->scratch.len;
    }
    if (!batch_is_control(&h) && atomic_load_explicit(&p->cfg.topic->compact, memory_order_relaxed))
        for (int32_t i = 0; i < h.record_count; i++) { /* LG12 */
            struct record_view rv;
            int k = record_decode(rec, rec_end, &rv, &why);
            if (k < 0)
                return error_set(RT_E_CORRUPT, "rt_append_batch: %s", why ? why : "bad record");
            if (rv.key_len < 0)
                return error_set(RT_E_INVALID_ARGUMENT,
                                 "rt_append_batch: compacted topic '%s' cannot accept a record "
                                 "without a key (offset delta %" PRId32 "), as Kafka's",
                                 topic, rv.offset_delta);
            rec += k;
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
    if (batch_is_transactional(&h) && lg->ports.txn_verify &&
        atomic_load_explicit(&lg->txn_verify_on, memory_order_acquire)) {
        rc = lg->ports.txn_verify(lg->ports.txn_verify_ctx, topic, partition, h.producer_id,
                                  h.producer_epoch);
        if (rc)
            return rc; /* the detail names the transactional id and the partition */
    }
    /* V17, last: nothing is rewritten in a batch that is refused. */
    log_stamp_timestamps(lg, p, batch, len, &h, records_max_ts);
    *p_out = p;
    *h_out = h;
    return 0;
}

int log_append_batch(struct log *lg, const char *topic, uint32_t partition, void *batch, size_t len,
                     int64_t *base_offset_out)
{
    struct partition *p = NULL;
    struct batch_header h;
    int rc = append_batch_check(lg, topic, partition, batch, len, &p, &h);
    if (rc)
        return rc;
    return log_append(lg, p, batch, len, &h, base_offset_out, NULL);
}

/* What an rt_append_op holds: the shard request (which the shard links into its queue) and
 * the caller's completion. */
struct append_op {
    struct shard_request req;
    rt_append_done_fn fn;
    void *ctx;
};
_Static_assert(sizeof(struct append_op) <= sizeof(struct rt_append_op),
               "rt_append_op must hold an append_op");
_Static_assert(_Alignof(struct append_op) <= _Alignof(struct rt_append_op),
               "rt_append_op must be aligned for an append_op");

/* Runs on the shard thread once the round that held the batch is done (durable under
 * sync=always) or failed. */
static void append_op_done(struct shard_request *req)
{
    struct append_op *op = (struct append_op *)req;
    assert(op->fn);
    int rc = req->result;
    int64_t base = rc ? -1 : req->base_offset;
    bool dup = rc ? false : req->duplicate;
    rt_append_done_fn fn = op->fn;
    void *ctx = op->ctx;
    fn(ctx, rc, base, dup); /* may reuse the op: nothing of it is touched after this */
}

int log_append_batch_async(struct log *lg, const char *topic, uint32_t partition, void *batch,
                           size_t len, struct rt_append_op *storage, rt_append_done_fn fn,
                           void *ctx)
{
    if (!storage || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch_async: NULL argument");
    struct partition *p = NULL;
    struct batch_header h;
    int rc = append_batch_check(lg, topic, partition, batch, len, &p, &h);
    if (rc)
        return rc;
    struct append_op *op = (struct append_op *)storage;
    memset(op, 0, sizeof(*op));
    op->req.kind = SHARD_REQ_APPEND;
    op->req.partition = p;
    op->req.batch = batch;
    op->req.len = len;
    op->req.header = h;
    op->req.on_done = append_op_done;
    op->fn = fn;
    op->ctx = ctx;
    rc = log_append_async(lg, &op->req);
    if (rc)
        return error_set(rc, "append to %s: %s", p->dir, rt_strerror(rc));
    return 0;
}

void log_watch_set(struct log *lg, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&lg->watch.lock);
    lg->watch.fn = fn;
    lg->watch.ctx = fn ? ctx : NULL;
    pthread_mutex_unlock(&lg->watch.lock);
}

/* ---- maintenance ---- */

static int retention_call(struct shard *s, void *arg)
{
    (void)arg;
    return shard_enforce_retention(s);
}

/* Runs fn on every shard's thread in turn, waiting for each; the first error stops it. */
static int each_shard(struct log *lg, int (*fn)(struct shard *s, void *arg))
{
    for (uint32_t i = 0; i < lg->shard_count; i++) {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = fn};
        int rc = shard_submit(&lg->shards[i], &req);
        if (rc)
            return rc;
    }
    return 0;
}

static int checkpoint_call(struct shard *s, void *arg)
{
    (void)arg;
    int first = 0;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        int rc = partition_checkpoint_tail(s->partitions[i], true);
        if (rc && !first)
            first = rc;
    }
    return first;
}

int log_checkpoint_tails(struct log *lg)
{
    return each_shard(lg, checkpoint_call);
}

static int sleep_call(struct shard *s, void *arg)
{
    (void)arg;
    int first = 0;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        int rc = partition_sleep(s->partitions[i]);
        if (rc && !first)
            first = rc;
    }
    return first;
}

int log_sleep_partitions(struct log *lg)
{
    return each_shard(lg, sleep_call);
}

int log_enforce_retention(struct log *lg)
{
    return each_shard(lg, retention_call);
}

/* ---- producers ---- */

int log_append_async(struct log *lg, struct shard_request *req)
{
    int rc = log_write_check(lg);
    if (rc)
        return rc;
    rc = segment_fit_check(lg, req->partition, req->len);
    if (rc)
        return rc;
    return shard_submit_async(req->partition->shard, req);
}

int log_append_async_many(struct log *lg, struct shard_request **reqs, size_t n)
{
    assert(n <= LOG_APPEND_ASYNC_MANY_MAX);
    int rc = log_write_check(lg);
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            reqs[i]->result = rc;
            reqs[i]->on_done(reqs[i]);
        }
        return rc;
    }
    /* Each shard gets its requests in one hand-over (one round), in the callers' order; the
     * last shard with a single request is held back and may run its round on this thread
     * (SH5) while the others run on their shard threads — one thread hop less on the way
     * there and back, and this thread would only wait meanwhile. */
    struct shard_request *group[LOG_APPEND_ASYNC_MANY_MAX];
    bool taken[LOG_APPEND_ASYNC_MANY_MAX] = {false};
    struct shard_request *lone = NULL;
    for (size_t i = 0; i < n; i++) {
        int frc = segment_fit_check(lg, reqs[i]->partition, reqs[i]->len);
        if (frc) { /* F6: this one only; the others go on */
            taken[i] = true;
            reqs[i]->result = frc;
            reqs[i]->on_done(reqs[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (taken[i])
            continue;
        struct shard *s = reqs[i]->partition->shard;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (!taken[j] && reqs[j]->partition->shard == s) {
                taken[j] = true;
                group[k++] = reqs[j];
            }
        if (k == 1 && !lone) {
            lone = group[0];
            continue;
        }
        shard_submit_async_many(s, group, k);
    }
    if (lone) {
        lone->may_run_inline = true;
        rc = shard_submit_async(lone->partition->shard, lone);
        if (rc) { /* closing: not queued, on_done not called */
            lone->result = rc;
            lone->on_done(lone);
        }
    }
    return 0;
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

int log_producer_last_sequence(struct log *lg, struct partition *p, int64_t producer_id,
                               int64_t *sequence_out)
{
    (void)lg;
    struct last_sequence_call c = {.partition = p, .producer_id = producer_id, .sequence = -1};
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = last_sequence_call, .arg = &c};
    int rc = shard_submit(p->shard, &req);
    if (rc)
        return rc;
    *sequence_out = c.sequence;
    return 0;
}

struct producer_state_call {
    struct partition *partition;
    int64_t producer_id;
    struct log_producer_view view;
};

static int producer_state_call(struct shard *s, void *arg)
{
    (void)s;
    struct producer_state_call *c = arg;
    if (c->partition->frozen &&
        atomic_load_explicit(&c->partition->fault_error, memory_order_acquire) != 0)
        /* SH11 (shard.c): a failed round may have updated this table; nobody decides from it
         * until the recovery reloads it from the log. */
        return error_set(RT_E_IO_FAILED,
                         "%s-%u failed to write and has not recovered yet: its producer state "
                         "is not known",
                         c->partition->topic, c->partition->id);
    const struct producer_entry *pe = producer_table_find(&c->partition->producers, c->producer_id);
    c->view =
        (struct log_producer_view){.known = pe != NULL,
                                   .epoch = pe ? pe->epoch : -1,
                                   .last_sequence = -1,
                                   .txn_first_offset = pe ? pe->current_txn_first_offset : -1};
    if (pe && pe->batch_count)
        c->view.last_sequence = pe->batches[pe->batch_count - 1].last_seq;
    c->view.unsynced = c->partition->unsynced;
    return 0;
}

int log_producer_state(struct log *lg, struct partition *p, int64_t producer_id,
                       struct log_producer_view *out)
{
    struct producer_state_call c = {.partition = p, .producer_id = producer_id};
    int rc = 0;
    if (lg->opts.read_only) { /* no shard thread runs and nothing writes: read in place */
        rc = producer_state_call(p->shard, &c);
    } else {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = producer_state_call, .arg = &c};
        rc = shard_submit(p->shard, &req);
    }
    if (rc)
        return rc;
    *out = c.view;
    return 0;
}

int log_producer_states(struct log *lg, struct partition *const *parts, size_t n,
                        int64_t producer_id, struct log_producer_view *out)
{
    if (n == 0)
        return 0;
    struct producer_state_call *calls = calloc(n, sizeof(*calls));
    struct shard_request *reqs = calloc(n, sizeof(*reqs));
    struct shard_request **by_shard = calloc(n, sizeof(*by_shard));
    int rc = calls && reqs && by_shard ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        calls[i] = (struct producer_state_call){.partition = parts[i], .producer_id = producer_id};
        reqs[i] = (struct shard_request){
            .kind = SHARD_REQ_CALL, .fn = producer_state_call, .arg = &calls[i]};
        if (lg->opts.read_only) /* no shard thread runs and nothing writes: read in place */
            reqs[i].result = producer_state_call(parts[i]->shard, &calls[i]);
    }
    /* Every shard's calls queued before waiting for any: the shards answer in parallel. */
    for (uint32_t s = 0; rc == 0 && !lg->opts.read_only && s < lg->shard_count; s++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (parts[i]->shard == &lg->shards[s])
                by_shard[k++] = &reqs[i];
        if (k)
            shard_enqueue_many(&lg->shards[s], by_shard, k);
    }
    for (uint32_t s = 0; rc == 0 && !lg->opts.read_only && s < lg->shard_count; s++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (parts[i]->shard == &lg->shards[s])
                by_shard[k++] = &reqs[i];
        if (k)
            shard_wait_many(&lg->shards[s], by_shard, k);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (reqs[i].result && !rc)
            rc = reqs[i].result;
        out[i] = calls[i].view;
    }
    free(by_shard);
    free(reqs);
    free(calls);
    return rc;
}

static int sync_unsynced_call(struct shard *s, void *arg)
{
    (void)arg;
    return shard_sync_unsynced(s);
}

int log_sync_unsynced(struct log *lg)
{
    int rc = log_write_check(lg);
    return rc ? rc : each_shard(lg, sync_unsynced_call);
}

int log_sync_unsynced_shards(struct log *lg, struct partition *const *parts, size_t n)
{
    int rc = log_write_check(lg);
    if (rc || n == 0)
        return rc;
    struct shard_request *reqs = calloc(lg->shard_count, sizeof(*reqs));
    if (!reqs)
        return -ENOMEM;
    /* One call per shard holding one of the partitions, all queued before any is waited for. */
    for (uint32_t s = 0; s < lg->shard_count; s++) {
        bool holds = false;
        for (size_t i = 0; i < n && !holds; i++)
            holds = parts[i]->shard == &lg->shards[s];
        if (!holds)
            continue;
        reqs[s] = (struct shard_request){.kind = SHARD_REQ_CALL, .fn = sync_unsynced_call};
        struct shard_request *one = &reqs[s];
        shard_enqueue_many(&lg->shards[s], &one, 1);
    }
    for (uint32_t s = 0; s < lg->shard_count; s++) {
        if (reqs[s].kind != SHARD_REQ_CALL)
            continue;
        struct shard_request *one = &reqs[s];
        shard_wait_many(&lg->shards[s], &one, 1);
        if (reqs[s].result && !rc)
            rc = reqs[s].result;
    }
    free(reqs);
    return rc;
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

int log_snapshot_producers(struct log *lg)
{
    return each_shard(lg, snapshot_call);
}

/* ---- transactions open in the partitions ---- */

struct open_txns_call {
    struct partition *only; /* NULL: every partition of the shard */
    struct log_open_txn *txns;
    size_t count, capacity;
};

static int open_txn_collect(void *ctx, const struct partition *p, const struct open_txn *t,
                            int16_t epoch)
{
    struct open_txns_call *c = ctx;
    if (c->count == c->capacity) {
        size_t cap = c->capacity ? c->capacity * 2 : 16;
        struct log_open_txn *a = realloc(c->txns, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        c->txns = a;
        c->capacity = cap;
    }
    c->txns[c->count++] = (struct log_open_txn){.topic = p->topic,
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

int log_open_txns(struct log *lg, struct partition *only, struct log_open_txn **out,
                  size_t *count_out)
{
    struct open_txns_call c = {.only = only};
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < lg->shard_count; i++) {
        if (only && only->shard != &lg->shards[i])
            continue;
        if (lg->opts.read_only) { /* no shard thread runs and nothing writes: read in place */
            rc = open_txns_call(&lg->shards[i], &c);
            continue;
        }
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = open_txns_call, .arg = &c};
        rc = shard_submit(&lg->shards[i], &req);
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
#define SHARDS_ON_STACK  64

int log_write_markers(struct log *lg, struct marker_spec *specs, size_t n)
{
    if (n == 0)
        return 0;
    int first = log_write_check(lg);
    if (first)
        return first;
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
    for (size_t i = 0; i < n; i++) {
        struct marker_spec *m = &specs[i];
        m->result = 0;
        m->offset = -1;
        struct partition *p = log_partition(lg, m->topic, m->partition);
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
        sl->req.force_sync = !m->lazy;
        sl->req.lazy_sync = m->lazy;
    }
    /* Hand each shard its markers in one go (one round), every shard before waiting for any,
     * so the shards' rounds run in parallel; by_shard holds them grouped by shard. */
    size_t k = 0, first_of[SHARDS_ON_STACK + 1], *first_at = first_of;
    if (lg->shard_count > SHARDS_ON_STACK &&
        !(first_at = calloc(lg->shard_count + 1, sizeof(*first_at)))) {
        if (slots != stack_slots) {
            free(slots);
            free(by_shard);
        }
        return -ENOMEM;
    }
    for (uint32_t s = 0; s < lg->shard_count; s++) {
        first_at[s] = k;
        for (size_t i = 0; i < n; i++)
            if (specs[i].result == 0 && slots[i].req.partition &&
                slots[i].req.partition->shard == &lg->shards[s])
                by_shard[k++] = &slots[i].req;
        /* A shard's lone lazy marker (a small transaction's) runs on this thread when the
         * shard is idle (SH5): a pwritev here instead of a wake-up of the shard thread and
         * one back; commit waits for exactly this round (coordinator.c CO9). */
        if (k == first_at[s] + 1 && by_shard[first_at[s]]->lazy_sync &&
            shard_try_inline(&lg->shards[s], by_shard[first_at[s]]))
            continue;
        if (k > first_at[s])
            shard_enqueue_many(&lg->shards[s], by_shard + first_at[s], k - first_at[s]);
    }
    first_at[lg->shard_count] = k;
    for (uint32_t s = 0; s < lg->shard_count; s++)
        if (first_at[s + 1] > first_at[s])
            shard_wait_many(&lg->shards[s], by_shard + first_at[s], first_at[s + 1] - first_at[s]);
    if (first_at != first_of)
        free(first_at);
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
            else if (first == RT_E_IO_FAILED)
                io_failed(lg, slots[i].req.partition, "marker");
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

/* The coordinator-origin append behind log_append_coordinator and log_append_forced. */
static int append_internal(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
                           bool force_sync, int64_t *base_offset_out)
{
    struct batch_header h;
    const char *why = NULL;
    int rc = batch_validate(batch, len, lg->opts.batch_size_max_bytes, &h, &why);
    if (rc)
        return error_set(rc, "coordinator append to %s: %s", p->dir, why ? why : rt_strerror(rc));
    if (batch_is_control(&h))
        return error_set(RT_E_INVALID_ARGUMENT, "coordinator append: markers go through "
                                                "log_write_markers");
    rc = log_write_check(lg);
    if (rc == 0)
        rc = segment_fit_check(lg, p, len);
    if (rc)
        return rc;
    struct shard_request req = {.kind = SHARD_REQ_APPEND,
                                .partition = p,
                                .batch = batch,
                                .len = len,
                                .header = h,
                                .coordinator = true,
                                .force_sync = force_sync};
    rc = shard_submit(p->shard, &req);
    if (rc == RT_E_IO_FAILED) /* the cause (-ENOSPC, -EIO, ...), as log_append */
        return io_failed(lg, p, "coordinator append");
    if (rc)
        return error_set(rc, "coordinator append to %s: %s", p->dir,
                         req.rule ? req.rule : rt_strerror(rc));
    if (base_offset_out)
        *base_offset_out = req.base_offset;
    return 0;
}

int log_append_coordinator(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
                           int64_t *base_offset_out)
{
    return append_internal(lg, p, batch, len, false, base_offset_out);
}

static int roll_call(struct shard *s, void *arg)
{
    struct partition *p = arg;
    if (p->active->size_bytes == 0)
        return 0;
    /* An append earlier in this round already wrote to the active segment: roll in a later
     * round (a roll must not seal a segment with writes in flight). */
    if (p->round_touched)
        return -EAGAIN;
    if (p->unsynced) { /* SH6: lazy bytes durable through the ring before the seal */
        int rc = shard_sync_unsynced(s);
        if (rc)
            return rc;
    }
    return partition_roll_now(p);
}

int log_roll(struct log *lg, struct partition *p)
{
    (void)lg;
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

int log_delete_before(struct log *lg, struct partition *p, int64_t offset)
{
    (void)lg;
    struct delete_before_call c = {.p = p, .offset = offset};
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = delete_before_call, .arg = &c};
    return shard_submit(p->shard, &req);
}

int log_topic_compact(struct log *lg, const char *topic)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_topic_compact");
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    rc = log_write_check(lg);
    if (rc)
        return rc;
    const struct topic *t = topic_find(lg, topic);
    if (!t)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", topic);
    uint32_t n = atomic_load_explicit(&t->partition_count, memory_order_acquire);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        rc = cleaner_clean(t->partitions[i], fs_now_ms(), true, NULL); /* CLB1: on this thread */
    }
    return rc;
}

struct delete_records_call {
    struct partition *p;
    int64_t offset;
    int64_t low;
};

static int delete_records_call(struct shard *s, void *arg)
{
    struct delete_records_call *c = arg;
    uint32_t count = c->p->segment_count;
    int rc = partition_delete_records(c->p, c->offset, &c->low);
    if (c->p->segment_count < count)
        atomic_fetch_add_explicit(&s->env.counters->segments_deleted,
                                  (uint64_t)(count - c->p->segment_count), memory_order_relaxed);
    return rc;
}

int log_delete_records(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                       int64_t *low_watermark_out)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, "rt_partition_delete_records");
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    rc = log_write_check(lg);
    if (rc)
        return rc;
    struct delete_records_call c = {.p = p, .offset = offset, .low = -1};
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = delete_records_call, .arg = &c};
    rc = shard_submit(p->shard, &req);
    if (rc == 0)
        *low_watermark_out = c.low;
    if (rc == RT_E_OFFSET_OUT_OF_RANGE) { /* the shard thread's detail stays there */
        struct partition_watermarks w;
        partition_watermarks(p, &w);
        return error_set(rc,
                         "%s-%" PRIu32 ": cannot delete records below offset %" PRId64
                         ": the high watermark is %" PRId64 " (-1 names it)",
                         topic, partition, offset, w.high_watermark);
    }
    return rc;
}

int log_append_forced(struct log *lg, struct partition *p, uint8_t *batch, size_t len,
                      int64_t *base_offset_out)
{
    return append_internal(lg, p, batch, len, true, base_offset_out);
}

const struct rt_options *log_options(const struct log *lg)
{
    return &lg->opts;
}

/* ---- lifecycle ---- */

/* The shards' housekeeping hook (shard.h env.housekeep): a compacted partition whose active
 * segment aged past its limit is rolled first (cleaner.c CLN10), then a partition due a clean is
 * offered to the cleaner thread (cleaner.c CLB1); an offer dropped is made at the next pass. */
static bool offer_clean(void *ctx, struct partition *p, int64_t wall_ms)
{
    if (atomic_load_explicit(&cleaner_background_off, memory_order_relaxed))
        return false;
    if (cleaner_roll_due(p, wall_ms))
        return true; /* CLN10: the shard rolls it, then asks again */
    if (cleaner_due(p, wall_ms))
        (void)cleaner_pool_offer(ctx, p);
    return false;
}

int log_init(struct log *lg, const char *dir, const struct rt_options *opts,
             struct io_fault_plan *faults, const struct log_ports *ports)
{
    memset(lg, 0, sizeof(*lg));
    if (ports)
        lg->ports = *ports;
    snprintf(lg->dir, sizeof(lg->dir), "%s", dir);
    lg->opts = *opts;
    if (lg->opts.fetches_max == 0)
        lg->opts.fetches_max = LOG_FETCHES_MAX_DEFAULT;
    pthread_mutex_init(&lg->admin_lock, NULL);
    pthread_mutex_init(&lg->watch.lock, NULL);
    cleaner_pool_init(&lg->cleaner);
    atomic_init(&lg->write_error, 0);
    atomic_init(&lg->closing, false);
    atomic_init(&lg->txn_verify_on, false); /* ports.txn_verify off until the root switches it on */
    atomic_init(&lg->topic_count, 0);

    lg->pcfg.segment.capacity_bytes = lg->opts.segment_size_bytes < SEGMENT_FILE_MIN_BYTES
                                          ? SEGMENT_FILE_MIN_BYTES
                                          : lg->opts.segment_size_bytes;
    lg->pcfg.segment.index_size_max_bytes = lg->opts.index_size_max_bytes;
    lg->pcfg.segment.index_interval_bytes = lg->opts.index_interval_bytes;
    lg->pcfg.segment.read_only = lg->opts.read_only;
    /* Pre-writing: under sync=always/interval the zeros are fdatasynced so the writer's
     * fdatasyncs commit no extent metadata; under sync=none they are only written, so the page
     * cache's work for fresh pages (ext4_da_write_begin) is done on the pre-writer's thread, not
     * the round's, and writeback is started behind the writer (SP6, SP7; segment_pool.h). */
    if (!lg->opts.read_only && lg->opts.segment_size_bytes >= SEGMENT_POOL_SEGMENT_MIN_BYTES)
        lg->pcfg.segment.pool = &lg->pool;
    lg->pool.sync_zeros = lg->opts.sync_mode != RT_SYNC_NONE;
    lg->pool.faults = faults; /* segment.c SG4 */
    lg->pcfg.segment.faults = faults;
    /* SG10, PA19: under sync=always every published byte is durable, so a crash open keeps its
     * fdatasync unless the recovery point's tail covers the log; otherwise it is left to the
     * partition's unsynced path when the open cut nothing. */
    lg->pcfg.segment.recovery_sync_lazy = lg->opts.sync_mode != RT_SYNC_ALWAYS;
    segment_cache_init(&lg->cache, segment_cache_resolve(lg->opts.open_segments_max));
    if (!lg->opts.read_only)
        lg->pcfg.segment.cache = &lg->cache; /* OS1; a read-only engine holds no descriptor */
    segment_maps_init(&lg->maps, segment_maps_resolve(lg->opts.mapped_segments_max));
    /* MM1: a read-only engine's indexes may live in memory only (rebuilt there): never
     * released, as before the budget. */
    if (!lg->opts.read_only) {
        lg->pcfg.segment.maps = &lg->maps;
        lg->pcfg.segment.maps_ops = &segment_maps_ops;
    }
    lg->pcfg.segment_ms = lg->opts.segment_ms;
    lg->pcfg.retention_bytes = lg->opts.retention_bytes;
    lg->pcfg.retention_ms = lg->opts.retention_ms;
    lg->pcfg.producers_max = lg->opts.producers_max;
    /* PA9: a crash scans at most about this much of the active segment (plus one housekeeping
     * period's appends): a quarter segment, within [1, 64] MiB, so a busy partition stores a
     * tail (a snapshot and a checkpoint replace, ~4 fsyncs) at most once a period. */
    uint64_t interval = lg->opts.segment_size_bytes / 4;
    if (interval < (1u << 20))
        interval = 1u << 20;
    if (interval > (64u << 20))
        interval = 64u << 20;
    lg->pcfg.checkpoint_interval_bytes = interval;
    lg->pcfg.is_named = lg->ports.is_named;
    lg->pcfg.named_ctx = lg->ports.named_ctx;

    lg->env.sync_mode = lg->opts.sync_mode;
    lg->env.sync_interval_ms = lg->opts.sync_interval_ms;
    lg->env.sync_interval_bytes = lg->opts.sync_interval_bytes;
    lg->env.request_queue_depth = lg->opts.request_queue_depth;
    lg->env.retention_check_ms = RETENTION_CHECK_MS;
    lg->env.producer_id_expiration_ms = lg->opts.producer_id_expiration_ms;
    lg->env.io.kind = faults ? IO_KIND_FAULT : (enum io_kind)lg->opts.io_backend;
    lg->env.io.queue_depth = lg->opts.io_queue_depth;
    lg->env.io.fault = faults;
    lg->env.write_error = &lg->write_error;
    lg->env.counters = &lg->counters;
    lg->env.watch = &lg->watch;
    lg->env.on_fault = lg->opts.on_fault;
    lg->env.on_fault_ctx = lg->opts.on_fault_ctx;
    lg->env.heal_ms_min = lg->opts.fault_recovery_ms;
    lg->env.cache = &lg->cache;
    lg->env.housekeep = offer_clean;
    lg->env.housekeep_ctx = &lg->cleaner;
    lg->env.read_only = lg->opts.read_only;
    if (lg->opts.read_only)
        lg->env.io.kind = IO_KIND_SYNC; /* no writes: no ring to set up */

    int rc = -ENOMEM;
    lg->fetches = fetch_pool_create(lg->opts.fetches_max);
    if (!lg->fetches)
        goto err;
    char meta_path[SEGMENT_PATH_BYTES + 32];
    snprintf(meta_path, sizeof(meta_path), "%s/%s", lg->dir, META_FILE);
    bool fresh = !fs_exists(meta_path);
    rc = meta_load(lg->dir, &lg->catalogue);
    if (rc)
        goto err;
    if (fresh && !lg->opts.read_only) {
        /* A fresh directory gets its (empty) catalogue before any partition directory exists:
         * meta_load refuses a directory that holds partition data but no catalogue (a lost
         * catalogue), and a crash inside the first rt_topic_create, after its partition
         * directories and before the catalogue, would otherwise leave exactly that
         * (test_power_dirs.c). Later creates leave only unreferenced directories (below). */
        rc = meta_store(faults, lg->dir, &lg->catalogue);
        if (rc) {
            error_set(rc, "%s: cannot create: %s", meta_path, rt_strerror(rc));
            goto err;
        }
    }

    if (!lg->opts.read_only) {
        /* F4, LG5: what a creation that crashed (or failed to clean up) left. */
        rc = intent_resolve(lg, in_catalogue);
        if (rc == 0)
            rc = delete_resolve(lg); /* LG9 */
        if (rc == 0)
            rc = add_resolve(lg); /* LG10 */
        if (rc)
            goto err;
    }

    char marker[SEGMENT_PATH_BYTES + 32];
    snprintf(marker, sizeof(marker), "%s/%s", lg->dir, META_CLEAN_FILE);
    lg->clean_at_open = fs_exists(marker);
    if (lg->clean_at_open && !lg->opts.read_only) {
        /* Gone before the first write: a crash from here on must trigger recovery. */
        rc = io_unlink(faults, marker);
        if (rc == 0)
            rc = fs_fsync_dir(faults, lg->dir); /* its removal must be durable */
        if (rc) {
            error_set(rc, "%s: cannot remove: %s", marker, strerror(-rc));
            goto err;
        }
    }

    /* topics_max bounds the user's topics; the internal ones get slots of their own (and so
     * does any "__" topic an older version let a client create). */
    uint32_t user_topics = 0, internal_topics = 0;
    for (uint32_t i = 0; i < lg->catalogue.count; i++) {
        if (meta_topic_name_internal(lg->catalogue.topics[i].name))
            internal_topics++;
        else
            user_topics++;
    }
    lg->topics_capacity =
        lg->opts.topics_max + INTERNAL_TOPICS_MAX + internal_topics + TOPICS_DELETED_MAX;
    lg->topics = calloc(lg->topics_capacity, sizeof(*lg->topics));
    lg->shard_count = lg->opts.shard_count ? lg->opts.shard_count : default_shards();
    lg->shards = calloc(lg->shard_count, sizeof(*lg->shards));
    if (!lg->topics || !lg->shards) {
        rc = -ENOMEM;
        lg->shard_count = 0;
        goto err;
    }
    uint32_t inited = 0;
    for (; inited < lg->shard_count; inited++) {
        rc = shard_init(&lg->shards[inited], inited, &lg->env);
        if (rc) {
            shard_stop(&lg->shards[inited]);
            break;
        }
    }
    if (rc) {
        lg->shard_count = inited;
        goto err;
    }
    if (user_topics > lg->opts.topics_max) {
        rc = error_set(RT_E_TOPICS_FULL, "%s: %u topics exceed topics_max %u", lg->dir, user_topics,
                       lg->opts.topics_max);
        goto err;
    }
    return 0;
err:
    (void)log_close(lg, false);
    return rc;
}

int log_open_topics(struct log *lg)
{
    for (uint32_t i = 0; i < lg->catalogue.count; i++) {
        const struct meta_topic *mt = &lg->catalogue.topics[i];
        int rc = topic_build(lg, &lg->topics[i], mt->name, mt->partitions, &mt->config,
                             lg->clean_at_open, false);
        if (rc)
            return rc;
        atomic_store_explicit(&lg->topic_count, i + 1, memory_order_release);
    }
    return 0;
}

int log_start(struct log *lg)
{
    assert(!lg->shards_started);
    if (lg->opts.read_only)
        return 0;
    if (lg->pcfg.segment.pool) {
        int rc = segment_pool_start(&lg->pool); /* before any round can ask it */
        if (rc)
            return error_set(rc, "cannot start the segment pre-writer: %s", strerror(-rc));
    }
    /* SP9: the leftover next-segment files the open kept go to the pre-writer (or, without
     * one, none was kept). */
    uint32_t topics = atomic_load(&lg->topic_count);
    for (uint32_t t = 0; t < topics; t++)
        for (uint32_t i = 0; i < atomic_load(&lg->topics[t].partition_count); i++)
            if (lg->topics[t].partitions[i])
                partition_leftover_dispose(lg->topics[t].partitions[i], true);
    int crc = cleaner_pool_start(&lg->cleaner);
    if (crc)
        return error_set(crc, "cannot start the cleaner thread: %s", strerror(-crc));
    for (uint32_t i = 0; i < lg->shard_count; i++) {
        int rc = shard_start(&lg->shards[i]);
        if (rc)
            return rc;
    }
    lg->shards_started = true;
    return 0;
}

int64_t log_producer_id_max(struct log *lg, bool scan_logs)
{
    int64_t max = -1;
    uint32_t n = atomic_load(&lg->topic_count);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < lg->topics[t].partition_count; i++) {
            int64_t m = partition_producer_id_max(lg->topics[t].partitions[i], scan_logs);
            if (m > max)
                max = m;
        }
    return max;
}

void log_stop(struct log *lg)
{
    atomic_store(&lg->closing, true);
    cleaner_pool_stop(&lg->cleaner); /* CLP3: before the shards (its last calls need them) */
    shards_stop(lg);
}

int log_close(struct log *lg, bool seal)
{
    cleaner_pool_stop(&lg->cleaner); /* idempotent: log_stop stopped it (CLP3) */
    shards_stop(lg);                 /* idempotent: a log_init error path has no running shard */
    segment_pool_stop(&lg->pool);    /* no round runs now: nothing asks it any more */
    for (uint32_t i = 0; i < lg->reaper_count; i++)
        pthread_join(lg->reapers[i], NULL); /* LG9: deleted topics' files removed */
    free(lg->reapers);
    lg->reapers = NULL;
    lg->reaper_count = 0;
    int werr = atomic_load(&lg->write_error);
    /* SH10: a partition still frozen at close is left for the next open's recovery. */
    uint64_t frozen = atomic_load(&lg->counters.partitions_failed);
    bool sealed = seal && lg->shards_started && werr == 0 && frozen == 0 && !lg->opts.read_only;
    int rc = close_topics(lg, sealed);
    if (sealed && rc == 0) {
        char marker[SEGMENT_PATH_BYTES + 32];
        snprintf(marker, sizeof(marker), "%s/%s", lg->dir, META_CLEAN_FILE);
        int fd = io_file_create(lg->pcfg.segment.faults, marker, O_WRONLY | O_TRUNC, 0644);
        rc = fd < 0 ? fd : 0;
        if (fd >= 0 && fsync(fd) != 0)
            rc = -errno;
        if (fd >= 0)
            close(fd);
        if (rc == 0)
            rc = fs_fsync_dir(lg->pcfg.segment.faults, lg->dir);
    }
    meta_catalogue_free(&lg->catalogue);
    segment_maps_destroy(&lg->maps); /* MM1: every partition forgot its segments */
    fetch_pool_destroy(lg->fetches); /* FP4: fetches still open keep it until released */
    lg->fetches = NULL;
    free(lg->topics);
    free(lg->shards);
    lg->topics = NULL;
    lg->shards = NULL;
    lg->shard_count = 0;
    topic_config_free(&lg->dyn_defaults);
    pthread_mutex_destroy(&lg->admin_lock);
    pthread_mutex_destroy(&lg->watch.lock);
    if (werr)
        return error_set(RT_E_IO_FAILED,
                         "a write or fdatasync failed while open (%s); the next "
                         "open recovers",
                         rt_strerror(werr));
    if (frozen)
        return error_set(RT_E_IO_FAILED,
                         "%" PRIu64 " partition(s) still failed at close (a write or fdatasync "
                         "failed and no recovery in place succeeded since); the next open "
                         "recovers them",
                         frozen);
    return rc;
}

/* ---- options, state ---- */

bool log_read_only(const struct log *lg)
{
    return lg->opts.read_only;
}

int log_refuse_if_read_only(const struct log *lg, const char *what)
{
    if (!lg->opts.read_only)
        return 0;
    return error_set(RT_E_READ_ONLY, "%s: %s refused: the engine was opened read-only", lg->dir,
                     what);
}

int log_write_check(struct log *lg)
{
    if (atomic_load_explicit(&lg->closing, memory_order_relaxed))
        return error_set(RT_E_CLOSED, "the engine is closing");
    int werr = atomic_load_explicit(&lg->write_error, memory_order_acquire);
    if (werr)
        return error_set(RT_E_IO_FAILED, "the write side failed earlier (%s); close and reopen",
                         rt_strerror(werr));
    return 0;
}

const struct partition_recovery *log_recovery(const struct log *lg)
{
    return &lg->recovery;
}

void log_stats(struct log *lg, struct rt_stats *out)
{
    const struct engine_counters *c = &lg->counters;
    out->rounds = atomic_load_explicit(&c->rounds, memory_order_relaxed);
    out->batches_appended = atomic_load_explicit(&c->batches_appended, memory_order_relaxed);
    out->bytes_appended = atomic_load_explicit(&c->bytes_appended, memory_order_relaxed);
    out->fdatasyncs = atomic_load_explicit(&c->fdatasyncs, memory_order_relaxed);
    out->segments_rolled = atomic_load_explicit(&c->segments_rolled, memory_order_relaxed);
    out->segments_deleted = atomic_load_explicit(&c->segments_deleted, memory_order_relaxed);
    out->duplicates = atomic_load_explicit(&c->duplicates, memory_order_relaxed);
    out->producers_expired = atomic_load_explicit(&c->producers_expired, memory_order_relaxed);
    out->snapshots_written = atomic_load_explicit(&c->snapshots_written, memory_order_relaxed);
    out->snapshots_rejected = lg->recovery.snapshots_rejected;
    out->shard_count = lg->shard_count;
    out->io_backend = shard_backend_name(&lg->shards[0]);
    out->read_only = lg->opts.read_only;
    out->opened_unclean = !lg->clean_at_open;
    out->tail_bytes_ignored = lg->recovery.truncated_bytes;
    const struct segment_pool_stats *ps = &lg->pool.stats;
    out->prewrite_bytes = atomic_load_explicit(&ps->bytes_written, memory_order_relaxed);
    out->prewrite_fdatasyncs = atomic_load_explicit(&ps->fdatasyncs, memory_order_relaxed);
    out->prewrite_missed_bytes = atomic_load_explicit(&ps->missed_bytes, memory_order_relaxed);
    out->segments_recycled = atomic_load_explicit(&ps->recycled, memory_order_relaxed);
    out->rounds_inline = atomic_load_explicit(&c->rounds_inline, memory_order_relaxed);
    out->partition_faults = atomic_load_explicit(&c->partition_faults, memory_order_relaxed);
    out->partition_recoveries =
        atomic_load_explicit(&c->partition_recoveries, memory_order_relaxed);
    out->partitions_failed = atomic_load_explicit(&c->partitions_failed, memory_order_relaxed);
    out->write_error = atomic_load_explicit(&lg->write_error, memory_order_relaxed);
}

void log_txn_verify_enable(struct log *lg, bool on)
{
    atomic_store_explicit(&lg->txn_verify_on, on, memory_order_release);
}

/* ---- Replication (partition.h RL1-RL6) ---- */

/* The partition a replication call names, with the checks every writing call makes. */
static int replica_partition(struct log *lg, const char *topic, uint32_t partition,
                             const char *what, struct partition **out)
{
    if (lg->opts.read_only)
        return log_refuse_if_read_only(lg, what);
    /* RL6: of the internal topics __consumer_offsets and __transaction_state are replicated
     * (their managers rebuild their state from the log when the node becomes leader). */
    int rc = strcmp(topic, LOG_OFFSETS_TOPIC) == 0 || strcmp(topic, LOG_TXN_TOPIC) == 0
                 ? 0
                 : log_client_topic_check(topic);
    if (rc)
        return rc;
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s: unknown partition %s-%" PRIu32, what,
                         topic, partition);
    rc = log_write_check(lg);
    if (rc)
        return rc;
    *out = p;
    return 0;
}

struct replica_call {
    struct partition *p;
    int kind; /* 0 leader epoch, 1 end offset for epoch, 2 truncate, 3 high watermark,
               * 4 internal role (RL6: epoch 1 follower, 0 leader), 5 restart-at (RL7),
               * 6 user partition role (RL9: epoch 1 led, 0 followed) */
    int32_t epoch;
    int64_t offset;
    int64_t out_offset;
    int32_t out_epoch;
    char detail[ERROR_DETAIL_BYTES]; /* the shard thread's rt_error_detail, for the caller */
};

static int replica_call_step(struct shard *s, struct replica_call *c);

static int replica_call_run(struct shard *s, void *arg)
{
    struct replica_call *c = arg;
    int rc = replica_call_step(s, c);
    if (rc)
        snprintf(c->detail, sizeof(c->detail), "%s", rt_error_detail());
    return rc;
}

static int replica_call_step(struct shard *s, struct replica_call *c)
{
    switch (c->kind) {
    case 0:
        return partition_set_leader_epoch(c->p, c->epoch);
    case 1:
        partition_end_offset_for_epoch(c->p, c->epoch, &c->out_offset, &c->out_epoch);
        return 0;
    case 2: {
        if (c->p->replica_led)
            return error_set(RT_E_INVALID_ARGUMENT,
                             "rt_partition_truncate: %s: this engine leads the partition; "
                             "rt_partition_resign first (RL9)",
                             c->p->dir);
        if (!c->p->internal_follower && meta_topic_name_internal(c->p->topic))
            return error_set(RT_E_INVALID_ARGUMENT,
                             "rt_partition_truncate: %s: this engine leads the internal "
                             "partition; rt_partition_resign first (RL6)",
                             c->p->dir);
        bool after_intent = false;
        uint32_t count = c->p->segment_count;
        int rc = partition_truncate(c->p, c->offset, &c->out_offset, &after_intent);
        if (c->p->segment_count < count)
            atomic_fetch_add_explicit(&s->env.counters->segments_deleted,
                                      (uint64_t)(count - c->p->segment_count),
                                      memory_order_relaxed);
        if (rc && after_intent) {
            /* RL4: half done; only a reopen (which finishes it from the intent) may go on. */
            int expected = 0;
            atomic_compare_exchange_strong(s->env.write_error, &expected, rc);
            return error_set(RT_E_IO_FAILED,
                             "%s: truncation to offset %" PRId64 " failed after its intent was "
                             "stored (%s); the engine's write side is failed until reopened, "
                             "and the reopen finishes the truncation",
                             c->p->dir, c->offset, rt_strerror(rc));
        }
        return rc;
    }
    case 5: {
        if (c->p->replica_led)
            return error_set(RT_E_INVALID_ARGUMENT,
                             "rt_partition_restart_at: %s: this engine leads the partition; "
                             "rt_partition_resign first (RL9)",
                             c->p->dir);
        if (!c->p->internal_follower && meta_topic_name_internal(c->p->topic))
            return error_set(RT_E_INVALID_ARGUMENT,
                             "rt_partition_restart_at: %s: this engine leads the internal "
                             "partition; rt_partition_resign first (RL6)",
                             c->p->dir);
        bool after_intent = false;
        uint32_t count = c->p->segment_count;
        int rc = partition_restart_at(c->p, c->offset, &after_intent);
        if (rc == 0)
            atomic_fetch_add_explicit(&s->env.counters->segments_deleted, (uint64_t)count,
                                      memory_order_relaxed);
        if (rc && after_intent) {
            /* RL7: half done; only a reopen (which finishes it from the intent) may go on. */
            int expected = 0;
            atomic_compare_exchange_strong(s->env.write_error, &expected, rc);
            return error_set(RT_E_IO_FAILED,
                             "%s: restart at offset %" PRId64 " failed after its intent was "
                             "stored (%s); the engine's write side is failed until reopened, "
                             "and the reopen finishes the restart",
                             c->p->dir, c->offset, rt_strerror(rc));
        }
        c->out_offset = c->offset;
        return rc;
    }
    case 4:
        c->p->internal_follower = c->epoch != 0; /* RL6 */
        return 0;
    case 6:
        c->p->replica_led = c->epoch != 0; /* RL9 */
        return 0;
    default:
        return partition_set_high_watermark(c->p, c->offset, &c->out_offset);
    }
}

static int replica_call(struct log *lg, const char *topic, uint32_t partition, const char *what,
                        struct replica_call *c)
{
    int rc = replica_partition(lg, topic, partition, what, &c->p);
    if (rc)
        return rc;
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = replica_call_run, .arg = c};
    c->detail[0] = '\0';
    rc = shard_submit(c->p->shard, &req);
    if (rc && c->detail[0]) /* the detail was set on the shard thread */
        return error_set(rc, "%s", c->detail);
    return rc;
}

int log_set_leader_epoch(struct log *lg, const char *topic, uint32_t partition, int32_t epoch)
{
    struct replica_call c = {.kind = 0, .epoch = epoch};
    return replica_call(lg, topic, partition, "rt_partition_set_leader_epoch", &c);
}

int log_end_offset_for_epoch(struct log *lg, const char *topic, uint32_t partition, int32_t epoch,
                             int64_t *end_offset_out, int32_t *found_epoch_out)
{
    struct replica_call c = {.kind = 1, .epoch = epoch, .out_offset = -1, .out_epoch = -1};
    int rc = replica_call(lg, topic, partition, "rt_partition_end_offset_for_epoch", &c);
    if (rc == 0) {
        *end_offset_out = c.out_offset;
        *found_epoch_out = c.out_epoch;
    }
    return rc;
}

int log_truncate(struct log *lg, const char *topic, uint32_t partition, int64_t offset,
                 int64_t *log_end_out)
{
    struct replica_call c = {.kind = 2, .offset = offset, .out_offset = -1};
    int rc = replica_call(lg, topic, partition, "rt_partition_truncate", &c);
    if (rc == 0 && log_end_out)
        *log_end_out = c.out_offset;
    return rc;
}

int log_restart_at(struct log *lg, const char *topic, uint32_t partition, int64_t offset)
{
    struct replica_call c = {.kind = 5, .offset = offset, .out_offset = -1};
    return replica_call(lg, topic, partition, "rt_partition_restart_at", &c);
}

int log_set_high_watermark(struct log *lg, const char *topic, uint32_t partition, int64_t hw,
                           int64_t *hw_out)
{
    struct replica_call c = {.kind = 3, .offset = hw, .out_offset = -1};
    int rc = replica_call(lg, topic, partition, "rt_partition_set_high_watermark", &c);
    if (rc == 0 && hw_out)
        *hw_out = c.out_offset;
    return rc;
}

int log_internal_set_follower(struct log *lg, const char *topic, uint32_t partition, bool follower)
{
    struct replica_call c = {.kind = 4, .epoch = follower ? 1 : 0};
    return replica_call(lg, topic, partition,
                        follower ? "rt_partition_resign" : "rt_partition_become_leader", &c);
}

int log_replica_set_led(struct log *lg, const char *topic, uint32_t partition, bool led)
{
    struct replica_call c = {.kind = 6, .epoch = led ? 1 : 0};
    return replica_call(lg, topic, partition,
                        led ? "rt_partition_become_leader" : "rt_partition_resign", &c);
}

int log_append_replica(struct log *lg, const char *topic, uint32_t partition, const void *batches,
                       size_t len, int64_t *log_end_out)
{
    struct partition *p = NULL;
    int rc = replica_partition(lg, topic, partition, "rt_partition_append_replica", &p);
    if (rc)
        return rc;
    const uint8_t *buf = batches;
    size_t n = 0;
    int64_t prev_end = -1, gaps_end = -1;
    size_t compacted_count = 0;
    for (size_t at = 0; at < len; n++) { /* every batch checked before any is queued */
        const char *why = NULL;
        int64_t size = batch_size_at(buf + at, len - at, &why);
        if (size < 0)
            return error_set(RT_E_CORRUPT, "rt_partition_append_replica: byte %zu: %s", at, why);
        struct batch_header h;
        bool compacted = false;
        rc = batch_validate_replica(buf + at, (size_t)size, lg->opts.batch_size_max_bytes, &h,
                                    &compacted, &why);
        if (rc)
            return error_set(rc, "rt_partition_append_replica: byte %zu: %s", at,
                             why ? why : rt_strerror(rc));
        if (h.base_offset < prev_end) /* RL8: offsets only grow, gaps or not */
            return error_set(RT_E_CORRUPT,
                             "rt_partition_append_replica: byte %zu: base offset %" PRId64
                             " is below the previous batch's end %" PRId64,
                             at, h.base_offset, prev_end);
        prev_end = gaps_end = batch_last_offset(&h) + 1;
        compacted_count += compacted;
        rc = segment_fit_check(lg, p, (size_t)size);
        if (rc)
            return rc;
        at += (size_t)size;
    }
    if (n == 0)
        return 0;
    struct shard_request *reqs = calloc(n, sizeof(*reqs));
    struct shard_request **ptrs = calloc(n, sizeof(*ptrs));
    if (!reqs || !ptrs) {
        free(reqs);
        free(ptrs);
        return error_set(-ENOMEM, "rt_partition_append_replica: no memory");
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        struct shard_request *r = &reqs[i];
        const char *why = NULL;
        int64_t size = batch_size_at(buf + at, len - at, &why);
        (void)batch_header_parse(buf + at, (size_t)size, &r->header, &why); /* validated above */
        r->kind = SHARD_REQ_APPEND;
        r->partition = p;
        r->batch = (uint8_t *)(uintptr_t)(buf + at); /* RL3: never written (replica) */
        r->len = (size_t)size;
        r->replica = true;
        if (compacted_count > 0) { /* rare: a leader's cleaned batch among them (RL8) */
            struct batch_header h;
            (void)batch_validate_replica(buf + at, (size_t)size, 0, &h, &r->replica_compacted,
                                         &why);
        }
        r->replica_gaps_end = gaps_end; /* RL8 */
        r->coordinator_epoch = -1;
        r->marker_type = -1;
        if (batch_is_control(&r->header)) {
            r->marker_type = control_batch_type(buf + at, (size_t)size);
            struct record_view rv;
            enum control_type t;
            if (record_decode(buf + at + BATCH_HEADER_BYTES, buf + at + size, &rv, &why) > 0)
                (void)control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, &t,
                                           &r->coordinator_epoch, &why);
        }
        ptrs[i] = r;
        at += (size_t)size;
    }
    rc = shard_submit_many(p->shard, ptrs, n);
    int64_t end = -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (reqs[i].result) {
            rc = reqs[i].result;
            if (rc == RT_E_IO_FAILED)
                rc = io_failed(lg, p, "replica append");
            else
                rc = error_set(
                    rc, "rt_partition_append_replica: %s: batch at offset %" PRId64 ": %s", p->dir,
                    reqs[i].header.base_offset, reqs[i].rule ? reqs[i].rule : rt_strerror(rc));
            break;
        }
        end = reqs[i].header.base_offset + reqs[i].header.last_offset_delta + 1;
    }
    free(reqs);
    free(ptrs);
    if (log_end_out && end >= 0)
        *log_end_out = end;
    return rc;
}
