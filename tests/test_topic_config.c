/*
 * test_topic_config.c — per-topic configs (topic_config.h TC1-TC4, ringtail.meta version 2 in
 * docs/format.md A.2 M5-M6): checked as Kafka checks them, kept durably in the catalogue across
 * reopen, altered whole (AlterConfigs) or by entry (IncrementalAlterConfigs), and acted on —
 * max.message.bytes and message.timestamp.type at once, retention at once, segment.bytes from
 * the next open. A damaged config in the catalogue is refused by open and reported by verify
 * with the file and offset. Power loss at every step of an alter leaves the old or the new
 * configs, never a mix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "engine.h"
#include "helpers/power_sweep.h"
#include "helpers/test_util.h"
#include "index/crc32c.h"
#include "io/io.h"
#include "ringtail.h"

static void options(struct rt_options *o)
{
    tu_options(o);
    o->segment_size_bytes = 64 * 1024;
    o->batch_size_max_bytes = 16 * 1024;
    o->shard_count = 1;
}

struct got {
    char value[8][64];
    enum rt_config_source source[8];
    bool honoured[8];
    const char *names[8];
    size_t n;
    unsigned total;
};

static int collect(void *ctx, const char *name, const char *value, enum rt_config_source source,
                   bool honoured)
{
    struct got *g = ctx;
    g->total++;
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->names[i], name) == 0) {
            snprintf(g->value[i], sizeof(g->value[i]), "%s", value);
            g->source[i] = source;
            g->honoured[i] = honoured;
        }
    return 0;
}

/* The value and source of one config of a topic. */
static enum rt_config_source config_of(rt_engine *e, const char *topic, const char *name,
                                       char value[64])
{
    struct got g = {.names = {name}, .n = 1};
    g.value[0][0] = 0;
    int rc = rt_topic_config_get(e, topic, collect, &g);
    if (rc)
        fail_msg("config_get %s: %s (%s)", topic, rt_strerror(rc), rt_error_detail());
    memcpy(value, g.value[0], 64);
    return g.source[0];
}

static void expect_config(rt_engine *e, const char *topic, const char *name, const char *want,
                          enum rt_config_source want_source)
{
    char v[64];
    enum rt_config_source src = config_of(e, topic, name, v);
    if (strcmp(v, want) != 0 || src != want_source)
        fail_msg("%s %s: got '%s' source %d, want '%s' source %d", topic, name, v, src, want,
                 want_source);
}

