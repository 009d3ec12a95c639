/*
 * test_model.c — model-based test of the engine (issue 10, "Tests that would have found these").
 *
 * A small reference model of every partition (its records with offsets and their transaction
 * state, high watermark, log start), of the producers (anonymous idempotent, raw idempotent
 * batches through rt_append_batch, named with null and non-null keys, transactional) and of
 * the consumer groups' offsets (plain and transactional) is driven by random operation
 * sequences, and the engine is compared with it after every step. The test is written from
 * outside: it only uses what the public contract (ringtail.h, README) promises, plus the
 * batch builder to hand-encode RecordBatches for rt_append_batch and log_enforce_retention
 * to run retention now rather than on the shard's timer.
 *
 * Every record's key, value, length and timestamp are derived from a 64-bit id, so a record
 * read back identifies itself and its bytes are checked in full. Operations (one per step):
 *   append         rt_append of 1..8 records of random sizes; the base offset must be the HW
 *   append_batch   rt_append_batch of a hand-encoded batch, without a producer id or with
 *                  one (idempotent: the exact retry of the last batch is a duplicate with its
 *                  original offset, a gap is RT_E_OUT_OF_ORDER_SEQUENCE and appends nothing)
 *   concurrent     2..8 threads rt_append ~1 KiB records into one or two hot partitions
 *                  (group-commit rounds straddle segment rolls) while a reader thread iterates
 *                  the hot partition; every acknowledged record must read back in place
 *   idem_send      an anonymous idempotent producer: explicit partitions, keyed (murmur2, as
 *                  Kafka) and null keys; flush; every record stored once, in send order
 *   named          a named producer sends the next user-supplied sequence ids (gaps allowed),
 *                  null keys, keys and explicit partitions mixed
 *   named_rerun    the named producer is reopened and resends an earlier suffix of its input
 *                  plus new ids: every id stored exactly once across the topic (README), and
 *                  rt_producer_last_sequence per partition equals the model's
 *   txn_send       a transactional producer: begin (if needed), sends to random partitions,
 *                  flush; the records pin the LSO and are hidden from read_committed
 *   txn_offsets    rt_producer_send_offsets in the open transaction (require_stable must then
 *                  answer RT_E_UNSTABLE_OFFSET_COMMIT, a plain fetch the old value)
 *   txn_commit / txn_abort   markers (one offset per partition), records visible / never
 *   txn_fence      a new instance of the transactional id: the old one's open transaction is
 *                  aborted, its late write is refused and appends nothing, its commit fenced
 *   txn_reinit     rt_producer_init_transactions inside an open transaction must be refused
 *                  and leave the transaction intact (issue 10 #12)
 *   group_commit   rt_group_commit_offsets
 *   contract       calls outside the contract must fail at the call (issue 10 #12): a send to
 *                  partition -2; offsets for an unknown topic or partition 99
 *   retention      log_enforce_retention (when this session has retention_bytes)
 *   reopen         producers closed (an open transaction left Ongoing), rt_close, every .log
 *                  <= segment_size_bytes, rt_verify clean, rt_open with new random options;
 *                  transactional ids re-initialised (what was left open is aborted)
 *   sigkill        a forked child appends from two threads, runs transactions and reruns a
 *                  named importer's input from a random earlier sequence id (README's
 *                  `produce --producer-name` rerun), reporting "sent" and "acknowledged"
 *                  through a pipe, and is SIGKILLed at a random moment; the parent reopens and
 *                  resolves: everything acknowledged is there at its offset, nothing unsent,
 *                  nothing twice (the importer's ids included), each transaction all or nothing
 *   power_loss     the same child over the fault injector (io/io.h IO_FAULT_POWER_LOSS at a
 *                  random write or fdatasync, sometimes keeping a sector prefix of unsynced
 *                  writes): acknowledged records (sync=always) survive
 * After every step the touched partitions are verified: log start, HW and LSO from
 * rt_list_offsets and from the fetch view, the whole partition read at read_uncommitted (must be
 * exactly the model's records below the HW) and at read_committed (exactly the committed ones
 * below the LSO; an aborted record served is named as such), a time lookup, a fetch at and
 * beyond the HW, and the group offsets (stable and require_stable). Every 16 steps and after
 * every reopen all partitions are.
 *
 * RT_TEST_BOTH_BACKENDS: ctest runs this file over io_uring and over the sync fallback.
 *
 * Environment (docs/torture.md has the long command):
 *   RT_MODEL_SEED      first seed (default 1); a reported divergence names its seed and step
 *   RT_MODEL_SEEDS     number of seeds (default 2; with RT_MODEL_SECONDS alone: until spent)
 *   RT_MODEL_STEPS     steps per seed (default 160)
 *   RT_MODEL_SECONDS   wall-clock budget (default 25); no step starts after it
 *   RT_MODEL_SKIP      comma-separated operation kinds to leave out (names above, plus
 *                      named_nullkey to send named records with keys only) — for working
 *                      around a known defect; the default exercises everything
 *   RT_MODEL_SEGMENT_KIB  fixed segment size (16 .. 1048576; default: random 8, 16, 32 or 64
 *                      KiB per session) — large segments avoid rolls
 *   RT_MODEL_VERBOSE   one line per step
 * Divergences are printed as "DIVERGENCE seed S step N (op): ..."; a seed stops at the end of
 * the step that diverged (the model no longer knows the truth) and the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "engine.h"
#include "helpers/seeded.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "murmur2.h"
#include "ringtail.h"
#include "ringtail_test.h"

/* ---- limits of the model ---- */

#define TOPICS          2
#define PARTS_MAX       6 /* model partitions over all topics */
#define GROUPS          2
#define TXNS            2
#define NAMED           3 /* the last one is the crashing child's importer */
#define NAMED_CHILD     (NAMED - 1)
#define NAMED_SEQ_MAX   (1u << 16) /* sequence ids per name */
#define TXN_OFFSETS_MAX 16
#define TXN_STEPS_MAX   12 /* a transaction open this many steps is ended */
#define STEP_RECORDS    512
#define TS_BASE         4000000000000ll /* 2096: above every marker's wall-clock time */
#define CHILD_TXN_BASE  1000000000
#define CHILD_TXNS_MAX  (1 << 20)
#define ID_NAMED_BIT    (1ull << 40)
#define ID_FIXED_BIT    (1ull << 41) /* the value length is in bits 42..52 */
#define ID_FIXED_SHIFT  42

static const char *const topic_names[TOPICS] = {"m0", "m1"};
static const uint32_t topic_parts[TOPICS] = {3, 2};
static const char *const group_names[GROUPS] = {"g0", "g1"};

enum op {
    OP_APPEND,
    OP_APPEND_BATCH,
    OP_CONCURRENT,
    OP_IDEM_SEND,
    OP_NAMED,
    OP_NAMED_RERUN,
    OP_TXN_SEND,
    OP_TXN_OFFSETS,
    OP_TXN_COMMIT,
    OP_TXN_ABORT,
    OP_TXN_FENCE,
    OP_TXN_REINIT,
    OP_GROUP_COMMIT,
    OP_CONTRACT,
    OP_RETENTION,
    OP_REOPEN,
    OP_SIGKILL,
    OP_POWER_LOSS,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "append",       "append_batch", "concurrent", "idem_send", "named",     "named_rerun",
    "txn_send",     "txn_offsets",  "txn_commit", "txn_abort", "txn_fence", "txn_reinit",
    "group_commit", "contract",     "retention",  "reopen",    "sigkill",   "power_loss",
};

/* Relative weights per step. */
static const int op_weight[OP_COUNT] = {
    12, 6, 5, 8, 7, 4, 9, 4, 5, 3, 2, 1, 4, 1, 2, 3, 2, 2,
};

enum rstate { RS_DATA = 0, RS_OPEN = 1, RS_ABORTED = 2 };

struct mrec {
    int64_t offset;
    uint64_t id;
    int32_t txn; /* transaction number (RS_OPEN / RS_ABORTED / committed), 0 = none */
    uint8_t state;
    uint8_t keyed;
};

struct mpart {
    uint32_t topic;
    uint32_t index;
    struct mrec *r;
    size_t n, cap;
    int64_t hw;
    int64_t log_start;
    /* A session with retention_bytes ran since this partition's log start was last compared: the
     * engine may have moved it (retention runs on a timer, up to the close). */
    bool retention_since_check;
};

struct mtxn {
    char id[24];
    rt_producer *p;
    bool open;
    int32_t txn_no;
    int opened_step;
    int64_t first_off[PARTS_MAX]; /* first offset of the open transaction per partition, -1 */
    uint32_t noff;
    struct {
        uint32_t group, part;
        int64_t offset;
        uint64_t clock; /* when it was sent (its place in __consumer_offsets) */
    } off[TXN_OFFSETS_MAX];
};

struct mnamed {
    char name[24];
    uint32_t topic;
    rt_producer *p;
    uint32_t sent_count; /* the input: seqs[0..sent_count) in increasing order */
    uint32_t *seqs;
    uint8_t *stored;    /* per seq: times stored */
    uint8_t *stored_at; /* per seq: model partition + 1 */
    int32_t *sent_step; /* per seq: the last step that sent it (diagnostics) */
};

struct mraw {
    int64_t pid;
    int16_t epoch;
    int32_t next_seq[PARTS_MAX];
    int32_t last_first_seq[PARTS_MAX]; /* -1: none */
    int32_t last_count[PARTS_MAX];
    int64_t last_base[PARTS_MAX];
    uint64_t last_id[PARTS_MAX];
};

struct child_txn {
    int32_t sent;
    bool commit_sent, commit_acked;
    int32_t present, visible;
};

struct config {
    uint64_t first_seed;
    int seeds;
    bool seeds_by_time;
    int steps;
    int64_t deadline_ms;
    bool skip[OP_COUNT];
    bool skip_named_nullkey;
    bool verbose;
    uint32_t segment_kib; /* RT_MODEL_SEGMENT_KIB: fixed segment size; 0 = random 8..64 KiB */
};

struct seg_bound {
    char name[320]; /* "<topic>-<partition>/<base>.log" */
    uint64_t bytes;
};

struct model {
    const struct config *cfg;
    uint64_t seed, rng;
    int step;
    enum op op;
    char *dir;
    struct rt_options o;
    rt_engine *e;
    uint32_t nparts;
    struct mpart part[PARTS_MAX];
    int64_t committed[GROUPS][PARTS_MAX];
    /* When the committed value was written: as Kafka, a transaction's offset applies at its
     * commit only if it was written after the value in place (a plain commit made while the
     * transaction was open wins over the transaction's older write). */
    uint64_t committed_clock[GROUPS][PARTS_MAX];
    uint64_t offset_clock;
    struct mtxn txn[TXNS];
    struct mnamed named[NAMED];
    rt_producer *idem;
    struct mraw raw;
    uint64_t next_id;
    int32_t next_txn_no;
    int32_t child_txn_next;
    int32_t child_txn_end; /* one past the highest child transaction heard of */
    struct child_txn *ctxn;
    /* The segment-size bound of each .log ever seen (check_segment_sizes): the largest
     * segment_size_bytes of a session in which it could grow. */
    struct seg_bound *bounds;
    size_t bound_count, bound_capacity;
    uint64_t session_segment_bytes; /* segment_size_bytes of the last session (0: none yet) */
    bool touched[PARTS_MAX];
    int divergences;
    /* figures */
    int64_t records_acked, steps_run, reopens, kills, power_losses, power_not_fired, verifies,
        commits, aborts, fences, dups, ops[OP_COUNT];
};

/* ---- small helpers ---- */

