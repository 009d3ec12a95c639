/*
 * scram.c — SCRAM-SHA-256/512 (scram.h): Kafka's credential, its derivations, the parser of the
 * client's messages and the server's side of the exchange, over OpenSSL's primitives.
 *
 * The exchange (RFC 5802 §3, §5; Kafka's ScramSaslServer):
 *   client-first  gs2-header client-first-bare     gs2-header = ("n" | "y") "," [a=authzid] ","
 *                                                  bare = "n=" saslname ",r=" c-nonce [,ext]
 *   server-first  "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations
 *   client-final  "c=" base64(gs2-header) ",r=" nonce [,ext] ",p=" base64(ClientProof)
 *   server-final  "v=" base64(ServerSignature)
 *   AuthMessage = bare "," server-first "," client-final-without-proof
 *   ClientSignature = HMAC(StoredKey, AuthMessage); ClientKey = ClientProof XOR ClientSignature
 *   accepted iff H(ClientKey) == StoredKey (SCR1); ServerSignature = HMAC(ServerKey, AuthMessage)
 */
#include "tools/kafka/sasl/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "engine/ringtail.h"

const char *scram_mech_name(int mech)
{
    switch (mech) {
    case SCRAM_SHA_256:
        return "SCRAM-SHA-256";
    case SCRAM_SHA_512:
        return "SCRAM-SHA-512";
    default:
        return NULL;
    }
}

bool scram_mech_parse(const char *name, size_t len, enum scram_mech *out)
{
    for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
        const char *n = scram_mech_name(m);
        if (name && len == strlen(n) && memcmp(name, n, len) == 0) {
            *out = (enum scram_mech)m;
            return true;
        }
    }
    return false;
}

size_t scram_key_len(int mech)
{
    return mech == SCRAM_SHA_256 ? 32 : mech == SCRAM_SHA_512 ? 64 : 0;
}

static const EVP_MD *mech_md(int mech)
{
    return mech == SCRAM_SHA_256 ? EVP_sha256() : mech == SCRAM_SHA_512 ? EVP_sha512() : NULL;
}

bool scram_params_valid(int mech, uint32_t iterations, size_t salt_len)
{
    return scram_key_len(mech) != 0 && iterations >= SCRAM_ITERATIONS_MIN &&
           iterations <= SCRAM_ITERATIONS_MAX && salt_len >= 1 && salt_len <= SCRAM_SALT_MAX;
}

static bool hmac(int mech, const uint8_t *key, size_t key_len, const void *data, size_t len,
                 uint8_t *out)
{
    unsigned int n = 0;
    return HMAC(mech_md(mech), key, (int)key_len, data, len, out, &n) != NULL &&
           n == scram_key_len(mech);
}

static bool digest(int mech, const uint8_t *data, size_t len, uint8_t *out)
{
    unsigned int n = 0;
    return EVP_Digest(data, len, out, &n, mech_md(mech), NULL) == 1 && n == scram_key_len(mech);
}

int scram_credential_from_salted(int mech, const uint8_t *salted, size_t salted_len,
                                 const uint8_t *salt, size_t salt_len, uint32_t iterations,
                                 struct scram_credential *out)
{
    size_t k = scram_key_len(mech);
    if (!scram_params_valid(mech, iterations, salt_len) || salted_len != k) /* SCR2 */
        return RT_E_INVALID_ARGUMENT;
    memset(out, 0, sizeof(*out));
    out->mech = (uint8_t)mech;
    out->iterations = iterations;
    out->salt_len = (uint8_t)salt_len;
    memcpy(out->salt, salt, salt_len);
    uint8_t client_key[SCRAM_KEY_MAX];
    bool ok = hmac(mech, salted, k, "Client Key", 10, client_key) &&
              digest(mech, client_key, k, out->stored_key) &&
              hmac(mech, salted, k, "Server Key", 10, out->server_key);
    OPENSSL_cleanse(client_key, sizeof(client_key));
    return ok ? 0 : RT_E_UNSUPPORTED;
}

/* Hi(password, salt, i) = PBKDF2 with HMAC-H (RFC 5802 §2.2). */
static bool salted_password(int mech, const char *pw, size_t pw_len, const uint8_t *salt,
                            size_t salt_len, uint32_t iterations, uint8_t *out)
{
    return PKCS5_PBKDF2_HMAC(pw, (int)pw_len, salt, (int)salt_len, (int)iterations, mech_md(mech),
                             (int)scram_key_len(mech), out) == 1;
}

