/*
 * kmsg_group.c — consumer-group messages as data (kdesc.h): JoinGroup (v0-9, flexible from 6),
 * SyncGroup (v0-5, from 4), Heartbeat (v0-4, from 4), LeaveGroup (v0-5, from 4), ListGroups
 * (v0-4, from 3), DescribeGroups (v0-5, from 5), DeleteGroups (v0-2, from 2) and OffsetDelete
 * (v0), each field as Kafka's message JSON has it (clients/src/main/resources/common/message/).
 * Protocol metadata and assignments stay kp_bytes into the request: the broker never parses
 * them here (they are the clients' own format). It must never decide an answer (the server does).
 *
 *   JoinGroup request: group_id STRING, session_timeout_ms i32, rebalance_timeout_ms i32 (v1+),
 *     member_id STRING, group_instance_id NSTRING (v5+), protocol_type STRING,
 *     protocols [name STRING, metadata BYTES], reason NSTRING (v8+)
 *   JoinGroup response: throttle_time_ms i32 (v2+), error_code i16, generation_id i32,
 *     protocol_type NSTRING (v7+), protocol_name STRING (nullable v7+), leader STRING,
 *     skip_assignment BOOL (v9+), member_id STRING, members [member_id STRING,
 *     group_instance_id NSTRING (v5+), metadata BYTES]
 *   SyncGroup request: group_id STRING, generation_id i32, member_id STRING,
 *     group_instance_id NSTRING (v3+), protocol_type NSTRING (v5+), protocol_name NSTRING (v5+),
 *     assignments [member_id STRING, assignment BYTES]
 *   SyncGroup response: throttle_time_ms i32 (v1+), error_code i16, protocol_type NSTRING (v5+),
 *     protocol_name NSTRING (v5+), assignment BYTES
 *   Heartbeat request: group_id STRING, generation_id i32, member_id STRING,
 *     group_instance_id NSTRING (v3+);  response: throttle_time_ms i32 (v1+), error_code i16
 *   LeaveGroup request: group_id STRING, member_id STRING (v0-2), members (v3+) [member_id
 *     STRING, group_instance_id NSTRING, reason NSTRING (v5+)]
 *   LeaveGroup response: throttle_time_ms i32 (v1+), error_code i16, members (v3+)
 *     [member_id STRING, group_instance_id NSTRING, error_code i16]
 *   ListGroups request: states_filter [STRING] (v4+);  response: throttle_time_ms i32 (v1+),
 *     error_code i16, groups [group_id STRING, protocol_type STRING, group_state STRING (v4+)]
 *   DescribeGroups request: groups [STRING], include_authorized_operations BOOL (v3+)
 *   DescribeGroups response: throttle_time_ms i32 (v1+), groups [error_code i16,
 *     group_id STRING, group_state STRING, protocol_type STRING, protocol_data STRING,
 *     members [member_id STRING, group_instance_id NSTRING (v4+), client_id STRING,
 *     client_host STRING, member_metadata BYTES, member_assignment BYTES],
 *     authorized_operations i32 (v3+, default INT32_MIN)]
 *   DeleteGroups request: groups_names [STRING];  response: throttle_time_ms i32,
 *     results [group_id STRING, error_code i16]
 *   OffsetDelete request: group_id STRING, topics [name STRING, partitions [partition_index
 *     i32]];  response: error_code i16, throttle_time_ms i32, topics [name STRING,
 *     partitions [partition_index i32, error_code i16]]
 *   Flexible versions use compact strings, arrays and bytes and end every struct with tagged
 *   fields (none are defined for these messages).
 */
#include <stdint.h>

#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- JoinGroup ---- */

#define S struct kmsg_join_group_protocol
static const struct kd_field join_group_protocol_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, metadata, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct join_group_protocol_d =
    KD_STRUCT(struct kmsg_join_group_protocol, join_group_protocol_f);

#define S struct kmsg_join_group_request
static const struct kd_field join_group_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, session_timeout_ms, KD_I32, 0, KD_NEVER),
    KFD(S, rebalance_timeout_ms, KD_I32, 1, KD_NEVER, -1),
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 5, KD_NEVER, 5),
    KF(S, protocol_type, KD_STR, 0, KD_NEVER),
    KA(S, protocols, 0, KD_NEVER, join_group_protocol_d),
    KFN(S, reason, KD_STR, 8, KD_NEVER, 8),
};
#undef S
static const struct kd_struct join_group_request_d =
    KD_STRUCT(struct kmsg_join_group_request, join_group_request_f);

/* Before v1 the rebalance timeout is the session timeout (Kafka's JoinGroupRequest). */
static void join_group_request_after(void *msg, int16_t version)
{
    struct kmsg_join_group_request *m = msg;
    if (version < 1)
        m->rebalance_timeout_ms = m->session_timeout_ms;
}

