/*
 * handle_group.c — the group membership APIs over the wire: JoinGroup 0-5, SyncGroup 0-3,
 * Heartbeat 0-3, LeaveGroup 0-1, ListGroups 0-2, DescribeGroups 0-2, on kmsg_group.c's codecs
 * and group_coord.c's state. It owns only the mapping between a decoded request and the
 * coordinator, and the parking of a JoinGroup (until the rebalance completes) or a follower's
 * SyncGroup (until the leader's assignment arrives) through net's NET_PARK — the mechanism the
 * long-poll fetch uses: the loop answers requests of a connection in order, so pipelining is
 * kept, and the loop thread never blocks. It touches the engine only to read which groups
 * have committed offsets (ListGroups, DescribeGroups: KH3).
 *
 * Invariants:
 *   KH1  A parked request is retried on every net_wake and at its deadline (the coordinator's
 *        rebalance deadline, or a session timeout for a SyncGroup); at the deadline it is
 *        always answered. Whatever may unblock another parked request (a completed join, the
 *        leader's assignment, a rebalance that starts, a member that leaves) calls net_wake.
 *   KH2  The answer is encoded while the coordinator is locked (its results point into its
 *        memory, group_coord.h); the frame is ended after the unlock.
 *   KH3  A group the coordinator does not hold but which has committed offsets in the engine
 *        (a simple consumer's, or any group's after a restart) is listed and described as
 *        Empty with no protocol type and no members, as Kafka answers a group loaded from its
 *        offsets alone; lock order: the coordinator's, then the engine's group manager's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/kafka/group/group_coord.h"
#include "tools/kafka/handlers/handle.h"

static bool str_is(struct kp_str s, const char *c)
{
    return s.len >= 0 && (size_t)s.len == strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

static enum net_verdict finish(struct kafka_slot *s, bool wake, bool done, int64_t deadline_ms)
{
    if (wake)
        net_wake(s->server->net);
    if (!done) {
        s->req->deadline_ms = deadline_ms;
        return NET_PARK;
    }
    return kafka_response_end(s);
}

static enum net_verdict join(struct kafka_slot *s, bool retry, bool expired)
{
    const struct kmsg_join_group_request *q = &s->msg.join_group;
    struct group_coord *gc = s->server->groups;
    int64_t now = net_now_ms();
    struct group_join_result res;
    group_coord_lock(gc);
    int32_t cap = group_coord_members_count(gc, q->group_id) + 1;
    bool again = false;
    for (;;) {
        if (kafka_resp_reserve(s, (size_t)cap * sizeof(struct kmsg_join_group_member))) {
            group_coord_unlock(gc);
            return NET_CLOSE;
        }
        struct kmsg_join_group_member *members = kafka_alloc(s, (size_t)cap, sizeof(*members));
        if (!retry && !again)
            group_coord_join(gc, q, s->header.api_version, s->header.client_id, s->req, now,
                             members, cap, &res);
        else
            group_coord_join_poll(gc, q, s->req, expired, now, members, cap, &res);
        if (res.done || res.deadline_ms != 0)
            break;
        cap = res.resp.members_count; /* the leader's list needs more room */
        again = true;
    }
    if (res.done) {
        kafka_count_error(s, res.resp.error_code);
        kafka_response_begin(s);
        kmsg_join_group_response_encode(&s->w, s->header.api_version, &res.resp);
    }
    group_coord_unlock(gc);
    return finish(s, res.wake, res.done, res.deadline_ms);
}

static enum net_verdict sync_group(struct kafka_slot *s, bool retry, bool expired)
{
    struct group_coord *gc = s->server->groups;
    struct group_sync_result res;
    group_coord_lock(gc);
    group_coord_sync(gc, &s->msg.sync_group, retry, expired, net_now_ms(), &res);
    if (res.done) {
        kafka_count_error(s, res.resp.error_code);
        kafka_response_begin(s);
        kmsg_sync_group_response_encode(&s->w, s->header.api_version, &res.resp);
    }
    group_coord_unlock(gc);
    return finish(s, res.wake, res.done, res.deadline_ms);
}

