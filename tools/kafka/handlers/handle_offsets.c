/*
 * handle_offsets.c — OffsetFetch v0-8: a group's committed offsets and their metadata from the
 * engine's `__consumer_offsets` (rt_group_fetch_offset), for the partitions the client names or,
 * with a null topic array, every partition the group committed (rt_group_list_offsets), for one
 * group (v0-7) or several (v8); and OffsetCommit v0-8 (checked against the group's membership by
 * group_coord.c), stored durably by rt_group_commit_offsets_async before the answer (KO9). Both
 * are decoded and answered by the kmsg codecs (kmsg_offset_fetch_*, kmsg_offset_commit_*); the
 * offsets validator here (handle_offsets.h) is also TxnOffsetCommit's. It writes nothing but those commits.
 *
 * Invariants:
 *   KO1  An offset is answered only once it is committed: a transactional commit still pending
 *        (its transaction open) is not returned (the previous committed offset, or -1, is), as
 *        Kafka answers without require_stable — here v7-8 and KO3's null topic array; v0-6
 *        naming a pending partition: KO12.
 *   KO6  With v7's require_stable set, a partition whose transactional commit is pending
 *        answers UNSTABLE_OFFSET_COMMIT (88) instead of KO1's answer, which clients retry until
 *        the transaction's marker lands (KIP-447).
 *   KO12 A version that cannot ask for stable offsets (v0-6) naming a partition whose
 *        transactional commit is pending is answered COORDINATOR_LOAD_IN_PROGRESS (14) — top
 *        level and no topics for v2-6 (a group's error, as Kafka sends one), in that partition
 *        for v0-1 (no top-level error there) — which clients retry, until the marker lands. Kafka answers KO1's stable
 *        offset there; ringtail does not, because an exactly-once pipeline on such a client
 *        (kafkajs 2.2.4 speaks v1-4) that rejoins its group between a commit's decision and its
 *        marker reaching the group coordinator (a failover of either, in a cluster) would
 *        otherwise resume from the offset before that commit and write its outputs twice
 *        (tests/cluster/eos_run.py found it). A null topic array (KO3, the admin tools' "every
 *        offset") stays KO1's answer: no consumer resumes from it.
 *   KO2  Every partition asked is answered: -1 and "" with NONE when nothing is committed (as
 *        Kafka), whether or not the partition exists at v1+ (Kafka's group coordinator does not
 *        look: a topic created a moment ago, which a cluster node's image may not hold yet, is
 *        no error), UNKNOWN_TOPIC_OR_PARTITION for one that does not exist at v0 (Kafka's v0
 *        looks, KCL4 here) and for a name that cannot be a topic's or a negative partition; a
 *        committed one with the metadata its commit carried (A3: Kafka stores it and returns
 *        it).
 *   KO3  A null topic array ("all the group's partitions", v2+) is answered with every
 *        partition the group has a committed offset for, sorted by topic and partition (Kafka's
 *        group.allOffsets), each as KO1/KO6 say.
 *   KO4  A group name that cannot be one (null, empty, embedded NUL, over 1024 bytes) is
 *        answered INVALID_GROUP_ID (24) for every partition (and top-level for a null topic
 *        array); bytes that do not decode close the connection.
 *   KO5  OffsetCommit stores a commit only when group_coord_commit_check allows it: a simple
 *        consumer's (generation -1, no member id) while the group has no members, or a member's
 *        of the group's current generation outside CompletingRebalance; else ILLEGAL_GENERATION
 *        (22), UNKNOWN_MEMBER_ID (25) or REBALANCE_IN_PROGRESS (27) for every partition and
 *        nothing is stored.
 *   KO7  OffsetCommit and TxnOffsetCommit judge each partition with the same validator
 *        (kafka_offsets_validate): metadata over 4096 bytes is OFFSET_METADATA_TOO_LARGE (12), a
 *        negative offset or a NUL in the metadata INVALID_REQUEST (42), each for its partition
 *        alone; its arrays live in the request arena (no allocation per request once warm).
 *   KO8  OffsetFetch v8 (KIP-709) answers each group it names as a v7 request naming that group
 *        alone would be answered (KO1-KO6), in the request's order, its error in the group's
 *        error_code. v0 is answered as v1 (Kafka read v0 from ZooKeeper; here every commit is
 *        in __consumer_offsets), and OffsetCommit v0-1 store as v2 does: v0 carries no
 *        generation (a simple consumer's commit, KO5), v1's per-partition commit_timestamp is
 *        not kept (the engine stamps the commit time, as Kafka does for v2+).
 *   KO9  OffsetCommit does not wait for the disk on the loop thread: the valid partitions go to
 *        rt_group_commit_offsets_async and the request answers NET_PENDING; the completion (on
 *        an engine lane) settles every partition with the write's outcome, encodes the answer
 *        and hands the request back (net_req_complete), after the commit is durable.
 *   KO10 OffsetFetch v6-7 "all the group's offsets" from librdkafka 2.0.2 is read as Kafka reads
 *        it: that client writes the null topic array as four zero bytes (an i32 placeholder it
 *        never turns into a varint), so its body is group_id, 00 00 00 00, require_stable,
 *        an empty tag buffer. Kafka reads topics null (the first 00), require_stable false and
 *        the tag buffer (the next two) and ignores the three bytes after the body; here a v6-7
 *        body that does not decode is decoded once more without its last three bytes when
 *        they are 00, 00|01, 00 — as Kafka reads it, require_stable false. (KH6 is the same
 *        client's ListGroups quirk.)
 *   KO11 An OffsetCommit whose write the engine refused with RT_E_IO_FAILED (__consumer_offsets'
 *        partition frozen by a disk fault, healing in place: engine shard.c SH10/SH11; nothing
 *        applied, group.c GO1) answers NOT_COORDINATOR (16) for its partitions, as Kafka's
 *        GroupMetadataManager maps a failed append's KAFKA_STORAGE_ERROR: clients look the
 *        coordinator up again and retry the commit, which goes through once the partition
 *        healed (56 is not retriable for an OffsetCommit in the Java consumer).
 */
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle_offsets.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_BYTES_MAX 1024

