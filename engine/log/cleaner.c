/*
 * cleaner.c — the log cleaner (cleaner.h): Kafka's LogCleaner for one partition, in our words.
 * It owns the key map, the decision which batch of a sealed segment is kept, and the writing
 * of the cleaned segment files; the swap's file steps and the checkpoint are
 * cleaner_checkpoint.c's (docs/format.md A.9). It must never touch the active segment, never
 * change a byte of a record it keeps (nor its offset), and never remove a file before the swap
 * that replaces it is committed.
 *
 * A clean (where each step runs: CLB1 below):
 *   1. The cleanable range: the oldest segments, up to the first that is the newest, holds an
 *      offset at or past the last stable offset (no open transaction is cleaned, read_committed
 *      and the LSO stay as they were) or the high watermark, or is younger than
 *      min.compaction.lag.ms (its largest timestamp).
 *   2. A pass: the key map (128-bit key hashes → latest offset, bounded by
 *      rt_options.cleaner_buffer_bytes) is filled from the dirty part, [cleaned_end, end), batch
 *      by batch until the next batch does not fit: mapped_end. Records of aborted transactions
 *      (the .txnindex entries of every segment) and control batches never enter it.
 *   3. The segments below mapped_end are rewritten in groups (consecutive, at most a segment's
 *      size and 2^31 offsets each) from the log start, each group into one new segment named
 *      after its first source, through the swap (CL3-CL5), keeping what CLN1-CLN9 keep.
 *   4. cleaned_end = mapped_end; passes repeat until the whole range was mapped.
 *
 * What is kept (record by record, as Kafka's MemoryRecords.filterTo; docs/format.md A.9):
 *   CLN1  The records of an aborted transaction (a data batch whose producer id and offset lie
 *        inside a .txnindex entry's [firstOffset, lastOffset]) are dropped; a producer's last
 *        batch among them keeps its empty header (CLN2).
 *   CLN2  A producer's last data batch (its producer table entry's newest batch) is never dropped
 *        whole: when none of its records is kept, its empty header is (batch_filter BF5, as
 *        Kafka keeps it), so sequence and epoch checks survive the clean; an empty batch a
 *        former clean kept is kept while it is its producer's last.
 *   CLN3  A data batch at or past mapped_end is kept whole; below it, a record is kept when it
 *        has a key, no later offset of that key is in the map, and it is not a tombstone whose
 *        batch's delete horizon has passed (CLN9) — an expired tombstone is kept still while an
 *        older record of its key was kept (CLN4), or a deleted key would come back.
 *   CLN4  The keys of every kept record are remembered for the pass (a set as large as the key
 *        map; when it is full, no tombstone is dropped in that pass): a tombstone is dropped only
 *        when no record of its key was kept before it (a batch past mapped_end is kept whole
 *        and may hold a record the tombstone still has to hide).
 *   CLN5  A COMMIT or ABORT marker is kept while a batch of its transaction was kept in this pass
 *        (data precede their marker, and every pass walks from the log start), while it is its
 *        producer's last entry (the producer table holds no data batch after it, same epoch:
 *        it keeps the epoch for fencing, Kafka's "last entry is a transaction marker"), or
 *        until its delete horizon has passed (CLN9); a kept ABORT marker keeps its .txnindex
 *        entry, a dropped one drops it.
 *   CLN6  Offsets are never changed: the new segment's batches keep their base offsets and their
 *        records their offset deltas, so offsets skip where records went (CL1).
 *   CLN7  A batch all of whose records are kept is copied byte for byte; one with some kept is
 *        rewritten by batch_filter (BF1-BF5: same baseOffset, lastOffsetDelta, producer fields,
 *        attributes and codec, the kept records byte for byte (BF6 aside), maxTimestamp
 *        recomputed, CRC sealed); one with none kept is dropped (CLN2 aside).
 *   CLN8  A group of one segment of which every batch would be copied whole is not swapped: its
 *        .cleaned files are removed before anything is committed (CL6 would remove them after a
 *        crash), so a clean that changes nothing there costs no fsync (a partition that rolls
 *        often, with max.compaction.lag.ms small, would otherwise rewrite its whole log at each
 *        roll).
 *   CLN9  Delete horizons (KIP-534; docs/format.md A.9 CL8): a clean that keeps a tombstone, or a
 *        marker whose transaction has no batch left (CLN5), in a batch without a horizon
 *        rewrites that batch with one: attribute bit 6 and baseTimestamp = the clean's now +
 *        delete.retention.ms (batch_filter BF6). A later clean drops the tombstone (CLN3) or
 *        the marker once now ≥ that horizon. So both outlive their data by delete.retention.ms
 *        counted from the clean that found the data gone, as Kafka's (not from their own
 *        timestamp: a marker written long ago whose data a clean just removed stays another
 *        delete.retention.ms for consumers still reading the old segments). A clean records
 *        the nearest horizon still ahead of the batches it kept (partition clean_horizon_ms:
 *        Kafka's latestDeleteHorizon, in memory, unknown after a reopen until the next clean);
 *        cleaner_due says a clean is due once it has passed, dirty or not, so an idle
 *        partition's tombstones and markers do go. A delete.retention.ms that overflows now +
 *        it sets no horizon (they are kept).
 *   CLN10 The active segment is never cleaned, so a partition that stops receiving appends
 *        would keep its last records dirty for ever (a roll happened only at an append). As
 *        Kafka's maxSegmentMs for a compacted log (KIP-354: min(segment.ms,
 *        max.compaction.lag.ms)), the shard's housekeeping pass (every second, log.c's hook)
 *        rolls a compacted partition's active segment once it is not empty and older than that
 *        (cleaner_roll_due; age since the segment was created or opened, as the append path's
 *        segment.ms); the segment it sealed is then cleanable and max.compaction.lag.ms makes
 *        the clean due. A dormant newest segment (PA11) is not rolled (its partition wakes at
 *        its next append); the roll is off with the cleaner thread
 *        (rt_test_cleaner_background_set).
 *
 * Where it runs (issue 26: a 256 MiB clean made on the shard thread held every append of that
 * shard for 2.3-2.9 s). As Kafka's LogCleaner threads beside the appenders, with only the swap
 * under the log's lock:
 *   CLB1 The work — the key map (step 2), the filtering and the writing, fdatasyncs and directory
 *        fsync of the .cleaned files (step 3, CL3's first half) — runs on the thread that called
 *        cleaner_clean: the engine's cleaner thread (cleaner_pool.c) or rt_topic_compact's
 *        caller, never a shard thread. Only four short calls run on the partition's shard thread
 *        (SHARD_REQ_CALL, between rounds, so never beside an append of that partition): the
 *        prepare (step 1, CLB2), each group's swap (CL4, CL5's unlinks and renames and the
 *        list change: swap_call; the first one also CL3's recovery point, CLB7), the end of each
 *        pass (cleaned_end, writer state) and the finish (the recovery point vouches for the new
 *        segments). An append waits at most for one of those: a swap's checkpoint store and
 *        renames, never a pass nor the swap's other syncs (CLB7).
 *   CLB2 The worker reads only the segments the prepare call took a reference on and mapped:
 *        the sealed segments of the cleanable range (step 1), never the active one (nor the
 *        newest, which a sleeping partition keeps sealed but reopens at its next append, PA11).
 *        A sealed segment's files never change (PA2) until a swap or a deletion replaces them,
 *        so reading them beside the appends needs no lock. What the worker needs of the writer
 *        state is copied by the prepare call: the topic's compaction and segment configs, the
 *        .txnindex entries of every segment (CLN1), every producer's last batch (CLN2) and
 *        cleaned_end. Later appends do not make the copies wrong: they land past the range;
 *        every transaction with data in the range had ended at the prepare (the range ends at
 *        the LSO), so its ABORT entry is in the copy; a producer's newer last batch lies past
 *        the range, so the copied one is only kept when it need not be (never dropped when it
 *        must be kept).
 *   CLB3 At most one clean of a partition runs at a time: `cleaning` is set by the prepare call
 *        (on the shard thread) and cleared by the worker after its finish call; a prepare that
 *        finds it set starts nothing (the cleaner thread's clean: the partition is offered
 *        again when due) or waits and retries (rt_topic_compact).
 *   CLB4 A group is swapped only when, at the swap on the shard thread, the partition is not
 *        frozen (PA5) nor cancelled (CLB5), its topic is still compacted, and every source of
 *        the group is still in the partition's list, consecutive, the very objects the worker
 *        read, with a newer segment after them. Otherwise nothing is committed: the clean
 *        stops (0 is returned), the worker removes the group's .cleaned files, and the next
 *        clean starts over from the list as it is. So retention, DeleteRecords
 *        (partition_delete_before, partition_delete_records) or a recovery in place (PA12)
 *        that ran during the work never meet a swap of stale files; a segment removed after
 *        its swap is simply the new one removed. Earlier swaps of the same clean stay (each
 *        is complete and committed on its own, CL4).
 *   CLB5 Topic deletion and close cancel (clean_cancel: set, never cleared) before the
 *        partition's directory moves or the partition is closed, and wait until `cleaning` is
 *        clear (cleaner_cancel, cleaner_wait; the cleaner thread's own stop, cleaner_pool.c CLP3). The worker
 *        reads the flag at every batch and the swap call checks it (CLB4), so a cancelled clean
 *        swaps nothing more and ends within one batch or one call; the prepare call sets
 *        `cleaning` before it reads the flag and the canceller sets the flag before it reads
 *        `cleaning` (both seq_cst), so no clean starts unseen.
 *   CLB6 The worker's references keep its segments' mappings (and their inodes: a segment a
 *        reader holds is never recycled, PA6) valid while it reads, even after retention or a
 *        swap took them off the list; the worker's last reference may free them.
 *   CLB7 The swap call holds the shard thread for what must be atomic with the list change and
 *        no more (measured: 7 syncs, 20-70 ms a swap on a loaded VM, before): the commit (CL4:
 *        one checkpoint replacement, fdatasync + rename + directory fsync) and CL5's unlinks and
 *        renames (no sync). The recovery point stops naming the job's segments once, at the
 *        clean's first swap call (CL3 for every later swap too: nothing vouches for them again
 *        before finish_call), not at every swap. The rest of CL5 — the directory fsync that
 *        makes the renames durable, then the checkpoint without the swap — is the worker's
 *        (settle), once per pass: until then the checkpoint names a swap already done, which an
 *        open after a crash finishes again (each step found done, CL6). Within a pass the next
 *        group's CL3 directory fsync makes the previous swap's renames durable and its commit
 *        replaces the checkpoint (bases only grow within a pass), so a swap costs no clearing
 *        of its own; the pass's last swap is settled before the next pass, which starts again
 *        from the log start. A settle that fails is remembered by the partition and done by the
 *        next clean before it creates any .cleaned file: a stale swap of base B must never meet
 *        an uncommitted B.*.cleaned.
 *
 * Costs: a pass reads every batch header of the cleanable range and every record of the dirty
 * part twice (map, then filter) and every record of the clean part once; it writes the kept
 * bytes once plus their indexes, and each swap costs 5 fdatasyncs (4 .cleaned files, the
 * commit's checkpoint) and 2 directory fsyncs, of which the shard thread makes 1 and 1 (the
 * commit); each pass adds one settle (a directory fsync, a checkpoint replacement) and each
 * clean one recovery point store at its first swap and one in finish_call (CLB7);
 * each shard call is one request round trip. Memory: the key map (24 bytes a key) and the CLN4
 * set.
 */
