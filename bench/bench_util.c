/*
 * bench_util.c — the benchmark's plumbing: a monotonic clock, an HDR-style latency histogram,
 * memory figures (peak anonymous RSS, VmHWM, allocator heap), the progress line with its RSS
 * sampler thread, the random payload pool, and scratch-directory helpers.
 *
 * Costs: hist_add is a count-leading-zeros and an increment (no allocation; each producer thread
 * owns its histogram, merged after the run). The sampler reads /proc/self/status every 50 ms.
 */
#include "bench.h"

#include <assert.h>
#include <errno.h>
#include <ftw.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- histogram ---- */

static uint32_t hist_index(uint64_t v)
{
    if (v < HIST_SUB)
        return (uint32_t)v;
    uint32_t msb = 63u - (uint32_t)__builtin_clzll(v);
    uint32_t shift = msb - HIST_SUB_BITS;
    uint32_t idx = (shift + 1) * HIST_SUB + (uint32_t)((v >> shift) & (HIST_SUB - 1));
    assert(idx < HIST_BUCKETS);
    return idx;
}

/* Midpoint of a bucket's value range. */
static double hist_value(uint32_t idx)
{
    if (idx < HIST_SUB)
        return (double)idx;
    uint32_t shift = idx / HIST_SUB - 1;
    uint64_t low = (uint64_t)(HIST_SUB + idx % HIST_SUB) << shift;
    return (double)low + (double)((uint64_t)1 << shift) / 2.0;
}

void hist_reset(struct hist *h)
{
    memset(h, 0, sizeof(*h));
}

void hist_add(struct hist *h, uint64_t value_ns)
{
    h->counts[hist_index(value_ns)]++;
    h->total++;
    if (value_ns > h->max_ns)
        h->max_ns = value_ns;
}

void hist_merge(struct hist *into, const struct hist *from)
{
    for (uint32_t i = 0; i < HIST_BUCKETS; i++)
        into->counts[i] += from->counts[i];
    into->total += from->total;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
}

double hist_quantile_ns(const struct hist *h, double q)
{
    if (h->total == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->total);
    if (rank >= h->total)
        rank = h->total - 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen > rank) {
            double v = hist_value(i);
            return v > (double)h->max_ns ? (double)h->max_ns : v;
        }
    }
    return (double)h->max_ns;
}

/* ---- memory ---- */

static _Atomic uint64_t peak_anon;
static _Atomic uint64_t peak_heap;

/* A "Name:   N kB" field of /proc/self/status in bytes, or 0. */
static uint64_t status_field(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    size_t n = strlen(name);
    uint64_t v = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtoull(line + n + 1, NULL, 10) * 1024u;
            break;
        }
    }
    fclose(f);
    return v;
}

static void sample_anon(void)
{
    uint64_t a = status_field("RssAnon") + status_field("RssShmem");
    uint64_t cur = atomic_load(&peak_anon);
    while (a > cur && !atomic_compare_exchange_weak(&peak_anon, &cur, a))
        ;
}

void mem_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
    atomic_store(&peak_anon, 0);
    atomic_store(&peak_heap, 0);
    sample_anon();
}

static void sample_heap(void)
{
    uint64_t h = mem_heap_bytes(NULL);
    uint64_t cur = atomic_load(&peak_heap);
    while (h > cur && !atomic_compare_exchange_weak(&peak_heap, &cur, h))
        ;
}

uint64_t mem_peak_heap_bytes(void)
{
    sample_heap();
    return atomic_load(&peak_heap);
}

uint64_t mem_peak_anon_bytes(void)
{
    sample_anon();
    return atomic_load(&peak_anon);
}

uint64_t mem_hwm_bytes(void)
{
    return status_field("VmHWM");
}

/* jemalloc's mallctl when the binary links jemalloc (ringtail_static does when it is found). */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

uint64_t mem_heap_bytes(const char **source)
{
    if (mallctl) {
        uint64_t epoch = 1;
        size_t sz = sizeof(epoch);
        mallctl("epoch", &epoch, &sz, &epoch, sz);
        size_t allocated = 0;
        sz = sizeof(allocated);
        if (mallctl("stats.allocated", &allocated, &sz, NULL, 0) == 0) {
            if (source)
                *source = "jemalloc stats.allocated";
            return allocated;
        }
    }
    struct mallinfo2 mi = mallinfo2();
    if (source)
        *source = "glibc mallinfo2 uordblks+hblkhd";
    return mi.uordblks + mi.hblkhd;
}

static uint64_t mallctl_u64(const char *name)
{
    uint64_t v = 0;
    size_t sz = sizeof(v);
    if (mallctl(name, &v, &sz, NULL, 0) != 0)
        return 0;
    return v;
}

static size_t mallctl_size(const char *name)
{
    size_t v = 0;
    size_t sz = sizeof(v);
    if (mallctl(name, &v, &sz, NULL, 0) != 0)
        return 0;
    return v;
}

