/*
 * replica_fetcher.c — the follower side of replication (replica_fetcher.h RF1-RF4): the partition
 * table under one mutex, one fetcher thread per leader node (Kafka's fetcher per source broker),
 * the leader-epoch truncation, and the checkpoint thread. Every request goes over the fetcher's
 * kept-open kclient connection to the leader's registered listener.
 */
#include "tools/kafka/cluster/replica_fetcher.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/cluster/hw_checkpoint.h"
#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

#define RF_SOURCES_MAX    256
#define RF_ARENA_BYTES    (1u << 20)
#define RF_TIMEOUT_MS     (RF_MAX_WAIT_MS + 5000)
#define RF_INTERIM_MS     100   /* RF5's cadence */
#define RF_CAUSE_BELOW_HW 20001 /* rf_log's cause of RF2's clamp (not an errno nor a Kafka code) */

enum rf_state { RF_TRUNCATE, RF_FETCH };

struct rf_part {
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition;
    int32_t leader, epoch;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
    bool follower; /* followed now (else led here, leaderless, or gone from the image) */
    bool hw_held;  /* RF1 done */
    bool led;      /* the image names this node its leader */
    enum rf_state state;
    uint64_t gen;      /* RF4 */
    int32_t ask_epoch; /* the epoch the next OffsetForLeaderEpoch asks (-2: the latest) */
    int64_t log_end, hw;
    int64_t retry_at;
};

struct rf_source {
    struct replica_fetcher *rf;
    int32_t leader;
    pthread_t th;
};

struct replica_fetcher {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rt_engine *engine;
    int32_t node_id;
    char dir[4096];
    unsigned interval_ms;
    bool stop;
    struct rf_part *parts;
    size_t parts_count;
    struct rf_source *sources[RF_SOURCES_MAX];
    size_t sources_count;
    struct hw_checkpoint ckpt; /* loaded, then the last written (under mu) */
    pthread_t ckpt_th;
    int last_error;         /* logged once per cause */
    bool interim_leader_hw; /* RF5 */
    bool current;           /* the last update's metadata_current */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timed_wait(struct replica_fetcher *rf, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&rf->cv, &rf->mu, &ts);
}

static void rf_log(struct replica_fetcher *rf, int cause, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rf_log(struct replica_fetcher *rf, int cause, const char *fmt, ...)
{
    if (cause != 0 && cause == rf->last_error)
        return; /* once per cause, not once per retry */
    rf->last_error = cause;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ringtail serve: replica: %s\n", line);
}

/* ---- pure pieces ---- */

bool rf_truncation_decide(int32_t leader_epoch, int64_t leader_end, int64_t hw, int64_t log_end,
                          int32_t own_epoch, int64_t own_end, int64_t *offset, int32_t *next_epoch)
{
    *next_epoch = -1;
    if (leader_end < 0) { /* the leader knows no epochs: the high watermark (KIP-101's fallback) */
        *offset = hw < log_end ? hw : log_end;
        return true;
    }
    int64_t o = leader_end < log_end ? leader_end : log_end;
    if (leader_epoch < 0 || own_epoch < 0) {
        *offset = o;
        return true;
    }
    if (own_epoch != leader_epoch) { /* the follower lacks the leader's epoch: its own end first */
        *offset = own_end < log_end ? own_end : log_end;
        *next_epoch = own_epoch;
        return false;
    }
    *offset = own_end < o ? own_end : o;
    return true;
}

size_t rf_whole_batches(const uint8_t *buf, size_t len)
{
    size_t at = 0;
    while (len - at >= 12) {
        uint32_t bl = (uint32_t)buf[at + 8] << 24 | (uint32_t)buf[at + 9] << 16 |
                      (uint32_t)buf[at + 10] << 8 | buf[at + 11];
        if (bl < 49 || (uint64_t)bl + 12 > len - at)
            break;
        at += 12 + (size_t)bl;
    }
    return at;
}

/* ---- engine probes ---- */

/* The log end: a truncation at or past it changes nothing and reports it. */
static int local_log_end(struct replica_fetcher *rf, const char *t, int32_t p, int64_t *end)
{
    return rt_partition_truncate(rf->engine, t, (uint32_t)p, INT64_MAX, end);
}

/* The latest epoch of the partition's checkpoint, -1 when it has none: the largest e for which
 * the engine answers (rt_partition_end_offset_for_epoch answers -1 above the latest). */
static int32_t local_latest_epoch(struct replica_fetcher *rf, const char *t, int32_t p)
{
    int64_t end;
    int32_t found;
    if (rt_partition_end_offset_for_epoch(rf->engine, t, (uint32_t)p, 0, &end, &found) != 0 ||
        found < 0)
        return -1;
    int32_t lo = 0, hi = INT32_MAX - 1; /* lo answers; find the last that does */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (rt_partition_end_offset_for_epoch(rf->engine, t, (uint32_t)p, mid, &end, &found) == 0 &&
            found >= 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static struct rf_part *find_part(struct replica_fetcher *rf, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < rf->parts_count; i++)
        if (rf->parts[i].partition == partition && strcmp(rf->parts[i].topic, topic) == 0)
            return &rf->parts[i];
    return NULL;
}

/* ---- the checkpoint (RF1, hw_checkpoint.h) ---- */

static void ckpt_set(struct hw_checkpoint *c, const char *topic, int32_t p, int64_t hw)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].partition == p && strcmp(c->entries[i].topic, topic) == 0) {
            c->entries[i].offset = hw;
            return;
        }
    (void)hw_checkpoint_add(c, topic, p, hw);
}

