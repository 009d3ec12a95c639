/*
 * test_verify_open.c — rt_verify and rt_open agree, one defect of issue 10 per test, each
 * triggered as an operator or a crash would: an empty newest .log in a cleanly closed directory
 * (defect 4), an emptied or deleted sealed .txnindex (defect 6), the orphans a SIGKILL during a
 * segment deletion leaves (defect 8), a torn newest .txnindex in a clean directory and a damaged
 * older snapshot (defect 10), and a CRC-valid compressed batch whose records disagree with its
 * header (verify decodes compressed records). In every case verify reports the damage, open
 * repairs it, read_committed serves no aborted record, and verify is clean afterwards.
 *
 * Recycled segments (issue 14; docs/format.md A.6 RS1-RS3, SC5): after a crash, the newest
 * segment may hold stale batches of the segment its file was, after its own last batch (right
 * there, or after a torn new batch): both agree it is the log's end, not damage (verify clean,
 * open counts no torn tail, no stale batch served). A torn tail with no stale batch after it is
 * still reported and cut; stale bytes in a cleanly closed directory are damage to both.
 *
 * A crash that lost the newest segment's tail (SC7, docs/format.md I OV8): a SIGKILLed writer's
 * newest .log is cut back (ftruncate, or zeroed from a batch boundary as a power loss over
 * preallocated blocks leaves it) past index entries that survived — .index, .timeindex and the
 * .txnindex entry of an ABORT marker. That is what a crash leaves, not damage: verify exits 0 and
 * warns naming each of the three files and an offset; open drops the entries (read_committed
 * serves no aborted record, the log goes on), and verify is silent afterwards. The same cut in a
 * cleanly closed directory is damage: verify reports it, open rebuilds the index.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file once over io_uring and once over the sync fallback.
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

#include "batch.h"
#include "compression.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "index/crc32c.h"
#include "ringtail.h"

#define TOPIC "t"

static void options(struct rt_options *o)
{
    tu_options_small(o, 8 * 1024, 2 * 1024, 256);
}

static void send_value(rt_producer *p, const char *value)
{
    struct rt_producer_message m = {.record = {.key_len = -1,
                                               .value = value,
                                               .value_len = (int32_t)strlen(value),
                                               .timestamp_ms = -1},
                                    .sequence = -1};
    assert_int_equal(rt_producer_send(p, TOPIC, 0, &m, NULL, NULL), 0);
}

/* A cleanly closed directory: transactions, every third aborted (and the last one), over
 * several segments, so sealed and newest .txnindex files hold entries. */
static char *build(void)
{
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    assert_int_equal(rt_producer_init_transactions(p, -1), 0);
    for (int i = 0; i < 40; i++) {
        bool abort = i % 3 == 1 || i == 39;
        assert_int_equal(rt_producer_begin(p), 0);
        char v[96];
        for (int k = 0; k < 3; k++) {
            snprintf(v, sizeof(v), "%s-%d-%d-padding-padding-padding-padding",
                     abort ? "abort" : "commit", i, k);
            send_value(p, v);
        }
        if (abort)
            assert_int_equal(rt_producer_abort(p, -1), 0);
        else
            assert_int_equal(rt_producer_commit(p, -1), 0);
    }
    assert_int_equal(rt_producer_close(p), 0);
    assert_int_equal(rt_close(e), 0);
    struct tu_verify_log r = {0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), 0);
    return dir;
}

