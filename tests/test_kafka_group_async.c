/*
 * test_kafka_group_async.c — group metadata and deletions without a blocked loop thread
 * (handle_group.c KH4, issue 22 item 4's group part) and group deletion in the engine
 * (rt_group_delete_offsets, group.c GO7; DeleteGroups and OffsetDelete, KH5):
 *   - while a leader's SyncGroup is held in the durable write of the group's metadata
 *     (IO_FAULT_STALL on __consumer_offsets' fdatasync), an ApiVersions on another connection
 *     of the same network loop (--threads 1) is answered, and the SyncGroup is not; released,
 *     the SyncGroup is answered NONE with its assignment and the metadata is stored. With the
 *     old synchronous store the loop thread waited in rt_group_store_metadata: no answer; the
 *     same for an OffsetCommit held in its commit's fdatasync (handle_offsets.c KO9);
 *   - rt_group_delete_offsets deletes the named committed offsets, or every one of the group
 *     and its stored metadata, durably: a reopen does not bring them back; its asynchronous
 *     form reports the keys deleted on an engine thread;
 *   - a static leader's restart at JoinGroup v9 (KIP-814, group_coord.c KG12) is answered at once
 *     with the members, skip_assignment and its new id as the leader;
 *   - DeleteGroups v0-2 and OffsetDelete v0 over the wire answer as Kafka: NONE for a group
 *     with only committed offsets (deleted after a reopen too), GROUP_ID_NOT_FOUND for an
 *     unknown one, NON_EMPTY_GROUP for a group with a member, GROUP_SUBSCRIBED_TO_TOPIC for a
 *     partition of a topic its member subscribes to, UNKNOWN_TOPIC_OR_PARTITION.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback (the
 * stall runs on the fault injector, whose rings are synchronous, whatever the backend).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

static int setup(void **state)
{
    int rc = tu_fixture_setup(state);
    struct tu_fixture *f = *state;
    tu_fixture_open(f);
    assert_int_equal(rt_topic_create(f->e, "t", 3), 0);
    return rc;
}

/* ---- the wire ---- */

struct wire {
    struct kafka_server *srv;
    int32_t corr;
    _Alignas(16) uint8_t arena_buf[1 << 16];
    struct kp_arena arena;
};

static int dial(struct wire *x)
{
    return tk_dial(kafka_server_port(x->srv), 20);
}

static void req_begin(struct wire *x, struct kp_writer *w, int16_t key, int16_t version)
{
    tk_request_begin(w, key, version, ++x->corr, "test_kafka_group_async");
}

static void req_send(int sock, struct kp_writer *w)
{
    tk_request_send(sock, w);
}

/* One response into *buf (malloc'd); a reader past its header (v1: and the header's tags). */
static void resp_read(int sock, uint8_t **buf, struct kp_reader *r, int16_t key, int16_t v)
{
    int32_t corr = 0;
    bool flex = key != KAFKA_API_VERSIONS && kafka_request_header_version(key, v) == 2;
    if (tk_response_read(sock, buf, r, flex, &corr) < 0)
        fail_msg("the broker closed the connection (or 20 s passed) instead of answering");
}

static const uint8_t subscription_t[] = {0, 0, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff};

static void send_join(struct wire *x, int sock, const char *group, const char *instance)
{
    struct kmsg_join_group_protocol p = {kp_str_of("range"),
                                         {subscription_t, (int32_t)sizeof(subscription_t)}};
    struct kmsg_join_group_request q = {.group_id = kp_str_of(group),
                                        .session_timeout_ms = 10000,
                                        .rebalance_timeout_ms = 10000,
                                        .member_id = kp_str_of(""),
                                        .group_instance_id = kp_str_of(instance),
                                        .protocol_type = kp_str_of("consumer"),
                                        .protocols = &p,
                                        .protocols_count = 1,
                                        .reason = {NULL, -1}};
    struct kp_writer w;
    req_begin(x, &w, KAFKA_JOIN_GROUP, 5);
    assert_int_equal(kmsg_join_group_request_encode(&w, 5, &q), 0);
    req_send(sock, &w);
}

