/*
 * handle_group.c — the group membership APIs over the wire: JoinGroup 0-9, SyncGroup 0-5,
 * Heartbeat 0-4, LeaveGroup 0-5, ListGroups 0-4, DescribeGroups 0-5, DeleteGroups 0-2 and
 * OffsetDelete 0, on kmsg_group.c's codecs and group_coord.c's state. It owns only the mapping
 * between a decoded request and the coordinator, and the parking of a JoinGroup (until the
 * rebalance completes) or a follower's SyncGroup (until the leader's assignment arrives) through
 * net's NET_PARK — the mechanism the long-poll fetch uses: the loop answers requests of a
 * connection in order, so pipelining is kept, and the loop thread never blocks. It touches the
 * engine to read which groups have committed offsets (ListGroups, DescribeGroups: KH3) and,
 * only through the engine's asynchronous calls, to store a group's metadata and delete groups
 * and offsets (KH4).
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
 *   KH4  No group call waits for the disk on the loop thread: the coordinator's metadata store
 *        (KG10) and the deletions of DeleteGroups and OffsetDelete go to the engine's
 *        asynchronous calls (rt_group_store_metadata_async, rt_group_delete_offsets_async). A
 *        request whose call started a store or deletion is answered only once it completed
 *        (durable): the slot's group_ops counts them plus the handler's own hold, and whoever
 *        drops it to zero ends the answer (the handler: NET_DONE; a completion:
 *        net_req_complete on the NET_PENDING request), so the loop's other connections run
 *        meanwhile and the connection's answers keep their order (net).
 *   KH5  DeleteGroups answers per group: INVALID_GROUP_ID, NON_EMPTY_GROUP (members),
 *        GROUP_ID_NOT_FOUND (neither held nor with committed offsets or metadata), else the
 *        deletion's outcome. OffsetDelete: INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP
 *        at the top; per partition UNKNOWN_TOPIC_OR_PARTITION, GROUP_SUBSCRIBED_TO_TOPIC
 *        (KG13), else the deletion's outcome (a partition without an offset is NONE, as Kafka).
 *   KH6  ListGroups v3+ accepts one trailing zero byte after its body (librdkafka 2.0.2's extra
 *        tag buffer, which Kafka ignores); anything else that does not decode closes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/group/group_coord.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

/* Kafka's AclOperation bits a group supports with no authorizer: READ (3), DELETE (6),
 * DESCRIBE (8) — DescribeGroups v3+ when asked (include_authorized_operations). */
#define GROUP_AUTHORIZED_OPERATIONS ((1 << 3) | (1 << 6) | (1 << 8))