/* Sorted names in dir/t-0 ending with suffix. */
static unsigned files(const char *dir, const char *suffix, char out[][64], unsigned max)
{
    char *pdir = tu_path("%s/" TOPIC "-0", dir);
    DIR *d = opendir(pdir);
    free(pdir);
    assert_non_null(d);
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

static char *file_path(const char *dir, const char *name)
{
    return tu_path("%s/" TOPIC "-0/%s", dir, name);
}

/* Verify reports a problem naming `file` (a substring); then open, read_committed, append
 * (when asked), close; then verify is clean. */
static void expect_reported_then_repaired(const char *dir, const char *file, bool append)
{
    struct tu_verify_log r = {0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), RT_E_CORRUPT);
    if (!strstr(r.all, file))
        fail_msg("verify did not report %s:\n%s", file, r.all);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    int rc = rt_open(dir, &o, &e);
    if (rc != 0)
        fail_msg("open: %s (%s)", rt_strerror(rc), rt_error_detail());
    int64_t offset = 0;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_COMMITTED, &offset),
                     0);
    int aborted = 0, committed = 0;
    for (;;) {
        rt_fetch *f = NULL;
        rc = rt_fetch_start(e, TOPIC, 0, offset, 1 << 16, RT_READ_COMMITTED, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            break;
        assert_int_equal(rc, 0);
        const struct rt_fetch_view *view = rt_fetch_get(f);
        if (view->size_bytes == 0) {
            rt_fetch_release(f);
            break;
        }
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        while ((rc = rt_records_next(&it, &rv)) == 0) {
            if (rv.value_len >= 5 && memcmp(rv.value, "abort", 5) == 0)
                aborted++;
            else
                committed++;
        }
        assert_int_equal(rc, RT_E_END);
        offset = rt_records_next_offset(&it);
        int64_t lso = view->last_stable_offset;
        rt_fetch_release(f);
        if (offset >= lso)
            break;
    }
    assert_int_equal(aborted, 0);
    assert_true(committed >= 3);
    struct rt_record rec = {.key_len = -1, .value = "after", .value_len = 5, .timestamp_ms = -1};
    for (int i = 0; append && i < 20; i++) {
        rc = rt_append(e, TOPIC, 0, &rec, 1, NULL);
        if (rc != 0)
            fail_msg("append after open: %s (%s)", rt_strerror(rc), rt_error_detail());
    }
    assert_int_equal(rt_close(e), 0);
    r = (struct tu_verify_log){0};
    rc = rt_verify(dir, tu_on_problem, &r);
    if (rc != 0)
        fail_msg("verify after open still reports:\n%s", r.all);
}

/* Defect 4: the newest .log emptied in a cleanly closed directory; its offset index is stale. */
static void test_empty_newest_log_clean(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    assert_true(n >= 2);
    char *log = file_path(dir, names[n - 1]);
    char *idx = tu_path("%.*s.index", (int)(strlen(log) - 4), log);
    assert_true(tu_file_size(idx) > 0); /* entries that now point at nothing */
    tu_truncate(log, 0);
    char stale[64];
    snprintf(stale, sizeof(stale), "%.20s.index", names[n - 1]);
    expect_reported_then_repaired(dir, stale, true);
    free(idx);
    free(log);
    tu_rmdir_free(dir);
}

/* The first sealed .txnindex that holds entries. */
static char *sealed_txnindex(const char *dir, char *name_out)
{
    char names[64][64];
    unsigned n = files(dir, ".txnindex", names, 64);
    for (unsigned i = 0; i + 1 < n; i++) {
        char *p = file_path(dir, names[i]);
        if (tu_file_size(p) > 0) {
            memcpy(name_out, names[i], 64);
            return p;
        }
        free(p);
    }
    fail_msg("no sealed .txnindex with entries");
    return NULL;
}

