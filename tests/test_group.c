/*
 * test_group.c — consumer-group offsets (engine/txn/group.c) and the consumer
 * (engine/client/consumer.c): the `__consumer_offsets` record codec against Kafka's byte layout,
 * group placement by Java's String.hashCode, plain and transactional commits (pending until the
 * marker, UNSTABLE while pending, stale epochs fenced), replay after a restart reproducing the live
 * state (GO4), checkpoint compaction (GO6), and the consumer over plain and transactional
 * partitions.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "engine.h"
#include "group.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "ringtail_test.h"

#include "group_codec.h"

struct fixture {
    char *dir;
    rt_engine *e;
    struct rt_options o;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = tu_mkdtemp();
    tu_options(&f->o);
    f->o.segment_size_bytes = 64 * 1024;
    f->o.batch_size_max_bytes = 16 * 1024;
    f->o.shard_count = 2;
    f->o.retention_ms = -1;
    f->o.producer_id_expiration_ms = INT64_MAX / 4;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->e)
        rt_close(f->e);
    tu_rmdir_free(f->dir);
    free(f);
    return 0;
}

static void open_engine(struct fixture *f)
{
    int rc = rt_open(f->dir, &f->o, &f->e);
    if (rc)
        fprintf(stderr, "rt_open: %s: %s\n", rt_strerror(rc), rt_error_detail());
    assert_int_equal(rc, 0);
}

static void close_engine(struct fixture *f)
{
    assert_int_equal(rt_close(f->e), 0);
    f->e = NULL;
}

static void reopen_engine(struct fixture *f)
{
    close_engine(f);
    open_engine(f);
}

/* The engine's group manager, creating `__consumer_offsets` if needed. */
static struct group_manager *groups(struct fixture *f)
{
    struct group_manager *g = NULL;
    if (txn_groups_create(engine_txn(f->e), &g) != 0)
        fprintf(stderr, "group manager: %s\n", rt_error_detail());
    assert_non_null(g);
    return g;
}

static int64_t fetched(struct group_manager *g, const char *group, const char *topic, uint32_t part,
                       bool stable, int *rc_out)
{
    int64_t off = -2;
    int rc = group_fetch(g, group, topic, part, stable, &off);
    if (rc_out)
        *rc_out = rc;
    else
        assert_int_equal(rc, 0);
    return off;
}

