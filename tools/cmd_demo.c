/*
 * cmd_demo.c — `ringtail demo`: a short tour that runs the engine in this process on a scratch
 * data directory and explains each step in one line: topic creation, concurrent keyed appends
 * with group commit, a zero-copy fetch, offsets by timestamp, a clean close and reopen, and a
 * simulated crash whose torn tail recovery cuts off. Later issues add transactions.
 *
 * The demo only uses the public API (ringtail.h) plus rt_verify_with_counts, and plain file
 * operations for the crash simulation. It owns the scratch directory it makes (removed at the
 * end unless --keep); with --dir it refuses a directory that is not empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "murmur2.h"

#define DEMO_TOPIC              "demo-orders"
#define DEMO_PARTITIONS         3u
#define DEMO_THREADS            4
#define DEMO_APPENDS_PER_THREAD 100
#define DEMO_RECORDS_PER_APPEND 5
#define DEMO_TORN_BYTES         64

struct demo {
    char dir[PATH_MAX];
    bool keep;
    bool made_dir;
    rt_engine *engine;
    int step;
};

struct appender {
    struct demo *demo;
    int id;
    int rc;
    uint32_t where[DEMO_PARTITIONS]; /* batches sent per partition */
};

static void say(struct demo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct demo *d, const char *fmt, ...)
{
    va_list ap;
    printf("[%d] ", ++d->step);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void demo_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail demo [--dir DIR] [--keep]\n"
            "\n"
            "Runs a short, self-explaining tour of the engine in this process: topic\n"
            "creation, keyed appends from %d threads (group commit), a zero-copy fetch,\n"
            "offsets by timestamp, clean close and reopen, and crash recovery of a torn\n"
            "tail. Each step prints one line.\n"
            "\n"
            "  --dir DIR   use DIR (created if missing; must be empty) instead of a fresh\n"
            "              temporary directory\n"
            "  --keep      keep the data directory afterwards (try 'ringtail dump' on it)\n",
            DEMO_THREADS);
}

static void *append_thread(void *arg)
{
    struct appender *a = arg;
    char keys[DEMO_RECORDS_PER_APPEND][32];
    char values[DEMO_RECORDS_PER_APPEND][64];
    struct rt_record recs[DEMO_RECORDS_PER_APPEND];
    for (int i = 0; i < DEMO_APPENDS_PER_THREAD; i++) {
        /* One customer per batch: every record of the batch has the same key, so the batch
         * belongs to one partition, chosen as Kafka's default partitioner would. */
        int customer = (a->id * 7919 + i * 104729) % 1000;
        snprintf(keys[0], sizeof keys[0], "customer-%d", customer);
        uint32_t p = murmur2_partition(keys[0], strlen(keys[0]), DEMO_PARTITIONS);
        for (int r = 0; r < DEMO_RECORDS_PER_APPEND; r++) {
            memcpy(keys[r], keys[0], sizeof keys[0]);
            int n = snprintf(values[r], sizeof values[r],
                             "order %d-%d-%d from thread %d for customer %d", a->id, i, r, a->id,
                             customer);
            recs[r] = (struct rt_record){.key = keys[r],
                                         .key_len = (int32_t)strlen(keys[r]),
                                         .value = values[r],
                                         .value_len = n,
                                         .timestamp_ms = -1};
        }
        int rc = rt_append(a->demo->engine, DEMO_TOPIC, p, recs, DEMO_RECORDS_PER_APPEND, NULL);
        if (rc != 0) {
            a->rc = rc;
            return NULL;
        }
        a->where[p]++;
    }
    return NULL;
}

/* The /proc/self/maps line of the mapping that holds addr, path included, or "" if none. */
static void mapping_of(const void *addr, char *path, size_t cap)
{
    path[0] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[PATH_MAX + 128];
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[8];
        int name_at = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &lo, &hi, perms,
                   &name_at) < 3)
            continue;
        if (a >= lo && a < hi) {
            char *nl = strchr(line + name_at, '\n');
            if (nl)
                *nl = '\0';
            snprintf(path, cap, "%s (%s)", line + name_at, perms);
            break;
        }
    }
    fclose(f);
}

static int hw_of(struct demo *d, uint32_t p, int64_t *out)
{
    return rt_list_offsets(d->engine, DEMO_TOPIC, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, out);
}

static int fail_rt(struct demo *d, int rc, const char *what)
{
    (void)d;
    return cli_fail_rt("demo", rc, "%s", what);
}

