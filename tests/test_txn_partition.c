/*
 * test_txn_partition.c — the partition side of transactions: transactional batches and
 * COMMIT/ABORT markers written through the coordinator's marker API (log_write_markers), the
 * last stable offset (an open transaction pins it, its marker releases it), the .txnindex and the
 * aborted list a read_committed fetch returns, fencing of stale markers, markers durable whatever
 * the sync mode, and recovery rebuilding the LSO and the .txnindex exactly as they were.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "engine.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "ringtail_test.h"

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = 32 * 1024;
    f->o.batch_size_max_bytes = 8 * 1024;
    return rc;
}

/* Appends a (transactional unless plain) batch of n records for producer pid; returns its base
 * offset. */
static int64_t txn_append(rt_engine *e, uint32_t part, int64_t pid, int16_t epoch, int32_t seq,
                          int n, bool transactional)
{
    uint8_t buf[4096];
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof(buf),
                                        transactional ? BATCH_ATTR_TRANSACTIONAL : 0, pid, epoch,
                                        seq),
                     0);
    for (int i = 0; i < n; i++) {
        char v[48];
        snprintf(v, sizeof(v), "p%" PRId64 "-s%d", pid, seq + i);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = 1000};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    int64_t base = -1;
    /* Raw transactional batches with no coordinator behind them: the partition's rules alone. */
    assert_int_equal(rt_txn_verify_set(e, false), 0);
    int rc = rt_append_batch(e, "t", part, buf, len, &base);
    if (rc)
        fprintf(stderr, "append: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    return base;
}

static int marker(rt_engine *e, uint32_t part, int64_t pid, int16_t epoch, int type,
                  int32_t coordinator_epoch, int64_t *offset)
{
    struct marker_spec m = {.topic = "t",
                            .partition = part,
                            .producer_id = pid,
                            .producer_epoch = epoch,
                            .coordinator_epoch = coordinator_epoch,
                            .type = type};
    int rc = log_write_markers(engine_log(e), &m, 1);
    if (offset)
        *offset = m.offset;
    return rc;
}

static void watermarks(rt_engine *e, uint32_t part, int64_t *hw, int64_t *lso)
{
    assert_int_equal(rt_list_offsets(e, "t", part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, hw), 0);
    assert_int_equal(rt_list_offsets(e, "t", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, lso), 0);
}

/* The aborted list a read_committed fetch from `from` returns (count; entries into out). */
static size_t aborted_list(rt_engine *e, uint32_t part, int64_t from, struct rt_aborted_txn *out,
                           size_t max)
{
    rt_fetch *fh = NULL;
    assert_int_equal(rt_fetch_start(e, "t", part, from, 1 << 20, RT_READ_COMMITTED, &fh), 0);
    const struct rt_fetch_view *v = rt_fetch_get(fh);
    size_t n = v->aborted_count < max ? v->aborted_count : max;
    if (n > 0)
        memcpy(out, v->aborted, n * sizeof(*out));
    for (size_t i = 1; i < v->aborted_count; i++)
        assert_true(v->aborted[i - 1].first_offset <= v->aborted[i].first_offset);
    size_t total = v->aborted_count;
    rt_fetch_release(fh);
    return total;
}