/* A NUL-terminated copy of a group name into out (GROUP_BYTES_MAX + 1 bytes); false when the
 * name cannot be one (KO4). */
static bool group_of(struct kp_str n, char *out)
{
    if (n.len <= 0 || n.len > GROUP_BYTES_MAX || !n.ptr || memchr(n.ptr, 0, (size_t)n.len))
        return false;
    memcpy(out, n.ptr, (size_t)n.len);
    out[n.len] = 0;
    return true;
}

static void refuse_log(struct kafka_slot *s, int rc)
{
    atomic_fetch_add_explicit(&s->server->stats.requests_refused, 1, memory_order_relaxed);
    fprintf(stderr, "ringtail serve: connection %" PRIu64 ": %s v%d %s; closing\n", s->req->conn_id,
            kafka_api_name(s->header.api_key), s->header.api_version,
            rc == KP_E_LIMIT ? "request arrays too large" : "body does not decode");
}

/* ---- the offsets validator (KO7) ---- */

int kafka_offsets_prepare(struct kp_reader *r, struct kp_arena *a,
                          const struct kmsg_commit_topic *topics, int32_t topics_count,
                          struct kafka_offsets_commit *c)
{
    memset(c, 0, sizeof(*c));
    if (topics_count <= 0)
        return r->err;
    int64_t total = 0, meta_bytes = 0;
    for (int32_t t = 0; t < topics_count; t++) {
        total += topics[t].partitions_count;
        for (int32_t i = 0; i < topics[t].partitions_count; i++) {
            int32_t ml = topics[t].partitions[i].committed_metadata.len;
            meta_bytes += (ml > 0 && ml <= RT_OFFSET_METADATA_MAX_BYTES ? ml : 0) + 1;
        }
    }
    if (total > INT32_MAX || meta_bytes > INT32_MAX) {
        kp_fail(r, KP_E_LIMIT);
        return r->err;
    }
    c->results_count = topics_count;
    c->results = kp_arena_array(r, a, topics_count, sizeof(*c->results));
    c->errors = kp_arena_array(r, a, topics_count, sizeof(*c->errors));
    c->names = kp_arena_array(r, a, topics_count, RT_TOPIC_NAME_MAX + 1);
    c->offsets = kp_arena_array(r, a, (int32_t)total, sizeof(*c->offsets));
    c->metadata = kp_arena_array(r, a, (int32_t)meta_bytes, 1);
    for (int32_t t = 0; t < topics_count && !r->err; t++)
        c->errors[t] = kp_arena_array(r, a, topics[t].partitions_count, sizeof(**c->errors));
    return r->err;
}

