/*
 * test_damage.c — the damage matrix: verify and open must agree on every damaged directory.
 *
 * A directory is built through the public API with committed and aborted transactions (values
 * "commit-N" / "abort-N"), transactional offset commits, an idempotent producer, a named
 * producer, several sealed segments per partition and producer snapshots; once closed cleanly
 * and once left as a SIGKILLed process leaves it. rt_verify must find it clean. Then, for every
 * file kind (sealed and newest .log of a user topic and of the internal topics, .index,
 * .timeindex, .txnindex, .snapshot, producers.meta, ringtail.meta, the clean-shutdown marker,
 * the recovery point, the leader-epoch checkpoint)
 * and every damage (truncation at structural boundaries and inside a record, delete, zero, a
 * flipped byte at several positions, appended garbage), a fresh copy is damaged and:
 *   - when rt_open refuses, it is RT_E_CORRUPT, its detail names a file, and rt_verify on the
 *     damaged copy reported a problem for that same file;
 *   - when rt_open succeeds, read_committed serves no aborted record, an append and a clean
 *     close work, and rt_verify is clean afterwards (what open repaired is no longer reported);
 *   - before that, a read-only open (opts.read_only, what consume and txn list use) changes no
 *     byte of the damaged copy, and either serves no aborted record or refuses as above;
 *   - open never crashes or trips an assertion (each case runs in a child process).
 * And the crashed directory loses its newest segment's tail as a power loss would (cut, or zeros
 * from a batch boundary past the last clean close): that is no damage (SC7), so verify must
 * report no problem (its indexes past the end are warnings) and open must succeed.
 * Payload damage under a batch CRC is the one thing open does not look for (it would read every
 * byte of every segment at each open): there the reader must refuse the batch naming the file,
 * and verify must report that file, before and after.
 * The test that would have found defects 4, 6, 8 and 10 of issue 10.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
 * Under RT_TEST_SWEEP_STRIDE (the sanitizer stages) the matrix and the marker flips run the cases
 * tu_sweep_takes picks (the two backends split them); the Release stage runs every case on both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"

#define TOPIC         "t"
#define TXNS          48
#define REPORTS_MAX   64
#define REPORT_BYTES  1024
#define CASE_NAME_MAX 512

static void options(struct rt_options *o)
{
    tu_options_small(o, 8 * 1024, 2 * 1024, 256);
    /* Page cache only: a process that dies keeps what it wrote, and the matrix opens hundreds
     * of copies (open and close still fsync what they always do). */
    o->sync_mode = RT_SYNC_NONE;
}

/* ---- the directory ---------------------------------------------------------------------- */

static void send_value(rt_producer *p, const char *value)
{
    struct rt_producer_message m = {.record = {.key_len = -1,
                                               .value = value,
                                               .value_len = (int32_t)strlen(value),
                                               .timestamp_ms = -1},
                                    .sequence = -1};
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, NULL, NULL), 0);
}

/* Fills dir; returns with the engine open (the caller closes it or not). */
static rt_engine *fill(const char *dir)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    /* A leader-epoch checkpoint (format.md A.10) with two epochs the batches carry. */
    assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    po.linger_ms = 1;
    rt_producer *tp = NULL;
    assert_int_equal(rt_producer_open(e, &po, &tp), 0);
    assert_int_equal(rt_producer_init_transactions(tp, -1), 0);
    rt_producer_options_init(&po);
    po.linger_ms = 1;
    rt_producer *ip = NULL;
    assert_int_equal(rt_producer_open(e, &po, &ip), 0);
    rt_producer_options_init(&po);
    po.name = "named";
    po.linger_ms = 1;
    rt_producer *np = NULL;
    assert_int_equal(rt_producer_open(e, &po, &np), 0);
    char v[96];
    for (int i = 0; i < TXNS; i++) {
        bool abort = i % 3 == 1;
        if (i == TXNS / 2)
            assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 2), 0);
        assert_int_equal(rt_producer_begin(tp), 0);
        for (int k = 0; k < 3; k++) {
            snprintf(v, sizeof(v), "%s-%d-%d-padding-padding-padding", abort ? "abort" : "commit",
                     i, k);
            send_value(tp, v);
        }
        snprintf(v, sizeof(v), "plain-%d", i);
        send_value(ip, v);
        assert_int_equal(rt_producer_flush(ip, -1), 0);
        struct rt_offset off = {.topic = TOPIC, .partition = 0, .offset = i + 1};
        assert_int_equal(rt_producer_send_offsets(tp, "g", &off, 1), 0);
        if (abort)
            assert_int_equal(rt_producer_abort(tp, -1), 0);
        else
            assert_int_equal(rt_producer_commit(tp, -1), 0);
        if (i % 8 == 0) {
            snprintf(v, sizeof(v), "named-%d", i);
            send_value(np, v);
            assert_int_equal(rt_producer_flush(np, -1), 0);
        }
    }
    assert_int_equal(rt_producer_close(tp), 0);
    assert_int_equal(rt_producer_close(ip), 0);
    assert_int_equal(rt_producer_close(np), 0);
    return e;
}

