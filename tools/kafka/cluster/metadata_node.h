/*
 * metadata_node.h — a broker's membership in the cluster's metadata quorum (`ringtail serve
 * --node-id N --controller-listen HOST:PORT --voters ...`): one quorum (quorum.h) whose committed
 * records build this node's metadata image (metadata_image.h), guarded by one mutex. It logs
 * who the active controller is as that changes. It proposes nothing yet and answers no client:
 * the controller's logic and the broker's use of the image are issue 24's next blocks.
 */
#ifndef RT_KAFKA_CLUSTER_METADATA_NODE_H
#define RT_KAFKA_CLUSTER_METADATA_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/cluster/quorum.h"

struct metadata_node;

/* Starts the quorum member under DIR/__cluster_metadata/ (quorum_start's rules and errors; the
 * message in err). `listen` may be NULL (the voter's own address). */
int metadata_node_start(const char *dir, int32_t node_id, const char *listen, const char *voters,
                        struct metadata_node **out, char *err, size_t err_len);
/* Stops the quorum, frees the image. NULL is a no-op. */
void metadata_node_stop(struct metadata_node *n);
/* The quorum's status, and the image's record count and digest (any thread). */
void metadata_node_status(struct metadata_node *n, struct quorum_status *st,
                          uint64_t *records_applied, uint64_t *digest);

#endif
