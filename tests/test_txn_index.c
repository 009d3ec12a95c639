/*
 * test_txn_index.c — the aborted-transaction index (index/txn_index.c, docs/format.md §E):
 * Kafka's own TransactionIndexTest cases (collect with its early stop, truncate, the last-offset
 * rule, reopen and append), the exact bytes of an entry, every checker rule (X1-X8) at open and
 * in the pure checker, repair of a torn tail, chunk boundaries, and readers running against an
 * appender. Pure file tests: they run once, not once per io backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/test_util.h"
#include "index/txn_index.h"

/* test_util.c calls rt_options_init; until the engine defines it, this keeps the test linking.
 * A strong definition in libringtail wins. */
__attribute__((weak)) void rt_options_init(struct rt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
}

struct fixture {
    char *dir;
    char *path;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = tu_mkdtemp();
    f->path = tu_path("%s/%020d.txnindex", f->dir, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->path);
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

static struct txn_index_entry txn(int64_t pid, int64_t first, int64_t last, int64_t lso)
{
    struct txn_index_entry e = {pid, first, last, lso};
    return e;
}

static bool same(const struct txn_index_entry *a, const struct txn_index_entry *b)
{
    return a->producer_id == b->producer_id && a->first_offset == b->first_offset &&
           a->last_offset == b->last_offset && a->last_stable_offset == b->last_stable_offset;
}

/* Collects into an array. */
struct collected {
    struct txn_index_entry e[64];
    size_t n;
};

static int collect_cb(void *ctx, const struct txn_index_entry *e)
{
    struct collected *c = ctx;
    assert_true(c->n < 64);
    c->e[c->n++] = *e;
    return 0;
}

static void open_rw(struct txn_index *idx, const char *path, int64_t base)
{
    const char *why = NULL;
    uint32_t bad = 99;
    assert_int_equal(txn_index_open(idx, path, base, TXN_INDEX_WRITABLE, &why, &bad), 0);
    assert_null(why);
    assert_int_equal(bad, 0);
}

/* The four transactions of Kafka's TransactionIndexTest. */
static const struct txn_index_entry kafka4[] = {
    {0, 0, 10, 11},
    {1, 5, 15, 13},
    {2, 18, 35, 25},
    {3, 32, 50, 40},
};

static void append_all(struct txn_index *idx, const struct txn_index_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(txn_index_append(idx, &e[i]), 0);
}

static void expect_collect(const struct txn_index *idx, int64_t start, int64_t upper, size_t from,
                           size_t to, bool stop)
{
    struct collected c = {.n = 0};
    bool stopped = !stop;
    assert_int_equal(txn_index_collect(idx, start, upper, collect_cb, &c, &stopped), 0);
    assert_int_equal(c.n, to - from);
    for (size_t i = 0; i < c.n; i++)
        assert_true(same(&c.e[i], &kafka4[from + i]));
    assert_int_equal(stopped, stop);
}

/* Kafka TransactionIndexTest.testCollectAbortedTransactions, case for case. */
static void test_collect_kafka_cases(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    append_all(&idx, kafka4, 4);
    expect_collect(&idx, 0, 100, 0, 4, false);
    expect_collect(&idx, 0, 32, 0, 3, true);
    expect_collect(&idx, 0, 35, 0, 4, true);
    expect_collect(&idx, 10, 35, 0, 4, true);
    expect_collect(&idx, 11, 35, 1, 4, true);
    expect_collect(&idx, 20, 41, 2, 4, false);
    /* Empty ranges report nothing and stop. */
    expect_collect(&idx, 20, 20, 0, 0, true);
    expect_collect(&idx, 30, 20, 0, 0, true);
    /* Past the last entry: nothing, and no entry proves the caller may stop. */
    expect_collect(&idx, 51, 100, 0, 0, false);
    txn_index_close(&idx);
}

static int fail_on_second(void *ctx, const struct txn_index_entry *e)
{
    int *calls = ctx;
    (void)e;
    return ++*calls == 2 ? -ECANCELED : 0;
}

static void test_collect_callback_error(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    append_all(&idx, kafka4, 4);
    int calls = 0;
    bool stop = true;
    assert_int_equal(txn_index_collect(&idx, 0, 100, fail_on_second, &calls, &stop), -ECANCELED);
    assert_int_equal(calls, 2);
    assert_false(stop);
    txn_index_close(&idx);
}

/* Kafka TransactionIndexTest.testTruncate, and the file follows. */
static void test_truncate_kafka_case(void **state)
{
    struct fixture *f = *state;
    static const struct txn_index_entry t[] = {
        {0, 0, 10, 2}, {1, 5, 15, 16}, {2, 18, 35, 25}, {3, 32, 50, 40}};
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    append_all(&idx, t, 4);
    assert_int_equal(txn_index_truncate_to(&idx, 51), 0);
    assert_int_equal(txn_index_count(&idx), 4);
    assert_int_equal(tu_file_size(f->path), 4 * 34);
    assert_int_equal(txn_index_truncate_to(&idx, 50), 0);
    assert_int_equal(txn_index_count(&idx), 3);
    assert_int_equal(tu_file_size(f->path), 3 * 34);
    /* Appending after a truncation continues from the new end, with the new last offset. */
    struct txn_index_entry e = txn(9, 40, 45, 41);
    assert_int_equal(txn_index_append(&idx, &e), 0);
    assert_int_equal(tu_file_size(f->path), 4 * 34);
    assert_int_equal(txn_index_truncate_to(&idx, INT64_MIN), 0); /* reset */
    assert_int_equal(txn_index_count(&idx), 0);
    assert_int_equal(tu_file_size(f->path), 0);
    txn_index_close(&idx);
}

/* Kafka testLastOffsetMustIncrease / testLastOffsetCannotDecrease, and rules X3-X7 on append. */
static void test_append_rules(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 100);
    struct txn_index_entry ok = txn(1, 105, 115, 113);
    assert_int_equal(txn_index_append(&idx, &ok), 0);
    struct txn_index_entry bad[] = {
        txn(0, 100, 115, 111),  /* X6: equal last offset */
        txn(0, 100, 110, 111),  /* X6: decreasing */
        txn(-1, 116, 120, 117), /* X3 */
        txn(2, -1, 120, 117),   /* X4: negative first */
        txn(2, 121, 120, 117),  /* X4: first after last */
        txn(2, 116, 120, -1),   /* X7: negative LSO */
        txn(2, 116, 120, 122),  /* X7: LSO above last + 1 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(txn_index_append(&idx, &bad[i]), -EINVAL);
    assert_int_equal(txn_index_count(&idx), 1);
    assert_int_equal(tu_file_size(f->path), 34);
    /* Legal extremes: first == last (an empty transaction), LSO == last + 1, LSO below first. */
    struct txn_index_entry edge1 = txn(2, 120, 120, 121);
    struct txn_index_entry edge2 = txn(3, 125, 130, 3);
    assert_int_equal(txn_index_append(&idx, &edge1), 0);
    assert_int_equal(txn_index_append(&idx, &edge2), 0);
    txn_index_close(&idx);

