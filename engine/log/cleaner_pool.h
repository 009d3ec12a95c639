/*
 * cleaner_pool.h — the engine's cleaner thread: one background thread per writable engine that
 * runs the log cleaner (cleaner.h) on each compacted partition the shards' housekeeping finds
 * due, one partition at a time, so a clean's reading, filtering, writing and fdatasyncs happen
 * beside the shards' rounds instead of inside them (issue 26: a 256 MiB clean on the shard thread
 * stalled every append of that shard for seconds).
 *
 * It owns only the thread and its queue of partitions. It never decides whether a clean is due
 * (cleaner_due, on the shard thread, does), never touches a partition's writer state (the
 * cleaner's shard calls do), and never outlives the shards: it is stopped before them.
 */
#ifndef RT_CLEANER_POOL_H
#define RT_CLEANER_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct partition;

struct cleaner_pool {
    pthread_mutex_t lock;
    pthread_cond_t has_work;
    struct partition **queue; /* FIFO, [head, head + count) modulo capacity */
    uint32_t head, count, capacity;
    struct partition *running; /* the partition being cleaned, or NULL */
    bool stopping;
    bool started;
    pthread_t thread;
    uint64_t cleans; /* cleaner_clean calls made (tests) */
};

/* Tests only (ringtail_test.h rt_test_cleaner_background_set): the shards offer nothing. */
extern _Atomic bool cleaner_background_off;

/* Initialises an idle pool (no thread yet). */
void cleaner_pool_init(struct cleaner_pool *pool);

/* Starts the thread. Returns 0 or -errno. */
int cleaner_pool_start(struct cleaner_pool *pool);

/* Queues p unless it is queued already or the pool is stopping (CLP2). From a shard thread:
 * one mutex hold, never waits for a clean. false: not queued (no room, stopping). */
bool cleaner_pool_offer(struct cleaner_pool *pool, struct partition *p);

/* Takes p out of the queue (a topic deletion, after cleaner_cancel; cleaner_wait then waits for a running clean). */
void cleaner_pool_forget(struct cleaner_pool *pool, struct partition *p);

/* CLP3: cancels the running clean (CLB5), drops the queue and joins the thread. Idempotent;
 * before the shards stop. Not from a shard thread. */
void cleaner_pool_stop(struct cleaner_pool *pool);

#endif /* RT_CLEANER_POOL_H */
