/*
 * msgset.c — Kafka message sets of formats v0 and v1 ("magic 0/1"), the record format of
 * Produce v0-2 and Fetch v0-3 (and of clients that still write it at later versions), converted
 * to RecordBatch v2 on append (up-conversion, as Kafka's LogValidator does) and from v2 for old
 * consumers (down-conversion, as Kafka's RecordsUtil.downConvert does). docs/format.md §B.9 is
 * the normative copy of the layout and rules below.
 *
 * It owns: the legacy layout, its CRC rule, the LZ4 framing quirk of magic 0, and the mapping
 * between the two formats. It must never write a segment (a converted batch is appended through
 * rt_append_batch and validated there like any client batch), never read outside the caller's
 * buffers, and never hold more than one request's conversion: memory is the caller's scratch,
 * bounded by RECORDS_DECOMPRESSED_MAX_BYTES for decompressed data and by the caller's maximum
 * for the output.
 *
 * Message set = entries back to back; entry (all big-endian):
 *
 *   off size field                     v0 message        v1 message
 *    0   8   offset                     12 crc u32        12 crc u32
 *    8   4   size (bytes after this)    16 magic 0        16 magic 1
 *                                       17 attributes     17 attributes
 *                                       18 key  (i32 len) 18 timestamp i64
 *                                          value (i32 len) 26 key, value (i32 len, -1 null)
 *
 *   crc = CRC-32 (IEEE, zlib's crc32) of bytes [16, 12 + size); attributes bits 0-2: codec
 *   (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 (v1): LogAppendTime. A compressed message (a
 *   "wrapper") holds in its value the compressed bytes of an inner message set of the same magic;
 *   the wrapper's offset is its last inner message's; v1 inner offsets are relative (0..n-1),
 *   v0's absolute; a v1 wrapper's timestamp is its inner messages' max (CreateTime) or the
 *   LogAppendTime every inner message takes.
 *
 * Rules (up-conversion; each failure is RT_E_CORRUPT with a static reason unless named):
 *   MS1  entries tile the set exactly: no partial entry at the end (a produce is whole), size >=
 *       the magic's minimum, at least one message in the set
 *   MS2  magic 0 or 1, the same in every entry of a set and in a wrapper's inner messages
 *   MS3  crc matches
 *   MS4  key and value lengths >= -1 and end exactly at the message end
 *   MS5  codec 0..3; 4 (zstd) and above is RT_E_UNSUPPORTED_COMPRESSION (zstd needs v2)
 *   MS6  a wrapper has a non-null value that decompresses (at most 64 MiB) into a non-empty inner
 *       set; inner messages are not compressed (no nesting)
 *   MS7  magic-0 LZ4 frames carry Kafka 0.8-0.9's header checksum (xxh32 taken from the frame
 *       magic on, not from FLG): it is repaired in a copy before decoding, as librdkafka does
 *   MS8  the output: one v2 batch, offsets 0..n-1 in set order (the broker assigns the real
 *       ones), producer id/epoch/sequence -1, no headers, record timestamp = the message's (v1;
 *       a LogAppendTime wrapper's for its inner messages) or -1 (v0), baseTimestamp the first
 *       record's, maxTimestamp the largest; compressed with the first wrapper's codec (Kafka
 *       recompresses with the source codec), uncompressed when no wrapper is
 *   MS9  the batch fits batch_max_bytes (RT_E_RECORD_TOO_LARGE) and its records 64 MiB
 * Down-conversion:
 *   MS10 control batches are dropped; record headers are dropped; records below fetch_offset are
 *       skipped (an old consumer would drop them); offsets are the records' own
 *   MS11 an uncompressed batch becomes plain messages; a compressed one one wrapper with the same
 *       codec (v1: relative inner offsets, wrapper timestamp = the batch's maxTimestamp); zstd is
 *       RT_E_UNSUPPORTED_COMPRESSION (Kafka answers UNSUPPORTED_COMPRESSION_TYPE to Fetch < 10);
 *       v1 messages carry the record's timestamp, or maxTimestamp with bit 3 for a LogAppendTime
 *       batch; magic-0 LZ4 wrappers carry the 0.8-0.9 checksum, as Kafka writes them
 *   MS12 whole batches only, in order, while they fit the caller's cap
 *   MS13 batches are checked by the read rules of a cleaned segment (batch_validate_stored,
 *       V10c/V13c), so a compacted topic's rewritten batches (records missing, offsets kept)
 *       down-convert too, each kept record at its own offset
 *   MS14 resumable: consumed_bytes is the input up to the end of the last batch converted or
 *       skipped (nothing converted and nothing skipped: 0), so converting again from there, with
 *       the same fetch offset, goes on exactly where the output stopped; first_bytes is the first
 *       converted batch's output size (0 if none)
 */