    /* X5: an entry below the segment base is rejected. */
    char *other = tu_path("%s/other.txnindex", f->dir);
    open_rw(&idx, other, 100);
    struct txn_index_entry below = txn(1, 90, 99, 95);
    assert_int_equal(txn_index_append(&idx, &below), -EINVAL);
    txn_index_close(&idx);
    free(other);
}

/* The staged append the group-commit round uses: a staged entry is checked like an append
 * (against the one staged before it), invisible to readers and absent from the file until the
 * caller has written its bytes and commits; a drop forgets it and cuts the caller's write off. */
static void test_staged_append(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    struct txn_index_entry first = txn(1, 0, 10, 11);
    assert_int_equal(txn_index_append(&idx, &first), 0);
    struct txn_index_entry a = txn(2, 11, 20, 21), b = txn(3, 15, 30, 31);
    uint8_t bytes_a[34], bytes_b[34];
    uint64_t off_a = 0, off_b = 0;
    assert_int_equal(txn_index_stage(&idx, &a, bytes_a, &off_a), 0);
    assert_int_equal(off_a, 34);
    struct txn_index_entry not_after_a = txn(4, 12, 20, 21); /* X6 against the staged entry */
    uint8_t junk[34];
    uint64_t off_junk = 0;
    assert_int_equal(txn_index_stage(&idx, &not_after_a, junk, &off_junk), -EINVAL);
    assert_int_equal(txn_index_stage(&idx, &b, bytes_b, &off_b), 0);
    assert_int_equal(off_b, 68);
    assert_int_equal(txn_index_count(&idx), 1); /* readers see only the published entry */
    assert_int_equal(tu_file_size(f->path), 34);
    /* The caller writes them where it was told, then commits. */
    assert_int_equal(pwrite(idx.fd, bytes_a, 34, (off_t)off_a), 34);
    assert_int_equal(pwrite(idx.fd, bytes_b, 34, (off_t)off_b), 34);
    txn_index_commit_staged(&idx);
    assert_int_equal(txn_index_count(&idx), 3);
    struct txn_index_entry got;
    txn_index_get(&idx, 2, &got);
    assert_int_equal(got.producer_id, 3);
    assert_int_equal(got.last_offset, 30);
    /* A dropped entry: the caller's write landed, the file is cut back to whole published
     * entries, and the next append takes its place. */
    struct txn_index_entry c = txn(5, 31, 40, 41);
    uint8_t bytes_c[34];
    uint64_t off_c = 0;
    assert_int_equal(txn_index_stage(&idx, &c, bytes_c, &off_c), 0);
    assert_int_equal(pwrite(idx.fd, bytes_c, 34, (off_t)off_c), 34);
    txn_index_drop_staged(&idx);
    assert_int_equal(txn_index_count(&idx), 3);
    assert_int_equal(tu_file_size(f->path), 3 * 34);
    struct txn_index_entry d = txn(6, 35, 45, 46);
    assert_int_equal(txn_index_append(&idx, &d), 0);
    txn_index_close(&idx);
    /* What is on disk is exactly the committed entries and the last append. */
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0, NULL, NULL), 0);
    assert_int_equal(txn_index_count(&idx), 4);
    txn_index_get(&idx, 3, &got);
    assert_int_equal(got.producer_id, 6);
    txn_index_close(&idx);
}

