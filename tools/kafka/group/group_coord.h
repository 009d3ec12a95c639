/*
 * group_coord.h — the consumer-group coordinator behind JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup, ListGroups and DescribeGroups (handle_group.c) and OffsetCommit's generation check
 * (handle_offsets.c). Membership lives in memory only: after a restart every member rejoins
 * (offsets stay the engine's __consumer_offsets). One mutex guards every group; each call takes
 * the current monotonic time and first runs the group's timers (session and rebalance timeouts);
 * one small timer thread runs them too, every GROUP_TICK_MS, and wakes parked requests. Results point into the coordinator's memory and stay valid only
 * until group_coord_unlock: the handler encodes its answer between lock and unlock.
 */
#ifndef RT_KAFKA_GROUP_COORD_H
#define RT_KAFKA_GROUP_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/proto/kmsg.h"

#define GROUP_ID_BYTES_MAX     1024
#define GROUP_COUNT_MAX        10000   /* groups held at once (COORDINATOR_NOT_AVAILABLE beyond) */
#define GROUP_MEMBERS_MAX      1000    /* members per group (GROUP_MAX_SIZE_REACHED beyond) */
#define GROUP_REBALANCE_MAX_MS 1800000 /* a longer rebalance timeout is clamped to this */

struct group_coord;

#define GROUP_TICK_MS 100 /* the timer thread's period (timeouts are this late at most) */

/* The broker's group settings, under Kafka's names (ringtail serve --group-...). */
struct group_coord_options {
    int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms (3000; 0: none) */
    int32_t session_timeout_min_ms;     /* group.min.session.timeout.ms (6000) */
    int32_t session_timeout_max_ms;     /* group.max.session.timeout.ms (1800000) */
};
#define GROUP_INITIAL_REBALANCE_DELAY_MS 3000
#define GROUP_SESSION_MIN_MS             6000
#define GROUP_SESSION_MAX_MS             1800000
void group_coord_options_init(struct group_coord_options *o);

/* A coordinator with these settings (NULL: the defaults). NULL when out of memory. */
struct group_coord *group_coord_new(const struct group_coord_options *o);
/* Stops the timer thread (if running) and frees everything. */
void group_coord_free(struct group_coord *gc);
/* Starts the one timer thread: it runs the groups' timers every GROUP_TICK_MS and calls
 * wake(ctx) (without the lock) when a group changed. 0 or -errno. */
int group_coord_timer_start(struct group_coord *gc, void (*wake)(void *ctx), void *ctx);
/* Joins the timer thread; no wake runs once it returns. Idempotent. */
void group_coord_timer_stop(struct group_coord *gc);

void group_coord_lock(struct group_coord *gc);
void group_coord_unlock(struct group_coord *gc);

/* What a JoinGroup gets: answer now (done), or park until `deadline_ms` and ask again with
 * group_coord_join_poll. `wake`: other parked requests may be answerable now (net_wake). */
struct group_join_result {
    bool done;
    bool wake;
    int64_t deadline_ms;
    struct kmsg_join_group_response resp; /* members: the leader's only */
};

/* A JoinGroup from `waiter` (the request slot, identifies the parked request later). The
 * response's members array is written into `members` (capacity `members_cap`); when that is too
 * small, resp.members_count says how many are needed and done is false with deadline 0. */
void group_coord_join(struct group_coord *gc, const struct kmsg_join_group_request *q,
                      int16_t version, const struct kp_str client_id, const void *waiter,
                      int64_t now_ms, struct kmsg_join_group_member *members, int32_t members_cap,
                      struct group_join_result *out);
/* A parked JoinGroup asks again (expired: it must be answered now). */
void group_coord_join_poll(struct group_coord *gc, const struct kmsg_join_group_request *q,
                           const void *waiter, bool expired, int64_t now_ms,
                           struct kmsg_join_group_member *members, int32_t members_cap,
                           struct group_join_result *out);
/* The members count the join answer for this group's leader will carry (to size `members`). */
int32_t group_coord_members_count(struct group_coord *gc, struct kp_str group_id);

struct group_sync_result {
    bool done;
    bool wake;
    int64_t deadline_ms;
    struct kmsg_sync_group_response resp;
};

