/*
 * controller_admin.h — the active controller's topic administration beyond creation
 * (metadata_node.h MN3 creates): CreatePartitions and DeleteTopics of a cluster, as KRaft's
 * ReplicationControlManager does them — records committed to the metadata log (PARTITION for
 * each new partition, DELETE_TOPIC), which every node then applies to its local engine on its
 * agent thread (MN2, MN4); topic configs as KRaft's ConfigurationControlManager keeps them (one
 * CONFIG record per key changed, metadata_image.h MI7, applied by every node to its engine,
 * MN6); and the forwarding of a
 * request to the active controller (the broker as a Kafka client of its peer, kclient.h). It
 * decides placement and validity from the image; it never touches an engine, and its only
 * socket is the forwarding call.
 *
 * Invariants:
 *   CA1  New partitions are placed by mi_place_replicas_from over the unfenced brokers sorted
 *        by id, continuing Kafka's rule (start and shift = the index of partition 0's first
 *        replica, partitions numbered on from the current count), with the topic's replication
 *        factor (partition 0's replica count); leader = first replica, epoch 0, ISR = replicas;
 *        their PARTITION records are committed in partition order (in one BATCH, CA6).
 *   CA2  Only the active controller answers (NOT_CONTROLLER otherwise, as CreateTopics: KCL2);
 *        a topic is deleted by one DELETE_TOPIC record naming its id, answered once committed.
 *   CA3  A topic's configs change only by CONFIG records the active controller commits: one per
 *        key whose value changes (set) or that goes (removed; AlterConfigs' replace removes
 *        every override it does not name), in the order of the request's entries, the removals
 *        of a replace first; the entries were checked before (rt_topic_config_check, the
 *        single broker's rule), so a record is never refused for its value. validate_only
 *        commits nothing. The records of one request are not atomic: a controller lost between
 *        two leaves the first committed (answered as an error).
 *   CA6  A CreatePartitions' PARTITION records (and a CreateTopics' TOPIC and PARTITION
 *        records, metadata_node.c) are proposed as one BATCH record (metadata_image.h MI9),
 *        applied whole or not at all, so a controller lost half way leaves the topic as it was
 *        or with every partition asked; only a request whose records pass one entry's
 *        MI_RECORD_BYTES_MAX (tens of thousands of partitions) takes several BATCH entries,
 *        each whole, the TOPIC record in the first.
 *   CA5  A request is forwarded at most once: to the node the quorum names leader, found
 *        registered in the image; never by a node to itself (it answers instead).
 */
#ifndef RT_KAFKA_CLUSTER_CONTROLLER_ADMIN_H
#define RT_KAFKA_CLUSTER_CONTROLLER_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ringtail.h"
#include "tools/kafka/cluster/kclient.h"
#include "tools/kafka/cluster/metadata_image.h"

struct metadata_node;

/* CreatePartitions of one topic to `count` partitions (CA1). A Kafka error code; `message` a
 * static explanation (or NULL). validate_only checks without proposing. May wait for the quorum
 * (never from a loop thread). */
int16_t ctl_create_partitions(struct metadata_node *n, const char *name, int32_t count,
                              bool validate_only, const char **message);
/* DeleteTopics of one topic (CA2). As above. */
int16_t ctl_delete_topic(struct metadata_node *n, const char *name, const char **message);

/* AlterConfigs (replace_all) / IncrementalAlterConfigs of one topic on the active controller
 * (CA3): entries checked already, value NULL removes the key. A Kafka error code; `message` a
 * static explanation (or NULL). May wait for the quorum (never from a loop thread). */
int16_t ctl_alter_topic_configs(struct metadata_node *n, const char *name,
                                const struct rt_topic_config *c, size_t count, bool replace_all,
                                bool validate_only, const char **message);

/* CA5: one request to the active controller's Kafka listener (kclient_call's contract: on 0 the
 * malloc'ed response frame). -ENOTCONN when this node is the controller or none is known (or
 * not registered yet); kclient's errors otherwise. */
int ctl_forward(struct metadata_node *n, int16_t api_key, int16_t version, kclient_encode_fn encode,
                const void *req, uint8_t **frame, size_t *frame_len, size_t *body_at);

#endif
