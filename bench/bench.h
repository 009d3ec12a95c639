/*
 * bench.h — the side-by-side benchmark (`ringtail-bench`, run as `ringtail bench`): named
 * workloads measured in one process run against the disk's own limit (plain io_uring writes with
 * the same chunk sizes and fdatasync cadence, memory bandwidth for reads) and against the stores
 * users would pick instead (RocksDB, LMDB, SQLite from Debian packages).
 *
 * Pieces: bench_util.c (latency histogram, clocks, memory figures, progress line, scratch
 * directories), bench_sinks.c (ringtail and the three peers behind one append/read seam),
 * bench_limit.c (the limits: every way of doing their work), bench_check.c (the self-check),
 * bench_txn.c (transactional workloads W3/W4, the RocksDB TransactionDB peer, the fdatasync
 * probe, the memory probes), bench_serve.c (`ringtail serve` over loopback), bench_cluster.c
 * (three `ringtail serve --voters` nodes: replication's cost), bench_main.c (options, workloads, table, JSON, chart).
 *
 * This program measures and reports; it never asserts a target. It does check its own
 * yardsticks (bench_check.c): a ratio above a limit fails the run, because the limit was then not
 * a limit. It owns no engine logic and links the public API (ringtail.h), plus the engine's batch
 * builder (engine/log/batch.h) to encode W1's ready batches before the clock starts.
 */
#ifndef RT_BENCH_H
#define RT_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ringtail.h"

/* ---- workload shape (the issue's: 1 KiB values, 16 of them per producer batch) ---- */
#define BENCH_VALUE_BYTES       1024
#define BENCH_BATCH_RECORDS     16
#define BENCH_BATCH_VALUE_BYTES (BENCH_VALUE_BYTES * BENCH_BATCH_RECORDS)
#define BENCH_POOL_BYTES        (1u << 20) /* random bytes values are sliced from */
#define BENCH_PARTITIONS_W2     4

/* bench_open.c: `ringtail-bench --open-probe DIR [cold] [crash]`, one timed rt_open. */
int bench_open_probe(int argc, char **argv);

/* ---- clocks ---- */
uint64_t bench_now_ns(void);

/* ---- HDR-style latency histogram: log-linear buckets, 64 per power of two (<= 1.6% error) ---- */
#define HIST_SUB_BITS 6
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  (HIST_SUB * (64 - HIST_SUB_BITS + 1))

struct hist {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t max_ns;
};

void hist_reset(struct hist *h);
void hist_add(struct hist *h, uint64_t value_ns);
void hist_merge(struct hist *into, const struct hist *from);
/* The value at quantile q (0..1), in ns; 0 for an empty histogram. */
double hist_quantile_ns(const struct hist *h, double q);

/* ---- memory figures ---- */
/* Resets the kernel's peak-RSS mark (clear_refs 5) and the sampled anonymous-RSS peak. */
void mem_reset_peak(void);
/* Peak anonymous RSS (RSS less file-backed pages, i.e. less mapped page cache) since the last
 * reset, sampled by the progress thread every 50 ms and at each call, in bytes. */
uint64_t mem_peak_anon_bytes(void);
/* Peak of mem_heap_bytes() since the last reset, sampled with the anonymous RSS. */
uint64_t mem_peak_heap_bytes(void);
/* VmHWM (includes mapped page cache) in bytes. */
uint64_t mem_hwm_bytes(void);
/* Bytes the allocator has handed out: jemalloc "stats.allocated" when jemalloc is linked,
 * else mallinfo2's in-use bytes. *source names which. */
uint64_t mem_heap_bytes(const char **source);
/* Allocations made so far by the whole process and the bytes they asked for (rounded up to
 * jemalloc's size classes): the sum over every small bin and large extent class of
 * nrequests (x the class size). 0, or -1 when jemalloc is not linked. Costs a stats refresh
 * (~100 us): call it around a measured loop, not inside it. */
