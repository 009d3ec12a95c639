/*
 * test_power_dirs.c — directory entries across power loss (io.h: the fault injector's
 * directory-entry model, track_dirs) and the seal's fdatasync under fault rules
 * (IO_OP_FDATASYNC_DIRECT).
 *
 * Two halves. The first pins the model itself through io/'s calls on scratch files: a create,
 * rename, unlink or mkdir that no io_fsync_dir of its directory followed is undone at power loss
 * (FI4-FI6 in io_fault.c), one that was followed stays, and the rules count and fail the new op
 * kinds. The second drives the engine: power is lost at every directory change and at every
 * directory fsync that topic creation (the first, and a catalogue rewrite) and segment rolls
 * (new files, the pre-written next file and the recycled spare renamed into place, retention's
 * deletions) make, and right after each of those calls returns; the directory must then open,
 * verify clean, and hold every topic a create acknowledged and every record an append
 * acknowledged. A failing or power-losing seal fdatasync must surface as an error, never be
 * swallowed, and lose nothing acknowledged.
 *
 * It owns only these checks; it looks at the engine only through the public API, rt_verify, the
 * directory listing and the fault plan's counters. Power-losing runs happen in a forked child
 * that dies without closing (as a machine would); the parent reopens over the backend under test.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/child.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

/* ---- helpers ---- */

static void put_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* The file's whole contents as a string (NULL when missing). */
static char *get_file(const char *path)
{
    if (!fs_exists_for_test(path))
        return NULL;
    size_t len = 0;
    uint8_t *buf = tu_read_file(path, &len);
    char *s = malloc(len + 1);
    memcpy(s, buf, len);
    s[len] = 0;
    free(buf);
    return s;
}

static void assert_file(const char *path, const char *want)
{
    char *got = get_file(path);
    if (!want) {
        if (got)
            fail_msg("%s exists (\"%s\"); it should be gone", path, got);
        return;
    }
    if (!got)
        fail_msg("%s is missing; it should hold \"%s\"", path, want);
    if (strcmp(got, want) != 0)
        fail_msg("%s holds \"%s\", not \"%s\"", path, got, want);
    free(got);
}

