/*
 * quorum.c — the metadata quorum on libraft (quorum.h; docs/cluster.md). One thread per quorum
 * runs a private libuv loop that owns the raft instance, its raft_uv disk I/O under
 * DATA_DIR/__cluster_metadata/ and its TCP transport (CQ1). Other threads talk to it only through
 * the proposal queue (a mutex, a list, and a uv_async wake-up) and the status atomics the loop
 * publishes every QUORUM_STATUS_MS and after each apply.
 *
 * Life of a proposal (CQ3): quorum_propose copies the bytes into a raft_malloc'ed buffer and
 * queues it → the loop's async callback drains the queue and raft_apply()s each one (not the
 * leader: completed at once with QUORUM_E_NOT_CONTROLLER, the buffer freed) → raft replicates,
 * commits, applies it through fsm_apply (the owner's `apply`) and then calls apply_done with the
 * index → the owner's `done`. raft_close completes whatever raft still holds with RAFT_SHUTDOWN.
 *
 * Entries are frames (CQ5, docs/format.md L.1): u32 big-endian record length, the record, zeros to
 * a multiple of 8. It never decodes a record and never calls into raft from another thread.
 */
#include "tools/kafka/cluster/quorum.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <uv.h>

#define QUORUM_STATUS_MS 10 /* how stale quorum_status may be */

const char *quorum_strerror(int rc)
{
    switch (rc) {
    case 0:
        return "ok";
    case QUORUM_E_NOT_CONTROLLER:
        return "not the controller (this member is not the raft leader)";
    case QUORUM_E_LEADERSHIP_LOST:
        return "leadership lost before the record was committed (outcome unknown)";
    case QUORUM_E_SHUTDOWN:
        return "the quorum is shutting down";
    case QUORUM_E_TIMEOUT:
        return "timed out waiting for the record to commit (outcome unknown)";
    case QUORUM_E_BUSY:
        return "too many proposals queued";
    case QUORUM_E_INVALID:
        return "invalid quorum options";
    case QUORUM_E_RAFT:
        return "the raft library refused";
    default:
        return rc < 0 && rc > -4096 ? strerror(-rc) : "unknown quorum error";
    }
}

/* ---- controller.quorum.voters ---------------------------------------------------------- */

static int bad(char *err, size_t err_len, const char *fmt, size_t at, const char *what)
{
    if (err && err_len)
        snprintf(err, err_len, fmt, at, what);
    return QUORUM_E_INVALID;
}

