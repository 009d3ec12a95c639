/*
 * io_fault.c — the fault-injecting backend (IO_KIND_FAULT): the synchronous executor of
 * io_sync.c with hooks that consult a struct io_fault_plan before each write and fdatasync.
 *
 * It owns only the decision "does this op fail, and how". Counting is per op type and starts
 * from the plan's own counters (a fresh plan has them at zero, so "the Nth write" is the Nth
 * write this ring executes); ops cancelled by an earlier failure of their fd are not executed
 * and not counted. Every injection bumps plan->faults_injected. The first matching rule wins.
 *   ONCE     the Nth op of the rule's type fails with `error`, nothing written.
 *   FOREVER  the Nth and every later op of that type fail with `error`.
 *   SHORT    (writes) the Nth write's first transfer stops after `short_bytes`; the executor
 *            writes the remainder like any short write, so the caller sees success.
 *   TORN     (writes) the Nth write lands its first `short_bytes`, then reports `error`.
 *   POWER_LOSS  the Nth op runs and reports its own result; then the power is lost (below).
 *   STALL    the Nth op waits before it runs (below).
 * A rule with path_contains sees only ops on files whose /proc/self/fd link contains it, and
 * counts them in its own `seen`; the plan's counters still count every op.
 * An `error` of 0 means EIO. It never includes engine/ headers and is meant for tests.
 * Beside the rings it wraps the filesystem calls outside the rounds (io_fdatasync, the
 * directory calls): io_fs.c owns their production path and hands a call that carries a plan to
 * the io_fault_* wrapper here; nothing here runs without a plan.
 *
 * POWER_LOSS (and io_fault_power_loss()) model a machine that dies: with plan->track_unsynced,
 * each write first reads the bytes it is about to replace (pread) and records them, per file
 * (device + inode; the file is kept open through a dup so a closed and reused fd number can
 * never point the restore at another file), with the file's size before its first unsynced
 * write. A successful fdatasync (a ring's, or io_fdatasync's from any thread) forgets the
 * file's records. Power loss undoes the records
 * newest first (optionally keeping a seeded random prefix of whole 512-byte sectors of each
 * write), truncates each file back to its size at the last sync, and fails every later op with
 * EIO. The plan may be shared by several rings on several threads (one per engine shard), so
 * all of its bookkeeping, and each write with the pre-image read that precedes it, happens under
 * one process-wide mutex: power loss can never interleave with a write in progress. That
 * serialises the fault backend's writes, which is acceptable for a test backend.
 * Cost: a tracked write reads as many bytes as it writes and keeps them in memory until the
 * next fdatasync of its file (an all-zero pre-image, e.g. a preallocated segment, is kept as a
 * flag, not bytes).
 *
 * STALL holds one op at the start of its execution, on its ring's thread, in a wait on
 * fault_cond (which releases fault_lock, so other rings and io_fault_power_loss() run meanwhile)
 * until io_fault_stall_release() bumps plan->stall_releases, a power loss, or the plan's
 * timeout. The op then runs as usual, so after a power loss it fails with EIO and a stalled
 * fdatasync never makes its file's writes durable. The invariants:
 *   FI1. A stall is bounded: it ends by stall_timeout_ms at the latest (counted in
 *        stall_timeouts, which a test asserts is 0), so no test can hang on a stall.
 *   FI2. A stalled op has not run: nothing it would write has landed, nothing it would sync is
 *        synced, until the stall ends.
 *   FI3. Power loss wakes every stalled op; an op that wakes to a lost power fails with EIO.
 * fault_cond is process-wide (as fault_lock) so that a plan stays a plain struct a test zeroes.
 */
#include "io/io_backend.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One write landed since the file's last successful fdatasync. */
struct unsynced_range {
    uint64_t offset;
    uint64_t len;
    uint64_t old_eof; /* file size just before the write: bytes at or past it did not exist */
    uint8_t *old;     /* the len bytes it replaced (those past old_eof read as 0), or NULL when
                         they were all zero */
};

struct unsynced_file {
    dev_t dev;
    ino_t ino;
    int fd;               /* a dup of the writer's fd, ours to close */
    uint64_t synced_size; /* file size before its first unsynced write */
    struct unsynced_range *ranges;
    size_t count;
    size_t cap;
    size_t lost; /* ranges[0, lost) met a failed fdatasync (writeback_errors): no later sync
                    makes them durable (FI7) */
};

struct io_fault_unsynced {
    struct unsynced_file *files;
    size_t count;
    size_t cap;
};

/* Guards every plan's counters and unsynced records, and each tracked write. */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
/* Signalled when an op enters a stall, at a release and at power loss (CLOCK_MONOTONIC). */
static pthread_cond_t fault_cond;
static pthread_once_t fault_cond_once = PTHREAD_ONCE_INIT;

static void fault_cond_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&fault_cond, &attr);
    pthread_condattr_destroy(&attr);
}

