/*
 * topic_config.c — Kafka's topic config names, their checks and their one spelling
 * (topic_config.h, TC1-TC3). The table below is Kafka 3.x's LogConfig (name, type, validator,
 * default); a default taken from rt_options says so. Pure functions over strings: this file
 * never reads or writes a file and never sees a partition.
 */
#include "topic_config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"

enum tc_type { TC_LONG, TC_INT, TC_BOOL, TC_DOUBLE, TC_ENUM, TC_LIST, TC_STRING };

struct tc_def {
    const char *name;
    enum tc_type type;
    int64_t min;                /* TC_LONG, TC_INT */
    const char *const *choices; /* TC_ENUM, TC_LIST: the allowed items; NULL for any */
    const char *kafka_default;  /* when no rt_options field gives it */
};

static const char *const cleanup_choices[] = {"delete", "compact", NULL};
static const char *const compression_choices[] = {"uncompressed", "zstd",     "lz4", "snappy",
                                                  "gzip",         "producer", NULL};
static const char *const timestamp_choices[] = {"CreateTime", "LogAppendTime", NULL};

#define LONG_MAX_S "9223372036854775807"

static const struct tc_def defs[TC_KEYS] = {
    [TC_CLEANUP_POLICY] = {"cleanup.policy", TC_LIST, 0, cleanup_choices, "delete"},
    [TC_COMPRESSION_TYPE] = {"compression.type", TC_ENUM, 0, compression_choices, "producer"},
    [TC_DELETE_RETENTION_MS] = {"delete.retention.ms", TC_LONG, 0, NULL, "86400000"},
    [TC_FILE_DELETE_DELAY_MS] = {"file.delete.delay.ms", TC_LONG, 0, NULL, "60000"},
    [TC_FLUSH_MESSAGES] = {"flush.messages", TC_LONG, 1, NULL, LONG_MAX_S},
    [TC_FLUSH_MS] = {"flush.ms", TC_LONG, 0, NULL, LONG_MAX_S},
    [TC_FOLLOWER_REPLICATION_THROTTLED_REPLICAS] = {"follower.replication.throttled.replicas",
                                                    TC_LIST, 0, NULL, ""},
    [TC_INDEX_INTERVAL_BYTES] = {"index.interval.bytes", TC_INT, 0, NULL, NULL},
    [TC_LEADER_REPLICATION_THROTTLED_REPLICAS] = {"leader.replication.throttled.replicas", TC_LIST,
                                                  0, NULL, ""},
    [TC_LOCAL_RETENTION_BYTES] = {"local.retention.bytes", TC_LONG, -2, NULL, "-2"},
    [TC_LOCAL_RETENTION_MS] = {"local.retention.ms", TC_LONG, -2, NULL, "-2"},
    [TC_MAX_COMPACTION_LAG_MS] = {"max.compaction.lag.ms", TC_LONG, 1, NULL, LONG_MAX_S},
    [TC_MAX_MESSAGE_BYTES] = {"max.message.bytes", TC_INT, 0, NULL, NULL},
    [TC_MESSAGE_DOWNCONVERSION_ENABLE] = {"message.downconversion.enable", TC_BOOL, 0, NULL,
                                          "true"},
    [TC_MESSAGE_FORMAT_VERSION] = {"message.format.version", TC_STRING, 0, NULL, "3.0-IV1"},
    [TC_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS] = {"message.timestamp.difference.max.ms", TC_LONG, 0,
                                                NULL, LONG_MAX_S},
    [TC_MESSAGE_TIMESTAMP_TYPE] = {"message.timestamp.type", TC_ENUM, 0, timestamp_choices, NULL},
    [TC_MIN_CLEANABLE_DIRTY_RATIO] = {"min.cleanable.dirty.ratio", TC_DOUBLE, 0, NULL, "0.5"},
    [TC_MIN_COMPACTION_LAG_MS] = {"min.compaction.lag.ms", TC_LONG, 0, NULL, "0"},
    [TC_MIN_INSYNC_REPLICAS] = {"min.insync.replicas", TC_INT, 1, NULL, "1"},
    [TC_PREALLOCATE] = {"preallocate", TC_BOOL, 0, NULL, "false"},
    [TC_REMOTE_STORAGE_ENABLE] = {"remote.storage.enable", TC_BOOL, 0, NULL, "false"},
    [TC_RETENTION_BYTES] = {"retention.bytes", TC_LONG, INT64_MIN, NULL, NULL},
    [TC_RETENTION_MS] = {"retention.ms", TC_LONG, -1, NULL, NULL},
    [TC_SEGMENT_BYTES] = {"segment.bytes", TC_INT, 14, NULL, NULL},
    [TC_SEGMENT_INDEX_BYTES] = {"segment.index.bytes", TC_INT, 4, NULL, NULL},
    [TC_SEGMENT_JITTER_MS] = {"segment.jitter.ms", TC_LONG, 0, NULL, "0"},
    [TC_SEGMENT_MS] = {"segment.ms", TC_LONG, 1, NULL, NULL},
    [TC_UNCLEAN_LEADER_ELECTION_ENABLE] = {"unclean.leader.election.enable", TC_BOOL, 0, NULL,
                                           "false"},
};

