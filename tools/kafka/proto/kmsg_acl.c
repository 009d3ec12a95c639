/*
 * kmsg_acl.c — ACL messages as data (kdesc.h): DescribeAcls (29), CreateAcls (30) and
 * DeleteAcls (31), v0-3 each, flexible from v2 (Kafka 3.x's ranges). It owns their descriptions
 * (from Kafka's message JSON) and must never decide an answer (handle_acl.c does).
 *
 *   DescribeAcls request: resource_type_filter i8, resource_name_filter NSTRING,
 *     pattern_type_filter i8 (v1+, default 3 LITERAL), principal_filter NSTRING,
 *     host_filter NSTRING, operation i8, permission_type i8
 *   DescribeAcls response: throttle_time_ms i32, error_code i16, error_message NSTRING,
 *     resources [resource_type i8, resource_name STRING, pattern_type i8 (v1+, default 3),
 *     acls [principal STRING, host STRING, operation i8, permission_type i8]]
 *
 *   CreateAcls request: creations [resource_type i8, resource_name STRING,
 *     resource_pattern_type i8 (v1+, default 3), principal STRING, host STRING, operation i8,
 *     permission_type i8]
 *   CreateAcls response: throttle_time_ms i32, results [error_code i16, error_message NSTRING]
 *
 *   DeleteAcls request: filters [the DescribeAcls request's seven fields]
 *   DeleteAcls response: throttle_time_ms i32, filter_results [error_code i16,
 *     error_message NSTRING, matching_acls [error_code i16, error_message NSTRING,
 *     resource_type i8, resource_name STRING, pattern_type i8 (v1+, default 3),
 *     principal STRING, host STRING, operation i8, permission_type i8]]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

#define S struct kmsg_acl_filter
static const struct kd_field acl_filter_f[] = {
    KF(S, resource_type_filter, KD_I8, 0, KD_NEVER),
    KFN(S, resource_name_filter, KD_STR, 0, KD_NEVER, 0),
    KFD(S, pattern_type_filter, KD_I8, 1, KD_NEVER, 3),
    KFN(S, principal_filter, KD_STR, 0, KD_NEVER, 0),
    KFN(S, host_filter, KD_STR, 0, KD_NEVER, 0),
    KF(S, operation, KD_I8, 0, KD_NEVER),
    KF(S, permission_type, KD_I8, 0, KD_NEVER),
};
#undef S
static const struct kd_struct acl_filter_d = KD_STRUCT(struct kmsg_acl_filter, acl_filter_f);

/* ---- DescribeAcls ---- */

KD_MESSAGE(kd_describe_acls_request, "DescribeAclsRequest", KAFKA_DESCRIBE_ACLS, 0, 3, 2,
           &acl_filter_d, NULL); /* the request body is one filter (kmsg_describe_acls_request) */

#define S struct kmsg_acl_description
static const struct kd_field acl_description_f[] = {
    KF(S, principal, KD_STR, 0, KD_NEVER),
    KF(S, host, KD_STR, 0, KD_NEVER),
    KF(S, operation, KD_I8, 0, KD_NEVER),
    KF(S, permission_type, KD_I8, 0, KD_NEVER),
};
#undef S
static const struct kd_struct acl_description_d =
    KD_STRUCT(struct kmsg_acl_description, acl_description_f);

#define S struct kmsg_acl_resource
static const struct kd_field acl_resource_f[] = {
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KFD(S, pattern_type, KD_I8, 1, KD_NEVER, 3),
    KA(S, acls, 0, KD_NEVER, acl_description_d),
};
#undef S
static const struct kd_struct acl_resource_d = KD_STRUCT(struct kmsg_acl_resource, acl_resource_f);

#define S struct kmsg_describe_acls_response
static const struct kd_field describe_acls_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KA(S, resources, 0, KD_NEVER, acl_resource_d),
};
#undef S
static const struct kd_struct describe_acls_response_d =
    KD_STRUCT(struct kmsg_describe_acls_response, describe_acls_response_f);

KD_MESSAGE(kd_describe_acls_response, "DescribeAclsResponse", KAFKA_DESCRIBE_ACLS, 0, 3, 2,
           &describe_acls_response_d, NULL);

/* ---- CreateAcls ---- */