static char *build(bool clean)
{
    char *dir = tu_mkdtemp();
    if (clean) {
        assert_int_equal(rt_close(fill(dir)), 0);
        return dir;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The transactions are closed cleanly first, so the coordinator's log is complete and
         * the outcome does not depend on whether a CompleteCommit was written before the kill
         * (a lost tail that drops an ABORT marker while the coordinator still has to complete
         * the next transaction is issue 10 defect 9's reconciliation, not this matrix's). Then
         * more appends, and the process dies as a SIGKILL would: no close, no clean-shutdown
         * marker, the newest segments preallocated and their indexes untrimmed. */
        assert_int_equal(rt_close(fill(dir)), 0);
        struct rt_options o;
        options(&o);
        rt_engine *e = NULL;
        assert_int_equal(rt_open(dir, &o, &e), 0);
        struct rt_record r = {.key_len = -1, .value = "tail", .value_len = 4, .timestamp_ms = -1};
        for (int i = 0; i < 8; i++)
            assert_int_equal(rt_append(e, TOPIC, 0, &r, 1, NULL), 0);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return dir;
}

/* ---- verify ----------------------------------------------------------------------------- */

struct reports {
    char lines[REPORTS_MAX][REPORT_BYTES];
    unsigned problems;
};

static void collect(void *ctx, const char *msg)
{
    struct reports *r = ctx;
    if (strncmp(msg, "warning: ", 9) == 0)
        return;
    if (r->problems < REPORTS_MAX)
        snprintf(r->lines[r->problems], REPORT_BYTES, "%s", msg);
    r->problems++;
}

static bool reports_name(const struct reports *r, const char *file)
{
    for (unsigned i = 0; i < r->problems && i < REPORTS_MAX; i++)
        if (strstr(r->lines[i], file))
            return true;
    return false;
}

static void print_reports(const char *what, const struct reports *r)
{
    for (unsigned i = 0; i < r->problems && i < REPORTS_MAX; i++)
        fprintf(stderr, "    %s: %s\n", what, r->lines[i]);
}

/* ---- files and damages ------------------------------------------------------------------ */

enum damage { TRUNCATE, DELETE, ZERO, FLIP, APPEND, LOST_TAIL };

struct file_case {
    char rel[256];  /* path relative to the directory */
    char label[64]; /* e.g. "sealed .log of t-0" */
    char kind[16];  /* extension or name */
};

/* The files of a partition directory with the given suffix, sorted by name. */
static unsigned list_files(const char *dir, const char *sub, const char *suffix, char out[][64],
                           unsigned max)
{
    char *pdir = tu_path("%s/%s", dir, sub);
    DIR *d = opendir(pdir);
    free(pdir);
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < max) {
        size_t len = strlen(de->d_name), k = strlen(suffix);
        if (len == 20 + k && strcmp(de->d_name + 20, suffix) == 0)
            snprintf(out[n++], 64, "%.63s", de->d_name);
    }
    closedir(d);
    qsort(out, n, 64, (int (*)(const void *, const void *))strcmp);
    return n;
}

static void add_file(struct file_case *files, unsigned *n, const char *rel, const char *label,
                     const char *kind)
{
    struct file_case *f = &files[(*n)++];
    snprintf(f->rel, sizeof(f->rel), "%s", rel);
    snprintf(f->label, sizeof(f->label), "%s", label);
    snprintf(f->kind, sizeof(f->kind), "%s", kind);
}

