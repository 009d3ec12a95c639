/*
 * test_kafka_kdesc.c — the message descriptions and their interpreter (tools/kafka/proto/kdesc.c) as a
 * whole: every described message (request and response) at every version round-trips
 * (random struct → encode → decode → the same struct → encode → the same bytes, and kd_size
 * equals the bytes written, KDE3); every cut of such a body is refused; an unknown tagged field
 * is skipped and a known one decoded (KDE2); a lying array count is refused before the arena
 * is touched (KDE1); a null or negative count where the version allows none is written empty
 * (KDE4); and the API table and the descriptions agree (every row has both descriptions over
 * its codec range, the same first flexible version, keys unique and sorted, advertised inside
 * the codec range, advertised => a handler: KA1, KA2, KA3, KA5), and README.md's version table
 * is the one the table prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"

static _Alignas(16) uint8_t pool[1 << 20];
static size_t pool_used;
static _Alignas(16) uint8_t arena_buf[1 << 18];
static _Alignas(16) uint8_t arena2_buf[1 << 18];
static unsigned seed = 1;

static unsigned rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
}

static void *palloc(size_t n)
{
    pool_used = (pool_used + 15) & ~(size_t)15;
    assert_true(pool_used + n <= sizeof pool);
    void *p = pool + pool_used;
    pool_used += n;
    memset(p, 0, n);
    return p;
}

static const char *const words[] = {"", "a", "topic-7", "a longer string of text"};
static const uint8_t blob[] = "0123456789abcdef";

static int64_t rint64(void)
{
    static const int64_t v[] = {0, 1, -1, 7, 300, 70000, INT32_MAX, INT64_MIN / 3};
    return v[rnd() % 8];
}

static size_t c_size(const struct kd_field *f)
{
    if (f->sub)
        return f->sub->size;
    switch (f->elem) {
    case KD_I32:
        return 4;
    case KD_I64:
        return 8;
    case KD_STR:
        return sizeof(struct kp_str);
    default:
        fail_msg("element type %d", f->elem);
        return 0;
    }
}

/* A value the version can carry: null only where nullable. */
static void gen_value(uint8_t t, bool null_ok, void *p)
{
    switch (t) {
    case KD_BOOL:
        *(bool *)p = rnd() & 1;
        break;
    case KD_I8:
        *(int8_t *)p = (int8_t)rint64();
        break;
    case KD_I16:
        *(int16_t *)p = (int16_t)rint64();
        break;
    case KD_I32:
        *(int32_t *)p = (int32_t)rint64();
        break;
    case KD_I64:
        *(int64_t *)p = rint64();
        break;
    case KD_UUID:
        for (int i = 0; i < 16; i++)
            ((uint8_t *)p)[i] = (uint8_t)rnd();
        break;
    case KD_STR: {
        const char *w = words[rnd() % 4];
        struct kp_str s = {w, (int32_t)strlen(w)};
        if (null_ok && rnd() % 3 == 0)
            s = (struct kp_str){NULL, -1};
        *(struct kp_str *)p = s;
        break;
    }
    case KD_BYTES: {
        struct kp_bytes b = {blob, (int32_t)(rnd() % 16)};
        if (null_ok && rnd() % 3 == 0)
            b = (struct kp_bytes){NULL, -1};
        *(struct kp_bytes *)p = b;
        break;
    }
    default:
        fail_msg("type %d", t);
    }
}

static void gen(const struct kd_struct *s, int16_t v, void *base, int depth)
{
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        uint8_t *p = (uint8_t *)base + f->off;
        bool null_ok = v >= f->null_min;
        if (f->type == KD_ARRAY) {
            int32_t n = depth > 3 ? 0 : (int32_t)(rnd() % 4);
            if (null_ok && rnd() % 4 == 0)
                n = -1;
            uint8_t *arr = n > 0 ? palloc(c_size(f) * (size_t)n) : NULL;
            for (int32_t j = 0; j < n; j++) {
                if (f->sub)
                    gen(f->sub, v, arr + (size_t)j * c_size(f), depth + 1);
                else
                    gen_value(f->elem, false, arr + (size_t)j * c_size(f));
            }
            *(void **)p = arr;
            *(int32_t *)((uint8_t *)base + f->aux) = n;
        } else if (f->type == KD_RECORDS) {
            int32_t n = (int32_t)(rnd() % 17) - 1; /* inline: the decode sees the bytes */
            *(int32_t *)p = n;
            *(const uint8_t **)((uint8_t *)base + f->aux) = n >= 0 ? blob : NULL;
        } else {
            gen_value(f->type, null_ok, p);
        }
    }
}

