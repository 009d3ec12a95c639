/*
 * bench_sinks.c — ringtail and its peers behind one seam (struct sink_ops): open a store in a
 * scratch directory as durable (acknowledge after the data is on disk) or not, append one
 * producer batch from many threads, read a partition back in order.
 *
 * How each peer is used, chosen as its own documentation recommends for an append log:
 *   - RocksDB: one WriteBatch per producer batch, WriteOptions.sync = durable (the WAL is
 *     fdatasynced per write; concurrent writers are group-committed by RocksDB's write thread),
 *     compression off (ringtail does not compress either), keys = partition(4) + sequence(8)
 *     big-endian from a per-partition atomic counter.
 *   - LMDB: one write transaction per batch (LMDB serialises writers on its own mutex), one
 *     named database per partition, 8-byte big-endian keys assigned inside the transaction so
 *     MDB_APPEND applies; durable = default sync on commit, else MDB_NOSYNC.
 *   - SQLite: WAL mode, one table per partition (INTEGER PRIMARY KEY rowid appends), one
 *     transaction per batch on one shared connection behind a mutex (SQLite has one writer at a
 *     time; a mutex hands it over without busy-waiting); durable = synchronous=FULL (WAL synced
 *     at every commit), else synchronous=OFF.
 *   - ringtail: rt_append of the batch (no key: the offset is the key), sync=always or none;
 *     W1 through the asynchronous producer (rt_producer_send), and (sink_ringtail_append,
 *     W1's "rt_append" row) through rt_append from the caller's thread, and
 *     (sink_ringtail_batch, W1's "rt_append_batch" row) ready batches through rt_append_batch.
 * Reads go through RocksDB's iterator, LMDB's cursor, a SQLite SELECT and ringtail's
 * rt_fetch_start/rt_records_next, each touching every value byte or only keys and lengths.
 */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h" /* the ready batches of W1's rt_append_batch row */

#include <lmdb.h>
#include <rocksdb/c.h>
#include <sqlite3.h>

#define PARTITIONS_MAX 64

enum rt_io_backend bench_io_backend = RT_IO_AUTO;

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ================================ ringtail ================================ */

/* ringtail behind the sink: the engine, and for page-cache workloads (W1) an asynchronous
 * idempotent producer, as a Kafka client writes: client-side batches of the same 16 records,
 * up to 5 in flight per partition, so one producer thread is not a round trip per batch. Durable
 * workloads (W2) call rt_append, whose acknowledgement is the measured latency. */
#define READY_BATCHES 64 /* W1 rt_append_batch: ready batches appended in turn (~1 MiB) */

struct rt_sink {
    rt_engine *e;
    rt_producer *p;
    uint8_t *ready; /* READY_BATCHES encoded batches, `stride` bytes apart (batch sink only) */
    size_t ready_len[READY_BATCHES];
    size_t stride;
    uint32_t next;
};

static int rt_sink_open_as(struct sink *s, const char *dir, bool durable, uint32_t partitions,
                           bool use_producer)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = durable ? RT_SYNC_ALWAYS : RT_SYNC_NONE;
    o.io_backend = bench_io_backend;
    struct rt_sink *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return -ENOMEM;
    int rc = rt_open(dir, &o, &rs->e);
    if (rc) {
        snprintf(s->errmsg, sizeof(s->errmsg), "rt_open: %s %s", rt_strerror(rc),
                 rt_error_detail());
        free(rs);
        return rc;
    }
    rc = rt_topic_create(rs->e, BENCH_TOPIC, partitions);
    if (rc && rc != RT_E_TOPIC_ALREADY_EXISTS) {
        snprintf(s->errmsg, sizeof(s->errmsg), "rt_topic_create: %s", rt_strerror(rc));
        rt_close(rs->e);
        free(rs);
        return rc;
    }
    if (!durable && use_producer) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        /* 16 records of BENCH_VALUE_BYTES per batch, as the synchronous path sends them. */
        po.batch_size_bytes = BENCH_BATCH_VALUE_BYTES + 1024;
        rc = rt_producer_open(rs->e, &po, &rs->p);
        if (rc) {
            snprintf(s->errmsg, sizeof(s->errmsg), "rt_producer_open: %s", rt_strerror(rc));
            rt_close(rs->e);
            free(rs);
            return rc;
        }
    }
    s->impl = rs;
    return 0;
}

static int rt_sink_open(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    return rt_sink_open_as(s, dir, durable, partitions, true);
}

