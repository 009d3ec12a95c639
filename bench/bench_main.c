/*
 * bench_main.c — `ringtail-bench` (run as `ringtail bench`): the named workloads, each run
 * against the limit and the peers in this one process, on the same disk, then one table (every
 * figure beside its ratio to the limit and to the best peer), optionally JSON and a PNG chart.
 *
 *   W1  append: 1 KiB values in 16-record batches, 1 producer, 1 partition, sync=none
 *   W2  durable append: the same batches, sync=always, 1/4/16/64 producer threads over 4
 *       partitions: MB/s, acknowledgement latency p50/p99/p99.9, fdatasyncs/s, records/fdatasync
 *   R1  reads: read_committed against read_uncommitted over one log, touching every value byte
 *       (a checksum) or headers only
 *   F   fetch call cost (rt_fetch_start + rt_fetch_release) for 100 B against 10 KiB records
 *   W3  transactional append: W2 at 16 producers, each a transactional producer sending through
 *       rt_producer_send and committing after every 64 batches (1 MiB), against the same
 *       producers idempotent, flushing at the same cadence, carrying the same bytes: the
 *       overhead 1 - W3/idem; also its ratio to W2 p16 of this run
 *   W4  small transactions: begin / 10 records over 2 partitions / commit, 1/4/16/64 producers,
 *       sync=always: committed txn/s, commit latency percentiles, p50 over the disk's own
 *       overwrite fdatasync p50 (measured here around the first configuration); peer: RocksDB
 *       TransactionDB at every producer count
 *   M   memory: short-lived producer ids (the heap must plateau), bytes per producer id and per
 *       partition; every row also reports peak anonymous RSS and the engine heap (peak, end)
 *   S   serve (bench_serve.c): `ringtail serve` in its own process, librdkafka producers over
 *       loopback (idempotent, acks=all, 1 and 16 producers) beside the in-process W2 figure of
 *       this run at the same producer count, and a read_committed librdkafka consumer beside
 *       the loopback limit (a plain TCP transfer of the same bytes) measured here; and the
 *       consumer path (bench_consume.c, `--only consume`): 1, 2, 4 thin Fetch clients and
 *       librdkafka consumers, the server's CPU per GB, against send/recv and sendfile limits
 *   O   open (bench_open.c): rt_open after a clean close and after a SIGKILL (a 64 MiB tail,
 *       1.5 s for the housekeeping to store the recovery-point tail, then 8 MiB more),
 *       warm and cold (posix_fadvise(DONTNEED) on every file first), 1 and 4 GB in one
 *       partition (--open-gb 1,4,16 for the longer run; a size the disk cannot hold is skipped
 *       and said so), 1 000 partitions of 3 MiB and 10 000 of 256 KiB (--open-partitions); each
 *       open timed in a fresh probe process with its RssFile after the open (issue 21 item 8),
 *       and for many partitions the RssAnon and descriptors per partition and one fetch from
 *       every partition; a many-partition directory's create row (create, one batch to each,
 *       close, partitions/s; built in sessions when its active partitions would need more
 *       descriptors than RLIMIT_NOFILE, whose soft limit the bench raises to the hard one); then
 *       the disk bytes per empty partition (a topic of 1 000 at the default options, open and
 *       closed) with that topic's create and close times.
 *       --open-probe-exe runs the same probe built against another libringtail (before/after)
 *   C   cleaner (bench_clean.c): rt_topic_compact over one partition of --clean-bytes of keyed
 *       1 KiB records (keys from 1/8 of the count) in 4 MiB segments: MB/s of log read (the
 *       sealed segments before) beside the limit (a sequential read of the same bytes in the
 *       page cache plus a pwritev + fdatasync write of the bytes kept, one fdatasync per
 *       segment kept); bytes before/after, records kept; then a live appender's and a newest-
 *       record reader's p50/p99 latency with no cleaner and while the clean runs (same run)
 *   CL  cluster (bench_cluster.c): three `ringtail serve --voters` nodes on 127.0.0.1; the S
 *       producers against a topic of replication factor 3 (acks=all, min.insync.replicas=2)
 *       beside one of replication factor 1 (acks=all: the group's reference, and acks=1), the
 *       failover time (a partition leader SIGKILLed while a producer writes -> its writes
 *       acknowledged by another node; median of --cluster-trials), and a restarted follower's
 *       catch-up rate beside the loopback limit (plain TCP, the same bytes)
 *
 * MB/s everywhere is value bytes (10^6) per second, so stores with different per-record overhead
 * compare on what the user asked them to keep. The write limit writes chunks of ringtail's
 * encoded batch size, one chunk per batch, with ringtail's fdatasync count. The goals (issue 14
 * item 6, and the older R1 / fetch / serve / heap ones) are computed from the rows of this one
 * run and printed as "value, target, met or MISSED by how much" (also in --json); they are never
 * asserted: the exit status says only whether every workload ran.
 */
#include "bench.h"
#include "bench_check.h"

#include <librdkafka/rdkafka.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* options                                                                                   */
/* ---------------------------------------------------------------------------------------- */

#define PRODUCER_SETS_MAX 8

struct bench_opts {
    const char *dir_parent;
    const char *json_path;
    const char *plot_path;
    bool quick;
    bool keep;
    bool self_check_warn; /* --self-check warn: a FAILED line does not fail the run */
    bool no_limit;        /* profiling: leave the limits out of the process */
    const char *w1_rows;  /* NULL: all of producer,append,batch */
    bool run_w1, run_w2, run_r1, run_fetch, run_w3, run_w4, run_mem, run_hot, run_serve, run_open;
    bool run_txn_mix;
    bool run_consume; /* the consumer path (bench_consume.c), issue 27 item 5 */
    bool run_clean;
    bool run_cluster;
    double cluster_seconds;                 /* CL: each produce row */
    uint32_t cluster_trials;                /* CL: failover trials */
    uint64_t cluster_catchup_bytes;         /* CL: values produced while the follower is stopped */
    uint32_t cluster_session_ms;            /* CL: --broker-session-timeout-ms of the nodes */
    uint64_t clean_bytes;                   /* C: the compacted log's size */
    uint64_t open_sizes[PRODUCER_SETS_MAX]; /* O: one-partition log sizes in GB */
    uint32_t open_size_count;
    uint32_t open_partitions_list[PRODUCER_SETS_MAX]; /* O: the many-partition directories */
    uint32_t open_partition_count;
    const char *open_probe_exe; /* O: the probe program (default: this one) */
    double serve_seconds;
    const char *ringtail_path; /* the CLI that runs `serve`; default: beside this program */
    bool peer_rocksdb, peer_lmdb, peer_sqlite;
    uint64_t w1_bytes;
    uint64_t r1_bytes;
    uint64_t w2_bytes_max;
    double w2_seconds;
    uint64_t membw_bytes;
    uint64_t fetch_log_bytes;
    uint64_t fetch_calls;
    uint32_t producers[PRODUCER_SETS_MAX];
    uint32_t producer_sets;
    uint32_t limit_queue_depth;
    double w3_seconds;
    uint32_t w3_txn_batches; /* producer batches per W3 transaction (per flush in the baseline) */
    uint32_t w3_pairs;       /* W3: pairs of (baseline, transactional) runs, alternating order */
    double w4_seconds;
    uint64_t w4_txn_max; /* per ringtail configuration; 0 = no cap */
    uint32_t w4_producers[PRODUCER_SETS_MAX];
    uint32_t w4_sets;
    uint32_t fsync_probes;
    uint64_t mem_producers;     /* short-lived producer ids */
    uint32_t mem_producers_max; /* the churn's producers_max; 0 = engine default */
    uint32_t mem_live;          /* live producers for bytes per producer id */
    uint32_t mem_partitions;
    uint64_t hot_ops; /* H: measured operations per row */
};

static struct bench_opts opt;
static char scratch[PATH_MAX];
static int failures;

/* ---------------------------------------------------------------------------------------- */
/* result rows                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* KIND_WAY: one way of doing a limit's work (bench_limit.c); the best of a group's ways is
 * copied into its KIND_LIMIT row, the one ratios are taken against (issue 27 item 1). */
/* KIND_REPEAT: a subject's workload run again after its limit's ways, to measure how much the
 * same work moved over that window (the self-check's noise, BCK1). */
enum row_kind { KIND_SUBJECT, KIND_LIMIT, KIND_PEER, KIND_NA, KIND_WAY, KIND_REPEAT };

struct row {
    char workload[8];
    char system[20];
    char config[40];
    char group[24]; /* rows compared with each other: same group */
    enum row_kind kind;
    bool has_latency, has_sync;
    uint32_t producers;
    double mb_s, rec_s;
    double p50_us, p99_us, p999_us;
    double syncs_s, rec_per_sync;
    double ratio_limit, ratio_peer;
    double anon_peak_mb, hwm_mb, heap_mb, heap_peak_mb;
    double txn_s, commit_x_fsync; /* W3, W4 */
    uint32_t batches_per_txn;     /* W3 */
    uint64_t commits;             /* W3, W4: transactions committed (flushes in the baseline) */
    double threads_per_item;      /* M live: threads started per open producer */
    double heap_open_per_item;    /* M live: heap bytes per open producer */
    double growth_2nd_mb;         /* M churn: heap growth over the second half */
    double growth_bound_mb;       /* M churn: the most that growth may be for a plateau */
    double bytes_per_item;        /* M: bytes per producer id / per partition */
    double seconds;
    uint64_t records, bytes;
    double noise; /* limit rows: the winning way's run-to-run spread in this run (BCK1) */
    char way[40]; /* limit and way rows: "pwritev, pre-written", ... */
    char note[256];
};

#define ROWS_MAX 256
static struct row rows[ROWS_MAX];
static uint32_t row_count;

static struct row *row_new(const char *workload, const char *system, const char *config,
                           const char *group, enum row_kind kind)
{
    if (row_count == ROWS_MAX) {
        fprintf(stderr, "ringtail-bench: too many result rows\n");
        exit(1);
    }
    struct row *r = &rows[row_count++];
    memset(r, 0, sizeof(*r));
    snprintf(r->workload, sizeof(r->workload), "%s", workload);
    snprintf(r->system, sizeof(r->system), "%s", system);
    snprintf(r->config, sizeof(r->config), "%s", config);
    snprintf(r->group, sizeof(r->group), "%s", group);
    r->kind = kind;
    r->ratio_limit = NAN;
    r->ratio_peer = NAN;
    r->noise = NAN;
    r->anon_peak_mb = NAN;
    r->hwm_mb = NAN;
    r->heap_mb = NAN;
    r->heap_peak_mb = NAN;
    r->txn_s = NAN;
    r->commit_x_fsync = NAN;
    r->growth_2nd_mb = NAN;
    r->growth_bound_mb = NAN;
    r->bytes_per_item = NAN;
    r->threads_per_item = NAN;
    r->heap_open_per_item = NAN;
    return r;
}

static void row_fail(struct row *r, const char *what, int rc, const char *detail)
{
    snprintf(r->note, sizeof(r->note), "FAILED %s: %s %s", what, rt_strerror(rc),
             detail ? detail : "");
    r->mb_s = NAN;
    failures++;
    fprintf(stderr, "ringtail-bench: %s %s %s: %s\n", r->workload, r->system, r->config, r->note);
}

static void row_memory(struct row *r, uint64_t heap_before)
{
    const char *src = NULL;
    uint64_t heap = mem_heap_bytes(&src);
    r->heap_mb = heap > heap_before ? (double)(heap - heap_before) / 1e6 : 0.0;
    uint64_t peak = mem_peak_heap_bytes();
    r->heap_peak_mb = peak > heap_before ? (double)(peak - heap_before) / 1e6 : 0.0;
    r->anon_peak_mb = (double)mem_peak_anon_bytes() / 1e6;
    r->hwm_mb = (double)mem_hwm_bytes() / 1e6;
}

/* ---------------------------------------------------------------------------------------- */
/* producers                                                                                 */
/* ---------------------------------------------------------------------------------------- */

struct prod_run {
    struct sink *sink;
    uint32_t threads, partitions;
    uint64_t deadline_ns; /* 0 = none; written before `go` */
    uint64_t bytes_max;   /* value bytes; 0 = none */
    _Atomic uint64_t bytes_claimed;
    _Atomic int error;
    _Atomic bool go; /* every producer starts together */
};

struct prod_thread {
    struct prod_run *run;
    uint32_t id;
    pthread_t thread;
    struct hist *lat;
    uint64_t batches;
    uint64_t end_ns;
};

static void *prod_main(void *arg)
{
    struct prod_thread *t = arg;
    struct prod_run *run = t->run;
    uint32_t partition = t->id % run->partitions;
    struct rt_record recs[BENCH_BATCH_RECORDS];
    while (!atomic_load_explicit(&run->go, memory_order_acquire))
        sched_yield();
    uint64_t now = bench_now_ns();
    for (;;) {
        if (atomic_load_explicit(&run->error, memory_order_relaxed))
            break;
        if (run->deadline_ns && now >= run->deadline_ns)
            break;
        if (run->bytes_max &&
            atomic_fetch_add(&run->bytes_claimed, BENCH_BATCH_VALUE_BYTES) >= run->bytes_max)
            break;
        bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES,
                           ((uint64_t)t->id << 32) | t->batches);
        uint64_t t0 = bench_now_ns();
        int rc = run->sink->ops->append(run->sink, partition, recs, BENCH_BATCH_RECORDS);
        now = bench_now_ns();
        if (rc) {
            int expected = 0;
            atomic_compare_exchange_strong(&run->error, &expected, rc);
            break;
        }
        hist_add(t->lat, now - t0);
        t->batches++;
        progress_add(BENCH_BATCH_VALUE_BYTES);
    }
    /* An asynchronous sink: the run ends when everything sent is acknowledged. */
    if (run->sink->ops->flush) {
        int rc = run->sink->ops->flush(run->sink);
        if (rc) {
            int expected = 0;
            atomic_compare_exchange_strong(&run->error, &expected, rc);
        }
        now = bench_now_ns();
    }
    t->end_ns = now;
    return NULL;
}

/* Runs `threads` producers against an open sink; fills the row's throughput and latency. The
 * clock runs from the common start to the last producer's last acknowledgement. */
static int produce(struct sink *s, uint32_t threads, uint32_t partitions, double seconds,
                   uint64_t bytes_max, struct row *r, struct hist *lat_all)
{
    struct prod_run run = {
        .sink = s, .threads = threads, .partitions = partitions, .bytes_max = bytes_max};
    struct prod_thread *ts = calloc(threads, sizeof(*ts));
    if (!ts)
        return -ENOMEM;
    uint32_t started = 0;
    int rc = 0;
    for (; started < threads; started++) {
        ts[started].run = &run;
        ts[started].id = started;
        ts[started].lat = calloc(1, sizeof(struct hist));
        if (!ts[started].lat ||
            pthread_create(&ts[started].thread, NULL, prod_main, &ts[started]) != 0) {
            free(ts[started].lat);
            rc = -EAGAIN;
            atomic_store(&run.error, rc); /* those started stop at once */
            break;
        }
    }
    uint64_t t0 = bench_now_ns();
    if (seconds > 0)
        run.deadline_ns = t0 + (uint64_t)(seconds * 1e9);
    atomic_store_explicit(&run.go, true, memory_order_release);
    uint64_t end = t0, batches = 0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(ts[i].thread, NULL);
        hist_merge(lat_all, ts[i].lat);
        batches += ts[i].batches;
        if (ts[i].end_ns > end)
            end = ts[i].end_ns;
        free(ts[i].lat);
    }
    free(ts);
    if (!rc)
        rc = atomic_load(&run.error);
    r->seconds = (double)(end - t0) / 1e9;
    r->records = batches * BENCH_BATCH_RECORDS;
    r->bytes = batches * BENCH_BATCH_VALUE_BYTES;
    r->mb_s = r->seconds > 0 ? (double)r->bytes / 1e6 / r->seconds : 0;
    r->rec_s = r->seconds > 0 ? (double)r->records / r->seconds : 0;
    r->has_latency = true;
    r->p50_us = hist_quantile_ns(lat_all, 0.50) / 1e3;
    r->p99_us = hist_quantile_ns(lat_all, 0.99) / 1e3;
    r->p999_us = hist_quantile_ns(lat_all, 0.999) / 1e3;
    return rc;
}

static const struct sink_ops *peers_enabled[3];
static uint32_t peer_count;

/* Writes back every dirty page of the scratch file system, so a workload does not pay for the
 * previous one's writeback (and the page cache starts each write run in the same state). */
static void settle(void)
{
    int fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
}

static void system_dir(char *out, size_t n, const char *workload, const char *system,
                       const char *config)
{
    snprintf(out, n, "%s/%s-%s%s%s", scratch, workload, system, config[0] ? "-" : "", config);
}

/* Opens a fresh store, runs producers, closes it (unless keep_open), fills the row. */
static int write_workload(const struct sink_ops *ops, const char *workload, const char *config,
                          const char *group, enum row_kind kind, bool durable, uint32_t partitions,
                          uint32_t threads, double seconds, uint64_t bytes_max, bool keep_dir,
                          struct rt_stats *stats_delta, struct row **row_out)
{
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), workload, ops->name, config);
    bench_rmtree(dir);
    int rc = bench_mkdir(dir);
    struct row *r = row_new(workload, ops->name, config, group, kind);
    r->producers = threads;
    if (row_out)
        *row_out = r;
    if (rc) {
        row_fail(r, "mkdir", rc, dir);
        return rc;
    }
    settle();
    char label[96];
    snprintf(label, sizeof(label), "%s %s %s", workload, ops->name, config);
    progress_phase(label);
    mem_reset_peak();
    uint64_t heap0 = mem_heap_bytes(NULL);
    struct sink s = {.ops = ops};
    rc = ops->open(&s, dir, durable, partitions);
    if (rc) {
        row_fail(r, "open", rc, s.errmsg);
        return rc;
    }
    struct rt_stats before = {0}, after = {0};
    if (stats_delta)
        rt_stats_get(sink_ringtail_engine(&s), &before);
    struct hist *lat = calloc(1, sizeof(*lat));
    rc = lat ? produce(&s, threads, partitions, seconds, bytes_max, r, lat) : -ENOMEM;
    free(lat);
    row_memory(r, heap0);
    if (stats_delta) {
        rt_stats_get(sink_ringtail_engine(&s), &after);
        stats_delta->rounds = after.rounds - before.rounds;
        stats_delta->batches_appended = after.batches_appended - before.batches_appended;
        stats_delta->bytes_appended = after.bytes_appended - before.bytes_appended;
        stats_delta->fdatasyncs = after.fdatasyncs - before.fdatasyncs;
        stats_delta->shard_count = after.shard_count;
        stats_delta->prewrite_bytes = after.prewrite_bytes - before.prewrite_bytes;
        stats_delta->prewrite_fdatasyncs = after.prewrite_fdatasyncs - before.prewrite_fdatasyncs;
        stats_delta->prewrite_missed_bytes =
            after.prewrite_missed_bytes - before.prewrite_missed_bytes;
        stats_delta->rounds_inline = after.rounds_inline - before.rounds_inline;
        stats_delta->io_backend = after.io_backend;
        if (durable) {
            r->has_sync = true;
            r->syncs_s = (double)stats_delta->fdatasyncs / r->seconds;
            r->rec_per_sync = stats_delta->fdatasyncs
                                  ? (double)r->records / (double)stats_delta->fdatasyncs
                                  : NAN;
        }
    }
    if (rc)
        row_fail(r, "append", rc, s.errmsg[0] ? s.errmsg : rt_error_detail());
    ops->close(&s);
    if (!keep_dir && !opt.keep)
        bench_rmtree(dir);
    return rc;
}

/* The ways a write limit can be reached (bench_limit.c); linked ones only with fdatasyncs. */
enum limit_way_kind { WAY_URING_LINKED, WAY_URING, WAY_PWRITEV, WAY_PARALLEL };
static const char *const way_system[4][2] = {/* [way][prewritten] */
                                             {"lim-uring-link-fa", "lim-uring-link"},
                                             {"lim-uring-fa", "lim-uring"},
                                             {"lim-pwritev-fa", "lim-pwritev"},
                                             {"lim-pwv-par-fa", "lim-pwv-par"}};
static const char *const way_label[4] = {"io_uring linked write+fdatasync", "io_uring unlinked",
                                         "pwritev+fdatasync",
                                         "pwritev+fdatasync, a thread per file"};
static const char *const way_short[4] = {"io_uring linked", "io_uring", "pwritev",
                                         "pwritev, a thread per file"};

/* One way of doing a limit's work: same chunks, same fdatasync count, into pre-written or
 * fallocate'd files; fills a KIND_WAY row (NULL under --no-limit). */
static struct row *limit_row(const char *workload, const char *config, const char *group,
                             uint32_t files, uint64_t chunks, size_t chunk_bytes, uint64_t syncs,
                             bool prewritten, enum limit_way_kind way)
{
    if (opt.no_limit)
        return NULL;
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), workload, "limit", config);
    bench_rmtree(dir);
    const char *name = way_system[way][prewritten];
    struct row *r = row_new(workload, name, config, group, KIND_WAY);
    r->producers = files;
    snprintf(r->way, sizeof(r->way), "%s%s", way_short[way],
             prewritten ? ", pre-written" : ", fallocate'd");
    int rc = bench_mkdir(dir);
    if (rc) {
        row_fail(r, "mkdir", rc, dir);
        return r;
    }
    settle();
    char label[96];
    snprintf(label, sizeof(label), "%s %s %s", workload, name, config);
    progress_phase(label);
    mem_reset_peak();
    struct hist *lat = calloc(1, sizeof(*lat));
    struct limit_result lr = {.round_latency = lat};
    if (!lat)
        rc = -ENOMEM;
    else if (way == WAY_PWRITEV)
        rc = limit_write_pwritev(dir, files, chunks, chunk_bytes, syncs, opt.limit_queue_depth,
                                 prewritten, &lr);
    else if (way == WAY_PARALLEL)
        rc = limit_write_parallel(dir, files, chunks, chunk_bytes, syncs, opt.limit_queue_depth,
                                  prewritten, &lr);
    else
        rc = limit_write(dir, files, chunks, chunk_bytes, syncs, opt.limit_queue_depth, prewritten,
                         way == WAY_URING_LINKED, &lr);
    if (rc) {
        row_fail(r, way >= WAY_PWRITEV ? "pwritev writes" : "io_uring writes", rc, dir);
    } else {
        r->seconds = lr.seconds;
        r->records = lr.chunks * BENCH_BATCH_RECORDS;
        r->bytes = lr.chunks * BENCH_BATCH_VALUE_BYTES;
        r->mb_s = (double)r->bytes / 1e6 / lr.seconds;
        r->rec_s = (double)r->records / lr.seconds;
        if (syncs) {
            r->has_sync = true;
            r->syncs_s = (double)lr.fdatasyncs / lr.seconds;
            r->rec_per_sync = (double)r->records / (double)lr.fdatasyncs;
            r->has_latency = true; /* one fdatasync round: the best an acknowledgement can be */
            r->p50_us = hist_quantile_ns(lat, 0.50) / 1e3;
            r->p99_us = hist_quantile_ns(lat, 0.99) / 1e3;
            r->p999_us = hist_quantile_ns(lat, 0.999) / 1e3;
        }
        snprintf(r->note, sizeof(r->note),
                 "%" PRIu64 " x %zu B by %s to %u %s file(s), %" PRIu64 " fdatasyncs%s", lr.chunks,
                 chunk_bytes, syncs ? way_label[way] : way_short[way], files,
                 prewritten ? "pre-written" : "fallocate'd", lr.fdatasyncs,
                 syncs ? "; latency = one round" : "");
    }
    row_memory(r, mem_heap_bytes(NULL));
    free(lat);
    if (!opt.keep)
        bench_rmtree(dir);
    return r;
}

/* The write limit of a group (issue 27 item 1): the same work done every way this machine can
 * do it — io_uring linked write+fdatasync (with fdatasyncs only), io_uring unlinked,
 * pwritev+fdatasync on one thread, and (several files) pwritev+fdatasync on a thread per file
 * running its rounds independently, as shards do — each into pre-written and into fallocate'd
 * files, one KIND_WAY row each,
 * all in this run. The fastest way is run once more (its run-to-run spread is the noise the
 * self-check allows, BCK1) and the better of its two runs becomes the group's "limit" row, the
 * one every ratio is taken against; its note names the way that won. */
