/*
 * txn_cluster.c — the transaction coordinator on a cluster node (`ringtail serve --voters`;
 * issue 25 item 1): which node coordinates every transactional id (the metadata image's leader
 * of `__transaction_state`-0), the check every transactional request passes on a cluster node,
 * the wait that holds a transactional answer until the coordinator's record is on the ISR, the
 * wait that holds a marker until its decision is on the ISR (format.md G.8 MW2), and the
 * broker's side of `__transaction_state`-0's role change (the hook the agent thread calls,
 * metadata_node.h MN11): the engine's rt_partition_become_leader / rt_partition_resign
 * (format.md G.7). Modelled on group_cluster.c. On a single broker every check answers "this
 * node" and nothing else runs, so its answers stay what they were. It never writes to
 * `__transaction_state` itself (the engine's transactional calls do), never replicates it (the
 * replica fetcher does, like any partition) and never blocks a loop thread (answers are parked
 * with the replica side, replica_state.h RS5; only KTC5 blocks, on the engine's thread, which
 * MW5 allows).
 *
 * Invariants:
 *   KTC1  The coordinator of every transactional id is the image's leader of
 *         `__transaction_state`-0 (Kafka's partitionFor over one partition). FindCoordinator key
 *         type 1 answers that leader's registered listener from every node, and
 *         COORDINATOR_NOT_AVAILABLE (15) while the topic does not exist yet (metadata_node.h
 *         MN10) or the partition has no unfenced leader.
 *   KTC2  On a cluster node InitProducerId (with a transactional id), AddPartitionsToTxn,
 *         AddOffsetsToTxn and EndTxn are served only when the image names this node the leader of
 *         `__transaction_state`-0 and the engine leads it (KTC3's gain finished, after the leader
 *         side set its epoch: rs_check); otherwise NOT_COORDINATOR (16) when another node leads
 *         it or none does, COORDINATOR_LOAD_IN_PROGRESS (14) while this node, named leader, still
 *         loads it, COORDINATOR_NOT_AVAILABLE (15) before the topic exists. TxnOffsetCommit goes
 *         to the group's coordinator (group_cluster.c KGC2), not here.
 *   KTC3  Losing the partition (or the image not having it, or naming this node leader only in a
 *         stale image): the role is marked following before the engine resigns (no request is
 *         served from then on), then rt_partition_resign, after which every transactional call
 *         answers RT_E_NOT_COORDINATOR. Gaining it: only once the leader side has set the
 *         image's leader epoch of `__transaction_state`-0 (rs_check NONE; the leader epochs of
 *         the data partitions this node leads were set before, MN11; a node named leader before
 *         it ever resigned resigns once first: the engine makes the partition only then), the
 *         engine rebuilds the coordinator (rt_partition_become_leader: replay, reconciliation, decided transactions
 *         completed, open ones fenced and aborted, G.7 CM1-CM6), and only then is it marked led.
 *   KTC4  acks=all for the coordinator: a transactional answer that follows a successful engine
 *         call is sent only once the high watermark of `__transaction_state`-0 has reached the
 *         leader's log end read after that call returned (replica_state.h RS7), with an ISR of
 *         at least the topic's min.insync.replicas; else, as Kafka's TransactionStateManager
 *         maps a failed append: NOT_COORDINATOR when the leadership went,
 *         COORDINATOR_NOT_AVAILABLE after KTC_ANSWER_TIMEOUT_MS or with a smaller ISR. Parked,
 *         never waited for on a loop thread.
 *   KTC5  format.md G.8 MW2: a marker is handed on (written locally or sent) only once the high
 *         watermark of `__transaction_state`-0 has reached its log end as of the writer's call, so
 *         the decision the marker carries is on the ISR before any reader can see the marker;
 *         otherwise the writer fails (RT_E_NOT_COORDINATOR) and the engine retries (MW3). The
 *         wait blocks the engine's thread (MW5) for at most KTC_DECISION_WAIT_MS; after a wait
 *         that timed out, those within KTC_DECISION_BACKOFF_MS fail at once, so a rebuild with
 *         many decisions (run on the agent thread, KTC3) is not held for each of them.
 */
#include "tools/kafka/handlers/txn_cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/cluster/replica_state.h"

