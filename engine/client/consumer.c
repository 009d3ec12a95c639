/*
 * consumer.c — the embedded consumer (rt_consumer_*): a set of assigned partitions, a position
 * per partition, and at most one rt_fetch held per partition at a time, from which records are
 * yielded through rt_records_next (so under read_committed aborted and open transactions are
 * never returned, and control records are skipped). It owns its fetches and positions; it never
 * writes anything but offset commits through the group manager (engine/txn/group.c).
 *
 * Positions (Kafka's): the position is the offset of the next record to return. After a record
 * it is that record's offset + 1. When a fetch is exhausted the position moves to the end of
 * that fetch — one past the last offset of its last batch, computed from the batch headers —
 * even when the fetch held only markers or aborted batches, so the consumer never sticks behind
 * a control batch. Invariants:
 *   CN1. A partition's fetch, if held, starts at or below its position and iterating it yields
 *        only offsets >= the position.
 *   CN2. The position never moves backwards except by seek / rewind / assign.
 *   CN3. A record view stays valid until the next poll (the fetch behind it is released only
 *        when a later poll finds it exhausted, or by seek / rewind / close).
 *   CN4. A position above the high watermark is never read from and never committed:
 *        rt_consumer_poll and rt_consumer_commit return RT_E_OFFSET_OUT_OF_RANGE naming it.
 *
 * Polling is round-robin over the assigned partitions, one record per call; a partition with
 * nothing readable is passed over. When no partition has a record, poll sleeps in 1 ms steps
 * until timeout_ms (negative: no limit) and then returns RT_E_END.
 *
 * A position below the log start (retention deleted it) is reset to the log start (Kafka's
 * auto.offset.reset=earliest); one at the readable end (the high watermark, or the LSO under
 * read_committed) waits for the log to grow. One above the high watermark can only come from a
 * seek or a committed offset beyond the end: poll reports it (CN4).
 *
 * Starting offsets come from the group (stable fetch, retried up to CONSUMER_UNSTABLE_WAIT_MS
 * while a transactional commit is pending, then RT_E_UNSTABLE_OFFSET_COMMIT), else the log
 * start. One thread at a time per consumer (ringtail.h); the engine and the group manager are
 * shared and thread-safe.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "consumer.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "records.h"
#include "group.h"
#include "log.h"
#include "ringtail.h"
#include "txn.h"

#define CONSUMER_FETCH_MAX_BYTES_DEFAULT (1u << 20)
#define CONSUMER_UNSTABLE_WAIT_MS        2000
#define CONSUMER_AUTO_COMMIT_MS          5000
#define CONSUMER_PARTITIONS_MAX          65536

struct consumer_partition {
    char *topic; /* owned */
    uint32_t partition;
    int64_t position;
    rt_fetch *fetch; /* NULL between fetches */
    struct rt_records it;
    int64_t fetch_end; /* one past the last offset of the fetch's batches */
};

struct rt_consumer {
    struct log *log;
    struct txn *txn;
    _Atomic uint32_t *open_count; /* the engine's census of open consumers (EN1 in engine.c) */
    char *group;                  /* owned; NULL = no group */
    enum rt_isolation isolation;
    bool auto_commit;
    uint32_t fetch_max_bytes;
    struct consumer_partition *parts;
    size_t count, capacity;
    size_t next; /* round-robin cursor */
    int64_t last_auto_commit_ms;
};

void rt_consumer_options_init(struct rt_consumer_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof(*opts));
    opts->group = NULL;
    opts->isolation = RT_READ_COMMITTED;
    opts->auto_commit = false;
    opts->fetch_max_bytes = CONSUMER_FETCH_MAX_BYTES_DEFAULT;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void release_fetch(struct consumer_partition *cp)
{
    if (cp->fetch)
        rt_fetch_release(cp->fetch);
    cp->fetch = NULL;
    cp->fetch_end = -1;
}

static struct consumer_partition *find_part(rt_consumer *c, const char *topic, uint32_t partition)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->parts[i].partition == partition && strcmp(c->parts[i].topic, topic) == 0)
            return &c->parts[i];
    return NULL;
}