/* Writes the checkpoint: the last known high watermark of every partition this node holds one
 * of (followed ones, and led ones under RF5); the others keep their last entry. */
static void ckpt_write(struct replica_fetcher *rf)
{
    pthread_mutex_lock(&rf->mu);
    for (size_t i = 0; i < rf->parts_count; i++)
        if (rf->parts[i].hw_held)
            ckpt_set(&rf->ckpt, rf->parts[i].topic, rf->parts[i].partition, rf->parts[i].hw);
    struct hw_checkpoint copy = {0};
    for (size_t i = 0; i < rf->ckpt.count; i++)
        (void)hw_checkpoint_add(&copy, rf->ckpt.entries[i].topic, rf->ckpt.entries[i].partition,
                                rf->ckpt.entries[i].offset);
    pthread_mutex_unlock(&rf->mu);
    int rc = hw_checkpoint_store(rf->dir, &copy); /* HC2, off the lock */
    hw_checkpoint_free(&copy);
    if (rc) {
        pthread_mutex_lock(&rf->mu);
        rf_log(rf, rc, "writing %s/%s: %s", rf->dir, HW_CHECKPOINT_FILE, strerror(-rc));
        pthread_mutex_unlock(&rf->mu);
    }
}

/* RF5 (interim): every led partition whose high watermark this node holds moves it to its log
 * end. */
static void interim_round(struct replica_fetcher *rf)
{
    struct {
        char topic[MI_TOPIC_NAME_MAX + 1];
        int32_t partition;
    } *todo = NULL;
    size_t n = 0;
    pthread_mutex_lock(&rf->mu);
    if (rf->interim_leader_hw && rf->current && rf->parts_count)
        todo = malloc(rf->parts_count * sizeof(*todo));
    for (size_t i = 0; todo && i < rf->parts_count; i++)
        if (rf->parts[i].led && rf->parts[i].hw_held && !rf->parts[i].follower) {
            memcpy(todo[n].topic, rf->parts[i].topic, sizeof todo[n].topic);
            todo[n++].partition = rf->parts[i].partition;
        }
    pthread_mutex_unlock(&rf->mu);
    for (size_t i = 0; i < n; i++) {
        int64_t hw = -1;
        if (rt_partition_set_high_watermark(rf->engine, todo[i].topic, (uint32_t)todo[i].partition,
                                            INT64_MAX, &hw) != 0)
            continue;
        pthread_mutex_lock(&rf->mu);
        struct rf_part *p = find_part(rf, todo[i].topic, todo[i].partition);
        if (p && p->led)
            p->hw = hw;
        pthread_mutex_unlock(&rf->mu);
    }
    free(todo);
}

/* The housekeeping thread: the checkpoint every interval (RF1's file), RF5's rounds. */
static void *ckpt_main(void *arg)
{
    struct replica_fetcher *rf = arg;
    pthread_mutex_lock(&rf->mu);
    int64_t next = now_ms() + rf->interval_ms, interim = now_ms() + RF_INTERIM_MS;
    while (!rf->stop) {
        if (now_ms() >= interim) {
            pthread_mutex_unlock(&rf->mu);
            interim_round(rf);
            pthread_mutex_lock(&rf->mu);
            interim = now_ms() + RF_INTERIM_MS;
            continue;
        }
        if (now_ms() >= next) {
            pthread_mutex_unlock(&rf->mu);
            ckpt_write(rf);
            pthread_mutex_lock(&rf->mu);
            next = now_ms() + rf->interval_ms;
            continue;
        }
        int64_t wake = next < interim ? next : interim;
        timed_wait(rf, wake - now_ms());
    }
    pthread_mutex_unlock(&rf->mu);
    return NULL;
}

