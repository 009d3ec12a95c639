/*
 * segment_maps.c — the budget of mapped sealed segments (segment_maps.h): the ring of releasable
 * segments, the CLOCK sweep that picks which to release, and the counters. The unmapping and
 * the pin check are segment.c's (segment_release_maps, SG8); this file never touches a mapping.
 */
#include "segment_maps.h"

#include <stdio.h>

#include "segment.h"

uint32_t segment_maps_resolve(uint32_t mapped_segments_max)
{
    if (mapped_segments_max)
        return mapped_segments_max;
    unsigned long long maps = 65530; /* the kernel's default vm.max_map_count */
    FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
    if (f) {
        unsigned long long v = 0;
        if (fscanf(f, "%llu", &v) == 1 && v > 0)
            maps = v;
        fclose(f);
    }
    /* A quarter of the process's mappings for sealed segments (3 each): the rest for active
     * segments (bounded by open_segments_max), libraries, thread stacks, malloc arenas. */
    unsigned long long n = maps / 4 / 3;
    if (n < SEGMENT_MAPS_MIN)
        n = SEGMENT_MAPS_MIN;
    if (n > SEGMENT_MAPS_AUTO_MAX)
        n = SEGMENT_MAPS_AUTO_MAX;
    return (uint32_t)n;
}

void segment_maps_init(struct segment_maps *m, uint32_t max)
{
    m->max = max;
    pthread_mutex_init(&m->lock, NULL);
    m->hand = NULL;
    atomic_init(&m->count, 0);
    atomic_init(&m->peak, 0);
    atomic_init(&m->releases, 0);
    atomic_init(&m->remaps, 0);
    atomic_init(&m->pinned, 0);
}

void segment_maps_destroy(struct segment_maps *m)
{
    pthread_mutex_destroy(&m->lock);
}

/* The newest entry goes right behind the hand: the sweep reaches it last. */
static void ring_insert(struct segment_maps *m, struct segment *seg)
{
    if (!m->hand) {
        seg->mm_next = seg->mm_prev = seg;
        m->hand = seg;
    } else {
        struct segment *tail = m->hand->mm_prev;
        seg->mm_prev = tail;
        seg->mm_next = m->hand;
        tail->mm_next = seg;
        m->hand->mm_prev = seg;
    }
    seg->mm_in = true;
    uint32_t n = atomic_load_explicit(&m->count, memory_order_relaxed) + 1;
    atomic_store_explicit(&m->count, n, memory_order_relaxed);
    if (n > atomic_load_explicit(&m->peak, memory_order_relaxed))
        atomic_store_explicit(&m->peak, n, memory_order_relaxed);
}

static void ring_remove(struct segment_maps *m, struct segment *seg)
{
    if (seg->mm_next == seg) {
        m->hand = NULL;
    } else {
        seg->mm_prev->mm_next = seg->mm_next;
        seg->mm_next->mm_prev = seg->mm_prev;
        if (m->hand == seg)
            m->hand = seg->mm_next;
    }
    seg->mm_next = seg->mm_prev = NULL;
    seg->mm_in = false;
    atomic_store_explicit(&m->count, atomic_load_explicit(&m->count, memory_order_relaxed) - 1,
                          memory_order_relaxed);
}

/* MM3: releases the least recently used unpinned segments until count <= max; each entry is
 * visited at most twice (a used one loses its mark the first time). Under m->lock. */
static void sweep_locked(struct segment_maps *m)
{
    uint32_t count = atomic_load_explicit(&m->count, memory_order_relaxed);
    if (m->max == 0 || count <= m->max)
        return;
    uint64_t steps = 2 * (uint64_t)count + 1;
    while (m->hand && steps-- > 0 &&
           atomic_load_explicit(&m->count, memory_order_relaxed) > m->max) {
        struct segment *s = m->hand;
        if (atomic_exchange_explicit(&s->mm_used, false, memory_order_relaxed)) {
            m->hand = s->mm_next; /* a second chance */
            continue;
        }
        if (segment_release_maps(s)) {
            atomic_store_explicit(&s->mm_wanted, false, memory_order_relaxed);
            ring_remove(m, s);
            atomic_fetch_add_explicit(&m->releases, 1, memory_order_relaxed);
        } else {
            /* MM2: a reader holds it; its last holder sweeps again (segment_unref). */
            atomic_store_explicit(&s->mm_wanted, true, memory_order_relaxed);
            atomic_fetch_add_explicit(&m->pinned, 1, memory_order_relaxed);
            m->hand = s->mm_next;
        }
    }
}

void segment_maps_attach(struct segment_maps *m, struct segment *seg)
{
    if (!m || seg->cfg.maps != m || seg->cfg.read_only)
        return;
    pthread_mutex_lock(&m->lock);
    seg->mm_attached = true;
    /* seq_cst both ways, against segment_map's store of mapped and its load of mm_linked
     * (segment_maps_mapped): a segment mapped while it is attached is put in the ring by one of
     * the two, never by neither. */
    atomic_store(&seg->mm_linked, true);
    if (!seg->mm_in && atomic_load(&seg->mapped))
        ring_insert(m, seg);
    sweep_locked(m);
    pthread_mutex_unlock(&m->lock);
}

void segment_maps_forget(struct segment *seg)
{
    struct segment_maps *m = seg->cfg.maps;
    if (!m || !atomic_load_explicit(&seg->mm_linked, memory_order_relaxed))
        return;
    pthread_mutex_lock(&m->lock);
    if (seg->mm_in)
        ring_remove(m, seg);
    seg->mm_attached = false;
    atomic_store_explicit(&seg->mm_linked, false, memory_order_relaxed);
    atomic_store_explicit(&seg->mm_wanted, false, memory_order_relaxed);
    pthread_mutex_unlock(&m->lock);
}

void segment_maps_mapped(struct segment *seg, bool remap)
{
    struct segment_maps *m = seg->cfg.maps;
    if (m && remap)
        atomic_fetch_add_explicit(&m->remaps, 1, memory_order_relaxed);
    if (!m || !atomic_load(&seg->mm_linked)) /* seq_cst: see segment_maps_attach */
        return;
    pthread_mutex_lock(&m->lock);
    if (seg->mm_attached && !seg->mm_in && atomic_load_explicit(&seg->mapped, memory_order_acquire))
        ring_insert(m, seg);
    sweep_locked(m);
    pthread_mutex_unlock(&m->lock);
}

void segment_maps_sweep(struct segment_maps *m)
{
    pthread_mutex_lock(&m->lock);
    sweep_locked(m);
    pthread_mutex_unlock(&m->lock);
}

const struct segment_maps_ops segment_maps_ops = {
    .forget = segment_maps_forget,
    .mapped = segment_maps_mapped,
    .sweep = segment_maps_sweep,
};
