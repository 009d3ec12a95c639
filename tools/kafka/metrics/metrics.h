/*
 * metrics.h — the broker's Prometheus metrics (`ringtail serve --metrics HOST:PORT`).
 *
 * Two halves. The counters: the network loop threads count requests (by API key and version,
 * with a latency histogram), bytes in and out, connections opened and closed, and refusals,
 * each thread into its own `struct kafka_metrics_loop` with plain relaxed stores (one writer
 * per loop, no locked instruction, no shared cache line between loops); a scrape sums the loops.
 * The HTTP side: libmicrohttpd's own thread answers GET /metrics in Prometheus text format 0.0.4
 * with those sums plus what the engine knows at scrape time (per-partition high watermark, last
 * stable offset, log start and log size; open transactions; rt_stats counters).
 *
 * It never parses HTTP itself, never blocks a loop thread (the counter calls are a few stores)
 * and never writes to the engine. Thread rules: kafka_metrics_create/serve/destroy from one
 * thread; each kafka_metrics_loop is written by one thread at a time; scrapes run on
 * libmicrohttpd's thread and only read.
 */
#ifndef RT_KAFKA_METRICS_H
#define RT_KAFKA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

/* Request cells kept per loop: API keys 0..KAFKA_METRICS_API_KEYS-1, versions
 * 0..KAFKA_METRICS_VERSIONS-1. A request outside that (an unknown key, a silly version) is
 * counted in ringtail_kafka_requests_unknown_total instead. */
#define KAFKA_METRICS_API_KEYS     80
#define KAFKA_METRICS_VERSIONS     16
#define KAFKA_METRICS_LOOPS_MAX    256
#define KAFKA_METRICS_SCRAPE_BYTES (64u << 20) /* a scrape larger than this is answered 500 */

struct kafka_metrics;      /* opaque: all loops plus the HTTP daemon */
struct kafka_metrics_loop; /* opaque: one loop thread's counters */

/* Why the server refused or dropped something; each has a counter
 * ringtail_kafka_refusals_total{reason="..."}. */
enum kafka_metrics_refusal {
    KAFKA_REFUSE_CONNECTIONS_MAX = 0, /* --connections-max reached: the new connection closed */
    KAFKA_REFUSE_FRAME_TOO_LARGE,     /* frame length > socket.request.max.bytes, or < 0 */
    KAFKA_REFUSE_BAD_REQUEST,         /* a header or body that did not decode: closed */
    KAFKA_REFUSE_UNSUPPORTED_VERSION, /* answered UNSUPPORTED_VERSION (35) */
    KAFKA_REFUSE_IN_FLIGHT_MAX,       /* in-flight requests per connection: reading paused */
    KAFKA_REFUSE_IDLE,                /* closed after connections.max.idle.ms */
    KAFKA_REFUSE_COUNT
};

/* Allocates counters for `loop_count` loop threads (1..KAFKA_METRICS_LOOPS_MAX), zeroed.
 * Nothing is served yet. Errors: RT_E_INVALID_ARGUMENT, -ENOMEM. */
int kafka_metrics_create(uint32_t loop_count, struct kafka_metrics **out);

/* Starts serving GET /metrics on `addr` ("HOST:PORT", an IPv4 address or "localhost"; port 0
 * picks a free one, see kafka_metrics_port) from libmicrohttpd's thread. `engine` and `dir`
 * (the data directory, for log sizes) are read at every scrape, so kafka_metrics_destroy (or
 * kafka_metrics_stop) must come before rt_close. Errors: RT_E_INVALID_ARGUMENT (bad HOST:PORT),
 * -EADDRINUSE and other -errno from binding, RT_E_UNSUPPORTED (libmicrohttpd refused to start). */
int kafka_metrics_serve(struct kafka_metrics *m, const char *addr, rt_engine *engine,
                        const char *dir);

/* 0 when `addr` is a HOST:PORT kafka_metrics_serve accepts, else RT_E_INVALID_ARGUMENT (for
 * a command line to refuse it before opening anything). */
int kafka_metrics_check_addr(const char *addr);

/* The port being served (useful after port 0), or 0 when not serving. */
uint16_t kafka_metrics_port(const struct kafka_metrics *m);

/* Stops the HTTP daemon (waits for a scrape in progress). Counters stay readable. Idempotent. */
void kafka_metrics_stop(struct kafka_metrics *m);

/* Stops serving and frees everything. NULL is accepted. */
void kafka_metrics_destroy(struct kafka_metrics *m);

/* Loop thread `index`'s counters (index < loop_count), or NULL when m is NULL or index is out
 * of range. Every counter call below accepts NULL and does nothing, so a server built or run
 * without metrics calls them unconditionally. */
struct kafka_metrics_loop *kafka_metrics_loop(struct kafka_metrics *m, uint32_t index);

/* The calling thread's counters: the first call on a thread takes one of the loop_count sets for
 * it (lock-free), later calls return the same set, so the server need not pass loop indexes
 * around. Threads beyond loop_count share one overflow set, counted with atomic adds (KMT1 then
 * holds per set, not per thread). NULL when m is NULL. */
struct kafka_metrics_loop *kafka_metrics_thread(struct kafka_metrics *m);

/* Adds the server's own counters (net/net.h's net_counters for connections, bytes,
 * zero-copy bytes and bounds; metrics/stats.h's kafka_server_stats for errors by API, long polls, auto-created
 * topics) to every scrape. They must outlive serving: kafka_metrics_stop before
 * kafka_server_stop. NULLs detach. */
struct kafka_server_stats; /* stats.h */
struct net_counters;       /* net.h */
void kafka_metrics_attach(struct kafka_metrics *m, const struct kafka_server_stats *stats,
                          const struct net_counters *net);

/* One request answered: its API key, version and the time from its frame being complete to its
 * response being queued, in nanoseconds. The server calls it from kafka_response_end, so an
 * acks=0 produce (answered with nothing) is not counted here. */
void kafka_metrics_request(struct kafka_metrics_loop *l, int16_t api_key, int16_t api_version,
                           uint64_t latency_ns);
void kafka_metrics_bytes_in(struct kafka_metrics_loop *l, uint64_t bytes);
void kafka_metrics_bytes_out(struct kafka_metrics_loop *l, uint64_t bytes);
/* Of bytes_out, how many went from a segment to the socket without a user-space copy. */
void kafka_metrics_bytes_zerocopy(struct kafka_metrics_loop *l, uint64_t bytes);
void kafka_metrics_connection_opened(struct kafka_metrics_loop *l);
void kafka_metrics_connection_closed(struct kafka_metrics_loop *l);
void kafka_metrics_refusal(struct kafka_metrics_loop *l, enum kafka_metrics_refusal why);

/* Writes the whole exposition (what GET /metrics returns) into a malloc'd, NUL-terminated
 * buffer; *out_len excludes the NUL. engine and dir may be NULL (loop counters only). For tests
 * and for the HTTP handler. Errors: -ENOMEM, KP_E_LIMIT (over KAFKA_METRICS_SCRAPE_BYTES). */
int kafka_metrics_render(struct kafka_metrics *m, rt_engine *engine, const char *dir, char **out,
                         size_t *out_len);

#endif