static void commit1(struct group_manager *g, const char *group, const char *topic, uint32_t part,
                    int64_t offset)
{
    struct rt_offset o = {.topic = topic, .partition = part, .offset = offset};
    int rc = group_commit(g, group, &o, 1);
    if (rc)
        fprintf(stderr, "group_commit: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
}

static int txn_commit1(struct group_manager *g, int64_t pid, int16_t epoch, const char *group,
                       const char *topic, uint32_t part, int64_t offset)
{
    struct rt_offset o = {.topic = topic, .partition = part, .offset = offset};
    return group_txn_commit_offsets(g, pid, epoch, group, &o, 1);
}

/* What the coordinator does after PrepareCommit/PrepareAbort: the marker into the group's
 * offsets partition, then group_txn_complete. */
static void finish_txn(struct fixture *f, struct group_manager *g, const char *group, int64_t pid,
                       int16_t epoch, bool commit)
{
    struct marker_spec m = {.topic = GROUP_OFFSETS_TOPIC,
                            .partition = group_partition_for(group),
                            .producer_id = pid,
                            .producer_epoch = epoch,
                            .coordinator_epoch = 0,
                            .type = commit ? CONTROL_COMMIT : CONTROL_ABORT};
    int rc = log_write_markers(engine_log(f->e), &m, 1);
    if (rc)
        fprintf(stderr, "marker: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    if (g)
        group_txn_complete(g, pid, commit);
}

static int64_t new_pid(struct fixture *f)
{
    int64_t pid = -1;
    assert_int_equal(txn_producer_allocate(engine_txn(f->e), &pid), 0);
    assert_true(pid >= 0);
    return pid;
}

/* ---- placement and codec ---------------------------------------------------------------- */

static void test_java_hash_vectors(void **state)
{
    (void)state;
    /* Values of java.lang.String.hashCode (UTF-16 code units, int arithmetic). */
    assert_int_equal(group_java_hash("", 0), 0);
    assert_int_equal(group_java_hash("a", 1), 97);
    assert_int_equal(group_java_hash("my-group", 8), -1906497762);
    assert_int_equal(group_java_hash("console-consumer-12345", 22), 158455506);
    assert_int_equal(group_java_hash("polygenelubricants", 18), INT32_MIN);
    assert_int_equal(group_java_hash("gr\xc3\xbc\xc3\x9f"
                                     "e",
                                     7),
                     98768023); /* "grüße" */
    /* U+1F600 is the surrogate pair D83D DE00 in UTF-16. */
    assert_int_equal(group_java_hash("\xf0\x9f\x98\x80", 4), 1772899);
    assert_int_equal(group_java_hash("group-\xf0\x9f\x98\x80-x", 12), -1358452452);
    /* Malformed UTF-8 hashes as Java's decoder reads it: U+FFFD for the bad byte. */
    assert_int_equal(group_java_hash("a\xff"
                                     "b",
                                     3),
                     2124838);
    assert_int_equal(group_java_hash("a\xef\xbf\xbd"
                                     "b",
                                     5),
                     2124838);

    /* Utils.abs(hash) % 4: Integer.MIN_VALUE maps to 0. */
    assert_int_equal(group_partition_for(""), 0);
    assert_int_equal(group_partition_for("a"), 1);
    assert_int_equal(group_partition_for("my-group"), 2);
    assert_int_equal(group_partition_for("console-consumer-12345"), 2);
    assert_int_equal(group_partition_for("polygenelubricants"), 0);
    assert_int_equal(group_partition_for("\xf0\x9f\x98\x80"), 3);
    assert_int_equal(group_partition_for("gr\xc3\xbc\xc3\x9f"
                                         "e"),
                     3);
    /* The public placement (a cluster's broker finds the coordinator with it) is the same, and
     * takes a length: no NUL needed, bytes past it ignored. */
    static const char *const names[] = {
        "", "a", "my-group", "polygenelubricants", "\xf0\x9f\x98\x80", "billing"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(rt_group_partition(names[i], strlen(names[i])),
                         group_partition_for(names[i]));
    assert_int_equal(rt_group_partition("my-groupXYZ", 8), 2);
    assert_int_equal(rt_group_partition(NULL, 0), 0);
    assert_int_equal(RT_GROUP_OFFSETS_PARTITIONS, GROUP_OFFSETS_PARTITIONS);
}

static void test_codec_kafka_layout(void **state)
{
    (void)state;
    /* Key v1 ("g", "t", 5) and value v3 (offset 42, leader epoch -1, metadata "m",
     * commitTimestamp 1000), byte for byte as Kafka's toVersionPrefixedBytes writes them. */
    static const uint8_t key_bytes[] = {0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 5};
    static const uint8_t value_bytes[] = {0,    3, 0, 0,   0, 0, 0, 0, 0, 42, 0xff, 0xff, 0xff,
                                          0xff, 0, 1, 'm', 0, 0, 0, 0, 0, 0,  0x03, 0xe8};
    struct group_offset_key k;
    const char *why = NULL;
    assert_int_equal(group_key_decode(key_bytes, sizeof(key_bytes), &k, &why), 0);
    assert_int_equal(k.version, 1);
    assert_int_equal(k.group_len, 1);
    assert_memory_equal(k.group, "g", 1);
    assert_int_equal(k.topic_len, 1);
    assert_memory_equal(k.topic, "t", 1);
    assert_int_equal(k.partition, 5);
    uint8_t out[64];
    size_t n = 0;
    assert_int_equal(group_key_encode(&k, out, sizeof(out), &n), 0);
    assert_int_equal(n, sizeof(key_bytes));
    assert_memory_equal(out, key_bytes, n);

    struct group_offset_value v;
    assert_int_equal(group_value_decode(value_bytes, sizeof(value_bytes), &v, &why), 0);
    assert_int_equal(v.version, 3);
    assert_int_equal(v.offset, 42);
    assert_int_equal(v.leader_epoch, -1);
    assert_int_equal(v.metadata_len, 1);
    assert_int_equal(v.commit_timestamp, 1000);
    assert_int_equal(group_value_encode(&v, out, sizeof(out), &n), 0);
    assert_int_equal(n, sizeof(value_bytes));
    assert_memory_equal(out, value_bytes, n);
    assert_int_equal(group_value_encode(&v, out, 10, &n), -ENOSPC);

    /* v1 carries expireTimestamp; v0 and v2 neither it nor the leader epoch. */
    static const uint8_t v1[] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0,
                                 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 11};
    assert_int_equal(group_value_decode(v1, sizeof(v1), &v, &why), 0);
    assert_int_equal(v.offset, 7);
    assert_int_equal(v.commit_timestamp, 9);
    assert_int_equal(v.expire_timestamp, 11);
    static const uint8_t v2[] = {0, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
    assert_int_equal(group_value_decode(v2, sizeof(v2), &v, &why), 0);
    assert_int_equal(v.leader_epoch, -1);
    assert_int_equal(group_value_encode(&v, out, sizeof(out), &n), 0);
    assert_memory_equal(out, v2, sizeof(v2));

    /* Damage. */
    assert_int_equal(group_key_decode(key_bytes, sizeof(key_bytes) - 1, &k, &why), RT_E_CORRUPT);
    uint8_t longer[sizeof(key_bytes) + 1];
    memcpy(longer, key_bytes, sizeof(key_bytes));
    longer[sizeof(key_bytes)] = 0;
    assert_int_equal(group_key_decode(longer, sizeof(longer), &k, &why), RT_E_CORRUPT);
    static const uint8_t neg[] = {0, 1, 0xff, 0xff, 0, 1, 't', 0, 0, 0, 5};
    assert_int_equal(group_key_decode(neg, sizeof(neg), &k, &why), RT_E_CORRUPT);
    static const uint8_t other_type[] = {0, 3, 0, 1, 'g'};
    assert_int_equal(group_key_decode(other_type, sizeof(other_type), &k, &why), RT_E_UNSUPPORTED);
    static const uint8_t meta_key[] = {0, 2, 0, 1, 'g'};
    assert_int_equal(group_key_decode(meta_key, sizeof(meta_key), &k, &why), 0);
    assert_int_equal(k.version, 2);
    uint8_t v4[sizeof(value_bytes)];
    memcpy(v4, value_bytes, sizeof(v4));
    v4[1] = 4; /* flexible: not read */
    assert_int_equal(group_value_decode(v4, sizeof(v4), &v, &why), RT_E_CORRUPT);
    assert_int_equal(group_value_decode(value_bytes, 3, &v, &why), RT_E_CORRUPT);
}

/* ---- plain commits ------------------------------------------------------------------------ */

static void test_plain_commit_fetch_and_restart(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    /* Before anything was committed: -1, through the public wrapper too. */
    int64_t off = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "g1", "t", 0, true, &off), 0);
    assert_int_equal(off, -1);
    struct group_manager *g = groups(f);
    struct rt_offset os[] = {{.topic = "t", .partition = 0, .offset = 10, .metadata = "meta"},
                             {.topic = "t", .partition = 1, .offset = 20},
                             {.topic = "u", .partition = 0, .offset = 30}};
    assert_int_equal(group_commit(g, "g1", os, 3), 0);
    assert_int_equal(fetched(g, "g1", "t", 0, true, NULL), 10);
    assert_int_equal(fetched(g, "g1", "t", 1, true, NULL), 20);
    assert_int_equal(fetched(g, "g1", "u", 0, false, NULL), 30);
    assert_int_equal(fetched(g, "g1", "u", 1, false, NULL), -1);
    assert_int_equal(fetched(g, "g2", "t", 0, false, NULL), -1);
    commit1(g, "g1", "t", 0, 11);
    assert_int_equal(fetched(g, "g1", "t", 0, true, NULL), 11);
    assert_int_equal(rt_group_commit_offsets(f->e, "g2", os, 1), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0); /* the public call needs the partition */
    assert_int_equal(rt_group_commit_offsets(f->e, "g2", os, 1), 0);
    assert_int_equal(rt_group_fetch_offsets(f->e, "g2", "t", 0, true, &off), 0);
    assert_int_equal(off, 10);

    /* Bad arguments change nothing. */
    struct rt_offset bad = {.topic = "t", .partition = 0, .offset = -5};
    assert_int_equal(group_commit(g, "g1", &bad, 1), RT_E_INVALID_ARGUMENT);
    bad = (struct rt_offset){.topic = "", .partition = 0, .offset = 5};
    assert_int_equal(group_commit(g, "g1", &bad, 1), RT_E_INVALID_ARGUMENT);
    bad = (struct rt_offset){.topic = "t", .partition = 0, .offset = 5};
    assert_int_equal(group_commit(g, "", &bad, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(group_commit(g, "bad\xff", &bad, 1), RT_E_INVALID_ARGUMENT);
    assert_int_equal(group_commit(g, "g1", &bad, 0), RT_E_INVALID_ARGUMENT);
    assert_int_equal(fetched(g, "g1", "t", 0, true, NULL), 11);

    /* GO4: a restart replays to the same state. */
    reopen_engine(f);
    g = txn_groups(engine_txn(f->e));
    assert_non_null(g);
    assert_int_equal(fetched(g, "g1", "t", 0, true, NULL), 11);
    assert_int_equal(fetched(g, "g1", "t", 1, true, NULL), 20);
    assert_int_equal(fetched(g, "g1", "u", 0, true, NULL), 30);
    assert_int_equal(fetched(g, "g2", "t", 0, true, NULL), 10);
    assert_int_equal(fetched(g, "g2", "t", 1, true, NULL), -1);
}

/* A3: the metadata a commit carries is answered by rt_group_fetch_offset, for plain and
 * transactional commits, after a restart too; rt_group_list_offsets and rt_group_list walk what
 * is committed (issue 20 item 5: OffsetFetch of a null topic array, Empty groups listed). */
struct walked {
    char what[8][160];
    int count;
};

static int walk_offset(void *ctx, const char *topic, uint32_t partition,
                       const struct rt_committed_offset *o)
{
    struct walked *w = ctx;
    assert_true(w->count < 8);
    snprintf(w->what[w->count++], sizeof(w->what[0]), "%.20s-%u@%" PRId64 ":%.10s", topic,
             partition, o->offset, o->metadata_len > 10 ? "bbb" : o->metadata);
    return 0;
}

static int walk_group(void *ctx, const char *group)
{
    struct walked *w = ctx;
    assert_true(w->count < 8);
    snprintf(w->what[w->count++], sizeof(w->what[0]), "%s", group);
    return 0;
}

static int walk_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_commit_metadata_fetched_and_listed(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct rt_committed_offset c;
    assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 0, true, &c), 0);
    assert_int_equal(c.offset, -1);
    assert_string_equal(c.metadata, "");
    struct walked w = {0};
    assert_int_equal(rt_group_list(f->e, walk_group, &w), 0); /* no offsets topic yet */
    assert_int_equal(w.count, 0);
    assert_int_equal(rt_topic_create(f->e, "t", 3), 0);
    char big[RT_OFFSET_METADATA_MAX_BYTES + 2];
    memset(big, 'b', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    struct rt_offset os[] = {{.topic = "t", .partition = 0, .offset = 10, .metadata = "m-0"},
                             {.topic = "t", .partition = 1, .offset = 20},
                             {.topic = "t", .partition = 2, .offset = 30, .metadata = big}};
    assert_int_equal(rt_group_commit_offsets(f->e, "mg", os, 3), RT_E_INVALID_ARGUMENT);
    big[RT_OFFSET_METADATA_MAX_BYTES] = 0; /* exactly the maximum */
    assert_int_equal(rt_group_commit_offsets(f->e, "mg", os, 3), 0);
    assert_int_equal(rt_group_commit_offsets(f->e, "other", os, 1), 0);
    int64_t pid = new_pid(f);
    struct group_manager *g = groups(f);
    struct rt_offset t = {.topic = "t", .partition = 1, .offset = 21, .metadata = "txn-m"};
    assert_int_equal(group_txn_commit_offsets(g, pid, 0, "mg", &t, 1), 0);
    assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 1, true, &c),
                     RT_E_UNSTABLE_OFFSET_COMMIT);
    assert_true(c.pending);
    assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 1, false, &c), 0);
    assert_true(c.pending);
    assert_int_equal(c.offset, 20);
    assert_string_equal(c.metadata, "");
    finish_txn(f, g, "mg", pid, 0, true);
    for (int round = 0; round < 2; round++) { /* live, then replayed (GO4) */
        assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 0, true, &c), 0);
        assert_int_equal(c.offset, 10);
        assert_string_equal(c.metadata, "m-0");
        assert_int_equal(c.metadata_len, 3);
        assert_true(c.commit_timestamp_ms > 0);
        assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 1, true, &c), 0);
        assert_int_equal(c.offset, 21);
        assert_string_equal(c.metadata, "txn-m");
        assert_false(c.pending);
        assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 2, true, &c), 0);
        assert_int_equal(c.metadata_len, RT_OFFSET_METADATA_MAX_BYTES);
        assert_memory_equal(c.metadata, big, RT_OFFSET_METADATA_MAX_BYTES);
        memset(&w, 0, sizeof(w));
        assert_int_equal(rt_group_list_offsets(f->e, "mg", walk_offset, &w), 0);
        assert_int_equal(w.count, 3);
        qsort(w.what, (size_t)w.count, sizeof(w.what[0]), walk_cmp);
        assert_string_equal(w.what[0], "t-0@10:m-0");
        assert_string_equal(w.what[1], "t-1@21:txn-m");
        assert_int_equal(strncmp(w.what[2], "t-2@30:bbb", 10), 0);
        memset(&w, 0, sizeof(w));
        assert_int_equal(rt_group_list(f->e, walk_group, &w), 0);
        assert_int_equal(w.count, 2);
        assert_string_equal(w.what[0], "mg");
        assert_string_equal(w.what[1], "other");
        reopen_engine(f);
    }
    assert_int_equal(rt_group_list(NULL, walk_group, &w), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_list_offsets(f->e, "mg", NULL, &w), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_fetch_offset(f->e, "mg", "t", 0, true, NULL), RT_E_INVALID_ARGUMENT);
}

