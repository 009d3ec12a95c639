/*
 * txn_log.c — the key and value codec of the internal topic `__transaction_state`
 * (docs/format.md part G, normative). Key and Kafka's value v0 are byte-for-byte Kafka's
 * (transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json and
 * TransactionLogValue.json, written by core/.../coordinator/transaction/TransactionLog.scala);
 * ringtail's own value version 0x7201 is Kafka's v0 followed by two fields of its own.
 *
 * A pure codec over caller buffers: it owns no state, never touches the engine, and treats every
 * byte it decodes as untrusted (never reads outside [buf, buf + len), reports damage as
 * RT_E_CORRUPT with a static reason that starts with the rule's number). The only allocation is
 * the decoded partitions array and the sort behind the duplicate check (TLV14).
 *
 *     All integers big-endian, two's complement. STRING = i16 length + bytes (not nullable).
 *
 *     key                                     (Kafka's TransactionLogKey, version-prefixed)
 *     byte  size  field
 *     0     2     version              i16  = 0 (newer Kafka: CoordinatorRecordType 0, same bytes)
 *     2     2     id length            i16  1..TXN_ID_MAX_BYTES
 *     4     n     transactional id          UTF-8, no NUL byte
 *
 *     value
 *     0     2     version              i16  = 0 (Kafka's v0) or 0x7201, 0x7202, 0x7203
 *                                           (ringtail's; Kafka's own v1 is a flexible
 *                                           version and is not read)
 *     2     8     producer_id          i64
 *     10    2     producer_epoch       i16
 *     12    4     transaction_timeout_ms i32
 *     16    1     transaction_status   i8   enum txn_state
 *     17    4     topic count          i32  -1 = null (state Empty only)
 *     21    ...   per topic: topic STRING, partition id count i32 (>= 1), partition ids i32 each
 *     ...   8     last_update_ms       i64
 *     ...   8     start_ms             i64
 *     -- versions 0x7201, 0x7202 and 0x7203 --
 *     ...   4     check_count          i32
 *     ...   1     flags                i8   bit 0 hanging; bit 1 acked_durable (an Ongoing
 *                                           written by a run that acknowledged a produce only
 *                                           once durable: sync=always; coordinator.c CO13);
 *                                           bits 2-7 zero
 *     -- versions 0x7202 and 0x7203 (a transaction decided in one durable round, CO9, CO12) --
 *     ...   2     txn_epoch            i16  the epoch of the transaction's data, >= 0
 *     ...   4*n   last_sequence        i32  one per (topic, partition) pair, in the order the
 *                                           pairs are read; -1 = not checked, else >= 0
 *     -- version 0x7203 only (0x7202's fields, then: a wire transaction that kept its epoch,
 *        coordinator.c CO12) --
 *     ...   8*n   first_offset         i64  one per pair, in the same order: the offset of the
 *                                           transaction's first batch in that partition; -1 =
 *                                           it had none there, else >= 0
 *
 * Validity (decode checks in this order and reports the first failure; encode refuses with
 * RT_E_INVALID_ARGUMENT whatever would break them, so everything written here decodes):
 *   TLK1.  key: at least 2 bytes and version == 0.
 *   TLK2.  key: id length (i16) in 1..TXN_ID_MAX_BYTES (negative = null: Kafka's string is not
 *          nullable; 0: Kafka never registers an empty transactional id).
 *   TLK3.  key: exactly 4 + id length bytes (truncated or trailing bytes are corrupt).
 *   TLK4.  key: no NUL byte in the id (ringtail hands ids around as C strings).
 *   TLK5.  key: the id is valid UTF-8 (shortest form, no surrogates, <= U+10FFFF); Kafka encodes a
 *          Java String, which is always valid UTF-8.
 *   TLV1.  value: at least 2 bytes (a zero-length value is not a value: a tombstone is a *null*
 *          value, which the caller sees before decoding) and version 0, 0x7201, 0x7202 or 0x7203.
 *   TLV2.  value: every field is whole (a short value is "truncated", naming the field).
 *   TLV3.  producer_id >= -1.
 *   TLV4.  producer_epoch >= -1.
 *   TLV5.  transaction_timeout_ms >= 0.
 *   TLV6.  transaction_status in 0..7.
 *   TLV7.  topic count is -1 or 0..TXN_LOG_PARTITIONS_MAX, and the (topic, partition) pairs
 *          number at most TXN_LOG_PARTITIONS_MAX.
 *   TLV8.  the partitions are null exactly when the state is Empty (Kafka's valueToBytes writes
 *          null for Empty and refuses partitions there; a list, possibly empty, otherwise).
 *   TLV9.  each topic is a valid topic name: 1..249 bytes of [a-zA-Z0-9._-], not "." or "..".
 *   TLV10. each partition id count is >= 1 (not null, not empty: Kafka groups by topic).
 *   TLV11. each partition id >= 0.
 *   TLV12. versions 0x7201-0x7203: check_count >= 0, flags & 0xFC == 0.
 *   TLV13. no bytes after the last field.
 *   TLV14. no (topic, partition) appears twice (the partitions are a set).
 *   TLV15. version 0x7202: txn_epoch >= 0, each last_sequence >= -1, and the state is one
 *          that decides (PrepareCommit, PrepareAbort, CompleteCommit or CompleteAbort).
 *   TLV16. version 0x7203: TLV15, and each first_offset >= -1.
 * The timestamps are not constrained (Kafka writes -1 for "no transaction started").
 *
 * Decode flattens Kafka's {topic, [ids]} into (topic, partition) pairs in the order read; encode
 * groups consecutive pairs of one topic into one topic entry, so encode(decode(x)) == x for a
 * 0x7201 value that lists each topic once. A Kafka v0 value decodes with check_count 0,
 * hanging false and acked_durable false.
 *
 * Costs: decode walks the partitions twice (validate and count without allocating, then fill an
 * array of exactly that many pairs: at most 254 bytes of memory per 4 input bytes, capped by
 * TLV7) and sorts pointers for TLV14, O(n log n); encode likewise sorts for TLV14.
 */
