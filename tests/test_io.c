/*
 * test_io.c — the io/ layer on its own: rounds of writes and fdatasyncs over every backend
 * (io_uring, sync, and the fault injector), the errors each call promises, every fault mode
 * (power loss included: unsynced ranges rolled back, sizes restored, torn sectors), real
 * short writes from RLIMIT_FSIZE, and the automatic fallback to sync when a seccomp filter
 * forbids io_uring_setup.
 *
 * The tests loop over the backends themselves (this file does not ask CMake to run it twice).
 * A backend the kernel refuses (io_uring forbidden or absent) is skipped with a message, never
 * failed. Invariants named I<n> are those of io/io_backend.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "io/io.h"

/* test_util.c needs the engine's rt_options_init; while the engine is being written it may not
 * exist yet. The engine's strong definition wins whenever it is linked in. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

#define DEPTH 16

static const enum io_kind all_kinds[] = {IO_KIND_URING, IO_KIND_SYNC, IO_KIND_FAULT};
static const enum io_kind real_kinds[] = {IO_KIND_URING, IO_KIND_SYNC};
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *kind_name(enum io_kind kind)
{
    switch (kind) {
    case IO_KIND_AUTO:
        return "auto";
    case IO_KIND_URING:
        return "io_uring";
    case IO_KIND_SYNC:
        return "sync";
    case IO_KIND_FAULT:
        return "fault";
    }
    return "?";
}

/* Opens a ring of `kind`; returns false (and says so) when the kernel refuses io_uring. */
static bool open_ring(enum io_kind kind, uint32_t depth, struct io_fault_plan *plan, io_ring **out)
{
    static struct io_fault_plan empty_plan;
    struct io_options opts = {.kind = kind, .queue_depth = depth, .fault = plan};
    if (kind == IO_KIND_FAULT && !plan) {
        memset(&empty_plan, 0, sizeof(empty_plan));
        opts.fault = &empty_plan;
    }
    int rc = io_ring_open(&opts, out);
    if (kind == IO_KIND_URING && (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM)) {
        print_message("  io_uring unavailable here (%s): skipping that backend\n", strerror(-rc));
        return false;
    }
    assert_int_equal(rc, 0);
    assert_non_null(*out);
    assert_string_equal(io_ring_backend_name(*out), kind_name(kind));
    return true;
}

static int open_file(const char *dir, const char *name)
{
    char *path = tu_path("%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    free(path);
    return fd;
}

static void fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
}

static void assert_file_equals(int fd, const uint8_t *want, size_t len)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal((size_t)st.st_size, len);
    uint8_t *got = malloc(len + 1);
    assert_non_null(got);
    assert_int_equal(pread(fd, got, len, 0), (ssize_t)len);
    assert_memory_equal(got, want, len);
    free(got);
}

/* Reaps exactly `n` completions (with varied batch sizes) and asserts nothing more is pending. */
static void reap_all(io_ring *ring, struct io_completion *out, unsigned n)
{
    unsigned got = 0;
    while (got < n) {
        unsigned want = n - got < 3 ? n - got : 3;
        int rc = io_reap(ring, out + got, want, 1);
        assert_true(rc >= 1);
        got += (unsigned)rc;
    }
    assert_int_equal(io_pending(ring), 0);
    assert_int_equal(io_reap(ring, out, 1, 0), 0);
}

static const struct io_completion *find(const struct io_completion *c, unsigned n, uint64_t ud)
{
    const struct io_completion *hit = NULL;
    for (unsigned i = 0; i < n; i++) {
        if (c[i].user_data == ud) {
            assert_null(hit); /* exactly one completion per op (IO3) */
            hit = &c[i];
        }
    }
    assert_non_null(hit);
    return hit;
}

static unsigned position_of(const struct io_completion *c, unsigned n, uint64_t ud)
{
    for (unsigned i = 0; i < n; i++) {
        if (c[i].user_data == ud)
            return i;
    }
    fail_msg("no completion for %llu", (unsigned long long)ud);
    return 0;
}

/* ---- open ---- */

static void test_open_einval(void **state)
{
    (void)state;
    io_ring *ring = (io_ring *)0x1;
    struct io_options o = {.kind = IO_KIND_SYNC, .queue_depth = 8};
    assert_int_equal(io_ring_open(NULL, &ring), -EINVAL);
    assert_int_equal(io_ring_open(&o, NULL), -EINVAL);
    o.queue_depth = 1;
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    assert_null(ring);
    o.queue_depth = 0;
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    o.queue_depth = 1u << 20;
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    o.queue_depth = 8;
    o.kind = (enum io_kind)42;
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    o.kind = IO_KIND_FAULT; /* needs a plan */
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    o.kind = IO_KIND_SYNC;
    o.unsynced_rounds = (enum io_unsynced_rounds)7;
    assert_int_equal(io_ring_open(&o, &ring), -EINVAL);
    o.unsynced_rounds = IO_UNSYNCED_INLINE;

    o.kind = IO_KIND_AUTO;
    assert_int_equal(io_ring_open(&o, &ring), 0);
    const char *name = io_ring_backend_name(ring);
    assert_true(strcmp(name, "io_uring") == 0 || strcmp(name, "sync") == 0);
    assert_int_equal(io_pending(ring), 0);
    io_ring_close(ring);
    io_ring_close(NULL);
}

/* ---- rounds ---- */

/* Three files, writes interleaved across them, each file's fdatasync queued after its writes
 * (and one file gets a second write after its sync, then a second sync): every op completes
 * once, each fdatasync after the writes before it (IO4), and the bytes on disk are the bytes
 * queued. */
static void test_multi_file_round(void **state)
{
    (void)state;
    enum { FILES = 3, CHUNK = 256 * 1024, WRITES = 3 };
    uint8_t *data[FILES];
    for (int f = 0; f < FILES; f++) {
        data[f] = malloc((WRITES + 1) * CHUNK);
        assert_non_null(data[f]);
        fill_pattern(data[f], (WRITES + 1) * CHUNK, (uint32_t)f + 7);
    }
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], DEPTH, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fds[FILES];
        char name[16];
        for (int f = 0; f < FILES; f++) {
            snprintf(name, sizeof(name), "f%d", f);
            fds[f] = open_file(dir, name);
        }
        /* ud = 100*file + index; 90+file = first sync, 95+file = second sync. */
        unsigned queued = 0;
        for (int w = 0; w < WRITES; w++) {
            for (int f = 0; f < FILES; f++) {
                struct iovec iov = {data[f] + (size_t)w * CHUNK, CHUNK};
                assert_int_equal(io_queue_write(ring, fds[f], &iov, 1, (uint64_t)w * CHUNK,
                                                (uint64_t)(100 * f + w)),
                                 0);
                queued++;
            }
        }
        for (int f = 0; f < FILES; f++) {
            assert_int_equal(io_queue_fdatasync(ring, fds[f], (uint64_t)(90 + f)), 0);
            queued++;
        }
        struct iovec tail = {data[0] + (size_t)WRITES * CHUNK, CHUNK};
        assert_int_equal(io_queue_write(ring, fds[0], &tail, 1, (uint64_t)WRITES * CHUNK, 3), 0);
        assert_int_equal(io_queue_fdatasync(ring, fds[0], 95), 0);
        queued += 2;
        assert_int_equal(io_pending(ring), queued);
        assert_int_equal(io_submit(ring), 0);
        assert_int_equal(io_pending(ring), queued);

        struct io_completion c[DEPTH];
        reap_all(ring, c, queued);
        for (int f = 0; f < FILES; f++) {
            unsigned sync_pos = position_of(c, queued, (uint64_t)(90 + f));
            const struct io_completion *s = find(c, queued, (uint64_t)(90 + f));
            assert_int_equal(s->op, IO_OP_FDATASYNC);
            assert_int_equal(s->result, 0);
            for (int w = 0; w < WRITES; w++) {
                const struct io_completion *wc = find(c, queued, (uint64_t)(100 * f + w));
                assert_int_equal(wc->op, IO_OP_WRITE);
                assert_int_equal(wc->result, CHUNK);
                assert_true(position_of(c, queued, (uint64_t)(100 * f + w)) < sync_pos);
            }
        }
        assert_int_equal(find(c, queued, 3)->result, CHUNK);
        assert_true(position_of(c, queued, 3) < position_of(c, queued, 95));
        assert_true(position_of(c, queued, 90) < position_of(c, queued, 95));
        assert_int_equal(find(c, queued, 95)->result, 0);

        assert_file_equals(fds[0], data[0], (WRITES + 1) * CHUNK);
        for (int f = 1; f < FILES; f++)
            assert_file_equals(fds[f], data[f], WRITES * CHUNK);

        /* The ring is reusable: a second round on the same fds. */
        struct iovec again = {data[1], 10};
        assert_int_equal(io_queue_write(ring, fds[1], &again, 1, 5, 7), 0);
        assert_int_equal(io_submit(ring), 0);
        assert_int_equal(io_reap(ring, c, DEPTH, 1), 1);
        assert_int_equal(c[0].user_data, 7);
        assert_int_equal(c[0].result, 10);

        for (int f = 0; f < FILES; f++)
            close(fds[f]);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
    for (int f = 0; f < FILES; f++)
        free(data[f]);
}

