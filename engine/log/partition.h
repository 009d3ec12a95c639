/*
 * partition.h — one topic-partition: its ordered list of segments, its log end, and the
 * watermarks readers see.
 *
 * Writer state (next_offset, the active segment, rolls, retention) is touched only by the
 * partition's shard thread. Readers use two things only: the published watermarks, read
 * lock-free through a sequence counter (partition_watermarks), and the segment list, under a
 * mutex held just long enough to take a reference on one segment (the writer takes that mutex
 * only to add or remove a segment). So a fetch never waits for a write round.
 *
 * Invariants (tests name them):
 *   PA1. Offsets are dense: segment i+1's base == segment i's last offset + 1.
 *   PA2. Every segment but the newest is sealed: fdatasynced, trimmed, indexes synced. So
 *        recovery after a crash needs to scan only the newest segment.
 *   PA3. high_watermark <= next_offset; bytes below the published position of the high
 *        watermark are acknowledged and never change until retention deletes their segment.
 *   PA4. log_start_offset == max(base offset of the oldest segment, records_start) (PA13).
 *   PA5. A partition whose write round failed is frozen until it is recovered (PA12) or the
 *        engine is reopened: its writer state (next offset, producer table, open transactions)
 *        may describe batches that were reported failed, so nothing of it is published, rolled,
 *        deleted or snapshotted while it is frozen; readers keep the last acknowledged
 *        watermarks.
 *   PA6. At most one recycled segment file is kept per partition (PARTITION_SPARE_NAME in its
 *        directory): a segment retention deletes becomes it when no reader holds the segment
 *        and the engine pre-writes (sync other than none); the next roll renames it into place
 *        (docs/format.md A.6). An open removes a leftover one (a *.tmp), so a crash loses it.
 *   PA7. Without a recycled file, once the active segment is half full the pre-writer writes
 *        the head of the next segment's file (its lead, zeros, fdatasynced); the roll renames
 *        it into place when it is ready, and creates a file as before when it is not (the
 *        bytes then written into unwritten blocks are counted: prewrite_missed_bytes). A
 *        leftover one an open finds is unlinked by the pre-writer (segment_pool.c SP9), and
 *        no head is asked for until it is gone.
 *   PA8. The recovery point (`recovery-point`, docs/format.md A.7) names only sealed segments
 *        that were checked (SC1-SC3, at their seal or by an open's walk) and whose files were
 *        fdatasynced before it was written, with each file's size and mtime as they were then.
 *        An open trusts a segment only when the checkpoint names it with exactly the stamps its
 *        files have now (and the newest segment only after a clean shutdown): a changed,
 *        unnamed or damaged entry costs a walk, never trust. Stored at every roll, at a clean
 *        close, and by an open that checked a sealed segment no entry vouched for.
 *   PA9. The recovery point may also carry a tail (A.7 RP6): a prefix of the active segment —
 *        its bytes, next offset, largest timestamp, last batch's position and index entry
 *        counts — written by partition_checkpoint_tail only after the log and .txnindex were
 *        fdatasynced, the offset and time indexes msynced and a producer snapshot at its next
 *        offset stored. After a crash the newest segment is scanned from the tail on, when the
 *        tail's base is the newest segment's and its last batch and index entries check out
 *        (segment.c tail_holds); otherwise from 0 as before. So a crash costs the bytes
 *        appended since the last tail (at most checkpoint_interval_bytes plus one housekeeping
 *        period's appends), not the segment. A roll, a close or an open stores the file without
 *        a tail (the active segment is then empty, sealed, or was just scanned).
 *  PA11. After a clean shutdown the newest segment an open trusted stays sealed — mapped, no
 *        descriptor, read-only indexes, nothing extended — until the partition's first append,
 *        which reopens it active (partition_wake, on the shard thread, before the batch is
 *        placed). So an idle partition holds no descriptor and costs its open and close no
 *        flush; a fetch holding the sealed object keeps its mapping (the file only grows).
 *  PA15. A partition is made dormant again (partition_sleep) only between rounds and only with
 *        nothing in flight (not touched by the round, not frozen, not rolling, no published
 *        byte unsynced): its active segment is sealed exactly as a clean close seals it (PA2's
 *        fdatasync and trim, indexes sealed), so every descriptor it held is closed, then
 *        vouched for (the walk covers only what was appended since it was last trusted) and
 *        named by a stored recovery point. It is then in PA11's state: readers keep the sealed
 *        object's mapping, the next append reopens it active, a clean close finds nothing to
 *        do and a crash scans nothing of it (PA14). The shards do it for the budget of open
 *        segments (shard.c SH12, segment_cache.h): a partition holding unsynced bytes is
 *        fdatasynced through the shard's ring first (OS5), and an open that scanned a newest
 *        segment while the budget is spent makes its partition dormant at once (OS6).
 *  PA10. Retention (and partition_delete_before) removes a run of oldest segments in one step:
 *        the list loses the whole run under one lock hold and the log start is published once,
 *        then the run's files are unlinked oldest first and the directory fsynced once
 *        (run_deletions counts the steps). A power loss before that fsync undoes the unlinks
 *        (all of them in io.h's model; a journaled file system keeps an ordered prefix of
 *        them), so what comes back is the newest part of the run, right below the surviving
 *        segments: the log stays dense (PA1) and the next retention removes it again.
 *  PA12. Recovery in place (issue 21 F3, partition_recover): a frozen partition is brought back
 *        to exactly what a reopen would find, without touching any other partition: its
 *        durable end is the active segment's published end (size_bytes and next_offset move
 *        only when a round is published, and under sync=always only after its fdatasync; the
 *        shard escalates every failure that could have lost published bytes to the engine, so
 *        a partition it freezes alone has none), the next offset goes back there, the producer
 *        table and open transactions are reloaded from the newest snapshot and the log as an
 *        open does (load_producers), and a roll the failure interrupted (rolling) is finished
 *        (a seal runs again to its end; a snapshot already written is kept). The caller
 *        (shard.c SH10) first overwrites with zeros, and fdatasyncs, everything a failed
 *        round may have left past that end, so a crash after the recovery finds no trace of
 *        a batch reported failed; nothing of the partition is trusted to an fdatasync that
 *        once failed, only to ones that succeeded after the failure.
 *  PA17. A roll of a partition holding published bytes not yet fdatasynced (`unsynced`:
 *        sync=interval or none, a lazy marker) fdatasyncs its active segment before anything
 *        else and clears `unsynced` (partition_roll): a failure later in the roll (the seal's
 *        trim or indexes, the producer snapshot, the next segment's file — ENOSPC on a full
 *        disk) then concerns no published byte and the partition is recovered in place (PA12,
 *        shard.c SH10) like any other; only a failure of that first fdatasync, which may have
 *        dropped published bytes, fails the engine's write side.
 *  PA14. After a crash, a recovery-point entry naming what is now the newest segment (sealed by
 *        a clean close or by a sleep, PA15, then woken and appended to) serves as that segment's
 *        tail when the file carries no tail and the log grew past the stamped size (or no stamp
 *        changed): the stamped sizes are whole batches fdatasynced by the seal and the trimmed
 *        indexes' entries, so the scan starts past them once their first and last batch and
 *        index entries check out (segment.c tail_holds, walking from the last indexed batch),
 *        and from 0 otherwise (a log of the stamped size with another mtime was changed in
 *        place: scanned whole). So a crash after a clean open costs the bytes appended since,
 *        not the segment.
 *  PA18. The active segment's seal walks (SC1-SC3, vouch_sealed) only what was appended past
 *        the prefix its open or wake vouched for (active_checked_bytes), never that prefix
 *        again: a newest segment an open trusted (RT1), checked whole (OV1-OV3) or recovered
 *        after a crash — scanned from 0, or past a tail that held (PA9, PA14), every scanned
 *        batch CRC-checked and indexed — counts as checked to the open's end. The prefix below
 *        a tail is vouched for by the durable tail itself (stored only after its bytes were
 *        fdatasynced, and accepted only when tail_holds), the same word the open serves it on;
 *        verify walks it. So a crash open, and the seals that follow it (a clean close, OS6's
 *        sleep past the descriptor budget), read the tail past the recovery point and nothing
 *        before it. The idle close's shortcut (restore_stamps: no walk, no new checkpoint, old
 *        mtimes back) stays with a wholly trusted segment (active_trusted_bytes): a recovered
 *        one was cut and extended by its open, so it is walked past its prefix and named anew.
 *  PA19. A crash open whose newest segment had nothing to cut (segment.c SG10) and left its
 *        fdatasync (sync other than always, with bytes past the recovery point's tail) marks
 *        the partition `unsynced`, as a round under sync=interval or none leaves what it
 *        published: the bytes the crashed run wrote and the open now serves are made durable
 *        by the paths that sync such bytes (the interval's sync_dirty, OS5 before a sleep,
 *        PA17 before a roll, the seal of a clean close), never by the open. A partition OS6
 *        slept at the open was sealed (synced) and is not marked.
 *  PA13. DeleteRecords (partition_delete_records) moves records_start, never back: the new
 *        value is stored durably (log_start.h, docs/format.md A.8) before it is published or
 *        answered, so a power loss leaves the old log start (nothing answered) or the new one.
 *        Only segments wholly below it are deleted (then and at every retention pass); the
 *        rest of the oldest segment stays on disk but no fetch starts below it. An open loads
 *        it (none, or a damaged file: 0, the oldest segment's base rules) and caps it at the
 *        log end a crash left. The last stable offset is never below the log start (an open
 *        transaction that began below it no longer pins it), as Kafka's.
 *  PA16. A clean close writes no producer snapshot for a partition whose log never held a
 *        batch (next offset 0): its open replays nothing either way, and a new topic's close
 *        then costs each partition one file, one fdatasync and one directory fsync fewer.
 *
 * Replication (Kafka's ISR, issue 24; the broker drives it through rt_partition_* calls):
 *   RL1. A partition whose leader epoch was set (partition_set_leader_epoch) stamps it into the
 *        partitionLeaderEpoch field (bytes 12..15, outside the CRC) of every batch an append
 *        places, and its leader-epoch checkpoint (leader_epoch.h, docs/format.md A.10) names the
 *        epoch's start (the log end when it was set), stored durably before the call returns.
 *        Without a checkpoint file the epoch is unset (-1) and appends leave those bytes as they
 *        always did; an open that finds a checkpoint takes its latest epoch as the one set.
 *   RL2. The checkpoint never names an epoch start past the log end: an open drops such entries
 *        (a crash lost the batches) and stores the file again. A damaged file (LE1-LE4) is
 *        rebuilt from the batches' epochs (every batch with an epoch >= 0, Kafka's assign in log
 *        order) and stored; verify reports it as a warning. So the list is always what the log
 *        says, plus at most one epoch at the log end that wrote nothing yet.
 *   RL3. A replica append (partition_note_replica_epoch and the shard's replica placement)
 *        keeps every byte of the leader's batches: offsets, epochs, producer ids, sequences,
 *        markers. Each batch's base offset is at or past the log end (no overlap; a gap only as
 *        RL8 allows it); its producer state and open transactions change as an open's replay
 *        would change them, and a new epoch in its batches is assigned and stored before the
 *        batch is written.
 *   RL4. Truncation (partition_truncate, Kafka's truncateTo) removes every batch whose last
 *        offset is at or past the offset. It is refused below the high watermark (so no record a
 *        consumer could read, and no decided transaction's marker below the LSO, is ever
 *        removed) and below the log start. Crash-safe by an intent: the checkpoint is stored
 *        first with the cut epoch list and truncate_to = the new end; then the newer segments
 *        are unlinked (newest first, one directory fsync), the bytes of the segment holding the
 *        cut are zeroed past it and fdatasynced and its offset and time indexes unlinked (an
 *        open rebuilds them), the segment reopened active (scanned, .txnindex cut), producer
 *        state reloaded (snapshots past the end removed), and the checkpoint stored without the
 *        intent. An open that finds the intent finishes it before the log is served; a failure
 *        after the intent fails the engine's write side (the reopen finishes it). So a power
 *        loss leaves the old log or the truncated one, never a partial batch.
 *   RL5. With a held high watermark (partition_set_high_watermark) the published high
 *        watermark is the caller's value, clamped to the log end and taken down to the start of
 *        the batch holding it, monotonic except when a truncation cuts below it; the LSO is
 *        min(first open transaction, it). Readers see it; replica fetches read to the published
 *        log end (pub_end) instead. Unheld, the high watermark is the log end, as before. A
 *        consumer's fetch (read_uncommitted or read_committed) past a held high watermark but
 *        not past the log end is empty, not out of range (fetch.c).
 *   RL6. An internal partition (`__consumer_offsets`, `__transaction_state`) is either led (from open on, and after
 *        log_internal_set_follower(false)) or followed (internal_follower, set by
 *        log_internal_set_follower(true), never stored). A followed one takes only replica
 *        appends and truncations; a led one takes only the engine's own appends (coordinator
 *        batches, markers): place_one (shard.c) refuses the other kind, and log_truncate a led
 *        one, so a follower's log is only ever its leader's bytes and a leader's log never takes
 *        another node's.
 *   RL7. A restart-at (partition_restart_at, Kafka's truncateFullyAndStartAt; a follower whose
 *        log end is below its leader's log start) replaces the whole log by an empty one whose
 *        base, log start and log end are the offset. Crash-safe by an intent: the file
 *        `restart-at` (log_start.h's layout) is stored first; then every segment with its
 *        indexes, every producer snapshot, the leader-epoch checkpoint, the recovery point and
 *        the cleaner checkpoint are unlinked (one directory fsync), the log start is stored, the
 *        empty segment created, and the intent unlinked (directory fsyncs before and after). An
 *        open that finds the intent does the same before it lists the segments. So a power loss
 *        leaves the old log or the empty one at the offset, never a mix; a failure after the
 *        intent fails the engine's write side until a reopen, which finishes it. Refused on a led
 *        internal partition (RL6), as truncation is.
 *   RL8. A compacted leader's log skips offsets (docs/format.md A.9 CL1), and a follower keeps
 *        them as the leader has them (Kafka's follower appends at the leader's offsets): a
 *        replica batch may begin past the log end, and may be one the leader's cleaner
 *        rewrote (records missing inside it, an empty header, a marker with a delete horizon:
 *        V10c, V13c, V15c). Every other rule holds: CRC and the batch rules, offsets strictly
 *        growing (within a call and against the log end), epochs (RL3). Before such a batch is
 *        written the partition's cleaned_end is raised past it (to the end of the call's last
 *        batch) and stored durably in the cleaner checkpoint (its pending swap, if any, kept),
 *        and the active segment takes gaps (cfg.gaps_ok) — so the segment is, to an open, to
 *        verify, to the fetch path and to the cleaner, one whose offsets may skip (CL1), as
 *        the leader's is. A cleaner's settle (cleaner.c CLB7, on its own thread) stores
 *        max(its cleaned_end, replica_gaps_end) under gaps_lock, and the replica's store takes
 *        the same lock, so neither lowers the other's cleaned_end. A gap is bounded by 2^31
 *        offsets past the log end (PAR3 with the gap counted; a larger one is refused).
 *   RL9. A user topic's partition is led after rt_partition_become_leader (replica_led) and
 *        followed after rt_partition_resign or an open (the role is not stored). A led one
 *        refuses replica appends (place_one, on the shard thread, so a role change — a shard call
 *        between rounds — is wholly before or wholly after any replica append), truncations and
 *        restarts (replica_call_step): a replica fetcher that decided to append or truncate
 *        while this node still followed can never write a leader's log once the broker has made
 *        it leader.
 */