void kafka_offsets_validate(struct kafka_slot *s, const struct kmsg_commit_topic *topics,
                            int32_t topics_count, int16_t all, struct kafka_offsets_commit *c)
{
    size_t n = 0, mat = 0;
    for (int32_t t = 0; t < topics_count; t++) {
        const struct kmsg_commit_topic *tp = &topics[t];
        char *name = c->names + (size_t)t * (RT_TOPIC_NAME_MAX + 1);
        bool known = false, denied = false;
        uint32_t parts = 0;
        if (all == KAFKA_NONE) /* KZ2: READ on each topic */
            denied = !kafka_authorize_str(s, ACL_RESOURCE_TOPIC, tp->name, ACL_OP_READ);
        if (all == KAFKA_NONE && !denied)
            known = kafka_topic_name(tp->name, name) && /* handle_cluster.c KCL4 */
                    kafka_topic_partitions(s->server, name, &parts) == 0;
        c->results[t] = (struct kmsg_topic_errors){
            .name = tp->name, .partitions = c->errors[t], .partitions_count = tp->partitions_count};
        for (int32_t i = 0; i < tp->partitions_count; i++) {
            const struct kmsg_commit_partition *pp = &tp->partitions[i];
            struct kp_str md = pp->committed_metadata;
            int16_t code = all;
            if (code == KAFKA_NONE && denied)
                code = KAFKA_TOPIC_AUTHORIZATION_FAILED;
            else if (code == KAFKA_NONE &&
                     (!known || pp->partition_index < 0 || (uint32_t)pp->partition_index >= parts))
                code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (code == KAFKA_NONE && md.len > RT_OFFSET_METADATA_MAX_BYTES)
                code = KAFKA_OFFSET_METADATA_TOO_LARGE;
            else if (code == KAFKA_NONE && (pp->committed_offset < 0 ||
                                            (md.len > 0 && memchr(md.ptr, 0, (size_t)md.len))))
                code = KAFKA_INVALID_REQUEST;
            c->errors[t][i] = (struct kmsg_partition_error){.partition_index = pp->partition_index,
                                                            .error_code = code};
            if (code != KAFKA_NONE)
                continue;
            size_t ml = md.len > 0 ? (size_t)md.len : 0; /* null metadata is "" (kafkajs) */
            if (ml)
                memcpy(c->metadata + mat, md.ptr, ml);
            c->metadata[mat + ml] = 0;
            c->offsets[n++] = (struct rt_offset){.topic = name,
                                                 .partition = (uint32_t)pp->partition_index,
                                                 .offset = pp->committed_offset,
                                                 .metadata = c->metadata + mat};
            mat += ml + 1;
        }
    }
    c->offsets_count = n;
}

void kafka_offsets_settle(struct kafka_slot *s, struct kafka_offsets_commit *c, int16_t stored)
{
    for (int32_t t = 0; t < c->results_count; t++)
        for (int32_t i = 0; i < c->results[t].partitions_count; i++) {
            struct kmsg_partition_error *pe = &c->errors[t][i];
            if (pe->error_code == KAFKA_NONE)
                pe->error_code = stored;
            kafka_count_error(s, pe->error_code);
        }
}