int quorum_voters_parse(const char *text, size_t len, struct quorum_voter *out, int *count,
                        char *err, size_t err_len)
{
    *count = 0;
    if (len == 0)
        return bad(err, err_len, "voters: entry %zu: %s", 1, "empty list (want ID@HOST:PORT,...)");
    size_t pos = 0;
    int n = 0;
    while (pos <= len) {
        size_t end = pos;
        while (end < len && text[end] != ',')
            end++;
        size_t entry = (size_t)n + 1;
        if (n == QUORUM_VOTERS_MAX)
            return bad(err, err_len, "voters: entry %zu: %s", entry,
                       "more than 16 voters (QUORUM_VOTERS_MAX)");
        const char *e = text + pos;
        size_t el = end - pos;
        struct quorum_voter v = {0};
        /* ID */
        size_t i = 0;
        int64_t id = 0;
        while (i < el && e[i] >= '0' && e[i] <= '9') {
            id = id * 10 + (e[i] - '0');
            if (id > INT32_MAX)
                return bad(err, err_len, "voters: entry %zu: %s", entry, "id above 2147483647");
            i++;
        }
        if (i == 0 || i >= el || e[i] != '@')
            return bad(err, err_len, "voters: entry %zu: %s", entry,
                       "want ID@HOST:PORT (ID a decimal number)");
        if (id <= 0)
            return bad(err, err_len, "voters: entry %zu: %s", entry, "id must be > 0");
        v.id = (int32_t)id;
        i++;
        /* HOST: [v6] or up to the last ':' */
        size_t hs, he;
        if (i < el && e[i] == '[') {
            hs = i + 1;
            he = hs;
            while (he < el && e[he] != ']')
                he++;
            if (he >= el)
                return bad(err, err_len, "voters: entry %zu: %s", entry, "unclosed '['");
            i = he + 1;
        } else {
            hs = i;
            size_t colon = el;
            for (size_t k = i; k < el; k++)
                if (e[k] == ':')
                    colon = k;
            he = colon;
            i = colon;
        }
        if (he == hs)
            return bad(err, err_len, "voters: entry %zu: %s", entry, "empty host");
        if (he - hs >= QUORUM_HOST_BYTES)
            return bad(err, err_len, "voters: entry %zu: %s", entry, "host longer than 255 bytes");
        for (size_t k = hs; k < he; k++) {
            unsigned char c = (unsigned char)e[k];
            if (c <= ' ' || c >= 0x7f || c == '@' || c == '/' || c == '[' || c == ']' ||
                (c == ':' && e[hs - 1] != '['))
                return bad(err, err_len, "voters: entry %zu: %s", entry, "bad character in host");
        }
        memcpy(v.host, e + hs, he - hs);
        v.host[he - hs] = '\0';
        /* :PORT */
        if (i >= el || e[i] != ':')
            return bad(err, err_len, "voters: entry %zu: %s", entry, "missing :PORT");
        i++;
        if (i >= el)
            return bad(err, err_len, "voters: entry %zu: %s", entry, "empty port");
        uint32_t port = 0;
        for (; i < el; i++) {
            if (e[i] < '0' || e[i] > '9')
                return bad(err, err_len, "voters: entry %zu: %s", entry,
                           "port must be a decimal number");
            port = port * 10 + (uint32_t)(e[i] - '0');
            if (port > 65535)
                return bad(err, err_len, "voters: entry %zu: %s", entry, "port above 65535");
        }
        if (port == 0)
            return bad(err, err_len, "voters: entry %zu: %s", entry, "port 0");
        v.port = (uint16_t)port;
        for (int k = 0; k < n; k++) {
            if (out[k].id == v.id)
                return bad(err, err_len, "voters: entry %zu: %s", entry, "duplicate id");
            if (out[k].port == v.port && strcmp(out[k].host, v.host) == 0)
                return bad(err, err_len, "voters: entry %zu: %s", entry, "duplicate address");
        }
        out[n++] = v;
        if (end == len)
            break;
        pos = end + 1;
        if (pos == len)
            return bad(err, err_len, "voters: entry %zu: %s", (size_t)n + 1, "trailing ','");
    }
    *count = n;
    return 0;
}

void quorum_voter_address(const struct quorum_voter *v, char *buf, size_t len)
{
    if (strchr(v->host, ':'))
        snprintf(buf, len, "[%s]:%u", v->host, (unsigned)v->port);
    else
        snprintf(buf, len, "%s:%u", v->host, (unsigned)v->port);
}

/* ---- the quorum ---------------------------------------------------------------------- */

struct proposal {
    struct raft_apply req; /* req.data = this */
    struct proposal *next;
    struct quorum *q;
    void *buf; /* raft_malloc'ed; raft's once raft_apply took it */
    size_t len;
    quorum_done_fn done;
    void *ctx;
};

struct quorum {
    struct quorum_options o;
    struct quorum_voter voters[QUORUM_VOTERS_MAX];
    int voters_count;
    char dir[PATH_MAX];
    char address[QUORUM_HOST_BYTES + 8];
    char bind[QUORUM_HOST_BYTES + 8];

    pthread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t tick;
    struct raft_uv_transport transport;
    struct raft_io io;
    struct raft_fsm fsm;
    struct raft raft;
    uint64_t applied_last; /* CQ2: the last index handed to `apply` (loop thread) */

