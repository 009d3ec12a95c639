/*
 * test_torture.c — crash torture of transactional consume-transform-produce (docs/torture.md).
 *
 * Per seed, a fresh data directory holds an input topic `in` (3 partitions, each pre-filled
 * with RECORDS values "src-P-O") and an empty output topic `out` (3 partitions). A forked child
 * opens the engine (sync=always, 64 KiB segments so segments roll), a read_committed consumer
 * of group `torture` assigned to in-0..2 (starting at the group's committed offsets) and a
 * transactional producer with a fixed transactional id and a 500 ms transaction timeout. It
 * loops: begin; poll a random number of records; send "in-P-O" to out-P for each; send the
 * consumer positions as the group's offsets; then abort (20%, and rewind to the committed
 * offsets) or commit. After every acknowledged commit it writes the committed positions to a
 * pipe. When every input record is transformed it exits 0.
 *
 * The parent ends each child in one of three ways, chosen at random per iteration:
 *   - SIGKILL after a random number of acknowledged commits (plus a random few ms, so the kill
 *     often lands inside a transaction or inside the commit protocol);
 *   - SIGKILL after a random delay from the fork (which may land inside rt_open's recovery);
 *   - power loss: the child's engine runs over the fault injector (rt_test_open) with an
 *     IO_FAULT_POWER_LOSS rule at a random Nth fdatasync or write, sometimes keeping a random
 *     whole-sector prefix of unsynced writes; the file contents roll back to the last sync, the
 *     engine fails with RT_E_IO_FAILED and the child _exits at once (a dead machine runs no
 *     close). Preallocation and index writes bypass io/ and count as durable (io.h).
 *
 * After each child the parent reopens the directory (normal backend) and checks:
 *   TR1. Recovery opens the directory.
 *   TR2. Once open transactions time out, the LSO of every out partition reaches its high
 *        watermark (no hanging transaction), within a bound.
 *   TR3. The group's committed offsets are stable (no transactional commit left pending).
 *   TR4. No acknowledged commit is lost: each committed offset of in-P is >= the highest the
 *        child was told was committed, and never goes backwards between checks.
 *   TR5. out-P under read_committed is exactly "in-P-0", "in-P-1", ... "in-P-(c-1)" in order,
 *        where c is the group's committed offset for in-P: no duplicate, no gap, nothing of an
 *        aborted or open transaction, and the offsets commit and the output are all-or-nothing
 *        together (a transaction spans several out partitions and the offsets).
 *   TR6. out-P under read_uncommitted holds only well-formed "in-P-O" values (aborted data may
 *        be there; it must be hidden by TR5).
 *   TR7. The input is intact: in-P holds RECORDS records and its LSO equals its high watermark.
 *   TR8. rt_close succeeds, then rt_verify reports the directory healthy.
 * The child itself checks that the consumer yields the input records in order with their own
 * values (a wrong record makes it exit with CHILD_EXIT_WRONG_RECORD).
 * A seed ends when the child exits 0 (then TR5 with c == RECORDS: output == input exactly once)
 * or its iteration budget is spent.
 *
 * Modes (environment):
 *   RT_TORTURE_SECONDS     wall-clock budget for the whole run (default 30); no new iteration
 *                          starts after it.
 *   RT_TORTURE_ITERATIONS  iteration budget per seed (default 12).
 *   RT_TORTURE_SEEDS       number of seeds (default 3; with RT_TORTURE_SECONDS set and this
 *                          unset: as many as the time allows).
 *   RT_TORTURE_SEED        first seed (default 1): replays a reported seed.
 *   RT_TORTURE_RECORDS     input records per partition (default 150).
 * docs/torture.md describes the long mode. The child's engine uses the backend RT_TEST_IO
 * selects (tu_options); power-loss children always run over the fault injector (sync-based).
 * Runs once, not once per backend: the budget does not fit twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/seeded.h"
#include "helpers/test_util.h"
#include "helpers/verify_log.h"
#include "io/io.h"
#include "ringtail.h"
#include "ringtail_test.h"

#define PARTS          3u
#define GROUP          "torture"
#define TXN_ID         "torture-tx"
#define TXN_TIMEOUT_MS 500
#define SEGMENT_BYTES  (64u * 1024u)
#define POLL_MAX       24    /* records per transaction: 1..POLL_MAX */
#define ABORT_PERCENT  20    /* transactions the child aborts on purpose */
#define LSO_WAIT_MS    10000 /* TR2 bound: a timed-out transaction is aborted well before */
#define CHILD_HANG_MS  60000 /* a child that neither finishes nor reports for this long hangs */
#define VALUE_MAX      48

