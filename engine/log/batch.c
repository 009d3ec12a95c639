/*
 * batch.c — Kafka RecordBatch v2: the bytes every ringtail segment holds. This module encodes
 * batches and control (COMMIT/ABORT) markers, decodes records and headers, and decides whether
 * a run of bytes is a valid batch. docs/format.md §B (B.2 the batch, B.4-B.6 records, headers and
 * control batches, B.7 the validation rules V1-V17) is the normative copy of what follows; the
 * two must agree.
 *
 * It owns: the byte layout, zigzag varints, the CRC rule and the numbered validation rules
 * below. It must never allocate, never read outside [buf, buf+len) of a caller's buffer, never
 * assert on bytes it was handed (they are input: damage is RT_E_CORRUPT with a static `why`),
 * and never know about segments, offsets assignment or producer state.
 *
 * RecordBatch v2 (all integers big-endian; 61-byte header, CRC-32C over [21, end)):
 *
 *   off size field                 off size field
 *    0   8   baseOffset            27   8   baseTimestamp
 *    8   4   length (= size - 12)  35   8   maxTimestamp
 *   12   4   partitionLeaderEpoch  43   8   producerId      (-1 none)
 *   16   1   magic (= 2)           51   2   producerEpoch   (-1 none)
 *   17   4   crc (u32)             53   4   baseSequence    (-1 none)
 *   21   2   attributes            57   4   recordCount
 *   23   4   lastOffsetDelta       61   .   records
 *
 *   attributes: bits 0-2 compression (0 none 1 gzip 2 snappy 3 lz4 4 zstd), bit 3 LogAppendTime,
 *   bit 4 transactional, bit 5 control, bit 6 delete horizon; bits 7-15 must be zero.
 *   Bytes 0-16 are outside the CRC: baseOffset and partitionLeaderEpoch are stamped by the
 *   writer after the CRC is sealed, exactly as a Kafka broker does.
 *
 * Record (varint = zigzag base-128, as Kafka's ByteUtils.writeVarint / writeVarlong):
 *   length varint (bytes after this field), attributes i8 (0), timestampDelta varlong,
 *   offsetDelta varint, keyLength varint (-1 null), key, valueLength varint (-1 null), value,
 *   headerCount varint, headers: keyLength varint (>= 0), key, valueLength varint (-1 null), value.
 *
 * Control batch (78 bytes): attributes 0x30, lastOffsetDelta 0, baseTimestamp = maxTimestamp,
 * baseSequence -1, one record: 16-byte body, key = version i16 0 + type i16 (0 ABORT, 1 COMMIT),
 * value = version i16 0 + coordinatorEpoch i32, no headers.
 *
 * Validation rules (batch_validate; V1-V5 are batch_header_parse, V1-V3 batch_size_at):
 *   V1  at least 12 bytes, then length >= 49 (an empty header) and 12 + length <= buffer
 *   V2  at least 61 bytes
 *   V3  magic == 2
 *   V4  recordCount >= 0
 *   V5  lastOffsetDelta >= 0
 *   V6  the buffer is exactly the batch: 12 + length == len
 *   V7  12 + length <= max_size_bytes when a maximum is given (RT_E_RECORD_TOO_LARGE)
 *   V8  stored crc == CRC-32C of bytes [21, end)
 *   V9  attributes: bits 7-15 zero, compression codec 0..4
 *   V10 recordCount >= 1 and lastOffsetDelta == recordCount - 1 (Kafka LogValidator, client
 *       appends: "Inconsistent batch offset range ... and count of records")
 *   V11 uncompressed: records parse back to back and end exactly at the batch end, and there
 *       are exactly recordCount of them (Kafka: "Incorrect declared batch size")
 *   V12 each record: its length fits in the batch and equals what its fields consume; varints
 *       at most 5 (varlong 10) bytes without bits beyond 32 (64); attributes 0; key/value
 *       length >= -1 and inside the record; headerCount >= 0; header key length >= 0, header
 *       value length >= -1, each inside the record
 *   V13 record i has offsetDelta == i
 *   V10c, V13c (batch_validate_stored with `cleaned`: batches read from a segment the log
 *       cleaner wrote, docs/format.md A.9 CL1 and B.7) replace V10 and V13: recordCount >= 0,
 *       lastOffsetDelta >= recordCount - 1, an empty batch is its 61-byte header alone (whatever
 *       its codec: Kafka writes it so), and record offset deltas strictly increase and are at
 *       most lastOffsetDelta (a batch the cleaner rewrote keeps its records' offsets and its
 *       lastOffsetDelta; Kafka's MemoryRecords.filterTo writes the same)
 *   V14 CreateTime batches: every record's baseTimestamp + timestampDelta is representable and
 *       <= maxTimestamp (LogAppendTime batches: record timestamps are ignored, as readers take
 *       maxTimestamp for every record)
 *   V15 control batches: uncompressed, recordCount 1, exactly 78 bytes, key and value as above
 * Compressed batches are checked through V10 only: their records need a decompressor, so
 * batch_validate leaves V11-V14 to records_validate (engine/log/records.h), which decompresses the
 * section and applies the same batch_records_check. Every append from outside the engine
 * (rt_append_batch) goes through both, so a compressed batch is held to the same rules.
 *
 * Appends from outside the engine (rt_append_batch, the broker's Produce) are held to Kafka's
 * LogValidator instead of V14 (batch_validate_append, records_validate_append):
 *   V16 every record's baseTimestamp + timestampDelta is representable (whatever the batch's
 *       timestamp type); their maximum M is measured, not compared: a maxTimestamp of -1 or
 *       below a record's timestamp is accepted, as Kafka accepts it
 *   V17 the engine then makes the header true (batch_stamp_timestamps): under CreateTime,
 *       maxTimestamp = M and attribute bit 3 cleared; under LogAppendTime, maxTimestamp = the
 *       engine's clock and bit 3 set. The CRC is recomputed only when attributes or
 *       maxTimestamp changed, so a batch whose header is already right costs no second CRC.
 * So everything ringtail writes (and any Kafka broker writes) satisfies V14 with
 * maxTimestamp == max(record timestamps) under CreateTime, and the read path keeps V14 as a
 * rejection: a disk batch that breaks it is damage. One departure from Kafka: a client batch
 * that arrives with bit 3 set under CreateTime gets M from its records' own deltas (Kafka takes
 * the batch's maxTimestamp for every record there), so its records never read back newer than
 * the stored maxTimestamp.
 */
