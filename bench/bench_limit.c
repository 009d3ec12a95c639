/*
 * bench_limit.c — what the machine itself can do, measured in the same run as ringtail:
 *   - the write limit: the same chunks (each the size of one of ringtail's encoded batches)
 *     written with the same number of fdatasyncs ringtail issued, so any gap is the engine's own
 *     cost and not the disk's, in each of the ways this machine could do that work (issue 27
 *     item 1; bench_main.c's limit_group runs them all and keeps the best as the limit):
 *       - io_uring, linked: each round's writes to a file and its fdatasync as one
 *         IOSQE_IO_LINK chain, as ringtail's io_uring backend issues them (limit_write, linked);
 *       - io_uring, unlinked: the round's writes submitted and reaped, then the fdatasyncs
 *         (limit_write);
 *       - pwritev on the calling thread: each round's share of one file as one pwritev, then an
 *         fdatasync of every file (limit_write_pwritev; issue 14 item 4: io_uring hands small
 *         buffered writes to kernel io-wq workers, which can be slower than the syscall);
 *       - pwritev per file in parallel: one thread per file, each its own rounds of its share
 *         (pwritev then fdatasync), independent of the others, as shards and partitions run
 *         their rounds independently (limit_write_parallel; W2 with more than one file);
 *     each into files whose blocks were already written (zeroes, fdatasynced before the clock
 *     starts: an fdatasync then commits data only, as an overwrite does) and into fallocate'd
 *     files (unwritten extents: each fdatasync also commits extent metadata).
 *   - the read limit: memory read bandwidth of the same checksum loop R1 runs over values.
 * It never touches the engine. Costs: one io_uring_enter per batch of writes and one per round of
 * fdatasyncs (pwritev: one call per file per round, split past IOV_MAX, and one fdatasync per
 * file per round); the buffer is reused for every chunk (the page cache copy is what is
 * measured).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define LIMIT_FILES_MAX 64
#define LIMIT_RING      1024
#define LIMIT_IOV_MAX   1024 /* IOV_MAX on Linux */

struct limit_state {
    struct io_uring ring;
    int fds[LIMIT_FILES_MAX];
    uint64_t pos[LIMIT_FILES_MAX];
    const uint8_t *buf;
    size_t chunk_bytes;
    unsigned inflight;
};

/* Reaps every in-flight completion; a short write is finished with pwrite (rare when buffered). */
static int reap_all(struct limit_state *st)
{
    int err = 0;
    while (st->inflight > 0) {
        struct io_uring_cqe *cqe = NULL;
        int rc = io_uring_wait_cqe(&st->ring, &cqe);
        if (rc < 0)
            return rc;
        uint64_t ud = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&st->ring, cqe);
        st->inflight--;
        if (res < 0) {
            err = res;
            continue;
        }
        if (ud != UINT64_MAX && (size_t)res < st->chunk_bytes) {
            uint32_t f = (uint32_t)(ud >> 48);
            uint64_t at = ud & ((1ull << 48) - 1);
            ssize_t n = pwrite(st->fds[f], st->buf + res, st->chunk_bytes - (size_t)res,
                               (off_t)(at + (uint64_t)res));
            if (n != (ssize_t)(st->chunk_bytes - (size_t)res))
                err = n < 0 ? -errno : -EIO;
        }
    }
    return err;
}

static struct io_uring_sqe *get_sqe(struct limit_state *st)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&st->ring);
    if (!sqe) {
        io_uring_submit(&st->ring);
        sqe = io_uring_get_sqe(&st->ring);
    }
    return sqe;
}

static int queue_write(struct limit_state *st, uint32_t f)
{
    if (st->inflight >= LIMIT_RING) {
        int rc = reap_all(st);
        if (rc)
            return rc;
    }
    struct io_uring_sqe *sqe = get_sqe(st);
    if (!sqe)
        return -EBUSY;
    io_uring_prep_write(sqe, st->fds[f], st->buf, (unsigned)st->chunk_bytes, st->pos[f]);
    io_uring_sqe_set_data64(sqe, ((uint64_t)f << 48) | st->pos[f]);
    st->pos[f] += st->chunk_bytes;
    st->inflight++;
    return 0;
}