    pthread_mutex_t mu; /* guards the fields below */
    pthread_cond_t cv;
    struct proposal *head, *tail;
    int pending;
    bool stopping;
    int start_rc;        /* 1 until the loop thread reports */
    int32_t transfer_to; /* quorum_transfer's wish: -1 none, 0 raft's choice, else a voter id */
    struct raft_transfer transfer_req; /* loop thread: the transfer in flight */
    bool transfer_busy;                /* loop thread */
    char start_err[1024];

    _Atomic int32_t st_leader_id;
    _Atomic bool st_is_leader;
    _Atomic uint64_t st_term, st_last_applied, st_commit;
    _Atomic uint64_t st_snapshots_taken, st_snapshots_restored, st_frames_bad;
};

static void publish(struct quorum *q)
{
    raft_id lid = 0;
    const char *laddr = NULL;
    raft_leader(&q->raft, &lid, &laddr);
    bool is_leader = raft_state(&q->raft) == RAFT_LEADER;
    int32_t was = atomic_exchange(&q->st_leader_id, (int32_t)lid);
    bool was_leader = atomic_exchange(&q->st_is_leader, is_leader);
    if ((was != (int32_t)lid || was_leader != is_leader) && q->o.on_leader)
        q->o.on_leader(q->o.ctx, (int32_t)lid, is_leader, (uint64_t)q->raft.current_term);
    atomic_store(&q->st_term, (uint64_t)q->raft.current_term);
    atomic_store(&q->st_last_applied, (uint64_t)raft_last_applied(&q->raft));
    atomic_store(&q->st_commit, (uint64_t)q->raft.commit_index);
}

void quorum_status(struct quorum *q, struct quorum_status *st)
{
    st->node_id = q->o.node_id;
    st->leader_id = atomic_load(&q->st_leader_id);
    st->is_leader = atomic_load(&q->st_is_leader);
    st->term = atomic_load(&q->st_term);
    st->last_applied = atomic_load(&q->st_last_applied);
    st->commit_index = atomic_load(&q->st_commit);
    st->snapshots_taken = atomic_load(&q->st_snapshots_taken);
    st->snapshots_restored = atomic_load(&q->st_snapshots_restored);
    st->frames_bad = atomic_load(&q->st_frames_bad);
}

/* ---- the FSM: raft's callbacks into the owner (loop thread) ---- */

/* CQ5: an entry's bytes are a frame, u32 big-endian record length + the record + zeros to a
 * multiple of 8 bytes. libraft 0.15 requires it without saying so: its TCP transport sends an
 * AppendEntries' entries back to back unpadded, but the receiver decodes them as its disk
 * segments lay them out, each padded to 8 bytes (uvDecodeEntriesBatch), so in a message of
 * several entries every entry after one of unaligned length arrives shifted (docs/cluster.md). */
static size_t frame_size(size_t len)
{
    return (QUORUM_FRAME_HEADER + len + 7) & ~(size_t)7;
}

