/*
 * handle_offsets.c — OffsetFetch v1-7: a group's committed offsets from the engine's
 * `__consumer_offsets` (rt_group_fetch_offsets), for the partitions the client names; and
 * OffsetCommit v2-7 (checked against the group's membership by group_coord.c), stored
 * durably by rt_group_commit_offsets before the answer. OffsetFetch requests are decoded by
 * kmsg_txn.c's codec (v6+ flexible); OffsetCommit's are decoded here; it writes nothing but
 * those commits.
 *
 * Invariants:
 *   KO1  An offset is answered only once it is committed: a transactional commit still pending
 *        (its transaction open) is not returned (the previous committed offset, or -1, is), as
 *        Kafka answers v1-6. KO6: with v7's require_stable set, a partition whose transactional
 *        commit is pending answers UNSTABLE_OFFSET_COMMIT (88) instead, which clients retry
 *        until the transaction's marker lands (KIP-447).
 *   KO2  Every partition asked is answered: -1 with NONE when nothing is committed (as Kafka),
 *        UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.
 *   KO3  A null topic array ("all the group's partitions", v2+) is answered with the top-level
 *        error INVALID_REQUEST and no topics: the engine cannot list a group's partitions yet,
 *        and an empty answer would tell the client nothing was committed.
 *   KO4  A group name that cannot be one (null, empty, embedded NUL, over 1024 bytes) is
 *        answered INVALID_GROUP_ID (24) for every partition; bytes that do not decode close the
 *        connection.
 *   KO5  OffsetCommit stores a commit only when group_coord_commit_check allows it: a simple
 *        consumer's (generation -1, no member id) while the group has no members, or a member's
 *        of the group's current generation outside CompletingRebalance; else ILLEGAL_GENERATION
 *        (22), UNKNOWN_MEMBER_ID (25) or REBALANCE_IN_PROGRESS (27) for every partition and
 *        nothing is stored.
 *        Metadata over 4096 bytes is OFFSET_METADATA_TOO_LARGE (12), a negative offset or a NUL
 *        in the metadata INVALID_REQUEST (42), each for its partition alone.
 */
#include "tools/kafka/handle_txn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_BYTES_MAX          1024
#define GROUP_METADATA_BYTES_MAX 4096 /* Kafka's offset.metadata.max.bytes default */

struct fetch_decode {
    int16_t version;
    struct kmsg_offset_fetch_request *q;
};

static int fetch_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct fetch_decode *d = ctx;
    memset(d->q, 0, sizeof(*d->q));
    return kmsg_offset_fetch_request_decode(r, d->version, a, d->q);
}

static int decode_with_arena(struct kafka_slot *s, size_t body_at,
                             struct kmsg_offset_fetch_request *q)
{
    struct fetch_decode d = {.version = s->header.api_version, .q = q};
    return kafka_slot_decode(s, body_at, fetch_decode, &d);
}

enum net_verdict kafka_handle_offset_fetch(struct kafka_slot *s, size_t body_at)
{
    struct kmsg_offset_fetch_request q;
    int16_t v = s->header.api_version;
    int rc = decode_with_arena(s, body_at, &q);
    if (rc) {
        atomic_fetch_add_explicit(&s->server->stats.requests_refused, 1, memory_order_relaxed);
        fprintf(stderr,
                "ringtail serve: connection %" PRIu64
                ": OffsetFetch v%d body does not decode; closing\n",
                s->req->conn_id, v);
        return NET_CLOSE;
    }
    bool flex = kafka_api_flexible(KAFKA_OFFSET_FETCH, v);
    char group[GROUP_BYTES_MAX + 1];
    bool group_ok = q.group_id.len > 0 && q.group_id.len <= GROUP_BYTES_MAX &&
                    !memchr(q.group_id.ptr, 0, (size_t)q.group_id.len);
    if (group_ok) {
        memcpy(group, q.group_id.ptr, (size_t)q.group_id.len);
        group[q.group_id.len] = 0;
    }
    rt_engine *e = s->server->engine;
    kafka_response_begin(s);
    if (v >= 3)
        kp_write_i32(&s->w, 0); /* throttle_time_ms */
    int16_t top = KAFKA_NONE;
    if (q.topics_count < 0) {
        top = KAFKA_INVALID_REQUEST; /* KO3 */
        kp_write_alen(&s->w, flex, 0);
    } else {
        kp_write_alen(&s->w, flex, q.topics_count);
    }
    for (int32_t t = 0; t < q.topics_count; t++) {
        const struct kmsg_txn_topic *tp = &q.topics[t];
        char name[RT_TOPIC_NAME_MAX + 1];
        bool name_ok = kafka_topic_name(tp->name, name);
        uint32_t parts = 0;
        bool known = name_ok && rt_topic_describe(e, name, &parts) == 0;
        kp_write_str(&s->w, flex, tp->name);
        kp_write_alen(&s->w, flex, tp->partitions_count);
        for (int32_t i = 0; i < tp->partitions_count; i++) {
            int32_t p = tp->partitions[i];
            int64_t off = -1;
            int16_t code = KAFKA_NONE;
            if (!group_ok) {
                code = KAFKA_INVALID_GROUP_ID; /* KO4 */
            } else if (!known || p < 0 || (uint32_t)p >= parts) {
                code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION; /* KO2 */
            } else {
                /* KO1; with require_stable (v7) a pending transactional commit is
                 * UNSTABLE_OFFSET_COMMIT (88), which the client retries (KO6) */
                rc = rt_group_fetch_offsets(e, group, name, (uint32_t)p, q.require_stable, &off);
                if (rc) {
                    code = kafka_error_from_rt(rc);
                    off = -1;
                    if (rc != RT_E_UNSTABLE_OFFSET_COMMIT)
                        fprintf(stderr, "ringtail serve: OffsetFetch for group '%s': %s: %s\n",
                                group, rt_strerror(rc), rt_error_detail());
                }
            }
            kp_write_i32(&s->w, p);
            kp_write_i64(&s->w, off);
            if (v >= 5)
                kp_write_i32(&s->w, -1); /* committed_leader_epoch: not kept */
            kp_write_nstr(&s->w, flex, kp_str_of(""));
            kp_write_i16(&s->w, code);
            kp_write_tags(&s->w, flex);
            kafka_count_error(s, code);
        }
        kp_write_tags(&s->w, flex);
    }
    if (v >= 2) {
        kp_write_i16(&s->w, top);
        kafka_count_error(s, top);
    }
    kp_write_tags(&s->w, flex);
    return kafka_response_end(s);
}