/* Picks the sealed (first) and newest file of each kind in a partition directory. */
static void add_partition(const char *dir, const char *sub, struct file_case *files, unsigned *n,
                          bool logs_only)
{
    static const char *const exts[] = {".log", ".index", ".timeindex", ".txnindex", ".snapshot"};
    for (unsigned k = 0; k < (logs_only ? 1u : 5u); k++) {
        char names[256][64];
        unsigned count = list_files(dir, sub, exts[k], names, 256);
        if (count == 0)
            continue;
        char rel[256], label[64];
        /* A sealed .txnindex worth damaging holds entries: take the first non-empty one. */
        unsigned first = 0;
        if (k == 3) {
            while (first + 1 < count) {
                char *p = tu_path("%s/%s/%s", dir, sub, names[first]);
                size_t size = tu_file_size(p);
                free(p);
                if (size > 0)
                    break;
                first++;
            }
        }
        if (first + 1 < count) {
            snprintf(rel, sizeof(rel), "%s/%s", sub, names[first]);
            snprintf(label, sizeof(label), "sealed %s of %s", exts[k], sub);
            add_file(files, n, rel, label, exts[k] + 1);
        }
        snprintf(rel, sizeof(rel), "%s/%s", sub, names[count - 1]);
        snprintf(label, sizeof(label), "newest %s of %s", exts[k], sub);
        add_file(files, n, rel, label, exts[k] + 1);
    }
}

/* The positions of a .log's batches (up to max) whose baseOffset is at least min_offset, up to
 * the first zero length (preallocated space). */
static unsigned batch_starts(const uint8_t *buf, size_t len, int64_t min_offset, uint64_t *starts,
                             unsigned max)
{
    unsigned count = 0;
    for (uint64_t pos = 0; pos + 12 <= len && count < max;) {
        uint32_t l = be32_of(buf + pos + 8);
        if (l == 0)
            break;
        if ((int64_t)be64_of(buf + pos) >= min_offset)
            starts[count++] = pos;
        pos += 12 + (uint64_t)l;
    }
    return count;
}

/* Structural boundaries of a file: batch starts of a .log, entry starts of an index, the
 * header and first entries of a snapshot, halves of anything else. */
static unsigned boundaries(const char *path, const char *kind, uint64_t *out, unsigned max)
{
    size_t len = 0;
    uint8_t *buf = tu_read_file(path, &len);
    unsigned n = 0;
    if (strcmp(kind, "log") == 0) {
        uint64_t starts[4096];
        unsigned count = batch_starts(buf, len, INT64_MIN, starts, 4096);
        /* The second batch, the middle one, the last one; and inside a record. */
        if (count > 1)
            out[n++] = starts[1];
        if (count > 2)
            out[n++] = starts[count / 2];
        if (count > 0) {
            out[n++] = starts[count - 1];
            out[n++] = starts[count - 1] + 70 < len ? starts[count - 1] + 70 : len / 2;
        }
        out[n++] = 30; /* inside the first batch's header */
    } else {
        size_t entry = strcmp(kind, "index") == 0       ? 8
                       : strcmp(kind, "timeindex") == 0 ? 12
                       : strcmp(kind, "txnindex") == 0  ? 34
                       : strcmp(kind, "snapshot") == 0  ? 46
                                                        : 0;
        size_t header = strcmp(kind, "snapshot") == 0 ? 10 : 0;
        if (entry && len >= header + entry) {
            size_t entries = (len - header) / entry;
            out[n++] = header + (entries - 1) * entry;             /* the last entry gone */
            out[n++] = header + (entries - 1) * entry + entry / 2; /* a torn last entry */
            if (header)
                out[n++] = header;
        } else {
            out[n++] = len / 2;
        }
    }
    free(buf);
    unsigned k = 0;
    for (unsigned i = 0; i < n && k < max; i++)
        if (out[i] < len && (k == 0 || out[k - 1] != out[i]))
            out[k++] = out[i];
    return k;
}

static void write_bytes(const char *path, uint64_t at, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, (off_t)at), (ssize_t)n);
    close(fd);
}

