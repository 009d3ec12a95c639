/*
 * metadata_node.c — the cluster member beside a broker (metadata_node.h): the quorum's callbacks
 * apply, snapshot and restore the node's metadata image under one mutex (they run on the
 * quorum's loop thread; every other reader takes the mutex too), and leader changes become one
 * line on stderr each. The agent thread runs the broker's lifecycle (registration, heartbeats,
 * local partitions: MN2, local deletions: MN4, producer-id blocks: PB2) and the active
 * controller's periodic duty (fencing: MN1); the controller's answers (register, heartbeat,
 * create topic: MN3, producer-id blocks: PB1, a shutdown heartbeat: MN5) run on the caller's
 * thread; a controlled shutdown's wait (MN5) on cmd_serve's.
 */
#include "tools/kafka/cluster/metadata_node.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "tools/kafka/cluster/broker_sessions.h"
#include "tools/kafka/cluster/alter_partition.h"
#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/cluster/producer_id_blocks.h"
#include "tools/kafka/cluster/replica_state.h"
#include "tools/kafka/cluster/replica_fetcher.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#define KAFKA_DUPLICATE_BROKER_REGISTRATION 101 /* Kafka's code (not in api.h's enum) */
#define PROPOSE_WAIT_MS                     10000
#define PEER_TIMEOUT_MS                     2000
#define REPROPOSE_MS                        1000 /* a fence/unfence in flight is not repeated */
#define SHUTDOWN_NO_CONTROLLER_MS           2500 /* MN5: no other controller this long: stop */

struct metadata_node {
    pthread_mutex_t mu; /* the image, dirty, stop */
    pthread_cond_t cv;  /* the agent's wake-up */
    struct metadata_image img;
    struct quorum *q;
    int32_t node_id;
    bool dirty; /* partitions changed: the agent checks local partitions (MN2) */
    bool stop;
    /* the broker side (agent thread only after metadata_node_run) */
    rt_engine *engine;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
    uint8_t incarnation[16];
    unsigned session_ms;
    int64_t my_epoch; /* this incarnation's registration (0: not registered) */
    pthread_t agent;
    bool agent_started;
    struct replica_state *_Atomic rs; /* the leader side of replication (replica_state.h) */
    atomic_bool caught_up;            /* MN9: current once; never cleared */
    int32_t logged_controller;
    int last_peer_error;
    int last_local_error;
    char dir[4096];
    struct replica_fetcher *replicas; /* the follower side (replica_fetcher.h) */
    /* the controller side */
    pthread_mutex_t ctl_mu;          /* taken before mu when both are held, never after it */
    struct broker_sessions sessions; /* under ctl_mu (MN1, broker_sessions.h) */
    /* the controller's other duties (under mu): producer-id blocks applied (PB1), topics deleted
     * by the log that the agent deletes locally (MN4), controlled shutdown (MN5) */
    struct pid_grants grants;
    char (*deleted)[MI_TOPIC_NAME_MAX + 1];
    unsigned deleted_n, deleted_cap;
    bool kick;          /* the agent runs its tick now */
    bool shutting_down; /* metadata_node_shutdown: heartbeats ask to shut down */
    bool shutdown_ok;   /* the controller answered should_shut_down */
    pthread_cond_t done_cv;
    /* groups in the cluster (MN7, MN8): the voters' count (the offsets topic's replication
     * factor is min(3, it)) and the broker's group-role hook (agent thread) */
    unsigned voters_n;
    metadata_node_group_role_fn _Atomic group_role;
    void *_Atomic group_role_ctx;
    bool offsets_create_logged;
    /* the transaction coordinator in the cluster (MN10, MN11): the broker's txn-role hook */
    metadata_node_txn_role_fn _Atomic txn_role;
    void *_Atomic txn_role_ctx;
    bool txn_create_logged;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What the controller's other duties need of a record (under mu): the name of a topic about
 * to be deleted (MN4), the block a PRODUCER_IDS record grants (PB1). */
struct apply_note {
    struct mi_record r;
    bool decoded;
    int64_t pids_before;
    char name[MI_TOPIC_NAME_MAX + 1];
};

static void note_before(struct metadata_node *n, const void *rec, size_t len, struct apply_note *an)
{
    char err[64];
    an->decoded = mi_record_decode(rec, len, &an->r, err, sizeof err) == 0;
    an->pids_before = n->img.next_producer_id;
    an->name[0] = '\0';
    if (!an->decoded || an->r.type != MI_DELETE_TOPIC)
        return;
    for (unsigned i = 0; i < n->img.topics_count; i++)
        if (memcmp(n->img.topics[i]->id, an->r.del.topic_id, 16) == 0)
            memcpy(an->name, n->img.topics[i]->name, sizeof an->name);
}

static void note_after(struct metadata_node *n, uint64_t index, const struct apply_note *an)
{
    if (an->r.type == MI_PRODUCER_IDS)
        pid_grants_note(&n->grants, index, an->r.pids.broker_id, an->pids_before,
                        an->r.pids.next_producer_id);
    if (an->r.type == MI_DELETE_TOPIC && an->name[0]) { /* MN4: the agent deletes it locally */
        if (n->deleted_n == n->deleted_cap) {
            unsigned cap = n->deleted_cap ? 2 * n->deleted_cap : 8;
            void *nd = realloc(n->deleted, cap * sizeof(*n->deleted));
            if (!nd)
                return; /* the local topic stays: said at MN4 */
            n->deleted = nd;
            n->deleted_cap = cap;
        }
        memcpy(n->deleted[n->deleted_n++], an->name, sizeof an->name);
        n->dirty = true;
        pthread_cond_signal(&n->cv);
    }
}

static void node_apply(void *ctx, uint64_t index, const void *rec, size_t len)
{
    struct metadata_node *n = ctx;
    pthread_mutex_lock(&n->mu);
    struct apply_note an;
    note_before(n, rec, len, &an);
    int rc = metadata_image_apply(&n->img, index, rec, len);
    if (rc == 0 && an.decoded)
        note_after(n, index, &an);
    if (rc == 0 && len > 0 &&
        (((const uint8_t *)rec)[0] == MI_PARTITION || ((const uint8_t *)rec)[0] == MI_CONFIG ||
         ((const uint8_t *)rec)[0] == MI_TOPIC || ((const uint8_t *)rec)[0] == MI_BATCH)) {
        /* MN2: the agent makes the local partitions (and MN6 the configs), not this thread */
        n->dirty = true;
        pthread_cond_signal(&n->cv);
    }
    pthread_mutex_unlock(&n->mu);
    if (rc == -ENOMEM) { /* MI1 would not hold on this node any more: stop rather than diverge */
        fprintf(stderr, "ringtail serve: controller: out of memory applying record %llu\n",
                (unsigned long long)index);
        abort();
    }
}

static int node_snapshot(void *ctx, void **buf, size_t *len)
{
    struct metadata_node *n = ctx;
    pthread_mutex_lock(&n->mu);
    int rc = metadata_image_snapshot(&n->img, buf, len);
    pthread_mutex_unlock(&n->mu);
    return rc;
}

static int node_restore(void *ctx, const void *buf, size_t len)
{
    struct metadata_node *n = ctx;
    char err[256] = "";
    pthread_mutex_lock(&n->mu);
    int rc = metadata_image_restore(&n->img, buf, len, err, sizeof(err));
    if (rc == 0) {
        n->dirty = true;
        pthread_cond_signal(&n->cv);
    }
    pthread_mutex_unlock(&n->mu);
    if (rc)
        fprintf(stderr, "ringtail serve: controller: metadata snapshot refused: %s\n",
                rc == MI_E_CORRUPT ? err : "out of memory");
    return rc;
}

static void node_on_leader(void *ctx, int32_t leader_id, bool is_leader, uint64_t term)
{
    struct metadata_node *n = ctx;
    if (is_leader)
        fprintf(stderr,
                "ringtail serve: controller: node %d (this node) is the leader, term %llu\n",
                (int)n->node_id, (unsigned long long)term);
    else if (leader_id > 0)
        fprintf(stderr, "ringtail serve: controller: node %d is the leader, term %llu\n",
                (int)leader_id, (unsigned long long)term);
    else
        fprintf(stderr, "ringtail serve: controller: no leader known, term %llu\n",
                (unsigned long long)term);
}

int metadata_node_start(const char *dir, int32_t node_id, const char *listen, const char *voters,
                        struct metadata_node **out, char *err, size_t err_len)
{
    *out = NULL;
    struct metadata_node *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    pthread_mutex_init(&n->ctl_mu, NULL);
    pthread_cond_init(&n->done_cv, NULL);
    metadata_image_init(&n->img);
    n->node_id = node_id;
    snprintf(n->dir, sizeof n->dir, "%s", dir);
    struct quorum_options o = {
        .data_dir = dir,
        .node_id = node_id,
        .listen = listen,
        .voters = voters,
        .ctx = n,
        .apply = node_apply,
        .snapshot = node_snapshot,
        .restore = node_restore,
        .on_leader = node_on_leader,
    };
    int rc = quorum_start(&o, &n->q, err, err_len);
    struct quorum_voter *vs = rc ? NULL : calloc(QUORUM_VOTERS_MAX, sizeof(*vs));
    int vn = 0;
    char verr[256];
    if (vs && quorum_voters_parse(voters, strlen(voters), vs, &vn, verr, sizeof verr) == 0)
        n->voters_n = (unsigned)vn; /* MN8 */
    free(vs);
    if (rc) {
        metadata_image_free(&n->img);
        pthread_mutex_destroy(&n->mu);
        pthread_cond_destroy(&n->cv);
        pthread_mutex_destroy(&n->ctl_mu);
        pthread_cond_destroy(&n->done_cv);
        free(n);
        return rc;
    }
    *out = n;
    return 0;
}

void metadata_node_halt(struct metadata_node *n)
{
    if (!n || !n->agent_started)
        return;
    struct replica_state *rs = atomic_exchange(&n->rs, NULL);
    replica_state_stop(rs); /* it uses the engine and the agent's controller calls */
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->agent, NULL);
    n->agent_started = false;
    replica_fetcher_stop(n->replicas); /* after the agent: nothing updates it any more */
    n->replicas = NULL;
}

