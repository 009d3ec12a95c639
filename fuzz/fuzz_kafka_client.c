/*
 * fuzz_kafka_client.c — libFuzzer target for the answers a Kafka client of ours reads back (a
 * cluster node reading the controller's BrokerRegistration / BrokerHeartbeat / AllocateProducerIds
 * answers and the answer to a forwarded CreateTopics / CreatePartitions / DeleteTopics /
 * AlterConfigs / IncrementalAlterConfigs (handle_admin.c KAD12, controller_admin.h CA5),
 * `ringtail cluster status` reading Metadata, `ringtail txn list/abort --bootstrap` reading
 * Metadata, ListTransactions, DescribeTransactions, DescribeProducers, FindCoordinator,
 * InitProducerId and WriteTxnMarkers answers, cmd_txn_cluster.c;
 * tools/kafka/cluster/kclient.h): byte 0
 * picks a row of the API table, byte 1 a version (one past the codec's range is tried too:
 * RT_E_UNSUPPORTED), the rest is a response body decoded by that API's response description
 * (kmsg_desc(key, true)). The decoder returns one of its documented codes, never reads outside
 * the input, every string points inside it, and what decodes round-trips (kafka_fuzz.h
 * kf_round_trip).
 */
#include "fuzz/kafka_fuzz.h"

static _Alignas(16) uint8_t resp_buf[4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t rows = 0;
    const struct kafka_api *table = kafka_api_table(&rows);
    const struct kafka_api *api = &table[data[0] % rows];
    int16_t version = (int16_t)(api->codec_min + data[1] % (api->codec_max - api->codec_min + 2));
    const struct kd_message *m = kmsg_desc(api->key, true);
    if (!m)
        return 0;
    kf_data = data + 2;
    kf_size = size - 2;
    struct kp_reader r;
    kp_reader_init(&r, data + 2, size - 2);
    struct kp_arena a;
    kp_arena_init(&a, kf_arena_buf, sizeof kf_arena_buf);
    memset(resp_buf, 0, sizeof resp_buf);
    int rc = kd_decode(m, &r, version, &a, resp_buf);
    KCHECK(rc == 0 || rc == RT_E_CORRUPT || rc == KP_E_LIMIT || rc == RT_E_UNSUPPORTED);
    if (version > api->codec_max)
        KCHECK(rc == RT_E_UNSUPPORTED);
    if (rc == 0 && api->key == KAFKA_METADATA) { /* what `ringtail cluster status` prints */
        const struct kmsg_metadata_response *mr = (const void *)resp_buf;
        for (int32_t i = 0; i < mr->brokers_count; i++)
            kf_str_inside(mr->brokers[i].host);
        for (int32_t i = 0; i < mr->topics_count; i++)
            kf_str_inside(mr->topics[i].name);
    }
    if (rc == 0)
        kf_round_trip(m, version, resp_buf);
    return 0;
}
