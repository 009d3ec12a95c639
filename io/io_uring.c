/*
 * io_uring.c — the io_uring backend. A round goes to the kernel in one io_uring_submit: for each
 * fd its ops, in queue order, form one IOSQE_IO_LINK chain (write → write → fdatasync → ...), so
 * a file's fdatasync starts only after its writes completed while different files proceed in
 * parallel. It owns the struct io_uring and nothing else; it never includes engine/ headers.
 *
 * Completions. user_data of an SQE is the op's index in the round. A chain is settled only when
 * all its SQEs of the current attempt have produced a CQE; then, in chain order:
 *   - a write that transferred everything completes with bytes_requested;
 *   - a short write (the kernel fails the link on it: later ops come back -ECANCELED), -EAGAIN
 *     or -EINTR is retried: its iovec window is advanced past what landed and it is resubmitted
 *     with every later op of the chain behind it (the fdatasync included), as a new chain;
 *   - any other error completes the op with it and every later op of the chain -ECANCELED.
 * So the caller sees exactly one completion per op and never a partial count.
 *
 * Sizing. Each op has at most one SQE outstanding, so an SQ of queue_depth entries holds every
 * retry and the default CQ (twice the SQ) can never overflow; with IORING_FEAT_NODROP the
 * kernel would buffer overflow anyway. A submit that returns fewer SQEs than prepared is
 * resubmitted; -EAGAIN/-EBUSY (the kernel short of memory or holding overflowed CQEs) reaps
 * completions first. A submit that fails for real leaves the ring broken (sticky): the ops
 * that did not go out complete with that error, and every later round fails with it too.
 *
 * Measured (2024 dev VM, 2 vCPU, virtio disk, kernel 6.18, buffered writes to a 64 MiB
 * preallocated, pre-zeroed file on ext4 under /work; rounds of 4 linked 256 KiB writev, with
 * and without a trailing linked fdatasync; two runs each; /tmp/iobench/bench.c, not in tree):
 *     no fsync, 4000 rounds:   plain fd 4.68 / 4.49 GB/s   fixed file 4.43 / 4.33 GB/s
 *                              fixed buffers (write_fixed) 3.81 / 3.83 GB/s, both 3.87 / 3.86
 *     fdatasync, 400 rounds:   plain 1.46 / 1.65 GB/s      fixed file 1.60 / 1.42 GB/s
 *                              fixed buffers 1.42 / 1.54, both 1.36 / 1.40 GB/s
 * Registered files buy nothing measurable (within the ±10% run-to-run noise) and registered
 * buffers cost ~15% on buffered writes, so neither is used: plain fds, plain writev.
 *
 * Through this layer (io_ring, queue_depth 64, rounds of 4 x 256 KiB per file, two runs;
 * /tmp/iobench/ringbench.c): with a per-file fdatasync, 1 file: io_uring 1.80 / 1.22 GB/s vs
 * sync 1.67 / 0.44; 4 files: io_uring 2.19 / 2.15 vs sync 1.34 / 1.48 (chains of different files
 * overlap). Without fdatasync, 1 file: io_uring 4.45 GB/s vs sync 13.95 GB/s — buffered writes
 * on ext4 are punted to io-wq workers, a pwritev from the page cache is just a copy.
 *
 * Rounds without an fdatasync therefore run inline (IO_UNSYNCED_INLINE, the default; issue 14
 * item 4): uring_submit hands such a round to the synchronous executor (io_sync.c, the plain
 * pwritev hooks) and it is complete when io_submit returns; nothing enters the ring. The rule is
 * by content, not by size: no fdatasync in the round.
 *
 * Synced rounds (IO_SYNCED_INLINE, the default; issue 14 item 6): a linked write -> fdatasync
 * cost 17-52 us more at p50 than pwritev + fdatasync on the submitting thread (io.h has the
 * table), so a round whose fdatasyncs all name one file runs inline too (uring_submit, the same
 * executor). A round syncing two files is split (split_round): the writes of the last synced
 * file run inline, its fdatasync goes to the ring (an io-wq worker runs it), and the rest of
 * the round runs inline while it is in flight — two fdatasyncs in parallel, as the ring's two
 * chains would give, without the linked writes. Three or more files keep the ring, where the
 * chains of different files overlap. A broken ring stays broken for inline rounds too (sticky,
 * as above).
 */
