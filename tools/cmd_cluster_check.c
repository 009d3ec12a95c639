/*
 * cmd_cluster_check.c — `ringtail cluster check DIR DIR...`: are the replicas of every partition
 * byte-identical? Opens each node's data directory read-only (the nodes must be stopped: a
 * running node holds its directory's lock) and compares, per partition of the first directory's
 * topics, the RecordBatch bytes of every other directory with the first's from the latest log
 * start offset on: batch by batch (the same base offsets and the same bytes, leader epochs
 * included), up to where the shorter log ends. It prints each partition's log ends and the
 * high watermark each node's replication-offset-checkpoint holds, and changes nothing.
 *
 * A compacted topic (cleanup.policy holds "compact" on the first directory) is cleaned on every
 * replica by its own cleaner, and a follower keeps what it copied before its leader cleaned it
 * (docs/format.md A.10 "Replica appends"): where the bytes differ there, the check compares
 * records instead, in offset order, markers aside — every offset both replicas hold must carry
 * the same record (timestamp, key, value, headers); an offset only one holds is what the
 * other's cleaner removed. Such a partition prints `consistent` (exit 0), not `identical`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools/kafka/cluster/hw_checkpoint.h"

#define CHECK_DIRS_MAX 16

static void check_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail cluster check [--prefix] DIR DIR [DIR...]\n"
            "\n"
            "Compares the partitions of stopped cluster nodes' data directories (each node's\n"
            "`ringtail serve DIR`) byte for byte, batch by batch, and prints one line per\n"
            "partition of the first directory's topics, tab-separated:\n"
            "  "
            "partition<TAB>TOPIC<TAB>P<TAB>identical|consistent|differ@OFFSET|missing<TAB>ends<TAB>"
            "E,..\n"
            "    <TAB>hw<TAB>H,..   (log end and checkpointed high watermark per DIR, '-' none)\n"
            "'identical' means every batch both logs hold is the same bytes at the same\n"
            "offset; without --prefix the log ends must be equal too. For a compacted topic\n"
            "(cleanup.policy compact) whose bytes differ, 'consistent' means every offset both\n"
            "logs hold carries the same record (each replica's cleaner removes its own).\n"
            "\n"
            "Exit status: 0 identical, 1 a difference (or a directory that cannot be read),\n"
            "2 usage error.\n");
}

/* Whole batches of one partition in offset order, fetched segment by segment. */
struct batch_stream {
    rt_engine *e;
    const char *topic;
    uint32_t partition;
    rt_fetch *f;
    const uint8_t *p;
    size_t left;
    int64_t next;
};

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The next batch: 1 with (*at, *len, *base), 0 at the end, < 0 an engine error. */
static int stream_next(struct batch_stream *s, const uint8_t **at, size_t *len, int64_t *base)
{
    if (s->left < 61) {
        rt_fetch_release(s->f);
        s->f = NULL;
        int rc = rt_fetch_start(s->e, s->topic, s->partition, s->next, 1 << 20, RT_READ_UNCOMMITTED,
                                &s->f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE)
            return 0;
        if (rc)
            return rc;
        const struct rt_fetch_view *v = rt_fetch_get(s->f);
        if (v->size_bytes < 61)
            return 0;
        s->p = v->data;
        s->left = v->size_bytes;
    }
    size_t n = 12 + (size_t)be(s->p + 8, 4);
    if (n > s->left)
        return RT_E_CORRUPT;
    *at = s->p;
    *len = n;
    *base = (int64_t)be(s->p, 8);
    s->next = *base + (int64_t)be(s->p + 23, 4) + 1;
    s->p += n;
    s->left -= n;
    return 1;
}

/* 0 identical up to the shorter log, 1 differ (*where: the first offset that differs). */
static int compare(rt_engine *a, rt_engine *b, const char *topic, uint32_t p, int64_t from,
                   int64_t *where)
{
    struct batch_stream x = {.e = a, .topic = topic, .partition = p, .next = from};
    struct batch_stream y = {.e = b, .topic = topic, .partition = p, .next = from};
    int result = 0;
    for (;;) {
        const uint8_t *pa, *pb;
        size_t la, lb;
        int64_t ba, bb;
        int ra = stream_next(&x, &pa, &la, &ba);
        int rb = stream_next(&y, &pb, &lb, &bb);
        if (ra <= 0 || rb <= 0) {
            if (ra < 0 || rb < 0) {
                *where = x.next < y.next ? x.next : y.next;
                result = 1;
            }
            break;
        }
        if (ba != bb || la != lb || memcmp(pa, pb, la) != 0) {
            *where = ba < bb ? ba : bb;
            result = 1;
            break;
        }
    }
    rt_fetch_release(x.f);
    rt_fetch_release(y.f);
    return result;
}

