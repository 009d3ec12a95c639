/*
 * kmsg_group.c — consumer-group membership codecs (issue 13): JoinGroup (v0-5), SyncGroup
 * (v0-3), Heartbeat (v0-3), LeaveGroup (v0-1), ListGroups (v0-2), DescribeGroups (v0-2). None
 * of these versions is flexible. Protocol metadata and assignments stay kp_bytes into the
 * request: the broker never parses them (they are the clients' own format). It must never decide
 * an answer; the APIs stay unadvertised (api.c) until the server handles them.
 *
 *   JoinGroup request: group_id STRING, session_timeout_ms i32, rebalance_timeout_ms i32 (v1+),
 *     member_id STRING, group_instance_id NSTRING (v5+), protocol_type STRING,
 *     protocols [name STRING, metadata BYTES]
 *   JoinGroup response: throttle_time_ms i32 (v2+), error_code i16, generation_id i32,
 *     protocol_name STRING, leader STRING, member_id STRING, members [member_id STRING,
 *     group_instance_id NSTRING (v5+), metadata BYTES]
 *   SyncGroup request: group_id STRING, generation_id i32, member_id STRING,
 *     group_instance_id NSTRING (v3+), assignments [member_id STRING, assignment BYTES]
 *   SyncGroup response: throttle_time_ms i32 (v1+), error_code i16, assignment BYTES
 *   Heartbeat request: group_id STRING, generation_id i32, member_id STRING,
 *     group_instance_id NSTRING (v3+);  response: throttle_time_ms i32 (v1+), error_code i16
 *   LeaveGroup request: group_id STRING, member_id STRING;
 *     response: throttle_time_ms i32 (v1+), error_code i16
 *   ListGroups request: (empty);  response: throttle_time_ms i32 (v1+), error_code i16,
 *     groups [group_id STRING, protocol_type STRING]
 *   DescribeGroups request: groups [STRING];  response: throttle_time_ms i32 (v1+),
 *     groups [error_code i16, group_id STRING, group_state STRING, protocol_type STRING,
 *     protocol_data STRING, members [member_id STRING, client_id STRING, client_host STRING,
 *     member_metadata BYTES, member_assignment BYTES]]
 */
#include "tools/kafka/kmsg.h"
#include "tools/kafka/kmsg_int.h"

static const struct kp_str null_str = {NULL, -1};

int kmsg_join_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                   struct kmsg_join_group_request *out)
{
    int rc = kmsg_version_check(KAFKA_JOIN_GROUP, version);
    if (rc)
        return rc;
    out->group_id = kp_read_string(r);
    out->session_timeout_ms = kp_read_i32(r);
    out->rebalance_timeout_ms = version >= 1 ? kp_read_i32(r) : out->session_timeout_ms;
    out->member_id = kp_read_string(r);
    out->group_instance_id = version >= 5 ? kp_read_nullable_string(r) : null_str;
    out->protocol_type = kp_read_string(r);
    out->protocols_count = kp_read_array_len(r, 2 + 4);
    out->protocols = kp_arena_array(r, a, out->protocols_count, sizeof *out->protocols);
    for (int32_t i = 0; i < out->protocols_count && !r->err; i++) {
        out->protocols[i].name = kp_read_string(r);
        out->protocols[i].metadata = kp_read_bytes(r);
    }
    if (r->err)
        out->protocols_count = 0;
    return kmsg_finish(r);
}

int kmsg_join_group_response_encode(struct kp_writer *w, int16_t version,
                                    const struct kmsg_join_group_response *m)
{
    int rc = kmsg_version_check(KAFKA_JOIN_GROUP, version);
    if (rc)
        return rc;
    if (version >= 2)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    kp_write_i32(w, m->generation_id);
    kp_write_string(w, m->protocol_name);
    kp_write_string(w, m->leader);
    kp_write_string(w, m->member_id);
    kp_write_array_len(w, m->members_count);
    for (int32_t i = 0; i < m->members_count; i++) {
        kp_write_string(w, m->members[i].member_id);
        if (version >= 5)
            kp_write_nullable_string(w, m->members[i].group_instance_id);
        kp_write_bytes(w, m->members[i].metadata);
    }
    return w->err;
}

