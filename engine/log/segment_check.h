/*
 * segment_check.h — the one check that rt_open and rt_verify share for a segment's files.
 *
 * Open and verify must agree (issue 10, defect 10): for every directory, verify reports a
 * problem exactly when open would refuse or repair, and what open repaired is no longer
 * reported. So both decide with these functions, over the same bytes:
 *
 *   segment_check_run  — one walk of a .log's batch headers (lengths, magic, base offsets dense
 *                        from the file name's base; no payload CRC, which readers and verify
 *                        check) and the cross-check of its .index and .timeindex entries
 *                        against the batches walked. A bad log is refused by open; a bad index
 *                        is rebuilt by open. Both are problems for verify.
 *   txn_walk_segment   — the aborted-transaction rule SC4: a segment's .txnindex holds exactly
 *                        one entry per ABORT marker in the segment, in order, each with the
 *                        marker's producer id and offset, the transaction's first offset in the
 *                        partition and the LSO after the marker (as partition.c writes it). The
 *                        walk carries the open transactions from segment to segment, so it runs
 *                        over a partition's segments in order from its log start. Open rebuilds a
 *                        .txnindex that breaks SC4 (missing, short, torn, wrong entries); verify
 *                        reports it.
 *   segment_tail_classify — SC5: what follows the newest segment's last batch after a crash
 *                        (zeros, a recycled file's stale batches, a torn write); open cuts all
 *                        three and counts only a torn one, verify reports only a torn one.
 *
 * Pure functions over bytes: they never read outside the buffers they are given and never
 * allocate except txn_walk's open-transaction list. Cost: one read of every batch header of the
 * segment (and the one record of each control batch), plus O(entries) for the indexes.
 */
#ifndef RT_SEGMENT_CHECK_H
#define RT_SEGMENT_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "index/txn_index.h"

#define SEGMENT_CHECK_SOUND UINT32_MAX /* an index with no bad entry */

struct segment_check {
    int log_rc;          /* 0, or RT_E_CORRUPT: the walk stopped at a bad header */
    const char *log_why; /* static reason when log_rc != 0 */
    uint64_t log_bad_position;
    uint64_t data_bytes;   /* end of the last batch walked */
    int64_t next_offset;   /* last offset walked + 1 (the base when none) */
    int64_t max_timestamp; /* largest batch maxTimestamp, -1 when none */
    int64_t max_timestamp_offset;
    uint32_t oidx_bad; /* first bad .index entry, or SEGMENT_CHECK_SOUND */
    const char *oidx_why;
    uint32_t tidx_bad; /* first bad .timeindex entry, or SEGMENT_CHECK_SOUND */
    const char *tidx_why;
    /* SC7 (zero_tail_ok only): the last entries of each index that lie past the log's end —
     * what a crash leaves when the log's tail is lost and its index entries are not. They are
     * not checked (oidx_bad/tidx_bad judge the entries before them): open drops them, verify
     * warns. Always 0 when zero_tail_ok is false: there they are damage. */
    uint32_t oidx_past_end;
    uint32_t tidx_past_end;
};

/* Walks log[0, log_bytes) of the segment starting at base_offset. zero_tail_ok: a zero-filled
 * tail after the last batch is preallocated space (the newest segment after a crash), not
 * damage, and so are index entries past the log's end (SC7: counted in *_past_end, at the cost
 * of a second header walk). oidx/tidx are the live entries of the indexes (8 and 12 bytes
 * each). */
void segment_check_run(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                       bool zero_tail_ok, const uint8_t *oidx, uint32_t oidx_entries,
                       const uint8_t *tidx, uint32_t tidx_entries, struct segment_check *out);

/* As segment_check_run; gaps_ok: a segment the log cleaner wrote (docs/format.md A.9 CL1), whose
 * batches' base offsets only increase (the first at or above the file name's base) instead of
 * being dense. */
void segment_check_run_gaps(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                            bool zero_tail_ok, bool gaps_ok, const uint8_t *oidx,
                            uint32_t oidx_entries, const uint8_t *tidx, uint32_t tidx_entries,
                            struct segment_check *out);

