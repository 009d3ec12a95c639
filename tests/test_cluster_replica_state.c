/*
 * test_cluster_replica_state.c — the pure pieces of the leader side of ISR replication
 * (tools/kafka/cluster/replica_state.c), with an injected clock: a follower's last caught-up time
 * follows Kafka's Replica.updateFetchState (RS3: at the log end now, or at the log end as of its
 * previous fetch); the high watermark is the minimum log end over the ISR with the leader's own
 * counted as "its log end" (INT64_MAX, the engine clamps it) and held (-1) while an ISR member's
 * log end is unknown (RS1); the ISR plan drops a member not caught up for the lag time, never the
 * leader, and adds a replica whose log end reached the high watermark (never a fenced one), and
 * changes nothing when nothing is due (RS4); and, over a real engine and a fake controller, that
 * an AlterPartition refused with INVALID_UPDATE_VERSION is not sent again until the image's
 * partition epoch moves, then sent with the new epoch (RS6).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/proto/api.h"

static struct rs_follower fresh(int32_t id, int64_t now)
{
    return (struct rs_follower){
        .id = id, .leo = -1, .last_caught_up_ms = now, .last_fetch_leader_leo = -1};
}

static void test_caught_up_time(void **state)
{
    (void)state;
    struct rs_follower f = fresh(2, 0);
    /* behind the leader's log end (100), not at the end: not caught up */
    rs_follower_fetched(&f, 40, false, 100, 1000);
    assert_int_equal(f.leo, 40);
    assert_int_equal(f.last_caught_up_ms, 0);
    /* it now fetches from 100, the leader's log end at its previous fetch (which was at 1000):
     * caught up as of that previous fetch, even though the leader moved on to 150 */
    rs_follower_fetched(&f, 100, false, 150, 2000);
    assert_int_equal(f.last_caught_up_ms, 1000);
    assert_int_equal(f.leo, 100);
    /* at the end now: caught up now */
    rs_follower_fetched(&f, 150, true, 150, 3000);
    assert_int_equal(f.last_caught_up_ms, 3000);
    /* a fetch below what the leader had at its previous fetch moves nothing */
    rs_follower_fetched(&f, 120, false, 200, 4000);
    assert_int_equal(f.last_caught_up_ms, 3000);
    assert_int_equal(f.leo, 120);
}

static void test_high_watermark(void **state)
{
    (void)state;
    struct rs_follower f[2] = {fresh(2, 0), fresh(3, 0)};
    int32_t isr3[] = {1, 2, 3}, isr2[] = {1, 2}, isr1[] = {1};
    /* RS1: unknown members hold it */
    assert_int_equal(rs_high_watermark(isr3, 3, 1, f, 2), -1);
    f[0].leo = 10;
    assert_int_equal(rs_high_watermark(isr3, 3, 1, f, 2), -1);
    f[1].leo = 7;
    assert_int_equal(rs_high_watermark(isr3, 3, 1, f, 2), 7);
    /* a member out of the ISR does not count; the leader alone is its own log end */
    assert_int_equal(rs_high_watermark(isr2, 2, 1, f, 2), 10);
    assert_int_equal(rs_high_watermark(isr1, 1, 1, f, 2), INT64_MAX);
    /* an ISR member with no follower state (not a known replica) holds it too */
    int32_t odd[] = {1, 9};
    assert_int_equal(rs_high_watermark(odd, 2, 1, f, 2), -1);
}

static void test_plan_isr(void **state)
{
    (void)state;
    const int64_t lag = 3000;
    int32_t replicas[] = {1, 2, 3}, isr[] = {1, 2, 3}, out[MI_REPLICAS_MAX];
    struct rs_follower f[2] = {fresh(2, 0), fresh(3, 0)};
    f[0].leo = f[1].leo = 50;
    /* nothing due: the same ISR, same order */
    unsigned n = rs_plan_isr(isr, 3, replicas, 3, 1, f, 2, 50, 3000, lag, out);
    assert_int_equal(n, 3);
    assert_memory_equal(out, isr, sizeof isr);
    /* 3 not caught up for more than the lag: it leaves; 2 caught up recently stays */
    f[0].last_caught_up_ms = 2500;
    n = rs_plan_isr(isr, 3, replicas, 3, 1, f, 2, 50, 3001, lag, out);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    /* the leader never leaves, even with every follower lagging */
    n = rs_plan_isr(isr, 3, replicas, 3, 1, f, 2, 50, 99999, lag, out);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 1);
    /* expand: 3 outside the ISR whose log end reached the HW, caught up within the lag */
    int32_t small[] = {1, 2};
    f[1].leo = 49;
    f[1].last_caught_up_ms = 3000;
    n = rs_plan_isr(small, 2, replicas, 3, 1, f, 2, 50, 3000, lag, out);
    assert_int_equal(n, 2); /* 49 < HW 50: not yet */
    f[1].leo = 50;
    n = rs_plan_isr(small, 2, replicas, 3, 1, f, 2, 50, 3000, lag, out);
    assert_int_equal(n, 3);
    assert_int_equal(out[2], 3);
    /* a fenced (ineligible) replica is never proposed, caught up or not */
    f[1].ineligible = true;
    n = rs_plan_isr(small, 2, replicas, 3, 1, f, 2, 50, 3000, lag, out);
    assert_int_equal(n, 2);
    f[1].ineligible = false;
    /* an unknown HW (-1) never lets anyone in */
    n = rs_plan_isr(small, 2, replicas, 3, 1, f, 2, -1, 3000, lag, out);
    assert_int_equal(n, 2);
}