int mem_alloc_totals(uint64_t *count_out, uint64_t *bytes_out);

/* ---- progress line (stderr) and the RSS sampler; one background thread ---- */
void progress_start(void);
void progress_stop(void);
void progress_phase(const char *label); /* resets the byte counter */
void progress_add(uint64_t bytes);

/* ---- payload ---- */
extern uint8_t bench_pool[BENCH_POOL_BYTES + BENCH_VALUE_BYTES * 64];
void bench_pool_fill(uint64_t seed);
/* Fills recs[0..n) with values of value_bytes sliced from the pool, varying with salt. */
void bench_records_make(struct rt_record *recs, size_t n, uint32_t value_bytes, uint64_t salt);
/* Touches every byte of [p, p+n): a 64-bit word sum (memory-bound, not compute-bound). */
uint64_t bench_checksum(const uint8_t *p, size_t n);

/* ---- scratch directories ---- */
int bench_mkdir(const char *path);
int bench_rmtree(const char *path);
const char *bench_fs_type(const char *path); /* "ext4", "tmpfs", ... */
uint64_t bench_fs_free_bytes(const char *path);

/* ---- systems behind one seam ---- */
struct sink;

struct read_result {
    uint64_t records;
    uint64_t value_bytes;
    uint64_t checksum;
    double seconds;
};

struct sink_ops {
    const char *name;
    /* durable: acknowledge after the data is on disk (sync=always); else page cache only. */
    int (*open)(struct sink *s, const char *dir, bool durable, uint32_t partitions);
    /* Appends one producer batch; safe to call from many threads at once. */
    int (*append)(struct sink *s, uint32_t partition, const struct rt_record *recs, size_t n);
    /* Reads every record of a partition in order, touching every value byte (touch) or only
     * keys/lengths. */
    int (*read_all)(struct sink *s, uint32_t partition, bool touch, struct read_result *out);
    void (*close)(struct sink *s);
    /* Waits until every append is acknowledged (asynchronous sinks); NULL when append waits. */
    int (*flush)(struct sink *s);
};

struct sink {
    const struct sink_ops *ops;
    void *impl;
    char errmsg[256];
};

extern const struct sink_ops sink_ringtail, sink_rocksdb, sink_lmdb, sink_sqlite;
/* The io backend the ringtail sinks open with (--io; default RT_IO_AUTO). */
extern enum rt_io_backend bench_io_backend;
/* ringtail appending with rt_append even when not durable (W1's "rt_append" row). */
extern const struct sink_ops sink_ringtail_append;
/* ringtail appending ready (pre-encoded) batches with rt_append_batch (W1's "rt_append_batch"). */
extern const struct sink_ops sink_ringtail_batch;

/* The ringtail sink's engine (for stats and fetch-based reads). */
rt_engine *sink_ringtail_engine(struct sink *s);
#define BENCH_TOPIC "bench"

/* Reads a ringtail partition from offset 0 to the end at `isolation`. */
int ringtail_read_all(rt_engine *e, const char *topic, uint32_t partition,
                      enum rt_isolation isolation, bool touch, struct read_result *out);

/* ---- limits ---- */
struct limit_result {
    double seconds;
    uint64_t chunks;
    uint64_t fdatasyncs;
    struct hist *round_latency; /* per fdatasync round (or per write batch without syncs) */
};

/* Writes `chunks` chunks of chunk_bytes sequentially spread over `files` preallocated files by
 * plain io_uring writes. With syncs > 0, the writes go in syncs/files rounds; each round writes
 * its share of chunks to every file, then fdatasyncs every file (so exactly `syncs` fdatasyncs in
 * all, the cadence the engine used). With syncs == 0, writes go queue_depth at a time, unsynced. */
