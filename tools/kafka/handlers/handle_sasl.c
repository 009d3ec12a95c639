/*
 * handle_sasl.c — SASL authentication (SaslHandshake 17, SaslAuthenticate 36) with PLAIN,
 * SCRAM-SHA-256 and SCRAM-SHA-512, and the SCRAM credential APIs (DescribeUserScramCredentials
 * 50, AlterUserScramCredentials 51). It owns each connection's SASL state (kafka_session.sasl)
 * and sets the session's principal ("User:NAME") and `authenticated`; server.c asks it whether a
 * request may be answered (the gate, KSA1). The mechanisms are sasl/scram.c and sasl/plain.c;
 * the credentials sasl/cred_store.c. It never blocks a loop thread on anything but one stat of
 * the credentials file (cred_store.h CS3) and one PBKDF2 for PLAIN; it never logs a password.
 *
 * A connection's SASL states (Kafka's SaslServerAuthenticator):
 *
 *     NONE --SaslHandshake(enabled mech)--> HANDSHAKEN --SaslAuthenticate--> (PLAIN) done
 *                                                      --client-first--> SCRAM_FINAL
 *     SCRAM_FINAL --client-final--> done
 *     any failure on a SASL listener --> FAILED (every later request but ApiVersions closes)
 *     done = authenticated (principal User:NAME); a new SaslHandshake starts KIP-368's
 *     re-authentication from HANDSHAKEN
 *
 * Invariants:
 *   KSA1 On a SASL listener, until the session is authenticated — and once its KIP-368
 *        lifetime (--connections-max-reauth-ms) has passed — only ApiVersions, SaslHandshake
 *        and SaslAuthenticate are answered; any other request closes the connection (Kafka's
 *        behaviour), with a log line. After a failure nothing but ApiVersions is answered.
 *   KSA2 SaslHandshake v0 is followed by raw SASL tokens: size-prefixed frames without a Kafka
 *        header, answered the same way, until the mechanism completes. server.c asks
 *        kafka_sasl_raw_pending before it decodes a header. A v0 failure closes the
 *        connection (there is no error field to carry it), after the delay of KSA3.
 *   KSA3 A failed authentication is answered SASL_AUTHENTICATION_FAILED (58) only after
 *        auth_failed_delay_ms (Kafka's connection.failed.authentication.delay.ms): the request
 *        parks (NET_PARK with that deadline; the loop never sleeps) and is counted.
 *   KSA4 A re-authentication must name the principal the session already has; another one
 *        fails it (and the session is no longer authenticated).
 *   KSA5 A SASL token is bounded (SASL_TOKEN_MAX): a larger one fails the authentication.
 *   KSA6 DescribeUserScramCredentials needs DESCRIBE on the cluster (else the whole answer is
 *        CLUSTER_AUTHORIZATION_FAILED) and AlterUserScramCredentials ALTER on it (else every
 *        user's result is), as Kafka's; without --authorizer both are open, as Kafka's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/sasl/cred_store.h"
#include "tools/kafka/sasl/plain.h"
#include "tools/kafka/sasl/scram.h"

#define SASL_TOKEN_MAX 4096

enum sasl_stage {
    SASL_NONE = 0,
    SASL_HANDSHAKEN = 1,
    SASL_SCRAM_FINAL = 2,
    SASL_FAILED = 3,
};

struct kafka_sasl {
    uint8_t stage; /* enum sasl_stage */
    uint32_t mech; /* the handshake's (enum kafka_sasl_mech bit) */
    bool raw;      /* KSA2 */
    struct scram_server scram;
};

static const struct {
    uint32_t bit;
    const char *name;
    int scram;
} mechs[] = {
    {KAFKA_SASL_PLAIN, "PLAIN", 0},
    {KAFKA_SASL_SCRAM_SHA_256, "SCRAM-SHA-256", SCRAM_SHA_256},
    {KAFKA_SASL_SCRAM_SHA_512, "SCRAM-SHA-512", SCRAM_SHA_512},
};
#define MECHS_COUNT (sizeof(mechs) / sizeof(mechs[0]))

static bool is_sasl_listener(const struct kafka_slot *s)
{
    const struct net_session *ns = s->req->session;
    return ns && (ns->security == NET_SEC_SASL_PLAINTEXT || ns->security == NET_SEC_SASL_SSL);
}