/* Entries of dir, "." and ".." aside. */
static unsigned entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void create_closed(struct io_fault_plan *plan, const char *path, const char *text)
{
    int fd = io_file_create(plan, path, O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (text)
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* ---- the model ---- */

/* FI4: a create survives exactly when a directory fsync followed it. */
static void test_model_create(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir), *b = tu_path("%s/b", dir);
    struct io_fault_plan plan = {.track_dirs = true};
    create_closed(&plan, a, "a");
    assert_int_equal(plan.dir_entries_unsynced, 1);
    assert_int_equal(io_fsync_dir(&plan, dir), 0);
    assert_int_equal(plan.dir_entries_unsynced, 0);
    create_closed(&plan, b, "b");
    assert_int_equal(plan.dir_entries_seen, 2);
    assert_int_equal(plan.dir_fsyncs_seen, 1);
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_file(a, "a");
    assert_file(b, NULL);
    assert_int_equal(plan.dir_entries_undone, 1);
    /* A dead machine changes nothing more. */
    assert_int_equal(io_file_create(&plan, b, O_WRONLY, 0644), -EIO);
    assert_int_equal(io_fsync_dir(&plan, dir), -EIO);
    assert_file(b, NULL);
    io_fault_plan_release(&plan);
    free(a);
    free(b);
    tu_rmdir_free(dir);
}

/* FI5, FI6: write-temp-then-rename without the directory fsync gives the old file back; with it,
 * the new one, and no stash is left behind. */
static void test_model_rename(void **state)
{
    (void)state;
    for (int synced = 0; synced < 2; synced++) {
        char *dir = tu_mkdtemp();
        char *fin = tu_path("%s/meta", dir), *tmp = tu_path("%s/meta.tmp", dir);
        put_file(fin, "old"); /* made by a plain syscall: outside the model, durable */
        struct io_fault_plan plan = {.track_dirs = true, .track_unsynced = true};
        create_closed(&plan, tmp, "new");
        assert_int_equal(io_rename(&plan, tmp, fin), 0);
        assert_file(fin, "new");
        assert_file(tmp, NULL);
        if (synced)
            assert_int_equal(io_fsync_dir(&plan, dir), 0);
        assert_int_equal(entries(dir), synced ? 1u : 2u); /* the replaced file's stash */
        assert_int_equal(io_fault_power_loss(&plan), 0);
        assert_int_equal(plan.power_loss_error, 0);
        assert_file(fin, synced ? "new" : "old");
        assert_file(tmp, NULL); /* undone too: its create was never synced */
        assert_int_equal(entries(dir), 1u);
        assert_int_equal(plan.dir_entries_undone, synced ? 0u : 2u);
        io_fault_plan_release(&plan);
        free(fin);
        free(tmp);
        tu_rmdir_free(dir);
    }
}

/* FI5: an unlink without the directory fsync comes back; with it, it is gone for good. A missing
 * name is no change: -ENOENT, not counted. */
static void test_model_unlink(void **state)
{
    (void)state;
    for (int synced = 0; synced < 2; synced++) {
        char *dir = tu_mkdtemp();
        char *x = tu_path("%s/x", dir);
        put_file(x, "x");
        struct io_fault_plan plan = {.track_dirs = true};
        assert_int_equal(io_unlink(&plan, x), 0);
        assert_file(x, NULL);
        assert_int_equal(io_unlink(&plan, x), -ENOENT);
        assert_int_equal(plan.dir_entries_seen, 1);
        if (synced) {
            assert_int_equal(io_fsync_dir(&plan, dir), 0);
            assert_int_equal(entries(dir), 0u); /* the stash went with the sync */
        }
        assert_int_equal(io_fault_power_loss(&plan), 0);
        assert_file(x, synced ? NULL : "x");
        io_fault_plan_release(&plan);
        free(x);
        tu_rmdir_free(dir);
    }
}

/* A directory whose own name was not synced goes with everything in it, even entries synced in
 * it; once its parent is synced, it stays with what it synced. */
static void test_model_mkdir(void **state)
{
    (void)state;
    for (int synced = 0; synced < 2; synced++) {
        char *dir = tu_mkdtemp();
        char *p = tu_path("%s/t-0", dir), *f = tu_path("%s/t-0/f", dir),
             *g = tu_path("%s/t-0/g", dir);
        struct io_fault_plan plan = {.track_dirs = true};
        assert_int_equal(io_mkdir(&plan, p, 0755), 0);
        assert_int_equal(io_mkdir(&plan, p, 0755), -EEXIST);
        if (synced)
            assert_int_equal(io_fsync_dir(&plan, dir), 0);
        create_closed(&plan, f, "f");
        assert_int_equal(io_fsync_dir(&plan, p), 0);
        create_closed(&plan, g, "g"); /* never synced */
        assert_int_equal(io_fault_power_loss(&plan), 0);
        assert_int_equal(plan.power_loss_error, 0);
        assert_int_equal(fs_exists_for_test(p), synced);
        assert_file(f, synced ? "f" : NULL);
        assert_file(g, NULL);
        io_fault_plan_release(&plan);
        free(p);
        free(f);
        free(g);
        tu_rmdir_free(dir);
    }
}

/* FI6: an undo never removes what a later, untracked step put under the name. */
static void test_model_undo_skips_a_foreign_name(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir);
    struct io_fault_plan plan = {.track_dirs = true};
    create_closed(&plan, a, "tracked");
    int hold = open(a, O_RDONLY | O_CLOEXEC); /* so its inode number is not reused at once */
    assert_true(hold >= 0);
    assert_int_equal(unlink(a), 0);
    put_file(a, "plain"); /* another inode, made outside io/ */
    assert_int_equal(io_fault_power_loss(&plan), 0);
    assert_file(a, "plain");
    assert_int_equal(plan.dir_undo_skipped, 1);
    assert_int_equal(plan.dir_entries_undone, 0);
    close(hold);
    io_fault_plan_release(&plan);
    free(a);
    tu_rmdir_free(dir);
}

/* Without a power loss the journal's changes stand: release removes the stashes only. */
static void test_model_release_keeps_changes(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *x = tu_path("%s/x", dir), *y = tu_path("%s/y", dir);
    put_file(x, "x");
    put_file(y, "y");
    struct io_fault_plan plan = {.track_dirs = true};
    assert_int_equal(io_unlink(&plan, x), 0);
    create_closed(&plan, x, "x2");
    assert_int_equal(io_rename(&plan, x, y), 0);
    assert_int_equal(entries(dir), 3u); /* y, and the stashes of the old x and the old y */
    io_fault_plan_release(&plan);
    assert_int_equal(entries(dir), 1u);
    assert_file(y, "x2");
    free(x);
    free(y);
    tu_rmdir_free(dir);
}

/* The new op kinds under rules: io_fdatasync is IO_OP_FDATASYNC_DIRECT (its own count, not the
 * rings'), directory fsyncs and changes have theirs; ONCE fails one and changes nothing,
 * POWER_LOSS runs the call, then loses the power. */