static void read_join(struct wire *x, int sock, struct kmsg_join_group_response *m, uint8_t **buf)
{
    struct kp_reader r;
    resp_read(sock, buf, &r, KAFKA_JOIN_GROUP, 5);
    kp_arena_init(&x->arena, x->arena_buf, sizeof(x->arena_buf));
    assert_int_equal(kmsg_join_group_response_decode(&r, 5, &x->arena, m), 0);
}

static void send_sync(struct wire *x, int sock, const char *group, int32_t generation,
                      struct kp_str member, const char *instance)
{
    struct kmsg_sync_group_assignment a = {member, {(const uint8_t *)"\0\1", 2}};
    struct kmsg_sync_group_request q = {.group_id = kp_str_of(group),
                                        .generation_id = generation,
                                        .member_id = member,
                                        .group_instance_id = kp_str_of(instance),
                                        .assignments = &a,
                                        .assignments_count = 1,
                                        .protocol_type = {NULL, -1},
                                        .protocol_name = {NULL, -1}};
    struct kp_writer w;
    req_begin(x, &w, KAFKA_SYNC_GROUP, 3);
    assert_int_equal(kmsg_sync_group_request_encode(&w, 3, &q), 0);
    req_send(sock, &w);
}

/* A member of `group` (static instance `instance`), joined and synced: its member id. */
static void member_join(struct wire *x, int sock, const char *group, const char *instance,
                        char *member_out, int32_t *generation_out)
{
    struct kmsg_join_group_response j;
    uint8_t *buf = NULL;
    send_join(x, sock, group, instance);
    read_join(x, sock, &j, &buf);
    assert_int_equal(j.error_code, KAFKA_NONE);
    assert_true(j.member_id.len > 0 && j.member_id.len < 256);
    memcpy(member_out, j.member_id.ptr, (size_t)j.member_id.len);
    member_out[j.member_id.len] = 0;
    *generation_out = j.generation_id;
    free(buf);
}

static int16_t read_sync(struct wire *x, int sock, struct kp_bytes *assignment, uint8_t **buf)
{
    struct kp_reader r;
    resp_read(sock, buf, &r, KAFKA_SYNC_GROUP, 3);
    kp_arena_init(&x->arena, x->arena_buf, sizeof(x->arena_buf));
    struct kmsg_sync_group_response m;
    assert_int_equal(kmsg_sync_group_response_decode(&r, 3, &x->arena, &m), 0);
    *assignment = m.assignment;
    return m.error_code;
}

static void send_api_versions(struct wire *x, int sock)
{
    struct kp_writer w;
    req_begin(x, &w, KAFKA_API_VERSIONS, 0);
    req_send(sock, &w);
}

static struct kafka_server *serve(rt_engine *e)
{
    struct kafka_server_options so;
    kafka_server_options_init(&so);
    so.net.listeners[0].port = 0;
    so.net.threads = 1; /* every connection on one loop */
    so.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    so.auto_create_topics = false;
    so.groups.initial_rebalance_delay_ms = 0;
    struct kafka_server *srv = NULL;
    assert_int_equal(kafka_server_start(e, &so, &srv), 0);
    return srv;
}

struct found_meta {
    const char *group;
    int32_t generation;
    size_t members;
    bool found;
};

static int find_meta(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct found_meta *fm = ctx;
    if (strcmp(group, fm->group) == 0) {
        fm->found = true;
        fm->generation = md->generation;
        fm->members = md->members_count;
    }
    return 0;
}

static void send_commit(struct wire *x, int sock, const char *group)
{
    struct kmsg_commit_partition p = {.partition_index = 1,
                                      .committed_offset = 42,
                                      .committed_leader_epoch = -1,
                                      .committed_metadata = kp_str_of("m")};
    struct kmsg_commit_topic t = {kp_str_of("t"), &p, 1};
    struct kmsg_offset_commit_request q = {.group_id = kp_str_of(group),
                                           .generation_id = -1,
                                           .member_id = kp_str_of(""),
                                           .group_instance_id = {NULL, -1},
                                           .retention_time_ms = -1,
                                           .topics = &t,
                                           .topics_count = 1};
    struct kp_writer w;
    req_begin(x, &w, KAFKA_OFFSET_COMMIT, 2);
    assert_int_equal(kmsg_offset_commit_request_encode(&w, 2, &q), 0);
    req_send(sock, &w);
}