/* KG10's storage (docs/format.md H.6): a group's membership as Kafka's GroupMetadataValue,
 * the latest per group kept, and replayed by a reopen. */
static int walk_meta(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct walked *w = ctx;
    assert_true(w->count < 8);
    char members[40] = "";
    for (size_t i = 0; i < md->members_count && i < 2; i++) {
        const struct rt_group_member *m = &md->members[i];
        size_t at = strlen(members);
        snprintf(members + at, sizeof(members) - at, "%.4s/%.4s/%.*s/%.*s/%d;", m->member_id,
                 m->group_instance_id ? m->group_instance_id : "-", (int)m->subscription_len,
                 (const char *)m->subscription, (int)m->assignment_len, (const char *)m->assignment,
                 (int)m->session_timeout_ms);
    }
    snprintf(w->what[w->count++], sizeof(w->what[0]), "%.8s %.8s %d %.6s %.4s %s", group,
             md->protocol_type, (int)md->generation, md->protocol ? md->protocol : "-",
             md->leader ? md->leader : "-", members);
    return 0;
}

static void test_group_metadata_stored_and_replayed(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct rt_group_member ms[] = {{.member_id = "m1",
                                    .client_id = "c1",
                                    .client_host = "",
                                    .rebalance_timeout_ms = 9000,
                                    .session_timeout_ms = 6000,
                                    .subscription = "s1",
                                    .subscription_len = 2,
                                    .assignment = "a1",
                                    .assignment_len = 2},
                                   {.member_id = "m2",
                                    .group_instance_id = "i2",
                                    .client_id = "c2",
                                    .client_host = "h",
                                    .session_timeout_ms = 7000}};
    struct rt_group_metadata md = {.protocol_type = "consumer",
                                   .generation = 3,
                                   .protocol = "range",
                                   .leader = "m1",
                                   .members = ms,
                                   .members_count = 2};
    assert_int_equal(rt_group_store_metadata(f->e, "sg", &md), 0);
    md.generation = 4; /* the latest record wins */
    assert_int_equal(rt_group_store_metadata(f->e, "sg", &md), 0);
    struct rt_group_metadata empty = {.protocol_type = "consumer", .generation = 7};
    assert_int_equal(rt_group_store_metadata(f->e, "eg", &empty), 0);
    struct rt_group_metadata bad = md;
    bad.protocol_type = NULL;
    assert_int_equal(rt_group_store_metadata(f->e, "sg", &bad), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_store_metadata(f->e, "", &md), RT_E_INVALID_ARGUMENT);
    for (int round = 0; round < 2; round++) { /* live, then replayed */
        struct walked w = {0};
        assert_int_equal(rt_group_list_metadata(f->e, walk_meta, &w), 0);
        assert_int_equal(w.count, 2);
        qsort(w.what, (size_t)w.count, sizeof(w.what[0]), walk_cmp);
        assert_string_equal(w.what[0], "eg consumer 7 - - ");
        assert_string_equal(w.what[1], "sg consumer 4 range m1 m1/-/s1/a1/6000;m2/i2///7000;");
        reopen_engine(f);
    }
    /* Offsets and metadata share the partitions without mixing. */
    struct walked w = {0};
    assert_int_equal(rt_group_list_offsets(f->e, "sg", walk_offset, &w), 0);
    assert_int_equal(w.count, 0);
    assert_int_equal(rt_group_list_metadata(f->e, NULL, &w), RT_E_INVALID_ARGUMENT);
}