/* AbortedTxn's layout (Kafka testAbortedTxnSerde values), byte for byte. */
static void test_exact_bytes(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    struct txn_index_entry e = txn(983493, 137, 299, 200);
    assert_int_equal(txn_index_append(&idx, &e), 0);
    assert_int_equal(txn_index_sync(&idx), 0);
    txn_index_close(&idx);
    static const uint8_t want[34] = {
        0x00, 0x00,                                     /* version 0 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x01, 0xc5, /* producerId 983493 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x89, /* firstOffset 137 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2b, /* lastOffset 299 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc8, /* lastStableOffset 200 */
    };
    size_t len = 0;
    uint8_t *got = tu_read_file(f->path, &len);
    assert_int_equal(len, 34);
    assert_memory_equal(got, want, 34);
    free(got);
    uint8_t enc[34];
    txn_index_entry_encode(enc, &e);
    assert_memory_equal(enc, want, 34);
}

/* Kafka testPositionSetCorrectlyWhenOpened: reopen, append, everything is there. */
static void test_reopen_and_append(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    append_all(&idx, kafka4, 4);
    txn_index_close(&idx);
    txn_index_close(&idx); /* twice is fine */

    open_rw(&idx, f->path, 0);
    assert_int_equal(txn_index_count(&idx), 4);
    struct txn_index_entry more = txn(3, 50, 60, 55);
    assert_int_equal(txn_index_append(&idx, &more), 0);
    txn_index_close(&idx);

    const char *why = "x";
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0, &why, NULL), 0);
    assert_null(why);
    assert_int_equal(txn_index_count(&idx), 5);
    for (uint32_t i = 0; i < 4; i++) {
        struct txn_index_entry e;
        txn_index_get(&idx, i, &e);
        assert_true(same(&e, &kafka4[i]));
    }
    struct txn_index_entry e;
    txn_index_get(&idx, 4, &e);
    assert_true(same(&e, &more));
    assert_int_equal(txn_index_append(&idx, &more), -EROFS);
    assert_int_equal(txn_index_sync(&idx), 0);
    /* A read-only truncation only hides entries. */
    assert_int_equal(txn_index_truncate_to(&idx, 15), 0);
    assert_int_equal(txn_index_count(&idx), 1);
    assert_int_equal(tu_file_size(f->path), 5 * 34);
    txn_index_close(&idx);
}