/* IOV_MAX iovecs of odd sizes in one write (the copied iovec array grows past its inline part);
 * IOV_MAX + 1 is refused. Polls with min == 0 until the write is done. */
static void test_many_iovecs(void **state)
{
    (void)state;
    enum { COUNT = IOV_MAX };
    static struct iovec iov[COUNT + 1];
    size_t total = 0;
    for (int i = 0; i < COUNT + 1; i++)
        total += (size_t)(i % 97) + 1;
    uint8_t *buf = malloc(total);
    assert_non_null(buf);
    fill_pattern(buf, total, 99);
    size_t at = 0;
    for (int i = 0; i < COUNT + 1; i++) {
        iov[i].iov_base = buf + at;
        iov[i].iov_len = (size_t)(i % 97) + 1;
        at += iov[i].iov_len;
    }
    size_t len = total - iov[COUNT].iov_len;
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], 4, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "many");
        assert_int_equal(io_queue_write(ring, fd, iov, COUNT + 1, 0, 1), -EINVAL);
        assert_int_equal(io_queue_write(ring, fd, iov, COUNT, 0, 1), 0);
        assert_int_equal(io_queue_fdatasync(ring, fd, 2), 0);
        assert_int_equal(io_submit(ring), 0);
        struct io_completion c[2];
        unsigned got = 0;
        while (got < 2) {
            int rc = io_reap(ring, c + got, 2 - got, 0);
            assert_true(rc >= 0);
            got += (unsigned)rc;
        }
        assert_int_equal(find(c, 2, 1)->result, (int64_t)len);
        assert_int_equal(find(c, 2, 2)->result, 0);
        assert_file_equals(fd, buf, len);
        close(fd);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
    free(buf);
}

/* A round holds exactly queue_depth ops; one more is -EBUSY; so is queuing while a submitted
 * round is not fully reaped (IO2). After the last reap the ring takes a new round. */
static void test_queue_depth_and_busy(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], 8, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "depth");
        uint8_t buf[8 * 100];
        fill_pattern(buf, sizeof(buf), 3);
        for (unsigned i = 0; i < 7; i++) {
            struct iovec iov = {buf + i * 100, 100};
            assert_int_equal(io_queue_write(ring, fd, &iov, 1, i * 100, i), 0);
        }
        assert_int_equal(io_queue_fdatasync(ring, fd, 7), 0);
        assert_int_equal(io_pending(ring), 8);
        struct iovec extra = {buf, 1};
        assert_int_equal(io_queue_write(ring, fd, &extra, 1, 0, 8), -EBUSY);
        assert_int_equal(io_queue_fdatasync(ring, fd, 8), -EBUSY);
        /* Nothing submitted yet: waiting would hang, so it is refused. */
        struct io_completion c[8];
        assert_int_equal(io_reap(ring, c, 8, 1), -EINVAL);
        assert_int_equal(io_submit(ring), 0);
        assert_int_equal(io_submit(ring), 0); /* nothing new: a no-op */
        assert_int_equal(io_reap(ring, c, 3, 3), 3);
        assert_int_equal(io_pending(ring), 5);
        assert_int_equal(io_queue_write(ring, fd, &extra, 1, 0, 8), -EBUSY);
        assert_int_equal(io_reap(ring, c + 3, 5, 5), 5);
        assert_int_equal(io_pending(ring), 0);
        for (unsigned i = 0; i < 8; i++)
            assert_int_equal(find(c, 8, i)->result, i < 7 ? 100 : 0);
        /* New round. */
        assert_int_equal(io_queue_write(ring, fd, &extra, 1, 0, 9), 0);
        assert_int_equal(io_submit(ring), 0);
        assert_int_equal(io_reap(ring, c, 8, 1), 1);
        assert_file_equals(fd, buf, 700);
        close(fd);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
}

static void test_einval(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], 4, NULL, &ring))
            continue;
        uint8_t b[4] = {1, 2, 3, 4};
        struct iovec ok = {b, 4};
        struct iovec empty[2] = {{b, 0}, {b, 0}};
        struct iovec null_base = {NULL, 4};
        struct iovec huge[2] = {{b, SSIZE_MAX}, {b, 4}};
        assert_int_equal(io_queue_write(NULL, 1, &ok, 1, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, -1, &ok, 1, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, NULL, 1, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, &ok, 0, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, empty, 2, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, &null_base, 1, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, huge, 2, 0, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, &ok, 1, (uint64_t)INT64_MAX - 2, 0), -EINVAL);
        assert_int_equal(io_queue_write(ring, 1, &ok, 1, UINT64_MAX, 0), -EINVAL);
        assert_int_equal(io_queue_fdatasync(ring, -1, 0), -EINVAL);
        assert_int_equal(io_queue_fdatasync(NULL, 1, 0), -EINVAL);
        struct io_completion c[2];
        assert_int_equal(io_reap(ring, c, 1, 2), -EINVAL);    /* min > max */
        assert_int_equal(io_reap(ring, NULL, 1, 0), -EINVAL); /* no room */
        assert_int_equal(io_reap(ring, c, 2, 1), -EINVAL);    /* nothing pending */
        assert_int_equal(io_reap(ring, c, 2, 0), 0);
        assert_int_equal(io_submit(ring), 0); /* empty round */
        assert_int_equal(io_submit(NULL), -EINVAL);
        assert_int_equal(io_reap(NULL, c, 1, 0), -EINVAL);
        assert_int_equal(io_pending(ring), 0); /* nothing refused was queued */
        io_ring_close(ring);
    }
}

/* A write to a closed fd fails with -EBADF from the kernel itself; the fdatasync behind it is
 * -ECANCELED, while another file's chain in the same round is untouched (IO4). */
static void test_bad_fd_cancels_its_chain_only(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_ELEMS(real_kinds); k++) {
        io_ring *ring;
        if (!open_ring(real_kinds[k], 8, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int good = open_file(dir, "good");
        int bad = open_file(dir, "bad");
        close(bad); /* now a closed descriptor number */
        uint8_t b[64];
        fill_pattern(b, sizeof(b), 5);
        struct iovec iov = {b, sizeof(b)};
        assert_int_equal(io_queue_write(ring, bad, &iov, 1, 0, 1), 0);
        assert_int_equal(io_queue_write(ring, good, &iov, 1, 0, 2), 0);
        assert_int_equal(io_queue_write(ring, bad, &iov, 1, 64, 3), 0);
        assert_int_equal(io_queue_fdatasync(ring, bad, 4), 0);
        assert_int_equal(io_queue_fdatasync(ring, good, 5), 0);
        assert_int_equal(io_submit(ring), 0);
        struct io_completion c[5];
        reap_all(ring, c, 5);
        assert_int_equal(find(c, 5, 1)->result, -EBADF);
        assert_int_equal(find(c, 5, 2)->result, 64);
        assert_int_equal(find(c, 5, 3)->result, -ECANCELED);
        assert_int_equal(find(c, 5, 4)->result, -ECANCELED);
        assert_int_equal(find(c, 5, 5)->result, 0);
        assert_file_equals(good, b, sizeof(b));
        close(good);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
}

/* Closing a ring with a submitted, unreaped round waits for the kernel and leaks nothing. */
static void test_close_in_flight(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], 4, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "x");
        static uint8_t big[1 << 20];
        struct iovec iov = {big, sizeof(big)};
        assert_int_equal(io_queue_write(ring, fd, &iov, 1, 0, 1), 0);
        assert_int_equal(io_queue_fdatasync(ring, fd, 2), 0);
        assert_int_equal(io_submit(ring), 0);
        io_ring_close(ring);
        /* And a ring closed with a queued but unsubmitted round. */
        assert_true(open_ring(all_kinds[k], 4, NULL, &ring));
        assert_int_equal(io_queue_write(ring, fd, &iov, 1, 0, 1), 0);
        io_ring_close(ring);
        close(fd);
        tu_rmdir_free(dir);
    }
}