static void test_lso_pinned_and_released(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    int64_t hw, lso;
    txn_append(f->e, 0, 100, 0, 0, 2, false); /* offsets 0-1, idempotent, not transactional */
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 2);
    assert_int_equal(lso, 2);
    assert_int_equal(txn_append(f->e, 0, 1, 0, 0, 3, true), 2); /* txn A opens at 2 */
    assert_int_equal(txn_append(f->e, 0, 2, 0, 0, 2, true), 5); /* txn B opens at 5 */
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 7);
    assert_int_equal(lso, 2); /* pinned by A */
    /* read_committed reads stop before the open transaction's first batch. */
    rt_fetch *fh;
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_COMMITTED, &fh), 0);
    assert_int_equal(rt_fetch_get(fh)->last_stable_offset, 2);
    size_t committed_bytes = rt_fetch_get(fh)->size_bytes;
    rt_fetch_release(fh);
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &fh), 0);
    assert_true(rt_fetch_get(fh)->size_bytes > committed_bytes);
    rt_fetch_release(fh);
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 3, 1 << 20, RT_READ_COMMITTED, &fh),
                     RT_E_OFFSET_OUT_OF_RANGE);
    /* B commits first: A still pins the LSO. */
    int64_t m_off;
    assert_int_equal(marker(f->e, 0, 2, 0, CONTROL_COMMIT, 0, &m_off), 0);
    assert_int_equal(m_off, 7);
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 8);
    assert_int_equal(lso, 2);
    /* A aborts: nothing is open, the LSO reaches the high watermark. */
    assert_int_equal(marker(f->e, 0, 1, 0, CONTROL_ABORT, 0, &m_off), 0);
    assert_int_equal(m_off, 8);
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 9);
    assert_int_equal(lso, 9);
    struct rt_aborted_txn ab[4];
    assert_int_equal(aborted_list(f->e, 0, 0, ab, 4), 1);
    assert_int_equal(ab[0].producer_id, 1);
    assert_int_equal(ab[0].first_offset, 2);
    /* A fetch that starts after the abort's marker has no aborted list. */
    txn_append(f->e, 0, 100, 0, 2, 1, false);
    assert_int_equal(aborted_list(f->e, 0, 9, ab, 4), 0);
    /* The other partition never saw these producers. */
    watermarks(f->e, 1, &hw, &lso);
    assert_int_equal(hw, 0);
    assert_int_equal(lso, 0);
}

static void test_empty_transaction_and_markers_durable(void **state)
{
    struct tu_fixture *f = *state;
    f->o.sync_mode = RT_SYNC_NONE;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    struct rt_stats before, after;
    rt_stats_get(f->e, &before);
    int64_t off;
    /* A marker without data: an empty transaction (or one whose data went elsewhere). */
    assert_int_equal(marker(f->e, 0, 5, 0, CONTROL_COMMIT, 0, &off), 0);
    assert_int_equal(off, 0);
    assert_int_equal(marker(f->e, 0, 6, 0, CONTROL_ABORT, 0, &off), 0);
    rt_stats_get(f->e, &after);
    /* sync=none, yet each marker round fdatasynced its file. */
    assert_true(after.fdatasyncs >= before.fdatasyncs + 2);
    int64_t hw, lso;
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 2);
    assert_int_equal(lso, 2);
    struct rt_aborted_txn ab[2];
    assert_int_equal(aborted_list(f->e, 0, 0, ab, 2), 1);
    assert_int_equal(ab[0].first_offset, 1); /* an empty abort spans just its marker */
    /* Control records are never served. */
    rt_fetch *fh;
    assert_int_equal(rt_fetch_start(f->e, "t", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &fh), 0);
    struct rt_records it;
    struct rt_record_view r;
    rt_records_init(&it, fh, 0);
    assert_int_equal(rt_records_next(&it, &r), RT_E_END);
    rt_fetch_release(fh);
}

