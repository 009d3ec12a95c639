/*
 * handle.h — what server.c and the request handlers (handle_*.c) share: the server, the
 * per-request slot state, and one entry point per API. A handler runs on a loop thread with the
 * request decoded; it fills the slot's writer with the whole response frame (header included,
 * kafka_frame_begin/end) and answers NET_DONE, or queues work and answers NET_PENDING /
 * NET_PARK. It never blocks on the network and never allocates per request once the slot's
 * buffers are warm.
 */
#ifndef RT_KAFKA_HANDLE_H
#define RT_KAFKA_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/group/group_coord.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/net/net.h"
#include "tools/kafka/handlers/broker.h"
#include "tools/kafka/handlers/session.h"

struct replica_state;

#define KAFKA_HOLES_MAX       1024 /* record slices in one fetch response */
#define KAFKA_ARENA_MIN_BYTES (16u << 10)
#define KAFKA_ARENA_MAX_BYTES (64u << 20)

/* One produce batch in the engine: the op, and where its outcome goes. */
struct kafka_produce_op {
    struct rt_append_op op;
    struct kafka_slot *slot;
    struct kmsg_produce_partition_response *resp;
    bool first;          /* the partition's first batch: its base offset is the answer */
    void *converted;     /* an up-converted message set's batch (KPC1), freed by its callback */
    uint32_t last_delta; /* the batch's last offset delta (acks=all in a cluster, KPR6) */
    int64_t *need;       /* the partition's offset after its last appended batch (KPR6) */
};

/* KPR6: one partition's acks=all answer parked in replica_state.h (rs_wait). */
struct kafka_produce_wait {
    struct kafka_slot *slot;
    struct kmsg_produce_partition_response *resp;
    char topic[RT_TOPIC_NAME_MAX + 1];
    int64_t need;
};

struct kafka_slot {
    struct kafka_server *server;
    struct net_req *req;
    struct kafka_request_header header;
    union kmsg_request msg;
    uint8_t *arena_buf; /* the request's decoded arrays */
    size_t arena_bytes;
    struct kp_arena arena;
    uint8_t *resp_buf; /* the response's arrays (kafka_alloc) */
    size_t resp_bytes;
    struct kp_arena resp;
    struct kp_writer w;
    /* Fetch only: grown to the partitions a fetch names (at most KAFKA_HOLES_MAX), reused. */
    struct kp_hole *holes;
    struct net_slice *slices;
    rt_fetch **fetches;
    uint32_t holes_cap;
    uint32_t fetch_count;
    /* Fetch v0-3 (handle_fetch.c KF9-KF12): converted bytes not yet handed to net,
     * dc_buf[dc_off, dc_len), of the partition dc_owner; made as the socket drains, freed at
     * each partition's end and by the release hook. */
    uint8_t *dc_buf;
    size_t dc_cap, dc_off, dc_len;
    const void *dc_owner;
    bool dc_generated; /* the response's holes are generated slices (kafka_response_end) */
    /* Produce in flight. */
    struct kafka_produce_op *ops;
    uint32_t ops_cap;
    _Atomic uint32_t ops_pending;
    const struct kmsg_produce_response *produce_resp;
    bool acks_none;
    struct replica_state *produce_rs;         /* a cluster's leader side (KPR6) */
    bool produce_wait_all;                    /* acks=all: answers wait for the HW (KPR6) */
    struct kafka_produce_wait *produce_waits; /* one per partition of the request (KPR6) */
    uint32_t produce_waits_count;
    int64_t produce_deadline_ms;
    int16_t api_versions_error; /* NONE, or UNSUPPORTED_VERSION (answered at v0) */
    /* Group metadata stores and deletions in flight, plus the handler's own hold (KH4). */
    _Atomic uint32_t group_ops;
    /* Long poll. */
    int64_t poll_started_ms;
    uint64_t started_ns;   /* the frame was complete (latency in --metrics) */
    uint32_t auto_created; /* topics this request auto-created (kafka_topic_ensure) */
    /* Queued for the admin thread (server.c KS4): the next in the queue, and where the body
     * starts in the frame. */
    struct kafka_slot *admin_next;
    size_t admin_body_at;
    /* A failed authentication's answer (or, v0, close) held until deadline_ms
     * (connection.failed.authentication.delay.ms; handle_sasl.c KSA3). */
    bool sasl_delayed;
    bool sasl_delayed_close;
    /* A transactional Produce's second pass: the coordinator's answers (txn_verify.c KTV7). */
    struct kafka_txn_verify_job *txn_verify;
};

