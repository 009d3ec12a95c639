/*
 * test_kafka_kmsg.c — the request decoders (tools/kafka/kmsg_*.c) against hostile input written
 * from outside: inner array counts that lie (KP4: refused before the arena is touched), an arena
 * too small for honest arrays (KP6: KP_E_LIMIT), trailing bytes, nulls where none is allowed,
 * versions outside the codec range, and the request header's v1/v2 choice (KHD1), including the
 * correlation id surviving a truncated header; the KIP-664 operator codecs (no client at hand
 * sends them, so their requests are written here field by field from Kafka's definitions).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/kafka/proto/kmsg.h"

static _Alignas(16) uint8_t arena_buf[4096];

/* A Produce v7 body: null txn id, acks -1, timeout, 1 topic "t" with `parts` partitions
 * (declared), each index i and a 3-byte records field. */
static size_t produce_body(uint8_t *b, int32_t declared_parts, int32_t real_parts)
{
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_i16(&w, -1);
    kp_write_i16(&w, -1);
    kp_write_i32(&w, 30000);
    kp_write_i32(&w, 1);
    kp_write_string(&w, kp_str_of("t"));
    kp_write_i32(&w, declared_parts);
    for (int32_t i = 0; i < real_parts; i++) {
        kp_write_i32(&w, i);
        kp_write_nullable_bytes(&w, (struct kp_bytes){(const uint8_t *)"abc", 3});
    }
    size_t n = w.len;
    memcpy(b, w.buf, n);
    kp_writer_free(&w);
    return n;
}

static int decode_produce(const uint8_t *b, size_t n, size_t arena_bytes,
                          struct kmsg_produce_request *out, struct kp_arena *a)
{
    struct kp_reader r;
    kp_reader_init(&r, b, n);
    kp_arena_init(a, arena_buf, arena_bytes);
    return kmsg_produce_request_decode(&r, 7, a, out);
}

static void test_honest_produce(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = produce_body(b, 3, 3);
    struct kmsg_produce_request p;
    struct kp_arena a;
    assert_int_equal(decode_produce(b, n, sizeof arena_buf, &p, &a), 0);
    assert_int_equal(p.acks, -1);
    assert_int_equal(p.transactional_id.len, -1);
    assert_int_equal(p.topics_count, 1);
    assert_int_equal(p.topics[0].partitions_count, 3);
    assert_int_equal(p.topics[0].partitions[2].index, 2);
    assert_int_equal(p.topics[0].partitions[2].records.len, 3);
    assert_ptr_equal(p.topics[0].partitions[2].records.ptr, b + n - 3); /* into the request */
}

/* KP4: a partition count of 2^31-1, or one more than the bytes hold, is refused before the
 * arena gives out a byte. */
static void test_lying_inner_count(void **state)
{
    (void)state;
    uint8_t b[512];
    struct kmsg_produce_request p;
    struct kp_arena a;
    size_t n = produce_body(b, INT32_MAX, 2);
    assert_int_equal(decode_produce(b, n, sizeof arena_buf, &p, &a), RT_E_CORRUPT);
    size_t topics_bytes = a.used_bytes;
    assert_true(topics_bytes <= sizeof(struct kmsg_produce_topic) + 8); /* only the topic */
    n = produce_body(b, 3, 2);
    assert_int_equal(decode_produce(b, n, sizeof arena_buf, &p, &a), RT_E_CORRUPT);
    assert_int_equal(p.topics_count, 0);
    n = produce_body(b, -1, 0); /* a null array where none is allowed */
    assert_int_equal(decode_produce(b, n, sizeof arena_buf, &p, &a), RT_E_CORRUPT);
}

/* KP6: honest arrays that do not fit the arena are KP_E_LIMIT, never an overflow. */
static void test_arena_too_small(void **state)
{
    (void)state;
    uint8_t b[4096];
    struct kmsg_produce_request p;
    struct kp_arena a;
    size_t n = produce_body(b, 100, 100);
    assert_int_equal(decode_produce(b, n, 256, &p, &a), KP_E_LIMIT);
    assert_true(a.used_bytes <= 256);
    assert_int_equal(decode_produce(b, n, sizeof arena_buf, &p, &a), 0);
    assert_int_equal(p.topics[0].partitions_count, 100);
}