static void diverge(struct model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (m->divergences < 20) {
        fprintf(stderr, "DIVERGENCE seed %" PRIu64 " step %d (%s): ", m->seed, m->step,
                op_names[m->op]);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    m->divergences++;
}

#define DIVERGE_RC(m, rc, what) diverge(m, "%s: %s (%s)", what, rt_strerror(rc), rt_error_detail())

/* ---- what a record id stands for ---- */

static uint32_t rec_value_len(uint64_t id, uint32_t max_len)
{
    if (id & ID_FIXED_BIT) {
        uint32_t fixed = (uint32_t)(id >> ID_FIXED_SHIFT) & 0x7ffu;
        return fixed > max_len ? max_len : fixed;
    }
    uint64_t h = tu_mix64(id * 0x9e3779b97f4a7c15ull + 7);
    uint32_t cls = (uint32_t)(h % 100), len;
    if (cls < 50)
        len = 1 + (uint32_t)((h >> 8) % 64);
    else if (cls < 88)
        len = 64 + (uint32_t)((h >> 8) % 960);
    else
        len = 1024 + (uint32_t)((h >> 8) % 3072);
    if (len > max_len)
        len = max_len;
    return len < 24 ? 24 : len;
}

/* The value: "<id>:" then filler; exactly len bytes. */
static void rec_value(uint64_t id, uint32_t len, uint8_t *out)
{
    char head[24];
    int n = snprintf(head, sizeof(head), "%" PRIu64 ":", id);
    memcpy(out, head, (size_t)n);
    for (uint32_t i = (uint32_t)n; i < len; i++)
        out[i] = (uint8_t)('a' + (id + i) % 26);
}

static int rec_key(uint64_t id, char out[16])
{
    return snprintf(out, 16, "k%u", (unsigned)(tu_mix64(id) % 97));
}

static int64_t rec_ts(uint64_t id)
{
    return TS_BASE + (int64_t)(id & 0xffffffffffull);
}

static bool parse_id(const uint8_t *v, int32_t len, uint64_t *id)
{
    uint64_t x = 0;
    int32_t i = 0;
    for (; i < len && i < 21 && v[i] >= '0' && v[i] <= '9'; i++)
        x = x * 10 + (uint64_t)(v[i] - '0');
    if (i == 0 || i >= len || v[i] != ':')
        return false;
    *id = x;
    return true;
}

/* Fills an rt_record for id (buffers owned by the caller). */
struct recbuf {
    uint8_t value[4096];
    char key[16];
};

/* Values stay at most 2 KiB whatever the session's options (a record must read back the same
 * after a reopen with other segment sizes); a batch is at least 8 KiB. */
static uint32_t value_max(const struct model *m)
{
    (void)m;
    return 2048;
}

static void make_record(const struct model *m, uint64_t id, bool keyed, struct recbuf *b,
                        struct rt_record *r)
{
    uint32_t len = rec_value_len(id, value_max(m));
    rec_value(id, len, b->value);
    memset(r, 0, sizeof(*r));
    r->value = b->value;
    r->value_len = (int32_t)len;
    r->key_len = -1;
    if (keyed) {
        r->key_len = rec_key(id, b->key);
        r->key = b->key;
    }
    r->timestamp_ms = rec_ts(id);
}

/* Checks a record view against what its id stands for. */
static bool record_matches(const struct model *m, const struct rt_record_view *v, uint64_t id,
                           int keyed, const char **why)
{
    uint8_t buf[4096];
    uint32_t len = rec_value_len(id, value_max(m));
    rec_value(id, len, buf);
    if (v->value_len != (int32_t)len || memcmp(v->value, buf, len) != 0) {
        *why = "value bytes differ";
        return false;
    }
    if (v->timestamp_ms != rec_ts(id)) {
        *why = "timestamp differs";
        return false;
    }
    if (keyed >= 0) {
        char key[16];
        int klen = rec_key(id, key);
        if (keyed ? (v->key_len != klen || memcmp(v->key, key, (size_t)klen) != 0)
                  : v->key_len != -1) {
            *why = "key differs";
            return false;
        }
    }
    return true;
}

/* ---- the model's partitions ---- */

static uint32_t mp_of(uint32_t topic, uint32_t index)
{
    uint32_t base = 0;
    for (uint32_t t = 0; t < topic; t++)
        base += topic_parts[t];
    return base + index;
}

static void mp_push(struct mpart *p, int64_t offset, uint64_t id, int32_t txn, uint8_t state,
                    uint8_t keyed)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->r = realloc(p->r, p->cap * sizeof(*p->r));
        assert_non_null(p->r);
    }
    p->r[p->n++] =
        (struct mrec){.offset = offset, .id = id, .txn = txn, .state = state, .keyed = keyed};
}

static int64_t model_lso(const struct model *m, uint32_t mp)
{
    int64_t lso = m->part[mp].hw;
    for (int t = 0; t < TXNS; t++)
        if (m->txn[t].open && m->txn[t].first_off[mp] >= 0 && m->txn[t].first_off[mp] < lso)
            lso = m->txn[t].first_off[mp];
    return lso;
}

/* Marks the records of transaction txn_no in mp as `state`. */
static void mp_settle(struct mpart *p, int32_t txn_no, uint8_t state)
{
    for (size_t i = p->n; i-- > 0;)
        if (p->r[i].txn == txn_no && p->r[i].state == RS_OPEN)
            p->r[i].state = state;
}

static void mp_drop_below(struct mpart *p, int64_t log_start)
{
    size_t k = 0;
    while (k < p->n && p->r[k].offset < log_start)
        k++;
    memmove(p->r, p->r + k, (p->n - k) * sizeof(*p->r));
    p->n -= k;
    p->log_start = log_start;
}

/* ---- reading the engine ---- */

typedef int (*visit_fn)(void *ctx, const struct rt_record_view *r, const struct rt_fetch_view *fv);

/* Iterates topic-part at `iso` from `from` to `to` (exclusive) with a random max_bytes. Returns
 * 0 or the error that stopped it. */
static int read_range(struct model *m, uint32_t mp, enum rt_isolation iso, int64_t from, int64_t to,
                      visit_fn fn, void *ctx)
{
    const struct mpart *p = &m->part[mp];
    const char *topic = topic_names[p->topic];
    while (from < to) {
        rt_fetch *fh = NULL;
        size_t max = 1 + (size_t)tu_rng_below(&m->rng, 64 * 1024);
        int rc = rt_fetch_start(m->e, topic, p->index, from, max, iso, &fh);
        if (rc)
            return rc;
        const struct rt_fetch_view *fv = rt_fetch_get(fh);
        struct rt_records it;
        struct rt_record_view r;
        rc = rt_records_init(&it, fh, from);
        while (rc == 0 && (rc = rt_records_next(&it, &r)) == 0) {
            if (r.offset >= to)
                continue;
            rc = fn(ctx, &r, fv);
        }
        int64_t next = rt_records_next_offset(&it);
        rt_fetch_release(fh);
        if (rc != RT_E_END)
            return rc;
        if (next <= from)
            return RT_E_END; /* no progress */
        from = next;
    }
    return 0;
}

static int list_off(struct model *m, uint32_t mp, int64_t spec, enum rt_isolation iso, int64_t *out)
{
    const struct mpart *p = &m->part[mp];
    *out = -9;
    return rt_list_offsets(m->e, topic_names[p->topic], p->index, spec, iso, out);
}

/* ---- verification of one partition against the model ---- */

struct cmp_ctx {
    struct model *m;
    uint32_t mp;
    enum rt_isolation iso;
    size_t i;      /* next model record to compare */
    int64_t bound; /* HW or LSO */
    int64_t lso;
    int bad;
};

static int cmp_visit(void *vctx, const struct rt_record_view *r, const struct rt_fetch_view *fv)
{
    struct cmp_ctx *c = vctx;
    struct model *m = c->m;
    struct mpart *p = &m->part[c->mp];
    const char *iso = c->iso == RT_READ_COMMITTED ? "read_committed" : "read_uncommitted";
    if (fv->high_watermark != p->hw && c->bad++ < 3)
        diverge(m, "%s-%u: fetch view high_watermark %" PRId64 ", model %" PRId64,
                topic_names[p->topic], p->index, fv->high_watermark, p->hw);
    if (fv->last_stable_offset != c->lso && c->bad++ < 3)
        diverge(m, "%s-%u: fetch view last_stable_offset %" PRId64 ", model %" PRId64,
                topic_names[p->topic], p->index, fv->last_stable_offset, c->lso);
    /* Skip model records the isolation level hides. */
    while (c->i < p->n && c->iso == RT_READ_COMMITTED && p->r[c->i].state != RS_DATA &&
           p->r[c->i].offset < r->offset)
        c->i++;
    while (c->i < p->n && p->r[c->i].offset < r->offset) {
        const struct mrec *x = &p->r[c->i];
        if (c->iso == RT_READ_COMMITTED && x->state != RS_DATA) {
            c->i++;
            continue;
        }
        if (c->bad++ < 3)
            diverge(m,
                    "%s-%u %s: record at offset %" PRId64 " (id %" PRIu64 ") missing; next read"
                    " is offset %" PRId64,
                    topic_names[p->topic], p->index, iso, x->offset, x->id, r->offset);
        c->i++;
    }
    uint64_t id = 0;
    bool has_id = parse_id(r->value, r->value_len, &id);
    if (c->i >= p->n || p->r[c->i].offset != r->offset) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u %s: offset %" PRId64 " (id %s%" PRIu64 ") is not in the model%s",
                    topic_names[p->topic], p->index, iso, r->offset, has_id ? "" : "unparsable ",
                    id, r->offset >= c->bound ? " (beyond the bound)" : "");
        return 0;
    }
    const struct mrec *x = &p->r[c->i++];
    const char *why = "";
    if (!has_id || id != x->id) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u %s: offset %" PRId64 " holds id %" PRIu64 ", model id %" PRIu64,
                    topic_names[p->topic], p->index, iso, r->offset, id, x->id);
    } else if (!record_matches(m, r, x->id, x->keyed, &why)) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u %s: offset %" PRId64 " id %" PRIu64 ": %s", topic_names[p->topic],
                    p->index, iso, r->offset, id, why);
    } else if (c->iso == RT_READ_COMMITTED && x->state == RS_ABORTED) {
        if (c->bad++ < 3)
            diverge(m,
                    "%s-%u read_committed served an ABORTED record: offset %" PRId64 " id %" PRIu64
                    " (transaction %d)",
                    topic_names[p->topic], p->index, r->offset, id, x->txn);
    } else if (c->iso == RT_READ_COMMITTED && x->state == RS_OPEN) {
        if (c->bad++ < 3)
            diverge(m,
                    "%s-%u read_committed served a record of an open transaction: offset %" PRId64,
                    topic_names[p->topic], p->index, r->offset);
    } else if (r->offset >= c->bound) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u %s: offset %" PRId64 " served beyond the bound %" PRId64,
                    topic_names[p->topic], p->index, iso, r->offset, c->bound);
    }
    return 0;
}

/* True when the shard's retention timer moved the log start past `ls` meanwhile (the caller
 * then starts over from the new log start). */
/* Retention deletes a partition's oldest segments one at a time, publishing the new log start
 * and syncing the directory after each, so one retention run can move the log start under a
 * verify many times. A retry needs a strict advance (bounded by the segment count); this bound
 * only guards the loop. */
#define ATTEMPTS_MAX 10000

static bool log_start_moved(struct model *m, uint32_t mp, int64_t ls)
{
    int64_t now = -1;
    if (list_off(m, mp, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &now) != 0 || now <= ls)
        return false;
    if (m->o.retention_bytes < 0 && !m->part[mp].retention_since_check) {
        /* Only retention moves it: a loss, not a race. */
        diverge(m, "%s-%u: the log start moved from %" PRId64 " to %" PRId64 " with retention off",
                topic_names[m->part[mp].topic], m->part[mp].index, ls, now);
        return false;
    }
    return true;
}