/* Defect 6: a sealed .txnindex emptied. */
static void test_sealed_txnindex_emptied(void **state)
{
    (void)state;
    char *dir = build();
    char name[64];
    char *path = sealed_txnindex(dir, name);
    size_t len = 0;
    uint8_t *orig = tu_read_file(path, &len);
    tu_truncate(path, 0);
    expect_reported_then_repaired(dir, name, true);
    /* Rebuilt byte for byte from the segment's ABORT markers. */
    size_t len2 = 0;
    uint8_t *now = tu_read_file(path, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(now, orig, len);
    free(now);
    free(orig);
    free(path);
    tu_rmdir_free(dir);
}

/* Defect 6: a sealed .txnindex deleted. */
static void test_sealed_txnindex_deleted(void **state)
{
    (void)state;
    char *dir = build();
    char name[64];
    char *path = sealed_txnindex(dir, name);
    assert_int_equal(unlink(path), 0);
    expect_reported_then_repaired(dir, name, true);
    assert_true(tu_file_size(path) > 0);
    free(path);
    tu_rmdir_free(dir);
}

/* Defect 8: a SIGKILL inside a segment deletion (log, index, timeindex gone; txnindex not
 * yet), plus the leftovers of an interrupted rewrite. */
static void test_orphans_removed(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    assert_true(n >= 2);
    char base[32];
    snprintf(base, sizeof(base), "%.20s", names[0]);
    static const char *const gone[] = {"log", "index", "timeindex"};
    for (unsigned i = 0; i < 3; i++) {
        char *p = tu_path("%s/" TOPIC "-0/%s.%s", dir, base, gone[i]);
        assert_int_equal(unlink(p), 0);
        free(p);
    }
    char *orphan = tu_path("%s/" TOPIC "-0/%s.txnindex", dir, base);
    assert_true(fs_exists_for_test(orphan));
    char *tmp = tu_path("%s/" TOPIC "-0/%s.snapshot.tmp", dir, base);
    char *deleted = tu_path("%s/" TOPIC "-0/%s.log.deleted", dir, base);
    assert_int_equal(tu_system("echo x > '%s' && echo y > '%s'", tmp, deleted), 0);
    char want[64];
    snprintf(want, sizeof(want), "%s.txnindex", base);
    expect_reported_then_repaired(dir, want, true);
    assert_false(fs_exists_for_test(orphan));
    assert_false(fs_exists_for_test(tmp));
    assert_false(fs_exists_for_test(deleted));
    free(orphan);
    free(tmp);
    free(deleted);
    tu_rmdir_free(dir);
}

/* Defect 10: a torn newest .txnindex in a clean directory (verify said healthy, open refused). */
static void test_torn_newest_txnindex_clean(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".txnindex", names, 64);
    assert_true(n >= 1);
    char *path = file_path(dir, names[n - 1]);
    size_t len = tu_file_size(path);
    assert_true(len >= 34); /* the last transaction was aborted in the newest segment */
    tu_truncate(path, len - 17);
    expect_reported_then_repaired(dir, names[n - 1], true);
    assert_int_equal(tu_file_size(path), len);
    free(path);
    tu_rmdir_free(dir);
}

/* Defect 10: a damaged older snapshot (open ignored it, verify failed on every run). */
static void test_damaged_older_snapshot(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".snapshot", names, 64);
    assert_true(n >= 2);
    char *path = file_path(dir, names[0]);
    tu_flip_byte(path, tu_file_size(path) - 1, 0x01);
    /* No append: a close with nothing new writes no snapshot that would push the damaged one
     * out, so only open's own check can remove it. */
    expect_reported_then_repaired(dir, names[0], false);
    free(path);
    tu_rmdir_free(dir);
}

/* Defect 3 (verify's part) / 10: a compressed batch whose CRC is valid but whose records claim
 * more than the stream holds. Verify decodes compressed records and reports it. */
