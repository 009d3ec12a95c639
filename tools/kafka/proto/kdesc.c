/*
 * kdesc.c — the interpreter of Kafka message descriptions (kdesc.h): decode, encode, size and
 * compare any described message at any version. It owns the mapping from a description to the
 * proto.c primitives and nothing else: it knows no API by name, never allocates (arrays go to
 * the caller's arena), never copies a string or byte string out of the request, and never
 * asserts on wire bytes.
 *
 * A field is on the wire at version v when vmin <= v <= vmax and it is not tagged; in flexible
 * versions (v >= flex_min) strings, bytes and arrays take their compact forms and every struct
 * ends with a tagged-field section. Nullability is per version (null_min).
 *
 * Invariants:
 *   KDE1  An array count is checked against kd_min_size of its element at that version (KP4)
 *         before the arena is asked for room; the least size counts every fixed field, one
 *         length byte (compact) or 2/4 (classic) for each string/bytes/array, one byte for the
 *         element's tag section in flexible versions, and is at least 1.
 *   KDE2  Decode writes every field of the struct it fills: the wire value, or the default.
 *         Absent tagged fields keep their defaults; unknown tags are skipped by size; a known
 *         tag's value must fill its declared size exactly.
 *   KDE3  Encode writes exactly the fields kd_size counts (the two walk the same description),
 *         tagged fields in description order (ascending tags) and only when not at default.
 *   KDE4  A negative count on a non-nullable array, or a null string/bytes at a version where
 *         it is not nullable, is written as empty (Kafka would refuse to serialize it).
 */
#include "tools/kafka/proto/kdesc.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static bool present(const struct kd_field *f, int16_t v)
{
    return v >= f->vmin && v <= f->vmax;
}

static bool on_wire(const struct kd_field *f, int16_t v, bool flex)
{
    (void)flex;
    return f->tag < 0 && present(f, v);
}

static bool tagged_here(const struct kd_field *f, int16_t v, bool flex)
{
    return flex && f->tag >= 0 && present(f, v);
}

static bool nullable(const struct kd_field *f, int16_t v)
{
    return v >= f->null_min;
}

static size_t prim_size(uint8_t t)
{
    switch (t) {
    case KD_BOOL:
    case KD_I8:
        return 1;
    case KD_I16:
        return 2;
    case KD_I32:
        return 4;
    case KD_I64:
        return 8;
    case KD_UUID:
        return 16;
    default:
        return 0;
    }
}

static size_t elem_c_size(const struct kd_field *f)
{
    if (f->sub)
        return f->sub->size;
    switch (f->elem) {
    case KD_BOOL:
    case KD_I8:
        return 1;
    case KD_I16:
        return 2;
    case KD_I32:
        return 4;
    case KD_I64:
        return 8;
    case KD_STR:
        return sizeof(struct kp_str);
    default:
        assert(0 && "array element type");
        return 1;
    }
}

/* Least wire size of a value of type t (KDE1). */
static size_t type_min(uint8_t t, bool flex)
{
    switch (t) {
    case KD_STR:
        return flex ? 1 : 2;
    case KD_BYTES:
    case KD_RECORDS:
    case KD_ARRAY:
        return flex ? 1 : 4;
    default:
        return prim_size(t);
    }
}

size_t kd_min_size(const struct kd_struct *s, int16_t version, bool flexible)
{
    size_t n = flexible ? 1 : 0;
    for (uint16_t i = 0; i < s->fields_count; i++)
        if (on_wire(&s->fields[i], version, flexible))
            n += type_min(s->fields[i].type, flexible);
    return n ? n : 1;
}

static size_t elem_min(const struct kd_field *f, int16_t v, bool flex)
{
    if (f->sub)
        return kd_min_size(f->sub, v, flex);
    size_t n = type_min(f->elem, flex);
    return n ? n : 1;
}

#define AT(base, off, T)  ((T *)((uint8_t *)(base) + (off)))
#define CAT(base, off, T) ((const T *)((const uint8_t *)(base) + (off)))

static const struct kp_str empty_str = {"", 0};
static const struct kp_str null_str = {NULL, -1};

/* KDF_ZERO_IS_DEFAULT on a nullable string: a handler's zeroed {NULL, 0} is written null. */
static inline struct kp_str zero_str(bool zero_default, struct kp_str v)
{
    return zero_default && !v.ptr && v.len == 0 ? null_str : v;
}

/* ---- decode ---- */

static void decode_struct(const struct kd_struct *s, struct kp_reader *r, int16_t v, bool flex,
                          struct kp_arena *a, void *base);

static void set_default(const struct kd_field *f, void *base)
{
    switch (f->type) {
    case KD_BOOL:
        *AT(base, f->off, bool) = f->dflt != 0;
        break;
    case KD_I8:
        *AT(base, f->off, int8_t) = (int8_t)f->dflt;
        break;
    case KD_I16:
        *AT(base, f->off, int16_t) = (int16_t)f->dflt;
        break;
    case KD_I32:
        *AT(base, f->off, int32_t) = (int32_t)f->dflt;
        break;
    case KD_I64:
        *AT(base, f->off, int64_t) = f->dflt;
        break;
    case KD_UUID:
        memset(AT(base, f->off, uint8_t), 0, 16);
        break;
    case KD_STR:
        *AT(base, f->off, struct kp_str) = (f->flags & KDF_NULL_DEFAULT) ? null_str : empty_str;
        break;
    case KD_BYTES:
        *AT(base, f->off, struct kp_bytes) = (f->flags & KDF_NULL_DEFAULT)
                                                 ? (struct kp_bytes){NULL, -1}
                                                 : (struct kp_bytes){NULL, 0};
        break;
    case KD_RECORDS:
        *AT(base, f->off, int32_t) = -1;
        *AT(base, f->aux, const uint8_t *) = NULL;
        *AT(base, f->aux2, void *) = NULL;
        break;
    case KD_ARRAY:
        *AT(base, f->off, void *) = NULL;
        *AT(base, f->aux, int32_t) = 0;
        break;
    default:
        assert(0 && "field type");
    }
}