/* Writes zeroes over [0, bytes) of fd and fdatasyncs it: every block written, none unwritten. */
static int prewrite(int fd, uint64_t bytes)
{
    static const uint8_t zero[1 << 20];
    for (uint64_t at = 0; at < bytes;) {
        size_t n = bytes - at < sizeof(zero) ? (size_t)(bytes - at) : sizeof(zero);
        ssize_t w = pwrite(fd, zero, n, (off_t)at);
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        at += (uint64_t)w;
    }
    return fdatasync(fd) == 0 ? 0 : -errno;
}

/* Creates dir/limit-<f>.dat for f < files, each pre-written (zeroes, fdatasynced) or
 * fallocate'd to per_file bytes. Returns 0 or -errno (fds opened so far stay in fds[]). */
static int limit_files_open(const char *dir, uint32_t files, uint64_t per_file, bool prewritten,
                            int *fds)
{
    int rc = 0;
    for (uint32_t f = 0; f < files && rc == 0; f++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/limit-%u.dat", dir, f);
        fds[f] = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
        /* (a pre-written file is written again from offset 0: overwrites of written blocks) */
        if (fds[f] < 0)
            rc = -errno;
        else if (prewritten)
            rc = prewrite(fds[f], per_file);
        else if (fallocate(fds[f], 0, 0, (off_t)per_file) != 0)
            rc = -errno;
    }
    return rc;
}

/* Writes `n` chunks (the same buffer each) at *pos of fd with pwritev, IOV_MAX iovecs a call at
 * most, finishing short transfers. Returns 0 or -errno. */