int topic_config_key(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < TC_KEYS; k++)
        if (strcmp(defs[k].name, name) == 0)
            return k;
    return -1;
}

const char *topic_config_name(enum topic_config_key k)
{
    assert(k >= 0 && k < TC_KEYS);
    return defs[k].name;
}

bool topic_config_honoured(enum topic_config_key k)
{
    return k == TC_RETENTION_MS || k == TC_RETENTION_BYTES || k == TC_SEGMENT_BYTES ||
           k == TC_SEGMENT_MS || k == TC_MAX_MESSAGE_BYTES || k == TC_MESSAGE_TIMESTAMP_TYPE ||
           k == TC_CLEANUP_POLICY || k == TC_MIN_CLEANABLE_DIRTY_RATIO ||
           k == TC_MIN_COMPACTION_LAG_MS || k == TC_MAX_COMPACTION_LAG_MS ||
           k == TC_DELETE_RETENTION_MS;
}

static bool in_choices(const char *const *choices, const char *s, size_t n)
{
    for (size_t i = 0; choices[i]; i++)
        if (strlen(choices[i]) == n && memcmp(choices[i], s, n) == 0)
            return true;
    return false;
}

/* Kafka trims the value before parsing numbers and booleans (ConfigDef.parseType). */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static int bad(const char *name, const char *value, const char *rule)
{
    return error_set(RT_E_INVALID_CONFIG, "Invalid value %s for configuration %s: %s", value, name,
                     rule);
}

int topic_config_check(const char *name, const char *value, int *key_out,
                       char canon[TOPIC_CONFIG_VALUE_MAX + 1])
{
    int k = topic_config_key(name);
    if (k < 0)
        return error_set(RT_E_INVALID_CONFIG, "Unknown topic config name: %s",
                         name ? name : "(null)");
    const struct tc_def *d = &defs[k];
    if (!value)
        return bad(d->name, "null", "a value is required");
    size_t n = strlen(value);
    if (n > TOPIC_CONFIG_VALUE_MAX)
        return bad(d->name, "(too long)", "values are at most 255 bytes here");
    const char *s = value;
    switch (d->type) {
    case TC_LONG:
    case TC_INT: {
        trim(&s, &n);
        char digits[32];
        if (n == 0 || n >= sizeof(digits))
            return bad(d->name, value, "expected a number");
        memcpy(digits, s, n);
        digits[n] = 0;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(digits, &end, 10);
        if (errno || *end || !(digits[0] == '-' || (digits[0] >= '0' && digits[0] <= '9')))
            return bad(d->name, value,
                       d->type == TC_INT ? "expected a 32-bit integer"
                                         : "expected a 64-bit integer");
        if (d->type == TC_INT && (v > INT32_MAX || v < INT32_MIN))
            return bad(d->name, value, "expected a 32-bit integer");
        if (v < d->min) {
            char rule[64];
            snprintf(rule, sizeof(rule), "Value must be at least %" PRId64, d->min);
            return bad(d->name, value, rule);
        }
        snprintf(canon, TOPIC_CONFIG_VALUE_MAX + 1, "%lld", v);
        break;
    }
    case TC_BOOL:
        trim(&s, &n);
        if (n == 4 && strncasecmp(s, "true", 4) == 0)
            snprintf(canon, TOPIC_CONFIG_VALUE_MAX + 1, "true");
        else if (n == 5 && strncasecmp(s, "false", 5) == 0)
            snprintf(canon, TOPIC_CONFIG_VALUE_MAX + 1, "false");
        else
            return bad(d->name, value, "Expected value to be either true or false");
        break;
    case TC_DOUBLE: {
        trim(&s, &n);
        char num[64];
        if (n == 0 || n >= sizeof(num))
            return bad(d->name, value, "expected a number");
        memcpy(num, s, n);
        num[n] = 0;
        char *end = NULL;
        double v = strtod(num, &end);
        if (*end || !(v >= 0.0 && v <= 1.0))
            return bad(d->name, value, "Value must be between 0 and 1");
        /* The value as given once trimmed, so a reader sees what was set (one spelling: the
         * trimmed text, which must parse). */
        memcpy(canon, num, n + 1);
        break;
    }
    case TC_ENUM:
        if (!in_choices(d->choices, s, n)) {
            char rule[160];
            size_t at = (size_t)snprintf(rule, sizeof(rule), "String must be one of:");
            for (size_t i = 0; d->choices[i] && at < sizeof(rule); i++)
                at += (size_t)snprintf(rule + at, sizeof(rule) - at, "%s %s", i ? "," : "",
                                       d->choices[i]);
            return bad(d->name, value, rule);
        }
        memcpy(canon, s, n + 1);
        break;
    case TC_LIST: {
        /* Items split at commas, each trimmed, written back joined by "," (TC2). */
        size_t at = 0;
        const char *p = s;
        size_t left = n;
        bool first = true;
        while (left > 0 || (first && n > 0)) {
            const char *comma = memchr(p, ',', left);
            size_t len = comma ? (size_t)(comma - p) : left;
            const char *item = p;
            size_t item_len = len;
            trim(&item, &item_len);
            if (item_len == 0)
                return bad(d->name, value, "empty list item");
            if (d->choices && !in_choices(d->choices, item, item_len))
                return bad(d->name, value,
                           k == TC_CLEANUP_POLICY ? "String must be one of: delete, compact"
                                                  : "not an allowed item");
            if (!first)
                canon[at++] = ',';
            memcpy(canon + at, item, item_len);
            at += item_len;
            first = false;
            if (!comma)
                break;
            p = comma + 1;
            left -= len + 1;
            if (left == 0)
                return bad(d->name, value, "empty list item");
        }
        canon[at] = 0;
        if (k == TC_CLEANUP_POLICY && at == 0)
            return bad(d->name, value, "a cleanup policy is required");
        break;
    }
    case TC_STRING:
        memcpy(canon, s, n + 1);
        break;
    }
    if (key_out)
        *key_out = k;
    return 0;
}

