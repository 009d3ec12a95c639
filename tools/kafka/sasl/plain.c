/*
 * plain.c — the parser of a SASL PLAIN message (plain.h). Network bytes: every length is
 * checked, nothing past `len` is read, no NUL terminator is assumed.
 */
#include "tools/kafka/sasl/plain.h"

#include <string.h>

#include "engine/ringtail.h"

int sasl_plain_parse(const uint8_t *msg, size_t len, struct sasl_plain *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    if (!msg || len == 0 || len > SASL_PLAIN_MAX) {
        *why = len ? "PLAIN message too long" : "empty PLAIN message";
        return RT_E_INVALID_ARGUMENT;
    }
    const uint8_t *nul1 = memchr(msg, 0, len);
    const uint8_t *nul2 = nul1 ? memchr(nul1 + 1, 0, len - (size_t)(nul1 + 1 - msg)) : NULL;
    if (!nul1 || !nul2) {
        *why = "Invalid SASL/PLAIN response: expected 3 tokens";
        return RT_E_INVALID_ARGUMENT;
    }
    out->authzid = (const char *)msg;
    out->authzid_len = (size_t)(nul1 - msg);
    out->user = (const char *)nul1 + 1;
    out->user_len = (size_t)(nul2 - nul1 - 1);
    out->password = (const char *)nul2 + 1;
    out->password_len = len - (size_t)(nul2 + 1 - msg);
    if (memchr(out->password, 0, out->password_len)) {
        *why = "Invalid SASL/PLAIN response: expected 3 tokens";
        return RT_E_INVALID_ARGUMENT;
    }
    if (out->user_len == 0) {
        *why = "Authentication failed: username not specified";
        return RT_E_INVALID_ARGUMENT;
    }
    if (out->password_len == 0) {
        *why = "Authentication failed: password not specified";
        return RT_E_INVALID_ARGUMENT;
    }
    if (out->authzid_len &&
        (out->authzid_len != out->user_len || memcmp(out->authzid, out->user, out->user_len))) {
        *why = "Authentication failed: Client requested an authorization id that is different "
               "from username";
        return RT_E_INVALID_ARGUMENT;
    }
    return 0;
}
