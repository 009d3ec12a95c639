/*
 * test_txn_reconcile.c — a transaction whose marker a data partition lost (issue 10, defect 9)
 * never pins the LSO for good: rt_open reconciles the partitions' open transactions with the
 * coordinator (coordinator.c, COR1-COR5, COR7, CO10), and an operator can release whatever it
 * cannot decide through rt_txn_abort_partition (COR6).
 *
 * Every case is driven from outside: transactions through the producer API, then the marker is
 * cut off the data partition's newest .log while the directory is closed and the clean-shutdown
 * file is removed (what a torn tail after a crash leaves), then the directory is reopened and
 * read at both isolation levels.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "ringtail.h"

#define MARKER_BATCH_BYTES 78 /* docs/format.md B.6 */

static rt_producer *txn_producer(rt_engine *e, const char *id)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = id;
    po.transaction_timeout_ms = 600000; /* the timer must not end anything during a test */
    po.linger_ms = 1;
    rt_producer *p = NULL;
    assert_int_equal(rt_producer_open(e, &po, &p), 0);
    int rc = rt_producer_init_transactions(p, -1);
    if (rc)
        fprintf(stderr, "init_transactions: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    return p;
}

static void send_values(rt_producer *p, const char *topic, int32_t part, int count)
{
    for (int i = 0; i < count; i++) {
        char v[32];
        int n = snprintf(v, sizeof(v), "%s-%d-%d", topic, part, i);
        struct rt_producer_message m = {
            .record = {.key_len = -1, .value = v, .value_len = n, .timestamp_ms = -1},
            .sequence = -1};
        assert_int_equal(rt_producer_send(p, topic, part, &m, NULL, NULL), 0);
    }
}

/* One transaction of `count` records into each of parts[0..n) of topic, then commit or abort. */
static void run_txn(rt_engine *e, const char *id, const char *topic, const int32_t *parts, int n,
                    int count, bool commit)
{
    rt_producer *p = txn_producer(e, id);
    assert_int_equal(rt_producer_begin(p), 0);
    for (int i = 0; i < n; i++)
        send_values(p, topic, parts[i], count);
    assert_int_equal(commit ? rt_producer_commit(p, -1) : rt_producer_abort(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
}

static int64_t offset_of(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso)
{
    int64_t o = -1;
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, iso, &o), 0);
    return o;
}

/* Records of a partition readable at `iso` (control records never count). */
static int64_t count_records(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso)
{
    int64_t bound = offset_of(e, topic, part, iso), from = 0, n = 0;
    assert_int_equal(rt_list_offsets(e, topic, part, RT_OFFSET_EARLIEST, iso, &from), 0);
    while (from < bound) {
        rt_fetch *fh;
        assert_int_equal(rt_fetch_start(e, topic, part, from, 1 << 20, iso, &fh), 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        rt_records_init(&it, fh, from);
        int rc;
        while ((rc = rt_records_next(&it, &r)) == 0)
            n++;
        assert_int_equal(rc, RT_E_END);
        int64_t next = tu_fetch_next_offset(v, from); /* markers and aborted batches included */
        rt_fetch_release(fh);
        if (next <= from)
            break;
        from = next;
    }
    return n;
}

/* The newest .log of dir/<topic>-<part> (malloc'd path). */
static char *newest_log(const char *dir, const char *topic, uint32_t part)
{
    char *pdir = tu_path("%s/%s-%u", dir, topic, part);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    char best[256] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n == 24 && strcmp(de->d_name + 20, ".log") == 0 && strcmp(de->d_name, best) > 0)
            snprintf(best, sizeof(best), "%s", de->d_name);
    }
    closedir(d);
    assert_true(best[0] != '\0');
    char *path = tu_path("%s/%s", pdir, best);
    free(pdir);
    return path;
}

/* With the directory closed: cuts the last batch — which must be a transaction marker — off the
 * partition's newest .log and removes the clean-shutdown file, as a torn tail after a crash
 * would leave it. */