int topic_config_set(struct topic_config *c, enum topic_config_key k, const char *canon)
{
    assert(k >= 0 && k < TC_KEYS);
    char *copy = NULL;
    if (canon && !(copy = strdup(canon)))
        return -ENOMEM;
    free(c->value[k]);
    c->value[k] = copy;
    return 0;
}

int topic_config_copy(struct topic_config *dst, const struct topic_config *src)
{
    for (int k = 0; k < TC_KEYS; k++) {
        dst->value[k] = NULL;
        if (src->value[k] && !(dst->value[k] = strdup(src->value[k]))) {
            topic_config_free(dst);
            return -ENOMEM;
        }
    }
    return 0;
}

void topic_config_free(struct topic_config *c)
{
    for (int k = 0; k < TC_KEYS; k++) {
        free(c->value[k]);
        c->value[k] = NULL;
    }
}

uint32_t topic_config_count(const struct topic_config *c)
{
    uint32_t n = 0;
    for (int k = 0; k < TC_KEYS; k++)
        n += c->value[k] != NULL;
    return n;
}

void topic_config_default(const struct rt_options *o, enum topic_config_key k, char *buf,
                          size_t cap)
{
    switch (k) {
    case TC_RETENTION_MS:
        snprintf(buf, cap, "%" PRId64, o->retention_ms);
        return;
    case TC_RETENTION_BYTES:
        snprintf(buf, cap, "%" PRId64, o->retention_bytes);
        return;
    case TC_SEGMENT_BYTES:
        snprintf(buf, cap, "%" PRIu64, o->segment_size_bytes);
        return;
    case TC_MAX_MESSAGE_BYTES:
        snprintf(buf, cap, "%" PRIu32, o->batch_size_max_bytes);
        return;
    case TC_MESSAGE_TIMESTAMP_TYPE:
        snprintf(buf, cap, "%s",
                 o->message_timestamp_type == RT_TIMESTAMP_LOG_APPEND_TIME ? "LogAppendTime"
                                                                           : "CreateTime");
        return;
    case TC_INDEX_INTERVAL_BYTES:
        snprintf(buf, cap, "%" PRIu32, o->index_interval_bytes);
        return;
    case TC_SEGMENT_INDEX_BYTES:
        snprintf(buf, cap, "%" PRIu32, o->index_size_max_bytes);
        return;
    case TC_SEGMENT_MS:
        snprintf(buf, cap, "%" PRId64, o->segment_ms);
        return;
    default:
        assert(defs[k].kafka_default);
        snprintf(buf, cap, "%s", defs[k].kafka_default);
        return;
    }
}

