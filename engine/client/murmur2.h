/*
 * murmur2.h — Kafka's key hash and default partitioner, so that producers and `ringtail produce`
 * place keyed records exactly where a Java (or librdkafka "murmur2_random") producer would.
 *
 * murmur2() is a bit-for-bit port of org.apache.kafka.common.utils.Utils.murmur2 (MurmurHash2,
 * seed 0x9747b28c, little-endian 4-byte blocks, Java int arithmetic); murmur2_partition() is
 * `toPositive(murmur2(key)) % partitions` with toPositive(x) = x & 0x7fffffff, as in Kafka's
 * BuiltInPartitioner.partitionForKey. Known vectors (Kafka's UtilsTest.testMurmur2 and
 * librdkafka's rdmurmur2.c unittest) are checked by tests/cli_murmur2.sh through
 * `ringtail murmur2`.
 */
#ifndef RT_MURMUR2_H
#define RT_MURMUR2_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's Utils.murmur2 over len bytes, as the signed 32-bit value Java returns. */
int32_t murmur2(const void *data, size_t len);

/* The partition Kafka's default partitioner picks for a non-null key. partitions >= 1. */
uint32_t murmur2_partition(const void *key, size_t len, uint32_t partitions);

#endif /* RT_MURMUR2_H */