static void verify_part(struct model *m, uint32_t mp)
{
    struct mpart *p = &m->part[mp];
    const char *topic = topic_names[p->topic];
    int64_t ls, hw, lso;
    int attempts = 0;
again:
    attempts++;
    int rc = list_off(m, mp, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &ls);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_list_offsets earliest");
        return;
    }
    if (ls != p->log_start) {
        bool retention = m->o.retention_bytes >= 0 || p->retention_since_check;
        if (ls > p->log_start && ls <= p->hw && retention) {
            mp_drop_below(p, ls);
        } else {
            diverge(m, "%s-%u: log start %" PRId64 ", model %" PRId64 " (retention %s)", topic,
                    p->index, ls, p->log_start,
                    retention ? "on" : "off in every session since the last check");
            return;
        }
    }
    p->retention_since_check = m->o.retention_bytes >= 0;
    int64_t mlso = model_lso(m, mp);
    if (mlso < p->log_start)
        mlso = p->log_start;
    rc = list_off(m, mp, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
    if (rc || hw != p->hw) {
        diverge(m, "%s-%u: high watermark %" PRId64 " (%s), model %" PRId64, topic, p->index, hw,
                rt_strerror(rc), p->hw);
        return;
    }
    rc = list_off(m, mp, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
    if (rc || lso != mlso) {
        diverge(m, "%s-%u: last stable offset %" PRId64 " (%s), model %" PRId64, topic, p->index,
                lso, rt_strerror(rc), mlso);
        return;
    }
    struct cmp_ctx c = {.m = m, .mp = mp, .iso = RT_READ_UNCOMMITTED, .bound = hw, .lso = lso};
    rc = read_range(m, mp, RT_READ_UNCOMMITTED, ls, hw, cmp_visit, &c);
    if (rc == RT_E_OFFSET_OUT_OF_RANGE && attempts < ATTEMPTS_MAX && log_start_moved(m, mp, ls))
        goto again;
    if (rc)
        diverge(m, "%s-%u: reading read_uncommitted from %" PRId64 ": %s (%s)", topic, p->index, ls,
                rt_strerror(rc), rc == RT_E_END ? "no progress" : rt_error_detail());
    else if (c.i != p->n && c.bad == 0)
        diverge(m,
                "%s-%u read_uncommitted: %zu model records from offset %" PRId64 " were not served",
                topic, p->index, p->n - c.i, p->r[c.i].offset);
    struct cmp_ctx k = {.m = m, .mp = mp, .iso = RT_READ_COMMITTED, .bound = lso, .lso = lso};
    rc = read_range(m, mp, RT_READ_COMMITTED, ls, lso, cmp_visit, &k);
    if (rc == RT_E_OFFSET_OUT_OF_RANGE && attempts < ATTEMPTS_MAX && log_start_moved(m, mp, ls))
        goto again;
    if (rc)
        diverge(m, "%s-%u: reading read_committed from %" PRId64 ": %s (%s; attempt %d)", topic,
                p->index, ls, rt_strerror(rc), rc == RT_E_END ? "no progress" : rt_error_detail(),
                attempts);
    else if (k.bad == 0)
        for (size_t i = k.i; i < p->n && p->r[i].offset < lso; i++)
            if (p->r[i].state == RS_DATA) {
                diverge(m,
                        "%s-%u read_committed: committed record at offset %" PRId64 " (id %" PRIu64
                        ") not served",
                        topic, p->index, p->r[i].offset, p->r[i].id);
                break;
            }
    /* A fetch at the HW is empty; beyond it is out of range. */
    rt_fetch *fh = NULL;
    rc = rt_fetch_start(m->e, topic, p->index, hw, 4096, RT_READ_UNCOMMITTED, &fh);
    if (rc == 0) {
        if (rt_fetch_get(fh)->size_bytes != 0)
            diverge(m, "%s-%u: a fetch at the high watermark returned %zu bytes", topic, p->index,
                    rt_fetch_get(fh)->size_bytes);
        rt_fetch_release(fh);
    } else {
        DIVERGE_RC(m, rc, "rt_fetch_start at the high watermark");
    }
    rc = rt_fetch_start(m->e, topic, p->index, hw + 1, 4096, RT_READ_UNCOMMITTED, &fh);
    if (rc != RT_E_OFFSET_OUT_OF_RANGE) {
        if (rc == 0)
            rt_fetch_release(fh);
        diverge(m,
                "%s-%u: a fetch beyond the high watermark: %s, expected "
                "RT_E_OFFSET_OUT_OF_RANGE",
                topic, p->index, rt_strerror(rc));
    }
    /* A time lookup: the first offset whose record timestamp is >= that of a random record. */
    if (p->n > 0) {
        int64_t spec = rec_ts(p->r[tu_rng_below(&m->rng, p->n)].id), want = -1, got = -1;
        for (size_t i = 0; i < p->n; i++)
            if (rec_ts(p->r[i].id) >= spec && (want < 0 || p->r[i].offset < want))
                want = p->r[i].offset;
        rc = list_off(m, mp, spec, RT_READ_UNCOMMITTED, &got);
        if ((rc || got != want) && attempts < ATTEMPTS_MAX && log_start_moved(m, mp, ls))
            goto again;
        if (rc || got != want)
            diverge(m,
                    "%s-%u: rt_list_offsets(timestamp %" PRId64 ") = %" PRId64
                    " (%s), model %" PRId64,
                    topic, p->index, spec, got, rt_strerror(rc), want);
    }
}

static bool group_pending(const struct model *m, uint32_t g, uint32_t mp)
{
    for (int t = 0; t < TXNS; t++)
        if (m->txn[t].open)
            for (uint32_t i = 0; i < m->txn[t].noff; i++)
                if (m->txn[t].off[i].group == g && m->txn[t].off[i].part == mp)
                    return true;
    return false;
}

static void verify_groups(struct model *m)
{
    for (uint32_t g = 0; g < GROUPS; g++)
        for (uint32_t mp = 0; mp < m->nparts; mp++) {
            const struct mpart *p = &m->part[mp];
            int64_t got = -9;
            int rc = rt_group_fetch_offsets(m->e, group_names[g], topic_names[p->topic], p->index,
                                            false, &got);
            if (rc || got != m->committed[g][mp])
                diverge(m, "group %s %s-%u: committed offset %" PRId64 " (%s), model %" PRId64,
                        group_names[g], topic_names[p->topic], p->index, got, rt_strerror(rc),
                        m->committed[g][mp]);
            got = -9;
            rc = rt_group_fetch_offsets(m->e, group_names[g], topic_names[p->topic], p->index, true,
                                        &got);
            bool pend = group_pending(m, g, mp);
            if (pend ? rc != RT_E_UNSTABLE_OFFSET_COMMIT : (rc || got != m->committed[g][mp]))
                diverge(m,
                        "group %s %s-%u require_stable: %s offset %" PRId64 ", model %s %" PRId64,
                        group_names[g], topic_names[p->topic], p->index, rt_strerror(rc), got,
                        pend ? "RT_E_UNSTABLE_OFFSET_COMMIT" : "0", m->committed[g][mp]);
        }
}

static void verify_all(struct model *m, bool all)
{
    for (uint32_t mp = 0; mp < m->nparts; mp++)
        if (all || m->touched[mp])
            verify_part(m, mp);
    verify_groups(m);
    memset(m->touched, 0, sizeof(m->touched));
}

/* ---- resolving a step: what the engine appended, matched against what was sent ---- */

struct pend {
    uint64_t id;
    int32_t part;   /* model partition it must land in; -1: any of the topic's */
    int32_t topic;  /* -1: any */
    int64_t offset; /* expected offset; -1 unknown */
    int32_t txn;    /* transaction number, 0 none */
    bool must;      /* acknowledged: must be present */
    bool forbidden; /* must not be present (a fenced or refused write) */
    bool seen;
    bool dup;           /* acknowledged as a duplicate */
    int64_t ack_offset; /* the offset the acknowledgement gave */
    int32_t prev_step;  /* named: the step that sent this sequence id before, 0 none */
    uint8_t keyed;
    int32_t named; /* named producer index + 1, 0 none */
    uint32_t seq;
};

struct step {
    struct pend *pend;
    size_t n, cap;
    size_t *slot; /* open-addressing table of pend indexes + 1 */
    size_t slot_cap;
    int64_t markers[PARTS_MAX]; /* control records the step adds per partition */
    bool exact;                 /* HW delta must equal records + markers */
};

static void step_init(struct step *s)
{
    memset(s, 0, sizeof(*s));
    s->exact = true;
}

static void step_free(struct step *s)
{
    free(s->pend);
    free(s->slot);
    memset(s, 0, sizeof(*s));
}

static struct pend *step_add(struct step *s, uint64_t id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->pend = realloc(s->pend, s->cap * sizeof(*s->pend));
        assert_non_null(s->pend);
    }
    struct pend *p = &s->pend[s->n++];
    memset(p, 0, sizeof(*p));
    p->id = id;
    p->part = -1;
    p->topic = -1;
    p->offset = -1;
    return p;
}

static void step_index(struct step *s)
{
    free(s->slot);
    s->slot_cap = 16;
    while (s->slot_cap < s->n * 2 + 1)
        s->slot_cap *= 2;
    s->slot = calloc(s->slot_cap, sizeof(*s->slot));
    assert_non_null(s->slot);
    for (size_t i = 0; i < s->n; i++) {
        size_t h = (size_t)tu_mix64(s->pend[i].id) & (s->slot_cap - 1);
        while (s->slot[h])
            h = (h + 1) & (s->slot_cap - 1);
        s->slot[h] = i + 1;
    }
}

static struct pend *step_find(struct step *s, uint64_t id)
{
    if (!s->slot)
        return NULL;
    size_t h = (size_t)tu_mix64(id) & (s->slot_cap - 1);
    while (s->slot[h]) {
        struct pend *p = &s->pend[s->slot[h] - 1];
        if (p->id == id)
            return p;
        h = (h + 1) & (s->slot_cap - 1);
    }
    return NULL;
}

struct res_ctx {
    struct model *m;
    struct step *s;
    uint32_t mp;
    int64_t last;
    int64_t count;
    int bad;
};

static int res_visit(void *vctx, const struct rt_record_view *r, const struct rt_fetch_view *fv)
{
    (void)fv;
    struct res_ctx *c = vctx;
    struct model *m = c->m;
    struct mpart *mp = &m->part[c->mp];
    const char *topic = topic_names[mp->topic];
    uint64_t id = 0;
    if (!parse_id(r->value, r->value_len, &id)) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u offset %" PRId64 ": a record nobody sent (value unparsable)", topic,
                    mp->index, r->offset);
        return 0;
    }
    struct pend *p = step_find(c->s, id);
    const char *why = "";
    if (!p) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u offset %" PRId64 ": id %" PRIu64 " was not sent in this step%s",
                    topic, mp->index, r->offset, id,
                    (id & ID_NAMED_BIT) ? " (a named record stored again)" : "");
        return 0;
    }
    if (p->seen) {
        if (c->bad++ < 3)
            diverge(m, "%s-%u offset %" PRId64 ": id %" PRIu64 " stored twice", topic, mp->index,
                    r->offset, id);
        return 0;
    }
    p->seen = true;
    c->count++;
    if (p->forbidden && c->bad++ < 3)
        diverge(m, "%s-%u offset %" PRId64 ": id %" PRIu64 " was refused (or fenced) yet stored",
                topic, mp->index, r->offset, id);
    if (p->part >= 0 && (uint32_t)p->part != c->mp && c->bad++ < 3)
        diverge(m, "%s-%u offset %" PRId64 ": id %" PRIu64 " belongs in %s-%u", topic, mp->index,
                r->offset, id, topic_names[m->part[p->part].topic], m->part[p->part].index);
    if (p->topic >= 0 && (uint32_t)p->topic != mp->topic && c->bad++ < 3)
        diverge(m, "%s-%u: id %" PRIu64 " belongs in topic %s", topic, mp->index, id,
                topic_names[p->topic]);
    if (p->offset >= 0 && p->offset != r->offset && c->bad++ < 3)
        diverge(m, "%s-%u: id %" PRIu64 " acknowledged at offset %" PRId64 ", read at %" PRId64,
                topic, mp->index, id, p->offset, r->offset);
    if (!record_matches(m, r, id, p->keyed, &why) && c->bad++ < 3)
        diverge(m, "%s-%u offset %" PRId64 " id %" PRIu64 ": %s", topic, mp->index, r->offset, id,
                why);
    if (r->offset <= c->last && c->bad++ < 3)
        diverge(m, "%s-%u: offsets not increasing (%" PRId64 " after %" PRId64 ")", topic,
                mp->index, r->offset, c->last);
    c->last = r->offset;
    mp_push(mp, r->offset, id, p->txn, p->txn ? RS_OPEN : RS_DATA, p->keyed);
    if (p->named) {
        struct mnamed *n = &m->named[p->named - 1];
        if (n->stored[p->seq]++ && c->bad++ < 3)
            diverge(m,
                    "named producer %s: sequence %u stored twice (%s-%u and %s-%u offset %" PRId64
                    ") — not exactly once",
                    n->name, p->seq, topic_names[m->part[n->stored_at[p->seq] - 1].topic],
                    m->part[n->stored_at[p->seq] - 1].index, topic, mp->index, r->offset);
        n->stored_at[p->seq] = (uint8_t)(c->mp + 1);
    }
    for (int t = 0; t < TXNS; t++)
        if (p->txn && m->txn[t].open && m->txn[t].txn_no == p->txn &&
            m->txn[t].first_off[c->mp] < 0)
            m->txn[t].first_off[c->mp] = r->offset;
    return 0;
}

/* Reads what every partition gained since the model's HW and matches it with the step. */
static void resolve(struct model *m, struct step *s)
{
    step_index(s);
    for (uint32_t mp = 0; mp < m->nparts; mp++) {
        struct mpart *p = &m->part[mp];
        int64_t hw = -1;
        int rc = list_off(m, mp, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
        if (rc) {
            DIVERGE_RC(m, rc, "rt_list_offsets latest");
            continue;
        }
        if (hw == p->hw && s->markers[mp] == 0)
            continue;
        m->touched[mp] = true;
        if (hw < p->hw) {
            diverge(m, "%s-%u: high watermark went back from %" PRId64 " to %" PRId64,
                    topic_names[p->topic], p->index, p->hw, hw);
            continue;
        }
        struct res_ctx c = {.m = m, .s = s, .mp = mp, .last = p->hw - 1};
        int64_t from = p->hw > p->log_start ? p->hw : p->log_start;
        rc = read_range(m, mp, RT_READ_UNCOMMITTED, from, hw, res_visit, &c);
        if (rc)
            diverge(m, "%s-%u: reading the new records from %" PRId64 ": %s (%s)",
                    topic_names[p->topic], p->index, from, rt_strerror(rc),
                    rc == RT_E_END ? "no progress" : rt_error_detail());
        if (s->exact && hw - p->hw != c.count + s->markers[mp])
            diverge(m,
                    "%s-%u: high watermark moved by %" PRId64 " for %" PRId64
                    " records and %" PRId64 " markers",
                    topic_names[p->topic], p->index, hw - p->hw, c.count, s->markers[mp]);
        p->hw = hw;
    }
    for (size_t i = 0; i < s->n; i++) {
        struct pend *p = &s->pend[i];
        if (p->must && !p->seen) {
            if (p->named)
                diverge(m,
                        "named producer %s: sequence %u acknowledged%s (offset %" PRId64
                        ") but not stored%s; expected in partition %d; sent before in step %d",
                        m->named[p->named - 1].name, p->seq, p->dup ? " as a duplicate" : "",
                        p->ack_offset,
                        m->named[p->named - 1].stored[p->seq] ? "" : " anywhere (lost)", p->part,
                        p->prev_step);
            else
                diverge(m, "id %" PRIu64 " acknowledged (offset %" PRId64 ") but not stored", p->id,
                        p->offset);
            break;
        }
    }
}

/* ---- engine life cycle ---- */

static void random_options(struct model *m)
{
    static const uint32_t seg_kib[] = {8, 16, 32, 64};
    tu_options(&m->o);
    m->o.segment_size_bytes = seg_kib[tu_rng_below(&m->rng, 4)] * 1024u;
    if (m->cfg->segment_kib)
        m->o.segment_size_bytes = m->cfg->segment_kib * 1024u;
    m->o.batch_size_max_bytes = m->o.segment_size_bytes < 16384 ? m->o.segment_size_bytes : 16384;
    m->o.index_interval_bytes = 512;
    m->o.shard_count = 1 + (uint32_t)tu_rng_below(&m->rng, 3);
    m->o.retention_ms = -1;
    m->o.retention_bytes = tu_rng_below(&m->rng, 3) == 0 ? 512 * 1024 : -1;
    m->o.producer_id_expiration_ms = INT64_MAX / 4;
    m->o.txn_check_interval_ms = 3600 * 1000;
    m->o.sync_mode = RT_SYNC_ALWAYS;
}

static int txn_producer_open(struct model *m, int t, rt_producer **out)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = m->txn[t].id;
    po.transaction_timeout_ms = 600000;
    po.linger_ms = 1;
    int rc = rt_producer_open(m->e, &po, out);
    if (rc == 0)
        rc = rt_producer_init_transactions(*out, -1);
    return rc;
}

