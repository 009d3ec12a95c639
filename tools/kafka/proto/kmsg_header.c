/*
 * kmsg_header.c — request header v1/v2, response header v0/v1, response framing, ApiVersions
 * (as data, kdesc.h), and a body's description by key (from the API's row, api_table.c). It owns nothing but bytes; it must
 * never decide what a request means (the server does) and never allocate.
 *
 *   request header v1: api_key i16, api_version i16, correlation_id i32, client_id NULLABLE_STRING
 *   request header v2: v1 + TAGGED_FIELDS (client_id stays a classic i16 string)
 *   response header v0: correlation_id i32;  v1: v0 + TAGGED_FIELDS
 *   frame: size i32 (bytes after it), header, body
 *
 *   ApiVersions request v0-2: (empty);  v3: client_software_name COMPACT_STRING,
 *     client_software_version COMPACT_STRING, TAGGED_FIELDS
 *   ApiVersions response: error_code i16, api_keys [api_key i16, min i16, max i16 (+tags v3)],
 *     throttle_time_ms i32 (v1+), TAGGED_FIELDS (v3)
 *
 * Invariants:
 *   KHD1  The header version comes from api.h's table (kafka_request_header_version); an unknown
 *        key is read as v1 so the server can still answer with its correlation id.
 *   KHD2  A frame's size field is patched last and counts holes (KP8).
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

#include <assert.h>

int kafka_request_header_decode(struct kp_reader *r, struct kafka_request_header *h)
{
    h->api_key = -1;
    h->api_version = -1;
    h->correlation_id = -1;
    h->client_id.ptr = NULL;
    h->client_id.len = -1;
    h->header_version = 1;
    int16_t key = kp_read_i16(r);
    if (!r->err)
        h->api_key = key;
    int16_t version = kp_read_i16(r);
    if (!r->err)
        h->api_version = version;
    int32_t corr = kp_read_i32(r);
    if (!r->err)
        h->correlation_id = corr;
    h->client_id = kp_read_nullable_string(r);
    if (r->err)
        return r->err;
    h->header_version = kafka_request_header_version(key, version); /* KHD1 */
    if (h->header_version == 2)
        kp_skip_tags(r);
    return r->err;
}

int kafka_response_header_encode(struct kp_writer *w, int16_t api_key, int16_t api_version,
                                 int32_t correlation_id)
{
    kp_write_i32(w, correlation_id);
    kp_write_tags(w, kafka_response_header_version(api_key, api_version) == 1);
    return w->err;
}

size_t kafka_frame_begin(struct kp_writer *w)
{
    size_t at = w->len;
    kp_write_i32(w, 0);
    return at;
}

int kafka_frame_end(struct kp_writer *w, size_t at)
{
    if (w->err)
        return w->err;
    assert(at + 4 <= w->len);
    uint64_t holes_after = 0;
    for (size_t i = 0; i < w->holes_count; i++)
        if (w->holes[i].at >= at + 4)
            holes_after += w->holes[i].len;
    uint64_t size = (uint64_t)(w->len - at - 4) + holes_after; /* KHD2 */
    if (size > INT32_MAX) {
        w->err = KP_E_LIMIT;
        return w->err;
    }
    kp_writer_patch_i32(w, at, (int32_t)size);
    return 0;
}

#define S struct kmsg_api_versions_request
static const struct kd_field api_versions_request_f[] = {
    KF(S, client_software_name, KD_STR, 3, KD_NEVER),
    KF(S, client_software_version, KD_STR, 3, KD_NEVER),
};
#undef S
static const struct kd_struct api_versions_request_d =
    KD_STRUCT(struct kmsg_api_versions_request, api_versions_request_f);

#define S struct kmsg_api_version_range
static const struct kd_field api_version_range_f[] = {
    KF(S, api_key, KD_I16, 0, KD_NEVER),
    KF(S, min_version, KD_I16, 0, KD_NEVER),
    KF(S, max_version, KD_I16, 0, KD_NEVER),
};
#undef S
static const struct kd_struct api_version_range_d =
    KD_STRUCT(struct kmsg_api_version_range, api_version_range_f);

#define S struct kmsg_api_versions_response
static const struct kd_field api_versions_response_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KA(S, api_keys, 0, KD_NEVER, api_version_range_d),
    KF(S, throttle_time_ms, KD_I32, 1, KD_NEVER),
};
#undef S
static const struct kd_struct api_versions_response_d =
    KD_STRUCT(struct kmsg_api_versions_response, api_versions_response_f);

KD_MESSAGE(kd_api_versions_request, "ApiVersionsRequest", KAFKA_API_VERSIONS, 0, 3, 3,
           &api_versions_request_d, NULL);
KD_MESSAGE(kd_api_versions_response, "ApiVersionsResponse", KAFKA_API_VERSIONS, 0, 3, 3,
           &api_versions_response_d, NULL);

int kmsg_api_versions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_api_versions_request *out)
{
    /* The fields hold their defaults even for a version refused here (the server answers an
     * unknown ApiVersions version without decoding its body). */
    out->client_software_name.ptr = "";
    out->client_software_name.len = 0;
    out->client_software_version = out->client_software_name;
    return kd_decode(&kd_api_versions_request, r, version, a, out);
}

int kmsg_api_versions_request_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_api_versions_request *m)
{
    return kd_encode(&kd_api_versions_request, w, version, m);
}

int kmsg_api_versions_response_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_api_versions_response *out)
{
    return kd_decode(&kd_api_versions_response, r, version, a, out);
}

int kmsg_api_versions_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_api_versions_response *m)
{
    return kd_encode(&kd_api_versions_response, w, version, m);
}

size_t kmsg_api_versions_fill(struct kmsg_api_version_range *out, size_t max)
{
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    size_t n = 0;
    for (size_t i = 0; i < count && n < max; i++) {
        if (!t[i].advertised)
            continue;
        out[n].api_key = t[i].key;
        out[n].min_version = t[i].adv_min;
        out[n].max_version = t[i].adv_max;
        n++;
    }
    return n;
}

int16_t kmsg_api_versions_response_version(int16_t requested, int16_t *error_code)
{
    if (kafka_api_supported(KAFKA_API_VERSIONS, requested)) {
        *error_code = KAFKA_NONE;
        return requested;
    }
    *error_code = KAFKA_UNSUPPORTED_VERSION;
    return 0;
}

const struct kd_message *kmsg_desc(int16_t api_key, bool response)
{
    const struct kafka_api *a = kafka_api_find(api_key); /* the API's row (api_table.c) */
    if (!a)
        return NULL;
    return response ? a->response : a->request;
}

int kmsg_request_decode(struct kp_reader *r, int16_t api_key, int16_t version, struct kp_arena *a,
                        union kmsg_request *out)
{
    if (api_key == KAFKA_API_VERSIONS)
        return kmsg_api_versions_request_decode(r, version, a, &out->api_versions);
    const struct kd_message *m = kmsg_desc(api_key, false);
    if (!m)
        return RT_E_UNSUPPORTED;
    return kd_decode(m, r, version, a, out); /* every member starts at the union's address */
}
