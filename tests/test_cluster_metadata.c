/*
 * test_cluster_metadata.c — the cluster's metadata records and image (tools/kafka/cluster/
 * metadata_image.c; docs/format.md L), without raft: every record type encodes, decodes and
 * applies; each rule of L.2 refuses its bad bytes and each rule of L.3 its inapplicable record,
 * counted and changing nothing (MI2); the same records in the same order give the same digest
 * (MI1); a snapshot restores to the same image and a damaged one is refused (MI3); producer-id
 * blocks only grow (MI4); replica placement is Kafka's rack-unaware one (MI5, AdminUtilsTest's
 * vector); leaderships and ISR places of a fenced broker move to live ISR members, epochs
 * raised, and leaderless partitions get a leader back (MI6); the controller's broker sessions
 * (broker_sessions.c): heartbeat expiry names a silent unfenced broker once (BH2), a new term
 * gives everyone a full session (BH1), another incarnation's registration while the session
 * lives is a duplicate (BH3); CONFIG records set and remove one topic config each, only on a
 * topic the image holds (MI7); the partition epoch starts at 0, grows with every PARTITION
 * record and survives a snapshot (MI8); the controller's AlterPartition check refuses a stale
 * partition epoch with INVALID_UPDATE_VERSION and its record makes the sender's epoch stale
 * (alter_partition.h AP1); a BATCH record (a CreateTopics' TOPIC and PARTITION records in one
 * raft entry) applies whole or not at all, counts as one record, and its bad bytes are refused
 * whole (MI9).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/broker_sessions.h"
#include "tools/kafka/cluster/alter_partition.h"
#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/proto/api.h"

static const uint8_t T1[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t T2[16] = {2};

static int apply_ok(struct metadata_image *img, uint64_t index, const uint8_t *b, size_t n)
{
    assert_true(n > 0);
    return metadata_image_apply(img, index, b, n);
}

/* A small cluster's worth of records, applied at indexes 1.. */
static void build(struct metadata_image *img)
{
    uint8_t b[1024];
    uint64_t ix = 1;
    for (int32_t id = 1; id <= 3; id++)
        assert_int_equal(apply_ok(img, ix++, b,
                                  mi_encode_register_broker(b, sizeof(b), id, -1, "127.0.0.1",
                                                            (uint16_t)(9091 + id))),
                         0);
    assert_int_equal(apply_ok(img, ix++, b, mi_encode_fence_broker(b, sizeof(b), 2, true)), 0);
    const char *k[2] = {"cleanup.policy", "min.insync.replicas"}, *v[2] = {"compact", "2"};
    assert_int_equal(apply_ok(img, ix++, b, mi_encode_topic(b, sizeof(b), T1, "orders", k, v, 2)),
                     0);
    int32_t reps[3] = {1, 2, 3}, isr[2] = {1, 3};
    for (int32_t p = 0; p < 3; p++)
        assert_int_equal(
            apply_ok(img, ix++, b,
                     mi_encode_partition(b, sizeof(b), T1, p, reps, 3, 1 + p % 3, 0, isr, 2)),
            0);
    assert_int_equal(
        apply_ok(img, ix++, b, mi_encode_topic(b, sizeof(b), T2, "gone", NULL, NULL, 0)), 0);
    assert_int_equal(apply_ok(img, ix++, b, mi_encode_delete_topic(b, sizeof(b), T2)), 0);
    assert_int_equal(apply_ok(img, ix++, b, mi_encode_producer_ids(b, sizeof(b), 1, 1000)), 0);
}

static void test_records_build_the_image(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img);
    assert_int_equal(img.brokers_count, 3);
    const struct mi_broker *b2 = metadata_image_broker(&img, 2);
    assert_non_null(b2);
    assert_true(b2->fenced);
    assert_int_equal(b2->epoch, 2); /* epoch -1: the record's index */
    assert_int_equal(b2->port, 9093);
    const struct mi_topic *t = metadata_image_topic(&img, "orders");
    assert_non_null(t);
    assert_int_equal(t->partitions_count, 3);
    assert_int_equal(t->configs_count, 2);
    assert_string_equal(t->values[1], "2");
    assert_int_equal(t->partitions[1].leader, 2);
    assert_int_equal(t->partitions[1].isr_count, 2);
    assert_null(metadata_image_topic(&img, "gone"));
    assert_int_equal(img.next_producer_id, 1000);
    assert_int_equal(img.records_applied, 11);
    assert_int_equal(img.records_rejected, 0);
    assert_int_equal(img.last_index, 11);
    metadata_image_free(&img);
}

