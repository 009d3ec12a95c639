/*
 * io.h — the only door to the disk's write path: queue writes at offsets, queue an fdatasync
 * ordered after the writes queued before it for the same file, submit the round, reap
 * completions.
 *
 * A ring is owned by one thread (a shard). It knows nothing about records, segments or the
 * engine: it moves bytes to file descriptors and reports what happened, as -errno. It never
 * includes engine/ headers.
 *
 * Backends implement the same small vtable (io_backend.h):
 *   - io_uring (io_uring.c): a whole round goes out in one io_uring_submit; for each file the
 *     round's writes and its fdatasync are chained with IOSQE_IO_LINK so the sync starts only
 *     after the writes completed; short writes and -EAGAIN are requeued internally (with the
 *     file's fdatasync requeued behind them) and never surface as completions.
 *   - sync (io_sync.c): pwritev loops and fdatasync on the calling thread during io_submit.
 *     Chosen automatically when io_uring cannot be set up (EPERM, ENOSYS, ENOMEM), or on request.
 *   - fault (io_fault.c): wraps the sync backend and injects failures by plan (tests).
 *
 * Beside the rings, a few synchronous calls take the fault plan instead of a ring, so the fault
 * injector sees what the engine does outside its rounds: io_fdatasync, and the directory calls
 * (io_file_create, io_rename, io_unlink, io_mkdir, io_rmdir, io_fsync_dir) through which the
 * engine changes and syncs directory entries (the directory-entry model below). They live in
 * io_fs.c: with a NULL plan each is its plain syscall; with a plan io_fault.c wraps it.
 *
 * Round protocol (per ring):
 *     io_queue_write(...) and io_queue_fdatasync(...) any number of times (up to queue depth);
 *     io_submit(ring);
 *     io_reap(ring, ...) until every queued operation has reported exactly one completion.
 * One round at a time: while a submitted round still has unreaped operations, io_queue_* return
 * -EBUSY. Buffers named by a queued write must stay valid and unchanged until that write is
 * reaped.
 *
 * Per-fd ordering and failure: the ops queued for one fd in a round run in queue order. Once one
 * of them fails, every later op of that fd in the round (writes and fdatasyncs alike) completes
 * with -ECANCELED without being executed; other fds are unaffected. All backends behave so.
 */
#ifndef RT_IO_H
#define RT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct io_ring io_ring;

enum io_kind {
    IO_KIND_AUTO = 0,  /* io_uring; sync when io_uring is unavailable */
    IO_KIND_URING = 1, /* io_uring or fail */
    IO_KIND_SYNC = 2,
    IO_KIND_FAULT = 3, /* sync wrapped by the fault injector; needs io_options.fault */
};

/* What a fault rule names. The first two are a ring's ops; the others are the synchronous calls
 * of io/ that take a plan instead of a ring (below), each counted in its own plan counter so that
 * adding a kind never renumbers the ops of an existing plan. */
enum io_op_type {
    IO_OP_WRITE = 0,
    IO_OP_FDATASYNC = 1,
    IO_OP_FDATASYNC_DIRECT = 2, /* io_fdatasync: a seal's, a reopen's, a .txnindex's, the
                                   pre-writer's, a replaced file's */
    IO_OP_DIR_ENTRY = 3,        /* a directory entry changed: io_file_create (when it creates),
                                   io_rename, io_unlink, io_mkdir */
    IO_OP_DIR_FSYNC = 4,        /* io_fsync_dir */
};

/* Fault plan for IO_KIND_FAULT (the reliability work extends this). Counting is per op type,
 * starting at 1 with the first op of that type the ring executes: the injector increments
 * writes_seen / fdatasyncs_seen (direct_fdatasyncs_seen, dir_entries_seen, dir_fsyncs_seen for
 * the synchronous calls) from whatever the plan holds (zero them to restart counting);
 * ops cancelled by an earlier failure are not executed and not counted. The first matching rule
 * wins; SHORT and TORN apply to writes only; an `error` of 0 means EIO. One plan may be shared
 * by several rings (an engine opens one per shard): the injector serialises its bookkeeping. */
