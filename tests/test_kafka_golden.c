/*
 * test_kafka_golden.c — the codecs against request bytes the real clients encoded themselves:
 * tests/kafka/golden/<scenario>.<Api>.bin, captured by tests/kafka/capture/capture.sh from
 * kcat / python3-confluent-kafka (librdkafka 2.0.2) and kafkajs 2.2.4. Every stored frame must
 * decode whole (header by the API table, body by kmsg_request_decode) at the version the client
 * chose from our table, and each scenario's fields must be what its client was told to send
 * (topic names, partitions, acks, codecs, record counts, isolation levels, group and transaction
 * ids). Any truncation of a frame must be refused, never read past.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "index/crc32c.h"
#include "tools/kafka/proto/kmsg.h"

static char golden_dir[4096];

static uint8_t *load(const char *name, size_t *len)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", golden_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("missing golden %s", path);
    uint8_t *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static _Alignas(16) uint8_t arena_buf[1 << 16];

struct decoded {
    uint8_t *buf;
    struct kafka_request_header h;
    union kmsg_request req;
    struct kp_arena arena;
};

/* Decodes golden `name`; asserts the header's key and version. */
static void decode(const char *name, int16_t key, int16_t version, struct decoded *d)
{
    size_t len = 0;
    d->buf = load(name, &len);
    struct kp_reader r;
    kp_reader_init(&r, d->buf, len);
    assert_int_equal(kafka_request_header_decode(&r, &d->h), 0);
    assert_int_equal(d->h.api_key, key);
    assert_int_equal(d->h.api_version, version);
    assert_int_equal(d->h.header_version, kafka_request_header_version(key, version));
    kp_arena_init(&d->arena, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_request_decode(&r, key, version, &d->arena, &d->req), 0);
}

static bool str_is(struct kp_str s, const char *c)
{
    return kp_str_eq(s, c);
}

/* Every stored frame decodes whole; every truncation of it is refused without a crash. */
static void test_every_golden_decodes(void **state)
{
    (void)state;
    DIR *dir = opendir(golden_dir);
    assert_non_null(dir);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!strstr(e->d_name, ".bin"))
            continue;
        size_t len = 0;
        uint8_t *buf = load(e->d_name, &len);
        struct kp_reader r;
        kp_reader_init(&r, buf, len);
        struct kafka_request_header h;
        assert_int_equal(kafka_request_header_decode(&r, &h), 0);
        const struct kafka_api *api = kafka_api_find(h.api_key);
        assert_non_null(api);
        /* The client chose inside what we offered: advertised (issue 12) or codec range. */
        assert_true(h.api_version >= api->codec_min && h.api_version <= api->codec_max);
        if (api->advertised)
            assert_true(kafka_api_supported(h.api_key, h.api_version));
        union kmsg_request req;
        struct kp_arena a;
        kp_arena_init(&a, arena_buf, sizeof arena_buf);
        size_t body_at = (size_t)(r.p - buf);
        int rc = kmsg_request_decode(&r, h.api_key, h.api_version, &a, &req);
        if (rc != 0)
            fail_msg("%s: %s v%d does not decode: %d", e->d_name, api->name, h.api_version, rc);
        /* Cut the body anywhere: refused (a body that is empty at some version aside). */
        for (size_t cut = body_at; cut < len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            assert_non_null(copy);
            memcpy(copy, buf, cut);
            kp_reader_init(&r, copy + body_at, cut - body_at);
            kp_arena_reset(&a);
            rc = kmsg_request_decode(&r, h.api_key, h.api_version, &a, &req);
            assert_int_equal(rc, RT_E_CORRUPT);
            free(copy);
        }
        free(buf);
        files++;
    }
    closedir(dir);
    assert_true(files >= 60);
}

/* ApiVersions: librdkafka sends v3 (flexible header v2, software name/version), kafkajs v2. */
static void test_api_versions(void **state)
{
    (void)state;
    struct decoded d;
    decode("kcat_metadata.ApiVersions.bin", KAFKA_API_VERSIONS, 3, &d);
    assert_int_equal(d.h.header_version, 2);
    assert_true(str_is(d.h.client_id, "rdkafka"));
    assert_true(str_is(d.req.api_versions.client_software_name, "librdkafka"));
    assert_true(str_is(d.req.api_versions.client_software_version, "2.0.2"));
    free(d.buf);
    decode("kafkajs_produce.ApiVersions.bin", KAFKA_API_VERSIONS, 2, &d);
    assert_int_equal(d.h.header_version, 1);
    assert_true(str_is(d.h.client_id, "golden-kafkajs"));
    free(d.buf);
    /* The answer to a version we do not know is v0 with UNSUPPORTED_VERSION. */
    int16_t err = 0;
    assert_int_equal(kmsg_api_versions_response_version(4, &err), 0);
    assert_int_equal(err, KAFKA_UNSUPPORTED_VERSION);
    assert_int_equal(kmsg_api_versions_response_version(3, &err), 3);
    assert_int_equal(err, KAFKA_NONE);
}

