/*
 * fuzz_kafka_cluster_meta.c — libFuzzer target for the cluster's metadata records and snapshots
 * (tools/kafka/cluster/metadata_image.c, docs/format.md L). The first input byte picks:
 *   even: the rest is a snapshot, restored into an image (refused: MI_E_CORRUPT and the image
 *         unchanged; accepted: its snapshot restores to the same digest, MI3);
 *   odd:  the rest is a sequence of records, each a u16 big-endian length + bytes, applied in
 *         order to two images (MI1: equal digests, rejections counted, never a crash, MI2); then
 *         the image's snapshot restores to the same digest (MI3). Every record type's decoder
 *         is reached this way, the CONFIG record's (MI7) and the version 1 PARTITION record's
 *         partition epoch (MI8) too (seed-config-records), and the BATCH record's (MI9,
 *         seed-batch-records: every record inside decodes alone; a rejected BATCH leaves the
 *         image's state, its snapshot's records, as it was).
 * Either way the image's leadership plan (mi_plan_leaders, MI6) for every broker and for the
 * leaderless partitions applies whole: every record it emits decodes and applies (MI6).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/cluster/metadata_image.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_cluster_meta: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void round_trip(const struct metadata_image *img)
{
    void *buf = NULL;
    size_t len = 0;
    CHECK(metadata_image_snapshot(img, &buf, &len) == 0);
    struct metadata_image back;
    metadata_image_init(&back);
    char err[256];
    CHECK(metadata_image_restore(&back, buf, len, err, sizeof(err)) == 0);
    CHECK(metadata_image_digest(&back) == metadata_image_digest(img));
    metadata_image_free(&back);
    free(buf);
}

/* The image's state without its counters: its snapshot's records (docs/format.md L.4). */
static uint8_t *state_of(const struct metadata_image *img, size_t *len)
{
    void *buf = NULL;
    CHECK(metadata_image_snapshot(img, &buf, len) == 0);
    CHECK(*len >= MI_SNAPSHOT_HEADER + 4);
    return buf;
}

static void apply_planned(void *ctx, const uint8_t *rec, size_t len)
{
    struct metadata_image *img = ctx;
    CHECK(metadata_image_apply(img, img->last_index + 1, rec, len) == 0);
}

static void plan_leaders(struct metadata_image *img)
{
    for (unsigned i = 0; i < img->brokers_count && i < 8; i++)
        if (img->brokers[i].fenced)
            mi_plan_leaders(img, img->brokers[i].id, apply_planned, img);
    mi_plan_leaders(img, -1, apply_planned, img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct metadata_image a, b;
    metadata_image_init(&a);
    metadata_image_init(&b);
    char err[256];
    if (data[0] % 2 == 0) {
        uint64_t d0 = metadata_image_digest(&a);
        int rc = metadata_image_restore(&a, data + 1, size - 1, err, sizeof(err));
        CHECK(rc == 0 || rc == MI_E_CORRUPT);
        if (rc)
            CHECK(metadata_image_digest(&a) == d0);
        else {
            round_trip(&a);
            plan_leaders(&a);
        }
    } else {
        size_t at = 1;
        uint64_t index = 1;
        while (size - at >= 2) {
            size_t n = (size_t)data[at] << 8 | data[at + 1];
            at += 2;
            if (n > size - at)
                n = size - at;
            struct mi_record r;
            int drc = mi_record_decode(data + at, n, &r, err, sizeof(err));
            size_t before_len = 0;
            uint8_t *before = NULL;
            if (drc == 0 && r.type == MI_BATCH) { /* MI9 */
                size_t walk = 0, count = 0, rlen = 0;
                const uint8_t *rec = NULL;
                while (mi_batch_next(&r, &walk, &rec, &rlen)) {
                    struct mi_record in;
                    CHECK(mi_record_decode(rec, rlen, &in, err, sizeof(err)) == 0);
                    CHECK(in.type == MI_TOPIC || in.type == MI_PARTITION || in.type == MI_CONFIG);
                    count++;
                }
                CHECK(count == r.batch.count);
                before = state_of(&a, &before_len);
            }
            int rc = metadata_image_apply(&a, index, data + at, n);
            CHECK(rc == 0 || rc == MI_E_CORRUPT || rc == MI_E_REJECTED);
            if (before && rc == MI_E_REJECTED) { /* MI9: nothing of it applied */
                size_t after_len = 0;
                uint8_t *after = state_of(&a, &after_len);
                CHECK(after_len == before_len);
                CHECK(memcmp(after + 40, before + 40, before_len - 44) == 0);
                free(after);
            }
            free(before);
            CHECK((drc == MI_E_CORRUPT) == (rc == MI_E_CORRUPT));
            CHECK(metadata_image_apply(&b, index, data + at, n) == rc);
            index++;
            at += n;
        }
        CHECK(metadata_image_digest(&a) == metadata_image_digest(&b));
        round_trip(&a);
        plan_leaders(&a);
    }
    metadata_image_free(&a);
    metadata_image_free(&b);
    return 0;
}
