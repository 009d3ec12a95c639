/*
 * cleaner_checkpoint.h — a compacted partition's `cleaner-checkpoint` file (docs/format.md A.9):
 * how far the log cleaner has cleaned (cleaned_end: below it offsets may have gaps, CL1) and the
 * one segment swap it has committed but maybe not finished (the commit point of the swap
 * protocol, CL3-CL6 in cleaner.c). Kafka keeps the first figure in cleaner-offset-checkpoint and
 * finds its swaps by the `.swap` suffix; here both live in one small file per partition, so
 * the swap's commit is one atomic rename.
 *
 * Parsing is of untrusted bytes (CK1-CK4 in cleaner_checkpoint.c) and never reads outside the
 * buffer; storing is temp + fdatasync + rename + directory fsync (fs_replace_file), so a power
 * loss leaves the old file or the new one. This module never opens a segment and never decides
 * what is cleaned (cleaner.c does).
 */
#ifndef RT_CLEANER_CHECKPOINT_H
#define RT_CLEANER_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct io_fault_plan;

#define CLEANER_CHECKPOINT_FILE     "cleaner-checkpoint"
#define CLEANER_CHECKPOINT_TMP_FILE "cleaner-checkpoint.tmp"
#define CLEANER_CHECKPOINT_MAGIC    0x52544343u /* "RTCC" */
#define CLEANER_CHECKPOINT_VERSION  1
#define CLEANER_CHECKPOINT_HEADER   38u        /* bytes before the source list */
#define CLEANER_SOURCES_MAX         65536u     /* segments one swap may replace */
#define CLEANER_CLEANED_SUFFIX      ".cleaned" /* a segment file being written by the cleaner */

struct cleaner_checkpoint {
    int64_t cleaned_end; /* CL1: offsets below it may have gaps (0: nothing cleaned yet) */
    int64_t swap_base;   /* -1: no swap pending; else the new segment's base (= sources[0]) */
    int64_t swap_end;    /* the sources' end: the offset after the last source's range */
    uint32_t source_count;
    int64_t *sources; /* the base offsets of the segments the swap replaces, ascending (owned) */
};

/* Parses a file's bytes into *out (sources allocated; cleaner_checkpoint_free). Returns 0,
 * RT_E_CORRUPT with *why and *bad_offset naming the first bad field (CK1-CK4), or -ENOMEM. */
int cleaner_checkpoint_parse(const uint8_t *buf, size_t len, struct cleaner_checkpoint *out,
                             const char **why, size_t *bad_offset);

/* The file's bytes for c: *len_out = CLEANER_CHECKPOINT_HEADER + 8 * source_count bytes into a
 * malloc'd buffer. 0 or -ENOMEM. */
int cleaner_checkpoint_serialise(const struct cleaner_checkpoint *c, uint8_t **buf_out,
                                 size_t *len_out);

/* Reads the partition directory's file: 0, -ENOENT when there is none, RT_E_CORRUPT (why,
 * bad_offset) or another -errno. */
int cleaner_checkpoint_load(const char *partition_dir, struct cleaner_checkpoint *out,
                            const char **why, size_t *bad_offset);

/* Stores c durably (temp, fdatasync, rename, directory fsync) before it returns 0; -errno
 * otherwise (the old file, or none, is then what a power loss leaves). */
int cleaner_checkpoint_store(struct io_fault_plan *faults, const char *partition_dir,
                             const struct cleaner_checkpoint *c);

void cleaner_checkpoint_free(struct cleaner_checkpoint *c);

/* The steps of a segment swap (docs/format.md A.9, CL3-CL6), numbered for the crash tests. */
enum cleaner_step {
    CLEANER_STEP_WRITTEN = 1,   /* the .cleaned files are written, fdatasynced, named durably */
    CLEANER_STEP_COMMITTED,     /* the checkpoint naming the swap is stored: the commit point */
    CLEANER_STEP_SOURCE_GONE,   /* one replaced segment (not the first) unlinked */
    CLEANER_STEP_INDEXES_MOVED, /* the .cleaned indexes renamed over the first source's */
    CLEANER_STEP_LOG_MOVED,     /* the .cleaned log renamed over the first source's, dir synced
                                   (from a clean: on the cleaner's thread, CLB7) */
    CLEANER_STEP_DONE,          /* the checkpoint without the swap is stored */
    /* Not a swap step: a group's .cleaned files are sealed, on the cleaner's own thread, and
     * its swap call is not made yet (cleaner.c CLB1, CLB4; tests act on the engine here). */
    CLEANER_STEP_SEALED = 7,
};

/* Tests only (ringtail_test.h rt_test_cleaner_hook_set): called after each step, from the
 * thread that runs it. NULL in every other program. */
extern void (*cleaner_step_hook)(int step, void *ctx);
extern void *cleaner_step_hook_ctx;
void cleaner_step(enum cleaner_step step);

/* CL5: finishes the committed swap c names (c->source_count > 0) in partition_dir: unlinks every
 * source but the first, renames the .cleaned indexes and then the .cleaned log over the first
 * source's files, fsyncs the directory, stores c without the swap (and clears it in memory).
 * Every step may have run before (a crash mid-way): a missing file is a step already done.
 * Returns 0 or -errno (the swap stays committed; the next open finishes it). */
int cleaner_swap_finish(struct io_fault_plan *faults, const char *partition_dir,
                        struct cleaner_checkpoint *c);

/* CL5 in two halves (cleaner.c CLB7): cleaner_swap_move unlinks and renames (no sync: cheap, on
 * the shard thread, before the list changes); cleaner_swap_settle fsyncs the directory and
 * stores c without the swap (and clears it in memory), on the cleaner's thread. The two in a row
 * are cleaner_swap_finish. Returns 0 or -errno (the swap stays committed). */
int cleaner_swap_move(struct io_fault_plan *faults, const char *partition_dir,
                      const struct cleaner_checkpoint *c);
int cleaner_swap_settle(struct io_fault_plan *faults, const char *partition_dir,
                        struct cleaner_checkpoint *c);

/* At a writable open, before the segments are listed (CL6): loads the checkpoint, finishes a
 * committed swap and says where cleaning ended (*cleaned_end_out, 0 without a checkpoint). The
 * `*.cleaned` files then left are an uncommitted swap's: the listing removes them
 * (partition.c list_segments), as it removes other leftovers. read_only: nothing is changed; a
 * committed swap is RT_E_READ_ONLY (a writable open must finish it first). A damaged checkpoint
 * is RT_E_CORRUPT naming the file. */
int cleaner_checkpoint_recover(struct io_fault_plan *faults, const char *partition_dir,
                               bool read_only, int64_t *cleaned_end_out);

#endif /* RT_CLEANER_CHECKPOINT_H */