/* Metadata v4 from both clients: the topic they name, auto-creation as they ask. */
static void test_metadata(void **state)
{
    (void)state;
    struct decoded d;
    decode("kcat_produce_none.Metadata.bin", KAFKA_METADATA, 4, &d);
    assert_int_equal(d.req.metadata.topics_count, 1);
    assert_true(str_is(d.req.metadata.topics[0].name, "golden"));
    free(d.buf);
    /* librdkafka's first Metadata asks for brokers only: an empty array at v1+ is "no topics",
     * not "all" (KMD1) */
    decode("kcat_metadata.Metadata.bin", KAFKA_METADATA, 4, &d);
    assert_int_equal(d.req.metadata.topics_count, 0);
    free(d.buf);
    decode("kafkajs_consume.Metadata.bin", KAFKA_METADATA, 4, &d);
    assert_int_equal(d.req.metadata.topics_count, 1);
    assert_true(str_is(d.req.metadata.topics[0].name, "golden"));
    assert_true(d.req.metadata.allow_auto_topic_creation);
    free(d.buf);
    /* kafkajs's admin asks for every topic (null) and never auto-creates */
    decode("kafkajs_admin.Metadata.bin", KAFKA_METADATA, 4, &d);
    assert_int_equal(d.req.metadata.topics_count, -1);
    assert_false(d.req.metadata.allow_auto_topic_creation);
    free(d.buf);
}

