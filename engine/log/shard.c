/*
 * shard.c — the group-commit loop (see shard.h).
 *
 * One round:
 *   1. take every request queued so far (plus those deferred by the last round);
 *   2. run CALL requests; for each APPEND in arrival order: make room in the partition's active
 *      segment (rolling if needed — a roll waits for the next round if this round already wrote
 *      to that segment), run the producer rules, assign offsets, stamp the base offset into the
 *      batch, and note its transactional side (an ABORT marker stages its .txnindex entry);
 *   3. queue one write per touched segment (its batches as one iovec list, split only past
 *      IOV_MAX), one per staged .txnindex entry and, under sync=always or for markers, one
 *      fdatasync per touched segment ordered after its write;
 *   4. submit once and reap everything;
 *   5. on success note the batches in the segments (indexes), commit the .txnindex entries,
 *      publish the new high watermarks (release) and release every waiter; on any failure
 *      (placement's transactional bookkeeping, a write, an fdatasync) set the engine's sticky
 *      write error, freeze the round's partitions (PA5), drop the staged entries, zero the
 *      round's bytes and fail the round's requests without publishing anything.
 * Steps 1, 2, 3-4 and 5 are the stages round_admit, round_place, round_io and round_publish
 * (invariants SH1-SH4 below). So readers never see bytes that are not acknowledged, before or
 * after a reopen, and one fdatasync serves every batch of every producer that landed in that
 * file during the round.
 *
 * Who runs a round (issue 14 item 4: a lone producer without thread hops). Normally the shard
 * thread. But when an APPEND arrives at an idle shard — no round running, nothing queued, not
 * stopping — the submitter runs that one-request round on its own thread (shard_submit always;
 * shard_submit_async when the request says may_run_inline), so a lone caller pays no wake-up of
 * the shard thread and no wake-up back: with io_uring's inline rounds (io.h, IO_UNSYNCED_INLINE)
 * an rt_append under sync=none is one pwritev on the caller's thread. Appends that arrive while
 * it runs queue as usual and the shard thread takes them after it (group commit is unchanged:
 * whoever runs a round, the next one holds everything queued meanwhile). Not under
 * sync=interval, whose timer and byte trigger belong to the shard thread.
 *   SH5. At most one thread runs rounds of a shard at a time: the shard thread from taking a
 *        list until it re-locks after the round and its timed work (thread_busy), an inline
 *        submitter from the idle check until it re-locks after its round (inline_running); the
 *        round state (partitions' writer state, iov, cqes, the ring) is handed between them
 *        under s->lock. An inline round holds exactly one APPEND and starts only with the queue
 *        empty, so arrival order per partition is kept; what it defers goes to the queue's
 *        head for the shard thread. No inline round starts while the shard thread waits for
 *        one to end (it then has queued work or a due timer), so it is never starved.
 */
#include "shard.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "meta.h"
#include "partition.h"
#include "segment_cache.h"
#include "segment_pool.h"

#define SHARD_IOV_MAX 1024 /* IOV_MAX on Linux */