/* RS6: a fake node: an image under a lock, a controller that answers every AlterPartition 95. */
struct fake_node {
    pthread_mutex_t mu;
    struct metadata_image img;
    int calls;
    int32_t last_partition_epoch;
    unsigned last_isr_n;
};

static void fake_read(void *ctx, void (*fn)(void *fn_ctx, const struct metadata_image *img),
                      void *fn_ctx)
{
    struct fake_node *f = ctx;
    pthread_mutex_lock(&f->mu);
    fn(fn_ctx, &f->img);
    pthread_mutex_unlock(&f->mu);
}

static void fake_leader_hw(void *ctx, const char *topic, int32_t partition, int64_t hw)
{
    (void)ctx;
    (void)topic;
    (void)partition;
    (void)hw;
}

static int16_t fake_alter(void *ctx, const char *topic, int32_t partition, int32_t leader_epoch,
                          int32_t partition_epoch, const int32_t *isr, unsigned isr_n)
{
    (void)topic;
    (void)partition;
    (void)leader_epoch;
    (void)isr;
    struct fake_node *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    f->last_partition_epoch = partition_epoch;
    f->last_isr_n = isr_n;
    pthread_mutex_unlock(&f->mu);
    return KAFKA_INVALID_UPDATE_VERSION;
}

static int calls_of(struct fake_node *f, int32_t *pe)
{
    pthread_mutex_lock(&f->mu);
    int c = f->calls;
    if (pe)
        *pe = f->last_partition_epoch;
    pthread_mutex_unlock(&f->mu);
    return c;
}

static void fake_apply(struct fake_node *f, const uint8_t *b, size_t n)
{
    pthread_mutex_lock(&f->mu);
    assert_int_equal(metadata_image_apply(&f->img, f->img.last_index + 1, b, n), 0);
    pthread_mutex_unlock(&f->mu);
}

static void test_stale_partition_epoch_waits(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    tu_options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 1), 0);
    struct fake_node f = {.mu = PTHREAD_MUTEX_INITIALIZER};
    metadata_image_init(&f.img);
    uint8_t b[512];
    const uint8_t id[16] = {7};
    int32_t reps[2] = {1, 2};
    fake_apply(&f, b, mi_encode_register_broker(b, sizeof b, 1, -1, "127.0.0.1", 9092));
    fake_apply(&f, b, mi_encode_register_broker(b, sizeof b, 2, -1, "127.0.0.1", 9093));
    fake_apply(&f, b, mi_encode_topic(b, sizeof b, id, "t", NULL, NULL, 0));
    fake_apply(&f, b, mi_encode_partition(b, sizeof b, id, 0, reps, 2, 1, 0, reps, 2));
    struct rs_host host = {
        .ctx = &f, .read = fake_read, .leader_hw = fake_leader_hw, .alter_partition = fake_alter};
    struct replica_state *rs = NULL;
    /* follower 2 never fetches: after the 100 ms lag the leader proposes the ISR {1} */
    assert_int_equal(replica_state_start(&host, e, 1, 100, &rs), 0);
    for (int i = 0; i < 500 && calls_of(&f, NULL) == 0; i++)
        usleep(10000);
    int32_t pe = -1;
    assert_int_equal(calls_of(&f, &pe), 1);
    assert_int_equal(pe, 0);
    assert_int_equal(f.last_isr_n, 1);
    /* refused as stale: nothing more past the 2 s re-send interval while the image stands */
    usleep(2600 * 1000);
    assert_int_equal(calls_of(&f, NULL), 1);
    /* the image moves (another change of the partition: partition epoch 1): planned again */
    fake_apply(&f, b, mi_encode_partition(b, sizeof b, id, 0, reps, 2, 1, 0, reps, 2));
    replica_state_poke(rs);
    for (int i = 0; i < 500 && calls_of(&f, NULL) == 1; i++)
        usleep(10000);
    assert_int_equal(calls_of(&f, &pe), 2);
    assert_int_equal(pe, 1);
    replica_state_stop(rs);
    metadata_image_free(&f.img);
    rt_close(e);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caught_up_time),
        cmocka_unit_test(test_high_watermark),
        cmocka_unit_test(test_plan_isr),
        cmocka_unit_test(test_stale_partition_epoch_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
