/*
 * io.c — the public face of io/: opening a ring (and choosing its backend), the round
 * bookkeeping every backend shares, and the public calls, which validate their arguments and
 * then hand over to the backend's vtable (io_backend.h).
 *
 * It owns the round: the table of queued operations with their copied iovecs, the per-fd
 * chains that order an fdatasync after the writes queued before it (invariant IO4 in
 * io_backend.h), and the FIFO of completions waiting for io_reap. It never talks to the kernel
 * about data itself (that is the backends' job), never includes engine/ headers and knows
 * nothing about what the bytes mean.
 *
 * Costs: queuing is O(1) (an fd hash lookup plus an iovec copy; a write with more than
 * IO_OP_IOV_INLINE iovecs may grow that op's heap array once, after which the slot reuses it).
 * Ending a round clears the fd hash: O(queue_depth).
 */
#include "io/io.h"
#include "io/io_backend.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* io_uring refuses rings larger than this (IORING_MAX_ENTRIES); the same bound for every
 * backend keeps the choice of backend invisible to callers. */
#define IO_QUEUE_DEPTH_MAX 32768u

static uint32_t fd_hash(int fd, uint32_t slots)
{
    /* Knuth's multiplicative hash; slots is a power of two. */
    return ((uint32_t)fd * 2654435761u) & (slots - 1);
}

/* Returns the slot for fd: either the one holding it or the empty one where it belongs. */
static uint32_t fd_slot(const io_ring *ring, int fd)
{
    uint32_t i = fd_hash(fd, ring->fd_slots);
    while (ring->fd_keys[i] != -1 && ring->fd_keys[i] != fd)
        i = (i + 1) & (ring->fd_slots - 1);
    return i;
}

static void round_reset(io_ring *ring)
{
    assert(ring->unreaped == 0);
    assert(ring->cq_count == 0);
    assert(ring->uncompleted == 0);
    ring->op_count = 0;
    ring->submitted = false;
    ring->cq_head = 0;
    memset(ring->fd_keys, 0xff, sizeof(ring->fd_keys[0]) * ring->fd_slots);
}

static const struct io_backend_ops *backend_for(enum io_kind kind)
{
    switch (kind) {
    case IO_KIND_AUTO:
    case IO_KIND_URING:
        return &io_backend_uring;
    case IO_KIND_SYNC:
        return &io_backend_sync;
    case IO_KIND_FAULT:
        return &io_backend_fault;
    }
    return NULL;
}

static void ring_free(io_ring *ring)
{
    if (ring->ops) {
        for (uint32_t i = 0; i < ring->queue_depth; i++)
            free(ring->ops[i].heap_iov);
    }
    free(ring->ops);
    free(ring->fd_keys);
    free(ring->fd_last);
    free(ring->cq);
    free(ring);
}

int io_ring_open(const struct io_options *opts, io_ring **out)
{
    if (!opts || !out)
        return -EINVAL;
    *out = NULL;
    const struct io_backend_ops *backend = backend_for(opts->kind);
    if (!backend)
        return -EINVAL;
    if (opts->queue_depth < 2 || opts->queue_depth > IO_QUEUE_DEPTH_MAX)
        return -EINVAL;
    if (opts->kind == IO_KIND_FAULT && !opts->fault)
        return -EINVAL;
    if (opts->unsynced_rounds != IO_UNSYNCED_INLINE && opts->unsynced_rounds != IO_UNSYNCED_RING)
        return -EINVAL;
    if (opts->synced_rounds != IO_SYNCED_INLINE && opts->synced_rounds != IO_SYNCED_RING)
        return -EINVAL;

    io_ring *ring = calloc(1, sizeof(*ring));
    if (!ring)
        return -ENOMEM;
    ring->kind = opts->kind;
    ring->queue_depth = opts->queue_depth;
    ring->fd_slots = 4;
    while (ring->fd_slots < 2 * opts->queue_depth)
        ring->fd_slots *= 2;
    ring->ops = calloc(opts->queue_depth, sizeof(ring->ops[0]));
    ring->fd_keys = malloc(sizeof(ring->fd_keys[0]) * ring->fd_slots);
    ring->fd_last = malloc(sizeof(ring->fd_last[0]) * ring->fd_slots);
    ring->cq = calloc(opts->queue_depth, sizeof(ring->cq[0]));
    if (!ring->ops || !ring->fd_keys || !ring->fd_last || !ring->cq) {
        ring_free(ring);
        return -ENOMEM;
    }
    round_reset(ring);

    int rc = backend->open(ring, opts);
    if (rc < 0 && opts->kind == IO_KIND_AUTO &&
        (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM || rc == -EOPNOTSUPP)) {
        /* io_uring forbidden (seccomp, io_uring_disabled), absent, or short of locked memory:
         * the synchronous backend gives the same semantics, only slower. */
        backend = &io_backend_sync;
        rc = backend->open(ring, opts);
    }
    if (rc < 0) {
        ring_free(ring);
        return rc;
    }
    ring->backend_ops = backend;
    *out = ring;
    return 0;
}