/* A message must be consumed whole; versions outside the codec range are refused. */
static void test_trailing_bytes_and_versions(void **state)
{
    (void)state;
    uint8_t b[512];
    size_t n = produce_body(b, 1, 1);
    b[n] = 0;
    struct kmsg_produce_request p;
    struct kp_arena a;
    assert_int_equal(decode_produce(b, n + 1, sizeof arena_buf, &p, &a), RT_E_CORRUPT);
    struct kp_reader r;
    kp_reader_init(&r, b, n);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_produce_request_decode(&r, 10, &a, &p), RT_E_UNSUPPORTED);
    union kmsg_request q;
    kp_reader_init(&r, b, n);
    assert_int_equal(kmsg_request_decode(&r, KAFKA_FETCH, 13, &a, &q), RT_E_UNSUPPORTED);
    assert_int_equal(kmsg_request_decode(&r, 57, 0, &a, &q), RT_E_UNSUPPORTED);
    /* Produce v2 (no transactional id) decodes the same body minus its first field. */
    kp_reader_init(&r, b + 2, n - 2);
    assert_int_equal(kmsg_request_decode(&r, KAFKA_PRODUCE, 2, &a, &q), 0);
    assert_int_equal(q.produce.acks, -1);
    assert_int_equal(q.produce.transactional_id.len, -1);
}

/* KHD1: header v1 for classic versions, v2 (tags after the client id) for flexible ones; an
 * unknown key reads as v1; a cut header still yields the correlation id once it was read. */
static void test_request_header(void **state)
{
    (void)state;
    static const uint8_t v2[] = {0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x00,
                                 0x02, 'i',  'd',  0x01, 0x00, 0x01, 'x', /* tags: one, 1 byte */
                                 0x03, 'c',  'j',  0x02, '1',  0x00};
    struct kp_reader r;
    kp_reader_init(&r, v2, sizeof v2);
    struct kafka_request_header h;
    assert_int_equal(kafka_request_header_decode(&r, &h), 0);
    assert_int_equal(h.api_key, KAFKA_API_VERSIONS);
    assert_int_equal(h.api_version, 3);
    assert_int_equal(h.correlation_id, 5);
    assert_int_equal(h.header_version, 2);
    assert_true(kp_str_eq(h.client_id, "id"));
    struct kmsg_api_versions_request av;
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_api_versions_request_decode(&r, 3, &a, &av), 0);
    assert_true(kp_str_eq(av.client_software_name, "cj"));
    assert_true(kp_str_eq(av.client_software_version, "1"));

    static const uint8_t unknown[] = {0x00, 0x63, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0xff, 0xff};
    kp_reader_init(&r, unknown, sizeof unknown);
    assert_int_equal(kafka_request_header_decode(&r, &h), 0);
    assert_int_equal(h.header_version, 1);
    assert_int_equal(h.correlation_id, 9);
    assert_int_equal(h.client_id.len, -1);
    for (size_t cut = 0; cut < sizeof unknown; cut++) {
        kp_reader_init(&r, unknown, cut);
        assert_int_equal(kafka_request_header_decode(&r, &h), RT_E_CORRUPT);
        assert_int_equal(h.correlation_id, cut >= 8 ? 9 : -1);
    }
}

/* Metadata: v0's empty array and v1+'s null are "all topics"; v1+'s empty is "none" (KMD1). */
static void test_metadata_all_topics(void **state)
{
    (void)state;
    static const uint8_t empty[] = {0, 0, 0, 0};
    static const uint8_t null[] = {0xff, 0xff, 0xff, 0xff};
    struct kmsg_metadata_request m;
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kp_reader r;
    kp_reader_init(&r, empty, 4);
    assert_int_equal(kmsg_metadata_request_decode(&r, 0, &a, &m), 0);
    assert_int_equal(m.topics_count, -1);
    kp_reader_init(&r, empty, 4);
    assert_int_equal(kmsg_metadata_request_decode(&r, 1, &a, &m), 0);
    assert_int_equal(m.topics_count, 0);
    kp_reader_init(&r, null, 4);
    assert_int_equal(kmsg_metadata_request_decode(&r, 1, &a, &m), 0);
    assert_int_equal(m.topics_count, -1);
    kp_reader_init(&r, null, 4);
    assert_int_equal(kmsg_metadata_request_decode(&r, 0, &a, &m), RT_E_CORRUPT);
    kp_reader_init(&r, null, 4); /* v4 needs the allow_auto_topic_creation byte */
    assert_int_equal(kmsg_metadata_request_decode(&r, 4, &a, &m), RT_E_CORRUPT);
}

