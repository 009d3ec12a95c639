/*
 * group_coord.c — the consumer-group coordinator: group membership, generations, protocol
 * selection, the leader's assignment handed out by SyncGroup, session and rebalance timeouts.
 * It owns every group's state in memory; the membership is persisted through an injected store
 * (KG10, the engine's __consumer_offsets, which this file never touches itself). It never
 * blocks and never talks to sockets: the handlers call it on a loop thread under its one mutex.
 * Timers: every call into a group first expires what is due at `now` (gc_tick), and one small
 * timer thread (KG8) runs every group's timers each GROUP_TICK_MS and, when that changed
 * anything, calls the server's wake (net_wake) so parked JoinGroups and SyncGroups are retried.
 * No thread per group.
 *
 * State machine (Kafka's):
 *
 *            first join                      every member (re)joined, or the
 *   Empty ───────────────► PreparingRebalance ─────── rebalance timeout dropped the rest ──┐
 *     ▲                        ▲     │ all members gone                                    │
 *     │ last member leaves /   │     ▼                                                     ▼
 *     │ expires                │   Empty                                        CompletingRebalance
 *     │                        │ join / leave / session expiry                     │  leader's
 *     └────────────────────────┴───────────────────── Stable ◄─────────────────────┘  SyncGroup
 *   Dead: a group the coordinator does not hold (DescribeGroups answers "Dead" for it, as Kafka
 *   for a deleted group). Groups are never deleted here: an Empty group stays (GROUP_COUNT_MAX).
 *
 * Invariants:
 *   KG1  A generation is answered to a member only once every member of that generation has
 *        joined it (or was dropped by the rebalance timeout): all members of a generation see
 *        the same member list, leader and protocol; the generation grows by one per completed
 *        join.
 *   KG2  The chosen protocol is one every member supports (voted by each member's order of
 *        preference); a join whose protocol type differs or which shares no protocol with the
 *        members is INCONSISTENT_GROUP_PROTOCOL (23) and changes nothing.
 *   KG3  JoinGroup v4+ without a member id gets a fresh id with MEMBER_ID_REQUIRED (79) and
 *        joins nothing; only an id the coordinator handed out (pending or a member) may join.
 *   KG4  Only the leader's SyncGroup of the current generation, in CompletingRebalance, sets
 *        assignments; a follower's SyncGroup waits for it and then gets its own (empty when the
 *        leader gave it none). Any other generation is ILLEGAL_GENERATION (22), a rebalance
 *        started meanwhile REBALANCE_IN_PROGRESS (27).
 *   KG5  A member silent for its session timeout (no join, sync, heartbeat or commit) is removed
 *        and the group rebalances; members waiting in a join are not silent. A rebalance not
 *        complete at its deadline (the members' largest rebalance timeout) drops the members
 *        that did not rejoin.
 *   KG6  Results point into coordinator memory and are valid only until group_coord_unlock.
 *   KG7  Bounds: GROUP_COUNT_MAX groups (COORDINATOR_NOT_AVAILABLE), GROUP_MEMBERS_MAX members
 *        (GROUP_MAX_SIZE_REACHED), session timeouts in [group.min.session.timeout.ms,
 *        group.max.session.timeout.ms] (INVALID_SESSION_TIMEOUT, group_coord_options), group ids of 1..GROUP_ID_BYTES_MAX
 *        bytes without NUL (INVALID_GROUP_ID). Out of memory answers COORDINATOR_NOT_AVAILABLE
 *        and changes nothing.
 *   KG8  The timer thread holds the mutex only while it ticks and calls wake without it; it is
 *        stopped (group_coord_timer_stop) before the network it wakes.
 *   KG9  The first rebalance of an Empty group completes no sooner than
 *        group.initial.rebalance.delay.ms after it began, and only at the end of a delay; a
 *        delay during which a new member joined is followed by another, up to max(rebalance
 *        timeout, delay) from the start (Kafka's InitialDelayedJoin), so members starting
 *        together land in one generation. The parked joins wait for that bound and are woken
 *        when the join completes.
 *   KG10 A group's membership is persisted (the store, rt_group_store_metadata: Kafka's
 *        GroupMetadataValue in __consumer_offsets) when its leader's assignment makes it Stable
 *        and when its last member leaves; at start every persisted group is restored, so a
 *        broker restart keeps generations and assignments: a member that heartbeats within
 *        its session timeout keeps its partitions without a rebalance. Expiries the timer
 *        finds are not persisted (after a restart those members expire again).
 *   KG11 Static membership (KIP-345): a JoinGroup v5+ with a group.instance.id needs no
 *        MEMBER_ID_REQUIRED round; one whose instance is a member and carries no member id
 *        replaces that member's id with a new one (the old id is fenced: a JoinGroup,
 *        SyncGroup, Heartbeat or OffsetCommit naming the instance with another member id is
 *        FENCED_INSTANCE_ID, 82) and, while the group is Stable and its subscription is the
 *        same, is answered at once with the current generation, without a rebalance: its
 *        SyncGroup gets the assignment it had. LeaveGroup v0-2 names no instance; v3+ names
 *        members by instance (a member id that is not the instance's is FENCED_INSTANCE_ID).
 *   KG12 A static leader answered at once (KG11) must not assign again (the group is Stable;
 *        a new assignment would be ignored): at JoinGroup v9+ it gets the members and
 *        skip_assignment (KIP-814); before v9 it gets no members and the fenced old id as the
 *        leader, so it takes itself for a follower (Kafka's answer to v0-8).
 *   KG13 DeleteGroups forgets only a group without members (Empty); one with members is
 *        NON_EMPTY_GROUP. OffsetDelete of a group with members is NON_EMPTY_GROUP unless its
 *        protocol type is "consumer", where a partition whose topic a member subscribes to (its
 *        ConsumerProtocolSubscription; unparsable: every topic) is GROUP_SUBSCRIBED_TO_TOPIC.
 *   KG14 A group is forgotten in any state only by group_coord_drop (a cluster node that no longer
 *        leads the group's `__consumer_offsets` partition: handlers/group_cluster.c); a parked
 *        request of a dropped group finds it gone when it is retried and never touches its
 *        memory (parked requests hold only the request, never a pointer into a group).
 */
#include "tools/kafka/group/group_coord.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/proto/api.h"

enum gc_state { GC_EMPTY, GC_PREPARING, GC_COMPLETING, GC_STABLE };

static const char *const gc_state_names[] = {"Empty", "PreparingRebalance", "CompletingRebalance",
                                             "Stable"};

struct gc_protocol {
    char *name;
    uint8_t *meta;
    int32_t meta_len;
};

