/*
 * compression.c — Kafka's codecs for the records section of a RecordBatch v2 (docs/format.md §F),
 * through the system libraries: zlib, snappy (C API), liblz4 (frame API), libzstd.
 *
 * This module turns the compressed bytes after a batch's 61-byte header into the plain records
 * section and back. It owns the caller's output buffer and each codec's context; it never sees
 * a batch header, never trusts a length found in its input, and never produces more than the
 * caller's bound: every loop grows the output geometrically up to max_bytes + 1 and stops there.
 *
 *   codec   on disk (Kafka's Java producer)                         read also
 *   1 gzip  RFC 1952 member(s): 1f 8b 08 ... deflate ... CRC-32 ISIZE concatenated members
 *   2 snappy xerial snappy-java stream:                              a raw snappy block
 *           +0 magic 82 53 4e 41 50 50 59 00 ("\x82SNAPPY\0")        (librdkafka, sarama)
 *           +8 version i32 BE (1)  +12 compatible i32 BE (1)
 *           +16 blocks: length i32 BE (> 0), raw snappy block of at most 32 KiB input;
 *           a new 16-byte header may start where a length is expected (concatenated streams)
 *   3 lz4   one LZ4 frame: magic 04 22 4d 18, FLG 0x60 (version 1, independent blocks, no
 *           block or content checksum, no content size), BD 0x40 (64 KiB blocks), HC byte =
 *           (xxh32(FLG BD) >> 8) & 0xff, blocks [u32 LE size | 0x80000000 if stored], end mark 0
 *   4 zstd  one standard zstd frame (magic 28 b5 2f fd)                several frames, skippable
 *
 * Rules of the read side (what RT_E_CORRUPT means here):
 *   F1. Empty input is corrupt for every codec (no valid stream is empty).
 *   F2. gzip: every member passes zlib's checks (header, deflate data, CRC-32, ISIZE); after a
 *       member only another member (1f 8b) may follow. Java's GZIPInputStream ignores trailing
 *       garbage; ringtail rejects it.
 *   F3. snappy: input that starts with the 8-byte xerial magic and holds the 16-byte header is
 *       xerial-framed (a raw snappy stream cannot start with those bytes: its first element
 *       would be a copy with nothing to copy from). Version and compatible fields are not
 *       checked (librdkafka does not either). Each block length is in (0, bytes left]; each
 *       block is a complete raw snappy stream. Anything else is one raw snappy stream.
 *   F4. lz4: one frame, decoded by LZ4F_decompress (which checks the header checksum and any
 *       block or content checksum); the input ends exactly at the frame's end.
 *   F5. zstd: whole frames only (ZSTD_decompressDCtx), checksums verified when present.
 *   F6. Output beyond max_bytes is RT_E_RECORD_TOO_LARGE, detected with at most max_bytes + 1
 *       bytes held (snappy and zstd often before decoding, from declared sizes).
 *
 * Memory: output up to max_bytes + 1; zlib's inflate state (~7 KiB + 32 KiB window); an LZ4
 * decompression context (up to 4 MiB + 128 KiB for frames declaring 4 MiB blocks); a zstd
 * DCtx (~160 KiB) — zstd decodes single-shot into the output, so a frame's declared window never
 * makes it allocate. All of it lives in the buffer and is reused until compression_buffer_free.
 */
#include "compression.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "index/byte_order.h"
#include "ringtail.h"

#define XERIAL_HEADER_BYTES 16
#define XERIAL_BLOCK_BYTES  (32 * 1024) /* snappy-java SnappyOutputStream.DEFAULT_BLOCK_SIZE */
#define XERIAL_VERSION      1           /* SnappyCodec.DEFAULT_VERSION */
#define XERIAL_COMPATIBLE   1           /* SnappyCodec.MINIMUM_COMPATIBLE_VERSION */
static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

#define GZIP_WINDOW_BITS (16 + MAX_WBITS) /* 16+: gzip wrapper only, as RFC 1952 requires */
#define INITIAL_CAP      256

_Static_assert(XERIAL_HEADER_BYTES == sizeof(xerial_magic) + 4 + 4, "xerial header is 16 bytes");