static size_t round_trips, cuts;

/* One random struct of `m` at `v` through encode/decode/encode; every cut refused. */
static void round_trip(const struct kd_message *m, int16_t v)
{
    pool_used = 0;
    void *x = palloc(m->body->size);
    gen(m->body, v, x, 0);
    struct kp_writer w1, w2;
    kp_writer_init(&w1, NULL, 0);
    kp_writer_init(&w2, NULL, 0);
    assert_int_equal(kd_encode(m, &w1, v, x), 0);
    uint64_t size = 0;
    assert_int_equal(kd_size(m, v, x, &size), 0);
    if (size != w1.len)
        fail_msg("%s v%d: kd_size %llu, encoded %zu (KDE3)", m->name, v, (unsigned long long)size,
                 w1.len);
    void *y = palloc(m->body->size);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kp_reader r;
    kp_reader_init(&r, w1.buf, w1.len);
    int rc = kd_decode(m, &r, v, &a, y);
    if (rc != 0)
        fail_msg("%s v%d: own encoding does not decode: %d", m->name, v, rc);
    bool flex = kd_flexible(m, v);
    /* after_decode may rewrite a value into its meaning (Metadata v0's empty = all): then the
     * second decode must agree with the first */
    if (!m->after_decode && !kd_equal(m->body, v, flex, x, y))
        fail_msg("%s v%d: decoded struct differs from the encoded one", m->name, v);
    assert_int_equal(kd_encode(m, &w2, v, y), 0);
    if (w1.len != w2.len || (w1.len > 0 && memcmp(w1.buf, w2.buf, w1.len) != 0))
        fail_msg("%s v%d: re-encoding differs", m->name, v);
    if (m->after_decode) {
        void *z = palloc(m->body->size);
        struct kp_arena a2;
        kp_arena_init(&a2, arena2_buf, sizeof arena2_buf);
        kp_reader_init(&r, w2.buf, w2.len);
        assert_int_equal(kd_decode(m, &r, v, &a2, z), 0);
        assert_true(kd_equal(m->body, v, flex, y, z));
    }
    size_t pool_mark = pool_used;
    for (size_t cut = 0; cut < w1.len; cut++) {
        pool_used = pool_mark;
        kp_arena_reset(&a);
        uint8_t *copy = malloc(cut ? cut : 1); /* exactly sized: ASan sees any over-read */
        assert_non_null(copy);
        memcpy(copy, w1.buf, cut);
        kp_reader_init(&r, copy, cut);
        void *c = palloc(m->body->size);
        rc = kd_decode(m, &r, v, &a, c);
        if (rc != RT_E_CORRUPT)
            fail_msg("%s v%d: a body cut at %zu of %zu gives %d", m->name, v, cut, w1.len, rc);
        free(copy);
        cuts++;
    }
    kp_writer_free(&w1);
    kp_writer_free(&w2);
    round_trips++;
}

static void test_every_message_round_trips(void **state)
{
    (void)state;
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    size_t messages = 0;
    for (size_t i = 0; i < count; i++) {
        for (int dir = 0; dir < 2; dir++) {
            const struct kd_message *m = kmsg_desc(t[i].key, dir == 1);
            assert_non_null(m);
            messages++;
            for (int16_t v = m->min; v <= m->max; v++)
                for (int k = 0; k < 40; k++)
                    round_trip(m, v);
        }
    }
    assert_int_equal(messages, 2 * count);
    print_message("%zu round trips, %zu cuts refused\n", round_trips, cuts);
}

/* KA1, KA2 and the codec range: the table and the descriptions agree row by row. */
static void test_table_and_descriptions_agree(void **state)
{
    (void)state;
    size_t count = 0;
    const struct kafka_api *t = kafka_api_table(&count);
    assert_true(count >= 25);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            assert_true(t[i - 1].key < t[i].key);
        for (int dir = 0; dir < 2; dir++) {
            const struct kd_message *m = kmsg_desc(t[i].key, dir == 1);
            assert_non_null(m);
            assert_int_equal(m->api_key, t[i].key);
            assert_int_equal(m->min, t[i].codec_min);
            assert_int_equal(m->max, t[i].codec_max);
            assert_true(m->max < KD_VERSIONS_MAX);
            int16_t flex = t[i].first_flexible < 0 ? KD_NEVER : t[i].first_flexible;
            assert_int_equal(m->flex_min, flex);
        }
        if (t[i].advertised) {
            assert_non_null(t[i].handler); /* KA3: advertised => handled */
            assert_true(t[i].adv_min >= t[i].codec_min);
            assert_true(t[i].adv_max <= t[i].codec_max);
        }
    }
    assert_null(kmsg_desc(57, false));
}

