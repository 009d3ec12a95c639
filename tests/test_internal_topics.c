/*
 * test_internal_topics.c — the engine's directory, topics and producer ids, tried from outside
 * (issue 10, defects 5, 7 and 11):
 *   - names beginning with "__" are reserved: rt_topic_create refuses them, and no client path
 *     (rt_append, rt_append_batch, rt_producer_send) may write to the internal topics, so a
 *     client can never make a directory that no longer opens;
 *   - a bad record met in an internal topic at open is RT_E_CORRUPT naming the segment file and
 *     the byte offset; an internal topic of the wrong shape in the catalogue names ringtail.meta;
 *   - a producer id is never handed out twice, even when producers.meta is deleted: open derives
 *     the next id from the partitions (tables, logs) and the transaction log, and rt_verify
 *     reports the missing file;
 *   - the internal topics do not count against topics_max, and the real cause of a failure to
 *     create the coordinator or the group manager passes through (never a blanket -EIO).
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "batch.h"
#include "engine.h"
#include "group.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "meta.h"
#include "ringtail.h"
#include "ringtail_test.h"
#include "txn_log.h"

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.shard_count = 1;
    return rc;
}

/* ---- helpers ---- */

static void send_one(rt_producer *p, const char *topic, int32_t partition, const char *value)
{
    struct rt_producer_message m = {0};
    m.record.key_len = -1;
    m.record.value = value;
    m.record.value_len = (int32_t)strlen(value);
    m.record.timestamp_ms = -1;
    m.sequence = -1;
    int rc = rt_producer_send(p, topic, partition, &m, NULL, NULL);
    if (rc)
        fail_msg("send to %s: %s: %s", topic, rt_strerror(rc), rt_error_detail());
    assert_int_equal(rt_producer_flush(p, -1), 0);
}

static rt_producer *anonymous_producer(rt_engine *e)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    return p;
}

static rt_producer *txn_producer(rt_engine *e, const char *id)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = id;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    int rc = rt_producer_init_transactions(p, -1);
    if (rc)
        fail_msg("init_transactions: %s: %s", rt_strerror(rc), rt_error_detail());
    return p;
}

/* Every record of topic-partition read_uncommitted: values into out (joined by ','), and each
 * record's producer id into pids (up to pids_max). Returns the record count. */
static int read_all(rt_engine *e, const char *topic, uint32_t partition, char *out, size_t cap,
                    int64_t *pids, int pids_max)
{
    int count = 0;
    int64_t next = 0, end = 0;
    out[0] = '\0';
    assert_int_equal(
        rt_list_offsets(e, topic, partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    while (next < end) {
        rt_fetch *f = NULL;
        assert_int_equal(
            rt_fetch_start(e, topic, partition, next, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, f, next);
        int rc;
        int64_t before = next;
        while ((rc = rt_records_next(&it, &r)) == 0) {
            if (count < pids_max)
                pids[count] = r.producer_id;
            count++;
            size_t n = strlen(out);
            snprintf(out + n, cap - n, "%s%.*s", n ? "," : "", (int)r.value_len,
                     (const char *)r.value);
            next = r.offset + 1;
        }
        assert_int_equal(rc, RT_E_END);
        rt_fetch_release(f);
        if (next == before)
            break;
    }
    return count;
}

/* An encoded one-record batch without a producer id, as a client would hand rt_append_batch. */
static size_t plain_batch(uint8_t *buf, size_t cap, const char *value)
{
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, cap, 0, -1, -1, -1), 0);
    struct rt_record r = {.key_len = -1, .value = value, .value_len = (int32_t)strlen(value)};
    r.timestamp_ms = 1000;
    assert_int_equal(batch_builder_add(&b, &r), 0);
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    return len;
}

/* ---- defect 5: internal topics are the engine's ---- */

static void test_reserved_names_refused_at_create(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    const char *reserved[] = {GROUP_OFFSETS_TOPIC, TXN_LOG_TOPIC, "__mine", "__"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        assert_int_equal(rt_topic_create(f->e, reserved[i], 1), RT_E_INTERNAL_TOPIC);
        assert_non_null(strstr(rt_error_detail(), reserved[i]));
        assert_non_null(strstr(rt_error_detail(), "reserved"));
    }
    assert_int_equal(rt_topic_create(f->e, "_one_underscore", 1), 0);
    uint32_t n = 0;
    assert_int_equal(rt_topic_describe(f->e, GROUP_OFFSETS_TOPIC, &n),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    tu_fixture_close(f);
    /* Nothing the calls did keeps the directory from opening, and the engine still creates
     * its own topics on first use. */
    tu_fixture_open(f);
    struct rt_offset off = {.topic = "_one_underscore", .partition = 0, .offset = 1};
    assert_int_equal(rt_group_commit_offsets(f->e, "g", &off, 1), 0);
    rt_producer *p = txn_producer(f->e, "tx");
    rt_producer_close(p);
    tu_fixture_close(f);
    tu_fixture_open(f);
    int64_t got = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "_one_underscore", 0, true, &got), 0);
    assert_int_equal(got, 1);
    tu_fixture_close(f);
    tu_expect_verify_clean(f->dir, "");
}

