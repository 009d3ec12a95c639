/*
 * fuzz_kafka_meta.c — libFuzzer target for ApiVersions, Metadata, FindCoordinator and
 * InitProducerId request decoders (tools/kafka/proto/kmsg_header.c, kmsg_meta.c), input layout in
 * kafka_fuzz.h. What decodes is answered through the matching response encoder: Metadata with
 * one partition per requested topic, ApiVersions with the advertised table.
 */
#include "fuzz/kafka_fuzz.h"

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 1) == 0);
    int rc = 0;
    if (key == KAFKA_API_VERSIONS) {
        kf_str_inside(req->api_versions.client_software_name);
        kf_str_inside(req->api_versions.client_software_version);
        struct kmsg_api_version_range t[64];
        size_t n = kmsg_api_versions_fill(t, 64);
        KCHECK(n > 0 && n < 64);
        struct kmsg_api_versions_response m = {0, t, (int32_t)n, 0};
        rc = kmsg_api_versions_response_encode(w, version, &m);
    } else if (key == KAFKA_METADATA) {
        const struct kmsg_metadata_request *q = &req->metadata;
        static struct kmsg_metadata_topic topics[4096];
        static const int32_t nodes[1] = {0};
        static const struct kmsg_metadata_partition part = {.leader_epoch = -1,
                                                            .replica_nodes = nodes,
                                                            .replica_nodes_count = 1,
                                                            .isr_nodes = nodes,
                                                            .isr_nodes_count = 1};
        int32_t n = q->topics_count < 0 ? 0 : q->topics_count;
        if (n > 4096)
            n = 4096;
        for (int32_t i = 0; i < n; i++) {
            kf_str_inside(q->topics[i].name); /* v10+: null for a topic asked by id */
            topics[i] = (struct kmsg_metadata_topic){
                .name = q->topics[i].name, .partitions = &part, .partitions_count = 1};
            memcpy(topics[i].topic_id, q->topics[i].topic_id, 16);
        }
        struct kmsg_metadata_broker b = {0, kp_str_of("127.0.0.1"), 9092, {NULL, -1}};
        struct kmsg_metadata_response m = {.brokers = &b,
                                           .brokers_count = 1,
                                           .cluster_id = kp_str_of("ringtail"),
                                           .topics = topics,
                                           .topics_count = n};
        rc = kmsg_metadata_response_encode(w, version, &m);
    } else if (key == KAFKA_FIND_COORDINATOR) {
        kf_str_inside(req->find_coordinator.key);
        static struct kmsg_find_coordinator_coordinator cs[4096];
        const struct kmsg_find_coordinator_request *q = &req->find_coordinator;
        int32_t n = q->coordinator_keys_count > 4096 ? 4096 : q->coordinator_keys_count;
        for (int32_t i = 0; i < n; i++) { /* v4: each key answered */
            kf_str_inside(q->coordinator_keys[i]);
            cs[i] = (struct kmsg_find_coordinator_coordinator){
                q->coordinator_keys[i], 0, kp_str_of("127.0.0.1"), 9092, 0, {NULL, 0}};
        }
        struct kmsg_find_coordinator_response m = {
            0, 0, {NULL, -1}, 0, kp_str_of("127.0.0.1"), 9092, cs, n < 0 ? 0 : n};
        rc = kmsg_find_coordinator_response_encode(w, version, &m);
    } else {
        kf_str_inside(req->init_producer_id.transactional_id);
        struct kmsg_init_producer_id_response m = {0, 0, 1000, 0};
        rc = kmsg_init_producer_id_response_encode(w, version, &m);
    }
    KCHECK(rc == 0 || rc == -12);
    if (rc == 0)
        KCHECK(kafka_frame_end(w, at) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_API_VERSIONS, KAFKA_METADATA, KAFKA_FIND_COORDINATOR,
                                   KAFKA_INIT_PRODUCER_ID};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