static int named_open(struct model *m, int n)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.name = m->named[n].name;
    po.linger_ms = 1;
    po.batch_size_bytes = 512 + (uint32_t)tu_rng_below(&m->rng, 8192);
    return rt_producer_open(m->e, &po, &m->named[n].p);
}

/* The model side of a transaction ending (commit or abort): markers per partition. */
static void txn_end_model(struct model *m, int t, bool commit, struct step *s)
{
    struct mtxn *x = &m->txn[t];
    for (uint32_t mp = 0; mp < m->nparts; mp++)
        if (x->first_off[mp] >= 0) {
            s->markers[mp]++;
            mp_settle(&m->part[mp], x->txn_no, commit ? RS_DATA : RS_ABORTED);
            m->touched[mp] = true;
        }
    if (commit)
        for (uint32_t i = 0; i < x->noff; i++) {
            uint32_t g = x->off[i].group, mp = x->off[i].part;
            if (x->off[i].clock > m->committed_clock[g][mp]) {
                m->committed[g][mp] = x->off[i].offset;
                m->committed_clock[g][mp] = x->off[i].clock;
            }
        }
    x->open = false;
    x->noff = 0;
    for (uint32_t mp = 0; mp < PARTS_MAX; mp++)
        x->first_off[mp] = -1;
}

/* Opens the engine and every producer; an open transaction left by the last session is
 * aborted by init_transactions. */
static void seg_bounds_walk(struct model *m, bool starting);

static bool engine_up(struct model *m, struct step *s)
{
    seg_bounds_walk(m, true);
    m->session_segment_bytes = m->o.segment_size_bytes;
    for (uint32_t mp = 0; mp < PARTS_MAX && m->o.retention_bytes >= 0; mp++)
        m->part[mp].retention_since_check = true;
    int rc = rt_open(m->dir, &m->o, &m->e);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_open");
        m->e = NULL;
        return false;
    }
    for (int t = 0; t < TXNS; t++) {
        rc = txn_producer_open(m, t, &m->txn[t].p);
        if (rc) {
            DIVERGE_RC(m, rc, "opening a transactional producer");
            return false;
        }
        if (m->txn[t].open)
            txn_end_model(m, t, false, s);
    }
    for (int n = 0; n < NAMED; n++) {
        rc = named_open(m, n);
        if (rc) {
            DIVERGE_RC(m, rc, "opening a named producer");
            return false;
        }
    }
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.linger_ms = 1;
    rc = rt_producer_open(m->e, &po, &m->idem);
    if (rc) {
        DIVERGE_RC(m, rc, "opening an idempotent producer");
        return false;
    }
    return true;
}

static void producers_close(struct model *m)
{
    for (int t = 0; t < TXNS; t++)
        if (m->txn[t].p) {
            rt_producer_close(m->txn[t].p);
            m->txn[t].p = NULL;
        }
    for (int n = 0; n < NAMED; n++)
        if (m->named[n].p) {
            rt_producer_close(m->named[n].p);
            m->named[n].p = NULL;
        }
    if (m->idem) {
        rt_producer_close(m->idem);
        m->idem = NULL;
    }
}

static struct seg_bound *seg_bound_of(struct model *m, const char *name, bool *created)
{
    *created = false;
    for (size_t i = 0; i < m->bound_count; i++)
        if (strcmp(m->bounds[i].name, name) == 0)
            return &m->bounds[i];
    if (m->bound_count == m->bound_capacity) {
        m->bound_capacity = m->bound_capacity ? m->bound_capacity * 2 : 64;
        m->bounds = realloc(m->bounds, m->bound_capacity * sizeof(*m->bounds));
        assert_non_null(m->bounds);
    }
    struct seg_bound *b = &m->bounds[m->bound_count++];
    snprintf(b->name, sizeof(b->name), "%s", name);
    b->bytes = 0;
    *created = true;
    return b;
}

/* Walks every partition's .log files: files not seen before were made in the last session (the
 * parent's, or a killed child's with the same options) and are bounded by its segment size; when
 * a session starts (starting) the newest file of each partition may grow again, up to the larger
 * of its bound and the new session's size. After a close (!starting), every file must be within
 * its bound. The options change between sessions, so one fixed bound would be wrong. */
static void seg_bounds_walk(struct model *m, bool starting)
{
    for (uint32_t mp = 0; mp < m->nparts; mp++) {
        const char *sub = tu_path("%s-%u", topic_names[m->part[mp].topic], m->part[mp].index);
        char *d = tu_path("%s/%s", m->dir, sub);
        struct dirent **names = NULL;
        int n = scandir(d, &names, NULL, alphasort);
        int newest = -1;
        for (int i = 0; i < n; i++) {
            size_t l = strlen(names[i]->d_name);
            if (l >= 4 && strcmp(names[i]->d_name + l - 4, ".log") == 0)
                newest = i;
        }
        int over = 0;
        for (int i = 0; i < n; i++) {
            const char *fname = names[i]->d_name;
            size_t l = strlen(fname);
            if (l < 4 || strcmp(fname + l - 4, ".log") != 0)
                continue;
            char key[320];
            snprintf(key, sizeof(key), "%s/%s", sub, fname);
            bool created = false;
            struct seg_bound *b = seg_bound_of(m, key, &created);
            if (created)
                b->bytes = starting ? m->session_segment_bytes : m->o.segment_size_bytes;
            if (starting) {
                if (i == newest && m->o.segment_size_bytes > b->bytes)
                    b->bytes = m->o.segment_size_bytes;
                continue;
            }
            char *f = tu_path("%s/%s", d, fname);
            size_t sz = tu_file_size(f);
            if (sz > b->bytes && over++ < 2)
                diverge(m,
                        "%s is %zu bytes, over the segment_size_bytes %" PRIu64
                        " it was written under",
                        f, sz, b->bytes);
            free(f);
        }
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        free(d);
        free((char *)sub);
    }
}

/* Every .log of a closed directory is at most the segment_size_bytes it was written under. */
static void check_segment_sizes(struct model *m)
{
    seg_bounds_walk(m, false);
}

static bool engine_down(struct model *m, bool verify)
{
    producers_close(m);
    int rc = rt_close(m->e);
    m->e = NULL;
    if (rc) {
        DIVERGE_RC(m, rc, "rt_close");
        return false;
    }
    check_segment_sizes(m);
    if (verify) {
        struct tu_verify_log vl = {.print_max = 5};
        m->verifies++;
        rc = rt_verify(m->dir, tu_on_problem, &vl);
        if (rc)
            diverge(m, "rt_verify after a clean close: %s, %u problems (above)", rt_strerror(rc),
                    vl.problems);
    }
    return true;
}

/* ---- operations ---- */

static uint32_t pick_part(struct model *m)
{
    return (uint32_t)tu_rng_below(&m->rng, m->nparts);
}

static int print_txn(void *ctx, const struct rt_txn_info *t)
{
    (void)ctx;
    fprintf(stderr, "  txn %s: producer %" PRId64 " epoch %d state %s, %u partitions\n",
            t->transactional_id, t->producer_id, t->epoch, t->state, t->partition_count);
    return 0;
}

struct show_ctx {
    int shown;
};

static int show_visit(void *vctx, const struct rt_record_view *r, const struct rt_fetch_view *fv)
{
    (void)fv;
    struct show_ctx *c = vctx;
    if (c->shown++ < 4)
        fprintf(stderr, "  offset %" PRId64 ": %.*s (producer %" PRId64 " epoch %d%s)\n", r->offset,
                r->value_len > 40 ? 40 : (r->value_len < 0 ? 0 : r->value_len),
                r->value ? (const char *)r->value : "", r->producer_id, r->producer_epoch,
                r->transactional ? ", transactional" : "");
    return 0;
}

/* Prints what the engine holds in [from, to) of mp that the model does not know of. */
static void show_range(struct model *m, uint32_t mp, int64_t from, int64_t to)
{
    struct show_ctx c = {0};
    int rc = read_range(m, mp, RT_READ_UNCOMMITTED, from, to, show_visit, &c);
    fprintf(stderr, "  %s-%u [%" PRId64 ", %" PRId64 "): %d records (%s)%s\n",
            topic_names[m->part[mp].topic], m->part[mp].index, from, to, c.shown, rt_strerror(rc),
            c.shown ? "" : " — only control records there");
    /* The raw batches: who wrote them. */
    rt_fetch *fh = NULL;
    if (rt_fetch_start(m->e, topic_names[m->part[mp].topic], m->part[mp].index, from, 1 << 16,
                       RT_READ_UNCOMMITTED, &fh) == 0) {
        const struct rt_fetch_view *fv = rt_fetch_get(fh);
        size_t pos = 0;
        while (pos + 61 <= fv->size_bytes) {
            const uint8_t *b = fv->data + pos;
            int64_t base = (int64_t)be64_of(b);
            if (base >= to)
                break;
            if (base + (int64_t)be32_of(b + 23) >= from)
                fprintf(stderr,
                        "  batch at %" PRId64 ": attributes 0x%x producer %" PRId64
                        " epoch %d records %u\n",
                        base, (unsigned)(b[21] << 8 | b[22]), (int64_t)be64_of(b + 43),
                        (int)(int16_t)(b[51] << 8 | b[52]), be32_of(b + 57));
            pos += 12 + be32_of(b + 8);
        }
        rt_fetch_release(fh);
    }
    rt_txn_list(m->e, print_txn, NULL);
    for (int t = 0; t < TXNS; t++) {
        int64_t pid = -1;
        int16_t ep = -1;
        if (m->txn[t].p)
            rt_producer_id(m->txn[t].p, &pid, &ep);
        fprintf(stderr, "  model %s: producer %" PRId64 " epoch %d, %s\n", m->txn[t].id, pid, ep,
                m->txn[t].open ? "open" : "no transaction");
    }
}

static void op_append(struct model *m, struct step *s)
{
    uint32_t mp = pick_part(m);
    struct mpart *p = &m->part[mp];
    size_t n = 1 + (size_t)tu_rng_below(&m->rng, 8);
    static struct recbuf bufs[8];
    struct rt_record recs[8];
    uint32_t bytes = 0;
    size_t k = 0;
    for (; k < n; k++) {
        uint64_t id = m->next_id++;
        bool keyed = tu_rng_below(&m->rng, 2);
        make_record(m, id, keyed, &bufs[k], &recs[k]);
        if (k > 0 && bytes + (uint32_t)recs[k].value_len + 64 > m->o.batch_size_max_bytes / 2)
            break;
        bytes += (uint32_t)recs[k].value_len + 64;
        struct pend *pe = step_add(s, id);
        pe->part = (int32_t)mp;
        pe->keyed = keyed;
    }
    int64_t base = -1;
    int rc = rt_append(m->e, topic_names[p->topic], p->index, recs, k, &base);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_append");
        return;
    }
    if (base != p->hw) {
        diverge(m, "rt_append: base offset %" PRId64 ", model HW %" PRId64, base, p->hw);
        show_range(m, mp, p->hw, base);
    }
    for (size_t i = 0; i < k; i++) {
        s->pend[s->n - k + i].must = true;
        s->pend[s->n - k + i].offset = base + (int64_t)i;
    }
    m->records_acked += (int64_t)k;
}

static int encode_batch(struct model *m, uint8_t *buf, size_t cap, int64_t pid, int16_t epoch,
                        int32_t seq, uint64_t id0, size_t n, size_t *len)
{
    struct batch_builder b;
    int rc = batch_builder_init(&b, buf, cap, 0, pid, epoch, seq);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct recbuf rb;
        struct rt_record r;
        make_record(m, id0 + i, false, &rb, &r);
        rc = batch_builder_add(&b, &r);
    }
    return rc ? rc : batch_builder_finish(&b, len);
}

