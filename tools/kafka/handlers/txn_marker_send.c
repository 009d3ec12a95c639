/*
 * txn_marker_send.c — the client side of WriteTxnMarkers (27) on a cluster node: the engine's
 * marker writer (handle_txn.c kafka_txn_marker_writer, format.md G.8) hands it a marker for a
 * partition the metadata image says another node leads, and it sends that node one
 * WriteTxnMarkers v1 through kclient over a connection kept per peer node, then reads that
 * partition's answer (handle_txn_markers.c on the other side). It owns the per-peer connections
 * and the mapping of the answer to the engine's MW3 contract; it never writes into a local
 * partition and never decides a transaction. Invariants KTM7-KTM9 are in handle_txn_markers.c.
 *
 * Threads: called on the engine's transaction threads (MW5: with the transactional id locked; a
 * network round is allowed), several at once for different ids: each peer's connection has its
 * own lock, so two markers to one node go one after the other and markers to other nodes do not
 * wait (KTM7).
 */
#include "tools/kafka/handlers/handle_txn_markers.h"

#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/cluster/metadata_image.h"
#include "tools/kafka/cluster/metadata_node.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEERS_MAX      64 /* peer nodes with a kept connection; more: a connection per call */
#define ANSWER_ARENA   (1u << 14) /* one marker's answer decodes in far less */
#define MARKER_VERSION 1          /* flexible; every node of a cluster runs the same build */

struct peer {
    int32_t id; /* -1: a free entry */
    pthread_mutex_t lock;
    struct kclient_conn conn;
};

