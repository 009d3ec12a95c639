/*
 * producer_id_blocks.h — producer-id blocks handed out by the active controller (Kafka's
 * KIP-730, AllocateProducerIds, key 67): the controller commits a PRODUCER_IDS record for each
 * block (docs/format.md L.2: the block is [previous next_producer_id, the record's)) and answers
 * the block only once that record is applied at the index its proposal got; a cluster node's
 * engine hands out ids only from the blocks granted to it (rt_producer_id_grant), asking for the
 * next block when fewer than PID_BLOCK_LOW are left. It owns the grant bookkeeping and the
 * request; the controller's answer (metadata_node_allocate_producer_ids) and the agent's refill
 * are metadata_node.c's, which holds the quorum and the image.
 *
 * Invariants:
 *   PB1  A block is answered only when the PRODUCER_IDS record proposed for it was applied (not
 *        rejected: MI4) at the index its proposal committed at, for that broker; the blocks of
 *        two answers therefore never overlap, across controllers and restarts too.
 *   PB2  A cluster node's engine allocates producer ids only from blocks granted to it (opened
 *        with opts.producer_ids_granted): no id comes from its own producers.meta blocks.
 *   PB3  A node with no id left answers InitProducerId COORDINATOR_LOAD_IN_PROGRESS (14, as
 *        Kafka 3.5+'s RPCProducerIdManager) and asks for a block; no loop thread waits for one.
 */
#ifndef RT_KAFKA_CLUSTER_PRODUCER_ID_BLOCKS_H
#define RT_KAFKA_CLUSTER_PRODUCER_ID_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#define PID_BLOCK_SIZE   1000 /* Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE */
#define PID_BLOCK_LOW    100  /* ask for the next block below this many ids (Kafka: 10 %) */
#define PID_GRANTS_NOTED 32

/* The last PRODUCER_IDS records applied (under the node's image lock; fed by the apply
 * callback). */
struct pid_grants {
    struct {
        uint64_t index;
        int32_t broker;
        int64_t first, end;
    } g[PID_GRANTS_NOTED];
    unsigned next;
};

void pid_grants_note(struct pid_grants *g, uint64_t index, int32_t broker, int64_t first,
                     int64_t end);
bool pid_grants_find(const struct pid_grants *g, uint64_t index, int32_t broker, int64_t *first,
                     int64_t *end);

/* A node's request to the controller's listener (kclient.h): 0 and the answer's error code in
 * *err (the block when KAFKA_NONE), or -errno / -EPROTO. */
int pid_blocks_request(const char *host, uint16_t port, int timeout_ms, int32_t broker_id,
                       int64_t broker_epoch, int64_t *start, int32_t *len, int16_t *err);

#endif