#include "io/io_backend.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <time.h>

struct uring_state {
    struct io_uring uring;
    bool unsynced_inline; /* IO_UNSYNCED_INLINE: rounds without fdatasync run by pwritev */
    bool synced_inline;   /* IO_SYNCED_INLINE: rounds syncing one file run as syscalls */
    uint32_t sqes_out;    /* SQEs prepared and not yet reaped (submitted or not) */
    uint32_t unsubmitted; /* of those, not yet taken by io_uring_submit */
    int broken;           /* 0, or the -errno a failed submit left the ring in (sticky) */
    uint32_t requeue_count;
    uint32_t *requeue; /* chain heads to resubmit; at most one entry per chain */
};

static struct uring_state *state_of(io_ring *ring)
{
    return ring->backend;
}

static void prep_op(struct uring_state *st, io_ring *ring, struct io_op *op, bool link)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&st->uring);
    /* Never NULL: SQEs out <= ops in the round <= queue_depth <= SQ entries. */
    assert(sqe);
    if (op->type == IO_OP_WRITE) {
        assert(io_op_remaining(op) > 0);
        io_uring_prep_writev(sqe, op->fd, io_op_iov(op), io_op_iov_count(op), op->offset);
    } else {
        io_uring_prep_fsync(sqe, op->fd, IORING_FSYNC_DATASYNC);
    }
    if (link)
        sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, (uint64_t)(op - ring->ops));
    ring->ops[op->chain_head].inflight++;
    st->sqes_out++;
    st->unsubmitted++;
    assert(st->sqes_out <= ring->queue_depth);
}

/* Prepares SQEs for every op of the chain not completed yet, linked in chain order. */
static void prep_chain(struct uring_state *st, io_ring *ring, uint32_t head_index)
{
    struct io_op *head = &ring->ops[head_index];
    assert(head->chain_head == head_index);
    assert(head->inflight == 0);
    struct io_op *prev = NULL;
    for (uint32_t i = head_index; i != IO_NONE; i = ring->ops[i].chain_next) {
        struct io_op *op = &ring->ops[i];
        if (op->completed)
            continue;
        if (prev)
            prep_op(st, ring, prev, true);
        prev = op;
    }
    assert(prev);
    prep_op(st, ring, prev, false);
}

static bool is_retryable(int res)
{
    return res == -EAGAIN || res == -EINTR;
}

/* All SQEs of the chain's last attempt are back: complete what is final, requeue the rest. */
static void chain_settle(struct uring_state *st, io_ring *ring, struct io_op *head)
{
    assert(head->inflight == 0);
    bool retry = false;
    uint32_t head_index = (uint32_t)(head - ring->ops);
    for (uint32_t i = head_index; i != IO_NONE; i = ring->ops[i].chain_next) {
        struct io_op *op = &ring->ops[i];
        if (op->completed)
            continue;
        if (head->chain_failed) {
            io_op_complete(ring, op, -ECANCELED);
            continue;
        }
        int res = op->last_res;
        if (op->type == IO_OP_WRITE && res >= 0) {
            assert((uint64_t)res <= io_op_remaining(op));
            io_op_advance(op, (uint64_t)res);
            if (io_op_remaining(op) == 0) {
                io_op_complete(ring, op, (int64_t)op->bytes_requested);
                continue;
            }
            op->retries = res == 0 ? op->retries + 1 : 0; /* short: the remainder goes again */
        } else if (op->type == IO_OP_FDATASYNC && res == 0 && !retry) {
            io_op_complete(ring, op, 0);
            continue;
        } else if (is_retryable(res)) {
            op->retries++;
        } else if (!(retry && (res == -ECANCELED || res == 0))) {
            /* A real failure (or -ECANCELED with nothing before it to blame: report it). */
            io_op_complete(ring, op, res);
            continue;
        }
        if (op->retries >= IO_RETRIES_MAX) {
            io_op_complete(ring, op, res < 0 ? res : -EIO);
            continue;
        }
        retry = true;
    }
    if (retry) {
        assert(st->requeue_count < ring->queue_depth);
        st->requeue[st->requeue_count++] = head_index;
    }
}