enum child_exit {
    CHILD_EXIT_DONE = 0,
    CHILD_EXIT_POWER_LOST = 3,   /* RT_E_IO_FAILED after the injected power loss */
    CHILD_EXIT_ERROR = 10,       /* an unexpected error (printed by the child) */
    CHILD_EXIT_WRONG_RECORD = 11 /* the consumer yielded a record out of order or misvalued */
};

enum msg_kind {
    MSG_OPENED = 1, /* the engine, consumer and producer are up */
    MSG_COMMIT = 2, /* pos = the committed offsets of in-0..2, acknowledged */
    MSG_ABORT = 3,
    MSG_FENCED = 4, /* the producer was fenced (a transaction timed out); it re-initialised */
};

/* One pipe message: 32 bytes, so a write is atomic (< PIPE_BUF). */
struct child_msg {
    int32_t kind;
    int32_t records;
    int64_t pos[PARTS];
};
_Static_assert(sizeof(struct child_msg) == 32, "child_msg is 32 bytes");

enum end_mode { END_KILL_AFTER_ACKS, END_KILL_AFTER_DELAY, END_POWER_LOSS };

struct config {
    int64_t records;
    int iterations;
    int seeds;
    bool seeds_by_time;
    uint64_t first_seed;
    int64_t deadline_ms;
};

struct scenario {
    const struct config *cfg;
    char *dir;
    uint64_t seed;
    uint64_t rng;
    int iteration;
    int iterations_run;
    int64_t acked[PARTS];     /* highest committed positions the child acknowledged */
    int64_t committed[PARTS]; /* what the last check found */
    bool complete;
    /* counters */
    int kills, power_losses, power_not_fired, clean_exits, fenced;
    int64_t commits_acked, aborts, hidden_records, settle_ms_max;
    int anomalies;
};

/* ---- small helpers ---- */

static void anomaly(struct scenario *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ANOMALY seed %" PRIu64 " iteration %d: ", s->seed, s->iteration);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    s->anomalies++;
}

/* Parses "<prefix>-P-O". */
static bool parse_value(const uint8_t *v, int32_t len, const char *prefix, uint32_t *p, int64_t *o)
{
    char buf[VALUE_MAX + 1];
    if (!v || len <= 0 || len > VALUE_MAX)
        return false;
    memcpy(buf, v, (size_t)len);
    buf[len] = '\0';
    size_t pl = strlen(prefix);
    if (strncmp(buf, prefix, pl) != 0 || buf[pl] != '-')
        return false;
    char *end = NULL;
    unsigned long pp = strtoul(buf + pl + 1, &end, 10);
    if (!end || *end != '-')
        return false;
    char *end2 = NULL;
    long long oo = strtoll(end + 1, &end2, 10);
    if (!end2 || *end2 != '\0' || oo < 0)
        return false;
    *p = (uint32_t)pp;
    *o = (int64_t)oo;
    return true;
}

static void torture_options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = SEGMENT_BYTES;
    o->batch_size_max_bytes = 16 * 1024; /* must fit a segment */
    o->sync_mode = RT_SYNC_ALWAYS;
    o->retention_ms = -1;
    o->producer_id_expiration_ms = INT64_MAX / 4;
}

/* ---- the child: consume-transform-produce until the input is done ---- */

static int child_fd = -1;

