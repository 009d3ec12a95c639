/*
 * bench_open.c — the O rows: how long rt_open takes and how much of the data it leaves in the
 * page cache (issue 21 F5/item 8), after a clean close and after a SIGKILL, warm and cold, for
 * one partition of 1 and 4 GB (16 GB with --open-gb 16, a longer run) and for 1 000 and 10 000
 * partitions; after each open it fetches once from every partition (fetch from all).
 *
 * Each open is timed in a fresh process (`ringtail-bench --open-probe DIR [cold]`, `none`: open
 * under sync=none instead of the default sync=always, for a one-off figure; or the program
 * --open-probe-exe names; `small`: the 1 MiB segments of the many-partition directory: the same probe built against another libringtail, for a before/after
 * figure in one session), so RssFile (/proc/self/status) counts what that open mapped and touched
 * and nothing of the writer's. "cold" first drops every file of the directory from the page cache
 * (fsync, then posix_fadvise(DONTNEED)). A clean probe closes the engine (so the directory stays
 * cleanly closed for the next probe); a crash probe exits without closing, so the directory stays
 * as the SIGKILL left it and every crash probe recovers the same tail. Printed, not asserted.
 *
 * Build the probe alone against any libringtail: cc -DBENCH_OPEN_PROBE_ONLY -Iengine
 * bench/bench_open.c -lringtail (it uses ringtail.h only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ringtail.h"

static uint64_t probe_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One "Name: N kB" line of /proc/self/status (RssFile, RssAnon), -1 when absent. */
static long status_kb(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256], fmt[64];
    snprintf(fmt, sizeof(fmt), "%s: %%ld kB", name);
    long kb = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, fmt, &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static long rss_file_kb(void)
{
    return status_kb("RssFile");
}

/* Descriptors open now (/proc/self/fd entries, less the one reading it). */
static long fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", "..", and the directory's own descriptor */
}

/* fsync and drop from the page cache every file under dir (two levels: partitions). */
static void drop_tree(const char *dir, int depth, uint64_t *bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == 0 || de->d_name[1] == '.'))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 2)
                drop_tree(path, depth + 1, bytes);
            continue;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        (void)fsync(fd);
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        *bytes += (uint64_t)st.st_size;
    }
    closedir(d);
}

struct probe_topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partitions;
};

struct probe_topics {
    struct probe_topic t[16];
    uint32_t n;
};

static int probe_topic_seen(void *ctx, const char *name, uint32_t partitions)
{
    struct probe_topics *pt = ctx;
    if (pt->n < sizeof(pt->t) / sizeof(pt->t[0])) {
        snprintf(pt->t[pt->n].name, sizeof(pt->t[pt->n].name), "%s", name);
        pt->t[pt->n++].partitions = partitions;
    }
    return 0;
}

/* One fetch (from offset 0, at most one batch) from every partition of every topic: the
 * "fetch from all" of issue 21 item 7. Returns the partitions that answered, -1 on an error. */
static long fetch_all(rt_engine *e)
{
    struct probe_topics pt = {.n = 0};
    if (rt_topic_list(e, probe_topic_seen, &pt) != 0)
        return -1;
    long fetched = 0;
    for (uint32_t i = 0; i < pt.n; i++) {
        for (uint32_t p = 0; p < pt.t[i].partitions; p++) {
            rt_fetch *f = NULL;
            int rc = rt_fetch_start(e, pt.t[i].name, p, 0, 1, RT_READ_UNCOMMITTED, &f);
            if (rc) {
                fprintf(stderr, "open-probe: fetch %s-%u: %s (%s)\n", pt.t[i].name, p,
                        rt_strerror(rc), rt_error_detail());
                return -1;
            }
            rt_fetch_release(f);
            fetched++;
        }
    }
    return fetched;
}

/* The probe: one timed rt_open of dir. Prints one line:
 *   open_s=S rss_file_kb=K close_s=S unclean=0|1 rss_anon_kb=K fds=N fetch_s=S fetched=N
 * (RssAnon grown by the open: the engine's memory for what it opened; fds: descriptors open after
 * it; fetch: one fetch from every partition after those were measured, fetched = partitions). */
int bench_open_probe(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: --open-probe DIR [cold] [crash] [small] [none]\n");
        return 2;
    }
    const char *dir = argv[0];
    bool cold = false, crash = false, small = false, none = false;
    for (int i = 1; i < argc; i++) {
        none = none || strcmp(argv[i], "none") == 0;
        cold = cold || strcmp(argv[i], "cold") == 0;
        crash = crash || strcmp(argv[i], "crash") == 0;
        small = small || strcmp(argv[i], "small") == 0;
    }
    if (cold) {
        uint64_t bytes = 0;
        drop_tree(dir, 0, &bytes);
    }
    long rss0 = rss_file_kb();
    long anon0 = status_kb("RssAnon");
    struct rt_options o;
    rt_options_init(&o);
    if (small) { /* the many-partition directory's options (bench_main.c open_options) */
        o.segment_size_bytes = 1u << 20;
        o.batch_size_max_bytes = 64u << 10;
    }
    if (none) /* the writer's mode (bench_main.c open_options); the rows open with the default */
        o.sync_mode = RT_SYNC_NONE;
    rt_engine *e = NULL;
    uint64_t t0 = probe_now_ns();
    int rc = rt_open(dir, &o, &e);
    double open_s = (double)(probe_now_ns() - t0) / 1e9;
    if (rc) {
        fprintf(stderr, "open-probe: %s: %s (%s)\n", dir, rt_strerror(rc), rt_error_detail());
        return 1;
    }
    long rss = rss_file_kb();
    long anon = status_kb("RssAnon");
    long fds = fds_open();
    struct rt_stats st;
    memset(&st, 0, sizeof(st));
    (void)rt_stats_get(e, &st);
    uint64_t tf = probe_now_ns();
    long fetched = fetch_all(e);
    double fetch_s = (double)(probe_now_ns() - tf) / 1e9;
    double close_s = 0;
    if (!crash) {
        uint64_t t1 = probe_now_ns();
        rc = rt_close(e);
        close_s = (double)(probe_now_ns() - t1) / 1e9;
        if (rc) {
            fprintf(stderr, "open-probe: close: %s (%s)\n", rt_strerror(rc), rt_error_detail());
            return 1;
        }
    }
    printf("open_s=%.4f rss_file_kb=%ld close_s=%.4f unclean=%d rss_anon_kb=%ld fds=%ld "
           "fetch_s=%.4f fetched=%ld\n",
           open_s, rss >= 0 && rss0 >= 0 ? rss - rss0 : -1, close_s, st.opened_unclean ? 1 : 0,
           anon >= 0 && anon0 >= 0 ? anon - anon0 : -1, fds, fetch_s, fetched);
    fflush(stdout);
    if (crash)
        _exit(0); /* leave the directory as the crash left it: the next probe recovers it too */
    return 0;
}

#ifdef BENCH_OPEN_PROBE_ONLY
int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--open-probe") == 0)
        return bench_open_probe(argc - 2, argv + 2);
    fprintf(stderr, "usage: %s --open-probe DIR [cold] [crash] [small] [none]\n", argv[0]);
    return 2;
}
#endif
