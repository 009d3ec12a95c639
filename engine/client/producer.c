/*
 * producer.c — the client-side producer embedders call: rt_producer_open/send/flush/close.
 *
 * Like a Kafka producer, it keeps one open batch per partition and encodes each record into it
 * as it is sent (one copy, from the caller's buffers into the batch). A batch is closed when it
 * reaches batch_size_bytes or batch_records_max records, when its oldest record is linger_ms
 * old, when a named producer's sequence jumps or its null-key records enter the next span, or
 * on flush; closed batches are sealed (header and CRC) and handed to the partition's shard by
 * the thread that closed them or by a sender-pool thread (PR5) asynchronously, at most max_in_flight per partition at a
 * time, in order, so the partition sees each producer's sequences in order.
 *
 * Placement of partition -1: murmur2 of the key; a null key goes to the sticky partition (moved
 * on per closed batch), except a named producer's record with its own sequence id, which goes to
 * (id / RT_NAMED_NULL_KEY_SPAN) % partitions. Named dedup is per partition by highest sequence,
 * so exactly-once across reruns needs the partition to be a pure function of the id; the id
 * itself stays the record's sequence in that partition. (A denser per-partition numbering, e.g.
 * id / partitions, would break the rule for a producer that also sends keyed records to the same
 * partition under their raw ids: only the identity keeps every partition's sequences increasing
 * for any mix of keyed and null-key records.)
 *
 * Threads: the caller's thread encodes, and seals and hands over the batches its send or flush
 * closed; the producer has no thread of its own. The rest of its send-side work — hand over
 * what had to wait (a free in-flight slot, a transaction's coordinator write), close batches
 * whose linger ran out, deliver — is one task on the engine's sender pool (sender_pool.c), run a
 * pass at a time on one of a few threads shared by every producer; completions arrive on shard threads, which only record the outcome
 * and wake the task (a shard thread must never wait on a shard queue nor run a callback).
 * Delivery callbacks run in the task's pass on a pool thread, outside the producer's lock.
 *
 * PR1. Acknowledged batches of batch_size_bytes go back to a per-producer pool with their buffer
 *      and callback array, and the next batch takes one from it (Kafka's BufferPool): once
 *      warm, a batch costs no allocation. memory_bytes + pooled_bytes <= buffer_memory_bytes,
 *      but for one batch larger than it.
 * PR2. The producer's task runs on one pool thread at a time (SN1), so its hand-overs and its
 *      deliveries keep their order per partition as a sender thread of its own kept them. Every
 *      change that gives the task work wakes it: a closed batch, a completion, a flush; a new
 *      open batch arms its linger deadline.
 * PR3. Per-partition state is allocated on the partition's first send and kept until close:
 *      its sequences must survive idleness, or a later batch would be out of order.
 * PR4. An idle producer (no batch open, ready or in flight) holds no batch buffer: the pool of
 *      PR1 is emptied when the last batch is acknowledged, so an idle producer costs its struct
 *      and ~100 B per partition written to (docs/limits.md), and no thread.
 * PR5. One thread at a time hands batches over (p->dispatching), so a partition's shard gets
 *      them in ready-queue order whoever closed them. A send hands over on its own thread what
 *      it closed unless that needs a coordinator write (a send never waits for the disk; it
 *      may wait for a full shard queue, as for buffer memory); a flush hands over everything,
 *      coordinator write included. This saves the wake and thread hop per batch that a sender
 *      thread or pool pass costs; completions still wake the pool to deliver.
 * PR8. A send takes its decisions — the record's sequence, whether a named id is a duplicate,
 *      which batch it joins — in one hold of p->lock. Where it must drop the lock midway (the
 *      wait for buffer memory, a named producer's first look at a partition), it reads the
 *      state again afterwards, never what it read before: sends from many threads into one
 *      partition would otherwise reuse a sequence and orphan an open batch (flush never
 *      returning). The other places that drop the lock hold what they work on privately: a
 *      batch off the ready queue (dispatch, under p->dispatching), a delivered batch, copies
 *      of the transaction's partitions.
 *
 * PR7. A flush waits for the records sent before it, not for every batch (Kafka's flush,
 *      librdkafka's rd_kafka_flush): batches are numbered as they open (per producer, in
 *      order per partition), and a flush closes every open batch, takes the count opened so
 *      far as its bound and waits until no batch numbered below it is outstanding — open,
 *      ready, in flight or in delivery. Every record whose send returned before the flush
 *      began is in such a batch; batches opened by sends on other threads meanwhile are not
 *      waited for, so a flush returns while others keep sending. rt_producer_close,
 *      init_transactions and abort wait for every batch (no other call may run then anyway);
 *      commit has its own waits (all_acknowledged, wait_delivered), which also cover every
 *      batch of the transaction. Cost: a scan of the producer's partitions per wake-up.
 *
 * PR6. A commit hands its last batches over together with the coordinator's PrepareCommit (one
 *      log_append_async_many: at most its last lone request runs inline), as the dispatcher while the commit's
 *      thread waits for any other hand-over to end first, so PR5's order holds and every shard
 *      involved gets its part of the decision in one round (coordinator.c CO9). It decides on
 *      the shards' acknowledgements (every batch completed, its result read) rather than on
 *      delivery, so the pool's delivery pass runs beside the marker round instead of before
 *      it; the commit still returns only after every callback ran (as a flush).
 *
 * Errors: there is no retriable append error in an embedded engine — a full queue is
 * back-pressure (the sender waits), and write failures are sticky — so the first failed batch
 * makes the producer's error sticky: later sends fail with it, and batches already in flight
 * behind it report their own outcome (typically RT_E_OUT_OF_ORDER_SEQUENCE).
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
#include "txn.h"

#define PRODUCER_PARTITIONS_MAX 4096
#define TXN_ADD_ON_STACK        4 /* partitions added in one call from the stack: ~1 KiB */

struct record_cb {
    rt_delivery_fn fn;
    void *ctx;
};

struct pbatch {
    struct shard_request req; /* handed to the shard; completion lands here */
    struct rt_producer *producer;
    struct ppart *pp;
    uint8_t *buf;
    size_t cap;
    struct batch_builder b;
    int32_t base_seq;
    int32_t count;
    int64_t last_seq;  /* named producers: the highest sequence id in the batch */
    int64_t opened_ms; /* monotonic, for linger */
    uint64_t number;   /* PR7: the producer's count of batches opened before this one */
    struct record_cb *cbs;
    uint32_t cbs_cap;
    bool completed;
    bool skip; /* named producer: records at or below the persisted sequence, never sent */
    struct pbatch *next;
};