/* Path of the newest .log of partition p into buf. Returns 0 or -errno. */
static int newest_log(struct demo *d, uint32_t p, char *buf, size_t cap)
{
    char pdir[PATH_MAX];
    if (snprintf(pdir, sizeof pdir, "%s/%s-%" PRIu32, d->dir, DEMO_TOPIC, p) >= (int)sizeof pdir)
        return -ENAMETOOLONG;
    DIR *dh = opendir(pdir);
    if (!dh)
        return -errno;
    char best[64] = "";
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n == 24 && strcmp(de->d_name + 20, ".log") == 0 && strcmp(de->d_name, best) > 0)
            memcpy(best, de->d_name, n + 1);
    }
    closedir(dh);
    if (!best[0])
        return -ENOENT;
    if (snprintf(buf, cap, "%s/%s", pdir, best) >= (int)cap)
        return -ENAMETOOLONG;
    return 0;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

struct first_problem {
    char text[512];
    unsigned count;
};

static void keep_first(void *ctx, const char *msg)
{
    struct first_problem *fp = ctx;
    if (fp->count++ == 0)
        snprintf(fp->text, sizeof fp->text, "%s", msg);
}

static int run(struct demo *d)
{
    struct rt_options opts;
    rt_options_init(&opts);
    int rc = rt_open(d->dir, &opts, &d->engine);
    if (rc != 0)
        return fail_rt(d, rc, "rt_open");
    struct rt_stats s0;
    rt_stats_get(d->engine, &s0);
    say(d,
        "opened %s: io backend %s, %" PRIu32 " shard thread%s; sync=always, so an append "
        "returns only after its bytes are fdatasync'ed",
        d->dir, s0.io_backend ? s0.io_backend : "?", s0.shard_count,
        s0.shard_count == 1 ? "" : "s");

    rc = rt_topic_create(d->engine, DEMO_TOPIC, DEMO_PARTITIONS);
    if (rc != 0)
        return fail_rt(d, rc, "rt_topic_create");
    say(d,
        "created topic %s with %u partitions: directories %s-0 .. %s-%u, each starting "
        "with segment 00000000000000000000.log",
        DEMO_TOPIC, DEMO_PARTITIONS, DEMO_TOPIC, DEMO_TOPIC, DEMO_PARTITIONS - 1);

    /* ---- concurrent appends: group commit ---- */
    struct appender ap[DEMO_THREADS];
    pthread_t th[DEMO_THREADS];
    rt_stats_get(d->engine, &s0);
    double t0 = now_ms();
    for (int i = 0; i < DEMO_THREADS; i++) {
        ap[i] = (struct appender){.demo = d, .id = i};
        if (pthread_create(&th[i], NULL, append_thread, &ap[i]) != 0)
            return cli_fail("demo", "pthread_create failed");
    }
    for (int i = 0; i < DEMO_THREADS; i++)
        pthread_join(th[i], NULL);
    double t1 = now_ms();
    for (int i = 0; i < DEMO_THREADS; i++)
        if (ap[i].rc != 0)
            return fail_rt(d, ap[i].rc, "rt_append from a demo thread");
    struct rt_stats s1;
    rt_stats_get(d->engine, &s1);
    uint64_t batches = s1.batches_appended - s0.batches_appended;
    uint64_t rounds = s1.rounds - s0.rounds;
    uint64_t syncs = s1.fdatasyncs - s0.fdatasyncs;
    uint32_t per_p[DEMO_PARTITIONS] = {0};
    for (int i = 0; i < DEMO_THREADS; i++)
        for (uint32_t p = 0; p < DEMO_PARTITIONS; p++)
            per_p[p] += ap[i].where[p];
    say(d,
        "%d threads appended %" PRIu64 " batches of %d keyed records at once in %.0f ms "
        "(keys placed by Kafka's murmur2: %" PRIu32 "/%" PRIu32 "/%" PRIu32
        " batches per partition)",
        DEMO_THREADS, batches, DEMO_RECORDS_PER_APPEND, t1 - t0, per_p[0], per_p[1], per_p[2]);
    say(d,
        "group commit: %" PRIu64 " rounds and %" PRIu64 " fdatasyncs for %" PRIu64
        " batches = %.1f records per fdatasync (one at a time would need one per batch)",
        rounds, syncs, batches,
        syncs ? (double)(batches * DEMO_RECORDS_PER_APPEND) / (double)syncs : 0.0);

    /* ---- zero-copy fetch ---- */
    rt_fetch *f = NULL;
    rc = rt_fetch_start(d->engine, DEMO_TOPIC, 0, 0, 64 * 1024, RT_READ_UNCOMMITTED, &f);
    if (rc != 0)
        return fail_rt(d, rc, "rt_fetch_start");
    const struct rt_fetch_view *v = rt_fetch_get(f);
    char where[PATH_MAX + 16];
    mapping_of(v->data, where, sizeof where);
    say(d,
        "fetched %s-0 from offset 0: %zu bytes at position %" PRIu64 " of %s; the pointer "
        "%p lies in this process's mapping of %s",
        DEMO_TOPIC, v->size_bytes, v->segment_position, v->segment_path ? v->segment_path : "?",
        (const void *)v->data, where[0] ? where : "(not found in /proc/self/maps)");
    bool same = false;
    if (v->segment_path && v->size_bytes > 0) {
        int fd = open(v->segment_path, O_RDONLY | O_CLOEXEC);
        uint8_t *copy = malloc(v->size_bytes);
        if (fd >= 0 && copy &&
            pread(fd, copy, v->size_bytes, (off_t)v->segment_position) == (ssize_t)v->size_bytes)
            same = memcmp(copy, v->data, v->size_bytes) == 0;
        free(copy);
        if (fd >= 0)
            close(fd);
    }
    int64_t mid_ts = -1, mid_offset = -1, count = 0;
    struct rt_records it;
    struct rt_record_view r;
    char first[160] = "";
    if (rt_records_init(&it, f, 0) == 0) {
        while (rt_records_next(&it, &r) == 0) {
            if (count == 0)
                snprintf(first, sizeof first, "offset %" PRId64 " key '%.*s' value '%.*s'",
                         r.offset, r.key_len > 0 ? r.key_len : 0, (const char *)r.key,
                         r.value_len > 0 ? r.value_len : 0, (const char *)r.value);
            if (count == 10) { /* the first record of the third batch */
                mid_ts = r.timestamp_ms;
                mid_offset = r.offset;
            }
            count++;
        }
    }
    say(d,
        "zero copy: those %zu bytes are %s the file's bytes at that position, read with "
        "pread; the iterator checked each batch's CRC and yields key/value pointers into the "
        "same mapping (first: %s)",
        v->size_bytes, same ? "identical to" : "NOT identical to", first);
    rt_fetch_release(f);

    /* ---- offsets by timestamp ---- */
    if (mid_ts >= 0) {
        int64_t by_ts = -1, earliest = -1, latest = -1;
        rt_list_offsets(d->engine, DEMO_TOPIC, 0, mid_ts, RT_READ_UNCOMMITTED, &by_ts);
        rt_list_offsets(d->engine, DEMO_TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED,
                        &earliest);
        rt_list_offsets(d->engine, DEMO_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &latest);
        say(d,
            "list offsets of %s-0: earliest %" PRId64 ", latest (high watermark) %" PRId64
            "; first offset with timestamp >= %" PRId64 " (the timestamp of offset %" PRId64
            ") is %" PRId64 " (the time index finds it)",
            DEMO_TOPIC, earliest, latest, mid_ts, mid_offset, by_ts);
    }

    /* ---- clean close and reopen ---- */
    int64_t hw_before[DEMO_PARTITIONS];
    for (uint32_t p = 0; p < DEMO_PARTITIONS; p++)
        if ((rc = hw_of(d, p, &hw_before[p])) != 0)
            return fail_rt(d, rc, "rt_list_offsets");
    rc = rt_close(d->engine);
    d->engine = NULL;
    if (rc != 0)
        return fail_rt(d, rc, "rt_close");
    char clean[PATH_MAX + 32];
    snprintf(clean, sizeof clean, "%s/.clean_shutdown", d->dir);
    bool marker = access(clean, F_OK) == 0;
    t0 = now_ms();
    rc = rt_open(d->dir, &opts, &d->engine);
    t1 = now_ms();
    if (rc != 0)
        return fail_rt(d, rc, "rt_open (reopen)");
    int64_t hw_after[DEMO_PARTITIONS];
    for (uint32_t p = 0; p < DEMO_PARTITIONS; p++)
        if ((rc = hw_of(d, p, &hw_after[p])) != 0)
            return fail_rt(d, rc, "rt_list_offsets");
    say(d,
        "closed cleanly (%s written) and reopened in %.1f ms: the marker lets open skip "
        "recovery; high watermarks %" PRId64 "/%" PRId64 "/%" PRId64 " -> %" PRId64 "/%" PRId64
        "/%" PRId64,
        marker ? ".clean_shutdown" : "NO .clean_shutdown", t1 - t0, hw_before[0], hw_before[1],
        hw_before[2], hw_after[0], hw_after[1], hw_after[2]);
    rc = rt_close(d->engine);
    d->engine = NULL;
    if (rc != 0)
        return fail_rt(d, rc, "rt_close");

    /* ---- crash simulation: a torn tail ---- */
    char log[PATH_MAX];
    rc = newest_log(d, 0, log, sizeof log);
    if (rc != 0)
        return cli_fail("demo", "no segment in %s/%s-0: %s", d->dir, DEMO_TOPIC, strerror(-rc));
    off_t size_before = file_size(log);
    int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return cli_fail("demo", "%s: %s", log, strerror(errno));
    /* What a crash mid-write leaves: the start of a batch header (the next offset, a length
     * promising more bytes than follow) and then whatever was in flight. */
    uint8_t torn[DEMO_TORN_BYTES];
    for (int i = 0; i < DEMO_TORN_BYTES; i++)
        torn[i] = (uint8_t)(0xA5 ^ (i * 31));
    for (int i = 0; i < 8; i++)
        torn[i] = (uint8_t)((uint64_t)hw_after[0] >> (56 - 8 * i));
    torn[8] = 0, torn[9] = 0, torn[10] = 0x10, torn[11] = 0; /* length 4096 */
    ssize_t w = write(fd, torn, sizeof torn);
    close(fd);
    if (w != (ssize_t)sizeof torn)
        return cli_fail("demo", "%s: short write", log);
    unlink(clean);
    struct first_problem fp = {0};
    struct rt_verify_counts vc;
    int vrc = rt_verify_with_counts(d->dir, keep_first, &fp, &vc);
    say(d,
        "simulated a crash: appended %d bytes of a torn batch to %s (%lld -> %lld bytes) and "
        "removed .clean_shutdown; rt_verify now says: %s",
        DEMO_TORN_BYTES, log, (long long)size_before, (long long)file_size(log),
        vrc == RT_E_CORRUPT && fp.count ? fp.text : "(no problem found?)");

    t0 = now_ms();
    rc = rt_open(d->dir, &opts, &d->engine);
    t1 = now_ms();
    if (rc != 0)
        return fail_rt(d, rc, "rt_open (recovery)");
    int64_t hw_rec = -1;
    if ((rc = hw_of(d, 0, &hw_rec)) != 0)
        return fail_rt(d, rc, "rt_list_offsets");
    rc = rt_close(d->engine);
    d->engine = NULL;
    if (rc != 0)
        return fail_rt(d, rc, "rt_close");
    fp = (struct first_problem){0};
    vrc = rt_verify_with_counts(d->dir, keep_first, &fp, &vc);
    say(d,
        "reopened without the marker, so open recovered (%.1f ms): it scanned the newest "
        "segment, cut the torn tail at the last valid batch (%s now %lld bytes) and kept "
        "every acknowledged record: high watermark of %s-0 still %" PRId64 "; verify: %s",
        t1 - t0, log, (long long)file_size(log), DEMO_TOPIC, hw_rec,
        vrc == 0 ? "healthy" : fp.text);
    if (vrc != 0 || hw_rec != hw_after[0])
        return cli_fail("demo", "recovery did not restore a healthy log");
    return CLI_EXIT_OK;
}