static void limit_group(const char *workload, const char *config, const char *group, uint32_t files,
                        uint64_t chunks, size_t chunk_bytes, uint64_t syncs)
{
    if (opt.no_limit)
        return;
    struct row *best = NULL;
    enum limit_way_kind best_way = WAY_URING;
    bool best_pre = true;
    uint32_t ways = 0;
    /* (a thread per file only with several files: with one it is pwritev's way) */
    int last = files > 1 ? WAY_PARALLEL : WAY_PWRITEV;
    for (int w = syncs ? WAY_URING_LINKED : WAY_URING; w <= last; w++)
        for (int pre = 1; pre >= 0; pre--) {
            struct row *r = limit_row(workload, config, group, files, chunks, chunk_bytes, syncs,
                                      pre, (enum limit_way_kind)w);
            ways++;
            if (r && !isnan(r->mb_s) && r->mb_s > 0 && (!best || r->mb_s > best->mb_s)) {
                best = r;
                best_way = (enum limit_way_kind)w;
                best_pre = pre;
            }
        }
    if (!best) {
        struct row *l = row_new(workload, "limit", config, group, KIND_LIMIT);
        l->producers = files;
        row_fail(l, "every way", -EIO, "failed (see the lim-* rows)");
        return;
    }
    /* The winner again: the better run is the limit, their spread the measured noise. */
    struct row *again =
        limit_row(workload, config, group, files, chunks, chunk_bytes, syncs, best_pre, best_way);
    struct row *l = row_new(workload, "limit", config, group, KIND_LIMIT);
    double first = best->mb_s, second = again ? again->mb_s : NAN;
    if (again) {
        snprintf(again->system, sizeof(again->system), "%.14s-rep", best->system);
        snprintf(again->note, sizeof(again->note), "%s run again (the limit's noise)", best->way);
    }
    const struct row *pick = again && !isnan(second) && second > first ? again : best;
    char note[256];
    snprintf(note, sizeof(note), "best of %u ways: %s (%s %.1f MB/s, again %.1f; noise %.1f%%)",
             ways, best->way, best->system, first, second,
             isnan(second) ? NAN : 100.0 * fabs(first - second) / fmax(first, second));
    memcpy(l, pick, sizeof(*l));
    snprintf(l->system, sizeof(l->system), "limit");
    l->kind = KIND_LIMIT;
    snprintf(l->way, sizeof(l->way), "%s", best->way);
    l->noise = isnan(second) ? NAN : fabs(first - second) / fmax(first, second);
    snprintf(l->note, sizeof(l->note), "%s", note);
}

/* ---------------------------------------------------------------------------------------- */
/* workloads                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static size_t encoded_batch_bytes = 0; /* ringtail's batch size, measured in W1 */

static bool list_has(const char *list, const char *word);

/* One W1 ringtail row; the first that runs also runs the W1 limit for its batches. */
static void w1_row(const struct sink_ops *ops, const char *config, const char *which,
                   const char *extra)
{
    if (opt.w1_rows && !list_has(opt.w1_rows, which))
        return;
    struct rt_stats d = {0};
    struct row *r = NULL;
    /* The producer's log is kept: R1 reads (and grows) it. */
    if (write_workload(ops, "W1", config, "W1", KIND_SUBJECT, false, 1, 1, 0, opt.w1_bytes,
                       config[0] == 0, &d, &r) != 0 ||
        !d.batches_appended)
        return;
    size_t batch = (size_t)(d.bytes_appended / d.batches_appended);
    snprintf(r->note, sizeof(r->note), "%s, %u shards, %" PRIu64 " rounds, batch %zu B on disk%s",
             d.io_backend, d.shard_count, d.rounds, batch, extra);
    if (encoded_batch_bytes == 0) {
        encoded_batch_bytes = batch;
        /* Issue 27 item 1: the best of io_uring and pwritev, pre-written and fallocate'd. */
        limit_group("W1", "", "W1", 1, d.batches_appended, encoded_batch_bytes, 0);
    }
}

static void run_w1(void)
{
    /* Through the asynchronous producer (rt_producer_send), as a Kafka client writes. */
    w1_row(&sink_ringtail, "", "producer", "");
    /* The same appends by rt_append from the producer's own thread: no client-side batching
     * thread, and an idle shard runs the round on the caller (SH5 in shard.c). */
    w1_row(&sink_ringtail_append, "rt_append", "append", "");
    /* Issue 27 item 4: ready batches by rt_append_batch (the engine's share of the per-record
     * path alone: no encoding, one CRC check, the page-cache copy). */
    w1_row(&sink_ringtail_batch, "rt_append_batch", "batch", ", 64 ready batches");
    for (uint32_t i = 0; i < peer_count; i++)
        write_workload(peers_enabled[i], "W1", "", "W1", KIND_PEER, false, 1, 1, 0, opt.w1_bytes,
                       true, NULL, NULL);
}

/* Issue 27 item 1: ringtail's W2 run again after its limit's ways (row "ringtail-rep"). The two
 * ringtail runs bracket the ways in time, so their spread is how much the same work moved over
 * that window on this disk (other tenants, writeback); the limit's noise, the self-check's
 * tolerance (BCK1), is the larger of it and the winning way's own spread. */
static const struct row *find_row(const char *workload, const char *system, const char *config);

static void w2_repeat(const char *config, const char *group, uint32_t producers, double first_mb_s)
{
    struct row *limit = (struct row *)find_row("W2", "limit", config);
    if (opt.no_limit || !limit || isnan(limit->mb_s))
        return;
    struct row *again = NULL;
    if (write_workload(&sink_ringtail, "W2", config, group, KIND_REPEAT, true, BENCH_PARTITIONS_W2,
                       producers, opt.w2_seconds, opt.w2_bytes_max, false, NULL, &again) != 0 ||
        !again)
        return;
    snprintf(again->system, sizeof(again->system), "ringtail-rep");
    snprintf(again->note, sizeof(again->note), "W2 %s run again after the limit's ways", config);
    double second = again->mb_s;
    if (isnan(second) || second <= 0 || isnan(first_mb_s) || first_mb_s <= 0)
        return;
    double spread = fabs(first_mb_s - second) / fmax(first_mb_s, second);
    if (isnan(limit->noise) || spread > limit->noise)
        limit->noise = spread;
    size_t len = strlen(limit->note);
    snprintf(limit->note + len, sizeof(limit->note) - len,
             "; ringtail %.1f then %.1f MB/s (spread %.1f%%)", first_mb_s, second, 100.0 * spread);
}

static void run_w2(void)
{
    for (uint32_t k = 0; k < opt.producer_sets; k++) {
        uint32_t n = opt.producers[k];
        char config[40], group[24];
        snprintf(config, sizeof(config), "p%u", n);
        snprintf(group, sizeof(group), "W2/p%u", n);
        struct rt_stats d = {0};
        struct row *r = NULL;
        int rc =
            write_workload(&sink_ringtail, "W2", config, group, KIND_SUBJECT, true,
                           BENCH_PARTITIONS_W2, n, opt.w2_seconds, opt.w2_bytes_max, false, &d, &r);
        if (rc == 0 && d.batches_appended) {
            size_t chunk = (size_t)(d.bytes_appended / d.batches_appended);
            /* Issue 27 item 6: what else touched the disk meanwhile (the pre-writer's zeroes
             * and their fdatasyncs) and how many rounds ran on the appending thread. */
            snprintf(r->note, sizeof(r->note),
                     "%s, %u shards, %.1f batches/round, %.0f%% rounds inline; pre-writer %.1f MB, "
                     "%" PRIu64 " fdatasyncs (%.2f per round), %.1f MB not pre-written",
                     d.io_backend, d.shard_count,
                     d.rounds ? (double)d.batches_appended / (double)d.rounds : 0.0,
                     d.rounds ? 100.0 * (double)d.rounds_inline / (double)d.rounds : 0.0,
                     (double)d.prewrite_bytes / 1e6, d.prewrite_fdatasyncs,
                     d.rounds ? (double)d.prewrite_fdatasyncs / (double)d.rounds : 0.0,
                     (double)d.prewrite_missed_bytes / 1e6);
            uint32_t files = n < BENCH_PARTITIONS_W2 ? n : BENCH_PARTITIONS_W2;
            limit_group("W2", config, group, files, d.batches_appended, chunk,
                        d.fdatasyncs ? d.fdatasyncs : 1);
            w2_repeat(config, group, n, r->mb_s);
        }
        for (uint32_t i = 0; i < peer_count; i++)
            write_workload(peers_enabled[i], "W2", config, group, KIND_PEER, true,
                           BENCH_PARTITIONS_W2, n, opt.w2_seconds, opt.w2_bytes_max, false, NULL,
                           NULL);
    }
}

/* Appends (untimed, sync=none) to ringtail's W1 log until it holds r1_bytes of values. */
static int r1_build(rt_engine *e)
{
    int64_t end = 0;
    int rc = rt_list_offsets(e, BENCH_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    if (rc)
        return rc;
    uint64_t have = (uint64_t)end * BENCH_VALUE_BYTES;
    progress_phase("R1 ringtail build log");
    struct rt_record recs[BENCH_BATCH_RECORDS];
    for (uint64_t b = 0; have < opt.r1_bytes && rc == 0; b++) {
        bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES, b);
        rc = rt_append(e, BENCH_TOPIC, 0, recs, BENCH_BATCH_RECORDS, NULL);
        have += BENCH_BATCH_VALUE_BYTES;
        progress_add(BENCH_BATCH_VALUE_BYTES);
    }
    return rc;
}

static int read_passes(void)
{
    return opt.quick ? 2 : 3;
}

static void read_row_fill(struct row *r, const struct read_result *rr)
{
    r->seconds = rr->seconds;
    r->records = rr->records;
    r->bytes = rr->value_bytes;
    r->mb_s = rr->seconds > 0 ? (double)rr->value_bytes / 1e6 / rr->seconds : 0;
    r->rec_s = rr->seconds > 0 ? (double)rr->records / rr->seconds : 0;
}

static void run_r1_ringtail(void)
{
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), "W1", "ringtail", "");
    bench_mkdir(dir);
    struct sink s = {.ops = &sink_ringtail};
    mem_reset_peak();
    uint64_t heap0 = mem_heap_bytes(NULL);
    uint64_t t_open = bench_now_ns();
    int rc = sink_ringtail.open(&s, dir, false, 1);
    double open_s = (double)(bench_now_ns() - t_open) / 1e9;
    struct row *rows_r[2][2] = {{NULL, NULL}, {NULL, NULL}}; /* [touch][isolation] */
    static const char *touch_name[2] = {"hdr", "sum"};
    static const char *iso_name[2] = {"read_uncommitted", "read_committed"};
    for (int t = 1; t >= 0; t--) {
        for (int i = 0; i < 2; i++) {
            char config[40], group[24];
            snprintf(config, sizeof(config), "%s %s", iso_name[i], touch_name[t]);
            snprintf(group, sizeof(group), "R1/%s", touch_name[t]);
            rows_r[t][i] = row_new("R1", "ringtail", config, group, KIND_SUBJECT);
            rows_r[t][i]->mb_s = NAN;
        }
    }
    if (rc) {
        row_fail(rows_r[1][0], "open", rc, s.errmsg);
        return;
    }
    rt_engine *e = sink_ringtail_engine(&s);
    rc = r1_build(e);
    if (rc) {
        row_fail(rows_r[1][0], "build", rc, rt_error_detail());
        sink_ringtail.close(&s);
        return;
    }
    settle();
    struct read_result rr;
    progress_phase("R1 ringtail warm-up pass");
    rc = ringtail_read_all(e, BENCH_TOPIC, 0, RT_READ_UNCOMMITTED, false, &rr);
    /* best of two passes each, alternating the isolation levels so neither gets a warmer cache */
    for (int rep = 0; rep < read_passes() && rc == 0; rep++) {
        for (int t = 1; t >= 0 && rc == 0; t--) {
            for (int i = 0; i < 2 && rc == 0; i++) {
                struct row *r = rows_r[t][i];
                char label[96];
                snprintf(label, sizeof(label), "R1 ringtail %s (pass %d)", r->config, rep + 1);
                progress_phase(label);
                rc = ringtail_read_all(e, BENCH_TOPIC, 0,
                                       i ? RT_READ_COMMITTED : RT_READ_UNCOMMITTED, t == 1, &rr);
                if (rc == 0 &&
                    (isnan(r->mb_s) || (double)rr.value_bytes / 1e6 / rr.seconds > r->mb_s))
                    read_row_fill(r, &rr);
            }
        }
    }
    if (rc)
        row_fail(rows_r[1][0], "read", rc, rt_error_detail());
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 2; i++)
            row_memory(rows_r[t][i], heap0);
        if (!isnan(rows_r[t][0]->mb_s) && !isnan(rows_r[t][1]->mb_s))
            snprintf(rows_r[t][1]->note, sizeof(rows_r[t][1]->note),
                     "read_committed/read_uncommitted = %.3f",
                     rows_r[t][1]->mb_s / rows_r[t][0]->mb_s);
    }
    snprintf(rows_r[1][0]->note, sizeof(rows_r[1][0]->note),
             "log %.2f GB, reopen %.3f s, fetch max_bytes 1 MiB, best of %d passes",
             (double)rows_r[1][0]->bytes / 1e9, open_s, read_passes());
    sink_ringtail.close(&s);
}

static void run_r1_peer(const struct sink_ops *ops)
{
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), "W1", ops->name, "");
    if (access(dir, F_OK) != 0) /* W1 did not run: load the same data, untimed */
        write_workload(ops, "W1", "", "W1-load", KIND_NA, false, 1, 1, 0, opt.w1_bytes, true, NULL,
                       NULL);
    struct sink s = {.ops = ops};
    mem_reset_peak();
    uint64_t heap0 = mem_heap_bytes(NULL);
    struct row *rs = row_new("R1", ops->name, "sum", "R1/sum", KIND_PEER);
    struct row *rh = row_new("R1", ops->name, "hdr", "R1/hdr", KIND_PEER);
    int rc = ops->open(&s, dir, false, 1);
    if (rc) {
        row_fail(rs, "open", rc, s.errmsg);
        return;
    }
    struct read_result rr;
    char label[96];
    snprintf(label, sizeof(label), "R1 %s warm-up pass", ops->name);
    progress_phase(label);
    rc = ops->read_all(&s, 0, false, &rr);
    for (int rep = 0; rep < read_passes() && rc == 0; rep++) {
        for (int t = 1; t >= 0 && rc == 0; t--) {
            struct row *r = t ? rs : rh;
            snprintf(label, sizeof(label), "R1 %s %s (pass %d)", ops->name, r->config, rep + 1);
            progress_phase(label);
            rc = ops->read_all(&s, 0, t == 1, &rr);
            if (rc == 0 && (double)rr.value_bytes / 1e6 / rr.seconds > r->mb_s)
                read_row_fill(r, &rr);
        }
    }
    if (rc)
        row_fail(rs, "read", rc, s.errmsg);
    row_memory(rs, heap0);
    row_memory(rh, heap0);
    snprintf(rs->note, sizeof(rs->note), "log %.2f GB (the W1 data)", (double)rs->bytes / 1e9);
    ops->close(&s);
}

static void run_r1(void)
{
    run_r1_ringtail();
    for (uint32_t i = 0; i < peer_count; i++)
        run_r1_peer(peers_enabled[i]);
    if (opt.no_limit)
        return;
    progress_phase("R1 limit: memory read bandwidth");
    struct row *r = row_new("R1", "limit", "memory bw", "R1", KIND_LIMIT);
    double bps = limit_memory_read_bps((size_t)opt.membw_bytes, 3);
    r->mb_s = bps / 1e6;
    r->rec_s = bps / BENCH_VALUE_BYTES;
    snprintf(r->note, sizeof(r->note), "checksum loop over a %" PRIu64 " MB buffer, best of 3",
             opt.membw_bytes >> 20);
}

/* rt_fetch_start + rt_fetch_release at random offsets of a log of records of value_bytes. */
static void run_fetch_one(rt_engine *e, const char *topic, uint32_t value_bytes,
                          struct row *r_batch, struct row *r_mib)
{
    uint32_t per_batch = BENCH_BATCH_RECORDS;
    struct rt_record recs[BENCH_BATCH_RECORDS];
    char label[96];
    snprintf(label, sizeof(label), "F build %s", topic);
    progress_phase(label);
    int rc = 0;
    uint64_t bytes = 0;
    for (uint64_t b = 0; bytes < opt.fetch_log_bytes && rc == 0; b++) {
        bench_records_make(recs, per_batch, value_bytes, b);
        rc = rt_append(e, topic, 0, recs, per_batch, NULL);
        bytes += (uint64_t)value_bytes * per_batch;
        progress_add((uint64_t)value_bytes * per_batch);
    }
    int64_t end = 0;
    if (rc == 0)
        rc = rt_list_offsets(e, topic, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    if (rc) {
        row_fail(r_batch, "build", rc, rt_error_detail());
        return;
    }
    struct row *targets[2] = {r_batch, r_mib};
    size_t max_bytes[2] = {1, 1u << 20};
    for (int k = 0; k < 2 && rc == 0; k++) {
        snprintf(label, sizeof(label), "F %s max_bytes %zu", topic, max_bytes[k]);
        progress_phase(label);
        uint64_t x = 88172645463325252ull;
        uint64_t returned = 0;
        /* warm: touch the whole index and map once */
        for (uint64_t i = 0; i < opt.fetch_calls / 4 + 1 && rc == 0; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rt_fetch *f = NULL;
            rc = rt_fetch_start(e, topic, 0, (int64_t)(x % (uint64_t)end), max_bytes[k],
                                RT_READ_UNCOMMITTED, &f);
            if (rc == 0)
                rt_fetch_release(f);
        }
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < opt.fetch_calls && rc == 0; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rt_fetch *f = NULL;
            rc = rt_fetch_start(e, topic, 0, (int64_t)(x % (uint64_t)end), max_bytes[k],
                                RT_READ_UNCOMMITTED, &f);
            if (rc == 0) {
                returned += rt_fetch_get(f)->size_bytes;
                rt_fetch_release(f);
            }
        }
        double s = (double)(bench_now_ns() - t0) / 1e9;
        struct row *r = targets[k];
        if (rc) {
            row_fail(r, "fetch", rc, rt_error_detail());
            break;
        }
        r->seconds = s;
        r->records = opt.fetch_calls;
        r->rec_s = (double)opt.fetch_calls / s;        /* calls per second */
        r->p50_us = s / (double)opt.fetch_calls * 1e9; /* ns per call (mean) */
        r->bytes = returned / opt.fetch_calls;         /* bytes per call */
        r->mb_s = (double)returned / 1e6 / s;
        snprintf(r->note, sizeof(r->note), "%.0f ns per call, %" PRIu64 " B returned per call",
                 r->p50_us, r->bytes);
    }
}

static void run_fetch(void)
{
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), "F", "ringtail", "");
    bench_rmtree(dir);
    bench_mkdir(dir);
    struct row *r[2][2];
    static const uint32_t sizes[2] = {100, 10240};
    for (int k = 0; k < 2; k++) {
        char config[40];
        snprintf(config, sizeof(config), "%u B, 1 batch", sizes[k]);
        r[k][0] = row_new("F", "ringtail", config, "F/batch", KIND_SUBJECT);
        snprintf(config, sizeof(config), "%u B, 1 MiB", sizes[k]);
        r[k][1] = row_new("F", "ringtail", config, "F/mib", KIND_SUBJECT);
    }
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc == 0)
        rc = rt_topic_create(e, "v100", 1);
    if (rc == 0)
        rc = rt_topic_create(e, "v10240", 1);
    if (rc) {
        row_fail(r[0][0], "open", rc, rt_error_detail());
        if (e)
            rt_close(e);
        return;
    }
    run_fetch_one(e, "v100", sizes[0], r[0][0], r[0][1]);
    run_fetch_one(e, "v10240", sizes[1], r[1][0], r[1][1]);
    for (int m = 0; m < 2; m++) {
        if (r[0][m]->p50_us > 0) {
            size_t used = strlen(r[1][m]->note);
            snprintf(r[1][m]->note + used, sizeof(r[1][m]->note) - used, "; %.2fx the 100 B cost",
                     r[1][m]->p50_us / r[0][m]->p50_us);
        }
    }
    rt_close(e);
    if (!opt.keep)
        bench_rmtree(dir);
}

static const struct row *find_row(const char *workload, const char *system, const char *config);
static const char *rd_version(void);

/* Prepares a fresh scratch directory for a workload; returns 0 or fails the row. */
static int fresh_dir(char *dir, size_t n, const char *workload, const char *system,
                     const char *config, struct row *r)
{
    system_dir(dir, n, workload, system, config);
    bench_rmtree(dir);
    int rc = bench_mkdir(dir);
    if (rc)
        row_fail(r, "mkdir", rc, dir);
    settle();
    char label[96];
    snprintf(label, sizeof(label), "%s %s %s", workload, system, config);
    progress_phase(label);
    mem_reset_peak();
    return rc;
}

static void txn_row_fill(struct row *r, const struct txn_run_result *t, struct hist *lat)
{
    r->seconds = t->seconds;
    r->records = t->records;
    r->bytes = t->value_bytes;
    r->mb_s = t->seconds > 0 ? (double)t->value_bytes / 1e6 / t->seconds : 0;
    r->rec_s = t->seconds > 0 ? (double)t->records / t->seconds : 0;
    r->txn_s = t->seconds > 0 ? (double)t->commits / t->seconds : 0;
    r->commits = t->commits;
    r->has_latency = true;
    r->p50_us = hist_quantile_ns(lat, 0.50) / 1e3;
    r->p99_us = hist_quantile_ns(lat, 0.99) / 1e3;
    r->p999_us = hist_quantile_ns(lat, 0.999) / 1e3;
    if (t->fdatasyncs) {
        r->has_sync = true;
        r->syncs_s = (double)t->fdatasyncs / t->seconds;
        r->rec_per_sync = (double)t->records / (double)t->fdatasyncs;
    }
}

/* W3: W2's shape at 16 producers, each producer ending a transaction after every
 * w3_txn_batches batches, against the same producers idempotent (flush instead of commit). They
 * run in w3_pairs pairs: in each, the first runs for w3_seconds and the second then ends exactly
 * as many transactions per producer, so both carry the same producers, bytes and cadence
 * (checked when the goal is read); the pairs alternate which goes first (idem first in even
 * pairs), because the second run of a pair ends only when its slowest producer has ended its
 * count, so it tends to be the slower one; with an even number of pairs that cancels. Each row sums its runs, and
 * 1 - W3/idem is what the transactions cost. Also beside W2 p16 of this run (run here, ringtail
 * only, when W2 did not run with 16 producers). */
#define W3_PAIRS_MAX 16
static double w3_pair_mb[W3_PAIRS_MAX][2]; /* MB/s of each pair's [idem, txn] run (0: none) */

struct w3_acc {
    struct row *row;
    struct hist *lat;
    struct txn_run_result sum;
    uint64_t heap_end_over_start;
    int rc;
};

static void w3_add(struct w3_acc *a, const struct txn_run_result *t, uint64_t heap0)
{
    a->sum.seconds += t->seconds;
    a->sum.commits += t->commits;
    a->sum.records += t->records;
    a->sum.value_bytes += t->value_bytes;
    a->sum.fdatasyncs += t->fdatasyncs;
    a->sum.rounds += t->rounds;
    a->sum.batches += t->batches;
    uint64_t held = t->heap_end_bytes > heap0 ? t->heap_end_bytes - heap0 : 0;
    if (held > a->heap_end_over_start)
        a->heap_end_over_start = held;
}

