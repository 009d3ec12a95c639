/*
 * test_read_only.c — rt_options.read_only seen from outside (issue 10, defect 13): a read-only
 * open changes nothing in the directory (no file created, removed, grown, shrunk or rewritten),
 * refuses every write with RT_E_READ_ONLY, coexists with other read-only handles but not with a
 * writer (RT_E_DIRECTORY_LOCKED both ways), and reads a directory that needs recovery up to its
 * last valid batch without repairing it.
 *
 * RT_TEST_BOTH_BACKENDS
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/test_util.h"

#define TOPIC "orders"

static void options(struct rt_options *o)
{
    tu_options(o);
    o->shard_count = 1;
    o->segment_size_bytes = 64u << 10;
    o->batch_size_max_bytes = 16u << 10;
    o->index_interval_bytes = 512;
    o->retention_ms = -1;
}

static int append_n(rt_engine *e, uint32_t partition, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char value[200];
        memset(value, 'v', sizeof(value));
        snprintf(value, sizeof(value), "p%u-%d", partition, i);
        struct rt_record r = {.key_len = -1,
                              .value = value,
                              .value_len = (int32_t)sizeof(value),
                              .timestamp_ms = 1000 + i};
        int rc = rt_append(e, TOPIC, partition, &r, 1, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* Records of a partition from offset 0, checking each names its offset; or a negative code. */
static int64_t read_all(rt_engine *e, uint32_t partition)
{
    int64_t next = 0;
    for (;;) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, TOPIC, partition, next, 1u << 20, RT_READ_UNCOMMITTED, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            return next;
        if (rc)
            return rc;
        if (rt_fetch_get(f)->size_bytes == 0) {
            rt_fetch_release(f);
            return next;
        }
        struct rt_records it;
        rc = rt_records_init(&it, f, next);
        struct rt_record_view rv;
        while (rc == 0 && (rc = rt_records_next(&it, &rv)) == 0) {
            char want[32];
            int n = snprintf(want, sizeof(want), "p%u-%lld", partition, (long long)rv.offset);
            if (rv.offset != next || memcmp(rv.value, want, (size_t)n + 1) != 0) {
                rt_fetch_release(f);
                return -EBADMSG;
            }
            next++;
        }
        rt_fetch_release(f);
        if (rc != RT_E_END)
            return rc;
    }
}

/* ---- a picture of a directory tree: every entry's path, type, size, mtime and content ---- */

struct tree {
    char *text;
    size_t len, cap;
};

static void tree_add(struct tree *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->text = realloc(t->text, t->cap);
        assert_non_null(t->text);
    }
    memcpy(t->text + t->len, s, n + 1);
    t->len += n;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void tree_walk(struct tree *t, const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    char *names[4096];
    size_t count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        assert_true(count < 4096);
        names[count++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof(names[0]), cmp_str);
    for (size_t i = 0; i < count; i++) {
        char *p = tu_path("%s/%s", path, names[i]);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        char line[8192];
        if (S_ISDIR(st.st_mode)) {
            snprintf(line, sizeof(line), "%s/\n", p);
            tree_add(t, line);
            tree_walk(t, p);
        } else {
            size_t len = 0;
            uint8_t *buf = tu_read_file(p, &len);
            snprintf(line, sizeof(line), "%s size=%lld blocks=%lld mtime=%lld.%09ld hash=%016llx\n",
                     p, (long long)st.st_size, (long long)st.st_blocks,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                     (unsigned long long)fnv(buf, len));
            free(buf);
            tree_add(t, line);
        }
        free(p);
        free(names[i]);
    }
}

static char *tree_of(const char *dir)
{
    struct tree t = {0};
    tree_add(&t, "");
    tree_walk(&t, dir);
    return t.text;
}

static void assert_tree_equal(const char *before, const char *after)
{
    if (strcmp(before, after) != 0) {
        fprintf(stderr, "before:\n%s\nafter:\n%s\n", before, after);
        fail_msg("the directory changed");
    }
}