struct ppart {
    struct partition *part;
    int64_t next_seq; /* the next sequence to assign (contiguous for anonymous producers) */
    int64_t last_seq; /* the last sequence accepted by send (named producers) */
    struct pbatch *open;
    struct pbatch *ready_head, *ready_tail;   /* closed, waiting for an in-flight slot */
    struct pbatch *flight_head, *flight_tail; /* handed over, in order */
    uint32_t in_flight;
};

struct sticky_topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partition; /* where null-key records go until that batch closes */
};

struct rt_producer {
    struct log *log;
    struct txn *txn_layer;
    _Atomic uint32_t *open_count; /* the engine's census of open producers (EN1 in engine.c) */
    struct rt_producer_options opts;
    char name[PRODUCER_NAME_MAX + 1];
    bool named;
    int64_t producer_id;
    int16_t epoch;

    pthread_mutex_t lock;
    pthread_cond_t changed; /* a batch completed, memory freed, or flush progress */
    /* PR2: the producer's send-side work, run by the engine's sender pool (sender_pool.c) */
    struct sender_pool *senders;
    struct sender_task task;

    /* PR3: one entry per partition written to, each allocated on its first send and kept
     * (its sequences must survive idleness); the pointer array grows by doubling. Batches
     * point at their entry, whose address never changes. */
    struct ppart **parts;
    uint32_t part_count, part_capacity;
    struct sticky_topic *sticky;
    uint32_t sticky_count, sticky_capacity;

    /* transactions */
    bool transactional;
    char txn_id[TXN_ID_MAX_BYTES + 1];
    struct coordinator *coordinator;
    enum { TXN_UNINITIALISED, TXN_READY, TXN_IN_TXN, TXN_FATAL } txn;
    struct partition **txn_parts; /* partitions of the open transaction */
    bool *txn_added;              /* ... and whether the coordinator has recorded each yet */
    uint32_t txn_part_count, txn_part_capacity;

    uint64_t memory_bytes; /* buffers of batches not yet acknowledged */
    uint32_t outstanding;  /* batches open, ready or in flight */
    /* PR7: batches opened so far (each gets the count before it as its number), and the number
     * of the batch whose callbacks are running (UINT64_MAX for none; one at a time, PR2). */
    uint64_t batches_opened;
    uint64_t delivering;
    /* PR1: acknowledged batches of batch_size_bytes, kept with their buffer and callback array
     * for the next batch (Kafka's BufferPool): once warm, a batch costs no allocation.
     * memory_bytes + pooled_bytes <= buffer_memory_bytes, but for one batch larger than it. */
    struct pbatch *pool;
    uint64_t pooled_bytes;
    int sticky_error;
    int first_error; /* since the last flush */
    /* PR5: one thread hands batches over at a time (the pool's pass, a send or a flush); one
     * that finds another doing it leaves its batches to it (dispatch_again). */
    bool dispatching, dispatch_again;
    /* PR6: a commit's hand-over in progress (on the committing thread's stack), or NULL. */
    struct commit_handover *handover;
    bool handover_waiting; /* a commit waits for another thread's hand-over to end */
    bool acks_waiting;     /* a commit waits for its batches' acknowledgements (PR6) */
};

/* PR6 (coordinator.c CO9): a commit's last batches and its PrepareCommit, gathered by the
 * dispatcher and queued in one log_append_async_many, so where the PrepareCommit's shard also
 * owns one of the transaction's partitions both go out in one round (one fdatasync round for the
 * decision, not two in a row); only the last lone request may run its round on the committing
 * thread (SH5), after every other shard has its part, so no partition's round waits for
 * another's fdatasync. Touched only by the dispatcher. */
struct commit_handover {
    struct shard_request *reqs[LOG_APPEND_ASYNC_MANY_MAX];
    size_t count;
    struct shard_request *prep; /* queued with the first requests, then NULL */
};

void rt_producer_options_init(struct rt_producer_options *o)
{
    memset(o, 0, sizeof(*o));
    o->batch_size_bytes = 16 * 1024;
    o->linger_ms = 5;
    o->max_in_flight = 5;
    o->buffer_memory_bytes = 32u << 20;
}

static int64_t mono_ms(void)
{
    return fs_monotonic_ms();
}

/* A producer's own delivery callback calling back into it would wait for the very pass that
 * runs the callback (ringtail.h, Threads). */
static int own_callback_refused(const char *call)
{
    return error_set(RT_E_INVALID_ARGUMENT,
                     "%s: called from one of this producer's own delivery callbacks, which "
                     "run inside its sender pass (call it from another thread)",
                     call);
}

static bool txn_partition_added(const struct rt_producer *p, const struct partition *part);
static bool txn_write_pending(const struct rt_producer *p);
static int txn_add_pending(struct rt_producer *p);
static int producer_flush(rt_producer *p, int32_t timeout_ms, bool all);

/* ---- batches ---- */

static void batch_destroy(struct pbatch *b)
{
    free(b->buf);
    free(b->cbs);
    free(b);
}

/* An acknowledged batch: back to the pool when it has the standard size, else freed. */
static void batch_free(struct rt_producer *p, struct pbatch *b)
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
    batch_destroy(b);
}

/* Frees pooled batches until `cap` more bytes fit beside those in use and pooled (PR1). */
static void pool_trim(struct rt_producer *p, size_t cap)
{
    while (p->pool && p->memory_bytes + p->pooled_bytes + cap > p->opts.buffer_memory_bytes) {
        struct pbatch *b = p->pool;
        p->pool = b->next;
        p->pooled_bytes -= b->cap;
        batch_destroy(b);
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
        batch_destroy(b);
        return NULL;
    }
    b->cap = cap;
    return b;
}

static struct ppart *part_find(struct rt_producer *p, struct partition *part)
{
    for (uint32_t i = 0; i < p->part_count; i++)
        if (p->parts[i]->part == part)
            return p->parts[i];
    return NULL;
}

/* Moves the partition's open batch to its ready queue; with `wake`, the pool's pass hands it
 * over, else the caller does (PR5). Returns whether a batch was closed. */
static bool close_batch(struct rt_producer *p, struct ppart *pp, bool wake)
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

static void close_open_batch(struct rt_producer *p, struct ppart *pp)
{
    close_batch(p, pp, true);
}

/* The buffer a batch for a `need`-byte first record takes: the standard size, or one record's. */
static size_t batch_cap_for(const struct rt_producer *p, size_t need)
{
    size_t cap = p->opts.batch_size_bytes;
    if (need + BATCH_HEADER_BYTES > cap)
        cap = need + BATCH_HEADER_BYTES;
    return cap;
}

/* Back-pressure: a batch of `cap` bytes does not fit beside the buffers in use, and something
 * can drain (a batch larger than buffer_memory_bytes goes alone once the rest has). Lock held. */