int consumer_open(struct log *lg, struct txn *t, const struct rt_consumer_options *opts,
                  _Atomic uint32_t *open_count, rt_consumer **out)
{
    if (!out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_open: NULL argument");
    *out = NULL;
    struct rt_consumer_options d;
    rt_consumer_options_init(&d);
    if (!opts)
        opts = &d;
    if (opts->isolation != RT_READ_COMMITTED && opts->isolation != RT_READ_UNCOMMITTED)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_open: unknown isolation %d",
                         (int)opts->isolation);
    if (opts->group && (opts->group[0] == '\0' || strlen(opts->group) > GROUP_NAME_MAX_BYTES))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_open: group empty or over %d bytes",
                         GROUP_NAME_MAX_BYTES);
    if (opts->auto_commit && opts->group) {
        int rc = log_refuse_if_read_only(lg, "rt_consumer_open with auto_commit");
        if (rc)
            return rc;
    }
    rt_consumer *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->log = lg;
    c->txn = t;
    c->open_count = open_count;
    c->isolation = opts->isolation;
    c->auto_commit = opts->auto_commit && opts->group;
    c->fetch_max_bytes =
        opts->fetch_max_bytes ? opts->fetch_max_bytes : CONSUMER_FETCH_MAX_BYTES_DEFAULT;
    if (opts->group) {
        c->group = strdup(opts->group);
        if (!c->group) {
            free(c);
            return -ENOMEM;
        }
    }
    c->last_auto_commit_ms = fs_now_ms();
    *out = c;
    return 0;
}

/* The group's committed offset for (topic, partition): stable, retried while a transactional
 * commit is pending. -1 when there is none (or no group, or no offsets ever committed). */
static int committed_offset(rt_consumer *c, const char *topic, uint32_t partition,
                            int64_t *offset_out)
{
    *offset_out = -1;
    if (!c->group)
        return 0;
    struct group_manager *g = txn_groups(c->txn);
    if (!g)
        return 0; /* `__consumer_offsets` was never written: nothing committed */
    int waited_ms = 0;
    for (;;) {
        int rc = group_fetch(g, c->group, topic, partition, true, offset_out);
        if (rc != RT_E_UNSTABLE_OFFSET_COMMIT || waited_ms >= CONSUMER_UNSTABLE_WAIT_MS)
            return rc;
        int step = waited_ms < 16 ? 1 : 10;
        sleep_ms(step);
        waited_ms += step;
    }
}

/* Where a partition starts: the committed offset, else the log start. */
static int start_offset(rt_consumer *c, const char *topic, uint32_t partition, int64_t *offset_out)
{
    int rc = committed_offset(c, topic, partition, offset_out);
    if (rc)
        return rc;
    if (*offset_out >= 0)
        return 0;
    return log_list_offsets(c->log, topic, partition, RT_OFFSET_EARLIEST, c->isolation, offset_out);
}

int rt_consumer_assign(rt_consumer *c, const char *topic, const uint32_t *partitions, size_t count)
{
    error_clear();
    if (!c || !topic || (!partitions && count))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_assign: NULL argument");
    uint32_t n = 0;
    int rc = log_topic_describe(c->log, topic, &n);
    if (rc)
        return rc;
    if (c->count + count > CONSUMER_PARTITIONS_MAX)
        return error_set(RT_E_CONSUMER_PARTITIONS_FULL, "rt_consumer_assign: over %d partitions",
                         CONSUMER_PARTITIONS_MAX);
    /* Everything is resolved before anything changes: a failure leaves the assignment as it
     * was. */
    int64_t *starts = calloc(count ? count : 1, sizeof(*starts));
    if (!starts)
        return -ENOMEM;
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (partitions[i] >= n) {
            rc = error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "rt_consumer_assign: %s-%u", topic,
                           partitions[i]);
            break;
        }
        rc = start_offset(c, topic, partitions[i], &starts[i]);
    }
    if (rc == 0 && c->count + count > c->capacity) {
        size_t cap = c->capacity ? c->capacity : 4;
        while (cap < c->count + count)
            cap *= 2;
        struct consumer_partition *p = realloc(c->parts, cap * sizeof(*p));
        if (!p)
            rc = -ENOMEM;
        else {
            c->parts = p;
            c->capacity = cap;
        }
    }
    for (size_t i = 0; i < count && rc == 0; i++) {
        struct consumer_partition *cp = find_part(c, topic, partitions[i]);
        if (cp) { /* re-assigned: starts over from the group's offset */
            release_fetch(cp);
            cp->position = starts[i];
            continue;
        }
        cp = &c->parts[c->count];
        memset(cp, 0, sizeof(*cp));
        cp->topic = strdup(topic);
        if (!cp->topic) {
            rc = -ENOMEM;
            break;
        }
        cp->partition = partitions[i];
        cp->position = starts[i];
        cp->fetch_end = -1;
        c->count++;
    }
    free(starts);
    return rc;
}

/* One past the last offset of the whole batches in the fetch (its headers were checked by the
 * fetch's walk; a damaged one is reported by the iterator first). */