static void test_verify_decodes_compressed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    /* A gzip batch of 5 records, built as a client would. */
    uint8_t plain[4096], packed[4096];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, plain, sizeof(plain), 0, -1, -1, -1), 0);
    for (int i = 0; i < 5; i++) {
        struct rt_record r = {
            .key_len = -1, .value = "value", .value_len = 5, .timestamp_ms = 1000};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    struct compression_buffer z = {0};
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, plain + BATCH_HEADER_BYTES,
                                          len - BATCH_HEADER_BYTES, &z, COMPRESSION_LEVEL_DEFAULT),
                     0);
    size_t total = BATCH_HEADER_BYTES + z.len;
    memcpy(packed, plain, BATCH_HEADER_BYTES);
    memcpy(packed + BATCH_HEADER_BYTES, z.data, z.len);
    compression_buffer_free(&z);
    uint16_t attributes = be16_load(packed + BATCH_OFF_ATTRIBUTES);
    be16_store(packed + BATCH_OFF_ATTRIBUTES, (uint16_t)(attributes | BATCH_COMPRESSION_GZIP));
    be32_store(packed + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
    batch_seal_crc(packed, total);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(e, TOPIC, 0, packed, total, &base), 0);
    assert_int_equal(rt_close(e), 0);
    struct tu_verify_log r = {0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), 0);
    /* Claim 6 records (lastOffsetDelta 5) and reseal the CRC: the header is sound, the
     * decompressed records are not. */
    char names[4][64];
    assert_int_equal(files(dir, ".log", names, 4), 1);
    char *log = file_path(dir, names[0]);
    size_t flen = 0;
    uint8_t *buf = tu_read_file(log, &flen);
    assert_true(flen >= total);
    be32_store(buf + 57, 6);
    be32_store(buf + BATCH_OFF_LAST_OFFSET_DELTA, 5);
    batch_seal_crc(buf, total);
    int fd = open(log, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, total, 0), (ssize_t)total);
    close(fd);
    free(buf);
    r = (struct tu_verify_log){0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), RT_E_CORRUPT);
    if (!strstr(r.all, names[0]) || !strstr(r.all, "records"))
        fail_msg("verify did not report the compressed records:\n%s", r.all);
    free(log);
    tu_rmdir_free(dir);
}

/* A sealed segment that lost its .index and has a damaged batch: open rebuilds indexes only
 * from a whole log, so it refuses naming the .log, and the log is not cut. */
static void test_lost_index_never_cuts_a_sealed_log(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    assert_true(n >= 2);
    char *log = file_path(dir, names[0]);
    char *idx = tu_path("%.*s.index", (int)(strlen(log) - 4), log);
    assert_int_equal(unlink(idx), 0);
    size_t size = tu_file_size(log);
    tu_flip_byte(log, size / 2, 0x10);
    struct tu_verify_log r = {0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), RT_E_CORRUPT);
    assert_non_null(strstr(r.all, names[0]));
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), log));
    assert_int_equal(tu_file_size(log), size);
    free(idx);
    free(log);
    tu_rmdir_free(dir);
}

/* ---- the tail of a recycled segment (docs/format.md A.6 RS1-RS3, SC5) ---- */

/* The log's end offset of a cleanly closed dir (open, list, close: nothing changes). */
static int64_t end_offset(const char *dir)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_int_equal(rt_close(e), 0);
    return end;
}

static void append_bytes(const char *path, const uint8_t *bytes, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, len), (ssize_t)len);
    close(fd);
}

/* Makes the newest segment of a clean dir look like a recycled file after a crash: after its
 * batches, `torn` bytes of a new batch that did not finish (a copy of the head of its own last
 * batch, base offset set to the log's end), then the whole oldest segment: stale batches whose
 * base offsets are below the newest segment's (RS1). Removes the clean-shutdown marker unless
 * keep_clean. Returns the newest log's path; *size_out its size before. */
static char *make_stale_tail(const char *dir, int64_t end, size_t torn, bool keep_clean,
                             size_t *size_out)
{
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    assert_true(n >= 2);
    char *newest = file_path(dir, names[n - 1]);
    char *oldest = file_path(dir, names[0]);
    size_t new_len = 0, old_len = 0;
    uint8_t *new_bytes = tu_read_file(newest, &new_len);
    uint8_t *old_bytes = tu_read_file(oldest, &old_len);
    assert_true(new_len > 61 && old_len > 61);
    *size_out = new_len;
    if (torn > 0) {
        /* The head of the newest segment's last batch, re-stamped as the next one. */
        size_t pos = 0, last = 0;
        while (pos < new_len) {
            last = pos;
            pos += 12 + (size_t)be32_of(new_bytes + pos + 8);
        }
        uint8_t head[256];
        assert_true(torn <= sizeof(head) && last + torn <= new_len);
        memcpy(head, new_bytes + last, torn);
        for (int i = 0; i < 8; i++)
            head[i] = (uint8_t)((uint64_t)end >> (56 - 8 * i));
        append_bytes(newest, head, torn);
    }
    append_bytes(newest, old_bytes, old_len);
    free(new_bytes);
    free(old_bytes);
    free(oldest);
    if (!keep_clean) {
        char *marker = tu_path("%s/.clean_shutdown", dir);
        assert_int_equal(unlink(marker), 0);
        free(marker);
    }
    return newest;
}