#ifndef RT_PARTITION_H
#define RT_PARTITION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "leader_epoch.h"
#include "producer_state.h"
#include "segment.h"

struct shard;

/* The recycled segment file kept for the next roll (PA6); a *.tmp, so open and verify treat
 * a leftover as a removable leftover. */
#define PARTITION_SPARE_NAME "recycled.log.tmp"

/* A transaction open in this partition: its producer and where its first batch is. */
struct open_txn {
    int64_t producer_id;
    int64_t first_offset;
    int64_t segment_base;
    uint64_t position;
};

/* Log compaction (cleaner.c), from the topic's cleanup.policy and its companions (topic_config.h
 * TC3). compact false: the partition is never cleaned (cleanup.policy=delete). */
struct partition_compaction {
    bool compact;                /* cleanup.policy holds "compact" */
    double min_dirty_ratio;      /* min.cleanable.dirty.ratio */
    int64_t min_lag_ms;          /* min.compaction.lag.ms */
    int64_t max_lag_ms;          /* max.compaction.lag.ms */
    int64_t delete_retention_ms; /* delete.retention.ms: tombstones and markers */
    uint64_t buffer_bytes;       /* the key map's bound (rt_options.cleaner_buffer_bytes) */
};

struct partition_config {
    struct segment_config segment;
    struct partition_compaction compaction;
    int64_t segment_ms;      /* roll by age; <= 0 never */
    int64_t retention_bytes; /* -1 unlimited */
    int64_t retention_ms;    /* -1 unlimited */
    uint32_t producers_max;  /* producer table bound */
    /* PA9: a tail is stored once the active segment grew this much past the last one (checked
     * at each housekeeping period); 0 at every period that finds new bytes. */
    uint64_t checkpoint_interval_bytes;
    producer_named_fn is_named; /* the engine's named-producer registry */
    void *named_ctx;
    struct topic *topic; /* the log's topic owning the partition (log.h); never used here */
};