#include "msgset.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "batch.h"
#include "error.h"
#include "records.h"

#define BUILD_INITIAL_BYTES 4096

static int fail(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return RT_E_CORRUPT;
}

void msgset_scratch_free(struct msgset_scratch *sc)
{
    compression_buffer_free(&sc->inner);
    compression_buffer_free(&sc->out);
    free(sc->build);
    free(sc->fix);
    memset(sc, 0, sizeof(*sc));
}

/* Makes room for `more` bytes at the end of the build buffer, never beyond limit bytes. */
static int build_reserve(struct msgset_scratch *sc, size_t more, size_t limit)
{
    if (more > limit || sc->build_len > limit - more)
        return RT_E_RECORD_TOO_LARGE;
    size_t need = sc->build_len + more;
    if (need <= sc->build_cap)
        return 0;
    size_t cap = sc->build_cap ? sc->build_cap : BUILD_INITIAL_BYTES;
    while (cap < need)
        cap = cap > limit / 2 ? limit : cap * 2;
    uint8_t *p = realloc(sc->build, cap);
    if (!p)
        return -ENOMEM;
    sc->build = p;
    sc->build_cap = cap;
    return 0;
}

/* ---- the legacy message ------------------------------------------------------------------- */

struct legacy_msg {
    int64_t offset;
    int8_t magic;
    int8_t attributes;
    int64_t timestamp; /* -1 for v0 */
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;
    int32_t value_len;
};

/* Parses the entry at [p, end) (MS1-MS4): returns its size (> 0) or RT_E_CORRUPT. */
static int64_t legacy_parse(const uint8_t *p, const uint8_t *end, struct legacy_msg *m,
                            const char **why)
{
    size_t left = (size_t)(end - p);
    if (left < MSGSET_LOG_OVERHEAD_BYTES)
        return fail(why, "message set ends inside an entry's offset and size");
    m->offset = (int64_t)be64_load(p);
    int32_t size = (int32_t)be32_load(p + 8);
    if (size < MSGSET_V0_MIN_BYTES)
        return fail(why, "message size below the minimum");
    if ((size_t)size > left - MSGSET_LOG_OVERHEAD_BYTES)
        return fail(why, "message set ends inside a message");
    const uint8_t *q = p + MSGSET_LOG_OVERHEAD_BYTES, *msg_end = q + size;
    uint32_t crc = be32_load(q);
    m->magic = (int8_t)q[4];
    if (m->magic != 0 && m->magic != 1)
        return fail(why, "message magic is neither 0 nor 1");
    if (m->magic == 1 && size < MSGSET_V1_MIN_BYTES)
        return fail(why, "message size below the minimum");
    if ((uint32_t)crc32(0L, q + 4, (uInt)(size - 4)) != crc)
        return fail(why, "message crc mismatch");
    m->attributes = (int8_t)q[5];
    q += 6;
    m->timestamp = -1;
    if (m->magic == 1) {
        m->timestamp = (int64_t)be64_load(q);
        q += 8;
    }
    for (int f = 0; f < 2; f++) {
        if ((size_t)(msg_end - q) < 4)
            return fail(why, "message ends inside a key or value length");
        int32_t n = (int32_t)be32_load(q);
        q += 4;
        if (n < -1)
            return fail(why, "message key or value length below -1");
        if (n > 0 && (size_t)n > (size_t)(msg_end - q))
            return fail(why, "message key or value beyond the message");
        const uint8_t *at = n >= 0 ? q : NULL;
        if (n > 0)
            q += n;
        if (f == 0) {
            m->key = at;
            m->key_len = n;
        } else {
            m->value = at;
            m->value_len = n;
        }
    }
    if (q != msg_end)
        return fail(why, "message fields do not end at the message end");
    return MSGSET_LOG_OVERHEAD_BYTES + (int64_t)size;
}

