/*
 * txn.c — the transaction layer's front (txn.h): the registry, and the coordinator and group
 * manager created on first use and wired together (TX1, TX2).
 *
 * Never calls the public API or anything in client/ or engine.c; writes only through log.h.
 */
#include "txn.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator.h"
#include "error.h"
#include "group.h"
#include "txn_log.h"

int txn_registry_open(struct txn *t, const char *dir, struct io_fault_plan *faults)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->jobs_lock, NULL);
    pthread_cond_init(&t->jobs_room, NULL);
    for (uint32_t i = 0; i < TXN_LANES; i++)
        pthread_cond_init(&t->lanes[i].ready, NULL);
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

/* ---- the lanes of the asynchronous calls (TX3, TX4) ---- */

struct lane_arg {
    struct txn *t;
    struct txn_lane *lane;
};

static void *lane_main(void *arg)
{
    struct txn *t = ((struct lane_arg *)arg)->t;
    struct txn_lane *lane = ((struct lane_arg *)arg)->lane;
    free(arg);
    pthread_mutex_lock(&t->jobs_lock);
    for (;;) {
        while (!lane->head && !t->jobs_stopping)
            pthread_cond_wait(&lane->ready, &t->jobs_lock);
        struct txn_job *job = lane->head;
        if (!job)
            break; /* stopping, nothing queued */
        lane->head = job->next;
        if (!lane->head)
            lane->tail = NULL;
        assert(t->jobs_queued > 0);
        t->jobs_queued--;
        bool stopping = t->jobs_stopping;
        pthread_cond_signal(&t->jobs_room);
        pthread_mutex_unlock(&t->jobs_lock);
        job->next = NULL;
        job->run(job, stopping ? RT_E_CLOSED : 0); /* TX3: exactly once */
        pthread_mutex_lock(&t->jobs_lock);
    }
    pthread_mutex_unlock(&t->jobs_lock);
    return NULL;
}

static uint32_t lane_of(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % TXN_LANES;
}

int txn_job_submit(struct txn *t, const char *key, struct txn_job *job)
{
    assert(job && job->run);
    struct txn_lane *lane = &t->lanes[lane_of(key ? key : "")];
    pthread_mutex_lock(&t->jobs_lock);
    while (t->jobs_queued >= TXN_JOBS_QUEUED_MAX && !t->jobs_stopping)
        pthread_cond_wait(&t->jobs_room, &t->jobs_lock); /* TX4 */
    int rc = 0;
    if (t->jobs_stopping) {
        rc = error_set(RT_E_CLOSED, "the engine is closing");
    } else if (!lane->started) {
        struct lane_arg *a = malloc(sizeof(*a));
        rc = a ? 0 : -ENOMEM;
        if (a) {
            *a = (struct lane_arg){.t = t, .lane = lane};
            rc = -pthread_create(&lane->thread, NULL, lane_main, a);
            if (rc)
                free(a);
        }
        if (rc)
            error_set(rc, "cannot start a transaction lane thread: %s", strerror(-rc));
        else
            lane->started = true;
    }
    if (rc == 0) {
        job->next = NULL;
        if (lane->tail)
            lane->tail->next = job;
        else
            lane->head = job;
        lane->tail = job;
        t->jobs_queued++;
        pthread_cond_signal(&lane->ready);
    }
    pthread_mutex_unlock(&t->jobs_lock);
    return rc;
}

static void lanes_stop(struct txn *t)
{
    pthread_mutex_lock(&t->jobs_lock);
    t->jobs_stopping = true;
    pthread_cond_broadcast(&t->jobs_room);
    for (uint32_t i = 0; i < TXN_LANES; i++)
        pthread_cond_signal(&t->lanes[i].ready);
    pthread_mutex_unlock(&t->jobs_lock);
    for (uint32_t i = 0; i < TXN_LANES; i++) {
        if (!t->lanes[i].started)
            continue;
        pthread_join(t->lanes[i].thread, NULL); /* it reported what was queued (TX3) */
        t->lanes[i].started = false;
    }
    assert(t->jobs_queued == 0);
}

void txn_stop(struct txn *t)
{
    lanes_stop(t);
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
    for (uint32_t i = 0; i < TXN_LANES; i++)
        pthread_cond_destroy(&t->lanes[i].ready);
    pthread_cond_destroy(&t->jobs_room);
    pthread_mutex_destroy(&t->jobs_lock);
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

int txn_coordinator_role(struct txn *t, uint32_t partition, bool lead)
{
    const char *what = lead ? "rt_partition_become_leader" : "rt_partition_resign";
    if (partition != 0) /* one partition: every transactional id maps to it (format.md G.7) */
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s: unknown partition %s-%u", what,
                         TXN_LOG_TOPIC, partition);
    struct coordinator *c = NULL;
    int rc = txn_coordinator_create(t, &c);
    if (rc)
        return rc;
    if (!lead) { /* TX5: the log first (a write in flight then fails, nothing adopted) */
        rc = log_internal_set_follower(t->log, TXN_LOG_TOPIC, partition, true);
        return rc ? rc : coordinator_resign(c);
    }
    rc = log_internal_set_follower(t->log, TXN_LOG_TOPIC, partition, false);
    if (rc)
        return rc;
    rc = coordinator_lead(c);
    if (rc) { /* stays a follower: its log takes no write of ours */
        char detail[ERROR_DETAIL_BYTES];
        snprintf(detail, sizeof(detail), "%s", rt_error_detail());
        (void)log_internal_set_follower(t->log, TXN_LOG_TOPIC, partition, true);
        return error_set(rc, "%s", detail);
    }
    return 0;
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
