/*
 * scram.h — SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them: the
 * credential Kafka stores per user and mechanism (salt, iterations, StoredKey, ServerKey — never
 * the password), the derivations from a password or from a salted password (what Kafka's
 * AdminClient sends in AlterUserScramCredentials), the parser of the client's two messages and
 * the server's side of the exchange. The primitives are OpenSSL's (PKCS5_PBKDF2_HMAC, HMAC,
 * EVP digests, RAND_bytes, CRYPTO_memcmp); nothing here is hand-rolled cryptography. It holds no
 * global state, never does I/O and never looks a user up (the caller does, cred_store.h).
 *
 * Invariants:
 *   SCR1  A proof is checked in constant time (CRYPTO_memcmp of H(ClientKey) with StoredKey),
 *        and only after the client-final message parsed whole and named the combined nonce and
 *        the channel binding of the client's own gs2 header.
 *   SCR2  Iterations lie in SCRAM_ITERATIONS_MIN..SCRAM_ITERATIONS_MAX (Kafka's 4096..16384)
 *        and a salt in 1..SCRAM_SALT_MAX bytes, wherever a credential comes from.
 *   SCR3  Every message of the client is bounded by SCRAM_MESSAGE_MAX bytes; the parsers read
 *        only the bytes given (no NUL is needed or trusted: a NUL inside is invalid).
 *   SCR4  The client-final nonce must end with the server-first's combined nonce (Kafka's
 *        ScramSaslServer rule, which librdkafka relies on: it repeats its own nonce first).
 */
#ifndef RT_KAFKA_SCRAM_H
#define RT_KAFKA_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's ScramMechanism type ids (on the wire in Describe/AlterUserScramCredentials, and in
 * the credentials file). */
enum scram_mech {
    SCRAM_SHA_256 = 1,
    SCRAM_SHA_512 = 2,
};

#define SCRAM_KEY_MAX        64 /* SHA-512's digest */
#define SCRAM_SALT_MAX       64
#define SCRAM_SALT_BYTES     32 /* the salt we make (Kafka's ScramFormatter: 32 random bytes) */
#define SCRAM_ITERATIONS_MIN 4096
#define SCRAM_ITERATIONS_MAX 16384
#define SCRAM_USER_MAX       255 /* a user name's bytes */
#define SCRAM_MESSAGE_MAX    1024
#define SCRAM_NONCE_MAX      256

struct scram_credential {
    uint8_t mech; /* enum scram_mech */
    uint8_t salt_len;
    uint32_t iterations;
    uint8_t salt[SCRAM_SALT_MAX];
    uint8_t stored_key[SCRAM_KEY_MAX]; /* H(HMAC(SaltedPassword, "Client Key")) */
    uint8_t server_key[SCRAM_KEY_MAX]; /* HMAC(SaltedPassword, "Server Key") */
};

/* "SCRAM-SHA-256" / "SCRAM-SHA-512"; NULL for another value. */
const char *scram_mech_name(int mech);
/* The mechanism a name (len bytes) names; false for none. */
bool scram_mech_parse(const char *name, size_t len, enum scram_mech *out);
/* The digest (and key) size: 32 or 64; 0 for an unknown mechanism. */
size_t scram_key_len(int mech);
/* SCR2: true when mech, iterations and the salt's length are acceptable. */
bool scram_params_valid(int mech, uint32_t iterations, size_t salt_len);

/* The credential of a salted password (Hi(password, salt, i), key_len bytes). 0 or
 * RT_E_INVALID_ARGUMENT (SCR2, a salted password of the wrong length). */
int scram_credential_from_salted(int mech, const uint8_t *salted, size_t salted_len,
                                 const uint8_t *salt, size_t salt_len, uint32_t iterations,
                                 struct scram_credential *out);
/* The credential of a password, with `salt` (NULL: SCRAM_SALT_BYTES random bytes). 0,
 * RT_E_INVALID_ARGUMENT, or RT_E_UNSUPPORTED when OpenSSL fails. */