/* SC5: what verify and open agree on for a crashed directory whose newest segment has stale
 * batches after its last one (with or without a torn new batch between): not damage. Verify is
 * clean, open counts no torn tail, serves every record up to the old end and none beyond, cuts
 * the stale bytes, and the log goes on densely. */
static void expect_stale_tail_is_the_end(size_t torn)
{
    char *dir = build();
    int64_t end = end_offset(dir);
    size_t size = 0;
    char *newest = make_stale_tail(dir, end, torn, false, &size);
    assert_true(tu_file_size(newest) > size + torn);
    struct tu_verify_log r = {0};
    int rc = rt_verify(dir, tu_on_problem, &r);
    if (rc != 0)
        fail_msg("verify reports a stale tail as damage:\n%s", r.all);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    assert_true(st.opened_unclean);
    assert_int_equal(st.tail_bytes_ignored, 0);
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    assert_int_equal(hw, end); /* no stale batch became part of the log */
    struct rt_record rec = {.key_len = -1, .value = "after", .value_len = 5, .timestamp_ms = -1};
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, 0, &rec, 1, &base), 0);
    assert_int_equal(base, end);
    assert_int_equal(rt_close(e), 0);
    r = (struct tu_verify_log){0};
    rc = rt_verify(dir, tu_on_problem, &r);
    if (rc != 0)
        fail_msg("verify after open still reports:\n%s", r.all);
    free(newest);
    tu_rmdir_free(dir);
}

static void test_stale_batches_after_the_last_batch(void **state)
{
    (void)state;
    expect_stale_tail_is_the_end(0); /* a stale batch starts right where the log ends */
}

static void test_torn_batch_then_stale_batches(void **state)
{
    (void)state;
    expect_stale_tail_is_the_end(40); /* a torn new batch's head, then stale batches */
}

/* A torn tail with no stale batch after it is still reported by verify and cut by open, as
 * before recycling existed. */
static void test_torn_tail_without_stale_batches(void **state)
{
    (void)state;
    char *dir = build();
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    char *newest = file_path(dir, names[n - 1]);
    uint8_t junk[300];
    memset(junk, 0x5a, sizeof(junk));
    append_bytes(newest, junk, sizeof(junk));
    char *marker = tu_path("%s/.clean_shutdown", dir);
    assert_int_equal(unlink(marker), 0);
    expect_reported_then_repaired(dir, names[n - 1], true);
    free(marker);
    free(newest);
    tu_rmdir_free(dir);
}

/* In a cleanly closed directory the newest segment was trimmed: stale bytes after its batches
 * are damage there (SC1), refused by open and reported by verify alike. */
static void test_stale_tail_in_a_clean_directory_is_damage(void **state)
{
    (void)state;
    char *dir = build();
    int64_t end = end_offset(dir);
    size_t size = 0;
    char *newest = make_stale_tail(dir, end, 0, true, &size);
    struct tu_verify_log r = {0};
    assert_int_equal(rt_verify(dir, tu_on_problem, &r), RT_E_CORRUPT);
    assert_non_null(strstr(r.all, newest));
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), RT_E_CORRUPT);
    assert_true(tu_file_size(newest) > size); /* refused, never cut */
    free(newest);
    tu_rmdir_free(dir);
}

/* ---- a crash that lost the newest segment's tail (SC7) ------------------------------------ */

/* The newest .log of dir: its name, where its batches end, and the first ABORT marker (a
 * 78-byte control batch, attributes 0x30, control type 0 at byte 69) at or after offset
 * `from`: its position and offset. Returns the number of ABORT markers at or after `from`. */