int scram_credential_make(int mech, const char *password, size_t password_len, uint32_t iterations,
                          const uint8_t *salt, size_t salt_len, struct scram_credential *out)
{
    uint8_t fresh[SCRAM_SALT_BYTES];
    if (!salt) {
        if (RAND_bytes(fresh, sizeof(fresh)) != 1)
            return RT_E_UNSUPPORTED;
        salt = fresh;
        salt_len = sizeof(fresh);
    }
    if (!scram_params_valid(mech, iterations, salt_len) || !password || password_len > INT32_MAX)
        return RT_E_INVALID_ARGUMENT;
    uint8_t salted[SCRAM_KEY_MAX];
    if (!salted_password(mech, password, password_len, salt, salt_len, iterations, salted))
        return RT_E_UNSUPPORTED;
    int rc = scram_credential_from_salted(mech, salted, scram_key_len(mech), salt, salt_len,
                                          iterations, out);
    OPENSSL_cleanse(salted, sizeof(salted));
    return rc;
}

bool scram_password_matches(const struct scram_credential *c, const char *password,
                            size_t password_len)
{
    struct scram_credential d;
    if (scram_credential_make(c->mech, password, password_len, c->iterations, c->salt, c->salt_len,
                              &d) != 0)
        return false;
    bool same = CRYPTO_memcmp(d.stored_key, c->stored_key, scram_key_len(c->mech)) == 0;
    OPENSSL_cleanse(&d, sizeof(d));
    return same;
}

/* ---- base64 (OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock) ---- */

static size_t b64_encode(const uint8_t *in, size_t len, char *out, size_t cap)
{
    if (4 * ((len + 2) / 3) + 1 > cap)
        return 0;
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* Decodes strict base64 (padded, no whitespace) of at most `max` bytes. false when invalid. */
static bool b64_decode(const char *in, size_t len, uint8_t *out, size_t max, size_t *out_len)
{
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > max + 2)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = in[i];
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' ||
                  (ch == '=' && i >= len - 2 && (i == len - 1 || in[len - 1] == '='));
        if (!ok)
            return false;
    }
    size_t pad = (in[len - 1] == '=') + (in[len - 2] == '=');
    uint8_t tmp[SCRAM_MESSAGE_MAX];
    if (len / 4 * 3 > sizeof(tmp))
        return false;
    int n = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)len);
    if (n < 0 || (size_t)n < pad || (size_t)n - pad > max)
        return false;
    *out_len = (size_t)n - pad;
    memcpy(out, tmp, *out_len);
    return true;
}

/* ---- the parser (SCR3) ---- */

/* The next attribute "x=value" at *p (up to ',' or the end): its letter and value. */
static bool next_attr(const char **p, const char *end, char *letter, const char **val,
                      size_t *val_len)
{
    const char *s = *p;
    if (end - s < 2 || s[1] != '=' ||
        !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return false;
    *letter = s[0];
    const char *v = s + 2;
    const char *comma = memchr(v, ',', (size_t)(end - v));
    const char *stop = comma ? comma : end;
    *val = v;
    *val_len = (size_t)(stop - v);
    *p = comma ? comma + 1 : end;
    return true;
}

/* saslname (RFC 5802 §5.1): "=2C" is ',', "=3D" is '=', any other '=' is invalid. */
static bool decode_saslname(const char *in, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = in[i];
        if (ch == '\0' || ch == ',')
            return false;
        if (ch == '=') {
            if (len - i < 3)
                return false;
            if (in[i + 1] == '2' && in[i + 2] == 'C')
                ch = ',';
            else if (in[i + 1] == '3' && in[i + 2] == 'D')
                ch = '=';
            else
                return false;
            i += 2;
        }
        if (n + 1 >= cap)
            return false;
        out[n++] = ch;
    }
    out[n] = '\0';
    return n > 0;
}

/* A nonce: printable ASCII but ',' (RFC 5802 §7). */
static bool nonce_ok(const char *p, size_t len)
{
    if (len == 0 || len > SCRAM_NONCE_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',')
            return false;
    return true;
}

#define FAIL(msg)                                                                                  \
    do {                                                                                           \
        *why = (msg);                                                                              \
        return RT_E_INVALID_ARGUMENT;                                                              \
    } while (0)

