/*
 * group.c — consumer-group offsets kept in the internal topic `__consumer_offsets` (Kafka's
 * GroupMetadataManager: offsets, and each group's latest membership record, whose meaning is the
 * broker's group coordinator's). It owns the
 * in-memory committed offsets, the transactional offsets held pending per producer until their
 * transaction's marker, and the checkpoint compaction of the topic's partitions. It must never
 * apply an offset that is not in the log, and never write a marker (the coordinator does).
 *
 * Records (docs/format.md §H is normative; Kafka's OffsetCommitKey.json / OffsetCommitValue.json
 * in group-coordinator/src/main/resources/common/message/, written as GroupMetadataManager.scala
 * offsetCommitKey / offsetCommitValue do). Integers big-endian; STRING = i16 length (>= 0) +
 * UTF-8 bytes:
 *
 *   key   version i16 | group STRING | topic STRING | partition i32
 *         version 1 (0 is the legacy offset key, same layout, read); version 2 is Kafka's group
 *         metadata key (group STRING only), its value a GroupMetadataValue v0-3 (H.6: the latest
 *         per group kept and replayed, written by group_store_meta); >= 3 are other coordinator
 *         record types: skipped.
 *   value version i16 = 3 (written): offset i64 | leaderEpoch i32 (-1) | metadata STRING |
 *         commitTimestamp i64. Read: v0 and v2 (offset | metadata | commitTimestamp), v1 (... |
 *         expireTimestamp i64), v3. v4 is flexible (tagged fields); Kafka itself serialises v3,
 *         "the highest supported non-flexible version", and so does ringtail.
 *   null value: a tombstone (the key's committed offset is deleted).
 *
 * Plain commits are one non-transactional batch (producerId -1); a transactional commit is one
 * batch with attributes TRANSACTIONAL, the producer's id and epoch and baseSequence -1 (Kafka's
 * TxnOffsetCommit), appended with log_append_coordinator, which fences stale epochs.
 *
 * Invariants (tests name them):
 *   GO1. Nothing is applied before its record is appended (acknowledged under the sync mode).
 *   GO2. A key is unstable iff some producer holds a pending offset for it; a producer holds at
 *        most one pending offset per key (a later one in the same transaction replaces it).
 *   GO3. A pending offset becomes the committed one only if the key has none or the committed
 *        one's record lies earlier in the log (Kafka's CommitRecordMetadataAndOffset.olderThan),
 *        so the moment group_txn_complete runs relative to later plain commits does not matter.
 *   GO4. Replay applies the same rules at the same log positions as the live path (a marker in
 *        partition k resolves the producer's pending offsets of partition k), so a restart
 *        reproduces the live state, including transactions still open at a crash.
 *   GO5. An entry exists iff it is committed or pending; memory is bounded by what is stored.
 *   GO6. Compaction runs only when no pending offset lives in the partition; its checkpoint
 *        restates every live key of the partition, so dropping the log before it changes nothing
 *        a replay computes (a crash anywhere in it leaves a log that replays to the same state).
 *   GO7. A deletion (group_delete: DeleteGroups, OffsetDelete) appends one plain batch of
 *        tombstones (null values) for the committed keys it deletes, and for a whole group its
 *        metadata key, before it drops them from memory (GO1); replay drops a key at its
 *        tombstone, and compaction does not restate it, so a deleted key stays deleted.
 *   GO8. Replication (log partition.h RL6; ringtail.h rt_partition_resign): the manager holds
 *        state only for the offsets partitions it leads (led[k], every one from open on). A
 *        request naming a group of a partition it does not lead answers RT_E_NOT_COORDINATOR
 *        and changes nothing; a followed partition is never compacted. Unloading a partition
 *        drops every key, pending item and metadata record of it under the lock, so no request
 *        sees half of it; loading replays it exactly as open does (GO4), to the log end.
 *
 * Costs: commits and fetches are O(1) expected (chained hash on group, topic, partition); a
 * completion is O(offsets of that producer). One mutex serialises everything, held across the
 * append so that log order equals apply order (GO4).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "records.h"
#include "group.h"
#include "group_codec.h"
#include "log.h"

#define GROUP_KEY_VERSION_LEGACY   0
#define GROUP_KEY_VERSION_OFFSET   1
#define GROUP_KEY_VERSION_METADATA 2
#define GROUP_VALUE_VERSION        3
#define GROUP_VALUE_VERSION_MAX    3
#define GROUP_STRING_MAX_BYTES     INT16_MAX
#define GROUP_METADATA_MAX_BYTES   RT_OFFSET_METADATA_MAX_BYTES
#define GROUP_BUCKETS_INITIAL      64
#define GROUP_PRODUCER_BUCKETS     64
#define GROUP_REPLAY_FETCH_BYTES   (1u << 20)
/* Compaction: when a partition's log holds more than RATIO times its live keys (and at least
 * RECORDS_MIN records) over at least SEGMENTS_MIN segments. */
#define GROUP_COMPACT_RATIO        4
#define GROUP_COMPACT_RECORDS_MIN  16
#define GROUP_COMPACT_SEGMENTS_MIN 3

_Static_assert(GROUP_OFFSETS_PARTITIONS > 0, "at least one offsets partition");
_Static_assert(GROUP_NAME_MAX_BYTES <= GROUP_STRING_MAX_BYTES, "a group name fits a STRING");
_Static_assert(RT_TOPIC_NAME_MAX <= GROUP_STRING_MAX_BYTES, "a topic name fits a STRING");

/* ---- the codec (also driven by fuzz/fuzz_offsets.c and tests/test_group.c, which mirror these
 * two structs) ---- */

struct reader {
    const uint8_t *p;
    const uint8_t *end;
};

static bool read_i16(struct reader *r, int16_t *out)
{
    if (r->end - r->p < 2)
        return false;
    *out = (int16_t)be16_load(r->p);
    r->p += 2;
    return true;
}

static bool read_i32(struct reader *r, int32_t *out)
{
    if (r->end - r->p < 4)
        return false;
    *out = (int32_t)be32_load(r->p);
    r->p += 4;
    return true;
}

static bool read_i64(struct reader *r, int64_t *out)
{
    if (r->end - r->p < 8)
        return false;
    *out = (int64_t)be64_load(r->p);
    r->p += 8;
    return true;
}

/* A non-nullable STRING: a negative length is damage (Kafka: "non-nullable field"). */
static bool read_string(struct reader *r, const uint8_t **s, uint16_t *len)
{
    int16_t n;
    if (!read_i16(r, &n) || n < 0 || r->end - r->p < n)
        return false;
    *s = r->p;
    *len = (uint16_t)n;
    r->p += n;
    return true;
}

int group_key_decode(const uint8_t *buf, size_t len, struct group_offset_key *out, const char **why)
{
    struct reader r = {buf, buf + len};
    memset(out, 0, sizeof(*out));
    out->partition = -1;
    if (!buf || !read_i16(&r, &out->version)) {
        *why = "key shorter than its version";
        return RT_E_CORRUPT;
    }
    if (out->version < 0 || out->version > GROUP_KEY_VERSION_METADATA) {
        *why = "unknown key version";
        return RT_E_UNSUPPORTED;
    }
    if (!read_string(&r, &out->group, &out->group_len)) {
        *why = "key group string truncated or negative";
        return RT_E_CORRUPT;
    }
    if (out->version != GROUP_KEY_VERSION_METADATA) {
        if (!read_string(&r, &out->topic, &out->topic_len)) {
            *why = "key topic string truncated or negative";
            return RT_E_CORRUPT;
        }
        if (!read_i32(&r, &out->partition)) {
            *why = "key partition truncated";
            return RT_E_CORRUPT;
        }
        if (out->partition < 0) {
            *why = "key partition negative";
            return RT_E_CORRUPT;
        }
    }
    if (r.p != r.end) {
        *why = "bytes after the key";
        return RT_E_CORRUPT;
    }
    return 0;
}

static uint8_t *put_string(uint8_t *p, const uint8_t *s, uint16_t len)
{
    be16_store(p, len);
    if (len)
        memcpy(p + 2, s, len);
    return p + 2 + len;
}

static size_t key_size(const struct group_offset_key *k)
{
    size_t n = 2 + 2 + (size_t)k->group_len;
    if (k->version != GROUP_KEY_VERSION_METADATA)
        n += 2 + (size_t)k->topic_len + 4;
    return n;
}

int group_key_encode(const struct group_offset_key *k, uint8_t *buf, size_t cap, size_t *len_out)
{
    if (k->version < 0 || k->version > GROUP_KEY_VERSION_METADATA ||
        k->group_len > GROUP_STRING_MAX_BYTES || k->topic_len > GROUP_STRING_MAX_BYTES)
        return RT_E_INVALID_ARGUMENT;
    size_t n = key_size(k);
    if (n > cap)
        return -ENOSPC;
    uint8_t *p = buf;
    be16_store(p, (uint16_t)k->version);
    p = put_string(p + 2, k->group, k->group_len);
    if (k->version != GROUP_KEY_VERSION_METADATA) {
        p = put_string(p, k->topic, k->topic_len);
        be32_store(p, (uint32_t)k->partition);
        p += 4;
    }
    assert((size_t)(p - buf) == n);
    *len_out = n;
    return 0;
}

int group_value_decode(const uint8_t *buf, size_t len, struct group_offset_value *out,
                       const char **why)
{
    struct reader r = {buf, buf + len};
    memset(out, 0, sizeof(*out));
    out->leader_epoch = -1;
    out->expire_timestamp = -1;
    if (!buf || !read_i16(&r, &out->version)) {
        *why = "value shorter than its version";
        return RT_E_CORRUPT;
    }
    if (out->version < 0 || out->version > GROUP_VALUE_VERSION_MAX) {
        *why = "unknown value version (ringtail reads 0-3; 4+ are flexible)";
        return RT_E_CORRUPT;
    }
    bool ok = read_i64(&r, &out->offset);
    if (ok && out->version >= 3)
        ok = read_i32(&r, &out->leader_epoch);
    if (ok)
        ok = read_string(&r, &out->metadata, &out->metadata_len);
    if (ok)
        ok = read_i64(&r, &out->commit_timestamp);
    if (ok && out->version == 1)
        ok = read_i64(&r, &out->expire_timestamp);
    if (!ok) {
        *why = "value truncated or negative metadata length";
        return RT_E_CORRUPT;
    }
    if (r.p != r.end) {
        *why = "bytes after the value";
        return RT_E_CORRUPT;
    }
    return 0;
}