int shard_init(struct shard *s, uint32_t id, const struct shard_env *env)
{
    memset(s, 0, sizeof(*s));
    s->id = id;
    s->env = *env;
    pthread_mutex_init(&s->lock, NULL);
    /* The shard's timed waits are on CLOCK_MONOTONIC (wall-clock jumps must not stall or
     * spin it): the condition variable must use the same clock. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->has_work, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&s->has_room, NULL);
    s->iov_capacity = env->request_queue_depth * 2 + 16;
    s->iov = calloc(s->iov_capacity, sizeof(*s->iov));
    s->cqes = calloc(env->io.queue_depth, sizeof(*s->cqes));
    if (!s->iov || !s->cqes)
        return -ENOMEM;
    int rc = io_ring_open(&env->io, &s->ring);
    if (rc)
        return error_set(rc, "shard %u: cannot set up the io backend: %s", id, strerror(-rc));
    return 0;
}

const char *shard_backend_name(const struct shard *s)
{
    return s->ring ? io_ring_backend_name(s->ring) : "none";
}

int shard_add_partition(struct shard *s, struct partition *p)
{
    if (s->partition_count == s->partition_capacity) {
        uint32_t cap = s->partition_capacity ? s->partition_capacity * 2 : 16;
        struct partition **a = realloc(s->partitions, (size_t)cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        s->partitions = a;
        s->partition_capacity = cap;
    }
    s->partitions[s->partition_count++] = p;
    p->shard = s;
    return 0;
}

/* SH8: a waiter of a request without on_done (shard_submit, shard_wait_many) sleeps on the
 * request's own `done` word (a futex), and the round that completes the request wakes that
 * waiter alone, at once: no broadcast to every waiter of the shard after the round's timed
 * work, so a waiter whose request is still queued for the next round is not woken for this
 * one. REQ_SLEEPING tells the completer a waiter is (about to be) asleep: only then a
 * FUTEX_WAKE. The wake may reach the word after the waiter saw REQ_DONE and freed the request:
 * a FUTEX_WAKE never reads or writes the word, so that costs at most a spurious wake-up of
 * whoever waits at that address, which every futex user tolerates. */
enum { REQ_PENDING = 0, REQ_DONE = 1, REQ_SLEEPING = 2 };

static void req_mark_done(struct shard_request *r)
{
    if (atomic_exchange_explicit(&r->done, REQ_DONE, memory_order_acq_rel) == REQ_SLEEPING)
        syscall(SYS_futex, (uint32_t *)&r->done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void req_wait(struct shard_request *r)
{
    uint32_t v = atomic_load_explicit(&r->done, memory_order_acquire);
    while (v != REQ_DONE) {
        if (v == REQ_PENDING &&
            !atomic_compare_exchange_weak_explicit(&r->done, &v, REQ_SLEEPING, memory_order_acquire,
                                                   memory_order_acquire))
            continue; /* v reloaded: done meanwhile, or a spurious CAS failure */
        /* Returns at once if the word is no longer REQ_SLEEPING (EAGAIN), or on a signal. */
        syscall(SYS_futex, (uint32_t *)&r->done, FUTEX_WAIT_PRIVATE, REQ_SLEEPING, NULL, NULL, 0);
        v = atomic_load_explicit(&r->done, memory_order_acquire);
    }
}

/* Publishes a request's outcome: after this the caller may free it. */
static void complete(struct shard_request *r, int result)
{
    r->result = result;
    void (*on_done)(struct shard_request *) = r->on_done;
    if (on_done) {
        on_done(r);
        return;
    }
    req_mark_done(r);
}

static int sticky_error(struct shard *s)
{
    return atomic_load_explicit(s->env.write_error, memory_order_acquire);
}

static void set_sticky(struct shard *s, int rc)
{
    int expected = 0;
    atomic_compare_exchange_strong(s->env.write_error, &expected, rc);
}

/* SH9: an append of a commit's decision (its last batches, its PrepareCommit), whose round
 * must fdatasync. */
static bool is_group_append(const struct shard_request *r)
{
    return r->kind == SHARD_REQ_APPEND && !r->lazy_sync && r->decision;
}

#define GROUP_WAIT_NS_MAX 400000u /* SH9: about one fdatasync of a cloud disk */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tells the engine's append watch (if any) that watermarks moved: one call per round. */
static void shard_notify_watch(struct shard *s)
{
    struct publish_watch *w = s->env.watch;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    if (w->fn)
        w->fn(w->ctx);
    pthread_mutex_unlock(&w->lock);
}

/* Runs queued ops to completion; returns 0 or the first error seen. */
static int run_io(struct shard *s, const char **what)
{
    int first = 0;
    int rc = io_submit(s->ring);
    if (rc) {
        first = rc;
        *what = "submit";
    }
    while (io_pending(s->ring) > 0) {
        unsigned want = io_pending(s->ring);
        if (want > s->env.io.queue_depth)
            want = s->env.io.queue_depth;
        int n = io_reap(s->ring, s->cqes, s->env.io.queue_depth, want);
        if (n < 0) {
            if (n == -EINTR)
                continue;
            if (!first) {
                first = n;
                *what = "reap";
            }
            break;
        }
        for (int i = 0; i < n; i++) {
            if (s->cqes[i].op == IO_OP_FDATASYNC && s->cqes[i].result >= 0)
                atomic_fetch_add_explicit(&s->env.counters->fdatasyncs, 1, memory_order_relaxed);
            if (s->cqes[i].result < 0 && !first) {
                first = (int)s->cqes[i].result;
                *what = s->cqes[i].op == IO_OP_WRITE ? "write" : "fdatasync";
                s->io_failed_tag = s->cqes[i].user_data;
            }
        }
    }
    return first;
}

/* Under sync=interval: fdatasync every partition written since the last sync. */
static int sync_dirty(struct shard *s, int64_t now_ms)
{
    s->last_sync_ms = now_ms;
    s->bytes_since_sync = 0;
    bool any = false;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        struct partition *p = s->partitions[i];
        if (p->unsynced) {
            p->unsynced = false;
            if (p->active->sealed)
                continue; /* the seal synced it (a roll that failed after sealing) */
            int rc = io_queue_fdatasync(s->ring, p->active->fd, i);
            if (rc == -EBUSY) {
                const char *what = "";
                rc = run_io(s, &what);
                if (rc)
                    return rc;
                rc = io_queue_fdatasync(s->ring, p->active->fd, i);
            }
            if (rc)
                return rc;
            any = true;
        }
    }
    if (!any)
        return 0;
    const char *what = "";
    return run_io(s, &what);
}

int shard_sync_unsynced(struct shard *s)
{
    int rc = sync_dirty(s, fs_monotonic_ms());
    if (rc)
        set_sticky(s, rc); /* the bytes it cleared `unsynced` for may be lost: never retried */
    return rc;
}

static int roll_aged(struct shard *s, struct partition *p);

int shard_enforce_retention(struct shard *s)
{
    int64_t wall_ms = fs_now_ms();
    int first = 0;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        struct partition *p = s->partitions[i];
        int n = partition_enforce_retention(p, wall_ms);
        if (n > 0)
            atomic_fetch_add_explicit(&s->env.counters->segments_deleted, (uint64_t)n,
                                      memory_order_relaxed);
        else if (n < 0 && !first)
            first = n;
        (void)partition_checkpoint_tail(p, false); /* PA9; a failure costs a longer scan */
        /* log.c's hook: a compacted partition due a clean goes to the cleaner thread (cleaner.c
         * CLB1: the clean runs off this thread; an offer dropped is made again). */
        if (s->env.housekeep && s->env.housekeep(s->env.housekeep_ctx, p, wall_ms) &&
            roll_aged(s, p) == 0)
            (void)s->env.housekeep(s->env.housekeep_ctx, p, wall_ms); /* the clean it allows */
        uint32_t expired =
            producer_table_expire(&p->producers, wall_ms, s->env.producer_id_expiration_ms);
        if (expired)
            atomic_fetch_add_explicit(&s->env.counters->producers_expired, expired,
                                      memory_order_relaxed);
    }
    return first;
}

/* The shard's periodic housekeeping. A failure (a segment that cannot be deleted, a frozen
 * partition) is retried at the next period; partition_enforce_retention set the detail. */
static void sleep_idle(struct shard *s, const struct partition *keep);

static void run_retention(struct shard *s, int64_t now_ms)
{
    s->last_retention_ms = now_ms;
    (void)shard_enforce_retention(s);
    sleep_idle(s, NULL); /* SH12 */
}

/* ---- SH10: faults scoped to a partition, and their recovery in place (issue 21 F3) ----
 *
 *   SH10. A failed write, fdatasync or roll freezes the partitions it concerns (PA5), not the
 *         engine, and each of them is recovered in place (partition.c PA12) once the disk takes
 *         writes again; the other partitions never notice. The engine's write side fails as
 *         before (sticky, until a reopen) only where an in-place recovery could not be exact:
 *         a failed fdatasync of a file holding published bytes that were not yet synced (a
 *         lazy marker, SH6, or sync=interval data: Linux may drop the pages of a failed
 *         fdatasync, so those bytes may be gone although readers saw them; also the fdatasync
 *         that makes a lazy marker durable before a roll), sync_dirty's failures, and a
 *         recovery attempt whose fdatasync failed while the partition held such bytes (a
 *         roll syncs them before anything else, so only that fdatasync counts there:
 *         partition.c PA17).
 *         Recovery (shard_heal, on the thread that runs rounds, between rounds or at the
 *         placement of an append to the frozen partition, never before heal_at_ms): overwrite
 *         with zeros everything past the durable end that a failed round may have written,
 *         plus at least SHARD_HEAL_PROBE_BYTES (so the attempt itself tells whether the disk
 *         takes writes again), fdatasync the file, then partition_recover. Only fdatasyncs
 *         made after the failure are trusted: the acknowledged bytes were synced before it
 *         (their round published only after its fdatasync), the erased tail is synced by the
 *         attempt, and a failed attempt changes nothing but the wait, which doubles up to
 *         SHARD_HEAL_MS_MAX (also across a recovery followed soon by a new fault, so a disk
 *         that is still full costs at most one attempt a second per partition).
 *         A fault is counted (partition_faults, partitions_failed) and told (env.on_fault)
 *         when it happens, with the file, the operation and the error; a recovery too.
 *   SH11. Transactions and the internal topics heal like any data (issue 21 F3 part 3): a round
 *         that carried a marker, a transactional or coordinator batch, or touched
 *         __consumer_offsets / __transaction_state, fails its requests and freezes its
 *         partitions only. What placement updated before the failed io — the producer table,
 *         a marker's closing of an open transaction, the open-transaction list (the LSO), a
 *         staged .txnindex entry — is never published (SH4), and the recovery reloads it from
 *         the log (PA12), as an open would. Until then nobody decides from it: the producer
 *         state of a frozen partition is not read (log.c producer_state_call answers
 *         RT_E_IO_FAILED). What sits above the partitions never adopted what the failed round
 *         carried (coordinator.c CO1, group.c GO1), or retries it: a marker or coordinator
 *         record that meets a frozen partition fails alone, and the coordinator keeps the
 *         transaction Prepare* and completes it once the partition takes writes (CO15).
 */

#define SHARD_HEAL_PROBE_BYTES 65536u
#define FAULT_DETAIL_BYTES     (SEGMENT_PATH_BYTES + 512) /* a path and the words around it */

static void tell_fault(struct shard *s, const struct partition *p, int error, bool recovered,
                       bool engine_wide, uint32_t attempts, const char *detail)
{
    if (!s->env.on_fault)
        return;
    struct rt_partition_fault f = {.topic = p->topic,
                                   .partition = p->id,
                                   .error = error,
                                   .recovered = recovered,
                                   .engine_wide = engine_wide,
                                   .attempts = attempts,
                                   .detail = detail};
    s->env.on_fault(s->env.on_fault_ctx, &f);
}

static uint32_t heal_ms_min(const struct shard *s)
{
    return s->env.heal_ms_min > 0 ? (uint32_t)s->env.heal_ms_min : SHARD_HEAL_MS_MIN;
}

static uint32_t heal_ms_max(const struct shard *s)
{
    return heal_ms_min(s) > SHARD_HEAL_MS_MAX ? heal_ms_min(s) : SHARD_HEAL_MS_MAX;
}

/* p's write side failed with rc: freeze it (PA5), and the engine's write side too when
 * engine_wide. end_bytes: how far into the active segment the failure may have written. */
static void partition_fail(struct shard *s, struct partition *p, int rc, bool engine_wide,
                           uint64_t end_bytes, const char *detail)
{
    assert(rc < 0);
    if (engine_wide)
        set_sticky(s, rc);
    if (end_bytes > p->fault_end_bytes)
        p->fault_end_bytes = end_bytes;
    if (p->frozen) {
        if (engine_wide)
            tell_fault(s, p, rc, false, true, 0, detail);
        return;
    }
    partition_freeze(p);
    atomic_store_explicit(&p->fault_error, rc, memory_order_release);
    int64_t now = fs_monotonic_ms();
    /* A fault soon after a recovery doubles the last wait (the disk may still be full). */
    uint32_t most = heal_ms_max(s);
    if (p->heal_backoff_ms == 0 || now - p->heal_at_ms > 4 * (int64_t)most)
        p->heal_backoff_ms = heal_ms_min(s);
    else if (p->heal_backoff_ms < most)
        p->heal_backoff_ms = p->heal_backoff_ms * 2 < most ? p->heal_backoff_ms * 2 : most;
    p->heal_at_ms = s->env.heal_ms_min < 0 ? INT64_MAX : now + p->heal_backoff_ms;
    p->heal_attempts = 0;
    s->partitions_frozen++;
    atomic_fetch_add_explicit(&s->env.counters->partition_faults, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.counters->partitions_failed, 1, memory_order_relaxed);
    tell_fault(s, p, rc, false, engine_wide, 0, detail);
}

/* cleaner.c CLN10: the housekeeping hook asked for a roll of p's active segment (a compacted
 * partition whose active segment aged past max.compaction.lag.ms or segment.ms without an
 * append). Between rounds, as log_roll's; a failure is an append's failed roll (PA5, SH10):
 * the partition freezes and its recovery finishes the roll, or (out of descriptors) nothing
 * changed and the next pass retries. Returns 0 when it rolled. */
static int roll_aged(struct shard *s, struct partition *p)
{
    struct segment *was = p->active;
    if (p->frozen || p->round_touched || !was || was->sealed || was->size_bytes == 0)
        return -EAGAIN;
    if (p->unsynced) { /* SH6: lazy bytes durable through the ring before the seal */
        int rc = shard_sync_unsynced(s);
        if (rc)
            return rc;
    }
    uint64_t snapshots_before = p->snapshots_written;
    int rc = partition_roll_now(p);
    if (p->active != was)
        atomic_fetch_add_explicit(&s->env.counters->segments_rolled, 1, memory_order_relaxed);
    if (p->snapshots_written != snapshots_before)
        atomic_fetch_add_explicit(&s->env.counters->snapshots_written,
                                  p->snapshots_written - snapshots_before, memory_order_relaxed);
    if (rc < 0 && rc != -EMFILE && rc != -ENFILE) {
        char detail[ERROR_DETAIL_BYTES + 64];
        snprintf(detail, sizeof(detail), "%s", rt_error_detail());
        partition_fail(s, p, rc, false, p->active->size_bytes, detail);
    }
    if (rc == 0) /* the watermarks name the new active segment, not the sealed one a clean may
                    swap for a shorter one of the same base (fetch.c's readable_end) */
        partition_publish(p);
    return rc;
}

/* ---- SH12: the budget of open segments (segment_cache.h, partition.c PA15) ----
 *
 *   SH12. While more segments hold descriptors than rt_options.open_segments_max, the thread
 *         that runs the shard's rounds makes its least recently written idle partitions
 *         dormant (partition_sleep), oldest write first, until the engine-wide count is back at
 *         the low-water mark (OS2) or it has none left to close: at every housekeeping period,
 *         and at placement before it wakes a dormant partition (so a run of first appends to
 *         many partitions never holds more than the budget and one batch of wakes). It only
 *         ever closes its own partitions, between rounds or at placement where a partition the
 *         round touched is skipped (PA15), so no other thread's writer state is touched. A
 *         failed sleep freezes the partition as a failed roll does (PA5, recovered by SH10).
 *         A partition holding published bytes not yet synced is a candidate too: they are
 *         fdatasynced through the ring before its sleep (segment_cache.h OS5).
 */

static int by_last_write(const void *a, const void *b)
{
    const struct partition *x = *(struct partition *const *)a;
    const struct partition *y = *(struct partition *const *)b;
    return x->last_write_seq < y->last_write_seq ? -1 : x->last_write_seq > y->last_write_seq;
}

static void sleep_idle(struct shard *s, const struct partition *keep)
{
    if (s->env.read_only || segment_cache_excess(s->env.cache) == 0 || sticky_error(s))
        return;
    struct partition **c = malloc((s->partition_count ? s->partition_count : 1) * sizeof(*c));
    if (!c)
        return; /* OS2: a soft bound; the next period tries again */
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->partition_count; i++) {
        struct partition *p = s->partitions[i];
        if (p != keep && p->active && !p->active->sealed && !p->frozen && !p->round_touched &&
            !p->rolling)
            c[n++] = p;
    }
    qsort(c, n, sizeof(*c), by_last_write);
    for (uint32_t i = 0; i < n && segment_cache_above_low(s->env.cache) && !sticky_error(s); i++) {
        struct partition *p = c[i];
        if (p->unsynced) {
            /* OS5: its published bytes durable through the ring first, as SH6 does before a
             * roll (the ring is empty here: between rounds or at placement, SH3). A failure
             * may have dropped them: the write side fails, as sync_dirty's does (SH10). */
            const char *what = "fdatasync";
            int src = io_queue_fdatasync(s->ring, p->active->fd, 0);
            if (src == 0)
                src = run_io(s, &what);
            if (src) {
                char detail[FAULT_DETAIL_BYTES];
                snprintf(detail, sizeof(detail), "%s of %s to close it failed: %s", what,
                         p->active->log_path, rt_strerror(src));
                partition_fail(s, p, src, true, p->active->size_bytes, detail);
                break;
            }
            p->unsynced = false;
        }
        int rc = partition_sleep(p);
        if (rc) {
            char detail[FAULT_DETAIL_BYTES];
            snprintf(detail, sizeof(detail), "sealing %s to close it failed: %s",
                     p->active->log_path, rt_strerror(rc));
            partition_fail(s, p, rc, false, p->active->size_bytes, detail);
            continue;
        }
        if (p->active->sealed)
            atomic_fetch_add_explicit(&s->env.cache->sleeps, 1, memory_order_relaxed);
    }
    free(c);
}