/* A compacted partition's records in offset order (markers skipped), as a consumer reads them. */
struct record_stream {
    rt_engine *e;
    const char *topic;
    uint32_t partition;
    rt_fetch *f;
    struct rt_records it;
    int64_t next;
};

/* The next record: 1 with *out (valid until the next call on s), 0 at the end, < 0 an error. */
static int record_next(struct record_stream *s, struct rt_record_view *out)
{
    for (;;) {
        if (s->f) {
            int rc = rt_records_next(&s->it, out);
            if (rc == 0)
                return 1;
            if (rc != RT_E_END)
                return rc;
            int64_t next = rt_records_next_offset(&s->it);
            rt_fetch_release(s->f);
            s->f = NULL;
            if (next <= s->next)
                return 0; /* nothing more past it */
            s->next = next;
        }
        int rc = rt_fetch_start(s->e, s->topic, s->partition, s->next, 1 << 20, RT_READ_UNCOMMITTED,
                                &s->f);
        if (rc == RT_E_OFFSET_OUT_OF_RANGE) {
            s->f = NULL;
            return 0;
        }
        if (rc)
            return rc;
        if (rt_fetch_get(s->f)->size_bytes == 0) {
            rt_fetch_release(s->f);
            s->f = NULL;
            return 0;
        }
        rc = rt_records_init(&s->it, s->f, s->next);
        if (rc)
            return rc;
    }
}

static bool same_bytes(const uint8_t *a, int32_t la, const uint8_t *b, int32_t lb)
{
    return la == lb && (la <= 0 || memcmp(a, b, (size_t)la) == 0);
}

static bool same_record(const struct rt_record_view *a, const struct rt_record_view *b)
{
    return a->timestamp_ms == b->timestamp_ms &&
           same_bytes(a->key, a->key_len, b->key, b->key_len) &&
           same_bytes(a->value, a->value_len, b->value, b->value_len) &&
           a->header_count == b->header_count && a->headers_size_bytes == b->headers_size_bytes &&
           (a->headers_size_bytes == 0 ||
            memcmp(a->headers, b->headers, a->headers_size_bytes) == 0);
}

/* A compacted partition: 0 when no offset both hold carries different records, 1 differ
 * (*where: the first such offset, or where a read failed). */
static int compare_records(rt_engine *a, rt_engine *b, const char *topic, uint32_t p, int64_t from,
                           int64_t *where)
{
    struct record_stream x = {.e = a, .topic = topic, .partition = p, .next = from};
    struct record_stream y = {.e = b, .topic = topic, .partition = p, .next = from};
    struct rt_record_view va, vb;
    int ra = record_next(&x, &va), rb = record_next(&y, &vb);
    int result = 0;
    while (ra > 0 && rb > 0) {
        if (va.offset == vb.offset) {
            if (!same_record(&va, &vb)) {
                *where = va.offset;
                result = 1;
                break;
            }
            ra = record_next(&x, &va);
            rb = record_next(&y, &vb);
        } else if (va.offset < vb.offset) {
            ra = record_next(&x, &va); /* removed by y's cleaner (or y's leader's) */
        } else {
            rb = record_next(&y, &vb);
        }
    }
    if (result == 0 && (ra < 0 || rb < 0)) {
        *where = x.next < y.next ? x.next : y.next;
        result = 1;
    }
    rt_fetch_release(x.f);
    rt_fetch_release(y.f);
    return result;
}

static int compact_policy(void *ctx, const char *name, const char *value,
                          enum rt_config_source source, bool honoured)
{
    (void)source;
    (void)honoured;
    if (strcmp(name, "cleanup.policy") == 0)
        *(bool *)ctx = strstr(value, "compact") != NULL;
    return 0;
}

struct topic_names {
    char (*names)[RT_TOPIC_NAME_MAX + 1];
    uint32_t *counts;
    bool *compacted;
    size_t n;
};

static int add_topic(void *ctx, const char *name, uint32_t partitions)
{
    struct topic_names *t = ctx;
    void *nn = realloc(t->names, (t->n + 1) * sizeof(*t->names));
    if (!nn)
        return -ENOMEM;
    t->names = nn;
    void *nc = realloc(t->counts, (t->n + 1) * sizeof(*t->counts));
    if (!nc)
        return -ENOMEM;
    t->counts = nc;
    void *ncp = realloc(t->compacted, (t->n + 1) * sizeof(*t->compacted));
    if (!ncp)
        return -ENOMEM;
    t->compacted = ncp;
    t->compacted[t->n] = false;
    snprintf(t->names[t->n], sizeof t->names[t->n], "%s", name);
    t->counts[t->n++] = partitions;
    return 0;
}