static struct kp_str read_str(struct kp_reader *r, bool flex, bool null_ok)
{
    if (flex)
        return null_ok ? kp_read_compact_nullable_string(r) : kp_read_compact_string(r);
    return null_ok ? kp_read_nullable_string(r) : kp_read_string(r);
}

static struct kp_bytes read_bytes(struct kp_reader *r, bool flex, bool null_ok)
{
    if (flex)
        return null_ok ? kp_read_compact_nullable_bytes(r) : kp_read_compact_bytes(r);
    return null_ok ? kp_read_nullable_bytes(r) : kp_read_bytes(r);
}

static void decode_prim(uint8_t t, struct kp_reader *r, bool flex, bool null_ok, void *p)
{
    switch (t) {
    case KD_BOOL:
        *(bool *)p = kp_read_bool(r);
        break;
    case KD_I8:
        *(int8_t *)p = kp_read_i8(r);
        break;
    case KD_I16:
        *(int16_t *)p = kp_read_i16(r);
        break;
    case KD_I32:
        *(int32_t *)p = kp_read_i32(r);
        break;
    case KD_I64:
        *(int64_t *)p = kp_read_i64(r);
        break;
    case KD_UUID:
        kp_read_uuid(r, (uint8_t *)p);
        break;
    case KD_STR:
        *(struct kp_str *)p = read_str(r, flex, null_ok);
        break;
    case KD_BYTES:
        *(struct kp_bytes *)p = read_bytes(r, flex, null_ok);
        break;
    default:
        assert(0 && "primitive type");
    }
}

static void decode_field(const struct kd_field *f, struct kp_reader *r, int16_t v, bool flex,
                         struct kp_arena *a, void *base)
{
    bool null_ok = nullable(f, v);
    if (f->type == KD_RECORDS) {
        struct kp_bytes b = read_bytes(r, flex, true);
        *AT(base, f->off, int32_t) = b.len;
        *AT(base, f->aux, const uint8_t *) = b.ptr;
        *AT(base, f->aux2, void *) = NULL;
        return;
    }
    if (f->type != KD_ARRAY) {
        decode_prim(f->type, r, flex, null_ok, AT(base, f->off, void));
        return;
    }
    size_t min = elem_min(f, v, flex); /* KDE1 */
    int32_t n = null_ok ? kp_read_nalen(r, flex, min) : kp_read_alen(r, flex, min);
    size_t esize = elem_c_size(f);
    uint8_t *arr = kp_arena_array(r, a, n, esize);
    *AT(base, f->off, void *) = arr;
    *AT(base, f->aux, int32_t) = r->err ? 0 : n;
    for (int32_t i = 0; i < n && !r->err; i++) {
        if (f->sub)
            decode_struct(f->sub, r, v, flex, a, arr + (size_t)i * esize);
        else
            decode_prim(f->elem, r, flex, false, arr + (size_t)i * esize);
    }
}

static const struct kd_field *find_tag(const struct kd_struct *s, int16_t v, uint32_t tag)
{
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (f->tag >= 0 && (uint32_t)f->tag == tag && present(f, v))
            return f;
    }
    return NULL;
}

static bool has_tags(const struct kd_struct *s)
{
    for (uint16_t i = 0; i < s->fields_count; i++)
        if (s->fields[i].tag >= 0)
            return true;
    return false;
}

/* A tagged-field section: known tags decoded, unknown skipped (KDE2). */
static void decode_tags(const struct kd_struct *s, struct kp_reader *r, int16_t v,
                        struct kp_arena *a, void *base)
{
    if (!has_tags(s)) {
        kp_skip_tags(r);
        return;
    }
    int32_t n = kp_read_tag_count(r);
    for (int32_t i = 0; i < n && !r->err; i++) {
        uint32_t tag = kp_read_uvarint(r);
        uint32_t size = kp_read_uvarint(r);
        if (r->err)
            return;
        const struct kd_field *f = find_tag(s, v, tag);
        if (!f) {
            kp_skip(r, size);
            continue;
        }
        if (size > kp_remaining(r)) {
            kp_fail(r, RT_E_CORRUPT);
            return;
        }
        struct kp_reader sub;
        kp_reader_init(&sub, r->p, size);
        decode_field(f, &sub, v, true, a, base);
        kp_expect_end(&sub);
        if (sub.err) {
            kp_fail(r, sub.err);
            return;
        }
        kp_skip(r, size);
    }
}

static void decode_struct(const struct kd_struct *s, struct kp_reader *r, int16_t v, bool flex,
                          struct kp_arena *a, void *base)
{
    for (uint16_t i = 0; i < s->fields_count && !r->err; i++) {
        const struct kd_field *f = &s->fields[i];
        if (on_wire(f, v, flex))
            decode_field(f, r, v, flex, a, base);
        else
            set_default(f, base); /* KDE2 */
    }
    if (flex && !r->err)
        decode_tags(s, r, v, a, base);
}

/* ---- plans: a description compiled for one version ----
 *
 * Walking the description checks every field's versions, nullability and element sizes on
 * every message; a plan does that once per (message, version): the fields on the wire in order
 * with their resolved form, each array's least element size (KDE1) and element plan, and the
 * absent fields whose default is not zero (arena elements are zeroed). Plans are built on first
 * use under a mutex, published with release/acquire, and never freed (static pools); a message
 * whose plan does not fit the pools runs on the description walk above, with the same bytes.
 */