struct compression_contexts {
    z_stream inflate;
    bool inflate_ready;
    z_stream deflate;
    bool deflate_ready;
    int deflate_level;
    LZ4F_dctx *lz4_d;
    LZ4F_cctx *lz4_c;
    ZSTD_DCtx *zstd_d;
    ZSTD_CCtx *zstd_c;
};

static int contexts_get(struct compression_buffer *b, struct compression_contexts **out)
{
    if (b->contexts == NULL) {
        b->contexts = calloc(1, sizeof(*b->contexts));
        if (b->contexts == NULL)
            return -ENOMEM;
    }
    *out = b->contexts;
    return 0;
}

/* Makes cap >= need, growing geometrically but never past limit (need <= limit). */
static int reserve(struct compression_buffer *b, size_t need, size_t limit)
{
    assert(need <= limit);
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap > INITIAL_CAP ? b->cap : INITIAL_CAP;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
    if (cap > limit)
        cap = limit;
    uint8_t *p = realloc(b->data, cap);
    if (p == NULL)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

/* Doubles the room for streaming decoders; fails once the output holds `limit` bytes. */
static int grow_for_more(struct compression_buffer *b, size_t limit)
{
    if (b->cap >= limit)
        return RT_E_RECORD_TOO_LARGE;
    size_t want = b->cap < INITIAL_CAP ? INITIAL_CAP : b->cap;
    want = want > SIZE_MAX / 2 ? SIZE_MAX : want * 2;
    return reserve(b, want < limit ? want : limit, limit);
}

static int corrupt(const char **why, const char *reason)
{
    if (why != NULL)
        *why = reason;
    return RT_E_CORRUPT;
}

static int too_large(const char **why)
{
    if (why != NULL)
        *why = "decompressed size exceeds the bound";
    return RT_E_RECORD_TOO_LARGE;
}

/* ---- gzip ---- */

static int gzip_decompress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                           struct compression_buffer *out, size_t max_bytes, size_t limit,
                           const char **why)
{
    z_stream *z = &cx->inflate;
    if (!cx->inflate_ready) {
        memset(z, 0, sizeof(*z));
        int rc = inflateInit2(z, GZIP_WINDOW_BITS);
        if (rc != Z_OK)
            return rc == Z_MEM_ERROR ? -ENOMEM : corrupt(why, "gzip: inflateInit2 failed");
        cx->inflate_ready = true;
    } else if (inflateReset(z) != Z_OK) {
        return corrupt(why, "gzip: inflateReset failed");
    }
    const uint8_t *in = src;
    size_t in_left = len; /* not yet handed to zlib */
    z->avail_in = 0;
    for (;;) {
        if (z->avail_in == 0 && in_left > 0) {
            uInt n = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            z->next_in = (Bytef *)(uintptr_t)in;
            z->avail_in = n;
            in += n;
            in_left -= n;
        }
        if (out->len == out->cap) {
            int rc = grow_for_more(out, limit);
            if (rc)
                return rc == RT_E_RECORD_TOO_LARGE ? too_large(why) : rc;
        }
        size_t room = out->cap - out->len;
        z->next_out = out->data + out->len;
        z->avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = z->avail_out;
        int rc = inflate(z, Z_NO_FLUSH);
        out->len += before - z->avail_out;
        if (out->len > max_bytes)
            return too_large(why);
        if (rc == Z_STREAM_END) {
            size_t rest = z->avail_in + in_left;
            if (rest == 0)
                return 0;
            /* F2: only another member may follow. Its first two bytes may straddle the
             * UINT_MAX hand-over only for inputs above 4 GiB, which batches never are. */
            if (z->avail_in >= 2 && z->next_in[0] == 0x1f && z->next_in[1] == 0x8b) {
                if (inflateReset(z) != Z_OK)
                    return corrupt(why, "gzip: inflateReset failed");
                continue;
            }
            return corrupt(why, "gzip: trailing bytes after the last member");
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR) {
            if (z->avail_in == 0 && in_left == 0)
                return corrupt(why, "gzip: truncated stream");
            continue; /* the output was full: grow */
        }
        if (rc == Z_MEM_ERROR)
            return -ENOMEM;
        return corrupt(why, rc == Z_NEED_DICT ? "gzip: preset dictionary required"
                                              : "gzip: invalid header, data or checksum");
    }
}