struct gc_member {
    char *id;
    char *instance_id; /* KG11: group.instance.id of a static member; NULL: dynamic */
    char *prev_id;     /* KG12: the id a static rejoin fenced (the leader a v0-8 answer names) */
    char *client_id;
    int32_t session_ms;
    int32_t rebalance_ms;
    struct gc_protocol *protocols;
    int32_t protocols_count;
    int64_t last_seen_ms;
    bool joined;         /* joined the rebalance in progress (or the current generation) */
    const void *waiter;  /* the parked JoinGroup's slot, NULL when none */
    uint8_t *assignment; /* from the leader's SyncGroup */
    int32_t assignment_len;
    struct gc_member *next;
};

struct gc_pending {
    char *id;
    int64_t expire_ms;
    struct gc_pending *next;
};

struct gc_group {
    char *id;
    enum gc_state state;
    int32_t generation;
    char *protocol_type;
    char *protocol; /* chosen for the current generation */
    char *leader;
    struct gc_member *members;
    int32_t members_count;
    struct gc_pending *pending;
    int64_t rebalance_deadline_ms;
    /* KG9: the first rebalance of an Empty group waits (Kafka's InitialDelayedJoin). */
    int32_t initial_delay_ms; /* group.initial.rebalance.delay.ms */
    int64_t initial_until_ms; /* 0: no initial delay running */
    int64_t initial_hard_ms;  /* no extension past this: start + max(rebalance timeout, delay) */
    bool new_member_added;    /* a member joined during the current delay */
    struct gc_group *next;
};

struct group_coord {
    struct group_coord_options opts;
    group_coord_store_fn store; /* KG10 */
    void *store_ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the timer thread's sleep (monotonic) */
    pthread_t timer;
    bool timer_running;
    bool stopping;
    void (*wake)(void *ctx);
    void *wake_ctx;
    struct gc_group *groups;
    int32_t groups_count;
    uint64_t next_member; /* member ids: "<client id>-<n>" */
};

void group_coord_options_init(struct group_coord_options *o)
{
    *o =
        (struct group_coord_options){.initial_rebalance_delay_ms = GROUP_INITIAL_REBALANCE_DELAY_MS,
                                     .session_timeout_min_ms = GROUP_SESSION_MIN_MS,
                                     .session_timeout_max_ms = GROUP_SESSION_MAX_MS};
}

struct group_coord *group_coord_new(const struct group_coord_options *o)
{
    struct group_coord *gc = calloc(1, sizeof(*gc));
    if (!gc)
        return NULL;
    if (o)
        gc->opts = *o;
    else
        group_coord_options_init(&gc->opts);
    pthread_mutex_init(&gc->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&gc->cv, &ca);
    pthread_condattr_destroy(&ca);
    return gc;
}

static void member_free(struct gc_member *m)
{
    for (int32_t i = 0; i < m->protocols_count; i++) {
        free(m->protocols[i].name);
        free(m->protocols[i].meta);
    }
    free(m->protocols);
    free(m->id);
    free(m->prev_id);
    free(m->instance_id);
    free(m->client_id);
    free(m->assignment);
    free(m);
}

static void group_free(struct gc_group *g)
{
    while (g->members) {
        struct gc_member *m = g->members;
        g->members = m->next;
        member_free(m);
    }
    while (g->pending) {
        struct gc_pending *p = g->pending;
        g->pending = p->next;
        free(p->id);
        free(p);
    }
    free(g->id);
    free(g->protocol_type);
    free(g->protocol);
    free(g->leader);
    free(g);
}

void group_coord_free(struct group_coord *gc)
{
    if (!gc)
        return;
    group_coord_timer_stop(gc);
    pthread_cond_destroy(&gc->cv);
    while (gc->groups) {
        struct gc_group *g = gc->groups;
        gc->groups = g->next;
        group_free(g);
    }
    pthread_mutex_destroy(&gc->mu);
    free(gc);
}

void group_coord_lock(struct group_coord *gc)
{
    pthread_mutex_lock(&gc->mu);
}

void group_coord_unlock(struct group_coord *gc)
{
    pthread_mutex_unlock(&gc->mu);
}

/* ---- helpers ---- */