enum io_fault_mode {
    IO_FAULT_NONE = 0,
    IO_FAULT_ONCE = 1,       /* the Nth op fails with `error` (doing nothing); later ones
                                succeed */
    IO_FAULT_FOREVER = 2,    /* the Nth op and every later op of that type fail */
    IO_FAULT_SHORT = 3,      /* the Nth write transfers only `short_bytes` (then is requeued) */
    IO_FAULT_TORN = 4,       /* the Nth write lands only its first `short_bytes`, then reports
                                `error`: a torn write */
    IO_FAULT_POWER_LOSS = 5, /* the Nth op (write or fdatasync) runs and reports its own result;
                                then the power is lost: io_fault_power_loss() (below) */
    IO_FAULT_STALL = 6,      /* the Nth op waits, before it runs, until io_fault_stall_release()
                                or a power loss (then it fails with EIO, as every later op), at
                                most plan->stall_timeout_ms (then it runs; stall_timeouts counts
                                it, so a hung test fails instead of hanging): see below */
};

struct io_fault_rule {
    enum io_fault_mode mode;
    enum io_op_type op;
    uint64_t nth; /* 1-based */
    int error;    /* positive errno, e.g. EIO, ENOSPC */
    uint32_t short_bytes;
    /* NULL: the rule sees every op of its type, counted by the plan's counters (above). Else it
     * sees only ops on a file whose path (/proc/self/fd) contains this string, and counts them
     * itself in `seen` (from its value when the rule was added; an op an earlier rule already
     * took is not counted): "the first fdatasync of a file of __transaction_state-3 from now
     * on". For the directory calls it is matched against the path(s) they were given (either
     * of a rename's two). Not owned; must outlive the rings. */
    const char *path_contains;
    uint64_t seen;
};

/* Power loss. With `track_unsynced` set, every byte range a write lands is recorded per file
 * (keyed by device and inode, so a reused fd number never confuses two files) together with
 * the bytes it replaced (read with pread just before the write) and the file's size before the
 * first unsynced write; a successful fdatasync of the file forgets its ranges. Power loss (the
 * call, or an IO_FAULT_POWER_LOSS rule) then undoes every recorded range, newest first, truncates
 * each file back to its size at its last sync, and makes every later op of every ring sharing
 * the plan fail with EIO, as a dead machine would.
 * With `power_loss_keep_sectors`, each unsynced write instead keeps a random prefix of itself in
 * whole 512-byte sectors (file-aligned; 0 .. all of its sectors, drawn from
 * `power_loss_seed`): a partially persisted write, as a disk that lost power mid-flush leaves.
 * Limits: only writes and fdatasyncs that go through io/ (a ring, or io_fdatasync) are seen.
 * Bytes written or files created, preallocated, truncated or synced by plain syscalls are
 * outside the model and count as durable.
 *
 * Directory entries. With `track_dirs` set, the directory calls below (io_file_create when it
 * creates the name, io_rename, io_unlink, io_mkdir, io_rmdir) are journaled in the order they ran, and a
 * successful io_fsync_dir(D) forgets every journaled change of an entry in D (a rename needs
 * both of its directories synced). Power loss, after rolling back the unsynced bytes, undoes
 * every change still journaled, newest first, as ext4 or xfs may after a crash:
 *   - a created file (or directory, with all it holds) is removed;
 *   - a rename is reverted: the file gets its old name back, and a file the rename replaced
 *     comes back under the new name;
 *   - an unlinked file comes back;
 *   - a removed directory comes back, empty.
 * What was replaced or unlinked is kept alive until then by a hard link in the same
 * directory, `.iofault-stash.<n>` (io_unlink renames the file there; io_rename links the
 * victim there first), which the sync that makes the change durable (or io_fault_plan_release)
 * removes. An undo first checks that the name still holds the inode the change left there;
 * when a plain syscall changed it since, that undo is skipped and counted (dir_undo_skipped).
 * Limits: only changes made through these calls are seen. Entries created, renamed or removed
 * by plain syscalls (the offset and time indexes that index/ creates, the data directory
 * itself) are outside the model and count as durable, and so does every directory fsync not
 * made by io_fsync_dir. An fsync of a file is not taken to make its own name durable (POSIX
 * does not promise it; ext4's journal often does): only io_fsync_dir of its directory does. The
 * order between directories is not modelled beyond "newest first": a change survives exactly
 * when its directory was synced after it. Metadata other than names (sizes set by ftruncate or
 * fallocate, modes, times) is not modelled. */
