/*
 * bench_clean.c — the C workload's measurements (issue 26 item 6): how fast the log cleaner
 * (rt_topic_compact) cleans a compacted topic, and what it does to a live producer's and a live
 * reader's latency while it runs. It builds one partition of `bytes` of keyed 1 KiB records
 * whose keys are drawn from 1/8 of the record count (so most records are superseded) in small
 * segments (so nearly all are sealed), then times one rt_topic_compact over it; the log bytes it
 * read are the sealed segments' bytes before the clean. Beside that, a paced appender and a
 * reader fetching the newest records run twice for the same time: once with no cleaner, once
 * while rt_topic_compact runs.
 *
 * The topic is built as cleanup.policy=delete and switched to compact just before the timed
 * clean, so the background cleaner does not clean it while it is written. This file measures
 * and fills a result; bench_main.c turns it into rows beside the limit. It links only the public
 * API (ringtail.h) and never asserts a figure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLEAN_TOPIC "clean"

/* Sums the sizes of partition 0's segment files (<20-digit base>.log) whose base offset is below
 * `below` (INT64_MAX: all); *newest_base: the largest base seen (the active segment's). */
static int segment_bytes(const char *dir, int64_t below, uint64_t *bytes, uint32_t *count,
                         int64_t *newest_base)
{
    char pdir[PATH_MAX];
    snprintf(pdir, sizeof(pdir), "%s/%s-0", dir, CLEAN_TOPIC);
    DIR *d = opendir(pdir);
    if (!d)
        return -errno;
    *bytes = 0;
    *count = 0;
    if (newest_base)
        *newest_base = -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n != 24 || strcmp(de->d_name + 20, ".log") != 0)
            continue;
        int64_t base = strtoll(de->d_name, NULL, 10);
        if (newest_base && base > *newest_base)
            *newest_base = base;
        if (base >= below)
            continue;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", pdir, de->d_name);
        struct stat st;
        if (stat(path, &st) == 0) {
            *bytes += (uint64_t)st.st_size;
            (*count)++;
        }
    }
    closedir(d);
    return 0;
}

/* ---- the live producer and reader ---- */

struct live {
    rt_engine *e;
    uint64_t keys;
    atomic_bool stop;
    struct hist append_lat, fetch_lat;
    uint64_t appends, fetches;
    int rc;
};

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One keyed 1 KiB record every 500 us (about 2 MB/s: too little to seal a segment in a run). */
static void *live_append(void *arg)
{
    struct live *l = arg;
    uint64_t i = 0;
    while (!atomic_load(&l->stop)) {
        struct rt_record rec;
        bench_records_make(&rec, 1, BENCH_VALUE_BYTES, i);
        char key[24];
        int kn = snprintf(key, sizeof(key), "k%09" PRIu64, (i * 2654435761u) % l->keys);
        rec.key = key;
        rec.key_len = kn;
        int64_t base;
        uint64_t t0 = bench_now_ns();
        int rc = rt_append(l->e, CLEAN_TOPIC, 0, &rec, 1, &base);
        hist_add(&l->append_lat, bench_now_ns() - t0);
        if (rc) {
            l->rc = rc;
            break;
        }
        l->appends++;
        i++;
        sleep_us(500);
    }
    return NULL;
}

/* The high watermark, then a fetch of the newest record (rt_fetch_start + release), timed
 * together, every 200 us. */
