/*
 * broker_config.c — Kafka's dynamic broker configs (broker_config.h BC1-BC4): the table, taken
 * from Kafka 3.x's DynamicBrokerConfig.AllDynamicConfigs (DynamicListenerConfig, SslConfigs'
 * reconfigurable ones, DynamicThreadPool, LogCleaner, DynamicLogConfig = the broker synonyms
 * of the topic configs but log.message.format.version, SocketServer, metric.reporters), each
 * with its KafkaConfig type and validator, and the value check. It never touches a file and
 * never decides a Kafka answer.
 *
 * `applied` (BC4) is true for the DynamicLogConfig names whose topic synonym the engine acts
 * on (topic_config.h TC3): log.retention.ms, log.retention.bytes, message.max.bytes,
 * log.message.timestamp.type, log.roll.ms, log.cleanup.policy, log.cleaner.delete.retention.ms,
 * log.cleaner.min/max.compaction.lag.ms and log.cleaner.min.cleanable.ratio, given to the
 * engine as its dynamic topic defaults (broker_config_apply, rt_topic_config_defaults_alter).
 * The other DynamicLogConfig names are given too (so a topic's DescribeConfigs reports them
 * from the broker) but change nothing the engine does; log.segment.bytes sizes only topics
 * created after it is set (the engine sizes a topic's segments when it opens it). The rest
 * are stored-only: max.connections,
 * max.connection.creation.rate, max.connections.per.ip(.overrides) and num.network.threads
 * are net_start's; listeners, SSL and SASL settings are set at start; num.io.threads,
 * background.threads, num.replica.fetchers, num.recovery.threads.per.data.dir, the
 * log.cleaner.* sizes and metric.reporters name Kafka machinery ringtail does not have.
 */
#include "tools/kafka/config/broker_config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringtail.h"

#define PB     .per_broker = true
#define LO     .listener_only = true, .per_broker = true
#define MIN(v) .has_min = true, .min = (v)
#define MAX(v) .has_max = true, .max = (v)