static rt_engine *open_read_only(const char *dir)
{
    struct rt_options o;
    options(&o);
    o.read_only = true;
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc)
        fail_msg("read-only rt_open: %s (%s)", rt_strerror(rc), rt_error_detail());
    return e;
}

/* A directory with two partitions of records and a group's committed offsets, closed cleanly. */
static void build(const char *dir, int per_partition)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 2), 0);
    assert_int_equal(append_n(e, 0, 0, per_partition), 0);
    assert_int_equal(append_n(e, 1, 0, per_partition), 0);
    struct rt_offset off = {.topic = TOPIC, .partition = 1, .offset = 7};
    assert_int_equal(rt_group_commit_offsets(e, "g", &off, 1), 0);
    assert_int_equal(rt_close(e), 0);
}

/* Defect 13: reads work; every write is RT_E_READ_ONLY; the directory is byte-for-byte and
 * timestamp-for-timestamp what it was, with nothing preallocated while open either. */
static void test_read_only_open_changes_nothing(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    build(dir, 600); /* several segments per partition */
    char *before = tree_of(dir);

    rt_engine *e = open_read_only(dir);
    assert_int_equal(read_all(e, 0), 600);
    assert_int_equal(read_all(e, 1), 600);
    int64_t got = -1;
    assert_int_equal(rt_group_fetch_offsets(e, "g", TOPIC, 1, false, &got), 0);
    assert_int_equal(got, 7);
    /* Nothing grew while it was open (no preallocated segment, no new file). */
    char *during = tree_of(dir);
    assert_tree_equal(before, during);
    free(during);

    assert_int_equal(append_n(e, 0, 600, 1), RT_E_READ_ONLY);
    assert_non_null(strstr(rt_error_detail(), "read-only"));
    assert_int_equal(rt_topic_create(e, "other", 1), RT_E_READ_ONLY);
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, NULL, &p), RT_E_READ_ONLY);
    assert_null(p);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    assert_int_equal(rt_producer_open(e, &po, &p), RT_E_READ_ONLY);
    struct rt_offset off = {.topic = TOPIC, .partition = 0, .offset = 3};
    assert_int_equal(rt_group_commit_offsets(e, "g", &off, 1), RT_E_READ_ONLY);
    assert_int_equal(rt_txn_abort(e, "tx"), RT_E_READ_ONLY);
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    assert_true(st.read_only);
    assert_false(st.opened_unclean);
    assert_int_equal(rt_close(e), 0);

    char *after = tree_of(dir);
    assert_tree_equal(before, after);
    free(after);
    free(before);
    tu_rmdir_free(dir);
}

/* Defect 13: read-only handles share the directory; a writer excludes them and they exclude a
 * writer, each with RT_E_DIRECTORY_LOCKED; rt_verify runs beside readers. */
static void test_read_only_lock(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    build(dir, 10);
    struct rt_options w;
    options(&w);
    rt_engine *writer = NULL;
    assert_int_equal(rt_open(dir, &w, &writer), 0);
    struct rt_options r;
    options(&r);
    r.read_only = true;
    rt_engine *reader = NULL;
    assert_int_equal(rt_open(dir, &r, &reader), RT_E_DIRECTORY_LOCKED);
    assert_null(reader);
    assert_int_equal(rt_close(writer), 0);

    rt_engine *r1 = open_read_only(dir);
    rt_engine *r2 = open_read_only(dir);
    assert_int_equal(read_all(r1, 0), 10);
    assert_int_equal(read_all(r2, 1), 10);
    assert_int_equal(rt_verify(dir, NULL, NULL), 0);
    writer = NULL;
    assert_int_equal(rt_open(dir, &w, &writer), RT_E_DIRECTORY_LOCKED);
    assert_int_equal(rt_close(r1), 0);
    assert_int_equal(rt_open(dir, &w, &writer), RT_E_DIRECTORY_LOCKED);
    assert_int_equal(rt_close(r2), 0);
    assert_int_equal(rt_open(dir, &w, &writer), 0);
    assert_int_equal(append_n(writer, 0, 10, 1), 0);
    assert_int_equal(rt_close(writer), 0);
    tu_rmdir_free(dir);
}

