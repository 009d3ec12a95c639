/*
 * test_kafka_acl.c — the authorizer (tools/kafka/auth/, handlers/authorize.c): Kafka's matcher
 * (acl.h AC1-AC5: literal, prefixed and "*" patterns, User:*, hosts, DENY winning, the
 * DESCRIBE and DESCRIBE_CONFIGS implications, allow.everyone.if.no.acl.found both ways),
 * acls.meta (acl_store.h AS1-AS2: round trip, a corrupt byte named by its offset and nothing
 * applied), the running authorizer (authorizer.h AZ1-AZ4: super users, create/delete saved and
 * seen, a file change picked up by mtime, a corrupt file keeping the running set, cache
 * invalidation by generation) and kafka_authorize over sessions whose principal is set here
 * (KZ1, KZ2). Ends with a micro bench of a cached check (checks/s and ns per check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers/test_util.h"
#include "tools/kafka/auth/acl_store.h"
#include "tools/kafka/auth/authorizer.h"
#include "tools/kafka/handlers/authorize.h"
#include "tools/kafka/handlers/handle.h"

static struct acl_binding B(uint8_t type, uint8_t pattern, const char *name, const char *who,
                            uint8_t op, uint8_t perm, const char *host) {
    return (struct acl_binding){type, pattern, op, perm, (char *)name, (char *)who, (char *)host};
}

static bool
may(const struct acl_set *s, const char *who, const char *host, uint8_t type, const char *name,
    uint8_t op, bool allow_if_no_acl)
{
    struct acl_request rq = {who, host, type, name, strlen(name), op};
    return acl_authorize(s, &rq, allow_if_no_acl);
}

#define T     ACL_RESOURCE_TOPIC
#define G     ACL_RESOURCE_GROUP
#define LIT   ACL_PATTERN_LITERAL
#define PRE   ACL_PATTERN_PREFIXED
#define ALLOW ACL_PERM_ALLOW
#define DENY  ACL_PERM_DENY

/* AC1, AC2: literal, prefixed, "*" and User:*, hosts. */
static void test_patterns(void **state)
{
    (void)state;
    struct acl_set s;
    acl_set_init(&s);
    struct acl_binding b[] = {
        B(T, LIT, "orders", "User:alice", ACL_OP_READ, ALLOW, "*"),
        B(T, PRE, "logs-", "User:bob", ACL_OP_WRITE, ALLOW, "*"),
        B(T, LIT, "*", "User:carol", ACL_OP_READ, ALLOW, "*"),
        B(G, LIT, "g", "User:*", ACL_OP_READ, ALLOW, "*"),
        B(T, LIT, "hosted", "User:dave", ACL_OP_READ, ALLOW, "10.0.0.1"),
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
        assert_int_equal(acl_set_add(&s, &b[i]), 1);
    assert_int_equal(acl_set_add(&s, &b[0]), 0); /* a set: no duplicates */
    assert_true(may(&s, "User:alice", "1.2.3.4", T, "orders", ACL_OP_READ, false));
    assert_false(may(&s, "User:alice", "1.2.3.4", T, "orders2", ACL_OP_READ, false));
    assert_false(may(&s, "User:alice", "1.2.3.4", T, "orders", ACL_OP_WRITE, false));
    assert_false(may(&s, "User:alice", "1.2.3.4", G, "orders", ACL_OP_READ, false)); /* type */
    assert_true(may(&s, "User:bob", "h", T, "logs-1", ACL_OP_WRITE, false));
    assert_true(may(&s, "User:bob", "h", T, "logs-", ACL_OP_WRITE, false));
    assert_false(may(&s, "User:bob", "h", T, "logs", ACL_OP_WRITE, false));
    assert_true(may(&s, "User:carol", "h", T, "anything", ACL_OP_READ, false));
    assert_true(may(&s, "User:zed", "h", G, "g", ACL_OP_READ, false)); /* User:* */
    assert_false(may(&s, "User:zed", "h", G, "g2", ACL_OP_READ, false));
    assert_true(may(&s, "User:dave", "10.0.0.1", T, "hosted", ACL_OP_READ, false));
    assert_false(may(&s, "User:dave", "10.0.0.2", T, "hosted", ACL_OP_READ, false));
    acl_set_free(&s);
}

/* AC3 (DENY wins, no ACL found both ways) and AC4 (implications). */
static void test_deny_implications_default(void **state)
{
    (void)state;
    struct acl_set s;
    acl_set_init(&s);
    struct acl_binding b[] = {
        B(T, PRE, "", "User:*", ACL_OP_ALL, ALLOW, "*"),
        B(T, LIT, "secret", "User:eve", ACL_OP_READ, DENY, "*"),
        B(T, LIT, "w", "User:w", ACL_OP_WRITE, ALLOW, "*"),
        B(T, LIT, "c", "User:c", ACL_OP_ALTER_CONFIGS, ALLOW, "*"),
        B(T, LIT, "x", "User:x", ACL_OP_ALL, DENY, "*"),
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
        assert_int_equal(acl_set_add(&s, &b[i]), 1);
    assert_true(may(&s, "User:eve", "h", T, "public", ACL_OP_READ, false));
    assert_false(may(&s, "User:eve", "h", T, "secret", ACL_OP_READ, false));    /* DENY wins */
    assert_true(may(&s, "User:eve", "h", T, "secret", ACL_OP_DESCRIBE, false)); /* only READ */
    assert_false(may(&s, "User:x", "h", T, "x", ACL_OP_DESCRIBE, false));       /* DENY ALL */
    acl_set_free(&s);

    acl_set_init(&s);
    struct acl_binding c[] = {
        B(T, LIT, "w", "User:w", ACL_OP_WRITE, ALLOW, "*"),
        B(T, LIT, "c", "User:c", ACL_OP_ALTER_CONFIGS, ALLOW, "*"),
        B(T, LIT, "r", "User:r", ACL_OP_DESCRIBE, ALLOW, "*"),
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        assert_int_equal(acl_set_add(&s, &c[i]), 1);
    assert_true(may(&s, "User:w", "h", T, "w", ACL_OP_DESCRIBE, false)); /* WRITE => DESCRIBE */
    assert_false(may(&s, "User:w", "h", T, "w", ACL_OP_READ, false));
    assert_true(may(&s, "User:c", "h", T, "c", ACL_OP_DESCRIBE_CONFIGS, false));
    assert_false(may(&s, "User:c", "h", T, "c", ACL_OP_DESCRIBE, false));
    assert_false(may(&s, "User:r", "h", T, "r", ACL_OP_READ, false)); /* not the other way */
    /* No ACL names the resource: allow.everyone.if.no.acl.found decides. */
    assert_false(may(&s, "User:w", "h", T, "unnamed", ACL_OP_READ, false));
    assert_true(may(&s, "User:w", "h", T, "unnamed", ACL_OP_READ, true));
    /* ... but an ACL naming it for someone else closes it to everyone else. */
    assert_false(may(&s, "User:other", "h", T, "w", ACL_OP_WRITE, true));
    /* IDEMPOTENT_WRITE implied by WRITE on any topic (KIP-679). */
    assert_true(acl_authorize_any(&s, "User:w", "h", T, ACL_OP_WRITE, false));
    assert_false(acl_authorize_any(&s, "User:c", "h", T, ACL_OP_WRITE, false));
    acl_set_free(&s);
}

/* AC5 and filters (DescribeAcls, DeleteAcls). */
static void test_validity_and_filters(void **state)
{
    (void)state;
    struct acl_binding ok = B(T, LIT, "t", "User:a", ACL_OP_READ, ALLOW, "*");
    assert_null(acl_binding_invalid(&ok));
    struct acl_binding bad[] = {
        B(T, LIT, "t", "alice", ACL_OP_READ, ALLOW, "*"),
        B(T, ACL_PATTERN_MATCH, "t", "User:a", ACL_OP_READ, ALLOW, "*"),
        B(T, LIT, "t", "User:a", ACL_OP_ANY, ALLOW, "*"),
        B(T, LIT, "t", "User:a", ACL_OP_READ, ACL_PERM_ANY, "*"),
        B(ACL_RESOURCE_ANY, LIT, "t", "User:a", ACL_OP_READ, ALLOW, "*"),
        B(ACL_RESOURCE_CLUSTER, LIT, "c", "User:a", ACL_OP_ALTER, ALLOW, "*"),
        B(T, PRE, "*", "User:a", ACL_OP_READ, ALLOW, "*"),
        B(T, LIT, "", "User:a", ACL_OP_READ, ALLOW, "*"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_non_null(acl_binding_invalid(&bad[i]));
    struct acl_binding pre = B(T, PRE, "or", "User:a", ACL_OP_READ, ALLOW, "*");
    struct acl_filter any = {
        ACL_RESOURCE_ANY, ACL_PATTERN_ANY, ACL_OP_ANY, ACL_PERM_ANY, NULL, NULL, NULL};
    assert_true(acl_filter_matches(&any, &pre));
    struct acl_filter match = any;
    match.pattern_type = ACL_PATTERN_MATCH;
    match.name = "orders";
    assert_true(acl_filter_matches(&match, &pre));
    match.pattern_type = ACL_PATTERN_LITERAL;
    assert_false(acl_filter_matches(&match, &pre));
    struct acl_filter who = any;
    who.principal = "User:b";
    assert_false(acl_filter_matches(&who, &pre));
}

/* AS1, AS2: acls.meta round trip; a flipped byte is named by its offset and nothing applied. */
static void test_store(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct acl_set s, back;
    acl_set_init(&s);
    char err[600];
    assert_int_equal(acl_store_load(dir, &back, err, sizeof(err)), 0); /* missing: empty */
    assert_int_equal(back.count, 0);
    struct acl_binding a = B(T, PRE, "logs-", "User:bob", ACL_OP_WRITE, ALLOW, "*");
    struct acl_binding g = B(G, LIT, "g", "User:*", ACL_OP_READ, DENY, "10.0.0.1");
    acl_set_add(&s, &a);
    acl_set_add(&s, &g);
    assert_int_equal(acl_store_save(dir, &s, err, sizeof(err)), 0);
    assert_int_equal(acl_store_load(dir, &back, err, sizeof(err)), 0);
    assert_int_equal(back.count, 2);
    assert_true(acl_binding_equal(&back.v[0], &a));
    assert_true(acl_binding_equal(&back.v[1], &g));
    acl_set_free(&back);
    char *path = tu_path("%s/%s", dir, ACL_STORE_FILE);
    char *tmp = tu_path("%s/%s.tmp", dir, ACL_STORE_FILE);
    assert_false(fs_exists_for_test(tmp));
    free(tmp);
    tu_flip_byte(path, 20, 0x40);
    assert_int_equal(acl_store_load(dir, &back, err, sizeof(err)), RT_E_CORRUPT);
    assert_int_equal(back.count, 0);
    assert_non_null(strstr(err, "acls.meta: corrupt at byte offset 6: CRC mismatch"));
    /* A valid CRC over an invalid binding (AC5): its offset. */
    size_t len = 0;
    uint8_t *buf = NULL;
    struct acl_binding odd = B(T, LIT, "t", "nocolon", ACL_OP_READ, ALLOW, "*");
    struct acl_set one;
    acl_set_init(&one);
    one.v = &odd;
    one.count = 1;
    assert_int_equal(acl_store_encode(&one, &buf, &len), 0);
    const char *why = NULL;
    size_t bad = 0;
    assert_int_equal(acl_store_parse(buf, len, &back, &why, &bad), RT_E_CORRUPT);
    assert_int_equal(bad, ACL_STORE_HEADER);
    assert_non_null(strstr(why, "principal"));
    /* Truncated anywhere: refused, never a crash. */
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(acl_store_parse(buf, cut, &back, &why, &bad), RT_E_CORRUPT);
    free(buf);
    free(path);
    acl_set_free(&s);
    tu_rmdir_free(dir);
}

static struct authorizer *open_az(const char *dir, const char *super, bool allow_if_no_acl)
{
    struct authorizer_options o = {dir, super, allow_if_no_acl, 0, NULL};
    struct authorizer *az = NULL;
    char err[600];
    assert_int_equal(authorizer_open(&o, &az, err, sizeof(err)), 0);
    return az;
}

static bool check(struct authorizer *az, struct authorizer_cache *c, const char *who,
                  const char *topic, uint8_t op)
{
    return authorizer_check(az, c, who, "127.0.0.1", T, topic, strlen(topic), op);
}

/* AZ1-AZ4: super users, changes over the wire saved and seen through the cache, a file change
 * by mtime, a corrupt file keeping the running set. */
static void test_authorizer(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct authorizer *az = open_az(dir, "User:admin; User:ops", false);
    struct authorizer_cache *c = authorizer_cache_new();
    assert_true(check(az, c, "User:admin", "t", ACL_OP_DELETE));
    assert_true(check(az, c, "User:ops", "t", ACL_OP_DELETE));
    assert_false(check(az, c, "User:alice", "t", ACL_OP_READ)); /* cached: denied */
    uint64_t gen = authorizer_generation(az);
    struct acl_binding b = B(T, LIT, "t", "User:alice", ACL_OP_READ, ALLOW, "*");
    int result = -1;
    const char *why = NULL;
    authorizer_create(az, &b, 1, &result, &why);
    assert_int_equal(result, 0);
    assert_true(authorizer_generation(az) > gen);
    assert_true(check(az, c, "User:alice", "t", ACL_OP_READ)); /* AZ3: the cache let go */
    /* A bad creation is refused with its reason; nothing changes. */
    struct acl_binding badb = B(T, LIT, "t", "alice", ACL_OP_READ, ALLOW, "*");
    gen = authorizer_generation(az);
    authorizer_create(az, &badb, 1, &result, &why);
    assert_int_equal(result, RT_E_INVALID_ARGUMENT);
    assert_non_null(why);
    assert_int_equal(authorizer_generation(az), gen);
    /* Another principal on the same cache (SASL re-authentication) is decided for itself. */
    assert_false(check(az, c, "User:mallory", "t", ACL_OP_READ));
    assert_true(check(az, c, "User:alice", "t", ACL_OP_READ));
    /* Saved: a second authorizer over the directory sees it (AZ1). */
    struct authorizer *az2 = open_az(dir, NULL, false);
    assert_true(check(az2, NULL, "User:alice", "t", ACL_OP_READ));
    /* A change of the file (ringtail acl on the directory) is picked up by az2's poll (AZ4). */
    struct acl_filter f = {T, ACL_PATTERN_ANY, ACL_OP_ANY, ACL_PERM_ANY, "t", NULL, NULL};
    struct acl_set removed;
    usleep(20000); /* a distinct mtime on coarse-grained filesystems */
    assert_int_equal(authorizer_select(az, &f, true, &removed), 0);
    assert_int_equal(removed.count, 1);
    acl_set_free(&removed);
    assert_false(check(az, c, "User:alice", "t", ACL_OP_READ));
    assert_true(check(az2, NULL, "User:alice", "t", ACL_OP_READ)); /* not polled yet */
    assert_int_equal(authorizer_poll(az2), 1);
    assert_false(check(az2, NULL, "User:alice", "t", ACL_OP_READ));
    assert_int_equal(authorizer_poll(az2), 0); /* unchanged */
    /* A corrupt file is not applied: the running set stays (AS1, AZ4). */
    authorizer_create(az, &b, 1, &result, &why);
    assert_int_equal(authorizer_poll(az2), 1);
    assert_true(check(az2, NULL, "User:alice", "t", ACL_OP_READ));
    char *path = tu_path("%s/%s", dir, ACL_STORE_FILE);
    usleep(20000);
    tu_flip_byte(path, 30, 0x01);
    assert_true(authorizer_poll(az2) < 0);
    assert_true(check(az2, NULL, "User:alice", "t", ACL_OP_READ));
    free(path);
    authorizer_close(az2);
    /* A corrupt file stops a start (AS1): it is reported, never half-applied. */
    struct authorizer_options o = {dir, NULL, false, 0, NULL};
    struct authorizer *none = NULL;
    char err[600];
    assert_int_equal(authorizer_open(&o, &none, err, sizeof(err)), RT_E_CORRUPT);
    assert_non_null(strstr(err, "corrupt at byte offset"));
    struct acl_set fixed;
    acl_set_init(&fixed);
    acl_set_add(&fixed, &b);
    assert_int_equal(acl_store_save(dir, &fixed, err, sizeof(err)), 0);
    acl_set_free(&fixed);
    /* allow.everyone.if.no.acl.found true: a resource no ACL names is open. */
    struct authorizer *open = open_az(dir, NULL, true);
    assert_true(check(open, NULL, "User:anyone", "unnamed", ACL_OP_WRITE));
    assert_false(check(open, NULL, "User:anyone", "t", ACL_OP_WRITE)); /* t is named */
    authorizer_close(open);
    authorizer_cache_free(c);
    authorizer_close(az);
    tu_rmdir_free(dir);
}

/* KZ1, KZ2 through kafka_authorize: a session's principal and host, set here as SASL and net
 * would set them. */
static void test_kafka_authorize_sessions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static struct kafka_server srv; /* large: not on the stack */
    memset(&srv, 0, sizeof(srv));
    struct kafka_session ks = {.authenticated = true};
    snprintf(ks.principal, sizeof(ks.principal), "%s", KAFKA_PRINCIPAL_ANONYMOUS);
    struct net_session ns = {.peer_host = "10.1.2.3", .user = &ks};
    struct net_req req = {.session = &ns};
    struct kafka_slot slot = {.server = &srv, .req = &req};
    assert_true(kafka_authorize_topic(&slot, "t", ACL_OP_WRITE)); /* KZ1: off */
    assert_false(kafka_authorizer_on(&slot));
    srv.authorizer = open_az(dir, "User:admin", false);
    ks.acl_cache = authorizer_cache_new();
    assert_false(kafka_authorize_topic(&slot, "t", ACL_OP_WRITE));
    assert_false(kafka_authorize_cluster(&slot, ACL_OP_ALTER));
    assert_false(kafka_authorize_idempotent(&slot));
    struct acl_binding b[] = {
        B(T, PRE, "pay", "User:ANONYMOUS", ACL_OP_WRITE, ALLOW, "10.1.2.3"),
        B(T, LIT, "pay-x", "User:alice", ACL_OP_READ, ALLOW, "*"),
        B(ACL_RESOURCE_CLUSTER, LIT, ACL_CLUSTER_NAME, "User:alice", ACL_OP_CREATE, ALLOW, "*"),
    };
    int results[3];
    const char *whys[3];
    authorizer_create(srv.authorizer, b, 3, results, whys);
    assert_int_equal(results[0] | results[1] | results[2], 0);
    assert_true(kafka_authorize_topic(&slot, "pay-1", ACL_OP_WRITE));
    assert_true(kafka_authorize_topic(&slot, "pay-1", ACL_OP_DESCRIBE));
    assert_false(kafka_authorize_topic(&slot, "pay-1", ACL_OP_READ));
    assert_true(kafka_authorize_idempotent(&slot)); /* WRITE on a topic (KIP-679) */
    assert_false(kafka_authorize_create_topic(&slot, "pay-2"));
    snprintf(ns.peer_host, sizeof(ns.peer_host), "10.9.9.9"); /* another host */
    memset(ks.acl_cache, 0, 1);                               /* (a new connection's cache) */
    authorizer_cache_free(ks.acl_cache);
    ks.acl_cache = authorizer_cache_new();
    assert_false(kafka_authorize_topic(&slot, "pay-1", ACL_OP_WRITE));
    snprintf(ks.principal, sizeof(ks.principal), "User:alice"); /* SASL set it */
    assert_true(kafka_authorize_topic(&slot, "pay-x", ACL_OP_READ));
    assert_false(kafka_authorize_topic(&slot, "pay-y", ACL_OP_READ));
    assert_true(kafka_authorize_create_topic(&slot, "anything")); /* CREATE on the cluster */
    snprintf(ks.principal, sizeof(ks.principal), "User:admin");
    assert_true(kafka_authorize_cluster(&slot, ACL_OP_ALTER)); /* super user */
    assert_true(atomic_load(&srv.stats.authorization_denied) >= 5);
    authorizer_cache_free(ks.acl_cache);
    authorizer_close(srv.authorizer);
    tu_rmdir_free(dir);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The hot path's cost: a cached check against 1000 ACLs, beside an uncached one. Prints the
 * figures (no time is asserted); asserts only that the answers are right. */
static void test_bench_check(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct authorizer *az = open_az(dir, NULL, false);
    enum { N = 1000 };
    static struct acl_binding b[N];
    static char names[N][32];
    int results[N];
    const char *whys[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "topic-%d", i);
        b[i] = B(T, LIT, names[i], "User:bench", ACL_OP_WRITE, ALLOW, "*");
    }
    authorizer_create(az, b, N, results, whys);
    struct authorizer_cache *c = authorizer_cache_new();
    const int iters = 2000000;
    int allowed = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; i++)
        allowed += check(az, c, "User:bench", names[(i & 7) * 100], ACL_OP_WRITE);
    uint64_t cached = now_ns() - t0;
    assert_int_equal(allowed, iters);
    const int slow_iters = 20000;
    allowed = 0;
    t0 = now_ns();
    for (int i = 0; i < slow_iters; i++)
        allowed += check(az, NULL, "User:bench", names[(i & 7) * 100], ACL_OP_WRITE);
    uint64_t uncached = now_ns() - t0;
    assert_int_equal(allowed, slow_iters);
    printf("acl check, 1000 ACLs: cached %.1f ns/check (%.1f M checks/s); uncached %.1f "
           "ns/check (%.2f M checks/s)\n",
           (double)cached / iters, iters * 1e3 / (double)cached, (double)uncached / slow_iters,
           slow_iters * 1e3 / (double)uncached);
    authorizer_cache_free(c);
    authorizer_close(az);
    tu_rmdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_deny_implications_default),
        cmocka_unit_test(test_validity_and_filters),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_authorizer),
        cmocka_unit_test(test_kafka_authorize_sessions),
        cmocka_unit_test(test_bench_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