#include "txn_log.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "meta.h"

#define KEY_VERSION              0
#define VALUE_VERSION_KAFKA_V0   0
#define VALUE_VERSION_RINGTAIL   0x7201
#define VALUE_VERSION_ONE_ROUND  0x7202
#define VALUE_VERSION_KEPT_EPOCH 0x7203
#define KEY_HEADER_BYTES         4  /* version + id length */
#define VALUE_HEAD_BYTES         21 /* version .. topic count */
#define VALUE_TAIL_BYTES         16 /* the two timestamps */
#define VALUE_EXT_BYTES          5  /* check_count + flags */
#define TOPIC_ENTRY_MIN_BYTES    11 /* i16 length, 1-byte name, i32 count, one i32 id */
#define FLAG_HANGING             0x01
#define FLAG_ACKED_DURABLE       0x02

/* Offsets of the fixed head of a value. */
#define V_OFF_VERSION     0
#define V_OFF_PRODUCER_ID 2
#define V_OFF_EPOCH       10
#define V_OFF_TIMEOUT     12
#define V_OFF_STATE       16
#define V_OFF_TOPIC_COUNT 17

_Static_assert(V_OFF_TOPIC_COUNT + 4 == VALUE_HEAD_BYTES, "value head is 21 bytes");
_Static_assert(TXN_ID_MAX_BYTES <= INT16_MAX, "id length fits the i16 prefix");
_Static_assert(RT_TOPIC_NAME_MAX <= INT16_MAX, "topic length fits the i16 prefix");
_Static_assert(TXN_LOG_PARTITIONS_MAX <= INT32_MAX, "partition count fits an i32");

static int corrupt(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return RT_E_CORRUPT;
}

const char *txn_state_name(enum txn_state state)
{
    switch (state) {
    case TXN_EMPTY:
        return "Empty";
    case TXN_ONGOING:
        return "Ongoing";
    case TXN_PREPARE_COMMIT:
        return "PrepareCommit";
    case TXN_PREPARE_ABORT:
        return "PrepareAbort";
    case TXN_COMPLETE_COMMIT:
        return "CompleteCommit";
    case TXN_COMPLETE_ABORT:
        return "CompleteAbort";
    case TXN_DEAD:
        return "Dead";
    case TXN_PREPARE_EPOCH_FENCE:
        return "PrepareEpochFence";
    }
    return "Unknown";
}

/* TLK5: strict UTF-8 (RFC 3629): shortest form, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t more;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
            cp = c & 0x1Fu;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            more = 2;
            cp = c & 0x0Fu;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            cp = c & 0x07u;
            min = 0x10000;
        } else {
            return false;
        }
        if (n - i - 1 < more)
            return false;
        for (size_t k = 1; k <= more; k++) {
            uint8_t cc = s[i + k];
            if ((cc & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (cc & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += 1 + more;
    }
    return true;
}

/* ---- key ---- */

