/*
 * producer_id_blocks.c — producer-id blocks (producer_id_blocks.h, KIP-730): the small log of
 * recent grants the apply callback keeps (what the controller's answer checks, PB1) and the
 * node's request for its next block. It never hands an id to a client (the engine does, PB2)
 * and never proposes a record (metadata_node.c does).
 */
#include "tools/kafka/cluster/producer_id_blocks.h"

#include <errno.h>
#include <stdlib.h>

#include "tools/kafka/cluster/kclient.h"
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