static const struct broker_config_def TABLE[] = {
    /* DynamicListenerConfig: listeners (per-broker) */
    {.name = "advertised.listeners", .type = BCT_STRING, PB},
    {.name = "listeners", .type = BCT_STRING, PB},
    {.name = "listener.security.protocol.map", .type = BCT_STRING, PB},
    /* DynamicListenerConfig: SSL (per-broker) */
    {.name = "principal.builder.class", .type = BCT_CLASS, PB},
    {.name = "ssl.protocol", .type = BCT_STRING, PB},
    {.name = "ssl.provider", .type = BCT_STRING, PB},
    {.name = "ssl.cipher.suites", .type = BCT_LIST, PB},
    {.name = "ssl.enabled.protocols", .type = BCT_LIST, PB},
    {.name = "ssl.keymanager.algorithm", .type = BCT_STRING, PB},
    {.name = "ssl.trustmanager.algorithm", .type = BCT_STRING, PB},
    {.name = "ssl.endpoint.identification.algorithm", .type = BCT_STRING, PB},
    {.name = "ssl.secure.random.implementation", .type = BCT_STRING, PB},
    {.name = "ssl.client.auth", .type = BCT_STRING, PB, .one_of = "required,requested,none"},
    {.name = "ssl.engine.factory.class", .type = BCT_CLASS, PB},
    /* SslConfigs.RECONFIGURABLE_CONFIGS (DynamicSecurityConfigs): per listener only */
    {.name = "ssl.keystore.type", .type = BCT_STRING, LO},
    {.name = "ssl.keystore.location", .type = BCT_STRING, LO},
    {.name = "ssl.keystore.password", .type = BCT_PASSWORD, LO},
    {.name = "ssl.key.password", .type = BCT_PASSWORD, LO},
    {.name = "ssl.keystore.key", .type = BCT_PASSWORD, LO},
    {.name = "ssl.keystore.certificate.chain", .type = BCT_PASSWORD, LO},
    {.name = "ssl.truststore.type", .type = BCT_STRING, LO},
    {.name = "ssl.truststore.location", .type = BCT_STRING, LO},
    {.name = "ssl.truststore.password", .type = BCT_PASSWORD, LO},
    {.name = "ssl.truststore.certificates", .type = BCT_PASSWORD, LO},
    /* DynamicListenerConfig: SASL (per-broker) */
    {.name = "sasl.mechanism.inter.broker.protocol", .type = BCT_STRING, PB},
    {.name = "sasl.jaas.config", .type = BCT_PASSWORD, PB},
    {.name = "sasl.enabled.mechanisms", .type = BCT_LIST, PB},
    {.name = "sasl.kerberos.service.name", .type = BCT_STRING, PB},
    {.name = "sasl.kerberos.kinit.cmd", .type = BCT_STRING, PB},
    {.name = "sasl.kerberos.ticket.renew.window.factor", .type = BCT_DOUBLE, PB},
    {.name = "sasl.kerberos.ticket.renew.jitter", .type = BCT_DOUBLE, PB},
    {.name = "sasl.kerberos.min.time.before.relogin", .type = BCT_LONG, PB},
    {.name = "sasl.kerberos.principal.to.local.rules", .type = BCT_LIST, PB},
    {.name = "sasl.login.refresh.window.factor", .type = BCT_DOUBLE, PB, MIN(0.5), MAX(1.0)},
    {.name = "sasl.login.refresh.window.jitter", .type = BCT_DOUBLE, PB, MIN(0.0), MAX(0.25)},
    {.name = "sasl.login.refresh.min.period.seconds", .type = BCT_SHORT, PB, MIN(0), MAX(900)},
    {.name = "sasl.login.refresh.buffer.seconds", .type = BCT_SHORT, PB, MIN(0), MAX(3600)},
    /* DynamicListenerConfig / SocketServer: connection limits (cluster-wide) */
    {.name = "max.connections", .type = BCT_INT, MIN(0)},
    {.name = "max.connection.creation.rate", .type = BCT_INT, MIN(0)},
    {.name = "max.connections.per.ip", .type = BCT_INT, MIN(0)},
    {.name = "max.connections.per.ip.overrides", .type = BCT_STRING},
    /* DynamicThreadPool (cluster-wide) */
    {.name = "num.io.threads", .type = BCT_INT, MIN(1)},
    {.name = "num.network.threads", .type = BCT_INT, MIN(1)},
    {.name = "num.replica.fetchers", .type = BCT_INT, MIN(1)},
    {.name = "num.recovery.threads.per.data.dir", .type = BCT_INT, MIN(1)},
    {.name = "background.threads", .type = BCT_INT, MIN(1)},
    /* metric.reporters */
    {.name = "metric.reporters", .type = BCT_LIST},
    /* LogCleaner.ReconfigurableConfigs */
    {.name = "log.cleaner.threads", .type = BCT_INT, MIN(0)},
    {.name = "log.cleaner.dedupe.buffer.size", .type = BCT_LONG},
    {.name = "log.cleaner.io.buffer.load.factor", .type = BCT_DOUBLE},
    {.name = "log.cleaner.io.buffer.size", .type = BCT_INT, MIN(0)},
    {.name = "log.cleaner.io.max.bytes.per.second", .type = BCT_DOUBLE},
    {.name = "log.cleaner.backoff.ms", .type = BCT_LONG, MIN(0)},
    /* DynamicLogConfig: the topic configs' broker synonyms (cluster-wide) */
    {.name = "log.cleanup.policy",
     .type = BCT_LIST,
     .one_of = "compact,delete",
     .topic = "cleanup.policy",
     .applied = true},
    {.name = "compression.type",
     .type = BCT_STRING,
     .one_of = "uncompressed,zstd,lz4,snappy,gzip,producer",
     .topic = "compression.type"},
    {.name = "log.cleaner.delete.retention.ms",
     .type = BCT_LONG,
     MIN(0),
     .topic = "delete.retention.ms",
     .applied = true},
    {.name = "log.segment.delete.delay.ms",
     .type = BCT_LONG,
     MIN(0),
     .topic = "file.delete.delay.ms"},
    {.name = "log.flush.interval.messages", .type = BCT_LONG, MIN(1), .topic = "flush.messages"},
    {.name = "log.flush.interval.ms", .type = BCT_LONG, .topic = "flush.ms"},
    {.name = "log.index.interval.bytes", .type = BCT_INT, MIN(0), .topic = "index.interval.bytes"},
    {.name = "log.cleaner.max.compaction.lag.ms",
     .type = BCT_LONG,
     MIN(1),
     .topic = "max.compaction.lag.ms",
     .applied = true},
    {.name = "message.max.bytes",
     .type = BCT_INT,
     MIN(0),
     .topic = "max.message.bytes",
     .applied = true},
    {.name = "log.message.downconversion.enable",
     .type = BCT_BOOLEAN,
     .topic = "message.downconversion.enable"},
    {.name = "log.message.timestamp.difference.max.ms",
     .type = BCT_LONG,
     MIN(0),
     .topic = "message.timestamp.difference.max.ms"},
    {.name = "log.message.timestamp.type",
     .type = BCT_STRING,
     .one_of = "CreateTime,LogAppendTime",
     .topic = "message.timestamp.type",
     .applied = true},
    {.name = "log.cleaner.min.cleanable.ratio",
     .type = BCT_DOUBLE,
     MIN(0.0),
     MAX(1.0),
     .topic = "min.cleanable.dirty.ratio",
     .applied = true},
    {.name = "log.cleaner.min.compaction.lag.ms",
     .type = BCT_LONG,
     MIN(0),
     .topic = "min.compaction.lag.ms",
     .applied = true},
    {.name = "min.insync.replicas", .type = BCT_INT, MIN(1), .topic = "min.insync.replicas"},
    {.name = "log.preallocate", .type = BCT_BOOLEAN, .topic = "preallocate"},
    {.name = "log.retention.bytes", .type = BCT_LONG, .topic = "retention.bytes", .applied = true},
    {.name = "log.retention.ms", .type = BCT_LONG, .topic = "retention.ms", .applied = true},
    {.name = "log.segment.bytes",
     .type = BCT_INT,
     MIN(14),
     .topic = "segment.bytes"}, /* LegacyRecord.RECORD_OVERHEAD_V0 */
    {.name = "log.index.size.max.bytes", .type = BCT_INT, MIN(4), .topic = "segment.index.bytes"},
    {.name = "log.roll.jitter.ms", .type = BCT_LONG, .topic = "segment.jitter.ms"},
    {.name = "log.roll.ms", .type = BCT_LONG, .topic = "segment.ms", .applied = true},
    {.name = "unclean.leader.election.enable",
     .type = BCT_BOOLEAN,
     .topic = "unclean.leader.election.enable"},
};