static int gzip_compress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                         struct compression_buffer *out, int level)
{
    int zlevel = level == COMPRESSION_LEVEL_DEFAULT ? Z_DEFAULT_COMPRESSION : level;
    z_stream *z = &cx->deflate;
    if (cx->deflate_ready && cx->deflate_level != zlevel) {
        deflateEnd(z);
        cx->deflate_ready = false;
    }
    if (!cx->deflate_ready) {
        memset(z, 0, sizeof(*z));
        int rc = deflateInit2(z, zlevel, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY);
        if (rc != Z_OK)
            return rc == Z_MEM_ERROR ? -ENOMEM : RT_E_INVALID_ARGUMENT;
        cx->deflate_ready = true;
        cx->deflate_level = zlevel;
    } else if (deflateReset(z) != Z_OK) {
        return -EINVAL;
    }
    size_t bound = deflateBound(z, (uLong)len);
    int rc = reserve(out, bound, SIZE_MAX);
    if (rc)
        return rc;
    z->next_in = (Bytef *)(uintptr_t)src;
    z->avail_in = (uInt)len;
    z->next_out = out->data;
    z->avail_out = (uInt)(out->cap > UINT_MAX ? UINT_MAX : out->cap);
    rc = deflate(z, Z_FINISH);
    /* deflateBound guarantees one Z_FINISH call completes. */
    assert(rc == Z_STREAM_END);
    if (rc != Z_STREAM_END)
        return -EIO;
    out->len = z->total_out;
    return 0;
}

/* ---- snappy ---- */

/* Appends one raw snappy stream's output; the declared length is checked before any write. */
static int snappy_block(const uint8_t *blk, size_t blen, struct compression_buffer *out,
                        size_t max_bytes, size_t limit, const char **why)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)blk, blen, &n) != SNAPPY_OK)
        return corrupt(why, "snappy: bad uncompressed length");
    if (n > max_bytes - out->len)
        return too_large(why);
    int rc = reserve(out, out->len + n, limit);
    if (rc)
        return rc;
    size_t got = n;
    if (snappy_uncompress((const char *)blk, blen, (char *)out->data + out->len, &got) !=
            SNAPPY_OK ||
        got != n)
        return corrupt(why, "snappy: invalid compressed data");
    out->len += n;
    return 0;
}

static int snappy_decompress(const uint8_t *src, size_t len, struct compression_buffer *out,
                             size_t max_bytes, size_t limit, const char **why)
{
    if (len < XERIAL_HEADER_BYTES || memcmp(src, xerial_magic, sizeof(xerial_magic)) != 0)
        return snappy_block(src, len, out, max_bytes, limit, why);
    const uint8_t *p = src + XERIAL_HEADER_BYTES, *end = src + len;
    while (p < end) {
        if ((size_t)(end - p) < 4)
            return corrupt(why, "snappy: truncated xerial block length");
        /* A concatenated xerial stream: its header starts where a length would (the length
         * would be negative, so there is no ambiguity). */
        if ((size_t)(end - p) >= XERIAL_HEADER_BYTES &&
            memcmp(p, xerial_magic, sizeof(xerial_magic)) == 0) {
            p += XERIAL_HEADER_BYTES;
            continue;
        }
        uint32_t blen = be32_load(p);
        p += 4;
        if (blen == 0 || blen > (uint64_t)(end - p))
            return corrupt(why, "snappy: xerial block length out of range");
        int rc = snappy_block(p, blen, out, max_bytes, limit, why);
        if (rc)
            return rc;
        p += blen;
    }
    return 0;
}