/* W1's rt_append_batch row (issue 27 item 4): READY_BATCHES batches of 16 x 1 KiB records
 * encoded before the clock starts (engine/log/batch.h's builder, as a client or the broker
 * hands the engine a batch it already holds), appended in turn. The engine writes each batch's
 * base offset into it, so the same buffers can be appended again. */
static int rt_sink_open_batch(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    int rc = rt_sink_open_as(s, dir, durable, partitions, false);
    if (rc)
        return rc;
    struct rt_sink *rs = s->impl;
    rs->stride = BENCH_BATCH_VALUE_BYTES + 1024;
    rs->ready = malloc(rs->stride * READY_BATCHES);
    rc = rs->ready ? 0 : -ENOMEM;
    struct rt_record recs[BENCH_BATCH_RECORDS];
    for (uint32_t i = 0; i < READY_BATCHES && rc == 0; i++) {
        bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES, 0xBA7C00000000ull | i);
        struct batch_builder b;
        rc = batch_builder_init(&b, rs->ready + i * rs->stride, rs->stride, 0, -1, -1, -1);
        for (uint32_t j = 0; j < BENCH_BATCH_RECORDS && rc == 0; j++) {
            recs[j].timestamp_ms = (int64_t)(bench_now_ns() / 1000000u);
            rc = batch_builder_add(&b, &recs[j]);
        }
        if (rc == 0)
            rc = batch_builder_finish(&b, &rs->ready_len[i]);
    }
    if (rc) { /* a failed open leaves nothing open (the caller does not close it) */
        snprintf(s->errmsg, sizeof(s->errmsg), "encoding ready batches: %s", rt_strerror(rc));
        rt_close(rs->e);
        free(rs->ready);
        free(rs);
        s->impl = NULL;
    }
    return rc;
}

static int rt_sink_append_batch(struct sink *s, uint32_t partition, const struct rt_record *recs,
                                size_t n)
{
    (void)recs; /* the ready batches hold the same shape: n = 16 records of 1 KiB */
    (void)n;
    struct rt_sink *rs = s->impl;
    uint32_t i = rs->next++ % READY_BATCHES;
    return rt_append_batch(rs->e, BENCH_TOPIC, partition, rs->ready + i * rs->stride,
                           rs->ready_len[i], NULL);
}

/* W1's rt_append row: the synchronous call from the caller's thread, page cache only. */
static int rt_sink_open_append(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    return rt_sink_open_as(s, dir, durable, partitions, false);
}