struct batch_view {
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t producer_id;
    int32_t base_sequence;
    int32_t record_count;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The records field is exactly the client's RecordBatch: magic 2, a CRC-32C that holds. */
static struct batch_view batch_of(struct kp_bytes b)
{
    assert_true(b.len >= 61);
    assert_int_equal(b.ptr[16], 2);
    assert_int_equal((int32_t)be32(b.ptr + 8), b.len - 12);
    assert_true(crc32c(0, b.ptr + 21, (size_t)b.len - 21) == be32(b.ptr + 17));
    struct batch_view v;
    v.attributes = (int16_t)(b.ptr[21] << 8 | b.ptr[22]);
    v.last_offset_delta = (int32_t)be32(b.ptr + 23);
    v.producer_id = (int64_t)((uint64_t)be32(b.ptr + 43) << 32 | be32(b.ptr + 47));
    v.base_sequence = (int32_t)be32(b.ptr + 53);
    v.record_count = (int32_t)be32(b.ptr + 57);
    return v;
}

/* Produce v7 from kcat with every codec: acks all, one partition, five keyed records. */
static void test_produce_every_codec(void **state)
{
    (void)state;
    static const char *codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    for (int c = 0; c < 5; c++) {
        char name[128];
        snprintf(name, sizeof name, "kcat_produce_%s.Produce.bin", codecs[c]);
        struct decoded d;
        decode(name, KAFKA_PRODUCE, 7, &d);
        const struct kmsg_produce_request *p = &d.req.produce;
        assert_int_equal(p->transactional_id.len, -1);
        assert_int_equal(p->acks, -1);
        assert_int_equal(p->topics_count, 1);
        assert_true(str_is(p->topics[0].name, "golden"));
        assert_int_equal(p->topics[0].partitions_count, 1);
        assert_int_equal(p->topics[0].partitions[0].index, 0);
        struct batch_view v = batch_of(p->topics[0].partitions[0].records);
        assert_int_equal(v.attributes & 7, c);
        assert_int_equal(v.record_count, 5);
        assert_int_equal(v.last_offset_delta, 4);
        /* the records field points into the request: appended as encoded, never copied */
        assert_true(p->topics[0].partitions[0].records.ptr > d.buf);
        free(d.buf);
    }
}

/* Idempotent producers: InitProducerId without a transactional id, then sequenced batches. */
static void test_produce_idempotent(void **state)
{
    (void)state;
    struct decoded d;
    decode("kcat_idempotent.InitProducerId.bin", KAFKA_INIT_PRODUCER_ID, 1, &d);
    assert_int_equal(d.req.init_producer_id.transactional_id.len, -1);
    free(d.buf);
    decode("kcat_idempotent.Produce.bin", KAFKA_PRODUCE, 7, &d);
    assert_int_equal(d.req.produce.acks, -1);
    assert_int_equal(d.req.produce.topics[0].partitions[0].index, 1);
    struct batch_view v = batch_of(d.req.produce.topics[0].partitions[0].records);
    assert_int_equal(v.attributes & 7, 4);
    assert_true(v.producer_id >= 0);
    assert_int_equal(v.base_sequence, 0);
    assert_int_equal(v.record_count, 5);
    free(d.buf);
    decode("kafkajs_produce.InitProducerId.bin", KAFKA_INIT_PRODUCER_ID, 1, &d);
    assert_int_equal(d.req.init_producer_id.transactional_id.len, -1);
    free(d.buf);
    decode("kafkajs_produce.Produce.bin", KAFKA_PRODUCE, 7, &d);
    assert_int_equal(d.req.produce.acks, -1);
    assert_true(str_is(d.req.produce.topics[0].name, "golden"));
    assert_int_equal(d.req.produce.topics[0].partitions[0].index, 2);
    v = batch_of(d.req.produce.topics[0].partitions[0].records);
    assert_int_equal(v.attributes & 7, 1); /* gzip */
    assert_int_equal(v.record_count, 4);
    assert_true(v.producer_id >= 0);
    assert_int_equal(v.base_sequence, 0);
    free(d.buf);
}

/* Fetch v11 and ListOffsets at read_committed, from kcat and kafkajs. */
static void test_fetch_and_list_offsets(void **state)
{
    (void)state;
    struct decoded d;
    decode("kcat_consume.Fetch.bin", KAFKA_FETCH, 11, &d);
    const struct kmsg_fetch_request *f = &d.req.fetch;
    assert_int_equal(f->replica_id, -1);
    assert_int_equal(f->isolation_level, 1);
    assert_int_equal(f->topics_count, 1);
    assert_true(str_is(f->topics[0].topic, "golden"));
    assert_int_equal(f->topics[0].partitions_count, 1);
    assert_int_equal(f->topics[0].partitions[0].partition, 0);
    assert_int_equal(f->topics[0].partitions[0].fetch_offset, 0);
    assert_true(f->topics[0].partitions[0].partition_max_bytes > 0);
    free(d.buf);
    decode("kcat_consume.ListOffsets.bin", KAFKA_LIST_OFFSETS, 2, &d);
    assert_int_equal(d.req.list_offsets.isolation_level, 1);
    assert_true(str_is(d.req.list_offsets.topics[0].name, "golden"));
    assert_int_equal(d.req.list_offsets.topics[0].partitions[0].timestamp, -2); /* earliest */
    free(d.buf);
    decode("kafkajs_consume.Fetch.bin", KAFKA_FETCH, 11, &d);
    assert_int_equal(d.req.fetch.isolation_level, 1);
    assert_true(str_is(d.req.fetch.topics[0].topic, "golden"));
    assert_int_equal(d.req.fetch.topics[0].partitions_count, 3);
    free(d.buf);
    decode("kafkajs_consume.ListOffsets.bin", KAFKA_LIST_OFFSETS, 3, &d);
    assert_int_equal(d.req.list_offsets.isolation_level, 1);
    assert_int_equal(d.req.list_offsets.topics[0].partitions_count, 3);
    free(d.buf);
}

/* Admin requests: CreateTopics, DescribeConfigs, DeleteTopics from both admin clients. */
static void test_admin(void **state)
{
    (void)state;
    struct decoded d;
    decode("py_admin.CreateTopics.bin", KAFKA_CREATE_TOPICS, 4, &d);
    assert_int_equal(d.req.create_topics.topics_count, 1);
    assert_true(str_is(d.req.create_topics.topics[0].name, "gt-created"));
    assert_int_equal(d.req.create_topics.topics[0].num_partitions, 4);
    assert_int_equal(d.req.create_topics.topics[0].replication_factor, 1);
    assert_false(d.req.create_topics.validate_only);
    free(d.buf);
    decode("kafkajs_admin.CreateTopics.bin", KAFKA_CREATE_TOPICS, 3, &d);
    assert_true(str_is(d.req.create_topics.topics[0].name, "gj-created"));
    assert_int_equal(d.req.create_topics.topics[0].num_partitions, 5);
    assert_int_equal(d.req.create_topics.topics[0].replication_factor, 1);
    free(d.buf);
    decode("py_admin.DescribeConfigs.bin", KAFKA_DESCRIBE_CONFIGS, 1, &d);
    assert_int_equal(d.req.describe_configs.resources_count, 1);
    assert_int_equal(d.req.describe_configs.resources[0].resource_type, KAFKA_RESOURCE_TOPIC);
    assert_true(str_is(d.req.describe_configs.resources[0].resource_name, "golden"));
    assert_int_equal(d.req.describe_configs.resources[0].configuration_keys_count, -1);
    free(d.buf);
    decode("kafkajs_admin.DescribeConfigs.bin", KAFKA_DESCRIBE_CONFIGS, 2, &d);
    assert_int_equal(d.req.describe_configs.resources[0].resource_type, KAFKA_RESOURCE_TOPIC);
    assert_true(str_is(d.req.describe_configs.resources[0].resource_name, "golden"));
    assert_false(d.req.describe_configs.include_synonyms);
    free(d.buf);
    decode("py_admin.DeleteTopics.bin", KAFKA_DELETE_TOPICS, 1, &d);
    assert_int_equal(d.req.delete_topics.topic_names_count, 1);
    assert_true(str_is(d.req.delete_topics.topic_names[0], "gt-created"));
    free(d.buf);
    decode("kafkajs_admin.DeleteTopics.bin", KAFKA_DELETE_TOPICS, 1, &d);
    assert_true(str_is(d.req.delete_topics.topic_names[0], "gj-created"));
    free(d.buf);
}

/* FindCoordinator v2: group keys (type 0) and transaction keys (type 1). */
static void test_find_coordinator(void **state)
{
    (void)state;
    struct decoded d;
    decode("py_group.FindCoordinator.bin", KAFKA_FIND_COORDINATOR, 2, &d);
    assert_true(str_is(d.req.find_coordinator.key, "golden-group"));
    assert_int_equal(d.req.find_coordinator.key_type, 0);
    free(d.buf);
    decode("py_txn.FindCoordinator.bin", KAFKA_FIND_COORDINATOR, 2, &d);
    assert_true(str_is(d.req.find_coordinator.key, "golden-txn"));
    assert_int_equal(d.req.find_coordinator.key_type, 1);
    free(d.buf);
    decode("kafkajs_consume.FindCoordinator.bin", KAFKA_FIND_COORDINATOR, 2, &d);
    assert_true(str_is(d.req.find_coordinator.key, "golden-js"));
    assert_int_equal(d.req.find_coordinator.key_type, 0);
    free(d.buf);
}

/* Issue 13's transaction APIs, from librdkafka (python) and kafkajs. */
static void test_transactions(void **state)
{
    (void)state;
    struct decoded d;
    decode("py_txn.InitProducerId.bin", KAFKA_INIT_PRODUCER_ID, 1, &d);
    assert_true(str_is(d.req.init_producer_id.transactional_id, "golden-txn"));
    assert_true(d.req.init_producer_id.transaction_timeout_ms > 0);
    free(d.buf);
    decode("py_txn.AddPartitionsToTxn.bin", KAFKA_ADD_PARTITIONS_TO_TXN, 0, &d);
    assert_true(str_is(d.req.add_partitions_to_txn.transactional_id, "golden-txn"));
    assert_int_equal(d.req.add_partitions_to_txn.topics_count, 1);
    assert_true(str_is(d.req.add_partitions_to_txn.topics[0].name, "golden"));
    assert_int_equal(d.req.add_partitions_to_txn.topics[0].partitions_count, 1);
    assert_int_equal(d.req.add_partitions_to_txn.topics[0].partitions[0], 1);
    free(d.buf);
    decode("py_txn.AddOffsetsToTxn.bin", KAFKA_ADD_OFFSETS_TO_TXN, 0, &d);
    assert_true(str_is(d.req.add_offsets_to_txn.group_id, "golden-group"));
    free(d.buf);
    decode("py_txn.TxnOffsetCommit.bin", KAFKA_TXN_OFFSET_COMMIT, 2, &d);
    assert_true(str_is(d.req.txn_offset_commit.group_id, "golden-group"));
    assert_true(str_is(d.req.txn_offset_commit.topics[0].name, "golden"));
    assert_int_equal(d.req.txn_offset_commit.topics[0].partitions[0].partition_index, 0);
    assert_int_equal(d.req.txn_offset_commit.topics[0].partitions[0].committed_offset, 2);
    free(d.buf);
    decode("py_txn.EndTxn.bin", KAFKA_END_TXN, 1, &d);
    assert_true(str_is(d.req.end_txn.transactional_id, "golden-txn"));
    assert_true(d.req.end_txn.committed);
    free(d.buf);
    decode("py_txn.Produce.bin", KAFKA_PRODUCE, 7, &d);
    assert_true(str_is(d.req.produce.transactional_id, "golden-txn"));
    struct batch_view v = batch_of(d.req.produce.topics[0].partitions[0].records);
    assert_true(v.attributes & 0x10); /* transactional */
    assert_int_equal(v.record_count, 3);
    free(d.buf);
    decode("kafkajs_txn.AddPartitionsToTxn.bin", KAFKA_ADD_PARTITIONS_TO_TXN, 1, &d);
    assert_true(str_is(d.req.add_partitions_to_txn.transactional_id, "golden-js-txn"));
    free(d.buf);
    decode("kafkajs_txn.TxnOffsetCommit.bin", KAFKA_TXN_OFFSET_COMMIT, 1, &d);
    assert_true(str_is(d.req.txn_offset_commit.group_id, "golden-js"));
    assert_int_equal(d.req.txn_offset_commit.topics[0].partitions[0].committed_offset, 1);
    assert_int_equal(d.req.txn_offset_commit.topics[0].partitions[0].committed_leader_epoch, -1);
    free(d.buf);
    decode("kafkajs_txn.EndTxn.bin", KAFKA_END_TXN, 1, &d);
    assert_true(d.req.end_txn.committed);
    free(d.buf);
}

/* Issue 13's group APIs: a librdkafka and a kafkajs consumer joining, syncing, committing. */
static void test_groups(void **state)
{
    (void)state;
    struct decoded d;
    decode("py_group.JoinGroup.bin", KAFKA_JOIN_GROUP, 5, &d);
    assert_true(str_is(d.req.join_group.group_id, "golden-group"));
    assert_int_equal(d.req.join_group.session_timeout_ms, 6000);
    assert_true(str_is(d.req.join_group.protocol_type, "consumer"));
    assert_true(d.req.join_group.protocols_count >= 1);
    free(d.buf);
    decode("kafkajs_consume.JoinGroup.bin", KAFKA_JOIN_GROUP, 5, &d);
    assert_true(str_is(d.req.join_group.group_id, "golden-js"));
    assert_int_equal(d.req.join_group.session_timeout_ms, 6000);
    assert_true(d.req.join_group.protocols_count >= 1);
    free(d.buf);
    decode("py_group.SyncGroup.bin", KAFKA_SYNC_GROUP, 3, &d);
    assert_true(str_is(d.req.sync_group.group_id, "golden-group"));
    assert_int_equal(d.req.sync_group.assignments_count, 1); /* the leader assigns itself */
    free(d.buf);
    decode("py_group.Heartbeat.bin", KAFKA_HEARTBEAT, 3, &d);
    assert_true(str_is(d.req.heartbeat.group_id, "golden-group"));
    free(d.buf);
    decode("py_group.OffsetCommit.bin", KAFKA_OFFSET_COMMIT, 7, &d);
    assert_true(str_is(d.req.offset_commit.group_id, "golden-group"));
    assert_true(str_is(d.req.offset_commit.topics[0].name, "golden"));
    assert_int_equal(d.req.offset_commit.topics[0].partitions[0].committed_offset, 3);
    free(d.buf);
    decode("py_group.OffsetFetch.bin", KAFKA_OFFSET_FETCH, 5, &d);
    assert_true(str_is(d.req.offset_fetch.group_id, "golden-group"));
    assert_true(d.req.offset_fetch.topics_count >= 1);
    free(d.buf);
    decode("kafkajs_consume.OffsetFetch.bin", KAFKA_OFFSET_FETCH, 4, &d);
    assert_true(str_is(d.req.offset_fetch.group_id, "golden-js"));
    free(d.buf);
    decode("py_group.LeaveGroup.bin", KAFKA_LEAVE_GROUP, 1, &d);
    assert_true(str_is(d.req.leave_group.group_id, "golden-group"));
    free(d.buf);
    decode("kafkajs_admin.ListGroups.bin", KAFKA_LIST_GROUPS, 2, &d);
    free(d.buf);
    decode("kafkajs_admin.DescribeGroups.bin", KAFKA_DESCRIBE_GROUPS, 2, &d);
    assert_int_equal(d.req.describe_groups.groups_count, 1);
    assert_true(str_is(d.req.describe_groups.groups[0], "golden-group"));
    free(d.buf);
}

int main(void)
{
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    snprintf(golden_dir, sizeof golden_dir, "%.*s/kafka/golden", slash ? (int)(slash - src) : 1,
             slash ? src : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_golden_decodes),
        cmocka_unit_test(test_api_versions),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_produce_every_codec),
        cmocka_unit_test(test_produce_idempotent),
        cmocka_unit_test(test_fetch_and_list_offsets),
        cmocka_unit_test(test_admin),
        cmocka_unit_test(test_find_coordinator),
        cmocka_unit_test(test_transactions),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
