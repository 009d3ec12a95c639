/*
 * bench_txn.c — the transactional workloads and the memory probes of `ringtail-bench`, behind
 * plain functions that fill result structs (bench_main.c turns them into rows):
 *
 *   txn_w3_run (workload W3, bench_main.c): W2's shape (1 KiB values, 16 records per producer batch, sync=always, thread
 *       i -> partition i mod P) with every thread a transactional producer (transactional_id
 *       "w3-<i>") that sends through rt_producer_send and commits after every batches_per_txn
 *       batches; its baseline is the same with idempotent producers that flush instead. The
 *       baseline runs for a time and records how many transactions each producer ended; the
 *       transactional run then ends exactly as many per producer, so the two carry the same
 *       producers, the same bytes and the same commit (flush) cadence, and their MB/s ratio is
 *       the cost of the transactions alone. (A cadence in time would not do: rt_producer_send
 *       returns at memory speed until buffer_memory_bytes is full, so a 100 ms window filled
 *       the 32 MiB buffer and the commit then drained it for a second.)
 *   txn_w4_run (workload W4): small transactions, begin / 5 records to each of 2 partitions / commit, in a
 *       loop per thread; commit latency = the rt_producer_commit call (it flushes the
 *       transaction's 10 records, then PrepareCommit, markers, CompleteCommit).
 *       txn_w4_rocksdb_run: the same 10 records per RocksDB TransactionDB transaction
 *       (pessimistic, WAL fdatasynced at commit).
 *       fdatasync_probe: the disk's own fdatasync latency, 4 KiB pwrite + fdatasync into a file
 *       whose blocks were written before (an overwrite: the true limit) or one preallocated
 *       with fallocate (as ringtail preallocates its segments today).
 *   M   mem_producer_churn: short-lived anonymous idempotent producers (open, send one record,
 *       close), heap sampled as they go; mem_producers_live: heap per live producer and per
 *       producer id the engine still tracks after close; mem_partitions: heap per partition.
 *
 * Value bytes count only records of committed transactions. Nothing here asserts a target.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocksdb/c.h>

#define TOPIC_TXN "txn"

static void seterr(char *buf, size_t n, const char *what, int rc)
{
    snprintf(buf, n, "%s: %s %s", what, rt_strerror(rc), rt_error_detail());
}

/* ---------------------------------------------------------------------------------------- */
/* shared thread harness                                                                     */
/* ---------------------------------------------------------------------------------------- */

struct txn_run {
    rt_engine *engine;
    rocksdb_transactiondb_t *rdb; /* the RocksDB peer, else NULL */
    rocksdb_writeoptions_t *rdb_wopts;
    rocksdb_transaction_options_t *rdb_topts;
    uint32_t partitions;
    uint32_t batches_per_txn;     /* W3; 0 = W4 */
    bool transactional;           /* false: W3's baseline, idempotent producers that flush */
    uint64_t commits_max;         /* 0 = none; claimed before each begin */
    const uint64_t *commits_each; /* W3: producer i ends exactly commits_each[i]; NULL = time */
    _Atomic uint64_t commits_claimed;
    uint64_t deadline_ns; /* written before `go` */
    _Atomic int error;
    _Atomic bool go;
    char errmsg[256];
    pthread_mutex_t err_lock;
};

struct txn_thread {
    struct txn_run *run;
    uint32_t id;
    pthread_t thread;
    rt_producer *producer;
    struct hist lat;
    uint64_t commits, records, value_bytes, end_ns;
};

static void run_fail(struct txn_run *run, const char *what, int rc, const char *detail)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&run->error, &expected, rc)) {
        pthread_mutex_lock(&run->err_lock);
        snprintf(run->errmsg, sizeof(run->errmsg), "%s: %s %s", what, rt_strerror(rc),
                 detail ? detail : "");
        pthread_mutex_unlock(&run->err_lock);
    }
}