static struct kafka_sasl *sasl_of(struct kafka_session *ks)
{
    if (!ks->sasl)
        ks->sasl = calloc(1, sizeof(struct kafka_sasl));
    return ks->sasl;
}

void kafka_sasl_free(struct kafka_session *ks)
{
    if (ks && ks->sasl) {
        memset(ks->sasl, 0, sizeof(struct kafka_sasl)); /* the exchange's keys */
        free(ks->sasl);
        ks->sasl = NULL;
    }
}

bool kafka_sasl_raw_pending(const struct kafka_session *ks)
{
    const struct kafka_sasl *st = ks ? ks->sasl : NULL;
    return st && st->raw && (st->stage == SASL_HANDSHAKEN || st->stage == SASL_SCRAM_FINAL);
}

bool kafka_sasl_allows(const struct kafka_session *ks, int16_t api_key, int64_t now_ms,
                       const char **why)
{
    const struct kafka_sasl *st = ks->sasl;
    if (api_key == KAFKA_API_VERSIONS)
        return true;
    if (st && st->stage == SASL_FAILED) {
        *why = "request after a failed SASL authentication";
        return false;
    }
    if (api_key == KAFKA_SASL_HANDSHAKE || api_key == KAFKA_SASL_AUTHENTICATE)
        return true;
    if (!ks->authenticated) {
        *why = "request before SASL authentication completed";
        return false;
    }
    if (ks->auth_expiry_ms && now_ms >= ks->auth_expiry_ms) { /* KIP-368 */
        *why = "SASL session expired (connections.max.reauth.ms) without re-authentication";
        return false;
    }
    return true; /* also during a re-authentication, while the session has not expired */
}

/* ---- SaslHandshake ---- */

