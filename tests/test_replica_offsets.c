/*
 * test_replica_offsets.c — `__consumer_offsets` replicated like any partition (issue 24 item 4;
 * RL6 in engine/log/partition.h, GO8 in engine/txn/group.c, ringtail.h rt_partition_resign and
 * rt_partition_become_leader, docs/format.md A.10 "Internal partitions").
 *
 * What it pins: two engines in one process, a leader and a follower. The leader commits offsets
 * (plain, in a committed transaction, in an aborted one, in one left open) and stores a group's
 * metadata; the follower, having resigned the group's partition, takes the leader's batches of
 * that partition through replica fetches and rt_partition_append_replica without answering the
 * group (RT_E_NOT_COORDINATOR) and without applying them; once made leader it answers exactly
 * what the old leader answered: the committed offsets, the committed transaction's offsets, not
 * the aborted one's, the open one's as pending (until an ABORT marker for it is written on the new
 * leader), and the metadata. The old leader, resigned, refuses the group's commits and fetches
 * and its own log takes no write of its own. A replica append to a led internal partition and a
 * truncation of it are refused.
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

#include "helpers/test_util.h"
#include "ringtail.h"

#define OFFSETS "__consumer_offsets"
#define DATA    "in"
#define GROUP   "g-replicated"

static rt_engine *open_dir(const char *dir)
{
    struct rt_options o;
    rt_options_init(&o);
    o.sync_mode = RT_SYNC_ALWAYS;
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

/* The partition of __consumer_offsets the group hashes to (Kafka's placement), found as the
 * one whose log end moved when the group committed. */