#include "cleaner.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "batch_filter.h"
#include "cleaner_checkpoint.h"
#include "compression.h"
#include "error.h"
#include "fsutil.h"
#include "io/io.h"
#include "meta.h"
#include "segment.h"
#include "segment_maps.h"
#include "shard.h"

_Atomic int64_t cleaner_clock_skew_ms; /* rt_test_cleaner_clock_set */

/* ---- key hashes and the key map ---- */

/* MurmurHash64A (Austin Appleby, public domain); two seeds give the 128 bits a key is known by.
 * A collision of both would make the cleaner take two keys for one (Kafka's map keeps MD5
 * digests with the same risk); at 2^-128 per pair it is not a concern. */
static uint64_t murmur64(const uint8_t *p, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const int r = 47;
    uint64_t h = seed ^ (len * m);
    size_t n = len / 8;
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        memcpy(&k, p + 8 * i, 8);
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    const uint8_t *t = p + 8 * n;
    switch (len & 7) {
    case 7:
        h ^= (uint64_t)t[6] << 48; /* fall through */
    case 6:
        h ^= (uint64_t)t[5] << 40; /* fall through */
    case 5:
        h ^= (uint64_t)t[4] << 32; /* fall through */
    case 4:
        h ^= (uint64_t)t[3] << 24; /* fall through */
    case 3:
        h ^= (uint64_t)t[2] << 16; /* fall through */
    case 2:
        h ^= (uint64_t)t[1] << 8; /* fall through */
    case 1:
        h ^= (uint64_t)t[0];
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

struct key_hash {
    uint64_t a, b;
};

static struct key_hash key_hash(const uint8_t *key, int32_t len)
{
    struct key_hash k = {murmur64(key, (size_t)len, 0x9e3779b97f4a7c15ull),
                         murmur64(key, (size_t)len, 0xd1b54a32d192ed03ull)};
    if (k.a == 0 && k.b == 0)
        k.a = 1; /* (0, 0) marks an empty slot */
    return k;
}

struct km_slot {
    uint64_t a, b;
    int64_t offset;
};

/* Open addressing, linear probing, filled to at most 3/4 (`max`). */
struct key_map {
    struct km_slot *slots;
    uint32_t mask;
    uint32_t count;
    uint32_t max;
};

static int key_map_init(struct key_map *m, uint64_t bytes)
{
    uint64_t cap = 16;
    while (cap * 2 * sizeof(struct km_slot) <= bytes && cap < (1u << 30))
        cap *= 2;
    m->slots = calloc(cap, sizeof(*m->slots));
    if (!m->slots)
        return -ENOMEM;
    m->mask = (uint32_t)cap - 1;
    m->count = 0;
    m->max = (uint32_t)(cap / 4 * 3);
    return 0;
}

static void key_map_clear(struct key_map *m)
{
    memset(m->slots, 0, ((size_t)m->mask + 1) * sizeof(*m->slots));
    m->count = 0;
}

static struct km_slot *key_map_slot(const struct key_map *m, struct key_hash k)
{
    for (uint32_t i = (uint32_t)k.a & m->mask;; i = (i + 1) & m->mask) {
        struct km_slot *s = &m->slots[i];
        if ((s->a == k.a && s->b == k.b) || (s->a == 0 && s->b == 0))
            return s; /* terminates: the map is never full (max < capacity) */
    }
}

/* The latest offset of k, or -1. */
static int64_t key_map_get(const struct key_map *m, struct key_hash k)
{
    const struct km_slot *s = key_map_slot(m, k);
    return s->a == 0 && s->b == 0 ? -1 : s->offset;
}

/* Inserts or raises k's offset; false when a new key does not fit. */
static bool key_map_put(struct key_map *m, struct key_hash k, int64_t offset)
{
    struct km_slot *s = key_map_slot(m, k);
    if (s->a == 0 && s->b == 0) {
        if (m->count >= m->max)
            return false;
        s->a = k.a;
        s->b = k.b;
        s->offset = offset;
        m->count++;
        return true;
    }
    if (offset > s->offset)
        s->offset = offset;
    return true;
}

/* ---- records of a batch ---- */

struct record_ref {
    int64_t offset;
    const uint8_t *key;
    int32_t key_len;   /* -1: no key */
    int32_t value_len; /* -1: tombstone */
};

typedef int (*record_fn)(void *ctx, const struct record_ref *r);

/* Calls fn for each record of the (validated) data batch at b; a compressed batch's records are
 * decompressed into buf. Returns 0, fn's first non-zero result, or RT_E_CORRUPT. */
static int each_record(const uint8_t *b, size_t size, const struct batch_header *h,
                       struct compression_buffer *buf, record_fn fn, void *ctx)
{
    const uint8_t *p = b + BATCH_HEADER_BYTES, *end = b + size;
    enum batch_compression codec =
        (enum batch_compression)(h->attributes & BATCH_ATTR_COMPRESSION_MASK);
    const char *why = NULL;
    if (codec != BATCH_COMPRESSION_NONE) {
        int rc = compression_decompress(codec, p, (size_t)(end - p), buf, 64u << 20, &why);
        if (rc)
            return error_set(RT_E_CORRUPT, "batch at offset %" PRId64 ": %s", h->base_offset,
                             why ? why : rt_strerror(rc));
        p = buf->data;
        end = buf->data + buf->len;
    }
    for (int32_t i = 0; i < h->record_count; i++) {
        struct record_view rv;
        int n = record_decode(p, end, &rv, &why);
        if (n <= 0)
            return error_set(RT_E_CORRUPT, "batch at offset %" PRId64 ": record %d: %s",
                             h->base_offset, i, why ? why : "bad record");
        struct record_ref r = {h->base_offset + rv.offset_delta, rv.key, rv.key_len, rv.value_len};
        int rc = fn(ctx, &r);
        if (rc)
            return rc;
        p += n;
    }
    return 0;
}

/* ---- what a pass knows besides the map ---- */

struct aborted {
    int64_t producer_id, first, last;
};

struct last_batch {
    int64_t producer_id, last_offset; /* last_offset -1: the producer's last entry is a marker */
    int16_t epoch;
};

/* A small open-addressing set of int64 (producer ids), or of key hashes. */
struct hset {
    struct key_hash *slots;
    uint32_t mask, count, max;
};

static int hset_init(struct hset *s, uint32_t cap)
{
    s->slots = calloc(cap, sizeof(*s->slots));
    if (!s->slots)
        return -ENOMEM;
    s->mask = cap - 1;
    s->count = 0;
    s->max = cap / 4 * 3;
    return 0;
}

static struct key_hash *hset_slot(const struct hset *s, struct key_hash k)
{
    for (uint32_t i = (uint32_t)(k.a ^ k.b) & s->mask;; i = (i + 1) & s->mask) {
        struct key_hash *x = &s->slots[i];
        if ((x->a == k.a && x->b == k.b) || (x->a == 0 && x->b == 0))
            return x;
    }
}

static bool hset_has(const struct hset *s, struct key_hash k)
{
    const struct key_hash *x = hset_slot(s, k);
    return !(x->a == 0 && x->b == 0);
}

/* false when full (the caller falls back to the safe choice). */
static bool hset_add(struct hset *s, struct key_hash k)
{
    struct key_hash *x = hset_slot(s, k);
    if (!(x->a == 0 && x->b == 0))
        return true;
    if (s->count >= s->max)
        return false;
    *x = k;
    s->count++;
    return true;
}

static bool hset_remove_pid(struct hset *s, int64_t pid);

static struct key_hash pid_hash(int64_t pid)
{
    return (struct key_hash){(uint64_t)pid * 0x9e3779b97f4a7c15ull | 1, (uint64_t)pid + 1};
}

/* Producer sets are small and rebuilt per pass: removal by rebuild keeps probing simple. */
static bool hset_remove_pid(struct hset *s, int64_t pid)
{
    struct key_hash k = pid_hash(pid);
    if (!hset_has(s, k))
        return false;
    uint32_t cap = s->mask + 1;
    struct key_hash *old = s->slots;
    s->slots = calloc(cap, sizeof(*s->slots));
    if (!s->slots) {
        s->slots = old;
        return false;
    }
    s->count = 0;
    for (uint32_t i = 0; i < cap; i++)
        if (!(old[i].a == 0 && old[i].b == 0) && !(old[i].a == k.a && old[i].b == k.b))
            (void)hset_add(s, old[i]);
    free(old);
    return true;
}

struct group {
    uint32_t first, count; /* the job's segs[first, first + count) */
    int64_t base, end;     /* the new segment's base and the sources' end */
};

struct cleaner_run {
    struct partition *p;
    int64_t now_ms;
    bool force;
    bool busy;    /* CLB3: the prepare call found another clean running */
    bool stopped; /* CLB4, CLB5: a swap was refused or the clean cancelled: nothing more */
    bool failed;  /* the work failed: finish_call keeps the partition's CLN9 horizon */
    const struct partition_compaction *cfg; /* &ccfg */
    struct partition_compaction ccfg;       /* CLB2: copies the prepare call took */
    struct segment_config scfg;
    struct segment **segs; /* CLB2: the job's segments, a reference on each */
    uint32_t n;
    uint32_t pcap;    /* the producer sets' size */
    struct group g;   /* the group swap_call swaps */
    char detail[512]; /* a shard call's error detail (error.c's is per thread) */
    struct key_map map;
    struct compression_buffer buf;
    struct batch_filter_scratch filter; /* CLN7 */
    struct aborted *aborted;            /* sorted by (producer_id, first) */
    uint32_t aborted_count;
    struct last_batch *lasts; /* sorted by producer_id */
    uint32_t last_count;
    struct hset txn_kept; /* CLN5: producers with a batch of the open transaction kept */
    struct hset shadowed; /* CLN4 */
    bool shadow_full;
    int64_t horizon_ms; /* CLN9: now + delete.retention.ms, the horizon a clean sets; -1 none */
    int64_t horizon_next_ms; /* CLN9: the nearest horizon still ahead among the kept batches */
    int64_t dirty_start, mapped_end;
    int64_t cleaned_end_at_start; /* the partition's cleaned_end at the prepare call */
    struct cleaner_result *out;
    bool unvouched;                   /* CLB7: a swap call took the job's segments off the RP */
    struct cleaner_checkpoint settle; /* CLB7: the swap the worker settles, source_count 0 none */
};

static int cmp_aborted(const void *x, const void *y)
{
    const struct aborted *a = x, *b = y;
    if (a->producer_id != b->producer_id)
        return a->producer_id < b->producer_id ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

static int cmp_last(const void *x, const void *y)
{
    const struct last_batch *a = x, *b = y;
    return a->producer_id < b->producer_id ? -1 : a->producer_id > b->producer_id;
}

static bool is_aborted(const struct cleaner_run *r, const struct batch_header *h)
{
    if (h->producer_id < 0 || !batch_is_transactional(h) || batch_is_control(h))
        return false;
    uint32_t lo = 0, hi = r->aborted_count; /* first entry > (pid, base) */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct aborted *a = &r->aborted[mid];
        if (a->producer_id < h->producer_id ||
            (a->producer_id == h->producer_id && a->first <= h->base_offset))
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Entries of one producer do not overlap (its transactions follow one another). */
    return lo > 0 && r->aborted[lo - 1].producer_id == h->producer_id &&
           r->aborted[lo - 1].last >= h->base_offset;
}

static bool is_last_of_producer(const struct cleaner_run *r, const struct batch_header *h)
{
    if (h->producer_id < 0 || batch_is_control(h))
        return false;
    struct last_batch key = {h->producer_id, 0, 0};
    const struct last_batch *l =
        bsearch(&key, r->lasts, r->last_count, sizeof(*r->lasts), cmp_last);
    return l && l->last_offset == batch_last_offset(h);
}

/* CLN5: a marker that is its producer's last entry (no data batch after it in the producer
 * table, same epoch) keeps the producer's epoch for fencing: Kafka keeps it too. */
static bool is_last_marker_of_producer(const struct cleaner_run *r, const struct batch_header *h)
{
    if (h->producer_id < 0 || !batch_is_control(h))
        return false;
    struct last_batch key = {h->producer_id, 0, 0};
    const struct last_batch *l =
        bsearch(&key, r->lasts, r->last_count, sizeof(*r->lasts), cmp_last);
    return l && l->last_offset < 0 && l->epoch == h->producer_epoch;
}

static int collect_aborted(struct cleaner_run *r)
{
    struct partition *p = r->p;
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->segment_count; i++)
        n += txn_index_count(&p->segments[i]->txns);
    r->aborted = n ? calloc(n, sizeof(*r->aborted)) : NULL;
    if (n && !r->aborted)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->segment_count; i++) {
        const struct txn_index *t = &p->segments[i]->txns;
        for (uint32_t k = 0; k < txn_index_count(t); k++) {
            struct txn_index_entry e;
            txn_index_get(t, k, &e);
            r->aborted[r->aborted_count++] =
                (struct aborted){e.producer_id, e.first_offset, e.last_offset};
        }
    }
    if (r->aborted_count > 1)
        qsort(r->aborted, r->aborted_count, sizeof(*r->aborted), cmp_aborted);
    return 0;
}

static int add_last(void *ctx, const struct producer_entry *e)
{
    struct cleaner_run *r = ctx;
    if (e->batch_count == 0) { /* CLN5: its last entry is a marker (or nothing left) */
        r->lasts[r->last_count++] = (struct last_batch){e->producer_id, -1, e->epoch};
        return 0;
    }
    const struct producer_batch *b = &e->batches[e->batch_count - 1];
    r->lasts[r->last_count++] =
        (struct last_batch){e->producer_id, b->first_offset + b->offset_delta, e->epoch};
    return 0;
}

static int collect_lasts(struct cleaner_run *r)
{
    uint32_t n = r->p->producers.count;
    r->lasts = calloc(n ? n : 1, sizeof(*r->lasts));
    if (!r->lasts)
        return -ENOMEM;
    (void)producer_table_each(&r->p->producers, add_last, r);
    if (r->last_count > 1)
        qsort(r->lasts, r->last_count, sizeof(*r->lasts), cmp_last);
    return 0;
}

/* CLB5: a topic deletion or a close asked the clean to stop. */
static bool cancelled(struct cleaner_run *r)
{
    if (atomic_load_explicit(&r->p->clean_cancel, memory_order_acquire))
        r->stopped = true;
    return r->stopped;
}

/* ---- step 2: the map ---- */

struct map_batch {
    struct cleaner_run *r;
    uint32_t added;
};

static int map_record(void *ctx, const struct record_ref *rec)
{
    struct map_batch *mb = ctx;
    if (rec->key_len < 0)
        return 0;
    if (!key_map_put(&mb->r->map, key_hash(rec->key, rec->key_len), rec->offset))
        return -ENOBUFS;
    mb->added++;
    return 0;
}

/* Fills the map from dirty_start over segments[0, n); sets mapped_end: the base offset of the
 * first batch whose keys did not all fit, or the range's end. -ENOBUFS when the first batch of
 * the pass does not fit. */
static int build_map(struct cleaner_run *r)
{
    uint32_t n = r->n;
    key_map_clear(&r->map);
    r->mapped_end = r->segs[n - 1]->next_offset;
    bool mapped_any = false;
    for (uint32_t i = 0; i < n; i++) {
        struct segment *seg = r->segs[i];
        if (seg->next_offset <= r->dirty_start)
            continue;
        int mrc = segment_map(seg); /* SG6: a sealed segment is mapped at first use */
        if (mrc)
            return mrc;
        uint64_t pos = 0;
        while (pos < seg->size_bytes) {
            if (cancelled(r))
                return 0; /* CLB5 */
            const char *why = NULL;
            struct batch_header h;
            int64_t size = batch_size_at(seg->map + pos, seg->size_bytes - pos, &why);
            if (size < 0 || batch_header_parse(seg->map + pos, (size_t)size, &h, &why) != 0)
                return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos,
                                 why);
            if (h.base_offset >= r->dirty_start && !batch_is_control(&h) && !is_aborted(r, &h)) {
                struct map_batch mb = {r, 0};
                /* The keys a batch that does not fit put before the map filled stay, with
                 * offsets at or past mapped_end: records they supersede are superseded by a
                 * record the pass keeps (CLN3 keeps every batch from mapped_end on). */
                int rc = each_record(seg->map + pos, (size_t)size, &h, &r->buf, map_record, &mb);
                if (rc == -ENOBUFS) {
                    if (!mapped_any)
                        return error_set(-ENOBUFS,
                                         "%s: offset %" PRIu64 ": the batch holds more keys than "
                                         "the cleaner's key map takes (cleaner_buffer_bytes)",
                                         seg->log_path, pos);
                    r->mapped_end = h.base_offset;
                    return 0;
                }
                if (rc)
                    return rc;
                mapped_any = true;
            }
            pos += (uint64_t)size;
        }
    }
    return 0;
}