/* Writes zeros over [from, to) of fd and fdatasyncs it, through the ring (the fault injector
 * sees it). The ring is empty before and after. */
static int erase_and_sync(struct shard *s, int fd, uint64_t from, uint64_t to, const char **failed)
{
    static const uint8_t zeros[64 * 1024];
    assert(io_pending(s->ring) == 0);
    const char *what = "";
    *failed = "";
    int rc = 0;
    while (from < to && rc == 0) {
        uint64_t len = to - from < sizeof(zeros) ? to - from : sizeof(zeros);
        struct iovec *v = &s->iov[0];
        *v = (struct iovec){.iov_base = (void *)zeros, .iov_len = (size_t)len};
        rc = io_queue_write(s->ring, fd, v, 1, from, 0);
        if (rc == 0)
            rc = run_io(s, &what); /* one at a time: v is reused */
        from += len;
    }
    if (rc == 0)
        rc = io_queue_fdatasync(s->ring, fd, 0);
    if (rc == 0)
        rc = run_io(s, &what);
    else if (io_pending(s->ring) > 0)
        (void)run_io(s, &what);
    assert(io_pending(s->ring) == 0);
    if (rc)
        *failed = what;
    return rc;
}

/* SH10: one recovery attempt of frozen p if it is due. True when p is writable again. */
static bool shard_heal(struct shard *s, struct partition *p, int64_t now_ms)
{
    assert(p->frozen);
    if (sticky_error(s) || p->round_touched || p->round_deferred || now_ms < p->heal_at_ms)
        return false;
    p->heal_attempts++;
    struct segment *a = p->active;
    int rc = 0;
    if (!a->sealed) {
        /* Past the durable end: what failed rounds may have left, and a probe. */
        uint64_t from = a->size_bytes;
        uint64_t to = p->fault_end_bytes > from ? p->fault_end_bytes : from;
        uint64_t cap = a->cfg.capacity_bytes < a->map_bytes ? a->cfg.capacity_bytes : a->map_bytes;
        uint64_t probe = from + SHARD_HEAL_PROBE_BYTES;
        if (probe > cap)
            probe = cap > from ? cap : from;
        if (to < probe)
            to = probe;
        const char *failed = "";
        rc = erase_and_sync(s, a->fd, from, to, &failed);
        if (rc && p->unsynced && strcmp(failed, "write") != 0) {
            /* SH10: the attempt's fdatasync also covered published bytes not yet synced
             * (sync=interval or none), which its failure may have dropped: never trusted. */
            char detail[FAULT_DETAIL_BYTES];
            snprintf(detail, sizeof(detail),
                     "%s of %s while recovering it failed: %s (published bytes not yet synced "
                     "may be lost)",
                     failed, a->log_path, rt_strerror(rc));
            partition_fail(s, p, rc, true, a->size_bytes, detail);
            return false;
        }
    }
    if (rc == 0)
        rc = partition_recover(p);
    if (rc) {
        uint32_t b = p->heal_backoff_ms * 2;
        p->heal_backoff_ms = b > heal_ms_max(s) ? heal_ms_max(s) : b;
        p->heal_at_ms = now_ms + p->heal_backoff_ms;
        return false;
    }
    int was = atomic_exchange_explicit(&p->fault_error, 0, memory_order_acq_rel);
    p->fault_end_bytes = 0;
    p->heal_at_ms = now_ms; /* when it recovered: a fault soon after keeps the wait */
    assert(s->partitions_frozen > 0);
    s->partitions_frozen--;
    atomic_fetch_sub_explicit(&s->env.counters->partitions_failed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.counters->partition_recoveries, 1, memory_order_relaxed);
    char detail[FAULT_DETAIL_BYTES];
    snprintf(detail, sizeof(detail),
             "%s: recovered in place after %u attempt(s): truncated to offset %" PRId64
             ", producer state reloaded",
             p->dir, p->heal_attempts, p->next_offset);
    tell_fault(s, p, was, true, false, p->heal_attempts, detail);
    shard_notify_watch(s); /* the same watermarks, but waiters may look again */
    return true;
}

/* SH10, between rounds: every frozen partition whose attempt is due. */
static void heal_due(struct shard *s)
{
    int64_t now = fs_monotonic_ms();
    for (uint32_t i = 0; i < s->partition_count && s->partitions_frozen > 0; i++) {
        struct partition *p = s->partitions[i];
        if (p->frozen && atomic_load_explicit(&p->fault_error, memory_order_relaxed) != 0)
            (void)shard_heal(s, p, now);
    }
}

