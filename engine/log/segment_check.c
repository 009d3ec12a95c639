/*
 * segment_check.c — the checks rt_open and rt_verify share (see segment_check.h for what each
 * decides and why there is only one copy). Rules, docs/format.md being normative:
 *
 *   SC1  a sealed segment is whole batches to its last byte; their headers parse (V1-V5) and
 *        baseOffsets are dense from the file name's base. (Payload CRCs are not read here:
 *        readers check every batch before serving it, verify checks all of them.)
 *   SC2  every .index entry is the start position of a walked batch whose offsets contain the
 *        entry's offset; entries beyond the data are stale.
 *   SC3  every .timeindex entry's offset lies in the segment and its timestamp is not above the
 *        largest batch maxTimestamp.
 *   SC4  a .txnindex holds exactly one entry per ABORT marker of its segment, in marker order:
 *        producerId and lastOffset of the marker, firstOffset of the transaction's first batch
 *        in the partition (the marker's own offset when the transaction had no data here), and
 *        lastStableOffset = the first offset of the oldest transaction still open after the
 *        marker, else marker + 1. A marker whose record does not parse may have been an ABORT:
 *        its entry is optional, and a rebuild writes one. When the partition's log start is
 *        above 0 a transaction may have begun before it: then firstOffset and lastStableOffset
 *        can only be bounded (firstOffset <= what the walk saw, lastStableOffset <= what the
 *        walk computes).
 *
 *   SC6  SC4's walk reads headers, not their CRC, and a marker's producerId, attributes and
 *        control type lie under the CRC: one flipped bit there makes the walk see a marker of
 *        another producer, a COMMIT, or no marker at all. So when a segment's .txnindex
 *        disagrees with the walk, the segment's batches are validated (batch_validate, CRC
 *        included); if one fails, the disagreement may be the log's damage, not the index's,
 *        and the index — written when the marker was whole — is kept: rebuilding it from the
 *        damaged header would drop the entry that keeps read_committed from serving the aborted
 *        transaction. The walk stops there (its state past a batch it cannot trust is unknown),
 *        so the .txnindex files of the later segments are kept as they are too. Verify reports
 *        the .log (its CRC), and readers refuse the damaged batch naming the file.
 *
 * SC1-SC4 are the checks behind docs/format.md I (OV1 walks SC1, OV2 is SC2 and SC3, OV3 is SC4;
 * SC6 is OV3's exception for a log that fails a CRC).
 *
 *   SC5  (docs/format.md A.6 RS3) past the last batch of the newest segment of a directory that
 *        was not closed cleanly lie zeros, stale batches of a recycled file, or a torn write:
 *        the log ends there whichever it is, and segment_tail_classify tells the three apart the
 *        same way for open (which counts only a torn tail in tail_bytes_ignored) and verify
 *        (which reports only a torn tail). A stale batch is never part of the log: its
 *        baseOffset is below the segment's base, so it can never be the next offset (RS1).
 *
 *   SC7  (docs/format.md I OV8) in that same newest segment of a directory not closed cleanly,
 *        index entries past the log's end are what a crash leaves, not damage: the log's tail
 *        was lost (a power loss rolls back what was not yet fdatasynced; a torn tail is cut)
 *        while entries describing it survived (index pages written back on their own, the
 *        .txnindex entry of a marker whose batch never became durable). A crash leaves them as
 *        a suffix: .index entries whose position is at or past the end of the last batch *and*
 *        whose offset is at or past the log's next offset, .timeindex entries whose offset is,
 *        .txnindex entries whose marker is (txn_index_past_end). Open drops them (the newest
 *        segment's indexes are rebuilt by the recovery scan, its .txnindex is cut and
 *        replayed), verify reports them as a warning naming the file and the entry's byte
 *        offset, and the entries before them are checked as always. In a sealed segment, or a
 *        cleanly closed directory, entries past the end are damage (SC2-SC4) and still
 *        reported. Not SC7: a producer snapshot past the log's end (OV5) — one is written only
 *        after the log below it was fdatasynced (a seal, a clean close), so no crash leaves it.
 */
#include "segment_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "index/offset_index.h"
#include "index/time_index.h"