/* ---- real short writes: RLIMIT_FSIZE ---- */

/* With RLIMIT_FSIZE below the end of a write, the kernel writes up to the limit and returns a
 * short count; the rest then fails with -EFBIG (SIGXFSZ ignored). Both backends must take the
 * short-write path (io_uring: the link breaks, the remainder and the cancelled fdatasync are
 * requeued), report -EFBIG for that write and -ECANCELED for the sync behind it, leave exactly
 * the prefix up to the limit on disk, and leave another file's chain alone. */
static void test_rlimit_fsize_short_write(void **state)
{
    (void)state;
    enum { LIMIT = 10000, CHUNK = 4096 };
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_sa;
    assert_int_equal(sigaction(SIGXFSZ, &ign, &old_sa), 0);
    struct rlimit old_rl;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_rl), 0);

    uint8_t data[3 * CHUNK];
    fill_pattern(data, sizeof(data), 11);
    for (size_t k = 0; k < N_ELEMS(real_kinds); k++) {
        io_ring *ring;
        if (!open_ring(real_kinds[k], 8, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "limited");
        int other = open_file(dir, "other");
        struct rlimit rl = {.rlim_cur = LIMIT, .rlim_max = old_rl.rlim_max};
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);

        for (int w = 0; w < 3; w++) {
            /* Two iovecs per write, so the remainder's window starts mid-array. */
            struct iovec iov[2] = {{data + w * CHUNK, 1000},
                                   {data + w * CHUNK + 1000, CHUNK - 1000}};
            assert_int_equal(io_queue_write(ring, fd, iov, 2, (uint64_t)w * CHUNK, (uint64_t)w), 0);
        }
        assert_int_equal(io_queue_fdatasync(ring, fd, 10), 0);
        struct iovec small = {data, 100};
        assert_int_equal(io_queue_write(ring, other, &small, 1, 0, 20), 0);
        assert_int_equal(io_queue_fdatasync(ring, other, 21), 0);
        assert_int_equal(io_submit(ring), 0);
        struct io_completion c[6];
        reap_all(ring, c, 6);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_rl), 0);

        assert_int_equal(find(c, 6, 0)->result, CHUNK);
        assert_int_equal(find(c, 6, 1)->result, CHUNK);
        assert_int_equal(find(c, 6, 2)->result, -EFBIG);
        assert_int_equal(find(c, 6, 10)->result, -ECANCELED);
        assert_int_equal(find(c, 6, 20)->result, 100);
        assert_int_equal(find(c, 6, 21)->result, 0);
        assert_file_equals(fd, data, LIMIT); /* exactly the prefix up to the limit */
        close(fd);
        close(other);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
    assert_int_equal(sigaction(SIGXFSZ, &old_sa, NULL), 0);
}

/* ---- fault injection ---- */

static io_ring *open_fault(struct io_fault_plan *plan)
{
    io_ring *ring;
    assert_true(open_ring(IO_KIND_FAULT, 8, plan, &ring));
    return ring;
}

/* EIO once at the 2nd write: that write fails, the fdatasync behind it is -ECANCELED, the 1st
 * write and the next round succeed; counters say what happened. */
static void test_fault_eio_once(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_ONCE, .op = IO_OP_WRITE, .nth = 2, .error = EIO}},
        .rule_count = 1,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "f");
    uint8_t b[300];
    fill_pattern(b, sizeof(b), 1);
    struct iovec a = {b, 100}, bb = {b + 100, 100}, cc = {b + 200, 100};
    assert_int_equal(io_queue_write(ring, fd, &a, 1, 0, 1), 0);
    assert_int_equal(io_queue_write(ring, fd, &bb, 1, 100, 2), 0);
    assert_int_equal(io_queue_fdatasync(ring, fd, 3), 0);
    assert_int_equal(io_submit(ring), 0);
    struct io_completion c[3];
    reap_all(ring, c, 3);
    assert_int_equal(find(c, 3, 1)->result, 100);
    assert_int_equal(find(c, 3, 2)->result, -EIO);
    assert_int_equal(find(c, 3, 3)->result, -ECANCELED);
    assert_int_equal(find(c, 3, 3)->op, IO_OP_FDATASYNC);
    assert_int_equal(plan.writes_seen, 2);
    assert_int_equal(plan.fdatasyncs_seen, 0); /* cancelled, never executed */
    assert_int_equal(plan.faults_injected, 1);
    assert_file_equals(fd, b, 100);

    assert_int_equal(io_queue_write(ring, fd, &bb, 1, 100, 4), 0);
    assert_int_equal(io_queue_write(ring, fd, &cc, 1, 200, 5), 0);
    assert_int_equal(io_queue_fdatasync(ring, fd, 6), 0);
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, c, 3);
    assert_int_equal(find(c, 3, 4)->result, 100);
    assert_int_equal(find(c, 3, 5)->result, 100);
    assert_int_equal(find(c, 3, 6)->result, 0);
    assert_int_equal(plan.writes_seen, 4);
    assert_int_equal(plan.fdatasyncs_seen, 1);
    assert_int_equal(plan.faults_injected, 1);
    assert_file_equals(fd, b, 300);
    close(fd);
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* ENOSPC forever from the 2nd write on: every later round keeps failing; fdatasyncs of a file
 * whose write failed are cancelled, a file with no writes still syncs. */
static void test_fault_enospc_forever(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_FOREVER, .op = IO_OP_WRITE, .nth = 2, .error = ENOSPC}},
        .rule_count = 1,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "f");
    int idle = open_file(dir, "idle");
    uint8_t b[10] = {0};
    struct iovec iov = {b, sizeof(b)};
    struct io_completion c[3];
    assert_int_equal(io_queue_write(ring, fd, &iov, 1, 0, 1), 0);
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, c, 1);
    assert_int_equal(c[0].result, 10);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(io_queue_write(ring, fd, &iov, 1, 10, 1), 0);
        assert_int_equal(io_queue_fdatasync(ring, fd, 2), 0);
        assert_int_equal(io_queue_fdatasync(ring, idle, 3), 0);
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, 3);
        assert_int_equal(find(c, 3, 1)->result, -ENOSPC);
        assert_int_equal(find(c, 3, 2)->result, -ECANCELED);
        assert_int_equal(find(c, 3, 3)->result, 0);
    }
    assert_int_equal(plan.writes_seen, 4);
    assert_int_equal(plan.faults_injected, 3);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 10);
    close(fd);
    close(idle);
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* A failing fdatasync (EIO once, the 1st) reports its error; a write queued after it on the same
 * fd is -ECANCELED; an error of 0 in a rule means EIO. */
static void test_fault_fdatasync_eio(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_ONCE, .op = IO_OP_FDATASYNC, .nth = 1, .error = 0}},
        .rule_count = 1,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "f");
    uint8_t b[10] = {0};
    struct iovec iov = {b, sizeof(b)};
    assert_int_equal(io_queue_write(ring, fd, &iov, 1, 0, 1), 0);
    assert_int_equal(io_queue_fdatasync(ring, fd, 2), 0);
    assert_int_equal(io_queue_write(ring, fd, &iov, 1, 10, 3), 0);
    assert_int_equal(io_submit(ring), 0);
    struct io_completion c[3];
    reap_all(ring, c, 3);
    assert_int_equal(find(c, 3, 1)->result, 10);
    assert_int_equal(find(c, 3, 2)->result, -EIO);
    assert_int_equal(find(c, 3, 3)->result, -ECANCELED);
    assert_int_equal(plan.fdatasyncs_seen, 1);
    assert_int_equal(plan.faults_injected, 1);
    close(fd);
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* SHORT: the 1st write's first transfer stops after 1500 bytes (mid-iovec); the executor writes
 * the rest, the caller sees one full-size success and the file is exact. A short_bytes beyond
 * the write's size changes nothing. */