static int16_t read_commit(struct wire *x, int sock)
{
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, KAFKA_OFFSET_COMMIT, 2);
    kp_arena_init(&x->arena, x->arena_buf, sizeof(x->arena_buf));
    struct kmsg_commit_response m;
    assert_int_equal(kmsg_offset_commit_response_decode(&r, 2, &x->arena, &m), 0);
    assert_int_equal(m.topics_count, 1);
    assert_int_equal(m.topics[0].partitions_count, 1);
    int16_t code = m.topics[0].partitions[0].error_code;
    free(buf);
    return code;
}

/* ---- KH4: the leader's SyncGroup stores without blocking the loop; KO9: OffsetCommit ---- */

static void held_write_leaves_the_loop_free(void **state, bool commit)
{
    struct tu_fixture *f = *state;
    tu_fixture_close(f);
    tu_system("rm -rf '%s'", f->dir);
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.stall_timeout_ms = 8000; /* far beyond the wait below; a hang fails (FI1) */
    struct rt_options o = f->o;
    o.sync_mode = RT_SYNC_ALWAYS;
    rt_engine *e = NULL;
    assert_int_equal(rt_test_open(f->dir, &o, &plan, &e), 0);
    assert_int_equal(rt_topic_create(e, "t", 3), 0);
    /* __consumer_offsets exists before the stall (its creation syncs too). */
    struct rt_offset warm = {"t", 0, 1, NULL};
    assert_int_equal(rt_group_commit_offsets(e, "warm", &warm, 1), 0);
    struct wire x = {0};
    x.srv = serve(e);

    int a = dial(&x);
    char member[256];
    int32_t gen = -1;
    if (!commit) {
        member_join(&x, a, "sg", "inst-1", member, &gen);
        assert_int_equal(gen, 1);
    }

    struct io_fault_rule stall = {.mode = IO_FAULT_STALL,
                                  .op = IO_OP_FDATASYNC,
                                  .nth = 1,
                                  .path_contains = "__consumer_offsets"};
    assert_int_equal(io_fault_rule_add(&plan, &stall), 0);
    if (commit)
        send_commit(&x, a, "cg");
    else
        send_sync(&x, a, "sg", gen, kp_str_of(member), "inst-1");
    if (io_fault_stall_wait(&plan, 5000) != 0)
        fail_msg("the request never reached __consumer_offsets' fdatasync");

    int b = dial(&x);
    send_api_versions(&x, b);
    struct pollfd pf[2] = {{.fd = b, .events = POLLIN}, {.fd = a, .events = POLLIN}};
    bool other_answered = false;
    for (int i = 0; i < 60 && !other_answered; i++) {
        assert_true(poll(pf, 1, 50) >= 0);
        other_answered = (pf[0].revents & POLLIN) != 0;
    }
    bool sync_answered = poll(&pf[1], 1, 0) == 1;
    uint32_t stalled = plan.stalled;
    io_fault_stall_release(&plan);
    if (!other_answered)
        fail_msg("an ApiVersions on another connection of the loop was not answered in 3 s while "
                 "a group write was held (the loop thread waits for the disk)");
    assert_false(sync_answered); /* KH4, KO9: not before the write is durable */
    assert_int_equal(stalled, 1);
    uint8_t *buf = NULL;
    if (commit) {
        assert_int_equal(read_commit(&x, a), KAFKA_NONE);
        int64_t off = -1;
        assert_int_equal(rt_group_fetch_offsets(e, "cg", "t", 1, false, &off), 0);
        assert_int_equal(off, 42);
    } else {
        struct kp_bytes asg;
        assert_int_equal(read_sync(&x, a, &asg, &buf), KAFKA_NONE);
        assert_int_equal(asg.len, 2);
        assert_memory_equal(asg.ptr, "\0\1", 2);
        free(buf);
    }
    struct kp_reader r;
    resp_read(b, &buf, &r, KAFKA_API_VERSIONS, 0);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    free(buf);
    struct found_meta fm = {.group = "sg"};
    assert_int_equal(rt_group_list_metadata(e, find_meta, &fm), 0);
    assert_int_equal(fm.found, !commit);
    if (!commit) {
        assert_int_equal(fm.generation, 1);
        assert_int_equal(fm.members, 1);
    }
    assert_int_equal(plan.stall_timeouts, 0);
    close(a);
    close(b);
    kafka_server_stop(x.srv);
    assert_int_equal(rt_close(e), 0);
    io_fault_plan_release(&plan);
    tu_fixture_open(f);
}