static bool frame_open(const struct raft_buffer *buf, const void **rec, size_t *len)
{
    const uint8_t *b = buf->base;
    if (buf->len < QUORUM_FRAME_HEADER + 1 || buf->len % 8 != 0)
        return false;
    size_t n = (size_t)b[0] << 24 | (size_t)b[1] << 16 | (size_t)b[2] << 8 | b[3];
    if (n == 0 || n > QUORUM_RECORD_MAX || frame_size(n) != buf->len)
        return false;
    for (size_t i = QUORUM_FRAME_HEADER + n; i < buf->len; i++)
        if (b[i] != 0)
            return false;
    *rec = b + QUORUM_FRAME_HEADER;
    *len = n;
    return true;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    struct quorum *q = fsm->data;
    /* raft applies index last_applied + 1 and only then advances last_applied (replication.c),
     * barriers and configuration entries included, so this is the command's own index. */
    uint64_t index = (uint64_t)raft_last_applied(&q->raft) + 1;
    if (index <= q->applied_last) { /* CQ2: never twice, never backwards */
        fprintf(stderr, "quorum: raft applied index %llu after %llu\n", (unsigned long long)index,
                (unsigned long long)q->applied_last);
        abort();
    }
    q->applied_last = index;
    const void *rec = NULL;
    size_t len = 0;
    if (frame_open(buf, &rec, &len)) {
        q->o.apply(q->o.ctx, index, rec, len);
    } else { /* no member of ours writes it: counted, skipped on every member alike */
        atomic_fetch_add(&q->st_frames_bad, 1);
        fprintf(stderr, "quorum: entry %llu of %zu bytes is not a record frame; skipped\n",
                (unsigned long long)index, buf->len);
    }
    atomic_store(&q->st_last_applied, index);
    *result = NULL;
    return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct quorum *q = fsm->data;
    void *data = NULL;
    size_t len = 0;
    int rc = q->o.snapshot(q->o.ctx, &data, &len);
    if (rc != 0)
        return RAFT_NOMEM;
    struct raft_buffer *b = malloc(sizeof(*b));
    if (!b) {
        free(data);
        return RAFT_NOMEM;
    }
    b->base = data;
    b->len = len;
    *bufs = b;
    *n_bufs = 1;
    return 0;
}

/* fsm version 2: raft leaves the snapshot's buffers to us, freed once it has written them. */
static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct quorum *q = fsm->data;
    if (*bufs) {
        for (unsigned i = 0; i < *n_bufs; i++)
            free((*bufs)[i].base);
        free(*bufs);
        atomic_fetch_add(&q->st_snapshots_taken, 1);
    }
    *bufs = NULL;
    *n_bufs = 0;
    return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct quorum *q = fsm->data;
    int rc = q->o.restore(q->o.ctx, buf->base, buf->len);
    if (rc != 0)
        return RAFT_CORRUPT; /* raft keeps ownership of buf on failure */
    raft_free(buf->base);    /* on success the FSM owns it */
    /* The snapshot replaces everything up to its index: later applies continue after it. */
    q->applied_last = 0;
    atomic_fetch_add(&q->st_snapshots_restored, 1);
    return 0;
}

/* ---- proposals ---- */

static int status_of(int raft_rc)
{
    switch (raft_rc) {
    case 0:
        return 0;
    case RAFT_NOTLEADER:
        return QUORUM_E_NOT_CONTROLLER;
    case RAFT_LEADERSHIPLOST:
        return QUORUM_E_LEADERSHIP_LOST;
    case RAFT_SHUTDOWN:
    case RAFT_CANCELED:
        return QUORUM_E_SHUTDOWN;
    case RAFT_NOMEM:
        return -ENOMEM;
    default:
        return QUORUM_E_RAFT;
    }
}

static void proposal_finish(struct proposal *p, int status, uint64_t index)
{
    if (p->done)
        p->done(p->ctx, status, index);
    free(p);
}

static void apply_done(struct raft_apply *req, int status, void *result)
{
    (void)result;
    struct proposal *p = req->data;
    proposal_finish(p, status_of(status), status == 0 ? (uint64_t)req->index : 0);
}

static void drain(struct quorum *q, bool stopping)
{
    pthread_mutex_lock(&q->mu);
    struct proposal *p = q->head;
    q->head = q->tail = NULL;
    q->pending = 0;
    pthread_mutex_unlock(&q->mu);
    while (p) {
        struct proposal *next = p->next;
        int rc = RAFT_SHUTDOWN;
        if (!stopping) {
            struct raft_buffer b = {p->buf, p->len};
            p->req.data = p;
            rc = raft_apply(&q->raft, &p->req, &b, 1, apply_done);
        }
        if (rc != 0) {
            raft_free(p->buf);
            proposal_finish(p, status_of(rc), 0);
        }
        p = next;
    }
}

/* ---- the loop thread ---- */

