/*
 * segment_cache.c — the budget of open segments (segment_cache.h): counting segments that hold
 * descriptors and telling the shards how many to close. It never closes anything itself.
 */
#include "segment_cache.h"

#include <assert.h>
#include <sys/resource.h>

uint32_t segment_cache_resolve(uint32_t open_segments_max)
{
    if (open_segments_max)
        return open_segments_max;
    struct rlimit rl;
    uint64_t fds = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fds = (uint64_t)rl.rlim_cur;
    else if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        fds = (uint64_t)SEGMENT_CACHE_AUTO_MAX * 16;
    /* OS4: the segments' worst case, 4 (max + max/8) descriptors (OS2's batch of wakes past
     * the budget), is at most half the limit, and never more than the limit less
     * SEGMENT_CACHE_HEADROOM_MIN: max = limit / 9. */
    uint64_t n = fds / 9;
    uint64_t room = fds > SEGMENT_CACHE_HEADROOM_MIN ? fds - SEGMENT_CACHE_HEADROOM_MIN : 0;
    if (n * 9 / 2 > room)
        n = room * 2 / 9;
    if (n < SEGMENT_CACHE_MIN)
        n = SEGMENT_CACHE_MIN;
    if (n > SEGMENT_CACHE_AUTO_MAX)
        n = SEGMENT_CACHE_AUTO_MAX;
    return (uint32_t)n;
}

void segment_cache_init(struct segment_cache *c, uint32_t max)
{
    c->max = max;
    atomic_init(&c->open, 0);
    atomic_init(&c->reserved, 0);
    atomic_init(&c->sleeps, 0);
    atomic_init(&c->peak, 0);
}

void segment_cache_opened(struct segment_cache *c)
{
    if (!c)
        return;
    uint32_t now = atomic_fetch_add_explicit(&c->open, 1, memory_order_relaxed) + 1;
    uint64_t peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(
                             &c->peak, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void segment_cache_closed(struct segment_cache *c)
{
    if (!c)
        return;
    uint32_t before = atomic_fetch_sub_explicit(&c->open, 1, memory_order_relaxed);
    assert(before > 0); /* OS1 */
    (void)before;
}

uint32_t segment_cache_excess(const struct segment_cache *c)
{
    if (!c || c->max == 0)
        return 0;
    uint32_t open = atomic_load_explicit(&c->open, memory_order_relaxed);
    if (open <= c->max)
        return 0;
    uint32_t low = c->max - c->max / 8; /* OS2: close a batch at once, not one per wake */
    return open - low;
}

bool segment_cache_above_low(const struct segment_cache *c)
{
    return c && c->max > 0 &&
           atomic_load_explicit(&c->open, memory_order_relaxed) > c->max - c->max / 8;
}

bool segment_cache_full(const struct segment_cache *c)
{
    return c && c->max > 0 &&
           atomic_load_explicit(&c->open, memory_order_relaxed) +
                   atomic_load_explicit(&c->reserved, memory_order_relaxed) >=
               c->max;
}

bool segment_cache_reserve(struct segment_cache *c)
{
    if (!c || c->max == 0)
        return true;
    /* The reservations before this one are counted by the value fetched; a segment counted in
     * open before its reservation is released is counted twice for a moment (too strict, never
     * too loose). */
    uint32_t before = atomic_fetch_add_explicit(&c->reserved, 1, memory_order_acq_rel);
    if (atomic_load_explicit(&c->open, memory_order_acquire) + before + 1 > c->max) {
        atomic_fetch_sub_explicit(&c->reserved, 1, memory_order_acq_rel);
        return false;
    }
    return true;
}

void segment_cache_unreserve(struct segment_cache *c)
{
    if (c && c->max > 0)
        atomic_fetch_sub_explicit(&c->reserved, 1, memory_order_acq_rel);
}
