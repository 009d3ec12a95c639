/*
 * coordinator_open.c — the coordinator's life cycle: open replays __transaction_state into the
 * table (keeping the one-round decisions for reconciliation, COR7), reconciles the partitions,
 * completes every Prepare* left (CO2, CO10), fences what CO13 says cannot be trusted, and starts
 * the timer; close stops it and frees the table.
 *
 * A record that does not decode is RT_E_CORRUPT naming its segment and position, never an
 * assertion.
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
#include "partition.h"
#include "producer_state.h"

/* ---- open: replay the log, finish what was left ---- */

/* Where a replayed record lies, for the detail of RT_E_CORRUPT: the segment file and the byte
 * position of its batch, as every other damaged batch is reported. */
struct replay_at {
    const struct rt_fetch_view *view;
    const uint8_t *batch;
};

static int replay_corrupt(const struct replay_at *at, const struct rt_record_view *r,
                          const char *what, const char *why)
{
    uint64_t pos = at->view->segment_position;
    if (at->batch && at->batch >= at->view->data)
        pos += (uint64_t)(at->batch - at->view->data);
    return error_set(RT_E_CORRUPT,
                     "%s: offset %" PRIu64 ": %s record at log offset %" PRId64 ": %s: %s",
                     at->view->segment_path, pos, TXN_LOG_TOPIC, r->offset, what, why);
}