static void child_send(int32_t kind, int32_t records, const int64_t pos[PARTS])
{
    struct child_msg m = {.kind = kind, .records = records};
    if (pos)
        memcpy(m.pos, pos, sizeof(m.pos));
    if (write(child_fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
        _exit(CHILD_EXIT_ERROR);
}

/* Exits on an error: RT_E_IO_FAILED after the injected power loss is the expected end. */
static void child_check(int rc, const char *what, const struct io_fault_plan *plan)
{
    if (rc == 0)
        return;
    if (plan && plan->power_lost)
        _exit(CHILD_EXIT_POWER_LOST);
    fprintf(stderr, "torture child: %s: %s (%s)\n", what, rt_strerror(rc), rt_error_detail());
    _exit(CHILD_EXIT_ERROR);
}

static rt_producer *child_producer(rt_engine *e, const struct io_fault_plan *plan)
{
    struct rt_producer_options po;
    rt_producer_options_init(&po);
    po.transactional_id = TXN_ID;
    po.transaction_timeout_ms = TXN_TIMEOUT_MS;
    po.linger_ms = 1;
    rt_producer *p = NULL;
    child_check(rt_producer_open(e, &po, &p), "rt_producer_open", plan);
    child_check(rt_producer_init_transactions(p, -1), "rt_producer_init_transactions", plan);
    return p;
}

static void child_positions(rt_consumer *c, int64_t pos[PARTS], const struct io_fault_plan *plan)
{
    for (uint32_t part = 0; part < PARTS; part++)
        child_check(rt_consumer_position(c, "in", part, &pos[part]), "rt_consumer_position", plan);
}

static bool fenced(int rc)
{
    return rc == RT_E_PRODUCER_FENCED || rc == RT_E_INVALID_PRODUCER_EPOCH;
}

static void child_main(const char *dir, int64_t records, uint64_t rng, struct io_fault_plan *plan)
{
    struct rt_options o;
    torture_options(&o);
    rt_engine *e = NULL;
    child_check(plan ? rt_test_open(dir, &o, plan, &e) : rt_open(dir, &o, &e), "rt_open", plan);
    struct rt_consumer_options co;
    rt_consumer_options_init(&co);
    co.group = GROUP;
    co.isolation = RT_READ_COMMITTED;
    rt_consumer *c = NULL;
    child_check(rt_consumer_open(e, &co, &c), "rt_consumer_open", plan);
    const uint32_t parts[PARTS] = {0, 1, 2};
    child_check(rt_consumer_assign(c, "in", parts, PARTS), "rt_consumer_assign", plan);
    rt_producer *p = child_producer(e, plan);
    int64_t pos[PARTS];
    child_positions(c, pos, plan);
    child_send(MSG_OPENED, 0, pos);
    for (;;) {
        child_positions(c, pos, plan);
        bool done = true;
        for (uint32_t part = 0; part < PARTS; part++)
            done = done && pos[part] == records;
        if (done)
            break;
        child_check(rt_producer_begin(p), "rt_producer_begin", plan);
        int64_t expect[PARTS];
        memcpy(expect, pos, sizeof(expect));
        int want = 1 + (int)tu_rng_below(&rng, POLL_MAX);
        int got = 0, rc = 0;
        for (; got < want; got++) {
            struct rt_record_view r;
            const char *topic = NULL;
            uint32_t part = 0;
            rc = rt_consumer_poll(c, &r, &topic, &part, 1);
            if (rc == RT_E_END) {
                rc = 0;
                break;
            }
            child_check(rc, "rt_consumer_poll", plan);
            uint32_t vp = 0;
            int64_t vo = -1;
            if (part >= PARTS || r.offset != expect[part] ||
                !parse_value(r.value, r.value_len, "src", &vp, &vo) || vp != part ||
                vo != r.offset) {
                fprintf(stderr,
                        "torture child: in-%u yielded offset %" PRId64 " value '%.*s', expected "
                        "offset %" PRId64 "\n",
                        part, r.offset, r.value_len > 0 ? r.value_len : 0,
                        r.value ? (const char *)r.value : "", part < PARTS ? expect[part] : -1);
                _exit(CHILD_EXIT_WRONG_RECORD);
            }
            expect[part]++;
            char v[VALUE_MAX];
            int n = snprintf(v, sizeof(v), "in-%u-%" PRId64, part, r.offset);
            struct rt_producer_message m = {
                .record = {.key_len = -1, .value = v, .value_len = n, .timestamp_ms = -1},
                .sequence = -1};
            rc = rt_producer_send(p, "out", (int32_t)part, &m, NULL, NULL);
            if (rc)
                break;
        }
        struct rt_offset offs[PARTS];
        size_t count = 0;
        if (rc == 0)
            rc = rt_consumer_positions(c, offs, PARTS, &count);
        if (rc == 0)
            rc = rt_producer_send_offsets(p, GROUP, offs, count);
        if (tu_rng_below(&rng, 8) == 0)
            tu_sleep_ms((int64_t)tu_rng_below(&rng, 3)); /* widen the window for a mid-txn kill */
        bool abort_it = rc != 0 || tu_rng_below(&rng, 100) < ABORT_PERCENT;
        if (!abort_it) {
            rc = rt_producer_commit(p, -1);
            if (rc == 0) {
                child_positions(c, pos, plan);
                child_send(MSG_COMMIT, got, pos);
                continue;
            }
        }
        /* Abort: on purpose, or after a failed step or commit. */
        if (rc && !fenced(rc))
            child_check(rc, abort_it ? "a transaction step" : "rt_producer_commit", plan);
        if (!fenced(rc))
            rc = rt_producer_abort(p, -1);
        if (fenced(rc)) {
            /* The coordinator timed the transaction out (a slow machine): start over, as a
             * Kafka application does after ProducerFencedException. */
            rt_producer_close(p);
            p = child_producer(e, plan);
            child_send(MSG_FENCED, 0, NULL);
        } else {
            child_check(rc, "rt_producer_abort", plan);
            child_send(MSG_ABORT, got, NULL);
        }
        child_check(rt_consumer_rewind_to_committed(c), "rt_consumer_rewind_to_committed", plan);
    }
    child_check(rt_producer_close(p), "rt_producer_close", plan);
    child_check(rt_consumer_close(c), "rt_consumer_close", plan);
    child_check(rt_close(e), "rt_close", plan);
    _exit(CHILD_EXIT_DONE);
}

/* ---- the parent: run a child and end it ---- */

static void take_msg(struct scenario *s, const struct child_msg *m)
{
    switch (m->kind) {
    case MSG_COMMIT:
        s->commits_acked++;
        for (uint32_t part = 0; part < PARTS; part++)
            if (m->pos[part] > s->acked[part])
                s->acked[part] = m->pos[part];
        break;
    case MSG_ABORT:
        s->aborts++;
        break;
    case MSG_FENCED:
        s->fenced++;
        break;
    default:
        break;
    }
}

/* Runs one child and ends it as `mode` says; counts how it ended. */
static void run_child(struct scenario *s, enum end_mode mode)
{
    struct io_fault_plan plan;
    memset(&plan, 0, sizeof(plan));
    if (mode == END_POWER_LOSS) {
        plan.track_unsynced = true;
        plan.track_dirs = true;
        plan.power_loss_keep_sectors = tu_rng_below(&s->rng, 2) == 0;
        plan.power_loss_seed = tu_rng_next(&s->rng);
        /* A ring's write (1/3) or fdatasync (1/2), else a seal's or another direct fdatasync,
         * or a directory change (a roll's, a snapshot's: the directory-entry model, io.h). */
        uint64_t k = tu_rng_below(&s->rng, 12);
        enum io_op_type op = k < 4    ? IO_OP_WRITE
                             : k < 10 ? IO_OP_FDATASYNC
                             : k < 11 ? IO_OP_FDATASYNC_DIRECT
                                      : IO_OP_DIR_ENTRY;
        uint64_t range = op == IO_OP_WRITE || op == IO_OP_FDATASYNC ? 160 : 40;
        plan.rules[0] = (struct io_fault_rule){
            .mode = IO_FAULT_POWER_LOSS, .op = op, .nth = 1 + tu_rng_below(&s->rng, range)};
        plan.rule_count = 1;
    }
    int64_t kill_after_acks = (int64_t)tu_rng_below(&s->rng, 16);
    int64_t kill_delay_ms = (int64_t)tu_rng_below(&s->rng, 400);
    int64_t extra_us = (int64_t)tu_rng_below(&s->rng, 4000);
    uint64_t child_rng = tu_rng_next(&s->rng);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_fd = fds[1];
        child_main(s->dir, s->cfg->records, child_rng, mode == END_POWER_LOSS ? &plan : NULL);
        _exit(CHILD_EXIT_ERROR);
    }
    close(fds[1]);
    int64_t start = tu_now_ms(), last_msg = start;
    int64_t acks = 0;
    bool exited = false, hung = false;
    for (;;) {
        int64_t now = tu_now_ms();
        int64_t wait = CHILD_HANG_MS - (now - last_msg);
        if (mode == END_KILL_AFTER_DELAY)
            wait = kill_delay_ms - (now - start) < wait ? kill_delay_ms - (now - start) : wait;
        if (wait <= 0) {
            hung = now - last_msg >= CHILD_HANG_MS;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int prc = poll(&pfd, 1, (int)wait);
        if (prc < 0 && errno == EINTR)
            continue;
        if (prc <= 0)
            continue;
        struct child_msg m;
        if (!tu_read_full(fds[0], &m, sizeof(m))) {
            exited = true;
            break;
        }
        last_msg = tu_now_ms();
        take_msg(s, &m);
        if (m.kind == MSG_COMMIT)
            acks++;
        if (mode == END_KILL_AFTER_ACKS && acks >= kill_after_acks)
            break;
    }
    if (!exited) {
        if (!hung && extra_us)
            usleep((useconds_t)extra_us);
        kill(pid, SIGKILL);
    }
    struct child_msg m;
    while (tu_read_full(fds[0], &m, sizeof(m)))
        take_msg(s, &m); /* acknowledged before the kill: they count */
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (hung)
        anomaly(s, "the child made no progress for %d ms (killed)", CHILD_HANG_MS);
    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGKILL && !exited)
            s->kills++;
        else
            anomaly(s, "the child died of signal %d", WTERMSIG(status));
        return;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == CHILD_EXIT_DONE) {
        s->clean_exits++;
        if (mode == END_POWER_LOSS)
            s->power_not_fired++;
    } else if (code == CHILD_EXIT_POWER_LOST && mode == END_POWER_LOSS) {
        s->power_losses++;
    } else if (code == CHILD_EXIT_WRONG_RECORD) {
        anomaly(s, "the consumer yielded a wrong record (see the child's message)");
    } else {
        anomaly(s, "the child exited with %d (mode %d; see its message)", code, (int)mode);
    }
}

