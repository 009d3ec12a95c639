/*
 * batch.h — Kafka RecordBatch v2: encode, decode, validate; records, headers, zigzag varints;
 * control (COMMIT/ABORT marker) batches. docs/format.md §B is the normative layout.
 *
 * Everything here works on caller-owned byte buffers and never allocates. Decoders treat their
 * input as untrusted: they never read outside [buf, buf+len) and report damage as RT_E_CORRUPT
 * with a static reason string in *why (`why` may be NULL; the string names the rule, not the
 * record index). The validation rules V1-V17 are numbered in engine/log/batch.c and
 * docs/format.md §B.7.
 */
#ifndef RT_BATCH_H
#define RT_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/byte_order.h"
#include "ringtail.h"

#define BATCH_HEADER_BYTES       RT_BATCH_HEADER_BYTES /* the framing is ringtail.h's */
#define BATCH_LOG_OVERHEAD_BYTES RT_BATCH_LOG_OVERHEAD_BYTES
#define BATCH_CRC_START          21 /* CRC-32C covers [21, end) */
#define BATCH_MAGIC              2
#define CONTROL_BATCH_BYTES      78

/* Byte offsets within the header. */
#define BATCH_OFF_BASE_OFFSET       RT_BATCH_OFF_BASE_OFFSET
#define BATCH_OFF_LENGTH            RT_BATCH_OFF_LENGTH
#define BATCH_OFF_LEADER_EPOCH      RT_BATCH_OFF_LEADER_EPOCH
#define BATCH_OFF_MAGIC             RT_BATCH_OFF_MAGIC
#define BATCH_OFF_CRC               17
#define BATCH_OFF_ATTRIBUTES        RT_BATCH_OFF_ATTRIBUTES
#define BATCH_OFF_LAST_OFFSET_DELTA RT_BATCH_OFF_LAST_OFFSET_DELTA
#define BATCH_OFF_BASE_TIMESTAMP    27
#define BATCH_OFF_MAX_TIMESTAMP     RT_BATCH_OFF_MAX_TIMESTAMP
#define BATCH_OFF_PRODUCER_ID       43
#define BATCH_OFF_PRODUCER_EPOCH    51
#define BATCH_OFF_BASE_SEQUENCE     53
#define BATCH_OFF_RECORD_COUNT      57

/* attributes */
#define BATCH_ATTR_COMPRESSION_MASK 0x07
#define BATCH_ATTR_LOG_APPEND_TIME  RT_BATCH_ATTR_LOG_APPEND_TIME
#define BATCH_ATTR_TRANSACTIONAL    0x10
#define BATCH_ATTR_CONTROL          0x20
#define BATCH_ATTR_DELETE_HORIZON   0x40

enum batch_compression {
    BATCH_COMPRESSION_NONE = 0,
    BATCH_COMPRESSION_GZIP = 1,
    BATCH_COMPRESSION_SNAPPY = 2,
    BATCH_COMPRESSION_LZ4 = 3,
    BATCH_COMPRESSION_ZSTD = 4,
};

enum control_type {
    CONTROL_ABORT = 0,
    CONTROL_COMMIT = 1,
};

struct batch_header {
    int64_t base_offset;
    int32_t length; /* == total size - 12 */
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
};

/* Big-endian helpers: be16_load .. be64_store (index/byte_order.h, one copy for the tree). */

/* ---- zigzag varints (Kafka / protobuf sint32, sint64). ---- */
#define VARINT_MAX_BYTES  5
#define VARLONG_MAX_BYTES 10
/* Write: return bytes written (buffer must have room for the max). */
size_t varint_encode(uint8_t *out, int32_t v);
size_t varlong_encode(uint8_t *out, int64_t v);
size_t varint_size(int32_t v);
size_t varlong_size(int64_t v);
/* Read from [p, end): return bytes consumed (> 0), or RT_E_CORRUPT for a truncated or
 * over-long encoding (more than 5 / 10 bytes, or a last byte with bits beyond 32 / 64).
 * Non-minimal encodings are accepted, as Kafka accepts them. */
int varint_decode(const uint8_t *p, const uint8_t *end, int32_t *out);
int varlong_decode(const uint8_t *p, const uint8_t *end, int64_t *out);

/* ---- headers ---- */

/* Parses the 61-byte header and checks what can be checked without the body (V1-V5): len >= 61,
 * magic 2, length >= 49 and 12 + length <= len (`len` may be longer than the batch),
 * record_count >= 0, last_offset_delta >= 0. Does not check the CRC. Enough to walk a segment;
 * accepts empty batches (record_count 0) that batch_validate rejects. */
