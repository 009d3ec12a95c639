/*
 * producer_state.c — the per-partition producer table (see producer_state.h for PST1-PST3).
 *
 * Rules, in the order they are applied to a batch (Kafka's ProducerAppendInfo for anonymous
 * producers; Pulsar's producer-name dedup for named ones):
 *   PS1. epoch < entry.epoch                           -> RT_E_INVALID_PRODUCER_EPOCH
 *   PS2. (firstSeq, lastSeq) equals one of the last 5  -> duplicate (original offset)
 *   PS3. named: lastSeq <= highest persisted           -> duplicate (offset -1 if outside window)
 *        named: firstSeq > highest persisted           -> append (gaps allowed, any epoch >= ours)
 *        named: otherwise (straddles)                  -> RT_E_OUT_OF_ORDER_SEQUENCE
 *   PS4. unknown producer id: firstSeq must be 0       -> else RT_E_UNKNOWN_PRODUCER_ID
 *   PS5. epoch > entry.epoch: firstSeq must be 0       -> else RT_E_OUT_OF_ORDER_SEQUENCE
 *   PS6. same epoch: firstSeq == lastSeq + 1 (wrapping past INT32_MAX to 0) -> append
 *   PS7. anything else                                 -> RT_E_OUT_OF_ORDER_SEQUENCE
 *
 * Costs: check and update are O(1) expected (one hash probe sequence); eviction scans at most
 * EVICT_SCAN entries.
 */
#include "producer_state.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringtail.h"

#define EVICT_SCAN 64

static uint32_t hash_pid(int64_t pid)
{
    uint64_t x = (uint64_t)pid;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

int producer_table_init(struct producer_table *t, uint32_t max, producer_named_fn is_named,
                        void *named_ctx)
{
    memset(t, 0, sizeof(*t));
    assert(max > 0);
    t->max = max;
    t->capacity = 16;
    t->slots = calloc(t->capacity, sizeof(*t->slots));
    t->is_named = is_named;
    t->named_ctx = named_ctx;
    return t->slots ? 0 : -ENOMEM;
}

void producer_table_free(struct producer_table *t)
{
    if (!t->slots)
        return;
    for (uint32_t i = 0; i < t->capacity; i++)
        free(t->slots[i]);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static uint32_t slot_of(const struct producer_table *t, int64_t pid)
{
    uint32_t mask = t->capacity - 1;
    uint32_t i = hash_pid(pid) & mask;
    while (t->slots[i] && t->slots[i]->producer_id != pid)
        i = (i + 1) & mask;
    return i;
}

const struct producer_entry *producer_table_find(const struct producer_table *t,
                                                 int64_t producer_id)
{
    if (!t->slots)
        return NULL;
    return t->slots[slot_of(t, producer_id)];
}

/* Removes the entry at slot i, shifting the probe chain back (no tombstones). */
static void remove_slot(struct producer_table *t, uint32_t i)
{
    uint32_t mask = t->capacity - 1;
    free(t->slots[i]);
    t->slots[i] = NULL;
    t->count--;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->slots[j])
            return;
        uint32_t home = hash_pid(t->slots[j]->producer_id) & mask;
        /* Move slots[j] back to i if its home is not in (i, j] (cyclically). */
        bool in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            t->slots[i] = t->slots[j];
            t->slots[j] = NULL;
            i = j;
        }
    }
}

static int grow(struct producer_table *t)
{
    uint32_t cap = t->capacity * 2;
    struct producer_entry **old = t->slots;
    uint32_t old_cap = t->capacity;
    t->slots = calloc(cap, sizeof(*t->slots));
    if (!t->slots) {
        t->slots = old;
        return -ENOMEM;
    }
    t->capacity = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i])
            t->slots[slot_of(t, old[i]->producer_id)] = old[i];
    free(old);
    return 0;
}