void metadata_node_stop(struct metadata_node *n)
{
    if (!n)
        return;
    metadata_node_halt(n);
    quorum_stop(n->q); /* no callback runs after it */
    metadata_image_free(&n->img);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->ctl_mu);
    pthread_cond_destroy(&n->done_cv);
    broker_sessions_free(&n->sessions);
    free(n->deleted);
    free(n);
}

void metadata_node_status(struct metadata_node *n, struct quorum_status *st,
                          uint64_t *records_applied, uint64_t *digest)
{
    quorum_status(n->q, st);
    pthread_mutex_lock(&n->mu);
    *records_applied = n->img.records_applied;
    *digest = metadata_image_digest(&n->img);
    pthread_mutex_unlock(&n->mu);
}

void metadata_node_read(struct metadata_node *n,
                        void (*fn)(void *ctx, const struct metadata_image *img), void *ctx)
{
    pthread_mutex_lock(&n->mu);
    fn(ctx, &n->img);
    pthread_mutex_unlock(&n->mu);
}

/* ---- the controller side ---- */

static int16_t quorum_error(int rc)
{
    return rc == QUORUM_E_NOT_CONTROLLER || rc == QUORUM_E_LEADERSHIP_LOST
               ? KAFKA_NOT_CONTROLLER
               : KAFKA_REQUEST_TIMED_OUT;
}

int16_t metadata_node_register(struct metadata_node *n, int32_t broker_id, const char *host,
                               uint16_t port, const uint8_t incarnation[16], int64_t *epoch)
{
    *epoch = -1;
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (!st.is_leader)
        return KAFKA_NOT_CONTROLLER;
    int64_t now = now_ms();
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *b = metadata_image_broker(&n->img, broker_id);
    bool live = b && !b->fenced;
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_lock(&n->ctl_mu);
    bool accepted = broker_sessions_register(&n->sessions, broker_id, incarnation, live, st.term,
                                             now, n->session_ms);
    pthread_mutex_unlock(&n->ctl_mu);
    if (!accepted) /* BH3: another process, its session alive */
        return KAFKA_DUPLICATE_BROKER_REGISTRATION;
    uint8_t rec[16 + MI_HOST_BYTES_MAX];
    size_t len = mi_encode_register_broker(rec, sizeof rec, broker_id, -1, host, port);
    if (!len)
        return KAFKA_INVALID_REQUEST;
    uint64_t index = 0;
    int rc = quorum_propose_wait(n->q, rec, len, PROPOSE_WAIT_MS, &index);
    if (rc)
        return quorum_error(rc);
    *epoch = (int64_t)index; /* the record's index is the broker epoch (format.md L.2) */
    return KAFKA_NONE;
}

int16_t metadata_node_heartbeat(struct metadata_node *n, int32_t broker_id, int64_t epoch,
                                bool want_fence, bool *is_fenced)
{
    *is_fenced = true;
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (!st.is_leader)
        return KAFKA_NOT_CONTROLLER;
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *b = metadata_image_broker(&n->img, broker_id);
    bool known = b && b->epoch == epoch, fenced = b && b->fenced;
    pthread_mutex_unlock(&n->mu);
    if (!known)
        return KAFKA_STALE_BROKER_EPOCH;
    int64_t now = now_ms();
    pthread_mutex_lock(&n->ctl_mu);
    bool unfence = broker_sessions_heartbeat(&n->sessions, broker_id, fenced && !want_fence,
                                             st.term, now, REPROPOSE_MS);
    pthread_mutex_unlock(&n->ctl_mu);
    if (unfence) {
        uint8_t rec[16];
        size_t len = mi_encode_fence_broker(rec, sizeof rec, broker_id, false);
        (void)quorum_propose(n->q, rec, len, NULL, NULL); /* the next heartbeat sees it */
    }
    *is_fenced = fenced;
    return KAFKA_NONE;
}

struct unfenced {
    int32_t ids[MI_BROKERS_MAX];
    unsigned n;
    bool exists;
    const char *name;
};

static void collect_unfenced(void *ctx, const struct metadata_image *img)
{
    struct unfenced *u = ctx;
    u->exists = metadata_image_topic(img, u->name) != NULL;
    for (unsigned i = 0; i < img->brokers_count; i++) /* sorted by id */
        if (!img->brokers[i].fenced)
            u->ids[u->n++] = img->brokers[i].id;
}

int16_t metadata_node_create_topic(struct metadata_node *n, const char *name, int32_t partitions,
                                   int16_t rf, const char *const *keys, const char *const *values,
                                   unsigned configs_count, bool validate_only, const char **message)
{
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (!st.is_leader) {
        *message = "this node is not the active controller";
        return KAFKA_NOT_CONTROLLER;
    }
    struct unfenced *u = calloc(1, sizeof(*u));
    if (!u)
        return KAFKA_UNKNOWN_SERVER_ERROR;
    u->name = name;
    metadata_node_read(n, collect_unfenced, u);
    int16_t err = KAFKA_NONE;
    if (rf == -1)
        rf = 1; /* default.replication.factor */
    if (u->exists) {
        err = KAFKA_TOPIC_ALREADY_EXISTS;
        *message = "the topic exists";
    } else if (partitions < 1 || partitions > MI_PARTITIONS_MAX) {
        err = KAFKA_INVALID_PARTITIONS;
        *message = "the number of partitions must be 1..100000";
    } else if (rf < 1 || (unsigned)rf > u->n || rf > MI_REPLICAS_MAX) {
        err = KAFKA_INVALID_REPLICATION_FACTOR;
        *message = "the replication factor must be 1..the number of unfenced brokers";
    }
    int32_t *place = err ? NULL : malloc((size_t)partitions * (size_t)rf * sizeof(int32_t));
    if (!err && !place)
        err = KAFKA_UNKNOWN_SERVER_ERROR;
    uint8_t id[16];
    unsigned start = 0, shift = 0;
    if (!err && (getrandom(id, 16, 0) != 16 || getrandom(&start, sizeof start, 0) < 0 ||
                 getrandom(&shift, sizeof shift, 0) < 0))
        err = KAFKA_UNKNOWN_SERVER_ERROR;
    if (!err) { /* MN3; Kafka draws both start index and shift at random */
        id[6] = (uint8_t)((id[6] & 0x0f) | 0x40); /* a version-4 UUID, as Kafka's */
        id[8] = (uint8_t)((id[8] & 0x3f) | 0x80);
        (void)mi_place_replicas(u->ids, u->n, (unsigned)partitions, (unsigned)rf, start, shift,
                                place);
    }
    free(u);
    size_t cap = 128 + 8 * (size_t)MI_REPLICAS_MAX + MI_TOPIC_NAME_MAX;
    for (unsigned i = 0; i < configs_count; i++) /* the TOPIC record carries its configs */
        cap += 8 + strlen(keys[i]) + strlen(values[i]);
    uint8_t *rec = err ? NULL : malloc(cap);
    if (!err && !rec)
        err = KAFKA_UNKNOWN_SERVER_ERROR;
    if (!err && validate_only) { /* checked as a create would be; nothing proposed */
        size_t len = mi_encode_topic(rec, cap, id, name, keys, values, configs_count);
        if (!len) {
            err = KAFKA_INVALID_CONFIG;
            *message = "the topic's name or configs do not fit a TOPIC record";
        }
    }
    /* controller_admin.h CA6: TOPIC then PARTITION 0..n-1 in one BATCH entry (MI9), applied
     * whole or not at all; only past MI_RECORD_BYTES_MAX in several, each whole. */
    struct mi_batch batch = {0};
    for (int32_t p = -1; !err && !validate_only && p <= partitions; p++) {
        int brc = 0;
        if (p < partitions) {
            size_t len;
            if (p < 0)
                len = mi_encode_topic(rec, cap, id, name, keys, values, configs_count);
            else {
                const int32_t *r = &place[(size_t)p * (size_t)rf];
                len =
                    mi_encode_partition(rec, cap, id, p, r, (unsigned)rf, r[0], 0, r, (unsigned)rf);
            }
            if (!len) {
                err = KAFKA_INVALID_CONFIG;
                *message = "the topic's name or configs do not fit a TOPIC record";
                break;
            }
            brc = mi_batch_add(&batch, rec, len);
            if (brc == 0)
                continue;
            if (brc != -E2BIG || batch.count == 0) {
                err = KAFKA_UNKNOWN_SERVER_ERROR;
                break;
            }
        }
        uint64_t index; /* the batch is full (-E2BIG) or the last record is in it */
        int rc = quorum_propose_wait(n->q, batch.buf, batch.len, PROPOSE_WAIT_MS, &index);
        batch.count = 0;
        batch.len = 0;
        if (rc) {
            err = quorum_error(rc);
            *message = "the controller could not commit the topic";
        } else if (brc == -E2BIG) {
            p--; /* the record that did not fit starts the next batch */
        }
    }
    mi_batch_free(&batch);
    free(rec);
    free(place);
    return err;
}

