/*
 * sender_pool.h — the engine's shared sender threads (sender_pool.c): producers' send-side work
 * (sealing and handing over batches, linger timers, delivery callbacks) multiplexed as tasks
 * on a few threads, so an open producer costs no thread of its own. Internal.
 */
#ifndef RT_SENDER_POOL_H
#define RT_SENDER_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Threads kept while the pool has work (more start only to stand in for blocked ones, SN4). */
#define SENDER_POOL_THREADS_MIN 2
/* The most threads the pool ever runs, blocked ones included (SN4). */
#define SENDER_POOL_THREADS_MAX 256
/* A thread above the minimum that found no work for this long exits. */
#define SENDER_POOL_IDLE_EXIT_MS 1000

struct sender_task;

/* Runs one pass of the task's work on a pool thread. Returns the monotonic time (ms) at which
 * the task wants to run again if nothing wakes it first, or -1 for no timer. */
typedef int64_t (*sender_task_fn)(struct sender_task *t);

enum sender_task_state {
    SENDER_TASK_IDLE = 0,
    SENDER_TASK_QUEUED,
    SENDER_TASK_RUNNING,
    SENDER_TASK_RUNNING_AGAIN, /* woken while running: queued again when this pass ends */
};

/* Embedded in its owner (the producer); every field but fn belongs to the pool's lock. */
struct sender_task {
    sender_task_fn fn;
    enum sender_task_state state;
    bool detached;  /* sender_pool_detach ran: never queued again */
    int64_t due_ms; /* armed timer, or -1 */
    uint32_t heap_index;
    struct sender_task *next;
};

struct sender_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;             /* a task became runnable, an earlier timer, or stopping */
    pthread_cond_t finished;         /* a task's pass ended, or a thread exited */
    struct sender_task *head, *tail; /* runnable, in wake order */
    struct sender_task **timers;     /* min-heap by due_ms */
    uint32_t timer_count, timer_capacity;
    uint32_t threads;         /* alive */
    uint32_t threads_idle;    /* waiting for work */
    uint32_t threads_blocked; /* inside sender_pool_blocking_begin/end */
    uint32_t spawn_failures;
    bool stopping;
};

/* Starts no thread: the first wake does. */
int sender_pool_init(struct sender_pool *pool);
/* Stops and joins every thread. No task may still be attached (every producer closed: EN1). */
void sender_pool_destroy(struct sender_pool *pool);

void sender_task_init(struct sender_task *t, sender_task_fn fn);
/* Makes the task runnable (once, however often it is woken before it runs). Any thread,
 * shard threads included: takes the pool's lock briefly and never waits for anything else. */
void sender_pool_wake(struct sender_pool *pool, struct sender_task *t);
/* Runs the task at due_ms unless an earlier timer is armed (an earlier one stays). */
void sender_pool_arm(struct sender_pool *pool, struct sender_task *t, int64_t due_ms);
/* Takes the task out of the pool: waits for a pass that is running (never call it from that
 * very pass), drops its timer and queue slot, and refuses later wakes. */
void sender_pool_detach(struct sender_pool *pool, struct sender_task *t);

/* Brackets a wait on a pool thread (a coordinator write, a full shard queue, a callback's call
 * into another producer): while every thread is blocked and work is queued, another thread
 * starts (SN4). Off a pool thread, they do nothing. */
void sender_pool_blocking_begin(void);
void sender_pool_blocking_end(void);
/* True on a pool thread. */
bool sender_pool_on_pool_thread(void);
/* True inside t's own pass (its delivery callbacks included), on this thread. */
bool sender_pool_in_task(const struct sender_task *t);

#endif /* RT_SENDER_POOL_H */