#define S struct kmsg_acl_creation
static const struct kd_field acl_creation_f[] = {
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KFD(S, resource_pattern_type, KD_I8, 1, KD_NEVER, 3),
    KF(S, principal, KD_STR, 0, KD_NEVER),
    KF(S, host, KD_STR, 0, KD_NEVER),
    KF(S, operation, KD_I8, 0, KD_NEVER),
    KF(S, permission_type, KD_I8, 0, KD_NEVER),
};
#undef S
static const struct kd_struct acl_creation_d = KD_STRUCT(struct kmsg_acl_creation, acl_creation_f);

#define S struct kmsg_create_acls_request
static const struct kd_field create_acls_request_f[] = {
    KA(S, creations, 0, KD_NEVER, acl_creation_d),
};
#undef S
static const struct kd_struct create_acls_request_d =
    KD_STRUCT(struct kmsg_create_acls_request, create_acls_request_f);

#define S struct kmsg_acl_creation_result
static const struct kd_field acl_creation_result_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct acl_creation_result_d =
    KD_STRUCT(struct kmsg_acl_creation_result, acl_creation_result_f);

#define S struct kmsg_create_acls_response
static const struct kd_field create_acls_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, results, 0, KD_NEVER, acl_creation_result_d),
};
#undef S
static const struct kd_struct create_acls_response_d =
    KD_STRUCT(struct kmsg_create_acls_response, create_acls_response_f);

KD_MESSAGE(kd_create_acls_request, "CreateAclsRequest", KAFKA_CREATE_ACLS, 0, 3, 2,
           &create_acls_request_d, NULL);
KD_MESSAGE(kd_create_acls_response, "CreateAclsResponse", KAFKA_CREATE_ACLS, 0, 3, 2,
           &create_acls_response_d, NULL);

/* ---- DeleteAcls ---- */

#define S struct kmsg_delete_acls_request
static const struct kd_field delete_acls_request_f[] = {
    KA(S, filters, 0, KD_NEVER, acl_filter_d),
};
#undef S
static const struct kd_struct delete_acls_request_d =
    KD_STRUCT(struct kmsg_delete_acls_request, delete_acls_request_f);

#define S struct kmsg_delete_acls_matching_acl
static const struct kd_field delete_acls_matching_acl_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KF(S, resource_type, KD_I8, 0, KD_NEVER),
    KF(S, resource_name, KD_STR, 0, KD_NEVER),
    KFD(S, pattern_type, KD_I8, 1, KD_NEVER, 3),
    KF(S, principal, KD_STR, 0, KD_NEVER),
    KF(S, host, KD_STR, 0, KD_NEVER),
    KF(S, operation, KD_I8, 0, KD_NEVER),
    KF(S, permission_type, KD_I8, 0, KD_NEVER),
};
#undef S
static const struct kd_struct delete_acls_matching_acl_d =
    KD_STRUCT(struct kmsg_delete_acls_matching_acl, delete_acls_matching_acl_f);

#define S struct kmsg_delete_acls_filter_result
static const struct kd_field delete_acls_filter_result_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KA(S, matching_acls, 0, KD_NEVER, delete_acls_matching_acl_d),
};
#undef S
static const struct kd_struct delete_acls_filter_result_d =
    KD_STRUCT(struct kmsg_delete_acls_filter_result, delete_acls_filter_result_f);

#define S struct kmsg_delete_acls_response
static const struct kd_field delete_acls_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, filter_results, 0, KD_NEVER, delete_acls_filter_result_d),
};
#undef S
static const struct kd_struct delete_acls_response_d =
    KD_STRUCT(struct kmsg_delete_acls_response, delete_acls_response_f);

KD_MESSAGE(kd_delete_acls_request, "DeleteAclsRequest", KAFKA_DELETE_ACLS, 0, 3, 2,
           &delete_acls_request_d, NULL);
KD_MESSAGE(kd_delete_acls_response, "DeleteAclsResponse", KAFKA_DELETE_ACLS, 0, 3, 2,
           &delete_acls_response_d, NULL);

KMSG_CODEC(describe_acls, describe_acls_request, describe_acls_response)
KMSG_CODEC(create_acls, create_acls_request, create_acls_response)
KMSG_CODEC(delete_acls, delete_acls_request, delete_acls_response)
