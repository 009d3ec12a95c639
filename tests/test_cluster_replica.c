/*
 * test_cluster_replica.c — the follower side's pieces that run without a cluster
 * (tools/kafka/cluster/replica_fetcher.c, hw_checkpoint.c; docs/format.md M): the truncation
 * decision of the leader-epoch protocol in each of Kafka's cases (RF2); whole batches cut from a
 * fetch response's tail (RF3); the replication-offset-checkpoint's exact text, its parser's
 * refusals naming the line (HC1), its durable store and a missing file read as empty (HC2, HC3);
 * and, over a real engine, that a followed partition's first high watermark is its checkpointed
 * one rather than its log end (RF1), that a held led partition's moves to the log end only once
 * the metadata is current and keeps following it (RF5), that one first seen led with current
 * metadata is left unheld, and that a stop writes the checkpoint.
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
#include <unistd.h>

#include "helpers/test_util.h"
#include "tools/kafka/cluster/hw_checkpoint.h"
#include "tools/kafka/cluster/replica_fetcher.h"

/* RF2: Kafka's getOffsetTruncationState, case by case. */
static void test_truncation_decide(void **state)
{
    (void)state;
    int64_t to;
    int32_t next;
    /* the leader has no epochs: truncate to the high watermark */
    assert_true(rf_truncation_decide(-1, -1, 40, 55, -1, -1, &to, &next));
    assert_int_equal(to, 40);
    /* the same epoch on both sides: the smaller end */
    assert_true(rf_truncation_decide(3, 50, 40, 55, 3, 53, &to, &next));
    assert_int_equal(to, 50);
    assert_true(rf_truncation_decide(3, 60, 40, 55, 3, 53, &to, &next));
    assert_int_equal(to, 53);
    /* never past the follower's own log end */
    assert_true(rf_truncation_decide(3, 90, 40, 55, 3, 90, &to, &next));
    assert_int_equal(to, 55);
    /* the follower does not know the leader's answer epoch: min(leader end, log end) */
    assert_true(rf_truncation_decide(2, 48, 40, 55, -1, -1, &to, &next));
    assert_int_equal(to, 48);
    /* the leader answered an epoch the follower holds only up to an older one: truncate to the
     * follower's end of that older epoch and ask again for it */
    assert_false(rf_truncation_decide(4, 70, 40, 55, 2, 45, &to, &next));
    assert_int_equal(to, 45);
    assert_int_equal(next, 2);
}

static void put_batch(uint8_t *p, uint32_t total)
{
    memset(p, 0, total);
    uint32_t len = total - 12;
    p[8] = (uint8_t)(len >> 24);
    p[9] = (uint8_t)(len >> 16);
    p[10] = (uint8_t)(len >> 8);
    p[11] = (uint8_t)len;
}

/* RF3: only whole batches; a partial or nonsensical tail is left for the next fetch. */
static void test_whole_batches(void **state)
{
    (void)state;
    uint8_t buf[400];
    put_batch(buf, 100);
    put_batch(buf + 100, 150);
    put_batch(buf + 250, 150);
    assert_int_equal(rf_whole_batches(buf, 400), 400);
    assert_int_equal(rf_whole_batches(buf, 399), 250); /* the third is cut short */
    assert_int_equal(rf_whole_batches(buf, 260), 250); /* a header only */
    assert_int_equal(rf_whole_batches(buf, 5), 0);
    buf[100 + 11] = 10; /* a length below a batch header's */
    buf[100 + 8] = buf[100 + 9] = buf[100 + 10] = 0;
    assert_int_equal(rf_whole_batches(buf, 400), 100);
}

