/*
 * metrics.c — the broker's Prometheus metrics: per-loop counters summed at scrape time, and
 * GET /metrics served by libmicrohttpd (see metrics.h for the interface and thread rules).
 *
 * It owns the counter memory and the HTTP daemon; it must never block or lock on a loop
 * thread's path, never write to the engine, and never parse HTTP itself (libmicrohttpd does).
 *
 * Invariants:
 *   KMT1  A struct kafka_metrics_loop has one writer. Its counters are _Atomic and written with a
 *        relaxed load + relaxed store (no locked read-modify-write); the scraper reads them
 *        relaxed. A scrape may see one loop a few increments behind another: each series is
 *        monotonic across scrapes all the same, since no counter ever goes down.
 *   KMT2  Each loop lives in its own allocation aligned to a cache line, so loops never share a
 *        line (no false sharing between loop threads).
 *   KMT3  Latency buckets are stored per bucket (not cumulative) and summed into Prometheus's
 *        cumulative `le` series at render time; count = sum of all buckets + the overflow one,
 *        so `_bucket{le="+Inf"}` always equals `_count`.
 *   KMT4  A series appears only once it is non-zero (requests) or once the engine reports it
 *        (partitions), so a scrape of an idle broker is small; families are always declared with
 *        HELP and TYPE once, in a fixed order (what promtool checks).
 *   KMT5  The scrape reads the engine only through its public thread-safe calls (rt_stats_get,
 *        rt_topic_list, rt_list_offsets, rt_fetch_start, rt_txn_list) and the data directory's
 *        documented layout (docs/format.md: DIR/<topic>-<partition>/<base>.log) for log sizes.
 */
#include "tools/kafka/metrics/metrics.h"
#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/proto.h"
#include "tools/kafka/metrics/stats.h"
#include "tools/kafka/net/net.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#define KM_CACHE_LINE 64
#define KM_BUCKETS    16

/* Upper bounds of the latency buckets, in ns, and their `le` labels in seconds. */
static const uint64_t km_bucket_ns[KM_BUCKETS] = {
    100000ull,     250000ull,     500000ull,     1000000ull,    2500000ull,   5000000ull,
    10000000ull,   25000000ull,   50000000ull,   100000000ull,  250000000ull, 500000000ull,
    1000000000ull, 2500000000ull, 5000000000ull, 10000000000ull};
