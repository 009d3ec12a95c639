/*
 * test_kafka_broker_config.c — dynamic broker configs over the wire (handle_admin.c KAD10,
 * config/broker_config.h BC1-BC3, broker_config_store.h BS1-BS2): a kafka_server runs
 * in-process with its data directory as config_dir, and the test speaks AlterConfigs v0,
 * IncrementalAlterConfigs v0 and DescribeConfigs v1 by hand:
 *   - a per-broker dynamic config (librdkafka 0081's sasl.kerberos.min.time.before.relogin)
 *     set on the broker's id is NONE and described with source DYNAMIC_BROKER_CONFIG (2),
 *     read_only false; a static one (broker.id) and an unknown name are INVALID_REQUEST
 *     "Cannot update these configs dynamically" (BC1); a value its type refuses is
 *     INVALID_REQUEST (BC2); a per-broker config at the default level "" and an SSL keystore
 *     config without a listener prefix are INVALID_REQUEST (BC3); a password config is
 *     refused (no password encoder); validate_only changes nothing;
 *   - a cluster-wide config set at "" is described there with DYNAMIC_DEFAULT_BROKER_CONFIG
 *     (3), and on the broker's id with that source (a static row keeps its static value as
 *     a synonym); IncrementalAlterConfigs DELETE removes it, APPEND on a non-list is
 *     INVALID_CONFIG;
 *   - what was set survives a restart of the broker on the same directory (KAD10, BS2), and
 *     a corrupt broker-configs.meta refuses the start (BS1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/kafka_wire.h"
#include "helpers/test_util.h"
#include "ringtail.h"
#include "tools/kafka/config/broker_config_store.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/server/server.h"

/* Restarts the fixture's server with config_dir = the fixture's data directory. */
static int restart(struct tk_fx *x)
{
    if (x->sock >= 0)
        close(x->sock);
    x->sock = -1;
    if (x->srv)
        kafka_server_stop(x->srv);
    x->srv = NULL;
    struct kafka_server_options o;
    kafka_server_options_init(&o);
    o.net.listeners[0].port = 0;
    o.net.threads = 1;
    o.net.io = strcmp(tu_backend(), "sync") == 0 ? NET_IO_SYNC : NET_IO_URING;
    o.config_dir = x->f.dir;
    return kafka_server_start(x->f.e, &o, &x->srv);
}

static int setup(void **state)
{
    int rc = tk_fx_start(state, true, "test_kafka_broker_config");
    if (rc)
        return rc;
    assert_int_equal(restart(*state), 0);
    return 0;
}

static int teardown(void **state)
{
    return tk_fx_stop(state);
}

/* One AlterConfigs v0 (incremental: IncrementalAlterConfigs v0 with `op`) of a BROKER
 * resource `name` setting key=value; the answer's error code, its message in msg. */
static int16_t alter(struct tk_fx *x, bool incremental, const char *name, const char *key,
                     int8_t op, const char *value, bool validate_only, char *msg, size_t cap)
{
    struct kp_writer w;
    tk_req_begin(x, &w, incremental ? KAFKA_INCREMENTAL_ALTER_CONFIGS : KAFKA_ALTER_CONFIGS, 0);
    kp_write_array_len(&w, 1);
    kp_write_i8(&w, KAFKA_RESOURCE_BROKER);
    kp_write_string(&w, kp_str_of(name));
    kp_write_array_len(&w, 1);
    kp_write_string(&w, kp_str_of(key));
    if (incremental)
        kp_write_i8(&w, op);
    kp_write_nullable_string(&w, value ? kp_str_of(value) : (struct kp_str){NULL, -1});
    kp_write_bool(&w, validate_only);
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    int16_t err = kp_read_i16(&r);
    struct kp_str m = kp_read_nullable_string(&r);
    snprintf(msg, cap, "%.*s", m.len > 0 ? (int)m.len : 0, m.ptr ? m.ptr : "");
    assert_int_equal(kp_read_i8(&r), KAFKA_RESOURCE_BROKER);
    assert_true(kp_str_eq(kp_read_string(&r), name));
    assert_int_equal(r.err, 0);
    free(buf);
    return err;
}

struct described {
    bool found;
    char value[256];
    bool read_only;
    int8_t source;
    int32_t synonyms;
    int8_t synonym_source[4];
};