static int send_records(rt_producer *p, uint32_t partition, const struct rt_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct rt_producer_message m = {.record = recs[i], .sequence = -1};
        int rc = rt_producer_send(p, TOPIC_TXN, (int32_t)partition, &m, NULL, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* One transaction of W3 (batches_per_txn 16-record batches to the thread's partition) or W4
 * (5 records to each of two partitions). Returns the value bytes it sent, or a negative code. */
static int64_t txn_body(struct txn_thread *t)
{
    struct txn_run *run = t->run;
    struct rt_record recs[BENCH_BATCH_RECORDS];
    int64_t bytes = 0;
    if (run->batches_per_txn) {
        uint32_t part = t->id % run->partitions;
        for (uint64_t k = 0; k < run->batches_per_txn; k++) {
            bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES,
                               ((uint64_t)t->id << 40) | (t->commits << 16) | k);
            int rc = send_records(t->producer, part, recs, BENCH_BATCH_RECORDS);
            if (rc)
                return rc;
            bytes += BENCH_BATCH_VALUE_BYTES;
        }
        return bytes;
    }
    uint32_t a = t->id % run->partitions, b = (t->id + 1) % run->partitions;
    bench_records_make(recs, 10, BENCH_VALUE_BYTES, ((uint64_t)t->id << 32) | t->commits);
    int rc = send_records(t->producer, a, recs, 5);
    if (rc == 0)
        rc = send_records(t->producer, b, recs + 5, 5);
    return rc ? rc : 10 * BENCH_VALUE_BYTES;
}

static void *ringtail_txn_main(void *arg)
{
    struct txn_thread *t = arg;
    struct txn_run *run = t->run;
    while (!atomic_load_explicit(&run->go, memory_order_acquire))
        sched_yield();
    uint64_t now = bench_now_ns();
    while (!atomic_load_explicit(&run->error, memory_order_relaxed)) {
        if (run->commits_each ? t->commits >= run->commits_each[t->id] : now >= run->deadline_ns)
            break;
        if (run->commits_max && atomic_fetch_add(&run->commits_claimed, 1) >= run->commits_max)
            break;
        int rc = run->transactional ? rt_producer_begin(t->producer) : 0;
        if (rc) {
            run_fail(run, "rt_producer_begin", rc, rt_error_detail());
            break;
        }
        int64_t sent = txn_body(t);
        if (sent < 0) {
            run_fail(run, "rt_producer_send", (int)sent, rt_error_detail());
            if (run->transactional)
                rt_producer_abort(t->producer, -1);
            break;
        }
        uint64_t c0 = bench_now_ns();
        rc = run->transactional ? rt_producer_commit(t->producer, -1)
                                : rt_producer_flush(t->producer, -1);
        now = bench_now_ns();
        if (rc) {
            run_fail(run, run->transactional ? "rt_producer_commit" : "rt_producer_flush", rc,
                     rt_error_detail());
            if (run->transactional)
                rt_producer_abort(t->producer, -1);
            break;
        }
        hist_add(&t->lat, now - c0);
        t->commits++;
        t->value_bytes += (uint64_t)sent;
        t->records += (uint64_t)sent / BENCH_VALUE_BYTES;
        progress_add((uint64_t)sent);
    }
    t->end_ns = now;
    return NULL;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void *rocksdb_txn_main(void *arg)
{
    struct txn_thread *t = arg;
    struct txn_run *run = t->run;
    struct rt_record recs[10];
    rocksdb_transaction_t *txn = NULL;
    while (!atomic_load_explicit(&run->go, memory_order_acquire))
        sched_yield();
    uint64_t now = bench_now_ns();
    while (now < run->deadline_ns && !atomic_load_explicit(&run->error, memory_order_relaxed)) {
        txn = rocksdb_transaction_begin(run->rdb, run->rdb_wopts, run->rdb_topts, txn);
        bench_records_make(recs, 10, BENCH_VALUE_BYTES, ((uint64_t)t->id << 32) | t->commits);
        char *err = NULL;
        for (uint32_t i = 0; i < 10 && !err; i++) {
            /* key: partition, producer, transaction number, record: unique, no lock waits */
            uint8_t key[16];
            put_be32(key, i < 5 ? t->id % run->partitions : (t->id + 1) % run->partitions);
            put_be32(key + 4, t->id);
            put_be32(key + 8, (uint32_t)t->commits);
            put_be32(key + 12, i);
            rocksdb_transaction_put(txn, (const char *)key, sizeof(key), recs[i].value,
                                    (size_t)recs[i].value_len, &err);
        }
        uint64_t c0 = bench_now_ns();
        if (!err)
            rocksdb_transaction_commit(txn, &err);
        now = bench_now_ns();
        if (err) {
            run_fail(run, "rocksdb transaction", -EIO, err);
            rocksdb_free(err);
            break;
        }
        hist_add(&t->lat, now - c0);
        t->commits++;
        t->records += 10;
        t->value_bytes += 10 * BENCH_VALUE_BYTES;
        progress_add(10 * BENCH_VALUE_BYTES);
    }
    if (txn)
        rocksdb_transaction_destroy(txn);
    t->end_ns = now;
    return NULL;
}

/* Starts `threads` workers on fn, releases them together, joins, sums into out. */
static int run_threads(struct txn_run *run, struct txn_thread *ts, uint32_t threads,
                       void *(*fn)(void *), double seconds, struct txn_run_result *out)
{
    uint32_t started = 0;
    for (; started < threads; started++) {
        ts[started].run = run;
        ts[started].id = started;
        if (pthread_create(&ts[started].thread, NULL, fn, &ts[started]) != 0) {
            run_fail(run, "pthread_create", -EAGAIN, NULL);
            break;
        }
    }
    uint64_t t0 = bench_now_ns();
    run->deadline_ns = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : UINT64_MAX;
    atomic_store_explicit(&run->go, true, memory_order_release);
    uint64_t end = t0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(ts[i].thread, NULL);
        if (out->commit_lat)
            hist_merge(out->commit_lat, &ts[i].lat);
        out->commits += ts[i].commits;
        out->records += ts[i].records;
        out->value_bytes += ts[i].value_bytes;
        if (ts[i].end_ns > end)
            end = ts[i].end_ns;
        if (out->commits_each)
            out->commits_each[i] = ts[i].commits;
    }
    out->seconds = (double)(end - t0) / 1e9;
    int rc = atomic_load(&run->error);
    if (rc)
        snprintf(out->errmsg, sizeof(out->errmsg), "%s", run->errmsg);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* W3 and W4 on ringtail                                                                     */
/* ---------------------------------------------------------------------------------------- */

static int ringtail_txn(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
                        uint32_t batches_per_txn, bool transactional, uint64_t commits_max,
                        const uint64_t *commits_each, struct txn_run_result *out)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc) {
        seterr(out->errmsg, sizeof(out->errmsg), "rt_open", rc);
        return rc;
    }
    rc = rt_topic_create(e, TOPIC_TXN, partitions);
    struct txn_thread *ts = calloc(threads, sizeof(*ts));
    struct txn_run run = {.engine = e,
                          .partitions = partitions,
                          .batches_per_txn = batches_per_txn,
                          .transactional = transactional,
                          .commits_max = commits_max,
                          .commits_each = commits_each,
                          .err_lock = PTHREAD_MUTEX_INITIALIZER};
    if (!ts)
        rc = -ENOMEM;
    if (rc)
        seterr(out->errmsg, sizeof(out->errmsg), "rt_topic_create", rc);
    uint32_t opened = 0;
    for (; rc == 0 && opened < threads; opened++) {
        char id[32];
        snprintf(id, sizeof(id), "%s-%u", batches_per_txn ? "w3" : "w4", opened);
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = transactional ? id : NULL;
        /* 16 records of 1 KiB encode to 16 589 B: one W2-sized batch per 16 sends */
        po.batch_size_bytes = BENCH_BATCH_VALUE_BYTES + 512;
        rc = rt_producer_open(e, &po, &ts[opened].producer);
        if (rc) {
            seterr(out->errmsg, sizeof(out->errmsg), "rt_producer_open", rc);
            break;
        }
        rc = transactional ? rt_producer_init_transactions(ts[opened].producer, -1) : 0;
        if (rc) {
            seterr(out->errmsg, sizeof(out->errmsg), "rt_producer_init_transactions", rc);
            opened++;
            break;
        }
    }
    struct rt_stats before = {0}, after = {0};
    rt_stats_get(e, &before);
    if (rc == 0)
        rc = run_threads(&run, ts, threads, ringtail_txn_main, seconds, out);
    rt_stats_get(e, &after);
    out->fdatasyncs = after.fdatasyncs - before.fdatasyncs;
    out->rounds = after.rounds - before.rounds;
    out->batches = after.batches_appended - before.batches_appended;
    out->heap_end_bytes = mem_heap_bytes(NULL);
    for (uint32_t i = 0; i < opened; i++) {
        int crc = rt_producer_close(ts[i].producer);
        if (crc && !rc) {
            rc = crc;
            seterr(out->errmsg, sizeof(out->errmsg), "rt_producer_close", rc);
        }
    }
    free(ts);
    int crc = rt_close(e);
    if (crc && !rc) {
        rc = crc;
        seterr(out->errmsg, sizeof(out->errmsg), "rt_close", rc);
    }
    return rc;
}

int txn_w3_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
               uint32_t batches_per_txn, bool transactional, uint64_t *commits_each,
               struct txn_run_result *out)
{
    if (batches_per_txn == 0 || (seconds <= 0 && !commits_each))
        return -EINVAL;
    if (seconds > 0) { /* timed: record each producer's count for the run that must match it */
        out->commits_each = commits_each;
        return ringtail_txn(dir, threads, partitions, seconds, batches_per_txn, transactional, 0,
                            NULL, out);
    }
    return ringtail_txn(dir, threads, partitions, 0, batches_per_txn, transactional, 0,
                        commits_each, out);
}