/* ---- transactional commits ---------------------------------------------------------------- */

static void test_txn_offsets_pending_until_marker(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct group_manager *g = groups(f);
    commit1(g, "cg", "t", 0, 5);
    int64_t a = new_pid(f), b = new_pid(f);

    /* GO2: pending offsets are invisible to a committed read and make a stable read UNSTABLE. */
    assert_int_equal(txn_commit1(g, a, 0, "cg", "t", 0, 8), 0);
    assert_int_equal(txn_commit1(g, a, 0, "cg", "t", 0, 9), 0); /* replaces its own */
    assert_int_equal(txn_commit1(g, b, 0, "cg", "t", 1, 100), 0);
    int rc = 0;
    assert_int_equal(fetched(g, "cg", "t", 0, false, NULL), 5);
    fetched(g, "cg", "t", 0, true, &rc);
    assert_int_equal(rc, RT_E_UNSTABLE_OFFSET_COMMIT);
    int64_t off = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "cg", "t", 1, true, &off),
                     RT_E_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(fetched(g, "cg", "t", 1, false, NULL), -1);
    assert_int_equal(fetched(g, "cg", "t", 2, true, NULL), -1); /* other keys stay stable */

    /* COMMIT applies, ABORT drops. */
    finish_txn(f, g, "cg", a, 0, true);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 9);
    finish_txn(f, g, "cg", b, 0, false);
    assert_int_equal(fetched(g, "cg", "t", 1, true, NULL), -1);

    /* Completing a producer with nothing pending is harmless. */
    group_txn_complete(g, a, true);
    group_txn_complete(g, 999999, false);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 9);

    /* GO3: a plain commit written after a transactional one wins, whenever the marker comes. */
    assert_int_equal(txn_commit1(g, a, 1, "cg", "t", 0, 50), 0);
    commit1(g, "cg", "t", 0, 60);
    fetched(g, "cg", "t", 0, true, &rc);
    assert_int_equal(rc, RT_E_UNSTABLE_OFFSET_COMMIT);
    finish_txn(f, g, "cg", a, 1, true);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 60);

    reopen_engine(f);
    g = txn_groups(engine_txn(f->e));
    assert_non_null(g);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 60);
    assert_int_equal(fetched(g, "cg", "t", 1, true, NULL), -1);
}