/* KDE2: a flexible body with an unknown tag in its top-level section decodes as without it. */
static void test_unknown_tag_skipped(void **state)
{
    (void)state;
    struct kmsg_api_versions_request q = {kp_str_of("lib"), kp_str_of("1.0")};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_api_versions_request_encode(&w, 3, &q), 0);
    assert_int_equal(w.buf[w.len - 1], 0); /* the empty tag section */
    uint8_t body[64];
    memcpy(body, w.buf, w.len - 1);
    size_t n = w.len - 1;
    const uint8_t tags[] = {1, 9, 2, 'x', 'y'}; /* one field: tag 9, 2 bytes */
    memcpy(body + n, tags, sizeof tags);
    n += sizeof tags;
    struct kp_reader r;
    kp_reader_init(&r, body, n);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_api_versions_request out;
    assert_int_equal(kmsg_api_versions_request_decode(&r, 3, &a, &out), 0);
    assert_true(kp_str_eq(out.client_software_name, "lib"));
    assert_true(kp_str_eq(out.client_software_version, "1.0"));
    /* a tag whose size runs past the body is refused */
    body[n - 3] = 9;
    kp_reader_init(&r, body, n);
    assert_int_equal(kmsg_api_versions_request_decode(&r, 3, &a, &out), RT_E_CORRUPT);
    kp_writer_free(&w);
}

/* KDE1: a top-level count the bytes left cannot hold is refused before the arena is asked. */
static void test_lying_count_before_arena(void **state)
{
    (void)state;
    const uint8_t body[] = {0, 0, 0,  0, /* DescribeGroups v0: groups count, patched below */
                            0, 1, 'g'};
    uint8_t b[sizeof body];
    memcpy(b, body, sizeof b);
    b[3] = 3; /* 3 strings of at least 2 bytes in 3 bytes: no */
    struct kp_reader r;
    kp_reader_init(&r, b, sizeof b);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_describe_groups_request out;
    assert_int_equal(kmsg_describe_groups_request_decode(&r, 0, &a, &out), RT_E_CORRUPT);
    assert_int_equal(a.used_bytes, 0);
    assert_int_equal(out.groups_count, 0);
    b[3] = 1;
    kp_reader_init(&r, b, sizeof b);
    assert_int_equal(kmsg_describe_groups_request_decode(&r, 0, &a, &out), 0);
    assert_int_equal(out.groups_count, 1);
    assert_true(kp_str_eq(out.groups[0], "g"));
}

/* KDE4: a negative count on a non-nullable array is written as empty, never as a null the
 * version does not allow; on a nullable one as null. */