/* ---- requests ---- */

static int encode_epoch(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_offset_for_leader_epoch_request_encode(w, v, m);
}

static int encode_fetch(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_fetch_request_encode(w, v, m);
}

/* A work item: a copy of the partition's state taken under the lock. */
struct rf_item {
    size_t idx;
    uint64_t gen;
    struct rf_part p;
};

/* Re-finds the item's partition under the lock: NULL when its role changed (RF4). */
static struct rf_part *still(struct replica_fetcher *rf, const struct rf_item *it)
{
    if (it->idx >= rf->parts_count)
        return NULL;
    struct rf_part *p = &rf->parts[it->idx];
    return p->gen == it->gen && p->follower ? p : NULL;
}

static void back_off(struct replica_fetcher *rf, const struct rf_item *it)
{
    struct rf_part *p = still(rf, it);
    if (p)
        p->retry_at = now_ms() + RF_BACKOFF_MS;
}

/* RF2: one round of the leader-epoch protocol for one partition (no lock held). */
static void truncate_one(struct replica_fetcher *rf, struct kclient_conn *conn, struct kp_arena *a,
                         struct rf_item *it)
{
    struct rf_part *w = &it->p;
    int64_t log_end = -1;
    int rc = local_log_end(rf, w->topic, w->partition, &log_end);
    int32_t ask =
        w->ask_epoch == -2 ? local_latest_epoch(rf, w->topic, w->partition) : w->ask_epoch;
    int64_t leader_end = -1;
    int32_t leader_epoch = -1;
    int16_t err = KAFKA_NONE;
    if (rc == 0 && ask >= 0) {
        struct kmsg_epoch_partition qp = {
            .partition = w->partition, .current_leader_epoch = w->epoch, .leader_epoch = ask};
        struct kmsg_epoch_topic qt = {
            .topic = kp_str_of(w->topic), .partitions = &qp, .partitions_count = 1};
        struct kmsg_offset_for_leader_epoch_request q = {
            .replica_id = rf->node_id, .topics = &qt, .topics_count = 1};
        uint8_t *frame = NULL;
        size_t flen = 0, body = 0;
        rc = kclient_conn_call(conn, w->host, w->port, RF_TIMEOUT_MS, KAFKA_OFFSET_FOR_LEADER_EPOCH,
                               RF_EPOCH_VERSION, encode_epoch, &q, &frame, &flen, &body);
        struct kmsg_offset_for_leader_epoch_response r = {0};
        if (rc == 0) {
            struct kp_reader rd;
            kp_reader_init(&rd, frame + body, flen - body);
            kp_arena_reset(a);
            rc = kmsg_offset_for_leader_epoch_response_decode(&rd, RF_EPOCH_VERSION, a, &r)
                     ? -EPROTO
                     : 0;
        }
        if (rc == 0 && (r.topics_count != 1 || r.topics[0].partitions_count != 1))
            rc = -EPROTO;
        if (rc == 0) {
            err = r.topics[0].partitions[0].error_code;
            leader_end = r.topics[0].partitions[0].end_offset;
            leader_epoch = r.topics[0].partitions[0].leader_epoch;
        }
        free(frame);
    }
    pthread_mutex_lock(&rf->mu);
    struct rf_part *p = still(rf, it);
    if (!p) {
        pthread_mutex_unlock(&rf->mu);
        return;
    }
    if (rc || err) {
        rf_log(rf, rc ? rc : 10000 + err, "%s-%d: OffsetForLeaderEpoch to node %d (%s:%u): %s",
               w->topic, w->partition, w->leader, w->host, w->port,
               rc ? (rc == -EPROTO ? "closed, or not a whole answer" : strerror(-rc))
                  : kafka_error_name(err));
        p->retry_at = now_ms() + RF_BACKOFF_MS;
        pthread_mutex_unlock(&rf->mu);
        return;
    }
    int64_t hw = p->hw;
    pthread_mutex_unlock(&rf->mu);
    /* the engine's held value (the leader side may have moved it while this node led) */
    (void)rt_partition_set_high_watermark(rf->engine, w->topic, (uint32_t)w->partition, 0, &hw);
    int64_t own_end = -1;
    int32_t own_epoch = -1;
    if (ask >= 0 && leader_epoch >= 0 &&
        rt_partition_end_offset_for_epoch(rf->engine, w->topic, (uint32_t)w->partition,
                                          leader_epoch, &own_end, &own_epoch) != 0)
        own_epoch = -1;
    if (ask < 0) /* the follower has no epochs: its high watermark */
        leader_end = -1;
    int64_t to;
    int32_t next;
    bool done =
        rf_truncation_decide(leader_epoch, leader_end, hw, log_end, own_epoch, own_end, &to, &next);
    if (to < hw) { /* RF2: never below what consumers may have read */
        pthread_mutex_lock(&rf->mu);
        rf_log(rf, RF_CAUSE_BELOW_HW,
               "%s-%d: leader %d ends epoch %d at %" PRId64 ", below the high watermark %" PRId64
               "; truncating to the high watermark",
               w->topic, w->partition, w->leader, (int)leader_epoch, to, hw);
        pthread_mutex_unlock(&rf->mu);
        to = hw;
    }
    int64_t end = log_end;
    rc = to < log_end
             ? rt_partition_truncate(rf->engine, w->topic, (uint32_t)w->partition, to, &end)
             : 0;
    pthread_mutex_lock(&rf->mu);
    p = still(rf, it);
    if (rc) {
        rf_log(rf, rc, "%s-%d: truncating to %" PRId64 ": %s", w->topic, w->partition, to,
               rt_strerror(rc));
        if (p)
            p->retry_at = now_ms() + RF_BACKOFF_MS;
    } else {
        if (to < log_end)
            fprintf(stderr,
                    "ringtail serve: replica: %s-%d: truncated from %" PRId64 " to %" PRId64
                    " (leader %d, epoch %d)\n",
                    w->topic, w->partition, log_end, end, w->leader, (int)w->epoch);
        if (p) {
            p->log_end = end;
            if (done) {
                p->state = RF_FETCH;
            } else {
                p->ask_epoch = next;
            }
        }
    }
    pthread_mutex_unlock(&rf->mu);
}

