/*
 * producer_id_blocks.c — producer-id blocks (producer_id_blocks.h, KIP-730): the controller's
 * AllocateProducerIds answer (a PRODUCER_IDS record committed, then checked applied: PB1), the
 * node's request for its next block, and the small log of recent grants the apply callback
 * keeps. It never hands an id to a client (the engine does, PB2) and never proposes anything but
 * PRODUCER_IDS.
 */
#include "tools/kafka/cluster/producer_id_blocks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/cluster/metadata_node.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/kmsg.h"

void pid_grants_note(struct pid_grants *g, uint64_t index, int32_t broker, int64_t first,
                     int64_t end)
{
    unsigned i = g->next++ % PID_GRANTS_NOTED;
    g->g[i].index = index;
    g->g[i].broker = broker;
    g->g[i].first = first;
    g->g[i].end = end;
}

bool pid_grants_find(const struct pid_grants *g, uint64_t index, int32_t broker, int64_t *first,
                     int64_t *end)
{
    for (unsigned i = 0; i < PID_GRANTS_NOTED; i++)
        if (g->g[i].index == index && index > 0 && g->g[i].broker == broker) {
            *first = g->g[i].first;
            *end = g->g[i].end;
            return true;
        }
    return false;
}

/* ---- the controller's side ---- */

/* One allocation at a time on this controller: two proposals from the same image would ask for
 * the same block, and the second would be rejected (MI4) — harmless (PB1) but wasted. */
static pthread_mutex_t alloc_mu = PTHREAD_MUTEX_INITIALIZER;

struct alloc_read {
    int32_t broker;
    int64_t epoch;
    bool known;
    int64_t next;
};

static void read_next(void *ctx, const struct metadata_image *img)
{
    struct alloc_read *ar = ctx;
    const struct mi_broker *b = metadata_image_broker(img, ar->broker);
    ar->known = b && b->epoch == ar->epoch;
    ar->next = img->next_producer_id;
}

int16_t pid_blocks_allocate(struct metadata_node *n, int32_t broker_id, int64_t broker_epoch,
                            int64_t *start, int32_t *len)
{
    *start = -1;
    *len = 0;
    if (!metadata_node_is_controller(n))
        return KAFKA_NOT_CONTROLLER;
    int16_t err = KAFKA_REQUEST_TIMED_OUT;
    pthread_mutex_lock(&alloc_mu);
    for (int attempt = 0; attempt < 3; attempt++) {
        struct alloc_read ar = {.broker = broker_id, .epoch = broker_epoch};
        metadata_node_read(n, read_next, &ar);
        if (!ar.known) {
            err = KAFKA_STALE_BROKER_EPOCH;
            break;
        }
        if (ar.next > INT64_MAX - PID_BLOCK_SIZE) {
            err = KAFKA_UNKNOWN_SERVER_ERROR; /* the 63-bit space is used up */
            break;
        }
        uint8_t rec[32];
        size_t rlen = mi_encode_producer_ids(rec, sizeof rec, broker_id, ar.next + PID_BLOCK_SIZE);
        uint64_t index = 0;
        int rc = rlen ? metadata_node_propose_wait(n, rec, rlen, &index) : -EINVAL;
        if (rc) {
            err = metadata_node_kafka_error(rc);
            break;
        }
        int64_t first, end;
        if (metadata_node_grant_at(n, index, broker_id, &first, &end)) { /* PB1 */
            *start = first;
            *len = (int32_t)(end - first);
            err = KAFKA_NONE;
            break;
        }
        /* rejected: an earlier record (a previous controller's) moved next_producer_id first */
    }
    pthread_mutex_unlock(&alloc_mu);
    return err;
}

/* ---- the node's side ---- */

static int encode_allocate(struct kp_writer *w, int16_t v, const void *m)
{
    return kmsg_allocate_producer_ids_request_encode(w, v, m);
}

int pid_blocks_request(const char *host, uint16_t port, int timeout_ms, int32_t broker_id,
                       int64_t broker_epoch, int64_t *start, int32_t *len, int16_t *err)
{
    struct kmsg_allocate_producer_ids_request q = {.broker_id = broker_id,
                                                   .broker_epoch = broker_epoch};
    uint8_t *frame = NULL;
    size_t frame_len = 0, body_at = 0;
    int rc = kclient_call(host, port, timeout_ms, KAFKA_ALLOCATE_PRODUCER_IDS, 0, encode_allocate,
                          &q, &frame, &frame_len, &body_at);
    if (rc)
        return rc;
    uint8_t arena_buf[256];
    struct kp_arena a;
    kp_arena_init(&a, arena_buf, sizeof arena_buf);
    struct kp_reader rd;
    kp_reader_init(&rd, frame + body_at, frame_len - body_at);
    struct kmsg_allocate_producer_ids_response r = {0};
    rc = kmsg_allocate_producer_ids_response_decode(&rd, 0, &a, &r) ? -EPROTO : 0;
    free(frame);
    if (rc)
        return rc;
    *err = r.error_code;
    if (r.error_code == KAFKA_NONE && (r.producer_id_start < 0 || r.producer_id_len <= 0 ||
                                       r.producer_id_start > INT64_MAX - r.producer_id_len))
        return -EPROTO;
    *start = r.producer_id_start;
    *len = r.producer_id_len;
    return 0;
}