static void lose_marker(const char *dir, const char *topic, uint32_t part)
{
    char *log = newest_log(dir, topic, part);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(log, &len);
    assert_true(len > MARKER_BATCH_BYTES);
    const uint8_t *last = bytes + len - MARKER_BATCH_BYTES;
    assert_int_equal(be32_of(last + 8), MARKER_BATCH_BYTES - 12); /* length */
    assert_int_equal(last[22] & 0x30, 0x30);                      /* transactional control */
    free(bytes);
    tu_truncate(log, len - MARKER_BATCH_BYTES);
    free(log);
    char *clean = tu_path("%s/.clean_shutdown", dir);
    unlink(clean);
    free(clean);
}

/* With the directory closed: truncates the partition's newest .log at the start of its first
 * control batch (a marker and everything after it lost, as a torn tail leaves it) when first is
 * true, or cuts its last batch when false; removes the clean-shutdown file. */
static void cut_log(const char *dir, const char *topic, uint32_t part, bool first_marker)
{
    char *log = newest_log(dir, topic, part);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(log, &len);
    size_t pos = 0, cut = len, last = 0;
    while (pos + 61 <= len && be32_of(bytes + pos + 8) != 0) {
        if (first_marker && (bytes[pos + 22] & 0x20) && cut == len)
            cut = pos;
        last = pos;
        pos += 12 + be32_of(bytes + pos + 8);
    }
    if (!first_marker)
        cut = last;
    assert_true(cut < len);
    free(bytes);
    tu_truncate(log, cut);
    free(log);
    char *clean = tu_path("%s/.clean_shutdown", dir);
    unlink(clean);
    free(clean);
}

/* The coordinator's whole state is lost: every .log of __transaction_state-0 emptied. */
static void lose_transaction_log(const char *dir)
{
    char *pdir = tu_path("%s/__transaction_state-0", dir);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n > 4 && strcmp(de->d_name + n - 4, ".log") == 0) {
            char *path = tu_path("%s/%s", pdir, de->d_name);
            tu_truncate(path, 0);
            free(path);
        }
    }
    closedir(d);
    free(pdir);
}

/* ---- COR2: the coordinator completed it, the partition lost the marker ---- */

static void test_lost_commit_marker_is_rewritten_at_open(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t parts[] = {0, 1};
    run_txn(f->e, "tx-c", "t", parts, 2, 5, true);
    tu_fixture_close(f);

    lose_marker(f->dir, "t", 1);
    tu_fixture_open(f);
    /* Before the fix: t-1's LSO stayed at the transaction's first offset forever. */
    assert_int_equal(offset_of(f->e, "t", 1, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 1, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 5);
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 5); /* all-or-nothing */
    tu_fixture_close(f);

    /* The marker written at open is durable: a second open finds nothing to do. */
    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 1, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 1, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 5);
    tu_fixture_close(f);
}

static void test_lost_abort_marker_is_rewritten_at_open(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t parts[] = {0, 1};
    run_txn(f->e, "tx-a", "t", parts, 2, 5, false);
    tu_fixture_close(f);

    lose_marker(f->dir, "t", 0);
    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 0);
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_UNCOMMITTED), 5);
    /* Nothing is left for an operator to release. */
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, 0, -1), RT_E_INVALID_TXN_STATE);
    tu_fixture_close(f);

    tu_fixture_open(f); /* the rewritten ABORT and its .txnindex entry survive a reopen */
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    tu_fixture_close(f);
}

/* COR3: the id moved on after the lost marker (a later transaction elsewhere): the outcome of the
 * old one is no longer recorded, and it is aborted rather than left pinning the LSO. */
static void test_lost_marker_of_an_older_epoch_is_aborted(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t p0[] = {0}, p1[] = {1};
    run_txn(f->e, "tx-o", "t", p0, 1, 3, false);
    run_txn(f->e, "tx-o", "t", p1, 1, 3, true);
    tu_fixture_close(f);

    lose_marker(f->dir, "t", 0);
    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 3);
    tu_fixture_close(f);
}

/* COR3 before CO2: a partition lost the ABORT marker of an older transaction (and what followed
 * it), while the transaction log lost the CompleteCommit of the same producer's next one, which
 * open then completes (CO2). Its COMMIT marker must not commit the older, aborted records: open
 * aborts the stale epoch's transaction first. */
