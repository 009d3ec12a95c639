/*
 * proto.h — the Kafka wire primitives: a bounds-checked reader with a sticky error, a growable
 * writer that can leave "holes" for bytes the server sends out of line (zero-copy fetch), and a
 * per-request arena for decoded arrays. Everything above (kmsg_*.c) is written on these calls;
 * nothing here knows about any API. The rules the primitives keep are KP1..KP8 at the top of
 * proto.c.
 *
 * Errors: the reader and writer carry `err` (0, RT_E_CORRUPT for malformed input, KP_E_LIMIT for
 * an arena or hole table that is full, -ENOMEM for a writer that could not grow). The first
 * error sticks; every later call returns 0/empty and leaves it, so a decoder reads a whole
 * message and checks once at the end.
 */
#ifndef RT_KAFKA_PROTO_H
#define RT_KAFKA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ringtail.h"

/* The codec's own code for "a bound of the codec was reached" (the arena, the hole table, a
 * frame past its size): the engine's RT_E_LIMIT it used to borrow is retired (docs/limits.md). */
#define KP_E_LIMIT (-20001)

/* A string or byte string pointing INTO the request buffer; len -1 is null. Never copied. */
struct kp_str {
    const char *ptr;
    int32_t len;
};

struct kp_bytes {
    const uint8_t *ptr;
    int32_t len;
};

struct kp_reader {
    const uint8_t *p, *end;
    int err; /* sticky: 0 or the first error */
};

/* A fixed buffer with a bump pointer, reset per request. Overflow is KP_E_LIMIT (KP6). */
struct kp_arena {
    uint8_t *base;
    size_t size_bytes;
    size_t used_bytes;
};

/* A run of `len` bytes of the message that the writer does not hold: the server sends its own
 * bytes (segment slices) at `at`, between writer bytes [.., at) and [at, ..). */
struct kp_hole {
    size_t at;
    uint32_t len;
    void *ref; /* the server's cookie (which fetch slices fill the hole) */
};

/* A writer over a growable buffer. buf is malloc'd and kept across messages (kp_writer_reset);
 * `holes` is caller-provided (may be NULL with holes_max 0 when the message has none). */
struct kp_writer {
    uint8_t *buf;
    size_t len;
    size_t cap;
    size_t len_max; /* growth limit (KP7); 0 = 1 GiB */
    int err;
    struct kp_hole *holes;
    size_t holes_count;
    size_t holes_max;
    uint64_t holes_bytes; /* sum of holes[].len */
};

/* ---- reader ---- */

/* Big-endian loads from bytes already bounds-checked (a record batch's header fields, whose
 * offsets are ringtail.h's RT_BATCH_OFF_*). */
static inline uint32_t kp_load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t kp_load_be64(const uint8_t *p)
{
    return (uint64_t)kp_load_be32(p) << 32 | kp_load_be32(p + 4);
}

static inline void kp_reader_init(struct kp_reader *r, const void *buf, size_t len)
{
    r->p = (const uint8_t *)buf;
    r->end = len ? r->p + len : r->p; /* NULL + 0 is UB in C: an empty body may have no buffer */
    r->err = 0;
}

static inline size_t kp_remaining(const struct kp_reader *r)
{
    return (size_t)(r->end - r->p);
}

/* Sets r->err to `err` unless an error is already set. Returns the sticky error. */
int kp_fail(struct kp_reader *r, int err);

int8_t kp_read_i8(struct kp_reader *r);
bool kp_read_bool(struct kp_reader *r); /* any non-zero byte is true, as Kafka reads it */
int16_t kp_read_i16(struct kp_reader *r);
int32_t kp_read_i32(struct kp_reader *r);
int64_t kp_read_i64(struct kp_reader *r);
uint32_t kp_read_u32(struct kp_reader *r);
int32_t kp_read_varint(struct kp_reader *r);   /* zigzag, at most 5 bytes */
int64_t kp_read_varlong(struct kp_reader *r);  /* zigzag, at most 10 bytes */
uint32_t kp_read_uvarint(struct kp_reader *r); /* unsigned, at most 5 bytes */
void kp_read_uuid(struct kp_reader *r, uint8_t out[16]);
/* Skips n bytes, or fails if fewer are left. */
void kp_skip(struct kp_reader *r, size_t n);