static void damage(const char *path, enum damage d, uint64_t at, uint8_t mask)
{
    switch (d) {
    case TRUNCATE:
        tu_truncate(path, at);
        break;
    case DELETE:
        assert_int_equal(unlink(path), 0);
        break;
    case ZERO: {
        size_t len = tu_file_size(path);
        uint8_t *z = calloc(1, len ? len : 1);
        write_bytes(path, 0, z, len);
        free(z);
        break;
    }
    case FLIP:
        tu_flip_byte(path, at, mask);
        break;
    case APPEND: {
        uint8_t junk[21];
        memset(junk, 0xA5, sizeof(junk));
        write_bytes(path, tu_file_size(path), junk, sizeof(junk));
        break;
    }
    case LOST_TAIL: {
        /* A power loss over preallocated blocks: the batches from `at` on read as zeros. */
        size_t len = 0;
        uint8_t *buf = tu_read_file(path, &len);
        uint64_t end = at;
        while (end + 12 <= len && be32_of(buf + end + 8) != 0)
            end += 12 + (uint64_t)be32_of(buf + end + 8);
        free(buf);
        end = end < len ? end : len;
        uint8_t *z = calloc(1, end > at ? end - at : 1);
        write_bytes(path, at, z, end - at);
        free(z);
        break;
    }
    }
}

/* Batch starts of a .log whose baseOffset is at least min_offset: the first, the middle and
 * the last of them. */
static unsigned batch_starts_from(const char *path, int64_t min_offset, uint64_t *out)
{
    size_t len = 0;
    uint8_t *buf = tu_read_file(path, &len);
    uint64_t starts[4096];
    unsigned count = batch_starts(buf, len, min_offset, starts, 4096);
    free(buf);
    unsigned n = 0;
    if (count > 0)
        out[n++] = starts[0];
    if (count > 2)
        out[n++] = starts[count / 2];
    if (count > 1)
        out[n++] = starts[count - 1];
    return n;
}

struct damage_case {
    enum damage d;
    uint64_t at;
    const char *what;
};

/* ---- one case, in a child process ------------------------------------------------------- */

/* The path a detail such as "DIR/t-0/000.log: offset 5: ..." names: its first token that
 * starts with dir, up to the first ':'. */
static bool detail_file(const char *detail, const char *dir, char *out, size_t cap)
{
    const char *p = strstr(detail, dir);
    if (!p)
        return false;
    size_t n = strcspn(p, ": ,");
    if (n >= cap)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return n > strlen(dir) + 1;
}

/* Reads the whole partition under read_committed. A batch the reader refuses as RT_E_CORRUPT
 * (payload damage open does not look for: it would read every byte of every segment) has its
 * file copied to corrupt_file. Fails when an aborted record is served. */
static int read_committed_clean(rt_engine *e, const char *name, const char *dir, char *corrupt_file,
                                size_t cap)
{
    int64_t offset = 0, hw = -1;
    int served = 0;
    for (int rounds = 0; rounds < 100000; rounds++) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, TOPIC, 0, offset, 1 << 16, RT_READ_COMMITTED, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            break;
        if (rc != 0) {
            fprintf(stderr, "  %s: read_committed fetch at %" PRId64 ": %s (%s)\n", name, offset,
                    rt_strerror(rc), rt_error_detail());
            if (rc == RT_E_CORRUPT)
                (void)detail_file(rt_error_detail(), dir, corrupt_file, cap);
            return rc == RT_E_CORRUPT ? 0 : -1; /* a damaged batch reported is not served */
        }
        const struct rt_fetch_view *view = rt_fetch_get(f);
        hw = view->last_stable_offset;
        if (view->size_bytes == 0) {
            rt_fetch_release(f);
            break;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            if (rv.value_len >= 5 && memcmp(rv.value, "abort", 5) == 0) {
                if (served++ == 0)
                    fprintf(stderr,
                            "  %s: aborted record %.*s served at offset %" PRId64 " (LSO %" PRId64
                            ", %zu aborted transactions in the fetch)\n",
                            name, (int)rv.value_len, (const char *)rv.value, rv.offset, hw,
                            view->aborted_count);
            }
        }
        int64_t next = rt_records_next_offset(&it);
        rt_fetch_release(f);
        if (rc != RT_E_END) {
            if (rc == RT_E_CORRUPT)
                (void)detail_file(rt_error_detail(), dir, corrupt_file, cap);
            break; /* a damaged batch: reported, not served */
        }
        if (next <= offset || next >= hw)
            break;
        offset = next;
    }
    if (served) {
        fprintf(stderr, "  %s: read_committed served %d aborted records\n", name, served);
        return -1;
    }
    return 0;
}