static void test_rules_name_the_new_kinds(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir), *b = tu_path("%s/b.victim", dir);
    struct io_fault_plan plan = {.track_dirs = true, .track_unsynced = true};
    struct io_fault_rule r1 = {
        .mode = IO_FAULT_ONCE, .op = IO_OP_FDATASYNC_DIRECT, .nth = 2, .error = EIO};
    struct io_fault_rule r2 = {
        .mode = IO_FAULT_ONCE, .op = IO_OP_DIR_FSYNC, .nth = 1, .error = ENOSPC};
    struct io_fault_rule r3 = {
        .mode = IO_FAULT_POWER_LOSS, .op = IO_OP_DIR_ENTRY, .nth = 1, .path_contains = "victim"};
    assert_int_equal(io_fault_rule_add(&plan, &r1), 0);
    assert_int_equal(io_fault_rule_add(&plan, &r2), 0);
    assert_int_equal(io_fault_rule_add(&plan, &r3), 0);
    int fd = io_file_create(&plan, a, O_RDWR | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(io_fdatasync(&plan, fd), 0);
    assert_int_equal(io_fdatasync(&plan, fd), -EIO);
    assert_int_equal(io_fdatasync(&plan, fd), 0);
    close(fd);
    assert_int_equal(plan.direct_fdatasyncs_seen, 3);
    assert_int_equal(plan.fdatasyncs_seen, 0);
    assert_int_equal(io_fsync_dir(&plan, dir), -ENOSPC);
    assert_int_equal(plan.dir_entries_unsynced, 1); /* a failed fsync covers nothing */
    assert_int_equal(io_fsync_dir(&plan, dir), 0);
    assert_int_equal(plan.dir_entries_unsynced, 0);
    assert_false(plan.power_lost);
    assert_int_equal(io_rename(&plan, a, b), 0); /* runs, then the power goes */
    assert_true(plan.power_lost);
    assert_file(a, "");
    assert_file(b, NULL);
    assert_int_equal(plan.faults_injected, 3);
    assert_int_equal(io_fdatasync(&plan, 0), -EIO);
    io_fault_plan_release(&plan);
    free(a);
    free(b);
    tu_rmdir_free(dir);
}

/* ---- the engine ---- */

#define RECORDS_PER_BATCH 3
#define VALUE_BYTES       8192
#define SWEEP_MAX         400 /* a bound on every sweep: a run that never ends fails */

enum child_exit {
    CHILD_POWER_LOST = 0,   /* the rule fired (or the scenario's own power loss ran) */
    CHILD_NOT_REACHED = 10, /* the rule's op never came: the sweep is complete */
};

static void value_of(const char *topic, int64_t offset, char *buf)
{
    memset(buf, 'a' + (int)(offset % 26), VALUE_BYTES);
    snprintf(buf, 64, "%s-offset-%020" PRId64, topic, offset);
}

static int append_batch(rt_engine *e, const char *topic, uint32_t partition, int64_t first,
                        int64_t *base_out)
{
    static char vals[RECORDS_PER_BATCH][VALUE_BYTES];
    struct rt_record recs[RECORDS_PER_BATCH];
    for (int i = 0; i < RECORDS_PER_BATCH; i++) {
        value_of(topic, first + i, vals[i]);
        recs[i] = (struct rt_record){.key_len = -1,
                                     .value = vals[i],
                                     .value_len = VALUE_BYTES,
                                     .timestamp_ms = 1000000 + first + i};
    }
    return rt_append(e, topic, partition, recs, RECORDS_PER_BATCH, base_out);
}

static void options(struct rt_options *o, uint64_t segment_bytes)
{
    tu_options_small(o, segment_bytes, 32 * 1024, 4096);
    o->sync_mode = RT_SYNC_ALWAYS;
    o->retention_bytes = (int64_t)(2 * segment_bytes); /* deletions and recycling */
}

/* Reads [log start, high watermark) of topic-partition and checks every record names its own
 * offset; returns the high watermark. */
