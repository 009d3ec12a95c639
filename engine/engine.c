/*
 * engine.c — the composition root: rt_open/rt_close, options, the directory lock, stats, and
 * the thin rt_* entry points that take an rt_engine and hand over to the layers.
 *
 * Layers (docs/architecture.md): client/ (producer, consumer) → txn/ (coordinator, group
 * offsets, producer registry) → log/ (topics, partitions, segments, shards, fetch) → base/,
 * index/, io/. This file composes them; nothing below it calls back up, and it holds no
 * policy of its own beyond validating a call's arguments and clearing the thread's error
 * detail (every public call starts with error_clear; internal calls never clear it).
 *
 * Open: validate options → take the lock (flock on <dir>/.lock, exclusive, non-blocking: it
 * conflicts across processes and across handles in one process) → open the producer registry
 * → the log (catalogue, clean-shutdown marker, partitions) → raise the registry past the
 * partitions' ids → start the shards → the transaction layer (group offsets, then the
 * coordinator, which finishes every Prepare*). Close: refuse while producers or consumers are
 * open → the coordinator → the shards (every queued append finishes) → the group manager →
 * seal the partitions and write the clean-shutdown marker if no write failed → release the
 * lock.
 *
 * EN1. The engine is freed only while no producer or consumer of it is open: each is counted
 *      from before its open to the very end of its close (client_enter here; the handle's close
 *      decrements its count last), and rt_close returns RT_E_HANDLES_OPEN, changing nothing,
 *      while any count is non-zero. Fetches hold reference-counted segments instead and may
 *      outlive the engine.
 */
#include "engine.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleaner.h"
#include "cleaner_checkpoint.h"
#include "cleaner_pool.h"
#include "consumer.h"
#include "coordinator.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "group.h"
#include "io/io.h"
#include "producer.h"
#include "ringtail_test.h"
#include "txn_log.h"

#define SHARDS_MAX 64

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
    o->fetches_max = LOG_FETCHES_MAX_DEFAULT;
    o->message_timestamp_type = RT_TIMESTAMP_CREATE_TIME;
    o->fault_recovery_ms = 100;
    o->open_segments_max = 0; /* from RLIMIT_NOFILE (segment_cache_resolve) */
    o->cleaner_buffer_bytes = 16u << 20;
    o->mapped_segments_max = 0; /* from vm.max_map_count (segment_maps_resolve) */
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
    /* Kafka 3.x's segment.bytes bound (LogConfig: atLeast(LegacyRecord.RECORD_OVERHEAD_V0)): a
     * segment smaller than a batch is a valid configuration; the batch is refused at the append
     * (RT_E_RECORD_TOO_LARGE), as Kafka refuses it with RECORD_LIST_TOO_LARGE (issue 21 F6). */
    CHECK(o->segment_size_bytes >= SEGMENT_SIZE_MIN_BYTES, "segment_size_bytes must be >= 14");
    CHECK(o->segment_size_bytes <= INT32_MAX,
          "segment_size_bytes must be < 2 GiB (positions are i32)");
    CHECK(o->index_size_max_bytes >= 4 * 12, "index_size_max_bytes must be >= 48");
    CHECK(o->index_interval_bytes > 0, "index_interval_bytes must be > 0");
    CHECK(o->sync_mode <= RT_SYNC_NONE, "sync_mode");
    CHECK(o->sync_mode != RT_SYNC_INTERVAL || o->sync_interval_ms > 0,
          "sync_interval_ms must be > 0 under RT_SYNC_INTERVAL");
    CHECK(o->io_backend <= RT_IO_SYNC, "io_backend");
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
    CHECK(o->cleaner_buffer_bytes >= 1024, "cleaner_buffer_bytes must be >= 1024");
    CHECK(o->fetches_max <= (1u << 20), "fetches_max must be 0 (default) .. 1048576");
    CHECK(o->message_timestamp_type == RT_TIMESTAMP_CREATE_TIME ||
              o->message_timestamp_type == RT_TIMESTAMP_LOG_APPEND_TIME,
          "message_timestamp_type must be RT_TIMESTAMP_CREATE_TIME or _LOG_APPEND_TIME");
    CHECK(o->open_segments_max <= (1u << 20), "open_segments_max must be 0 (auto) .. 1048576");
    CHECK(o->mapped_segments_max <= (1u << 20), "mapped_segments_max must be 0 (auto) .. 1048576");
    CHECK(o->fault_recovery_ms == -1 ||
              (o->fault_recovery_ms >= 1 && o->fault_recovery_ms <= 3600000),
          "fault_recovery_ms must be -1 (never) or 1 .. 3600000");
#undef CHECK
    return 0;
}

/* The lock file holds only the writer's pid and serves flock: losing its name at a crash loses
 * nothing (the next open creates it again), so its creation is not followed by a directory
 * fsync (it goes through io_file_create so the fault injector's model covers it anyway). */