static void op_append_batch(struct model *m, struct step *s)
{
    uint32_t mp = pick_part(m);
    struct mpart *p = &m->part[mp];
    struct mraw *raw = &m->raw;
    bool with_pid = raw->pid >= 0 && tu_rng_below(&m->rng, 3) != 0;
    size_t cap = m->o.batch_size_max_bytes;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    size_t len = 0, n = 1 + (size_t)tu_rng_below(&m->rng, 3);
    int64_t base = -1;
    int rc;
    if (with_pid && raw->last_first_seq[mp] >= 0 && tu_rng_below(&m->rng, 3) == 0) {
        /* The exact retry of the last batch: a duplicate with its original offset. */
        rc = encode_batch(m, buf, cap, raw->pid, raw->epoch, raw->last_first_seq[mp],
                          raw->last_id[mp], (size_t)raw->last_count[mp], &len);
        assert_int_equal(rc, 0);
        rc = rt_append_batch(m->e, topic_names[p->topic], p->index, buf, len, &base);
        if (rc || base != raw->last_base[mp])
            diverge(m,
                    "retry of the last idempotent batch: %s base %" PRId64
                    ", expected a duplicate at %" PRId64,
                    rt_strerror(rc), base, raw->last_base[mp]);
        m->dups++;
        goto out;
    }
    if (with_pid && tu_rng_below(&m->rng, 6) == 0) {
        /* A gap in the sequence: refused, nothing appended. */
        uint64_t id = m->next_id;
        m->next_id += n;
        rc = encode_batch(m, buf, cap, raw->pid, raw->epoch, raw->next_seq[mp] + 1, id, n, &len);
        assert_int_equal(rc, 0);
        for (size_t i = 0; i < n; i++)
            step_add(s, id + i)->forbidden = true;
        rc = rt_append_batch(m->e, topic_names[p->topic], p->index, buf, len, &base);
        /* A partition that never saw the id wants sequence 0 first. */
        int want =
            raw->last_first_seq[mp] < 0 ? RT_E_UNKNOWN_PRODUCER_ID : RT_E_OUT_OF_ORDER_SEQUENCE;
        if (rc != want)
            diverge(m, "an idempotent batch with a sequence gap: %s, expected %s", rt_strerror(rc),
                    rt_strerror(want));
        goto out;
    }
    uint64_t id = m->next_id;
    m->next_id += n;
    int32_t seq = with_pid ? raw->next_seq[mp] : -1;
    rc = encode_batch(m, buf, cap, with_pid ? raw->pid : -1, with_pid ? raw->epoch : -1, seq, id, n,
                      &len);
    assert_int_equal(rc, 0);
    rc = rt_append_batch(m->e, topic_names[p->topic], p->index, buf, len, &base);
    if (rc) {
        DIVERGE_RC(m, rc, with_pid ? "rt_append_batch (idempotent)" : "rt_append_batch");
        goto out;
    }
    if (base != p->hw) {
        diverge(m, "rt_append_batch: base offset %" PRId64 ", model HW %" PRId64, base, p->hw);
        show_range(m, mp, p->hw, base);
    }
    for (size_t i = 0; i < n; i++) {
        struct pend *pe = step_add(s, id + i);
        pe->part = (int32_t)mp;
        pe->must = true;
        pe->offset = base + (int64_t)i;
    }
    if (with_pid) {
        raw->last_first_seq[mp] = seq;
        raw->last_count[mp] = (int32_t)n;
        raw->last_base[mp] = base;
        raw->last_id[mp] = id;
        raw->next_seq[mp] = seq + (int32_t)n;
    }
    m->records_acked += (int64_t)n;
out:
    free(buf);
}

/* concurrent: appender threads plus one reader of the hot partition */

struct app_thread {
    struct model *m;
    pthread_t th;
    uint32_t parts[2];
    uint32_t nparts;
    uint64_t id0;
    uint32_t count;
    uint32_t len; /* value length of every record */
    int64_t *base;
    uint32_t *part_of;
    int rc;
    char detail[256];
};

static void *app_main(void *arg)
{
    struct app_thread *a = arg;
    uint64_t r = a->id0;
    for (uint32_t i = 0; i < a->count; i++) {
        uint64_t id = ID_FIXED_BIT | (uint64_t)a->len << ID_FIXED_SHIFT | (a->id0 + i);
        uint32_t mp = a->parts[tu_rng_below(&r, a->nparts)];
        struct mpart *p = &a->m->part[mp];
        uint8_t value[2048];
        rec_value(id, a->len, value);
        struct rt_record rec = {.key_len = -1,
                                .value = value,
                                .value_len = (int32_t)a->len,
                                .timestamp_ms = rec_ts(id)};
        a->part_of[i] = mp;
        int rc = rt_append(a->m->e, topic_names[p->topic], p->index, &rec, 1, &a->base[i]);
        if (rc) {
            a->rc = rc;
            snprintf(a->detail, sizeof(a->detail), "%s", rt_error_detail());
            a->count = i;
            break;
        }
    }
    return NULL;
}

struct reader_thread {
    struct model *m;
    pthread_t th;
    uint32_t mp;
    atomic_bool stop;
    int rc;
    int64_t records;
    char detail[256];
};

static void *reader_main(void *arg)
{
    struct reader_thread *rd = arg;
    struct mpart *p = &rd->m->part[rd->mp];
    const char *topic = topic_names[p->topic];
    int64_t from = p->hw;
    while (!atomic_load(&rd->stop) && rd->rc == 0) {
        rt_fetch *fh = NULL;
        int rc = rt_fetch_start(rd->m->e, topic, p->index, from, 32768, RT_READ_UNCOMMITTED, &fh);
        if (rc) {
            rd->rc = rc;
            snprintf(rd->detail, sizeof(rd->detail), "rt_fetch_start %" PRId64 ": %s", from,
                     rt_error_detail());
            break;
        }
        struct rt_records it;
        struct rt_record_view v;
        rc = rt_records_init(&it, fh, from);
        while (rc == 0 && (rc = rt_records_next(&it, &v)) == 0) {
            uint64_t id;
            if (!parse_id(v.value, v.value_len, &id) || v.timestamp_ms != rec_ts(id)) {
                rc = RT_E_CORRUPT;
                snprintf(rd->detail, sizeof(rd->detail), "offset %" PRId64 ": a foreign record",
                         v.offset);
                break;
            }
            rd->records++;
        }
        int64_t next = rt_records_next_offset(&it);
        rt_fetch_release(fh);
        if (rc != RT_E_END) {
            rd->rc = rc;
            if (!rd->detail[0])
                snprintf(rd->detail, sizeof(rd->detail), "%s", rt_error_detail());
            break;
        }
        if (next == from)
            tu_sleep_ms(1);
        from = next;
    }
    return NULL;
}

static void op_concurrent(struct model *m, struct step *s)
{
    uint32_t threads = 2 + (uint32_t)tu_rng_below(&m->rng, 7);
    uint32_t hot = pick_part(m), other = pick_part(m);
    struct app_thread a[8];
    uint32_t per = 5 + (uint32_t)tu_rng_below(&m->rng, 20);
    uint32_t len = 600 + (uint32_t)tu_rng_below(&m->rng, 900);
    if (len > value_max(m))
        len = value_max(m);
    if (len < 24)
        len = 24;
    struct reader_thread rd = {.m = m, .mp = hot};
    atomic_init(&rd.stop, false);
    assert_int_equal(pthread_create(&rd.th, NULL, reader_main, &rd), 0);
    for (uint32_t t = 0; t < threads; t++) {
        a[t] = (struct app_thread){.m = m,
                                   .parts = {hot, other},
                                   .nparts = tu_rng_below(&m->rng, 2) ? 2 : 1,
                                   .id0 = m->next_id,
                                   .count = per,
                                   .len = len};
        m->next_id += per;
        a[t].base = calloc(per, sizeof(int64_t));
        a[t].part_of = calloc(per, sizeof(uint32_t));
        assert_int_equal(pthread_create(&a[t].th, NULL, app_main, &a[t]), 0);
    }
    for (uint32_t t = 0; t < threads; t++)
        pthread_join(a[t].th, NULL);
    atomic_store(&rd.stop, true);
    pthread_join(rd.th, NULL);
    if (rd.rc)
        diverge(m, "a reader of %s-%u during concurrent appends: %s (%s)",
                topic_names[m->part[hot].topic], m->part[hot].index, rt_strerror(rd.rc), rd.detail);
    for (uint32_t t = 0; t < threads; t++) {
        if (a[t].rc)
            diverge(m, "concurrent rt_append (thread %u): %s (%s)", t, rt_strerror(a[t].rc),
                    a[t].detail);
        for (uint32_t i = 0; i < per; i++) {
            struct pend *pe =
                step_add(s, ID_FIXED_BIT | (uint64_t)len << ID_FIXED_SHIFT | (a[t].id0 + i));
            pe->keyed = 0;
            if (i < a[t].count) {
                pe->part = (int32_t)a[t].part_of[i];
                pe->must = true;
                pe->offset = a[t].base[i];
                m->records_acked++;
            }
        }
        free(a[t].base);
        free(a[t].part_of);
    }
}

/* producer sends */

struct deliv {
    atomic_int errors;
    atomic_int first_error;
    atomic_int dups;
};

static void on_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    (void)offset;
    struct deliv *d = ctx;
    if (err) {
        int zero = 0;
        atomic_fetch_add(&d->errors, 1);
        atomic_compare_exchange_strong(&d->first_error, &zero, err);
    }
    if (duplicate)
        atomic_fetch_add(&d->dups, 1);
}

static void op_idem_send(struct model *m, struct step *s)
{
    uint32_t topic = (uint32_t)tu_rng_below(&m->rng, TOPICS);
    uint32_t n = 1 + (uint32_t)tu_rng_below(&m->rng, 40);
    struct deliv d = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = m->next_id++;
        uint32_t mode = (uint32_t)tu_rng_below(&m->rng, 3); /* explicit, keyed, null key */
        struct recbuf rb;
        struct rt_producer_message msg = {.sequence = -1};
        make_record(m, id, mode == 1, &rb, &msg.record);
        int32_t part = -1;
        struct pend *pe = step_add(s, id);
        pe->keyed = mode == 1;
        pe->topic = (int32_t)topic;
        if (mode == 0) {
            part = (int32_t)tu_rng_below(&m->rng, topic_parts[topic]);
            pe->part = (int32_t)mp_of(topic, (uint32_t)part);
        } else if (mode == 1) {
            pe->part =
                (int32_t)mp_of(topic, murmur2_partition(msg.record.key, (size_t)msg.record.key_len,
                                                        topic_parts[topic]));
        }
        int rc = rt_producer_send(m->idem, topic_names[topic], part, &msg, on_delivery, &d);
        if (rc) {
            DIVERGE_RC(m, rc, "rt_producer_send (idempotent)");
            pe->forbidden = true;
            continue;
        }
        pe->must = true;
    }
    int rc = rt_producer_flush(m->idem, -1);
    if (rc || atomic_load(&d.errors))
        diverge(m, "idempotent producer flush: %s, %d delivery errors (first %s)", rt_strerror(rc),
                atomic_load(&d.errors), rt_strerror(atomic_load(&d.first_error)));
    m->records_acked += n;
}

/* Sends seqs[from..to) of a named producer's input. */
static void named_send_range(struct model *m, struct step *s, int ni, uint32_t from, uint32_t to)
{
    struct mnamed *nm = &m->named[ni];
    struct deliv d = {0};
    uint32_t topic = nm->topic;
    for (uint32_t i = from; i < to; i++) {
        uint32_t seq = nm->seqs[i];
        uint64_t id = ID_NAMED_BIT | (uint64_t)ni << 32 | seq;
        uint32_t mode = (uint32_t)(tu_mix64(id) % 3); /* null key, keyed, explicit */
        if (mode == 0 && m->cfg->skip_named_nullkey)
            mode = 1;
        struct recbuf rb;
        struct rt_producer_message msg = {.sequence = seq};
        make_record(m, id, mode == 1, &rb, &msg.record);
        int32_t part = -1;
        struct pend *pe = step_add(s, id);
        pe->keyed = mode == 1;
        pe->topic = (int32_t)topic;
        pe->named = ni + 1;
        pe->seq = seq;
        if (mode == 2) {
            part = (int32_t)(seq % topic_parts[topic]);
            pe->part = (int32_t)mp_of(topic, (uint32_t)part);
        } else if (mode == 1) {
            pe->part =
                (int32_t)mp_of(topic, murmur2_partition(msg.record.key, (size_t)msg.record.key_len,
                                                        topic_parts[topic]));
        }
        /* Already stored: a rerun must not store it again. */
        pe->forbidden = nm->stored[seq] > 0;
        int rc = rt_producer_send(nm->p, topic_names[topic], part, &msg, on_delivery, &d);
        if (rc) {
            DIVERGE_RC(m, rc, "rt_producer_send (named)");
            pe->forbidden = true;
            continue;
        }
        pe->must = !pe->forbidden;
    }
    int rc = rt_producer_flush(nm->p, -1);
    if (rc || atomic_load(&d.errors))
        diverge(m, "named producer %s flush: %s, %d delivery errors (first %s)", nm->name,
                rt_strerror(rc), atomic_load(&d.errors), rt_strerror(atomic_load(&d.first_error)));
}

static void named_check_last_sequence(struct model *m, int ni)
{
    struct mnamed *nm = &m->named[ni];
    for (uint32_t k = 0; k < topic_parts[nm->topic]; k++) {
        uint32_t mp = mp_of(nm->topic, k);
        int64_t want = -1, got = -9;
        for (uint32_t i = 0; i < nm->sent_count; i++)
            if (nm->stored[nm->seqs[i]] && nm->stored_at[nm->seqs[i]] == mp + 1)
                want = nm->seqs[i];
        int rc = rt_producer_last_sequence(nm->p, topic_names[nm->topic], k, &got);
        if (rc || got != want)
            diverge(m,
                    "named producer %s: rt_producer_last_sequence(%s-%u) = %" PRId64
                    " (%s), model %" PRId64,
                    nm->name, topic_names[nm->topic], k, got, rt_strerror(rc), want);
    }
}

static void op_named(struct model *m, struct step *s, bool rerun)
{
    int ni = (int)tu_rng_below(&m->rng, NAMED_CHILD);
    struct mnamed *nm = &m->named[ni];
    uint32_t add = 1 + (uint32_t)tu_rng_below(&m->rng, 30);
    if (nm->sent_count + add >= NAMED_SEQ_MAX / 4)
        return;
    uint32_t from = nm->sent_count;
    if (rerun) {
        rt_producer_close(nm->p);
        nm->p = NULL;
        int rc = named_open(m, ni);
        if (rc) {
            DIVERGE_RC(m, rc, "reopening a named producer");
            return;
        }
        from = nm->sent_count - (uint32_t)tu_rng_below(&m->rng, nm->sent_count + 1);
    }
    uint32_t last = nm->sent_count ? nm->seqs[nm->sent_count - 1] : 0;
    for (uint32_t i = 0; i < add; i++) {
        last += nm->sent_count + i == 0
                    ? (uint32_t)tu_rng_below(&m->rng, 3)
                    : 1 + (uint32_t)tu_rng_below(&m->rng, 2) * (uint32_t)tu_rng_below(&m->rng, 3);
        nm->seqs[nm->sent_count + i] = last;
    }
    nm->sent_count += add;
    named_send_range(m, s, ni, from, nm->sent_count);
    m->records_acked += add;
}

