/*
 * topic_config.h — a topic's configs: Kafka's topic-level config names, how each value is
 * checked (Kafka's LogConfig validators), the one spelling a value is kept in, and which of
 * them the engine acts on. A topic's overrides are stored in its catalogue entry
 * (ringtail.meta version 2, docs/format.md A.2); this module only checks, spells and decodes
 * them. It never touches a file, a partition or a shard.
 *
 * TC1  Only names in the table are accepted; any other is RT_E_INVALID_CONFIG naming it, as
 *      Kafka's AdminManager refuses an unknown topic config (INVALID_CONFIG).
 * TC2  A value is kept in one spelling (topic_config_check's canonical form: decimal integers
 *      without sign or zeros in front, booleans in lower case, list items without spaces), so a
 *      catalogue has one encoding and fuzz_meta can ask for byte-identical round trips.
 * TC3  The engine acts on retention.ms, retention.bytes, segment.bytes, segment.ms (an append
 *      rolls an active segment older than it; a compacted partition's idle one rolls by
 *      min(segment.ms, max.compaction.lag.ms): cleaner.c CLN10), max.message.bytes,
 *      message.timestamp.type, and on cleanup.policy ("delete", "compact" or both: the log
 *      cleaner, cleaner.c) with min.cleanable.dirty.ratio, min.compaction.lag.ms,
 *      max.compaction.lag.ms and delete.retention.ms (TOPIC_CONFIG_HONOURED). A policy without
 *      "delete" turns time and size retention off, as Kafka does. Every other name is checked
 *      and kept, and reported by rt_topic_config_get, but changes nothing the engine does
 *      (docs/format.md A.2 lists them).
 * TC4  A user topic's value of a config is its own override, else the engine's dynamic
 *      default (rt_topic_config_defaults_alter; struct log's dyn_defaults, in memory only,
 *      never in the catalogue), else the engine's option or Kafka's default. A change of a
 *      dynamic default is applied at once to every user topic without the override, as an
 *      alter of the topic's own is (log.c topic_apply); internal topics never take one.
 */
#ifndef RT_TOPIC_CONFIG_H
#define RT_TOPIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

/* The names, in the order a catalogue entry lists them (ascending by this id). */
enum topic_config_key {
    TC_CLEANUP_POLICY = 0,
    TC_COMPRESSION_TYPE,
    TC_DELETE_RETENTION_MS,
    TC_FILE_DELETE_DELAY_MS,
    TC_FLUSH_MESSAGES,
    TC_FLUSH_MS,
    TC_FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
    TC_INDEX_INTERVAL_BYTES,
    TC_LEADER_REPLICATION_THROTTLED_REPLICAS,
    TC_LOCAL_RETENTION_BYTES,
    TC_LOCAL_RETENTION_MS,
    TC_MAX_COMPACTION_LAG_MS,
    TC_MAX_MESSAGE_BYTES,
    TC_MESSAGE_DOWNCONVERSION_ENABLE,
    TC_MESSAGE_FORMAT_VERSION,
    TC_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS,
    TC_MESSAGE_TIMESTAMP_TYPE,
    TC_MIN_CLEANABLE_DIRTY_RATIO,
    TC_MIN_COMPACTION_LAG_MS,
    TC_MIN_INSYNC_REPLICAS,
    TC_PREALLOCATE,
    TC_REMOTE_STORAGE_ENABLE,
    TC_RETENTION_BYTES,
    TC_RETENTION_MS,
    TC_SEGMENT_BYTES,
    TC_SEGMENT_INDEX_BYTES,
    TC_SEGMENT_JITTER_MS,
    TC_SEGMENT_MS,
    TC_UNCLEAN_LEADER_ELECTION_ENABLE,
    TC_KEYS /* count */
};

#define TOPIC_CONFIG_VALUE_MAX 255 /* bytes of one value (a u8 length on disk) */

/* A topic's overrides: value[k] is the canonical spelling (TC2), NULL where the default
 * applies. Owned: topic_config_free releases the strings. */
struct topic_config {
    char *value[TC_KEYS];
};

/* What the engine acts on (TC3), decoded from a topic_config over the engine's options. */
struct topic_config_honoured {
    int64_t retention_ms;
    int64_t retention_bytes;
    uint64_t segment_bytes;
    int64_t segment_ms; /* roll the active segment by age (partition.c, cleaner.c CLN10) */
    uint32_t max_message_bytes;
    enum rt_timestamp_type timestamp_type;
    bool compact;        /* cleanup.policy holds "compact" */
    bool delete_enabled; /* cleanup.policy holds "delete" */
    double min_dirty_ratio;
    int64_t min_compaction_lag_ms;
    int64_t max_compaction_lag_ms;
    int64_t delete_retention_ms;
};

/* The id of `name`, or -1 when it is not a topic config (TC1). */
int topic_config_key(const char *name);
const char *topic_config_name(enum topic_config_key k);

/* True for the keys the engine acts on (TC3). */
bool topic_config_honoured(enum topic_config_key k);

/* Checks `value` for `name` as Kafka would; on success writes its canonical spelling (TC2)
 * into canon (TOPIC_CONFIG_VALUE_MAX + 1 bytes) and *key_out. RT_E_INVALID_CONFIG with the
 * thread's error detail naming the key and the rule otherwise. */
int topic_config_check(const char *name, const char *value, int *key_out,
                       char canon[TOPIC_CONFIG_VALUE_MAX + 1]);

/* Sets (a copy of canon) or clears (canon NULL) key k. 0 or -ENOMEM. */
int topic_config_set(struct topic_config *c, enum topic_config_key k, const char *canon);

/* Deep copy into *dst (which must be empty). 0 or -ENOMEM (dst left empty). */
int topic_config_copy(struct topic_config *dst, const struct topic_config *src);
void topic_config_free(struct topic_config *c);
uint32_t topic_config_count(const struct topic_config *c);

/* The engine's value of key k where the topic sets none (from opts, or Kafka's default). */
void topic_config_default(const struct rt_options *opts, enum topic_config_key k, char *buf,
                          size_t cap);

/* True when the default of k comes from an rt_options field that differs from
 * rt_options_init's (an operator's choice: Kafka's STATIC_BROKER_CONFIG). */
bool topic_config_default_from_options(const struct rt_options *opts, enum topic_config_key k);

/* The honoured values of c over the engine's options (user topics). */
void topic_config_resolve(const struct topic_config *c, const struct rt_options *opts,
                          struct topic_config_honoured *out);

#endif /* RT_TOPIC_CONFIG_H */