/* ---- the checker ---- */

typedef void (*record_fn)(void *ctx, const struct rt_record_view *r);

/* Calls fn for every record of topic-part readable at `iso`, from the log start to the bound.
 * Returns 0, or the error that stopped it (reported by the caller). */
static int read_partition(rt_engine *e, const char *topic, uint32_t part, enum rt_isolation iso,
                          record_fn fn, void *ctx, int64_t *bound_out)
{
    int64_t from = 0, bound = 0;
    int rc = rt_list_offsets(e, topic, part, RT_OFFSET_EARLIEST, iso, &from);
    if (rc == 0)
        rc = rt_list_offsets(e, topic, part, RT_OFFSET_LATEST, iso, &bound);
    if (rc)
        return rc;
    *bound_out = bound;
    while (from < bound) {
        rt_fetch *fh = NULL;
        rc = rt_fetch_start(e, topic, part, from, 256 * 1024, iso, &fh);
        if (rc)
            return rc;
        struct rt_records it;
        struct rt_record_view r;
        rc = rt_records_init(&it, fh, from);
        while (rc == 0 && (rc = rt_records_next(&it, &r)) == 0)
            fn(ctx, &r);
        int64_t next = rt_records_next_offset(&it);
        rt_fetch_release(fh);
        if (rc != RT_E_END)
            return rc;
        if (next <= from)
            return RT_E_END; /* no progress: the caller reports a stall */
        from = next;
    }
    return 0;
}

