/*
 * acl_store.h — the ACLs of a data directory on disk: `acls.meta` (docs/format.md J), read
 * whole or not at all, replaced atomically (temp file, fsync, rename, directory fsync). It owns
 * the file's bytes and nothing else: it never decides access (acl.c) and never holds the set
 * a broker runs with (authorizer.c).
 *
 *   AS1  A load either returns every binding of a valid file or fails naming the file and the
 *        byte offset of the first bad byte; nothing of a corrupt file is ever applied.
 *   AS2  A save never leaves a half-written `acls.meta`: readers see the old file or the new.
 */
#ifndef RT_KAFKA_ACL_STORE_H
#define RT_KAFKA_ACL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/auth/acl.h"

#define ACL_STORE_FILE      "acls.meta"
#define ACL_STORE_MAGIC     0x5254414cu /* "RTAL" */
#define ACL_STORE_VERSION   1u
#define ACL_STORE_HEADER    14u     /* magic, version, crc, count */
#define ACL_STORE_ENTRY_MIN 13u     /* 4 type bytes + 3 lengths + 3 one-byte strings */
#define ACL_STORE_COUNT_MAX 100000u /* bindings in one file at most */

/* What identifies one version of the file (the running broker's mtime check, AZ4). */
struct acl_store_sig {
    int64_t mtime_ns;
    int64_t size;
    uint64_t ino;
    int exists;
};

/* Parses a whole file's bytes into `out` (initialised here). 0; RT_E_CORRUPT with *why and
 * *bad_offset set; -ENOMEM. */
int acl_store_parse(const uint8_t *buf, size_t len, struct acl_set *out, const char **why,
                    size_t *bad_offset);
/* Encodes `s` as a whole file into a malloc'd buffer. 0 or -ENOMEM. */
int acl_store_encode(const struct acl_set *s, uint8_t **buf, size_t *len);
/* Loads DIR/acls.meta (a missing file is an empty set). 0, or RT_E_CORRUPT / -errno with
 * `err` (errlen bytes) naming the file, the offset and the reason. */
int acl_store_load(const char *dir, struct acl_set *out, char *err, size_t errlen);
/* Replaces DIR/acls.meta with `s` (AS2). 0 or -errno with `err`. */
int acl_store_save(const char *dir, const struct acl_set *s, char *err, size_t errlen);
/* The file's signature now (exists 0 when it does not). 0 or -errno. */
int acl_store_stat(const char *dir, struct acl_store_sig *sig);

#endif /* RT_KAFKA_ACL_STORE_H */
