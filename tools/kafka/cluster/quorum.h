/*
 * quorum.h — the cluster's metadata quorum: one replicated log of small records on Canonical's
 * raft library (libraft, Debian's libraft-dev; docs/cluster.md), as Kafka's KRaft
 * `__cluster_metadata` log. The raft leader is the active controller.
 *
 * A quorum runs libraft on a thread of its own with its own libuv loop: libraft is not
 * thread-safe and every call into it must come from that loop (CQ1). Other threads reach it only
 * through quorum_propose (a queue the loop drains on a uv_async wake-up) and the status read by
 * quorum_status (atomics the loop publishes). Committed records are handed to the owner's
 * `apply` callback, on the loop thread, in log order, on every member (CQ2); snapshots and their
 * restore go through the owner's `snapshot` / `restore` callbacks, on the loop thread too.
 *
 * It owns DIR/__cluster_metadata/ (raft's segments, metadata1/2 and snapshot files; raft's own
 * format) and nothing else of the data directory. It never decodes a record: bytes in, bytes out.
 *
 * Invariants:
 *   CQ1 libraft is touched from the quorum's loop thread only (raft_init to raft_close).
 *   CQ2 `apply` sees every committed command once per process life, in index order, with strictly
 *       increasing indexes; after a restart it resumes after the snapshot `restore` delivered, so
 *       restore + the applies that follow rebuild exactly the state of a member that never stopped.
 *   CQ3 A proposal completes exactly once: with its committed index (it was applied on this
 *       member before the completion), or with an error; QUORUM_E_NOT_CONTROLLER when this member
 *       is not the leader at the time it is handed to raft (the record was not appended).
 *   CQ4 The configuration is bootstrapped only into a pristine directory, with every voter of
 *       `voters`; a directory that holds raft state is started from it as it is.
 *   CQ5 Every raft entry this quorum writes is a frame whose length is a multiple of 8: u32
 *       big-endian record length, the record, zeros (libraft's transport needs it, quorum.c).
 *       An entry that is not such a frame is counted (frames_bad) and never reaches `apply`.
 */
#ifndef RT_KAFKA_CLUSTER_QUORUM_H
#define RT_KAFKA_CLUSTER_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUORUM_VOTERS_MAX   16      /* members of the voter set at most */
#define QUORUM_HOST_BYTES   256     /* host part of an address, NUL included */
#define QUORUM_RECORD_MAX   1048576 /* one proposed record at most (bytes) */
#define QUORUM_PENDING_MAX  4096 /* proposals queued for the loop thread at most (QUORUM_E_BUSY) */
#define QUORUM_FRAME_HEADER 4    /* a record's frame in a raft entry: u32 length, CQ5 */
#define QUORUM_DIR_NAME     "__cluster_metadata" /* under the data directory, as KRaft's */

/* Errors (negative; beside -errno values, in a range of their own). */
#define QUORUM_E_NOT_CONTROLLER (-3001) /* this member is not the raft leader (NOT_CONTROLLER) */
#define QUORUM_E_LEADERSHIP_LOST                                                                   \
    (-3002)                       /* appended, but leadership was lost before commit: the
                                            record may or may not be committed */
#define QUORUM_E_SHUTDOWN (-3003) /* the quorum is stopping */
#define QUORUM_E_TIMEOUT  (-3004) /* quorum_propose_wait's deadline passed (outcome unknown) */
#define QUORUM_E_BUSY     (-3005) /* QUORUM_PENDING_MAX proposals queued already */
#define QUORUM_E_INVALID  (-3006) /* bad options or voters list (detail in the message) */
#define QUORUM_E_RAFT     (-3007) /* libraft refused (its message is kept, quorum_errmsg) */
const char *quorum_strerror(int rc);

/* One voter of `controller.quorum.voters`: ID@HOST:PORT. */
struct quorum_voter {
    int32_t id; /* 1..2^31-1 (raft ids are > 0) */
    char host[QUORUM_HOST_BYTES];
    uint16_t port; /* 1..65535 */
};

/* Parses Kafka's controller.quorum.voters syntax, `1@127.0.0.1:19091,2@h2:19091,...`: 1 to
 * QUORUM_VOTERS_MAX entries, ids unique and > 0, HOST non-empty (a name, an IPv4 address, or an
 * IPv6 address in brackets), PORT 1..65535, addresses unique, no spaces. `text` need not be NUL
 * terminated. 0, or QUORUM_E_INVALID with a message naming the first bad entry in err. */
