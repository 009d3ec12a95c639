/*
 * kmsg_sasl.c — the SASL and SCRAM-credential messages as data (kdesc.h): SaslHandshake (17,
 * v0-1, never flexible), SaslAuthenticate (36, v0-2, flexible from v2),
 * DescribeUserScramCredentials (50, v0, flexible) and AlterUserScramCredentials (51, v0,
 * flexible). It owns their descriptions (Kafka 3.x's message JSON) and must never decide an
 * answer (handlers/handle_sasl.c does).
 *
 *   SaslHandshake request: mechanism STRING
 *   SaslHandshake response: error_code i16, mechanisms [STRING]
 *   SaslAuthenticate request: auth_bytes BYTES
 *   SaslAuthenticate response: error_code i16, error_message NSTRING, auth_bytes BYTES,
 *     session_lifetime_ms i64 (v1+)
 *   DescribeUserScramCredentials request: users NULLABLE [name STRING]
 *   DescribeUserScramCredentials response: throttle_time_ms i32, error_code i16,
 *     error_message NSTRING, results [user STRING, error_code i16, error_message NSTRING,
 *     credential_infos [mechanism i8, iterations i32]]
 *   AlterUserScramCredentials request: deletions [name STRING, mechanism i8],
 *     upsertions [name STRING, mechanism i8, iterations i32, salt BYTES,
 *     salted_password BYTES]
 *   AlterUserScramCredentials response: throttle_time_ms i32, results [user STRING,
 *     error_code i16, error_message NSTRING]
 */
#include "tools/kafka/proto/kdesc.h"
#include "tools/kafka/proto/kmsg.h"
#include "tools/kafka/proto/kmsg_int.h"

/* ---- SaslHandshake ---- */

