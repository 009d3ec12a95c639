/*
 * compression.h — the records section of a RecordBatch v2 through Kafka's codecs: decompress
 * (gzip, snappy, lz4, zstd) for the record iterator, compress for producers that ask for it.
 * docs/format.md §F is normative for the framings; engine/log/compression.c repeats them.
 *
 * Framings, as Kafka's clients write them: gzip is an RFC 1952 stream (concatenated members are
 * accepted on read, as java.util.zip.GZIPInputStream does); snappy is xerial snappy-java framing
 * (magic 82 'SNAPPY' 00, version i32, compatible i32, then [i32 BE length][raw snappy block]...),
 * and a raw snappy block (what librdkafka and sarama write) is accepted on read; lz4 is one LZ4
 * frame (independent 64 KiB blocks, no content checksum, as KafkaLZ4BlockOutputStream writes);
 * zstd is one or more standard zstd frames.
 *
 * A compression_buffer is the caller's reusable output buffer. It also keeps each codec's
 * context, so once it has grown to the largest batch seen, neither call allocates. One thread
 * at a time per buffer; different buffers are independent.
 */
#ifndef RT_COMPRESSION_H
#define RT_COMPRESSION_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"

/* Pass to compression_compress for the codec's Kafka default (gzip 6, lz4 fast, zstd 3). */
#define COMPRESSION_LEVEL_DEFAULT 0

struct compression_contexts; /* codec state, private to compression.c */

struct compression_buffer {
    uint8_t *data; /* output: data[0, len) */
    size_t len;
    size_t cap; /* bytes allocated at data */
    struct compression_contexts *contexts;
};

/* An empty buffer: nothing allocated until first use. */
/* clang-format off */
#define COMPRESSION_BUFFER_INIT {0}
/* clang-format on */

/* Decompresses src[0, len) (a batch's records section) into out->data[0, out->len), replacing
 * what out held. At most max_bytes are produced: a stream that would produce more fails with
 * RT_E_RECORD_TOO_LARGE before more than max_bytes + 1 bytes of output are held (decompression
 * bombs are cut off, not allocated). BATCH_COMPRESSION_NONE copies. Damaged input — bad magic or
 * header, a checksum mismatch (gzip CRC-32 and ISIZE, lz4 header and block checksums when present,
 * zstd checksum when present), a truncated stream, bytes after the last frame (lz4, zstd skippable
 * frames aside) or after the last gzip member, empty input — fails with RT_E_CORRUPT and *why a
 * static reason. Returns 0, RT_E_CORRUPT, RT_E_RECORD_TOO_LARGE, RT_E_UNSUPPORTED_COMPRESSION
 * (codec not 0-4), -ENOMEM. On failure out->len is 0 and the buffer stays reusable.
 * why may be NULL. */
int compression_decompress(enum batch_compression codec, const uint8_t *src, size_t len,
                           struct compression_buffer *out, size_t max_bytes, const char **why);

/* Compresses src[0, len) into out->data[0, out->len) in the framing Kafka's Java producer writes
 * (see the top of this file). `level`: COMPRESSION_LEVEL_DEFAULT, or Kafka's ranges
 * (compression.gzip.level 1-9, compression.lz4.level 1-17, compression.zstd.level
 * ZSTD_minCLevel()-22); ignored for snappy and none. Empty input gives a valid empty stream.
 * Returns 0, RT_E_INVALID_ARGUMENT (level out of range), RT_E_RECORD_TOO_LARGE (len > INT32_MAX:
 * a batch cannot hold it), RT_E_UNSUPPORTED_COMPRESSION, -ENOMEM. */
int compression_compress(enum batch_compression codec, const uint8_t *src, size_t len,
                         struct compression_buffer *out, int level);

/* Frees the output and the codec contexts; the buffer is COMPRESSION_BUFFER_INIT again. Safe on
 * an empty buffer and twice. */
void compression_buffer_free(struct compression_buffer *buf);

#endif /* RT_COMPRESSION_H */