static int rt_sink_append(struct sink *s, uint32_t partition, const struct rt_record *recs,
                          size_t n)
{
    struct rt_sink *rs = s->impl;
    if (!rs->p)
        return rt_append(rs->e, BENCH_TOPIC, partition, recs, n, NULL);
    for (size_t i = 0; i < n; i++) {
        struct rt_producer_message m = {.record = recs[i], .sequence = -1};
        int rc = rt_producer_send(rs->p, BENCH_TOPIC, (int32_t)partition, &m, NULL, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

static int rt_sink_flush(struct sink *s)
{
    struct rt_sink *rs = s->impl;
    return rs->p ? rt_producer_flush(rs->p, -1) : 0;
}

int ringtail_read_all(rt_engine *e, const char *topic, uint32_t partition,
                      enum rt_isolation isolation, bool touch, struct read_result *out)
{
    memset(out, 0, sizeof(*out));
    int64_t end = 0;
    int rc = rt_list_offsets(e, topic, partition, RT_OFFSET_LATEST, isolation, &end);
    if (rc)
        return rc;
    uint64_t t0 = bench_now_ns();
    int64_t off = 0;
    uint64_t sum = 0;
    while (off < end) {
        rt_fetch *f = NULL;
        rc = rt_fetch_start(e, topic, partition, off, 1u << 20, isolation, &f);
        if (rc)
            return rc;
        struct rt_records it;
        rc = rt_records_init(&it, f, off);
        int64_t before = off;
        struct rt_record_view v;
        uint64_t bytes = 0;
        while (rc == 0 && (rc = rt_records_next(&it, &v)) == 0) {
            out->records++;
            if (v.value_len > 0) {
                bytes += (uint64_t)v.value_len;
                sum += touch ? bench_checksum(v.value, (size_t)v.value_len) : (uint64_t)v.value_len;
            }
            off = v.offset + 1;
        }
        /* past every batch walked: a compacted log's batches may end past their last record */
        int64_t next = rt_records_next_offset(&it);
        if (next > off)
            off = next;
        rt_fetch_release(f);
        if (rc != RT_E_END)
            return rc;
        out->value_bytes += bytes;
        progress_add(bytes);
        if (off == before)
            return RT_E_CORRUPT; /* no progress: never spin */
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->checksum = sum;
    return 0;
}

static int rt_sink_read(struct sink *s, uint32_t partition, bool touch, struct read_result *out)
{
    return ringtail_read_all(sink_ringtail_engine(s), BENCH_TOPIC, partition, RT_READ_UNCOMMITTED,
                             touch, out);
}

static void rt_sink_close(struct sink *s)
{
    struct rt_sink *rs = s->impl;
    if (rs) {
        if (rs->p)
            rt_producer_close(rs->p);
        rt_close(rs->e);
        free(rs->ready);
        free(rs);
    }
    s->impl = NULL;
}

rt_engine *sink_ringtail_engine(struct sink *s)
{
    return s->impl ? ((struct rt_sink *)s->impl)->e : NULL;
}

const struct sink_ops sink_ringtail = {"ringtail",   rt_sink_open,  rt_sink_append,
                                       rt_sink_read, rt_sink_close, rt_sink_flush};
const struct sink_ops sink_ringtail_batch = {"ringtail",   rt_sink_open_batch, rt_sink_append_batch,
                                             rt_sink_read, rt_sink_close,      rt_sink_flush};
const struct sink_ops sink_ringtail_append = {"ringtail",   rt_sink_open_append, rt_sink_append,
                                              rt_sink_read, rt_sink_close,       rt_sink_flush};

/* ================================ RocksDB ================================ */

struct rdb {
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_readoptions_t *ropts;
    _Atomic uint64_t next_seq[PARTITIONS_MAX];
};

static int rdb_open(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    if (partitions > PARTITIONS_MAX)
        return -EINVAL;
    struct rdb *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opts, 1);
    rocksdb_options_increase_parallelism(r->opts, 2);
    rocksdb_options_set_compression(r->opts, rocksdb_no_compression);
    rocksdb_options_set_write_buffer_size(r->opts, 64u << 20);
    char *err = NULL;
    r->db = rocksdb_open(r->opts, dir, &err);
    if (err) {
        snprintf(s->errmsg, sizeof(s->errmsg), "rocksdb_open: %s", err);
        rocksdb_free(err);
        rocksdb_options_destroy(r->opts);
        free(r);
        return -EIO;
    }
    r->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(r->wopts, durable);
    r->ropts = rocksdb_readoptions_create();
    s->impl = r;
    return 0;
}

static int rdb_append(struct sink *s, uint32_t partition, const struct rt_record *recs, size_t n)
{
    struct rdb *r = s->impl;
    uint64_t seq = atomic_fetch_add(&r->next_seq[partition], n);
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    for (size_t i = 0; i < n; i++) {
        uint8_t key[12];
        put_be32(key, partition);
        put_be64(key + 4, seq + i);
        rocksdb_writebatch_put(b, (const char *)key, sizeof(key), recs[i].value,
                               (size_t)recs[i].value_len);
    }
    char *err = NULL;
    rocksdb_write(r->db, r->wopts, b, &err);
    rocksdb_writebatch_destroy(b);
    if (err) {
        snprintf(s->errmsg, sizeof(s->errmsg), "rocksdb_write: %s", err);
        rocksdb_free(err);
        return -EIO;
    }
    return 0;
}

static int rdb_read(struct sink *s, uint32_t partition, bool touch, struct read_result *out)
{
    struct rdb *r = s->impl;
    memset(out, 0, sizeof(*out));
    uint64_t t0 = bench_now_ns();
    rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, r->ropts);
    uint8_t prefix[4];
    put_be32(prefix, partition);
    uint64_t sum = 0;
    for (rocksdb_iter_seek(it, (const char *)prefix, 4); rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t klen = 0, vlen = 0;
        const char *k = rocksdb_iter_key(it, &klen);
        if (klen < 4 || memcmp(k, prefix, 4) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vlen);
        out->records++;
        out->value_bytes += vlen;
        sum += touch ? bench_checksum((const uint8_t *)v, vlen) : vlen + (uint8_t)k[klen - 1];
        if ((out->records & 1023) == 0)
            progress_add(1024u * vlen);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        snprintf(s->errmsg, sizeof(s->errmsg), "rocksdb iterator: %s", err);
        rocksdb_free(err);
        return -EIO;
    }
    out->checksum = sum;
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    return 0;
}

static void rdb_close(struct sink *s)
{
    struct rdb *r = s->impl;
    if (!r)
        return;
    rocksdb_close(r->db);
    rocksdb_writeoptions_destroy(r->wopts);
    rocksdb_readoptions_destroy(r->ropts);
    rocksdb_options_destroy(r->opts);
    free(r);
    s->impl = NULL;
}

const struct sink_ops sink_rocksdb = {"rocksdb", rdb_open, rdb_append, rdb_read, rdb_close, NULL};

/* ================================ LMDB ================================ */

struct ldb {
    MDB_env *env;
    MDB_dbi dbi[PARTITIONS_MAX];
    uint64_t next_seq[PARTITIONS_MAX]; /* touched only inside a write transaction */
    uint32_t partitions;
};

static int ldb_open(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    if (partitions > PARTITIONS_MAX)
        return -EINVAL;
    struct ldb *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->partitions = partitions;
    int rc = mdb_env_create(&l->env);
    if (rc == 0)
        rc = mdb_env_set_mapsize(l->env, (size_t)256 << 30); /* virtual; the file grows */
    if (rc == 0)
        rc = mdb_env_set_maxdbs(l->env, PARTITIONS_MAX);
    if (rc == 0)
        rc = mdb_env_set_maxreaders(l->env, 256);
    unsigned flags = MDB_NOTLS | (durable ? 0 : MDB_NOSYNC);
    if (rc == 0)
        rc = mdb_env_open(l->env, dir, flags, 0644);
    MDB_txn *txn = NULL;
    if (rc == 0)
        rc = mdb_txn_begin(l->env, NULL, 0, &txn);
    for (uint32_t p = 0; rc == 0 && p < partitions; p++) {
        char name[16];
        snprintf(name, sizeof(name), "p%u", p);
        rc = mdb_dbi_open(txn, name, MDB_CREATE, &l->dbi[p]);
    }
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else if (txn)
        mdb_txn_abort(txn);
    if (rc) {
        snprintf(s->errmsg, sizeof(s->errmsg), "lmdb open: %s", mdb_strerror(rc));
        mdb_env_close(l->env);
        free(l);
        return -EIO;
    }
    s->impl = l;
    return 0;
}

static int ldb_append(struct sink *s, uint32_t partition, const struct rt_record *recs, size_t n)
{
    struct ldb *l = s->impl;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(l->env, NULL, 0, &txn); /* blocks on LMDB's writer mutex */
    uint64_t seq = l->next_seq[partition];
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint8_t key[8];
        put_be64(key, seq + i);
        MDB_val k = {sizeof(key), key};
        MDB_val v = {(size_t)recs[i].value_len, (void *)recs[i].value};
        rc = mdb_put(txn, l->dbi[partition], &k, &v, MDB_APPEND);
    }
    if (rc == 0) {
        /* Set before the commit releases the writer mutex; a failed commit only leaves a gap,
         * which MDB_APPEND (keys increasing) allows. */
        l->next_seq[partition] = seq + n;
        rc = mdb_txn_commit(txn);
    } else if (txn) {
        mdb_txn_abort(txn);
    }
    if (rc) {
        snprintf(s->errmsg, sizeof(s->errmsg), "lmdb append: %s", mdb_strerror(rc));
        return -EIO;
    }
    return 0;
}

static int ldb_read(struct sink *s, uint32_t partition, bool touch, struct read_result *out)
{
    struct ldb *l = s->impl;
    memset(out, 0, sizeof(*out));
    uint64_t t0 = bench_now_ns();
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    int rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn);
    if (rc == 0)
        rc = mdb_cursor_open(txn, l->dbi[partition], &cur);
    uint64_t sum = 0;
    MDB_val k, v;
    int op = MDB_FIRST;
    while (rc == 0 && (rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
        op = MDB_NEXT;
        out->records++;
        out->value_bytes += v.mv_size;
        sum += touch ? bench_checksum(v.mv_data, v.mv_size)
                     : v.mv_size + ((const uint8_t *)k.mv_data)[k.mv_size - 1];
        if ((out->records & 1023) == 0)
            progress_add(1024u * v.mv_size);
    }
    if (cur)
        mdb_cursor_close(cur);
    if (txn)
        mdb_txn_abort(txn);
    if (rc != MDB_NOTFOUND) {
        snprintf(s->errmsg, sizeof(s->errmsg), "lmdb read: %s", mdb_strerror(rc));
        return -EIO;
    }
    out->checksum = sum;
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    return 0;
}

static void ldb_close(struct sink *s)
{
    struct ldb *l = s->impl;
    if (!l)
        return;
    mdb_env_close(l->env);
    free(l);
    s->impl = NULL;
}

const struct sink_ops sink_lmdb = {"lmdb", ldb_open, ldb_append, ldb_read, ldb_close, NULL};

/* ================================ SQLite ================================ */

struct sql {
    sqlite3 *db;
    pthread_mutex_t lock; /* one writer at a time: SQLite's own rule, without busy-waiting */
    sqlite3_stmt *begin, *commit;
    sqlite3_stmt *insert[PARTITIONS_MAX];
    uint32_t partitions;
};

static int sql_fail(struct sink *s, struct sql *q, const char *what)
{
    snprintf(s->errmsg, sizeof(s->errmsg), "sqlite %s: %s", what, sqlite3_errmsg(q->db));
    return -EIO;
}

static int sql_open(struct sink *s, const char *dir, bool durable, uint32_t partitions)
{
    if (partitions > PARTITIONS_MAX)
        return -EINVAL;
    struct sql *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    pthread_mutex_init(&q->lock, NULL);
    q->partitions = partitions;
    s->impl = q;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/bench.sqlite", dir);
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK)
        return sql_fail(s, q, "open");
    char sqlbuf[256];
    snprintf(sqlbuf, sizeof(sqlbuf), "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;",
             durable ? "FULL" : "OFF");
    if (sqlite3_exec(q->db, sqlbuf, NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(s, q, "pragma");
    for (uint32_t p = 0; p < partitions; p++) {
        snprintf(sqlbuf, sizeof(sqlbuf),
                 "CREATE TABLE IF NOT EXISTS p%u(k INTEGER PRIMARY KEY, v BLOB)", p);
        if (sqlite3_exec(q->db, sqlbuf, NULL, NULL, NULL) != SQLITE_OK)
            return sql_fail(s, q, "create");
        snprintf(sqlbuf, sizeof(sqlbuf), "INSERT INTO p%u(v) VALUES(?)", p);
        if (sqlite3_prepare_v2(q->db, sqlbuf, -1, &q->insert[p], NULL) != SQLITE_OK)
            return sql_fail(s, q, "prepare");
    }
    if (sqlite3_prepare_v2(q->db, "BEGIN", -1, &q->begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(q->db, "COMMIT", -1, &q->commit, NULL) != SQLITE_OK)
        return sql_fail(s, q, "prepare");
    return 0;
}

static int sql_step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rc;
}

static int sql_append(struct sink *s, uint32_t partition, const struct rt_record *recs, size_t n)
{
    struct sql *q = s->impl;
    pthread_mutex_lock(&q->lock);
    int rc = sql_step(q->begin);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_stmt *ins = q->insert[partition];
        sqlite3_bind_blob(ins, 1, recs[i].value, recs[i].value_len, SQLITE_STATIC);
        rc = sql_step(ins);
    }
    if (rc == 0)
        rc = sql_step(q->commit);
    else
        sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc)
        sql_fail(s, q, "append");
    pthread_mutex_unlock(&q->lock);
    return rc ? -EIO : 0;
}