#define S struct kmsg_join_group_member
static const struct kd_field join_group_member_f[] = {
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 5, KD_NEVER, 5),
    KF(S, metadata, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct join_group_member_d =
    KD_STRUCT(struct kmsg_join_group_member, join_group_member_f);

#define S struct kmsg_join_group_response
static const struct kd_field join_group_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 2, KD_NEVER),     KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFD(S, generation_id, KD_I32, 0, KD_NEVER, -1),   KFN(S, protocol_type, KD_STR, 7, KD_NEVER, 7),
    KFN(S, protocol_name, KD_STR, 0, KD_NEVER, 7),    KF(S, leader, KD_STR, 0, KD_NEVER),
    KF(S, skip_assignment, KD_BOOL, 9, KD_NEVER),     KF(S, member_id, KD_STR, 0, KD_NEVER),
    KA(S, members, 0, KD_NEVER, join_group_member_d),
};
#undef S
static const struct kd_struct join_group_response_d =
    KD_STRUCT(struct kmsg_join_group_response, join_group_response_f);

KD_MESSAGE(kd_join_group_request, "JoinGroupRequest", KAFKA_JOIN_GROUP, 0, 9, 6,
           &join_group_request_d, join_group_request_after);
KD_MESSAGE(kd_join_group_response, "JoinGroupResponse", KAFKA_JOIN_GROUP, 0, 9, 6,
           &join_group_response_d, NULL);

/* ---- SyncGroup ---- */

#define S struct kmsg_sync_group_assignment
static const struct kd_field sync_group_assignment_f[] = {
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KF(S, assignment, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct sync_group_assignment_d =
    KD_STRUCT(struct kmsg_sync_group_assignment, sync_group_assignment_f);

#define S struct kmsg_sync_group_request
static const struct kd_field sync_group_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, generation_id, KD_I32, 0, KD_NEVER),
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 3, KD_NEVER, 3),
    KFN(S, protocol_type, KD_STR, 5, KD_NEVER, 5),
    KFN(S, protocol_name, KD_STR, 5, KD_NEVER, 5),
    KA(S, assignments, 0, KD_NEVER, sync_group_assignment_d),
};
#undef S
static const struct kd_struct sync_group_request_d =
    KD_STRUCT(struct kmsg_sync_group_request, sync_group_request_f);

#define S struct kmsg_sync_group_response
static const struct kd_field sync_group_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),   KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, protocol_type, KD_STR, 5, KD_NEVER, 5), KFNZ(S, protocol_name, KD_STR, 5, KD_NEVER, 5),
    KF(S, assignment, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct sync_group_response_d =
    KD_STRUCT(struct kmsg_sync_group_response, sync_group_response_f);

KD_MESSAGE(kd_sync_group_request, "SyncGroupRequest", KAFKA_SYNC_GROUP, 0, 5, 4,
           &sync_group_request_d, NULL);
KD_MESSAGE(kd_sync_group_response, "SyncGroupResponse", KAFKA_SYNC_GROUP, 0, 5, 4,
           &sync_group_response_d, NULL);

/* ---- Heartbeat (answer: throttle v1+, error_code) ---- */

#define S struct kmsg_heartbeat_request
static const struct kd_field heartbeat_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, generation_id, KD_I32, 0, KD_NEVER),
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 3, KD_NEVER, 3),
};
#undef S
static const struct kd_struct heartbeat_request_d =
    KD_STRUCT(struct kmsg_heartbeat_request, heartbeat_request_f);

#define S struct kmsg_error_response
static const struct kd_field error_response_v1_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct error_response_v1_d =
    KD_STRUCT(struct kmsg_error_response, error_response_v1_f);

KD_MESSAGE(kd_heartbeat_request, "HeartbeatRequest", KAFKA_HEARTBEAT, 0, 4, 4, &heartbeat_request_d,
           NULL);
KD_MESSAGE(kd_heartbeat_response, "HeartbeatResponse", KAFKA_HEARTBEAT, 0, 4, 4,
           &error_response_v1_d, NULL);

/* ---- LeaveGroup ---- */

#define S struct kmsg_leave_group_member
static const struct kd_field leave_group_member_f[] = {
    KF(S, member_id, KD_STR, 3, KD_NEVER),
    KFN(S, group_instance_id, KD_STR, 3, KD_NEVER, 3),
    KFN(S, reason, KD_STR, 5, KD_NEVER, 5),
};
#undef S
static const struct kd_struct leave_group_member_d =
    KD_STRUCT(struct kmsg_leave_group_member, leave_group_member_f);