/* linked (syncs > 0 only): each round's writes to a file and its fdatasync go as one
 * IOSQE_IO_LINK chain (write -> ... -> fdatasync), submitted with the other files' chains at
 * once, as ringtail's io_uring backend issues a round; else the round's writes are reaped
 * before the fdatasyncs are submitted. */
int limit_write(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                uint64_t syncs, uint32_t queue_depth, bool prewritten, bool linked,
                struct limit_result *out);
/* The same chunks, rounds and fdatasyncs as limit_write, written by plain pwritev on the calling
 * thread: each round's share of one file as one pwritev (one iovec per chunk), then (syncs > 0)
 * an fdatasync of every file. */
int limit_write_pwritev(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                        uint64_t syncs, uint32_t queue_depth, bool prewritten,
                        struct limit_result *out);

/* The same chunks and fdatasyncs split over `files` threads, one file each, each running its own
 * rounds by limit_write_pwritev (in DIR/p<f>/) independently of the others; seconds = the
 * slowest thread's. */
int limit_write_parallel(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                         uint64_t syncs, uint32_t queue_depth, bool prewritten,
                         struct limit_result *out);

/* Memory read bandwidth of bench_checksum over a buffer of `bytes`, best of `passes`, bytes/s. */
double limit_memory_read_bps(size_t bytes, int passes);

/* ---- transactional workloads (bench_txn.c) ---- */
struct txn_run_result {
    double seconds;                         /* common start to the last commit's return */
    uint64_t commits, records, value_bytes; /* committed transactions only */
    uint64_t fdatasyncs, rounds, batches;   /* engine stats deltas (ringtail) */
    uint64_t heap_end_bytes;                /* allocator bytes before close */
    struct hist *commit_lat;                /* per commit call; filled when non-NULL */
    uint64_t *commits_each;                 /* W3 timed: each producer's count, when non-NULL */
    char errmsg[256];
};

/* W3: `threads` transactional producers (ids "w3-<i>"), thread i -> partition i mod partitions,
 * sending 16 x 1 KiB records per batch through rt_producer_send and committing after every
 * batches_per_txn batches; sync=always. transactional false: the same with idempotent producers
 * that rt_producer_flush instead of committing (the baseline for the cost of transactions).
 * seconds > 0: run for that long and write each producer's count of commits (flushes) to
 * commits_each[threads] when non-NULL; seconds == 0: producer i ends exactly commits_each[i]
 * (the baseline's counts: the same bytes at the same cadence). -EINVAL for neither. */
int txn_w3_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
               uint32_t batches_per_txn, bool transactional, uint64_t *commits_each,
               struct txn_run_result *out);
/* W4: `threads` transactional producers looping begin / 5 records (1 KiB) to partition i and 5
 * to i+1 (mod partitions) / commit; sync=always; at most commits_max transactions (0: none). */
int txn_w4_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
               uint64_t commits_max, struct txn_run_result *out);
/* W4's peer: the same 10 records per RocksDB TransactionDB transaction, WAL synced at commit. */
int txn_w4_rocksdb_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
                       struct txn_run_result *out);
/* `count` rounds of a 4 KiB pwrite + fdatasync into a preallocated file under dir. */
int fdatasync_probe(const char *dir, uint32_t count, bool prewritten, struct hist *out);

/* ---- memory probes (bench_txn.c) ---- */
#define MEM_SAMPLES 20
struct mem_churn_result {
    uint64_t producers; /* opened, sent one record, closed */
    double seconds;
    uint64_t heap_start_bytes, heap_open_bytes, heap_end_bytes;
    uint64_t at[MEM_SAMPLES], heap_bytes[MEM_SAMPLES]; /* producers done -> heap */
    uint32_t sample_count;
    uint64_t expired; /* rt_stats producers_expired */
    char errmsg[256];
};
/* `producers` short-lived anonymous idempotent producers over `threads` threads, each sending
 * one 100 B record to partition i mod partitions; producers_max 0 = the engine default. */
