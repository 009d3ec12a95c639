/*
 * kmsg_header.c — request header v1/v2, response header v0/v1, response framing, ApiVersions,
 * and the dispatch of a request body to its decoder by key. It owns nothing but bytes; it must
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
 *   KH1  The header version comes from api.h's table (kafka_request_header_version); an unknown
 *        key is read as v1 so the server can still answer with its correlation id.
 *   KH2  A frame's size field is patched last and counts holes (KP8).
 */
#include "tools/kafka/kmsg.h"
#include "tools/kafka/kmsg_int.h"

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
    h->header_version = kafka_request_header_version(key, version); /* KH1 */
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
    uint64_t size = (uint64_t)(w->len - at - 4) + holes_after; /* KH2 */
    if (size > INT32_MAX) {
        w->err = KP_E_LIMIT;
        return w->err;
    }
    kp_writer_patch_i32(w, at, (int32_t)size);
    return 0;
}

int kmsg_api_versions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_api_versions_request *out)
{
    (void)a;
    out->client_software_name.ptr = "";
    out->client_software_name.len = 0;
    out->client_software_version = out->client_software_name;
    int rc = kmsg_version_check(KAFKA_API_VERSIONS, version);
    if (rc)
        return rc;
    if (version >= 3) {
        out->client_software_name = kp_read_compact_string(r);
        out->client_software_version = kp_read_compact_string(r);
        kp_skip_tags(r);
    }
    return kmsg_finish(r);
}

int kmsg_api_versions_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_api_versions_response *m)
{
    int rc = kmsg_version_check(KAFKA_API_VERSIONS, version);
    if (rc)
        return rc;
    bool flex = version >= 3;
    kp_write_i16(w, m->error_code);
    kp_write_alen(w, flex, m->api_keys_count);
    for (int32_t i = 0; i < m->api_keys_count; i++) {
        kp_write_i16(w, m->api_keys[i].api_key);
        kp_write_i16(w, m->api_keys[i].min_version);
        kp_write_i16(w, m->api_keys[i].max_version);
        kp_write_tags(w, flex);
    }
    if (version >= 1)
        kp_write_i32(w, m->throttle_time_ms);
    kp_write_tags(w, flex);
    return w->err;
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

int kmsg_request_decode(struct kp_reader *r, int16_t api_key, int16_t version, struct kp_arena *a,
                        union kmsg_request *out)
{
    switch (api_key) {
    case KAFKA_API_VERSIONS:
        return kmsg_api_versions_request_decode(r, version, a, &out->api_versions);
    case KAFKA_METADATA:
        return kmsg_metadata_request_decode(r, version, a, &out->metadata);
    case KAFKA_PRODUCE:
        return kmsg_produce_request_decode(r, version, a, &out->produce);
    case KAFKA_FETCH:
        return kmsg_fetch_request_decode(r, version, a, &out->fetch);
    case KAFKA_LIST_OFFSETS:
        return kmsg_list_offsets_request_decode(r, version, a, &out->list_offsets);
    case KAFKA_FIND_COORDINATOR:
        return kmsg_find_coordinator_request_decode(r, version, a, &out->find_coordinator);
    case KAFKA_INIT_PRODUCER_ID:
        return kmsg_init_producer_id_request_decode(r, version, a, &out->init_producer_id);
    case KAFKA_CREATE_TOPICS:
        return kmsg_create_topics_request_decode(r, version, a, &out->create_topics);
    case KAFKA_DELETE_TOPICS:
        return kmsg_delete_topics_request_decode(r, version, a, &out->delete_topics);
    case KAFKA_DESCRIBE_CONFIGS:
        return kmsg_describe_configs_request_decode(r, version, a, &out->describe_configs);
    default:
        return RT_E_UNSUPPORTED;
    }
}
