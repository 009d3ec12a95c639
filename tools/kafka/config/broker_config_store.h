/*
 * broker_config_store.h — the dynamic broker configs of a data directory on disk:
 * `broker-configs.meta` (docs/format.md K), read whole or not at all, replaced atomically
 * (temp file, fsync, rename, directory fsync). It owns the file's bytes and nothing else: the
 * names, checks and levels are broker_config.c's, the answers handle_admin.c's.
 *
 *   BS1  A load either returns every entry of a valid file or fails naming the file and the
 *        byte offset of the first bad byte; nothing of a corrupt file is ever applied. Valid
 *        means the structure, and each entry's name, level and value as broker_config.h
 *        BC1-BC3 accept them in canonical spelling, entries strictly ordered.
 *   BS2  A save never leaves a half-written file: readers see the old file or the new, and
 *        the broker answers an AlterConfigs only after the new file is durable.
 */
#ifndef RT_KAFKA_BROKER_CONFIG_STORE_H
#define RT_KAFKA_BROKER_CONFIG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/config/broker_config.h"

#define BROKER_CONFIG_STORE_FILE    "broker-configs.meta"
#define BROKER_CONFIG_STORE_MAGIC   0x52544243u /* "RTBC" */
#define BROKER_CONFIG_STORE_VERSION 1u
#define BROKER_CONFIG_STORE_HEADER  14u /* magic, version, crc, count */
#define BROKER_CONFIG_STORE_ENTRY   5u  /* level, name len, value len: the least an entry is */

/* Parses a whole file's bytes into `out` (emptied first). 0; RT_E_CORRUPT with *why and
 * *bad_offset; -ENOMEM. */
int broker_config_store_parse(const uint8_t *buf, size_t len, struct broker_config_set *out,
                              const char **why, size_t *bad_offset);
/* Encodes `s` as a whole file into a malloc'd buffer. 0 or -ENOMEM. */
int broker_config_store_encode(const struct broker_config_set *s, uint8_t **buf, size_t *len);
/* Loads DIR/broker-configs.meta (a missing file is an empty set). 0, or RT_E_CORRUPT /
 * -errno with `err` naming the file, the offset and the reason. */
int broker_config_store_load(const char *dir, struct broker_config_set *out, char *err,
                             size_t errlen);
/* Replaces DIR/broker-configs.meta with `s` (BS2). 0 or -errno with `err`. */
int broker_config_store_save(const char *dir, const struct broker_config_set *s, char *err,
                             size_t errlen);

#endif /* RT_KAFKA_BROKER_CONFIG_STORE_H */
