/*
 * recovery_point.h — a partition's recovery-point checkpoint (`<topic>-<p>/recovery-point`,
 * docs/format.md A.7): the offset below which the log is durable and was checked, and for each
 * sealed segment below it what the checks found and the size and modification time of each of
 * its four files when they were recorded. Kafka's recovery-point-offset-checkpoint plays the
 * same part: after a clean shutdown an open trusts what it names and reads no segment data.
 *
 * It is a cache of checks, never a source of data: a segment whose files differ in size or
 * modification time from what is recorded, or that the file does not name, is checked at open as
 * before (OV1-OV3 in docs/format.md I), and a damaged or missing file makes open check every
 * segment. Parsing is of untrusted bytes (RP1-RP5 in recovery_point.c) and never reads outside
 * the buffer; storing is temp + fdatasync + rename + directory fsync (fs_replace_file).
 *
 * This module never opens a segment, never decides what is trusted (partition.c does, by
 * comparing stamps) and never reads a segment's bytes.
 */
#ifndef RT_RECOVERY_POINT_H
#define RT_RECOVERY_POINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct io_fault_plan;

#define RECOVERY_POINT_FILE         "recovery-point"
#define RECOVERY_POINT_TMP_FILE     "recovery-point.tmp"
#define RECOVERY_POINT_MAGIC        0x52545250u /* "RTRP" */
#define RECOVERY_POINT_VERSION      1           /* no tail block */
#define RECOVERY_POINT_VERSION_TAIL 2           /* the entries are followed by a tail block */
#define RECOVERY_POINT_HEADER_BYTES 22
#define RECOVERY_POINT_ENTRY_BYTES  96
#define RECOVERY_POINT_TAIL_BYTES   56
/* Bounds the file (and what a parse allocates): far more segments than a partition can hold
 * open (docs/limits.md). */
#define RECOVERY_POINT_SEGMENTS_MAX (1u << 20)
/* mtime_ns of a file that did not exist when it was stamped (a .txnindex is created lazily). */
#define RECOVERY_STAMP_MISSING INT64_MIN

/* What stat(2) says of one file: its size and modification time. Reading it reads no data. */
struct recovery_stamp {
    uint64_t bytes;
    int64_t mtime_ns; /* RECOVERY_STAMP_MISSING: no such file (bytes 0) */
};

enum recovery_file { RECOVERY_LOG, RECOVERY_INDEX, RECOVERY_TIMEINDEX, RECOVERY_TXNINDEX };
#define RECOVERY_FILES 4

/* One sealed segment as its seal (or an open's full check) found it. */
struct recovery_segment {
    int64_t base_offset;
    int64_t next_offset;          /* last offset + 1 (base when empty) */
    int64_t max_timestamp;        /* largest batch maxTimestamp, -1 when none */
    int64_t max_timestamp_offset; /* the offset the time index pairs with it */
    struct recovery_stamp files[RECOVERY_FILES];
};

/* The active segment's checked, durable prefix (version 2 only; docs/format.md A.7 RP6): after a
 * crash an open scans that segment from `bytes` on, not from 0 (PA9 in partition.h). */
struct recovery_tail {
    int64_t base_offset;          /* the active segment's base: the last entry's next_offset */
    uint64_t bytes;               /* the prefix: whole batches, fdatasynced, 0 < bytes < 2^31 */
    int64_t next_offset;          /* offset after its last batch */
    int64_t max_timestamp;        /* largest batch maxTimestamp in the prefix, -1 when none */
    int64_t max_timestamp_offset; /* the offset the time index pairs with it */
    uint64_t last_batch_position; /* where the prefix's last batch starts */
    uint32_t index_entries;       /* .index entries that describe the prefix (synced) */
    uint32_t timeindex_entries;   /* .timeindex entries likewise */
};

struct recovery_point {
    int64_t offset; /* the recovery point: the tail's next_offset when there is a tail, else
                       next_offset of the last segment (0 when none) */
    uint32_t count;
    struct recovery_segment *segments; /* ascending, dense (RP3) */
    bool has_tail;
    struct recovery_tail tail;
};

/* Parses a whole file. Returns 0, RT_E_CORRUPT (*why static, *bad_offset the byte offset of the
 * first bad field) or -ENOMEM. On success out owns its segments (recovery_point_free). */
int recovery_point_parse(const uint8_t *buf, size_t len, struct recovery_point *out,
                         const char **why, size_t *bad_offset);

/* The file's bytes for rp (which must satisfy RP3/RP4: asserted); *buf_out is malloc'd. */
int recovery_point_serialise(const struct recovery_point *rp, uint8_t **buf_out, size_t *len_out);

/* Reads and parses partition_dir/recovery-point: 0, -ENOENT (no file), RT_E_CORRUPT (*why,
 * *bad_offset), or another -errno. */
int recovery_point_load(const char *partition_dir, struct recovery_point *out, const char **why,
                        size_t *bad_offset);

/* Replaces partition_dir/recovery-point atomically and durably. */
int recovery_point_store(struct io_fault_plan *faults, const char *partition_dir,
                         const struct recovery_point *rp);

void recovery_point_free(struct recovery_point *rp);

/* The entry for the segment at base_offset, or NULL. O(log n). */
const struct recovery_segment *recovery_point_find(const struct recovery_point *rp,
                                                   int64_t base_offset);

/* Stamps path (stat; a missing file is RECOVERY_STAMP_MISSING). Returns 0 or -errno. */
int recovery_stamp(const char *path, struct recovery_stamp *out);

/* Stamps the four files of the segment at base_offset in partition_dir. */
int recovery_stamp_segment(const char *partition_dir, int64_t base_offset,
                           struct recovery_stamp files[RECOVERY_FILES]);

bool recovery_stamps_equal(const struct recovery_stamp a[RECOVERY_FILES],
                           const struct recovery_stamp b[RECOVERY_FILES]);

#endif /* RT_RECOVERY_POINT_H */
