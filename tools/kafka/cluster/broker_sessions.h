/*
 * broker_sessions.h — the active controller's view of each broker's session (metadata_node.h
 * MN1), as Kafka's BrokerHeartbeatManager keeps it: in memory only, never in the log. Per broker
 * the time of its last registration or heartbeat, the incarnation that registered, and until
 * when a fence or unfence proposed for it is in flight. It decides who has expired and whether a
 * registration is a duplicate; metadata_node.c proposes the records. It owns no thread, no lock
 * (its caller's) and touches no socket or quorum.
 *
 * Invariants:
 *   BH1  Sessions belong to one controllership: a call with another term than the last starts
 *       them all over, and a broker first seen gets a full session from that moment (a new
 *       controller never fences a broker it has not yet had session_ms to hear from).
 *   BH2  broker_sessions_expired names a registered, unfenced broker other than `self` whose last
 *       registration or heartbeat is older than session_ms, at most once per `retry_ms` (a
 *       fence in flight is not proposed again until then).
 *   BH3  A registration by another incarnation of a broker that is registered, unfenced and whose
 *       session is alive is a duplicate (Kafka's DUPLICATE_BROKER_REGISTRATION), and changes
 *       nothing.
 */
#ifndef RT_KAFKA_CLUSTER_BROKER_SESSIONS_H
#define RT_KAFKA_CLUSTER_BROKER_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/kafka/cluster/metadata_image.h"

struct broker_session {
    int32_t id;
    int64_t last_seen_ms;
    int64_t pending_until_ms; /* a fence or unfence proposed and not to be repeated before */
    uint8_t incarnation[16];
    bool has_incarnation;
};

struct broker_sessions {
    uint64_t term;
    struct broker_session *s; /* MI_BROKERS_MAX of them, allocated at first use */
    unsigned count;
};

void broker_sessions_init(struct broker_sessions *bs);
void broker_sessions_free(struct broker_sessions *bs);
/* The session of `id` in controllership `term` (BH1). NULL: no memory, or MI_BROKERS_MAX. */
struct broker_session *broker_sessions_get(struct broker_sessions *bs, int32_t id, uint64_t term,
                                           int64_t now_ms);
/* A registration of `id` by `incarnation` (live: the image holds it registered and unfenced).
 * True: accepted, its session renewed; false: a duplicate (BH3). */
bool broker_sessions_register(struct broker_sessions *bs, int32_t id, const uint8_t incarnation[16],
                              bool live, uint64_t term, int64_t now_ms, unsigned session_ms);
/* A heartbeat of `id`; true when an unfence should be proposed for it now (it is fenced and
 * none is in flight), which then counts as in flight for retry_ms. */
bool broker_sessions_heartbeat(struct broker_sessions *bs, int32_t id, bool fenced, uint64_t term,
                               int64_t now_ms, unsigned retry_ms);
/* The brokers to fence now (BH2), at most `max` into out; their fences count as in flight. */
unsigned broker_sessions_expired(struct broker_sessions *bs, const struct metadata_image *img,
                                 int32_t self, uint64_t term, int64_t now_ms, unsigned session_ms,
                                 unsigned retry_ms, int32_t *out, unsigned max);

#endif
