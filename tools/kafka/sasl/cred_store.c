/*
 * cred_store.c — the SCRAM credentials file and its in-memory copy (cred_store.h). The file
 * (docs/format.md section S; big-endian integers):
 *
 *   offset  size  field
 *   0       8     magic "RTSCRAM1"
 *   8       4     entry count N (0..CRED_ENTRIES_MAX)
 *   12      4     reserved, 0
 *   16      ...   N entries, ordered by (user bytes, mechanism), no two the same
 *   end-32  32    SHA-256 of every byte before it
 *
 *   entry:  mechanism u8 (1 SCRAM-SHA-256, 2 SCRAM-SHA-512: Kafka's ids), user length u8
 *           (1..255), user bytes (no NUL), iterations u32 (4096..16384), salt length u8
 *           (1..64), salt, StoredKey (K bytes), ServerKey (K bytes); K = 32 or 64 by mechanism
 *
 * It writes only through CS1's temp-fsync-rename-fsync and never holds the directory lock
 * (CS2) longer than one read-modify-write.
 */
#include "tools/kafka/sasl/cred_store.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/ringtail.h"

#define MAGIC        "RTSCRAM1"
#define HEADER_BYTES 16
#define TRAILER      32
_Static_assert(sizeof(MAGIC) - 1 == 8, "magic is 8 bytes");

struct cred_entry {
    char user[SCRAM_USER_MAX + 1];
    struct scram_credential cred;
};

struct cred_set {
    struct cred_entry *e;
    size_t n, cap;
};

