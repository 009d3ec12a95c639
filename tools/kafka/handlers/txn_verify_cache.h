/*
 * txn_verify_cache.h — the broker's memory of transactional partitions already verified with a
 * remote transaction coordinator (KIP-890 part 1; txn_verify.c KTV3): a bounded set of
 * (producer id, epoch, topic-partition), so a transaction's later batches to a partition are
 * not asked about again. It owns that set and its lock; it never asks a coordinator and never
 * decides whether an entry should exist (txn_verify.c does).
 *
 * Invariants:
 *   KVC1  has() is true only for an entry put() at exactly that producer id, epoch, topic and
 *         partition and not dropped since.
 *   KVC2  forget(pid, topic, partition) drops that producer's entry for the partition (its
 *         marker landed there: the transaction ended in it); forget(pid, NULL, 0) all of its.
 *   KVC3  A producer has entries at one epoch only: put() at a newer epoch drops the older ones,
 *         and put() at an older epoch than one held adds nothing (that epoch is fenced).
 *   KVC4  At most `capacity` entries; put() beyond it drops the least recently put one (a
 *         dropped entry only costs a new verification round).
 */
#ifndef RT_KAFKA_HANDLERS_TXN_VERIFY_CACHE_H
#define RT_KAFKA_HANDLERS_TXN_VERIFY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct txn_verify_cache;

/* A cache of at most `capacity` (>= 1) entries; NULL without memory. */
struct txn_verify_cache *txn_verify_cache_new(size_t capacity);
void txn_verify_cache_free(struct txn_verify_cache *c);

void txn_verify_cache_put(struct txn_verify_cache *c, int64_t producer_id, int16_t epoch,
                          const char *topic, uint32_t partition);
bool txn_verify_cache_has(struct txn_verify_cache *c, int64_t producer_id, int16_t epoch,
                          const char *topic, uint32_t partition);
/* KVC2: topic NULL drops every entry of producer_id. */
void txn_verify_cache_forget(struct txn_verify_cache *c, int64_t producer_id, const char *topic,
                             uint32_t partition);
size_t txn_verify_cache_count(struct txn_verify_cache *c);

#endif