static void test_client_writes_to_internal_topics_refused(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    /* Make both internal topics exist, as ordinary use does. */
    struct rt_offset off = {.topic = "t", .partition = 0, .offset = 7};
    assert_int_equal(rt_group_commit_offsets(f->e, "g", &off, 1), 0);
    rt_producer *tp = txn_producer(f->e, "tx");
    rt_producer_close(tp);
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(f->e, TXN_LOG_TOPIC, &parts), 0);

    const char *internal[] = {TXN_LOG_TOPIC, GROUP_OFFSETS_TOPIC};
    rt_producer *p = anonymous_producer(f->e);
    for (int i = 0; i < 2; i++) {
        struct rt_record r = {.key_len = -1, .value = "oops", .value_len = 4, .timestamp_ms = -1};
        assert_int_equal(rt_append(f->e, internal[i], 0, &r, 1, NULL), RT_E_INTERNAL_TOPIC);
        assert_non_null(strstr(rt_error_detail(), internal[i]));
        uint8_t buf[256];
        size_t len = plain_batch(buf, sizeof buf, "oops");
        assert_int_equal(rt_append_batch(f->e, internal[i], 0, buf, len, NULL),
                         RT_E_INTERNAL_TOPIC);
        struct rt_producer_message m = {0};
        m.record = r;
        m.sequence = -1;
        assert_int_equal(rt_producer_send(p, internal[i], 0, &m, NULL, NULL), RT_E_INTERNAL_TOPIC);
        assert_int_equal(rt_producer_send(p, internal[i], -1, &m, NULL, NULL), RT_E_INTERNAL_TOPIC);
    }
    /* A reserved name that is not a topic is refused the same way, not "unknown". */
    struct rt_record r = {.key_len = -1, .value = "x", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(f->e, "__nothing", 0, &r, 1, NULL), RT_E_INTERNAL_TOPIC);
    /* The producer is not poisoned: it still writes to user topics. */
    send_one(p, "t", 0, "fine");
    assert_int_equal(rt_producer_close(p), 0);
    tu_fixture_close(f);

    tu_fixture_open(f);
    int64_t got = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "t", 0, true, &got), 0);
    assert_int_equal(got, 7);
    char values[256];
    assert_int_equal(read_all(f->e, "t", 0, values, sizeof values, NULL, 0), 1);
    assert_string_equal(values, "fine");
    tu_fixture_close(f);
    tu_expect_verify_clean(f->dir, "");
}

/* A record in __transaction_state that is not a transaction-log record (what an older version
 * let `ringtail produce DIR __transaction_state` write, or a bug) is reported at open as
 * RT_E_CORRUPT naming the segment file and the byte offset of its batch. */
