/*
 * overlap_probe.c — a stand-alone measurement for issue 27 item 2 (concurrent rounds per shard):
 * does starting round N+1's writes while round N's fdatasyncs are in flight move more bytes per
 * second on this disk than the shard's serial round does today? It never touches the engine.
 *
 * Both modes write the same bytes to the same pre-written files (zeros, fdatasynced before the
 * clock starts, as the bench's "pre-written" limit), `files` files, `per_file` bytes per file per
 * round, and spend `cpu_us` of busy CPU per round (what the shard spends outside the disk in a
 * round: placement, publish, waking the waiters — docs/bench.md has the measured figures).
 *   serial:    cpu, then pwritev to every file, then fdatasync of the last file on a helper
 *              thread while the others run here (today's split round, io.h IO_SYNCED_INLINE),
 *              then wait for the helper: one round at a time.
 *   pipelined: cpu and pwritev of round N+1 while round N's fdatasyncs (every file on its own
 *              helper thread) are in flight; then wait for them (round N durable) and start
 *              round N+1's. At most two rounds outstanding, acknowledgements in round order.
 * The modes alternate (serial, pipelined, serial, pipelined, ...) so a shared, loaded machine
 * disturbs both alike; compare ratios within one run, never across runs.
 * It must never be built into the engine or the tests: it is a probe, run by hand:
 *   cc -O2 -pthread -o /tmp/overlap_probe tools/probes/overlap_probe.c
 *   /tmp/overlap_probe DIR FILES PER_FILE_BYTES ROUNDS CPU_US PAIRS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FILES_MAX 8

struct helper {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fd;
    bool go, done, stop;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->go && !h->stop)
            pthread_cond_wait(&h->cond, &h->lock);
        if (h->stop)
            break;
        h->go = false;
        pthread_mutex_unlock(&h->lock);
        if (fdatasync(h->fd) != 0) {
            perror("fdatasync");
            exit(1);
        }
        pthread_mutex_lock(&h->lock);
        h->done = true;
        pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void helper_start(struct helper *h)
{
    pthread_mutex_lock(&h->lock);
    h->done = false;
    h->go = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

static void helper_wait(struct helper *h)
{
    pthread_mutex_lock(&h->lock);
    while (!h->done)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

static void spin_us(uint32_t us)
{
    uint64_t end = now_ns() + (uint64_t)us * 1000u;
    while (now_ns() < end) {
    }
}

static void write_round(const int *fds, uint32_t files, uint64_t *pos, const uint8_t *buf,
                        size_t per_file)
{
    for (uint32_t f = 0; f < files; f++) {
        struct iovec v = {.iov_base = (void *)buf, .iov_len = per_file};
        if (pwritev(fds[f], &v, 1, (off_t)pos[f]) != (ssize_t)per_file) {
            perror("pwritev");
            exit(1);
        }
        pos[f] += per_file;
    }
}

/* One timed run of `rounds` rounds; returns seconds. */
static double run(bool pipelined, const int *fds, uint32_t files, struct helper *h,
                  const uint8_t *buf, size_t per_file, uint32_t rounds, uint32_t cpu_us)
{
    uint64_t pos[FILES_MAX] = {0};
    uint64_t t0 = now_ns();
    bool in_flight = false;
    for (uint32_t r = 0; r < rounds; r++) {
        spin_us(cpu_us);
        write_round(fds, files, pos, buf, per_file);
        if (!pipelined) {
            helper_start(&h[files - 1]);
            for (uint32_t f = 0; f + 1 < files; f++)
                if (fdatasync(fds[f]) != 0) {
                    perror("fdatasync");
                    exit(1);
                }
            helper_wait(&h[files - 1]);
            continue;
        }
        if (in_flight) /* round r-1 durable: it would be acknowledged now, in order */
            for (uint32_t f = 0; f < files; f++)
                helper_wait(&h[f]);
        for (uint32_t f = 0; f < files; f++)
            helper_start(&h[f]);
        in_flight = true;
    }
    if (in_flight)
        for (uint32_t f = 0; f < files; f++)
            helper_wait(&h[f]);
    return (double)(now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s DIR FILES PER_FILE_BYTES ROUNDS CPU_US PAIRS\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint32_t files = (uint32_t)atoi(argv[2]);
    size_t per_file = (size_t)atol(argv[3]);
    uint32_t rounds = (uint32_t)atoi(argv[4]);
    uint32_t cpu_us = (uint32_t)atoi(argv[5]);
    uint32_t pairs = (uint32_t)atoi(argv[6]);
    if (files == 0 || files > FILES_MAX || per_file == 0 || rounds == 0)
        return 2;
    uint8_t *buf = aligned_alloc(4096, (per_file + 4095) & ~(size_t)4095);
    uint8_t *zeros = calloc(1, 1 << 20);
    if (!buf || !zeros)
        return 1;
    for (size_t i = 0; i < per_file; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    int fds[FILES_MAX];
    struct helper h[FILES_MAX];
    uint64_t file_bytes = (uint64_t)rounds * per_file;
    for (uint32_t f = 0; f < files; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/overlap-probe-%u", dir, f);
        fds[f] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fds[f] < 0) {
            perror(path);
            return 1;
        }
        unlink(path);
        for (uint64_t off = 0; off < file_bytes; off += 1 << 20) {
            size_t n = file_bytes - off < (1u << 20) ? (size_t)(file_bytes - off) : (1u << 20);
            if (pwrite(fds[f], zeros, n, (off_t)off) != (ssize_t)n) {
                perror("pre-write");
                return 1;
            }
        }
        fdatasync(fds[f]);
        memset(&h[f], 0, sizeof(h[f]));
        pthread_mutex_init(&h[f].lock, NULL);
        pthread_cond_init(&h[f].cond, NULL);
        h[f].fd = fds[f];
        pthread_create(&h[f].thread, NULL, helper_main, &h[f]);
    }
    double mb = (double)rounds * (double)files * (double)per_file / 1e6;
    double sum[2] = {0, 0};
    for (uint32_t p = 0; p < pairs; p++) {
        for (int mode = 0; mode < 2; mode++) {
            double s = run(mode == 1, fds, files, h, buf, per_file, rounds, cpu_us);
            sum[mode] += s;
            printf("pair %u %-9s %8.1f MB/s  %7.1f us/round\n", p, mode ? "pipelined" : "serial",
                   mb / s, s * 1e6 / rounds);
            fflush(stdout);
        }
    }
    printf("total serial %.1f MB/s, pipelined %.1f MB/s, pipelined/serial %.2f\n",
           mb * pairs / sum[0], mb * pairs / sum[1], sum[0] / sum[1]);
    for (uint32_t f = 0; f < files; f++) {
        pthread_mutex_lock(&h[f].lock);
        h[f].stop = true;
        pthread_cond_broadcast(&h[f].cond);
        pthread_mutex_unlock(&h[f].lock);
        pthread_join(h[f].thread, NULL);
        close(fds[f]);
    }
    free(buf);
    free(zeros);
    return 0;
}