/* Handlers: each returns a net verdict. */
enum net_verdict kafka_handle_api_versions(struct kafka_slot *s);
enum net_verdict kafka_handle_metadata(struct kafka_slot *s);
/* Cluster mode (handle_cluster.c): the node's metadata member (NULL for a single broker), the
 * broker-to-controller APIs, Metadata from the image, a cluster's CreateTopics. */
struct metadata_node;
struct metadata_node *kafka_cluster(const struct kafka_server *srv);
/* The cluster's leader-side replication state (replica_state.h), NULL on a single broker. */
struct replica_state *kafka_replicas(const struct kafka_server *srv);
enum net_verdict kafka_handle_broker_registration(struct kafka_slot *s);
enum net_verdict kafka_handle_broker_heartbeat(struct kafka_slot *s);
enum net_verdict kafka_handle_alter_partition(struct kafka_slot *s);
/* OffsetForLeaderEpoch (handle_epoch.c, KE1). */
enum net_verdict kafka_handle_offset_for_leader_epoch(struct kafka_slot *s);
enum net_verdict kafka_handle_metadata_cluster(struct kafka_slot *s, struct metadata_node *mn);
/* A CreateTopics topic's configs checked by the engine's rule (handle_admin.c KAD3) and
 * copied into the response arena: *out, *count. A Kafka error; *message on one. */
int16_t kafka_create_topic_configs(struct kafka_slot *s, const struct kmsg_create_topics_topic *t,
                                   struct rt_topic_config **out, size_t *count,
                                   const char **message);
int16_t kafka_cluster_create_topic(struct kafka_slot *s, struct metadata_node *mn,
                                   const struct kmsg_create_topics_topic *t, bool validate_only,
                                   const char **message);
/* A cluster's CreatePartitions and DeleteTopics of one topic (KCL2), and the producer id of an
 * idempotent InitProducerId from the node's granted blocks (KCL3). Kafka error codes. */
int16_t kafka_cluster_create_partitions(struct kafka_slot *s, struct metadata_node *mn,
                                        const struct kmsg_create_partitions_topic *t,
                                        bool validate_only, const char **message);
int16_t kafka_cluster_delete_topic(struct kafka_slot *s, struct metadata_node *mn,
                                   struct kp_str name, const char **message);
int16_t kafka_cluster_producer_id(struct kafka_slot *s, struct metadata_node *mn, int64_t *id,
                                  int16_t *epoch);
enum net_verdict kafka_handle_allocate_producer_ids(struct kafka_slot *s);
enum net_verdict kafka_handle_find_coordinator(struct kafka_slot *s);
/* Groups in a cluster (group_cluster.c KGC1-KGC4); on a single broker each is a no-op.
 * The check a group request passes (NONE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
 * COORDINATOR_NOT_AVAILABLE); a group name that cannot be one answers NONE (the handler's). */
#define KAFKA_COORDINATOR_HOST_MAX                                                                 \
    272 /* a registered host's bytes (MI_HOST_BYTES_MAX) + 1, rounded */
int16_t kafka_group_coordinator_check(const struct kafka_server *srv, struct kp_str group);
/* FindCoordinator of a group in a cluster: false on a single broker (answer this node), else
 * the coordinator's node, host and port, or *err COORDINATOR_NOT_AVAILABLE. */
bool kafka_group_coordinator_find(struct kafka_slot *s, struct kp_str key, int16_t *err,
                                  int32_t *node, struct kp_str *host, int32_t *port);
/* metadata_node.h MN7's hook (ctx: the server; the agent thread). */
bool kafka_group_partition_role(void *ctx, uint32_t partition, bool lead);
/* KGC4: parks an OffsetCommit's answer until its commit is on the ISR; done(ctx, replication
 * error) runs on the replica thread. 0 when parked; else the answer is given now (a single
 * broker: -1; -ENOMEM, -ESHUTDOWN). */
