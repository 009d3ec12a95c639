/*
 * test_compression.c — Kafka's batch codecs (engine/log/compression.c, docs/format.md §F): batches
 * compressed by another Kafka client (IBM/sarama record_test.go recordBatchTestCases: gzip, raw
 * snappy, lz4) checked with batch_validate and decoded; round trips of every codec at sizes
 * around block boundaries; the xerial snappy and LZ4 frame headers Kafka's Java client writes;
 * truncated, damaged and trailing-garbage inputs (F1-F5); decompression bombs cut off at the
 * bound (F6); buffer reuse without reallocation; bad codecs and levels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "compression.h"

/* The records section of sarama's test batch: one record, key 01 02 03 04, value 05 06 07,
 * one header 08 09 0a = 0b 0c, timestampDelta 5 ms. */
static const uint8_t sarama_records[21] = {40, 0, 10, 0, 8, 1, 2,  3, 4,  6, 5,
                                           6,  7, 2,  6, 8, 9, 10, 4, 11, 12};

/* IBM/sarama record_test.go, recordBatchTestCases "gzipped record". */
static const uint8_t sarama_gzip[] = {
    0, 0,   0,   0, 0,   0,  0,  0,  0,   0,   0,   95,  0,   0,  0,   0,  2, 231, 74,  206, 165, 0,
    1, 0,   0,   0, 0,   0,  0,  1,  88,  141, 205, 89,  56,  0,  0,   0,  0, 0,   0,   0,   0,   0,
    0, 0,   0,   0, 0,   0,  0,  0,  0,   0,   0,   0,   0,   0,  0,   0,  1, 31,  139, 8,   0,   0,
    9, 110, 136, 0, 255, 0,  21, 0,  234, 255, 40,  0,   10,  0,  8,   1,  2, 3,   4,   6,   5,   6,
    7, 2,   6,   8, 9,   10, 4,  11, 12,  3,   0,   173, 201, 88, 103, 21, 0, 0,   0,
};

/* "snappy compressed record": a raw snappy block (no xerial framing), as sarama writes. */
static const uint8_t sarama_snappy[] = {
    0,  0, 0,  0, 0, 0, 0, 0, 0, 0,  0,   72,  0,  0,  0, 0, 2, 21, 0, 159, 97,
    0,  2, 0,  0, 0, 0, 0, 0, 1, 88, 141, 205, 89, 56, 0, 0, 0, 0,  0, 0,   0,
    0,  0, 0,  0, 0, 0, 0, 0, 0, 0,  0,   0,   0,  0,  0, 0, 0, 0,  1, 21,  80,
    40, 0, 10, 0, 8, 1, 2, 3, 4, 6,  5,   6,   7,  2,  6, 8, 9, 10, 4, 11,  12,
};

/* "lz4 compressed record": an LZ4 frame, FLG 0x64 (content checksum), BD 0x70, one stored block. */
static const uint8_t sarama_lz4[] = {
    0,  0,  0,   0,   0,   0,  0, 0,  0,   0,  0,   89,  0,  0,  0,  0,   2,   169, 74, 119, 197,
    0,  3,  0,   0,   0,   0,  0, 0,  1,   88, 141, 205, 89, 56, 0,  0,   0,   0,   0,  0,   0,
    0,  0,  0,   0,   0,   0,  0, 0,  0,   0,  0,   0,   0,  0,  0,  0,   0,   0,   1,  4,   34,
    77, 24, 100, 112, 185, 21, 0, 0,  128, 40, 0,   10,  0,  8,  1,  2,   3,   4,   6,  5,   6,
    7,  2,  6,   8,   9,   10, 4, 11, 12,  0,  0,   0,   0,  12, 59, 239, 146,
};

/* The smallest zstd frame: single segment, content size 0, one empty last raw block
 * (bazel-remote's emptyZstdBlob; RFC 8878 layout). */
static const uint8_t zstd_empty_frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00};

static const enum batch_compression codecs[] = {BATCH_COMPRESSION_GZIP, BATCH_COMPRESSION_SNAPPY,
                                                BATCH_COMPRESSION_LZ4, BATCH_COMPRESSION_ZSTD};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