static void write_str(struct kp_writer *w, bool flex, bool null_ok, struct kp_str s);
static void write_bytes(struct kp_writer *w, bool flex, bool null_ok, struct kp_bytes b);
static void encode_prim(uint8_t t, struct kp_writer *w, bool flex, bool null_ok, const void *p,
                        const struct kd_field *f);
static void encode_tags(const struct kd_struct *s, struct kp_writer *w, int16_t v,
                        const void *base);

/* ---- fast paths ----
 * The plans read and write fixed-width fields and classic strings/bytes through these inline
 * copies of the proto.c primitives when the bytes (room) are there and no error is set; any
 * other case falls through to the primitive, so the bytes, bounds (KP1-KP3) and sticky errors
 * (KP2, KP7) are exactly proto.c's. */

static inline bool rd_has(const struct kp_reader *r, size_t n)
{
    return !r->err && (size_t)(r->end - r->p) >= n;
}

static inline uint32_t be32_at(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline int16_t rd_i16(struct kp_reader *r)
{
    if (!rd_has(r, 2))
        return kp_read_i16(r);
    int16_t v = (int16_t)(uint16_t)((uint16_t)r->p[0] << 8 | r->p[1]);
    r->p += 2;
    return v;
}

static inline int32_t rd_i32(struct kp_reader *r)
{
    if (!rd_has(r, 4))
        return kp_read_i32(r);
    int32_t v = (int32_t)be32_at(r->p);
    r->p += 4;
    return v;
}

static inline int64_t rd_i64(struct kp_reader *r)
{
    if (!rd_has(r, 8))
        return kp_read_i64(r);
    int64_t v = (int64_t)((uint64_t)be32_at(r->p) << 32 | be32_at(r->p + 4));
    r->p += 8;
    return v;
}

/* Classic string (i16 length) or bytes (i32 length): the common well-formed case inline. */
static inline struct kp_str rd_classic(struct kp_reader *r, bool bytes, bool null_ok)
{
    size_t lw = bytes ? 4 : 2;
    if (rd_has(r, lw)) {
        int32_t n =
            bytes ? (int32_t)be32_at(r->p) : (int16_t)(uint16_t)((uint16_t)r->p[0] << 8 | r->p[1]);
        if (n >= 0 && (size_t)(r->end - r->p) - lw >= (size_t)n) {
            struct kp_str s = {(const char *)r->p + lw, n};
            r->p += lw + (size_t)n;
            return s;
        }
        if (n == -1 && null_ok) { /* null: Produce's transactional_id, most often */
            r->p += lw;
            return (struct kp_str){NULL, -1};
        }
    }
    if (bytes) {
        struct kp_bytes b = null_ok ? kp_read_nullable_bytes(r) : kp_read_bytes(r);
        return (struct kp_str){(const char *)b.ptr, b.len};
    }
    return null_ok ? kp_read_nullable_string(r) : kp_read_string(r);
}

static inline uint8_t *wr_room(struct kp_writer *w, size_t n)
{
    if (w->err || w->cap - w->len < n || (w->len_max && n > w->len_max - w->len))
        return NULL;
    uint8_t *d = w->buf + w->len;
    w->len += n;
    return d;
}

static inline void put_be32(uint8_t *d, uint32_t v)
{
    d[0] = (uint8_t)(v >> 24);
    d[1] = (uint8_t)(v >> 16);
    d[2] = (uint8_t)(v >> 8);
    d[3] = (uint8_t)v;
}

static inline void wr_i16(struct kp_writer *w, int16_t v)
{
    uint8_t *d = wr_room(w, 2);
    if (!d) {
        kp_write_i16(w, v);
        return;
    }
    d[0] = (uint8_t)((uint16_t)v >> 8);
    d[1] = (uint8_t)v;
}

static inline void wr_i32(struct kp_writer *w, int32_t v)
{
    uint8_t *d = wr_room(w, 4);
    if (!d) {
        kp_write_i32(w, v);
        return;
    }
    put_be32(d, (uint32_t)v);
}

static inline void wr_i64(struct kp_writer *w, int64_t v)
{
    uint8_t *d = wr_room(w, 8);
    if (!d) {
        kp_write_i64(w, v);
        return;
    }
    put_be32(d, (uint32_t)((uint64_t)v >> 32));
    put_be32(d + 4, (uint32_t)v);
}

/* A classic string that is not null and fits i16 (KP3), inline; anything else via proto.c. */
static inline void wr_classic_str(struct kp_writer *w, bool null_ok, struct kp_str s)
{
    if (s.len >= 0 && s.len <= INT16_MAX) {
        uint8_t *d = wr_room(w, 2 + (size_t)s.len);
        if (d) {
            d[0] = (uint8_t)((uint16_t)s.len >> 8);
            d[1] = (uint8_t)s.len;
            if (s.len)
                memcpy(d + 2, s.ptr, (size_t)s.len);
            return;
        }
    }
    write_str(w, false, null_ok, s);
}

struct kd_op {
    uint8_t type; /* enum kd_type */
    uint8_t elem;
    bool nullable;
    bool zero_default;
    uint32_t off, aux, aux2;
    uint32_t esize; /* array: C size of an element */
    uint32_t min;   /* array: least wire size of an element (KDE1) */
    const struct kd_plan *sub;
    int64_t dflt;
};

struct kd_plan {
    const struct kd_struct *s;
    int16_t version;
    bool flex;
    bool tags; /* tagged fields described at this version */
    bool leaf; /* classic, fixed-width and string/bytes fields only, no defaults to apply */
    uint16_t ops_count, defaults_count;
    const struct kd_op *ops;
    const struct kd_field *const *defaults;
};

#define KD_OPS_MAX      8192
#define KD_PLANS_MAX    2048
#define KD_DEFAULTS_MAX 4096

static struct kd_op op_pool[KD_OPS_MAX];
static struct kd_plan plan_pool[KD_PLANS_MAX];
static const struct kd_field *default_pool[KD_DEFAULTS_MAX];
static size_t ops_used, plans_used, defaults_used;
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct kd_plan plan_none; /* "did not fit": use the walk */

static bool default_not_zero(const struct kd_field *f)
{
    switch (f->type) {
    case KD_STR:
    case KD_RECORDS:
        return true; /* "" is a pointer; null is len -1 */
    case KD_BYTES:
        return (f->flags & KDF_NULL_DEFAULT) != 0;
    case KD_ARRAY:
    case KD_UUID:
        return false;
    default:
        return f->dflt != 0;
    }
}

static const struct kd_plan *plan_build(const struct kd_struct *s, int16_t v, bool flex)
{
    uint16_t n = 0, d = 0;
    bool tags = false;
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (on_wire(f, v, flex))
            n++;
        else if (default_not_zero(f))
            d++;
        if (tagged_here(f, v, flex))
            tags = true;
    }
    if (ops_used + n > KD_OPS_MAX || plans_used >= KD_PLANS_MAX ||
        defaults_used + d > KD_DEFAULTS_MAX)
        return NULL;
    struct kd_plan *p = &plan_pool[plans_used++];
    struct kd_op *ops = &op_pool[ops_used];
    ops_used += n;
    const struct kd_field **defs = &default_pool[defaults_used];
    defaults_used += d;
    *p = (struct kd_plan){s, v, flex, tags, false, n, d, ops, defs};
    uint16_t j = 0, k = 0;
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (!on_wire(f, v, flex)) {
            if (default_not_zero(f))
                defs[k++] = f;
            continue;
        }
        struct kd_op *o = &ops[j++];
        *o = (struct kd_op){.type = f->type,
                            .elem = f->elem,
                            .nullable = nullable(f, v),
                            .zero_default = (f->flags & KDF_ZERO_IS_DEFAULT) != 0,
                            .off = f->off,
                            .aux = f->aux,
                            .aux2 = f->aux2,
                            .dflt = f->dflt};
        if (f->type == KD_ARRAY) {
            o->esize = (uint32_t)elem_c_size(f);
            o->min = (uint32_t)elem_min(f, v, flex);
            if (f->sub) {
                o->sub = plan_build(f->sub, v, flex);
                if (!o->sub)
                    return NULL;
            }
        }
    }
    assert(j == n && k == d);
    p->leaf = !flex && d == 0;
    for (uint16_t i = 0; i < n; i++)
        if (ops[i].type == KD_ARRAY || ops[i].type == KD_RECORDS || ops[i].type == KD_UUID)
            p->leaf = false;
    return p;
}