static void test_fault_short_write_requeued(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_SHORT, .op = IO_OP_WRITE, .nth = 1, .short_bytes = 1500},
                  {.mode = IO_FAULT_SHORT, .op = IO_OP_WRITE, .nth = 2, .short_bytes = 1u << 30}},
        .rule_count = 2,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "f");
    uint8_t b[5000];
    fill_pattern(b, sizeof(b), 21);
    struct iovec iov[3] = {{b, 1000}, {b + 1000, 1000}, {b + 2000, 2000}};
    struct iovec last = {b + 4000, 1000};
    assert_int_equal(io_queue_write(ring, fd, iov, 3, 0, 1), 0);
    assert_int_equal(io_queue_write(ring, fd, &last, 1, 4000, 2), 0);
    assert_int_equal(io_queue_fdatasync(ring, fd, 3), 0);
    assert_int_equal(io_submit(ring), 0);
    struct io_completion c[3];
    reap_all(ring, c, 3);
    assert_int_equal(find(c, 3, 1)->result, 4000);
    assert_int_equal(find(c, 3, 2)->result, 1000);
    assert_int_equal(find(c, 3, 3)->result, 0);
    assert_int_equal(plan.faults_injected, 1);
    assert_file_equals(fd, b, sizeof(b));
    close(fd);
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* TORN: the 1st write lands exactly its first 1234 bytes (across an iovec boundary), then
 * reports ENOSPC; the fdatasync behind it is -ECANCELED. */
static void test_fault_torn_write(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_TORN,
                   .op = IO_OP_WRITE,
                   .nth = 1,
                   .error = ENOSPC,
                   .short_bytes = 1234}},
        .rule_count = 1,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "f");
    uint8_t b[4096];
    fill_pattern(b, sizeof(b), 31);
    struct iovec iov[2] = {{b, 1000}, {b + 1000, 3096}};
    assert_int_equal(io_queue_write(ring, fd, iov, 2, 0, 1), 0);
    assert_int_equal(io_queue_fdatasync(ring, fd, 2), 0);
    assert_int_equal(io_submit(ring), 0);
    struct io_completion c[2];
    reap_all(ring, c, 2);
    assert_int_equal(find(c, 2, 1)->result, -ENOSPC);
    assert_int_equal(find(c, 2, 2)->result, -ECANCELED);
    assert_int_equal(plan.faults_injected, 1);
    assert_file_equals(fd, b, 1234);
    close(fd);
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* ---- power loss ---- */

/* Runs one round: each write (buf, len, offset) to fd, then an fdatasync when `sync`; returns
 * the results in res[] (writes first, then the sync). */
static void pl_round(io_ring *ring, int fd, const struct iovec *iov, const uint64_t *offsets,
                     unsigned n, bool sync, int64_t *res)
{
    struct io_completion c[8];
    assert_true(n + 1 <= 8);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(io_queue_write(ring, fd, &iov[i], 1, offsets[i], i), 0);
    if (sync)
        assert_int_equal(io_queue_fdatasync(ring, fd, n), 0);
    assert_int_equal(io_submit(ring), 0);
    unsigned total = n + (sync ? 1 : 0);
    reap_all(ring, c, total);
    for (unsigned i = 0; i < total; i++)
        res[i] = find(c, total, i)->result;
}

/* Synced data survives, unsynced data is gone, sizes are restored: file f is synced at 4096
 * bytes, then overwritten in the middle and extended to 6000 without a sync; file g is written
 * and never synced. After io_fault_power_loss f is byte for byte its synced self, g is empty,
 * and every later op fails with EIO. */
static void test_power_loss_drops_unsynced(void **state)
{
    (void)state;
    struct io_fault_plan plan = {.track_unsynced = true};
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    int f = open_file(dir, "f"), g = open_file(dir, "g");
    uint8_t a[4096], b[5000], c[3000];
    fill_pattern(a, sizeof(a), 41);
    fill_pattern(b, sizeof(b), 42);
    fill_pattern(c, sizeof(c), 43);
    int64_t res[8];
    struct iovec iov_a = {a, sizeof(a)};
    pl_round(ring, f, &iov_a, (uint64_t[]){0}, 1, true, res);
    assert_int_equal(res[0], 4096);
    assert_int_equal(res[1], 0);
    assert_int_equal(plan.unsynced_bytes, 0); /* forgotten at the sync */
    struct iovec iov_b[2] = {{b, 2000}, {b + 2000, 3000}};
    pl_round(ring, f, iov_b, (uint64_t[]){1000, 3000}, 2, false, res);
    assert_int_equal(res[0], 2000);
    assert_int_equal(res[1], 3000);
    struct iovec iov_c = {c, sizeof(c)};
    pl_round(ring, g, &iov_c, (uint64_t[]){0}, 1, false, res);
    assert_int_equal(plan.unsynced_bytes, 8000);
    struct stat st;
    assert_int_equal(fstat(f, &st), 0);
    assert_int_equal(st.st_size, 6000);

    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_true(plan.power_lost);
    assert_int_equal(plan.power_loss_error, 0);
    assert_int_equal(plan.unsynced_bytes, 0);
    assert_null(plan.unsynced);
    assert_int_equal(plan.truncated_files, 2);
    assert_file_equals(f, a, sizeof(a));
    assert_file_equals(g, c, 0);

    /* A dead machine: everything fails from now on, on every fd. */
    pl_round(ring, f, &iov_a, (uint64_t[]){0}, 1, true, res);
    assert_int_equal(res[0], -EIO);
    assert_int_equal(res[1], -ECANCELED);
    struct io_completion cq[1];
    assert_int_equal(io_queue_fdatasync(ring, g, 7), 0);
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, cq, 1);
    assert_int_equal(cq[0].result, -EIO);
    assert_file_equals(f, a, sizeof(a));
    assert_int_equal(io_fault_power_loss(&plan), 0); /* a second call is a no-op */
    close(f);
    close(g);
    io_ring_close(ring);
    io_fault_plan_release(&plan);
    tu_rmdir_free(dir);
}

/* IO_FAULT_POWER_LOSS at the Nth op: the op runs and reports its result, then the power goes.
 * At the 3rd write (round 2's second write), round 2's writes are undone and its fdatasync
 * fails with EIO; at the 2nd fdatasync, round 2 was synced and survives whole. */
static void test_power_loss_rule(void **state)
{
    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        struct io_fault_plan plan = {.track_unsynced = true, .rule_count = 1};
        plan.rules[0] =
            variant == 0
                ? (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS, .op = IO_OP_WRITE, .nth = 3}
                : (struct io_fault_rule){
                      .mode = IO_FAULT_POWER_LOSS, .op = IO_OP_FDATASYNC, .nth = 2};
        io_ring *ring = open_fault(&plan);
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "f");
        uint8_t b[3000];
        fill_pattern(b, sizeof(b), 51);
        int64_t res[8];
        struct iovec one = {b, 1000};
        pl_round(ring, fd, &one, (uint64_t[]){0}, 1, true, res);
        assert_int_equal(res[1], 0);
        struct iovec two[2] = {{b + 1000, 1000}, {b + 2000, 1000}};
        pl_round(ring, fd, two, (uint64_t[]){1000, 2000}, 2, true, res);
        assert_int_equal(res[0], 1000);
        assert_int_equal(res[1], 1000); /* the Nth op itself reports what it did */
        assert_true(plan.power_lost);
        if (variant == 0) {
            assert_int_equal(res[2], -EIO);
            assert_file_equals(fd, b, 1000);
        } else {
            assert_int_equal(res[2], 0);
            assert_file_equals(fd, b, 3000);
        }
        pl_round(ring, fd, &one, (uint64_t[]){0}, 1, false, res);
        assert_int_equal(res[0], -EIO);
        close(fd);
        io_ring_close(ring);
        io_fault_plan_release(&plan);
        tu_rmdir_free(dir);
    }
}

/* power_loss_keep_sectors: each unsynced write keeps a seeded random prefix of whole 512-byte
 * sectors (file-aligned) and loses the rest; the same seed gives the same result; over a few
 * seeds both "nothing kept" and "something kept" happen. An unaligned write starting at 700
 * keeps up to a sector boundary (1024, 1536, ...). */