int txn_log_key_encode(const char *transactional_id, uint8_t *buf, size_t cap, size_t *len_out)
{
    assert(len_out);
    if (!transactional_id)
        return RT_E_INVALID_ARGUMENT;
    size_t n = strnlen(transactional_id, TXN_ID_MAX_BYTES + 1);
    if (n == 0 || n > TXN_ID_MAX_BYTES)
        return RT_E_INVALID_ARGUMENT; /* TLK2 */
    if (!utf8_valid((const uint8_t *)transactional_id, n))
        return RT_E_INVALID_ARGUMENT; /* TLK5 (TLK4 holds: a C string) */
    if (cap < KEY_HEADER_BYTES + n)
        return -ENOSPC;
    assert(buf);
    be16_store(buf, KEY_VERSION);
    be16_store(buf + 2, (uint16_t)n);
    memcpy(buf + KEY_HEADER_BYTES, transactional_id, n);
    *len_out = KEY_HEADER_BYTES + n;
    return 0;
}

int txn_log_key_decode(const uint8_t *buf, size_t len, char *id_out, const char **why)
{
    assert(id_out);
    assert(buf || len == 0);
    id_out[0] = '\0';
    if (len < 2)
        return corrupt(why, "TLK1 key truncated (version)");
    if ((int16_t)be16_load(buf) != KEY_VERSION)
        return corrupt(why, "TLK1 key version is not 0");
    if (len < KEY_HEADER_BYTES)
        return corrupt(why, "TLK3 key truncated (id length)");
    int16_t n = (int16_t)be16_load(buf + 2);
    if (n < 0)
        return corrupt(why, "TLK2 transactional id is null");
    if (n == 0)
        return corrupt(why, "TLK2 transactional id is empty");
    if (n > TXN_ID_MAX_BYTES)
        return corrupt(why, "TLK2 transactional id longer than TXN_ID_MAX_BYTES");
    if (len < KEY_HEADER_BYTES + (size_t)n)
        return corrupt(why, "TLK3 key truncated (transactional id)");
    if (len > KEY_HEADER_BYTES + (size_t)n)
        return corrupt(why, "TLK3 trailing bytes after the key");
    const uint8_t *id = buf + KEY_HEADER_BYTES;
    if (memchr(id, 0, (size_t)n))
        return corrupt(why, "TLK4 NUL byte in the transactional id");
    if (!utf8_valid(id, (size_t)n))
        return corrupt(why, "TLK5 transactional id is not valid UTF-8");
    memcpy(id_out, id, (size_t)n);
    id_out[n] = '\0';
    return 0;
}

/* ---- value: the partitions set (TLV14) ---- */

static size_t topic_len(const struct txn_log_partition *p)
{
    return strnlen(p->topic, sizeof(p->topic));
}

static bool same_topic(const struct txn_log_partition *a, const struct txn_log_partition *b)
{
    return strncmp(a->topic, b->topic, sizeof(a->topic)) == 0;
}

static int partition_cmp(const void *a, const void *b)
{
    const struct txn_log_partition *x = *(const struct txn_log_partition *const *)a;
    const struct txn_log_partition *y = *(const struct txn_log_partition *const *)b;
    int c = strcmp(x->topic, y->topic);
    if (c)
        return c;
    return (x->partition > y->partition) - (x->partition < y->partition);
}

/* 0 when no pair repeats, 1 when one does, -ENOMEM. O(n log n). */
static int partitions_repeat(const struct txn_log_partition *parts, uint32_t n)
{
    if (n < 2)
        return 0;
    if (n == 2)
        return parts[0].partition == parts[1].partition && same_topic(&parts[0], &parts[1]);
    const struct txn_log_partition **sorted = malloc(sizeof(*sorted) * n);
    if (!sorted)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = &parts[i];
    qsort(sorted, n, sizeof(*sorted), partition_cmp);
    int repeat = 0;
    for (uint32_t i = 1; i < n && !repeat; i++)
        repeat = partition_cmp(&sorted[i - 1], &sorted[i]) == 0;
    free(sorted);
    return repeat;
}

/* ---- value: encode ---- */

