/*
 * txn_verify_cache.c — the set of (producer id, epoch, topic-partition) a remote transaction
 * coordinator confirmed (txn_verify_cache.h KVC1-KVC4). A flat array scanned under one mutex:
 * the capacity is small (txn_verify.c sizes it) and a lookup compares a producer id first. It
 * never talks to a coordinator or the engine.
 */
#include "tools/kafka/handlers/txn_verify_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ringtail.h"

struct entry {
    int64_t pid; /* -1: free */
    int16_t epoch;
    uint32_t partition;
    uint64_t age; /* put order (KVC4) */
    char topic[RT_TOPIC_NAME_MAX + 1];
};

struct txn_verify_cache {
    pthread_mutex_t lock;
    size_t cap, count;
    uint64_t next_age;
    struct entry e[];
};

struct txn_verify_cache *txn_verify_cache_new(size_t capacity)
{
    if (capacity == 0)
        capacity = 1;
    struct txn_verify_cache *c = calloc(1, sizeof(*c) + capacity * sizeof(struct entry));
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->cap = capacity;
    for (size_t i = 0; i < capacity; i++)
        c->e[i].pid = -1;
    return c;
}

void txn_verify_cache_free(struct txn_verify_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static bool same_tp(const struct entry *e, const char *topic, uint32_t partition)
{
    return e->partition == partition && strcmp(e->topic, topic) == 0;
}

static void drop(struct txn_verify_cache *c, struct entry *e)
{
    e->pid = -1;
    c->count--;
}

void txn_verify_cache_put(struct txn_verify_cache *c, int64_t pid, int16_t epoch, const char *topic,
                          uint32_t partition)
{
    if (!c || pid < 0 || !topic || strlen(topic) > RT_TOPIC_NAME_MAX)
        return;
    pthread_mutex_lock(&c->lock);
    struct entry *free_slot = NULL, *oldest = NULL;
    for (size_t i = 0; i < c->cap; i++) {
        struct entry *e = &c->e[i];
        if (e->pid == pid) {
            if (e->epoch > epoch) { /* KVC3: that epoch is fenced */
                pthread_mutex_unlock(&c->lock);
                return;
            }
            if (e->epoch < epoch)
                drop(c, e); /* KVC3 */
            else if (same_tp(e, topic, partition)) {
                pthread_mutex_unlock(&c->lock);
                return; /* already there */
            }
        }
        if (e->pid < 0) {
            if (!free_slot)
                free_slot = e;
        } else if (!oldest || e->age < oldest->age) {
            oldest = e;
        }
    }
    if (!free_slot) { /* KVC4 */
        drop(c, oldest);
        free_slot = oldest;
    }
    free_slot->pid = pid;
    free_slot->epoch = epoch;
    free_slot->partition = partition;
    free_slot->age = c->next_age++;
    strcpy(free_slot->topic, topic);
    c->count++;
    pthread_mutex_unlock(&c->lock);
}

bool txn_verify_cache_has(struct txn_verify_cache *c, int64_t pid, int16_t epoch, const char *topic,
                          uint32_t partition)
{
    if (!c || pid < 0 || !topic)
        return false;
    bool found = false;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->cap && !found; i++) {
        const struct entry *e = &c->e[i];
        found = e->pid == pid && e->epoch == epoch && same_tp(e, topic, partition); /* KVC1 */
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

void txn_verify_cache_forget(struct txn_verify_cache *c, int64_t pid, const char *topic,
                             uint32_t partition)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->cap; i++) {
        struct entry *e = &c->e[i];
        if (e->pid == pid && (!topic || same_tp(e, topic, partition))) /* KVC2 */
            drop(c, e);
    }
    pthread_mutex_unlock(&c->lock);
}

size_t txn_verify_cache_count(struct txn_verify_cache *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    size_t n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}