/* ---- step 3: which batches are kept ---- */

struct keep_batch {
    struct cleaner_run *r;
    const struct batch_header *h;
};

/* CLN4: the keys of a kept batch join the pass's set. */
static int shadow_record(void *ctx, const struct record_ref *rec)
{
    struct cleaner_run *r = ctx;
    if (rec->key_len >= 0 && !r->shadow_full &&
        !hset_add(&r->shadowed, key_hash(rec->key, rec->key_len)))
        r->shadow_full = true;
    return 0;
}

/* CLN9: the batch carries a delete horizon (attribute bit 6, baseTimestamp) that has passed. */
static bool horizon_passed(const struct cleaner_run *r, const struct batch_header *h)
{
    return (h->attributes & BATCH_ATTR_DELETE_HORIZON) != 0 && h->base_timestamp <= r->now_ms;
}

/* CLN5: a marker's one record is kept when the marker is. */
static int keep_marker_record(void *ctx, const struct batch_filter_record *rec, bool *keep)
{
    (void)ctx;
    (void)rec;
    *keep = true;
    return 0;
}

/* CLN3: whether one record of a batch below mapped_end is kept; a kept key joins CLN4's set. */
static int keep_record(void *ctx, const struct batch_filter_record *rec, bool *keep)
{
    struct keep_batch *kb = ctx;
    struct cleaner_run *r = kb->r;
    *keep = false;
    if (rec->key_len < 0)
        return 0; /* Kafka's cleaner drops records without a key */
    struct key_hash k = key_hash(rec->key, rec->key_len);
    int64_t latest = key_map_get(&r->map, k);
    if (latest > rec->offset)
        return 0;
    if (rec->value_len < 0 && horizon_passed(r, kb->h) && !r->shadow_full &&
        !hset_has(&r->shadowed, k))
        return 0; /* CLN3: an expired tombstone with no record of its key kept before it */
    *keep = true;
    if (!r->shadow_full && !hset_add(&r->shadowed, k)) /* CLN4 */
        r->shadow_full = true;
    return 0;
}

