/*
 * replica_state.c — the leader side of Kafka's ISR replication (replica_state.h RS1-RS5): the
 * pure pieces (a follower's fetch state, the high watermark, the ISR plan) and the replica
 * thread that hands leader epochs and high watermarks to the engine, completes parked acks=all
 * answers and sends ISR changes to the controller. The handlers' entry points only take the
 * table's mutex for a few field updates; every engine call and every wait is the thread's.
 */
#include "tools/kafka/cluster/replica_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/proto/api.h"

#define RS_TICK_MS        50   /* idle tick: lag checks, HW of partitions nobody poked */
#define RS_ALTER_RETRY_MS 2000 /* an ISR change not in the image yet is sent again after it */
#define RS_MIN_INSYNC_KEY "min.insync.replicas"

int64_t rs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- pure pieces ---- */

void rs_follower_fetched(struct rs_follower *f, int64_t fetch_offset, bool at_end,
                         int64_t leader_leo, int64_t now_ms)
{
    /* RS3: Kafka's Replica.updateFetchState. */
    if (at_end || (leader_leo >= 0 && fetch_offset >= leader_leo))
        f->last_caught_up_ms = now_ms;
    else if (f->last_fetch_leader_leo >= 0 && fetch_offset >= f->last_fetch_leader_leo &&
             f->last_fetch_ms > f->last_caught_up_ms)
        f->last_caught_up_ms = f->last_fetch_ms;
    f->leo = fetch_offset;
    f->last_fetch_ms = now_ms;
    f->last_fetch_leader_leo = at_end && fetch_offset > leader_leo ? fetch_offset : leader_leo;
}

static const struct rs_follower *follower_of(const struct rs_follower *f, unsigned fn, int32_t id)
{
    for (unsigned i = 0; i < fn; i++)
        if (f[i].id == id)
            return &f[i];
    return NULL;
}

int64_t rs_high_watermark(const int32_t *isr, unsigned isr_n, int32_t self,
                          const struct rs_follower *f, unsigned fn)
{
    int64_t hw = INT64_MAX; /* the leader's own log end: the engine clamps to it */
    for (unsigned i = 0; i < isr_n; i++) {
        if (isr[i] == self)
            continue;
        const struct rs_follower *r = follower_of(f, fn, isr[i]);
        if (!r || r->leo < 0)
            return -1; /* RS1: unknown holds the HW */
        if (r->leo < hw)
            hw = r->leo;
    }
    return hw;
}