#define IO_FAULT_SECTOR_BYTES 512u
struct io_fault_unsynced; /* private to io_fault.c */
struct io_fault_dirs;     /* private to io_fault.c */
struct io_fault_wb;       /* private to io_fault.c */

#define IO_FAULT_RULES_MAX 8
struct io_fault_plan {
    struct io_fault_rule rules[IO_FAULT_RULES_MAX];
    uint32_t rule_count;
    /* Power-loss options (above). */
    bool track_unsynced;
    bool power_loss_keep_sectors;
    uint64_t power_loss_seed;
    bool track_dirs; /* the directory-entry model (above) */
    /* Writeback errors as Linux reports them (errseq, 4.13+): an injected fdatasync failure
     * (ONCE / FOREVER on IO_OP_FDATASYNC or IO_OP_FDATASYNC_DIRECT) loses the file's unsynced
     * ranges (with track_unsynced) for good (no later sync makes them durable; power loss rolls them back), and the
     * next fdatasync through each *other* descriptor of the file fails with EIO once (after it
     * ran), while the descriptor whose call failed is not told again: an error one caller
     * swallows is then gone for every user of that descriptor. Descriptors are told apart by
     * number (a dup shares the kernel's file and its error state; the injector cannot see
     * that). */
    bool writeback_errors;
    /* Counters the injector updates (readable by tests after the fact). */
    uint64_t writes_seen;
    uint64_t fdatasyncs_seen;
    uint64_t direct_fdatasyncs_seen; /* io_fdatasync calls (IO_OP_FDATASYNC_DIRECT) */
    uint64_t dir_entries_seen;       /* directory-entry changes (IO_OP_DIR_ENTRY) */
    uint64_t dir_fsyncs_seen;        /* io_fsync_dir calls (IO_OP_DIR_FSYNC) */
    uint64_t faults_injected;
    bool power_lost;               /* set by power loss; every op fails with EIO from then on */
    uint64_t unsynced_bytes;       /* bytes currently recorded as written and not yet synced */
    uint64_t rolled_back_bytes;    /* bytes restored to their pre-write contents at power loss */
    uint64_t kept_bytes;           /* unsynced bytes kept by power_loss_keep_sectors */
    uint64_t truncated_files;      /* files cut back to their size at the last sync */
    int power_loss_error;          /* first error while rolling back (-errno), 0 if none */
    uint64_t dir_entries_unsynced; /* journaled directory changes not yet covered by a sync */
    uint64_t dir_entries_undone;   /* directory changes undone at power loss */
    uint64_t dir_undo_skipped;     /* undos skipped: the name no longer held what the change left */
    uint64_t writeback_errors_reported; /* EIOs owed to other descriptors, reported (above) */
    /* Stalls (IO_FAULT_STALL). 0 means 10 000 ms. */
    uint32_t stall_timeout_ms;
    uint32_t stalled;        /* ops waiting in a stall right now */
    uint64_t stalls;         /* ops that entered a stall */
    uint64_t stall_timeouts; /* stalls that ended by their timeout: a test's own failure */
    uint64_t stall_releases; /* io_fault_stall_release() calls */
    /* Private: the record of unsynced writes (NULL until the first tracked write), the
     * journal of unsynced directory changes and the writeback-error state (NULL until used). */
    struct io_fault_unsynced *unsynced;
    struct io_fault_dirs *dirs;
    struct io_fault_wb *wb;
};

