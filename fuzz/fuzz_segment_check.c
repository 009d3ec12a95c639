/*
 * fuzz_segment_check.c — libFuzzer target for the check rt_open and rt_verify share
 * (engine/log/segment_check.c): the batch-header walk of a .log with the cross-check of its .index
 * and .timeindex entries, and the aborted-transaction walk (rule SC4) over the same log.
 *
 * Input: byte 0 = flags (bit 0: a zero tail is preallocation), bytes 1-2 and 3-4 = the lengths
 * (big-endian, clamped) of the .index and .timeindex bytes that follow; the rest is the .log.
 * Properties: nothing is read outside the buffers (ASan); a walk that succeeds ends inside the
 * log with next_offset >= base; SC7's entries past the end are counted only with bit 0 set; the .txnindex the SC4 walk rebuilds from a log is accepted by
 * the SC4 comparison over the same log (what open writes, verify and the next open accept).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment_check.h"
#include "index/txn_index.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_segment_check: %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define BASE_OFFSET 0

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    uint8_t flags = data[0];
    size_t oidx_len = (size_t)data[1] << 8 | data[2];
    size_t tidx_len = (size_t)data[3] << 8 | data[4];
    data += 5;
    size -= 5;
    if (oidx_len > size)
        oidx_len = size;
    if (tidx_len > size - oidx_len)
        tidx_len = size - oidx_len;
    /* Copies so ASan sees each buffer's own end. */
    uint8_t *oidx = malloc(oidx_len + 1), *tidx = malloc(tidx_len + 1);
    size_t log_len = size - oidx_len - tidx_len;
    uint8_t *log = malloc(log_len + 1);
    CHECK(oidx && tidx && log);
    memcpy(oidx, data, oidx_len);
    memcpy(tidx, data + oidx_len, tidx_len);
    memcpy(log, data + oidx_len + tidx_len, log_len);

    struct segment_check chk;
    segment_check_run(log, log_len, BASE_OFFSET, flags & 1, oidx, (uint32_t)(oidx_len / 8), tidx,
                      (uint32_t)(tidx_len / 12), &chk);
    CHECK(chk.data_bytes <= log_len);
    CHECK(chk.next_offset >= BASE_OFFSET);
    if (chk.log_rc != 0)
        CHECK(chk.log_why != NULL && chk.log_bad_position <= log_len);
    /* SC7: entries past the log's end are a suffix of each index, and only after a crash. */
    CHECK(chk.oidx_past_end <= oidx_len / 8 && chk.tidx_past_end <= tidx_len / 12);
    if (!(flags & 1))
        CHECK(chk.oidx_past_end == 0 && chk.tidx_past_end == 0);

    /* SC5/SC6 (the tail after the log's end, and whether every batch is whole): what open and
     * verify decide for a recycled or torn tail must be a position inside the log. */
    uint64_t found = 0;
    enum segment_tail tail = segment_tail_classify(
        log, log_len, chk.data_bytes, SEGMENT_TAIL_WINDOW_BYTES, chk.next_offset, &found);
    (void)tail;
    CHECK(found <= log_len);
    (void)segment_batches_valid(log, log_len);

    /* SC4: rebuild an in-memory .txnindex from the log, then compare it with a fresh walk. */
    struct txn_index idx;
    memset(&idx, 0, sizeof(idx));
    int rc = txn_index_open(&idx, "/nonexistent-fuzz-dir/00000000000000000000.txnindex",
                            BASE_OFFSET, TXN_INDEX_MEMORY, NULL, NULL);
    if (rc == 0) {
        struct txn_walk w;
        txn_walk_init(&w, BASE_OFFSET);
        rc = txn_walk_rebuild(&w, log, log_len, &idx, true);
        txn_walk_free(&w);
        if (rc == 0) {
            const char *why = NULL;
            uint32_t bad = 0;
            txn_walk_init(&w, BASE_OFFSET);
            rc = txn_walk_compare(&w, log, log_len, &idx, &why, &bad);
            txn_walk_free(&w);
            if (rc != 0 && rc != -ENOMEM) {
                fprintf(stderr, "rebuilt .txnindex rejected: %s (entry %u)\n", why ? why : "?",
                        bad);
                CHECK(rc == 0);
            }
            /* SC7 (verify's newest-segment compare): the entries past an end are a suffix, and
             * comparing the rest reads only the index and the log. */
            uint32_t count = txn_index_count(&idx);
            uint32_t past = txn_index_past_end(&idx, chk.next_offset);
            CHECK(past <= count);
            txn_walk_init(&w, BASE_OFFSET);
            (void)txn_walk_compare_prefix(&w, log, log_len, &idx, count - past, &why, &bad);
            txn_walk_free(&w);
        }
        txn_index_close(&idx);
    }
    free(oidx);
    free(tidx);
    free(log);
    return 0;
}
