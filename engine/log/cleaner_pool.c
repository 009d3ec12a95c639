/*
 * cleaner_pool.c — the engine's cleaner thread (see cleaner_pool.h for what it owns and must
 * never do).
 *
 * Invariants:
 *   CLP1 The thread cleans one partition at a time, with cleaner_clean (force false: the clean
 *        is made only when it is still due at its prepare call, cleaner.c CLB3), outside the
 *        pool's lock; it never runs on a shard thread, so its shard calls never wait for it.
 *   CLP2 A partition is in the queue at most once (clean_queued, read and written under the
 *        pool's lock), so a partition that stays due while its clean waits is not queued again
 *        by every housekeeping pass; the queue holds at most `capacity` partitions (grown on
 *        demand; an offer that cannot grow it is dropped, the next pass offers again).
 *   CLP3 Stopping cancels the running clean (clean_cancel, CLB5: it ends at its next batch or
 *        shard call, swapping nothing more), drops what is queued, and joins the thread; the
 *        shards still run meanwhile (a cancelled clean's last calls need them). A partition
 *        pointer stays valid while queued or running: partitions are freed only by the close
 *        that stopped the pool first, and a topic deletion forgets its partitions
 *        (cleaner_cancel, cleaner_pool_forget, then cleaner_wait for a running clean) before anything
 *        of them goes.
 */
#include "cleaner_pool.h"

#include <errno.h>
#include <stdlib.h>

#include "cleaner.h"
#include "fsutil.h"
#include "partition.h"

_Atomic bool cleaner_background_off;

void cleaner_pool_init(struct cleaner_pool *pool)
{
    *pool = (struct cleaner_pool){0};
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->has_work, NULL);
}

static void *pool_main(void *arg)
{
    struct cleaner_pool *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->count == 0)
            pthread_cond_wait(&pool->has_work, &pool->lock);
        if (pool->stopping)
            break;
        struct partition *p = pool->queue[pool->head];
        pool->head = (pool->head + 1) % pool->capacity;
        pool->count--;
        p->clean_queued = false;
        pool->running = p;
        pthread_mutex_unlock(&pool->lock);
        (void)cleaner_clean(p, fs_now_ms(), false, NULL); /* CLP1; retried when due again */
        pthread_mutex_lock(&pool->lock);
        pool->running = NULL;
        pool->cleans++;
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int cleaner_pool_start(struct cleaner_pool *pool)
{
    int rc = pthread_create(&pool->thread, NULL, pool_main, pool);
    if (rc)
        return -rc;
    pool->started = true;
    return 0;
}

static bool grow(struct cleaner_pool *pool)
{
    uint32_t cap = pool->capacity ? pool->capacity * 2 : 16;
    struct partition **q = malloc((size_t)cap * sizeof(*q));
    if (!q)
        return false;
    for (uint32_t i = 0; i < pool->count; i++)
        q[i] = pool->queue[(pool->head + i) % pool->capacity];
    free(pool->queue);
    pool->queue = q;
    pool->head = 0;
    pool->capacity = cap;
    return true;
}

bool cleaner_pool_offer(struct cleaner_pool *pool, struct partition *p)
{
    bool queued = false;
    pthread_mutex_lock(&pool->lock);
    if (pool->started && !pool->stopping && !p->clean_queued &&
        (pool->count < pool->capacity || grow(pool))) {
        pool->queue[(pool->head + pool->count) % pool->capacity] = p;
        pool->count++;
        p->clean_queued = true; /* CLP2 */
        queued = true;
        pthread_cond_signal(&pool->has_work);
    }
    pthread_mutex_unlock(&pool->lock);
    return queued;
}

void cleaner_pool_forget(struct cleaner_pool *pool, struct partition *p)
{
    pthread_mutex_lock(&pool->lock);
    if (p->clean_queued) {
        uint32_t kept = 0;
        for (uint32_t i = 0; i < pool->count; i++) {
            struct partition *q = pool->queue[(pool->head + i) % pool->capacity];
            if (q != p)
                pool->queue[(pool->head + kept++) % pool->capacity] = q;
        }
        pool->count = kept;
        p->clean_queued = false;
    }
    pthread_mutex_unlock(&pool->lock);
}

void cleaner_pool_stop(struct cleaner_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    bool started = pool->started;
    pool->stopping = true;
    if (pool->running) /* CLP3, CLB5 */
        atomic_store_explicit(&pool->running->clean_cancel, true, memory_order_seq_cst);
    for (uint32_t i = 0; i < pool->count; i++)
        pool->queue[(pool->head + i) % pool->capacity]->clean_queued = false;
    pool->count = 0;
    pthread_cond_signal(&pool->has_work);
    pthread_mutex_unlock(&pool->lock);
    if (started)
        pthread_join(pool->thread, NULL);
    pthread_mutex_lock(&pool->lock);
    pool->started = false;
    free(pool->queue);
    pool->queue = NULL;
    pool->capacity = 0;
    pthread_mutex_unlock(&pool->lock);
}