#include "batch.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "index/crc32c.h"

/* The header table above, pinned. Each field starts where the previous one ends. */
_Static_assert(BATCH_OFF_BASE_OFFSET == 0, "baseOffset @0");
_Static_assert(BATCH_OFF_LENGTH == BATCH_OFF_BASE_OFFSET + 8, "length @8");
_Static_assert(BATCH_OFF_LEADER_EPOCH == BATCH_OFF_LENGTH + 4, "leader epoch @12");
_Static_assert(BATCH_OFF_MAGIC == BATCH_OFF_LEADER_EPOCH + 4, "magic @16");
_Static_assert(BATCH_OFF_CRC == BATCH_OFF_MAGIC + 1, "crc @17");
_Static_assert(BATCH_OFF_ATTRIBUTES == BATCH_OFF_CRC + 4, "attributes @21");
_Static_assert(BATCH_OFF_LAST_OFFSET_DELTA == BATCH_OFF_ATTRIBUTES + 2, "lastOffsetDelta @23");
_Static_assert(BATCH_OFF_BASE_TIMESTAMP == BATCH_OFF_LAST_OFFSET_DELTA + 4, "baseTimestamp @27");
_Static_assert(BATCH_OFF_MAX_TIMESTAMP == BATCH_OFF_BASE_TIMESTAMP + 8, "maxTimestamp @35");
_Static_assert(BATCH_OFF_PRODUCER_ID == BATCH_OFF_MAX_TIMESTAMP + 8, "producerId @43");
_Static_assert(BATCH_OFF_PRODUCER_EPOCH == BATCH_OFF_PRODUCER_ID + 8, "producerEpoch @51");
_Static_assert(BATCH_OFF_BASE_SEQUENCE == BATCH_OFF_PRODUCER_EPOCH + 2, "baseSequence @53");
_Static_assert(BATCH_OFF_RECORD_COUNT == BATCH_OFF_BASE_SEQUENCE + 4, "recordCount @57");
_Static_assert(BATCH_HEADER_BYTES == BATCH_OFF_RECORD_COUNT + 4, "records @61");
_Static_assert(BATCH_LOG_OVERHEAD_BYTES == BATCH_OFF_LEADER_EPOCH, "length counts from @12");
_Static_assert(BATCH_CRC_START == BATCH_OFF_ATTRIBUTES, "the CRC starts at attributes");

#define BATCH_LENGTH_MIN      (BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD_BYTES) /* 49 */
#define BATCH_ATTR_KNOWN_MASK 0x7f
#define BATCH_NO_SEQUENCE     (-1)

/* Control record: key 4 bytes, value 6 bytes, body 16 bytes, 17 with its length varint. */
#define CONTROL_KEY_BYTES         4
#define CONTROL_VALUE_BYTES       6
#define CONTROL_RECORD_BODY_BYTES 16
#define CONTROL_ATTRIBUTES        (BATCH_ATTR_TRANSACTIONAL | BATCH_ATTR_CONTROL)
_Static_assert(CONTROL_RECORD_BODY_BYTES == 1 /* attributes */ + 1 /* timestampDelta 0 */ +
                                                1 /* offsetDelta 0 */ + 1 + CONTROL_KEY_BYTES + 1 +
                                                CONTROL_VALUE_BYTES + 1 /* headerCount 0 */,
               "control record body");
_Static_assert(CONTROL_BATCH_BYTES == BATCH_HEADER_BYTES + 1 + CONTROL_RECORD_BODY_BYTES,
               "a control batch is 78 bytes");
_Static_assert(CONTROL_ATTRIBUTES == 0x30, "control batches are transactional + control");

static inline int fail(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return RT_E_CORRUPT;
}

