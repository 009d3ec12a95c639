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
 * An `error` of 0 means EIO. It never includes engine/ headers and is meant for tests.
 *
 * Seam for power loss (not implemented yet): the reliability work will record, in
 * fault_state.unsynced, the extents each successful write landed (fd, offset, length, and the
 * bytes they replaced), drop an fd's extents when its fdatasync succeeds, and add a call that
 * restores or discards every extent still recorded — "everything not yet fdatasynced is lost".
 * The hook points are marked POWER-LOSS below.
 */
#include "io/io_backend.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

struct fault_unsynced; /* POWER-LOSS: the extent log, defined by the reliability work */

struct fault_state {
    struct io_fault_plan *plan; /* not owned */
    /* The decision for the op being executed, taken in begin_op. */
    enum io_fault_mode armed_mode;
    int armed_error;
    uint32_t armed_short_bytes;
    struct fault_unsynced *unsynced; /* POWER-LOSS: always NULL for now */
};

static bool rule_matches(const struct io_fault_rule *rule, enum io_op_type type, uint64_t n)
{
    if (rule->op != type || rule->nth == 0)
        return false;
    switch (rule->mode) {
    case IO_FAULT_NONE:
        return false;
    case IO_FAULT_ONCE:
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
    uint64_t n = op->type == IO_OP_WRITE ? ++plan->writes_seen : ++plan->fdatasyncs_seen;
    fs->armed_mode = IO_FAULT_NONE;
    uint32_t rule_count =
        plan->rule_count < IO_FAULT_RULES_MAX ? plan->rule_count : IO_FAULT_RULES_MAX;
    for (uint32_t i = 0; i < rule_count; i++) {
        const struct io_fault_rule *rule = &plan->rules[i];
        if (rule_matches(rule, op->type, n)) {
            fs->armed_mode = rule->mode;
            fs->armed_error = rule->error > 0 ? rule->error : EIO;
            fs->armed_short_bytes = rule->short_bytes;
            return;
        }
    }
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

static ssize_t fault_pwritev(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    enum io_fault_mode mode = fs->armed_mode;
    fs->armed_mode = IO_FAULT_NONE; /* a fault hits the op's first transfer only */
    uint64_t remaining = io_op_remaining(op);
    switch (mode) {
    case IO_FAULT_NONE:
        break;
    case IO_FAULT_ONCE:
    case IO_FAULT_FOREVER:
        fs->plan->faults_injected++;
        return -fs->armed_error;
    case IO_FAULT_SHORT:
        if (fs->armed_short_bytes >= remaining)
            break; /* nothing to cut: a plain full write */
        fs->plan->faults_injected++;
        return pwritev_prefix(op, fs->armed_short_bytes);
    case IO_FAULT_TORN: {
        fs->plan->faults_injected++;
        if (fs->armed_short_bytes < remaining) {
            ssize_t n = pwritev_prefix(op, fs->armed_short_bytes);
            if (n < 0)
                return n;
        } else {
            ssize_t n = io_sync_pwritev_plain(NULL, op);
            if (n < 0)
                return n;
        }
        /* POWER-LOSS: the landed prefix is unsynced data too. */
        return -fs->armed_error;
    }
    }
    /* POWER-LOSS: record the extent [op->offset, +n) before returning. */
    return io_sync_pwritev_plain(NULL, op);
}

static int fault_fdatasync(void *ctx, struct io_op *op)
{
    struct fault_state *fs = ctx;
    enum io_fault_mode mode = fs->armed_mode;
    fs->armed_mode = IO_FAULT_NONE;
    if (mode == IO_FAULT_ONCE || mode == IO_FAULT_FOREVER) {
        fs->plan->faults_injected++;
        return -fs->armed_error;
    }
    /* POWER-LOSS: on success, forget op->fd's recorded extents. */
    return io_sync_fdatasync_plain(NULL, op);
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
    fs->unsynced = NULL;
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