int scram_parse_client_first(const char *msg, size_t len, struct scram_client_first *out,
                             const char **why)
{
    memset(out, 0, sizeof(*out));
    if (!msg || len == 0 || len > SCRAM_MESSAGE_MAX)
        FAIL(len ? "client-first message too long" : "empty client-first message");
    if (memchr(msg, '\0', len))
        FAIL("NUL in client-first message");
    const char *end = msg + len, *p = msg;
    /* gs2-cbind-flag: channel binding is not offered ("p=" would need TLS's) */
    if (end - p < 2 || (p[0] != 'n' && p[0] != 'y') || p[1] != ',')
        FAIL(p[0] == 'p' ? "channel binding is not supported" : "invalid gs2 header");
    p += 2;
    if (p < end && *p == 'a') { /* authzid */
        char l;
        const char *v;
        size_t vl;
        if (!next_attr(&p, end, &l, &v, &vl) ||
            !decode_saslname(v, vl, out->authzid, sizeof(out->authzid)))
            FAIL("invalid authzid");
    } else {
        if (p >= end || *p != ',')
            FAIL("invalid gs2 header");
        p++;
    }
    out->gs2 = msg;
    out->gs2_len = (size_t)(p - msg);
    out->bare = p;
    out->bare_len = (size_t)(end - p);
    char l;
    const char *v;
    size_t vl;
    if (!next_attr(&p, end, &l, &v, &vl) || l != 'n')
        FAIL("client-first message has no user name (n=)");
    if (!decode_saslname(v, vl, out->user, sizeof(out->user)))
        FAIL("invalid user name");
    if (!next_attr(&p, end, &l, &v, &vl) || l != 'r' || !nonce_ok(v, vl))
        FAIL("client-first message has no valid nonce (r=)");
    out->nonce = v;
    out->nonce_len = vl;
    while (p < end) { /* extensions: read and ignored, but a mandatory one (m=) is refused */
        if (!next_attr(&p, end, &l, &v, &vl))
            FAIL("invalid attribute in client-first message");
        if (l == 'm')
            FAIL("unsupported mandatory extension");
    }
    if (out->authzid[0] && strcmp(out->authzid, out->user) != 0)
        FAIL("Authentication failed: Client requested an authorization id that is different "
             "from username");
    return 0;
}

int scram_parse_client_final(const char *msg, size_t len, struct scram_client_final *out,
                             const char **why)
{
    memset(out, 0, sizeof(*out));
    if (!msg || len == 0 || len > SCRAM_MESSAGE_MAX)
        FAIL(len ? "client-final message too long" : "empty client-final message");
    if (memchr(msg, '\0', len))
        FAIL("NUL in client-final message");
    const char *end = msg + len, *p = msg;
    char l;
    const char *v;
    size_t vl;
    if (!next_attr(&p, end, &l, &v, &vl) || l != 'c')
        FAIL("client-final message has no channel binding (c=)");
    out->channel_binding = v;
    out->channel_binding_len = vl;
    if (!next_attr(&p, end, &l, &v, &vl) || l != 'r' || !nonce_ok(v, vl))
        FAIL("client-final message has no valid nonce (r=)");
    out->nonce = v;
    out->nonce_len = vl;
    for (;;) {
        const char *at = p;
        if (p >= end || !next_attr(&p, end, &l, &v, &vl))
            FAIL("client-final message has no proof (p=)");
        if (l == 'p') {
            if (p != end)
                FAIL("attributes after the proof");
            out->without_proof_len = (size_t)(at - msg) - 1; /* before ",p=" */
            if (!b64_decode(v, vl, out->proof, sizeof(out->proof), &out->proof_len))
                FAIL("invalid proof encoding");
            return 0;
        }
    }
}

/* ---- the server ---- */

void scram_server_init(struct scram_server *s, int mech)
{
    memset(s, 0, sizeof(*s));
    s->mech = (uint8_t)mech;
    s->state = SCRAM_WANT_CLIENT_FIRST;
}

int scram_server_client_first(struct scram_server *s, const char *msg, size_t len, const char **why)
{
    struct scram_client_first f;
    if (s->state != SCRAM_WANT_CLIENT_FIRST) {
        s->state = SCRAM_FAILED;
        FAIL("unexpected client-first message");
    }
    int rc = scram_parse_client_first(msg, len, &f, why);
    if (rc) {
        s->state = SCRAM_FAILED;
        return rc;
    }
    snprintf(s->user, sizeof(s->user), "%s", f.user);
    memcpy(s->gs2, f.gs2, f.gs2_len);
    s->gs2_len = f.gs2_len;
    memcpy(s->client_first_bare, f.bare, f.bare_len);
    s->client_first_bare_len = f.bare_len;
    memcpy(s->nonce, f.nonce, f.nonce_len);
    s->nonce_len = f.nonce_len;
    return 0;
}