static void on_raft_closed(struct raft *r)
{
    struct quorum *q = r->data;
    raft_uv_close(&q->io);
    raft_uv_tcp_close(&q->transport);
}

static void transfer_done(struct raft_transfer *req)
{
    struct quorum *q = req->data;
    q->transfer_busy = false;
}

static void on_wake(uv_async_t *h)
{
    struct quorum *q = h->data;
    pthread_mutex_lock(&q->mu);
    bool stopping = q->stopping;
    int32_t transfer = q->transfer_to;
    q->transfer_to = -1;
    pthread_mutex_unlock(&q->mu);
    drain(q, stopping);
    /* quorum_transfer (CQ1: raft_transfer on this thread); a refusal (not the leader, one in
     * flight) is the caller's to notice in quorum_status. */
    if (!stopping && transfer >= 0 && !q->transfer_busy && raft_state(&q->raft) == RAFT_LEADER) {
        q->transfer_req.data = q;
        if (raft_transfer(&q->raft, &q->transfer_req, (raft_id)transfer, transfer_done) == 0)
            q->transfer_busy = true;
    }
    if (stopping) {
        uv_timer_stop(&q->tick);
        uv_close((uv_handle_t *)&q->tick, NULL);
        uv_close((uv_handle_t *)&q->wake, NULL);
        raft_close(&q->raft, on_raft_closed);
    }
}

static void on_tick(uv_timer_t *t)
{
    publish(t->data);
}

static void started(struct quorum *q, int rc, const char *msg)
{
    pthread_mutex_lock(&q->mu);
    q->start_rc = rc;
    if (msg)
        snprintf(q->start_err, sizeof(q->start_err), "%s", msg);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void run_loop_to_end(struct quorum *q)
{
    uv_run(&q->loop, UV_RUN_DEFAULT);
    uv_loop_close(&q->loop);
}

static void *loop_main(void *arg)
{
    struct quorum *q = arg;
    char msg[1024];
    int rc = uv_loop_init(&q->loop);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "uv_loop_init: %s", uv_strerror(rc));
        started(q, rc, msg);
        return NULL;
    }
    rc = raft_uv_tcp_init(&q->transport, &q->loop);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "raft_uv_tcp_init: %s", raft_strerror(rc));
        goto err_loop;
    }
    if (q->bind[0] && (rc = raft_uv_tcp_set_bind_address(&q->transport, q->bind)) != 0) {
        snprintf(msg, sizeof(msg), "controller listen address %.300s: %s", q->bind,
                 raft_strerror(rc));
        goto err_transport;
    }
    rc = raft_uv_init(&q->io, &q->loop, q->dir, &q->transport);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "raft_uv_init %.400s: %s (%.256s)", q->dir, raft_strerror(rc),
                 q->io.errmsg);
        goto err_transport;
    }
    q->fsm.version = 2;
    q->fsm.data = q;
    q->fsm.apply = fsm_apply;
    q->fsm.snapshot = fsm_snapshot;
    q->fsm.snapshot_finalize = fsm_snapshot_finalize;
    q->fsm.restore = fsm_restore;
    rc = raft_init(&q->raft, &q->io, &q->fsm, (raft_id)q->o.node_id, q->address);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "raft_init: %s (%s)", raft_strerror(rc), raft_errmsg(&q->raft));
        goto err_io;
    }
    q->raft.data = q;
    raft_set_election_timeout(&q->raft, q->o.election_timeout_ms ? q->o.election_timeout_ms : 1000);
    raft_set_heartbeat_timeout(&q->raft,
                               q->o.heartbeat_timeout_ms ? q->o.heartbeat_timeout_ms : 100);
    raft_set_snapshot_threshold(&q->raft, q->o.snapshot_threshold ? q->o.snapshot_threshold : 1024);
    raft_set_snapshot_trailing(&q->raft, q->o.snapshot_trailing ? q->o.snapshot_trailing : 128);
    raft_set_pre_vote(&q->raft, true); /* a restarted or cut-off member does not depose a leader */

    /* CQ4: bootstrap a pristine directory only; raft refuses (CANTBOOTSTRAP) otherwise. */
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    for (int i = 0; i < q->voters_count && rc == 0; i++) {
        char addr[QUORUM_HOST_BYTES + 8];
        quorum_voter_address(&q->voters[i], addr, sizeof(addr));
        rc = raft_configuration_add(&conf, (raft_id)q->voters[i].id, addr, RAFT_VOTER);
    }
    if (rc == 0) {
        rc = raft_bootstrap(&q->raft, &conf);
        if (rc == RAFT_CANTBOOTSTRAP)
            rc = 0;
    }
    raft_configuration_close(&conf);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "raft_bootstrap: %s (%s)", raft_strerror(rc),
                 raft_errmsg(&q->raft));
        goto err_raft;
    }
    rc = raft_start(&q->raft);
    if (rc != 0) {
        snprintf(msg, sizeof(msg), "raft_start: %s (%s)", raft_strerror(rc), raft_errmsg(&q->raft));
        goto err_raft;
    }
    uv_async_init(&q->loop, &q->wake, on_wake);
    q->wake.data = q;
    uv_timer_init(&q->loop, &q->tick);
    q->tick.data = q;
    uv_timer_start(&q->tick, on_tick, 0, QUORUM_STATUS_MS);
    publish(q);
    started(q, 0, NULL);
    run_loop_to_end(q);
    return NULL;