int txn_w4_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
               uint64_t commits_max, struct txn_run_result *out)
{
    return ringtail_txn(dir, threads, partitions, seconds, 0, true, commits_max, NULL, out);
}

/* ---------------------------------------------------------------------------------------- */
/* W4 on RocksDB TransactionDB                                                               */
/* ---------------------------------------------------------------------------------------- */

int txn_w4_rocksdb_run(const char *dir, uint32_t threads, uint32_t partitions, double seconds,
                       struct txn_run_result *out)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_increase_parallelism(o, 2);
    rocksdb_options_set_compression(o, rocksdb_no_compression);
    rocksdb_options_set_write_buffer_size(o, 64u << 20);
    rocksdb_transactiondb_options_t *tdo = rocksdb_transactiondb_options_create();
    char *err = NULL;
    rocksdb_transactiondb_t *db = rocksdb_transactiondb_open(o, tdo, dir, &err);
    if (err) {
        snprintf(out->errmsg, sizeof(out->errmsg), "rocksdb_transactiondb_open: %s", err);
        rocksdb_free(err);
        rocksdb_transactiondb_options_destroy(tdo);
        rocksdb_options_destroy(o);
        return -EIO;
    }
    struct txn_run run = {.rdb = db,
                          .rdb_wopts = rocksdb_writeoptions_create(),
                          .rdb_topts = rocksdb_transaction_options_create(),
                          .partitions = partitions,
                          .err_lock = PTHREAD_MUTEX_INITIALIZER};
    rocksdb_writeoptions_set_sync(run.rdb_wopts, 1);
    struct txn_thread *ts = calloc(threads, sizeof(*ts));
    int rc = ts ? run_threads(&run, ts, threads, rocksdb_txn_main, seconds, out) : -ENOMEM;
    out->heap_end_bytes = mem_heap_bytes(NULL);
    free(ts);
    rocksdb_transaction_options_destroy(run.rdb_topts);
    rocksdb_writeoptions_destroy(run.rdb_wopts);
    rocksdb_transactiondb_close(db);
    rocksdb_transactiondb_options_destroy(tdo);
    rocksdb_options_destroy(o);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the disk's fdatasync                                                                      */