enum net_verdict kafka_handle_join_group(struct kafka_slot *s)
{
    return join(s, false, false);
}

enum net_verdict kafka_handle_sync_group(struct kafka_slot *s)
{
    return sync_group(s, false, false);
}

enum net_verdict kafka_handle_group_retry(struct kafka_slot *s, bool expired)
{
    if (s->header.api_key == KAFKA_JOIN_GROUP)
        return join(s, true, expired);
    return sync_group(s, true, expired);
}

enum net_verdict kafka_handle_heartbeat(struct kafka_slot *s)
{
    bool wake = false;
    struct group_coord *gc = s->server->groups;
    group_coord_lock(gc);
    struct kmsg_error_response m = {
        .error_code = group_coord_heartbeat(gc, &s->msg.heartbeat, net_now_ms(), &wake)};
    group_coord_unlock(gc);
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_heartbeat_response_encode(&s->w, s->header.api_version, &m);
    return finish(s, wake, true, 0);
}

enum net_verdict kafka_handle_leave_group(struct kafka_slot *s)
{
    bool wake = false;
    struct group_coord *gc = s->server->groups;
    group_coord_lock(gc);
    struct kmsg_error_response m = {
        .error_code = group_coord_leave(gc, &s->msg.leave_group, net_now_ms(), &wake)};
    group_coord_unlock(gc);
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_leave_group_response_encode(&s->w, s->header.api_version, &m);
    return finish(s, wake, true, 0);
}

/* KH3: the engine's groups the coordinator does not hold, counted or appended. */
struct offset_groups {
    struct kafka_slot *s;
    struct group_coord *gc;
    struct kmsg_list_groups_group *out; /* NULL: count only */
    int32_t cap, count;
    size_t name_bytes;
};

static int offset_group(void *ctx, const char *group)
{
    struct offset_groups *og = ctx;
    size_t n = strlen(group);
    if (group_coord_holds(og->gc, (struct kp_str){group, (int32_t)n}))
        return 0;
    og->name_bytes += n + 8;
    if (og->out && og->count < og->cap)
        og->out[og->count] = (struct kmsg_list_groups_group){
            .group_id = kafka_str_dup(og->s, group), .protocol_type = {"", 0}};
    og->count++;
    return 0;
}

enum net_verdict kafka_handle_list_groups(struct kafka_slot *s)
{
    struct group_coord *gc = s->server->groups;
    int64_t now = net_now_ms();
    group_coord_lock(gc);
    int32_t n = group_coord_list(gc, now, NULL, 0);
    struct offset_groups og = {.s = s, .gc = gc};
    int16_t err = KAFKA_NONE;
    int rc = rt_group_list(s->server->engine, offset_group, &og);
    if (rc) {
        fprintf(stderr, "ringtail serve: ListGroups: the engine's groups: %s: %s\n",
                rt_strerror(rc), rt_error_detail());
        err = KAFKA_COORDINATOR_NOT_AVAILABLE;
        og.count = 0;
    }
    if (kafka_resp_reserve(s, (size_t)(n + og.count) * sizeof(struct kmsg_list_groups_group) +
                                  og.name_bytes)) {
        group_coord_unlock(gc);
        return NET_CLOSE;
    }
    struct kmsg_list_groups_group *groups = kafka_alloc(s, (size_t)(n + og.count), sizeof(*groups));
    n = group_coord_list(gc, now, groups, n);
    if (err == KAFKA_NONE && og.count) {
        og = (struct offset_groups){.s = s, .gc = gc, .out = groups + n, .cap = og.count};
        if (rt_group_list(s->server->engine, offset_group, &og) != 0)
            og.count = 0;
        if (og.count > og.cap) /* more since the count: those wait for the next ListGroups */
            og.count = og.cap;
    }
    struct kmsg_list_groups_response m = {
        .error_code = err, .groups = groups, .groups_count = n + og.count};
    kafka_count_error(s, err);
    kafka_response_begin(s);
    kmsg_list_groups_response_encode(&s->w, s->header.api_version, &m);
    group_coord_unlock(gc);
    return kafka_response_end(s);
}