struct partition_watermarks {
    int64_t log_end; /* RL5: with its segment and position, for replica fetches */
    int64_t end_segment_base;
    uint64_t end_position;
    int64_t high_watermark;
    int64_t hw_segment_base; /* segment holding the high watermark's position */
    uint64_t hw_position;    /* bytes of that segment below the high watermark */
    int64_t last_stable_offset;
    int64_t lso_segment_base;
    uint64_t lso_position;
    int64_t log_start_offset;
};

struct partition_recovery {
    uint32_t segments_opened;
    bool recovered;           /* the newest segment was scanned */
    uint64_t truncated_bytes; /* torn/corrupt tail dropped */
    uint32_t indexes_rebuilt;
    uint32_t snapshots_rejected; /* corrupt producer snapshots reported and removed */
    int64_t snapshot_offset;     /* the snapshot producer state was loaded from, -1 none */
    uint64_t batches_replayed;   /* producer batches replayed after it */
    /* The recovery point (PA8, recovery_point.h). */
    uint32_t segments_trusted;          /* opened on its word: nothing of them was read */
    uint32_t segments_checked;          /* walked header by header (SC1-SC3), or scanned */
    uint64_t bytes_checked;             /* log bytes those walks and scans covered */
    uint32_t recovery_points_missing;   /* partitions with sealed segments and no checkpoint */
    uint32_t recovery_points_damaged;   /* checkpoints that failed RP1-RP5 (not trusted) */
    uint32_t recovery_point_mismatches; /* entries whose files changed since (checked instead) */
    uint32_t recovery_point_past_end;   /* entries of segments the directory does not hold */
    uint32_t recovery_points_written;   /* checkpoints this open stored */
    uint64_t tail_bytes_trusted;        /* PA9: newest-segment bytes below a tail, not scanned */
    uint32_t recovery_tails_rejected;   /* PA9: tails that did not hold (scanned from 0) */
};