static void check_golden(const uint8_t *batch, size_t len, enum batch_compression codec)
{
    struct batch_header h;
    const char *why = NULL;
    assert_int_equal(batch_validate(batch, len, 0, &h, &why), 0); /* CRC-32C included */
    assert_int_equal(h.attributes & BATCH_ATTR_COMPRESSION_MASK, codec);
    assert_int_equal(h.record_count, 1);
    struct compression_buffer out = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_decompress(codec, batch + BATCH_HEADER_BYTES,
                                            len - BATCH_HEADER_BYTES, &out, 1 << 20, &why),
                     0);
    assert_null(why);
    assert_int_equal(out.len, sizeof(sarama_records));
    assert_memory_equal(out.data, sarama_records, sizeof(sarama_records));
    struct record_view rv;
    int n = record_decode(out.data, out.data + out.len, &rv, &why);
    assert_int_equal(n, (int)out.len);
    assert_int_equal(rv.timestamp_delta, 5);
    assert_int_equal(rv.key_len, 4);
    assert_memory_equal(rv.key, "\x01\x02\x03\x04", 4);
    assert_int_equal(rv.value_len, 3);
    assert_memory_equal(rv.value, "\x05\x06\x07", 3);
    assert_int_equal(rv.header_count, 1);
    compression_buffer_free(&out);
}

static void test_sarama_golden_batches(void **state)
{
    (void)state;
    check_golden(sarama_gzip, sizeof(sarama_gzip), BATCH_COMPRESSION_GZIP);
    check_golden(sarama_snappy, sizeof(sarama_snappy), BATCH_COMPRESSION_SNAPPY);
    check_golden(sarama_lz4, sizeof(sarama_lz4), BATCH_COMPRESSION_LZ4);
}

/* The raw snappy block of sarama's batch wrapped in xerial framing (what a Java producer sends
 * for the same records); also two such streams back to back (snappy-java reads those). */
static void test_snappy_xerial_read(void **state)
{
    (void)state;
    const uint8_t *raw = sarama_snappy + BATCH_HEADER_BYTES;
    size_t raw_len = sizeof(sarama_snappy) - BATCH_HEADER_BYTES;
    uint8_t framed[2 * (16 + 4 + 32)];
    static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
    size_t len = 0;
    for (int copy = 0; copy < 2; copy++) {
        memcpy(framed + len, hdr, 16);
        len += 16;
        framed[len++] = 0;
        framed[len++] = 0;
        framed[len++] = 0;
        framed[len++] = (uint8_t)raw_len;
        memcpy(framed + len, raw, raw_len);
        len += raw_len;
    }
    struct compression_buffer out = COMPRESSION_BUFFER_INIT;
    const char *why = NULL;
    size_t one = 16 + 4 + raw_len;
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, framed, one, &out, 1 << 20, &why), 0);
    assert_int_equal(out.len, 21);
    assert_memory_equal(out.data, sarama_records, 21);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, framed, len, &out, 1 << 20, &why), 0);
    assert_int_equal(out.len, 42);
    assert_memory_equal(out.data + 21, sarama_records, 21);
    /* Header only: a valid empty stream. */
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, framed, 16, &out, 1 << 20, &why), 0);
    assert_int_equal(out.len, 0);
    /* Damage: a length past the end, a zero length, a truncated length, a bad block. */
    uint8_t bad[sizeof(framed)];
    memcpy(bad, framed, one);
    bad[19] = (uint8_t)(raw_len + 1);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, bad, one, &out, 1 << 20, &why),
        RT_E_CORRUPT);
    assert_non_null(why);
    bad[19] = 0;
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, bad, one, &out, 1 << 20, &why),
        RT_E_CORRUPT);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, framed, 18, &out, 1 << 20, &why),
        RT_E_CORRUPT);
    memcpy(bad, framed, one);
    bad[20] = 0xff; /* the block's uncompressed-length varint never ends */
    bad[21] = 0xff;
    bad[22] = 0xff;
    bad[23] = 0xff;
    bad[24] = 0xff;
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_SNAPPY, bad, one, &out, 1 << 20, &why),
        RT_E_CORRUPT);
    assert_int_equal(out.len, 0);
    compression_buffer_free(&out);
}

