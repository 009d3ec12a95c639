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
 * PR9. A partition fault is not the producer's end (shard.c SH10: the partition heals in
 *      place). For an anonymous idempotent producer, a batch that failed with RT_E_IO_FAILED
 *      (the engine's write side still up) reports it to its callbacks and to the next flush,
 *      but is not sticky: the partition's later batches fail too (the partition is frozen, or
 *      after its recovery they leave a gap: RT_E_OUT_OF_ORDER_SEQUENCE), its open batch is
 *      closed at once, sends to it answer RT_E_IO_FAILED meanwhile, and once none of its
 *      batches is outstanding its next sequence goes back to the first failed batch's — what
 *      the recovered partition, truncated to its last stored batch, expects. Nothing reported
 *      failed was stored (SH4), so a record sent again is stored once. Named and
 *      transactional producers keep the error sticky (a named producer's resend could pass
 *      for a duplicate; a transaction aborts).
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
 * behind it report their own outcome (typically RT_E_OUT_OF_ORDER_SEQUENCE). Except a
 * partition fault that heals in place (PR9).
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

void rt_producer_options_init(struct rt_producer_options *o)
{
    memset(o, 0, sizeof(*o));
    o->batch_size_bytes = 16 * 1024;
    o->linger_ms = 5;
    o->max_in_flight = 5;
    o->buffer_memory_bytes = 32u << 20;
}

/* A producer's own delivery callback calling back into it would wait for the very pass that
 * runs the callback (ringtail.h, Threads). */
int producer_own_callback_refused(const char *call)
{
    return error_set(RT_E_INVALID_ARGUMENT,
                     "%s: called from one of this producer's own delivery callbacks, which "
                     "run inside its sender pass (call it from another thread)",
                     call);
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
    struct ppart *pp = producer_part_find(p, part);
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
        if ((pp = producer_part_find(p, part)) != NULL)
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

/* rt_producer_send's arguments checked (nothing is changed): 0 or RT_E_INVALID_ARGUMENT. */
static int send_check_args(rt_producer *p, const char *topic, int32_t partition,
                           const struct rt_producer_message *msg)
{
    if (!p || !topic || !msg)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_send: NULL argument");
    const struct rt_record *rec = &msg->record;
    if (rec->key_len < -1 || rec->value_len < -1 || (rec->key_len > 0 && !rec->key) ||
        (rec->value_len > 0 && !rec->value) || (rec->header_count > 0 && !rec->headers) ||
        rec->timestamp_ms < -1)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_send: invalid record lengths, "
                                                "pointers or timestamp");
    if (sender_pool_in_task(&p->task))
        return producer_own_callback_refused("rt_producer_send");
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
    return 0;
}

/* Where a record goes (the file's comment, "Placement of partition -1"). */
struct send_place {
    struct partition *part;
    bool sticky;  /* a null key on the sticky partition: moved on when its batch closes */
    bool spanned; /* a named producer's null key placed by its id's span */
};

/* The record's partition: the caller's, or for -1 murmur2 of the key, the id's span, or the
 * sticky partition. 0, or the topic's or partition's error. */
static int send_place(rt_producer *p, const char *topic, int32_t partition,
                      const struct rt_producer_message *msg, struct send_place *out)
{
    const struct rt_record *rec = &msg->record;
    int rc = log_client_topic_check(topic);
    if (rc)
        return rc;
    out->sticky = false;
    out->spanned = false;
    if (partition >= 0) {
        /* The caller's partition: one topic lookup, which also checks the range (the count is
         * looked up only to word the error). Issue 27 item 4: a second lookup per record cost
         * ~74 instructions of ~1150. */
        out->part = log_partition(p->log, topic, (uint32_t)partition);
        if (out->part)
            return 0;
    }
    uint32_t count = 0;
    rc = log_topic_describe(p->log, topic, &count);
    if (rc)
        return rc;
    if (partition < 0) {
        if (rec->key_len >= 0) {
            partition = (int32_t)murmur2_partition(rec->key, (size_t)rec->key_len, count);
        } else if (p->named && msg->sequence >= 0) {
            /* A rerun must place each record where the first run did, or the partition's
             * dedup (by highest sequence) drops or repeats it: a pure function of the id. */
            partition = (int32_t)(((uint64_t)msg->sequence / RT_NAMED_NULL_KEY_SPAN) % count);
            out->spanned = true;
        } else {
            pthread_mutex_lock(&p->lock);
            partition = (int32_t)sticky_partition(p, topic, count);
            pthread_mutex_unlock(&p->lock);
            out->sticky = true;
        }
    }
    out->part = log_partition(p->log, topic, (uint32_t)partition);
    if (!out->part)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION,
                         "rt_producer_send: %s has %u partitions, no partition %d", topic, count,
                         partition);
    return 0;
}

/* A send step's answer when it dropped p->lock (the wait for buffer memory): the send starts
 * again (PR8). */
