/*
 * test_verify.c — rt_verify (engine/check/verify.c): a healthy multi-segment directory passes; each
 * kind of damage is reported once with the file and byte offset and makes it fail (a flipped
 * byte in a sealed segment, a zero-filled tail in a sealed segment, a missing middle segment,
 * an index entry that points inside a batch, a missing partition directory, a damaged
 * catalogue); stray files are only warnings; a directory open in an engine is
 * RT_E_DIRECTORY_LOCKED; and verify never changes a byte or creates a file, whatever it reads
 * (random garbage included).
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
#include <sys/stat.h>
#include <unistd.h>

#include "index/crc32c.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/cli.h" /* struct rt_verify_counts, rt_verify_with_counts (see verify.c) */

#define TOPIC      "t"
#define PARTITIONS 2u

struct fixture {
    char *dir;
    struct rt_options o;
};

struct reports {
    char lines[64][1024];
    unsigned count;
    unsigned warnings;
};

static void collect(void *ctx, const char *msg)
{
    struct reports *r = ctx;
    if (strncmp(msg, "warning: ", 9) == 0)
        r->warnings++;
    if (r->count < 64)
        snprintf(r->lines[r->count], sizeof r->lines[0], "%s", msg);
    r->count++;
}

static bool reported(const struct reports *r, const char *needle1, const char *needle2)
{
    for (unsigned i = 0; i < r->count && i < 64; i++)
        if (strstr(r->lines[i], needle1) && (!needle2 || strstr(r->lines[i], needle2)))
            return true;
    return false;
}

static void print_reports(const struct reports *r)
{
    for (unsigned i = 0; i < r->count && i < 64; i++)
        print_message("  report: %s\n", r->lines[i]);
}

/* A closed directory with several sealed segments per partition and non-empty indexes. */
static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = tu_mkdtemp();
    tu_options(&f->o);
    f->o.batch_size_max_bytes = 4096;
    f->o.segment_size_bytes = 8192;
    f->o.index_interval_bytes = 256;
    f->o.shard_count = 1;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, PARTITIONS), 0);
    char value[200];
    struct rt_record recs[3];
    for (int i = 0; i < 120; i++) {
        memset(value, 'a' + i % 26, sizeof value);
        for (int r = 0; r < 3; r++)
            recs[r] = (struct rt_record){.key = "k",
                                         .key_len = 1,
                                         .value = value,
                                         .value_len = (int32_t)sizeof value,
                                         .timestamp_ms = 1000 + i};
        assert_int_equal(rt_append(e, TOPIC, (uint32_t)i % PARTITIONS, recs, 3, NULL), 0);
    }
    assert_int_equal(rt_close(e), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

/* Sorted .log paths of partition p (caller frees each and the array). */
static char **logs_of(const char *dir, uint32_t p, size_t *n_out)
{
    char *pdir = tu_path("%s/%s-%u", dir, TOPIC, p);
    struct dirent **names = NULL;
    int n = scandir(pdir, &names, NULL, alphasort);
    assert_true(n >= 0);
    char **out = calloc((size_t)n + 1, sizeof *out);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (len == 24 && strcmp(names[i]->d_name + 20, ".log") == 0)
            out[k++] = tu_path("%s/%s", pdir, names[i]->d_name);
        free(names[i]);
    }
    free(names);
    free(pdir);
    *n_out = k;
    return out;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

/* Checksum of every file's name, size and bytes under dir (top level and one level down),
 * to prove verify changed nothing. */
static uint32_t tree_sum(const char *dir)
{
    uint32_t sum = 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char *path = tu_path("%s/%s", dir, name);
            struct stat st;
            assert_int_equal(lstat(path, &st), 0);
            sum = crc32c(sum, name, strlen(name));
            if (S_ISDIR(st.st_mode)) {
                uint32_t sub = tree_sum(path);
                sum = crc32c(sum, &sub, sizeof sub);
            } else {
                size_t len = 0;
                uint8_t *b = tu_read_file(path, &len);
                sum = crc32c(sum, &len, sizeof len);
                sum = crc32c(sum, b, len);
                free(b);
            }
            free(path);
        }
        free(names[i]);
    }
    free(names);
    return sum;
}

static void test_healthy_directory(void **state)
{
    struct fixture *f = *state;
    struct reports r = {0};
    struct rt_verify_counts n;
    uint32_t before = tree_sum(f->dir);
    int rc = rt_verify_with_counts(f->dir, collect, &r, &n);
    print_reports(&r);
    assert_int_equal(rc, 0);
    assert_int_equal(r.count, 0);
    assert_int_equal(n.topics, 1);
    assert_int_equal(n.partitions, PARTITIONS);
    assert_true(n.segments > PARTITIONS); /* rolled: several segments per partition */
    assert_int_equal(n.batches, 120);
    assert_int_equal(n.records, 360);
    assert_int_equal(tree_sum(f->dir), before);
    assert_int_equal(rt_verify(f->dir, NULL, NULL), 0);
}

static void test_flipped_byte_in_sealed_segment(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;
    char **logs = logs_of(f->dir, 0, &n);
    assert_true(n >= 2);
    tu_flip_byte(logs[0], 200, 0x01); /* inside the first batch's records */
    struct reports r = {0};
    uint32_t before = tree_sum(f->dir);
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    char *want = tu_path("%s: offset 0: batch:", logs[0]);
    assert_true(reported(&r, want, NULL));
    free(want);
    assert_int_equal(tree_sum(f->dir), before);
    free_list(logs, n);
}