#define S struct kmsg_leave_group_request
static const struct kd_field leave_group_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, member_id, KD_STR, 0, 2),
    KA(S, members, 3, KD_NEVER, leave_group_member_d),
};
#undef S
static const struct kd_struct leave_group_request_d =
    KD_STRUCT(struct kmsg_leave_group_request, leave_group_request_f);

#define S struct kmsg_leave_group_member_response
static const struct kd_field leave_group_member_response_f[] = {
    KF(S, member_id, KD_STR, 3, KD_NEVER),
    KFNZ(S, group_instance_id, KD_STR, 3, KD_NEVER, 3),
    KF(S, error_code, KD_I16, 3, KD_NEVER),
};
#undef S
static const struct kd_struct leave_group_member_response_d =
    KD_STRUCT(struct kmsg_leave_group_member_response, leave_group_member_response_f);

#define S struct kmsg_leave_group_response
static const struct kd_field leave_group_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KA(S, members, 3, KD_NEVER, leave_group_member_response_d),
};
#undef S
static const struct kd_struct leave_group_response_d =
    KD_STRUCT(struct kmsg_leave_group_response, leave_group_response_f);

KD_MESSAGE(kd_leave_group_request, "LeaveGroupRequest", KAFKA_LEAVE_GROUP, 0, 5, 4,
           &leave_group_request_d, NULL);
KD_MESSAGE(kd_leave_group_response, "LeaveGroupResponse", KAFKA_LEAVE_GROUP, 0, 5, 4,
           &leave_group_response_d, NULL);

/* ---- ListGroups ---- */

#define S struct kmsg_list_groups_request
static const struct kd_field list_groups_request_f[] = {
    KP(S, states_filter, KD_STR, 4, KD_NEVER),
};
#undef S
static const struct kd_struct list_groups_request_d =
    KD_STRUCT(struct kmsg_list_groups_request, list_groups_request_f);

#define S struct kmsg_list_groups_group
static const struct kd_field list_groups_group_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, protocol_type, KD_STR, 0, KD_NEVER),
    KF(S, group_state, KD_STR, 4, KD_NEVER),
};
#undef S
static const struct kd_struct list_groups_group_d =
    KD_STRUCT(struct kmsg_list_groups_group, list_groups_group_f);

#define S struct kmsg_list_groups_response
static const struct kd_field list_groups_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KA(S, groups, 0, KD_NEVER, list_groups_group_d),
};
#undef S
static const struct kd_struct list_groups_response_d =
    KD_STRUCT(struct kmsg_list_groups_response, list_groups_response_f);

KD_MESSAGE(kd_list_groups_request, "ListGroupsRequest", KAFKA_LIST_GROUPS, 0, 4, 3,
           &list_groups_request_d, NULL);
KD_MESSAGE(kd_list_groups_response, "ListGroupsResponse", KAFKA_LIST_GROUPS, 0, 4, 3,
           &list_groups_response_d, NULL);

/* ---- DescribeGroups ---- */

#define S struct kmsg_describe_groups_request
static const struct kd_field describe_groups_request_f[] = {
    KP(S, groups, KD_STR, 0, KD_NEVER),
    KF(S, include_authorized_operations, KD_BOOL, 3, KD_NEVER),
};
#undef S
static const struct kd_struct describe_groups_request_d =
    KD_STRUCT(struct kmsg_describe_groups_request, describe_groups_request_f);

#define S struct kmsg_describe_groups_member
static const struct kd_field describe_groups_member_f[] = {
    KF(S, member_id, KD_STR, 0, KD_NEVER),
    KFNZ(S, group_instance_id, KD_STR, 4, KD_NEVER, 4),
    KF(S, client_id, KD_STR, 0, KD_NEVER),
    KF(S, client_host, KD_STR, 0, KD_NEVER),
    KF(S, member_metadata, KD_BYTES, 0, KD_NEVER),
    KF(S, member_assignment, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct describe_groups_member_d =
    KD_STRUCT(struct kmsg_describe_groups_member, describe_groups_member_f);

#define S struct kmsg_describe_groups_group
static const struct kd_field describe_groups_group_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, group_state, KD_STR, 0, KD_NEVER),
    KF(S, protocol_type, KD_STR, 0, KD_NEVER),
    KF(S, protocol_data, KD_STR, 0, KD_NEVER),
    KA(S, members, 0, KD_NEVER, describe_groups_member_d),
    KFZ(S, authorized_operations, KD_I32, 3, KD_NEVER, INT32_MIN),
};
#undef S
static const struct kd_struct describe_groups_group_d =
    KD_STRUCT(struct kmsg_describe_groups_group, describe_groups_group_f);