/* Deterministic test data: compressible text-like bytes or xorshift noise. */
static void fill(uint8_t *p, size_t n, bool noise, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        if (noise) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p[i] = (uint8_t)x;
        } else {
            p[i] = (uint8_t)("ringtail-record-"[i % 16] + (i / 4096) % 3);
        }
    }
}

static void test_round_trip_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {0,     1,     100,   4096,       32767,      32768,
                                   32769, 65535, 65536, 65537 + 13, 256 * 1024, 1 << 20};
    size_t max = 1 << 20;
    uint8_t *src = malloc(max);
    assert_non_null(src);
    struct compression_buffer c = COMPRESSION_BUFFER_INIT, d = COMPRESSION_BUFFER_INIT;
    for (size_t k = 0; k < NCODECS; k++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            for (int noise = 0; noise < 2; noise++) {
                size_t n = sizes[s];
                fill(src, n, noise, n);
                assert_int_equal(compression_compress(codecs[k], src, n, &c, 0), 0);
                assert_true(c.len > 0);
                const char *why = "x";
                int rc = compression_decompress(codecs[k], c.data, c.len, &d, n, &why);
                if (rc)
                    fprintf(stderr, "codec %d size %zu noise %d: %d %s\n", codecs[k], n, noise, rc,
                            why ? why : "");
                assert_int_equal(rc, 0);
                assert_null(why);
                assert_int_equal(d.len, n);
                if (n > 0)
                    assert_memory_equal(d.data, src, n);
                /* One byte less than the output is too little (F6). */
                if (n > 0)
                    assert_int_equal(
                        compression_decompress(codecs[k], c.data, c.len, &d, n - 1, &why),
                        RT_E_RECORD_TOO_LARGE);
            }
        }
    }
    /* Every Kafka level range end round-trips. */
    static const int levels[][2] = {{BATCH_COMPRESSION_GZIP, 1},  {BATCH_COMPRESSION_GZIP, 9},
                                    {BATCH_COMPRESSION_LZ4, 1},   {BATCH_COMPRESSION_LZ4, 17},
                                    {BATCH_COMPRESSION_ZSTD, -5}, {BATCH_COMPRESSION_ZSTD, 19}};
    fill(src, 100000, false, 1);
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        enum batch_compression codec = (enum batch_compression)levels[i][0];
        assert_int_equal(compression_compress(codec, src, 100000, &c, levels[i][1]), 0);
        assert_int_equal(compression_decompress(codec, c.data, c.len, &d, 100000, NULL), 0);
        assert_int_equal(d.len, 100000);
        assert_memory_equal(d.data, src, 100000);
    }
    compression_buffer_free(&c);
    compression_buffer_free(&d);
    compression_buffer_free(&d); /* twice is fine */
    free(src);
}

/* What Kafka's Java client writes: xerial header with version 1 / compatible 1 and 32 KiB
 * blocks; an LZ4 frame header 04 22 4d 18 60 40 82 (FLG 0x60, BD 0x40, HC 0x82) and no content
 * checksum; a gzip member header 1f 8b 08. */
static void test_kafka_framing_written(void **state)
{
    (void)state;
    uint8_t src[70000];
    fill(src, sizeof(src), true, 7);
    struct compression_buffer c = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_compress(BATCH_COMPRESSION_SNAPPY, src, sizeof(src), &c, 0), 0);
    static const uint8_t xerial[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
                                       0,    0,   0,   1,   0,   0,   0,   1};
    assert_memory_equal(c.data, xerial, 16);
    /* Three blocks: 32768 + 32768 + 4464 input bytes; walk them. */
    size_t pos = 16, blocks = 0;
    while (pos < c.len) {
        uint32_t blen = (uint32_t)c.data[pos] << 24 | (uint32_t)c.data[pos + 1] << 16 |
                        (uint32_t)c.data[pos + 2] << 8 | c.data[pos + 3];
        pos += 4 + blen;
        blocks++;
    }
    assert_int_equal(pos, c.len);
    assert_int_equal(blocks, 3);

    assert_int_equal(compression_compress(BATCH_COMPRESSION_LZ4, src, sizeof(src), &c, 0), 0);
    static const uint8_t lz4_hdr[7] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82};
    assert_memory_equal(c.data, lz4_hdr, 7);
    /* Ends with the end mark (no content checksum follows). */
    assert_memory_equal(c.data + c.len - 4, "\0\0\0\0", 4);

    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, src, 10, &c, 0), 0);
    assert_memory_equal(c.data, "\x1f\x8b\x08", 3);

    assert_int_equal(compression_compress(BATCH_COMPRESSION_ZSTD, src, 10, &c, 0), 0);
    assert_memory_equal(c.data, "\x28\xb5\x2f\xfd", 4);
    compression_buffer_free(&c);
}

