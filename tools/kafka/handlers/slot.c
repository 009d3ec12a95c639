/*
 * slot.c — a request slot's memory and frame, shared by every handler: the decode arena that
 * grows only when a request's arrays did not fit (KS2), the response arena (kafka_alloc), the
 * hole table of a zero-copy fetch, the response frame (kafka_response_begin/end), error
 * counting and the broker's log line. It sits below the handlers and beside nothing: it never
 * dispatches a request (server.c does) and never reads a request body itself.
 */
#include "tools/kafka/handlers/handle.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/metrics/metrics.h"

uint64_t kafka_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void kafka_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ringtail serve: %s\n", line);
}

/* ---- helpers for the handlers ---- */

int kafka_resp_reserve(struct kafka_slot *s, size_t bytes)
{
    bytes += 1024; /* alignment slack */
    if (bytes < KAFKA_ARENA_MIN_BYTES)
        bytes = KAFKA_ARENA_MIN_BYTES;
    if (s->resp_bytes < bytes) {
        size_t cap = s->resp_bytes ? s->resp_bytes : KAFKA_ARENA_MIN_BYTES;
        while (cap < bytes)
            cap *= 2;
        uint8_t *b = realloc(s->resp_buf, cap);
        if (!b)
            return -ENOMEM;
        s->resp_buf = b;
        s->resp_bytes = cap;
    }
    kp_arena_init(&s->resp, s->resp_buf, s->resp_bytes);
    return 0;
}

void *kafka_alloc(struct kafka_slot *s, size_t count, size_t elem_size)
{
    if (count == 0 || count > INT32_MAX)
        return NULL;
    struct kp_reader dummy = {0};
    return kp_arena_array(&dummy, &s->resp, (int32_t)count, elem_size);
}

struct kp_str kafka_str_dup(struct kafka_slot *s, const char *c)
{
    size_t n = strlen(c);
    char *p = kafka_alloc(s, n + 1, 1);
    if (!p)
        return (struct kp_str){"", 0};
    memcpy(p, c, n);
    return (struct kp_str){p, (int32_t)n};
}

bool kafka_topic_name(struct kp_str name, char *out)
{
    if (name.len <= 0 || name.len > RT_TOPIC_NAME_MAX || !name.ptr)
        return false;
    memcpy(out, name.ptr, (size_t)name.len);
    out[name.len] = 0;
    return strlen(out) == (size_t)name.len; /* no NUL inside */
}

void kafka_count_error(struct kafka_slot *s, int16_t code)
{
    if (code == KAFKA_NONE)
        return;
    int16_t key = s->header.api_key;
    if (key >= 0 && key < KAFKA_STATS_API_MAX)
        atomic_fetch_add_explicit(&s->server->stats.errors_by_api[key], 1, memory_order_relaxed);
}

int kafka_holes_reserve(struct kafka_slot *s, uint64_t n)
{
    if (n > KAFKA_HOLES_MAX)
        n = KAFKA_HOLES_MAX;
    if (n <= s->holes_cap)
        return 0;
    assert(s->fetch_count == 0); /* nothing points into the arrays while they move */
    struct kp_hole *h = realloc(s->holes, n * sizeof(*h));
    if (h)
        s->holes = h;
    struct net_slice *sl = realloc(s->slices, n * sizeof(*sl));
    if (sl)
        s->slices = sl;
    rt_fetch **f = realloc(s->fetches, n * sizeof(*f));
    if (f)
        s->fetches = f;
    if (!h || !sl || !f)
        return -ENOMEM;
    s->holes_cap = (uint32_t)n;
    return 0;
}

void kafka_response_begin(struct kafka_slot *s)
{
    kp_writer_reset(&s->w, s->holes, s->holes_cap);
    (void)kafka_frame_begin(&s->w);
    kafka_response_header_encode(&s->w, s->header.api_key, s->header.api_version,
                                 s->header.correlation_id);
}

enum net_verdict kafka_response_end(struct kafka_slot *s)
{
    int rc = kafka_frame_end(&s->w, 0);
    if (rc) {
        kafka_log("connection %" PRIu64 ": cannot encode the %s v%d response: %s; closing",
                  s->req->conn_id, kafka_api_name(s->header.api_key), s->header.api_version,
                  rt_strerror(rc));
        return NET_CLOSE;
    }
    for (size_t i = 0; i < s->w.holes_count; i++)
        s->slices[i] = s->dc_generated /* handle_fetch.c KF9: made as the socket drains */
                           ? (struct net_slice){.at = s->w.holes[i].at,
                                                .len = s->w.holes[i].len,
                                                .fill = kafka_downconvert_fill,
                                                .fill_ctx = s->w.holes[i].ref}
                           : (struct net_slice){.at = s->w.holes[i].at,
                                                .len = s->w.holes[i].len,
                                                .ptr = s->w.holes[i].ref};
    s->req->out = s->w.buf;
    s->req->out_len = s->w.len;
    s->req->slices = s->slices;
    s->req->slice_count = s->w.holes_count;
    if (s->server->opts.metrics)
        kafka_metrics_request(kafka_metrics_thread(s->server->opts.metrics), s->header.api_key,
                              s->header.api_version, kafka_now_ns() - s->started_ns);
    return NET_DONE;
}

int kafka_slot_decode(struct kafka_slot *s, size_t body_at, kafka_body_decode_fn decode, void *ctx)
{
    for (;;) {
        if (!s->arena_buf) {
            s->arena_buf = malloc(KAFKA_ARENA_MIN_BYTES);
            if (!s->arena_buf)
                return -ENOMEM;
            s->arena_bytes = KAFKA_ARENA_MIN_BYTES;
        }
        kp_arena_init(&s->arena, s->arena_buf, s->arena_bytes);
        struct kp_reader r;
        kp_reader_init(&r, s->req->frame + body_at, s->req->frame_len - body_at);
        int rc = decode(&r, &s->arena, ctx);
        if (rc != KP_E_LIMIT || s->arena_bytes >= KAFKA_ARENA_MAX_BYTES)
            return rc;
        size_t bigger = s->arena_bytes * 2;
        uint8_t *b = realloc(s->arena_buf, bigger);
        if (!b)
            return -ENOMEM;
        s->arena_buf = b;
        s->arena_bytes = bigger;
    }
}