/* ---- OffsetCommit v2-7 ---- */

struct oc_part {
    int32_t partition;
    int64_t offset;
    struct kp_str metadata;
};

struct oc_topic {
    struct kp_str name;
    int32_t count;
    struct oc_part *parts;
};

struct oc_req {
    struct kp_str group;
    int32_t generation;
    struct kp_str member;
    int32_t topics_count;
    struct oc_topic *topics;
};

static int oc_decode(struct kp_reader *r, struct kp_arena *a, int16_t v, struct oc_req *q)
{
    memset(q, 0, sizeof(*q));
    q->group = kp_read_string(r);
    q->generation = kp_read_i32(r);
    q->member = kp_read_string(r);
    if (v >= 7)
        (void)kp_read_nullable_string(r); /* group_instance_id: no static membership */
    if (v <= 4)
        (void)kp_read_i64(r); /* retention_time_ms: offsets are kept until the group is deleted */
    q->topics_count = kp_read_array_len(r, 6);
    if (q->topics_count < 0)
        q->topics_count = 0;
    q->topics = kp_arena_array(r, a, q->topics_count, sizeof(*q->topics));
    for (int32_t t = 0; t < q->topics_count && !r->err; t++) {
        struct oc_topic *tp = &q->topics[t];
        tp->name = kp_read_string(r);
        tp->count = kp_read_array_len(r, 14);
        if (tp->count < 0)
            tp->count = 0;
        tp->parts = kp_arena_array(r, a, tp->count, sizeof(*tp->parts));
        for (int32_t i = 0; i < tp->count && !r->err; i++) {
            tp->parts[i].partition = kp_read_i32(r);
            tp->parts[i].offset = kp_read_i64(r);
            if (v >= 6)
                (void)kp_read_i32(r); /* committed_leader_epoch: not kept */
            tp->parts[i].metadata = kp_read_nullable_string(r);
        }
    }
    kp_expect_end(r);
    return r->err;
}

struct commit_decode {
    int16_t version;
    struct oc_req *q;
};

static int commit_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct commit_decode *d = ctx;
    return oc_decode(r, a, d->version, d->q);
}

