/*
 * cmd_demo.c — `ringtail demo`: a short tour that runs the engine in this process on a scratch
 * data directory and explains each step in one line: topic creation, concurrent keyed appends
 * with group commit, a zero-copy fetch, offsets by timestamp, a clean close and reopen, and a
 * simulated crash whose torn tail recovery cuts off, and an exactly-once consume-transform-produce
 * pipeline that is killed with SIGKILL midway and restarted.
 *
 * The demo only uses the public API (ringtail.h) plus rt_verify_with_counts, and plain file
 * operations for the crash simulation; the pipeline runs in a forked child (the engine is closed
 * in the parent while it runs, as only one process may open a directory). It owns the scratch
 * directory it makes (removed at the end unless --keep); with --dir it refuses a directory that is
 * not empty.
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
#define EOS_IN                  "demo-events"
#define EOS_OUT                 "demo-events-upper"
#define EOS_PARTITIONS          2u
#define EOS_RECORDS             40
#define EOS_COMMIT_EVERY        5 /* records per transaction */
#define EOS_KILL_AFTER_COMMITS  3
#define EOS_OPEN_WHEN_KILLED    2 /* records of the transaction left open by the kill */
#define EOS_GROUP               "demo-upper"
#define EOS_TXN_ID              "demo-upper-pipeline"
/* A small preallocation: recovery after the kill scans each active segment to its end. */
#define EOS_SEGMENT_BYTES (4u << 20)
#define EOS_POLL_MS       200

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
            "tail, and an exactly-once consume-transform-produce pipeline (read_committed\n"
            "consumer, transactional producer with its offsets) killed with SIGKILL midway\n"
            "and restarted. Each step prints one line.\n"
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

/* ---- exactly-once consume-transform-produce ---- */

struct eos_stats {
    int processed;    /* records read and sent in committed transactions */
    int transactions; /* committed */
    int64_t producer_id;
    int16_t epoch_first;                /* after init_transactions */
    int64_t resumed_at[EOS_PARTITIONS]; /* positions the consumer started from */
};

/* Adds the consumer's positions to the open transaction and commits it. */
static int eos_commit(rt_producer *p, rt_consumer *c)
{
    struct rt_offset offs[EOS_PARTITIONS];
    size_t count = 0;
    int rc = rt_consumer_positions(c, offs, EOS_PARTITIONS, &count);
    if (rc == 0)
        rc = rt_producer_send_offsets(p, EOS_GROUP, offs, count);
    if (rc == 0)
        rc = rt_producer_commit(p, -1);
    if (rc != 0)
        cli_fail_rt("demo", rc, "commit");
    return rc;
}

/* Reads EOS_IN read_committed as group EOS_GROUP, writes each value uppercased to the same
 * partition of EOS_OUT, and commits the output with the consumer's positions every
 * EOS_COMMIT_EVERY records, until the input is drained. With kill_fd >= 0 (the child), after
 * EOS_KILL_AFTER_COMMITS commits it sends EOS_OPEN_WHEN_KILLED more records in a transaction,
 * flushes them into the log, reports on kill_fd and waits to be killed. */
