/*
 * test_replica.c — the engine's side of Kafka's ISR replication (issue 24; RL1-RL5 in
 * engine/log/partition.h; the leader-epoch checkpoint, docs/format.md A.10, LE1-LE4 in
 * engine/log/leader_epoch.c).
 *
 * What it pins: a follower engine fed a leader's batches through replica fetches
 * (RT_READ_REPLICA) and rt_partition_append_replica ends with byte-identical segment files (RL3);
 * the leader epoch is stamped into every append and checkpointed, and survives a reopen and a
 * damaged checkpoint (RL1, RL2); OffsetsForLeaderEpoch answers KIP-101's cases; the KIP-279
 * divergence (two leaders wrote different epochs after a common prefix) is repaired by truncating
 * the follower where end_offset_for_epoch says, after which both logs are identical (RL4); the
 * follower's producer state fences a duplicate sequence as the leader's would (RL3), over the
 * whole window of 5 batches, and a truncation keeps the window below its cut (PST5); a held high
 * watermark bounds reads, list offsets and the LSO (RL5); a power loss at every step of a
 * truncation leaves the old log or the truncated one, never a partial batch (RL4); a restart-at
 * (a follower below its leader's log start) leaves an empty log at the offset that survives a
 * reopen and a power loss at every step and then takes the leader's batches (RL7).
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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "helpers/batches.h"
#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "leader_epoch.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define TOPIC             "rp"
#define RECORDS_PER_BATCH 16
#define VALUE_BYTES       500

static void options(struct rt_options *o)
{
    tu_options_small(o, 64 * 1024, 32 * 1024, 4096); /* several segments for a few dozen batches */
    o->sync_mode = RT_SYNC_ALWAYS;
    o->retention_bytes = -1;
    o->retention_ms = -1;
}

struct pair {
    char *dir[2];
    rt_engine *e[2]; /* [0] the leader, [1] the follower */
};

static rt_engine *open_dir(const char *dir)
{
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    if (rt_open(dir, &o, &e) != 0)
        fail_msg("rt_open %s: %s", dir, rt_error_detail());
    return e;
}

static void pair_open(struct pair *p)
{
    for (int i = 0; i < 2; i++) {
        p->dir[i] = tu_mkdtemp();
        p->e[i] = open_dir(p->dir[i]);
        assert_int_equal(rt_topic_create(p->e[i], TOPIC, 1), 0);
    }
}

static void pair_close(struct pair *p, bool remove)
{
    for (int i = 0; i < 2; i++) {
        if (p->e[i])
            assert_int_equal(rt_close(p->e[i]), 0);
        p->e[i] = NULL;
        if (remove)
            tu_rmdir_free(p->dir[i]);
    }
}

static int64_t append_n(rt_engine *e, int n)
{
    int64_t next = -1;
    for (int i = 0; i < n; i++) {
        int64_t end = 0;
        assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end),
                         0);
        int64_t base = -1;
        assert_int_equal(
            tu_append_offset_batch(e, TOPIC, end, RECORDS_PER_BATCH, VALUE_BYTES, &base), 0);
        next = base + RECORDS_PER_BATCH;
    }
    return next;
}

static int64_t high_watermark(rt_engine *e)
{
    int64_t end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    return end;
}

/* The follower's fetcher: replica fetches from the leader at the follower's log end, appended as
 * they are, until the follower's log end is `to`. */
static void replicate_by(rt_engine *leader, rt_engine *follower, int64_t from, int64_t to,
                         size_t max_bytes)
{
    int64_t at = from;
    while (at < to) {
        rt_fetch *f = NULL;
        assert_int_equal(rt_fetch_start(leader, TOPIC, 0, at, max_bytes, RT_READ_REPLICA, &f), 0);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        assert_true(v->size_bytes > 0);
        int64_t end = -1;
        int rc = rt_partition_append_replica(follower, TOPIC, 0, v->data, v->size_bytes, &end);
        if (rc)
            fail_msg("append_replica at %" PRId64 ": %s", at, rt_error_detail());
        assert_true(end > at);
        at = end;
        rt_fetch_release(f);
    }
    assert_int_equal(at, to);
}

/* Many batches an append where the leader has no more than `to`. */
static void replicate(rt_engine *leader, rt_engine *follower, int64_t from, int64_t to)
{
    replicate_by(leader, follower, from, to, 20000);
}

static int32_t epoch_at(rt_engine *e, int64_t offset)
{
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, offset, 1, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_true(v->size_bytes >= RT_BATCH_HEADER_BYTES);
    int32_t epoch = (int32_t)be32_of(v->data + RT_BATCH_OFF_LEADER_EPOCH);
    rt_fetch_release(f);
    return epoch;
}

static void expect_end_for(rt_engine *e, int32_t epoch, int64_t end, int32_t found)
{
    int64_t got_end = -2;
    int32_t got_found = -2;
    assert_int_equal(rt_partition_end_offset_for_epoch(e, TOPIC, 0, epoch, &got_end, &got_found),
                     0);
    if (got_end != end || got_found != found)
        fail_msg("end offset for epoch %" PRId32 ": (%" PRId32 ", %" PRId64 "), want (%" PRId32
                 ", %" PRId64 ")",
                 epoch, got_found, got_end, found, end);
}

