/*
 * replica_state.h — the LEADER side of Kafka's ISR replication on a cluster node (issue 24):
 * for every local partition the metadata image names this node the leader of, the leader epoch
 * handed to the engine (rt_partition_set_leader_epoch, before a produce is accepted), the ISR as
 * the image has it, each follower's log end offset and last caught-up time (Kafka's Replica:
 * logEndOffset, lastCaughtUpTimeMs), the high watermark (the minimum log end over the ISR, the
 * leader's included) handed to the engine (rt_partition_set_high_watermark), the acks=all
 * produces waiting for it, and the ISR changes (shrink for lag, expand on catching up) sent to
 * the active controller as AlterPartition (metadata_node_alter_partition).
 *
 * It owns one thread (the "replica thread") that does every engine call of this module and
 * every wait; the handlers call in only to record a follower's fetch, to check leadership and to
 * park an acks=all answer, each a short critical section that never calls the engine, a socket
 * or the quorum. It never appends or truncates (followers are the replica fetcher's), and never
 * commits metadata itself (the controller does, from AlterPartition).
 *
 * Invariants:
 *   RS1  The high watermark handed to the engine is min(leader log end, log end of every other
 *       ISR member) over the ISR the image has committed; a member whose log end is not yet
 *       known (no fetch in this leader epoch) holds it where it is (nothing is handed). A
 *       follower removed from the ISR by a pending shrink still counts until the image drops it
 *       (Kafka's "maximal ISR": the HW never advances on an uncommitted shrink), and one added by
 *       a pending expansion counts only once committed. From the moment it leads a partition
 *       the engine holds a high watermark (rt_partition_set_high_watermark 0 when none is held
 *       yet, which never lowers one the follower side holds), so what a consumer reads before
 *       the ISR's log ends are known is never past it; with the ISR {leader} it is the log end.
 *   RS2  A partition accepts produce and consumer reads only once the replica thread has set the
 *       image's leader epoch in the engine (rs_check answers NOT_LEADER_OR_FOLLOWER before), and
 *       every follower's state starts unknown at each new leader epoch.
 *   RS3  A follower's last caught-up time moves as Kafka's Replica.updateFetchState: to the fetch
 *       time when its fetch offset is at the leader's log end, else to the previous fetch's time
 *       when its fetch offset reached the leader's log end as of that previous fetch. "At the
 *       log end" is exact (a replica read found nothing past the offset); the leader's log end
 *       otherwise is the one the replica thread last read (at most a round old), which may
 *       credit a follower a little early: it keeps a slow follower in the ISR a round longer,
 *       never advances the HW past an ISR member's log end.
 *   RS4  Shrink: an ISR member other than the leader whose last caught-up time is older than
 *       replica.lag.time.max.ms leaves; expand: a replica outside the ISR whose log end is at or
 *       past the high watermark (and fetched in this epoch) joins, unless the image has it fenced
 *       or unregistered (the controller would refuse it). The leader never leaves its
 *       own ISR and a proposal never has an empty ISR; a change is sent to the controller, never
 *       applied locally (the image brings it back).
 *   RS5  An acks=all answer parked here is completed exactly once: NONE when the high watermark
 *       reaches its offset with an ISR of at least its min.insync.replicas,
 *       NOT_ENOUGH_REPLICAS_AFTER_APPEND when it reaches it with a smaller ISR (Kafka's
 *       checkEnoughReplicasReachOffset), REQUEST_TIMED_OUT at its deadline, NOT_LEADER_OR_FOLLOWER
 *       when the leadership went (seen at a sync: a leadership lost and regained within one
 *       50 ms sync is not seen); a new leader epoch while this node stays the leader keeps the
 *       wait. Always from the replica thread, never inside rs_wait.
 *   RS6  An AlterPartition carries the image's partition epoch (KIP-497, metadata_image.h MI8).
 *       Refused with INVALID_UPDATE_VERSION (the image it was planned on is stale), the leader
 *       sends no ISR change for the partition until its image's partition epoch moves, and
 *       then plans again from that image (Kafka's AlterPartitionManager waits for the
 *       metadata update instead of retrying the same change).
 *   RS7  A wait parked with need -1 (an append whose offset the caller does not know: a group's
 *       offset commit in `__consumer_offsets`, which this side leads like any partition) takes
 *       as its offset the leader's log end read by a round that began after it was parked, so
 *       the append it follows is below it; until then it is not answered NONE.
 */
#ifndef RT_KAFKA_CLUSTER_REPLICA_STATE_H
#define RT_KAFKA_CLUSTER_REPLICA_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/cluster/metadata_image.h"

#define RS_LAG_TIME_MAX_MS 30000 /* replica.lag.time.max.ms's default */

/* ---- the pure pieces (tested alone) ---- */

struct rs_follower {
    int32_t id;
    int64_t leo;               /* -1: unknown in this epoch */
    int64_t last_caught_up_ms; /* RS3 */
    int64_t last_fetch_ms;
    int64_t last_fetch_leader_leo; /* the leader's log end at its last fetch */
    bool ineligible; /* fenced or unregistered in the image: never proposed for the ISR */
};