static bool zero_from(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

enum segment_tail segment_tail_classify(const uint8_t *log, uint64_t log_bytes, uint64_t pos,
                                        uint64_t window, int64_t next_offset, uint64_t *found_at)
{
    *found_at = log_bytes;
    if (pos >= log_bytes)
        return SEGMENT_TAIL_ZERO;
    uint64_t end = log_bytes - pos < window ? log_bytes : pos + window;
    if (zero_from(log + pos, end - pos))
        return SEGMENT_TAIL_ZERO;
    for (uint64_t q = pos; q + BATCH_HEADER_BYTES <= end; q++) {
        if (log[q + BATCH_OFF_MAGIC] != 2)
            continue;
        uint64_t size = (uint64_t)be32_load(log + q + BATCH_OFF_LENGTH) + BATCH_LOG_OVERHEAD_BYTES;
        if (size < BATCH_HEADER_BYTES || size > log_bytes - q)
            continue;
        struct batch_header h;
        const char *why = NULL;
        if (batch_validate(log + q, (size_t)size, 0, &h, &why) != 0)
            continue;
        *found_at = q;
        return h.base_offset < next_offset ? SEGMENT_TAIL_STALE : SEGMENT_TAIL_TORN;
    }
    return SEGMENT_TAIL_TORN;
}

static void check_run(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                      bool zero_tail_ok, bool gaps_ok, const uint8_t *oidx, uint32_t oidx_entries,
                      const uint8_t *tidx, uint32_t tidx_entries, struct segment_check *out);

/* SC7: an .index entry at or past both ends of the walked log. */
static bool oidx_past_end(const uint8_t *e, int64_t base_offset, const struct segment_check *walk)
{
    int64_t off = base_offset + (int32_t)be32_load(e);
    return be32_load(e + 4) >= walk->data_bytes && off >= walk->next_offset;
}

void segment_check_run(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                       bool zero_tail_ok, const uint8_t *oidx, uint32_t oidx_entries,
                       const uint8_t *tidx, uint32_t tidx_entries, struct segment_check *out)
{
    segment_check_run_gaps(log, log_bytes, base_offset, zero_tail_ok, false, oidx, oidx_entries,
                           tidx, tidx_entries, out);
}

void segment_check_run_gaps(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                            bool zero_tail_ok, bool gaps_ok, const uint8_t *oidx,
                            uint32_t oidx_entries, const uint8_t *tidx, uint32_t tidx_entries,
                            struct segment_check *out)
{
    if (!zero_tail_ok || (oidx_entries == 0 && tidx_entries == 0)) {
        check_run(log, log_bytes, base_offset, zero_tail_ok, gaps_ok, oidx, oidx_entries, tidx,
                  tidx_entries, out);
        return;
    }
    /* SC7: where the log ends decides which entries are a crash's leftovers; the walk that
     * knows it also matches the entries, so it runs twice. */
    struct segment_check walk;
    check_run(log, log_bytes, base_offset, true, gaps_ok, NULL, 0, NULL, 0, &walk);
    uint32_t o = oidx_entries, t = tidx_entries;
    while (o > 0 &&
           oidx_past_end(oidx + (size_t)(o - 1) * OFFSET_INDEX_ENTRY_BYTES, base_offset, &walk))
        o--;
    while (t > 0 &&
           base_offset + (int32_t)be32_load(tidx + (size_t)(t - 1) * TIME_INDEX_ENTRY_BYTES + 8) >=
               walk.next_offset)
        t--;
    check_run(log, log_bytes, base_offset, true, gaps_ok, oidx, o, tidx, t, out);
    out->oidx_past_end = oidx_entries - o;
    out->tidx_past_end = tidx_entries - t;
}

static void check_run(const uint8_t *log, uint64_t log_bytes, int64_t base_offset,
                      bool zero_tail_ok, bool gaps_ok, const uint8_t *oidx, uint32_t oidx_entries,
                      const uint8_t *tidx, uint32_t tidx_entries, struct segment_check *out)
{
    memset(out, 0, sizeof(*out));
    out->next_offset = base_offset;
    out->max_timestamp = -1;
    out->max_timestamp_offset = base_offset;
    out->oidx_bad = out->tidx_bad = SEGMENT_CHECK_SOUND;

    /* SC2 shape first (monotonic, no zero entries): then entries are sorted by position and
     * can be matched against the walk in one pass. */
    const char *why = NULL;
    uint32_t bad = 0;
    bool oidx_shaped = offset_index_check(oidx, (size_t)oidx_entries * OFFSET_INDEX_ENTRY_BYTES,
                                          log_bytes, &why, &bad) == 0;
    if (!oidx_shaped) {
        out->oidx_bad = bad;
        out->oidx_why = why ? why : "invalid";
    }
    uint32_t j = 0; /* next .index entry to match */

    uint64_t pos = 0;
    int64_t expect = base_offset;
    while (pos < log_bytes) {
        uint64_t left = log_bytes - pos;
        if (zero_from(log + pos, left < 12 ? left : 12)) {
            if (zero_from(log + pos, left) && zero_tail_ok)
                break;
            out->log_rc = RT_E_CORRUPT;
            out->log_why = "zero-filled bytes where a batch should start (only the newest "
                           "segment after a crash has preallocated space)";
            break;
        }
        struct batch_header h;
        int64_t size = batch_size_at(log + pos, (size_t)left, &why);
        if (size < 0 || batch_header_parse(log + pos, (size_t)size, &h, &why) != 0) {
            out->log_rc = RT_E_CORRUPT;
            out->log_why = why ? why : "bad batch header";
            break;
        }
        /* SC1; a cleaned segment (docs/format.md A.9 CL1) may skip offsets, never go back. */
        if (gaps_ok ? h.base_offset < expect : h.base_offset != expect) {
            out->log_rc = RT_E_CORRUPT;
            out->log_why =
                gaps_ok ? (pos == 0 ? "first batch's baseOffset is below the segment's base offset "
                                      "(its file name)"
                                    : "batch baseOffset is not above the previous batch's "
                                      "lastOffset")
                : pos == 0 ? "first batch's baseOffset is not the segment's base offset "
                             "(its file name)"
                           : "batch baseOffset is not the previous batch's lastOffset + 1";
            break;
        }
        int64_t last = batch_last_offset(&h);
        if (last - base_offset > INT32_MAX) {
            out->log_rc = RT_E_CORRUPT;
            out->log_why = "batch ends beyond the segment's base offset + 2^31 - 1 (offset index "
                           "entries are i32)";
            break;
        }
        if (oidx_shaped && out->oidx_bad == SEGMENT_CHECK_SOUND) {
            for (; j < oidx_entries; j++) {
                const uint8_t *e = oidx + (size_t)j * OFFSET_INDEX_ENTRY_BYTES;
                uint32_t p = be32_load(e + 4);
                int64_t off = base_offset + (int32_t)be32_load(e);
                if (p > pos)
                    break;
                if (p < pos || off < h.base_offset || off > last) {
                    out->oidx_bad = j;
                    out->oidx_why = p < pos ? "entry points inside a batch, not at its start"
                                            : "entry's offset is outside the batch it points at";
                    break;
                }
            }
        }
        if (h.max_timestamp > out->max_timestamp) {
            out->max_timestamp = h.max_timestamp;
            out->max_timestamp_offset = last;
        }
        expect = last + 1;
        pos += (uint64_t)size;
    }
    out->log_bad_position = out->log_rc ? pos : 0;
    out->data_bytes = pos;
    out->next_offset = expect;
    if (oidx_shaped && out->oidx_bad == SEGMENT_CHECK_SOUND && j < oidx_entries) {
        out->oidx_bad = j;
        out->oidx_why = be32_load(oidx + (size_t)j * OFFSET_INDEX_ENTRY_BYTES + 4) < pos
                            ? "entry points inside a batch, not at its start"
                            : "entry points beyond the segment's last batch";
    }

    if (time_index_check(tidx, (size_t)tidx_entries * TIME_INDEX_ENTRY_BYTES, &why, &bad) != 0) {
        out->tidx_bad = bad;
        out->tidx_why = why ? why : "invalid";
        return;
    }
    for (uint32_t i = 0; i < tidx_entries; i++) {
        const uint8_t *e = tidx + (size_t)i * TIME_INDEX_ENTRY_BYTES;
        int64_t ts = (int64_t)be64_load(e);
        int64_t off = base_offset + (int32_t)be32_load(e + 8);
        if (off >= expect) {
            out->tidx_bad = i;
            out->tidx_why = "entry's offset is beyond the segment's last offset";
            return;
        }
        if (ts > out->max_timestamp) {
            out->tidx_bad = i;
            out->tidx_why = "entry's timestamp is above every batch's maxTimestamp";
            return;
        }
    }
}

/* ---- SC4 --------------------------------------------------------------------------------- */

void txn_walk_init(struct txn_walk *w, int64_t log_start)
{
    memset(w, 0, sizeof(*w));
    w->complete = log_start == 0;
}

void txn_walk_free(struct txn_walk *w)
{
    free(w->open);
    memset(w, 0, sizeof(*w));
}

static int walk_open_index(const struct txn_walk *w, int64_t pid)
{
    for (uint32_t i = 0; i < w->count; i++)
        if (w->open[i].producer_id == pid)
            return (int)i;
    return -1;
}

static int walk_begin(struct txn_walk *w, int64_t pid, int64_t first)
{
    if (w->count == w->capacity) {
        uint32_t cap = w->capacity ? w->capacity * 2 : 8;
        struct txn_walk_open *o = realloc(w->open, (size_t)cap * sizeof(*o));
        if (!o)
            return -ENOMEM;
        w->open = o;
        w->capacity = cap;
    }
    w->open[w->count++] = (struct txn_walk_open){pid, first}; /* batches come in offset order */
    return 0;
}

/* complete: the walk saw every transaction's start (exact firstOffset and LSO); unknown: the
 * marker's type could not be read, so the entry is optional. */
typedef int (*txn_expect_fn)(void *ctx, const struct txn_index_entry *expected, bool complete,
                             bool unknown);

/* Walks one segment, calling fn with the entry SC4 requires for each ABORT marker. */
static int walk_segment(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                        txn_expect_fn fn, void *ctx)
{
    uint64_t pos = 0;
    while (pos < log_bytes) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(log + pos, (size_t)(log_bytes - pos), &why);
        if (size < 0 || batch_header_parse(log + pos, (size_t)size, &h, &why) != 0)
            return 0; /* the end of the data (or damage the log check reports) */
        pos += (uint64_t)size;
        if (h.producer_id < 0 || !batch_is_transactional(&h))
            continue;
        int i = walk_open_index(w, h.producer_id);
        if (!batch_is_control(&h)) {
            if (i < 0) {
                int rc = walk_begin(w, h.producer_id, h.base_offset);
                if (rc)
                    return rc;
            }
            continue;
        }
        int64_t first = -1;
        if (i >= 0) {
            first = w->open[i].first_offset;
            memmove(w->open + i, w->open + i + 1, (w->count - (uint32_t)i - 1) * sizeof(*w->open));
            w->count--;
        }
        /* A marker whose record does not parse (payload damage: readers refuse the batch) may
         * have been an ABORT: its entry may be there or not; a rebuild writes one, so that
         * read_committed never serves what it may have aborted. */
        int type = control_batch_type(log + pos - (uint64_t)size, (size_t)size);
        if (type == CONTROL_COMMIT)
            continue;
        struct txn_index_entry e = {
            .producer_id = h.producer_id,
            .first_offset = first >= 0 ? first : h.base_offset,
            .last_offset = h.base_offset,
            .last_stable_offset = w->count ? w->open[0].first_offset : h.base_offset + 1,
        };
        int rc = fn(ctx, &e, w->complete, type != CONTROL_ABORT);
        if (rc)
            return rc;
    }
    return 0;
}