/* The end of the valid batches of a log, walking batch lengths (bytes 8..11) from 0. */
static uint64_t valid_end(const char *log)
{
    size_t len = 0;
    uint8_t *buf = tu_read_file(log, &len);
    uint64_t pos = 0;
    while (pos + 61 <= len) {
        uint32_t length = be32_of(buf + pos + 8);
        if (length == 0 || pos + 12 + length > len)
            break;
        pos += 12 + length;
    }
    free(buf);
    return pos;
}

/* Defect 13: a directory that needs recovery (no clean-shutdown marker, garbage after the last
 * batch) opens read-only, serves exactly the acknowledged records, says it was unclean, and is
 * left as it was; a writable open then recovers it to the same records. */
static void test_read_only_unclean_directory(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    build(dir, 5);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rt_options o;
        options(&o);
        o.sync_mode = RT_SYNC_ALWAYS;
        rt_engine *e = NULL;
        if (rt_open(dir, &o, &e) != 0 || append_n(e, 0, 5, 20) != 0)
            _exit(1);
        _exit(0); /* a crash: no rt_close, no clean-shutdown marker */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* A torn write after the last acknowledged batch of partition 0's newest segment. */
    char *log = tu_path("%s/%s-0/%020d.log", dir, TOPIC, 0);
    uint64_t end = valid_end(log);
    assert_true(end > 0);
    int fd = open(log, O_WRONLY);
    assert_true(fd >= 0);
    uint8_t junk[100];
    memset(junk, 0xab, sizeof(junk));
    assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)end), (ssize_t)sizeof(junk));
    close(fd);
    char *before = tree_of(dir);

    rt_engine *e = open_read_only(dir);
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    assert_true(st.opened_unclean);
    assert_true(st.tail_bytes_ignored >= sizeof(junk));
    assert_int_equal(read_all(e, 0), 25);
    assert_int_equal(read_all(e, 1), 5);
    assert_int_equal(rt_close(e), 0);
    char *after = tree_of(dir);
    assert_tree_equal(before, after);
    free(after);
    free(before);

    /* The writer recovers what the reader left, to the same records. */
    struct rt_options o;
    options(&o);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(read_all(e, 0), 25);
    assert_int_equal(append_n(e, 0, 25, 1), 0);
    assert_int_equal(read_all(e, 0), 26);
    assert_int_equal(rt_close(e), 0);
    free(log);
    tu_rmdir_free(dir);
}

static int txn_send(rt_producer *p, uint32_t partition, const char *value)
{
    struct rt_producer_message m = {.record = {.key_len = -1,
                                               .value = value,
                                               .value_len = (int32_t)strlen(value),
                                               .timestamp_ms = 1000},
                                    .sequence = -1};
    return rt_producer_send(p, TOPIC, (int32_t)partition, &m, NULL, NULL);
}

/* Values a read_committed reader sees in partition 0, joined by ','; or NULL on error. */
static char *committed_values(rt_engine *e)
{
    static char out[4096];
    out[0] = '\0';
    int64_t next = 0;
    for (;;) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, TOPIC, 0, next, 1u << 20, RT_READ_COMMITTED, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            return out;
        if (rc)
            return NULL;
        if (rt_fetch_get(f)->size_bytes == 0) {
            rt_fetch_release(f);
            return out;
        }
        struct rt_records it;
        rc = rt_records_init(&it, f, next);
        struct rt_record_view rv;
        int64_t last = next;
        while (rc == 0 && (rc = rt_records_next(&it, &rv)) == 0) {
            strncat(out, (const char *)rv.value, (size_t)rv.value_len);
            strcat(out, ",");
            last = rv.offset + 1;
        }
        /* Skip past control batches too: continue from the fetch's end offset. */
        const struct rt_fetch_view *v = rt_fetch_get(f);
        int64_t bound = v->last_stable_offset;
        rt_fetch_release(f);
        if (rc != RT_E_END)
            return NULL;
        if (last >= bound || next >= bound)
            return out;
        next = last > next ? last : bound;
        if (next >= bound)
            return out;
    }
}