struct partition {
    char *dir; /* its directory: its own allocation (not SEGMENT_PATH_BYTES in every partition),
                  made by partition_open, freed by partition_close */
    char topic[256];
    uint32_t id;
    struct shard *shard;
    struct partition_config cfg;

    pthread_mutex_t segments_lock; /* guards segments[] and segment_count */
    struct segment **segments;
    uint32_t segment_count;
    uint32_t segment_capacity;

    /* writer (shard thread) only */
    struct producer_table producers;
    struct partition_recovery recovery; /* what open found and did (tests, tools) */
    struct segment *active;
    int64_t next_offset;
    uint64_t round_position; /* where this round's writes start in the active segment */
    uint64_t round_bytes;
    uint32_t round_batches;
    bool round_touched;
    bool round_deferred;   /* a request was pushed to the next round; keep order */
    bool unsynced;         /* written since the last fdatasync (sync=interval) */
    bool round_force_sync; /* a marker in this round: fdatasync whatever the sync mode */
    bool round_lazy_only;  /* every batch of this round is a lazy marker (SH6) */
    bool frozen;           /* PA5: a round that wrote here failed; writer calls refuse */
    bool rolling;          /* PA12: inside partition_roll (a failure leaves it set) */
    /* PA12, SH10 (shard.c): the fault that froze the partition and its recovery. */
    _Atomic int fault_error;    /* the error that froze it (-errno or RT_E_*), 0 when writable */
    uint64_t fault_end_bytes;   /* the active segment's bytes failed rounds may have written */
    int64_t heal_at_ms;         /* next recovery attempt (monotonic clock) */
    uint32_t heal_backoff_ms;   /* doubles after each failed attempt, up to SHARD_HEAL_MS_MAX */
    uint32_t heal_attempts;     /* attempts since the fault */
    int64_t snapshot_offset;    /* newest producer snapshot written or loaded, -1 none */
    struct open_txn *open_txns; /* sorted by first_offset: [0] pins the LSO */
    uint32_t open_txn_count, open_txn_capacity;
    uint32_t snapshots_written;