/* Loses the power now: restores every unsynced range of every file written through a ring
 * using `plan` (see above), then fails every later op with EIO. Safe to call from any thread
 * while rings use the plan (it waits for an op in progress to finish). Returns 0, or the first
 * -errno met while restoring (also kept in plan->power_loss_error). A second call is a no-op. */
int io_fault_power_loss(struct io_fault_plan *plan);

/* Whether the power is out (a rule fired or io_fault_power_loss ran): plan->power_lost read
 * under the injector's lock, so any thread may ask while rings use the plan. */
bool io_fault_power_is_lost(struct io_fault_plan *plan);

/* plan->faults_injected read under the injector's lock (any thread, while rings use the plan). */
uint64_t io_fault_faults_injected(struct io_fault_plan *plan);

/* Adds a rule while rings use the plan (under the injector's lock, so a shard thread never
 * reads a half-written rule). Returns 0, or -ENOSPC when the plan holds IO_FAULT_RULES_MAX. */
int io_fault_rule_add(struct io_fault_plan *plan, const struct io_fault_rule *rule);
/* Removes every rule while rings use the plan (under the injector's lock): the disk that was
 * full or failing works again (a power loss already suffered stays). */
void io_fault_rules_clear(struct io_fault_plan *plan);

/* Stalls. A stalled op holds up its ring's thread (the fault backend runs a round in order on
 * the thread that submits it) but not the injector: other rings run, and io_fault_power_loss()
 * may be called while the op waits (the stall window: what the engine shows while a write or
 * an fdatasync is in flight). io_fault_stall_wait() waits until at least one op is stalled;
 * 0 or -ETIMEDOUT. io_fault_stall_release() lets every op stalled now run. */
int io_fault_stall_wait(struct io_fault_plan *plan, uint32_t timeout_ms);
void io_fault_stall_release(struct io_fault_plan *plan);
/* plan->stalled read under the injector's lock: ops waiting in a stall now (any thread). */
uint32_t io_fault_stalled_now(struct io_fault_plan *plan);

/* Frees what the plan recorded: the unsynced ranges, and the directory journal (its stash links
 * are removed: the journaled changes stand, as after a clean shutdown). Call once every ring using the plan is
 * closed; the plan can then be reused after zeroing its counters. */
void io_fault_plan_release(struct io_fault_plan *plan);

/* A synchronous fdatasync of fd outside any ring's round, for the syncs the engine makes on
 * threads that own no ring or after the rings closed: a segment's seal (at a roll on the shard
 * thread, at close after the shards stopped), an active segment's reopen, the pre-writer's
 * chunks (segment_pool.c, its own thread), a replaced file's (fsutil.c). It takes the fault
 * plan, not a ring, because it must work from any thread and after io_ring_close: `plan` is
 * the plan the engine's rings were opened with (IO_KIND_FAULT), or NULL for plain
 * fdatasync(2).
 * With a plan: the call is an op of kind IO_OP_FDATASYNC_DIRECT, counted in
 * direct_fdatasyncs_seen (not in fdatasyncs_seen, so the op numbers of plans that name ring
 * fdatasyncs stay as they were), and rules of that kind apply to it: ONCE / FOREVER fail it
 * with their error, syncing nothing; POWER_LOSS runs it, then loses the power; STALL holds it.
 * Once the power is lost it fails with -EIO and syncs nothing (a dead machine); otherwise it
 * runs fdatasync under the injector's lock and, on success, forgets the file's unsynced ranges
 * exactly as a ring's fdatasync does, so power loss later keeps what the call made durable. The
 * lock serialises it with the fault backend's writes, which only a test pays. Thread-safe.
 * Returns 0 or -errno. */
int io_fdatasync(struct io_fault_plan *plan, int fd);

/* Directory calls: the engine's changes of directory entries and its directory fsyncs, so the
 * fault injector sees them (the directory-entry model above; op kinds IO_OP_DIR_ENTRY and
 * IO_OP_DIR_FSYNC, which rules may name like any other). With a NULL plan each is the plain
 * syscall. With a plan, each is counted, consults the rules (ONCE / FOREVER: fails with the
 * rule's error and changes nothing; POWER_LOSS: runs, then the power is lost; STALL), fails
 * with -EIO once the power is lost, and runs under the injector's lock; with track_dirs it is
 * journaled as described above. Thread-safe. All return 0 or -errno, except io_file_create. */