static size_t value_size(const struct group_offset_value *v)
{
    size_t n = 2 + 8 + 2 + (size_t)v->metadata_len + 8;
    if (v->version >= 3)
        n += 4;
    if (v->version == 1)
        n += 8;
    return n;
}

int group_value_encode(const struct group_offset_value *v, uint8_t *buf, size_t cap,
                       size_t *len_out)
{
    if (v->version < 0 || v->version > GROUP_VALUE_VERSION_MAX ||
        v->metadata_len > GROUP_STRING_MAX_BYTES)
        return RT_E_INVALID_ARGUMENT;
    size_t n = value_size(v);
    if (n > cap)
        return -ENOSPC;
    uint8_t *p = buf;
    be16_store(p, (uint16_t)v->version);
    be64_store(p + 2, (uint64_t)v->offset);
    p += 10;
    if (v->version >= 3) {
        be32_store(p, (uint32_t)v->leader_epoch);
        p += 4;
    }
    p = put_string(p, v->metadata, v->metadata_len);
    be64_store(p, (uint64_t)v->commit_timestamp);
    p += 8;
    if (v->version == 1) {
        be64_store(p, (uint64_t)v->expire_timestamp);
        p += 8;
    }
    assert((size_t)(p - buf) == n);
    *len_out = n;
    return 0;
}

/* ---- GroupMetadataValue (key version 2), docs/format.md H.6 ---- */

#define GROUP_META_VERSION     3
#define GROUP_META_VERSION_MAX 3
#define GROUP_META_MEMBERS_MAX 100000

/* A nullable STRING: length -1 is null. */
static bool read_nstring(struct reader *r, const uint8_t **s, int16_t *len)
{
    int16_t n;
    if (!read_i16(r, &n) || n < -1 || r->end - r->p < (n > 0 ? n : 0))
        return false;
    *s = n >= 0 ? r->p : NULL;
    *len = n;
    if (n > 0)
        r->p += n;
    return true;
}

static bool read_str16(struct reader *r, const uint8_t **s, int16_t *len)
{
    uint16_t n = 0;
    if (!read_string(r, s, &n))
        return false;
    *len = (int16_t)n;
    return true;
}

static bool read_bytes32(struct reader *r, const uint8_t **s, int32_t *len)
{
    int32_t n;
    if (!read_i32(r, &n) || n < 0 || r->end - r->p < n)
        return false;
    *s = r->p;
    *len = n;
    r->p += n;
    return true;
}

static bool read_member(struct reader *r, int16_t version, struct group_meta_member *m)
{
    memset(m, 0, sizeof(*m));
    m->instance_id_len = -1;
    m->rebalance_timeout_ms = -1;
    bool ok = read_str16(r, &m->member_id, &m->member_id_len);
    if (ok && version >= 3)
        ok = read_nstring(r, &m->instance_id, &m->instance_id_len);
    ok = ok && read_str16(r, &m->client_id, &m->client_id_len) &&
         read_str16(r, &m->client_host, &m->client_host_len);
    if (ok && version >= 1)
        ok = read_i32(r, &m->rebalance_timeout_ms);
    return ok && read_i32(r, &m->session_timeout_ms) &&
           read_bytes32(r, &m->subscription, &m->subscription_len) &&
           read_bytes32(r, &m->assignment, &m->assignment_len);
}

int group_meta_value_decode(const uint8_t *buf, size_t len, struct group_meta_value *out,
                            const char **why)
{
    struct reader r = {buf, buf + len};
    memset(out, 0, sizeof(*out));
    out->current_state_timestamp = -1;
    if (!buf || !read_i16(&r, &out->version)) {
        *why = "group metadata shorter than its version";
        return RT_E_CORRUPT;
    }
    if (out->version < 0 || out->version > GROUP_META_VERSION_MAX) {
        *why = "unknown group metadata version (ringtail reads 0-3; 4+ are flexible)";
        return RT_E_CORRUPT;
    }
    bool ok = read_str16(&r, &out->protocol_type, &out->protocol_type_len) &&
              read_i32(&r, &out->generation) &&
              read_nstring(&r, &out->protocol, &out->protocol_len) &&
              read_nstring(&r, &out->leader, &out->leader_len);
    if (ok && out->version >= 2)
        ok = read_i64(&r, &out->current_state_timestamp);
    if (ok)
        ok = read_i32(&r, &out->members_count) && out->members_count >= 0;
    out->members_at = r.p;
    for (int32_t i = 0; ok && i < out->members_count; i++) {
        struct group_meta_member m;
        ok = read_member(&r, out->version, &m);
    }
    if (!ok) {
        *why = "group metadata truncated or a negative length";
        return RT_E_CORRUPT;
    }
    if (r.p != r.end) {
        *why = "bytes after the group metadata";
        return RT_E_CORRUPT;
    }
    out->end = r.end;
    return 0;
}

void group_meta_member_at(const struct group_meta_value *v, int32_t i,
                          struct group_meta_member *out)
{
    assert(i >= 0 && i < v->members_count);
    struct reader r = {v->members_at, v->end};
    for (int32_t k = 0; k <= i; k++) {
        bool ok = read_member(&r, v->version, out);
        assert(ok); /* validated by group_meta_value_decode */
        (void)ok;
    }
}

static size_t member_size(int16_t version, const struct group_meta_member *m)
{
    size_t n = 2 + (size_t)m->member_id_len + 2 + (size_t)m->client_id_len + 2 +
               (size_t)m->client_host_len + 4 + 4 + (size_t)m->subscription_len + 4 +
               (size_t)m->assignment_len;
    if (version >= 3)
        n += 2 + (size_t)(m->instance_id_len > 0 ? m->instance_id_len : 0);
    if (version >= 1)
        n += 4;
    return n;
}

size_t group_meta_value_size(const struct group_meta_value *v,
                             const struct group_meta_member *members)
{
    size_t n = 2 + 2 + (size_t)v->protocol_type_len + 4 + 2 +
               (size_t)(v->protocol_len > 0 ? v->protocol_len : 0) + 2 +
               (size_t)(v->leader_len > 0 ? v->leader_len : 0) + 4;
    if (v->version >= 2)
        n += 8;
    for (int32_t i = 0; i < v->members_count; i++)
        n += member_size(v->version, &members[i]);
    return n;
}

static uint8_t *put_nstring(uint8_t *p, const uint8_t *s, int16_t len)
{
    be16_store(p, (uint16_t)len);
    if (len > 0)
        memcpy(p + 2, s, (size_t)len);
    return p + 2 + (len > 0 ? len : 0);
}

static uint8_t *put_bytes32(uint8_t *p, const uint8_t *s, int32_t len)
{
    be32_store(p, (uint32_t)len);
    if (len > 0)
        memcpy(p + 4, s, (size_t)len);
    return p + 4 + len;
}

int group_meta_value_encode(const struct group_meta_value *v,
                            const struct group_meta_member *members, uint8_t *buf, size_t cap,
                            size_t *len_out)
{
    if (v->version < 0 || v->version > GROUP_META_VERSION_MAX || v->protocol_type_len < 0 ||
        v->members_count < 0 || (v->members_count > 0 && !members))
        return RT_E_INVALID_ARGUMENT;
    for (int32_t i = 0; i < v->members_count; i++) {
        const struct group_meta_member *m = &members[i];
        if (m->member_id_len < 0 || m->client_id_len < 0 || m->client_host_len < 0 ||
            m->subscription_len < 0 || m->assignment_len < 0 ||
            (v->version < 3 && m->instance_id_len >= 0))
            return RT_E_INVALID_ARGUMENT;
    }
    size_t n = group_meta_value_size(v, members);
    if (n > cap)
        return -ENOSPC;
    uint8_t *p = buf;
    be16_store(p, (uint16_t)v->version);
    p = put_nstring(p + 2, v->protocol_type, v->protocol_type_len);
    be32_store(p, (uint32_t)v->generation);
    p = put_nstring(p + 4, v->protocol, v->protocol_len);
    p = put_nstring(p, v->leader, v->leader_len);
    if (v->version >= 2) {
        be64_store(p, (uint64_t)v->current_state_timestamp);
        p += 8;
    }
    be32_store(p, (uint32_t)v->members_count);
    p += 4;
    for (int32_t i = 0; i < v->members_count; i++) {
        const struct group_meta_member *m = &members[i];
        p = put_nstring(p, m->member_id, m->member_id_len);
        if (v->version >= 3)
            p = put_nstring(p, m->instance_id, m->instance_id_len);
        p = put_nstring(p, m->client_id, m->client_id_len);
        p = put_nstring(p, m->client_host, m->client_host_len);
        if (v->version >= 1) {
            be32_store(p, (uint32_t)m->rebalance_timeout_ms);
            p += 4;
        }
        be32_store(p, (uint32_t)m->session_timeout_ms);
        p = put_bytes32(p + 4, m->subscription, m->subscription_len);
        p = put_bytes32(p, m->assignment, m->assignment_len);
    }
    assert((size_t)(p - buf) == n);
    *len_out = n;
    return 0;
}

/* ---- placement: Java's String.hashCode over UTF-16 code units ---- */

/* The next code point of [*p, end), advancing *p. Malformed input yields U+FFFD for its
 * maximal subpart (Unicode §3.9, what Java's UTF-8 decoder substitutes), so every byte string
 * has a defined hash. *valid is cleared on malformed input. */
static uint32_t utf8_next(const uint8_t **p, const uint8_t *end, bool *valid)
{
    const uint8_t *s = *p;
    uint8_t b = *s++;
    if (b < 0x80) {
        *p = s;
        return b;
    }
    int need;
    uint32_t cp;
    uint8_t lo = 0x80, hi = 0xBF; /* range of the first continuation byte */
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        cp = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        cp = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        *valid = false;
        *p = s;
        return 0xFFFD;
    }
    for (int i = 0; i < need; i++) {
        if (s == end || *s < lo || *s > hi) {
            *valid = false;
            *p = s; /* the offending byte starts the next sequence */
            return 0xFFFD;
        }
        cp = cp << 6 | (*s++ & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *p = s;
    return cp;
}

static int32_t java_string_hash(const uint8_t *s, size_t len, bool *valid)
{
    uint32_t h = 0; /* Java int arithmetic: wraps */
    const uint8_t *p = s, *end = s + len;
    *valid = true;
    while (p < end) {
        uint32_t cp = utf8_next(&p, end, valid);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xD800 + (cp >> 10));
            h = 31 * h + (0xDC00 + (cp & 0x3FF));
        } else {
            h = 31 * h + cp;
        }
    }
    return (int32_t)h;
}

