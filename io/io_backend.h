/*
 * io_backend.h — the seam between io.c (the public functions and the round bookkeeping every
 * backend shares) and the backends that move the bytes: io_uring.c, io_sync.c, io_fault.c; and
 * between io_fs.c (the filesystem calls outside rounds) and the fault injector that wraps them.
 *
 * io.c owns the ring struct, the per-round table of operations (struct io_op), the iovec copies
 * and the buffer of completions waiting to be reaped. A backend owns only its private state
 * (ring->backend) and the rule that each op of a submitted round is completed exactly once,
 * through io_op_complete(). Internal to io/: nothing outside io/ includes this file.
 *
 * Invariants (asserted in io.c):
 *   IO1. ops[0 .. op_count) are the round's operations in queue order; op_count <= queue_depth.
 *   IO2. A round is either queuing (submitted == false) or in flight (submitted == true); new
 *        ops are accepted only while queuing; the round ends (op_count back to 0) when every op
 *        has been reaped.
 *   IO3. Each op completes exactly once; completions pending reap <= op_count.
 *   IO4. For every fd the ops of the round form one chain in queue order
 *        (chain_head/chain_next); a failed op makes every later op of its chain -ECANCELED.
 */
#ifndef RT_IO_BACKEND_H
#define RT_IO_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "io/io.h"

#define IO_NONE UINT32_MAX

/* An op that makes no progress (a write returning 0, -EAGAIN, -EINTR) this many times in a row
 * completes with -EIO (writes returning 0) or its last error, instead of spinning forever. */
#define IO_RETRIES_MAX 64

/* A small iovec array lives inside the op; larger ones are kept in a per-op heap array that
 * only grows, so a steady-state round does not allocate. */
#define IO_OP_IOV_INLINE 8

struct io_op {
    enum io_op_type type;
    int fd;
    uint64_t user_data;
    /* Writes: the part not yet transferred is iov[iov_first .. iov_count) starting at `offset`.
     * io_op_advance() moves this window after a short transfer. */
    uint64_t offset;
    struct iovec *iov;
    unsigned iov_first;
    unsigned iov_count;
    uint64_t bytes_requested;
    uint64_t bytes_done;
    /* Chain of this fd's ops in queue order (IO4). */
    uint32_t chain_head;
    uint32_t chain_next;
    bool chain_failed; /* meaningful on the head: some op of the chain failed for real */
    bool completed;
    /* Backend scratch: the io_uring backend keeps the last CQE result and in-flight counts. */
    int32_t last_res;
    uint32_t inflight; /* on the head: SQEs of this chain not yet reaped */
    uint32_t retries;  /* consecutive attempts without progress */
    unsigned heap_iov_cap;
    struct iovec *heap_iov;
    struct iovec inline_iov[IO_OP_IOV_INLINE];
};

struct io_backend_ops {
    const char *name;
    /* Sets up ring->backend. Returns 0 or -errno. */
    int (*open)(io_ring *ring, const struct io_options *opts);
    void (*close)(io_ring *ring);
    /* Starts (or, for synchronous backends, runs) ops[0 .. op_count). Returns 0 or -errno when
     * nothing could be submitted; then io.c completes every op not yet completed with it. */
    int (*submit)(io_ring *ring);
    /* Blocks until at least `want` completions are buffered (want <= ops not yet completed +
     * completions buffered). Returns 0 or -errno. NULL for backends that complete in submit. */
    int (*wait)(io_ring *ring, unsigned want);
};