static void test_stale_epoch_aborted_before_prepare_completes(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t p0[] = {0}, both[] = {0, 1};
    run_txn(f->e, "tx-s", "t", p0, 1, 3, false);
    run_txn(f->e, "tx-s", "t", both, 2, 3, true);
    tu_fixture_close(f);

    cut_log(f->dir, "t", 0, true);                    /* the ABORT marker and all after it */
    cut_log(f->dir, "__transaction_state", 0, false); /* the second one's CompleteCommit */
    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0); /* aborted stays so */
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_UNCOMMITTED), 3);
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 3);
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    tu_fixture_close(f);
}

/* With the directory closed: cuts the last `k` batches of the partition's newest .log (and the
 * clean-shutdown file), as a power loss that took the tail leaves it. */
static void cut_last_batches(const char *dir, const char *topic, uint32_t part, int k)
{
    char *log = newest_log(dir, topic, part);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(log, &len);
    size_t starts[4096], n = 0, pos = 0;
    while (pos + 61 <= len && be32_of(bytes + pos + 8) != 0 && n < 4096) {
        starts[n++] = pos;
        pos += 12 + be32_of(bytes + pos + 8);
    }
    assert_true((size_t)k <= n);
    free(bytes);
    tu_truncate(log, starts[n - (size_t)k]);
    free(log);
    char *clean = tu_path("%s/.clean_shutdown", dir);
    unlink(clean);
    free(clean);
}

/* COR7: a one-round commit's marker is written lazily (CO9); lost after the id moved on (its
 * next transaction, elsewhere, is durable and newer in the log), it is rewritten from the
 * PrepareCommit that decided it — not aborted as COR3 would, which would undo an acknowledged
 * commit. */
static void test_lazy_marker_lost_after_the_id_moved_on(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t both[] = {0, 1}, p1[] = {1};
    run_txn(f->e, "tx-m", "t", both, 2, 4, true);
    run_txn(f->e, "tx-m", "t", p1, 1, 2, true);
    tu_fixture_close(f);

    lose_marker(f->dir, "t", 0); /* the first transaction's COMMIT in t-0 */
    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 4);
    assert_int_equal(count_records(f->e, "t", 1, RT_READ_COMMITTED), 6);
    tu_fixture_close(f);
    tu_fixture_open(f); /* written durably at open */
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 4);
    tu_fixture_close(f);
}

/* CO10: the id's last record is a one-round PrepareCommit (its CompleteCommit lost) and both
 * markers are lost: the data is in every partition up to the recorded sequence, so open
 * commits it. */
static void test_one_round_prepare_commit_completed_from_the_data(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t both[] = {0, 1};
    run_txn(f->e, "tx-r", "t", both, 2, 3, true);
    tu_fixture_close(f);

    cut_last_batches(f->dir, "t", 0, 1);                   /* its COMMIT marker */
    cut_last_batches(f->dir, "t", 1, 1);                   /* its COMMIT marker */
    cut_last_batches(f->dir, "__transaction_state", 0, 1); /* its CompleteCommit */
    tu_fixture_open(f);
    for (uint32_t part = 0; part < 2; part++) {
        assert_int_equal(offset_of(f->e, "t", part, RT_READ_COMMITTED),
                         offset_of(f->e, "t", part, RT_READ_UNCOMMITTED));
        assert_int_equal(count_records(f->e, "t", part, RT_READ_COMMITTED), 3);
    }
    tu_fixture_close(f);
}

/* CO10: as above, but t-1 lost the transaction's data too (its decision round never completed
 * there, so the commit was never acknowledged and no marker of it exists): open aborts the
 * whole transaction instead, and t-0's records never become readable at read_committed. */
static void test_one_round_prepare_commit_with_missing_data_aborts(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    const int32_t both[] = {0, 1};
    run_txn(f->e, "tx-x", "t", both, 2, 3, true);
    tu_fixture_close(f);

    cut_last_batches(f->dir, "t", 0, 1); /* the marker: the data stays */
    cut_last_batches(f->dir, "t", 1, 2); /* the marker and the data */
    cut_last_batches(f->dir, "__transaction_state", 0, 1);
    tu_fixture_open(f);
    for (uint32_t part = 0; part < 2; part++) {
        assert_int_equal(offset_of(f->e, "t", part, RT_READ_COMMITTED),
                         offset_of(f->e, "t", part, RT_READ_UNCOMMITTED));
        assert_int_equal(count_records(f->e, "t", part, RT_READ_COMMITTED), 0);
    }
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_UNCOMMITTED), 3);
    tu_fixture_close(f);
    tu_fixture_open(f); /* the abort is durable: nothing changes at a second open */
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    tu_fixture_close(f);
}

