/*
 * leader_epoch.h — a partition's leader-epoch checkpoint (`<topic>-<p>/leader-epoch-checkpoint`,
 * docs/format.md A.10): Kafka's LeaderEpochFileCache, the list of (leader epoch, start offset of
 * that epoch) a replicated partition answers OffsetsForLeaderEpoch from (KIP-101/279), and a
 * truncation in progress (rt_partition_truncate's intent, partition.h RL4).
 *
 * This module owns the list's rules (assign, truncate from the end, the end offset for an epoch),
 * the file's bytes (LE1-LE4 in leader_epoch.c; parsing is of untrusted bytes and never reads
 * outside the buffer) and its atomic replacement (fs_replace_file: temp + fdatasync + rename +
 * directory fsync, so a power loss leaves the old file or the new one). It never opens a segment
 * and never decides when the list changes (partition.c does).
 */
#ifndef RT_LEADER_EPOCH_H
#define RT_LEADER_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct io_fault_plan;

#define LEADER_EPOCH_FILE         "leader-epoch-checkpoint"
#define LEADER_EPOCH_TMP_FILE     "leader-epoch-checkpoint.tmp"
#define LEADER_EPOCH_MAGIC        0x52544c45u /* "RTLE" */
#define LEADER_EPOCH_VERSION      1
#define LEADER_EPOCH_HEADER_BYTES 22
#define LEADER_EPOCH_ENTRY_BYTES  12
#define LEADER_EPOCH_ENTRIES_MAX  65536u /* LE1: a bound on the file, never reached in practice */

struct leader_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

/* Entries in epoch order: epochs and start offsets both strictly increasing (LE3). */
struct leader_epoch_cache {
    struct leader_epoch_entry *entries;
    uint32_t count, capacity;
    int64_t truncate_to; /* -1, or a truncation in progress (partition.h RL4) */
};

void leader_epoch_init(struct leader_epoch_cache *c);
void leader_epoch_free(struct leader_epoch_cache *c);

/* The latest epoch, -1 when the list is empty. */
int32_t leader_epoch_latest(const struct leader_epoch_cache *c);

/* Kafka's assign: epoch starts at start_offset. Returns 1 when the list gained the entry, 0 when
 * epoch is already the latest (its first start stays), RT_E_INVALID_ARGUMENT when epoch is below
 * the latest or start_offset below the latest entry's start, -ENOMEM. */
int leader_epoch_assign(struct leader_epoch_cache *c, int32_t epoch, int64_t start_offset);

/* Kafka's truncateFromEnd: removes every entry whose start offset is >= end_offset. Returns
 * whether an entry was removed. */
bool leader_epoch_truncate_from_end(struct leader_epoch_cache *c, int64_t end_offset);

/* Kafka's endOffsetFor (OffsetsForLeaderEpoch, KIP-101/279): for `epoch`, the largest epoch <= it
 * the list knows (*found_epoch) and the start offset of the next higher epoch, or log_end when
 * epoch is the latest. An epoch below the earliest answers (epoch, earliest start); above the
 * latest, or an empty list, answers (-1, -1) (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET). */
void leader_epoch_end_offset(const struct leader_epoch_cache *c, int32_t epoch, int64_t log_end,
                             int64_t *end_offset, int32_t *found_epoch);

/* Parses a file's bytes into *out (initialised here; free with leader_epoch_free). Returns 0,
 * RT_E_CORRUPT with *why and *bad_offset naming the first bad field (LE1-LE4), or -ENOMEM. */
int leader_epoch_parse(const uint8_t *buf, size_t len, struct leader_epoch_cache *out,
                       const char **why, size_t *bad_offset);

/* The file's bytes for c into a malloc'd buffer of *len_out bytes. -ENOMEM or 0. */
int leader_epoch_serialise(const struct leader_epoch_cache *c, uint8_t **buf_out, size_t *len_out);

/* Reads the partition directory's file: 0 with *out, -ENOENT when there is none, RT_E_CORRUPT
 * (why, bad_offset) or another -errno. */
int leader_epoch_load(const char *partition_dir, struct leader_epoch_cache *out, const char **why,
                      size_t *bad_offset);

/* Stores c durably (temp, fdatasync, rename, directory fsync) before it returns 0; -errno
 * otherwise (the old file, or none, is then what a power loss leaves). */
int leader_epoch_store(struct io_fault_plan *faults, const char *partition_dir,
                       const struct leader_epoch_cache *c);

#endif /* RT_LEADER_EPOCH_H */