/* ---------------------------------------------------------------------------------------- */

int fdatasync_probe(const char *dir, uint32_t count, bool prewritten, struct hist *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/fdatasync-probe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t file_bytes = (size_t)count * 4096;
    static uint8_t block[4096];
    int rc = 0;
    if (prewritten) { /* every block written once: the probe's writes are overwrites */
        memset(block, 0, sizeof(block));
        for (uint32_t i = 0; rc == 0 && i < count; i++)
            if (pwrite(fd, block, sizeof(block), (off_t)i * 4096) != (ssize_t)sizeof(block))
                rc = errno ? errno : EIO;
    } else {
        rc = posix_fallocate(fd, 0, (off_t)file_bytes);
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = errno;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        memcpy(block, bench_pool + (i * 64u) % BENCH_POOL_BYTES, sizeof(block));
        uint64_t t0 = bench_now_ns();
        if (pwrite(fd, block, sizeof(block), (off_t)i * 4096) != (ssize_t)sizeof(block) ||
            fdatasync(fd) != 0) {
            rc = errno ? errno : EIO;
            break;
        }
        hist_add(out, bench_now_ns() - t0);
    }
    close(fd);
    unlink(path);
    return -rc;
}

/* ---------------------------------------------------------------------------------------- */
/* memory probes                                                                             */
/* ---------------------------------------------------------------------------------------- */