int batch_header_parse(const uint8_t *buf, size_t len, struct batch_header *out, const char **why);

/* Total bytes of the batch at buf (12 + length), or RT_E_CORRUPT if fewer than 12 bytes or the
 * length field is below 49 or beyond len. Reads only the first 12 bytes. */
int64_t batch_size_at(const uint8_t *buf, size_t len, const char **why);

/* Full validation of exactly one batch in [buf, buf+len) where len == 12 + length (V1-V15):
 * header as above, size limit, CRC-32C, known attribute bits and codec, record_count >= 1 and
 * last_offset_delta == record_count - 1; for uncompressed batches every record parses and the
 * records end exactly at the batch end, offset deltas are 0..n-1 in order, and (CreateTime)
 * every record timestamp is <= max_timestamp; control batches are a single 78-byte COMMIT/ABORT
 * marker as in format.md. Compressed batches: everything up to the records.
 * If max_size_bytes > 0, batches larger than it (12-byte overhead included) fail with
 * RT_E_RECORD_TOO_LARGE before the CRC is computed. Everything else: RT_E_CORRUPT. O(size). */
int batch_validate(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                   struct batch_header *out, const char **why);

/* batch_validate for a batch handed in to be appended (Kafka's LogValidator; V16 instead of
 * V14): the same rules, except that record timestamps are measured, not compared with
 * maxTimestamp. For an uncompressed batch *records_max_timestamp_out is the largest
 * baseTimestamp + timestampDelta of its records; for a compressed one it is INT64_MIN and
 * records_validate_append (records.h) measures it. Same errors as batch_validate. O(size). */
/* batch_validate of a batch read from a segment (no size limit); `cleaned`: the segment was
 * written by the log cleaner (docs/format.md A.9 CL1), so V10c and V13c replace V10 and V13
 * (records may be missing: offset deltas increase with gaps, lastOffsetDelta is the original
 * batch's, an empty batch is a 61-byte header). Same errors as batch_validate. O(size). */
int batch_validate_stored(const uint8_t *buf, size_t len, bool cleaned, struct batch_header *out,
                          const char **why);

/* batch_validate for a leader's batch a follower copies (partition.h RL8, docs/format.md A.10): the rules of
 * batch_validate (V1-V15, max_size_bytes as there); a batch the leader's log cleaner rewrote
 * (A.9 CL1, CL7, CL8: records missing, an empty header, a marker with a delete horizon) passes
 * V10c, V13c and V15c instead, and *compacted_out says so (false for a batch that passes the
 * dense rules). Same errors as batch_validate (the dense rules' reason when both fail). O(size). */
int batch_validate_replica(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                           struct batch_header *out, bool *compacted_out, const char **why);

int batch_validate_append(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                          struct batch_header *out, int64_t *records_max_timestamp_out,
                          const char **why);

/* V17: makes the timestamp fields of a validated, non-control batch at buf (len = 12 + length)
 * say what the engine decided: attribute bit 3 = log_append_time, maxTimestamp = max_timestamp.
 * Rewrites buf and recomputes the CRC only when one of them changes (returns true then) and
 * updates *h to match; a header that is already right costs nothing (returns false). */
bool batch_stamp_timestamps(uint8_t *buf, size_t len, struct batch_header *h, bool log_append_time,
                            int64_t max_timestamp);

/* Smallest record: length, attributes, timestampDelta, offsetDelta, keyLength, valueLength and
 * headerCount, one byte each. */
#define BATCH_RECORD_MIN_BYTES 7

/* The record-level rules V10-V15 over a records section [p, end): the bytes after the header of
 * an uncompressed batch, or the decompressed section of a compressed one (records_validate in
 * records.h does the decompression). h is the batch's parsed header. Checks lastOffsetDelta ==
 * recordCount - 1, exactly recordCount records that parse back to back and end at `end`, offset
 * deltas 0..n-1 in order, CreateTime timestamps representable and <= maxTimestamp, and a control
 * batch's marker record. Returns 0 or RT_E_CORRUPT with a static *why. O(end - p). */
int batch_records_check(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                        const char **why);

/* batch_records_check; `cleaned`: V10c and V13c instead of V10 and V13 (batch_validate_stored). */
int batch_records_check_stored(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                               bool cleaned, const char **why);