static void test_sync_store_does_not_block_the_loop(void **state)
{
    held_write_leaves_the_loop_free(state, false);
}

static void test_offset_commit_does_not_block_the_loop(void **state)
{
    held_write_leaves_the_loop_free(state, true);
}

/* ---- KG12: a static leader's rejoin at JoinGroup v9 skips the assignment ---- */

static void test_static_leader_rejoin_v9(void **state)
{
    struct tu_fixture *f = *state;
    struct wire x = {0};
    x.srv = serve(f->e);
    int a = dial(&x);
    char member[256];
    int32_t gen = -1;
    member_join(&x, a, "sv", "inst-v", member, &gen);
    send_sync(&x, a, "sv", gen, kp_str_of(member), "inst-v");
    struct kp_bytes asg;
    uint8_t *buf = NULL;
    assert_int_equal(read_sync(&x, a, &asg, &buf), KAFKA_NONE);
    free(buf);
    /* The instance restarts (no member id) at v9: the members and skip_assignment, the leader
     * its new id; the generation unchanged (no rebalance). */
    struct kmsg_join_group_protocol p = {kp_str_of("range"),
                                         {subscription_t, (int32_t)sizeof(subscription_t)}};
    struct kmsg_join_group_request q = {.group_id = kp_str_of("sv"),
                                        .session_timeout_ms = 10000,
                                        .rebalance_timeout_ms = 10000,
                                        .member_id = kp_str_of(""),
                                        .group_instance_id = kp_str_of("inst-v"),
                                        .protocol_type = kp_str_of("consumer"),
                                        .protocols = &p,
                                        .protocols_count = 1,
                                        .reason = kp_str_of("restarted")};
    struct kp_writer w;
    req_begin(&x, &w, KAFKA_JOIN_GROUP, 9);
    assert_int_equal(kmsg_join_group_request_encode(&w, 9, &q), 0);
    int b = dial(&x);
    req_send(b, &w);
    struct kp_reader r;
    resp_read(b, &buf, &r, KAFKA_JOIN_GROUP, 9);
    kp_arena_init(&x.arena, x.arena_buf, sizeof(x.arena_buf));
    struct kmsg_join_group_response m;
    assert_int_equal(kmsg_join_group_response_decode(&r, 9, &x.arena, &m), 0);
    assert_int_equal(m.error_code, KAFKA_NONE);
    assert_int_equal(m.generation_id, gen);
    assert_true(m.skip_assignment);
    assert_int_equal(m.members_count, 1);
    assert_int_equal(m.leader.len, m.member_id.len);
    assert_memory_equal(m.leader.ptr, m.member_id.ptr, (size_t)m.leader.len);
    assert_int_equal(m.protocol_type.len, 8); /* v7+: "consumer" (KIP-559) */
    assert_false(m.member_id.len == (int32_t)strlen(member) &&
                 memcmp(m.member_id.ptr, member, strlen(member)) == 0);
    free(buf);
    close(a);
    close(b);
    kafka_server_stop(x.srv);
}

/* ---- GO7: rt_group_delete_offsets ---- */

static int count_offsets(void *ctx, const char *topic, uint32_t partition,
                         const struct rt_committed_offset *o)
{
    (void)topic;
    (void)partition;
    (void)o;
    (*(int *)ctx)++;
    return 0;
}

static int offsets_of(rt_engine *e, const char *group)
{
    int n = 0;
    assert_int_equal(rt_group_list_offsets(e, group, count_offsets, &n), 0);
    return n;
}

static _Atomic int delete_reports;
static size_t delete_deleted;
static int delete_err;

static void on_delete(void *ctx, int err, size_t deleted)
{
    (void)ctx;
    delete_err = err;
    delete_deleted = deleted;
    atomic_fetch_add(&delete_reports, 1);
}

