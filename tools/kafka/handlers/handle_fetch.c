/*
 * handle_fetch.c — Fetch v4-11 (v0-3: KF5) and ListOffsets v1-3 over rt_fetch_start /
 * rt_list_offsets.
 *
 * Fetch: per partition one rt_fetch (whole batches from one segment, starting at the batch that
 * holds fetch_offset, bounded by the high watermark or, read_committed, the LSO); the response
 * leaves a hole where each partition's records go and net sends the mapping's bytes there with
 * SEND_ZC / MSG_ZEROCOPY (zero copy: the records are never copied in user space); the rt_fetch
 * is held until net's release hook (server.c KS3). A fetch that finds fewer than min_bytes parks
 * (net's NET_PARK) until an append's round wakes its loop (rt_append_watch_set → net_wake) or
 * max_wait_ms passes — no thread waits and nothing polls.
 *
 * Invariants:
 *   KF1  Offsets: fetch_offset below the log start or above the high watermark is
 *        OFFSET_OUT_OF_RANGE (1) with the partition's high watermark, LSO and log start;
 *        between the LSO and the high watermark under read_committed it is an empty answer, not
 *        an error (the records are there, just not stable yet).
 *   KF2  Sizes: the response's max_bytes, capped by the broker's fetch_max_bytes (Kafka's
 *        fetch.max.bytes, 55 MiB), bounds the sum of the partitions' records, except that the
 *        first partition with data gets at least one whole batch (KIP-74, so a batch larger than
 *        max_bytes never stalls a consumer); partition_max_bytes bounds each. A later partition
 *        whose first batch does not fit what is left is answered empty, error NONE, with its
 *        watermarks (the client fetches it next time).
 *   KF3  aborted_transactions is null under read_uncommitted and, read_committed, the engine's
 *        sorted list for the returned range (pointing into the held fetch).
 *   KF4  preferred_read_replica is -1; fetch sessions are not kept: session_id 0 (v7+), which
 *        clients take as "full fetch every time".
 *   KF5  Fetch v0-3 (fetch_downconverted, its own path): records are down-converted to message
 *        format v0 (Fetch v0-1) or v1 (v2-3) by rt_message_set_downconvert (docs/format.md
 *        B.9) and streamed (KF9-KF12), never built whole in memory; max_bytes is capped by
 *        --fetch-max-bytes as for v4+; counted in fetch_downconverted_batches/bytes and
 *        fetch_downconvert_chunks. Control batches are dropped (a fetch that finds only them
 *        goes on after them, up to 16 times); these versions read uncommitted, so aborted data
 *        is served, as Kafka serves it.
 *   KF9  Sizing (as Kafka's LazyDownConversionRecords): a partition's records_len is fixed when
 *        the response is encoded, before any byte is converted for sending: the larger of an
 *        estimate of what the fetched v2 batches convert to (dc_estimate: a bound for
 *        uncompressed batches, the first batch's growth for compressed ones; Kafka takes their
 *        v2 size, which cuts most answers of small records short) and the first convertible
 *        batch's converted size (learnt by converting that one batch, nothing kept), so the
 *        first batch always goes whole; at most the partition's limit, which only the first
 *        partition with data may pass (KIP-74: a later one whose first converted batch exceeds
 *        its limit answers no records), and then by that one batch. Each such partition is a
 *        generated net slice (net.c KN10) over the held fetch.
 *   KF10 Memory: the converted bytes are made as net's copy buffer drains, whole batches of at
 *        most KAFKA_DOWNCONVERT_CHUNK_BYTES at a time (one batch larger than that alone, in a
 *        buffer of its size) into one buffer per slot, freed when the partition's bytes are all
 *        given; net sends one slot of a connection at a time (KN1), so a connection holds at
 *        most max(chunk, its largest converted batch) of converted bytes, whatever max_bytes
 *        says (fetch_downconvert_buffer_max reports the largest). The engine's per-thread
 *        scratch is its own bound (msgset.c).
 *   KF11 Short: when the converted bytes run out before records_len (smaller messages than v2,
 *        skipped records, damage or zstd met mid-way, no memory), the rest is an overflow tail
 *        as Kafka's buildOverflowBatch writes it: offset -1, a size one past the bytes left
 *        (at least 61), zeros; old consumers read it as a partial message and ignore it
 *        (counted in fetch_downconvert_padded_bytes).
 *   KF12 Long: converted bytes past records_len are not sent (the answer ends in a partial
 *        message, which old consumers ignore and fetch again from the next offset); the first
 *        message of every non-empty answer is whole (KF9).
 *   KF6  ListOffsets by timestamp answers Kafka's fetchOffsetByTimestamp: the first record at
 *        or after the timestamp below the HW (LSO under read_committed), its offset and its
 *        timestamp; none: offset -1, timestamp -1. Earliest (-2) and latest (-1) answer the
 *        log start or the HW/LSO with timestamp -1.
 *   KF7  ListOffsets v7 max timestamp (-3, KIP-734) answers the first record holding the
 *        partition's largest timestamp (below the HW, or the LSO) with that timestamp; an
 *        empty partition answers -1/-1. Below v7, -3 is INVALID_REQUEST like any spec < -2.
 *   KF8  ListOffsets v0 answers old_style_offsets: the one offset v1 would answer (when it is
 *        >= 0 and max_num_offsets >= 1), else empty. Kafka's legacy answer for a timestamp
 *        (segment base offsets by file time) is not reproduced; clients ask v0 for -1/-2.
 *   KF13 In a cluster (--voters; a single broker answers as before) every partition of a Fetch
 *        (v0-11) and a ListOffsets is checked first as Kafka's localLogWithEpochOrThrow
 *        (replica_state.h rs_check): a current_leader_epoch (Fetch v9+, ListOffsets v4+) below
 *        the image's is FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH, and a node that is
 *        not the partition's ready leader answers NOT_LEADER_OR_FOLLOWER, consumers and
 *        followers alike. A follower's fetch (v4+, replica_id >= 0) reads with RT_READ_REPLICA to
 *        the log end and records its fetch offset as the follower's log end (rs_follower_fetch,
 *        RS3); its answer carries the leader's high watermark.
 */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