/* ---- one round, in four stages: admission, placement, io, publish ----
 *
 * A round's state lives in `struct round` on the shard thread's stack. Each stage asserts what
 * it takes and what it leaves:
 *   SH1. After admission no CALL request is left and every request was completed or passed on
 *        exactly once (CALLs run before any append of the round moved a partition's state).
 *   SH2. After placement every included request has its offsets assigned and stamped, belongs
 *        to a touched partition, and the round fits the ring (ops <= queue depth) and the iovec
 *        array; a touched partition's round_bytes is the sum of its included batches.
 *   SH3. The io stage leaves the ring empty whatever happened.
 *   SH4. Publish runs only when placement (producer rules, the open-transaction list, staging
 *        an ABORT marker's .txnindex entry) and every write and fdatasync of the round (the
 *        .txnindex entries included) succeeded, and publish itself cannot fail; otherwise no
 * touched partition is published again (PA5), the round's bytes are overwritten with zeros (so a
 * reopen does not find them either) and every included request gets RT_E_IO_FAILED. An append
 * reported failed is never visible.
 *   SH6. A partition whose batches in a round are all lazy markers (a transaction decided by a
 *        durable coordinator record, coordinator.c CO9) is written but not fdatasynced, and
 *        published once written: it stays `unsynced` until the next round that syncs its file
 *        (which covers it: same file, earlier bytes), a seal, or shard_sync_unsynced. A lost
 *        lazy marker is rewritten at open from the coordinator's record (COR7).
 *   SH7. Lazy first (sync=always, shard thread): of what the shard thread takes, the lazy
 *        appends (SH6: markers and CompleteCommit records of decided transactions) run as a
 *        round of their own ahead of the rest, and their waiters are released when it ends, so
 *        a commit waiting for its markers to be visible no longer waits for the next round's
 *        fdatasyncs of other producers' data (issue 14 item 6; the lazy round is a pwritev, a
 *        few µs). A lazy append passes an earlier request only of another producer or another
 *        partition (lazy_may_pass): a lazy batch is queued only after the decision it carries
 *        is durable, so no request queued before it can be one it depends on, and the order of
 *        one producer's batches in a partition is kept; CALLs still run before any append.
 *   SH8. One wake per waiter: a synchronous waiter (shard_submit, shard_wait_many) sleeps on
 *        its own request's futex word and is woken by the round that completes it, on every
 *        path that completes a request (success, error, close); never by a broadcast to every
 *        waiter of the shard (the protocol is at req_mark_done).
 *   SH9. Decisions wait for their group (sync=always, shard thread). A one-round commit hands
 *        its last batches and its PrepareCommit over together (producer.c PR6), marked
 *        `decision`. Concurrent commits share files — every PrepareCommit lands in one of the
 *        few __transaction_state partitions, and producers share data partitions — so they
 *        could share those files' fdatasyncs, if they were in the same round. In a closed loop
 *        they are not: the producers of one round come back (markers, next transaction) while
 *        the next round already runs without them. So when a round that fdatasynced decision
 *        appends ends, those plus the decision appends queued meanwhile are the group
 *        (group_note), and a next round made only of decision appends waits — at most half the
 *        last round's duration, never more than GROUP_WAIT_NS_MAX — until that many are queued;
 *        only if some of them share a file (more appends than partitions), since appends to
 *        files of their own share nothing and waiting would only delay them; never for more
 *        than request_queue_depth (more could not be queued). A plain append or a CALL queued
 *        ends the wait; a lazy one runs in a round of its own ahead of the held decisions
 *        (SH7), which then wait out the same deadline; nothing waits while
 *        closing; no inline round (SH5) splits a group that is due. A lone producer is never
 *        delayed: a round of one is no group. Plain appends form no groups: waiting for them
 *        was measured to cost more than it shared (W2 p16, -15 %).
 *
 * Concurrent rounds (issue 27 item 2; docs/architecture.md "Concurrent rounds" has the whole
 * argument). Rounds of different shards run at the same time, on files of their own (a
 * partition belongs to one shard), and log.c runs two shards per core (LG14) so that one shard's
 * fdatasync overlaps other shards' writes. Within one shard a round still runs alone (SH5);
 * overlapping a shard's own rounds was measured slower here and is not built. The rules below
 * are what any overlap must keep; today they hold as stated.
 *   SH13. Durable, then visible, then told, in round order. A round's batches are published
 *         (high watermark, indexes, .txnindex) only after every write and fdatasync of the
 *         round succeeded, and its requests are completed only after that (run_round: SH4 then
 *         complete); a round starts only after the shard's previous round published or failed,
 *         so the rounds of a shard become durable, visible and acknowledged in their order. A
 *         round that overlapped an earlier one of its shard would have to hold its publish and
 *         its acks until every earlier round is durable: a later fdatasync of the same file
 *         covers the earlier round's bytes there, but not the earlier round's bytes in other
 *         files, and the high watermark is one offset, so publishing a later round first would
 *         expose the earlier one's bytes too.
 *   SH14. What may be written while an fdatasync is in flight: only bytes past everything any
 *         earlier round wrote to that file (appends; the pre-writer keeps off them, SG1), never
 *         over bytes not yet durable. What overwrites — a failed round's erase (round_erase),
 *         a recovery's erase (shard_heal) — runs on the thread that runs the shard's rounds
 *         with its ring empty (SH3): no fdatasync of that shard is in flight meanwhile. A
 *         failed round fails every round of its shard that follows it on the same files (under
 *         overlap: every round already written behind it) before anything is erased.
 *   SH15. What a power loss leaves: in each file, the bytes of its shard's durable rounds
 *         intact, then anything of the rounds in flight (nothing, part, all, torn sectors).
 *         An open's recovery walks the newest segment from its start (or a stored tail) and
 *         cuts at the first batch that does not validate, never resuming after it (segment.c
 *         recover_log), so a round whose bytes survived behind a torn earlier one is cut with
 *         it: no gap is ever exposed in a partition, and nothing acknowledged is lost (SH13).
 *         Across files (partitions, shards) nothing orders one round after another except what
 *         the protocols above the shards wait for: a transaction's markers are written only
 *         after its decision round was acknowledged (SH7), so a lost decision never leaves a
 *         surviving marker. test_power_rounds holds a shard's fdatasync in flight while the
 *         other shards' rounds go on, then loses the power.
 */

#define ROUND_PARTITIONS_MAX 64

struct round {
    struct shard_request *included, **included_tail;
    struct shard_request *deferred, **deferred_tail;
    struct partition *touched[ROUND_PARTITIONS_MAX];
    uint32_t touched_count;
    uint32_t included_count;
    uint32_t ops;      /* ring operations the io stage will queue */
    uint32_t iov_used; /* iovecs the io stage will use */
    int64_t now_ms;
    bool sync_always;
    int failed;         /* placement failed the whole round, or 0 */
    bool failed_engine; /* ... in a way that fails the engine's write side (SH10) */
};

/* SH10: may a failed round be recovered partition by partition? */
static bool round_failure_engine_wide(const struct round *rd, const char *what)
{
    if (rd->failed_engine)
        return true;
    /* SH11: markers, transactional and coordinator batches and the internal topics heal like
     * any data; only published bytes that a failed fdatasync may have dropped cannot. */
    for (uint32_t t = 0; t < rd->touched_count; t++) {
        const struct partition *p = rd->touched[t];
        if (p->unsynced && strcmp(what, "write") != 0)
            return true;
    }
    return false;
}

static void round_defer(struct round *rd, struct shard_request *r)
{
    r->partition->round_deferred = true;
    *rd->deferred_tail = r;
    rd->deferred_tail = &r->next;
}

/* Admission: runs CALL requests (before any append of this round has advanced a partition's
 * tentative state: a call such as retention, roll or snapshot may publish watermarks, which must
 * only ever describe acknowledged bytes) and returns the appends, in arrival order. */
static struct shard_request *round_admit(struct shard *s, struct shard_request *list)
{
    assert(list != NULL);
    struct shard_request *appends = NULL, **appends_tail = &appends;
    for (struct shard_request *r = list, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        assert(r->kind == SHARD_REQ_CALL || r->kind == SHARD_REQ_APPEND);
        if (r->kind == SHARD_REQ_CALL) {
            assert(r->fn != NULL);
            complete(r, r->fn(s, r->arg));
            continue;
        }
        assert(r->partition != NULL && r->partition->shard == s);
        *appends_tail = r;
        appends_tail = &r->next;
    }
    for (const struct shard_request *r = appends; r; r = r->next)
        assert(r->kind == SHARD_REQ_APPEND); /* SH1 */
    return appends;
}

/* The producer side of one append: runs the rules for its kind (marker, coordinator batch,
 * producer batch) against the state every earlier batch of this round already updated, and
 * updates that state. Returns 0 to place the batch, or 1 when r was completed (rejected, or a
 * duplicate answered with its original offsets). */
static int place_producer(struct shard *s, struct partition *p, struct shard_request *r)
{
    r->txn_started = false;
    r->txn_first_offset = -1;
    if (r->header.producer_id < 0)
        return 0;
    if (r->replica) {
        /* RL3: what an open's replay does with the batch (partition.c replay_batch): no rule
         * is checked, the leader checked them. */
        int urc;
        if (batch_is_control(&r->header)) {
            urc = producer_table_end_txn(&p->producers, &r->header, r->coordinator_epoch,
                                         &r->txn_first_offset);
        } else {
            const struct producer_entry *pe =
                producer_table_find(&p->producers, r->header.producer_id);
            r->txn_started =
                batch_is_transactional(&r->header) && !(pe && pe->current_txn_first_offset >= 0);
            urc = r->header.base_sequence < 0
                      ? producer_table_update_coordinator(&p->producers, &r->header)
                      : producer_table_update(&p->producers, &r->header);
        }
        if (urc) {
            r->rule = "the replica batch's producer could not be recorded";
            complete(r, urc);
            return 1;
        }
        return 0;
    }
    const char *rule = NULL;
    if (batch_is_control(&r->header)) {
        /* A transaction marker: epoch and coordinator-epoch fencing, then it ends the
         * producer's transaction in this partition. */
        int verdict =
            producer_table_check_marker(&p->producers, &r->header, r->coordinator_epoch, &rule);
        r->rule = rule;
        if (verdict < 0) {
            complete(r, verdict);
            return 1;
        }
        r->header.base_offset = p->next_offset;
        int urc = producer_table_end_txn(&p->producers, &r->header, r->coordinator_epoch,
                                         &r->txn_first_offset);
        if (urc) {
            complete(r, urc);
            return 1;
        }
        return 0;
    }
    int verdict;
    if (r->coordinator) {
        verdict = producer_table_check_coordinator(&p->producers, &r->header, &rule);
    } else {
        int64_t dup = -1;
        verdict = producer_table_check(&p->producers, &r->header, &dup, &rule);
        if (verdict == PRODUCER_DUPLICATE) {
            r->rule = rule;
            r->duplicate = true;
            r->base_offset = dup;
            atomic_fetch_add_explicit(&s->env.counters->duplicates, 1, memory_order_relaxed);
            complete(r, 0);
            return 1;
        }
    }
    r->rule = rule;
    if (verdict < 0) {
        complete(r, verdict);
        return 1;
    }
    r->header.base_offset = p->next_offset;
    const struct producer_entry *pe = producer_table_find(&p->producers, r->header.producer_id);
    r->txn_started =
        batch_is_transactional(&r->header) && !(pe && pe->current_txn_first_offset >= 0);
    int urc = r->coordinator ? producer_table_update_coordinator(&p->producers, &r->header)
                             : producer_table_update(&p->producers, &r->header);
    if (urc) {
        if (!r->coordinator)
            r->rule = "the partition's producer table is full of producers with open "
                      "transactions";
        complete(r, urc);
        return 1;
    }
    return 0;
}