static void test_power_loss_keep_sectors(void **state)
{
    (void)state;
    uint8_t old[8192], neu[8192];
    fill_pattern(old, sizeof(old), 61);
    fill_pattern(neu, sizeof(neu), 62);
    bool saw_none = false, saw_some = false;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        uint64_t kept_first = 0;
        for (int again = 0; again < 2; again++) {
            struct io_fault_plan plan = {
                .track_unsynced = true, .power_loss_keep_sectors = true, .power_loss_seed = seed};
            io_ring *ring = open_fault(&plan);
            char *dir = tu_mkdtemp();
            int fd = open_file(dir, "f");
            int64_t res[4];
            struct iovec iov_old = {old, sizeof(old)};
            pl_round(ring, fd, &iov_old, (uint64_t[]){0}, 1, true, res);
            struct iovec iov_new = {neu + 700, 5000}; /* bytes [700, 5700) */
            pl_round(ring, fd, &iov_new, (uint64_t[]){700}, 1, false, res);
            assert_int_equal(io_fault_power_loss(&plan), 0);
            uint64_t kept = plan.kept_bytes;
            assert_true(kept <= 5000);
            uint64_t keep_end = 700 + kept;
            assert_true(kept == 0 || kept == 5000 || keep_end % IO_FAULT_SECTOR_BYTES == 0);
            assert_int_equal(plan.rolled_back_bytes, 5000 - kept);
            uint8_t want[8192];
            memcpy(want, old, sizeof(want));
            memcpy(want + 700, neu + 700, kept);
            assert_file_equals(fd, want, sizeof(want));
            if (again == 0)
                kept_first = kept;
            else
                assert_int_equal(kept, kept_first); /* seeded: reproducible */
            close(fd);
            io_ring_close(ring);
            io_fault_plan_release(&plan);
            tu_rmdir_free(dir);
        }
        saw_none |= kept_first == 0;
        saw_some |= kept_first > 0;
    }
    assert_true(saw_none);
    assert_true(saw_some);

    /* A write that extended the file keeps its prefix and the file keeps that length. */
    struct io_fault_plan plan = {.track_unsynced = true, .power_loss_keep_sectors = true};
    uint64_t seed = 1;
    for (;; seed++) { /* find a seed that keeps part but not all of a 4-sector append */
        plan = (struct io_fault_plan){
            .track_unsynced = true, .power_loss_keep_sectors = true, .power_loss_seed = seed};
        io_ring *ring = open_fault(&plan);
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "f");
        int64_t res[4];
        struct iovec head = {old, 1024};
        pl_round(ring, fd, &head, (uint64_t[]){0}, 1, true, res);
        struct iovec tail = {neu, 2048};
        pl_round(ring, fd, &tail, (uint64_t[]){1024}, 1, false, res);
        assert_int_equal(io_fault_power_loss(&plan), 0);
        uint64_t kept = plan.kept_bytes;
        uint8_t want[3072];
        memcpy(want, old, 1024);
        memcpy(want + 1024, neu, kept);
        assert_file_equals(fd, want, 1024 + kept);
        close(fd);
        io_ring_close(ring);
        io_fault_plan_release(&plan);
        tu_rmdir_free(dir);
        if (kept > 0 && kept < 2048)
            break;
        assert_true(seed < 64);
    }
}

/* The record follows the file, not the fd number: an fd closed before its data was synced and
 * reused for another file still has its file rolled back, and the new file is untouched. A
 * torn write's landed prefix is unsynced data too. Without track_unsynced, power loss only
 * kills the machine. */
static void test_power_loss_fd_reuse_and_torn(void **state)
{
    (void)state;
    struct io_fault_plan plan = {
        .rules = {{.mode = IO_FAULT_TORN, .op = IO_OP_WRITE, .nth = 3, .short_bytes = 100}},
        .rule_count = 1,
        .track_unsynced = true,
    };
    io_ring *ring = open_fault(&plan);
    char *dir = tu_mkdtemp();
    uint8_t a[600], b[600];
    fill_pattern(a, sizeof(a), 71);
    fill_pattern(b, sizeof(b), 72);
    int64_t res[4];
    int fd = open_file(dir, "first");
    struct iovec iov_a = {a, 300};
    pl_round(ring, fd, &iov_a, (uint64_t[]){0}, 1, true, res); /* write 1, synced */
    struct iovec iov_a2 = {a + 300, 300};
    pl_round(ring, fd, &iov_a2, (uint64_t[]){300}, 1, false, res); /* write 2, unsynced */
    close(fd);
    int fd2 = open_file(dir, "second");
    assert_int_equal(fd2, fd); /* the lowest free number comes back */
    struct iovec iov_b = {b, sizeof(b)};
    pl_round(ring, fd2, &iov_b, (uint64_t[]){0}, 1, true, res); /* write 3: torn at 100 */
    assert_int_equal(res[0], -EIO);
    assert_int_equal(res[1], -ECANCELED);
    assert_int_equal(io_fault_power_loss(&plan), 0);
    char *first = tu_path("%s/first", dir);
    size_t len = 0;
    uint8_t *got = tu_read_file(first, &len);
    assert_int_equal(len, 300);
    assert_memory_equal(got, a, 300);
    free(got);
    free(first);
    struct stat st;
    assert_int_equal(fstat(fd2, &st), 0);
    assert_int_equal(st.st_size, 0); /* the torn prefix was never synced */
    close(fd2);
    io_ring_close(ring);
    io_fault_plan_release(&plan);

    struct io_fault_plan untracked = {0};
    ring = open_fault(&untracked);
    fd = open_file(dir, "third");
    pl_round(ring, fd, &iov_a, (uint64_t[]){0}, 1, false, res);
    assert_int_equal(io_fault_power_loss(&untracked), 0);
    assert_true(untracked.power_lost);
    assert_file_equals(fd, a, 300); /* nothing recorded, nothing undone */
    pl_round(ring, fd, &iov_a, (uint64_t[]){0}, 1, false, res);
    assert_int_equal(res[0], -EIO);
    close(fd);
    io_ring_close(ring);
    io_fault_plan_release(&untracked);
    tu_rmdir_free(dir);
}

/* ---- automatic fallback under seccomp ---- */

/* Makes syscall `nr` fail with `err` for this process from now on. */
static int install_errno_filter(long nr, int err)
{
#if defined(__x86_64__)
    const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
    return -ENOSYS;
#endif
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = N_ELEMS(filter), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return -errno;
    return 0;
}

/* Runs in the child; returns its exit status: 0 = all good, else which check failed. */
static int fallback_child(const char *dir)
{
    if (install_errno_filter(__NR_io_uring_setup, EPERM) != 0)
        return 10;
    io_ring *ring = NULL;
    struct io_options o = {.kind = IO_KIND_URING, .queue_depth = 8};
    if (io_ring_open(&o, &ring) != -EPERM || ring != NULL)
        return 11;
    o.kind = IO_KIND_AUTO;
    if (io_ring_open(&o, &ring) != 0)
        return 12;
    if (strcmp(io_ring_backend_name(ring), "sync") != 0)
        return 13;
    char *path = tu_path("%s/fallback", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    free(path);
    if (fd < 0)
        return 14;
    uint8_t b[777];
    fill_pattern(b, sizeof(b), 41);
    struct iovec iov[2] = {{b, 700}, {b + 700, 77}};
    if (io_queue_write(ring, fd, iov, 2, 0, 1) != 0 || io_queue_fdatasync(ring, fd, 2) != 0 ||
        io_submit(ring) != 0)
        return 15;
    struct io_completion c[2];
    if (io_reap(ring, c, 2, 2) != 2)
        return 16;
    if (c[0].user_data != 1 || c[0].result != 777 || c[1].user_data != 2 || c[1].result != 0)
        return 17;
    uint8_t back[777];
    if (pread(fd, back, sizeof(back), 0) != (ssize_t)sizeof(back) ||
        memcmp(back, b, sizeof(b)) != 0)
        return 18;
    close(fd);
    io_ring_close(ring);
    return 0;
}

static void test_auto_fallback_seccomp(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fallback_child(dir));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 10) {
        print_message("  seccomp filters unavailable: skipping\n");
    } else {
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    tu_rmdir_free(dir);
}

/* A submit the kernel refuses outright (io_uring_enter forbidden after the ring was set up):
 * io_submit returns the error, every op still completes exactly once (the first of each fd with
 * the error, the rest of its chain -ECANCELED), and the ring stays failed for later rounds. */