enum net_verdict kafka_handle_sasl_handshake(struct kafka_slot *s)
{
    const struct kmsg_sasl_handshake_request *q = &s->msg.sasl_handshake;
    struct kafka_session *ks = kafka_session_of(s->req);
    uint32_t enabled = s->server->opts.sasl_mechanisms;
    struct kp_str names[MECHS_COUNT];
    int32_t n = 0;
    for (size_t i = 0; i < MECHS_COUNT; i++)
        if (enabled & mechs[i].bit)
            names[n++] = (struct kp_str){mechs[i].name, (int32_t)strlen(mechs[i].name)};
    struct kmsg_sasl_handshake_response m = {.mechanisms = names, .mechanisms_count = n};
    struct kafka_sasl *st = sasl_of(ks);
    if (!st)
        return NET_CLOSE;
    if (!is_sasl_listener(s) || !enabled) {
        m.error_code = KAFKA_ILLEGAL_SASL_STATE; /* Kafka: SASL on a non-SASL listener */
        m.mechanisms_count = 0;
        if (is_sasl_listener(s))
            st->stage = SASL_FAILED;
    } else if (st->stage == SASL_HANDSHAKEN || st->stage == SASL_SCRAM_FINAL) {
        m.error_code = KAFKA_ILLEGAL_SASL_STATE; /* a second handshake mid-exchange */
        st->stage = SASL_FAILED;
    } else {
        m.error_code = KAFKA_UNSUPPORTED_SASL_MECHANISM;
        for (size_t i = 0; i < MECHS_COUNT; i++)
            if ((enabled & mechs[i].bit) && q->mechanism.len == (int32_t)strlen(mechs[i].name) &&
                memcmp(q->mechanism.ptr, mechs[i].name, (size_t)q->mechanism.len) == 0) {
                m.error_code = KAFKA_NONE;
                st->stage = SASL_HANDSHAKEN;
                st->mech = mechs[i].bit;
                st->raw = s->header.api_version == 0; /* KSA2 */
                if (mechs[i].scram)
                    scram_server_init(&st->scram, mechs[i].scram);
            }
        if (m.error_code != KAFKA_NONE) {
            kafka_log("connection %" PRIu64 " from %s: SASL mechanism '%.*s' is not enabled "
                      "(--sasl-mechanisms)",
                      s->req->conn_id, s->req->session->peer_host,
                      q->mechanism.len > 0 ? (int)(q->mechanism.len > 64 ? 64 : q->mechanism.len)
                                           : 0,
                      q->mechanism.len > 0 ? q->mechanism.ptr : "");
            st->stage = SASL_FAILED;
        }
    }
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_sasl_handshake_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- one step of the exchange, shared by SaslAuthenticate and v0's raw tokens ---- */

struct step {
    int16_t error_code;
    const char *error_message; /* to the client */
    const char *detail;        /* to the broker's log (the parser's word), NULL: the message */
    uint8_t out[SCRAM_MESSAGE_MAX];
    size_t out_len;
    bool done; /* authenticated now */
};

static int mech_scram(uint32_t bit)
{
    for (size_t i = 0; i < MECHS_COUNT; i++)
        if (mechs[i].bit == bit)
            return mechs[i].scram;
    return 0;
}

static const char *mech_name(uint32_t bit)
{
    for (size_t i = 0; i < MECHS_COUNT; i++)
        if (mechs[i].bit == bit)
            return mechs[i].name;
    return "?";
}

/* A credentials file found damaged is logged once (cred_store.h CS4). */
static void log_store_damage(struct cred_store *cs)
{
    char err[CRED_ERROR_MAX];
    if (cs && cred_store_take_error(cs, err, sizeof(err)))
        kafka_log("SCRAM credentials not served: %s", err);
}

static int lookup(struct kafka_slot *s, const char *user, int mech, struct scram_credential *c)
{
    struct cred_store *cs = s->server->opts.credentials;
    if (!cs)
        return -ENOENT;
    int rc = cred_store_lookup(cs, user, mech, c);
    if (rc == RT_E_CORRUPT)
        log_store_damage(cs);
    return rc;
}

static void fail(struct step *o, struct kafka_sasl *st, const char *why)
{
    o->error_code = KAFKA_SASL_AUTHENTICATION_FAILED;
    o->error_message = why;
    o->out_len = 0;
    st->stage = SASL_FAILED;
}

/* Runs one token through the connection's mechanism. The user name authenticated lands in
 * *user (NUL-terminated) when o->done. */
static void sasl_step(struct kafka_slot *s, struct kafka_sasl *st, const uint8_t *tok, size_t len,
                      struct step *o, char *user, size_t user_cap)
{
    memset(o, 0, sizeof(*o));
    const char *why = NULL;
    if (st->stage != SASL_HANDSHAKEN && st->stage != SASL_SCRAM_FINAL) {
        o->error_code = KAFKA_ILLEGAL_SASL_STATE;
        o->error_message = "SaslAuthenticate without a SaslHandshake";
        st->stage = SASL_FAILED;
        return;
    }
    if (len > SASL_TOKEN_MAX) { /* KSA5 */
        fail(o, st, "Authentication failed: SASL token too large");
        return;
    }
    if (st->mech == KAFKA_SASL_PLAIN) {
        struct sasl_plain p;
        if (sasl_plain_parse(tok, len, &p, &why) != 0) {
            fail(o, st, why);
            return;
        }
        snprintf(user, user_cap, "%.*s", (int)p.user_len, p.user);
        struct scram_credential c;
        bool ok = false;
        if (memchr(p.user, 0, p.user_len) == NULL && p.user_len <= SCRAM_USER_MAX) {
            /* PLAIN checks against the SCRAM store: the strongest mechanism's credential */
            int rc = lookup(s, user, SCRAM_SHA_512, &c);
            if (rc == -ENOENT)
                rc = lookup(s, user, SCRAM_SHA_256, &c);
            ok = rc == 0 && scram_password_matches(&c, p.password, p.password_len);
        }
        if (!ok) {
            fail(o, st, "Authentication failed: Invalid username or password");
            return;
        }
        o->done = true;
        st->stage = SASL_NONE;
        return;
    }
    int mech = mech_scram(st->mech);
    if (st->stage == SASL_HANDSHAKEN) {
        if (scram_server_client_first(&st->scram, (const char *)tok, len, &why) != 0) {
            fail(o, st, why);
            return;
        }
        struct scram_credential c;
        if (lookup(s, st->scram.user, mech, &c) != 0) {
            fail(o, st, "Authentication failed: Invalid user credentials");
            o->detail = "unknown user, or no credential of this mechanism";
            return;
        }
        if (scram_server_first(&st->scram, &c, NULL, (char *)o->out, sizeof(o->out), &o->out_len) !=
            0) {
            fail(o, st, "Authentication failed: Invalid user credentials");
            return;
        }
        st->stage = SASL_SCRAM_FINAL;
        return;
    }
    if (scram_server_client_final(&st->scram, (const char *)tok, len, (char *)o->out,
                                  sizeof(o->out), &o->out_len, &why) != 0) {
        fail(o, st,
             "Authentication failed during authentication due to invalid credentials "
             "with SASL mechanism SCRAM");
        o->detail = why;
        return;
    }
    snprintf(user, user_cap, "%s", st->scram.user);
    memset(&st->scram, 0, sizeof(st->scram)); /* the exchange's keys */
    o->done = true;
    st->stage = SASL_NONE;
}

/* Success: the principal set, or (KSA4) a re-authentication under another name failed. */
static void sasl_done(struct kafka_slot *s, struct kafka_session *ks, struct kafka_sasl *st,
                      const char *user, struct step *o)
{
    char principal[KAFKA_PRINCIPAL_MAX];
    snprintf(principal, sizeof(principal), "User:%s", user);
    bool reauth = ks->authenticated;
    if (reauth && strcmp(principal, ks->principal) != 0) { /* KSA4 */
        ks->authenticated = false;
        fail(o, st, "Cannot change principals during re-authentication");
        kafka_log("connection %" PRIu64 " from %s: re-authentication as %s refused: the session "
                  "is %s",
                  s->req->conn_id, s->req->session->peer_host, principal, ks->principal);
        return;
    }
    snprintf(ks->principal, sizeof(ks->principal), "%s", principal);
    ks->authenticated = true;
    int64_t reauth_ms = s->server->opts.reauth_max_ms;
    ks->auth_expiry_ms = reauth_ms > 0 ? net_now_ms() + reauth_ms : 0;
    st->raw = false;
    atomic_fetch_add_explicit(reauth ? &s->server->stats.sasl_reauthentications
                                     : &s->server->stats.sasl_authentications,
                              1, memory_order_relaxed);
}

/* KSA3: a failure's answer waits auth_failed_delay_ms. */
static enum net_verdict delay_failure(struct kafka_slot *s, const char *mech, const struct step *o,
                                      bool close)
{
    atomic_fetch_add_explicit(&s->server->stats.sasl_authentication_failures, 1,
                              memory_order_relaxed);
    const char *why = o->detail ? o->detail : o->error_message;
    kafka_log("connection %" PRIu64 " from %s: SASL %s authentication failed: %s%s",
              s->req->conn_id, s->req->session->peer_host, mech, why ? why : "",
              close ? "; closing" : "");
    int64_t delay = s->server->opts.auth_failed_delay_ms;
    if (delay <= 0)
        return close ? NET_CLOSE : NET_DONE;
    s->sasl_delayed = true;
    s->sasl_delayed_close = close;
    s->req->deadline_ms = net_now_ms() + delay;
    return NET_PARK;
}

enum net_verdict kafka_sasl_retry(struct kafka_slot *s, bool expired)
{
    if (!expired)
        return NET_PARK;
    bool close = s->sasl_delayed_close;
    s->sasl_delayed = false;
    s->sasl_delayed_close = false;
    if (close)
        s->req->close_reason = "SASL authentication failed";
    return close ? NET_CLOSE : NET_DONE;
}

/* ---- SaslAuthenticate ---- */

enum net_verdict kafka_handle_sasl_authenticate(struct kafka_slot *s)
{
    const struct kmsg_sasl_authenticate_request *q = &s->msg.sasl_authenticate;
    struct kafka_session *ks = kafka_session_of(s->req);
    struct kafka_sasl *st = sasl_of(ks);
    if (!st)
        return NET_CLOSE;
    struct step o;
    char user[SCRAM_USER_MAX + 1] = "";
    if (!is_sasl_listener(s) || st->raw) {
        memset(&o, 0, sizeof(o));
        o.error_code = KAFKA_ILLEGAL_SASL_STATE;
        o.error_message = st->raw ? "SaslAuthenticate after SaslHandshake v0"
                                  : "SASL is not enabled on this listener";
        if (is_sasl_listener(s))
            st->stage = SASL_FAILED;
    } else {
        sasl_step(s, st, q->auth_bytes.ptr, q->auth_bytes.len > 0 ? (size_t)q->auth_bytes.len : 0,
                  &o, user, sizeof(user));
        if (o.done)
            sasl_done(s, ks, st, user, &o);
    }
    struct kmsg_sasl_authenticate_response m = {
        .error_code = o.error_code,
        .auth_bytes = {o.out, (int32_t)o.out_len},
    };
    if (o.error_message)
        m.error_message = (struct kp_str){o.error_message, (int32_t)strlen(o.error_message)};
    if (o.done && o.error_code == KAFKA_NONE && ks->auth_expiry_ms)
        m.session_lifetime_ms = s->server->opts.reauth_max_ms;
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_sasl_authenticate_response_encode(&s->w, s->header.api_version, &m);
    enum net_verdict v = kafka_response_end(s);
    if (v == NET_DONE && o.error_code != KAFKA_NONE)
        return delay_failure(s, mech_name(st->mech), &o, false);
    return v;
}

/* KSA2: a raw token after SaslHandshake v0, answered as a size-prefixed raw token. */
enum net_verdict kafka_sasl_raw_token(struct kafka_slot *s)
{
    struct kafka_session *ks = kafka_session_of(s->req);
    struct kafka_sasl *st = ks->sasl;
    struct step o;
    char user[SCRAM_USER_MAX + 1] = "";
    s->started_ns = 0;
    memset(&s->header, 0, sizeof(s->header)); /* no Kafka header: logged as api key 0 */
    sasl_step(s, st, s->req->frame, s->req->frame_len, &o, user, sizeof(user));
    if (o.done)
        sasl_done(s, ks, st, user, &o);
    if (o.error_code != KAFKA_NONE) {
        return delay_failure(s, mech_name(st->mech), &o, true);
    }
    /* Not a Kafka message: the frame is the token alone (Kafka's v0 framing). */
    kp_writer_reset(&s->w, NULL, 0);
    size_t at = kafka_frame_begin(&s->w);
    kp_write_raw(&s->w, o.out, o.out_len);
    if (kafka_frame_end(&s->w, at) != 0)
        return NET_CLOSE;
    s->req->out = s->w.buf;
    s->req->out_len = s->w.len;
    s->req->slices = NULL;
    s->req->slice_count = 0;
    return NET_DONE;
}

/* ---- DescribeUserScramCredentials ---- */

struct describe_fill {
    struct kafka_slot *s;
    struct kmsg_describe_user_scram_result *res;
    struct kmsg_scram_credential_info *infos;
    int32_t res_count, res_cap, info_count, info_cap;
    const struct kmsg_describe_user_scram_credentials_request *q;
};

static int32_t named_index(const struct kmsg_describe_user_scram_credentials_request *q,
                           const char *user)
{
    size_t ul = strlen(user);
    for (int32_t i = 0; i < q->users_count; i++)
        if (q->users[i].name.len == (int32_t)ul && memcmp(q->users[i].name.ptr, user, ul) == 0)
            return i;
    return -1;
}

static int count_cred(void *ctx, const char *user, const struct scram_credential *c)
{
    (void)c;
    struct describe_fill *f = ctx;
    (void)user;
    f->info_cap++;
    f->res_cap++;
    return 0;
}

static int fill_cred(void *ctx, const char *user, const struct scram_credential *c)
{
    struct describe_fill *f = ctx;
    if (f->q->users_count > 0 && named_index(f->q, user) < 0) /* null or empty: all */
        return 0;
    if (f->info_count >= f->info_cap)
        return 0;
    struct kmsg_describe_user_scram_result *r = f->res_count > 0 ? &f->res[f->res_count - 1] : NULL;
    if (!r || r->user.len != (int32_t)strlen(user) || memcmp(r->user.ptr, user, strlen(user))) {
        if (f->res_count >= f->res_cap)
            return 0;
        r = &f->res[f->res_count++];
        r->user = kafka_str_dup(f->s, user);
        r->credential_infos = &f->infos[f->info_count];
    }
    f->infos[f->info_count++] = (struct kmsg_scram_credential_info){
        .mechanism = (int8_t)c->mech, .iterations = (int32_t)c->iterations};
    r->credential_infos_count++;
    return 0;
}

enum net_verdict kafka_handle_describe_user_scram_credentials(struct kafka_slot *s)
{
    const struct kmsg_describe_user_scram_credentials_request *q =
        &s->msg.describe_user_scram_credentials;
    struct cred_store *cs = s->server->opts.credentials;
    struct describe_fill f = {.s = s, .q = q};
    struct kmsg_describe_user_scram_credentials_response m = {0};
    int rc = cs ? cred_store_list(cs, count_cred, &f) : 0;
    int32_t named = q->users_count > 0 ? q->users_count : 0;
    f.res_cap += named;
    size_t need = (size_t)f.res_cap * (sizeof(*f.res) + SCRAM_USER_MAX + 16) +
                  (size_t)f.info_cap * sizeof(*f.infos) + 64;
    if (kafka_resp_reserve(s, need) != 0)
        return NET_CLOSE;
    f.res = f.res_cap ? kafka_alloc(s, (size_t)f.res_cap, sizeof(*f.res)) : NULL;
    f.infos = f.info_cap ? kafka_alloc(s, (size_t)f.info_cap, sizeof(*f.infos)) : NULL;
    /* Kafka's rule: DESCRIBE on the cluster, else the whole answer is refused (KSA6). */
    bool allowed = kafka_authorize_cluster(s, ACL_OP_DESCRIBE);
    if (rc == 0 && cs && allowed)
        rc = cred_store_list(cs, fill_cred, &f);
    if (!allowed) {
        m.error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
        m.error_message = kafka_str_dup(s, "DESCRIBE on the cluster is needed");
        f.res_count = 0;
    } else if (rc) {
        if (rc == RT_E_CORRUPT)
            log_store_damage(cs);
        m.error_code = KAFKA_UNKNOWN_SERVER_ERROR;
        m.error_message = kafka_str_dup(s, "the SCRAM credentials file is damaged");
        f.res_count = 0;
    } else {
        /* the users named that have no credential, or are named twice (Kafka's codes) */
        for (int32_t i = 0; i < named && f.res_count < f.res_cap; i++) {
            struct kp_str n = q->users[i].name;
            bool twice = false, found = false;
            for (int32_t j = 0; j < i; j++)
                twice |= q->users[j].name.len == n.len &&
                         memcmp(q->users[j].name.ptr, n.ptr, (size_t)n.len) == 0;
            for (int32_t j = 0; j < f.res_count && !twice; j++)
                found |= f.res[j].user.len == n.len &&
                         memcmp(f.res[j].user.ptr, n.ptr, (size_t)n.len) == 0;
            if (found)
                continue;
            struct kmsg_describe_user_scram_result *r = &f.res[f.res_count++];
            r->user = n;
            r->error_code = twice ? KAFKA_DUPLICATE_RESOURCE : KAFKA_RESOURCE_NOT_FOUND;
            r->error_message = kafka_str_dup(s, twice ? "Cannot describe SCRAM credentials for "
                                                        "the same user twice in a single request"
                                                      : "Attempt to describe a user credential "
                                                        "that does not exist");
            kafka_count_error(s, r->error_code);
        }
    }
    m.results = f.res;
    m.results_count = f.res_count;
    kafka_count_error(s, m.error_code);
    kafka_response_begin(s);
    kmsg_describe_user_scram_credentials_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}

/* ---- AlterUserScramCredentials (off the loop: durable before the answer, KA7) ---- */

static bool name_of(struct kp_str n, char *out)
{
    if (n.len <= 0 || n.len > SCRAM_USER_MAX || memchr(n.ptr, 0, (size_t)n.len))
        return false;
    memcpy(out, n.ptr, (size_t)n.len);
    out[n.len] = '\0';
    return true;
}

static int16_t alter_one(struct cred_store *cs, const char *user,
                         const struct kmsg_scram_upsertion *u, int8_t del_mech, const char **msg)
{
    int rc;
    if (u) {
        if (!scram_key_len(u->mechanism)) {
            *msg = "Unknown SCRAM mechanism";
            return KAFKA_UNSUPPORTED_SASL_MECHANISM;
        }
        if (u->iterations < SCRAM_ITERATIONS_MIN || u->iterations > SCRAM_ITERATIONS_MAX) {
            *msg =
                u->iterations < SCRAM_ITERATIONS_MIN ? "Too few iterations" : "Too many iterations";
            return KAFKA_UNACCEPTABLE_CREDENTIAL;
        }
        struct scram_credential c;
        rc = scram_credential_from_salted(
            u->mechanism, u->salted_password.ptr,
            u->salted_password.len > 0 ? (size_t)u->salted_password.len : 0, u->salt.ptr,
            u->salt.len > 0 ? (size_t)u->salt.len : 0, (uint32_t)u->iterations, &c);
        if (rc) {
            *msg = "Salt or salted password of the wrong length";
            return KAFKA_UNACCEPTABLE_CREDENTIAL;
        }
        rc = cred_store_upsert(cs, user, &c);
    } else {
        if (!scram_key_len(del_mech)) {
            *msg = "Unknown SCRAM mechanism";
            return KAFKA_UNSUPPORTED_SASL_MECHANISM;
        }
        rc = cred_store_remove(cs, user, del_mech);
        if (rc == -ENOENT) {
            *msg = "Attempt to delete a user credential that does not exist";
            return KAFKA_RESOURCE_NOT_FOUND;
        }
    }
    if (rc) {
        kafka_log("AlterUserScramCredentials for '%s': %s", user, rt_strerror(rc));
        if (rc == RT_E_CORRUPT)
            log_store_damage(cs);
        *msg = "The credentials could not be stored";
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
    return KAFKA_NONE;
}

static bool same_name(struct kp_str a, struct kp_str b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

enum net_verdict kafka_handle_alter_user_scram_credentials(struct kafka_slot *s)
{
    const struct kmsg_alter_user_scram_credentials_request *q =
        &s->msg.alter_user_scram_credentials;
    struct cred_store *cs = s->server->opts.credentials;
    int32_t nd = q->deletions_count > 0 ? q->deletions_count : 0;
    int32_t nu = q->upsertions_count > 0 ? q->upsertions_count : 0;
    if (kafka_resp_reserve(s, (size_t)(nd + nu) * sizeof(struct kmsg_alter_user_scram_result) +
                                  64) != 0)
        return NET_CLOSE;
    struct kmsg_alter_user_scram_result *res =
        nd + nu ? kafka_alloc(s, (size_t)(nd + nu), sizeof(*res)) : NULL;
    bool allowed = kafka_authorize_cluster(s, ACL_OP_ALTER);
    int32_t count = 0;
    for (int32_t i = 0; i < nd + nu && res; i++) {
        bool is_del = i < nd;
        struct kp_str name = is_del ? q->deletions[i].name : q->upsertions[i - nd].name;
        int8_t mech = is_del ? q->deletions[i].mechanism : q->upsertions[i - nd].mechanism;
        bool seen = false;
        for (int32_t j = 0; j < count; j++)
            seen |= same_name(res[j].user, name);
        if (seen)
            continue; /* one result per user (Kafka's) */
        struct kmsg_alter_user_scram_result *r = &res[count++];
        r->user = name;
        const char *msg = NULL;
        /* a user named twice for the same mechanism is refused whole (Kafka's rule) */
        int32_t same = 0;
        for (int32_t j = 0; j < nd + nu; j++) {
            bool jd = j < nd;
            struct kp_str nj = jd ? q->deletions[j].name : q->upsertions[j - nd].name;
            int8_t mj = jd ? q->deletions[j].mechanism : q->upsertions[j - nd].mechanism;
            same += same_name(nj, name) && mj == mech;
        }
        char user[SCRAM_USER_MAX + 1];
        if (!allowed) { /* KSA6: ALTER on the cluster, per user answer as Kafka's */
            r->error_code = KAFKA_CLUSTER_AUTHORIZATION_FAILED;
            msg = "ALTER on the cluster is needed";
        } else if (!name_of(name, user)) {
            r->error_code = KAFKA_UNACCEPTABLE_CREDENTIAL;
            msg = "Username must not be empty";
        } else if (!cs) {
            r->error_code = KAFKA_UNKNOWN_SERVER_ERROR;
            msg = "The broker keeps no SCRAM credentials";
        } else if (same > 1) {
            r->error_code = KAFKA_DUPLICATE_RESOURCE;
            msg = "A user credential cannot be altered twice in the same request";
        } else {
            /* every operation of this user, in order; the first error answers */
            for (int32_t j = 0; j < nd + nu && r->error_code == KAFKA_NONE; j++) {
                bool jd = j < nd;
                struct kp_str nj = jd ? q->deletions[j].name : q->upsertions[j - nd].name;
                if (!same_name(nj, name))
                    continue;
                r->error_code = alter_one(cs, user, jd ? NULL : &q->upsertions[j - nd],
                                          jd ? q->deletions[j].mechanism : 0, &msg);
            }
        }
        if (msg && r->error_code != KAFKA_NONE)
            r->error_message = kafka_str_dup(s, msg);
        kafka_count_error(s, r->error_code);
    }
    struct kmsg_alter_user_scram_credentials_response m = {.results = res, .results_count = count};
    kafka_response_begin(s);
    kmsg_alter_user_scram_credentials_response_encode(&s->w, s->header.api_version, &m);
    return kafka_response_end(s);
}