/* Evicts the least recently used idle producer among EVICT_SCAN occupied slots. */
static bool evict_one(struct producer_table *t)
{
    uint32_t best = UINT32_MAX, seen = 0;
    for (uint32_t k = 0; k < t->capacity && seen < EVICT_SCAN; k++) {
        uint32_t i = (t->evict_hand + k) & (t->capacity - 1);
        struct producer_entry *e = t->slots[i];
        if (!e || e->current_txn_first_offset >= 0 || e->monotonic)
            continue; /* named producers are durable identities: never evicted */
        seen++;
        if (best == UINT32_MAX || e->last_used < t->slots[best]->last_used)
            best = i;
    }
    t->evict_hand = (t->evict_hand + EVICT_SCAN) & (t->capacity - 1);
    if (best == UINT32_MAX)
        return false;
    remove_slot(t, best);
    return true;
}

static struct producer_entry *insert(struct producer_table *t, int64_t pid, int *err)
{
    if (t->count >= t->max && !evict_one(t)) {
        *err = RT_E_PRODUCERS_FULL;
        return NULL;
    }
    if ((t->count + 1) * 4 > t->capacity * 3 && (*err = grow(t)) != 0)
        return NULL;
    struct producer_entry *e = calloc(1, sizeof(*e));
    if (!e) {
        *err = -ENOMEM;
        return NULL;
    }
    e->producer_id = pid;
    e->epoch = -1;
    e->current_txn_first_offset = -1;
    e->coordinator_epoch = -1;
    e->monotonic = t->is_named ? t->is_named(t->named_ctx, pid) : false;
    t->slots[slot_of(t, pid)] = e;
    t->count++;
    return e;
}

static int32_t last_seq_of(const struct batch_header *h)
{
    /* Sequences wrap past INT32_MAX to 0, as Kafka's DefaultRecordBatch.incrementSequence. */
    int64_t last = (int64_t)h->base_sequence + h->last_offset_delta;
    return (int32_t)(last > INT32_MAX ? last - INT32_MAX - 1 : last);
}

static int32_t next_seq(int32_t seq)
{
    return seq == INT32_MAX ? 0 : seq + 1;
}

int producer_table_check(const struct producer_table *t, const struct batch_header *h,
                         int64_t *dup_offset, const char **rule)
{
    assert(h->producer_id >= 0);
    *dup_offset = -1;
    const struct producer_entry *e = producer_table_find(t, h->producer_id);
    int32_t first = h->base_sequence, last = last_seq_of(h);
    if (first < 0) {
        *rule = "a producer batch needs baseSequence >= 0";
        return RT_E_OUT_OF_ORDER_SEQUENCE;
    }
    if (e && e->epoch >= 0 && h->producer_epoch < e->epoch) {
        *rule = "PS1: epoch older than the producer's current epoch (fenced)";
        return RT_E_INVALID_PRODUCER_EPOCH;
    }
    if (e && h->producer_epoch == e->epoch) {
        for (uint8_t i = 0; i < e->batch_count; i++) {
            if (e->batches[i].first_seq == first && e->batches[i].last_seq == last) {
                *dup_offset = e->batches[i].first_offset;
                *rule = "PS2: duplicate of one of the last 5 batches";
                return PRODUCER_DUPLICATE;
            }
        }
    }
    bool monotonic = e ? e->monotonic : (t->is_named && t->is_named(t->named_ctx, h->producer_id));
    if (monotonic) {
        if (h->base_sequence + (int64_t)h->last_offset_delta > INT32_MAX) {
            *rule = "PS3: named producer sequences must stay <= INT32_MAX";
            return RT_E_OUT_OF_ORDER_SEQUENCE;
        }
        int32_t highest = (e && e->batch_count) ? e->batches[e->batch_count - 1].last_seq : -1;
        if (last <= highest) {
            for (uint8_t i = 0; i < (e ? e->batch_count : 0); i++)
                if (e->batches[i].first_seq == first && e->batches[i].last_seq == last)
                    *dup_offset = e->batches[i].first_offset;
            *rule = "PS3: named producer sequence at or below the highest persisted";
            return PRODUCER_DUPLICATE;
        }
        if (first > highest)
            return PRODUCER_APPEND;
        *rule = "PS3: named producer batch straddles the highest persisted sequence";
        return RT_E_OUT_OF_ORDER_SEQUENCE;
    }
    if (!e || e->batch_count == 0) {
        if (first != 0) {
            *rule = "PS4: a producer id unknown to this partition must start at sequence 0";
            return RT_E_UNKNOWN_PRODUCER_ID;
        }
        return PRODUCER_APPEND;
    }
    if (h->producer_epoch > e->epoch) {
        if (first != 0) {
            *rule = "PS5: a new epoch must start at sequence 0";
            return RT_E_OUT_OF_ORDER_SEQUENCE;
        }
        return PRODUCER_APPEND;
    }
    if (first == next_seq(e->batches[e->batch_count - 1].last_seq))
        return PRODUCER_APPEND;
    *rule = "PS7: sequence is not the next expected one";
    return RT_E_OUT_OF_ORDER_SEQUENCE;
}