static int mem_engine_open(const char *dir, uint32_t producers_max, uint32_t partitions,
                           rt_engine **out)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_NONE; /* memory, not durability: keep the churn fast */
    /* Segments are preallocated whole (1 GiB each by default): 1000 partitions would fallocate
     * ~1 TB. Heap per partition does not depend on the segment size. */
    o.segment_size_bytes = 1u << 20;
    o.batch_size_max_bytes = 256u << 10;
    o.index_size_max_bytes = 64u << 10;
    if (producers_max)
        o.producers_max = producers_max;
    int rc = rt_open(dir, &o, out);
    if (rc == 0 && partitions)
        rc = rt_topic_create(*out, TOPIC_TXN, partitions);
    if (rc && *out) {
        rt_close(*out);
        *out = NULL;
    }
    return rc;
}

static int one_record(rt_producer *p, uint32_t partition, uint64_t salt)
{
    struct rt_record rec;
    bench_records_make(&rec, 1, 100, salt);
    struct rt_producer_message m = {.record = rec, .sequence = -1};
    return rt_producer_send(p, TOPIC_TXN, (int32_t)partition, &m, NULL, NULL);
}

struct churn {
    rt_engine *e;
    uint32_t partitions;
    uint64_t total;
    _Atomic uint64_t next;
    _Atomic uint64_t done;
    _Atomic int error;
    char errmsg[256];
};

static void *churn_main(void *arg)
{
    struct churn *c = arg;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.linger_ms = 0;
    po.buffer_memory_bytes = 64u << 10;
    for (;;) {
        uint64_t i = atomic_fetch_add(&c->next, 1);
        if (i >= c->total || atomic_load(&c->error))
            break;
        rt_producer *p = NULL;
        int rc = rt_producer_open(c->e, &po, &p);
        if (rc == 0) {
            rc = one_record(p, (uint32_t)(i % c->partitions), i);
            int crc = rt_producer_close(p);
            if (!rc)
                rc = crc;
        }
        if (rc) {
            int expected = 0;
            if (atomic_compare_exchange_strong(&c->error, &expected, rc))
                seterr(c->errmsg, sizeof(c->errmsg), "producer churn", rc);
            break;
        }
        atomic_fetch_add(&c->done, 1);
    }
    return NULL;
}

int mem_producer_churn(const char *dir, uint64_t producers, uint32_t threads,
                       uint32_t producers_max, uint32_t partitions, struct mem_churn_result *out)
{
    rt_engine *e = NULL;
    out->heap_start_bytes = mem_heap_bytes(NULL);
    int rc = mem_engine_open(dir, producers_max, partitions, &e);
    if (rc) {
        seterr(out->errmsg, sizeof(out->errmsg), "rt_open", rc);
        return rc;
    }
    out->heap_open_bytes = mem_heap_bytes(NULL);
    struct churn c = {.e = e, .partitions = partitions, .total = producers};
    pthread_t *ts = calloc(threads, sizeof(*ts));
    if (!ts) {
        rt_close(e);
        return -ENOMEM;
    }
    uint32_t started = 0;
    for (; started < threads; started++)
        if (pthread_create(&ts[started], NULL, churn_main, &c) != 0)
            break;
    uint64_t t0 = bench_now_ns();
    /* sample the heap each time another 1/MEM_SAMPLES of the producers has finished */
    out->sample_count = 0;
    while (out->sample_count < MEM_SAMPLES && started) {
        uint64_t due = producers * (out->sample_count + 1) / MEM_SAMPLES;
        uint64_t done = atomic_load(&c.done);
        if (done >= due || atomic_load(&c.error)) {
            out->at[out->sample_count] = done;
            out->heap_bytes[out->sample_count] = mem_heap_bytes(NULL);
            out->sample_count++;
            if (atomic_load(&c.error))
                break;
            continue;
        }
        struct timespec sl = {0, 2 * 1000 * 1000};
        nanosleep(&sl, NULL);
    }
    for (uint32_t i = 0; i < started; i++)
        pthread_join(ts[i], NULL);
    free(ts);
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->producers = atomic_load(&c.done);
    rc = atomic_load(&c.error);
    if (rc)
        snprintf(out->errmsg, sizeof(out->errmsg), "%s", c.errmsg);
    else if (started < threads)
        rc = -EAGAIN;
    struct rt_stats st;
    if (rt_stats_get(e, &st) == 0)
        out->expired = st.producers_expired;
    out->heap_end_bytes = mem_heap_bytes(NULL);
    int crc = rt_close(e);
    return rc ? rc : crc;
}