static void test_stale_epoch_rejected(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct group_manager *g = groups(f);
    int64_t pid = new_pid(f);
    assert_int_equal(txn_commit1(g, pid, 3, "cg", "t", 0, 7), 0);
    /* A zombie with an older epoch, no marker in between: fenced by the partition. */
    assert_int_equal(txn_commit1(g, pid, 2, "cg", "t", 0, 1), RT_E_INVALID_PRODUCER_EPOCH);
    finish_txn(f, g, "cg", pid, 3, true);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 7);
    /* ... and still fenced after the transaction ended. */
    assert_int_equal(txn_commit1(g, pid, 1, "cg", "t", 0, 2), RT_E_INVALID_PRODUCER_EPOCH);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 7);
    assert_int_equal(group_txn_commit_offsets(g, -1, 0, "cg", NULL, 0), RT_E_INVALID_ARGUMENT);
}

/* Every key the replay test touches, compared stable and unstable between two managers. */
static void assert_same_state(struct group_manager *x, struct group_manager *y)
{
    static const char *grps[] = {"alpha", "beta", "gamma", "delta"};
    for (size_t i = 0; i < 4; i++) {
        for (uint32_t p = 0; p < 4; p++) {
            int rx = 0, ry = 0;
            assert_int_equal(fetched(x, grps[i], "t", p, false, NULL),
                             fetched(y, grps[i], "t", p, false, NULL));
            int64_t sx = fetched(x, grps[i], "t", p, true, &rx);
            int64_t sy = fetched(y, grps[i], "t", p, true, &ry);
            assert_int_equal(rx, ry);
            assert_int_equal(sx, sy);
        }
    }
}

static void test_replay_equals_live(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct group_manager *g = groups(f);
    int64_t committed = new_pid(f), aborted = new_pid(f), open = new_pid(f), late = new_pid(f);
    commit1(g, "alpha", "t", 0, 1);
    commit1(g, "beta", "t", 1, 2);
    assert_int_equal(txn_commit1(g, committed, 0, "alpha", "t", 0, 10), 0);
    assert_int_equal(txn_commit1(g, committed, 0, "beta", "t", 2, 11), 0);
    assert_int_equal(txn_commit1(g, aborted, 0, "alpha", "t", 1, 20), 0);
    assert_int_equal(txn_commit1(g, aborted, 0, "gamma", "t", 3, 21), 0);
    assert_int_equal(txn_commit1(g, open, 0, "beta", "t", 1, 30), 0);
    assert_int_equal(txn_commit1(g, open, 0, "delta", "t", 0, 31), 0);
    assert_int_equal(txn_commit1(g, late, 0, "gamma", "t", 0, 40), 0);
    commit1(g, "gamma", "t", 0, 41); /* after `late`'s record: wins over it (GO3) */
    finish_txn(f, g, "alpha", committed, 0, true);
    finish_txn(f, NULL, "beta", committed, 0, true); /* marker only: complete once below */
    group_txn_complete(g, committed, true);
    finish_txn(f, NULL, "alpha", aborted, 0, false);
    finish_txn(f, g, "gamma", aborted, 0, false);
    finish_txn(f, g, "gamma", late, 0, true);
    commit1(g, "delta", "t", 2, 50);

    assert_int_equal(fetched(g, "alpha", "t", 0, true, NULL), 10);
    assert_int_equal(fetched(g, "beta", "t", 2, true, NULL), 11);
    assert_int_equal(fetched(g, "alpha", "t", 1, true, NULL), -1);
    assert_int_equal(fetched(g, "gamma", "t", 3, true, NULL), -1);
    assert_int_equal(fetched(g, "gamma", "t", 0, true, NULL), 41);
    assert_int_equal(fetched(g, "beta", "t", 1, false, NULL), 2);
    int rc = 0;
    fetched(g, "beta", "t", 1, true, &rc);
    assert_int_equal(rc, RT_E_UNSTABLE_OFFSET_COMMIT);

    /* A second manager replaying the same log agrees with the live one. */
    struct group_manager *replayed = NULL;
    assert_int_equal(group_manager_open(engine_log(f->e), &replayed), 0);
    assert_same_state(g, replayed);
    group_manager_close(replayed);

    /* So does the engine's own after a restart; the open transaction stays pending until the
     * coordinator finishes it. */
    struct group_manager *before = NULL;
    assert_int_equal(group_manager_open(engine_log(f->e), &before), 0);
    reopen_engine(f);
    g = txn_groups(engine_txn(f->e));
    assert_non_null(g);
    assert_same_state(before, g);
    group_manager_close(before);
    fetched(g, "delta", "t", 0, true, &rc);
    assert_int_equal(rc, RT_E_UNSTABLE_OFFSET_COMMIT);
    finish_txn(f, NULL, "beta", open, 0, true);
    finish_txn(f, g, "delta", open, 0, true);
    assert_int_equal(fetched(g, "beta", "t", 1, true, NULL), 30);
    assert_int_equal(fetched(g, "delta", "t", 0, true, NULL), 31);
    assert_int_equal(fetched(g, "delta", "t", 2, true, NULL), 50);
}