/* Every .log of the partition directory of dir a, byte for byte equal to b's (both closed). */
static void expect_same_segments(const char *a, const char *b)
{
    char *pa = tu_path("%s/" TOPIC "-0", a);
    DIR *d = opendir(pa);
    assert_non_null(d);
    int logs = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".log") != 0)
            continue;
        char *fa = tu_path("%s/%s", pa, de->d_name);
        char *fb = tu_path("%s/" TOPIC "-0/%s", b, de->d_name);
        size_t la = 0, lb = 0;
        uint8_t *ba = tu_read_file(fa, &la);
        uint8_t *bb = tu_read_file(fb, &lb);
        if (la != lb || memcmp(ba, bb, la) != 0)
            fail_msg("%s and %s differ (%zu and %zu bytes)", fa, fb, la, lb);
        free(ba);
        free(bb);
        free(fa);
        free(fb);
        logs++;
    }
    closedir(d);
    free(pa);
    assert_true(logs >= 2);
}

/* RL1, RL3: epochs stamped and checkpointed on the leader; the follower's copy is identical,
 * epochs included, and answers OffsetsForLeaderEpoch as the leader does. */
static void test_replica_copy_is_byte_identical(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    /* Unset: the engine's own batches keep epoch 0, as before (RL1), and no checkpoint exists. */
    append_n(a, 2);
    assert_int_equal(epoch_at(a, 0), 0);
    char *ck = tu_path("%s/" TOPIC "-0/" LEADER_EPOCH_FILE, p.dir[0]);
    assert_false(fs_exists_for_test(ck));
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 1), 0);
    assert_true(fs_exists_for_test(ck));
    int64_t e1_end = append_n(a, 10);
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 3), 0);
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 2), RT_E_INVALID_ARGUMENT);
    int64_t end = append_n(a, 10);
    assert_int_equal(epoch_at(a, 2 * RECORDS_PER_BATCH), 1);
    assert_int_equal(epoch_at(a, e1_end), 3);
    assert_int_equal(epoch_at(a, end - 1), 3);
    expect_end_for(a, 1, e1_end, 1);
    expect_end_for(a, 2, e1_end, 1);
    expect_end_for(a, 3, end, 3);
    expect_end_for(a, 0, 2 * RECORDS_PER_BATCH, 0); /* below the earliest: its start */
    expect_end_for(a, 4, -1, -1);
    /* The follower: in two pieces, the second after a reopen of both. */
    replicate_by(a, b, 0, e1_end, 1); /* one batch an append: the leader has more */
    assert_int_equal(high_watermark(b), e1_end);
    pair_close(&p, false);
    p.e[0] = a = open_dir(p.dir[0]);
    p.e[1] = b = open_dir(p.dir[1]);
    expect_end_for(a, 3, end, 3); /* RL1: the checkpoint came back */
    replicate(a, b, e1_end, end);
    expect_end_for(b, 1, e1_end, 1);
    expect_end_for(b, 3, end, 3);
    assert_int_equal(epoch_at(b, e1_end), 3);
    /* RL3: a batch not at the log end is refused, the log unchanged. */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 0, 1, RT_READ_REPLICA, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, v->data, v->size_bytes, NULL),
                     RT_E_INVALID_ARGUMENT);
    /* CRC checked: one flipped record byte and nothing is appended. */
    rt_fetch_release(f);
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 4), 0);
    int64_t end2 = append_n(a, 1);
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, end, 1, RT_READ_REPLICA, &f), 0);
    v = rt_fetch_get(f);
    uint8_t *copy = malloc(v->size_bytes);
    memcpy(copy, v->data, v->size_bytes);
    size_t len = v->size_bytes;
    rt_fetch_release(f);
    copy[len - 3] ^= 0x40;
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, copy, len, NULL), RT_E_CORRUPT);
    copy[len - 3] ^= 0x40;
    assert_int_equal(rt_partition_append_replica(b, TOPIC, 0, copy, len, NULL), 0);
    free(copy);
    assert_int_equal(high_watermark(b), end2);
    expect_end_for(b, 4, end2, 4);
    pair_close(&p, false);
    expect_same_segments(p.dir[0], p.dir[1]);
    tu_expect_verify_spotless(p.dir[1], "the follower");
    free(ck);
    for (int i = 0; i < 2; i++)
        tu_rmdir_free(p.dir[i]);
}