/* HC1: the exact text, round trip, and each refusal naming its line. */
static void test_checkpoint_text(void **state)
{
    (void)state;
    struct hw_checkpoint c = {0};
    assert_int_equal(hw_checkpoint_add(&c, "orders", 0, 42), 0);
    assert_int_equal(hw_checkpoint_add(&c, "a.b_c-d", 7, 0), 0);
    assert_int_equal(hw_checkpoint_add(&c, "", 0, 1), -EINVAL);
    char *buf;
    size_t len;
    assert_int_equal(hw_checkpoint_format(&c, &buf, &len), 0);
    const char *want = "0\n2\norders 0 42\na.b_c-d 7 0\n";
    assert_int_equal(len, strlen(want));
    assert_memory_equal(buf, want, len);
    struct hw_checkpoint back;
    size_t bad = 99;
    assert_int_equal(hw_checkpoint_parse(buf, len, &back, &bad), 0);
    assert_int_equal(bad, 0);
    assert_int_equal(back.count, 2);
    assert_int_equal(hw_checkpoint_get(&back, "orders", 0), 42);
    assert_int_equal(hw_checkpoint_get(&back, "a.b_c-d", 7), 0);
    assert_int_equal(hw_checkpoint_get(&back, "orders", 1), -1);
    hw_checkpoint_free(&back);
    free(buf);
    hw_checkpoint_free(&c);
    static const struct {
        const char *text;
        size_t line;
    } refused[] = {
        {"", 1},
        {"1\n0\n", 1},           /* another version */
        {"0\n", 2},              /* no count */
        {"0\n01\nt 0 1\n", 2},   /* a leading zero */
        {"0\n2\nt 0 1\n", 4},    /* fewer lines than counted */
        {"0\n1\nt 0 1\nx\n", 4}, /* bytes after the last line */
        {"0\n1\nt 0 1", 3},      /* no final newline */
        {"0\n1\nt  0 1\n", 3},   /* two spaces */
        {"0\n1\nt 0 -1\n", 3},   /* a sign */
        {"0\n1\nt/x 0 1\n", 3},  /* not a topic name */
        {"0\n1\n.. 0 1\n", 3},
        {"0\n1\nt 2147483648 1\n", 3}, /* partition past i32 */
        {"0\n1\nt 0 9223372036854775808\n", 3},
        {"0\n1\nt 0 1 \n", 3},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct hw_checkpoint x;
        bad = 0;
        int rc = hw_checkpoint_parse(refused[i].text, strlen(refused[i].text), &x, &bad);
        if (rc != RT_E_CORRUPT || bad != refused[i].line)
            fail_msg("case %zu (%s): rc %d line %zu, want line %zu", i, refused[i].text, rc, bad,
                     refused[i].line);
        assert_null(x.entries);
    }
}

/* HC2, HC3: a missing file is empty; store then load gives the entries back, no temp left. */
static void test_checkpoint_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct hw_checkpoint c;
    size_t bad;
    assert_int_equal(hw_checkpoint_load(dir, &c, &bad), 0);
    assert_int_equal(c.count, 0);
    assert_int_equal(hw_checkpoint_add(&c, "t", 1, 9), 0);
    assert_int_equal(hw_checkpoint_store(dir, &c), 0);
    hw_checkpoint_free(&c);
    assert_int_equal(hw_checkpoint_load(dir, &c, &bad), 0);
    assert_int_equal(hw_checkpoint_get(&c, "t", 1), 9);
    hw_checkpoint_free(&c);
    char *tmp = tu_path("%s/%s.tmp", dir, HW_CHECKPOINT_FILE);
    FILE *f = fopen(tmp, "r");
    assert_null(f);
    free(tmp);
    char *path = tu_path("%s/%s", dir, HW_CHECKPOINT_FILE);
    tu_write_file(path, (const uint8_t *)"0\n1\nt 1 x\n", 10);
    assert_int_equal(hw_checkpoint_load(dir, &c, &bad), RT_E_CORRUPT);
    assert_int_equal(bad, 3);
    free(path);
    tu_rmdir_free(dir);
}

static int64_t hw_now(rt_engine *e, uint32_t p)
{
    int64_t o = -1;
    assert_int_equal(rt_list_offsets(e, "t", p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &o), 0);
    return o;
}