/* COR2 + COR5 in __consumer_offsets: the offsets a committed transaction sent become stable when
 * the lost COMMIT marker of the group's offsets partition is rewritten at open. */
static void lost_offsets_marker(struct tu_fixture *f, bool also_complete)
{
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "in", 1), 0);
    assert_int_equal(rt_topic_create(f->e, "out", 1), 0);
    rt_producer *p = txn_producer(f->e, "tx-ctp");
    assert_int_equal(rt_producer_begin(p), 0);
    send_values(p, "out", 0, 2);
    const struct rt_offset off = {.topic = "in", .partition = 0, .offset = 42};
    assert_int_equal(rt_producer_send_offsets(p, "g", &off, 1), 0);
    assert_int_equal(rt_producer_commit(p, -1), 0);
    assert_int_equal(rt_producer_close(p), 0);
    tu_fixture_close(f);

    /* The group's offsets partition is the one __consumer_offsets partition holding data. */
    int cut = 0;
    for (uint32_t part = 0; part < 64; part++) {
        char *pdir = tu_path("%s/__consumer_offsets-%u", f->dir, part);
        bool exists = fs_exists_for_test(pdir);
        free(pdir);
        if (!exists)
            break;
        char *log = newest_log(f->dir, "__consumer_offsets", part);
        size_t size = tu_file_size(log);
        free(log);
        if (size > MARKER_BATCH_BYTES) {
            lose_marker(f->dir, "__consumer_offsets", part);
            cut++;
        }
    }
    assert_int_equal(cut, 1);
    if (also_complete)
        cut_last_batches(f->dir, "__transaction_state", 0, 1);
    tu_fixture_open(f);
    int64_t committed = -1;
    /* Before the fix: RT_E_UNSTABLE_OFFSET_COMMIT forever. */
    assert_int_equal(rt_group_fetch_offsets(f->e, "g", "in", 0, true, &committed), 0);
    assert_int_equal(committed, 42);
    assert_int_equal(count_records(f->e, "out", 0, RT_READ_COMMITTED), 2);
    tu_fixture_close(f);
}

static void test_lost_offsets_marker_applies_the_offsets(void **state)
{
    lost_offsets_marker(*state, false);
}

/* CO10 + COR5 in __consumer_offsets: the CompleteCommit is lost too, so open completes the
 * one-round PrepareCommit: out-0 keeps its marker (skipped), the offsets partition gets its
 * COMMIT, and the producer's pending offsets are applied (found by the crash torture: they were
 * left pending when a partition listed before them was skipped). */
static void test_lost_offsets_marker_and_complete_applies_the_offsets(void **state)
{
    lost_offsets_marker(*state, true);
}

/* ---- COR4 + COR6: nothing left to reconcile with; the operator releases it ---- */

struct seen {
    int count;
    char topic[64];
    uint32_t partition;
    int64_t producer_id;
    int16_t epoch;
    int64_t first_offset, lso, hw;
    bool has_id, live;
    char id[64];
};

static int collect(void *ctx, const struct rt_partition_txn *t)
{
    struct seen *s = ctx;
    s->count++;
    snprintf(s->topic, sizeof(s->topic), "%s", t->topic);
    s->partition = t->partition;
    s->producer_id = t->producer_id;
    s->epoch = t->producer_epoch;
    s->first_offset = t->first_offset;
    s->lso = t->last_stable_offset;
    s->hw = t->high_watermark;
    s->has_id = t->transactional_id != NULL;
    snprintf(s->id, sizeof(s->id), "%s", t->transactional_id ? t->transactional_id : "");
    s->live = t->live;
    return 0;
}