static int sql_read(struct sink *s, uint32_t partition, bool touch, struct read_result *out)
{
    struct sql *q = s->impl;
    memset(out, 0, sizeof(*out));
    uint64_t t0 = bench_now_ns();
    char sqlbuf[64];
    snprintf(sqlbuf, sizeof(sqlbuf), "SELECT k, v FROM p%u ORDER BY k", partition);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sqlbuf, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(s, q, "prepare select");
    uint64_t sum = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 k = sqlite3_column_int64(st, 0);
        size_t len;
        if (touch) {
            const uint8_t *v = sqlite3_column_blob(st, 1);
            len = (size_t)sqlite3_column_bytes(st, 1);
            sum += bench_checksum(v, len);
        } else {
            len = (size_t)sqlite3_column_bytes(st, 1);
            sum += len + (uint64_t)k;
        }
        out->records++;
        out->value_bytes += len;
        if ((out->records & 1023) == 0)
            progress_add(1024u * len);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(s, q, "select");
    out->checksum = sum;
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    return 0;
}

static void sql_close(struct sink *s)
{
    struct sql *q = s->impl;
    if (!q)
        return;
    for (uint32_t p = 0; p < q->partitions; p++)
        sqlite3_finalize(q->insert[p]);
    sqlite3_finalize(q->begin);
    sqlite3_finalize(q->commit);
    sqlite3_close(q->db);
    pthread_mutex_destroy(&q->lock);
    free(q);
    s->impl = NULL;
}

const struct sink_ops sink_sqlite = {"sqlite", sql_open, sql_append, sql_read, sql_close, NULL};
