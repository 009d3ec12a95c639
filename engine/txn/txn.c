/*
 * txn.c — the transaction layer's front (txn.h): the registry, and the coordinator and group
 * manager created on first use and wired together (TX1, TX2).
 *
 * Never calls the public API or anything in client/ or engine.c; writes only through log.h.
 */
#include "txn.h"

#include <assert.h>
#include <string.h>

#include "coordinator.h"
#include "error.h"
#include "group.h"
#include "txn_log.h"

int txn_registry_open(struct txn *t, const char *dir, struct io_fault_plan *faults)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    int rc = producer_registry_open(&t->producers, dir, faults);
    t->producers_open = true; /* closed by txn_close whatever open returned */
    return rc;
}

int txn_registry_raise(struct txn *t, struct log *log)
{
    assert(t->producers_open);
    if (log_read_only(log))
        return 0; /* a read-only engine allocates no id and writes no file */
    /* producers.meta alone is not enough: a deleted (or older) copy would hand out an id some
     * partition still holds state for, and that producer's first batch would be acknowledged
     * as a duplicate of the old one's and never stored. The logs are walked only when the file
     * was missing. */
    bool missing = !producer_registry_found(&t->producers);
    return producer_registry_raise(&t->producers, log_producer_id_max(log, missing) + 1);
}

int txn_start(struct txn *t, struct log *log)
{
    assert(t->producers_open);
    t->log = log;
    int rc = 0;
    bool read_only = log_read_only(log);
    /* Consumer offsets first (the coordinator completes transactions that carry offsets,
     * TX2), then the coordinator, which finishes every Prepare* before we return. */
    if (log_topic_exists(log, GROUP_OFFSETS_TOPIC)) {
        rc = group_manager_open(log, &t->groups);
        if (rc)
            return rc;
    }
    if (log_topic_exists(log, TXN_LOG_TOPIC)) {
        rc = coordinator_open(log, &t->producers, t->groups, false, &t->coordinator);
        if (rc)
            return rc;
        /* A transactional id that never wrote to a partition has its id only in the log. */
        if (!read_only)
            rc = producer_registry_raise(&t->producers,
                                         coordinator_producer_id_max(t->coordinator) + 1);
    }
    return rc;
}

void txn_stop(struct txn *t)
{
    pthread_mutex_lock(&t->lock);
    struct coordinator *c = t->coordinator;
    t->coordinator = NULL;
    pthread_mutex_unlock(&t->lock);
    coordinator_close(c);
}

void txn_close(struct txn *t)
{
    txn_stop(t);
    if (t->groups)
        group_manager_close(t->groups);
    t->groups = NULL;
    if (t->producers_open)
        producer_registry_close(&t->producers);
    t->producers_open = false;
    pthread_mutex_destroy(&t->lock);
}

struct coordinator *txn_coordinator(struct txn *t)
{
    pthread_mutex_lock(&t->lock);
    struct coordinator *c = t->coordinator;
    pthread_mutex_unlock(&t->lock);
    if (!c)
        error_set(RT_E_INVALID_TXN_STATE, "no transaction has ever been started in %s",
                  t->log->dir);
    return c;
}

int txn_coordinator_create(struct txn *t, struct coordinator **out)
{
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    if (!t->coordinator && log_read_only(t->log)) {
        rc = log_refuse_if_read_only(t->log, "a transaction coordinator");
    } else if (!t->coordinator) {
        rc = coordinator_open(t->log, &t->producers, t->groups, true, &t->coordinator);
        if (rc)
            t->coordinator = NULL;
    }
    *out = t->coordinator;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

struct group_manager *txn_groups(struct txn *t)
{
    pthread_mutex_lock(&t->lock);
    struct group_manager *g = t->groups;
    pthread_mutex_unlock(&t->lock);
    return g;
}

int txn_groups_create(struct txn *t, struct group_manager **out)
{
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    if (!t->groups) {
        rc = log_internal_topic_create(t->log, GROUP_OFFSETS_TOPIC, GROUP_OFFSETS_PARTITIONS);
        if (rc == 0 || rc == RT_E_TOPIC_ALREADY_EXISTS)
            rc = group_manager_open(t->log, &t->groups);
        if (rc)
            t->groups = NULL;
        else if (t->coordinator)
            coordinator_attach_groups(t->coordinator, t->groups); /* TX2 */
    }
    *out = t->groups;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int txn_producer_allocate(struct txn *t, int64_t *producer_id_out)
{
    return producer_registry_allocate(&t->producers, producer_id_out);
}

int txn_producer_open_name(struct txn *t, const char *name, int64_t *producer_id_out,
                           int16_t *epoch_out)
{
    return producer_registry_open_name(&t->producers, name, producer_id_out, epoch_out);
}