_Static_assert(sizeof(struct rt_aborted_txn) == sizeof(struct kmsg_fetch_aborted),
               "the engine's aborted list is sent as it is");
_Static_assert(offsetof(struct rt_aborted_txn, producer_id) ==
                       offsetof(struct kmsg_fetch_aborted, producer_id) &&
                   offsetof(struct rt_aborted_txn, first_offset) ==
                       offsetof(struct kmsg_fetch_aborted, first_offset),
               "the engine's aborted list is sent as it is");

/* The partition's edges when rt_fetch_start says no. */
static void partition_edges(rt_engine *e, const char *topic, uint32_t p,
                            struct kmsg_fetch_partition_response *r)
{
    int64_t v = -1;
    r->high_watermark =
        rt_list_offsets(e, topic, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &v) ? -1 : v;
    r->last_stable_offset =
        rt_list_offsets(e, topic, p, RT_OFFSET_LATEST, RT_READ_COMMITTED, &v) ? -1 : v;
    r->log_start_offset =
        rt_list_offsets(e, topic, p, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &v) ? -1 : v;
}

static void release_held(struct kafka_slot *s)
{
    for (uint32_t i = 0; i < s->fetch_count; i++)
        rt_fetch_release(s->fetches[i]);
    s->fetch_count = 0;
}

/* ---- Fetch v0-3: message formats v0/v1, streamed (KF5, KF9-KF12) ------------------------- */

/* A streamed conversion's buffer: converted whole batches of at most this much at once (a
 * batch bigger than it is converted alone into a buffer of its size). */
#define KAFKA_DOWNCONVERT_CHUNK_BYTES ((size_t)128 << 10)
/* Fetches of a partition skipping batches that convert to nothing (markers, records below the
 * fetch offset) before the partition answers empty. */
#define KAFKA_DOWNCONVERT_SKIPS_MAX 16

/* One partition's generated slice (KF9): the held fetch's v2 bytes data[pos, len) not yet
 * converted, and the slice's bytes net has not asked for yet. In the response arena. */
struct kafka_dc_part {
    struct kafka_slot *slot;
    const uint8_t *data;
    size_t len, pos;
    int64_t offset;   /* the fetch offset: records below it are skipped (MS10) */
    size_t left;      /* bytes of the slice still to give */
    size_t pad_total; /* KF11: the bytes left when the converted ones ran out (0: not yet) */
    bool done;        /* nothing more to convert */
};