/* Strings: `string` = i16 length (>= 0), `nullable_string` = i16 (-1 null), compact =
 * uvarint length+1 (0 null). Non-nullable forms refuse null. Lengths past the end fail. */
struct kp_str kp_read_string(struct kp_reader *r);
struct kp_str kp_read_nullable_string(struct kp_reader *r);
struct kp_str kp_read_compact_string(struct kp_reader *r);
struct kp_str kp_read_compact_nullable_string(struct kp_reader *r);
/* Picks the compact form when `flexible`. */
struct kp_str kp_read_str(struct kp_reader *r, bool flexible);
struct kp_str kp_read_nstr(struct kp_reader *r, bool flexible);

/* Bytes: i32 length (-1 null only for the nullable form), compact = uvarint length+1. */
struct kp_bytes kp_read_bytes(struct kp_reader *r);
struct kp_bytes kp_read_nullable_bytes(struct kp_reader *r);
struct kp_bytes kp_read_compact_bytes(struct kp_reader *r);
struct kp_bytes kp_read_compact_nullable_bytes(struct kp_reader *r);
struct kp_bytes kp_read_nbytes(struct kp_reader *r, bool flexible);

/* Array lengths: returns the element count, or -1 for a null array (nullable forms only).
 * `elem_min_bytes` is the least an element can take on the wire (>= 1); a count that the bytes
 * left cannot hold fails before the caller reserves anything (KP4). */
int32_t kp_read_array_len(struct kp_reader *r, size_t elem_min_bytes);
int32_t kp_read_nullable_array_len(struct kp_reader *r, size_t elem_min_bytes);
int32_t kp_read_compact_array_len(struct kp_reader *r, size_t elem_min_bytes);
int32_t kp_read_compact_nullable_array_len(struct kp_reader *r, size_t elem_min_bytes);
int32_t kp_read_alen(struct kp_reader *r, bool flexible, size_t elem_min_bytes);
int32_t kp_read_nalen(struct kp_reader *r, bool flexible, size_t elem_min_bytes);

/* The field count that opens a tagged-field section, checked against the bytes left (each field
 * takes at least two: tag and size; KP4). */
int32_t kp_read_tag_count(struct kp_reader *r);
/* A tagged-field section (flexible versions): every field skipped, none understood. */
void kp_skip_tags(struct kp_reader *r);
/* Reads the section only when `flexible`. */
static inline void kp_read_tags(struct kp_reader *r, bool flexible)
{
    if (flexible)
        kp_skip_tags(r);
}

/* Fails with RT_E_CORRUPT when bytes remain: a message must be consumed whole. */
void kp_expect_end(struct kp_reader *r);

/* ---- arena ---- */
static inline void kp_arena_init(struct kp_arena *a, void *buf, size_t size_bytes)
{
    a->base = (uint8_t *)buf;
    a->size_bytes = size_bytes;
    a->used_bytes = 0;
}

static inline void kp_arena_reset(struct kp_arena *a)
{
    a->used_bytes = 0;
}

/* `count` elements of `elem_size` bytes, zeroed, aligned for any scalar; NULL for count 0 (and
 * for count < 0). On overflow sets r->err = KP_E_LIMIT and returns NULL. */
void *kp_arena_array(struct kp_reader *r, struct kp_arena *a, int32_t count, size_t elem_size);

/* ---- writer ---- */
void kp_writer_init(struct kp_writer *w, struct kp_hole *holes, size_t holes_max);
/* Forgets the content (keeps the buffer); sets the hole table again. */
void kp_writer_reset(struct kp_writer *w, struct kp_hole *holes, size_t holes_max);
void kp_writer_free(struct kp_writer *w);
/* Makes room for n more bytes; returns a pointer to them or NULL (err set). */
uint8_t *kp_writer_reserve(struct kp_writer *w, size_t n);