#define S struct kmsg_sasl_handshake_request
static const struct kd_field sasl_handshake_request_f[] = {
    KF(S, mechanism, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct sasl_handshake_request_d =
    KD_STRUCT(struct kmsg_sasl_handshake_request, sasl_handshake_request_f);

#define S struct kmsg_sasl_handshake_response
static const struct kd_field sasl_handshake_response_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KP(S, mechanisms, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct sasl_handshake_response_d =
    KD_STRUCT(struct kmsg_sasl_handshake_response, sasl_handshake_response_f);

KD_MESSAGE(kd_sasl_handshake_request, "SaslHandshakeRequest", KAFKA_SASL_HANDSHAKE, 0, 1, KD_NEVER,
           &sasl_handshake_request_d, NULL);
KD_MESSAGE(kd_sasl_handshake_response, "SaslHandshakeResponse", KAFKA_SASL_HANDSHAKE, 0, 1,
           KD_NEVER, &sasl_handshake_response_d, NULL);

/* ---- SaslAuthenticate ---- */

#define S struct kmsg_sasl_authenticate_request
static const struct kd_field sasl_authenticate_request_f[] = {
    KF(S, auth_bytes, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct sasl_authenticate_request_d =
    KD_STRUCT(struct kmsg_sasl_authenticate_request, sasl_authenticate_request_f);

#define S struct kmsg_sasl_authenticate_response
static const struct kd_field sasl_authenticate_response_f[] = {
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KF(S, auth_bytes, KD_BYTES, 0, KD_NEVER),
    KF(S, session_lifetime_ms, KD_I64, 1, KD_NEVER),
};
#undef S
static const struct kd_struct sasl_authenticate_response_d =
    KD_STRUCT(struct kmsg_sasl_authenticate_response, sasl_authenticate_response_f);

KD_MESSAGE(kd_sasl_authenticate_request, "SaslAuthenticateRequest", KAFKA_SASL_AUTHENTICATE, 0, 2,
           2, &sasl_authenticate_request_d, NULL);
KD_MESSAGE(kd_sasl_authenticate_response, "SaslAuthenticateResponse", KAFKA_SASL_AUTHENTICATE, 0, 2,
           2, &sasl_authenticate_response_d, NULL);

/* ---- DescribeUserScramCredentials ---- */

#define S struct kmsg_scram_user_name
static const struct kd_field scram_user_name_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
};
#undef S
static const struct kd_struct scram_user_name_d =
    KD_STRUCT(struct kmsg_scram_user_name, scram_user_name_f);

#define S struct kmsg_describe_user_scram_credentials_request
static const struct kd_field describe_user_scram_credentials_request_f[] = {
    KAN(S, users, 0, KD_NEVER, 0, scram_user_name_d),
};
#undef S
static const struct kd_struct describe_user_scram_credentials_request_d = KD_STRUCT(
    struct kmsg_describe_user_scram_credentials_request, describe_user_scram_credentials_request_f);

#define S struct kmsg_scram_credential_info
static const struct kd_field scram_credential_info_f[] = {
    KF(S, mechanism, KD_I8, 0, KD_NEVER),
    KF(S, iterations, KD_I32, 0, KD_NEVER),
};
#undef S
static const struct kd_struct scram_credential_info_d =
    KD_STRUCT(struct kmsg_scram_credential_info, scram_credential_info_f);

#define S struct kmsg_describe_user_scram_result
static const struct kd_field describe_user_scram_result_f[] = {
    KF(S, user, KD_STR, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KA(S, credential_infos, 0, KD_NEVER, scram_credential_info_d),
};
#undef S
static const struct kd_struct describe_user_scram_result_d =
    KD_STRUCT(struct kmsg_describe_user_scram_result, describe_user_scram_result_f);

#define S struct kmsg_describe_user_scram_credentials_response
static const struct kd_field describe_user_scram_credentials_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
    KA(S, results, 0, KD_NEVER, describe_user_scram_result_d),
};
#undef S
static const struct kd_struct describe_user_scram_credentials_response_d =
    KD_STRUCT(struct kmsg_describe_user_scram_credentials_response,
              describe_user_scram_credentials_response_f);

KD_MESSAGE(kd_describe_user_scram_credentials_request, "DescribeUserScramCredentialsRequest",
           KAFKA_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, 0,
           &describe_user_scram_credentials_request_d, NULL);
KD_MESSAGE(kd_describe_user_scram_credentials_response, "DescribeUserScramCredentialsResponse",
           KAFKA_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, 0,
           &describe_user_scram_credentials_response_d, NULL);

/* ---- AlterUserScramCredentials ---- */

#define S struct kmsg_scram_deletion
static const struct kd_field scram_deletion_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, mechanism, KD_I8, 0, KD_NEVER),
};
#undef S
static const struct kd_struct scram_deletion_d =
    KD_STRUCT(struct kmsg_scram_deletion, scram_deletion_f);

#define S struct kmsg_scram_upsertion
static const struct kd_field scram_upsertion_f[] = {
    KF(S, name, KD_STR, 0, KD_NEVER),
    KF(S, mechanism, KD_I8, 0, KD_NEVER),
    KF(S, iterations, KD_I32, 0, KD_NEVER),
    KF(S, salt, KD_BYTES, 0, KD_NEVER),
    KF(S, salted_password, KD_BYTES, 0, KD_NEVER),
};
#undef S
static const struct kd_struct scram_upsertion_d =
    KD_STRUCT(struct kmsg_scram_upsertion, scram_upsertion_f);

#define S struct kmsg_alter_user_scram_credentials_request
static const struct kd_field alter_user_scram_credentials_request_f[] = {
    KA(S, deletions, 0, KD_NEVER, scram_deletion_d),
    KA(S, upsertions, 0, KD_NEVER, scram_upsertion_d),
};
#undef S
static const struct kd_struct alter_user_scram_credentials_request_d = KD_STRUCT(
    struct kmsg_alter_user_scram_credentials_request, alter_user_scram_credentials_request_f);

#define S struct kmsg_alter_user_scram_result
static const struct kd_field alter_user_scram_result_f[] = {
    KF(S, user, KD_STR, 0, KD_NEVER),
    KF(S, error_code, KD_I16, 0, KD_NEVER),
    KFNZ(S, error_message, KD_STR, 0, KD_NEVER, 0),
};
#undef S
static const struct kd_struct alter_user_scram_result_d =
    KD_STRUCT(struct kmsg_alter_user_scram_result, alter_user_scram_result_f);

#define S struct kmsg_alter_user_scram_credentials_response
static const struct kd_field alter_user_scram_credentials_response_f[] = {
    KF(S, throttle_time_ms, KD_I32, 0, KD_NEVER),
    KA(S, results, 0, KD_NEVER, alter_user_scram_result_d),
};
#undef S
static const struct kd_struct alter_user_scram_credentials_response_d = KD_STRUCT(
    struct kmsg_alter_user_scram_credentials_response, alter_user_scram_credentials_response_f);

KD_MESSAGE(kd_alter_user_scram_credentials_request, "AlterUserScramCredentialsRequest",
           KAFKA_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, 0, &alter_user_scram_credentials_request_d,
           NULL);
KD_MESSAGE(kd_alter_user_scram_credentials_response, "AlterUserScramCredentialsResponse",
           KAFKA_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, 0, &alter_user_scram_credentials_response_d,
           NULL);

KMSG_CODEC(sasl_handshake, sasl_handshake_request, sasl_handshake_response)
KMSG_CODEC(sasl_authenticate, sasl_authenticate_request, sasl_authenticate_response)
KMSG_CODEC(describe_user_scram_credentials, describe_user_scram_credentials_request,
           describe_user_scram_credentials_response)
KMSG_CODEC(alter_user_scram_credentials, alter_user_scram_credentials_request,
           alter_user_scram_credentials_response)
