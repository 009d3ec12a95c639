/*
 * test_cluster_replica_state.c — the pure pieces of the leader side of ISR replication
 * (tools/kafka/cluster/replica_state.c), with an injected clock: a follower's last caught-up time
 * follows Kafka's Replica.updateFetchState (RS3: at the log end now, or at the log end as of its
 * previous fetch); the high watermark is the minimum log end over the ISR with the leader's own
 * counted as "its log end" (INT64_MAX, the engine clamps it) and held (-1) while an ISR member's
 * log end is unknown (RS1); the ISR plan drops a member not caught up for the lag time, never the
 * leader, and adds a replica whose log end reached the high watermark (never a fenced one), and
 * changes nothing when nothing is due (RS4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "tools/kafka/cluster/replica_state.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caught_up_time),
        cmocka_unit_test(test_high_watermark),
        cmocka_unit_test(test_plan_isr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