/* FNV-1a over every file's name, size and bytes below dir (sorted walk): two equal fingerprints
 * mean nothing was created, removed or written. */
static uint64_t fingerprint(const char *dir, uint64_t h)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char *path = tu_path("%s/%s", dir, name);
            for (const char *c = name; *c; c++)
                h = (h ^ (uint8_t)*c) * 1099511628211ull;
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                h = fingerprint(path, h);
            } else {
                size_t len = 0;
                uint8_t *bytes = tu_read_file(path, &len);
                h = (h ^ len) * 1099511628211ull;
                for (size_t k = 0; k < len; k++)
                    h = (h ^ bytes[k]) * 1099511628211ull;
                free(bytes);
            }
            free(path);
        }
        free(names[i]);
    }
    free(names);
    return h;
}

/* A read-only open (what consume and txn list use) of the damaged directory: it changes no byte,
 * and either serves no aborted record or refuses with RT_E_CORRUPT naming a file verify reports. */
static int run_read_only(const char *dir, const char *name, const struct reports *verified)
{
    uint64_t before = fingerprint(dir, 14695981039346656037ull);
    struct rt_options o;
    options(&o);
    o.read_only = true;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e), result = 0;
    if (rc != 0) {
        char file[4096];
        if (rc != RT_E_CORRUPT || !detail_file(rt_error_detail(), dir, file, sizeof(file)) ||
            !reports_name(verified, file)) {
            fprintf(stderr,
                    "  %s: read-only open: %s (%s), not RT_E_CORRUPT naming a file verify "
                    "reports\n",
                    name, rt_strerror(rc), rt_error_detail());
            result = -1;
        }
    } else {
        char corrupt[4096] = "";
        result = read_committed_clean(e, name, dir, corrupt, sizeof(corrupt));
        rc = rt_close(e);
        if (rc != 0) {
            fprintf(stderr, "  %s: read-only close: %s\n", name, rt_strerror(rc));
            result = -1;
        }
    }
    if (fingerprint(dir, 14695981039346656037ull) != before) {
        fprintf(stderr, "  %s: a read-only open changed the directory\n", name);
        result = -1;
    }
    return result;
}

static int run_case(const char *dir, const char *name, bool aftermath)
{
    struct reports *before = calloc(1, sizeof(*before));
    struct reports *after = calloc(1, sizeof(*after));
    int result = -1;
    (void)rt_verify(dir, collect, before);
    if (aftermath && before->problems != 0) {
        /* SC7: what a crash leaves is no damage; verify warns, open repairs. */
        fprintf(stderr, "  %s: verify reports a crash's lost tail as damage\n", name);
        print_reports("verify", before);
        goto out;
    }
    if (run_read_only(dir, name, before) != 0)
        goto out;
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc != 0) {
        char file[4096];
        if (rc != RT_E_CORRUPT) {
            fprintf(stderr, "  %s: open: %s (%s), expected RT_E_CORRUPT or success\n", name,
                    rt_strerror(rc), rt_error_detail());
        } else if (!detail_file(rt_error_detail(), dir, file, sizeof(file))) {
            fprintf(stderr, "  %s: open refused naming no file: %s\n", name, rt_error_detail());
        } else if (!reports_name(before, file)) {
            fprintf(stderr, "  %s: open refused (%s) but verify did not report %s\n", name,
                    rt_error_detail(), file);
            print_reports("verify", before);
        } else {
            result = 0;
        }
        goto out;
    }
    char corrupt[4096] = "";
    if (read_committed_clean(e, name, dir, corrupt, sizeof(corrupt)) != 0)
        goto out_close;
    struct rt_record r = {.key_len = -1, .value = "after", .value_len = 5, .timestamp_ms = -1};
    for (int i = 0; i < 3; i++) {
        rc = rt_append(e, TOPIC, 0, &r, 1, NULL);
        if (rc != 0) {
            fprintf(stderr, "  %s: append after open: %s (%s)\n", name, rt_strerror(rc),
                    rt_error_detail());
            goto out_close;
        }
    }
    rc = rt_close(e);
    e = NULL;
    if (rc != 0) {
        fprintf(stderr, "  %s: close: %s (%s)\n", name, rt_strerror(rc), rt_error_detail());
        goto out;
    }
    rc = rt_verify(dir, collect, after);
    if (rc != 0 && corrupt[0] && reports_name(before, corrupt)) {
        /* Payload damage: open accepted it, the reader refused the batch naming the file, and
         * verify reports that file before and after (nothing can repair lost bytes). */
        bool only = true;
        for (unsigned i = 0; i < after->problems && i < REPORTS_MAX; i++)
            only = only && strstr(after->lines[i], corrupt) != NULL;
        if (only) {
            result = 0;
            goto out;
        }
    }
    if (rc != 0 || after->problems != 0) {
        fprintf(stderr, "  %s: open succeeded but verify still fails afterwards (%s)\n", name,
                rt_strerror(rc));
        print_reports("before open", before);
        print_reports("after open", after);
        goto out;
    }
    result = 0;