    /* PA6: size of the recycled log at PARTITION_SPARE_NAME, 0 = none. */
    uint64_t spare_bytes;
    /* PA7: bytes the pre-writer wrote (and fdatasynced) at the head of SEGMENT_POOL_NEXT_NAME,
     * 0 = none ready; next_queued while it works on it. */
    _Atomic uint64_t next_ready_bytes;
    _Atomic bool next_queued;
    /* PA7, SP9 (segment_pool.c): the open found a leftover SEGMENT_POOL_NEXT_NAME and has not
     * had it unlinked yet (partition_leftover_dispose); no next head is asked for meanwhile. */
    _Atomic bool next_leftover;
    uint32_t recovery_points_written; /* PA8: checkpoints stored (tests) */
    /* PA8: the active segment's size and stamps when an open trusted it (bytes UINT64_MAX:
     * not trusted). A close that finds no byte appended gives its files back the mtimes they
     * had (their bytes are the same: the open's preallocation was trimmed away again), so an
     * idle open and close change no byte of the directory and the next open trusts it too. */
    uint64_t active_trusted_bytes;
    /* PA18: the active segment's prefix its open (or wake) vouched for, which its seal does not
     * walk again (bytes UINT64_MAX: none, the seal walks from 0), and the next offset there;
     * seal_bytes_walked: log bytes the seals' checks walked (tests). */
    uint64_t active_checked_bytes;
    int64_t active_checked_next;
    uint64_t seal_bytes_walked;
    /* PA9: the last tail stored (base -1: none yet), and how many were stored (tests). */
    int64_t tail_base;
    uint64_t tail_bytes;
    uint64_t tail_checkpoints;
    uint64_t run_deletions;      /* PA10: retention steps that removed segments (tests) */
    uint64_t wakes;              /* PA11: dormant newest segments made active (tests) */
    uint64_t sleeps;             /* PA15: active segments made dormant for the budget (tests) */
    uint64_t last_write_seq;     /* SH12: the shard's write_seq at its last append (LRU order) */
    int64_t records_start;       /* PA13: where DeleteRecords moved the log start, 0 none */
    int64_t active_trusted_next; /* its next offset then */
    int64_t cleaned_end;         /* writer: docs/format.md A.9 CL1, below it offsets may skip */
    uint64_t cleaner_passes;     /* writer: cleaner passes that swapped segments (tests) */
    int64_t clean_horizon_ms;    /* writer: cleaner.c CLN9, the nearest delete horizon; 0 none */
    bool clean_settle_pending;   /* cleaner.c CLB7: a finished swap's checkpoint is not cleared */
    int64_t clean_settle_end;    /* its cleaned_end (cleaners only: one at a time, CLB3) */
    _Atomic bool cleaning;       /* cleaner.c CLB3: a clean holds the partition */
    /* RL8: the cleaned_end replica appends stored (gaps allowed below it), and the lock under
     * which it and a cleaner's settle store the checkpoint, so neither lowers the other's. */
    pthread_mutex_t gaps_lock;
    _Atomic int64_t replica_gaps_end;
    _Atomic bool clean_cancel; /* cleaner.c CLB5: deleted or closing: no clean starts or swaps */
    bool clean_queued;         /* cleaner_pool.c CLP2: under the pool's lock */
    struct recovery_stamp active_trusted_stamps[RECOVERY_FILES];

