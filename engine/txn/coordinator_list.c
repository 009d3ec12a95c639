/*
 * coordinator_list.c — what the coordinator answers about itself without changing anything:
 * the transactional ids (rt_txn_list) and a partition's producer state
 * (rt_partition_producers, collected on its shard).
 *
 * It only reads: each id under its own lock, a partition's table on its shard thread.
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

/* ---- listing ---- */

struct list_entry {
    struct txn_meta *m;
};

int coordinator_list(struct coordinator *c, int (*fn)(void *ctx, const struct rt_txn_info *txn),
                     void *ctx)
{
    uint32_t n = 0;
    struct txn_meta **all = coord_table_snapshot(c, &n); /* fn runs without the table lock */
    if (!all)
        return -ENOMEM;
    int rc = 0;
    int64_t now = fs_now_ms();
    for (uint32_t i = 0; i < n; i++) {
        struct txn_meta *m = all[i];
        if (rc == 0) {
            pthread_mutex_lock(&m->lock);
            uint32_t pc = m->v.partition_count;
            const char **topics = calloc(pc ? pc : 1, sizeof(*topics));
            uint32_t *ids = calloc(pc ? pc : 1, sizeof(*ids));
            int64_t *pinned = calloc(pc ? pc : 1, sizeof(*pinned));
            if (!topics || !ids || !pinned) {
                rc = -ENOMEM;
            } else {
                bool open = m->v.state == TXN_ONGOING || coord_is_prepare(m->v.state);
                for (uint32_t k = 0; k < pc; k++) {
                    topics[k] = m->v.partitions[k].topic;
                    ids[k] = m->v.partitions[k].partition;
                    pinned[k] = -1;
                    int64_t lso = -1;
                    if (open && log_list_offsets(c->lg, topics[k], ids[k], RT_OFFSET_LATEST,
                                                 RT_READ_COMMITTED, &lso) == 0) {
                        int64_t hw = -1;
                        log_list_offsets(c->lg, topics[k], ids[k], RT_OFFSET_LATEST,
                                         RT_READ_UNCOMMITTED, &hw);
                        pinned[k] = lso < hw ? lso : -1;
                    }
                }
                struct rt_txn_info info = {
                    .transactional_id = m->id,
                    .producer_id = m->v.producer_id,
                    .epoch = m->v.producer_epoch,
                    .state = txn_state_name(m->v.state),
                    .age_ms = m->v.start_ms >= 0 && open ? now - m->v.start_ms : 0,
                    .timeout_ms = m->v.timeout_ms,
                    .check_count = m->v.check_count,
                    .hanging = m->v.hanging,
                    .partition_count = pc,
                    .partition_topics = topics,
                    .partition_ids = ids,
                    .pinned_lso = pinned,
                };
                if (m->v.state != TXN_DEAD)
                    rc = fn(ctx, &info);
            }
            free(topics);
            free(ids);
            free(pinned);
            pthread_mutex_unlock(&m->lock);
        }
        coord_meta_put(c, m);
    }
    free(all);
    return rc;
}

/* ---- producer state of a partition (rt_partition_producers) ---- */

struct producers_call {
    struct partition *p;
    struct rt_partition_producer *out;
    size_t count, capacity;
};

static int producers_each(void *ctx, const struct producer_entry *e)
{
    struct producers_call *c = ctx;
    if (c->count == c->capacity) {
        size_t cap = c->capacity ? c->capacity * 2 : 16;
        struct rt_partition_producer *b = realloc(c->out, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        c->out = b;
        c->capacity = cap;
    }
    struct rt_partition_producer *o = &c->out[c->count++];
    *o = (struct rt_partition_producer){.producer_id = e->producer_id,
                                        .producer_epoch = e->epoch,
                                        .last_sequence = -1,
                                        .last_timestamp_ms = e->last_timestamp_ms,
                                        .coordinator_epoch = e->coordinator_epoch,
                                        .current_txn_first_offset = e->current_txn_first_offset};
    if (e->batch_count)
        o->last_sequence = e->batches[e->batch_count - 1].last_seq;
    return 0;
}

/* On the partition's shard thread: the table is the shard's alone. Copies, never calls out. */
static int producers_collect(struct shard *s, void *arg)
{
    (void)s;
    struct producers_call *c = arg;
    return producer_table_each(&c->p->producers, producers_each, c);
}

int coordinator_partition_producers(struct log *lg, const char *topic, uint32_t partition,
                                    int (*fn)(void *ctx, const struct rt_partition_producer *pr),
                                    void *ctx)
{
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "no partition %s-%u", topic, partition);
    struct producers_call c = {.p = p};
    int rc;
    if (log_read_only(lg)) { /* no shard thread runs and nothing writes: read in place */
        rc = producers_collect(p->shard, &c);
    } else {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = producers_collect, .arg = &c};
        rc = shard_submit(p->shard, &req);
        if (rc == 0)
            rc = req.result;
    }
    if (rc)
        error_set(rc, "listing the producers of %s-%u: %s", topic, partition, rt_strerror(rc));
    for (size_t i = 0; rc == 0 && i < c.count; i++) /* fn on the caller's thread, no lock */
        rc = fn(ctx, &c.out[i]);
    free(c.out);
    return rc;
}