/* ---- RF6: a follower below its leader's log start (begin) ---- */

/* The Fetch at the item's log end was out of range and the leader's log starts at
 * `leader_start`, above it: the local log restarts empty there. No lock held. Returns true when
 * it did (the partition then fetches from `leader_start`). */
static bool restart_below_start(struct replica_fetcher *rf, struct rf_item *it,
                                int64_t leader_start)
{
    struct rf_part *w = &it->p;
    if (leader_start < 0 || leader_start <= w->log_end)
        return false; /* not below the leader's log start: truncation (RF4) */
    pthread_mutex_lock(&rf->mu);
    bool live = still(rf, it) != NULL;
    pthread_mutex_unlock(&rf->mu);
    if (!live)
        return false;
    int rc = rt_partition_restart_at(rf->engine, w->topic, (uint32_t)w->partition, leader_start);
    int64_t hw = -1;
    if (rc == 0) /* the held high watermark is the new log start (RF1 holds it already) */
        (void)rt_partition_set_high_watermark(rf->engine, w->topic, (uint32_t)w->partition, 0, &hw);
    pthread_mutex_lock(&rf->mu);
    struct rf_part *p = still(rf, it);
    if (rc) {
        rf_log(rf, rc, "%s-%d: restarting the log at the leader's log start %" PRId64 ": %s",
               w->topic, w->partition, leader_start, rt_strerror(rc));
        if (p)
            p->retry_at = now_ms() + RF_BACKOFF_MS;
    } else {
        fprintf(stderr,
                "ringtail serve: replica: %s-%d: log end %" PRId64 " below leader %d's log start "
                "%" PRId64 "; restarted the log there\n",
                w->topic, w->partition, w->log_end, w->leader, leader_start);
        if (p) {
            p->log_end = leader_start;
            p->hw = hw >= 0 ? hw : leader_start;
            p->state = RF_FETCH;
            p->retry_at = 0;
        }
    }
    pthread_mutex_unlock(&rf->mu);
    return true;
}

/* ---- RF6 (end) ---- */