    /* published (seqlock: odd while the writer updates) */
    _Atomic uint64_t seq;
    _Atomic int64_t pub_hw;
    _Atomic int64_t pub_hw_segment_base;
    _Atomic uint64_t pub_hw_position;
    _Atomic int64_t pub_lso;
    _Atomic int64_t pub_lso_segment_base;
    _Atomic uint64_t pub_lso_position;
    _Atomic int64_t pub_log_start;
    /* RL5: the log end with its position (== pub_hw unless the high watermark is held). */
    _Atomic int64_t pub_end;
    _Atomic int64_t pub_end_segment_base;
    _Atomic uint64_t pub_end_position;

    /* Replication (RL1-RL5), writer only. */
    struct leader_epoch_cache epochs; /* RL1, RL2: entries only once a checkpoint exists */
    int32_t leader_epoch;             /* RL1: stamped on appends; -1 unset */
    bool internal_follower;           /* RL6: an internal partition another node leads */
    bool replica_led;                 /* RL9: a user partition this engine was told it leads */
    bool hw_held;                     /* RL5 */
    int64_t held_hw;
    int64_t held_hw_segment_base;
    uint64_t held_hw_position;
};

/* Opens (creating if needed) the partition directory and its segments. clean: the engine shut
 * down cleanly, so the newest segment is trusted; otherwise it is scanned and repaired. */
int partition_open(struct partition *p, const char *data_dir, const char *topic, uint32_t id,
                   const struct partition_config *cfg, bool clean, struct partition_recovery *rec);

/* Seals the active segment (clean shutdown) when seal is true; releases everything. */
int partition_close(struct partition *p, bool seal);

/* No segment grows past this, whatever segment_size_bytes says: index positions are i32. */
#define SEGMENT_SIZE_MAX_BYTES ((uint64_t)INT32_MAX)

/* The smallest segment_size_bytes: Kafka 3.x's segment.bytes bound (LegacyRecord's v0 record
 * overhead). A segment file is never smaller than one control batch (SEGMENT_FILE_MIN_BYTES), so
 * markers always fit; a client batch larger than its partition's segment is refused at the
 * append with RT_E_RECORD_TOO_LARGE (log.c segment_fit_check), so an empty segment holds every
 * batch that reaches a shard (PAR4). */
#define SEGMENT_SIZE_MIN_BYTES 14u
#define SEGMENT_FILE_MIN_BYTES 78u /* CONTROL_BATCH_BYTES */

/* What the size and offset part of the roll decision looks at (a plain struct so the rule can be
 * tested without writing gigabytes). */
struct partition_roll_state {
    uint64_t size_bytes;     /* bytes in the active segment before this round */
    uint64_t round_bytes;    /* bytes this round has already placed in it */
    uint64_t capacity_bytes; /* the segment's capacity (segment_size_bytes, or the mapping) */
    int64_t base_offset;     /* the active segment's base offset */
    int64_t next_offset;     /* the partition's next offset, past this round's batches */
};

/* True when a batch of size_bytes whose last offset is next_offset + last_offset_delta does not
 * belong in the active segment: it would carry the segment past min(capacity_bytes,
 * SEGMENT_SIZE_MAX_BYTES) bytes, or an offset past base_offset + INT32_MAX (the offset index
 * stores i32 relative offsets). An empty segment takes any batch (the append checks refuse a
 * batch larger than its partition's segment before it reaches a shard). */
bool partition_roll_needed(const struct partition_roll_state *st, uint64_t size_bytes,
                           int32_t last_offset_delta);

/* Writer: ensures the active segment can take a batch of `size_bytes` with the given
 * lastOffsetDelta on top of what this round already placed there (rolling if it is full by size,
 * relative offset, index or age). Returns 0, 1 when the roll must wait because this round
 * already wrote to the active segment (the caller defers the request), or a negative error. */
int partition_make_room(struct partition *p, uint64_t size_bytes, int32_t last_offset_delta,
                        int64_t now_ms);

/* Writer: whether partition_make_room would roll the active segment for such a batch now (by
 * size, relative offset, index or age), whatever this round placed. */
bool partition_roll_due(const struct partition *p, uint64_t size_bytes, int32_t last_offset_delta,
                        int64_t now_ms);

/* Writer: after a round's bytes are acknowledged, publish the new high watermark and last
 * stable offset (the first offset of the oldest open transaction, or the high watermark), with
 * the byte position of each. Never on a frozen partition (PA5). */