static void test_tombstone_and_corrupt_records(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    struct group_manager *g = groups(f);
    commit1(g, "cg", "t", 0, 5);
    commit1(g, "cg", "t", 1, 6);
    uint32_t k = group_partition_for("cg");
    struct partition *p = log_partition(engine_log(f->e), GROUP_OFFSETS_TOPIC, k);
    assert_non_null(p);

    /* A tombstone for (cg, t, 0), as Kafka writes when offsets expire. */
    uint8_t key[64], buf[512];
    size_t key_len = 0, len = 0;
    struct group_offset_key gk = {.version = 1,
                                  .group = (const uint8_t *)"cg",
                                  .group_len = 2,
                                  .topic = (const uint8_t *)"t",
                                  .topic_len = 1,
                                  .partition = 0};
    assert_int_equal(group_key_encode(&gk, key, sizeof(key), &key_len), 0);
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, sizeof(buf), 0, -1, -1, -1), 0);
    struct rt_record r = {
        .key = key, .key_len = (int32_t)key_len, .value_len = -1, .timestamp_ms = 1};
    assert_int_equal(batch_builder_add(&b, &r), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(log_append_coordinator(engine_log(f->e), p, buf, len, NULL), 0);
    struct group_manager *replayed = NULL;
    assert_int_equal(group_manager_open(engine_log(f->e), &replayed), 0);
    assert_int_equal(fetched(replayed, "cg", "t", 0, true, NULL), -1);
    assert_int_equal(fetched(replayed, "cg", "t", 1, true, NULL), 6);
    group_manager_close(replayed);

    /* A record whose value does not parse: the replay names the file. */
    static const uint8_t junk[] = {0, 3, 1, 2};
    assert_int_equal(batch_builder_init(&b, buf, sizeof(buf), 0, -1, -1, -1), 0);
    r = (struct rt_record){.key = key,
                           .key_len = (int32_t)key_len,
                           .value = junk,
                           .value_len = sizeof(junk),
                           .timestamp_ms = 1};
    assert_int_equal(batch_builder_add(&b, &r), 0);
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    assert_int_equal(log_append_coordinator(engine_log(f->e), p, buf, len, NULL), 0);
    assert_int_equal(group_manager_open(engine_log(f->e), &replayed), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), ".log"));
    assert_null(replayed);
}

/* ---- compaction --------------------------------------------------------------------------- */

static int64_t offsets_log_start(struct fixture *f, uint32_t k)
{
    int64_t off = -1;
    assert_int_equal(rt_list_offsets(f->e, GROUP_OFFSETS_TOPIC, k, RT_OFFSET_EARLIEST,
                                     RT_READ_UNCOMMITTED, &off),
                     0);
    return off;
}

static void test_compaction_by_checkpoint(void **state)
{
    struct fixture *f = *state;
    f->o.segment_size_bytes = 4096;
    f->o.batch_size_max_bytes = 4096;
    open_engine(f);
    struct group_manager *g = groups(f);
    uint32_t k = group_partition_for("cg");
    int64_t pid = new_pid(f);
    commit1(g, "cg", "t", 0, 0);
    /* GO6: while a transaction has offsets pending in the partition nothing is dropped. */
    assert_int_equal(txn_commit1(g, pid, 0, "cg", "t", 1, 77), 0);
    for (int i = 1; i <= 200; i++)
        commit1(g, "cg", "t", 0, i);
    assert_int_equal(offsets_log_start(f, k), 0);
    finish_txn(f, g, "cg", pid, 0, true); /* complete: may compact right away */
    for (int i = 201; i <= 400; i++)
        commit1(g, "cg", "t", 0, i);
    int64_t start = offsets_log_start(f, k);
    assert_true(start > 0);
    int64_t hw = 0;
    assert_int_equal(
        rt_list_offsets(f->e, GROUP_OFFSETS_TOPIC, k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw),
        0);
    assert_true(hw - start < 200); /* far less than the 400 commits written */
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 400);
    assert_int_equal(fetched(g, "cg", "t", 1, true, NULL), 77);

    /* The compacted log replays to the same state, in a second manager and after a restart. */
    struct group_manager *replayed = NULL;
    assert_int_equal(group_manager_open(engine_log(f->e), &replayed), 0);
    assert_int_equal(fetched(replayed, "cg", "t", 0, true, NULL), 400);
    assert_int_equal(fetched(replayed, "cg", "t", 1, true, NULL), 77);
    group_manager_close(replayed);
    reopen_engine(f);
    g = txn_groups(engine_txn(f->e));
    assert_non_null(g);
    assert_int_equal(fetched(g, "cg", "t", 0, true, NULL), 400);
    assert_int_equal(fetched(g, "cg", "t", 1, true, NULL), 77);
    commit1(g, "cg", "t", 2, 3);
    assert_int_equal(fetched(g, "cg", "t", 2, true, NULL), 3);
}