static void test_bad_txn_log_record_names_file_and_offset(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    rt_producer *tp = txn_producer(f->e, "tx");
    rt_producer_close(tp);
    struct partition *log = log_partition(engine_log(f->e), TXN_LOG_TOPIC, 0);
    assert_non_null(log);
    int64_t end = 0;
    assert_int_equal(
        rt_list_offsets(f->e, TXN_LOG_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    assert_true(end > 0);
    uint8_t buf[256];
    size_t len = plain_batch(buf, sizeof buf, "oops"); /* null key */
    assert_int_equal(log_append_coordinator(engine_log(f->e), log, buf, len, NULL), 0);
    tu_fixture_close(f);

    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_CORRUPT);
    const char *d = rt_error_detail();
    char *file = tu_path("%s/%s-0/%020d.log: offset ", f->dir, TXN_LOG_TOPIC, 0);
    if (!strstr(d, file))
        fail_msg("detail does not name the segment file and a byte offset: %s", d);
    assert_non_null(strstr(d, "null key"));
    char at[64];
    snprintf(at, sizeof at, "log offset %" PRId64, end);
    assert_non_null(strstr(d, at));
    /* verify reports the same file and byte offset. */
    char first[600];
    snprintf(first, sizeof first, "%s", d);
    *strstr(first, ": offset ") = '\0';
    const char *pos = strstr(d, ": offset ") + strlen(": offset ");
    char file_at[700];
    snprintf(file_at, sizeof file_at, "%s: offset %.*s", first, (int)strcspn(pos, ":"), pos);
    struct tu_verify_log l = {0};
    assert_int_equal(rt_verify(f->dir, tu_on_problem, &l), RT_E_CORRUPT);
    if (!strstr(l.all, file_at))
        fail_msg("verify does not report %s:\n%s", file_at, l.all);
    free(file);
}

/* The same for __consumer_offsets: open names the file and offset, and verify agrees. */
static void test_bad_group_record_open_and_verify_agree(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    struct rt_offset off = {.topic = "t", .partition = 0, .offset = 1};
    assert_int_equal(rt_group_commit_offsets(f->e, "g", &off, 1), 0);
    tu_fixture_close(f);
    tu_expect_verify_clean(f->dir, "");
    tu_fixture_open(f);
    struct partition *gp = log_partition(engine_log(f->e), GROUP_OFFSETS_TOPIC, 2);
    assert_non_null(gp);
    uint8_t buf[256];
    size_t len = plain_batch(buf, sizeof buf, "oops"); /* null key */
    assert_int_equal(log_append_coordinator(engine_log(f->e), gp, buf, len, NULL), 0);
    tu_fixture_close(f);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_CORRUPT);
    char *file = tu_path("%s/%s-2/%020d.log: offset 0", f->dir, GROUP_OFFSETS_TOPIC, 0);
    if (!strstr(rt_error_detail(), file))
        fail_msg("open: %s", rt_error_detail());
    struct tu_verify_log l = {0};
    assert_int_equal(rt_verify(f->dir, tu_on_problem, &l), RT_E_CORRUPT);
    if (!strstr(l.all, file))
        fail_msg("verify does not report %s:\n%s", file, l.all);
    free(file);
}

/* A catalogue whose __consumer_offsets has a partition count the engine never writes (an older
 * version let rt_topic_create("__consumer_offsets", 1) through) names ringtail.meta. */
static void test_internal_topic_of_wrong_shape_names_catalogue(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    tu_fixture_close(f);
    struct meta_catalogue cat;
    assert_int_equal(meta_load(f->dir, &cat), 0);
    assert_int_equal(meta_add_topic(&cat, GROUP_OFFSETS_TOPIC, 1), 0);
    assert_int_equal(meta_store(NULL, f->dir, &cat), 0);
    meta_catalogue_free(&cat);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(f->dir, &f->o, &e), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), "ringtail.meta"));
    assert_non_null(strstr(rt_error_detail(), GROUP_OFFSETS_TOPIC));
}

/* ---- defect 7: producer ids are never reused ---- */

static void test_deleted_producers_meta_never_reuses_an_id(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    rt_producer *p = anonymous_producer(f->e);
    send_one(p, "t", 0, "first");
    assert_int_equal(rt_producer_close(p), 0);
    tu_fixture_close(f);

    char *meta = tu_path("%s/producers.meta", f->dir);
    assert_int_equal(unlink(meta), 0);
    struct tu_verify_log l = {0};
    assert_int_equal(rt_verify(f->dir, tu_on_problem, &l), RT_E_CORRUPT);
    if (!strstr(l.all, meta) || !strstr(l.all, "missing"))
        fail_msg("verify does not report the missing %s:\n%s", meta, l.all);

    tu_fixture_open(f);
    p = anonymous_producer(f->e);
    send_one(p, "t", 0, "second");
    assert_int_equal(rt_producer_close(p), 0);
    char values[256];
    int64_t pids[2];
    assert_int_equal(read_all(f->e, "t", 0, values, sizeof values, pids, 2), 2);
    assert_string_equal(values, "first,second");
    assert_true(pids[0] >= 0 && pids[1] >= 0);
    assert_true(pids[1] != pids[0]);
    tu_fixture_close(f);
    /* Open rebuilt the file: nothing left to report. */
    assert_true(fs_exists_for_test(meta));
    tu_expect_verify_clean(f->dir, "");
    free(meta);
}