static void test_missing_file(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    /* Read-only over a missing file: empty (Kafka creates the file lazily). */
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0, NULL, NULL), 0);
    assert_int_equal(txn_index_count(&idx), 0);
    bool stop = true;
    struct collected c = {.n = 0};
    assert_int_equal(txn_index_collect(&idx, 0, 10, collect_cb, &c, &stop), 0);
    assert_int_equal(c.n, 0);
    assert_false(stop);
    txn_index_close(&idx);
    assert_false(fs_exists_for_test(f->path));
    /* Writable creates it, empty. */
    open_rw(&idx, f->path, 0);
    assert_true(fs_exists_for_test(f->path));
    assert_int_equal(tu_file_size(f->path), 0);
    txn_index_close(&idx);
    /* Bad arguments. */
    assert_int_equal(txn_index_open(&idx, f->path, -1, 0, NULL, NULL), -EINVAL);
    assert_int_equal(txn_index_open(&idx, f->path, 0, TXN_INDEX_REPAIR, NULL, NULL), -EINVAL);
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0x80, NULL, NULL), -EINVAL);
    txn_index_close(&idx);
}

/* Encodes entries back to back. */
static size_t encode_all(uint8_t *buf, const struct txn_index_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        txn_index_entry_encode(buf + 34 * i, &e[i]);
    return 34 * n;
}

static void expect_bad(const uint8_t *buf, size_t len, int64_t base, uint32_t bad_entry,
                       const char *why_prefix)
{
    const char *why = NULL;
    uint32_t bad = 12345;
    assert_int_equal(txn_index_check(buf, len, base, &why, &bad), -EBADMSG);
    assert_non_null(why);
    assert_int_equal(strncmp(why, why_prefix, strlen(why_prefix)), 0);
    assert_int_equal(bad, bad_entry);
    /* The prefix before the bad entry is valid (for whole entries). */
    if (len % 34 == 0)
        assert_int_equal(txn_index_check(buf, (size_t)bad_entry * 34, base, NULL, NULL), 0);
}

