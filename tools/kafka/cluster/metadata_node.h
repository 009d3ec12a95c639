/*
 * metadata_node.h — a broker's membership in the cluster (`ringtail serve --node-id N
 * --controller-listen HOST:PORT --voters ...`): one quorum (quorum.h) whose committed records
 * build this node's metadata image (metadata_image.h), guarded by one mutex, and, once the
 * broker runs (metadata_node_run), KRaft's broker lifecycle and the active controller's duties:
 *
 *  - the broker side (its agent thread): register with the active controller (the raft leader)
 *    with its advertised Kafka listener and an incarnation id, then heartbeat every
 *    session/4 ms (BrokerRegistration / BrokerHeartbeat sent to the controller's listener found
 *    in the image, kclient.h; the controller registers itself by proposing directly); make
 *    the local partitions of every topic the image names this node a replica of (the engine's
 *    topic API), off the quorum's apply thread (MN2); and hand every local partition's role
 *    to the follower side (replica_fetcher.h) after each image change;
 *  - the controller side (when this node is the raft leader): answer registrations (proposing
 *    REGISTER_BROKER) and heartbeats (unfencing a fenced broker), fence a broker whose
 *    heartbeats stopped for the session timeout (MN1), create topics (placement, TOPIC and
 *    PARTITION records, MN3), hand out producer-id blocks (PRODUCER_IDS, producer_id_blocks.h)
 *    and move a stopping broker's leaderships (MN5); CreatePartitions and DeleteTopics are
 *    controller_admin.h's, on the helpers at the end of this header;
 *  - the stopping node's side of a controlled shutdown (MN5), and the agent's requests for
 *    producer-id blocks and local deletions (MN4).
 *
 * Invariants:
 *   MN1  Only the active controller proposes FENCE_BROKER; it fences a registered, unfenced broker
 *       other than itself once no registration or heartbeat of it arrived for session_ms since
 *       this node became controller (a new controller gives every broker a full session), or
 *       at once when it asks to shut down (MN5).
 *   MN2  The quorum's apply callback never calls the engine or a socket: it applies the record and
 *       wakes the agent thread, which creates local partitions.
 *   MN3  A topic is created by the controller only: rf within 1..unfenced brokers, replicas by
 *       mi_place_replicas over the unfenced brokers, leader = first replica, epoch 0, ISR = the
 *       replicas; its TOPIC record precedes its PARTITION records, all in one BATCH record
 *       (metadata_image.h MI9, controller_admin.h CA6).
 *   MN4  A DELETE_TOPIC record applied makes the agent delete the topic of that name from the
 *       local engine, once this member has caught up (a leader known, every committed record
 *       applied) and unless the image holds a topic of that name again by then (the engine
 *       knows names, not topic ids); the apply callback only notes the name (MN2's rule).
 *   MN5  Controlled shutdown: a node stopping (SIGTERM) first hands the controller role away
 *       if it holds it (quorum_transfer), then heartbeats with want_shut_down; the controller
 *       fences it (FENCE_BROKER 1, so MI6 moves its leaderships and ISR places at once, and no
 *       leaderless partition is handed back to it) and answers should_shut_down only once the
 *       image names it leader of no partition. The node waits for that answer at most the
 *       bound it is given, then stops anyway.
 *   MN6  Topic configs follow the image: after each image change (and once a tick while one
 *       failed or this member had not caught up) the agent gives every local topic whose
 *       engine overrides differ from the image's exactly the image's (rt_topic_config_alter,
 *       replace), so retention and the other configs the engine acts on take effect on every
 *       replica. Only once caught up (MN4's rule): a node replaying its log at a restart never
 *       hands its engine an older set the log has replaced since.
 *   MN7  Groups in the cluster: after each image change and once a tick, the agent calls the
 *       broker's group-role hook (metadata_node_set_group_role) for every partition of
 *       `__consumer_offsets` the image has, before the follower side sees the roles; a
 *       partition of it is handed to the replica fetcher only when this node leads it or the
 *       hook answered that the engine follows it (rt_partition_resign done), so a replica
 *       append never meets a partition the engine still leads. The hook is told "lead" only
 *       from a current image (replica_fetcher.h RF5's test), so a restarted node whose replayed
 *       image is stale never takes up a group coordinator's role it no longer has.
 *   MN8  The active controller creates `__consumer_offsets` (RT_GROUP_OFFSETS_PARTITIONS
 *       partitions, replication factor min(3, voters), no topic config: MN3's placement) once
 *       that many brokers are unfenced; until then FindCoordinator answers
 *       COORDINATOR_NOT_AVAILABLE.
 *   MN9  The node has caught up once (metadata_node_caught_up) from the first time it heard
 *       from a raft leader, applied all that leader committed, and was registered with it (or
 *       is it), and stays so until it stops; the broker serves no request before (server.c
 *       KS7), as a Kafka broker serves none before it has caught up with the metadata log.
 *   MN10 The active controller creates `__transaction_state` (1 partition, replication factor
 *       min(3, voters), min.insync.replicas 2 when that factor is 3 or more: Kafka's
 *       transaction.state.log.* defaults) once that many brokers are unfenced; until then no
 *       node coordinates a transaction (FindCoordinator key type 1 answers
 *       COORDINATOR_NOT_AVAILABLE).
 *   MN11 The transaction coordinator in the cluster: after each image change and once a tick,
 *       after the leader epochs of the partitions this node leads are set, the agent calls the
 *       broker's txn-role hook (metadata_node_set_txn_role) with "lead" when a current image
 *       (MN7's rule) names this node the leader of `__transaction_state`-0, and "follow"
 *       otherwise (the topic's absence included); the partition is handed to the replica
 *       fetcher only when this node leads it or the hook answered that the engine follows it.
 */