int cmd_demo(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, 'd'},
        {"keep", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct demo d = {0};
    const char *dir_arg = NULL;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:kh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            dir_arg = optarg;
            break;
        case 'k':
            d.keep = true;
            break;
        case 'h':
            demo_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("demo", "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("demo", "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage("demo", "unexpected argument '%s'", argv[optind]);

    if (dir_arg) {
        if (snprintf(d.dir, sizeof d.dir, "%s", dir_arg) >= (int)sizeof d.dir)
            return cli_usage("demo", "--dir: path too long");
        DIR *dh = opendir(d.dir);
        if (dh) {
            struct dirent *de;
            bool empty = true;
            while ((de = readdir(dh)) != NULL)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                    empty = false;
            closedir(dh);
            if (!empty)
                return cli_usage("demo", "--dir %s is not empty; the demo needs a fresh directory",
                                 d.dir);
        } else if (errno == ENOENT) {
            if (mkdir(d.dir, 0755) != 0)
                return cli_fail("demo", "%s: %s", d.dir, strerror(errno));
            d.made_dir = true;
        } else {
            return cli_fail("demo", "%s: %s", d.dir, strerror(errno));
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(d.dir, sizeof d.dir, "%s/ringtail-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(d.dir))
            return cli_fail("demo", "mkdtemp %s: %s", d.dir, strerror(errno));
        d.made_dir = true;
    }

    int ex = run(&d);
    if (d.engine)
        rt_close(d.engine);
    if (d.keep) {
        printf("kept %s: try 'ringtail verify %s' or 'ringtail dump %s/%s-0/*.log'\n", d.dir, d.dir,
               d.dir, DEMO_TOPIC);
    } else if (d.made_dir) {
        cli_remove_tree(d.dir);
    } else {
        /* --dir named an existing empty directory: empty it again, keep the directory. */
        DIR *dh = opendir(d.dir);
        if (dh) {
            struct dirent *de;
            char path[PATH_MAX + 256];
            while ((de = readdir(dh)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                    continue;
                snprintf(path, sizeof path, "%s/%s", d.dir, de->d_name);
                cli_remove_tree(path);
            }
            closedir(dh);
        }
    }
    if (ex == CLI_EXIT_OK)
        printf("demo finished: every step behaved as described\n");
    return ex;
}