/* F1-F5: empty, truncated, damaged headers and trailing bytes are RT_E_CORRUPT with a reason. */
static void test_corrupt_inputs(void **state)
{
    (void)state;
    uint8_t src[5000];
    fill(src, sizeof(src), false, 3);
    struct compression_buffer c = COMPRESSION_BUFFER_INIT, d = COMPRESSION_BUFFER_INIT;
    const char *why;
    for (size_t k = 0; k < NCODECS; k++) {
        enum batch_compression codec = codecs[k];
        why = NULL;
        assert_int_equal(compression_decompress(codec, NULL, 0, &d, 1 << 20, &why), RT_E_CORRUPT);
        assert_non_null(why);
        assert_int_equal(compression_compress(codec, src, sizeof(src), &c, 0), 0);
        /* Every truncation fails (snappy: except at the xerial block boundary after the
         * header, which is a valid empty stream — tested above). */
        for (size_t cut = 1; cut < c.len; cut++) {
            if (codec == BATCH_COMPRESSION_SNAPPY && cut == 16)
                continue;
            why = NULL;
            int rc = compression_decompress(codec, c.data, cut, &d, 1 << 20, &why);
            if (rc != RT_E_CORRUPT)
                fprintf(stderr, "codec %d cut %zu of %zu: rc %d\n", codec, cut, c.len, rc);
            assert_int_equal(rc, RT_E_CORRUPT);
            assert_non_null(why);
            assert_int_equal(d.len, 0);
        }
        /* Trailing garbage after a complete stream (snappy: a 1-byte tail is a truncated
         * xerial length). */
        uint8_t *longer = malloc(c.len + 3);
        assert_non_null(longer);
        memcpy(longer, c.data, c.len);
        memcpy(longer + c.len, "\x01\x02\x03", 3);
        why = NULL;
        assert_int_equal(compression_decompress(codec, longer, c.len + 3, &d, 1 << 20, &why),
                         RT_E_CORRUPT);
        assert_non_null(why);
        /* A damaged first byte (magic). For snappy that makes it a raw stream, also corrupt. */
        memcpy(longer, c.data, c.len);
        longer[0] ^= 0x40;
        assert_int_equal(compression_decompress(codec, longer, c.len, &d, 1 << 20, &why),
                         RT_E_CORRUPT);
        free(longer);
    }
    /* gzip: the CRC-32 trailer is checked. */
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, src, sizeof(src), &c, 0), 0);
    c.data[c.len - 6] ^= 1;
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_GZIP, c.data, c.len, &d, 1 << 20, &why),
        RT_E_CORRUPT);
    /* lz4: the header checksum byte is checked (magic v2 batches carry the correct one). */
    assert_int_equal(compression_compress(BATCH_COMPRESSION_LZ4, src, sizeof(src), &c, 0), 0);
    c.data[6] ^= 1;
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_LZ4, c.data, c.len, &d, 1 << 20, &why),
        RT_E_CORRUPT);
    /* sarama's lz4 frame carries a content checksum: damage it. */
    uint8_t lz4[sizeof(sarama_lz4)];
    memcpy(lz4, sarama_lz4, sizeof(lz4));
    lz4[sizeof(lz4) - 1] ^= 1;
    assert_int_equal(compression_decompress(BATCH_COMPRESSION_LZ4, lz4 + 61, sizeof(lz4) - 61, &d,
                                            1 << 20, &why),
                     RT_E_CORRUPT);
    compression_buffer_free(&c);
    compression_buffer_free(&d);
}

