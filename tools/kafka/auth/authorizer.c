/*
 * authorizer.c — the running authorizer (authorizer.h: AZ1-AZ4). The set is read under a
 * rwlock; changes are made on a copy, saved, then swapped with the generation bumped; each
 * connection's cache is a direct-mapped table of AUTHORIZER_CACHE_ENTRIES answers. A cache hit
 * costs one hash of the name, one generation load and two compares: O(1) in the number of
 * ACLs (bench: test_kafka_acl's micro bench prints checks/s and ns per check).
 */
#include "tools/kafka/auth/authorizer.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/ringtail.h"
#include "tools/kafka/auth/acl_store.h"

struct authorizer {
    char dir[4096];
    bool allow_if_no_acl;
    char *super[AUTHORIZER_SUPER_USERS_MAX];
    uint32_t super_count;
    void (*log)(const char *line);
    pthread_rwlock_t lock;  /* the set (AZ2) */
    pthread_mutex_t change; /* one change at a time: copy, save, swap (AZ1) */
    struct acl_set set;
    struct acl_store_sig sig; /* of the file the set was last loaded from or saved to */
    _Atomic uint64_t generation;
    /* AZ4 */
    uint32_t watch_ms;
    pthread_t watch;
    bool watching;
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
    bool stop;
};

struct cache_entry {
    uint64_t generation; /* 0: empty (generations start at 1) */
    uint8_t type, op, allowed;
    uint16_t name_len;
    char name[AUTHORIZER_CACHE_NAME_MAX];
};

struct authorizer_cache {
    atomic_flag busy; /* AZ3 */
    char principal[256];
    struct cache_entry e[AUTHORIZER_CACHE_ENTRIES];
};

