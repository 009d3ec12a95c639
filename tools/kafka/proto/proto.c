/*
 * proto.c — Kafka wire primitives (see proto.h). This file owns the byte-level reading and
 * writing of every Kafka message: fixed-width big-endian integers, zigzag varints, unsigned
 * varints, classic and compact strings/bytes/arrays, tagged-field sections, UUIDs. It must never
 * read past the end of a buffer, never trust a length from the wire, never allocate while
 * reading, and never assert on input.
 *
 * Wire forms (Kafka protocol guide, "Protocol Primitive Types"):
 *
 *   | type                    | encoding                                              |
 *   | ----------------------- | ----------------------------------------------------- |
 *   | INT8/16/32/64, UINT32   | big-endian two's complement                           |
 *   | VARINT / VARLONG        | zigzag, 7 bits a byte, low group first, MSB = more    |
 *   | UNSIGNED_VARINT         | as VARINT without zigzag                              |
 *   | STRING                  | INT16 n >= 0, n bytes UTF-8                           |
 *   | NULLABLE_STRING         | INT16 n, -1 = null                                    |
 *   | COMPACT_(NULLABLE_)STR  | UNSIGNED_VARINT n+1 (0 = null), n bytes               |
 *   | BYTES / NULLABLE_BYTES  | INT32 n (-1 = null for nullable), n bytes             |
 *   | COMPACT_(NULLABLE_)BYTES| UNSIGNED_VARINT n+1 (0 = null), n bytes               |
 *   | ARRAY                   | INT32 n (-1 = null where nullable), n elements        |
 *   | COMPACT_ARRAY           | UNSIGNED_VARINT n+1 (0 = null), n elements            |
 *   | TAGGED_FIELDS           | UNSIGNED_VARINT count, each: UVARINT tag, UVARINT size|
 *   |                         | and size bytes                                        |
 *   | UUID                    | 16 bytes                                              |
 *
 * Invariants:
 *   KP1  No read goes past `end`: every primitive checks the bytes left before it touches them.
 *   KP2  The reader's error is sticky: the first failure is kept, and every later read returns a
 *        zero value (null string, count 0) without moving, so decoders check once at the end.
 *   KP3  No length is trusted: a string/bytes length is checked against the bytes left before a
 *        pointer is formed; a negative length is corrupt unless it is exactly -1 (compact: 0)
 *        in a nullable form. A string length over 32767 cannot be written (i16).
 *   KP4  An array count is refused when count × the element's least wire size exceeds the bytes
 *        left — before anything is reserved, so a lying count costs nothing.
 *   KP5  Varints are bounded: at most 5 bytes (int32/uint32) or 10 (int64), and the last byte may
 *        carry no bits beyond the type's width; anything longer is corrupt, never wrapped.
 *   KP6  Decoding never allocates: arrays live in the caller's arena (8-byte aligned, zeroed);
 *        an arena that cannot hold them is KP_E_LIMIT and the request is refused.
 *   KP7  The writer grows geometrically up to len_max; a failed growth is a sticky -ENOMEM and
 *        nothing is written after it. Written bytes never move relative to each other.
 *   KP8  Holes are recorded in writing order (non-decreasing `at`), and holes_bytes is their
 *        sum, so a frame's size is writer bytes + holes_bytes.
 *   KP9  Tagged fields are skipped whole by their declared sizes (kdesc.c decodes the ones a
 *        message describes and writes those not at their default).
 */
#include "tools/kafka/proto/proto.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KP_WRITER_LEN_MAX_DEFAULT ((size_t)1 << 30)

int kp_fail(struct kp_reader *r, int err)
{
    assert(err < 0);
    if (r->err == 0)
        r->err = err;
    return r->err;
}