/* KIP-101's OffsetsForLeaderEpoch cases, on the list itself (leader_epoch.h). */
static void test_end_offset_for_epoch_cases(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    leader_epoch_init(&c);
    int64_t end = 0;
    int32_t found = 0;
    leader_epoch_end_offset(&c, 0, 10, &end, &found); /* no epochs: undefined */
    assert_int_equal(end, -1);
    assert_int_equal(found, -1);
    assert_int_equal(leader_epoch_assign(&c, 0, 0), 1);
    assert_int_equal(leader_epoch_assign(&c, 0, 3), 0); /* the latest again: kept */
    assert_int_equal(leader_epoch_assign(&c, 1, 5), 1);
    assert_int_equal(leader_epoch_assign(&c, 3, 12), 1);
    assert_int_equal(leader_epoch_assign(&c, 2, 15), RT_E_INVALID_ARGUMENT);
    const struct {
        int32_t ask;
        int64_t end;
        int32_t found;
    } cases[] = {{0, 5, 0}, {1, 12, 1}, {2, 12, 1}, {3, 20, 3}, {4, -1, -1}, {-1, -1, -1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        leader_epoch_end_offset(&c, cases[i].ask, 20, &end, &found);
        if (end != cases[i].end || found != cases[i].found)
            fail_msg("epoch %" PRId32 ": (%" PRId32 ", %" PRId64 ")", cases[i].ask, found, end);
    }
    /* An epoch that wrote nothing gives way to a later one at the same start (LE3). */
    assert_int_equal(leader_epoch_assign(&c, 5, 20), 1);
    assert_int_equal(leader_epoch_assign(&c, 6, 20), 1);
    assert_int_equal(c.count, 4);
    assert_true(leader_epoch_truncate_from_end(&c, 12));
    assert_int_equal(leader_epoch_latest(&c), 1);
    leader_epoch_free(&c);
    /* Below the earliest: (asked, earliest start). */
    assert_int_equal(leader_epoch_assign(&c, 2, 10), 1);
    leader_epoch_end_offset(&c, 1, 30, &end, &found);
    assert_int_equal(end, 10);
    assert_int_equal(found, 1);
    leader_epoch_free(&c);
}

/* RL4, KIP-279: leader A (epoch 1) and follower B agree up to X; B becomes leader in epoch 2 and
 * writes batches nobody copies; A comes back as leader in epoch 3 and writes others. B, now A's
 * follower, asks A for the end of its latest epoch (2): A answers epoch 1 ending at X; B
 * truncates there and copies from A: the two logs are then identical. */
static void test_truncate_repairs_a_divergence(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 1), 0);
    int64_t x = append_n(a, 9);
    replicate(a, b, 0, x);
    /* B leads in epoch 2; its high watermark is what the ISR (only A, gone) acknowledged: x. */
    int64_t hw = -1;
    assert_int_equal(rt_partition_set_high_watermark(b, TOPIC, 0, x, &hw), 0);
    assert_int_equal(hw, x);
    assert_int_equal(rt_partition_set_leader_epoch(b, TOPIC, 0, 2), 0);
    int64_t b_end = append_n(b, 5);
    assert_int_equal(high_watermark(b), x); /* RL5: the held one, not the log end */
    /* A leads in epoch 3. */
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 3), 0);
    int64_t a_end = append_n(a, 7);
    /* B follows: where does its epoch 2 end on A? */
    int64_t end = -1;
    int32_t found = -1;
    assert_int_equal(rt_partition_end_offset_for_epoch(a, TOPIC, 0, 2, &end, &found), 0);
    assert_int_equal(found, 1);
    assert_int_equal(end, x);
    int64_t own_end = -1;
    int32_t own_found = -1;
    assert_int_equal(rt_partition_end_offset_for_epoch(b, TOPIC, 0, found, &own_end, &own_found),
                     0);
    int64_t cut = own_end < end ? own_end : end;
    assert_int_equal(cut, x);
    /* RL4: not below the high watermark, nor the log start. */
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, x - 1, NULL), RT_E_OFFSET_OUT_OF_RANGE);
    int64_t after = -1;
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, cut, &after), 0);
    assert_int_equal(after, x);
    expect_end_for(b, 2, -1, -1); /* epoch 2 is gone with its batches: above the latest */
    expect_end_for(b, 1, x, 1);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(b, TOPIC, 0, x + 1, 1, RT_READ_REPLICA, &f),
                     RT_E_OFFSET_OUT_OF_RANGE); /* nothing past the cut is served */
    (void)b_end;
    replicate(a, b, x, a_end);
    expect_end_for(b, 3, a_end, 3);
    assert_int_equal(rt_partition_set_high_watermark(b, TOPIC, 0, a_end, &hw), 0);
    assert_int_equal(hw, a_end);
    pair_close(&p, false);
    expect_same_segments(p.dir[0], p.dir[1]);
    tu_expect_verify_spotless(p.dir[1], "the truncated follower");
    for (int i = 0; i < 2; i++)
        tu_rmdir_free(p.dir[i]);
}

/* RL3: the follower's producer state is the leader's: a retried batch is a duplicate, a gap in
 * sequences is refused, as the leader would answer. */
static void test_replica_producer_state_fences_duplicates(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    int64_t pid = -1;
    int16_t pepoch = -1;
    assert_int_equal(rt_producer_id_allocate(a, &pid, &pepoch), 0);
    uint8_t batch[4096];
    int32_t seq = 0;
    for (int i = 0; i < 3; i++) {
        size_t n = tu_batch(batch, sizeof(batch), 0, pid, pepoch, seq, 4, "v", seq, 1000);
        assert_int_equal(rt_append_batch(a, TOPIC, 0, batch, n, NULL), 0);
        seq += 4;
    }
    int64_t end = high_watermark(a);
    replicate(a, b, 0, end);
    /* The last batch again (a producer's retry after the leader changed): a duplicate. */
    size_t n = tu_batch(batch, sizeof(batch), 0, pid, pepoch, seq - 4, 4, "v", seq - 4, 1000);
    int64_t base = -1;
    assert_int_equal(rt_append_batch(b, TOPIC, 0, batch, n, &base), 0);
    assert_int_equal(base, end - 4);
    assert_int_equal(high_watermark(b), end);
    n = tu_batch(batch, sizeof(batch), 0, pid, pepoch, seq + 4, 4, "v", seq + 4, 1000);
    assert_int_equal(rt_append_batch(b, TOPIC, 0, batch, n, NULL), RT_E_OUT_OF_ORDER_SEQUENCE);
    n = tu_batch(batch, sizeof(batch), 0, pid, pepoch, seq, 4, "v", seq, 1000);
    assert_int_equal(rt_append_batch(b, TOPIC, 0, batch, n, &base), 0);
    assert_int_equal(base, end);
    pair_close(&p, true);
}