/* MI2, L.3: inapplicable records change nothing but the counters. MI4. */
static void test_rejections(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img);
    uint64_t before = metadata_image_digest(&img);
    uint8_t b[1024];
    int32_t reps[2] = {1, 2};
    uint8_t bufs[8][1024];
    size_t lens[8];
    int k = 0;
    lens[k] = mi_encode_fence_broker(bufs[k], 1024, 9, true); /* unknown broker */
    k++;
    lens[k] = mi_encode_partition(bufs[k], 1024, T2, 0, reps, 2, 1, 0, reps, 2); /* no topic */
    k++;
    lens[k] = mi_encode_partition(bufs[k], 1024, T1, 5, reps, 2, 1, 0, reps, 2); /* a gap */
    k++;
    lens[k] = mi_encode_producer_ids(bufs[k], 1024, 2, 1000); /* MI4: not above 1000 */
    k++;
    lens[k] = mi_encode_delete_topic(bufs[k], 1024, T2); /* deleted already */
    k++;
    lens[k] = mi_encode_topic(bufs[k], 1024, T2, "orders", NULL, NULL, 0); /* name taken */
    k++;
    for (int i = 0; i < k; i++) {
        assert_true(lens[i] > 0);
        assert_int_equal(metadata_image_apply(&img, 100 + (uint64_t)i, bufs[i], lens[i]),
                         MI_E_REJECTED);
    }
    assert_int_equal(img.records_rejected, (uint64_t)k);
    /* only the counters moved: a fresh image with the same records rejected alike is equal
     * (MI1), and the image content is the same as before */
    const struct mi_topic *t = metadata_image_topic(&img, "orders");
    assert_int_equal(t->partitions_count, 3);
    assert_int_equal(img.next_producer_id, 1000);
    assert_int_not_equal(metadata_image_digest(&img), before); /* counters are in the digest */

    /* a lower leader epoch is stale */
    int32_t r3[3] = {1, 2, 3};
    size_t n = mi_encode_partition(b, sizeof(b), T1, 0, r3, 3, 2, 5, r3, 3);
    assert_int_equal(metadata_image_apply(&img, 200, b, n), 0);
    n = mi_encode_partition(b, sizeof(b), T1, 0, r3, 3, 3, 4, r3, 3);
    assert_int_equal(metadata_image_apply(&img, 201, b, n), MI_E_REJECTED);
    assert_int_equal(t->partitions[0].leader, 2);
    assert_int_equal(t->partitions[0].leader_epoch, 5);
    metadata_image_free(&img);
}

/* L.2: bad bytes are MI_E_CORRUPT with a reason, never a crash (MI2). */
static void test_corrupt_records(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct mi_record r;
    char err[256];
    /* every truncation of every valid record is refused */
    struct metadata_image img;
    metadata_image_init(&img);
    const char *k[1] = {"a"}, *v[1] = {"b"};
    int32_t reps[2] = {1, 2};
    size_t lens[6];
    uint8_t recs[6][512];
    lens[0] = mi_encode_register_broker(recs[0], 512, 1, -1, "h", 1);
    lens[1] = mi_encode_fence_broker(recs[1], 512, 1, false);
    lens[2] = mi_encode_topic(recs[2], 512, T1, "t", k, v, 1);
    lens[3] = mi_encode_partition(recs[3], 512, T1, 0, reps, 2, 2, 0, reps, 1);
    lens[4] = mi_encode_delete_topic(recs[4], 512, T1);
    lens[5] = mi_encode_producer_ids(recs[5], 512, 1, 1);
    for (int i = 0; i < 6; i++) {
        assert_true(lens[i] > 0);
        assert_int_equal(mi_record_decode(recs[i], lens[i], &r, err, sizeof(err)), 0);
        for (size_t cut = 0; cut < lens[i]; cut++)
            assert_int_equal(mi_record_decode(recs[i], cut, &r, err, sizeof(err)), MI_E_CORRUPT);
        memcpy(b, recs[i], lens[i]);
        b[lens[i]] = 0;
        assert_int_equal(mi_record_decode(b, lens[i] + 1, &r, err, sizeof(err)), MI_E_CORRUPT);
        memcpy(b, recs[i], lens[i]);
        b[1] = 1; /* version */
        assert_int_equal(mi_record_decode(b, lens[i], &r, err, sizeof(err)), MI_E_CORRUPT);
        assert_int_equal(metadata_image_apply(&img, 1, b, lens[i]), MI_E_CORRUPT);
    }
    b[0] = 99;
    b[1] = 0;
    assert_int_equal(mi_record_decode(b, 2, &r, err, sizeof(err)), MI_E_CORRUPT);
    assert_non_null(strstr(err, "unknown record type"));
    /* the encoders refuse what the decoder would */
    assert_int_equal(mi_encode_topic(b, sizeof(b), T1, "bad name", NULL, NULL, 0), 0);
    uint8_t zero[16] = {0};
    assert_int_equal(mi_encode_topic(b, sizeof(b), zero, "t", NULL, NULL, 0), 0);
    assert_int_equal(mi_encode_partition(b, sizeof(b), T1, 0, reps, 2, 7, 0, reps, 1), 0);
    int32_t dup[2] = {1, 1};
    assert_int_equal(mi_encode_partition(b, sizeof(b), T1, 0, dup, 2, 1, 0, dup, 1), 0);
    const char *kk[2] = {"a", "a"};
    assert_int_equal(mi_encode_topic(b, sizeof(b), T1, "t", kk, kk, 2), 0);
    assert_int_equal(img.records_rejected, 6);
    assert_int_equal(img.brokers_count + img.topics_count, 0);
    metadata_image_free(&img);
}