static void test_delete_offsets_engine(void **state)
{
    struct tu_fixture *f = *state;
    struct rt_offset offs[3] = {{"t", 0, 5, "a"}, {"t", 1, 6, NULL}, {"t", 2, 7, "c"}};
    assert_int_equal(rt_group_commit_offsets(f->e, "dg", offs, 3), 0);
    assert_int_equal(rt_group_commit_offsets(f->e, "keep", offs, 1), 0);
    struct rt_group_metadata md = {.protocol_type = "consumer", .generation = 4};
    assert_int_equal(rt_group_store_metadata(f->e, "dg", &md), 0);
    /* One partition: that offset only; one never committed is skipped. */
    struct rt_topic_partition tp[2] = {{"t", 1}, {"t", 1}};
    size_t deleted = 99;
    assert_int_equal(rt_group_delete_offsets(f->e, "dg", tp, 2, &deleted), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(rt_group_delete_offsets(f->e, "dg", tp, 1, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(offsets_of(f->e, "dg"), 2);
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(offsets_of(f->e, "dg"), 2); /* the tombstone replays */
    int64_t off = 0;
    assert_int_equal(rt_group_fetch_offsets(f->e, "dg", "t", 1, false, &off), 0);
    assert_int_equal(off, -1);
    /* The whole group, asynchronously: two offsets and the metadata. */
    struct rt_group_op op;
    atomic_store(&delete_reports, 0);
    assert_int_equal(rt_group_delete_offsets_async(f->e, "dg", NULL, 0, &op, on_delete, NULL), 0);
    for (int i = 0; i < 10000 && atomic_load(&delete_reports) == 0; i++)
        usleep(1000);
    assert_int_equal(atomic_load(&delete_reports), 1);
    assert_int_equal(delete_err, 0);
    assert_int_equal(delete_deleted, 3);
    tu_fixture_close(f);
    tu_fixture_open(f);
    assert_int_equal(offsets_of(f->e, "dg"), 0);
    struct found_meta fm = {.group = "dg"};
    assert_int_equal(rt_group_list_metadata(f->e, find_meta, &fm), 0);
    assert_false(fm.found);
    assert_int_equal(offsets_of(f->e, "keep"), 1); /* another group's offsets stay */
    assert_int_equal(rt_group_delete_offsets(f->e, "dg", NULL, 0, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(rt_group_delete_offsets(f->e, "", NULL, 0, &deleted), RT_E_INVALID_ARGUMENT);
    assert_int_equal(rt_group_delete_offsets(f->e, "dg", NULL, 2, &deleted), RT_E_INVALID_ARGUMENT);
}

/* ---- KH5: DeleteGroups and OffsetDelete over the wire ---- */

static void delete_groups(struct wire *x, int sock, int16_t v, const char *const *names, int n,
                          int16_t *codes)
{
    struct kp_str gs[4];
    for (int i = 0; i < n; i++)
        gs[i] = kp_str_of(names[i]);
    struct kmsg_delete_groups_request q = {gs, n};
    struct kp_writer w;
    req_begin(x, &w, KAFKA_DELETE_GROUPS, v);
    assert_int_equal(kmsg_delete_groups_request_encode(&w, v, &q), 0);
    req_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, KAFKA_DELETE_GROUPS, v);
    kp_arena_init(&x->arena, x->arena_buf, sizeof(x->arena_buf));
    struct kmsg_delete_groups_response m;
    assert_int_equal(kmsg_delete_groups_response_decode(&r, v, &x->arena, &m), 0);
    assert_int_equal(m.results_count, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(m.results[i].group_id.len, (int32_t)strlen(names[i]));
        codes[i] = m.results[i].error_code;
    }
    free(buf);
}

/* OffsetDelete of (topic, partitions): the top-level code; codes[i] per partition. */
static int16_t offset_delete(struct wire *x, int sock, const char *group, const char *topic,
                             const int32_t *parts, int n, int16_t *codes)
{
    struct kmsg_offset_delete_partition ps[4];
    for (int i = 0; i < n; i++)
        ps[i].partition_index = parts[i];
    struct kmsg_offset_delete_topic t = {kp_str_of(topic), ps, n};
    struct kmsg_offset_delete_request q = {kp_str_of(group), &t, 1};
    struct kp_writer w;
    req_begin(x, &w, KAFKA_OFFSET_DELETE, 0);
    assert_int_equal(kmsg_offset_delete_request_encode(&w, 0, &q), 0);
    req_send(sock, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    resp_read(sock, &buf, &r, KAFKA_OFFSET_DELETE, 0);
    kp_arena_init(&x->arena, x->arena_buf, sizeof(x->arena_buf));
    struct kmsg_offset_delete_response m;
    assert_int_equal(kmsg_offset_delete_response_decode(&r, 0, &x->arena, &m), 0);
    if (m.error_code == KAFKA_NONE) {
        assert_int_equal(m.topics_count, 1);
        assert_int_equal(m.topics[0].partitions_count, n);
        for (int i = 0; i < n; i++)
            codes[i] = m.topics[0].partitions[i].error_code;
    }
    free(buf);
    return m.error_code;
}

static void test_delete_wire(void **state)
{
    struct tu_fixture *f = *state;
    struct rt_offset offs[3] = {{"t", 0, 5, NULL}, {"t", 1, 6, NULL}, {"t", 2, 7, NULL}};
    for (int v = 0; v <= 2; v++) {
        char g[16];
        snprintf(g, sizeof g, "dg%d", v);
        assert_int_equal(rt_group_commit_offsets(f->e, g, offs, 3), 0);
    }
    assert_int_equal(rt_group_commit_offsets(f->e, "od", offs, 3), 0);
    struct wire x = {0};
    x.srv = serve(f->e);
    int s = dial(&x);
    /* OffsetDelete: one partition deleted, an unknown partition and topic refused. */
    int16_t codes[4];
    int32_t parts[3] = {1, 9, 2};
    assert_int_equal(offset_delete(&x, s, "od", "t", parts, 3, codes), KAFKA_NONE);
    assert_int_equal(codes[0], KAFKA_NONE);
    assert_int_equal(codes[1], KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(codes[2], KAFKA_NONE);
    assert_int_equal(offset_delete(&x, s, "od", "nosuch", parts, 1, codes), KAFKA_NONE);
    assert_int_equal(codes[0], KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(offset_delete(&x, s, "none", "t", parts, 1, codes), KAFKA_GROUP_ID_NOT_FOUND);
    assert_int_equal(offsets_of(f->e, "od"), 1);
    /* DeleteGroups at each version: an offsets-only group deleted, an unknown one not found. */
    for (int16_t v = 0; v <= 2; v++) {
        char g[16];
        snprintf(g, sizeof g, "dg%d", v);
        const char *names[2] = {g, "nope"};
        int16_t c[2];
        delete_groups(&x, s, v, names, 2, c);
        assert_int_equal(c[0], KAFKA_NONE);
        assert_int_equal(c[1], KAFKA_GROUP_ID_NOT_FOUND);
        assert_int_equal(offsets_of(f->e, g), 0);
    }
    /* A group with a member (subscribed to t): NON_EMPTY_GROUP; its t partitions
     * GROUP_SUBSCRIBED_TO_TOPIC. */
    char member[256];
    int32_t gen = -1;
    member_join(&x, s, "live", "inst-live", member, &gen);
    assert_int_equal(rt_group_commit_offsets(f->e, "live", offs, 1), 0);
    const char *live[1] = {"live"};
    int16_t c[1];
    delete_groups(&x, s, 2, live, 1, c);
    assert_int_equal(c[0], KAFKA_NON_EMPTY_GROUP);
    assert_int_equal(offset_delete(&x, s, "live", "t", parts, 1, codes), KAFKA_NONE);
    assert_int_equal(codes[0], KAFKA_GROUP_SUBSCRIBED_TO_TOPIC);
    assert_int_equal(offsets_of(f->e, "live"), 1);
    close(s);
    kafka_server_stop(x.srv);
    tu_fixture_close(f);
    tu_fixture_open(f);
    for (int v = 0; v <= 2; v++) {
        char g[16];
        snprintf(g, sizeof g, "dg%d", v);
        assert_int_equal(offsets_of(f->e, g), 0); /* durable: not back after a reopen */
    }
    assert_int_equal(offsets_of(f->e, "od"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sync_store_does_not_block_the_loop, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_offset_commit_does_not_block_the_loop, setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_static_leader_rejoin_v9, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_delete_offsets_engine, setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_delete_wire, setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