enum net_verdict kafka_handle_offset_commit(struct kafka_slot *s, size_t body_at)
{
    struct oc_req q;
    int16_t v = s->header.api_version;
    struct commit_decode d = {.version = v, .q = &q};
    int rc = kafka_slot_decode(s, body_at, commit_decode, &d);
    if (rc) {
        atomic_fetch_add_explicit(&s->server->stats.requests_refused, 1, memory_order_relaxed);
        fprintf(stderr,
                "ringtail serve: connection %" PRIu64
                ": OffsetCommit v%d body does not decode; closing\n",
                s->req->conn_id, v);
        return NET_CLOSE;
    }
    char group[GROUP_BYTES_MAX + 1];
    bool group_ok = q.group.len > 0 && q.group.len <= GROUP_BYTES_MAX &&
                    !memchr(q.group.ptr, 0, (size_t)q.group.len);
    if (group_ok) {
        memcpy(group, q.group.ptr, (size_t)q.group.len);
        group[q.group.len] = 0;
    }
    /* KO5: the generation and member are checked against the group (group_coord.c). */
    int16_t all = KAFKA_INVALID_GROUP_ID;
    if (group_ok) {
        bool wake = false;
        group_coord_lock(s->server->groups);
        all = group_coord_commit_check(s->server->groups, q.group, q.generation, q.member,
                                       net_now_ms(), &wake);
        group_coord_unlock(s->server->groups);
        if (wake)
            net_wake(s->server->net);
    }
    rt_engine *e = s->server->engine;
    /* Pass 1: each partition's code; the valid ones gathered for one durable write. */
    size_t total = 0;
    for (int32_t t = 0; t < q.topics_count; t++)
        total += (size_t)q.topics[t].count;
    size_t meta_bytes = 0;
    for (int32_t t = 0; t < q.topics_count; t++)
        for (int32_t i = 0; i < q.topics[t].count; i++)
            meta_bytes +=
                (q.topics[t].parts[i].metadata.len > 0 ? (size_t)q.topics[t].parts[i].metadata.len
                                                       : 0) +
                1;
    size_t topics = q.topics_count > 0 ? (size_t)q.topics_count : 0;
    int16_t *codes = total ? calloc(total, sizeof(*codes)) : NULL;
    struct rt_offset *offs = total ? calloc(total, sizeof(*offs)) : NULL;
    char *names = topics ? calloc(topics, RT_TOPIC_NAME_MAX + 1) : NULL;
    char *meta = meta_bytes ? malloc(meta_bytes) : NULL;
    if ((total && (!codes || !offs)) || (topics && !names) || (meta_bytes && !meta)) {
        free(codes);
        free(offs);
        free(names);
        free(meta);
        fprintf(stderr, "ringtail serve: OffsetCommit: out of memory; closing\n");
        return NET_CLOSE;
    }
    size_t k = 0, n = 0, mat = 0;
    for (int32_t t = 0; t < q.topics_count; t++) {
        const struct oc_topic *tp = &q.topics[t];
        char *name = names + (size_t)t * (RT_TOPIC_NAME_MAX + 1);
        bool name_ok = kafka_topic_name(tp->name, name);
        uint32_t parts = 0;
        bool known = name_ok && rt_topic_describe(e, name, &parts) == 0;
        for (int32_t i = 0; i < tp->count; i++, k++) {
            const struct oc_part *pp = &tp->parts[i];
            int16_t code = all;
            if (code == KAFKA_NONE &&
                (!known || pp->partition < 0 || (uint32_t)pp->partition >= parts))
                code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (code == KAFKA_NONE && pp->metadata.len > GROUP_METADATA_BYTES_MAX)
                code = KAFKA_OFFSET_METADATA_TOO_LARGE;
            else if (code == KAFKA_NONE &&
                     (pp->offset < 0 || (pp->metadata.len > 0 &&
                                         memchr(pp->metadata.ptr, 0, (size_t)pp->metadata.len))))
                code = KAFKA_INVALID_REQUEST;
            codes[k] = code;
            if (code != KAFKA_NONE)
                continue;
            size_t ml = pp->metadata.len > 0 ? (size_t)pp->metadata.len : 0;
            if (ml) /* a null metadata has no pointer (kafkajs's group commits) */
                memcpy(meta + mat, pp->metadata.ptr, ml);
            meta[mat + ml] = 0;
            offs[n++] = (struct rt_offset){.topic = name,
                                           .partition = (uint32_t)pp->partition,
                                           .offset = pp->offset,
                                           .metadata = meta + mat};
            mat += ml + 1;
        }
    }
    /* One durable write for every valid partition, before the answer. */
    int16_t stored = KAFKA_NONE;
    if (n) {
        rc = rt_group_commit_offsets(e, group, offs, n);
        if (rc) {
            stored = kafka_error_from_rt(rc);
            fprintf(stderr, "ringtail serve: OffsetCommit for group '%s': %s: %s\n", group,
                    rt_strerror(rc), rt_error_detail());
        }
    }
    /* Pass 2: the answer. */
    kafka_response_begin(s);
    if (v >= 3)
        kp_write_i32(&s->w, 0); /* throttle_time_ms */
    kp_write_array_len(&s->w, q.topics_count);
    k = 0;
    for (int32_t t = 0; t < q.topics_count; t++) {
        kp_write_string(&s->w, q.topics[t].name);
        kp_write_array_len(&s->w, q.topics[t].count);
        for (int32_t i = 0; i < q.topics[t].count; i++, k++) {
            int16_t code = codes[k] == KAFKA_NONE ? stored : codes[k];
            kp_write_i32(&s->w, q.topics[t].parts[i].partition);
            kp_write_i16(&s->w, code);
            kafka_count_error(s, code);
        }
    }
    free(codes);
    free(offs);
    free(names);
    free(meta);
    return kafka_response_end(s);
}