static int has_offset(void *ctx, const char *topic, uint32_t partition,
                      const struct rt_committed_offset *o)
{
    (void)ctx;
    (void)topic;
    (void)partition;
    (void)o;
    return 1; /* one is enough: stop */
}

/* KH3: a group the coordinator does not hold, with committed offsets: Empty. */
static void describe_offsets_only(struct kafka_slot *s, struct kmsg_describe_groups_group *g)
{
    char name[GROUP_ID_BYTES_MAX + 1];
    if (g->error_code != KAFKA_NONE || g->group_id.len <= 0 ||
        g->group_id.len > GROUP_ID_BYTES_MAX || !str_is(g->group_state, "Dead"))
        return;
    memcpy(name, g->group_id.ptr, (size_t)g->group_id.len);
    name[g->group_id.len] = 0;
    if (rt_group_list_offsets(s->server->engine, name, has_offset, NULL) == 1)
        g->group_state = (struct kp_str){"Empty", 5};
}

enum net_verdict kafka_handle_describe_groups(struct kafka_slot *s)
{
    const struct kmsg_describe_groups_request *q = &s->msg.describe_groups;
    struct group_coord *gc = s->server->groups;
    int64_t now = net_now_ms();
    group_coord_lock(gc);
    size_t need = (size_t)(q->groups_count > 0 ? q->groups_count : 0) *
                  sizeof(struct kmsg_describe_groups_group);
    for (int32_t i = 0; i < q->groups_count; i++)
        need += ((size_t)group_coord_members_count(gc, q->groups[i]) + 1) *
                    sizeof(struct kmsg_describe_groups_member) +
                8;
    if (kafka_resp_reserve(s, need)) {
        group_coord_unlock(gc);
        return NET_CLOSE;
    }
    struct kmsg_describe_groups_group *groups =
        kafka_alloc(s, (size_t)(q->groups_count > 0 ? q->groups_count : 0), sizeof(*groups));
    for (int32_t i = 0; i < q->groups_count; i++) {
        int32_t cap = group_coord_members_count(gc, q->groups[i]) + 1;
        struct kmsg_describe_groups_member *members = kafka_alloc(s, (size_t)cap, sizeof(*members));
        (void)group_coord_describe(gc, q->groups[i], now, &groups[i], members, cap);
        describe_offsets_only(s, &groups[i]);
        kafka_count_error(s, groups[i].error_code);
    }
    struct kmsg_describe_groups_response m = {
        .groups = groups, .groups_count = q->groups_count > 0 ? q->groups_count : 0};
    kafka_response_begin(s);
    kmsg_describe_groups_response_encode(&s->w, s->header.api_version, &m);
    group_coord_unlock(gc);
    return kafka_response_end(s);
}

/* ---- KG10: the coordinator's store and its restore at start ---- */

static int store_group(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct kafka_server *srv = ctx;
    int rc = rt_group_store_metadata(srv->engine, group, md);
    if (rc)
        fprintf(stderr, "ringtail serve: storing group '%s' (generation %d): %s: %s\n", group,
                (int)md->generation, rt_strerror(rc), rt_error_detail());
    return rc;
}

static int restore_group(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct kafka_server *srv = ctx;
    int rc = group_coord_restore(srv->groups, group, md, net_now_ms());
    if (rc == -ENOMEM)
        return rc;
    return 0; /* a name the coordinator cannot hold is left to the offsets (KH3) */
}

int kafka_groups_open(struct kafka_server *srv)
{
    group_coord_lock(srv->groups);
    int rc = rt_group_list_metadata(srv->engine, restore_group, srv);
    group_coord_set_store(srv->groups, store_group, srv);
    group_coord_unlock(srv->groups);
    return rc;
}