/* Placement of one append: defer it (keeping the partition's order), fail it, or give it its
 * offsets and its place in the partition's part of the round. */
static void place_one(struct shard *s, struct round *rd, struct shard_request *r)
{
    struct partition *p = r->partition;
    assert(r->len >= BATCH_HEADER_BYTES);
    assert(r->batch != NULL);
    if (sticky_error(s)) {
        complete(r, RT_E_IO_FAILED);
        return;
    }
    if (p->frozen && !shard_heal(s, p, fs_monotonic_ms())) {
        /* SH10: refused until its recovery succeeds. A marker or a coordinator record too: the
         * coordinator keeps its transaction Prepare* and retries it (SH11, coordinator.c CO15). */
        complete(r, RT_E_IO_FAILED);
        return;
    }
    const uint32_t depth = s->env.io.queue_depth;
    bool new_partition = !p->round_touched;
    /* Ops this batch adds: a new partition's write and fdatasync; another write when its
     * batches pass a multiple of IOV_MAX; an ABORT marker's .txnindex entry (and its iovec). */
    uint32_t extra = r->header.producer_id >= 0 && batch_is_control(&r->header) &&
                     r->marker_type == CONTROL_ABORT;
    uint32_t split = !new_partition && p->round_batches % SHARD_IOV_MAX == 0;
    uint32_t need_ops = (new_partition ? 2 : 0) + split + extra;
    if (p->round_deferred || rd->iov_used + 1 + extra > s->iov_capacity ||
        rd->ops + need_ops > depth ||
        (new_partition && rd->touched_count == ROUND_PARTITIONS_MAX)) {
        round_defer(rd, r);
        return;
    }
    if (p->unsynced && !p->round_touched && rd->sync_always &&
        partition_roll_due(p, r->len, r->header.last_offset_delta, rd->now_ms)) {
        /* SH6: a lazy marker is made durable through the ring before its segment is sealed
         * (the seal syncs with a plain fdatasync, and the producer snapshot taken at the roll
         * describes the state after the marker). The ring is empty during placement (SH3). */
        const char *what = "";
        int src = io_queue_fdatasync(s->ring, p->active->fd, 0);
        if (src == 0)
            src = run_io(s, &what);
        if (src) {
            /* SH10: a published lazy marker may be lost: only a reopen rewrites it (COR7). */
            char detail[FAULT_DETAIL_BYTES];
            snprintf(detail, sizeof(detail), "%s of %s failed: %s", what, p->active->log_path,
                     rt_strerror(src));
            partition_fail(s, p, src, true, p->active->size_bytes, detail);
            complete(r, RT_E_IO_FAILED);
            return;
        }
        p->unsynced = false;
    }
    if (!p->round_touched && p->active->sealed) {
        /* PA11: a dormant partition's first append since a clean open; on failure (out of
         * descriptors, say) only this append fails and the partition is as it was. SH12: room
         * is made in the budget of open segments first. */
        sleep_idle(s, p);
        if (sticky_error(s)) { /* OS5: an unsynced partition's fdatasync failed (SH10) */
            complete(r, RT_E_IO_FAILED);
            return;
        }
        int wrc = partition_wake(p);
        if (wrc) {
            complete(r, wrc);
            return;
        }
    }
    if (p->internal_follower != r->replica && meta_topic_name_internal(p->topic)) {
        /* RL6: a followed internal partition takes only its leader's bytes, a led one only ours. */
        r->rule = r->replica ? "an internal partition this engine leads takes no replica batch "
                               "(rt_partition_resign first)"
                             : "an internal partition this engine follows takes only replica "
                               "batches (rt_partition_become_leader first)";
        complete(r, r->replica ? RT_E_INVALID_ARGUMENT : RT_E_NOT_COORDINATOR);
        return;
    }
    int64_t gap = 0; /* RL8: offsets a leader's cleaner removed before this batch */
    if (r->replica) {
        /* RL9: a user partition this engine leads takes no other node's bytes. Checked here, on
         * the shard thread, so a role change (rt_partition_become_leader, a shard call between
         * rounds) is either wholly before this append or wholly after it. */
        if (p->replica_led) {
            r->rule = "a partition this engine leads takes no replica batch "
                      "(rt_partition_resign first)";
            complete(r, RT_E_INVALID_ARGUMENT);
            return;
        }
        /* RL3, RL8: a leader's batch lands at or past the log end (this round's batches
         * included; past it only where the leader's cleaner removed offsets), and its epoch is
         * in the checkpoint before it is written. */
        if (r->header.base_offset < p->next_offset) {
            r->rule = "a replica batch must begin at or past the log end";
            complete(r, RT_E_INVALID_ARGUMENT);
            return;
        }
        gap = r->header.base_offset - p->next_offset;
        if (gap > (int64_t)INT32_MAX - r->header.last_offset_delta) {
            r->rule = "a replica batch more than 2^31 offsets past the log end";
            complete(r, RT_E_INVALID_ARGUMENT);
            return;
        }
        int erc = partition_note_replica_epoch(p, r->header.partition_leader_epoch,
                                               r->header.base_offset);
        if (erc) {
            r->rule = "the replica batch's leader epoch";
            complete(r, erc);
            return;
        }
    }
    p->last_write_seq = ++s->write_seq; /* SH12: LRU order */
    struct segment *was_active = p->active;
    uint32_t snapshots_before = p->snapshots_written;
    /* RL8: a gap counts as offsets the segment spans (PAR3: relative offsets are i32). */
    int rc =
        partition_make_room(p, r->len, (int32_t)(gap + r->header.last_offset_delta), rd->now_ms);
    if (p->active != was_active)
        atomic_fetch_add_explicit(&s->env.counters->segments_rolled, 1, memory_order_relaxed);
    if (p->snapshots_written != snapshots_before)
        atomic_fetch_add_explicit(&s->env.counters->snapshots_written,
                                  p->snapshots_written - snapshots_before, memory_order_relaxed);
    if (rc == 1) {
        round_defer(rd, r);
        return;
    }
    if (rc == -EMFILE || rc == -ENFILE) {
        /* Out of descriptors while rolling: nothing of this batch was written and the
         * partition is consistent (the old segment sealed, no new one left behind), so only
         * this append fails; the next one retries the roll (docs/limits.md). */
        complete(r, rc);
        return;
    }
    if (rc < 0) {
        /* A failed roll may leave the partition half-rolled: freeze it (PA5); its recovery
         * finishes the roll (PA12). An index reservation that failed changed nothing. */
        char detail[ERROR_DETAIL_BYTES + 64];
        snprintf(detail, sizeof(detail), "%s", rt_error_detail());
        /* SH10: only a roll's first fdatasync may have dropped published bytes not yet
         * synced; after it `unsynced` is cleared (partition.c PA17). SH11: an internal topic
         * heals as any other. */
        bool engine_wide = p->unsynced;
        partition_fail(s, p, rc, engine_wide, p->active->size_bytes, detail);
        if (p->round_touched) {
            /* Batches of this round are placed here already: the whole round fails. */
            rd->failed = rc;
            rd->failed_engine = engine_wide;
        }
        complete(r, RT_E_IO_FAILED);
        return;
    }
    if (r->header.producer_id >= 0 && batch_is_transactional(&r->header)) {
        /* Before the producer rules change anything: a batch that opens a transaction must
         * find room in the open list once it has passed them. */
        int trc = partition_reserve_txn(p);
        if (trc) {
            complete(r, trc);
            return;
        }
    }
    if (r->replica && (gap > 0 || r->replica_compacted)) {
        /* RL8: the gap (or the cleaned batch) is durable as allowed before it is written, so
         * an open, verify and the fetch path read this segment as one that may skip offsets. */
        assert(r->replica_gaps_end > r->header.base_offset);
        int grc = partition_allow_replica_gaps(p, r->replica_gaps_end);
        if (grc) {
            r->rule = "storing the cleaner checkpoint that allows the replica batch's gap";
            complete(r, grc);
            return;
        }
        assert(p->active->base_offset < p->cleaned_end);
        p->active->cfg.gaps_ok = true; /* CL1, as an open will find it */
    }
    if (place_producer(s, p, r))
        return;
    if (new_partition) {
        p->round_force_sync = false;
        p->round_lazy_only = true;
        p->round_touched = true;
        p->round_position = p->active->size_bytes;
        p->round_bytes = 0;
        p->round_batches = 0;
        rd->touched[rd->touched_count++] = p;
        rd->ops += 2; /* its write and (under sync=always, or for markers) its fdatasync */
    }
    if (r->force_sync)
        p->round_force_sync = true;
    if (!r->lazy_sync)
        p->round_lazy_only = false;
    r->txn_write.staged = false;
    if (r->header.producer_id >= 0) {
        int trc =
            partition_place_txn(p, &r->header, p->round_position + p->round_bytes, r->txn_started,
                                r->txn_first_offset, r->marker_type, &r->txn_write);
        if (trc) {
            /* The open list may have changed: the whole round fails and nothing is written;
             * the recovery reloads the open list from the log (SH11, PA12). */
            char detail[FAULT_DETAIL_BYTES];
            snprintf(detail, sizeof(detail), "%s: staging a transaction's bookkeeping: %s", p->dir,
                     rt_strerror(trc));
            partition_fail(s, p, trc, false, p->active->size_bytes, detail);
            rd->failed = trc;
            complete(r, RT_E_IO_FAILED);
            return;
        }
        if (r->txn_write.staged) {
            rd->ops++;
            rd->iov_used++;
        }
    }
    if (r->replica)
        p->next_offset = r->header.base_offset; /* RL8: past a gap */
    r->base_offset = p->next_offset;
    r->header.base_offset = p->next_offset;
    if (!r->replica) {
        batch_stamp_base_offset(r->batch, p->next_offset);
        if (p->leader_epoch >= 0) /* RL1: outside the CRC */
            be32_store(r->batch + BATCH_OFF_LEADER_EPOCH, (uint32_t)p->leader_epoch);
    }
    p->next_offset += (int64_t)r->header.last_offset_delta + 1;
    p->round_bytes += r->len;
    p->round_batches++;
    if (p->round_batches > 1 && (p->round_batches - 1) % SHARD_IOV_MAX == 0)
        rd->ops++;
    rd->iov_used++;
    rd->included_count++;
    *rd->included_tail = r;
    rd->included_tail = &r->next;
}