out_close:
    if (e)
        (void)rt_close(e);
out:
    free(before);
    free(after);
    return result;
}

/* cp -a of a data directory (two levels: files and partition directories), in-process. */
static void copy_tree(const char *from, const char *to)
{
    DIR *d = opendir(from);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *src = tu_path("%s/%s", from, de->d_name);
        char *dst = tu_path("%s/%s", to, de->d_name);
        struct stat st;
        assert_int_equal(lstat(src, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            assert_int_equal(mkdir(dst, 0755), 0);
            copy_tree(src, dst);
        } else {
            size_t len = 0;
            uint8_t *buf = tu_read_file(src, &len);
            int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, buf, len), (ssize_t)len);
            close(fd);
            free(buf);
        }
        free(src);
        free(dst);
    }
    closedir(d);
}

/* Copies the template, damages the copy and runs the case in a child. True when it passed. */
static bool one_case(const char *template_dir, const char *rel, enum damage d, uint64_t at,
                     uint8_t mask, const char *name, bool aftermath)
{
    char *dir = tu_mkdtemp();
    copy_tree(template_dir, dir);
    char *path = tu_path("%s/%s", dir, rel);
    damage(path, d, at, mask);
    free(path);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(run_case(dir, name, aftermath) == 0 ? 0 : 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "  %s: the engine died with signal %d\n", name, WTERMSIG(status));
    if (!ok && getenv("RT_DAMAGE_KEEP")) {
        /* For a post-mortem: the template and the damaged copy stay. */
        char *kept = tu_path("%s.kept", dir);
        assert_int_equal(
            tu_system("cp -a '%s' '%s.tpl' && cp -a '%s' '%s'", template_dir, kept, dir, kept), 0);
        fprintf(stderr, "  kept %s (and its template %s.tpl)\n", kept, kept);
        free(kept);
    }
    tu_rmdir_free(dir);
    return ok;
}

