/*
 * io_sync.c — the synchronous backend: during io_submit it runs the round on the calling thread
 * in queue order, pwritev loops for writes (short transfers and EINTR continue where they
 * stopped) and fdatasync for syncs, and buffers the completions for io_reap.
 *
 * It is what IO_KIND_AUTO falls back to when io_uring cannot be set up, and the executor the
 * fault injector (io_fault.c) drives through its hooks; the io_uring backend runs its rounds
 * without an fdatasync through it too (IO_UNSYNCED_INLINE in io.h), and those syncing one or
 * two files (IO_SYNCED_INLINE: io_sync_run_op runs a split round's ops but one). Semantics match io_uring.c: each op
 * completes once with its final result; after an op of an fd fails, every later op of that fd in
 * the round completes -ECANCELED (the io_uring backend gets this from IOSQE_IO_LINK). It never
 * includes engine/ headers.
 *
 * Cost: the shard thread blocks for the whole round; writes to different files are not
 * overlapped. That is the price of running where io_uring is forbidden.
 */
#include "io/io_backend.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <unistd.h>

ssize_t io_sync_pwritev_plain(void *ctx, struct io_op *op)
{
    (void)ctx;
    ssize_t n = pwritev(op->fd, io_op_iov(op), (int)io_op_iov_count(op), (off_t)op->offset);
    return n < 0 ? -errno : n;
}

int io_sync_fdatasync_plain(void *ctx, struct io_op *op)
{
    (void)ctx;
    return fdatasync(op->fd) < 0 ? -errno : 0;
}

/* A non-blocking fd said -EAGAIN: wait until it can take bytes instead of spinning. */
static void wait_writable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
}

static int64_t run_write(struct io_op *op, const struct io_sync_hooks *hooks, void *ctx)
{
    int64_t last_error = 0;
    op->retries = 0;
    while (io_op_remaining(op) > 0) {
        if (op->retries >= IO_RETRIES_MAX)
            return last_error < 0 ? last_error : -EIO;
        ssize_t n = hooks->pwritev(ctx, op);
        if (n == -EINTR || n == -EAGAIN || n == 0) {
            op->retries++;
            last_error = n;
            if (n == -EAGAIN)
                wait_writable(op->fd);
            continue;
        }
        if (n < 0)
            return n;
        assert((uint64_t)n <= io_op_remaining(op));
        op->retries = 0;
        io_op_advance(op, (uint64_t)n);
    }
    return (int64_t)op->bytes_requested;
}

static int64_t run_fdatasync(struct io_op *op, const struct io_sync_hooks *hooks, void *ctx)
{
    int rc;
    op->retries = 0;
    do {
        rc = hooks->fdatasync(ctx, op);
    } while (rc == -EINTR && ++op->retries < IO_RETRIES_MAX);
    return rc;
}

void io_sync_run_op(io_ring *ring, struct io_op *op, const struct io_sync_hooks *hooks, void *ctx)
{
    assert(ring->submitted);
    assert(!op->completed);
    if (ring->ops[op->chain_head].chain_failed) {
        io_op_complete(ring, op, -ECANCELED);
        return;
    }
    if (hooks->begin_op)
        hooks->begin_op(ctx, op);
    int64_t result =
        op->type == IO_OP_WRITE ? run_write(op, hooks, ctx) : run_fdatasync(op, hooks, ctx);
    io_op_complete(ring, op, result);
}

void io_sync_run_round(io_ring *ring, const struct io_sync_hooks *hooks, void *ctx)
{
    assert(ring->submitted);
    for (uint32_t i = 0; i < ring->op_count; i++)
        io_sync_run_op(ring, &ring->ops[i], hooks, ctx);
    assert(ring->uncompleted == 0);
}

static int sync_open(io_ring *ring, const struct io_options *opts)
{
    (void)opts;
    ring->backend = NULL;
    return 0;
}

static void sync_close(io_ring *ring)
{
    (void)ring;
}

const struct io_sync_hooks io_sync_hooks_plain = {
    .begin_op = NULL,
    .pwritev = io_sync_pwritev_plain,
    .fdatasync = io_sync_fdatasync_plain,
};

static int sync_submit(io_ring *ring)
{
    io_sync_run_round(ring, &io_sync_hooks_plain, NULL);
    return 0;
}

const struct io_backend_ops io_backend_sync = {
    .name = "sync",
    .open = sync_open,
    .close = sync_close,
    .submit = sync_submit,
    .wait = NULL,
};