err_raft:
    raft_close(&q->raft, on_raft_closed);
    run_loop_to_end(q);
    started(q, QUORUM_E_RAFT, msg);
    return NULL;
err_io:
    raft_uv_close(&q->io);
err_transport:
    raft_uv_tcp_close(&q->transport);
err_loop:
    run_loop_to_end(q);
    started(q, QUORUM_E_RAFT, msg);
    return NULL;
}

static int mkdir_p1(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    return -errno;
}

int quorum_start(const struct quorum_options *o, struct quorum **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!o || !o->data_dir || !o->voters || !o->apply || !o->snapshot || !o->restore)
        return bad(err, err_len, "quorum: %zu%s", 0, " options incomplete");
    struct quorum *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->o = *o;
    int rc = quorum_voters_parse(o->voters, strlen(o->voters), q->voters, &q->voters_count, err,
                                 err_len);
    if (rc != 0)
        goto err_free;
    const struct quorum_voter *self = NULL;
    for (int i = 0; i < q->voters_count; i++) {
        if (strchr(q->voters[i].host, ':')) {
            rc = bad(err, err_len, "voters: entry %zu: %s", (size_t)i + 1,
                     "IPv6 addresses are not taken by libraft's TCP transport (IPv4 or a name)");
            goto err_free;
        }
        if (q->voters[i].id == o->node_id)
            self = &q->voters[i];
    }
    if (!self) {
        if (err && err_len)
            snprintf(err, err_len, "--node-id %d is not one of the voters", (int)o->node_id);
        rc = QUORUM_E_INVALID;
        goto err_free;
    }
    quorum_voter_address(self, q->address, sizeof(q->address));
    if (o->listen && strcmp(o->listen, q->address) != 0) {
        /* raft binds the listen address; it must carry the voter's port (raft_uv_tcp's rule). */
        const char *colon = strrchr(o->listen, ':');
        char port[8];
        snprintf(port, sizeof(port), "%u", (unsigned)self->port);
        if (!colon || strcmp(colon + 1, port) != 0 || strlen(o->listen) >= sizeof(q->bind)) {
            if (err && err_len)
                snprintf(err, err_len,
                         "--controller-listen %s must carry this voter's port %u (from --voters)",
                         o->listen, (unsigned)self->port);
            rc = QUORUM_E_INVALID;
            goto err_free;
        }
        snprintf(q->bind, sizeof(q->bind), "%s", o->listen);
    }
    if (snprintf(q->dir, sizeof(q->dir), "%s/%s", o->data_dir, QUORUM_DIR_NAME) >=
        (int)sizeof(q->dir)) {
        rc = bad(err, err_len, "quorum: %zu%s", 0, " data directory path too long");
        goto err_free;
    }
    if ((rc = mkdir_p1(q->dir)) != 0) {
        if (err && err_len)
            snprintf(err, err_len, "%s: %s", q->dir, strerror(-rc));
        goto err_free;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->start_rc = 1;
    q->transfer_to = -1;
    rc = pthread_create(&q->thread, NULL, loop_main, q);
    if (rc != 0) {
        rc = -rc;
        goto err_sync;
    }
    pthread_mutex_lock(&q->mu);
    while (q->start_rc == 1)
        pthread_cond_wait(&q->cv, &q->mu);
    rc = q->start_rc;
    pthread_mutex_unlock(&q->mu);
    if (rc != 0) {
        pthread_join(q->thread, NULL);
        if (err && err_len)
            snprintf(err, err_len, "%s", q->start_err);
        goto err_sync;
    }
    *out = q;
    return 0;

err_sync:
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
err_free:
    free(q);
    return rc;
}