static int64_t read_back(rt_engine *e, const char *topic, uint32_t partition, const char *what)
{
    int64_t start = -1, end = -1;
    assert_int_equal(
        rt_list_offsets(e, topic, partition, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start), 0);
    assert_int_equal(
        rt_list_offsets(e, topic, partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    int64_t offset = start;
    static char want[VALUE_BYTES];
    while (offset < end) {
        rt_fetch *f = NULL;
        int rc = rt_fetch_start(e, topic, partition, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
        if (rc != 0)
            fail_msg("%s: fetch at %" PRId64 ": %s (%s)", what, offset, rt_strerror(rc),
                     rt_error_detail());
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        int64_t before = offset;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            if (rv.offset != offset)
                fail_msg("%s: record at offset %" PRId64 " where %" PRId64 " was due", what,
                         rv.offset, offset);
            value_of(topic, offset, want);
            if (rv.value_len != VALUE_BYTES || memcmp(rv.value, want, VALUE_BYTES) != 0)
                fail_msg("%s: offset %" PRId64 " serves a value that is not its own", what, offset);
            offset++;
        }
        if (rc != RT_E_END)
            fail_msg("%s: records at %" PRId64 ": %s", what, offset, rt_strerror(rc));
        rt_fetch_release(f);
        assert_true(offset > before);
    }
    return end;
}

/* The directory opens and verifies clean after a power loss; returns the open engine. */
static rt_engine *reopen_checked(const char *dir, const struct rt_options *o, const char *what)
{
    rt_engine *e = NULL;
    int rc = rt_open(dir, o, &e);
    if (rc != 0)
        fail_msg("%s: the directory does not open after the power loss: %s (%s)", what,
                 rt_strerror(rc), rt_error_detail());
    return e;
}

/* Runs child(dir, plan-rule, report fd) in a fork; returns its exit code, the report in *rep. */
typedef void (*child_fn)(const char *dir, const struct io_fault_rule *rule, int fd);

static int run_child(child_fn fn, const char *dir, const struct io_fault_rule *rule, void *rep,
                     size_t rep_bytes)
{
    int report_fd = -1;
    pid_t pid = tu_fork_piped(&report_fd);
    if (pid == 0) {
        fn(dir, rule, report_fd);
        _exit(99);
    }
    int status = 0;
    (void)tu_child_report(pid, report_fd, rep, rep_bytes, &status);
    if (!WIFEXITED(status))
        fail_msg("the power-loss child died (status %d)", status);
    return WEXITSTATUS(status);
}

static void report(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n)
        _exit(98);
}

/* -- topic creation: the first topic (the catalogue created) and a second (rewritten) -- */

struct topics_report {
    uint32_t acked; /* bit 0: "first" created, bit 1: "second" created */
    uint64_t undone;
};

#define FIRST_PARTITIONS 2

static void topics_child(const char *dir, const struct io_fault_rule *rule, int fd)
{
    struct rt_options o;
    options(&o, 64 * 1024);
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    if (rule)
        plan.rules[plan.rule_count++] = *rule;
    struct topics_report r = {0};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) == 0) {
        if (rt_topic_create(e, "first", FIRST_PARTITIONS) == 0)
            r.acked |= 1;
        if (!io_fault_power_is_lost(&plan) && rt_topic_create(e, "second", 1) == 0)
            r.acked |= 2;
    } else if (!io_fault_power_is_lost(&plan)) {
        fprintf(stderr, "child: %s\n", rt_error_detail());
        _exit(3);
    }
    bool fired = io_fault_power_is_lost(&plan);
    if (!fired)
        (void)io_fault_power_loss(&plan); /* right after both creates returned */
    r.undone = plan.dir_entries_undone;
    report(fd, &r, sizeof(r));
    _exit(fired || !rule ? CHILD_POWER_LOST : CHILD_NOT_REACHED);
}

static void check_topics(const char *dir, const struct topics_report *r, const char *what)
{
    struct rt_options o;
    options(&o, 64 * 1024);
    rt_engine *e = reopen_checked(dir, &o, what);
    const char *names[2] = {"first", "second"};
    uint32_t want[2] = {FIRST_PARTITIONS, 1};
    for (int t = 0; t < 2; t++) {
        uint32_t n = 0;
        int rc = rt_topic_describe(e, names[t], &n);
        if ((r->acked & (1u << t)) && rc != 0)
            fail_msg("%s: topic %s was created (acknowledged) but is gone: %s", what, names[t],
                     rt_strerror(rc));
        if (rc == 0) {
            assert_int_equal(n, want[t]);
            for (uint32_t p = 0; p < n; p++) { /* every partition usable */
                int64_t base = -1;
                if (append_batch(e, names[t], p, 0, &base) != 0 || base != 0)
                    fail_msg("%s: %s-%u takes no append after reopen (%s)", what, names[t], p,
                             rt_error_detail());
            }
        }
    }
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, what);
}

static void topics_sweep(enum io_op_type op)
{
    unsigned n = 1, undid = 0;
    for (; n <= SWEEP_MAX; n += tu_sweep_stride()) {
        char *dir = tu_mkdtemp();
        struct io_fault_rule rule = {.mode = IO_FAULT_POWER_LOSS, .op = op, .nth = n};
        struct topics_report r;
        int code = run_child(topics_child, dir, &rule, &r, sizeof(r));
        char what[96];
        snprintf(what, sizeof(what), "power loss at %s #%u of topic creation",
                 op == IO_OP_DIR_ENTRY ? "directory change" : "directory fsync", n);
        if (code != CHILD_POWER_LOST && code != CHILD_NOT_REACHED)
            fail_msg("%s: the child failed (%d)", what, code);
        check_topics(dir, &r, what);
        tu_rmdir_free(dir);
        undid += r.undone > 0;
        if (code == CHILD_NOT_REACHED)
            break;
    }
    assert_true(n > 3 && n <= SWEEP_MAX); /* the sweep saw the creates' steps, and ended */
    /* At a change, the model undid names (that change at least); at an fsync, which runs
     * before the power goes, what is left to undo is what the engine had not synced yet. */
    if (op == IO_OP_DIR_ENTRY)
        assert_true(undid > 0);
}