static int lock_dir(rt_engine *e, const char *dir, bool read_only, struct io_fault_plan *faults)
{
    char path[SEGMENT_PATH_BYTES];
    if (snprintf(path, sizeof(path), "%s/%s", dir, META_LOCK_FILE) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    e->lock_fd =
        read_only ? open(path, O_RDONLY | O_CLOEXEC) : io_file_create(faults, path, O_RDWR, 0644);
    int open_rc = e->lock_fd >= 0 ? 0 : read_only ? -errno : e->lock_fd;
    if (open_rc) {
        e->lock_fd = -1;
        if (read_only && open_rc == -ENOENT)
            return 0; /* never opened for writing: nothing to lock against, nothing created */
        return error_set(open_rc, "%s: cannot open: %s", path, strerror(-open_rc));
    }
    /* Writers take it exclusively, read-only handles shared: readers coexist, and a reader
     * never sees a log that a writer is changing (truncating, rolling, deleting). */
    if (flock(e->lock_fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int err = errno;
        close(e->lock_fd);
        e->lock_fd = -1;
        if (err == EWOULDBLOCK)
            return error_set(RT_E_DIRECTORY_LOCKED,
                             "%s: the data directory is already open%s (lock held on %s)", dir,
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

/* The catalogue's internal topics must have the shape the engine writes them with: an older
 * version let clients create them (rt_topic_create("__consumer_offsets", 1)), and the managers
 * would then fail later with a code that names no file. */
static int internal_topics_check(const struct log *lg)
{
    for (uint32_t i = 0; i < lg->catalogue.count; i++) {
        const struct meta_topic *mt = &lg->catalogue.topics[i];
        uint32_t want = 0;
        if (strcmp(mt->name, TXN_LOG_TOPIC) == 0)
            want = 1;
        else if (strcmp(mt->name, GROUP_OFFSETS_TOPIC) == 0)
            want = GROUP_OFFSETS_PARTITIONS;
        if (want && mt->partitions != want)
            return error_set(RT_E_CORRUPT,
                             "%s/%s: internal topic %s has %u partition%s; the engine keeps it "
                             "with %u (was it created by a client?)",
                             lg->dir, META_FILE, mt->name, mt->partitions,
                             mt->partitions == 1 ? "" : "s", want);
    }
    return 0;
}

/* ---- open, close, stats ---- */

/* The local coordinator's answer for (pid, epoch, topic-partition) (coordinator.c CO7), asked
 * by transactional id or, id NULL, by producer id (an append). */
static int txn_verify_local(rt_engine *e, const char *id, int64_t producer_id,
                            int16_t producer_epoch, const char *topic, uint32_t partition)
{
    struct coordinator *c = txn_coordinator(&e->txn);
    if (!c)
        return error_set(RT_E_INVALID_TXN_STATE,
                         "producer %" PRId64 " holds no transaction: a transactional batch "
                         "needs its partition added first (no transaction was ever started)",
                         producer_id);
    return coordinator_verify(c, id, producer_id, producer_epoch, topic, partition);
}

/* The log's check of a client's transactional batch: the embedder's verifier when it gave one
 * (docs/format.md G.9 TV1), else the local coordinator (CO7). */
static int txn_verify_append(void *ctx, const char *topic, uint32_t partition, int64_t producer_id,
                             int16_t producer_epoch)
{
    rt_engine *e = ctx;
    const struct rt_options *o = &e->log.opts;
    if (!o->txn_verifier)
        return txn_verify_local(e, NULL, producer_id, producer_epoch, topic, partition);
    error_clear();
    int rc = o->txn_verifier(o->txn_verifier_ctx, topic, partition, producer_id, producer_epoch);
    if (rc && !*rt_error_detail()) /* TV2: a refusal always names its partition */
        error_set(rc,
                  "the transaction verifier (rt_options.txn_verifier) refused producer %" PRId64
                  " epoch %d in %s-%u: %s",
                  producer_id, producer_epoch, topic, partition, rt_strerror(rc));
    return rc;
}

/* rt_open, and rt_test_open with a fault plan (the fault injector's backend, for tests only:
 * ringtail_test.h). */
static int engine_open(const char *dir, const struct rt_options *opts_in,
                       struct io_fault_plan *faults, rt_engine **out)
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
    } else if ((rc = io_mkdir(faults, dir, 0755)) == 0) {
        /* A new data directory's own name is durable before anything is written in it: its
         * parent is fsynced (that of "a/b" or "a/b/" is "a", of "b" ".", of "/b" "/"). */
        char parent[SEGMENT_PATH_BYTES];
        snprintf(parent, sizeof(parent), "%s", dir);
        size_t len = strlen(parent);
        while (len > 1 && parent[len - 1] == '/')
            parent[--len] = '\0';
        char *slash = strrchr(parent, '/');
        if (!slash)
            snprintf(parent, sizeof(parent), ".");
        else if (slash == parent)
            parent[1] = '\0';
        else
            *slash = '\0';
        rc = fs_fsync_dir(faults, parent);
        if (rc)
            return error_set(rc, "%s: cannot fsync its parent directory %s", dir, parent);
    } else if (rc != -EEXIST) {
        return error_set(rc, "%s: cannot create directory: %s", dir, strerror(-rc));
    }

    rt_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->lock_fd = -1;
    rc = sender_pool_init(&e->senders); /* starts no thread: the first producer's wake does */
    if (rc) {
        free(e);
        return rc;
    }
    rc = lock_dir(e, dir, opts_in->read_only, faults);
    if (rc)
        goto err_unlock;
    /* The registry first: partitions ask it which producer ids are named while they replay. */
    rc = txn_registry_open(&e->txn, dir, faults);
    if (rc)
        goto err_txn;
    if (opts_in->producer_ids_granted)
        producer_registry_set_granted(&e->txn.producers);
    /* The log's ports (L-5): the calls it makes up, answered by the txn layer. */
    const struct log_ports ports = {.is_named = producer_registry_is_named,
                                    .named_ctx = &e->txn.producers,
                                    .txn_verify = txn_verify_append,
                                    .txn_verify_ctx = e};
    rc = log_init(&e->log, dir, opts_in, faults, &ports);
    if (rc)
        goto err_txn;
    e->log_open = true;
    rc = internal_topics_check(&e->log);
    if (rc == 0)
        rc = log_open_topics(&e->log);
    if (rc == 0)
        rc = txn_registry_raise(&e->txn, &e->log);
    if (rc == 0)
        rc = log_start(&e->log);
    if (rc == 0)
        rc = txn_start(&e->txn, &e->log);
    if (rc)
        goto err_log;
    log_txn_verify_enable(&e->log, true); /* the coordinator runs: clients may write */
    *out = e;
    return 0;

err_log:
    txn_stop(&e->txn);
    log_stop(&e->log);
err_txn:
    txn_close(&e->txn);
    if (e->log_open)
        (void)log_close(&e->log, false);
err_unlock:
    if (e->lock_fd >= 0)
        close(e->lock_fd); /* releases the flock */
    sender_pool_destroy(&e->senders);
    free(e);
    return rc;
}

int rt_open(const char *dir, const struct rt_options *opts, rt_engine **out)
{
    return engine_open(dir, opts, NULL, out);
}

int rt_test_open(const char *dir, const struct rt_options *opts, struct io_fault_plan *faults,
                 rt_engine **out)
{
    if (!faults) {
        error_clear();
        return error_set(RT_E_INVALID_ARGUMENT, "rt_test_open: a fault plan is required");
    }
    return engine_open(dir, opts, faults, out);
}

/* ---- client handles (EN1) ---- */

/* The count and the flag form a Dekker pair (sequentially consistent atomics): an opener adds
 * itself and then looks at the flag, rt_close sets the flag and then looks at the counts, so
 * at least one of the two sees the other. */
static int client_enter(rt_engine *e, _Atomic uint32_t *n)
{
    uint32_t before = atomic_fetch_add(n, 1);
    assert(before < UINT32_MAX);
    (void)before;
    if (atomic_load(&e->clients_stopping)) {
        atomic_fetch_sub(n, 1);
        return error_set(RT_E_CLOSED, "%s: the engine is closing", e->log.dir);
    }
    return 0;
}

/* 0 when no producer or consumer is open (and none can open any more); else
 * RT_E_HANDLES_OPEN with the engine left exactly as it was. */
static int clients_stop(rt_engine *e)
{
    atomic_store(&e->clients_stopping, true);
    uint32_t producers = atomic_load(&e->producers_open_count);
    uint32_t consumers = atomic_load(&e->consumers_open_count);
    if (producers == 0 && consumers == 0)
        return 0;
    atomic_store(&e->clients_stopping, false);
    return error_set(RT_E_HANDLES_OPEN,
                     "rt_close: %u producer(s) and %u consumer(s) of %s are still open: close "
                     "them first (the engine was left open)",
                     producers, consumers, e->log.dir);
}

int rt_close(rt_engine *e)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_close: NULL engine");
    int busy = clients_stop(e);
    if (busy)
        return busy;
    sender_pool_destroy(&e->senders); /* no producer is open (EN1): its threads only exit */
    txn_stop(&e->txn);                /* the coordinator's timer writes through the shards: first */
    log_stop(&e->log);
    txn_close(&e->txn);
    int rc = log_close(&e->log, true);
    if (e->lock_fd >= 0)
        close(e->lock_fd); /* releases the flock */
    free(e);
    return rc;
}

int rt_stats_get(rt_engine *e, struct rt_stats *out)
{
    error_clear();
    if (!e || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_stats_get: NULL argument");
    memset(out, 0, sizeof(*out));
    log_stats(&e->log, out);
    return 0;
}

struct log *engine_log(rt_engine *e)
{
    return &e->log;
}

struct txn *engine_txn(rt_engine *e)
{
    return &e->txn;
}

/* ---- topics ---- */

static int rt_topic_create_checked(rt_engine *e, const char *name, uint32_t partitions,
                                   const struct topic_config *config);

int rt_topic_create(rt_engine *e, const char *name, uint32_t partitions)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_create: NULL engine");
    return rt_topic_create_checked(e, name, partitions, NULL);
}

static int rt_topic_create_checked(rt_engine *e, const char *name, uint32_t partitions,
                                   const struct topic_config *config)
{
    if (!meta_topic_name_valid(name))
        return error_set(RT_E_INVALID_TOPIC, "invalid topic name '%s'", name ? name : "(null)");
    if (meta_topic_name_internal(name))
        return error_set(RT_E_INTERNAL_TOPIC,
                         "topic name '%s': names beginning with '__' are reserved for the "
                         "engine's internal topics",
                         name);
    uint32_t max = log_options(&e->log)->partitions_max;
    if (partitions == 0 || partitions > max)
        return error_set(RT_E_INVALID_ARGUMENT, "partitions must be 1..%u, got %u", max,
                         partitions);
    return log_topic_create(&e->log, name, partitions, config);
}

/* Checks every entry into *out (TC1, TC2): a name given twice is refused too. */
static int configs_build(const struct rt_topic_config *configs, size_t count,
                         struct topic_config *out, bool allow_remove)
{
    if (count > 0 && !configs)
        return error_set(RT_E_INVALID_ARGUMENT, "configs NULL with count %zu", count);
    bool seen[TC_KEYS] = {false};
    for (size_t i = 0; i < count; i++) {
        char canon[TOPIC_CONFIG_VALUE_MAX + 1];
        int k = topic_config_key(configs[i].name);
        int rc;
        if (k >= 0 && !configs[i].value && allow_remove)
            rc = 0;
        else
            rc = topic_config_check(configs[i].name, configs[i].value, &k, canon);
        if (rc)
            return rc;
        if (seen[k])
            return error_set(RT_E_INVALID_CONFIG, "config %s given twice", configs[i].name);
        seen[k] = true;
        rc = topic_config_set(out, (enum topic_config_key)k, configs[i].value ? canon : NULL);
        if (rc)
            return error_set(rc, "out of memory");
    }
    return 0;
}

int rt_topic_add_partitions(rt_engine *e, const char *name, uint32_t count)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_add_partitions: NULL engine");
    if (!name || !meta_topic_name_valid(name))
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'",
                         name ? name : "(null)");
    return log_topic_add_partitions(&e->log, name, count);
}