static const char *const km_bucket_le[KM_BUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",    "10"};

static const char *const km_refusal_names[KAFKA_REFUSE_COUNT] = {
    [KAFKA_REFUSE_CONNECTIONS_MAX] = "connections_max",
    [KAFKA_REFUSE_FRAME_TOO_LARGE] = "frame_too_large",
    [KAFKA_REFUSE_BAD_REQUEST] = "bad_request",
    [KAFKA_REFUSE_UNSUPPORTED_VERSION] = "unsupported_version",
    [KAFKA_REFUSE_IN_FLIGHT_MAX] = "in_flight_max",
    [KAFKA_REFUSE_IDLE] = "idle",
};

struct km_cell {
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
    _Atomic uint64_t bucket[KM_BUCKETS + 1]; /* [KM_BUCKETS]: above the last bound (KMT3) */
};

struct kafka_metrics_loop {
    bool shared; /* the overflow set of kafka_metrics_thread: atomic adds */
    struct km_cell req[KAFKA_METRICS_API_KEYS][KAFKA_METRICS_VERSIONS];
    _Atomic uint64_t requests_unknown;
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t bytes_zerocopy;
    _Atomic uint64_t connections_opened;
    _Atomic uint64_t connections_closed;
    _Atomic uint64_t refusals[KAFKA_REFUSE_COUNT];
};

struct kafka_metrics {
    uint32_t loop_count;
    struct kafka_metrics_loop **loops;
    struct kafka_metrics_loop *overflow; /* threads beyond loop_count (kafka_metrics_thread) */
    _Atomic uint32_t threads_bound;
    uint64_t id; /* tells a thread's cached set of a destroyed instance from this one's */
    const struct kafka_server_stats *stats; /* kafka_metrics_attach (NULL: none) */
    const struct net_counters *net;
    struct MHD_Daemon *daemon;
    int listen_fd;
    uint16_t port;
    rt_engine *engine;
    char *dir;
};

/* KMT1: the only writer adds with a plain load and store; the shared overflow set (threads
 * beyond loop_count) needs a real atomic add. */
static inline void km_add_to(const struct kafka_metrics_loop *l, _Atomic uint64_t *c, uint64_t n)
{
    if (l->shared)
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
    else
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
}
#define km_add(c, n) km_add_to(l, (c), (n))

static _Atomic uint64_t km_next_id = 1;
static _Thread_local uint64_t km_tl_id;
static _Thread_local struct kafka_metrics_loop *km_tl_loop;

static inline uint64_t km_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

int kafka_metrics_create(uint32_t loop_count, struct kafka_metrics **out)
{
    if (!out || loop_count == 0 || loop_count > KAFKA_METRICS_LOOPS_MAX)
        return RT_E_INVALID_ARGUMENT;
    *out = NULL;
    struct kafka_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->listen_fd = -1;
    m->loops = calloc(loop_count, sizeof(*m->loops));
    if (!m->loops) {
        free(m);
        return -ENOMEM;
    }
    m->loop_count = loop_count;
    m->id = atomic_fetch_add(&km_next_id, 1);
    size_t size = (sizeof(struct kafka_metrics_loop) + KM_CACHE_LINE - 1) / KM_CACHE_LINE *
                  KM_CACHE_LINE; /* aligned_alloc wants a multiple of the alignment */
    for (uint32_t i = 0; i < loop_count; i++) {
        m->loops[i] = aligned_alloc(KM_CACHE_LINE, size); /* KMT2 */
        if (!m->loops[i]) {
            kafka_metrics_destroy(m);
            return -ENOMEM;
        }
        memset(m->loops[i], 0, size);
    }
    m->overflow = aligned_alloc(KM_CACHE_LINE, size);
    if (!m->overflow) {
        kafka_metrics_destroy(m);
        return -ENOMEM;
    }
    memset(m->overflow, 0, size);
    m->overflow->shared = true;
    *out = m;
    return 0;
}

struct kafka_metrics_loop *kafka_metrics_loop(struct kafka_metrics *m, uint32_t index)
{
    if (!m || index >= m->loop_count)
        return NULL;
    return m->loops[index];
}

struct kafka_metrics_loop *kafka_metrics_thread(struct kafka_metrics *m)
{
    if (!m)
        return NULL;
    if (km_tl_id == m->id && km_tl_loop)
        return km_tl_loop;
    uint32_t i = atomic_fetch_add_explicit(&m->threads_bound, 1, memory_order_relaxed);
    km_tl_loop = i < m->loop_count ? m->loops[i] : m->overflow;
    km_tl_id = m->id;
    return km_tl_loop;
}

void kafka_metrics_attach(struct kafka_metrics *m, const struct kafka_server_stats *stats,
                          const struct net_counters *net)
{
    if (m) {
        m->stats = stats;
        m->net = net;
    }
}

void kafka_metrics_request(struct kafka_metrics_loop *l, int16_t api_key, int16_t api_version,
                           uint64_t latency_ns)
{
    if (!l)
        return;
    if (api_key < 0 || api_key >= KAFKA_METRICS_API_KEYS || api_version < 0 ||
        api_version >= KAFKA_METRICS_VERSIONS) {
        km_add(&l->requests_unknown, 1);
        return;
    }
    struct km_cell *c = &l->req[api_key][api_version];
    unsigned b = 0;
    while (b < KM_BUCKETS && latency_ns > km_bucket_ns[b])
        b++;
    km_add(&c->bucket[b], 1);
    km_add(&c->sum_ns, latency_ns);
    km_add(&c->count, 1);
}

void kafka_metrics_bytes_in(struct kafka_metrics_loop *l, uint64_t bytes)
{
    if (l)
        km_add(&l->bytes_in, bytes);
}

void kafka_metrics_bytes_out(struct kafka_metrics_loop *l, uint64_t bytes)
{
    if (l)
        km_add(&l->bytes_out, bytes);
}

void kafka_metrics_bytes_zerocopy(struct kafka_metrics_loop *l, uint64_t bytes)
{
    if (l)
        km_add(&l->bytes_zerocopy, bytes);
}

void kafka_metrics_connection_opened(struct kafka_metrics_loop *l)
{
    if (l)
        km_add(&l->connections_opened, 1);
}

void kafka_metrics_connection_closed(struct kafka_metrics_loop *l)
{
    if (l)
        km_add(&l->connections_closed, 1);
}

void kafka_metrics_refusal(struct kafka_metrics_loop *l, enum kafka_metrics_refusal why)
{
    if (!l || (unsigned)why >= KAFKA_REFUSE_COUNT)
        return;
    km_add(&l->refusals[why], 1);
}

/* ---- rendering ---------------------------------------------------------------------------- */

struct km_buf {
    char *p;
    size_t len, cap;
    int err;
};

__attribute__((format(printf, 2, 3))) static void km_printf(struct km_buf *b, const char *fmt, ...)
{
    if (b->err)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->err = -EINVAL;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 16384;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        if (cap > KAFKA_METRICS_SCRAPE_BYTES) {
            b->err = KP_E_LIMIT;
            return;
        }
        char *np = realloc(b->p, cap);
        if (!np) {
            b->err = -ENOMEM;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

static void km_family(struct km_buf *b, const char *name, const char *type, const char *help)
{
    km_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static uint64_t km_sum(const struct kafka_metrics *m, size_t offset)
{
    uint64_t s = km_get((const _Atomic uint64_t *)((const char *)m->overflow + offset));
    for (uint32_t i = 0; i < m->loop_count; i++)
        s += km_get((const _Atomic uint64_t *)((const char *)m->loops[i] + offset));
    return s;
}

#define KM_SUM(m, field) km_sum((m), offsetof(struct kafka_metrics_loop, field))

/* The API's name from tools/kafka/proto/api.c's table (the one list of keys and names), or "ApiN". */
static void km_api_label(char *out, size_t size, int key)
{
    const char *name = kafka_api_find((int16_t)key) ? kafka_api_name((int16_t)key) : NULL;
    if (name)
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "Api%d", key);
}

static void render_requests(struct km_buf *b, const struct kafka_metrics *m)
{
    km_family(b, "ringtail_kafka_requests_total", "counter",
              "Kafka requests handled, by API and version.");
    for (int k = 0; k < KAFKA_METRICS_API_KEYS; k++) {
        for (int v = 0; v < KAFKA_METRICS_VERSIONS; v++) {
            uint64_t n = KM_SUM(m, req[k][v].count);
            if (!n)
                continue; /* KMT4 */
            char api[32];
            km_api_label(api, sizeof(api), k);
            km_printf(
                b,
                "ringtail_kafka_requests_total{api=\"%s\",api_key=\"%d\",version=\"%d\"} %" PRIu64
                "\n",
                api, k, v, n);
        }
    }
    km_family(b, "ringtail_kafka_requests_unknown_total", "counter",
              "Requests whose API key or version is outside what the broker counts.");
    km_printf(b, "ringtail_kafka_requests_unknown_total %" PRIu64 "\n",
              KM_SUM(m, requests_unknown));

    km_family(b, "ringtail_kafka_request_duration_seconds", "histogram",
              "Time from a request's frame being complete to its response being queued.");
    for (int k = 0; k < KAFKA_METRICS_API_KEYS; k++) {
        for (int v = 0; v < KAFKA_METRICS_VERSIONS; v++) {
            uint64_t n = 0;
            uint64_t buckets[KM_BUCKETS + 1];
            for (int i = 0; i <= KM_BUCKETS; i++) {
                buckets[i] = KM_SUM(m, req[k][v].bucket[i]);
                n += buckets[i];
            }
            if (!n)
                continue;
            char api[32];
            km_api_label(api, sizeof(api), k);
            uint64_t cum = 0;
            for (int i = 0; i < KM_BUCKETS; i++) {
                cum += buckets[i];
                km_printf(
                    b,
                    "ringtail_kafka_request_duration_seconds_bucket{api=\"%s\",version=\"%d\","
                    "le=\"%s\"} %" PRIu64 "\n",
                    api, v, km_bucket_le[i], cum);
            }
            /* KMT3: +Inf and _count from the same bucket sum, never from `count` (which a
             * concurrent writer may have bumped after the buckets were read). */
            km_printf(b,
                      "ringtail_kafka_request_duration_seconds_bucket{api=\"%s\",version=\"%d\","
                      "le=\"+Inf\"} %" PRIu64 "\n",
                      api, v, n);
            uint64_t sum_ns = KM_SUM(m, req[k][v].sum_ns);
            km_printf(b,
                      "ringtail_kafka_request_duration_seconds_sum{api=\"%s\",version=\"%d\"} "
                      "%.9f\n",
                      api, v, (double)sum_ns / 1e9);
            km_printf(b,
                      "ringtail_kafka_request_duration_seconds_count{api=\"%s\",version=\"%d\"} "
                      "%" PRIu64 "\n",
                      api, v, n);
        }
    }
}

static uint64_t km_load(const _Atomic uint64_t *c)
{
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

/* Loop counters plus, when a server is attached, its own (net.h's net_counters). */
static void render_loops(struct km_buf *b, const struct kafka_metrics *m)
{
    const struct net_counters *nc = m->net;
    uint64_t in = KM_SUM(m, bytes_in) + (nc ? km_load(&nc->bytes_in) : 0);
    uint64_t out = KM_SUM(m, bytes_out) + (nc ? km_load(&nc->bytes_out) : 0);
    uint64_t zc = KM_SUM(m, bytes_zerocopy) + (nc ? km_load(&nc->payload_bytes_zero_copy) : 0);
    km_family(b, "ringtail_kafka_received_bytes_total", "counter",
              "Bytes read from client connections.");
    km_printf(b, "ringtail_kafka_received_bytes_total %" PRIu64 "\n", in);
    km_family(b, "ringtail_kafka_sent_bytes_total", "counter",
              "Bytes written to client connections.");
    km_printf(b, "ringtail_kafka_sent_bytes_total %" PRIu64 "\n", out);
    km_family(b, "ringtail_kafka_sent_zerocopy_bytes_total", "counter",
              "Of the bytes sent, record bytes that went from a segment to a socket uncopied.");
    km_printf(b, "ringtail_kafka_sent_zerocopy_bytes_total %" PRIu64 "\n", zc);
    uint64_t opened = KM_SUM(m, connections_opened);
    uint64_t closed = KM_SUM(m, connections_closed);
    /* Loops are read one after another (KMT1): a close counted before its open was read is
     * possible in one scrape; never report a negative count. */
    uint64_t open = opened > closed ? opened - closed : 0;
    if (nc) {
        opened += km_load(&nc->connections_accepted);
        open += km_load(&nc->connections_open);
    }
    km_family(b, "ringtail_kafka_connections_opened_total", "counter",
              "Client connections accepted.");
    km_printf(b, "ringtail_kafka_connections_opened_total %" PRIu64 "\n", opened);
    km_family(b, "ringtail_kafka_connections", "gauge", "Client connections open now.");
    km_printf(b, "ringtail_kafka_connections %" PRIu64 "\n", open);
    uint64_t refusals[KAFKA_REFUSE_COUNT];
    for (int r = 0; r < KAFKA_REFUSE_COUNT; r++)
        refusals[r] = KM_SUM(m, refusals[r]);
    if (nc) {
        refusals[KAFKA_REFUSE_CONNECTIONS_MAX] += km_load(&nc->connections_refused_max);
        refusals[KAFKA_REFUSE_FRAME_TOO_LARGE] += km_load(&nc->connections_closed_oversize);
        refusals[KAFKA_REFUSE_BAD_REQUEST] += km_load(&nc->connections_closed_protocol);
        refusals[KAFKA_REFUSE_IDLE] += km_load(&nc->connections_closed_idle);
        refusals[KAFKA_REFUSE_IN_FLIGHT_MAX] += km_load(&nc->in_flight_stalls);
    }
    km_family(b, "ringtail_kafka_refusals_total", "counter",
              "Connections or requests refused or closed by a bound, by reason.");
    for (int r = 0; r < KAFKA_REFUSE_COUNT; r++)
        km_printf(b, "ringtail_kafka_refusals_total{reason=\"%s\"} %" PRIu64 "\n",
                  km_refusal_names[r], refusals[r]);
    /* TLS (net_tls.c NT4): whether kernel TLS carries the connections' sends, and how many
     * handshakes failed (a bad certificate, a wrong CA, a plaintext client on a TLS port, too
     * slow: net.c KN9). */
    km_family(b, "ringtail_kafka_tls_connections_total", "counter",
              "TLS connections whose handshake completed, by whether kernel TLS sends their "
              "bytes (ktls=\"true\": fetched records go from the mapping; \"false\": copied "
              "through a bounded buffer).");
    km_printf(b, "ringtail_kafka_tls_connections_total{ktls=\"true\"} %" PRIu64 "\n",
              nc ? km_load(&nc->handshakes_mapped) : 0);
    km_printf(b, "ringtail_kafka_tls_connections_total{ktls=\"false\"} %" PRIu64 "\n",
              nc ? km_load(&nc->handshakes_copying) : 0);
    km_family(b, "ringtail_kafka_tls_handshakes_failed_total", "counter",
              "TLS handshakes that failed or did not finish in time; each closed its connection.");
    km_printf(b, "ringtail_kafka_tls_handshakes_failed_total %" PRIu64 "\n",
              nc ? km_load(&nc->handshakes_failed) : 0);
    /* Pauses are counted here, not logged each (net.c logs a connection's first pause and the
     * budgets' exhaustion and recovery only). */
    km_family(b, "ringtail_kafka_read_pauses_total", "counter",
              "Times a connection stopped reading requests at a bound, by bound: in_flight "
              "(--in-flight-max), request_memory (--queued-max-request-bytes), response_memory "
              "(--connection-max-response-bytes or --queued-max-response-bytes: answers its "
              "client has not read).");
    km_printf(b, "ringtail_kafka_read_pauses_total{reason=\"in_flight\"} %" PRIu64 "\n",
              nc ? km_load(&nc->in_flight_stalls) : 0);
    km_printf(b, "ringtail_kafka_read_pauses_total{reason=\"request_memory\"} %" PRIu64 "\n",
              nc ? km_load(&nc->memory_stalls) : 0);
    km_printf(b, "ringtail_kafka_read_pauses_total{reason=\"response_memory\"} %" PRIu64 "\n",
              nc ? km_load(&nc->response_stalls) : 0);
    km_family(b, "ringtail_kafka_queued_request_bytes", "gauge",
              "Request bytes (of frames over 64 KiB) held now, over all connections.");
    km_printf(b, "ringtail_kafka_queued_request_bytes %" PRIu64 "\n",
              nc ? km_load(&nc->queued_bytes) : 0);
    km_family(b, "ringtail_kafka_queued_response_bytes", "gauge",
              "Response bytes answered and not yet taken by their clients, over all connections.");
    km_printf(b, "ringtail_kafka_queued_response_bytes %" PRIu64 "\n",
              nc ? km_load(&nc->queued_response_bytes) : 0);
    uint32_t bound =
        atomic_load_explicit((_Atomic uint32_t *)&m->threads_bound, memory_order_relaxed);
    km_family(b, "ringtail_kafka_counting_threads", "gauge",
              "Threads (network loops, engine shards) that have counted requests.");
    km_printf(b, "ringtail_kafka_counting_threads %" PRIu32 "\n", bound);
    if (!m->stats)
        return;
    const struct kafka_server_stats *st = m->stats;
    km_family(b, "ringtail_kafka_error_responses_total", "counter",
              "Responses carrying a Kafka error code, by API.");
    for (int k = 0; k < KAFKA_STATS_API_MAX; k++) {
        uint64_t n = km_load(&st->errors_by_api[k]);
        if (!n)
            continue; /* KMT4 */
        char api[32];
        km_api_label(api, sizeof(api), k);
        km_printf(b, "ringtail_kafka_error_responses_total{api=\"%s\"} %" PRIu64 "\n", api, n);
    }
    km_family(b, "ringtail_kafka_fetch_sendmsg_bytes_total", "counter",
              "Fetched record bytes sent by plain sendmsg from the mapping (--zero-copy sendmsg).");
    km_printf(b, "ringtail_kafka_fetch_sendmsg_bytes_total %" PRIu64 "\n",
              km_load(&nc->payload_bytes_sendmsg));
    km_family(b, "ringtail_kafka_zerocopy_completions_total", "counter",
              "Zero-copy send completions the kernel reported.");
    km_printf(b, "ringtail_kafka_zerocopy_completions_total %" PRIu64 "\n",
              km_load(&nc->zc_notifications));
    km_family(b, "ringtail_kafka_zerocopy_kernel_copied_total", "counter",
              "Of those, completions where the kernel says it copied the pages (loopback does).");
    km_printf(b, "ringtail_kafka_zerocopy_kernel_copied_total %" PRIu64 "\n",
              km_load(&nc->zc_kernel_copied));
    km_family(b, "ringtail_kafka_fetch_long_polls_total", "counter",
              "Fetches parked to wait for data (max_wait_ms / min_bytes).");
    km_printf(b, "ringtail_kafka_fetch_long_polls_total %" PRIu64 "\n",
              km_load(&st->fetch_long_polls));
    km_family(b, "ringtail_kafka_fetch_copied_bytes_total", "counter",
              "Fetched record bytes copied into a response buffer (--zero-copy false).");
    km_printf(b, "ringtail_kafka_fetch_copied_bytes_total %" PRIu64 "\n",
              km_load(&st->fetch_bytes_copied) + km_load(&nc->payload_bytes_copied));
    km_family(b, "ringtail_kafka_topics_auto_created_total", "counter",
              "Topics created by Metadata or Produce (auto.create.topics.enable).");
    km_printf(b, "ringtail_kafka_topics_auto_created_total %" PRIu64 "\n",
              km_load(&st->topics_auto_created));
    /* Message format conversions (engine/log/msgset.c): what old clients cost the broker. */
    km_family(b, "ringtail_kafka_produce_upconverted_sets_total", "counter",
              "Produced message sets of format v0/v1 converted to RecordBatch v2.");
    km_printf(b, "ringtail_kafka_produce_upconverted_sets_total %" PRIu64 "\n",
              km_load(&st->produce_upconverted_sets));
    km_family(b, "ringtail_kafka_produce_upconverted_bytes_total", "counter",
              "Bytes of those message sets as received.");
    km_printf(b, "ringtail_kafka_produce_upconverted_bytes_total %" PRIu64 "\n",
              km_load(&st->produce_upconverted_bytes));
    km_family(b, "ringtail_kafka_fetch_downconverted_batches_total", "counter",
              "RecordBatch v2 batches converted to message format v0/v1 for Fetch v0-3.");
    km_printf(b, "ringtail_kafka_fetch_downconverted_batches_total %" PRIu64 "\n",
              km_load(&st->fetch_downconverted_batches));
    km_family(b, "ringtail_kafka_fetch_downconverted_bytes_total", "counter",
              "Message bytes those conversions answered.");
    km_printf(b, "ringtail_kafka_fetch_downconverted_bytes_total %" PRIu64 "\n",
              km_load(&st->fetch_downconverted_bytes));
    km_family(b, "ringtail_kafka_fetch_downconvert_chunks_total", "counter",
              "Chunks converted as Fetch v0-3 responses went out (streamed, bounded memory).");
    km_printf(b, "ringtail_kafka_fetch_downconvert_chunks_total %" PRIu64 "\n",
              km_load(&st->fetch_downconvert_chunks));
    km_family(b, "ringtail_kafka_fetch_downconvert_padded_bytes_total", "counter",
              "Fetch v0-3 record bytes sent as an overflow tail old consumers ignore.");
    km_printf(b, "ringtail_kafka_fetch_downconvert_padded_bytes_total %" PRIu64 "\n",
              km_load(&st->fetch_downconvert_padded_bytes));
    km_family(b, "ringtail_kafka_fetch_downconvert_buffer_max_bytes", "gauge",
              "The largest buffer one streamed down-conversion held (chunk, or one batch).");
    km_printf(b, "ringtail_kafka_fetch_downconvert_buffer_max_bytes %" PRIu64 "\n",
              km_load(&st->fetch_downconvert_buffer_max));
    km_family(b, "ringtail_kafka_authorization_denied_total", "counter",
              "Access checks the authorizer (--authorizer on) refused.");
    km_printf(b, "ringtail_kafka_authorization_denied_total %" PRIu64 "\n",
              km_load(&st->authorization_denied));
    /* SASL (handle_sasl.c): Kafka's successful-/failed-authentication-total. */
    km_family(b, "ringtail_kafka_sasl_authentications_total", "counter",
              "SASL authentications that succeeded (re-authentications not counted).");
    km_printf(b, "ringtail_kafka_sasl_authentications_total %" PRIu64 "\n",
              km_load(&st->sasl_authentications));
    km_family(b, "ringtail_kafka_sasl_reauthentications_total", "counter",
              "SASL re-authentications (KIP-368) that succeeded.");
    km_printf(b, "ringtail_kafka_sasl_reauthentications_total %" PRIu64 "\n",
              km_load(&st->sasl_reauthentications));
    km_family(b, "ringtail_kafka_sasl_authentication_failures_total", "counter",
              "SASL authentications that failed (answered after the failure delay).");
    km_printf(b, "ringtail_kafka_sasl_authentication_failures_total %" PRIu64 "\n",
              km_load(&st->sasl_authentication_failures));
}

static void render_engine_stats(struct km_buf *b, rt_engine *e)
{
    struct rt_stats s;
    if (rt_stats_get(e, &s) != 0)
        return;
    static const struct {
        const char *name, *help;
        size_t offset;
    } counters[] = {
        {"ringtail_engine_rounds_total", "Group-commit rounds completed.",
         offsetof(struct rt_stats, rounds)},
        {"ringtail_engine_fdatasyncs_total", "fdatasync calls made by the engine.",
         offsetof(struct rt_stats, fdatasyncs)},
        {"ringtail_engine_batches_appended_total", "Record batches appended.",
         offsetof(struct rt_stats, batches_appended)},
        {"ringtail_engine_appended_bytes_total", "Bytes of record batches appended.",
         offsetof(struct rt_stats, bytes_appended)},
        {"ringtail_engine_duplicates_total",
         "Producer batches acknowledged as duplicates, not appended.",
         offsetof(struct rt_stats, duplicates)},
        {"ringtail_engine_segments_rolled_total", "Segments rolled.",
         offsetof(struct rt_stats, segments_rolled)},
        {"ringtail_engine_segments_deleted_total", "Segments deleted by retention.",
         offsetof(struct rt_stats, segments_deleted)},
        {"ringtail_engine_partition_faults_total",
         "Partitions whose write side failed (a write, fdatasync or roll: ENOSPC, EIO, ...).",
         offsetof(struct rt_stats, partition_faults)},
        {"ringtail_engine_partition_recoveries_total",
         "Failed partitions recovered in place (no restart).",
         offsetof(struct rt_stats, partition_recoveries)},
    };
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        km_family(b, counters[i].name, "counter", counters[i].help);
        km_printf(b, "%s %" PRIu64 "\n", counters[i].name,
                  *(const uint64_t *)((const char *)&s + counters[i].offset));
    }
    km_family(b, "ringtail_engine_shards", "gauge", "Engine shards (writer threads).");
    km_printf(b, "ringtail_engine_shards %" PRIu32 "\n", s.shard_count);
    km_family(b, "ringtail_engine_partitions_failed", "gauge",
              "Partitions whose write side is failed now (produce answers KAFKA_STORAGE_ERROR).");
    km_printf(b, "ringtail_engine_partitions_failed %" PRIu64 "\n", s.partitions_failed);
    km_family(b, "ringtail_engine_write_failed", "gauge",
              "1 when the engine's whole write side failed (a restart recovers it), else 0.");
    km_printf(b, "ringtail_engine_write_failed %d\n", s.write_error != 0);
}

/* Bytes a partition's log holds: sealed segments are trimmed on roll, so their file size is
 * exact; the newest is preallocated, so its readable end comes from a fetch of it (KMT5). A
 * negative return means "not known" (the series is left out). */
static int64_t partition_log_size(rt_engine *e, const char *dir, const char *topic,
                                  uint32_t partition, int64_t high_watermark)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s-%" PRIu32, dir, topic, partition);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -1;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int64_t total = 0, newest_base = -1, newest_size = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len != 24 || strcmp(de->d_name + 20, ".log") != 0)
            continue;
        char *end = NULL;
        long long base = strtoll(de->d_name, &end, 10);
        if (end != de->d_name + 20 || base < 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0)
            continue; /* deleted by retention meanwhile */
        if (base > newest_base) {
            if (newest_base >= 0)
                total += newest_size;
            newest_base = base;
            newest_size = (int64_t)st.st_size;
        } else {
            total += (int64_t)st.st_size;
        }
    }
    closedir(d);
    if (newest_base < 0)
        return 0;
    if (newest_base >= high_watermark)
        return total; /* the newest segment holds nothing readable yet */
    rt_fetch *f = NULL;
    if (rt_fetch_start(e, topic, partition, newest_base, SIZE_MAX, RT_READ_UNCOMMITTED, &f) != 0)
        return -1;
    const struct rt_fetch_view *v = rt_fetch_get(f);
    int64_t readable = (int64_t)(v->segment_position + v->size_bytes);
    rt_fetch_release(f);
    return total + readable;
}

struct km_partition_ctx {
    struct km_buf *b;
    rt_engine *e;
    const char *dir;
    int pass; /* which family is being written: one family's series must stay together */
};

static int render_topic(void *ctx, const char *name, uint32_t partitions)
{
    struct km_partition_ctx *c = ctx;
    for (uint32_t p = 0; p < partitions; p++) {
        int64_t v = -1, hw = -1;
        int rc = 0;
        switch (c->pass) {
        case 0:
            rc = rt_list_offsets(c->e, name, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &v);
            break;
        case 1:
            rc = rt_list_offsets(c->e, name, p, RT_OFFSET_LATEST, RT_READ_COMMITTED, &v);
            break;
        case 2:
            rc = rt_list_offsets(c->e, name, p, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &v);
            break;
        default:
            rc = rt_list_offsets(c->e, name, p, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &hw);
            if (rc == 0 && c->dir)
                v = partition_log_size(c->e, c->dir, name, p, hw);
            if (v < 0)
                continue;
            break;
        }
        if (rc != 0)
            continue; /* deleted meanwhile, or the engine is closing: leave it out */
        static const char *const names[] = {
            "ringtail_partition_high_watermark", "ringtail_partition_last_stable_offset",
            "ringtail_partition_log_start_offset", "ringtail_partition_log_size_bytes"};
        km_printf(c->b, "%s{topic=\"%s\",partition=\"%" PRIu32 "\"} %" PRId64 "\n", names[c->pass],
                  name, p, v);
    }
    return 0;
}

static void render_partitions(struct km_buf *b, rt_engine *e, const char *dir)
{
    static const char *const families[][2] = {
        {"ringtail_partition_high_watermark",
         "Offset after the last acknowledged record (read_uncommitted reads up to it)."},
        {"ringtail_partition_last_stable_offset",
         "Last stable offset (read_committed reads up to it)."},
        {"ringtail_partition_log_start_offset",
         "First offset retention and DeleteRecords have kept."},
        {"ringtail_partition_log_size_bytes", "Bytes of record batches the partition holds."},
    };
    for (int pass = 0; pass < 4; pass++) {
        if (pass == 3 && !dir)
            break;
        km_family(b, families[pass][0], "gauge", families[pass][1]);
        struct km_partition_ctx c = {.b = b, .e = e, .dir = dir, .pass = pass};
        (void)rt_topic_list(e, render_topic, &c);
    }
}

static int count_open_txn(void *ctx, const struct rt_txn_info *t)
{
    uint64_t *n = ctx;
    if (t->state && (strcmp(t->state, "Ongoing") == 0 || strncmp(t->state, "Prepare", 7) == 0))
        (*n)++;
    return 0;
}

static void render_txns(struct km_buf *b, rt_engine *e)
{
    uint64_t open = 0;
    if (rt_txn_list(e, count_open_txn, &open) != 0)
        return;
    km_family(b, "ringtail_transactions_open", "gauge",
              "Transactions the coordinator holds open (Ongoing or Prepare*).");
    km_printf(b, "ringtail_transactions_open %" PRIu64 "\n", open);
}

int kafka_metrics_render(struct kafka_metrics *m, rt_engine *engine, const char *dir, char **out,
                         size_t *out_len)
{
    if (!m || !out || !out_len)
        return RT_E_INVALID_ARGUMENT;
    struct km_buf b = {0};
    render_requests(&b, m);
    render_loops(&b, m);
    if (engine) {
        render_engine_stats(&b, engine);
        render_txns(&b, engine);
        render_partitions(&b, engine, dir);
    }
    if (!b.err && !b.p)
        km_printf(&b, "\n");
    if (b.err) {
        free(b.p);
        return b.err;
    }
    *out = b.p;
    *out_len = b.len;
    return 0;
}

/* ---- HTTP (libmicrohttpd) --------------------------------------------------------------- */

static enum MHD_Result km_answer(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    struct kafka_metrics *m = cls;
    (void)version;
    (void)upload_data;
    if (*req_cls == NULL) { /* first call: headers only; answer on the second */
        *req_cls = (void *)1;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* a body we do not want: drop it */
        return MHD_YES;
    }
    unsigned status = MHD_HTTP_OK;
    struct MHD_Response *r = NULL;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET /metrics\n";
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    } else if (strcmp(url, "/metrics") != 0) {
        static const char msg[] = "not found: the metrics are at /metrics\n";
        status = MHD_HTTP_NOT_FOUND;
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    } else {
        char *text = NULL;
        size_t len = 0;
        int rc = kafka_metrics_render(m, m->engine, m->dir, &text, &len);
        if (rc) {
            static const char msg[] = "metrics could not be rendered\n";
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
            r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
                                                MHD_RESPMEM_PERSISTENT);
        } else {
            r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
            if (!r)
                free(text);
        }
    }
    if (!r)
        return MHD_NO;
    if (status == MHD_HTTP_OK)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "text/plain; version=0.0.4; charset=utf-8");
    else
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static int km_parse_listen(const char *addr, struct sockaddr_in *sa)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr)
        return RT_E_INVALID_ARGUMENT;
    char host[64];
    size_t hlen = (size_t)(colon - addr);
    if (hlen >= sizeof(host))
        return RT_E_INVALID_ARGUMENT;
    memcpy(host, addr, hlen);
    host[hlen] = '\0';
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
        return RT_E_INVALID_ARGUMENT;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return RT_E_INVALID_ARGUMENT;
    return 0;
}