int kafka_group_commit_wait(struct kafka_server *srv, struct kp_str group,
                            void (*done)(void *ctx, int16_t error), void *ctx);
/* KGC4: the OffsetCommit answer for a replication outcome. */
int16_t kafka_group_commit_error(int16_t replication_error);
enum net_verdict kafka_handle_init_producer_id(struct kafka_slot *s);
enum net_verdict kafka_handle_describe_configs(struct kafka_slot *s);
enum net_verdict kafka_handle_create_topics(struct kafka_slot *s);
enum net_verdict kafka_handle_delete_topics(struct kafka_slot *s);
enum net_verdict kafka_handle_alter_configs(struct kafka_slot *s);
enum net_verdict kafka_handle_create_partitions(struct kafka_slot *s);
enum net_verdict kafka_handle_delete_records(struct kafka_slot *s);
enum net_verdict kafka_handle_incremental_alter_configs(struct kafka_slot *s);
/* ACLs (handle_acl.c). */
enum net_verdict kafka_handle_describe_acls(struct kafka_slot *s);
enum net_verdict kafka_handle_create_acls(struct kafka_slot *s);
enum net_verdict kafka_handle_delete_acls(struct kafka_slot *s);
enum net_verdict kafka_handle_produce(struct kafka_slot *s);
/* True when the decoded Produce names a topic that does not exist and auto-creation may create
 * it: its handler will wait for the disk, so the server runs it off the loop (server.c KS4). */
bool kafka_produce_creates_topic(struct kafka_slot *s);
enum net_verdict kafka_handle_list_offsets(struct kafka_slot *s);
/* Fetch: first call and retries of a parked one (expired: answer with what there is). */
enum net_verdict kafka_handle_fetch(struct kafka_slot *s, bool retry, bool expired);

/* Consumer groups (handle_group.c): JoinGroup and a follower's SyncGroup park; their retries
 * go to kafka_handle_group_retry. */
enum net_verdict kafka_handle_join_group(struct kafka_slot *s);
enum net_verdict kafka_handle_sync_group(struct kafka_slot *s);
enum net_verdict kafka_handle_heartbeat(struct kafka_slot *s);
enum net_verdict kafka_handle_leave_group(struct kafka_slot *s);
enum net_verdict kafka_handle_list_groups(struct kafka_slot *s, size_t body_at); /* KH6 */
enum net_verdict kafka_handle_describe_groups(struct kafka_slot *s);
enum net_verdict kafka_handle_group_retry(struct kafka_slot *s, bool expired);
enum net_verdict kafka_handle_delete_groups(struct kafka_slot *s);
enum net_verdict kafka_handle_offset_delete(struct kafka_slot *s);
/* SASL (handle_sasl.c): the two SASL APIs, the SCRAM credential APIs, and what server.c asks of
 * a connection's SASL state. */
enum net_verdict kafka_handle_sasl_handshake(struct kafka_slot *s);
enum net_verdict kafka_handle_sasl_authenticate(struct kafka_slot *s);
enum net_verdict kafka_handle_describe_user_scram_credentials(struct kafka_slot *s);
enum net_verdict kafka_handle_alter_user_scram_credentials(struct kafka_slot *s);
/* True when the connection's next frame is a raw SASL token (after SaslHandshake v0, KSA2). */
bool kafka_sasl_raw_pending(const struct kafka_session *ks);
/* Answers a raw SASL token frame (the whole frame is the token, no Kafka header). */
enum net_verdict kafka_sasl_raw_token(struct kafka_slot *s);
/* The gate (KSA1): may a request of `api_key` be answered on this session now? False with *why
 * when it must close the connection instead. */
bool kafka_sasl_allows(const struct kafka_session *ks, int16_t api_key, int64_t now_ms,
                       const char **why);
/* A delayed failure's retry (KSA3): parks again until expired, then answers (or closes). */
enum net_verdict kafka_sasl_retry(struct kafka_slot *s, bool expired);
/* Frees the session's SASL state (server.c's session_close). */
void kafka_sasl_free(struct kafka_session *ks);
/* Restores the groups persisted in the engine into srv->groups and makes the coordinator
 * persist them from here on (group_coord.c KG10). 0, -ENOMEM or an engine error. */