/* A producer batch of 4 records at `seq` appended on e as a leader would (rt_append_batch: the
 * sequence rules run); returns the engine's answer, its base offset in *base. */
static int producer_batch(rt_engine *e, int64_t pid, int16_t pepoch, int32_t seq, int64_t *base)
{
    uint8_t batch[4096];
    size_t n = tu_batch(batch, sizeof(batch), 0, pid, pepoch, seq, 4, "w", seq, 1000 + seq);
    *base = -1;
    return rt_append_batch(e, TOPIC, 0, batch, n, base);
}

/* RL3 and RL4 with a new leader's eyes (issue 24 item 3: an idempotent producer keeps its
 * exactly-once promise through a leader change): the follower's dedup window is the leader's
 * whole window of 5 batches, not only the last one; a truncation rolls the producer state back
 * to the cut, even when a segment roll (a producer snapshot) lies between the batches, so the
 * producer's retries of the cut batches are appended at the new log end, its retries of batches
 * still in the log are duplicates at their original offsets, and a retry that skips a cut batch
 * is refused as the leader would refuse it. */
static void test_replica_producer_window_across_truncation(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    int64_t pid = -1;
    int16_t pepoch = -1;
    assert_int_equal(rt_producer_id_allocate(a, &pid, &pepoch), 0);
    int64_t at[6];
    assert_int_equal(producer_batch(a, pid, pepoch, 0, &at[0]), 0);
    append_n(a, 9); /* > one 64 KiB segment: the follower rolls, and snapshots, in between */
    for (int i = 1; i < 6; i++) {
        assert_int_equal(producer_batch(a, pid, pepoch, 4 * i, &at[i]), 0);
        if (i == 2)
            append_n(a, 9); /* another roll between the batches the truncation keeps */
    }
    int64_t end = high_watermark(a);
    replicate(a, b, 0, end);
    int64_t base = -1;
    /* The new leader's window is the last 5 batches (1..5): a retry of the oldest is a
     * duplicate at its original offset, not OUT_OF_ORDER_SEQUENCE_NUMBER. */
    for (int i = 1; i < 6; i++) {
        assert_int_equal(producer_batch(b, pid, pepoch, 4 * i, &base), 0);
        assert_int_equal(base, at[i]);
    }
    assert_int_equal(high_watermark(b), end);
    /* A divergent tail: batches 4 and 5 cut (the high watermark held at the cut first). */
    int64_t hw = -1, after = -1;
    assert_int_equal(rt_partition_set_high_watermark(b, TOPIC, 0, at[4], &hw), 0);
    assert_int_equal(rt_partition_truncate(b, TOPIC, 0, at[4], &after), 0);
    assert_int_equal(after, at[4]);
    /* Batch 5 first would skip batch 4, which this log no longer holds. */
    assert_int_equal(producer_batch(b, pid, pepoch, 20, &base), RT_E_OUT_OF_ORDER_SEQUENCE);
    /* Batches of the window before the cut still in the log (1..3: batch 0 had left the
     * window of 5) are duplicates at their offsets, across the second roll's snapshot. */
    for (int i = 1; i < 4; i++) {
        assert_int_equal(producer_batch(b, pid, pepoch, 4 * i, &base), 0);
        assert_int_equal(base, at[i]);
    }
    /* The cut ones are the producer's next: appended at the new log end, in order. */
    assert_int_equal(producer_batch(b, pid, pepoch, 16, &base), 0);
    assert_int_equal(base, at[4]);
    assert_int_equal(producer_batch(b, pid, pepoch, 20, &base), 0);
    assert_int_equal(base, at[4] + 4);
    assert_int_equal(producer_batch(b, pid, pepoch, 20, &base), 0); /* and now a duplicate */
    assert_int_equal(base, at[4] + 4);
    pair_close(&p, true);
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

/* The read_committed view of offset `from`: its LSO and aborted list (count, first one). */
static void committed_view(rt_engine *e, int64_t from, int64_t *lso, size_t *aborted,
                           int64_t *first_pid)
{
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, from, 1 << 20, RT_READ_COMMITTED, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    *lso = v->last_stable_offset;
    *aborted = v->aborted_count;
    *first_pid = v->aborted_count ? v->aborted[0].producer_id : -1;
    rt_fetch_release(f);
}

/* RL3: transactions replicate: markers kept, the follower's LSO pinned by the open transaction
 * as the leader's is, its aborted list the leader's; after the leader ends it, the follower's
 * LSO follows once the marker is copied. */
static void test_replica_transactions_keep_the_lso(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "tx";
    po.linger_ms = 1;
    rt_producer *tp = NULL;
    assert_int_equal(rt_producer_open(a, &po, &tp), 0);
    assert_int_equal(rt_producer_init_transactions(tp, -1), 0);
    for (int i = 0; i < 3; i++) { /* committed, aborted, then one left open */
        assert_int_equal(rt_producer_begin(tp), 0);
        send_value(tp, i == 1 ? "abort-me" : "keep-me");
        assert_int_equal(rt_producer_flush(tp, -1), 0);
        if (i == 0)
            assert_int_equal(rt_producer_commit(tp, -1), 0);
        else if (i == 1)
            assert_int_equal(rt_producer_abort(tp, -1), 0);
    }
    int64_t end = high_watermark(a);
    replicate(a, b, 0, end);
    int64_t lso_a = -1, lso_b = -1, pid_a = -1, pid_b = -1;
    size_t ab_a = 0, ab_b = 0;
    committed_view(a, 0, &lso_a, &ab_a, &pid_a);
    committed_view(b, 0, &lso_b, &ab_b, &pid_b);
    assert_true(lso_a < end); /* the open transaction pins it */
    assert_int_equal(lso_b, lso_a);
    assert_int_equal(ab_a, 1);
    assert_int_equal(ab_b, ab_a);
    assert_int_equal(pid_b, pid_a);
    /* A reopen of the follower rebuilds the same from its log. */
    assert_int_equal(rt_close(b), 0);
    p.e[1] = b = open_dir(p.dir[1]);
    committed_view(b, 0, &lso_b, &ab_b, &pid_b);
    assert_int_equal(lso_b, lso_a);
    assert_int_equal(ab_b, 1);
    assert_int_equal(rt_producer_commit(tp, -1), 0);
    assert_int_equal(rt_producer_close(tp), 0);
    int64_t end2 = high_watermark(a);
    replicate(a, b, end, end2);
    committed_view(b, 0, &lso_b, &ab_b, &pid_b);
    assert_int_equal(lso_b, end2);
    pair_close(&p, true);
}

/* RL5: a held high watermark bounds reads, list offsets, and only rises. */
static void test_held_high_watermark_bounds_reads(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    rt_engine *e = open_dir(dir);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    int64_t end = append_n(e, 4);
    assert_int_equal(high_watermark(e), end); /* unheld: the log end, as before */
    int64_t hw = -1;
    assert_int_equal(rt_partition_set_high_watermark(e, TOPIC, 0, RECORDS_PER_BATCH, &hw), 0);
    assert_int_equal(hw, RECORDS_PER_BATCH);
    assert_int_equal(high_watermark(e), RECORDS_PER_BATCH);
    int64_t lso = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso), 0);
    assert_int_equal(lso, RECORDS_PER_BATCH);
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
    assert_int_equal(tu_fetch_next_offset(rt_fetch_get(f), 0), RECORDS_PER_BATCH);
    rt_fetch_release(f);
    assert_int_equal(
        rt_fetch_start(e, TOPIC, 0, 2 * RECORDS_PER_BATCH, 1 << 20, RT_READ_UNCOMMITTED, &f),
        0); /* past it, within the log: empty, not out of range */
    assert_int_equal(rt_fetch_get(f)->size_bytes, 0);
    rt_fetch_release(f);
    /* read_committed too (a consumer at its position on a new leader whose high watermark has
     * not caught up: out of range would make it reset its offset and read everything again) */
    assert_int_equal(
        rt_fetch_start(e, TOPIC, 0, 2 * RECORDS_PER_BATCH, 1 << 20, RT_READ_COMMITTED, &f), 0);
    assert_int_equal(rt_fetch_get(f)->size_bytes, 0);
    rt_fetch_release(f);
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, end + 1, 1 << 20, RT_READ_COMMITTED, &f),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, end + 1, 1 << 20, RT_READ_UNCOMMITTED, &f),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_fetch_start(e, TOPIC, 0, RECORDS_PER_BATCH, 1 << 20, RT_READ_REPLICA, &f),
                     0);
    assert_int_equal(tu_fetch_next_offset(rt_fetch_get(f), RECORDS_PER_BATCH), end);
    rt_fetch_release(f);
    /* Appends do not move it; a lower value changes nothing; mid-batch goes down to the batch. */
    int64_t end2 = append_n(e, 1);
    assert_int_equal(high_watermark(e), RECORDS_PER_BATCH);
    assert_int_equal(rt_partition_set_high_watermark(e, TOPIC, 0, 3, &hw), 0);
    assert_int_equal(hw, RECORDS_PER_BATCH);
    assert_int_equal(rt_partition_set_high_watermark(e, TOPIC, 0, 2 * RECORDS_PER_BATCH + 5, &hw),
                     0);
    assert_int_equal(hw, 2 * RECORDS_PER_BATCH);
    assert_int_equal(rt_partition_set_high_watermark(e, TOPIC, 0, end2 + 100, &hw), 0);
    assert_int_equal(hw, end2); /* clamped to the log end */
    int64_t low = -1;
    assert_int_equal(rt_partition_delete_records(e, TOPIC, 0, -1, &low), 0);
    assert_int_equal(low, end2);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* RL2: a damaged checkpoint is rebuilt from the batches' epochs; verify warns, open repairs. */
