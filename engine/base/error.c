/*
 * error.c — names for every error code (rt_strerror) and the per-thread detail message behind
 * rt_error_detail(). Owns nothing but a thread-local buffer; never allocates, never fails.
 */
#include "error.h"

#include <stdio.h>
#include <string.h>

#include "ringtail.h"

static _Thread_local char detail[ERROR_DETAIL_BYTES];

void error_clear(void)
{
    detail[0] = '\0';
}

int error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return code;
}

const char *rt_error_detail(void)
{
    return detail;
}

const char *rt_strerror(int code)
{
    switch (code) {
    case RT_OK:
        return "success";
    case RT_E_CORRUPT:
        return "RT_E_CORRUPT: data failed a CRC or structural check";
    case RT_E_INVALID_ARGUMENT:
        return "RT_E_INVALID_ARGUMENT: invalid argument";
    case RT_E_INVALID_TOPIC:
        return "RT_E_INVALID_TOPIC: topic names are 1-249 characters of [a-zA-Z0-9._-], not '.' "
               "or '..'";
    case RT_E_UNKNOWN_TOPIC_OR_PARTITION:
        return "RT_E_UNKNOWN_TOPIC_OR_PARTITION: no such topic or partition";
    case RT_E_TOPIC_ALREADY_EXISTS:
        return "RT_E_TOPIC_ALREADY_EXISTS: topic already exists";
    case RT_E_DIRECTORY_LOCKED:
        return "RT_E_DIRECTORY_LOCKED: the data directory is open in another process or handle";
    case RT_E_OFFSET_OUT_OF_RANGE:
        return "RT_E_OFFSET_OUT_OF_RANGE: offset outside the log";
    case RT_E_RECORD_TOO_LARGE:
        return "RT_E_RECORD_TOO_LARGE: batch or record larger than batch_size_max_bytes";
    case RT_E_IO_FAILED:
        return "RT_E_IO_FAILED: a write or fdatasync failed (a partition that failed alone "
               "recovers in place once the disk takes writes; the engine's write side needs a "
               "reopen)";
    case RT_E_CLOSED:
        return "RT_E_CLOSED: the engine is closing or closed";
    case RT_E_END:
        return "RT_E_END: no more items";
    case RT_E_UNSUPPORTED:
        return "RT_E_UNSUPPORTED: not supported by this build or version";
    case RT_E_OUT_OF_ORDER_SEQUENCE:
        return "RT_E_OUT_OF_ORDER_SEQUENCE: sequence number is not the next expected one";
    case RT_E_INVALID_PRODUCER_EPOCH:
        return "RT_E_INVALID_PRODUCER_EPOCH: producer epoch is older than the current one";
    case RT_E_PRODUCER_FENCED:
        return "RT_E_PRODUCER_FENCED: a newer instance with the same id has fenced this producer";
    case RT_E_UNKNOWN_PRODUCER_ID:
        return "RT_E_UNKNOWN_PRODUCER_ID: unknown producer id";
    case RT_E_INVALID_TXN_STATE:
        return "RT_E_INVALID_TXN_STATE: operation not allowed in the transaction's state";
    case RT_E_CONCURRENT_TRANSACTIONS:
        return "RT_E_CONCURRENT_TRANSACTIONS: the previous transaction is still completing";
    case RT_E_INVALID_TRANSACTION_TIMEOUT:
        return "RT_E_INVALID_TRANSACTION_TIMEOUT: transaction timeout above the engine maximum";
    case RT_E_UNSTABLE_OFFSET_COMMIT:
        return "RT_E_UNSTABLE_OFFSET_COMMIT: a transactional offset commit is pending";
    case RT_E_UNSUPPORTED_COMPRESSION:
        return "RT_E_UNSUPPORTED_COMPRESSION: unknown or unsupported compression codec";
    case RT_E_TIMED_OUT:
        return "RT_E_TIMED_OUT: timed out";
    case RT_E_INTERNAL_TOPIC:
        return "RT_E_INTERNAL_TOPIC: names beginning with '__' are internal topics: only the "
               "engine creates and writes them";
    case RT_E_READ_ONLY:
        return "RT_E_READ_ONLY: the engine was opened read-only";
    case RT_E_TOPICS_FULL:
        return "RT_E_TOPICS_FULL: topics_max user topics exist";
    case RT_E_PRODUCERS_FULL:
        return "RT_E_PRODUCERS_FULL: the partition's producer table (producers_max) holds only "
               "producers it may not evict (open transactions, named producers)";
    case RT_E_PRODUCER_IDS_EXHAUSTED:
        return "RT_E_PRODUCER_IDS_EXHAUSTED: no producer id is left to allocate";
    case RT_E_TXN_PARTITIONS_FULL:
        return "RT_E_TXN_PARTITIONS_FULL: a transaction spans at most 100000 partitions";
    case RT_E_PRODUCER_PARTITIONS_FULL:
        return "RT_E_PRODUCER_PARTITIONS_FULL: a producer writes to at most 4096 partitions";
    case RT_E_CONSUMER_PARTITIONS_FULL:
        return "RT_E_CONSUMER_PARTITIONS_FULL: a consumer is assigned at most 65536 partitions";
    case RT_E_BUFFER_TOO_SMALL:
        return "RT_E_BUFFER_TOO_SMALL: the output array is shorter than the answer";
    case RT_E_HANDLES_OPEN:
        return "RT_E_HANDLES_OPEN: producers or consumers of this engine are still open; close "
               "them first";
    case RT_E_FETCHES_FULL:
        return "RT_E_FETCHES_FULL: fetches_max fetches are open; release one";
    case RT_E_INVALID_CONFIG:
        return "RT_E_INVALID_CONFIG: an unknown topic config, or a value its rule refuses";
    case RT_E_NOT_COORDINATOR:
        return "RT_E_NOT_COORDINATOR: this engine does not lead the group's __consumer_offsets "
               "partition";
    default:
        break;
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error code";
}