static bool has(const int32_t *ids, unsigned n, int32_t id)
{
    for (unsigned i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

unsigned rs_plan_isr(const int32_t *isr, unsigned isr_n, const int32_t *replicas,
                     unsigned replicas_n, int32_t self, const struct rs_follower *f, unsigned fn,
                     int64_t hw, int64_t now_ms, int64_t lag_ms, int32_t *out)
{
    unsigned n = 0;
    for (unsigned i = 0; i < isr_n; i++) { /* RS4: shrink */
        const struct rs_follower *r = follower_of(f, fn, isr[i]);
        bool lagging = isr[i] != self && (!r || now_ms - r->last_caught_up_ms > lag_ms);
        if (!lagging)
            out[n++] = isr[i];
    }
    if (!has(out, n, self) && n < MI_REPLICAS_MAX)
        out[n++] = self; /* the leader never leaves its own ISR */
    for (unsigned i = 0; i < replicas_n && n < MI_REPLICAS_MAX; i++) { /* RS4: expand */
        if (has(out, n, replicas[i]) || has(isr, isr_n, replicas[i]))
            continue;
        const struct rs_follower *r = follower_of(f, fn, replicas[i]);
        if (r && !r->ineligible && r->leo >= 0 && hw >= 0 && r->leo >= hw &&
            now_ms - r->last_caught_up_ms <= lag_ms)
            out[n++] = replicas[i];
    }
    return n;
}

#define RS_OFFSETS_TOPIC   "__consumer_offsets"  /* led here too (groups in the cluster) */
#define RS_TXN_STATE_TOPIC "__transaction_state" /* and the transaction coordinator's */

/* ---- the table ---- */

struct rs_part {
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition;
    int32_t epoch; /* the image's */
    bool ready;    /* RS2: the engine has the epoch */
    bool live;     /* seen as led in the latest sync */
    int32_t isr[MI_REPLICAS_MAX], replicas[MI_REPLICAS_MAX];
    unsigned isr_n, replicas_n, min_isr;
    struct rs_follower f[MI_REPLICAS_MAX];
    unsigned fn;
    int64_t leo;        /* the leader's log end, as the thread last read it (-1 unknown) */
    uint64_t leo_round; /* the round that read it (RS7) */
    int64_t hw;         /* the high watermark last handed to the engine (-1: none) */
    int64_t alter_sent_ms;
    int32_t alter_isr[MI_REPLICAS_MAX];
    unsigned alter_isr_n;
    int32_t partition_epoch; /* the image's (metadata_image.h MI8) */
    int32_t stale_pe;        /* RS6: refused as stale at this partition epoch (-1: none) */
};

struct rs_waiter {
    struct rs_waiter *next;
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition;
    int64_t need, deadline_ms;
    uint64_t after_round; /* RS7: need -1 waits for the log end of a round past this one */
    unsigned min_isr;
    rs_done_fn done;
    void *ctx;
    int16_t error; /* set when it completes */
};

struct replica_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rs_host host;
    rt_engine *engine;
    int32_t self;
    int64_t lag_ms;
    struct rs_part **parts;
    unsigned parts_n, parts_cap;
    struct rs_waiter *waiters;
    uint64_t round; /* rounds begun (RS7) */
    bool poked, synced_once, stop;
    pthread_t thread;
    int last_error;
    void (*wake)(void *ctx); /* under mu */
    void *wake_ctx;
};

static struct rs_part *find(struct replica_state *rs, const char *topic, int32_t partition)
{
    for (unsigned i = 0; i < rs->parts_n; i++)
        if (rs->parts[i]->partition == partition && strcmp(rs->parts[i]->topic, topic) == 0)
            return rs->parts[i];
    return NULL;
}

void replica_state_set_wake(struct replica_state *rs, void (*fn)(void *ctx), void *ctx)
{
    if (!rs)
        return;
    pthread_mutex_lock(&rs->mu);
    rs->wake = fn;
    rs->wake_ctx = ctx;
    pthread_mutex_unlock(&rs->mu);
}

void replica_state_poke(struct replica_state *rs)
{
    if (!rs)
        return;
    pthread_mutex_lock(&rs->mu);
    rs->poked = true;
    pthread_cond_signal(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
}

/* What the image says of one partition (handlers and sync). */
struct led {
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition, leader, epoch, partition_epoch;
    int32_t isr[MI_REPLICAS_MAX], replicas[MI_REPLICAS_MAX];
    bool ineligible[MI_REPLICAS_MAX]; /* replicas[i] fenced or unregistered */
    unsigned isr_n, replicas_n, min_isr;
};

static unsigned min_isr_of(const struct mi_topic *t)
{
    for (unsigned i = 0; i < t->configs_count; i++)
        if (strcmp(t->keys[i], RS_MIN_INSYNC_KEY) == 0) {
            long v = strtol(t->values[i], NULL, 10);
            return v >= 1 && v <= MI_REPLICAS_MAX ? (unsigned)v : 1;
        }
    return 1;
}

static void fill_led(struct led *l, const struct metadata_image *img, const struct mi_topic *t,
                     int32_t p)
{
    const struct mi_partition *ip = &t->partitions[p];
    memcpy(l->topic, t->name, sizeof l->topic);
    l->partition = p;
    l->leader = ip->leader;
    l->epoch = ip->leader_epoch;
    l->partition_epoch = ip->partition_epoch;
    l->isr_n = ip->isr_count;
    l->replicas_n = ip->replicas_count;
    memcpy(l->isr, ip->isr, sizeof l->isr);
    memcpy(l->replicas, ip->replicas, sizeof l->replicas);
    l->min_isr = min_isr_of(t);
    for (unsigned i = 0; i < ip->replicas_count; i++) {
        const struct mi_broker *b = metadata_image_broker(img, ip->replicas[i]);
        l->ineligible[i] = !b || b->fenced;
    }
}

struct scan {
    int32_t self;
    struct led *l;
    unsigned n, cap;
    bool failed;
};

static void scan_led(void *ctx, const struct metadata_image *img)
{
    struct scan *sc = ctx;
    for (unsigned i = 0; i < img->topics_count; i++) {
        const struct mi_topic *t = img->topics[i];
        if (strncmp(t->name, "__", 2) == 0 && strcmp(t->name, RS_OFFSETS_TOPIC) != 0 &&
            strcmp(t->name, RS_TXN_STATE_TOPIC) != 0)
            continue; /* the engine replicates no other internal topic this way yet */
        for (int32_t p = 0; p < t->partitions_count; p++) {
            if (!t->partitions[p].exists || t->partitions[p].leader != sc->self)
                continue;
            if (sc->n == sc->cap) {
                unsigned cap = sc->cap ? 2 * sc->cap : 16;
                struct led *nl = realloc(sc->l, cap * sizeof(*nl));
                if (!nl) {
                    sc->failed = true;
                    return;
                }
                sc->l = nl;
                sc->cap = cap;
            }
            fill_led(&sc->l[sc->n++], img, t, p);
        }
    }
}

struct lookup {
    const char *topic;
    int32_t partition;
    bool found;
    struct led l;
};

static void lookup_one(void *ctx, const struct metadata_image *img)
{
    struct lookup *lk = ctx;
    const struct mi_topic *t = metadata_image_topic(img, lk->topic);
    if (!t || lk->partition < 0 || lk->partition >= t->partitions_count ||
        !t->partitions[lk->partition].exists)
        return;
    lk->found = true;
    fill_led(&lk->l, img, t, lk->partition);
}

static void reset_followers(struct rs_part *p, int32_t self, int64_t now)
{
    p->fn = 0;
    for (unsigned i = 0; i < p->replicas_n; i++) {
        if (p->replicas[i] == self)
            continue;
        /* RS2: unknown in a new epoch; a member counts as caught up now (Kafka's
         * Replica.resetReplicaState gives ISR members lastCaughtUpTime = now). */
        p->f[p->fn++] = (struct rs_follower){.id = p->replicas[i],
                                             .leo = -1,
                                             .last_caught_up_ms = now,
                                             .last_fetch_ms = 0,
                                             .last_fetch_leader_leo = -1};
    }
}

/* Reads the image's leaderships into the table; returns the parts that need their epoch set
 * (their count in *need_n; the caller frees). */
static void sync_image(struct replica_state *rs)
{
    struct scan sc = {.self = rs->self};
    rs->host.read(rs->host.ctx, scan_led, &sc);
    if (sc.failed) {
        free(sc.l);
        return;
    }
    int64_t now = rs_now_ms();
    pthread_mutex_lock(&rs->mu);
    for (unsigned i = 0; i < rs->parts_n; i++)
        rs->parts[i]->live = false;
    for (unsigned i = 0; i < sc.n; i++) {
        const struct led *l = &sc.l[i];
        struct rs_part *p = find(rs, l->topic, l->partition);
        if (!p) {
            if (rs->parts_n == rs->parts_cap) {
                unsigned cap = rs->parts_cap ? 2 * rs->parts_cap : 16;
                struct rs_part **np = realloc(rs->parts, cap * sizeof(*np));
                if (!np)
                    continue;
                rs->parts = np;
                rs->parts_cap = cap;
            }
            p = calloc(1, sizeof(*p));
            if (!p)
                continue;
            memcpy(p->topic, l->topic, sizeof p->topic);
            p->partition = l->partition;
            p->epoch = -1;
            p->stale_pe = -1;
            rs->parts[rs->parts_n++] = p;
        }
        p->live = true;
        bool new_epoch = p->epoch != l->epoch;
        memcpy(p->isr, l->isr, sizeof p->isr);
        memcpy(p->replicas, l->replicas, sizeof p->replicas);
        p->isr_n = l->isr_n;
        p->replicas_n = l->replicas_n;
        p->min_isr = l->min_isr;
        p->partition_epoch = l->partition_epoch;
        if (new_epoch) {
            p->stale_pe = -1;
            p->epoch = l->epoch;
            p->ready = false;
            p->leo = -1;
            p->hw = -1;
            p->alter_sent_ms = 0;
            p->alter_isr_n = 0;
            reset_followers(p, rs->self, now);
        } else { /* the replicas may have changed: keep known followers, add new ones */
            struct rs_follower old[MI_REPLICAS_MAX];
            unsigned oldn = p->fn;
            memcpy(old, p->f, sizeof old);
            reset_followers(p, rs->self, now);
            for (unsigned k = 0; k < p->fn; k++) {
                const struct rs_follower *o = follower_of(old, oldn, p->f[k].id);
                if (o)
                    p->f[k] = *o;
            }
        }
        for (unsigned k = 0; k < p->fn; k++)
            for (unsigned r = 0; r < l->replicas_n; r++)
                if (l->replicas[r] == p->f[k].id)
                    p->f[k].ineligible = l->ineligible[r];
    }
    unsigned w = 0;
    for (unsigned i = 0; i < rs->parts_n; i++) { /* leaderships gone */
        if (rs->parts[i]->live)
            rs->parts[w++] = rs->parts[i];
        else
            free(rs->parts[i]);
    }
    rs->parts_n = w;
    pthread_mutex_unlock(&rs->mu);
    free(sc.l);
}

struct work {
    char topic[MI_TOPIC_NAME_MAX + 1];
    int32_t partition, epoch, partition_epoch;
    bool ready;
    int64_t hw;
    int32_t isr[MI_REPLICAS_MAX];
    unsigned isr_n;
    bool alter;
};

static void log_once(struct replica_state *rs, const char *what, const char *topic, int32_t p,
                     int rc)
{
    if (rc == rs->last_error)
        return;
    rs->last_error = rc;
    fprintf(stderr, "ringtail serve: replication: %s of %s-%d: %s (%s)\n", what, topic, (int)p,
            rt_strerror(rc), rt_error_detail());
}

/* One round: epochs, log ends, high watermarks, ISR plans, waiters. */
static void round_once(struct replica_state *rs)
{
    pthread_mutex_lock(&rs->mu);
    uint64_t round = ++rs->round; /* RS7: log ends read from here on are this round's */
    unsigned n = rs->parts_n;
    struct work *w = n ? calloc(n, sizeof(*w)) : NULL;
    if (n && !w) {
        pthread_mutex_unlock(&rs->mu);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        struct rs_part *p = rs->parts[i];
        memcpy(w[i].topic, p->topic, sizeof w[i].topic);
        w[i].partition = p->partition;
        w[i].epoch = p->epoch;
        w[i].ready = p->ready;
    }
    pthread_mutex_unlock(&rs->mu);

    /* Engine calls, outside the lock. */
    bool any_moved = false;
    for (unsigned i = 0; i < n; i++) {
        if (!w[i].ready) { /* RS2 */
            int rc = rt_partition_set_leader_epoch(rs->engine, w[i].topic, (uint32_t)w[i].partition,
                                                   w[i].epoch);
            if (rc) {
                log_once(rs, "setting the leader epoch", w[i].topic, w[i].partition, rc);
                continue;
            }
            /* RS1: every led partition's HW is held from now on, one replica too (the follower
             * side may hold one on any local partition, replica_fetcher.h RF1, and nobody else
             * moves it): 0 asks nothing of a partition whose HW is held already (never
             * lowered), and makes one that holds none wait for its ISR's log ends. */
            int64_t held = -1;
            if ((rc = rt_partition_set_high_watermark(rs->engine, w[i].topic,
                                                      (uint32_t)w[i].partition, 0, &held)) != 0) {
                log_once(rs, "holding the high watermark", w[i].topic, w[i].partition, rc);
                continue;
            }
            w[i].ready = true;
        }
        int64_t leo = -1;
        int32_t found = -1;
        if (rt_partition_end_offset_for_epoch(rs->engine, w[i].topic, (uint32_t)w[i].partition,
                                              w[i].epoch, &leo, &found) != 0 ||
            found != w[i].epoch)
            leo = -1;
        pthread_mutex_lock(&rs->mu);
        struct rs_part *p = find(rs, w[i].topic, w[i].partition);
        int64_t hw = -1;
        if (p && p->epoch == w[i].epoch) {
            if (!p->ready) {
                p->ready = true;
                fprintf(stderr,
                        "ringtail serve: replication: leader of %s-%d at epoch %d, ISR of %u\n",
                        p->topic, (int)p->partition, (int)p->epoch, p->isr_n);
            }
            if (leo >= 0) {
                p->leo = leo;
                p->leo_round = round;
            }
            hw = rs_high_watermark(p->isr, p->isr_n, rs->self, p->f, p->fn);
        }
        pthread_mutex_unlock(&rs->mu);
        if (!p)
            continue;
        int64_t hw_out = -1;
        if (hw >= 0) { /* INT64_MAX with the ISR {self}: the engine clamps it to its log end */
            int rc = rt_partition_set_high_watermark(rs->engine, w[i].topic,
                                                     (uint32_t)w[i].partition, hw, &hw_out);
            if (rc) {
                log_once(rs, "setting the high watermark", w[i].topic, w[i].partition, rc);
                hw_out = -1;
            }
        }
        pthread_mutex_lock(&rs->mu);
        p = find(rs, w[i].topic, w[i].partition);
        bool moved = p && p->epoch == w[i].epoch && hw_out > p->hw;
        if (moved)
            p->hw = hw_out;
        /* RS4: the ISR to propose. */
        int64_t now = rs_now_ms();
        if (p && p->ready && p->replicas_n > 1) {
            int32_t out[MI_REPLICAS_MAX];
            unsigned on = rs_plan_isr(p->isr, p->isr_n, p->replicas, p->replicas_n, rs->self, p->f,
                                      p->fn, p->hw, now, rs->lag_ms, out);
            bool same = on == p->isr_n && memcmp(out, p->isr, on * sizeof(int32_t)) == 0;
            bool sent = on == p->alter_isr_n &&
                        memcmp(out, p->alter_isr, on * sizeof(int32_t)) == 0 &&
                        now - p->alter_sent_ms < RS_ALTER_RETRY_MS;
            /* RS6: refused as stale: nothing is sent until the image's partition epoch moves */
            bool stale = p->stale_pe >= 0 && p->stale_pe == p->partition_epoch;
            if (!stale)
                p->stale_pe = -1;
            if (!same && !sent && !stale) {
                w[i].partition_epoch = p->partition_epoch;
                memcpy(w[i].isr, out, on * sizeof(int32_t));
                w[i].isr_n = on;
                w[i].alter = true;
                memcpy(p->alter_isr, out, on * sizeof(int32_t));
                p->alter_isr_n = on;
                p->alter_sent_ms = now;
            }
        }
        pthread_mutex_unlock(&rs->mu);
        if (moved) /* the follower side's checkpoint keeps it */
            rs->host.leader_hw(rs->host.ctx, w[i].topic, w[i].partition, hw_out);
        any_moved |= moved;
    }
    if (any_moved) { /* parked consumer fetches may have something now */
        pthread_mutex_lock(&rs->mu);
        void (*wake)(void *) = rs->wake;
        void *wake_ctx = rs->wake_ctx;
        pthread_mutex_unlock(&rs->mu);
        if (wake)
            wake(wake_ctx);
    }

    /* ISR changes go to the controller (blocking, on this thread only). */
    for (unsigned i = 0; i < n; i++) {
        if (!w[i].alter)
            continue;
        int16_t err = rs->host.alter_partition(rs->host.ctx, w[i].topic, w[i].partition, w[i].epoch,
                                               w[i].partition_epoch, w[i].isr, w[i].isr_n);
        if (err == KAFKA_INVALID_UPDATE_VERSION) { /* RS6: wait for the image, do not resend */
            pthread_mutex_lock(&rs->mu);
            struct rs_part *p = find(rs, w[i].topic, w[i].partition);
            if (p && p->epoch == w[i].epoch) {
                p->stale_pe = w[i].partition_epoch;
                p->alter_isr_n = 0; /* the next plan, on the new image, is sent at once */
            }
            pthread_mutex_unlock(&rs->mu);
        }
        fprintf(stderr,
                "ringtail serve: replication: AlterPartition %s-%d epoch %d to an ISR of %u: %s "
                "(partition epoch %d)\n",
                w[i].topic, (int)w[i].partition, (int)w[i].epoch, w[i].isr_n, kafka_error_name(err),
                (int)w[i].partition_epoch);
    }
    free(w);

    /* RS5: parked answers. */
    struct rs_waiter *done = NULL;
    int64_t now = rs_now_ms();
    pthread_mutex_lock(&rs->mu);
    for (struct rs_waiter **pw = &rs->waiters; *pw;) {
        struct rs_waiter *x = *pw;
        struct rs_part *p = find(rs, x->topic, x->partition);
        int16_t err = -1;
        /* the leadership went (RS5); a new leader epoch while this node stays the leader (the
         * image raises it for an ISR change by a fence, MI6) keeps the wait: the records are
         * still in this log, as Kafka's DelayedProduce waits across ISR changes */
        if (p && x->need < 0 && p->leo >= 0 && p->leo_round > x->after_round)
            x->need = p->leo; /* RS7: a log end read after the wait began */
        if (!p)
            err = KAFKA_NOT_LEADER_OR_FOLLOWER;
        else if (p->ready && x->need >= 0 &&
                 p->hw >= x->need) /* Kafka's checkEnoughReplicasReachOffset */
            err = p->isr_n < x->min_isr ? KAFKA_NOT_ENOUGH_REPLICAS_AFTER_APPEND : KAFKA_NONE;
        else if (now >= x->deadline_ms)
            err = KAFKA_REQUEST_TIMED_OUT;
        if (err < 0) {
            pw = &x->next;
            continue;
        }
        x->error = err;
        *pw = x->next;
        x->next = done;
        done = x;
    }
    pthread_mutex_unlock(&rs->mu);
    while (done) {
        struct rs_waiter *x = done;
        done = x->next;
        x->done(x->ctx, x->error);
        free(x);
    }
}

static void *rs_main(void *arg)
{
    struct replica_state *rs = arg;
    int64_t last_sync = 0;
    for (;;) {
        pthread_mutex_lock(&rs->mu);
        if (!rs->poked && !rs->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += RS_TICK_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&rs->cv, &rs->mu, &ts);
        }
        bool stop = rs->stop;
        rs->poked = false;
        pthread_mutex_unlock(&rs->mu);
        if (stop)
            break;
        int64_t now = rs_now_ms();
        if (now - last_sync >= RS_TICK_MS || !rs->synced_once) {
            sync_image(rs);
            rs->synced_once = true;
            last_sync = now;
        }
        round_once(rs);
    }
    /* RS5: whatever is parked answers NOT_LEADER_OR_FOLLOWER. */
    pthread_mutex_lock(&rs->mu);
    struct rs_waiter *x = rs->waiters;
    rs->waiters = NULL;
    pthread_mutex_unlock(&rs->mu);
    while (x) {
        struct rs_waiter *nx = x->next;
        x->done(x->ctx, KAFKA_NOT_LEADER_OR_FOLLOWER);
        free(x);
        x = nx;
    }
    return NULL;
}

int replica_state_start(const struct rs_host *host, rt_engine *engine, int32_t self,
                        unsigned lag_ms, struct replica_state **out)
{
    struct replica_state *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return -ENOMEM;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    rs->host = *host;
    rs->engine = engine;
    rs->self = self;
    rs->lag_ms = lag_ms ? lag_ms : RS_LAG_TIME_MAX_MS;
    int rc = pthread_create(&rs->thread, NULL, rs_main, rs);
    if (rc) {
        pthread_mutex_destroy(&rs->mu);
        pthread_cond_destroy(&rs->cv);
        free(rs);
        return -rc;
    }
    *out = rs;
    return 0;
}

void replica_state_stop(struct replica_state *rs)
{
    if (!rs)
        return;
    pthread_mutex_lock(&rs->mu);
    rs->stop = true;
    pthread_cond_signal(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
    pthread_join(rs->thread, NULL);
    for (unsigned i = 0; i < rs->parts_n; i++)
        free(rs->parts[i]);
    free(rs->parts);
    pthread_mutex_destroy(&rs->mu);
    pthread_cond_destroy(&rs->cv);
    free(rs);
}

/* ---- the handlers' entry points ---- */

int16_t rs_check(struct replica_state *rs, const char *topic, int32_t partition,
                 int32_t current_leader_epoch, unsigned *isr_n_out, unsigned *min_isr_out)
{
    struct lookup lk = {.topic = topic, .partition = partition};
    rs->host.read(rs->host.ctx, lookup_one, &lk);
    if (!lk.found)
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    if (isr_n_out)
        *isr_n_out = lk.l.isr_n;
    if (min_isr_out)
        *min_isr_out = lk.l.min_isr;
    if (current_leader_epoch >= 0 && current_leader_epoch < lk.l.epoch)
        return KAFKA_FENCED_LEADER_EPOCH;
    if (current_leader_epoch > lk.l.epoch)
        return KAFKA_UNKNOWN_LEADER_EPOCH;
    if (lk.l.leader != rs->self)
        return KAFKA_NOT_LEADER_OR_FOLLOWER;
    pthread_mutex_lock(&rs->mu);
    const struct rs_part *p = find(rs, topic, partition);
    bool ready = p && p->ready && p->epoch == lk.l.epoch; /* RS2 */
    pthread_mutex_unlock(&rs->mu);
    if (!ready) {
        replica_state_poke(rs);
        return KAFKA_NOT_LEADER_OR_FOLLOWER;
    }
    return KAFKA_NONE;
}

int16_t rs_follower_fetch(struct replica_state *rs, const char *topic, int32_t partition,
                          int32_t replica_id, int64_t fetch_offset, bool at_end)
{
    int16_t err = KAFKA_NOT_LEADER_OR_FOLLOWER;
    pthread_mutex_lock(&rs->mu);
    struct rs_part *p = find(rs, topic, partition);
    if (p && p->ready)
        for (unsigned i = 0; i < p->fn; i++)
            if (p->f[i].id == replica_id) {
                rs_follower_fetched(&p->f[i], fetch_offset, at_end, p->leo, rs_now_ms());
                err = KAFKA_NONE;
            }
    rs->poked = true; /* the HW may move */
    pthread_cond_signal(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
    return err;
}

int rs_wait(struct replica_state *rs, const char *topic, int32_t partition, int64_t need,
            int64_t deadline_ms, unsigned min_isr, rs_done_fn done, void *ctx)
{
    struct rs_waiter *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    snprintf(x->topic, sizeof x->topic, "%s", topic);
    x->partition = partition;
    x->need = need;
    x->deadline_ms = deadline_ms;
    x->min_isr = min_isr;
    x->done = done;
    x->ctx = ctx;
    pthread_mutex_lock(&rs->mu);
    if (rs->stop) {
        pthread_mutex_unlock(&rs->mu);
        free(x);
        return -ESHUTDOWN;
    }
    x->after_round = rs->round; /* RS7 (need -1) */
    x->next = rs->waiters;
    rs->waiters = x;
    rs->poked = true;
    pthread_cond_signal(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
    return 0;
}

struct wait_sync {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int16_t error;
};

static void wait_sync_done(void *ctx, int16_t error)
{
    struct wait_sync *y = ctx;
    pthread_mutex_lock(&y->mu);
    y->error = error;
    y->done = true;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
}

int rs_wait_blocking(struct replica_state *rs, const char *topic, int32_t partition, int64_t need,
                     int64_t deadline_ms, unsigned min_isr, int16_t *error_out)
{
    struct wait_sync y = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    int rc = rs_wait(rs, topic, partition, need, deadline_ms, min_isr, wait_sync_done, &y);
    if (rc)
        return rc;
    pthread_mutex_lock(&y.mu); /* RS5: done runs exactly once, at the latest at the deadline */
    while (!y.done)
        pthread_cond_wait(&y.cv, &y.mu);
    pthread_mutex_unlock(&y.mu);
    *error_out = y.error;
    return 0;
}