/* The entry of h's producer (inserted if new: *err on a full table), moved to h's epoch: a new
 * epoch starts a new sequence space, so an anonymous producer's dedup window is emptied (a named
 * one keeps it: its sequences run across epochs). The writer's common first step (PST3). */
static struct producer_entry *entry_at_epoch(struct producer_table *t, const struct batch_header *h,
                                             int *err)
{
    struct producer_entry *e = (struct producer_entry *)producer_table_find(t, h->producer_id);
    if (!e && !(e = insert(t, h->producer_id, err)))
        return NULL;
    if (h->producer_epoch != e->epoch && !e->monotonic)
        e->batch_count = 0;
    e->epoch = h->producer_epoch;
    assert(e->batch_count <= PRODUCER_BATCHES_KEPT);
    return e;
}

int producer_table_update(struct producer_table *t, const struct batch_header *h)
{
    assert(h->producer_id >= 0);
    int err = 0;
    struct producer_entry *e = entry_at_epoch(t, h, &err);
    if (!e)
        return err;
    if (batch_is_control(h)) {
        e->current_txn_first_offset = -1;
    } else {
        if (batch_is_transactional(h) && e->current_txn_first_offset < 0)
            e->current_txn_first_offset = h->base_offset;
        if (e->batch_count == PRODUCER_BATCHES_KEPT) {
            memmove(e->batches, e->batches + 1,
                    (PRODUCER_BATCHES_KEPT - 1) * sizeof(e->batches[0]));
            e->batch_count--;
        }
        struct producer_batch *b = &e->batches[e->batch_count++];
        b->first_seq = h->base_sequence;
        b->last_seq = last_seq_of(h);
        b->first_offset = h->base_offset;
        b->offset_delta = h->last_offset_delta;
        b->timestamp_ms = h->max_timestamp;
    }
    e->last_timestamp_ms = h->max_timestamp;
    e->last_used = ++t->clock;
    return 0;
}

uint32_t producer_table_expire(struct producer_table *t, int64_t now_ms, int64_t expiration_ms)
{
    uint32_t removed = 0;
    for (uint32_t i = 0; i < t->capacity;) {
        struct producer_entry *e = t->slots[i];
        if (e && e->current_txn_first_offset < 0 && !e->monotonic &&
            e->last_timestamp_ms <= now_ms - expiration_ms) {
            remove_slot(t, i); /* slot i may now hold a shifted entry: look again */
            removed++;
            continue;
        }
        i++;
    }
    return removed;
}

