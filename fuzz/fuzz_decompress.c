/*
 * fuzz_decompress.c — libFuzzer target for engine/log/compression.c (docs/format.md §F). The first
 * input byte picks the codec (low 3 bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd, 5-7 unknown);
 * the rest is decompressed with a 1 MiB bound into a buffer reused across inputs. It must never
 * crash, never report more than the bound, never hold more than bound + 1 bytes of output, and
 * fail only with the documented codes (RT_E_CORRUPT and RT_E_RECORD_TOO_LARGE with a reason,
 * RT_E_UNSUPPORTED_COMPRESSION for 5-7). When it succeeds, compressing the output again with the
 * same codec and decompressing that must give the output back.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compression.h"

#define BOUND_BYTES (1u << 20)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_decompress: %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static struct compression_buffer out = COMPRESSION_BUFFER_INIT;
static struct compression_buffer again = COMPRESSION_BUFFER_INIT;
static struct compression_buffer back = COMPRESSION_BUFFER_INIT;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    enum batch_compression codec = (enum batch_compression)(data[0] & 7);
    const char *why = NULL;
    int rc = compression_decompress(codec, data + 1, size - 1, &out, BOUND_BYTES, &why);
    CHECK(out.cap <= BOUND_BYTES + 1);
    if (rc != 0) {
        CHECK(out.len == 0);
        if (codec > BATCH_COMPRESSION_ZSTD) {
            CHECK(rc == RT_E_UNSUPPORTED_COMPRESSION);
            return 0;
        }
        CHECK(rc == RT_E_CORRUPT || rc == RT_E_RECORD_TOO_LARGE);
        CHECK(why != NULL);
        return 0;
    }
    CHECK(codec <= BATCH_COMPRESSION_ZSTD);
    CHECK(why == NULL);
    CHECK(out.len <= BOUND_BYTES);
    CHECK(compression_compress(codec, out.data, out.len, &again, 0) == 0);
    CHECK(compression_decompress(codec, again.data, again.len, &back, out.len, &why) == 0);
    CHECK(back.len == out.len);
    CHECK(out.len == 0 || memcmp(back.data, out.data, out.len) == 0);
    return 0;
}