static void on_result(struct uring_state *st, io_ring *ring, uint64_t user_data, int res)
{
    assert(user_data < ring->op_count);
    struct io_op *op = &ring->ops[user_data];
    struct io_op *head = &ring->ops[op->chain_head];
    assert(!op->completed);
    assert(head->inflight > 0);
    assert(st->sqes_out > 0);
    op->last_res = res;
    head->inflight--;
    st->sqes_out--;
    if (head->inflight == 0)
        chain_settle(st, ring, head);
}

/* Takes every CQE the kernel has posted. O(CQEs). */
static void drain_cq(struct uring_state *st, io_ring *ring)
{
    struct io_uring_cqe *cqe;
    unsigned cq_head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&st->uring, cq_head, cqe)
    {
        on_result(st, ring, cqe->user_data, cqe->res);
        seen++;
    }
    io_uring_cq_advance(&st->uring, seen);
}

/* Marks the ring broken with `error`: SQEs the kernel never took get `error` as their result. */
static void break_ring(struct uring_state *st, io_ring *ring, int error)
{
    assert(error < 0);
    st->broken = error;
    struct io_uring_sq *sq = &st->uring.sq;
    unsigned khead = io_uring_smp_load_acquire(sq->khead);
    unsigned tail = sq->sqe_tail;
    assert(tail - khead == st->unsubmitted);
    /* They stay in the SQ ring, but the ring is never submitted again. */
    st->unsubmitted = 0;
    for (unsigned i = khead; i != tail; i++) {
        const struct io_uring_sqe *sqe = &sq->sqes[sq->array[i & sq->ring_mask]];
        on_result(st, ring, sqe->user_data, error);
    }
}

static void backoff(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000};
    nanosleep(&ts, NULL);
}

/* Hands every prepared SQE to the kernel. Returns how many it took, or -errno when it took none
 * and the ring is now broken. */
static int flush(struct uring_state *st, io_ring *ring)
{
    int taken = 0;
    unsigned attempts = 0;
    while (st->unsubmitted > 0) {
        int rc = io_uring_submit(&st->uring);
        if (rc > 0) {
            assert((unsigned)rc <= st->unsubmitted);
            st->unsubmitted -= (unsigned)rc;
            taken += rc;
            attempts = 0;
            continue;
        }
        if (rc == 0)
            rc = -EAGAIN;
        if ((rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) && ++attempts < IO_RETRIES_MAX) {
            /* Make room: completions the kernel holds (possibly overflowed) are collected;
             * chains they settle are resubmitted by the caller's loop. */
            if (st->sqes_out > st->unsubmitted) {
                struct io_uring_cqe *cqe;
                int wrc = io_uring_wait_cqe(&st->uring, &cqe);
                if (wrc < 0 && wrc != -EINTR && wrc != -EAGAIN && wrc != -EBUSY)
                    backoff();
                drain_cq(st, ring);
            } else {
                backoff();
            }
            continue;
        }
        break_ring(st, ring, rc);
        return taken > 0 ? taken : rc;
    }
    return taken;
}