static int eos_pipeline(rt_engine *e, int kill_fd, struct eos_stats *st)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = EOS_TXN_ID;
    rt_producer *p = NULL;
    rt_consumer *c = NULL;
    int rc = rt_producer_open(e, &po, &p);
    if (rc == 0)
        rc = rt_producer_init_transactions(p, 60000);
    if (rc != 0) {
        cli_fail_rt("demo", rc, "transactional producer '%s'", EOS_TXN_ID);
        goto out;
    }
    rt_producer_id(p, &st->producer_id, &st->epoch_first);
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = EOS_GROUP;
    co.isolation = RT_READ_COMMITTED;
    uint32_t parts[EOS_PARTITIONS];
    for (uint32_t i = 0; i < EOS_PARTITIONS; i++)
        parts[i] = i;
    rc = rt_consumer_open(e, &co, &c);
    if (rc == 0)
        rc = rt_consumer_assign(c, EOS_IN, parts, EOS_PARTITIONS);
    for (uint32_t i = 0; rc == 0 && i < EOS_PARTITIONS; i++)
        rc = rt_consumer_position(c, EOS_IN, i, &st->resumed_at[i]);
    if (rc != 0) {
        cli_fail_rt("demo", rc, "consumer of group '%s'", EOS_GROUP);
        goto out;
    }
    int in_txn = 0;
    for (;;) {
        struct rt_record_view r;
        const char *topic = NULL;
        uint32_t partition = 0;
        rc = rt_consumer_poll(c, &r, &topic, &partition, EOS_POLL_MS);
        if (rc == RT_E_END)
            break;
        if (rc != 0) {
            cli_fail_rt("demo", rc, "poll %s", EOS_IN);
            goto out;
        }
        if (in_txn == 0 && (rc = rt_producer_begin(p)) != 0) {
            cli_fail_rt("demo", rc, "begin");
            goto out;
        }
        char value[64];
        int32_t n = r.value_len > 0 ? r.value_len : 0;
        if (n > (int32_t)sizeof value)
            n = (int32_t)sizeof value;
        for (int32_t i = 0; i < n; i++) {
            char ch = (char)r.value[i];
            value[i] = ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
        }
        struct rt_producer_message m = {.record = {.key = r.key,
                                                   .key_len = r.key_len,
                                                   .value = value,
                                                   .value_len = n,
                                                   .timestamp_ms = -1},
                                        .sequence = -1};
        rc = rt_producer_send(p, EOS_OUT, (int32_t)partition, &m, NULL, NULL);
        if (rc != 0) {
            cli_fail_rt("demo", rc, "send to %s", EOS_OUT);
            goto out;
        }
        in_txn++;
        if (kill_fd >= 0 && st->transactions == EOS_KILL_AFTER_COMMITS &&
            in_txn == EOS_OPEN_WHEN_KILLED) {
            rc = rt_producer_flush(p, -1); /* the open transaction's records are in the log */
            char ready = 'k';
            if (rc == 0 && write(kill_fd, &ready, 1) == 1)
                for (;;)
                    pause(); /* SIGKILL arrives here */
            cli_fail_rt("demo", rc, "flush before the kill");
            goto out;
        }
        if (in_txn == EOS_COMMIT_EVERY) {
            if ((rc = eos_commit(p, c)) != 0)
                goto out;
            st->processed += in_txn;
            st->transactions++;
            in_txn = 0;
        }
    }
    if (in_txn > 0) {
        if ((rc = eos_commit(p, c)) != 0)
            goto out;
        st->processed += in_txn;
        st->transactions++;
    }
    rc = 0;
out:
    if (c)
        rt_consumer_close(c);
    if (p)
        rt_producer_close(p);
    return rc;
}

/* Counts EOS_OUT's records under `iso`; with `seen` (EOS_RECORDS entries), how often each input
 * number's uppercased value appears. */
static int eos_count_output(rt_engine *e, enum rt_isolation iso, int *total, int *seen)
{
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = NULL;
    co.isolation = iso;
    rt_consumer *c = NULL;
    uint32_t parts[EOS_PARTITIONS];
    for (uint32_t i = 0; i < EOS_PARTITIONS; i++)
        parts[i] = i;
    int rc = rt_consumer_open(e, &co, &c);
    if (rc == 0)
        rc = rt_consumer_assign(c, EOS_OUT, parts, EOS_PARTITIONS);
    *total = 0;
    while (rc == 0) {
        struct rt_record_view r;
        rc = rt_consumer_poll(c, &r, NULL, NULL, EOS_POLL_MS);
        if (rc != 0)
            break;
        (*total)++;
        int num = -1;
        char buf[64];
        int32_t n = r.value_len > 0 && r.value_len < (int32_t)sizeof buf ? r.value_len : 0;
        memcpy(buf, r.value ? (const void *)r.value : "", (size_t)n);
        buf[n] = '\0';
        if (seen && sscanf(buf, "EVENT-%d", &num) == 1 && num >= 0 && num < EOS_RECORDS)
            seen[num]++;
    }
    if (c)
        rt_consumer_close(c);
    return rc == RT_E_END ? 0 : rc;
}

