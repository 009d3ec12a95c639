/*
 * test_topic_create_faults.c — a topic creation that fails removes what it made, and one that a
 * power loss interrupts leaves nothing that open or verify complain about afterwards (issue 21
 * F4; log.c LG4-LG6). Through the fault injector (io/io.h): ENOSPC and EIO at every directory
 * change, directory fsync and direct fdatasync of a creation, and power loss at each of them.
 * After each: no `<topic>-<p>` directory without its topic, no creation intent left once the
 * directory was opened, rt_verify reports neither a problem nor a warning, and the topic can be
 * created (again) and written.
 *
 * RT_TEST_BOTH_BACKENDS: the runs that inject use the fault backend; reopening uses the one
 * under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "log/log.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC      "made"
#define PARTITIONS 3
#define SWEEP_MAX  200

static void options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = 64 * 1024;
    o->batch_size_max_bytes = 16 * 1024;
    o->shard_count = 1;
}

/* The number of TOPIC-<p> directories in dir. */
static unsigned partition_dirs(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, TOPIC "-", strlen(TOPIC) + 1) == 0;
    closedir(d);
    return n;
}

static bool intent_exists(const char *dir)
{
    char *p = tu_path("%s/topic-create.tmp", dir);
    bool yes = access(p, F_OK) == 0;
    free(p);
    return yes;
}

/* The directory opens (the backend under test), the topic is whole or absent, and with `create`
 * it can be created when absent; every partition takes an append. */
static void reopen_and_use(const char *dir, const char *what, bool create)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc)
        fail_msg("%s: open: %s (%s)", what, rt_strerror(rc), rt_error_detail());
    assert_false(intent_exists(dir)); /* LG5: an open resolves it */
    uint32_t n = 0;
    rc = rt_topic_describe(e, TOPIC, &n);
    if (rc == 0)
        assert_int_equal(n, PARTITIONS);
    else if (partition_dirs(dir) != 0)
        fail_msg("%s: %u partition directories of a topic that does not exist", what,
                 partition_dirs(dir));
    if (rc != 0 && create) {
        rc = rt_topic_create(e, TOPIC, PARTITIONS);
        if (rc)
            fail_msg("%s: create after: %s (%s)", what, rt_strerror(rc), rt_error_detail());
    }
    if (rc == 0) {
        for (uint32_t p = 0; p < PARTITIONS; p++) {
            struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1};
            int64_t base = -1;
            assert_int_equal(rt_append(e, TOPIC, p, &r, 1, &base), 0);
            assert_int_equal(base, 0); /* a fresh log: nothing inherited */
        }
    }
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, what);
}

/* ENOSPC / EIO (positive errno) once at the n-th op of `op` counted from the create's start. */
static void errors_sweep(enum io_op_type op, int err)
{
    unsigned n = 1;
    for (; n <= SWEEP_MAX; n++) {
        char *dir = tu_mkdtemp();
        char what[128];
        snprintf(what, sizeof(what), "%s at op %d #%u of a topic creation", strerror(err), op, n);
        struct rt_options o;
        options(&o);
        struct io_fault_plan plan = {.track_dirs = true};
        rt_engine *e = NULL;
        assert_int_equal(rt_test_open(dir, &o, &plan, &e), 0);
        uint64_t seen = op == IO_OP_DIR_ENTRY   ? plan.dir_entries_seen
                        : op == IO_OP_DIR_FSYNC ? plan.dir_fsyncs_seen
                                                : plan.direct_fdatasyncs_seen;
        struct io_fault_rule rule = {
            .mode = IO_FAULT_ONCE, .op = op, .nth = seen + n, .error = err};
        assert_int_equal(io_fault_rule_add(&plan, &rule), 0);
        int rc = rt_topic_create(e, TOPIC, PARTITIONS);
        bool reached = io_fault_faults_injected(&plan) > 0;
        if (rc == 0) {
            assert_false(reached && rc == 0 && partition_dirs(dir) != PARTITIONS);
        } else {
            assert_true(reached);
            bool catalogue = strstr(rt_error_detail(), "catalogue") != NULL;
            /* LG13: a catalogue that was not replaced is undone in place, the write side up. */
            bool undone = strstr(rt_error_detail(), "nothing of the topic is left") != NULL;
            if (undone) {
                struct rt_stats st;
                assert_int_equal(rt_stats_get(e, &st), 0);
                if (st.write_error != 0 || partition_dirs(dir) != 0 || intent_exists(dir))
                    fail_msg("%s: an undone creation left the write side %d, %u directories%s",
                             what, st.write_error, partition_dirs(dir),
                             intent_exists(dir) ? " and the intent" : "");
            }
            if (!catalogue) {
                /* F4: what it made is gone at once, and so is its intent. */
                if (partition_dirs(dir) != 0 || intent_exists(dir))
                    fail_msg("%s: %u partition directories%s left after the failed create (%s)",
                             what, partition_dirs(dir), intent_exists(dir) ? " and the intent" : "",
                             rt_error_detail());
                uint32_t parts = 0;
                assert_int_equal(rt_topic_describe(e, TOPIC, &parts),
                                 RT_E_UNKNOWN_TOPIC_OR_PARTITION);
            }
        }
        (void)rt_close(e); /* a catalogue failure after its rename left the write side failed */
        io_fault_plan_release(&plan);
        reopen_and_use(dir, what, true);
        tu_rmdir_free(dir);
        if (!reached)
            break; /* the create ran past its last op of this kind */
    }
    print_message("%s: %u ops of kind %d swept\n", strerror(err), n - 1, op);
    assert_true(n > 1 && n <= SWEEP_MAX);
}