#define TABLE_COUNT (sizeof(TABLE) / sizeof(TABLE[0]))
_Static_assert(TABLE_COUNT <= BROKER_CONFIG_MAX, "BROKER_CONFIG_MAX holds the table");

size_t broker_config_count(void)
{
    return TABLE_COUNT;
}

const struct broker_config_def *broker_config_def(size_t k)
{
    return k < TABLE_COUNT ? &TABLE[k] : NULL;
}

int broker_config_find(const char *name)
{
    for (size_t k = 0; k < TABLE_COUNT; k++)
        if (strcmp(TABLE[k].name, name) == 0)
            return (int)k;
    return -1;
}

/* Java's String.trim(): the text between the first and last byte above ' '. */
static void trimmed(const char *v, const char **b, size_t *n)
{
    const char *e = v + strlen(v);
    while (*v && (unsigned char)*v <= ' ')
        v++;
    while (e > v && (unsigned char)e[-1] <= ' ')
        e--;
    *b = v;
    *n = (size_t)(e - v);
}

static bool in_list(const char *list, const char *item, size_t n)
{
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && memcmp(p, item, n) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

static int range_ok(const struct broker_config_def *d, double v, char *why, size_t whylen)
{
    if (d->has_min && v < d->min) {
        snprintf(why, whylen, "Value must be at least %g", d->min);
        return -1;
    }
    if (d->has_max && v > d->max) {
        snprintf(why, whylen, "Value must be no more than %g", d->max);
        return -1;
    }
    return 0;
}

/* A Java identifier path (a.b.C$D): what a CLASS value can name. */
static bool class_name_ok(const char *p, size_t n)
{
    bool start = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '.') {
            if (start)
                return false;
            start = true;
            continue;
        }
        if (!(isalpha(c) || c == '_' || c == '$' || (!start && isdigit(c))))
            return false;
        start = false;
    }
    return n > 0 && !start;
}