/* One Fetch covering the items (RF3, RF4). No lock held. */
static void fetch_all(struct replica_fetcher *rf, struct kclient_conn *conn, struct kp_arena *a,
                      struct rf_item *items, size_t n)
{
    struct kmsg_fetch_topic *topics = calloc(n, sizeof(*topics));
    struct kmsg_fetch_partition *parts = calloc(n, sizeof(*parts));
    if (!topics || !parts) {
        free(topics);
        free(parts);
        return;
    }
    int32_t nt = 0;
    for (size_t i = 0; i < n; i++) { /* items are grouped by topic: one entry per run */
        if (nt == 0 || strcmp(items[i].p.topic, items[i - 1].p.topic) != 0) {
            topics[nt].topic = kp_str_of(items[i].p.topic);
            topics[nt].partitions = &parts[i];
            nt++;
        }
        topics[nt - 1].partitions_count++;
        parts[i] = (struct kmsg_fetch_partition){.partition = items[i].p.partition,
                                                 .current_leader_epoch = items[i].p.epoch,
                                                 .fetch_offset = items[i].p.log_end,
                                                 .log_start_offset = -1,
                                                 .partition_max_bytes = RF_PARTITION_BYTES,
                                                 .last_fetched_epoch = -1};
    }
    struct kmsg_fetch_request q = {.replica_id = rf->node_id,
                                   .max_wait_ms = RF_MAX_WAIT_MS,
                                   .min_bytes = 1,
                                   .max_bytes = RF_MAX_BYTES,
                                   .isolation_level = 0,
                                   .session_id = 0,
                                   .session_epoch = -1,
                                   .topics = topics,
                                   .topics_count = nt};
    uint8_t *frame = NULL;
    size_t flen = 0, body = 0;
    int rc = kclient_conn_call(conn, items[0].p.host, items[0].p.port, RF_TIMEOUT_MS, KAFKA_FETCH,
                               RF_FETCH_VERSION, encode_fetch, &q, &frame, &flen, &body);
    free(topics);
    free(parts);
    struct kmsg_fetch_response r = {0};
    if (rc == 0) {
        struct kp_reader rd;
        kp_reader_init(&rd, frame + body, flen - body);
        kp_arena_reset(a);
        rc = kmsg_fetch_response_decode(&rd, RF_FETCH_VERSION, a, &r) ? -EPROTO : 0;
    }
    if (rc == 0 && r.error_code)
        rc = -EPROTO;
    if (rc) {
        pthread_mutex_lock(&rf->mu);
        rf_log(rf, rc, "Fetch from node %d (%s:%u): %s", items[0].p.leader, items[0].p.host,
               items[0].p.port, rc == -EPROTO ? "closed, or not a whole answer" : strerror(-rc));
        for (size_t i = 0; i < n; i++)
            back_off(rf, &items[i]);
        pthread_mutex_unlock(&rf->mu);
        free(frame);
        return;
    }
    for (int32_t t = 0; t < r.responses_count; t++) {
        const struct kmsg_fetch_topic_response *tr = &r.responses[t];
        for (int32_t k = 0; k < tr->partitions_count; k++) {
            const struct kmsg_fetch_partition_response *pr = &tr->partitions[k];
            struct rf_item *it = NULL;
            for (size_t i = 0; i < n && !it; i++)
                if (items[i].p.partition == pr->partition_index &&
                    (size_t)tr->topic.len == strlen(items[i].p.topic) &&
                    memcmp(tr->topic.ptr, items[i].p.topic, (size_t)tr->topic.len) == 0)
                    it = &items[i];
            if (!it)
                continue;
            const char *topic = it->p.topic;
            int32_t part = it->p.partition;
            if (pr->error_code == KAFKA_OFFSET_OUT_OF_RANGE &&
                restart_below_start(rf, it, pr->log_start_offset))
                continue; /* RF6 */
            if (pr->error_code != KAFKA_NONE) {
                pthread_mutex_lock(&rf->mu);
                rf_log(rf, 10000 + pr->error_code, "%s-%d: Fetch from node %d: %s", topic, part,
                       it->p.leader, kafka_error_name(pr->error_code));
                struct rf_part *p = still(rf, it);
                if (p && pr->error_code == KAFKA_OFFSET_OUT_OF_RANGE) {
                    p->state = RF_TRUNCATE; /* RF4: truncation tells where the logs part */
                    p->ask_epoch = -2;
                    p->retry_at = now_ms() + RF_BACKOFF_MS / 4;
                } else if (p) {
                    p->retry_at = now_ms() + RF_BACKOFF_MS;
                }
                pthread_mutex_unlock(&rf->mu);
                continue;
            }
            size_t whole = pr->records_len > 0 && pr->records
                               ? rf_whole_batches(pr->records, (size_t)pr->records_len)
                               : 0;
            int64_t end = it->p.log_end;
            int arc = 0;
            if (whole > 0) {
                /* RF7: this check and the append are not atomic, but a stale item cannot write a
                 * log this node now leads: the engine refuses a replica append into a partition
                 * it was made leader of (metadata_node.c, before the new epoch is set), on the
                 * partition's shard thread (partition.h RL9). The check saves the call. */
                pthread_mutex_lock(&rf->mu);
                bool live = still(rf, it) != NULL;
                pthread_mutex_unlock(&rf->mu);
                if (live)
                    arc = rt_partition_append_replica(rf->engine, topic, (uint32_t)part,
                                                      pr->records, whole, &end);
            }
            int64_t hw = -1;
            int hrc = 0;
            if (arc == 0) {
                int64_t want = pr->high_watermark < end ? pr->high_watermark : end; /* RF3 */
                if (want >= 0)
                    hrc = rt_partition_set_high_watermark(rf->engine, topic, (uint32_t)part, want,
                                                          &hw);
            }
            pthread_mutex_lock(&rf->mu);
            struct rf_part *p = still(rf, it);
            if (arc) {
                rf_log(rf, arc, "%s-%d: appending %zu bytes at %" PRId64 ": %s", topic, part, whole,
                       it->p.log_end, rt_strerror(arc));
                if (p && arc == RT_E_INVALID_ARGUMENT) { /* diverged: truncate again (RF3) */
                    p->state = RF_TRUNCATE;
                    p->ask_epoch = -2;
                } else if (p) {
                    p->retry_at = now_ms() + RF_BACKOFF_MS;
                }
            } else if (p) {
                p->log_end = end;
                if (hrc == 0 && hw >= 0)
                    p->hw = hw;
            }
            pthread_mutex_unlock(&rf->mu);
        }
    }
    free(frame);
}

