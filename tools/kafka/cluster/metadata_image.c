/*
 * metadata_image.c — the metadata records and the image (metadata_image.h; docs/format.md L).
 * All integers big-endian, strings u16 length + bytes:
 *
 *   record   = type u8, version u8 (0), payload
 *   1 REGISTER_BROKER  node_id i32, epoch i64 (-1: the record's index), port u16, host str
 *   2 FENCE_BROKER     node_id i32, fenced u8 (0|1)
 *   3 TOPIC            id [16], name str, configs_count u16, configs_count × (key str, value str)
 *   4 PARTITION        topic_id [16], partition i32, leader i32, leader_epoch i32,
 *                      replicas_count u8, replicas i32 × n, isr_count u8, isr i32 × n;
 *                      version 1 adds partition_epoch i32 (MI8)
 *   5 DELETE_TOPIC     topic_id [16]
 *   6 PRODUCER_IDS     broker_id i32, next_producer_id i64
 *   7 CONFIG           resource_type u8 (2: TOPIC), name str, key str, has_value u8 (0|1),
 *                      value str (only when has_value) (MI7)
 *
 *   snapshot = magic u32 "RTMI", version u16 (1), reserved u16 (0), last_index u64,
 *              records_applied u64, records_rejected u64, chain u64, count u32,
 *              count × (len u32, record), crc u32 (zlib CRC-32 of every byte before it)
 *
 * It never allocates while decoding and never trusts a length it has not checked against the
 * bytes left (MI2). The image's own invariants are asserted.
 */
#include "tools/kafka/cluster/metadata_image.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

_Static_assert(MI_SNAPSHOT_HEADER == 4 + 2 + 2 + 8 + 8 + 8 + 8 + 4, "snapshot header is 44 bytes");

/* ---- bytes ---- */

struct rd {
    const uint8_t *p;
    size_t n, at;
    bool bad;
};

