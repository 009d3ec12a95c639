/*
 * gen_batch_corpus.c — writes the seed corpus of fuzz_batch into a directory: a few small
 * batches from the builder, both control markers, a segment of several batches, and real Kafka
 * broker batches. Not part of any build target (CMake only globs fuzz/fuzz_*.c); run by hand
 * after changing the format:
 *
 *   gcc -std=c11 -D_GNU_SOURCE -Iengine -Iengine/log -I. -msse4.2 index/crc32c.c \
 *     engine/log/batch.c fuzz/gen_batch_corpus.c -o /tmp/gen && /tmp/gen fuzz/corpus/batch
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

static void die(const char *what)
{
    fprintf(stderr, "gen_batch_corpus: %s\n", what);
    exit(1);
}

static void write_file(const char *dir, const char *name, const uint8_t *p, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0)
        die(path);
}

static size_t finish(struct batch_builder *b)
{
    size_t len = 0;
    if (batch_builder_finish(b, &len) != 0)
        die("finish");
    const char *why = NULL;
    if (batch_validate(b->buf, len, 0, NULL, &why) != 0)
        die(why);
    return len;
}

/* dpkp/kafka-python test/record/test_records.py, record_batch_data_v2: "real live data from
 * Kafka 11 broker" — two of its batches (two empty values; a record with a header). */
static const uint8_t kafka_two_records[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x02,
    0x02, 0xc8, 0x5c, 0xbd, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x5d, 0xff,
    0x7c, 0xdd, 0x6c, 0x00, 0x00, 0x01, 0x5d, 0xff, 0x7c, 0xde, 0x14, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, 0x0c, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x0e, 0x00, 0xd0, 0x02, 0x02, 0x01, 0x00, 0x00};
static const uint8_t kafka_header[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00,
    0x00, 0x00, 0x02, 0x5c, 0xd8, 0xef, 0x52, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x01, 0x65, 0x85, 0xb6, 0xf3, 0xc1, 0x00, 0x00, 0x01, 0x65, 0x85, 0xb6, 0xf3,
    0xc1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0x00, 0x00, 0x00, 0x01, 0x26, 0x00, 0x00, 0x00, 0x01, 0x06, 0x68, 0x64, 0x72,
    0x02, 0x08, 0x68, 0x6b, 0x65, 0x79, 0x08, 0x68, 0x76, 0x61, 0x6c};

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: gen_batch_corpus DIR");
    const char *dir = argv[1];
    uint8_t buf[1024], seg[4096];
    size_t seg_len = 0;
    struct batch_builder b;

    /* One record, key and value. */
    struct rt_record kv = {
        .key = "k", .key_len = 1, .value = "v", .value_len = 1, .timestamp_ms = 1700000000000};
    batch_builder_init(&b, buf, sizeof buf, 0, -1, -1, -1);
    batch_builder_add(&b, &kv);
    size_t len = finish(&b);
    write_file(dir, "one_record", buf, len);
    memcpy(seg + seg_len, buf, len);
    seg_len += len;

    /* Transactional, three records: nulls, empty, headers, out-of-order timestamps. */
    struct rt_header hs[2] = {{.key = "h", .key_len = 1, .value = NULL, .value_len = -1},
                              {.key = "", .key_len = 0, .value = "xy", .value_len = 2}};
    struct rt_record rs[3] = {
        {.key = NULL, .key_len = -1, .value = NULL, .value_len = -1, .timestamp_ms = 50},
        {.key = "", .key_len = 0, .value = "", .value_len = 0, .timestamp_ms = 20},
        {.key = "key",
         .key_len = 3,
         .value = "value",
         .value_len = 5,
         .timestamp_ms = 900,
         .headers = hs,
         .header_count = 2},
    };
    batch_builder_init(&b, buf, sizeof buf, BATCH_ATTR_TRANSACTIONAL, 4242, 7, 100);
    for (int i = 0; i < 3; i++)
        batch_builder_add(&b, &rs[i]);
    len = finish(&b);
    batch_stamp_base_offset(buf, 1);
    write_file(dir, "txn_three_records", buf, len);
    memcpy(seg + seg_len, buf, len);
    seg_len += len;

    /* Markers. */
    control_batch_build(buf, 4242, 7, CONTROL_COMMIT, 3, 1000);
    batch_stamp_base_offset(buf, 4);
    write_file(dir, "control_commit", buf, CONTROL_BATCH_BYTES);
    memcpy(seg + seg_len, buf, CONTROL_BATCH_BYTES);
    seg_len += CONTROL_BATCH_BYTES;
    control_batch_build(buf, 4242, 8, CONTROL_ABORT, 3, 2000);
    write_file(dir, "control_abort", buf, CONTROL_BATCH_BYTES);

    /* A segment: the batches above back to back plus a torn tail. */
    memcpy(seg + seg_len, buf, 20);
    seg_len += 20;
    write_file(dir, "segment_torn_tail", seg, seg_len);

    /* A LogAppendTime batch and a "compressed" one (records opaque to the validator). */
    batch_builder_init(&b, buf, sizeof buf, BATCH_ATTR_LOG_APPEND_TIME, -1, -1, -1);
    batch_builder_add(&b, &kv);
    batch_builder_add(&b, &kv);
    len = finish(&b);
    write_file(dir, "log_append_time", buf, len);
    be16_store(buf + BATCH_OFF_ATTRIBUTES, BATCH_COMPRESSION_GZIP);
    batch_seal_crc(buf, len);
    write_file(dir, "gzip_flagged", buf, len);

    write_file(dir, "kafka_broker_two_records", kafka_two_records, sizeof kafka_two_records);
    write_file(dir, "kafka_broker_header", kafka_header, sizeof kafka_header);
    return 0;
}