static void test_null_where_not_nullable(void **state)
{
    (void)state;
    struct kmsg_describe_groups_response m = {0, NULL, -1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_describe_groups_response_encode(&w, 1, &m), 0);
    const uint8_t want[] = {0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    /* OffsetFetch v2+ topics are nullable: -1 stays null */
    struct kmsg_offset_fetch_request q = {kp_str_of("g"), NULL, -1, false, NULL, 0};
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_offset_fetch_request_encode(&w, 2, &q), 0);
    const uint8_t want2[] = {0, 1, 'g', 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(w.len, sizeof want2);
    assert_memory_equal(w.buf, want2, sizeof want2);
    kp_writer_free(&w);
}

/* The other direction of the data path: a Fetch response decodes as a client reads it, its
 * records pointing into the response buffer. */
static void test_fetch_response_decode(void **state)
{
    (void)state;
    static const uint8_t recs[] = {1, 2, 3, 4, 5};
    struct kmsg_fetch_partition_response p = {.partition_index = 3,
                                              .high_watermark = 10,
                                              .last_stable_offset = 10,
                                              .log_start_offset = 0,
                                              .aborted_transactions_count = -1,
                                              .preferred_read_replica = -1,
                                              .records_len = sizeof recs,
                                              .records = recs};
    struct kmsg_fetch_topic_response t = {kp_str_of("t"), &p, 1};
    struct kmsg_fetch_response m = {0, 0, 7, &t, 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_fetch_response_encode(&w, 11, &m), 0);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_fetch_response out;
    assert_int_equal(kmsg_fetch_response_decode(&r, 11, &a, &out), 0);
    assert_int_equal(out.session_id, 7);
    assert_int_equal(out.responses_count, 1);
    const struct kmsg_fetch_partition_response *q = &out.responses[0].partitions[0];
    assert_int_equal(q->partition_index, 3);
    assert_int_equal(q->aborted_transactions_count, -1);
    assert_int_equal(q->records_len, 5);
    assert_true(q->records >= w.buf && q->records + 5 <= w.buf + w.len);
    assert_memory_equal(q->records, recs, 5);
    kp_writer_free(&w);
}

/* KDF_ZERO_IS_DEFAULT: a Metadata v8 answer whose handler left the leader epoch and the
 * authorized operations 0 carries Kafka's defaults (-1, INT32_MIN); v4 has neither field. */
static void test_metadata_v8_defaults(void **state)
{
    (void)state;
    static const int32_t one[1] = {1};
    struct kmsg_metadata_partition p = {.leader_id = 1,
                                        .leader_epoch = -1,
                                        .replica_nodes = one,
                                        .replica_nodes_count = 1,
                                        .isr_nodes = one,
                                        .isr_nodes_count = 1};
    struct kmsg_metadata_topic t = {
        .name = kp_str_of("t"), .partitions = &p, .partitions_count = 1};
    struct kmsg_metadata_response m = {.topics = &t, .topics_count = 1, .controller_id = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_metadata_response_encode(&w, 8, &m), 0);
    const uint8_t want[] = {
        0,    0,    0,    0,            /* throttle */
        0,    0,    0,    0,            /* brokers */
        0,    0,                        /* cluster_id: empty (the handler left {NULL, 0}) */
        0,    0,    0,    1,            /* controller */
        0,    0,    0,    1,            /* topics */
        0,    0,    0,    1,    't', 0, /* error, name, is_internal */
        0,    0,    0,    1,            /* partitions */
        0,    0,    0,    0,    0,   0, 0, 0, 0, 1, /* error, index, leader */
        0xff, 0xff, 0xff, 0xff,                     /* leader_epoch: -1 */
        0,    0,    0,    1,    0,   0, 0, 1,       /* replicas */
        0,    0,    0,    1,    0,   0, 0, 1,       /* isr */
        0,    0,    0,    0,                        /* offline replicas */
        0x80, 0,    0,    0,                        /* topic authorized operations: INT32_MIN */
        0x80, 0,    0,    0,                        /* cluster authorized operations: INT32_MIN */
    };
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_metadata_response_encode(&w, 4, &m), 0);
    assert_int_equal(w.len, sizeof want - 4 - 4 - 4 - 4);
    /* a client reading v8 sees the defaults */
    struct kp_reader r;
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_metadata_response_encode(&w, 8, &m), 0);
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_metadata_response out;
    assert_int_equal(kmsg_metadata_response_decode(&r, 8, &a, &out), 0);
    assert_int_equal(out.topics[0].partitions[0].leader_epoch, -1);
    assert_int_equal(out.topics[0].topic_authorized_operations, INT32_MIN);
    assert_int_equal(out.cluster_authorized_operations, INT32_MIN);
    kp_writer_free(&w);
}

/* KDE2/KDE3 with a known tag: CreateTopics v5's topic_config_error_code (tag 0) goes on the
 * wire only when not 0, and decodes back from the tag section. */