/* RS3: records a fetch at `fetch_offset`; `at_end` says the fetch offset is the leader's log end
 * now (a replica read found nothing past it); leader_leo is the leader's log end as known. */
void rs_follower_fetched(struct rs_follower *f, int64_t fetch_offset, bool at_end,
                         int64_t leader_leo, int64_t now_ms);

/* RS1: the high watermark over `isr` (self is the leader: its log end is the engine's, so it
 * counts as INT64_MAX, which the engine clamps to its log end); -1 when an ISR member's log end
 * is unknown. */
int64_t rs_high_watermark(const int32_t *isr, unsigned isr_n, int32_t self,
                          const struct rs_follower *f, unsigned fn);

/* RS4: the ISR to propose into out (room for MI_REPLICAS_MAX); returns its size. Equal to the
 * current one (same members, same order) when nothing changes. */
unsigned rs_plan_isr(const int32_t *isr, unsigned isr_n, const int32_t *replicas,
                     unsigned replicas_n, int32_t self, const struct rs_follower *f, unsigned fn,
                     int64_t hw, int64_t now_ms, int64_t lag_ms, int32_t *out);

/* ---- the node's state and its thread ---- */

struct replica_state;

/* Called from the replica thread with a Kafka error (NONE when acknowledged). */
typedef void (*rs_done_fn)(void *ctx, int16_t error);

/* What the leader side needs of the node it runs in (metadata_node.c provides it; passed in,
 * so this module never includes the node's header and the two stay one way): read the image
 * under the node's lock, hand a moved high watermark to the follower side's checkpoint, and send
 * an ISR change to the controller (blocking; a Kafka error). */
struct rs_host {
    void *ctx;
    void (*read)(void *ctx, void (*fn)(void *fn_ctx, const struct metadata_image *img),
                 void *fn_ctx);
    void (*leader_hw)(void *ctx, const char *topic, int32_t partition, int64_t hw);
    int16_t (*alter_partition)(void *ctx, const char *topic, int32_t partition,
                               int32_t leader_epoch, int32_t partition_epoch, const int32_t *isr,
                               unsigned isr_n);
};

/* Starts the replica thread for node `self`. lag_ms 0: RS_LAG_TIME_MAX_MS. 0 or -errno. */
int replica_state_start(const struct rs_host *host, rt_engine *engine, int32_t self,
                        unsigned lag_ms, struct replica_state **out);
/* Stops the thread; parked answers complete with NOT_LEADER_OR_FOLLOWER. NULL is a no-op. */
void replica_state_stop(struct replica_state *rs);
/* fn(ctx) is called (from the replica thread, after a round that moved a high watermark) so
 * the server re-runs its parked long-poll fetches; it must not block. NULL rs: no-op. */
void replica_state_set_wake(struct replica_state *rs, void (*fn)(void *ctx), void *ctx);
/* The image changed: the thread re-reads leaderships soon. */
void replica_state_poke(struct replica_state *rs);

/* Kafka's checks for a request on (topic, partition) with the client's current_leader_epoch
 * (-1: none): FENCED_LEADER_EPOCH below the image's epoch, UNKNOWN_LEADER_EPOCH above it,
 * NOT_LEADER_OR_FOLLOWER when this node is not the ready leader (RS2), UNKNOWN_TOPIC_OR_PARTITION
 * when the image does not have it; else NONE. *isr_n_out, *min_isr_out (may be NULL): the
 * image's ISR size and the topic's min.insync.replicas (1 unless its TOPIC record says). */
int16_t rs_check(struct replica_state *rs, const char *topic, int32_t partition,
                 int32_t current_leader_epoch, unsigned *isr_n_out, unsigned *min_isr_out);

/* A follower's fetch (replica_id >= 0) at fetch_offset was just answered; at_end: nothing was
 * past it. Returns NONE, or NOT_LEADER_OR_FOLLOWER when this node does not lead it or the
 * replica is not one of its replicas. */
int16_t rs_follower_fetch(struct replica_state *rs, const char *topic, int32_t partition,
                          int32_t replica_id, int64_t fetch_offset, bool at_end);

/* Parks an acks=all answer until the high watermark reaches `need` (the offset after the
 * batch's last), or deadline_ms (CLOCK_MONOTONIC ms), RS5. min_isr: the topic's
 * min.insync.replicas. need -1: the leader's log end as a round begun after this call reads it
 * (RS7). 0, or -ENOMEM / -ESHUTDOWN (done is then never called). */
int rs_wait(struct replica_state *rs, const char *topic, int32_t partition, int64_t need,
            int64_t deadline_ms, unsigned min_isr, rs_done_fn done, void *ctx);

/* rs_wait's answer awaited on the calling thread (never a loop thread, nor the replica thread):
 * 0 and *error_out (NONE, or RS5's refusal: at the latest at deadline_ms), or rs_wait's error. */
int rs_wait_blocking(struct replica_state *rs, const char *topic, int32_t partition, int64_t need,
                     int64_t deadline_ms, unsigned min_isr, int16_t *error_out);

/* The current monotonic clock in ms (the one deadlines use). */
int64_t rs_now_ms(void);

#endif