static void matrix(bool clean)
{
    char *tpl = build(clean);
    struct reports *r = calloc(1, sizeof(*r));
    int vrc = rt_verify(tpl, collect, r);
    print_reports("undamaged", r);
    assert_int_equal(vrc, 0);
    assert_int_equal(r->problems, 0);
    free(r);

    static struct file_case files[64];
    unsigned n = 0;
    add_partition(tpl, TOPIC "-0", files, &n, false);
    add_partition(tpl, "__transaction_state-0", files, &n, true);
    for (int p = 0; p < 64; p++) {
        char sub[64], names[4][64];
        snprintf(sub, sizeof(sub), "__consumer_offsets-%d", p);
        if (list_files(tpl, sub, ".log", names, 4) == 0)
            continue;
        char *lp = tu_path("%s/%s/%s", tpl, sub, names[0]);
        size_t size = tu_file_size(lp);
        free(lp);
        if (size > 0) {
            add_partition(tpl, sub, files, &n, true);
            break;
        }
    }
    add_file(files, &n, "producers.meta", "producers.meta", "producers.meta");
    add_file(files, &n, "ringtail.meta", "ringtail.meta", "ringtail.meta");
    /* The recovery point (format.md A.7): never trusted when damaged, rewritten by open. */
    add_file(files, &n, TOPIC "-0/recovery-point", "recovery point", "recovery-point");
    /* The leader-epoch checkpoint (format.md A.10, LEC3): rebuilt from the batches by open. */
    add_file(files, &n, TOPIC "-0/leader-epoch-checkpoint", "leader-epoch checkpoint", "epochs");
    if (clean)
        add_file(files, &n, ".clean_shutdown", "clean-shutdown marker", "clean");

    unsigned cases = 0, failed = 0, seen = 0;
    for (unsigned i = 0; i < n; i++) {
        char *path = tu_path("%s/%s", tpl, files[i].rel);
        size_t size = tu_file_size(path);
        uint64_t cuts[16];
        unsigned ncuts = boundaries(path, files[i].kind, cuts, 16);
        free(path);
        struct damage_case ds[32];
        unsigned nd = 0;
        ds[nd++] = (struct damage_case){DELETE, 0, "delete"};
        if (strcmp(files[i].kind, "clean") != 0) {
            for (unsigned k = 0; k < ncuts; k++)
                ds[nd++] = (struct damage_case){TRUNCATE, cuts[k], "truncate"};
            if (size > 0) {
                ds[nd++] = (struct damage_case){TRUNCATE, 0, "truncate"};
                ds[nd++] = (struct damage_case){ZERO, 0, "zero"};
                /* baseOffset, length, magic, attributes, producerId, recordCount, records;
                 * the middle and the last byte. */
                const uint64_t flips[] = {0, 9, 17, 22, 45, 57, 70, size / 2, size - 1};
                for (unsigned k = 0; k < sizeof(flips) / sizeof(flips[0]); k++)
                    if (flips[k] < size && (k == 0 || flips[k] != flips[k - 1]))
                        ds[nd++] = (struct damage_case){FLIP, flips[k], "flip"};
            }
            ds[nd++] = (struct damage_case){APPEND, 0, "append garbage"};
        }
        for (unsigned k = 0; k < nd; k++) {
            char name[CASE_NAME_MAX];
            snprintf(name, sizeof(name), "[%s] %s (%s): %s at %" PRIu64,
                     clean ? "clean" : "crashed", files[i].label, files[i].rel, ds[k].what,
                     ds[k].at);
            if (!tu_sweep_takes(seen++))
                continue;
            cases++;
            if (!one_case(tpl, files[i].rel, ds[k].d, ds[k].at, 0x10, name, false)) {
                failed++;
                fprintf(stderr, "FAILED %s\n", name);
            }
        }
    }
    /* A crash that lost the newest segment's tail (SC7): the batches the crashed run appended
     * after the last clean close (at or past the newest snapshot, which that close wrote) are
     * cut or read as zeros, while the indexes keep their entries. No damage: verify reports no
     * problem, open succeeds, and the generic checks follow. */
    if (!clean) {
        char snaps[256][64], logs[256][64];
        unsigned ns = list_files(tpl, TOPIC "-0", ".snapshot", snaps, 256);
        unsigned nl = list_files(tpl, TOPIC "-0", ".log", logs, 256);
        assert_true(ns > 0 && nl > 0);
        int64_t from = strtoll(snaps[ns - 1], NULL, 10);
        char rel[256];
        snprintf(rel, sizeof(rel), TOPIC "-0/%s", logs[nl - 1]);
        char *path = tu_path("%s/%s", tpl, rel);
        uint64_t cuts[3];
        unsigned ncuts = batch_starts_from(path, from, cuts);
        free(path);
        assert_true(ncuts > 0);
        for (unsigned k = 0; k < 2 * ncuts; k++) {
            enum damage d = k % 2 ? LOST_TAIL : TRUNCATE;
            char name[CASE_NAME_MAX];
            snprintf(name, sizeof(name),
                     "[crashed] lost tail of the newest .log (%s): %s at %" PRIu64, rel,
                     d == LOST_TAIL ? "zeroed" : "truncated", cuts[k / 2]);
            cases++;
            if (!one_case(tpl, rel, d, cuts[k / 2], 0, name, true)) {
                failed++;
                fprintf(stderr, "FAILED %s\n", name);
            }
        }
    }
    fprintf(stderr, "damage matrix (%s): %u cases over %u files, %u failed\n",
            clean ? "clean" : "crashed", cases, n, failed);
    tu_rmdir_free(tpl);
    assert_int_equal(failed, 0);
}