/* The new versions written by hand from Kafka's JSON, decoded: Metadata v12 topics by id with
 * a null name (KM3), DeleteTopics v6 by name or id with topic_names filled (KMA1), Produce v9
 * (flexible) and its v8 response's record_errors/error_message. */
static void test_new_versions_by_hand(void **state)
{
    (void)state;
    struct kp_writer w;
    struct kp_reader r;
    struct kp_arena a;
    static const uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    /* Metadata v12: topics [ {id, null}, {0, "t"} ], auto-create false, topic ops true */
    kp_writer_init(&w, NULL, 0);
    kp_write_uvarint(&w, 3);
    kp_write_raw(&w, id, 16);
    kp_write_uvarint(&w, 0); /* null compact string */
    kp_write_uvarint(&w, 0); /* tags */
    kp_write_raw(&w, (uint8_t[16]){0}, 16);
    kp_write_uvarint(&w, 2);
    kp_write_raw(&w, "t", 1);
    kp_write_uvarint(&w, 0);
    kp_write_bool(&w, false);
    kp_write_bool(&w, true);
    kp_write_uvarint(&w, 0);
    struct kmsg_metadata_request m;
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_metadata_request_decode(&r, 12, &a, &m), 0);
    assert_int_equal(m.topics_count, 2);
    assert_int_equal(m.topics[0].name.len, -1);
    assert_memory_equal(m.topics[0].topic_id, id, 16);
    assert_int_equal(m.topics[1].name.len, 1);
    assert_false(m.allow_auto_topic_creation);
    assert_true(m.include_topic_authorized_operations);
    kp_reader_init(&r, w.buf, w.len); /* v9 has no ids and no null names */
    assert_int_equal(kmsg_metadata_request_decode(&r, 9, &a, &m), RT_E_CORRUPT);
    kp_writer_free(&w);

    /* DeleteTopics v6: topics [ {"gone", 0}, {null, id} ], timeout 1000 */
    kp_writer_init(&w, NULL, 0);
    kp_write_uvarint(&w, 3);
    kp_write_uvarint(&w, 5);
    kp_write_raw(&w, "gone", 4);
    kp_write_raw(&w, (uint8_t[16]){0}, 16);
    kp_write_uvarint(&w, 0);
    kp_write_uvarint(&w, 0);
    kp_write_raw(&w, id, 16);
    kp_write_uvarint(&w, 0);
    kp_write_i32(&w, 1000);
    kp_write_uvarint(&w, 0);
    struct kmsg_delete_topics_request d;
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_delete_topics_request_decode(&r, 6, &a, &d), 0);
    assert_int_equal(d.topics_count, 2);
    assert_int_equal(d.topic_names_count, 2);
    assert_int_equal(d.topic_names[0].len, 4);
    assert_memory_equal(d.topic_names[0].ptr, "gone", 4);
    assert_int_equal(d.topic_names[1].len, -1);
    assert_memory_equal(d.topics[1].topic_id, id, 16);
    assert_int_equal(d.timeout_ms, 1000);
    kp_writer_free(&w);

    /* Produce v9: compact null transactional id, acks, timeout, one topic, one partition */
    kp_writer_init(&w, NULL, 0);
    kp_write_uvarint(&w, 0);
    kp_write_i16(&w, -1);
    kp_write_i32(&w, 5000);
    kp_write_uvarint(&w, 2);
    kp_write_uvarint(&w, 2);
    kp_write_raw(&w, "t", 1);
    kp_write_uvarint(&w, 2);
    kp_write_i32(&w, 3);
    kp_write_uvarint(&w, 4);
    kp_write_raw(&w, "abc", 3);
    kp_write_uvarint(&w, 0);
    kp_write_uvarint(&w, 0);
    kp_write_uvarint(&w, 0);
    struct kmsg_produce_request p;
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_produce_request_decode(&r, 9, &a, &p), 0);
    assert_int_equal(p.transactional_id.len, -1);
    assert_int_equal(p.timeout_ms, 5000);
    assert_int_equal(p.topics[0].partitions[0].index, 3);
    assert_int_equal(p.topics[0].partitions[0].records.len, 3);
    kp_writer_free(&w);

    /* Produce v8 response: record_errors [ {0, "bad"} ], error_message "why" after them */
    struct kmsg_produce_record_error re = {0, kp_str_of("bad")};
    struct kmsg_produce_partition_response pp = {.index = 1,
                                                 .base_offset = -1,
                                                 .log_append_time_ms = -1,
                                                 .log_start_offset = -1,
                                                 .error_code = 87,
                                                 .record_errors = &re,
                                                 .record_errors_count = 1,
                                                 .error_message = kp_str_of("why")};
    struct kmsg_produce_topic_response pt = {kp_str_of("t"), &pp, 1};
    struct kmsg_produce_response pr = {&pt, 1, 0};
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_produce_response_encode(&w, 8, &pr), 0);
    /* [1][t][1][index 1][87][-1][-1 append][-1 start][1][0]["bad"]["why"][throttle 0] */
    static const uint8_t want[] = {0,    0,    0,    1,    0,    1,    't',  0,    0,    0,    1,
                                   0,    0,    0,    1,    0,    87,   0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff,                               /* base */
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* append */
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* start */
                                   0,    0,    0,    1,    0,    0,    0,    0,    0,    3,    'b',
                                   'a',  'd',  0,    3,    'w',  'h',  'y',  0,    0,    0,    0};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    kp_writer_free(&w);
}