static bool rd_need(struct rd *r, size_t k)
{
    if (r->bad || r->n - r->at < k) {
        r->bad = true;
        return false;
    }
    return true;
}
static uint8_t rd_u8(struct rd *r)
{
    return rd_need(r, 1) ? r->p[r->at++] : 0;
}
static uint16_t rd_u16(struct rd *r)
{
    if (!rd_need(r, 2))
        return 0;
    uint16_t v = (uint16_t)(r->p[r->at] << 8 | r->p[r->at + 1]);
    r->at += 2;
    return v;
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t rd_u32(struct rd *r)
{
    if (!rd_need(r, 4))
        return 0;
    uint32_t v = get_u32(r->p + r->at);
    r->at += 4;
    return v;
}
static uint64_t rd_u64(struct rd *r)
{
    uint64_t hi = rd_u32(r);
    return hi << 32 | rd_u32(r);
}
static const uint8_t *rd_bytes(struct rd *r, size_t k)
{
    if (!rd_need(r, k))
        return NULL;
    const uint8_t *p = r->p + r->at;
    r->at += k;
    return p;
}
static struct mi_str rd_str(struct rd *r)
{
    struct mi_str s = {NULL, rd_u16(r)};
    s.p = (const char *)rd_bytes(r, s.len);
    return s;
}

int32_t mi_i32_at(const uint8_t *p, unsigned i)
{
    return (int32_t)get_u32(p + 4 * (size_t)i);
}

struct wr {
    uint8_t *p;
    size_t cap, at;
    bool bad;
};
static void wr_bytes(struct wr *w, const void *b, size_t k)
{
    if (w->bad || w->cap - w->at < k) {
        w->bad = true;
        return;
    }
    memcpy(w->p + w->at, b, k);
    w->at += k;
}
static void wr_u8(struct wr *w, uint8_t v)
{
    wr_bytes(w, &v, 1);
}
static void wr_u16(struct wr *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    wr_bytes(w, b, 2);
}
static void wr_u32(struct wr *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    wr_bytes(w, b, 4);
}
static void wr_u64(struct wr *w, uint64_t v)
{
    wr_u32(w, (uint32_t)(v >> 32));
    wr_u32(w, (uint32_t)v);
}
static void wr_str(struct wr *w, const char *s, size_t len)
{
    if (len > UINT16_MAX) {
        w->bad = true;
        return;
    }
    wr_u16(w, (uint16_t)len);
    wr_bytes(w, s, len);
}

/* ---- decoding (L.2) ---- */

static int corrupt(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return MI_E_CORRUPT;
}

static bool host_ok(struct mi_str s)
{
    if (s.len == 0 || s.len > MI_HOST_BYTES_MAX)
        return false;
    for (unsigned i = 0; i < s.len; i++)
        if ((unsigned char)s.p[i] <= ' ' || (unsigned char)s.p[i] >= 0x7f)
            return false;
    return true;
}

static bool topic_name_ok(struct mi_str s)
{
    if (s.len == 0 || s.len > MI_TOPIC_NAME_MAX)
        return false;
    if ((s.len == 1 && s.p[0] == '.') || (s.len == 2 && s.p[0] == '.' && s.p[1] == '.'))
        return false;
    for (unsigned i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool zero16(const uint8_t *id)
{
    for (int i = 0; i < 16; i++)
        if (id[i])
            return false;
    return true;
}

static bool str_eq(struct mi_str a, struct mi_str b)
{
    return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* Walks a topic record's configs; each key 1..255 bytes, each value 0..4096, keys unique. */
static int decode_configs(struct rd *r, uint16_t n, char *err, size_t err_len)
{
    size_t first = r->at;
    for (unsigned i = 0; i < n; i++) {
        struct mi_str k = rd_str(r), v = rd_str(r);
        if (r->bad)
            return corrupt(err, err_len, "topic config %u: truncated", i);
        if (!host_ok(k)) /* 1..255 bytes of printable ASCII, no space: as a host */
            return corrupt(err, err_len, "topic config %u: key not 1..255 printable bytes", i);
        if (v.len > MI_CONFIG_VALUE_MAX || (v.len && memchr(v.p, 0, v.len)))
            return corrupt(err, err_len, "topic config %u: value over 4096 bytes or with a NUL", i);
        /* unique keys: O(n^2) over at most 256 */
        struct rd w = {r->p, r->n, first, false};
        for (unsigned j = 0; j < i; j++) {
            struct mi_str k2 = rd_str(&w);
            (void)rd_str(&w);
            if (str_eq(k, k2))
                return corrupt(err, err_len, "topic config %u: duplicate key", i);
        }
    }
    return 0;
}

int mi_record_decode(const void *buf, size_t len, struct mi_record *out, char *err, size_t err_len)
{
    struct rd r = {buf, len, 0, false};
    memset(out, 0, sizeof(*out));
    uint8_t type = rd_u8(&r), version = rd_u8(&r);
    if (r.bad)
        return corrupt(err, err_len, "record of %zu bytes (a header is 2)", len);
    if (version != 0 && !(type == MI_PARTITION && version == 1))
        return corrupt(err, err_len, "record type %u: version %u (want 0)", type, version);
    out->type = type;
    switch (type) {
    case MI_REGISTER_BROKER:
        out->reg.node_id = (int32_t)rd_u32(&r);
        out->reg.epoch = (int64_t)rd_u64(&r);
        out->reg.port = rd_u16(&r);
        out->reg.host = rd_str(&r);
        if (r.bad)
            break;
        if (out->reg.node_id < 0 || out->reg.epoch < -1 || out->reg.port == 0 ||
            !host_ok(out->reg.host))
            return corrupt(err, err_len,
                           "register broker: node id, epoch, port or host out of "
                           "range");
        break;
    case MI_FENCE_BROKER: {
        out->fence.node_id = (int32_t)rd_u32(&r);
        uint8_t f = rd_u8(&r);
        if (r.bad)
            break;
        if (out->fence.node_id < 0 || f > 1)
            return corrupt(err, err_len, "fence broker: node id < 0 or fenced not 0/1");
        out->fence.fenced = f == 1;
        break;
    }
    case MI_TOPIC: {
        const uint8_t *id = rd_bytes(&r, 16);
        out->topic.name = rd_str(&r);
        out->topic.configs_count = rd_u16(&r);
        if (r.bad)
            break;
        memcpy(out->topic.id, id, 16);
        if (zero16(out->topic.id))
            return corrupt(err, err_len, "topic: zero topic id");
        if (!topic_name_ok(out->topic.name))
            return corrupt(err, err_len, "topic: name not 1..249 of [a-zA-Z0-9._-]");
        if (out->topic.configs_count > MI_CONFIGS_MAX)
            return corrupt(err, err_len, "topic: %u configs (at most 256)",
                           out->topic.configs_count);
        out->topic.configs = r.p + r.at;
        int rc = decode_configs(&r, out->topic.configs_count, err, err_len);
        if (rc)
            return rc;
        break;
    }
    case MI_PARTITION: {
        const uint8_t *id = rd_bytes(&r, 16);
        out->partition.partition = (int32_t)rd_u32(&r);
        out->partition.leader = (int32_t)rd_u32(&r);
        out->partition.leader_epoch = (int32_t)rd_u32(&r);
        out->partition.replicas_count = rd_u8(&r);
        out->partition.replicas = rd_bytes(&r, 4 * (size_t)out->partition.replicas_count);
        out->partition.isr_count = rd_u8(&r);
        out->partition.isr = rd_bytes(&r, 4 * (size_t)out->partition.isr_count);
        out->partition.partition_epoch = version == 1 ? (int32_t)rd_u32(&r) : -1;
        if (r.bad)
            break;
        if (version == 1 && out->partition.partition_epoch < 0)
            return corrupt(err, err_len, "partition: partition epoch %d < 0",
                           (int)out->partition.partition_epoch);
        memcpy(out->partition.topic_id, id, 16);
        const struct mi_record *p = out;
        if (p->partition.partition < 0 || p->partition.partition >= MI_PARTITIONS_MAX)
            return corrupt(err, err_len, "partition: index %d out of 0..99999",
                           (int)p->partition.partition);
        if (p->partition.leader_epoch < 0 || p->partition.leader < -1)
            return corrupt(err, err_len, "partition: leader < -1 or leader epoch < 0");
        if (p->partition.replicas_count == 0 || p->partition.replicas_count > MI_REPLICAS_MAX ||
            p->partition.isr_count > p->partition.replicas_count)
            return corrupt(err, err_len, "partition: %u replicas (1..64), %u in sync",
                           p->partition.replicas_count, p->partition.isr_count);
        bool leader_in = p->partition.leader == -1;
        for (unsigned i = 0; i < p->partition.replicas_count; i++) {
            int32_t x = mi_i32_at(p->partition.replicas, i);
            if (x < 0)
                return corrupt(err, err_len, "partition: replica id %d < 0", (int)x);
            for (unsigned j = 0; j < i; j++)
                if (mi_i32_at(p->partition.replicas, j) == x)
                    return corrupt(err, err_len, "partition: replica %d twice", (int)x);
            leader_in |= x == p->partition.leader;
        }
        if (!leader_in)
            return corrupt(err, err_len, "partition: leader %d is not a replica",
                           (int)p->partition.leader);
        for (unsigned i = 0; i < p->partition.isr_count; i++) {
            int32_t x = mi_i32_at(p->partition.isr, i);
            bool in = false;
            for (unsigned j = 0; j < p->partition.replicas_count; j++)
                in |= mi_i32_at(p->partition.replicas, j) == x;
            for (unsigned j = 0; j < i; j++)
                if (mi_i32_at(p->partition.isr, j) == x)
                    in = false;
            if (!in)
                return corrupt(err, err_len, "partition: ISR member %d not a replica, or twice",
                               (int)x);
        }
        break;
    }
    case MI_DELETE_TOPIC: {
        const uint8_t *id = rd_bytes(&r, 16);
        if (!r.bad)
            memcpy(out->del.topic_id, id, 16);
        break;
    }
    case MI_PRODUCER_IDS:
        out->pids.broker_id = (int32_t)rd_u32(&r);
        out->pids.next_producer_id = (int64_t)rd_u64(&r);
        if (r.bad)
            break;
        if (out->pids.broker_id < 0 || out->pids.next_producer_id <= 0)
            return corrupt(err, err_len, "producer ids: broker id < 0 or next id <= 0");
        break;
    case MI_CONFIG: {
        out->config.resource_type = rd_u8(&r);
        out->config.name = rd_str(&r);
        out->config.key = rd_str(&r);
        uint8_t has = rd_u8(&r);
        if (r.bad)
            break;
        if (has > 1)
            return corrupt(err, err_len, "config: has_value %u (0 or 1)", has);
        out->config.has_value = has == 1;
        if (has)
            out->config.value = rd_str(&r);
        if (r.bad)
            break;
        if (out->config.name.len > MI_TOPIC_NAME_MAX ||
            (out->config.resource_type == MI_RESOURCE_TOPIC && !topic_name_ok(out->config.name)))
            return corrupt(err, err_len, "config: resource name not a topic name");
        if (!host_ok(out->config.key)) /* as a topic record's keys */
            return corrupt(err, err_len, "config: key not 1..255 printable bytes");
        if (out->config.value.len > MI_CONFIG_VALUE_MAX ||
            (out->config.value.len && memchr(out->config.value.p, 0, out->config.value.len)))
            return corrupt(err, err_len, "config: value over 4096 bytes or with a NUL");
        break;
    }
    case MI_BATCH: { /* MI9 */
        out->batch.count = rd_u16(&r);
        if (r.bad)
            break;
        if (out->batch.count == 0)
            return corrupt(err, err_len, "batch: no record");
        out->batch.records = r.p + r.at;
        for (unsigned i = 0; i < out->batch.count; i++) {
            uint32_t n = rd_u32(&r);
            const uint8_t *inner = rd_bytes(&r, n);
            if (r.bad)
                break;
            struct mi_record in;
            char why[160];
            if (mi_record_decode(inner, n, &in, why, sizeof why) != 0)
                return corrupt(err, err_len, "batch: record %u: %s", i, why);
            if (in.type != MI_TOPIC && in.type != MI_PARTITION && in.type != MI_CONFIG)
                return corrupt(err, err_len,
                               "batch: record %u of type %u (TOPIC, PARTITION or "
                               "CONFIG only)",
                               i, in.type);
        }
        out->batch.bytes = (size_t)(r.p + r.at - out->batch.records);
        break;
    }
    default:
        return corrupt(err, err_len, "unknown record type %u", type);
    }
    if (r.bad)
        return corrupt(err, err_len, "record type %u truncated (%zu bytes)", type, len);
    if (r.at != len)
        return corrupt(err, err_len, "record type %u: %zu bytes after its end", type, len - r.at);
    return 0;
}

bool mi_batch_next(const struct mi_record *batch, size_t *at, const uint8_t **rec, size_t *len)
{
    assert(batch->type == MI_BATCH);
    if (*at >= batch->batch.bytes)
        return false;
    const uint8_t *p = batch->batch.records + *at;
    size_t n = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
    assert(4 + n <= batch->batch.bytes - *at); /* decoded already (MI9) */
    *rec = p + 4;
    *len = n;
    *at += 4 + n;
    return true;
}

int mi_batch_add(struct mi_batch *b, const uint8_t *rec, size_t len)
{
    assert(len >= 2 && (rec[0] == MI_TOPIC || rec[0] == MI_PARTITION || rec[0] == MI_CONFIG));
    size_t head = b->count ? 0 : 4;
    if (b->count == MI_BATCH_RECORDS_MAX || b->len + head + 4 + len > MI_RECORD_BYTES_MAX)
        return -E2BIG;
    if (b->cap - b->len < head + 4 + len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < head + 4 + len)
            cap *= 2;
        uint8_t *nb = realloc(b->buf, cap);
        if (!nb)
            return -ENOMEM;
        b->buf = nb;
        b->cap = cap;
    }
    if (!b->count) {
        b->buf[0] = MI_BATCH;
        b->buf[1] = 0; /* version */
        b->len = 4;
    }
    uint8_t *p = b->buf + b->len;
    p[0] = (uint8_t)(len >> 24);
    p[1] = (uint8_t)(len >> 16);
    p[2] = (uint8_t)(len >> 8);
    p[3] = (uint8_t)len;
    memcpy(p + 4, rec, len);
    b->len += 4 + len;
    b->count++;
    b->buf[2] = (uint8_t)(b->count >> 8);
    b->buf[3] = (uint8_t)b->count;
    return 0;
}

void mi_batch_free(struct mi_batch *b)
{
    free(b->buf);
    memset(b, 0, sizeof(*b));
}

void mi_config_at(const struct mi_record *rec, unsigned i, struct mi_config_kv *kv)
{
    assert(rec->type == MI_TOPIC && i < rec->topic.configs_count);
    /* decoded already: the walk stays inside the record */
    struct rd r = {rec->topic.configs, SIZE_MAX, 0, false};
    for (unsigned j = 0; j <= i; j++) {
        kv->key = rd_str(&r);
        kv->value = rd_str(&r);
    }
}

/* ---- encoding ---- */

size_t mi_encode_register_broker(uint8_t *buf, size_t cap, int32_t node_id, int64_t epoch,
                                 const char *host, uint16_t port)
{
    size_t hl = strlen(host);
    if (node_id < 0 || epoch < -1 || port == 0 || hl == 0 || hl > MI_HOST_BYTES_MAX)
        return 0;
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_REGISTER_BROKER);
    wr_u8(&w, 0);
    wr_u32(&w, (uint32_t)node_id);
    wr_u64(&w, (uint64_t)epoch);
    wr_u16(&w, port);
    wr_str(&w, host, hl);
    return w.bad ? 0 : w.at;
}

size_t mi_encode_fence_broker(uint8_t *buf, size_t cap, int32_t node_id, bool fenced)
{
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_FENCE_BROKER);
    wr_u8(&w, 0);
    wr_u32(&w, (uint32_t)node_id);
    wr_u8(&w, fenced ? 1 : 0);
    return w.bad || node_id < 0 ? 0 : w.at;
}

size_t mi_encode_topic(uint8_t *buf, size_t cap, const uint8_t id[16], const char *name,
                       const char *const *keys, const char *const *values, unsigned configs_count)
{
    if (configs_count > MI_CONFIGS_MAX)
        return 0;
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_TOPIC);
    wr_u8(&w, 0);
    wr_bytes(&w, id, 16);
    wr_str(&w, name, strlen(name));
    wr_u16(&w, (uint16_t)configs_count);
    for (unsigned i = 0; i < configs_count; i++) {
        wr_str(&w, keys[i], strlen(keys[i]));
        wr_str(&w, values[i], strlen(values[i]));
    }
    struct mi_record chk;
    if (w.bad || mi_record_decode(buf, w.at, &chk, NULL, 0) != 0)
        return 0;
    return w.at;
}

