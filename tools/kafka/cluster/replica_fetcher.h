/*
 * replica_fetcher.h — the follower side of Kafka's ISR replication on a cluster node (issue 24;
 * Kafka's ReplicaFetcherManager and ReplicaFetcherThread): for every local partition the
 * metadata image names this node a replica but not the leader of, one fetcher thread per
 * leader node sends Kafka's Fetch (replica_id = this node, current_leader_epoch = the image's)
 * for all the partitions it leads, appends what comes back with rt_partition_append_replica and
 * holds the follower's high watermark at min(leader's, own log end). On becoming a follower (a
 * new leader or epoch) a partition first truncates its divergent tail by the leader-epoch
 * protocol (OffsetForLeaderEpoch to the new leader, then rt_partition_truncate). It also keeps
 * the node's `replication-offset-checkpoint` (hw_checkpoint.h): loaded at start, so the first
 * high watermark a follower partition holds is its checkpointed one; written every interval and
 * at stop. It never proposes to the quorum, never runs on the quorum's apply thread or a network
 * loop thread, and never serves a client.
 *
 * Invariants:
 *   RF1  A local partition's first rt_partition_set_high_watermark from this module — followed,
 *       leaderless, or led while the image is not current (a restart) — is its checkpointed
 *       high watermark (0 without an entry), made at the first update that names it, before it
 *       truncates, appends or (RF5) moves it: a restarted node never exposes its unreplicated
 *       tail, and a truncation is never refused for an unheld high watermark. A partition first
 *       seen led by this node with current metadata (a topic created while it runs) is left
 *       unheld: its high watermark is the leader side's (until then its log end).
 *   RF2  Truncation before fetching (Kafka's getOffsetTruncationState, rf_truncation_decide):
 *       to min(leader's end offset for the epoch, own end offset for that epoch, own log end),
 *       another round when the leader answers an older epoch than asked, the high watermark when
 *       either side has no epochs; never below the held high watermark (clamped, logged).
 *   RF3  Only whole batches of a fetch response are appended, in order, starting at the local log
 *       end (the response's trailing partial batch, cut by max_bytes, is dropped and fetched
 *       again); a batch the engine refuses as not following the log (diverged) sends the
 *       partition back to truncation; the held high watermark never exceeds the local log end.
 *   RF4  Results of a request apply only if the partition's role did not change meanwhile (a
 *       generation counter bumped at every change of leader or epoch); a leader's error
 *       (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
 *       a connection failure) backs the partition off (RF_BACKOFF_MS) until the image changes or
 *       the delay passes; OFFSET_OUT_OF_RANGE sends it back to truncation.
 *   RF6  A Fetch answered OFFSET_OUT_OF_RANGE whose log_start_offset is above the fetch offset
 *       (the follower's log end: the leader deleted, by retention, DeleteRecords or compaction,
 *       what the follower lacks) restarts the local log empty at that log start
 *       (rt_partition_restart_at, Kafka's truncateFullyAndStartAt), and only then; any other
 *       OFFSET_OUT_OF_RANGE goes back to truncation (RF4). A leader that answers no log start
 *       (-1, as Kafka's does) leaves the partition to truncation and backoff: asking it with
 *       ListOffsets EARLIEST is not done yet.
 *   RF7  The engine holds the role (partition.h RL9): a user partition the image names this
 *       node leader of is made led (rt_partition_become_leader, metadata_node.c, before its new
 *       epoch is set), and one it follows is resigned (rt_partition_resign, at every update,
 *       before the fetcher may truncate or append it). A fetch, truncation or restart decided
 *       while the node followed and made after it became leader is refused by the engine on the
 *       partition's shard thread, so a role change can never interleave a leader's bytes with
 *       this node's own (the fetcher's RF4 check is only the cheap early exit).
 *   RF5  Interim, until the leader side keeps the high watermark over the ISR: once the image has
 *       caught up with the controller (so a restarted node's stale image never names it leader
 *       of a partition it lost), a partition this node leads whose high watermark it holds
 *       (a former follower, or one led at a restart) has it moved to its log end at every
 *       update and every RF_INTERIM_MS, so a held high watermark does not freeze its reads as a
 *       leader; this is a single broker's visibility (no acks=all guarantee), and the leader
 *       side's code replaces it (replica_fetcher_set_interim_leader_hw(rf, false)).
 */
