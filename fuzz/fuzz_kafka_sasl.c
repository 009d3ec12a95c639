/*
 * fuzz_kafka_sasl.c — libFuzzer target for SASL's parsers of network and disk bytes
 * (tools/kafka/sasl/): byte 0 picks one — 0 the SCRAM client-first parser, 1 the client-final
 * parser, 2 PLAIN's, 3 a whole SCRAM server exchange (the rest split at its first 0xff byte into
 * client-first and client-final, against a fixed SCRAM-SHA-256 credential), 4 the credentials
 * file parser (docs/format.md S). Each must return its documented code, never read outside the
 * input (libFuzzer hands exactly-sized buffers: ASan), and whatever pointer it returns must lie
 * inside the input; an accepted file has a valid SHA-256 trailer, so mostly the damage paths run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ringtail.h"
#include "tools/kafka/sasl/cred_store.h"
#include "tools/kafka/sasl/plain.h"
#include "tools/kafka/sasl/scram.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_kafka_sasl: %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static const uint8_t *in_lo, *in_hi;

static void inside(const void *p, size_t n)
{
    const uint8_t *b = p;
    CHECK(b >= in_lo && b + n <= in_hi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    in_lo = p;
    in_hi = p + n;
    const char *why = NULL;
    switch (data[0] % 5) {
    case 0: {
        struct scram_client_first f;
        int rc = scram_parse_client_first((const char *)p, n, &f, &why);
        CHECK(rc == 0 || (rc == RT_E_INVALID_ARGUMENT && why));
        if (rc == 0) {
            inside(f.bare, f.bare_len);
            inside(f.nonce, f.nonce_len);
            CHECK(f.gs2_len + f.bare_len == n);
            CHECK(strlen(f.user) > 0 && strlen(f.user) <= SCRAM_USER_MAX);
        }
        break;
    }
    case 1: {
        struct scram_client_final f;
        int rc = scram_parse_client_final((const char *)p, n, &f, &why);
        CHECK(rc == 0 || (rc == RT_E_INVALID_ARGUMENT && why));
        if (rc == 0) {
            inside(f.channel_binding, f.channel_binding_len);
            inside(f.nonce, f.nonce_len);
            CHECK(f.without_proof_len < n);
            CHECK(f.proof_len <= SCRAM_KEY_MAX);
        }
        break;
    }
    case 2: {
        struct sasl_plain pl;
        int rc = sasl_plain_parse(p, n, &pl, &why);
        CHECK(rc == 0 || (rc == RT_E_INVALID_ARGUMENT && why));
        if (rc == 0) {
            inside(pl.user, pl.user_len);
            inside(pl.password, pl.password_len);
            CHECK(pl.user_len > 0 && pl.password_len > 0);
        }
        break;
    }
    case 3: {
        static struct scram_credential cred;
        static int made;
        if (!made) { /* PBKDF2 once: the exchange after it is what is fuzzed */
            static const uint8_t salt[16] = {1, 2, 3};
            CHECK(scram_credential_make(SCRAM_SHA_256, "pencil", 6, 4096, salt, 16, &cred) == 0);
            made = 1;
        }
        const uint8_t *cut = memchr(p, 0xff, n);
        size_t first_len = cut ? (size_t)(cut - p) : n;
        struct scram_server s;
        scram_server_init(&s, SCRAM_SHA_256);
        char out[SCRAM_MESSAGE_MAX];
        size_t out_len = 0;
        if (scram_server_client_first(&s, (const char *)p, first_len, &why) != 0)
            break;
        CHECK(scram_server_first(&s, &cred, "fuzznonce", out, sizeof(out), &out_len) == 0);
        CHECK(out_len > 0 && out_len <= sizeof(out));
        if (cut) {
            int rc = scram_server_client_final(&s, (const char *)cut + 1, n - first_len - 1, out,
                                               sizeof(out), &out_len, &why);
            CHECK(rc == 0 || rc == RT_E_INVALID_ARGUMENT);
            CHECK(rc != 0 || s.state == SCRAM_DONE);
        }
        break;
    }
    default: {
        char err[CRED_ERROR_MAX];
        int rc = cred_file_parse_check(p, n, "fuzz", err, sizeof(err));
        CHECK(rc == 0 || rc == RT_E_CORRUPT || rc == -12 /* ENOMEM */);
        if (rc == RT_E_CORRUPT)
            CHECK(strncmp(err, "fuzz: offset ", 13) == 0);
        break;
    }
    }
    return 0;
}
