/*
 * api.h — the Kafka APIs this broker knows: one table (api_table.c), one row per API: key, name,
 * the versions its descriptions cover, the versions the server advertises, the first flexible
 * version, its request and response descriptions (kdesc.h) and its handler. It is the single
 * source of truth: the ApiVersions answer, the UNSUPPORTED_VERSION check, the request header's
 * v1/v2 choice, the server's dispatch and the README's version table (kafka_api_markdown) all
 * read it. Also Kafka's error codes and the mapping from the engine's
 * RT_E_* codes onto them.
 *
 * An API whose codecs exist but whose handlers do not (issue 13's groups and transactions) is in
 * the table with `advertised` false: the server neither advertises nor accepts it. The lead flips
 * the flag when its handler lands.
 */
#ifndef RT_KAFKA_API_H
#define RT_KAFKA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kafka_api_key {
    KAFKA_PRODUCE = 0,
    KAFKA_FETCH = 1,
    KAFKA_LIST_OFFSETS = 2,
    KAFKA_METADATA = 3,
    KAFKA_OFFSET_COMMIT = 8,
    KAFKA_OFFSET_FETCH = 9,
    KAFKA_FIND_COORDINATOR = 10,
    KAFKA_JOIN_GROUP = 11,
    KAFKA_HEARTBEAT = 12,
    KAFKA_LEAVE_GROUP = 13,
    KAFKA_SYNC_GROUP = 14,
    KAFKA_DESCRIBE_GROUPS = 15,
    KAFKA_LIST_GROUPS = 16,
    KAFKA_SASL_HANDSHAKE = 17,
    KAFKA_API_VERSIONS = 18,
    KAFKA_CREATE_TOPICS = 19,
    KAFKA_DELETE_TOPICS = 20,
    KAFKA_DELETE_RECORDS = 21,
    KAFKA_INIT_PRODUCER_ID = 22,
    KAFKA_OFFSET_FOR_LEADER_EPOCH = 23,
    KAFKA_ADD_PARTITIONS_TO_TXN = 24,
    KAFKA_ADD_OFFSETS_TO_TXN = 25,
    KAFKA_END_TXN = 26,
    KAFKA_WRITE_TXN_MARKERS = 27,
    KAFKA_TXN_OFFSET_COMMIT = 28,
    KAFKA_DESCRIBE_ACLS = 29,
    KAFKA_CREATE_ACLS = 30,
    KAFKA_DELETE_ACLS = 31,
    KAFKA_DESCRIBE_CONFIGS = 32,
    KAFKA_ALTER_CONFIGS = 33,
    KAFKA_SASL_AUTHENTICATE = 36,
    KAFKA_CREATE_PARTITIONS = 37,
    KAFKA_INCREMENTAL_ALTER_CONFIGS = 44,
    KAFKA_ALTER_PARTITION = 56,
    KAFKA_DELETE_GROUPS = 42,
    KAFKA_OFFSET_DELETE = 47,
    KAFKA_DESCRIBE_USER_SCRAM_CREDENTIALS = 50,
    KAFKA_ALTER_USER_SCRAM_CREDENTIALS = 51,
    KAFKA_DESCRIBE_PRODUCERS = 61,
    KAFKA_BROKER_REGISTRATION = 62,
    KAFKA_BROKER_HEARTBEAT = 63,
    KAFKA_DESCRIBE_TRANSACTIONS = 65,
    KAFKA_LIST_TRANSACTIONS = 66,
    KAFKA_ALLOCATE_PRODUCER_IDS = 67,
};