/* ---------------------------------------------------------------------------------------- */
/* Varints                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static inline uint32_t zigzag32(int32_t v)
{
    return v < 0 ? ~((uint32_t)v << 1) : (uint32_t)v << 1;
}
static inline uint64_t zigzag64(int64_t v)
{
    return v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
}
static inline int32_t unzigzag32(uint32_t u)
{
    return (u & 1) ? -(int32_t)(u >> 1) - 1 : (int32_t)(u >> 1);
}
static inline int64_t unzigzag64(uint64_t u)
{
    return (u & 1) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

static size_t uvarint_size(uint64_t u)
{
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static size_t uvarint_encode(uint8_t *out, uint64_t u)
{
    size_t n = 0;
    while (u >= 0x80) {
        out[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    out[n++] = (uint8_t)u;
    return n;
}

size_t varint_encode(uint8_t *out, int32_t v)
{
    size_t n = uvarint_encode(out, zigzag32(v));
    assert(n <= VARINT_MAX_BYTES);
    return n;
}

size_t varlong_encode(uint8_t *out, int64_t v)
{
    size_t n = uvarint_encode(out, zigzag64(v));
    assert(n <= VARLONG_MAX_BYTES);
    return n;
}

size_t varint_size(int32_t v)
{
    return uvarint_size(zigzag32(v));
}

size_t varlong_size(int64_t v)
{
    return uvarint_size(zigzag64(v));
}

/* Reads at most `max_bytes`; the last allowed byte may carry only `last_bits_mask` bits (the
 * ones that still fit the integer) and no continuation bit. Kafka's reader silently drops the
 * excess bits; no Kafka writer produces them, so here they are damage. */
static int uvarint_decode(const uint8_t *p, const uint8_t *end, size_t max_bytes,
                          uint8_t last_bits_mask, uint64_t *out)
{
    assert(p <= end);
    size_t avail = (size_t)(end - p);
    uint64_t u = 0;
    for (size_t i = 0; i < max_bytes; i++) {
        if (i == avail)
            return RT_E_CORRUPT; /* truncated */
        uint8_t b = p[i];
        if (i == max_bytes - 1 && (b & (uint8_t)~last_bits_mask))
            return RT_E_CORRUPT; /* over-long or overflowing */
        u |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = u;
            return (int)(i + 1);
        }
    }
    assert(!"unreachable: the last byte cannot continue");
    return RT_E_CORRUPT;
}

int varint_decode(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    uint64_t u;
    int n = uvarint_decode(p, end, VARINT_MAX_BYTES, 0x0f, &u); /* 4 + 7*4 = 32 bits */
    if (n < 0)
        return n;
    assert(u <= UINT32_MAX);
    *out = unzigzag32((uint32_t)u);
    return n;
}