static void test_gzip_concatenated_members(void **state)
{
    (void)state;
    struct compression_buffer a = COMPRESSION_BUFFER_INIT, b = COMPRESSION_BUFFER_INIT,
                              d = COMPRESSION_BUFFER_INIT;
    assert_int_equal(
        compression_compress(BATCH_COMPRESSION_GZIP, (const uint8_t *)"hello ", 6, &a, 0), 0);
    assert_int_equal(
        compression_compress(BATCH_COMPRESSION_GZIP, (const uint8_t *)"world", 5, &b, 0), 0);
    uint8_t *both = malloc(a.len + b.len);
    assert_non_null(both);
    memcpy(both, a.data, a.len);
    memcpy(both + a.len, b.data, b.len);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_GZIP, both, a.len + b.len, &d, 100, NULL), 0);
    assert_int_equal(d.len, 11);
    assert_memory_equal(d.data, "hello world", 11);
    /* The bound counts all members together. */
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_GZIP, both, a.len + b.len, &d, 10, NULL),
        RT_E_RECORD_TOO_LARGE);
    free(both);
    compression_buffer_free(&a);
    compression_buffer_free(&b);
    compression_buffer_free(&d);
}

static void test_zstd_frames(void **state)
{
    (void)state;
    struct compression_buffer d = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_decompress(BATCH_COMPRESSION_ZSTD, zstd_empty_frame,
                                            sizeof(zstd_empty_frame), &d, 100, NULL),
                     0);
    assert_int_equal(d.len, 0);
    /* Two frames back to back, with a skippable frame (magic 0x184D2A50, 3 bytes) between. */
    struct compression_buffer a = COMPRESSION_BUFFER_INIT;
    assert_int_equal(compression_compress(BATCH_COMPRESSION_ZSTD, (const uint8_t *)"abc", 3, &a, 0),
                     0);
    uint8_t buf[256];
    size_t len = 0;
    memcpy(buf, a.data, a.len);
    len += a.len;
    memcpy(buf + len, "\x50\x2a\x4d\x18\x03\x00\x00\x00xyz", 11);
    len += 11;
    memcpy(buf + len, a.data, a.len);
    len += a.len;
    assert_int_equal(compression_decompress(BATCH_COMPRESSION_ZSTD, buf, len, &d, 100, NULL), 0);
    assert_int_equal(d.len, 6);
    assert_memory_equal(d.data, "abcabc", 6);
    compression_buffer_free(&a);
    compression_buffer_free(&d);
}

/* F6: a small input that expands past the bound stops at the bound, for every codec, and the
 * buffer never holds more than bound + 1 bytes. */