static void test_damaged_checkpoint_is_rebuilt(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    rt_engine *e = open_dir(dir);
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 5), 0);
    int64_t e5 = append_n(e, 6);
    assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 7), 0);
    int64_t end = append_n(e, 6);
    assert_int_equal(rt_close(e), 0);
    char *ck = tu_path("%s/" TOPIC "-0/" LEADER_EPOCH_FILE, dir);
    tu_flip_byte(ck, 30, 0x01);
    struct tu_verify_log vl = {.with_warnings = true};
    assert_int_equal(rt_verify(dir, tu_on_problem, &vl), 0);
    assert_int_equal(vl.problems, 0);
    assert_int_equal(vl.warnings, 1); /* RL2: a warning, as open repairs it */
    assert_non_null(strstr(vl.all, LEADER_EPOCH_FILE));
    e = open_dir(dir);
    expect_end_for(e, 5, e5, 5);
    expect_end_for(e, 6, e5, 5);
    expect_end_for(e, 7, end, 7);
    int64_t next = append_n(e, 1); /* the epoch set is the latest again (RL1) */
    assert_int_equal(epoch_at(e, next - 1), 7);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the rebuild");
    free(ck);
    tu_rmdir_free(dir);
}

/* ---- RL4 under power loss: a truncation of a log over several segments ---- */