/* ---- xxh32 of a short input (an LZ4 frame descriptor, at most 15 bytes): MS7 -------------- */

#define XXH_P1 2654435761u
#define XXH_P2 2246822519u
#define XXH_P3 3266489917u
#define XXH_P4 668265263u
#define XXH_P5 374761393u

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static uint32_t xxh32_short(const uint8_t *p, size_t len)
{
    assert(len < 16);
    uint32_t h = XXH_P5 + (uint32_t)len;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        uint32_t w = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
                     (uint32_t)p[i + 3] << 24;
        h += w * XXH_P3;
        h = rotl32(h, 17) * XXH_P4;
    }
    for (; i < len; i++) {
        h += p[i] * XXH_P5;
        h = rotl32(h, 11) * XXH_P1;
    }
    h ^= h >> 15;
    h *= XXH_P2;
    h ^= h >> 13;
    h *= XXH_P3;
    h ^= h >> 16;
    return h;
}

/* Where the header checksum byte of the LZ4 frame at p sits (7, 15, 11 or 19), or 0 when p is
 * too short or not an LZ4 frame. */
static size_t lz4_hc_at(const uint8_t *p, size_t len)
{
    if (len < 7 || be32_load(p) != 0x04224d18u)
        return 0;
    uint8_t flg = p[4];
    size_t at = 6 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
    return at < len ? at : 0;
}

/* ---- up-conversion ------------------------------------------------------------------------ */

struct up_state {
    int32_t count;
    int64_t base_ts, max_ts;
    int codec; /* the first wrapper's; 0 while none */
};