int32_t group_java_hash(const char *s, size_t len)
{
    bool valid;
    return java_string_hash((const uint8_t *)s, len, &valid);
}

uint32_t group_partition_for(const char *group)
{
    assert(group);
    return group_partition_of(group, strlen(group));
}

uint32_t group_partition_of(const char *group, size_t len)
{
    assert(group || len == 0);
    bool valid;
    int32_t h = java_string_hash((const uint8_t *)group, len, &valid);
    /* Kafka's Utils.abs: Integer.MIN_VALUE maps to 0, not to itself. */
    uint32_t a = h == INT32_MIN ? 0 : (uint32_t)(h < 0 ? -h : h);
    uint32_t k = a % GROUP_OFFSETS_PARTITIONS;
    assert(k < GROUP_OFFSETS_PARTITIONS);
    return k;
}

/* ---- in-memory state ---- */

struct pending_item {
    struct pending_item *next_in_entry;    /* other producers pending on the same key */
    struct pending_item *next_in_producer; /* this producer's other keys */
    struct offset_entry *entry;
    int64_t producer_id;
    int64_t offset;
    int32_t leader_epoch;
    int64_t commit_timestamp;
    int64_t log_offset; /* where its record is */
    char *metadata;
    uint16_t metadata_len;
};

struct offset_entry {
    struct offset_entry *next; /* hash chain */
    uint64_t hash;
    uint32_t offsets_partition; /* group_partition_for(group) */
    int32_t partition;
    uint16_t group_len, topic_len;
    bool committed;
    int64_t offset;
    int32_t leader_epoch;
    int64_t commit_timestamp;
    int64_t log_offset; /* where the committed value's record is (GO3) */
    char *metadata;
    uint16_t metadata_len;
    struct pending_item *pending; /* GO2 */
    char key[];                   /* group bytes, then topic bytes */
};

struct pending_producer {
    struct pending_producer *next;
    int64_t producer_id;
    struct pending_item *items;
};

struct partition_stats {
    uint64_t records_in_log; /* data records from the log start (or the last checkpoint) */
    uint64_t live;           /* committed keys */
    uint64_t pending;        /* pending items (GO6 blocks compaction while > 0) */
};

/* A group's metadata record (key version 2): its latest value's bytes, as written (H.6). */
struct meta_entry {
    struct meta_entry *next;
    uint32_t offsets_partition;
    size_t group_len;
    uint8_t *value;
    size_t value_len;
    char group[]; /* NUL-terminated */
};

struct group_manager {
    struct meta_entry *metas; /* O(groups) lookups: GROUP_COUNT_MAX bounds the broker's */
    struct log *lg;
    pthread_mutex_t lock;
    struct offset_entry **buckets;
    size_t bucket_count; /* a power of two */
    size_t entry_count;
    struct pending_producer *producers[GROUP_PRODUCER_BUCKETS];
    struct partition_stats stats[GROUP_OFFSETS_PARTITIONS];
    bool led[GROUP_OFFSETS_PARTITIONS]; /* GO8 */
    uint64_t compactions;               /* for tests, through the debugger or a future stats call */
};

static uint64_t key_hash(const uint8_t *group, size_t group_len, const uint8_t *topic,
                         size_t topic_len, int32_t partition)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, with separators so splits differ */
    for (size_t i = 0; i < group_len; i++)
        h = (h ^ group[i]) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (size_t i = 0; i < topic_len; i++)
        h = (h ^ topic[i]) * 0x100000001b3ull;
    h = (h ^ 0xfe) * 0x100000001b3ull;
    for (int i = 0; i < 4; i++)
        h = (h ^ (((uint32_t)partition >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static struct offset_entry *entry_find(struct group_manager *g, const uint8_t *group,
                                       size_t group_len, const uint8_t *topic, size_t topic_len,
                                       int32_t partition, uint64_t h)
{
    for (struct offset_entry *x = g->buckets[h & (g->bucket_count - 1)]; x; x = x->next) {
        if (x->hash == h && x->partition == partition && x->group_len == group_len &&
            x->topic_len == topic_len && memcmp(x->key, group, group_len) == 0 &&
            memcmp(x->key + group_len, topic, topic_len) == 0)
            return x;
    }
    return NULL;
}

static int table_grow(struct group_manager *g)
{
    size_t n = g->bucket_count * 2;
    struct offset_entry **b = calloc(n, sizeof(*b));
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < g->bucket_count; i++) {
        struct offset_entry *x = g->buckets[i];
        while (x) {
            struct offset_entry *next = x->next;
            x->next = b[x->hash & (n - 1)];
            b[x->hash & (n - 1)] = x;
            x = next;
        }
    }
    free(g->buckets);
    g->buckets = b;
    g->bucket_count = n;
    return 0;
}

/* The entry for the key, created (uncommitted, not pending) if missing. */
static int entry_get(struct group_manager *g, const uint8_t *group, size_t group_len,
                     const uint8_t *topic, size_t topic_len, int32_t partition,
                     uint32_t offsets_partition, struct offset_entry **out)
{
    uint64_t h = key_hash(group, group_len, topic, topic_len, partition);
    struct offset_entry *x = entry_find(g, group, group_len, topic, topic_len, partition, h);
    if (x) {
        *out = x;
        return 0;
    }
    if (g->entry_count >= g->bucket_count - g->bucket_count / 4 && table_grow(g) != 0)
        return -ENOMEM;
    x = calloc(1, sizeof(*x) + group_len + topic_len);
    if (!x)
        return -ENOMEM;
    x->hash = h;
    x->offsets_partition = offsets_partition;
    x->partition = partition;
    x->group_len = (uint16_t)group_len;
    x->topic_len = (uint16_t)topic_len;
    memcpy(x->key, group, group_len);
    memcpy(x->key + group_len, topic, topic_len);
    x->next = g->buckets[h & (g->bucket_count - 1)];
    g->buckets[h & (g->bucket_count - 1)] = x;
    g->entry_count++;
    *out = x;
    return 0;
}

/* GO5: drops an entry that is neither committed nor pending. */
static void entry_release_if_unused(struct group_manager *g, struct offset_entry *x)
{
    if (x->committed || x->pending)
        return;
    struct offset_entry **pp = &g->buckets[x->hash & (g->bucket_count - 1)];
    while (*pp != x)
        pp = &(*pp)->next;
    *pp = x->next;
    assert(g->entry_count > 0);
    g->entry_count--;
    free(x->metadata);
    free(x);
}

static int dup_metadata(const uint8_t *s, uint16_t len, char **out)
{
    *out = NULL;
    if (len == 0)
        return 0;
    *out = malloc(len);
    if (!*out)
        return -ENOMEM;
    memcpy(*out, s, len);
    return 0;
}

/* A committed value replaces the entry's (plain commits, replayed plain records, and pending
 * items that pass GO3). Takes ownership of metadata. */
static void entry_set(struct group_manager *g, struct offset_entry *x, int64_t offset,
                      int32_t leader_epoch, int64_t commit_timestamp, int64_t log_offset,
                      char *metadata, uint16_t metadata_len)
{
    if (!x->committed)
        g->stats[x->offsets_partition].live++;
    x->committed = true;
    x->offset = offset;
    x->leader_epoch = leader_epoch;
    x->commit_timestamp = commit_timestamp;
    x->log_offset = log_offset;
    free(x->metadata);
    x->metadata = metadata;
    x->metadata_len = metadata_len;
}

static void entry_delete(struct group_manager *g, struct offset_entry *x)
{
    if (x->committed) {
        assert(g->stats[x->offsets_partition].live > 0);
        g->stats[x->offsets_partition].live--;
    }
    x->committed = false;
    free(x->metadata);
    x->metadata = NULL;
    x->metadata_len = 0;
    entry_release_if_unused(g, x);
}

static struct pending_producer **producer_slot(struct group_manager *g, int64_t producer_id)
{
    struct pending_producer **pp =
        &g->producers[(uint64_t)producer_id * 0x9e3779b97f4a7c15ull >> 58];
    _Static_assert(GROUP_PRODUCER_BUCKETS == 64, "the shift above picks 6 bits");
    while (*pp && (*pp)->producer_id != producer_id)
        pp = &(*pp)->next;
    return pp;
}

/* GO2: adds (or replaces) the producer's pending offset for x. Takes ownership of metadata. */
static int pending_add(struct group_manager *g, int64_t producer_id, struct offset_entry *x,
                       int64_t offset, int32_t leader_epoch, int64_t commit_timestamp,
                       int64_t log_offset, char *metadata, uint16_t metadata_len)
{
    for (struct pending_item *it = x->pending; it; it = it->next_in_entry) {
        if (it->producer_id == producer_id) {
            free(it->metadata);
            it->offset = offset;
            it->leader_epoch = leader_epoch;
            it->commit_timestamp = commit_timestamp;
            it->log_offset = log_offset;
            it->metadata = metadata;
            it->metadata_len = metadata_len;
            return 0;
        }
    }
    struct pending_producer **slot = producer_slot(g, producer_id);
    if (!*slot) {
        *slot = calloc(1, sizeof(**slot));
        if (!*slot) {
            free(metadata);
            return -ENOMEM;
        }
        (*slot)->producer_id = producer_id;
    }
    struct pending_item *it = calloc(1, sizeof(*it));
    if (!it) {
        free(metadata);
        return -ENOMEM; /* an empty producer record is harmless: complete frees it */
    }
    *it = (struct pending_item){.entry = x,
                                .producer_id = producer_id,
                                .offset = offset,
                                .leader_epoch = leader_epoch,
                                .commit_timestamp = commit_timestamp,
                                .log_offset = log_offset,
                                .metadata = metadata,
                                .metadata_len = metadata_len};
    it->next_in_entry = x->pending;
    x->pending = it;
    it->next_in_producer = (*slot)->items;
    (*slot)->items = it;
    g->stats[x->offsets_partition].pending++;
    return 0;
}

/* Applies (commit) or drops the producer's pending offsets — all of them, or only those of
 * offsets partition `only` (a replayed marker) when only < GROUP_OFFSETS_PARTITIONS. */
static void pending_complete(struct group_manager *g, int64_t producer_id, bool commit,
                             uint32_t only)
{
    struct pending_producer **slot = producer_slot(g, producer_id);
    struct pending_producer *pp = *slot;
    if (!pp)
        return;
    struct pending_item **ip = &pp->items;
    while (*ip) {
        struct pending_item *it = *ip;
        struct offset_entry *x = it->entry;
        if (only < GROUP_OFFSETS_PARTITIONS && x->offsets_partition != only) {
            ip = &it->next_in_producer;
            continue;
        }
        *ip = it->next_in_producer;
        struct pending_item **ep = &x->pending;
        while (*ep != it)
            ep = &(*ep)->next_in_entry;
        *ep = it->next_in_entry;
        assert(g->stats[x->offsets_partition].pending > 0);
        g->stats[x->offsets_partition].pending--;
        if (commit && (!x->committed || x->log_offset < it->log_offset)) { /* GO3 */
            entry_set(g, x, it->offset, it->leader_epoch, it->commit_timestamp, it->log_offset,
                      it->metadata, it->metadata_len);
            it->metadata = NULL;
        }
        free(it->metadata);
        free(it);
        entry_release_if_unused(g, x);
    }
    if (!pp->items) {
        *slot = pp->next;
        free(pp);
    }
}

/* Replaces (or adds) the group's metadata value; takes a copy. */
static int meta_set(struct group_manager *g, const uint8_t *group, size_t group_len, uint32_t k,
                    const uint8_t *value, size_t value_len)
{
    uint8_t *v = malloc(value_len ? value_len : 1);
    if (!v)
        return -ENOMEM;
    memcpy(v, value, value_len);
    struct meta_entry *x = g->metas;
    while (x && (x->group_len != group_len || memcmp(x->group, group, group_len) != 0))
        x = x->next;
    if (!x) {
        x = calloc(1, sizeof(*x) + group_len + 1);
        if (!x) {
            free(v);
            return -ENOMEM;
        }
        memcpy(x->group, group, group_len);
        x->group_len = group_len;
        x->offsets_partition = k;
        x->next = g->metas;
        g->metas = x;
        g->stats[k].live++;
    }
    free(x->value);
    x->value = v;
    x->value_len = value_len;
    return 0;
}

static void meta_delete(struct group_manager *g, const uint8_t *group, size_t group_len)
{
    for (struct meta_entry **pp = &g->metas; *pp; pp = &(*pp)->next) {
        struct meta_entry *x = *pp;
        if (x->group_len == group_len && memcmp(x->group, group, group_len) == 0) {
            *pp = x->next;
            assert(g->stats[x->offsets_partition].live > 0);
            g->stats[x->offsets_partition].live--;
            free(x->value);
            free(x);
            return;
        }
    }
}

/* ---- encoding commits ---- */

static bool utf8_valid(const char *s, size_t len)
{
    bool valid;
    (void)java_string_hash((const uint8_t *)s, len, &valid);
    return valid;
}

static int check_group(const char *group)
{
    if (!group)
        return error_set(RT_E_INVALID_ARGUMENT, "group: NULL");
    size_t n = strlen(group);
    if (n == 0 || n > GROUP_NAME_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "group: %zu bytes (1..%d)", n,
                         GROUP_NAME_MAX_BYTES);
    if (!utf8_valid(group, n))
        return error_set(RT_E_INVALID_ARGUMENT, "group: not valid UTF-8");
    return 0;
}

static int check_offset(const struct rt_offset *o)
{
    if (!o->topic || o->topic[0] == '\0' || strlen(o->topic) > RT_TOPIC_NAME_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "offset commit: topic empty, NULL or too long");
    if (o->partition > (uint32_t)INT32_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "offset commit: partition %u", o->partition);
    if (o->offset < 0)
        return error_set(RT_E_INVALID_ARGUMENT, "offset commit: offset %" PRId64 " < 0", o->offset);
    if (o->metadata && strlen(o->metadata) > GROUP_METADATA_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "offset commit: metadata over %d bytes",
                         GROUP_METADATA_MAX_BYTES);
    return 0;
}

int group_offsets_check_known(struct log *lg, const struct rt_offset *offsets, size_t count)
{
    if (log_options(lg)->partitions_elsewhere)
        return 0; /* a cluster node: its broker checked them against the cluster's metadata */
    for (size_t i = 0; offsets && i < count; i++) {
        const struct rt_offset *o = &offsets[i];
        if (!o->topic || o->topic[0] == '\0' || strlen(o->topic) > RT_TOPIC_NAME_MAX)
            continue; /* check_offset names it */
        if (!log_partition(lg, o->topic, o->partition))
            return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION,
                             "offset commit: no partition %s-%u (offset %zu of %zu); nothing "
                             "committed",
                             o->topic, o->partition, i, count);
    }
    return 0;
}

/* One record's key and value, encoded into scratch (malloc'd by the caller); a NULL value is a
 * tombstone (GO7). */
struct encoded_record {
    uint8_t *key;
    size_t key_len;
    uint8_t *value;
    size_t value_len;
};

static int encode_record(const char *group, size_t group_len, const char *topic, size_t topic_len,
                         int32_t partition, int64_t offset, int32_t leader_epoch,
                         const char *metadata, size_t metadata_len, int64_t commit_timestamp,
                         struct encoded_record *out)
{
    struct group_offset_key k = {.version = GROUP_KEY_VERSION_OFFSET,
                                 .group = (const uint8_t *)group,
                                 .group_len = (uint16_t)group_len,
                                 .topic = (const uint8_t *)topic,
                                 .topic_len = (uint16_t)topic_len,
                                 .partition = partition};
    struct group_offset_value v = {.version = GROUP_VALUE_VERSION,
                                   .offset = offset,
                                   .leader_epoch = leader_epoch,
                                   .metadata = (const uint8_t *)metadata,
                                   .metadata_len = (uint16_t)metadata_len,
                                   .commit_timestamp = commit_timestamp,
                                   .expire_timestamp = -1};
    out->key = malloc(key_size(&k));
    out->value = malloc(value_size(&v));
    if (!out->key || !out->value)
        return -ENOMEM;
    int rc = group_key_encode(&k, out->key, key_size(&k), &out->key_len);
    if (rc == 0)
        rc = group_value_encode(&v, out->value, value_size(&v), &out->value_len);
    assert(rc == 0);
    return rc;
}

static void free_records(struct encoded_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].value);
    }
    free(r);
}