#ifndef RT_KAFKA_CLUSTER_METADATA_NODE_H
#define RT_KAFKA_CLUSTER_METADATA_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/cluster/quorum.h"

#define METADATA_SESSION_TIMEOUT_MS 9000 /* broker.session.timeout.ms's default */

struct metadata_node;

#define METADATA_OFFSETS_TOPIC   "__consumer_offsets"
#define METADATA_TXN_STATE_TOPIC "__transaction_state"

/* MN7: the broker's side of a `__consumer_offsets` partition's role (handlers/group_cluster.c),
 * called on the agent thread: lead says the image names this node its leader. Returns true once
 * the engine holds the partition in that role (led, or followed after rt_partition_resign). */
typedef bool (*metadata_node_group_role_fn)(void *ctx, uint32_t partition, bool lead);
/* Sets the hook (any thread, once the broker's groups exist); the agent runs it at once. */
void metadata_node_set_group_role(struct metadata_node *n, metadata_node_group_role_fn fn,
                                  void *ctx);

/* MN11: the broker's side of `__transaction_state`-0's role (handlers/txn_cluster.c), called on
 * the agent thread after each image change and once a tick: lead says a current image names
 * this node its leader. Returns true once the engine holds the partition in that role. */
typedef bool (*metadata_node_txn_role_fn)(void *ctx, bool lead);
/* Sets the hook (any thread, once the broker runs); the agent runs it at once. */
void metadata_node_set_txn_role(struct metadata_node *n, metadata_node_txn_role_fn fn, void *ctx);

/* Starts the quorum member under DIR/__cluster_metadata/ (quorum_start's rules and errors; the
 * message in err). `listen` may be NULL (the voter's own address). */
int metadata_node_start(const char *dir, int32_t node_id, const char *listen, const char *voters,
                        struct metadata_node **out, char *err, size_t err_len);
/* Starts the broker side (agent thread): the advertised Kafka listener host:port, the engine
 * local partitions are created in, the session timeout (0: 9000 ms), and the follower side
 * (replica_fetcher.h: DIR's replication-offset-checkpoint loaded, written every checkpoint_ms,
 * 0: 5000). 0 or -errno (-EINVAL: a corrupt checkpoint, logged with its line). */
int metadata_node_run(struct metadata_node *n, rt_engine *engine, const char *host, uint16_t port,
                      unsigned session_ms, unsigned replica_lag_ms, unsigned checkpoint_ms);
/* MN9: has this node caught up with the metadata log once since it started? Any thread. */
bool metadata_node_caught_up(struct metadata_node *n);
/* The leader side of replication (replica_state.h; replica_lag_ms 0: 30000), NULL before
 * metadata_node_run or after metadata_node_halt (which stops it first). */
struct replica_state *metadata_node_replicas(struct metadata_node *n);
/* The leader side's high watermark of a partition this node leads, for the follower side's
 * replication-offset-checkpoint (replica_fetcher_leader_hw; the replica thread only). */
void metadata_node_leader_hw(struct metadata_node *n, const char *topic, int32_t partition,
                             int64_t hw);
/* Stops the leader side, the agent thread and the replica fetchers (writing the high-watermark
 * checkpoint; the engine is not used after it); the quorum keeps running. NULL and a second call
 * are no-ops. */