static void test_power_loss_in_topic_creation_at_every_directory_change(void **state)
{
    (void)state;
    topics_sweep(IO_OP_DIR_ENTRY);
}

static void test_power_loss_in_topic_creation_at_every_directory_fsync(void **state)
{
    (void)state;
    topics_sweep(IO_OP_DIR_FSYNC);
}

/* Power loss right after rt_topic_create returned: both topics are there. The model is shown to
 * act (it undid something: the names the engine need not sync, such as the lock file). */
static void test_power_loss_right_after_topic_creation(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct topics_report r;
    assert_int_equal(run_child(topics_child, dir, NULL, &r, sizeof(r)), CHILD_POWER_LOST);
    assert_int_equal(r.acked, 3u);
    check_topics(dir, &r, "power loss right after topic creation");
    tu_rmdir_free(dir);
}

/* The data directory rt_open creates is itself a directory entry: its parent is fsynced
 * before anything is written in it, so an acknowledged record survives a power loss right
 * after the first open (without that fsync the model undoes the mkdir and the whole directory
 * is gone). */
static void test_power_loss_after_first_open_keeps_the_new_directory(void **state)
{
    (void)state;
    char *base = tu_mkdtemp();
    char *dir = tu_path("%s/new-data", base);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rt_options o;
        options(&o, 1024 * 1024);
        struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
        rt_engine *e = NULL;
        struct rt_record rec = {.key_len = -1, .value = "kept", .value_len = 4, .timestamp_ms = -1};
        int64_t off = -1;
        if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, "t", 1) != 0 ||
            rt_append(e, "t", 0, &rec, 1, &off) != 0 || off != 0)
            _exit(2);
        _exit(io_fault_power_loss(&plan) == 0 && plan.dir_entries_undone == 0 ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the child failed (exit %d): 2 = open/create/append, 3 = power loss undid "
                 "a directory change",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    struct rt_options o;
    options(&o, 1024 * 1024);
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("the new data directory does not open after the power loss: %s",
                 rt_error_detail());
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(e, "t", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    assert_int_equal(hw, 1);
    assert_int_equal(rt_close(e), 0);
    free(dir);
    tu_rmdir_free(base);
}

/* -- rolls: new segments, the pre-written next file and the recycled spare renamed into place,
 * retention's deletions (1 MiB segments: the pre-writer runs; retention keeps two) -- */

#define ROLL_TOPIC     "roll"
#define ROLLS_SEGMENTS 6 /* the child appends about this many segments' worth */

struct roll_report {
    int64_t acked_end; /* offset after the last acknowledged batch */
    uint64_t undone;
    uint64_t rolled;
};

static uint64_t roll_segment_bytes = 1024 * 1024;
static bool roll_writeback_errors; /* the child's plan models Linux's writeback errors */

static void rolls_child(const char *dir, const struct io_fault_rule *rule, int fd)
{
    struct rt_options o;
    options(&o, roll_segment_bytes);
    struct io_fault_plan plan = {
        .track_unsynced = true, .track_dirs = true, .writeback_errors = roll_writeback_errors};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, ROLL_TOPIC, 1) != 0) {
        fprintf(stderr, "child: %s\n", rt_error_detail());
        _exit(2);
    }
    if (rule) {
        /* Counted from here on: the rolls', not the creation's. */
        struct io_fault_rule r = *rule;
        r.path_contains = "/" ROLL_TOPIC "-0";
        if (io_fault_rule_add(&plan, &r) != 0)
            _exit(3);
    }
    struct roll_report r = {0};
    uint64_t batch_bytes = (uint64_t)RECORDS_PER_BATCH * VALUE_BYTES;
    int64_t batches = (int64_t)(ROLLS_SEGMENTS * roll_segment_bytes / batch_bytes) + 2;
    int64_t next = 0;
    for (int64_t i = 0; i < batches && !io_fault_power_is_lost(&plan); i++) {
        int64_t base = -1;
        if (append_batch(e, ROLL_TOPIC, 0, next, &base) != 0)
            break; /* the power went, or an fdatasync failed: not acknowledged */
        if (base != next)
            _exit(4);
        next += RECORDS_PER_BATCH;
        r.acked_end = next;
    }
    bool fired = io_fault_faults_injected(&plan) > 0; /* the rule's op came */
    struct rt_stats st;
    if (rt_stats_get(e, &st) == 0)
        r.rolled = st.segments_rolled;
    if (!fired)
        (void)io_fault_power_loss(&plan); /* right after the last roll's append returned */
    r.undone = plan.dir_entries_undone;
    report(fd, &r, sizeof(r));
    _exit(fired || !rule ? CHILD_POWER_LOST : CHILD_NOT_REACHED);
}