int varlong_decode(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    uint64_t u;
    int n = uvarint_decode(p, end, VARLONG_MAX_BYTES, 0x01, &u); /* 1 + 7*9 = 64 bits */
    if (n < 0)
        return n;
    *out = unzigzag64(u);
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Headers                                                                                   */
/* ---------------------------------------------------------------------------------------- */

int64_t batch_size_at(const uint8_t *buf, size_t len, const char **why)
{
    if (len < BATCH_LOG_OVERHEAD_BYTES)
        return fail(why, "fewer than 12 bytes: no batch length");
    int32_t length = (int32_t)be32_load(buf + BATCH_OFF_LENGTH);
    if (length < BATCH_LENGTH_MIN)
        return fail(why, "batch length field below 49");
    int64_t size = (int64_t)BATCH_LOG_OVERHEAD_BYTES + length;
    if ((uint64_t)size > len)
        return fail(why, "batch length field beyond buffer end");
    return size;
}

int batch_header_parse(const uint8_t *buf, size_t len, struct batch_header *out, const char **why)
{
    assert(out != NULL);
    int64_t size = batch_size_at(buf, len, why); /* V1 */
    if (size < 0)
        return (int)size;
    assert(size >= BATCH_HEADER_BYTES);
    /* V2 holds: size >= 61 and size <= len. */
    struct batch_header h;
    h.base_offset = (int64_t)be64_load(buf + BATCH_OFF_BASE_OFFSET);
    h.length = (int32_t)be32_load(buf + BATCH_OFF_LENGTH);
    h.partition_leader_epoch = (int32_t)be32_load(buf + BATCH_OFF_LEADER_EPOCH);
    h.magic = (int8_t)buf[BATCH_OFF_MAGIC];
    h.crc = be32_load(buf + BATCH_OFF_CRC);
    h.attributes = (int16_t)be16_load(buf + BATCH_OFF_ATTRIBUTES);
    h.last_offset_delta = (int32_t)be32_load(buf + BATCH_OFF_LAST_OFFSET_DELTA);
    h.base_timestamp = (int64_t)be64_load(buf + BATCH_OFF_BASE_TIMESTAMP);
    h.max_timestamp = (int64_t)be64_load(buf + BATCH_OFF_MAX_TIMESTAMP);
    h.producer_id = (int64_t)be64_load(buf + BATCH_OFF_PRODUCER_ID);
    h.producer_epoch = (int16_t)be16_load(buf + BATCH_OFF_PRODUCER_EPOCH);
    h.base_sequence = (int32_t)be32_load(buf + BATCH_OFF_BASE_SEQUENCE);
    h.record_count = (int32_t)be32_load(buf + BATCH_OFF_RECORD_COUNT);
    if (h.magic != BATCH_MAGIC) /* V3 */
        return fail(why, "magic is not 2");
    if (h.record_count < 0) /* V4 */
        return fail(why, "negative record count");
    if (h.last_offset_delta < 0) /* V5 */
        return fail(why, "negative lastOffsetDelta");
    *out = h;
    return 0;
}

void batch_seal_crc(uint8_t *buf, size_t len)
{
    assert(len >= BATCH_HEADER_BYTES);
    assert(be32_load(buf + BATCH_OFF_LENGTH) == len - BATCH_LOG_OVERHEAD_BYTES);
    uint32_t crc = crc32c(0, buf + BATCH_CRC_START, len - BATCH_CRC_START);
    be32_store(buf + BATCH_OFF_CRC, crc);
}

/* ---------------------------------------------------------------------------------------- */
/* Records                                                                                   */
/* ---------------------------------------------------------------------------------------- */

int record_header_decode(const uint8_t *p, const uint8_t *end, struct rt_header *out,
                         const char **why)
{
    assert(p <= end);
    assert(out != NULL);
    const uint8_t *q = p;
    int32_t key_len, value_len;
    int n = varint_decode(q, end, &key_len);
    if (n < 0)
        return fail(why, "header key length truncated or over-long");
    q += n;
    if (key_len < 0)
        return fail(why, "header key length negative (header keys are never null)");
    if ((size_t)key_len > (size_t)(end - q))
        return fail(why, "header key beyond record end");
    const uint8_t *key = q;
    q += key_len;
    n = varint_decode(q, end, &value_len);
    if (n < 0)
        return fail(why, "header value length truncated or over-long");
    q += n;
    if (value_len < -1)
        return fail(why, "header value length below -1");
    const uint8_t *value = NULL;
    if (value_len >= 0) {
        if ((size_t)value_len > (size_t)(end - q))
            return fail(why, "header value beyond record end");
        value = q;
        q += value_len;
    }
    size_t used = (size_t)(q - p);
    if (used > INT_MAX)
        return fail(why, "header larger than 2 GiB");
    out->key = key;
    out->key_len = key_len;
    out->value = value;
    out->value_len = value_len;
    return (int)used;
}

int record_decode(const uint8_t *p, const uint8_t *end, struct record_view *out, const char **why)
{
    assert(p <= end);
    assert(out != NULL);
    int32_t body_len;
    int n = varint_decode(p, end, &body_len);
    if (n < 0)
        return fail(why, "record length truncated or over-long");
    if (body_len < 0)
        return fail(why, "record length negative");
    if ((size_t)body_len > (size_t)(end - p) - (size_t)n)
        return fail(why, "record length beyond batch end");
    if (body_len > INT_MAX - VARINT_MAX_BYTES)
        return fail(why, "record larger than 2 GiB");
    const uint8_t *q = p + n;
    const uint8_t *rec_end = q + body_len;

    if (q == rec_end)
        return fail(why, "record too short for its attributes");
    if (*q++ != 0)
        return fail(why, "record attributes not zero");

    struct record_view r;
    n = varlong_decode(q, rec_end, &r.timestamp_delta);
    if (n < 0)
        return fail(why, "record timestampDelta truncated or over-long");
    q += n;
    n = varint_decode(q, rec_end, &r.offset_delta);
    if (n < 0)
        return fail(why, "record offsetDelta truncated or over-long");
    q += n;

    n = varint_decode(q, rec_end, &r.key_len);
    if (n < 0)
        return fail(why, "record key length truncated or over-long");
    q += n;
    if (r.key_len < -1)
        return fail(why, "record key length below -1");
    r.key = NULL;
    if (r.key_len >= 0) {
        if ((size_t)r.key_len > (size_t)(rec_end - q))
            return fail(why, "record key beyond record end");
        r.key = q;
        q += r.key_len;
    }

    n = varint_decode(q, rec_end, &r.value_len);
    if (n < 0)
        return fail(why, "record value length truncated or over-long");
    q += n;
    if (r.value_len < -1)
        return fail(why, "record value length below -1");
    r.value = NULL;
    if (r.value_len >= 0) {
        if ((size_t)r.value_len > (size_t)(rec_end - q))
            return fail(why, "record value beyond record end");
        r.value = q;
        q += r.value_len;
    }

    n = varint_decode(q, rec_end, &r.header_count);
    if (n < 0)
        return fail(why, "record header count truncated or over-long");
    q += n;
    if (r.header_count < 0)
        return fail(why, "record header count negative");
    /* Each header takes at least two bytes (two one-byte lengths): a cheap bound before the
     * walk, as Kafka's "larger than the remaining size of the buffer". */
    if ((size_t)r.header_count > (size_t)(rec_end - q) / 2)
        return fail(why, "record header count exceeds record bytes");
    r.headers = q;
    for (int32_t i = 0; i < r.header_count; i++) {
        struct rt_header h;
        n = record_header_decode(q, rec_end, &h, why);
        if (n < 0)
            return n;
        q += n;
    }
    if (q != rec_end)
        return fail(why, "record length does not match its fields");
    r.headers_size_bytes = (size_t)(rec_end - r.headers);
    *out = r;
    return (int)(rec_end - p);
}

/* ---------------------------------------------------------------------------------------- */
/* Control records                                                                           */
/* ---------------------------------------------------------------------------------------- */

int control_record_parse(const uint8_t *key, int32_t key_len, const uint8_t *value,
                         int32_t value_len, enum control_type *type_out,
                         int32_t *coordinator_epoch_out, const char **why)
{
    /* Kafka's reader accepts key/value versions > 0 (parsing them as 0) and longer values;
     * Kafka writes only version 0 with exactly these sizes, and ringtail markers are fixed at 78
     * bytes, so anything else is rejected here. */
    if (key == NULL || key_len != CONTROL_KEY_BYTES)
        return fail(why, "control record key is not 4 bytes");
    if (be16_load(key) != 0)
        return fail(why, "control record key version is not 0");
    int16_t type = (int16_t)be16_load(key + 2);
    if (type != CONTROL_ABORT && type != CONTROL_COMMIT)
        return fail(why, "control record type is neither ABORT (0) nor COMMIT (1)");
    if (value == NULL || value_len != CONTROL_VALUE_BYTES)
        return fail(why, "control record value is not 6 bytes");
    if (be16_load(value) != 0)
        return fail(why, "control record value version is not 0");
    if (type_out)
        *type_out = (enum control_type)type;
    if (coordinator_epoch_out)
        *coordinator_epoch_out = (int32_t)be32_load(value + 2);
    return 0;
}

void control_batch_build(uint8_t out[CONTROL_BATCH_BYTES], int64_t producer_id,
                         int16_t producer_epoch, enum control_type type, int32_t coordinator_epoch,
                         int64_t timestamp_ms)
{
    assert(type == CONTROL_ABORT || type == CONTROL_COMMIT);
    assert(producer_id >= 0);
    uint8_t *p = out;
    be64_store(p + BATCH_OFF_BASE_OFFSET, 0);
    be32_store(p + BATCH_OFF_LENGTH, CONTROL_BATCH_BYTES - BATCH_LOG_OVERHEAD_BYTES);
    be32_store(p + BATCH_OFF_LEADER_EPOCH, 0);
    p[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    be16_store(p + BATCH_OFF_ATTRIBUTES, CONTROL_ATTRIBUTES);
    be32_store(p + BATCH_OFF_LAST_OFFSET_DELTA, 0);
    be64_store(p + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)timestamp_ms);
    be64_store(p + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)timestamp_ms);
    be64_store(p + BATCH_OFF_PRODUCER_ID, (uint64_t)producer_id);
    be16_store(p + BATCH_OFF_PRODUCER_EPOCH, (uint16_t)producer_epoch);
    be32_store(p + BATCH_OFF_BASE_SEQUENCE, (uint32_t)BATCH_NO_SEQUENCE);
    be32_store(p + BATCH_OFF_RECORD_COUNT, 1);

    uint8_t *r = p + BATCH_HEADER_BYTES;
    size_t n = 0;
    n += varint_encode(r + n, CONTROL_RECORD_BODY_BYTES);
    r[n++] = 0;                    /* attributes */
    n += varlong_encode(r + n, 0); /* timestampDelta */
    n += varint_encode(r + n, 0);  /* offsetDelta */
    n += varint_encode(r + n, CONTROL_KEY_BYTES);
    be16_store(r + n, 0); /* key version */
    be16_store(r + n + 2, (uint16_t)type);
    n += CONTROL_KEY_BYTES;
    n += varint_encode(r + n, CONTROL_VALUE_BYTES);
    be16_store(r + n, 0); /* value version */
    be32_store(r + n + 2, (uint32_t)coordinator_epoch);
    n += CONTROL_VALUE_BYTES;
    n += varint_encode(r + n, 0); /* headerCount */
    assert(BATCH_HEADER_BYTES + n == CONTROL_BATCH_BYTES);
    batch_seal_crc(out, CONTROL_BATCH_BYTES);
}

