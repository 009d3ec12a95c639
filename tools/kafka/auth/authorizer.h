/*
 * authorizer.h — the broker's running authorizer (`--authorizer on`): the ACL set it decides
 * by, loaded from the data directory's `acls.meta` (acl_store.c), changed over the wire
 * (CreateAcls, DeleteAcls: saved before they answer) or by `ringtail acl` on the directory
 * (picked up by its mtime), with Kafka's super.users and allow.everyone.if.no.acl.found. Every
 * connection keeps a small cache of its answers keyed by (resource, operation), invalidated by
 * one generation counter, so a check on the hot path costs O(1) in the number of ACLs. It owns
 * the set and the caches' rules; it never reads a request or writes a socket (the handlers
 * call authorizer_check through kafka_authorize).
 *
 *   AZ1  Every change of the set (a create, a delete, a reload) is made on a copy, saved (a
 *        create or delete: acls.meta replaced, AS2) and only then swapped in under the write
 *        lock with the generation bumped; a failed save changes nothing.
 *   AZ2  A check, and a listing (DescribeAcls, on a loop thread), read the set under the read
 *        lock only; neither ever waits for a file or for a change being saved.
 *   AZ3  A cache entry answers only for the generation, principal, resource type, operation
 *        and name it was filled for; a generation bump therefore invalidates every cache at
 *        once. A cache is used by one thread at a time (a try-lock; a busy cache is bypassed).
 *   AZ4  A watch thread stats acls.meta every `watch_interval_ms`; a changed signature (mtime,
 *        size, inode) reloads the file whole (AS1). A corrupt or unreadable file is logged and
 *        the running set kept.
 */
#ifndef RT_KAFKA_AUTHORIZER_H
#define RT_KAFKA_AUTHORIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/auth/acl.h"

#define AUTHORIZER_SUPER_USERS_MAX 64
#define AUTHORIZER_CACHE_ENTRIES   64  /* per connection, direct-mapped */
#define AUTHORIZER_CACHE_NAME_MAX  128 /* longer names are decided uncached */

struct authorizer_options {
    const char *dir;               /* the data directory (acls.meta) */
    const char *super_users;       /* "User:admin;User:ops" (NULL: none) */
    bool allow_if_no_acl;          /* allow.everyone.if.no.acl.found (false) */
    uint32_t watch_interval_ms;    /* AZ4 (1000; 0: no watch thread) */
    void (*log)(const char *line); /* reloads and their failures (NULL: silent) */
};

struct authorizer;
struct authorizer_cache;

/* Loads the directory's ACLs and starts the watch. 0; RT_E_CORRUPT / -errno (err says the file,
 * offset and reason); RT_E_INVALID_ARGUMENT for a bad super-user list. */
int authorizer_open(const struct authorizer_options *o, struct authorizer **out, char *err,
                    size_t errlen);
void authorizer_close(struct authorizer *az);

/* AC3 with super users, through `cache` when not NULL (AZ3). */
bool authorizer_check(struct authorizer *az, struct authorizer_cache *cache, const char *principal,
                      const char *host, uint8_t type, const char *name, size_t name_len,
                      uint8_t op);
/* acl_authorize_any with super users (uncached: InitProducerId only). */
bool authorizer_check_any(struct authorizer *az, const char *principal, const char *host,
                          uint8_t type, uint8_t op);
bool authorizer_is_super(const struct authorizer *az, const char *principal);

/* CreateAcls: adds the valid ones of `b[0..n)`, one save for all (AZ1). results[i] is 0,
 * RT_E_INVALID_ARGUMENT (AC5; why[i] says why) or the save's error for all. */
void authorizer_create(struct authorizer *az, const struct acl_binding *b, uint32_t n, int *results,
                       const char **why);
/* DeleteAcls / list: the bindings `f` matches, copied into `out` (initialised here); with
 * `remove`, also removed and saved (AZ1). 0, -ENOMEM or the save's error. */
int authorizer_select(struct authorizer *az, const struct acl_filter *f, bool remove,
                      struct acl_set *out);
/* Reloads acls.meta now if its signature changed (what the watch thread runs; AZ4). 1
 * reloaded, 0 unchanged, or an error (the set is kept). */
int authorizer_poll(struct authorizer *az);
uint64_t authorizer_generation(const struct authorizer *az);

struct authorizer_cache *authorizer_cache_new(void);
void authorizer_cache_free(struct authorizer_cache *c);

#endif /* RT_KAFKA_AUTHORIZER_H */