static void run_w3(void)
{
    const uint32_t n = 16;
    const struct row *w2 = find_row("W2", "ringtail", "p16");
    if (!w2 || isnan(w2->mb_s)) {
        write_workload(&sink_ringtail, "W2", "p16", "W2/p16", KIND_SUBJECT, true,
                       BENCH_PARTITIONS_W2, n, opt.w3_seconds, opt.w2_bytes_max, false, NULL, NULL);
        w2 = find_row("W2", "ringtail", "p16");
    }
    double txn_kib = (double)opt.w3_txn_batches * BENCH_BATCH_VALUE_BYTES / 1024.0;
    struct w3_acc acc[2]; /* [0] idempotent baseline, [1] transactional */
    memset(acc, 0, sizeof(acc));
    for (int txn = 0; txn < 2; txn++) {
        char config[40];
        snprintf(config, sizeof(config), "p16 %s/%.0f KiB", txn ? "commit" : "idem flush", txn_kib);
        acc[txn].row = row_new("W3", "ringtail", config, "W3", KIND_SUBJECT);
        acc[txn].row->producers = n;
        acc[txn].row->batches_per_txn = opt.w3_txn_batches;
        acc[txn].lat = calloc(1, sizeof(struct hist));
        acc[txn].rc = acc[txn].lat ? 0 : -ENOMEM;
    }
    double anon_peak = 0, heap_peak[2] = {0, 0};
    for (uint32_t pair = 0; pair < opt.w3_pairs && !acc[0].rc && !acc[1].rc; pair++) {
        uint64_t commits_each[16] = {0};
        for (int k = 0; k < 2 && !acc[0].rc && !acc[1].rc; k++) {
            int txn = (int)(pair & 1) ^ k; /* even pairs: idem first */
            struct w3_acc *a = &acc[txn];
            char dir[PATH_MAX];
            a->rc = fresh_dir(dir, sizeof(dir), "W3", "ringtail", txn ? "txn" : "idem", a->row);
            if (a->rc)
                break;
            uint64_t heap0 = mem_heap_bytes(NULL);
            struct txn_run_result t = {.commit_lat = a->lat};
            a->rc = txn_w3_run(dir, n, BENCH_PARTITIONS_W2, k ? 0 : opt.w3_seconds,
                               opt.w3_txn_batches, txn == 1, commits_each, &t);
            if (a->rc)
                row_fail(a->row, "run", a->rc, t.errmsg);
            else
                w3_add(a, &t, heap0);
            if (a->rc == 0 && t.seconds > 0 && pair < W3_PAIRS_MAX)
                w3_pair_mb[pair][txn] = (double)t.value_bytes / 1e6 / t.seconds;
            row_memory(a->row, heap0);
            if (a->row->anon_peak_mb > anon_peak)
                anon_peak = a->row->anon_peak_mb;
            if (a->row->heap_peak_mb > heap_peak[txn])
                heap_peak[txn] = a->row->heap_peak_mb;
            if (!opt.keep)
                bench_rmtree(dir);
        }
    }
    for (int txn = 0; txn < 2; txn++) {
        struct w3_acc *a = &acc[txn];
        struct row *r = a->row;
        if (a->rc == 0 && a->sum.commits) {
            txn_row_fill(r, &a->sum, a->lat);
            double ratio = w2 && w2->mb_s > 0 ? r->mb_s / w2->mb_s : NAN;
            double per_round = a->sum.rounds ? (double)a->sum.batches / (double)a->sum.rounds : 0.0;
            if (txn)
                snprintf(r->note, sizeof(r->note),
                         "overhead 1 - W3/idem = %.2f %%; W3/W2 p16 = %.2f; %.1f commits/s; "
                         "latency = commit call (flush + 2PC); %.1f batches/round; %u runs",
                         100.0 * (1.0 - r->mb_s / acc[0].row->mb_s), ratio, r->txn_s, per_round,
                         opt.w3_pairs);
            else
                snprintf(r->note, sizeof(r->note),
                         "baseline: idempotent rt_producer_send, flush per %.0f KiB; /W2 p16 = "
                         "%.2f; latency = flush call; %.1f batches/round; %u runs",
                         txn_kib, ratio, per_round, opt.w3_pairs);
        } else if (a->rc == 0) {
            row_fail(r, "run", -ECANCELED, "did not run: the other W3 row failed");
        }
        r->anon_peak_mb = anon_peak;
        r->heap_peak_mb = heap_peak[txn];
        r->heap_mb = (double)a->heap_end_over_start / 1e6;
        free(a->lat);
    }
}

/* The disk's own fdatasync latency (4 KiB pwrite + fdatasync), into a file whose blocks were
 * written before (an overwrite) and into a fallocate'd one: the yardstick for W4's commit
 * latency. Each probe runs in two halves, just before and just after ringtail's 1-producer W4
 * configuration (the one the goal reads; else the first), into the same histogram, so the yardstick
 * and the commit latency it divides come from the same stretch of time on a shared disk. */
struct fsync_probe {
    struct row *row;
    struct hist *lat;
    double seconds;
    uint32_t rounds;
    int rc;
};

static void fsync_probe_start(struct fsync_probe *p, bool prewritten)
{
    const char *config = prewritten ? "4K overwrite+fdatasync" : "4K falloc+fdatasync";
    memset(p, 0, sizeof(*p));
    p->row = row_new("W4", "disk", config, "W4/fsync", KIND_LIMIT);
    p->row->mb_s = NAN;
    p->lat = calloc(1, sizeof(*p->lat));
    p->rc = p->lat ? 0 : -ENOMEM;
}

static void fsync_probe_half(struct fsync_probe *p, bool prewritten, uint32_t rounds)
{
    if (p->rc)
        return;
    char dir[PATH_MAX];
    p->rc =
        fresh_dir(dir, sizeof(dir), "W4", "disk", prewritten ? "fsync" : "fsync-falloc", p->row);
    if (p->rc)
        return;
    uint64_t t0 = bench_now_ns();
    p->rc = fdatasync_probe(dir, rounds, prewritten, p->lat);
    p->seconds += (double)(bench_now_ns() - t0) / 1e9;
    p->rounds += rounds;
    if (p->rc)
        row_fail(p->row, "fdatasync probe", p->rc, dir);
    if (!opt.keep)
        bench_rmtree(dir);
}

/* Fills the probe's row; returns its p50 in microseconds (NAN on failure). */
static double fsync_probe_finish(struct fsync_probe *p, bool prewritten, uint32_t around)
{
    struct row *r = p->row;
    double p50 = NAN;
    if (p->rc == 0 && p->rounds) {
        r->seconds = p->seconds;
        r->records = p->rounds;
        r->rec_s = (double)p->rounds / p->seconds;
        r->has_latency = true;
        r->p50_us = p50 = hist_quantile_ns(p->lat, 0.50) / 1e3;
        r->p99_us = hist_quantile_ns(p->lat, 0.99) / 1e3;
        r->p999_us = hist_quantile_ns(p->lat, 0.999) / 1e3;
        snprintf(r->note, sizeof(r->note),
                 "%u x (4 KiB pwrite + fdatasync) into a %s file, half just before and half just"
                 " after ringtail W4 p%u; rec/s = fdatasyncs/s",
                 p->rounds, prewritten ? "pre-written" : "fallocate'd", around);
    }
    free(p->lat);
    p->lat = NULL;
    return p50;
}

/* W4's note; the ratio is to the overwrite fdatasync p50 (the true limit, issue 14 item 1). */
static void w4_note(struct row *r, double fsync_p50_us)
{
    bool peer = r->kind == KIND_PEER;
    r->commit_x_fsync = r->p50_us / fsync_p50_us;
    snprintf(r->note, sizeof(r->note),
             "%.0f txn/s (%" PRIu64 " txns); commit p50 = %.2fx overwrite fdatasync p50%s",
             r->txn_s, r->commits, r->commit_x_fsync,
             peer ? "; TransactionDB (pessimistic), WAL synced per commit"
                  : "; latency = commit call (flush + 2PC)");
}

static void run_w4_one(uint32_t n, int sys, double fsync_p50_us, bool later_fill, struct row **out)
{
    char config[40], group[24];
    snprintf(config, sizeof(config), "p%u", n);
    snprintf(group, sizeof(group), "W4/p%u", n);
    const char *name = sys ? "rocksdb" : "ringtail";
    struct row *r = row_new("W4", name, config, group, sys ? KIND_PEER : KIND_SUBJECT);
    r->producers = n;
    *out = r;
    char dir[PATH_MAX];
    if (fresh_dir(dir, sizeof(dir), "W4", name, config, r))
        return;
    uint64_t heap0 = mem_heap_bytes(NULL);
    struct hist *lat = calloc(1, sizeof(*lat));
    struct txn_run_result t = {.commit_lat = lat};
    int rc = !lat  ? -ENOMEM
             : sys ? txn_w4_rocksdb_run(dir, n, BENCH_PARTITIONS_W2, opt.w4_seconds, &t)
                   : txn_w4_run(dir, n, BENCH_PARTITIONS_W2, opt.w4_seconds, opt.w4_txn_max, &t);
    if (rc) {
        row_fail(r, "run", rc, t.errmsg);
    } else {
        txn_row_fill(r, &t, lat);
        if (!later_fill)
            w4_note(r, fsync_p50_us);
    }
    row_memory(r, heap0);
    r->heap_mb = t.heap_end_bytes > heap0 ? (double)(t.heap_end_bytes - heap0) / 1e6 : 0;
    free(lat);
    if (!opt.keep)
        bench_rmtree(dir);
}

static void run_w4(void)
{
    /* The probe brackets the 1-producer configuration (the goal's), else the first; that one
     * runs first, then the rest in the order given. */
    uint32_t first = 0;
    for (uint32_t k = 0; k < opt.w4_sets; k++)
        if (opt.w4_producers[k] == 1) {
            first = k;
            break;
        }
    uint32_t half = opt.fsync_probes / 2 ? opt.fsync_probes / 2 : 1;
    struct fsync_probe over, falloc;
    fsync_probe_start(&over, true);
    fsync_probe_start(&falloc, false);
    fsync_probe_half(&over, true, half);
    fsync_probe_half(&falloc, false, half);
    double fsync_p50_us = NAN;
    for (uint32_t i = 0; i < opt.w4_sets; i++) {
        uint32_t k = i == 0 ? first : i <= first ? i - 1 : i;
        uint32_t n = opt.w4_producers[k];
        for (int sys = 0; sys < 2; sys++) {
            if (sys == 1 && !opt.peer_rocksdb)
                break;
            struct row *r = NULL;
            run_w4_one(n, sys, fsync_p50_us, i == 0 && sys == 0, &r);
            if (i == 0 && sys == 0) { /* the second halves, then the yardstick is known */
                fsync_probe_half(&over, true, opt.fsync_probes - half);
                fsync_probe_half(&falloc, false, opt.fsync_probes - half);
                fsync_p50_us = fsync_probe_finish(&over, true, n);
                fsync_probe_finish(&falloc, false, n);
                if (!isnan(r->mb_s))
                    w4_note(r, fsync_p50_us);
            }
        }
    }
    if (opt.w4_sets == 0) {
        fsync_probe_finish(&over, true, 0);
        fsync_probe_finish(&falloc, false, 0);
    }
}

/* M: memory per producer id and per partition, and the heap under producer-id churn. */
/* ---------------------------------------------------------------------------------------- */
/* H: the hot path's allocations (STYLE rule 8)                                              */
/* ---------------------------------------------------------------------------------------- */

struct hot_mark {
    uint64_t ns, allocs, bytes;
};

static void hot_mark(struct hot_mark *m)
{
    mem_alloc_totals(&m->allocs, &m->bytes);
    m->ns = bench_now_ns();
}

/* Fills r from two marks around `ops` operations: rec/s = operations per second; the note
 * carries what the hot path costs per operation in time, allocator calls and bytes asked. */
static void hot_row(struct row *r, const struct hot_mark *a, const struct hot_mark *b, uint64_t ops,
                    const char *unit)
{
    double s = (double)(b->ns - a->ns) / 1e9;
    r->seconds = s;
    r->records = ops;
    r->rec_s = (double)ops / s;
    r->p50_us = s / (double)ops * 1e9; /* ns per op */
    double allocs = (double)(b->allocs - a->allocs) / (double)ops;
    double bytes = (double)(b->bytes - a->bytes) / (double)ops;
    r->bytes_per_item = bytes;
    snprintf(r->note, sizeof(r->note), "per %s: %.0f ns, %.2f allocations, %.0f B allocated", unit,
             r->p50_us, allocs, bytes);
    printf("  H %-22s %s\n", r->config, r->note);
}

static void run_hot(void)
{
    char dir[PATH_MAX];
    struct row *rp = row_new("H", "ringtail", "producer batch", "H", KIND_SUBJECT);
    struct row *ra = row_new("H", "ringtail", "rt_append batch", "H", KIND_SUBJECT);
    struct row *rf = row_new("H", "ringtail", "fetch 1 MiB", "H", KIND_SUBJECT);
    struct row *rt = row_new("H", "ringtail", "txn commit (1 part.)", "H", KIND_SUBJECT);
    if (fresh_dir(dir, sizeof(dir), "H", "ringtail", "", rp) != 0)
        return;
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc == 0)
        rc = rt_topic_create(e, "hot", 1);
    if (rc) {
        row_fail(rp, "open", rc, rt_error_detail());
        if (e)
            rt_close(e);
        return;
    }
    uint64_t heap0 = mem_heap_bytes(NULL);
    /* 1. producer batches: 16 records of 100 B each, closed by count */
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.batch_records_max = BENCH_BATCH_RECORDS;
    po.linger_ms = 1000;
    rt_producer *p = NULL;
    rc = rt_producer_open(e, &po, &p);
    struct rt_record recs[BENCH_BATCH_RECORDS];
    struct hot_mark a, b;
    uint64_t ops = opt.hot_ops;
    for (int pass = 0; pass < 2 && rc == 0; pass++) { /* pass 0 warms up */
        uint64_t n = pass ? ops : ops / 4 + 1;
        if (pass)
            hot_mark(&a);
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            bench_records_make(recs, BENCH_BATCH_RECORDS, 100, i);
            for (uint32_t k = 0; k < BENCH_BATCH_RECORDS && rc == 0; k++) {
                struct rt_producer_message m = {.record = recs[k], .sequence = -1};
                rc = rt_producer_send(p, "hot", 0, &m, NULL, NULL);
            }
        }
        if (rc == 0)
            rc = rt_producer_flush(p, -1);
        if (pass)
            hot_mark(&b);
    }
    if (p)
        rt_producer_close(p);
    if (rc)
        row_fail(rp, "producer", rc, rt_error_detail());
    else
        hot_row(rp, &a, &b, ops, "batch");
    /* 2. rt_append: the same batch through the synchronous call */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        uint64_t n = pass ? ops : ops / 4 + 1;
        if (pass)
            hot_mark(&a);
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            bench_records_make(recs, BENCH_BATCH_RECORDS, 100, i);
            rc = rt_append(e, "hot", 0, recs, BENCH_BATCH_RECORDS, NULL);
        }
        if (pass)
            hot_mark(&b);
    }
    if (rc)
        row_fail(ra, "rt_append", rc, rt_error_detail());
    else
        hot_row(ra, &a, &b, ops, "batch");
    /* 3. fetches of up to 1 MiB at random offsets of what 1 and 2 wrote */
    int64_t end = 0;
    if (rc == 0)
        rc = rt_list_offsets(e, "hot", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    uint64_t x = 88172645463325252ull;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        uint64_t n = pass ? ops : ops / 4 + 1;
        if (pass)
            hot_mark(&a);
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rt_fetch *f = NULL;
            rc = rt_fetch_start(e, "hot", 0, (int64_t)(x % (uint64_t)end), 1u << 20,
                                RT_READ_UNCOMMITTED, &f);
            if (rc == 0)
                rt_fetch_release(f);
        }
        if (pass)
            hot_mark(&b);
    }
    if (rc)
        row_fail(rf, "fetch", rc, rt_error_detail());
    else
        hot_row(rf, &a, &b, ops, "fetch");
    /* 4. transactions of one batch in one partition: PrepareCommit, a COMMIT marker,
     * CompleteCommit (what the coordinator and the markers cost) */
    po.transactional_id = "hot-txn";
    p = NULL;
    if (rc == 0)
        rc = rt_producer_open(e, &po, &p);
    if (rc == 0)
        rc = rt_producer_init_transactions(p, -1);
    uint64_t txns = ops / 16 + 1;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        uint64_t n = pass ? txns : txns / 4 + 1;
        if (pass)
            hot_mark(&a);
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            rc = rt_producer_begin(p);
            bench_records_make(recs, BENCH_BATCH_RECORDS, 100, i);
            for (uint32_t k = 0; k < BENCH_BATCH_RECORDS && rc == 0; k++) {
                struct rt_producer_message m = {.record = recs[k], .sequence = -1};
                rc = rt_producer_send(p, "hot", 0, &m, NULL, NULL);
            }
            if (rc == 0)
                rc = rt_producer_commit(p, -1);
        }
        if (pass)
            hot_mark(&b);
    }
    if (p)
        rt_producer_close(p);
    if (rc)
        row_fail(rt, "txn", rc, rt_error_detail());
    else
        hot_row(rt, &a, &b, txns, "txn");
    row_memory(rp, heap0);
    rt_close(e);
    if (!opt.keep)
        bench_rmtree(dir);
}

static void run_mem(void)
{
    char dir[PATH_MAX], config[40];
    /* 1. short-lived producer ids: the heap must stop growing once the table is full */
    snprintf(config, sizeof(config), "%" PRIu64 " short-lived ids", opt.mem_producers);
    struct row *r = row_new("M", "ringtail", config, "M", KIND_SUBJECT);
    if (fresh_dir(dir, sizeof(dir), "M", "ringtail", "churn", r) == 0) {
        struct mem_churn_result c = {0};
        uint64_t heap0 = mem_heap_bytes(NULL);
        int rc = mem_producer_churn(dir, opt.mem_producers, 2, opt.mem_producers_max, 1, &c);
        if (rc) {
            row_fail(r, "churn", rc, c.errmsg);
        } else if (c.sample_count >= 2) {
            r->seconds = c.seconds;
            r->records = c.producers;
            r->rec_s = (double)c.producers / c.seconds; /* producers per second */
            uint32_t half = c.sample_count / 2, last = c.sample_count - 1;
            double at_half = (double)c.heap_bytes[half - 1] - (double)c.heap_open_bytes;
            double at_end = (double)c.heap_bytes[last] - (double)c.heap_open_bytes;
            double growth_2nd = at_end - at_half;
            printf("  M churn heap after open (MB) by producers done:");
            for (uint32_t i = 0; i < c.sample_count; i++)
                printf(" %" PRIu64 ":%.1f", c.at[i],
                       ((double)c.heap_bytes[i] - (double)c.heap_open_bytes) / 1e6);
            printf("\n");
            r->growth_2nd_mb = growth_2nd / 1e6;
            r->growth_bound_mb = (0.05 * fabs(at_end) + 1e6) / 1e6;
            snprintf(r->note, sizeof(r->note),
                     "producers_max %u; heap +%.1f MB at %" PRIu64 ", +%.1f MB at %" PRIu64
                     " (2nd half %+.2f MB: %s); rec/s = producers/s",
                     opt.mem_producers_max ? opt.mem_producers_max : 65536, at_half / 1e6,
                     c.at[half - 1], at_end / 1e6, c.at[last], growth_2nd / 1e6,
                     fabs(r->growth_2nd_mb) <= r->growth_bound_mb ? "plateau" : "GROWING");
        }
        row_memory(r, heap0);
        r->heap_mb = (double)c.heap_end_bytes / 1e6 - (double)heap0 / 1e6;
        if (!opt.keep)
            bench_rmtree(dir);
    }
    /* 2. bytes per producer id, with `mem_live` producers open at once */
    snprintf(config, sizeof(config), "%u live producers", opt.mem_live);
    r = row_new("M", "ringtail", config, "M", KIND_SUBJECT);
    if (fresh_dir(dir, sizeof(dir), "M", "ringtail", "live", r) == 0) {
        struct mem_live_result l = {0};
        uint64_t heap0 = mem_heap_bytes(NULL);
        int rc = mem_producers_live(dir, opt.mem_live, BENCH_PARTITIONS_W2, &l);
        if (rc) {
            row_fail(r, "live producers", rc, l.errmsg);
        } else {
            r->records = l.live;
            r->bytes_per_item = (double)l.heap_closed_bytes / l.live;
            r->heap_open_per_item = (double)l.heap_live_bytes / l.live;
            r->threads_per_item = l.threads_live >= 0 ? (double)l.threads_live / l.live : NAN;
            snprintf(r->note, sizeof(r->note),
                     "per producer: %.0f B heap allocated while open, %.0f B anon RSS, %.3f "
                     "threads; %.0f B heap kept per id after close",
                     r->heap_open_per_item, (double)l.anon_live_bytes / l.live, r->threads_per_item,
                     (double)l.heap_closed_bytes / l.live);
        }
        row_memory(r, heap0);
        if (!opt.keep)
            bench_rmtree(dir);
    }
    /* 3. bytes per partition */
    snprintf(config, sizeof(config), "1 vs %u partitions", opt.mem_partitions);
    r = row_new("M", "ringtail", config, "M", KIND_SUBJECT);
    if (fresh_dir(dir, sizeof(dir), "M", "ringtail", "partitions", r) == 0) {
        struct mem_part_result m = {0};
        uint64_t heap0 = mem_heap_bytes(NULL);
        int rc = mem_partitions(dir, opt.mem_partitions, &m);
        if (rc) {
            row_fail(r, "partitions", rc, m.errmsg);
        } else {
            double d = (double)(opt.mem_partitions - 1);
            r->records = opt.mem_partitions;
            r->bytes_per_item = (double)(m.heap_written_bytes[1] - m.heap_written_bytes[0]) / d;
            snprintf(r->note, sizeof(r->note),
                     "per partition: heap %.0f B created, %.0f B after one append each",
                     (double)(m.heap_created_bytes[1] - m.heap_created_bytes[0]) / d,
                     (double)(m.heap_written_bytes[1] - m.heap_written_bytes[0]) / d);
        }
        row_memory(r, heap0);
        if (!opt.keep)
            bench_rmtree(dir);
    }
}

/* S: `ringtail serve` driven by librdkafka, read against this run's in-process W2 (produce)
 * and the loopback limit (consume). */
static void ringtail_cli_path(char *out, size_t n)
{
    if (opt.ringtail_path) {
        snprintf(out, n, "%s", opt.ringtail_path);
        return;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        snprintf(out, n, "ringtail");
        return;
    }
    self[len] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(out, n, "%s/ringtail", self);
}

static int serve_dir_prepare(const char *dir, uint32_t partitions, char *err, size_t errlen)
{
    bench_rmtree(dir);
    int rc = bench_mkdir(dir);
    if (rc) {
        snprintf(err, errlen, "mkdir %s", dir);
        return rc;
    }
    struct rt_options o;
    rt_options_init(&o);
    rt_engine *e = NULL;
    rc = rt_open(dir, &o, &e);
    if (rc == 0) {
        rc = rt_topic_create(e, BENCH_TOPIC, partitions);
        int rc2 = rt_close(e);
        rc = rc ? rc : rc2;
    }
    if (rc)
        snprintf(err, errlen, "creating topic %s: %s", BENCH_TOPIC, rt_error_detail());
    return rc;
}

static void serve_row_fill(struct row *r, const struct serve_result *sr, bool latency)
{
    r->seconds = sr->seconds;
    r->records = sr->records;
    r->bytes = sr->bytes;
    r->mb_s = sr->seconds > 0 ? (double)sr->bytes / 1e6 / sr->seconds : NAN;
    r->rec_s = sr->seconds > 0 ? (double)sr->records / sr->seconds : NAN;
    r->has_latency = latency;
    r->p50_us = sr->p50_us;
    r->p99_us = sr->p99_us;
    r->p999_us = sr->p999_us;
}

static double serve_cpu_client_s = NAN, serve_cpu_server_s = NAN; /* during the consume */

/* CPU seconds (user + system) of a process (/proc/PID/stat; pid 0: this one), or NAN. */
static double proc_cpu_s(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), pid ? "/proc/%d/stat" : "/proc/self/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The bytes the server's stop summary says it sent zero-copy / by sendmsg / copied. */
static void serve_log_fetch_bytes(const char *log, uint64_t *zc, uint64_t *plain, uint64_t *copied)
{
    *zc = *plain = *copied = 0;
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "fetched records: ");
        unsigned long long a, b, c;
        if (p && sscanf(p,
                        "fetched records: %llu bytes sent zero-copy, %llu sent by sendmsg from "
                        "the mapping, %llu copied",
                        &a, &b, &c) == 3) {
            *zc = a; /* the last run's (the log is appended to) */
            *plain = b;
            *copied = c;
        }
    }
    fclose(f);
}

/* The consume of the p16 log again, from a server started with --zero-copy false (fetched
 * records copied into the response buffer): zero-copy's gain as a ratio, measured here. */
static void serve_copy_path(const char *ringtail, const char *dir, struct serve_proc *sp,
                            uint64_t records)
{
    struct row *zc_row = (struct row *)find_row("S", "serve", "consume read_committed");
    uint64_t zc, plain, copied;
    serve_log_fetch_bytes(sp->log_path, &zc, &plain, &copied);
    if (zc_row)
        snprintf(zc_row->note, sizeof(zc_row->note),
                 "read_committed, %u partitions; server: %.0f MB sent zero-copy, %.0f MB "
                 "copied; CPU s client %.2f, server %.2f",
                 BENCH_PARTITIONS_W2, zc / 1e6, copied / 1e6, serve_cpu_client_s,
                 serve_cpu_server_s);
    struct row *c = row_new("S", "serve", "consume, copying fetch", "S/consume", KIND_SUBJECT);
    c->producers = 1;
    int rc = serve_proc_start(sp, ringtail, dir, "--zero-copy false");
    if (rc) {
        row_fail(c, "start --zero-copy false", rc, sp->log_path);
        return;
    }
    progress_phase("S serve consume, copying fetch");
    struct serve_result cr;
    rc = serve_consume(sp->broker, BENCH_TOPIC, BENCH_PARTITIONS_W2, records, &cr);
    serve_row_fill(c, &cr, false);
    int src = serve_proc_stop(sp);
    serve_log_fetch_bytes(sp->log_path, &zc, &plain, &copied);
    double ratio = zc_row && c->mb_s > 0 ? zc_row->mb_s / c->mb_s : NAN;
    snprintf(c->note, sizeof(c->note),
             "server --zero-copy false: %.0f MB copied in user space; zero-copy/copying = %.2f",
             copied / 1e6, ratio);
    if (rc)
        row_fail(c, "consume", rc, cr.errmsg);
    else if (src)
        row_fail(c, "SIGTERM exit status", src, sp->log_path);
}

