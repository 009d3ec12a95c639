/*
 * plain.h — SASL PLAIN (RFC 4616) as Kafka's PlainSaslServer reads it: one message,
 * "authzid NUL user NUL password". This module only parses those network bytes (the check
 * against a SCRAM credential is scram.h's scram_password_matches); it holds no state.
 */
#ifndef RT_KAFKA_PLAIN_H
#define RT_KAFKA_PLAIN_H

#include <stddef.h>
#include <stdint.h>

#define SASL_PLAIN_MAX 1024 /* a PLAIN message's bytes at most */

struct sasl_plain {
    const char *authzid, *user, *password; /* into the message; not NUL-terminated */
    size_t authzid_len, user_len, password_len;
};

/* 0, or RT_E_INVALID_ARGUMENT with *why: not three fields, an empty user or password, a
 * message over SASL_PLAIN_MAX, an authzid that is neither empty nor the user (Kafka's rule). */
int sasl_plain_parse(const uint8_t *msg, size_t len, struct sasl_plain *out, const char **why);

#endif /* RT_KAFKA_PLAIN_H */