#define SEND_AGAIN 1

/* A named producer's record at or below the partition's highest sequence (Pulsar's rule): it is
 * acknowledged as a duplicate and not appended — its callback joins a skip batch. Lock held. */
static int send_named_duplicate(rt_producer *p, struct ppart *pp, int64_t seq, struct record_cb cb,
                                bool *closed)
{
    if (pp->open && !pp->open->skip)
        *closed |= producer_close_batch(p, pp, false);
    if (!pp->open) {
        struct pbatch *d = calloc(1, sizeof(*d));
        if (!d || !(d->cbs = malloc(64 * sizeof(*d->cbs)))) {
            free(d);
            return -ENOMEM;
        }
        d->cbs_cap = 64;
        d->skip = true;
        d->producer = p;
        d->pp = pp;
        d->opened_ms = producer_mono_ms();
        d->number = p->batches_opened++; /* PR7 */
        p->outstanding++;
        pp->open = d;
        sender_pool_arm(p->senders, &p->task, d->opened_ms + p->opts.linger_ms);
    }
    struct pbatch *d = pp->open;
    if ((uint32_t)d->count == d->cbs_cap) {
        struct record_cb *c = realloc(d->cbs, 2 * d->cbs_cap * sizeof(*c));
        if (!c)
            return -ENOMEM;
        d->cbs = c;
        d->cbs_cap *= 2;
    }
    d->cbs[d->count++] = cb;
    d->last_seq = seq;
    if (p->opts.batch_records_max && (uint32_t)d->count >= p->opts.batch_records_max)
        *closed |= producer_close_batch(p, pp, false);
    return 0;
}

/* The record encoded into the partition's open batch (one opened, or the full one closed and
 * another opened), with its callback and sequence; the batch closed when it is full. 0,
 * SEND_AGAIN after a wait for buffer memory, or the error. Lock held. */
static int send_append(rt_producer *p, struct ppart *pp, const char *topic, bool sticky,
                       const struct rt_record *r, int64_t seq, struct record_cb cb, bool *closed)
{
    int rc = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!pp->open) {
            size_t need = record_encoded_size(r, 0, 0);
            if (need + BATCH_HEADER_BYTES > p->log->opts.batch_size_max_bytes)
                return error_set(RT_E_RECORD_TOO_LARGE,
                                 "a %zu-byte record exceeds batch_size_max_bytes (%u)", need,
                                 p->log->opts.batch_size_max_bytes);
            if (producer_memory_full(p, producer_batch_cap_for(p, need))) {
                producer_memory_wait(p);
                return SEND_AGAIN;
            }
            rc = producer_open_batch(p, pp, need, (int32_t)seq);
            if (rc)
                return rc;
        }
        struct pbatch *b = pp->open;
        rc = batch_builder_add(&b->b, r);
        if (rc == -ENOSPC && b->count > 0) {
            *closed |= producer_close_batch(p, pp, false);
            if (sticky)
                sticky_advance(p, topic);
            continue;
        }
        if (rc)
            return error_set(rc, "rt_producer_send: cannot encode the record: %s", rt_strerror(rc));
        if ((uint32_t)b->count == b->cbs_cap) {
            struct record_cb *c = realloc(b->cbs, 2 * b->cbs_cap * sizeof(*c));
            if (!c) {
                p->sticky_error = -ENOMEM; /* the record is encoded but has no callback slot */
                return -ENOMEM;
            }
            b->cbs = c;
            b->cbs_cap *= 2;
        }
        b->cbs[b->count++] = cb;
        b->last_seq = seq;
        pp->last_seq = seq;
        pp->next_seq = seq + 1;
        if (b->b.len >= p->opts.batch_size_bytes ||
            (p->opts.batch_records_max && (uint32_t)b->count >= p->opts.batch_records_max)) {
            *closed |= producer_close_batch(p, pp, false);
            if (sticky)
                sticky_advance(p, topic);
        }
        break;
    }
    return rc;
}

/* PR8: every decision of a send (the sequence, a named duplicate, which batch) in one hold of
 * p->lock. 0, SEND_AGAIN (the lock was dropped: decide again), or the error. */