/* Placement: every append of the round, in arrival order. */
static void round_place(struct shard *s, struct round *rd, struct shard_request *appends)
{
    assert(rd->included == NULL && rd->touched_count == 0);
    for (struct shard_request *r = appends, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        place_one(s, rd, r);
    }
    /* SG1 (segment.c): the pre-writer keeps off what this round is about to write. */
    for (uint32_t t = 0; t < rd->touched_count; t++) {
        struct partition *p = rd->touched[t];
        segment_pool_claim(p->active, p->round_position + p->round_bytes);
        partition_prepare_next(p); /* PA7 */
    }
    /* SH2 */
    assert(rd->touched_count <= ROUND_PARTITIONS_MAX);
    assert(rd->ops <= s->env.io.queue_depth);
    assert(rd->iov_used <= s->iov_capacity);
#ifndef NDEBUG
    for (uint32_t t = 0; t < rd->touched_count; t++) {
        const struct partition *p = rd->touched[t];
        uint64_t bytes = 0;
        for (const struct shard_request *r = rd->included; r; r = r->next)
            if (r->partition == p) {
                assert(r->base_offset == r->header.base_offset);
                assert((int64_t)be64_load(r->batch + BATCH_OFF_BASE_OFFSET) == r->base_offset);
                bytes += r->len;
            }
        assert(p->round_touched);
        assert(bytes == p->round_bytes);
    }
#endif
}

/* Whether the io stage fdatasyncs p's file this round (SH6: not for lazy markers alone). */
static bool round_syncs(const struct round *rd, const struct partition *p)
{
    return (rd->sync_always && !p->round_lazy_only) || p->round_force_sync;
}

/* Io: one write per touched segment (its batches as one iovec list, split only past IOV_MAX)
 * and, under sync=always or for markers, one fdatasync ordered after it; submit once and reap
 * everything. Returns 0 or the first error (*what names the operation). */
static int round_io(struct shard *s, struct round *rd, const char **what)
{
    assert(rd->touched_count > 0);
    assert(io_pending(s->ring) == 0);
    int rc = 0;
    /* Lay out each partition's iovecs contiguously, in arrival order. */
    uint32_t at = 0;
    for (uint32_t t = 0; t < rd->touched_count && rc == 0; t++) {
        struct partition *p = rd->touched[t];
        uint32_t first = at;
        for (struct shard_request *r = rd->included; r; r = r->next)
            if (r->partition == p)
                s->iov[at++] = (struct iovec){.iov_base = r->batch, .iov_len = r->len};
        assert(at - first == p->round_batches);
        uint32_t batches_end = at;
        uint64_t off = p->round_position;
        for (uint32_t i = first; i < batches_end && rc == 0; i += SHARD_IOV_MAX) {
            uint32_t n = batches_end - i < SHARD_IOV_MAX ? batches_end - i : SHARD_IOV_MAX;
            uint64_t bytes = 0;
            for (uint32_t k = i; k < i + n; k++)
                bytes += s->iov[k].iov_len;
            rc = io_queue_write(s->ring, p->active->fd, s->iov + i, n, off, t);
            off += bytes;
        }
        /* ABORT markers' .txnindex entries, staged at placement (not synced: recovery rebuilds
         * the newest segment's index from its markers, and a seal syncs it). */
        for (struct shard_request *r = rd->included; r && rc == 0; r = r->next) {
            if (r->partition != p || !r->txn_write.staged || r->txn_write.fd < 0)
                continue;
            assert(at < s->iov_capacity);
            s->iov[at] = (struct iovec){.iov_base = r->txn_write.bytes,
                                        .iov_len = sizeof(r->txn_write.bytes)};
            rc = io_queue_write(s->ring, r->txn_write.fd, s->iov + at, 1, r->txn_write.file_offset,
                                t);
            at++;
        }
        if (rc == 0 && round_syncs(rd, p))
            rc = io_queue_fdatasync(s->ring, p->active->fd, t);
    }
    if (rc) {
        /* Drain what was queued so the ring is empty for the next round. */
        *what = "queue";
        const char *ignored = "";
        (void)run_io(s, &ignored);
    } else {
        rc = run_io(s, what);
    }
    assert(io_pending(s->ring) == 0); /* SH3 */
    return rc;
}

/* A failed round's bytes may have landed (a write that succeeded beside one that failed, a
 * write whose fdatasync failed, a torn write): overwrite every touched partition's part of the
 * round with zeros and sync it, so that recovery at the next open finds preallocated zeros
 * there and not batches whose appends were reported failed. Best effort: if the device refuses
 * even this, those bytes may reappear at the next open (docs/limits.md). */
static void round_erase(struct shard *s, struct round *rd)
{
    static const uint8_t zeros[64 * 1024];
    assert(io_pending(s->ring) == 0);
    const char *ignored = "";
    for (uint32_t t = 0; t < rd->touched_count; t++) {
        struct partition *p = rd->touched[t];
        uint64_t off = p->round_position, end = p->round_position + p->round_bytes;
        while (off < end) {
            uint64_t len = end - off < sizeof(zeros) ? end - off : sizeof(zeros);
            struct iovec *v = &s->iov[t % s->iov_capacity];
            *v = (struct iovec){.iov_base = (void *)zeros, .iov_len = (size_t)len};
            int rc = io_queue_write(s->ring, p->active->fd, v, 1, off, t);
            if (rc == -EBUSY) {
                (void)run_io(s, &ignored);
                continue;
            }
            if (rc)
                break;
            (void)run_io(s, &ignored); /* one at a time: v is reused */
            off += len;
        }
        if (io_queue_fdatasync(s->ring, p->active->fd, t) == 0)
            (void)run_io(s, &ignored);
    }
    assert(io_pending(s->ring) == 0);
}

/* Publish: note each batch in its segment (indexes), commit the staged .txnindex entries and
 * publish every touched partition's watermarks (release). Nothing here can fail: everything
 * fallible ran at placement or in the io stage (SH4). */
static void round_publish(struct shard *s, struct round *rd)
{
    assert(rd->touched_count > 0);
    assert(rd->included != NULL);
    uint64_t bytes = 0, batches = 0;
    for (struct shard_request *r = rd->included; r; r = r->next) {
        struct partition *p = r->partition;
        uint64_t position = p->active->size_bytes;
        assert(position >= p->round_position);
        assert(position + r->len <= p->round_position + p->round_bytes);
        segment_note_append(p->active, &r->header, position, r->len);
        p->unsynced = !round_syncs(rd, p);
        bytes += r->len;
        batches++;
    }
    assert(batches == rd->included_count);
    for (uint32_t t = 0; t < rd->touched_count; t++) {
        struct partition *p = rd->touched[t];
        assert(p->active->size_bytes == p->round_position + p->round_bytes);
        assert(p->active->next_offset == p->next_offset);
        txn_index_commit_staged(&p->active->txns);
        partition_publish(p);
    }
    shard_notify_watch(s); /* one call per round that published */
    atomic_fetch_add_explicit(&s->env.counters->rounds, 1, memory_order_relaxed);
    if (s->round_inline)
        atomic_fetch_add_explicit(&s->env.counters->rounds_inline, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.counters->batches_appended, batches, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->env.counters->bytes_appended, bytes, memory_order_relaxed);
    s->bytes_since_sync += bytes;
}

/* One round over `list`; returns requests to defer to the next round through *deferred, and
 * how many decision appends it included in a round that fdatasynced (0 if none: SH9), whose
 * partitions go to synced (may be NULL; ROUND_PARTITIONS_MAX entries) and *synced_count. */