/* ---- OffsetFetch ---- */

/* KZ2: OffsetFetch needs DESCRIBE on the group (Kafka's rule; READ implies it). */
static int16_t group_describe(struct kafka_slot *s, struct kp_str group)
{
    return kafka_authorize_str(s, ACL_RESOURCE_GROUP, group, ACL_OP_DESCRIBE)
               ? kafka_group_coordinator_check(s->server, group) /* group_cluster.c KGC2 */
               : KAFKA_GROUP_AUTHORIZATION_FAILED;
}

struct fetch_decode {
    int16_t version;
    struct kmsg_offset_fetch_request *q;
};

static int fetch_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct fetch_decode *d = ctx;
    memset(d->q, 0, sizeof(*d->q));
    struct kp_reader at = *r;
    int rc = kmsg_offset_fetch_request_decode(r, d->version, a, d->q);
    if (rc == RT_E_CORRUPT && (d->version == 6 || d->version == 7) && at.end - at.p >= 3 &&
        at.end[-3] == 0 && at.end[-2] <= 1 && at.end[-1] == 0) { /* KO10 */
        *r = at;
        r->end -= 3;
        memset(d->q, 0, sizeof(*d->q));
        rc = kmsg_offset_fetch_request_decode(r, d->version, a, d->q);
    }
    return rc;
}

/* The answer's arrays go into the response arena, sized by a budget; a build that finds it too
 * small says how much it needed and runs again (a commit in between may change the sizes). */
struct fetch_build {
    struct kafka_slot *s;
    const char *group;
    int16_t group_err; /* KZ2: GROUP_AUTHORIZATION_FAILED for a denied group, else NONE */
    bool require_stable;
    bool old_version;  /* KO12: v0-6, which cannot ask for stable offsets */
    bool unstable;     /* a partition asked has a transactional commit pending */
    size_t need_bytes; /* what the build would have needed */
    bool full;
};

static void *build_alloc(struct fetch_build *b, size_t count, size_t elem)
{
    b->need_bytes += count * elem + 8;
    if (b->full || count == 0)
        return NULL;
    void *p = kafka_alloc(b->s, count, elem);
    if (!p)
        b->full = true;
    return p;
}

static struct kp_str build_str(struct fetch_build *b, const char *c, size_t n)
{
    char *p = build_alloc(b, n + 1, 1);
    if (!p)
        return (struct kp_str){"", 0};
    memcpy(p, c, n);
    p[n] = 0;
    return (struct kp_str){p, (int32_t)n};
}

