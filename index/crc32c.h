/*
 * crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Kafka's RecordBatch v2
 * uses it. SSE4.2 crc32 instructions where the CPU has them (checked once at start-up), a
 * slicing-by-8 table otherwise. Pure function of its input; no allocation, no state but the
 * one-time dispatch.
 *
 * It lives in index/, the lowest layer, because both the engine (record batches, the topic
 * catalogue) and index/ (producer-state snapshots) checksum with it; it depends on nothing.
 */
#ifndef RT_CRC32C_H
#define RT_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over buf. crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable table implementation, always available (tests compare the two). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* True when crc32c() uses the CPU's instructions. */
bool crc32c_hw_available(void);

#endif /* RT_CRC32C_H */