/* This process's thread count (the Threads: line of /proc/self/status), or -1. */
static long proc_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long n = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

int mem_producers_live(const char *dir, uint32_t live, uint32_t partitions,
                       struct mem_live_result *out)
{
    rt_engine *e = NULL;
    int rc = mem_engine_open(dir, 0, partitions, &e);
    if (rc) {
        seterr(out->errmsg, sizeof(out->errmsg), "rt_open", rc);
        return rc;
    }
    rt_producer **ps = calloc(live, sizeof(*ps));
    if (!ps) {
        rt_close(e);
        return -ENOMEM;
    }
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.linger_ms = 0;
    uint64_t heap0 = mem_heap_bytes(NULL);
    mem_reset_peak();
    uint64_t anon0 = mem_peak_anon_bytes();
    long threads0 = proc_threads();
    uint32_t opened = 0;
    for (; opened < live && rc == 0; opened++) {
        rc = rt_producer_open(e, &po, &ps[opened]);
        if (rc) {
            seterr(out->errmsg, sizeof(out->errmsg), "rt_producer_open", rc);
            break;
        }
        rc = one_record(ps[opened], opened % partitions, opened);
        if (rc == 0)
            rc = rt_producer_flush(ps[opened], -1);
        if (rc)
            seterr(out->errmsg, sizeof(out->errmsg), "send/flush", rc);
    }
    out->live = opened;
    out->heap_live_bytes = mem_heap_bytes(NULL) - heap0;
    out->anon_live_bytes = mem_peak_anon_bytes() - anon0;
    long threads1 = proc_threads();
    out->threads_live = threads0 >= 0 && threads1 >= 0 ? threads1 - threads0 : -1;
    for (uint32_t i = 0; i < opened; i++) {
        int crc = rt_producer_close(ps[i]);
        if (crc && !rc)
            rc = crc;
    }
    free(ps);
    uint64_t heap_closed = mem_heap_bytes(NULL);
    out->heap_closed_bytes = heap_closed > heap0 ? heap_closed - heap0 : 0;
    int crc = rt_close(e);
    return rc ? rc : crc;
}

int mem_partitions(const char *dir, uint32_t partitions, struct mem_part_result *out)
{
    rt_engine *e = NULL;
    int rc = mem_engine_open(dir, 0, 0, &e);
    if (rc) {
        seterr(out->errmsg, sizeof(out->errmsg), "rt_open", rc);
        return rc;
    }
    struct rt_record rec;
    bench_records_make(&rec, 1, 100, 1);
    const char *topics[2] = {"one", "many"};
    uint32_t counts[2] = {1, partitions};
    for (int k = 0; k < 2 && rc == 0; k++) {
        uint64_t h0 = mem_heap_bytes(NULL);
        rc = rt_topic_create(e, topics[k], counts[k]);
        uint64_t h1 = mem_heap_bytes(NULL);
        for (uint32_t p = 0; p < counts[k] && rc == 0; p++)
            rc = rt_append(e, topics[k], p, &rec, 1, NULL);
        uint64_t h2 = mem_heap_bytes(NULL);
        if (rc)
            seterr(out->errmsg, sizeof(out->errmsg), "create/append", rc);
        out->heap_created_bytes[k] = (int64_t)h1 - (int64_t)h0;
        out->heap_written_bytes[k] = (int64_t)h2 - (int64_t)h0;
    }
    int crc = rt_close(e);
    return rc ? rc : crc;
}