/* Records planned under the image's lock, proposed after it. */
struct planned {
    uint8_t *buf;
    size_t len, cap;
    unsigned count;
};

static void plan_emit(void *ctx, const uint8_t *rec, size_t len)
{
    struct planned *pl = ctx;
    if (pl->cap - pl->len < len + 4) {
        size_t cap = (pl->cap + len + 4) * 2;
        uint8_t *nb = realloc(pl->buf, cap);
        if (!nb)
            return;
        pl->buf = nb;
        pl->cap = cap;
    }
    pl->buf[pl->len] = (uint8_t)(len >> 8);
    pl->buf[pl->len + 1] = (uint8_t)len;
    memcpy(pl->buf + pl->len + 2, rec, len);
    pl->len += len + 2;
    pl->count++;
}

/* Proposes mi_plan_leaders' records (each committed before the next, so the next tick plans
 * from an image that holds them). */
static void move_leaders(struct metadata_node *n, int32_t fenced)
{
    struct planned pl = {0};
    pthread_mutex_lock(&n->mu);
    mi_plan_leaders(&n->img, fenced, plan_emit, &pl);
    pthread_mutex_unlock(&n->mu);
    unsigned moved = 0;
    for (size_t at = 0; at + 2 <= pl.len;) {
        size_t len = (size_t)pl.buf[at] << 8 | pl.buf[at + 1];
        uint64_t index;
        if (quorum_propose_wait(n->q, pl.buf + at + 2, len, PROPOSE_WAIT_MS, &index) != 0)
            break; /* leadership lost, or stopping: the next controller plans again */
        moved++;
        at += len + 2;
    }
    if (moved && fenced >= 0)
        fprintf(stderr,
                "ringtail serve: controller: node %d fenced: %u partitions changed leader or "
                "ISR\n",
                (int)fenced, moved);
    else if (moved)
        fprintf(stderr, "ringtail serve: controller: %u leaderless partitions got a leader\n",
                moved);
    free(pl.buf);
}

/* MN8: the controller creates `__consumer_offsets` once min(3, voters) brokers are unfenced
 * (Kafka's offsets.topic.replication.factor 3, capped at the cluster's size), with the engine's
 * partition count and no config of its own (min.insync.replicas 1, Kafka's broker default). */
struct offsets_scan {
    bool exists;
    unsigned unfenced;
};

static void scan_offsets(void *ctx, const struct metadata_image *img)
{
    struct offsets_scan *os = ctx;
    os->exists = metadata_image_topic(img, METADATA_OFFSETS_TOPIC) != NULL;
    for (unsigned i = 0; i < img->brokers_count; i++)
        os->unfenced += !img->brokers[i].fenced;
}

static void ensure_offsets_topic(struct metadata_node *n)
{
    struct offsets_scan os = {0};
    metadata_node_read(n, scan_offsets, &os);
    unsigned rf = n->voters_n < 3 ? n->voters_n : 3;
    if (os.exists || rf == 0 || os.unfenced < rf)
        return;
    const char *message = "";
    int16_t err = metadata_node_create_topic(n, METADATA_OFFSETS_TOPIC, RT_GROUP_OFFSETS_PARTITIONS,
                                             (int16_t)rf, NULL, NULL, 0, false, &message);
    if (err == KAFKA_NONE || !n->offsets_create_logged)
        fprintf(stderr, "ringtail serve: controller: creating %s (%d partitions, RF %u): %s%s%s\n",
                METADATA_OFFSETS_TOPIC, RT_GROUP_OFFSETS_PARTITIONS, rf, kafka_error_name(err),
                err ? ": " : "", err ? message : "");
    n->offsets_create_logged = err != KAFKA_NONE;
}

/* MN10: the controller creates `__transaction_state` (1 partition, replication factor
 * min(3, voters), min.insync.replicas 2 when that is 3 or more: Kafka's
 * transaction.state.log.replication.factor 3 and transaction.state.log.min.isr 2) once that many
 * brokers are unfenced, as MN8 does `__consumer_offsets`. */
static void scan_txn_state(void *ctx, const struct metadata_image *img)
{
    struct offsets_scan *os = ctx;
    os->exists = metadata_image_topic(img, METADATA_TXN_STATE_TOPIC) != NULL;
    for (unsigned i = 0; i < img->brokers_count; i++)
        os->unfenced += !img->brokers[i].fenced;
}

static void ensure_txn_state_topic(struct metadata_node *n)
{
    struct offsets_scan os = {0};
    metadata_node_read(n, scan_txn_state, &os);
    unsigned rf = n->voters_n < 3 ? n->voters_n : 3;
    if (os.exists || rf == 0 || os.unfenced < rf)
        return;
    const char *keys[] = {"min.insync.replicas"}, *values[] = {"2"};
    const char *message = "";
    int16_t err = metadata_node_create_topic(n, METADATA_TXN_STATE_TOPIC, 1, (int16_t)rf, keys,
                                             values, rf >= 3 ? 1 : 0, false, &message);
    if (err == KAFKA_NONE || !n->txn_create_logged)
        fprintf(stderr, "ringtail serve: controller: creating %s (1 partition, RF %u): %s%s%s\n",
                METADATA_TXN_STATE_TOPIC, rf, kafka_error_name(err), err ? ": " : "",
                err ? message : "");
    n->txn_create_logged = err != KAFKA_NONE;
}

/* The controller's periodic duty (agent thread): register itself (directly), fence the brokers
 * whose sessions expired (MN1). */