static void test_coordinator_state_lost_released_by_operator(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    const int32_t p0[] = {0};
    run_txn(f->e, "tx-l", "t", p0, 1, 4, true);
    tu_fixture_close(f);

    lose_marker(f->dir, "t", 0);
    lose_transaction_log(f->dir);
    tu_fixture_open(f);
    int64_t hw = offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED);
    /* COR4: no coordinator state to decide with: the transaction stays open and is listed. */
    assert_true(offset_of(f->e, "t", 0, RT_READ_COMMITTED) < hw);
    struct seen s = {0};
    assert_int_equal(rt_txn_list_partitions(f->e, collect, &s), 0);
    assert_int_equal(s.count, 1);
    assert_string_equal(s.topic, "t");
    assert_int_equal(s.partition, 0);
    assert_true(s.producer_id >= 0);
    assert_int_equal(s.first_offset, 0);
    assert_int_equal(s.lso, 0);
    assert_int_equal(s.hw, hw);
    assert_false(s.has_id);
    assert_false(s.live);

    /* Bad calls change nothing. */
    assert_int_equal(rt_txn_abort_partition(NULL, "t", 0, s.producer_id, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort_partition(f->e, NULL, 0, s.producer_id, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, -1, -1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id, -2),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_txn_abort_partition(f->e, "nope", 0, s.producer_id, -1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 1, s.producer_id, -1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id + 1, -1),
                     RT_E_INVALID_TXN_STATE);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id, (int16_t)(s.epoch + 1)),
                     RT_E_INVALID_PRODUCER_EPOCH);
    assert_true(strstr(rt_error_detail(), "t-0") != NULL);
    assert_true(offset_of(f->e, "t", 0, RT_READ_COMMITTED) < hw);

    /* The operator's abort releases the LSO; the records are aborted. */
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id, s.epoch), 0);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_UNCOMMITTED), 4);
    struct seen after = {0};
    assert_int_equal(rt_txn_list_partitions(f->e, collect, &after), 0);
    assert_int_equal(after.count, 0);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id, -1),
                     RT_E_INVALID_TXN_STATE);
    tu_fixture_close(f);

    tu_fixture_open(f);
    assert_int_equal(offset_of(f->e, "t", 0, RT_READ_COMMITTED),
                     offset_of(f->e, "t", 0, RT_READ_UNCOMMITTED));
    assert_int_equal(count_records(f->e, "t", 0, RT_READ_COMMITTED), 0);
    tu_fixture_close(f);
}

/* COR1 + COR6: a transaction the coordinator holds open is live — open leaves it alone, and the
 * operator's partition abort ends it through the coordinator in all its partitions. */
static void test_live_transaction_aborted_everywhere(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    rt_producer *p = txn_producer(f->e, "tx-live");
    assert_int_equal(rt_producer_begin(p), 0);
    send_values(p, "t", 0, 2);
    send_values(p, "t", 1, 2);
    assert_int_equal(rt_producer_flush(p, -1), 0);
    struct seen s = {0};
    assert_int_equal(rt_txn_list_partitions(f->e, collect, &s), 0);
    assert_int_equal(s.count, 2);
    assert_true(s.has_id);
    assert_string_equal(s.id, "tx-live");
    assert_true(s.live);
    assert_int_equal(rt_txn_abort_partition(f->e, "t", 0, s.producer_id, -1), 0);
    for (uint32_t part = 0; part < 2; part++) {
        assert_int_equal(offset_of(f->e, "t", part, RT_READ_COMMITTED),
                         offset_of(f->e, "t", part, RT_READ_UNCOMMITTED));
        assert_int_equal(count_records(f->e, "t", part, RT_READ_COMMITTED), 0);
    }
    /* The producer was fenced: its commit cannot make half the transaction visible. */
    assert_int_not_equal(rt_producer_commit(p, -1), 0);
    rt_producer_close(p);
    for (uint32_t part = 0; part < 2; part++)
        assert_int_equal(count_records(f->e, "t", part, RT_READ_COMMITTED), 0);
    tu_fixture_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lost_commit_marker_is_rewritten_at_open,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_abort_marker_is_rewritten_at_open,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_marker_of_an_older_epoch_is_aborted,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_offsets_marker_and_complete_applies_the_offsets,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lazy_marker_lost_after_the_id_moved_on,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_one_round_prepare_commit_completed_from_the_data,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_one_round_prepare_commit_with_missing_data_aborts,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_stale_epoch_aborted_before_prepare_completes,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lost_offsets_marker_applies_the_offsets,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coordinator_state_lost_released_by_operator,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_live_transaction_aborted_everywhere, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