static void stat_max(_Atomic uint64_t *m, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

/* KF10: converts p's next chunk into the slot's buffer (made or grown here); sets p->done when
 * nothing more converts (the end, or damage met after the response was sized: KF11 pads). */
static void dc_refill(struct kafka_dc_part *p)
{
    struct kafka_slot *s = p->slot;
    struct kafka_server *srv = s->server;
    int8_t magic = s->header.api_version >= 2 ? 1 : 0;
    s->dc_owner = p;
    s->dc_off = s->dc_len = 0;
    if (!s->dc_buf) {
        s->dc_buf = malloc(KAFKA_DOWNCONVERT_CHUNK_BYTES);
        if (!s->dc_buf) {
            p->done = true;
            return;
        }
        s->dc_cap = KAFKA_DOWNCONVERT_CHUNK_BYTES;
    }
    for (int pass = 0; pass < 2; pass++) {
        struct rt_downconvert_result res;
        int rc = rt_message_set_downconvert(p->data + p->pos, p->len - p->pos, p->offset, magic,
                                            s->dc_buf, s->dc_cap, &res);
        if (rc) {
            kafka_log("fetch v0-3: down-conversion stopped: %s", rt_error_detail());
            p->done = true;
            return;
        }
        p->pos += res.consumed_bytes; /* MS14 */
        if (res.size_bytes > 0) {
            s->dc_len = res.size_bytes;
            atomic_fetch_add_explicit(&srv->stats.fetch_downconvert_chunks, 1,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&srv->stats.fetch_downconverted_batches, res.batches,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&srv->stats.fetch_downconverted_bytes, res.size_bytes,
                                      memory_order_relaxed);
            stat_max(&srv->stats.fetch_downconvert_buffer_max, s->dc_cap);
            return;
        }
        if (res.needed_bytes == 0 || pass > 0)
            break;
        /* KF10: one batch bigger than the chunk: converted alone, in a buffer of its size. */
        uint8_t *nb = realloc(s->dc_buf, res.needed_bytes);
        if (!nb)
            break;
        s->dc_buf = nb;
        s->dc_cap = res.needed_bytes;
    }
    p->done = true;
}

/* KF11: byte i of the overflow tail of `total` bytes: offset -1, a size one past what is left
 * (at least 61, as Kafka's LazyDownConversionRecordsSend.buildOverflowBatch writes it; the
 * consumer sees a partial message and ignores it), zeros. */
static uint8_t dc_pad_byte(size_t total, size_t i)
{
    if (i < 8)
        return 0xff;
    if (i < 12) {
        uint32_t size = total >= INT32_MAX ? INT32_MAX : (uint32_t)total + 1;
        if (size < RT_BATCH_HEADER_BYTES)
            size = RT_BATCH_HEADER_BYTES; /* as Kafka: at least a batch header's length */
        return (uint8_t)(size >> (8 * (11 - i)));
    }
    return 0;
}

void kafka_downconvert_fill(void *part, uint8_t *dst, size_t len)
{
    struct kafka_dc_part *p = part;
    struct kafka_slot *s = p->slot;
    assert(len <= p->left);
    while (len > 0) {
        if (!p->done && (s->dc_owner != p || s->dc_off == s->dc_len))
            dc_refill(p);
        if (p->done && (s->dc_owner != p || s->dc_off == s->dc_len)) {
            if (p->pad_total == 0)
                p->pad_total = p->left;
            size_t at = p->pad_total - p->left;
            for (size_t i = 0; i < len; i++)
                dst[i] = dc_pad_byte(p->pad_total, at + i);
            atomic_fetch_add_explicit(&s->server->stats.fetch_downconvert_padded_bytes, len,
                                      memory_order_relaxed);
            p->left -= len;
            break;
        }
        size_t take = s->dc_len - s->dc_off;
        if (take > len)
            take = len;
        memcpy(dst, s->dc_buf + s->dc_off, take); /* KF12: the tail past left is dropped */
        s->dc_off += take;
        dst += take;
        len -= take;
        p->left -= take;
    }
    if (p->left == 0 && s->dc_owner == p) { /* KF10: the partition's bytes are all given */
        free(s->dc_buf);
        s->dc_buf = NULL;
        s->dc_cap = s->dc_off = s->dc_len = 0;
        s->dc_owner = NULL;
    }
}

/* KF9: what the whole batches of [data, +len) convert to at most: an uncompressed batch's
 * records each grow by at most the legacy entry's fixed part less a v2 record's smallest one
 * (12 + 22 - 7 for v1, 12 + 14 - 7 for v0) and lose the batch header; a compressed batch is
 * taken at its own size grown as the first convertible batch grew (first_in bytes of v2 became
 * first_out), and an eighth (legacy messages compress worse: offsets, CRCs); a wrapper that
 * still comes out larger is cut (KF12), a smaller one padded (KF11). */
static size_t dc_estimate(const uint8_t *data, size_t len, int8_t magic, size_t first_in,
                          size_t first_out)
{
    size_t grow = magic == 1 ? 27 : 19, est = 0;
    const uint8_t *p = data, *end = data + len;
    while (end - p >= RT_BATCH_HEADER_BYTES) {
        size_t size = (size_t)kp_load_be32(p + RT_BATCH_OFF_LENGTH) + RT_BATCH_LOG_OVERHEAD_BYTES;
        if (size > (size_t)(end - p) || size < RT_BATCH_HEADER_BYTES)
            break;
        uint16_t attrs =
            (uint16_t)(p[RT_BATCH_OFF_ATTRIBUTES] << 8 | p[RT_BATCH_OFF_ATTRIBUTES + 1]);
        uint32_t count = kp_load_be32(p + RT_BATCH_HEADER_BYTES - 4);
        if ((attrs & 0x07) == 0)
            est += size - RT_BATCH_HEADER_BYTES + (size_t)count * grow;
        else if (first_out > first_in && first_in > 0) /* grown as the first batch grew */
            est += (size_t)((uint64_t)size * first_out / first_in) + size / 8;
        else
            est += size + size / 8;
        p += size;
    }
    return est;
}

/* One partition of a Fetch v0-3, sized without converting more than its first batch (KF9):
 * the fetch is held in s->fetches and *part set, records_len the answer's size; or the
 * partition answers no records (an error, nothing to convert, or KF2). */
static int16_t downconvert_partition(struct kafka_slot *s, const char *name, uint32_t part,
                                     int64_t offset, int64_t limit, bool first, int8_t magic,
                                     struct kafka_dc_part *dp,
                                     struct kmsg_fetch_partition_response *r)
{
    struct kafka_server *srv = s->server;
    for (int skip = 0; skip < KAFKA_DOWNCONVERT_SKIPS_MAX; skip++) {
        rt_fetch *f = NULL;
        int rc =
            rt_fetch_start(srv->engine, name, part, offset, (size_t)limit, RT_READ_UNCOMMITTED, &f);
        if (rc) {
            int64_t asked = offset;
            partition_edges(srv->engine, name, part, r);
            if (rc == RT_E_OFFSET_OUT_OF_RANGE && skip > 0 && asked <= r->high_watermark)
                return KAFKA_NONE; /* skipped to the end */
            return kafka_error_from_rt(rc);
        }
        const struct rt_fetch_view *v = rt_fetch_get(f);
        r->high_watermark = v->high_watermark;
        r->log_start_offset = v->log_start_offset;
        if (v->size_bytes == 0) {
            rt_fetch_release(f);
            return KAFKA_NONE;
        }
        /* KF9: the first convertible batch's converted size, nothing written (cap 0). */
        struct rt_downconvert_result res;
        rc = rt_message_set_downconvert(v->data, v->size_bytes, offset, magic, NULL, 0, &res);
        if (rc) {
            rt_fetch_release(f);
            kafka_log("fetch v0-3 of %s-%u: %s", name, part, rt_error_detail());
            return kafka_error_from_rt(rc);
        }
        if (res.needed_bytes > 0) {
            const uint8_t *fb = v->data + res.consumed_bytes; /* the first convertible */
            size_t first_in =
                (size_t)kp_load_be32(fb + RT_BATCH_OFF_LENGTH) + RT_BATCH_LOG_OVERHEAD_BYTES;
            size_t est = dc_estimate(v->data, v->size_bytes, magic, first_in, res.needed_bytes);
            size_t size = est > res.needed_bytes ? est : res.needed_bytes;
            if (size > (size_t)limit) {
                if (!first && res.needed_bytes > (size_t)limit) {
                    rt_fetch_release(f);
                    return KAFKA_NONE; /* KF2: only the first partition may exceed its share */
                }
                size = res.needed_bytes > (size_t)limit ? res.needed_bytes : (size_t)limit;
            }
            if (size > INT32_MAX) {
                rt_fetch_release(f);
                return KAFKA_NONE;
            }
            s->fetches[s->fetch_count++] = f; /* held until the release hook */
            *dp = (struct kafka_dc_part){
                .slot = s,
                .data = v->data,
                .len = v->size_bytes,
                .offset = offset,
                .left = size,
            };
            r->records_len = (int32_t)size;
            return KAFKA_NONE;
        }
        /* The batches held only markers or records below the offset: go on after them. */
        int64_t next = offset;
        const uint8_t *p = v->data, *end = v->data + v->size_bytes;
        while (end - p >= RT_BATCH_HEADER_BYTES) {
            uint32_t len = kp_load_be32(p + RT_BATCH_OFF_LENGTH);
            if ((size_t)len + RT_BATCH_LOG_OVERHEAD_BYTES > (size_t)(end - p))
                break;
            int64_t base = (int64_t)kp_load_be64(p + RT_BATCH_OFF_BASE_OFFSET);
            uint32_t delta = kp_load_be32(p + RT_BATCH_OFF_LAST_OFFSET_DELTA);
            next = base + (int64_t)delta + 1;
            p += (size_t)len + RT_BATCH_LOG_OVERHEAD_BYTES;
        }
        rt_fetch_release(f);
        if (next <= offset)
            return KAFKA_NONE;
        offset = next;
    }
    return KAFKA_NONE;
}

/* KF5: Fetch v0-3, for consumers that read message format v0 (Fetch v0-1) or v1 (v2-3). The
 * records are fetched as usual and held; each partition's answer is a generated slice whose
 * size is fixed here (KF9) and whose bytes are down-converted chunk by chunk as the socket
 * drains (KF10: rt_message_set_downconvert, control batches and headers dropped, aborted data
 * kept — these versions read uncommitted, as in Kafka), so no buffer of the response's size is
 * ever made; zero copy of the segment stays the v4+ path. max_bytes (v3) bounds the response
 * as KF2 says. */
static enum net_verdict fetch_downconverted(struct kafka_slot *s, bool retry, bool expired)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_fetch_request *q = &s->msg.fetch;
    int8_t magic = s->header.api_version >= 2 ? 1 : 0;
    struct replica_state *rs = kafka_replicas(srv); /* KF13 */
    if (!retry)
        s->poll_started_ms = net_now_ms();
    release_held(s);
    uint64_t parts = 0;
    for (int32_t t = 0; t < q->topics_count; t++)
        parts += (uint64_t)(q->topics[t].partitions_count > 0 ? q->topics[t].partitions_count : 0);
    size_t need = (size_t)q->topics_count * sizeof(struct kmsg_fetch_topic_response) +
                  (size_t)parts *
                      (sizeof(struct kmsg_fetch_partition_response) + sizeof(struct kafka_dc_part));
    if (kafka_resp_reserve(s, need) != 0 || kafka_holes_reserve(s, parts) != 0)
        return NET_CLOSE;
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    struct kmsg_fetch_topic_response *topics = kafka_alloc(s, (size_t)nt, sizeof(*topics));
    if (nt > 0 && !topics)
        return NET_CLOSE;
    uint64_t used = 0;
    int64_t budget = s->header.api_version >= 3 && q->max_bytes > 0 ? q->max_bytes : INT64_MAX;
    if (budget > (int64_t)srv->opts.fetch_max_bytes)
        budget = (int64_t)srv->opts.fetch_max_bytes; /* KF2, as for v4+ */
    bool any_error = false;
    for (int32_t t = 0; t < nt; t++) {
        const struct kmsg_fetch_topic *qt = &q->topics[t];
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_fetch_partition_response *rp = kafka_alloc(s, (size_t)np, sizeof(*rp));
        struct kafka_dc_part *dps = kafka_alloc(s, (size_t)np, sizeof(*dps));
        if (np > 0 && (!rp || !dps)) {
            release_held(s);
            return NET_CLOSE;
        }
        topics[t].topic = qt->topic;
        topics[t].partitions = rp;
        topics[t].partitions_count = np;
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t partitions = 0;
        bool named = kafka_topic_name(qt->topic, name);
        bool denied = named && !kafka_authorize_topic(s, name, ACL_OP_READ); /* KZ2 */
        bool known = named && !denied && rt_topic_describe(srv->engine, name, &partitions) == 0;
        for (int32_t p = 0; p < np; p++) {
            const struct kmsg_fetch_partition *qp = &qt->partitions[p];
            struct kmsg_fetch_partition_response *r = &rp[p];
            r->partition_index = qp->partition;
            r->high_watermark = -1;
            r->last_stable_offset = -1;
            r->log_start_offset = -1;
            r->preferred_read_replica = -1;
            r->aborted_transactions_count = -1;
            r->records_len = 0;
            if (!known || qp->partition < 0 || (uint32_t)qp->partition >= partitions) {
                r->error_code =
                    denied ? KAFKA_TOPIC_AUTHORIZATION_FAILED : KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                any_error = true;
                continue;
            }
            int64_t limit = qp->partition_max_bytes;
            if (limit > budget)
                limit = budget;
            if ((limit <= 0 && used > 0) || s->fetch_count == s->holes_cap) {
                partition_edges(srv->engine, name, (uint32_t)qp->partition, r);
                continue;
            }
            if (rs) { /* KF13 */
                r->error_code = rs_check(rs, name, qp->partition, -1, NULL, NULL);
                if (r->error_code != KAFKA_NONE) {
                    any_error = true;
                    continue;
                }
            }
            if (limit <= 0)
                limit = 1;
            r->error_code =
                downconvert_partition(s, name, (uint32_t)qp->partition, qp->fetch_offset, limit,
                                      used == 0, magic, &dps[p], r);
            r->last_stable_offset = r->high_watermark;
            any_error |= r->error_code != KAFKA_NONE;
            if (r->records_len > 0) {
                r->records = NULL;
                r->records_ref = &dps[p]; /* KF9: a generated slice */
            }
            used += (uint64_t)r->records_len;
            budget -= r->records_len;
        }
    }
    bool enough = any_error || used >= (uint64_t)(q->min_bytes > 0 ? q->min_bytes : 0);
    if (!enough && !expired && q->max_wait_ms > 0) {
        int64_t deadline = s->poll_started_ms + q->max_wait_ms;
        if (net_now_ms() < deadline) {
            release_held(s);
            s->req->deadline_ms = deadline;
            if (!retry)
                atomic_fetch_add_explicit(&srv->stats.fetch_long_polls, 1, memory_order_relaxed);
            return NET_PARK;
        }
    }
    atomic_fetch_add_explicit(&srv->stats.fetch_bytes, used, memory_order_relaxed);
    for (int32_t t = 0; t < nt; t++)
        for (int32_t p = 0; p < topics[t].partitions_count; p++)
            kafka_count_error(s, topics[t].partitions[p].error_code);
    struct kmsg_fetch_response m = {.responses = topics, .responses_count = nt};
    kafka_response_begin(s);
    kmsg_fetch_response_encode(&s->w, s->header.api_version, &m);
    s->dc_generated = true; /* KF9: every hole is a partition's generated slice */
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_fetch(struct kafka_slot *s, bool retry, bool expired)
{
    if (s->header.api_version < 4)
        return fetch_downconverted(s, retry, expired); /* KF5 */
    struct kafka_server *srv = s->server;
    const struct kmsg_fetch_request *q = &s->msg.fetch;
    enum rt_isolation iso = q->isolation_level == 1 ? RT_READ_COMMITTED : RT_READ_UNCOMMITTED;
    struct replica_state *rs = kafka_replicas(srv); /* KF13 */
    bool follower = rs && q->replica_id >= 0;
    if (follower)
        iso = RT_READ_REPLICA; /* to the log end */
    if (!retry)
        s->poll_started_ms = net_now_ms();
    release_held(s);

    uint64_t parts = 0;
    for (int32_t t = 0; t < q->topics_count; t++)
        parts += (uint64_t)(q->topics[t].partitions_count > 0 ? q->topics[t].partitions_count : 0);
    size_t need = (size_t)q->topics_count * sizeof(struct kmsg_fetch_topic_response) +
                  (size_t)parts * sizeof(struct kmsg_fetch_partition_response);
    if (kafka_resp_reserve(s, need) != 0 || kafka_holes_reserve(s, parts) != 0)
        return NET_CLOSE;
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    struct kmsg_fetch_topic_response *topics = kafka_alloc(s, (size_t)nt, sizeof(*topics));
    if (nt > 0 && !topics)
        return NET_CLOSE;

    /* KF2: the client's max_bytes, capped by the broker's fetch.max.bytes whatever it asks. */
    int64_t budget = q->max_bytes > 0 ? q->max_bytes : INT32_MAX;
    if (budget > (int64_t)srv->opts.fetch_max_bytes)
        budget = (int64_t)srv->opts.fetch_max_bytes;
    uint64_t total = 0;
    bool any_data = false;
    for (int32_t t = 0; t < nt; t++) {
        const struct kmsg_fetch_topic *qt = &q->topics[t];
        struct kmsg_fetch_topic_response *rt = &topics[t];
        rt->topic = qt->topic;
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_fetch_partition_response *rp = kafka_alloc(s, (size_t)np, sizeof(*rp));
        if (np > 0 && !rp)
            return NET_CLOSE;
        rt->partitions = rp;
        rt->partitions_count = np;
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t partitions = 0;
        bool named = kafka_topic_name(qt->topic, name);
        bool denied = named && !kafka_authorize_topic(s, name, ACL_OP_READ); /* KZ2 */
        bool known = named && !denied && rt_topic_describe(srv->engine, name, &partitions) == 0;
        for (int32_t p = 0; p < np; p++) {
            const struct kmsg_fetch_partition *qp = &qt->partitions[p];
            struct kmsg_fetch_partition_response *r = &rp[p];
            r->partition_index = qp->partition;
            r->high_watermark = -1;
            r->last_stable_offset = -1;
            r->log_start_offset = -1;
            r->preferred_read_replica = -1;                                    /* KF4 */
            r->aborted_transactions_count = iso == RT_READ_COMMITTED ? 0 : -1; /* KF3 */
            r->records_len = 0;
            if (!known || qp->partition < 0 || (uint32_t)qp->partition >= partitions) {
                r->error_code =
                    denied ? KAFKA_TOPIC_AUTHORIZATION_FAILED : KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            uint32_t part = (uint32_t)qp->partition;
            if (rs) { /* KF13 */
                r->error_code = rs_check(rs, name, qp->partition,
                                         s->header.api_version >= 9 ? qp->current_leader_epoch : -1,
                                         NULL, NULL);
                if (r->error_code != KAFKA_NONE)
                    continue;
            }
            int64_t limit = qp->partition_max_bytes;
            if (limit > budget)
                limit = budget;
            if ((limit <= 0 && any_data) || s->fetch_count == s->holes_cap) {
                partition_edges(srv->engine, name, part, r); /* KF2: no room left */
                continue;
            }
            if (limit <= 0)
                limit = 1; /* the first partition with data gets one whole batch */
            rt_fetch *f = NULL;
            int rc =
                rt_fetch_start(srv->engine, name, part, qp->fetch_offset, (size_t)limit, iso, &f);
            if (rc) {
                partition_edges(srv->engine, name, part, r);
                if (rc == RT_E_OFFSET_OUT_OF_RANGE && qp->fetch_offset >= r->log_start_offset &&
                    qp->fetch_offset <= r->high_watermark && r->log_start_offset >= 0)
                    continue; /* KF1: past the LSO, not past the end */
                r->error_code = kafka_error_from_rt(rc);
                continue;
            }
            const struct rt_fetch_view *v = rt_fetch_get(f);
            if (follower) /* KF13, RS3: its fetch offset is its log end */
                r->error_code = rs_follower_fetch(rs, name, qp->partition, q->replica_id,
                                                  qp->fetch_offset, v->size_bytes == 0);
            if (r->error_code != KAFKA_NONE) {
                rt_fetch_release(f);
                continue;
            }
            if (any_data && v->size_bytes > (uint64_t)limit) {
                /* KF2: past the first partition with data only whole batches that fit are
                 * answered; the engine's one-batch minimum is the first partition's alone. */
                partition_edges(srv->engine, name, part, r);
                rt_fetch_release(f);
                continue;
            }
            r->high_watermark = v->high_watermark;
            r->last_stable_offset = v->last_stable_offset;
            r->log_start_offset = v->log_start_offset;
            if (iso == RT_READ_COMMITTED) {
                r->aborted_transactions = (const struct kmsg_fetch_aborted *)v->aborted;
                r->aborted_transactions_count = (int32_t)v->aborted_count;
            }
            if (v->size_bytes == 0 || v->size_bytes > INT32_MAX) {
                rt_fetch_release(f);
                r->aborted_transactions_count = iso == RT_READ_COMMITTED ? 0 : -1;
                continue;
            }
            s->fetches[s->fetch_count++] = f; /* KS3: held until the release hook */
            r->records_len = (int32_t)v->size_bytes;
            if (srv->opts.zero_copy) {
                r->records = NULL;
                r->records_ref = (void *)v->data;
            } else {
                r->records = v->data; /* copied into the response (the comparison path) */
            }
            total += v->size_bytes;
            budget -= (int64_t)v->size_bytes;
            any_data = true;
        }
    }
    bool any_error = false;
    for (int32_t t = 0; t < nt; t++)
        for (int32_t p = 0; p < topics[t].partitions_count; p++)
            any_error |= topics[t].partitions[p].error_code != KAFKA_NONE;
    /* Kafka answers at once on an error, and when min_bytes is there. */
    bool enough = any_error || total >= (uint64_t)(q->min_bytes > 0 ? q->min_bytes : 0);
    if (!enough && !expired && q->max_wait_ms > 0) {
        int64_t deadline = s->poll_started_ms + q->max_wait_ms;
        if (net_now_ms() < deadline) {
            release_held(s);
            s->req->deadline_ms = deadline;
            if (!retry)
                atomic_fetch_add_explicit(&srv->stats.fetch_long_polls, 1, memory_order_relaxed);
            return NET_PARK;
        }
    }
    atomic_fetch_add_explicit(&srv->stats.fetch_bytes, total, memory_order_relaxed);
    if (!srv->opts.zero_copy)
        atomic_fetch_add_explicit(&srv->stats.fetch_bytes_copied, total, memory_order_relaxed);
    for (int32_t t = 0; t < nt; t++)
        for (int32_t p = 0; p < topics[t].partitions_count; p++)
            kafka_count_error(s, topics[t].partitions[p].error_code);
    struct kmsg_fetch_response m = {
        .error_code = KAFKA_NONE,
        .session_id = 0, /* KF4 */
        .responses = topics,
        .responses_count = nt,
    };
    kafka_response_begin(s);
    kmsg_fetch_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* KF7: the first record with the largest timestamp below the HW (LSO), by a binary search for
 * the largest T that has a record at or after it: "some record's timestamp >= T" only turns
 * from true to false as T grows, and the first record >= that T carries it. */
static int list_offsets_max_timestamp(rt_engine *e, const char *topic, uint32_t part,
                                      enum rt_isolation iso, int64_t *off, int64_t *ts)
{
    int64_t lo = 0, hi = INT64_MAX, o = -1, t = -1;
    int rc = rt_list_offsets_by_timestamp(e, topic, part, 0, iso, &o, &t);
    if (rc || o < 0) {
        *off = -1;
        *ts = -1;
        return rc;
    }
    lo = t; /* a record at or after lo exists; find the largest such lo */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2 + 1;
        rc = rt_list_offsets_by_timestamp(e, topic, part, mid, iso, &o, &t);
        if (rc)
            return rc;
        if (o >= 0)
            lo = t; /* t >= mid: jump to the record's own timestamp */
        else
            hi = mid - 1;
    }
    return rt_list_offsets_by_timestamp(e, topic, part, lo, iso, off, ts);
}

enum net_verdict kafka_handle_list_offsets(struct kafka_slot *s)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_list_offsets_request *q = &s->msg.list_offsets;
    enum rt_isolation iso = q->isolation_level == 1 ? RT_READ_COMMITTED : RT_READ_UNCOMMITTED;
    struct replica_state *rs = kafka_replicas(srv); /* KF13 */
    uint64_t parts = 0;
    for (int32_t t = 0; t < q->topics_count; t++)
        parts += (uint64_t)(q->topics[t].partitions_count > 0 ? q->topics[t].partitions_count : 0);
    int32_t nt = q->topics_count > 0 ? q->topics_count : 0;
    if (kafka_resp_reserve(s, (size_t)nt * sizeof(struct kmsg_list_offsets_topic_response) +
                                  (size_t)parts *
                                      (sizeof(struct kmsg_list_offsets_partition_response) +
                                       sizeof(int64_t))) != 0)
        return NET_CLOSE;
    struct kmsg_list_offsets_topic_response *topics = kafka_alloc(s, (size_t)nt, sizeof(*topics));
    if (nt > 0 && !topics)
        return NET_CLOSE;
    for (int32_t t = 0; t < nt; t++) {
        const struct kmsg_list_offsets_topic *qt = &q->topics[t];
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_list_offsets_partition_response *rp = kafka_alloc(s, (size_t)np, sizeof(*rp));
        if (np > 0 && !rp)
            return NET_CLOSE;
        topics[t].name = qt->name;
        topics[t].partitions = rp;
        topics[t].partitions_count = np;
        char name[RT_TOPIC_NAME_MAX + 1];
        bool named = kafka_topic_name(qt->name, name);
        for (int32_t p = 0; p < np; p++) {
            const struct kmsg_list_offsets_partition *qp = &qt->partitions[p];
            struct kmsg_list_offsets_partition_response *r = &rp[p];
            r->partition_index = qp->partition_index;
            r->timestamp = -1;
            r->offset = -1;
            if (named && !kafka_authorize_topic(s, name, ACL_OP_DESCRIBE)) { /* KZ2 */
                r->error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
                kafka_count_error(s, r->error_code);
                continue;
            }
            if (!named || qp->partition_index < 0) {
                r->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                kafka_count_error(s, r->error_code);
                continue;
            }
            if (rs) { /* KF13 */
                r->error_code = rs_check(rs, name, qp->partition_index,
                                         s->header.api_version >= 4 ? qp->current_leader_epoch : -1,
                                         NULL, NULL);
                if (r->error_code != KAFKA_NONE) {
                    kafka_count_error(s, r->error_code);
                    continue;
                }
            }
            bool max_ts = qp->timestamp == KAFKA_LIST_OFFSETS_MAX_TIMESTAMP &&
                          s->header.api_version >= 7; /* KF7 */
            if (qp->timestamp < -2 && !max_ts) {
                r->error_code = KAFKA_INVALID_REQUEST;
                kafka_count_error(s, r->error_code);
                continue;
            }
            int64_t off = -1, ts = -1;
            uint32_t part = (uint32_t)qp->partition_index;
            int rc = max_ts ? list_offsets_max_timestamp(srv->engine, name, part, iso, &off, &ts)
                     : qp->timestamp >= 0
                         ? rt_list_offsets_by_timestamp(srv->engine, name, part, qp->timestamp, iso,
                                                        &off, &ts)
                         : rt_list_offsets(srv->engine, name, part, qp->timestamp, iso, &off);
            r->error_code = kafka_error_from_rt(rc);
            if (rc == 0) { /* KF6 */
                r->offset = off;
                r->timestamp = ts;
                /* KF8: v0 answers the offset in a list of at most max_num_offsets. */
                int64_t *old = off >= 0 && qp->max_num_offsets > 0 ? kafka_alloc(s, 1, 8) : NULL;
                if (old) {
                    *old = off;
                    r->old_style_offsets = old;
                    r->old_style_offsets_count = 1;
                }
            }
            kafka_count_error(s, r->error_code);
        }
    }
    struct kmsg_list_offsets_response m = {.topics = topics, .topics_count = nt};
    kafka_response_begin(s);
    kmsg_list_offsets_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