struct cred_store {
    pthread_mutex_t lock;
    char dir[4096];
    char path[4200];
    struct cred_set set;
    bool have_file; /* the snapshot below is of a file that existed */
    bool corrupt;   /* CS4 */
    bool error_new; /* cred_store_take_error has not told it yet */
    char error[CRED_ERROR_MAX];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

static void set_free(struct cred_set *s)
{
    if (s->e)
        OPENSSL_cleanse(s->e, s->cap * sizeof(*s->e));
    free(s->e);
    memset(s, 0, sizeof(*s));
}

static int entry_cmp(const char *ua, int ma, const char *ub, int mb)
{
    int c = strcmp(ua, ub);
    return c ? c : (ma > mb) - (ma < mb);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

__attribute__((format(printf, 5, 6))) static int bad(char *err, size_t cap, const char *path,
                                                     size_t off, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (err && cap)
        snprintf(err, cap, "%s: offset %zu: %s", path, off, what);
    return RT_E_CORRUPT;
}

/* Parses a whole file image into *out (CS4). */
static int parse(const uint8_t *b, size_t len, const char *path, struct cred_set *out, char *err,
                 size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (len < HEADER_BYTES + TRAILER)
        return bad(err, cap, path, len, "file too short (%zu bytes; at least %d)", len,
                   HEADER_BYTES + TRAILER);
    if (memcmp(b, MAGIC, 8) != 0)
        return bad(err, cap, path, 0, "bad magic (not a ringtail SCRAM credentials file)");
    uint32_t n = get_u32(b + 8);
    if (n > CRED_ENTRIES_MAX)
        return bad(err, cap, path, 8, "entry count %u over %d", n, CRED_ENTRIES_MAX);
    if (get_u32(b + 12) != 0)
        return bad(err, cap, path, 12, "reserved field is not 0");
    out->e = n ? calloc(n, sizeof(*out->e)) : NULL;
    if (n && !out->e)
        return -ENOMEM;
    out->cap = n;
    size_t at = HEADER_BYTES, end = len - TRAILER;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        size_t start = at;
        struct cred_entry *e = &out->e[i];
        if (end - at < 2) {
            rc = bad(err, cap, path, at, "entry %u truncated", i);
            break;
        }
        uint8_t mech = b[at], ul = b[at + 1];
        size_t k = scram_key_len(mech);
        if (!k) {
            rc = bad(err, cap, path, at, "entry %u: unknown mechanism %u", i, mech);
            break;
        }
        if (ul == 0) {
            rc = bad(err, cap, path, at + 1, "entry %u: empty user name", i);
            break;
        }
        at += 2;
        if (end - at < (size_t)ul + 5) {
            rc = bad(err, cap, path, at, "entry %u truncated", i);
            break;
        }
        if (memchr(b + at, 0, ul)) {
            rc = bad(err, cap, path, at, "entry %u: NUL in the user name", i);
            break;
        }
        memcpy(e->user, b + at, ul);
        e->user[ul] = '\0';
        at += ul;
        uint32_t iters = get_u32(b + at);
        uint8_t sl8 = b[at + 4];
        if (!scram_params_valid(mech, iters, sl8)) { /* SCR2 */
            rc = bad(err, cap, path, at, "entry %u: iterations %u or salt length %u out of range",
                     i, iters, sl8);
            break;
        }
        at += 5;
        if (end - at < (size_t)sl8 + 2 * k) {
            rc = bad(err, cap, path, at, "entry %u truncated", i);
            break;
        }
        e->cred.mech = mech;
        e->cred.iterations = iters;
        e->cred.salt_len = sl8;
        memcpy(e->cred.salt, b + at, sl8);
        at += sl8;
        memcpy(e->cred.stored_key, b + at, k);
        memcpy(e->cred.server_key, b + at + k, k);
        at += 2 * k;
        if (i > 0 && entry_cmp(out->e[i - 1].user, out->e[i - 1].cred.mech, e->user, mech) >= 0)
            rc = bad(err, cap, path, start, "entry %u: out of order or repeated ('%s', %s)", i,
                     e->user, scram_mech_name(mech));
        out->n = i + 1;
    }
    if (rc == 0 && at != end)
        rc = bad(err, cap, path, at, "%zu bytes after the last entry", end - at);
    /* The structure first (it names the bad byte), then the trailer (damage inside a key or a
     * salt shows only there). */
    uint8_t sum[32];
    unsigned int sl = 0;
    if (rc == 0 && (EVP_Digest(b, len - TRAILER, sum, &sl, EVP_sha256(), NULL) != 1 || sl != 32))
        rc = -ENOMEM;
    if (rc == 0 && memcmp(sum, b + len - TRAILER, TRAILER) != 0)
        rc = bad(err, cap, path, len - TRAILER,
                 "SHA-256 trailer does not match bytes 0..%zu (damage inside them)",
                 len - TRAILER - 1);
    if (rc)
        set_free(out);
    return rc;
}

/* Reads and parses the file; *st gets its fstat. -ENOENT when absent. */
static int read_file(const char *path, struct cred_set *out, struct stat *st, char *err, size_t cap)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    uint8_t *buf = NULL;
    if (fstat(fd, st) != 0) {
        rc = -errno;
        goto out;
    }
    size_t max = HEADER_BYTES + TRAILER + (size_t)CRED_ENTRIES_MAX * (2 + 255 + 5 + 64 + 128);
    if ((uint64_t)st->st_size > max) {
        rc = bad(err, cap, path, max, "file larger than any credentials file (%lld bytes)",
                 (long long)st->st_size);
        goto out;
    }
    size_t len = (size_t)st->st_size;
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : bad(err, cap, path, got, "file shrank while read");
            goto out;
        }
        got += (size_t)r;
    }
    rc = parse(buf, len, path, out, err, cap);
out:
    if (buf)
        OPENSSL_cleanse(buf, st->st_size > 0 ? (size_t)st->st_size : 0);
    free(buf);
    close(fd);
    return rc;
}