static bool str_eq(struct kp_str s, const char *c)
{
    return c && s.len >= 0 && strlen(c) == (size_t)s.len && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

static char *str_dup(struct kp_str s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *c = malloc(n + 1);
    if (!c)
        return NULL;
    if (n)
        memcpy(c, s.ptr, n);
    c[n] = 0;
    return c;
}

static struct kp_str kstr(const char *c)
{
    return c ? (struct kp_str){c, (int32_t)strlen(c)} : (struct kp_str){NULL, -1};
}

static bool group_id_ok(struct kp_str id)
{
    return id.len > 0 && id.len <= GROUP_ID_BYTES_MAX && !memchr(id.ptr, 0, (size_t)id.len);
}

static struct gc_group *group_find(struct group_coord *gc, struct kp_str id)
{
    for (struct gc_group *g = gc->groups; g; g = g->next)
        if (str_eq(id, g->id))
            return g;
    return NULL;
}

static struct gc_member *member_find(struct gc_group *g, struct kp_str id)
{
    if (id.len <= 0)
        return NULL;
    for (struct gc_member *m = g->members; m; m = m->next)
        if (str_eq(id, m->id))
            return m;
    return NULL;
}

static struct gc_member *member_by_instance(struct gc_group *g, struct kp_str iid)
{
    if (iid.len <= 0)
        return NULL;
    for (struct gc_member *m = g->members; m; m = m->next)
        if (m->instance_id && str_eq(iid, m->instance_id))
            return m;
    return NULL;
}

/* KG11: a request naming a static member's instance with another member id is fenced. */
static bool instance_fenced(struct gc_group *g, struct kp_str iid, struct kp_str member_id)
{
    struct gc_member *x = member_by_instance(g, iid);
    return x && !str_eq(member_id, x->id);
}

static struct gc_pending **pending_find(struct gc_group *g, struct kp_str id)
{
    if (id.len <= 0)
        return NULL;
    for (struct gc_pending **p = &g->pending; *p; p = &(*p)->next)
        if (str_eq(id, (*p)->id))
            return p;
    return NULL;
}

static void member_remove(struct gc_group *g, struct gc_member *m)
{
    for (struct gc_member **p = &g->members; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    g->members_count--;
    if (g->leader && strcmp(g->leader, m->id) == 0) {
        free(g->leader);
        g->leader = NULL;
    }
    member_free(m);
}

static const struct gc_protocol *member_protocol(const struct gc_member *m, const char *name)
{
    for (int32_t i = 0; i < m->protocols_count; i++)
        if (name && strcmp(m->protocols[i].name, name) == 0)
            return &m->protocols[i];
    return NULL;
}

static bool all_support(const struct gc_group *g, const char *name, const struct gc_member *skip)
{
    for (const struct gc_member *m = g->members; m; m = m->next)
        if (m != skip && !member_protocol(m, name))
            return false;
    return true;
}

/* KG2: each member votes for its most preferred protocol all members support. */
static const char *choose_protocol(const struct gc_group *g)
{
    const char *best = NULL;
    int32_t best_votes = -1;
    const struct gc_member *first = g->members;
    for (int32_t c = 0; first && c < first->protocols_count; c++) {
        const char *cand = first->protocols[c].name;
        if (!all_support(g, cand, NULL))
            continue;
        int32_t votes = 0;
        for (const struct gc_member *m = g->members; m; m = m->next)
            for (int32_t i = 0; i < m->protocols_count; i++)
                if (all_support(g, m->protocols[i].name, NULL)) {
                    votes += strcmp(m->protocols[i].name, cand) == 0;
                    break;
                }
        if (votes > best_votes) {
            best = cand;
            best_votes = votes;
        }
    }
    return best;
}

static void prepare_rebalance(struct gc_group *g, int64_t now)
{
    bool from_empty = g->state == GC_EMPTY;
    int32_t rb = 0;
    for (struct gc_member *m = g->members; m; m = m->next) {
        if (m->rebalance_ms > rb)
            rb = m->rebalance_ms;
        free(m->assignment);
        m->assignment = NULL;
        m->assignment_len = 0;
        if (!m->waiter)
            m->joined = false;
    }
    if (g->state != GC_PREPARING) {
        g->rebalance_deadline_ms = now + rb;
        if (from_empty && g->initial_delay_ms > 0) { /* KG9 */
            g->initial_until_ms = now + g->initial_delay_ms;
            g->initial_hard_ms = now + (rb > g->initial_delay_ms ? rb : g->initial_delay_ms);
            g->new_member_added = false;
            g->rebalance_deadline_ms = g->initial_hard_ms; /* what parked joins wait for */
        }
    }
    g->state = GC_PREPARING;
}

/* Completes the join when every member joined (or `force`: the deadline passed). */
static bool try_complete_join(struct gc_group *g, int64_t now, bool force)
{
    if (g->state != GC_PREPARING)
        return false;
    if (g->initial_until_ms) { /* KG9: only the delay's end completes it */
        if (now < g->initial_until_ms)
            return false;
        if (g->new_member_added && now < g->initial_hard_ms) { /* another delay, bounded */
            g->new_member_added = false;
            int64_t next = now + g->initial_delay_ms;
            g->initial_until_ms = next < g->initial_hard_ms ? next : g->initial_hard_ms;
            return false;
        }
        g->initial_until_ms = 0;
        force = true; /* as Kafka's DelayedJoin completing: who has not joined is dropped */
    }
    if (!force)
        for (struct gc_member *m = g->members; m; m = m->next)
            if (!m->joined)
                return false;
    for (struct gc_member *m = g->members, *next; m; m = next) {
        next = m->next;
        if (!m->joined) /* KG5: did not rejoin in time */
            member_remove(g, m);
    }
    g->generation++;
    free(g->protocol);
    g->protocol = NULL;
    if (!g->members) {
        g->state = GC_EMPTY;
        free(g->leader);
        g->leader = NULL;
        return true;
    }
    const char *p = choose_protocol(g);
    g->protocol = p ? strdup(p) : NULL;
    if (!g->leader)
        g->leader = strdup(g->members->id);
    for (struct gc_member *m = g->members; m; m = m->next)
        m->last_seen_ms = now;
    g->state = GC_COMPLETING;
    return true;
}

/* KG5: the timers, run before every operation on the group. True when something changed. */
static bool gc_tick(struct gc_group *g, int64_t now)
{
    bool changed = false;
    for (struct gc_pending **p = &g->pending; *p;) {
        if ((*p)->expire_ms <= now) {
            struct gc_pending *dead = *p;
            *p = dead->next;
            free(dead->id);
            free(dead);
        } else {
            p = &(*p)->next;
        }
    }
    bool removed = false;
    for (struct gc_member *m = g->members, *next; m; m = next) {
        next = m->next;
        bool waiting = m->waiter && g->state == GC_PREPARING;
        if (!waiting && now - m->last_seen_ms > m->session_ms) {
            member_remove(g, m);
            removed = true;
        }
    }
    if (removed) {
        changed = true;
        if (g->state == GC_STABLE || g->state == GC_COMPLETING)
            prepare_rebalance(g, now);
        if (!g->members && g->state != GC_PREPARING)
            g->state = GC_EMPTY;
    }
    if (g->state == GC_PREPARING)
        changed |= try_complete_join(g, now, now >= g->rebalance_deadline_ms);
    return changed;
}

static bool gc_tick_all(struct group_coord *gc, int64_t now)
{
    bool changed = false;
    for (struct gc_group *g = gc->groups; g; g = g->next)
        changed |= gc_tick(g, now);
    return changed;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* KG8: the one timer thread. Every GROUP_TICK_MS it runs every group's timers; when that
 * changed a group (a member expired, a rebalance completed or timed out) it wakes the parked
 * requests, which then find their answer. It never touches a socket. */
static void *timer_main(void *arg)
{
    struct group_coord *gc = arg;
    pthread_mutex_lock(&gc->mu);
    while (!gc->stopping) {
        bool changed = gc_tick_all(gc, mono_ms());
        if (changed) {
            pthread_mutex_unlock(&gc->mu);
            gc->wake(gc->wake_ctx);
            pthread_mutex_lock(&gc->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)GROUP_TICK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&gc->cv, &gc->mu, &ts);
    }
    pthread_mutex_unlock(&gc->mu);
    return NULL;
}

int group_coord_timer_start(struct group_coord *gc, void (*wake)(void *ctx), void *ctx)
{
    gc->wake = wake;
    gc->wake_ctx = ctx;
    gc->stopping = false;
    int rc = pthread_create(&gc->timer, NULL, timer_main, gc);
    if (rc)
        return -rc;
    gc->timer_running = true;
    return 0;
}

void group_coord_timer_stop(struct group_coord *gc)
{
    if (!gc->timer_running)
        return;
    pthread_mutex_lock(&gc->mu);
    gc->stopping = true;
    pthread_cond_signal(&gc->cv);
    pthread_mutex_unlock(&gc->mu);
    pthread_join(gc->timer, NULL);
    gc->timer_running = false;
}

static bool protocols_compatible(const struct gc_group *g, const struct gc_member *self,
                                 const struct kmsg_join_group_request *q)
{
    if (q->protocol_type.len <= 0 || q->protocols_count <= 0)
        return false;
    bool others = false;
    for (const struct gc_member *m = g->members; m; m = m->next)
        others |= m != self;
    if (!others)
        return true;
    if (!str_eq(q->protocol_type, g->protocol_type))
        return false;
    for (int32_t i = 0; i < q->protocols_count; i++) {
        char name[256];
        struct kp_str n = q->protocols[i].name;
        if (n.len <= 0 || n.len >= (int32_t)sizeof(name))
            continue;
        memcpy(name, n.ptr, (size_t)n.len);
        name[n.len] = 0;
        if (all_support(g, name, self))
            return true;
    }
    return false;
}

/* Copies the join's protocols into the member (replacing its old ones). False: no memory. */
static bool member_set_protocols(struct gc_member *m, const struct kmsg_join_group_request *q)
{
    struct gc_protocol *p = calloc((size_t)q->protocols_count, sizeof(*p));
    if (!p)
        return false;
    for (int32_t i = 0; i < q->protocols_count; i++) {
        p[i].name = str_dup(q->protocols[i].name);
        int32_t len = q->protocols[i].metadata.len > 0 ? q->protocols[i].metadata.len : 0;
        p[i].meta = malloc((size_t)len + 1);
        if (!p[i].name || !p[i].meta) {
            for (int32_t j = 0; j <= i; j++) {
                free(p[j].name);
                free(p[j].meta);
            }
            free(p);
            return false;
        }
        if (len)
            memcpy(p[i].meta, q->protocols[i].metadata.ptr, (size_t)len);
        p[i].meta_len = len;
    }
    for (int32_t i = 0; i < m->protocols_count; i++) {
        free(m->protocols[i].name);
        free(m->protocols[i].meta);
    }
    free(m->protocols);
    m->protocols = p;
    m->protocols_count = q->protocols_count;
    return true;
}

static char *new_member_id(struct group_coord *gc, struct kp_str client_id)
{
    char buf[384];
    int n = client_id.len > 0 ? (client_id.len > 200 ? 200 : client_id.len) : 0;
    snprintf(buf, sizeof(buf), "%.*s-%llu", n, n ? client_id.ptr : "",
             (unsigned long long)++gc->next_member);
    for (char *c = buf; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            *c = '_';
    return strdup(buf);
}

static void fill_join(struct gc_group *g, struct gc_member *m,
                      struct kmsg_join_group_member *members, int32_t cap,
                      struct group_join_result *out)
{
    out->done = true;
    out->resp.error_code = KAFKA_NONE;
    out->resp.generation_id = g->generation;
    out->resp.protocol_name = kstr(g->protocol);
    out->resp.protocol_type = kstr(g->protocol_type);
    out->resp.leader = kstr(g->leader);
    out->resp.member_id = kstr(m->id);
    out->resp.members = NULL;
    out->resp.members_count = 0;
    if (!g->leader || strcmp(g->leader, m->id) != 0) {
        m->waiter = NULL;
        return;
    }
    if (g->members_count > cap) { /* the handler makes room and asks again (m->waiter kept) */
        out->done = false;
        out->deadline_ms = 0;
        out->resp.members_count = g->members_count;
        return;
    }
    m->waiter = NULL;
    int32_t i = 0;
    for (struct gc_member *x = g->members; x; x = x->next, i++) {
        const struct gc_protocol *p = member_protocol(x, g->protocol);
        members[i] = (struct kmsg_join_group_member){
            .member_id = kstr(x->id),
            .group_instance_id = x->instance_id ? kstr(x->instance_id) : (struct kp_str){NULL, -1},
            .metadata = p ? (struct kp_bytes){p->meta, p->meta_len} : (struct kp_bytes){NULL, 0},
        };
    }
    out->resp.members = members;
    out->resp.members_count = i;
}

static void group_persist(struct group_coord *gc, struct gc_group *g);

static void join_error(struct group_join_result *out, int16_t code, struct kp_str member_id)
{
    out->done = true;
    out->resp.error_code = code;
    out->resp.generation_id = -1;
    out->resp.protocol_name = (struct kp_str){NULL, -1}; /* "" before v7 (kdesc KDE4) */
    out->resp.protocol_type = (struct kp_str){NULL, -1};
    out->resp.leader = (struct kp_str){"", 0};
    out->resp.member_id = member_id.len >= 0 ? member_id : (struct kp_str){"", 0};
}

/* The join carries the chosen protocol with the metadata the member has for it. */
static bool same_subscription(const struct gc_group *g, const struct gc_member *m,
                              const struct kmsg_join_group_request *q)
{
    const struct gc_protocol *p = member_protocol(m, g->protocol);
    if (!p || !str_eq(q->protocol_type, g->protocol_type))
        return false;
    for (int32_t i = 0; i < q->protocols_count; i++) {
        struct kp_bytes md = q->protocols[i].metadata;
        int32_t len = md.len > 0 ? md.len : 0;
        if (str_eq(q->protocols[i].name, g->protocol))
            return len == p->meta_len && (len == 0 || memcmp(md.ptr, p->meta, (size_t)len) == 0);
    }
    return false;
}

int32_t group_coord_members_count(struct group_coord *gc, struct kp_str group_id)
{
    struct gc_group *g = group_find(gc, group_id);
    return g ? g->members_count : 0;
}

void group_coord_join(struct group_coord *gc, const struct kmsg_join_group_request *q,
                      int16_t version, const struct kp_str client_id, const void *waiter,
                      int64_t now, struct kmsg_join_group_member *members, int32_t members_cap,
                      struct group_join_result *out)
{
    memset(out, 0, sizeof(*out));
    if (!group_id_ok(q->group_id))
        return join_error(out, KAFKA_INVALID_GROUP_ID, q->member_id);
    if (q->session_timeout_ms < gc->opts.session_timeout_min_ms ||
        q->session_timeout_ms > gc->opts.session_timeout_max_ms)
        return join_error(out, KAFKA_INVALID_SESSION_TIMEOUT, q->member_id);
    if (q->protocol_type.len <= 0 || q->protocols_count <= 0)
        return join_error(out, KAFKA_INCONSISTENT_GROUP_PROTOCOL, q->member_id);
    for (int32_t i = 0; i < q->protocols_count; i++)
        if (q->protocols[i].name.len <= 0 || q->protocols[i].name.len > 255 ||
            memchr(q->protocols[i].name.ptr, 0, (size_t)q->protocols[i].name.len))
            return join_error(out, KAFKA_INCONSISTENT_GROUP_PROTOCOL, q->member_id);
    struct gc_group *g = group_find(gc, q->group_id);
    if (g)
        out->wake |= gc_tick(g, now);
    if (!g) {
        if (q->member_id.len > 0) /* an id from before a restart: rejoin without it */
            return join_error(out, KAFKA_UNKNOWN_MEMBER_ID, q->member_id);
        if (gc->groups_count >= GROUP_COUNT_MAX)
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        g = calloc(1, sizeof(*g));
        if (!g || !(g->id = str_dup(q->group_id))) {
            free(g);
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        }
        g->state = GC_EMPTY;
        g->initial_delay_ms = gc->opts.initial_rebalance_delay_ms;
        g->next = gc->groups;
        gc->groups = g;
        gc->groups_count++;
    }
    struct kp_str iid = version >= 5 ? q->group_instance_id : (struct kp_str){NULL, -1};
    struct gc_member *sm = member_by_instance(g, iid);
    if (sm && q->member_id.len > 0 && !str_eq(q->member_id, sm->id))
        return join_error(out, KAFKA_FENCED_INSTANCE_ID, q->member_id); /* KG11 */
    if (sm && q->member_id.len <= 0) {
        /* KG11: the instance rejoins: a new member id, the old one fenced. */
        char *id = new_member_id(gc, client_id);
        if (!id)
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        if (g->leader && strcmp(g->leader, sm->id) == 0) {
            char *l = strdup(id);
            if (!l) {
                free(id);
                return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
            }
            free(g->leader);
            g->leader = l;
        }
        bool was_leader = g->leader && strcmp(g->leader, id) == 0;
        free(sm->prev_id);
        sm->prev_id = sm->id;
        sm->id = id;
        sm->last_seen_ms = now;
        if (g->state == GC_STABLE && same_subscription(g, sm, q)) { /* no rebalance */
            for (struct gc_member *x = g->members; x; x = x->next)
                if (x->waiter == waiter)
                    x->waiter = NULL;
            sm->waiter = waiter;
            group_persist(gc, g);
            if (was_leader && version < 9) { /* KG12: answered as a follower */
                sm->waiter = NULL;
                out->done = true;
                out->resp.generation_id = g->generation;
                out->resp.protocol_name = kstr(g->protocol);
                out->resp.protocol_type = kstr(g->protocol_type);
                out->resp.leader = kstr(sm->prev_id);
                out->resp.member_id = kstr(sm->id);
                return;
            }
            fill_join(g, sm, members, members_cap, out);
            out->resp.skip_assignment = was_leader; /* KG12, v9+ */
            return;
        }
    }
    struct gc_member *m = sm ? sm : member_find(g, q->member_id);
    struct gc_pending **pend = m ? NULL : pending_find(g, q->member_id);
    if (!m && !pend && q->member_id.len > 0)
        return join_error(out, KAFKA_UNKNOWN_MEMBER_ID, q->member_id);
    if (!protocols_compatible(g, m, q))
        return join_error(out, KAFKA_INCONSISTENT_GROUP_PROTOCOL, q->member_id);
    if (!m && g->members_count >= GROUP_MEMBERS_MAX)
        return join_error(out, KAFKA_GROUP_MAX_SIZE_REACHED, q->member_id);
    if (!m && !pend && version >= 4 && iid.len <= 0) { /* KG3 (a static member needs no id) */
        struct gc_pending *p = calloc(1, sizeof(*p));
        char *id = new_member_id(gc, client_id);
        if (!p || !id) {
            free(p);
            free(id);
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        }
        p->id = id;
        p->expire_ms = now + q->session_timeout_ms;
        p->next = g->pending;
        g->pending = p;
        return join_error(out, KAFKA_MEMBER_ID_REQUIRED, kstr(id));
    }
    bool fresh = !m;
    if (fresh) {
        m = calloc(1, sizeof(*m));
        char *id = pend ? (*pend)->id : new_member_id(gc, client_id);
        if (!m || !id || !(m->client_id = str_dup(client_id)) || !member_set_protocols(m, q)) {
            if (!pend)
                free(id);
            if (m)
                free(m->client_id);
            free(m);
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        }
        if (pend) {
            struct gc_pending *p = *pend;
            *pend = p->next;
            free(p);
        }
        m->id = id;
        if (iid.len > 0 && !(m->instance_id = str_dup(iid))) {
            member_free(m);
            return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
        }
        m->next = g->members;
        g->members = m;
        g->members_count++;
        if (g->members_count == 1) { /* the first member sets the type (kept while Empty) */
            char *t = str_dup(q->protocol_type);
            if (t) {
                free(g->protocol_type);
                g->protocol_type = t;
            }
        }
    } else if (!member_set_protocols(m, q)) {
        return join_error(out, KAFKA_COORDINATOR_NOT_AVAILABLE, q->member_id);
    }
    m->session_ms = q->session_timeout_ms;
    m->rebalance_ms = q->rebalance_timeout_ms > GROUP_REBALANCE_MAX_MS ? GROUP_REBALANCE_MAX_MS
                      : q->rebalance_timeout_ms > 0                    ? q->rebalance_timeout_ms
                                                                       : q->session_timeout_ms;
    for (struct gc_member *x = g->members; x; x = x->next)
        if (x->waiter == waiter)
            x->waiter = NULL; /* a slot reused after its connection closed */
    m->last_seen_ms = now;
    m->joined = true;
    m->waiter = waiter;
    if (fresh)
        g->new_member_added = true; /* KG9: extends a running initial delay */
    if (g->state != GC_PREPARING) {
        prepare_rebalance(g, now);
        out->wake = true; /* followers waiting in SyncGroup learn of the rebalance */
    }
    if (try_complete_join(g, now, false)) {
        out->wake = true;
        fill_join(g, m, members, members_cap, out);
        return;
    }
    out->done = false;
    out->deadline_ms = g->rebalance_deadline_ms;
}

void group_coord_join_poll(struct group_coord *gc, const struct kmsg_join_group_request *q,
                           const void *waiter, bool expired, int64_t now,
                           struct kmsg_join_group_member *members, int32_t members_cap,
                           struct group_join_result *out)
{
    memset(out, 0, sizeof(*out));
    struct gc_group *g = group_find(gc, q->group_id);
    if (!g)
        return join_error(out, KAFKA_UNKNOWN_MEMBER_ID, q->member_id);
    out->wake |= gc_tick(g, now);
    struct gc_member *m = NULL;
    for (struct gc_member *x = g->members; x; x = x->next)
        if (x->waiter == waiter)
            m = x;
    if (!m) /* dropped meanwhile */
        return join_error(out, KAFKA_UNKNOWN_MEMBER_ID, q->member_id);
    if (g->state == GC_COMPLETING || g->state == GC_STABLE)
        return fill_join(g, m, members, members_cap, out);
    if (expired) { /* cannot happen past the deadline (gc_tick completed it); answer anyway */
        m->waiter = NULL;
        return join_error(out, KAFKA_REBALANCE_IN_PROGRESS, kstr(m->id));
    }
    out->done = false;
    out->deadline_ms = g->rebalance_deadline_ms;
}

void group_coord_sync(struct group_coord *gc, const struct kmsg_sync_group_request *q, bool retry,
                      bool expired, int64_t now, struct group_sync_result *out)
{
    memset(out, 0, sizeof(*out));
    out->done = true;
    out->resp.assignment = (struct kp_bytes){(const uint8_t *)"", 0};
    struct gc_group *g = group_id_ok(q->group_id) ? group_find(gc, q->group_id) : NULL;
    if (!group_id_ok(q->group_id)) {
        out->resp.error_code = KAFKA_INVALID_GROUP_ID;
        return;
    }
    if (g)
        out->wake |= gc_tick(g, now);
    if (g && instance_fenced(g, q->group_instance_id, q->member_id)) {
        out->resp.error_code = KAFKA_FENCED_INSTANCE_ID; /* KG11 */
        return;
    }
    struct gc_member *m = g ? member_find(g, q->member_id) : NULL;
    if (!m) {
        out->resp.error_code = KAFKA_UNKNOWN_MEMBER_ID;
        return;
    }
    m->last_seen_ms = now;
    if (q->generation_id != g->generation) {
        out->resp.error_code = KAFKA_ILLEGAL_GENERATION;
        return;
    }
    /* v5 (KIP-559): a protocol type or name the group does not have. */
    if ((q->protocol_type.len >= 0 && !str_eq(q->protocol_type, g->protocol_type)) ||
        (q->protocol_name.len >= 0 && !str_eq(q->protocol_name, g->protocol))) {
        out->resp.error_code = KAFKA_INCONSISTENT_GROUP_PROTOCOL;
        return;
    }
    if (g->state == GC_PREPARING || g->state == GC_EMPTY) {
        out->resp.error_code = KAFKA_REBALANCE_IN_PROGRESS;
        return;
    }
    if (g->state == GC_COMPLETING && !retry && g->leader && strcmp(g->leader, m->id) == 0) {
        /* KG4: the leader's assignment; all or nothing. */
        uint8_t **copies =
            q->assignments_count > 0 ? calloc((size_t)q->assignments_count, sizeof(*copies)) : NULL;
        if (q->assignments_count > 0 && !copies) {
            out->resp.error_code = KAFKA_COORDINATOR_NOT_AVAILABLE;
            return;
        }
        for (int32_t i = 0; i < q->assignments_count; i++) {
            int32_t len =
                q->assignments[i].assignment.len > 0 ? q->assignments[i].assignment.len : 0;
            copies[i] = malloc((size_t)len + 1);
            if (!copies[i]) {
                for (int32_t j = 0; j < i; j++)
                    free(copies[j]);
                free(copies);
                out->resp.error_code = KAFKA_COORDINATOR_NOT_AVAILABLE;
                return;
            }
            if (len)
                memcpy(copies[i], q->assignments[i].assignment.ptr, (size_t)len);
        }
        for (int32_t i = 0; i < q->assignments_count; i++) {
            struct gc_member *x = member_find(g, q->assignments[i].member_id);
            if (!x) {
                free(copies[i]);
                continue;
            }
            free(x->assignment);
            x->assignment = copies[i];
            x->assignment_len =
                q->assignments[i].assignment.len > 0 ? q->assignments[i].assignment.len : 0;
        }
        free(copies);
        g->state = GC_STABLE;
        out->wake = true;
        group_persist(gc, g); /* KG10 */
    }
    if (g->state == GC_STABLE) {
        if (m->assignment)
            out->resp.assignment = (struct kp_bytes){m->assignment, m->assignment_len};
        out->resp.protocol_type = kstr(g->protocol_type);
        out->resp.protocol_name = kstr(g->protocol);
        return;
    }
    /* A follower before the leader's SyncGroup: wait (at most a session timeout). */
    if (expired) {
        out->resp.error_code = KAFKA_REBALANCE_IN_PROGRESS;
        return;
    }
    out->done = false;
    out->deadline_ms = now + m->session_ms;
}

int16_t group_coord_heartbeat(struct group_coord *gc, const struct kmsg_heartbeat_request *q,
                              int64_t now, bool *wake)
{
    if (!group_id_ok(q->group_id))
        return KAFKA_INVALID_GROUP_ID;
    struct gc_group *g = group_find(gc, q->group_id);
    if (!g)
        return KAFKA_UNKNOWN_MEMBER_ID;
    *wake |= gc_tick(g, now);
    if (instance_fenced(g, q->group_instance_id, q->member_id))
        return KAFKA_FENCED_INSTANCE_ID; /* KG11 */
    struct gc_member *m = member_find(g, q->member_id);
    if (!m)
        return KAFKA_UNKNOWN_MEMBER_ID;
    m->last_seen_ms = now;
    if (g->state == GC_PREPARING)
        return KAFKA_REBALANCE_IN_PROGRESS;
    if (q->generation_id != g->generation)
        return KAFKA_ILLEGAL_GENERATION;
    return KAFKA_NONE;
}

int16_t group_coord_leave(struct group_coord *gc, struct kp_str group_id,
                          const struct kmsg_leave_group_member *members, int32_t count,
                          int16_t *errors, int64_t now, bool *wake)
{
    if (!group_id_ok(group_id))
        return KAFKA_INVALID_GROUP_ID;
    struct gc_group *g = group_find(gc, group_id);
    if (g)
        *wake |= gc_tick(g, now);
    bool removed = false;
    for (int32_t i = 0; i < count; i++) {
        const struct kmsg_leave_group_member *x = &members[i];
        struct gc_member *m = NULL;
        struct gc_pending **pend = NULL;
        errors[i] = KAFKA_UNKNOWN_MEMBER_ID;
        if (!g)
            continue;
        if (x->group_instance_id.len > 0) { /* KG11: by instance */
            m = member_by_instance(g, x->group_instance_id);
            if (m && x->member_id.len > 0 && !str_eq(x->member_id, m->id)) {
                errors[i] = KAFKA_FENCED_INSTANCE_ID;
                continue;
            }
        } else if (!(m = member_find(g, x->member_id))) {
            pend = pending_find(g, x->member_id);
        }
        if (pend) { /* a member id handed out by MEMBER_ID_REQUIRED, not joined yet */
            struct gc_pending *p = *pend;
            *pend = p->next;
            free(p->id);
            free(p);
            errors[i] = KAFKA_NONE;
            continue;
        }
        if (!m)
            continue;
        member_remove(g, m);
        errors[i] = KAFKA_NONE;
        removed = true;
    }
    if (!removed)
        return KAFKA_NONE;
    *wake = true;
    if (g->state == GC_STABLE || g->state == GC_COMPLETING)
        prepare_rebalance(g, now);
    if (!g->members && g->state != GC_PREPARING)
        g->state = GC_EMPTY;
    (void)try_complete_join(g, now, false);
    if (g->state == GC_EMPTY)
        group_persist(gc, g); /* KG10: a restart must not bring its members back */
    return KAFKA_NONE;
}

int16_t group_coord_commit_check(struct group_coord *gc, struct kp_str group_id, int32_t generation,
                                 struct kp_str member_id, struct kp_str instance_id, int64_t now,
                                 bool *wake)
{
    struct gc_group *g = group_find(gc, group_id);
    if (g)
        *wake |= gc_tick(g, now);
    if (g && instance_fenced(g, instance_id, member_id))
        return KAFKA_FENCED_INSTANCE_ID; /* KG11 */
    if (generation < 0 && member_id.len <= 0)
        return !g || g->state == GC_EMPTY ? KAFKA_NONE : KAFKA_UNKNOWN_MEMBER_ID;
    if (!g)
        return KAFKA_ILLEGAL_GENERATION; /* no such generation (membership is forgotten on a
                                            restart: the members rejoin) */
    struct gc_member *m = member_find(g, member_id);
    if (!m)
        return KAFKA_UNKNOWN_MEMBER_ID;
    m->last_seen_ms = now;
    if (generation != g->generation)
        return KAFKA_ILLEGAL_GENERATION;
    if (g->state == GC_COMPLETING)
        return KAFKA_REBALANCE_IN_PROGRESS;
    return KAFKA_NONE;
}

void group_coord_set_store(struct group_coord *gc, group_coord_store_fn fn, void *ctx)
{
    gc->store = fn;
    gc->store_ctx = ctx;
}

/* KG10: the group's membership to the store, as Kafka's storeGroup writes it. */
static void group_persist(struct group_coord *gc, struct gc_group *g)
{
    if (!gc->store)
        return;
    struct rt_group_member *ms =
        g->members_count ? calloc((size_t)g->members_count, sizeof(*ms)) : NULL;
    if (g->members_count && !ms)
        return; /* out of memory: a restart finds the previous generation (KG10) */
    size_t i = 0;
    for (struct gc_member *m = g->members; m; m = m->next, i++) {
        const struct gc_protocol *p = member_protocol(m, g->protocol);
        ms[i] = (struct rt_group_member){.member_id = m->id,
                                         .group_instance_id = m->instance_id,
                                         .client_id = m->client_id ? m->client_id : "",
                                         .client_host = "",
                                         .rebalance_timeout_ms = m->rebalance_ms,
                                         .session_timeout_ms = m->session_ms,
                                         .subscription = p ? p->meta : NULL,
                                         .subscription_len = p ? (size_t)p->meta_len : 0,
                                         .assignment = m->assignment,
                                         .assignment_len =
                                             m->assignment ? (size_t)m->assignment_len : 0};
    }
    struct rt_group_metadata md = {.protocol_type = g->protocol_type ? g->protocol_type : "",
                                   .generation = g->generation,
                                   .protocol = g->protocol,
                                   .leader = g->leader,
                                   .current_state_timestamp_ms = -1,
                                   .members = ms,
                                   .members_count = i};
    (void)gc->store(gc->store_ctx, g->id, &md);
    free(ms);
}

int group_coord_restore(struct group_coord *gc, const char *group,
                        const struct rt_group_metadata *md, int64_t now)
{
    struct kp_str id = kstr(group);
    if (!group_id_ok(id))
        return -EINVAL;
    if (group_find(gc, id))
        return -EEXIST;
    if (gc->groups_count >= GROUP_COUNT_MAX)
        return -ENOSPC; /* KG7: the rest stay in the engine, their offsets listed (KH3) */
    struct gc_group *g = calloc(1, sizeof(*g));
    if (!g || !(g->id = strdup(group)) || !(g->protocol_type = strdup(md->protocol_type))) {
        if (g)
            free(g->id);
        free(g);
        return -ENOMEM;
    }
    g->initial_delay_ms = gc->opts.initial_rebalance_delay_ms;
    g->generation = md->generation;
    bool stable = md->members_count > 0 && md->protocol && md->leader;
    for (size_t i = 0; stable && i < md->members_count; i++) {
        const struct rt_group_member *rm = &md->members[i];
        struct gc_member *m = calloc(1, sizeof(*m));
        struct gc_protocol *p = calloc(1, sizeof(*p));
        if (!m || !p || !(m->id = strdup(rm->member_id)) ||
            !(m->client_id = strdup(rm->client_id)) || !(p->name = strdup(md->protocol)) ||
            !(p->meta = malloc(rm->subscription_len + 1)) ||
            !(m->assignment = malloc(rm->assignment_len + 1))) {
            if (p) {
                free(p->name);
                free(p->meta);
            }
            free(p);
            if (m)
                member_free(m);
            group_free(g);
            return -ENOMEM;
        }
        if (rm->group_instance_id && !(m->instance_id = strdup(rm->group_instance_id))) {
            free(p->name);
            free(p->meta);
            free(p);
            member_free(m);
            group_free(g);
            return -ENOMEM;
        }
        if (rm->subscription_len)
            memcpy(p->meta, rm->subscription, rm->subscription_len);
        p->meta_len = (int32_t)rm->subscription_len;
        if (rm->assignment_len)
            memcpy(m->assignment, rm->assignment, rm->assignment_len);
        m->assignment_len = (int32_t)rm->assignment_len;
        m->protocols = p;
        m->protocols_count = 1;
        m->session_ms = rm->session_timeout_ms;
        m->rebalance_ms =
            rm->rebalance_timeout_ms > 0 ? rm->rebalance_timeout_ms : rm->session_timeout_ms;
        m->last_seen_ms = now; /* a full session from the restart (as Kafka's load) */
        m->joined = true;
        m->next = g->members;
        g->members = m;
        g->members_count++;
    }
    if (stable && (!(g->protocol = strdup(md->protocol)) || !(g->leader = strdup(md->leader)))) {
        group_free(g);
        return -ENOMEM;
    }
    g->state = stable ? GC_STABLE : GC_EMPTY;
    g->next = gc->groups;
    gc->groups = g;
    gc->groups_count++;
    return 0;
}

bool group_coord_holds(struct group_coord *gc, struct kp_str group_id)
{
    return group_find(gc, group_id) != NULL;
}

int32_t group_coord_list(struct group_coord *gc, int64_t now, struct kmsg_list_groups_group *out,
                         int32_t cap)
{
    gc_tick_all(gc, now);
    int32_t n = 0;
    for (struct gc_group *g = gc->groups; g; g = g->next, n++)
        if (n < cap)
            out[n] = (struct kmsg_list_groups_group){
                .group_id = kstr(g->id),
                .protocol_type = g->protocol_type ? kstr(g->protocol_type) : (struct kp_str){"", 0},
                .group_state = kstr(gc_state_names[g->state]),
            };
    return n;
}

int32_t group_coord_describe(struct group_coord *gc, struct kp_str group_id, int64_t now,
                             struct kmsg_describe_groups_group *out,
                             struct kmsg_describe_groups_member *members, int32_t cap)
{
    memset(out, 0, sizeof(*out));
    out->group_id = group_id;
    out->protocol_type = (struct kp_str){"", 0};
    out->protocol_data = (struct kp_str){"", 0};
    if (!group_id_ok(group_id)) {
        out->error_code = KAFKA_INVALID_GROUP_ID;
        out->group_state = (struct kp_str){"", 0};
        return 0;
    }
    struct gc_group *g = group_find(gc, group_id);
    if (!g) {
        out->group_state = kstr("Dead");
        return 0;
    }
    (void)gc_tick(g, now); /* the timer thread wakes what this changed within a tick */
    out->group_state = kstr(gc_state_names[g->state]);
    if (g->protocol_type)
        out->protocol_type = kstr(g->protocol_type);
    if (g->protocol && g->state == GC_STABLE)
        out->protocol_data = kstr(g->protocol);
    if (g->members_count > cap)
        return g->members_count;
    int32_t i = 0;
    for (struct gc_member *m = g->members; m; m = m->next, i++) {
        const struct gc_protocol *p = member_protocol(m, g->protocol);
        members[i] = (struct kmsg_describe_groups_member){
            .member_id = kstr(m->id),
            .group_instance_id = kstr(m->instance_id),
            .client_id = kstr(m->client_id),
            .client_host = {"", 0},
            .member_metadata = p ? (struct kp_bytes){p->meta, p->meta_len}
                                 : (struct kp_bytes){(const uint8_t *)"", 0},
            .member_assignment = m->assignment ? (struct kp_bytes){m->assignment, m->assignment_len}
                                               : (struct kp_bytes){(const uint8_t *)"", 0},
        };
    }
    out->members = members;
    out->members_count = i;
    return i;
}

/* ---- DeleteGroups and OffsetDelete (KG13) ---- */

int32_t group_coord_drop(struct group_coord *gc, bool (*pick)(void *ctx, const char *group),
                         void *ctx)
{
    int32_t dropped = 0;
    for (struct gc_group **pp = &gc->groups; *pp;) {
        struct gc_group *g = *pp;
        if (!pick(ctx, g->id)) {
            pp = &g->next;
            continue;
        }
        *pp = g->next; /* KG14: whatever state it was in, another node coordinates it now */
        gc->groups_count--;
        group_free(g);
        dropped++;
    }
    return dropped;
}

int16_t group_coord_delete(struct group_coord *gc, struct kp_str group_id, int64_t now, bool *held)
{
    *held = false;
    if (!group_id_ok(group_id))
        return KAFKA_INVALID_GROUP_ID;
    for (struct gc_group **pp = &gc->groups; *pp; pp = &(*pp)->next) {
        struct gc_group *g = *pp;
        if (!str_eq(group_id, g->id))
            continue;
        *held = true;
        (void)gc_tick(g, now);
        if (g->members_count > 0 || g->state != GC_EMPTY)
            return KAFKA_NON_EMPTY_GROUP;
        *pp = g->next; /* Dead: forgotten */
        gc->groups_count--;
        group_free(g);
        return KAFKA_NONE;
    }
    return KAFKA_NONE;
}

int16_t group_coord_offset_delete_check(struct group_coord *gc, struct kp_str group_id, int64_t now,
                                        bool *held)
{
    *held = false;
    if (!group_id_ok(group_id))
        return KAFKA_INVALID_GROUP_ID;
    struct gc_group *g = group_find(gc, group_id);
    if (!g)
        return KAFKA_NONE;
    *held = true;
    (void)gc_tick(g, now);
    if (g->members_count > 0 && !(g->protocol_type && strcmp(g->protocol_type, "consumer") == 0))
        return KAFKA_NON_EMPTY_GROUP;
    return KAFKA_NONE;
}

/* Does a ConsumerProtocolSubscription (version i16, topics [STRING], ...) name `topic`? An
 * unparsable one names every topic (Kafka's isSubscribedToTopic without subscribedTopics). */
static bool subscription_names(const uint8_t *p, int32_t len, struct kp_str topic)
{
    const uint8_t *end = p + (len > 0 ? len : 0);
    if (end - p < 6)
        return true;
    int32_t n = (int32_t)((uint32_t)p[2] << 24 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 8 | p[5]);
    p += 6;
    if (n < 0)
        return true;
    for (int32_t i = 0; i < n; i++) {
        if (end - p < 2)
            return true;
        int16_t l = (int16_t)((uint16_t)p[0] << 8 | p[1]);
        p += 2;
        if (l < 0 || end - p < l)
            return true;
        if (l == topic.len && (l == 0 || memcmp(p, topic.ptr, (size_t)l) == 0))
            return true;
        p += l;
    }
    return false;
}

bool group_coord_subscribed(struct group_coord *gc, struct kp_str group_id, struct kp_str topic)
{
    struct gc_group *g = group_find(gc, group_id);
    if (!g || g->members_count == 0)
        return false;
    for (struct gc_member *m = g->members; m; m = m->next) {
        const struct gc_protocol *p = member_protocol(m, g->protocol);
        if (!p) {
            for (int32_t i = 0; i < m->protocols_count; i++) /* before a protocol is chosen */
                if (subscription_names(m->protocols[i].meta, m->protocols[i].meta_len, topic))
                    return true;
            continue;
        }
        if (subscription_names(p->meta, p->meta_len, topic))
            return true;
    }
    return false;
}
