/*
 * records.h — record-level validation of one RecordBatch, compressed or not: the one check that
 * appends from outside (rt_append_batch), the record iterator and verify share, so a batch is
 * held to the same rules whichever path meets it. The iterator itself is public (ringtail.h).
 */
#ifndef RT_RECORDS_H
#define RT_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "compression.h"

/* Bound on a compressed batch's decompressed records section. Kafka itself has none (a consumer
 * decompresses whatever it is sent); ringtail caps it so a decompression bomb costs at most this
 * much memory. A batch may hold at most batch_size_max_bytes (1 MiB by default, 64 MiB at most)
 * compressed; 64 MiB leaves a compression ratio of 64 for a default-sized batch, beyond what
 * Kafka's codecs reach on real records. A larger section is RT_E_CORRUPT. */
#define RECORDS_DECOMPRESSED_MAX_BYTES ((size_t)64 << 20)

/* Checks the records of the batch at batch[0, len) whose header h batch_validate has accepted
 * (so len == 12 + length and the codec is 0..4): for a compressed batch, decompresses the
 * records section into *scratch (bounded by RECORDS_DECOMPRESSED_MAX_BYTES) first; then
 * batch_records_check (V10-V15: lastOffsetDelta == recordCount - 1, exactly recordCount records
 * that decode and end at the section's end, offset deltas 0..n-1 in order, CreateTime record
 * timestamps representable and <= maxTimestamp). On success [*rec_pos, *rec_end) is the
 * records section (inside batch, or inside scratch until its next use); either may be NULL.
 * Returns 0, RT_E_CORRUPT (*why: a static reason, damaged stream or a rule; why may be NULL),
 * RT_E_UNSUPPORTED_COMPRESSION, or -ENOMEM. One thread at a time per scratch buffer.
 * O(decompressed size). */
int records_validate(const uint8_t *batch, size_t len, const struct batch_header *h,
                     struct compression_buffer *scratch, const uint8_t **rec_pos,
                     const uint8_t **rec_end, const char **why);

/* records_validate of a batch read from a segment; `cleaned`: the log cleaner wrote it
 * (batch_validate_stored: V10c and V13c; an empty compressed batch is not decompressed). */
int records_validate_stored(const uint8_t *batch, size_t len, const struct batch_header *h,
                            bool cleaned, struct compression_buffer *scratch,
                            const uint8_t **rec_pos, const uint8_t **rec_end, const char **why);

/* records_validate for an append (V16 instead of V14, batch.c): the records' largest timestamp
 * goes to *records_max_timestamp_out instead of being compared with maxTimestamp. */
int records_validate_append(const uint8_t *batch, size_t len, const struct batch_header *h,
                            struct compression_buffer *scratch, int64_t *records_max_timestamp_out,
                            const char **why);

/* rt_records_init and rt_records_next for the layers that iterate on their own behalf: the
 * same contract, and the caller's error detail is not cleared (LG3 in log.h). */
int records_init(struct rt_records *it, const rt_fetch *fetch, int64_t start_offset);
int records_next(struct rt_records *it, struct rt_record_view *out);

#endif /* RT_RECORDS_H */