static int pwritev_chunks(int fd, uint64_t *pos, const uint8_t *buf, size_t chunk_bytes, uint64_t n,
                          struct iovec *iov)
{
    while (n > 0) {
        unsigned k = n < LIMIT_IOV_MAX ? (unsigned)n : LIMIT_IOV_MAX;
        for (unsigned i = 0; i < k; i++)
            iov[i] = (struct iovec){.iov_base = (void *)buf, .iov_len = chunk_bytes};
        uint64_t want = (uint64_t)k * chunk_bytes, done = 0;
        struct iovec *v = iov;
        unsigned left = k;
        while (done < want) {
            ssize_t w = pwritev(fd, v, (int)left, (off_t)(*pos + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -EIO;
            done += (uint64_t)w;
            /* Skip what landed: whole iovecs, then into the next one. */
            size_t adv = (size_t)w;
            while (left > 0 && adv >= v->iov_len) {
                adv -= v->iov_len;
                v++;
                left--;
            }
            if (left > 0) {
                v->iov_base = (uint8_t *)v->iov_base + adv;
                v->iov_len -= adv;
            }
        }
        *pos += want;
        n -= k;
    }
    return 0;
}

int limit_write_pwritev(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                        uint64_t syncs, uint32_t queue_depth, bool prewritten,
                        struct limit_result *out)
{
    if (files == 0 || files > LIMIT_FILES_MAX || chunk_bytes == 0 || queue_depth == 0)
        return -EINVAL;
    int fds[LIMIT_FILES_MAX];
    uint64_t pos[LIMIT_FILES_MAX] = {0};
    for (uint32_t f = 0; f < LIMIT_FILES_MAX; f++)
        fds[f] = -1;
    uint8_t *buf = aligned_alloc(4096, (chunk_bytes + 4095) & ~(size_t)4095);
    struct iovec *iov = calloc(LIMIT_IOV_MAX, sizeof(*iov));
    if (!buf || !iov) {
        free(buf);
        free(iov);
        return -ENOMEM;
    }
    for (size_t i = 0; i < chunk_bytes; i++)
        buf[i] = bench_pool[i % BENCH_POOL_BYTES];
    uint64_t per_file = (chunks + files - 1) / files * chunk_bytes;
    int rc = limit_files_open(dir, files, per_file, prewritten, fds);
    uint64_t t0 = bench_now_ns();
    uint64_t done = 0;
    /* Rounds as limit_write makes them: syncs/files rounds with an fdatasync of every file, or
     * queue_depth chunks a round unsynced. A round's chunks go round-robin over the files, so
     * file f gets its share as one pwritev. */
    uint64_t rounds =
        syncs > 0 ? (syncs / files ? syncs / files : 1) : (chunks + queue_depth - 1) / queue_depth;
    for (uint64_t r = 0; r < rounds && rc == 0; r++) {
        uint64_t t_round = bench_now_ns();
        uint64_t n = syncs > 0 ? (r + 1) * chunks / rounds - r * chunks / rounds
                               : (chunks - done < queue_depth ? chunks - done : queue_depth);
        for (uint32_t f = 0; f < files && rc == 0; f++) {
            uint64_t share = n / files + (f < n % files ? 1 : 0);
            rc = pwritev_chunks(fds[f], &pos[f], buf, chunk_bytes, share, iov);
        }
        for (uint32_t f = 0; f < files && rc == 0 && syncs > 0; f++) {
            if (fdatasync(fds[f]) != 0)
                rc = -errno;
            else
                out->fdatasyncs++;
        }
        if (rc)
            break;
        done += n;
        progress_add(n * BENCH_BATCH_VALUE_BYTES);
        if (out->round_latency)
            hist_add(out->round_latency, bench_now_ns() - t_round);
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->chunks = done;
    for (uint32_t f = 0; f < files; f++)
        if (fds[f] >= 0)
            close(fds[f]);
    free(iov);
    free(buf);
    return rc;
}

/* One file's share of a round as IOSQE_IO_LINK chains ending in its fdatasync, as ringtail's
 * io_uring backend chains a round (io/io_uring.c: write -> write -> fdatasync): the fdatasync
 * starts only when the file's writes are done. A chain must be submitted whole, so a share
 * larger than the ring goes as several chains, each submitted and reaped before the next
 * (which keeps the order); the last one ends in the fdatasync. The chains of every file stay
 * queued (unsubmitted) for the caller to submit together. */
static int queue_linked_share(struct limit_state *st, uint32_t f, uint64_t share)
{
    for (;;) {
        unsigned room = io_uring_sq_space_left(&st->ring);
        if (room > LIMIT_RING - st->inflight)
            room = LIMIT_RING - st->inflight;
        if (room < 2 || (room < share + 1 && st->inflight > 0)) {
            io_uring_submit(&st->ring);
            int rc = reap_all(st);
            if (rc)
                return rc;
            continue;
        }
        bool last = share + 1 <= room;
        uint64_t k = last ? share : room - 1;
        for (uint64_t i = 0; i < k; i++) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&st->ring);
            io_uring_prep_write(sqe, st->fds[f], st->buf, (unsigned)st->chunk_bytes, st->pos[f]);
            io_uring_sqe_set_data64(sqe, ((uint64_t)f << 48) | st->pos[f]);
            if (last || i + 1 < k)
                sqe->flags |= IOSQE_IO_LINK;
            st->pos[f] += st->chunk_bytes;
            st->inflight++;
        }
        share -= k;
        if (last) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&st->ring);
            io_uring_prep_fsync(sqe, st->fds[f], IORING_FSYNC_DATASYNC);
            io_uring_sqe_set_data64(sqe, UINT64_MAX);
            st->inflight++;
            return 0;
        }
        io_uring_submit(&st->ring); /* this chain alone, done before the next one starts */
        int rc = reap_all(st);
        if (rc)
            return rc;
    }
}

