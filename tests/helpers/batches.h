/*
 * batches.h — record batches built by hand for the tests that feed the engine or the broker raw
 * Kafka batches (rt_append_batch, Produce): the engine's own batch_builder, records with null
 * keys and values that name themselves. Test support only: fails the test when a batch cannot
 * be built. Include after cmocka.
 */
#ifndef RT_TEST_BATCHES_H
#define RT_TEST_BATCHES_H

#include <stddef.h>
#include <stdint.h>

/* tu_batch's `first` for values that are the prefix alone, unnumbered. */
#define TU_BATCH_UNNUMBERED (-1)

/* Builds into buf (cap bytes) one batch with the given attributes (0, BATCH_ATTR_TRANSACTIONAL)
 * and producer fields, of n records: null key, timestamp ts, value `prefix` followed by the
 * decimal first + i (record i), or `prefix` alone when first is TU_BATCH_UNNUMBERED. Returns
 * the batch's length. */
size_t tu_batch(uint8_t *buf, size_t cap, int16_t attrs, int64_t pid, int16_t epoch, int32_t seq,
                int n, const char *prefix, int first, int64_t ts);
/* One record with this key and value (non-transactional; a compacted topic needs keys, LG12). */
size_t tu_keyed_batch(uint8_t *buf, size_t cap, int64_t pid, int16_t epoch, int32_t seq,
                      const char *key, const char *value, int64_t ts);

#endif
