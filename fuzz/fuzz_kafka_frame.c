/*
 * fuzz_kafka_frame.c — libFuzzer target for a whole request frame as the server sees it (after
 * the 4-byte size): the request header (v1/v2 by the API table, tools/kafka/proto/kmsg_header.c) and
 * then the body through kmsg_request_decode for whatever key and version the header names, as the
 * server's dispatch does. Seeds are the golden captures of real clients (tests/kafka/golden/).
 * The header decoder must keep the correlation id readable whenever 8 bytes were there, and
 * what decodes round-trips (kafka_fuzz.h kf_round_trip).
 */
#include "fuzz/kafka_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kp_reader r;
    kp_reader_init(&r, data, size);
    struct kafka_request_header h;
    int rc = kafka_request_header_decode(&r, &h);
    if (size >= 8)
        KCHECK(h.correlation_id == (int32_t)((uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 |
                                             (uint32_t)data[6] << 8 | data[7]));
    if (rc != 0) {
        KCHECK(rc == RT_E_CORRUPT);
        return 0;
    }
    KCHECK(h.header_version == 1 || h.header_version == 2);
    kf_data = data;
    kf_size = size;
    kf_str_inside(h.client_id);
    struct kp_arena a;
    kp_arena_init(&a, kf_arena_buf, sizeof kf_arena_buf);
    union kmsg_request req;
    rc = kmsg_request_decode(&r, h.api_key, h.api_version, &a, &req);
    KCHECK(rc == 0 || rc == RT_E_CORRUPT || rc == KP_E_LIMIT || rc == RT_E_UNSUPPORTED);
    if (rc == RT_E_UNSUPPORTED) /* whatever is advertised has a decoder (KA1) */
        KCHECK(!kafka_api_supported(h.api_key, h.api_version));
    if (rc == 0)
        kf_round_trip(kmsg_desc(h.api_key, false), h.api_version, &req);
    if (h.api_key == KAFKA_API_VERSIONS) {
        int16_t err;
        int16_t v = kmsg_api_versions_response_version(h.api_version, &err);
        KCHECK(err == KAFKA_NONE ? v == h.api_version : v == 0);
    }
    return 0;
}