static void test_known_tag(void **state)
{
    (void)state;
    struct kmsg_create_topics_topic_response t = {.name = kp_str_of("t")};
    struct kmsg_create_topics_response m = {.topics = &t, .topics_count = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_create_topics_response_encode(&w, 5, &m), 0);
    size_t plain = w.len;
    /* ... error 0, message "" (the handler's {NULL, 0}), num_partitions -1, rf -1, configs [],
     * the topic's tag section (empty), the body's */
    const uint8_t tail[] = {0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0};
    assert_memory_equal(w.buf + plain - sizeof tail, tail, sizeof tail);
    t.topic_config_error_code = 40;
    kp_writer_reset(&w, NULL, 0);
    assert_int_equal(kmsg_create_topics_response_encode(&w, 5, &m), 0);
    assert_int_equal(w.len, plain + 4);           /* tag 0, size 2, i16 */
    const uint8_t tagged[] = {1, 0, 2, 0, 40, 0}; /* 1 field: tag 0, 2 bytes, 40; body tags */
    assert_memory_equal(w.buf + w.len - sizeof tagged, tagged, sizeof tagged);
    uint64_t size = 0;
    assert_int_equal(kd_size(kmsg_desc(KAFKA_CREATE_TOPICS, true), 5, &m, &size), 0);
    assert_int_equal(size, w.len);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_create_topics_response out;
    assert_int_equal(kmsg_create_topics_response_decode(&r, 5, &a, &out), 0);
    assert_int_equal(out.topics[0].topic_config_error_code, 40);
    assert_int_equal(out.topics[0].num_partitions, -1);
    kp_writer_free(&w);
}

/* The README's version table is the table's (kafka_api_markdown): edit api_table.c, then
 * paste `ringtail serve --print-api-versions` into README.md. */
static void test_readme_table(void **state)
{
    (void)state;
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    char path[4096];
    snprintf(path, sizeof path, "%.*s/../README.md", slash ? (int)(slash - src) : 1,
             slash ? src : ".");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char readme[1 << 20];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[n] = 0;
    static char want[8192];
    size_t len = kafka_api_markdown(want, sizeof want);
    assert_true(len < sizeof want);
    const char *at = strstr(readme, "| key | API | versions |\n");
    assert_non_null(at);
    if (strncmp(at, want, len) != 0 || at[len] != '\n')
        fail_msg("README.md's version table differs from the API table; it should read:\n%s", want);
}

/* KA8: the broker-to-controller APIs decode, are never advertised, and are internal. */
static void test_internal_rows_not_advertised(void **state)
{
    (void)state;
    static const int16_t keys[3] = {KAFKA_BROKER_REGISTRATION, KAFKA_BROKER_HEARTBEAT,
                                    KAFKA_ALLOCATE_PRODUCER_IDS};
    struct kmsg_api_version_range table[64];
    size_t n = kmsg_api_versions_fill(table, 64);
    for (int k = 0; k < 3; k++) {
        assert_non_null(kafka_api_find(keys[k]));
        assert_false(kafka_api_supported(keys[k], 0));
        assert_true(kafka_api_internal(keys[k], 0));
        assert_false(kafka_api_internal(keys[k], 1));
        for (size_t i = 0; i < n; i++)
            assert_int_not_equal(table[i].api_key, keys[k]);
    }
    assert_false(kafka_api_internal(KAFKA_METADATA, 1)); /* an advertised row is not internal */
    char md[16384];
    kafka_api_markdown(md, sizeof md);
    assert_null(strstr(md, "BrokerRegistration"));
    assert_null(strstr(md, "AllocateProducerIds"));
    /* a heartbeat round-trips through its description (flexible v0) */
    struct kmsg_broker_heartbeat_request q = {
        .broker_id = 2, .broker_epoch = 13, .current_metadata_offset = 40};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_broker_heartbeat_request_encode(&w, 0, &q), 0);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_broker_heartbeat_request back;
    assert_int_equal(kmsg_broker_heartbeat_request_decode(&r, 0, &a, &back), 0);
    assert_int_equal(back.broker_epoch, 13);
    assert_int_equal(w.len, 4 + 8 + 8 + 1 + 1 + 1); /* ... want_fence, want_shut_down, tags */
    kp_writer_free(&w);
    /* AllocateProducerIds (KIP-730) likewise: broker_id, broker_epoch, tags */
    struct kmsg_allocate_producer_ids_request pq = {.broker_id = 3, .broker_epoch = 21};
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_allocate_producer_ids_request_encode(&w, 0, &pq), 0);
    assert_int_equal(w.len, 4 + 8 + 1);
    kp_reader_init(&r, w.buf, w.len);
    struct kmsg_allocate_producer_ids_request pback;
    assert_int_equal(kmsg_allocate_producer_ids_request_decode(&r, 0, &a, &pback), 0);
    assert_int_equal(pback.broker_id, 3);
    assert_int_equal(pback.broker_epoch, 21);
    kp_writer_free(&w);
}