struct out_check {
    struct scenario *s;
    const char *isolation;
    uint32_t part;
    int64_t expect; /* next "in-P-O" offset expected (read_committed) */
    int64_t count;
    int bad;
    bool exact; /* read_committed: the sequence must be 0, 1, 2, ... */
};

static void check_out_record(void *ctx, const struct rt_record_view *r)
{
    struct out_check *c = ctx;
    uint32_t p = 0;
    int64_t o = -1;
    c->count++;
    if (!parse_value(r->value, r->value_len, "in", &p, &o) || p != c->part) {
        if (c->bad++ < 5)
            anomaly(c->s, "out-%u offset %" PRId64 " (%s) holds '%.*s'", c->part, r->offset,
                    c->isolation, r->value_len > 0 ? r->value_len : 0,
                    r->value ? (const char *)r->value : "");
        return;
    }
    if (!c->exact)
        return;
    if (o != c->expect) {
        if (c->bad++ < 5)
            anomaly(c->s,
                    "out-%u offset %" PRId64 " (read_committed) holds in-%u-%" PRId64
                    ", expected in-%u-%" PRId64 " (%s)",
                    c->part, r->offset, p, o, c->part, c->expect,
                    o < c->expect ? "a duplicate" : "a gap: records lost");
        if (o >= c->expect)
            c->expect = o + 1;
        return;
    }
    c->expect++;
}