/* ---------------------------------------------------------------------------------------- */
/* Validation                                                                                */
/* ---------------------------------------------------------------------------------------- */

/* V10-V15 over [p, end). max_out NULL: the read rule (V14 rejects a CreateTime record above
 * maxTimestamp). max_out set: the append rule (V16): every record's baseTimestamp +
 * timestampDelta must be representable, whatever the batch's timestamp type, and their maximum
 * is reported instead of compared. */
static int records_check(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                         bool cleaned, int64_t *max_out, const char **why)
{
    assert(p <= end);
    assert(h->record_count >= 0);
    bool create_time = max_out != NULL || (h->attributes & BATCH_ATTR_LOG_APPEND_TIME) == 0;
    int64_t max_ts = INT64_MIN;
    /* A record takes at least BATCH_RECORD_MIN_BYTES: a count the bytes cannot hold fails before
     * any record is decoded (a recordCount of INT32_MAX over a few bytes costs nothing). */
    if ((size_t)(end - p) / BATCH_RECORD_MIN_BYTES < (size_t)h->record_count)
        return fail(why, "fewer records than recordCount"); /* V11 */
    if (cleaned ? h->last_offset_delta < h->record_count - 1
                : h->last_offset_delta != h->record_count - 1)
        return fail(why, "lastOffsetDelta is not recordCount - 1"); /* V10, V10c */
    int32_t prev_delta = -1;
    for (int32_t i = 0; i < h->record_count; i++) {
        if (p == end)
            return fail(why, "fewer records than recordCount"); /* V11 */
        struct record_view r;
        int n = record_decode(p, end, &r, why); /* V12 */
        if (n < 0)
            return n;
        p += n;
        if (cleaned ? r.offset_delta <= prev_delta || r.offset_delta > h->last_offset_delta
                    : r.offset_delta != i) /* V13, V13c */
            return fail(why, "record offsetDelta out of sequence");
        prev_delta = r.offset_delta;
        if (create_time) { /* V14 */
            int64_t ts;
            if (__builtin_add_overflow(h->base_timestamp, r.timestamp_delta, &ts))
                return fail(why, "record timestamp overflows");
            if (max_out == NULL && ts > h->max_timestamp)
                return fail(why, "record timestamp above maxTimestamp");
            if (ts > max_ts)
                max_ts = ts;
        }
        if (batch_is_control(h)) { /* V15 */
            enum control_type type;
            int rc = control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, NULL, why);
            if (rc < 0)
                return rc;
            if (r.header_count != 0)
                return fail(why, "control record has headers");
        }
    }
    if (p != end)
        return fail(why, "bytes after the last record"); /* V11 */
    if (max_out)
        *max_out = max_ts;
    return 0;
}