/* The producer's state is gone from the partition's table (expired) and the file is deleted:
 * only the log still shows the id, and it is still not handed out again. */
static void test_deleted_producers_meta_expired_producer(void **state)
{
    struct tu_fixture *f = *state;
    f->o.producer_id_expiration_ms = 1;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    rt_producer *p = anonymous_producer(f->e);
    send_one(p, "t", 0, "first");
    assert_int_equal(rt_producer_close(p), 0);
    usleep(20 * 1000);
    assert_int_equal(log_enforce_retention(engine_log(f->e)), 0);
    assert_int_equal(log_snapshot_producers(engine_log(f->e)), 0);
    tu_fixture_close(f);
    char *meta = tu_path("%s/producers.meta", f->dir);
    assert_int_equal(unlink(meta), 0);
    free(meta);

    tu_fixture_open(f);
    p = anonymous_producer(f->e);
    send_one(p, "t", 0, "second");
    assert_int_equal(rt_producer_close(p), 0);
    char values[256];
    int64_t pids[2];
    assert_int_equal(read_all(f->e, "t", 0, values, sizeof values, pids, 2), 2);
    assert_string_equal(values, "first,second");
    assert_true(pids[1] > pids[0]);
    tu_fixture_close(f);
}

static int txn_pid(void *ctx, const struct rt_txn_info *t)
{
    *(int64_t *)ctx = t->producer_id;
    return 0;
}

/* A transactional id that never wrote to a partition holds its producer id only in the
 * transaction log: that id is not handed out again either. */
static void test_deleted_producers_meta_txn_log_id(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    rt_producer *tp = txn_producer(f->e, "tx");
    int64_t txn_id = -1;
    assert_int_equal(rt_txn_list(f->e, txn_pid, &txn_id), 0);
    assert_true(txn_id >= 0);
    rt_producer_close(tp);
    tu_fixture_close(f);
    char *meta = tu_path("%s/producers.meta", f->dir);
    assert_int_equal(unlink(meta), 0);
    free(meta);

    tu_fixture_open(f);
    rt_producer *p = anonymous_producer(f->e);
    send_one(p, "t", 0, "x");
    assert_int_equal(rt_producer_close(p), 0);
    char values[64];
    int64_t pid = -1;
    assert_int_equal(read_all(f->e, "t", 0, values, sizeof values, &pid, 1), 1);
    assert_true(pid > txn_id);
    tu_fixture_close(f);
}

/* ---- defect 11: internal topics outside topics_max; real errors pass through ---- */

static void test_internal_topics_do_not_count_against_topics_max(void **state)
{
    struct tu_fixture *f = *state;
    f->o.topics_max = 1;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "a", 1), 0);
    assert_int_equal(rt_topic_create(f->e, "b", 1), RT_E_TOPICS_FULL);
    struct rt_offset off = {.topic = "a", .partition = 0, .offset = 3};
    int rc = rt_group_commit_offsets(f->e, "g", &off, 1);
    if (rc)
        fail_msg("group commit at topics_max: %s: %s", rt_strerror(rc), rt_error_detail());
    rt_producer *p = txn_producer(f->e, "tx");
    assert_int_equal(rt_producer_begin(p), 0);
    struct rt_producer_message m = {0};
    m.record = (struct rt_record){.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1};
    m.sequence = -1;
    assert_int_equal(rt_producer_send(p, "a", 0, &m, NULL, NULL), 0);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    rt_producer_close(p);
    /* Still only one user topic allowed. */
    assert_int_equal(rt_topic_create(f->e, "b", 1), RT_E_TOPICS_FULL);
    tu_fixture_close(f);
    tu_fixture_open(f); /* 1 user topic + 2 internal ones within topics_max 1 */
    int64_t got = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "a", 0, true, &got), 0);
    assert_int_equal(got, 3);
    assert_int_equal(rt_topic_create(f->e, "b", 1), RT_E_TOPICS_FULL);
    tu_fixture_close(f);
}

/* ENOSPC on every write: the group commit and init_transactions fail with the real cause, not
 * -EIO, and the detail says what failed. */