static __attribute__((noinline)) const struct kd_plan *plan_first(const struct kd_message *m,
                                                                  int16_t v);

/* The plan of (m, v): one acquire load once built (inline: every decode and encode asks). */
static inline const struct kd_plan *plan_of(const struct kd_message *m, int16_t v)
{
    if (!m->cache || v < 0 || v >= KD_VERSIONS_MAX)
        return NULL;
    const struct kd_plan *p = atomic_load_explicit(&m->cache->plans[v], memory_order_acquire);
    if (__builtin_expect(p != NULL && p != &plan_none, 1))
        return p;
    return plan_first(m, v);
}

/* The first use of (m, v): build its plan under the lock. */
static const struct kd_plan *plan_first(const struct kd_message *m, int16_t v)
{
    const struct kd_plan *p = atomic_load_explicit(&m->cache->plans[v], memory_order_acquire);
    if (!p) {
        pthread_mutex_lock(&plan_lock);
        p = atomic_load_explicit(&m->cache->plans[v], memory_order_relaxed);
        if (!p) {
            p = plan_build(m->body, v, kd_flexible(m, v));
            if (!p)
                p = &plan_none;
            atomic_store_explicit(&m->cache->plans[v], p, memory_order_release);
        }
        pthread_mutex_unlock(&plan_lock);
    }
    return p == &plan_none ? NULL : p;
}

/* A leaf element (plan->leaf): the loop of the array it sits in runs it inline. */
static inline __attribute__((always_inline)) void leaf_decode(const struct kd_plan *p,
                                                              struct kp_reader *r, uint8_t *base)
{
    for (const struct kd_op *o = p->ops, *end = o + p->ops_count; o < end; o++) {
        uint8_t *at = base + o->off;
        switch (o->type) {
        case KD_BOOL:
            *(bool *)at = kp_read_bool(r);
            break;
        case KD_I8:
            *(int8_t *)at = kp_read_i8(r);
            break;
        case KD_I16:
            *(int16_t *)at = rd_i16(r);
            break;
        case KD_I32:
            *(int32_t *)at = rd_i32(r);
            break;
        case KD_I64:
            *(int64_t *)at = rd_i64(r);
            break;
        case KD_STR:
            *(struct kp_str *)at = rd_classic(r, false, o->nullable);
            break;
        default: { /* KD_BYTES */
            struct kp_str b = rd_classic(r, true, o->nullable);
            *(struct kp_bytes *)at = (struct kp_bytes){(const uint8_t *)b.ptr, b.len};
            break;
        }
        }
    }
}