/* MI3: snapshot → restore gives the same image; a damaged snapshot is refused, img unchanged. */
static void test_snapshot_restore(void **state)
{
    (void)state;
    struct metadata_image img, back, other;
    metadata_image_init(&img);
    metadata_image_init(&back);
    metadata_image_init(&other);
    build(&img);
    build(&other);
    assert_int_equal(metadata_image_digest(&img), metadata_image_digest(&other)); /* MI1 */
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(metadata_image_snapshot(&img, &buf, &len), 0);
    char err[256] = "";
    assert_int_equal(metadata_image_restore(&back, buf, len, err, sizeof(err)), 0);
    assert_int_equal(metadata_image_digest(&back), metadata_image_digest(&img));
    assert_int_equal(back.records_applied, img.records_applied);
    assert_int_equal(back.chain, img.chain);
    assert_true(metadata_image_broker(&back, 2)->fenced);
    assert_int_equal(metadata_image_broker(&back, 3)->epoch, 3);
    /* both go on alike */
    uint8_t b[64];
    size_t n = mi_encode_producer_ids(b, sizeof(b), 2, 2000);
    assert_int_equal(metadata_image_apply(&back, 50, b, n), 0);
    assert_int_equal(metadata_image_apply(&img, 50, b, n), 0);
    assert_int_equal(metadata_image_digest(&back), metadata_image_digest(&img));
    /* every flipped byte and every truncation is refused and leaves `other` as it was */
    uint64_t d = metadata_image_digest(&other);
    uint8_t *c = malloc(len);
    for (size_t i = 0; i < len; i++) {
        memcpy(c, buf, len);
        c[i] ^= 0x40;
        assert_int_equal(metadata_image_restore(&other, c, len, err, sizeof(err)), MI_E_CORRUPT);
        assert_int_equal(metadata_image_restore(&other, buf, i, err, sizeof(err)), MI_E_CORRUPT);
    }
    assert_int_equal(metadata_image_digest(&other), d);
    free(c);
    free(buf);
    metadata_image_free(&img);
    metadata_image_free(&back);
    metadata_image_free(&other);
}

/* MI5: Kafka's AdminUtilsTest.testReplicaAssignment, brokers 0..4, fixed start index 0. */
static void test_placement(void **state)
{
    (void)state;
    const int32_t brokers[5] = {0, 1, 2, 3, 4};
    const int32_t want[10][3] = {{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
                                 {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}};
    int32_t out[50];
    assert_int_equal(mi_place_replicas(brokers, 5, 10, 3, 0, 0, out), 0);
    for (int p = 0; p < 10; p++)
        for (int r = 0; r < 3; r++)
            assert_int_equal(out[p * 3 + r], want[p][r]);
    /* any start and shift: rf distinct brokers per partition, leaders spread evenly */
    for (unsigned start = 0; start < 7; start++) {
        assert_int_equal(mi_place_replicas(brokers, 5, 10, 5, start, start * 3, out), 0);
        int led[5] = {0};
        for (int p = 0; p < 10; p++) {
            led[out[p * 5]]++;
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < i; j++)
                    assert_int_not_equal(out[p * 5 + i], out[p * 5 + j]);
        }
        for (int b = 0; b < 5; b++)
            assert_int_equal(led[b], 2);
    }
    assert_int_equal(mi_place_replicas(brokers, 5, 1, 6, 0, 0, out), -EINVAL);
    assert_int_equal(mi_place_replicas(brokers, 5, 1, 0, 0, 0, out), -EINVAL);
    assert_int_equal(mi_place_replicas(brokers, 1, 3, 1, 0, 0, out), 0);
    /* CreatePartitions (controller_admin.h CA1): partitions from `from` on, as Kafka's
     * assignReplicasToBrokers with startPartitionId = from; before any wrap it continues the
     * vector above, and a wrap before `from` does not count (partition 6 after 5: shift 0). */
    assert_int_equal(mi_place_replicas_from(brokers, 5, 3, 4, 3, 0, 0, out), 0);
    for (int p = 0; p < 4; p++)
        for (int r = 0; r < 3; r++)
            assert_int_equal(out[p * 3 + r], want[3 + p][r]);
    assert_int_equal(mi_place_replicas_from(brokers, 5, 6, 1, 3, 0, 0, out), 0);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 3);
    assert_int_equal(mi_place_replicas_from(brokers, 5, 0, 10, 3, 0, 0, out), 0);
    for (int p = 0; p < 10; p++)
        assert_int_equal(out[p * 3], want[p][0]);
    assert_int_equal(mi_place_replicas_from(brokers, 2, 4, 1, 3, 0, 0, out), -EINVAL);
}