/* ---- the consumer ------------------------------------------------------------------------- */

static void append_values(struct fixture *f, const char *topic, uint32_t part, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char v[32];
        snprintf(v, sizeof(v), "v%d", i);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = 1000};
        assert_int_equal(rt_append(f->e, topic, part, &r, 1, NULL), 0);
    }
}

static void test_consumer_plain(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    assert_int_equal(rt_topic_create(f->e, "t", 2), 0);
    append_values(f, "t", 0, 0, 5);
    append_values(f, "t", 1, 100, 5);
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    assert_int_equal(co.isolation, RT_READ_COMMITTED);
    assert_int_equal(co.fetch_max_bytes, 1u << 20);
    co.group = "cg";
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    uint32_t parts[] = {0, 1};
    assert_int_equal(rt_consumer_assign(c, "t", parts, 2), 0);
    uint32_t bad = 7;
    assert_int_equal(rt_consumer_assign(c, "t", &bad, 1), RT_E_UNKNOWN_TOPIC_OR_PARTITION);

    /* Round-robin over the two partitions, every record once, in order per partition. */
    int64_t next[2] = {0, 0};
    int seen[2] = {0, 0};
    uint32_t last = 99;
    for (int i = 0; i < 10; i++) {
        struct rt_record_view v;
        const char *topic = NULL;
        uint32_t p = 0;
        assert_int_equal(rt_consumer_poll(c, &v, &topic, &p, 1000), 0);
        assert_string_equal(topic, "t");
        assert_int_not_equal(p, last);
        last = p;
        assert_int_equal(v.offset, next[p]);
        next[p]++;
        char want[32];
        snprintf(want, sizeof(want), "v%d", (p ? 100 : 0) + seen[p]++);
        assert_int_equal(v.value_len, (int32_t)strlen(want));
        assert_memory_equal(v.value, want, strlen(want));
    }
    struct rt_record_view v;
    assert_int_equal(rt_consumer_poll(c, &v, NULL, NULL, 20), RT_E_END);
    int64_t pos = 0;
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), 0);
    assert_int_equal(pos, 5);
    assert_int_equal(rt_consumer_position(c, "t", 3, &pos), RT_E_INVALID_ARGUMENT);

    /* Commit, then seek back: positions move, the group's offsets do not. */
    assert_int_equal(rt_consumer_commit(c), 0);
    int64_t off = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "cg", "t", 1, true, &off), 0);
    assert_int_equal(off, 5);
    assert_int_equal(rt_consumer_seek(c, "t", 0, 2), 0);
    assert_int_equal(rt_consumer_poll(c, &v, NULL, &last, 1000), 0);
    assert_int_equal(last, 0);
    assert_int_equal(v.offset, 2);
    struct rt_offset ps[2];
    size_t n = 0;
    assert_int_equal(rt_consumer_positions(c, ps, 2, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ps[0].offset, 3);
    assert_int_equal(ps[1].offset, 5);
    assert_int_equal(rt_consumer_positions(c, ps, 1, &n), RT_E_BUFFER_TOO_SMALL);
    assert_int_equal(n, 1);
    assert_int_equal(rt_consumer_rewind_to_committed(c), 0);
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), 0);
    assert_int_equal(pos, 5);
    assert_int_equal(rt_consumer_seek(c, "t", 1, RT_OFFSET_EARLIEST), 0);
    assert_int_equal(rt_consumer_position(c, "t", 1, &pos), 0);
    assert_int_equal(pos, 0);

    /* New records arrive while polling waits. */
    append_values(f, "t", 0, 5, 1);
    assert_int_equal(rt_consumer_seek(c, "t", 1, RT_OFFSET_LATEST), 0);
    assert_int_equal(rt_consumer_poll(c, &v, NULL, &last, 1000), 0);
    assert_int_equal(last, 0);
    assert_int_equal(v.offset, 5);
    assert_int_equal(rt_consumer_close(c), 0);

    /* A second consumer of the group starts at the committed offsets. */
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    assert_int_equal(rt_consumer_assign(c, "t", parts, 2), 0);
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), 0);
    assert_int_equal(pos, 5);
    assert_int_equal(rt_consumer_poll(c, &v, NULL, &last, 1000), 0);
    assert_int_equal(v.offset, 5);
    assert_int_equal(rt_consumer_close(c), 0);

    /* Without a group: from the log start; commit is refused. */
    assert_int_equal(rt_consumer_open(f->e, NULL, &c), 0);
    assert_int_equal(rt_consumer_assign(c, "t", parts, 1), 0);
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), 0);
    assert_int_equal(pos, 0);
    assert_int_equal(rt_consumer_commit(c), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_consumer_close(c), 0);
}

/* A transactional batch of n records for (pid, epoch) at sequence seq on topic "tx" part 0. */
static int64_t txn_batch(struct fixture *f, int64_t pid, int16_t epoch, int32_t seq, int n,
                         const char *tag)
{
    uint8_t buf[2048];
    struct batch_builder b;
    assert_int_equal(
        batch_builder_init(&b, buf, sizeof(buf), BATCH_ATTR_TRANSACTIONAL, pid, epoch, seq), 0);
    for (int i = 0; i < n; i++) {
        char v[32];
        snprintf(v, sizeof(v), "%s%d", tag, i);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = 1000};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    int64_t base = -1;
    /* Raw transactional batches with no coordinator behind them: the partition's rules alone. */
    assert_int_equal(rt_txn_verify_set(f->e, false), 0);
    int rc = rt_append_batch(f->e, "tx", 0, buf, len, &base);
    if (rc)
        fprintf(stderr, "append: %s\n", rt_error_detail());
    assert_int_equal(rc, 0);
    return base;
}