static void *live_fetch(void *arg)
{
    struct live *l = arg;
    while (!atomic_load(&l->stop)) {
        uint64_t t0 = bench_now_ns();
        int64_t end = 0;
        int rc = rt_list_offsets(l->e, CLEAN_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
        rt_fetch *f = NULL;
        if (rc == 0 && end > 0)
            rc = rt_fetch_start(l->e, CLEAN_TOPIC, 0, end - 1, 64u << 10, RT_READ_UNCOMMITTED, &f);
        if (f)
            rt_fetch_release(f);
        hist_add(&l->fetch_lat, bench_now_ns() - t0);
        if (rc) {
            l->rc = rc;
            break;
        }
        l->fetches++;
        sleep_us(200);
    }
    return NULL;
}

static int live_start(struct live *l, pthread_t th[2])
{
    atomic_store(&l->stop, false);
    if (pthread_create(&th[0], NULL, live_append, l) != 0)
        return -EAGAIN;
    if (pthread_create(&th[1], NULL, live_fetch, l) != 0) {
        atomic_store(&l->stop, true);
        pthread_join(th[0], NULL);
        return -EAGAIN;
    }
    return 0;
}

static void live_stop(struct live *l, pthread_t th[2])
{
    atomic_store(&l->stop, true);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
}

static void live_fill(const struct live *l, struct clean_latency *out)
{
    out->append_p50_us = hist_quantile_ns(&l->append_lat, 0.50) / 1e3;
    out->append_p99_us = hist_quantile_ns(&l->append_lat, 0.99) / 1e3;
    out->fetch_p50_us = hist_quantile_ns(&l->fetch_lat, 0.50) / 1e3;
    out->fetch_p99_us = hist_quantile_ns(&l->fetch_lat, 0.99) / 1e3;
    out->append_max_us = (double)l->append_lat.max_ns / 1e3;
    out->appends = l->appends;
    out->fetches = l->fetches;
}

int clean_run(const char *dir, uint64_t bytes, uint64_t segment_bytes_max, double idle_seconds,
              struct clean_result *out)
{
    memset(out, 0, sizeof(*out));
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_NONE;
    o.segment_size_bytes = segment_bytes_max;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "rt_open: %s %s", rt_strerror(rc),
                 rt_error_detail());
        return rc;
    }
    struct live *l = NULL;
    rc = rt_topic_create(e, CLEAN_TOPIC, 1);
    if (rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "create: %s", rt_strerror(rc));
        goto done;
    }
    /* 1. the log: keyed 1 KiB records, 16 a batch, keys from 1/8 of the record count */
    uint64_t records = bytes / BENCH_VALUE_BYTES;
    uint64_t keys = records / 8 ? records / 8 : 1;
    progress_phase("C build compacted log");
    struct rt_record recs[BENCH_BATCH_RECORDS];
    char keybuf[BENCH_BATCH_RECORDS][24];
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (uint64_t b = 0; b * BENCH_BATCH_RECORDS < records && rc == 0; b++) {
        bench_records_make(recs, BENCH_BATCH_RECORDS, BENCH_VALUE_BYTES, b);
        for (int i = 0; i < BENCH_BATCH_RECORDS; i++) {
            state ^= state << 13; /* xorshift64: keys spread over the whole key space */
            state ^= state >> 7;
            state ^= state << 17;
            recs[i].key = keybuf[i];
            recs[i].key_len = snprintf(keybuf[i], sizeof(keybuf[i]), "k%09" PRIu64, state % keys);
        }
        int64_t base;
        rc = rt_append(e, CLEAN_TOPIC, 0, recs, BENCH_BATCH_RECORDS, &base);
        progress_add(BENCH_BATCH_VALUE_BYTES);
    }
    if (rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "append: %s", rt_strerror(rc));
        goto done;
    }
    out->records_written =
        (records + BENCH_BATCH_RECORDS - 1) / BENCH_BATCH_RECORDS * BENCH_BATCH_RECORDS;
    out->keys = keys;

    /* 2. the live producer and reader with no cleaner (the topic is still delete) */
    l = calloc(1, sizeof(*l));
    if (!l) {
        rc = -ENOMEM;
        goto done;
    }
    l->e = e;
    l->keys = keys;
    pthread_t th[2];
    progress_phase("C live, no cleaner");
    if ((rc = live_start(l, th)) != 0)
        goto done;
    sleep_us((long)(idle_seconds * 1e6));
    live_stop(l, th);
    if (l->rc) {
        rc = l->rc;
        snprintf(out->errmsg, sizeof(out->errmsg), "live (idle): %s", rt_strerror(rc));
        goto done;
    }
    live_fill(l, &out->idle);

    /* 3. the clean, timed, with the live producer and reader running */
    int64_t active_base = -1;
    uint64_t all_bytes;
    uint32_t all_count;
    if ((rc = segment_bytes(dir, INT64_MAX, &all_bytes, &all_count, &active_base)) != 0) {
        snprintf(out->errmsg, sizeof(out->errmsg), "listing segments: %s", strerror(-rc));
        goto done;
    }
    rc = segment_bytes(dir, active_base, &out->bytes_before, &out->segments_before, NULL);
    struct rt_topic_config c = {"cleanup.policy", "compact"};
    if (rc == 0)
        rc = rt_topic_config_alter(e, CLEAN_TOPIC, &c, 1, false);
    if (rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "cleanup.policy=compact: %s", rt_strerror(rc));
        goto done;
    }
    memset(l, 0, sizeof(*l));
    l->e = e;
    l->keys = keys;
    progress_phase("C rt_topic_compact");
    if ((rc = live_start(l, th)) != 0)
        goto done;
    uint64_t t0 = bench_now_ns();
    rc = rt_topic_compact(e, CLEAN_TOPIC);
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    live_stop(l, th);
    if (rc) {
        snprintf(out->errmsg, sizeof(out->errmsg), "rt_topic_compact: %s %s", rt_strerror(rc),
                 rt_error_detail());
        goto done;
    }
    if (l->rc) {
        rc = l->rc;
        snprintf(out->errmsg, sizeof(out->errmsg), "live (cleaning): %s", rt_strerror(rc));
        goto done;
    }
    live_fill(l, &out->cleaning);
    rc = segment_bytes(dir, active_base, &out->bytes_after, &out->segments_after, NULL);

    /* 4. what a reader finds now: every record from the log start (headers only) */
    struct read_result rr;
    if (rc == 0 &&
        (rc = ringtail_read_all(e, CLEAN_TOPIC, 0, RT_READ_UNCOMMITTED, false, &rr)) == 0)
        out->records_after = rr.records;
    out->records_appended_live = out->idle.appends + out->cleaning.appends;
    if (rc)
        snprintf(out->errmsg, sizeof(out->errmsg), "reading back: %s", rt_strerror(rc));
done:
    free(l);
    int crc = rt_close(e);
    if (rc == 0 && crc) {
        rc = crc;
        snprintf(out->errmsg, sizeof(out->errmsg), "rt_close: %s", rt_strerror(rc));
    }
    return rc;
}