size_t txn_log_value_size(const struct txn_log_value *v)
{
    assert(v);
    size_t size = VALUE_HEAD_BYTES + VALUE_TAIL_BYTES + VALUE_EXT_BYTES;
    for (uint32_t i = 0; i < v->partition_count; i++) {
        if (i == 0 || !same_topic(&v->partitions[i - 1], &v->partitions[i]))
            size += 2 + topic_len(&v->partitions[i]) + 4; /* topic STRING + id count */
        size += 4;
    }
    if (v->one_round)
        size += 2 + 4 * (size_t)v->partition_count; /* txn_epoch, last_sequence each */
    if (v->one_round && v->kept_epoch)
        size += 8 * (size_t)v->partition_count; /* first_offset each */
    return size;
}

static bool state_decides(enum txn_state s)
{
    return s == TXN_PREPARE_COMMIT || s == TXN_PREPARE_ABORT || s == TXN_COMPLETE_COMMIT ||
           s == TXN_COMPLETE_ABORT;
}

/* Everything encode refuses: the write-side image of TLV3-TLV14. */
static int value_check(const struct txn_log_value *v)
{
    if (v->producer_id < -1 || v->producer_epoch < -1 || v->timeout_ms < 0)
        return RT_E_INVALID_ARGUMENT; /* TLV3, TLV4, TLV5 */
    if ((unsigned)v->state > TXN_PREPARE_EPOCH_FENCE)
        return RT_E_INVALID_ARGUMENT; /* TLV6 */
    if (v->partition_count > TXN_LOG_PARTITIONS_MAX)
        return RT_E_INVALID_ARGUMENT; /* TLV7 */
    if (v->state == TXN_EMPTY && v->partition_count > 0)
        return RT_E_INVALID_ARGUMENT; /* TLV8 */
    if (v->partition_count > 0 && !v->partitions)
        return RT_E_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < v->partition_count; i++) {
        const struct txn_log_partition *p = &v->partitions[i];
        if (topic_len(p) > RT_TOPIC_NAME_MAX || !meta_topic_name_valid(p->topic))
            return RT_E_INVALID_ARGUMENT; /* TLV9 */
        if (p->partition > INT32_MAX)
            return RT_E_INVALID_ARGUMENT; /* TLV11 */
    }
    if (v->check_count > INT32_MAX)
        return RT_E_INVALID_ARGUMENT; /* TLV12 */
    if (v->one_round && (v->txn_epoch < 0 || !state_decides(v->state)))
        return RT_E_INVALID_ARGUMENT; /* TLV15 */
    for (uint32_t i = 0; v->one_round && i < v->partition_count; i++)
        if (v->partitions[i].last_sequence < -1)
            return RT_E_INVALID_ARGUMENT; /* TLV15 */
    if (v->kept_epoch && !v->one_round)
        return RT_E_INVALID_ARGUMENT; /* 0x7203 extends 0x7202 */
    for (uint32_t i = 0; v->kept_epoch && i < v->partition_count; i++)
        if (v->partitions[i].first_offset < -1)
            return RT_E_INVALID_ARGUMENT; /* TLV16 */
    int rc = partitions_repeat(v->partitions, v->partition_count);
    if (rc < 0)
        return rc;
    return rc ? RT_E_INVALID_ARGUMENT : 0; /* TLV14 */
}