#ifndef RT_KAFKA_CLUSTER_REPLICA_FETCHER_H
#define RT_KAFKA_CLUSTER_REPLICA_FETCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/cluster/metadata_image.h"

#define RF_BACKOFF_MS      1000       /* replica.fetch.backoff.ms */
#define RF_MAX_WAIT_MS     500        /* replica.fetch.wait.max.ms */
#define RF_MAX_BYTES       (10 << 20) /* replica.fetch.response.max.bytes */
#define RF_PARTITION_BYTES (1 << 20)  /* replica.fetch.max.bytes */
#define RF_CHECKPOINT_MS   5000       /* replica.high.watermark.checkpoint.interval.ms */
#define RF_FETCH_VERSION   11
#define RF_EPOCH_VERSION   4

struct replica_fetcher;

/* One local partition as the image sees it (the agent thread hands the whole list over). */
struct rf_assignment {
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition;
    int32_t leader, leader_epoch;     /* leader -1: none */
    char host[MI_HOST_BYTES_MAX + 1]; /* the leader's registered listener ("" unknown/fenced) */
    uint16_t port;
};

/* Loads DIR's checkpoint (RF1; a corrupt file is an error naming its line in err) and starts the
 * checkpoint thread (interval_ms 0: RF_CHECKPOINT_MS). 0 or -errno / RT_E_CORRUPT. */
int replica_fetcher_start(rt_engine *engine, int32_t node_id, const char *dir, unsigned interval_ms,
                          struct replica_fetcher **out, char *err, size_t err_len);
/* The role of every local partition, from the image (any thread but the quorum's apply thread;
 * the agent thread calls it after each image change): a partition whose leader is another node
 * is followed (truncation first when its leader or epoch changed, RF2), one led by this node or
 * by nobody is not. Engine calls only (RF1's first hold), no network. */
void replica_fetcher_update(struct replica_fetcher *rf, const struct rf_assignment *a, size_t n,
                            bool metadata_current);
/* RF5 on or off (on by default): the leader side turns it off once it holds the high watermark. */
void replica_fetcher_set_interim_leader_hw(struct replica_fetcher *rf, bool on);
/* The leader side (replica_state.h) handed the engine this high watermark of a partition this
 * node leads: it is what the checkpoint keeps for it (held from then on, even one RF1 left
 * unheld; never lowered). NULL: no-op. */
void replica_fetcher_leader_hw(struct replica_fetcher *rf, const char *topic, int32_t partition,
                               int64_t hw);
/* Stops every thread, then writes the checkpoint once more (a clean shutdown). NULL: no-op. */
void replica_fetcher_stop(struct replica_fetcher *rf);

/* RF2's decision, pure (Kafka's AbstractFetcherThread.getOffsetTruncationState): the leader's
 * answer (leader_epoch, leader_end; -1 undefined), the follower's high watermark and log end,
 * and its own end offset for leader_epoch (own_epoch -1: it has none; own_end). *offset: where
 * to truncate; returns true when done, false when another round asks for *next_epoch. */
bool rf_truncation_decide(int32_t leader_epoch, int64_t leader_end, int64_t hw, int64_t log_end,
                          int32_t own_epoch, int64_t own_end, int64_t *offset, int32_t *next_epoch);
/* RF3: the length of the whole RecordBatch v2 batches at the start of buf (a batch is 12 +
 * its length field bytes; a length below 49 stops the walk). */
size_t rf_whole_batches(const uint8_t *buf, size_t len);

#endif