static int pick_txn(struct model *m)
{
    return (int)tu_rng_below(&m->rng, TXNS);
}

static void op_txn_send(struct model *m, struct step *s, int t)
{
    struct mtxn *x = &m->txn[t];
    if (!x->open) {
        int rc = rt_producer_begin(x->p);
        if (rc) {
            DIVERGE_RC(m, rc, "rt_producer_begin");
            return;
        }
        x->open = true;
        x->txn_no = ++m->next_txn_no;
        x->opened_step = m->step;
    }
    uint32_t n = 1 + (uint32_t)tu_rng_below(&m->rng, 16);
    struct deliv d = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = m->next_id++;
        uint32_t mp = pick_part(m);
        struct recbuf rb;
        struct rt_producer_message msg = {.sequence = -1};
        make_record(m, id, tu_rng_below(&m->rng, 2), &rb, &msg.record);
        struct pend *pe = step_add(s, id);
        pe->keyed = msg.record.key_len >= 0;
        pe->part = (int32_t)mp;
        pe->txn = x->txn_no;
        int rc = rt_producer_send(x->p, topic_names[m->part[mp].topic], (int32_t)m->part[mp].index,
                                  &msg, on_delivery, &d);
        if (rc) {
            DIVERGE_RC(m, rc, "rt_producer_send (transactional)");
            pe->forbidden = true;
            continue;
        }
        pe->must = true;
    }
    int rc = rt_producer_flush(x->p, -1);
    if (rc || atomic_load(&d.errors))
        diverge(m, "transactional producer flush: %s, %d delivery errors (first %s)",
                rt_strerror(rc), atomic_load(&d.errors), rt_strerror(atomic_load(&d.first_error)));
}

static void op_txn_offsets(struct model *m, int t)
{
    struct mtxn *x = &m->txn[t];
    if (!x->open || x->noff >= TXN_OFFSETS_MAX - 2)
        return;
    uint32_t g = (uint32_t)tu_rng_below(&m->rng, GROUPS);
    uint32_t n = 1 + (uint32_t)tu_rng_below(&m->rng, 2);
    struct rt_offset offs[2];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mp = pick_part(m);
        int64_t off = (int64_t)tu_rng_below(&m->rng, (uint64_t)m->part[mp].hw + 1);
        offs[i] = (struct rt_offset){
            .topic = topic_names[m->part[mp].topic], .partition = m->part[mp].index, .offset = off};
        x->off[x->noff].group = g;
        x->off[x->noff].part = mp;
        x->off[x->noff].offset = off;
        x->off[x->noff].clock = ++m->offset_clock;
        x->noff++;
    }
    int rc = rt_producer_send_offsets(x->p, group_names[g], offs, n);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_producer_send_offsets");
        x->noff -= n;
    }
}

static void op_txn_end(struct model *m, struct step *s, int t, bool commit)
{
    struct mtxn *x = &m->txn[t];
    if (!x->open)
        return;
    int rc = commit ? rt_producer_commit(x->p, -1) : rt_producer_abort(x->p, -1);
    if (rc) {
        DIVERGE_RC(m, rc, commit ? "rt_producer_commit" : "rt_producer_abort");
        return;
    }
    if (m->cfg->verbose) {
        int64_t pid = -1;
        int16_t ep = -1;
        rt_producer_id(x->p, &pid, &ep);
        fprintf(stderr, "    %s %s (transaction %d, producer %" PRId64 " epoch now %d), partitions",
                commit ? "commit" : "abort", x->id, x->txn_no, pid, ep);
        for (uint32_t mp = 0; mp < m->nparts; mp++)
            if (x->first_off[mp] >= 0)
                fprintf(stderr, " %u@%" PRId64, mp, m->part[mp].hw);
        fputc('\n', stderr);
    }
    txn_end_model(m, t, commit, s);
    if (commit)
        m->commits++;
    else
        m->aborts++;
}

static void op_txn_fence(struct model *m, struct step *s, int t)
{
    struct mtxn *x = &m->txn[t];
    rt_producer *old = x->p, *fresh = NULL;
    x->p = NULL;
    int rc = txn_producer_open(m, t, &fresh);
    if (rc) {
        DIVERGE_RC(m, rc, "a second instance's init_transactions");
        x->p = old;
        return;
    }
    x->p = fresh;
    bool was_open = x->open;
    if (m->cfg->verbose)
        fprintf(stderr, "    fence %s (%s)\n", x->id, was_open ? "its transaction open" : "idle");
    if (was_open)
        txn_end_model(m, t, false, s);
    m->fences++;
    /* The zombie's late write and commit. */
    uint64_t id = m->next_id++;
    uint32_t mp = pick_part(m);
    struct recbuf rb;
    struct rt_producer_message msg = {.sequence = -1};
    make_record(m, id, false, &rb, &msg.record);
    struct pend *pe = step_add(s, id);
    pe->forbidden = true;
    /* Begin is local and may succeed; the write or the commit must not. */
    if (was_open || rt_producer_begin(old) == 0) {
        struct deliv d = {0};
        rc = rt_producer_send(old, topic_names[m->part[mp].topic], (int32_t)m->part[mp].index, &msg,
                              on_delivery, &d);
        if (rc == 0)
            rc = rt_producer_flush(old, -1);
        int crc = rt_producer_commit(old, -1);
        if (crc != RT_E_PRODUCER_FENCED && crc != RT_E_INVALID_PRODUCER_EPOCH)
            diverge(m, "a fenced producer's commit: %s, expected RT_E_PRODUCER_FENCED",
                    rt_strerror(crc));
    }
    rt_producer_close(old);
}

static void op_txn_reinit(struct model *m, struct step *s, int t)
{
    struct mtxn *x = &m->txn[t];
    if (!x->open)
        return;
    int rc = rt_producer_init_transactions(x->p, -1);
    if (rc == 0) {
        diverge(m, "rt_producer_init_transactions inside an open transaction returned 0 "
                   "(it must be refused and leave the transaction open)");
        /* What the engine did: the transaction is gone; follow it to keep going. */
        txn_end_model(m, t, false, s);
    }
}

static void op_group_commit(struct model *m)
{
    uint32_t g = (uint32_t)tu_rng_below(&m->rng, GROUPS);
    uint32_t n = 1 + (uint32_t)tu_rng_below(&m->rng, 3);
    struct rt_offset offs[3];
    uint32_t mps[3];
    for (uint32_t i = 0; i < n; i++) {
        mps[i] = pick_part(m);
        offs[i] = (struct rt_offset){.topic = topic_names[m->part[mps[i]].topic],
                                     .partition = m->part[mps[i]].index,
                                     .offset = (int64_t)tu_rng_below(&m->rng, 100000),
                                     .metadata = tu_rng_below(&m->rng, 2) ? "md" : NULL};
    }
    int rc = rt_group_commit_offsets(m->e, group_names[g], offs, n);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_group_commit_offsets");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        m->committed[g][mps[i]] = offs[i].offset;
        m->committed_clock[g][mps[i]] = ++m->offset_clock;
    }
}

static void op_contract(struct model *m, struct step *s)
{
    /* A send to partition -2. */
    uint64_t id = m->next_id++;
    struct recbuf rb;
    struct rt_producer_message msg = {.sequence = -1};
    make_record(m, id, false, &rb, &msg.record);
    struct pend *pe = step_add(s, id);
    pe->forbidden = true;
    int rc = rt_producer_send(m->idem, topic_names[0], -2, &msg, NULL, NULL);
    if (rc == 0) {
        diverge(m, "rt_producer_send to partition -2 was accepted");
        rt_producer_flush(m->idem, -1);
        pe->forbidden = false; /* follow the engine */
    }
    /* Offsets for a partition that does not exist, and for an unknown topic. */
    struct rt_offset bad[2] = {{.topic = topic_names[1], .partition = 99, .offset = 1},
                               {.topic = "no-such-topic", .partition = 0, .offset = 1}};
    for (int i = 0; i < 2; i++) {
        rc = rt_group_commit_offsets(m->e, "gbad", &bad[i], 1);
        if (rc == 0)
            diverge(m, "rt_group_commit_offsets for %s-%u was accepted", bad[i].topic,
                    bad[i].partition);
    }
    /* A consumer seek beyond the high watermark: accepted, as Kafka's seek is, but never read
     * from (poll: RT_E_OFFSET_OUT_OF_RANGE, auto.offset.reset=none) nor committed. */
    uint32_t mp = pick_part(m);
    const struct mpart *p = &m->part[mp];
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.isolation = RT_READ_UNCOMMITTED;
    co.group = "model-seek";
    rt_consumer *c = NULL;
    rc = rt_consumer_open(m->e, &co, &c);
    if (rc == 0)
        rc = rt_consumer_assign(c, topic_names[p->topic], &p->index, 1);
    if (rc == 0)
        rc = rt_consumer_seek(c, topic_names[p->topic], p->index, p->hw + 5);
    if (rc) {
        DIVERGE_RC(m, rc, "rt_consumer_open/assign/seek");
    } else {
        struct rt_record_view v;
        const char *vt = NULL;
        uint32_t vp = 0;
        rc = rt_consumer_poll(c, &v, &vt, &vp, 0);
        if (rc != RT_E_OFFSET_OUT_OF_RANGE)
            diverge(m,
                    "rt_consumer_poll after a seek to %" PRId64
                    " beyond the high watermark %" PRId64
                    " of %s-%u: %s, expected RT_E_OFFSET_OUT_OF_RANGE",
                    p->hw + 5, p->hw, topic_names[p->topic], p->index, rt_strerror(rc));
        rc = rt_consumer_commit(c);
        if (rc != RT_E_OFFSET_OUT_OF_RANGE)
            diverge(m,
                    "rt_consumer_commit of a position beyond the high watermark of %s-%u: %s, "
                    "expected RT_E_OFFSET_OUT_OF_RANGE",
                    topic_names[p->topic], p->index, rt_strerror(rc));
    }
    if (c)
        rt_consumer_close(c);
    /* A negative transaction timeout, and a transactional id that is not UTF-8. */
    static const char *const bad_ids[2] = {"model-bad-timeout", "model-bad-\xff\xfe"};
    for (int b = 0; b < 2; b++) {
        struct rt_producer_options po;
        rt_producer_options_init(&po);
        po.transactional_id = bad_ids[b];
        po.transaction_timeout_ms = b == 0 ? -5 : 10000;
        rt_producer *bp = NULL;
        rc = rt_producer_open(m->e, &po, &bp);
        int irc = rc == 0 ? rt_producer_init_transactions(bp, -1) : rc;
        if (b == 0 && irc == 0)
            diverge(m, "transaction_timeout_ms = -5 was accepted by rt_producer_open and "
                       "init_transactions");
        if (b == 1 && rc == 0)
            diverge(m,
                    "rt_producer_open accepted a transactional id that is not UTF-8 "
                    "(init_transactions then: %s, detail '%s')",
                    rt_strerror(irc), irc ? rt_error_detail() : "");
        if (bp)
            rt_producer_close(bp);
    }
}

static void op_retention(struct model *m)
{
    if (m->o.retention_bytes < 0)
        return;
    int rc = log_enforce_retention(engine_log(m->e));
    if (rc < 0)
        DIVERGE_RC(m, rc, "log_enforce_retention");
    for (uint32_t mp = 0; mp < m->nparts; mp++)
        m->touched[mp] = true;
}

static void op_reopen(struct model *m, struct step *s)
{
    if (!engine_down(m, true))
        return;
    random_options(m);
    if (!engine_up(m, s))
        return;
    m->reopens++;
}

/* ---- sigkill and power loss: a forked child ---- */

enum cmsg_kind {
    CM_SENT = 1,
    CM_ACKED = 2,
    CM_COMMIT_SENT = 3,
    CM_COMMIT_ACKED = 4,
    CM_NAMED_SENT = 5,  /* id, base = its sequence id */
    CM_NAMED_ACKED = 6, /* id: delivered (stored or acknowledged as a duplicate) */
};

struct cmsg {
    int32_t kind;
    int32_t part;
    uint64_t id;
    int32_t count;
    int32_t txn;
    int64_t base;
};
_Static_assert(sizeof(struct cmsg) == 32, "cmsg is 32 bytes");

static int child_fd = -1;
static struct io_fault_plan *child_plan;

static void child_msg(int32_t kind, int32_t part, uint64_t id, int32_t count, int32_t txn,
                      int64_t base)
{
    struct cmsg c = {
        .kind = kind, .part = part, .id = id, .count = count, .txn = txn, .base = base};
    if (write(child_fd, &c, sizeof(c)) != (ssize_t)sizeof(c))
        _exit(10);
}

static void child_fail(int rc, const char *what)
{
    if (child_plan && child_plan->power_lost)
        _exit(3);
    fprintf(stderr, "model child: %s: %s (%s)\n", what, rt_strerror(rc), rt_error_detail());
    _exit(10);
}

struct child_app {
    struct model *m;
    pthread_t th;
    uint64_t id0;
    uint64_t rng;
};