int txn_log_value_encode(const struct txn_log_value *v, uint8_t *buf, size_t cap, size_t *len_out)
{
    assert(v);
    assert(len_out);
    int rc = value_check(v);
    if (rc)
        return rc;
    size_t size = txn_log_value_size(v);
    if (cap < size)
        return -ENOSPC;
    assert(buf);

    uint8_t *p = buf;
    be16_store(p + V_OFF_VERSION, v->kept_epoch  ? VALUE_VERSION_KEPT_EPOCH
                                  : v->one_round ? VALUE_VERSION_ONE_ROUND
                                                 : VALUE_VERSION_RINGTAIL);
    be64_store(p + V_OFF_PRODUCER_ID, (uint64_t)v->producer_id);
    be16_store(p + V_OFF_EPOCH, (uint16_t)v->producer_epoch);
    be32_store(p + V_OFF_TIMEOUT, (uint32_t)v->timeout_ms);
    p[V_OFF_STATE] = (uint8_t)v->state;
    uint8_t *topic_count_at = p + V_OFF_TOPIC_COUNT;
    p += VALUE_HEAD_BYTES;

    int32_t topics = 0;
    uint32_t i = 0;
    while (i < v->partition_count) {
        uint32_t end = i + 1;
        while (end < v->partition_count && same_topic(&v->partitions[i], &v->partitions[end]))
            end++;
        size_t n = topic_len(&v->partitions[i]);
        be16_store(p, (uint16_t)n);
        memcpy(p + 2, v->partitions[i].topic, n);
        p += 2 + n;
        be32_store(p, end - i);
        p += 4;
        for (; i < end; i++, p += 4)
            be32_store(p, v->partitions[i].partition);
        topics++;
    }
    /* TLV8: Kafka writes null for Empty, a (possibly empty) list for every other state. */
    be32_store(topic_count_at, v->state == TXN_EMPTY ? UINT32_MAX : (uint32_t)topics);
    be64_store(p, (uint64_t)v->last_update_ms);
    be64_store(p + 8, (uint64_t)v->start_ms);
    be32_store(p + 16, v->check_count);
    p[20] =
        (uint8_t)((v->hanging ? FLAG_HANGING : 0) | (v->acked_durable ? FLAG_ACKED_DURABLE : 0));
    p += VALUE_TAIL_BYTES + VALUE_EXT_BYTES;
    if (v->one_round) {
        be16_store(p, (uint16_t)v->txn_epoch);
        p += 2;
        for (uint32_t k = 0; k < v->partition_count; k++, p += 4)
            be32_store(p, (uint32_t)v->partitions[k].last_sequence);
    }
    if (v->kept_epoch)
        for (uint32_t k = 0; k < v->partition_count; k++, p += 8)
            be64_store(p, (uint64_t)v->partitions[k].first_offset);

    assert((size_t)(p - buf) == size);
    *len_out = size;
    return 0;
}

/* ---- value: decode ---- */

/*
 * Walks the topic entries at *pos (TLV2, TLV7, TLV9-TLV11). With parts == NULL it only validates
 * and counts the pairs into *pairs_out; with parts it fills parts[0..*pairs_out) from bytes that
 * have already passed the first walk. Leaves *pos after the last entry.
 */
static int walk_partitions(const uint8_t *buf, size_t len, size_t *pos, int32_t topics,
                           struct txn_log_partition *parts, uint32_t *pairs_out, const char **why)
{
    size_t at = *pos;
    uint32_t pairs = 0;
    for (int32_t t = 0; t < topics; t++) {
        if (len - at < 2)
            return corrupt(why, "TLV2 value truncated (topic length)");
        int16_t n = (int16_t)be16_load(buf + at);
        at += 2;
        if (n <= 0 || n > RT_TOPIC_NAME_MAX)
            return corrupt(why, "TLV9 topic name null, empty or longer than 249 bytes");
        if (len - at < (size_t)n)
            return corrupt(why, "TLV2 value truncated (topic name)");
        char topic[RT_TOPIC_NAME_MAX + 1];
        memcpy(topic, buf + at, (size_t)n);
        topic[n] = '\0';
        at += (size_t)n;
        if (memchr(topic, 0, (size_t)n) || !meta_topic_name_valid(topic))
            return corrupt(why, "TLV9 invalid topic name");
        if (len - at < 4)
            return corrupt(why, "TLV2 value truncated (partition id count)");
        int32_t ids = (int32_t)be32_load(buf + at);
        at += 4;
        if (ids <= 0)
            return corrupt(why, "TLV10 topic with a null or empty partition id list");
        if ((size_t)ids > (len - at) / 4)
            return corrupt(why, "TLV2 value truncated (partition ids)");
        if ((uint32_t)ids > TXN_LOG_PARTITIONS_MAX - pairs)
            return corrupt(why, "TLV7 more than TXN_LOG_PARTITIONS_MAX partitions");
        for (int32_t k = 0; k < ids; k++, at += 4) {
            int32_t id = (int32_t)be32_load(buf + at);
            if (id < 0)
                return corrupt(why, "TLV11 negative partition id");
            if (parts) {
                memcpy(parts[pairs].topic, topic, (size_t)n + 1);
                parts[pairs].partition = (uint32_t)id;
            }
            pairs++;
        }
    }
    *pos = at;
    *pairs_out = pairs;
    return 0;
}