static unsigned newest_aborts(const char *dir, int64_t from, char *name, size_t *data_end,
                              size_t *marker_pos, int64_t *marker_offset)
{
    char names[64][64];
    unsigned n = files(dir, ".log", names, 64);
    assert_true(n >= 1);
    snprintf(name, 64, "%s", names[n - 1]);
    char *path = file_path(dir, name);
    size_t len = 0;
    uint8_t *buf = tu_read_file(path, &len);
    free(path);
    unsigned aborts = 0;
    size_t pos = 0;
    while (pos + 61 <= len) {
        size_t size = 12 + (size_t)be32_of(buf + pos + 8);
        if (size == 12 || pos + size > len)
            break;
        if ((int64_t)be64_of(buf + pos) >= from && size == 78 && buf[pos + 22] == 0x30 &&
            buf[pos + 68] == 0 && buf[pos + 69] == 0 && aborts++ == 0) {
            *marker_pos = pos;
            *marker_offset = (int64_t)be64_of(buf + pos);
        }
        pos += size;
    }
    *data_end = pos;
    free(buf);
    return aborts;
}

static bool indexes_hold_entries_past(const char *dir, int64_t from);

/* A writer that dies as SIGKILL leaves it (no close): transactions, every other one aborted,
 * until the newest segment holds two ABORT markers written after `from` (the end the clean
 * close made durable). */
static void crash_with_aborts_in_newest(const char *dir, int64_t from)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rt_options o;
        options(&o);
        rt_engine *e = NULL;
        if (rt_open(dir, &o, &e) != 0)
            _exit(2);
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = "tx";
        po.linger_ms = 1;
        rt_producer *p = NULL;
        if (rt_producer_open(e, &po, &p) != 0 || rt_producer_init_transactions(p, -1) != 0)
            _exit(3);
        for (int i = 0; i < 2000; i++) {
            char name[64];
            size_t end = 0, pos = 0;
            int64_t off = 0;
            if (newest_aborts(dir, from, name, &end, &pos, &off) >= 2 &&
                indexes_hold_entries_past(dir, from))
                _exit(0); /* no close: the newest segment stays as the crash left it */
            bool abort = i % 2 == 0;
            if (rt_producer_begin(p) != 0)
                _exit(4);
            for (int k = 0; k < 3; k++) {
                char v[96];
                snprintf(v, sizeof(v), "%s-late-%d-%d-padding-padding-padding",
                         abort ? "abort" : "commit", i, k);
                struct rt_producer_message m = {.record = {.key_len = -1,
                                                           .value = v,
                                                           .value_len = (int32_t)strlen(v),
                                                           .timestamp_ms = -1},
                                                .sequence = -1};
                if (rt_producer_send(p, TOPIC, 0, &m, NULL, NULL) != 0)
                    _exit(5);
            }
            if ((abort ? rt_producer_abort(p, -1) : rt_producer_commit(p, -1)) != 0)
                _exit(6);
        }
        _exit(7);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the crashing writer failed (status %d)", status);
}

/* Entries of an index file (8, 12 or 34 bytes each, zero entries are preallocation) that lie
 * at or past the cut: .index by position, .timeindex by offset (bytes 8..11, relative),
 * .txnindex by the marker's offset (lastOffset, bytes 18..25). */
static unsigned entries_past(const char *path, size_t entry, int64_t base, size_t cut_pos,
                             int64_t cut_offset)
{
    size_t len = 0;
    uint8_t *buf = tu_read_file(path, &len);
    unsigned past = 0;
    for (size_t at = 0; at + entry <= len; at += entry) {
        bool zero = true;
        for (size_t i = 0; i < entry; i++)
            zero = zero && buf[at + i] == 0;
        if (zero)
            continue;
        if (entry == 8 && be32_of(buf + at + 4) >= cut_pos)
            past++;
        if (entry == 12 && base + (int32_t)be32_of(buf + at + 8) >= cut_offset)
            past++;
        if (entry == 34 && (int64_t)be64_of(buf + at + 18) >= cut_offset)
            past++;
    }
    free(buf);
    return past;
}

/* Whether each index of dir's newest segment holds an entry at or past its first ABORT marker
 * after `from` (where lose_tail cuts): how much follows that marker depends on how the
 * producer's batches happened to group, so the crashing writer goes on until it does. */