static void controller_tick(struct metadata_node *n, const struct quorum_status *st)
{
    int64_t now = now_ms();
    struct fence_job {
        int32_t id;
        bool fence;
    } jobs[65];
    unsigned jobs_n = 0;
    bool self_ok;
    pthread_mutex_lock(&n->ctl_mu); /* ctl_mu before mu, as metadata_node_alter_partition */
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *me = metadata_image_broker(&n->img, n->node_id);
    self_ok = me && n->my_epoch > 0 && me->epoch == n->my_epoch && me->port == n->port &&
              strcmp(me->host, n->host) == 0;
    bool self_fenced = me && me->fenced;
    (void)broker_sessions_register(&n->sessions, n->node_id, n->incarnation, false, st->term, now,
                                   n->session_ms); /* this node is alive */
    int32_t expired[64];
    unsigned expired_n = broker_sessions_expired(&n->sessions, &n->img, n->node_id, st->term, now,
                                                 n->session_ms, REPROPOSE_MS, expired, 64);
    for (unsigned i = 0; i < expired_n; i++)
        jobs[jobs_n++] = (struct fence_job){expired[i], true};
    if (self_ok && self_fenced &&
        broker_sessions_heartbeat(&n->sessions, n->node_id, true, st->term, now, REPROPOSE_MS))
        jobs[jobs_n++] = (struct fence_job){n->node_id, false};
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_unlock(&n->ctl_mu);
    if (!self_ok) {
        uint8_t rec[16 + MI_HOST_BYTES_MAX];
        size_t len = mi_encode_register_broker(rec, sizeof rec, n->node_id, -1, n->host, n->port);
        uint64_t index = 0;
        if (len && quorum_propose_wait(n->q, rec, len, PROPOSE_WAIT_MS, &index) == 0) {
            n->my_epoch = (int64_t)index;
            fprintf(stderr,
                    "ringtail serve: controller: node %d registered itself (%s:%u), broker "
                    "epoch %lld\n",
                    (int)n->node_id, n->host, n->port, (long long)index);
        }
    }
    for (unsigned i = 0; i < jobs_n; i++) {
        uint8_t rec[16];
        size_t len = mi_encode_fence_broker(rec, sizeof rec, jobs[i].id, jobs[i].fence);
        if (jobs[i].fence)
            fprintf(stderr,
                    "ringtail serve: controller: fencing node %d (no heartbeat for %u ms)\n",
                    (int)jobs[i].id, n->session_ms);
        uint64_t index;
        (void)quorum_propose_wait(n->q, rec, len, PROPOSE_WAIT_MS, &index);
    }
    /* Every fenced broker's ISR places and leaderships move (MI6): planned from the image at
     * each tick, so a controller elected after a fence finishes what its predecessor began
     * (a plan with nothing to move emits nothing). Then leaderless partitions get a leader. */
    int32_t fenced[64];
    unsigned fenced_n = 0;
    pthread_mutex_lock(&n->mu);
    for (unsigned i = 0; i < n->img.brokers_count && fenced_n < 64; i++)
        if (n->img.brokers[i].fenced)
            fenced[fenced_n++] = n->img.brokers[i].id;
    pthread_mutex_unlock(&n->mu);
    for (unsigned i = 0; i < fenced_n; i++)
        move_leaders(n, fenced[i]);
    move_leaders(n, -1);
    ensure_offsets_topic(n);   /* MN8 */
    ensure_txn_state_topic(n); /* MN10 */
}

/* ---- for the controller's duties kept in other files (controller_admin.c) ---- */

bool metadata_node_is_controller(struct metadata_node *n)
{
    struct quorum_status st;
    quorum_status(n->q, &st);
    return st.is_leader;
}

int metadata_node_propose_wait(struct metadata_node *n, const void *rec, size_t len,
                               uint64_t *index)
{
    return quorum_propose_wait(n->q, rec, len, PROPOSE_WAIT_MS, index);
}

int16_t metadata_node_kafka_error(int rc)
{
    return quorum_error(rc);
}

bool metadata_node_grant_at(struct metadata_node *n, uint64_t index, int32_t broker, int64_t *first,
                            int64_t *end)
{
    pthread_mutex_lock(&n->mu);
    bool found = pid_grants_find(&n->grants, index, broker, first, end);
    pthread_mutex_unlock(&n->mu);
    return found;
}

void metadata_node_kick(struct metadata_node *n)
{
    pthread_mutex_lock(&n->mu);
    n->kick = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

/* ---- producer-id blocks: the controller's answer (producer_id_blocks.h PB1) ---- */

/* One allocation at a time on this controller: two proposals from the same image would ask for
 * the same block, and the second would be rejected (MI4) — harmless (PB1) but wasted. */
static pthread_mutex_t alloc_mu = PTHREAD_MUTEX_INITIALIZER;

int16_t metadata_node_allocate_producer_ids(struct metadata_node *n, int32_t broker_id,
                                            int64_t broker_epoch, int64_t *start, int32_t *len)
{
    *start = -1;
    *len = 0;
    if (!metadata_node_is_controller(n))
        return KAFKA_NOT_CONTROLLER;
    int16_t err = KAFKA_REQUEST_TIMED_OUT;
    pthread_mutex_lock(&alloc_mu);
    for (int attempt = 0; attempt < 3; attempt++) {
        pthread_mutex_lock(&n->mu);
        const struct mi_broker *b = metadata_image_broker(&n->img, broker_id);
        bool known = b && b->epoch == broker_epoch;
        int64_t next = n->img.next_producer_id;
        pthread_mutex_unlock(&n->mu);
        if (!known) {
            err = KAFKA_STALE_BROKER_EPOCH;
            break;
        }
        if (next > INT64_MAX - PID_BLOCK_SIZE) {
            err = KAFKA_UNKNOWN_SERVER_ERROR; /* the 63-bit space is used up */
            break;
        }
        uint8_t rec[32];
        size_t rlen = mi_encode_producer_ids(rec, sizeof rec, broker_id, next + PID_BLOCK_SIZE);
        uint64_t index = 0;
        int rc = rlen ? quorum_propose_wait(n->q, rec, rlen, PROPOSE_WAIT_MS, &index) : -EINVAL;
        if (rc) {
            err = rlen ? quorum_error(rc) : KAFKA_UNKNOWN_SERVER_ERROR;
            break;
        }
        int64_t first, end;
        if (metadata_node_grant_at(n, index, broker_id, &first, &end)) { /* PB1 */
            *start = first;
            *len = (int32_t)(end - first);
            err = KAFKA_NONE;
            break;
        }
        /* rejected: an earlier record (a previous controller's) moved next_producer_id first */
    }
    pthread_mutex_unlock(&alloc_mu);
    return err;
}

/* ---- controlled shutdown (MN5) ---- */

int16_t metadata_node_heartbeat_shutdown(struct metadata_node *n, int32_t broker_id, int64_t epoch,
                                         bool *is_fenced, bool *should_shut_down)
{
    *is_fenced = true;
    *should_shut_down = false;
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (!st.is_leader)
        return KAFKA_NOT_CONTROLLER;
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *b = metadata_image_broker(&n->img, broker_id);
    bool known = b && b->epoch == epoch, fenced = b && b->fenced;
    unsigned leads = known ? mi_leaderships(&n->img, broker_id) : 0;
    pthread_mutex_unlock(&n->mu);
    if (!known)
        return KAFKA_STALE_BROKER_EPOCH;
    pthread_mutex_lock(&n->ctl_mu); /* its session stays alive: no fence for silence meanwhile */
    (void)broker_sessions_heartbeat(&n->sessions, broker_id, false, st.term, now_ms(),
                                    REPROPOSE_MS);
    pthread_mutex_unlock(&n->ctl_mu);
    if (!fenced && broker_id != n->node_id) {
        uint8_t rec[16];
        size_t len = mi_encode_fence_broker(rec, sizeof rec, broker_id, true);
        if (quorum_propose(n->q, rec, len, NULL, NULL) == 0)
            fprintf(stderr,
                    "ringtail serve: controller: node %d asks to shut down: fencing it, its %u "
                    "leaderships move\n",
                    (int)broker_id, leads);
    }
    if (fenced && leads > 0)
        metadata_node_kick(n); /* the tick moves them (MI6) now, not at the next interval */
    *is_fenced = fenced;
    *should_shut_down = fenced && leads == 0;
    return KAFKA_NONE;
}

/* A live voter to hand the controller role to: the registered unfenced brokers other than this
 * one (every node is a voter, its node id its broker id), in turn by `attempt`; 0 (raft's
 * choice, which may be a dead voter whose log was up to date) when there is none. */
static int32_t transfer_target(struct metadata_node *n, unsigned attempt)
{
    int32_t live[MI_BROKERS_MAX];
    unsigned count = 0;
    pthread_mutex_lock(&n->mu);
    for (unsigned i = 0; i < n->img.brokers_count; i++)
        if (!n->img.brokers[i].fenced && n->img.brokers[i].id != n->node_id)
            live[count++] = n->img.brokers[i].id;
    pthread_mutex_unlock(&n->mu);
    return count ? live[attempt % count] : 0;
}

bool metadata_node_shutdown(struct metadata_node *n, unsigned timeout_ms)
{
    if (!n || !n->agent_started)
        return true;
    int64_t deadline = now_ms() + timeout_ms;
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (st.is_leader && transfer_target(n, 0) == 0) { /* no other live node: nobody to ask */
        fprintf(stderr, "ringtail serve: controller: controlled shutdown: no other live node, "
                        "stopping\n");
        return false;
    }
    if (st.is_leader) { /* a few tries: the voter asked may be dead or lagging */
        fprintf(stderr, "ringtail serve: controller: handing the controller role to another "
                        "voter (raft transfer)\n");
        int64_t give_up = now_ms() + SHUTDOWN_NO_CONTROLLER_MS;
        unsigned tries = 0;
        for (int64_t next_try = 0; st.is_leader && now_ms() < give_up;) {
            if (now_ms() >= next_try) {
                quorum_transfer(n->q, transfer_target(n, tries++));
                next_try = now_ms() + 1000;
            }
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
            quorum_status(n->q, &st);
        }
    }
    pthread_mutex_lock(&n->mu);
    n->shutting_down = true;
    n->kick = true;
    pthread_cond_signal(&n->cv);
    int64_t alone_since = -1; /* no other controller to ask since then */
    while (!n->shutdown_ok && now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&n->done_cv, &n->mu, &ts);
        quorum_status(n->q, &st);
        if (!(st.is_leader || st.leader_id <= 0))
            alone_since = -1;
        else if (alone_since < 0)
            alone_since = now_ms();
        else if (now_ms() - alone_since > SHUTDOWN_NO_CONTROLLER_MS)
            break;
    }
    bool ok = n->shutdown_ok;
    pthread_mutex_unlock(&n->mu);
    if (ok)
        fprintf(stderr, "ringtail serve: controller: controlled shutdown: the controller moved "
                        "every leadership away from this node\n");
    else
        fprintf(stderr,
                "ringtail serve: controller: controlled shutdown not confirmed (%s): stopping "
                "anyway\n",
                now_ms() >= deadline ? "bound reached" : "no other controller to ask");
    return ok;
}