void producer_table_keep_window(struct producer_table *t, const struct producer_table *before,
                                int64_t end)
{
    for (uint32_t i = 0; i < t->capacity; i++) {
        struct producer_entry *e = t->slots[i];
        if (!e || e->monotonic)
            continue;
        const struct producer_entry *o = producer_table_find(before, e->producer_id);
        if (!o || o->epoch != e->epoch)
            continue;
        int64_t oldest = e->batch_count ? e->batches[0].first_offset : end;
        struct producer_batch add[PRODUCER_BATCHES_KEPT];
        uint8_t n = 0;
        for (uint8_t k = 0; k < o->batch_count; k++) /* oldest first (PST2) */
            if (o->batches[k].first_offset < oldest &&
                o->batches[k].first_offset + o->batches[k].offset_delta < end)
                add[n++] = o->batches[k];
        uint8_t room = (uint8_t)(PRODUCER_BATCHES_KEPT - e->batch_count);
        uint8_t take = n < room ? n : room;
        if (take == 0)
            continue;
        memmove(e->batches + take, e->batches, e->batch_count * sizeof(e->batches[0]));
        memcpy(e->batches, add + (n - take), take * sizeof(e->batches[0])); /* the newest */
        e->batch_count = (uint8_t)(e->batch_count + take);
    }
}

int producer_table_load(struct producer_table *t, const struct producer_entry *src)
{
    int err = 0;
    struct producer_entry *e = (struct producer_entry *)producer_table_find(t, src->producer_id);
    if (!e && !(e = insert(t, src->producer_id, &err)))
        return err;
    bool monotonic = e->monotonic;
    *e = *src;
    e->monotonic = monotonic;
    e->last_used = ++t->clock;
    return 0;
}

int producer_table_each(const struct producer_table *t,
                        int (*fn)(void *ctx, const struct producer_entry *e), void *ctx)
{
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i])
            continue;
        int rc = fn(ctx, t->slots[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int producer_table_check_marker(const struct producer_table *t, const struct batch_header *h,
                                int32_t coordinator_epoch, const char **rule)
{
    const struct producer_entry *e = producer_table_find(t, h->producer_id);
    if (!e)
        return 0; /* an empty transaction, or state lost to expiry: the marker is harmless */
    if (h->producer_epoch < e->epoch) {
        *rule = "marker from an epoch older than the producer's current epoch";
        return RT_E_INVALID_PRODUCER_EPOCH;
    }
    if (coordinator_epoch < e->coordinator_epoch) {
        *rule = "marker from a coordinator epoch older than the last one seen (a zombie "
                "coordinator)";
        return RT_E_PRODUCER_FENCED;
    }
    return 0;
}

int producer_table_end_txn(struct producer_table *t, const struct batch_header *h,
                           int32_t coordinator_epoch, int64_t *txn_first_offset_out)
{
    int err = 0;
    struct producer_entry *e = (struct producer_entry *)producer_table_find(t, h->producer_id);
    /* The transaction's first offset as it was before the marker moves the epoch. */
    *txn_first_offset_out = e ? e->current_txn_first_offset : -1;
    if (!(e = entry_at_epoch(t, h, &err)))
        return err;
    e->current_txn_first_offset = -1;
    e->coordinator_epoch = coordinator_epoch;
    e->last_timestamp_ms = h->max_timestamp;
    e->last_used = ++t->clock;
    return 0;
}

int producer_table_check_coordinator(const struct producer_table *t, const struct batch_header *h,
                                     const char **rule)
{
    const struct producer_entry *e = producer_table_find(t, h->producer_id);
    if (e && e->epoch >= 0 && h->producer_epoch < e->epoch) {
        *rule = "PS1: epoch older than the producer's current epoch (fenced)";
        return RT_E_INVALID_PRODUCER_EPOCH;
    }
    return 0;
}

int producer_table_update_coordinator(struct producer_table *t, const struct batch_header *h)
{
    int err = 0;
    struct producer_entry *e = entry_at_epoch(t, h, &err);
    if (!e)
        return err;
    if (batch_is_transactional(h) && e->current_txn_first_offset < 0)
        e->current_txn_first_offset = h->base_offset;
    e->last_timestamp_ms = h->max_timestamp;
    e->last_used = ++t->clock;
    return 0;
}