/* Builds one batch of the encoded records and appends it to offsets partition k. */
static int append_records(struct group_manager *g, uint32_t k, const struct encoded_record *recs,
                          size_t n, int16_t attributes, int64_t producer_id, int16_t epoch,
                          int64_t timestamp_ms, int64_t *base_offset_out)
{
    struct partition *p = log_partition(g->lg, GROUP_OFFSETS_TOPIC, k);
    if (!p)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s-%u is missing", GROUP_OFFSETS_TOPIC,
                         k);
    size_t cap = BATCH_HEADER_BYTES;
    for (size_t i = 0; i < n; i++) {
        struct rt_record r = {.key = recs[i].key,
                              .key_len = (int32_t)recs[i].key_len,
                              .value = recs[i].value,
                              .value_len = recs[i].value ? (int32_t)recs[i].value_len : -1,
                              .timestamp_ms = timestamp_ms};
        cap += record_encoded_size(&r, (int32_t)i, 0);
    }
    uint32_t max = g->lg->opts.batch_size_max_bytes;
    if (cap > max)
        return error_set(RT_E_RECORD_TOO_LARGE,
                         "offset commit of %zu offsets needs a %zu-byte batch (max %u)", n, cap,
                         max);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    struct batch_builder b;
    int rc = batch_builder_init(&b, buf, cap, attributes, producer_id, epoch, -1);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct rt_record r = {.key = recs[i].key,
                              .key_len = (int32_t)recs[i].key_len,
                              .value = recs[i].value,
                              .value_len = recs[i].value ? (int32_t)recs[i].value_len : -1,
                              .timestamp_ms = timestamp_ms};
        rc = batch_builder_add(&b, &r);
    }
    size_t len = 0;
    if (rc == 0)
        rc = batch_builder_finish(&b, &len);
    assert(rc != 0 || len == cap);
    if (rc == 0)
        rc = log_append_coordinator(g->lg, p, buf, len, base_offset_out);
    free(buf);
    if (rc == 0)
        g->stats[k].records_in_log += n;
    return rc;
}

/* Validates and encodes a commit's offsets (one record each). */
static int encode_commit(const char *group, const struct rt_offset *offsets, size_t count,
                         int64_t now_ms, struct encoded_record **out)
{
    *out = NULL;
    int rc = check_group(group);
    if (rc)
        return rc;
    if (!offsets || count == 0)
        return error_set(RT_E_INVALID_ARGUMENT, "offset commit: no offsets");
    for (size_t i = 0; i < count; i++) {
        rc = check_offset(&offsets[i]);
        if (rc)
            return rc;
    }
    struct encoded_record *recs = calloc(count, sizeof(*recs));
    if (!recs)
        return -ENOMEM;
    size_t group_len = strlen(group);
    for (size_t i = 0; i < count; i++) {
        const char *md = offsets[i].metadata ? offsets[i].metadata : "";
        rc = encode_record(group, group_len, offsets[i].topic, strlen(offsets[i].topic),
                           (int32_t)offsets[i].partition, offsets[i].offset, -1, md, strlen(md),
                           now_ms, &recs[i]);
        if (rc) {
            free_records(recs, count);
            return rc;
        }
    }
    *out = recs;
    return 0;
}