int mem_producer_churn(const char *dir, uint64_t producers, uint32_t threads,
                       uint32_t producers_max, uint32_t partitions, struct mem_churn_result *out);

struct mem_live_result {
    uint32_t live;
    uint64_t heap_live_bytes;   /* heap growth with `live` producers open, one record each */
    uint64_t anon_live_bytes;   /* anonymous RSS growth (includes the sender threads' stacks) */
    uint64_t heap_closed_bytes; /* after closing them: what the engine keeps per producer id */
    int64_t threads_live;       /* threads of this process with them open, less before (or -1) */
    char errmsg[256];
};
int mem_producers_live(const char *dir, uint32_t live, uint32_t partitions,
                       struct mem_live_result *out);

struct mem_part_result {
    int64_t heap_created_bytes[2]; /* [0]: a topic of 1 partition; [1]: of `partitions` */
    int64_t heap_written_bytes[2]; /* ... after one record appended to each partition */
    char errmsg[256];
};
int mem_partitions(const char *dir, uint32_t partitions, struct mem_part_result *out);

/* ---- the cleaner workload C (bench_clean.c): rt_topic_compact's throughput and its effect on
 * a live producer and reader ---- */
struct clean_latency {
    double append_p50_us, append_p99_us; /* one keyed 1 KiB rt_append every 500 us */
    double append_max_us;
    double fetch_p50_us, fetch_p99_us; /* high watermark + rt_fetch_start of the newest */
    uint64_t appends, fetches;
};
struct clean_result {
    double seconds;                     /* rt_topic_compact */
    uint64_t bytes_before, bytes_after; /* the sealed segments' bytes (what the clean read) */
    uint32_t segments_before, segments_after;
    uint64_t records_written, keys;      /* the built log */
    uint64_t records_after;              /* readable after the clean, live appends included */
    uint64_t records_appended_live;      /* by the live producer in both phases */
    struct clean_latency idle, cleaning; /* the same live load without and during the clean */
    char errmsg[256];
};
/* Builds one partition of `bytes` of keyed 1 KiB records (keys from 1/8 of the count) in
 * segments of segment_bytes_max under dir (sync=none), runs the live load for idle_seconds
 * with no cleaner, then times rt_topic_compact with the live load running. */
int clean_run(const char *dir, uint64_t bytes, uint64_t segment_bytes_max, double idle_seconds,
              struct clean_result *out);

/* ---- the serve workload S (bench_serve.c): `ringtail serve` driven by librdkafka ---- */
struct serve_proc {
    pid_t pid;
    uint16_t port;
    char broker[32];     /* "127.0.0.1:PORT" */
    char log_path[4200]; /* DIR.serve.log: the server's stdout and stderr */
};
/* Starts `RINGTAIL serve DIR --listen 127.0.0.1:<free port> [EXTRA]` (EXTRA: one
 * "--option value" or NULL) and waits for its "listening on" line; the log (DIR.serve.log) is
 * appended to. Errors: -ECHILD (it exited; see log_path), -ETIMEDOUT (20 s), -errno. */
int serve_proc_start(struct serve_proc *sp, const char *ringtail, const char *dir,
                     const char *extra_arg);
/* The same with an SSL listener only (--listeners SSL://127.0.0.1:<port>, the certificate and
 * key given); waits for "listening on SSL://...". */
int serve_proc_start_tls(struct serve_proc *sp, const char *ringtail, const char *dir,
                         const char *extra_arg, const char *cert_pem, const char *key_pem);
/* The clients made from now on speak TLS (security.protocol=ssl) trusting ca_pem; NULL: back to
 * plaintext. */
void serve_client_tls(const char *ca_pem);
/* SIGTERM and wait (SIGKILL after 30 s: -ETIMEDOUT); -ECHILD unless it exited 0. */
int serve_proc_stop(struct serve_proc *sp);