/* now + ms on CLOCK_MONOTONIC. */
static struct timespec deadline_after(uint32_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

struct fault_state {
    struct io_fault_plan *plan; /* not owned */
    /* The decision for the op being executed, taken in begin_op. */
    enum io_fault_mode armed_mode;
    int armed_error;
    uint32_t armed_short_bytes;
};

static void file_free(struct unsynced_file *f)
{
    for (size_t i = 0; i < f->count; i++)
        free(f->ranges[i].old);
    free(f->ranges);
    if (f->fd >= 0)
        close(f->fd);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

static void note_error(struct io_fault_plan *plan, int err)
{
    if (plan->power_loss_error == 0)
        plan->power_loss_error = err;
}

static struct unsynced_file *file_find(struct io_fault_unsynced *u, const struct stat *st)
{
    if (!u)
        return NULL;
    for (size_t i = 0; i < u->count; i++) {
        if (u->files[i].dev == st->st_dev && u->files[i].ino == st->st_ino)
            return &u->files[i];
    }
    return NULL;
}

/* Records that [offset, offset + len) of fd was overwritten, replacing `old` (len bytes; NULL
 * when all zero) while the file was `old_eof` bytes long. Takes ownership of `old`. Called with
 * fault_lock held. */
static void record_range(struct io_fault_plan *plan, int fd, const struct stat *st, uint64_t offset,
                         uint64_t len, uint64_t old_eof, uint8_t *old)
{
    if (!plan->unsynced) {
        plan->unsynced = calloc(1, sizeof(*plan->unsynced));
        if (!plan->unsynced)
            goto oom;
    }
    struct io_fault_unsynced *u = plan->unsynced;
    struct unsynced_file *f = file_find(u, st);
    if (!f) {
        if (u->count == u->cap) {
            size_t cap = u->cap ? u->cap * 2 : 8;
            struct unsynced_file *nf = realloc(u->files, cap * sizeof(*nf));
            if (!nf)
                goto oom;
            u->files = nf;
            u->cap = cap;
        }
        int dfd = dup(fd);
        if (dfd < 0) {
            note_error(plan, -errno);
            free(old);
            return;
        }
        f = &u->files[u->count++];
        *f = (struct unsynced_file){
            .dev = st->st_dev, .ino = st->st_ino, .fd = dfd, .synced_size = old_eof};
    }
    if (f->count == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct unsynced_range *nr = realloc(f->ranges, cap * sizeof(*nr));
        if (!nr)
            goto oom;
        f->ranges = nr;
        f->cap = cap;
    }
    f->ranges[f->count++] =
        (struct unsynced_range){.offset = offset, .len = len, .old_eof = old_eof, .old = old};
    plan->unsynced_bytes += len;
    return;
oom:
    note_error(plan, -ENOMEM);
    free(old);
}

/* FI9: a lost range (FI7) no longer covers [from, to): a later write replaced those bytes in
 * the page cache and a sync made them durable (writeback writes what a page holds now, so the
 * failed sync's bytes there can no longer come back). Trims, drops or splits the lost ranges
 * ranges[0, lost). Called with fault_lock held. */
static void lost_trim(struct io_fault_plan *plan, struct unsynced_file *f, uint64_t from,
                      uint64_t to)
{
    for (size_t j = 0; j < f->lost;) {
        struct unsynced_range *r = &f->ranges[j];
        uint64_t a = r->offset, b = r->offset + r->len;
        if (to <= a || from >= b) {
            j++;
            continue;
        }
        if (from <= a && to >= b) { /* wholly replaced: no longer lost */
            plan->unsynced_bytes -= r->len;
            free(r->old);
            memmove(r, r + 1, (f->count - j - 1) * sizeof(*r));
            f->count--;
            f->lost--;
            continue;
        }
        if (from <= a) { /* its head was replaced */
            uint64_t cut = to - a;
            if (r->old)
                memmove(r->old, r->old + cut, (size_t)(r->len - cut));
            r->offset = to;
            r->len -= cut;
            plan->unsynced_bytes -= cut;
            j++;
            continue;
        }
        if (to >= b) { /* its tail was replaced */
            plan->unsynced_bytes -= b - from;
            r->len = from - a;
            j++;
            continue;
        }
        /* The middle was replaced: [a, from) stays here, [to, b) becomes a range of its own. */
        if (f->count == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 16;
            struct unsynced_range *nr = realloc(f->ranges, cap * sizeof(*nr));
            if (!nr) {
                note_error(plan, -ENOMEM);
                return; /* kept whole: the model stays pessimistic */
            }
            f->ranges = nr;
            f->cap = cap;
            r = &f->ranges[j];
        }
        uint8_t *tail_old = NULL;
        if (r->old) {
            tail_old = malloc((size_t)(b - to));
            if (!tail_old) {
                note_error(plan, -ENOMEM);
                return;
            }
            memcpy(tail_old, r->old + (to - a), (size_t)(b - to));
        }
        memmove(r + 2, r + 1, (f->count - j - 1) * sizeof(*r));
        r[1] = (struct unsynced_range){
            .offset = to, .len = b - to, .old_eof = r->old_eof, .old = tail_old};
        plan->unsynced_bytes -= to - from;
        r->len = from - a;
        f->count++;
        f->lost++;
        j += 2;
    }
}

/* The file behind fd was synced: forget its ranges (but the lost ones, FI7, less what the
 * synced ones replaced, FI9). Called with fault_lock held. */
static void forget_file(struct io_fault_plan *plan, int fd)
{
    struct stat st;
    if (!plan->unsynced || fstat(fd, &st) != 0)
        return;
    struct io_fault_unsynced *u = plan->unsynced;
    struct unsynced_file *f = file_find(u, &st);
    if (!f)
        return;
    if (f->lost > 0) {
        /* The synced ranges leave the array one by one (the last first), each trimming the
         * lost ones; the file's size is durable now too. */
        while (f->count > f->lost) {
            struct unsynced_range done = f->ranges[--f->count];
            plan->unsynced_bytes -= done.len;
            free(done.old);
            lost_trim(plan, f, done.offset, done.offset + done.len);
        }
        f->synced_size = (uint64_t)st.st_size;
        if (f->lost > 0)
            return;
    }
    for (size_t i = f->lost; i < f->count; i++) {
        plan->unsynced_bytes -= f->ranges[i].len;
        free(f->ranges[i].old);
    }
    free(f->ranges);
    f->ranges = NULL;
    f->count = 0;
    file_free(f);
    *f = u->files[--u->count];
}

/* ---- writeback errors (plan->writeback_errors), as Linux reports them since 4.13 (errseq):
 *   FI7. An fdatasync that fails drops the file's dirty pages: its unsynced ranges are lost (no
 *        later sync makes them durable; power loss rolls them back) and the file's error
 *        sequence advances.
 *   FI8. The error is reported once to each descriptor: the next fdatasync through any other
 *        descriptor of the file that saw an older sequence fails with EIO (after running), then
 *        that descriptor is up to date; the descriptor whose call failed has seen it.
 *   FI9. A lost byte that a later write replaces is no longer lost once a sync succeeds after
 *        that write: the page holds the newer bytes and writeback writes what a page holds, so
 *        power loss keeps them (lost_trim); the file's size at that sync is durable too.
 * Descriptors are told apart by number and inode, and a descriptor's sequence is sampled the
 * first time the injector sees it (a dup shares a kernel file and its sequence; the injector
 * cannot tell, so the engine must not rely on dups). */
struct wb_fd {
    int fd;
    dev_t dev;
    ino_t ino;
    uint64_t seen;
};

struct wb_inode {
    dev_t dev;
    ino_t ino;
    uint64_t seq;
};

struct io_fault_wb {
    struct wb_fd *fds;
    size_t fd_count, fd_cap;
    struct wb_inode *inodes;
    size_t inode_count, inode_cap;
};

static struct wb_inode *wb_inode_of(struct io_fault_wb *w, const struct stat *st, bool add)
{
    for (size_t i = 0; i < w->inode_count; i++)
        if (w->inodes[i].dev == st->st_dev && w->inodes[i].ino == st->st_ino)
            return &w->inodes[i];
    if (!add)
        return NULL;
    if (w->inode_count == w->inode_cap) {
        size_t cap = w->inode_cap ? w->inode_cap * 2 : 16;
        struct wb_inode *n = realloc(w->inodes, cap * sizeof(*n));
        if (!n)
            return NULL;
        w->inodes = n;
        w->inode_cap = cap;
    }
    w->inodes[w->inode_count] = (struct wb_inode){.dev = st->st_dev, .ino = st->st_ino};
    return &w->inodes[w->inode_count++];
}

/* The descriptor's record, made (with the inode's current sequence) the first time. */
static struct wb_fd *wb_fd_of(struct io_fault_plan *plan, int fd, struct wb_inode **inode)
{
    struct stat st;
    if (!plan->writeback_errors || fstat(fd, &st) != 0)
        return NULL;
    if (!plan->wb && !(plan->wb = calloc(1, sizeof(*plan->wb))))
        return NULL;
    struct io_fault_wb *w = plan->wb;
    struct wb_inode *in = wb_inode_of(w, &st, true);
    if (!in)
        return NULL;
    *inode = in;
    for (size_t i = 0; i < w->fd_count; i++)
        if (w->fds[i].fd == fd && w->fds[i].dev == st.st_dev && w->fds[i].ino == st.st_ino)
            return &w->fds[i];
    if (w->fd_count == w->fd_cap) {
        size_t cap = w->fd_cap ? w->fd_cap * 2 : 16;
        struct wb_fd *n = realloc(w->fds, cap * sizeof(*n));
        if (!n)
            return NULL;
        w->fds = n;
        w->fd_cap = cap;
    }
    w->fds[w->fd_count] =
        (struct wb_fd){.fd = fd, .dev = st.st_dev, .ino = st.st_ino, .seen = in->seq};
    return &w->fds[w->fd_count++];
}

/* Samples fd's sequence if it is new (every op through the injector calls it). */
static void wb_observe(struct io_fault_plan *plan, int fd)
{
    struct wb_inode *in;
    (void)wb_fd_of(plan, fd, &in);
}

/* An fdatasync through fd failed by injection (FI7). fault_lock held. */
static void wb_failed(struct io_fault_plan *plan, int fd)
{
    struct wb_inode *in = NULL;
    struct wb_fd *f = wb_fd_of(plan, fd, &in);
    if (!f)
        return;
    f->seen = ++in->seq;
    struct stat st;
    if (plan->unsynced && fstat(fd, &st) == 0) {
        struct unsynced_file *u = file_find(plan->unsynced, &st);
        if (u)
            u->lost = u->count;
    }
}

/* An fdatasync through fd ran and returned rc: the error a newer sequence owes it (FI8). */
static int wb_report(struct io_fault_plan *plan, int fd, int rc)
{
    struct wb_inode *in = NULL;
    struct wb_fd *f = wb_fd_of(plan, fd, &in);
    if (!f || f->seen == in->seq)
        return rc;
    f->seen = in->seq;
    plan->writeback_errors_reported++;
    return rc ? rc : -EIO;
}

static void wb_free_locked(struct io_fault_plan *plan)
{
    if (!plan->wb)
        return;
    free(plan->wb->fds);
    free(plan->wb->inodes);
    free(plan->wb);
    plan->wb = NULL;
}

static int pwrite_all(int fd, const uint8_t *buf, uint64_t len, uint64_t offset)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        buf += n;
        len -= (uint64_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Undoes one file's unsynced ranges, newest first. Called with fault_lock held. */
static void roll_back_file(struct io_fault_plan *plan, struct unsynced_file *f, uint64_t *rng)
{
    static const uint8_t zeros[4096];
    uint64_t final_size = f->synced_size;
    for (size_t i = f->count; i-- > 0;) {
        const struct unsynced_range *r = &f->ranges[i];
        uint64_t end = r->offset + r->len;
        uint64_t keep_end = r->offset;
        if (plan->power_loss_keep_sectors) {
            uint64_t first = r->offset / IO_FAULT_SECTOR_BYTES;
            uint64_t sectors = (end - 1) / IO_FAULT_SECTOR_BYTES - first + 1;
            uint64_t k = next_random(rng) % (sectors + 1);
            keep_end = (first + k) * IO_FAULT_SECTOR_BYTES;
            if (keep_end < r->offset)
                keep_end = r->offset;
            if (keep_end > end)
                keep_end = end;
            if (keep_end > r->offset && keep_end > final_size)
                final_size = keep_end;
            plan->kept_bytes += keep_end - r->offset;
        }
        for (uint64_t pos = keep_end; pos < end;) {
            uint64_t chunk = end - pos;
            const uint8_t *src;
            if (r->old && pos < r->old_eof) {
                if (chunk > r->old_eof - pos)
                    chunk = r->old_eof - pos;
                src = r->old + (pos - r->offset);
            } else {
                if (chunk > sizeof(zeros))
                    chunk = sizeof(zeros);
                src = zeros;
            }
            int rc = pwrite_all(f->fd, src, chunk, pos);
            if (rc) {
                note_error(plan, rc);
                break;
            }
            plan->rolled_back_bytes += chunk;
            pos += chunk;
        }
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        note_error(plan, -errno);
        return;
    }
    if ((uint64_t)st.st_size > final_size) {
        if (ftruncate(f->fd, (off_t)final_size) != 0)
            note_error(plan, -errno);
        else
            plan->truncated_files++;
    }
}

static void dirs_undo_locked(struct io_fault_plan *plan);
static void dirs_free_locked(struct io_fault_plan *plan);

/* The power goes out: the unsynced bytes are rolled back first (through descriptors, so names
 * do not matter), then the unsynced directory changes (dirs_undo_locked). Called with
 * fault_lock held. */
static void power_loss_locked(struct io_fault_plan *plan)
{
    if (plan->power_lost)
        return;
    plan->power_lost = true;
    pthread_once(&fault_cond_once, fault_cond_init);
    pthread_cond_broadcast(&fault_cond); /* FI3 */
    struct io_fault_unsynced *u = plan->unsynced;
    if (u) {
        uint64_t rng = plan->power_loss_seed;
        for (size_t i = 0; i < u->count; i++) {
            roll_back_file(plan, &u->files[i], &rng);
            file_free(&u->files[i]);
        }
        free(u->files);
        free(u);
        plan->unsynced = NULL;
        plan->unsynced_bytes = 0;
    }
    dirs_undo_locked(plan);
    dirs_free_locked(plan);
}

int io_fault_power_loss(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    power_loss_locked(plan);
    int rc = plan->power_loss_error;
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

bool io_fault_power_is_lost(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    bool lost = plan->power_lost;
    pthread_mutex_unlock(&fault_lock);
    return lost;
}

uint64_t io_fault_faults_injected(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    uint64_t n = plan->faults_injected;
    pthread_mutex_unlock(&fault_lock);
    return n;
}

void io_fault_plan_release(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    struct io_fault_unsynced *u = plan->unsynced;
    if (u) {
        for (size_t i = 0; i < u->count; i++)
            file_free(&u->files[i]);
        free(u->files);
        free(u);
        plan->unsynced = NULL;
        plan->unsynced_bytes = 0;
    }
    dirs_free_locked(plan);
    wb_free_locked(plan);
    pthread_mutex_unlock(&fault_lock);
}

int io_fault_rule_add(struct io_fault_plan *plan, const struct io_fault_rule *rule)
{
    pthread_mutex_lock(&fault_lock);
    int rc = 0;
    if (plan->rule_count >= IO_FAULT_RULES_MAX)
        rc = -ENOSPC;
    else
        plan->rules[plan->rule_count++] = *rule;
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

void io_fault_rules_clear(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    memset(plan->rules, 0, sizeof(plan->rules));
    plan->rule_count = 0;
    pthread_mutex_unlock(&fault_lock);
}

int io_fault_stall_wait(struct io_fault_plan *plan, uint32_t timeout_ms)
{
    pthread_once(&fault_cond_once, fault_cond_init);
    struct timespec until = deadline_after(timeout_ms);
    pthread_mutex_lock(&fault_lock);
    int rc = 0;
    while (plan->stalled == 0 && rc == 0)
        rc = pthread_cond_timedwait(&fault_cond, &fault_lock, &until);
    rc = plan->stalled > 0 ? 0 : -ETIMEDOUT;
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

uint32_t io_fault_stalled_now(struct io_fault_plan *plan)
{
    pthread_mutex_lock(&fault_lock);
    uint32_t n = plan->stalled;
    pthread_mutex_unlock(&fault_lock);
    return n;
}

void io_fault_stall_release(struct io_fault_plan *plan)
{
    pthread_once(&fault_cond_once, fault_cond_init);
    pthread_mutex_lock(&fault_lock);
    plan->stall_releases++;
    pthread_cond_broadcast(&fault_cond);
    pthread_mutex_unlock(&fault_lock);
}

/* Holds the op that hit a STALL rule (FI1-FI3). Called with fault_lock held; the wait drops it. */
static void stall_locked(struct io_fault_plan *plan)
{
    pthread_once(&fault_cond_once, fault_cond_init);
    uint64_t releases = plan->stall_releases;
    struct timespec until =
        deadline_after(plan->stall_timeout_ms ? plan->stall_timeout_ms : 10000u);
    plan->stalls++;
    plan->stalled++;
    plan->faults_injected++;
    pthread_cond_broadcast(&fault_cond); /* io_fault_stall_wait */
    while (plan->stall_releases == releases && !plan->power_lost) {
        if (pthread_cond_timedwait(&fault_cond, &fault_lock, &until) == ETIMEDOUT &&
            plan->stall_releases == releases && !plan->power_lost) {
            plan->stall_timeouts++; /* FI1 */
            break;
        }
    }
    plan->stalled--;
}

/* What a rule is matched against: a ring op's or io_fdatasync's descriptor (its /proc/self/fd
 * link), or the path(s) a directory call was given. */
struct op_subject {
    int fd;            /* >= 0: resolve the path from it */
    const char *path;  /* else: the call's path */
    const char *path2; /* and a rename's other path, or NULL */
};

/* Whether the op's file path contains `pattern` (false if unreadable). */
static bool subject_contains(const struct op_subject *subj, const char *pattern, char *path,
                             size_t path_bytes, bool *resolved)
{
    if (subj->fd < 0)
        return (subj->path && strstr(subj->path, pattern)) ||
               (subj->path2 && strstr(subj->path2, pattern));
    if (!*resolved) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", subj->fd);
        ssize_t n = readlink(link, path, path_bytes - 1);
        path[n > 0 ? n : 0] = 0;
        *resolved = true;
    }
    return strstr(path, pattern) != NULL;
}

static bool rule_matches(const struct io_fault_rule *rule, enum io_op_type type, uint64_t n)
{
    if (rule->op != type || rule->nth == 0)
        return false;
    switch (rule->mode) {
    case IO_FAULT_NONE:
        return false;
    case IO_FAULT_ONCE:
    case IO_FAULT_POWER_LOSS:
    case IO_FAULT_STALL:
        return n == rule->nth;
    case IO_FAULT_FOREVER:
        return n >= rule->nth;
    case IO_FAULT_SHORT:
    case IO_FAULT_TORN:
        return type == IO_OP_WRITE && n == rule->nth;
    }
    return false;
}

struct armed {
    enum io_fault_mode mode;
    int error;
    uint32_t short_bytes;
};

/* Counts the op (the plan's counter for its type) and takes the first matching rule's decision;
 * a STALL is served here, before the op runs (FI2), and leaves the op plain. Called with
 * fault_lock held. */
static struct armed decide_locked(struct io_fault_plan *plan, enum io_op_type type,
                                  const struct op_subject *subj)
{
    uint64_t *counter = type == IO_OP_WRITE              ? &plan->writes_seen
                        : type == IO_OP_FDATASYNC        ? &plan->fdatasyncs_seen
                        : type == IO_OP_FDATASYNC_DIRECT ? &plan->direct_fdatasyncs_seen
                        : type == IO_OP_DIR_ENTRY        ? &plan->dir_entries_seen
                                                         : &plan->dir_fsyncs_seen;
    uint64_t n = ++*counter;
    struct armed a = {.mode = IO_FAULT_NONE};
    uint32_t rule_count =
        plan->rule_count < IO_FAULT_RULES_MAX ? plan->rule_count : IO_FAULT_RULES_MAX;
    char path[4096];
    bool resolved = false;
    for (uint32_t i = 0; i < rule_count; i++) {
        struct io_fault_rule *rule = &plan->rules[i];
        uint64_t rule_n = n;
        if (rule->path_contains) {
            if (rule->op != type ||
                !subject_contains(subj, rule->path_contains, path, sizeof(path), &resolved))
                continue;
            rule_n = ++rule->seen;
        }
        if (rule_matches(rule, type, rule_n)) {
            a.mode = rule->mode;
            a.error = rule->error > 0 ? rule->error : EIO;
            a.short_bytes = rule->short_bytes;
            break;
        }
    }
    if (a.mode == IO_FAULT_STALL) {
        stall_locked(plan); /* FI2: before the op runs; it then runs as a plain op */
        a.mode = IO_FAULT_NONE;
    }
    return a;
}

static void fault_begin_op(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    pthread_mutex_lock(&fault_lock);
    struct op_subject subj = {.fd = op->fd};
    wb_observe(fs->plan, op->fd);
    struct armed a = decide_locked(fs->plan, op->type, &subj);
    fs->armed_mode = a.mode;
    fs->armed_error = a.error;
    fs->armed_short_bytes = a.short_bytes;
    pthread_mutex_unlock(&fault_lock);
}

/* Writes only the first `limit` bytes of the op's window (limit < remaining) by clipping the
 * op's own iovec copy for the duration of the call. */
static ssize_t pwritev_prefix(struct io_op *op, uint64_t limit)
{
    assert(limit < io_op_remaining(op));
    if (limit == 0)
        return 0;
    struct iovec *iov = op->iov + op->iov_first;
    unsigned count = 0;
    uint64_t covered = 0;
    while (covered + iov[count].iov_len < limit)
        covered += iov[count++].iov_len;
    /* iov[count] holds the last byte before `limit`: end the window there, write, restore. */
    size_t saved_len = iov[count].iov_len;
    unsigned saved_count = op->iov_count;
    iov[count].iov_len = (size_t)(limit - covered);
    op->iov_count = op->iov_first + count + 1;
    ssize_t n = io_sync_pwritev_plain(NULL, op);
    iov[count].iov_len = saved_len;
    op->iov_count = saved_count;
    assert(n < 0 || (uint64_t)n <= limit);
    return n;
}

static bool all_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i])
            return false;
    }
    return true;
}

/* Writes the first `limit` (<= remaining) bytes of the op's window and, when the plan tracks
 * unsynced data, records the range it landed with the bytes it replaced. Called with
 * fault_lock held, so a power loss cannot fall between the pre-image read and the write. */
static ssize_t tracked_write(struct io_fault_plan *plan, struct io_op *op, uint64_t limit)
{
    uint64_t remaining = io_op_remaining(op);
    assert(limit <= remaining);
    if (!plan->track_unsynced || limit == 0)
        return limit < remaining ? pwritev_prefix(op, limit) : io_sync_pwritev_plain(NULL, op);
    struct stat st;
    uint8_t *old = NULL;
    bool known = fstat(op->fd, &st) == 0;
    if (!known) {
        note_error(plan, -errno);
    } else {
        old = calloc(1, (size_t)limit);
        if (!old) {
            note_error(plan, -ENOMEM);
            known = false;
        } else {
            uint64_t got = 0;
            while (got < limit) {
                ssize_t n =
                    pread(op->fd, old + got, (size_t)(limit - got), (off_t)(op->offset + got));
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0) {
                    note_error(plan, -errno); /* e.g. EBADF for a write-only fd */
                    known = false;
                    break;
                }
                if (n == 0)
                    break; /* past EOF: those bytes did not exist (calloc left them 0) */
                got += (uint64_t)n;
            }
        }
    }
    uint64_t offset = op->offset;
    ssize_t n = limit < remaining ? pwritev_prefix(op, limit) : io_sync_pwritev_plain(NULL, op);
    if (n > 0 && known) {
        if (all_zero(old, (size_t)n)) {
            free(old);
            old = NULL;
        }
        record_range(plan, op->fd, &st, offset, (uint64_t)n, (uint64_t)st.st_size, old);
        old = NULL;
    }
    free(old);
    return n;
}