int broker_config_check(size_t k, const char *value, char *canon, char *why, size_t whylen)
{
    const struct broker_config_def *d = broker_config_def(k);
    if (!d || !value) {
        snprintf(why, whylen, "no value");
        return -1;
    }
    if (strlen(value) > BROKER_CONFIG_VALUE_MAX) {
        snprintf(why, whylen, "longer than %d bytes", BROKER_CONFIG_VALUE_MAX);
        return -1;
    }
    const char *b;
    size_t n;
    trimmed(value, &b, &n);
    char t[BROKER_CONFIG_VALUE_MAX + 1];
    memcpy(t, b, n);
    t[n] = 0;
    switch (d->type) {
    case BCT_PASSWORD: /* BC2 */
        snprintf(why, whylen, "Password encoder secret not configured");
        return -1;
    case BCT_BOOLEAN:
        for (size_t i = 0; i < n; i++)
            t[i] = (char)tolower((unsigned char)t[i]);
        if (strcmp(t, "true") != 0 && strcmp(t, "false") != 0) {
            snprintf(why, whylen, "Expected value to be either true or false");
            return -1;
        }
        break;
    case BCT_INT:
    case BCT_SHORT:
    case BCT_LONG: {
        errno = 0;
        char *end = NULL;
        long long v = n ? strtoll(t, &end, 10) : 0;
        bool ok = n > 0 && errno == 0 && end && *end == 0 && !isspace((unsigned char)t[0]);
        long long lo = d->type == BCT_LONG ? INT64_MIN : d->type == BCT_INT ? INT32_MIN : INT16_MIN;
        long long hi = d->type == BCT_LONG ? INT64_MAX : d->type == BCT_INT ? INT32_MAX : INT16_MAX;
        if (!ok || v < lo || v > hi) {
            snprintf(why, whylen, "Not a number of type %s",
                     d->type == BCT_LONG  ? "LONG"
                     : d->type == BCT_INT ? "INT"
                                          : "SHORT");
            return -1;
        }
        if (range_ok(d, (double)v, why, whylen) != 0)
            return -1;
        snprintf(t, sizeof(t), "%lld", v);
        break;
    }
    case BCT_DOUBLE: {
        errno = 0;
        char *end = NULL;
        double v = n ? strtod(t, &end) : 0;
        if (n == 0 || errno != 0 || !end || *end != 0 || !isfinite(v)) {
            snprintf(why, whylen, "Not a number of type DOUBLE");
            return -1;
        }
        if (range_ok(d, v, why, whylen) != 0)
            return -1;
        break; /* kept as written (trimmed) */
    }
    case BCT_STRING:
        if (d->one_of && (memchr(t, ',', n) || !in_list(d->one_of, t, n))) {
            snprintf(why, whylen, "String must be one of: %s", d->one_of);
            return -1;
        }
        break;
    case BCT_CLASS:
        if (!class_name_ok(t, n)) {
            snprintf(why, whylen, "Expected a Java class name");
            return -1;
        }
        break;
    case BCT_LIST: { /* items trimmed, joined by "," */
        char out[BROKER_CONFIG_VALUE_MAX + 1];
        size_t at = 0;
        for (const char *p = t; n > 0 && p;) {
            const char *c = strchr(p, ',');
            char item[BROKER_CONFIG_VALUE_MAX + 1];
            size_t len = c ? (size_t)(c - p) : strlen(p);
            memcpy(item, p, len);
            item[len] = 0;
            const char *ib;
            size_t in;
            trimmed(item, &ib, &in);
            if (in == 0 || (d->one_of && !in_list(d->one_of, ib, in))) {
                if (in == 0)
                    snprintf(why, whylen, "an empty list item");
                else
                    snprintf(why, whylen, "Invalid value %.*s: one of %s", (int)in, ib, d->one_of);
                return -1;
            }
            if (at)
                out[at++] = ',';
            memcpy(out + at, ib, in);
            at += in;
            p = c ? c + 1 : NULL;
        }
        out[at] = 0;
        memcpy(t, out, at + 1);
        break;
    }
    default:
        snprintf(why, whylen, "unknown type");
        return -1;
    }
    snprintf(canon, BROKER_CONFIG_VALUE_MAX + 1, "%s", t);
    return 0;
}