/* KA8 too: OffsetForLeaderEpoch (23) is described v0-4, internal at every one, never
 * advertised; its fields are Kafka's bytes at v2 (current_leader_epoch, no replica id) and v4
 * (replica id, compact forms). */
static void test_offset_for_leader_epoch(void **state)
{
    (void)state;
    const int16_t key = KAFKA_OFFSET_FOR_LEADER_EPOCH;
    for (int16_t v = 0; v <= 4; v++) {
        assert_true(kafka_api_internal(key, v));
        assert_false(kafka_api_supported(key, v));
    }
    assert_false(kafka_api_internal(key, 5));
    char md[16384];
    kafka_api_markdown(md, sizeof md);
    assert_null(strstr(md, "OffsetForLeaderEpoch"));
    struct kmsg_epoch_partition qp = {.partition = 3, .current_leader_epoch = 7, .leader_epoch = 5};
    struct kmsg_epoch_topic qt = {
        .topic = kp_str_of("t"), .partitions = &qp, .partitions_count = 1};
    struct kmsg_offset_for_leader_epoch_request q = {
        .replica_id = 2, .topics = &qt, .topics_count = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_offset_for_leader_epoch_request_encode(&w, 2, &q), 0);
    static const uint8_t v2[] = {0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0,
                                 0, 0, 3, 0, 0, 0, 7,   0, 0, 0, 5};
    assert_int_equal(w.len, sizeof v2);
    assert_memory_equal(w.buf, v2, sizeof v2);
    kp_writer_free(&w);
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_offset_for_leader_epoch_request_encode(&w, 4, &q), 0);
    static const uint8_t v4[] = {0, 0, 0, 2, 2, 2, 't', 2, 0, 0, 0, 3,
                                 0, 0, 0, 7, 0, 0, 0,   5, 0, 0, 0};
    assert_int_equal(w.len, sizeof v4);
    assert_memory_equal(w.buf, v4, sizeof v4);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_offset_for_leader_epoch_request back;
    assert_int_equal(kmsg_offset_for_leader_epoch_request_decode(&r, 4, &a, &back), 0);
    assert_int_equal(back.replica_id, 2);
    assert_int_equal(back.topics[0].partitions[0].current_leader_epoch, 7);
    kp_writer_free(&w);
    /* v0 has no current_leader_epoch: decoded as Kafka's -1; v2 has no replica id: -2 */
    static const uint8_t v0[] = {0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 5};
    kp_reader_init(&r, v0, sizeof v0);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    assert_int_equal(kmsg_offset_for_leader_epoch_request_decode(&r, 0, &a, &back), 0);
    assert_int_equal(back.topics[0].partitions[0].current_leader_epoch, -1);
    assert_int_equal(back.replica_id, -2);
    /* the answer at v4 */
    struct kmsg_epoch_end_offset rp = {.partition = 3, .leader_epoch = 5, .end_offset = 1000};
    struct kmsg_epoch_topic_result rt = {
        .topic = kp_str_of("t"), .partitions = &rp, .partitions_count = 1};
    struct kmsg_offset_for_leader_epoch_response m = {.topics = &rt, .topics_count = 1};
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_offset_for_leader_epoch_response_encode(&w, 4, &m), 0);
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_offset_for_leader_epoch_response mb;
    assert_int_equal(kmsg_offset_for_leader_epoch_response_decode(&r, 4, &a, &mb), 0);
    assert_int_equal(mb.topics[0].partitions[0].end_offset, 1000);
    assert_int_equal(mb.topics[0].partitions[0].leader_epoch, 5);
    kp_writer_free(&w);
}

/* KA8 too: WriteTxnMarkers (27) is described v0-1, internal, never advertised (a single
 * broker's ApiVersions unchanged); its request and answer are Kafka's bytes at v0 and v1 (compact
 * forms and tags), and both directions round-trip (a node sends and serves it). */