/* Applies offsets[i] (record at base + i) as committed or pending for producer_id. */
static int apply_commit(struct group_manager *g, const char *group, const struct rt_offset *offsets,
                        size_t count, int64_t base, int64_t now_ms, int64_t producer_id)
{
    size_t group_len = strlen(group);
    uint32_t k = group_partition_for(group);
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const struct rt_offset *o = &offsets[i];
        struct offset_entry *x = NULL;
        rc = entry_get(g, (const uint8_t *)group, group_len, (const uint8_t *)o->topic,
                       strlen(o->topic), (int32_t)o->partition, k, &x);
        char *md = NULL;
        size_t md_len = o->metadata ? strlen(o->metadata) : 0;
        if (rc == 0)
            rc = dup_metadata((const uint8_t *)o->metadata, (uint16_t)md_len, &md);
        if (rc) {
            if (x)
                entry_release_if_unused(g, x);
            break;
        }
        if (producer_id < 0)
            entry_set(g, x, o->offset, -1, now_ms, base + (int64_t)i, md, (uint16_t)md_len);
        else
            rc = pending_add(g, producer_id, x, o->offset, -1, now_ms, base + (int64_t)i, md,
                             (uint16_t)md_len);
    }
    if (rc)
        error_set(rc, "offset commit appended but not applied in memory: %s", rt_strerror(rc));
    return rc;
}

/* GO8: RT_E_NOT_COORDINATOR when the group's offsets partition is not led here (lock held). */
static int check_led(const struct group_manager *g, const char *group)
{
    uint32_t k = group_partition_for(group);
    if (g->led[k])
        return 0;
    return error_set(RT_E_NOT_COORDINATOR,
                     "group %s: its partition %s-%u is led by another node (rt_partition_resign)",
                     group, GROUP_OFFSETS_TOPIC, k);
}

static int commit_locked(struct group_manager *g, const char *group,
                         const struct rt_offset *offsets, size_t count, int64_t producer_id,
                         int16_t epoch)
{
    if (group && check_led(g, group))
        return RT_E_NOT_COORDINATOR;
    int64_t now = fs_now_ms();
    struct encoded_record *recs = NULL;
    int rc = encode_commit(group, offsets, count, now, &recs);
    if (rc)
        return rc;
    uint32_t k = group_partition_for(group);
    int64_t base = -1;
    rc = append_records(g, k, recs, count, producer_id >= 0 ? BATCH_ATTR_TRANSACTIONAL : 0,
                        producer_id, producer_id >= 0 ? epoch : -1, now, &base);
    free_records(recs, count);
    if (rc)
        return rc;
    assert(base >= 0);
    return apply_commit(g, group, offsets, count, base, now, producer_id);
}

/* One plain batch of one group metadata record (key version 2) into the group's partition. */
static int append_meta(struct group_manager *g, const char *group, size_t group_len,
                       const uint8_t *value, size_t value_len, int64_t *base_out)
{
    struct group_offset_key key = {.version = GROUP_KEY_VERSION_METADATA,
                                   .group = (const uint8_t *)group,
                                   .group_len = (uint16_t)group_len};
    struct encoded_record rec = {.key = malloc(key_size(&key)), .value = malloc(value_len + 1)};
    int rc = rec.key && rec.value ? 0 : -ENOMEM;
    if (rc == 0)
        rc = group_key_encode(&key, rec.key, key_size(&key), &rec.key_len);
    if (rc == 0) {
        memcpy(rec.value, value, value_len);
        rec.value_len = value_len;
        rc = append_records(g, group_partition_for(group), &rec, 1, 0, -1, -1, fs_now_ms(),
                            base_out);
    }
    free(rec.key);
    free(rec.value);
    return rc;
}

/* ---- compaction (GO6) ---- */

static uint32_t segment_count_of(struct partition *p)
{
    pthread_mutex_lock(&p->segments_lock);
    uint32_t n = p->segment_count;
    pthread_mutex_unlock(&p->segments_lock);
    return n;
}

/* Re-appends partition k's live keys after a roll, then deletes every segment before them. */
static int compact_partition(struct group_manager *g, uint32_t k)
{
    struct partition *p = log_partition(g->lg, GROUP_OFFSETS_TOPIC, k);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    assert(g->stats[k].pending == 0);
    int rc = log_roll(g->lg, p);
    if (rc)
        return rc;
    size_t n = (size_t)g->stats[k].live, done = 0;
    struct offset_entry **live = n ? calloc(n, sizeof(*live)) : NULL;
    if (n && !live)
        return -ENOMEM;
    for (size_t b = 0; b < g->bucket_count; b++)
        for (struct offset_entry *x = g->buckets[b]; x; x = x->next)
            if (x->committed && x->offsets_partition == k)
                live[done++] = x;
    assert(done == n);
    int64_t checkpoint = -1;
    uint64_t max = g->lg->opts.batch_size_max_bytes;
    /* Batches of live keys in hash order, each under the batch size limit. */
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i, bytes = BATCH_HEADER_BYTES;
        struct encoded_record *recs = calloc(n - i, sizeof(*recs));
        if (!recs) {
            rc = -ENOMEM;
            break;
        }
        int64_t now = fs_now_ms();
        while (j < n) {
            struct offset_entry *x = live[j];
            rc = encode_record(x->key, x->group_len, x->key + x->group_len, x->topic_len,
                               x->partition, x->offset, x->leader_epoch,
                               x->metadata ? x->metadata : "", x->metadata_len, x->commit_timestamp,
                               &recs[j - i]);
            if (rc)
                break;
            struct rt_record r = {.key = recs[j - i].key,
                                  .key_len = (int32_t)recs[j - i].key_len,
                                  .value = recs[j - i].value,
                                  .value_len = (int32_t)recs[j - i].value_len,
                                  .timestamp_ms = now};
            size_t add = record_encoded_size(&r, (int32_t)(j - i), 0);
            if (j > i && bytes + add > max) {
                free(recs[j - i].key);
                free(recs[j - i].value);
                recs[j - i] = (struct encoded_record){0};
                break;
            }
            bytes += add;
            j++;
        }
        int64_t base = -1;
        if (rc == 0)
            rc = append_records(g, k, recs, j - i, 0, -1, -1, now, &base);
        free_records(recs, n - i);
        if (rc)
            break;
        if (checkpoint < 0)
            checkpoint = base;
        for (size_t m = i; m < j; m++)
            live[m]->log_offset = base + (int64_t)(m - i); /* as a replay would see them */
        i = j;
    }
    free(live);
    /* The partition's group metadata records too, one batch each (H.6). */
    for (struct meta_entry *x = g->metas; x && rc == 0; x = x->next) {
        if (x->offsets_partition != k)
            continue;
        int64_t base = -1;
        rc = append_meta(g, x->group, x->group_len, x->value, x->value_len, &base);
        if (rc == 0 && checkpoint < 0)
            checkpoint = base;
    }
    if (rc)
        return rc;
    if (checkpoint < 0) { /* nothing live: everything before the log end can go */
        rc = log_list_offsets(g->lg, GROUP_OFFSETS_TOPIC, k, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED,
                              &checkpoint);
        if (rc)
            return rc;
    }
    rc = log_delete_before(g->lg, p, checkpoint);
    if (rc < 0)
        return rc;
    g->stats[k].records_in_log = g->stats[k].live;
    g->compactions++;
    return 0;
}

static void maybe_compact(struct group_manager *g, uint32_t k)
{
    const struct partition_stats *s = &g->stats[k];
    if (!g->led[k] || s->pending > 0 || s->records_in_log < GROUP_COMPACT_RECORDS_MIN ||
        s->records_in_log <= GROUP_COMPACT_RATIO * s->live)
        return;
    struct partition *p = log_partition(g->lg, GROUP_OFFSETS_TOPIC, k);
    if (!p || segment_count_of(p) < GROUP_COMPACT_SEGMENTS_MIN)
        return;
    /* A failure leaves a log that still replays to the same state (GO6); the commit that got us
     * here succeeded, and a failed write froze the partition (shard.c SH11): the next append
     * answers it until the partition recovers. */
    (void)compact_partition(g, k);
}

/* ---- replay ---- */

struct replay {
    struct group_manager *g;
    uint32_t k;
    const struct rt_fetch_view *view;
};

static int replay_corrupt(const struct replay *r, const uint8_t *at, const char *what,
                          const char *why)
{
    return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s: %s", r->view->segment_path,
                     r->view->segment_position + (uint64_t)(at - r->view->data), what,
                     why ? why : "invalid");
}

static int replay_record(struct replay *r, const uint8_t *batch, const struct batch_header *h,
                         const struct record_view *rv)
{
    const char *why = NULL;
    struct group_offset_key key;
    int rc =
        rv->key_len < 0 ? RT_E_CORRUPT : group_key_decode(rv->key, (size_t)rv->key_len, &key, &why);
    if (rc == RT_E_UNSUPPORTED)
        return 0; /* another coordinator record type: not ours to keep */
    if (rc)
        return replay_corrupt(r, batch, "offset key", rv->key_len < 0 ? "null key" : why);
    if (key.version == GROUP_KEY_VERSION_METADATA) { /* H.6: the group's latest metadata */
        if (batch_is_transactional(h))
            return 0; /* Kafka writes none; not ours to apply */
        if (rv->value_len < 0) {
            meta_delete(r->g, key.group, key.group_len);
            return 0;
        }
        struct group_meta_value mv;
        rc = group_meta_value_decode(rv->value, (size_t)rv->value_len, &mv, &why);
        if (rc)
            return replay_corrupt(r, batch, "group metadata value", why);
        rc = meta_set(r->g, key.group, key.group_len, r->k, rv->value, (size_t)rv->value_len);
        if (rc)
            return error_set(rc, "replaying %s-%u: out of memory", GROUP_OFFSETS_TOPIC, r->k);
        return 0;
    }
    int64_t log_offset = h->base_offset + rv->offset_delta;
    struct group_manager *g = r->g;
    if (rv->value_len < 0) { /* tombstone */
        uint64_t hh = key_hash(key.group, key.group_len, key.topic, key.topic_len, key.partition);
        struct offset_entry *x =
            entry_find(g, key.group, key.group_len, key.topic, key.topic_len, key.partition, hh);
        if (x && !batch_is_transactional(h))
            entry_delete(g, x);
        return 0;
    }
    struct group_offset_value v;
    rc = group_value_decode(rv->value, (size_t)rv->value_len, &v, &why);
    if (rc)
        return replay_corrupt(r, batch, "offset value", why);
    struct offset_entry *x = NULL;
    rc = entry_get(g, key.group, key.group_len, key.topic, key.topic_len, key.partition, r->k, &x);
    char *md = NULL;
    if (rc == 0)
        rc = dup_metadata(v.metadata, v.metadata_len, &md);
    if (rc)
        return error_set(rc, "replaying %s-%u: out of memory", GROUP_OFFSETS_TOPIC, r->k);
    if (h->producer_id >= 0 && batch_is_transactional(h))
        return pending_add(g, h->producer_id, x, v.offset, v.leader_epoch, v.commit_timestamp,
                           log_offset, md, v.metadata_len);
    entry_set(g, x, v.offset, v.leader_epoch, v.commit_timestamp, log_offset, md, v.metadata_len);
    return 0;
}

