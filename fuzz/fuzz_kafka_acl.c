/*
 * fuzz_kafka_acl.c — libFuzzer target for the ACL request decoders (DescribeAcls, CreateAcls,
 * DeleteAcls; tools/kafka/proto/kmsg_acl.c), input layout in kafka_fuzz.h. What decodes is
 * answered through the response encoders: every filter's or creation's strings lie inside the
 * input, and the answer echoes them.
 */
#include "fuzz/kafka_fuzz.h"

static void filter_inside(const struct kmsg_acl_filter *f)
{
    kf_str_inside(f->resource_name_filter);
    kf_str_inside(f->principal_filter);
    kf_str_inside(f->host_filter);
}

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 2) == 0);
    int rc = 0;
    if (key == KAFKA_DESCRIBE_ACLS) {
        const struct kmsg_acl_filter *f = &req->describe_acls.f;
        filter_inside(f);
        struct kmsg_acl_description d = {f->principal_filter.len >= 0 ? f->principal_filter
                                                                      : kp_str_of("User:*"),
                                         kp_str_of("*"), f->operation, f->permission_type};
        struct kmsg_acl_resource res = {f->resource_type_filter,
                                        f->resource_name_filter.len >= 0 ? f->resource_name_filter
                                                                         : kp_str_of("t"),
                                        f->pattern_type_filter, &d, 1};
        struct kmsg_describe_acls_response m = {.resources = &res, .resources_count = 1};
        rc = kmsg_describe_acls_response_encode(w, version, &m);
    } else if (key == KAFKA_CREATE_ACLS) {
        const struct kmsg_create_acls_request *q = &req->create_acls;
        static struct kmsg_acl_creation_result r[4096];
        int32_t n = q->creations_count > 4096 ? 4096 : q->creations_count;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->creations[i].resource_name);
            kf_str_inside(q->creations[i].principal);
            kf_str_inside(q->creations[i].host);
            r[i] = (struct kmsg_acl_creation_result){.error_code = KAFKA_INVALID_REQUEST,
                                                     .error_message = kp_str_of("fuzz")};
        }
        struct kmsg_create_acls_response m = {.results = r, .results_count = n};
        rc = kmsg_create_acls_response_encode(w, version, &m);
    } else {
        const struct kmsg_delete_acls_request *q = &req->delete_acls;
        static struct kmsg_delete_acls_filter_result r[4096];
        int32_t n = q->filters_count > 4096 ? 4096 : q->filters_count;
        for (int32_t i = 0; i < n; i++) {
            filter_inside(&q->filters[i]);
            r[i] = (struct kmsg_delete_acls_filter_result){.error_code = KAFKA_NONE};
        }
        struct kmsg_delete_acls_response m = {.filter_results = r, .filter_results_count = n};
        rc = kmsg_delete_acls_response_encode(w, version, &m);
    }
    KCHECK(rc == 0 || rc == RT_E_INVALID_ARGUMENT);
    if (rc == 0)
        KCHECK(kafka_frame_end(w, at) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_DESCRIBE_ACLS, KAFKA_CREATE_ACLS, KAFKA_DELETE_ACLS};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