#define TXN_STATE_TOPIC         METADATA_TXN_STATE_TOPIC
#define KTC_ANSWER_TIMEOUT_MS   5000 /* Kafka's request.timeout.ms for the coordinator's append */
#define KTC_DECISION_WAIT_MS    5000
#define KTC_DECISION_BACKOFF_MS 1000

enum { ROLE_UNKNOWN = 0, ROLE_LEADING = 1, ROLE_FOLLOWING = 2 };

/* What the image says of `__transaction_state`-0. */
struct txn_look {
    bool exists;
    int32_t leader;
    bool live; /* the leader is registered and unfenced */
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
};

static void look(void *ctx, const struct metadata_image *img)
{
    struct txn_look *lk = ctx;
    const struct mi_topic *t = metadata_image_topic(img, TXN_STATE_TOPIC);
    if (!t || t->partitions_count < 1 || !t->partitions[0].exists)
        return;
    lk->exists = true;
    lk->leader = t->partitions[0].leader;
    const struct mi_broker *b = lk->leader >= 0 ? metadata_image_broker(img, lk->leader) : NULL;
    if (b && !b->fenced) {
        lk->live = true;
        memcpy(lk->host, b->host, sizeof lk->host);
        lk->port = b->port;
    }
}

int16_t kafka_txn_coordinator_check(const struct kafka_server *srv)
{
    struct metadata_node *mn = kafka_cluster(srv);
    if (!mn)
        return KAFKA_NONE; /* a single broker coordinates every id */
    struct txn_look lk = {.leader = -1};
    metadata_node_read(mn, look, &lk);
    if (!lk.exists)
        return KAFKA_COORDINATOR_NOT_AVAILABLE; /* KTC2 */
    if (lk.leader != srv->opts.broker_id)
        return KAFKA_NOT_COORDINATOR;
    if (atomic_load(&((struct kafka_server *)srv)->txn_role) != ROLE_LEADING)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
    struct replica_state *rs = kafka_replicas(srv);
    if (rs && rs_check(rs, TXN_STATE_TOPIC, 0, -1, NULL, NULL) != KAFKA_NONE)
        return KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
    return KAFKA_NONE;
}