static int broken_ring_child(const char *dir)
{
    io_ring *ring = NULL;
    /* IO_SYNCED_RING: the first round syncs one file, which would otherwise run inline and
     * never meet the refused io_uring_enter. */
    struct io_options o = {
        .kind = IO_KIND_URING, .queue_depth = 8, .synced_rounds = IO_SYNCED_RING};
    int rc = io_ring_open(&o, &ring);
    if (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM)
        return 20;
    if (rc != 0)
        return 21;
    if (install_errno_filter(__NR_io_uring_enter, ENXIO) != 0)
        return 10;
    char *p1 = tu_path("%s/a", dir), *p2 = tu_path("%s/b", dir);
    int a = open(p1, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int b = open(p2, O_RDWR | O_CREAT | O_TRUNC, 0644);
    free(p1);
    free(p2);
    if (a < 0 || b < 0)
        return 22;
    uint8_t buf[16] = {0};
    struct iovec iov = {buf, sizeof(buf)};
    if (io_queue_write(ring, a, &iov, 1, 0, 1) || io_queue_write(ring, a, &iov, 1, 16, 2) ||
        io_queue_fdatasync(ring, a, 3) || io_queue_write(ring, b, &iov, 1, 0, 4))
        return 23;
    if (io_submit(ring) != -ENXIO)
        return 24;
    struct io_completion c[4];
    if (io_reap(ring, c, 4, 4) != 4 || io_pending(ring) != 0)
        return 25;
    int64_t want[5] = {0, -ENXIO, -ECANCELED, -ECANCELED, -ENXIO};
    for (int i = 0; i < 4; i++) {
        if (c[i].user_data < 1 || c[i].user_data > 4 || c[i].result != want[c[i].user_data])
            return 26;
    }
    /* Sticky: the next round fails the same way, without touching the kernel. */
    if (io_queue_write(ring, b, &iov, 1, 0, 5) || io_queue_fdatasync(ring, b, 6) ||
        io_submit(ring) != -ENXIO)
        return 27;
    if (io_reap(ring, c, 4, 2) != 2 || c[0].user_data != 5 || c[0].result != -ENXIO ||
        c[1].user_data != 6 || c[1].result != -ECANCELED)
        return 28;
    struct stat st;
    if (fstat(a, &st) != 0 || st.st_size != 0)
        return 29;
    close(a);
    close(b);
    io_ring_close(ring);
    return 0;
}

static void test_uring_submit_failure_is_sticky(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(broken_ring_child(dir));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 10 || WEXITSTATUS(status) == 20)
        print_message("  io_uring or seccomp unavailable: skipping\n");
    else
        assert_int_equal(WEXITSTATUS(status), 0);
    tu_rmdir_free(dir);
}

/* ---- io_uring rounds without an fdatasync run inline (IO_UNSYNCED_INLINE) ---- */

/* Opens an io_uring ring with the given rule for unsynced rounds; false when io_uring is
 * unavailable here (skipped with a message). */
static bool open_uring_rule(enum io_unsynced_rounds rule, uint32_t depth, io_ring **out)
{
    struct io_options o = {.kind = IO_KIND_URING, .queue_depth = depth, .unsynced_rounds = rule};
    int rc = io_ring_open(&o, out);
    if (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM) {
        print_message("  io_uring unavailable here (%s): skipping\n", strerror(-rc));
        return false;
    }
    assert_int_equal(rc, 0);
    assert_string_equal(io_ring_backend_name(*out), "io_uring");
    return true;
}

/* The default rule: a round of writes only (two files, several writes each) is written by
 * pwritev during io_submit, so every completion is there before any wait (reap with min 0
 * collects them all) and io_ring_inline_rounds counts it; a round holding an fdatasync goes to
 * the ring and is not counted; IO_UNSYNCED_RING sends every round to the ring; the other
 * backends never count. The bytes on disk are the bytes queued either way. */
static void test_uring_unsynced_round_runs_inline(void **state)
{
    (void)state;
    enum { CHUNK = 64 * 1024, WRITES = 3 };
    static uint8_t data[2][WRITES * CHUNK];
    fill_pattern(data[0], sizeof(data[0]), 31);
    fill_pattern(data[1], sizeof(data[1]), 32);
    const enum io_unsynced_rounds rules[] = {IO_UNSYNCED_INLINE, IO_UNSYNCED_RING};
    for (size_t k = 0; k < N_ELEMS(rules); k++) {
        io_ring *ring;
        if (!open_uring_rule(rules[k], 16, &ring))
            return;
        bool inline_rule = rules[k] == IO_UNSYNCED_INLINE;
        char *dir = tu_mkdtemp();
        int fds[2] = {open_file(dir, "a"), open_file(dir, "b")};
        /* Round 1: writes only, interleaved over the two files, the last ones first. */
        for (int w = WRITES - 1; w >= 0; w--)
            for (int f = 0; f < 2; f++) {
                struct iovec iov = {data[f] + w * CHUNK, CHUNK};
                assert_int_equal(io_queue_write(ring, fds[f], &iov, 1, (uint64_t)w * CHUNK,
                                                (uint64_t)(f * 10 + w)),
                                 0);
            }
        assert_int_equal(io_submit(ring), 0);
        struct io_completion c[2 * WRITES + 2];
        if (inline_rule) {
            assert_int_equal(io_ring_inline_rounds(ring), 1);
            /* Complete when io_submit returned: nothing left to wait for. */
            assert_int_equal(io_reap(ring, c, 2 * WRITES, 0), 2 * WRITES);
            assert_int_equal(io_pending(ring), 0);
        } else {
            reap_all(ring, c, 2 * WRITES);
            assert_int_equal(io_ring_inline_rounds(ring), 0);
        }
        for (int f = 0; f < 2; f++)
            for (int w = 0; w < WRITES; w++)
                assert_int_equal(find(c, 2 * WRITES, (uint64_t)(f * 10 + w))->result, CHUNK);
        /* Round 2: a write and an fdatasync per file: through the ring, in order (IO4). */
        for (int f = 0; f < 2; f++) {
            struct iovec iov = {data[f], CHUNK};
            assert_int_equal(io_queue_write(ring, fds[f], &iov, 1, 0, (uint64_t)f), 0);
            assert_int_equal(io_queue_fdatasync(ring, fds[f], 100 + (uint64_t)f), 0);
        }
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, 4);
        assert_int_equal(io_ring_inline_rounds(ring), inline_rule ? 1 : 0);
        for (int f = 0; f < 2; f++) {
            assert_int_equal(find(c, 4, (uint64_t)f)->result, CHUNK);
            assert_int_equal(find(c, 4, 100 + (uint64_t)f)->result, 0);
            assert_true(position_of(c, 4, (uint64_t)f) < position_of(c, 4, 100 + (uint64_t)f));
            assert_file_equals(fds[f], data[f], sizeof(data[f]));
            close(fds[f]);
        }
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
    /* The other backends run every round inline by nature and never count. */
    const enum io_kind others[] = {IO_KIND_SYNC, IO_KIND_FAULT};
    for (size_t k = 0; k < N_ELEMS(others); k++) {
        io_ring *ring;
        assert_true(open_ring(others[k], 8, NULL, &ring));
        char *dir = tu_mkdtemp();
        int fd = open_file(dir, "x");
        struct iovec iov = {data[0], CHUNK};
        assert_int_equal(io_queue_write(ring, fd, &iov, 1, 0, 1), 0);
        assert_int_equal(io_submit(ring), 0);
        struct io_completion one[1];
        reap_all(ring, one, 1);
        assert_int_equal(io_ring_inline_rounds(ring), 0);
        close(fd);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
}

/* ---- io_uring rounds syncing one or two files run inline (IO_SYNCED_INLINE) ---- */

/* The default rule: a round whose fdatasyncs all name one file (here two writes and an
 * fdatasync of "a", a write of "b" without one) runs as pwritev + fdatasync during io_submit:
 * complete before any wait, counted by io_ring_inline_rounds and io_ring_inline_synced_rounds,
 * a's fdatasync after a's writes. A round syncing two files is split (io_ring_split_rounds),
 * one fdatasync on the ring, and completes in per-fd order. A failure in an inline synced round
 * cancels the rest of its fd's chain, the sync included (IO4), and leaves the other file alone.
 * IO_SYNCED_RING sends every such round to the ring. The bytes on disk are the bytes queued
 * either way. */
static void test_uring_synced_round_one_file_inline(void **state)
{
    (void)state;
    enum { CHUNK = 16 * 1024 };
    static uint8_t data[2][2 * CHUNK];
    fill_pattern(data[0], sizeof(data[0]), 51);
    fill_pattern(data[1], sizeof(data[1]), 52);
    const enum io_synced_rounds rules[] = {IO_SYNCED_INLINE, IO_SYNCED_RING};
    for (size_t k = 0; k < N_ELEMS(rules); k++) {
        struct io_options o = {.kind = IO_KIND_URING, .queue_depth = 16, .synced_rounds = rules[k]};
        io_ring *ring;
        int rc = io_ring_open(&o, &ring);
        if (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM) {
            print_message("  io_uring unavailable here (%s): skipping\n", strerror(-rc));
            return;
        }
        assert_int_equal(rc, 0);
        bool inline_rule = rules[k] == IO_SYNCED_INLINE;
        char *dir = tu_mkdtemp();
        int fds[2] = {open_file(dir, "a"), open_file(dir, "b")};
        /* Round 1: one file synced. */
        struct iovec hi = {data[0] + CHUNK, CHUNK}, lo = {data[0], CHUNK};
        struct iovec other = {data[1], 2 * CHUNK};
        assert_int_equal(io_queue_write(ring, fds[0], &hi, 1, CHUNK, 1), 0);
        assert_int_equal(io_queue_write(ring, fds[1], &other, 1, 0, 2), 0);
        assert_int_equal(io_queue_write(ring, fds[0], &lo, 1, 0, 3), 0);
        assert_int_equal(io_queue_fdatasync(ring, fds[0], 4), 0);
        assert_int_equal(io_submit(ring), 0);
        struct io_completion c[4];
        if (inline_rule) {
            assert_int_equal(io_ring_inline_rounds(ring), 1);
            assert_int_equal(io_ring_inline_synced_rounds(ring), 1);
            assert_int_equal(io_reap(ring, c, 4, 0), 4);
            assert_int_equal(io_pending(ring), 0);
        } else {
            reap_all(ring, c, 4);
            assert_int_equal(io_ring_inline_rounds(ring), 0);
            assert_int_equal(io_ring_inline_synced_rounds(ring), 0);
        }
        assert_int_equal(find(c, 4, 1)->result, CHUNK);
        assert_int_equal(find(c, 4, 2)->result, 2 * CHUNK);
        assert_int_equal(find(c, 4, 3)->result, CHUNK);
        assert_int_equal(find(c, 4, 4)->result, 0);
        assert_true(position_of(c, 4, 1) < position_of(c, 4, 4));
        assert_true(position_of(c, 4, 3) < position_of(c, 4, 4));
        assert_file_equals(fds[0], data[0], sizeof(data[0]));
        assert_file_equals(fds[1], data[1], sizeof(data[1]));
        /* Round 2: two files synced: split under the default rule, not an inline round. */
        for (int f = 0; f < 2; f++) {
            struct iovec iov = {data[f], CHUNK};
            assert_int_equal(io_queue_write(ring, fds[f], &iov, 1, 0, (uint64_t)f), 0);
            assert_int_equal(io_queue_fdatasync(ring, fds[f], 100 + (uint64_t)f), 0);
        }
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, 4);
        assert_int_equal(io_ring_inline_synced_rounds(ring), inline_rule ? 1 : 0);
        assert_int_equal(io_ring_split_rounds(ring), inline_rule ? 1 : 0);
        for (int f = 0; f < 2; f++) {
            assert_int_equal(find(c, 4, (uint64_t)f)->result, CHUNK);
            assert_int_equal(find(c, 4, 100 + (uint64_t)f)->result, 0);
            assert_true(position_of(c, 4, (uint64_t)f) < position_of(c, 4, 100 + (uint64_t)f));
        }
        /* Round 3: the synced file's write fails (not an open fd): its fdatasync is cancelled,
         * the other file's write lands. */
        assert_int_equal(io_queue_write(ring, 9999, &lo, 1, 0, 30), 0);
        assert_int_equal(io_queue_fdatasync(ring, 9999, 31), 0);
        assert_int_equal(io_queue_write(ring, fds[1], &lo, 1, 0, 32), 0);
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, 3);
        assert_int_equal(io_ring_inline_synced_rounds(ring), inline_rule ? 2 : 0);
        assert_int_equal(find(c, 3, 30)->result, -EBADF);
        assert_int_equal(find(c, 3, 31)->result, -ECANCELED);
        assert_int_equal(find(c, 3, 32)->result, CHUNK);
        for (int f = 0; f < 2; f++)
            close(fds[f]);
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
    /* An unknown rule is refused. */
    struct io_options bad = {.kind = IO_KIND_URING, .queue_depth = 8, .synced_rounds = 7};
    io_ring *ring = NULL;
    assert_int_equal(io_ring_open(&bad, &ring), -EINVAL);
    assert_null(ring);
}

