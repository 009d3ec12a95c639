/*
 * group_cluster.c — consumer groups on a cluster node (`ringtail serve --voters`; issue 24 item
 * 4): which node coordinates a group (the metadata image's leader of the group's
 * `__consumer_offsets` partition), the check every group request passes on a cluster node, the
 * wait that holds an OffsetCommit's answer until the commit is on the ISR, and the broker's side
 * of a `__consumer_offsets` partition's role change (the hook the agent thread calls,
 * metadata_node.h MN7): the engine's rt_partition_become_leader / rt_partition_resign with the
 * group coordinator's membership restored or dropped beside it. On a single broker (no cluster
 * member) every check answers "this node" and nothing else runs, so its answers stay byte for
 * byte what they were. It never writes to `__consumer_offsets` itself (the engine's group calls
 * do), never replicates it (the replica fetcher does, like any partition) and never blocks a
 * loop thread on the network (it reads the image under the node's mutex, as Metadata does).
 *
 * Invariants:
 *   KGC1 A group's coordinator is the image's leader of `__consumer_offsets` partition
 *        rt_group_partition(group) — the engine's own placement (Kafka's
 *        abs(groupId.hashCode) % partitions), so broker and engine agree on the partition.
 *        FindCoordinator (key type 0) answers that leader's registered listener, and
 *        COORDINATOR_NOT_AVAILABLE (15) while the topic does not exist yet (metadata_node.h
 *        MN8) or the partition has no unfenced leader.
 *   KGC2 On a cluster node a group request is served only when the image names this node the
 *        partition's leader and the partition is loaded here (KGC3's gain finished and the
 *        leader side set its epoch: rs_check); otherwise NOT_COORDINATOR (16) when another
 *        node leads it or none does, COORDINATOR_LOAD_IN_PROGRESS (14) while this node, named
 *        leader, still loads it, COORDINATOR_NOT_AVAILABLE (15) before the topic exists.
 *   KGC3 Losing a partition: its role is marked following before the engine resigns it (no
 *        request is served from then on), then the coordinator forgets the partition's groups
 *        (group_coord.c KG14) and parked group requests are woken (they answer NOT_COORDINATOR).
 *        Gaining one: the engine replays it (rt_partition_become_leader), the groups' persisted
 *        membership is restored (group_coord_restore, KG10), and only then is it marked led.
 *   KGC4 An OffsetCommit on a cluster node is answered once the commit is on every ISR member
 *        (the leader side's high watermark past the log end read after the commit, replica_state.h
 *        RS7) — Kafka's offsets.commit.required.acks=-1 — or failed as Kafka's
 *        GroupMetadataManager maps it: NOT_COORDINATOR when the leadership went,
 *        COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms (5000) or with an ISR below
 *        min.insync.replicas.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/handlers/handle.h"

#define OFFSETS_TOPIC             METADATA_OFFSETS_TOPIC
#define OFFSETS_COMMIT_TIMEOUT_MS 5000 /* Kafka's offsets.commit.timeout.ms */

enum { ROLE_UNKNOWN = 0, ROLE_LEADING = 1, ROLE_FOLLOWING = 2 };

/* What the image says of one partition of `__consumer_offsets`. */
struct coord_look {
    uint32_t partition;
    bool exists;
    int32_t leader;
    bool live; /* the leader is registered and unfenced */
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
};

static void look(void *ctx, const struct metadata_image *img)
{
    struct coord_look *lk = ctx;
    const struct mi_topic *t = metadata_image_topic(img, OFFSETS_TOPIC);
    if (!t || lk->partition >= (uint32_t)t->partitions_count ||
        !t->partitions[lk->partition].exists)
        return;
    lk->exists = true;
    lk->leader = t->partitions[lk->partition].leader;
    const struct mi_broker *b = lk->leader >= 0 ? metadata_image_broker(img, lk->leader) : NULL;
    if (b && !b->fenced) {
        lk->live = true;
        memcpy(lk->host, b->host, sizeof lk->host);
        lk->port = b->port;
    }
}

static uint32_t partition_of(struct kp_str group)
{
    return rt_group_partition(group.ptr, group.len > 0 ? (size_t)group.len : 0);
}

int16_t kafka_group_coordinator_check(const struct kafka_server *srv, struct kp_str group)
{
    struct metadata_node *mn = kafka_cluster(srv);
    if (!mn || group.len <= 0 || !group.ptr)
        return KAFKA_NONE; /* a single broker; a name that cannot be one is the handler's */
    struct coord_look lk = {.partition = partition_of(group), .leader = -1};
    metadata_node_read(mn, look, &lk);
    if (!lk.exists)
        return KAFKA_COORDINATOR_NOT_AVAILABLE; /* KGC2 */
    if (lk.leader != srv->opts.broker_id)
        return KAFKA_NOT_COORDINATOR;
    if (atomic_load(&((struct kafka_server *)srv)->group_roles[lk.partition]) != ROLE_LEADING)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
    struct replica_state *rs = kafka_replicas(srv);
    if (rs && rs_check(rs, OFFSETS_TOPIC, (int32_t)lk.partition, -1, NULL, NULL) != KAFKA_NONE)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS; /* the leader side has not set its epoch */
    return KAFKA_NONE;
}

