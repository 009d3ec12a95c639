/*
 * producer_delivery.c — how the producer's closed batches reach the shards and come back: the
 * hand-over in ready-queue order by one thread at a time (PR5, PR6's gathering for a commit),
 * the completion a shard thread records, and the sender pool's pass that hands over what waited,
 * closes batches whose linger ran out and runs the delivery callbacks (PR2).
 *
 * A shard thread here only records an outcome and wakes the task: it never waits on a shard
 * queue nor runs a callback. Callbacks run outside the producer's lock.
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

static bool txn_write_pending(const struct rt_producer *p);

/* ---- completion (shard thread) and delivery (sender pool) ---- */

/* On the shard thread: records the outcome and wakes the producer's task. Both locks are held
 * only for a moment (SN3), and the wake happens under the producer's lock: once it is dropped
 * the pool may deliver the batch and a close may free the producer. */
static void on_batch_done(struct shard_request *req)
{
    struct pbatch *b = (struct pbatch *)req;
    struct rt_producer *p = b->producer;
    pthread_mutex_lock(&p->lock);
    b->completed = true;
    sender_pool_wake(p->senders, &p->task);
    if (p->acks_waiting)
        pthread_cond_broadcast(&p->changed); /* PR6: the commit goes on before delivery */
    pthread_mutex_unlock(&p->lock);
}

/* PR9: does err of a batch of pp come from a partition fault that heals in place (shard.c
 * SH10), after which an anonymous idempotent producer may go on? Not for a named producer (its
 * ids may have gaps: a later batch stored past the failed one would make the failed one's resend
 * a duplicate), nor a transactional one (the transaction aborts), nor when the engine's write
 * side failed. RT_E_OUT_OF_ORDER_SEQUENCE follows from the gap the failed batch left. */
static bool fault_heals(const struct rt_producer *p, const struct ppart *pp, int err)
{
    if (p->named || p->transactional || log_write_check(p->log) != 0)
        return false;
    return err == RT_E_IO_FAILED || (pp->resync && err == RT_E_OUT_OF_ORDER_SEQUENCE);
}

/* Delivers completed batches at the head of each partition's in-flight queue, in order. Called
 * with the lock held; drops it around the callbacks. */
static void deliver_completed(struct rt_producer *p)
{
    for (uint32_t i = 0; i < p->part_count; i++) {
        struct ppart *pp = p->parts[i];
        while (pp->flight_head && pp->flight_head->completed) {
            struct pbatch *b = pp->flight_head;
            pp->flight_head = b->next;
            if (!pp->flight_head)
                pp->flight_tail = NULL;
            pp->in_flight--;
            int err = b->req.result;
            if (err) {
                if (fault_heals(p, pp, err)) {
                    if (!pp->resync) { /* PR9: the first batch of this partition not stored */
                        pp->resync = true;
                        pp->resync_seq = b->base_seq;
                        if (producer_close_batch(p, pp, false)) /* it fails too: hand it over */
                            sender_pool_wake(p->senders, &p->task);
                    }
                } else if (!p->sticky_error) {
                    p->sticky_error = err;
                }
                if (!p->first_error)
                    p->first_error = err;
            }
            p->delivering = b->number; /* PR7: still outstanding while its callbacks run */
            pthread_mutex_unlock(&p->lock);
            for (int32_t r = 0; r < b->count; r++) {
                if (!b->cbs[r].fn)
                    continue; /* the ctx is still kept for on_batch */
                int64_t off = -1;
                if (!err && b->req.base_offset >= 0)
                    off = b->req.base_offset + r;
                b->cbs[r].fn(b->cbs[r].ctx, err, err ? -1 : off, !err && b->req.duplicate);
            }
            if (p->opts.on_batch && b->count > 0)
                p->opts.on_batch(p->opts.on_batch_ctx, err, err ? -1 : b->req.base_offset,
                                 (uint32_t)b->count, !err && b->req.duplicate, b->cbs[0].ctx,
                                 b->cbs[b->count - 1].ctx);
            pthread_mutex_lock(&p->lock);
            p->delivering = UINT64_MAX;
            producer_batch_free(p, b);
            p->outstanding--;
            if (pp->resync && !pp->flight_head && !pp->ready_head && !pp->open) {
                pp->next_seq = pp->resync_seq; /* PR9: what the recovered partition expects */
                pp->resync = false;
            }
            pthread_cond_broadcast(&p->changed);
        }
    }
}

/* PR6: queues what a commit's hand-over gathered (the PrepareCommit with the first of it).
 * Called without p->lock, by the dispatcher; a request refused completes with its error. */
