/*
 * coordinator_timer.c — the coordinator's timer thread: each tick, an Ongoing transaction past
 * its timeout is fenced and aborted or asked through check-back (CO5), idle ids past their
 * expiration become tombstones, and the transaction log is compacted when it outgrows the live
 * ids (CO6), with lazy markers made durable first (CO11).
 *
 * It changes an id only under that id's lock and through coordinator_write.c, as the
 * operations do.
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

/* ---- the timer: timeouts, check-back, expiry, compaction ---- */

static void tick_one(struct coordinator *c, struct txn_meta *m, int64_t now)
{
    const struct rt_options *o = log_options(c->lg);
    pthread_mutex_lock(&m->lock);
    if (m->removed || m->deciding) { /* CO9: a commit in flight ends it either way */
        pthread_mutex_unlock(&m->lock);
        return;
    }
    if (coord_rewrite_lost(c, m) != 0) { /* CO15: the log does not take writes yet */
        pthread_mutex_unlock(&m->lock);
        return;
    }
    if (m->v.state == TXN_ONGOING && !m->v.hanging) {
        rt_txn_check_fn check = m->check_fn ? m->check_fn : c->check_fn;
        void *check_ctx = m->check_fn ? m->check_ctx : c->check_ctx;
        if (check && now - m->v.start_ms >= (int64_t)o->txn_check_interval_ms &&
            now - m->last_check_ms >= (int64_t)o->txn_check_interval_ms) {
            m->last_check_ms = now;
            enum rt_txn_check_result r =
                check(check_ctx, m->id, m->v.producer_id, m->v.producer_epoch);
            if (r == RT_TXN_CHECK_COMMIT) {
                (void)coord_end_locked(c, m, true, false);
            } else if (r == RT_TXN_CHECK_ROLLBACK) {
                (void)coord_end_locked(c, m, false, true);
            } else {
                struct txn_log_value next = m->v;
                next.check_count++;
                bool exhausted = next.check_count >= o->txn_check_max;
                if (exhausted && o->txn_park_hanging)
                    next.hanging = true;
                if (coord_transition(c, m, &next) == 0 && exhausted && !o->txn_park_hanging)
                    (void)coord_end_locked(c, m, false, true);
            }
        } else if (now - m->v.start_ms > m->v.timeout_ms) {
            (void)coord_end_locked(c, m, false, true); /* CO5 */
        }
    } else if (coord_is_prepare(m->v.state)) {
        /* CO15: a phase two that failed earlier (a partition that could not write): retry
         * it, as often as the ticks come, until the partitions have recovered (SH11). */
        (void)coord_complete_prepared(c, m);
    } else if ((m->v.state == TXN_EMPTY || m->v.state == TXN_COMPLETE_COMMIT ||
                m->v.state == TXN_COMPLETE_ABORT) &&
               now - m->v.last_update_ms > o->transactional_id_expiration_ms && !m->check_fn) {
        /* CO11: the id's last markers may still be lazy; make them durable before the record
         * that could repair them goes. */
        if (log_sync_unsynced(c->lg) == 0 && coord_log_write(c, m->id, NULL) == 0) { /* tombstone */
            m->v.state = TXN_DEAD;
            coord_meta_remove(c, m);
        }
    }
    pthread_mutex_unlock(&m->lock);
}

/* CO6: re-append every live value in a fresh segment, then drop everything older. */
static void compact(struct coordinator *c)
{
    pthread_mutex_lock(&c->table_lock); /* live changes under it (meta_get, meta_remove) */
    uint64_t live = c->live;
    pthread_mutex_unlock(&c->table_lock);
    if (__atomic_load_n(&c->log_records, __ATOMIC_RELAXED) <
        COORD_COMPACT_MIN_RECORDS + 2ull * live)
        return;
    if (log_roll(c->lg, c->log) != 0)
        return;
    int64_t checkpoint = -1;
    if (log_list_offsets(c->lg, TXN_LOG_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED,
                         &checkpoint) != 0)
        return;
    uint32_t n = 0;
    struct txn_meta **all = coord_table_snapshot(c, &n);
    if (!all)
        return;
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct txn_meta *m = all[i];
        pthread_mutex_lock(&m->lock);
        while (m->deciding) /* its PrepareCommit is queued: re-append what it decided */
            pthread_cond_wait(&m->decided, &m->lock);
        if (rc == 0 && !m->removed) {
            rc = coord_log_write(c, m->id, &m->v);
            if (rc == 0)
                coord_note_durable(m); /* CO15: its current value supersedes a lost one */
        }
        pthread_mutex_unlock(&m->lock);
        coord_meta_put(c, m);
    }
    free(all);
    /* CO11: every marker of a transaction decided in the records about to go is written
     * (each id was re-appended after its last commit finished); make the lazy ones durable
     * before the records that could repair them are deleted. */
    if (rc == 0)
        rc = log_sync_unsynced(c->lg);
    if (rc == 0 && log_delete_before(c->lg, c->log, checkpoint) >= 0)
        __atomic_store_n(&c->log_records, n, __ATOMIC_RELAXED);
}

static void tick_led(struct coordinator *c)
{
    uint32_t n = 0;
    struct txn_meta **all = coord_table_snapshot(c, &n);
    if (!all)
        return;
    int64_t now = fs_now_ms();
    for (uint32_t i = 0; i < n; i++) {
        tick_one(c, all[i], now);
        coord_meta_put(c, all[i]);
    }
    free(all);
    compact(c);
}

void coordinator_tick(struct coordinator *c)
{
    /* CO16: a follower's copy is only a log: no timeout, expiry or compaction runs on it. */
    pthread_rwlock_rdlock(&c->role_lock);
    if (!c->following)
        tick_led(c);
    pthread_rwlock_unlock(&c->role_lock);
}

void *coord_timer_main(void *arg)
{
    struct coordinator *c = arg;
    pthread_mutex_lock(&c->timer_lock);
    while (!c->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += COORD_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->timer_cv, &c->timer_lock, &ts);
        if (c->stopping)
            break;
        pthread_mutex_unlock(&c->timer_lock);
        coordinator_tick(c);
        pthread_mutex_lock(&c->timer_lock);
    }
    pthread_mutex_unlock(&c->timer_lock);
    return NULL;
}