static void check_rolls(const char *dir, const struct roll_report *r, const char *what)
{
    struct rt_options o;
    options(&o, roll_segment_bytes);
    rt_engine *e = reopen_checked(dir, &o, what);
    int64_t end = read_back(e, ROLL_TOPIC, 0, what);
    if (end < r->acked_end)
        fail_msg("%s: %" PRId64 " records after reopen; %" PRId64 " were acknowledged", what, end,
                 r->acked_end);
    int64_t base = -1;
    assert_int_equal(append_batch(e, ROLL_TOPIC, 0, end, &base), 0); /* the log goes on */
    assert_int_equal(base, end);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_clean(dir, what);
}

static const char *op_name(enum io_op_type op)
{
    return op == IO_OP_DIR_ENTRY          ? "directory change"
           : op == IO_OP_DIR_FSYNC        ? "directory fsync"
           : op == IO_OP_FDATASYNC_DIRECT ? "direct fdatasync"
                                          : "ring op";
}

static void rolls_sweep_mode(enum io_op_type op, uint64_t segment_bytes, enum io_fault_mode mode)
{
    roll_segment_bytes = segment_bytes;
    roll_writeback_errors = mode == IO_FAULT_ONCE;
    unsigned n = 1, undid = 0;
    for (; n <= SWEEP_MAX; n += tu_sweep_stride()) {
        char *dir = tu_mkdtemp();
        struct io_fault_rule rule = {.mode = mode, .op = op, .nth = n, .error = EIO};
        struct roll_report r;
        int code = run_child(rolls_child, dir, &rule, &r, sizeof(r));
        char what[128];
        snprintf(what, sizeof(what), "%s at %s #%u of the rolls (%" PRIu64 " KiB segments)",
                 mode == IO_FAULT_ONCE ? "EIO" : "power loss", op_name(op), n,
                 segment_bytes / 1024);
        if (code != CHILD_POWER_LOST && code != CHILD_NOT_REACHED)
            fail_msg("%s: the child failed (%d)", what, code);
        check_rolls(dir, &r, what);
        tu_rmdir_free(dir);
        undid += r.undone > 0;
        if (code == CHILD_NOT_REACHED)
            break;
    }
    assert_true(n > ROLLS_SEGMENTS && n <= SWEEP_MAX);
    if (op == IO_OP_DIR_ENTRY)
        assert_true(undid > 0);
    printf("# %s at every %s, %" PRIu64 " KiB segments: %u runs, %u undid directory changes\n",
           mode == IO_FAULT_ONCE ? "EIO" : "power loss", op_name(op), segment_bytes / 1024, n,
           undid);
    roll_writeback_errors = false;
}

static void rolls_sweep(enum io_op_type op, uint64_t segment_bytes)
{
    rolls_sweep_mode(op, segment_bytes, IO_FAULT_POWER_LOSS);
}

static void test_power_loss_in_rolls_at_every_directory_change(void **state)
{
    (void)state;
    rolls_sweep(IO_OP_DIR_ENTRY, 1024 * 1024); /* pre-writer and recycling */
    rolls_sweep(IO_OP_DIR_ENTRY, 64 * 1024);   /* plain creates and deletions */
}

static void test_power_loss_in_rolls_at_every_directory_fsync(void **state)
{
    (void)state;
    rolls_sweep(IO_OP_DIR_FSYNC, 1024 * 1024);
    rolls_sweep(IO_OP_DIR_FSYNC, 64 * 1024);
}

/* Every direct fdatasync of the rolls (the seals', the pre-writer's chunks and next file, the
 * .txnindex's): power lost at it, or EIO from it under Linux's writeback-error rules (an error
 * swallowed anywhere would let an acknowledged record go at the power loss that ends the run). */
static void test_power_loss_in_rolls_at_every_direct_fdatasync(void **state)
{
    (void)state;
    rolls_sweep_mode(IO_OP_FDATASYNC_DIRECT, 1024 * 1024, IO_FAULT_POWER_LOSS);
    rolls_sweep_mode(IO_OP_FDATASYNC_DIRECT, 64 * 1024, IO_FAULT_POWER_LOSS);
}