int kafka_metrics_check_addr(const char *addr)
{
    struct sockaddr_in sa;
    return addr ? km_parse_listen(addr, &sa) : RT_E_INVALID_ARGUMENT;
}

int kafka_metrics_serve(struct kafka_metrics *m, const char *addr, rt_engine *engine,
                        const char *dir)
{
    if (!m || !addr || m->daemon)
        return RT_E_INVALID_ARGUMENT;
    struct sockaddr_in sa;
    int rc = km_parse_listen(addr, &sa);
    if (rc)
        return rc;
    /* Our own socket, so a bind failure comes back as its errno (libmicrohttpd only says
     * "failed"). */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof(bound);
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (dir) {
        m->dir = strdup(dir);
        if (!m->dir) {
            close(fd);
            return -ENOMEM;
        }
    }
    m->engine = engine;
    m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC, 0,
                                 NULL, NULL, km_answer, m, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (!m->daemon) {
        close(fd);
        free(m->dir);
        m->dir = NULL;
        m->engine = NULL;
        return RT_E_UNSUPPORTED;
    }
    m->listen_fd = fd;
    m->port = ntohs(bound.sin_port);
    return 0;
}

uint16_t kafka_metrics_port(const struct kafka_metrics *m)
{
    return m && m->daemon ? m->port : 0;
}

void kafka_metrics_stop(struct kafka_metrics *m)
{
    if (!m || !m->daemon)
        return;
    /* Quiesced first, MHD hands the listening socket back instead of closing it, so it is closed
     * exactly once, here; stopping joins MHD's thread: no scrape runs after this. */
    MHD_socket fd = MHD_quiesce_daemon(m->daemon);
    MHD_stop_daemon(m->daemon);
    m->daemon = NULL;
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    m->listen_fd = -1;
    m->engine = NULL;
    free(m->dir);
    m->dir = NULL;
    m->port = 0;
}

void kafka_metrics_destroy(struct kafka_metrics *m)
{
    if (!m)
        return;
    kafka_metrics_stop(m);
    for (uint32_t i = 0; i < m->loop_count; i++)
        free(m->loops[i]);
    free(m->loops);
    free(m->overflow);
    free(m);
}