static int64_t fetch_end_of(const struct rt_fetch_view *v, int64_t position)
{
    int64_t end = position;
    const uint8_t *p = v->data, *stop = v->data ? v->data + v->size_bytes : NULL;
    while (p && p < stop) {
        struct batch_header h;
        const char *why = NULL;
        int64_t size = batch_size_at(p, (size_t)(stop - p), &why);
        if (size < 0 || batch_header_parse(p, (size_t)size, &h, &why) != 0)
            break;
        if (h.base_offset >= 0 && h.base_offset <= INT64_MAX - h.last_offset_delta - 1 &&
            batch_last_offset(&h) + 1 > end)
            end = batch_last_offset(&h) + 1;
        p += size;
    }
    return end;
}

/* Starts a fetch at the partition's position. 0 with cp->fetch set, 1 when nothing is readable
 * there yet, or an error. */
static int start_fetch(rt_consumer *c, struct consumer_partition *cp)
{
    assert(!cp->fetch);
    for (int attempt = 0; attempt < 2; attempt++) {
        rt_fetch *f = NULL;
        int rc = log_fetch_start(c->log, cp->topic, cp->partition, cp->position, c->fetch_max_bytes,
                                 c->isolation, &f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE) {
            int64_t start = 0;
            int lrc = log_list_offsets(c->log, cp->topic, cp->partition, RT_OFFSET_EARLIEST,
                                       c->isolation, &start);
            if (lrc)
                return lrc;
            if (cp->position >= start) {
                int64_t hw = 0;
                lrc = log_list_offsets(c->log, cp->topic, cp->partition, RT_OFFSET_LATEST,
                                       RT_READ_UNCOMMITTED, &hw);
                if (lrc)
                    return lrc;
                if (cp->position > hw) /* CN4: nothing will ever be written there first */
                    return error_set(RT_E_OFFSET_OUT_OF_RANGE,
                                     "%s-%u: position %" PRId64 " is beyond the high watermark "
                                     "%" PRId64 "; seek to go on",
                                     cp->topic, cp->partition, cp->position, hw);
                error_clear();
                return 1; /* at the end, or above the LSO: wait for the log */
            }
            cp->position = start; /* retention deleted it: reset to the earliest */
            continue;
        }
        if (rc)
            return rc;
        const struct rt_fetch_view *v = rt_fetch_get(f);
        if (v->size_bytes == 0) {
            rt_fetch_release(f);
            return 1;
        }
        rc = records_init(&cp->it, f, cp->position);
        if (rc) {
            rt_fetch_release(f);
            return rc;
        }
        cp->fetch = f;
        cp->fetch_end = fetch_end_of(v, cp->position);
        assert(cp->fetch_end >= cp->position);
        return 0;
    }
    return 1;
}

/* The partition's next record: 0 with *out, 1 when it has none now, or an error. */
static int next_from(rt_consumer *c, struct consumer_partition *cp, struct rt_record_view *out)
{
    for (;;) {
        if (!cp->fetch) {
            int rc = start_fetch(c, cp);
            if (rc)
                return rc;
        }
        int rc = records_next(&cp->it, out);
        if (rc == 0) {
            assert(out->offset >= cp->position); /* CN1 */
            cp->position = out->offset + 1;
            return 0;
        }
        if (rc != RT_E_END)
            return rc;
        /* Exhausted: move past everything it held (markers and aborted batches too). */
        int64_t before = cp->position;
        if (cp->fetch_end > cp->position)
            cp->position = cp->fetch_end;
        release_fetch(cp);
        error_clear();
        if (cp->position == before)
            return 1; /* no progress: do not spin on the same fetch */
    }
}

static int auto_commit_if_due(rt_consumer *c, bool force)
{
    if (!c->auto_commit)
        return 0;
    int64_t now = fs_now_ms();
    if (!force && now - c->last_auto_commit_ms < CONSUMER_AUTO_COMMIT_MS)
        return 0;
    c->last_auto_commit_ms = now;
    return rt_consumer_commit(c);
}

int rt_consumer_poll(rt_consumer *c, struct rt_record_view *out, const char **topic_out,
                     uint32_t *partition_out, int32_t timeout_ms)
{
    error_clear();
    if (!c || !out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_poll: NULL argument");
    int rc = auto_commit_if_due(c, false);
    if (rc)
        return rc;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : fs_now_ms() + timeout_ms;
    for (;;) {
        for (size_t n = 0; n < c->count; n++) {
            size_t i = (c->next + n) % c->count;
            struct consumer_partition *cp = &c->parts[i];
            rc = next_from(c, cp, out);
            if (rc < 0)
                return rc;
            if (rc == 0) {
                c->next = (i + 1) % c->count;
                if (topic_out)
                    *topic_out = cp->topic;
                if (partition_out)
                    *partition_out = cp->partition;
                return 0;
            }
        }
        if (fs_now_ms() >= deadline)
            break;
        sleep_ms(1);
    }
    error_clear();
    return RT_E_END;
}

int rt_consumer_seek(rt_consumer *c, const char *topic, uint32_t partition, int64_t offset)
{
    error_clear();
    if (!c || !topic)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_seek: NULL argument");
    struct consumer_partition *cp = find_part(c, topic, partition);
    if (!cp)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_seek: %s-%u is not assigned", topic,
                         partition);
    int64_t resolved = offset;
    if (offset < 0) { /* RT_OFFSET_EARLIEST / RT_OFFSET_LATEST, as rt_list_offsets takes them */
        int rc = log_list_offsets(c->log, topic, partition, offset, c->isolation, &resolved);
        if (rc)
            return rc;
    }
    release_fetch(cp);
    cp->position = resolved;
    return 0;
}

