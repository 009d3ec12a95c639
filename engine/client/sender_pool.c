/*
 * sender_pool.c — the engine's shared sender threads. A producer's send-side work (seal and
 * hand over closed batches, close batches whose linger ran out, run delivery callbacks) is one
 * task; the pool runs tasks that were woken or whose timer is due, one pass at a time, on a few
 * threads shared by every producer of the engine. An open producer therefore costs no thread:
 * 10 000 idle producers cost 10 000 task structs and no stack.
 *
 * Why a pool and not the engine's existing threads: a shard thread must never wait on a shard
 * queue nor run user code, and handing a batch over may wait on a full shard queue; a delivery
 * callback is user code. The coordinator's timer thread writes durably and cannot wait on
 * producers either. So the pool's threads are the only ones that do this work, and they are
 * started by the first wake (an engine that never produces starts none).
 *
 * The pool owns its run queue, its timer heap and its threads; it never looks inside a task
 * (the producer owns its state and its lock) and never calls a task's function with its own
 * lock held.
 *
 * SN1. A task runs on at most one thread at a time. A wake while it runs marks it
 *      RUNNING_AGAIN, and it is queued again when that pass ends, so no wake is lost.
 * SN2. A task is in the run queue iff its state is QUEUED, and in the timer heap iff its
 *      due_ms >= 0; heap_index is its slot there.
 * SN3. Lock order: a task owner's lock, then the pool's. The pool takes no other lock while
 *      holding its own, and calls a task's fn with no lock held.
 * SN4. Threads: a wake starts one while fewer than SENDER_POOL_THREADS_MIN are alive and none
 *      is idle; beyond that, one more starts (up to SENDER_POOL_THREADS_MAX) whenever work is
 *      queued, no thread is idle and every live thread is blocked (sender_pool_blocking_begin),
 *      so a task waiting for a durable coordinator write or for another producer (a callback
 *      sending into or flushing it) never holds up the others, and a pass that needs another
 *      task's progress always finds a thread for it. A full shard queue is not such a wait: it
 *      drains without the pool, and standing in for it would only start threads that queue on
 *      it too. A thread above the minimum that found no work for SENDER_POOL_IDLE_EXIT_MS
 *      exits. A failed thread start leaves the work queued for the next wake to retry. A wake
 *      on a shard thread may start a thread (a clone under the pool's lock, rare: below the
 *      minimum or with every thread blocked); it never waits for anything.
 * SN5. After sender_pool_detach returns the pool holds no reference to the task, and it is
 *      never queued again; its owner guarantees no wake after that (a closed producer has no
 *      batch in flight).
 */
#include "sender_pool.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "fsutil.h"

static _Thread_local struct sender_pool *current_pool;
static _Thread_local const struct sender_task *current_task; /* the pass this thread runs */

/* ---- timers: a binary min-heap of tasks by due_ms ---- */

static void heap_swap(struct sender_pool *pool, uint32_t i, uint32_t j)
{
    struct sender_task *a = pool->timers[i];
    pool->timers[i] = pool->timers[j];
    pool->timers[j] = a;
    pool->timers[i]->heap_index = i;
    pool->timers[j]->heap_index = j;
}

static void heap_up(struct sender_pool *pool, uint32_t i)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (pool->timers[parent]->due_ms <= pool->timers[i]->due_ms)
            break;
        heap_swap(pool, i, parent);
        i = parent;
    }
}

static void heap_down(struct sender_pool *pool, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < pool->timer_count && pool->timers[l]->due_ms < pool->timers[m]->due_ms)
            m = l;
        if (r < pool->timer_count && pool->timers[r]->due_ms < pool->timers[m]->due_ms)
            m = r;
        if (m == i)
            return;
        heap_swap(pool, i, m);
        i = m;
    }
}

static void heap_remove(struct sender_pool *pool, struct sender_task *t)
{
    assert(t->due_ms >= 0); /* SN2 */
    uint32_t i = t->heap_index;
    assert(i < pool->timer_count && pool->timers[i] == t);
    uint32_t last = --pool->timer_count;
    if (i != last) {
        heap_swap(pool, i, last);
        heap_down(pool, i);
        heap_up(pool, i);
    }
    t->due_ms = -1;
}

/* Lock held. Keeps the earlier of an armed timer and due_ms. On -ENOMEM the timer is not armed:
 * the task is made runnable instead (an early pass is harmless; a lost one is not). */