int quorum_voters_parse(const char *text, size_t len, struct quorum_voter *out, int *count,
                        char *err, size_t err_len);
/* "HOST:PORT" of a voter (raft's address), into buf. */
void quorum_voter_address(const struct quorum_voter *v, char *buf, size_t len);

struct quorum;

/* What the owner gives a quorum. Callbacks run on the quorum's loop thread, one at a time. */
struct quorum_options {
    const char *data_dir;          /* the broker's data directory; raft's files go under
                              DATA_DIR/__cluster_metadata/ (created) */
    int32_t node_id;               /* this member's id, one of the voters' */
    const char *listen;            /* HOST:PORT to bind (NULL: this voter's address in `voters`) */
    const char *voters;            /* controller.quorum.voters */
    unsigned election_timeout_ms;  /* 0: 1000 (randomised 1x..2x by raft) */
    unsigned heartbeat_timeout_ms; /* 0: 100 */
    unsigned snapshot_threshold;   /* entries between snapshots; 0: 1024 */
    unsigned snapshot_trailing;    /* entries kept after a snapshot; 0: 128 */
    void *ctx;
    /* A committed record, in log order (CQ2). Must not fail: a record the owner finds bad is
     * its own business to count and skip; every member sees the same bytes. */
    void (*apply)(void *ctx, uint64_t index, const void *rec, size_t len);
    /* The state as of the last applied record, into a malloc'ed buffer. 0 or -errno. */
    int (*snapshot)(void *ctx, void **buf, size_t *len);
    /* Replace the state by a snapshot's bytes (which the owner validates). 0, or a negative
     * value: raft then refuses the snapshot (a start fails; an InstallSnapshot is retried). */
    int (*restore)(void *ctx, const void *buf, size_t len);
    /* Optional: the known leader or this member's role changed (leader_id 0: none known). */
    void (*on_leader)(void *ctx, int32_t leader_id, bool is_leader, uint64_t term);
};

/* Starts a member: parses and checks the options (the voters list, node_id one of them),
 * bootstraps a pristine directory (CQ4), and starts the loop thread. 0 and *out, or
 * QUORUM_E_INVALID / QUORUM_E_RAFT / -errno with a message in err. */
int quorum_start(const struct quorum_options *o, struct quorum **out, char *err, size_t err_len);
/* Stops the loop thread (pending proposals complete with QUORUM_E_SHUTDOWN) and frees q. No
 * callback runs once it returns. NULL is a no-op. */
void quorum_stop(struct quorum *q);

/* Hands a record to the loop thread (copied; any thread). `done` runs once on the loop thread
 * (CQ3) with the committed index or an error; it may be NULL. 0, or QUORUM_E_BUSY /
 * QUORUM_E_SHUTDOWN / QUORUM_E_INVALID (empty or > QUORUM_RECORD_MAX), and then `done` is not
 * called. */
typedef void (*quorum_done_fn)(void *ctx, int status, uint64_t index);
int quorum_propose(struct quorum *q, const void *rec, size_t len, quorum_done_fn done, void *ctx);
/* quorum_propose, waiting up to timeout_ms for the outcome (never from the loop thread, i.e.
 * never from a callback). 0 and *index, or an error. */
int quorum_propose_wait(struct quorum *q, const void *rec, size_t len, int timeout_ms,
                        uint64_t *index);

/* What the loop thread last published (any thread; a few ms stale at most). */
struct quorum_status {
    int32_t node_id;
    int32_t leader_id; /* 0: none known */
    bool is_leader;    /* this member is the active controller */
    uint64_t term;
    uint64_t last_applied; /* raft index of the last record applied here */
    uint64_t commit_index;
    uint64_t snapshots_taken;    /* snapshots written by this member since start */
    uint64_t snapshots_restored; /* restores (at start or by InstallSnapshot) since start */
    uint64_t frames_bad;         /* committed entries that were not record frames (CQ5) */
};
void quorum_status(struct quorum *q, struct quorum_status *st);
/* Asks this member, if it is the leader, to hand leadership to voter `to` (0: the most
 * up-to-date voter, raft's choice) with raft_transfer (TimeoutNow); returns at once. Whether it
 * happened shows in quorum_status. Any thread. */
void quorum_transfer(struct quorum *q, int32_t to);

#endif