#define SWEEP_BATCHES 14
#define SWEEP_HW      (5 * RECORDS_PER_BATCH)
#define SWEEP_CUT     (6 * RECORDS_PER_BATCH)

static void sweep_prepare(rt_engine *e)
{
    assert_int_equal(rt_topic_create(e, TOPIC, 1), 0);
    assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 1), 0);
    append_n(e, 4);
    assert_int_equal(rt_partition_set_leader_epoch(e, TOPIC, 0, 2), 0);
    append_n(e, SWEEP_BATCHES - 4);
}

static int sweep_act(rt_engine *e)
{
    int64_t hw = -1;
    int rc = rt_partition_set_high_watermark(e, TOPIC, 0, SWEEP_HW, &hw);
    if (rc == 0)
        rc = rt_partition_truncate(e, TOPIC, 0, SWEEP_CUT + 3, NULL); /* mid-batch: to SWEEP_CUT */
    return rc;
}

static void sweep_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    (void)dir;
    int64_t end = high_watermark(e);
    int64_t old_end = SWEEP_BATCHES * RECORDS_PER_BATCH;
    if (end != old_end && end != SWEEP_CUT)
        fail_msg("%s: the log ends at %" PRId64 ", neither %" PRId64 " nor %d", what, end, old_end,
                 SWEEP_CUT);
    if (acked && end != SWEEP_CUT)
        fail_msg("%s: an acknowledged truncation came back as the old log", what);
    int64_t start = -1;
    assert_int_equal(tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, &start), end);
    expect_end_for(e, 2, end, 2);
    expect_end_for(e, 1, 4 * RECORDS_PER_BATCH, 1);
}

static const struct tu_power_sweep sweep = {.options = options,
                                            .runs_max = 80,
                                            .what = "of a truncation",
                                            .prepare = sweep_prepare,
                                            .act = sweep_act,
                                            .check = sweep_check,
                                            .after = tu_expect_verify_spotless};

/* RL4: a failure after the intent fails the write side; the reopen finishes the truncation. */
static void test_truncate_failure_after_intent_is_finished_by_reopen(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(dir, &o, &plan, &e), 0);
    sweep_prepare(e);
    int64_t hw = -1;
    assert_int_equal(rt_partition_set_high_watermark(e, TOPIC, 0, SWEEP_HW, &hw), 0);
    /* The newest segment's log, the first one the truncation unlinks, after its intent is
     * stored (named exactly: the pre-writer's next.log.tmp may come and go meanwhile). */
    char newest[300] = "";
    char *pdir = tu_path("%s/" TOPIC "-0", dir);
    DIR *d = opendir(pdir);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n == 24 && strcmp(de->d_name + 20, ".log") == 0 && strcmp(de->d_name, newest + 1) > 0)
            snprintf(newest, sizeof(newest), "/%s", de->d_name);
    }
    closedir(d);
    free(pdir);
    assert_true(strcmp(newest, "/00000000000000000000.log") > 0);
    struct io_fault_rule rule = {.mode = IO_FAULT_ONCE,
                                 .op = IO_OP_DIR_ENTRY,
                                 .nth = 1,
                                 .error = EIO,
                                 .path_contains = newest};
    assert_int_equal(io_fault_rule_add(&plan, &rule), 0);
    assert_int_equal(rt_partition_truncate(e, TOPIC, 0, SWEEP_CUT, NULL), RT_E_IO_FAILED);
    if (!strstr(rt_error_detail(), "reopen finishes"))
        fail_msg("detail: %s", rt_error_detail());
    assert_int_equal(tu_append_offset_batch(e, TOPIC, SWEEP_CUT, 1, VALUE_BYTES, NULL),
                     RT_E_IO_FAILED);
    (void)rt_close(e);
    io_fault_plan_release(&plan);
    e = open_dir(dir);
    assert_int_equal(high_watermark(e), SWEEP_CUT);
    int64_t start = -1;
    assert_int_equal(tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, &start), SWEEP_CUT);
    expect_end_for(e, 2, SWEEP_CUT, 2);
    assert_int_equal(append_n(e, 1), SWEEP_CUT + RECORDS_PER_BATCH);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the reopen finished it");
    tu_rmdir_free(dir);
}

