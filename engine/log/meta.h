/*
 * meta.h — the data directory's topic catalogue, `<dir>/ringtail.meta`, and the directory's
 * other small files (lock, clean-shutdown marker). docs/format.md §A is normative.
 *
 * ringtail.meta (all integers big-endian):
 *   offset  size  field
 *   0       4     magic 0x52544D44 ("RTMD")
 *   4       2     version (1, or 2 when any topic has configs)
 *   6       4     crc: CRC-32C over bytes [10, end)
 *   10      4     topic_count
 *   14      ...   topic_count entries: name_len u16 (1..249), name bytes, partitions u32 (>= 1);
 *                 version 2 adds config_count u8, then config_count pairs key_len u8, key,
 *                 value_len u8, value (topic_config.h: known keys, ascending, canonical values)
 * The file ends exactly after the last entry. It is replaced atomically (write
 * ringtail.meta.tmp, fdatasync, rename, fsync the directory), so a crash leaves the old or the
 * new catalogue, never a mix. This module parses and serialises; it never touches segments.
 */
#ifndef RT_META_H
#define RT_META_H

#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"
#include "topic_config.h"

#define META_FILE            "ringtail.meta"
#define META_TMP_FILE        "ringtail.meta.tmp"
#define META_LOCK_FILE       ".lock"
#define META_CLEAN_FILE      ".clean_shutdown"
#define META_MAGIC           0x52544D44u
#define META_VERSION         1
#define META_VERSION_CONFIGS 2 /* written when any topic has configs (M5) */
#define META_HEADER_BYTES    14

struct meta_topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partitions;
    struct topic_config config; /* the topic's overrides (version 2) */
};

struct meta_catalogue {
    struct meta_topic *topics;
    uint32_t count;
    uint32_t capacity;
};

/* True when name is a legal topic name: 1..249 bytes of [a-zA-Z0-9._-], not "." or "..". */
bool meta_topic_name_valid(const char *name);

/* True when name is reserved for an internal topic: it begins with "__" (Kafka's convention for
 * __consumer_offsets and __transaction_state). Only the engine creates or writes such topics;
 * they do not count against topics_max. */
bool meta_topic_name_internal(const char *name);

/* Parses bytes (untrusted). On success fills *out (caller frees with meta_catalogue_free).
 * Returns 0, RT_E_CORRUPT with *why and *bad_offset set, or -ENOMEM. Rejects duplicate and
 * invalid names, zero partitions, trailing bytes. */
int meta_parse(const uint8_t *buf, size_t len, struct meta_catalogue *out, const char **why,
               size_t *bad_offset);

/* Serialises into a malloc'd buffer. Returns 0 or -ENOMEM. */
int meta_serialise(const struct meta_catalogue *cat, uint8_t **buf_out, size_t *len_out);

/* Reads dir/ringtail.meta; a missing file is an empty catalogue. RT_E_CORRUPT sets the thread's
 * error detail with the path and offset. */
int meta_load(const char *dir, struct meta_catalogue *out);

/* True when dir holds a "<name>-<digits>" directory (partition data), with its name in
 * name_out: a missing catalogue is then damage, not a fresh directory (open refuses, verify
 * reports it). */
bool meta_orphan_partition(const char *dir, char *name_out, size_t cap);

/* Atomically replaces dir/ringtail.meta (fs_replace_file; `faults`: the engine's fault plan or
 * NULL). */
struct io_fault_plan;
int meta_store(struct io_fault_plan *faults, const char *dir, const struct meta_catalogue *cat);
/* meta_store, telling in *renamed whether the new catalogue replaced the old one (false on a
 * failure: ringtail.meta is as it was). */
int meta_store_renamed(struct io_fault_plan *faults, const char *dir,
                       const struct meta_catalogue *cat, bool *renamed);

/* Appends a topic (validates name and uniqueness). */
int meta_add_topic(struct meta_catalogue *cat, const char *name, uint32_t partitions);

const struct meta_topic *meta_find(const struct meta_catalogue *cat, const char *name);

/* Takes topic `name` out (order kept) into *out (the caller owns its config); its former
 * index in *index_out. RT_E_UNKNOWN_TOPIC_OR_PARTITION when absent. */
int meta_remove_topic(struct meta_catalogue *cat, const char *name, struct meta_topic *out,
                      uint32_t *index_out);

/* Puts `t` back at `index` (undoing meta_remove_topic; capacity is there). */
void meta_insert_topic(struct meta_catalogue *cat, const struct meta_topic *t, uint32_t index);
struct meta_topic *meta_find_mut(struct meta_catalogue *cat, const char *name);

void meta_catalogue_free(struct meta_catalogue *cat);

/* "<dir>/<topic>-<partition>" and "<partition dir>/<20-digit base>.<ext>" into buf. Return 0 or
 * -ENAMETOOLONG. */
int meta_partition_dir(char *buf, size_t cap, const char *dir, const char *topic,
                       uint32_t partition);
int meta_segment_file(char *buf, size_t cap, const char *partition_dir, int64_t base_offset,
                      const char *ext);

#endif /* RT_META_H */