void io_ring_close(io_ring *ring)
{
    if (!ring)
        return;
    /* The backend waits for anything still in flight: the kernel may still read our iovecs. */
    ring->backend_ops->close(ring);
    ring_free(ring);
}

const char *io_ring_backend_name(const io_ring *ring)
{
    assert(ring);
    assert(ring->backend_ops);
    return ring->backend_ops->name;
}

uint64_t io_ring_inline_rounds(const io_ring *ring)
{
    assert(ring);
    return ring->inline_rounds;
}

uint64_t io_ring_inline_synced_rounds(const io_ring *ring)
{
    assert(ring);
    return ring->inline_synced_rounds;
}

uint64_t io_ring_split_rounds(const io_ring *ring)
{
    assert(ring);
    return ring->split_rounds;
}

static int queue_check(const io_ring *ring, int fd)
{
    if (!ring || fd < 0)
        return -EINVAL;
    if (ring->submitted || ring->op_count == ring->queue_depth)
        return -EBUSY;
    return 0;
}

/* Appends ops[op_count] to its fd's chain and makes it part of the round. */
static void queue_commit(io_ring *ring, struct io_op *op)
{
    uint32_t index = (uint32_t)(op - ring->ops);
    assert(index == ring->op_count);
    uint32_t slot = fd_slot(ring, op->fd);
    if (ring->fd_keys[slot] == -1) {
        ring->fd_keys[slot] = op->fd;
        op->chain_head = index;
    } else {
        struct io_op *last = &ring->ops[ring->fd_last[slot]];
        assert(last->chain_next == IO_NONE);
        last->chain_next = index;
        op->chain_head = last->chain_head;
    }
    ring->fd_last[slot] = index;
    op->chain_next = IO_NONE;
    op->chain_failed = false;
    op->completed = false;
    op->last_res = 0;
    op->inflight = 0;
    op->retries = 0;
    ring->op_count++;
    ring->unreaped++;
    ring->uncompleted++;
    assert(ring->op_count <= ring->queue_depth);
}