/* One thread of limit_write_parallel: file `f` alone, in dir/p<f>/, by limit_write_pwritev. */
struct par_file {
    char dir[PATH_MAX];
    uint64_t chunks, syncs;
    size_t chunk_bytes;
    uint32_t queue_depth;
    bool prewritten;
    struct limit_result res;
    int rc;
    pthread_t thread;
};

static void *par_main(void *arg)
{
    struct par_file *pf = arg;
    pf->rc = bench_mkdir(pf->dir);
    if (pf->rc == 0)
        pf->rc = limit_write_pwritev(pf->dir, 1, pf->chunks, pf->chunk_bytes, pf->syncs,
                                     pf->queue_depth, pf->prewritten, &pf->res);
    return NULL;
}

int limit_write_parallel(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                         uint64_t syncs, uint32_t queue_depth, bool prewritten,
                         struct limit_result *out)
{
    if (files == 0 || files > LIMIT_FILES_MAX || chunk_bytes == 0 || queue_depth == 0)
        return -EINVAL;
    struct par_file *pf = calloc(files, sizeof(*pf));
    if (!pf)
        return -ENOMEM;
    int rc = 0;
    uint32_t started = 0;
    for (uint32_t f = 0; f < files; f++) {
        snprintf(pf[f].dir, sizeof(pf[f].dir), "%s/p%u", dir, f);
        pf[f].chunks = chunks / files + (f < chunks % files ? 1 : 0);
        pf[f].syncs = syncs / files + (f < syncs % files ? 1 : 0);
        if (syncs > 0 && pf[f].syncs == 0)
            pf[f].syncs = 1;
        pf[f].chunk_bytes = chunk_bytes;
        pf[f].queue_depth = queue_depth;
        pf[f].prewritten = prewritten;
        if (out->round_latency) {
            pf[f].res.round_latency = calloc(1, sizeof(struct hist));
            if (!pf[f].res.round_latency) {
                rc = -ENOMEM;
                break;
            }
        }
    }
    /* Each thread pre-writes (or fallocates) its file before its clock starts; the run's time
     * is the slowest thread's. */
    for (uint32_t f = 0; f < files && rc == 0; f++, started++)
        if (pthread_create(&pf[f].thread, NULL, par_main, &pf[f]) != 0)
            rc = -EAGAIN;
    double seconds = 0;
    for (uint32_t f = 0; f < started; f++) {
        pthread_join(pf[f].thread, NULL);
        if (pf[f].rc && !rc)
            rc = pf[f].rc;
        if (pf[f].res.seconds > seconds)
            seconds = pf[f].res.seconds;
        out->chunks += pf[f].res.chunks;
        out->fdatasyncs += pf[f].res.fdatasyncs;
        if (out->round_latency && pf[f].res.round_latency)
            hist_merge(out->round_latency, pf[f].res.round_latency);
    }
    out->seconds = seconds;
    for (uint32_t f = 0; f < files; f++) {
        free(pf[f].res.round_latency);
        bench_rmtree(pf[f].dir);
    }
    free(pf);
    return rc;
}

