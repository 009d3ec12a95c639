/*
 * consume_walk.h — the thin Fetch client's read of one partition's records (bench_consume.c):
 * whole RecordBatch v2 headers walked in order, read_committed as Kafka's consumer reads them
 * (the answer's aborted list, producer ids, control markers). It owns nothing and never reads a
 * byte past `len`: a header is read only when 61 bytes remain, a batch only when its stated size
 * fits (fuzzed by fuzz/fuzz_kafka_consume_walk.c). Bench code: it counts, it never validates
 * (no CRC, no record parsing).
 */
#ifndef RT_BENCH_CONSUME_WALK_H
#define RT_BENCH_CONSUME_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"
#include "tools/kafka/proto/kmsg.h"

#define CONSUME_WALK_PRODUCER_ID_OFF 43 /* int64 producerId in a v2 batch header */

/* The records of one partition answer: whole batches walked by their headers (lengths checked
 * against what was decoded), read_committed as Kafka's consumer reads them: a transactional
 * batch of a producer whose aborted transaction (from the answer's list) has begun at or before
 * it is dropped until that producer's marker; control batches are not records. *next: the
 * offset after the last whole batch. */
static inline void consume_walk_batches(const uint8_t *p, size_t len,
                                        const struct kmsg_fetch_aborted *ab, int32_t ab_count,
                                        int64_t *next, uint64_t *records, uint64_t *sum)
{
    int64_t active[16]; /* producers inside an aborted transaction here */
    int n_active = 0, ai = 0;
    while (len >= RT_BATCH_HEADER_BYTES) {
        int64_t base = (int64_t)kp_load_be64(p + RT_BATCH_OFF_BASE_OFFSET);
        size_t size = (size_t)kp_load_be32(p + RT_BATCH_OFF_LENGTH) + RT_BATCH_LOG_OVERHEAD_BYTES;
        if (size < RT_BATCH_HEADER_BYTES || size > len)
            break; /* a partial last batch: fetched again next time */
        int64_t last = base + (int64_t)kp_load_be32(p + RT_BATCH_OFF_LAST_OFFSET_DELTA);
        uint16_t attrs =
            (uint16_t)(p[RT_BATCH_OFF_ATTRIBUTES] << 8 | p[RT_BATCH_OFF_ATTRIBUTES + 1]);
        int64_t pid = (int64_t)kp_load_be64(p + CONSUME_WALK_PRODUCER_ID_OFF);
        for (; ai < ab_count && ab[ai].first_offset <= last; ai++)
            if (n_active < 16)
                active[n_active++] = ab[ai].producer_id;
        int hit = -1;
        for (int i = 0; i < n_active; i++)
            if (active[i] == pid)
                hit = i;
        if (attrs & 0x20) { /* a control batch: a marker ends its producer's transaction */
            if (hit >= 0)
                active[hit] = active[--n_active];
        } else if (!((attrs & 0x10) && hit >= 0)) { /* not an aborted transaction's batch */
            *records += kp_load_be32(p + RT_BATCH_HEADER_BYTES - 4);
        }
        *sum += p[size - 1]; /* the batch's last byte: the bytes are in user space */
        *next = last + 1;
        p += size;
        len -= size;
    }
}

#endif /* RT_BENCH_CONSUME_WALK_H */