/* COR7: keeps a copy of a one-round decision record for reconciliation. */
static int decision_note(struct coordinator *c, const struct txn_log_value *v)
{
    if (c->decision_count == c->decision_capacity) {
        size_t cap = c->decision_capacity ? c->decision_capacity * 2 : 16;
        struct decision *a = realloc(c->decisions, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        c->decisions = a;
        c->decision_capacity = cap;
    }
    struct decision d = {.producer_id = v->producer_id,
                         .txn_epoch = v->txn_epoch,
                         .marker_epoch = v->producer_epoch,
                         .commit = v->state == TXN_PREPARE_COMMIT,
                         .kept_epoch = v->kept_epoch,
                         .partition_count = v->partition_count};
    if (v->partition_count) {
        d.partitions = malloc((size_t)v->partition_count * sizeof(*d.partitions));
        if (!d.partitions)
            return -ENOMEM;
        memcpy(d.partitions, v->partitions, (size_t)v->partition_count * sizeof(*d.partitions));
    }
    c->decisions[c->decision_count++] = d;
    return 0;
}

void coord_decisions_free(struct coordinator *c)
{
    for (size_t i = 0; i < c->decision_count; i++)
        free(c->decisions[i].partitions);
    free(c->decisions);
    c->decisions = NULL;
    c->decision_count = c->decision_capacity = 0;
}

/* COR7: the newest one-round decision of the transaction whose data producer pid wrote at
 * `epoch` into (topic, partition), or NULL. At most one transaction has data at one (pid,
 * epoch) (CO3: the epoch is bumped at every one-round end), so the newest record for the pair
 * is its outcome (a PrepareAbort after its PrepareCommit: CO10). */
const struct decision *coord_decision_find(const struct coordinator *c, int64_t pid, int16_t epoch,
                                           const char *topic, uint32_t partition)
{
    for (size_t i = c->decision_count; i-- > 0;) {
        const struct decision *d = &c->decisions[i];
        if (d->kept_epoch || d->producer_id != pid || d->txn_epoch != epoch)
            continue; /* a kept-epoch record is found by its first offset only (COR8) */
        for (uint32_t k = 0; k < d->partition_count; k++)
            if (d->partitions[k].partition == partition &&
                strcmp(d->partitions[k].topic, topic) == 0)
                return d;
    }
    return NULL;
}

/* COR8: the newest kept-epoch decision (0x7203) of the transaction open as t: the same producer,
 * its data's epoch, and t's partition with t's first offset. Offsets in a partition are unique
 * but for a tail lost at power loss and written again: a record naming an offset whose data was
 * lost was decided (R1, at the open that truncated it) before anything was written there again,
 * so of two records naming one (P, E, partition, first offset) the newer names the data there
 * now. NULL when none does. */
const struct decision *coord_decision_find_kept(const struct coordinator *c,
                                                const struct log_open_txn *t)
{
    if (t->first_offset < 0)
        return NULL;
    for (size_t i = c->decision_count; i-- > 0;) {
        const struct decision *d = &c->decisions[i];
        if (!d->kept_epoch || d->producer_id != t->producer_id || d->txn_epoch != t->producer_epoch)
            continue;
        for (uint32_t k = 0; k < d->partition_count; k++)
            if (d->partitions[k].first_offset == t->first_offset &&
                d->partitions[k].partition == t->partition &&
                strcmp(d->partitions[k].topic, t->topic) == 0)
                return d;
    }
    return NULL;
}

static int replay_record(struct coordinator *c, const struct rt_record_view *r,
                         const struct replay_at *at)
{
    char id[TXN_ID_MAX_BYTES + 1];
    const char *what = NULL, *why = NULL;
    /* The one check rt_verify runs too (txn_log_batch_check), so both judge a record alike. */
    int rc = txn_log_record_check(r->key, r->key_len, r->value, r->value_len, &what, &why);
    if (rc == RT_E_CORRUPT)
        return replay_corrupt(at, r, what, why ? why : "invalid");
    if (rc)
        return rc;
    rc = txn_log_key_decode(r->key, (size_t)r->key_len, id, &why);
    assert(rc == 0);
    __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    struct txn_meta *m = coord_meta_get(c, id, r->value != NULL);
    if (!r->value) { /* tombstone */
        if (m) {
            coord_meta_remove(c, m);
            coord_meta_put(c, m);
        }
        return 0;
    }
    if (!m)
        return -ENOMEM;
    struct txn_log_value v;
    rc = txn_log_value_decode(r->value, (size_t)r->value_len, &v, &why);
    if (rc) {
        coord_meta_put(c, m);
        if (rc == RT_E_CORRUPT)
            return replay_corrupt(at, r, "bad value", why ? why : rt_strerror(rc));
        return error_set(rc, "%s offset %" PRId64 ": bad value: %s", TXN_LOG_TOPIC, r->offset,
                         why ? why : rt_strerror(rc));
    }
    if (v.one_round && (v.state == TXN_PREPARE_COMMIT || v.state == TXN_PREPARE_ABORT)) {
        rc = decision_note(c, &v);
        if (rc) {
            txn_log_value_free(&v);
            coord_meta_put(c, m);
            return rc;
        }
    }
    free(m->v.partitions);
    m->v = v;
    m->last_check_ms = v.start_ms;
    coord_pid_index(c, m);
    coord_meta_put(c, m);
    return 0;
}

/* Replays the log from its start to its log end (RT_READ_REPLICA: past a high watermark a broker
 * holds, as a new leader must, CO16; at open the two are equal). */
int coord_replay(struct coordinator *c)
{
    int64_t offset = 0;
    int rc =
        log_list_offsets(c->lg, TXN_LOG_TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &offset);
    int64_t end = atomic_load_explicit(&c->log->pub_end, memory_order_acquire);
    while (rc == 0 && offset < end) {
        rt_fetch *f = NULL;
        rc = log_fetch_start(c->lg, TXN_LOG_TOPIC, 0, offset, 1 << 20, RT_READ_REPLICA, &f);
        if (rc)
            break;
        struct rt_records it;
        struct rt_record_view r;
        records_init(&it, f, offset);
        int64_t before = offset;
        while (rc == 0 && (rc = records_next(&it, &r)) == 0) {
            struct replay_at at = {.view = rt_fetch_get(f), .batch = it.batch};
            rc = replay_record(c, &r, &at);
            offset = r.offset + 1;
        }
        if (rc == RT_E_END)
            rc = 0;
        if (rc == 0 && offset == before) {
            /* Only control records (none are written here) or an empty fetch: step over it. */
            offset = end;
        }
        rt_fetch_release(f);
    }
    return rc;
}

/* What open does and a new leader does again (CO16): replay, reconcile, finish. A read-only
 * engine only replays. */
int coord_load(struct coordinator *c, bool failover)
{
    int rc = coord_replay(c);
    /* CO16: as txn_start after an open, an id the log names is never handed out again here
     * (before anything below may allocate one). */
    if (rc == 0 && failover && !log_read_only(c->lg))
        rc = producer_registry_raise(c->producers, coordinator_producer_id_max(c) + 1);
    /* COR5 before CO2: a stale epoch's transaction in a partition is aborted before a Prepare*
     * completion's marker could close it as that later transaction's (a read-only open writes
     * no marker). */
    bool read_only = log_read_only(c->lg);
    if (rc == 0 && !read_only)
        rc = coord_reconcile(c, failover);
    coord_decisions_free(c); /* COR7 needs them only for reconciliation */
    /* CO13: a durable Ongoing (a wire transaction's) survives the open only where every
     * acknowledged produce was durable — in the run that wrote it (its acked_durable flag) and
     * in this one; otherwise its data may be gone, so it is fenced. CO16: a new leader fences
     * every Ongoing (the old leader's memory of it — joined partitions, retries — is gone). */
    bool run_durable = !failover && log_options(c->lg)->sync_mode == RT_SYNC_ALWAYS;
    /* CO2: finish every transaction a crash left between its phases (not on a read-only engine:
     * it writes nothing, so those stay as they are for rt_txn_list and the next writer). */
    for (uint32_t b = 0; rc == 0 && !read_only && b < COORD_BUCKETS; b++) {
        for (struct txn_meta *m = c->buckets[b]; rc == 0 && m; m = m->next) {
            pthread_mutex_lock(&m->lock);
            if (m->v.state == TXN_PREPARE_EPOCH_FENCE) {
                struct txn_log_value next = m->v;
                next.state = TXN_PREPARE_ABORT;
                rc = coord_transition(c, m, &next);
            }
            if (rc == 0 && coord_is_prepare(m->v.state) && m->v.one_round)
                rc = coord_complete_one_round(c, m);
            else if (rc == 0 && coord_is_prepare(m->v.state))
                rc = coord_end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
            else if (rc == 0 && m->v.state == TXN_ONGOING && !(run_durable && m->v.acked_durable))
                rc = coord_end_locked(c, m, false, true); /* CO13, CO16: fenced, aborted */
            if (rc && (failover || log_options(c->lg)->txn_marker_writer) &&
                coord_is_prepare(m->v.state))
                rc = 0; /* CO16, CO15, G.8 MW3: decided, a marker not written yet (an embedder's
                         * writer may fail at open too): the timer retries it */
            pthread_mutex_unlock(&m->lock);
        }
    }
    return rc;
}

int coordinator_open(struct log *lg, struct producer_registry *producers,
                     struct group_manager *groups, bool create, struct coordinator **out)
{
    struct coordinator *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->lg = lg;
    c->producers = producers;
    atomic_init(&c->groups, groups);
    pthread_mutex_init(&c->table_lock, NULL);
    pthread_mutex_init(&c->timer_lock, NULL);
    pthread_cond_init(&c->timer_cv, NULL);
    pthread_rwlock_init(&c->role_lock, NULL); /* CO16: leading from open on, unless CM7 */
    int rc = 0;
    if (create) {
        rc = log_internal_topic_create(lg, TXN_LOG_TOPIC, 1);
        if (rc == RT_E_TOPIC_ALREADY_EXISTS)
            rc = 0;
    }
    if (rc == 0) {
        c->log = log_partition(lg, TXN_LOG_TOPIC, 0);
        if (!c->log)
            rc = RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    }
    /* G.7 CM7: a cluster node opens following; rt_partition_become_leader loads (CO16) */
    bool follow = log_options(lg)->txn_coordinator_follows && !log_read_only(lg);
    if (rc == 0 && follow) {
        c->following = true;
        rc = log_internal_set_follower(lg, TXN_LOG_TOPIC, 0, true);
    } else if (rc == 0) {
        rc = coord_load(c, false);
    }
    if (rc == 0 && !log_read_only(lg)) {
        rc = -pthread_create(&c->timer, NULL, coord_timer_main, c);
        c->timer_running = rc == 0;
    }
    if (rc) {
        coordinator_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int64_t coordinator_producer_id_max(struct coordinator *c)
{
    int64_t max = -1;
    pthread_mutex_lock(&c->table_lock);
    for (uint32_t b = 0; b < COORD_BUCKETS; b++)
        for (struct txn_meta *m = c->buckets[b]; m; m = m->next)
            if (m->v.producer_id > max)
                max = m->v.producer_id;
    pthread_mutex_unlock(&c->table_lock);
    return max;
}

void coordinator_close(struct coordinator *c)
{
    if (!c)
        return;
    if (c->timer_running) {
        pthread_mutex_lock(&c->timer_lock);
        c->stopping = true;
        pthread_cond_broadcast(&c->timer_cv);
        pthread_mutex_unlock(&c->timer_lock);
        pthread_join(c->timer, NULL);
    }
    /* Complete* records still queued finish on the shard threads: wait for them (after the
     * timer, which can queue more, has stopped). */
    while (__atomic_load_n(&c->async_in_flight, __ATOMIC_ACQUIRE) > 0)
        usleep(1000);
    for (uint32_t b = 0; b < COORD_BUCKETS; b++) {
        struct txn_meta *m = c->buckets[b];
        while (m) {
            struct txn_meta *next = m->next;
            coord_meta_free(m);
            m = next;
        }
    }
    coord_decisions_free(c);
    pthread_rwlock_destroy(&c->role_lock);
    pthread_mutex_destroy(&c->table_lock);
    pthread_mutex_destroy(&c->timer_lock);
    pthread_cond_destroy(&c->timer_cv);
    free(c);
}
