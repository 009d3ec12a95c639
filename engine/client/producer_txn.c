/*
 * producer_txn.c — the transactional producer: partitions noted on their first send and added
 * to the coordinator in one call before their first batch (CO9), init_transactions, begin,
 * send_offsets, commit in one durable round with the last batches beside the PrepareCommit
 * (PR6, coordinator.c CO9; commit_wait_data is the coordinator's wait_data port, L-5), abort.
 *
 * It reaches the coordinator only through coordinator.h and the disk only through the log.
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

/* ---- transactions ---- */

/* Notes a partition as part of the open transaction on its first send. The coordinator hears of
 * it before the partition's first batch is handed over, together with every other partition
 * noted meanwhile, in one call (Kafka's producer batches AddPartitionsToTxn the same way). The
 * call writes nothing (coordinator.c CO9): the transactional batch itself records the
 * participation. Lock held. */
int producer_txn_note_partition(struct rt_producer *p, struct partition *part)
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

bool producer_txn_partition_added(const struct rt_producer *p, const struct partition *part)
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
int producer_txn_add_pending(struct rt_producer *p)
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
        rc = producer_txn_note_partition(p, gp);
    if (rc == 0)
        rc = producer_txn_add_pending(p); /* before the offsets are written (CO9) */
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
        producer_close_batch(p, p->parts[i], false);
    p->handover = &ho;
    producer_dispatch_ready(
        p); /* dispatching was false: this thread dispatches, prep goes out with it */
    p->handover = NULL;
    assert(ho.count == 0);
    assert(!ho.prep);
    if (producer_has_work(p))
        sender_pool_wake(p->senders, &p->task);
    *prep_queued_out = true;
    /* Every batch acknowledged by its shard: what decides (CO9); delivery may still run. */
    int64_t deadline = w->timeout_ms < 0 ? INT64_MAX : producer_mono_ms() + w->timeout_ms;
    int rc = 0;
    sender_pool_blocking_begin(); /* a callback committing another producer (SN4) */
    while (!all_acknowledged(p, &rc)) {
        if (producer_mono_ms() >= deadline) {
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
        return producer_own_callback_refused("rt_producer_commit");
    pthread_mutex_lock(&p->lock);
    int rc = p->sticky_error ? p->sticky_error : p->first_error;
    if (rc == 0)
        rc = producer_txn_add_pending(p);
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
        const struct ppart *pp = producer_part_find(p, p->txn_parts[i]);
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