/* What is kept of the batch at b (CLN1-CLN5, CLN7): *result, and the bytes to write in
 * [*out, *out + *out_len) with their header *out_h (b itself, or the rewritten batch in
 * r->filter until the next call). */
static int keep_batch(struct cleaner_run *r, const uint8_t *b, size_t size,
                      const struct batch_header *h, enum batch_filter_result *result,
                      const uint8_t **out, size_t *out_len, struct batch_header *out_h)
{
    *out = b;
    *out_len = size;
    *out_h = *h;
    if (batch_is_control(h)) { /* CLN5, CLN9 */
        bool data_kept =
            hset_remove_pid(&r->txn_kept, h->producer_id) || is_last_marker_of_producer(r, h);
        if (data_kept || (h->attributes & BATCH_ATTR_DELETE_HORIZON) || r->horizon_ms < 0) {
            *result = data_kept || !horizon_passed(r, h) ? BATCH_FILTER_WHOLE : BATCH_FILTER_DROP;
            return 0;
        }
        /* The transaction's data are gone: the marker gets its horizon (KIP-534). */
        int rc = batch_filter_horizon(b, size, h, false, r->horizon_ms, keep_marker_record, NULL,
                                      &r->filter, result, out, out_len, out_h);
        if (rc)
            return error_set(rc, "marker at offset %" PRId64 ": cannot set its delete horizon: %s",
                             h->base_offset, rt_strerror(rc));
        return 0;
    }
    bool last = is_last_of_producer(r, h);
    if (h->record_count == 0) { /* an empty batch a former clean kept (CLN2) */
        *result = last ? BATCH_FILTER_WHOLE : BATCH_FILTER_DROP;
    } else if (is_aborted(r, h)) { /* CLN1: no record, the header if it is the last (CLN2) */
        int rc =
            batch_filter(b, size, h, last, NULL, NULL, &r->filter, result, out, out_len, out_h);
        if (rc)
            return rc;
    } else if (h->base_offset >= r->mapped_end) { /* CLN3 */
        *result = BATCH_FILTER_WHOLE;
        if (!r->shadow_full) { /* CLN4 */
            int rc = each_record(b, size, h, &r->buf, shadow_record, r);
            if (rc)
                return rc;
        }
    } else { /* CLN3, CLN7: record by record; CLN2: the producer's last keeps its header */
        struct keep_batch kb = {.r = r, .h = h};
        int rc = batch_filter_horizon(b, size, h, last, r->horizon_ms, keep_record, &kb, &r->filter,
                                      result, out, out_len, out_h); /* CLN9 */
        if (rc)
            return error_set(rc, "batch at offset %" PRId64 ": cannot filter its records: %s",
                             h->base_offset, rt_strerror(rc));
    }
    if (*result != BATCH_FILTER_DROP && batch_is_transactional(h) && h->producer_id >= 0 &&
        !hset_add(&r->txn_kept, pid_hash(h->producer_id)))
        return -ENOMEM; /* sized for every producer of the partition: cannot be full */
    return 0;
}