struct emitted {
    struct metadata_image *img;
    uint64_t ix;
    unsigned n;
};

static void apply_emitted(void *ctx, const uint8_t *rec, size_t len)
{
    struct emitted *e = ctx;
    assert_int_equal(metadata_image_apply(e->img, e->ix++, rec, len), 0);
    e->n++;
}

/* MI6 over build()'s image: brokers 1..3 (2 fenced), "orders" 0..2 led by 1, 2, 3, replicas
 * {1,2,3}, ISR {1,3}, epoch 0. */
static void test_plan_leaders(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img);
    uint8_t b[256];
    struct emitted e = {&img, 100, 0};
    assert_int_equal(mi_leaderships(&img, 1), 1); /* MN5 asks it: partition 0 */
    assert_int_equal(mi_leaderships(&img, 9), 0);
    assert_int_equal(mi_plan_leaders(&img, 2, apply_emitted, &e), 0); /* 2 is in no ISR */
    assert_int_equal(
        metadata_image_apply(&img, e.ix++, b, mi_encode_fence_broker(b, sizeof b, 3, true)), 0);
    assert_int_equal(mi_plan_leaders(&img, 3, apply_emitted, &e), 3);
    const struct mi_topic *t = metadata_image_topic(&img, "orders");
    const int32_t leaders[3] = {1, 2, 1};
    for (int p = 0; p < 3; p++) {
        assert_int_equal(t->partitions[p].leader, leaders[p]); /* 3's went to ISR member 1 */
        assert_int_equal(t->partitions[p].isr_count, 1);
        assert_int_equal(t->partitions[p].isr[0], 1);
        assert_int_equal(t->partitions[p].leader_epoch, 1);
    }
    assert_int_equal(mi_plan_leaders(&img, 3, apply_emitted, &e), 0); /* idempotent */
    /* the last ISR member fenced: it stays in the ISR, its partitions lose their leader */
    assert_int_equal(
        metadata_image_apply(&img, e.ix++, b, mi_encode_fence_broker(b, sizeof b, 1, true)), 0);
    assert_int_equal(mi_plan_leaders(&img, 1, apply_emitted, &e), 2);
    assert_int_equal(t->partitions[0].leader, -1);
    assert_int_equal(t->partitions[0].isr_count, 1);
    assert_int_equal(t->partitions[0].leader_epoch, 2);
    assert_int_equal(t->partitions[1].leader, 2); /* not 1's to move */
    assert_int_equal(t->partitions[2].leader, -1);
    assert_int_equal(mi_plan_leaders(&img, 1, apply_emitted, &e), 0);
    assert_int_equal(mi_plan_leaders(&img, -1, apply_emitted, &e), 0); /* nobody live */
    /* 1 registers again: the leaderless partitions are its */
    assert_int_equal(
        metadata_image_apply(&img, e.ix++, b,
                             mi_encode_register_broker(b, sizeof b, 1, -1, "127.0.0.1", 9092)),
        0);
    assert_int_equal(mi_plan_leaders(&img, -1, apply_emitted, &e), 2);
    assert_int_equal(t->partitions[0].leader, 1);
    assert_int_equal(t->partitions[0].leader_epoch, 3);
    assert_int_equal(t->partitions[2].leader, 1);
    assert_int_equal(img.records_rejected, 0);
    metadata_image_free(&img);
}