static struct {
    pthread_mutex_t lock; /* the table; each entry's connection has its own */
    struct peer peers[PEERS_MAX];
    unsigned used;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* KTM7: the kept connection to node `id`, created on first use; NULL when the table is full. */
static struct peer *peer_of(int32_t id)
{
    struct peer *found = NULL;
    pthread_mutex_lock(&pool.lock);
    for (unsigned i = 0; i < pool.used && !found; i++)
        if (pool.peers[i].id == id)
            found = &pool.peers[i];
    if (!found && pool.used < PEERS_MAX) {
        found = &pool.peers[pool.used++];
        found->id = id;
        pthread_mutex_init(&found->lock, NULL);
        found->conn = (struct kclient_conn)KCLIENT_CONN_INIT;
    }
    pthread_mutex_unlock(&pool.lock);
    return found;
}

struct listener_look {
    int32_t id;
    char host[MI_HOST_BYTES_MAX + 1];
    uint16_t port;
};

static void listener_lookup(void *ctx, const struct metadata_image *img)
{
    struct listener_look *l = ctx;
    const struct mi_broker *b = metadata_image_broker(img, l->id);
    if (b && !b->fenced) { /* KTM9 */
        memcpy(l->host, b->host, sizeof l->host);
        l->port = b->port;
    }
}

static int encode_request(struct kp_writer *w, int16_t version, const void *req)
{
    return kmsg_write_txn_markers_request_encode(w, version, req);
}

/* KTM8: the error the answer gives (topic, partition) of producer pid; -1 when it does not. */
static int answer_for(const struct kmsg_write_txn_markers_response *r, int64_t pid,
                      const char *topic, uint32_t partition)
{
    size_t tl = strlen(topic);
    for (int32_t m = 0; m < r->markers_count; m++) {
        if (r->markers[m].producer_id != pid)
            continue;
        for (int32_t t = 0; t < r->markers[m].topics_count; t++) {
            const struct kmsg_topic_errors *te = &r->markers[m].topics[t];
            if (te->name.len != (int32_t)tl || memcmp(te->name.ptr, topic, tl) != 0)
                continue;
            for (int32_t i = 0; i < te->partitions_count; i++)
                if (te->partitions[i].partition_index == (int32_t)partition)
                    return te->partitions[i].error_code;
        }
    }
    return -1;
}

/* Logs a failed send once per (node, code) in a row, so a retry each coordinator tick is quiet. */
static void log_failure(int32_t node, const struct rt_txn_marker *mk, int code, const char *what)
{
    static _Atomic int64_t last = INT64_MIN;
    int64_t key = ((int64_t)node << 32) ^ (uint32_t)code;
    if (atomic_exchange(&last, key) == key)
        return;
    fprintf(stderr,
            "ringtail serve: the %s marker of producer id %" PRId64 " epoch %d for %s-%" PRIu32
            " to node %" PRId32 ": %s %d; retried (docs/cluster.md 7.3)\n",
            mk->commit ? "commit" : "abort", mk->producer_id, (int)mk->producer_epoch, mk->topic,
            mk->partition, node, what, code);
}

int kafka_txn_marker_send(struct metadata_node *mn, int32_t leader, const struct rt_txn_marker *mk)
{
    struct listener_look l = {.id = leader};
    metadata_node_read(mn, listener_lookup, &l);
    if (!l.port) {
        log_failure(leader, mk, 0, "no registered unfenced listener");
        return RT_E_NOT_COORDINATOR; /* KTM9: retried once the image has it */
    }
    size_t tl = strlen(mk->topic);
    int32_t part = (int32_t)mk->partition;
    struct kmsg_txn_topic topic = {
        .name = {.ptr = mk->topic, .len = (int32_t)tl}, .partitions = &part, .partitions_count = 1};
    struct kmsg_txn_marker marker = {.producer_id = mk->producer_id,
                                     .producer_epoch = mk->producer_epoch,
                                     .transaction_result = mk->commit,
                                     .topics = &topic,
                                     .topics_count = 1,
                                     .coordinator_epoch = 0}; /* KTM6 */
    struct kmsg_write_txn_markers_request q = {.markers = &marker, .markers_count = 1};
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    struct peer *p = peer_of(leader);
    int rc;
    if (p) {
        pthread_mutex_lock(&p->lock); /* KTM7 */
        rc = kclient_conn_call(&p->conn, l.host, l.port, KTM_SEND_TIMEOUT_MS,
                               KAFKA_WRITE_TXN_MARKERS, MARKER_VERSION, encode_request, &q, &frame,
                               &frame_len, &body_at);
        pthread_mutex_unlock(&p->lock);
    } else {
        rc = kclient_call(l.host, l.port, KTM_SEND_TIMEOUT_MS, KAFKA_WRITE_TXN_MARKERS,
                          MARKER_VERSION, encode_request, &q, &frame, &frame_len, &body_at);
    }
    if (rc) {
        log_failure(leader, mk, rc, "no answer: error");
        return RT_E_NOT_COORDINATOR;
    }
    uint8_t *abuf = malloc(ANSWER_ARENA);
    struct kp_arena a;
    kp_arena_init(&a, abuf, abuf ? ANSWER_ARENA : 0);
    struct kp_reader r;
    kp_reader_init(&r, frame + body_at, frame_len - body_at);
    struct kmsg_write_txn_markers_response resp;
    int code = kmsg_write_txn_markers_response_decode(&r, MARKER_VERSION, &a, &resp) == 0
                   ? answer_for(&resp, mk->producer_id, mk->topic, mk->partition)
                   : -1;
    free(abuf);
    free(frame);
    switch (code) {
    case KAFKA_NONE:
        return 0;
    case KAFKA_INVALID_PRODUCER_EPOCH: /* KTM5: stale, the partition holds a newer epoch */
        return RT_E_INVALID_PRODUCER_EPOCH;
    case KAFKA_UNKNOWN_TOPIC_OR_PARTITION: /* KTM3: gone from that node's image and engine */
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    default:
        log_failure(leader, mk, code, code < 0 ? "an answer without the marker:" : "answered");
        return RT_E_NOT_COORDINATOR; /* CO15(b): the engine retries */
    }
}