int group_batch_check(const uint8_t *batch, size_t size, const struct batch_header *h,
                      const char **what, const char **why)
{
    *what = "batch";
    if ((h->attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE) {
        *why = "compressed offsets batch (ringtail writes none)";
        return RT_E_CORRUPT;
    }
    const uint8_t *p = batch + BATCH_HEADER_BYTES, *end = batch + size;
    int32_t n_records = batch_is_control(h) ? 1 : h->record_count;
    for (int32_t i = 0; i < n_records; i++) {
        struct record_view rv;
        *what = batch_is_control(h) ? "control record" : "record";
        int n = record_decode(p, end, &rv, why);
        if (n <= 0)
            return RT_E_CORRUPT;
        p += n;
        if (batch_is_control(h)) {
            enum control_type type;
            if (control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, &type, NULL, why))
                return RT_E_CORRUPT;
            continue;
        }
        struct group_offset_key key;
        *what = "offset key";
        if (rv.key_len < 0) {
            *why = "null key";
            return RT_E_CORRUPT;
        }
        int rc = group_key_decode(rv.key, (size_t)rv.key_len, &key, why);
        if (rc == RT_E_UNSUPPORTED)
            continue; /* records the manager skips */
        if (rc == 0 && key.version == GROUP_KEY_VERSION_METADATA) {
            struct group_meta_value mv;
            *what = "group metadata value";
            if (rv.value_len >= 0 && !batch_is_transactional(h) &&
                group_meta_value_decode(rv.value, (size_t)rv.value_len, &mv, why) != 0)
                return RT_E_CORRUPT;
            continue;
        }
        if (rc)
            return RT_E_CORRUPT;
        if (rv.value_len < 0)
            continue; /* a tombstone */
        struct group_offset_value v;
        *what = "offset value";
        if (group_value_decode(rv.value, (size_t)rv.value_len, &v, why) != 0)
            return RT_E_CORRUPT;
    }
    return 0;
}

/* One validated batch of partition k. */
static int replay_batch(struct replay *r, const uint8_t *batch, size_t size,
                        const struct batch_header *h)
{
    const char *why = NULL, *what = NULL;
    /* The one check rt_verify runs too; what follows can then trust the records' shape. */
    if (group_batch_check(batch, size, h, &what, &why) != 0)
        return replay_corrupt(r, batch, what, why);
    const uint8_t *p = batch + BATCH_HEADER_BYTES, *end = batch + size;
    if (batch_is_control(h)) {
        struct record_view rv;
        int n = record_decode(p, end, &rv, &why);
        if (n <= 0)
            return replay_corrupt(r, batch, "control record", why);
        enum control_type type;
        if (control_record_parse(rv.key, rv.key_len, rv.value, rv.value_len, &type, NULL, &why))
            return replay_corrupt(r, batch, "control record", why);
        pending_complete(r->g, h->producer_id, type == CONTROL_COMMIT, r->k);
        return 0;
    }
    for (int32_t i = 0; i < h->record_count; i++) {
        struct record_view rv;
        int n = record_decode(p, end, &rv, &why);
        if (n <= 0)
            return replay_corrupt(r, batch, "record", why);
        p += n;
        int rc = replay_record(r, batch, h, &rv);
        if (rc)
            return rc;
    }
    r->g->stats[r->k].records_in_log += (uint64_t)h->record_count;
    return 0;
}

/* Replays partition k from its log start to its log end (RT_READ_REPLICA: past a high
 * watermark a broker holds, as a new leader must; at open the two are equal). */
static int replay_partition(struct group_manager *g, uint32_t k)
{
    int64_t start = 0, hw = 0;
    int rc = log_list_offsets(g->lg, GROUP_OFFSETS_TOPIC, k, RT_OFFSET_EARLIEST,
                              RT_READ_UNCOMMITTED, &start);
    if (rc)
        return rc;
    struct partition *part = log_partition(g->lg, GROUP_OFFSETS_TOPIC, k);
    if (!part)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    hw = atomic_load_explicit(&part->pub_end, memory_order_acquire);
    int64_t next = start;
    while (next < hw) {
        rt_fetch *f = NULL;
        rc = log_fetch_start(g->lg, GROUP_OFFSETS_TOPIC, k, next, GROUP_REPLAY_FETCH_BYTES,
                             RT_READ_REPLICA, &f);
        if (rc)
            return rc;
        struct replay r = {.g = g, .k = k, .view = rt_fetch_get(f)};
        const uint8_t *pos = r.view->data, *end = pos + r.view->size_bytes;
        int64_t before = next;
        while (rc == 0 && pos && pos < end) {
            const char *why = NULL;
            int64_t size = batch_size_at(pos, (size_t)(end - pos), &why);
            struct batch_header h;
            if (size < 0 || batch_validate(pos, (size_t)size, 0, &h, &why) != 0) {
                rc = replay_corrupt(&r, pos, "batch", why);
                break;
            }
            if (batch_last_offset(&h) >= next) /* a fetch may begin inside an earlier batch */
                rc = replay_batch(&r, pos, (size_t)size, &h);
            if (batch_last_offset(&h) + 1 > next)
                next = batch_last_offset(&h) + 1;
            pos += size;
        }
        rt_fetch_release(f);
        if (rc)
            return rc;
        if (next == before) /* nothing readable below the high watermark: stop, do not spin */
            return error_set(RT_E_CORRUPT,
                             "%s-%u: no batch at offset %" PRId64
                             " below the high watermark %" PRId64,
                             GROUP_OFFSETS_TOPIC, k, next, hw);
    }
    return 0;
}

/* ---- the interface ---- */

int group_manager_open(struct log *lg, struct group_manager **out)
{
    if (!lg || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "group_manager_open: NULL argument");
    *out = NULL;
    struct group_manager *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->lg = lg;
    g->bucket_count = GROUP_BUCKETS_INITIAL;
    g->buckets = calloc(g->bucket_count, sizeof(*g->buckets));
    if (!g->buckets) {
        free(g);
        return -ENOMEM;
    }
    pthread_mutex_init(&g->lock, NULL);
    for (uint32_t k = 0; k < GROUP_OFFSETS_PARTITIONS; k++) {
        g->led[k] = true; /* GO8: a single engine leads every partition */
        int rc = replay_partition(g, k);
        if (rc) {
            group_manager_close(g);
            return rc;
        }
    }
    *out = g;
    return 0;
}

void group_manager_close(struct group_manager *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < GROUP_PRODUCER_BUCKETS; i++)
        while (g->producers[i])
            pending_complete(g, g->producers[i]->producer_id, false, GROUP_OFFSETS_PARTITIONS);
    for (size_t b = 0; b < g->bucket_count; b++) {
        struct offset_entry *x = g->buckets[b];
        while (x) {
            struct offset_entry *next = x->next;
            free(x->metadata);
            free(x);
            x = next;
        }
    }
    free(g->buckets);
    while (g->metas) {
        struct meta_entry *x = g->metas;
        g->metas = x->next;
        free(x->value);
        free(x);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* GO8: drops every key, pending item and metadata record of offsets partition k (lock held). */
static void unload_locked(struct group_manager *g, uint32_t k)
{
    for (size_t i = 0; i < GROUP_PRODUCER_BUCKETS; i++) {
        struct pending_producer *pp = g->producers[i];
        while (pp) {
            struct pending_producer *next = pp->next; /* pending_complete may free pp */
            pending_complete(g, pp->producer_id, false, k);
            pp = next;
        }
    }
    for (size_t b = 0; b < g->bucket_count; b++) {
        struct offset_entry *x = g->buckets[b];
        while (x) {
            struct offset_entry *next = x->next;
            if (x->offsets_partition == k)
                entry_delete(g, x); /* no pending item is left: freed */
            x = next;
        }
    }
    struct meta_entry **pp = &g->metas;
    while (*pp) {
        struct meta_entry *x = *pp;
        if (x->offsets_partition != k) {
            pp = &x->next;
            continue;
        }
        *pp = x->next;
        free(x->value);
        free(x);
    }
    memset(&g->stats[k], 0, sizeof(g->stats[k]));
}

int group_partition_unload(struct group_manager *g, uint32_t k)
{
    if (!g || k >= GROUP_OFFSETS_PARTITIONS)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s-%u: no such partition",
                         GROUP_OFFSETS_TOPIC, k);
    pthread_mutex_lock(&g->lock);
    g->led[k] = false;
    unload_locked(g, k);
    pthread_mutex_unlock(&g->lock);
    return 0;
}

