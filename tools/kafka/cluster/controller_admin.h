/*
 * controller_admin.h — the active controller's topic administration beyond creation
 * (metadata_node.h MN3 creates): CreatePartitions and DeleteTopics of a cluster, as KRaft's
 * ReplicationControlManager does them — records committed to the metadata log (PARTITION for
 * each new partition, DELETE_TOPIC), which every node then applies to its local engine on its
 * agent thread (MN2, MN4). It decides placement and validity from the image; it never touches
 * an engine or a socket.
 *
 * Invariants:
 *   CA1  New partitions are placed by mi_place_replicas_from over the unfenced brokers sorted
 *        by id, continuing Kafka's rule (start and shift = the index of partition 0's first
 *        replica, partitions numbered on from the current count), with the topic's replication
 *        factor (partition 0's replica count); leader = first replica, epoch 0, ISR = replicas;
 *        their PARTITION records are committed in partition order.
 *   CA2  Only the active controller answers (NOT_CONTROLLER otherwise, as CreateTopics: KCL2);
 *        a topic is deleted by one DELETE_TOPIC record naming its id, answered once committed.
 */
#ifndef RT_KAFKA_CLUSTER_CONTROLLER_ADMIN_H
#define RT_KAFKA_CLUSTER_CONTROLLER_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

struct metadata_node;

/* CreatePartitions of one topic to `count` partitions (CA1). A Kafka error code; `message` a
 * static explanation (or NULL). validate_only checks without proposing. May wait for the quorum
 * (never from a loop thread). */
int16_t ctl_create_partitions(struct metadata_node *n, const char *name, int32_t count,
                              bool validate_only, const char **message);
/* DeleteTopics of one topic (CA2). As above. */
int16_t ctl_delete_topic(struct metadata_node *n, const char *name, const char **message);

#endif