static uint32_t run_round(struct shard *s, struct shard_request *list,
                          struct shard_request **deferred, struct partition **synced,
                          uint32_t *synced_count)
{
    struct round rd = {.now_ms = fs_now_ms(), .sync_always = s->env.sync_mode == RT_SYNC_ALWAYS};
    rd.included_tail = &rd.included;
    rd.deferred_tail = &rd.deferred;

    round_place(s, &rd, round_admit(s, list));

    int rc = rd.failed;
    if (rd.touched_count > 0) {
        const char *what = "";
        s->io_failed_tag = UINT64_MAX; /* SH10: which op failed, for the fault's detail */
        if (rc == 0)
            rc = round_io(s, &rd, &what);
        if (rc == 0) {
            round_publish(s, &rd);
        } else {
            bool engine_wide = round_failure_engine_wide(&rd, what); /* SH10 */
            uint64_t failed_tag = s->io_failed_tag;
            for (uint32_t t = 0; t < rd.touched_count; t++)
                txn_index_drop_staged(&rd.touched[t]->active->txns);
            round_erase(s, &rd);
            for (uint32_t t = 0; t < rd.touched_count; t++) {
                struct partition *p = rd.touched[t];
                char detail[FAULT_DETAIL_BYTES];
                if (rd.failed == 0 && failed_tag == t)
                    snprintf(detail, sizeof(detail),
                             "%s of %s (%" PRIu64 " bytes at byte %" PRIu64 ") failed: %s", what,
                             p->active->log_path, p->round_bytes, p->round_position,
                             rt_strerror(rc));
                else
                    snprintf(detail, sizeof(detail), "%s: its write round failed (%s%s%s)", p->dir,
                             rd.failed ? "" : what, rd.failed ? "" : ": ", rt_strerror(rc));
                partition_fail(s, p, rc, engine_wide, p->round_position + p->round_bytes,
                               detail); /* PA5, SH4 */
            }
        }
    }
    uint32_t durable = 0;
    bool any_synced = false;
    if (synced_count)
        *synced_count = 0;
    for (uint32_t t = 0; t < rd.touched_count && rc == 0; t++) {
        if (!round_syncs(&rd, rd.touched[t]))
            continue;
        any_synced = true;
        if (synced)
            synced[(*synced_count)++] = rd.touched[t];
    }
    for (struct shard_request *r = rd.included, *next; r; r = next) {
        next = r->next;
        durable += any_synced && is_group_append(r);
        complete(r, rc ? RT_E_IO_FAILED : 0);
    }
    for (uint32_t t = 0; t < rd.touched_count; t++)
        rd.touched[t]->round_touched = false;
    for (struct shard_request *r = rd.deferred; r; r = r->next)
        r->partition->round_deferred = false;
    *deferred = rd.deferred;
    return durable;
}

/* SH7: may lazy request r go to the lazy round ahead of the non-lazy requests queued before
 * it? Not if one of them is for the same partition and the same producer (coordinator records
 * have none: then any coordinator record of that partition), so a producer's batches keep their
 * order. O(earlier non-lazy requests). */
static bool lazy_may_pass(const struct shard_request *r, const struct shard_request *earlier)
{
    for (const struct shard_request *e = earlier; e; e = e->next)
        if (e->partition == r->partition && e->header.producer_id == r->header.producer_id)
            return false;
    return true;
}

/* SH7: splits list into the lazy round (CALLs and the lazy appends that may pass, in arrival
 * order) and the rest (in arrival order). Returns the rest; *lazy gets the lazy round's list,
 * or NULL when a split buys nothing (no lazy append, or nothing else). */
static struct shard_request *split_lazy(struct shard_request *list, struct shard_request **lazy)
{
    struct shard_request *first = NULL, **first_tail = &first;
    struct shard_request *rest = NULL, **rest_tail = &rest;
    bool any_lazy = false, any_rest = false;
    for (struct shard_request *r = list, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        bool to_first =
            r->kind == SHARD_REQ_CALL || (r->lazy_sync && !r->force_sync && lazy_may_pass(r, rest));
        if (to_first) {
            any_lazy |= r->kind == SHARD_REQ_APPEND;
            *first_tail = r;
            first_tail = &r->next;
        } else {
            any_rest = true;
            *rest_tail = r;
            rest_tail = &r->next;
        }
    }
    if (any_lazy && any_rest) {
        *lazy = first;
        return rest;
    }
    /* No split: the CALLs first, as round_admit would run them anyway. */
    *first_tail = rest;
    *lazy = NULL;
    return first;
}

/* SH9: should the decision appends in list wait for the rest of their group? */
static bool group_wait_due(struct shard *s, const struct shard_request *list)
{
    uint32_t n = 0;
    for (const struct shard_request *r = list; r; r = r->next) {
        if (!is_group_append(r))
            return false;
        n++;
    }
    pthread_mutex_lock(&s->lock);
    bool wait = !s->stopping && n > 0 && n < s->group_target && s->group_until_ns != 0 &&
                monotonic_ns() < s->group_until_ns;
    pthread_mutex_unlock(&s->lock);
    return wait;
}

/* SH9: after a round (begun at start_ns) that fdatasynced `durable` decision appends in the
 * files of parts[0..n), with those queued meanwhile: the group is those appends, worth
 * waiting for only if some of them share a file (more appends than partitions): appends to
 * files of their own share no fdatasync, and waiting would only delay them. */
static void group_note(struct shard *s, uint32_t durable, struct partition **parts, uint32_t n,
                       uint64_t start_ns)
{
    if (durable == 0)
        return;
    uint64_t end = monotonic_ns();
    uint64_t wait_ns = (end - start_ns) / 2;
    if (wait_ns > GROUP_WAIT_NS_MAX)
        wait_ns = GROUP_WAIT_NS_MAX;
    pthread_mutex_lock(&s->lock);
    uint32_t group = durable;
    for (const struct shard_request *r = s->head; r; r = r->next) {
        if (!is_group_append(r))
            continue;
        group++;
        bool seen = false;
        for (uint32_t i = 0; i < n && !seen; i++)
            seen = parts[i] == r->partition;
        if (!seen && n < ROUND_PARTITIONS_MAX)
            parts[n++] = r->partition;
    }
    /* The queue holds at most request_queue_depth (submitters wait for room), so a
     * larger group could never gather: every such round would wait the whole bound. */
    if (group > s->env.request_queue_depth)
        group = s->env.request_queue_depth;
    s->group_target = group > n ? group : 0;
    s->group_until_ns = group > n ? end + wait_ns : 0;
    pthread_mutex_unlock(&s->lock);
}

/* Runs the rounds for what the shard thread took: under sync=always, lazy markers (SH6) ahead
 * of the rest in a round of their own (SH7), whose waiters are released at once; the rest may
 * be handed back through *held to wait for its group (SH9). */
static void run_rounds(struct shard *s, struct shard_request *list, struct shard_request **deferred,
                       struct shard_request **held)
{
    struct shard_request *lazy = NULL;
    *held = NULL;
    if (s->env.sync_mode == RT_SYNC_ALWAYS)
        list = split_lazy(list, &lazy);
    if (lazy) {
        struct shard_request *lazy_deferred = NULL;
        run_round(s, lazy, &lazy_deferred, NULL, NULL); /* its waiters: now (SH8) */
        if (lazy_deferred) { /* ahead of the rest again: a partition's order is kept */
            struct shard_request *d = lazy_deferred;
            while (d->next)
                d = d->next;
            d->next = list;
            list = lazy_deferred;
        }
    }
    if (s->env.sync_mode == RT_SYNC_ALWAYS && group_wait_due(s, list)) {
        *held = list; /* back to the queue's head: the round waits for its group (SH9) */
        *deferred = NULL;
        return;
    }
    uint64_t start_ns = monotonic_ns();
    struct partition *parts[ROUND_PARTITIONS_MAX];
    uint32_t part_count = 0;
    uint32_t durable = run_round(s, list, deferred, parts, &part_count);
    if (s->env.sync_mode == RT_SYNC_ALWAYS)
        group_note(s, durable, parts, part_count, start_ns);
}

/* Puts a list the thread took back at the head of the queue, in order, ahead of what was queued
 * since (SH9's held decisions, an inline round's deferred requests), counted as queued again.
 * s->lock held. */
static void requeue_front(struct shard *s, struct shard_request *list)
{
    if (!list)
        return;
    struct shard_request *last = list;
    for (;; last = last->next) {
        s->queued++;
        s->queued_decisions += is_group_append(last);
        if (!last->next)
            break;
    }
    last->next = s->head;
    if (!s->head)
        s->tail = last;
    s->head = list;
}

