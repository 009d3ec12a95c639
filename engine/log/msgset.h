/*
 * msgset.h — Kafka message sets of formats v0 and v1 (the "magic 0/1" messages Produce v0-2 and
 * Fetch v0-3 carry), converted to and from RecordBatch v2. docs/format.md §B.9 is the normative
 * layout; engine/log/msgset.c repeats it with the rules MS1-MS12.
 *
 * The public entry points are rt_message_set_upconvert and rt_message_set_downconvert
 * (ringtail.h). They live in the engine because the codecs (compression.c) and the v2 encoder
 * (batch.c) do, and the broker sees only ringtail.h. Nothing here touches a partition: the
 * converted batch goes through rt_append_batch and its validation like any client batch.
 */
#ifndef RT_MSGSET_H
#define RT_MSGSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compression.h"

/* Sizes of the legacy layouts: an entry is offset i64 + size i32 + the message; a message is
 * crc u32, magic i8, attributes i8, [timestamp i64 (v1)], key bytes (i32 length), value bytes. */
#define MSGSET_LOG_OVERHEAD_BYTES 12
#define MSGSET_V0_MIN_BYTES       14 /* crc + magic + attributes + two -1 lengths */
#define MSGSET_V1_MIN_BYTES       22
#define MSGSET_ATTR_CODEC_MASK    0x07
#define MSGSET_ATTR_LOG_APPEND    0x08 /* v1 only */

/* Reusable working memory of one thread's conversions (nothing allocated until first use). */
struct msgset_scratch {
    struct compression_buffer inner; /* a wrapper's decompressed inner set / a v2 section */
    struct compression_buffer out;   /* the compressed output section or wrapper value */
    uint8_t *build;                  /* what is being built: v2 records or legacy messages */
    size_t build_len, build_cap;
    uint8_t *fix; /* a copy of a magic-0 LZ4 frame with its header checksum repaired */
    size_t fix_cap;
};

/* Frees everything a scratch holds; it is empty (zeroed) again. */
void msgset_scratch_free(struct msgset_scratch *sc);

/* Up-conversion (MS1-MS9): the message set [set, set+len) as one RecordBatch v2 (producer id,
 * epoch and base sequence -1, CreateTime, offsets 0..n-1, the first compressed wrapper's codec
 * for the whole batch, uncompressed if none was). *batch_out is malloc'd (free()), its size
 * *batch_len_out <= batch_max_bytes. *magic_out (may be NULL): the messages' format, 0 or 1.
 * Returns 0, RT_E_CORRUPT (*why static), RT_E_UNSUPPORTED_COMPRESSION (codec 4+ in a legacy
 * message), RT_E_RECORD_TOO_LARGE (the batch exceeds batch_max_bytes, or the records 64 MiB),
 * -ENOMEM. Memory: the scratch grows to the decompressed set (at most 64 MiB) and the batch. */
int msgset_upconvert(struct msgset_scratch *sc, const uint8_t *set, size_t len,
                     size_t batch_max_bytes, uint8_t **batch_out, size_t *batch_len_out,
                     int8_t *magic_out, const char **why);

/* Down-conversion (MS10-MS12) of the whole, validated v2 batches in [data, data+len) to messages
 * of format `magic` (0 or 1) written to out[0, cap): control batches are dropped, record
 * headers dropped, records below fetch_offset skipped, a compressed batch becomes one wrapper
 * with the same codec. Batches are converted whole; conversion stops before the first batch
 * whose messages do not fit in what is left of cap (*needed_out: its size when nothing was
 * written, else 0). Counts go to *batches_out and *messages_out; *bytes_out is the size written.
 * Returns 0 (possibly with nothing written: *needed_out says why), RT_E_CORRUPT (a batch or
 * record that does not decode), RT_E_UNSUPPORTED_COMPRESSION (zstd: no v0/v1 codec), -ENOMEM. */
int msgset_downconvert(struct msgset_scratch *sc, const uint8_t *data, size_t len,
                       int64_t fetch_offset, int8_t magic, uint8_t *out, size_t cap,
                       size_t *bytes_out, size_t *needed_out, uint32_t *batches_out,
                       uint64_t *messages_out, const char **why);

#endif /* RT_MSGSET_H */