/* CLN9: the nearest horizon still ahead among the batches kept, so the shard's periodic pass
 * offers the partition again when it passes. */
static void note_horizon(struct cleaner_run *r, enum batch_filter_result res,
                         const struct batch_header *kept)
{
    if (res != BATCH_FILTER_DROP && (kept->attributes & BATCH_ATTR_DELETE_HORIZON) &&
        kept->base_timestamp > r->now_ms &&
        (r->horizon_next_ms == 0 || kept->base_timestamp < r->horizon_next_ms))
        r->horizon_next_ms = kept->base_timestamp;
}

/* ---- step 3: writing a group ---- */

struct cleaned_files {
    int fd;
    struct offset_index oidx;
    struct time_index tidx;
    struct txn_index txns;
    uint64_t size_bytes;
    uint64_t bytes_since_index;
    int64_t max_timestamp;
    int64_t max_timestamp_offset;
    bool index_full; /* cleaned_index_bytes was too small: no more entries */
};

static int cleaned_path(char *buf, size_t cap, const char *dir, int64_t base, const char *ext)
{
    int rc = meta_segment_file(buf, cap, dir, base, ext);
    size_t n = strlen(buf);
    if (rc == 0 && n + sizeof(CLEANER_CLEANED_SUFFIX) > cap)
        rc = -ENAMETOOLONG;
    if (rc == 0)
        memcpy(buf + n, CLEANER_CLEANED_SUFFIX, sizeof(CLEANER_CLEANED_SUFFIX));
    return rc;
}

static void cleaned_close(struct cleaned_files *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    offset_index_close(&f->oidx);
    time_index_close(&f->tidx);
    txn_index_close(&f->txns);
}

/* The .cleaned indexes' capacity: index_size_max_bytes, but no more than the group's bytes can
 * fill (one entry per index_interval_bytes kept, at most the sources' bytes; plus the seal's), as
 * segment.c sizes an active segment's. Measured (perf, bench --only clean): with 10 MiB sparse
 * index files, the first store into each page of their mappings faulted in a readahead window
 * of zero-filled pages, 36 % of the clean's time. */
static size_t cleaned_index_bytes(const struct cleaner_run *r, uint64_t source_bytes)
{
    /* A rewritten batch may be a little larger than its source (recompressed, or a horizon's
     * rebased deltas, BF6): a quarter more, and an index found full stops indexing (write_group). */
    uint64_t entries = (source_bytes + source_bytes / 4) / r->scfg.index_interval_bytes + 8;
    uint64_t bytes = entries * TIME_INDEX_ENTRY_BYTES; /* the larger of the two entry sizes */
    return bytes < r->scfg.index_size_max_bytes ? (size_t)bytes : r->scfg.index_size_max_bytes;
}

static int cleaned_open(struct cleaned_files *f, const struct cleaner_run *r, int64_t base,
                        uint64_t source_bytes)
{
    const struct partition *p = r->p;
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->oidx.file.fd = -1;
    f->tidx.file.fd = -1;
    f->txns.fd = -1;
    f->max_timestamp = -1;
    f->max_timestamp_offset = base;
    const struct segment_config *sc = &r->scfg;
    char path[SEGMENT_PATH_BYTES + 16];
    int rc = cleaned_path(path, sizeof(path), p->dir, base, "log");
    if (rc == 0) {
        f->fd = io_file_create(sc->faults, path, O_WRONLY | O_TRUNC, 0644);
        if (f->fd < 0)
            rc = f->fd;
    }
    if (rc == 0 && (rc = cleaned_path(path, sizeof(path), p->dir, base, "index")) == 0) {
        (void)io_unlink(sc->faults, path);
        rc = offset_index_open(&f->oidx, path, base, cleaned_index_bytes(r, source_bytes), true, 0);
    }
    if (rc == 0 && (rc = cleaned_path(path, sizeof(path), p->dir, base, "timeindex")) == 0) {
        (void)io_unlink(sc->faults, path);
        rc = time_index_open(&f->tidx, path, base, cleaned_index_bytes(r, source_bytes), true, 0);
    }
    if (rc == 0 && (rc = cleaned_path(path, sizeof(path), p->dir, base, "txnindex")) == 0) {
        (void)io_unlink(sc->faults, path);
        const char *why = NULL;
        rc = txn_index_open(&f->txns, path, base, TXN_INDEX_WRITABLE, &why, NULL);
    }
    if (rc) {
        cleaned_close(f);
        return error_set(rc, "%s: cannot create: %s", path, strerror(-rc));
    }
    return 0;
}

/* Writes bytes at the end of f. */
static int cleaned_write(struct cleaned_files *f, const struct segment *seg, const uint8_t *b,
                         uint64_t len, uint64_t at)
{
    int rc = fs_pwrite_all(f->fd, b, len, at);
    if (rc)
        return error_set(rc, "%s: cannot write the cleaned segment: %s", seg->log_path,
                         strerror(-rc));
    return 0;
}

/* Copies the kept batches of the group's sources into f (runs of consecutive batches kept whole
 * in one write each; a rewritten batch in a write of its own). */
static int write_group(struct cleaner_run *r, const struct group *g, struct cleaned_files *f)
{
    uint32_t interval = r->scfg.index_interval_bytes;
    for (uint32_t i = g->first; i < g->first + g->count; i++) {
        struct segment *seg = r->segs[i];
        int mrc = segment_map(seg); /* SG6; the job's reference keeps it mapped (SG8, CLB6) */
        if (mrc)
            return mrc;
        uint64_t pos = 0, run_start = 0, run_bytes = 0;
        r->out->bytes_in += seg->size_bytes;
        while (pos <= seg->size_bytes) {
            if (cancelled(r))
                return 0; /* CLB5 */
            bool at_end = pos == seg->size_bytes;
            enum batch_filter_result res = BATCH_FILTER_DROP;
            struct batch_header h, nh;
            int64_t size = 0;
            const uint8_t *nb = NULL;
            size_t nlen = 0;
            if (!at_end) {
                const char *why = NULL;
                size = batch_size_at(seg->map + pos, seg->size_bytes - pos, &why);
                if (size < 0 || batch_validate_stored(seg->map + pos, (size_t)size,
                                                      seg->cfg.gaps_ok, &h, &why) != 0)
                    return error_set(RT_E_CORRUPT, "%s: offset %" PRIu64 ": %s", seg->log_path, pos,
                                     why ? why : "bad batch");
                int rc = keep_batch(r, seg->map + pos, (size_t)size, &h, &res, &nb, &nlen, &nh);
                if (rc)
                    return rc;
                note_horizon(r, res, &nh);
            }
            if ((at_end || res != BATCH_FILTER_WHOLE) && run_bytes > 0) {
                int rc = cleaned_write(f, seg, seg->map + run_start, run_bytes,
                                       f->size_bytes - run_bytes);
                if (rc)
                    return rc;
                run_bytes = 0;
            }
            if (at_end)
                break;
            if (res != BATCH_FILTER_DROP) {
                uint64_t position = f->size_bytes;
                if (res == BATCH_FILTER_WHOLE) {
                    if (run_bytes == 0)
                        run_start = pos;
                    run_bytes += (uint64_t)size;
                } else {
                    int rc = cleaned_write(f, seg, nb, nlen, position); /* CLN7 */
                    if (rc)
                        return rc;
                    r->out->batches_rewritten++;
                }
                /* The indexes as segment_note_append builds them (C.1, C.2). */
                int64_t last = batch_last_offset(&nh);
                if (nh.max_timestamp > f->max_timestamp) {
                    f->max_timestamp = nh.max_timestamp;
                    f->max_timestamp_offset = last;
                }
                if (f->bytes_since_index > interval && !f->index_full) {
                    int rc = offset_index_append(&f->oidx, last, (uint32_t)position);
                    if (rc == 0)
                        rc = time_index_append(&f->tidx, f->max_timestamp, f->max_timestamp_offset);
                    if (rc == -ENOSPC)
                        f->index_full = true; /* sparser from here: lookups scan further */
                    else if (rc)
                        return error_set(rc, "%s: cleaned index: %s", seg->log_path, strerror(-rc));
                    f->bytes_since_index = 0;
                }
                f->bytes_since_index += (uint64_t)nlen;
                f->size_bytes += (uint64_t)nlen;
                if (batch_is_control(&h) &&
                    control_batch_type(seg->map + pos, (size_t)size) == CONTROL_ABORT) {
                    /* CLN5: the kept ABORT marker keeps its entry. */
                    for (uint32_t k = 0; k < txn_index_count(&seg->txns); k++) {
                        struct txn_index_entry e;
                        txn_index_get(&seg->txns, k, &e);
                        if (e.last_offset != h.base_offset)
                            continue;
                        int rc = txn_index_append(&f->txns, &e);
                        if (rc)
                            return error_set(rc, "%s: cleaned .txnindex: %s", seg->log_path,
                                             strerror(-rc));
                    }
                }
            } else {
                r->out->batches_dropped++;
            }
            pos += (uint64_t)size;
        }
    }
    return 0;
}

