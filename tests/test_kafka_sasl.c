/*
 * test_kafka_sasl.c — SASL's pieces without a broker (tools/kafka/sasl/): the SCRAM-SHA-256
 * exchange of RFC 7677 §3 byte for byte (its salt, nonces, proof and server signature), a
 * wrong proof refused (SCR1), PLAIN against the same credential, the parsers on bad input (SCR3),
 * and the credentials store: durable round trip, re-read on change (CS3), damage reported with
 * the file and offset and not served (CS4).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/ringtail.h"
#include "tools/kafka/sasl/cred_store.h"
#include "tools/kafka/sasl/plain.h"
#include "tools/kafka/sasl/scram.h"

/* RFC 7677 §3: user "user", password "pencil", salt base64 W22ZaJ0SNY7soEsUEjb6gQ==. */
static const uint8_t rfc_salt[16] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e,
                                     0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81};
#define RFC_CLIENT_FIRST "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define RFC_SERVER_NONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define RFC_SERVER_FIRST                                                                           \
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_CLIENT_FINAL                                                                           \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfM"  \
    "Hgsqmmiz7AndVQ="
#define RFC_SERVER_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static void rfc_cred(struct scram_credential *c)
{
    assert_int_equal(
        scram_credential_make(SCRAM_SHA_256, "pencil", 6, 4096, rfc_salt, sizeof(rfc_salt), c), 0);
}

/* RFC 7677's exchange, every message as the RFC prints it. */
static void test_rfc7677_exchange(void **state)
{
    (void)state;
    struct scram_credential c;
    rfc_cred(&c);
    struct scram_server s;
    scram_server_init(&s, SCRAM_SHA_256);
    const char *why = NULL;
    assert_int_equal(
        scram_server_client_first(&s, RFC_CLIENT_FIRST, strlen(RFC_CLIENT_FIRST), &why), 0);
    assert_string_equal(s.user, "user");
    char out[SCRAM_MESSAGE_MAX];
    size_t n = 0;
    assert_int_equal(scram_server_first(&s, &c, RFC_SERVER_NONCE, out, sizeof(out), &n), 0);
    assert_int_equal(n, strlen(RFC_SERVER_FIRST));
    assert_memory_equal(out, RFC_SERVER_FIRST, n);
    assert_int_equal(scram_server_client_final(&s, RFC_CLIENT_FINAL, strlen(RFC_CLIENT_FINAL), out,
                                               sizeof(out), &n, &why),
                     0);
    assert_int_equal(n, strlen(RFC_SERVER_FINAL));
    assert_memory_equal(out, RFC_SERVER_FINAL, n);
    assert_int_equal(s.state, SCRAM_DONE);
}