static inline __attribute__((always_inline)) void
leaf_encode(const struct kd_plan *p, struct kp_writer *w, const uint8_t *base)
{
    for (const struct kd_op *o = p->ops, *end = o + p->ops_count; o < end; o++) {
        const uint8_t *at = base + o->off;
        switch (o->type) {
        case KD_BOOL:
            kp_write_bool(w, *(const bool *)at || (o->zero_default && o->dflt));
            break;
        case KD_I8: {
            int8_t x = *(const int8_t *)at;
            kp_write_i8(w, o->zero_default && x == 0 ? (int8_t)o->dflt : x);
            break;
        }
        case KD_I16: {
            int16_t x = *(const int16_t *)at;
            wr_i16(w, o->zero_default && x == 0 ? (int16_t)o->dflt : x);
            break;
        }
        case KD_I32: {
            int32_t x = *(const int32_t *)at;
            wr_i32(w, o->zero_default && x == 0 ? (int32_t)o->dflt : x);
            break;
        }
        case KD_I64: {
            int64_t x = *(const int64_t *)at;
            wr_i64(w, o->zero_default && x == 0 ? o->dflt : x);
            break;
        }
        case KD_STR:
            wr_classic_str(w, o->nullable, *(const struct kp_str *)at);
            break;
        default: /* KD_BYTES */
            write_bytes(w, false, o->nullable, *(const struct kp_bytes *)at);
            break;
        }
    }
}

static void plan_decode(const struct kd_plan *p, struct kp_reader *r, struct kp_arena *a,
                        uint8_t *base)
{
    bool flex = p->flex;
    for (const struct kd_op *o = p->ops, *end = o + p->ops_count; o < end; o++) {
        uint8_t *at = base + o->off;
        switch (o->type) {
        case KD_BOOL:
            *(bool *)at = kp_read_bool(r);
            break;
        case KD_I8:
            *(int8_t *)at = kp_read_i8(r);
            break;
        case KD_I16:
            *(int16_t *)at = rd_i16(r);
            break;
        case KD_I32:
            *(int32_t *)at = rd_i32(r);
            break;
        case KD_I64:
            *(int64_t *)at = rd_i64(r);
            break;
        case KD_UUID:
            kp_read_uuid(r, at);
            break;
        case KD_STR:
            *(struct kp_str *)at =
                flex ? read_str(r, true, o->nullable) : rd_classic(r, false, o->nullable);
            break;
        case KD_BYTES:
            if (flex) {
                *(struct kp_bytes *)at = read_bytes(r, true, o->nullable);
            } else {
                struct kp_str b = rd_classic(r, true, o->nullable);
                *(struct kp_bytes *)at = (struct kp_bytes){(const uint8_t *)b.ptr, b.len};
            }
            break;
        case KD_RECORDS: {
            struct kp_bytes b = read_bytes(r, flex, true);
            *(int32_t *)at = b.len;
            *AT(base, o->aux, const uint8_t *) = b.ptr;
            *AT(base, o->aux2, void *) = NULL;
            break;
        }
        case KD_ARRAY: {
            int32_t n;
            if (!flex && rd_has(r, 4)) { /* KP4's check, inline */
                n = (int32_t)be32_at(r->p);
                /* n * min <= what is left (no division: n < 2^31, min < 2^32) */
                if (n >= 0 && (uint64_t)n * o->min <= (uint64_t)(r->end - r->p) - 4)
                    r->p += 4;
                else
                    n = o->nullable ? kp_read_nullable_array_len(r, o->min)
                                    : kp_read_array_len(r, o->min);
            } else {
                n = o->nullable ? kp_read_nalen(r, flex, o->min)
                                : kp_read_alen(r, flex, o->min); /* KDE1 */
            }
            uint8_t *arr = kp_arena_array(r, a, n, o->esize);
            *(void **)at = arr;
            *AT(base, o->aux, int32_t) = r->err ? 0 : n;
            if (o->sub) {
                const struct kd_plan *sp = o->sub;
                if (sp->leaf) {
                    for (int32_t i = 0; i < n && !r->err; i++)
                        leaf_decode(sp, r, arr + (size_t)i * o->esize);
                    break;
                }
                for (int32_t i = 0; i < n && !r->err; i++) {
                    uint8_t *e = arr + (size_t)i * o->esize;
                    for (uint16_t k = 0; k < sp->defaults_count; k++)
                        set_default(sp->defaults[k], e);
                    plan_decode(sp, r, a, e);
                }
            } else {
                for (int32_t i = 0; i < n && !r->err; i++)
                    decode_prim(o->elem, r, flex, false, arr + (size_t)i * o->esize);
            }
            break;
        }
        default:
            assert(0 && "field type");
        }
    }
    if (flex && !r->err) {
        if (p->tags)
            decode_tags(p->s, r, p->version, a, base);
        else
            kp_skip_tags(r);
    }
}