/* Kafka's error codes (org.apache.kafka.common.protocol.Errors), as they go on the wire. */
enum kafka_error {
    KAFKA_UNKNOWN_SERVER_ERROR = -1,
    KAFKA_NONE = 0,
    KAFKA_OFFSET_OUT_OF_RANGE = 1,
    KAFKA_CORRUPT_MESSAGE = 2,
    KAFKA_UNKNOWN_TOPIC_OR_PARTITION = 3,
    KAFKA_INVALID_FETCH_SIZE = 4,
    KAFKA_LEADER_NOT_AVAILABLE = 5,
    KAFKA_NOT_LEADER_OR_FOLLOWER = 6,
    KAFKA_REQUEST_TIMED_OUT = 7,
    KAFKA_BROKER_NOT_AVAILABLE = 8,
    KAFKA_REPLICA_NOT_AVAILABLE = 9,
    KAFKA_MESSAGE_TOO_LARGE = 10,
    KAFKA_STALE_CONTROLLER_EPOCH = 11,
    KAFKA_OFFSET_METADATA_TOO_LARGE = 12,
    KAFKA_NETWORK_EXCEPTION = 13,
    KAFKA_COORDINATOR_LOAD_IN_PROGRESS = 14,
    KAFKA_COORDINATOR_NOT_AVAILABLE = 15,
    KAFKA_NOT_COORDINATOR = 16,
    KAFKA_INVALID_TOPIC_EXCEPTION = 17,
    KAFKA_RECORD_LIST_TOO_LARGE = 18,
    KAFKA_NOT_ENOUGH_REPLICAS = 19,
    KAFKA_NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
    KAFKA_INVALID_REQUIRED_ACKS = 21,
    KAFKA_ILLEGAL_GENERATION = 22,
    KAFKA_INCONSISTENT_GROUP_PROTOCOL = 23,
    KAFKA_INVALID_GROUP_ID = 24,
    KAFKA_UNKNOWN_MEMBER_ID = 25,
    KAFKA_INVALID_SESSION_TIMEOUT = 26,
    KAFKA_REBALANCE_IN_PROGRESS = 27,
    KAFKA_INVALID_COMMIT_OFFSET_SIZE = 28,
    KAFKA_TOPIC_AUTHORIZATION_FAILED = 29,
    KAFKA_GROUP_AUTHORIZATION_FAILED = 30,
    KAFKA_CLUSTER_AUTHORIZATION_FAILED = 31,
    KAFKA_INVALID_TIMESTAMP = 32,
    KAFKA_UNSUPPORTED_SASL_MECHANISM = 33,
    KAFKA_ILLEGAL_SASL_STATE = 34,
    KAFKA_UNSUPPORTED_VERSION = 35,
    KAFKA_TOPIC_ALREADY_EXISTS = 36,
    KAFKA_INVALID_PARTITIONS = 37,
    KAFKA_INVALID_REPLICATION_FACTOR = 38,
    KAFKA_INVALID_REPLICA_ASSIGNMENT = 39,
    KAFKA_INVALID_CONFIG = 40,
    KAFKA_NOT_CONTROLLER = 41,
    KAFKA_INVALID_REQUEST = 42,
    KAFKA_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43,
    KAFKA_POLICY_VIOLATION = 44,
    KAFKA_OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
    KAFKA_DUPLICATE_SEQUENCE_NUMBER = 46,
    KAFKA_INVALID_PRODUCER_EPOCH = 47,
    KAFKA_INVALID_TXN_STATE = 48,
    KAFKA_INVALID_PRODUCER_ID_MAPPING = 49,
    KAFKA_INVALID_TRANSACTION_TIMEOUT = 50,
    KAFKA_CONCURRENT_TRANSACTIONS = 51,
    KAFKA_TRANSACTION_COORDINATOR_FENCED = 52,
    KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
    KAFKA_SECURITY_DISABLED = 54,
    KAFKA_OPERATION_NOT_ATTEMPTED = 55,
    KAFKA_KAFKA_STORAGE_ERROR = 56,
    KAFKA_LOG_DIR_NOT_FOUND = 57,
    KAFKA_SASL_AUTHENTICATION_FAILED = 58,
    KAFKA_UNKNOWN_PRODUCER_ID = 59,
    KAFKA_REASSIGNMENT_IN_PROGRESS = 60,
    KAFKA_NON_EMPTY_GROUP = 68,
    KAFKA_GROUP_ID_NOT_FOUND = 69,
    KAFKA_FETCH_SESSION_ID_NOT_FOUND = 70,
    KAFKA_INVALID_FETCH_SESSION_EPOCH = 71,
    KAFKA_LISTENER_NOT_FOUND = 72,
    KAFKA_TOPIC_DELETION_DISABLED = 73,
    KAFKA_FENCED_LEADER_EPOCH = 74,
    KAFKA_UNKNOWN_LEADER_EPOCH = 75,
    KAFKA_UNSUPPORTED_COMPRESSION_TYPE = 76,
    KAFKA_STALE_BROKER_EPOCH = 77,
    KAFKA_OFFSET_NOT_AVAILABLE = 78,
    KAFKA_MEMBER_ID_REQUIRED = 79,
    KAFKA_PREFERRED_LEADER_NOT_AVAILABLE = 80,
    KAFKA_GROUP_MAX_SIZE_REACHED = 81,
    KAFKA_FENCED_INSTANCE_ID = 82,
    KAFKA_GROUP_SUBSCRIBED_TO_TOPIC = 86,
    KAFKA_INVALID_RECORD = 87,
    KAFKA_UNSTABLE_OFFSET_COMMIT = 88,
    KAFKA_THROTTLING_QUOTA_EXCEEDED = 89,
    KAFKA_PRODUCER_FENCED = 90,
    KAFKA_RESOURCE_NOT_FOUND = 91,
    KAFKA_DUPLICATE_RESOURCE = 92,
    KAFKA_UNACCEPTABLE_CREDENTIAL = 93,
    KAFKA_INVALID_UPDATE_VERSION = 95,
    KAFKA_UNKNOWN_TOPIC_ID = 100,
};

