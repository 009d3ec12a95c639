/*
 * batches.c — hand-built record batches for the tests (batches.h). Test support only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "helpers/batches.h"

#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "ringtail.h"

size_t tu_batch(uint8_t *buf, size_t cap, int16_t attrs, int64_t pid, int16_t epoch, int32_t seq,
                int n, const char *prefix, int first, int64_t ts)
{
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, cap, attrs, pid, epoch, seq), 0);
    for (int i = 0; i < n; i++) {
        char v[64];
        if (first == TU_BATCH_UNNUMBERED)
            snprintf(v, sizeof(v), "%s", prefix);
        else
            snprintf(v, sizeof(v), "%s%d", prefix, first + i);
        struct rt_record r = {
            .key_len = -1, .value = v, .value_len = (int32_t)strlen(v), .timestamp_ms = ts};
        assert_int_equal(batch_builder_add(&b, &r), 0);
    }
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    return len;
}

size_t tu_keyed_batch(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq,
                      const char *key, const char *value, int64_t ts)
{
    struct batch_builder b;
    assert_int_equal(batch_builder_init(&b, buf, cap, 0, pid, epoch, seq), 0);
    struct rt_record r = {.key = key,
                          .key_len = (int32_t)strlen(key),
                          .value = value,
                          .value_len = (int32_t)strlen(value),
                          .timestamp_ms = ts};
    assert_int_equal(batch_builder_add(&b, &r), 0);
    size_t len = 0;
    assert_int_equal(batch_builder_finish(&b, &len), 0);
    return len;
}