int io_queue_write(io_ring *ring, int fd, const struct iovec *iov, unsigned iov_count,
                   uint64_t offset, uint64_t user_data)
{
    int rc = queue_check(ring, fd);
    if (rc < 0)
        return rc;
    if (!iov || iov_count == 0 || iov_count > IOV_MAX)
        return -EINVAL;
    uint64_t total = 0;
    for (unsigned i = 0; i < iov_count; i++) {
        if (iov[i].iov_len > 0 && !iov[i].iov_base)
            return -EINVAL;
        if (iov[i].iov_len > (uint64_t)SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    /* pwritev and io_uring take a signed offset; the end must stay representable. */
    if (total == 0 || offset > (uint64_t)INT64_MAX - total)
        return -EINVAL;

    struct io_op *op = &ring->ops[ring->op_count];
    if (iov_count <= IO_OP_IOV_INLINE) {
        op->iov = op->inline_iov;
    } else {
        if (op->heap_iov_cap < iov_count) {
            struct iovec *grown = realloc(op->heap_iov, sizeof(*grown) * iov_count);
            if (!grown)
                return -ENOMEM;
            op->heap_iov = grown;
            op->heap_iov_cap = iov_count;
        }
        op->iov = op->heap_iov;
    }
    memcpy(op->iov, iov, sizeof(*iov) * iov_count);
    op->type = IO_OP_WRITE;
    op->fd = fd;
    op->user_data = user_data;
    op->offset = offset;
    op->iov_first = 0;
    op->iov_count = iov_count;
    op->bytes_requested = total;
    op->bytes_done = 0;
    queue_commit(ring, op);
    return 0;
}

int io_queue_fdatasync(io_ring *ring, int fd, uint64_t user_data)
{
    int rc = queue_check(ring, fd);
    if (rc < 0)
        return rc;
    struct io_op *op = &ring->ops[ring->op_count];
    op->type = IO_OP_FDATASYNC;
    op->fd = fd;
    op->user_data = user_data;
    op->offset = 0;
    op->iov = op->inline_iov;
    op->iov_first = 0;
    op->iov_count = 0;
    op->bytes_requested = 0;
    op->bytes_done = 0;
    queue_commit(ring, op);
    return 0;
}

unsigned io_pending(const io_ring *ring)
{
    assert(ring);
    return ring->unreaped;
}

void io_op_complete(io_ring *ring, struct io_op *op, int64_t result)
{
    assert(!op->completed);
    assert(ring->uncompleted > 0);
    assert(ring->cq_count < ring->queue_depth);
    /* A write reports all its bytes or an error, never a partial count. */
    assert(op->type != IO_OP_WRITE || result < 0 || (uint64_t)result == op->bytes_requested);
    assert(op->type != IO_OP_FDATASYNC || result <= 0);
    op->completed = true;
    if (result < 0)
        ring->ops[op->chain_head].chain_failed = true;
    ring->uncompleted--;
    uint32_t tail = (ring->cq_head + ring->cq_count) % ring->queue_depth;
    ring->cq[tail] = (struct io_completion){
        .user_data = op->user_data,
        .result = result,
        .op = op->type,
    };
    ring->cq_count++;
}

void io_op_advance(struct io_op *op, uint64_t bytes)
{
    assert(op->type == IO_OP_WRITE);
    assert(bytes <= io_op_remaining(op));
    op->bytes_done += bytes;
    op->offset += bytes;
    while (bytes > 0) {
        assert(op->iov_first < op->iov_count);
        struct iovec *v = &op->iov[op->iov_first];
        if (bytes < v->iov_len) {
            v->iov_base = (char *)v->iov_base + bytes;
            v->iov_len -= bytes;
            bytes = 0;
        } else {
            bytes -= v->iov_len;
            op->iov_first++;
        }
    }
    /* Skip empty iovecs so a finished write has an empty window. */
    while (op->iov_first < op->iov_count && op->iov[op->iov_first].iov_len == 0)
        op->iov_first++;
    assert((op->iov_first == op->iov_count) == (io_op_remaining(op) == 0));
}

int io_submit(io_ring *ring)
{
    if (!ring)
        return -EINVAL;
    if (ring->submitted || ring->op_count == 0)
        return 0;
    ring->submitted = true;
    int rc = ring->backend_ops->submit(ring);
    if (rc < 0) {
        /* Nothing went out: the first op of each fd still owed a completion reports the
         * failure, the rest of its chain is cancelled behind it (IO4). */
        for (uint32_t i = 0; i < ring->op_count; i++) {
            struct io_op *op = &ring->ops[i];
            if (!op->completed)
                io_op_complete(ring, op, ring->ops[op->chain_head].chain_failed ? -ECANCELED : rc);
        }
    }
    assert(rc < 0 || rc == 0);
    return rc;
}

int io_reap(io_ring *ring, struct io_completion *out, unsigned max, unsigned min)
{
    if (!ring || (max > 0 && !out) || min > max)
        return -EINVAL;
    /* Ops that were never submitted cannot complete: waiting for them would hang. */
    unsigned reapable = ring->submitted ? ring->unreaped : 0;
    if (min > reapable)
        return -EINVAL;
    /* Even with min == 0 an asynchronous backend collects what the kernel already finished. */
    if (ring->backend_ops->wait && ring->submitted && ring->uncompleted > 0) {
        int rc = ring->backend_ops->wait(ring, min);
        if (rc < 0)
            return rc;
    }
    assert(ring->cq_count >= min);
    unsigned n = ring->cq_count < max ? ring->cq_count : max;
    for (unsigned i = 0; i < n; i++) {
        out[i] = ring->cq[ring->cq_head];
        ring->cq_head = (ring->cq_head + 1) % ring->queue_depth;
    }
    ring->cq_count -= n;
    ring->unreaped -= n;
    if (ring->submitted && ring->unreaped == 0)
        round_reset(ring);
    return (int)n;
}