static void data_marker(struct fixture *f, int64_t pid, int16_t epoch, bool commit)
{
    struct marker_spec m = {.topic = "tx",
                            .partition = 0,
                            .producer_id = pid,
                            .producer_epoch = epoch,
                            .type = commit ? CONTROL_COMMIT : CONTROL_ABORT};
    assert_int_equal(log_write_markers(engine_log(f->e), &m, 1), 0);
}

/* Polls until RT_E_END; returns the values seen joined by ','. */
static void drain(rt_consumer *c, char *out, size_t cap)
{
    out[0] = '\0';
    struct rt_record_view v;
    while (rt_consumer_poll(c, &v, NULL, NULL, 30) == 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%.*s", n ? "," : "", (int)v.value_len, (const char *)v.value);
    }
}

static void test_consumer_read_committed(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    assert_int_equal(rt_topic_create(f->e, "tx", 1), 0);
    int64_t a = new_pid(f), b = new_pid(f), c_pid = new_pid(f);
    txn_batch(f, a, 0, 0, 2, "a");
    txn_batch(f, b, 0, 0, 2, "b");
    data_marker(f, a, 0, true);
    data_marker(f, b, 0, false);
    append_values(f, "tx", 0, 0, 1); /* v0 */
    int64_t open_first = txn_batch(f, c_pid, 0, 0, 1, "c");
    append_values(f, "tx", 0, 1, 1); /* v1: behind the open transaction */

    rt_consumer *rc_c = NULL, *ru_c = NULL;
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    assert_int_equal(rt_consumer_open(f->e, &co, &rc_c), 0);
    co.isolation = RT_READ_UNCOMMITTED;
    assert_int_equal(rt_consumer_open(f->e, &co, &ru_c), 0);
    uint32_t p0 = 0;
    assert_int_equal(rt_consumer_assign(rc_c, "tx", &p0, 1), 0);
    assert_int_equal(rt_consumer_assign(ru_c, "tx", &p0, 1), 0);

    char got[256];
    drain(rc_c, got, sizeof(got));
    assert_string_equal(got, "a0,a1,v0"); /* b aborted; c open pins the LSO */
    int64_t pos = 0;
    assert_int_equal(rt_consumer_position(rc_c, "tx", 0, &pos), 0);
    assert_int_equal(pos, open_first);
    drain(ru_c, got, sizeof(got));
    assert_string_equal(got, "a0,a1,b0,b1,v0,c0,v1");

    /* The transaction commits: the rest arrives, and the consumer moves past the marker. */
    data_marker(f, c_pid, 0, true);
    drain(rc_c, got, sizeof(got));
    assert_string_equal(got, "c0,v1");
    int64_t hw = 0;
    assert_int_equal(rt_list_offsets(f->e, "tx", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw), 0);
    /* A fetch holding only an aborted batch and its marker still moves the position to the
     * end (never stuck behind a marker). */
    txn_batch(f, b, 1, 0, 1, "x");
    data_marker(f, b, 1, false);
    drain(rc_c, got, sizeof(got));
    assert_string_equal(got, "");
    int64_t hw2 = 0;
    assert_int_equal(rt_list_offsets(f->e, "tx", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw2),
                     0);
    assert_int_equal(rt_consumer_position(rc_c, "tx", 0, &pos), 0);
    assert_int_equal(pos, hw2);
    assert_true(hw2 > hw);
    assert_int_equal(rt_consumer_close(rc_c), 0);
    assert_int_equal(rt_consumer_close(ru_c), 0);
}

struct finisher {
    struct fixture *f;
    struct group_manager *g;
    int64_t pid;
};

static void *finish_later(void *arg)
{
    struct finisher *fin = arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000L};
    nanosleep(&ts, NULL);
    finish_txn(fin->f, fin->g, "cg", fin->pid, 0, true);
    return NULL;
}

static void test_consumer_assign_waits_for_stable_offsets(void **state)
{
    struct fixture *f = *state;
    open_engine(f);
    assert_int_equal(rt_topic_create(f->e, "t", 1), 0);
    append_values(f, "t", 0, 0, 10);
    struct group_manager *g = groups(f);
    int64_t pid = new_pid(f);
    assert_int_equal(txn_commit1(g, pid, 0, "cg", "t", 0, 4), 0);
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = "cg";
    rt_consumer *c = NULL;
    assert_int_equal(rt_consumer_open(f->e, &co, &c), 0);
    uint32_t p0 = 0;
    /* Pending past the bound: UNSTABLE, nothing assigned. */
    assert_int_equal(rt_consumer_assign(c, "t", &p0, 1), RT_E_UNSTABLE_OFFSET_COMMIT);
    int64_t pos = 0;
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), RT_E_INVALID_ARGUMENT);
    /* Completed while assign waits: it starts at the newly committed offset. */
    struct finisher fin = {.f = f, .g = g, .pid = pid};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, finish_later, &fin), 0);
    assert_int_equal(rt_consumer_assign(c, "t", &p0, 1), 0);
    pthread_join(th, NULL);
    assert_int_equal(rt_consumer_position(c, "t", 0, &pos), 0);
    assert_int_equal(pos, 4);
    struct rt_record_view v;
    assert_int_equal(rt_consumer_poll(c, &v, NULL, NULL, 1000), 0);
    assert_int_equal(v.offset, 4);
    assert_int_equal(rt_consumer_close(c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_vectors),
        cmocka_unit_test(test_codec_kafka_layout),
        cmocka_unit_test_setup_teardown(test_plain_commit_fetch_and_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_metadata_fetched_and_listed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_metadata_stored_and_replayed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_offsets_pending_until_marker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_epoch_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_equals_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tombstone_and_corrupt_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_by_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_read_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_assign_waits_for_stable_offsets, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