int rt_consumer_position(rt_consumer *c, const char *topic, uint32_t partition, int64_t *offset_out)
{
    error_clear();
    if (!c || !topic || !offset_out)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_position: NULL argument");
    struct consumer_partition *cp = find_part(c, topic, partition);
    if (!cp)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_position: %s-%u is not assigned",
                         topic, partition);
    *offset_out = cp->position;
    return 0;
}

int rt_consumer_rewind_to_committed(rt_consumer *c)
{
    error_clear();
    if (!c)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_rewind_to_committed: NULL");
    int64_t *starts = calloc(c->count ? c->count : 1, sizeof(*starts));
    if (!starts)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < c->count && rc == 0; i++)
        rc = start_offset(c, c->parts[i].topic, c->parts[i].partition, &starts[i]);
    for (size_t i = 0; i < c->count && rc == 0; i++) {
        release_fetch(&c->parts[i]);
        c->parts[i].position = starts[i];
    }
    free(starts);
    return rc;
}

int rt_consumer_positions(rt_consumer *c, struct rt_offset *out, size_t max, size_t *count_out)
{
    error_clear();
    if (!c || !count_out || (!out && max))
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_positions: NULL argument");
    size_t n = c->count < max ? c->count : max;
    for (size_t i = 0; i < n; i++)
        out[i] = (struct rt_offset){.topic = c->parts[i].topic,
                                    .partition = c->parts[i].partition,
                                    .offset = c->parts[i].position,
                                    .metadata = NULL};
    *count_out = n;
    if (n < c->count)
        return error_set(RT_E_BUFFER_TOO_SMALL, "rt_consumer_positions: %zu assigned, room for %zu",
                         c->count, max);
    return 0;
}

int rt_consumer_commit(rt_consumer *c)
{
    error_clear();
    if (!c)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_commit: NULL consumer");
    if (!c->group)
        return error_set(RT_E_INVALID_ARGUMENT, "rt_consumer_commit: the consumer has no group");
    int ro = log_refuse_if_read_only(c->log, "rt_consumer_commit");
    if (ro)
        return ro;
    if (c->count == 0)
        return 0;
    struct rt_offset *offsets = calloc(c->count, sizeof(*offsets));
    if (!offsets)
        return -ENOMEM;
    size_t n = 0;
    int rc = rt_consumer_positions(c, offsets, c->count, &n);
    assert(rc == 0 && n == c->count);
    for (size_t i = 0; i < n && rc == 0; i++) { /* CN4 */
        int64_t hw = 0;
        rc = log_list_offsets(c->log, offsets[i].topic, offsets[i].partition, RT_OFFSET_LATEST,
                              RT_READ_UNCOMMITTED, &hw);
        if (rc == 0 && offsets[i].offset > hw)
            rc = error_set(RT_E_OFFSET_OUT_OF_RANGE,
                           "rt_consumer_commit: %s-%u position %" PRId64
                           " is beyond the high watermark %" PRId64 "; nothing committed",
                           offsets[i].topic, offsets[i].partition, offsets[i].offset, hw);
    }
    if (rc) {
        free(offsets);
        return rc;
    }
    struct group_manager *g = NULL;
    rc = txn_groups_create(c->txn, &g);
    if (rc == 0) /* else the real cause, as rt_group_commit_offsets; the detail names it */
        rc = group_commit(g, c->group, offsets, n);
    free(offsets);
    return rc;
}

int rt_consumer_close(rt_consumer *c)
{
    error_clear();
    if (!c)
        return 0;
    int rc = auto_commit_if_due(c, true);
    for (size_t i = 0; i < c->count; i++) {
        release_fetch(&c->parts[i]);
        free(c->parts[i].topic);
    }
    free(c->parts);
    free(c->group);
    _Atomic uint32_t *open_count = c->open_count;
    free(c);
    uint32_t before = atomic_fetch_sub(open_count, 1); /* last: rt_close may free the engine */
    assert(before > 0);
    (void)before;
    return rc;
}