void quorum_stop(struct quorum *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_mutex_unlock(&q->mu);
    uv_async_send(&q->wake);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

int quorum_propose(struct quorum *q, const void *rec, size_t len, quorum_done_fn done, void *ctx)
{
    if (len == 0 || len > QUORUM_RECORD_MAX)
        return QUORUM_E_INVALID;
    struct proposal *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->len = frame_size(len);
    p->buf = raft_calloc(1, p->len); /* CQ5: zero padding */
    if (!p->buf) {
        free(p);
        return -ENOMEM;
    }
    uint8_t *b = p->buf;
    b[0] = (uint8_t)(len >> 24);
    b[1] = (uint8_t)(len >> 16);
    b[2] = (uint8_t)(len >> 8);
    b[3] = (uint8_t)len;
    memcpy(b + QUORUM_FRAME_HEADER, rec, len);
    p->q = q;
    p->done = done;
    p->ctx = ctx;
    pthread_mutex_lock(&q->mu);
    int rc = q->stopping ? QUORUM_E_SHUTDOWN : q->pending >= QUORUM_PENDING_MAX ? QUORUM_E_BUSY : 0;
    if (rc == 0) {
        if (q->tail)
            q->tail->next = p;
        else
            q->head = p;
        q->tail = p;
        q->pending++;
        /* under the lock: quorum_stop cannot close the handle between the check and the send */
        uv_async_send(&q->wake);
    }
    pthread_mutex_unlock(&q->mu);
    if (rc != 0) {
        raft_free(p->buf);
        free(p);
    }
    return rc;
}

/* A waiter shared by quorum_propose_wait and the loop thread; the last of the two frees it. */
struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool done;
    int status;
    uint64_t index;
};

static void waiter_put(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    bool last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
    }
}

static void waiter_done(void *ctx, int status, uint64_t index)
{
    struct waiter *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    w->status = status;
    w->index = index;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    waiter_put(w);
}

int quorum_propose_wait(struct quorum *q, const void *rec, size_t len, int timeout_ms,
                        uint64_t *index)
{
    struct waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->refs = 2;
    int rc = quorum_propose(q, rec, len, waiter_done, w);
    if (rc != 0) {
        w->refs = 1;
        waiter_put(w);
        return rc;
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
            break;
    rc = w->done ? w->status : QUORUM_E_TIMEOUT;
    if (w->done && rc == 0 && index)
        *index = w->index;
    pthread_mutex_unlock(&w->mu);
    waiter_put(w);
    return rc;
}

void quorum_transfer(struct quorum *q, int32_t to)
{
    pthread_mutex_lock(&q->mu);
    if (!q->stopping) {
        q->transfer_to = to > 0 ? to : 0;
        uv_async_send(&q->wake);
    }
    pthread_mutex_unlock(&q->mu);
}