static size_t encode_partition(uint8_t *buf, size_t cap, const uint8_t topic_id[16],
                               int32_t partition, const int32_t *replicas, unsigned replicas_count,
                               int32_t leader, int32_t leader_epoch, const int32_t *isr,
                               unsigned isr_count, int32_t partition_epoch)
{
    if (replicas_count > 255 || isr_count > 255)
        return 0;
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_PARTITION);
    wr_u8(&w, partition_epoch >= 0 ? 1 : 0);
    wr_bytes(&w, topic_id, 16);
    wr_u32(&w, (uint32_t)partition);
    wr_u32(&w, (uint32_t)leader);
    wr_u32(&w, (uint32_t)leader_epoch);
    wr_u8(&w, (uint8_t)replicas_count);
    for (unsigned i = 0; i < replicas_count; i++)
        wr_u32(&w, (uint32_t)replicas[i]);
    wr_u8(&w, (uint8_t)isr_count);
    for (unsigned i = 0; i < isr_count; i++)
        wr_u32(&w, (uint32_t)isr[i]);
    if (partition_epoch >= 0)
        wr_u32(&w, (uint32_t)partition_epoch);
    struct mi_record chk;
    if (w.bad || mi_record_decode(buf, w.at, &chk, NULL, 0) != 0)
        return 0;
    return w.at;
}