int batch_records_check(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                        const char **why)
{
    return records_check(h, p, end, false, NULL, why);
}

int batch_records_check_stored(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                               bool cleaned, const char **why)
{
    return records_check(h, p, end, cleaned, NULL, why);
}

int batch_records_max_timestamp(const struct batch_header *h, const uint8_t *p, const uint8_t *end,
                                int64_t *max_timestamp_out, const char **why)
{
    assert(max_timestamp_out != NULL);
    return records_check(h, p, end, false, max_timestamp_out, why);
}

/* batch_validate (max_out NULL) and batch_validate_append (max_out set: V16 instead of V14). */
static int validate(const uint8_t *buf, size_t len, uint32_t max_size_bytes, bool cleaned,
                    struct batch_header *out, int64_t *max_out, const char **why)
{
    struct batch_header h;
    int rc = batch_header_parse(buf, len, &h, why); /* V1-V5 */
    if (rc < 0)
        return rc;
    size_t size = (size_t)BATCH_LOG_OVERHEAD_BYTES + (size_t)h.length;
    if (size != len) /* V6 */
        return fail(why, "buffer does not end where the batch ends");
    if (max_size_bytes > 0 && size > max_size_bytes) { /* V7 */
        if (why)
            *why = "batch larger than the maximum batch size";
        return RT_E_RECORD_TOO_LARGE;
    }
    if (crc32c(0, buf + BATCH_CRC_START, len - BATCH_CRC_START) != h.crc) /* V8 */
        return fail(why, "crc mismatch");
    if (h.attributes & ~BATCH_ATTR_KNOWN_MASK) /* V9 */
        return fail(why, "unknown attribute bits set");
    int codec = h.attributes & BATCH_ATTR_COMPRESSION_MASK;
    if (codec > BATCH_COMPRESSION_ZSTD)
        return fail(why, "unknown compression codec");
    if (h.record_count == 0 && !cleaned) /* V10 */
        return fail(why, "batch holds no records");
    if (h.record_count == 0 && size != BATCH_HEADER_BYTES) /* V10c */
        return fail(why, "an empty batch holds bytes after its header");
    if (cleaned ? h.last_offset_delta < h.record_count - 1
                : h.last_offset_delta != h.record_count - 1)
        return fail(why, "lastOffsetDelta is not recordCount - 1");
    if (batch_is_control(&h)) { /* V15 */
        if (codec != BATCH_COMPRESSION_NONE)
            return fail(why, "control batch is compressed");
        if (h.record_count != 1 || h.last_offset_delta != 0)
            return fail(why, "control batch does not hold exactly one record");
        /* V15c: in a cleaned segment a marker with a delete horizon (A.9 CL8) has its record's
         * timestampDelta rebased on it, 1 to 10 bytes (Kafka's cleaner writes the same). */
        bool rebased = cleaned && (h.attributes & BATCH_ATTR_DELETE_HORIZON) != 0;
        if (rebased ? size < CONTROL_BATCH_BYTES || size > CONTROL_BATCH_BYTES + 9
                    : size != CONTROL_BATCH_BYTES)
            return fail(why, "control batch is not 78 bytes");
    }
    if (codec == BATCH_COMPRESSION_NONE || h.record_count == 0) {
        rc = records_check(&h, buf + BATCH_HEADER_BYTES, buf + len, cleaned, max_out,
                           why); /* V11-V16 */
        if (rc < 0)
            return rc;
    }
    if (out)
        *out = h;
    return 0;
}