static void test_truncate_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_ENTRY);
}

static void test_truncate_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_FDATASYNC_DIRECT);
}

static void test_truncate_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_FSYNC);
}

/* ---- RL7: restart-at, a follower whose log end is below its leader's log start ---- */

#define RESTART_AT (20 * RECORDS_PER_BATCH) /* past the sweep's log end */

/* Every segment, index and snapshot file of dir's partition names an offset >= from. */
static void expect_no_files_below(const char *dir, int64_t from)
{
    char *pd = tu_path("%s/" TOPIC "-0", dir);
    DIR *d = opendir(pd);
    assert_non_null(d);
    int logs = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strlen(de->d_name) <= 20 || strspn(de->d_name, "0123456789") != 20)
            continue;
        int64_t at = strtoll(de->d_name, NULL, 10);
        if (at < from)
            fail_msg("%s/%s: a file of the old log is still there (below %" PRId64 ")", pd,
                     de->d_name, from);
        logs += strcmp(de->d_name + 20, ".log") == 0;
    }
    closedir(d);
    free(pd);
    assert_true(logs >= 1);
}

static void expect_empty_at(rt_engine *e, int64_t at)
{
    int64_t start = -1, end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    if (start != at || end != at)
        fail_msg("after a restart at %" PRId64 ": log start %" PRId64 ", log end %" PRId64, at,
                 start, end);
    expect_end_for(e, 2, -1, -1); /* no epochs: the next replica append brings them */
}

/* Batch by batch from `from` to `to`, both engines' replica fetches return the same bytes. */
static void expect_same_from(rt_engine *a, rt_engine *b, int64_t from, int64_t to)
{
    int batches = 0;
    for (int64_t at = from; at < to; batches++) {
        rt_fetch *fa = NULL, *fb = NULL;
        assert_int_equal(rt_fetch_start(a, TOPIC, 0, at, 1, RT_READ_REPLICA, &fa), 0);
        assert_int_equal(rt_fetch_start(b, TOPIC, 0, at, 1, RT_READ_REPLICA, &fb), 0);
        const struct rt_fetch_view *va = rt_fetch_get(fa), *vb = rt_fetch_get(fb);
        assert_true(va->size_bytes >= RT_BATCH_HEADER_BYTES);
        assert_true(vb->size_bytes >= RT_BATCH_HEADER_BYTES);
        size_t size = 12 + (size_t)be32_of(va->data + 8); /* the first batch */
        assert_true(size <= va->size_bytes && size <= vb->size_bytes);
        if (memcmp(va->data, vb->data, size) != 0)
            fail_msg("the batches at %" PRId64 " differ", at);
        int64_t next = (int64_t)be64_of(va->data) + (int32_t)be32_of(va->data + 23) + 1;
        rt_fetch_release(fa);
        rt_fetch_release(fb);
        assert_true(next > at);
        at = next;
    }
    assert_true(batches > 0);
}

/* RL7: a follower that lacks what its leader deleted restarts empty at the leader's log start,
 * keeps that across a reopen, and then takes the leader's batches: both are identical above it. */
static void test_restart_at_the_leaders_log_start(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    rt_engine *a = p.e[0], *b = p.e[1];
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 1), 0);
    append_n(a, 4);
    replicate(a, b, 0,
              4 * RECORDS_PER_BATCH); /* the follower has the first 4 batches, then stops */
    assert_int_equal(rt_partition_set_leader_epoch(a, TOPIC, 0, 2), 0);
    int64_t end = append_n(a, 20);
    int64_t start = 12 * RECORDS_PER_BATCH, low = -1;
    assert_int_equal(rt_partition_delete_records(a, TOPIC, 0, start, &low), 0);
    assert_int_equal(low, start);
    /* The follower's fetch offset (its log end) is below the leader's log start. */
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(a, TOPIC, 0, 4 * RECORDS_PER_BATCH, 20000, RT_READ_REPLICA, &f),
                     RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_partition_restart_at(b, TOPIC, 0, -1), RT_E_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rt_partition_restart_at(b, TOPIC, 0, start), 0);
    expect_empty_at(b, start);
    expect_no_files_below(p.dir[1], start);
    assert_int_equal(rt_close(b), 0);
    b = p.e[1] = open_dir(p.dir[1]);
    expect_empty_at(b, start);
    replicate(a, b, start, end);
    expect_end_for(b, 2, end, 2);
    expect_same_from(a, b, start, end);
    int64_t rstart = -1;
    assert_int_equal(tu_read_back_offset_values(b, TOPIC, VALUE_BYTES, &rstart), end);
    assert_int_equal(rstart, start);
    pair_close(&p, false);
    tu_expect_verify_spotless(p.dir[1], "the restarted follower");
    b = p.e[1] = open_dir(p.dir[1]);
    a = p.e[0] = open_dir(p.dir[0]);
    expect_same_from(a, b, start, end);
    pair_close(&p, true);
}