void partition_publish(struct partition *p);

/* Writer (shard thread, after placing a round): asks the pre-writer for the next segment's
 * head when PA7 says it is time. */
void partition_prepare_next(struct partition *p);

/* SP9: the leftover next-segment file partition_open kept (next_leftover), handed to the
 * pre-writer to unlink (defer: an engine's open, after segment_pool_start, before the shards
 * run) or unlinked now. No-op when there is none. */
void partition_leftover_dispose(struct partition *p, bool defer);

/* Writer: a round that placed batches here failed (PA5). From now on partition_make_room,
 * partition_roll_now, partition_delete_before, partition_enforce_retention and
 * partition_snapshot_producers return RT_E_IO_FAILED and nothing is published. */
void partition_freeze(struct partition *p);

/* Writer (PA12): brings a frozen partition back to what a reopen would find — next offset at
 * the active segment's published end, producer table and open transactions reloaded from the
 * newest snapshot and the log, an interrupted roll finished — and publishes it; the caller has
 * already erased and fdatasynced every byte past that end (shard.c SH10). Returns 0 (no longer
 * frozen) or a negative error (still frozen; nothing was published, the caller retries later). */
int partition_recover(struct partition *p);

/* Writer, at placement (before the round's io): room for one more open transaction, so that
 * partition_place_txn cannot fail for a batch that starts one. Returns 0 or -ENOMEM (nothing
 * changed). */
int partition_reserve_txn(struct partition *p);

/* The .txnindex write an ABORT marker's round makes through its io ring. */
struct partition_txn_write {
    bool staged;          /* an entry to write */
    int fd;               /* the .txnindex file, or -1 (an in-memory index: nothing to write) */
    uint64_t file_offset; /* where */
    uint8_t bytes[TXN_INDEX_ENTRY_BYTES];
};

/* Writer, at placement, in append order: the transactional side of a batch placed at `position`
 * of the active segment with its base offset assigned. A transactional batch that opens a
 * transaction (txn_started) joins the open list (room reserved by partition_reserve_txn); a
 * marker closes its producer's transaction (txn_first_offset: the first offset of the transaction
 * it ended, -1 if none), and an ABORT marker stages its .txnindex entry into *w for the round to
 * write and the publish to commit (txn_index_commit_staged) or a failure to drop. Returns 0, or
 * the staging error (the open list may have changed: the caller fails the round, PA5). */
int partition_place_txn(struct partition *p, const struct batch_header *h, uint64_t position,
                        bool txn_started, int64_t txn_first_offset, int marker_type,
                        struct partition_txn_write *w);

/* Writer: calls fn for every transaction open in the partition, oldest first, with its
 * producer's epoch here; stops at (and returns) fn's first non-zero result. O(open). */
int partition_each_open_txn(const struct partition *p,
                            int (*fn)(void *ctx, const struct partition *p,
                                      const struct open_txn *t, int16_t epoch),
                            void *ctx);

/* Reader: a consistent snapshot of the watermarks. */
void partition_watermarks(struct partition *p, struct partition_watermarks *out);

/* Reader: a referenced segment containing `offset` (the last one whose base <= offset), or
 * RT_E_OFFSET_OUT_OF_RANGE when offset is below the oldest. */
int partition_segment_for(struct partition *p, int64_t offset, struct segment **out);

/* Reader: a referenced segment that follows the one starting at base_offset, or NULL. */
struct segment *partition_segment_after(struct partition *p, int64_t base_offset);

/* Writer: writes `<next_offset>.snapshot` of the producer table (and keeps only the two newest
 * snapshots). Done at every roll and at clean close. */
int partition_snapshot_producers(struct partition *p);

/* Writer: rolls to a new segment now (the active one must not be empty). */
int partition_roll_now(struct partition *p);

/* Writer: deletes whole segments whose next offset is <= offset (never the active one). Returns
 * the number deleted or a negative error. */
int partition_delete_before(struct partition *p, int64_t offset);

/* Writer (PA13): Kafka's DeleteRecords. Moves the log start to `offset` (-1: the high
 * watermark), stored durably before it is published, then deletes the segments wholly below it.
 * *low_watermark_out: the log start after the call (the current one when offset is not above
 * it: a no-op). Returns 0, RT_E_OFFSET_OUT_OF_RANGE (offset above the high watermark, or below
 * -1), RT_E_IO_FAILED (frozen, PA5) or -errno storing the file (nothing changed). */
int partition_delete_records(struct partition *p, int64_t offset, int64_t *low_watermark_out);

/* Writer, before the partition's first append after a clean open (PA11): reopens its sealed
 * newest segment as the active one. A no-op when it is active already. Returns 0 or a negative
 * error (EMFILE and the like), after which the partition is unchanged. */
int partition_wake(struct partition *p);