/* TC1: Kafka's names only; TC2: values by Kafka's rules, kept in one spelling. */
static void test_check_names_and_values(void **state)
{
    (void)state;
    assert_int_equal(rt_topic_config_check("retention.ms", "1000"), 0);
    assert_int_equal(rt_topic_config_check("retention.ms", "-1"), 0);
    assert_int_equal(rt_topic_config_check("retention.ms", "-2"), RT_E_INVALID_CONFIG);
    assert_non_null(strstr(rt_error_detail(), "retention.ms"));
    assert_int_equal(rt_topic_config_check("dummy.doesntexist", "x"), RT_E_INVALID_CONFIG);
    assert_non_null(strstr(rt_error_detail(), "dummy.doesntexist"));
    assert_int_equal(rt_topic_config_check("segment.bytes", "13"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("segment.bytes", "2147483648"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("segment.bytes", "14"), 0);
    assert_int_equal(rt_topic_config_check("segment.bytes", "12abc"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("cleanup.policy", "delete"), 0);
    assert_int_equal(rt_topic_config_check("cleanup.policy", "compact"), 0); /* issue 26 */
    assert_int_equal(rt_topic_config_check("cleanup.policy", "delete, compact"), 0);
    assert_int_equal(rt_topic_config_check("cleanup.policy", "compact,shred"), RT_E_INVALID_CONFIG);
    assert_non_null(strstr(rt_error_detail(), "cleanup.policy"));
    assert_int_equal(rt_topic_config_check("message.timestamp.type", "LogAppendTime"), 0);
    assert_int_equal(rt_topic_config_check("message.timestamp.type", "logappendtime"),
                     RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("compression.type", "lz4"), 0);
    assert_int_equal(rt_topic_config_check("compression.type", "brotli"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("preallocate", "TRUE"), 0);
    assert_int_equal(rt_topic_config_check("preallocate", "yes"), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("min.cleanable.dirty.ratio", "1.5"),
                     RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check("retention.ms", NULL), 0); /* the name alone */
    assert_int_equal(rt_topic_config_check("retention.mss", NULL), RT_E_INVALID_CONFIG);
    assert_int_equal(rt_topic_config_check(NULL, "1"), RT_E_INVALID_CONFIG);
}

/* Create with configs; they survive a reopen; the others report their defaults; a bad one
 * creates nothing. */
static void test_create_with_configs_survives_reopen(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config bad[] = {{"retention.ms", "5000"}, {"dummy.doesntexist", "x"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 2, bad, 2), RT_E_INVALID_CONFIG);
    assert_non_null(strstr(rt_error_detail(), "dummy.doesntexist"));
    uint32_t parts = 0;
    assert_int_equal(rt_topic_describe(e, "t", &parts), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    struct rt_topic_config twice[] = {{"retention.ms", "5000"}, {"retention.ms", "6000"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 2, twice, 2), RT_E_INVALID_CONFIG);
    struct rt_topic_config good[] = {
        {"retention.ms", " 5000 "}, {"compression.type", "lz4"}, {"cleanup.policy", "delete"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 2, good, 3), 0);
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    assert_int_equal(rt_close(e), 0);

    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_describe(e, "t", &parts), 0);
    assert_int_equal(parts, 2);
    expect_config(e, "t", "retention.ms", "5000", RT_CONFIG_TOPIC); /* TC2: trimmed */
    expect_config(e, "t", "compression.type", "lz4", RT_CONFIG_TOPIC);
    expect_config(e, "t", "retention.bytes", "-1", RT_CONFIG_DEFAULT);
    expect_config(e, "t", "segment.bytes", "65536", RT_CONFIG_ENGINE); /* not 1 GiB: set */
    expect_config(e, "plain", "retention.ms", "604800000", RT_CONFIG_DEFAULT);
    expect_config(e, "plain", "compression.type", "producer", RT_CONFIG_DEFAULT);
    struct got g = {.n = 0};
    assert_int_equal(rt_topic_config_get(e, "plain", collect, &g), 0);
    assert_true(g.total >= 25); /* every name Kafka knows for a topic */
    assert_int_equal(rt_topic_config_get(e, "nope", collect, &g), RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_close(e), 0);

    /* Read-only engines report them too. */
    o.read_only = true;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    expect_config(e, "t", "retention.ms", "5000", RT_CONFIG_TOPIC);
    assert_int_equal(rt_topic_config_alter(e, "t", good, 1, false), RT_E_READ_ONLY);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* A catalogue without configs stays version 1 (older engines read it); one with configs is
 * version 2, and goes back to 1 when the last override is removed (M5). */
static void test_catalogue_version_follows_configs(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *meta = tu_path("%s/ringtail.meta", dir);
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "a", 1), 0);
    size_t len = 0;
    uint8_t *b = tu_read_file(meta, &len);
    assert_int_equal(b[5], 1);
    free(b);
    struct rt_topic_config set[] = {{"flush.ms", "1000"}};
    assert_int_equal(rt_topic_config_alter(e, "a", set, 1, false), 0);
    b = tu_read_file(meta, &len);
    assert_int_equal(b[5], 2);
    free(b);
    struct rt_topic_config del[] = {{"flush.ms", NULL}};
    assert_int_equal(rt_topic_config_alter(e, "a", del, 1, false), 0);
    b = tu_read_file(meta, &len);
    assert_int_equal(b[5], 1);
    free(b);
    assert_int_equal(rt_close(e), 0);
    free(meta);
    tu_rmdir_free(dir);
}

/* AlterConfigs replaces every override; IncrementalAlterConfigs sets and removes one each;
 * a bad entry changes nothing. */
static void test_alter_whole_and_incremental(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"retention.ms", "5000"}, {"flush.ms", "100"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 1, c, 2), 0);
    struct rt_topic_config inc[] = {{"retention.bytes", "1048576"}, {"flush.ms", NULL}};
    assert_int_equal(rt_topic_config_alter(e, "t", inc, 2, false), 0);
    expect_config(e, "t", "retention.ms", "5000", RT_CONFIG_TOPIC);
    expect_config(e, "t", "retention.bytes", "1048576", RT_CONFIG_TOPIC);
    expect_config(e, "t", "flush.ms", "9223372036854775807", RT_CONFIG_DEFAULT);
    struct rt_topic_config badinc[] = {{"retention.ms", "7"}, {"segment.bytes", "1"}};
    assert_int_equal(rt_topic_config_alter(e, "t", badinc, 2, false), RT_E_INVALID_CONFIG);
    assert_non_null(strstr(rt_error_detail(), "segment.bytes"));
    expect_config(e, "t", "retention.ms", "5000", RT_CONFIG_TOPIC); /* nothing changed */
    struct rt_topic_config whole[] = {{"max.message.bytes", "2000"}};
    assert_int_equal(rt_topic_config_alter(e, "t", whole, 1, true), 0);
    expect_config(e, "t", "retention.ms", "604800000", RT_CONFIG_DEFAULT);
    expect_config(e, "t", "retention.bytes", "-1", RT_CONFIG_DEFAULT);
    expect_config(e, "t", "max.message.bytes", "2000", RT_CONFIG_TOPIC);
    assert_int_equal(rt_topic_config_alter(e, "nope", whole, 1, true),
                     RT_E_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(rt_close(e), 0);
    assert_int_equal(rt_open(dir, &o, &e), 0);
    expect_config(e, "t", "max.message.bytes", "2000", RT_CONFIG_TOPIC);
    expect_config(e, "t", "retention.ms", "604800000", RT_CONFIG_DEFAULT);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

static int64_t first_batch_max_timestamp(rt_engine *e, const char *topic, int16_t *attributes)
{
    rt_fetch *f = NULL;
    assert_int_equal(rt_fetch_start(e, topic, 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f), 0);
    const struct rt_fetch_view *v = rt_fetch_get(f);
    assert_true(v->size_bytes >= 61);
    int64_t ts = (int64_t)be64_of(v->data + 35);
    *attributes = (int16_t)((v->data[21] << 8) | v->data[22]);
    rt_fetch_release(f);
    return ts;
}

/* TC3: max.message.bytes and message.timestamp.type act at once, for the topic alone. */
static void test_honoured_at_once(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"max.message.bytes", "200"},
                                  {"message.timestamp.type", "LogAppendTime"}};
    assert_int_equal(rt_topic_create_with_configs(e, "small", 1, c, 2), 0);
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    char big[1000];
    memset(big, 'x', sizeof(big));
    struct rt_record r = {.key_len = -1, .value = big, .value_len = 500, .timestamp_ms = 1000};
    assert_int_equal(rt_append(e, "small", 0, &r, 1, NULL), RT_E_RECORD_TOO_LARGE);
    assert_non_null(strstr(rt_error_detail(), "max.message.bytes"));
    assert_int_equal(rt_append(e, "plain", 0, &r, 1, NULL), 0);
    r.value_len = 10;
    assert_int_equal(rt_append(e, "small", 0, &r, 1, NULL), 0);
    int16_t attrs = 0;
    int64_t ts = first_batch_max_timestamp(e, "small", &attrs);
    assert_true(attrs & 0x08); /* LogAppendTime */
    assert_true(ts > 1000);    /* the clock, not the record's */
    ts = first_batch_max_timestamp(e, "plain", &attrs);
    assert_false(attrs & 0x08);
    assert_int_equal(ts, 1000);
    /* Altered: the limit is lifted at once. */
    struct rt_topic_config lift[] = {{"max.message.bytes", NULL}};
    assert_int_equal(rt_topic_config_alter(e, "small", lift, 1, false), 0);
    r.value_len = 500;
    assert_int_equal(rt_append(e, "small", 0, &r, 1, NULL), 0);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

static unsigned log_files(const char *dir, const char *pdir)
{
    char *p = tu_path("%s/%s", dir, pdir);
    DIR *d = opendir(p);
    free(p);
    assert_non_null(d);
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        n += l > 4 && strcmp(de->d_name + l - 4, ".log") == 0;
    }
    closedir(d);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void append_one(rt_engine *e, const char *topic)
{
    struct rt_record r = {
        .key = "k", .key_len = 1, .value = "v", .value_len = 1, .timestamp_ms = -1};
    assert_int_equal(rt_append(e, topic, 0, &r, 1, NULL), 0);
}

/* TC3, TC4: a topic's segment.ms rolls its active segment on the next append once older (the
 * others keep the engine's 7 days); a dynamic default does the same for topics without their
 * own, at once; a compacted topic's idle active segment is rolled by the shard's housekeeping
 * by the topic's segment.ms alone (cleaner.c CLN10, no max.compaction.lag.ms set). */
static void test_segment_ms(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config aged[] = {{"segment.ms", "50"}};
    struct rt_topic_config day[] = {{"segment.ms", "86400000"}};
    assert_int_equal(rt_topic_create_with_configs(e, "aged", 1, aged, 1), 0);
    assert_int_equal(rt_topic_create_with_configs(e, "long", 1, day, 1), 0);
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    const char *all[] = {"aged", "long", "plain"};
    for (int i = 0; i < 3; i++)
        append_one(e, all[i]);
    sleep_ms(120); /* at least segment.ms: any longer is fine */
    for (int i = 0; i < 3; i++)
        append_one(e, all[i]);
    assert_int_equal(log_files(dir, "aged-0"), 2);
    assert_int_equal(log_files(dir, "long-0"), 1);
    assert_int_equal(log_files(dir, "plain-0"), 1);
    /* TC4: the dynamic default, at once, for topics without their own. */
    struct rt_topic_config dyn[] = {{"segment.ms", "50"}};
    assert_int_equal(rt_topic_config_defaults_alter(e, dyn, 1), 0);
    sleep_ms(120);
    for (int i = 0; i < 3; i++)
        append_one(e, all[i]);
    assert_int_equal(log_files(dir, "plain-0"), 2);
    assert_int_equal(log_files(dir, "long-0"), 1); /* its own override wins */
    /* Removing the override: the dynamic default applies at once. */
    struct rt_topic_config unset[] = {{"segment.ms", NULL}};
    assert_int_equal(rt_topic_config_alter(e, "long", unset, 1, false), 0);
    sleep_ms(120);
    append_one(e, "long");
    assert_int_equal(log_files(dir, "long-0"), 2);
    dyn[0].value = NULL;
    assert_int_equal(rt_topic_config_defaults_alter(e, dyn, 1), 0);
    /* CLN10 by the topic's segment.ms: no append after the first, yet the segment rolls. */
    struct rt_topic_config cc[] = {{"cleanup.policy", "compact"}, {"segment.ms", "100"}};
    struct rt_topic_config cp[] = {{"cleanup.policy", "compact"}};
    assert_int_equal(rt_topic_create_with_configs(e, "idle", 1, cc, 2), 0);
    assert_int_equal(rt_topic_create_with_configs(e, "idleplain", 1, cp, 1), 0);
    append_one(e, "idle");
    append_one(e, "idleplain");
    unsigned n = 1;
    for (int i = 0; i < 400 && n < 2; i++) { /* the shard's housekeeping: polled, not timed */
        sleep_ms(25);
        n = log_files(dir, "idle-0");
    }
    assert_int_equal(n, 2);
    assert_int_equal(log_files(dir, "idleplain-0"), 1);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* segment.bytes sizes the topic's segments; retention.bytes set later removes the old ones at
 * the next retention pass (no reopen). */
static void test_segment_bytes_and_retention(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"segment.bytes", "4096"}};
    assert_int_equal(rt_topic_create_with_configs(e, "seg", 1, c, 1), 0);
    assert_int_equal(rt_topic_create(e, "plain", 1), 0);
    char v[1000];
    memset(v, 'y', sizeof(v));
    struct rt_record r = {.key_len = -1, .value = v, .value_len = sizeof(v), .timestamp_ms = -1};
    for (int i = 0; i < 40; i++) {
        assert_int_equal(rt_append(e, "seg", 0, &r, 1, NULL), 0);
        assert_int_equal(rt_append(e, "plain", 0, &r, 1, NULL), 0);
    }
    assert_true(log_files(dir, "seg-0") >= 8); /* ~40 KB in 4 KiB segments */
    assert_int_equal(log_files(dir, "plain-0"), 1);
    int64_t start = -1;
    assert_int_equal(rt_list_offsets(e, "seg", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(start, 0);
    struct rt_topic_config ret[] = {{"retention.bytes", "8192"}};
    assert_int_equal(rt_topic_config_alter(e, "seg", ret, 1, false), 0);
    assert_int_equal(log_enforce_retention(engine_log(e)), 0);
    assert_int_equal(rt_list_offsets(e, "seg", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_true(start > 20);
    assert_true(log_files(dir, "seg-0") <= 4);
    assert_int_equal(
        rt_list_offsets(e, "plain", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start), 0);
    assert_int_equal(start, 0); /* the other topic keeps everything */
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* TC4: a dynamic default (rt_topic_config_defaults_alter) is what a topic without its own
 * override uses, at once: retention by the new retention.ms, a batch over the new
 * max.message.bytes refused; a topic with its own override keeps it; NULL goes back to the
 * engine's option; a refused entry changes nothing; nothing survives a reopen. */
static void test_dynamic_defaults(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config seg[] = {{"segment.bytes", "4096"}};
    struct rt_topic_config own[] = {{"segment.bytes", "4096"}, {"retention.ms", "-1"}};
    struct rt_topic_config big[] = {{"max.message.bytes", "16384"}};
    assert_int_equal(rt_topic_create_with_configs(e, "seg", 1, seg, 1), 0);
    assert_int_equal(rt_topic_create_with_configs(e, "own", 1, own, 2), 0);
    assert_int_equal(rt_topic_create_with_configs(e, "big", 1, big, 1), 0);
    assert_int_equal(rt_topic_create(e, "small", 1), 0);
    char v[1000];
    memset(v, 'z', sizeof(v));
    /* Ten minutes old: kept by the 7 days of the default, not by a 60 s retention. */
    struct rt_record r = {.key_len = -1,
                          .value = v,
                          .value_len = sizeof(v),
                          .timestamp_ms = (int64_t)time(NULL) * 1000 - 600000};
    for (int i = 0; i < 40; i++) {
        assert_int_equal(rt_append(e, "seg", 0, &r, 1, NULL), 0);
        assert_int_equal(rt_append(e, "own", 0, &r, 1, NULL), 0);
    }
    assert_int_equal(log_enforce_retention(engine_log(e)), 0); /* 7 days: nothing goes */
    int64_t start = -1;
    assert_int_equal(rt_list_offsets(e, "seg", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(start, 0);
    assert_int_equal(rt_topic_config_defaults_alter(NULL, NULL, 0), RT_E_INVALID_ARGUMENT);
    struct rt_topic_config bad[] = {{"retention.ms", "60000"}, {"max.message.bytes", "-5"}};
    assert_int_equal(rt_topic_config_defaults_alter(e, bad, 2), RT_E_INVALID_CONFIG);
    expect_config(e, "seg", "retention.ms", "604800000", RT_CONFIG_DEFAULT); /* nothing changed */
    struct rt_topic_config dyn[] = {{"retention.ms", "60000"}, {"max.message.bytes", "200"}};
    assert_int_equal(rt_topic_config_defaults_alter(e, dyn, 2), 0);
    expect_config(e, "seg", "retention.ms", "60000", RT_CONFIG_DYNAMIC_DEFAULT);
    expect_config(e, "own", "retention.ms", "-1", RT_CONFIG_TOPIC);
    expect_config(e, "small", "max.message.bytes", "200", RT_CONFIG_DYNAMIC_DEFAULT);
    expect_config(e, "big", "max.message.bytes", "16384", RT_CONFIG_TOPIC);
    /* Retention by the new default; the topic with its own retention.ms keeps everything. */
    assert_int_equal(log_enforce_retention(engine_log(e)), 0);
    assert_int_equal(rt_list_offsets(e, "seg", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_true(start > 20);
    assert_int_equal(rt_list_offsets(e, "own", 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_int_equal(start, 0);
    /* max.message.bytes: refused where no override, accepted where the topic sets its own. */
    r.value_len = 500;
    r.timestamp_ms = -1;
    assert_int_equal(rt_append(e, "small", 0, &r, 1, NULL), RT_E_RECORD_TOO_LARGE);
    assert_int_equal(rt_append(e, "big", 0, &r, 1, NULL), 0);
    /* A topic created afterwards takes the defaults too. */
    assert_int_equal(rt_topic_create(e, "later", 1), 0);
    assert_int_equal(rt_append(e, "later", 0, &r, 1, NULL), RT_E_RECORD_TOO_LARGE);
    expect_config(e, "later", "retention.ms", "60000", RT_CONFIG_DYNAMIC_DEFAULT);
    /* NULL: back to the engine's option (batch_size_max_bytes, set by options()). */
    struct rt_topic_config back[] = {{"max.message.bytes", NULL}};
    assert_int_equal(rt_topic_config_defaults_alter(e, back, 1), 0);
    expect_config(e, "small", "max.message.bytes", "16384", RT_CONFIG_ENGINE);
    expect_config(e, "small", "retention.ms", "60000", RT_CONFIG_DYNAMIC_DEFAULT); /* stays */
    assert_int_equal(rt_append(e, "small", 0, &r, 1, NULL), 0);
    /* A partition added afterwards retains by it too (LG10: opened with the topic's config). */
    r.value_len = sizeof(v);
    r.timestamp_ms = (int64_t)time(NULL) * 1000 - 600000;
    assert_int_equal(rt_topic_add_partitions(e, "seg", 2), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(rt_append(e, "seg", 1, &r, 1, NULL), 0);
    assert_int_equal(log_enforce_retention(engine_log(e)), 0);
    assert_int_equal(rt_list_offsets(e, "seg", 1, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start),
                     0);
    assert_true(start > 10);
    assert_int_equal(rt_close(e), 0);
    /* Not persisted by the engine. */
    assert_int_equal(rt_open(dir, &o, &e), 0);
    expect_config(e, "seg", "retention.ms", "604800000", RT_CONFIG_DEFAULT);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

struct appender {
    rt_engine *e;
    _Atomic bool stop;
    unsigned taken, refused, other;
};

static void *append_loop(void *arg)
{
    struct appender *a = arg;
    char v[500];
    memset(v, 'q', sizeof(v));
    struct rt_record r = {.key_len = -1, .value = v, .value_len = sizeof(v), .timestamp_ms = -1};
    while (!atomic_load(&a->stop)) {
        int rc = rt_append(a->e, "hot", 0, &r, 1, NULL);
        if (rc == 0)
            a->taken++;
        else if (rc == RT_E_RECORD_TOO_LARGE)
            a->refused++;
        else
            a->other++;
    }
    return NULL;
}

/* TC4 under load: dynamic defaults changed while another thread appends (run under TSan). */
static void test_dynamic_defaults_concurrent(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    assert_int_equal(rt_topic_create(e, "hot", 2), 0);
    struct appender a = {.e = e};
    atomic_init(&a.stop, false);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, append_loop, &a), 0);
    for (int i = 0; i < 200; i++) {
        struct rt_topic_config c[] = {{"max.message.bytes", i % 2 ? NULL : "200"},
                                      {"retention.ms", i % 2 ? "60000" : NULL}};
        assert_int_equal(rt_topic_config_defaults_alter(e, c, 2), 0);
        if (i == 100)
            assert_int_equal(rt_topic_add_partitions(e, "hot", 3), 0);
    }
    atomic_store(&a.stop, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.other, 0);
    assert_int_equal(rt_close(e), 0);
    tu_rmdir_free(dir);
}

/* The catalogue's CRC (A.2: over bytes [10, end) at 6) made to match edited bytes. */
static void meta_crc_fix(uint8_t *b, size_t len)
{
    uint32_t c = crc32c(0, b + 10, len - 10);
    b[6] = (uint8_t)(c >> 24);
    b[7] = (uint8_t)(c >> 16);
    b[8] = (uint8_t)(c >> 8);
    b[9] = (uint8_t)c;
}

struct counts {
    unsigned problems;
    char text[4096];
};

static void on_report(void *ctx, const char *msg)
{
    struct counts *c = ctx;
    if (strncmp(msg, "warning: ", 9) != 0)
        c->problems++;
    size_t n = strlen(c->text);
    snprintf(c->text + n, sizeof(c->text) - n, "%s\n", msg);
}

/* Damage in a config entry (its bytes rewritten and the CRC made to match, so only the config
 * rules can catch it) is refused by open and reported by verify, with the file and offset. */
static void test_damaged_config_is_reported(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct rt_options o;
    options(&o);
    rt_engine *e = NULL;
    assert_int_equal(rt_open(dir, &o, &e), 0);
    struct rt_topic_config c[] = {{"retention.ms", "5000"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 1, c, 1), 0);
    assert_int_equal(rt_close(e), 0);
    char *meta = tu_path("%s/ringtail.meta", dir);
    size_t len = 0;
    uint8_t *b = tu_read_file(meta, &len);
    /* 14 header + 2 + 1 ("t") + 4 partitions + 1 count: the key length at 22, key at 23. */
    assert_int_equal(b[22], strlen("retention.ms"));
    assert_memory_equal(b + 23, "retention.ms", 12);
    b[23 + 12 + 1] = '-'; /* "-000": not a value in its one spelling */
    meta_crc_fix(b, len);
    FILE *f = fopen(meta, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
    assert_int_equal(rt_open(dir, &o, &e), RT_E_CORRUPT);
    assert_non_null(strstr(rt_error_detail(), "ringtail.meta"));
    assert_non_null(strstr(rt_error_detail(), "offset 22"));
    struct counts cnt = {0};
    (void)rt_verify(dir, on_report, &cnt);
    if (cnt.problems == 0 || !strstr(cnt.text, "offset 22"))
        fail_msg("verify: %s", cnt.text);
    free(meta);
    tu_rmdir_free(dir);
}

/* Power loss at the n-th directory fsync / direct fdatasync / directory change of an alter:
 * after reopen the topic has the old configs or the new ones; an acknowledged alter the new. */
static void power_prepare(rt_engine *e)
{
    struct rt_topic_config c[] = {{"retention.ms", "5000"}, {"flush.ms", "100"}};
    assert_int_equal(rt_topic_create_with_configs(e, "t", 1, c, 2), 0);
}

static int power_act(rt_engine *e)
{
    struct rt_topic_config c[] = {{"retention.ms", "7000"}, {"flush.ms", NULL}};
    return rt_topic_config_alter(e, "t", c, 2, false);
}

static void power_check(rt_engine *e, const char *dir, bool acked, const char *what)
{
    (void)dir;
    char ms[64], flush[64];
    config_of(e, "t", "retention.ms", ms);
    enum rt_config_source fsrc = config_of(e, "t", "flush.ms", flush);
    bool old = strcmp(ms, "5000") == 0 && fsrc == RT_CONFIG_TOPIC && strcmp(flush, "100") == 0;
    bool new = strcmp(ms, "7000") == 0 && fsrc == RT_CONFIG_DEFAULT;
    if (!(old || new) || (acked && !new))
        fail_msg("%s: retention.ms %s, flush.ms %s (%s)", what, ms, flush,
                 acked ? "acknowledged" : "not acknowledged");
}

static const struct tu_power_sweep sweep = {.options = options,
                                            .runs_max = 50,
                                            .what = "of an alter",
                                            .prepare = power_prepare,
                                            .act = power_act,
                                            .check = power_check};

static void test_power_loss_at_every_directory_fsync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_FSYNC);
}

static void test_power_loss_at_every_direct_fdatasync(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_FDATASYNC_DIRECT);
}

static void test_power_loss_at_every_directory_change(void **state)
{
    (void)state;
    tu_power_sweep(&sweep, IO_OP_DIR_ENTRY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_names_and_values),
        cmocka_unit_test(test_create_with_configs_survives_reopen),
        cmocka_unit_test(test_catalogue_version_follows_configs),
        cmocka_unit_test(test_alter_whole_and_incremental),
        cmocka_unit_test(test_honoured_at_once),
        cmocka_unit_test(test_segment_ms),
        cmocka_unit_test(test_segment_bytes_and_retention),
        cmocka_unit_test(test_dynamic_defaults),
        cmocka_unit_test(test_dynamic_defaults_concurrent),
        cmocka_unit_test(test_damaged_config_is_reported),
        cmocka_unit_test(test_power_loss_at_every_directory_fsync),
        cmocka_unit_test(test_power_loss_at_every_direct_fdatasync),
        cmocka_unit_test(test_power_loss_at_every_directory_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