static void count_record(void *ctx, const struct rt_record_view *r)
{
    (void)r;
    (*(int64_t *)ctx)++;
}

static int print_txn(void *ctx, const struct rt_txn_info *t)
{
    (void)ctx;
    fprintf(stderr,
            "  txn %s: producer %" PRId64 " epoch %d state %s age %" PRId64 " ms, %u partitions",
            t->transactional_id, t->producer_id, t->epoch, t->state, t->age_ms, t->partition_count);
    for (uint32_t i = 0; i < t->partition_count; i++)
        fprintf(stderr, " %s-%u(lso %" PRId64 ")", t->partition_topics[i], t->partition_ids[i],
                t->pinned_lso[i]);
    fputc('\n', stderr);
    return 0;
}

/* True when every out partition's LSO equals its high watermark and the group's offsets of
 * in-0..2 are stable (no transactional offset commit pending). */
static bool settled(rt_engine *e, int64_t lso[PARTS], int64_t hw[PARTS], int stable_rc[PARTS])
{
    bool ok = true;
    for (uint32_t part = 0; part < PARTS; part++) {
        lso[part] = hw[part] = -1;
        rt_list_offsets(e, "out", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &lso[part]);
        rt_list_offsets(e, "out", part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw[part]);
        int64_t c = -1;
        stable_rc[part] = rt_group_fetch_offsets(e, GROUP, "in", part, true, &c);
        ok = ok && lso[part] == hw[part] && lso[part] >= 0 && stable_rc[part] == 0;
    }
    return ok;
}

