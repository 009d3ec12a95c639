/*
 * coordinator_write.c — how the coordinator's decisions reach __transaction_state: a record
 * encoded and written (waited for, queued without waiting, or queued now and waited for later,
 * CO9), a transition adopted once its record is durable (CO1), and phase two of an end: markers
 * into every partition, then Complete* (finish, CO2, CO3).
 *
 * It writes only through the log's append and marker calls, and never lets a marker be written
 * before the decision it carries is durable.
 */
#include "coordinator_internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "records.h"
#include "group.h"
#include "log.h"
#include "producer_registry.h"
#include "producer_state.h"

/* ---- the log ---- */

/* Encodes one transaction-log record (value NULL: a tombstone) as a batch in a malloc'd buffer
 * placed `offset` bytes into the allocation (room for a caller's header). */
static int log_encode(const char *id, const struct txn_log_value *v, size_t offset,
                      uint8_t **alloc_out, size_t *len_out)
{
    uint8_t key[2 + 2 + TXN_ID_MAX_BYTES];
    size_t key_len = 0;
    int rc = txn_log_key_encode(id, key, sizeof(key), &key_len);
    if (rc)
        return rc;
    size_t value_len = v ? txn_log_value_size(v) : 0;
    uint8_t *value = v ? malloc(value_len) : NULL;
    if (v && !value)
        return -ENOMEM;
    if (v && (rc = txn_log_value_encode(v, value, value_len, &value_len)) != 0) {
        free(value);
        return rc;
    }
    struct rt_record r = {.key = key,
                          .key_len = (int32_t)key_len,
                          .value = value,
                          .value_len = v ? (int32_t)value_len : -1,
                          .timestamp_ms = fs_now_ms()};
    size_t cap = BATCH_HEADER_BYTES + record_encoded_size(&r, 0, 0);
    uint8_t *alloc = malloc(offset + cap);
    if (!alloc) {
        free(value);
        return -ENOMEM;
    }
    struct batch_builder b;
    size_t len = 0;
    rc = batch_builder_init(&b, alloc + offset, cap, 0, -1, -1, -1);
    if (rc == 0)
        rc = batch_builder_add(&b, &r);
    if (rc == 0)
        rc = batch_builder_finish(&b, &len);
    free(value);
    if (rc) {
        free(alloc);
        return rc;
    }
    *alloc_out = alloc;
    *len_out = len;
    return 0;
}