static void *shard_main(void *arg)
{
    struct shard *s = arg;
    struct shard_request *deferred = NULL;
    s->last_sync_ms = fs_monotonic_ms();
    s->last_retention_ms = s->last_sync_ms;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        /* SH9: decisions wait (bounded) for their group; anything else ends the wait. */
        while (!s->inline_running && s->head && !deferred && !s->stopping &&
               s->queued == s->queued_decisions && s->queued_decisions < s->group_target &&
               s->group_until_ns != 0) {
            uint64_t now_ns = monotonic_ns();
            if (now_ns >= s->group_until_ns)
                break;
            struct timespec ts = {.tv_sec = (time_t)(s->group_until_ns / 1000000000u),
                                  .tv_nsec = (long)(s->group_until_ns % 1000000000u)};
            pthread_cond_timedwait(&s->has_work, &s->lock, &ts);
        }
        while (s->inline_running || (!s->head && !deferred && !s->stopping)) {
            if (s->inline_running) {
                /* A submitter runs a round (SH5): its end signals has_work. */
                s->thread_waits_inline = true;
                pthread_cond_wait(&s->has_work, &s->lock);
                s->thread_waits_inline = false;
                continue;
            }
            int64_t now = fs_monotonic_ms();
            int64_t wait_ms = s->env.retention_check_ms;
            if (s->env.sync_mode == RT_SYNC_INTERVAL && s->bytes_since_sync > 0) {
                int64_t due = s->last_sync_ms + s->env.sync_interval_ms - now;
                if (due < wait_ms)
                    wait_ms = due;
            }
            int64_t retention_due = s->last_retention_ms + s->env.retention_check_ms - now;
            if (retention_due < wait_ms)
                wait_ms = retention_due;
            if (s->partitions_frozen > 0 && !sticky_error(s) && s->env.heal_ms_min >= 0 &&
                wait_ms > (int64_t)heal_ms_min(s))
                wait_ms = heal_ms_min(s); /* SH10: look for due recoveries */
            if (wait_ms <= 0)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&s->has_work, &s->lock, &ts);
            if (!s->head && !s->stopping && !s->inline_running)
                break; /* a timer is due: fall through to the timed work */
        }
        assert(!s->inline_running);
        s->thread_busy = true; /* SH5 */
        struct shard_request *list = s->head;
        s->head = s->tail = NULL;
        s->queued = 0;
        s->queued_decisions = 0;
        bool stopping = s->stopping;
        pthread_cond_broadcast(&s->has_room);
        pthread_mutex_unlock(&s->lock);

        if (deferred) {
            struct shard_request *d = deferred;
            while (d->next)
                d = d->next;
            d->next = list;
            list = deferred;
            deferred = NULL;
        }
        struct shard_request *held = NULL;
        if (list)
            run_rounds(s, list, &deferred, &held);

        int64_t now = fs_monotonic_ms();
        if (s->env.sync_mode == RT_SYNC_INTERVAL && s->bytes_since_sync > 0 && !sticky_error(s) &&
            (now - s->last_sync_ms >= (int64_t)s->env.sync_interval_ms ||
             (s->env.sync_interval_bytes > 0 &&
              s->bytes_since_sync >= s->env.sync_interval_bytes))) {
            int rc = sync_dirty(s, now);
            if (rc)
                set_sticky(s, rc);
        }
        if (now - s->last_retention_ms >= (int64_t)s->env.retention_check_ms && !sticky_error(s))
            run_retention(s, now);
        if (s->partitions_frozen > 0 && !sticky_error(s) && !stopping && s->env.heal_ms_min >= 0)
            heal_due(s); /* SH10 */

        pthread_mutex_lock(&s->lock);
        requeue_front(s, held); /* SH9: back at the head, in order, ahead of what queued since */
        s->thread_busy = false;
        if (stopping && !s->head && !deferred)
            break;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int shard_start(struct shard *s)
{
    int rc = pthread_create(&s->thread, NULL, shard_main, s);
    if (rc)
        return -rc;
    s->started = true;
    return 0;
}

void shard_stop(struct shard *s)
{
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->has_work);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        s->started = false;
    }
    if (s->ring)
        io_ring_close(s->ring);
    s->ring = NULL;
    free(s->iov);
    free(s->cqes);
    free(s->partitions);
    s->iov = NULL;
    s->cqes = NULL;
    s->partitions = NULL;
    pthread_cond_destroy(&s->has_work);
    pthread_cond_destroy(&s->has_room);
    pthread_mutex_destroy(&s->lock);
}

static int enqueue_locked(struct shard *s, struct shard_request *req)
{
    if (s->env.read_only)
        return error_set(RT_E_READ_ONLY, "the engine was opened read-only: nothing is written");
    while (!s->stopping && s->queued >= s->env.request_queue_depth)
        pthread_cond_wait(&s->has_room, &s->lock);
    if (s->stopping)
        return error_set(RT_E_CLOSED, "the engine is closing");
    if (s->tail)
        s->tail->next = req;
    else
        s->head = req;
    s->tail = req;
    s->queued++;
    s->queued_decisions += is_group_append(req);
    pthread_cond_signal(&s->has_work);
    return 0;
}

/* SH5: may req run as its own round on the calling thread now? Lock held. */
static bool inline_allowed_locked(const struct shard *s, const struct shard_request *req)
{
    /* thread_waits_inline: the shard thread has work waiting for the inline round to end (a
     * queued request or a due timer): the next round is its, so a caller appending in a tight
     * loop cannot starve it. */
    /* SH9: nor while the shard expects a group back: a round of one would split it. */
    bool group_due = s->group_target > 1 && s->group_until_ns != 0 && is_group_append(req) &&
                     monotonic_ns() < s->group_until_ns;
    return req->kind == SHARD_REQ_APPEND && !s->thread_busy && !s->inline_running &&
           !s->thread_waits_inline && !s->head && !s->stopping && !s->env.read_only &&
           s->env.sync_mode != RT_SYNC_INTERVAL && !group_due;
}

/* Runs req's round on the calling thread (SH5). Called and returns with the lock held; drops it
 * for the round. Whatever the round deferred goes to the head of the queue for the shard
 * thread, which is woken only when there is something for it (work, or it waits on us). */
static void run_inline_locked(struct shard *s, struct shard_request *req)
{
    assert(inline_allowed_locked(s, req));
    s->inline_running = true;
    pthread_mutex_unlock(&s->lock);
    struct shard_request *deferred = NULL;
    s->round_inline = true; /* counted by round_publish if the round publishes */
    /* req may be freed by its on_done: not touched after */
    run_round(s, req, &deferred, NULL, NULL);
    s->round_inline = false;
    pthread_mutex_lock(&s->lock);
    assert(s->inline_running && !s->thread_busy);
    s->inline_running = false;
    requeue_front(s, deferred);
    if (s->head || s->stopping || s->thread_waits_inline)
        pthread_cond_signal(&s->has_work);
}

int shard_submit_async(struct shard *s, struct shard_request *req)
{
    assert(req->on_done);
    atomic_init(&req->done, REQ_PENDING);
    req->next = NULL;
    req->result = 0;
    req->duplicate = false;
    req->rule = NULL;
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (req->may_run_inline && inline_allowed_locked(s, req))
        run_inline_locked(s, req); /* on_done has run */
    else
        rc = enqueue_locked(s, req);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

bool shard_try_inline(struct shard *s, struct shard_request *req)
{
    atomic_init(&req->done, REQ_PENDING);
    req->next = NULL;
    req->result = 0;
    req->duplicate = false;
    req->rule = NULL;
    req->on_done = NULL;
    pthread_mutex_lock(&s->lock);
    bool ran = inline_allowed_locked(s, req);
    if (ran)
        run_inline_locked(s, req); /* done, or deferred to the shard thread's queue */
    pthread_mutex_unlock(&s->lock);
    return ran;
}

void shard_submit_async_many(struct shard *s, struct shard_request **reqs, size_t n)
{
    size_t queued = 0;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    for (; queued < n; queued++) {
        struct shard_request *req = reqs[queued];
        assert(req->on_done);
        atomic_init(&req->done, REQ_PENDING);
        req->next = NULL;
        req->result = 0;
        req->duplicate = false;
        req->rule = NULL;
        rc = enqueue_locked(s, req); /* never inline: the point is one round for all of them */
        if (rc)
            break;
    }
    pthread_mutex_unlock(&s->lock);
    /* Closing (or read-only): the ones queued still run; the rest complete with the error, off
     * the lock (on_done may take its owner's lock, which a shard thread may hold too). */
    for (size_t k = queued; k < n; k++)
        complete(reqs[k], rc);
}

void shard_enqueue_many(struct shard *s, struct shard_request **reqs, size_t n)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        struct shard_request *req = reqs[i];
        atomic_init(&req->done, REQ_PENDING);
        req->next = NULL;
        req->result = 0;
        req->duplicate = false;
        req->rule = NULL;
        req->on_done = NULL;
        int rc = enqueue_locked(s, req);
        if (rc) {
            /* Closing: the ones already queued still run; report this and the rest closed. */
            for (size_t k = i; k < n; k++) {
                reqs[k]->result = rc;
                atomic_store_explicit(&reqs[k]->done, REQ_DONE, memory_order_release);
            }
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void shard_wait_many(struct shard *s, struct shard_request **reqs, size_t n)
{
    (void)s;
    for (size_t i = 0; i < n; i++)
        req_wait(reqs[i]); /* SH8 */
}

int shard_submit_many(struct shard *s, struct shard_request **reqs, size_t n)
{
    shard_enqueue_many(s, reqs, n);
    shard_wait_many(s, reqs, n);
    return 0;
}

int shard_submit(struct shard *s, struct shard_request *req)
{
    atomic_init(&req->done, REQ_PENDING);
    req->next = NULL;
    req->result = 0;
    req->duplicate = false;
    req->rule = NULL;
    req->on_done = NULL;
    pthread_mutex_lock(&s->lock);
    if (inline_allowed_locked(s, req)) {
        run_inline_locked(s, req); /* done, unless the round deferred it to the shard thread */
    } else {
        int rc = enqueue_locked(s, req);
        if (rc) {
            pthread_mutex_unlock(&s->lock);
            return rc;
        }
    }
    pthread_mutex_unlock(&s->lock);
    req_wait(req); /* SH8 */
    return req->result;
}