static void *source_main(void *arg)
{
    struct rf_source *src = arg;
    struct replica_fetcher *rf = src->rf;
    struct kclient_conn conn = KCLIENT_CONN_INIT;
    uint8_t *abuf = malloc(RF_ARENA_BYTES);
    struct kp_arena a;
    kp_arena_init(&a, abuf, abuf ? RF_ARENA_BYTES : 0);
    struct rf_item *items = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&rf->mu);
    while (!rf->stop) {
        int64_t now = now_ms(), wake = now + RF_MAX_WAIT_MS;
        size_t n = 0, trunc = 0;
        char host[MI_HOST_BYTES_MAX + 1] = "";
        uint16_t port = 0;
        for (size_t i = 0; i < rf->parts_count; i++) {
            struct rf_part *p = &rf->parts[i];
            if (!p->follower || p->leader != src->leader || !p->hw_held || p->port == 0)
                continue;
            if (p->retry_at > now) {
                wake = p->retry_at < wake ? p->retry_at : wake;
                continue;
            }
            if (n == 0) {
                memcpy(host, p->host, sizeof host);
                port = p->port;
            } else if (p->port != port || strcmp(p->host, host) != 0) {
                continue; /* a stale address: the next round */
            }
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                struct rf_item *ni = realloc(items, nc * sizeof(*ni));
                if (!ni)
                    break;
                items = ni;
                cap = nc;
            }
            items[n++] = (struct rf_item){.idx = i, .gen = p->gen, .p = *p};
            trunc += p->state == RF_TRUNCATE;
        }
        if (n == 0 || !abuf) {
            timed_wait(rf, wake - now > 0 ? wake - now : 1);
            continue;
        }
        pthread_mutex_unlock(&rf->mu);
        if (trunc) {
            for (size_t i = 0; i < n; i++)
                if (items[i].p.state == RF_TRUNCATE)
                    truncate_one(rf, &conn, &a, &items[i]);
        } else {
            /* group by topic for one entry per topic in the request */
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && strcmp(items[j - 1].p.topic, items[j].p.topic) > 0;
                     j--) {
                    struct rf_item t = items[j];
                    items[j] = items[j - 1];
                    items[j - 1] = t;
                }
            fetch_all(rf, &conn, &a, items, n);
        }
        pthread_mutex_lock(&rf->mu);
    }
    pthread_mutex_unlock(&rf->mu);
    kclient_conn_close(&conn);
    free(items);
    free(abuf);
    return NULL;
}

/* ---- the table ---- */

/* Under mu: the fetcher thread of `leader`, started on first need. */
static void ensure_source(struct replica_fetcher *rf, int32_t leader)
{
    for (size_t i = 0; i < rf->sources_count; i++)
        if (rf->sources[i]->leader == leader)
            return;
    if (rf->sources_count == RF_SOURCES_MAX)
        return;
    struct rf_source *s = calloc(1, sizeof(*s));
    if (!s)
        return;
    s->rf = rf;
    s->leader = leader;
    if (pthread_create(&s->th, NULL, source_main, s) != 0) {
        free(s);
        return;
    }
    rf->sources[rf->sources_count++] = s;
}