static void test_broker_sessions(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img); /* brokers 1..3, 2 fenced */
    struct broker_sessions bs;
    broker_sessions_init(&bs);
    const uint8_t inc_a[16] = {0xa}, inc_b[16] = {0xb};
    int32_t out[8];
    const unsigned session = 9000, retry = 1000;
    /* controller 1 in term 5 from t=0: nobody expires within a session (BH1) */
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 0, session, retry, out, 8), 0);
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 9000, session, retry, out, 8), 0);
    assert_true(broker_sessions_register(&bs, 3, inc_a, true, 5, 4000, session));
    /* 9001 ms of silence: 3 heard at 4000 is not due; nobody else is live but self (1) */
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 9001, session, retry, out, 8), 0);
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 13001, session, retry, out, 8), 1);
    assert_int_equal(out[0], 3);
    /* in flight: not again before retry_ms (BH2) */
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 13500, session, retry, out, 8), 0);
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 14001, session, retry, out, 8), 1);
    /* a heartbeat renews the session; a fenced broker's heartbeat asks for an unfence once */
    assert_false(broker_sessions_heartbeat(&bs, 3, false, 5, 14500, retry));
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 5, 23000, session, retry, out, 8), 0);
    assert_true(broker_sessions_heartbeat(&bs, 2, true, 5, 15000, retry));
    assert_false(broker_sessions_heartbeat(&bs, 2, true, 5, 15500, retry));
    assert_true(broker_sessions_heartbeat(&bs, 2, true, 5, 16000, retry));
    /* BH3: another incarnation of live 3 while its session lives is a duplicate */
    assert_false(broker_sessions_register(&bs, 3, inc_b, true, 5, 15000, session));
    assert_true(broker_sessions_register(&bs, 3, inc_a, true, 5, 15000, session));  /* same one */
    assert_true(broker_sessions_register(&bs, 3, inc_b, false, 5, 15100, session)); /* fenced */
    assert_false(broker_sessions_register(&bs, 3, inc_a, true, 5, 15200, session));
    assert_true(broker_sessions_register(&bs, 3, inc_a, true, 5, 24101, session)); /* expired */
    /* BH1: a new term starts every session over, from now */
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 6, 100000, session, retry, out, 8), 0);
    assert_int_equal(broker_sessions_expired(&bs, &img, 1, 6, 109001, session, retry, out, 8), 1);
    assert_int_equal(out[0], 3);
    /* the controller itself is never named */
    assert_int_equal(broker_sessions_expired(&bs, &img, 3, 7, 0, session, retry, out, 8), 0);
    assert_int_equal(broker_sessions_expired(&bs, &img, 3, 7, 9001, session, retry, out, 8), 1);
    assert_int_equal(out[0], 1);
    broker_sessions_free(&bs);
    metadata_image_free(&img);
}

static const char *config_of(const struct metadata_image *img, const char *topic, const char *key)
{
    const struct mi_topic *t = metadata_image_topic(img, topic);
    assert_non_null(t);
    for (unsigned i = 0; i < t->configs_count; i++)
        if (strcmp(t->keys[i], key) == 0)
            return t->values[i];
    return NULL;
}

/* MI7: CONFIG records. */
static void test_config_records(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img);
    uint8_t b[256];
    uint64_t ix = 100;
    assert_string_equal(config_of(&img, "orders", "min.insync.replicas"), "2");
    /* set a new key, replace one, remove one, remove one that is not there */
    size_t n = mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "orders", "retention.ms", "1000");
    struct mi_record r;
    assert_int_equal(mi_record_decode(b, n, &r, NULL, 0), 0);
    assert_int_equal(r.type, MI_CONFIG);
    assert_true(r.config.has_value);
    assert_int_equal(r.config.value.len, 4);
    assert_int_equal(apply_ok(&img, ix++, b, n), 0);
    assert_string_equal(config_of(&img, "orders", "retention.ms"), "1000");
    n = mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "orders", "min.insync.replicas", "3");
    assert_int_equal(apply_ok(&img, ix++, b, n), 0);
    assert_string_equal(config_of(&img, "orders", "min.insync.replicas"), "3");
    n = mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "orders", "cleanup.policy", NULL);
    assert_int_equal(mi_record_decode(b, n, &r, NULL, 0), 0);
    assert_false(r.config.has_value);
    assert_int_equal(apply_ok(&img, ix++, b, n), 0);
    assert_null(config_of(&img, "orders", "cleanup.policy"));
    assert_int_equal(metadata_image_topic(&img, "orders")->configs_count, 2);
    assert_int_equal(apply_ok(&img, ix++, b, n), 0); /* removing again: no change, no rejection */
    assert_int_equal(img.records_rejected, 0);
    /* an unknown topic, a BROKER resource: rejected, counted, nothing changed */
    n = mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "nosuch", "retention.ms", "1");
    assert_int_equal(apply_ok(&img, ix++, b, n), MI_E_REJECTED);
    n = mi_encode_config(b, sizeof b, 4, "1", "log.retention.ms", "1");
    assert_int_equal(apply_ok(&img, ix++, b, n), MI_E_REJECTED);
    assert_int_equal(img.records_rejected, 2);
    assert_int_equal(metadata_image_topic(&img, "orders")->configs_count, 2);
    assert_null(metadata_image_topic(&img, "nosuch"));
    /* corrupt bytes: has_value 2, an empty key, a bad topic name, trailing bytes */
    n = mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "orders", "k", "v");
    uint8_t c[256];
    memcpy(c, b, n);
    c[2 + 1 + 2 + 6 + 2 + 1] = 2; /* has_value */
    assert_int_equal(mi_record_decode(c, n, &r, NULL, 0), MI_E_CORRUPT);
    memcpy(c, b, n);
    c[n] = 0;
    assert_int_equal(mi_record_decode(c, n + 1, &r, NULL, 0), MI_E_CORRUPT);
    assert_int_equal(mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "orders", "", "v"), 0);
    assert_int_equal(mi_encode_config(b, sizeof b, MI_RESOURCE_TOPIC, "bad name", "k", "v"), 0);
    for (size_t k = 0; k < n; k++) /* every truncation */
        assert_int_equal(mi_record_decode(b, k, &r, NULL, 0), MI_E_CORRUPT);
    /* MI3: the configs survive a snapshot */
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(metadata_image_snapshot(&img, &buf, &len), 0);
    struct metadata_image back;
    metadata_image_init(&back);
    assert_int_equal(metadata_image_restore(&back, buf, len, NULL, 0), 0);
    assert_string_equal(config_of(&back, "orders", "retention.ms"), "1000");
    assert_string_equal(config_of(&back, "orders", "min.insync.replicas"), "3");
    assert_int_equal(metadata_image_digest(&back), metadata_image_digest(&img));
    free(buf);
    metadata_image_free(&back);
    metadata_image_free(&img);
}