/* X1-X8 in the pure checker. */
static void test_check_rules(void **state)
{
    (void)state;
    uint8_t buf[34 * 8];
    size_t len = encode_all(buf, kafka4, 4);
    const char *why = "x";
    uint32_t bad = 7;
    assert_int_equal(txn_index_check(buf, len, 0, &why, &bad), 0);
    assert_null(why);
    assert_int_equal(bad, 0);
    assert_int_equal(txn_index_check(buf, 0, 0, NULL, NULL), 0);
    assert_int_equal(txn_index_check(NULL, 0, 0, NULL, NULL), 0);

    expect_bad(buf, len - 1, 0, 3, "size is not a multiple");            /* X1 */
    expect_bad(buf, len, 11, 0, "last offset below the segment's base"); /* X5 */

    struct {
        struct txn_index_entry e;
        const char *why;
    } bad_second[] = {
        {{-1, 11, 12, 12}, "negative producer id"},                   /* X3 */
        {{1, -5, 12, 12}, "negative first offset"},                   /* X4 */
        {{1, 13, 12, 12}, "first offset after last offset"},          /* X4 */
        {{1, 5, 10, 11}, "last offset not increasing"},               /* X6 */
        {{1, 5, 9, 10}, "last offset not increasing"},                /* X6 */
        {{1, 5, 12, -1}, "negative last stable offset"},              /* X7 */
        {{1, 5, 12, 14}, "last stable offset above last offset + 1"}, /* X7 */
    };
    for (size_t i = 0; i < sizeof(bad_second) / sizeof(bad_second[0]); i++) {
        struct txn_index_entry two[2] = {kafka4[0], bad_second[i].e};
        size_t n = encode_all(buf, two, 2);
        expect_bad(buf, n, 0, 1, bad_second[i].why);
    }
    /* X2: version 1 (Kafka reads versions above 0 as an error), and a nonzero high byte. */
    len = encode_all(buf, kafka4, 4);
    buf[2 * 34 + 1] = 1;
    expect_bad(buf, len, 0, 2, "unknown entry version");
    len = encode_all(buf, kafka4, 4);
    buf[3 * 34] = 0x80;
    expect_bad(buf, len, 0, 3, "unknown entry version");
    /* X8: a zero entry after the first. */
    len = encode_all(buf, kafka4, 2);
    memset(buf + len, 0, 34);
    expect_bad(buf, len + 34, 0, 2, "zero entry");
    /* ... but an all-zero first entry is a legal transaction (pid 0 aborted at offset 0). */
    memset(buf, 0, 34);
    assert_int_equal(txn_index_check(buf, 34, 0, NULL, NULL), 0);
}

/* Damage found at open: -EBADMSG, or with REPAIR the file is cut to its valid prefix. */
static void test_open_damage_and_repair(void **state)
{
    struct fixture *f = *state;
    uint8_t buf[34 * 4 + 20];
    size_t len = encode_all(buf, kafka4, 4);
    /* A torn append: 20 bytes of a fifth entry. */
    memset(buf + len, 0xab, 20);
    tu_write_file(f->path, buf, len + 20);
    struct txn_index idx = TXN_INDEX_INIT;
    const char *why = NULL;
    uint32_t bad = 0;
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0, &why, &bad), -EBADMSG);
    assert_non_null(why);
    assert_non_null(strstr(why, "partial entry"));
    assert_int_equal(bad, 4);
    assert_int_equal(idx.fd, -1);
    txn_index_close(&idx);
    assert_int_equal(txn_index_open(&idx, f->path, 0, TXN_INDEX_WRITABLE, &why, &bad), -EBADMSG);
    assert_int_equal(tu_file_size(f->path), len + 20); /* untouched without REPAIR */
    assert_int_equal(
        txn_index_open(&idx, f->path, 0, TXN_INDEX_WRITABLE | TXN_INDEX_REPAIR, &why, &bad), 0);
    assert_non_null(why);
    assert_int_equal(bad, 4);
    assert_int_equal(txn_index_count(&idx), 4);
    assert_int_equal(tu_file_size(f->path), len);
    struct txn_index_entry more = txn(3, 50, 60, 55);
    assert_int_equal(txn_index_append(&idx, &more), 0);
    txn_index_close(&idx);

    /* A bad entry in the middle (Kafka testSanityCheck: a base above the entries). */
    len = encode_all(buf, kafka4, 4);
    tu_write_file(f->path, buf, len);
    assert_int_equal(txn_index_open(&idx, f->path, 100, 0, &why, &bad), -EBADMSG);
    assert_int_equal(bad, 0);
    assert_int_equal(
        txn_index_open(&idx, f->path, 12, TXN_INDEX_WRITABLE | TXN_INDEX_REPAIR, &why, &bad), 0);
    assert_int_equal(bad, 0); /* the first entry (last offset 10) is below base 12 */
    assert_int_equal(txn_index_count(&idx), 0);
    assert_int_equal(tu_file_size(f->path), 0);
    txn_index_close(&idx);
}