/* Under mu: the table's entry of (topic, partition), added when missing (NULL: no memory). */
static struct rf_part *part_entry(struct replica_fetcher *rf, const char *topic, int32_t partition)
{
    struct rf_part *p = find_part(rf, topic, partition);
    if (p)
        return p;
    struct rf_part *np = realloc(rf->parts, (rf->parts_count + 1) * sizeof(*np));
    if (!np)
        return NULL;
    rf->parts = np;
    p = &rf->parts[rf->parts_count++];
    *p = (struct rf_part){.partition = partition, .leader = -1, .epoch = -1};
    snprintf(p->topic, sizeof p->topic, "%s", topic);
    return p;
}

/* RF5 (interim), at an update: a led partition's held high watermark moves to its log end. */
static void interim_leader_hw(struct replica_fetcher *rf, const struct rf_assignment *a)
{
    pthread_mutex_lock(&rf->mu);
    struct rf_part *held = find_part(rf, a->topic, a->partition);
    bool is_held = held && held->hw_held;
    pthread_mutex_unlock(&rf->mu);
    if (!is_held)
        return; /* unheld: already the log end */
    int64_t hw = -1;
    int rc = rt_partition_set_high_watermark(rf->engine, a->topic, (uint32_t)a->partition,
                                             INT64_MAX, &hw);
    pthread_mutex_lock(&rf->mu);
    struct rf_part *p = rc == 0 ? part_entry(rf, a->topic, a->partition) : NULL;
    if (p) {
        p->hw_held = true;
        p->hw = hw;
    }
    pthread_mutex_unlock(&rf->mu);
}

void replica_fetcher_update(struct replica_fetcher *rf, const struct rf_assignment *a, size_t n,
                            bool metadata_current)
{
    pthread_mutex_lock(&rf->mu);
    bool interim = rf->interim_leader_hw && metadata_current;
    pthread_mutex_unlock(&rf->mu);
    for (size_t i = 0; i < n; i++) {
        /* RF1: the first hold of each local partition (followed, led or leaderless), outside
         * the lock (engine calls) */
        pthread_mutex_lock(&rf->mu);
        struct rf_part *p = find_part(rf, a[i].topic, a[i].partition);
        bool held = p && p->hw_held;
        int64_t ck = hw_checkpoint_get(&rf->ckpt, a[i].topic, a[i].partition);
        pthread_mutex_unlock(&rf->mu);
        if (!held && a[i].leader == rf->node_id && metadata_current)
            continue; /* led, with current metadata: unheld (the log end) is the leader side's */
        if (!held) {
            int64_t hw = -1;
            int rc = rt_partition_set_high_watermark(
                rf->engine, a[i].topic, (uint32_t)a[i].partition, ck > 0 ? ck : 0, &hw);
            pthread_mutex_lock(&rf->mu);
            p = rc == 0 ? part_entry(rf, a[i].topic, a[i].partition) : NULL;
            if (rc && rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION) /* that one: not made locally yet */
                rf_log(rf, rc, "%s-%d: holding the high watermark: %s", a[i].topic, a[i].partition,
                       rt_strerror(rc));
            if (p) {
                p->hw_held = true;
                p->hw = hw;
            }
            pthread_mutex_unlock(&rf->mu);
            if (!p)
                continue;
        }
        if (a[i].leader == rf->node_id && interim)
            interim_leader_hw(rf, &a[i]);
        if (a[i].leader >= 0 && a[i].leader != rf->node_id && strncmp(a[i].topic, "__", 2) != 0) {
            /* RF7: the engine takes replica writes again before the fetcher may make them (a
             * no-op shard call when it already follows). */
            int rc = rt_partition_resign(rf->engine, a[i].topic, (uint32_t)a[i].partition);
            if (rc && rc != RT_E_UNKNOWN_TOPIC_OR_PARTITION) {
                pthread_mutex_lock(&rf->mu);
                rf_log(rf, rc, "%s-%d: resigning: %s", a[i].topic, a[i].partition, rt_strerror(rc));
                pthread_mutex_unlock(&rf->mu);
            }
        }
    }
    pthread_mutex_lock(&rf->mu);
    rf->current = metadata_current;
    for (size_t k = 0; k < rf->parts_count; k++) {
        struct rf_part *p = &rf->parts[k];
        const struct rf_assignment *as = NULL;
        for (size_t i = 0; i < n && !as; i++)
            if (a[i].partition == p->partition && strcmp(a[i].topic, p->topic) == 0)
                as = &a[i];
        bool follow = as && as->leader >= 0 && as->leader != rf->node_id;
        p->led = as && as->leader == rf->node_id;
        if (!follow) {
            if (p->follower)
                p->gen++;
            p->follower = false;
            p->leader = as ? as->leader : -1;
            p->epoch = as ? as->leader_epoch : -1;
            continue;
        }
        bool moved = !p->follower || p->leader != as->leader || p->epoch != as->leader_epoch;
        bool readdr = p->port != as->port || strcmp(p->host, as->host) != 0;
        if (moved) { /* RF2: a new leader or epoch: truncate first */
            p->gen++;
            p->follower = true;
            p->leader = as->leader;
            p->epoch = as->leader_epoch;
            p->state = RF_TRUNCATE;
            p->ask_epoch = -2;
            p->retry_at = 0;
        }
        if (readdr) {
            memcpy(p->host, as->host, sizeof p->host);
            p->port = as->port;
            p->retry_at = 0;
        }
        if (moved || readdr)
            ensure_source(rf, as->leader);
    }
    pthread_cond_broadcast(&rf->cv);
    pthread_mutex_unlock(&rf->mu);
}