static void test_stale_markers_rejected(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    txn_append(f->e, 0, 9, 3, 0, 1, true);
    int64_t off;
    assert_int_equal(marker(f->e, 0, 9, 2, CONTROL_COMMIT, 0, &off), RT_E_INVALID_PRODUCER_EPOCH);
    assert_non_null(strstr(rt_error_detail(), "epoch"));
    assert_int_equal(marker(f->e, 0, 9, 3, CONTROL_COMMIT, 4, &off), 0);
    txn_append(f->e, 0, 9, 4, 0, 1, true);
    assert_int_equal(marker(f->e, 0, 9, 4, CONTROL_ABORT, 3, &off), RT_E_PRODUCER_FENCED);
    assert_non_null(strstr(rt_error_detail(), "coordinator"));
    int64_t hw, lso;
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 3);
    assert_int_equal(lso, 2); /* the epoch-4 transaction is still open */
    assert_int_equal(marker(f->e, 0, 9, 4, CONTROL_ABORT, 4, &off), 0);
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(lso, hw);
    /* Clients cannot write control batches. */
    uint8_t cb[CONTROL_BATCH_BYTES];
    control_batch_build(cb, 9, 4, CONTROL_COMMIT, 4, 1);
    assert_int_equal(rt_append_batch(f->e, "t", 0, cb, sizeof(cb), NULL), RT_E_INVALID_ARGUMENT);
    /* Unknown partition and bad type in a marker spec. */
    struct marker_spec bad[2] = {
        {.topic = "t", .partition = 5, .producer_id = 9, .producer_epoch = 4, .type = 1},
        {.topic = "t", .partition = 0, .producer_id = 9, .producer_epoch = 4, .type = 7}};
    assert_int_not_equal(log_write_markers(engine_log(f->e), bad, 2), 0);
    assert_int_equal(bad[0].result, RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(bad[1].result, RT_E_INVALID_ARGUMENT);
}

/* Markers into several partitions over both shards in one call. */
static void test_markers_across_shards(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 4), 0);
    for (uint32_t p = 0; p < 4; p++)
        txn_append(f->e, p, 42, 0, 0, 2, true);
    struct marker_spec ms[4];
    for (uint32_t p = 0; p < 4; p++)
        ms[p] = (struct marker_spec){.topic = "t",
                                     .partition = p,
                                     .producer_id = 42,
                                     .producer_epoch = 0,
                                     .coordinator_epoch = 1,
                                     .type = CONTROL_COMMIT};
    assert_int_equal(log_write_markers(engine_log(f->e), ms, 4), 0);
    for (uint32_t p = 0; p < 4; p++) {
        assert_int_equal(ms[p].result, 0);
        assert_int_equal(ms[p].offset, 2);
        int64_t hw, lso;
        watermarks(f->e, p, &hw, &lso);
        assert_int_equal(hw, 3);
        assert_int_equal(lso, 3);
    }
}

static uint8_t *read_txnindex(const char *dir, size_t *len)
{
    char *path = tu_path("%s/t-0/%020d.txnindex", dir, 0);
    uint8_t *b = tu_read_file(path, len);
    free(path);
    return b;
}

/* Recovery (crash: no clean-shutdown marker, snapshot of the last close removed) rebuilds the
 * LSO of a still-open transaction and the .txnindex byte for byte. */
static void test_recovery_rebuilds_lso_and_txnindex(void **state)
{
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    int64_t off;
    txn_append(f->e, 0, 1, 0, 0, 2, true);                              /* 0-1 */
    txn_append(f->e, 0, 2, 0, 0, 2, true);                              /* 2-3 */
    assert_int_equal(marker(f->e, 0, 1, 0, CONTROL_ABORT, 0, &off), 0); /* 4: LSO after = 2 */
    txn_append(f->e, 0, 3, 0, 0, 1, true);                              /* 5 */
    assert_int_equal(marker(f->e, 0, 2, 0, CONTROL_ABORT, 0, &off), 0); /* 6: LSO after = 5 */
    txn_append(f->e, 0, 1, 0, 2, 1, true); /* 7: a new txn of producer 1, left open */
    assert_int_equal(marker(f->e, 0, 3, 0, CONTROL_COMMIT, 0, &off), 0); /* 8 */
    int64_t hw, lso;
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 9);
    assert_int_equal(lso, 7);
    struct rt_aborted_txn ab[4];
    assert_int_equal(aborted_list(f->e, 0, 0, ab, 4), 2);
    tu_fixture_close(f);
    size_t len_before = 0;
    uint8_t *before = read_txnindex(f->dir, &len_before);
    assert_int_equal(len_before, 2 * 34);
    /* Crash: no marker, no close-time snapshot, and a torn txnindex tail. */
    char *marker_path = tu_path("%s/.clean_shutdown", f->dir);
    unlink(marker_path);
    assert_int_equal(tu_system("rm -f '%s'/t-0/*.snapshot", f->dir), 0);
    char *txn = tu_path("%s/t-0/%020d.txnindex", f->dir, 0);
    tu_truncate(txn, 34 + 10);
    tu_fixture_open(f);
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(hw, 9);
    assert_int_equal(lso, 7); /* producer 1's second transaction is still open */
    tu_fixture_close(f);
    size_t len_after = 0;
    uint8_t *after = read_txnindex(f->dir, &len_after);
    assert_int_equal(len_after, len_before);
    assert_memory_equal(after, before, len_before);
    /* Commit it after the restart: the LSO is released. */
    tu_fixture_open(f);
    assert_int_equal(marker(f->e, 0, 1, 0, CONTROL_COMMIT, 0, &off), 0);
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(lso, hw);
    free(before);
    free(after);
    free(marker_path);
    free(txn);
}

