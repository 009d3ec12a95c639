/*
 * stats.h — the broker's counters over its life: requests and errors per API, produce and fetch
 * bytes, auto-creation, conversions. Handlers and the server bump them (relaxed atomics);
 * metrics.c and the bench read them. Plain data: no function, no dependency.
 */
#ifndef RT_KAFKA_STATS_H
#define RT_KAFKA_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* Counters over the server's life (relaxed atomics; metrics and the bench read them). */
#define KAFKA_STATS_API_MAX 64
struct kafka_server_stats {
    _Atomic uint64_t requests_by_api[KAFKA_STATS_API_MAX];
    _Atomic uint64_t errors_by_api[KAFKA_STATS_API_MAX]; /* responses carrying an error code */
    _Atomic uint64_t produce_batches;
    _Atomic uint64_t produce_bytes;
    _Atomic uint64_t fetch_bytes;        /* record bytes answered */
    _Atomic uint64_t fetch_bytes_copied; /* ... of which copied into a buffer (zero_copy off) */
    _Atomic uint64_t fetch_long_polls;   /* fetches parked to wait for data */
    _Atomic uint64_t topics_auto_created;
    _Atomic uint64_t requests_refused; /* connection closed: bad header, version, body */
    /* Auto-creation (kafka_topic_ensure): topics answered UNKNOWN_TOPIC_OR_PARTITION past
     * auto_create_max_per_request, and creations the engine refused. */
    _Atomic uint64_t topics_auto_create_deferred;
    _Atomic uint64_t topics_auto_create_failed;
    _Atomic uint64_t produce_upconverted_sets;       /* message sets v0/v1 converted to v2 */
    _Atomic uint64_t produce_upconverted_bytes;      /* ... their bytes as received */
    _Atomic uint64_t fetch_downconverted_batches;    /* v2 batches converted for Fetch v0-3 */
    _Atomic uint64_t fetch_downconverted_bytes;      /* ... the message bytes answered */
    _Atomic uint64_t fetch_downconvert_chunks;       /* conversions run as sockets drained (KF10) */
    _Atomic uint64_t fetch_downconvert_padded_bytes; /* answered as the overflow tail (KF11) */
    _Atomic uint64_t fetch_downconvert_buffer_max;   /* the largest conversion buffer (KF10) */
    _Atomic uint64_t authorization_denied;           /* checks the authorizer refused */
    /* SASL (handle_sasl.c): exchanges that succeeded (re-authentications among them) and
     * failed (Kafka's successful-/failed-authentication-total, successful-reauthentication). */
    _Atomic uint64_t sasl_authentications;
    _Atomic uint64_t sasl_reauthentications;
    _Atomic uint64_t sasl_authentication_failures;
};

#endif /* RT_KAFKA_STATS_H */