/* What follows the last batch of the newest segment of a directory that was not closed cleanly
 * (docs/format.md A.6 RS3). The log ends there in every case; this says only how open counts
 * it and whether verify reports it. */
enum segment_tail {
    SEGMENT_TAIL_ZERO,  /* zeros up to the window's end: preallocated or pre-written space */
    SEGMENT_TAIL_STALE, /* the first CRC-valid batch after it has a baseOffset below the log's
                           next offset: stale bytes of a recycled file (and before them, at most
                           the rest of a batch that was being overwritten, or a torn one) */
    SEGMENT_TAIL_TORN,  /* anything else: a torn write, or damage followed by batches the cut
                           drops */
};

/* The window open and verify classify (and a torn write is looked for in): a stale batch
 * boundary lies within one batch of the log's end, and batches are at most batch_size_max_bytes
 * (1 MiB by default); a larger stale batch straddling the end reads as a torn tail. */
#define SEGMENT_TAIL_WINDOW_BYTES (2u << 20)

/* Classifies log[pos, pos + window) (bounded by log_bytes) for a log whose next offset is
 * next_offset: a byte-by-byte search for the first position holding a CRC-valid batch
 * (batch_validate), from pos. *found_at: where that batch starts (log_bytes when none). Cost:
 * one pass over the window, a CRC only where the magic byte and length fit. */
enum segment_tail segment_tail_classify(const uint8_t *log, uint64_t log_bytes, uint64_t pos,
                                        uint64_t window, int64_t next_offset, uint64_t *found_at);

/* True when every batch of log[0, log_bytes) passes batch_validate (lengths, CRC, records),
 * a zero-filled tail after the last one allowed (SC6). Cost: one read of every byte. */
bool segment_batches_valid(const uint8_t *log, uint64_t log_bytes);

/* The open transactions of a partition, carried from segment to segment. */
struct txn_walk {
    struct txn_walk_open *open; /* ascending by first_offset */
    uint32_t count;
    uint32_t capacity;
    bool complete; /* the walk began at offset 0: every transaction's start was seen */
    bool stopped;  /* SC6: a segment that fails a CRC disagreed with its index; later
                      compares agree with whatever the indexes hold */
};

struct txn_walk_open {
    int64_t producer_id;
    int64_t first_offset;
};

/* log_start: the base offset of the partition's first segment. */
void txn_walk_init(struct txn_walk *w, int64_t log_start);
void txn_walk_free(struct txn_walk *w);

/* Compares one segment's .txnindex entries (idx, NULL for none) with SC4. Segments must come in
 * order. Returns 0 when they agree, -EBADMSG (*why, *bad_entry: the first entry that is wrong
 * or missing) when they do not, -ENOMEM. Stops at the first unparsable batch header. SC6: when
 * they disagree and a batch of the segment fails batch_validate, returns 0 (the index is kept)
 * and stops the walk: every later compare returns 0. Cost: a CRC over the segment, only when
 * the index disagrees. */
int txn_walk_compare(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                     const struct txn_index *idx, const char **why, uint32_t *bad_entry);

/* SC7: how many of idx's last entries have a marker (lastOffset) at or past next_offset, the
 * log's end: in the newest segment after a crash, entries of markers the crash took with the
 * log's tail. Open drops them (it cuts the newest .txnindex and replays); verify warns. */
uint32_t txn_index_past_end(const struct txn_index *idx, int64_t next_offset);

/* As txn_walk_compare, over idx's first `entries` entries only (the rest lie past the log's
 * end, SC7). */
int txn_walk_compare_prefix(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                            const struct txn_index *idx, uint32_t entries, const char **why,
                            uint32_t *bad_entry);

/* As txn_walk_compare, but appends the entries SC4 requires to idx (writable, emptied by the
 * caller) when rebuild is true, or only advances the walk when it is false. Returns 0 or the
 * first error of txn_index_append, -ENOMEM. */
int txn_walk_rebuild(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                     struct txn_index *idx, bool rebuild);

#endif /* RT_SEGMENT_CHECK_H */
