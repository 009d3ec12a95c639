/*
 * coordinator_role.c — whether this node coordinates the transactional ids (it leads
 * `__transaction_state`) or only holds a follower's copy of their log (CO16 in coordinator.c;
 * docs/format.md A.10 "Internal partitions", G.7): the gate every operation passes, resign (the
 * table dropped) and lead (the table rebuilt from the log, every transaction the old leader left
 * open decided as an open decides it).
 *
 * It never writes a record or a marker itself (coord_load does, through coordinator_write.c and
 * the reconciliation, exactly as at open), never changes the log partition's role (the caller
 * orders that around these calls: txn.c) and never drops the table while an operation runs (the
 * role lock, held exclusive).
 */
#include "coordinator_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

int coord_enter(struct coordinator *c, const char *id)
{
    pthread_rwlock_rdlock(&c->role_lock);
    if (!c->following)
        return 0;
    pthread_rwlock_unlock(&c->role_lock);
    return error_set(RT_E_NOT_COORDINATOR,
                     "transactional id '%s': its %s partition is led by another node "
                     "(rt_partition_resign; CO16)",
                     id ? id : "(by producer id)", TXN_LOG_TOPIC);
}

void coord_leave(struct coordinator *c)
{
    pthread_rwlock_unlock(&c->role_lock);
}

void coord_table_drop(struct coordinator *c)
{
    uint32_t n = 0;
    struct txn_meta **all = NULL;
    /* A snapshot needs memory; retry rather than leave ids behind (they would answer as if this
     * node still coordinated them). */
    while (!(all = coord_table_snapshot(c, &n)))
        usleep(1000);
    for (uint32_t i = 0; i < n; i++) {
        struct txn_meta *m = all[i];
        pthread_mutex_lock(&m->lock); /* a listing or a partition's release may hold it */
        coord_meta_remove(c, m);
        pthread_mutex_unlock(&m->lock);
        coord_meta_put(c, m); /* freed with its last reference (a Complete* still queued) */
    }
    free(all);
    coord_decisions_free(c);
    __atomic_store_n(&c->log_records, 0, __ATOMIC_RELAXED);
}

int coordinator_resign(struct coordinator *c)
{
    pthread_rwlock_wrlock(&c->role_lock); /* CO16: every operation in flight finished */
    if (!c->following) {
        c->following = true;
        coord_table_drop(c);
    }
    pthread_rwlock_unlock(&c->role_lock);
    return 0;
}

int coordinator_lead(struct coordinator *c)
{
    pthread_rwlock_wrlock(&c->role_lock);
    int rc = 0;
    if (c->following) {
        rc = coord_load(c, true); /* CO16: as open, with every Ongoing fenced */
        if (rc) {
            char detail[ERROR_DETAIL_BYTES];
            snprintf(detail, sizeof(detail), "%s", rt_error_detail());
            coord_table_drop(c); /* stays a follower, holding nothing */
            rc = error_set(rc, "%s", detail);
        } else {
            c->following = false;
        }
    }
    pthread_rwlock_unlock(&c->role_lock);
    return rc;
}