/* ---- the broker side ---- */

static int encode_registration(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_broker_registration_request_encode(w, v, m);
}
static int encode_heartbeat(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_broker_heartbeat_request_encode(w, v, m);
}

static void peer_error(struct metadata_node *n, int32_t controller, const char *what, int rc)
{
    if (rc == n->last_peer_error)
        return; /* one line per change, not one per heartbeat */
    n->last_peer_error = rc;
    fprintf(stderr, "ringtail serve: controller: %s to node %d failed: %s\n", what, (int)controller,
            rc < 0 ? strerror(-rc) : kafka_error_name((int16_t)rc));
}

/* A non-controller's tick: register with the controller, or heartbeat. */
static void broker_tick(struct metadata_node *n, int32_t controller)
{
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port = 0;
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *c = metadata_image_broker(&n->img, controller);
    if (c) {
        memcpy(host, c->host, sizeof host);
        port = c->port;
    }
    pthread_mutex_unlock(&n->mu);
    if (!port)
        return; /* the controller has not registered itself yet */
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    uint8_t arena_buf[1024];
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    pthread_mutex_lock(&n->mu);
    bool stopping = n->shutting_down;
    pthread_mutex_unlock(&n->mu);
    if (n->my_epoch <= 0 && stopping)
        return; /* MN5: a stopping node does not register (it would unfence itself) */
    if (n->my_epoch <= 0) {
        struct kmsg_broker_listener l = {kp_str_of("PLAINTEXT"), kp_str_of(n->host),
                                         (int16_t)n->port, 0};
        struct kmsg_broker_registration_request q = {
            .broker_id = n->node_id,
            .cluster_id = kp_str_of("ringtail"),
            .listeners = &l,
            .listeners_count = 1,
            .rack = {NULL, -1},
        };
        memcpy(q.incarnation_id, n->incarnation, 16);
        int rc = kclient_call(host, port, PEER_TIMEOUT_MS, KAFKA_BROKER_REGISTRATION, 0,
                              encode_registration, &q, &frame, &frame_len, &body_at);
        struct kmsg_broker_registration_response r = {0};
        if (rc == 0) {
            struct kp_reader rd;
            kp_reader_init(&rd, frame + body_at, frame_len - body_at);
            rc = kmsg_broker_registration_response_decode(&rd, 0, &a, &r) ? -EPROTO : 0;
        }
        free(frame);
        if (rc == 0 && r.error_code == KAFKA_NONE && r.broker_epoch > 0) {
            n->my_epoch = r.broker_epoch;
            n->last_peer_error = 0;
            fprintf(stderr,
                    "ringtail serve: controller: node %d registered with controller %d (%s:%u), "
                    "broker epoch %lld\n",
                    (int)n->node_id, (int)controller, n->host, n->port, (long long)r.broker_epoch);
        } else
            peer_error(n, controller, "BrokerRegistration", rc ? rc : r.error_code);
        return;
    }
    bool shutting_down = stopping;
    struct kmsg_broker_heartbeat_request q = {
        .broker_id = n->node_id,
        .broker_epoch = n->my_epoch,
        .current_metadata_offset = 0,
        .want_shut_down = shutting_down, /* MN5 */
    };
    struct quorum_status st;
    quorum_status(n->q, &st);
    q.current_metadata_offset = (int64_t)st.last_applied;
    int rc = kclient_call(host, port, PEER_TIMEOUT_MS, KAFKA_BROKER_HEARTBEAT, 0, encode_heartbeat,
                          &q, &frame, &frame_len, &body_at);
    struct kmsg_broker_heartbeat_response r = {0};
    if (rc == 0) {
        struct kp_reader rd;
        kp_reader_init(&rd, frame + body_at, frame_len - body_at);
        rc = kmsg_broker_heartbeat_response_decode(&rd, 0, &a, &r) ? -EPROTO : 0;
    }
    free(frame);
    if (rc == 0 && r.error_code == KAFKA_NONE) {
        n->last_peer_error = 0;
        if (shutting_down && r.should_shut_down) { /* MN5: no leadership left here */
            pthread_mutex_lock(&n->mu);
            n->shutdown_ok = true;
            pthread_cond_broadcast(&n->done_cv);
            pthread_mutex_unlock(&n->mu);
        }
        return;
    }
    peer_error(n, controller, "BrokerHeartbeat", rc ? rc : r.error_code);
    if (rc == 0 && r.error_code == KAFKA_STALE_BROKER_EPOCH)
        n->my_epoch = 0; /* register again */
}

/* MN4: every topic a DELETE_TOPIC record removed from the image is deleted from the local
 * engine, unless the image names a topic of that name again (a re-creation). */
struct name_in_image {
    const char *name;
    bool found;
};

static void find_name(void *ctx, const struct metadata_image *img)
{
    struct name_in_image *ni = ctx;
    ni->found = metadata_image_topic(img, ni->name) != NULL;
}

static bool delete_local(struct metadata_node *n)
{
    /* Caught up first (a leader known, everything it committed applied here): a node replaying
     * its log at a restart must see a later re-creation of the name before it deletes. */
    struct quorum_status st;
    quorum_status(n->q, &st);
    pthread_mutex_lock(&n->mu);
    bool pending = n->deleted_n > 0;
    pthread_mutex_unlock(&n->mu);
    if (pending && !((st.is_leader || st.leader_id > 0) && st.last_applied >= st.commit_index))
        return false; /* retried at the next tick */
    bool ok = true;
    for (;;) {
        char name[MI_TOPIC_NAME_MAX + 1];
        pthread_mutex_lock(&n->mu);
        bool any = n->deleted_n > 0;
        if (any)
            memcpy(name, n->deleted[--n->deleted_n], sizeof name);
        pthread_mutex_unlock(&n->mu);
        if (!any)
            break;
        struct name_in_image ni = {.name = name};
        metadata_node_read(n, find_name, &ni);
        if (ni.found)
            continue;
        int rc = rt_topic_delete(n->engine, name);
        if (rc == 0)
            fprintf(stderr, "ringtail serve: controller: topic %s deleted (metadata log)\n", name);
        else if (rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION) {
            fprintf(stderr, "ringtail serve: controller: deleting local topic %s: %s\n", name,
                    rt_strerror(rc));
            pthread_mutex_lock(&n->mu); /* retried at the next tick */
            if (n->deleted_n < n->deleted_cap)
                memcpy(n->deleted[n->deleted_n++], name, sizeof name);
            pthread_mutex_unlock(&n->mu);
            ok = false;
            break;
        }
    }
    return ok;
}

/* PB2, PB3: the next producer-id block, asked for before the engine runs out. */
static void refill_producer_ids(struct metadata_node *n, const struct quorum_status *st)
{
    int64_t avail = 0;
    if (n->my_epoch <= 0 || rt_producer_id_available(n->engine, &avail) != 0 ||
        avail >= PID_BLOCK_LOW)
        return;
    int64_t start = -1;
    int32_t len = 0;
    int16_t err = KAFKA_NONE;
    if (st->is_leader) {
        err = metadata_node_allocate_producer_ids(n, n->node_id, n->my_epoch, &start, &len);
    } else {
        char host[MI_HOST_BYTES_MAX + 1];
        uint16_t port = 0;
        pthread_mutex_lock(&n->mu);
        const struct mi_broker *c = metadata_image_broker(&n->img, st->leader_id);
        if (c) {
            memcpy(host, c->host, sizeof host);
            port = c->port;
        }
        pthread_mutex_unlock(&n->mu);
        if (!port)
            return;
        int rc = pid_blocks_request(host, port, PEER_TIMEOUT_MS, n->node_id, n->my_epoch, &start,
                                    &len, &err);
        if (rc) {
            peer_error(n, st->leader_id, "AllocateProducerIds", rc);
            return;
        }
    }
    if (err != KAFKA_NONE) {
        peer_error(n, st->leader_id, "AllocateProducerIds", err);
        return;
    }
    int rc = rt_producer_id_grant(n->engine, start, start + len);
    if (rc)
        fprintf(stderr, "ringtail serve: controller: producer-id block [%lld, %lld): %s: %s\n",
                (long long)start, (long long)(start + len), rt_strerror(rc), rt_error_detail());
    else
        fprintf(stderr,
                "ringtail serve: controller: producer ids [%lld, %lld) granted to node %d\n",
                (long long)start, (long long)(start + len), (int)n->node_id);
}