void kp_write_raw(struct kp_writer *w, const void *p, size_t n);
void kp_write_i8(struct kp_writer *w, int8_t v);
void kp_write_bool(struct kp_writer *w, bool v);
void kp_write_i16(struct kp_writer *w, int16_t v);
void kp_write_i32(struct kp_writer *w, int32_t v);
void kp_write_i64(struct kp_writer *w, int64_t v);
void kp_write_u32(struct kp_writer *w, uint32_t v);
void kp_write_varint(struct kp_writer *w, int32_t v);
void kp_write_varlong(struct kp_writer *w, int64_t v);
void kp_write_uvarint(struct kp_writer *w, uint32_t v);
void kp_write_uuid(struct kp_writer *w, const uint8_t v[16]);
/* Strings: a kp_str with len -1 writes null in the nullable forms; non-nullable forms write
 * a null as the empty string. Strings longer than 32767 bytes fail (RT_E_INVALID_ARGUMENT). */
void kp_write_string(struct kp_writer *w, struct kp_str s);
void kp_write_nullable_string(struct kp_writer *w, struct kp_str s);
void kp_write_compact_string(struct kp_writer *w, struct kp_str s);
void kp_write_compact_nullable_string(struct kp_writer *w, struct kp_str s);
void kp_write_str(struct kp_writer *w, bool flexible, struct kp_str s);
void kp_write_nstr(struct kp_writer *w, bool flexible, struct kp_str s);
/* A C string (NULL = null) in the form `flexible` picks. */
void kp_write_cstr(struct kp_writer *w, bool flexible, const char *s);
void kp_write_ncstr(struct kp_writer *w, bool flexible, const char *s);
void kp_write_bytes(struct kp_writer *w, struct kp_bytes b);
void kp_write_nullable_bytes(struct kp_writer *w, struct kp_bytes b);
void kp_write_compact_bytes(struct kp_writer *w, struct kp_bytes b);
void kp_write_compact_nullable_bytes(struct kp_writer *w, struct kp_bytes b);
void kp_write_nbytes(struct kp_writer *w, bool flexible, struct kp_bytes b);
/* Array length: count >= 0, or -1 for null (nullable forms). */
void kp_write_array_len(struct kp_writer *w, int32_t count);
void kp_write_compact_array_len(struct kp_writer *w, int32_t count);
void kp_write_alen(struct kp_writer *w, bool flexible, int32_t count);
/* An empty tagged-field section, only when `flexible`. */
void kp_write_tags(struct kp_writer *w, bool flexible);
/* Leaves a hole of `len` bytes the server fills with `ref`'s bytes (KP8). */
void kp_write_hole(struct kp_writer *w, uint32_t len, void *ref);

/* Overwrites a big-endian i32 written earlier at `at` (a length prefix). */
void kp_writer_patch_i32(struct kp_writer *w, size_t at, int32_t v);

/* Bytes a message takes on the wire: writer bytes plus holes. */
static inline uint64_t kp_writer_wire_bytes(const struct kp_writer *w)
{
    return (uint64_t)w->len + w->holes_bytes;
}

/* A kp_str over a NUL-terminated string (NULL gives null). */
static inline struct kp_str kp_str_of(const char *s)
{
    struct kp_str out = {s, -1};
    if (s) {
        size_t n = 0;
        while (s[n])
            n++;
        out.len = n > INT32_MAX ? INT32_MAX : (int32_t)n;
    }
    return out;
}

static inline bool kp_str_eq(struct kp_str s, const char *c)
{
    if (s.len < 0 || !c)
        return s.len < 0 && !c;
    for (int32_t i = 0; i < s.len; i++)
        if (c[i] == 0 || c[i] != s.ptr[i])
            return false;
    return c[s.len] == 0;
}

#endif
