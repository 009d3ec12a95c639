/*
 * broker_config.h — dynamic broker configs as Kafka has them (DynamicBrokerConfig): the names a
 * running broker takes through AlterConfigs / IncrementalAlterConfigs on a BROKER resource,
 * each with Kafka's type, validator and level (per-broker only, or also as the cluster-wide
 * default), how a value is checked and spelled, and the set a broker holds (two levels: this
 * broker's, resource name = its id; the cluster default, resource name ""). It owns the
 * table, the checks and the in-memory set; it never touches a file (broker_config_store.c)
 * and never decodes a request or decides an answer (handle_admin.c).
 *
 *   BC1  Only the table's names are dynamic; every other broker config is read-only (Kafka's
 *        "Cannot update these configs dynamically", INVALID_REQUEST). Kafka also stores names
 *        it does not know (custom configs for plugins); ringtail has no plugins and refuses
 *        them as not dynamic. Listener-prefixed names (listener.name.L.x) are not supported
 *        and refused the same way.
 *   BC2  A value is checked by its config's Kafka type (INT, SHORT, LONG, DOUBLE, BOOLEAN,
 *        STRING, LIST, CLASS) and validator (ranges, the allowed strings) and kept in one
 *        spelling (broker_config_check's canonical form: trimmed; integers in decimal without
 *        sign or zeros in front unless negative; booleans lower case; list items trimmed and
 *        joined by ","), so a stored file has one encoding. PASSWORD configs are refused as
 *        Kafka refuses them without password.encoder.secret, which ringtail does not have.
 *   BC3  Per-broker configs (Kafka's PerBrokerConfigs: listener, SSL and SASL configs) are
 *        refused at the cluster-default level; SSL keystore/truststore configs
 *        (DynamicSecurityConfigs) only exist per listener and are refused without a prefix.
 *   BC4  What ringtail applies: the DynamicLogConfig names whose topic synonym the engine
 *        acts on (`applied` true: log.retention.ms, log.retention.bytes, message.max.bytes,
 *        log.message.timestamp.type, log.roll.ms, log.cleanup.policy and the log.cleaner.*
 *        compaction ones; BC5). Every other dynamic config is stored-only (`applied`
 *        false, the reason in broker_config.c's comment): the network's limits and thread
 *        counts are fixed at net_start, the listeners and TLS/SASL settings at start, and the
 *        log cleaner, replica fetchers and metric reporters it has differ from Kafka's.
 *        Stored values are reported by DescribeConfigs and survive restarts.
 *   BC5  A DynamicLogConfig name (`topic` set: Kafka's LogConfig synonym of a topic config)
 *        is the default of that topic config for every topic without its own override, as
 *        Kafka's DynamicLogConfig: this broker's value wins over the cluster default's, and
 *        with neither the engine's option applies. broker_config_apply gives the whole
 *        mapping to the engine (rt_topic_config_defaults_alter) at start, from the stored
 *        file, and after every change of the set; the engine keeps it in memory only.
 */
#ifndef RT_KAFKA_BROKER_CONFIG_H
#define RT_KAFKA_BROKER_CONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

struct broker_config_set;

/* Kafka's ConfigType ids (DescribeConfigs v3's config_type). */
enum broker_config_type {
    BCT_BOOLEAN = 1,
    BCT_STRING = 2,
    BCT_INT = 3,
    BCT_SHORT = 4,
    BCT_LONG = 5,
    BCT_DOUBLE = 6,
    BCT_LIST = 7,
    BCT_CLASS = 8,
    BCT_PASSWORD = 9,
};

/* The two levels a dynamic broker config is set at (the file's scope byte). */
enum broker_config_level {
    BCL_BROKER = 0,  /* this broker: resource name = its id (DYNAMIC_BROKER_CONFIG) */
    BCL_DEFAULT = 1, /* the cluster-wide default: resource name "" (DYNAMIC_DEFAULT_...) */
    BCL_LEVELS = 2,
};

struct broker_config_def {
    const char *name;
    uint8_t type;       /* enum broker_config_type */
    bool per_broker;    /* BC3: not at the default level */
    bool listener_only; /* BC3: only with a listener prefix (refused here) */
    bool has_min, has_max;
    double min, max;    /* the validator's range (numbers), inclusive */
    const char *one_of; /* a ',' list of allowed values (strings, list items), or NULL */
    const char *topic;  /* BC5: the topic config it is the broker synonym of, or NULL */
    bool applied;       /* BC4: the engine acts on it */
};

#define BROKER_CONFIG_VALUE_MAX 1024 /* bytes of one value */

/* The table's size, and its k-th entry (0 <= k < broker_config_count()). */
size_t broker_config_count(void);
const struct broker_config_def *broker_config_def(size_t k);
/* The index of `name` in the table, or -1 (BC1). */
int broker_config_find(const char *name);

/* The index of the entry whose topic synonym is `topic_name` (BC5), or -1. */
int broker_config_find_topic(const char *topic_name);

/* BC5: gives the engine every DynamicLogConfig name's value (this broker's level over the
 * cluster default; NULL where neither is set) as its dynamic topic defaults. A value the
 * engine's topic rule refuses is left out (counted in *refused, may be NULL) and the others
 * applied. 0 or rt_topic_config_defaults_alter's error. */
int broker_config_apply(rt_engine *engine, const struct broker_config_set *s, size_t *refused);

/* Checks `value` for entry k (BC2); on success writes the canonical spelling into canon
 * (BROKER_CONFIG_VALUE_MAX + 1 bytes) and returns 0; else -1 with the reason in why. */
int broker_config_check(size_t k, const char *value, char *canon, char *why, size_t whylen);

/* A broker's dynamic configs: value[level][k] is the canonical spelling, NULL when unset. */
#define BROKER_CONFIG_MAX 96 /* the table has fewer entries (a static check in the .c) */
struct broker_config_set {
    char *value[BCL_LEVELS][BROKER_CONFIG_MAX];
};

/* Sets (a copy of v) or clears (v NULL). 0 or -ENOMEM. */
int broker_config_set_put(struct broker_config_set *s, int level, size_t k, const char *v);
/* Deep copy into *dst (empty). 0 or -ENOMEM (dst left empty). */
int broker_config_set_copy(struct broker_config_set *dst, const struct broker_config_set *src);
void broker_config_set_free(struct broker_config_set *s);
uint32_t broker_config_set_count(const struct broker_config_set *s);

/* What a running broker holds: the set under a lock (DescribeConfigs reads it from network
 * threads; AlterConfigs replaces it from the admin thread after the file is durable). */
struct broker_config {
    pthread_mutex_t lock;
    struct broker_config_set set;
};

#endif /* RT_KAFKA_BROKER_CONFIG_H */