static uint32_t group_partition(rt_engine *e)
{
    for (uint32_t k = 0; k < 64; k++) {
        int64_t end = 0;
        int rc = rt_list_offsets(e, OFFSETS, k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            break;
        assert_int_equal(rc, 0);
        if (end > 0)
            return k;
    }
    fail_msg("no partition of %s holds the group's commit", OFFSETS);
    return 0;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Partition k's log end, past any held high watermark: walks replica fetches to the last whole
 * batch (baseOffset at 0, batchLength at 8, lastOffsetDelta at 23 of a RecordBatch v2). */
static int64_t log_end(rt_engine *e, uint32_t k)
{
    int64_t at = 0;
    for (;;) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(e, OFFSETS, k, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        const uint8_t *d = v->data;
        size_t pos = 0, n = v->size_bytes;
        int64_t was = at;
        while (n - pos >= 61) {
            size_t len = 12 + (size_t)be(d + pos + 8, 4);
            if (len > n - pos)
                break;
            int64_t last = (int64_t)be(d + pos, 8) + (int64_t)(int32_t)be(d + pos + 23, 4);
            if (last + 1 > at)
                at = last + 1;
            pos += len;
        }
        rt_fetch_release(f);
        if (at == was)
            return at;
    }
}

/* The follower's fetcher for partition k: replica fetches from the leader, appended as they are,
 * until the follower's log end is the leader's. */
static void replicate(rt_engine *leader, rt_engine *follower, uint32_t k)
{
    int64_t at = log_end(follower, k), to = log_end(leader, k);
    while (at < to) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(leader, OFFSETS, k, at, 1 << 20, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        assert_true(v->size_bytes > 0);
        int64_t end = -1;
        int rc = rt_partition_append_replica(follower, OFFSETS, k, v->data, v->size_bytes, &end);
        if (rc)
            fail_msg("append_replica at %" PRId64 ": %s", at, rt_error_detail());
        assert_true(end > at);
        at = end;
        rt_fetch_release(f);
    }
    assert_int_equal(at, to);
}

static void commit_one(rt_engine *e, uint32_t partition, int64_t offset)
{
    struct rt_offset o = {.topic = DATA, .partition = partition, .offset = offset};
    if (rt_group_commit_offsets(e, GROUP, &o, 1) != 0)
        fail_msg("commit: %s", rt_error_detail());
}

/* A transaction of `tid` committing offset `offset` of DATA-partition; ended per `end`
 * (0 leave open, 1 commit, 2 abort). Returns the producer id. */
static int64_t txn_offsets(rt_engine *e, const char *tid, uint32_t partition, int64_t offset,
                           int end, int16_t *epoch_out)
{
    int64_t pid = -1;
    int16_t epoch = -1;
    assert_int_equal(rt_txn_init_producer(e, tid, 60000, &pid, &epoch), 0);
    assert_int_equal(rt_txn_add_offsets(e, tid, pid, epoch, GROUP), 0);
    struct rt_offset o = {.topic = DATA, .partition = partition, .offset = offset};
    assert_int_equal(rt_txn_commit_offsets(e, tid, pid, epoch, GROUP, &o, 1), 0);
    if (end)
        assert_int_equal(rt_txn_end(e, tid, pid, epoch, end == 1), 0);
    *epoch_out = epoch;
    return pid;
}

static int64_t fetched(rt_engine *e, uint32_t partition, bool stable, int *rc_out)
{
    int64_t off = -2;
    *rc_out = rt_group_fetch_offsets(e, GROUP, DATA, partition, stable, &off);
    return off;
}

static void expect_offset(rt_engine *e, uint32_t partition, int64_t want)
{
    int rc = 0;
    int64_t got = fetched(e, partition, false, &rc);
    if (rc)
        fail_msg("fetch %s-%u: %s", DATA, partition, rt_error_detail());
    assert_int_equal(got, want);
}

static int count_meta(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    (void)md;
    (void)group;
    (*(int *)ctx)++;
    return 0;
}

static void test_offsets_follow_and_fail_over(void **state)
{
    (void)state;
    char *dir[2] = {tu_mkdtemp(), tu_mkdtemp()};
    rt_engine *leader = open_dir(dir[0]), *follower = open_dir(dir[1]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(rt_topic_create(i ? follower : leader, DATA, 4), 0);

    /* The leader: a plain commit, so the group's partition exists and is known. */
    commit_one(leader, 0, 10);
    uint32_t k = group_partition(leader);
    /* The follower resigns it (creating its __consumer_offsets): no answer, no local write. */
    assert_int_equal(rt_partition_resign(follower, OFFSETS, k), 0);
    int rc = 0;
    (void)fetched(follower, 0, false, &rc);
    assert_int_equal(rc, RT_E_NOT_COORDINATOR);
    struct rt_offset o = {.topic = DATA, .partition = 0, .offset = 1};
    assert_int_equal(rt_group_commit_offsets(follower, GROUP, &o, 1), RT_E_NOT_COORDINATOR);
    /* A led internal partition takes no replica batch and no truncation (RL6). */
    int64_t end = -1;
    assert_int_equal(rt_partition_truncate(leader, OFFSETS, k, 0, &end), RT_E_INVALID_ARGUMENT);
    replicate(leader, follower, k); /* the plain commit, as a follower holds it */
    assert_int_equal(rt_partition_set_high_watermark(follower, OFFSETS, k, 1, NULL), 0);
    assert_int_equal(rt_partition_set_leader_epoch(leader, OFFSETS, k, 3), 0);

    /* More on the leader: a second plain commit, a committed transaction, an aborted one, one
     * left open, the group's metadata. */
    commit_one(leader, 0, 11);
    int16_t e1, e2, e3;
    (void)txn_offsets(leader, "t-commit", 1, 20, 1, &e1);
    (void)txn_offsets(leader, "t-abort", 2, 30, 2, &e2);
    int64_t open_pid = txn_offsets(leader, "t-open", 3, 40, 0, &e3);
    struct rt_group_metadata md = {.protocol_type = "consumer", .generation = 7};
    if (rt_group_store_metadata(leader, GROUP, &md) != 0)
        fail_msg("store metadata: %s", rt_error_detail());
    replicate(leader, follower, k);
    (void)fetched(follower, 1, false, &rc); /* still following: nothing answered */
    assert_int_equal(rc, RT_E_NOT_COORDINATOR);

    /* The epoch the leader stamped is what the follower's checkpoint says. */
    int64_t eo = -1;
    int32_t fe = -1;
    assert_int_equal(rt_partition_end_offset_for_epoch(follower, OFFSETS, k, 3, &eo, &fe), 0);
    assert_int_equal(fe, 3);
    assert_int_equal(eo, log_end(leader, k));

    /* Fail over: the old leader resigns, the follower leads. */
    assert_int_equal(rt_partition_resign(leader, OFFSETS, k), 0);
    assert_int_equal(rt_partition_resign(leader, OFFSETS, k), 0); /* again: a no-op */
    (void)fetched(leader, 0, false, &rc);
    assert_int_equal(rc, RT_E_NOT_COORDINATOR);
    o.offset = 99;
    assert_int_equal(rt_group_commit_offsets(leader, GROUP, &o, 1), RT_E_NOT_COORDINATOR);
    assert_int_equal(rt_group_store_metadata(leader, GROUP, &md), RT_E_NOT_COORDINATOR);
    int metas = 0;
    assert_int_equal(rt_group_list_metadata(leader, count_meta, &metas), 0);
    assert_int_equal(metas, 0); /* its state of the partition is dropped */
    int64_t before = log_end(leader, k);

    assert_int_equal(rt_partition_become_leader(follower, OFFSETS, k), 0);
    expect_offset(follower, 0, 11); /* the later plain commit */
    expect_offset(follower, 1, 20); /* the committed transaction's */
    expect_offset(follower, 2, -1); /* the aborted one's: nothing */
    expect_offset(follower, 3, -1); /* the open one's: pending, not committed */
    (void)fetched(follower, 3, true, &rc);
    assert_int_equal(rc, RT_E_UNSTABLE_OFFSET_COMMIT);
    metas = 0;
    assert_int_equal(rt_group_list_metadata(follower, count_meta, &metas), 0);
    assert_int_equal(metas, 1);

    /* The open transaction's coordinator is elsewhere (issue 25): an ABORT marker of its
     * producer written on the new leader drops its pending offset there (G.5's abort). */
    assert_int_equal(rt_txn_abort_partition(follower, OFFSETS, k, open_pid, e3), 0);
    (void)fetched(follower, 3, true, &rc);
    assert_int_equal(rc, 0);
    expect_offset(follower, 3, -1);

    /* The new leader takes commits; the old one's log took nothing meanwhile. */
    o.offset = 12;
    assert_int_equal(rt_group_commit_offsets(follower, GROUP, &o, 1), 0);
    expect_offset(follower, 0, 12);
    assert_int_equal(log_end(leader, k), before);
    /* The old leader follows back: its truncation to the common prefix and the catch-up work. */
    assert_int_equal(rt_partition_truncate(leader, OFFSETS, k, before, &end), 0);
    replicate(follower, leader, k);
    assert_int_equal(log_end(leader, k), log_end(follower, k));

    /* Other partitions stay led by each engine as at open: a replica batch is refused (RL6). */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(follower, OFFSETS, k, 0, 1 << 20, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_true(v->size_bytes > 0);
    uint32_t other = (k + 1) % 4;
    assert_int_equal(
        rt_partition_append_replica(follower, OFFSETS, other, v->data, v->size_bytes, NULL),
        RT_E_INVALID_ARGUMENT);
    assert_non_null(strstr(rt_error_detail(), "rt_partition_resign first"));
    rt_fetch_release(f);
    /* __transaction_state is replicated too (test_replica_txn.c), and has one partition. */
    assert_int_equal(rt_partition_resign(leader, "__transaction_state", 1),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);

    assert_int_equal(rt_close(leader), 0);
    assert_int_equal(rt_close(follower), 0);
    /* An open leads every partition again (the role is not stored) and replays the same state. */
    leader = open_dir(dir[0]);
    expect_offset(leader, 0, 12);
    expect_offset(leader, 1, 20);
    assert_int_equal(rt_close(leader), 0);
    for (int i = 0; i < 2; i++)
        tu_rmdir_free(dir[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offsets_follow_and_fail_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