/* Many aborted transactions spread over rolled segments: the aborted list of a fetch in an
 * older segment includes aborts whose markers are in later segments, and stays sorted. */
static void test_aborted_list_across_segments(void **state)
{
    struct tu_fixture *f = *state;
    f->o.segment_size_bytes = 8 * 1024;
    f->o.batch_size_max_bytes = 4 * 1024;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    int32_t seq[4] = {0};
    int aborted = 0;
    for (int round = 0; round < 60; round++) {
        for (int pid = 0; pid < 4; pid++) {
            txn_append(f->e, 0, pid, 0, seq[pid], 3, true);
            seq[pid] += 3;
        }
        for (int pid = 0; pid < 4; pid++) {
            int type = (round + pid) % 3 == 0 ? CONTROL_ABORT : CONTROL_COMMIT;
            aborted += type == CONTROL_ABORT;
            assert_int_equal(marker(f->e, 0, pid, 0, type, 0, NULL), 0);
        }
    }
    struct rt_stats st;
    rt_stats_get(f->e, &st);
    assert_true(st.segments_rolled >= 3);
    /* From offset 0 with a big fetch only the first segment is returned; walk the log. */
    int64_t hw, lso;
    watermarks(f->e, 0, &hw, &lso);
    assert_int_equal(lso, hw);
    size_t seen = 0;
    int64_t from = 0;
    int64_t last_first = -1;
    while (from < hw) {
        rt_fetch *fh;
        assert_int_equal(rt_fetch_start(f->e, "t", 0, from, 1 << 20, RT_READ_COMMITTED, &fh), 0);
        const struct rt_fetch_view *v = rt_fetch_get(fh);
        for (size_t i = 0; i < v->aborted_count; i++) {
            if (v->aborted[i].first_offset > last_first) {
                seen++;
                last_first = v->aborted[i].first_offset;
            }
        }
        int64_t next = from;
        uint64_t pos = 0;
        while (pos < v->size_bytes) {
            uint32_t len = (uint32_t)be32_of(v->data + pos + 8);
            uint32_t delta = (uint32_t)be32_of(v->data + pos + 23);
            next = (int64_t)be64_of(v->data + pos) + delta + 1;
            pos += 12 + len;
        }
        rt_fetch_release(fh);
        assert_true(next > from);
        from = next;
    }
    assert_int_equal(seen, aborted);
    tu_fixture_close(f);
    tu_fixture_open(f); /* clean restart keeps the sealed .txnindex files */
    struct rt_aborted_txn ab[512];
    size_t n = aborted_list(f->e, 0, 0, ab, 512);
    assert_true(n >= 1);
}

int main(void)
{
    fprintf(stderr, "io backend under test: %s\n", tu_backend());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lso_pinned_and_released, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_empty_transaction_and_markers_durable, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_stale_markers_rejected, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_markers_across_shards, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_recovery_rebuilds_lso_and_txnindex, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_aborted_list_across_segments, setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