/* MI8 and AP1: partition epochs and the AlterPartition check. */
static void test_partition_epoch(void **state)
{
    (void)state;
    struct metadata_image img;
    metadata_image_init(&img);
    build(&img); /* orders-0..2: replicas 1,2,3, ISR 1,3, leaders 1,2,3, broker 2 fenced */
    const struct mi_topic *t = metadata_image_topic(&img, "orders");
    assert_int_equal(t->partitions[0].partition_epoch, 0);
    uint8_t rec[64 + 8 * MI_REPLICAS_MAX];
    size_t len = 0;
    int32_t isr1[1] = {1}, isr13[2] = {1, 3};
    /* stale partition epoch: INVALID_UPDATE_VERSION, no record */
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 0, 0, 5, isr1, 1, rec, sizeof rec, &len),
        KAFKA_INVALID_UPDATE_VERSION);
    assert_int_equal(len, 0);
    /* Kafka's order: a stale leader epoch is FENCED_LEADER_EPOCH before the partition epoch */
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 0, 1, 5, isr1, 1, rec, sizeof rec, &len),
        KAFKA_FENCED_LEADER_EPOCH);
    assert_int_equal(
        alter_partition_check(&img, 3, "orders", 0, 0, 0, isr1, 1, rec, sizeof rec, &len),
        KAFKA_INVALID_REQUEST); /* not the leader */
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 7, 0, 0, isr1, 1, rec, sizeof rec, &len),
        KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    /* current: the record shrinks the ISR, and applying it raises the partition epoch */
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 0, 0, 0, isr1, 1, rec, sizeof rec, &len),
        KAFKA_NONE);
    assert_true(len > 0);
    assert_int_equal(metadata_image_apply(&img, 200, rec, len), 0);
    t = metadata_image_topic(&img, "orders");
    assert_int_equal(t->partitions[0].partition_epoch, 1);
    assert_int_equal(t->partitions[0].isr_count, 1);
    assert_int_equal(t->partitions[0].leader_epoch, 0); /* an ISR change keeps the leader epoch */
    assert_int_equal(t->partitions[1].partition_epoch, 0);
    /* the same request again (the sender's view is stale now): refused, nothing committed */
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 0, 0, 0, isr13, 2, rec, sizeof rec, &len),
        KAFKA_INVALID_UPDATE_VERSION);
    assert_int_equal(
        alter_partition_check(&img, 1, "orders", 0, 0, 1, isr13, 2, rec, sizeof rec, &len),
        KAFKA_NONE);
    assert_int_equal(metadata_image_apply(&img, 201, rec, len), 0);
    /* a leader change (MI6's records) raises it too */
    metadata_image_apply(&img, 202, rec,
                         mi_encode_partition(rec, sizeof rec, t->id, 0, t->partitions[0].replicas,
                                             3, 3, 1, isr13, 2));
    t = metadata_image_topic(&img, "orders");
    assert_int_equal(t->partitions[0].partition_epoch, 3);
    /* MI3, MI8: a snapshot keeps every partition epoch (version 1 records) */
    void *buf = NULL;
    size_t blen = 0;
    assert_int_equal(metadata_image_snapshot(&img, &buf, &blen), 0);
    struct metadata_image back;
    metadata_image_init(&back);
    assert_int_equal(metadata_image_restore(&back, buf, blen, NULL, 0), 0);
    assert_int_equal(metadata_image_topic(&back, "orders")->partitions[0].partition_epoch, 3);
    assert_int_equal(metadata_image_topic(&back, "orders")->partitions[1].partition_epoch, 0);
    assert_int_equal(metadata_image_digest(&back), metadata_image_digest(&img));
    free(buf);
    /* a version 1 record decodes with its epoch; a negative one is corrupt */
    size_t n = mi_encode_partition_v1(rec, sizeof rec, t->id, 1, t->partitions[1].replicas, 3, 2, 0,
                                      isr13, 2, 9);
    struct mi_record r;
    assert_int_equal(mi_record_decode(rec, n, &r, NULL, 0), 0);
    assert_int_equal(r.partition.partition_epoch, 9);
    assert_int_equal(mi_encode_partition_v1(rec, sizeof rec, t->id, 1, t->partitions[1].replicas, 3,
                                            2, 0, isr13, 2, -1),
                     0);
    rec[n - 4] = 0x80;
    assert_int_equal(mi_record_decode(rec, n, &r, NULL, 0), MI_E_CORRUPT);
    metadata_image_free(&back);
    metadata_image_free(&img);
}