static int send_locked(rt_producer *p, const char *topic, const struct send_place *pl,
                       int64_t sequence, const struct rt_record *r, struct record_cb cb,
                       bool *closed)
{
    if (p->sticky_error == RT_E_IO_FAILED && p->named)
        /* PR9: a named producer's ids may have gaps; it starts again from what is stored. */
        return error_set(p->sticky_error,
                         "the producer failed earlier: a batch could not be written (a disk "
                         "fault); close it and open it again, resending from "
                         "rt_producer_last_sequence once the partition has recovered in place");
    if (p->sticky_error)
        return error_set(p->sticky_error, "the producer failed earlier: %s",
                         rt_strerror(p->sticky_error));
    int rc = 0;
    if (p->transactional) {
        if (p->txn != TXN_IN_TXN)
            return error_set(RT_E_INVALID_TXN_STATE,
                             "a transactional producer sends only inside a transaction "
                             "(rt_producer_begin)");
        rc = producer_txn_note_partition(p, pl->part);
        if (rc)
            return rc;
    }
    struct ppart *pp = part_get(p, pl->part, &rc);
    if (!pp)
        return rc;
    if (pp->resync)
        return error_set(RT_E_IO_FAILED,
                         "%s-%u: a batch could not be written (a disk fault; the partition "
                         "recovers in place): this producer goes on there once its batches in "
                         "flight are back; send again (PR9)",
                         pp->part->topic, pp->part->id);
    int64_t seq = sequence >= 0 ? sequence : pp->next_seq;
    if (pl->spanned && pp->open && pp->open->count > 0 &&
        pp->open->last_seq / RT_NAMED_NULL_KEY_SPAN != seq / RT_NAMED_NULL_KEY_SPAN)
        *closed |= producer_close_batch(
            p, pp, false); /* a batch holds one span: its records are consecutive ids */
    if (p->named) {
        if (seq <= pp->last_seq)
            return send_named_duplicate(p, pp, seq, cb, closed);
        if (pp->open && pp->open->skip)
            *closed |= producer_close_batch(p, pp, false);
        if (seq > INT32_MAX)
            return error_set(RT_E_OUT_OF_ORDER_SEQUENCE,
                             "named producer sequences end at INT32_MAX");
    } else {
        seq = seq > INT32_MAX ? 0 : seq; /* anonymous sequences wrap, as Kafka's */
    }
    return send_append(p, pp, topic, pl->sticky, r, seq, cb, closed);
}

/* The steps: the arguments checked, the partition placed, then under p->lock the decisions and
 * the encoding (send_locked), started again whenever a wait dropped the lock (PR8); what the
 * send closed is handed over on this thread (PR5). */
int rt_producer_send(rt_producer *p, const char *topic, int32_t partition,
                     const struct rt_producer_message *msg, rt_delivery_fn on_delivery, void *ctx)
{
    error_clear();
    int rc = send_check_args(p, topic, partition, msg);
    if (rc)
        return rc;
    struct send_place pl;
    rc = send_place(p, topic, partition, msg, &pl);
    if (rc)
        return rc;
    struct rt_record r = msg->record;
    if (r.timestamp_ms < 0)
        r.timestamp_ms = fs_now_ms();
    const struct record_cb cb = {.fn = on_delivery, .ctx = ctx};
    bool closed = false;
    pthread_mutex_lock(&p->lock);
    /* From here to the record's place in a batch, every decision is taken under one hold of
     * p->lock; the one wait (for buffer memory) drops it, so after it the send starts again
     * instead of trusting what it read before: two threads waiting for memory for one
     * partition would otherwise take the same sequence, and the second would orphan the batch
     * the first opened meanwhile. */
    do
        rc = send_locked(p, topic, &pl, msg->sequence, &r, cb, &closed);
    while (rc == SEND_AGAIN);
    if (closed)
        producer_hand_over_closed(p,
                                  false); /* PR5: on this thread, unless it would write durably */
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
int producer_flush(rt_producer *p, int32_t timeout_ms, bool all)
{
    error_clear();
    if (!p)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_producer_flush: NULL producer");
    if (sender_pool_in_task(&p->task))
        return producer_own_callback_refused("rt_producer_flush");
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : producer_mono_ms() + timeout_ms;
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->part_count; i++)
        producer_close_batch(p, p->parts[i], false);
    /* Every record sent before this call is in a batch numbered below the bound. */
    uint64_t bound = all ? UINT64_MAX : p->batches_opened;
    sender_pool_blocking_begin();       /* a callback flushing another producer (SN4) */
    producer_hand_over_closed(p, true); /* PR5: a flush waits anyway, coordinator write included */
    int rc = 0;
    while (all ? p->outstanding > 0 : oldest_outstanding(p) < bound) {
        if (producer_mono_ms() >= deadline) {
            rc = error_set(RT_E_TIMED_OUT, "flush: %u batches still outstanding", p->outstanding);
            break;
        }
        producer_wait_changed(p);
    }
    sender_pool_blocking_end();
    if (rc == 0 && p->first_error) {
        rc = p->first_error == RT_E_IO_FAILED && !p->named && !p->transactional &&
                     log_write_check(p->log) == 0
                 ? error_set(p->first_error,
                             "a batch could not be written (a disk fault; the partition "
                             "recovers in place): its records were not stored, send them again "
                             "(PR9)")
                 : error_set(p->first_error, "a batch failed: %s", rt_strerror(p->first_error));
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
        return producer_own_callback_refused("rt_producer_close"); /* nothing freed: it is in use */
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
        producer_batch_destroy(b);
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