struct txn_seen {
    int count;
    char state[32];
};

static int on_txn(void *ctx, const struct rt_txn_info *t)
{
    struct txn_seen *seen = ctx;
    if (strcmp(t->transactional_id, "tx") == 0)
        snprintf(seen->state, sizeof(seen->state), "%s", t->state);
    seen->count++;
    return 0;
}

/* A transaction open in a partition, as rt_txn_list_partitions reports it. */
struct open_seen {
    int count;
    bool live;
    char state[32];
};

static int on_open_txn(void *ctx, const struct rt_partition_txn *t)
{
    struct open_seen *seen = ctx;
    if (strcmp(t->topic, TOPIC) == 0) {
        seen->count++;
        seen->live = t->live;
        snprintf(seen->state, sizeof(seen->state), "%s",
                 t->coordinator_state ? t->coordinator_state : "");
    }
    return 0;
}

/* Defect 13: read_committed on a read-only engine hides an aborted transaction (its .txnindex
 * is read, and its torn tail dropped in memory, never rewritten) and stops at a transaction a
 * crash left open; rt_txn_list_partitions shows that transaction (its partition joined without
 * a coordinator record, coordinator.c CO9, so the id's last state is its abort and the
 * transaction is not live: a writing open would abort it, COR3); nothing in the directory
 * changes. */
static void test_read_only_transactions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    build(dir, 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rt_options o;
        options(&o);
        rt_engine *e = NULL;
        rt_producer *p = NULL;
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = "tx";
        if (rt_open(dir, &o, &e) || rt_producer_open(e, &po, &p) ||
            rt_producer_init_transactions(p, 10000))
            _exit(1);
        if (rt_producer_begin(p) || txn_send(p, 0, "committed") || rt_producer_commit(p, 10000))
            _exit(2);
        if (rt_producer_begin(p) || txn_send(p, 0, "aborted") || rt_producer_abort(p, 10000))
            _exit(3);
        if (rt_producer_begin(p) || txn_send(p, 0, "open") || rt_producer_flush(p, 10000))
            _exit(4);
        _exit(0); /* a crash with the third transaction open */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* A torn append at the end of the newest .txnindex (a crash mid-entry). */
    char *txn_file = tu_path("%s/%s-0/%020d.txnindex", dir, TOPIC, 0);
    assert_int_equal(tu_file_size(txn_file), 34); /* the aborted transaction's entry */
    int fd = open(txn_file, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "\x00\x00torn", 6), 6);
    close(fd);
    free(txn_file);
    char *before = tree_of(dir);

    rt_engine *e = open_read_only(dir);
    char *seen = committed_values(e);
    assert_non_null(seen);
    assert_string_equal(seen, "committed,");
    struct txn_seen txns = {0};
    assert_int_equal(rt_txn_list(e, on_txn, &txns), 0);
    assert_string_equal(txns.state, "CompleteAbort");
    struct open_seen open = {0};
    assert_int_equal(rt_txn_list_partitions(e, on_open_txn, &open), 0);
    assert_int_equal(open.count, 1);
    assert_false(open.live);
    assert_string_equal(open.state, "CompleteAbort");
    assert_int_equal(rt_close(e), 0);
    char *after = tree_of(dir);
    assert_tree_equal(before, after);
    free(after);
    free(before);
    tu_rmdir_free(dir);
}

/* Defect 13: read-only never creates the directory it is given. */
static void test_read_only_missing_directory(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *missing = tu_path("%s/nope", dir);
    struct rt_options o;
    options(&o);
    o.read_only = true;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(missing, &o, &e), -ENOENT);
    assert_null(e);
    assert_false(fs_exists_for_test(missing));
    free(missing);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_only_open_changes_nothing),
        cmocka_unit_test(test_read_only_lock),
        cmocka_unit_test(test_read_only_unclean_directory),
        cmocka_unit_test(test_read_only_missing_directory),
        cmocka_unit_test(test_read_only_transactions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
