/*
 * api.c — lookups over the table of Kafka APIs this broker knows (api.h, api_table.c), the
 * README's version table made from it, and Kafka's error names. It must never write a version
 * down itself: the rows are the only place versions live.
 *
 * The rows and their invariants (KA1-KA6) are in api_table.c; this file only reads them.
 */
#include "tools/kafka/proto/api.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/ringtail.h"

/* The rows live in api_table.c (it sits above the handlers and the descriptions). */
extern const struct kafka_api kafka_api_rows[];
extern const size_t kafka_api_rows_count;
#define api_table kafka_api_rows

#define API_COUNT kafka_api_rows_count

const struct kafka_api *kafka_api_find(int16_t key)
{
    for (size_t i = 0; i < API_COUNT; i++) {
        if (i > 0)
            assert(api_table[i - 1].key < api_table[i].key); /* KA1 */
        if (api_table[i].key == key)
            return &api_table[i];
    }
    return NULL;
}

const struct kafka_api *kafka_api_table(size_t *count)
{
    *count = API_COUNT;
    return api_table;
}

bool kafka_api_supported(int16_t key, int16_t version)
{
    const struct kafka_api *a = kafka_api_find(key);
    if (!a || !a->advertised)
        return false;
    assert(a->adv_min >= a->codec_min && a->adv_max <= a->codec_max); /* KA1 */
    return version >= a->adv_min && version <= a->adv_max;
}

bool kafka_api_internal(int16_t key, int16_t version)
{
    const struct kafka_api *a = kafka_api_find(key);
    if (!a || version < a->codec_min || version > a->codec_max)
        return false;
    return (a->internal && !a->advertised) || (a->advertised && version > a->adv_max); /* KA9 */
}

bool kafka_api_flexible(int16_t key, int16_t version)
{
    const struct kafka_api *a = kafka_api_find(key);
    return a && a->first_flexible >= 0 && version >= a->first_flexible;
}

int kafka_request_header_version(int16_t key, int16_t version)
{
    return kafka_api_flexible(key, version) ? 2 : 1;
}

int kafka_response_header_version(int16_t key, int16_t version)
{
    /* ApiVersions' response header is v0 at every version: a client that asked too new a
     * version must still be able to read the answer (KIP-511). */
    if (key == KAFKA_API_VERSIONS)
        return 0;
    return kafka_api_flexible(key, version) ? 1 : 0;
}

size_t kafka_api_markdown(char *buf, size_t size)
{
    static const char head[] = "| key | API | versions |\n| --- | --- | --- |\n";
    size_t n = sizeof head - 1;
    if (n < size)
        memcpy(buf, head, n);
    for (size_t i = 0; i < API_COUNT; i++) {
        const struct kafka_api *a = &api_table[i];
        if (!a->advertised)
            continue;
        char row[512];
        int len = a->note ? snprintf(row, sizeof row, "| %d | %s | %d-%d (%s) |\n", a->key, a->name,
                                     a->adv_min, a->adv_max, a->note)
                          : snprintf(row, sizeof row, "| %d | %s | %d-%d |\n", a->key, a->name,
                                     a->adv_min, a->adv_max);
        assert(len > 0 && (size_t)len < sizeof row);
        if (n + (size_t)len < size)
            memcpy(buf + n, row, (size_t)len);
        n += (size_t)len;
    }
    if (size)
        buf[n < size ? n : size - 1] = 0;
    return n;
}

const char *kafka_api_name(int16_t key)
{
    const struct kafka_api *a = kafka_api_find(key);
    return a ? a->name : "Unknown";
}