/* A split round (two files synced, IO_SYNCED_INLINE): the fdatasync of the round's last synced
 * file goes to the ring, the rest runs inline. Each side keeps IO4: a failed write (not an open
 * fd) cancels its own fdatasync on whichever side it runs, the other file's write and sync
 * succeed, an unsynced third file's write lands. A file synced twice in its chain, or three
 * synced files, keep the ring (no split counted). */
static void test_uring_split_round(void **state)
{
    (void)state;
    enum { CHUNK = 8192 };
    static uint8_t data[3][CHUNK];
    for (int f = 0; f < 3; f++)
        fill_pattern(data[f], CHUNK, 61 + (uint32_t)f);
    io_ring *ring;
    struct io_options o = {.kind = IO_KIND_URING, .queue_depth = 16};
    int rc = io_ring_open(&o, &ring);
    if (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM) {
        print_message("  io_uring unavailable here (%s): skipping\n", strerror(-rc));
        return;
    }
    assert_int_equal(rc, 0);
    char *dir = tu_mkdtemp();
    int fds[3] = {open_file(dir, "a"), open_file(dir, "b"), open_file(dir, "c")};
    struct iovec iov[3] = {{data[0], CHUNK}, {data[1], CHUNK}, {data[2], CHUNK}};
    struct io_completion c[8];
    /* Both files good, plus an unsynced write to c. */
    for (int f = 0; f < 2; f++) {
        assert_int_equal(io_queue_write(ring, fds[f], &iov[f], 1, 0, (uint64_t)f), 0);
        assert_int_equal(io_queue_fdatasync(ring, fds[f], 10 + (uint64_t)f), 0);
    }
    assert_int_equal(io_queue_write(ring, fds[2], &iov[2], 1, 0, 2), 0);
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, c, 5);
    assert_int_equal(io_ring_split_rounds(ring), 1);
    assert_int_equal(io_ring_inline_rounds(ring), 0);
    for (int f = 0; f < 2; f++) {
        assert_int_equal(find(c, 5, (uint64_t)f)->result, CHUNK);
        assert_int_equal(find(c, 5, 10 + (uint64_t)f)->result, 0);
        assert_true(position_of(c, 5, (uint64_t)f) < position_of(c, 5, 10 + (uint64_t)f));
    }
    assert_int_equal(find(c, 5, 2)->result, CHUNK);
    for (int f = 0; f < 3; f++)
        assert_file_equals(fds[f], data[f], CHUNK);
    /* A failing file, first on the inline side (its sync queued first), then on the ring's. */
    for (int side = 0; side < 2; side++) {
        for (int k = 0; k < 2; k++) {
            bool bad = (k == 0) == (side == 0);
            int fd = bad ? 9999 : fds[1];
            uint64_t base = bad ? 20 : 30;
            assert_int_equal(io_queue_write(ring, fd, &iov[1], 1, 0, base), 0);
            assert_int_equal(io_queue_fdatasync(ring, fd, base + 1), 0);
        }
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, 4);
        assert_int_equal(io_ring_split_rounds(ring), 2 + (uint64_t)side);
        assert_int_equal(find(c, 4, 20)->result, -EBADF);
        assert_int_equal(find(c, 4, 21)->result, -ECANCELED);
        assert_int_equal(find(c, 4, 30)->result, CHUNK);
        assert_int_equal(find(c, 4, 31)->result, 0);
        assert_true(position_of(c, 4, 30) < position_of(c, 4, 31));
    }
    /* a synced twice (write, sync, write, sync) as the last synced file: the ring. */
    assert_int_equal(io_queue_write(ring, fds[1], &iov[1], 1, 0, 40), 0);
    assert_int_equal(io_queue_fdatasync(ring, fds[1], 41), 0);
    assert_int_equal(io_queue_write(ring, fds[0], &iov[0], 1, 0, 42), 0);
    assert_int_equal(io_queue_fdatasync(ring, fds[0], 43), 0);
    assert_int_equal(io_queue_write(ring, fds[0], &iov[0], 1, 0, 44), 0);
    assert_int_equal(io_queue_fdatasync(ring, fds[0], 45), 0);
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, c, 6);
    assert_int_equal(io_ring_split_rounds(ring), 3);
    for (uint64_t u = 40; u < 46; u++)
        assert_true(find(c, 6, u)->result >= 0);
    assert_true(position_of(c, 6, 43) < position_of(c, 6, 44));
    assert_true(position_of(c, 6, 44) < position_of(c, 6, 45));
    /* Three synced files: the ring. */
    for (int f = 0; f < 3; f++) {
        assert_int_equal(io_queue_write(ring, fds[f], &iov[f], 1, 0, 50 + (uint64_t)f), 0);
        assert_int_equal(io_queue_fdatasync(ring, fds[f], 60 + (uint64_t)f), 0);
    }
    assert_int_equal(io_submit(ring), 0);
    reap_all(ring, c, 6);
    assert_int_equal(io_ring_split_rounds(ring), 3);
    assert_int_equal(io_ring_inline_rounds(ring), 0);
    for (int f = 0; f < 3; f++) {
        assert_int_equal(find(c, 6, 50 + (uint64_t)f)->result, CHUNK);
        assert_int_equal(find(c, 6, 60 + (uint64_t)f)->result, 0);
        close(fds[f]);
    }
    io_ring_close(ring);
    tu_rmdir_free(dir);
}