int txn_log_value_decode(const uint8_t *buf, size_t len, struct txn_log_value *out,
                         const char **why)
{
    assert(out);
    assert(buf || len == 0);
    memset(out, 0, sizeof(*out));
    if (len == 0)
        return corrupt(why, "TLV1 zero-length value (a tombstone is a null value)");
    if (len < 2)
        return corrupt(why, "TLV1 value truncated (version)");
    int16_t version = (int16_t)be16_load(buf + V_OFF_VERSION);
    if (version != VALUE_VERSION_KAFKA_V0 && version != VALUE_VERSION_RINGTAIL &&
        version != VALUE_VERSION_ONE_ROUND && version != VALUE_VERSION_KEPT_EPOCH)
        return corrupt(why, "TLV1 unknown value version (only Kafka's 0 and ringtail's 0x7201, "
                            "0x7202, 0x7203)");
    if (len < VALUE_HEAD_BYTES)
        return corrupt(why, "TLV2 value truncated (fixed fields)");

    int64_t producer_id = (int64_t)be64_load(buf + V_OFF_PRODUCER_ID);
    int16_t epoch = (int16_t)be16_load(buf + V_OFF_EPOCH);
    int32_t timeout_ms = (int32_t)be32_load(buf + V_OFF_TIMEOUT);
    int8_t state = (int8_t)buf[V_OFF_STATE];
    int32_t topics = (int32_t)be32_load(buf + V_OFF_TOPIC_COUNT);
    if (producer_id < -1)
        return corrupt(why, "TLV3 producer_id below -1");
    if (epoch < -1)
        return corrupt(why, "TLV4 producer_epoch below -1");
    if (timeout_ms < 0)
        return corrupt(why, "TLV5 negative transaction_timeout_ms");
    if (state < TXN_EMPTY || state > TXN_PREPARE_EPOCH_FENCE)
        return corrupt(why, "TLV6 transaction_status out of range 0..7");
    if (topics < -1 || topics > TXN_LOG_PARTITIONS_MAX)
        return corrupt(why, "TLV7 topic count out of range");
    if ((topics == -1) != (state == TXN_EMPTY))
        return corrupt(why, "TLV8 partitions must be null exactly when the state is Empty");
    if (topics > 0 && (size_t)topics > (len - VALUE_HEAD_BYTES) / TOPIC_ENTRY_MIN_BYTES)
        return corrupt(why, "TLV2 value truncated (topic entries)");

    size_t at = VALUE_HEAD_BYTES;
    uint32_t pairs = 0;
    int rc = walk_partitions(buf, len, &at, topics < 0 ? 0 : topics, NULL, &pairs, why);
    if (rc)
        return rc;
    bool kept_epoch = version == VALUE_VERSION_KEPT_EPOCH;
    bool one_round = version == VALUE_VERSION_ONE_ROUND || kept_epoch;
    size_t ext = version != VALUE_VERSION_KAFKA_V0 ? VALUE_EXT_BYTES : 0;
    size_t round_bytes = one_round ? 2 + 4 * (size_t)pairs : 0;
    size_t first_bytes = kept_epoch ? 8 * (size_t)pairs : 0;
    if (len - at < VALUE_TAIL_BYTES)
        return corrupt(why, "TLV2 value truncated (timestamps)");
    if (len - at - VALUE_TAIL_BYTES < ext)
        return corrupt(why, "TLV2 value truncated (check_count, flags)");
    const uint8_t *tail = buf + at;
    int32_t check_count = 0;
    uint8_t flags = 0;
    if (ext) {
        check_count = (int32_t)be32_load(tail + VALUE_TAIL_BYTES);
        flags = tail[VALUE_TAIL_BYTES + 4];
        if (check_count < 0)
            return corrupt(why, "TLV12 negative check_count");
        if (flags & (uint8_t) ~(FLAG_HANGING | FLAG_ACKED_DURABLE))
            return corrupt(why, "TLV12 unknown flags set");
    }
    int16_t txn_epoch = -1;
    if (one_round) {
        const uint8_t *r = tail + VALUE_TAIL_BYTES + ext;
        if (len - at - VALUE_TAIL_BYTES - ext < round_bytes)
            return corrupt(why, "TLV2 value truncated (txn_epoch, last sequences)");
        txn_epoch = (int16_t)be16_load(r);
        if (txn_epoch < 0)
            return corrupt(why, "TLV15 negative txn_epoch");
        if (!state_decides((enum txn_state)state))
            return corrupt(why, "TLV15 a one-round value in a state that decides nothing");
        for (uint32_t k = 0; k < pairs; k++)
            if ((int32_t)be32_load(r + 2 + 4 * (size_t)k) < -1)
                return corrupt(why, "TLV15 last_sequence below -1");
    }
    if (kept_epoch) {
        const uint8_t *f = tail + VALUE_TAIL_BYTES + ext + round_bytes;
        if (len - at - VALUE_TAIL_BYTES - ext - round_bytes < first_bytes)
            return corrupt(why, "TLV2 value truncated (first offsets)");
        for (uint32_t k = 0; k < pairs; k++)
            if ((int64_t)be64_load(f + 8 * (size_t)k) < -1)
                return corrupt(why, "TLV16 first_offset below -1");
    }
    if (len - at != VALUE_TAIL_BYTES + ext + round_bytes + first_bytes)
        return corrupt(why, "TLV13 trailing bytes after the value");

    struct txn_log_partition *parts = NULL;
    if (pairs > 0) {
        parts = malloc(sizeof(*parts) * pairs);
        if (!parts)
            return -ENOMEM;
        uint32_t again = 0;
        at = VALUE_HEAD_BYTES;
        rc = walk_partitions(buf, len, &at, topics, parts, &again, why);
        assert(rc == 0);
        assert(again == pairs);
        const uint8_t *seqs = tail + VALUE_TAIL_BYTES + ext + 2;
        const uint8_t *firsts = tail + VALUE_TAIL_BYTES + ext + round_bytes;
        for (uint32_t k = 0; k < pairs; k++) {
            parts[k].last_sequence = one_round ? (int32_t)be32_load(seqs + 4 * (size_t)k) : -1;
            parts[k].first_offset = kept_epoch ? (int64_t)be64_load(firsts + 8 * (size_t)k) : -1;
        }
        rc = partitions_repeat(parts, pairs);
        if (rc) {
            free(parts);
            return rc < 0 ? rc : corrupt(why, "TLV14 a (topic, partition) pair appears twice");
        }
    }

    out->producer_id = producer_id;
    out->producer_epoch = epoch;
    out->timeout_ms = timeout_ms;
    out->state = (enum txn_state)state;
    out->partition_count = pairs;
    out->partitions = parts;
    out->last_update_ms = (int64_t)be64_load(tail);
    out->start_ms = (int64_t)be64_load(tail + 8);
    out->check_count = (uint32_t)check_count;
    out->hanging = (flags & FLAG_HANGING) != 0;
    out->acked_durable = (flags & FLAG_ACKED_DURABLE) != 0;
    out->one_round = one_round;
    out->kept_epoch = kept_epoch;
    out->txn_epoch = txn_epoch;
    return 0;
}