static void plan_encode(const struct kd_plan *p, struct kp_writer *w, const uint8_t *base)
{
    bool flex = p->flex;
    for (const struct kd_op *o = p->ops, *end = o + p->ops_count; o < end; o++) {
        const uint8_t *at = base + o->off;
        switch (o->type) {
        case KD_BOOL:
            kp_write_bool(w, *(const bool *)at || (o->zero_default && o->dflt));
            break;
        case KD_I8: {
            int8_t x = *(const int8_t *)at;
            kp_write_i8(w, o->zero_default && x == 0 ? (int8_t)o->dflt : x);
            break;
        }
        case KD_I16: {
            int16_t x = *(const int16_t *)at;
            wr_i16(w, o->zero_default && x == 0 ? (int16_t)o->dflt : x);
            break;
        }
        case KD_I32: {
            int32_t x = *(const int32_t *)at;
            wr_i32(w, o->zero_default && x == 0 ? (int32_t)o->dflt : x);
            break;
        }
        case KD_I64: {
            int64_t x = *(const int64_t *)at;
            wr_i64(w, o->zero_default && x == 0 ? o->dflt : x);
            break;
        }
        case KD_UUID:
            kp_write_uuid(w, at);
            break;
        case KD_STR:
            if (flex)
                write_str(w, true, o->nullable,
                          zero_str(o->zero_default, *(const struct kp_str *)at));
            else
                wr_classic_str(w, o->nullable,
                               zero_str(o->zero_default, *(const struct kp_str *)at));
            break;
        case KD_BYTES:
            write_bytes(w, flex, o->nullable, *(const struct kp_bytes *)at);
            break;
        case KD_RECORDS: {
            int32_t len = *(const int32_t *)at;
            const uint8_t *ptr = *CAT(base, o->aux, uint8_t *const);
            if (len < 0) {
                if (flex)
                    kp_write_uvarint(w, 0);
                else
                    kp_write_i32(w, -1);
                break;
            }
            if (flex)
                kp_write_uvarint(w, (uint32_t)len + 1);
            else
                wr_i32(w, len);
            if (ptr) { /* KD2 */
                kp_write_raw(w, ptr, (size_t)len);
            } else if (len > 0) {
                void *ref;
                memcpy(&ref, base + o->aux2, sizeof ref);
                kp_write_hole(w, (uint32_t)len, ref);
            }
            break;
        }
        case KD_ARRAY: {
            int32_t n = *CAT(base, o->aux, int32_t);
            if (n < 0) {
                kp_write_alen(w, flex, o->nullable ? -1 : 0); /* KDE4 */
                break;
            }
            if (flex)
                kp_write_uvarint(w, (uint32_t)n + 1);
            else
                wr_i32(w, n);
            const uint8_t *arr = *(const uint8_t *const *)at;
            if (o->sub && o->sub->leaf) {
                for (int32_t i = 0; i < n && !w->err; i++)
                    leaf_encode(o->sub, w, arr + (size_t)i * o->esize);
            } else if (o->sub) {
                for (int32_t i = 0; i < n && !w->err; i++)
                    plan_encode(o->sub, w, arr + (size_t)i * o->esize);
            } else if (o->elem == KD_I32) {
                for (int32_t i = 0; i < n; i++)
                    wr_i32(w, ((const int32_t *)(const void *)arr)[i]);
            } else {
                for (int32_t i = 0; i < n && !w->err; i++)
                    encode_prim(o->elem, w, flex, false, arr + (size_t)i * o->esize, NULL);
            }
            break;
        }
        default:
            assert(0 && "field type");
        }
    }
    if (flex) {
        if (p->tags)
            encode_tags(p->s, w, p->version, base);
        else
            kp_write_uvarint(w, 0);
    }
}

int kd_decode(const struct kd_message *m, struct kp_reader *r, int16_t version, struct kp_arena *a,
              void *out)
{
    if (version < m->min || version > m->max)
        return RT_E_UNSUPPORTED;
    const struct kd_struct *s = m->body;
    memset(out, 0, s->size);
    const struct kd_plan *p = plan_of(m, version);
    if (p) {
        for (uint16_t i = 0; i < p->defaults_count; i++)
            set_default(p->defaults[i], out);
        plan_decode(p, r, a, out);
    } else {
        for (uint16_t i = 0; i < s->fields_count; i++)
            set_default(&s->fields[i], out);
        decode_struct(s, r, version, kd_flexible(m, version), a, out);
    }
    kp_expect_end(r);
    if (r->err) {
        /* Nothing of a refused body is walked: its arrays are empty (KP2). */
        for (uint16_t i = 0; i < s->fields_count; i++)
            if (s->fields[i].type == KD_ARRAY)
                *AT(out, s->fields[i].aux, int32_t) = 0;
        return r->err;
    }
    if (m->after_decode)
        m->after_decode(out, version);
    return 0;
}

/* ---- encode ---- */

static void encode_struct(const struct kd_struct *s, struct kp_writer *w, int16_t v, bool flex,
                          const void *base);

static void write_str(struct kp_writer *w, bool flex, bool null_ok, struct kp_str s)
{
    if (!null_ok && s.len < 0)
        s = empty_str; /* KDE4 */
    if (flex)
        kp_write_compact_nullable_string(w, s);
    else
        kp_write_nullable_string(w, s);
}

static void write_bytes(struct kp_writer *w, bool flex, bool null_ok, struct kp_bytes b)
{
    if (!null_ok && b.len < 0)
        b.len = 0; /* KDE4 */
    if (flex)
        kp_write_compact_nullable_bytes(w, b);
    else
        kp_write_nullable_bytes(w, b);
}

static int64_t int_value(uint8_t t, const void *p)
{
    switch (t) {
    case KD_BOOL:
        return *(const bool *)p;
    case KD_I8:
        return *(const int8_t *)p;
    case KD_I16:
        return *(const int16_t *)p;
    case KD_I32:
        return *(const int32_t *)p;
    case KD_I64:
        return *(const int64_t *)p;
    default:
        return 0;
    }
}