/* The first ABORT marker of the newest (or, sealed, the oldest) segment of t-0 that has one:
 * its file (relative to dir) and its position. A marker is a 78-byte control batch (attributes 0x30) whose control key's
 * type (bytes 68-69, after the record's length, attributes, timestampDelta, offsetDelta and
 * keyLength varints of one byte each and the key's version) is 0. */
static bool find_abort_marker(const char *dir, bool sealed, char *rel, size_t cap, uint64_t *at)
{
    char names[256][64];
    unsigned count = list_files(dir, TOPIC "-0", ".log", names, 256);
    for (unsigned n = 0; n < count; n++) {
        unsigned i = sealed ? n : count - 1 - n;
        char *path = tu_path("%s/" TOPIC "-0/%s", dir, names[i]);
        size_t len = 0;
        uint8_t *buf = tu_read_file(path, &len);
        free(path);
        for (uint64_t pos = 0; pos + 12 <= len;) {
            uint64_t size = 12 + (uint64_t)be32_of(buf + pos + 8);
            if (size == 12 || pos + size > len)
                break;
            if (size == 78 && buf[pos + 22] == 0x30 && buf[pos + 68] == 0 && buf[pos + 69] == 0) {
                snprintf(rel, cap, TOPIC "-0/%s", names[i]);
                *at = pos;
                free(buf);
                return true;
            }
            pos += size;
        }
        free(buf);
    }
    return false;
}

/* The flip that failed once on CI: one byte under the CRC of an ABORT marker in the newest
 * segment of a cleanly closed directory (its producerId there: 0 became 4096). Open's SC4 walk
 * reads headers without their CRC, saw a marker of a producer with no open transaction and
 * "repaired" the .txnindex that said producer 0's transaction was aborted: read_committed then
 * served the aborted records before the marker (segment_check.c SC6). The matrix reaches this
 * byte only when the layout puts a marker at the file's middle; here every byte under the
 * marker's CRC is flipped (0x10 as the matrix does, 0x01: ABORT becomes COMMIT at the type's
 * low byte, 0x20: the control bit lost), each checked as one matrix case. */
static void test_damage_abort_marker(void **state)
{
    (void)state;
    char *tpl = build(true);
    static const uint8_t masks[] = {0x10, 0x01, 0x20};
    unsigned cases = 0, failed = 0, seen = 0;
    /* The newest segment's marker (the CI case), and a sealed one: there the later segments'
     * .txnindex files are kept unchecked too (SC6), and verify must agree. */
    for (int sealed = 0; sealed < 2; sealed++) {
        char rel[256];
        uint64_t at = 0;
        assert_true(find_abort_marker(tpl, sealed, rel, sizeof(rel), &at));
        for (uint64_t b = 21; b < 78; b++) {
            for (unsigned k = 0; k < sizeof(masks); k++) {
                char name[CASE_NAME_MAX];
                snprintf(name, sizeof(name),
                         "[marker] ABORT marker at %" PRIu64 " of %s: byte %" PRIu64 " ^= 0x%02x",
                         at, rel, b, masks[k]);
                if (!tu_sweep_takes(seen++))
                    continue;
                cases++;
                if (!one_case(tpl, rel, FLIP, at + b, masks[k], name, false)) {
                    failed++;
                    fprintf(stderr, "FAILED %s\n", name);
                }
            }
        }
    }
    fprintf(stderr, "ABORT marker flips: %u cases, %u failed\n", cases, failed);
    tu_rmdir_free(tpl);
    assert_int_equal(failed, 0);
}

static void test_damage_clean(void **state)
{
    (void)state;
    matrix(true);
}

static void test_damage_crashed(void **state)
{
    (void)state;
    matrix(false);
}

int main(void)
{
    /* Hundreds of directories are built and opened: on tmpfs when there is one (fsync is free
     * there), unless the caller chose TMPDIR. */
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damage_clean),
        cmocka_unit_test(test_damage_crashed),
        cmocka_unit_test(test_damage_abort_marker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