int rt_topic_delete(rt_engine *e, const char *name)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_delete: NULL engine");
    if (!name || !meta_topic_name_valid(name))
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'",
                         name ? name : "(null)");
    return log_topic_delete(&e->log, name);
}

int rt_partition_delete_records(rt_engine *e, const char *topic, uint32_t partition, int64_t offset,
                                int64_t *low_watermark_out)
{
    error_clear();
    if (!e || !low_watermark_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_partition_delete_records: NULL argument");
    if (!topic || !meta_topic_name_valid(topic))
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'",
                         topic ? topic : "(null)");
    return log_delete_records(&e->log, topic, partition, offset, low_watermark_out);
}

#define REPLICA_ARGS_CHECK(what)                                                                   \
    do {                                                                                           \
        error_clear();                                                                             \
        if (!e)                                                                                    \
            return error_set(RT_E_INVALID_ARGUMENT, what ": NULL engine");                         \
        if (!topic || !meta_topic_name_valid(topic))                                               \
            return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'",                \
                             topic ? topic : "(null)");                                            \
    } while (0)

int rt_partition_set_leader_epoch(rt_engine *e, const char *topic, uint32_t partition,
                                  int32_t epoch)
{
    REPLICA_ARGS_CHECK("rt_partition_set_leader_epoch");
    return log_set_leader_epoch(&e->log, topic, partition, epoch);
}

int rt_partition_end_offset_for_epoch(rt_engine *e, const char *topic, uint32_t partition,
                                      int32_t epoch, int64_t *end_offset_out,
                                      int32_t *found_epoch_out)
{
    REPLICA_ARGS_CHECK("rt_partition_end_offset_for_epoch");
    if (!end_offset_out || !found_epoch_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_partition_end_offset_for_epoch: NULL output");
    return log_end_offset_for_epoch(&e->log, topic, partition, epoch, end_offset_out,
                                    found_epoch_out);
}

int rt_partition_truncate(rt_engine *e, const char *topic, uint32_t partition, int64_t offset,
                          int64_t *log_end_out)
{
    REPLICA_ARGS_CHECK("rt_partition_truncate");
    return log_truncate(&e->log, topic, partition, offset, log_end_out);
}

int rt_partition_restart_at(rt_engine *e, const char *topic, uint32_t partition, int64_t offset)
{
    REPLICA_ARGS_CHECK("rt_partition_restart_at");
    return log_restart_at(&e->log, topic, partition, offset);
}

int rt_partition_append_replica(rt_engine *e, const char *topic, uint32_t partition,
                                const void *batches, size_t len, int64_t *log_end_out)
{
    REPLICA_ARGS_CHECK("rt_partition_append_replica");
    if (!batches && len > 0)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_partition_append_replica: NULL batches");
    return log_append_replica(&e->log, topic, partition, batches, len, log_end_out);
}

int rt_partition_set_high_watermark(rt_engine *e, const char *topic, uint32_t partition, int64_t hw,
                                    int64_t *hw_out)
{
    REPLICA_ARGS_CHECK("rt_partition_set_high_watermark");
    return log_set_high_watermark(&e->log, topic, partition, hw, hw_out);
}

/* RL6, GO8, TX5: the role of a partition of __consumer_offsets or __transaction_state (txn.c);
 * other topics' partitions only say whether they take replica appends (RL9; their state is the
 * log's, RL3). The log's role and the group manager's are ordered so
 * that no write lands in between: resigning closes the log to our writes first (a commit in
 * flight then fails, nothing applied, GO1) and then drops the state; becoming leader opens the
 * log first and then replays it (the groups answer only once the replay is done). */
static int partition_role(rt_engine *e, const char *topic, uint32_t partition, bool lead)
{
    const char *what = lead ? "rt_partition_become_leader" : "rt_partition_resign";
    if (strcmp(topic, TXN_LOG_TOPIC) == 0)
        return txn_coordinator_role(&e->txn, partition, lead); /* TX5, CO16 */
    if (strcmp(topic, GROUP_OFFSETS_TOPIC) != 0) {
        if (meta_topic_name_internal(topic))
            return error_set(RT_E_INTERNAL_TOPIC,
                             "%s: topic '%s' is internal and not replicated yet (only %s and %s "
                             "are)",
                             what, topic, GROUP_OFFSETS_TOPIC, TXN_LOG_TOPIC);
        return log_replica_set_led(&e->log, topic, partition, lead); /* RL9 */
    }
    if (partition >= GROUP_OFFSETS_PARTITIONS)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s: unknown partition %s-%" PRIu32, what,
                         topic, partition);
    struct group_manager *g = NULL;
    int rc = txn_groups_create(&e->txn, &g);
    if (rc)
        return rc;
    if (!lead) {
        rc = log_internal_set_follower(&e->log, topic, partition, true);
        return rc ? rc : group_partition_unload(g, partition);
    }
    rc = log_internal_set_follower(&e->log, topic, partition, false);
    if (rc)
        return rc;
    rc = group_partition_load(g, partition);
    if (rc) { /* stays a follower: its log takes no write of ours */
        char detail[ERROR_DETAIL_BYTES];
        snprintf(detail, sizeof(detail), "%s", rt_error_detail());
        (void)log_internal_set_follower(&e->log, topic, partition, true);
        return error_set(rc, "%s", detail);
    }
    return 0;
}

int rt_partition_become_leader(rt_engine *e, const char *topic, uint32_t partition)
{
    REPLICA_ARGS_CHECK("rt_partition_become_leader");
    return partition_role(e, topic, partition, true);
}

int rt_partition_resign(rt_engine *e, const char *topic, uint32_t partition)
{
    REPLICA_ARGS_CHECK("rt_partition_resign");
    return partition_role(e, topic, partition, false);
}

uint32_t rt_group_partition(const char *group, size_t len)
{
    _Static_assert(RT_GROUP_OFFSETS_PARTITIONS == GROUP_OFFSETS_PARTITIONS,
                   "the public partition count is the engine's");
    return group ? group_partition_of(group, len) : 0;
}

int rt_topic_compact(rt_engine *e, const char *topic)
{
    error_clear();
    if (!e || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_compact: NULL argument");
    if (!meta_topic_name_valid(topic))
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic '%s'", topic);
    return log_topic_compact(&e->log, topic);
}

int rt_topic_config_check(const char *name, const char *value)
{
    error_clear();
    if (!value && topic_config_key(name) >= 0)
        return 0; /* the name alone */
    char canon[TOPIC_CONFIG_VALUE_MAX + 1];
    return topic_config_check(name, value, NULL, canon);
}

int rt_topic_create_with_configs(rt_engine *e, const char *name, uint32_t partitions,
                                 const struct rt_topic_config *configs, size_t count)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_create_with_configs: NULL engine");
    struct topic_config c = {{0}};
    int rc = configs_build(configs, count, &c, false);
    if (rc == 0)
        rc = rt_topic_create_checked(e, name, partitions, &c);
    topic_config_free(&c);
    return rc;
}

int rt_topic_config_alter(rt_engine *e, const char *topic, const struct rt_topic_config *configs,
                          size_t count, bool replace_all)
{
    error_clear();
    if (!e || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_config_alter: NULL argument");
    struct topic_config c = {{0}};
    int rc = 0;
    if (!replace_all)
        rc = log_topic_config_copy(&e->log, topic, &c);
    if (rc == 0)
        rc = configs_build(configs, count, &c, !replace_all);
    if (rc == 0)
        rc = log_topic_config_store(&e->log, topic, &c);
    topic_config_free(&c);
    return rc;
}

int rt_topic_config_defaults_alter(rt_engine *e, const struct rt_topic_config *configs,
                                   size_t count)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_config_defaults_alter: NULL engine");
    struct topic_config c = {{0}};
    int rc = log_topic_defaults_copy(&e->log, &c);
    if (rc == 0)
        rc = configs_build(configs, count, &c, true); /* TC1, TC2: nothing changes on error */
    if (rc == 0)
        rc = log_topic_defaults_store(&e->log, &c);
    topic_config_free(&c);
    return rc;
}

int rt_topic_config_get(rt_engine *e, const char *topic, rt_topic_config_fn fn, void *ctx)
{
    error_clear();
    if (!e || !topic || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_config_get: NULL argument");
    struct topic_config c = {{0}}, dyn = {{0}};
    int rc = log_topic_config_copy(&e->log, topic, &c);
    if (rc == 0 && !meta_topic_name_internal(topic))
        rc = log_topic_defaults_copy(&e->log, &dyn);
    const struct rt_options *o = log_options(&e->log);
    for (int k = 0; k < TC_KEYS && rc == 0; k++) {
        char def[64];
        enum rt_config_source src = RT_CONFIG_TOPIC;
        const char *value = c.value[k];
        if (!value && dyn.value[k]) { /* TC4 */
            value = dyn.value[k];
            src = RT_CONFIG_DYNAMIC_DEFAULT;
        } else if (!value) {
            topic_config_default(o, (enum topic_config_key)k, def, sizeof(def));
            value = def;
            src = topic_config_default_from_options(o, (enum topic_config_key)k)
                      ? RT_CONFIG_ENGINE
                      : RT_CONFIG_DEFAULT;
        }
        rc = fn(ctx, topic_config_name((enum topic_config_key)k), value, src,
                topic_config_honoured((enum topic_config_key)k));
    }
    topic_config_free(&c);
    topic_config_free(&dyn);
    return rc;
}

int rt_topic_describe(rt_engine *e, const char *name, uint32_t *partitions_out)
{
    error_clear();
    if (!e || !name || !partitions_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_describe: NULL argument");
    return log_topic_describe(&e->log, name, partitions_out);
}

int rt_topic_list(rt_engine *e, int (*fn)(void *ctx, const char *name, uint32_t partitions),
                  void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_topic_list: NULL argument");
    return log_topic_list(&e->log, fn, ctx);
}

/* ---- appends and reads ---- */

int rt_append(rt_engine *e, const char *topic, uint32_t partition, const struct rt_record *records,
              size_t count, int64_t *base_offset_out)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append: NULL engine");
    return log_append_records(&e->log, topic, partition, records, count, base_offset_out);
}

int rt_append_batch(rt_engine *e, const char *topic, uint32_t partition, void *batch, size_t len,
                    int64_t *base_offset_out)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch: NULL engine");
    return log_append_batch(&e->log, topic, partition, batch, len, base_offset_out);
}

int rt_fetch_start(rt_engine *e, const char *topic, uint32_t partition, int64_t offset,
                   size_t max_bytes, enum rt_isolation isolation, rt_fetch **out)
{
    error_clear();
    if (!e || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_fetch_start: NULL argument");
    return log_fetch_start(&e->log, topic, partition, offset, max_bytes, isolation, out);
}

int rt_list_offsets(rt_engine *e, const char *topic, uint32_t partition, int64_t spec,
                    enum rt_isolation isolation, int64_t *offset_out)
{
    error_clear();
    if (!e || !offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets: NULL argument");
    return log_list_offsets(&e->log, topic, partition, spec, isolation, offset_out);
}

int rt_list_offsets_by_timestamp(rt_engine *e, const char *topic, uint32_t partition,
                                 int64_t timestamp_ms, enum rt_isolation isolation,
                                 int64_t *offset_out, int64_t *timestamp_out)
{
    error_clear();
    if (!e || !offset_out || !timestamp_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_list_offsets_by_timestamp: NULL argument");
    struct partition *p = topic ? log_partition(&e->log, topic, partition) : NULL;
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    return fetch_partition_offset_for_timestamp(p, timestamp_ms, isolation, offset_out,
                                                timestamp_out);
}

/* ---- clients ---- */

int rt_producer_open(rt_engine *e, const struct rt_producer_options *opts, rt_producer **out)
{
    error_clear();
    if (!e || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_open: NULL argument");
    *out = NULL;
    int rc = client_enter(e, &e->producers_open_count);
    if (rc)
        return rc;
    rc = producer_open(&e->log, &e->txn, &e->senders, opts, &e->producers_open_count, out);
    if (rc)
        atomic_fetch_sub(&e->producers_open_count, 1);
    return rc;
}

int rt_consumer_open(rt_engine *e, const struct rt_consumer_options *opts, rt_consumer **out)
{
    error_clear();
    if (!e || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_open: NULL argument");
    *out = NULL;
    int rc = client_enter(e, &e->consumers_open_count);
    if (rc)
        return rc;
    rc = consumer_open(&e->log, &e->txn, opts, &e->consumers_open_count, out);
    if (rc)
        atomic_fetch_sub(&e->consumers_open_count, 1);
    return rc;
}

/* ---- public wrappers: transactions admin and group offsets ---- */

int rt_txn_set_check_handler(rt_engine *e, rt_txn_check_fn fn, void *ctx)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_set_check_handler: NULL engine");
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_txn_set_check_handler");
    struct coordinator *c = NULL;
    int rc = txn_coordinator_create(&e->txn, &c);
    if (rc)
        return rc;
    return coordinator_set_check_handler(c, fn, ctx);
}

int rt_txn_list(rt_engine *e, int (*fn)(void *ctx, const struct rt_txn_info *txn), void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_list: NULL argument");
    struct coordinator *c = txn_coordinator(&e->txn);
    if (!c)
        return 0; /* no transaction log: nothing to list */
    return coordinator_list(c, fn, ctx);
}

int rt_txn_abort(rt_engine *e, const char *transactional_id)
{
    error_clear();
    if (!e || !transactional_id)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_abort: NULL argument");
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_txn_abort");
    struct coordinator *c = txn_coordinator(&e->txn);
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
    struct coordinator *c = txn_coordinator(&e->txn);
    error_clear(); /* no coordinator: every open transaction is one it does not know */
    return coordinator_list_partitions(&e->log, c, fn, ctx);
}

int rt_partition_producers(rt_engine *e, const char *topic, uint32_t partition,
                           int (*fn)(void *ctx, const struct rt_partition_producer *producer),
                           void *ctx)
{
    error_clear();
    if (!e || !topic || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_partition_producers: NULL argument");
    return coordinator_partition_producers(&e->log, topic, partition, fn, ctx);
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
    struct coordinator *c = txn_coordinator(&e->txn);
    error_clear();
    return coordinator_abort_partition(&e->log, c, txn_groups(&e->txn), topic, partition,
                                       producer_id, producer_epoch);
}

int rt_txn_write_marker(rt_engine *e, const char *topic, uint32_t partition, int64_t producer_id,
                        int16_t producer_epoch, bool commit)
{
    error_clear();
    if (!e || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_write_marker: NULL argument");
    if (producer_id < 0 || producer_epoch < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_txn_write_marker: producer id %" PRId64 " and epoch %d must be >= 0",
                         producer_id, (int)producer_epoch);
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_txn_write_marker");
    return coordinator_write_marker(&e->log, txn_groups(&e->txn), topic, partition, producer_id,
                                    producer_epoch, commit);
}

int rt_group_commit_offsets(rt_engine *e, const char *group, const struct rt_offset *offsets,
                            size_t count)
{
    error_clear();
    if (!e || !group || !*group || (!offsets && count))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_commit_offsets: NULL argument");
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_group_commit_offsets");
    int rc = group_offsets_check_known(&e->log, offsets, count);
    if (rc)
        return rc;
    struct group_manager *g = NULL;
    rc = txn_groups_create(&e->txn, &g);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    return group_commit(g, group, offsets, count);
}

/* format.md H.7 TXO1-TXO5: the group coordinator's side of TxnOffsetCommit, where the
 * transaction's coordinator may be another node; the local coordinator is not consulted. */
int rt_group_commit_txn_offsets(rt_engine *e, const char *group, int64_t producer_id,
                                int16_t producer_epoch, const struct rt_offset *offsets,
                                size_t count)
{
    error_clear();
    if (!e || !group || !*group || (!offsets && count))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_commit_txn_offsets: NULL argument");
    if (producer_id < 0 || producer_epoch < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_group_commit_txn_offsets: producer id %" PRId64
                         " and epoch %d must be >= 0",
                         producer_id, (int)producer_epoch);
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_group_commit_txn_offsets");
    int rc = group_offsets_check_known(&e->log, offsets, count);
    if (rc)
        return rc;
    struct group_manager *g = NULL;
    rc = txn_groups_create(&e->txn, &g);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    /* TXO2 (GO8: RT_E_NOT_COORDINATOR unless the group's partition is led here), TXO3 (the
     * partition's producer state refuses an older epoch), TXO1 (pending until the marker). */
    return group_txn_commit_offsets(g, producer_id, producer_epoch, group, offsets, count);
}

int rt_group_fetch_offsets(rt_engine *e, const char *group, const char *topic, uint32_t partition,
                           bool require_stable, int64_t *offset_out)
{
    error_clear();
    if (!e || !group || !topic || !offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_fetch_offsets: NULL argument");
    struct group_manager *g = txn_groups(&e->txn);
    if (!g) {
        *offset_out = -1;
        return 0;
    }
    return group_fetch(g, group, topic, partition, require_stable, offset_out);
}

int rt_group_fetch_offset(rt_engine *e, const char *group, const char *topic, uint32_t partition,
                          bool require_stable, struct rt_committed_offset *out)
{
    error_clear();
    if (!e || !group || !topic || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_fetch_offset: NULL argument");
    struct group_manager *g = txn_groups(&e->txn);
    if (!g) {
        *out = (struct rt_committed_offset){
            .offset = -1, .leader_epoch = -1, .commit_timestamp_ms = -1};
        return 0;
    }
    return group_fetch_committed(g, group, topic, partition, require_stable, out);
}

int rt_group_list_offsets(rt_engine *e, const char *group, rt_group_offset_fn fn, void *ctx)
{
    error_clear();
    if (!e || !group || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_list_offsets: NULL argument");
    struct group_manager *g = txn_groups(&e->txn);
    return g ? group_offsets_each(g, group, fn, ctx) : 0;
}

int rt_group_list(rt_engine *e, rt_group_name_fn fn, void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_list: NULL argument");
    struct group_manager *g = txn_groups(&e->txn);
    return g ? group_names_each(g, fn, ctx) : 0;
}

int rt_group_store_metadata(rt_engine *e, const char *group, const struct rt_group_metadata *md)
{
    error_clear();
    if (!e || !group || !md)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_store_metadata: NULL argument");
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_group_store_metadata");
    struct group_manager *g = NULL;
    int rc = txn_groups_create(&e->txn, &g);
    if (rc)
        return rc;
    return group_store_metadata(g, group, md);
}

int rt_group_list_metadata(rt_engine *e, rt_group_metadata_fn fn, void *ctx)
{
    error_clear();
    if (!e || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_list_metadata: NULL argument");
    struct group_manager *g = txn_groups(&e->txn);
    return g ? group_metadata_each(g, fn, ctx) : 0;
}

int rt_group_delete_offsets(rt_engine *e, const char *group,
                            const struct rt_topic_partition *partitions, size_t count,
                            size_t *deleted_out)
{
    error_clear();
    if (deleted_out)
        *deleted_out = 0;
    if (!e || !group || (count && !partitions))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_delete_offsets: NULL argument");
    if (log_read_only(&e->log))
        return log_refuse_if_read_only(&e->log, "rt_group_delete_offsets");
    struct group_manager *g = txn_groups(&e->txn);
    if (!g)
        return 0; /* nothing was ever committed */
    return group_delete(g, group, count ? partitions : NULL, count, deleted_out);
}

/* ---- the asynchronous group calls (on the transaction lanes, keyed by the group) ---- */

struct group_call {
    struct txn_job job; /* first: the lane hands the job back */
    rt_engine *e;
    const char *group;
    uint8_t *value; /* store: the encoded metadata, then the group's name (owned) */
    size_t value_len;
    const struct rt_topic_partition *parts; /* delete; NULL with count 0: the whole group */
    const struct rt_offset *offsets;        /* commit */
    size_t count;
    int64_t producer_id; /* a transactional commit (TXO1): >= 0; else -1 */
    int16_t producer_epoch;
    bool store;
    rt_group_done_fn done;
    void *ctx;
};
_Static_assert(sizeof(struct group_call) <= sizeof(struct rt_group_op), "rt_group_op too small");
_Static_assert(offsetof(struct group_call, job) == 0, "the job opens the call");

static void group_call_run(struct txn_job *job, int err)
{
    struct group_call *k = (struct group_call *)job;
    error_clear();
    int rc = err;
    size_t deleted = 0;
    if (rc == 0 && k->store) {
        struct group_manager *g = NULL;
        rc = log_read_only(&k->e->log)
                 ? log_refuse_if_read_only(&k->e->log, "rt_group_store_metadata_async")
                 : txn_groups_create(&k->e->txn, &g);
        if (rc == 0)
            rc = group_store_meta(g, k->group, k->value, k->value_len);
    } else if (rc == 0 && k->offsets && k->producer_id >= 0) {
        rc = rt_group_commit_txn_offsets(k->e, k->group, k->producer_id, k->producer_epoch,
                                         k->offsets, k->count);
    } else if (rc == 0 && k->offsets) {
        rc = rt_group_commit_offsets(k->e, k->group, k->offsets, k->count);
    } else if (rc == 0) {
        rc = rt_group_delete_offsets(k->e, k->group, k->parts, k->count, &deleted);
    } else {
        error_set(rc, "%s", rt_strerror(rc));
    }
    free(k->value);
    rt_group_done_fn done = k->done;
    void *ctx = k->ctx;
    done(ctx, rc, deleted); /* the op may be freed inside: not touched after */
}

int rt_group_store_metadata_async(rt_engine *e, const char *group,
                                  const struct rt_group_metadata *md, struct rt_group_op *op,
                                  rt_group_done_fn done, void *ctx)
{
    error_clear();
    if (!e || !group || !md || !op || !done)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_store_metadata_async: NULL argument");
    uint8_t *value = NULL;
    size_t len = 0;
    int rc = group_metadata_encode(group, md, &value, &len);
    if (rc)
        return rc;
    size_t gl = strlen(group);
    uint8_t *both = realloc(value, len + gl + 1);
    if (!both) {
        free(value);
        return -ENOMEM;
    }
    memcpy(both + len, group, gl + 1);
    struct group_call *k = (struct group_call *)op;
    *k = (struct group_call){.e = e,
                             .group = (const char *)both + len,
                             .value = both,
                             .value_len = len,
                             .store = true,
                             .producer_id = -1,
                             .done = done,
                             .ctx = ctx};
    k->job.run = group_call_run;
    rc = txn_job_submit(&e->txn, k->group, &k->job);
    if (rc)
        free(both);
    return rc;
}

int rt_group_delete_offsets_async(rt_engine *e, const char *group,
                                  const struct rt_topic_partition *partitions, size_t count,
                                  struct rt_group_op *op, rt_group_done_fn done, void *ctx)
{
    error_clear();
    if (!e || !group || !op || !done || (count && !partitions))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_delete_offsets_async: NULL argument");
    struct group_call *k = (struct group_call *)op;
    *k = (struct group_call){.e = e,
                             .group = group,
                             .parts = partitions,
                             .count = count,
                             .producer_id = -1,
                             .done = done,
                             .ctx = ctx};
    k->job.run = group_call_run;
    return txn_job_submit(&e->txn, group, &k->job);
}

int rt_group_commit_offsets_async(rt_engine *e, const char *group, const struct rt_offset *offsets,
                                  size_t count, struct rt_group_op *op, rt_group_done_fn done,
                                  void *ctx)
{
    error_clear();
    if (!e || !group || !offsets || !count || !op || !done)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_commit_offsets_async: NULL argument");
    struct group_call *k = (struct group_call *)op;
    *k = (struct group_call){.e = e,
                             .group = group,
                             .offsets = offsets,
                             .count = count,
                             .producer_id = -1,
                             .done = done,
                             .ctx = ctx};
    k->job.run = group_call_run;
    return txn_job_submit(&e->txn, group, &k->job);
}

int rt_group_commit_txn_offsets_async(rt_engine *e, const char *group, int64_t producer_id,
                                      int16_t producer_epoch, const struct rt_offset *offsets,
                                      size_t count, struct rt_group_op *op, rt_group_done_fn done,
                                      void *ctx)
{
    error_clear();
    if (!e || !group || !offsets || !count || !op || !done)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_group_commit_txn_offsets_async: NULL argument");
    if (producer_id < 0 || producer_epoch < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_group_commit_txn_offsets_async: producer id %" PRId64
                         " and epoch %d must be >= 0",
                         producer_id, (int)producer_epoch);
    struct group_call *k = (struct group_call *)op;
    *k = (struct group_call){.e = e,
                             .group = group,
                             .offsets = offsets,
                             .count = count,
                             .producer_id = producer_id,
                             .producer_epoch = producer_epoch,
                             .done = done,
                             .ctx = ctx};
    k->job.run = group_call_run;
    return txn_job_submit(&e->txn, group, &k->job); /* TXO5: the group's lane */
}

/* ---- broker support ---- */

int rt_producer_id_allocate(rt_engine *e, int64_t *producer_id_out, int16_t *epoch_out)
{
    error_clear();
    if (!e || !producer_id_out || !epoch_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_id_allocate: NULL argument");
    int rc = log_refuse_if_read_only(&e->log, "rt_producer_id_allocate");
    if (rc)
        return rc;
    int64_t id = -1;
    rc = txn_producer_allocate(&e->txn, &id);
    if (rc)
        return error_set(rc, "rt_producer_id_allocate: %s", rt_strerror(rc));
    *producer_id_out = id;
    *epoch_out = 0;
    return 0;
}

int rt_producer_id_grant(rt_engine *e, int64_t first, int64_t end)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_id_grant: NULL engine");
    int rc = log_refuse_if_read_only(&e->log, "rt_producer_id_grant");
    return rc ? rc : producer_registry_grant(&e->txn.producers, first, end);
}

int rt_producer_id_available(rt_engine *e, int64_t *available_out)
{
    error_clear();
    if (!e || !available_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_id_available: NULL argument");
    *available_out = producer_registry_available(&e->txn.producers);
    return 0;
}

int rt_append_watch_set(rt_engine *e, void (*fn)(void *ctx), void *ctx)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_watch_set: NULL engine");
    log_watch_set(&e->log, fn, ctx);
    return 0;
}

int rt_append_batch_async(rt_engine *e, const char *topic, uint32_t partition, void *batch,
                          size_t len, struct rt_append_op *storage, rt_append_done_fn fn, void *ctx)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_append_batch_async: NULL engine");
    return log_append_batch_async(&e->log, topic, partition, batch, len, storage, fn, ctx);
}

/* ---- transactions over the wire ---- */

static int txn_wire_check(rt_engine *e, const char *id, const char *what)
{
    if (!e || !id)
        return error_set(RT_E_INVALID_ARGUMENT, "%s: NULL argument", what);
    if (!*id || strlen(id) > TXN_ID_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "%s: transactional ids are 1..%d bytes", what,
                         TXN_ID_MAX_BYTES);
    return log_refuse_if_read_only(&e->log, what);
}

/* The coordinator, which must exist already (an id that was never initialised has none). */
static int txn_wire_coordinator(rt_engine *e, const char *id, struct coordinator **out)
{
    *out = txn_coordinator(&e->txn);
    if (!*out)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    return 0;
}

static int txn_init_core(rt_engine *e, const char *id, int32_t timeout_ms, int64_t expected_pid,
                         int16_t expected_epoch, int64_t *producer_id_out, int16_t *epoch_out)
{
    int rc = txn_wire_check(e, id, "rt_txn_init_producer");
    if (rc)
        return rc;
    if (!producer_id_out || !epoch_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_init_producer: NULL argument");
    if (expected_pid < -1 || expected_epoch < -1 || (expected_pid < 0) != (expected_epoch < 0))
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_txn_init_producer: expected producer %" PRId64 " epoch %d (both "
                         "-1, or both >= 0)",
                         expected_pid, expected_epoch);
    const struct rt_options *o = log_options(&e->log);
    if (timeout_ms <= 0 || timeout_ms > o->transaction_timeout_max_ms)
        return error_set(RT_E_INVALID_TRANSACTION_TIMEOUT,
                         "transaction timeout %d ms is not within 1..%d ms "
                         "(transaction_timeout_max_ms)",
                         timeout_ms, o->transaction_timeout_max_ms);
    struct coordinator *c = NULL;
    rc = txn_coordinator_create(&e->txn, &c);
    if (rc)
        return rc;
    return coordinator_init_expected(c, id, timeout_ms, NULL, NULL, expected_pid, expected_epoch,
                                     producer_id_out, epoch_out);
}

static int txn_add_partitions_core(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                                   const struct rt_topic_partition *partitions, size_t count)
{
    int rc = txn_wire_check(e, id, "rt_txn_add_partitions");
    if (rc)
        return rc;
    if ((!partitions && count) || count > TXN_LOG_PARTITIONS_MAX)
        return error_set(count > TXN_LOG_PARTITIONS_MAX ? RT_E_TXN_PARTITIONS_FULL
                                                        : RT_E_INVALID_ARGUMENT,
                         "rt_txn_add_partitions: %zu partitions (a transaction holds at most "
                         "%d)",
                         count, TXN_LOG_PARTITIONS_MAX);
    for (size_t i = 0; i < count; i++) {
        if (!partitions[i].topic)
            return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_add_partitions: NULL topic");
        rc = log_client_topic_check(partitions[i].topic);
        if (rc)
            return rc;
        if (!log_options(&e->log)->partitions_elsewhere && /* the cluster broker checked */
            !log_partition(&e->log, partitions[i].topic, partitions[i].partition))
            return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "no partition %s-%u",
                             partitions[i].topic, partitions[i].partition);
    }
    struct coordinator *c = NULL;
    rc = txn_wire_coordinator(e, id, &c);
    if (rc || count == 0)
        return rc;
    struct txn_log_partition *tp = calloc(count, sizeof(*tp));
    if (!tp)
        return error_set(-ENOMEM, "rt_txn_add_partitions: out of memory");
    for (size_t i = 0; i < count; i++) {
        snprintf(tp[i].topic, sizeof(tp[i].topic), "%s", partitions[i].topic);
        tp[i].partition = partitions[i].partition;
    }
    rc = coordinator_add_partitions(c, id, producer_id, epoch, tp, (uint32_t)count);
    free(tp);
    return rc;
}

static int txn_group_check(const char *group, const char *what)
{
    if (!group || !*group || strlen(group) > GROUP_NAME_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "%s: group names are 1..%d bytes", what,
                         GROUP_NAME_MAX_BYTES);
    return 0;
}

static int txn_add_offsets_core(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                                const char *group)
{
    int rc = txn_wire_check(e, id, "rt_txn_add_offsets");
    if (rc == 0)
        rc = txn_group_check(group, "rt_txn_add_offsets");
    if (rc)
        return rc;
    struct coordinator *c = NULL;
    rc = txn_wire_coordinator(e, id, &c);
    if (rc)
        return rc;
    struct group_manager *g = NULL;
    rc = txn_groups_create(&e->txn, &g);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    struct txn_log_partition tp = {.partition = group_partition_for(group)};
    snprintf(tp.topic, sizeof(tp.topic), "%s", GROUP_OFFSETS_TOPIC);
    return coordinator_add_partitions(c, id, producer_id, epoch, &tp, 1);
}

static int txn_commit_offsets_core(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                                   const char *group, const struct rt_offset *offsets, size_t count)
{
    int rc = txn_wire_check(e, id, "rt_txn_commit_offsets");
    if (rc == 0)
        rc = txn_group_check(group, "rt_txn_commit_offsets");
    if (rc)
        return rc;
    if (!offsets && count)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_commit_offsets: NULL offsets");
    rc = group_offsets_check_known(&e->log, offsets, count);
    if (rc)
        return rc;
    struct coordinator *c = NULL;
    rc = txn_wire_coordinator(e, id, &c);
    if (rc)
        return rc;
    struct group_manager *g = txn_groups(&e->txn);
    if (!g)
        return error_set(RT_E_INVALID_TXN_STATE,
                         "group '%s' was not added to the transaction (AddOffsetsToTxn)", group);
    rc = coordinator_verify(c, id, producer_id, epoch, GROUP_OFFSETS_TOPIC,
                            group_partition_for(group));
    if (rc)
        return rc;
    return group_txn_commit_offsets(g, producer_id, epoch, group, offsets, count);
}

static int txn_end_core(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                        bool commit)
{
    int rc = txn_wire_check(e, id, "rt_txn_end");
    if (rc)
        return rc;
    struct coordinator *c = NULL;
    rc = txn_wire_coordinator(e, id, &c);
    if (rc)
        return rc;
    return coordinator_end_keep_epoch(c, id, producer_id, epoch, commit);
}

/* ---- the asynchronous forms (TX3 in txn.h) and the synchronous calls over them ---- */

enum txn_call_kind {
    CALL_INIT,
    CALL_ADD_PARTITIONS,
    CALL_ADD_OFFSETS,
    CALL_COMMIT_OFFSETS,
    CALL_END
};

/* What an rt_txn_op holds while its call is in flight. */
struct txn_call {
    struct txn_job job; /* first: the lane hands the job back */
    rt_engine *e;
    enum txn_call_kind kind;
    const char *id;
    const char *group;
    const void *items; /* rt_topic_partition or rt_offset */
    size_t count;
    int64_t producer_id; /* the request's, or (init) the expected one */
    int16_t epoch;
    bool commit;
    int32_t timeout_ms;
    rt_txn_done_fn done;
    void *ctx;
};
_Static_assert(sizeof(struct txn_call) <= sizeof(struct rt_txn_op), "rt_txn_op too small");
_Static_assert(offsetof(struct txn_call, job) == 0, "the job opens the call");

static void txn_call_run(struct txn_job *job, int err)
{
    struct txn_call *k = (struct txn_call *)job;
    error_clear();
    int64_t pid = k->kind == CALL_INIT ? -1 : k->producer_id;
    int16_t epoch = k->kind == CALL_INIT ? -1 : k->epoch;
    int rc = err;
    if (rc == 0) {
        switch (k->kind) {
        case CALL_INIT:
            rc = txn_init_core(k->e, k->id, k->timeout_ms, k->producer_id, k->epoch, &pid, &epoch);
            if (rc) {
                pid = -1;
                epoch = -1;
            }
            break;
        case CALL_ADD_PARTITIONS:
            rc = txn_add_partitions_core(k->e, k->id, k->producer_id, k->epoch, k->items, k->count);
            break;
        case CALL_ADD_OFFSETS:
            rc = txn_add_offsets_core(k->e, k->id, k->producer_id, k->epoch, k->group);
            break;
        case CALL_COMMIT_OFFSETS:
            rc = txn_commit_offsets_core(k->e, k->id, k->producer_id, k->epoch, k->group, k->items,
                                         k->count);
            break;
        case CALL_END:
            rc = txn_end_core(k->e, k->id, k->producer_id, k->epoch, k->commit);
            break;
        }
    } else {
        error_set(rc, "%s", rt_strerror(rc));
    }
    rt_txn_done_fn done = k->done;
    void *ctx = k->ctx;
    done(ctx, rc, pid, epoch); /* the op may be freed inside: not touched after */
}

static int txn_call_submit(struct rt_txn_op *op, const struct txn_call *call, const char *what)
{
    error_clear();
    if (!call->e || !call->id || !op || !call->done)
        return error_set(RT_E_INVALID_ARGUMENT, "%s: NULL argument", what);
    struct txn_call *k = (struct txn_call *)op;
    *k = *call;
    k->job.run = txn_call_run;
    return txn_job_submit(&call->e->txn, call->id, &k->job);
}

int rt_txn_init_producer_async(rt_engine *e, const char *id, int32_t timeout_ms,
                               int64_t expected_producer_id, int16_t expected_epoch,
                               struct rt_txn_op *op, rt_txn_done_fn done, void *ctx)
{
    struct txn_call k = {.e = e,
                         .kind = CALL_INIT,
                         .id = id,
                         .producer_id = expected_producer_id,
                         .epoch = expected_epoch,
                         .timeout_ms = timeout_ms,
                         .done = done,
                         .ctx = ctx};
    return txn_call_submit(op, &k, "rt_txn_init_producer_async");
}

int rt_txn_add_partitions_async(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                                const struct rt_topic_partition *partitions, size_t count,
                                struct rt_txn_op *op, rt_txn_done_fn done, void *ctx)
{
    struct txn_call k = {.e = e,
                         .kind = CALL_ADD_PARTITIONS,
                         .id = id,
                         .items = partitions,
                         .count = count,
                         .producer_id = producer_id,
                         .epoch = epoch,
                         .done = done,
                         .ctx = ctx};
    return txn_call_submit(op, &k, "rt_txn_add_partitions_async");
}

int rt_txn_add_offsets_async(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                             const char *group, struct rt_txn_op *op, rt_txn_done_fn done,
                             void *ctx)
{
    struct txn_call k = {.e = e,
                         .kind = CALL_ADD_OFFSETS,
                         .id = id,
                         .group = group,
                         .producer_id = producer_id,
                         .epoch = epoch,
                         .done = done,
                         .ctx = ctx};
    return txn_call_submit(op, &k, "rt_txn_add_offsets_async");
}

int rt_txn_commit_offsets_async(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                                const char *group, const struct rt_offset *offsets, size_t count,
                                struct rt_txn_op *op, rt_txn_done_fn done, void *ctx)
{
    struct txn_call k = {.e = e,
                         .kind = CALL_COMMIT_OFFSETS,
                         .id = id,
                         .group = group,
                         .items = offsets,
                         .count = count,
                         .producer_id = producer_id,
                         .epoch = epoch,
                         .done = done,
                         .ctx = ctx};
    return txn_call_submit(op, &k, "rt_txn_commit_offsets_async");
}

int rt_txn_end_async(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch, bool commit,
                     struct rt_txn_op *op, rt_txn_done_fn done, void *ctx)
{
    struct txn_call k = {.e = e,
                         .kind = CALL_END,
                         .id = id,
                         .producer_id = producer_id,
                         .epoch = epoch,
                         .commit = commit,
                         .done = done,
                         .ctx = ctx};
    return txn_call_submit(op, &k, "rt_txn_end_async");
}

/* A synchronous call: its asynchronous form, waited for; the lane's error detail is carried
 * back to the caller's thread. */
struct txn_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool finished;
    int err;
    int64_t producer_id;
    int16_t epoch;
    char detail[ERROR_DETAIL_BYTES];
};

static void txn_wait_done(void *ctx, int err, int64_t producer_id, int16_t epoch)
{
    struct txn_wait *w = ctx;
    pthread_mutex_lock(&w->mu);
    if (err)
        snprintf(w->detail, sizeof(w->detail), "%s", rt_error_detail());
    w->err = err;
    w->producer_id = producer_id;
    w->epoch = epoch;
    w->finished = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu); /* w is the waiter's from here on */
}

static void txn_wait_init(struct txn_wait *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

/* rc: what the submission returned. */
static int txn_wait_end(struct txn_wait *w, int rc)
{
    if (rc == 0) {
        pthread_mutex_lock(&w->mu);
        while (!w->finished)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        rc = w->err;
        if (rc)
            error_set(rc, "%s", w->detail);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return rc;
}

int rt_txn_init_producer_expected(rt_engine *e, const char *id, int32_t timeout_ms,
                                  int64_t expected_producer_id, int16_t expected_epoch,
                                  int64_t *producer_id_out, int16_t *epoch_out)
{
    if (!producer_id_out || !epoch_out) {
        error_clear();
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_init_producer: NULL argument");
    }
    struct txn_wait w;
    struct rt_txn_op op;
    txn_wait_init(&w);
    int rc = txn_wait_end(&w, rt_txn_init_producer_async(e, id, timeout_ms, expected_producer_id,
                                                         expected_epoch, &op, txn_wait_done, &w));
    if (rc == 0) {
        *producer_id_out = w.producer_id;
        *epoch_out = w.epoch;
    }
    return rc;
}

int rt_txn_init_producer(rt_engine *e, const char *id, int32_t timeout_ms, int64_t *producer_id_out,
                         int16_t *epoch_out)
{
    return rt_txn_init_producer_expected(e, id, timeout_ms, -1, -1, producer_id_out, epoch_out);
}

int rt_txn_add_partitions(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                          const struct rt_topic_partition *partitions, size_t count)
{
    struct txn_wait w;
    struct rt_txn_op op;
    txn_wait_init(&w);
    return txn_wait_end(&w, rt_txn_add_partitions_async(e, id, producer_id, epoch, partitions,
                                                        count, &op, txn_wait_done, &w));
}

int rt_txn_add_offsets(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                       const char *group)
{
    struct txn_wait w;
    struct rt_txn_op op;
    txn_wait_init(&w);
    return txn_wait_end(
        &w, rt_txn_add_offsets_async(e, id, producer_id, epoch, group, &op, txn_wait_done, &w));
}

int rt_txn_commit_offsets(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch,
                          const char *group, const struct rt_offset *offsets, size_t count)
{
    struct txn_wait w;
    struct rt_txn_op op;
    txn_wait_init(&w);
    return txn_wait_end(&w, rt_txn_commit_offsets_async(e, id, producer_id, epoch, group, offsets,
                                                        count, &op, txn_wait_done, &w));
}

int rt_txn_end(rt_engine *e, const char *id, int64_t producer_id, int16_t epoch, bool commit)
{
    struct txn_wait w;
    struct rt_txn_op op;
    txn_wait_init(&w);
    return txn_wait_end(
        &w, rt_txn_end_async(e, id, producer_id, epoch, commit, &op, txn_wait_done, &w));
}

void rt_test_cleaner_hook_set(void (*fn)(int step, void *ctx), void *ctx)
{
    cleaner_step_hook_ctx = ctx;
    cleaner_step_hook = fn;
}

void rt_test_cleaner_clock_set(int64_t skew_ms)
{
    atomic_store_explicit(&cleaner_clock_skew_ms, skew_ms, memory_order_relaxed);
}

void rt_test_cleaner_background_set(bool on)
{
    atomic_store_explicit(&cleaner_background_off, !on, memory_order_relaxed);
}

int rt_txn_verify(rt_engine *e, const char *id, int64_t producer_id, int16_t producer_epoch,
                  const char *topic, uint32_t partition)
{
    error_clear();
    if (!e || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_verify: NULL argument");
    if (id && (!*id || strlen(id) > TXN_ID_MAX_BYTES))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_verify: transactional ids are 1..%d bytes",
                         TXN_ID_MAX_BYTES);
    if (producer_id < 0 || producer_epoch < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_txn_verify: producer %" PRId64 " epoch %d (both >= 0)", producer_id,
                         producer_epoch);
    return txn_verify_local(e, id, producer_id, producer_epoch, topic, partition); /* TV3 */
}

int rt_txn_verify_set(rt_engine *e, bool on)
{
    error_clear();
    if (!e)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_txn_verify_set: NULL engine");
    log_txn_verify_enable(&e->log, on);
    return 0;
}