static bool memory_full(const struct rt_producer *p, size_t cap)
{
    return p->memory_bytes + cap > p->opts.buffer_memory_bytes && p->outstanding > 0 &&
           !p->sticky_error;
}

/* Waits on p->changed for at most 10 ms; on a timeout wakes the producer's task again, which
 * retries a pool thread that failed to start (SN4: the work stays queued for the next wake).
 * Drops p->lock meanwhile. */
static void wait_changed(struct rt_producer *p)
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
static void memory_wait(struct rt_producer *p)
{
    for (uint32_t i = 0; i < p->part_count; i++)
        close_open_batch(p, p->parts[i]);
    /* Batches this send closed without a wake (PR5) are handed over by the pool now. */
    sender_pool_wake(p->senders, &p->task);
    sender_pool_blocking_begin(); /* a callback sending into another producer (SN4) */
    wait_changed(p);
    sender_pool_blocking_end();
}

/* Opens the partition's batch, starting at base_seq; never waits (the caller waited for memory
 * with memory_wait and re-read its state first, PR8). Lock held throughout. */
static int open_batch(struct rt_producer *p, struct ppart *pp, size_t need, int32_t base_seq)
{
    size_t cap = batch_cap_for(p, need);
    assert(!pp->open);
    assert(!memory_full(p, cap));
    if (p->sticky_error)
        return p->sticky_error;
    struct pbatch *b = batch_take(p, cap);
    if (!b)
        return -ENOMEM;
    assert(b->cap == cap && b->buf && b->cbs && b->count == 0);
    b->producer = p;
    b->pp = pp;
    b->base_seq = base_seq;
    b->opened_ms = mono_ms();
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
                if (!p->sticky_error)
                    p->sticky_error = err;
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
            batch_free(p, b);
            p->outstanding--;
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
        add_rc = txn_add_pending(p);
        if (writes)
            sender_pool_blocking_end();
    }
    struct commit_handover *ho = p->handover; /* PR6 */
    for (uint32_t i = 0; i < p->part_count; i++) {
        struct ppart *pp = p->parts[i];
        bool pending = p->transactional && pp->ready_head && !txn_partition_added(p, pp->part);
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
static void dispatch_ready(struct rt_producer *p)
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
static bool has_work(const struct rt_producer *p)
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
static void hand_over_closed(struct rt_producer *p, bool may_write)
{
    if (may_write || !txn_write_pending(p))
        dispatch_ready(p);
    if (has_work(p))
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
            close_open_batch(p, p->parts[i]);
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
        batch_destroy(b);
    }
    assert(p->pooled_bytes == 0);
}

/* The producer's task (PR2), one pass on a sender-pool thread: what a sender thread of its own
 * did in one turn of its loop. Returns the nearest linger deadline, or -1 with nothing open. */
static int64_t producer_pass(struct sender_task *t)
{
    struct rt_producer *p = (struct rt_producer *)((char *)t - offsetof(struct rt_producer, task));
    pthread_mutex_lock(&p->lock);
    int64_t next_due = INT64_MAX;
    close_expired(p, mono_ms(), &next_due);
    dispatch_ready(p);
    deliver_completed(p);
    if (has_work(p))
        sender_pool_wake(p->senders, t); /* SN1: runs again when this pass ends */
    trim_if_idle(p);
    pthread_mutex_unlock(&p->lock);
    return next_due == INT64_MAX ? -1 : next_due;
}

/* ---- public API ---- */

int producer_open(struct log *lg, struct txn *t, struct sender_pool *senders,
                  const struct rt_producer_options *opts_in, _Atomic uint32_t *open_count,
                  rt_producer **out)
{
    if (!out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_open: NULL argument");
    *out = NULL;
    int ro = log_refuse_if_read_only(lg, "rt_producer_open");
    if (ro)
        return ro;
    struct rt_producer_options opts;
    if (opts_in)
        opts = *opts_in;
    else
        rt_producer_options_init(&opts);
    if (opts.max_in_flight < 1 || opts.max_in_flight > 5)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "max_in_flight must be 1..5 (Kafka's limit for "
                         "idempotence), got %u",
                         opts.max_in_flight);
    if (opts.batch_size_bytes < 128)
        return error_set(RT_E_INVALID_ARGUMENT, "batch_size_bytes must be >= 128");
    if (opts.batch_size_bytes > lg->opts.batch_size_max_bytes)
        opts.batch_size_bytes = lg->opts.batch_size_max_bytes; /* the engine's limit caps it */
    if (opts.buffer_memory_bytes < opts.batch_size_bytes)
        return error_set(RT_E_INVALID_ARGUMENT, "buffer_memory_bytes below batch_size_bytes");
    if (opts.linger_ms > 60000)
        return error_set(RT_E_INVALID_ARGUMENT, "linger_ms must be <= 60000");
    if (opts.transaction_timeout_ms < 0)
        return error_set(RT_E_INVALID_TRANSACTION_TIMEOUT,
                         "transaction_timeout_ms %d: must be 0 (the default, 60000) or "
                         "1..transaction_timeout_max_ms (%d)",
                         opts.transaction_timeout_ms, lg->opts.transaction_timeout_max_ms);
    struct rt_producer *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->log = lg;
    p->txn_layer = t;
    p->senders = senders;
    sender_task_init(&p->task, producer_pass);
    p->open_count = open_count;
    p->opts = opts;
    int rc = 0;
    if (opts.transactional_id) {
        if (opts.name) {
            free(p);
            return error_set(RT_E_INVALID_ARGUMENT,
                             "a producer is either named or transactional, not both");
        }
        size_t n = strlen(opts.transactional_id);
        if (n == 0 || n > TXN_ID_MAX_BYTES) {
            free(p);
            return error_set(RT_E_INVALID_ARGUMENT, "transactional ids are 1..%d bytes",
                             TXN_ID_MAX_BYTES);
        }
        /* The id is the key of its `__transaction_state` records, which hold UTF-8 (format.md
         * G.3 TLK5): refuse it here rather than at the first coordinator write. */
        uint8_t key[TXN_ID_MAX_BYTES + 8];
        size_t key_len = 0;
        if (txn_log_key_encode(opts.transactional_id, key, sizeof(key), &key_len) != 0) {
            free(p);
            return error_set(RT_E_INVALID_ARGUMENT,
                             "transactional_id is not valid UTF-8 (shortest form, no "
                             "surrogates, at most U+10FFFF)");
        }
        memcpy(p->txn_id, opts.transactional_id, n + 1);
        p->opts.transactional_id = p->txn_id;
        p->transactional = true;
        p->producer_id = -1;
        p->epoch = -1;
        rc = 0; /* the id comes from rt_producer_init_transactions */
    } else if (opts.name) {
        if (strlen(opts.name) > PRODUCER_NAME_MAX) {
            free(p);
            return error_set(RT_E_INVALID_ARGUMENT, "producer names are at most 249 bytes");
        }
        snprintf(p->name, sizeof(p->name), "%s", opts.name);
        p->opts.name = p->name;
        p->named = true;
        rc = txn_producer_open_name(t, opts.name, &p->producer_id, &p->epoch);
    } else {
        p->epoch = 0;
        rc = txn_producer_allocate(t, &p->producer_id);
    }
    if (rc) {
        free(p);
        return rc;
    }
    p->delivering = UINT64_MAX; /* PR7: no batch in delivery */
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    *out = p; /* no thread of its own (PR2): its task joins the pool at its first wake */
    return 0;
}