static ssize_t fault_pwritev(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    struct io_fault_plan *plan = fs->plan;
    enum io_fault_mode mode = fs->armed_mode;
    fs->armed_mode = IO_FAULT_NONE; /* a fault hits the op's first transfer only */
    uint64_t remaining = io_op_remaining(op);
    ssize_t n;
    pthread_mutex_lock(&fault_lock);
    if (plan->power_lost) {
        plan->faults_injected++;
        n = -EIO;
        goto out;
    }
    switch (mode) {
    case IO_FAULT_NONE:
    case IO_FAULT_POWER_LOSS:
    case IO_FAULT_STALL: /* served in fault_begin_op */
        break;
    case IO_FAULT_ONCE:
    case IO_FAULT_FOREVER:
        plan->faults_injected++;
        n = -fs->armed_error;
        goto out;
    case IO_FAULT_SHORT:
        if (fs->armed_short_bytes >= remaining)
            break; /* nothing to cut: a plain full write */
        plan->faults_injected++;
        n = tracked_write(plan, op, fs->armed_short_bytes);
        goto out;
    case IO_FAULT_TORN: {
        plan->faults_injected++;
        uint64_t limit = fs->armed_short_bytes < remaining ? fs->armed_short_bytes : remaining;
        n = tracked_write(plan, op, limit);
        if (n >= 0)
            n = -fs->armed_error; /* the landed prefix stays recorded: it is unsynced data */
        goto out;
    }
    }
    n = tracked_write(plan, op, remaining);
    if (mode == IO_FAULT_POWER_LOSS) {
        plan->faults_injected++;
        power_loss_locked(plan);
    }
out:
    pthread_mutex_unlock(&fault_lock);
    return n;
}