int kmsg_sync_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                   struct kmsg_sync_group_request *out)
{
    int rc = kmsg_version_check(KAFKA_SYNC_GROUP, version);
    if (rc)
        return rc;
    out->group_id = kp_read_string(r);
    out->generation_id = kp_read_i32(r);
    out->member_id = kp_read_string(r);
    out->group_instance_id = version >= 3 ? kp_read_nullable_string(r) : null_str;
    out->assignments_count = kp_read_array_len(r, 2 + 4);
    out->assignments = kp_arena_array(r, a, out->assignments_count, sizeof *out->assignments);
    for (int32_t i = 0; i < out->assignments_count && !r->err; i++) {
        out->assignments[i].member_id = kp_read_string(r);
        out->assignments[i].assignment = kp_read_bytes(r);
    }
    if (r->err)
        out->assignments_count = 0;
    return kmsg_finish(r);
}

int kmsg_sync_group_response_encode(struct kp_writer *w, int16_t version,
                                    const struct kmsg_sync_group_response *m)
{
    int rc = kmsg_version_check(KAFKA_SYNC_GROUP, version);
    if (rc)
        return rc;
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    kp_write_bytes(w, m->assignment);
    return w->err;
}

int kmsg_heartbeat_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                  struct kmsg_heartbeat_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_HEARTBEAT, version);
    if (rc)
        return rc;
    out->group_id = kp_read_string(r);
    out->generation_id = kp_read_i32(r);
    out->member_id = kp_read_string(r);
    out->group_instance_id = version >= 3 ? kp_read_nullable_string(r) : null_str;
    return kmsg_finish(r);
}

static int write_error_response(struct kp_writer *w, int16_t version,
                                const struct kmsg_error_response *m)
{
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    return w->err;
}

int kmsg_heartbeat_response_encode(struct kp_writer *w, int16_t version,
                                   const struct kmsg_error_response *m)
{
    int rc = kmsg_version_check(KAFKA_HEARTBEAT, version);
    return rc ? rc : write_error_response(w, version, m);
}

int kmsg_leave_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_leave_group_request *out)
{
    (void)a;
    int rc = kmsg_version_check(KAFKA_LEAVE_GROUP, version);
    if (rc)
        return rc;
    out->group_id = kp_read_string(r);
    out->member_id = kp_read_string(r);
    return kmsg_finish(r);
}

int kmsg_leave_group_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_error_response *m)
{
    int rc = kmsg_version_check(KAFKA_LEAVE_GROUP, version);
    return rc ? rc : write_error_response(w, version, m);
}

int kmsg_list_groups_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_list_groups_request *out)
{
    (void)a;
    out->unused = 0;
    int rc = kmsg_version_check(KAFKA_LIST_GROUPS, version);
    return rc ? rc : kmsg_finish(r);
}

int kmsg_list_groups_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_list_groups_response *m)
{
    int rc = kmsg_version_check(KAFKA_LIST_GROUPS, version);
    if (rc)
        return rc;
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_i16(w, m->error_code);
    kp_write_array_len(w, m->groups_count);
    for (int32_t i = 0; i < m->groups_count; i++) {
        kp_write_string(w, m->groups[i].group_id);
        kp_write_string(w, m->groups[i].protocol_type);
    }
    return w->err;
}

int kmsg_describe_groups_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                        struct kmsg_describe_groups_request *out)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_GROUPS, version);
    if (rc)
        return rc;
    out->groups_count = kp_read_array_len(r, 2);
    out->groups = kp_arena_array(r, a, out->groups_count, sizeof *out->groups);
    for (int32_t i = 0; i < out->groups_count && !r->err; i++)
        out->groups[i] = kp_read_string(r);
    if (r->err)
        out->groups_count = 0;
    return kmsg_finish(r);
}

int kmsg_describe_groups_response_encode(struct kp_writer *w, int16_t version,
                                         const struct kmsg_describe_groups_response *m)
{
    int rc = kmsg_version_check(KAFKA_DESCRIBE_GROUPS, version);
    if (rc)
        return rc;
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_array_len(w, m->groups_count);
    for (int32_t i = 0; i < m->groups_count; i++) {
        const struct kmsg_describe_groups_group *g = &m->groups[i];
        kp_write_i16(w, g->error_code);
        kp_write_string(w, g->group_id);
        kp_write_string(w, g->group_state);
        kp_write_string(w, g->protocol_type);
        kp_write_string(w, g->protocol_data);
        kp_write_array_len(w, g->members_count);
        for (int32_t j = 0; j < g->members_count; j++) {
            const struct kmsg_describe_groups_member *mb = &g->members[j];
            kp_write_string(w, mb->member_id);
            kp_write_string(w, mb->client_id);
            kp_write_string(w, mb->client_host);
            kp_write_bytes(w, mb->member_metadata);
            kp_write_bytes(w, mb->member_assignment);
        }
    }
    return w->err;
}