/* RL6, RL7: refused on an internal partition this engine leads. */
static void test_restart_at_refused_on_a_led_internal_partition(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    rt_engine *e = open_dir(dir);
    assert_int_equal(rt_partition_become_leader(e, "__consumer_offsets", 0), 0);
    assert_int_equal(rt_partition_restart_at(e, "__consumer_offsets", 0, 100),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_partition_resign(e, "__consumer_offsets", 0), 0);
    assert_int_equal(rt_partition_restart_at(e, "__consumer_offsets", 0, 100), 0);
    int64_t end = -1;
    assert_int_equal(
        rt_list_offsets(e, "__consumer_offsets", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end),
        0);
    assert_int_equal(end, 100);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* RL7: a failure after the intent fails the write side; the reopen finishes the restart. */
static void test_restart_at_failure_after_intent_is_finished_by_reopen(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(dir, &o, &plan, &e), 0);
    sweep_prepare(e);
    /* The first segment log the restart unlinks (the oldest: `<0>.log`), after its intent. */
    struct io_fault_rule rule = {.mode = IO_FAULT_ONCE,
                                 .op = IO_OP_DIR_ENTRY,
                                 .nth = 1,
                                 .error = EIO,
                                 .path_contains = "/00000000000000000000.log"};
    assert_int_equal(io_fault_rule_add(&plan, &rule), 0);
    assert_int_equal(rt_partition_restart_at(e, TOPIC, 0, RESTART_AT), RT_E_IO_FAILED);
    if (!strstr(rt_error_detail(), "reopen finishes"))
        fail_msg("detail: %s", rt_error_detail());
    assert_int_equal(tu_append_offset_batch(e, TOPIC, RESTART_AT, 1, VALUE_BYTES, NULL),
                     RT_E_IO_FAILED);
    (void)rt_close(e);
    io_fault_plan_release(&plan);
    e = open_dir(dir);
    expect_empty_at(e, RESTART_AT);
    expect_no_files_below(dir, RESTART_AT);
    assert_int_equal(append_n(e, 1), RESTART_AT + RECORDS_PER_BATCH);
    assert_int_equal(rt_close(e), 0);
    tu_expect_verify_spotless(dir, "after the reopen finished it");
    tu_rmdir_free(dir);
}

static int restart_act(rt_engine *e)
{
    return rt_partition_restart_at(e, TOPIC, 0, RESTART_AT);
}

/* The old log whole, or the empty one at RESTART_AT that then takes appends. */
static void restart_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    int64_t start = -1, end = -1;
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(rt_list_offsets(e, TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end), 0);
    bool old = start == 0 && end == SWEEP_BATCHES * RECORDS_PER_BATCH;
    bool fresh = start == RESTART_AT && end == RESTART_AT;
    if (!old && !fresh)
        fail_msg("%s: log start %" PRId64 ", log end %" PRId64 ": neither the old log nor the "
                 "empty one at %d",
                 what, start, end, RESTART_AT);
    if (acked && !fresh)
        fail_msg("%s: an acknowledged restart came back as the old log", what);
    if (old) {
        int64_t s = -1;
        assert_int_equal(tu_read_back_offset_values(e, TOPIC, VALUE_BYTES, &s), end);
        expect_end_for(e, 2, end, 2);
        return;
    }
    expect_no_files_below(dir, RESTART_AT);
    expect_end_for(e, 2, -1, -1);
    assert_int_equal(append_n(e, 2), RESTART_AT + 2 * RECORDS_PER_BATCH);
}

static const struct tu_power_sweep restart_sweep = {.options = options,
                                                    .runs_max = 80,
                                                    .what = "of a restart-at",
                                                    .prepare = sweep_prepare,
                                                    .act = restart_act,
                                                    .check = restart_check,
                                                    .after = tu_expect_verify_spotless};

static void test_restart_at_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    tu_power_sweep(&restart_sweep, IO_OP_DIR_ENTRY);
}

static void test_restart_at_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    tu_power_sweep(&restart_sweep, IO_OP_DIR_FSYNC);
}

static void test_restart_at_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    tu_power_sweep(&restart_sweep, IO_OP_FDATASYNC_DIRECT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_end_offset_for_epoch_cases),
        cmocka_unit_test(test_replica_copy_is_byte_identical),
        cmocka_unit_test(test_truncate_repairs_a_divergence),
        cmocka_unit_test(test_replica_producer_state_fences_duplicates),
        cmocka_unit_test(test_replica_producer_window_across_truncation),
        cmocka_unit_test(test_replica_transactions_keep_the_lso),
        cmocka_unit_test(test_held_high_watermark_bounds_reads),
        cmocka_unit_test(test_damaged_checkpoint_is_rebuilt),
        cmocka_unit_test(test_truncate_failure_after_intent_is_finished_by_reopen),
        cmocka_unit_test(test_truncate_power_loss_at_every_directory_change),
        cmocka_unit_test(test_truncate_power_loss_at_every_direct_fdatasync),
        cmocka_unit_test(test_truncate_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_restart_at_the_leaders_log_start),
        cmocka_unit_test(test_restart_at_refused_on_a_led_internal_partition),
        cmocka_unit_test(test_restart_at_failure_after_intent_is_finished_by_reopen),
        cmocka_unit_test(test_restart_at_power_loss_at_every_directory_change),
        cmocka_unit_test(test_restart_at_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_restart_at_power_loss_at_every_direct_fdatasync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