static int arm_locked(struct sender_pool *pool, struct sender_task *t, int64_t due_ms)
{
    assert(due_ms >= 0);
    if (t->due_ms >= 0) {
        if (due_ms >= t->due_ms)
            return 0;
        t->due_ms = due_ms;
        heap_up(pool, t->heap_index);
        return 0;
    }
    if (pool->timer_count == pool->timer_capacity) {
        uint32_t cap = pool->timer_capacity ? pool->timer_capacity * 2 : 64;
        struct sender_task **a = realloc(pool->timers, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        pool->timers = a;
        pool->timer_capacity = cap;
    }
    t->due_ms = due_ms;
    t->heap_index = pool->timer_count;
    pool->timers[pool->timer_count++] = t;
    heap_up(pool, t->heap_index);
    return 0;
}

/* ---- threads ---- */

static void *pool_main(void *arg);

/* Lock held. SN4. */
static void maybe_spawn(struct sender_pool *pool)
{
    if (pool->stopping || pool->threads_idle > 0 || !pool->head)
        return;
    bool below_min = pool->threads < SENDER_POOL_THREADS_MIN;
    bool all_blocked = pool->threads == pool->threads_blocked;
    if (!below_min && !(all_blocked && pool->threads < SENDER_POOL_THREADS_MAX))
        return;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        pool->spawn_failures++;
        return;
    }
    /* Detached: a thread that exits for idleness is never joined; destroy waits for the count
     * (SN4) under the lock instead. */
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    int rc = pthread_create(&tid, &attr, pool_main, pool);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pool->spawn_failures++;
        return;
    }
    pool->threads++;
}

static void push_locked(struct sender_pool *pool, struct sender_task *t)
{
    t->state = SENDER_TASK_QUEUED;
    t->next = NULL;
    if (pool->tail)
        pool->tail->next = t;
    else
        pool->head = t;
    pool->tail = t;
}

/* Lock held. SN1. */
static void wake_locked(struct sender_pool *pool, struct sender_task *t)
{
    if (t->detached)
        return;
    switch (t->state) {
    case SENDER_TASK_IDLE:
        push_locked(pool, t);
        if (pool->threads_idle > 0)
            pthread_cond_signal(&pool->work);
        else
            maybe_spawn(pool);
        return;
    case SENDER_TASK_RUNNING:
        t->state = SENDER_TASK_RUNNING_AGAIN;
        return;
    case SENDER_TASK_QUEUED:
    case SENDER_TASK_RUNNING_AGAIN:
        return;
    }
}

static void fire_timers(struct sender_pool *pool, int64_t now)
{
    while (pool->timer_count > 0 && pool->timers[0]->due_ms <= now) {
        struct sender_task *t = pool->timers[0];
        heap_remove(pool, t);
        wake_locked(pool, t);
    }
}