int scram_server_first(struct scram_server *s, const struct scram_credential *cred,
                       const char *server_nonce, char *out, size_t cap, size_t *out_len)
{
    if (s->state != SCRAM_WANT_CLIENT_FIRST || !s->client_first_bare_len || cred->mech != s->mech ||
        !scram_params_valid(cred->mech, cred->iterations, cred->salt_len)) {
        s->state = SCRAM_FAILED;
        return RT_E_INVALID_ARGUMENT;
    }
    char fresh[64];
    if (!server_nonce) {
        uint8_t r[24];
        if (RAND_bytes(r, sizeof(r)) != 1 || !b64_encode(r, sizeof(r), fresh, sizeof(fresh))) {
            s->state = SCRAM_FAILED;
            return RT_E_UNSUPPORTED;
        }
        server_nonce = fresh;
    }
    size_t sn = strlen(server_nonce);
    if (!nonce_ok(server_nonce, sn) || s->nonce_len + sn >= sizeof(s->nonce)) {
        s->state = SCRAM_FAILED;
        return RT_E_INVALID_ARGUMENT;
    }
    memcpy(s->nonce + s->nonce_len, server_nonce, sn);
    s->nonce_len += sn;
    s->nonce[s->nonce_len] = '\0';
    s->cred = *cred;
    char salt64[4 * ((SCRAM_SALT_MAX + 2) / 3) + 1];
    b64_encode(cred->salt, cred->salt_len, salt64, sizeof(salt64));
    int n = snprintf(s->server_first, sizeof(s->server_first), "r=%s,s=%s,i=%u", s->nonce, salt64,
                     cred->iterations);
    if (n < 0 || (size_t)n >= sizeof(s->server_first) || (size_t)n > cap) {
        s->state = SCRAM_FAILED;
        return RT_E_INVALID_ARGUMENT;
    }
    s->server_first_len = (size_t)n;
    memcpy(out, s->server_first, (size_t)n);
    *out_len = (size_t)n;
    s->state = SCRAM_WANT_CLIENT_FINAL;
    return 0;
}

int scram_server_client_final(struct scram_server *s, const char *msg, size_t len, char *out,
                              size_t cap, size_t *out_len, const char **why)
{
    if (s->state != SCRAM_WANT_CLIENT_FINAL) {
        s->state = SCRAM_FAILED;
        FAIL("unexpected client-final message");
    }
    s->state = SCRAM_FAILED; /* until it passes */
    struct scram_client_final f;
    int rc = scram_parse_client_final(msg, len, &f, why);
    if (rc)
        return rc;
    char cb[4 * ((SCRAM_MESSAGE_MAX + 2) / 3) + 1];
    size_t cbl = b64_encode((const uint8_t *)s->gs2, s->gs2_len, cb, sizeof(cb));
    if (f.channel_binding_len != cbl || memcmp(f.channel_binding, cb, cbl) != 0)
        FAIL("Invalid channel binding");
    /* SCR4: Kafka's rule (ScramSaslServer: the final nonce must end with the server-first's),
     * not RFC 5802's equality: librdkafka sends its own nonce again before the server's r=
     * value, and Kafka accepts it. The proof still covers the message as sent. */
    if (f.nonce_len < s->nonce_len ||
        memcmp(f.nonce + f.nonce_len - s->nonce_len, s->nonce, s->nonce_len) != 0)
        FAIL("Invalid client nonce in the final client message");
    size_t k = scram_key_len(s->mech);
    if (f.proof_len != k)
        FAIL("Authentication failed: Invalid client final message");
    /* AuthMessage = bare "," server-first "," client-final-without-proof */
    char auth[3 * SCRAM_MESSAGE_MAX + 2];
    size_t al = 0;
    memcpy(auth + al, s->client_first_bare, s->client_first_bare_len);
    al += s->client_first_bare_len;
    auth[al++] = ',';
    memcpy(auth + al, s->server_first, s->server_first_len);
    al += s->server_first_len;
    auth[al++] = ',';
    memcpy(auth + al, msg, f.without_proof_len);
    al += f.without_proof_len;
    uint8_t sig[SCRAM_KEY_MAX], client_key[SCRAM_KEY_MAX], h[SCRAM_KEY_MAX];
    if (!hmac(s->mech, s->cred.stored_key, k, auth, al, sig))
        FAIL("HMAC failed");
    for (size_t i = 0; i < k; i++)
        client_key[i] = f.proof[i] ^ sig[i];
    bool ok = digest(s->mech, client_key, k, h) &&
              CRYPTO_memcmp(h, s->cred.stored_key, k) == 0; /* SCR1 */
    OPENSSL_cleanse(client_key, sizeof(client_key));
    if (!ok)
        FAIL("Authentication failed during authentication due to invalid credentials with SASL "
             "mechanism");
    if (!hmac(s->mech, s->cred.server_key, k, auth, al, sig))
        FAIL("HMAC failed");
    char v[2 + 4 * ((SCRAM_KEY_MAX + 2) / 3) + 1] = "v=";
    size_t vl = 2 + b64_encode(sig, k, v + 2, sizeof(v) - 2);
    if (vl > cap)
        FAIL("server-final message does not fit");
    memcpy(out, v, vl);
    *out_len = vl;
    s->state = SCRAM_DONE;
    return 0;
}