bool kafka_txn_coordinator_find(struct kafka_slot *s, int16_t *err, int32_t *node,
                                struct kp_str *host, int32_t *port)
{
    struct metadata_node *mn = kafka_cluster(s->server);
    if (!mn)
        return false; /* a single broker answers itself */
    struct txn_look lk = {.leader = -1};
    metadata_node_read(mn, look, &lk);
    if (!lk.exists || !lk.live) { /* KTC1 */
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

/* ---- KTC3: the partition's role ---- */

bool kafka_txn_state_role(void *ctx, bool lead)
{
    struct kafka_server *srv = ctx;
    _Atomic int *role = &srv->txn_role;
    if (lead) {
        if (atomic_load(role) == ROLE_LEADING)
            return true;
        struct replica_state *rs = kafka_replicas(srv);
        if (rs && rs_check(rs, TXN_STATE_TOPIC, 0, -1, NULL, NULL) != KAFKA_NONE) {
            /* KTC3: the engine makes the partition only when its coordinator first runs, and
             * the leader side cannot set the epoch of a partition the engine lacks: a node
             * named leader before it ever resigned resigns once (which makes it), so the
             * leader side sets the epoch and the next tick becomes leader. */
            if (atomic_load(role) == ROLE_UNKNOWN)
                (void)kafka_txn_state_role(ctx, false);
            return false; /* KTC3: the leader side sets the epoch first; the next tick */
        }
        int rc = rt_partition_become_leader(srv->engine, TXN_STATE_TOPIC, 0);
        if (rc) {
            fprintf(stderr, "ringtail serve: transactions: loading %s-0: %s (%s)\n",
                    TXN_STATE_TOPIC, rt_strerror(rc), rt_error_detail());
            return false;
        }
        atomic_store(role, ROLE_LEADING); /* KTC3: served from here on */
        fprintf(stderr, "ringtail serve: transactions: coordinator (leader of %s-0)\n",
                TXN_STATE_TOPIC);
        return true;
    }
    if (atomic_load(role) == ROLE_FOLLOWING)
        return true;
    int was = atomic_exchange(role, ROLE_FOLLOWING); /* KTC3: before the engine resigns */
    int rc = rt_partition_resign(srv->engine, TXN_STATE_TOPIC, 0);
    if (rc) {
        fprintf(stderr, "ringtail serve: transactions: resigning %s-0: %s (%s)\n", TXN_STATE_TOPIC,
                rt_strerror(rc), rt_error_detail());
        atomic_store(role, ROLE_UNKNOWN); /* tried again at the next tick */
        return false;
    }
    if (was == ROLE_LEADING)
        fprintf(stderr,
                "ringtail serve: transactions: no longer coordinator (%s-0 led elsewhere)\n",
                TXN_STATE_TOPIC);
    return true;
}

/* ---- KTC4: a transactional answer waits for the ISR ---- */

int16_t kafka_txn_answer_error(int16_t replication_error)
{
    switch (replication_error) { /* KTC4: Kafka's TransactionStateManager mapping */
    case KAFKA_NONE:
        return KAFKA_NONE;
    case KAFKA_NOT_LEADER_OR_FOLLOWER:
        return KAFKA_NOT_COORDINATOR;
    default: /* REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND) */
        return KAFKA_COORDINATOR_NOT_AVAILABLE;
    }
}

static int wait_isr(struct replica_state *rs, int64_t timeout_ms, rs_done_fn done, void *ctx)
{
    unsigned min_isr = 1;
    int16_t c = rs_check(rs, TXN_STATE_TOPIC, 0, -1, NULL, &min_isr);
    if (c != KAFKA_NONE)
        return -ENOENT; /* not the ready leader (any more) */
    return rs_wait(rs, TXN_STATE_TOPIC, 0, -1, rs_now_ms() + timeout_ms, min_isr, done, ctx);
}

int kafka_txn_answer_wait(struct kafka_server *srv, void (*done)(void *ctx, int16_t error),
                          void *ctx)
{
    struct replica_state *rs = kafka_replicas(srv);
    if (!rs)
        return -1; /* a single broker: the local record is the answer */
    int rc = wait_isr(rs, KTC_ANSWER_TIMEOUT_MS, done, ctx);
    if (rc == -ENOENT) {
        done(ctx, KAFKA_NOT_LEADER_OR_FOLLOWER); /* the leadership went meanwhile */
        return 0;
    }
    return rc;
}

/* ---- KTC5: a marker waits for its decision on the ISR (MW2) ---- */

static _Atomic int64_t decision_timed_out_ms = -1; /* KTC5's backoff */

int kafka_txn_decision_replicated(struct metadata_node *mn)
{
    struct replica_state *rs = mn ? metadata_node_replicas(mn) : NULL;
    if (!rs)
        return RT_E_NOT_COORDINATOR; /* not serving yet: retried (MW3) */
    int64_t last = atomic_load(&decision_timed_out_ms);
    if (last >= 0 && rs_now_ms() - last < KTC_DECISION_BACKOFF_MS)
        return RT_E_NOT_COORDINATOR;
    unsigned min_isr = 1;
    int16_t error = KAFKA_NONE;
    int rc = rs_check(rs, TXN_STATE_TOPIC, 0, -1, NULL, &min_isr) != KAFKA_NONE
                 ? -ENOENT /* not the ready leader (any more) */
                 : rs_wait_blocking(rs, TXN_STATE_TOPIC, 0, -1, rs_now_ms() + KTC_DECISION_WAIT_MS,
                                    min_isr, &error);
    static _Atomic int last_logged = -1;
    if (rc == 0 && error == KAFKA_NONE) {
        atomic_store(&last_logged, -1);
        return 0;
    }
    int16_t why = rc == 0 ? error : KAFKA_NOT_LEADER_OR_FOLLOWER;
    if (why != KAFKA_NOT_LEADER_OR_FOLLOWER)
        atomic_store(&decision_timed_out_ms, rs_now_ms());
    if (atomic_exchange(&last_logged, (int)why) != why)
        fprintf(stderr,
                "ringtail serve: transactions: a marker waits: its decision is not on the ISR "
                "of %s-0 (%s); retried (format.md G.8 MW2)\n",
                TXN_STATE_TOPIC, kafka_error_name(why));
    return RT_E_NOT_COORDINATOR;
}