static bool str_is(struct kp_str s, const char *c)
{
    return s.len >= 0 && (size_t)s.len == strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

/* ---- KH4: stores and deletions hold the answer ---- */

/* Before a coordinator call that may store: the handler's own hold, and the slot the store
 * callback (under the same lock) charges. */
static void store_watch(struct kafka_slot *s)
{
    atomic_store(&s->group_ops, 1);
    s->server->group_storing = s;
}

static void store_unwatch(struct kafka_slot *s)
{
    s->server->group_storing = NULL;
}

/* One completion (or the handler's hold) let go; the last one ends the answer. From a lane
 * thread the request goes back to its loop. */
static bool ops_release(struct kafka_slot *s)
{
    return atomic_fetch_sub(&s->group_ops, 1) == 1;
}

static void ops_complete(struct kafka_slot *s)
{
    if (kafka_response_end(s) != NET_DONE)
        s->req->close_reason = "the group answer could not be encoded";
    net_req_complete(s->req);
}

/* The handler's answer is in the writer: NET_DONE when nothing it started is in flight,
 * NET_PENDING when a completion will end it. */
static enum net_verdict ops_answer(struct kafka_slot *s)
{
    if (ops_release(s))
        return kafka_response_end(s);
    return NET_PENDING;
}

static enum net_verdict finish(struct kafka_slot *s, bool wake, bool done, int64_t deadline_ms)
{
    if (wake)
        net_wake(s->server->net);
    if (!done) {
        if (!ops_release(s)) { /* cannot happen: a store only comes with an answer */
            s->req->close_reason = "a parked group request started a store";
            return NET_DONE;
        }
        s->req->deadline_ms = deadline_ms;
        return NET_PARK;
    }
    return ops_answer(s);
}

static enum net_verdict group_error(struct kafka_slot *s, int16_t code);

static enum net_verdict join(struct kafka_slot *s, bool retry, bool expired)
{
    const struct kmsg_join_group_request *q = &s->msg.join_group;
    struct group_coord *gc = s->server->groups;
    int16_t coord = kafka_group_coordinator_check(s->server, q->group_id); /* KGC2 */
    if (coord != KAFKA_NONE)
        return group_error(s, coord);
    int64_t now = net_now_ms();
    struct group_join_result res;
    group_coord_lock(gc);
    store_watch(s);
    int32_t cap = group_coord_members_count(gc, q->group_id) + 1;
    bool again = false;
    for (;;) {
        if (kafka_resp_reserve(s, (size_t)cap * sizeof(struct kmsg_join_group_member))) {
            store_unwatch(s);
            group_coord_unlock(gc);
            return NET_CLOSE; /* no store started yet: none can hold a closed slot */
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
    store_unwatch(s);
    group_coord_unlock(gc);
    return finish(s, res.wake, res.done, res.deadline_ms);
}

static enum net_verdict sync_group(struct kafka_slot *s, bool retry, bool expired)
{
    struct group_coord *gc = s->server->groups;
    struct group_sync_result res;
    int16_t coord = kafka_group_coordinator_check(s->server, s->msg.sync_group.group_id);
    if (coord != KAFKA_NONE) /* KGC2 */
        return group_error(s, coord);
    group_coord_lock(gc);
    store_watch(s);
    group_coord_sync(gc, &s->msg.sync_group, retry, expired, net_now_ms(), &res);
    if (res.done) {
        kafka_count_error(s, res.resp.error_code);
        kafka_response_begin(s);
        kmsg_sync_group_response_encode(&s->w, s->header.api_version, &res.resp);
    }
    store_unwatch(s);
    group_coord_unlock(gc);
    return finish(s, res.wake, res.done, res.deadline_ms);
}

/* KZ2: the group membership APIs need READ on the group; a denied request is answered
 * GROUP_AUTHORIZATION_FAILED before the coordinator sees it. */
static bool group_read(struct kafka_slot *s, struct kp_str group)
{
    return kafka_authorize_str(s, ACL_RESOURCE_GROUP, group, ACL_OP_READ);
}

/* A JoinGroup, SyncGroup, Heartbeat or LeaveGroup answered with one error alone. */
static enum net_verdict group_error(struct kafka_slot *s, int16_t code)
{
    int16_t v = s->header.api_version;
    kafka_count_error(s, code);
    kafka_response_begin(s);
    if (s->header.api_key == KAFKA_JOIN_GROUP) {
        struct kmsg_join_group_response m = {.error_code = code, .generation_id = -1};
        kmsg_join_group_response_encode(&s->w, v, &m);
    } else if (s->header.api_key == KAFKA_SYNC_GROUP) {
        struct kmsg_sync_group_response m = {.error_code = code};
        kmsg_sync_group_response_encode(&s->w, v, &m);
    } else if (s->header.api_key == KAFKA_HEARTBEAT) {
        struct kmsg_error_response m = {.error_code = code};
        kmsg_heartbeat_response_encode(&s->w, v, &m);
    } else {
        struct kmsg_leave_group_response m = {.error_code = code};
        kmsg_leave_group_response_encode(&s->w, v, &m);
    }
    return kafka_response_end(s);
}

static enum net_verdict group_denied(struct kafka_slot *s)
{
    return group_error(s, KAFKA_GROUP_AUTHORIZATION_FAILED);
}

enum net_verdict kafka_handle_join_group(struct kafka_slot *s)
{
    if (!group_read(s, s->msg.join_group.group_id))
        return group_denied(s);
    return join(s, false, false);
}

enum net_verdict kafka_handle_sync_group(struct kafka_slot *s)
{
    if (!group_read(s, s->msg.sync_group.group_id))
        return group_denied(s);
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
    if (!group_read(s, s->msg.heartbeat.group_id))
        return group_denied(s);
    int16_t coord = kafka_group_coordinator_check(s->server, s->msg.heartbeat.group_id);
    if (coord != KAFKA_NONE) /* KGC2 */
        return group_error(s, coord);
    bool wake = false;
    struct group_coord *gc = s->server->groups;
    group_coord_lock(gc);
    store_watch(s);
    struct kmsg_error_response m = {
        .error_code = group_coord_heartbeat(gc, &s->msg.heartbeat, net_now_ms(), &wake)};
    store_unwatch(s);
    group_coord_unlock(gc);
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_heartbeat_response_encode(&s->w, s->header.api_version, &m);
    return finish(s, wake, true, 0);
}

/* v0-2 name one member by id; v3+ a batch by id or instance (KIP-345). Before v3 the one
 * member's code is the answer's (Kafka's LeaveGroupResponse). */
enum net_verdict kafka_handle_leave_group(struct kafka_slot *s)
{
    const struct kmsg_leave_group_request *q = &s->msg.leave_group;
    if (!group_read(s, q->group_id))
        return group_denied(s);
    int16_t coord = kafka_group_coordinator_check(s->server, q->group_id);
    if (coord != KAFKA_NONE) /* KGC2 */
        return group_error(s, coord);
    bool wake = false, batch = s->header.api_version >= 3;
    struct kmsg_leave_group_member one = {
        .member_id = q->member_id, .group_instance_id = {NULL, -1}, .reason = {NULL, -1}};
    const struct kmsg_leave_group_member *ms = batch ? q->members : &one;
    int32_t n = batch ? (q->members_count > 0 ? q->members_count : 0) : 1;
    if (kafka_resp_reserve(s, (size_t)n * (sizeof(struct kmsg_leave_group_member_response) + 8)))
        return NET_CLOSE;
    int16_t *errors = kafka_alloc(s, (size_t)n, sizeof(*errors));
    struct kmsg_leave_group_member_response *out = kafka_alloc(s, (size_t)n, sizeof(*out));
    struct group_coord *gc = s->server->groups;
    group_coord_lock(gc);
    store_watch(s);
    struct kmsg_leave_group_response m = {
        .error_code = group_coord_leave(gc, q->group_id, ms, n, errors, net_now_ms(), &wake)};
    store_unwatch(s);
    group_coord_unlock(gc);
    for (int32_t i = 0; i < n; i++)
        out[i] = (struct kmsg_leave_group_member_response){
            .member_id = ms[i].member_id,
            .group_instance_id = ms[i].group_instance_id,
            .error_code = m.error_code != KAFKA_NONE ? m.error_code : errors[i]};
    if (batch) {
        m.members = out;
        m.members_count = n;
        for (int32_t i = 0; i < n; i++)
            kafka_count_error(s, out[i].error_code);
    } else if (m.error_code == KAFKA_NONE) {
        m.error_code = errors[0];
    }
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
        og->out[og->count] =
            (struct kmsg_list_groups_group){.group_id = kafka_str_dup(og->s, group),
                                            .protocol_type = {"", 0},
                                            .group_state = {"Empty", 5}};
    og->count++;
    return 0;
}

/* KH6: librdkafka 2.0.2 ends a ListGroups v3+ body with a second empty tag buffer (one 0x00
 * after the body); Kafka reads the body and ignores what follows, so ListConsumerGroups works
 * there. Decoded here: as described, else once more without that one trailing zero byte. */
struct list_groups_decode {
    int16_t version;
    struct kmsg_list_groups_request *q;
};

static int list_groups_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct list_groups_decode *d = ctx;
    struct kp_reader at = *r;
    int rc = kmsg_list_groups_request_decode(r, d->version, a, d->q);
    if (rc == RT_E_CORRUPT && d->version >= 3 && at.end > at.p && at.end[-1] == 0) {
        *r = at;
        r->end--;
        rc = kmsg_list_groups_request_decode(r, d->version, a, d->q);
    }
    return rc;
}

enum net_verdict kafka_handle_list_groups(struct kafka_slot *s, size_t body_at)
{
    struct list_groups_decode d = {.version = s->header.api_version, .q = &s->msg.list_groups};
    if (kafka_slot_decode(s, body_at, list_groups_decode, &d) != 0) {
        kafka_log("connection %" PRIu64 ": ListGroups v%d body does not decode; closing",
                  s->req->conn_id, s->header.api_version);
        return NET_CLOSE;
    }
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
    int32_t total = n + og.count;
    if (kafka_authorizer_on(s) && !kafka_authorize_cluster(s, ACL_OP_DESCRIBE)) {
        int32_t kept = 0; /* KZ2: only the groups the principal may describe */
        for (int32_t i = 0; i < total; i++)
            if (kafka_authorize_str(s, ACL_RESOURCE_GROUP, groups[i].group_id, ACL_OP_DESCRIBE))
                groups[kept++] = groups[i];
        total = kept;
    }
    if (kafka_cluster(s->server)) { /* KGC2: only the groups this node coordinates */
        int32_t kept = 0;
        for (int32_t i = 0; i < total; i++)
            if (kafka_group_coordinator_check(s->server, groups[i].group_id) == KAFKA_NONE)
                groups[kept++] = groups[i];
        total = kept;
    }
    const struct kmsg_list_groups_request *q = &s->msg.list_groups;
    if (q->states_filter_count > 0) { /* v4 (KIP-518): only the states asked for */
        int32_t kept = 0;
        for (int32_t i = 0; i < total; i++) {
            bool want = false;
            for (int32_t j = 0; j < q->states_filter_count && !want; j++)
                want = q->states_filter[j].len == groups[i].group_state.len &&
                       memcmp(q->states_filter[j].ptr, groups[i].group_state.ptr,
                              (size_t)groups[i].group_state.len) == 0;
            if (want)
                groups[kept++] = groups[i];
        }
        total = kept;
    }
    struct kmsg_list_groups_response m = {
        .error_code = err, .groups = groups, .groups_count = total};
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
        if (!kafka_authorize_str(s, ACL_RESOURCE_GROUP, q->groups[i], ACL_OP_DESCRIBE)) {
            groups[i] =
                (struct kmsg_describe_groups_group){/* KZ2 */
                                                    .error_code = KAFKA_GROUP_AUTHORIZATION_FAILED,
                                                    .group_id = q->groups[i]};
            kafka_count_error(s, groups[i].error_code);
            continue;
        }
        int16_t coord = kafka_group_coordinator_check(s->server, q->groups[i]);
        if (coord != KAFKA_NONE) { /* KGC2 */
            groups[i] = (struct kmsg_describe_groups_group){.error_code = coord,
                                                            .group_id = q->groups[i],
                                                            .group_state = {"", 0},
                                                            .protocol_type = {"", 0},
                                                            .protocol_data = {"", 0}};
            kafka_count_error(s, coord);
            continue;
        }
        (void)group_coord_describe(gc, q->groups[i], now, &groups[i], members, cap);
        describe_offsets_only(s, &groups[i]);
        if (q->include_authorized_operations)
            groups[i].authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
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

/* One asynchronous store in flight (KH4): malloc'd, freed by its completion. */
struct store_op {
    struct rt_group_op op;
    struct kafka_slot *slot; /* the request it holds, NULL for none */
    int32_t generation;
    char group[GROUP_ID_BYTES_MAX + 1];
};

static void store_done(void *ctx, int err, size_t deleted)
{
    (void)deleted;
    struct store_op *o = ctx;
    if (err)
        fprintf(stderr, "ringtail serve: storing group '%s' (generation %d): %s: %s\n", o->group,
                (int)o->generation, rt_strerror(err), rt_error_detail());
    struct kafka_slot *s = o->slot;
    free(o);
    if (s && ops_release(s))
        ops_complete(s);
}

/* KG10's store, under the coordinator's lock: the engine copies md before it returns. A store
 * that could not start is logged and changes nothing (KG10). */
static int store_group(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct kafka_server *srv = ctx;
    struct store_op *o = malloc(sizeof(*o));
    if (!o)
        return -ENOMEM;
    o->slot = srv->group_storing;
    o->generation = md->generation;
    snprintf(o->group, sizeof(o->group), "%s", group);
    if (o->slot)
        atomic_fetch_add(&o->slot->group_ops, 1);
    int rc = rt_group_store_metadata_async(srv->engine, group, md, &o->op, store_done, o);
    if (rc) {
        fprintf(stderr, "ringtail serve: storing group '%s' (generation %d): %s: %s\n", group,
                (int)md->generation, rt_strerror(rc), rt_error_detail());
        if (o->slot)
            atomic_fetch_sub(&o->slot->group_ops, 1); /* the handler's hold remains */
        free(o);
    }
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

/* ---- DeleteGroups and OffsetDelete (KH4, KH5) ---- */

struct delete_groups_job {
    struct kafka_slot *s;
    struct kmsg_delete_groups_response m;
};

struct delete_group_op {
    struct rt_group_op op;
    struct delete_groups_job *job;
    struct kmsg_delete_groups_result *r;
    bool held;
    char group[GROUP_ID_BYTES_MAX + 1];
};

static void delete_groups_encode(struct delete_groups_job *j)
{
    for (int32_t i = 0; i < j->m.results_count; i++)
        kafka_count_error(j->s, j->m.results[i].error_code);
    kafka_response_begin(j->s);
    kmsg_delete_groups_response_encode(&j->s->w, j->s->header.api_version, &j->m);
}

static void delete_group_done(void *ctx, int err, size_t deleted)
{
    struct delete_group_op *o = ctx;
    if (err) {
        o->r->error_code = kafka_error_from_rt(err);
        fprintf(stderr, "ringtail serve: DeleteGroups '%s': %s: %s\n", o->group, rt_strerror(err),
                rt_error_detail());
    } else {
        o->r->error_code = deleted == 0 && !o->held ? KAFKA_GROUP_ID_NOT_FOUND : KAFKA_NONE;
    }
    struct kafka_slot *s = o->job->s;
    if (ops_release(s)) {
        delete_groups_encode(o->job);
        ops_complete(s);
    }
}

enum net_verdict kafka_handle_delete_groups(struct kafka_slot *s)
{
    const struct kmsg_delete_groups_request *q = &s->msg.delete_groups;
    int32_t n = q->groups_names_count > 0 ? q->groups_names_count : 0;
    if (kafka_resp_reserve(s, sizeof(struct delete_groups_job) +
                                  (size_t)n * (sizeof(struct kmsg_delete_groups_result) +
                                               sizeof(struct delete_group_op) + 16)))
        return NET_CLOSE;
    struct delete_groups_job *j = kafka_alloc(s, 1, sizeof(*j));
    struct kmsg_delete_groups_result *rs = kafka_alloc(s, (size_t)n, sizeof(*rs));
    struct delete_group_op *ops = kafka_alloc(s, (size_t)n, sizeof(*ops));
    j->s = s;
    j->m = (struct kmsg_delete_groups_response){.results = rs, .results_count = n};
    atomic_store(&s->group_ops, 1);
    struct group_coord *gc = s->server->groups;
    for (int32_t i = 0; i < n; i++) {
        struct kp_str name = q->groups_names[i];
        rs[i] = (struct kmsg_delete_groups_result){.group_id = name};
        struct delete_group_op *o = &ops[i];
        *o = (struct delete_group_op){.job = j, .r = &rs[i]};
        if (!kafka_authorize_str(s, ACL_RESOURCE_GROUP, name, ACL_OP_DELETE)) { /* KZ2 */
            rs[i].error_code = KAFKA_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        if ((rs[i].error_code = kafka_group_coordinator_check(s->server, name)) != KAFKA_NONE)
            continue; /* KGC2 */
        group_coord_lock(gc);
        rs[i].error_code = group_coord_delete(gc, name, net_now_ms(), &o->held); /* KG13 */
        group_coord_unlock(gc);
        if (rs[i].error_code != KAFKA_NONE)
            continue;
        memcpy(o->group, name.ptr, (size_t)name.len); /* group_coord_delete checked the name */
        o->group[name.len] = 0;
        atomic_fetch_add(&s->group_ops, 1);
        int rc = rt_group_delete_offsets_async(s->server->engine, o->group, NULL, 0, &o->op,
                                               delete_group_done, o);
        if (rc) {
            atomic_fetch_sub(&s->group_ops, 1);
            rs[i].error_code = kafka_error_from_rt(rc);
        }
    }
    if (!ops_release(s))
        return NET_PENDING;
    delete_groups_encode(j);
    return kafka_response_end(s);
}

struct offset_delete_job {
    struct rt_group_op op;
    struct kafka_slot *s;
    struct kmsg_offset_delete_response m;
    struct kmsg_partition_error **asked; /* the partitions handed to the engine */
    size_t asked_count;
    char group[GROUP_ID_BYTES_MAX + 1];
};

static void offset_delete_encode(struct offset_delete_job *j)
{
    kafka_count_error(j->s, j->m.error_code);
    for (int32_t t = 0; t < j->m.topics_count; t++)
        for (int32_t i = 0; i < j->m.topics[t].partitions_count; i++)
            kafka_count_error(j->s, j->m.topics[t].partitions[i].error_code);
    kafka_response_begin(j->s);
    kmsg_offset_delete_response_encode(&j->s->w, j->s->header.api_version, &j->m);
}

static void offset_delete_done(void *ctx, int err, size_t deleted)
{
    (void)deleted;
    struct offset_delete_job *j = ctx;
    if (err) {
        fprintf(stderr, "ringtail serve: OffsetDelete '%s': %s: %s\n", j->group, rt_strerror(err),
                rt_error_detail());
        for (size_t i = 0; i < j->asked_count; i++)
            j->asked[i]->error_code = kafka_error_from_rt(err);
    }
    if (ops_release(j->s)) {
        offset_delete_encode(j);
        ops_complete(j->s);
    }
}

enum net_verdict kafka_handle_offset_delete(struct kafka_slot *s)
{
    const struct kmsg_offset_delete_request *q = &s->msg.offset_delete;
    int32_t tn = q->topics_count > 0 ? q->topics_count : 0;
    size_t pn = 0;
    for (int32_t t = 0; t < tn; t++)
        pn += q->topics[t].partitions_count > 0 ? (size_t)q->topics[t].partitions_count : 0;
    if (kafka_resp_reserve(s, sizeof(struct offset_delete_job) +
                                  (size_t)tn *
                                      (sizeof(struct kmsg_topic_errors) + RT_TOPIC_NAME_MAX + 16) +
                                  pn * (sizeof(struct kmsg_partition_error) +
                                        sizeof(struct rt_topic_partition) + sizeof(void *) + 8)))
        return NET_CLOSE;
    struct offset_delete_job *j = kafka_alloc(s, 1, sizeof(*j));
    j->s = s;
    atomic_store(&s->group_ops, 1);
    struct group_coord *gc = s->server->groups;
    bool held = false;
    int16_t err = KAFKA_GROUP_AUTHORIZATION_FAILED; /* KZ2: DELETE on the group */
    if (kafka_authorize_str(s, ACL_RESOURCE_GROUP, q->group_id, ACL_OP_DELETE) &&
        (err = kafka_group_coordinator_check(s->server, q->group_id)) == KAFKA_NONE) { /* KGC2 */
        group_coord_lock(gc);
        err = group_coord_offset_delete_check(gc, q->group_id, net_now_ms(), &held);
        group_coord_unlock(gc);
    }
    if (err == KAFKA_NONE) {
        memcpy(j->group, q->group_id.ptr, (size_t)q->group_id.len); /* checked by the call */
        j->group[q->group_id.len] = 0;
        if (!held && rt_group_list_offsets(s->server->engine, j->group, has_offset, NULL) != 1)
            err = KAFKA_GROUP_ID_NOT_FOUND; /* neither held nor with offsets (KH5) */
    }
    j->m.error_code = err;
    if (err != KAFKA_NONE) { /* Kafka answers the group's error alone */
        ops_release(s);
        offset_delete_encode(j);
        return kafka_response_end(s);
    }
    struct kmsg_topic_errors *ts = kafka_alloc(s, (size_t)tn, sizeof(*ts));
    struct rt_topic_partition *parts = kafka_alloc(s, pn, sizeof(*parts));
    j->asked = kafka_alloc(s, pn, sizeof(*j->asked));
    j->m.topics = ts;
    j->m.topics_count = tn;
    size_t np = 0;
    for (int32_t t = 0; t < tn; t++) {
        const struct kmsg_offset_delete_topic *tp = &q->topics[t];
        int32_t n = tp->partitions_count > 0 ? tp->partitions_count : 0;
        struct kmsg_partition_error *pe = kafka_alloc(s, (size_t)n, sizeof(*pe));
        char *name = kafka_alloc(s, RT_TOPIC_NAME_MAX + 1, 1);
        uint32_t count = 0;
        bool known = kafka_topic_name(tp->name, name) &&
                     rt_topic_describe(s->server->engine, name, &count) == 0;
        group_coord_lock(gc);
        bool subscribed = known && group_coord_subscribed(gc, q->group_id, tp->name);
        group_coord_unlock(gc);
        ts[t] =
            (struct kmsg_topic_errors){.name = tp->name, .partitions = pe, .partitions_count = n};
        for (int32_t i = 0; i < n; i++) {
            int32_t p = tp->partitions[i].partition_index;
            pe[i].partition_index = p;
            if (!kafka_authorize_str(s, ACL_RESOURCE_TOPIC, tp->name, ACL_OP_READ))
                pe[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2 */
            else if (!known || p < 0 || (uint32_t)p >= count)
                pe[i].error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (subscribed)
                pe[i].error_code = KAFKA_GROUP_SUBSCRIBED_TO_TOPIC; /* KG13 */
            else {
                parts[np] = (struct rt_topic_partition){.topic = name, .partition = (uint32_t)p};
                j->asked[np++] = &pe[i];
            }
        }
    }
    j->asked_count = np;
    if (np) {
        atomic_fetch_add(&s->group_ops, 1);
        int rc = rt_group_delete_offsets_async(s->server->engine, j->group, parts, np, &j->op,
                                               offset_delete_done, j);
        if (rc) {
            atomic_fetch_sub(&s->group_ops, 1);
            for (size_t i = 0; i < np; i++)
                j->asked[i]->error_code = kafka_error_from_rt(rc);
        }
    }
    if (!ops_release(s))
        return NET_PENDING;
    offset_delete_encode(j);
    return kafka_response_end(s);
}