/* S "txn mix": the plain producer's latency on one network loop (--threads 1) while 16
 * transactional producers commit (issue 22 item 4: no transactional call holds the loop). */
static void run_txn_mix(void)
{
    enum { TXN_PRODUCERS = 16 };
    char ringtail[PATH_MAX], dir[PATH_MAX], err[256] = "";
    ringtail_cli_path(ringtail, sizeof(ringtail));
    struct row *r =
        row_new("S", "serve", "produce p1 beside 16 txn, --threads 1", "S/txn-mix", KIND_SUBJECT);
    r->producers = 1;
    system_dir(dir, sizeof(dir), "S", "serve", "txn-mix");
    int rc = serve_dir_prepare(dir, 1 + TXN_PRODUCERS, err, sizeof(err));
    if (rc) {
        row_fail(r, "prepare", rc, err);
        return;
    }
    settle();
    struct serve_proc sp;
    rc = serve_proc_start(&sp, ringtail, dir, "--threads 1");
    if (rc) {
        snprintf(err, sizeof(err), "%s serve: see %s", ringtail, sp.log_path);
        row_fail(r, "start", rc, err);
        return;
    }
    progress_phase("S serve txn mix");
    struct serve_txn_mix_args a = {.broker = sp.broker,
                                   .plain_topic = BENCH_TOPIC,
                                   .txn_topic = BENCH_TOPIC,
                                   .txn_producers = TXN_PRODUCERS,
                                   .txn_partitions = TXN_PRODUCERS,
                                   .seconds = opt.serve_seconds};
    struct serve_result sr;
    uint64_t commits = 0;
    rc = serve_txn_mix(&a, &sr, &commits);
    serve_row_fill(r, &sr, true);
    snprintf(r->note, sizeof(r->note),
             "librdkafka %s: one record at a time, acks=all, each waited for, while %d "
             "transactional producers committed %.0f txn/s on the same loop",
             rd_version(), TXN_PRODUCERS, sr.seconds > 0 ? (double)commits / sr.seconds : 0.0);
    if (rc)
        row_fail(r, "txn mix", rc, sr.errmsg);
    int src = serve_proc_stop(&sp);
    if (src && !rc) {
        snprintf(err, sizeof(err), "see %s", sp.log_path);
        row_fail(r, "SIGTERM exit status", src, err);
    }
    if (!opt.keep) {
        bench_rmtree(dir);
        unlink(sp.log_path);
    }
}

/* The kernel-TLS words of the server's startup line ("available" / "unavailable (...)"). */
static void serve_log_ktls(const char *log, char *out, size_t n)
{
    snprintf(out, n, "kernel TLS: ?");
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "kernel TLS: ");
        if (p) {
            const char *end = strstr(p, " (");
            if (!end)
                end = strstr(p, ": fetched");
            snprintf(out, n, "%.*s", (int)(end ? end - p : (ptrdiff_t)strcspn(p, "\n")), p);
        }
    }
    fclose(f);
}

/* S TLS rows (issue 23): produce p<n> and the read_committed consume again, against an SSL
 * listener with a self-signed certificate made by the openssl CLI, beside the plaintext rows of
 * this run (their ratio in the notes). */
static void run_serve_tls(const char *ringtail, uint32_t n)
{
    char config[48], group[24], dir[PATH_MAX], err[256] = "";
    snprintf(config, sizeof(config), "produce p%u, TLS", n);
    snprintf(group, sizeof(group), "S/p%u", n);
    struct row *r = row_new("S", "serve", config, group, KIND_SUBJECT);
    r->producers = n;
    system_dir(dir, sizeof(dir), "S", "serve", "tls");
    int rc = serve_dir_prepare(dir, BENCH_PARTITIONS_W2, err, sizeof(err));
    if (rc) {
        row_fail(r, "prepare", rc, err);
        return;
    }
    char cert[PATH_MAX + 16], key[PATH_MAX + 16], cmd[3 * PATH_MAX + 400];
    snprintf(cert, sizeof(cert), "%s.tls.pem", dir);
    snprintf(key, sizeof(key), "%s.tls.key", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout '%s' "
             "-out '%s' -days 2 -subj /CN=localhost "
             "-addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1",
             key, cert);
    if (system(cmd) != 0) {
        row_fail(r, "openssl req (the certificate)", -EIO, cmd);
        return;
    }
    settle();
    struct serve_proc sp;
    rc = serve_proc_start_tls(&sp, ringtail, dir, NULL, cert, key);
    if (rc) {
        snprintf(err, sizeof(err), "%s serve: see %s", ringtail, sp.log_path);
        row_fail(r, "start", rc, err);
        return;
    }
    char ktls[160];
    serve_log_ktls(sp.log_path, ktls, sizeof(ktls));
    serve_client_tls(cert);
    char label[96];
    snprintf(label, sizeof(label), "S serve produce p%u, TLS", n);
    progress_phase(label);
    struct serve_produce_args a = {.broker = sp.broker,
                                   .topic = BENCH_TOPIC,
                                   .producers = n,
                                   .partitions = BENCH_PARTITIONS_W2,
                                   .seconds = opt.serve_seconds};
    struct serve_result sr;
    rc = serve_produce(&a, &sr);
    serve_row_fill(r, &sr, true);
    snprintf(config, sizeof(config), "produce p%u", n);
    const struct row *plain = find_row("S", "serve", config);
    snprintf(r->note, sizeof(r->note),
             "SSL listener (security.protocol=ssl); %s; TLS/plaintext = %.2f", ktls,
             plain && plain->mb_s > 0 ? r->mb_s / plain->mb_s : NAN);
    if (rc)
        row_fail(r, "produce", rc, sr.errmsg);
    if (rc == 0) {
        struct row *c = row_new("S", "serve", "consume, TLS", "S/consume", KIND_SUBJECT);
        c->producers = 1;
        progress_phase("S serve consume, TLS");
        struct serve_result cr;
        int crc = serve_consume(sp.broker, BENCH_TOPIC, BENCH_PARTITIONS_W2, sr.records, &cr);
        serve_row_fill(c, &cr, false);
        const struct row *pc = find_row("S", "serve", "consume read_committed");
        snprintf(c->note, sizeof(c->note), "read_committed, SSL listener; %s; TLS/plaintext = %.2f",
                 ktls, pc && pc->mb_s > 0 ? c->mb_s / pc->mb_s : NAN);
        if (crc)
            row_fail(c, "consume", crc, cr.errmsg);
    }
    serve_client_tls(NULL);
    rc = serve_proc_stop(&sp);
    if (rc) {
        snprintf(err, sizeof(err), "see %s", sp.log_path);
        row_fail(r, "SIGTERM exit status", rc, err);
    }
    if (!opt.keep) {
        bench_rmtree(dir);
        unlink(sp.log_path);
        unlink(cert);
        unlink(key);
    }
}

static void run_serve(void)
{
    static const uint32_t counts[] = {1, 16};
    char ringtail[PATH_MAX];
    ringtail_cli_path(ringtail, sizeof(ringtail));
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        uint32_t n = counts[k];
        char config[40], group[24], w2group[24];
        snprintf(config, sizeof(config), "p%u", n);
        snprintf(group, sizeof(group), "S/p%u", n);
        snprintf(w2group, sizeof(w2group), "W2/p%u", n);
        const struct row *w2 = find_row("W2", "ringtail", config);
        if (!w2 || isnan(w2->mb_s)) {
            write_workload(&sink_ringtail, "W2", config, w2group, KIND_SUBJECT, true,
                           BENCH_PARTITIONS_W2, n, opt.w2_seconds, opt.w2_bytes_max, false, NULL,
                           NULL);
            w2 = find_row("W2", "ringtail", config);
        }
        /* The in-process figure the served one is read against (the "limit" of its group). */
        struct row *ref = row_new("S", "in-proc", config, group, KIND_LIMIT);
        ref->producers = n;
        if (w2 && !isnan(w2->mb_s)) {
            ref->mb_s = w2->mb_s;
            ref->rec_s = w2->rec_s;
            ref->seconds = w2->seconds;
            ref->has_latency = true;
            ref->p50_us = w2->p50_us;
            ref->p99_us = w2->p99_us;
            ref->p999_us = w2->p999_us;
            snprintf(ref->note, sizeof(ref->note),
                     "W2 %s of this run: rt_append of 16-record batches in this process", config);
        } else {
            ref->mb_s = NAN;
            snprintf(ref->note, sizeof(ref->note), "W2 %s did not run", config);
        }

        char rconfig[40];
        snprintf(rconfig, sizeof(rconfig), "produce p%u", n);
        struct row *r = row_new("S", "serve", rconfig, group, KIND_SUBJECT);
        r->producers = n;
        char dir[PATH_MAX], err[256] = "";
        system_dir(dir, sizeof(dir), "S", "serve", config);
        int rc = serve_dir_prepare(dir, BENCH_PARTITIONS_W2, err, sizeof(err));
        if (rc) {
            row_fail(r, "prepare", rc, err);
            continue;
        }
        settle();
        struct serve_proc sp;
        rc = serve_proc_start(&sp, ringtail, dir, NULL);
        if (rc) {
            snprintf(err, sizeof(err), "%s serve: see %s", ringtail, sp.log_path);
            row_fail(r, "start", rc, err);
            continue;
        }
        char label[96];
        snprintf(label, sizeof(label), "S serve produce p%u", n);
        progress_phase(label);
        mem_reset_peak();
        struct serve_produce_args a = {.broker = sp.broker,
                                       .topic = BENCH_TOPIC,
                                       .producers = n,
                                       .partitions = BENCH_PARTITIONS_W2,
                                       .seconds = opt.serve_seconds};
        struct serve_result sr;
        rc = serve_produce(&a, &sr);
        serve_row_fill(r, &sr, true);
        snprintf(r->note, sizeof(r->note),
                 "librdkafka %s, idempotent, acks=all, 1 KiB values; latency = produce call to "
                 "delivery report",
                 rd_version());
        if (rc)
            row_fail(r, "produce", rc, sr.errmsg);
        if (rc == 0 && k + 1 == sizeof(counts) / sizeof(counts[0])) {
            struct row *c =
                row_new("S", "serve", "consume read_committed", "S/consume", KIND_SUBJECT);
            c->producers = 1;
            progress_phase("S serve consume read_committed");
            struct serve_result cr;
            double cpu_client0 = proc_cpu_s(0), cpu_server0 = proc_cpu_s(sp.pid);
            int crc = serve_consume(sp.broker, BENCH_TOPIC, BENCH_PARTITIONS_W2, sr.records, &cr);
            serve_cpu_client_s = proc_cpu_s(0) - cpu_client0;
            serve_cpu_server_s = proc_cpu_s(sp.pid) - cpu_server0;
            serve_row_fill(c, &cr, false);
            snprintf(c->note, sizeof(c->note),
                     "one librdkafka consumer, isolation.level=read_committed, %u partitions",
                     BENCH_PARTITIONS_W2);
            if (crc)
                row_fail(c, "consume", crc, cr.errmsg);
            struct row *l = row_new("S", "loopback", "tcp, same bytes", "S/consume", KIND_LIMIT);
            progress_phase("S loopback limit");
            struct serve_result lr;
            int lrc = serve_loopback_limit(cr.bytes ? cr.bytes : sr.bytes, &lr);
            serve_row_fill(l, &lr, false);
            l->rec_s = NAN; /* bytes, not records */
            snprintf(l->note, sizeof(l->note),
                     "plain TCP over 127.0.0.1, 1 MiB send/recv, sender and receiver threads");
            if (lrc)
                row_fail(l, "loopback", lrc, "");
        }
        rc = serve_proc_stop(&sp);
        if (rc) {
            snprintf(err, sizeof(err), "see %s", sp.log_path);
            row_fail(r, "SIGTERM exit status", rc, err);
        } else if (k + 1 == sizeof(counts) / sizeof(counts[0]) && !isnan(r->mb_s)) {
            serve_copy_path(ringtail, dir, &sp, sr.records);
        }
        if (!opt.keep) {
            bench_rmtree(dir);
            unlink(sp.log_path);
        }
    }
    run_serve_tls(ringtail, counts[sizeof(counts) / sizeof(counts[0]) - 1]);
}

/* The consumer path (issue 27 item 5, bench_consume.c): one log of 8 partitions written in
 * process, then served by one `ringtail serve` to 1, 2 and 4 thin Fetch clients and
 * librdkafka consumers, each row read against the loopback limit of this run (the better of
 * send/recv and sendfile of the same bytes), with the server's and this process's CPU per GB;
 * then the thin clients again from servers started with --zero-copy sendmsg and false. */
#define CONSUME_PARTITIONS  8
#define CONSUME_FETCH_BYTES (50 << 20) /* the thin clients' max_bytes, as librdkafka's default */
/* Thin c4's server CPU s/GB by --zero-copy true, false, sendmsg; and the best sendfile sender's
 * (the loopback's floor, its softirq work included). */
static double consume_server_s_gb[3] = {NAN, NAN, NAN}, consume_floor_s_gb = NAN;

/* An unmeasured pass of 4 thin clients over the whole log: every row then reads a server whose
 * segment mappings and page tables are warm, whichever row runs first. */
static void consume_warm(struct serve_proc *sp, const uint64_t *ends)
{
    struct consume_args a = {.broker = sp->broker,
                             .topic = BENCH_TOPIC,
                             .partitions = CONSUME_PARTITIONS,
                             .consumers = 4,
                             .records = ends,
                             .thin = true,
                             .fetch_bytes = CONSUME_FETCH_BYTES};
    struct serve_result cr;
    progress_phase("S consume: warm-up pass");
    consume_run(&a, &cr);
}

/* One consume row. fetch_bytes: the thin clients' max_bytes; for librdkafka
 * CONSUME_FETCH_BYTES means its defaults (fetch.max.bytes 50 MiB, fetch.message.max.bytes 1 MiB
 * a partition, queued.max.messages.kbytes 65536), another value fetch.message.max.bytes of that
 * and a 256 MiB queue (serve_consume's settings). RTB_RDKAFKA_CONF replaces either. */
static void consume_row(const char *ringtail, const char *dir, struct serve_proc *sp,
                        const uint64_t *ends, bool thin, uint32_t n, const char *server_mode,
                        int32_t fetch_bytes)
{
    char config[40], label[64], size[40] = "", rk[160] = "";
    if (fetch_bytes != CONSUME_FETCH_BYTES && thin)
        snprintf(size, sizeof(size), ", %d MiB fetches", fetch_bytes >> 20);
    else if (fetch_bytes != CONSUME_FETCH_BYTES) /* librdkafka: larger fetches and queue */
        snprintf(size, sizeof(size), ", %dM/partition, 256M queue", fetch_bytes >> 20);
    if (fetch_bytes != CONSUME_FETCH_BYTES && !thin)
        snprintf(rk, sizeof(rk), "fetch.message.max.bytes=%d,queued.max.messages.kbytes=262144",
                 fetch_bytes);
    snprintf(config, sizeof(config), "%s c%u%s%s%s", thin ? "fetch" : "rdkafka", n,
             server_mode ? ", zc " : "", server_mode ? server_mode : "", size);
    struct row *r = row_new("S", "consume", config, "S/consumers", KIND_SUBJECT);
    r->producers = n;
    if (server_mode) {
        char arg[48];
        snprintf(arg, sizeof(arg), "--zero-copy %s", server_mode);
        int rc = serve_proc_start(sp, ringtail, dir, arg);
        if (rc) {
            row_fail(r, "start", rc, sp->log_path);
            return;
        }
        consume_warm(sp, ends);
    }
    snprintf(label, sizeof(label), "S consume %s", config);
    progress_phase(label);
    const char *conf = getenv("RTB_RDKAFKA_CONF");
    struct consume_args a = {.broker = sp->broker,
                             .topic = BENCH_TOPIC,
                             .partitions = CONSUME_PARTITIONS,
                             .consumers = n,
                             .records = ends,
                             .thin = thin,
                             .fetch_bytes = fetch_bytes,
                             .rdkafka_conf = conf ? conf : rk};
    struct serve_result cr;
    double c0 = proc_cpu_s(0), s0 = proc_cpu_s(sp->pid);
    int rc = consume_run(&a, &cr);
    double client = proc_cpu_s(0) - c0, server = proc_cpu_s(sp->pid) - s0;
    serve_row_fill(r, &cr, false);
    double gb = (double)cr.bytes / 1e9;
    snprintf(r->note, sizeof(r->note),
             "%s, read_committed, %u partitions split over %u; CPU s/GB server %.3f, client %.3f",
             thin ? "thin Fetch v11 clients (batch headers walked)" : "librdkafka consumers",
             CONSUME_PARTITIONS, n, server / gb, client / gb);
    if (thin && n == 4 && fetch_bytes == CONSUME_FETCH_BYTES)
        consume_server_s_gb[!server_mode                        ? 0
                            : strcmp(server_mode, "false") == 0 ? 1
                                                                : 2] = server / gb;
    if (rc)
        row_fail(r, "consume", rc, cr.errmsg);
    if (server_mode) {
        rc = serve_proc_stop(sp);
        if (rc)
            row_fail(r, "SIGTERM exit status", rc, sp->log_path);
    }
}

/* One loopback limit way, measured again after the consumers (the better run kept). */
static void consume_limit(struct row **slot, const char *dir, uint64_t bytes, uint32_t streams,
                          bool use_sendfile)
{
    char config[40], path[PATH_MAX + 16];
    snprintf(config, sizeof(config), "%s x%u", use_sendfile ? "sendfile" : "tcp send/recv",
             streams);
    snprintf(path, sizeof(path), "%s.sendfile", dir);
    if (!*slot) {
        *slot = row_new("S", "loopback", config, "S/consumers", KIND_LIMIT);
        (*slot)->mb_s = NAN;
    }
    struct row *r = *slot;
    struct serve_result lr;
    double cpu = NAN;
    int rc = consume_loopback(path, bytes, streams, use_sendfile, &lr, &cpu);
    double mb_s = lr.seconds > 0 ? (double)lr.bytes / 1e6 / lr.seconds : NAN;
    double s_gb = cpu / ((double)lr.bytes / 1e9);
    if (!rc && use_sendfile && (isnan(consume_floor_s_gb) || s_gb < consume_floor_s_gb))
        consume_floor_s_gb = s_gb;
    if (rc) {
        row_fail(r, "loopback", rc, "");
        return;
    }
    if (isnan(r->mb_s) || mb_s > r->mb_s) {
        serve_row_fill(r, &lr, false);
        r->rec_s = NAN; /* bytes, not records */
        snprintf(r->note, sizeof(r->note),
                 "the same bytes over 127.0.0.1, %u stream(s), %s, 1 MiB recv; sender CPU "
                 "%.3f s/GB (with the loopback's softirq work)",
                 streams, use_sendfile ? "sendfile from a cached file" : "1 MiB send", s_gb);
    }
}

static void run_consume(void)
{
    char ringtail[PATH_MAX], dir[PATH_MAX], err[256] = "";
    ringtail_cli_path(ringtail, sizeof(ringtail));
    system_dir(dir, sizeof(dir), "S", "consume", "log");
    uint64_t bytes = opt.quick ? 64u << 20 : 1u << 30, ends[CONSUME_PARTITIONS];
    bench_rmtree(dir);
    progress_phase("S consume: writing the log");
    int rc = bench_mkdir(dir);
    if (!rc)
        rc = consume_fill(dir, BENCH_TOPIC, CONSUME_PARTITIONS, bytes, ends, err, sizeof(err));
    if (rc) {
        row_fail(row_new("S", "consume", "fetch c1", "S/consumers", KIND_SUBJECT), "prepare", rc,
                 err);
        return;
    }
    uint64_t records = 0;
    for (uint32_t p = 0; p < CONSUME_PARTITIONS; p++)
        records += ends[p];
    struct row *lims[4] = {NULL};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) { /* the consumers, between the two passes of the limits */
            static const uint32_t counts[] = {1, 2, 4};
            struct serve_proc sp;
            rc = serve_proc_start(&sp, ringtail, dir, NULL);
            if (rc) {
                row_fail(row_new("S", "consume", "fetch c1", "S/consumers", KIND_SUBJECT), "start",
                         rc, sp.log_path);
                return;
            }
            consume_warm(&sp, ends);
            for (int thin = 1; thin >= 0; thin--)
                for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
                    consume_row(ringtail, dir, &sp, ends, thin, counts[k], NULL,
                                CONSUME_FETCH_BYTES);
            consume_row(ringtail, dir, &sp, ends, true, 4, NULL, 1 << 20); /* smaller fetches */
            consume_row(ringtail, dir, &sp, ends, true, 4, NULL, 8 << 20);
            consume_row(ringtail, dir, &sp, ends, false, 4, NULL, 8 << 20);
            rc = serve_proc_stop(&sp);
            if (rc)
                fprintf(stderr, "ringtail-bench: S consume server exit: %s (see %s)\n",
                        rt_strerror(rc), sp.log_path);
            consume_row(ringtail, dir, &sp, ends, true, 4, "sendmsg", CONSUME_FETCH_BYTES);
            consume_row(ringtail, dir, &sp, ends, true, 4, "false", CONSUME_FETCH_BYTES);
            if (!opt.keep)
                unlink(sp.log_path);
        }
        progress_phase("S loopback limits (send/recv, sendfile; 1 and 4 streams)");
        for (int w = 0; w < 4; w++)
            consume_limit(&lims[w], dir, records * BENCH_VALUE_BYTES, w & 1 ? 4 : 1, w >= 2);
    }
    if (!opt.keep)
        bench_rmtree(dir);
}

/* ---------------------------------------------------------------------------------------- */
/* CL: three `ringtail serve --voters` nodes, replication's cost (bench_cluster.c)            */
/* ---------------------------------------------------------------------------------------- */

#define CL_TOPIC_RF3  "cl-rf3"
#define CL_TOPIC_RF1  "cl-rf1"
#define CL_PARTITIONS 3 /* one led by each node */
#define CL_PRODUCERS  6
#define CL_TOPIC_TXN  "cl-txn"
#define CL_TXN_PARTS  4 /* small transactions over two of them */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One produce row of CL: the S producers against a topic of the running cluster, summed over
 * its runs (RF1 and RF3 at acks=all run in the order A B B A, so a drift in the machine's load
 * weighs on both alike). */
struct cl_prod {
    struct row *r;
    const char *topic, *what;
    bool acks_one;
    uint32_t runs;
    uint64_t records, bytes;
    double seconds, p50_w, p99_w, p999_w; /* latency percentiles weighted by records */
    double cpu_nodes_s, cpu_client_s;
};

static void cluster_produce_run(struct cluster *c, struct cl_prod *cp)
{
    struct row *r = cp->r;
    if (strncmp(r->note, "FAILED", 6) == 0)
        return;
    char label[96];
    snprintf(label, sizeof(label), "CL produce %s", r->config);
    progress_phase(label);
    struct serve_produce_args a = {.broker = c->bootstrap,
                                   .topic = cp->topic,
                                   .producers = CL_PRODUCERS,
                                   .partitions = CL_PARTITIONS,
                                   .seconds = opt.cluster_seconds,
                                   .acks_one = cp->acks_one};
    struct serve_result sr;
    double cpu_nodes0 = 0, cpu_nodes1 = 0, cpu_client0 = proc_cpu_s(0);
    for (int i = 1; i <= CLUSTER_NODES; i++)
        cpu_nodes0 += proc_cpu_s(c->pid[i]);
    int rc = serve_produce(&a, &sr);
    for (int i = 1; i <= CLUSTER_NODES; i++)
        cpu_nodes1 += proc_cpu_s(c->pid[i]);
    cp->cpu_client_s += proc_cpu_s(0) - cpu_client0;
    cp->cpu_nodes_s += cpu_nodes1 - cpu_nodes0;
    cp->runs++;
    cp->records += sr.records;
    cp->bytes += sr.bytes;
    cp->seconds += sr.seconds;
    cp->p50_w += sr.p50_us * (double)sr.records;
    cp->p99_w += sr.p99_us * (double)sr.records;
    cp->p999_w += sr.p999_us * (double)sr.records;
    struct serve_result sum = {.seconds = cp->seconds, .records = cp->records, .bytes = cp->bytes};
    if (cp->records) {
        sum.p50_us = cp->p50_w / (double)cp->records;
        sum.p99_us = cp->p99_w / (double)cp->records;
        sum.p999_us = cp->p999_w / (double)cp->records;
    }
    serve_row_fill(r, &sum, true);
    /* CPU seconds per GB of values: where the replication's cost goes on 2 shared cores */
    double gb = (double)cp->bytes / 1e9;
    snprintf(r->note, sizeof(r->note),
             "%s; librdkafka %s, %s, 1 KiB values, %u producers over %u partitions, %u run%s "
             "of %.1f s; CPU-s per GB: nodes %.1f, client %.1f",
             cp->what, rd_version(),
             cp->acks_one ? "acks=1, not idempotent" : "idempotent, acks=all", CL_PRODUCERS,
             CL_PARTITIONS, cp->runs, cp->runs == 1 ? "" : "s", opt.cluster_seconds,
             gb > 0 ? cp->cpu_nodes_s / gb : NAN, gb > 0 ? cp->cpu_client_s / gb : NAN);
    if (rc)
        row_fail(r, "produce", rc, sr.errmsg);
}