static void handover_submit(struct rt_producer *p, struct commit_handover *ho)
{
    if (ho->prep) {
        ho->reqs[ho->count++] = ho->prep;
        ho->prep = NULL;
    }
    for (size_t i = 0; i < ho->count; i++)
        ho->reqs[i]->decision = true; /* SH9 in shard.c: one group commit for the decisions */
    if (ho->count)
        (void)log_append_async_many(p->log, ho->reqs, ho->count);
    ho->count = 0;
}

/* Appends b to pp's in-flight list, the order its acknowledgements are delivered in. Lock held. */
static void flight_push(struct ppart *pp, struct pbatch *b)
{
    if (pp->flight_tail)
        pp->flight_tail->next = b;
    else
        pp->flight_head = b;
    pp->flight_tail = b;
    pp->in_flight++;
}

/* Seals ready batches and hands them over while in-flight slots are free. Lock held; dropped
 * around the shard hand-over and the coordinator call, with p->dispatching set (PR5). */
static void dispatch_ready_once(struct rt_producer *p)
{
    /* A transaction's partitions are added (durably, in one coordinator call) before their
     * first batch goes out; if that fails, their batches fail with it. */
    int add_rc = 0;
    if (p->transactional && p->txn != TXN_UNINITIALISED) {
        bool writes = txn_write_pending(p); /* txn_add_pending writes only for one not added */
        if (writes)
            sender_pool_blocking_begin(); /* SN4 */
        add_rc = producer_txn_add_pending(p);
        if (writes)
            sender_pool_blocking_end();
    }
    struct commit_handover *ho = p->handover; /* PR6 */
    for (uint32_t i = 0; i < p->part_count; i++) {
        struct ppart *pp = p->parts[i];
        bool pending =
            p->transactional && pp->ready_head && !producer_txn_partition_added(p, pp->part);
        if (pending && add_rc == 0)
            continue; /* noted while the coordinator call ran: added on the next pass */
        while (pending && pp->ready_head) {
            struct pbatch *b = pp->ready_head;
            pp->ready_head = b->next;
            if (!pp->ready_head)
                pp->ready_tail = NULL;
            b->next = NULL;
            b->req.result = add_rc;
            b->completed = true;
            sender_pool_wake(p->senders, &p->task); /* to deliver */
            flight_push(pp, b);
        }
        while (pp->ready_head && pp->in_flight < p->opts.max_in_flight) {
            struct pbatch *b = pp->ready_head;
            pp->ready_head = b->next;
            if (!pp->ready_head)
                pp->ready_tail = NULL;
            b->next = NULL;
            if (b->skip) {
                /* Acknowledged as duplicates, in order with the batches around them. */
                b->req.result = 0;
                b->req.duplicate = true;
                b->req.base_offset = -1;
                b->completed = true;
                sender_pool_wake(p->senders, &p->task); /* to deliver */
                flight_push(pp, b);
                continue;
            }
            if (p->named) {
                /* Kafka's header implies contiguous sequences (baseSequence + i); a named
                 * producer's ids may have gaps. Partitions deduplicate named producers by the
                 * highest sequence only, so the batch is stamped to end exactly at its highest
                 * id: baseSequence = last - (count - 1), which is >= its real first id, so a
                 * batch wholly above the persisted sequence still starts above it. */
                b->b.base_sequence = (int32_t)(b->last_seq - (b->count - 1));
            }
            flight_push(pp, b);
            int rc = p->sticky_error;
            /* The batch is the sender's alone now (only this thread walks the in-flight list):
             * seal it (the CRC over the whole batch) and hand it over without p->lock, so the
             * caller's sends are not held up behind the CRC. */
            pthread_mutex_unlock(&p->lock);
            size_t len = 0;
            if (rc == 0)
                rc = batch_builder_finish(&b->b, &len);
            const char *why = NULL;
            if (rc == 0)
                rc = batch_header_parse(b->buf, len, &b->req.header, &why);
            if (rc == 0) /* LogAppendTime: the clock now (batch.c V17); CreateTime: no-op */
                (void)log_stamp_timestamps(p->log, pp->part, b->buf, len, &b->req.header,
                                           b->b.max_timestamp);
            memset(&b->req, 0, offsetof(struct shard_request, header));
            b->req.kind = SHARD_REQ_APPEND;
            b->req.partition = pp->part;
            b->req.batch = b->buf;
            b->req.len = len;
            b->req.on_done = on_batch_done;
            /* Called without p->lock, which is all on_batch_done takes: an idle shard may run
             * the round on this thread (SH5 in shard.c) — no shard thread wake-up. */
            b->req.may_run_inline = true;
            b->req.decision = false;
            b->req.owner = b;
            if (rc == 0 && ho) {
                /* PR6: gathered for one hand-over with the PrepareCommit (a slot kept for it);
                 * from here the request completes through on_done whatever happens. */
                b->req.may_run_inline = false;
                if (ho->count + 1 >= LOG_APPEND_ASYNC_MANY_MAX)
                    handover_submit(p, ho);
                ho->reqs[ho->count++] = &b->req;
            } else if (rc == 0) {
                /* may wait on a full shard queue: back-pressure from the disk, which drains
                 * without the pool, so no thread stands in (SN4) */
                rc = log_append_async(p->log, &b->req);
            }
            pthread_mutex_lock(&p->lock);
            if (rc) {
                b->req.result = rc;
                b->completed = true;
                sender_pool_wake(p->senders, &p->task); /* to deliver */
            }
        }
    }
}