struct serve_result {
    double seconds;
    uint64_t records, bytes;        /* acknowledged (produce) or read (consume) values */
    double p50_us, p99_us, p999_us; /* produce: produce call to delivery report */
    uint64_t checksum;
    char errmsg[256];
};
struct serve_produce_args {
    const char *broker, *topic;
    uint32_t producers, partitions;
    double seconds;
    uint64_t bytes_max; /* 0: none; else the producers stop once they sent this many values */
    bool acks_one;      /* acks=1, not idempotent (librdkafka's idempotence needs acks=all) */
};
/* `producers` idempotent librdkafka producers (acks=all, 1 KiB values, producer i to partition
 * i mod partitions) streaming for `seconds` (or until bytes_max); the clock stops at the last
 * acknowledgement. */
int serve_produce(const struct serve_produce_args *args, struct serve_result *out);
/* One read_committed librdkafka consumer reads `records` records of every partition from 0. */
int serve_consume(const char *broker, const char *topic, uint32_t partitions, uint64_t records,
                  struct serve_result *out);
struct serve_txn_mix_args {
    const char *broker, *plain_topic, *txn_topic;
    uint32_t txn_producers, txn_partitions;
    double seconds;
};
/* `txn_producers` transactional librdkafka producers commit one-record transactions into
 * txn_topic (partitions 1..txn_partitions) in a loop while one plain producer (acks=all) sends to plain_topic partition 0 one
 * record at a time for `seconds`; out's latency is the plain producer's, *commits the
 * transactions committed meanwhile. */
int serve_txn_mix(const struct serve_txn_mix_args *args, struct serve_result *out,
                  uint64_t *commits);
struct serve_txn_commit_args {
    const char *broker, *topic, *tag; /* tag: part of the transactional ids (unique per run) */
    uint32_t producers, partitions;
    double seconds;
};
struct serve_txn_commit_result {
    double seconds;
    uint64_t commits;      /* transactions committed in `seconds` */
    double p50_us, p99_us; /* rd_kafka_commit_transaction, call to return */
    char errmsg[256];
};
/* `producers` transactional librdkafka producers, each committing transactions of 10 records of
 * 100 B over partitions (i, i + 1) mod partitions in a closed loop for `seconds`. */
int serve_txn_commit(const struct serve_txn_commit_args *args, struct serve_txn_commit_result *out);
/* A plain TCP transfer of `bytes` over 127.0.0.1, sender and receiver threads, 1 MiB calls. */
int serve_loopback_limit(uint64_t bytes, struct serve_result *out);

/* ---- the consume workload (bench_consume.c): the consumer path, issue 27 item 5 ---- */
/* Writes `bytes` of 1 KiB values (128-record batches, round robin, an aborted 16-record
 * transaction after every 16th batch) into a new topic of DIR's engine, sync none; records[p]
 * receives each partition's committed records. */
int consume_fill(const char *dir, const char *topic, uint32_t partitions, uint64_t bytes,
                 uint64_t *records, char *err, size_t errlen);
struct consume_args {
    const char *broker, *topic;
    uint32_t partitions, consumers;
    const uint64_t *records;  /* each partition's committed records, all read from offset 0 */
    bool thin;                /* thin Fetch v11 clients; else librdkafka consumers */
    int32_t fetch_bytes;      /* thin: max_bytes and partition_max_bytes of each Fetch */
    const char *rdkafka_conf; /* librdkafka: "k=v,..." set last (may be NULL) */
};
/* `consumers` read_committed consumers, consumer i reading the partitions p with
 * p mod consumers == i to their ends; out: values read, from the common start to the last end. */
int consume_run(const struct consume_args *args, struct serve_result *out);
/* `bytes` over 127.0.0.1 split over `streams` connections (a sender and a receiver thread
 * each, 1 MiB calls): by send from memory, or by sendfile from a page-cached scratch file
 * (unlinked at once). *sender_cpu_s: the senders' thread CPU seconds, summed. */