bool kafka_group_coordinator_find(struct kafka_slot *s, struct kp_str key, int16_t *err,
                                  int32_t *node, struct kp_str *host, int32_t *port)
{
    struct metadata_node *mn = kafka_cluster(s->server);
    if (!mn)
        return false; /* a single broker answers itself */
    struct coord_look lk = {.partition = partition_of(key), .leader = -1};
    metadata_node_read(mn, look, &lk);
    if (!lk.exists || !lk.live) { /* KGC1 */
        *err = KAFKA_COORDINATOR_NOT_AVAILABLE;
        *node = -1;
        *host = kp_str_of("");
        *port = -1;
        return true;
    }
    *err = KAFKA_NONE;
    *node = lk.leader;
    *host = kafka_str_dup(s, lk.host);
    *port = lk.port;
    return true;
}

/* ---- KGC3: a partition's role ---- */

struct restore {
    struct kafka_server *srv;
    uint32_t partition;
    unsigned restored;
};

static int restore_one(void *ctx, const char *group, const struct rt_group_metadata *md)
{
    struct restore *r = ctx;
    if (rt_group_partition(group, strlen(group)) != r->partition)
        return 0;
    int rc = group_coord_restore(r->srv->groups, group, md, net_now_ms());
    if (rc == -ENOMEM)
        return rc;
    r->restored += rc == 0;
    return 0; /* held already (restored at start), or a name it cannot hold (KH3) */
}

static bool of_partition(void *ctx, const char *group)
{
    return rt_group_partition(group, strlen(group)) == *(const uint32_t *)ctx;
}

bool kafka_group_partition_role(void *ctx, uint32_t partition, bool lead)
{
    struct kafka_server *srv = ctx;
    if (partition >= RT_GROUP_OFFSETS_PARTITIONS)
        return false;
    _Atomic int *role = &srv->group_roles[partition];
    if (lead) {
        if (atomic_load(role) == ROLE_LEADING)
            return true;
        int rc = rt_partition_become_leader(srv->engine, OFFSETS_TOPIC, partition);
        if (rc) {
            fprintf(stderr, "ringtail serve: groups: loading %s-%u: %s (%s)\n", OFFSETS_TOPIC,
                    (unsigned)partition, rt_strerror(rc), rt_error_detail());
            return false;
        }
        struct restore r = {.srv = srv, .partition = partition};
        group_coord_lock(srv->groups);
        rc = rt_group_list_metadata(srv->engine, restore_one, &r);
        group_coord_unlock(srv->groups);
        if (rc)
            fprintf(stderr, "ringtail serve: groups: restoring the groups of %s-%u: %s\n",
                    OFFSETS_TOPIC, (unsigned)partition, rt_strerror(rc));
        atomic_store(role, ROLE_LEADING); /* KGC3: served from here on */
        fprintf(stderr,
                "ringtail serve: groups: coordinator of %s-%u (%u groups' membership restored)\n",
                OFFSETS_TOPIC, (unsigned)partition, r.restored);
        return true;
    }
    if (atomic_load(role) == ROLE_FOLLOWING)
        return true;
    int was = atomic_exchange(role, ROLE_FOLLOWING); /* KGC3: before the engine resigns */
    int rc = rt_partition_resign(srv->engine, OFFSETS_TOPIC, partition);
    group_coord_lock(srv->groups);
    int32_t dropped = group_coord_drop(srv->groups, of_partition, &partition);
    group_coord_unlock(srv->groups);
    net_wake(srv->net); /* parked joins and syncs answer NOT_COORDINATOR now */
    if (rc) {
        fprintf(stderr, "ringtail serve: groups: resigning %s-%u: %s (%s)\n", OFFSETS_TOPIC,
                (unsigned)partition, rt_strerror(rc), rt_error_detail());
        atomic_store(role, ROLE_UNKNOWN); /* tried again at the next tick */
        return false;
    }
    if (was == ROLE_LEADING || dropped)
        fprintf(stderr, "ringtail serve: groups: no longer coordinator of %s-%u (%d groups left)\n",
                OFFSETS_TOPIC, (unsigned)partition, (int)dropped);
    return true;
}

/* ---- KGC4: an OffsetCommit waits for the ISR ---- */

int kafka_group_commit_wait(struct kafka_server *srv, struct kp_str group,
                            void (*done)(void *ctx, int16_t error), void *ctx)
{
    struct replica_state *rs = kafka_replicas(srv);
    if (!rs)
        return -1; /* a single broker: the local commit is the answer */
    int32_t p = (int32_t)partition_of(group);
    unsigned min_isr = 1;
    (void)rs_check(rs, OFFSETS_TOPIC, p, -1, NULL, &min_isr);
    return rs_wait(rs, OFFSETS_TOPIC, p, -1, rs_now_ms() + OFFSETS_COMMIT_TIMEOUT_MS, min_isr, done,
                   ctx);
}

int16_t kafka_group_commit_error(int16_t replication_error)
{
    switch (replication_error) { /* KGC4: Kafka's GroupMetadataManager mapping */
    case KAFKA_NONE:
        return KAFKA_NONE;
    case KAFKA_NOT_LEADER_OR_FOLLOWER:
        return KAFKA_NOT_COORDINATOR;
    default: /* REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND) */
        return KAFKA_COORDINATOR_NOT_AVAILABLE;
    }
}
