/*
 * acl_store.c — `acls.meta`, the ACLs of a data directory (docs/format.md J; AS1, AS2 in
 * acl_store.h). All integers big-endian:
 *
 *   offset size field
 *        0    4 magic u32        0x5254414c ("RTAL")
 *        4    2 version u16      1
 *        6    4 crc u32          CRC-32 (zlib's, ISO-HDLC) of bytes [10, end)
 *       10    4 count u32        bindings that follow, at most 100 000
 *       14    … bindings         count times: resource_type u8, pattern_type u8, operation u8,
 *                                permission u8, then name, principal, host each as len u16
 *                                (1..1024) + bytes (no NUL)
 *
 * Each binding must be valid (acl.h AC5); the file ends after the last one. It never decides
 * access and never holds a running broker's set.
 */
#include "tools/kafka/auth/acl_store.h"

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

_Static_assert(ACL_STORE_HEADER == 4 + 2 + 4 + 4, "acls.meta header is 14 bytes");

/* One string: len u16 (1..ACL_STR_MAX) + bytes without NUL; a malloc'd C string in *out. */
static int get_str(const uint8_t *buf, size_t len, size_t *at, char **out, const char **why,
                   size_t *bad)
{
    if (len - *at < 2) {
        *why = "truncated string length";
        *bad = *at;
        return RT_E_CORRUPT;
    }
    uint16_t n = small_file_get_u16(buf + *at);
    if (n == 0 || n > ACL_STR_MAX) {
        *why = "string length outside 1..1024";
        *bad = *at;
        return RT_E_CORRUPT;
    }
    if (len - *at - 2 < n) {
        *why = "truncated string";
        *bad = *at;
        return RT_E_CORRUPT;
    }
    if (memchr(buf + *at + 2, 0, n)) {
        *why = "NUL byte in a string";
        *bad = *at + 2;
        return RT_E_CORRUPT;
    }
    *out = strndup((const char *)buf + *at + 2, n);
    if (!*out)
        return -ENOMEM;
    *at += 2 + (size_t)n;
    return 0;
}

int acl_store_parse(const uint8_t *buf, size_t len, struct acl_set *out, const char **why,
                    size_t *bad_offset)
{
    acl_set_init(out);
    *why = NULL;
    *bad_offset = 0;
    if (len < ACL_STORE_HEADER) {
        *why = "shorter than the 14-byte header";
        return RT_E_CORRUPT;
    }
    if (small_file_get_u32(buf) != ACL_STORE_MAGIC) {
        *why = "bad magic";
        return RT_E_CORRUPT;
    }
    if (small_file_get_u16(buf + 4) != ACL_STORE_VERSION) {
        *why = "unknown version";
        *bad_offset = 4;
        return RT_E_CORRUPT;
    }
    if (small_file_get_u32(buf + 6) != small_file_crc(buf + 10, len - 10)) {
        *why = "CRC mismatch";
        *bad_offset = 6;
        return RT_E_CORRUPT;
    }
    uint32_t count = small_file_get_u32(buf + 10);
    if (count > ACL_STORE_COUNT_MAX ||
        (uint64_t)count * ACL_STORE_ENTRY_MIN > len - ACL_STORE_HEADER) {
        *why = "binding count larger than the file";
        *bad_offset = 10;
        return RT_E_CORRUPT;
    }
    size_t at = ACL_STORE_HEADER;
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        size_t start = at;
        if (len - at < 4) {
            *why = "truncated binding";
            *bad_offset = at;
            rc = RT_E_CORRUPT;
            break;
        }
        struct acl_binding b = {buf[at], buf[at + 1], buf[at + 2], buf[at + 3], NULL, NULL, NULL};
        at += 4;
        rc = get_str(buf, len, &at, &b.name, why, bad_offset);
        if (!rc)
            rc = get_str(buf, len, &at, &b.principal, why, bad_offset);
        if (!rc)
            rc = get_str(buf, len, &at, &b.host, why, bad_offset);
        if (!rc) {
            const char *invalid = acl_binding_invalid(&b);
            if (invalid) {
                *why = invalid;
                *bad_offset = start;
                rc = RT_E_CORRUPT;
            }
        }
        if (!rc && acl_set_push(out, &b) < 0) /* O(1): a repeat decides as its first */
            rc = -ENOMEM;
        free(b.name);
        free(b.principal);
        free(b.host);
    }
    if (!rc && at != len) {
        *why = "bytes after the last binding";
        *bad_offset = at;
        rc = RT_E_CORRUPT;
    }
    if (rc)
        acl_set_free(out); /* AS1: nothing of a corrupt file */
    return rc;
}

int acl_store_encode(const struct acl_set *s, uint8_t **buf_out, size_t *len_out)
{
    size_t len = ACL_STORE_HEADER;
    for (uint32_t i = 0; i < s->count; i++)
        len += 4 + 6 + strlen(s->v[i].name) + strlen(s->v[i].principal) + strlen(s->v[i].host);
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    small_file_put_u32(buf, ACL_STORE_MAGIC);
    small_file_put_u16(buf + 4, ACL_STORE_VERSION);
    small_file_put_u32(buf + 10, s->count);
    size_t at = ACL_STORE_HEADER;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct acl_binding *b = &s->v[i];
        buf[at++] = b->resource_type;
        buf[at++] = b->pattern_type;
        buf[at++] = b->operation;
        buf[at++] = b->permission;
        const char *strs[3] = {b->name, b->principal, b->host};
        for (int k = 0; k < 3; k++) {
            size_t n = strlen(strs[k]);
            small_file_put_u16(buf + at, (uint16_t)n);
            memcpy(buf + at + 2, strs[k], n);
            at += 2 + n;
        }
    }
    small_file_put_u32(buf + 6, small_file_crc(buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

int acl_store_load(const char *dir, struct acl_set *out, char *err, size_t errlen)
{
    acl_set_init(out);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = small_file_read(dir, ACL_STORE_FILE, (size_t)64 << 20, &buf, &len, err, errlen);
    if (rc == -ENOENT)
        return 0; /* nothing stored yet */
    if (rc)
        return rc;
    const char *why = NULL;
    size_t bad = 0;
    rc = acl_store_parse(buf, len, out, &why, &bad);
    free(buf);
    if (rc == RT_E_CORRUPT)
        snprintf(err, errlen, "%s/%s: corrupt at byte offset %zu: %s", dir, ACL_STORE_FILE, bad,
                 why);
    else if (rc)
        snprintf(err, errlen, "%s/%s: %s", dir, ACL_STORE_FILE, strerror(-rc));
    return rc;
}

int acl_store_save(const char *dir, const struct acl_set *s, char *err, size_t errlen)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (acl_store_encode(s, &buf, &len) != 0) {
        snprintf(err, errlen, "%s/%s: out of memory", dir, ACL_STORE_FILE);
        return -ENOMEM;
    }
    int rc = small_file_replace(dir, ACL_STORE_FILE, buf, len, err, errlen); /* SF1 */
    free(buf);
    return rc;
}

int acl_store_stat(const char *dir, struct acl_store_sig *sig)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, ACL_STORE_FILE);
    struct stat st;
    memset(sig, 0, sizeof(*sig));
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    sig->exists = 1;
    sig->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    sig->size = (int64_t)st.st_size;
    sig->ino = (uint64_t)st.st_ino;
    return 0;
}