/* The image's state without its counters (the snapshot's records, L.4 from byte 40 on, CRC
 * aside), so a rejection's "nothing changed" is comparable. */
static void expect_same_state(const struct metadata_image *a, const struct metadata_image *b)
{
    void *ba = NULL, *bb = NULL;
    size_t la = 0, lb = 0;
    assert_int_equal(metadata_image_snapshot(a, &ba, &la), 0);
    assert_int_equal(metadata_image_snapshot(b, &bb, &lb), 0);
    assert_int_equal(la, lb);
    assert_memory_equal((uint8_t *)ba + 40, (uint8_t *)bb + 40, la - 44);
    free(ba);
    free(bb);
}

/* A CreateTopics as one BATCH: TOPIC `id` "name" then PARTITION 0..n-1 (skipping `skip`, -1
 * none, to make a gap the image rejects). */
static void create_batch(struct mi_batch *bt, const uint8_t id[16], const char *name, int32_t n,
                         int32_t skip)
{
    uint8_t b[512];
    int32_t reps[2] = {1, 3};
    assert_int_equal(mi_batch_add(bt, b, mi_encode_topic(b, sizeof(b), id, name, NULL, NULL, 0)),
                     0);
    for (int32_t p = 0; p < n; p++)
        if (p != skip)
            assert_int_equal(
                mi_batch_add(bt, b,
                             mi_encode_partition(b, sizeof(b), id, p, reps, 2, 1, 0, reps, 2)),
                0);
}