/* Many entries: chunk boundaries (16, 48, 112, ...) and the binary search in collect. */
static void test_many_entries(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++) {
        /* Transaction i: offsets [10i, 10i + 5], LSO 10i + 6 (nothing else open). */
        struct txn_index_entry e =
            txn(i, 10 * (int64_t)i, 10 * (int64_t)i + 5, 10 * (int64_t)i + 6);
        assert_int_equal(txn_index_append(&idx, &e), 0);
    }
    txn_index_close(&idx);
    assert_int_equal(txn_index_open(&idx, f->path, 0, 0, NULL, NULL), 0);
    assert_int_equal(txn_index_count(&idx), n);
    for (uint32_t i = 0; i < n; i++) {
        struct txn_index_entry e;
        txn_index_get(&idx, i, &e);
        assert_int_equal(e.producer_id, i);
        assert_int_equal(e.last_offset, 10 * (int64_t)i + 5);
    }
    /* [4003, 4031): transactions 400 (ends 4005), 401, 402, 403 (starts 4030); 403's LSO 4036
     * >= 4031 stops the scan. */
    struct collected c = {.n = 0};
    bool stop = false;
    assert_int_equal(txn_index_collect(&idx, 4003, 4031, collect_cb, &c, &stop), 0);
    assert_int_equal(c.n, 4);
    assert_int_equal(c.e[0].producer_id, 400);
    assert_int_equal(c.e[3].producer_id, 403);
    assert_true(stop);
    txn_index_close(&idx);
}

/* Readers against one appender: every collect sees a prefix of complete entries. */
struct race {
    struct txn_index *idx;
    _Atomic bool done;
    uint32_t n;
};

static int check_entry_cb(void *ctx, const struct txn_index_entry *e)
{
    (void)ctx;
    int64_t i = e->producer_id;
    if (e->first_offset != 10 * i || e->last_offset != 10 * i + 5 ||
        e->last_stable_offset != 10 * i + 6)
        return -EBADMSG;
    return 0;
}

static void *reader(void *arg)
{
    struct race *r = arg;
    uint64_t errors = 0;
    while (!atomic_load(&r->done)) {
        uint32_t seen = txn_index_count(r->idx);
        bool stop;
        if (txn_index_collect(r->idx, 0, INT64_MAX, check_entry_cb, NULL, &stop) != 0)
            errors++;
        if (txn_index_count(r->idx) < seen)
            errors++;
        if (seen > 0) {
            struct txn_index_entry e;
            txn_index_get(r->idx, seen - 1, &e);
            if (check_entry_cb(NULL, &e) != 0)
                errors++;
        }
    }
    return (void *)(uintptr_t)errors;
}

static void test_concurrent_readers(void **state)
{
    struct fixture *f = *state;
    struct txn_index idx = TXN_INDEX_INIT;
    open_rw(&idx, f->path, 0);
    struct race r = {.idx = &idx, .n = 3000};
    atomic_init(&r.done, false);
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_create(&th[t], NULL, reader, &r), 0);
    for (uint32_t i = 0; i < r.n; i++) {
        struct txn_index_entry e =
            txn(i, 10 * (int64_t)i, 10 * (int64_t)i + 5, 10 * (int64_t)i + 6);
        assert_int_equal(txn_index_append(&idx, &e), 0);
    }
    atomic_store(&r.done, true);
    for (int t = 0; t < 2; t++) {
        void *errors;
        assert_int_equal(pthread_join(th[t], &errors), 0);
        assert_int_equal((uintptr_t)errors, 0);
    }
    assert_int_equal(txn_index_count(&idx), r.n);
    txn_index_close(&idx);
    assert_int_equal(tu_file_size(f->path), (size_t)r.n * 34);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collect_kafka_cases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_callback_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_kafka_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staged_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_and_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test(test_check_rules),
        cmocka_unit_test_setup_teardown(test_open_damage_and_repair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_readers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
