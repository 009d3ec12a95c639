/*
 * batch_filter.h — rewriting a RecordBatch v2 with only some of its records: what Kafka's
 * MemoryRecords.filterTo does for the log cleaner (docs/format.md A.9 CL7, B.7 V10c/V13c). It
 * owns the rewritten batch's layout; it must never decide which record is kept (its caller's
 * predicate does) and never change a kept record's offset or timestamp, nor its bytes except
 * the timestampDelta a delete horizon rebases (BF6).
 */
#ifndef RT_BATCH_FILTER_H
#define RT_BATCH_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "compression.h"

/* One record of the batch as the predicate sees it. */
struct batch_filter_record {
    int64_t offset; /* baseOffset + offsetDelta */
    const uint8_t *key;
    int32_t key_len;   /* -1: no key */
    int32_t value_len; /* -1: tombstone */
};

/* Sets *keep for r; returns 0 or an error that batch_filter returns unchanged. */
typedef int (*batch_filter_fn)(void *ctx, const struct batch_filter_record *r, bool *keep);

enum batch_filter_result {
    BATCH_FILTER_DROP,      /* no record kept and no empty batch asked for */
    BATCH_FILTER_WHOLE,     /* every record kept: the batch is kept byte for byte */
    BATCH_FILTER_REWRITTEN, /* *out_batch holds the rewritten batch (BF1-BF5) */
};

struct batch_filter_scratch {
    struct compression_buffer records; /* the decompressed records section */
    struct compression_buffer packed;  /* the kept records, compressed */
    uint8_t *plain;                    /* the kept records' bytes, back to back */
    size_t plain_len, plain_cap;
    uint8_t *batch; /* the rewritten batch */
    size_t batch_cap;
};

/* clang-format off */
#define BATCH_FILTER_SCRATCH_INIT {COMPRESSION_BUFFER_INIT, COMPRESSION_BUFFER_INIT, NULL, 0, 0, NULL, 0}
/* clang-format on */

/* Filters the data batch b[0, len) whose header h a batch_validate_stored accepted. fn NULL:
 * every record goes (no record is decoded). keep_empty: when no record is kept, the batch's
 * empty header is written (BF5) instead of BATCH_FILTER_DROP. A rewritten batch (valid under
 * V1-V9, V10c-V13c, V14):
 *   BF1 keeps baseOffset, partitionLeaderEpoch, lastOffsetDelta, producer id, epoch and base
 *       sequence, the transactional and timestamp-type attributes, and baseTimestamp;
 *   BF2 holds the kept records byte for byte in their order (offset and timestamp deltas
 *       unchanged, so offsets and timestamps are), recordCount = their number;
 *   BF3 is compressed again with the original codec (default level) when it was compressed;
 *   BF4 has maxTimestamp = the kept records' largest timestamp (CreateTime; Kafka's builder
 *       recomputes it), or the original's (LogAppendTime); then its CRC-32C is computed;
 *   BF5 empty (no record kept, keep_empty): the 61-byte header alone, codec none, no delete
 *       horizon, baseTimestamp = maxTimestamp = the original maxTimestamp (Kafka's
 *       writeEmptyHeader).
 * *out_batch / *out_len point into s until its next use; *out_h is the new header. Returns 0,
 * RT_E_CORRUPT (a record that does not decode), -ENOMEM, or fn's error. O(batch size). */
int batch_filter(const uint8_t *b, size_t len, const struct batch_header *h, bool keep_empty,
                 batch_filter_fn fn, void *ctx, struct batch_filter_scratch *s,
                 enum batch_filter_result *result, const uint8_t **out_batch, size_t *out_len,
                 struct batch_header *out_h);

/* batch_filter with KIP-534's delete horizon (docs/format.md A.9 CL8, B.2 attribute bit 6).
 * horizon_ms < 0: as batch_filter. Else, when b has no delete horizon yet and either b is a
 * control batch (its caller asks only for a marker whose transaction has no data left) or a
 * record kept is a tombstone:
 *   BF6 the result is rewritten (never BATCH_FILTER_WHOLE) with attribute bit 6 set and
 *       baseTimestamp = horizon_ms; under CreateTime each kept record's timestampDelta is
 *       re-encoded as its timestamp − horizon_ms (its other bytes unchanged, its length varint
 *       recomputed), so every record's timestamp stays; under LogAppendTime the deltas stay
 *       (readers take maxTimestamp). A record whose timestamp − horizon_ms overflows i64 makes
 *       the batch keep no horizon (filtered as batch_filter would).
 * A control batch needs an fn that keeps its record. BF5's empty header never has bit 6. */
int batch_filter_horizon(const uint8_t *b, size_t len, const struct batch_header *h,
                         bool keep_empty, int64_t horizon_ms, batch_filter_fn fn, void *ctx,
                         struct batch_filter_scratch *s, enum batch_filter_result *result,
                         const uint8_t **out_batch, size_t *out_len, struct batch_header *out_h);

void batch_filter_scratch_free(struct batch_filter_scratch *s);

#endif /* RT_BATCH_FILTER_H */