static void test_eio_in_rolls_at_every_direct_fdatasync(void **state)
{
    (void)state;
    rolls_sweep_mode(IO_OP_FDATASYNC_DIRECT, 1024 * 1024, IO_FAULT_ONCE);
    rolls_sweep_mode(IO_OP_FDATASYNC_DIRECT, 64 * 1024, IO_FAULT_ONCE);
}

/* Power loss right after the append that followed the last roll returned: everything
 * acknowledged is there, across recycled and deleted segments. */
static void test_power_loss_right_after_rolls(void **state)
{
    (void)state;
    uint64_t sizes[2] = {1024 * 1024, 64 * 1024};
    for (int i = 0; i < 2; i++) {
        roll_segment_bytes = sizes[i];
        char *dir = tu_mkdtemp();
        struct roll_report r;
        assert_int_equal(run_child(rolls_child, dir, NULL, &r, sizeof(r)), CHILD_POWER_LOST);
        assert_true(r.rolled >= ROLLS_SEGMENTS - 1);
        check_rolls(dir, &r, "power loss right after the rolls");
        tu_rmdir_free(dir);
    }
}

/* -- the seal's fdatasync (IO_OP_FDATASYNC_DIRECT) -- */

#define SEAL_SEGMENT "/00000000000000000000.log"

struct seal_report {
    int64_t acked_end;
    int failed_rc; /* the append that met the seal's failure */
    int later_rc;  /* an append after it */
    int close_rc;
    bool power_lost;
};

static enum io_fault_mode seal_mode;

/* sync=always, 64 KiB segments (no pre-writer: the log's only direct fdatasyncs are its seal's
 * two). The first seal's first fdatasync fails (ONCE) or loses the power. */
static void seal_child(const char *dir, const struct io_fault_rule *unused, int fd)
{
    (void)unused;
    struct rt_options o;
    options(&o, 64 * 1024);
    o.retention_bytes = -1;
    o.fault_recovery_ms = -1; /* the failure stays (test_heal covers the recovery in place) */
    struct io_fault_plan plan = {.track_unsynced = true, .track_dirs = true};
    struct io_fault_rule rule = {.mode = seal_mode,
                                 .op = IO_OP_FDATASYNC_DIRECT,
                                 .nth = 1,
                                 .error = EIO,
                                 .path_contains = SEAL_SEGMENT};
    plan.rules[plan.rule_count++] = rule;
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, ROLL_TOPIC, 1) != 0) {
        fprintf(stderr, "child: %s\n", rt_error_detail());
        _exit(2);
    }
    struct seal_report r = {0};
    int64_t next = 0;
    for (int i = 0; i < 64; i++) {
        int64_t base = -1;
        int rc = append_batch(e, ROLL_TOPIC, 0, next, &base);
        if (rc != 0) {
            r.failed_rc = rc;
            r.later_rc = append_batch(e, ROLL_TOPIC, 0, next, &base);
            break;
        }
        next += RECORDS_PER_BATCH;
        r.acked_end = next;
    }
    r.power_lost = io_fault_power_is_lost(&plan);
    if (!r.power_lost) {
        r.close_rc = rt_close(e);
        io_fault_plan_release(&plan);
    }
    report(fd, &r, sizeof(r));
    _exit(0);
}

/* A seal whose fdatasync fails is not swallowed: the append that rolled fails, the partition's
 * write side stays failed (recovery in place disabled here), close says so, and after reopen
 * nothing acknowledged is missing. */
static void test_seal_fdatasync_eio_is_reported(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    seal_mode = IO_FAULT_ONCE;
    struct seal_report r;
    assert_int_equal(run_child(seal_child, dir, NULL, &r, sizeof(r)), 0);
    assert_false(r.power_lost);
    assert_true(r.acked_end > 0);
    if (r.failed_rc == 0)
        fail_msg("the seal's fdatasync failed and every append succeeded: the EIO was swallowed");
    assert_int_equal(r.failed_rc, RT_E_IO_FAILED);
    assert_int_equal(r.later_rc, RT_E_IO_FAILED);
    assert_int_equal(r.close_rc, RT_E_IO_FAILED);
    struct roll_report rr = {.acked_end = r.acked_end};
    roll_segment_bytes = 64 * 1024;
    check_rolls(dir, &rr, "after a failed seal fdatasync");
    tu_rmdir_free(dir);
}

/* Power lost at the seal's fdatasync (it ran): the sealed segment keeps everything acknowledged. */
static void test_power_loss_at_seal_fdatasync(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    seal_mode = IO_FAULT_POWER_LOSS;
    struct seal_report r;
    assert_int_equal(run_child(seal_child, dir, NULL, &r, sizeof(r)), 0);
    assert_true(r.power_lost);
    assert_true(r.acked_end > 0);
    assert_int_not_equal(r.failed_rc, 0);
    struct roll_report rr = {.acked_end = r.acked_end};
    roll_segment_bytes = 64 * 1024;
    check_rolls(dir, &rr, "power loss at the seal's fdatasync");
    tu_rmdir_free(dir);
}