size_t mi_encode_partition(uint8_t *buf, size_t cap, const uint8_t topic_id[16], int32_t partition,
                           const int32_t *replicas, unsigned replicas_count, int32_t leader,
                           int32_t leader_epoch, const int32_t *isr, unsigned isr_count)
{
    return encode_partition(buf, cap, topic_id, partition, replicas, replicas_count, leader,
                            leader_epoch, isr, isr_count, -1);
}

size_t mi_encode_partition_v1(uint8_t *buf, size_t cap, const uint8_t topic_id[16],
                              int32_t partition, const int32_t *replicas, unsigned replicas_count,
                              int32_t leader, int32_t leader_epoch, const int32_t *isr,
                              unsigned isr_count, int32_t partition_epoch)
{
    if (partition_epoch < 0)
        return 0;
    return encode_partition(buf, cap, topic_id, partition, replicas, replicas_count, leader,
                            leader_epoch, isr, isr_count, partition_epoch);
}

size_t mi_encode_config(uint8_t *buf, size_t cap, uint8_t resource_type, const char *name,
                        const char *key, const char *value)
{
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_CONFIG);
    wr_u8(&w, 0);
    wr_u8(&w, resource_type);
    wr_str(&w, name, strlen(name));
    wr_str(&w, key, strlen(key));
    wr_u8(&w, value ? 1 : 0);
    if (value)
        wr_str(&w, value, strlen(value));
    struct mi_record chk;
    if (w.bad || mi_record_decode(buf, w.at, &chk, NULL, 0) != 0)
        return 0;
    return w.at;
}

size_t mi_encode_delete_topic(uint8_t *buf, size_t cap, const uint8_t topic_id[16])
{
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_DELETE_TOPIC);
    wr_u8(&w, 0);
    wr_bytes(&w, topic_id, 16);
    return w.bad ? 0 : w.at;
}

size_t mi_encode_producer_ids(uint8_t *buf, size_t cap, int32_t broker_id, int64_t next_producer_id)
{
    if (broker_id < 0 || next_producer_id <= 0)
        return 0;
    struct wr w = {buf, cap, 0, false};
    wr_u8(&w, MI_PRODUCER_IDS);
    wr_u8(&w, 0);
    wr_u32(&w, (uint32_t)broker_id);
    wr_u64(&w, (uint64_t)next_producer_id);
    return w.bad ? 0 : w.at;
}

/* ---- the image (L.3) ---- */

void metadata_image_init(struct metadata_image *img)
{
    memset(img, 0, sizeof(*img));
    img->producer_ids_broker = -1;
}