static int fault_fdatasync(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    struct io_fault_plan *plan = fs->plan;
    enum io_fault_mode mode = fs->armed_mode;
    fs->armed_mode = IO_FAULT_NONE;
    int rc;
    pthread_mutex_lock(&fault_lock);
    if (plan->power_lost) {
        plan->faults_injected++;
        rc = -EIO;
    } else if (mode == IO_FAULT_ONCE || mode == IO_FAULT_FOREVER) {
        plan->faults_injected++;
        rc = -fs->armed_error;
        wb_failed(plan, op->fd);
    } else {
        rc = io_sync_fdatasync_plain(NULL, op);
        if (rc == 0)
            forget_file(plan, op->fd);
        rc = wb_report(plan, op->fd, rc);
        if (mode == IO_FAULT_POWER_LOSS) {
            plan->faults_injected++;
            power_loss_locked(plan);
        }
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

/* The start of a synchronous call (io_fdatasync, the directory calls): counted, the rules
 * consulted. Returns 0 when the call should run (with *a saying whether a power loss follows
 * it), or the error it fails with: -EIO once the power is lost, a ONCE / FOREVER rule's.
 * Called with fault_lock held. */
static int direct_begin_locked(struct io_fault_plan *plan, enum io_op_type type,
                               const struct op_subject *subj, struct armed *a)
{
    *a = decide_locked(plan, type, subj);
    if (plan->power_lost)
        return -EIO;
    if (a->mode == IO_FAULT_ONCE || a->mode == IO_FAULT_FOREVER) {
        plan->faults_injected++;
        return -a->error;
    }
    return 0;
}

/* The end of a call that ran: a POWER_LOSS rule now loses the power. fault_lock held. */
static void direct_end_locked(struct io_fault_plan *plan, const struct armed *a)
{
    if (a->mode == IO_FAULT_POWER_LOSS) {
        plan->faults_injected++;
        power_loss_locked(plan);
    }
}

int io_fault_fdatasync(struct io_fault_plan *plan, int fd)
{
    assert(plan);
    assert(fd >= 0);
    /* Under the lock, so no tracked write lands between the sync and the forgetting (it would
     * be forgotten unsynced) and power loss never interleaves with it. */
    pthread_mutex_lock(&fault_lock);
    struct op_subject subj = {.fd = fd};
    wb_observe(plan, fd);
    struct armed a;
    int rc = direct_begin_locked(plan, IO_OP_FDATASYNC_DIRECT, &subj, &a);
    if (rc == 0) {
        rc = fdatasync(fd) == 0 ? 0 : -errno;
        if (rc == 0)
            forget_file(plan, fd);
        rc = wb_report(plan, fd, rc);
        direct_end_locked(plan, &a);
    } else if (!plan->power_lost) {
        wb_failed(plan, fd);
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

/* ---- the directory-entry model (io.h: track_dirs) ----
 * The journal holds, in the order they ran, the directory changes no io_fsync_dir has covered
 * yet. Directories are named by a descriptor of their own (O_PATH, kept until the journal is
 * freed) and matched by device and inode, so a sync of "a/b/../b" covers a change made through
 * "a/b". The invariants:
 *   FI4. A change leaves the journal only when every directory it touched was synced after it
 *        (io_fsync_dir), when the power is lost (it is undone) or at io_fault_plan_release (it
 *        stands).
 *   FI5. What a journaled change removed from its name (an unlinked file, a file a rename
 *        replaced) stays linked as the change's stash until the change leaves the journal, so
 *        undoing it can always put the same inode back.
 *   FI6. Undo runs newest first and touches a name only while it still holds the inode the
 *        change left there (else it is skipped and counted), so it never removes a file some
 *        later, untracked step put there. "The inode" is its device and inode number, which a
 *        file system may give to a new file once the old one is freed: a replacement made by
 *        a plain syscall after the old file was deleted may then be taken for it. */
enum dir_change_kind {
    DIR_CHANGE_CREATE,
    DIR_CHANGE_MKDIR,
    DIR_CHANGE_RENAME,
    DIR_CHANGE_UNLINK,
    DIR_CHANGE_RMDIR, /* undone by an mkdir: the directory was empty */
};

struct dir_ref {
    dev_t dev;
    ino_t ino;
    int fd; /* O_PATH | O_DIRECTORY */
};

struct dir_change {
    enum dir_change_kind kind;
    uint32_t dir;     /* refs index: the entry's directory (a rename's target directory) */
    uint32_t old_dir; /* a rename's source directory */
    char *name;       /* basename in dir */
    char *old_name;   /* a rename's source basename */
    char *stash;      /* basename in dir of the link keeping what was removed (FI5), or NULL */
    dev_t dev;        /* the inode the change left at `name` (not for an unlink) */
    ino_t ino;
    bool pending;     /* dir not synced since */
    bool old_pending; /* a rename's old_dir not synced since */
};

struct io_fault_dirs {
    struct dir_ref *refs;
    uint32_t ref_count;
    uint32_t ref_cap;
    struct dir_change *changes;
    size_t count;
    size_t cap;
    uint64_t stash_seq;
};

/* Splits path into its directory (into buf) and its last component. */
static int split_path(const char *path, char *buf, size_t cap, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(buf, cap, ".");
        *base = path;
        return 0;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(buf, path, n);
    buf[n] = 0;
    *base = slash + 1;
    return **base ? 0 : -EINVAL;
}

static struct io_fault_dirs *dirs_get(struct io_fault_plan *plan)
{
    if (!plan->dirs)
        plan->dirs = calloc(1, sizeof(*plan->dirs));
    return plan->dirs;
}

/* The refs index of the directory holding path (opened once per directory); its basename in
 * *base. Called with fault_lock held. */
static int dir_ref_of(struct io_fault_plan *plan, const char *path, uint32_t *idx,
                      const char **base)
{
    char dir[4096];
    int rc = split_path(path, dir, sizeof(dir), base);
    struct io_fault_dirs *d = dirs_get(plan);
    if (rc == 0 && !d)
        rc = -ENOMEM;
    if (rc)
        return rc;
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    for (uint32_t i = 0; i < d->ref_count; i++) {
        if (d->refs[i].dev == st.st_dev && d->refs[i].ino == st.st_ino) {
            close(fd);
            *idx = i;
            return 0;
        }
    }
    if (d->ref_count == d->ref_cap) {
        uint32_t cap = d->ref_cap ? d->ref_cap * 2 : 8;
        struct dir_ref *r = realloc(d->refs, cap * sizeof(*r));
        if (!r) {
            close(fd);
            return -ENOMEM;
        }
        d->refs = r;
        d->ref_cap = cap;
    }
    d->refs[d->ref_count] = (struct dir_ref){.dev = st.st_dev, .ino = st.st_ino, .fd = fd};
    *idx = d->ref_count++;
    return 0;
}

/* Appends a change (taking ownership of its strings). fault_lock held. */
static int journal_add(struct io_fault_plan *plan, const struct dir_change *c)
{
    struct io_fault_dirs *d = plan->dirs;
    assert(d);
    if (d->count == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        struct dir_change *n = realloc(d->changes, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        d->changes = n;
        d->cap = cap;
    }
    d->changes[d->count++] = *c;
    plan->dir_entries_unsynced = d->count;
    return 0;
}

static void change_free(struct dir_change *c)
{
    free(c->name);
    free(c->old_name);
    free(c->stash);
    memset(c, 0, sizeof(*c));
}

/* A fresh stash name in directory ref `dir`. */
static char *stash_name(struct io_fault_dirs *d)
{
    char buf[64];
    snprintf(buf, sizeof(buf), ".iofault-stash.%ld.%" PRIu64, (long)getpid(), ++d->stash_seq);
    return strdup(buf);
}

static bool name_holds(int dirfd, const char *name, dev_t dev, ino_t ino)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev &&
           st.st_ino == ino;
}

/* rm -r of dirfd/name (a directory whose creation is undone). */
static int remove_tree(int dirfd, const char *name, int depth)
{
    if (depth > 64)
        return -ELOOP;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *dh = fdopendir(fd);
    if (!dh) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        int r = S_ISDIR(st.st_mode) ? remove_tree(fd, de->d_name, depth + 1)
                                    : (unlinkat(fd, de->d_name, 0) == 0 ? 0 : -errno);
        if (r && rc == 0)
            rc = r;
    }
    closedir(dh);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* io_fsync_dir(D) succeeded: D's changes are durable (FI4). fault_lock held. */
static void dirs_synced_locked(struct io_fault_plan *plan, const struct stat *dir_st)
{
    struct io_fault_dirs *d = plan->dirs;
    if (!d)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < d->count; i++) {
        struct dir_change *c = &d->changes[i];
        const struct dir_ref *r = &d->refs[c->dir];
        if (r->dev == dir_st->st_dev && r->ino == dir_st->st_ino)
            c->pending = false;
        if (c->kind == DIR_CHANGE_RENAME) {
            const struct dir_ref *o = &d->refs[c->old_dir];
            if (o->dev == dir_st->st_dev && o->ino == dir_st->st_ino)
                c->old_pending = false;
        }
        if (c->pending || c->old_pending) {
            d->changes[kept++] = *c;
            continue;
        }
        if (c->stash)
            (void)unlinkat(r->fd, c->stash, 0); /* the removal is durable now */
        change_free(c);
    }
    d->count = kept;
    plan->dir_entries_unsynced = kept;
}

/* Power loss: undoes every journaled change, newest first (FI6), then frees the journal.
 * fault_lock held. */
static void dirs_undo_locked(struct io_fault_plan *plan)
{
    struct io_fault_dirs *d = plan->dirs;
    if (!d)
        return;
    for (size_t i = d->count; i-- > 0;) {
        struct dir_change *c = &d->changes[i];
        int fd = d->refs[c->dir].fd;
        int rc = 0;
        bool skipped = false;
        switch (c->kind) {
        case DIR_CHANGE_CREATE:
            if (!(skipped = !name_holds(fd, c->name, c->dev, c->ino)))
                rc = unlinkat(fd, c->name, 0) == 0 ? 0 : -errno;
            break;
        case DIR_CHANGE_MKDIR:
            if (!(skipped = !name_holds(fd, c->name, c->dev, c->ino)))
                rc = remove_tree(fd, c->name, 0);
            break;
        case DIR_CHANGE_RENAME:
            if (!(skipped = !name_holds(fd, c->name, c->dev, c->ino))) {
                rc = renameat(fd, c->name, d->refs[c->old_dir].fd, c->old_name) == 0 ? 0 : -errno;
                if (rc == 0 && c->stash) {
                    rc = renameat(fd, c->stash, fd, c->name) == 0 ? 0 : -errno;
                    if (rc == 0) {
                        free(c->stash);
                        c->stash = NULL;
                    }
                }
            }
            break;
        case DIR_CHANGE_RMDIR:
            rc = mkdirat(fd, c->name, 0755) == 0 ? 0 : -errno;
            break;
        case DIR_CHANGE_UNLINK:
            rc = renameat(fd, c->stash, fd, c->name) == 0 ? 0 : -errno;
            if (rc == 0) {
                free(c->stash);
                c->stash = NULL;
            }
            break;
        }
        if (skipped)
            plan->dir_undo_skipped++;
        else if (rc)
            note_error(plan, rc);
        else
            plan->dir_entries_undone++;
        if (c->stash)
            (void)unlinkat(fd, c->stash, 0);
        change_free(c);
    }
    d->count = 0;
    plan->dir_entries_unsynced = 0;
}

/* Frees the journal; its changes stand (stashes removed). fault_lock held. */
static void dirs_free_locked(struct io_fault_plan *plan)
{
    struct io_fault_dirs *d = plan->dirs;
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++) {
        if (d->changes[i].stash)
            (void)unlinkat(d->refs[d->changes[i].dir].fd, d->changes[i].stash, 0);
        change_free(&d->changes[i]);
    }
    for (uint32_t i = 0; i < d->ref_count; i++)
        close(d->refs[i].fd);
    free(d->changes);
    free(d->refs);
    free(d);
    plan->dirs = NULL;
    plan->dir_entries_unsynced = 0;
}

/* Journals a create or mkdir of path, which now holds st's inode. fault_lock held. */
static void journal_created(struct io_fault_plan *plan, enum dir_change_kind kind, const char *path,
                            const struct stat *st)
{
    uint32_t dir;
    const char *base;
    int rc = dir_ref_of(plan, path, &dir, &base);
    struct dir_change c = {.kind = kind,
                           .dir = dir,
                           .name = rc == 0 ? strdup(base) : NULL,
                           .dev = st->st_dev,
                           .ino = st->st_ino,
                           .pending = true};
    if (rc == 0 && !c.name)
        rc = -ENOMEM;
    if (rc == 0)
        rc = journal_add(plan, &c);
    if (rc) {
        note_error(plan, rc); /* the change goes unmodelled: it counts as durable */
        change_free(&c);
    }
}

int io_fault_file_create(struct io_fault_plan *plan, const char *path, int flags, mode_t mode)
{
    assert(plan);
    assert(path);
    pthread_mutex_lock(&fault_lock);
    struct stat st;
    int rc;
    if (lstat(path, &st) == 0) {
        /* No directory change: a plain open (a dead machine opens nothing, though). */
        rc = plan->power_lost ? -EIO : open(path, flags, mode);
        if (rc < 0 && !plan->power_lost)
            rc = -errno;
        pthread_mutex_unlock(&fault_lock);
        return rc;
    }
    struct op_subject subj = {.fd = -1, .path = path};
    struct armed a;
    rc = direct_begin_locked(plan, IO_OP_DIR_ENTRY, &subj, &a);
    if (rc == 0) {
        rc = open(path, flags, mode);
        if (rc < 0)
            rc = -errno;
        else if (plan->track_dirs && fstat(rc, &st) == 0)
            journal_created(plan, DIR_CHANGE_CREATE, path, &st);
        direct_end_locked(plan, &a);
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fault_mkdir(struct io_fault_plan *plan, const char *path, mode_t mode)
{
    assert(plan);
    assert(path);
    pthread_mutex_lock(&fault_lock);
    struct stat st;
    int rc;
    if (lstat(path, &st) == 0) {
        rc = -EEXIST; /* no change, not counted */
    } else {
        struct op_subject subj = {.fd = -1, .path = path};
        struct armed a;
        rc = direct_begin_locked(plan, IO_OP_DIR_ENTRY, &subj, &a);
        if (rc == 0) {
            rc = mkdir(path, mode) == 0 ? 0 : -errno;
            if (rc == 0 && plan->track_dirs && lstat(path, &st) == 0)
                journal_created(plan, DIR_CHANGE_MKDIR, path, &st);
            direct_end_locked(plan, &a);
        }
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fault_rmdir(struct io_fault_plan *plan, const char *path)
{
    assert(plan);
    assert(path);
    pthread_mutex_lock(&fault_lock);
    struct stat st;
    int rc;
    if (lstat(path, &st) != 0) {
        rc = -errno; /* no change, not counted */
        pthread_mutex_unlock(&fault_lock);
        return rc;
    }
    struct op_subject subj = {.fd = -1, .path = path};
    struct armed a;
    rc = direct_begin_locked(plan, IO_OP_DIR_ENTRY, &subj, &a);
    if (rc == 0) {
        rc = rmdir(path) == 0 ? 0 : -errno;
        if (rc == 0 && plan->track_dirs) {
            uint32_t dir;
            const char *base;
            struct dir_change c = {.kind = DIR_CHANGE_RMDIR, .pending = true};
            int jrc = dir_ref_of(plan, path, &dir, &base);
            if (jrc == 0 && !(c.name = strdup(base)))
                jrc = -ENOMEM;
            if (jrc == 0) {
                c.dir = dir;
                jrc = journal_add(plan, &c);
            }
            if (jrc) {
                note_error(plan, jrc); /* unmodelled: the removal counts as durable */
                change_free(&c);
            }
        }
        direct_end_locked(plan, &a);
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fault_unlink(struct io_fault_plan *plan, const char *path)
{
    assert(plan);
    assert(path);
    pthread_mutex_lock(&fault_lock);
    struct stat st;
    int rc;
    if (lstat(path, &st) != 0) {
        rc = -errno; /* no change, not counted */
        pthread_mutex_unlock(&fault_lock);
        return rc;
    }
    struct op_subject subj = {.fd = -1, .path = path};
    struct armed a;
    rc = direct_begin_locked(plan, IO_OP_DIR_ENTRY, &subj, &a);
    if (rc == 0) {
        uint32_t dir;
        const char *base;
        struct dir_change c = {.kind = DIR_CHANGE_UNLINK, .pending = true};
        bool tracked =
            plan->track_dirs && !S_ISDIR(st.st_mode) && dir_ref_of(plan, path, &dir, &base) == 0 &&
            (c.name = strdup(base)) != NULL && (c.stash = stash_name(plan->dirs)) != NULL;
        if (tracked) {
            /* FI5: the unlink is a rename to the stash, so undoing it is a rename back. */
            c.dir = dir;
            int fd = plan->dirs->refs[dir].fd;
            rc = renameat(fd, c.name, fd, c.stash) == 0 ? 0 : -errno;
            if (rc == 0 && journal_add(plan, &c) != 0) {
                note_error(plan, -ENOMEM);
                (void)unlinkat(fd, c.stash, 0);
                change_free(&c);
            } else if (rc) {
                change_free(&c);
            }
        } else {
            change_free(&c);
            rc = unlink(path) == 0 ? 0 : -errno;
        }
        direct_end_locked(plan, &a);
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fault_rename(struct io_fault_plan *plan, const char *from, const char *to)
{
    assert(plan);
    assert(from && to);
    pthread_mutex_lock(&fault_lock);
    struct op_subject subj = {.fd = -1, .path = from, .path2 = to};
    struct armed a;
    int rc = direct_begin_locked(plan, IO_OP_DIR_ENTRY, &subj, &a);
    if (rc) {
        pthread_mutex_unlock(&fault_lock);
        return rc;
    }
    struct stat src, dst;
    struct dir_change c = {.kind = DIR_CHANGE_RENAME, .pending = true, .old_pending = true};
    const char *base, *old_base;
    bool tracked = plan->track_dirs && lstat(from, &src) == 0 &&
                   dir_ref_of(plan, from, &c.old_dir, &old_base) == 0 &&
                   dir_ref_of(plan, to, &c.dir, &base) == 0 && (c.name = strdup(base)) != NULL &&
                   (c.old_name = strdup(old_base)) != NULL;
    int dirfd = tracked ? plan->dirs->refs[c.dir].fd : -1;
    if (tracked && lstat(to, &dst) == 0) {
        if (dst.st_dev == src.st_dev && dst.st_ino == src.st_ino) {
            tracked = false; /* two links of one file: rename does nothing */
        } else if (!S_ISDIR(dst.st_mode)) {
            c.stash = stash_name(plan->dirs); /* FI5: keep the victim */
            if (c.stash && linkat(dirfd, c.name, dirfd, c.stash, 0) != 0) {
                note_error(plan, -errno); /* unmodelled: its loss counts as durable */
                free(c.stash);
                c.stash = NULL;
            }
        }
    }
    rc = rename(from, to) == 0 ? 0 : -errno;
    bool journaled = false;
    if (rc == 0 && tracked) {
        c.dev = src.st_dev;
        c.ino = src.st_ino;
        journaled = journal_add(plan, &c) == 0; /* the journal owns c now */
        if (!journaled)
            note_error(plan, -ENOMEM);
    }
    if (!journaled) {
        if (c.stash)
            (void)unlinkat(dirfd, c.stash, 0);
        change_free(&c);
    }
    direct_end_locked(plan, &a);
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fault_fsync_dir(struct io_fault_plan *plan, const char *dir)
{
    assert(plan);
    assert(dir);
    pthread_mutex_lock(&fault_lock);
    struct op_subject subj = {.fd = -1, .path = dir};
    struct armed a;
    int rc = direct_begin_locked(plan, IO_OP_DIR_FSYNC, &subj, &a);
    if (rc == 0) {
        struct stat st;
        rc = io_fsync_dir_plain(dir, &st);
        if (rc == 0)
            dirs_synced_locked(plan, &st);
        direct_end_locked(plan, &a);
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

static const struct io_sync_hooks fault_hooks = {
    .begin_op = fault_begin_op,
    .pwritev = fault_pwritev,
    .fdatasync = fault_fdatasync,
};

static int fault_open(io_ring *ring, const struct io_options *opts)
{
    assert(opts->fault);
    struct fault_state *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    fs->plan = opts->fault;
    ring->backend = fs;
    return 0;
}

static void fault_close(io_ring *ring)
{
    free(ring->backend);
    ring->backend = NULL;
}

static int fault_submit(io_ring *ring)
{
    io_sync_run_round(ring, &fault_hooks, ring->backend);
    return 0;
}

const struct io_backend_ops io_backend_fault = {
    .name = "fault",
    .open = fault_open,
    .close = fault_close,
    .submit = fault_submit,
    .wait = NULL,
};