/* DescribeConfigs v1 (with synonyms) of the BROKER resource `name`, the entry `key`. */
static struct described describe(struct tk_fx *x, const char *name, const char *key)
{
    struct kp_writer w;
    tk_req_begin(x, &w, KAFKA_DESCRIBE_CONFIGS, 1);
    kp_write_array_len(&w, 1);
    kp_write_i8(&w, KAFKA_RESOURCE_BROKER);
    kp_write_string(&w, kp_str_of(name));
    kp_write_array_len(&w, -1);
    kp_write_bool(&w, true); /* include_synonyms */
    tk_req_send(x, &w);
    uint8_t *buf = NULL;
    struct kp_reader r;
    assert_int_equal(tk_resp_read(x, &buf, &r, false), 0);
    (void)kp_read_i32(&r);
    assert_int_equal(kp_read_array_len(&r, 1), 1);
    assert_int_equal(kp_read_i16(&r), KAFKA_NONE);
    (void)kp_read_nullable_string(&r);
    assert_int_equal(kp_read_i8(&r), KAFKA_RESOURCE_BROKER);
    assert_true(kp_str_eq(kp_read_string(&r), name));
    struct described d = {0};
    int32_t n = kp_read_array_len(&r, 1);
    for (int32_t i = 0; i < n && r.err == 0; i++) {
        struct kp_str cname = kp_read_string(&r);
        struct kp_str value = kp_read_nullable_string(&r);
        bool ro = kp_read_bool(&r);
        int8_t source = kp_read_i8(&r);
        (void)kp_read_bool(&r); /* sensitive */
        int32_t ns = kp_read_array_len(&r, 1);
        int8_t ss[4] = {0};
        for (int32_t j = 0; j < ns && r.err == 0; j++) {
            (void)kp_read_string(&r);
            (void)kp_read_nullable_string(&r);
            int8_t src = kp_read_i8(&r);
            if (j < 4)
                ss[j] = src;
        }
        if (kp_str_eq(cname, key)) {
            d.found = true;
            snprintf(d.value, sizeof(d.value), "%.*s", value.len > 0 ? (int)value.len : 0,
                     value.ptr ? value.ptr : "");
            d.read_only = ro;
            d.source = source;
            d.synonyms = ns;
            memcpy(d.synonym_source, ss, sizeof(ss));
        }
    }
    assert_int_equal(r.err, 0);
    free(buf);
    return d;
}

#define RELOGIN "sasl.kerberos.min.time.before.relogin"