/* -- a failed fdatasync of the pre-writer (writeback_errors: Linux's errseq) -- */

struct prewrite_report {
    int64_t acked_end;
    int failed_rc;
    uint64_t rolled_at_failure;
    uint64_t faults;
};

/* sync=always, 1 MiB segments (the pre-writer zeroes and fdatasyncs ahead of the writer through
 * a descriptor of segment 0's log); its first such fdatasync fails. On Linux the error is then
 * reported once per open file: if the pre-writer swallows it on the writer's own descriptor,
 * the writer's next fdatasync succeeds although the pages written before it were dropped. */
static void prewrite_child(const char *dir, const struct io_fault_rule *unused, int fd)
{
    (void)unused;
    struct rt_options o;
    options(&o, 1024 * 1024);
    o.retention_bytes = -1;
    struct io_fault_plan plan = {.track_unsynced = true, .writeback_errors = true};
    plan.rules[plan.rule_count++] =
        (struct io_fault_rule){.mode = IO_FAULT_ONCE,
                               .op = IO_OP_FDATASYNC_DIRECT,
                               .nth = 1,
                               .error = EIO,
                               .path_contains = "/" ROLL_TOPIC "-0" SEAL_SEGMENT};
    rt_engine *e = NULL;
    if (rt_test_open(dir, &o, &plan, &e) != 0 || rt_topic_create(e, ROLL_TOPIC, 1) != 0)
        _exit(2);
    struct prewrite_report r = {0};
    int64_t next = 0;
    uint64_t batch_bytes = (uint64_t)RECORDS_PER_BATCH * VALUE_BYTES;
    for (uint64_t i = 0; i < 2 * (1024 * 1024) / batch_bytes; i++) {
        int64_t base = -1;
        int rc = append_batch(e, ROLL_TOPIC, 0, next, &base);
        if (rc != 0) {
            struct rt_stats st;
            r.failed_rc = rc;
            if (rt_stats_get(e, &st) == 0)
                r.rolled_at_failure = st.segments_rolled;
            break;
        }
        next += RECORDS_PER_BATCH;
        r.acked_end = next;
    }
    r.faults = plan.faults_injected;
    (void)io_fault_power_loss(&plan);
    report(fd, &r, sizeof(r));
    _exit(0);
}

/* The pre-writer's failed fdatasync reaches the writer: an append fails (sticky), before any
 * roll (so it was not the seal's), and nothing acknowledged is lost to the power loss after. */
static void test_prewriter_fdatasync_eio_reaches_the_writer(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct prewrite_report r;
    assert_int_equal(run_child(prewrite_child, dir, NULL, &r, sizeof(r)), 0);
    assert_int_equal(r.faults, 1);
    if (r.failed_rc == 0)
        fail_msg("the pre-writer's fdatasync failed and every append succeeded: the writeback "
                 "error was swallowed");
    assert_int_equal(r.failed_rc, RT_E_IO_FAILED);
    assert_int_equal(r.rolled_at_failure, 0);
    struct roll_report rr = {.acked_end = r.acked_end};
    roll_segment_bytes = 1024 * 1024;
    check_rolls(dir, &rr, "after the pre-writer's failed fdatasync");
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_create),
        cmocka_unit_test(test_model_rename),
        cmocka_unit_test(test_model_unlink),
        cmocka_unit_test(test_model_mkdir),
        cmocka_unit_test(test_model_undo_skips_a_foreign_name),
        cmocka_unit_test(test_model_release_keeps_changes),
        cmocka_unit_test(test_rules_name_the_new_kinds),
        cmocka_unit_test(test_power_loss_right_after_topic_creation),
        cmocka_unit_test(test_power_loss_after_first_open_keeps_the_new_directory),
        cmocka_unit_test(test_power_loss_in_topic_creation_at_every_directory_change),
        cmocka_unit_test(test_power_loss_in_topic_creation_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_right_after_rolls),
        cmocka_unit_test(test_power_loss_in_rolls_at_every_directory_change),
        cmocka_unit_test(test_power_loss_in_rolls_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_in_rolls_at_every_direct_fdatasync),
        cmocka_unit_test(test_eio_in_rolls_at_every_direct_fdatasync),
        cmocka_unit_test(test_seal_fdatasync_eio_is_reported),
        cmocka_unit_test(test_power_loss_at_seal_fdatasync),
        cmocka_unit_test(test_prewriter_fdatasync_eio_reaches_the_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
