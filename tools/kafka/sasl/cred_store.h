/*
 * cred_store.h — the broker's SCRAM credentials: one file in the data directory,
 * `scram-credentials` (docs/format.md, section S: normative), holding per user and mechanism
 * what Kafka stores (salt, iterations, StoredKey, ServerKey; never the password). `ringtail user`
 * and the broker (SaslAuthenticate, Describe/AlterUserScramCredentials) share it; either may
 * write while the other runs.
 *
 * Invariants:
 *   CS1  A write is durable before it returns: the whole file is written to
 *        `scram-credentials.tmp`, fsynced, renamed over the old one, and the directory fsynced;
 *        a crash leaves the old file or the new one, never a mix.
 *   CS2  Writers serialise on an exclusive flock of the data directory itself and re-read the
 *        file under it, so `ringtail user` and a running broker never lose each other's change.
 *   CS3  A lookup first compares the file's (inode, size, mtime, ctime) with those it last
 *        read (one stat) and re-reads it when they differ: a change is seen by the next
 *        authentication, without a restart or a signal.
 *   CS4  A file that does not check (magic, lengths, order, SCRAM parameters, the SHA-256
 *        trailer) is reported with its path and the offset of the first bad byte and is not
 *        served: the store then holds no credential at all (every authentication fails) until
 *        a good file replaces it.
 * Thread-safe (one mutex); it never blocks on the network. Lookups cost O(log n) after the stat.
 */
#ifndef RT_KAFKA_CRED_STORE_H
#define RT_KAFKA_CRED_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/sasl/scram.h"

#define CRED_FILE_NAME   "scram-credentials"
#define CRED_ENTRIES_MAX 65536
#define CRED_ERROR_MAX   512

struct cred_store;

/* Opens the store of data directory `dir` and reads its file (absent: no credential yet).
 * 0; RT_E_CORRUPT with `err` ("PATH: offset N: what", CS4); -ENOMEM; -errno. */
int cred_store_open(const char *dir, struct cred_store **out, char *err, size_t err_cap);
void cred_store_close(struct cred_store *s);

/* The credential of (user, mech) into *out, re-reading the file if it changed (CS3).
 * 0; -ENOENT (no such credential); RT_E_CORRUPT (CS4: the file is damaged). */
int cred_store_lookup(struct cred_store *s, const char *user, int mech,
                      struct scram_credential *out);
/* The damage CS4 found since the last call, once (err gets "PATH: offset N: what"); false if
 * none is new. For the broker's log. */
bool cred_store_take_error(struct cred_store *s, char *err, size_t cap);

/* Calls fn for every credential, ordered by user then mechanism (re-reading first, CS3). Stops
 * at fn's first nonzero answer and returns it; RT_E_CORRUPT for a damaged file. */
typedef int (*cred_visit_fn)(void *ctx, const char *user, const struct scram_credential *c);
int cred_store_list(struct cred_store *s, cred_visit_fn fn, void *ctx);

/* Adds or replaces the credential of (user, c->mech), durably (CS1, CS2). 0;
 * RT_E_INVALID_ARGUMENT (a user of 0 or more than SCRAM_USER_MAX bytes or with a NUL, SCR2,
 * CRED_ENTRIES_MAX reached); RT_E_CORRUPT (the file on disk is damaged: nothing is written
 * over it); -errno. */
int cred_store_upsert(struct cred_store *s, const char *user, const struct scram_credential *c);
/* Removes (user, mech), or every mechanism of user when mech is 0, durably. 0; -ENOENT (none
 * was there); RT_E_CORRUPT; -errno. */
int cred_store_remove(struct cred_store *s, const char *user, int mech);

/* Checks a credentials file's bytes (the parser open, lookups and the check share; the fuzz
 * target's entry). 0, RT_E_CORRUPT with err ("PATH: offset N: what", path as given), -ENOMEM. */
int cred_file_parse_check(const uint8_t *buf, size_t len, const char *path, char *err,
                          size_t err_cap);
/* Checks the file of `dir` without a store (`ringtail verify`). 0 (good), -ENOENT (no file),
 * RT_E_CORRUPT with err, -errno. */
int cred_file_check(const char *dir, char *err, size_t err_cap);

#endif /* RT_KAFKA_CRED_STORE_H */