int rt_producer_id(const rt_producer *p, int64_t *producer_id_out, int16_t *epoch_out)
{
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_id: NULL producer");
    if (producer_id_out)
        *producer_id_out = p->producer_id;
    if (epoch_out)
        *epoch_out = p->epoch;
    return 0;
}

static struct ppart *part_get(struct rt_producer *p, struct partition *part, int *err)
{
    struct ppart *pp = part_find(p, part);
    if (pp)
        return pp;
    int64_t last = -1;
    if (p->named) {
        /* Continue after what the partition already holds for this name. The lock is dropped
         * around the lookup (PR6): another send may add this partition, or others, meanwhile,
         * so the table is looked at again, and the limit checked, after it. */
        pthread_mutex_unlock(&p->lock);
        int rc = log_producer_last_sequence(p->log, part, p->producer_id, &last);
        pthread_mutex_lock(&p->lock);
        if (rc) {
            *err = rc;
            return NULL;
        }
        if ((pp = part_find(p, part)) != NULL)
            return pp;
    }
    if (p->part_count == PRODUCER_PARTITIONS_MAX) {
        *err = error_set(RT_E_PRODUCER_PARTITIONS_FULL,
                         "a producer writes to at most %d partitions", PRODUCER_PARTITIONS_MAX);
        return NULL;
    }
    if (p->part_count == p->part_capacity) {
        /* PR3: only the pointer array moves; batches point at the entries themselves. */
        uint32_t cap = p->part_capacity ? p->part_capacity * 2 : 4;
        if (cap > PRODUCER_PARTITIONS_MAX)
            cap = PRODUCER_PARTITIONS_MAX;
        struct ppart **a = realloc(p->parts, cap * sizeof(*a));
        if (!a) {
            *err = -ENOMEM;
            return NULL;
        }
        p->parts = a;
        p->part_capacity = cap;
    }
    pp = calloc(1, sizeof(*pp));
    if (!pp) {
        *err = -ENOMEM;
        return NULL;
    }
    assert(p->part_count < p->part_capacity);
    p->parts[p->part_count++] = pp;
    pp->part = part;
    pp->last_seq = last;
    pp->next_seq = last + 1;
    return pp;
}

static uint32_t sticky_partition(struct rt_producer *p, const char *topic, uint32_t count)
{
    for (uint32_t i = 0; i < p->sticky_count; i++)
        if (strcmp(p->sticky[i].name, topic) == 0)
            return p->sticky[i].partition % count;
    if (p->sticky_count == p->sticky_capacity) {
        uint32_t cap = p->sticky_capacity ? p->sticky_capacity * 2 : 8;
        struct sticky_topic *s = realloc(p->sticky, cap * sizeof(*s));
        if (!s)
            return 0;
        p->sticky = s;
        p->sticky_capacity = cap;
    }
    struct sticky_topic *st = &p->sticky[p->sticky_count++];
    snprintf(st->name, sizeof(st->name), "%s", topic);
    st->partition = 0;
    return 0;
}

static void sticky_advance(struct rt_producer *p, const char *topic)
{
    for (uint32_t i = 0; i < p->sticky_count; i++)
        if (strcmp(p->sticky[i].name, topic) == 0)
            p->sticky[i].partition++;
}

/* ---- transactions ---- */

/* Notes a partition as part of the open transaction on its first send. The coordinator hears of
 * it before the partition's first batch is handed over, together with every other partition
 * noted meanwhile, in one call (Kafka's producer batches AddPartitionsToTxn the same way). The
 * call writes nothing (coordinator.c CO9): the transactional batch itself records the
 * participation. Lock held. */