/* MN2: every topic with a partition naming this node as a replica exists locally with the
 * image's partition count (the engine makes all of a topic's partitions: it has no API for a
 * subset yet). */
struct local_topic {
    char name[MI_TOPIC_NAME_MAX + 1];
    uint32_t count;
};
struct local_scan {
    int32_t node_id;
    struct local_topic *t;
    unsigned n, cap;
};

static void scan_local(void *ctx, const struct metadata_image *img)
{
    struct local_scan *ls = ctx;
    for (unsigned i = 0; i < img->topics_count; i++) {
        const struct mi_topic *t = img->topics[i];
        if (strcmp(t->name, METADATA_OFFSETS_TOPIC) == 0 ||
            strcmp(t->name, METADATA_TXN_STATE_TOPIC) == 0)
            continue; /* the engine makes them itself (MN7, MN11: the role hooks' calls) */
        bool mine = false;
        for (int32_t p = 0; p < t->partitions_count && !mine; p++)
            mine = mi_partition_has(&t->partitions[p], ls->node_id, false);
        if (!mine)
            continue;
        if (ls->n == ls->cap) {
            unsigned cap = ls->cap ? 2 * ls->cap : 16;
            struct local_topic *nt = realloc(ls->t, cap * sizeof(*nt));
            if (!nt)
                return;
            ls->t = nt;
            ls->cap = cap;
        }
        memcpy(ls->t[ls->n].name, t->name, sizeof t->name);
        ls->t[ls->n++].count = (uint32_t)t->partitions_count;
    }
}

/* MN6: a local topic's overrides made the image's. */
struct kv_list {
    char **k, **v;
    unsigned n, cap;
    bool oom;
};

static void kv_add(struct kv_list *l, const char *k, const char *v)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        unsigned cap = l->cap ? 2 * l->cap : 16;
        char **nk = realloc(l->k, cap * sizeof(char *));
        if (nk)
            l->k = nk;
        char **nv = nk ? realloc(l->v, cap * sizeof(char *)) : NULL;
        if (nv)
            l->v = nv;
        if (!nk || !nv) {
            l->oom = true;
            return;
        }
        l->cap = cap;
    }
    l->k[l->n] = strdup(k);
    l->v[l->n] = strdup(v);
    if (!l->k[l->n] || !l->v[l->n]) {
        free(l->k[l->n]);
        free(l->v[l->n]);
        l->oom = true;
        return;
    }
    l->n++;
}

static void kv_free(struct kv_list *l)
{
    for (unsigned i = 0; i < l->n; i++) {
        free(l->k[i]);
        free(l->v[i]);
    }
    free(l->k);
    free(l->v);
}

static void image_kv(void *ctx, const char *key, const char *value)
{
    kv_add(ctx, key, value);
}

static int engine_kv(void *ctx, const char *name, const char *value, enum rt_config_source source,
                     bool honoured)
{
    (void)honoured;
    if (source == RT_CONFIG_TOPIC)
        kv_add(ctx, name, value);
    return 0;
}

static bool kv_same(const struct kv_list *a, const struct kv_list *b)
{
    if (a->n != b->n)
        return false;
    for (unsigned i = 0; i < a->n; i++) {
        bool found = false;
        for (unsigned j = 0; j < b->n && !found; j++)
            found = strcmp(a->k[i], b->k[j]) == 0 && strcmp(a->v[i], b->v[j]) == 0;
        if (!found)
            return false;
    }
    return true;
}

static int sync_configs(struct metadata_node *n, const char *name)
{
    struct kv_list img = {0}, eng = {0};
    int rc = metadata_node_topic_configs(n, name, image_kv, &img);
    if (rc == 0)
        rc = rt_topic_config_get(n->engine, name, engine_kv, &eng);
    if (rc == 0 && (img.oom || eng.oom))
        rc = -ENOMEM;
    if (rc == 0 && !kv_same(&img, &eng)) {
        struct rt_topic_config *c = calloc(img.n ? img.n : 1, sizeof(*c));
        for (unsigned i = 0; c && i < img.n; i++)
            c[i] = (struct rt_topic_config){img.k[i], img.v[i]};
        rc = c ? rt_topic_config_alter(n->engine, name, c, img.n, true) : -ENOMEM;
        if (rc == 0)
            fprintf(stderr, "ringtail serve: controller: %s: %u config overrides from the log\n",
                    name, img.n);
        free(c);
    }
    kv_free(&img);
    kv_free(&eng);
    return rc == -ENOENT ? 0 : rc; /* gone from the image meanwhile: MN4's */
}

static bool ensure_local(struct metadata_node *n)
{
    struct local_scan ls = {.node_id = n->node_id};
    metadata_node_read(n, scan_local, &ls);
    /* MN6: configs only once caught up, as MN4 deletes: a node replaying its log at a restart
     * never hands its engine a set the log has replaced since */
    struct quorum_status st;
    quorum_status(n->q, &st);
    bool caught_up = (st.is_leader || st.leader_id > 0) && st.last_applied >= st.commit_index;
    bool ok = caught_up || ls.n == 0;
    for (unsigned i = 0; i < ls.n; i++) {
        uint32_t have = 0;
        int rc = rt_topic_describe(n->engine, ls.t[i].name, &have);
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            rc = rt_topic_create(n->engine, ls.t[i].name, ls.t[i].count);
        else if (rc == 0 && have < ls.t[i].count)
            rc = rt_topic_add_partitions(n->engine, ls.t[i].name, ls.t[i].count);
        if (rc == 0 && caught_up)
            rc = sync_configs(n, ls.t[i].name); /* MN6 */
        if (rc) {
            ok = false;
            if (rc != n->last_local_error) /* once per cause, not once per retry */
                fprintf(stderr, "ringtail serve: controller: local partitions of %s: %s (%s)\n",
                        ls.t[i].name, rt_strerror(rc), rt_error_detail());
            n->last_local_error = rc;
        }
    }
    free(ls.t);
    return delete_local(n) && ok; /* MN4 */
}

/* ---- partition roles: what each local partition is on this node, from the image ---- */

struct roles_scan {
    int32_t node_id;
    struct rf_assignment *a;
    size_t n, cap;
};

static void scan_roles(void *ctx, const struct metadata_image *img)
{
    struct roles_scan *rs = ctx;
    for (unsigned i = 0; i < img->topics_count; i++) {
        const struct mi_topic *t = img->topics[i];
        for (int32_t p = 0; p < t->partitions_count; p++) {
            const struct mi_partition *mp = &t->partitions[p];
            if (!mp->exists || !mi_partition_has(mp, rs->node_id, false))
                continue;
            if (rs->n == rs->cap) {
                size_t cap = rs->cap ? 2 * rs->cap : 16;
                struct rf_assignment *na = realloc(rs->a, cap * sizeof(*na));
                if (!na)
                    return;
                rs->a = na;
                rs->cap = cap;
            }
            struct rf_assignment *a = &rs->a[rs->n++];
            memset(a, 0, sizeof(*a));
            memcpy(a->topic, t->name, sizeof a->topic);
            a->partition = p;
            a->leader = mp->leader;
            a->leader_epoch = mp->leader_epoch;
            const struct mi_broker *b =
                mp->leader >= 0 ? metadata_image_broker(img, mp->leader) : NULL;
            if (b && !b->fenced) {
                memcpy(a->host, b->host, sizeof a->host);
                a->port = b->port;
            }
        }
    }
}

/* The role of every local partition, after each image change and once a tick (agent thread,
 * never the quorum's apply thread: MN2). The follower side is replica_fetcher_update. The
 * leader side sits here: for now only the partition's leader epoch is set where this node
 * leads (so the batches it writes carry the epoch the follower's truncation needs; setting the
 * latest again is a no-op, and a partition not made locally yet is retried at the next tick);
 * the leader's state (followers' log ends, the high watermark over the ISR) belongs beside it. */
