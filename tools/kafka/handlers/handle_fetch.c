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
 *        B.9), whole batches only, into one buffer per response of at most 64 MiB and at most
 *        --connection-max-response-bytes (except the first converted batch, which may pass it
 *        up to 64 MiB, as KIP-74 lets it), sent as slices of that buffer (holes, not copied
 *        again) and freed by the release hook (slot.downconverted); max_bytes is capped by
 *        --fetch-max-bytes as for v4+; counted in fetch_downconverted_batches/bytes. Control batches are
 *        dropped (a fetch that finds only them goes on after them, up to 16 times); these
 *        versions read uncommitted, so aborted data is served, as Kafka serves it.
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
 */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- Fetch v0-3: message formats v0/v1 (KF5) --------------------------------------------- */

/* Converted bytes one Fetch v0-3 response may hold; partitions beyond it answer no records
 * (the consumer fetches them again). The first partition with data may need more than its
 * partition_max_bytes for one whole converted batch, up to this much. */
#define KAFKA_DOWNCONVERT_RESPONSE_MAX_BYTES ((size_t)64 << 20)
/* Fetches of a partition skipping batches that convert to nothing (markers, records below the
 * fetch offset) before the partition answers empty. */
#define KAFKA_DOWNCONVERT_SKIPS_MAX 16

/* One partition's records, down-converted into buf (grown, at most the response bound) from
 * *used; records_len is set, records is fixed up by the caller once buf stops moving. */