static void test_write_txn_markers(void **state)
{
    (void)state;
    const int16_t key = KAFKA_WRITE_TXN_MARKERS;
    for (int16_t v = 0; v <= 1; v++) {
        assert_true(kafka_api_internal(key, v));
        assert_false(kafka_api_supported(key, v));
    }
    assert_false(kafka_api_internal(key, 2));
    char md[16384];
    kafka_api_markdown(md, sizeof md);
    assert_null(strstr(md, "WriteTxnMarkers"));
    int32_t part = 2;
    struct kmsg_txn_topic qt = {.name = kp_str_of("t"), .partitions = &part, .partitions_count = 1};
    struct kmsg_txn_marker qm = {.producer_id = 9,
                                 .producer_epoch = 3,
                                 .transaction_result = true,
                                 .topics = &qt,
                                 .topics_count = 1,
                                 .coordinator_epoch = 4};
    struct kmsg_write_txn_markers_request q = {.markers = &qm, .markers_count = 1};
    struct kp_writer w;
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_write_txn_markers_request_encode(&w, 0, &q), 0);
    static const uint8_t v0[] = {0, 0, 0, 1, 0,   0, 0, 0, 0, 0, 0, 9, 0, 3, 1, 0, 0,
                                 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 4};
    assert_int_equal(w.len, sizeof v0);
    assert_memory_equal(w.buf, v0, sizeof v0);
    kp_writer_free(&w);
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_write_txn_markers_request_encode(&w, 1, &q), 0);
    static const uint8_t v1[] = {2,   0, 0, 0, 0, 0, 0, 0, 9, 0, 3, 1, 2, 2,
                                 't', 2, 0, 0, 0, 2, 0, 0, 0, 0, 4, 0, 0};
    assert_int_equal(w.len, sizeof v1);
    assert_memory_equal(w.buf, v1, sizeof v1);
    struct kp_reader r;
    kp_reader_init(&r, w.buf, w.len);
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_write_txn_markers_request back;
    assert_int_equal(kmsg_write_txn_markers_request_decode(&r, 1, &a, &back), 0);
    assert_int_equal(back.markers_count, 1);
    assert_int_equal(back.markers[0].producer_id, 9);
    assert_int_equal(back.markers[0].producer_epoch, 3);
    assert_true(back.markers[0].transaction_result);
    assert_int_equal(back.markers[0].coordinator_epoch, 4);
    assert_int_equal(back.markers[0].topics[0].partitions[0], 2);
    kp_writer_free(&w);
    /* the answer: markers [producer_id, topics [name, partitions [index, error]]], no throttle */
    struct kmsg_partition_error pe = {.partition_index = 2,
                                      .error_code = KAFKA_NOT_LEADER_OR_FOLLOWER};
    struct kmsg_topic_errors te = {
        .name = kp_str_of("t"), .partitions = &pe, .partitions_count = 1};
    struct kmsg_txn_marker_result mr = {.producer_id = 9, .topics = &te, .topics_count = 1};
    struct kmsg_write_txn_markers_response m = {.markers = &mr, .markers_count = 1};
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_write_txn_markers_response_encode(&w, 0, &m), 0);
    static const uint8_t r0[] = {0, 0, 0, 1,   0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
                                 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 2, 0, 6};
    assert_int_equal(w.len, sizeof r0);
    assert_memory_equal(w.buf, r0, sizeof r0);
    kp_writer_free(&w);
    kp_writer_init(&w, NULL, 0);
    assert_int_equal(kmsg_write_txn_markers_response_encode(&w, 1, &m), 0);
    kp_reader_init(&r, w.buf, w.len);
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kmsg_write_txn_markers_response mb;
    assert_int_equal(kmsg_write_txn_markers_response_decode(&r, 1, &a, &mb), 0);
    assert_ptr_equal(r.p, r.end);
    assert_int_equal(mb.markers[0].producer_id, 9);
    assert_int_equal(mb.markers[0].topics[0].partitions[0].partition_index, 2);
    assert_int_equal(mb.markers[0].topics[0].partitions[0].error_code,
                     KAFKA_NOT_LEADER_OR_FOLLOWER);
    kp_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_message_round_trips),
        cmocka_unit_test(test_table_and_descriptions_agree),
        cmocka_unit_test(test_unknown_tag_skipped),
        cmocka_unit_test(test_internal_rows_not_advertised),
        cmocka_unit_test(test_offset_for_leader_epoch),
        cmocka_unit_test(test_write_txn_markers),
        cmocka_unit_test(test_lying_count_before_arena),
        cmocka_unit_test(test_null_where_not_nullable),
        cmocka_unit_test(test_fetch_response_decode),
        cmocka_unit_test(test_readme_table),
        cmocka_unit_test(test_metadata_v8_defaults),
        cmocka_unit_test(test_known_tag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