struct io_ring {
    const struct io_backend_ops *backend_ops;
    void *backend;
    enum io_kind kind;
    uint32_t queue_depth;
    struct io_op *ops;
    uint32_t op_count;    /* ops in this round */
    uint32_t unreaped;    /* ops of this round not yet reaped */
    uint32_t uncompleted; /* ops of this round not yet completed by the backend */
    bool submitted;
    /* fd -> last op of that fd in this round; open addressing, 2 * queue_depth slots. */
    uint32_t fd_slots;
    int *fd_keys;
    uint32_t *fd_last;
    /* Completions waiting for io_reap: a FIFO of queue_depth entries. */
    struct io_completion *cq;
    uint32_t cq_head;
    uint32_t cq_count;
    uint64_t
        inline_rounds; /* io_uring rounds run by pwritev on the caller (io_ring_inline_rounds) */
    uint64_t inline_synced_rounds; /* of those, rounds that fdatasynced one file */
    uint64_t split_rounds; /* two files synced: one fdatasync on the ring, the rest inline */
};

/* io.c helpers for backends. */
void io_op_complete(io_ring *ring, struct io_op *op, int64_t result);
/* Consumes `bytes` (<= remaining) from the front of a write's iovec window. */
void io_op_advance(struct io_op *op, uint64_t bytes);
static inline uint64_t io_op_remaining(const struct io_op *op)
{
    return op->bytes_requested - op->bytes_done;
}
static inline const struct iovec *io_op_iov(const struct io_op *op)
{
    return op->iov + op->iov_first;
}
static inline unsigned io_op_iov_count(const struct io_op *op)
{
    return op->iov_count - op->iov_first;
}

/* The synchronous executor shared by the sync and fault backends: runs the round in queue order
 * through these hooks. begin_op (optional) is called once per op that is about to execute (not
 * for ops cancelled by an earlier failure of their fd). pwritev writes from the op's current
 * window (io_op_iov) at op->offset and returns bytes (possibly short) or -errno; fdatasync
 * returns 0 or -errno. */
struct io_sync_hooks {
    void (*begin_op)(void *ctx, struct io_op *op);
    ssize_t (*pwritev)(void *ctx, struct io_op *op);
    int (*fdatasync)(void *ctx, struct io_op *op);
};
void io_sync_run_round(io_ring *ring, const struct io_sync_hooks *hooks, void *ctx);
/* One op of the round as io_sync_run_round runs it (-ECANCELED behind a failure of its fd): for
 * the io_uring backend's split rounds, which run all but one op inline. */
void io_sync_run_op(io_ring *ring, struct io_op *op, const struct io_sync_hooks *hooks, void *ctx);
ssize_t io_sync_pwritev_plain(void *ctx, struct io_op *op);
int io_sync_fdatasync_plain(void *ctx, struct io_op *op);
/* The plain hooks (pwritev, fdatasync): the sync backend, and the io_uring backend's inline
 * rounds (IO_UNSYNCED_INLINE in io.h). */
extern const struct io_sync_hooks io_sync_hooks_plain;

/* The filesystem calls outside the rounds (io.h: io_fdatasync and the directory calls). io_fs.c
 * owns their production path and hands a call with a fault plan to its wrapper here, in
 * io_fault.c: the same syscall, counted, under the plan's rules, journaled (plan and paths are
 * not NULL; the flags of io_fault_file_create already carry O_CREAT | O_CLOEXEC). */
struct stat;
int io_fault_fdatasync(struct io_fault_plan *plan, int fd);
int io_fault_file_create(struct io_fault_plan *plan, const char *path, int flags, mode_t mode);
int io_fault_mkdir(struct io_fault_plan *plan, const char *path, mode_t mode);
int io_fault_rmdir(struct io_fault_plan *plan, const char *path);
int io_fault_unlink(struct io_fault_plan *plan, const char *path);
int io_fault_rename(struct io_fault_plan *plan, const char *from, const char *to);
int io_fault_fsync_dir(struct io_fault_plan *plan, const char *dir);
/* fsync(2) of directory `dir`, and its stat (io_fs.c): 0 or -errno. */
int io_fsync_dir_plain(const char *dir, struct stat *st);

extern const struct io_backend_ops io_backend_uring;
extern const struct io_backend_ops io_backend_sync;
extern const struct io_backend_ops io_backend_fault;

#endif /* RT_IO_BACKEND_H */