/* Seals the cleaned files: each fdatasynced, trimmed, closed; then the directory (CL3). */
static int cleaned_seal(const struct cleaner_run *r, struct cleaned_files *f)
{
    const struct partition *p = r->p;
    const struct segment_config *sc = &r->scfg;
    int rc = ftruncate(f->fd, (off_t)f->size_bytes) ? -errno : 0;
    if (rc == 0)
        rc = io_fdatasync(sc->faults, f->fd);
    if (rc == 0)
        rc = offset_index_seal(&f->oidx);
    if (rc == 0)
        rc = time_index_seal(&f->tidx);
    if (rc == 0)
        rc = txn_index_seal(&f->txns);
    if (rc == 0)
        rc = fs_fsync_dir(sc->faults, p->dir);
    cleaned_close(f);
    if (rc)
        return error_set(rc, "%s: cannot make the cleaned segment durable: %s", p->dir,
                         strerror(-rc));
    return 0;
}

/* Removes the group's .cleaned files (CLN8, or a swap CLB4 refused): nothing was committed. */
static void cleaned_remove(const struct cleaner_run *r, int64_t base)
{
    static const char *const exts[] = {"log", "index", "timeindex", "txnindex"};
    for (size_t k = 0; k < sizeof exts / sizeof exts[0]; k++) {
        char path[SEGMENT_PATH_BYTES + 16];
        if (cleaned_path(path, sizeof(path), r->p->dir, base, exts[k]) == 0)
            (void)io_unlink(r->scfg.faults, path);
    }
}

/* A shard call's failure: its detail is kept for the worker (error.c's buffer is per thread). */
static int keep_detail(struct cleaner_run *r, int rc)
{
    if (rc)
        snprintf(r->detail, sizeof(r->detail), "%s", rt_error_detail());
    return rc;
}

/* Runs fn(r) on the partition's shard thread, between rounds (CLB1), and waits for it. */
static int on_shard(struct cleaner_run *r, int (*fn)(struct shard *, void *))
{
    r->detail[0] = '\0';
    struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = fn, .arg = r};
    int rc = shard_submit(r->p->shard, &req);
    if (rc && r->detail[0])
        error_set(rc, "%s", r->detail);
    return rc;
}

/* CLB4: where the group's sources are in the partition's list now, or UINT32_MAX when the swap
 * must not be made. */
static uint32_t sources_at(const struct cleaner_run *r, const struct group *g)
{
    const struct partition *p = r->p;
    if (p->frozen || atomic_load_explicit(&p->clean_cancel, memory_order_acquire) ||
        !p->cfg.compaction.compact)
        return UINT32_MAX;
    for (uint32_t i = 0; i < p->segment_count; i++) {
        if (p->segments[i] != r->segs[g->first])
            continue;
        if (i + g->count >= p->segment_count) /* the active segment stays after them */
            return UINT32_MAX;
        for (uint32_t k = 1; k < g->count; k++)
            if (p->segments[i + k] != r->segs[g->first + k])
                return UINT32_MAX;
        return i;
    }
    return UINT32_MAX;
}

/* CL3-CL5 for the group r->g whose .cleaned files are sealed, then the partition's list: the
 * sources out, the new segment in; the job's segs follow. On the shard thread (CLB1). */
static int swap_call(struct shard *s, void *arg)
{
    (void)s;
    struct cleaner_run *r = arg;
    struct partition *p = r->p;
    const struct group *g = &r->g;
    uint32_t at = sources_at(r, g);
    if (at == UINT32_MAX) {
        r->stopped = true; /* CLB4: the worker removes the .cleaned files */
        return 0;
    }
    /* CL3: the recovery point stops naming the sources (and what lies before them) before any
     * of their files changes, so neither open nor verify trusts a file the swap replaced. CLB7:
     * at the clean's first swap, for every segment of the job still to be swapped at once (no
     * one vouches for them again before finish_call), so the later swaps store nothing. */
    uint32_t upto = at + (r->n - g->first);
    if (upto > p->segment_count - 1)
        upto = p->segment_count - 1;
    bool named = false;
    for (uint32_t i = 0; i < upto; i++) {
        named |= p->segments[i]->vouched;
        p->segments[i]->vouched = false;
    }
    assert(upto >= at + g->count);
    r->unvouched = true;
    if (named) {
        int vrc = partition_vouch_all(p, false);
        if (vrc)
            return keep_detail(r, error_set(vrc, "%s: cannot store the recovery point: %s", p->dir,
                                            rt_strerror(vrc)));
    }
    cleaner_step(CLEANER_STEP_WRITTEN);
    /* CL4: the commit point. */
    struct cleaner_checkpoint c = {
        .cleaned_end = g->end < r->mapped_end ? g->end : r->mapped_end,
        .swap_base = g->base,
        .swap_end = g->end,
        .source_count = g->count,
    };
    if (c.cleaned_end < p->cleaned_end)
        c.cleaned_end = p->cleaned_end;
    c.sources = calloc(g->count, sizeof(*c.sources));
    if (!c.sources)
        return -ENOMEM;
    for (uint32_t i = 0; i < g->count; i++)
        c.sources[i] = p->segments[at + i]->base_offset;
    int rc = cleaner_checkpoint_store(p->cfg.segment.faults, p->dir, &c);
    if (rc) {
        cleaner_checkpoint_free(&c);
        return keep_detail(r, error_set(rc, "%s/%s: cannot store: %s", p->dir,
                                        CLEANER_CHECKPOINT_FILE, strerror(-rc)));
    }
    p->cleaned_end = c.cleaned_end;
    /* CLB7: a former swap of this pass left pending is superseded: this commit replaced the
     * checkpoint naming it, and this group's CL3 directory fsync, after that swap's renames,
     * made them durable. It must never be settled now (that would clear this commit). */
    cleaner_checkpoint_free(&r->settle);
    r->settle.source_count = 0;
    cleaner_step(CLEANER_STEP_COMMITTED);
    /* CL5's unlinks and renames; its directory fsync and the checkpoint's clearing are the
     * worker's (CLB7: swap_group, after this call). */
    rc = cleaner_swap_move(p->cfg.segment.faults, p->dir, &c);
    if (rc) {
        cleaner_checkpoint_free(&c);
        partition_freeze(p); /* the list names files that are gone: a reopen finishes it */
        return keep_detail(r, rc);
    }
    r->settle = c; /* owned by the worker now */
    struct segment_config scfg = p->cfg.segment;
    scfg.gaps_ok = true;
    scfg.pool = NULL;
    struct segment *seg = NULL;
    rc = segment_open(&seg, p->dir, g->base, &scfg, false, false, NULL, NULL);
    if (rc == 0) {
        rc = segment_map(seg); /* CLB6: the worker reads it in the next pass */
        if (rc)
            segment_unref(seg);
    }
    if (rc) {
        partition_freeze(p);
        return keep_detail(r, rc);
    }
    seg->next_offset = g->end; /* CL2: the cleaned range runs to the next segment */
    struct segment **old = malloc((size_t)g->count * sizeof(*old));
    if (!old) {
        segment_unref(seg);
        partition_freeze(p);
        return -ENOMEM;
    }
    segment_ref(seg); /* the job's reference (CLB2) */
    pthread_mutex_lock(&p->segments_lock);
    memcpy(old, p->segments + at, (size_t)g->count * sizeof(*old));
    p->segments[at] = seg;
    memmove(p->segments + at + 1, p->segments + at + g->count,
            (size_t)(p->segment_count - at - g->count) * sizeof(*p->segments));
    p->segment_count -= g->count - 1;
    pthread_mutex_unlock(&p->segments_lock);
    segment_maps_attach(p->cfg.segment.maps, seg); /* MM1 */
    for (uint32_t i = 0; i < g->count; i++) {
        segment_maps_forget(old[i]); /* MM1: out of the list */
        segment_unref(old[i]);       /* a fetch holding one keeps its mapping until it releases */
        segment_unref(r->segs[g->first + i]); /* the job's */
    }
    free(old);
    r->segs[g->first] = seg;
    memmove(r->segs + g->first + 1, r->segs + g->first + g->count,
            (size_t)(r->n - g->first - g->count) * sizeof(*r->segs));
    r->n -= g->count - 1;
    r->out->segments_in += g->count;
    r->out->segments_out++;
    return 0;
}