static int snappy_xerial_compress(const uint8_t *src, size_t len, struct compression_buffer *out)
{
    size_t blocks = (len + XERIAL_BLOCK_BYTES - 1) / XERIAL_BLOCK_BYTES;
    size_t bound =
        XERIAL_HEADER_BYTES + blocks * (4 + snappy_max_compressed_length(XERIAL_BLOCK_BYTES));
    int rc = reserve(out, bound, SIZE_MAX);
    if (rc)
        return rc;
    uint8_t *o = out->data;
    memcpy(o, xerial_magic, sizeof(xerial_magic));
    be32_store(o + 8, XERIAL_VERSION);
    be32_store(o + 12, XERIAL_COMPATIBLE);
    size_t pos = XERIAL_HEADER_BYTES;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < XERIAL_BLOCK_BYTES ? len - done : XERIAL_BLOCK_BYTES;
        size_t clen = out->cap - pos - 4;
        if (snappy_compress((const char *)src + done, n, (char *)o + pos + 4, &clen) != SNAPPY_OK)
            return -ENOMEM; /* only "buffer too small", which the bound rules out */
        assert(clen > 0 && clen <= INT32_MAX);
        be32_store(o + pos, (uint32_t)clen);
        pos += 4 + clen;
        done += n;
    }
    assert(pos <= out->cap);
    out->len = pos;
    return 0;
}

/* ---- lz4 ---- */

static int lz4_decompress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                          struct compression_buffer *out, size_t max_bytes, size_t limit,
                          const char **why)
{
    if (cx->lz4_d == NULL) {
        if (LZ4F_isError(LZ4F_createDecompressionContext(&cx->lz4_d, LZ4F_VERSION)))
            return -ENOMEM;
    } else {
        LZ4F_resetDecompressionContext(cx->lz4_d); /* also clears a previous call's error */
    }
    size_t pos = 0;
    for (;;) {
        if (out->len == out->cap) {
            int rc = grow_for_more(out, limit);
            if (rc)
                return rc == RT_E_RECORD_TOO_LARGE ? too_large(why) : rc;
        }
        size_t room = out->cap - out->len, dst_n = room, src_n = len - pos;
        size_t hint =
            LZ4F_decompress(cx->lz4_d, out->data + out->len, &dst_n, src + pos, &src_n, NULL);
        if (LZ4F_isError(hint))
            return corrupt(why, "lz4: invalid frame, block or checksum");
        pos += src_n;
        out->len += dst_n;
        if (out->len > max_bytes)
            return too_large(why);
        if (hint == 0) /* F4: the frame is complete */
            return pos == len ? 0 : corrupt(why, "lz4: trailing bytes after the frame");
        if (dst_n == 0 && src_n == 0 && room > 0)
            return corrupt(why, "lz4: truncated frame");
    }
}

static int lz4_compress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                        struct compression_buffer *out, int level)
{
    if (cx->lz4_c == NULL && LZ4F_isError(LZ4F_createCompressionContext(&cx->lz4_c, LZ4F_VERSION)))
        return -ENOMEM;
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof(prefs));
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;        /* BD 0x40, Kafka's BLOCKSIZE_64KB */
    prefs.frameInfo.blockMode = LZ4F_blockIndependent; /* Kafka's FLG requires independence */
    prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
    prefs.frameInfo.frameType = LZ4F_frame;
    prefs.compressionLevel = level; /* 0: fast (Kafka's default uses the fast compressor) */
    size_t bound = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(len, &prefs);
    int rc = reserve(out, bound, SIZE_MAX);
    if (rc)
        return rc;
    size_t pos = LZ4F_compressBegin(cx->lz4_c, out->data, out->cap, &prefs);
    if (LZ4F_isError(pos))
        return -ENOMEM;
    size_t n = LZ4F_compressUpdate(cx->lz4_c, out->data + pos, out->cap - pos, src, len, NULL);
    if (LZ4F_isError(n))
        return -ENOMEM;
    pos += n;
    n = LZ4F_compressEnd(cx->lz4_c, out->data + pos, out->cap - pos, NULL);
    if (LZ4F_isError(n))
        return -ENOMEM;
    out->len = pos + n;
    return 0;
}

/* ---- zstd ---- */