/* PR5: ordering. Batches reach a partition's shard in the order they left its ready queue only
 * if one thread at a time takes them from the queue and hands them over; the hand-over drops
 * the lock, so a second caller meanwhile only asks the first to look again. Lock held. */
void producer_dispatch_ready(struct rt_producer *p)
{
    if (p->dispatching) {
        p->dispatch_again = true;
        return;
    }
    p->dispatching = true;
    do {
        p->dispatch_again = false;
        dispatch_ready_once(p);
        struct commit_handover *ho = p->handover;
        if (ho && (ho->count || ho->prep)) {
            pthread_mutex_unlock(&p->lock); /* as around any hand-over */
            handover_submit(p, ho);
            pthread_mutex_lock(&p->lock);
        }
    } while (p->dispatch_again);
    p->dispatching = false;
    if (p->handover_waiting)
        pthread_cond_broadcast(&p->changed); /* PR6: a commit waits to dispatch itself */
}

/* A partition has a batch to hand over and a free slot (and nobody is handing over: they will
 * see it), or a completed batch to deliver. Lock held. */
bool producer_has_work(const struct rt_producer *p)
{
    for (uint32_t i = 0; i < p->part_count; i++) {
        const struct ppart *pp = p->parts[i];
        if ((!p->dispatching && pp->ready_head && pp->in_flight < p->opts.max_in_flight) ||
            (pp->flight_head && pp->flight_head->completed))
            return true;
    }
    return false;
}

/* Whether handing over would write to the coordinator (a transaction's partition not added
 * yet): never on a send's thread, which must not wait for the disk. Lock held. */
static bool txn_write_pending(const struct rt_producer *p)
{
    if (!p->transactional || p->txn == TXN_UNINITIALISED)
        return false;
    for (uint32_t i = 0; i < p->txn_part_count; i++)
        if (!p->txn_added[i])
            return true;
    return false;
}

/* PR5: the batches a send or flush closed, handed over on the caller's thread — no wake and no
 * thread hop per batch — unless that would write to the coordinator from a send; what cannot go
 * now (no free slot, a pending coordinator write) is left to the pool. Lock held. */
void producer_hand_over_closed(struct rt_producer *p, bool may_write)
{
    if (may_write || !txn_write_pending(p))
        producer_dispatch_ready(p);
    if (producer_has_work(p))
        sender_pool_wake(p->senders, &p->task);
}

/* Closes open batches whose linger ran out; the nearest deadline still ahead goes to next_due. */
static void close_expired(struct rt_producer *p, int64_t now, int64_t *next_due)
{
    for (uint32_t i = 0; i < p->part_count; i++) {
        struct pbatch *b = p->parts[i]->open;
        if (!b)
            continue;
        int64_t due = b->opened_ms + p->opts.linger_ms;
        if (due <= now)
            producer_close_open_batch(p, p->parts[i]);
        else if (due < *next_due)
            *next_due = due;
    }
}

/* PR4: an idle producer (nothing open, ready or in flight) gives its pooled batch buffers back,
 * so what it holds is its struct and per-partition sequences (docs/limits.md). Lock held. */
static void trim_if_idle(struct rt_producer *p)
{
    if (p->outstanding > 0)
        return;
    while (p->pool) {
        struct pbatch *b = p->pool;
        p->pool = b->next;
        p->pooled_bytes -= b->cap;
        producer_batch_destroy(b);
    }
    assert(p->pooled_bytes == 0);
}

/* The producer's task (PR2), one pass on a sender-pool thread: what a sender thread of its own
 * did in one turn of its loop. Returns the nearest linger deadline, or -1 with nothing open. */
int64_t producer_pass(struct sender_task *t)
{
    struct rt_producer *p = (struct rt_producer *)((char *)t - offsetof(struct rt_producer, task));
    pthread_mutex_lock(&p->lock);
    int64_t next_due = INT64_MAX;
    close_expired(p, producer_mono_ms(), &next_due);
    producer_dispatch_ready(p);
    deliver_completed(p);
    if (producer_has_work(p))
        sender_pool_wake(p->senders, t); /* SN1: runs again when this pass ends */
    trim_if_idle(p);
    pthread_mutex_unlock(&p->lock);
    return next_due == INT64_MAX ? -1 : next_due;
}