/* MN7: every partition of `__consumer_offsets` the image has, and whether this node leads it. */
struct offsets_roles {
    int32_t node_id;
    unsigned n;
    bool lead[RT_GROUP_OFFSETS_PARTITIONS];
};

static void scan_offsets_roles(void *ctx, const struct metadata_image *img)
{
    struct offsets_roles *o = ctx;
    const struct mi_topic *t = metadata_image_topic(img, METADATA_OFFSETS_TOPIC);
    for (int32_t p = 0; t && p < t->partitions_count && p < RT_GROUP_OFFSETS_PARTITIONS; p++) {
        o->lead[p] = t->partitions[p].exists && t->partitions[p].leader == o->node_id;
        o->n = (unsigned)p + 1;
    }
}

/* MN7: the group-role hook for each partition of `__consumer_offsets`; the fetcher is handed
 * only those the hook made followers in the engine (the others are taken out of `a`). A
 * leadership is taken up only from a current image (RF5's test: a restarted node's replayed
 * image may name it the leader of what another node leads now); losing one needs no such
 * test (resigning is always safe). */
static size_t group_roles_apply(struct metadata_node *n, struct rf_assignment *a, size_t an,
                                bool current)
{
    metadata_node_group_role_fn fn = atomic_load(&n->group_role);
    void *ctx = atomic_load(&n->group_role_ctx);
    bool following[RT_GROUP_OFFSETS_PARTITIONS] = {false};
    if (fn) {
        struct offsets_roles o = {.node_id = n->node_id};
        metadata_node_read(n, scan_offsets_roles, &o);
        for (unsigned p = 0; p < o.n; p++)
            if (current || !o.lead[p])
                following[p] = fn(ctx, p, o.lead[p]) && !o.lead[p];
    }
    size_t w = 0;
    for (size_t i = 0; i < an; i++)
        if (strcmp(a[i].topic, METADATA_OFFSETS_TOPIC) != 0 ||
            (a[i].partition >= 0 && a[i].partition < RT_GROUP_OFFSETS_PARTITIONS &&
             (a[i].leader == n->node_id || following[a[i].partition])))
            a[w++] = a[i];
    return w;
}

void metadata_node_set_group_role(struct metadata_node *n, metadata_node_group_role_fn fn,
                                  void *ctx)
{
    atomic_store(&n->group_role_ctx, ctx);
    atomic_store(&n->group_role, fn);
    metadata_node_kick(n);
}

/* MN11: whether the image has `__transaction_state`-0 and names this node its leader. */
struct txn_role_look {
    int32_t node_id;
    bool lead;
};

static void scan_txn_role(void *ctx, const struct metadata_image *img)
{
    struct txn_role_look *l = ctx;
    const struct mi_topic *t = metadata_image_topic(img, METADATA_TXN_STATE_TOPIC);
    l->lead = t && t->partitions_count > 0 && t->partitions[0].exists &&
              t->partitions[0].leader == l->node_id;
}

/* MN11: the txn-role hook, after the leader epochs of the partitions this node leads are set
 * (G.7's order: the data partitions first, then the coordinator); `__transaction_state`-0 is
 * handed to the fetcher only once the hook made the engine follow it. "Lead" only from a
 * current image (MN7's rule); anything else resigns (always safe), the topic's absence
 * included: before the controller creates it no node coordinates. Without a hook (the broker
 * not running yet) the fetcher never gets it. */
static size_t txn_role_apply(struct metadata_node *n, struct rf_assignment *a, size_t an,
                             bool current)
{
    metadata_node_txn_role_fn fn = atomic_load(&n->txn_role);
    void *ctx = atomic_load(&n->txn_role_ctx);
    bool following = false;
    if (fn) {
        struct txn_role_look l = {.node_id = n->node_id};
        metadata_node_read(n, scan_txn_role, &l);
        bool lead = l.lead && current;
        following = fn(ctx, lead) && !lead;
    }
    size_t w = 0;
    for (size_t i = 0; i < an; i++)
        if (strcmp(a[i].topic, METADATA_TXN_STATE_TOPIC) != 0 ||
            (a[i].partition == 0 && (a[i].leader == n->node_id || following)))
            a[w++] = a[i];
    return w;
}

void metadata_node_set_txn_role(struct metadata_node *n, metadata_node_txn_role_fn fn, void *ctx)
{
    atomic_store(&n->txn_role_ctx, ctx);
    atomic_store(&n->txn_role, fn);
    metadata_node_kick(n);
}

static void partition_roles_apply(struct metadata_node *n)
{
    struct roles_scan rs = {.node_id = n->node_id};
    metadata_node_read(n, scan_roles, &rs);
    struct quorum_status st;
    quorum_status(n->q, &st);
    /* RF5: the image is current once this node heard from a raft leader, applied all it
     * committed, and is registered with the controller (or is it) */
    bool current =
        st.leader_id > 0 && st.last_applied >= st.commit_index && (st.is_leader || n->my_epoch > 0);
    if (current && !atomic_load(&n->caught_up)) { /* MN9 */
        atomic_store(&n->caught_up, true);
        fprintf(stderr, "ringtail serve: controller: caught up with the metadata log; serving\n");
    }
    rs.n = group_roles_apply(n, rs.a, rs.n, current); /* MN7, before the fetcher sees them */
    for (size_t i = 0; i < rs.n; i++)
        if (rs.a[i].leader == n->node_id) {
            /* replica_fetcher.h RF7: led in the engine before the new epoch is set, so a
             * replica fetch still in flight is refused from here on (a no-op when led). */
            if (strncmp(rs.a[i].topic, "__", 2) != 0) {
                int lrc = rt_partition_become_leader(n->engine, rs.a[i].topic,
                                                     (uint32_t)rs.a[i].partition);
                if (lrc && lrc != RT_E_UNKNOWN_TOPIC_OR_PARTITION)
                    fprintf(stderr, "ringtail serve: controller: %s-%d: becoming leader: %s\n",
                            rs.a[i].topic, rs.a[i].partition, rt_strerror(lrc));
            }
            int rc = rt_partition_set_leader_epoch(
                n->engine, rs.a[i].topic, (uint32_t)rs.a[i].partition, rs.a[i].leader_epoch);
            if (rc && rc != RT_E_INVALID_ARGUMENT && rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION)
                fprintf(stderr, "ringtail serve: controller: %s-%d: leader epoch %d: %s\n",
                        rs.a[i].topic, rs.a[i].partition, (int)rs.a[i].leader_epoch,
                        rt_strerror(rc));
        }
    rs.n = txn_role_apply(n, rs.a, rs.n, current); /* MN11, after the leader epochs */
    if (n->replicas)
        replica_fetcher_update(n->replicas, rs.a, rs.n, current);
    free(rs.a);
}

static void *agent_main(void *arg)
{
    struct metadata_node *n = arg;
    unsigned interval = n->session_ms / 4 ? n->session_ms / 4 : 1;
    if (interval > 2000)
        interval = 2000; /* broker.heartbeat.interval.ms */
    int64_t next = 0;
    bool local_failed = false;
    for (;;) {
        pthread_mutex_lock(&n->mu);
        while (!n->stop && !n->dirty && !n->kick && now_ms() < next) {
            int64_t at = next;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t wait = at - now_ms();
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (wait % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&n->cv, &n->mu, &ts);
        }
        bool stop = n->stop, dirty = n->dirty, kick = n->kick;
        bool shutting_down = n->shutting_down;
        n->dirty = n->kick = false;
        pthread_mutex_unlock(&n->mu);
        if (kick)
            next = 0; /* metadata_node_kick: the tick runs now */
        if (stop)
            break;
        if (dirty) {
            local_failed = !ensure_local(n);
            partition_roles_apply(n);
        }
        if (now_ms() < next)
            continue;
        next = now_ms() + (shutting_down && interval > 200 ? 200 : interval);
        if (local_failed && !dirty) /* retried once a tick, not in a tight loop */
            local_failed = !ensure_local(n);
        if (!dirty) /* roles retried (and RF5's interim high watermark), once a tick */
            partition_roles_apply(n);
        struct quorum_status st;
        quorum_status(n->q, &st);
        if (st.leader_id != n->logged_controller)
            n->last_peer_error = 0;
        n->logged_controller = st.leader_id;
        if (st.is_leader)
            controller_tick(n, &st);
        else if (st.leader_id > 0)
            broker_tick(n, st.leader_id);
        if (!shutting_down && (st.is_leader || st.leader_id > 0))
            refill_producer_ids(n, &st);
    }
    return NULL;
}