const char *kafka_error_name(int16_t code)
{
    switch (code) {
#define E(n)                                                                                       \
    case KAFKA_##n:                                                                                \
        return #n
        E(UNKNOWN_SERVER_ERROR);
        E(NONE);
        E(OFFSET_OUT_OF_RANGE);
        E(CORRUPT_MESSAGE);
        E(UNKNOWN_TOPIC_OR_PARTITION);
        E(INVALID_FETCH_SIZE);
        E(LEADER_NOT_AVAILABLE);
        E(NOT_LEADER_OR_FOLLOWER);
        E(REQUEST_TIMED_OUT);
        E(BROKER_NOT_AVAILABLE);
        E(REPLICA_NOT_AVAILABLE);
        E(MESSAGE_TOO_LARGE);
        E(STALE_CONTROLLER_EPOCH);
        E(OFFSET_METADATA_TOO_LARGE);
        E(NETWORK_EXCEPTION);
        E(COORDINATOR_LOAD_IN_PROGRESS);
        E(COORDINATOR_NOT_AVAILABLE);
        E(NOT_COORDINATOR);
        E(INVALID_TOPIC_EXCEPTION);
        E(RECORD_LIST_TOO_LARGE);
        E(NOT_ENOUGH_REPLICAS);
        E(NOT_ENOUGH_REPLICAS_AFTER_APPEND);
        E(INVALID_REQUIRED_ACKS);
        E(ILLEGAL_GENERATION);
        E(INCONSISTENT_GROUP_PROTOCOL);
        E(INVALID_GROUP_ID);
        E(UNKNOWN_MEMBER_ID);
        E(INVALID_SESSION_TIMEOUT);
        E(REBALANCE_IN_PROGRESS);
        E(INVALID_COMMIT_OFFSET_SIZE);
        E(TOPIC_AUTHORIZATION_FAILED);
        E(GROUP_AUTHORIZATION_FAILED);
        E(CLUSTER_AUTHORIZATION_FAILED);
        E(INVALID_TIMESTAMP);
        E(UNSUPPORTED_SASL_MECHANISM);
        E(ILLEGAL_SASL_STATE);
        E(UNSUPPORTED_VERSION);
        E(TOPIC_ALREADY_EXISTS);
        E(INVALID_PARTITIONS);
        E(INVALID_REPLICATION_FACTOR);
        E(INVALID_REPLICA_ASSIGNMENT);
        E(INVALID_CONFIG);
        E(NOT_CONTROLLER);
        E(INVALID_REQUEST);
        E(UNSUPPORTED_FOR_MESSAGE_FORMAT);
        E(POLICY_VIOLATION);
        E(OUT_OF_ORDER_SEQUENCE_NUMBER);
        E(DUPLICATE_SEQUENCE_NUMBER);
        E(INVALID_PRODUCER_EPOCH);
        E(INVALID_TXN_STATE);
        E(INVALID_PRODUCER_ID_MAPPING);
        E(INVALID_TRANSACTION_TIMEOUT);
        E(CONCURRENT_TRANSACTIONS);
        E(TRANSACTION_COORDINATOR_FENCED);
        E(TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        E(SECURITY_DISABLED);
        E(OPERATION_NOT_ATTEMPTED);
        E(KAFKA_STORAGE_ERROR);
        E(LOG_DIR_NOT_FOUND);
        E(SASL_AUTHENTICATION_FAILED);
        E(UNKNOWN_PRODUCER_ID);
        E(REASSIGNMENT_IN_PROGRESS);
        E(NON_EMPTY_GROUP);
        E(GROUP_ID_NOT_FOUND);
        E(FETCH_SESSION_ID_NOT_FOUND);
        E(INVALID_FETCH_SESSION_EPOCH);
        E(LISTENER_NOT_FOUND);
        E(TOPIC_DELETION_DISABLED);
        E(FENCED_LEADER_EPOCH);
        E(UNKNOWN_LEADER_EPOCH);
        E(UNSUPPORTED_COMPRESSION_TYPE);
        E(STALE_BROKER_EPOCH);
        E(INVALID_UPDATE_VERSION);
        E(OFFSET_NOT_AVAILABLE);
        E(MEMBER_ID_REQUIRED);
        E(PREFERRED_LEADER_NOT_AVAILABLE);
        E(GROUP_MAX_SIZE_REACHED);
        E(FENCED_INSTANCE_ID);
        E(INVALID_RECORD);
        E(UNSTABLE_OFFSET_COMMIT);
        E(THROTTLING_QUOTA_EXCEEDED);
        E(PRODUCER_FENCED);
#undef E
    }
    return "UNKNOWN";
}

int16_t kafka_error_from_rt(int rc)
{
    switch (rc) {
    case 0:
        return KAFKA_NONE;
    case RT_E_CORRUPT:
        return KAFKA_CORRUPT_MESSAGE;
    case RT_E_INVALID_ARGUMENT:
        return KAFKA_INVALID_REQUEST;
    case RT_E_INVALID_TOPIC:
    case RT_E_INTERNAL_TOPIC:
        return KAFKA_INVALID_TOPIC_EXCEPTION;
    case RT_E_UNKNOWN_TOPIC_OR_PARTITION:
        return KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
    case RT_E_TOPIC_ALREADY_EXISTS:
        return KAFKA_TOPIC_ALREADY_EXISTS;
    case RT_E_OFFSET_OUT_OF_RANGE:
        return KAFKA_OFFSET_OUT_OF_RANGE;
    case RT_E_RECORD_TOO_LARGE:
        return KAFKA_MESSAGE_TOO_LARGE;
    case RT_E_IO_FAILED:
    case RT_E_READ_ONLY:
        return KAFKA_KAFKA_STORAGE_ERROR;
    case RT_E_CLOSED:
        return KAFKA_NOT_LEADER_OR_FOLLOWER; /* retriable: the client retries elsewhere/later */
    case RT_E_TIMED_OUT:
        return KAFKA_REQUEST_TIMED_OUT;
    case RT_E_TOPICS_FULL:
    case RT_E_PRODUCERS_FULL:
    case RT_E_PRODUCER_IDS_EXHAUSTED:
    case RT_E_TXN_PARTITIONS_FULL:
    case RT_E_PRODUCER_PARTITIONS_FULL:
    case RT_E_CONSUMER_PARTITIONS_FULL:
        return KAFKA_POLICY_VIOLATION; /* one of the engine's limits (docs/limits.md) */
    case RT_E_UNSUPPORTED:
        return KAFKA_UNSUPPORTED_FOR_MESSAGE_FORMAT;
    case RT_E_UNSUPPORTED_COMPRESSION:
        return KAFKA_UNSUPPORTED_COMPRESSION_TYPE;
    case RT_E_OUT_OF_ORDER_SEQUENCE:
        return KAFKA_OUT_OF_ORDER_SEQUENCE_NUMBER;
    case RT_E_INVALID_PRODUCER_EPOCH:
        return KAFKA_INVALID_PRODUCER_EPOCH;
    case RT_E_PRODUCER_FENCED:
        return KAFKA_PRODUCER_FENCED;
    case RT_E_UNKNOWN_PRODUCER_ID:
        return KAFKA_UNKNOWN_PRODUCER_ID;
    case RT_E_INVALID_TXN_STATE:
        return KAFKA_INVALID_TXN_STATE;
    case RT_E_CONCURRENT_TRANSACTIONS:
        return KAFKA_CONCURRENT_TRANSACTIONS;
    case RT_E_INVALID_TRANSACTION_TIMEOUT:
        return KAFKA_INVALID_TRANSACTION_TIMEOUT;
    case RT_E_UNSTABLE_OFFSET_COMMIT:
        return KAFKA_UNSTABLE_OFFSET_COMMIT;
    case RT_E_NOT_COORDINATOR: /* a cluster node that resigned the group's partition */
        return KAFKA_NOT_COORDINATOR;
    case -ENOSPC:
    case -EDQUOT:
    case -EIO:
    case -EROFS:
        return KAFKA_KAFKA_STORAGE_ERROR; /* the disk's (issue 21 F3), as Kafka answers */
    default:
        return KAFKA_UNKNOWN_SERVER_ERROR;
    }
}