void metadata_node_halt(struct metadata_node *n);
/* Stops the agent and the quorum, frees the image. NULL is a no-op. */
void metadata_node_stop(struct metadata_node *n);
/* The quorum's status, and the image's record count and digest (any thread). */
void metadata_node_status(struct metadata_node *n, struct quorum_status *st,
                          uint64_t *records_applied, uint64_t *digest);
/* Runs fn with the image under the node's lock (fn must be quick and must not call back). */
void metadata_node_read(struct metadata_node *n,
                        void (*fn)(void *ctx, const struct metadata_image *img), void *ctx);
/* Calls fn(ctx, key, value) for every config override the image holds for topic `name`, under
 * the node's lock (fn must be quick). 0, or -ENOENT when the image has no such topic. */
int metadata_node_topic_configs(struct metadata_node *n, const char *name,
                                void (*fn)(void *ctx, const char *key, const char *value),
                                void *ctx);

/* Controller side (any thread but the quorum's; each returns a Kafka error code). */
int16_t metadata_node_register(struct metadata_node *n, int32_t broker_id, const char *host,
                               uint16_t port, const uint8_t incarnation[16], int64_t *epoch);
int16_t metadata_node_heartbeat(struct metadata_node *n, int32_t broker_id, int64_t epoch,
                                bool want_fence, bool *is_fenced);
/* May wait for the quorum (never call it from a loop thread). rf -1: 1. `message` is set to a
 * static explanation on an error. */
/* AlterPartition on the controller (replica_state.h RS4), checked as alter_partition.h AP1
 * says (broker_id the leader at leader_epoch, partition_epoch the image's, else
 * INVALID_UPDATE_VERSION; a valid ISR); then a PARTITION record with the new ISR (same
 * replicas, leader, leader epoch) is committed, raising the partition epoch (MI8). Waits for
 * the quorum (never from a loop thread). NOT_CONTROLLER on another node. */
int16_t metadata_node_alter_partition(struct metadata_node *n, int32_t broker_id, const char *topic,
                                      int32_t partition, int32_t leader_epoch,
                                      int32_t partition_epoch, const int32_t *isr, unsigned isr_n);
/* The leader's call: metadata_node_alter_partition here when this node is the controller, else
 * AlterPartition (56) to the controller's listener (kclient.h). A Kafka error. */
int16_t metadata_node_alter_partition_send(struct metadata_node *n, const char *topic,
                                           int32_t partition, int32_t leader_epoch,
                                           int32_t partition_epoch, const int32_t *isr,
                                           unsigned isr_n);
/* The topic's configs (checked already, keys distinct) go in its TOPIC record, so no node's image
 * holds the topic without them. validate_only: checked as a create would be, nothing proposed. */
int16_t metadata_node_create_topic(struct metadata_node *n, const char *name, int32_t partitions,
                                   int16_t rf, const char *const *keys, const char *const *values,
                                   unsigned configs_count, bool validate_only,
                                   const char **message);

/* The controller's duties kept in other files (controller_admin.c, producer_id_blocks.c):
 * whether this node is the active controller now; quorum_propose_wait with the node's bound
 * (a QUORUM_E_* or 0); that error as a Kafka code; the block a PRODUCER_IDS record applied at
 * `index` granted to `broker` (PB1), if it did; and a wake-up of the agent's tick. */
bool metadata_node_is_controller(struct metadata_node *n);
int metadata_node_propose_wait(struct metadata_node *n, const void *rec, size_t len,
                               uint64_t *index);
int16_t metadata_node_kafka_error(int rc);
bool metadata_node_grant_at(struct metadata_node *n, uint64_t index, int32_t broker, int64_t *first,
                            int64_t *end);
void metadata_node_kick(struct metadata_node *n);

/* AllocateProducerIds on the controller (producer_id_blocks.h PB1): a Kafka error code; on
 * KAFKA_NONE the block [*start, *start + *len), its PRODUCER_IDS record committed and applied.
 * May wait for the quorum (never from a loop thread). */
int16_t metadata_node_allocate_producer_ids(struct metadata_node *n, int32_t broker_id,
                                            int64_t broker_epoch, int64_t *start, int32_t *len);
/* MN5, the controller's side: a BrokerHeartbeat with want_shut_down (never waits). */
int16_t metadata_node_heartbeat_shutdown(struct metadata_node *n, int32_t broker_id, int64_t epoch,
                                         bool *is_fenced, bool *should_shut_down);
/* MN5, the stopping node's side (cmd_serve's thread, before metadata_node_halt): true once the
 * controller answered should_shut_down, false after timeout_ms. NULL: true. */
bool metadata_node_shutdown(struct metadata_node *n, unsigned timeout_ms);

#endif