struct compare_ctx {
    const struct txn_index *idx;
    uint32_t n; /* the entries compared: idx's first n */
    uint32_t k;
    const char *why;
};

static int compare_one(void *ctx, const struct txn_index_entry *want, bool complete, bool unknown)
{
    struct compare_ctx *c = ctx;
    uint32_t n = c->n;
    if (unknown) {
        struct txn_index_entry next;
        if (c->k >= n)
            return 0;
        txn_index_get(c->idx, c->k, &next);
        if (next.last_offset != want->last_offset)
            return 0; /* no entry for it: acceptable */
    }
    if (c->k >= n) {
        c->why = "an ABORT marker has no entry (the index is missing or short)";
        return -EBADMSG;
    }
    struct txn_index_entry got;
    txn_index_get(c->idx, c->k, &got);
    if (got.producer_id != want->producer_id || got.last_offset != want->last_offset) {
        c->why = "entry does not match the segment's next ABORT marker";
        return -EBADMSG;
    }
    if (complete ? got.first_offset != want->first_offset : got.first_offset > want->first_offset) {
        c->why = "entry's firstOffset is not the aborted transaction's first offset";
        return -EBADMSG;
    }
    if (complete ? got.last_stable_offset != want->last_stable_offset
                 : got.last_stable_offset > want->last_stable_offset) {
        c->why = "entry's lastStableOffset is not the LSO after the ABORT marker";
        return -EBADMSG;
    }
    c->k++;
    return 0;
}