static void *child_app_main(void *arg)
{
    struct child_app *a = arg;
    struct model *m = a->m;
    for (uint64_t k = 0;; k += 8) {
        uint32_t mp = (uint32_t)tu_rng_below(&a->rng, m->nparts);
        uint32_t n = 1 + (uint32_t)tu_rng_below(&a->rng, 4);
        struct recbuf rb[4];
        struct rt_record r[4];
        uint32_t bytes = 0;
        for (uint32_t i = 0; i < n; i++) {
            make_record(m, a->id0 + k + i, false, &rb[i], &r[i]);
            /* Within batch_size_max_bytes, as the parent's appends (8 KiB segments allow 8 KiB
             * batches; four 2 KiB values do not fit). */
            if (i > 0 && bytes + (uint32_t)r[i].value_len + 64 > m->o.batch_size_max_bytes / 2) {
                n = i;
                break;
            }
            bytes += (uint32_t)r[i].value_len + 64;
        }
        child_msg(CM_SENT, (int32_t)mp, a->id0 + k, (int32_t)n, 0, -1);
        int64_t base = -1;
        int rc = rt_append(m->e, topic_names[m->part[mp].topic], m->part[mp].index, r, n, &base);
        if (rc)
            child_fail(rc, "rt_append");
        child_msg(CM_ACKED, (int32_t)mp, a->id0 + k, (int32_t)n, 0, base);
    }
    return NULL;
}

/* The importer of README's example, rerun after every crash: it resends its input from a random
 * earlier sequence id (null keys, keys and explicit partitions mixed). */
struct child_named {
    struct model *m;
    pthread_t th;
    uint64_t rng;
};

static void child_named_delivery(void *ctx, int err, int64_t offset, bool duplicate)
{
    if (err == 0)
        child_msg(CM_NAMED_ACKED, 0, (uint64_t)(uintptr_t)ctx, duplicate, 0, offset);
}

static void *child_named_main(void *arg)
{
    struct child_named *cn = arg;
    struct model *m = cn->m;
    struct mnamed *nm = &m->named[NAMED_CHILD];
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.name = nm->name;
    po.linger_ms = 1;
    po.batch_size_bytes = 512 + (uint32_t)tu_rng_below(&cn->rng, 8192);
    rt_producer *p = NULL;
    int rc = rt_producer_open(m->e, &po, &p);
    if (rc)
        child_fail(rc, "child named producer");
    /* Back at most 2000 ids, at most 3000 ids a run (bounds what a step reads). */
    /* A rerun starts at or before the first id not stored (what a crash lost), as an importer
     * rerunning its input does: the named rule acknowledges as a duplicate anything at or below
     * the highest id a partition holds, so skipping a lost id would lose it for good. */
    uint32_t first_lost = 0;
    while (first_lost < nm->sent_count && nm->stored[first_lost])
        first_lost++;
    uint32_t back = first_lost < 2000 ? first_lost : 2000;
    uint32_t from = first_lost - (uint32_t)tu_rng_below(&cn->rng, (uint64_t)back + 1);
    for (uint32_t seq = from; seq < NAMED_SEQ_MAX && seq < from + 3000; seq++) {
        uint64_t id = ID_NAMED_BIT | (uint64_t)NAMED_CHILD << 32 | seq;
        uint32_t mode = (uint32_t)(tu_mix64(id) % 3); /* null key, keyed, explicit */
        if (mode == 0 && m->cfg->skip_named_nullkey)
            mode = 1;
        struct recbuf rb;
        struct rt_producer_message msg = {.sequence = seq};
        make_record(m, id, mode == 1, &rb, &msg.record);
        int32_t part = mode == 2 ? (int32_t)(seq % topic_parts[nm->topic]) : -1;
        child_msg(CM_NAMED_SENT, 0, id, 0, 0, seq);
        rc = rt_producer_send(p, topic_names[nm->topic], part, &msg, child_named_delivery,
                              (void *)(uintptr_t)id);
        if (rc)
            child_fail(rc, "child named send");
        if (seq % 16 == 15 && (rc = rt_producer_flush(p, -1)) != 0)
            child_fail(rc, "child named flush");
    }
    for (;;)
        tu_sleep_ms(1000);
    return NULL;
}

static void child_main(struct model *m, uint64_t id0, uint64_t rng, struct io_fault_plan *plan)
{
    child_plan = plan;
    m->o.retention_bytes = -1; /* the parent could not tell retention from loss */
    int rc = plan ? rt_test_open(m->dir, &m->o, plan, &m->e) : rt_open(m->dir, &m->o, &m->e);
    if (rc)
        child_fail(rc, "rt_open");
    struct child_app a[2];
    for (int t = 0; t < 2; t++) {
        a[t] = (struct child_app){
            .m = m, .id0 = id0 + (uint64_t)t * (1ull << 24), .rng = rng + (uint64_t)t};
        if (pthread_create(&a[t].th, NULL, child_app_main, &a[t]) != 0)
            _exit(10);
    }
    struct child_named cn = {.m = m, .rng = rng ^ 0x5555};
    if (pthread_create(&cn.th, NULL, child_named_main, &cn) != 0)
        _exit(10);
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "model-child";
    po.transaction_timeout_ms = 600000;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    rc = rt_producer_open(m->e, &po, &p);
    if (rc == 0)
        rc = rt_producer_init_transactions(p, -1);
    if (rc)
        child_fail(rc, "child transactional producer");
    uint64_t id = id0 + 2 * (1ull << 24);
    for (int32_t txn = CHILD_TXN_BASE + m->child_txn_next;; txn++) {
        if (txn - CHILD_TXN_BASE >= CHILD_TXNS_MAX)
            break;
        rc = rt_producer_begin(p);
        if (rc)
            child_fail(rc, "rt_producer_begin");
        uint32_t n = 1 + (uint32_t)tu_rng_below(&rng, 6);
        for (uint32_t i = 0; i < n; i++, id++) {
            uint32_t mp = (uint32_t)tu_rng_below(&rng, m->nparts);
            struct recbuf rb;
            struct rt_producer_message msg = {.sequence = -1};
            make_record(m, id, false, &rb, &msg.record);
            child_msg(CM_SENT, (int32_t)mp, id, 1, txn, -1);
            rc = rt_producer_send(p, topic_names[m->part[mp].topic], (int32_t)m->part[mp].index,
                                  &msg, NULL, NULL);
            if (rc)
                child_fail(rc, "rt_producer_send");
        }
        child_msg(CM_COMMIT_SENT, 0, 0, 0, txn, -1);
        rc = rt_producer_commit(p, -1);
        if (rc)
            child_fail(rc, "rt_producer_commit");
        child_msg(CM_COMMIT_ACKED, 0, 0, 0, txn, -1);
        /* PA9: now and then every partition stores its active segment's tail, so the kill or the
         * power loss may land in it, or after it (the reopen then scans only past the tail). */
        if (tu_rng_below(&rng, 3) == 0 && (rc = log_checkpoint_tails(engine_log(m->e))) != 0)
            child_fail(rc, "log_checkpoint_tails");
    }
    /* Out of transaction numbers: wait to be killed. */
    for (;;)
        tu_sleep_ms(1000);
}

static void take_cmsg(struct model *m, struct step *s, const struct cmsg *c)
{
    switch (c->kind) {
    case CM_SENT:
        for (int32_t i = 0; i < c->count; i++) {
            struct pend *pe = step_add(s, c->id + (uint64_t)i);
            pe->part = c->part;
            pe->txn = c->txn;
            if (c->txn) {
                struct child_txn *ct = &m->ctxn[c->txn - CHILD_TXN_BASE];
                ct->sent++;
                if (c->txn - CHILD_TXN_BASE >= m->child_txn_end)
                    m->child_txn_end = c->txn - CHILD_TXN_BASE + 1;
            }
        }
        break;
    case CM_ACKED:
        /* The SENT entries are the last `count` with these ids; find them (small scan back). */
        for (size_t i = s->n; i-- > 0;)
            if (s->pend[i].id >= c->id && s->pend[i].id < c->id + (uint64_t)c->count) {
                s->pend[i].must = true;
                s->pend[i].offset = c->base + (int64_t)(s->pend[i].id - c->id);
                m->records_acked++;
                if (s->pend[i].id == c->id)
                    break;
            }
        break;
    case CM_NAMED_SENT: {
        struct mnamed *nm = &m->named[NAMED_CHILD];
        uint32_t seq = (uint32_t)c->base, topic = nm->topic;
        uint32_t mode = (uint32_t)(tu_mix64(c->id) % 3);
        if (mode == 0 && m->cfg->skip_named_nullkey)
            mode = 1;
        struct pend *pe = step_add(s, c->id);
        pe->named = NAMED_CHILD + 1;
        pe->seq = seq;
        pe->topic = (int32_t)topic;
        pe->keyed = mode == 1;
        pe->forbidden = nm->stored[seq] > 0;
        pe->prev_step = nm->sent_step[seq];
        nm->sent_step[seq] = m->step;
        if (mode == 2) {
            pe->part = (int32_t)mp_of(topic, seq % topic_parts[topic]);
        } else if (mode == 1) {
            char key[16];
            int klen = rec_key(c->id, key);
            pe->part =
                (int32_t)mp_of(topic, murmur2_partition(key, (size_t)klen, topic_parts[topic]));
        }
        if (seq >= nm->sent_count) {
            for (uint32_t q = nm->sent_count; q <= seq; q++)
                nm->seqs[q] = q;
            nm->sent_count = seq + 1;
        }
        break;
    }
    case CM_NAMED_ACKED:
        for (size_t i = s->n; i-- > 0;)
            if (s->pend[i].id == c->id) {
                s->pend[i].must = !s->pend[i].forbidden;
                s->pend[i].dup = c->count != 0;
                s->pend[i].ack_offset = c->base;
                m->records_acked++;
                break;
            }
        break;
    case CM_COMMIT_SENT:
        m->ctxn[c->txn - CHILD_TXN_BASE].commit_sent = true;
        if (c->txn - CHILD_TXN_BASE >= m->child_txn_end)
            m->child_txn_end = c->txn - CHILD_TXN_BASE + 1;
        break;
    case CM_COMMIT_ACKED:
        m->ctxn[c->txn - CHILD_TXN_BASE].commit_acked = true;
        m->commits++;
        break;
    default:
        break;
    }
}

struct vis_ctx {
    struct model *m;
    uint32_t mp;
};

static int vis_visit(void *vctx, const struct rt_record_view *r, const struct rt_fetch_view *fv)
{
    (void)fv;
    struct vis_ctx *c = vctx;
    struct mpart *p = &c->m->part[c->mp];
    /* Binary search the model record at r->offset (the resolve pass added it). */
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->r[mid].offset < r->offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n && p->r[lo].offset == r->offset && p->r[lo].txn >= CHILD_TXN_BASE &&
        p->r[lo].state == RS_OPEN)
        c->m->ctxn[p->r[lo].txn - CHILD_TXN_BASE].visible++;
    return 0;
}

static void op_crash(struct model *m, struct step *s, bool power)
{
    int64_t hw_before[PARTS_MAX];
    if (!engine_down(m, false))
        return;
    for (uint32_t mp = 0; mp < m->nparts; mp++)
        hw_before[mp] = m->part[mp].hw;
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    if (power) {
        plan.track_unsynced = true;
        plan.power_loss_keep_sectors = tu_rng_below(&m->rng, 2) == 0;
        plan.power_loss_seed = tu_rng_next(&m->rng);
        bool on_write = tu_rng_below(&m->rng, 3) == 0;
        plan.rules[0] = (struct io_fault_rule){.mode = IO_FAULT_POWER_LOSS,
                                               .op = on_write ? IO_OP_WRITE : IO_OP_FDATASYNC,
                                               .nth = 1 + tu_rng_below(&m->rng, 120)};
        plan.rule_count = 1;
    }
    int64_t kill_ms = 5 + (int64_t)tu_rng_below(&m->rng, 300);
    uint64_t id0 = m->next_id, child_rng = tu_rng_next(&m->rng);
    m->next_id += 3 * (1ull << 24);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_fd = fds[1];
        child_main(m, id0, child_rng, power ? &plan : NULL);
        _exit(10);
    }
    close(fds[1]);
    s->exact = false;
    int64_t start = tu_now_ms();
    bool exited = false;
    int64_t limit = power ? 20000 : kill_ms;
    for (;;) {
        int64_t wait = limit - (tu_now_ms() - start);
        if (wait <= 0)
            break;
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int prc = poll(&pfd, 1, (int)wait);
        if (prc <= 0)
            continue;
        struct cmsg c;
        if (!tu_read_full(fds[0], &c, sizeof(c))) {
            exited = true;
            break;
        }
        take_cmsg(m, s, &c);
    }
    if (!exited)
        kill(pid, SIGKILL);
    struct cmsg c;
    while (tu_read_full(fds[0], &c, sizeof(c)))
        take_cmsg(m, s, &c);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !exited) {
        if (power)
            m->power_not_fired++;
        else
            m->kills++;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3 && power) {
        m->power_losses++;
    } else {
        diverge(m, "the child ended with status %d (see its message)", status);
    }
    /* Reopen (normal backend) and resolve; no retention before the resolve has looked. */
    random_options(m);
    m->o.retention_bytes = -1;
    if (!engine_up(m, s))
        return;
    rt_producer *cp = NULL;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = "model-child";
    po.transaction_timeout_ms = 600000;
    int rc = rt_producer_open(m->e, &po, &cp);
    if (rc == 0)
        rc = rt_producer_init_transactions(cp, -1);
    if (rc)
        DIVERGE_RC(m, rc, "re-initialising the child's transactional id");
    if (cp)
        rt_producer_close(cp);
    resolve(m, s);
    /* Each child transaction is all or nothing under read_committed. */
    for (uint32_t mp = 0; mp < m->nparts; mp++) {
        struct vis_ctx vc = {.m = m, .mp = mp};
        int64_t lso = -1;
        list_off(m, mp, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso);
        int64_t from =
            hw_before[mp] > m->part[mp].log_start ? hw_before[mp] : m->part[mp].log_start;
        rc = read_range(m, mp, RT_READ_COMMITTED, from, lso, vis_visit, &vc);
        if (rc)
            diverge(m, "reading read_committed after the crash: %s (%s)", rt_strerror(rc),
                    rt_error_detail());
        struct mpart *p = &m->part[mp];
        for (size_t i = 0; i < p->n; i++)
            if (p->r[i].offset >= hw_before[mp] && p->r[i].txn >= CHILD_TXN_BASE)
                m->ctxn[p->r[i].txn - CHILD_TXN_BASE].present++;
    }
    for (int32_t k = m->child_txn_next; k < m->child_txn_end; k++) {
        struct child_txn *ct = &m->ctxn[k];
        if (ct->sent == 0)
            continue;
        bool committed = ct->visible > 0;
        if (ct->commit_acked && (ct->visible != ct->sent || ct->present != ct->sent))
            diverge(m,
                    "child transaction %d: commit acknowledged, %d records sent, %d present, "
                    "%d visible read_committed",
                    k, ct->sent, ct->present, ct->visible);
        else if (committed && (ct->visible != ct->sent || ct->present != ct->sent))
            diverge(m, "child transaction %d: not atomic: %d sent, %d present, %d visible", k,
                    ct->sent, ct->present, ct->visible);
        else if (committed && !ct->commit_sent)
            diverge(m, "child transaction %d visible but never committed", k);
        for (uint32_t mp = 0; mp < m->nparts; mp++)
            mp_settle(&m->part[mp], CHILD_TXN_BASE + k, committed ? RS_DATA : RS_ABORTED);
    }
    m->child_txn_next = m->child_txn_end;
    for (uint32_t mp = 0; mp < m->nparts; mp++)
        m->touched[mp] = true;
    m->reopens++;
}