/* The leader side's view of this node (replica_state.h struct rs_host). */
static void host_read(void *ctx, void (*fn)(void *fn_ctx, const struct metadata_image *img),
                      void *fn_ctx)
{
    metadata_node_read(ctx, fn, fn_ctx);
}

static void host_leader_hw(void *ctx, const char *topic, int32_t partition, int64_t hw)
{
    metadata_node_leader_hw(ctx, topic, partition, hw);
}

static int16_t host_alter_partition(void *ctx, const char *topic, int32_t partition,
                                    int32_t leader_epoch, int32_t partition_epoch,
                                    const int32_t *isr, unsigned isr_n)
{
    return metadata_node_alter_partition_send(ctx, topic, partition, leader_epoch, partition_epoch,
                                              isr, isr_n);
}

int metadata_node_run(struct metadata_node *n, rt_engine *engine, const char *host, uint16_t port,
                      unsigned session_ms, unsigned replica_lag_ms, unsigned checkpoint_ms)
{
    if (strlen(host) > MI_HOST_BYTES_MAX || port == 0)
        return -EINVAL;
    char err[4200] = "";
    int frc = replica_fetcher_start(engine, n->node_id, n->dir, checkpoint_ms, &n->replicas, err,
                                    sizeof err);
    if (frc) {
        fprintf(stderr, "ringtail serve: replica: %s\n", err[0] ? err : strerror(-frc));
        return frc == RT_E_CORRUPT ? -EINVAL : frc;
    }
    n->engine = engine;
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    n->session_ms = session_ms ? session_ms : METADATA_SESSION_TIMEOUT_MS;
    if (getrandom(n->incarnation, 16, 0) != 16)
        return -EIO;
    pthread_mutex_lock(&n->mu);
    n->dirty = true; /* topics the log named before the engine was here */
    pthread_mutex_unlock(&n->mu);
    int rc = pthread_create(&n->agent, NULL, agent_main, n);
    if (rc) {
        replica_fetcher_stop(n->replicas);
        n->replicas = NULL;
        return -rc;
    }
    n->agent_started = true;
    struct replica_state *rs = NULL;
    const struct rs_host rs_host = {.ctx = n,
                                    .read = host_read,
                                    .leader_hw = host_leader_hw,
                                    .alter_partition = host_alter_partition};
    rc = replica_state_start(&rs_host, engine, n->node_id, replica_lag_ms, &rs);
    if (rc)
        return rc;
    atomic_store(&n->rs, rs);
    /* replica_fetcher.h RF5's interim "leader HW = log end" gives way to the leader side's
     * high watermark over the ISR (replica_state.h RS1) */
    replica_fetcher_set_interim_leader_hw(n->replicas, false);
    return 0;
}

void metadata_node_leader_hw(struct metadata_node *n, const char *topic, int32_t partition,
                             int64_t hw)
{
    replica_fetcher_leader_hw(n->replicas, topic, partition, hw);
}

bool metadata_node_caught_up(struct metadata_node *n)
{
    return n && atomic_load(&n->caught_up);
}

struct replica_state *metadata_node_replicas(struct metadata_node *n)
{
    return n ? atomic_load(&n->rs) : NULL;
}

/* ---- AlterPartition (replica_state.h RS4): the controller's side and the leader's call ---- */

struct alter_check {
    const char *topic;
    int32_t partition, broker_id, leader_epoch, partition_epoch;
    const int32_t *isr;
    unsigned isr_n;
    int16_t err;
    uint8_t rec[64 + 8 * MI_REPLICAS_MAX];
    size_t len;
};

static void alter_check(void *ctx, const struct metadata_image *img)
{
    struct alter_check *c = ctx; /* alter_partition.h AP1 */
    c->err =
        alter_partition_check(img, c->broker_id, c->topic, c->partition, c->leader_epoch,
                              c->partition_epoch, c->isr, c->isr_n, c->rec, sizeof c->rec, &c->len);
}

int16_t metadata_node_alter_partition(struct metadata_node *n, int32_t broker_id, const char *topic,
                                      int32_t partition, int32_t leader_epoch,
                                      int32_t partition_epoch, const int32_t *isr, unsigned isr_n)
{
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (!st.is_leader)
        return KAFKA_NOT_CONTROLLER;
    if (isr_n == 0 || isr_n > MI_REPLICAS_MAX)
        return KAFKA_INVALID_REQUEST;
    struct alter_check *c = calloc(1, sizeof(*c));
    if (!c)
        return KAFKA_UNKNOWN_SERVER_ERROR;
    *c = (struct alter_check){.topic = topic,
                              .partition = partition,
                              .broker_id = broker_id,
                              .leader_epoch = leader_epoch,
                              .partition_epoch = partition_epoch,
                              .isr = isr,
                              .isr_n = isr_n};
    pthread_mutex_lock(&n->ctl_mu); /* one controller decision at a time */
    metadata_node_read(n, alter_check, c);
    int16_t err = c->err;
    if (!err) {
        uint64_t index;
        int rc = quorum_propose_wait(n->q, c->rec, c->len, PROPOSE_WAIT_MS, &index);
        if (rc)
            err = quorum_error(rc);
    }
    pthread_mutex_unlock(&n->ctl_mu);
    free(c);
    return err;
}

static int encode_alter_partition(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_alter_partition_request_encode(w, v, m);
}

int16_t metadata_node_alter_partition_send(struct metadata_node *n, const char *topic,
                                           int32_t partition, int32_t leader_epoch,
                                           int32_t partition_epoch, const int32_t *isr,
                                           unsigned isr_n)
{
    struct quorum_status st;
    quorum_status(n->q, &st);
    if (st.is_leader)
        return metadata_node_alter_partition(n, n->node_id, topic, partition, leader_epoch,
                                             partition_epoch, isr, isr_n);
    if (st.leader_id <= 0)
        return KAFKA_NOT_CONTROLLER;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port = 0;
    pthread_mutex_lock(&n->mu);
    const struct mi_broker *c = metadata_image_broker(&n->img, st.leader_id);
    if (c) {
        memcpy(host, c->host, sizeof host);
        port = c->port;
    }
    pthread_mutex_unlock(&n->mu);
    if (!port)
        return KAFKA_NOT_CONTROLLER;
    int32_t isr_copy[MI_REPLICAS_MAX];
    memcpy(isr_copy, isr, isr_n * sizeof(int32_t));
    struct kmsg_alter_partition_partition pp = {.partition_index = partition,
                                                .leader_epoch = leader_epoch,
                                                .new_isr = isr_copy,
                                                .new_isr_count = (int32_t)isr_n,
                                                .partition_epoch = partition_epoch};
    struct kmsg_alter_partition_topic tp = {
        .topic_name = kp_str_of(topic), .partitions = &pp, .partitions_count = 1};
    struct kmsg_alter_partition_request q = {
        .broker_id = n->node_id, .broker_epoch = -1, .topics = &tp, .topics_count = 1};
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    int rc = kclient_call(host, port, PEER_TIMEOUT_MS + PROPOSE_WAIT_MS, KAFKA_ALTER_PARTITION, 0,
                          encode_alter_partition, &q, &frame, &frame_len, &body_at);
    int16_t err = KAFKA_REQUEST_TIMED_OUT;
    if (rc == 0) {
        uint8_t arena_buf[2048];
        struct kp_arena a;
        kp_arena_init(&a, arena_buf, sizeof arena_buf);
        struct kp_reader rd;
        struct kmsg_alter_partition_response r = {0};
        kp_reader_init(&rd, frame + body_at, frame_len - body_at);
        if (kmsg_alter_partition_response_decode(&rd, 0, &a, &r) == 0) {
            err = r.error_code;
            if (!err && r.topics_count == 1 && r.topics[0].partitions_count == 1)
                err = r.topics[0].partitions[0].error_code;
        }
    }
    free(frame);
    return err;
}

/* ---- topic configs from the image (MN6; controller_admin.h CA3 and handle_admin.c read them too) ---- */

struct configs_view {
    const char *name;
    void (*fn)(void *ctx, const char *key, const char *value);
    void *ctx;
    bool exists;
};

static void view_configs(void *ctx, const struct metadata_image *img)
{
    struct configs_view *v = ctx;
    const struct mi_topic *t = metadata_image_topic(img, v->name);
    v->exists = t != NULL;
    for (unsigned i = 0; t && i < t->configs_count; i++)
        v->fn(v->ctx, t->keys[i], t->values[i]);
}

int metadata_node_topic_configs(struct metadata_node *n, const char *name,
                                void (*fn)(void *ctx, const char *key, const char *value),
                                void *ctx)
{
    struct configs_view v = {.name = name, .fn = fn, .ctx = ctx};
    metadata_node_read(n, view_configs, &v);
    return v.exists ? 0 : -ENOENT;
}
