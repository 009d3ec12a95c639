/*
 * broker_config_store.c — `broker-configs.meta`, a data directory's dynamic broker configs
 * (docs/format.md K; BS1, BS2 in broker_config_store.h). All integers big-endian:
 *
 *   offset size field
 *        0    4 magic u32        0x52544243 ("RTBC")
 *        4    2 version u16      1
 *        6    4 crc u32          CRC-32 (zlib's, ISO-HDLC) of bytes [10, end)
 *       10    4 count u32        entries that follow
 *       14    … entries          count times: level u8 (0 this broker, 1 cluster default),
 *                                name len u16 (1..255) + bytes, value len u16 (0..1024) + bytes
 *
 * Entries are strictly ordered by (level, table index of the name); each name is in
 * broker_config.c's table, allowed at its level, its value canonical (broker_config_check
 * gives it back unchanged). It never decides an answer and never holds a running set.
 */
#include "tools/kafka/config/broker_config_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "engine/ringtail.h"
#include "tools/kafka/store/small_file.h"

_Static_assert(BROKER_CONFIG_STORE_HEADER == 4 + 2 + 4 + 4, "broker-configs.meta header: 14 bytes");
_Static_assert(BROKER_CONFIG_STORE_ENTRY == 1 + 2 + 2, "an entry: level, name len, value len");

#define CORRUPT(w, at)                                                                             \
    do {                                                                                           \
        *why = (w);                                                                                \
        *bad_offset = (at);                                                                        \
        rc = RT_E_CORRUPT;                                                                         \
        goto out;                                                                                  \
    } while (0)