/* One commit-latency row (issue 25 item 3): `producers` transactional librdkafka producers
 * committing small transactions against `broker` (bench_serve.c serve_txn_commit). */
static struct row *cl_txn_row(const char *system, const char *broker, uint32_t producers,
                              const char *where, const char *tag)
{
    char config[40], label[80];
    snprintf(config, sizeof(config), "txn commit p%u", producers);
    struct row *r = row_new("CL", system, config, "CL/txn", KIND_SUBJECT);
    r->producers = producers;
    snprintf(label, sizeof(label), "CL %s %s", system, config);
    progress_phase(label);
    struct serve_txn_commit_args a = {.broker = broker,
                                      .topic = CL_TOPIC_TXN,
                                      .tag = tag,
                                      .producers = producers,
                                      .partitions = CL_TXN_PARTS,
                                      .seconds = opt.cluster_seconds};
    struct serve_txn_commit_result tr;
    int rc = serve_txn_commit(&a, &tr);
    r->seconds = tr.seconds;
    r->commits = tr.commits;
    r->txn_s = tr.seconds > 0 ? (double)tr.commits / tr.seconds : 0;
    r->records = tr.commits * 10;
    r->rec_s = r->txn_s * 10;
    r->mb_s = r->rec_s * 100 / 1e6;
    r->has_latency = tr.commits > 0;
    r->p50_us = tr.p50_us;
    r->p99_us = r->p999_us = tr.p99_us;
    snprintf(r->note, sizeof(r->note),
             "%s; librdkafka %s; %.0f txn/s (%" PRIu64 "), 10 x 100 B over 2 of %u partitions "
             "each; latency = rd_kafka_commit_transaction; p99.9 column = p99",
             where, rd_version(), r->txn_s, tr.commits, CL_TXN_PARTS);
    if (rc)
        row_fail(r, "transactions", rc, tr.errmsg);
    return r;
}

/* Issue 25 item 3: small transactions' commit latency at 1 and 64 producers against the
 * cluster (RF 3, min.insync.replicas=2: the decision replicated before the markers) beside a
 * single `ringtail serve` (no --voters) started for it in the same run. */
static void cluster_txn_rows(struct cluster *c, const char *dir)
{
    char err[256] = "", one_dir[PATH_MAX], ringtail[PATH_MAX];
    int rc = cluster_topic_create(c, CL_TOPIC_TXN, CL_TXN_PARTS, 3, 2, err, sizeof(err));
    if (rc) {
        row_fail(row_new("CL", "cluster", "txn commit p1", "CL/txn", KIND_SUBJECT), "topic", rc,
                 err);
        return;
    }
    ringtail_cli_path(ringtail, sizeof(ringtail));
    snprintf(one_dir, sizeof(one_dir), "%s/single", dir);
    struct serve_proc sp;
    char extra[48];
    snprintf(extra, sizeof(extra), "--num-partitions %u", CL_TXN_PARTS);
    rc = serve_proc_start(&sp, ringtail, one_dir, extra);
    static const uint32_t counts[] = {1, 64};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        char tag[32];
        struct row *one = NULL;
        if (rc == 0) {
            snprintf(tag, sizeof(tag), "one-%u", counts[i]);
            one = cl_txn_row("single node", sp.broker, counts[i],
                             "one `ringtail serve` (no --voters), topic auto-created", tag);
        } else {
            row_fail(row_new("CL", "single node", "txn commit p1", "CL/txn", KIND_SUBJECT),
                     "serve start", rc, sp.log_path);
        }
        snprintf(tag, sizeof(tag), "rf3-%u", counts[i]);
        struct row *rf3 = cl_txn_row("cluster", c->bootstrap, counts[i],
                                     "three nodes, RF 3, min.insync.replicas=2", tag);
        /* the replicated decision's cost, in the same run: p50 over the single node's */
        if (one && one->has_latency && rf3->has_latency && one->p50_us > 0 &&
            !strstr(rf3->note, "FAILED")) {
            size_t used = strlen(rf3->note);
            snprintf(rf3->note + used, sizeof(rf3->note) - used,
                     "; commit p50 %.2fx the single node's", rf3->p50_us / one->p50_us);
        }
    }
    if (rc == 0)
        serve_proc_stop(&sp);
}

static void run_cluster(void)
{
    char ringtail[PATH_MAX], dir[PATH_MAX], err[256] = "";
    ringtail_cli_path(ringtail, sizeof(ringtail));
    system_dir(dir, sizeof(dir), "CL", "cluster", "");
    bench_rmtree(dir);
    struct cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    progress_phase("CL starting three nodes");
    settle();
    int rc = cluster_start(c, ringtail, dir, opt.cluster_session_ms);
    if (rc == 0)
        rc = cluster_topic_create(c, CL_TOPIC_RF3, CL_PARTITIONS, 3, 2, err, sizeof(err));
    if (rc == 0)
        rc = cluster_topic_create(c, CL_TOPIC_RF1, CL_PARTITIONS, 1, 0, err, sizeof(err));
    if (rc) {
        struct row *r = row_new("CL", "cluster", "RF3 acks=all", "CL/produce", KIND_SUBJECT);
        if (!err[0])
            snprintf(err, sizeof(err), "see %s/n*.log", dir);
        row_fail(r, "cluster start", rc, err);
        goto out;
    }
    /* produce: RF1 (the reference of the group) beside RF3, each its own topic on the same
     * three processes, at acks=all in the order RF1 RF3 RF3 RF1 */
    struct cl_prod one = {.r = row_new("CL", "cluster", "RF1 acks=1", "CL/produce", KIND_SUBJECT),
                          .topic = CL_TOPIC_RF1,
                          .what = "replication factor 1",
                          .acks_one = true};
    struct cl_prod rf1 = {.r = row_new("CL", "cluster", "RF1 acks=all", "CL/produce", KIND_LIMIT),
                          .topic = CL_TOPIC_RF1,
                          .what = "replication factor 1 (the reference: xlimit of this group)"};
    struct cl_prod rf3 = {.r = row_new("CL", "cluster", "RF3 acks=all", "CL/produce", KIND_SUBJECT),
                          .topic = CL_TOPIC_RF3,
                          .what = "replication factor 3, min.insync.replicas=2"};
    one.r->producers = rf1.r->producers = rf3.r->producers = CL_PRODUCERS;
    cluster_produce_run(c, &one);
    cluster_produce_run(c, &rf1);
    cluster_produce_run(c, &rf3);
    cluster_produce_run(c, &rf3);
    cluster_produce_run(c, &rf1);

    cluster_txn_rows(c, dir);

    /* failover: the median of the trials */
    struct row *f = row_new("CL", "cluster", "failover (median)", "CL/failover", KIND_NA);
    f->mb_s = NAN;
    double ms[16];
    uint32_t done = 0;
    char trials[160] = "";
    for (uint32_t t = 0; t < opt.cluster_trials && t < 16; t++) {
        int32_t killed = 0;
        progress_phase("CL failover");
        /* a topic of its own each trial: placed round-robin, one of its partitions is led by
         * a node that is not the controller (a failover moves leaderships onto survivors) */
        char topic[32];
        snprintf(topic, sizeof(topic), "cl-failover-%u", t);
        ms[done] = -1;
        rc = cluster_topic_create(c, topic, CL_PARTITIONS, 3, 2, err, sizeof(err));
        if (rc == 0)
            rc = cluster_failover(c, topic, CL_PARTITIONS, &ms[done], &killed, err, sizeof(err));
        if (ms[done] >= 0) {
            size_t used = strlen(trials);
            snprintf(trials + used, sizeof(trials) - used, "%s%.0f", done ? ", " : "", ms[done]);
            done++;
        }
        if (rc) {
            row_fail(f, "failover", rc, err);
            break;
        }
    }
    if (done) {
        qsort(ms, done, sizeof(ms[0]), cmp_double);
        f->has_latency = true;
        f->p50_us = ms[done / 2] * 1e3;
        f->p99_us = f->p999_us = ms[done - 1] * 1e3;
        f->records = done;
        f->seconds = ms[done / 2] / 1e3;
        if (!strstr(f->note, "FAILED"))
            snprintf(f->note, sizeof(f->note),
                     "leader SIGKILLed -> first acks=all write acknowledged by another node: "
                     "median %.0f ms of %u (%s ms; session timeout %u ms); p50/p99 = "
                     "median/max",
                     ms[done / 2], done, trials, opt.cluster_session_ms);
    }

    /* catch-up against the loopback limit with the same bytes (after a failed failover too:
     * cluster_failover restarts the node it killed) */
    {
        struct cluster_catchup cu;
        struct row *u = row_new("CL", "cluster", "follower catch-up", "CL/catchup", KIND_SUBJECT);
        rc = cluster_catchup(c, CL_TOPIC_RF3, CL_PARTITIONS, CL_PRODUCERS,
                             opt.cluster_catchup_bytes, &cu, err, sizeof(err));
        if (rc || cu.seconds <= 0) {
            row_fail(u, "catch-up", rc ? rc : -EIO, err);
        } else {
            u->bytes = cu.bytes;
            u->seconds = cu.seconds;
            u->mb_s = (double)cu.bytes / 1e6 / cu.seconds;
            u->records = cu.bytes / BENCH_VALUE_BYTES;
            u->rec_s = (double)u->records / cu.seconds;
            snprintf(u->note, sizeof(u->note),
                     "node %d stopped (SIGTERM), %.0f MB produced at %.1f MB/s, restarted: "
                     "%.1f MB replicated in %.2f s%s; restart to in sync %.2f s",
                     cu.follower, (double)cu.produced_bytes / 1e6, cu.produce_mb_s,
                     (double)cu.bytes / 1e6, cu.seconds,
                     cu.from_restart ? " (from the restart: caught up before the first sample)"
                                     : " (lag from cluster status, 20 ms samples)",
                     cu.restart_to_sync_s);
            struct row *l = row_new("CL", "loopback", "tcp, same bytes", "CL/catchup", KIND_LIMIT);
            progress_phase("CL loopback limit");
            struct serve_result lr;
            int lrc = serve_loopback_limit(cu.bytes, &lr);
            serve_row_fill(l, &lr, false);
            l->rec_s = NAN;
            snprintf(l->note, sizeof(l->note),
                     "plain TCP over 127.0.0.1, 1 MiB send/recv, sender and receiver threads");
            if (lrc)
                row_fail(l, "loopback", lrc, "");
        }
    }
out:
    rc = cluster_stop(c);
    if (rc) {
        struct row *r = row_new("CL", "cluster", "SIGTERM", "CL/stop", KIND_NA);
        snprintf(err, sizeof(err), "see %s/n*.log", dir);
        row_fail(r, "SIGTERM exit status", rc, err);
    }
    free(c);
    if (!opt.keep)
        bench_rmtree(dir);
}

/* ---------------------------------------------------------------------------------------- */
/* ratios, table, JSON, chart                                                                */
/* ---------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------- */
/* O: open time and page cache after a clean close and after SIGKILL (bench_open.c)           */
/* ---------------------------------------------------------------------------------------- */

struct open_probe_result {
    double open_s, close_s;
    long rss_file_kb;
    long rss_anon_kb; /* -1: the probe did not say (an older probe) */
    long fds;
    double fetch_s; /* one fetch from every partition after the open; NAN: not said */
    long fetched;   /* partitions that fetch reached */
};

/* Runs the probe in a fresh process and parses its line. */
static int open_probe_run(const char *dir, bool cold, bool crash, bool small,
                          struct open_probe_result *out)
{
    char self[PATH_MAX];
    const char *exe = opt.open_probe_exe;
    if (!exe) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return -errno;
        self[n] = 0;
        exe = self;
    }
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof(cmd), "'%s' --open-probe '%s'%s%s%s", exe, dir, cold ? " cold" : "",
             crash ? " crash" : "", small ? " small" : "");
    FILE *p = popen(cmd, "r");
    if (!p)
        return -errno;
    char line[256] = "";
    int unclean = 0;
    out->rss_anon_kb = out->fds = out->fetched = -1;
    out->fetch_s = NAN;
    bool got = fgets(line, sizeof(line), p) != NULL &&
               sscanf(line,
                      "open_s=%lf rss_file_kb=%ld close_s=%lf unclean=%d rss_anon_kb=%ld fds=%ld "
                      "fetch_s=%lf fetched=%ld",
                      &out->open_s, &out->rss_file_kb, &out->close_s, &unclean, &out->rss_anon_kb,
                      &out->fds, &out->fetch_s, &out->fetched) >= 4;
    int status = pclose(p);
    return got && status == 0 ? 0 : -EIO;
}

/* Appends ~bytes of 16 x 1 KiB batches round-robin over partitions [lo, hi) (sync=none: the
 * close seals and fdatasyncs every segment anyway). *first_pass_s (may be NULL): the time of the
 * first round, one batch to each partition of the range. */
static int open_fill(rt_engine *e, uint32_t lo, uint32_t hi, uint64_t bytes, uint64_t salt,
                     double *first_pass_s)
{
    struct rt_record recs[BENCH_BATCH_RECORDS];
    uint64_t done = 0, t0 = bench_now_ns();
    uint32_t n = hi - lo;
    for (uint64_t i = 0; done < bytes; i++) {
        bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES, salt + i);
        int rc = rt_append(e, BENCH_TOPIC, lo + (uint32_t)(i % n), recs, BENCH_BATCH_RECORDS, NULL);
        if (rc)
            return rc;
        done += BENCH_BATCH_VALUE_BYTES;
        progress_add(BENCH_BATCH_VALUE_BYTES);
        if (first_pass_s && i + 1 == n)
            *first_pass_s = (double)(bench_now_ns() - t0) / 1e9;
    }
    return 0;
}

static void open_options(struct rt_options *o, uint32_t partitions)
{
    rt_options_init(o);
    o->sync_mode = RT_SYNC_NONE;
    if (partitions > 1) {
        /* Many small partitions: 1 MiB segments, so each has sealed segments and none
         * preallocates a default 1 GiB. */
        o->segment_size_bytes = 1u << 20;
        o->batch_size_max_bytes = 64u << 10;
        if (o->partitions_max < partitions)
            o->partitions_max = partitions;
    }
}

/* Partitions one engine may have active at once under RLIMIT_NOFILE: an active segment holds 4
 * descriptors (docs/limits.md) until a cache of open segment descriptors bounds them. */
static uint32_t open_fd_budget_partitions(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return UINT32_MAX;
    return rl.rlim_cur > 1024 ? (uint32_t)((rl.rlim_cur - 512) / 4) : 128;
}

/* What building a many-partition directory cost (issue 21 items 7, 8). */
struct open_build_times {
    double create_s;   /* rt_topic_create (+ rt_topic_add_partitions when staged) */
    double one_each_s; /* the first round of appends: one batch to every partition */
    double fill_s;     /* every append */
    double close_s;    /* rt_close after the appends (every partition sealed) */
    uint32_t steps;    /* 1, or the sessions it took because of the descriptor limit */
};

/* Builds dir: a topic of `partitions` holding ~bytes. When the partitions would need more
 * descriptors than RLIMIT_NOFILE allows active at once, it is built in steps of as many as fit:
 * each step opens the engine (the partitions of the steps before open dormant after their clean
 * close: no descriptor, PA11), adds its partitions (rt_topic_add_partitions), fills them and
 * closes. */
static int open_build(const char *dir, uint32_t partitions, uint64_t bytes,
                      struct open_build_times *t)
{
    memset(t, 0, sizeof(*t));
    struct rt_options o;
    open_options(&o, partitions);
    uint32_t step = open_fd_budget_partitions();
    if (step > partitions)
        step = partitions;
    int rc = 0;
    for (uint32_t lo = 0; rc == 0 && lo < partitions; lo += step) {
        uint32_t hi = partitions - lo > step ? lo + step : partitions;
        rt_engine *e = NULL;
        rc = rt_open(dir, &o, &e);
        uint64_t t0 = bench_now_ns();
        if (rc == 0)
            rc = lo == 0 ? rt_topic_create(e, BENCH_TOPIC, hi)
                         : rt_topic_add_partitions(e, BENCH_TOPIC, hi);
        t->create_s += (double)(bench_now_ns() - t0) / 1e9;
        t0 = bench_now_ns();
        double first = 0;
        if (rc == 0)
            rc = open_fill(e, lo, hi, bytes / partitions * (hi - lo), 1 + lo, &first);
        t->one_each_s += first;
        t->fill_s += (double)(bench_now_ns() - t0) / 1e9;
        if (e) {
            t0 = bench_now_ns();
            int crc = rt_close(e);
            t->close_s += (double)(bench_now_ns() - t0) / 1e9;
            if (rc == 0)
                rc = crc;
        }
        t->steps++;
    }
    return rc;
}

/* A child opens dir, appends a tail, waits 1.5 s (the shards' housekeeping stores each
 * partition's recovery-point tail once it grew a quarter segment, PA9), appends `unsynced_bytes`
 * more and is SIGKILLed (the page cache keeps what it wrote). A crash's open then scans what came
 * after the last tail, not the newest segment. */
static int open_crash(const char *dir, uint32_t partitions, uint64_t tail_bytes,
                      uint64_t unsynced_bytes)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        struct rt_options o;
        open_options(&o, partitions);
        rt_engine *e = NULL;
        /* As many partitions as may be active at once (open_build). */
        uint32_t n = open_fd_budget_partitions();
        if (n > partitions)
            n = partitions;
        if (rt_open(dir, &o, &e) != 0 || open_fill(e, 0, n, tail_bytes, 77, NULL) != 0)
            _exit(1);
        usleep(1500 * 1000);
        if (unsynced_bytes && open_fill(e, 0, n, unsynced_bytes, 91, NULL) != 0)
            _exit(1);
        raise(SIGKILL);
        _exit(2);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -errno;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -ECHILD;
}

static void open_row(const char *label, const char *state, bool cold, uint64_t data_bytes,
                     const char *dir, bool crash, bool small, uint32_t partitions)
{
    char config[40];
    snprintf(config, sizeof(config), "%s %s %s", label, state, cold ? "cold" : "warm");
    struct row *r = row_new("O", "ringtail", config, "O", KIND_SUBJECT);
    struct open_probe_result pr = {0};
    int rc = 0;
    if (!cold)
        rc = open_probe_run(dir, false, crash, small, &pr); /* warms what an open reads */
    if (rc == 0)
        rc = open_probe_run(dir, cold, crash, small, &pr);
    if (rc) {
        row_fail(r, "open probe", rc, dir);
        return;
    }
    r->seconds = pr.open_s;
    r->mb_s = NAN;
    r->bytes = data_bytes;
    double rss_mb = (double)pr.rss_file_kb * 1024 / 1e6;
    char per[160] = "";
    if (partitions > 1 && pr.rss_anon_kb >= 0)
        snprintf(per, sizeof(per), "; RssAnon %.1f KiB and %.2f fds per partition",
                 (double)pr.rss_anon_kb / partitions, (double)pr.fds / partitions);
    if (!isnan(pr.fetch_s) && pr.fetched > 1) {
        size_t used = strlen(per);
        snprintf(per + used, sizeof(per) - used, "; fetch from all %ld: %.3f s", pr.fetched,
                 pr.fetch_s);
    }
    snprintf(r->note, sizeof(r->note),
             "open %.3f s; RssFile after open %.1f MB (%.2f%% of %.2f GB)%s%.3f s%s", pr.open_s,
             rss_mb, 100.0 * rss_mb * 1e6 / (double)data_bytes, (double)data_bytes / 1e9,
             crash ? "; no close: " : "; close ", pr.close_s, per);
    printf("  O %-26s open %8.3f s  RssFile %8.1f MB (%6.2f%% of the data)%s\n", config, pr.open_s,
           rss_mb, 100.0 * rss_mb * 1e6 / (double)data_bytes, per);
    fflush(stdout);
}

/* Bytes free for an unprivileged writer in the file system holding dir. */
static uint64_t disk_free_bytes(const char *dir)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return UINT64_MAX; /* cannot tell: try */
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static void open_case(const char *label, uint32_t partitions, uint64_t bytes)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/open-%s", scratch, label);
    for (char *c = dir + strlen(scratch) + 1; *c; c++)
        if (*c == ' ')
            *c = '-';
    /* The data, the crash tail, segment slack and the rest of the run's scratch: a size that
     * would fill the disk is skipped and said so, not attempted. */
    uint64_t need = bytes + bytes / 4 + (256u << 20);
    uint64_t free_bytes = disk_free_bytes(scratch);
    if (free_bytes < need) {
        struct row *r = row_new("O", "ringtail", label, "O", KIND_NA);
        snprintf(r->note, sizeof(r->note), "skipped: needs %.1f GB of disk, %.1f GB free",
                 (double)need / 1e9, (double)free_bytes / 1e9);
        printf("  O %-26s skipped: needs %.1f GB of disk, %.1f GB free\n", label,
               (double)need / 1e9, (double)free_bytes / 1e9);
        return;
    }
    progress_phase(label);
    struct open_build_times bt;
    int rc = open_build(dir, partitions, bytes, &bt);
    if (rc) {
        struct row *r = row_new("O", "ringtail", label, "O", KIND_SUBJECT);
        row_fail(r, "build", rc, rt_error_detail());
        bench_rmtree(dir);
        return;
    }
    if (partitions > 1) {
        char config[40];
        snprintf(config, sizeof(config), "%s create", label);
        struct row *r = row_new("O", "ringtail", config, "O", KIND_NA);
        r->seconds = bt.create_s;
        char staged[96] = "";
        if (bt.steps > 1)
            snprintf(staged, sizeof(staged),
                     "; built in %u sessions of <= %u partitions (4 fds per active partition)",
                     bt.steps, open_fd_budget_partitions());
        snprintf(r->note, sizeof(r->note),
                 "create %.3f s (%.0f partitions/s); one batch to each %.3f s; close after the "
                 "fill %.3f s (%.0f partitions/s)%s",
                 bt.create_s, partitions / bt.create_s, bt.one_each_s, bt.close_s,
                 partitions / bt.close_s, staged);
        printf("  O %-26s %s\n", config, r->note);
        fflush(stdout);
    }
    bool small = partitions > 1;
    open_row(label, "clean", false, bytes, dir, false, small, partitions);
    open_row(label, "clean", true, bytes, dir, false, small, partitions);
    uint64_t tail = opt.quick ? 8u << 20 : 64u << 20;
    uint64_t unsynced = tail / 8;
    rc = open_crash(dir, partitions, tail, unsynced);
    if (rc) {
        struct row *r = row_new("O", "ringtail", label, "O", KIND_SUBJECT);
        row_fail(r, "crash child", rc, "");
    } else {
        char state[32];
        snprintf(state, sizeof(state), "kill+%uM+%uM", (unsigned)(tail >> 20),
                 (unsigned)(unsynced >> 20));
        open_row(label, state, false, bytes + tail + unsynced, dir, true, small, partitions);
        open_row(label, state, true, bytes + tail + unsynced, dir, true, small, partitions);
    }
    bench_rmtree(dir);
}

/* Allocated bytes (st_blocks) of every file under dir, two levels down. */
static uint64_t disk_used_bytes(const char *dir, int depth)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == 0 || de->d_name[1] == '.'))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        sum += (uint64_t)st.st_blocks * 512;
        if (S_ISDIR(st.st_mode) && depth < 2)
            sum += disk_used_bytes(path, depth + 1);
    }
    closedir(d);
    return sum;
}

/* Disk bytes per empty partition (issue 21 F2, item 8): a topic of n partitions at the default
 * options, measured while open (active segments extended sparsely, index blocks reserved) and
 * after a clean close (trimmed), less the directory's bytes before the topic existed. */