static void test_enospc_at_every_directory_change(void **state)
{
    (void)state;
    errors_sweep(IO_OP_DIR_ENTRY, ENOSPC);
}

static void test_eio_at_every_directory_fsync(void **state)
{
    (void)state;
    errors_sweep(IO_OP_DIR_FSYNC, EIO);
}

static void test_eio_at_every_direct_fdatasync(void **state)
{
    (void)state;
    errors_sweep(IO_OP_FDATASYNC_DIRECT, EIO);
}

/* Power loss at the n-th op of `op` of a creation, in a child (a dead machine: no close). */
static int power_act(rt_engine *e)
{
    return rt_topic_create(e, TOPIC, PARTITIONS);
}

/* The open that follows resolves the intent: the topic is whole (when acknowledged it must be)
 * or gone, with nothing of it left. */
static void power_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    (void)dir;
    uint32_t parts = 0;
    int drc = rt_topic_describe(e, TOPIC, &parts);
    if (acked && drc != 0)
        fail_msg("%s: an acknowledged topic is gone", what);
}

static void power_after(const char *dir, const char *what)
{
    reopen_and_use(dir, what, true);
}

static const struct tu_power_sweep sweep = {.options = options,
                                            .runs_max = SWEEP_MAX,
                                            .what = "of a topic creation",
                                            .act = power_act,
                                            .check = power_check,
                                            .after = power_after};

static void test_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_ENTRY);
}

static void test_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_FSYNC);
}

static void test_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_FDATASYNC_DIRECT);
}

/* LG4: an uncatalogued leftover `<topic>-<p>` directory (a crash before this rule, or an
 * operator's copy) is not inherited by a new topic of that name: the create removes it first. */
static void test_create_does_not_inherit_a_leftover(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "other", 1), 0);
    struct rt_record r = {.key_len = -1, .value = "old", .value_len = 3, .timestamp_ms = -1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(rt_append(e, "other", 0, &r, 1, NULL), 0);
    assert_int_equal(rt_close(e), 0);
    /* A copy of a partition under a name no topic owns. */
    assert_int_equal(tu_system("cp -r %s/other-0 %s/" TOPIC "-1", dir, dir), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, PARTITIONS), 0);
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 1, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(end, 0);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the create");
    tu_rmdir_free(dir);
}

/* LG6: the intent's one encoding; a torn one (no "end" line) covers nothing, and an open
 * removes it and nothing else. */
static void test_intent_encoding_and_a_torn_intent(void **state)
{
    (void)state;
    char text[LOG_CREATE_INTENT_BYTES_MAX];
    size_t len = log_create_intent_format(text, "orders", 12);
    assert_int_equal(len, strlen("ringtail topic create 1\norders\n12\nend\n"));
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t parts = 0;
    assert_int_equal(log_create_intent_parse(text, len, name, &parts), 0);
    assert_string_equal(name, "orders");
    assert_int_equal(parts, 12);
    static const char *bad[] = {
        "ringtail topic create 1\norders\n12\nen",     /* torn */
        "ringtail topic create 1\norders\n012\nend\n", /* not the one encoding */
        "ringtail topic create 1\norders\n0\nend\n",   /* no partitions */
        "ringtail topic create 1\nor/ders\n1\nend\n",  /* not a topic name */
        "ringtail topic create 1\norders\n1\nend\nx",  /* trailing bytes */
        "ringtail topic create 2\norders\n1\nend\n",   /* another version */
        "ringtail topic create 1\norders\n4294967296\nend\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(log_create_intent_parse(bad[i], strlen(bad[i]), name, &parts),
                         RT_E_CORRUPT);
    /* A torn intent beside the directory: the open removes it and leaves the topics alone. */
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, PARTITIONS), 0);
    assert_int_equal(rt_close(e), 0);
    char *p = tu_path("%s/topic-create.tmp", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(bad[0], f);
    fclose(f);
    free(p);
    reopen_and_use(dir, "a torn intent", false);
    assert_int_equal(partition_dirs(dir), PARTITIONS);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enospc_at_every_directory_change),
        cmocka_unit_test(test_eio_at_every_directory_fsync),
        cmocka_unit_test(test_eio_at_every_direct_fdatasync),
        cmocka_unit_test(test_power_loss_at_every_directory_change),
        cmocka_unit_test(test_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_at_every_direct_fdatasync),
        cmocka_unit_test(test_create_does_not_inherit_a_leftover),
        cmocka_unit_test(test_intent_encoding_and_a_torn_intent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
