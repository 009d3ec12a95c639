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
 *   IF1. A stall is bounded: it ends by stall_timeout_ms at the latest (counted in
 *        stall_timeouts, which a test asserts is 0), so no test can hang on a stall.
 *   IF2. A stalled op has not run: nothing it would write has landed, nothing it would sync is
 *        synced, until the stall ends.
 *   IF3. Power loss wakes every stalled op; an op that wakes to a lost power fails with EIO.
 * fault_cond is process-wide (as fault_lock) so that a plan stays a plain struct a test zeroes.
 */
#include "io/io_backend.h"

#include <assert.h>
#include <errno.h>
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

/* The file behind fd was synced: forget its ranges. Called with fault_lock held. */
static void forget_file(struct io_fault_plan *plan, int fd)
{
    struct stat st;
    if (!plan->unsynced || fstat(fd, &st) != 0)
        return;
    struct io_fault_unsynced *u = plan->unsynced;
    struct unsynced_file *f = file_find(u, &st);
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        plan->unsynced_bytes -= f->ranges[i].len;
    file_free(f);
    *f = u->files[--u->count];
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

/* The power goes out. Called with fault_lock held. */
static void power_loss_locked(struct io_fault_plan *plan)
{
    if (plan->power_lost)
        return;
    plan->power_lost = true;
    pthread_once(&fault_cond_once, fault_cond_init);
    pthread_cond_broadcast(&fault_cond); /* IF3 */
    struct io_fault_unsynced *u = plan->unsynced;
    if (!u)
        return;
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

void io_fault_stall_release(struct io_fault_plan *plan)
{
    pthread_once(&fault_cond_once, fault_cond_init);
    pthread_mutex_lock(&fault_lock);
    plan->stall_releases++;
    pthread_cond_broadcast(&fault_cond);
    pthread_mutex_unlock(&fault_lock);
}

/* Holds the op that hit a STALL rule (IF1-IF3). Called with fault_lock held; the wait drops it. */
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
            plan->stall_timeouts++; /* IF1 */
            break;
        }
    }
    plan->stalled--;
}

/* Whether the op's file path contains `pattern` (the /proc/self/fd link; false if unreadable). */
static bool op_path_contains(const struct io_op *op, const char *pattern, char *path,
                             size_t path_bytes, bool *resolved)
{
    if (!*resolved) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", op->fd);
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

static void fault_begin_op(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    struct io_fault_plan *plan = fs->plan;
    pthread_mutex_lock(&fault_lock);
    uint64_t n = op->type == IO_OP_WRITE ? ++plan->writes_seen : ++plan->fdatasyncs_seen;
    fs->armed_mode = IO_FAULT_NONE;
    uint32_t rule_count =
        plan->rule_count < IO_FAULT_RULES_MAX ? plan->rule_count : IO_FAULT_RULES_MAX;
    char path[4096];
    bool resolved = false;
    for (uint32_t i = 0; i < rule_count; i++) {
        struct io_fault_rule *rule = &plan->rules[i];
        uint64_t rule_n = n;
        if (rule->path_contains) {
            if (rule->op != op->type ||
                !op_path_contains(op, rule->path_contains, path, sizeof(path), &resolved))
                continue;
            rule_n = ++rule->seen;
        }
        if (rule_matches(rule, op->type, rule_n)) {
            fs->armed_mode = rule->mode;
            fs->armed_error = rule->error > 0 ? rule->error : EIO;
            fs->armed_short_bytes = rule->short_bytes;
            break;
        }
    }
    if (fs->armed_mode == IO_FAULT_STALL) {
        stall_locked(plan); /* IF2: before the op runs; it then runs as a plain op */
        fs->armed_mode = IO_FAULT_NONE;
    }
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
    } else {
        rc = io_sync_fdatasync_plain(NULL, op);
        if (rc == 0)
            forget_file(plan, op->fd);
        if (mode == IO_FAULT_POWER_LOSS) {
            plan->faults_injected++;
            power_loss_locked(plan);
        }
    }
    pthread_mutex_unlock(&fault_lock);
    return rc;
}

int io_fdatasync(struct io_fault_plan *plan, int fd)
{
    if (fd < 0)
        return -EBADF;
    if (!plan)
        return fdatasync(fd) == 0 ? 0 : -errno;
    /* Under the lock, so no tracked write lands between the sync and the forgetting (it would
     * be forgotten unsynced) and power loss never interleaves with it. */
    pthread_mutex_lock(&fault_lock);
    int rc;
    if (plan->power_lost)
        rc = -EIO;
    else if ((rc = fdatasync(fd) == 0 ? 0 : -errno) == 0)
        forget_file(plan, fd);
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
