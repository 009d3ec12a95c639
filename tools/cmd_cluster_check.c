/*
 * cmd_cluster_check.c — `ringtail cluster check DIR DIR...`: are the replicas of every partition
 * byte-identical? Opens each node's data directory read-only (the nodes must be stopped: a
 * running node holds its directory's lock) and compares, per partition of the first directory's
 * topics, the RecordBatch bytes of every other directory with the first's from the latest log
 * start offset on: batch by batch (the same base offsets and the same bytes, leader epochs
 * included), up to where the shorter log ends. It prints each partition's log ends and the
 * high watermark each node's replication-offset-checkpoint holds, and changes nothing.
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
            "  partition<TAB>TOPIC<TAB>P<TAB>identical|differ@OFFSET|missing<TAB>ends<TAB>E,..\n"
            "    <TAB>hw<TAB>H,..   (log end and checkpointed high watermark per DIR, '-' none)\n"
            "'identical' means every batch both logs hold is the same bytes at the same\n"
            "offset; without --prefix the log ends must be equal too.\n"
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

struct topic_names {
    char (*names)[RT_TOPIC_NAME_MAX + 1];
    uint32_t *counts;
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
            bool same = !missing;
            for (int d = 1; d < nd && same; d++) {
                if (compare(e[0], e[d], topic, p, from, &where) != 0)
                    same = false;
                if (!prefix && ends[d] != ends[0] && same) {
                    same = false;
                    where = ends[d] < ends[0] ? ends[d] : ends[0];
                }
            }
            differ |= !same;
            printf("partition\t%s\t%" PRIu32 "\t", topic, p);
            if (missing)
                printf("missing");
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
    for (int d = 0; d < nd; d++) {
        if (e[d])
            rt_close(e[d]);
        hw_checkpoint_free(&ck[d]);
    }
    if (code == CLI_EXIT_OK && differ)
        code = CLI_EXIT_FAIL;
    return code;
}