static void encode_prim(uint8_t t, struct kp_writer *w, bool flex, bool null_ok, const void *p,
                        const struct kd_field *f)
{
    int64_t x;
    switch (t) {
    case KD_BOOL:
    case KD_I8:
    case KD_I16:
    case KD_I32:
    case KD_I64:
        x = int_value(t, p);
        if (f && (f->flags & KDF_ZERO_IS_DEFAULT) && x == 0)
            x = f->dflt;
        if (t == KD_BOOL)
            kp_write_bool(w, x != 0);
        else if (t == KD_I8)
            kp_write_i8(w, (int8_t)x);
        else if (t == KD_I16)
            kp_write_i16(w, (int16_t)x);
        else if (t == KD_I32)
            kp_write_i32(w, (int32_t)x);
        else
            kp_write_i64(w, x);
        break;
    case KD_UUID:
        kp_write_uuid(w, (const uint8_t *)p);
        break;
    case KD_STR:
        write_str(w, flex, null_ok,
                  zero_str(f && (f->flags & KDF_ZERO_IS_DEFAULT), *(const struct kp_str *)p));
        break;
    case KD_BYTES:
        write_bytes(w, flex, null_ok, *(const struct kp_bytes *)p);
        break;
    default:
        assert(0 && "primitive type");
    }
}

static void encode_field(const struct kd_field *f, struct kp_writer *w, int16_t v, bool flex,
                         const void *base)
{
    bool null_ok = nullable(f, v);
    if (f->type == KD_RECORDS) {
        int32_t len = *CAT(base, f->off, int32_t);
        const uint8_t *p = *CAT(base, f->aux, uint8_t *);
        if (len < 0) {
            if (flex)
                kp_write_uvarint(w, 0);
            else
                kp_write_i32(w, -1);
            return;
        }
        if (flex)
            kp_write_uvarint(w, (uint32_t)len + 1);
        else
            kp_write_i32(w, len);
        if (p) /* KD2 */
            kp_write_raw(w, p, (size_t)len);
        else if (len > 0) {
            void *ref;
            memcpy(&ref, (const uint8_t *)base + f->aux2, sizeof ref);
            kp_write_hole(w, (uint32_t)len, ref);
        }
        return;
    }
    if (f->type != KD_ARRAY) {
        encode_prim(f->type, w, flex, null_ok, CAT(base, f->off, void), f);
        return;
    }
    int32_t n = *CAT(base, f->aux, int32_t);
    if (n < 0) {
        kp_write_alen(w, flex, null_ok ? -1 : 0); /* KDE4 */
        return;
    }
    kp_write_alen(w, flex, n);
    const uint8_t *arr = *CAT(base, f->off, uint8_t *const);
    size_t esize = elem_c_size(f);
    for (int32_t i = 0; i < n && !w->err; i++) {
        if (f->sub)
            encode_struct(f->sub, w, v, flex, arr + (size_t)i * esize);
        else
            encode_prim(f->elem, w, flex, false, arr + (size_t)i * esize, NULL);
    }
}

static uint64_t field_size(const struct kd_field *f, int16_t v, bool flex, const void *base);

/* A tagged field differs from its default and goes on the wire (KDE3). */
static bool tag_set(const struct kd_field *f, const void *base)
{
    const void *p = CAT(base, f->off, void);
    switch (f->type) {
    case KD_STR: {
        const struct kp_str *s = p;
        return (f->flags & KDF_NULL_DEFAULT) ? s->len >= 0 : s->len > 0;
    }
    case KD_BYTES: {
        const struct kp_bytes *b = p;
        return (f->flags & KDF_NULL_DEFAULT) ? b->len >= 0 : b->len > 0;
    }
    case KD_ARRAY:
        return *CAT(base, f->aux, int32_t) > 0;
    case KD_UUID: {
        static const uint8_t zero[16];
        return memcmp(p, zero, 16) != 0;
    }
    default:
        return int_value(f->type, p) != f->dflt;
    }
}

static void encode_tags(const struct kd_struct *s, struct kp_writer *w, int16_t v, const void *base)
{
    uint32_t n = 0;
    for (uint16_t i = 0; i < s->fields_count; i++)
        if (tagged_here(&s->fields[i], v, true) && tag_set(&s->fields[i], base))
            n++;
    kp_write_uvarint(w, n);
    for (uint16_t i = 0; i < s->fields_count && n; i++) {
        const struct kd_field *f = &s->fields[i];
        if (!tagged_here(f, v, true) || !tag_set(f, base))
            continue;
        kp_write_uvarint(w, (uint32_t)f->tag);
        kp_write_uvarint(w, (uint32_t)field_size(f, v, true, base));
        encode_field(f, w, v, true, base);
    }
}

static void encode_struct(const struct kd_struct *s, struct kp_writer *w, int16_t v, bool flex,
                          const void *base)
{
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (on_wire(f, v, flex))
            encode_field(f, w, v, flex, base);
    }
    if (flex)
        encode_tags(s, w, v, base);
}

int kd_encode(const struct kd_message *m, struct kp_writer *w, int16_t version, const void *in)
{
    if (version < m->min || version > m->max)
        return RT_E_UNSUPPORTED;
    const struct kd_plan *p = plan_of(m, version);
    if (p)
        plan_encode(p, w, in);
    else
        encode_struct(m->body, w, version, kd_flexible(m, version), in);
    return w->err;
}

/* ---- size ---- */

static uint64_t uvarint_size(uint64_t x)
{
    uint64_t n = 1;
    while (x >= 0x80) {
        x >>= 7;
        n++;
    }
    return n;
}

static uint64_t len_size(bool flex, int64_t len, bool classic_i16)
{
    if (flex)
        return uvarint_size(len < 0 ? 0 : (uint64_t)len + 1);
    return classic_i16 ? 2 : 4;
}

static uint64_t struct_size(const struct kd_struct *s, int16_t v, bool flex, const void *base);