#define S struct kmsg_describe_groups_response
static const struct kd_field describe_groups_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
    KA(S, groups, 0, KD_NEVER, describe_groups_group_d),
};
#undef S
static const struct kd_struct describe_groups_response_d =
    KD_STRUCT(struct kmsg_describe_groups_response, describe_groups_response_f);

KD_MESSAGE(kd_describe_groups_request, "DescribeGroupsRequest", KAFKA_DESCRIBE_GROUPS, 0, 5, 5,
           &describe_groups_request_d, NULL);
KD_MESSAGE(kd_describe_groups_response, "DescribeGroupsResponse", KAFKA_DESCRIBE_GROUPS, 0, 5, 5,
           &describe_groups_response_d, NULL);

/* ---- DeleteGroups ---- */

#define S struct kmsg_delete_groups_request
static const struct kd_field delete_groups_request_f[] = {
    KP(S, groups_names, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_groups_request_d =
    KD_STRUCT(struct kmsg_delete_groups_request, delete_groups_request_f);

#define S struct kmsg_delete_groups_result
static const struct kd_field delete_groups_result_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_groups_result_d =
    KD_STRUCT(struct kmsg_delete_groups_result, delete_groups_result_f);

#define S struct kmsg_delete_groups_response
static const struct kd_field delete_groups_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, results, 0, KD_NEVER, delete_groups_result_d),
};
#undef S
static const struct kd_struct delete_groups_response_d =
    KD_STRUCT(struct kmsg_delete_groups_response, delete_groups_response_f);

KD_MESSAGE(kd_delete_groups_request, "DeleteGroupsRequest", KAFKA_DELETE_GROUPS, 0, 2, 2,
           &delete_groups_request_d, NULL);
KD_MESSAGE(kd_delete_groups_response, "DeleteGroupsResponse", KAFKA_DELETE_GROUPS, 0, 2, 2,
           &delete_groups_response_d, NULL);

/* ---- OffsetDelete ---- */

#define S struct kmsg_offset_delete_partition
static const struct kd_field offset_delete_partition_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct offset_delete_partition_d =
    KD_STRUCT(struct kmsg_offset_delete_partition, offset_delete_partition_f);

#define S struct kmsg_offset_delete_topic
static const struct kd_field offset_delete_topic_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, offset_delete_partition_d),
};
#undef S
static const struct kd_struct offset_delete_topic_d =
    KD_STRUCT(struct kmsg_offset_delete_topic, offset_delete_topic_f);

#define S struct kmsg_offset_delete_request
static const struct kd_field offset_delete_request_f[] = {
    KF(S, group_id, KD_STR, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, offset_delete_topic_d),
};
#undef S
static const struct kd_struct offset_delete_request_d =
    KD_STRUCT(struct kmsg_offset_delete_request, offset_delete_request_f);

#define S struct kmsg_partition_error
static const struct kd_field offset_delete_partition_error_f[] = {
    KF(S, partition_index, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct offset_delete_partition_error_d =
    KD_STRUCT(struct kmsg_partition_error, offset_delete_partition_error_f);

#define S struct kmsg_topic_errors
static const struct kd_field offset_delete_topic_errors_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KA(S, partitions, 0, KD_NEVER, offset_delete_partition_error_d),
};
#undef S
static const struct kd_struct offset_delete_topic_errors_d =
    KD_STRUCT(struct kmsg_topic_errors, offset_delete_topic_errors_f);

#define S struct kmsg_offset_delete_response
static const struct kd_field offset_delete_response_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, topics, 0, KD_NEVER, offset_delete_topic_errors_d),
};
#undef S
static const struct kd_struct offset_delete_response_d =
    KD_STRUCT(struct kmsg_offset_delete_response, offset_delete_response_f);

KD_MESSAGE(kd_offset_delete_request, "OffsetDeleteRequest", KAFKA_OFFSET_DELETE, 0, 0, KD_NEVER,
           &offset_delete_request_d, NULL);
KD_MESSAGE(kd_offset_delete_response, "OffsetDeleteResponse", KAFKA_OFFSET_DELETE, 0, 0, KD_NEVER,
           &offset_delete_response_d, NULL);

KMSG_CODEC(join_group, join_group_request, join_group_response)
KMSG_CODEC(sync_group, sync_group_request, sync_group_response)
KMSG_CODEC(heartbeat, heartbeat_request, error_response)
KMSG_CODEC(leave_group, leave_group_request, leave_group_response)
KMSG_CODEC(list_groups, list_groups_request, list_groups_response)
KMSG_CODEC(describe_groups, describe_groups_request, describe_groups_response)
KMSG_CODEC(delete_groups, delete_groups_request, delete_groups_response)
KMSG_CODEC(offset_delete, offset_delete_request, offset_delete_response)