/* Appends one v2 record for (ts, key, value) to the build buffer (MS8). */
static int up_record(struct msgset_scratch *sc, struct up_state *st, int64_t ts, const uint8_t *key,
                     int32_t key_len, const uint8_t *value, int32_t value_len, const char **why)
{
    if (st->count == INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    if (st->count == 0) {
        st->base_ts = ts;
        st->max_ts = ts;
    }
    int64_t delta;
    if (__builtin_sub_overflow(ts, st->base_ts, &delta))
        return fail(why, "message timestamps too far apart for one batch");
    uint8_t head[1 + VARLONG_MAX_BYTES + 2 * VARINT_MAX_BYTES];
    size_t h = 0;
    head[h++] = 0; /* attributes */
    h += varlong_encode(head + h, delta);
    h += varint_encode(head + h, st->count);
    size_t body = h + varint_size(key_len) + (key_len > 0 ? (size_t)key_len : 0) +
                  varint_size(value_len) + (value_len > 0 ? (size_t)value_len : 0) + 1;
    if (body > INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    int rc = build_reserve(sc, varint_size((int32_t)body) + body, RECORDS_DECOMPRESSED_MAX_BYTES);
    if (rc)
        return rc;
    uint8_t *q = sc->build + sc->build_len;
    q += varint_encode(q, (int32_t)body);
    memcpy(q, head, h);
    q += h;
    q += varint_encode(q, key_len);
    if (key_len > 0) {
        memcpy(q, key, (size_t)key_len);
        q += key_len;
    }
    q += varint_encode(q, value_len);
    if (value_len > 0) {
        memcpy(q, value, (size_t)value_len);
        q += value_len;
    }
    *q++ = 0; /* headerCount */
    sc->build_len = (size_t)(q - sc->build);
    if (ts > st->max_ts)
        st->max_ts = ts;
    st->count++;
    return 0;
}

/* A wrapper's inner set (MS6): decompressed into sc->inner, every inner message appended. */
static int up_wrapper(struct msgset_scratch *sc, struct up_state *st, const struct legacy_msg *w,
                      const char **why)
{
    int codec = w->attributes & MSGSET_ATTR_CODEC_MASK;
    if (w->value_len <= 0)
        return fail(why, "compressed message without a value");
    const uint8_t *src = w->value;
    size_t src_len = (size_t)w->value_len;
    size_t hc = codec == BATCH_COMPRESSION_LZ4 && w->magic == 0 ? lz4_hc_at(src, src_len) : 0;
    if (hc) { /* MS7 */
        uint8_t good = (uint8_t)(xxh32_short(src + 4, hc - 4) >> 8);
        if (src[hc] != good) {
            if (src_len > sc->fix_cap) {
                uint8_t *p = realloc(sc->fix, src_len);
                if (!p)
                    return -ENOMEM;
                sc->fix = p;
                sc->fix_cap = src_len;
            }
            memcpy(sc->fix, src, src_len);
            sc->fix[hc] = good;
            src = sc->fix;
        }
    }
    int rc = compression_decompress((enum batch_compression)codec, src, src_len, &sc->inner,
                                    RECORDS_DECOMPRESSED_MAX_BYTES, why);
    if (rc == RT_E_RECORD_TOO_LARGE)
        return fail(why, "compressed message expands beyond 64 MiB");
    if (rc)
        return rc;
    if (sc->inner.len == 0)
        return fail(why, "compressed message holds no messages");
    bool log_append = w->magic == 1 && (w->attributes & MSGSET_ATTR_LOG_APPEND);
    const uint8_t *p = sc->inner.data, *end = p + sc->inner.len;
    while (p < end) {
        struct legacy_msg m;
        int64_t n = legacy_parse(p, end, &m, why);
        if (n < 0)
            return (int)n;
        p += n;
        if (m.magic != w->magic)
            return fail(why, "inner message magic differs from its wrapper's");
        if (m.attributes & MSGSET_ATTR_CODEC_MASK)
            return fail(why, "compressed message inside a compressed message");
        rc = up_record(sc, st, log_append ? w->timestamp : m.timestamp, m.key, m.key_len, m.value,
                       m.value_len, why);
        if (rc)
            return rc;
    }
    return 0;
}

int msgset_upconvert(struct msgset_scratch *sc, const uint8_t *set, size_t len,
                     size_t batch_max_bytes, uint8_t **batch_out, size_t *batch_len_out,
                     int8_t *magic_out, const char **why)
{
    assert(sc != NULL && batch_out != NULL && batch_len_out != NULL);
    *batch_out = NULL;
    *batch_len_out = 0;
    if (!set || len == 0)
        return fail(why, "empty message set");
    sc->build_len = 0;
    struct up_state st = {0};
    int8_t magic = -1;
    const uint8_t *p = set, *end = set + len;
    while (p < end) {
        struct legacy_msg m;
        int64_t n = legacy_parse(p, end, &m, why);
        if (n < 0)
            return (int)n;
        p += n;
        if (magic >= 0 && m.magic != magic)
            return fail(why, "messages of formats 0 and 1 in one set");
        magic = m.magic;
        int codec = m.attributes & MSGSET_ATTR_CODEC_MASK;
        int rc;
        if (codec > BATCH_COMPRESSION_LZ4) { /* MS5 */
            if (why)
                *why = "compression codec not available to message formats 0 and 1";
            return RT_E_UNSUPPORTED_COMPRESSION;
        }
        if (codec == BATCH_COMPRESSION_NONE) {
            rc = up_record(sc, &st, m.timestamp, m.key, m.key_len, m.value, m.value_len, why);
        } else {
            if (st.codec == 0)
                st.codec = codec;
            rc = up_wrapper(sc, &st, &m, why);
        }
        if (rc == RT_E_RECORD_TOO_LARGE && why)
            *why = "the converted records exceed 64 MiB";
        if (rc)
            return rc;
    }
    assert(st.count > 0);
    const uint8_t *section = sc->build;
    size_t section_len = sc->build_len;
    if (st.codec != BATCH_COMPRESSION_NONE) {
        int rc = compression_compress((enum batch_compression)st.codec, sc->build, sc->build_len,
                                      &sc->out, COMPRESSION_LEVEL_DEFAULT);
        if (rc)
            return rc;
        section = sc->out.data;
        section_len = sc->out.len;
    }
    if (section_len > batch_max_bytes || BATCH_HEADER_BYTES > batch_max_bytes - section_len) {
        if (why)
            *why = "the converted batch is larger than the maximum batch size";
        return RT_E_RECORD_TOO_LARGE; /* MS9 */
    }
    size_t total = BATCH_HEADER_BYTES + section_len;
    uint8_t *b = malloc(total);
    if (!b)
        return -ENOMEM;
    be64_store(b + BATCH_OFF_BASE_OFFSET, 0);
    be32_store(b + BATCH_OFF_LENGTH, (uint32_t)(total - BATCH_LOG_OVERHEAD_BYTES));
    be32_store(b + BATCH_OFF_LEADER_EPOCH, 0);
    b[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    be16_store(b + BATCH_OFF_ATTRIBUTES, (uint16_t)st.codec);
    be32_store(b + BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(st.count - 1));
    be64_store(b + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)st.base_ts);
    be64_store(b + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)st.max_ts);
    be64_store(b + BATCH_OFF_PRODUCER_ID, UINT64_MAX);    /* -1 */
    be16_store(b + BATCH_OFF_PRODUCER_EPOCH, UINT16_MAX); /* -1 */
    be32_store(b + BATCH_OFF_BASE_SEQUENCE, UINT32_MAX);  /* -1 */
    be32_store(b + BATCH_OFF_RECORD_COUNT, (uint32_t)st.count);
    if (section_len)
        memcpy(b + BATCH_HEADER_BYTES, section, section_len);
    batch_seal_crc(b, total);
    *batch_out = b;
    *batch_len_out = total;
    if (magic_out)
        *magic_out = magic;
    return 0;
}

/* ---- down-conversion ---------------------------------------------------------------------- */

static size_t legacy_size(int8_t magic, int32_t key_len, int32_t value_len)
{
    return MSGSET_LOG_OVERHEAD_BYTES + (magic == 1 ? MSGSET_V1_MIN_BYTES : MSGSET_V0_MIN_BYTES) +
           (key_len > 0 ? (size_t)key_len : 0) + (value_len > 0 ? (size_t)value_len : 0);
}

/* Writes one legacy entry at q (legacy_size bytes); returns its size. */
static size_t legacy_write(uint8_t *q, int8_t magic, int64_t offset, int8_t attributes,
                           int64_t timestamp, const uint8_t *key, int32_t key_len,
                           const uint8_t *value, int32_t value_len)
{
    size_t total = legacy_size(magic, key_len, value_len);
    be64_store(q, (uint64_t)offset);
    be32_store(q + 8, (uint32_t)(total - MSGSET_LOG_OVERHEAD_BYTES));
    uint8_t *m = q + MSGSET_LOG_OVERHEAD_BYTES;
    m[4] = (uint8_t)magic;
    m[5] = (uint8_t)attributes;
    uint8_t *f = m + 6;
    if (magic == 1) {
        be64_store(f, (uint64_t)timestamp);
        f += 8;
    }
    be32_store(f, (uint32_t)key_len);
    f += 4;
    if (key_len > 0) {
        memcpy(f, key, (size_t)key_len);
        f += key_len;
    }
    be32_store(f, (uint32_t)value_len);
    f += 4;
    if (value_len > 0) {
        memcpy(f, value, (size_t)value_len);
        f += value_len;
    }
    assert((size_t)(f - q) == total);
    be32_store(m, (uint32_t)crc32(0L, m + 4, (uInt)(total - MSGSET_LOG_OVERHEAD_BYTES - 4)));
    return total;
}

/* Converts the records [p, end) of batch h into legacy messages appended to sc->build
 * (inner = true: a wrapper's inner set, v1 offsets relative to the first converted record).
 * *first_out / *last_out: the first and last converted offsets; *count_out the messages. */
static int down_records(struct msgset_scratch *sc, const struct batch_header *h, const uint8_t *p,
                        const uint8_t *end, int64_t fetch_offset, int8_t magic, bool inner,
                        int64_t *first_out, int64_t *last_out, uint64_t *count_out,
                        const char **why)
{
    bool log_append = (h->attributes & BATCH_ATTR_LOG_APPEND_TIME) != 0;
    int8_t attrs = magic == 1 && log_append ? MSGSET_ATTR_LOG_APPEND : 0;
    uint64_t n = 0;
    for (int32_t i = 0; i < h->record_count; i++) {
        struct record_view r;
        int k = record_decode(p, end, &r, why);
        if (k < 0)
            return k;
        p += k;
        int64_t offset = h->base_offset + r.offset_delta;
        if (offset < fetch_offset)
            continue;
        int64_t ts = log_append ? h->max_timestamp : h->base_timestamp + r.timestamp_delta;
        if (n == 0)
            *first_out = offset;
        *last_out = offset;
        int64_t written = inner && magic == 1 ? offset - *first_out : offset;
        size_t size = legacy_size(magic, r.key_len, r.value_len);
        int rc = build_reserve(sc, size, RECORDS_DECOMPRESSED_MAX_BYTES);
        if (rc)
            return rc;
        sc->build_len += legacy_write(sc->build + sc->build_len, magic, written, attrs, ts, r.key,
                                      r.key_len, r.value, r.value_len);
        n++;
    }
    *count_out = n;
    return 0;
}

/* msgset_downconvert, also telling how far it went in the input (*consumed_out: through the
 * last batch converted or skipped, MS14) and the first converted batch's size (*first_out). */
static int down_run(struct msgset_scratch *sc, const uint8_t *data, size_t len,
                    int64_t fetch_offset, int8_t magic, uint8_t *out, size_t cap, size_t *bytes_out,
                    size_t *needed_out, uint32_t *batches_out, uint64_t *messages_out,
                    size_t *consumed_out, size_t *first_out, const char **why)
{
    assert(magic == 0 || magic == 1);
    size_t written = 0, consumed = 0, first_bytes = 0;
    uint32_t batches = 0;
    uint64_t messages = 0;
    *needed_out = 0;
    const uint8_t *p = data, *end = data + len;
    int rc = 0;
    while (end - p >= BATCH_HEADER_BYTES) {
        int64_t size = batch_size_at(p, (size_t)(end - p), why);
        if (size < 0)
            break; /* a partial batch at the end of a fetch: not ours to convert */
        struct batch_header h;
        /* MS13: the bytes come from a segment, and a compacted one's batches may miss records
         * (V10c, V13c): the read rules of a cleaned segment, which accept every batch the
         * engine stores and serves. */
        rc = batch_validate_stored(p, (size_t)size, true, &h, why);
        if (rc)
            break;
        const uint8_t *batch = p;
        p += size;
        if (batch_is_control(&h) || batch_last_offset(&h) < fetch_offset) {
            consumed = (size_t)(p - data);
            continue; /* MS10 */
        }
        int codec = h.attributes & BATCH_ATTR_COMPRESSION_MASK;
        if (codec == BATCH_COMPRESSION_ZSTD) {
            if (why)
                *why = "zstd batches cannot be converted to message formats 0 and 1";
            rc = RT_E_UNSUPPORTED_COMPRESSION;
            break;
        }
        const uint8_t *rec = NULL, *rec_end = NULL;
        rc = records_validate_stored(batch, (size_t)size, &h, true, &sc->inner, &rec, &rec_end,
                                     why); /* MS13 */
        if (rc)
            break;
        sc->build_len = 0;
        int64_t first = -1, last = -1;
        uint64_t n = 0;
        rc = down_records(sc, &h, rec, rec_end, fetch_offset, magic,
                          codec != BATCH_COMPRESSION_NONE, &first, &last, &n, why);
        if (rc)
            break;
        if (n == 0) {
            consumed = (size_t)(p - data);
            continue;
        }
        const uint8_t *conv = sc->build;
        size_t conv_len = sc->build_len;
        if (codec != BATCH_COMPRESSION_NONE) { /* MS11: one wrapper */
            rc = compression_compress((enum batch_compression)codec, sc->build, sc->build_len,
                                      &sc->out, COMPRESSION_LEVEL_DEFAULT);
            if (rc)
                break;
            if (sc->out.len > INT32_MAX - MSGSET_V1_MIN_BYTES) {
                rc = RT_E_RECORD_TOO_LARGE;
                break;
            }
            size_t wsize = legacy_size(magic, -1, (int32_t)sc->out.len);
            if (wsize > cap - written) {
                if (written == 0)
                    *needed_out = wsize;
                break;
            }
            size_t hc = codec == BATCH_COMPRESSION_LZ4 && magic == 0
                            ? lz4_hc_at(sc->out.data, sc->out.len)
                            : 0;
            if (hc) /* MS11: Kafka writes magic 0's LZ4 frames with the 0.8-0.9 checksum */
                sc->out.data[hc] = (uint8_t)(xxh32_short(sc->out.data, hc) >> 8);
            bool lat = magic == 1 && (h.attributes & BATCH_ATTR_LOG_APPEND_TIME);
            int8_t wattrs = (int8_t)(codec | (lat ? MSGSET_ATTR_LOG_APPEND : 0));
            written += legacy_write(out + written, magic, last, wattrs, h.max_timestamp, NULL, -1,
                                    sc->out.data, (int32_t)sc->out.len);
            if (first_bytes == 0)
                first_bytes = wsize;
        } else {
            if (conv_len > cap - written) {
                if (written == 0)
                    *needed_out = conv_len;
                break;
            }
            memcpy(out + written, conv, conv_len);
            written += conv_len;
            if (first_bytes == 0)
                first_bytes = conv_len;
        }
        consumed = (size_t)(p - data);
        batches++;
        messages += n;
    }
    *bytes_out = written;
    *batches_out = batches;
    *messages_out = messages;
    *consumed_out = consumed;
    *first_out = first_bytes;
    /* Damage after something was converted ends the answer there, as a fetch ends at damage;
     * the next fetch from there reports it. */
    if (rc && written > 0 && rc != -ENOMEM)
        rc = 0;
    return rc;
}

int msgset_downconvert(struct msgset_scratch *sc, const uint8_t *data, size_t len,
                       int64_t fetch_offset, int8_t magic, uint8_t *out, size_t cap,
                       size_t *bytes_out, size_t *needed_out, uint32_t *batches_out,
                       uint64_t *messages_out, const char **why)
{
    size_t consumed, first;
    return down_run(sc, data, len, fetch_offset, magic, out, cap, bytes_out, needed_out,
                    batches_out, messages_out, &consumed, &first, why);
}

/* ---- the public entry points (ringtail.h) ------------------------------------------------- */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_destroy(void *p)
{
    msgset_scratch_free(p);
    free(p);
}

static void scratch_key_create(void)
{
    (void)pthread_key_create(&scratch_key, scratch_destroy);
}

static struct msgset_scratch *scratch_get(void)
{
    pthread_once(&scratch_once, scratch_key_create);
    struct msgset_scratch *sc = pthread_getspecific(scratch_key);
    if (!sc) {
        sc = calloc(1, sizeof(*sc));
        if (!sc || pthread_setspecific(scratch_key, sc) != 0) {
            free(sc);
            return NULL;
        }
    }
    return sc;
}

/* A scratch that grew past this for one large set is freed after it, so a thread keeps at most
 * this much between conversions. */
#define SCRATCH_KEEP_BYTES ((size_t)4 << 20)

static void scratch_trim(struct msgset_scratch *sc)
{
    if (sc->build_cap > SCRATCH_KEEP_BYTES || sc->inner.cap > SCRATCH_KEEP_BYTES ||
        sc->out.cap > SCRATCH_KEEP_BYTES || sc->fix_cap > SCRATCH_KEEP_BYTES)
        msgset_scratch_free(sc);
}

int rt_message_set_upconvert(const void *set, size_t len, size_t batch_max_bytes, void **batch_out,
                             size_t *batch_len_out, int8_t *magic_out)
{
    error_clear();
    if (!batch_out || !batch_len_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_message_set_upconvert: NULL out");
    *batch_out = NULL;
    *batch_len_out = 0;
    struct msgset_scratch *sc = scratch_get();
    if (!sc)
        return error_set(-ENOMEM, "rt_message_set_upconvert: no memory");
    const char *why = NULL;
    uint8_t *b = NULL;
    int rc = msgset_upconvert(sc, set, len, batch_max_bytes, &b, batch_len_out, magic_out, &why);
    scratch_trim(sc);
    if (rc)
        return error_set(rc, "message set v0/v1: %s", why ? why : rt_strerror(rc));
    *batch_out = b;
    return 0;
}

int rt_message_set_downconvert(const void *batches, size_t len, int64_t fetch_offset, int8_t magic,
                               void *out, size_t cap, struct rt_downconvert_result *result)
{
    error_clear();
    if (!result || (magic != 0 && magic != 1) || (!out && cap > 0) || (!batches && len > 0))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_message_set_downconvert: bad argument");
    memset(result, 0, sizeof(*result));
    struct msgset_scratch *sc = scratch_get();
    if (!sc)
        return error_set(-ENOMEM, "rt_message_set_downconvert: no memory");
    const char *why = NULL;
    int rc = down_run(sc, batches, len, fetch_offset, magic, out, cap, &result->size_bytes,
                      &result->needed_bytes, &result->batches, &result->messages,
                      &result->consumed_bytes, &result->first_bytes, &why);
    scratch_trim(sc);
    if (rc)
        return error_set(rc, "down-conversion to message format %d: %s", magic,
                         why ? why : rt_strerror(rc));
    return 0;
}
