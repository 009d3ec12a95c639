/*
 * fuzz_snapshot.c — libFuzzer target for the producer-state snapshot decoder
 * (index/producer_snapshot.c, docs/format.md part D). The input is a raw `.snapshot` file.
 *
 * It is decoded twice: as given, and with its CRC re-sealed over bytes [6, end) so that the
 * fuzzer reaches the structural and field rules (S3, S4, S6..S12) instead of stopping at S5.
 * For each decode: it must never read outside the input (ASan), a rejection names a static
 * reason and an offset inside the input and never calls the callback, and whatever is accepted
 * must re-encode to exactly the input bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/crc32c.h"
#include "index/producer_snapshot.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_snapshot: %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct collect {
    struct producer_snapshot_entry *e;
    uint32_t n;
    uint32_t cap;
};

static int collect_fn(void *ctx, const struct producer_snapshot_entry *e)
{
    struct collect *c = ctx;
    if (c->n == c->cap) {
        uint32_t grown = c->cap > 0 ? c->cap * 2 : 8;
        struct producer_snapshot_entry *p = realloc(c->e, (size_t)grown * sizeof(*p));
        if (p == NULL)
            return -ENOMEM;
        c->e = p;
        c->cap = grown;
    }
    c->e[c->n++] = *e;
    return 0;
}

static void one(const uint8_t *data, size_t size)
{
    struct collect c = {0};
    const char *why = NULL;
    size_t bad = SIZE_MAX;
    int rc = producer_snapshot_decode(data, size, collect_fn, &c, &why, &bad);
    if (rc == -ENOMEM) {
        free(c.e);
        return;
    }
    if (rc != 0) {
        CHECK(rc == -EBADMSG);
        CHECK(why != NULL && why[0] != '\0');
        CHECK(bad <= size);
        CHECK(c.n == 0); /* nothing is delivered from a rejected snapshot */
        free(c.e);
        return;
    }
    CHECK(why == NULL);
    CHECK(bad == 0);
    CHECK(size == producer_snapshot_size(c.n));

    uint8_t *out = malloc(size);
    CHECK(out != NULL);
    size_t len = 0;
    rc = producer_snapshot_encode(c.e, c.n, out, size, &len);
    if (rc != -ENOMEM) {
        CHECK(rc == 0);
        CHECK(len == size);
        CHECK(memcmp(out, data, size) == 0);
    }
    free(out);
    free(c.e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    if (size >= 6) {
        /* An exact-size copy, so ASan still sees any read past the end. */
        uint8_t *sealed = malloc(size);
        CHECK(sealed != NULL);
        memcpy(sealed, data, size);
        uint32_t crc = crc32c(0, sealed + 6, size - 6);
        sealed[2] = (uint8_t)(crc >> 24);
        sealed[3] = (uint8_t)(crc >> 16);
        sealed[4] = (uint8_t)(crc >> 8);
        sealed[5] = (uint8_t)crc;
        one(sealed, size);
        free(sealed);
    }
    return 0;
}