struct kafka_slot; /* handle.h */
struct kd_message; /* kdesc.h */

/* A handler: answers the request of `s` (its body decoded into s->msg unless decodes_itself;
 * body_at is where the body starts in the frame). Returns an enum net_verdict (net.h). */
typedef int (*kafka_api_handler)(struct kafka_slot *s, size_t body_at);

/* One row per API (api_table.c): the versions, the descriptions, the handler. */
struct kafka_api {
    int16_t key;
    const char *name;
    int16_t codec_min, codec_max; /* versions the descriptions cover (KA5) */
    int16_t adv_min, adv_max;     /* versions advertised in ApiVersions (when `advertised`) */
    int16_t first_flexible;       /* first version with flexible encoding; -1 = none (KA2) */
    bool advertised;
    const struct kd_message *request, *response; /* kmsg_*.c */
    kafka_api_handler handler;                   /* NULL only for an unadvertised API (KA3) */
    bool decodes_itself; /* the handler reads its body (handle_txn.c, handle_offsets.c) */
    const char *note;    /* the README's words on this API's versions, or NULL */
    /* Its handler may wait for the disk (a topic created, deleted or altered durably): the
     * server runs it on its admin thread, never on a loop thread (server.c KS4). */
    bool off_loop;
    /* Broker-to-controller (KRaft's BrokerRegistration, BrokerHeartbeat): never advertised to
     * clients, served only by a cluster node (api_table.c KA8, kafka_api_internal). */
    bool internal;
};

/* The entry for `key`, or NULL for an API this broker does not know. */
const struct kafka_api *kafka_api_find(int16_t key);
/* The whole table, ordered by key. */
const struct kafka_api *kafka_api_table(size_t *count);
/* True when (key, version) is advertised: the server handles it. Anything else is answered
 * UNSUPPORTED_VERSION (ApiVersions: see kmsg_api_versions_response_version). */
bool kafka_api_supported(int16_t key, int16_t version);
/* True when (key, version) is a broker-to-controller request inside its codec range: not
 * advertised, handled only by a cluster node (api_table.c KA8); or a version of an advertised
 * API above the advertised ones, a broker-to-broker form (KA9). */
bool kafka_api_internal(int16_t key, int16_t version);
/* True when (key, version) is encoded flexibly (compact strings, tagged fields, request header
 * v2). An unknown key is not flexible. */
bool kafka_api_flexible(int16_t key, int16_t version);
/* Request header version (1 or 2) and response header version (0 or 1) for (key, version).
 * ApiVersions' response header is always v0, whatever the request's. */
int kafka_request_header_version(int16_t key, int16_t version);
int kafka_response_header_version(int16_t key, int16_t version);
/* The README's version table: its header and one markdown row per advertised API
 * ("| 0 | Produce | 0-7 (note) |"), ordered by key, into `buf` (NUL-terminated, truncated to
 * `size`). Returns the length the whole table needs. `ringtail serve --print-api-versions`
 * prints it; test_kafka_kdesc fails when README.md's table differs. */
size_t kafka_api_markdown(char *buf, size_t size);
/* "Produce", "ApiVersions", ... or "Unknown". */
const char *kafka_api_name(int16_t key);

/* "NONE", "UNSUPPORTED_VERSION", ... or "UNKNOWN" for a code not in the enum. */
const char *kafka_error_name(int16_t code);
/* The Kafka error for an engine return code (0 → NONE). Codes with no counterpart map to
 * UNKNOWN_SERVER_ERROR (-errno, RT_E_INTERNAL) or KAFKA_STORAGE_ERROR (RT_E_IO_FAILED). */
int16_t kafka_error_from_rt(int rc);

#endif