int batch_validate(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                   struct batch_header *out, const char **why)
{
    return validate(buf, len, max_size_bytes, false, out, NULL, why);
}

int batch_validate_stored(const uint8_t *buf, size_t len, bool cleaned, struct batch_header *out,
                          const char **why)
{
    return validate(buf, len, 0, cleaned, out, NULL, why);
}

int batch_validate_replica(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                           struct batch_header *out, bool *compacted_out, const char **why)
{
    assert(compacted_out != NULL);
    *compacted_out = false;
    const char *dense_why = NULL;
    int rc = validate(buf, len, max_size_bytes, false, out, NULL, &dense_why);
    if (rc != RT_E_CORRUPT) {
        if (why)
            *why = dense_why;
        return rc;
    }
    /* RL8: what the leader's cleaner may have written (a leader's stored batch, CL1). */
    if (validate(buf, len, max_size_bytes, true, out, NULL, NULL) == 0) {
        *compacted_out = true;
        return 0;
    }
    if (why)
        *why = dense_why;
    return rc;
}

int batch_validate_append(const uint8_t *buf, size_t len, uint32_t max_size_bytes,
                          struct batch_header *out, int64_t *records_max_timestamp_out,
                          const char **why)
{
    assert(records_max_timestamp_out != NULL);
    *records_max_timestamp_out = INT64_MIN;
    return validate(buf, len, max_size_bytes, false, out, records_max_timestamp_out, why);
}