int kafka_groups_open(struct kafka_server *srv);

/* A Fetch v0-3 partition's generated slice (handle_fetch.c KF9): net_slice_fill_fn. */
void kafka_downconvert_fill(void *part, uint8_t *dst, size_t len);

/* Makes room for `n` record slices (clamped to KAFKA_HOLES_MAX) before a fetch response is
 * begun. 0 or -ENOMEM. */
int kafka_holes_reserve(struct kafka_slot *s, uint64_t n);

/* A request body decoder: reads the body from r, its arrays into a (KP_E_LIMIT when they do not
 * fit). */
typedef int (*kafka_body_decode_fn)(struct kp_reader *r, struct kp_arena *a, void *ctx);

/* Runs `decode` over the request's body (frame bytes from body_at) with the slot's arena,
 * growing it (doubling, up to KAFKA_ARENA_MAX_BYTES) and decoding again when the arrays did not
 * fit (KS2). Returns decode's result, or -ENOMEM. Every handler that decodes its own body uses
 * it. */
int kafka_slot_decode(struct kafka_slot *s, size_t body_at, kafka_body_decode_fn decode, void *ctx);
/* Starts the response frame (size + header) in the slot's writer. */
void kafka_response_begin(struct kafka_slot *s);
/* Ends the frame and points the net request at it (holes become slices). NET_DONE, or
 * NET_CLOSE when the writer failed (logged). */
enum net_verdict kafka_response_end(struct kafka_slot *s);

/* Makes the response arena hold at least `bytes` (call before the first kafka_alloc of a
 * response: it may move the arena). 0 or -ENOMEM. */
int kafka_resp_reserve(struct kafka_slot *s, size_t bytes);
/* Response arena memory (count elements, zeroed, 8-aligned); NULL for count 0 or when full. */
void *kafka_alloc(struct kafka_slot *s, size_t count, size_t elem_size);
/* A NUL-terminated copy of a topic name into `out` (RT_TOPIC_NAME_MAX + 1 bytes). False when
 * the name is null, empty or too long (INVALID_TOPIC_EXCEPTION). */
bool kafka_topic_name(struct kp_str name, char *out);
/* Copies a C string into the arena as a kp_str (the engine's names outlive nothing here). */
struct kp_str kafka_str_dup(struct kafka_slot *s, const char *c);
/* Makes sure the topic exists, creating it when auto.create.topics.enable (and `allow`), within
 * the request's and the connection's auto-creation bounds (auto_create_max_per_request).
 * 0, or an RT_E_* code: RT_E_UNKNOWN_TOPIC_OR_PARTITION when it does not exist and may not be
 * created (now); a creation the engine refused is logged (with its cause, at most once per
 * 10 s and cause) and answered by its code, an OS error (-ENOSPC, -EIO, ...) as RT_E_IO_FAILED
 * (KAFKA_STORAGE_ERROR), a limit (RT_E_TOPICS_FULL) as itself (POLICY_VIOLATION). */
int kafka_topic_ensure(struct kafka_slot *s, const char *topic, bool allow,
                       uint32_t *partitions_out);
/* autocreate.c AC1: in a cluster, `topic` (not in the image) created by the active controller
 * (here or forwarded; may wait for it: off the loop only). LEADER_NOT_AVAILABLE once asked (or
 * when the budget defers it), else the creation's error. */
/* KCL4: the topic's partition count as the broker knows it: the metadata image's in a cluster,
 * the engine's (rt_topic_describe) otherwise. 0, or RT_E_UNKNOWN_TOPIC_OR_PARTITION. */
int kafka_topic_partitions(struct kafka_server *srv, const char *name, uint32_t *parts);
int16_t kafka_cluster_auto_create(struct kafka_slot *s, struct metadata_node *mn,
                                  const char *topic);
/* The broker's log: one line "ringtail serve: ..." on stderr (at most 511 characters). */
void kafka_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in nanoseconds (request latency in --metrics). */
uint64_t kafka_now_ns(void);
/* Counts an error code answered for the slot's API. */
void kafka_count_error(struct kafka_slot *s, int16_t code);

#endif /* RT_KAFKA_HANDLE_H */