static struct timespec abs_after_ms(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

static void *pool_main(void *arg)
{
    struct sender_pool *pool = arg;
    current_pool = pool;
    pthread_mutex_lock(&pool->lock);
    int64_t idle_since = -1;
    for (;;) {
        int64_t now = fs_monotonic_ms();
        fire_timers(pool, now);
        struct sender_task *t = pool->head;
        if (t) {
            pool->head = t->next;
            if (!pool->head)
                pool->tail = NULL;
            t->next = NULL;
            assert(t->state == SENDER_TASK_QUEUED); /* SN2 */
            t->state = SENDER_TASK_RUNNING;
            if (pool->head && pool->threads_idle > 0)
                pthread_cond_signal(&pool->work); /* more work: another thread takes it */
            pthread_mutex_unlock(&pool->lock);
            current_task = t;
            int64_t due = t->fn(t); /* SN3: no lock held */
            current_task = NULL;
            pthread_mutex_lock(&pool->lock);
            bool again = t->state == SENDER_TASK_RUNNING_AGAIN;
            assert(again || t->state == SENDER_TASK_RUNNING); /* SN1 */
            t->state = SENDER_TASK_IDLE;
            if (!t->detached) {
                if (due >= 0 && arm_locked(pool, t, due) != 0)
                    again = true;
                if (again)
                    push_locked(pool, t);
            }
            pthread_cond_broadcast(&pool->finished);
            idle_since = -1;
            continue;
        }
        if (pool->stopping)
            break;
        if (idle_since < 0)
            idle_since = now;
        bool extra = pool->threads > SENDER_POOL_THREADS_MIN;
        if (extra && now - idle_since >= SENDER_POOL_IDLE_EXIT_MS)
            break;
        int64_t deadline = pool->timer_count > 0 ? pool->timers[0]->due_ms : INT64_MAX;
        if (extra && idle_since + SENDER_POOL_IDLE_EXIT_MS < deadline)
            deadline = idle_since + SENDER_POOL_IDLE_EXIT_MS;
        pool->threads_idle++;
        if (deadline == INT64_MAX) {
            pthread_cond_wait(&pool->work, &pool->lock);
        } else {
            int64_t wait_ms = deadline - now;
            struct timespec ts = abs_after_ms(wait_ms < 1 ? 1 : wait_ms);
            pthread_cond_timedwait(&pool->work, &pool->lock, &ts);
        }
        pool->threads_idle--;
    }
    assert(pool->threads > 0);
    pool->threads--;
    pthread_cond_broadcast(&pool->finished);
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* ---- interface ---- */

int sender_pool_init(struct sender_pool *pool)
{
    *pool = (struct sender_pool){0};
    int rc = pthread_mutex_init(&pool->lock, NULL);
    if (rc)
        return -rc;
    rc = pthread_cond_init(&pool->work, NULL);
    if (rc) {
        pthread_mutex_destroy(&pool->lock);
        return -rc;
    }
    rc = pthread_cond_init(&pool->finished, NULL);
    if (rc) {
        pthread_cond_destroy(&pool->work);
        pthread_mutex_destroy(&pool->lock);
        return -rc;
    }
    return 0;
}

void sender_pool_destroy(struct sender_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    assert(!pool->head && pool->timer_count == 0); /* SN5: every task detached */
    pool->stopping = true;
    pthread_cond_broadcast(&pool->work);
    while (pool->threads > 0)
        pthread_cond_wait(&pool->finished, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    free(pool->timers);
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->work);
    pthread_mutex_destroy(&pool->lock);
}

void sender_task_init(struct sender_task *t, sender_task_fn fn)
{
    *t = (struct sender_task){.fn = fn, .state = SENDER_TASK_IDLE, .due_ms = -1};
}

void sender_pool_wake(struct sender_pool *pool, struct sender_task *t)
{
    pthread_mutex_lock(&pool->lock);
    wake_locked(pool, t);
    pthread_mutex_unlock(&pool->lock);
}

void sender_pool_arm(struct sender_pool *pool, struct sender_task *t, int64_t due_ms)
{
    pthread_mutex_lock(&pool->lock);
    if (!t->detached) {
        bool earliest = pool->timer_count == 0 || due_ms < pool->timers[0]->due_ms;
        if (arm_locked(pool, t, due_ms) != 0)
            wake_locked(pool, t);
        else if (earliest && pool->threads_idle > 0)
            pthread_cond_signal(&pool->work); /* an idle thread sleeps until the old earliest */
        else if (pool->threads == 0)
            wake_locked(pool, t); /* no thread yet to watch the timer: start one */
    }
    pthread_mutex_unlock(&pool->lock);
}

void sender_pool_detach(struct sender_pool *pool, struct sender_task *t)
{
    pthread_mutex_lock(&pool->lock);
    assert(current_task != t); /* never from its own pass: it would wait for itself */
    t->detached = true;
    while (t->state == SENDER_TASK_RUNNING || t->state == SENDER_TASK_RUNNING_AGAIN)
        pthread_cond_wait(&pool->finished, &pool->lock);
    if (t->state == SENDER_TASK_QUEUED) {
        struct sender_task **pp = &pool->head, *prev = NULL;
        while (*pp && *pp != t) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        assert(*pp == t); /* SN2 */
        *pp = t->next;
        if (pool->tail == t)
            pool->tail = prev;
        t->next = NULL;
    }
    t->state = SENDER_TASK_IDLE;
    if (t->due_ms >= 0)
        heap_remove(pool, t);
    pthread_mutex_unlock(&pool->lock);
}

bool sender_pool_on_pool_thread(void)
{
    return current_pool != NULL;
}

bool sender_pool_in_task(const struct sender_task *t)
{
    return current_task == t;
}

void sender_pool_blocking_begin(void)
{
    struct sender_pool *pool = current_pool;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->threads_blocked++;
    assert(pool->threads_blocked <= pool->threads);
    maybe_spawn(pool);
    pthread_mutex_unlock(&pool->lock);
}

void sender_pool_blocking_end(void)
{
    struct sender_pool *pool = current_pool;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    assert(pool->threads_blocked > 0);
    pool->threads_blocked--;
    pthread_mutex_unlock(&pool->lock);
}