static int txn_note_partition(struct rt_producer *p, struct partition *part)
{
    for (uint32_t i = 0; i < p->txn_part_count; i++)
        if (p->txn_parts[i] == part)
            return 0;
    if (p->txn_part_count == p->txn_part_capacity) {
        uint32_t cap = p->txn_part_capacity ? p->txn_part_capacity * 2 : 16;
        struct partition **a = realloc(p->txn_parts, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        p->txn_parts = a;
        bool *b = realloc(p->txn_added, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        p->txn_added = b;
        p->txn_part_capacity = cap;
    }
    p->txn_added[p->txn_part_count] = false;
    p->txn_parts[p->txn_part_count++] = part;
    return 0;
}

static bool txn_partition_added(const struct rt_producer *p, const struct partition *part)
{
    for (uint32_t i = 0; i < p->txn_part_count; i++)
        if (p->txn_parts[i] == part)
            return p->txn_added[i];
    return false;
}

/* Adds every noted partition the coordinator does not know yet, in one call. Lock held; dropped
 * around the coordinator call (only this thread and the caller's append to txn_parts). The pool's
 * hand-over and the caller's send_offsets or commit may both be here for one partition at once
 * (both joins are answered; an add is idempotent at the coordinator); a join answered after its
 * transaction ended would be one the guard below ignores, though commit (which waits for the
 * hand-over) and abort (whose flush waits for the batches behind the join) leave none.
 * Driven by tests/test_producer_concurrency.c. */
static int txn_add_pending(struct rt_producer *p)
{
    uint32_t n = 0, count = p->txn_part_count;
    for (uint32_t i = 0; i < count; i++)
        n += !p->txn_added[i];
    if (n == 0)
        return 0;
    /* Up to TXN_ADD_ON_STACK partitions at once (the common case) from the stack: a
     * transaction's first send costs no allocation (STYLE rule 8); more allocate once. */
    struct txn_log_partition stack_tp[TXN_ADD_ON_STACK];
    uint32_t stack_idx[TXN_ADD_ON_STACK];
    struct txn_log_partition *tp = stack_tp;
    uint32_t *idx = stack_idx;
    if (n > TXN_ADD_ON_STACK) {
        tp = calloc(n, sizeof(*tp));
        idx = calloc(n, sizeof(*idx));
        if (!tp || !idx) {
            free(tp);
            free(idx);
            return -ENOMEM;
        }
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (p->txn_added[i])
            continue;
        size_t tl = strnlen(p->txn_parts[i]->topic, RT_TOPIC_NAME_MAX);
        memcpy(tp[k].topic, p->txn_parts[i]->topic, tl);
        tp[k].topic[tl] = 0;
        tp[k].partition = p->txn_parts[i]->id;
        tp[k].last_sequence = -1;
        idx[k++] = i;
    }
    int64_t pid = p->producer_id;
    int16_t epoch = p->epoch;
    pthread_mutex_unlock(&p->lock);
    int rc = coordinator_join(p->coordinator, p->txn_id, pid, epoch, tp, n);
    pthread_mutex_lock(&p->lock);
    /* The lock was dropped: if the transaction ended meanwhile (a new epoch, or a new producer
     * id), the answer is about a transaction that is over. Its partitions' slots may already
     * hold the next transaction's, which this call never joined, and a fence of the old epoch
     * says nothing about the new one. */
    bool same = p->producer_id == pid && p->epoch == epoch;
    if (rc == 0 && same) {
        for (uint32_t j = 0; j < n; j++)
            if (idx[j] < p->txn_part_count)
                p->txn_added[idx[j]] = true;
    } else if (same && (rc == RT_E_PRODUCER_FENCED || rc == RT_E_INVALID_PRODUCER_EPOCH)) {
        p->txn = TXN_FATAL;
    }
    if (tp != stack_tp) {
        free(tp);
        free(idx);
    }
    return rc;
}

/* A new epoch (or producer id): every partition's sequences start again at 0. */
static void adopt_identity(struct rt_producer *p, int64_t pid, int16_t epoch)
{
    p->producer_id = pid;
    p->epoch = epoch;
    for (uint32_t i = 0; i < p->part_count; i++) {
        p->parts[i]->next_seq = 0;
        p->parts[i]->last_seq = -1;
    }
}

int rt_producer_init_transactions(rt_producer *p, int32_t timeout_ms)
{
    error_clear();
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_init_transactions: NULL producer");
    if (!p->transactional)
        return error_set(RT_E_INVALID_TXN_STATE, "the producer has no transactional_id");
    pthread_mutex_lock(&p->lock);
    bool in_txn = p->txn == TXN_IN_TXN;
    pthread_mutex_unlock(&p->lock);
    if (in_txn) /* Kafka: IllegalStateException; re-initialising would abort the open one */
        return error_set(RT_E_INVALID_TXN_STATE,
                         "rt_producer_init_transactions: a transaction is open; commit or "
                         "abort it first (nothing was aborted)");
    int32_t txn_timeout =
        p->opts.transaction_timeout_ms > 0 ? p->opts.transaction_timeout_ms : 60000;
    const struct rt_options *o = log_options(p->log);
    if (txn_timeout > o->transaction_timeout_max_ms)
        return error_set(RT_E_INVALID_TRANSACTION_TIMEOUT,
                         "transaction_timeout_ms %d exceeds the engine's maximum %d", txn_timeout,
                         o->transaction_timeout_max_ms);
    (void)timeout_ms;
    int rc = producer_flush(p, -1, true);
    if (rc && rc != p->sticky_error)
        return rc;
    struct coordinator *c = NULL;
    rc = txn_coordinator_create(p->txn_layer, &c);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    int64_t pid;
    int16_t epoch;
    rc = coordinator_init(c, p->txn_id, txn_timeout, p->opts.check_fn, p->opts.check_ctx, &pid,
                          &epoch);
    if (rc)
        return rc;
    pthread_mutex_lock(&p->lock);
    p->coordinator = c;
    adopt_identity(p, pid, epoch);
    p->sticky_error = 0;
    p->first_error = 0;
    p->txn = TXN_READY;
    p->txn_part_count = 0;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

int rt_producer_begin(rt_producer *p)
{
    error_clear();
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_begin: NULL producer");
    pthread_mutex_lock(&p->lock);
    int rc = 0;
    if (!p->transactional || p->txn == TXN_UNINITIALISED)
        rc = error_set(RT_E_INVALID_TXN_STATE, "call rt_producer_init_transactions first");
    else if (p->txn == TXN_FATAL)
        rc = error_set(RT_E_PRODUCER_FENCED, "the producer was fenced; close it");
    else if (p->txn == TXN_IN_TXN)
        rc = error_set(RT_E_INVALID_TXN_STATE, "a transaction is already open");
    else {
        p->txn = TXN_IN_TXN;
        p->txn_part_count = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int rt_producer_send_offsets(rt_producer *p, const char *group, const struct rt_offset *offsets,
                             size_t count)
{
    error_clear();
    if (!p || !group || !*group || (!offsets && count))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_send_offsets: NULL argument");
    if (strlen(group) > GROUP_NAME_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "group names are at most %d bytes",
                         GROUP_NAME_MAX_BYTES);
    int rc = group_offsets_check_known(p->log, offsets, count);
    if (rc)
        return rc;
    struct group_manager *g = NULL;
    rc = txn_groups_create(p->txn_layer, &g);
    if (rc)
        return rc; /* the real cause; the detail names what failed */
    struct partition *gp = log_partition(p->log, GROUP_OFFSETS_TOPIC, group_partition_for(group));
    if (!gp)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "no %s-%u", GROUP_OFFSETS_TOPIC,
                         group_partition_for(group));
    pthread_mutex_lock(&p->lock);
    if (!p->transactional || p->txn != TXN_IN_TXN)
        rc = error_set(RT_E_INVALID_TXN_STATE, "send_offsets needs an open transaction");
    if (rc == 0)
        rc = txn_note_partition(p, gp);
    if (rc == 0)
        rc = txn_add_pending(p); /* before the offsets are written (CO9) */
    int64_t pid = p->producer_id;
    int16_t epoch = p->epoch;
    pthread_mutex_unlock(&p->lock);
    if (rc)
        return rc;
    return group_txn_commit_offsets(g, pid, epoch, group, offsets, count);
}

/* The last step of the decision round (coordinator.c CO9): the transaction's last batches handed
 * over and acknowledged, while the PrepareCommit is in flight. */
struct commit_wait {
    rt_producer *p;
    int32_t timeout_ms;
    bool acknowledged; /* every batch was handed over and acknowledged (PR6) */
};

/* Waits on p->changed for at most ms milliseconds; true on a timeout. Lock held. */
static bool timed_wait_changed(struct rt_producer *p, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000;
    while (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return pthread_cond_timedwait(&p->changed, &p->lock, &ts) == ETIMEDOUT;
}

/* PR6: nothing open or waiting to go, every batch in flight completed by its shard; the first
 * error of any of them (or one already delivered) goes to *err. Lock held. */
static bool all_acknowledged(const struct rt_producer *p, int *err)
{
    *err = p->sticky_error ? p->sticky_error : p->first_error;
    for (uint32_t i = 0; i < p->part_count; i++) {
        const struct ppart *pp = p->parts[i];
        if (pp->open || pp->ready_head)
            return false;
        for (const struct pbatch *b = pp->flight_head; b; b = b->next) {
            if (!b->completed)
                return false;
            if (b->req.result && !*err)
                *err = b->req.result;
        }
    }
    return true;
}

/* PR6: hands the last batches over together with prep (may be NULL), as the dispatcher, then
 * waits until the shards acknowledged them (not for their delivery: wait_delivered). */
static int commit_wait_data(void *ctx, struct shard_request *prep, bool *prep_queued_out)
{
    struct commit_wait *w = ctx;
    rt_producer *p = w->p;
    struct commit_handover ho = {.count = 0, .prep = prep};
    pthread_mutex_lock(&p->lock);
    while (p->dispatching) { /* another thread is handing over: PR5's order first */
        p->handover_waiting = true;
        pthread_cond_wait(&p->changed, &p->lock);
    }
    p->handover_waiting = false;
    for (uint32_t i = 0; i < p->part_count; i++)
        close_batch(p, p->parts[i], false);
    p->handover = &ho;
    dispatch_ready(p); /* dispatching was false: this thread dispatches, prep goes out with it */
    p->handover = NULL;
    assert(ho.count == 0);
    assert(!ho.prep);
    if (has_work(p))
        sender_pool_wake(p->senders, &p->task);
    *prep_queued_out = true;
    /* Every batch acknowledged by its shard: what decides (CO9); delivery may still run. */
    int64_t deadline = w->timeout_ms < 0 ? INT64_MAX : mono_ms() + w->timeout_ms;
    int rc = 0;
    sender_pool_blocking_begin(); /* a callback committing another producer (SN4) */
    while (!all_acknowledged(p, &rc)) {
        if (mono_ms() >= deadline) {
            rc = error_set(RT_E_TIMED_OUT, "commit: %u batches still outstanding", p->outstanding);
            break;
        }
        p->acks_waiting = true;
        timed_wait_changed(p, 10);
    }
    p->acks_waiting = false;
    w->acknowledged = rc != RT_E_TIMED_OUT;
    sender_pool_blocking_end();
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* PR6: after the decision, every batch delivered (its callbacks run and its error noted) before
 * the commit returns and resets the transaction's error state. Lock held. */
static void wait_delivered(struct rt_producer *p)
{
    sender_pool_blocking_begin();
    while (p->outstanding > 0)
        if (timed_wait_changed(p, 10))
            sender_pool_wake(p->senders, &p->task); /* as flush: a pool thread failed to start */
    sender_pool_blocking_end();
}

/* Commit in one durable round (CO9): every noted partition joined, each one's last sequence
 * named in the PrepareCommit, which goes out together with the last batches. */
static int commit_txn(rt_producer *p, int32_t timeout_ms)
{
    if (sender_pool_in_task(&p->task)) /* it would wait for its own delivery (as flush) */
        return own_callback_refused("rt_producer_commit");
    pthread_mutex_lock(&p->lock);
    int rc = p->sticky_error ? p->sticky_error : p->first_error;
    if (rc == 0)
        rc = txn_add_pending(p);
    uint32_t n = p->txn_part_count;
    struct txn_log_partition stack_tp[TXN_ADD_ON_STACK];
    struct txn_log_partition *tp = stack_tp;
    if (rc == 0 && n > TXN_ADD_ON_STACK && !(tp = calloc(n, sizeof(*tp))))
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        size_t tl = strnlen(p->txn_parts[i]->topic, RT_TOPIC_NAME_MAX);
        memcpy(tp[i].topic, p->txn_parts[i]->topic, tl);
        tp[i].topic[tl] = 0;
        tp[i].partition = p->txn_parts[i]->id;
        const struct ppart *pp = part_find(p, p->txn_parts[i]);
        /* Sequences are assigned at send: next_seq - 1 is the transaction's last one there. */
        tp[i].last_sequence = pp && pp->next_seq > 0 && pp->next_seq - 1 <= INT32_MAX
                                  ? (int32_t)(pp->next_seq - 1)
                                  : -1;
    }
    int64_t pid = p->producer_id;
    int16_t epoch = p->epoch;
    pthread_mutex_unlock(&p->lock);
    if (rc) {
        if (tp != stack_tp)
            free(tp);
        if (rc == RT_E_PRODUCER_FENCED || rc == RT_E_INVALID_PRODUCER_EPOCH) {
            pthread_mutex_lock(&p->lock);
            p->txn = TXN_FATAL;
            pthread_mutex_unlock(&p->lock);
            return error_set(RT_E_PRODUCER_FENCED, "the producer was fenced: %s", rt_strerror(rc));
        }
        return error_set(rc, "a record of the transaction failed (%s): abort it", rt_strerror(rc));
    }
    struct commit_wait w = {.p = p, .timeout_ms = timeout_ms};
    int64_t next_pid = pid;
    int16_t next_epoch = epoch;
    bool aborted = false;
    rc = coordinator_commit_one_round(p->coordinator, p->txn_id, pid, epoch, tp, n,
                                      commit_wait_data, &w, &next_pid, &next_epoch, &aborted);
    if (tp != stack_tp)
        free(tp);
    bool fenced = rc == RT_E_PRODUCER_FENCED || rc == RT_E_INVALID_PRODUCER_EPOCH;
    pthread_mutex_lock(&p->lock);
    if (w.acknowledged)
        wait_delivered(p); /* mostly done beside the marker round already */
    if (rc == 0 || aborted) {
        adopt_identity(p, next_pid, next_epoch); /* CO3: the epoch is bumped at every end */
        p->txn = TXN_READY;
        p->txn_part_count = 0;
        p->sticky_error = 0;
        p->first_error = 0;
    }
    if (fenced)
        p->txn = TXN_FATAL;
    pthread_mutex_unlock(&p->lock);
    if (aborted)
        return error_set(fenced ? RT_E_PRODUCER_FENCED : rc,
                         "a record of the transaction failed (%s): the transaction was aborted",
                         rt_strerror(rc));
    return rc;
}

static int end_txn(rt_producer *p, bool commit, int32_t timeout_ms)
{
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "NULL producer");
    pthread_mutex_lock(&p->lock);
    int state = p->txn;
    pthread_mutex_unlock(&p->lock);
    if (!p->transactional || state == TXN_UNINITIALISED || state == TXN_READY)
        return error_set(RT_E_INVALID_TXN_STATE, "no open transaction to %s",
                         commit ? "commit" : "abort");
    if (state == TXN_FATAL)
        return error_set(RT_E_PRODUCER_FENCED, "the producer was fenced; close it");
    if (commit)
        return commit_txn(p, timeout_ms);
    int frc = producer_flush(p, timeout_ms, true);
    if (frc == RT_E_TIMED_OUT)
        return frc;
    if (frc == RT_E_PRODUCER_FENCED || frc == RT_E_INVALID_PRODUCER_EPOCH) {
        pthread_mutex_lock(&p->lock);
        p->txn = TXN_FATAL;
        pthread_mutex_unlock(&p->lock);
        return error_set(RT_E_PRODUCER_FENCED, "the producer was fenced: %s", rt_strerror(frc));
    }
    if (commit && frc)
        return error_set(frc, "a record of the transaction failed (%s): abort it",
                         rt_strerror(frc));
    int64_t pid;
    int16_t epoch;
    int rc =
        coordinator_end(p->coordinator, p->txn_id, p->producer_id, p->epoch, commit, &pid, &epoch);
    pthread_mutex_lock(&p->lock);
    if (rc == 0) {
        adopt_identity(p, pid, epoch); /* CO3: the epoch is bumped at every transaction end */
        p->txn = TXN_READY;
        p->txn_part_count = 0;
        p->sticky_error = 0;
        p->first_error = 0;
    } else if (rc == RT_E_PRODUCER_FENCED) {
        p->txn = TXN_FATAL;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int rt_producer_commit(rt_producer *p, int32_t timeout_ms)
{
    error_clear();
    return end_txn(p, true, timeout_ms);
}

int rt_producer_abort(rt_producer *p, int32_t timeout_ms)
{
    error_clear();
    return end_txn(p, false, timeout_ms);
}

int rt_producer_send(rt_producer *p, const char *topic, int32_t partition,
                     const struct rt_producer_message *msg, rt_delivery_fn on_delivery, void *ctx)
{
    error_clear();
    if (!p || !topic || !msg)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_send: NULL argument");
    const struct rt_record *rec = &msg->record;
    if (rec->key_len < -1 || rec->value_len < -1 || (rec->key_len > 0 && !rec->key) ||
        (rec->value_len > 0 && !rec->value) || (rec->header_count > 0 && !rec->headers) ||
        rec->timestamp_ms < -1)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_send: invalid record lengths, "
                                                "pointers or timestamp");
    if (sender_pool_in_task(&p->task))
        return own_callback_refused("rt_producer_send");
    if (msg->sequence < -1 || msg->sequence > INT32_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "sequence must be -1 or 0..INT32_MAX");
    if (msg->sequence >= 0 && !p->named)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "only named producers supply their own sequence ids");
    if (partition < -1)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "rt_producer_send: partition %d (a partition number, or -1 to let the "
                         "producer place the record)",
                         partition);
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    uint32_t count = 0;
    rc = log_topic_describe(p->log, topic, &count);
    if (rc)
        return rc;
    bool sticky = false, spanned = false, closed = false;
    if (partition < 0) {
        if (rec->key_len >= 0) {
            partition = (int32_t)murmur2_partition(rec->key, (size_t)rec->key_len, count);
        } else if (p->named && msg->sequence >= 0) {
            /* A rerun must place each record where the first run did, or the partition's
             * dedup (by highest sequence) drops or repeats it: a pure function of the id. */
            partition = (int32_t)(((uint64_t)msg->sequence / RT_NAMED_NULL_KEY_SPAN) % count);
            spanned = true;
        } else {
            pthread_mutex_lock(&p->lock);
            partition = (int32_t)sticky_partition(p, topic, count);
            pthread_mutex_unlock(&p->lock);
            sticky = true;
        }
    }
    struct partition *part = log_partition(p->log, topic, (uint32_t)partition);
    if (!part)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION,
                         "rt_producer_send: %s has %u partitions, no partition %d", topic, count,
                         partition);

    struct rt_record r = *rec;
    if (r.timestamp_ms < 0)
        r.timestamp_ms = fs_now_ms();
    pthread_mutex_lock(&p->lock);
restart:
    /* PR6: from here to the record's place in a batch, every decision (the sequence, a named
     * duplicate, which batch) is taken under one hold of p->lock; the one wait (for buffer
     * memory) drops it, so after it the send starts again here instead of trusting what it
     * read before: two threads waiting for memory for one partition would otherwise take the
     * same sequence, and the second would orphan the batch the first opened meanwhile. */
    rc = 0;
    if (p->sticky_error) {
        rc = error_set(p->sticky_error, "the producer failed earlier: %s",
                       rt_strerror(p->sticky_error));
        goto out;
    }
    if (p->transactional) {
        if (p->txn != TXN_IN_TXN) {
            rc = error_set(RT_E_INVALID_TXN_STATE,
                           "a transactional producer sends only inside a transaction "
                           "(rt_producer_begin)");
            goto out;
        }
        rc = txn_note_partition(p, part);
        if (rc)
            goto out;
    }
    struct ppart *pp = part_get(p, part, &rc);
    if (!pp)
        goto out;
    int64_t seq = msg->sequence >= 0 ? msg->sequence : pp->next_seq;
    if (spanned && pp->open && pp->open->count > 0 &&
        pp->open->last_seq / RT_NAMED_NULL_KEY_SPAN != seq / RT_NAMED_NULL_KEY_SPAN)
        closed |=
            close_batch(p, pp, false); /* a batch holds one span: its records are consecutive ids */
    if (p->named) {
        if (seq <= pp->last_seq) {
            /* Pulsar's rule: at or below the highest sequence already sent or persisted, the
             * record is acknowledged as a duplicate and not appended. */
            if (pp->open && !pp->open->skip)
                closed |= close_batch(p, pp, false);
            if (!pp->open) {
                struct pbatch *d = calloc(1, sizeof(*d));
                if (!d || !(d->cbs = malloc(64 * sizeof(*d->cbs)))) {
                    free(d);
                    rc = -ENOMEM;
                    goto out;
                }
                d->cbs_cap = 64;
                d->skip = true;
                d->producer = p;
                d->pp = pp;
                d->opened_ms = mono_ms();
                d->number = p->batches_opened++; /* PR7 */
                p->outstanding++;
                pp->open = d;
                sender_pool_arm(p->senders, &p->task, d->opened_ms + p->opts.linger_ms);
            }
            struct pbatch *d = pp->open;
            if ((uint32_t)d->count == d->cbs_cap) {
                struct record_cb *c = realloc(d->cbs, 2 * d->cbs_cap * sizeof(*c));
                if (!c) {
                    rc = -ENOMEM;
                    goto out;
                }
                d->cbs = c;
                d->cbs_cap *= 2;
            }
            d->cbs[d->count++] = (struct record_cb){.fn = on_delivery, .ctx = ctx};
            d->last_seq = seq;
            if (p->opts.batch_records_max && (uint32_t)d->count >= p->opts.batch_records_max)
                closed |= close_batch(p, pp, false);
            rc = 0;
            goto out;
        }
        if (pp->open && pp->open->skip)
            closed |= close_batch(p, pp, false);
        if (seq > INT32_MAX) {
            rc = error_set(RT_E_OUT_OF_ORDER_SEQUENCE, "named producer sequences end at INT32_MAX");
            goto out;
        }
    } else {
        seq = seq > INT32_MAX ? 0 : seq; /* anonymous sequences wrap, as Kafka's */
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!pp->open) {
            size_t need = record_encoded_size(&r, 0, 0);
            if (need + BATCH_HEADER_BYTES > p->log->opts.batch_size_max_bytes) {
                rc = error_set(RT_E_RECORD_TOO_LARGE,
                               "a %zu-byte record exceeds batch_size_max_bytes (%u)", need,
                               p->log->opts.batch_size_max_bytes);
                goto out;
            }
            if (memory_full(p, batch_cap_for(p, need))) {
                memory_wait(p);
                goto restart;
            }
            rc = open_batch(p, pp, need, (int32_t)seq);
            if (rc)
                goto out;
        }
        struct pbatch *b = pp->open;
        rc = batch_builder_add(&b->b, &r);
        if (rc == -ENOSPC && b->count > 0) {
            closed |= close_batch(p, pp, false);
            if (sticky)
                sticky_advance(p, topic);
            continue;
        }
        if (rc) {
            error_set(rc, "rt_producer_send: cannot encode the record: %s", rt_strerror(rc));
            goto out;
        }
        if ((uint32_t)b->count == b->cbs_cap) {
            struct record_cb *c = realloc(b->cbs, 2 * b->cbs_cap * sizeof(*c));
            if (!c) {
                rc = -ENOMEM; /* the record is encoded but has no callback slot: fatal */
                p->sticky_error = rc;
                goto out;
            }
            b->cbs = c;
            b->cbs_cap *= 2;
        }
        b->cbs[b->count++] = (struct record_cb){.fn = on_delivery, .ctx = ctx};
        b->last_seq = seq;
        pp->last_seq = seq;
        pp->next_seq = seq + 1;
        if (b->b.len >= p->opts.batch_size_bytes ||
            (p->opts.batch_records_max && (uint32_t)b->count >= p->opts.batch_records_max)) {
            closed |= close_batch(p, pp, false);
            if (sticky)
                sticky_advance(p, topic);
        }
        break;
    }
out:
    if (closed)
        hand_over_closed(p, false); /* PR5: on this thread, unless it would write durably */
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* PR7: the number of the oldest batch still outstanding (UINT64_MAX when none). A partition's
 * batches are numbered in the order they opened and move open -> ready -> in flight, so its
 * oldest is the first of those lists that is not empty. Lock held. */
static uint64_t oldest_outstanding(const struct rt_producer *p)
{
    uint64_t oldest = p->delivering;
    for (uint32_t i = 0; i < p->part_count; i++) {
        const struct ppart *pp = p->parts[i];
        const struct pbatch *b = pp->flight_head  ? pp->flight_head
                                 : pp->ready_head ? pp->ready_head
                                                  : pp->open;
        if (b && b->number < oldest)
            oldest = b->number;
    }
    return oldest;
}

/* Hands every open batch over and waits until every batch opened before this call (all: every
 * batch) is delivered, or the timeout. PR7. */
static int producer_flush(rt_producer *p, int32_t timeout_ms, bool all)
{
    error_clear();
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_flush: NULL producer");
    if (sender_pool_in_task(&p->task))
        return own_callback_refused("rt_producer_flush");
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->part_count; i++)
        close_batch(p, p->parts[i], false);
    /* Every record sent before this call is in a batch numbered below the bound. */
    uint64_t bound = all ? UINT64_MAX : p->batches_opened;
    sender_pool_blocking_begin(); /* a callback flushing another producer (SN4) */
    hand_over_closed(p, true);    /* PR5: a flush waits anyway, coordinator write included */
    int rc = 0;
    while (all ? p->outstanding > 0 : oldest_outstanding(p) < bound) {
        if (mono_ms() >= deadline) {
            rc = error_set(RT_E_TIMED_OUT, "flush: %u batches still outstanding", p->outstanding);
            break;
        }
        wait_changed(p);
    }
    sender_pool_blocking_end();
    if (rc == 0 && p->first_error) {
        rc = error_set(p->first_error, "a batch failed: %s", rt_strerror(p->first_error));
        p->first_error = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int rt_producer_flush(rt_producer *p, int32_t timeout_ms)
{
    return producer_flush(p, timeout_ms, false);
}

int rt_producer_last_sequence(rt_producer *p, const char *topic, uint32_t partition,
                              int64_t *sequence_out)
{
    error_clear();
    if (!p || !topic || !sequence_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_last_sequence: NULL argument");
    struct partition *part = log_partition(p->log, topic, partition);
    if (!part)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    return log_producer_last_sequence(p->log, part, p->producer_id, sequence_out);
}

int rt_producer_close(rt_producer *p)
{
    error_clear();
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_close: NULL producer");
    if (sender_pool_in_task(&p->task))
        return own_callback_refused("rt_producer_close"); /* nothing freed: it is in use */
    int rc = producer_flush(p, -1, true);
    if (p->coordinator)
        coordinator_release(p->coordinator, p->txn_id);
    /* SN5: nothing is in flight, so no shard thread wakes the task any more; this waits for a
     * pass still finishing and takes the task out of the pool. */
    sender_pool_detach(p->senders, &p->task);
    for (uint32_t i = 0; i < p->part_count; i++) {
        assert(!p->parts[i]->open && !p->parts[i]->ready_head && !p->parts[i]->flight_head);
        free(p->parts[i]);
    }
    while (p->pool) {
        struct pbatch *b = p->pool;
        p->pool = b->next;
        batch_destroy(b);
    }
    free(p->parts);
    free(p->sticky);
    free(p->txn_parts);
    free(p->txn_added);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    _Atomic uint32_t *open_count = p->open_count;
    free(p);
    uint32_t before = atomic_fetch_sub(open_count, 1); /* last: rt_close may free the engine */
    assert(before > 0);
    (void)before;
    return rc;
}