/* An inline round keeps the failure rules of the ring (IO4): with RLIMIT_FSIZE inside the second
 * of three writes to one file, the first lands whole, the second reports -EFBIG after its short
 * transfer (the prefix up to the limit stays on disk, as a kernel short write leaves it), the
 * third is -ECANCELED without being executed, and another file's writes in the same round are
 * untouched. A bad fd fails only its own chain. */
static void test_uring_inline_round_failures(void **state)
{
    (void)state;
    enum { LIMIT = 10000, CHUNK = 8192 };
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_sa;
    assert_int_equal(sigaction(SIGXFSZ, &ign, &old_sa), 0);
    struct rlimit old_rl;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_rl), 0);
    static uint8_t data[3 * CHUNK];
    fill_pattern(data, sizeof(data), 41);
    io_ring *ring;
    if (!open_uring_rule(IO_UNSYNCED_INLINE, 8, &ring)) {
        assert_int_equal(sigaction(SIGXFSZ, &old_sa, NULL), 0);
        return;
    }
    char *dir = tu_mkdtemp();
    int fd = open_file(dir, "limited");
    int other = open_file(dir, "other");
    struct rlimit rl = {.rlim_cur = LIMIT, .rlim_max = old_rl.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
    for (int w = 0; w < 3; w++) {
        struct iovec iov = {data + w * CHUNK, CHUNK};
        assert_int_equal(io_queue_write(ring, fd, &iov, 1, (uint64_t)w * CHUNK, (uint64_t)w), 0);
    }
    struct iovec small = {data, 100};
    assert_int_equal(io_queue_write(ring, other, &small, 1, 0, 20), 0);
    assert_int_equal(io_queue_write(ring, 9999, &small, 1, 0, 30), 0); /* not an open fd */
    assert_int_equal(io_queue_write(ring, 9999, &small, 1, 100, 31), 0);
    assert_int_equal(io_submit(ring), 0);
    assert_int_equal(io_ring_inline_rounds(ring), 1);
    struct io_completion c[6];
    assert_int_equal(io_reap(ring, c, 6, 0), 6);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_rl), 0);
    assert_int_equal(find(c, 6, 0)->result, CHUNK);
    assert_int_equal(find(c, 6, 1)->result, -EFBIG);
    assert_int_equal(find(c, 6, 2)->result, -ECANCELED);
    assert_int_equal(find(c, 6, 20)->result, 100);
    assert_int_equal(find(c, 6, 30)->result, -EBADF);
    assert_int_equal(find(c, 6, 31)->result, -ECANCELED);
    assert_file_equals(fd, data, LIMIT);
    assert_file_equals(other, data, 100);
    close(fd);
    close(other);
    io_ring_close(ring);
    tu_rmdir_free(dir);
    assert_int_equal(sigaction(SIGXFSZ, &old_sa, NULL), 0);
}

/* A full round over many files: 32 files x (write + fdatasync) = queue_depth 64 chains of two,
 * then 32 x two writes; every byte lands where it was queued. */
static void test_full_depth_many_files(void **state)
{
    (void)state;
    enum { FILES = 32, DEPTH_BIG = 64, LEN = 3000 };
    static uint8_t data[FILES][2 * LEN];
    for (int f = 0; f < FILES; f++)
        fill_pattern(data[f], 2 * LEN, (uint32_t)f + 100);
    for (size_t k = 0; k < N_ELEMS(all_kinds); k++) {
        io_ring *ring;
        if (!open_ring(all_kinds[k], DEPTH_BIG, NULL, &ring))
            continue;
        char *dir = tu_mkdtemp();
        int fds[FILES];
        char name[16];
        for (int f = 0; f < FILES; f++) {
            snprintf(name, sizeof(name), "p%d", f);
            fds[f] = open_file(dir, name);
            struct iovec iov = {data[f], LEN};
            assert_int_equal(io_queue_write(ring, fds[f], &iov, 1, 0, (uint64_t)f), 0);
            assert_int_equal(io_queue_fdatasync(ring, fds[f], 1000 + (uint64_t)f), 0);
        }
        assert_int_equal(io_pending(ring), DEPTH_BIG);
        assert_int_equal(io_queue_fdatasync(ring, fds[0], 1), -EBUSY);
        assert_int_equal(io_submit(ring), 0);
        static struct io_completion c[DEPTH_BIG];
        assert_int_equal(io_reap(ring, c, DEPTH_BIG, DEPTH_BIG), DEPTH_BIG);
        for (int f = 0; f < FILES; f++) {
            assert_int_equal(find(c, DEPTH_BIG, (uint64_t)f)->result, LEN);
            assert_int_equal(find(c, DEPTH_BIG, 1000 + (uint64_t)f)->result, 0);
            assert_true(position_of(c, DEPTH_BIG, (uint64_t)f) <
                        position_of(c, DEPTH_BIG, 1000 + (uint64_t)f));
        }
        for (int f = FILES - 1; f >= 0; f--) {
            struct iovec lo = {data[f] + LEN, LEN / 2}, hi = {data[f] + LEN + LEN / 2, LEN / 2};
            assert_int_equal(io_queue_write(ring, fds[f], &hi, 1, LEN + LEN / 2, 1), 0);
            assert_int_equal(io_queue_write(ring, fds[f], &lo, 1, LEN, 2), 0);
        }
        assert_int_equal(io_submit(ring), 0);
        reap_all(ring, c, DEPTH_BIG);
        for (int f = 0; f < FILES; f++) {
            assert_file_equals(fds[f], data[f], 2 * LEN);
            close(fds[f]);
        }
        io_ring_close(ring);
        tu_rmdir_free(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_einval),
        cmocka_unit_test(test_multi_file_round),
        cmocka_unit_test(test_many_iovecs),
        cmocka_unit_test(test_queue_depth_and_busy),
        cmocka_unit_test(test_einval),
        cmocka_unit_test(test_bad_fd_cancels_its_chain_only),
        cmocka_unit_test(test_close_in_flight),
        cmocka_unit_test(test_rlimit_fsize_short_write),
        cmocka_unit_test(test_fault_eio_once),
        cmocka_unit_test(test_fault_enospc_forever),
        cmocka_unit_test(test_fault_fdatasync_eio),
        cmocka_unit_test(test_fault_short_write_requeued),
        cmocka_unit_test(test_fault_torn_write),
        cmocka_unit_test(test_power_loss_drops_unsynced),
        cmocka_unit_test(test_power_loss_rule),
        cmocka_unit_test(test_power_loss_keep_sectors),
        cmocka_unit_test(test_power_loss_fd_reuse_and_torn),
        cmocka_unit_test(test_full_depth_many_files),
        cmocka_unit_test(test_auto_fallback_seccomp),
        cmocka_unit_test(test_uring_submit_failure_is_sticky),
        cmocka_unit_test(test_uring_unsynced_round_runs_inline),
        cmocka_unit_test(test_uring_inline_round_failures),
        cmocka_unit_test(test_uring_synced_round_one_file_inline),
        cmocka_unit_test(test_uring_split_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