int broker_config_store_parse(const uint8_t *buf, size_t len, struct broker_config_set *out,
                              const char **why, size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    *why = NULL;
    *bad_offset = 0;
    int rc = 0;
    if (len < BROKER_CONFIG_STORE_HEADER)
        CORRUPT("shorter than the 14-byte header", 0);
    if (small_file_get_u32(buf) != BROKER_CONFIG_STORE_MAGIC)
        CORRUPT("bad magic", 0);
    if (small_file_get_u16(buf + 4) != BROKER_CONFIG_STORE_VERSION)
        CORRUPT("unknown version", 4);
    if (small_file_get_u32(buf + 6) != small_file_crc(buf + 10, len - 10))
        CORRUPT("CRC mismatch", 6);
    uint32_t count = small_file_get_u32(buf + 10);
    if (count > BCL_LEVELS * broker_config_count() ||
        (uint64_t)count * BROKER_CONFIG_STORE_ENTRY > len - BROKER_CONFIG_STORE_HEADER)
        CORRUPT("entry count larger than the file", 10);
    size_t at = BROKER_CONFIG_STORE_HEADER;
    long prev = -1; /* level * table size + index of the entry before */
    for (uint32_t i = 0; i < count; i++) {
        size_t start = at;
        if (len - at < BROKER_CONFIG_STORE_ENTRY)
            CORRUPT("truncated entry", at);
        uint8_t level = buf[at++];
        if (level >= BCL_LEVELS)
            CORRUPT("unknown level", start);
        uint16_t nl = small_file_get_u16(buf + at);
        if (nl == 0 || nl > 255)
            CORRUPT("name length outside 1..255", at);
        if (len - at - 2 < (size_t)nl + 2)
            CORRUPT("truncated name", at);
        char name[256];
        memcpy(name, buf + at + 2, nl);
        name[nl] = 0;
        if (memchr(name, 0, nl))
            CORRUPT("NUL byte in a name", at + 2);
        int k = broker_config_find(name);
        if (k < 0)
            CORRUPT("not a dynamic broker config", at + 2);
        at += 2 + (size_t)nl;
        const struct broker_config_def *d = broker_config_def((size_t)k);
        if (level == BCL_DEFAULT && d->per_broker)
            CORRUPT("a per-broker config at the cluster-default level", start);
        long key = (long)level * (long)broker_config_count() + k;
        if (key <= prev)
            CORRUPT("entries out of order or repeated", start);
        prev = key;
        uint16_t vl = small_file_get_u16(buf + at);
        if (vl > BROKER_CONFIG_VALUE_MAX)
            CORRUPT("value length above 1024", at);
        if (len - at - 2 < vl)
            CORRUPT("truncated value", at);
        char value[BROKER_CONFIG_VALUE_MAX + 1], canon[BROKER_CONFIG_VALUE_MAX + 1], w[160];
        memcpy(value, buf + at + 2, vl);
        value[vl] = 0;
        if (memchr(value, 0, vl))
            CORRUPT("NUL byte in a value", at + 2);
        if (broker_config_check((size_t)k, value, canon, w, sizeof(w)) != 0 ||
            strcmp(canon, value) != 0)
            CORRUPT("a value its config refuses, or not in canonical spelling", at + 2);
        at += 2 + (size_t)vl;
        if (broker_config_set_put(out, level, (size_t)k, value) != 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if (at != len)
        CORRUPT("bytes after the last entry", at);
out:
    if (rc)
        broker_config_set_free(out); /* BS1: nothing of a corrupt file */
    return rc;
}

int broker_config_store_encode(const struct broker_config_set *s, uint8_t **buf_out,
                               size_t *len_out)
{
    size_t len = BROKER_CONFIG_STORE_HEADER;
    uint32_t count = 0;
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < broker_config_count(); k++)
            if (s->value[l][k]) {
                len += BROKER_CONFIG_STORE_ENTRY + strlen(broker_config_def(k)->name) +
                       strlen(s->value[l][k]);
                count++;
            }
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    small_file_put_u32(buf, BROKER_CONFIG_STORE_MAGIC);
    small_file_put_u16(buf + 4, BROKER_CONFIG_STORE_VERSION);
    small_file_put_u32(buf + 10, count);
    size_t at = BROKER_CONFIG_STORE_HEADER;
    for (int l = 0; l < BCL_LEVELS; l++)
        for (size_t k = 0; k < broker_config_count(); k++) {
            const char *v = s->value[l][k];
            if (!v)
                continue;
            const char *name = broker_config_def(k)->name;
            buf[at++] = (uint8_t)l;
            small_file_put_u16(buf + at, (uint16_t)strlen(name));
            memcpy(buf + at + 2, name, strlen(name));
            at += 2 + strlen(name);
            small_file_put_u16(buf + at, (uint16_t)strlen(v));
            memcpy(buf + at + 2, v, strlen(v));
            at += 2 + strlen(v);
        }
    small_file_put_u32(buf + 6, small_file_crc(buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int broker_config_store_load(const char *dir, struct broker_config_set *out, char *err,
                             size_t errlen)
{
    memset(out, 0, sizeof(*out));
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc =
        small_file_read(dir, BROKER_CONFIG_STORE_FILE, (size_t)1 << 20, &buf, &len, err, errlen);
    if (rc == -ENOENT)
        return 0; /* nothing stored yet */
    if (rc)
        return rc;
    const char *why = NULL;
    size_t bad = 0;
    rc = broker_config_store_parse(buf, len, out, &why, &bad);
    free(buf);
    if (rc == RT_E_CORRUPT)
        snprintf(err, errlen, "%s/%s: corrupt at byte offset %zu: %s", dir,
                 BROKER_CONFIG_STORE_FILE, bad, why);
    else if (rc)
        snprintf(err, errlen, "%s/%s: %s", dir, BROKER_CONFIG_STORE_FILE, strerror(-rc));
    return rc;
}

int broker_config_store_save(const char *dir, const struct broker_config_set *s, char *err,
                             size_t errlen)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (broker_config_store_encode(s, &buf, &len) != 0) {
        snprintf(err, errlen, "%s/%s: out of memory", dir, BROKER_CONFIG_STORE_FILE);
        return -ENOMEM;
    }
    int rc = small_file_replace(dir, BROKER_CONFIG_STORE_FILE, buf, len, err, errlen); /* SF1 */
    free(buf);
    return rc;
}