int group_partition_load(struct group_manager *g, uint32_t k)
{
    if (!g || k >= GROUP_OFFSETS_PARTITIONS)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "%s-%u: no such partition",
                         GROUP_OFFSETS_TOPIC, k);
    pthread_mutex_lock(&g->lock);
    int rc = 0;
    if (!g->led[k]) {
        unload_locked(g, k); /* nothing should be there; a failed load leaves nothing either */
        rc = replay_partition(g, k);
        if (rc)
            unload_locked(g, k);
        else
            g->led[k] = true;
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

bool group_partition_led(struct group_manager *g, uint32_t k)
{
    pthread_mutex_lock(&g->lock);
    bool led = k < GROUP_OFFSETS_PARTITIONS && g->led[k];
    pthread_mutex_unlock(&g->lock);
    return led;
}

int group_commit(struct group_manager *g, const char *group, const struct rt_offset *offsets,
                 size_t count)
{
    if (!g)
        return error_set(RT_E_INVALID_ARGUMENT, "group_commit: no group manager");
    pthread_mutex_lock(&g->lock);
    int rc = commit_locked(g, group, offsets, count, -1, -1);
    if (rc == 0)
        maybe_compact(g, group_partition_for(group));
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int group_txn_commit_offsets(struct group_manager *g, int64_t producer_id, int16_t epoch,
                             const char *group, const struct rt_offset *offsets, size_t count)
{
    if (!g || producer_id < 0 || epoch < 0)
        return error_set(RT_E_INVALID_ARGUMENT,
                         "group_txn_commit_offsets: no manager or producer %" PRId64 " epoch %d",
                         producer_id, (int)epoch);
    pthread_mutex_lock(&g->lock);
    int rc = commit_locked(g, group, offsets, count, producer_id, epoch);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void group_txn_complete(struct group_manager *g, int64_t producer_id, bool commit)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    pending_complete(g, producer_id, commit, GROUP_OFFSETS_PARTITIONS);
    for (uint32_t k = 0; k < GROUP_OFFSETS_PARTITIONS; k++)
        maybe_compact(g, k);
    pthread_mutex_unlock(&g->lock);
}

void group_txn_complete_partition(struct group_manager *g, int64_t producer_id,
                                  uint32_t offsets_partition, bool commit)
{
    if (!g || offsets_partition >= GROUP_OFFSETS_PARTITIONS)
        return;
    pthread_mutex_lock(&g->lock);
    pending_complete(g, producer_id, commit, offsets_partition); /* GO4: that partition only */
    maybe_compact(g, offsets_partition);
    pthread_mutex_unlock(&g->lock);
}

/* x's committed value into out (the caller holds the lock). Metadata longer than the public
 * buffer (only a record another broker wrote with a larger offset.metadata.max.bytes can be) is
 * cut at RT_OFFSET_METADATA_MAX_BYTES. */
static void committed_copy(const struct offset_entry *x, struct rt_committed_offset *out)
{
    out->pending = x && x->pending;
    if (!x || !x->committed)
        return;
    out->offset = x->offset;
    out->leader_epoch = x->leader_epoch;
    out->commit_timestamp_ms = x->commit_timestamp;
    size_t n = x->metadata_len;
    if (n > RT_OFFSET_METADATA_MAX_BYTES)
        n = RT_OFFSET_METADATA_MAX_BYTES;
    if (n)
        memcpy(out->metadata, x->metadata, n);
    out->metadata[n] = 0;
    out->metadata_len = n;
}

static void committed_none(struct rt_committed_offset *out)
{
    out->offset = -1;
    out->leader_epoch = -1;
    out->commit_timestamp_ms = -1;
    out->metadata_len = 0;
    out->metadata[0] = 0;
    out->pending = false;
}

int group_fetch_committed(struct group_manager *g, const char *group, const char *topic,
                          uint32_t partition, bool require_stable, struct rt_committed_offset *out)
{
    if (!g || !group || !topic || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "group_fetch: NULL argument");
    committed_none(out);
    if (partition > (uint32_t)INT32_MAX)
        return 0;
    size_t gl = strlen(group), tl = strlen(topic);
    if (gl > GROUP_STRING_MAX_BYTES || tl > GROUP_STRING_MAX_BYTES)
        return 0;
    pthread_mutex_lock(&g->lock);
    if (check_led(g, group)) {
        pthread_mutex_unlock(&g->lock);
        return RT_E_NOT_COORDINATOR;
    }
    uint64_t h =
        key_hash((const uint8_t *)group, gl, (const uint8_t *)topic, tl, (int32_t)partition);
    struct offset_entry *x = entry_find(g, (const uint8_t *)group, gl, (const uint8_t *)topic, tl,
                                        (int32_t)partition, h);
    int rc = 0;
    if (x && require_stable && x->pending) {
        out->pending = true;
        rc = error_set(
            RT_E_UNSTABLE_OFFSET_COMMIT,
            "group %s: %s-%u has a transactional offset commit pending (producer %" PRId64 ")",
            group, topic, partition, x->pending->producer_id);
    } else {
        committed_copy(x, out);
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int group_offsets_each(struct group_manager *g, const char *group, group_offset_fn fn, void *ctx)
{
    if (!g || !group || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "group_offsets_each: NULL argument");
    size_t gl = strlen(group);
    struct rt_committed_offset *o = malloc(sizeof(*o));
    if (!o)
        return -ENOMEM;
    char topic[RT_TOPIC_NAME_MAX + 1];
    int rc = 0;
    pthread_mutex_lock(&g->lock);
    if (check_led(g, group))
        rc = RT_E_NOT_COORDINATOR;
    /* O(every key of every group): the table is keyed by (group, topic, partition). */
    for (size_t b = 0; b < g->bucket_count && rc == 0; b++) {
        for (struct offset_entry *x = g->buckets[b]; x && rc == 0; x = x->next) {
            if (!x->committed || x->group_len != gl || memcmp(x->key, group, gl) != 0 ||
                x->topic_len > RT_TOPIC_NAME_MAX)
                continue;
            memcpy(topic, x->key + gl, x->topic_len);
            topic[x->topic_len] = 0;
            committed_none(o);
            committed_copy(x, o);
            rc = fn(ctx, topic, (uint32_t)x->partition, o);
        }
    }
    pthread_mutex_unlock(&g->lock);
    free(o);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    const struct offset_entry *x = *(const struct offset_entry *const *)a;
    const struct offset_entry *y = *(const struct offset_entry *const *)b;
    size_t n = x->group_len < y->group_len ? x->group_len : y->group_len;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return (x->group_len > y->group_len) - (x->group_len < y->group_len);
}

int group_names_each(struct group_manager *g, group_name_fn fn, void *ctx)
{
    if (!g || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "group_names_each: NULL argument");
    char name[GROUP_NAME_MAX_BYTES + 1];
    int rc = 0;
    pthread_mutex_lock(&g->lock);
    /* O(keys log keys): the distinct groups of the committed keys, in byte order. */
    struct offset_entry **all = g->entry_count ? malloc(g->entry_count * sizeof(*all)) : NULL;
    if (g->entry_count && !all) {
        pthread_mutex_unlock(&g->lock);
        return -ENOMEM;
    }
    size_t n = 0;
    for (size_t b = 0; b < g->bucket_count; b++)
        for (struct offset_entry *x = g->buckets[b]; x; x = x->next)
            if (x->committed && x->group_len > 0 && x->group_len <= GROUP_NAME_MAX_BYTES)
                all[n++] = x;
    assert(n <= g->entry_count);
    if (n)
        qsort(all, n, sizeof(*all), name_cmp);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0 && name_cmp(&all[i - 1], &all[i]) == 0)
            continue;
        memcpy(name, all[i]->key, all[i]->group_len);
        name[all[i]->group_len] = 0;
        rc = fn(ctx, name);
    }
    pthread_mutex_unlock(&g->lock);
    free(all);
    return rc;
}

int group_fetch(struct group_manager *g, const char *group, const char *topic, uint32_t partition,
                bool require_stable, int64_t *offset_out)
{
    if (!g || !group || !topic || !offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "group_fetch: NULL argument");
    *offset_out = -1;
    if (partition > (uint32_t)INT32_MAX)
        return 0;
    size_t gl = strlen(group), tl = strlen(topic);
    if (gl > GROUP_STRING_MAX_BYTES || tl > GROUP_STRING_MAX_BYTES)
        return 0;
    pthread_mutex_lock(&g->lock);
    if (check_led(g, group)) {
        pthread_mutex_unlock(&g->lock);
        return RT_E_NOT_COORDINATOR;
    }
    uint64_t h =
        key_hash((const uint8_t *)group, gl, (const uint8_t *)topic, tl, (int32_t)partition);
    struct offset_entry *x = entry_find(g, (const uint8_t *)group, gl, (const uint8_t *)topic, tl,
                                        (int32_t)partition, h);
    int rc = 0;
    if (x && require_stable && x->pending)
        rc = error_set(
            RT_E_UNSTABLE_OFFSET_COMMIT,
            "group %s: %s-%u has a transactional offset commit pending (producer %" PRId64 ")",
            group, topic, partition, x->pending->producer_id);
    else if (x && x->committed)
        *offset_out = x->offset;
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int group_store_meta(struct group_manager *g, const char *group, const uint8_t *value,
                     size_t value_len)
{
    if (!g || !value)
        return error_set(RT_E_INVALID_ARGUMENT, "group_store_meta: NULL argument");
    int rc = check_group(group);
    if (rc)
        return rc;
    const char *why = NULL;
    struct group_meta_value mv;
    if (group_meta_value_decode(value, value_len, &mv, &why) != 0)
        return error_set(RT_E_INVALID_ARGUMENT, "group metadata: %s", why);
    pthread_mutex_lock(&g->lock);
    int64_t base = -1;
    uint32_t k = group_partition_for(group);
    rc = check_led(g, group);
    if (rc == 0)
        rc = append_meta(g, group, strlen(group), value, value_len, &base); /* GO1 */
    if (rc == 0)
        rc = meta_set(g, (const uint8_t *)group, strlen(group), k, value, value_len);
    if (rc == 0)
        maybe_compact(g, k);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

/* ---- deletion (GO7) ---- */

/* A tombstone record of (group, topic, partition), or of the group's metadata when topic is
 * NULL, into *out (key malloc'd, value NULL). */
static int encode_tombstone(const char *group, size_t group_len, const uint8_t *topic,
                            size_t topic_len, int32_t partition, struct encoded_record *out)
{
    struct group_offset_key k = {.version =
                                     topic ? GROUP_KEY_VERSION_OFFSET : GROUP_KEY_VERSION_METADATA,
                                 .group = (const uint8_t *)group,
                                 .group_len = (uint16_t)group_len,
                                 .topic = topic,
                                 .topic_len = (uint16_t)topic_len,
                                 .partition = partition};
    out->value = NULL;
    out->value_len = 0;
    out->key = malloc(key_size(&k));
    if (!out->key)
        return -ENOMEM;
    int rc = group_key_encode(&k, out->key, key_size(&k), &out->key_len);
    assert(rc == 0);
    return rc;
}

static struct meta_entry *meta_entry_of(struct group_manager *g, const char *group,
                                        size_t group_len)
{
    struct meta_entry *x = g->metas;
    while (x && (x->group_len != group_len || memcmp(x->group, group, group_len) != 0))
        x = x->next;
    return x;
}

int group_delete(struct group_manager *g, const char *group, const struct rt_topic_partition *parts,
                 size_t count, size_t *deleted_out)
{
    if (deleted_out)
        *deleted_out = 0;
    if (!g || (count && !parts))
        return error_set(RT_E_INVALID_ARGUMENT, "group_delete: NULL argument");
    int rc = check_group(group);
    if (rc)
        return rc;
    size_t gl = strlen(group);
    for (size_t i = 0; i < count; i++)
        if (!parts[i].topic || !parts[i].topic[0] || strlen(parts[i].topic) > RT_TOPIC_NAME_MAX ||
            parts[i].partition > (uint32_t)INT32_MAX)
            return error_set(RT_E_INVALID_ARGUMENT, "group_delete: partition %zu: bad topic", i);
    pthread_mutex_lock(&g->lock);
    if (check_led(g, group)) {
        pthread_mutex_unlock(&g->lock);
        return RT_E_NOT_COORDINATOR;
    }
    /* The keys to delete: the named committed ones, or every committed one of the group and its
     * metadata record (a pending transactional offset is left to its marker). */
    size_t cap = parts ? count : g->entry_count;
    struct offset_entry **keys = calloc(cap + 1, sizeof(*keys));
    struct encoded_record *recs = calloc(cap + 1, sizeof(*recs));
    size_t n = 0;
    rc = keys && recs ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && parts && i < count; i++) {
        size_t tl = strlen(parts[i].topic);
        uint64_t h = key_hash((const uint8_t *)group, gl, (const uint8_t *)parts[i].topic, tl,
                              (int32_t)parts[i].partition);
        struct offset_entry *x =
            entry_find(g, (const uint8_t *)group, gl, (const uint8_t *)parts[i].topic, tl,
                       (int32_t)parts[i].partition, h);
        bool dup = false;
        for (size_t j = 0; x && j < n; j++)
            dup |= keys[j] == x;
        if (x && x->committed && !dup)
            keys[n++] = x;
    }
    for (size_t b = 0; rc == 0 && !parts && b < g->bucket_count; b++)
        for (struct offset_entry *x = g->buckets[b]; x; x = x->next)
            if (x->committed && x->group_len == gl && memcmp(x->key, group, gl) == 0)
                keys[n++] = x;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = encode_tombstone(group, gl, (const uint8_t *)keys[i]->key + gl, keys[i]->topic_len,
                              keys[i]->partition, &recs[i]);
    struct meta_entry *meta = parts ? NULL : meta_entry_of(g, group, gl);
    size_t nrec = n + (meta ? 1 : 0);
    if (rc == 0 && meta)
        rc = encode_tombstone(group, gl, NULL, 0, -1, &recs[n]);
    uint32_t k = group_partition_for(group);
    int64_t base = -1;
    if (rc == 0 && nrec)
        rc = append_records(g, k, recs, nrec, 0, -1, -1, fs_now_ms(), &base); /* GO1 */
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            entry_delete(g, keys[i]);
        if (meta)
            meta_delete(g, (const uint8_t *)group, gl);
        if (deleted_out)
            *deleted_out = nrec;
        if (nrec)
            maybe_compact(g, k);
    }
    pthread_mutex_unlock(&g->lock);
    if (recs)
        free_records(recs, cap + 1);
    free(keys);
    return rc;
}

int group_metas_each(struct group_manager *g, group_meta_fn fn, void *ctx)
{
    if (!g || !fn)
        return error_set(RT_E_INVALID_ARGUMENT, "group_metas_each: NULL argument");
    int rc = 0;
    pthread_mutex_lock(&g->lock);
    for (struct meta_entry *x = g->metas; x && rc == 0; x = x->next)
        rc = fn(ctx, x->group, x->value, x->value_len);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

/* ---- the public struct form of the metadata (ringtail.h) ---- */

static bool c_len16(const char *c, bool nullable, int16_t *len)
{
    if (!c) {
        *len = -1;
        return nullable;
    }
    size_t n = strlen(c);
    if (n > GROUP_STRING_MAX_BYTES)
        return false;
    *len = (int16_t)n;
    return true;
}

int group_metadata_encode(const char *group, const struct rt_group_metadata *md, uint8_t **out,
                          size_t *len_out)
{
    *out = NULL;
    *len_out = 0;
    if (!group || !md || (md->members_count && !md->members))
        return error_set(RT_E_INVALID_ARGUMENT, "group metadata: NULL argument");
    if (md->members_count > GROUP_META_MEMBERS_MAX)
        return error_set(RT_E_INVALID_ARGUMENT, "group metadata: %zu members (at most %d)",
                         md->members_count, GROUP_META_MEMBERS_MAX);
    struct group_meta_value v = {.version = GROUP_META_VERSION,
                                 .protocol_type = (const uint8_t *)md->protocol_type,
                                 .generation = md->generation,
                                 .protocol = (const uint8_t *)md->protocol,
                                 .leader = (const uint8_t *)md->leader,
                                 .current_state_timestamp = md->current_state_timestamp_ms,
                                 .members_count = (int32_t)md->members_count};
    bool ok = c_len16(md->protocol_type, false, &v.protocol_type_len) &&
              c_len16(md->protocol, true, &v.protocol_len) &&
              c_len16(md->leader, true, &v.leader_len);
    struct group_meta_member *ms =
        md->members_count ? calloc(md->members_count, sizeof(*ms)) : NULL;
    if (md->members_count && !ms)
        return -ENOMEM;
    for (size_t i = 0; ok && i < md->members_count; i++) {
        const struct rt_group_member *m = &md->members[i];
        ms[i] = (struct group_meta_member){.member_id = (const uint8_t *)m->member_id,
                                           .instance_id = (const uint8_t *)m->group_instance_id,
                                           .client_id = (const uint8_t *)m->client_id,
                                           .client_host = (const uint8_t *)m->client_host,
                                           .rebalance_timeout_ms = m->rebalance_timeout_ms,
                                           .session_timeout_ms = m->session_timeout_ms,
                                           .subscription = m->subscription,
                                           .subscription_len = (int32_t)m->subscription_len,
                                           .assignment = m->assignment,
                                           .assignment_len = (int32_t)m->assignment_len};
        ok = c_len16(m->member_id, false, &ms[i].member_id_len) &&
             c_len16(m->group_instance_id, true, &ms[i].instance_id_len) &&
             c_len16(m->client_id, false, &ms[i].client_id_len) &&
             c_len16(m->client_host, false, &ms[i].client_host_len) &&
             m->subscription_len <= INT32_MAX && m->assignment_len <= INT32_MAX &&
             (m->subscription || !m->subscription_len) && (m->assignment || !m->assignment_len);
    }
    if (!ok) {
        free(ms);
        return error_set(RT_E_INVALID_ARGUMENT,
                         "group metadata of '%s': a string NULL or over %d bytes", group,
                         GROUP_STRING_MAX_BYTES);
    }
    size_t n = group_meta_value_size(&v, ms);
    uint8_t *buf = malloc(n);
    size_t len = 0;
    int rc = buf ? group_meta_value_encode(&v, ms, buf, n, &len) : -ENOMEM;
    free(ms);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len_out = len;
    return 0;
}

int group_store_metadata(struct group_manager *g, const char *group,
                         const struct rt_group_metadata *md)
{
    if (!g)
        return error_set(RT_E_INVALID_ARGUMENT, "group metadata: NULL argument");
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = group_metadata_encode(group, md, &buf, &len);
    if (rc == 0)
        rc = group_store_meta(g, group, buf, len);
    free(buf);
    return rc;
}

/* A NUL-terminated copy of (s, len) at *at; false when s holds a NUL. */
static bool c_copy(const uint8_t *s, int16_t len, char **at, const char **out)
{
    if (len < 0) {
        *out = NULL;
        return true;
    }
    if (len && memchr(s, 0, (size_t)len))
        return false;
    if (len)
        memcpy(*at, s, (size_t)len);
    (*at)[len] = 0;
    *out = *at;
    *at += len + 1;
    return true;
}

struct metadata_walk {
    rt_group_metadata_fn fn;
    void *ctx;
};

static int metadata_one(void *ctx, const char *group, const uint8_t *value, size_t len)
{
    struct metadata_walk *w = ctx;
    const char *why = NULL;
    struct group_meta_value v;
    if (group_meta_value_decode(value, len, &v, &why) != 0)
        return 0; /* cannot happen: checked when stored or replayed */
    /* Strings copied NUL-terminated: at most the value's bytes plus one NUL per string. */
    size_t scratch = len + 8 * ((size_t)v.members_count + 1);
    char *buf = malloc(scratch);
    struct rt_group_member *ms =
        v.members_count ? calloc((size_t)v.members_count, sizeof(*ms)) : NULL;
    if (!buf || (v.members_count && !ms)) {
        free(buf);
        free(ms);
        return -ENOMEM;
    }
    char *at = buf;
    struct rt_group_metadata md = {.generation = v.generation,
                                   .current_state_timestamp_ms = v.current_state_timestamp,
                                   .members = ms,
                                   .members_count = (size_t)v.members_count};
    bool ok = c_copy(v.protocol_type, v.protocol_type_len, &at, &md.protocol_type) &&
              c_copy(v.protocol, v.protocol_len, &at, &md.protocol) &&
              c_copy(v.leader, v.leader_len, &at, &md.leader);
    for (int32_t i = 0; ok && i < v.members_count; i++) {
        struct group_meta_member m;
        group_meta_member_at(&v, i, &m);
        ms[i] = (struct rt_group_member){.rebalance_timeout_ms = m.rebalance_timeout_ms,
                                         .session_timeout_ms = m.session_timeout_ms,
                                         .subscription = m.subscription,
                                         .subscription_len = (size_t)m.subscription_len,
                                         .assignment = m.assignment,
                                         .assignment_len = (size_t)m.assignment_len};
        ok = c_copy(m.member_id, m.member_id_len, &at, &ms[i].member_id) &&
             c_copy(m.instance_id, m.instance_id_len, &at, &ms[i].group_instance_id) &&
             c_copy(m.client_id, m.client_id_len, &at, &ms[i].client_id) &&
             c_copy(m.client_host, m.client_host_len, &at, &ms[i].client_host);
    }
    assert((size_t)(at - buf) <= scratch);
    int rc = ok ? w->fn(w->ctx, group, &md) : 0;
    free(buf);
    free(ms);
    return rc;
}

int group_metadata_each(struct group_manager *g, rt_group_metadata_fn fn, void *ctx)
{
    struct metadata_walk w = {.fn = fn, .ctx = ctx};
    return group_metas_each(g, metadata_one, &w);
}