static void test_zero_tail_only_in_newest(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;
    char **logs = logs_of(f->dir, 1, &n);
    assert_true(n >= 2);
    /* The newest segment of a directory that was not closed cleanly may carry its
     * preallocated zeros (with the clean-shutdown marker open would refuse them)... */
    char *clean = tu_path("%s/.clean_shutdown", f->dir);
    unlink(clean);
    free(clean);
    size_t newest_size = tu_file_size(logs[n - 1]);
    tu_truncate(logs[n - 1], newest_size + 4096);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), 0);
    /* ...a sealed one may not. */
    size_t old_size = tu_file_size(logs[0]);
    tu_truncate(logs[0], old_size + 100);
    r = (struct reports){0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    char *want = tu_path("%s: offset %zu: zero-filled tail", logs[0], old_size);
    assert_true(reported(&r, want, "newest"));
    free(want);
    free_list(logs, n);
}

static void test_missing_middle_segment(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;
    char **logs = logs_of(f->dir, 0, &n);
    assert_true(n >= 3);
    assert_int_equal(unlink(logs[1]), 0);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    /* logs[1]'s indexes are now orphans, and logs[0] no longer ends where logs[2] begins
     * (reported on logs[0], as rt_open names it). */
    assert_true(reported(&r, logs[0], "records are missing"));
    assert_true(reported(&r, "index without a log segment", NULL));
    free_list(logs, n);
}

static void test_index_entry_inside_a_batch(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;
    char **logs = logs_of(f->dir, 0, &n);
    assert_true(n >= 1);
    char *idx = tu_path("%.*s.index", (int)(strlen(logs[0]) - 4), logs[0]);
    size_t len = tu_file_size(idx);
    assert_true(len >= 8);
    /* Last entry's position + 1 (big-endian low byte): still increasing, but not a batch start. */
    tu_flip_byte(idx, len - 1, 0x01);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    assert_true(reported(&r, idx, "entry points"));
    free(idx);
    free_list(logs, n);
}

static void test_missing_partition_and_stray_files(void **state)
{
    struct fixture *f = *state;
    char *stray = tu_path("%s/notes.txt", f->dir);
    FILE *fp = fopen(stray, "w");
    assert_non_null(fp);
    fclose(fp);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), 0); /* a warning only */
    assert_int_equal(r.warnings, 1);
    assert_true(reported(&r, "warning: ", "notes.txt: unexpected entry"));

    assert_int_equal(tu_system("rm -rf '%s/%s-1'", f->dir, TOPIC), 0);
    r = (struct reports){0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    assert_true(reported(&r, "/" TOPIC "-1: partition directory missing", NULL));
    free(stray);
}

static void test_damaged_catalogue(void **state)
{
    struct fixture *f = *state;
    char *meta = tu_path("%s/ringtail.meta", f->dir);
    tu_flip_byte(meta, 15, 0x20);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_CORRUPT);
    print_reports(&r);
    assert_true(reported(&r, meta, ": offset "));
    free(meta);
}

static void test_locked_by_engine(void **state)
{
    struct fixture *f = *state;
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), 0);
    struct reports r = {0};
    assert_int_equal(rt_verify(f->dir, collect, &r), RT_E_DIRECTORY_LOCKED);
    assert_int_equal(r.count, 0);
    assert_non_null(strstr(rt_error_detail(), ".lock"));
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_verify(f->dir, NULL, NULL), 0);
}

static void test_creates_nothing(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct reports r = {0};
    assert_int_equal(rt_verify(dir, collect, &r), 0); /* no catalogue: no topics, a warning */
    assert_int_equal(r.warnings, 1);
    DIR *d = opendir(dir);
    struct dirent *de;
    int entries = 0;
    while ((de = readdir(d)) != NULL)
        entries++;
    closedir(d);
    assert_int_equal(entries, 2); /* "." and "..": no .lock was created */
    char *missing = tu_path("%s/nope", dir);
    assert_int_equal(rt_verify(missing, NULL, NULL), -ENOENT);
    free(missing);
    tu_rmdir_free(dir);
}

static void test_garbage_never_crashes(void **state)
{
    struct fixture *f = *state;
    size_t n = 0;
    char **logs = logs_of(f->dir, 0, &n);
    char *idx = tu_path("%.*s.index", (int)(strlen(logs[0]) - 4), logs[0]);
    char *tidx = tu_path("%.*s.timeindex", (int)(strlen(logs[0]) - 4), logs[0]);
    srand(12345);
    for (int round = 0; round < 200; round++) {
        const char *victim = round % 3 == 0 ? logs[round % n] : round % 3 == 1 ? idx : tidx;
        size_t len = tu_file_size(victim);
        if (len == 0)
            continue;
        for (int k = 0; k < 4; k++)
            tu_flip_byte(victim, (uint64_t)rand() % len, (uint8_t)(1u << (rand() % 8)));
        if (round % 17 == 0)
            tu_truncate(victim, (uint64_t)rand() % (len + 1));
        int rc = rt_verify(f->dir, NULL, NULL);
        assert_true(rc == 0 || rc == RT_E_CORRUPT);
    }
    free(idx);
    free(tidx);
    free_list(logs, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_byte_in_sealed_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_tail_only_in_newest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_middle_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_entry_inside_a_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_partition_and_stray_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_catalogue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked_by_engine, setup, teardown),
        cmocka_unit_test(test_creates_nothing),
        cmocka_unit_test_setup_teardown(test_garbage_never_crashes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