/* RF1, RF5 over an engine: no peer is reachable (port 0), so nothing is fetched. */
static void test_first_hold_is_checkpointed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    tu_options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 2), 0);
    struct rt_record r[10];
    for (int i = 0; i < 10; i++)
        r[i] = (struct rt_record){.key_len = -1, .value = "v", .value_len = 1};
    for (uint32_t p = 0; p < 2; p++) /* one batch per record: every offset is a batch start */
        for (int i = 0; i < 10; i++)
            assert_int_equal(rt_append(e, "t", p, &r[i], 1, NULL), 0);
    assert_int_equal(hw_now(e, 0), 10); /* unheld: the log end */
    struct hw_checkpoint c = {0};
    assert_int_equal(hw_checkpoint_add(&c, "t", 0, 4), 0);
    assert_int_equal(hw_checkpoint_add(&c, "t", 1, 3), 0);
    assert_int_equal(hw_checkpoint_store(dir, &c), 0);
    hw_checkpoint_free(&c);
    struct replica_fetcher *rf = NULL;
    char err[256];
    assert_int_equal(replica_fetcher_start(e, 1, dir, 50, &rf, err, sizeof err), 0);
    /* partition 0 followed (leader 2, unreachable), partition 1 led by this node */
    struct rf_assignment a[2] = {{.topic = "t", .partition = 0, .leader = 2, .leader_epoch = 1},
                                 {.topic = "t", .partition = 1, .leader = 1, .leader_epoch = 1}};
    replica_fetcher_update(rf, a, 2, false);
    assert_int_equal(hw_now(e, 0), 4); /* RF1: the checkpoint's, not the log end */
    assert_int_equal(hw_now(e, 1), 3); /* RF1 for a led partition too */
    replica_fetcher_update(rf, a, 2, false);
    assert_int_equal(hw_now(e, 1), 3); /* RF5 waits for current metadata */
    replica_fetcher_update(rf, a, 2, true);
    assert_int_equal(hw_now(e, 1), 10); /* RF5: the leader's log end */
    assert_int_equal(hw_now(e, 0), 4);  /* a follower's stays until its leader says more */
    assert_int_equal(rt_append(e, "t", 1, &r[0], 1, NULL), 0); /* RF5 also runs on its own */
    for (int i = 0; i < 200 && hw_now(e, 1) != 11; i++)
        usleep(10000);
    assert_int_equal(hw_now(e, 1), 11);
    /* a partition first seen led with current metadata is not held: reads reach its log end */
    assert_int_equal(rt_topic_create(e, "u", 1), 0);
    assert_int_equal(rt_append(e, "u", 0, &r[0], 1, NULL), 0);
    struct rf_assignment b = {.topic = "u", .partition = 0, .leader = 1, .leader_epoch = 0};
    replica_fetcher_update(rf, &b, 1, true);
    assert_int_equal(rt_append(e, "u", 0, &r[1], 1, NULL), 0);
    int64_t uo = -1;
    assert_int_equal(rt_list_offsets(e, "u", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &uo), 0);
    assert_int_equal(uo, 2);
    replica_fetcher_stop(rf);
    size_t bad;
    assert_int_equal(hw_checkpoint_load(dir, &c, &bad), 0);
    assert_int_equal(hw_checkpoint_get(&c, "t", 0), 4);
    assert_int_equal(hw_checkpoint_get(&c, "t", 1), 11);
    hw_checkpoint_free(&c);
    /* a corrupt checkpoint refuses the start, naming the line */
    char *path = tu_path("%s/%s", dir, HW_CHECKPOINT_FILE);
    tu_write_file(path, (const uint8_t *)"0\n", 2);
    free(path);
    assert_int_equal(replica_fetcher_start(e, 1, dir, 50, &rf, err, sizeof err), RT_E_CORRUPT);
    assert_non_null(strstr(err, "line 2"));
    rt_close(e);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncation_decide),
        cmocka_unit_test(test_whole_batches),
        cmocka_unit_test(test_checkpoint_text),
        cmocka_unit_test(test_checkpoint_file),
        cmocka_unit_test(test_first_hold_is_checkpointed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