void group_coord_sync(struct group_coord *gc, const struct kmsg_sync_group_request *q, bool retry,
                      bool expired, int64_t now_ms, struct group_sync_result *out);

/* Heartbeat and LeaveGroup: the error code; *wake as above. */
int16_t group_coord_heartbeat(struct group_coord *gc, const struct kmsg_heartbeat_request *q,
                              int64_t now_ms, bool *wake);
/* LeaveGroup of `count` members (v0-2: one, by member id; v3+: by member id or instance,
 * KG11): errors[i] gets each member's code; returns the group's (INVALID_GROUP_ID or NONE). */
int16_t group_coord_leave(struct group_coord *gc, struct kp_str group_id,
                          const struct kmsg_leave_group_member *members, int32_t count,
                          int16_t *errors, int64_t now_ms, bool *wake);

/* OffsetCommit with membership: NONE when (generation, member) may commit to the group now;
 * generation -1 with no member is a simple consumer's commit, allowed while the group has no
 * members. Else FENCED_INSTANCE_ID (instance_id, v7+, is a static member with another member
 * id), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS, as Kafka. */
int16_t group_coord_commit_check(struct group_coord *gc, struct kp_str group_id, int32_t generation,
                                 struct kp_str member_id, struct kp_str instance_id, int64_t now_ms,
                                 bool *wake);

/* KG10: where a group's membership is persisted (rt_group_store_metadata's shape): called under
 * the coordinator's lock when a generation's assignment is set (Stable) and when the last
 * member leaves (Empty). Its failure is logged by it and changes nothing here. */
typedef int (*group_coord_store_fn)(void *ctx, const char *group,
                                    const struct rt_group_metadata *md);
void group_coord_set_store(struct group_coord *gc, group_coord_store_fn fn, void *ctx);
/* Recreates a group from its persisted metadata (at start, before serving): Stable with its
 * members (each given a full session timeout from now to heartbeat) when it has members, a
 * protocol and a leader, else Empty. 0, or -ENOMEM, -EEXIST (already held), -EINVAL (a name
 * it cannot hold), -ENOSPC (GROUP_COUNT_MAX groups held). */
int group_coord_restore(struct group_coord *gc, const char *group,
                        const struct rt_group_metadata *md, int64_t now_ms);

/* True when the coordinator holds the group (in any state). */
bool group_coord_holds(struct group_coord *gc, struct kp_str group_id);

/* ListGroups / DescribeGroups: fill at most `cap` entries, return how many there are. */
int32_t group_coord_list(struct group_coord *gc, int64_t now_ms, struct kmsg_list_groups_group *out,
                         int32_t cap);
/* One group's description; its members are written into `members` (capacity cap). Returns the
 * members count it has (more than cap: call again with room). */
int32_t group_coord_describe(struct group_coord *gc, struct kp_str group_id, int64_t now_ms,
                             struct kmsg_describe_groups_group *out,
                             struct kmsg_describe_groups_member *members, int32_t cap);

/* DeleteGroups (KG13): forgets the group when it has no members (NONE); NON_EMPTY_GROUP when
 * it has; INVALID_GROUP_ID for a name that cannot be one. *held: the coordinator held it (when
 * not, the caller decides by the engine's offsets: GROUP_ID_NOT_FOUND when there are none). */
int16_t group_coord_delete(struct group_coord *gc, struct kp_str group_id, int64_t now_ms,
                           bool *held);
/* Forgets every group for which pick(ctx, group id) is true, whatever its state (KG14: a
 * cluster node that stopped leading the groups' `__consumer_offsets` partition). Under the lock.
 * Returns how many were forgotten. */
int32_t group_coord_drop(struct group_coord *gc, bool (*pick)(void *ctx, const char *group),
                         void *ctx);
/* OffsetDelete's group check (KG13): NONE, NON_EMPTY_GROUP (members and a protocol type other
 * than "consumer") or INVALID_GROUP_ID; *held as above. */
int16_t group_coord_offset_delete_check(struct group_coord *gc, struct kp_str group_id,
                                        int64_t now_ms, bool *held);
/* True when a member of the group subscribes to `topic` (KG13). */
bool group_coord_subscribed(struct group_coord *gc, struct kp_str group_id, struct kp_str topic);

#endif /* RT_KAFKA_GROUP_COORD_H */