/* open(path, flags | O_CREAT, mode): returns the descriptor (>= 0) or -errno. It is a
 * directory change (counted, journaled) only when the name did not exist. */
int io_file_create(struct io_fault_plan *plan, const char *path, int flags, mode_t mode);
int io_rename(struct io_fault_plan *plan, const char *from, const char *to);
int io_unlink(struct io_fault_plan *plan, const char *path); /* -ENOENT when absent */
int io_mkdir(struct io_fault_plan *plan, const char *path, mode_t mode);
/* rmdir(2) of an empty directory. Journaled with track_dirs: power loss before a sync of its
 * parent brings the directory back, empty (what it held was removed, and made durable, first). */
int io_rmdir(struct io_fault_plan *plan, const char *path);
/* fsync(2) of directory `dir`: every change of its entries made before it is durable. */
int io_fsync_dir(struct io_fault_plan *plan, const char *dir);

/* How the io_uring backend runs a round that holds no fdatasync (sync=none and sync=interval
 * rounds). Buffered writes given to io_uring are handed by the kernel to io-wq worker threads
 * (ext4 cannot finish them without possibly blocking), so a round of plain writes costs a thread
 * hop and a wakeup per round, while pwritev on the submitting thread is one copy into the page
 * cache: through this layer, 1 file, 4 x 256 KiB writev a round, 4.45 GB/s by io_uring against
 * 13.95 GB/s by pwritev (io_uring.c has the figures; bench: W1's limit and limit-pwritev rows).
 * The rule: a round with no fdatasync in it runs inline; a round with one goes to the ring,
 * where the fdatasync of one file overlaps the writes of another. Either way the round keeps
 * the protocol above (one completion per op, per-fd order, -ECANCELED behind a failure). */
enum io_unsynced_rounds {
    IO_UNSYNCED_INLINE = 0, /* default: pwritev on the thread that calls io_submit */
    IO_UNSYNCED_RING = 1,   /* through io_uring, like every other round */
};

/* How the io_uring backend runs a round that fdatasyncs one or two files (sync=always rounds,
 * issue 14 item 6). io_uring's linked write -> fdatasync goes through io-wq workers and costs
 * more than the same calls made here. Measured on this machine (2 vCPU, virtio disk, ext4,
 * shared and loaded; pre-written files, 2000 interleaved rounds per variant, two runs; the
 * harness is in the issue-14 item-6 report, not in tree), p50 in us:
 *                                          4 KiB        8 KiB     16 KiB
 *   1 file: write+fdatasync linked (ring)  259 / 176    279       293 / 176
 *           pwritev + fdatasync here       211 / 159    228       238 / 152
 *   2 files: two linked chains (ring)      397 / 240    378       421 / 289
 *           two in sequence here           439 / 328    471       490 / 307
 *           writes here, one fdatasync on
 *           the ring, the other here       226 (run 2)  328       238 (run 2)
 * The rule (IO_SYNCED_INLINE): a round whose fdatasyncs all name one fd (with any writes, to
 * any files) runs inline, in queue order, on the thread that calls io_submit. A round syncing
 * exactly two fds is split: the writes of the fd of the round's last fdatasync run here, that
 * fdatasync goes to the ring, and the rest of the round runs here while it is in flight (when
 * that fdatasync is not the last op of its fd, or its fd syncs twice, the round keeps the ring).
 * Three or more files keep the ring, whose chains overlap. Either way the round keeps the
 * protocol above (one completion per op, per-fd order, -ECANCELED behind a failure). */
enum io_synced_rounds {
    IO_SYNCED_INLINE = 0, /* default: as above */
    IO_SYNCED_RING = 1,   /* every round holding an fdatasync goes to io_uring */
};