/* Reopens the directory and checks TR1-TR8. Returns false when it could not be opened. */
static bool check(struct scenario *s)
{
    struct rt_options o;
    torture_options(&o);
    rt_engine *e = NULL;
    int rc = rt_open(s->dir, &o, &e);
    if (rc) {
        anomaly(s, "TR1: rt_open after the crash: %s (%s)", rt_strerror(rc), rt_error_detail());
        return false;
    }
    /* TR2, TR3: an open transaction (the killed child's) is aborted by the coordinator's timer
     * after TXN_TIMEOUT_MS; until then the LSO and the group's offsets may be pinned. */
    int64_t lso[PARTS], hw[PARTS];
    int stable_rc[PARTS];
    int64_t t0 = tu_now_ms();
    while (!settled(e, lso, hw, stable_rc) && tu_now_ms() - t0 < LSO_WAIT_MS)
        tu_sleep_ms(10);
    s->settle_ms_max = tu_now_ms() - t0 > s->settle_ms_max ? tu_now_ms() - t0 : s->settle_ms_max;
    for (uint32_t part = 0; part < PARTS; part++)
        if (lso[part] != hw[part])
            anomaly(s,
                    "TR2: out-%u LSO %" PRId64 " stays below its high watermark %" PRId64
                    " %d ms after reopen (transaction timeout %d ms)",
                    part, lso[part], hw[part], LSO_WAIT_MS, TXN_TIMEOUT_MS);
    for (uint32_t part = 0; part < PARTS; part++) {
        /* TR3, TR4 */
        int64_t c = -1;
        rc = rt_group_fetch_offsets(e, GROUP, "in", part, true, &c);
        if (rc) {
            anomaly(s, "TR3: group offset of in-%u still %s %d ms after reopen (%s)", part,
                    rt_strerror(rc), LSO_WAIT_MS, rt_error_detail());
            rt_txn_list(e, print_txn, NULL);
            rc = rt_group_fetch_offsets(e, GROUP, "in", part, false, &c);
        }
        if (c < 0)
            c = 0;
        if (c < s->acked[part])
            anomaly(s, "TR4: in-%u committed offset %" PRId64 " is below the acknowledged %" PRId64,
                    part, c, s->acked[part]);
        if (c < s->committed[part])
            anomaly(s, "TR4: in-%u committed offset went back from %" PRId64 " to %" PRId64, part,
                    s->committed[part], c);
        if (c > s->cfg->records)
            anomaly(s, "TR4: in-%u committed offset %" PRId64 " beyond the input (%" PRId64 ")",
                    part, c, s->cfg->records);
        s->committed[part] = c;
        /* TR5 */
        struct out_check oc = {.s = s, .isolation = "read_committed", .part = part, .exact = true};
        int64_t bound = 0;
        rc = read_partition(e, "out", part, RT_READ_COMMITTED, check_out_record, &oc, &bound);
        if (rc)
            anomaly(s, "TR5: reading out-%u read_committed: %s (%s)", part, rt_strerror(rc),
                    rc == RT_E_END ? "the iterator made no progress" : rt_error_detail());
        if (oc.expect != c)
            anomaly(s,
                    "TR5: out-%u read_committed ends at in-%u-%" PRId64 " but the group committed "
                    "in-%u up to %" PRId64 " (offsets and output not atomic)",
                    part, part, oc.expect - 1, part, c);
        /* TR6 */
        struct out_check ou = {.s = s, .isolation = "read_uncommitted", .part = part};
        rc = read_partition(e, "out", part, RT_READ_UNCOMMITTED, check_out_record, &ou, &bound);
        if (rc)
            anomaly(s, "TR6: reading out-%u read_uncommitted: %s (%s)", part, rt_strerror(rc),
                    rc == RT_E_END ? "the iterator made no progress" : rt_error_detail());
        if (ou.count < oc.count)
            anomaly(s,
                    "TR6: out-%u shows %" PRId64 " records read_uncommitted, %" PRId64
                    " read_committed",
                    part, ou.count, oc.count);
        s->hidden_records += ou.count - oc.count;
        /* TR7 */
        int64_t in_count = 0, in_lso = -1, in_hw = -1;
        rc = read_partition(e, "in", part, RT_READ_COMMITTED, count_record, &in_count, &bound);
        rt_list_offsets(e, "in", part, RT_OFFSET_LATEST, RT_READ_COMMITTED, &in_lso);
        rt_list_offsets(e, "in", part, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &in_hw);
        if (rc || in_count != s->cfg->records || in_lso != in_hw || in_hw != s->cfg->records)
            anomaly(s, "TR7: in-%u holds %" PRId64 " records, LSO %" PRId64 ", HW %" PRId64 " (%s)",
                    part, in_count, in_lso, in_hw, rt_strerror(rc));
    }
    /* TR8 */
    rc = rt_close(e);
    if (rc)
        anomaly(s, "TR8: rt_close: %s (%s)", rt_strerror(rc), rt_error_detail());
    struct tu_verify_log vl = {.print_max = 8};
    rc = rt_verify(s->dir, tu_on_problem, &vl);
    if (rc)
        anomaly(s, "TR8: rt_verify: %s, %u problems (listed above)", rt_strerror(rc), vl.problems);
    bool complete = true;
    for (uint32_t part = 0; part < PARTS; part++)
        complete = complete && s->committed[part] == s->cfg->records;
    s->complete = complete;
    return true;
}

/* ---- one seed ---- */

static void prefill(const char *dir, int64_t records)
{
    struct rt_options o;
    torture_options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "in", PARTS), 0);
    assert_int_equal(rt_topic_create(e, "out", PARTS), 0);
    enum { CHUNK = 64 };
    char values[CHUNK][VALUE_MAX];
    struct rt_record recs[CHUNK];
    for (uint32_t part = 0; part < PARTS; part++)
        for (int64_t off = 0; off < records; off += CHUNK) {
            size_t n = 0;
            for (; n < CHUNK && off + (int64_t)n < records; n++) {
                int len = snprintf(values[n], VALUE_MAX, "src-%u-%" PRId64, part, off + (int64_t)n);
                recs[n] = (struct rt_record){
                    .key_len = -1, .value = values[n], .value_len = len, .timestamp_ms = -1};
            }
            int64_t base = -1;
            assert_int_equal(rt_append(e, "in", part, recs, n, &base), 0);
            assert_int_equal(base, off);
        }
    assert_int_equal(rt_close(e), 0);
}