int mem_alloc_totals(uint64_t *count_out, uint64_t *bytes_out)
{
    *count_out = *bytes_out = 0;
    if (!mallctl)
        return -1;
    /* This thread's cache keeps its counts until flushed; other threads' caches (a producer's
     * sender, the shards) merge theirs as they fill and drain, so a long loop is accurate to a
     * few cached allocations. */
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    unsigned nbins = 0, nlextents = 0;
    sz = sizeof(nbins);
    if (mallctl("arenas.nbins", &nbins, &sz, NULL, 0) != 0)
        return -1;
    sz = sizeof(nlextents);
    if (mallctl("arenas.nlextents", &nlextents, &sz, NULL, 0) != 0)
        return -1;
    char name[96];
    /* 4096 is MALLCTL_ARENAS_ALL: the merged statistics of every arena (tcaches included). */
    for (unsigned j = 0; j < nbins; j++) {
        snprintf(name, sizeof(name), "stats.arenas.4096.bins.%u.nrequests", j);
        uint64_t n = mallctl_u64(name);
        snprintf(name, sizeof(name), "arenas.bin.%u.size", j);
        *count_out += n;
        *bytes_out += n * mallctl_size(name);
    }
    for (unsigned j = 0; j < nlextents; j++) {
        snprintf(name, sizeof(name), "stats.arenas.4096.lextents.%u.nrequests", j);
        uint64_t n = mallctl_u64(name);
        snprintf(name, sizeof(name), "arenas.lextent.%u.size", j);
        *count_out += n;
        *bytes_out += n * mallctl_size(name);
    }
    return 0;
}

/* ---- progress ---- */

static pthread_t progress_thread;
static _Atomic bool progress_running;
static _Atomic uint64_t progress_bytes;
static _Atomic uint64_t progress_t0;
static char progress_label[96];
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;

static void progress_print(bool final)
{
    bool tty = isatty(2);
    pthread_mutex_lock(&progress_lock);
    double s = (double)(bench_now_ns() - atomic_load(&progress_t0)) / 1e9;
    double mb = (double)atomic_load(&progress_bytes) / 1e6;
    if (progress_label[0] && (tty || final))
        fprintf(stderr, "%s[%-34s] %7.1f s %9.1f MB %8.1f MB/s%s", tty ? "\r" : "", progress_label,
                s, mb, s > 0 ? mb / s : 0.0, tty && !final ? "" : "\n");
    pthread_mutex_unlock(&progress_lock);
}

static void *progress_main(void *arg)
{
    (void)arg;
    int tick = 0;
    while (atomic_load(&progress_running)) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        sample_anon();
        sample_heap();
        if (++tick % 10 == 0)
            progress_print(false);
    }
    return NULL;
}

void progress_start(void)
{
    atomic_store(&progress_t0, bench_now_ns());
    atomic_store(&progress_running, true);
    if (pthread_create(&progress_thread, NULL, progress_main, NULL) != 0)
        atomic_store(&progress_running, false);
}

void progress_stop(void)
{
    if (atomic_exchange(&progress_running, false))
        pthread_join(progress_thread, NULL);
    if (progress_label[0])
        progress_print(true);
    progress_label[0] = 0;
}

void progress_phase(const char *label)
{
    if (progress_label[0])
        progress_print(true);
    pthread_mutex_lock(&progress_lock);
    snprintf(progress_label, sizeof(progress_label), "%s", label);
    atomic_store(&progress_bytes, 0);
    atomic_store(&progress_t0, bench_now_ns());
    pthread_mutex_unlock(&progress_lock);
}

void progress_add(uint64_t bytes)
{
    atomic_fetch_add_explicit(&progress_bytes, bytes, memory_order_relaxed);
}

/* ---- payload ---- */

uint8_t bench_pool[BENCH_POOL_BYTES + BENCH_VALUE_BYTES * 64];

void bench_pool_fill(uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < sizeof(bench_pool); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bench_pool[i] = (uint8_t)x;
    }
}

void bench_records_make(struct rt_record *recs, size_t n, uint32_t value_bytes, uint64_t salt)
{
    assert(value_bytes <= BENCH_VALUE_BYTES * 64);
    for (size_t i = 0; i < n; i++) {
        size_t at = (size_t)((salt * 7919u + i * 613u) % BENCH_POOL_BYTES);
        recs[i] = (struct rt_record){.key = NULL,
                                     .key_len = -1,
                                     .value = bench_pool + at,
                                     .value_len = (int32_t)value_bytes,
                                     .timestamp_ms = -1};
    }
}

uint64_t bench_checksum(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, sizeof(w));
        a += w[0];
        b += w[1];
        c += w[2];
        d += w[3];
    }
    for (; i < n; i++)
        a += p[i];
    return a ^ b ^ c ^ d;
}

/* ---- directories ---- */

int bench_mkdir(const char *path)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

int bench_rmtree(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    return nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -errno;
}

const char *bench_fs_type(const char *path)
{
    struct statfs s;
    if (statfs(path, &s) != 0)
        return "unknown";
    switch ((unsigned long)s.f_type) {
    case 0xEF53:
        return "ext4";
    case 0x01021994:
        return "tmpfs";
    case 0x58465342:
        return "xfs";
    case 0x9123683E:
        return "btrfs";
    case 0x794c7630:
        return "overlayfs";
    default:
        return "other";
    }
}

uint64_t bench_fs_free_bytes(const char *path)
{
    struct statvfs s;
    if (statvfs(path, &s) != 0)
        return 0;
    return (uint64_t)s.f_bavail * s.f_frsize;
}
