/*
 * txn_log.h — the records of the internal topic `__transaction_state`: one record per change of a
 * transactional id's state, keyed by the id (the topic is compacted: the newest value per key
 * wins; a null value is a tombstone). docs/format.md §G is normative.
 *
 *   key   = version i16 (0), transactional_id (i16 length + UTF-8 bytes)           (Kafka's v0)
 *   value = version i16, producer_id i64, producer_epoch i16, timeout_ms i32, state i8,
 *           partitions (i32 count, -1 = null; each: topic (i16 length + bytes),
 *           partition ids (i32 count + i32 each)), last_update_ms i64, start_ms i64
 *           -- Kafka's value v0 -- and, in ringtail's value version 0x7201 only, check_count
 *           i32 and flags i8 (bit 0: hanging, which the check-back needs to survive restarts;
 *           bit 1: acked_durable, coordinator.c CO13).
 *           (Not 1: Kafka's own value v1 is a flexible version with different bytes; a Kafka
 *           broker refuses 0x7201 instead of misreading it.) Validity rules TLK1-TLK5 and
 *           TLV1-TLV14 are numbered in txn_log.c and docs/format.md G.3. Value version 0x7202
 *           (a transaction decided in one durable round) is 0x7201 followed by txn_epoch i16
 *           and one last_sequence i32 per (topic, partition) pair in the order read (TLV15);
 *           0x7203 (a wire transaction decided in one round at a kept epoch) is 0x7202
 *           followed by one first_offset i64 per pair (TLV16).
 *
 * A pure codec over caller buffers: decoders treat bytes as untrusted, never read out of
 * bounds, and return RT_E_CORRUPT with a static reason. It never touches the engine.
 */
#ifndef RT_TXN_LOG_H
#define RT_TXN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

#define TXN_LOG_TOPIC          "__transaction_state"
#define TXN_ID_MAX_BYTES       1024
#define TXN_LOG_PARTITIONS_MAX 100000 /* partitions one transaction may touch */

enum txn_state {
    TXN_EMPTY = 0,
    TXN_ONGOING = 1,
    TXN_PREPARE_COMMIT = 2,
    TXN_PREPARE_ABORT = 3,
    TXN_COMPLETE_COMMIT = 4,
    TXN_COMPLETE_ABORT = 5,
    TXN_DEAD = 6,
    TXN_PREPARE_EPOCH_FENCE = 7,
};

struct txn_log_partition {
    char topic[RT_TOPIC_NAME_MAX + 1];
    uint32_t partition;
    /* Value version 0x7202 (one_round) only: the producer's last sequence in this partition in
     * the transaction, -1 when not checked (coordinator.c CO9). Decoded as -1 otherwise. */
    int32_t last_sequence;
    /* Value version 0x7203 (kept_epoch) only: the offset of the transaction's first batch in
     * this partition, -1 when it had none there (coordinator.c CO12). Decoded as -1 otherwise. */
    int64_t first_offset;
};

struct txn_log_value {
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t timeout_ms;
    enum txn_state state;
    uint32_t partition_count;
    struct txn_log_partition *partitions; /* decode: malloc'd (free with txn_log_value_free) */
    int64_t last_update_ms;
    int64_t start_ms;
    uint32_t check_count;
    bool hanging;
    /* Flag bit 1 (0x7201-0x7203): the run that wrote this value acknowledged a produce only once
     * it was durable (sync=always), so an Ongoing's acknowledged data survived a crash of that
     * run (coordinator.c CO13). Decoded false from a Kafka v0 value and from values written before
     * the flag existed. */
    bool acked_durable;
    /* Value version 0x7202, written exactly when one_round is set (coordinator.c CO9): the
     * record decides a transaction committed in one durable round; txn_epoch is the epoch its
     * data carries and each partition has its last_sequence. Decoded as false / -1 otherwise. */
    bool one_round;
    /* Value version 0x7203, written exactly when kept_epoch is set (with one_round; coordinator.c
     * CO12): a wire transaction that kept its epoch (CO7), so its data's (producer id, epoch)
     * does not identify it; each partition's first_offset does. Decoded as false otherwise. */
    bool kept_epoch;
    int16_t txn_epoch;
};

const char *txn_state_name(enum txn_state state);

/* Key: returns 0 with *len_out, -ENOSPC (cap too small) or RT_E_INVALID_ARGUMENT (id NULL, empty,
 * longer than TXN_ID_MAX_BYTES, or not valid UTF-8). */
int txn_log_key_encode(const char *transactional_id, uint8_t *buf, size_t cap, size_t *len_out);
/* Decodes a key into id_out (cap >= TXN_ID_MAX_BYTES + 1, NUL-terminated). 0 or RT_E_CORRUPT. */
int txn_log_key_decode(const uint8_t *buf, size_t len, char *id_out, const char **why);

size_t txn_log_value_size(const struct txn_log_value *v);
/* Writes value version 0x7201, 0x7202 when one_round is set, 0x7203 when kept_epoch is too
 * (partitions null when state is TXN_EMPTY). 0, -ENOSPC,
 * RT_E_INVALID_ARGUMENT (a field out of range, partitions in state Empty, a repeated pair) or
 * -ENOMEM (the repeated-pair check sorts). */
int txn_log_value_encode(const struct txn_log_value *v, uint8_t *buf, size_t cap, size_t *len_out);
/* Reads value version 0 (Kafka's v0: check_count 0, hanging false), 0x7201, 0x7202 or 0x7203. A
 * zero-length value is RT_E_CORRUPT: tombstones (null values) are the caller's to recognise.
 * 0, RT_E_CORRUPT or -ENOMEM; on failure *out holds no allocation. */
int txn_log_value_decode(const uint8_t *buf, size_t len, struct txn_log_value *out,
                         const char **why);
void txn_log_value_free(struct txn_log_value *v);

/* The rules a record of __transaction_state must pass when the coordinator replays it at open:
 * a non-null key that decodes, and a null value (tombstone) or one that decodes. 0, RT_E_CORRUPT
 * with *what ("bad key", "bad value") and *why, or -ENOMEM. */
int txn_log_record_check(const uint8_t *key, int32_t key_len, const uint8_t *value,
                         int32_t value_len, const char **what, const char **why);

struct batch_header;
/* txn_log_record_check on every record of a validated batch of __transaction_state (what
 * rt_verify runs, so verify reports exactly the records open refuses). Compressed batches are
 * not decoded here (the engine writes none). 0, RT_E_CORRUPT with *what and *why, or -ENOMEM. */
int txn_log_batch_check(const uint8_t *batch, size_t size, const struct batch_header *h,
                        const char **what, const char **why);

#endif /* RT_TXN_LOG_H */