/* Appends one record to the transaction log, durably, waiting for it. */
int coord_log_write(struct coordinator *c, const char *id, const struct txn_log_value *v)
{
    uint8_t *batch = NULL;
    size_t len = 0;
    int rc = log_encode(id, v, 0, &batch, &len);
    if (rc == 0)
        rc = log_append_forced(c->lg, c->log, batch, len, NULL);
    free(batch);
    if (rc == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    return rc;
}

/* An asynchronous log write: the request and the batch bytes in one allocation. */
struct async_write {
    struct shard_request req;
    struct coordinator *c;
    struct txn_meta *m; /* a reference (coord_meta_put in the callback) */
};

static void async_write_done(struct shard_request *r)
{
    struct async_write *w = (struct async_write *)r;
    struct coordinator *c = w->c;
    if (r->result == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    else
        /* CO15: the id's last durable record is its Prepare* (or older); the timer writes this
         * Complete* again once the log takes writes, unless a later record of the id is durable
         * first (it clears the flag: records of one id go to one partition in order, so that
         * one was queued after this and completes after this callback). */
        atomic_store_explicit(&w->m->complete_lost, true, memory_order_release);
    coord_meta_put(c, w->m);
    free(w);
    __atomic_sub_fetch(&c->async_in_flight, 1, __ATOMIC_RELEASE);
}

/* CO15: a record of m is durable: nothing of m written earlier needs writing again. Caller
 * holds m->lock. */
void coord_note_durable(struct txn_meta *m)
{
    atomic_store_explicit(&m->complete_lost, false, memory_order_release);
}

/* CO15: writes m's lost Complete* again (the timer, m->lock held). 0 when nothing was lost. */
int coord_rewrite_lost(struct coordinator *c, struct txn_meta *m)
{
    if (!atomic_load_explicit(&m->complete_lost, memory_order_acquire))
        return 0;
    int rc = coord_log_write(c, m->id, &m->complete_value);
    if (rc == 0)
        coord_note_durable(m);
    return rc;
}

/* Appends one record without waiting (fdatasynced in its round, or with `lazy` only with the
 * log's next fdatasync: SH6). Safe for Complete* records: anything that depends on them (the
 * id's next record) goes to the same log partition later, so it can be durable only if this one
 * is; and after a one-round commit nothing depends on it at all (CO10 completes the
 * PrepareCommit again from the partitions' state, finding every marker there). */
static int log_write_async(struct coordinator *c, struct txn_meta *m, const struct txn_log_value *v,
                           bool lazy)
{
    uint8_t *alloc = NULL;
    size_t len = 0;
    int rc = log_encode(m->id, v, sizeof(struct async_write), &alloc, &len);
    if (rc)
        return rc;
    struct async_write *w = (struct async_write *)alloc;
    memset(w, 0, sizeof(*w));
    uint8_t *batch = alloc + sizeof(struct async_write);
    const char *why = NULL;
    rc = batch_header_parse(batch, len, &w->req.header, &why);
    assert(rc == 0);
    w->c = c;
    w->m = m;
    assert(v->partition_count == 0); /* a Complete*: copied whole (CO15) */
    m->complete_value = *v;
    m->complete_value.partitions = NULL;
    pthread_mutex_lock(&c->table_lock);
    m->refs++;
    pthread_mutex_unlock(&c->table_lock);
    w->req.kind = SHARD_REQ_APPEND;
    w->req.partition = c->log;
    w->req.batch = batch;
    w->req.len = len;
    w->req.coordinator = true;
    w->req.force_sync = !lazy;
    w->req.lazy_sync = lazy;
    w->req.on_done = async_write_done;
    __atomic_add_fetch(&c->async_in_flight, 1, __ATOMIC_ACQUIRE);
    rc = log_append_async(c->lg, &w->req);
    if (rc) {
        coord_meta_put(c, m);
        __atomic_sub_fetch(&c->async_in_flight, 1, __ATOMIC_RELEASE);
        free(alloc);
    }
    return rc;
}

static void wait_write_done(struct shard_request *r)
{
    struct wait_write *w = (struct wait_write *)r;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu); /* w is the waiter's from here on */
}

/* Builds one record's request, fdatasynced in its round, for the caller to queue (CO9: with the
 * transaction's last data); log_write_wait collects the outcome. */
int coord_log_write_prepare(struct coordinator *c, const char *id, const struct txn_log_value *v,
                            struct wait_write **out)
{
    uint8_t *alloc = NULL;
    size_t len = 0;
    int rc = log_encode(id, v, sizeof(struct wait_write), &alloc, &len);
    if (rc)
        return rc;
    struct wait_write *w = (struct wait_write *)alloc;
    memset(w, 0, sizeof(*w));
    uint8_t *batch = alloc + sizeof(struct wait_write);
    const char *why = NULL;
    rc = batch_header_parse(batch, len, &w->req.header, &why);
    assert(rc == 0);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->req.kind = SHARD_REQ_APPEND;
    w->req.partition = c->log;
    w->req.batch = batch;
    w->req.len = len;
    w->req.coordinator = true;
    w->req.force_sync = true;
    w->req.on_done = wait_write_done;
    *out = w;
    return 0;
}

/* Frees a prepared request that was never queued. */
void coord_log_write_discard(struct wait_write *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int coord_log_write_wait(struct coordinator *c, struct wait_write *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    int rc = w->req.result;
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    if (rc == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    return rc;
}

/* Writes m's value with `state` (and whatever else the caller changed in `next`), and adopts it
 * in memory only once it is durable (CO1). */
int coord_transition(struct coordinator *c, struct txn_meta *m, struct txn_log_value *next)
{
    next->last_update_ms = fs_now_ms();
    int rc = coord_log_write(c, m->id, next);
    if (rc)
        return rc;
    coord_note_durable(m); /* CO15 */
    if (next->partitions != m->v.partitions)
        free(m->v.partitions);
    m->v = *next;
    coord_pid_index(c, m);
    return 0;
}

bool coord_is_prepare(enum txn_state s)
{
    return s == TXN_PREPARE_COMMIT || s == TXN_PREPARE_ABORT || s == TXN_PREPARE_EPOCH_FENCE;
}

/* The epoch a finished transaction's markers carry and the producer's next (id, epoch). */
int coord_next_identity(struct coordinator *c, const struct txn_meta *m, int16_t *marker_epoch,
                        int64_t *next_pid, int16_t *next_epoch)
{
    if (m->v.producer_epoch < INT16_MAX - 1) {
        *marker_epoch = (int16_t)(m->v.producer_epoch + 1);
        *next_pid = m->v.producer_id;
        *next_epoch = *marker_epoch;
        return 0;
    }
    /* Epoch exhausted: markers close the old id at its last epoch; a fresh id takes over. */
    *marker_epoch = m->v.producer_epoch;
    *next_epoch = 0;
    return producer_registry_allocate(c->producers, next_pid);
}

/* Phase two of a commit or abort whose Prepare* is durable: markers into every partition (one
 * round per shard), pending offsets applied or dropped, then Complete* (CO1, CO2). */
/* CO17: the markers of a decided transaction, through the embedder's marker writer when it gave
 * one (each marker's result in its spec; the first failure returned, named in the detail), else
 * into the local partitions (log_write_markers). Caller holds the id's lock. */
int coord_write_markers(struct coordinator *c, struct marker_spec *specs, size_t n)
{
    const struct rt_options *o = log_options(c->lg);
    if (!o->txn_marker_writer)
        return log_write_markers(c->lg, specs, n);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct rt_txn_marker mk = {.topic = specs[i].topic,
                                   .partition = specs[i].partition,
                                   .producer_id = specs[i].producer_id,
                                   .producer_epoch = specs[i].producer_epoch,
                                   .commit = specs[i].type == CONTROL_COMMIT};
        error_clear();
        int r = o->txn_marker_writer(o->txn_marker_writer_ctx, &mk);
        specs[i].result = r < 0 ? r : r > 0 ? RT_E_IO_FAILED : 0;
        if (specs[i].result && rc == 0) {
            char cause[ERROR_DETAIL_BYTES];
            snprintf(cause, sizeof(cause), "%s",
                     *rt_error_detail() ? rt_error_detail() : rt_strerror(specs[i].result));
            rc = error_set(specs[i].result,
                           "the marker writer did not write the %s marker of producer %" PRId64
                           " epoch %d into %s-%u: %s",
                           mk.commit ? "COMMIT" : "ABORT", mk.producer_id, (int)mk.producer_epoch,
                           mk.topic, mk.partition, cause);
        }
    }
    return rc;
}

int coord_finish_as(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                    int16_t next_epoch, bool lazy, const bool *skip)
{
    uint32_t count = m->v.partition_count, n = 0;
    struct marker_spec *specs = calloc(count ? count : 1, sizeof(*specs));
    if (!specs)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++)
        if (!skip || !skip[i]) /* CO10: a partition whose marker is there already */
            specs[n++] = (struct marker_spec){.topic = m->v.partitions[i].topic,
                                              .partition = m->v.partitions[i].partition,
                                              .producer_id = m->v.producer_id,
                                              .producer_epoch = m->v.producer_epoch,
                                              .coordinator_epoch = COORDINATOR_EPOCH,
                                              .type = commit ? CONTROL_COMMIT : CONTROL_ABORT,
                                              .lazy = lazy};
    int rc = n ? coord_write_markers(c, specs, n) : 0;
    if (rc) {
        /* A marker rejected for a stale epoch means a newer epoch already wrote there: the
         * partition has moved on and this marker is moot; so is one into a partition whose
         * topic was deleted (rt_topic_delete: nothing is left there to close, as Kafka drops
         * markers for deleted partitions). Anything else stops here: the state stays Prepare*
         * and the next open (or retry) completes it (CO2). */
        bool only_stale = true;
        for (uint32_t i = 0; i < n; i++)
            if (specs[i].result && specs[i].result != RT_E_INVALID_PRODUCER_EPOCH &&
                specs[i].result != RT_E_UNKNOWN_TOPIC_OR_PARTITION)
                only_stale = false;
        if (!only_stale) {
            free(specs);
            return rc;
        }
    }
    struct group_manager *groups = coord_groups(c);
    for (uint32_t i = 0; i < count && groups; i++) { /* skipped ones too (CO10) */
        if (strcmp(m->v.partitions[i].topic, GROUP_OFFSETS_TOPIC) == 0) {
            group_txn_complete(groups, m->v.producer_id, commit);
            break; /* completes every pending offset of the producer */
        }
    }
    free(specs);
    struct txn_log_value next = m->v;
    next.state = commit ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT;
    next.partitions = NULL;
    next.partition_count = 0;
    next.one_round = false;
    next.kept_epoch = false;
    next.producer_id = next_pid;
    next.producer_epoch = next_epoch;
    next.start_ms = -1;
    next.check_count = 0;
    next.hanging = false;
    next.last_update_ms = fs_now_ms();
    /* The outcome is decided (the markers are durable, or CO9's decision round was). Complete*
     * rides a later round (docs/architecture.md, the commit path): commit does not wait for it, and after a
     * one-round commit it is not even fdatasynced on its own (CO10 repeats it if lost). */
    rc = log_write_async(c, m, &next, lazy && m->v.one_round);
    if (rc)
        return rc;
    free(m->v.partitions);
    m->v = next;
    m->part_capacity = 0;
    coord_pid_index(c, m);
    return 0;
}

int coord_finish(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                 int16_t next_epoch)
{
    return coord_finish_as(c, m, commit, next_pid, next_epoch, false, NULL);
}

/* Two-phase end of m's open transaction. Caller holds m->lock. */
int coord_end_locked_as(struct coordinator *c, struct txn_meta *m, bool commit, bool fence,
                        bool bump)
{
    if (m->deciding) /* CO9: its producer is committing it in one round right now */
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is committing its transaction", m->id);
    assert(m->v.state == TXN_ONGOING || coord_is_prepare(m->v.state));
    assert(bump || !fence); /* a fence always bumps */
    int16_t marker_epoch = m->v.producer_epoch;
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    int rc;
    if (m->v.state == TXN_ONGOING) {
        rc = bump ? coord_next_identity(c, m, &marker_epoch, &next_pid, &next_epoch) : 0;
        if (rc)
            return rc;
        struct txn_log_value prep = m->v;
        if (fence) {
            prep.state = TXN_PREPARE_EPOCH_FENCE;
            prep.producer_epoch = marker_epoch;
            rc = coord_transition(c, m, &prep);
            if (rc)
                return rc;
            prep = m->v;
        }
        prep.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
        prep.producer_epoch = marker_epoch;
        rc = coord_transition(c, m, &prep);
        if (rc)
            return rc;
    } else {
        /* Completing a Prepare* found at open: its epoch is already the markers' epoch. */
        commit = m->v.state == TXN_PREPARE_COMMIT;
        if (m->v.producer_epoch >= INT16_MAX - 1 && bump) {
            next_epoch = 0;
            rc = producer_registry_allocate(c->producers, &next_pid);
            if (rc)
                return rc;
        }
    }
    return coord_finish(c, m, commit, next_pid, next_epoch);
}

int coord_end_locked(struct coordinator *c, struct txn_meta *m, bool commit, bool fence)
{
    return coord_end_locked_as(c, m, commit, fence, true);
}

/* CO15: completes m's Prepare* with the outcome it records — a one-round one by CO10's rule
 * from the partitions' state (its data may not all be durable: a failed round), as an open
 * does. Caller holds m->lock. */
int coord_complete_prepared(struct coordinator *c, struct txn_meta *m)
{
    assert(coord_is_prepare(m->v.state));
    if (m->v.one_round)
        return coord_complete_one_round(c, m);
    /* Markers only where they are missing (SH11: a partition that never failed is not written
     * again at every retry): its producer closed its transaction at the markers' epoch, or
     * moved past it (CO3: nothing is written at that epoch before Complete*). A partition that
     * has not recovered does not tell (log.c): retried at the next tick. */
    uint32_t n = m->v.partition_count;
    bool *skip = calloc(n ? n : 1, sizeof(*skip));
    if (!skip)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct partition *p =
            log_partition(c->lg, m->v.partitions[i].topic, m->v.partitions[i].partition);
        if (!p)
            continue; /* the marker write reports it */
        struct log_producer_view pv;
        rc = log_producer_state(c->lg, p, m->v.producer_id, &pv);
        skip[i] = rc == 0 && pv.known &&
                  (pv.epoch > m->v.producer_epoch ||
                   (pv.epoch == m->v.producer_epoch && pv.txn_first_offset < 0));
    }
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    if (rc == 0 && m->v.producer_epoch >= INT16_MAX - 1) { /* as coord_end_locked_as */
        next_epoch = 0;
        rc = producer_registry_allocate(c->producers, &next_pid);
    }
    if (rc == 0)
        rc = coord_finish_as(c, m, m->v.state == TXN_PREPARE_COMMIT, next_pid, next_epoch, false,
                             skip);
    free(skip);
    return rc;
}