static int16_t downconvert_partition(struct kafka_server *srv, const char *name, uint32_t part,
                                     int64_t offset, int64_t limit, bool first, int8_t magic,
                                     size_t bound, uint8_t **buf, size_t *cap, size_t *used,
                                     struct kmsg_fetch_partition_response *r)
{
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
        size_t room = (size_t)limit;
        for (int pass = 0; pass < 2; pass++) {
            /* The first data may pass the connection's bound (up to 64 MiB), as the first batch
             * passes max_bytes (KIP-74): else a batch bigger than the bound stalls the consumer. */
            size_t cap_now = *used == 0 ? KAFKA_DOWNCONVERT_RESPONSE_MAX_BYTES : bound;
            if (*used + room > cap_now) {
                rt_fetch_release(f);
                return KAFKA_NONE; /* KF5: the response is full; fetched again later */
            }
            if (*used + room > *cap) {
                uint8_t *nb = realloc(*buf, *used + room);
                if (!nb) {
                    rt_fetch_release(f);
                    return KAFKA_UNKNOWN_SERVER_ERROR;
                }
                *buf = nb;
                *cap = *used + room;
            }
            struct rt_downconvert_result res;
            rc = rt_message_set_downconvert(v->data, v->size_bytes, offset, magic, *buf + *used,
                                            room, &res);
            if (rc) {
                rt_fetch_release(f);
                fprintf(stderr, "ringtail serve: fetch v0-3 of %s-%u: %s\n", name, part,
                        rt_error_detail());
                return kafka_error_from_rt(rc);
            }
            if (res.size_bytes > 0) {
                rt_fetch_release(f);
                *used += res.size_bytes;
                r->records_len = (int32_t)res.size_bytes;
                atomic_fetch_add_explicit(&srv->stats.fetch_downconverted_batches, res.batches,
                                          memory_order_relaxed);
                atomic_fetch_add_explicit(&srv->stats.fetch_downconverted_bytes, res.size_bytes,
                                          memory_order_relaxed);
                return KAFKA_NONE;
            }
            if (res.needed_bytes == 0)
                break; /* nothing to convert in these batches: skip past them */
            if (!first) {
                rt_fetch_release(f);
                return KAFKA_NONE; /* KF2: only the first partition may exceed its share */
            }
            room = res.needed_bytes; /* one whole converted batch, as Fetch v3 gets one */
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
 * records are fetched as usual, down-converted (rt_message_set_downconvert: control batches
 * and headers dropped, aborted data kept — these versions read uncommitted, as in Kafka) into
 * one buffer bounded by KAFKA_DOWNCONVERT_RESPONSE_MAX_BYTES and the connection's response
 * bound, sent from there; zero copy of the segment stays the v4+ path. max_bytes (v3) bounds the response as KF2 says. */
static enum net_verdict fetch_downconverted(struct kafka_slot *s, bool retry, bool expired)
{
    struct kafka_server *srv = s->server;
    const struct kmsg_fetch_request *q = &s->msg.fetch;
    int8_t magic = s->header.api_version >= 2 ? 1 : 0;
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
    uint8_t *buf = NULL;
    size_t cap = 0, used = 0;
    int64_t budget = s->header.api_version >= 3 && q->max_bytes > 0 ? q->max_bytes : INT64_MAX;
    if (budget > (int64_t)srv->opts.fetch_max_bytes)
        budget = (int64_t)srv->opts.fetch_max_bytes; /* KF2, as for v4+ */
    /* KF5: the converted bytes of one response stay within the connection's response bound. */
    size_t bound = KAFKA_DOWNCONVERT_RESPONSE_MAX_BYTES;
    uint64_t conn_bound = srv->opts.net.conn_max_response_bytes;
    if (conn_bound > 0 && conn_bound < bound)
        bound = (size_t)conn_bound;
    bool any_error = false;
    for (int32_t t = 0; t < nt; t++) {
        const struct kmsg_fetch_topic *qt = &q->topics[t];
        int32_t np = qt->partitions_count > 0 ? qt->partitions_count : 0;
        struct kmsg_fetch_partition_response *rp = kafka_alloc(s, (size_t)np, sizeof(*rp));
        if (np > 0 && !rp) {
            free(buf);
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
            if (limit <= 0 && used > 0) {
                partition_edges(srv->engine, name, (uint32_t)qp->partition, r);
                continue;
            }
            if (limit <= 0)
                limit = 1;
            r->error_code =
                downconvert_partition(srv, name, (uint32_t)qp->partition, qp->fetch_offset, limit,
                                      used == 0, magic, bound, &buf, &cap, &used, r);
            r->last_stable_offset = r->high_watermark;
            any_error |= r->error_code != KAFKA_NONE;
            budget -= r->records_len;
        }
    }
    /* buf no longer moves: each partition's bytes, in the order they were written, go out as
     * a slice of it (a hole, KD2), so they are not copied again into the response. */
    size_t at = 0;
    for (int32_t t = 0; t < nt; t++)
        for (int32_t p = 0; p < topics[t].partitions_count; p++) {
            struct kmsg_fetch_partition_response *r =
                (struct kmsg_fetch_partition_response *)&topics[t].partitions[p];
            if (r->records_len > 0) {
                r->records = NULL;
                r->records_ref = buf + at;
                at += (size_t)r->records_len;
            }
        }
    assert(at == used);
    bool enough = any_error || used >= (uint64_t)(q->min_bytes > 0 ? q->min_bytes : 0);
    if (!enough && !expired && q->max_wait_ms > 0) {
        int64_t deadline = s->poll_started_ms + q->max_wait_ms;
        if (net_now_ms() < deadline) {
            free(buf);
            s->req->deadline_ms = deadline;
            if (!retry)
                atomic_fetch_add_explicit(&srv->stats.fetch_long_polls, 1, memory_order_relaxed);
            return NET_PARK;
        }
    }
    atomic_fetch_add_explicit(&srv->stats.fetch_bytes, used, memory_order_relaxed);
    atomic_fetch_add_explicit(&srv->stats.fetch_bytes_copied, used, memory_order_relaxed);
    for (int32_t t = 0; t < nt; t++)
        for (int32_t p = 0; p < topics[t].partitions_count; p++)
            kafka_count_error(s, topics[t].partitions[p].error_code);
    struct kmsg_fetch_response m = {.responses = topics, .responses_count = nt};
    kafka_response_begin(s);
    kmsg_fetch_response_encode(&s->w, s->header.api_version, &m);
    s->downconverted = buf; /* the slices point into it until the release hook */
    return kafka_response_end(s);
}

enum net_verdict kafka_handle_fetch(struct kafka_slot *s, bool retry, bool expired)
{
    if (s->header.api_version < 4)
        return fetch_downconverted(s, retry, expired); /* KF5 */
    struct kafka_server *srv = s->server;
    const struct kmsg_fetch_request *q = &s->msg.fetch;
    enum rt_isolation iso = q->isolation_level == 1 ? RT_READ_COMMITTED : RT_READ_UNCOMMITTED;
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