static void topic_free(struct mi_topic *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->configs_count; i++) {
        free(t->keys[i]);
        free(t->values[i]);
    }
    free(t->keys);
    free(t->values);
    free(t->partitions);
    free(t);
}

void metadata_image_free(struct metadata_image *img)
{
    for (unsigned i = 0; i < img->topics_count; i++)
        topic_free(img->topics[i]);
    free(img->topics);
    free(img->brokers);
    metadata_image_init(img);
}

static struct mi_topic *topic_by_id(const struct metadata_image *img, const uint8_t *id,
                                    unsigned *at)
{
    for (unsigned i = 0; i < img->topics_count; i++)
        if (memcmp(img->topics[i]->id, id, 16) == 0) {
            if (at)
                *at = i;
            return img->topics[i];
        }
    return NULL;
}

const struct mi_topic *metadata_image_topic(const struct metadata_image *img, const char *name)
{
    for (unsigned i = 0; i < img->topics_count; i++)
        if (strcmp(img->topics[i]->name, name) == 0)
            return img->topics[i];
    return NULL;
}

bool mi_partition_has(const struct mi_partition *p, int32_t id, bool in_isr)
{
    const int32_t *ids = in_isr ? p->isr : p->replicas;
    unsigned n = in_isr ? p->isr_count : p->replicas_count;
    for (unsigned i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

const struct mi_broker *metadata_image_broker(const struct metadata_image *img, int32_t id)
{
    for (unsigned i = 0; i < img->brokers_count; i++)
        if (img->brokers[i].id == id)
            return &img->brokers[i];
    return NULL;
}

static char *dup_str(struct mi_str s)
{
    char *p = malloc((size_t)s.len + 1);
    if (p) {
        memcpy(p, s.p, s.len);
        p[s.len] = '\0';
    }
    return p;
}

/* Replaces t's configs by the record's; -ENOMEM leaves t as it was. */
static int topic_set_configs(struct mi_topic *t, const struct mi_record *r)
{
    unsigned n = r->topic.configs_count;
    char **keys = calloc(n ? n : 1, sizeof(char *)), **values = calloc(n ? n : 1, sizeof(char *));
    bool ok = keys && values;
    for (unsigned i = 0; ok && i < n; i++) {
        struct mi_config_kv kv;
        mi_config_at(r, i, &kv);
        keys[i] = dup_str(kv.key);
        values[i] = dup_str(kv.value);
        ok = keys[i] && values[i];
    }
    if (!ok) {
        for (unsigned i = 0; keys && values && i < n; i++) {
            free(keys[i]);
            free(values[i]);
        }
        free(keys);
        free(values);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < t->configs_count; i++) {
        free(t->keys[i]);
        free(t->values[i]);
    }
    free(t->keys);
    free(t->values);
    t->keys = keys;
    t->values = values;
    t->configs_count = n;
    return 0;
}

/* MI7: one config of one topic set or removed; -ENOMEM leaves the topic as it was. */
static int apply_config(struct metadata_image *img, const struct mi_record *r)
{
    if (r->config.resource_type != MI_RESOURCE_TOPIC)
        return MI_E_REJECTED;
    char name[MI_TOPIC_NAME_MAX + 1];
    memcpy(name, r->config.name.p, r->config.name.len);
    name[r->config.name.len] = '\0';
    struct mi_topic *t = (struct mi_topic *)metadata_image_topic(img, name);
    if (!t)
        return MI_E_REJECTED;
    unsigned at = t->configs_count;
    for (unsigned i = 0; i < t->configs_count; i++)
        if (strlen(t->keys[i]) == r->config.key.len &&
            memcmp(t->keys[i], r->config.key.p, r->config.key.len) == 0)
            at = i;
    if (!r->config.has_value) {
        if (at == t->configs_count)
            return 0; /* nothing to remove */
        free(t->keys[at]);
        free(t->values[at]);
        memmove(&t->keys[at], &t->keys[at + 1], (t->configs_count - at - 1) * sizeof(char *));
        memmove(&t->values[at], &t->values[at + 1], (t->configs_count - at - 1) * sizeof(char *));
        t->configs_count--;
        return 0;
    }
    char *value = dup_str(r->config.value);
    if (!value)
        return -ENOMEM;
    if (at < t->configs_count) {
        free(t->values[at]);
        t->values[at] = value;
        return 0;
    }
    if (t->configs_count == MI_CONFIGS_MAX) {
        free(value);
        return MI_E_REJECTED;
    }
    char *key = dup_str(r->config.key);
    char **keys = realloc(t->keys, (t->configs_count + 1) * sizeof(char *));
    if (keys)
        t->keys = keys;
    char **values = keys ? realloc(t->values, (t->configs_count + 1) * sizeof(char *)) : NULL;
    if (values)
        t->values = values;
    if (!key || !keys || !values) {
        free(key);
        free(value);
        return -ENOMEM;
    }
    t->keys[t->configs_count] = key;
    t->values[t->configs_count] = value;
    t->configs_count++;
    return 0;
}

static int apply_record(struct metadata_image *img, uint64_t index, const struct mi_record *r)
{
    switch (r->type) {
    case MI_REGISTER_BROKER: {
        unsigned at = 0;
        while (at < img->brokers_count && img->brokers[at].id < r->reg.node_id)
            at++;
        if (at == img->brokers_count || img->brokers[at].id != r->reg.node_id) {
            if (img->brokers_count == MI_BROKERS_MAX)
                return MI_E_REJECTED;
            struct mi_broker *nb =
                realloc(img->brokers, (img->brokers_count + 1) * sizeof(*img->brokers));
            if (!nb)
                return -ENOMEM;
            img->brokers = nb;
            memmove(&nb[at + 1], &nb[at], (img->brokers_count - at) * sizeof(*nb));
            img->brokers_count++;
        }
        struct mi_broker *b = &img->brokers[at];
        memset(b, 0, sizeof(*b));
        b->id = r->reg.node_id;
        b->port = r->reg.port;
        memcpy(b->host, r->reg.host.p, r->reg.host.len);
        b->epoch = r->reg.epoch == -1 ? (int64_t)index : r->reg.epoch;
        b->fenced = false;
        return 0;
    }
    case MI_FENCE_BROKER: {
        struct mi_broker *b = (struct mi_broker *)metadata_image_broker(img, r->fence.node_id);
        if (!b)
            return MI_E_REJECTED;
        b->fenced = r->fence.fenced;
        return 0;
    }
    case MI_TOPIC: {
        struct mi_topic *t = topic_by_id(img, r->topic.id, NULL);
        char name[MI_TOPIC_NAME_MAX + 1];
        memcpy(name, r->topic.name.p, r->topic.name.len);
        name[r->topic.name.len] = '\0';
        const struct mi_topic *by_name = metadata_image_topic(img, name);
        if (t) /* an update of its configs: same id, same name */
            return by_name == t ? topic_set_configs(t, r) : MI_E_REJECTED;
        if (by_name || img->topics_count == MI_TOPICS_MAX)
            return MI_E_REJECTED;
        if (img->topics_count == img->topics_cap) {
            unsigned cap = img->topics_cap ? 2 * img->topics_cap : 16;
            struct mi_topic **nt = realloc(img->topics, cap * sizeof(*nt));
            if (!nt)
                return -ENOMEM;
            img->topics = nt;
            img->topics_cap = cap;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
            return -ENOMEM;
        memcpy(t->id, r->topic.id, 16);
        memcpy(t->name, name, sizeof(name));
        if (topic_set_configs(t, r) != 0) {
            free(t);
            return -ENOMEM;
        }
        img->topics[img->topics_count++] = t;
        return 0;
    }
    case MI_PARTITION: {
        struct mi_topic *t = topic_by_id(img, r->partition.topic_id, NULL);
        if (!t || r->partition.partition > t->partitions_count)
            return MI_E_REJECTED; /* unknown topic, or a gap in the partitions */
        if (r->partition.partition == t->partitions_count) {
            struct mi_partition *np =
                realloc(t->partitions, ((size_t)t->partitions_count + 1) * sizeof(*np));
            if (!np)
                return -ENOMEM;
            t->partitions = np;
            memset(&np[t->partitions_count], 0, sizeof(*np));
            t->partitions_count++;
        }
        struct mi_partition *p = &t->partitions[r->partition.partition];
        if (p->exists && r->partition.leader_epoch < p->leader_epoch)
            return MI_E_REJECTED;              /* a stale change: leader epochs never go back */
        if (r->partition.partition_epoch >= 0) /* MI8: a snapshot's, as saved */
            p->partition_epoch = r->partition.partition_epoch;
        else if (p->exists && p->partition_epoch < INT32_MAX)
            p->partition_epoch++; /* MI8: every change after the first record */
        else if (!p->exists)
            p->partition_epoch = 0;
        p->exists = true;
        p->leader = r->partition.leader;
        p->leader_epoch = r->partition.leader_epoch;
        p->replicas_count = r->partition.replicas_count;
        p->isr_count = r->partition.isr_count;
        for (unsigned i = 0; i < p->replicas_count; i++)
            p->replicas[i] = mi_i32_at(r->partition.replicas, i);
        for (unsigned i = 0; i < p->isr_count; i++)
            p->isr[i] = mi_i32_at(r->partition.isr, i);
        return 0;
    }
    case MI_DELETE_TOPIC: {
        unsigned at = 0;
        struct mi_topic *t = topic_by_id(img, r->del.topic_id, &at);
        if (!t)
            return MI_E_REJECTED;
        topic_free(t);
        memmove(&img->topics[at], &img->topics[at + 1],
                (img->topics_count - at - 1) * sizeof(*img->topics));
        img->topics_count--;
        return 0;
    }
    case MI_CONFIG:
        return apply_config(img, r);
    case MI_PRODUCER_IDS:
        if (r->pids.next_producer_id <= img->next_producer_id)
            return MI_E_REJECTED; /* MI4 */
        img->next_producer_id = r->pids.next_producer_id;
        img->producer_ids_broker = r->pids.broker_id;
        return 0;
    default:
        return MI_E_CORRUPT; /* decode admits none other */
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}
#define FNV_BASIS 14695981039346656037ull

/* MI9: the BATCH's records applied to a copy of the image, which replaces it only when every
 * one applied. O(image) for the copy: a BATCH is a CreateTopics or a CreatePartitions. */
static int apply_batch(struct metadata_image *img, uint64_t index, const struct mi_record *r)
{
    void *snap = NULL;
    size_t snap_len = 0;
    int rc = metadata_image_snapshot(img, &snap, &snap_len);
    if (rc)
        return -ENOMEM;
    struct metadata_image copy;
    metadata_image_init(&copy);
    rc = metadata_image_restore(&copy, snap, snap_len, NULL, 0);
    free(snap);
    if (rc) { /* MI3: the image's own snapshot restores; only memory can fail it */
        metadata_image_free(&copy);
        return -ENOMEM;
    }
    size_t at = 0;
    const uint8_t *rec;
    size_t len;
    while (rc == 0 && mi_batch_next(r, &at, &rec, &len)) {
        struct mi_record in;
        rc = mi_record_decode(rec, len, &in, NULL, 0);
        assert(rc == 0); /* MI9: checked when the BATCH decoded */
        rc = apply_record(&copy, index, &in);
    }
    if (rc) {
        metadata_image_free(&copy);
        return rc;
    }
    copy.last_index = img->last_index; /* the counters are the BATCH's, kept by the caller */
    copy.records_applied = img->records_applied;
    copy.records_rejected = img->records_rejected;
    copy.chain = img->chain;
    metadata_image_free(img);
    *img = copy;
    return 0;
}

int metadata_image_apply(struct metadata_image *img, uint64_t index, const void *rec, size_t len)
{
    struct mi_record r;
    int rc = mi_record_decode(rec, len, &r, NULL, 0);
    if (rc == 0)
        rc = r.type == MI_BATCH ? apply_batch(img, index, &r) : apply_record(img, index, &r);
    if (rc == -ENOMEM)
        return rc;
    uint8_t ib[8];
    for (int i = 0; i < 8; i++)
        ib[i] = (uint8_t)(index >> (56 - 8 * i));
    img->chain = fnv(fnv(img->chain ? img->chain : FNV_BASIS, ib, 8), rec, len);
    img->records_applied++;
    if (rc != 0)
        img->records_rejected++;
    if (index > img->last_index)
        img->last_index = index;
    return rc;
}

/* ---- snapshot (L.4) ---- */

struct sw {
    struct wr w;
    uint32_t count;
};

static bool sw_grow(struct sw *s, size_t need)
{
    if (s->w.cap - s->w.at >= need)
        return true;
    size_t cap = s->w.cap ? s->w.cap : 4096;
    while (cap - s->w.at < need)
        cap *= 2;
    uint8_t *p = realloc(s->w.p, cap);
    if (!p)
        return false;
    s->w.p = p;
    s->w.cap = cap;
    return true;
}

/* One record, length-prefixed; enc fills at most `max` bytes. */
static uint8_t *sw_begin(struct sw *s, size_t max)
{
    if (!sw_grow(s, 4 + max))
        return NULL;
    return s->w.p + s->w.at + 4;
}
static void sw_end(struct sw *s, size_t n)
{
    assert(n > 0);
    uint8_t *p = s->w.p + s->w.at;
    p[0] = (uint8_t)(n >> 24);
    p[1] = (uint8_t)(n >> 16);
    p[2] = (uint8_t)(n >> 8);
    p[3] = (uint8_t)n;
    s->w.at += 4 + n;
    s->count++;
}

int metadata_image_snapshot(const struct metadata_image *img, void **buf, size_t *len)
{
    struct sw s = {{NULL, 0, 0, false}, 0};
    if (!sw_grow(&s, MI_SNAPSHOT_HEADER))
        return -ENOMEM;
    s.w.at = MI_SNAPSHOT_HEADER;
    for (unsigned i = 0; i < img->brokers_count; i++) {
        const struct mi_broker *b = &img->brokers[i];
        uint8_t *p = sw_begin(&s, 32 + MI_HOST_BYTES_MAX);
        if (!p)
            goto err;
        size_t n =
            mi_encode_register_broker(p, 32 + MI_HOST_BYTES_MAX, b->id, b->epoch, b->host, b->port);
        sw_end(&s, n);
        if (b->fenced) {
            if (!(p = sw_begin(&s, 16)))
                goto err;
            sw_end(&s, mi_encode_fence_broker(p, 16, b->id, true));
        }
    }
    for (unsigned i = 0; i < img->topics_count; i++) {
        const struct mi_topic *t = img->topics[i];
        size_t max = 32 + MI_TOPIC_NAME_MAX;
        for (unsigned k = 0; k < t->configs_count; k++)
            max += 4 + strlen(t->keys[k]) + strlen(t->values[k]);
        uint8_t *p = sw_begin(&s, max);
        if (!p)
            goto err;
        sw_end(&s, mi_encode_topic(p, max, t->id, t->name, (const char *const *)t->keys,
                                   (const char *const *)t->values, t->configs_count));
        for (int32_t k = 0; k < t->partitions_count; k++) {
            const struct mi_partition *pa = &t->partitions[k];
            assert(pa->exists);
            size_t pmax = 40 + 8 * MI_REPLICAS_MAX;
            if (!(p = sw_begin(&s, pmax)))
                goto err;
            sw_end(&s, mi_encode_partition_v1(p, pmax, t->id, k, pa->replicas, pa->replicas_count,
                                              pa->leader, pa->leader_epoch, pa->isr, pa->isr_count,
                                              pa->partition_epoch));
        }
    }
    if (img->next_producer_id > 0) {
        uint8_t *p = sw_begin(&s, 16);
        if (!p)
            goto err;
        sw_end(&s, mi_encode_producer_ids(
                       p, 16, img->producer_ids_broker < 0 ? 0 : img->producer_ids_broker,
                       img->next_producer_id));
    }
    if (!sw_grow(&s, 4))
        goto err;
    size_t body = s.w.at;
    s.w.at = 0;
    wr_u32(&s.w, MI_SNAPSHOT_MAGIC);
    wr_u16(&s.w, 1);
    wr_u16(&s.w, 0);
    wr_u64(&s.w, img->last_index);
    wr_u64(&s.w, img->records_applied);
    wr_u64(&s.w, img->records_rejected);
    wr_u64(&s.w, img->chain);
    wr_u32(&s.w, s.count);
    assert(s.w.at == MI_SNAPSHOT_HEADER);
    s.w.at = body;
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, s.w.p, (uInt)body);
    wr_u32(&s.w, (uint32_t)c);
    assert(!s.w.bad);
    *buf = s.w.p;
    *len = s.w.at;
    return 0;
err:
    free(s.w.p);
    return -ENOMEM;
}

int metadata_image_restore(struct metadata_image *img, const void *buf, size_t len, char *err,
                           size_t err_len)
{
    if (len < MI_SNAPSHOT_HEADER + 4)
        return corrupt(err, err_len, "snapshot of %zu bytes (at least 48)", len);
    const uint8_t *b = buf;
    if (len - 4 > UINT32_MAX)
        return corrupt(err, err_len, "snapshot of %zu bytes", len);
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, b, (uInt)(len - 4));
    if ((uint32_t)c != get_u32(b + len - 4))
        return corrupt(err, err_len, "snapshot CRC mismatch");
    struct rd r = {b, len - 4, 0, false};
    uint32_t magic = rd_u32(&r);
    uint16_t version = rd_u16(&r), reserved = rd_u16(&r);
    uint64_t last_index = rd_u64(&r), applied = rd_u64(&r), rejected = rd_u64(&r);
    uint64_t chain = rd_u64(&r);
    uint32_t count = rd_u32(&r);
    if (magic != MI_SNAPSHOT_MAGIC || version != 1 || reserved != 0)
        return corrupt(err, err_len, "snapshot: bad magic, version or reserved field");
    if (rejected > applied)
        return corrupt(err, err_len, "snapshot: more records rejected than applied");
    struct metadata_image fresh;
    metadata_image_init(&fresh);
    int rc = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t n = rd_u32(&r);
        const uint8_t *p = rd_bytes(&r, n);
        if (r.bad) {
            rc = corrupt(err, err_len, "snapshot: record %u truncated", i);
            break;
        }
        struct mi_record rec;
        rc = mi_record_decode(p, n, &rec, err, err_len);
        if (rc == 0)
            rc = apply_record(&fresh, last_index, &rec);
        if (rc == MI_E_REJECTED)
            rc = corrupt(err, err_len, "snapshot: record %u does not apply", i);
        if (rc != 0)
            break;
    }
    if (rc == 0 && r.at != r.n)
        rc = corrupt(err, err_len, "snapshot: %zu bytes after record %u", r.n - r.at, count);
    if (rc != 0) {
        metadata_image_free(&fresh);
        return rc;
    }
    fresh.last_index = last_index;
    fresh.records_applied = applied;
    fresh.records_rejected = rejected;
    fresh.chain = chain;
    metadata_image_free(img);
    *img = fresh;
    return 0;
}

uint64_t metadata_image_digest(const struct metadata_image *img)
{
    void *buf = NULL;
    size_t len = 0;
    if (metadata_image_snapshot(img, &buf, &len) != 0)
        return 0;
    uint64_t h = fnv(FNV_BASIS, buf, len);
    free(buf);
    return h;
}

/* ---- placement (MI5) ---- */

int mi_place_replicas(const int32_t *brokers, unsigned n, unsigned partitions, unsigned rf,
                      unsigned start, unsigned shift, int32_t *out)
{
    return mi_place_replicas_from(brokers, n, 0, partitions, rf, start, shift, out);
}

int mi_place_replicas_from(const int32_t *brokers, unsigned n, unsigned from, unsigned count,
                           unsigned rf, unsigned start, unsigned shift, int32_t *out)
{
    if (rf == 0 || rf > n)
        return -EINVAL;
    start %= n;
    shift %= n;
    for (unsigned i = 0; i < count; i++) {
        unsigned p = from + i;
        if (p > 0 && p % n == 0)
            shift++;
        unsigned first = (p + start) % n;
        out[(size_t)i * rf] = brokers[first];
        for (unsigned j = 0; j + 1 < rf; j++) {
            unsigned step = 1 + (shift + j) % (n - 1);
            out[(size_t)i * rf + 1 + j] = brokers[(first + step) % n];
        }
    }
    return 0;
}

unsigned mi_leaderships(const struct metadata_image *img, int32_t broker)
{
    unsigned count = 0;
    for (unsigned t = 0; t < img->topics_count; t++)
        for (int32_t p = 0; p < img->topics[t]->partitions_count; p++)
            count += img->topics[t]->partitions[p].leader == broker;
    return count;
}

/* ---- leadership moves (MI6) ---- */

static bool broker_live(const struct metadata_image *img, int32_t id)
{
    const struct mi_broker *b = metadata_image_broker(img, id);
    return b && !b->fenced;
}

unsigned mi_plan_leaders(const struct metadata_image *img, int32_t fenced,
                         void (*emit)(void *ctx, const uint8_t *rec, size_t len), void *ctx)
{
    unsigned count = 0;
    uint8_t rec[64 + 8 * MI_REPLICAS_MAX];
    for (unsigned t = 0; t < img->topics_count; t++) {
        const struct mi_topic *topic = img->topics[t];
        for (int32_t p = 0; p < topic->partitions_count; p++) {
            const struct mi_partition *mp = &topic->partitions[p];
            int32_t isr[MI_REPLICAS_MAX];
            unsigned n = 0;
            bool in_isr = false;
            for (unsigned i = 0; i < mp->isr_count; i++) {
                if (mp->isr[i] == fenced)
                    in_isr = true;
                else
                    isr[n++] = mp->isr[i];
            }
            if (fenced >= 0 ? !in_isr : mp->leader != -1)
                continue;
            if (n == 0) { /* the last ISR member stays (Kafka's rule: never empty an ISR) */
                if (fenced < 0 || mp->leader != fenced)
                    continue;
                isr[n++] = fenced;
            }
            int32_t leader = mp->leader;
            if (leader == -1 || leader == fenced) {
                leader = -1;
                for (unsigned i = 0; i < n && leader == -1; i++)
                    if (broker_live(img, isr[i]))
                        leader = isr[i];
                if (fenced < 0 && leader == -1)
                    continue; /* still nobody to lead */
            }
            if (mp->leader_epoch == INT32_MAX)
                continue;
            size_t len =
                mi_encode_partition(rec, sizeof rec, topic->id, p, mp->replicas, mp->replicas_count,
                                    leader, mp->leader_epoch + 1, isr, n);
            if (len) {
                emit(ctx, rec, len);
                count++;
            }
        }
    }
    return count;
}