static void test_enospc_passes_through(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "a", 1), 0);
    tu_fixture_close(f);

    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.rules[0] = (struct io_fault_rule){
        .mode = IO_FAULT_FOREVER, .op = IO_OP_WRITE, .nth = 1, .error = ENOSPC};
    plan.rule_count = 1;
    struct rt_options o = f->o;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    struct rt_offset off = {.topic = "a", .partition = 0, .offset = 3};
    int rc = rt_group_commit_offsets(e, "g", &off, 1);
    assert_int_not_equal(rc, 0);
    if (rc == -EIO || (rc != -ENOSPC && !strstr(rt_error_detail(), strerror(ENOSPC))))
        fail_msg("group commit under ENOSPC: %d %s: %s", rc, rt_strerror(rc), rt_error_detail());

    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    rc = rt_producer_init_transactions(p, -1);
    assert_int_not_equal(rc, 0);
    if (rc == -EIO || (rc != -ENOSPC && !strstr(rt_error_detail(), strerror(ENOSPC))))
        fail_msg("init_transactions under ENOSPC: %d %s: %s", rc, rt_strerror(rc),
                 rt_error_detail());
    rt_producer_close(p);
    rt_close(e);
    io_fault_plan_release(&plan);
    assert_true(plan.faults_injected > 0);
    /* The directory recovers on a healthy disk. */
    tu_fixture_open(f);
    assert_int_equal(rt_group_commit_offsets(f->e, "g", &off, 1), 0);
    tu_fixture_close(f);
}

/* The file system refuses to create the internal topics' files (here: a file-size limit below
 * their preallocation, EFBIG): the group commit and init_transactions return that cause, not a
 * blanket -EIO, and the directory is fine afterwards. */
static void test_internal_topic_create_failure_passes_through(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "a", 1), 0);
    struct rlimit saved;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 4096; /* below any segment's preallocation */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct rt_offset off = {.topic = "a", .partition = 0, .offset = 3};
    int rc_group = rt_group_commit_offsets(f->e, "g", &off, 1);
    char detail_group[512];
    snprintf(detail_group, sizeof detail_group, "%s", rt_error_detail());
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(f->e, &po, &p), 0);
    int rc_txn = rt_producer_init_transactions(p, -1);
    char detail_txn[512];
    snprintf(detail_txn, sizeof detail_txn, "%s", rt_error_detail());
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old);
    rt_producer_close(p);
    if (rc_group != -EFBIG)
        fail_msg("group commit: %d %s: %s", rc_group, rt_strerror(rc_group), detail_group);
    assert_non_null(strstr(detail_group, GROUP_OFFSETS_TOPIC));
    if (rc_txn != -EFBIG)
        fail_msg("init_transactions: %d %s: %s", rc_txn, rt_strerror(rc_txn), detail_txn);
    assert_non_null(strstr(detail_txn, TXN_LOG_TOPIC));
    /* Without the limit both work, in this engine and after a reopen. */
    assert_int_equal(rt_group_commit_offsets(f->e, "g", &off, 1), 0);
    p = txn_producer(f->e, "tx");
    rt_producer_close(p);
    tu_fixture_close(f);
    tu_fixture_open(f);
    int64_t got = -1;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "a", 0, true, &got), 0);
    assert_int_equal(got, 3);
    tu_fixture_close(f);
}

/* The topic table's internal slots: the coordinator cannot be created once topics_max user
 * topics exist — unless internal topics have slots of their own (init_transactions at the
 * limit, then reopen). */
static void test_init_transactions_at_topics_max(void **state)
{
    struct tu_fixture *f = *state;
    f->o.topics_max = 2;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "a", 1), 0);
    assert_int_equal(rt_topic_create(f->e, "b", 1), 0);
    rt_producer *p = txn_producer(f->e, "tx");
    rt_producer_close(p);
    tu_fixture_close(f);
    tu_fixture_open(f);
    p = txn_producer(f->e, "tx");
    rt_producer_close(p);
    tu_fixture_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserved_names_refused_at_create, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_client_writes_to_internal_topics_refused, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_txn_log_record_names_file_and_offset, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_bad_group_record_open_and_verify_agree, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_internal_topic_of_wrong_shape_names_catalogue, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_producers_meta_never_reuses_an_id, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_producers_meta_expired_producer, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_producers_meta_txn_log_id, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_internal_topics_do_not_count_against_topics_max, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_enospc_passes_through, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_internal_topic_create_failure_passes_through, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_init_transactions_at_topics_max, setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