/* Returns a pointer to the next n bytes and advances, or NULL (error set). KP1, KP2. */
static const uint8_t *take(struct kp_reader *r, size_t n)
{
    if (r->err)
        return NULL;
    if (kp_remaining(r) < n) {
        kp_fail(r, RT_E_CORRUPT);
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

int8_t kp_read_i8(struct kp_reader *r)
{
    const uint8_t *p = take(r, 1);
    return p ? (int8_t)p[0] : 0;
}

bool kp_read_bool(struct kp_reader *r)
{
    return kp_read_i8(r) != 0;
}

int16_t kp_read_i16(struct kp_reader *r)
{
    const uint8_t *p = take(r, 2);
    return p ? (int16_t)(uint16_t)((uint16_t)p[0] << 8 | p[1]) : 0;
}

uint32_t kp_read_u32(struct kp_reader *r)
{
    const uint8_t *p = take(r, 4);
    if (!p)
        return 0;
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int32_t kp_read_i32(struct kp_reader *r)
{
    return (int32_t)kp_read_u32(r);
}

int64_t kp_read_i64(struct kp_reader *r)
{
    const uint8_t *p = take(r, 8);
    if (!p)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

/* Unsigned base-128 of at most `max_bytes`; the last byte may hold only `last_bits`. KP5. */
static uint64_t read_uvar(struct kp_reader *r, int max_bytes, int last_bits)
{
    if (r->err)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (r->p >= r->end) {
            kp_fail(r, RT_E_CORRUPT);
            return 0;
        }
        uint8_t b = *r->p++;
        if (i == max_bytes - 1 && (b >> last_bits) != 0) {
            kp_fail(r, RT_E_CORRUPT); /* overlong, or bits past the type's width */
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            return v;
    }
    assert(0 && "read_uvar: the last byte check ends the loop");
    return 0;
}

uint32_t kp_read_uvarint(struct kp_reader *r)
{
    return (uint32_t)read_uvar(r, 5, 4);
}

int32_t kp_read_varint(struct kp_reader *r)
{
    uint32_t u = (uint32_t)read_uvar(r, 5, 4);
    return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t kp_read_varlong(struct kp_reader *r)
{
    uint64_t u = read_uvar(r, 10, 1);
    return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

void kp_read_uuid(struct kp_reader *r, uint8_t out[16])
{
    const uint8_t *p = take(r, 16);
    if (p)
        memcpy(out, p, 16);
    else
        memset(out, 0, 16);
}

void kp_skip(struct kp_reader *r, size_t n)
{
    (void)take(r, n);
}

static const struct kp_str null_str = {NULL, -1};
static const struct kp_str empty_str = {"", 0};

/* A string of `n` bytes (n >= -1) at the reader; -1 only when `nullable`. KP3. */
static struct kp_str str_of_len(struct kp_reader *r, int64_t n, bool nullable)
{
    if (r->err)
        return nullable ? null_str : empty_str;
    if (n == -1 && nullable)
        return null_str;
    if (n < 0) {
        kp_fail(r, RT_E_CORRUPT);
        return nullable ? null_str : empty_str;
    }
    const uint8_t *p = take(r, (size_t)n);
    if (!p)
        return nullable ? null_str : empty_str;
    struct kp_str s = {(const char *)p, (int32_t)n};
    return s;
}

struct kp_str kp_read_string(struct kp_reader *r)
{
    int16_t n = kp_read_i16(r);
    return str_of_len(r, n, false);
}

struct kp_str kp_read_nullable_string(struct kp_reader *r)
{
    int16_t n = kp_read_i16(r);
    return str_of_len(r, n, true);
}

struct kp_str kp_read_compact_string(struct kp_reader *r)
{
    uint32_t n = kp_read_uvarint(r);
    return str_of_len(r, (int64_t)n - 1, false);
}

struct kp_str kp_read_compact_nullable_string(struct kp_reader *r)
{
    uint32_t n = kp_read_uvarint(r);
    return str_of_len(r, (int64_t)n - 1, true);
}

struct kp_str kp_read_str(struct kp_reader *r, bool flexible)
{
    return flexible ? kp_read_compact_string(r) : kp_read_string(r);
}

struct kp_str kp_read_nstr(struct kp_reader *r, bool flexible)
{
    return flexible ? kp_read_compact_nullable_string(r) : kp_read_nullable_string(r);
}

static struct kp_bytes bytes_of(struct kp_str s)
{
    struct kp_bytes b = {(const uint8_t *)s.ptr, s.len};
    return b;
}

struct kp_bytes kp_read_bytes(struct kp_reader *r)
{
    int32_t n = kp_read_i32(r);
    return bytes_of(str_of_len(r, n, false));
}

struct kp_bytes kp_read_nullable_bytes(struct kp_reader *r)
{
    int32_t n = kp_read_i32(r);
    return bytes_of(str_of_len(r, n, true));
}

struct kp_bytes kp_read_compact_bytes(struct kp_reader *r)
{
    uint32_t n = kp_read_uvarint(r);
    return bytes_of(str_of_len(r, (int64_t)n - 1, false));
}

struct kp_bytes kp_read_compact_nullable_bytes(struct kp_reader *r)
{
    uint32_t n = kp_read_uvarint(r);
    return bytes_of(str_of_len(r, (int64_t)n - 1, true));
}

struct kp_bytes kp_read_nbytes(struct kp_reader *r, bool flexible)
{
    return flexible ? kp_read_compact_nullable_bytes(r) : kp_read_nullable_bytes(r);
}

/* An array count n (n >= -1), checked against the bytes left. KP4. */
static int32_t count_of(struct kp_reader *r, int64_t n, bool nullable, size_t elem_min_bytes)
{
    assert(elem_min_bytes >= 1);
    if (r->err)
        return 0;
    if (n == -1 && nullable)
        return -1;
    if (n < 0 || n > INT32_MAX) {
        kp_fail(r, RT_E_CORRUPT);
        return 0;
    }
    if ((uint64_t)n > kp_remaining(r) / elem_min_bytes) {
        kp_fail(r, RT_E_CORRUPT);
        return 0;
    }
    return (int32_t)n;
}

int32_t kp_read_array_len(struct kp_reader *r, size_t elem_min_bytes)
{
    int32_t n = kp_read_i32(r);
    return count_of(r, n, false, elem_min_bytes);
}

int32_t kp_read_nullable_array_len(struct kp_reader *r, size_t elem_min_bytes)
{
    int32_t n = kp_read_i32(r);
    return count_of(r, n, true, elem_min_bytes);
}

int32_t kp_read_compact_array_len(struct kp_reader *r, size_t elem_min_bytes)
{
    uint32_t n = kp_read_uvarint(r);
    return count_of(r, (int64_t)n - 1, false, elem_min_bytes);
}

int32_t kp_read_compact_nullable_array_len(struct kp_reader *r, size_t elem_min_bytes)
{
    uint32_t n = kp_read_uvarint(r);
    return count_of(r, (int64_t)n - 1, true, elem_min_bytes);
}

int32_t kp_read_alen(struct kp_reader *r, bool flexible, size_t elem_min_bytes)
{
    return flexible ? kp_read_compact_array_len(r, elem_min_bytes)
                    : kp_read_array_len(r, elem_min_bytes);
}

int32_t kp_read_nalen(struct kp_reader *r, bool flexible, size_t elem_min_bytes)
{
    return flexible ? kp_read_compact_nullable_array_len(r, elem_min_bytes)
                    : kp_read_nullable_array_len(r, elem_min_bytes);
}

int32_t kp_read_tag_count(struct kp_reader *r)
{
    /* Each field takes at least two bytes (tag, size). KP4, KP9. */
    uint32_t n = kp_read_uvarint(r);
    return count_of(r, n, false, 2);
}

void kp_skip_tags(struct kp_reader *r)
{
    int32_t count = kp_read_tag_count(r);
    for (int32_t i = 0; i < count && !r->err; i++) {
        (void)kp_read_uvarint(r); /* tag */
        uint32_t size = kp_read_uvarint(r);
        kp_skip(r, size);
    }
}

void kp_expect_end(struct kp_reader *r)
{
    if (!r->err && r->p != r->end)
        kp_fail(r, RT_E_CORRUPT);
}

void *kp_arena_array(struct kp_reader *r, struct kp_arena *a, int32_t count, size_t elem_size)
{
    if (r->err || count <= 0)
        return NULL;
    assert(elem_size > 0);
    assert(a->used_bytes <= a->size_bytes);
    size_t start = (a->used_bytes + 7) & ~(size_t)7;
    if ((size_t)count > (SIZE_MAX - 8) / elem_size || start > a->size_bytes ||
        (size_t)count * elem_size > a->size_bytes - start) {
        kp_fail(r, KP_E_LIMIT);
        return NULL;
    }
    void *p = a->base + start;
    a->used_bytes = start + (size_t)count * elem_size;
    memset(p, 0, (size_t)count * elem_size);
    return p;
}

/* ---- writer ---- */

void kp_writer_init(struct kp_writer *w, struct kp_hole *holes, size_t holes_max)
{
    memset(w, 0, sizeof *w);
    w->holes = holes;
    w->holes_max = holes_max;
}

void kp_writer_reset(struct kp_writer *w, struct kp_hole *holes, size_t holes_max)
{
    w->len = 0;
    w->err = 0;
    w->holes = holes;
    w->holes_max = holes_max;
    w->holes_count = 0;
    w->holes_bytes = 0;
}

void kp_writer_free(struct kp_writer *w)
{
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

uint8_t *kp_writer_reserve(struct kp_writer *w, size_t n)
{
    if (w->err)
        return NULL;
    size_t max = w->len_max ? w->len_max : KP_WRITER_LEN_MAX_DEFAULT;
    if (n > max - w->len) {
        w->err = -ENOMEM;
        return NULL;
    }
    if (w->cap - w->len < n) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->len < n)
            cap = cap > max / 2 ? max : cap * 2;
        uint8_t *nb = realloc(w->buf, cap);
        if (!nb) {
            w->err = -ENOMEM;
            return NULL;
        }
        w->buf = nb;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

void kp_write_raw(struct kp_writer *w, const void *p, size_t n)
{
    uint8_t *d = kp_writer_reserve(w, n);
    if (d && n)
        memcpy(d, p, n);
}

void kp_write_i8(struct kp_writer *w, int8_t v)
{
    uint8_t *d = kp_writer_reserve(w, 1);
    if (d)
        d[0] = (uint8_t)v;
}

void kp_write_bool(struct kp_writer *w, bool v)
{
    kp_write_i8(w, v ? 1 : 0);
}

void kp_write_i16(struct kp_writer *w, int16_t v)
{
    uint8_t *d = kp_writer_reserve(w, 2);
    if (d) {
        d[0] = (uint8_t)((uint16_t)v >> 8);
        d[1] = (uint8_t)v;
    }
}

void kp_write_u32(struct kp_writer *w, uint32_t v)
{
    uint8_t *d = kp_writer_reserve(w, 4);
    if (d) {
        d[0] = (uint8_t)(v >> 24);
        d[1] = (uint8_t)(v >> 16);
        d[2] = (uint8_t)(v >> 8);
        d[3] = (uint8_t)v;
    }
}

void kp_write_i32(struct kp_writer *w, int32_t v)
{
    kp_write_u32(w, (uint32_t)v);
}

void kp_write_i64(struct kp_writer *w, int64_t v)
{
    uint8_t *d = kp_writer_reserve(w, 8);
    if (d)
        for (int i = 0; i < 8; i++)
            d[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

static void write_uvar(struct kp_writer *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    kp_write_raw(w, tmp, n);
}

void kp_write_uvarint(struct kp_writer *w, uint32_t v)
{
    write_uvar(w, v);
}

void kp_write_varint(struct kp_writer *w, int32_t v)
{
    write_uvar(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void kp_write_varlong(struct kp_writer *w, int64_t v)
{
    write_uvar(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void kp_write_uuid(struct kp_writer *w, const uint8_t v[16])
{
    kp_write_raw(w, v, 16);
}

static bool str_fits_i16(struct kp_writer *w, struct kp_str s)
{
    if (s.len > INT16_MAX) {
        if (!w->err)
            w->err = RT_E_INVALID_ARGUMENT;
        return false;
    }
    return true;
}

void kp_write_string(struct kp_writer *w, struct kp_str s)
{
    if (s.len < 0)
        s = empty_str;
    if (!str_fits_i16(w, s))
        return;
    kp_write_i16(w, (int16_t)s.len);
    kp_write_raw(w, s.ptr, (size_t)s.len);
}

void kp_write_nullable_string(struct kp_writer *w, struct kp_str s)
{
    if (s.len < 0) {
        kp_write_i16(w, -1);
        return;
    }
    kp_write_string(w, s);
}

void kp_write_compact_string(struct kp_writer *w, struct kp_str s)
{
    if (s.len < 0)
        s = empty_str;
    if (!str_fits_i16(w, s))
        return;
    kp_write_uvarint(w, (uint32_t)s.len + 1);
    kp_write_raw(w, s.ptr, (size_t)s.len);
}

void kp_write_compact_nullable_string(struct kp_writer *w, struct kp_str s)
{
    if (s.len < 0) {
        kp_write_uvarint(w, 0);
        return;
    }
    kp_write_compact_string(w, s);
}

void kp_write_str(struct kp_writer *w, bool flexible, struct kp_str s)
{
    if (flexible)
        kp_write_compact_string(w, s);
    else
        kp_write_string(w, s);
}

void kp_write_nstr(struct kp_writer *w, bool flexible, struct kp_str s)
{
    if (flexible)
        kp_write_compact_nullable_string(w, s);
    else
        kp_write_nullable_string(w, s);
}

void kp_write_cstr(struct kp_writer *w, bool flexible, const char *s)
{
    kp_write_str(w, flexible, kp_str_of(s));
}

void kp_write_ncstr(struct kp_writer *w, bool flexible, const char *s)
{
    kp_write_nstr(w, flexible, kp_str_of(s));
}

void kp_write_bytes(struct kp_writer *w, struct kp_bytes b)
{
    if (b.len < 0)
        b.len = 0;
    kp_write_i32(w, b.len);
    kp_write_raw(w, b.ptr, (size_t)b.len);
}

void kp_write_nullable_bytes(struct kp_writer *w, struct kp_bytes b)
{
    if (b.len < 0) {
        kp_write_i32(w, -1);
        return;
    }
    kp_write_bytes(w, b);
}

void kp_write_compact_bytes(struct kp_writer *w, struct kp_bytes b)
{
    if (b.len < 0)
        b.len = 0;
    kp_write_uvarint(w, (uint32_t)b.len + 1);
    kp_write_raw(w, b.ptr, (size_t)b.len);
}

void kp_write_compact_nullable_bytes(struct kp_writer *w, struct kp_bytes b)
{
    if (b.len < 0) {
        kp_write_uvarint(w, 0);
        return;
    }
    kp_write_uvarint(w, (uint32_t)b.len + 1);
    kp_write_raw(w, b.ptr, (size_t)b.len);
}

void kp_write_nbytes(struct kp_writer *w, bool flexible, struct kp_bytes b)
{
    if (flexible)
        kp_write_compact_nullable_bytes(w, b);
    else
        kp_write_nullable_bytes(w, b);
}

void kp_write_array_len(struct kp_writer *w, int32_t count)
{
    assert(count >= -1);
    kp_write_i32(w, count);
}

void kp_write_compact_array_len(struct kp_writer *w, int32_t count)
{
    assert(count >= -1);
    kp_write_uvarint(w, (uint32_t)(count + 1));
}

void kp_write_alen(struct kp_writer *w, bool flexible, int32_t count)
{
    if (flexible)
        kp_write_compact_array_len(w, count);
    else
        kp_write_array_len(w, count);
}

void kp_write_tags(struct kp_writer *w, bool flexible)
{
    if (flexible)
        kp_write_uvarint(w, 0);
}

void kp_write_hole(struct kp_writer *w, uint32_t len, void *ref)
{
    if (w->err)
        return;
    if (w->holes_count >= w->holes_max) {
        w->err = KP_E_LIMIT;
        return;
    }
    assert(w->holes_count == 0 || w->holes[w->holes_count - 1].at <= w->len); /* KP8 */
    struct kp_hole *h = &w->holes[w->holes_count++];
    h->at = w->len;
    h->len = len;
    h->ref = ref;
    w->holes_bytes += len;
}

void kp_writer_patch_i32(struct kp_writer *w, size_t at, int32_t v)
{
    if (w->err)
        return;
    assert(at + 4 <= w->len);
    uint32_t u = (uint32_t)v;
    w->buf[at] = (uint8_t)(u >> 24);
    w->buf[at + 1] = (uint8_t)(u >> 16);
    w->buf[at + 2] = (uint8_t)(u >> 8);
    w->buf[at + 3] = (uint8_t)u;
}