int consume_loopback(const char *scratch, uint64_t bytes, uint32_t streams, bool use_sendfile,
                     struct serve_result *out, double *sender_cpu_s);

/* ---- the cluster workload CL (bench_cluster.c) ---- */
#define CLUSTER_NODES          3
#define CLUSTER_PARTITIONS_MAX 16

struct cluster {
    char ringtail[2048];
    char dir[2048]; /* node i in DIR/ni, its output in DIR/ni.log */
    uint32_t session_ms;
    pid_t pid[CLUSTER_NODES + 1]; /* by node id; 0: not running */
    uint16_t kport[CLUSTER_NODES + 1], cport[CLUSTER_NODES + 1];
    char voters[96];
    char bootstrap[96]; /* the three Kafka listeners */
    char log_path[CLUSTER_NODES + 1][2100];
};
struct cluster_part {
    int32_t leader, epoch;
    int32_t replicas[CLUSTER_NODES], isr[CLUSTER_NODES];
    uint32_t replicas_count, isr_count;
    int64_t lag[CLUSTER_NODES], end[CLUSTER_NODES]; /* by replica order; -1: not known */
};
/* One `ringtail cluster status` answer, for one topic. */
struct cluster_view {
    int32_t controller;
    uint32_t unfenced;
    uint32_t partitions;
    struct cluster_part parts[CLUSTER_PARTITIONS_MAX];
};
struct cluster_catchup {
    int32_t follower;
    uint64_t produced_bytes;  /* values produced while it was stopped */
    uint64_t bytes;           /* values the rate is over */
    double seconds;           /* their time */
    double restart_to_sync_s; /* from its restart to lag 0, start-up included */
    double produce_mb_s;      /* the produce meanwhile (two replicas) */
    bool from_restart;        /* caught up before the first sample: bytes/seconds from restart */
};
/* Starts three nodes (`RINGTAIL serve DIR/ni --node-id i --voters ...`, free 127.0.0.1 ports,
 * the broker session timeout given) and waits until all three are listed with a controller. */
int cluster_start(struct cluster *c, const char *ringtail, const char *dir, uint32_t session_ms);
/* (Re)starts node id and waits for its "listening on" line. */
int cluster_node_start(struct cluster *c, int id);
/* Sends sig to node id and waits (SIGKILL after 20 s); -ECHILD: it did not exit 0 (not SIGKILL). */
int cluster_node_stop(struct cluster *c, int id, int sig);
/* SIGTERM to every node; the first error. */
int cluster_stop(struct cluster *c);
/* `ringtail cluster status` from a running node, `topic`'s partitions parsed. */
int cluster_view_read(const struct cluster *c, const char *topic, struct cluster_view *v);
/* Until every node is listed and (topic given) its partitions are led with whole ISRs. */
int cluster_wait(const struct cluster *c, const char *topic, uint32_t partitions, double timeout_s);
/* CreateTopics through librdkafka's AdminClient (NOT_CONTROLLER retried); min_isr 0: default.
 * Waits until its partitions are led with whole ISRs. */
int cluster_topic_create(const struct cluster *c, const char *topic, uint32_t partitions,
                         uint32_t rf, uint32_t min_isr, char *err, size_t errlen);
/* One failover trial (bench_cluster.c): *ms_out, SIGKILL of a partition's leader to the first
 * acknowledgement by another node; the node is restarted and the ISRs whole again after. */
int cluster_failover(struct cluster *c, const char *topic, uint32_t partitions, double *ms_out,
                     int32_t *killed_out, char *err, size_t errlen);
/* A follower stopped, `bytes` of values produced by `producers`, restarted: its catch-up. */
int cluster_catchup(struct cluster *c, const char *topic, uint32_t partitions, uint32_t producers,
                    uint64_t bytes, struct cluster_catchup *out, char *err, size_t errlen);

#endif /* RT_BENCH_H */
