/*
 * metadata_node.c — the quorum member beside a broker (metadata_node.h): the quorum's callbacks
 * apply, snapshot and restore the node's metadata image under one mutex (they run on the
 * quorum's loop thread; metadata_node_status reads from any other), and leader changes become one
 * line on stderr each. It never proposes and never touches the engine.
 */
#include "tools/kafka/cluster/metadata_node.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/kafka/cluster/metadata_image.h"

struct metadata_node {
    pthread_mutex_t mu;
    struct metadata_image img;
    struct quorum *q;
    int32_t node_id;
};

static void node_apply(void *ctx, uint64_t index, const void *rec, size_t len)
{
    struct metadata_node *n = ctx;
    pthread_mutex_lock(&n->mu);
    int rc = metadata_image_apply(&n->img, index, rec, len);
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
    metadata_image_init(&n->img);
    n->node_id = node_id;
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
    if (rc) {
        metadata_image_free(&n->img);
        pthread_mutex_destroy(&n->mu);
        free(n);
        return rc;
    }
    *out = n;
    return 0;
}

void metadata_node_stop(struct metadata_node *n)
{
    if (!n)
        return;
    quorum_stop(n->q); /* no callback runs after it */
    metadata_image_free(&n->img);
    pthread_mutex_destroy(&n->mu);
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