static void run_seed(struct scenario *s)
{
    bool verbose = getenv("RT_TORTURE_VERBOSE") != NULL;
    s->dir = tu_mkdtemp();
    s->rng = s->seed * 0x2545f4914f6cdd1dull + 1;
    prefill(s->dir, s->cfg->records);
    int64_t t0 = tu_now_ms();
    for (s->iteration = 1; s->iteration <= s->cfg->iterations; s->iteration++) {
        if (tu_now_ms() >= s->cfg->deadline_ms)
            break;
        uint64_t r = tu_rng_below(&s->rng, 100);
        enum end_mode mode = r < 30   ? END_POWER_LOSS
                             : r < 45 ? END_KILL_AFTER_DELAY
                                      : END_KILL_AFTER_ACKS;
        int64_t c0 = tu_now_ms(), acks0 = s->commits_acked;
        s->iterations_run++;
        run_child(s, mode);
        int64_t c1 = tu_now_ms();
        bool ok = check(s);
        if (verbose)
            fprintf(stderr,
                    "  seed %" PRIu64 " iteration %d: mode %d, child %" PRId64 " ms (%" PRId64
                    " acks), check %" PRId64 " ms, committed %" PRId64 "/%" PRId64 "/%" PRId64 "\n",
                    s->seed, s->iteration, (int)mode, c1 - c0, s->commits_acked - acks0,
                    tu_now_ms() - c1, s->committed[0], s->committed[1], s->committed[2]);
        if (!ok || s->complete)
            break;
    }
    fprintf(stderr,
            "seed %" PRIu64 ": %d iterations, %d kills, %d power losses (%d not reached), %d "
            "clean exits, %" PRId64 " commits acknowledged, %" PRId64 " aborts, %d fenced, "
            "%" PRId64 " aborted records hidden, committed %" PRId64 "/%" PRId64 "/%" PRId64
            " of %" PRId64 "%s, %.1f s, anomalies %d\n",
            s->seed, s->iterations_run, s->kills, s->power_losses, s->power_not_fired,
            s->clean_exits, s->commits_acked, s->aborts, s->fenced, s->hidden_records,
            s->committed[0], s->committed[1], s->committed[2], s->cfg->records,
            s->complete ? " (complete: output == input exactly once)" : "",
            (double)(tu_now_ms() - t0) / 1000.0, s->anomalies);
    if (s->anomalies && getenv("RT_TEST_KEEP") == NULL)
        fprintf(stderr,
                "  (rerun with RT_TORTURE_SEED=%" PRIu64
                " RT_TORTURE_SEEDS=1 RT_TEST_KEEP=1 to keep %s)\n",
                s->seed, s->dir);
    tu_rmdir_free(s->dir);
    s->dir = NULL;
}

static void test_torture(void **state)
{
    (void)state;
    struct config cfg;
    int64_t seconds = tu_env_int("RT_TORTURE_SECONDS", 30);
    cfg.records = tu_env_int("RT_TORTURE_RECORDS", 150);
    cfg.iterations = (int)tu_env_int("RT_TORTURE_ITERATIONS", 12);
    cfg.seeds_by_time = getenv("RT_TORTURE_SECONDS") && !getenv("RT_TORTURE_SEEDS");
    cfg.seeds = (int)tu_env_int("RT_TORTURE_SEEDS", 3);
    cfg.first_seed = (uint64_t)tu_env_int("RT_TORTURE_SEED", 1);
    int64_t start = tu_now_ms();
    cfg.deadline_ms = start + seconds * 1000;
    assert_true(cfg.records > 0);
    assert_true(cfg.iterations > 0);
    fprintf(stderr,
            "torture: backend %s, %" PRId64 " records x %u partitions, %d iterations per seed, "
            "%s, budget %" PRId64 " s\n",
            tu_backend(), cfg.records, PARTS, cfg.iterations,
            cfg.seeds_by_time ? "seeds until the budget is spent" : "fixed seeds", seconds);
    int seeds_run = 0, anomalies = 0, iterations = 0, kills = 0, power = 0;
    for (int i = 0; cfg.seeds_by_time || i < cfg.seeds; i++) {
        if (tu_now_ms() >= cfg.deadline_ms)
            break;
        struct scenario s;
        memset(&s, 0, sizeof(s));
        s.cfg = &cfg;
        s.seed = cfg.first_seed + (uint64_t)i;
        run_seed(&s);
        seeds_run++;
        anomalies += s.anomalies;
        iterations += s.iterations_run;
        kills += s.kills;
        power += s.power_losses;
    }
    fprintf(stderr,
            "torture: %d seeds, %d iterations run, %d kills, %d power losses, %d anomalies found"
            ", %.1f s\n",
            seeds_run, iterations, kills, power, anomalies, (double)(tu_now_ms() - start) / 1000.0);
    assert_true(seeds_run > 0);
    assert_int_equal(anomalies, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