/* Resubmits the chains chain_settle asked for (or fails them if the ring is broken). */
static void resubmit(struct uring_state *st, io_ring *ring)
{
    uint32_t n = st->requeue_count;
    st->requeue_count = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t head_index = st->requeue[k];
        if (st->broken) {
            for (uint32_t i = head_index; i != IO_NONE; i = ring->ops[i].chain_next) {
                if (!ring->ops[i].completed)
                    io_op_complete(ring, &ring->ops[i],
                                   ring->ops[head_index].chain_failed ? -ECANCELED : st->broken);
            }
            continue;
        }
        prep_chain(st, ring, head_index);
    }
    if (!st->broken)
        (void)flush(st, ring);
}

static int uring_open(io_ring *ring, const struct io_options *opts)
{
    struct uring_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->requeue = calloc(opts->queue_depth, sizeof(st->requeue[0]));
    if (!st->requeue) {
        free(st);
        return -ENOMEM;
    }
    /* SUBMIT_ALL (5.18) keeps a chain whole even if one SQE fails to initialise; older kernels
     * reject the flag with -EINVAL: retry without. Not COOP_TASKRUN: without TASKRUN_FLAG a
     * poll with io_reap(min = 0) would never enter the kernel to run the deferred completions. */
    struct io_uring_params params = {.flags = IORING_SETUP_SUBMIT_ALL};
    int rc = io_uring_queue_init_params(opts->queue_depth, &st->uring, &params);
    if (rc == -EINVAL) {
        params = (struct io_uring_params){0};
        rc = io_uring_queue_init_params(opts->queue_depth, &st->uring, &params);
    }
    if (rc < 0)
        goto err_free;
    assert(st->uring.sq.ring_entries >= opts->queue_depth);

    /* Probe the two opcodes we use. No probe at all means a 5.1–5.5 kernel, which has both. */
    struct io_uring_probe *probe = io_uring_get_probe_ring(&st->uring);
    if (probe) {
        bool ok = io_uring_opcode_supported(probe, IORING_OP_WRITEV) &&
                  io_uring_opcode_supported(probe, IORING_OP_FSYNC);
        io_uring_free_probe(probe);
        if (!ok) {
            rc = -EOPNOTSUPP;
            goto err_exit;
        }
    }
    st->unsynced_inline = opts->unsynced_rounds == IO_UNSYNCED_INLINE;
    st->synced_inline = opts->synced_rounds == IO_SYNCED_INLINE;
    ring->backend = st;
    return 0;

err_exit:
    io_uring_queue_exit(&st->uring);
err_free:
    free(st->requeue);
    free(st);
    return rc;
}

static void uring_close(io_ring *ring)
{
    struct uring_state *st = state_of(ring);
    /* Let everything the kernel holds finish: it may still read our iovec copies. Nothing new is
     * submitted (a pseudo-broken ring fails requeues instead). */
    if (!st->broken)
        st->broken = -ECANCELED;
    resubmit(st, ring);
    while (st->sqes_out > 0) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&st->uring, &cqe);
        if (rc < 0 && rc != -EINTR)
            break; /* nothing sane left to do; the kernel cancels on exit */
        drain_cq(st, ring);
        resubmit(st, ring);
    }
    io_uring_queue_exit(&st->uring);
    free(st->requeue);
    free(st);
    ring->backend = NULL;
}

/* How many distinct fds the round fdatasyncs: 0, 1, 2, or 3 meaning "three or more"; *last_sync
 * is the index of the last fdatasync of the round (IO_NONE without one). O(ops). */
static unsigned round_synced_fds(const io_ring *ring, uint32_t *last_sync)
{
    int seen[2] = {-1, -1};
    unsigned count = 0;
    *last_sync = IO_NONE;
    for (uint32_t i = 0; i < ring->op_count; i++) {
        const struct io_op *op = &ring->ops[i];
        if (op->type != IO_OP_FDATASYNC)
            continue;
        *last_sync = i;
        if (op->fd == seen[0] || op->fd == seen[1])
            continue;
        if (count == 2)
            return 3;
        seen[count++] = op->fd;
    }
    return count;
}