void txn_log_value_free(struct txn_log_value *v)
{
    if (!v)
        return;
    free(v->partitions);
    v->partitions = NULL;
    v->partition_count = 0;
}

int txn_log_record_check(const uint8_t *key, int32_t key_len, const uint8_t *value,
                         int32_t value_len, const char **what, const char **why)
{
    char id[TXN_ID_MAX_BYTES + 1];
    *what = "bad key";
    if (!key || key_len < 0) {
        *why = "null key";
        return RT_E_CORRUPT;
    }
    if (txn_log_key_decode(key, (size_t)key_len, id, why) != 0)
        return RT_E_CORRUPT;
    if (!value || value_len < 0)
        return 0; /* a tombstone */
    *what = "bad value";
    struct txn_log_value v;
    int rc = txn_log_value_decode(value, (size_t)value_len, &v, why);
    if (rc == 0)
        txn_log_value_free(&v);
    return rc;
}

int txn_log_batch_check(const uint8_t *batch, size_t size, const struct batch_header *h,
                        const char **what, const char **why)
{
    if (batch_is_control(h) ||
        (h->attributes & BATCH_ATTR_COMPRESSION_MASK) != BATCH_COMPRESSION_NONE)
        return 0; /* the replay skips control records; compressed: see the header */
    const uint8_t *p = batch + BATCH_HEADER_BYTES, *end = batch + size;
    for (int32_t i = 0; i < h->record_count; i++) {
        struct record_view rv;
        int n = record_decode(p, end, &rv, why);
        if (n <= 0) {
            *what = "record";
            return RT_E_CORRUPT;
        }
        p += n;
        int rc = txn_log_record_check(rv.key, rv.key_len, rv.value, rv.value_len, what, why);
        if (rc)
            return rc;
    }
    return 0;
}