bool topic_config_default_from_options(const struct rt_options *o, enum topic_config_key k)
{
    struct rt_options d;
    rt_options_init(&d);
    switch (k) {
    case TC_RETENTION_MS:
        return o->retention_ms != d.retention_ms;
    case TC_RETENTION_BYTES:
        return o->retention_bytes != d.retention_bytes;
    case TC_SEGMENT_BYTES:
        return o->segment_size_bytes != d.segment_size_bytes;
    case TC_MAX_MESSAGE_BYTES:
        return o->batch_size_max_bytes != d.batch_size_max_bytes;
    case TC_MESSAGE_TIMESTAMP_TYPE:
        return o->message_timestamp_type != d.message_timestamp_type;
    case TC_INDEX_INTERVAL_BYTES:
        return o->index_interval_bytes != d.index_interval_bytes;
    case TC_SEGMENT_INDEX_BYTES:
        return o->index_size_max_bytes != d.index_size_max_bytes;
    case TC_SEGMENT_MS:
        return o->segment_ms != d.segment_ms;
    default:
        return false;
    }
}

void topic_config_resolve(const struct topic_config *c, const struct rt_options *o,
                          struct topic_config_honoured *out)
{
    out->retention_ms = o->retention_ms;
    out->retention_bytes = o->retention_bytes;
    out->segment_bytes = o->segment_size_bytes;
    out->segment_ms = o->segment_ms;
    out->max_message_bytes = o->batch_size_max_bytes;
    out->timestamp_type = o->message_timestamp_type;
    /* The stored values passed topic_config_check (TC2), so they parse. */
    if (c->value[TC_RETENTION_MS])
        out->retention_ms = strtoll(c->value[TC_RETENTION_MS], NULL, 10);
    if (c->value[TC_RETENTION_BYTES]) {
        out->retention_bytes = strtoll(c->value[TC_RETENTION_BYTES], NULL, 10);
        if (out->retention_bytes < 0)
            out->retention_bytes = -1; /* Kafka: any negative value is "no limit" */
    }
    if (c->value[TC_SEGMENT_BYTES])
        out->segment_bytes = (uint64_t)strtoll(c->value[TC_SEGMENT_BYTES], NULL, 10);
    if (c->value[TC_SEGMENT_MS])
        out->segment_ms = strtoll(c->value[TC_SEGMENT_MS], NULL, 10);
    if (c->value[TC_MAX_MESSAGE_BYTES])
        out->max_message_bytes = (uint32_t)strtoll(c->value[TC_MAX_MESSAGE_BYTES], NULL, 10);
    /* Log compaction (cleaner.c): the policy's items, and Kafka's defaults otherwise. */
    out->compact = false;
    out->delete_enabled = true;
    if (c->value[TC_CLEANUP_POLICY]) {
        const char *v = c->value[TC_CLEANUP_POLICY]; /* canonical: items joined by "," (TC2) */
        out->compact = strstr(v, "compact") != NULL;
        out->delete_enabled = strstr(v, "delete") != NULL;
    }
    out->min_dirty_ratio = c->value[TC_MIN_CLEANABLE_DIRTY_RATIO]
                               ? strtod(c->value[TC_MIN_CLEANABLE_DIRTY_RATIO], NULL)
                               : 0.5;
    out->min_compaction_lag_ms = c->value[TC_MIN_COMPACTION_LAG_MS]
                                     ? strtoll(c->value[TC_MIN_COMPACTION_LAG_MS], NULL, 10)
                                     : 0;
    out->max_compaction_lag_ms = c->value[TC_MAX_COMPACTION_LAG_MS]
                                     ? strtoll(c->value[TC_MAX_COMPACTION_LAG_MS], NULL, 10)
                                     : INT64_MAX;
    out->delete_retention_ms = c->value[TC_DELETE_RETENTION_MS]
                                   ? strtoll(c->value[TC_DELETE_RETENTION_MS], NULL, 10)
                                   : 86400000;
    if (c->value[TC_MESSAGE_TIMESTAMP_TYPE])
        out->timestamp_type = strcmp(c->value[TC_MESSAGE_TIMESTAMP_TYPE], "LogAppendTime") == 0
                                  ? RT_TIMESTAMP_LOG_APPEND_TIME
                                  : RT_TIMESTAMP_CREATE_TIME;
}