static void empty_partition_row(uint32_t n)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/open-empty", scratch);
    progress_phase("empty partitions");
    struct row *r = row_new("O", "ringtail", "empty partition disk", "O", KIND_NA);
    struct rt_options o;
    rt_options_init(&o);
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    uint64_t before = rc == 0 ? disk_used_bytes(dir, 0) : 0;
    double t0 = ((double)bench_now_ns() / 1e9);
    if (rc == 0)
        rc = rt_topic_create(e, BENCH_TOPIC, n);
    double create_s = ((double)bench_now_ns() / 1e9) - t0;
    uint64_t open_bytes = rc == 0 ? disk_used_bytes(dir, 0) : 0;
    double close_s = 0;
    if (e) {
        t0 = ((double)bench_now_ns() / 1e9);
        int crc = rt_close(e);
        close_s = ((double)bench_now_ns() / 1e9) - t0;
        if (rc == 0)
            rc = crc;
    }
    if (rc) {
        row_fail(r, "empty topic", rc, rt_error_detail());
        bench_rmtree(dir);
        return;
    }
    uint64_t closed_bytes = disk_used_bytes(dir, 0);
    r->seconds = create_s;
    r->bytes = open_bytes - before;
    snprintf(r->note, sizeof(r->note),
             "%u partitions: %.1f KiB per partition open, %.1f KiB closed; create %.3f s "
             "(%.0f partitions/s), close %.3f s (%.0f partitions/s)",
             n, (double)(open_bytes - before) / n / 1024,
             (double)(closed_bytes - before) / n / 1024, create_s, n / create_s, close_s,
             n / close_s);
    printf("  O %-26s %s\n", "empty partition disk", r->note);
    fflush(stdout);
    bench_rmtree(dir);
}

static void run_open(void)
{
    for (uint32_t i = 0; i < opt.open_size_count; i++) {
        char label[32];
        if (opt.open_sizes[i] % 1000000000ull == 0)
            snprintf(label, sizeof(label), "%" PRIu64 "GB",
                     (uint64_t)(opt.open_sizes[i] / 1000000000ull));
        else
            snprintf(label, sizeof(label), "%" PRIu64 "MB", (uint64_t)(opt.open_sizes[i] >> 20));
        open_case(label, 1, opt.open_sizes[i]);
    }
    for (uint32_t i = 0; i < opt.open_partition_count; i++) {
        char label[32];
        uint32_t n = opt.open_partitions_list[i];
        /* 1 or 2 sealed 1 MiB segments each up to 1 000 partitions; beyond, 256 KiB each (one
         * segment: 10 000 partitions then hold 2.5 GB). */
        uint64_t per = n > 1000 ? 256u << 10 : opt.quick ? 1536u << 10 : 3u << 20;
        snprintf(label, sizeof(label), "%up", n);
        open_case(label, n, per * n);
    }
    empty_partition_row(opt.quick ? 100 : 1000);
}

/* ---------------------------------------------------------------------------------------- */
/* C: the log cleaner (bench_clean.c)                                                        */
/* ---------------------------------------------------------------------------------------- */

/* The cleaner's limit: the `before` bytes read sequentially (1 MiB preads, every byte touched)
 * from a file written just before (in the page cache, as the cleaner's input is), then the
 * `after` bytes written by limit_write_pwritev with `syncs` fdatasyncs (the cleaner fdatasyncs
 * each segment it writes). MB/s is `before` bytes over both times, as the cleaner's row. */
static void clean_limit_row(uint64_t before, uint64_t after, uint32_t syncs)
{
    if (opt.no_limit)
        return;
    struct row *r = row_new("C", "limit", "cleaner throughput", "C", KIND_LIMIT);
    char src[PATH_MAX], dst[PATH_MAX];
    system_dir(src, sizeof(src), "C", "limit", "src");
    system_dir(dst, sizeof(dst), "C", "limit", "dst");
    bench_rmtree(src);
    bench_rmtree(dst);
    const size_t chunk = 64u << 10;
    uint64_t in_chunks = (before + chunk - 1) / chunk, out_chunks = (after + chunk - 1) / chunk;
    struct limit_result lr = {0};
    int rc = bench_mkdir(src);
    if (rc == 0)
        rc = bench_mkdir(dst);
    if (rc == 0) /* the input, untimed */
        rc = limit_write_pwritev(src, 1, in_chunks, chunk, 0, opt.limit_queue_depth, false, &lr);
    if (rc) {
        row_fail(r, "writing the input", rc, src);
        goto out;
    }
    progress_phase("C limit read + write");
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/limit-0.dat", src);
    uint8_t *buf = malloc(1u << 20);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!buf || fd < 0) {
        row_fail(r, "open", fd < 0 ? -errno : -ENOMEM, path);
        free(buf);
        if (fd >= 0)
            close(fd);
        goto out;
    }
    uint64_t t0 = bench_now_ns(), sum = 0, at = 0;
    while (at < in_chunks * chunk) {
        ssize_t n = pread(fd, buf, 1u << 20, (off_t)at);
        if (n <= 0)
            break;
        sum += bench_checksum(buf, (size_t)n);
        at += (uint64_t)n;
    }
    double read_s = (double)(bench_now_ns() - t0) / 1e9;
    close(fd);
    free(buf);
    if (out_chunks)
        rc = limit_write_pwritev(dst, 1, out_chunks, chunk, syncs ? syncs : 1,
                                 opt.limit_queue_depth, false, &lr);
    else
        lr.seconds = 0;
    if (rc) {
        row_fail(r, "pwritev writes", rc, dst);
        goto out;
    }
    r->seconds = read_s + lr.seconds;
    r->bytes = before;
    r->mb_s = (double)before / 1e6 / r->seconds;
    snprintf(r->note, sizeof(r->note),
             "read %.1f MB (%.3f s, sum %" PRIx64 ") + write %.1f MB, %u fdatasync(s) (%.3f s)",
             (double)at / 1e6, read_s, sum & 0xffff, (double)(out_chunks * chunk) / 1e6,
             syncs ? syncs : 1, lr.seconds);
out:
    if (!opt.keep) {
        bench_rmtree(src);
        bench_rmtree(dst);
    }
}

static void clean_latency_row(const char *config, bool append, const struct clean_latency *l)
{
    struct row *r = row_new("C", "ringtail", config, "C-live", KIND_NA);
    r->mb_s = NAN;
    r->has_latency = true;
    r->p50_us = append ? l->append_p50_us : l->fetch_p50_us;
    r->p99_us = append ? l->append_p99_us : l->fetch_p99_us;
    r->p999_us = NAN;
    if (append)
        snprintf(r->note, sizeof(r->note),
                 "%" PRIu64 " keyed 1 KiB rt_appends to the partition, 1 per 500 us; max %.0f us",
                 l->appends, l->append_max_us);
    else
        snprintf(r->note, sizeof(r->note),
                 "%" PRIu64 " high watermark + fetch of the newest record, 1 per 200 us",
                 l->fetches);
    printf("  C %-22s p50 %.0f us  p99 %.0f us  (%s)\n", config, r->p50_us, r->p99_us, r->note);
}

static void run_clean(void)
{
    char dir[PATH_MAX];
    system_dir(dir, sizeof(dir), "C", "ringtail", "");
    bench_rmtree(dir);
    struct row *r = row_new("C", "ringtail", "cleaner throughput", "C", KIND_SUBJECT);
    int rc = bench_mkdir(dir);
    if (rc) {
        row_fail(r, "mkdir", rc, dir);
        return;
    }
    struct clean_result cr;
    mem_reset_peak();
    uint64_t heap0 = mem_heap_bytes(NULL);
    rc = clean_run(dir, opt.clean_bytes, 4u << 20, opt.quick ? 0.3 : 1.0, &cr);
    if (rc) {
        row_fail(r, "clean", rc, cr.errmsg);
    } else {
        r->seconds = cr.seconds;
        r->bytes = cr.bytes_before;
        r->records = cr.records_after;
        r->mb_s = (double)cr.bytes_before / 1e6 / cr.seconds;
        r->rec_s = (double)cr.records_written / cr.seconds;
        snprintf(r->note, sizeof(r->note),
                 "%.1f MB in %u segments -> %.1f MB in %u; %" PRIu64 " of %" PRIu64
                 " records readable after (%" PRIu64 " keys, %" PRIu64 " live appends); %.3f s",
                 (double)cr.bytes_before / 1e6, cr.segments_before, (double)cr.bytes_after / 1e6,
                 cr.segments_after, cr.records_after, cr.records_written + cr.records_appended_live,
                 cr.keys, cr.records_appended_live, cr.seconds);
        printf("  C %-22s %.1f MB/s  (%s)\n", "cleaner throughput", r->mb_s, r->note);
    }
    row_memory(r, heap0);
    if (!opt.keep)
        bench_rmtree(dir);
    if (rc)
        return;
    clean_limit_row(cr.bytes_before, cr.bytes_after, cr.segments_after);
    clean_latency_row("append idle", true, &cr.idle);
    clean_latency_row("append cleaning", true, &cr.cleaning);
    clean_latency_row("fetch newest idle", false, &cr.idle);
    clean_latency_row("fetch newest cleaning", false, &cr.cleaning);
}

static bool limit_matches(const struct row *limit, const struct row *r)
{
    return strcmp(limit->group, r->group) == 0 || strcmp(limit->group, r->workload) == 0;
}

static void compute_ratios(void)
{
    for (uint32_t i = 0; i < row_count; i++) {
        struct row *r = &rows[i];
        if (r->kind == KIND_NA || r->kind == KIND_LIMIT || r->kind == KIND_WAY ||
            r->kind == KIND_REPEAT || isnan(r->mb_s) || strcmp(r->workload, "F") == 0)
            continue;
        double best_peer = NAN, limit = NAN;
        for (uint32_t j = 0; j < row_count; j++) {
            const struct row *o = &rows[j];
            if (isnan(o->mb_s) || o->mb_s <= 0)
                continue;
            if (o->kind == KIND_LIMIT && limit_matches(o, r) && (isnan(limit) || o->mb_s > limit))
                limit = o->mb_s; /* the better limit (pre-written or fallocate'd files) */
            if (o->kind == KIND_PEER && strcmp(o->group, r->group) == 0 &&
                (isnan(best_peer) || o->mb_s > best_peer))
                best_peer = o->mb_s;
        }
        if (!isnan(limit))
            r->ratio_limit = r->mb_s / limit;
        if (r->kind == KIND_SUBJECT && !isnan(best_peer))
            r->ratio_peer = r->mb_s / best_peer;
    }
}

static void fmt(char *buf, size_t n, double v, const char *f)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, f, v);
}

static void print_table(FILE *out)
{
    fprintf(out, "\n%-3s %-16s %-22s %9s %7s %7s %10s %9s %9s %9s %8s %8s %7s %7s %7s  %s\n", "wl",
            "system", "config", "MB/s", "xlimit", "xpeer", "rec/s", "p50 us", "p99 us", "p99.9 us",
            "sync/s", "rec/sync", "anonMB", "heapMB", "heapPk", "note");
    for (uint32_t i = 0; i < row_count; i++) {
        const struct row *r = &rows[i];
        if (r->kind == KIND_NA && strcmp(r->group, "W1-load") == 0)
            continue;
        char mb[16], rl[16], rp[16], rs[16], p50[16], p99[16], p999[16], ss[16], rps[16], an[16],
            hp[16], hk[16];
        fmt(mb, sizeof(mb), r->mb_s, "%.1f");
        fmt(rl, sizeof(rl), r->ratio_limit, "%.2f");
        fmt(rp, sizeof(rp), r->ratio_peer, "%.2f");
        fmt(rs, sizeof(rs), r->kind == KIND_NA ? NAN : r->rec_s, "%.0f");
        fmt(p50, sizeof(p50), r->has_latency ? r->p50_us : NAN, "%.0f");
        fmt(p99, sizeof(p99), r->has_latency ? r->p99_us : NAN, "%.0f");
        fmt(p999, sizeof(p999), r->has_latency ? r->p999_us : NAN, "%.0f");
        fmt(ss, sizeof(ss), r->has_sync ? r->syncs_s : NAN, "%.0f");
        fmt(rps, sizeof(rps), r->has_sync ? r->rec_per_sync : NAN, "%.1f");
        fmt(an, sizeof(an), r->anon_peak_mb, "%.0f");
        fmt(hp, sizeof(hp), r->heap_mb, "%.1f");
        fmt(hk, sizeof(hk), r->heap_peak_mb, "%.1f");
        if (strcmp(r->workload, "F") == 0 ||
            strcmp(r->workload, "H") == 0) { /* calls/s; ns per call in the note */
            fmt(mb, sizeof(mb), NAN, "");
            fmt(p50, sizeof(p50), NAN, "");
            fmt(rl, sizeof(rl), NAN, "");
        }
        fprintf(out, "%-3s %-16s %-22s %9s %7s %7s %10s %9s %9s %9s %8s %8s %7s %7s %7s  %s\n",
                r->workload, r->system, r->config, mb, rl, rp, rs, p50, p99, p999, ss, rps, an, hp,
                hk, r->note);
    }
    fprintf(out,
            "\nMB/s = value bytes (10^6) per second; F rows: rec/s = fetch calls per second"
            " (zero-copy: nothing is read).\nxlimit = MB/s over the limit's; xpeer ="
            " over the best peer's in the same group. anonMB = peak RSS less page cache\n"
            "(RssAnon+RssShmem); heapMB = allocator bytes held at the end of the workload"
            " (before close);\nheapPk = the allocator's peak during it (sampled every 50"
            " ms); both over the workload's start. W3/W4 p50/p99/p99.9 = commit call\n"
            "latency; W4 rec/s = records/s (txn/s in the note); M rows: see the notes; H rows:\n"
            "operations/s, and per operation the time, allocator calls and bytes asked\n"
            "(jemalloc's nrequests over every size class, whole process).\n");
}