/* One partition's answer from the engine (KO1, KO2, KO6). */
static void fetch_one(struct fetch_build *b, const char *topic, int32_t p, bool known,
                      struct kmsg_offset_fetch_partition *out)
{
    *out = (struct kmsg_offset_fetch_partition){.partition_index = p,
                                                .committed_offset = -1,
                                                .committed_leader_epoch = -1,
                                                .metadata = {"", 0}};
    if (!b->group || b->group_err) {
        out->error_code = b->group_err ? b->group_err : KAFKA_INVALID_GROUP_ID; /* KO4 */
        return;
    }
    if (!known || p < 0) {
        out->error_code = KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    struct rt_committed_offset o;
    int rc = rt_group_fetch_offset(b->s->server->engine, b->group, topic, (uint32_t)p,
                                   b->require_stable, &o);
    if (rc) {
        out->error_code = kafka_error_from_rt(rc);
        if (rc == RT_E_UNSTABLE_OFFSET_COMMIT) {
            b->unstable = true;
            if (b->old_version) /* KO12: v0-1 carry it here; v2-6 at the top */
                out->error_code = KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
        } else
            fprintf(stderr, "ringtail serve: OffsetFetch for group '%s': %s: %s\n", b->group,
                    rt_strerror(rc), rt_error_detail());
        return;
    }
    out->committed_offset = o.offset;
    out->metadata = build_str(b, o.metadata, o.metadata_len);
}

static void fetch_named(struct fetch_build *b, const struct kmsg_offset_fetch_request *q,
                        struct kmsg_offset_fetch_response *m)
{
    struct kmsg_offset_fetch_topic *topics =
        build_alloc(b, (size_t)q->topics_count, sizeof(*topics));
    m->topics = topics;
    m->topics_count = q->topics_count;
    for (int32_t t = 0; t < q->topics_count; t++) {
        const struct kmsg_txn_topic *tp = &q->topics[t];
        char name[RT_TOPIC_NAME_MAX + 1];
        uint32_t parts = 0;
        bool denied = !kafka_authorize_str(b->s, ACL_RESOURCE_TOPIC, tp->name, ACL_OP_DESCRIBE);
        bool named = !denied && kafka_topic_name(tp->name, name);
        bool v0 = b->s->header.api_version == 0; /* KO2: only v0 asks whether it exists */
        bool known = named && (!v0 ||            /* handle_cluster.c KCL4 */
                               kafka_topic_partitions(b->s->server, name, &parts) == 0);
        struct kmsg_offset_fetch_partition *ps =
            build_alloc(b, (size_t)tp->partitions_count, sizeof(*ps));
        if (!topics || (tp->partitions_count > 0 && !ps))
            continue; /* too small: the build runs again */
        topics[t] = (struct kmsg_offset_fetch_topic){
            .name = tp->name, .partitions = ps, .partitions_count = tp->partitions_count};
        for (int32_t i = 0; i < tp->partitions_count; i++) {
            int32_t p = tp->partitions[i];
            fetch_one(b, name, p, known && p >= 0 && (!v0 || (uint32_t)p < parts), &ps[i]);
            if (denied && !b->group_err && b->group)
                ps[i].error_code = KAFKA_TOPIC_AUTHORIZATION_FAILED; /* KZ2 */
        }
    }
}

/* KO3: every committed partition of the group, gathered under the engine's lock. */
struct fetch_item {
    struct fetch_item *next;
    struct kp_str topic;
    struct kmsg_offset_fetch_partition part;
};

struct fetch_all {
    struct fetch_build *b;
    struct fetch_item *items;
    int32_t count;
};

static int fetch_all_one(void *ctx, const char *topic, uint32_t partition,
                         const struct rt_committed_offset *o)
{
    struct fetch_all *fa = ctx;
    struct fetch_build *b = fa->b;
    if (!kafka_authorize_topic(b->s, topic, ACL_OP_DESCRIBE))
        return 0; /* KZ2: only the topics the principal may describe */
    struct fetch_item *it = build_alloc(b, 1, sizeof(*it));
    struct kp_str name = build_str(b, topic, strlen(topic));
    struct kp_str md = build_str(b, o->metadata, o->metadata_len);
    if (!it)
        return 0; /* counted in need_bytes; the build runs again */
    it->topic = name;
    it->part = (struct kmsg_offset_fetch_partition){.partition_index = (int32_t)partition,
                                                    .committed_offset = o->offset,
                                                    .committed_leader_epoch = -1,
                                                    .metadata = md};
    if (b->require_stable && o->pending) { /* KO6 */
        it->part.committed_offset = -1;
        it->part.metadata = (struct kp_str){"", 0};
        it->part.error_code = KAFKA_UNSTABLE_OFFSET_COMMIT;
    }
    it->next = fa->items;
    fa->items = it;
    fa->count++;
    return 0;
}

static int str_cmp(struct kp_str a, struct kp_str b)
{
    int32_t n = a.len < b.len ? a.len : b.len;
    int c = n > 0 ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int item_cmp(const void *a, const void *b)
{
    const struct fetch_item *x = *(const struct fetch_item *const *)a;
    const struct fetch_item *y = *(const struct fetch_item *const *)b;
    int c = str_cmp(x->topic, y->topic);
    if (c == 0)
        c = (x->part.partition_index > y->part.partition_index) -
            (x->part.partition_index < y->part.partition_index);
    return c;
}

static int16_t fetch_every(struct fetch_build *b, struct kmsg_offset_fetch_response *m)
{
    if (!b->group || b->group_err)
        return b->group_err ? b->group_err : KAFKA_INVALID_GROUP_ID; /* KO4 */
    struct fetch_all fa = {.b = b};
    int rc = rt_group_list_offsets(b->s->server->engine, b->group, fetch_all_one, &fa);
    if (rc) {
        fprintf(stderr, "ringtail serve: OffsetFetch of every offset of group '%s': %s: %s\n",
                b->group, rt_strerror(rc), rt_error_detail());
        return kafka_error_from_rt(rc);
    }
    struct fetch_item **sorted = build_alloc(b, (size_t)fa.count, sizeof(*sorted));
    struct kmsg_offset_fetch_topic *topics = build_alloc(b, (size_t)fa.count, sizeof(*topics));
    struct kmsg_offset_fetch_partition *parts = build_alloc(b, (size_t)fa.count, sizeof(*parts));
    if (b->full || fa.count == 0)
        return KAFKA_NONE;
    int32_t n = 0;
    for (struct fetch_item *it = fa.items; it; it = it->next)
        sorted[n++] = it;
    qsort(sorted, (size_t)n, sizeof(*sorted), item_cmp);
    int32_t tc = -1;
    for (int32_t i = 0; i < n; i++) {
        parts[i] = sorted[i]->part;
        if (tc < 0 || str_cmp(sorted[i]->topic, topics[tc].name) != 0)
            topics[++tc] =
                (struct kmsg_offset_fetch_topic){.name = sorted[i]->topic, .partitions = &parts[i]};
        topics[tc].partitions_count++;
    }
    m->topics = topics;
    m->topics_count = tc + 1;
    return KAFKA_NONE;
}

enum net_verdict kafka_handle_offset_fetch(struct kafka_slot *s, size_t body_at)
{
    struct kmsg_offset_fetch_request q;
    int16_t v = s->header.api_version;
    struct fetch_decode d = {.version = v, .q = &q};
    int rc = kafka_slot_decode(s, body_at, fetch_decode, &d);
    if (rc) {
        refuse_log(s, rc);
        return NET_CLOSE;
    }
    char group[GROUP_BYTES_MAX + 1];
    struct fetch_build b = {.s = s,
                            .group = group_of(q.group_id, group) ? group : NULL,
                            .require_stable = q.require_stable};
    struct kmsg_offset_fetch_response m;
    int32_t gn = v >= 8 && q.groups_count > 0 ? q.groups_count : 0;
    size_t budget = KAFKA_ARENA_MIN_BYTES;
    for (int round = 0;; round++) {
        if (kafka_resp_reserve(s, budget) != 0) {
            fprintf(stderr, "ringtail serve: OffsetFetch: out of memory; closing\n");
            return NET_CLOSE;
        }
        memset(&m, 0, sizeof(m));
        b.need_bytes = 0;
        b.full = false;
        b.unstable = false;
        if (v >= 8) { /* KO8: each group as a v7 request of its own */
            struct kmsg_offset_fetch_group *gs = build_alloc(&b, (size_t)gn, sizeof(*gs));
            for (int32_t i = 0; i < gn; i++) {
                const struct kmsg_offset_fetch_group_request *gq = &q.groups[i];
                struct kmsg_offset_fetch_request one = {.topics = gq->topics,
                                                        .topics_count = gq->topics_count};
                struct kmsg_offset_fetch_response r;
                memset(&r, 0, sizeof(r));
                b.group = group_of(gq->group_id, group) ? group : NULL;
                b.group_err = group_describe(s, gq->group_id);
                if (b.group_err && b.group) {
                    r.error_code = b.group_err; /* Kafka answers the group's error alone */
                } else if (gq->topics_count < 0)
                    r.error_code = fetch_every(&b, &r);
                else
                    fetch_named(&b, &one, &r);
                if (gs)
                    gs[i] = (struct kmsg_offset_fetch_group){.group_id = gq->group_id,
                                                             .topics = r.topics,
                                                             .topics_count = r.topics_count,
                                                             .error_code = r.error_code};
            }
            m.groups = gs;
            m.groups_count = gs ? gn : 0;
        } else if (b.group && (b.group_err = group_describe(s, q.group_id)) && v >= 2) {
            m.error_code = b.group_err; /* KZ2: v2+ answer a denied group alone */
        } else if (q.topics_count < 0) {
            m.error_code = fetch_every(&b, &m); /* KO3 */
        } else {
            b.old_version = v < 7; /* KO12 */
            b.require_stable = b.require_stable || b.old_version;
            fetch_named(&b, &q, &m);
            if (b.unstable && b.old_version && v >= 2) {
                m.error_code = KAFKA_COORDINATOR_LOAD_IN_PROGRESS; /* the group's error alone */
                m.topics_count = 0;
            }
        }
        if (!b.full)
            break;
        budget = b.need_bytes * 2 + 4096; /* KAFKA_ARENA_MAX_BYTES bounds the frame anyway */
        if (round >= 8 || budget > KAFKA_ARENA_MAX_BYTES) {
            fprintf(stderr, "ringtail serve: OffsetFetch answer over %u bytes; closing\n",
                    KAFKA_ARENA_MAX_BYTES);
            return NET_CLOSE;
        }
    }
    for (int32_t t = 0; t < m.topics_count; t++)
        for (int32_t i = 0; i < m.topics[t].partitions_count; i++)
            kafka_count_error(s, m.topics[t].partitions[i].error_code);
    if (v >= 2)
        kafka_count_error(s, m.error_code);
    for (int32_t g = 0; g < m.groups_count; g++) {
        kafka_count_error(s, m.groups[g].error_code);
        for (int32_t t = 0; t < m.groups[g].topics_count; t++)
            for (int32_t i = 0; i < m.groups[g].topics[t].partitions_count; i++)
                kafka_count_error(s, m.groups[g].topics[t].partitions[i].error_code);
    }
    kafka_response_begin(s);
    kmsg_offset_fetch_response_encode(&s->w, v, &m);
    return kafka_response_end(s);
}

/* ---- OffsetCommit v0-8 ---- */

struct commit_decode {
    int16_t version;
    struct kmsg_offset_commit_request *q;
    struct kafka_offsets_commit *c;
};

static int commit_decode(struct kp_reader *r, struct kp_arena *a, void *ctx)
{
    struct commit_decode *d = ctx;
    memset(d->q, 0, sizeof(*d->q));
    int rc = kmsg_offset_commit_request_decode(r, d->version, a, d->q);
    if (rc)
        return rc;
    return kafka_offsets_prepare(r, a, d->q->topics, d->q->topics_count, d->c);
}

static void commit_answer(struct kafka_slot *s, struct kafka_offsets_commit *c, int16_t v,
                          int16_t stored)
{
    kafka_offsets_settle(s, c, stored);
    struct kmsg_commit_response m = {.topics = c->results, .topics_count = c->results_count};
    kafka_response_begin(s);
    kmsg_offset_commit_response_encode(&s->w, v, &m);
}

/* A commit in flight (KO9): in the response arena; the request (its arena: c's arrays, the
 * offsets) stays until the answer is sent. */
struct commit_job {
    struct rt_group_op op;
    struct kafka_slot *s;
    struct kafka_offsets_commit c;
    int16_t version;
    char group[GROUP_BYTES_MAX + 1];
};

/* KO11: the answer for an engine's refusal of a commit's write. */
static int16_t commit_error(int rc)
{
    return rc == RT_E_IO_FAILED ? KAFKA_NOT_COORDINATOR : kafka_error_from_rt(rc);
}

static void commit_finish(struct commit_job *j, int16_t stored)
{
    struct kafka_slot *s = j->s;
    commit_answer(s, &j->c, j->version, stored);
    if (kafka_response_end(s) != NET_DONE)
        s->req->close_reason = "the OffsetCommit answer could not be encoded";
    net_req_complete(s->req);
}

/* group_cluster.c KGC4: the commit reached the ISR (or could not). */
static void commit_replicated(void *ctx, int16_t error)
{
    struct commit_job *j = ctx;
    int16_t stored = kafka_group_commit_error(error);
    if (stored != KAFKA_NONE)
        fprintf(stderr, "ringtail serve: OffsetCommit for group '%s': not on the ISR: %s\n",
                j->group, kafka_error_name(error));
    commit_finish(j, stored);
}

static void commit_done(void *ctx, int err, size_t deleted)
{
    (void)deleted;
    struct commit_job *j = ctx;
    int16_t stored = KAFKA_NONE;
    if (err) {
        stored = commit_error(err); /* KO11 */
        fprintf(stderr, "ringtail serve: OffsetCommit for group '%s': %s: %s\n", j->group,
                rt_strerror(err), rt_error_detail());
    } else if (kafka_group_commit_wait(j->s->server, kp_str_of(j->group), commit_replicated, j) ==
               0) {
        return; /* KGC4: answered once the ISR has it */
    }
    commit_finish(j, stored);
}

enum net_verdict kafka_handle_offset_commit(struct kafka_slot *s, size_t body_at)
{
    struct kmsg_offset_commit_request q;
    struct kafka_offsets_commit c;
    int16_t v = s->header.api_version;
    struct commit_decode d = {.version = v, .q = &q, .c = &c};
    int rc = kafka_slot_decode(s, body_at, commit_decode, &d);
    if (rc) {
        refuse_log(s, rc);
        return NET_CLOSE;
    }
    char group[GROUP_BYTES_MAX + 1];
    bool group_ok = group_of(q.group_id, group);
    /* KO5: the generation and member are checked against the group (group_coord.c). */
    int16_t all = KAFKA_INVALID_GROUP_ID;
    if (group_ok && !kafka_authorize_str(s, ACL_RESOURCE_GROUP, q.group_id, ACL_OP_READ)) {
        all = KAFKA_GROUP_AUTHORIZATION_FAILED; /* KZ2 */
    } else if (group_ok &&
               (all = kafka_group_coordinator_check(s->server, q.group_id)) != KAFKA_NONE) {
        /* group_cluster.c KGC2: another node coordinates it, or this one is loading it */
    } else if (group_ok) {
        bool wake = false;
        group_coord_lock(s->server->groups);
        all = group_coord_commit_check(s->server->groups, q.group_id, q.generation_id, q.member_id,
                                       q.group_instance_id, net_now_ms(), &wake);
        group_coord_unlock(s->server->groups);
        if (wake)
            net_wake(s->server->net);
    }
    rt_engine *e = s->server->engine;
    kafka_offsets_validate(s, q.topics, q.topics_count, all, &c); /* KO7 */
    /* One durable write for every valid partition, before the answer (KO9: not waited for on
     * the loop thread). */
    int16_t stored = KAFKA_NONE;
    if (c.offsets_count) {
        if (kafka_resp_reserve(s, sizeof(struct commit_job)))
            return NET_CLOSE;
        struct commit_job *j = kafka_alloc(s, 1, sizeof(*j));
        *j = (struct commit_job){.s = s, .c = c, .version = v};
        memcpy(j->group, group, strlen(group) + 1);
        rc = rt_group_commit_offsets_async(e, j->group, c.offsets, c.offsets_count, &j->op,
                                           commit_done, j);
        if (rc == 0)
            return NET_PENDING;
        stored = commit_error(rc); /* KO11 */
        fprintf(stderr, "ringtail serve: OffsetCommit for group '%s': %s: %s\n", group,
                rt_strerror(rc), rt_error_detail());
    }
    commit_answer(s, &c, v, stored);
    return kafka_response_end(s);
}