static uint64_t prim_wire_size(uint8_t t, bool flex, bool null_ok, const void *p)
{
    if (t == KD_STR) {
        struct kp_str s = *(const struct kp_str *)p;
        if (!null_ok && s.len < 0)
            s.len = 0;
        return len_size(flex, s.len, true) + (s.len > 0 ? (uint64_t)s.len : 0);
    }
    if (t == KD_BYTES) {
        struct kp_bytes b = *(const struct kp_bytes *)p;
        if (!null_ok && b.len < 0)
            b.len = 0;
        return len_size(flex, b.len, false) + (b.len > 0 ? (uint64_t)b.len : 0);
    }
    return prim_size(t);
}

static uint64_t field_size(const struct kd_field *f, int16_t v, bool flex, const void *base)
{
    bool null_ok = nullable(f, v);
    if (f->type == KD_RECORDS) {
        int32_t len = *CAT(base, f->off, int32_t);
        return len_size(flex, len, false) + (len > 0 ? (uint64_t)len : 0);
    }
    if (f->type == KD_STR) {
        struct kp_str sv =
            zero_str((f->flags & KDF_ZERO_IS_DEFAULT) != 0, *CAT(base, f->off, struct kp_str));
        return prim_wire_size(KD_STR, flex, null_ok, &sv);
    }
    if (f->type != KD_ARRAY)
        return prim_wire_size(f->type, flex, null_ok, CAT(base, f->off, void));
    int32_t n = *CAT(base, f->aux, int32_t);
    if (n < 0)
        return len_size(flex, null_ok ? -1 : 0, false);
    uint64_t total = len_size(flex, n, false);
    const uint8_t *arr = *CAT(base, f->off, uint8_t *const);
    size_t esize = elem_c_size(f);
    for (int32_t i = 0; i < n; i++) {
        if (f->sub)
            total += struct_size(f->sub, v, flex, arr + (size_t)i * esize);
        else
            total += prim_wire_size(f->elem, flex, false, arr + (size_t)i * esize);
    }
    return total;
}

static uint64_t struct_size(const struct kd_struct *s, int16_t v, bool flex, const void *base)
{
    uint64_t total = 0;
    uint32_t tags = 0;
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (on_wire(f, v, flex)) {
            total += field_size(f, v, flex, base);
        } else if (tagged_here(f, v, flex) && tag_set(f, base)) {
            uint64_t n = field_size(f, v, true, base);
            total += uvarint_size((uint64_t)f->tag) + uvarint_size(n) + n;
            tags++;
        }
    }
    if (flex)
        total += uvarint_size(tags);
    return total;
}

int kd_size(const struct kd_message *m, int16_t version, const void *in, uint64_t *size)
{
    if (version < m->min || version > m->max)
        return RT_E_UNSUPPORTED;
    *size = struct_size(m->body, version, kd_flexible(m, version), in);
    return 0;
}

/* ---- compare ---- */

static bool str_equal(struct kp_str a, struct kp_str b)
{
    if (a.len != b.len)
        return false;
    return a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0;
}

static bool prim_equal(uint8_t t, const void *x, const void *y)
{
    switch (t) {
    case KD_STR:
        return str_equal(*(const struct kp_str *)x, *(const struct kp_str *)y);
    case KD_BYTES: {
        const struct kp_bytes *a = x, *b = y;
        return str_equal((struct kp_str){(const char *)a->ptr, a->len},
                         (struct kp_str){(const char *)b->ptr, b->len});
    }
    case KD_UUID:
        return memcmp(x, y, 16) == 0;
    default:
        return int_value(t, x) == int_value(t, y);
    }
}

bool kd_equal(const struct kd_struct *s, int16_t v, bool flex, const void *x, const void *y)
{
    for (uint16_t i = 0; i < s->fields_count; i++) {
        const struct kd_field *f = &s->fields[i];
        if (!on_wire(f, v, flex) && !tagged_here(f, v, flex))
            continue;
        if (f->type == KD_RECORDS) {
            int32_t lx = *CAT(x, f->off, int32_t), ly = *CAT(y, f->off, int32_t);
            const uint8_t *px = *CAT(x, f->aux, uint8_t *const);
            const uint8_t *py = *CAT(y, f->aux, uint8_t *const);
            if (lx != ly || (lx > 0 && (!px || !py || memcmp(px, py, (size_t)lx) != 0)))
                return false;
            continue;
        }
        if ((f->flags & KDF_ZERO_IS_DEFAULT) && f->type == KD_STR) {
            if (!str_equal(zero_str(true, *CAT(x, f->off, struct kp_str)),
                           zero_str(true, *CAT(y, f->off, struct kp_str))))
                return false;
            continue;
        }
        if (f->flags & KDF_ZERO_IS_DEFAULT) { /* a 0 means the default it is written as */
            int64_t a = int_value(f->type, CAT(x, f->off, void));
            int64_t b = int_value(f->type, CAT(y, f->off, void));
            if ((a ? a : f->dflt) != (b ? b : f->dflt))
                return false;
            continue;
        }
        if (f->type != KD_ARRAY) {
            if (!prim_equal(f->type, CAT(x, f->off, void), CAT(y, f->off, void)))
                return false;
            continue;
        }
        int32_t nx = *CAT(x, f->aux, int32_t), ny = *CAT(y, f->aux, int32_t);
        if (nx != ny)
            return false;
        const uint8_t *ax = *CAT(x, f->off, uint8_t *const);
        const uint8_t *ay = *CAT(y, f->off, uint8_t *const);
        size_t esize = elem_c_size(f);
        for (int32_t j = 0; j < nx; j++) {
            const void *ex = ax + (size_t)j * esize, *ey = ay + (size_t)j * esize;
            if (f->sub ? !kd_equal(f->sub, v, flex, ex, ey) : !prim_equal(f->elem, ex, ey))
                return false;
        }
    }
    return true;
}