static const struct row *find_row(const char *workload, const char *system, const char *config)
{
    for (uint32_t i = 0; i < row_count; i++)
        if (strcmp(rows[i].workload, workload) == 0 && strcmp(rows[i].system, system) == 0 &&
            strcmp(rows[i].config, config) == 0)
            return &rows[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* goals (issue 14 item 6): each a ratio (or a size) measured in this run, met or MISSED       */
/* ---------------------------------------------------------------------------------------- */

enum goal_state { GOAL_NOT_MEASURED, GOAL_MET, GOAL_MISSED };

struct goal {
    char name[48]; /* fixed-width column of the printed line: at most GOAL_NAME_WIDTH */
    double value;  /* NAN: not measured */
    double target;
    bool at_most; /* met when value <= target; else when value >= target */
    bool percent; /* value and target are percentages ("by" is then in points) */
    enum goal_state state;
    char detail[200]; /* the figures the value comes from, or why it was not measured */
};

#define GOAL_NAME_WIDTH 44
#define GOALS_MAX       48
static struct goal goals[GOALS_MAX];
static uint32_t goal_count;

static struct goal *goal_add(const char *name, double target, bool at_most)
{
    if (goal_count == GOALS_MAX) {
        fprintf(stderr, "ringtail-bench: too many goals\n");
        exit(1);
    }
    struct goal *g = &goals[goal_count++];
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%.*s", GOAL_NAME_WIDTH, name); /* the column's width */
    g->target = target;
    g->at_most = at_most;
    g->value = NAN;
    g->state = GOAL_NOT_MEASURED;
    return g;
}

/* Sets the measured value (NAN leaves it not measured) and the detail line. */
static void goal_set(struct goal *g, double value, const char *detail_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void goal_set(struct goal *g, double value, const char *detail_fmt, ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    vsnprintf(g->detail, sizeof(g->detail), detail_fmt, ap);
    va_end(ap);
    g->value = value;
    if (isnan(value))
        g->state = GOAL_NOT_MEASURED;
    else
        g->state = (g->at_most ? value <= g->target : value >= g->target) ? GOAL_MET : GOAL_MISSED;
}

/* A subject row that ran, or NULL. */
static const struct row *row_ran(const char *workload, const char *system, const char *config)
{
    const struct row *r = find_row(workload, system, config);
    return r && !isnan(r->mb_s) ? r : NULL;
}

/* The best (highest MB/s) row of `kind` in r's group (limits: also those of its workload). */
static const struct row *best_of(const struct row *r, enum row_kind kind)
{
    const struct row *best = NULL;
    for (uint32_t j = 0; j < row_count; j++) {
        const struct row *o = &rows[j];
        if (o->kind != kind || isnan(o->mb_s) || o->mb_s <= 0)
            continue;
        bool same = kind == KIND_LIMIT ? limit_matches(o, r) : strcmp(o->group, r->group) == 0;
        if (same && (!best || o->mb_s > best->mb_s))
            best = o;
    }
    return best;
}

/* Marks g not measured because a row is missing: it failed (the row says why) or never ran
 * (which options leave it out: `how`). */
static void goal_absent(struct goal *g, const char *workload, const char *system,
                        const char *config, const char *how)
{
    const struct row *r = find_row(workload, system, config);
    goal_set(g, NAN, "%s %s %s %s", workload, system, config, r ? "failed (see its row)" : how);
}

/* W1 over its best limit row (issue 27 item 4): through rt_producer_send >= 0.4 of it (about
 * 250 ns per 1 KiB record, encoding and CRC included), through rt_append_batch of ready batches
 * >= 0.9; every other W1 subject row (rt_append) against 0.9 as well. */
static void goals_w1(void)
{
    for (uint32_t i = 0; i < row_count; i++) {
        const struct row *r = &rows[i];
        if (strcmp(r->workload, "W1") != 0 || strcmp(r->system, "ringtail") != 0 ||
            r->kind != KIND_SUBJECT)
            continue;
        bool producer = r->config[0] == 0;
        char name[48];
        snprintf(name, sizeof(name), "W1 %.16s / write limit",
                 producer ? "rt_producer_send" : r->config);
        struct goal *g = goal_add(name, producer ? 0.4 : 0.9, false);
        const struct row *l = isnan(r->mb_s) ? NULL : best_of(r, KIND_LIMIT);
        if (isnan(r->mb_s))
            goal_set(g, NAN, "W1 ringtail %s failed (see its row)", r->config);
        else if (!l)
            goal_set(g, NAN, "no W1 limit row (--no-limit?)");
        else
            goal_set(g, r->mb_s / l->mb_s,
                     "%.1f MB/s = %.0f ns/record; the limit: %.1f MB/s (%s) = %.0f ns/record",
                     r->mb_s, 1e9 / r->rec_s, l->mb_s, l->way, 1e9 / l->rec_s);
    }
    if (!row_ran("W1", "ringtail", ""))
        goal_absent(goal_add("W1 rt_producer_send / write limit", 0.4, false), "W1", "ringtail", "",
                    "did not run (--only)");
}

static void goals_w2(void)
{
    static const uint32_t peer_at[2] = {1, 16};
    static const double peer_x[2] = {1.5, 3.0};
    for (int k = 0; k < 2; k++) {
        char name[48], config[16];
        snprintf(config, sizeof(config), "p%u", peer_at[k]);
        snprintf(name, sizeof(name), "W2 %s / best peer", config);
        struct goal *g = goal_add(name, peer_x[k], false);
        const struct row *r = row_ran("W2", "ringtail", config);
        const struct row *p = r ? best_of(r, KIND_PEER) : NULL;
        if (!r)
            goal_absent(g, "W2", "ringtail", config, "did not run (--only, --producers)");
        else if (!p)
            goal_set(g, NAN, "no peer ran at W2 %s (it ran outside W2, or --peers)", config);
        else
            goal_set(g, r->ratio_peer, "W2 %s %.1f MB/s; best peer at %s: %s %.1f MB/s", config,
                     r->mb_s, config, p->system, p->mb_s);
    }
    static const uint32_t at[4] = {1, 4, 16, 64};
    for (int k = 0; k < 4; k++) {
        char name[48], config[16];
        snprintf(config, sizeof(config), "p%u", at[k]);
        snprintf(name, sizeof(name), "W2 %s / true limit", config);
        struct goal *g = goal_add(name, 0.8, false);
        const struct row *r = row_ran("W2", "ringtail", config);
        const struct row *l = r ? best_of(r, KIND_LIMIT) : NULL;
        if (!r)
            goal_absent(g, "W2", "ringtail", config, "did not run (--only, --producers)");
        else if (!l)
            goal_set(g, NAN, "no limit row for W2 %s (it ran outside W2, or --no-limit)", config);
        else
            goal_set(g, r->ratio_limit, "W2 %s %.1f MB/s; limit %.1f MB/s, best way: %s", config,
                     r->mb_s, l->mb_s, l->way);
    }
    /* Issue 27 item 6: ringtail's acknowledgement p99 within 1.5x the limit's round p99, where
     * the limit's p99 is the lowest any way of the group reached (its rounds are one write
     * batch + fdatasync: the best an acknowledgement can be). */
    for (int k = 0; k < 4; k++) {
        char name[48], config[16];
        snprintf(config, sizeof(config), "p%u", at[k]);
        snprintf(name, sizeof(name), "W2 %s p99 / limit p99", config);
        struct goal *g = goal_add(name, 1.5, true);
        const struct row *r = row_ran("W2", "ringtail", config);
        const struct row *lw = NULL;
        for (uint32_t j = 0; r && j < row_count; j++) {
            const struct row *o = &rows[j];
            if (o->kind == KIND_WAY && o->has_latency && o->p99_us > 0 &&
                strcmp(o->group, r->group) == 0 && (!lw || o->p99_us < lw->p99_us))
                lw = o;
        }
        if (!r)
            goal_absent(g, "W2", "ringtail", config, "did not run (--only, --producers)");
        else if (!lw)
            goal_set(g, NAN, "no limit round latency for W2 %s (--no-limit?)", config);
        else
            goal_set(g, r->p99_us / lw->p99_us,
                     "ringtail p99 %.0f us (p50 %.0f); limit p99 %.0f us (p50 %.0f), lowest of "
                     "the ways: %s",
                     r->p99_us, r->p50_us, lw->p99_us, lw->p50_us, lw->way);
    }
}

static void goals_w3(void)
{
    struct goal *g = goal_add("W3 txn overhead: 1 - W3/idem (%)", 1.0, true);
    g->percent = true;
    const struct row *t = NULL, *b = NULL;
    for (uint32_t i = 0; i < row_count; i++) {
        if (strcmp(rows[i].workload, "W3") != 0)
            continue;
        if (strstr(rows[i].config, "commit"))
            t = &rows[i];
        else if (strstr(rows[i].config, "idem"))
            b = &rows[i];
    }
    const struct row *absent = !b || isnan(b->mb_s) ? b : t;
    if (!t || !b || isnan(t->mb_s) || isnan(b->mb_s)) {
        goal_absent(g, "W3", "ringtail", absent ? absent->config : "p16", "did not run (--only)");
        return;
    }
    /* comparable only with the same producers, the same bytes and the same cadence */
    if (t->producers != b->producers || t->bytes != b->bytes ||
        t->batches_per_txn != b->batches_per_txn || t->commits != b->commits) {
        goal_set(g, NAN,
                 "runs not comparable: producers %u/%u, bytes %" PRIu64 "/%" PRIu64
                 ", batches per txn %u/%u, commits %" PRIu64 "/%" PRIu64,
                 t->producers, b->producers, t->bytes, b->bytes, t->batches_per_txn,
                 b->batches_per_txn, t->commits, b->commits);
        return;
    }
    char pairs[96] = "";
    size_t used = 0;
    for (uint32_t k = 0; k < opt.w3_pairs && k < W3_PAIRS_MAX && used + 12 < sizeof(pairs); k++)
        if (w3_pair_mb[k][0] > 0 && w3_pair_mb[k][1] > 0)
            used += (size_t)snprintf(pairs + used, sizeof(pairs) - used, "%s%+.1f", used ? " " : "",
                                     100.0 * (1.0 - w3_pair_mb[k][1] / w3_pair_mb[k][0]));
    goal_set(g, 100.0 * (1.0 - t->mb_s / b->mb_s),
             "W3 %.1f MB/s, idem %.1f MB/s; both %u producers, %.1f MB, %" PRIu64
             " commits (flushes) of %u batches each; per pair %s %%",
             t->mb_s, b->mb_s, t->producers, (double)t->bytes / 1e6, t->commits, t->batches_per_txn,
             pairs);
}

static void goals_w4(void)
{
    struct goal *g = goal_add("W4 p1 commit p50 / fdatasync p50", 1.5, true);
    const struct row *r = row_ran("W4", "ringtail", "p1");
    const struct row *fs = find_row("W4", "disk", "4K overwrite+fdatasync");
    if (!r)
        goal_absent(g, "W4", "ringtail", "p1", "did not run (--only, --w4-producers)");
    else if (!fs || !fs->has_latency)
        goal_set(g, NAN, "the overwrite fdatasync probe failed");
    else
        goal_set(g, r->p50_us / fs->p50_us,
                 "commit p50 %.0f us; 4 KiB overwrite + fdatasync p50 %.0f us (row W4 disk 4K "
                 "overwrite+fdatasync)",
                 r->p50_us, fs->p50_us);
    static const uint32_t at[4] = {1, 4, 16, 64};
    for (int k = 0; k < 4; k++) {
        char name[48], config[16];
        snprintf(config, sizeof(config), "p%u", at[k]);
        snprintf(name, sizeof(name), "W4 %s txn/s / RocksDB TransactionDB", config);
        g = goal_add(name, 2.0, false);
        r = row_ran("W4", "ringtail", config);
        const struct row *p = find_row("W4", "rocksdb", config);
        if (!r)
            goal_absent(g, "W4", "ringtail", config, "did not run (--only, --w4-producers)");
        else if (!p || isnan(p->mb_s) || !(p->txn_s > 0))
            goal_set(g, NAN, "W4 rocksdb %s %s", config,
                     opt.peer_rocksdb ? "failed (see its row)" : "did not run (--peers)");
        else if (p->producers != r->producers)
            goal_set(g, NAN, "W4 rows do not pair: %u vs %u producers", r->producers, p->producers);
        else
            goal_set(g, r->txn_s / p->txn_s,
                     "ringtail %.0f txn/s (%" PRIu64 "), RocksDB TransactionDB %.0f txn/s (%" PRIu64
                     "), %u producer(s) each, 10 records per txn",
                     r->txn_s, r->commits, p->txn_s, p->commits, r->producers);
    }
}

static void goals_other(void)
{
    /* R1: read_committed costs (almost) nothing over read_uncommitted */
    const char *touches[2] = {"sum", "hdr"};
    for (int t = 0; t < 2; t++) {
        char c1[40], c2[40], name[48];
        snprintf(c1, sizeof(c1), "read_committed %s", touches[t]);
        snprintf(c2, sizeof(c2), "read_uncommitted %s", touches[t]);
        snprintf(name, sizeof(name), "R1 %s read_committed / read_uncommitted", touches[t]);
        struct goal *g = goal_add(name, 0.98, false);
        const struct row *rc = row_ran("R1", "ringtail", c1), *ru = row_ran("R1", "ringtail", c2);
        if (rc && ru && ru->mb_s > 0)
            goal_set(g, rc->mb_s / ru->mb_s, "%.1f vs %.1f MB/s", rc->mb_s, ru->mb_s);
        else
            goal_absent(g, "R1", "ringtail", rc ? c2 : c1, "did not run (--only)");
    }
    /* F: the fetch call's cost does not grow with the bytes it returns (zero-copy); 25 % for
     * noise: a copying fetch would be ~90x at one batch */
    const char *fetch_cfg[2][2] = {{"100 B, 1 batch", "10240 B, 1 batch"},
                                   {"100 B, 1 MiB", "10240 B, 1 MiB"}};
    for (int m = 0; m < 2; m++) {
        struct goal *g = goal_add(m ? "F 10 KiB / 100 B records, 1 MiB fetch"
                                    : "F 10 KiB / 100 B records, 1-batch fetch",
                                  1.25, true);
        const struct row *a = row_ran("F", "ringtail", fetch_cfg[m][0]);
        const struct row *b = row_ran("F", "ringtail", fetch_cfg[m][1]);
        if (a && b && a->p50_us > 0 && a->records && b->records)
            goal_set(g, b->p50_us / a->p50_us,
                     "%.0f vs %.0f ns per call (%" PRIu64 " vs %" PRIu64 " B returned)", b->p50_us,
                     a->p50_us, b->bytes, a->bytes);
        else
            goal_absent(g, "F", "ringtail", a ? fetch_cfg[m][1] : fetch_cfg[m][0],
                        "did not run (--only)");
    }
    /* S: the broker over loopback against the engine in process and against TCP itself */
    struct goal *g = goal_add("S produce p16 / in-process W2 p16", 0.8, false);
    const struct row *r = row_ran("S", "serve", "produce p16");
    if (r && !isnan(r->ratio_limit))
        goal_set(g, r->ratio_limit, "serve %.1f MB/s (librdkafka, acks=all)", r->mb_s);
    else
        goal_absent(g, "S", "serve", "produce p16", "did not run (--only)");
    /* the consumer path (issue 27 item 5): the best consumer count (and fetch size) of each
     * client, from the server with its default --zero-copy true */
    for (int thin = 1; thin >= 0; thin--) {
        const struct row *best = NULL;
        for (uint32_t i = 0; i < row_count; i++)
            if (strcmp(rows[i].workload, "S") == 0 && strcmp(rows[i].system, "consume") == 0 &&
                strncmp(rows[i].config, thin ? "fetch c" : "rdkafka c", thin ? 7 : 9) == 0 &&
                !strstr(rows[i].config, ", zc ") && !isnan(rows[i].ratio_limit) &&
                (!best || rows[i].ratio_limit > best->ratio_limit))
                best = &rows[i];
        g = goal_add(thin ? "S consume thin fetch / loopback, best N"
                          : "S consume librdkafka / loopback, best N",
                     0.8, false);
        if (best)
            goal_set(g, best->ratio_limit, "%s: %.1f MB/s", best->config, best->mb_s);
        else
            goal_absent(g, "S", "consume", thin ? "fetch c1" : "rdkafka c1",
                        "did not run (--only)");
    }
    g = goal_add("S consume server CPU s/GB, zero copy", 0.1, true);
    if (!isnan(consume_server_s_gb[0]))
        goal_set(g, consume_server_s_gb[0],
                 "4 thin clients; --zero-copy sendmsg %.3f, false %.3f; a bare sendfile "
                 "sender %.3f",
                 consume_server_s_gb[2], consume_server_s_gb[1], consume_floor_s_gb);
    else
        goal_absent(g, "S", "consume", "fetch c4", "did not run (--only)");
    g = goal_add("S consume / loopback limit", 0.8, false);
    r = row_ran("S", "serve", "consume read_committed");
    if (r && !isnan(r->ratio_limit))
        goal_set(g, r->ratio_limit, "serve %.1f MB/s (librdkafka read_committed)", r->mb_s);
    else
        goal_absent(g, "S", "serve", "consume read_committed", "did not run (--only)");
    /* CL: replication's cost (issue 24 item 6): RF 3 at acks=all against RF 1 at acks=all,
     * same producers, same values, same three processes */
    g = goal_add("CL produce RF3 / RF1, acks=all", 0.5, false);
    r = row_ran("CL", "cluster", "RF3 acks=all");
    const struct row *rf1 = row_ran("CL", "cluster", "RF1 acks=all");
    if (r && rf1 && rf1->mb_s > 0)
        goal_set(g, r->mb_s / rf1->mb_s, "RF3 %.1f MB/s, RF1 %.1f MB/s (3 nodes, loopback)",
                 r->mb_s, rf1->mb_s);
    else
        goal_absent(g, "CL", "cluster", r ? "RF1 acks=all" : "RF3 acks=all",
                    "did not run (--only)");
    /* heap */
    g = goal_add("engine heap peak, W2 p64 (MB)", 64 * 1.048576, true);
    r = row_ran("W2", "ringtail", "p64");
    if (r && !isnan(r->heap_peak_mb))
        goal_set(g, r->heap_peak_mb, "64 producers x 4 partitions, rt_append; target 64 MiB");
    else
        goal_absent(g, "W2", "ringtail", "p64", "did not run (--only, --producers)");
    const struct row *churn = NULL, *live = NULL;
    for (uint32_t i = 0; i < row_count; i++) {
        if (strcmp(rows[i].workload, "M") != 0)
            continue;
        if (strstr(rows[i].config, "short-lived"))
            churn = &rows[i];
        else if (strstr(rows[i].config, "live producers"))
            live = &rows[i];
    }
    g = goal_add("M id churn heap growth, 2nd half (MB)", NAN, true);
    if (churn && !isnan(churn->growth_2nd_mb)) {
        /* plateau: the second half grew by under 5 % of the heap at the end (+1 MB) */
        g->target = churn->growth_bound_mb;
        goal_set(g, fabs(churn->growth_2nd_mb), "%s: %+.2f MB in the 2nd half of the ids",
                 churn->config, churn->growth_2nd_mb);
    } else {
        g->target = 1.0;
        goal_absent(g, "M", "ringtail", churn ? churn->config : "(short-lived ids)",
                    "did not run (--only)");
    }
    g = goal_add("M open producer heap (KiB)", 32, true);
    if (live && !isnan(live->heap_open_per_item))
        goal_set(g, live->heap_open_per_item / 1024, "%s, idle after one record each",
                 live->config);
    else
        goal_absent(g, "M", "ringtail", live ? live->config : "(live producers)",
                    "did not run (--only)");
    /* "An open producer costs no thread": the threads the open producers add all together, at
     * most the engine's shared sender pool (2 threads, engine/client/sender_pool.h), however
     * many producers are open. */
    g = goal_add("M threads added by all open producers", 2, true);
    if (live && !isnan(live->threads_per_item))
        goal_set(g, live->threads_per_item * (double)live->records,
                 "%s: %.4f threads per producer; the sender pool's minimum is 2", live->config,
                 live->threads_per_item);
    else
        goal_absent(g, "M", "ringtail", live ? live->config : "(live producers)",
                    "did not run (--only)");
}

/* The self-check (issue 27 item 1, bench_check.c): every row with a ratio to a write limit
 * (W1, W2: the groups whose limit is the best of the ways) at or below 1.0, or within the
 * limit's measured noise (BCK2); else a line naming the row, on stdout and stderr, and a failure
 * (non-zero exit, BCK1). R1's limit (memory bandwidth) is left out: its "hdr" rows touch only
 * headers and so read less than the value bytes their MB/s counts. With --self-check warn (the
 * CI smoke run, whose 0.1 s rows are noise) a failure is printed the same and not counted. */
static void selfcheck(FILE *out)
{
    fprintf(out, "\nSelf-check (issue 27: no ratio above its limit; the limit is the best way):\n");
    uint32_t judged = 0;
    for (uint32_t i = 0; i < row_count; i++) {
        const struct row *r = &rows[i];
        if ((strcmp(r->workload, "W1") != 0 && strcmp(r->workload, "W2") != 0) ||
            isnan(r->ratio_limit))
            continue;
        const struct row *l = best_of(r, KIND_LIMIT);
        double noise = l ? l->noise : NAN;
        enum bench_check_verdict v = bench_check_ratio(r->ratio_limit, noise);
        char name[96], line[320];
        snprintf(name, sizeof(name), "%s %s%s%s", r->workload, r->system, r->config[0] ? " " : "",
                 r->config);
        bench_check_line(line, sizeof(line), v, name, r->ratio_limit, noise, l ? l->way : "(none)");
        judged++;
        fprintf(out, "  %s\n", line);
        if (v == BENCH_CHECK_FAILED) {
            fprintf(stderr, "ringtail-bench: %s%s\n", line,
                    opt.self_check_warn ? " (--self-check warn: not counted)" : "");
            if (!opt.self_check_warn)
                failures++;
        }
    }
    if (!judged)
        fprintf(out, "  (no W1/W2 row has a ratio to a limit in this run)\n");
}

static void compute_goals(void)
{
    goals_w1();
    goals_w2();
    goals_w3();
    goals_w4();
    goals_other();
}

static const char *goal_state_name(enum goal_state s)
{
    return s == GOAL_MET ? "met" : s == GOAL_MISSED ? "MISSED" : "n/a";
}

/* "by how much" for a missed goal: a factor for ratios and sizes, points for percentages. */
static void goal_by(const struct goal *g, char *buf, size_t n)
{
    buf[0] = 0;
    if (g->state != GOAL_MISSED)
        return;
    if (g->percent)
        snprintf(buf, n, " by %.2f points", fabs(g->value - g->target));
    else if (g->at_most && g->target > 0)
        snprintf(buf, n, " by %.2fx", g->value / g->target);
    else if (!g->at_most && g->value > 0)
        snprintf(buf, n, " by %.2fx", g->target / g->value);
    else
        snprintf(buf, n, " by %.2f", fabs(g->value - g->target));
}

/* One line per goal, fixed columns (tests/cli_bench.sh parses them):
 *   "  <name, 44 wide> <op> <target> <value> <met|MISSED|n/a>[ by <how much>]  (<detail>)" */
static void print_goals(FILE *out)
{
    fprintf(out, "\nGoals (issue 14; measured in this run, reported, never asserted):\n");
    for (uint32_t i = 0; i < goal_count; i++) {
        const struct goal *g = &goals[i];
        char target[24], value[24], by[48];
        snprintf(target, sizeof(target), g->percent ? "%.2f%%" : "%.2f", g->target);
        fmt(value, sizeof(value), g->value, g->percent ? "%.2f%%" : "%.2f");
        goal_by(g, by, sizeof(by));
        fprintf(out, "  %-*s %s %8s %8s  %s%s  (%s)\n", GOAL_NAME_WIDTH, g->name,
                g->at_most ? "<=" : ">=", target, value, goal_state_name(g->state), by, g->detail);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, const char *key, double v, bool comma)
{
    fprintf(f, "\"%s\": ", key);
    if (isnan(v) || isinf(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.6g", v);
    if (comma)
        fputs(", ", f);
}

static const char *kind_name(enum row_kind k)
{
    switch (k) {
    case KIND_SUBJECT:
        return "subject";
    case KIND_LIMIT:
        return "limit";
    case KIND_PEER:
        return "peer";
    case KIND_WAY:
        return "limit_way";
    case KIND_REPEAT:
        return "repeat";
    default:
        return "not_available";
    }
}

static int write_json(const char *path, const char *machine, double total_s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fprintf(f, "{\n  \"tool\": \"ringtail-bench\",\n  \"machine\": ");
    json_str(f, machine);
    fprintf(f, ",\n  \"dir\": ");
    json_str(f, scratch);
    fprintf(f, ",\n  \"fs\": ");
    json_str(f, bench_fs_type(scratch));
    fprintf(f, ",\n  \"quick\": %s,\n  ", opt.quick ? "true" : "false");
    json_num(f, "w1_bytes", (double)opt.w1_bytes, true);
    json_num(f, "r1_bytes", (double)opt.r1_bytes, true);
    json_num(f, "w2_seconds", opt.w2_seconds, true);
    json_num(f, "w3_seconds", opt.w3_seconds, true);
    json_num(f, "w3_txn_batches", opt.w3_txn_batches, true);
    json_num(f, "w3_pairs", opt.w3_pairs, true);
    json_num(f, "w4_seconds", opt.w4_seconds, true);
    json_num(f, "w4_txn_max", (double)opt.w4_txn_max, true);
    json_num(f, "total_seconds", total_s, false);
    fprintf(f, ",\n  \"failures\": %d,\n  \"rows\": [\n", failures);
    bool first = true;
    for (uint32_t i = 0; i < row_count; i++) {
        const struct row *r = &rows[i];
        if (strcmp(r->group, "W1-load") == 0)
            continue;
        fprintf(f, "%s    {\"workload\": ", first ? "" : ",\n");
        first = false;
        json_str(f, r->workload);
        fprintf(f, ", \"system\": ");
        json_str(f, r->system);
        fprintf(f, ", \"config\": ");
        json_str(f, r->config);
        fprintf(f, ", \"group\": ");
        json_str(f, r->group);
        fprintf(f, ", \"kind\": \"%s\", \"available\": %s, ", kind_name(r->kind),
                r->kind == KIND_NA ? "false" : "true");
        fprintf(f, "\"producers\": %u, ", r->producers);
        json_num(f, "mb_per_s", r->mb_s, true);
        json_num(f, "records_per_s", r->rec_s, true);
        json_num(f, "ratio_to_limit", r->ratio_limit, true);
        json_num(f, "ratio_to_best_peer", r->ratio_peer, true);
        if (r->way[0]) {
            fprintf(f, "\"way\": ");
            json_str(f, r->way);
            fprintf(f, ", ");
            json_num(f, "limit_noise", r->noise, true);
        }
        json_num(f, "latency_p50_us", r->has_latency ? r->p50_us : NAN, true);
        json_num(f, "latency_p99_us", r->has_latency ? r->p99_us : NAN, true);
        json_num(f, "latency_p999_us", r->has_latency ? r->p999_us : NAN, true);
        json_num(f, "fdatasyncs_per_s", r->has_sync ? r->syncs_s : NAN, true);
        json_num(f, "records_per_fdatasync", r->has_sync ? r->rec_per_sync : NAN, true);
        json_num(f, "peak_rss_anon_mb", r->anon_peak_mb, true);
        json_num(f, "vm_hwm_mb", r->hwm_mb, true);
        json_num(f, "heap_mb", r->heap_mb, true);
        json_num(f, "heap_peak_mb", r->heap_peak_mb, true);
        json_num(f, "txn_per_s", r->txn_s, true);
        json_num(f, "commit_p50_over_fdatasync_p50", r->commit_x_fsync, true);
        json_num(f, "heap_growth_second_half_mb", r->growth_2nd_mb, true);
        json_num(f, "bytes_per_item", r->bytes_per_item, true);
        json_num(f, "heap_bytes_per_open_producer", r->heap_open_per_item, true);
        json_num(f, "threads_per_open_producer", r->threads_per_item, true);
        json_num(f, "commits",
                 strcmp(r->workload, "W3") == 0 || strcmp(r->workload, "W4") == 0
                     ? (double)r->commits
                     : NAN,
                 true);
        json_num(f, "batches_per_txn", r->batches_per_txn ? (double)r->batches_per_txn : NAN, true);
        json_num(f, "seconds", r->seconds, true);
        json_num(f, "records", (double)r->records, true);
        json_num(f, "bytes", (double)r->bytes, true);
        if (strcmp(r->workload, "F") == 0)
            json_num(f, "ns_per_fetch_call", r->p50_us, true);
        fprintf(f, "\"note\": ");
        json_str(f, r->note);
        fputc('}', f);
    }
    /* the goals, as printed: name, value, target, met (null: not measured) */
    fprintf(f, "\n  ],\n  \"goals\": [\n");
    for (uint32_t i = 0; i < goal_count; i++) {
        const struct goal *g = &goals[i];
        fprintf(f, "%s    {\"name\": ", i ? ",\n" : "");
        json_str(f, g->name);
        fprintf(f, ", ");
        json_num(f, "value", g->value, true);
        json_num(f, "target", g->target, true);
        fprintf(f, "\"comparison\": \"%s\", \"unit\": \"%s\", \"met\": %s, \"detail\": ",
                g->at_most ? "<=" : ">=", g->percent ? "percent" : "plain",
                g->state == GOAL_MET      ? "true"
                : g->state == GOAL_MISSED ? "false"
                                          : "null");
        json_str(f, g->detail);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0 ? 0 : -errno;
}

static double row_mb(const char *w, const char *s, const char *c)
{
    const struct row *r = find_row(w, s, c);
    return r ? r->mb_s : NAN;
}

static double row_p99_ms(const char *w, const char *s, const char *c)
{
    const struct row *r = find_row(w, s, c);
    return r && r->has_latency ? r->p99_us / 1e3 : NAN;
}

static void gp_num(FILE *g, double v)
{
    if (isnan(v) || v <= 0)
        fprintf(g, " NaN");
    else
        fprintf(g, " %.6g", v);
}

static int write_plot(const char *path, const char *machine)
{
    FILE *g = popen("gnuplot", "w");
    if (!g)
        return -errno;
    static const char *systems[] = {"ringtail", "limit", "rocksdb", "lmdb", "sqlite"};
    fprintf(g, "set terminal pngcairo size 1400,1450 font 'sans,10'\nset output '%s'\n", path);
    fprintf(g, "$w2 << EOD\n");
    for (uint32_t k = 0; k < opt.producer_sets; k++) {
        char c[16];
        snprintf(c, sizeof(c), "p%u", opt.producers[k]);
        fprintf(g, "%u", opt.producers[k]);
        for (int s = 0; s < 5; s++)
            gp_num(g, row_mb("W2", systems[s], c));
        for (int s = 0; s < 5; s++)
            gp_num(g, row_p99_ms("W2", systems[s], c));
        fprintf(g, "\n");
    }
    fprintf(g, "EOD\n$bars << EOD\n");
    for (int s = 0; s < 5; s++) {
        double r1 = strcmp(systems[s], "ringtail") == 0
                        ? row_mb("R1", "ringtail", "read_uncommitted sum")
                    : strcmp(systems[s], "limit") == 0 ? row_mb("R1", "limit", "memory bw")
                                                       : row_mb("R1", systems[s], "sum");
        fprintf(g, "%s", systems[s]);
        gp_num(g, row_mb("W1", systems[s], ""));
        gp_num(g, r1);
        fprintf(g, "\n");
    }
    fprintf(g, "EOD\n$w4 << EOD\n");
    const struct row *fs = find_row("W4", "disk", "4K overwrite+fdatasync");
    double fs_ms = fs && fs->has_latency ? fs->p50_us / 1e3 : NAN;
    for (uint32_t k = 0; k < opt.w4_sets; k++) {
        char c[16];
        snprintf(c, sizeof(c), "p%u", opt.w4_producers[k]);
        const struct row *rt = find_row("W4", "ringtail", c), *rd = find_row("W4", "rocksdb", c);
        fprintf(g, "%u", opt.w4_producers[k]);
        gp_num(g, rt ? rt->txn_s : NAN);
        gp_num(g, rd ? rd->txn_s : NAN);
        gp_num(g, rt && rt->has_latency ? rt->p50_us / 1e3 : NAN);
        gp_num(g, rd && rd->has_latency ? rd->p50_us / 1e3 : NAN);
        gp_num(g, fs_ms);
        gp_num(g, fs_ms * 1.5);
        gp_num(g, rd ? 2 * rd->txn_s : NAN);
        fprintf(g, "\n");
    }
    fprintf(g, "EOD\n");
    fprintf(g, "set multiplot layout 3,2 title 'ringtail bench — %s'\n", machine);
    fprintf(g, "set grid\nset key top left\nset logscale x 2\nset logscale y\n"
               "set xlabel 'producers (sync=always, 4 partitions)'\n");
    fprintf(g, "set title 'W2 durable append: MB/s of values'\nset ylabel 'MB/s'\n"
               "plot for [i=2:6] $w2 using 1:i with linespoints lw 2 title "
               "word('ringtail limit rocksdb lmdb sqlite', i-1)\n");
    fprintf(g, "set title 'W2 acknowledgement latency p99 (limit: one fdatasync round)'\n"
               "set ylabel 'ms'\nplot for [i=7:11] $w2 using 1:i with linespoints lw 2 title "
               "word('ringtail limit rocksdb lmdb sqlite', i-6)\n");
    fprintf(g, "set xlabel 'transactional producers (10 records over 2 partitions, sync=always)'\n"
               "set title 'W4 small transactions: committed txn/s (goal: 2x RocksDB)'\n"
               "set ylabel 'txn/s'\nplot $w4 using 1:2 with linespoints lw 2 title 'ringtail', "
               "$w4 using 1:3 with linespoints lw 2 title 'rocksdb TransactionDB', "
               "$w4 using 1:8 with lines dt 2 lc rgb '#888888' title 'goal: 2x rocksdb'\n");
    fprintf(g, "set title 'W4 commit latency p50 (ms) against the overwrite fdatasync p50'\n"
               "set ylabel 'ms'\nplot $w4 using 1:4 with linespoints lw 2 title 'ringtail', "
               "$w4 using 1:5 with linespoints lw 2 title 'rocksdb TransactionDB', "
               "$w4 using 1:6 with lines dt 2 lc rgb '#888888' title 'fdatasync p50', "
               "$w4 using 1:7 with lines dt 3 lc rgb '#aa3377' title 'goal at p1: 1.5x "
               "fdatasync p50'\n");
    fprintf(g, "unset logscale x\nunset xlabel\nset style data histograms\n"
               "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
               "set boxwidth 0.9\nset key top right\n");
    fprintf(g, "set title 'W1 append, sync=none (MB/s)'\nset ylabel 'MB/s'\n"
               "plot $bars using 2:xtic(1) title 'W1' lc rgb '#4477aa'\n");
    fprintf(g, "set title 'R1 reads touching every value byte (MB/s; limit = memory bw)'\n"
               "plot $bars using 3:xtic(1) title 'R1 sum' lc rgb '#228833'\n");
    fprintf(g, "unset multiplot\n");
    int st = pclose(g);
    return st == 0 ? 0 : -EIO;
}

/* ---------------------------------------------------------------------------------------- */
/* main                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static uint64_t parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0) {
        fprintf(stderr, "ringtail-bench: bad size '%s'\n", s);
        exit(2);
    }
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return (uint64_t)v;
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: ringtail bench [OPTIONS]\n"
        "\n"
        "Runs the named workloads in this one process, each beside the disk's own limit\n"
        "(plain io_uring writes with the same chunks and fdatasync count; memory bandwidth\n"
        "for reads) and the peers (RocksDB, LMDB, SQLite), and prints a table of figures\n"
        "with their ratios to the limit and to the best peer.\n"
        "\n"
        "  W1  append, 1 KiB values in 16-record batches, 1 producer, 1 partition, sync=none\n"
        "  W2  durable append, sync=always, 1/4/16/64 producers over 4 partitions\n"
        "  R1  read_committed vs read_uncommitted over one log; value checksum / headers\n"
        "  F   fetch call cost for 100 B vs 10 KiB records\n"
        "  W3  W2 at 16 producers, transactional, a commit per 64 batches (1 MiB); cost\n"
        "      against idempotent producers flushing at the same cadence, same bytes\n"
        "  W4  small transactions (10 records over 2 partitions), 1/4/16/64 producers,\n"
        "      sync=always: txn/s, commit latency vs the disk's fdatasync p50; RocksDB\n"
        "      TransactionDB as the peer\n"
        "  M   memory: producer-id churn (heap plateau), bytes per producer id and per\n"
        "      partition\n"
        "  S   serve: `ringtail serve` with librdkafka producers over loopback (idempotent,\n"
        "      acks=all, 1 and 16) beside in-process W2, and a read_committed consumer\n"
        "      beside the loopback limit (plain TCP, same bytes); the 16-producer\n"
        "      produce and the consume again over an SSL listener (TLS beside plaintext)\n"
        "  S   consume (--only consume): 1, 2, 4 thin Fetch clients and librdkafka\n"
        "      consumers over 8 partitions against the loopback limit (send/recv and\n"
        "      sendfile), server CPU per GB with zero copy, sendmsg and copying\n"
        "  CL  cluster: three `ringtail serve --voters` nodes on 127.0.0.1; produce to a\n"
        "      topic of RF 3 (acks=all, min.insync.replicas 2) beside RF 1 (acks=all and\n"
        "      acks=1), the failover time (leader SIGKILLed -> writes acknowledged again)\n"
        "      and a restarted follower's catch-up rate beside the loopback limit\n"
        "\n"
        "options:\n"
        "  --dir DIR          make the scratch directory under DIR (default: /work or /tmp,\n"
        "                     whichever is a real disk); it is removed afterwards\n"
        "  --quick            small sizes; finishes in well under a minute\n"
        "  --json FILE        write every row as JSON\n"
        "  --plot FILE        write a PNG chart (gnuplot)\n"
        "  --only LIST        comma list of w1,w2,r1,fetch,w3,w4,mem,hot,serve,txnmix,open,\n"
        "                     clean,consume,cluster\n"
        "                     (default: all)\n"
        "  --peers LIST       comma list of rocksdb,lmdb,sqlite or 'none' (default: all)\n"
        "  --w1-bytes N       W1 value bytes (and the peers' R1 data) [1G; quick 32M]\n"
        "  --r1-bytes N       R1 ringtail log size [4G; quick 64M]\n"
        "  --w2-seconds S     each W2 configuration's run time [5; quick 0.5]\n"
        "  --w2-bytes-max N   cap on each W2 configuration's bytes [4G; quick 256M]\n"
        "  --producers LIST   W2 producer counts [1,4,16,64]\n"
        "  --limit-qd N       W1 limit: io_uring writes in flight [32]\n"
        "  --w3-seconds S     each W3 pair's first run; the second then ends as many\n"
        "                     transactions per producer [5; quick 1]\n"
        "  --w3-txn-batches N 16-record batches per W3 transaction (and baseline flush) [64]\n"
        "  --w3-pairs N       W3 (baseline, transactional) pairs, alternating order [2]\n"
        "  --w4-seconds S     each W4 configuration's run time [5; quick 0.5]\n"
        "  --w4-producers L   W4 producer counts [1,4,16,64]\n"
        "  --w4-txn-max N     stop each ringtail W4 configuration after N transactions\n"
        "                     (a bound by work, not time) [0 = no cap]\n"
        "  --mem-producers N  short-lived producer ids in M [1M; quick 50K, producers_max\n"
        "                     8192 so the table fills]\n"
        "  --mem-live N       live producers for bytes per producer id [10K; quick 2K]\n"
        "  --serve-seconds S  each S producer configuration's run time [5; quick 0.5]\n"
        "  --ringtail PATH    the ringtail CLI S starts (default: beside this program)\n"
        "  --open-gb LIST     O: one-partition log sizes in GB [1,4; quick: 64 MB each]\n"
        "  --open-partitions LIST O: many-partition directories [1000,10000; quick 100,1000]\n"
        "  --open-probe-exe P O: the program that times each open (bench/bench_open.c built\n"
        "                     with -DBENCH_OPEN_PROBE_ONLY against another libringtail)\n"
        "  --clean-bytes N    C: the compacted log rt_topic_compact cleans [256M; quick 16M]\n"
        "  --cluster-seconds S CL: each produce run (RF1 and RF3 at acks=all run twice)\n"
        "                     [2; quick 0.5]\n"
        "  --cluster-trials N CL: failover trials, the median reported [3; quick 1]\n"
        "  --cluster-catchup-bytes N CL: values produced while a follower is stopped\n"
        "                     [128M; quick 16M]\n"
        "  --cluster-session-ms MS CL: the nodes' --broker-session-timeout-ms [3000]\n"
        "  --keep             keep the scratch directory\n"
        "  --self-check fail|warn  a ratio above its limit fails the run (exit 1) or only\n"
        "                     prints its SELF-CHECK FAILED line (warn: smoke runs at sizes too\n"
        "                     small for any ratio to mean something) [fail]\n"
        "  --no-limit         skip the limits (for profiling the engine alone)\n"
        "  --w1-rows LIST     W1's ringtail rows: producer,append,batch [all] (to profile\n"
        "                     one path alone)\n"
        "  --io auto|uring|sync  ringtail's io backend in W1/W2 (rt_options.io_backend) [auto]\n"
        "  --help\n"
        "Sizes take K, M or G. Exit status: 0 all ran, 1 a workload failed, 2 usage.\n");
}

static bool list_has(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return true;
    return false;
}

/* A comma list of producer counts (1..1024) into out; NULL = 1,4,16,64. */
static void parse_counts_max(const char *list, const char *flag, uint32_t *out, uint32_t *count,
                             long max)
{
    static const uint32_t def[] = {1, 4, 16, 64};
    if (!list) {
        for (uint32_t i = 0; i < 4; i++)
            out[(*count)++] = def[i];
        return;
    }
    const char *p = list;
    while (*p && *count < PRODUCER_SETS_MAX) {
        long v = strtol(p, (char **)&p, 10);
        if (v < 1 || v > max) {
            fprintf(stderr, "ringtail-bench: bad %s '%s'\n", flag, list);
            exit(2);
        }
        out[(*count)++] = (uint32_t)v;
        if (*p == ',')
            p++;
        else if (*p)
            break;
    }
}

static void parse_counts(const char *list, const char *flag, uint32_t *out, uint32_t *count)
{
    parse_counts_max(list, flag, out, count, 1024);
}

static void parse_args(int argc, char **argv)
{
    enum {
        O_DIR = 256,
        O_QUICK,
        O_JSON,
        O_PLOT,
        O_ONLY,
        O_PEERS,
        O_W1,
        O_R1,
        O_W2S,
        O_W2B,
        O_PROD,
        O_QD,
        O_KEEP,
        O_SELF_CHECK,
        O_NO_LIMIT,
        O_IO,
        O_W1_ROWS,
        O_W3S,
        O_W3B,
        O_W3P,
        O_W4S,
        O_W4P,
        O_MEMP,
        O_MEML,
        O_W4T,
        O_SERVES,
        O_RINGTAIL,
        O_OPEN_GB,
        O_OPEN_PARTITIONS,
        O_OPEN_PROBE_EXE,
        O_CLEAN_BYTES,
        O_CLUSTER_SECONDS,
        O_CLUSTER_TRIALS,
        O_CLUSTER_CATCHUP,
        O_CLUSTER_SESSION,
        O_HELP
    };
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, O_DIR},
        {"quick", no_argument, NULL, O_QUICK},
        {"json", required_argument, NULL, O_JSON},
        {"plot", required_argument, NULL, O_PLOT},
        {"only", required_argument, NULL, O_ONLY},
        {"peers", required_argument, NULL, O_PEERS},
        {"w1-bytes", required_argument, NULL, O_W1},
        {"r1-bytes", required_argument, NULL, O_R1},
        {"w2-seconds", required_argument, NULL, O_W2S},
        {"w2-bytes-max", required_argument, NULL, O_W2B},
        {"producers", required_argument, NULL, O_PROD},
        {"limit-qd", required_argument, NULL, O_QD},
        {"keep", no_argument, NULL, O_KEEP},
        {"self-check", required_argument, NULL, O_SELF_CHECK},
        {"no-limit", no_argument, NULL, O_NO_LIMIT},
        {"io", required_argument, NULL, O_IO},
        {"w1-rows", required_argument, NULL, O_W1_ROWS},
        {"w3-seconds", required_argument, NULL, O_W3S},
        {"w3-txn-batches", required_argument, NULL, O_W3B},
        {"w3-pairs", required_argument, NULL, O_W3P},
        {"w4-seconds", required_argument, NULL, O_W4S},
        {"w4-producers", required_argument, NULL, O_W4P},
        {"mem-producers", required_argument, NULL, O_MEMP},
        {"mem-live", required_argument, NULL, O_MEML},
        {"w4-txn-max", required_argument, NULL, O_W4T},
        {"serve-seconds", required_argument, NULL, O_SERVES},
        {"ringtail", required_argument, NULL, O_RINGTAIL},
        {"open-gb", required_argument, NULL, O_OPEN_GB},
        {"open-partitions", required_argument, NULL, O_OPEN_PARTITIONS},
        {"open-probe-exe", required_argument, NULL, O_OPEN_PROBE_EXE},
        {"clean-bytes", required_argument, NULL, O_CLEAN_BYTES},
        {"cluster-seconds", required_argument, NULL, O_CLUSTER_SECONDS},
        {"cluster-trials", required_argument, NULL, O_CLUSTER_TRIALS},
        {"cluster-catchup-bytes", required_argument, NULL, O_CLUSTER_CATCHUP},
        {"cluster-session-ms", required_argument, NULL, O_CLUSTER_SESSION},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *only = NULL, *peers = NULL, *producers = NULL, *w4producers = NULL;
    const char *open_gb = NULL;
    const char *open_parts = NULL;
    uint64_t w1 = 0, r1 = 0, w2b = 0, memp = 0, meml = 0, w3b = 0;
    int64_t w4t = -1;
    double w2s = 0, w3s = 0, w4s = 0, serves = 0;
    opt.limit_queue_depth = 32;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_DIR:
            opt.dir_parent = optarg;
            break;
        case O_QUICK:
            opt.quick = true;
            break;
        case O_JSON:
            opt.json_path = optarg;
            break;
        case O_PLOT:
            opt.plot_path = optarg;
            break;
        case O_ONLY:
            only = optarg;
            break;
        case O_PEERS:
            peers = optarg;
            break;
        case O_W1:
            w1 = parse_size(optarg);
            break;
        case O_R1:
            r1 = parse_size(optarg);
            break;
        case O_W2S:
            w2s = atof(optarg);
            break;
        case O_W2B:
            w2b = parse_size(optarg);
            break;
        case O_PROD:
            producers = optarg;
            break;
        case O_QD:
            opt.limit_queue_depth = (uint32_t)atoi(optarg);
            if (opt.limit_queue_depth == 0 || opt.limit_queue_depth > 512) {
                fprintf(stderr, "ringtail-bench: --limit-qd must be 1..512\n");
                exit(2);
            }
            break;
        case O_KEEP:
            opt.keep = true;
            break;
        case O_SELF_CHECK:
            if (strcmp(optarg, "warn") != 0 && strcmp(optarg, "fail") != 0) {
                fprintf(stderr, "ringtail-bench: --self-check must be fail or warn\n");
                exit(2);
            }
            opt.self_check_warn = strcmp(optarg, "warn") == 0;
            break;
        case O_NO_LIMIT:
            opt.no_limit = true;
            break;
        case O_W1_ROWS:
            opt.w1_rows = optarg;
            break;
        case O_IO:
            if (strcmp(optarg, "auto") == 0)
                bench_io_backend = RT_IO_AUTO;
            else if (strcmp(optarg, "uring") == 0)
                bench_io_backend = RT_IO_URING;
            else if (strcmp(optarg, "sync") == 0)
                bench_io_backend = RT_IO_SYNC;
            else {
                fprintf(stderr, "ringtail-bench: --io must be auto, uring or sync\n");
                exit(2);
            }
            break;
        case O_W3S:
            w3s = atof(optarg);
            break;
        case O_W3P:
            opt.w3_pairs = (uint32_t)atoi(optarg);
            if (opt.w3_pairs == 0 || opt.w3_pairs > W3_PAIRS_MAX) {
                fprintf(stderr, "ringtail-bench: --w3-pairs must be 1..%d\n", W3_PAIRS_MAX);
                exit(2);
            }
            break;
        case O_W3B:
            w3b = parse_size(optarg);
            if (w3b == 0 || w3b > 4096) {
                fprintf(stderr, "ringtail-bench: --w3-txn-batches must be 1..4096\n");
                exit(2);
            }
            break;
        case O_W4S:
            w4s = atof(optarg);
            break;
        case O_W4P:
            w4producers = optarg;
            break;
        case O_MEMP:
            memp = parse_size(optarg);
            break;
        case O_MEML:
            meml = parse_size(optarg);
            break;
        case O_W4T:
            w4t = (int64_t)parse_size(optarg);
            break;
        case O_SERVES:
            serves = atof(optarg);
            break;
        case O_RINGTAIL:
            opt.ringtail_path = optarg;
            break;
        case O_OPEN_GB:
            open_gb = optarg;
            break;
        case O_OPEN_PARTITIONS:
            open_parts = optarg;
            break;
        case O_OPEN_PROBE_EXE:
            opt.open_probe_exe = optarg;
            break;
        case O_CLEAN_BYTES:
            opt.clean_bytes = parse_size(optarg);
            break;
        case O_CLUSTER_SECONDS:
            opt.cluster_seconds = atof(optarg);
            break;
        case O_CLUSTER_TRIALS:
            opt.cluster_trials = (uint32_t)atoi(optarg);
            if (opt.cluster_trials < 1 || opt.cluster_trials > 15) {
                fprintf(stderr, "ringtail-bench: --cluster-trials needs 1..15\n");
                exit(2);
            }
            break;
        case O_CLUSTER_CATCHUP:
            opt.cluster_catchup_bytes = parse_size(optarg);
            break;
        case O_CLUSTER_SESSION:
            opt.cluster_session_ms = (uint32_t)atoi(optarg);
            if (opt.cluster_session_ms < 500 || opt.cluster_session_ms > 60000) {
                fprintf(stderr, "ringtail-bench: --cluster-session-ms needs 500..60000\n");
                exit(2);
            }
            break;
        case 'h':
        case O_HELP:
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ringtail-bench: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        exit(2);
    }
    opt.run_w1 = !only || list_has(only, "w1");
    opt.run_w2 = !only || list_has(only, "w2");
    opt.run_r1 = !only || list_has(only, "r1");
    opt.run_fetch = !only || list_has(only, "fetch");
    opt.run_w3 = !only || list_has(only, "w3");
    opt.run_w4 = !only || list_has(only, "w4");
    opt.run_mem = !only || list_has(only, "mem");
    opt.run_hot = !only || list_has(only, "hot");
    opt.run_serve = !only || list_has(only, "serve");
    opt.run_open = !only || list_has(only, "open");
    opt.run_txn_mix = !only || list_has(only, "txnmix");
    opt.run_consume = !only || list_has(only, "consume");
    opt.run_clean = !only || list_has(only, "clean");
    opt.run_cluster = !only || list_has(only, "cluster");
    opt.cluster_seconds = opt.cluster_seconds > 0 ? opt.cluster_seconds : opt.quick ? 0.5 : 2.0;
    if (opt.cluster_trials == 0)
        opt.cluster_trials = opt.quick ? 1 : 3;
    if (opt.cluster_catchup_bytes == 0)
        opt.cluster_catchup_bytes = opt.quick ? 16u << 20 : 128u << 20;
    if (opt.cluster_session_ms == 0)
        opt.cluster_session_ms = 3000;
    if (opt.clean_bytes == 0)
        opt.clean_bytes = opt.quick ? 16u << 20 : 256u << 20;
    opt.serve_seconds = serves > 0 ? serves : opt.quick ? 0.5 : 5.0;
    opt.peer_rocksdb = !peers || list_has(peers, "rocksdb");
    opt.peer_lmdb = !peers || list_has(peers, "lmdb");
    opt.peer_sqlite = !peers || list_has(peers, "sqlite");
    opt.w1_bytes = w1 ? w1 : opt.quick ? 32u << 20 : 1ull << 30;
    opt.r1_bytes = r1 ? r1 : opt.quick ? 64u << 20 : 4ull << 30;
    opt.w2_seconds = w2s > 0 ? w2s : opt.quick ? 0.5 : 5.0;
    opt.w2_bytes_max = w2b ? w2b : opt.quick ? 256u << 20 : 4ull << 30;
    opt.membw_bytes = opt.quick ? 64u << 20 : 1u << 30;
    opt.fetch_log_bytes = opt.quick ? 8u << 20 : 64u << 20;
    opt.fetch_calls = opt.quick ? 20000 : 200000;
    opt.hot_ops = opt.quick ? 20000 : 200000;
    opt.w3_seconds = w3s > 0 ? w3s : opt.quick ? 1.0 : 5.0;
    opt.w4_seconds = w4s > 0 ? w4s : opt.quick ? 0.5 : 5.0;
    opt.fsync_probes = opt.quick ? 100 : 1000;
    /* No cap by default: the compaction roll that once asserted under concurrent commits
     * (docs/bench.md) no longer does; the cap stays for bounding a run by work, not time. */
    opt.w4_txn_max = w4t >= 0 ? (uint64_t)w4t : 0;
    opt.w3_txn_batches = w3b ? (uint32_t)w3b : 64;
    if (opt.w3_pairs == 0)
        opt.w3_pairs = 2;
    opt.mem_producers = memp ? memp : opt.quick ? 50000 : 1000000;
    /* quick: a table small enough that 50k ids fill it, so the plateau shows */
    opt.mem_producers_max = opt.quick && !memp ? 8192 : 0;
    opt.mem_live = meml ? (uint32_t)meml : opt.quick ? 2000 : 10000;
    opt.mem_partitions = opt.quick ? 200 : 1000; /* creating 1000 takes ~20 s here */
    parse_counts(producers, "--producers", opt.producers, &opt.producer_sets);
    parse_counts(w4producers, "--w4-producers", opt.w4_producers, &opt.w4_sets);
    uint32_t gbs[PRODUCER_SETS_MAX];
    uint32_t ngb = 0;
    if (open_gb)
        parse_counts(open_gb, "--open-gb", gbs, &ngb);
    if (ngb == 0) {
        gbs[0] = 1; /* 16 GB is the documented longer run: --open-gb 1,4,16 */
        gbs[1] = 4;
        ngb = 2;
    }
    for (uint32_t i = 0; i < ngb; i++)
        opt.open_sizes[i] = opt.quick ? (uint64_t)gbs[i] << 26 : (uint64_t)gbs[i] * 1000000000ull;
    opt.open_size_count = ngb;
    if (open_parts)
        parse_counts_max(open_parts, "--open-partitions", opt.open_partitions_list,
                         &opt.open_partition_count, 1 << 20);
    if (opt.open_partition_count == 0) {
        opt.open_partitions_list[0] = opt.quick ? 100 : 1000;
        opt.open_partitions_list[1] = opt.quick ? 1000 : 10000;
        opt.open_partition_count = 2;
    }
}

static void machine_string(char *out, size_t n)
{
    char cpu[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 2;
                    p[strcspn(p, "\n")] = 0;
                    snprintf(cpu, sizeof(cpu), "%s", p);
                }
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    uname(&u);
    long mem_mb = sysconf(_SC_PHYS_PAGES) / 1024 * sysconf(_SC_PAGESIZE) / 1024;
    snprintf(out, n, "%s, %ld cores, %ld MB RAM, Linux %s", cpu, sysconf(_SC_NPROCESSORS_ONLN),
             mem_mb, u.release);
}

static int make_scratch(void)
{
    const char *parent = opt.dir_parent;
    if (!parent) {
        const char *cands[] = {"/work", "/tmp"};
        for (int i = 0; i < 2 && !parent; i++)
            if (access(cands[i], W_OK) == 0 && strcmp(bench_fs_type(cands[i]), "tmpfs") != 0)
                parent = cands[i];
        if (!parent)
            parent = "/tmp";
    }
    snprintf(scratch, sizeof(scratch), "%s/ringtail-bench.XXXXXX", parent);
    if (!mkdtemp(scratch)) {
        fprintf(stderr, "ringtail-bench: cannot make a directory under %s: %s\n", parent,
                strerror(errno));
        return -errno;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* Many partitions hold many descriptors (4 per active partition): the soft limit is raised
     * to the hard one, for this process and the probes it starts. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (argc >= 2 && strcmp(argv[1], "--open-probe") == 0)
        return bench_open_probe(argc - 2, argv + 2); /* one timed open, in a fresh process */
    parse_args(argc, argv);
    if (opt.peer_rocksdb)
        peers_enabled[peer_count++] = &sink_rocksdb;
    if (opt.peer_lmdb)
        peers_enabled[peer_count++] = &sink_lmdb;
    if (opt.peer_sqlite)
        peers_enabled[peer_count++] = &sink_sqlite;
    if (make_scratch())
        return 1;
    char machine[512];
    machine_string(machine, sizeof(machine));
    const char *fs = bench_fs_type(scratch);
    uint64_t free_bytes = bench_fs_free_bytes(scratch);
    printf("ringtail-bench: %s\n  scratch %s (%s, %.1f GB free)%s\n", machine, scratch, fs,
           (double)free_bytes / 1e9,
           strcmp(fs, "tmpfs") == 0 ? "  WARNING: tmpfs is memory, not a disk" : "");
    const char *heap_src = NULL;
    mem_heap_bytes(&heap_src);
    printf("  W1 %.0f MB, R1 log %.0f MB, W2 %.1f s per configuration, heap from %s\n",
           (double)opt.w1_bytes / 1e6, (double)opt.r1_bytes / 1e6, opt.w2_seconds, heap_src);
    uint64_t need = opt.r1_bytes + opt.w1_bytes * (peer_count + 1) + opt.w2_bytes_max;
    if (free_bytes && need > free_bytes)
        fprintf(stderr, "ringtail-bench: warning: may need %.1f GB, %.1f GB free\n",
                (double)need / 1e9, (double)free_bytes / 1e9);
    fflush(stdout);
    bench_pool_fill(0x9E3779B97F4A7C15ull);
    uint64_t t0 = bench_now_ns();
    progress_start();
    if (opt.run_w1)
        run_w1();
    if (opt.run_w2)
        run_w2();
    if (opt.run_r1)
        run_r1();
    if (opt.run_fetch)
        run_fetch();
    if (opt.run_w3)
        run_w3();
    if (opt.run_w4)
        run_w4();
    if (opt.run_mem)
        run_mem();
    if (opt.run_hot)
        run_hot();
    if (opt.run_serve)
        run_serve();
    if (opt.run_consume)
        run_consume();
    if (opt.run_open)
        run_open();
    if (opt.run_txn_mix)
        run_txn_mix();
    if (opt.run_clean)
        run_clean();
    if (opt.run_cluster)
        run_cluster();
    progress_stop();
    double total_s = (double)(bench_now_ns() - t0) / 1e9;
    compute_ratios();
    print_table(stdout);
    compute_goals();
    print_goals(stdout);
    selfcheck(stdout);
    printf("\ntotal %.1f s\n", total_s);
    int rc = 0;
    if (opt.json_path && (rc = write_json(opt.json_path, machine, total_s)) != 0) {
        fprintf(stderr, "ringtail-bench: cannot write %s: %s\n", opt.json_path, strerror(-rc));
        failures++;
    }
    if (opt.plot_path && (rc = write_plot(opt.plot_path, machine)) != 0) {
        fprintf(stderr, "ringtail-bench: gnuplot failed writing %s\n", opt.plot_path);
        failures++;
    }
    if (!opt.keep)
        bench_rmtree(scratch);
    else
        printf("kept %s\n", scratch);
    return failures ? 1 : 0;
}

static const char *rd_version(void)
{
    return rd_kafka_version_str();
}