static bool indexes_hold_entries_past(const char *dir, int64_t from)
{
    char name[64];
    size_t end = 0, cut = 0;
    int64_t cut_offset = 0;
    if (newest_aborts(dir, from, name, &end, &cut, &cut_offset) < 2)
        return false;
    int64_t base = strtoll(name, NULL, 10);
    char stem[64];
    snprintf(stem, sizeof(stem), "%.20s", name);
    const char *ext[3] = {"index", "timeindex", "txnindex"};
    const size_t entry[3] = {8, 12, 34};
    bool all = true;
    for (int k = 0; k < 3 && all; k++) {
        char *path = tu_path("%s/" TOPIC "-0/%s.%s", dir, stem, ext[k]);
        all = access(path, F_OK) == 0 && entries_past(path, entry[k], base, cut, cut_offset) > 0;
        free(path);
    }
    return all;
}

enum lost_tail { LOST_TRUNCATED, LOST_ZEROED };

/* True when a line of text is a warning naming want and the log's end. */
static bool warned(const char *text, const char *want)
{
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof(buf), "%.*s", (int)n, line);
        if (strncmp(buf, "warning: ", 9) == 0 && strstr(buf, want) &&
            strstr(buf, "past the log's end"))
            return true;
        line += n + (eol ? 1 : 0);
    }
    return false;
}

/* Cuts dir's newest .log at its first ABORT marker at or after offset `from` (only what the
 * crashed writer never made durable), the way a crash loses a tail; asserts that each index of
 * the segment still holds entries past the cut (the case under test). Returns the log's name
 * (static). */
static const char *lose_tail(const char *dir, int64_t from, enum lost_tail how)
{
    static char name[64];
    size_t end = 0, cut = 0;
    int64_t cut_offset = 0;
    assert_true(newest_aborts(dir, from, name, &end, &cut, &cut_offset) >= 2);
    int64_t base = strtoll(name, NULL, 10);
    char stem[64];
    snprintf(stem, sizeof(stem), "%.20s", name);
    const char *ext[3] = {"index", "timeindex", "txnindex"};
    const size_t entry[3] = {8, 12, 34};
    for (int k = 0; k < 3; k++) {
        char *path = tu_path("%s/" TOPIC "-0/%s.%s", dir, stem, ext[k]);
        if (entries_past(path, entry[k], base, cut, cut_offset) == 0)
            fail_msg("%s holds no entry past the cut at byte %zu (offset %" PRId64 ")", path, cut,
                     cut_offset);
        free(path);
    }
    char *log = file_path(dir, name);
    if (how == LOST_TRUNCATED) {
        tu_truncate(log, cut);
    } else {
        uint8_t *zeros = calloc(1, end - cut);
        int fd = open(log, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, zeros, end - cut, (off_t)cut), (ssize_t)(end - cut));
        close(fd);
        free(zeros);
    }
    free(log);
    return name;
}

/* Verify warns (exit 0) naming the three indexes of the newest segment; open drops their
 * entries past the end; read_committed serves no aborted record; the log goes on at the cut;
 * verify is silent afterwards. */