/* A round syncing two files, split (IO_SYNCED_INLINE): the writes of the file of the round's
 * last fdatasync run here, that fdatasync goes to the ring (an io-wq worker runs it), and the
 * rest of the round (the other file's writes and fdatasync, any unsynced writes) runs here
 * meanwhile: two fdatasyncs in parallel without the ring's linked writes (io.h has the
 * figures). Only when that fdatasync ends its fd's chain, so nothing of its fd waits behind it;
 * false (nothing done) otherwise. Per-fd queue order and IO4 hold: each fd's ops run in order,
 * on one side. The ring's op completes through uring_wait like any chain's. */
static bool split_round(struct uring_state *st, io_ring *ring, uint32_t ring_index)
{
    struct io_op *sync_op = &ring->ops[ring_index];
    assert(sync_op->type == IO_OP_FDATASYNC);
    if (sync_op->chain_next != IO_NONE)
        return false;
    const int fd = sync_op->fd;
    for (uint32_t i = sync_op->chain_head; i != ring_index; i = ring->ops[i].chain_next) {
        if (ring->ops[i].type != IO_OP_WRITE)
            return false; /* an earlier fdatasync of the same file: keep it simple, the ring */
    }
    for (uint32_t i = sync_op->chain_head; i != ring_index; i = ring->ops[i].chain_next)
        io_sync_run_op(ring, &ring->ops[i], &io_sync_hooks_plain, NULL);
    if (ring->ops[sync_op->chain_head].chain_failed) {
        io_op_complete(ring, sync_op, -ECANCELED);
    } else {
        prep_op(st, ring, sync_op, false);
        if (flush(st, ring) < 0)
            return true; /* broken now: the op completed with the error (break_ring) */
    }
    for (uint32_t i = 0; i < ring->op_count; i++) {
        if (ring->ops[i].fd != fd)
            io_sync_run_op(ring, &ring->ops[i], &io_sync_hooks_plain, NULL);
    }
    return true;
}

static int uring_submit(io_ring *ring)
{
    struct uring_state *st = state_of(ring);
    if (st->broken)
        return st->broken;
    assert(st->sqes_out == 0);
    assert(st->requeue_count == 0);
    uint32_t last_sync;
    unsigned synced_fds = round_synced_fds(ring, &last_sync);
    if (synced_fds == 2 && st->synced_inline && split_round(st, ring, last_sync)) {
        ring->split_rounds++;
        return st->broken < 0 ? st->broken : 0;
    }
    if ((synced_fds == 0 && st->unsynced_inline) || (synced_fds == 1 && st->synced_inline)) {
        /* Buffered writes only: a copy into the page cache on this thread beats a hop to an
         * io-wq worker; one file's fdatasync: the syscall here beats the linked SQE (see the
         * top of the file). Completes every op before returning. */
        io_sync_run_round(ring, &io_sync_hooks_plain, NULL);
        assert(ring->uncompleted == 0);
        ring->inline_rounds++;
        if (synced_fds == 1)
            ring->inline_synced_rounds++;
        return 0;
    }
    for (uint32_t i = 0; i < ring->op_count; i++) {
        if (ring->ops[i].chain_head == i)
            prep_chain(st, ring, i);
    }
    int rc = flush(st, ring);
    return rc < 0 ? rc : 0;
}

static int uring_wait(io_ring *ring, unsigned want)
{
    struct uring_state *st = state_of(ring);
    for (;;) {
        drain_cq(st, ring);
        if (st->requeue_count > 0) {
            resubmit(st, ring);
            continue;
        }
        if (ring->cq_count >= want || ring->uncompleted == 0)
            return 0;
        /* Something is owed, so something is in the kernel. */
        assert(st->sqes_out > 0);
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&st->uring, &cqe);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
            return rc;
    }
}

const struct io_backend_ops io_backend_uring = {
    .name = "io_uring",
    .open = uring_open,
    .close = uring_close,
    .submit = uring_submit,
    .wait = uring_wait,
};