bool batch_stamp_timestamps(uint8_t *buf, size_t len, struct batch_header *h, bool log_append_time,
                            int64_t max_timestamp)
{
    assert(len == (size_t)BATCH_LOG_OVERHEAD_BYTES + (size_t)h->length);
    assert(!batch_is_control(h));
    int16_t attributes = (int16_t)((h->attributes & ~BATCH_ATTR_LOG_APPEND_TIME) |
                                   (log_append_time ? BATCH_ATTR_LOG_APPEND_TIME : 0));
    if (attributes == h->attributes && max_timestamp == h->max_timestamp)
        return false; /* V17: a header that is already right costs no CRC */
    be16_store(buf + BATCH_OFF_ATTRIBUTES, (uint16_t)attributes);
    be64_store(buf + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_timestamp);
    batch_seal_crc(buf, len);
    h->attributes = attributes;
    h->max_timestamp = max_timestamp;
    h->crc = be32_load(buf + BATCH_OFF_CRC);
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Encoding                                                                                  */
/* ---------------------------------------------------------------------------------------- */

int batch_builder_init(struct batch_builder *b, uint8_t *buf, size_t cap, int16_t attributes,
                       int64_t producer_id, int16_t producer_epoch, int32_t base_sequence)
{
    assert(b != NULL);
    if (buf == NULL || cap < BATCH_HEADER_BYTES)
        return RT_E_INVALID_ARGUMENT;
    if (attributes & ~BATCH_ATTR_KNOWN_MASK)
        return RT_E_INVALID_ARGUMENT;
    if (attributes & BATCH_ATTR_COMPRESSION_MASK)
        return RT_E_INVALID_ARGUMENT; /* the builder writes uncompressed batches only */
    if ((attributes & BATCH_ATTR_TRANSACTIONAL) && producer_id < 0)
        return RT_E_INVALID_ARGUMENT;
    memset(b, 0, sizeof *b);
    b->buf = buf;
    b->cap = cap;
    b->len = BATCH_HEADER_BYTES;
    b->count = 0;
    b->attributes = attributes;
    b->producer_id = producer_id;
    b->producer_epoch = producer_epoch;
    b->base_sequence = base_sequence;
    return 0;
}

static bool bytes_ok(const void *p, int32_t len)
{
    return len >= -1 && (len <= 0 || p != NULL);
}

static bool record_ok(const struct rt_record *r)
{
    if (!bytes_ok(r->key, r->key_len) || !bytes_ok(r->value, r->value_len))
        return false;
    if (r->timestamp_ms < 0)
        return false;
    if (r->header_count > INT32_MAX || (r->header_count > 0 && r->headers == NULL))
        return false;
    for (uint32_t i = 0; i < r->header_count; i++) {
        const struct rt_header *h = &r->headers[i];
        if (h->key_len < 0 || !bytes_ok(h->key, h->key_len) || !bytes_ok(h->value, h->value_len))
            return false;
    }
    return true;
}

static uint64_t bytes_field_size(int32_t len)
{
    return len < 0 ? 1 : varint_size(len) + (uint64_t)len;
}

/* The record body (what the length varint counts), as a 64-bit count so that huge inputs
 * cannot wrap; O(header_count). */
static uint64_t record_body_size(const struct rt_record *r, int32_t offset_delta,
                                 int64_t timestamp_delta)
{
    uint64_t size = 1 + varlong_size(timestamp_delta) + varint_size(offset_delta) +
                    bytes_field_size(r->key_len) + bytes_field_size(r->value_len);
    size += varint_size(r->header_count > INT32_MAX ? INT32_MAX : (int32_t)r->header_count);
    for (uint32_t i = 0; i < r->header_count; i++)
        size += bytes_field_size(r->headers[i].key_len < 0 ? 0 : r->headers[i].key_len) +
                bytes_field_size(r->headers[i].value_len);
    return size;
}

size_t record_encoded_size(const struct rt_record *r, int32_t offset_delta, int64_t timestamp_delta)
{
    uint64_t body = record_body_size(r, offset_delta, timestamp_delta);
    return (size_t)(uvarint_size(body << 1) + body); /* the length is a zigzag varint */
}

static size_t put_bytes(uint8_t *out, const void *p, int32_t len)
{
    size_t n = varint_encode(out, len);
    if (len > 0) {
        memcpy(out + n, p, (size_t)len);
        n += (size_t)len;
    }
    return n;
}

int batch_builder_add(struct batch_builder *b, const struct rt_record *r)
{
    assert(b != NULL && b->buf != NULL);
    assert(b->len >= BATCH_HEADER_BYTES && b->len <= b->cap);
    if (r == NULL || !record_ok(r))
        return RT_E_INVALID_ARGUMENT;
    if (b->count == INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    int64_t base_ts = b->count == 0 ? r->timestamp_ms : b->base_timestamp;
    int64_t ts_delta = r->timestamp_ms - base_ts; /* both >= 0: cannot overflow */
    int32_t offset_delta = b->count;
    uint64_t body = record_body_size(r, offset_delta, ts_delta);
    uint64_t total = uvarint_size(body << 1) + body;
    /* The batch's length field is an int32. */
    if (body > INT32_MAX || b->len - BATCH_LOG_OVERHEAD_BYTES + total > INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    if (total > b->cap - b->len)
        return -ENOSPC;

    uint8_t *start = b->buf + b->len;
    uint8_t *q = start;
    q += varint_encode(q, (int32_t)body);
    *q++ = 0; /* attributes */
    q += varlong_encode(q, ts_delta);
    q += varint_encode(q, offset_delta);
    q += put_bytes(q, r->key, r->key_len);
    q += put_bytes(q, r->value, r->value_len);
    q += varint_encode(q, (int32_t)r->header_count);
    for (uint32_t i = 0; i < r->header_count; i++) {
        q += put_bytes(q, r->headers[i].key, r->headers[i].key_len);
        q += put_bytes(q, r->headers[i].value, r->headers[i].value_len);
    }
    assert((uint64_t)(q - start) == total);

    if (b->count == 0) {
        b->base_timestamp = r->timestamp_ms;
        b->max_timestamp = r->timestamp_ms;
    } else if (r->timestamp_ms > b->max_timestamp) {
        b->max_timestamp = r->timestamp_ms;
    }
    b->len += (size_t)total;
    b->count++;
    return 0;
}

int batch_builder_finish(struct batch_builder *b, size_t *len_out)
{
    assert(b != NULL && b->buf != NULL);
    assert(b->len >= BATCH_HEADER_BYTES && b->len <= b->cap);
    if (b->count == 0)
        return RT_E_INVALID_ARGUMENT;
    assert(b->len - BATCH_LOG_OVERHEAD_BYTES <= INT32_MAX);
    assert(b->max_timestamp >= b->base_timestamp);
    uint8_t *p = b->buf;
    be64_store(p + BATCH_OFF_BASE_OFFSET, 0);
    be32_store(p + BATCH_OFF_LENGTH, (uint32_t)(b->len - BATCH_LOG_OVERHEAD_BYTES));
    be32_store(p + BATCH_OFF_LEADER_EPOCH, 0);
    p[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    be16_store(p + BATCH_OFF_ATTRIBUTES, (uint16_t)b->attributes);
    be32_store(p + BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(b->count - 1));
    be64_store(p + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)b->base_timestamp);
    be64_store(p + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)b->max_timestamp);
    be64_store(p + BATCH_OFF_PRODUCER_ID, (uint64_t)b->producer_id);
    be16_store(p + BATCH_OFF_PRODUCER_EPOCH, (uint16_t)b->producer_epoch);
    be32_store(p + BATCH_OFF_BASE_SEQUENCE, (uint32_t)b->base_sequence);
    be32_store(p + BATCH_OFF_RECORD_COUNT, (uint32_t)b->count);
    batch_seal_crc(p, b->len);
    if (len_out)
        *len_out = b->len;
    return 0;
}

int control_batch_type(const uint8_t *batch, size_t len)
{
    struct record_view rv;
    const char *why = NULL;
    if (len <= BATCH_HEADER_BYTES ||
        record_decode(batch + BATCH_HEADER_BYTES, batch + len, &rv, &why) <= 0)
        return -1;
    enum control_type type;
    int32_t coordinator_epoch;
    if (control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, &type, &coordinator_epoch,
                             &why) != 0)
        return -1;
    return (int)type;
}