/* MI9: all or nothing, one record in the counters, refused whole when any part is bad. */
static void test_batch_records(void **state)
{
    (void)state;
    static const uint8_t T3[16] = {3}, T4[16] = {4};
    struct metadata_image img, twin;
    metadata_image_init(&img);
    metadata_image_init(&twin);
    build(&img);
    build(&twin);
    /* A whole create: the topic and its 4 partitions, one record applied. */
    struct mi_batch bt = {0};
    create_batch(&bt, T3, "made", 4, -1);
    assert_int_equal(bt.count, 5);
    uint64_t applied = img.records_applied;
    assert_int_equal(metadata_image_apply(&img, 100, bt.buf, bt.len), 0);
    assert_int_equal(img.records_applied, applied + 1);
    const struct mi_topic *t = metadata_image_topic(&img, "made");
    assert_non_null(t);
    assert_int_equal(t->partitions_count, 4);
    assert_int_equal(img.last_index, 100);
    /* MI1: the same BATCH gives the same image elsewhere; MI3: it survives a snapshot. */
    assert_int_equal(metadata_image_apply(&twin, 100, bt.buf, bt.len), 0);
    assert_int_equal(metadata_image_digest(&img), metadata_image_digest(&twin));
    void *snap = NULL;
    size_t snap_len = 0;
    assert_int_equal(metadata_image_snapshot(&img, &snap, &snap_len), 0);
    struct metadata_image back;
    metadata_image_init(&back);
    assert_int_equal(metadata_image_restore(&back, snap, snap_len, NULL, 0), 0);
    assert_int_equal(metadata_image_digest(&back), metadata_image_digest(&img));
    free(snap);
    metadata_image_free(&back);
    /* Half a create (its last PARTITION does not apply: a gap) is nothing of it. */
    mi_batch_free(&bt);
    create_batch(&bt, T4, "half", 3, 1);
    uint64_t rejected = img.records_rejected;
    assert_int_equal(metadata_image_apply(&img, 101, bt.buf, bt.len), MI_E_REJECTED);
    assert_int_equal(img.records_rejected, rejected + 1);
    assert_null(metadata_image_topic(&img, "half"));
    expect_same_state(&img, &twin);
    /* A BATCH that re-creates an existing topic's partition 0 with a lower epoch: rejected
     * after its first records applied to the copy; the image keeps "made" as it was. */
    mi_batch_free(&bt);
    uint8_t b[512];
    int32_t reps[2] = {1, 3};
    assert_int_equal(
        mi_batch_add(&bt, b, mi_encode_topic(b, sizeof(b), T4, "other", NULL, NULL, 0)), 0);
    assert_int_equal(
        mi_batch_add(&bt, b, mi_encode_partition(b, sizeof(b), T4, 0, reps, 2, 1, 0, reps, 2)), 0);
    assert_int_equal(
        mi_batch_add(&bt, b, mi_encode_topic(b, sizeof(b), T3, "renamed", NULL, NULL, 0)), 0);
    assert_int_equal(metadata_image_apply(&img, 102, bt.buf, bt.len), MI_E_REJECTED);
    assert_null(metadata_image_topic(&img, "other"));
    expect_same_state(&img, &twin);
    /* Corrupt BATCHes, refused whole: no record, a bad record inside, a nested BATCH, a type
     * other than TOPIC/PARTITION/CONFIG, a byte past the end, a count past the records. */
    mi_batch_free(&bt);
    create_batch(&bt, T4, "bad", 2, -1);
    struct mi_record r;
    char err[200];
    assert_int_equal(mi_record_decode(bt.buf, bt.len, &r, err, sizeof(err)), 0);
    assert_int_equal(r.batch.count, 3);
    uint8_t *c = malloc(bt.len + 64);
    memcpy(c, bt.buf, bt.len);
    c[2] = 0;
    c[3] = 0;
    assert_int_equal(mi_record_decode(c, bt.len, &r, err, sizeof(err)), MI_E_CORRUPT);
    c[3] = 4; /* four records announced, three there */
    assert_int_equal(mi_record_decode(c, bt.len, &r, err, sizeof(err)), MI_E_CORRUPT);
    memcpy(c, bt.buf, bt.len);
    c[bt.len] = 0;
    assert_int_equal(mi_record_decode(c, bt.len + 1, &r, err, sizeof(err)), MI_E_CORRUPT);
    for (size_t cut = 1; cut < bt.len; cut++)
        assert_int_equal(mi_record_decode(c, cut, &r, err, sizeof(err)), MI_E_CORRUPT);
    c[4 + 4 + 2 + 16] ^= 0xff; /* the TOPIC's name length: the inner record is corrupt */
    assert_int_equal(mi_record_decode(c, bt.len, &r, err, sizeof(err)), MI_E_CORRUPT);
    assert_int_equal(metadata_image_apply(&img, 103, c, bt.len), MI_E_CORRUPT);
    size_t n = mi_encode_fence_broker(b, sizeof(b), 1, false);
    /* mi_batch_add takes TOPIC, PARTITION, CONFIG only: write the others by hand. */
    uint8_t hand[64] = {MI_BATCH, 0, 0, 1, 0, 0, 0, (uint8_t)n};
    memcpy(hand + 8, b, n);
    assert_int_equal(mi_record_decode(hand, 8 + n, &r, err, sizeof(err)), MI_E_CORRUPT);
    assert_non_null(strstr(err, "TOPIC, PARTITION or CONFIG only"));
    memcpy(c, bt.buf, bt.len); /* a BATCH inside a BATCH */
    uint8_t outer[8] = {MI_BATCH,
                        0,
                        0,
                        1,
                        (uint8_t)(bt.len >> 24),
                        (uint8_t)(bt.len >> 16),
                        (uint8_t)(bt.len >> 8),
                        (uint8_t)bt.len};
    uint8_t *o = malloc(8 + bt.len);
    memcpy(o, outer, 8);
    memcpy(o + 8, bt.buf, bt.len);
    assert_int_equal(mi_record_decode(o, 8 + bt.len, &r, err, sizeof(err)), MI_E_CORRUPT);
    free(o);
    free(c);
    expect_same_state(&img, &twin);
    /* An entry's bound: records past MI_RECORD_BYTES_MAX are refused (-E2BIG), nothing added. */
    mi_batch_free(&bt);
    size_t big_len = 0;
    uint8_t *big = malloc(MI_RECORD_BYTES_MAX);
    const char *keys[200], *vals[200];
    char kbuf[200][8];
    static char value[4097];
    memset(value, 'v', 4096);
    for (int i = 0; i < 200; i++) {
        snprintf(kbuf[i], sizeof kbuf[i], "k%d", i);
        keys[i] = kbuf[i];
        vals[i] = value;
    }
    big_len = mi_encode_topic(big, MI_RECORD_BYTES_MAX, T4, "big", keys, vals, 200);
    assert_true(big_len > 800000);
    assert_int_equal(mi_batch_add(&bt, big, big_len), 0);
    assert_int_equal(mi_batch_add(&bt, big, big_len), -E2BIG);
    assert_int_equal(bt.count, 1);
    free(big);
    mi_batch_free(&bt);
    metadata_image_free(&img);
    metadata_image_free(&twin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_build_the_image),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_corrupt_records),
        cmocka_unit_test(test_snapshot_restore),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_plan_leaders),
        cmocka_unit_test(test_broker_sessions),
        cmocka_unit_test(test_config_records),
        cmocka_unit_test(test_partition_epoch),
        cmocka_unit_test(test_batch_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