struct io_options {
    enum io_kind kind;
    uint32_t queue_depth;                    /* max operations queued in one round (2 .. 32768) */
    struct io_fault_plan *fault;             /* IO_KIND_FAULT only; the ring does not own it */
    enum io_unsynced_rounds unsynced_rounds; /* io_uring only (above); other backends are inline */
    enum io_synced_rounds synced_rounds;     /* io_uring only (above); other backends are inline */
};

struct io_completion {
    uint64_t user_data; /* as given at queue time */
    int64_t result;     /* bytes written (== requested) for a write, 0 for fdatasync, or -errno */
    enum io_op_type op;
};

/* Creates a ring. With IO_KIND_AUTO, falls back to sync when io_uring_queue_init fails with
 * EPERM, ENOSYS or ENOMEM, or when the kernel's io_uring lacks WRITEV or FSYNC (EOPNOTSUPP).
 * Returns 0 or -errno: -EINVAL for bad options (queue_depth out of range, unknown kind or
 * unsynced_rounds or synced_rounds, IO_KIND_FAULT without a plan), -ENOMEM, and with IO_KIND_URING io_uring's own error
 * (-EPERM, -ENOSYS, -ENOMEM, -EOPNOTSUPP, ...). */
int io_ring_open(const struct io_options *opts, io_ring **out);
void io_ring_close(io_ring *ring);

/* "io_uring", "sync" or "fault". */
const char *io_ring_backend_name(const io_ring *ring);

/* Rounds the io_uring backend ran inline (IO_UNSYNCED_INLINE: by pwritev; with
 * IO_SYNCED_INLINE also those syncing one file, by pwritev and fdatasync) since the ring
 * opened; 0 for the other backends, which run every round inline by nature. For tests and
 * stats. io_ring_inline_synced_rounds counts the second kind alone; io_ring_split_rounds the
 * rounds syncing two files that were split (IO_SYNCED_INLINE), not counted in the others. */
uint64_t io_ring_inline_rounds(const io_ring *ring);
uint64_t io_ring_inline_synced_rounds(const io_ring *ring);
uint64_t io_ring_split_rounds(const io_ring *ring);

/* Queues a write of the iovecs (total length > 0) at `offset` of fd. iov_count <= IOV_MAX; the
 * iovec array itself is copied, the buffers are not. Returns 0, -EBUSY when the round already
 * holds queue_depth operations (or a submitted round is not fully reaped), -EINVAL (bad fd,
 * NULL iov, iov_count 0 or > IOV_MAX, total 0 or > SSIZE_MAX, a NULL base with a length,
 * offset + total beyond INT64_MAX), or -ENOMEM (more than 8 iovecs: the op's slot grows its
 * iovec array once, then reuses it). */
int io_queue_write(io_ring *ring, int fd, const struct iovec *iov, unsigned iov_count,
                   uint64_t offset, uint64_t user_data);

/* Queues an fdatasync of fd that starts only after every write queued for fd earlier in this
 * round has completed. If one of those writes fails, the fdatasync completes with -ECANCELED
 * (and the write reports its own error). Returns 0, -EBUSY or -EINVAL (bad fd). */
int io_queue_fdatasync(io_ring *ring, int fd, uint64_t user_data);

/* Number of operations queued and not yet reaped. */
unsigned io_pending(const io_ring *ring);

/* Submits everything queued. Returns 0 or -errno (a failure to submit at all; the queued ops
 * are then completed with that error by io_reap — the first op of each fd with it, the rest of
 * that fd's ops -ECANCELED). An empty round, or a round already submitted, is a no-op (0).
 * Caveat: on io_uring such a failure leaves the ring failed, and every later round fails with
 * the same error; close the ring and open a new one. */
int io_submit(io_ring *ring);

/* Moves up to `max` completions into out[]. Waits for at least `min` (<= pending) first; with
 * min == 0 it collects what is already finished without blocking. Returns the number moved
 * (>= 0) or -errno: -EINVAL when min > max, out is NULL with max > 0, or min exceeds the
 * submitted, unreaped ops (ops never submitted cannot complete). */
int io_reap(io_ring *ring, struct io_completion *out, unsigned max, unsigned min);

#endif /* RT_IO_H */