/* SCR1: one bit of the proof changed (another password's proof) is refused. */
static void test_wrong_proof_refused(void **state)
{
    (void)state;
    struct scram_credential c;
    rfc_cred(&c);
    struct scram_server s;
    scram_server_init(&s, SCRAM_SHA_256);
    const char *why = NULL;
    assert_int_equal(
        scram_server_client_first(&s, RFC_CLIENT_FIRST, strlen(RFC_CLIENT_FIRST), &why), 0);
    char out[SCRAM_MESSAGE_MAX];
    size_t n = 0;
    assert_int_equal(scram_server_first(&s, &c, RFC_SERVER_NONCE, out, sizeof(out), &n), 0);
    char bad[] = RFC_CLIENT_FINAL;
    bad[strlen(bad) - 3] = bad[strlen(bad) - 3] == 'A' ? 'B' : 'A';
    assert_int_equal(scram_server_client_final(&s, bad, strlen(bad), out, sizeof(out), &n, &why),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(s.state, SCRAM_FAILED);
    /* and a wrong nonce, with the right proof */
    scram_server_init(&s, SCRAM_SHA_256);
    assert_int_equal(
        scram_server_client_first(&s, RFC_CLIENT_FIRST, strlen(RFC_CLIENT_FIRST), &why), 0);
    assert_int_equal(scram_server_first(&s, &c, "otherNonce", out, sizeof(out), &n), 0);
    assert_int_equal(scram_server_client_final(&s, RFC_CLIENT_FINAL, strlen(RFC_CLIENT_FINAL), out,
                                               sizeof(out), &n, &why),
                     RT_E_INVALID_ARGUMENT);
}

/* PLAIN checks the password against the SCRAM credential; Kafka's parse rules. */
static void test_plain(void **state)
{
    (void)state;
    struct scram_credential c;
    rfc_cred(&c);
    assert_true(scram_password_matches(&c, "pencil", 6));
    assert_false(scram_password_matches(&c, "pencil2", 7));
    assert_false(scram_password_matches(&c, "", 0));
    struct sasl_plain p;
    const char *why = NULL;
    static const uint8_t ok[] = "\0user\0pencil";
    assert_int_equal(sasl_plain_parse(ok, sizeof(ok) - 1, &p, &why), 0);
    assert_int_equal(p.user_len, 4);
    assert_int_equal(p.password_len, 6);
    static const uint8_t authz[] = "user\0user\0pw";
    assert_int_equal(sasl_plain_parse(authz, sizeof(authz) - 1, &p, &why), 0);
    static const uint8_t other[] = "admin\0user\0pw";
    assert_int_equal(sasl_plain_parse(other, sizeof(other) - 1, &p, &why), RT_E_INVALID_ARGUMENT);
    static const uint8_t two[] = "user\0pw";
    assert_int_equal(sasl_plain_parse(two, sizeof(two) - 1, &p, &why), RT_E_INVALID_ARGUMENT);
    static const uint8_t four[] = "\0user\0pw\0x";
    assert_int_equal(sasl_plain_parse(four, sizeof(four) - 1, &p, &why), RT_E_INVALID_ARGUMENT);
    static const uint8_t nouser[] = "\0\0pw";
    assert_int_equal(sasl_plain_parse(nouser, sizeof(nouser) - 1, &p, &why), RT_E_INVALID_ARGUMENT);
}

/* SCR3: malformed client messages are refused, never read past their length. */
static void test_parser_bad_input(void **state)
{
    (void)state;
    static const char *bad_first[] = {
        "",
        "n",
        "p=tls-unique,,n=user,r=abc",
        "n,,r=abc",
        "n,,n=user",
        "n,,n=,r=x",
        "n,,n=us=2Xer,r=abc",
        "n,,n=user,r=a,m=ext",
        "x,,n=u,r=a",
        "n,a=other,n=user,r=abc",
    };
    struct scram_client_first f;
    const char *why = NULL;
    for (size_t i = 0; i < sizeof(bad_first) / sizeof(bad_first[0]); i++)
        assert_int_equal(scram_parse_client_first(bad_first[i], strlen(bad_first[i]), &f, &why),
                         RT_E_INVALID_ARGUMENT);
    assert_int_equal(scram_parse_client_first("n,,n=a=2Cb=3Dc,r=xyz", 20, &f, &why), 0);
    assert_string_equal(f.user, "a,b=c");
    /* truncated at every byte: never accepted as the whole, never crashes */
    for (size_t n = 0; n < strlen(RFC_CLIENT_FINAL); n++) {
        struct scram_client_final cf;
        (void)scram_parse_client_final(RFC_CLIENT_FINAL, n, &cf, &why);
    }
    static const char *bad_final[] = {"",
                                      "c=biws",
                                      "c=biws,r=abc",
                                      "c=biws,r=abc,p=!!!!",
                                      "c=biws,r=abc,p=AAAA,x=1",
                                      "r=abc,c=biws,p=AAAA"};
    for (size_t i = 0; i < sizeof(bad_final) / sizeof(bad_final[0]); i++) {
        struct scram_client_final cf;
        assert_int_equal(scram_parse_client_final(bad_final[i], strlen(bad_final[i]), &cf, &why),
                         RT_E_INVALID_ARGUMENT);
    }
    char big[SCRAM_MESSAGE_MAX + 10];
    memset(big, 'a', sizeof(big));
    memcpy(big, "n,,n=u,r=", 9);
    assert_int_equal(scram_parse_client_first(big, sizeof(big), &f, &why), RT_E_INVALID_ARGUMENT);
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/rt_sasl_XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static int count_one(void *ctx, const char *user, const struct scram_credential *c)
{
    (void)user;
    (void)c;
    (*(int *)ctx)++;
    return 0;
}

/* CS1, CS3: upsert and remove are durable and seen by another store on the same directory. */
static void test_store_round_trip_and_reread(void **state)
{
    (void)state;
    char *d = tmpdir();
    char err[CRED_ERROR_MAX];
    struct cred_store *a = NULL, *b = NULL;
    assert_int_equal(cred_store_open(d, &a, err, sizeof(err)), 0);
    assert_int_equal(cred_store_open(d, &b, err, sizeof(err)), 0);
    struct scram_credential c, got;
    rfc_cred(&c);
    assert_int_equal(cred_store_lookup(b, "user", SCRAM_SHA_256, &got), -ENOENT);
    assert_int_equal(cred_store_upsert(a, "user", &c), 0);
    assert_int_equal(cred_store_upsert(a, "zed", &c), 0);
    assert_int_equal(cred_store_lookup(b, "user", SCRAM_SHA_256, &got), 0); /* CS3 */
    assert_memory_equal(got.stored_key, c.stored_key, 32);
    assert_int_equal(got.iterations, 4096);
    assert_int_equal(cred_store_lookup(b, "user", SCRAM_SHA_512, &got), -ENOENT);
    assert_int_equal(cred_store_remove(b, "user", 0), 0);
    assert_int_equal(cred_store_lookup(a, "user", SCRAM_SHA_256, &got), -ENOENT);
    assert_int_equal(cred_store_remove(a, "user", 0), -ENOENT);
    int n = 0;
    assert_int_equal(cred_store_list(a, count_one, &n), 0);
    assert_int_equal(n, 1);
    cred_store_close(a);
    cred_store_close(b);
    assert_int_equal(cred_file_check(d, err, sizeof(err)), 0);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

/* CS4: a damaged file is reported with path and offset, by open and by the check, and a store
 * that finds it damaged later serves no credential until it is good again. */
static void test_store_damage(void **state)
{
    (void)state;
    char *d = tmpdir();
    char err[CRED_ERROR_MAX], path[512];
    snprintf(path, sizeof(path), "%s/%s", d, CRED_FILE_NAME);
    struct cred_store *a = NULL;
    assert_int_equal(cred_store_open(d, &a, err, sizeof(err)), 0);
    struct scram_credential c, got;
    rfc_cred(&c);
    assert_int_equal(cred_store_upsert(a, "user", &c), 0);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 20, SEEK_SET); /* inside the first entry's user name */
    fputc('X', f);
    fclose(f);
    assert_int_equal(cred_store_lookup(a, "user", SCRAM_SHA_256, &got), RT_E_CORRUPT);
    assert_true(cred_store_take_error(a, err, sizeof(err)));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "offset"));
    assert_false(cred_store_take_error(a, err, sizeof(err))); /* told once */
    assert_int_equal(cred_file_check(d, err, sizeof(err)), RT_E_CORRUPT);
    struct cred_store *b = NULL;
    assert_int_equal(cred_store_open(d, &b, err, sizeof(err)), RT_E_CORRUPT);
    assert_non_null(strstr(err, "SHA-256"));
    /* a write over a damaged file is refused: nothing of it is lost silently */
    assert_int_equal(cred_store_upsert(a, "other", &c), RT_E_CORRUPT);
    /* truncated: the offset is the file's end */
    assert_int_equal(truncate(path, 10), 0);
    assert_int_equal(cred_file_check(d, err, sizeof(err)), RT_E_CORRUPT);
    assert_non_null(strstr(err, "offset 10"));
    /* removed: an empty store again, and a new write works */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(cred_store_lookup(a, "user", SCRAM_SHA_256, &got), -ENOENT);
    assert_int_equal(cred_store_upsert(a, "user", &c), 0);
    assert_int_equal(cred_store_lookup(a, "user", SCRAM_SHA_256, &got), 0);
    cred_store_close(a);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

/* SCR2: iterations below 4096 or a salted password of the wrong size make no credential. */
static void test_params(void **state)
{
    (void)state;
    struct scram_credential c;
    uint8_t salted[64] = {0};
    assert_int_equal(
        scram_credential_from_salted(SCRAM_SHA_512, salted, 64, rfc_salt, 16, 4095, &c),
        RT_E_INVALID_ARGUMENT);
    assert_int_equal(
        scram_credential_from_salted(SCRAM_SHA_512, salted, 32, rfc_salt, 16, 4096, &c),
        RT_E_INVALID_ARGUMENT);
    assert_int_equal(scram_credential_from_salted(SCRAM_SHA_512, salted, 64, rfc_salt, 0, 4096, &c),
                     RT_E_INVALID_ARGUMENT);
    assert_int_equal(
        scram_credential_from_salted(SCRAM_SHA_512, salted, 64, rfc_salt, 16, 4096, &c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7677_exchange),
        cmocka_unit_test(test_wrong_proof_refused),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_parser_bad_input),
        cmocka_unit_test(test_store_round_trip_and_reread),
        cmocka_unit_test(test_store_damage),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