static void test_bombs_bounded(void **state)
{
    (void)state;
    size_t big = 16u << 20, bound = 1u << 20;
    uint8_t *zeros = calloc(1, big);
    assert_non_null(zeros);
    struct compression_buffer c = COMPRESSION_BUFFER_INIT, d = COMPRESSION_BUFFER_INIT;
    for (size_t k = 0; k < NCODECS; k++) {
        assert_int_equal(compression_compress(codecs[k], zeros, big, &c, 0), 0);
        assert_true(c.len < big / 20);
        const char *why = NULL;
        assert_int_equal(compression_decompress(codecs[k], c.data, c.len, &d, bound, &why),
                         RT_E_RECORD_TOO_LARGE);
        assert_non_null(why);
        assert_true(d.cap <= bound + 1);
        assert_int_equal(d.len, 0);
        compression_buffer_free(&d);
    }
    /* A raw snappy stream declaring 2^32 - 1 bytes is refused from its header alone. */
    static const uint8_t huge_raw[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
    assert_int_equal(compression_decompress(BATCH_COMPRESSION_SNAPPY, huge_raw, sizeof(huge_raw),
                                            &d, bound, NULL),
                     RT_E_RECORD_TOO_LARGE);
    assert_true(d.cap <= bound + 1);
    compression_buffer_free(&c);
    compression_buffer_free(&d);
    free(zeros);
}

/* Once warm, decompressing batches of the same size neither moves nor grows the buffer. */
static void test_buffer_reuse(void **state)
{
    (void)state;
    uint8_t src[40000];
    struct compression_buffer c[NCODECS], d = COMPRESSION_BUFFER_INIT;
    for (size_t k = 0; k < NCODECS; k++) {
        memset(&c[k], 0, sizeof(c[k]));
        fill(src, sizeof(src), false, k);
        assert_int_equal(compression_compress(codecs[k], src, sizeof(src), &c[k], 0), 0);
    }
    for (size_t k = 0; k < NCODECS; k++)
        assert_int_equal(compression_decompress(codecs[k], c[k].data, c[k].len, &d, 1 << 20, NULL),
                         0);
    uint8_t *data = d.data;
    size_t cap = d.cap;
    for (int round = 0; round < 3; round++) {
        for (size_t k = 0; k < NCODECS; k++) {
            fill(src, sizeof(src), false, k);
            assert_int_equal(
                compression_decompress(codecs[k], c[k].data, c[k].len, &d, 1 << 20, NULL), 0);
            assert_ptr_equal(d.data, data);
            assert_int_equal(d.cap, cap);
            assert_int_equal(d.len, sizeof(src));
            assert_memory_equal(d.data, src, sizeof(src));
        }
    }
    /* A failure leaves the buffer reusable. */
    assert_int_equal(compression_decompress(BATCH_COMPRESSION_LZ4, c[2].data, 5, &d, 1 << 20, NULL),
                     RT_E_CORRUPT);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_LZ4, c[2].data, c[2].len, &d, 1 << 20, NULL), 0);
    assert_int_equal(d.len, sizeof(src));
    for (size_t k = 0; k < NCODECS; k++)
        compression_buffer_free(&c[k]);
    compression_buffer_free(&d);
}

static void test_codec_and_level_errors(void **state)
{
    (void)state;
    struct compression_buffer b = COMPRESSION_BUFFER_INIT;
    const char *why = NULL;
    for (int codec = 5; codec <= 7; codec++) {
        assert_int_equal(compression_decompress((enum batch_compression)codec, (const uint8_t *)"x",
                                                1, &b, 10, &why),
                         RT_E_UNSUPPORTED_COMPRESSION);
        assert_non_null(why);
        assert_int_equal(
            compression_compress((enum batch_compression)codec, (const uint8_t *)"x", 1, &b, 0),
            RT_E_UNSUPPORTED_COMPRESSION);
    }
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, (const uint8_t *)"x", 1, &b, 10),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_GZIP, (const uint8_t *)"x", 1, &b, -1),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_LZ4, (const uint8_t *)"x", 1, &b, 18),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_ZSTD, (const uint8_t *)"x", 1, &b, 23),
                     RT_E_INVALID_ARGUMENT);
    /* None copies, bounded. */
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_NONE, (const uint8_t *)"abc", 3, &b, 3, NULL), 0);
    assert_int_equal(b.len, 3);
    assert_int_equal(
        compression_decompress(BATCH_COMPRESSION_NONE, (const uint8_t *)"abc", 3, &b, 2, NULL),
        RT_E_RECORD_TOO_LARGE);
    assert_int_equal(compression_compress(BATCH_COMPRESSION_NONE, (const uint8_t *)"abc", 3, &b, 0),
                     0);
    assert_int_equal(b.len, 3);
    compression_buffer_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sarama_golden_batches),
        cmocka_unit_test(test_snappy_xerial_read),
        cmocka_unit_test(test_round_trip_sizes),
        cmocka_unit_test(test_kafka_framing_written),
        cmocka_unit_test(test_corrupt_inputs),
        cmocka_unit_test(test_gzip_concatenated_members),
        cmocka_unit_test(test_zstd_frames),
        cmocka_unit_test(test_bombs_bounded),
        cmocka_unit_test(test_buffer_reuse),
        cmocka_unit_test(test_codec_and_level_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