int limit_write(const char *dir, uint32_t files, uint64_t chunks, size_t chunk_bytes,
                uint64_t syncs, uint32_t queue_depth, bool prewritten, bool linked,
                struct limit_result *out)
{
    if (files == 0 || files > LIMIT_FILES_MAX || chunk_bytes == 0 || queue_depth == 0)
        return -EINVAL;
    struct limit_state st;
    memset(&st, 0, sizeof(st));
    for (uint32_t f = 0; f < LIMIT_FILES_MAX; f++)
        st.fds[f] = -1;
    st.chunk_bytes = chunk_bytes;
    uint8_t *buf = aligned_alloc(4096, (chunk_bytes + 4095) & ~(size_t)4095);
    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < chunk_bytes; i++)
        buf[i] = bench_pool[i % BENCH_POOL_BYTES];
    st.buf = buf;
    int rc = io_uring_queue_init(LIMIT_RING, &st.ring, 0);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    uint64_t per_file = (chunks + files - 1) / files * chunk_bytes;
    rc = limit_files_open(dir, files, per_file, prewritten, st.fds);
    uint64_t t0 = bench_now_ns();
    uint64_t done = 0;
    if (rc == 0 && syncs > 0) {
        uint64_t rounds = syncs / files ? syncs / files : 1;
        for (uint64_t r = 0; r < rounds && rc == 0; r++) {
            uint64_t t_round = bench_now_ns();
            /* this round's chunks, spread so the totals come out exact */
            uint64_t n = (r + 1) * chunks / rounds - r * chunks / rounds;
            if (linked) {
                for (uint32_t f = 0; f < files && rc == 0; f++) {
                    rc = queue_linked_share(&st, f, n / files + (f < n % files ? 1 : 0));
                    out->fdatasyncs++;
                }
                if (rc == 0) {
                    io_uring_submit(&st.ring);
                    rc = reap_all(&st);
                }
                done += n;
                progress_add(n * BENCH_BATCH_VALUE_BYTES);
                if (out->round_latency)
                    hist_add(out->round_latency, bench_now_ns() - t_round);
                continue;
            }
            for (uint64_t i = 0; i < n && rc == 0; i++)
                rc = queue_write(&st, (uint32_t)(i % files));
            if (rc == 0) {
                io_uring_submit(&st.ring);
                rc = reap_all(&st);
            }
            for (uint32_t f = 0; f < files && rc == 0; f++) {
                struct io_uring_sqe *sqe = get_sqe(&st);
                if (!sqe) {
                    rc = -EBUSY;
                    break;
                }
                io_uring_prep_fsync(sqe, st.fds[f], IORING_FSYNC_DATASYNC);
                io_uring_sqe_set_data64(sqe, UINT64_MAX);
                st.inflight++;
                out->fdatasyncs++;
            }
            if (rc == 0) {
                io_uring_submit(&st.ring);
                rc = reap_all(&st);
            }
            done += n;
            progress_add(n * BENCH_BATCH_VALUE_BYTES);
            if (out->round_latency)
                hist_add(out->round_latency, bench_now_ns() - t_round);
        }
    } else if (rc == 0) {
        while (done < chunks && rc == 0) {
            uint64_t t_round = bench_now_ns();
            uint64_t n = chunks - done < queue_depth ? chunks - done : queue_depth;
            for (uint64_t i = 0; i < n && rc == 0; i++)
                rc = queue_write(&st, (uint32_t)((done + i) % files));
            if (rc == 0) {
                io_uring_submit(&st.ring);
                rc = reap_all(&st);
            }
            done += n;
            progress_add(n * BENCH_BATCH_VALUE_BYTES);
            if (out->round_latency)
                hist_add(out->round_latency, bench_now_ns() - t_round);
        }
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->chunks = done;
    io_uring_queue_exit(&st.ring);
    for (uint32_t f = 0; f < files; f++)
        if (st.fds[f] >= 0)
            close(st.fds[f]);
    free(buf);
    return rc;
}

double limit_memory_read_bps(size_t bytes, int passes)
{
    uint8_t *buf = malloc(bytes);
    if (!buf)
        return 0;
    for (size_t i = 0; i < bytes; i += 4096)
        memcpy(buf + i, bench_pool + (i % BENCH_POOL_BYTES), bytes - i < 4096 ? bytes - i : 4096);
    double best = 0;
    volatile uint64_t sink = 0;
    for (int p = 0; p < passes; p++) {
        uint64_t t0 = bench_now_ns();
        sink += bench_checksum(buf, bytes);
        double s = (double)(bench_now_ns() - t0) / 1e9;
        if (s > 0 && (double)bytes / s > best)
            best = (double)bytes / s;
    }
    (void)sink;
    free(buf);
    return best;
}