/* batch_records_check with V16 instead of V14 (appends): *max_timestamp_out = the largest
 * baseTimestamp + timestampDelta of the records, whatever the batch's timestamp type. */
int batch_records_max_timestamp(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                                int64_t *max_timestamp_out, const char **why);

static inline bool batch_is_control(const struct batch_header *h)
{
    return (h->attributes & BATCH_ATTR_CONTROL) != 0;
}
static inline bool batch_is_transactional(const struct batch_header *h)
{
    return (h->attributes & BATCH_ATTR_TRANSACTIONAL) != 0;
}
static inline int64_t batch_last_offset(const struct batch_header *h)
{
    return h->base_offset + h->last_offset_delta;
}

/* Sets baseOffset (outside the CRC) in an encoded batch. */
static inline void batch_stamp_base_offset(uint8_t *buf, int64_t base_offset)
{
    be64_store(buf + BATCH_OFF_BASE_OFFSET, (uint64_t)base_offset);
}

/* Recomputes and stores the CRC of the encoded batch at buf of `len` (= 12 + length) bytes. */
void batch_seal_crc(uint8_t *buf, size_t len);

/* ---- encoding ---- */

struct batch_builder {
    uint8_t *buf;
    size_t cap;
    size_t len; /* bytes used so far, header included */
    int32_t count;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int16_t attributes;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
};

/* Starts a batch in buf (cap >= 61). Uncompressed only; producer_id -1 means none.
 * RT_E_INVALID_ARGUMENT: cap < 61, compression or unknown attribute bits, or the transactional
 * bit without a producer id. */
int batch_builder_init(struct batch_builder *b, uint8_t *buf, size_t cap, int16_t attributes,
                       int64_t producer_id, int16_t producer_epoch, int32_t base_sequence);

/* Encoded size of one record as it would be appended with the given offset/timestamp deltas. */
size_t record_encoded_size(const struct rt_record *r, int32_t offset_delta,
                           int64_t timestamp_delta);

/* Appends a record (timestamp_ms must be >= 0 here; callers resolve -1 to "now").
 * Returns 0, -ENOSPC when it does not fit (the builder is unchanged), RT_E_INVALID_ARGUMENT
 * (negative length other than -1, NULL pointer with a positive length, header key null,
 * negative timestamp), or RT_E_RECORD_TOO_LARGE (the batch length would overflow int32). */
int batch_builder_add(struct batch_builder *b, const struct rt_record *r);

/* Writes the header (base offset 0, leader epoch 0) and the CRC; returns the batch size in
 * bytes via *len_out. Fails with RT_E_INVALID_ARGUMENT if the batch has no records. */
int batch_builder_finish(struct batch_builder *b, size_t *len_out);

/* ---- records ---- */

struct record_view {
    int32_t offset_delta;
    int64_t timestamp_delta;
    const uint8_t *key;
    int32_t key_len; /* -1 null */
    const uint8_t *value;
    int32_t value_len; /* -1 null */
    int32_t header_count;
    const uint8_t *headers; /* start of the first header */
    size_t headers_size_bytes;
};

/* Decodes the record at [p, end): returns bytes consumed (> 0) or RT_E_CORRUPT. */
int record_decode(const uint8_t *p, const uint8_t *end, struct record_view *out, const char **why);

/* Decodes the header at [p, end): returns bytes consumed or RT_E_CORRUPT. */
int record_header_decode(const uint8_t *p, const uint8_t *end, struct rt_header *out,
                         const char **why);

/* ---- control batches ---- */

/* Writes a complete 78-byte control batch (base offset 0, leader epoch 0, baseSequence -1,
 * attributes 0x30; stamp the offset later). producer_id must be >= 0 (asserted). */
void control_batch_build(uint8_t out[CONTROL_BATCH_BYTES], int64_t producer_id,
                         int16_t producer_epoch, enum control_type type, int32_t coordinator_epoch,
                         int64_t timestamp_ms);

/* Parses a control record's key and value. Returns 0 or RT_E_CORRUPT (unknown version,
 * unknown type, wrong sizes). */
int control_record_parse(const uint8_t *key, int32_t key_len, const uint8_t *value,
                         int32_t value_len, enum control_type *type_out,
                         int32_t *coordinator_epoch_out, const char **why);

/* The type (CONTROL_ABORT, CONTROL_COMMIT) of a control batch's single record, or -1 when it
 * cannot be read (the batch's header was validated by the caller; len is the whole batch). */
int control_batch_type(const uint8_t *batch, size_t len);

#endif /* RT_BATCH_H */
