/*
 * producer_batch.c — the producer's batches: the per-producer pool of acknowledged batches and
 * their buffers (PR1, PR4), the buffer-memory bound and its wait, the per-partition state found
 * or made on a partition's first send (PR3), and a partition's open batch opened and closed
 * (sealed and queued ready, PR7's numbering).
 *
 * Everything here runs under the producer's lock; it hands nothing to a shard (that is
 * producer_delivery.c) and never waits but for buffer memory.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "coordinator.h"
#include "error.h"
#include "fsutil.h"
#include "group.h"
#include "log.h"
#include "murmur2.h"
#include "producer.h"
#include "sender_pool.h"
#include "producer_internal.h"
#include "txn.h"

/* ---- batches ---- */

void producer_batch_destroy(struct pbatch *b)
{
    free(b->buf);
    free(b->cbs);
    free(b);
}

/* An acknowledged batch: back to the pool when it has the standard size, else freed. */
void producer_batch_free(struct rt_producer *p, struct pbatch *b)
{
    assert(p->memory_bytes >= b->cap);
    p->memory_bytes -= b->cap;
    if (b->buf && b->cap == p->opts.batch_size_bytes) {
        b->next = p->pool;
        p->pool = b;
        p->pooled_bytes += b->cap;
        assert(p->memory_bytes + p->pooled_bytes <= p->opts.buffer_memory_bytes); /* PR1 */
        return;
    }
    producer_batch_destroy(b);
}

/* Frees pooled batches until `cap` more bytes fit beside those in use and pooled (PR1). */
static void pool_trim(struct rt_producer *p, size_t cap)
{
    while (p->pool && p->memory_bytes + p->pooled_bytes + cap > p->opts.buffer_memory_bytes) {
        struct pbatch *b = p->pool;
        p->pool = b->next;
        p->pooled_bytes -= b->cap;
        producer_batch_destroy(b);
    }
}

/* A batch with a buffer of `cap` bytes: from the pool when it has the standard size, else new
 * (three allocations: only while the pool warms up, and for batches larger than standard). */
static struct pbatch *batch_take(struct rt_producer *p, size_t cap)
{
    if (cap == p->opts.batch_size_bytes && p->pool) {
        struct pbatch *b = p->pool;
        p->pool = b->next;
        p->pooled_bytes -= b->cap;
        assert(b->cap == cap);
        uint8_t *buf = b->buf;
        struct record_cb *cbs = b->cbs;
        uint32_t cbs_cap = b->cbs_cap;
        memset(b, 0, sizeof(*b));
        b->buf = buf;
        b->cap = cap;
        b->cbs = cbs;
        b->cbs_cap = cbs_cap;
        return b;
    }
    pool_trim(p, cap);
    struct pbatch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->buf = malloc(cap);
    b->cbs_cap = 64;
    b->cbs = malloc(b->cbs_cap * sizeof(*b->cbs));
    if (!b->buf || !b->cbs) {
        producer_batch_destroy(b);
        return NULL;
    }
    b->cap = cap;
    return b;
}

struct ppart *producer_part_find(struct rt_producer *p, struct partition *part)
{
    for (uint32_t i = 0; i < p->part_count; i++)
        if (p->parts[i]->part == part)
            return p->parts[i];
    return NULL;
}

/* Moves the partition's open batch to its ready queue; with `wake`, the pool's pass hands it
 * over, else the caller does (PR5). Returns whether a batch was closed. */
bool producer_close_batch(struct rt_producer *p, struct ppart *pp, bool wake)
{
    struct pbatch *b = pp->open;
    if (!b)
        return false;
    pp->open = NULL;
    if (pp->ready_tail)
        pp->ready_tail->next = b;
    else
        pp->ready_head = b;
    pp->ready_tail = b;
    if (wake)
        sender_pool_wake(p->senders, &p->task);
    return true;
}

void producer_close_open_batch(struct rt_producer *p, struct ppart *pp)
{
    producer_close_batch(p, pp, true);
}

/* The buffer a batch for a `need`-byte first record takes: the standard size, or one record's. */
size_t producer_batch_cap_for(const struct rt_producer *p, size_t need)
{
    size_t cap = p->opts.batch_size_bytes;
    if (need + BATCH_HEADER_BYTES > cap)
        cap = need + BATCH_HEADER_BYTES;
    return cap;
}

/* Back-pressure: a batch of `cap` bytes does not fit beside the buffers in use, and something
 * can drain (a batch larger than buffer_memory_bytes goes alone once the rest has). Lock held. */
bool producer_memory_full(const struct rt_producer *p, size_t cap)
{
    return p->memory_bytes + cap > p->opts.buffer_memory_bytes && p->outstanding > 0 &&
           !p->sticky_error;
}

/* Waits on p->changed for at most 10 ms; on a timeout wakes the producer's task again, which
 * retries a pool thread that failed to start (SN4: the work stays queued for the next wake).
 * Drops p->lock meanwhile. */
void producer_wait_changed(struct rt_producer *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    if (pthread_cond_timedwait(&p->changed, &p->lock, &ts) == ETIMEDOUT)
        sender_pool_wake(p->senders, &p->task);
}

/* PR8: waits once for buffer memory to be freed, handing every open batch over so that it
 * can be. Drops p->lock: when it returns, whatever the caller read before — the partition's
 * open batch, its next or last sequence, the sticky error — may have been changed by another
 * send, so the caller starts its decision again from the top (rt_producer_send). */
void producer_memory_wait(struct rt_producer *p)
{
    for (uint32_t i = 0; i < p->part_count; i++)
        producer_close_open_batch(p, p->parts[i]);
    /* Batches this send closed without a wake (PR5) are handed over by the pool now. */
    sender_pool_wake(p->senders, &p->task);
    sender_pool_blocking_begin(); /* a callback sending into another producer (SN4) */
    producer_wait_changed(p);
    sender_pool_blocking_end();
}

/* Opens the partition's batch, starting at base_seq; never waits (the caller waited for memory
 * with memory_wait and re-read its state first, PR8). Lock held throughout. */
int producer_open_batch(struct rt_producer *p, struct ppart *pp, size_t need, int32_t base_seq)
{
    size_t cap = producer_batch_cap_for(p, need);
    assert(!pp->open);
    assert(!producer_memory_full(p, cap));
    if (p->sticky_error)
        return p->sticky_error;
    struct pbatch *b = batch_take(p, cap);
    if (!b)
        return -ENOMEM;
    assert(b->cap == cap && b->buf && b->cbs && b->count == 0);
    b->producer = p;
    b->pp = pp;
    b->base_seq = base_seq;
    b->opened_ms = producer_mono_ms();
    b->number = p->batches_opened++; /* PR7 */
    int rc = batch_builder_init(&b->b, b->buf, cap, p->transactional ? BATCH_ATTR_TRANSACTIONAL : 0,
                                p->producer_id, p->epoch, base_seq);
    assert(rc == 0);
    (void)rc;
    p->memory_bytes += cap;
    p->outstanding++;
    pp->open = b;
    sender_pool_arm(p->senders, &p->task, b->opened_ms + p->opts.linger_ms); /* its linger */
    return 0;
}