/* CLB7: the rest of CL5 for the last swap swap_call made (r->settle), on the worker, at the end
 * of a pass or of the clean: the directory fsync that makes its renames durable, then the
 * checkpoint without the swap. Until then the checkpoint still names the finished swap (an open
 * after a crash finishes it again: every step is found done); the next swap of the pass, whose
 * base is higher, supersedes it (swap_call). When it fails the partition remembers it, and the
 * next clean settles before it writes any .cleaned file (a stale swap naming base B must never
 * meet a new B.*.cleaned). Returns rc, or the settle's error when rc is 0. */
static int settle(struct cleaner_run *r, int rc)
{
    if (r->settle.source_count == 0)
        return rc;
    struct partition *p = r->p;
    /* RL8 (partition.h): never below what a replica append stored meanwhile. */
    pthread_mutex_lock(&p->gaps_lock);
    r->settle.cleaned_end = partition_gaps_floor(p, r->settle.cleaned_end);
    int64_t end = r->settle.cleaned_end;
    int src = cleaner_swap_settle(r->scfg.faults, p->dir, &r->settle);
    pthread_mutex_unlock(&p->gaps_lock);
    cleaner_checkpoint_free(&r->settle);
    r->settle.source_count = 0;
    p->clean_settle_pending = src != 0;
    p->clean_settle_end = end;
    return rc ? rc : src;
}

/* CLB7: a former clean's settle that failed, done before this clean writes anything. */
static int settle_pending(struct cleaner_run *r)
{
    struct partition *p = r->p;
    if (!p->clean_settle_pending)
        return 0;
    pthread_mutex_lock(&p->gaps_lock); /* RL8 (partition.h) */
    struct cleaner_checkpoint done = {.cleaned_end = partition_gaps_floor(p, p->clean_settle_end),
                                      .swap_base = -1,
                                      .swap_end = -1};
    int rc = fs_fsync_dir(r->scfg.faults, p->dir);
    if (rc == 0)
        rc = cleaner_checkpoint_store(r->scfg.faults, p->dir, &done);
    pthread_mutex_unlock(&p->gaps_lock);
    if (rc)
        return error_set(rc, "%s/%s: cannot store: %s", p->dir, CLEANER_CHECKPOINT_FILE,
                         strerror(-rc));
    p->clean_settle_pending = false;
    return 0;
}

/* Writes and seals the group's cleaned segment on the worker, then swaps it in on the shard
 * thread (swap_call) and settles the swap (settle). */
static int swap_group(struct cleaner_run *r, const struct group *g)
{
    struct cleaned_files f;
    uint64_t source_bytes = 0;
    for (uint32_t i = g->first; i < g->first + g->count; i++)
        source_bytes += r->segs[i]->size_bytes;
    int rc = cleaned_open(&f, r, g->base, source_bytes);
    if (rc)
        return rc;
    uint64_t changes = r->out->batches_dropped + r->out->batches_rewritten;
    rc = write_group(r, g, &f);
    if (rc || r->stopped) {
        cleaned_close(&f);
        if (r->stopped)
            cleaned_remove(r, g->base);
        return rc;
    }
    if (g->count == 1 && r->out->batches_dropped + r->out->batches_rewritten == changes) {
        /* CLN8: the segment would come back as it is: no swap (its .cleaned files go). */
        cleaned_close(&f);
        cleaned_remove(r, g->base);
        r->out->segments_unchanged++;
        return 0;
    }
    uint64_t size = f.size_bytes;
    rc = cleaned_seal(r, &f);
    if (rc)
        return rc;
    cleaner_step(CLEANER_STEP_SEALED);
    r->g = *g;
    rc = on_shard(r, swap_call);
    if (rc == 0 && r->stopped)
        cleaned_remove(r, g->base); /* CLB4: nothing was committed */
    else if (rc == 0)
        r->out->bytes_out += size;
    return rc;
}

/* ---- the clean ---- */

/* The number of leading segments the cleaner may rewrite (step 1). */
static uint32_t cleanable_count(const struct partition *p, int64_t now_ms, int64_t min_lag_ms)
{
    int64_t bound = p->next_offset;
    if (p->open_txn_count > 0 && p->open_txns[0].first_offset < bound)
        bound = p->open_txns[0].first_offset;
    int64_t hw = atomic_load_explicit(&p->pub_hw, memory_order_acquire);
    if (hw < bound)
        bound = hw;
    uint32_t n = 0;
    while (n + 1 < p->segment_count) {
        const struct segment *s = p->segments[n];
        int64_t ts = atomic_load_explicit(&s->max_timestamp_ms, memory_order_relaxed);
        if (!s->sealed || s->next_offset > bound ||
            (min_lag_ms > 0 && ts >= 0 && now_ms - ts < min_lag_ms))
            break;
        n++;
    }
    return n;
}

static bool clean_due(const struct partition *p, uint32_t n, int64_t now_ms)
{
    const struct partition_compaction *c = &p->cfg.compaction;
    uint64_t dirty = 0, total = 0;
    int64_t oldest_dirty_ts = -1;
    for (uint32_t i = 0; i < n; i++) {
        const struct segment *s = p->segments[i];
        total += s->size_bytes;
        if (s->next_offset > p->cleaned_end) {
            dirty += s->size_bytes;
            int64_t ts = atomic_load_explicit(&s->max_timestamp_ms, memory_order_relaxed);
            if (oldest_dirty_ts < 0)
                oldest_dirty_ts = ts;
        }
    }
    if (p->clean_horizon_ms > 0 && p->clean_horizon_ms <= now_ms)
        return true; /* CLN9: a tombstone's or marker's horizon passed (Kafka's
                        latestDeleteHorizon) */
    if (dirty == 0)
        return false;
    if (oldest_dirty_ts >= 0 && c->max_lag_ms < INT64_MAX &&
        now_ms - oldest_dirty_ts >= c->max_lag_ms)
        return true; /* max.compaction.lag.ms */
    return (double)dirty >= c->min_dirty_ratio * (double)total;
}

bool cleaner_due(struct partition *p, int64_t now_ms)
{
    now_ms += atomic_load_explicit(&cleaner_clock_skew_ms, memory_order_relaxed); /* tests */
    if (!p->cfg.compaction.compact || p->frozen || p->cfg.segment.read_only ||
        atomic_load_explicit(&p->cleaning, memory_order_acquire) ||
        atomic_load_explicit(&p->clean_cancel, memory_order_acquire))
        return false;
    uint32_t n = cleanable_count(p, now_ms, p->cfg.compaction.min_lag_ms);
    return n > 0 && clean_due(p, n, now_ms);
}

bool cleaner_roll_due(const struct partition *p, int64_t now_ms)
{
    now_ms += atomic_load_explicit(&cleaner_clock_skew_ms, memory_order_relaxed); /* tests */
    const struct segment *a = p->active;
    if (!p->cfg.compaction.compact || p->frozen || p->cfg.segment.read_only || p->round_touched ||
        !a || a->sealed || a->size_bytes == 0)
        return false;
    int64_t max_ms = p->cfg.segment_ms > 0 ? p->cfg.segment_ms : INT64_MAX;
    if (p->cfg.compaction.max_lag_ms > 0 && p->cfg.compaction.max_lag_ms < max_ms)
        max_ms = p->cfg.compaction.max_lag_ms;
    return max_ms < INT64_MAX && now_ms - a->created_ms >= max_ms;
}

/* Groups the job's segs[0, n) whose base is below mapped_end; calls swap_group on each in turn
 * (each swap changes the list: the next group starts right after the new segment). */