static void expect_lost_tail_is_no_damage(enum lost_tail how)
{
    char *dir = build();
    int64_t from = end_offset(dir);
    crash_with_aborts_in_newest(dir, from);
    const char *name = lose_tail(dir, from, how);
    char stem[64];
    snprintf(stem, sizeof(stem), "%.20s", name);
    struct tu_verify_log *r = calloc(1, sizeof(*r));
    r->with_warnings = true;
    int rc = rt_verify(dir, tu_on_problem, r);
    if (rc != 0 || r->problems != 0)
        fail_msg("verify reports a crash's lost tail as damage (%s):\n%s", rt_strerror(rc), r->all);
    const char *ext[3] = {".index: offset ", ".timeindex: offset ", ".txnindex: offset "};
    for (int k = 0; k < 3; k++) {
        char want[96];
        snprintf(want, sizeof(want), "%s%s", stem, ext[k]);
        if (!warned(r->all, want))
            fail_msg("verify gave no warning naming %s and an offset:\n%s", want, r->all);
    }
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    rc = rt_open(dir, &o, &e);
    if (rc != 0)
        fail_msg("open: %s (%s)", rt_strerror(rc), rt_error_detail());
    struct rt_stats st;
    assert_int_equal(rt_stats_get(e, &st), 0);
    assert_true(st.opened_unclean);
    assert_int_equal(st.tail_bytes_ignored, 0); /* a lost tail is no torn write */
    int64_t hw = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    int64_t offset = 0, aborted = 0;
    while (offset < hw) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, TOPIC, 0, offset, 1 << 16, RT_READ_COMMITTED, &f), 0);
        const struct rt_fetch_view *view = rt_fetch_get(f);
        struct rt_records it;
        assert_int_equal(rt_records_init(&it, f, offset), 0);
        struct rt_record_view rv;
        while ((rc = rt_records_next(&it, &rv)) == 0)
            aborted += rv.value_len >= 5 && memcmp(rv.value, "abort", 5) == 0;
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(view, offset);
        int64_t lso = view->last_stable_offset;
        rt_fetch_release(f);
        if (next <= offset || next >= lso)
            break;
        offset = next;
    }
    assert_int_equal(aborted, 0);
    struct rt_record rec = {.key_len = -1, .value = "after", .value_len = 5, .timestamp_ms = -1};
    int64_t base = -1;
    assert_int_equal(rt_append(e, TOPIC, 0, &rec, 1, &base), 0);
    assert_int_equal(base, hw); /* the log goes on where the crash cut it */
    assert_int_equal(rt_close(e), 0);
    *r = (struct tu_verify_log){.with_warnings = true};
    rc = rt_verify(dir, tu_on_problem, r);
    if (rc != 0 || r->problems != 0 || r->warnings != 0)
        fail_msg("verify after open still reports (%s):\n%s", rt_strerror(rc), r->all);
    free(r);
    tu_rmdir_free(dir);
}

static void test_lost_tail_truncated_is_no_damage(void **state)
{
    (void)state;
    expect_lost_tail_is_no_damage(LOST_TRUNCATED);
}

static void test_lost_tail_zeroed_is_no_damage(void **state)
{
    (void)state;
    expect_lost_tail_is_no_damage(LOST_ZEROED);
}

/* The same cut after a clean close: the newest segment was trimmed and synced, so its index
 * past the log's end is damage (SC2), reported by verify and rebuilt by open. */
static void test_lost_tail_in_a_clean_directory_is_damage(void **state)
{
    (void)state;
    char *dir = build();
    int64_t from = end_offset(dir);
    crash_with_aborts_in_newest(dir, from);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0); /* recovers, then closes cleanly */
    assert_int_equal(rt_close(e), 0);
    const char *name = lose_tail(dir, from, LOST_TRUNCATED);
    char index[64];
    snprintf(index, sizeof(index), "%.20s.index", name);
    expect_reported_then_repaired(dir, index, true);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_newest_log_clean),
        cmocka_unit_test(test_sealed_txnindex_emptied),
        cmocka_unit_test(test_sealed_txnindex_deleted),
        cmocka_unit_test(test_orphans_removed),
        cmocka_unit_test(test_torn_newest_txnindex_clean),
        cmocka_unit_test(test_damaged_older_snapshot),
        cmocka_unit_test(test_verify_decodes_compressed),
        cmocka_unit_test(test_lost_index_never_cuts_a_sealed_log),
        cmocka_unit_test(test_stale_batches_after_the_last_batch),
        cmocka_unit_test(test_torn_batch_then_stale_batches),
        cmocka_unit_test(test_torn_tail_without_stale_batches),
        cmocka_unit_test(test_stale_tail_in_a_clean_directory_is_damage),
        cmocka_unit_test(test_lost_tail_truncated_is_no_damage),
        cmocka_unit_test(test_lost_tail_zeroed_is_no_damage),
        cmocka_unit_test(test_lost_tail_in_a_clean_directory_is_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