int cmd_cluster_check(int argc, char **argv)
{
    const char *dirs[CHECK_DIRS_MAX];
    int nd = 0;
    bool prefix = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            check_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--prefix") == 0)
            prefix = true;
        else if (argv[i][0] == '-')
            return cli_usage("cluster check", "unknown option '%s'", argv[i]);
        else if (nd == CHECK_DIRS_MAX)
            return cli_usage("cluster check", "at most %d directories", CHECK_DIRS_MAX);
        else
            dirs[nd++] = argv[i];
    }
    if (nd < 2)
        return cli_usage("cluster check", "two data directories at least");
    rt_engine *e[CHECK_DIRS_MAX] = {0};
    struct hw_checkpoint ck[CHECK_DIRS_MAX] = {{0}};
    int code = CLI_EXIT_OK;
    for (int d = 0; d < nd && code == CLI_EXIT_OK; d++) {
        code = cli_engine_open_read_only("cluster check", dirs[d], &e[d]);
        size_t bad = 0;
        int rc = code == CLI_EXIT_OK ? hw_checkpoint_load(dirs[d], &ck[d], &bad) : 0;
        if (rc)
            code = cli_fail("cluster check", "%s/%s: %s (line %zu)", dirs[d], HW_CHECKPOINT_FILE,
                            rc == RT_E_CORRUPT ? "not a checkpoint" : strerror(-rc), bad);
    }
    struct topic_names tn = {0};
    if (code == CLI_EXIT_OK && rt_topic_list(e[0], add_topic, &tn) != 0)
        code = cli_fail("cluster check", "%s: listing topics failed", dirs[0]);
    bool differ = false;
    for (size_t t = 0; code == CLI_EXIT_OK && t < tn.n; t++) {
        for (uint32_t p = 0; p < tn.counts[t]; p++) {
            const char *topic = tn.names[t];
            int64_t ends[CHECK_DIRS_MAX], from = 0, where = -1;
            bool missing = false;
            for (int d = 0; d < nd; d++) {
                int64_t start = 0;
                ends[d] = -1;
                if (rt_list_offsets(e[d], topic, p, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED,
                                    &start) != 0 ||
                    rt_list_offsets(e[d], topic, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED,
                                    &ends[d]) != 0) {
                    missing = true;
                    continue;
                }
                from = start > from ? start : from;
            }
            bool same = !missing, compacted = false, consistent = false;
            if (p == 0)
                (void)rt_topic_config_get(e[0], topic, compact_policy, &compacted);
            else
                compacted = tn.compacted[t];
            tn.compacted[t] = compacted;
            for (int d = 1; d < nd && same; d++) {
                if (compare(e[0], e[d], topic, p, from, &where) != 0) {
                    same = compacted && compare_records(e[0], e[d], topic, p, from, &where) == 0;
                    consistent |= same;
                }
                if (!prefix && ends[d] != ends[0] && same) {
                    same = false;
                    where = ends[d] < ends[0] ? ends[d] : ends[0];
                }
            }
            differ |= !same;
            printf("partition\t%s\t%" PRIu32 "\t", topic, p);
            if (missing)
                printf("missing");
            else if (same && consistent)
                printf("consistent");
            else if (same)
                printf("identical");
            else
                printf("differ@%" PRId64, where);
            printf("\tends\t");
            for (int d = 0; d < nd; d++)
                printf(d ? ",%" PRId64 : "%" PRId64, ends[d]);
            printf("\thw\t");
            for (int d = 0; d < nd; d++) {
                int64_t h = hw_checkpoint_get(&ck[d], topic, (int32_t)p);
                if (h < 0)
                    printf(d ? ",-" : "-");
                else
                    printf(d ? ",%" PRId64 : "%" PRId64, h);
            }
            printf("\n");
        }
    }
    free(tn.names);
    free(tn.counts);
    free(tn.compacted);
    for (int d = 0; d < nd; d++) {
        if (e[d])
            rt_close(e[d]);
        hw_checkpoint_free(&ck[d]);
    }
    if (code == CLI_EXIT_OK && differ)
        code = CLI_EXIT_FAIL;
    return code;
}