int scram_credential_make(int mech, const char *password, size_t password_len, uint32_t iterations,
                          const uint8_t *salt, size_t salt_len, struct scram_credential *out);
/* PLAIN against a SCRAM credential: derives with the stored salt and iterations and compares
 * StoredKey in constant time. */
bool scram_password_matches(const struct scram_credential *c, const char *password,
                            size_t password_len);

/* ---- the parser of the client's messages (network bytes; fuzz/fuzz_kafka_sasl.c) ---- */

struct scram_client_first {
    const char *gs2; /* the gs2 header, "n,," or "y,,", with its authzid: up to bare */
    size_t gs2_len;
    const char *bare; /* client-first-message-bare: "n=...,r=..." */
    size_t bare_len;
    char user[SCRAM_USER_MAX + 1]; /* saslname decoded (=2C, =3D), NUL-terminated */
    char authzid[SCRAM_USER_MAX + 1];
    const char *nonce;
    size_t nonce_len;
};

struct scram_client_final {
    const char *channel_binding; /* c= value (base64) */
    size_t channel_binding_len;
    const char *nonce; /* r= */
    size_t nonce_len;
    size_t without_proof_len; /* the message up to ",p=" */
    uint8_t proof[SCRAM_KEY_MAX];
    size_t proof_len;
};

/* Parses client-first-message (RFC 5802 §7). 0, or RT_E_INVALID_ARGUMENT with *why set. */
int scram_parse_client_first(const char *msg, size_t len, struct scram_client_first *out,
                             const char **why);
/* Parses client-final-message. 0, or RT_E_INVALID_ARGUMENT with *why set. */
int scram_parse_client_final(const char *msg, size_t len, struct scram_client_final *out,
                             const char **why);

/* ---- the server's side of one exchange ---- */

enum scram_state {
    SCRAM_WANT_CLIENT_FIRST = 0,
    SCRAM_WANT_CLIENT_FINAL = 1,
    SCRAM_DONE = 2,
    SCRAM_FAILED = 3,
};

struct scram_server {
    uint8_t mech;
    uint8_t state; /* enum scram_state */
    char user[SCRAM_USER_MAX + 1];
    struct scram_credential cred;
    char gs2[SCRAM_MESSAGE_MAX];
    size_t gs2_len;
    char client_first_bare[SCRAM_MESSAGE_MAX];
    size_t client_first_bare_len;
    char server_first[SCRAM_MESSAGE_MAX];
    size_t server_first_len;
    char nonce[2 * SCRAM_NONCE_MAX + 1]; /* client's + server's */
    size_t nonce_len;
};

void scram_server_init(struct scram_server *s, int mech);
/* Step 1: the client-first message parsed into s (s->user names whom to look up). 0, or
 * RT_E_INVALID_ARGUMENT with *why. */
int scram_server_client_first(struct scram_server *s, const char *msg, size_t len,
                              const char **why);
/* Step 2: with the user's credential (of s->mech), writes server-first-message into out
 * (cap bytes; SCRAM_MESSAGE_MAX suffices). server_nonce NULL: 24 random bytes in base64 (tests
 * pass RFC 7677's). 0 or RT_E_INVALID_ARGUMENT / RT_E_UNSUPPORTED. */
int scram_server_first(struct scram_server *s, const struct scram_credential *cred,
                       const char *server_nonce, char *out, size_t cap, size_t *out_len);
/* Step 3: checks client-final-message (SCR1) and writes server-final-message ("v=...") into
 * out. 0, or RT_E_INVALID_ARGUMENT with *why (a bad message, or a wrong proof: "invalid
 * credentials"). */
int scram_server_client_final(struct scram_server *s, const char *msg, size_t len, char *out,
                              size_t cap, size_t *out_len, const char **why);

#endif /* RT_KAFKA_SCRAM_H */