static bool same_file(const struct cred_store *s, const struct stat *st)
{
    return s->have_file && s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
           s->mtime.tv_sec == st->st_mtim.tv_sec && s->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           s->ctime.tv_sec == st->st_ctim.tv_sec && s->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static void remember(struct cred_store *s, const struct stat *st)
{
    s->have_file = true;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtime = st->st_mtim;
    s->ctime = st->st_ctim;
}

/* CS3: re-reads the file when it changed. Under s->lock. */
static int refresh(struct cred_store *s)
{
    struct stat st;
    if (stat(s->path, &st) != 0) {
        if (errno != ENOENT)
            return -errno;
        if (s->have_file || s->corrupt) { /* removed: no credential */
            set_free(&s->set);
            s->have_file = false;
            s->corrupt = false;
        }
        return 0;
    }
    if (same_file(s, &st))
        return s->corrupt ? RT_E_CORRUPT : 0;
    struct cred_set fresh;
    char err[CRED_ERROR_MAX];
    int rc = read_file(s->path, &fresh, &st, err, sizeof(err));
    if (rc == -ENOENT)
        return refresh(s);
    if (rc == RT_E_CORRUPT) { /* CS4: serve nothing */
        set_free(&s->set);
        remember(s, &st);
        s->corrupt = true;
        s->error_new = true;
        snprintf(s->error, sizeof(s->error), "%s", err);
        return rc;
    }
    if (rc)
        return rc;
    set_free(&s->set);
    s->set = fresh;
    s->corrupt = false;
    remember(s, &st);
    return 0;
}

int cred_store_open(const char *dir, struct cred_store **out, char *err, size_t err_cap)
{
    struct cred_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir)) {
        free(s);
        return -ENAMETOOLONG;
    }
    snprintf(s->path, sizeof(s->path), "%s/%s", dir, CRED_FILE_NAME);
    pthread_mutex_init(&s->lock, NULL);
    int rc = refresh(s);
    if (rc) {
        if (rc == RT_E_CORRUPT && err && err_cap)
            snprintf(err, err_cap, "%s", s->error);
        cred_store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void cred_store_close(struct cred_store *s)
{
    if (!s)
        return;
    set_free(&s->set);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static struct cred_entry *find(struct cred_set *set, const char *user, int mech, size_t *pos)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = entry_cmp(set->e[mid].user, set->e[mid].cred.mech, user, mech);
        if (c == 0) {
            *pos = mid;
            return &set->e[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return NULL;
}

int cred_store_lookup(struct cred_store *s, const char *user, int mech,
                      struct scram_credential *out)
{
    pthread_mutex_lock(&s->lock);
    int rc = refresh(s);
    if (rc == 0) {
        size_t pos;
        const struct cred_entry *e = find(&s->set, user, mech, &pos);
        if (e)
            *out = e->cred;
        else
            rc = -ENOENT;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

bool cred_store_take_error(struct cred_store *s, char *err, size_t cap)
{
    pthread_mutex_lock(&s->lock);
    bool any = s->error_new;
    if (any)
        snprintf(err, cap, "%s", s->error);
    s->error_new = false;
    pthread_mutex_unlock(&s->lock);
    return any;
}

int cred_store_list(struct cred_store *s, cred_visit_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->lock);
    int rc = refresh(s);
    for (size_t i = 0; rc == 0 && i < s->set.n; i++)
        rc = fn(ctx, s->set.e[i].user, &s->set.e[i].cred);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* ---- writing (CS1, CS2) ---- */

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int write_set(struct cred_store *s, int dfd, const struct cred_set *set)
{
    size_t len = HEADER_BYTES + TRAILER;
    for (size_t i = 0; i < set->n; i++)
        len += 2 + strlen(set->e[i].user) + 5 + set->e[i].cred.salt_len +
               2 * scram_key_len(set->e[i].cred.mech);
    uint8_t *b = calloc(1, len);
    if (!b)
        return -ENOMEM;
    memcpy(b, MAGIC, 8);
    put_u32(b + 8, (uint32_t)set->n);
    size_t at = HEADER_BYTES;
    for (size_t i = 0; i < set->n; i++) {
        const struct cred_entry *e = &set->e[i];
        size_t ul = strlen(e->user), k = scram_key_len(e->cred.mech);
        b[at++] = e->cred.mech;
        b[at++] = (uint8_t)ul;
        memcpy(b + at, e->user, ul);
        at += ul;
        put_u32(b + at, e->cred.iterations);
        b[at + 4] = e->cred.salt_len;
        at += 5;
        memcpy(b + at, e->cred.salt, e->cred.salt_len);
        at += e->cred.salt_len;
        memcpy(b + at, e->cred.stored_key, k);
        memcpy(b + at + k, e->cred.server_key, k);
        at += 2 * k;
    }
    unsigned int sl = 0;
    int rc = EVP_Digest(b, at, b + at, &sl, EVP_sha256(), NULL) == 1 && sl == 32 ? 0 : -ENOMEM;
    char tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->path);
    int fd = rc ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = -errno;
    if (rc == 0)
        rc = write_all(fd, b, len);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, s->path) != 0)
        rc = -errno;
    if (rc == 0 && fsync(dfd) != 0)
        rc = -errno;
    if (rc && fd >= 0)
        unlink(tmp);
    OPENSSL_cleanse(b, len);
    free(b);
    return rc;
}

/* Runs one read-modify-write under the directory's flock (CS2). */
static int modify(struct cred_store *s, const char *user, int mech,
                  const struct scram_credential *c)
{
    size_t ul = strlen(user);
    if (ul == 0 || ul > SCRAM_USER_MAX)
        return RT_E_INVALID_ARGUMENT;
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    if (flock(dfd, LOCK_EX) != 0) {
        int e = -errno;
        close(dfd);
        return e;
    }
    pthread_mutex_lock(&s->lock);
    int rc = refresh(s);
    size_t pos = 0;
    if (rc == 0 && c) { /* upsert */
        struct cred_entry *e = find(&s->set, user, c->mech, &pos);
        if (!e) {
            if (s->set.n >= CRED_ENTRIES_MAX)
                rc = RT_E_INVALID_ARGUMENT;
            else if (s->set.n == s->set.cap) {
                size_t cap = s->set.cap ? s->set.cap * 2 : 8;
                struct cred_entry *ne = calloc(cap, sizeof(*ne));
                if (!ne)
                    rc = -ENOMEM;
                else {
                    if (s->set.n)
                        memcpy(ne, s->set.e, s->set.n * sizeof(*ne));
                    OPENSSL_cleanse(s->set.e, s->set.cap * sizeof(*ne));
                    free(s->set.e);
                    s->set.e = ne;
                    s->set.cap = cap;
                }
            }
            if (rc == 0) {
                memmove(&s->set.e[pos + 1], &s->set.e[pos], (s->set.n - pos) * sizeof(*e));
                e = &s->set.e[pos];
                memset(e, 0, sizeof(*e));
                memcpy(e->user, user, ul + 1);
                s->set.n++;
            }
        }
        if (rc == 0)
            e->cred = *c;
    } else if (rc == 0) { /* remove */
        bool any = false;
        for (size_t i = 0; i < s->set.n;) {
            if (strcmp(s->set.e[i].user, user) == 0 &&
                (mech == 0 || s->set.e[i].cred.mech == mech)) {
                memmove(&s->set.e[i], &s->set.e[i + 1], (s->set.n - i - 1) * sizeof(s->set.e[0]));
                s->set.n--;
                any = true;
            } else
                i++;
        }
        if (!any)
            rc = -ENOENT;
    }
    if (rc == 0)
        rc = write_set(s, dfd, &s->set);
    if (rc == 0) {
        struct stat st;
        if (stat(s->path, &st) == 0)
            remember(s, &st);
        else
            s->have_file = false; /* the next lookup reads it again */
    } else if (rc != RT_E_CORRUPT) {
        s->have_file = false; /* memory may be ahead of the file: read it again */
    }
    pthread_mutex_unlock(&s->lock);
    flock(dfd, LOCK_UN);
    close(dfd);
    return rc;
}

int cred_store_upsert(struct cred_store *s, const char *user, const struct scram_credential *c)
{
    if (!c || !scram_params_valid(c->mech, c->iterations, c->salt_len))
        return RT_E_INVALID_ARGUMENT;
    return modify(s, user, c->mech, c);
}

int cred_store_remove(struct cred_store *s, const char *user, int mech)
{
    if (mech != 0 && !scram_key_len(mech))
        return RT_E_INVALID_ARGUMENT;
    return modify(s, user, mech, NULL);
}

int cred_file_parse_check(const uint8_t *buf, size_t len, const char *path, char *err,
                          size_t err_cap)
{
    struct cred_set set;
    int rc = parse(buf, len, path, &set, err, err_cap);
    if (rc == 0)
        set_free(&set);
    return rc;
}

int cred_file_check(const char *dir, char *err, size_t err_cap)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, CRED_FILE_NAME);
    struct cred_set set;
    struct stat st;
    int rc = read_file(path, &set, &st, err, err_cap);
    if (rc == 0)
        set_free(&set);
    return rc;
}