static int run_eos(struct demo *d)
{
    struct rt_options opts;
    rt_options_init(&opts);
    opts.segment_size_bytes = EOS_SEGMENT_BYTES;
    int rc = rt_open(d->dir, &opts, &d->engine);
    if (rc != 0)
        return fail_rt(d, rc, "rt_open (pipeline)");
    rc = rt_topic_create(d->engine, EOS_IN, EOS_PARTITIONS);
    if (rc == 0)
        rc = rt_topic_create(d->engine, EOS_OUT, EOS_PARTITIONS);
    if (rc != 0)
        return fail_rt(d, rc, "rt_topic_create");
    for (int i = 0; i < EOS_RECORDS; i++) {
        char key[32], value[32];
        int kn = snprintf(key, sizeof key, "user-%d", i % 7);
        int vn = snprintf(value, sizeof value, "event-%d", i);
        struct rt_record rec = {
            .key = key, .key_len = kn, .value = value, .value_len = vn, .timestamp_ms = -1};
        rc = rt_append(d->engine, EOS_IN, (uint32_t)i % EOS_PARTITIONS, &rec, 1, NULL);
        if (rc != 0)
            return fail_rt(d, rc, "rt_append (pipeline input)");
    }
    rc = rt_close(d->engine);
    d->engine = NULL;
    if (rc != 0)
        return fail_rt(d, rc, "rt_close");
    say(d,
        "exactly once: %d records 'event-N' in %s; a pipeline reads them with a read_committed "
        "consumer of group %s, writes each uppercased to %s and commits every %d records in one "
        "transaction together with the consumer's offsets (rt_producer_send_offsets)",
        EOS_RECORDS, EOS_IN, EOS_GROUP, EOS_OUT, EOS_COMMIT_EVERY);

    /* The first instance runs in a child and is killed with a transaction open. */
    int fds[2];
    if (pipe(fds) != 0)
        return cli_fail("demo", "pipe: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return cli_fail("demo", "fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        rt_engine *e = NULL;
        struct eos_stats st = {0};
        if (rt_open(d->dir, &opts, &e) != 0)
            _exit(1);
        eos_pipeline(e, fds[1], &st);
        _exit(1); /* only reached on an error: the kill never came */
    }
    close(fds[1]);
    char ready = 0;
    ssize_t got = read(fds[0], &ready, 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != 1 || !WIFSIGNALED(status))
        return cli_fail("demo", "the pipeline child failed before the kill (status %d)", status);

    rc = rt_open(d->dir, &opts, &d->engine);
    if (rc != 0)
        return fail_rt(d, rc, "rt_open (after the kill)");
    int uncommitted = 0, committed_before = 0;
    rc = eos_count_output(d->engine, RT_READ_UNCOMMITTED, &uncommitted, NULL);
    if (rc == 0)
        rc = eos_count_output(d->engine, RT_READ_COMMITTED, &committed_before, NULL);
    if (rc != 0)
        return fail_rt(d, rc, "counting the output");
    say(d,
        "killed the pipeline process with SIGKILL after %d committed transactions, with a "
        "transaction open: %s holds %d records, of which read_committed readers see %d (the "
        "open transaction's %d pin the LSO)",
        EOS_KILL_AFTER_COMMITS, EOS_OUT, uncommitted, committed_before,
        uncommitted - committed_before);

    struct eos_stats st = {0};
    rc = eos_pipeline(d->engine, -1, &st);
    if (rc != 0)
        return CLI_EXIT_FAIL;
    say(d,
        "restarted it: rt_producer_init_transactions fenced the dead instance (producer %" PRId64
        ", now epoch %d) and aborted its open transaction; the consumer resumed from the "
        "committed offsets (%s-0 at %" PRId64 ", %s-1 at %" PRId64 ") and the pipeline "
        "processed the remaining %d records in %d transactions",
        st.producer_id, (int)st.epoch_first, EOS_IN, st.resumed_at[0], EOS_IN, st.resumed_at[1],
        st.processed, st.transactions);

    int seen[EOS_RECORDS] = {0};
    int total = 0, physical = 0;
    rc = eos_count_output(d->engine, RT_READ_COMMITTED, &total, seen);
    if (rc == 0)
        rc = eos_count_output(d->engine, RT_READ_UNCOMMITTED, &physical, NULL);
    if (rc != 0)
        return fail_rt(d, rc, "reading the output");
    int once = 0, missing = 0, dup = 0;
    for (int i = 0; i < EOS_RECORDS; i++) {
        if (seen[i] == 1)
            once++;
        else if (seen[i] == 0)
            missing++;
        else
            dup++;
    }
    bool exact = once == EOS_RECORDS && total == EOS_RECORDS;
    say(d,
        "%s: a read_committed read of %s returns %d records and each of the %d inputs exactly "
        "%s (%d once, %d missing, %d duplicated); the log itself holds %d, the killed "
        "transaction's records being aborted",
        exact ? "exactly-once output" : "NOT exactly once", EOS_OUT, total, EOS_RECORDS,
        exact ? "once" : "once?", once, missing, dup, physical);
    rc = rt_close(d->engine);
    d->engine = NULL;
    if (rc != 0)
        return fail_rt(d, rc, "rt_close");
    if (!exact)
        return cli_fail("demo", "the pipeline's output is not exactly once");
    return CLI_EXIT_OK;
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
    return run_eos(d);
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