bool segment_batches_valid(const uint8_t *log, uint64_t log_bytes)
{
    uint64_t pos = 0;
    while (pos < log_bytes) {
        const char *why = NULL;
        struct batch_header h;
        int64_t size = batch_size_at(log + pos, (size_t)(log_bytes - pos), &why);
        if (size < 0)
            return zero_from(log + pos, log_bytes - pos); /* preallocated space is no batch */
        if (batch_validate(log + pos, (size_t)size, 0, &h, &why) != 0)
            return false;
        pos += (uint64_t)size;
    }
    return true;
}

uint32_t txn_index_past_end(const struct txn_index *idx, int64_t next_offset)
{
    uint32_t n = idx ? txn_index_count(idx) : 0, k = n;
    struct txn_index_entry e;
    while (k > 0) {
        txn_index_get(idx, k - 1, &e);
        if (e.last_offset < next_offset)
            break;
        k--;
    }
    return n - k;
}

int txn_walk_compare(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                     const struct txn_index *idx, const char **why, uint32_t *bad_entry)
{
    return txn_walk_compare_prefix(w, log, log_bytes, idx, idx ? txn_index_count(idx) : 0, why,
                                   bad_entry);
}

int txn_walk_compare_prefix(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                            const struct txn_index *idx, uint32_t entries, const char **why,
                            uint32_t *bad_entry)
{
    if (w->stopped)
        return 0; /* SC6: past a damaged segment the indexes are kept as they are */
    uint32_t count = idx ? txn_index_count(idx) : 0;
    struct compare_ctx c = {.idx = idx, .n = entries < count ? entries : count};
    int rc = walk_segment(w, log, log_bytes, compare_one, &c);
    if (rc == 0 && c.k < c.n) {
        c.why = "entry for no ABORT marker of the segment";
        rc = -EBADMSG;
    }
    if (rc == -EBADMSG && !segment_batches_valid(log, log_bytes)) {
        /* SC6: the walk read a header the CRC does not vouch for; the index stays. */
        w->stopped = true;
        return 0;
    }
    if (rc == -EBADMSG) {
        if (why)
            *why = c.why;
        if (bad_entry)
            *bad_entry = c.k;
    }
    return rc;
}

struct rebuild_ctx {
    struct txn_index *idx;
    bool rebuild;
};

static int rebuild_one(void *ctx, const struct txn_index_entry *want, bool complete, bool unknown)
{
    (void)complete;
    (void)unknown;
    struct rebuild_ctx *r = ctx;
    return r->rebuild ? txn_index_append(r->idx, want) : 0;
}

int txn_walk_rebuild(struct txn_walk *w, const uint8_t *log, uint64_t log_bytes,
                     struct txn_index *idx, bool rebuild)
{
    struct rebuild_ctx r = {.idx = idx, .rebuild = rebuild};
    return walk_segment(w, log, log_bytes, rebuild_one, &r);
}
