/*
 * coordinator_table.c — the coordinator's table of transactional ids: lookup and creation by
 * name (a reference each, coord_meta_put releases it), the index by producer id (CO8), removal,
 * and a referenced snapshot for the passes over every id (timer, listing, compaction).
 *
 * It owns the buckets and each id's reference count under the table lock; it never takes an
 * id's own lock nor writes the log.
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

static uint32_t bucket_of(const char *id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % COORD_BUCKETS;
}

/* ---- the table ---- */

struct txn_meta *coord_meta_get(struct coordinator *c, const char *id, bool create)
{
    pthread_mutex_lock(&c->table_lock);
    uint32_t b = bucket_of(id);
    struct txn_meta *m = c->buckets[b];
    while (m && strcmp(m->id, id) != 0)
        m = m->next;
    if (!m && create) {
        m = calloc(1, sizeof(*m));
        if (m) {
            snprintf(m->id, sizeof(m->id), "%s", id);
            pthread_mutex_init(&m->lock, NULL);
            pthread_cond_init(&m->decided, NULL);
            m->v.producer_id = -1;
            m->v.producer_epoch = -1;
            m->v.state = TXN_EMPTY;
            /* Now, not 0: the timer expires an Empty id idle past transactional_id_expiration_ms
             * (CO11), and a fresh entry is in the table before its creator takes its lock: with
             * 0 the timer could tombstone and remove it in that window, so the InitProducerId
             * that created it would answer a producer id the coordinator no longer knows (seen
             * as INVALID_TXN_STATE on its first AddPartitionsToTxn, under load). */
            m->v.last_update_ms = fs_now_ms();
            m->pid_key = -1;
            m->init_from_pid = -1; /* CO14 */
            m->end_retry_pid = -1; /* CO15 */
            m->init_to_pid = -1;
            m->next = c->buckets[b];
            c->buckets[b] = m;
            c->live++;
        }
    }
    if (m)
        m->refs++;
    pthread_mutex_unlock(&c->table_lock);
    return m;
}

void coord_meta_free(struct txn_meta *m)
{
    free(m->v.partitions);
    pthread_cond_destroy(&m->decided);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void coord_meta_put(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    bool free_it = --m->refs == 0 && m->removed;
    pthread_mutex_unlock(&c->table_lock);
    if (free_it)
        coord_meta_free(m);
}

/* Unlinks a Dead id; memory goes with the last reference. Caller holds m->lock and a ref. */
uint32_t coord_pid_bucket_of(int64_t pid)
{
    uint64_t x = (uint64_t)pid * 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(x >> 40) % COORD_BUCKETS;
}

/* Caller holds the table lock. */
static void pid_unlink_locked(struct coordinator *c, struct txn_meta *m)
{
    if (m->pid_key < 0)
        return;
    struct txn_meta **pp = &c->pid_buckets[coord_pid_bucket_of(m->pid_key)];
    while (*pp && *pp != m)
        pp = &(*pp)->pid_next;
    if (*pp)
        *pp = m->pid_next;
    m->pid_key = -1;
    m->pid_next = NULL;
}

void coord_meta_remove(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    struct txn_meta **pp = &c->buckets[bucket_of(m->id)];
    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = m->next;
        c->live--;
    }
    m->removed = true;
    pid_unlink_locked(c, m);
    pthread_mutex_unlock(&c->table_lock);
}

/* CO8: re-indexes m under its current producer id. Caller holds m->lock. */
void coord_pid_index(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    if (m->pid_key != m->v.producer_id && !m->removed) {
        pid_unlink_locked(c, m);
        if (m->v.producer_id >= 0) {
            uint32_t b = coord_pid_bucket_of(m->v.producer_id);
            m->pid_key = m->v.producer_id;
            m->pid_next = c->pid_buckets[b];
            c->pid_buckets[b] = m;
        }
    }
    pthread_mutex_unlock(&c->table_lock);
}

/* A snapshot of the table: every id, each with a reference taken under the table lock, so the
 * caller can visit them without it (ids created meanwhile are not in it; removed ones stay valid
 * until their reference is put). Returns the malloc'd array (the caller puts each reference and
 * frees it) and its length in *n_out, or NULL when out of memory. O(ids + COORD_BUCKETS). */
struct txn_meta **coord_table_snapshot(struct coordinator *c, uint32_t *n_out)
{
    pthread_mutex_lock(&c->table_lock);
    uint32_t cap = c->live ? c->live : 1;
    struct txn_meta **all = malloc((size_t)cap * sizeof(*all));
    uint32_t n = 0;
    for (uint32_t b = 0; all && b < COORD_BUCKETS; b++)
        for (struct txn_meta *m = c->buckets[b]; m; m = m->next) {
            assert(n < cap); /* live counts exactly the linked ids */
            m->refs++;
            all[n++] = m;
        }
    assert(!all || n == c->live);
    pthread_mutex_unlock(&c->table_lock);
    *n_out = n;
    return all;
}