/* ---- one seed ---- */

static enum op pick_op(struct model *m)
{
    int total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        total += m->cfg->skip[i] ? 0 : op_weight[i];
    int r = (int)tu_rng_below(&m->rng, (uint64_t)total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (m->cfg->skip[i])
            continue;
        if (r < op_weight[i])
            return (enum op)i;
        r -= op_weight[i];
    }
    return OP_APPEND;
}

static void run_step(struct model *m, enum op op)
{
    struct step s;
    step_init(&s);
    m->op = op;
    m->ops[op]++;
    int t = pick_txn(m);
    /* A transaction open too long is ended first (keeps the LSO moving). */
    for (int k = 0; k < TXNS; k++)
        if (m->txn[k].open && m->step - m->txn[k].opened_step > TXN_STEPS_MAX &&
            op != OP_TXN_SEND) {
            op_txn_end(m, &s, k, tu_rng_below(&m->rng, 2));
            resolve(m, &s);
            step_free(&s);
            step_init(&s);
        }
    switch (op) {
    case OP_APPEND:
        op_append(m, &s);
        break;
    case OP_APPEND_BATCH:
        op_append_batch(m, &s);
        break;
    case OP_CONCURRENT:
        op_concurrent(m, &s);
        break;
    case OP_IDEM_SEND:
        op_idem_send(m, &s);
        break;
    case OP_NAMED:
        op_named(m, &s, false);
        break;
    case OP_NAMED_RERUN:
        op_named(m, &s, true);
        break;
    case OP_TXN_SEND:
        op_txn_send(m, &s, t);
        break;
    case OP_TXN_OFFSETS:
        op_txn_offsets(m, t);
        break;
    case OP_TXN_COMMIT:
        op_txn_end(m, &s, t, true);
        break;
    case OP_TXN_ABORT:
        op_txn_end(m, &s, t, false);
        break;
    case OP_TXN_FENCE:
        op_txn_fence(m, &s, t);
        break;
    case OP_TXN_REINIT:
        op_txn_reinit(m, &s, t);
        break;
    case OP_GROUP_COMMIT:
        op_group_commit(m);
        break;
    case OP_CONTRACT:
        op_contract(m, &s);
        break;
    case OP_RETENTION:
        op_retention(m);
        break;
    case OP_REOPEN:
        op_reopen(m, &s);
        break;
    case OP_SIGKILL:
        op_crash(m, &s, false);
        break;
    case OP_POWER_LOSS:
        op_crash(m, &s, true);
        break;
    default:
        break;
    }
    if (m->e && op != OP_SIGKILL && op != OP_POWER_LOSS)
        resolve(m, &s);
    if (m->e && (op == OP_NAMED || op == OP_NAMED_RERUN))
        for (int ni = 0; ni < NAMED; ni++)
            named_check_last_sequence(m, ni);
    step_free(&s);
    if (m->e)
        verify_all(m, op == OP_REOPEN || op == OP_SIGKILL || op == OP_POWER_LOSS ||
                          op == OP_RETENTION || m->step % 16 == 0);
}

static void model_init(struct model *m, const struct config *cfg, uint64_t seed)
{
    memset(m, 0, sizeof(*m));
    m->cfg = cfg;
    m->seed = seed;
    m->rng = seed * 0x2545f4914f6cdd1dull + 11;
    m->dir = tu_mkdtemp();
    m->next_id = 1;
    for (uint32_t t = 0; t < TOPICS; t++)
        for (uint32_t k = 0; k < topic_parts[t]; k++) {
            struct mpart *p = &m->part[m->nparts++];
            p->topic = t;
            p->index = k;
        }
    for (uint32_t g = 0; g < GROUPS; g++)
        for (uint32_t mp = 0; mp < PARTS_MAX; mp++)
            m->committed[g][mp] = -1;
    for (int t = 0; t < TXNS; t++) {
        snprintf(m->txn[t].id, sizeof(m->txn[t].id), "model-tx-%d", t);
        for (uint32_t mp = 0; mp < PARTS_MAX; mp++)
            m->txn[t].first_off[mp] = -1;
    }
    for (int n = 0; n < NAMED; n++) {
        struct mnamed *nm = &m->named[n];
        snprintf(nm->name, sizeof(nm->name), "importer-%d", n);
        nm->topic = (uint32_t)n % TOPICS;
        nm->seqs = calloc(NAMED_SEQ_MAX, sizeof(uint32_t));
        nm->stored = calloc(NAMED_SEQ_MAX, 1);
        nm->stored_at = calloc(NAMED_SEQ_MAX, 1);
        nm->sent_step = calloc(NAMED_SEQ_MAX, sizeof(int32_t));
        assert_non_null(nm->sent_step);
        assert_non_null(nm->seqs);
        assert_non_null(nm->stored);
        assert_non_null(nm->stored_at);
    }
    m->ctxn = calloc(CHILD_TXNS_MAX, sizeof(*m->ctxn));
    assert_non_null(m->ctxn);
    m->raw.pid = -1;
    for (uint32_t mp = 0; mp < PARTS_MAX; mp++)
        m->raw.last_first_seq[mp] = -1;
}

static void model_free(struct model *m)
{
    if (m->e) {
        producers_close(m);
        rt_close(m->e);
    }
    for (uint32_t mp = 0; mp < PARTS_MAX; mp++)
        free(m->part[mp].r);
    for (int n = 0; n < NAMED; n++) {
        free(m->named[n].seqs);
        free(m->named[n].stored);
        free(m->named[n].stored_at);
        free(m->named[n].sent_step);
    }
    free(m->ctxn);
    free(m->bounds);
    tu_rmdir_free(m->dir);
}

static int run_seed(const struct config *cfg, uint64_t seed, int64_t *steps_out)
{
    struct model *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    model_init(m, cfg, seed);
    int64_t t0 = tu_now_ms();
    random_options(m);
    struct step s;
    step_init(&s);
    assert_int_equal(rt_open(m->dir, &m->o, &m->e), 0);
    for (uint32_t t = 0; t < TOPICS; t++)
        assert_int_equal(rt_topic_create(m->e, topic_names[t], topic_parts[t]), 0);
    /* The raw idempotent batches use an allocated producer id. */
    rt_producer *rawp = NULL;
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    assert_int_equal(rt_producer_open(m->e, &po, &rawp), 0);
    assert_int_equal(rt_producer_id(rawp, &m->raw.pid, &m->raw.epoch), 0);
    rt_producer_close(rawp);
    assert_int_equal(rt_close(m->e), 0);
    m->e = NULL;
    if (engine_up(m, &s)) {
        for (m->step = 1; m->step <= cfg->steps && m->divergences == 0; m->step++) {
            if (tu_now_ms() >= cfg->deadline_ms)
                break;
            enum op op = pick_op(m);
            int64_t c0 = tu_now_ms();
            run_step(m, op);
            m->steps_run++;
            if (cfg->verbose)
                fprintf(stderr, "  seed %" PRIu64 " step %d: %s, %" PRId64 " ms\n", seed, m->step,
                        op_names[op], tu_now_ms() - c0);
            if (!m->e)
                break;
        }
        if (m->e && m->divergences == 0) {
            /* The end: close, verify, reopen once more and compare everything. */
            m->op = OP_REOPEN;
            run_step(m, OP_REOPEN);
        }
    }
    step_free(&s);
    fprintf(stderr,
            "seed %" PRIu64 ": %" PRId64 " steps, segments %" PRIu64 " KiB, %" PRId64
            " records acknowledged, %" PRId64 " reopens, %" PRId64 " kills, %" PRId64
            " power losses (%" PRId64 " not reached), %" PRId64 " commits, %" PRId64
            " aborts, %" PRId64 " fences, %" PRId64 " verifies, %.1f s, divergences %d\n",
            seed, m->steps_run, m->o.segment_size_bytes / 1024, m->records_acked, m->reopens,
            m->kills, m->power_losses, m->power_not_fired, m->commits, m->aborts, m->fences,
            m->verifies, (double)(tu_now_ms() - t0) / 1000.0, m->divergences);
    if (m->divergences)
        fprintf(stderr,
                "  (replay: RT_MODEL_SEED=%" PRIu64 " RT_MODEL_SEEDS=1 RT_MODEL_STEPS=%d"
                " RT_TEST_IO=%s)\n",
                seed, (int)m->steps_run, tu_backend());
    int d = m->divergences;
    *steps_out = m->steps_run;
    model_free(m);
    free(m);
    return d;
}

static void parse_skip(struct config *cfg)
{
    const char *v = getenv("RT_MODEL_SKIP");
    if (!v)
        return;
    char *copy = strdup(v), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        bool found = false;
        if (strcmp(tok, "named_nullkey") == 0) {
            cfg->skip_named_nullkey = true;
            found = true;
        }
        for (int i = 0; i < OP_COUNT; i++)
            if (strcmp(tok, op_names[i]) == 0) {
                cfg->skip[i] = true;
                found = true;
            }
        if (!found)
            fprintf(stderr, "model: RT_MODEL_SKIP names an unknown kind '%s'\n", tok);
        assert_true(found);
        fprintf(stderr, "model: leaving out %s (RT_MODEL_SKIP)\n", tok);
    }
    free(copy);
}

static void test_model(void **state)
{
    (void)state;
    struct config cfg;
    memset(&cfg, 0, sizeof(cfg));
    int64_t seconds = tu_env_int("RT_MODEL_SECONDS", 25);
    cfg.first_seed = (uint64_t)tu_env_int("RT_MODEL_SEED", 1);
    cfg.seeds_by_time = getenv("RT_MODEL_SECONDS") && !getenv("RT_MODEL_SEEDS");
    cfg.seeds = (int)tu_env_int("RT_MODEL_SEEDS", 2);
    cfg.steps = (int)tu_env_int("RT_MODEL_STEPS", 160);
    cfg.verbose = getenv("RT_MODEL_VERBOSE") != NULL;
    cfg.segment_kib = (uint32_t)tu_env_int("RT_MODEL_SEGMENT_KIB", 0);
    assert_true(cfg.segment_kib == 0 || (cfg.segment_kib >= 16 && cfg.segment_kib <= 1048576));
    parse_skip(&cfg);
    int64_t start = tu_now_ms();
    cfg.deadline_ms = start + seconds * 1000;
    fprintf(stderr, "model: backend %s, %d steps per seed, %s, budget %" PRId64 " s\n",
            tu_backend(), cfg.steps,
            cfg.seeds_by_time ? "seeds until the budget is spent" : "fixed seeds", seconds);
    int seeds_run = 0, divergences = 0;
    int64_t steps = 0;
    for (int i = 0; cfg.seeds_by_time || i < cfg.seeds; i++) {
        if (tu_now_ms() >= cfg.deadline_ms)
            break;
        int64_t st = 0;
        divergences += run_seed(&cfg, cfg.first_seed + (uint64_t)i, &st);
        steps += st;
        seeds_run++;
    }
    fprintf(stderr, "model: %d seeds, %" PRId64 " steps, %d divergences, %.1f s\n", seeds_run,
            steps, divergences, (double)(tu_now_ms() - start) / 1000.0);
    assert_true(seeds_run > 0);
    assert_int_equal(divergences, 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