static const char *zstd_reason(size_t err)
{
    switch (ZSTD_getErrorCode(err)) {
    case ZSTD_error_prefix_unknown:
        return "zstd: unknown frame magic or trailing bytes";
    case ZSTD_error_srcSize_wrong:
        return "zstd: truncated frame or trailing bytes";
    case ZSTD_error_checksum_wrong:
        return "zstd: checksum mismatch";
    case ZSTD_error_dictionary_wrong:
        return "zstd: frame needs a dictionary";
    case ZSTD_error_frameParameter_unsupported:
    case ZSTD_error_frameParameter_windowTooLarge:
        return "zstd: unsupported frame parameters";
    default:
        return "zstd: corrupt frame";
    }
}

static int zstd_decompress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                           struct compression_buffer *out, size_t max_bytes, size_t limit,
                           const char **why)
{
    if (cx->zstd_d == NULL && (cx->zstd_d = ZSTD_createDCtx()) == NULL)
        return -ENOMEM;
    size_t want = len <= (SIZE_MAX - INITIAL_CAP) / 4 ? 4 * len + INITIAL_CAP : SIZE_MAX;
    unsigned long long declared = ZSTD_getFrameContentSize(src, len);
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR) {
        if (declared > max_bytes)
            return too_large(why); /* F6, before decoding anything */
        want = declared > 0 ? (size_t)declared : 1;
    }
    int rc = reserve(out, want < limit ? want : limit, limit);
    if (rc)
        return rc;
    for (;;) {
        /* Single-shot: the output is the window, so a frame's declared window size costs no
         * memory. A too-small output is retried from the start with twice the room. */
        size_t n = ZSTD_decompressDCtx(cx->zstd_d, out->data, out->cap, src, len);
        if (!ZSTD_isError(n)) {
            if (n > max_bytes)
                return too_large(why);
            out->len = n;
            return 0;
        }
        if (ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
            return -ENOMEM;
        if (ZSTD_getErrorCode(n) != ZSTD_error_dstSize_tooSmall)
            return corrupt(why, zstd_reason(n));
        rc = grow_for_more(out, limit);
        if (rc)
            return rc == RT_E_RECORD_TOO_LARGE ? too_large(why) : rc;
    }
}

static int zstd_compress(struct compression_contexts *cx, const uint8_t *src, size_t len,
                         struct compression_buffer *out, int level)
{
    if (cx->zstd_c == NULL && (cx->zstd_c = ZSTD_createCCtx()) == NULL)
        return -ENOMEM;
    ZSTD_CCtx_reset(cx->zstd_c, ZSTD_reset_session_and_parameters);
    int zlevel = level == COMPRESSION_LEVEL_DEFAULT ? 3 : level; /* Kafka's default: 3 */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cx->zstd_c, ZSTD_c_compressionLevel, zlevel)))
        return RT_E_INVALID_ARGUMENT;
    int rc = reserve(out, ZSTD_compressBound(len), SIZE_MAX);
    if (rc)
        return rc;
    size_t n = ZSTD_compress2(cx->zstd_c, out->data, out->cap, src, len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
    out->len = n;
    return 0;
}

/* ---- public ---- */

int compression_decompress(enum batch_compression codec, const uint8_t *src, size_t len,
                           struct compression_buffer *out, size_t max_bytes, const char **why)
{
    assert(out != NULL);
    assert(src != NULL || len == 0);
    if (why != NULL)
        *why = NULL;
    out->len = 0;
    if ((unsigned)codec > BATCH_COMPRESSION_ZSTD) {
        if (why != NULL)
            *why = "unknown compression codec";
        return RT_E_UNSUPPORTED_COMPRESSION;
    }
    size_t limit = max_bytes == SIZE_MAX ? SIZE_MAX : max_bytes + 1;
    int rc;
    if (codec == BATCH_COMPRESSION_NONE) {
        if (len > max_bytes)
            return too_large(why);
        rc = reserve(out, len, limit);
        if (rc == 0 && len > 0) {
            memcpy(out->data, src, len);
            out->len = len;
        }
        return rc;
    }
    if (len == 0)
        return corrupt(why, "empty compressed records section"); /* F1 */
    struct compression_contexts *cx;
    rc = contexts_get(out, &cx);
    if (rc)
        return rc;
    switch (codec) {
    case BATCH_COMPRESSION_GZIP:
        rc = gzip_decompress(cx, src, len, out, max_bytes, limit, why);
        break;
    case BATCH_COMPRESSION_SNAPPY:
        rc = snappy_decompress(src, len, out, max_bytes, limit, why);
        break;
    case BATCH_COMPRESSION_LZ4:
        rc = lz4_decompress(cx, src, len, out, max_bytes, limit, why);
        break;
    case BATCH_COMPRESSION_ZSTD:
        rc = zstd_decompress(cx, src, len, out, max_bytes, limit, why);
        break;
    default:
        assert(0 && "checked above");
        rc = RT_E_UNSUPPORTED_COMPRESSION;
    }
    if (rc)
        out->len = 0;
    assert(out->len <= max_bytes);
    return rc;
}