/* KAD10, BC1-BC3: what is taken, what is refused and how, and what DescribeConfigs says. */
static void test_alter_and_describe(void **state)
{
    struct tk_fx *x = *state;
    char m[2048];
    /* librdkafka 0081's AlterConfigs of the broker: a per-broker dynamic config. */
    assert_int_equal(alter(x, false, "0", RELOGIN, 0, "58000", false, m, sizeof(m)), KAFKA_NONE);
    struct described d = describe(x, "0", RELOGIN);
    assert_true(d.found);
    assert_string_equal(d.value, "58000");
    assert_int_equal(d.source, 2); /* DYNAMIC_BROKER_CONFIG */
    assert_false(d.read_only);
    /* BC1: a static config, and a name Kafka does not have, are not dynamic. */
    assert_int_equal(alter(x, false, "0", "broker.id", 0, "7", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    assert_non_null(strstr(m, "Cannot update these configs dynamically: Set(broker.id)"));
    assert_int_equal(alter(x, true, "0", "no.such.config", 0, "1", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    d = describe(x, "0", "broker.id");
    assert_true(d.found && d.read_only && d.source == 4);
    assert_string_equal(d.value, "0");
    /* BC2: the type's check; the value is kept in canonical spelling. */
    assert_int_equal(alter(x, true, "0", RELOGIN, 0, "soon", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    assert_non_null(strstr(m, "Not a number of type LONG"));
    assert_int_equal(
        alter(x, true, "0", "sasl.login.refresh.window.factor", 0, "2.0", false, m, sizeof(m)),
        KAFKA_INVALID_REQUEST);
    assert_int_equal(alter(x, true, "0", "sasl.jaas.config", 0, "x", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    assert_non_null(strstr(m, "Password encoder secret not configured"));
    assert_int_equal(alter(x, true, "0", RELOGIN, 0, " 0061000 ", false, m, sizeof(m)), KAFKA_NONE);
    assert_string_equal(describe(x, "0", RELOGIN).value, "61000");
    /* validate_only changes nothing. */
    assert_int_equal(alter(x, true, "0", RELOGIN, 0, "70000", true, m, sizeof(m)), KAFKA_NONE);
    assert_string_equal(describe(x, "0", RELOGIN).value, "61000");
    /* BC3: per-broker configs are not cluster-wide defaults; keystores need a listener. */
    assert_int_equal(alter(x, true, "", RELOGIN, 0, "1000", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    assert_non_null(strstr(m, "broker id must be specified"));
    assert_int_equal(alter(x, true, "0", "ssl.keystore.location", 0, "/k", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    assert_non_null(strstr(m, "per-listener"));
    /* Another broker's id is not this broker. */
    assert_int_equal(alter(x, true, "5", RELOGIN, 0, "1000", false, m, sizeof(m)),
                     KAFKA_INVALID_REQUEST);
    /* A cluster-wide default: described at "" (source 3) and on the id over the static value. */
    assert_int_equal(alter(x, true, "", "log.retention.ms", 0, "3600000", false, m, sizeof(m)),
                     KAFKA_NONE);
    d = describe(x, "", "log.retention.ms");
    assert_true(d.found);
    assert_string_equal(d.value, "3600000");
    assert_int_equal(d.source, 3);                /* DYNAMIC_DEFAULT_BROKER_CONFIG */
    assert_false(describe(x, "", RELOGIN).found); /* "" lists the defaults only */
    d = describe(x, "0", "log.retention.ms");
    assert_string_equal(d.value, "3600000");
    assert_int_equal(d.source, 3);
    assert_false(d.read_only);
    assert_int_equal(d.synonyms, 2);
    assert_int_equal(d.synonym_source[1], 4); /* the static value below it */
    /* APPEND on a non-list; DELETE. */
    assert_int_equal(alter(x, true, "", "log.retention.ms", 2, "1", false, m, sizeof(m)),
                     KAFKA_INVALID_CONFIG);
    assert_int_equal(alter(x, true, "", "log.cleanup.policy", 2, "compact", false, m, sizeof(m)),
                     KAFKA_NONE);
    assert_string_equal(describe(x, "", "log.cleanup.policy").value, "compact");
    assert_int_equal(alter(x, true, "", "log.retention.ms", 1, NULL, false, m, sizeof(m)),
                     KAFKA_NONE);
    assert_false(describe(x, "", "log.retention.ms").found);
    assert_int_equal(describe(x, "0", "log.retention.ms").source, 4);
    /* Legacy AlterConfigs replaces the level's whole set. */
    assert_int_equal(alter(x, false, "", "max.connections", 0, "500", false, m, sizeof(m)),
                     KAFKA_NONE);
    assert_false(describe(x, "", "log.cleanup.policy").found);
    assert_string_equal(describe(x, "", "max.connections").value, "500");
    assert_string_equal(describe(x, "0", RELOGIN).value, "61000"); /* the other level kept */
}

/* KAD10, BS1, BS2: the set survives a restart; a corrupt file refuses the start. */
static void test_persisted(void **state)
{
    struct tk_fx *x = *state;
    char m[2048];
    assert_int_equal(alter(x, false, "0", RELOGIN, 0, "58000", false, m, sizeof(m)), KAFKA_NONE);
    assert_int_equal(alter(x, true, "", "log.segment.bytes", 0, "1048576", false, m, sizeof(m)),
                     KAFKA_NONE);
    assert_int_equal(restart(x), 0);
    struct described d = describe(x, "0", RELOGIN);
    assert_true(d.found);
    assert_string_equal(d.value, "58000");
    assert_int_equal(d.source, 2);
    assert_string_equal(describe(x, "", "log.segment.bytes").value, "1048576");
    /* One flipped byte in the file: the broker does not start on it. */
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", x->f.dir, BROKER_CONFIG_STORE_FILE);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 20, SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, 20, SEEK_SET), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
    if (x->sock >= 0)
        close(x->sock);
    x->sock = -1;
    kafka_server_stop(x->srv);
    x->srv = NULL;
    struct kafka_server_options o;
    kafka_server_options_init(&o);
    o.net.listeners[0].port = 0;
    o.net.threads = 1;
    o.config_dir = x->f.dir;
    struct kafka_server *srv = NULL;
    assert_int_equal(kafka_server_start(x->f.e, &o, &srv), RT_E_CORRUPT);
    /* Removed, the broker starts with nothing set (teardown needs a server). */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(restart(x), 0);
    assert_false(describe(x, "0", RELOGIN).found);
}

/* BS1: parse(encode(set)) is the set; every strict prefix of a file is refused. */
static void test_store_round_trip(void **state)
{
    (void)state;
    struct broker_config_set s = {0}, back;
    assert_int_equal(
        broker_config_set_put(&s, BCL_BROKER, (size_t)broker_config_find(RELOGIN), "58000"), 0);
    assert_int_equal(broker_config_set_put(&s, BCL_DEFAULT,
                                           (size_t)broker_config_find("log.cleanup.policy"),
                                           "compact,delete"),
                     0);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(broker_config_store_encode(&s, &buf, &len), 0);
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(broker_config_store_parse(buf, len, &back, &why, &bad), 0);
    assert_int_equal(broker_config_set_count(&back), 2);
    assert_string_equal(back.value[BCL_BROKER][broker_config_find(RELOGIN)], "58000");
    broker_config_set_free(&back);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(broker_config_store_parse(buf, cut, &back, &why, &bad), RT_E_CORRUPT);
    free(buf);
    broker_config_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alter_and_describe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_persisted, setup, teardown),
        cmocka_unit_test(test_store_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