static void logf_(struct authorizer *az, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(struct authorizer *az, const char *fmt, ...)
{
    if (!az->log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    az->log(line);
}

static int parse_super(struct authorizer *az, const char *list)
{
    if (!list)
        return 0;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (*p == ' ')) {
            p++;
            n--;
        }
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n > 0) {
            const char *colon = memchr(p, ':', n);
            if (!colon || colon == p || colon == p + n - 1 ||
                az->super_count == AUTHORIZER_SUPER_USERS_MAX || n >= 256)
                return RT_E_INVALID_ARGUMENT;
            if (!(az->super[az->super_count] = strndup(p, n)))
                return -ENOMEM;
            az->super_count++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

bool authorizer_is_super(const struct authorizer *az, const char *principal)
{
    for (uint32_t i = 0; i < az->super_count; i++)
        if (strcmp(az->super[i], principal) == 0)
            return true;
    return false;
}

/* Swaps `next` in (AZ1: after it was saved or loaded); `next` gets the old set. */
static void swap_in(struct authorizer *az, struct acl_set *next)
{
    pthread_rwlock_wrlock(&az->lock);
    struct acl_set old = az->set;
    az->set = *next;
    *next = old;
    atomic_fetch_add_explicit(&az->generation, 1, memory_order_release);
    pthread_rwlock_unlock(&az->lock);
}

int authorizer_poll(struct authorizer *az)
{
    pthread_mutex_lock(&az->change);
    struct acl_store_sig sig;
    int rc = acl_store_stat(az->dir, &sig);
    if (rc == 0 && memcmp(&sig, &az->sig, sizeof(sig)) == 0) {
        pthread_mutex_unlock(&az->change);
        return 0;
    }
    struct acl_set next;
    char err[512] = "";
    if (rc == 0)
        rc = acl_store_load(az->dir, &next, err, sizeof(err));
    if (rc) {
        logf_(az, "ACLs not reloaded, the running ones are kept: %s", err[0] ? err : strerror(-rc));
        az->sig = sig; /* logged once per version of the file */
        pthread_mutex_unlock(&az->change);
        return rc;
    }
    az->sig = sig;
    uint32_t n = next.count;
    swap_in(az, &next);
    acl_set_free(&next);
    pthread_mutex_unlock(&az->change);
    logf_(az, "ACLs reloaded from %s/%s: %u bindings", az->dir, ACL_STORE_FILE, n);
    return 1;
}

static void *watch_main(void *arg)
{
    struct authorizer *az = arg;
    pthread_mutex_lock(&az->watch_lock);
    while (!az->stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        uint64_t ns = (uint64_t)t.tv_nsec + (uint64_t)az->watch_ms * 1000000u;
        t.tv_sec += (time_t)(ns / 1000000000u);
        t.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&az->watch_cond, &az->watch_lock, &t);
        if (az->stop)
            break;
        pthread_mutex_unlock(&az->watch_lock);
        authorizer_poll(az);
        pthread_mutex_lock(&az->watch_lock);
    }
    pthread_mutex_unlock(&az->watch_lock);
    return NULL;
}

int authorizer_open(const struct authorizer_options *o, struct authorizer **out, char *err,
                    size_t errlen)
{
    if (!o || !o->dir || strlen(o->dir) >= sizeof(((struct authorizer *)0)->dir))
        return RT_E_INVALID_ARGUMENT;
    struct authorizer *az = calloc(1, sizeof(*az));
    if (!az)
        return -ENOMEM;
    snprintf(az->dir, sizeof(az->dir), "%s", o->dir);
    az->allow_if_no_acl = o->allow_if_no_acl;
    az->log = o->log;
    az->watch_ms = o->watch_interval_ms;
    pthread_rwlock_init(&az->lock, NULL);
    pthread_mutex_init(&az->change, NULL);
    pthread_mutex_init(&az->watch_lock, NULL);
    pthread_cond_init(&az->watch_cond, NULL);
    atomic_init(&az->generation, 1);
    int rc = parse_super(az, o->super_users);
    if (rc) {
        snprintf(err, errlen, "--super-users: expected Type:name;Type:name (at most %d)",
                 AUTHORIZER_SUPER_USERS_MAX);
        authorizer_close(az);
        return rc;
    }
    rc = acl_store_stat(az->dir, &az->sig);
    if (!rc)
        rc = acl_store_load(az->dir, &az->set, err, errlen);
    if (rc) {
        authorizer_close(az);
        return rc;
    }
    if (az->watch_ms) {
        rc = -pthread_create(&az->watch, NULL, watch_main, az);
        if (rc) {
            snprintf(err, errlen, "cannot start the ACL watch thread: %s", strerror(-rc));
            authorizer_close(az);
            return rc;
        }
        az->watching = true;
    }
    *out = az;
    return 0;
}

void authorizer_close(struct authorizer *az)
{
    if (!az)
        return;
    if (az->watching) {
        pthread_mutex_lock(&az->watch_lock);
        az->stop = true;
        pthread_cond_signal(&az->watch_cond);
        pthread_mutex_unlock(&az->watch_lock);
        pthread_join(az->watch, NULL);
    }
    for (uint32_t i = 0; i < az->super_count; i++)
        free(az->super[i]);
    acl_set_free(&az->set);
    pthread_cond_destroy(&az->watch_cond);
    pthread_mutex_destroy(&az->watch_lock);
    pthread_mutex_destroy(&az->change);
    pthread_rwlock_destroy(&az->lock);
    free(az);
}

uint64_t authorizer_generation(const struct authorizer *az)
{
    return atomic_load_explicit(&az->generation, memory_order_acquire);
}

/* The decision itself (AC3 with super users); *gen gets the generation it was made at. */
static bool decide(struct authorizer *az, const struct acl_request *rq, uint64_t *gen)
{
    if (authorizer_is_super(az, rq->principal)) {
        *gen = authorizer_generation(az);
        return true;
    }
    pthread_rwlock_rdlock(&az->lock); /* AZ2 */
    *gen = atomic_load_explicit(&az->generation, memory_order_relaxed);
    bool ok = acl_authorize(&az->set, rq, az->allow_if_no_acl);
    pthread_rwlock_unlock(&az->lock);
    return ok;
}

static uint32_t hash_of(uint8_t type, uint8_t op, const char *name, size_t len)
{
    uint32_t h = 2166136261u ^ ((uint32_t)type << 8 | op);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    return h ^ (h >> 15);
}

static bool entry_is(const struct cache_entry *e, uint64_t gen, uint8_t type, uint8_t op,
                     const char *name, size_t len)
{
    return e->generation == gen && e->type == type && e->op == op && e->name_len == len &&
           memcmp(e->name, name, len) == 0;
}

bool authorizer_check(struct authorizer *az, struct authorizer_cache *c, const char *principal,
                      const char *host, uint8_t type, const char *name, size_t name_len, uint8_t op)
{
    struct acl_request rq = {principal, host, type, name, name_len, op};
    uint64_t gen;
    if (!c || name_len > AUTHORIZER_CACHE_NAME_MAX ||
        atomic_flag_test_and_set_explicit(&c->busy, memory_order_acquire))
        return decide(az, &rq, &gen);
    /* AZ3: the cache is ours until the flag is cleared. */
    if (strncmp(c->principal, principal, sizeof(c->principal)) != 0) {
        memset(c->e, 0, sizeof(c->e)); /* a new principal (SASL re-authentication) */
        snprintf(c->principal, sizeof(c->principal), "%s", principal);
    }
    /* Two-way: a question may sit in either of two entries, so two hot names that collide in
     * one do not evict each other on every check. */
    uint32_t h = hash_of(type, op, name, name_len);
    struct cache_entry *e1 = &c->e[h % AUTHORIZER_CACHE_ENTRIES];
    struct cache_entry *e2 = &c->e[(h >> 16) % AUTHORIZER_CACHE_ENTRIES];
    uint64_t now = authorizer_generation(az);
    bool ok;
    if (entry_is(e1, now, type, op, name, name_len)) {
        ok = e1->allowed;
    } else if (entry_is(e2, now, type, op, name, name_len)) {
        ok = e2->allowed;
    } else {
        /* Fill a stale entry if there is one, else the second, moving the first there. */
        struct cache_entry *e = e1;
        if (e1->generation == now && e1 != e2) {
            if (e2->generation == now)
                *e2 = *e1;
            else
                e = e2;
        }
        ok = decide(az, &rq, &gen);
        e->generation = gen;
        e->type = type;
        e->op = op;
        e->allowed = ok;
        e->name_len = (uint16_t)name_len;
        memcpy(e->name, name, name_len);
    }
    atomic_flag_clear_explicit(&c->busy, memory_order_release);
    return ok;
}

bool authorizer_check_any(struct authorizer *az, const char *principal, const char *host,
                          uint8_t type, uint8_t op)
{
    if (authorizer_is_super(az, principal))
        return true;
    pthread_rwlock_rdlock(&az->lock);
    bool ok = acl_authorize_any(&az->set, principal, host, type, op, az->allow_if_no_acl);
    pthread_rwlock_unlock(&az->lock);
    return ok;
}

/* AZ1: the running set with `edit` applied, saved, swapped in. */
static int change_and_save(struct authorizer *az, struct acl_set *next)
{
    char err[512] = "";
    int rc = acl_store_save(az->dir, next, err, sizeof(err));
    if (rc) {
        logf_(az, "ACL change not applied: %s", err);
        return rc;
    }
    acl_store_stat(az->dir, &az->sig); /* our own write is not a change to reload */
    swap_in(az, next);
    return 0;
}

void authorizer_create(struct authorizer *az, const struct acl_binding *b, uint32_t n, int *results,
                       const char **why)
{
    pthread_mutex_lock(&az->change);
    struct acl_set next;
    pthread_rwlock_rdlock(&az->lock);
    int rc = acl_set_copy(&next, &az->set);
    pthread_rwlock_unlock(&az->lock);
    bool added = false;
    for (uint32_t i = 0; i < n; i++) {
        why[i] = rc ? "out of memory" : acl_binding_invalid(&b[i]);
        results[i] = rc ? rc : why[i] ? RT_E_INVALID_ARGUMENT : 0;
        if (results[i])
            continue;
        int a = acl_set_add(&next, &b[i]);
        if (a < 0) {
            results[i] = a;
            why[i] = "out of memory";
        } else if (a > 0 && next.count > ACL_STORE_COUNT_MAX) {
            results[i] = RT_E_INVALID_ARGUMENT;
            why[i] = "too many ACLs (at most 100000)";
            struct acl_filter f = {b[i].resource_type, b[i].pattern_type, b[i].operation,
                                   b[i].permission,    b[i].name,         b[i].principal,
                                   b[i].host};
            acl_set_remove(&next, &f, NULL);
        } else {
            added = added || a > 0;
        }
    }
    if (!rc && added) {
        rc = change_and_save(az, &next);
        if (rc)
            for (uint32_t i = 0; i < n; i++)
                if (results[i] == 0) {
                    results[i] = rc;
                    why[i] = "the ACLs could not be saved";
                }
    }
    acl_set_free(&next);
    pthread_mutex_unlock(&az->change);
}

int authorizer_select(struct authorizer *az, const struct acl_filter *f, bool remove,
                      struct acl_set *out)
{
    acl_set_init(out);
    if (!remove) { /* DescribeAcls runs on a loop thread: never behind a change's fsync (AZ2) */
        int rc = 0;
        pthread_rwlock_rdlock(&az->lock);
        for (uint32_t i = 0; i < az->set.count && rc == 0; i++)
            if (acl_filter_matches(f, &az->set.v[i]) && acl_set_push(out, &az->set.v[i]) < 0)
                rc = -ENOMEM;
        pthread_rwlock_unlock(&az->lock);
        if (rc)
            acl_set_free(out);
        return rc;
    }
    pthread_mutex_lock(&az->change);
    struct acl_set next;
    pthread_rwlock_rdlock(&az->lock);
    int rc = acl_set_copy(&next, &az->set);
    pthread_rwlock_unlock(&az->lock);
    if (!rc) {
        int n = acl_set_remove(&next, f, out);
        rc = n < 0 ? n : 0;
        if (!rc && remove && n > 0)
            rc = change_and_save(az, &next);
    }
    if (rc)
        acl_set_free(out);
    acl_set_free(&next);
    pthread_mutex_unlock(&az->change);
    return rc;
}

struct authorizer_cache *authorizer_cache_new(void)
{
    struct authorizer_cache *c = calloc(1, sizeof(*c));
    if (c)
        atomic_flag_clear(&c->busy);
    return c;
}

void authorizer_cache_free(struct authorizer_cache *c)
{
    free(c);
}
