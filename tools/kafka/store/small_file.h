/*
 * small_file.h — the broker's own small files in the data directory (`acls.meta`,
 * `broker-configs.meta`): read whole into memory, and replaced durably. It owns only the bytes'
 * trip to and from the disk — what they mean and whether they are valid is the caller's parser
 * (auth/acl_store.c, config/broker_config_store.c). It never parses, never keeps a file open and
 * never replaces a file any other way than SF1.
 *
 *   SF1 A replace writes `<name>.tmp`, fsyncs it, renames it over `<name>`, then fsyncs the
 *       directory: after a crash the file is the old one or the new one, whole (a stale `.tmp` is
 *       ignored by readers and overwritten by the next replace).
 *   SF2 A read refuses a file larger than the caller's bound (EFBIG) before it allocates.
 *
 * Errors are -errno; `err` gets one line naming the file and the step that failed.
 */
#ifndef RT_KAFKA_SMALL_FILE_H
#define RT_KAFKA_SMALL_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads dir/name whole into a malloc'ed *buf (free it) of *len bytes. -ENOENT when the file does
 * not exist (err untouched); -EFBIG past max_bytes (SF2); other -errno with err set. */
int small_file_read(const char *dir, const char *name, size_t max_bytes, uint8_t **buf, size_t *len,
                    char *err, size_t errlen);

/* Replaces dir/name with len bytes of buf (SF1). 0 or -errno with err set. */
int small_file_replace(const char *dir, const char *name, const uint8_t *buf, size_t len, char *err,
                       size_t errlen);

/* The files' big-endian integers and their checksum, CRC-32 (ISO-HDLC, zlib's crc32) of any
 * length (docs/format.md J, K). */
uint32_t small_file_crc(const uint8_t *p, size_t n);

static inline uint32_t small_file_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t small_file_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline void small_file_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void small_file_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

#endif
