/*
 * log_start.h — a partition's log-start-offset file (`<topic>-<p>/log-start-offset`,
 * docs/format.md A.8): the offset DeleteRecords moved the log start to (Kafka's
 * log-start-offset-checkpoint, one file per partition here). Below it no record is served, even
 * where a segment still holds it (a segment is deleted only when wholly below, PA13).
 *
 * Parsing is of untrusted bytes (LS1-LS2 in log_start.c) and never reads outside the buffer;
 * storing is temp + fdatasync + rename + directory fsync (fs_replace_file), so a power loss
 * leaves either the old file or the new one. This module never opens a segment and never
 * decides what a partition serves (partition.c does).
 */
#ifndef RT_LOG_START_H
#define RT_LOG_START_H

#include <stddef.h>
#include <stdint.h>

struct io_fault_plan;

#define LOG_START_FILE     "log-start-offset"
#define LOG_START_TMP_FILE "log-start-offset.tmp"
#define LOG_START_MAGIC    0x52544c53u /* "RTLS" */
#define LOG_START_VERSION  1
#define LOG_START_BYTES    18

/* RL7: a restart-at in progress (partition_restart_at), in this module's layout: the offset the
 * partition's log restarts at. Stored before any file of the old log is removed; removed once the
 * new empty log is durable. An open that finds it finishes the restart first. */
#define LOG_RESTART_FILE     "restart-at"
#define LOG_RESTART_TMP_FILE "restart-at.tmp"

/* Parses a file's bytes into *offset_out. Returns 0, or RT_E_CORRUPT with *why and *bad_offset
 * naming the first bad field (LS1-LS2). */
int log_start_parse(const uint8_t *buf, size_t len, int64_t *offset_out, const char **why,
                    size_t *bad_offset);

/* The file's bytes for `offset` (>= 0) into buf[LOG_START_BYTES]. */
void log_start_serialise(int64_t offset, uint8_t buf[LOG_START_BYTES]);

/* Reads the partition directory's file: 0 with *offset_out, -ENOENT when there is none,
 * RT_E_CORRUPT (why, bad_offset) or another -errno. */
int log_start_load(const char *partition_dir, int64_t *offset_out, const char **why,
                   size_t *bad_offset);

/* Stores `offset` durably (temp, fdatasync, rename, directory fsync) before it returns 0;
 * -errno otherwise (the old file, or none, is then what a power loss leaves). */
int log_start_store(struct io_fault_plan *faults, const char *partition_dir, int64_t offset);

/* As log_start_load and log_start_store, for the file `name` (temp `tmp_name`) of the same layout
 * (LOG_RESTART_FILE). */
int log_start_load_named(const char *partition_dir, const char *name, int64_t *offset_out,
                         const char **why, size_t *bad_offset);
int log_start_store_named(struct io_fault_plan *faults, const char *partition_dir,
                          const char *tmp_name, const char *name, int64_t offset);

#endif /* RT_LOG_START_H */
