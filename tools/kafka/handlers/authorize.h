/*
 * authorize.h — the one question every handler asks before it acts on a resource: may this
 * request's principal, from its host, do `op` on (type, name)? It answers through the server's
 * authorizer (auth/authorizer.h) and the connection's cache (AZ3), and owns Kafka's per-API
 * rules only as far as they are shared by several handlers (the cluster-or-topic CREATE of
 * auto-creation and CreateTopics; IDEMPOTENT_WRITE implied by WRITE on any topic). It never
 * writes an answer: the handler puts Kafka's code where the resource's answer goes.
 *
 *   KZ1  With `--authorizer` off every check is true (and the ACL APIs answer
 *        SECURITY_DISABLED), so a broker without it behaves as before.
 *   KZ2  A check is made where the handler decides per resource, before any effect on it, and a
 *        denied resource gets Kafka's code for it: TOPIC_AUTHORIZATION_FAILED (29),
 *        GROUP_AUTHORIZATION_FAILED (30), CLUSTER_AUTHORIZATION_FAILED (31) or
 *        TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
 */
#ifndef RT_KAFKA_AUTHORIZE_H
#define RT_KAFKA_AUTHORIZE_H

#include <stdbool.h>

#include "tools/kafka/auth/acl.h"
#include "tools/kafka/proto/proto.h"

struct kafka_slot;

/* May the slot's principal do `op` on (type, name)? name NULL: the cluster. KZ1, KZ2. */
bool kafka_authorize(struct kafka_slot *s, uint8_t type, const char *name, size_t name_len,
                     uint8_t op);
static inline bool kafka_authorize_str(struct kafka_slot *s, uint8_t type, struct kp_str name,
                                       uint8_t op)
{
    return kafka_authorize(s, type, name.len > 0 ? name.ptr : "",
                           name.len > 0 ? (size_t)name.len : 0, op);
}
static inline bool kafka_authorize_topic(struct kafka_slot *s, const char *topic, uint8_t op)
{
    return kafka_authorize(s, ACL_RESOURCE_TOPIC, topic, __builtin_strlen(topic), op);
}
static inline bool kafka_authorize_cluster(struct kafka_slot *s, uint8_t op)
{
    return kafka_authorize(s, ACL_RESOURCE_CLUSTER, NULL, 0, op);
}
/* Kafka's topic creation rule: CREATE on the cluster or on the topic. */
bool kafka_authorize_create_topic(struct kafka_slot *s, const char *topic);
/* InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on any
 * topic (KIP-679, Kafka 3.0+). */
bool kafka_authorize_idempotent(struct kafka_slot *s);
/* Is --authorizer on? */
bool kafka_authorizer_on(const struct kafka_slot *s);

#endif /* RT_KAFKA_AUTHORIZE_H */