static bool level_valid(enum batch_compression codec, int level)
{
    if (level == COMPRESSION_LEVEL_DEFAULT)
        return true;
    switch (codec) {
    case BATCH_COMPRESSION_GZIP:
        return level >= 1 && level <= 9; /* Kafka's GzipCompression.MIN/MAX_LEVEL */
    case BATCH_COMPRESSION_LZ4:
        return level >= 1 && level <= 17; /* Lz4Compression.MIN/MAX_LEVEL */
    case BATCH_COMPRESSION_ZSTD:
        return level >= ZSTD_minCLevel() && level <= 22; /* ZstdCompression.MIN/MAX_LEVEL */
    default:
        return true; /* none and snappy have no level */
    }
}

int compression_compress(enum batch_compression codec, const uint8_t *src, size_t len,
                         struct compression_buffer *out, int level)
{
    assert(out != NULL);
    assert(src != NULL || len == 0);
    out->len = 0;
    if ((unsigned)codec > BATCH_COMPRESSION_ZSTD)
        return RT_E_UNSUPPORTED_COMPRESSION;
    if (!level_valid(codec, level))
        return RT_E_INVALID_ARGUMENT;
    if (len > (size_t)INT32_MAX)
        return RT_E_RECORD_TOO_LARGE;
    int rc;
    if (codec == BATCH_COMPRESSION_NONE) {
        rc = reserve(out, len > 0 ? len : 1, SIZE_MAX);
        if (rc == 0 && len > 0) {
            memcpy(out->data, src, len);
            out->len = len;
        }
        return rc;
    }
    static const uint8_t nothing[1];
    if (src == NULL)
        src = nothing; /* len == 0: the libraries want a valid pointer */
    struct compression_contexts *cx;
    rc = contexts_get(out, &cx);
    if (rc)
        return rc;
    switch (codec) {
    case BATCH_COMPRESSION_GZIP:
        rc = gzip_compress(cx, src, len, out, level);
        break;
    case BATCH_COMPRESSION_SNAPPY:
        rc = snappy_xerial_compress(src, len, out);
        break;
    case BATCH_COMPRESSION_LZ4:
        rc = lz4_compress(cx, src, len, out, level);
        break;
    case BATCH_COMPRESSION_ZSTD:
        rc = zstd_compress(cx, src, len, out, level);
        break;
    default:
        assert(0 && "checked above");
        rc = RT_E_UNSUPPORTED_COMPRESSION;
    }
    if (rc)
        out->len = 0;
    return rc;
}

void compression_buffer_free(struct compression_buffer *buf)
{
    if (buf == NULL)
        return;
    struct compression_contexts *cx = buf->contexts;
    if (cx != NULL) {
        if (cx->inflate_ready)
            inflateEnd(&cx->inflate);
        if (cx->deflate_ready)
            deflateEnd(&cx->deflate);
        LZ4F_freeDecompressionContext(cx->lz4_d);
        LZ4F_freeCompressionContext(cx->lz4_c);
        ZSTD_freeDCtx(cx->zstd_d);
        ZSTD_freeCCtx(cx->zstd_c);
        free(cx);
    }
    free(buf->data);
    memset(buf, 0, sizeof(*buf));
}