/* KIP-664: requests written field by field (compact forms, tagged fields after each struct),
 * decoded; responses encoded and read back in wire order. */
static void test_operator_apis(void **state)
{
    (void)state;
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    kp_write_compact_array_len(&w, 1); /* state_filters */
    kp_write_compact_string(&w, kp_str_of("Ongoing"));
    kp_write_compact_array_len(&w, 2); /* producer_id_filters */
    kp_write_i64(&w, 7);
    kp_write_i64(&w, 9);
    kp_write_i64(&w, 60000);                                      /* duration_filter (v1) */
    static const uint8_t tags[] = {0x01, 0x05, 0x02, 0xaa, 0xbb}; /* one unknown tag, skipped */
    kp_write_raw(&w, tags, sizeof tags);
    union kmsg_request q;
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    assert_int_equal(kmsg_request_decode(&r, KAFKA_LIST_TRANSACTIONS, 1, &a, &q), 0);
    assert_int_equal(q.list_transactions.state_filters_count, 1);
    assert_true(kp_str_eq(q.list_transactions.state_filters[0], "Ongoing"));
    assert_int_equal(q.list_transactions.producer_id_filters_count, 2);
    assert_int_equal(q.list_transactions.producer_id_filters[1], 9);
    assert_int_equal(q.list_transactions.duration_filter_ms, 60000);
    kp_reader_init(&r, w.buf, w.len); /* at v0 the duration is not there: trailing bytes */
    assert_int_equal(kmsg_request_decode(&r, KAFKA_LIST_TRANSACTIONS, 0, &a, &q), RT_E_CORRUPT);
    assert_true(kafka_api_supported(KAFKA_LIST_TRANSACTIONS, 0)); /* advertised (KA3) */

    kp_writer_reset(&w, NULL, 0);
    kp_write_compact_array_len(&w, 1);
    kp_write_compact_string(&w, kp_str_of("orders"));
    kp_write_compact_array_len(&w, 2);
    kp_write_i32(&w, 0);
    kp_write_i32(&w, 3);
    kp_write_tags(&w, true);
    kp_write_tags(&w, true);
    kp_reader_init(&r, w.buf, w.len);
    assert_int_equal(kmsg_request_decode(&r, KAFKA_DESCRIBE_PRODUCERS, 0, &a, &q), 0);
    assert_true(kp_str_eq(q.describe_producers.topics[0].name, "orders"));
    assert_int_equal(q.describe_producers.topics[0].partitions[1], 3);

    kp_writer_reset(&w, NULL, 0);
    kp_write_compact_array_len(&w, 2);
    kp_write_compact_string(&w, kp_str_of("t1"));
    kp_write_compact_string(&w, kp_str_of("t2"));
    kp_write_tags(&w, true);
    kp_reader_init(&r, w.buf, w.len);
    assert_int_equal(kmsg_request_decode(&r, KAFKA_DESCRIBE_TRANSACTIONS, 0, &a, &q), 0);
    assert_int_equal(q.describe_transactions.transactional_ids_count, 2);
    assert_true(kp_str_eq(q.describe_transactions.transactional_ids[1], "t2"));

    /* DescribeTransactions response, read back in wire order. */
    static const int32_t parts[2] = {1, 2};
    struct kmsg_transaction_partitions tp = {kp_str_of("orders"), parts, 2};
    struct kmsg_transaction_state ts = {
        0, kp_str_of("t1"), kp_str_of("Ongoing"), 60000, 1234, 4000, 3, &tp, 1};
    struct kmsg_describe_transactions_response m = {0, &ts, 1};
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_describe_transactions_response_encode(&w, 0, &m), 0);
    kp_reader_init(&r, w.buf, w.len);
    assert_int_equal(kp_read_i32(&r), 0);
    assert_int_equal(kp_read_compact_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i16(&r), 0);
    assert_true(kp_str_eq(kp_read_compact_string(&r), "t1"));
    assert_true(kp_str_eq(kp_read_compact_string(&r), "Ongoing"));
    assert_int_equal(kp_read_i32(&r), 60000);
    assert_int_equal(kp_read_i64(&r), 1234);
    assert_int_equal(kp_read_i64(&r), 4000);
    assert_int_equal(kp_read_i16(&r), 3); /* ProducerEpoch: int16 in Kafka's JSON */
    assert_int_equal(kp_read_compact_array_len(&r, 1), 1);
    assert_true(kp_str_eq(kp_read_compact_string(&r), "orders"));
    assert_int_equal(kp_read_compact_array_len(&r, 4), 2);
    assert_int_equal(kp_read_i32(&r), 1);
    assert_int_equal(kp_read_i32(&r), 2);
    kp_skip_tags(&r); /* topic */
    kp_skip_tags(&r); /* state */
    kp_skip_tags(&r); /* response */
    kp_expect_end(&r);
    assert_int_equal(r.err, 0);

    /* ListTransactions and DescribeProducers responses take the same path. */
    struct kmsg_listed_transaction lt = {kp_str_of("t1"), 4000, kp_str_of("Ongoing")};
    static const struct kp_str unknown = {"Bogus", 5};
    struct kmsg_list_transactions_response lm = {0, 0, &unknown, 1, &lt, 1};
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_list_transactions_response_encode(&w, 1, &lm), 0);
    /* throttle, error, UnknownStateFilters ["Bogus"], TransactionStates [...], tags */
    static const uint8_t want[] = {
        0, 0, 0, 0, 0, 0,    0x02, 0x06, 'B', 'o', 'g', 'u', 's', 0x02, 0x03, 't',  '1', 0,
        0, 0, 0, 0, 0, 0x0f, 0xa0, 0x08, 'O', 'n', 'g', 'o', 'i', 'n',  'g',  0x00, 0x00};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    struct kmsg_producer_state ps = {4000, 3, 9, 55, -1, -1};
    struct kmsg_describe_producers_partition dp = {0, 0, {NULL, 0}, &ps, 1};
    struct kmsg_describe_producers_topic dt = {kp_str_of("orders"), &dp, 1};
    struct kmsg_describe_producers_response dm = {0, &dt, 1};
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_describe_producers_response_encode(&w, 0, &dm), 0);
    /* throttle 4 + topics 1 + name 7 + parts 1 + index 4 + error 2 + error message (null) 1 +
     * producers 1 + state (id 8, epoch 4, sequence 4, timestamp 8, coordinator epoch 4, txn
     * start offset 8) 36 + tags (state, partition, topic, response) 4 */
    assert_int_equal(w.len, 4 + 1 + 7 + 1 + 4 + 2 + 1 + 1 + 36 + 4);
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_describe_producers_response back;
    assert_int_equal(kmsg_describe_producers_response_decode(&r, 0, &a, &back), 0);
    assert_int_equal(back.topics[0].partitions[0].error_message.len, -1); /* null */
    assert_int_equal(back.topics[0].partitions[0].active_producers[0].coordinator_epoch, -1);
    assert_int_equal(back.topics[0].partitions[0].active_producers[0].current_txn_start_offset, -1);
    kp_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest_produce),  cmocka_unit_test(test_lying_inner_count),
        cmocka_unit_test(test_arena_too_small), cmocka_unit_test(test_trailing_bytes_and_versions),
        cmocka_unit_test(test_request_header),  cmocka_unit_test(test_metadata_all_topics),
        cmocka_unit_test(test_operator_apis),   cmocka_unit_test(test_new_versions_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