/* Writer, between rounds (PA15): makes the partition dormant, as a clean close and open leave
 * it (PA11): the active segment sealed (fdatasync, trim, indexes sealed: its four descriptors
 * closed; the mappings stay for readers), vouched for and named by a stored recovery point.
 * The next append wakes it (partition_wake). A no-op (0) on a partition that is dormant, frozen,
 * read-only, touched by the current round, rolling or holding published bytes not yet synced.
 * Returns 0 or a negative error from the seal, after which the partition is left `rolling` for
 * the caller to freeze (PA5) and recover by a roll (PA12). */
int partition_sleep(struct partition *p);

/* Writer, between rounds: stores the recovery point with the active segment's tail (PA9) when it
 * grew checkpoint_interval_bytes past the last tail (any bytes at all when force). Costs two
 * fdatasyncs of the active segment's files, two msyncs, a producer snapshot and a recovery-point
 * replace. Returns 0 (also when nothing was due or the partition is frozen) or a negative error;
 * a failure costs the next crash's open a longer scan, nothing else. */
int partition_checkpoint_tail(struct partition *p, bool force);

/* Writer, for the log cleaner (cleaner.c): with vouch, vouches for every sealed segment not yet
 * vouched for (PA8); then stores the recovery point (the run of vouched segments), so the next
 * open trusts the segments a swap put in, or (before a swap, its sources unvouched) names none
 * of the files the swap replaces. Returns the store's result: with vouch a failure costs the next
 * open a check of those segments; without, the cleaner must not commit (A.9 CL3). */
int partition_vouch_all(struct partition *p, bool vouch);

/* Writer: removes whole segments past retention (never the active one). Returns the number
 * deleted or a negative error. */
int partition_enforce_retention(struct partition *p, int64_t now_ms);

/* Writer (RL1): sets the leader epoch appends stamp; an epoch above the latest is assigned at the
 * log end and the checkpoint stored before return. Returns 0, RT_E_INVALID_ARGUMENT (an epoch
 * below the latest, or negative), RT_E_IO_FAILED (frozen, PA5), -errno storing the file (nothing
 * changed). */
int partition_set_leader_epoch(struct partition *p, int32_t epoch);

/* Writer: Kafka's OffsetsForLeaderEpoch answer (leader_epoch_end_offset over the log end). */
void partition_end_offset_for_epoch(struct partition *p, int32_t epoch, int64_t *end_offset,
                                    int32_t *found_epoch);

/* Writer, at placement of a replica batch (RL3): assigns the batch's epoch (>= 0) at its base
 * offset and stores the checkpoint when that adds an entry. Returns 0, RT_E_INVALID_ARGUMENT (an
 * epoch below one the log already holds batches of: the logs diverged, truncate first), -errno
 * storing the file. */
int partition_note_replica_epoch(struct partition *p, int32_t epoch, int64_t base_offset);

/* Writer, at placement of a replica batch that needs RL8's gaps (one past the log end, or one
 * the leader's cleaner rewrote): makes cleaned_end >= end durable (the cleaner checkpoint,
 * docs/format.md A.9, kept as it is but for cleaned_end) before the batch is written, so an open
 * and verify take the segment as one that may skip offsets. A no-op when cleaned_end already
 * covers end. Returns 0 or -errno storing the file (nothing changed). */
int partition_allow_replica_gaps(struct partition *p, int64_t end);

/* RL8: the cleaned_end a cleaner's settle stores, raised to what replica appends stored; the
 * caller holds p->gaps_lock across that store. */
int64_t partition_gaps_floor(struct partition *p, int64_t cleaned_end);

/* Writer (RL4): Kafka's truncateTo. *end_out: the log end after it (the base of the batch holding
 * offset, or offset when it is at a batch boundary; the log end when offset is at or past it,
 * which only cuts epoch entries). Returns 0, RT_E_OFFSET_OUT_OF_RANGE (below the high watermark
 * or the log start, or negative), RT_E_IO_FAILED (frozen), or a negative error; *after_intent
 * says whether the error came after the intent was stored (the caller then fails the write
 * side: the reopen finishes the truncation) or before (nothing changed). */
int partition_truncate(struct partition *p, int64_t offset, int64_t *end_out, bool *after_intent);

/* Writer (RL7): Kafka's truncateFullyAndStartAt. The whole log goes and an empty one starts at
 * `offset` (log start = log end = offset; no producer state, no epochs; a held high watermark is
 * set to it). *after_intent as partition_truncate's. */
int partition_restart_at(struct partition *p, int64_t offset, bool *after_intent);

/* Writer (RL5): holds the high watermark at hw (clamped to the log end, never lowered). Returns
 * 0, RT_E_INVALID_ARGUMENT (hw < 0), RT_E_IO_FAILED (frozen), RT_E_CORRUPT (a batch header in
 * the way). *hw_out: the high watermark after the call. */
int partition_set_high_watermark(struct partition *p, int64_t hw, int64_t *hw_out);

#endif /* RT_PARTITION_H */