int replica_fetcher_start(rt_engine *engine, int32_t node_id, const char *dir, unsigned interval_ms,
                          struct replica_fetcher **out, char *err, size_t err_len)
{
    *out = NULL;
    struct replica_fetcher *rf = calloc(1, sizeof(*rf));
    if (!rf)
        return -ENOMEM;
    size_t bad = 0;
    int rc = hw_checkpoint_load(dir, &rf->ckpt, &bad);
    if (rc) {
        if (rc == RT_E_CORRUPT)
            snprintf(err, err_len, "%s/%s: line %zu is not a checkpoint line", dir,
                     HW_CHECKPOINT_FILE, bad);
        else
            snprintf(err, err_len, "%s/%s: %s", dir, HW_CHECKPOINT_FILE, strerror(-rc));
        free(rf);
        return rc;
    }
    pthread_mutex_init(&rf->mu, NULL);
    pthread_cond_init(&rf->cv, NULL);
    rf->engine = engine;
    rf->node_id = node_id;
    snprintf(rf->dir, sizeof rf->dir, "%s", dir);
    rf->interval_ms = interval_ms ? interval_ms : RF_CHECKPOINT_MS;
    rf->interim_leader_hw = true;
    rc = pthread_create(&rf->ckpt_th, NULL, ckpt_main, rf);
    if (rc) {
        hw_checkpoint_free(&rf->ckpt);
        pthread_mutex_destroy(&rf->mu);
        pthread_cond_destroy(&rf->cv);
        free(rf);
        return -rc;
    }
    *out = rf;
    return 0;
}

void replica_fetcher_stop(struct replica_fetcher *rf)
{
    if (!rf)
        return;
    pthread_mutex_lock(&rf->mu);
    rf->stop = true;
    pthread_cond_broadcast(&rf->cv);
    pthread_mutex_unlock(&rf->mu);
    pthread_join(rf->ckpt_th, NULL);
    for (size_t i = 0; i < rf->sources_count; i++) {
        pthread_join(rf->sources[i]->th, NULL);
        free(rf->sources[i]);
    }
    ckpt_write(rf); /* the clean shutdown's checkpoint */
    hw_checkpoint_free(&rf->ckpt);
    free(rf->parts);
    pthread_mutex_destroy(&rf->mu);
    pthread_cond_destroy(&rf->cv);
    free(rf);
}

void replica_fetcher_set_interim_leader_hw(struct replica_fetcher *rf, bool on)
{
    pthread_mutex_lock(&rf->mu);
    rf->interim_leader_hw = on;
    pthread_mutex_unlock(&rf->mu);
}

void replica_fetcher_leader_hw(struct replica_fetcher *rf, const char *topic, int32_t partition,
                               int64_t hw)
{
    if (!rf)
        return;
    pthread_mutex_lock(&rf->mu);
    /* a led partition RF1 left unheld is the leader side's from the start: its entry is made
     * here, held (the engine holds the leader side's high watermark) */
    struct rf_part *p = part_entry(rf, topic, partition);
    if (p && (!p->hw_held || hw > p->hw)) { /* never lowered */
        p->hw_held = true;
        p->hw = hw;
    }
    pthread_mutex_unlock(&rf->mu);
}