static int rewrite(struct cleaner_run *r)
{
    uint64_t cap = r->scfg.capacity_bytes;
    uint32_t i = 0;
    while (i < r->n && r->segs[i]->base_offset < r->mapped_end && !r->stopped) {
        struct group g = {.first = i, .count = 0, .base = r->segs[i]->base_offset};
        uint64_t bytes = 0;
        while (i + g.count < r->n && r->segs[i + g.count]->base_offset < r->mapped_end) {
            const struct segment *s = r->segs[i + g.count];
            if (g.count > 0 &&
                (bytes + s->size_bytes > cap || s->next_offset - g.base > (int64_t)INT32_MAX))
                break;
            bytes += s->size_bytes;
            g.count++;
        }
        g.end = r->segs[i + g.count - 1]->next_offset;
        int rc = swap_group(r, &g); /* a swap makes segs[i] the new segment (swap_call) */
        if (rc)
            return rc;
        i++;
    }
    return 0;
}

static void release_segs(struct cleaner_run *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        segment_unref(r->segs[i]);
    free(r->segs);
    r->segs = NULL;
    r->n = 0;
}

/* Step 1 on the shard thread (CLB2, CLB3): what the worker may read, and copies of the writer
 * state it needs. r->n stays 0 when there is nothing to clean. */
static int prepare_call(struct shard *s, void *arg)
{
    (void)s;
    struct cleaner_run *r = arg;
    struct partition *p = r->p;
    if (!p->cfg.compaction.compact)
        return r->force ? keep_detail(r, error_set(RT_E_INVALID_CONFIG,
                                                   "%s: cleanup.policy does not include compact",
                                                   p->dir))
                        : 0;
    if (p->frozen)
        return RT_E_IO_FAILED;
    if (p->cfg.segment.read_only)
        return RT_E_READ_ONLY;
    if (atomic_exchange_explicit(&p->cleaning, true, memory_order_seq_cst)) {
        r->busy = true; /* CLB3 */
        return 0;
    }
    /* CLB5: the flag is set before cancel is read (seq_cst both), so a canceller either sees
     * `cleaning` and waits, or this sees the cancel. */
    uint32_t n = 0;
    if (!atomic_load_explicit(&p->clean_cancel, memory_order_seq_cst))
        n = cleanable_count(p, r->now_ms, p->cfg.compaction.min_lag_ms);
    if (n == 0 || (!r->force && !clean_due(p, n, r->now_ms))) {
        atomic_store_explicit(&p->cleaning, false, memory_order_release);
        return 0;
    }
    r->ccfg = p->cfg.compaction;
    r->scfg = p->cfg.segment;
    r->cleaned_end_at_start = p->cleaned_end;
    r->segs = malloc((size_t)n * sizeof(*r->segs));
    int rc = r->segs ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = segment_pin(p->segments[i]); /* the job's reference, then mapped: SG6, SG8; CLB6 */
        if (rc == 0)
            r->segs[r->n++] = p->segments[i];
    }
    if (rc == 0)
        rc = collect_aborted(r);
    if (rc == 0)
        rc = collect_lasts(r);
    r->pcap = 64;
    while (r->pcap < 2 * (p->producers.count + 8))
        r->pcap *= 2;
    if (rc) {
        release_segs(r);
        atomic_store_explicit(&p->cleaning, false, memory_order_release);
        return keep_detail(r, rc);
    }
    return 0;
}

/* The end of a pass (step 4), on the shard thread: cleaned_end is writer state. */
static int pass_call(struct shard *s, void *arg)
{
    (void)s;
    struct cleaner_run *r = arg;
    if (r->mapped_end > r->p->cleaned_end)
        r->p->cleaned_end = r->mapped_end;
    r->p->cleaner_passes++;
    return 0;
}

/* The end of the clean, on the shard thread: the recovery point names the new segments. */
static int finish_call(struct shard *s, void *arg)
{
    (void)s;
    struct cleaner_run *r = arg;
    struct partition *p = r->p;
    if ((r->out->segments_out > 0 || r->unvouched) && !p->frozen &&
        !atomic_load_explicit(&p->clean_cancel, memory_order_acquire))
        (void)partition_vouch_all(p, true); /* a failure costs the next open a check */
    /* CLN9: a clean that walked the whole range knows the nearest horizon; one that stopped
     * early only lowers it. */
    int64_t next = r->horizon_next_ms;
    if (r->stopped || r->failed) {
        if (next == 0 || (p->clean_horizon_ms != 0 && p->clean_horizon_ms < next))
            next = p->clean_horizon_ms;
    }
    p->clean_horizon_ms = next;
    return 0;
}

int cleaner_clean(struct partition *p, int64_t now_ms, bool force, struct cleaner_result *out)
{
    struct cleaner_result local;
    if (!out)
        out = &local;
    memset(out, 0, sizeof(*out));
    now_ms += atomic_load_explicit(&cleaner_clock_skew_ms, memory_order_relaxed); /* tests */
    struct cleaner_run r = {.p = p, .now_ms = now_ms, .force = force, .out = out};
    r.cfg = &r.ccfg;
    int rc;
    for (;;) { /* CLB3: a forced clean waits for one running */
        r.busy = false;
        rc = on_shard(&r, prepare_call);
        if (rc || !r.busy || !force)
            break;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (rc || r.n == 0) {
        free(r.aborted); /* a prepare that failed after its copies */
        free(r.lasts);
        return rc;
    }
    r.buf = (struct compression_buffer)COMPRESSION_BUFFER_INIT;
    r.filter = (struct batch_filter_scratch)BATCH_FILTER_SCRATCH_INIT;
    rc = settle_pending(&r); /* CLB7 */
    if (rc == 0)
        rc = key_map_init(&r.map, r.ccfg.buffer_bytes);
    if (rc == 0)
        rc = hset_init(&r.txn_kept, r.pcap);
    if (rc == 0)
        rc = hset_init(&r.shadowed, r.map.mask + 1);
    int64_t end = r.segs[r.n - 1]->next_offset;
    r.dirty_start = r.cleaned_end_at_start > r.segs[0]->base_offset ? r.cleaned_end_at_start
                                                                    : r.segs[0]->base_offset;
    /* CLN9: the horizon this clean gives tombstones and markers it keeps first (none when
     * delete.retention.ms makes it overflow: they are kept for ever). */
    r.horizon_ms = -1;
    int64_t horizon;
    if (r.ccfg.delete_retention_ms >= 0 &&
        !__builtin_add_overflow(r.now_ms, r.ccfg.delete_retention_ms, &horizon) && horizon > 0)
        r.horizon_ms = horizon;
    bool first = true;
    while (rc == 0 && !r.stopped && (first || r.dirty_start < end)) {
        first = false;
        if (r.dirty_start < end) {
            rc = build_map(&r);
        } else {
            key_map_clear(&r.map); /* all clean: expire tombstones and markers only */
            r.mapped_end = end;
        }
        if (rc || r.stopped)
            break;
        /* Per pass: nothing is known kept yet. */
        memset(r.txn_kept.slots, 0, ((size_t)r.txn_kept.mask + 1) * sizeof(*r.txn_kept.slots));
        r.txn_kept.count = 0;
        memset(r.shadowed.slots, 0, ((size_t)r.shadowed.mask + 1) * sizeof(*r.shadowed.slots));
        r.shadowed.count = 0;
        r.shadow_full = false;
        rc = rewrite(&r);
        rc = settle(&r, rc); /* CLB7: before the next pass meets the same bases again */
        if (rc || r.stopped)
            break;
        rc = on_shard(&r, pass_call);
        r.dirty_start = r.mapped_end;
        out->passes++;
    }
    rc = settle(&r, rc); /* CLB7: a pass that stopped early */
    r.failed = rc != 0;
    int frc = on_shard(&r, finish_call);
    if (rc == 0)
        rc = frc;
    release_segs(&r); /* may free sources retention removed (CLB6) */
    free(r.map.slots);
    free(r.aborted);
    free(r.lasts);
    free(r.txn_kept.slots);
    free(r.shadowed.slots);
    compression_buffer_free(&r.buf);
    batch_filter_scratch_free(&r.filter);
    atomic_store_explicit(&p->cleaning, false, memory_order_release); /* CLB3, CLB5 */
    return rc;
}

void cleaner_cancel(struct partition *p)
{
    atomic_store_explicit(&p->clean_cancel, true, memory_order_seq_cst);
}

void cleaner_wait(struct partition *p)
{
    while (atomic_load_explicit(&p->cleaning, memory_order_seq_cst)) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