int broker_config_set_put(struct broker_config_set *s, int level, size_t k, const char *v)
{
    if (level < 0 || level >= BCL_LEVELS || k >= TABLE_COUNT)
        return -EINVAL;
    char *c = NULL;
    if (v && !(c = strdup(v)))
        return -ENOMEM;
    free(s->value[level][k]);
    s->value[level][k] = c;
    return 0;
}

int broker_config_set_copy(struct broker_config_set *dst, const struct broker_config_set *src)
{
    memset(dst, 0, sizeof(*dst));
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < TABLE_COUNT; k++)
            if (src->value[l][k] && broker_config_set_put(dst, l, k, src->value[l][k]) != 0) {
                broker_config_set_free(dst);
                return -ENOMEM;
            }
    return 0;
}

void broker_config_set_free(struct broker_config_set *s)
{
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < BROKER_CONFIG_MAX; k++) {
            free(s->value[l][k]);
            s->value[l][k] = NULL;
        }
}

uint32_t broker_config_set_count(const struct broker_config_set *s)
{
    uint32_t n = 0;
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < TABLE_COUNT; k++)
            n += s->value[l][k] != NULL;
    return n;
}

int broker_config_find_topic(const char *topic_name)
{
    for (size_t k = 0; k < TABLE_COUNT; k++)
        if (TABLE[k].topic && strcmp(TABLE[k].topic, topic_name) == 0)
            return (int)k;
    return -1;
}

int broker_config_apply(rt_engine *engine, const struct broker_config_set *s, size_t *refused)
{
    struct rt_topic_config c[BROKER_CONFIG_MAX];
    size_t n = 0, bad = 0;
    for (size_t k = 0; k < TABLE_COUNT; k++) {
        if (!TABLE[k].topic)
            continue;
        /* BC5: this broker's value over the cluster default's; none: the engine's option. */
        const char *v =
            s->value[BCL_BROKER][k] ? s->value[BCL_BROKER][k] : s->value[BCL_DEFAULT][k];
        if (v && rt_topic_config_check(TABLE[k].topic, v) != 0) {
            bad++; /* a value Kafka's broker rule takes and the topic rule does not: kept only */
            v = NULL;
        }
        c[n++] = (struct rt_topic_config){TABLE[k].topic, v};
    }
    if (refused)
        *refused = bad;
    return rt_topic_config_defaults_alter(engine, c, n);
}
